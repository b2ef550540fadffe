//! A Gateway loop on the FAKE Kubernetes API server (tests/support/fake_api.rs), for the tests
//! of the controller's Gateway side (tests/it/controller_gateway*.rs): the loop with test timings,
//! and the Service and Secret caches it reads (the Ingress side's in the controller) reflected
//! from the same server.

use kuryr_l7_router::controller::gateway::GatewayLoop;
use kuryr_l7_router::controller::gateway::driver::DataPlaneView;
use kuryr_l7_router::gateway::build::Programmed;
use kuryr_l7_router::gateway::keep::Tables;
use std::time::Duration;
use tokio::sync::watch;

/// A client of the API server at `api_root`.
pub fn client_of(api_root: &str) -> kube::Client {
    kube::Client::try_from(kube::Config::new(api_root.parse().unwrap())).unwrap()
}

/// A Gateway loop reading `client` (20 ms debounce, `recheck`) with the data plane's addresses
/// from `programmed` (no failure, hold nor release), publishing its router tables on `routers`,
/// no Event publisher (the caller's to set) and no finalizer.
pub fn gateway_loop(
    client: kube::Client,
    programmed: watch::Receiver<Programmed>,
    routers: watch::Sender<Tables>,
    recheck: Duration,
) -> GatewayLoop {
    use futures::StreamExt;
    use kube::runtime::{WatchStreamExt, reflector, watcher};
    let (services, ws) = reflector::store();
    let (secrets, wsec) = reflector::store();
    let w = watcher(kube::Api::all(client.clone()), watcher::Config::default()).default_backoff();
    tokio::spawn(reflector::reflector(ws, w).for_each(|_| async {}));
    let w = watcher(kube::Api::all(client.clone()), watcher::Config::default()).default_backoff();
    tokio::spawn(reflector::reflector(wsec, w).for_each(|_| async {}));
    GatewayLoop {
        client,
        services,
        secrets,
        events: None,
        plane: DataPlaneView {
            programmed,
            failures: watch::channel(Default::default()).1,
            holds: watch::channel(Default::default()).1,
            released: watch::channel(Default::default()).1,
        },
        finalize: false,
        routers,
        debounce: Duration::from_millis(20),
        recheck,
        named_secrets: None,
        limits: Default::default(),
        hosts: None,
        secret_namespaces: Vec::new(),
    }
}

/// Runs `gl` on its own task; setting the switch returned stops it.
pub fn run(gl: GatewayLoop) -> watch::Sender<bool> {
    let (stop_tx, stop_rx) = watch::channel(false);
    tokio::spawn(gl.run(stop_rx));
    stop_tx
}
