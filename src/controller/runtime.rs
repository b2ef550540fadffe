//! `kuryr-l7-router run`: the long-running controller.
//!
//! ```text
//!  watch (reflectors) ──► Ingress handler ──┐  Sync(desired)    ┌──────────────┐
//!  Ingress, IngressClass, Service,          ├──────────────────►│ serial writer│──► Octavia
//!  EndpointSlice|Endpoints, Node            │  Members(pool)    │ (one / router)│
//!                     └► Service handler ───┘                   └──────────────┘
//!                                  ▲ resync every [kubernetes] resync_period (Sync)
//! ```
//!
//! [`run`] wires the clients, caches, controllers, writer, leader election, health server and
//! signal handling; what the handlers share lives in [`super::context`]. See
//! `docs/architecture.md`.

use crate::config::LeaderSettings;
use crate::config::{KubernetesSettings, Settings};
use crate::controller::gateway::driver::{GatewayBackends, GatewayRouters};
use crate::controller::health::{self, Readiness};
use crate::controller::ingress::tls_secrets::{SecretSource, watch_tls_secrets};
use crate::controller::leader::{Leadership, default_identity};
use crate::controller::metrics::Metrics;
use crate::controller::octavia_backend::OctaviaBackend;
use crate::controller::outputs::Scope;
use crate::controller::outputs::events::{DEFAULT_DEDUP_WINDOW, EventPublisher};
use crate::controller::router_set::drain::{self, SetMode};
use crate::controller::router_set::migration::{RouteReader, route_reader, start_records};
use crate::controller::router_set::{RouterSet, SpawnWriter};
use crate::controller::services::endpoint_nodes::EndpointNodes;
use crate::controller::services::handler as service;
use crate::controller::stamp_store::StampStores;
use crate::controller::watches::{NodeLabels, caches_synced, node_change_targets, reflect, watch_shared};
use crate::controller::writer::{RouterBackend, WriteError, Writer, WriterMetrics};
use crate::controller::{ControllerError, ingress, reconcile_span};
use crate::driver::WriteGate;
use crate::placement::RouterIndex;
use crate::translate::slices::CompactSlice;
use crate::translate::tls::TLS_SECRET_TYPE;
use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::{Endpoints, Node, Service};
use k8s_openapi::api::networking::v1::{Ingress, IngressClass};
use kube::api::Api;
use kube::runtime::controller::{Config as ControllerConfig, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

use crate::controller::context::{Context, StoreWriters, error_policy};

// ------------------------------------------------------------------ run

/// A future that resolves once `rx` turns `true`; `Send + Sync` as kube's
/// `graceful_shutdown_on` requires (a oneshot fed by a small task).
fn on_true(rx: &watch::Receiver<bool>) -> impl Future<Output = ()> + Send + Sync + 'static {
    let (tx, done) = oneshot::channel::<()>();
    let mut rx = rx.clone();
    tokio::spawn(async move {
        let _ = rx.wait_for(|v| *v).await;
        let _ = tx.send(());
    });
    async move {
        let _ = done.await;
    }
}

pub(crate) async fn signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => tokio::select! {
                _ = term.recv() => tracing::info!("SIGTERM received, shutting down"),
                _ = tokio::signal::ctrl_c() => tracing::info!("SIGINT received, shutting down"),
            },
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Runs the controller until SIGTERM/SIGINT (or, as leader, until leadership is lost, which
/// returns an error so the pod restarts as a standby).
/// The start-up preflight ([`preflight`]) runs first: an error refuses to start, before any write.
pub async fn run(settings: Settings) -> Result<(), ControllerError> {
    let settings = preflight(settings).await?;
    let permits = crate::wiring::write_permits(&settings);
    let backends = octavia_backends_with(permits.clone());
    let gateways = crate::controller::gateway::driver::octavia_gateway_routers(&settings, permits);
    run_set_with_gateways(settings, backends, Some(gateways), signal()).await
}

/// Checks what the cloud can do and what the user may do (`openstack::preflight`), logs the
/// summary and each finding once, refuses on an error, and turns off what the cloud lacks
/// (HTTP→HTTPS redirects below Octavia API 2.9). With `enable_ingress = False` nothing is
/// written, so nothing is checked.
pub async fn preflight(mut settings: Settings) -> Result<Settings, ControllerError> {
    use crate::openstack::preflight::{self, Feature};
    if !settings.kubernetes.enable_ingress {
        return Ok(settings);
    }
    let (octavia, neutron) = crate::wiring::clients(&settings)
        .map_err(|e| ControllerError::ClientConfig(format!("OpenStack session: {e}")))?;
    vip_ip_version(&mut settings, &neutron).await;
    // Whether an Ingress has TLS is known only once the caches are filled: a missing `creator`
    // role is a warning here and an error naming the role on the first certificate stored.
    let checks = preflight::Checks {
        octavia_roles: settings.octavia_defaults.preflight_role_check,
        ..preflight::Checks::default()
    };
    let report = preflight::run_with(&octavia, &settings.octavia_defaults.provider, &checks)
        .await
        .map_err(|e| ControllerError::Preflight(format!("preflight: cannot read the cloud's capabilities: {e}")))?;
    report.log();
    if let Some(refusal) = report.refusal() {
        return Err(ControllerError::Preflight(refusal));
    }
    if !report.has(Feature::RedirectHttpCode) && settings.octavia_defaults.ssl_redirect {
        settings.octavia_defaults.ssl_redirect = false;
    }
    Ok(settings)
}

/// Reads the VIP subnet's `ip_version`: the VIP's address family, which picks the endpoints'
/// addresses (see `wiring::vip_family`). Unreadable: a warning, and the family of
/// `l7_router_ip` (else IPv4) as before.
async fn vip_ip_version(settings: &mut Settings, neutron: &crate::openstack::Neutron) {
    let Some(id) = settings.neutron_defaults.lb_subnet.clone() else { return };
    match neutron.get_subnet(&id).await {
        Ok(subnet) => {
            tracing::info!(subnet = %id, ip_version = subnet.ip_version, "VIP subnet read: its address family is the router's");
            settings.neutron_defaults.vip_ip_version = Some(subnet.ip_version);
        }
        Err(e) => tracing::warn!(subnet = %id, error = %e,
            "cannot read the VIP subnet ([neutron_defaults] lb_subnet): its address family is taken from l7_router_ip, else IPv4"),
    }
}

/// [`run`] with its two outside ends given: `backend` builds the router writer's backend once
/// this replica leads (`run` passes [`octavia_backend`]; `tests/it/controller_runtime.rs` passes an
/// in-memory [`crate::testing::SimBackend`]), and `shutdown` resolving stops the
/// controller as SIGTERM does (`run` passes the signal handler).
pub async fn run_with<B, F>(
    settings: Settings,
    backend: F,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ControllerError>
where
    B: RouterBackend,
    F: FnOnce(&Settings, &Metrics) -> Result<B, ControllerError> + Send + 'static,
{
    let once = Mutex::new(Some(backend));
    let backends = move |s: &Settings, m: &Metrics, _: RouterIndex| match once.lock().expect("lock").take() {
        Some(f) => f(s, m),
        None => Err(ControllerError::ClientConfig("this controller was given the backend of one router only".into())),
    };
    run_set_with(settings, backends, shutdown).await
}

/// [`run_with`] with the backend of each router of a scale-out set: `backends` builds router
/// `index`'s (0 at start; the others when placement first puts a group on them).
pub async fn run_set_with<B, F>(
    settings: Settings,
    backends: F,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ControllerError>
where
    B: RouterBackend,
    F: Fn(&Settings, &Metrics, RouterIndex) -> Result<B, ControllerError> + Send + Sync + 'static,
{
    run_set_with_gateways(settings, backends, None, shutdown).await
}

/// [`run_set_with`] with the routers of the Gateways built by `gateways` (None: the Gateways are
/// watched and their status written, but nothing converges their load balancers).
pub async fn run_set_with_gateways<B, F>(
    settings: Settings,
    backends: F,
    gateways: Option<GatewayRouters>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ControllerError>
where
    B: RouterBackend,
    F: Fn(&Settings, &Metrics, RouterIndex) -> Result<B, ControllerError> + Send + Sync + 'static,
{
    let (registry, metrics) = Metrics::registry();
    let (ready_tx, ready_rx) = watch::channel(Readiness::default());
    let (stop_tx, stop_rx) = watch::channel(false);
    {
        let stop_tx = stop_tx.clone();
        tokio::spawn(async move {
            shutdown.await;
            let _ = stop_tx.send(true);
        });
    }
    let addr = std::net::SocketAddr::from(([0, 0, 0, 0], settings.kubernetes.health_port));
    let (bound, serve) = health::bind(addr, health::router(ready_rx, Arc::new(registry)), on_true(&stop_rx)).await?;
    tracing::info!(%bound, "health server listening (/healthz, /readyz, /metrics)");
    let server = tokio::spawn(serve);

    if !settings.kubernetes.enable_ingress {
        tracing::info!("ingress handlers disabled ([kubernetes] enable_ingress = False)");
        ready_tx.send_modify(|r| *r = Readiness::expecting(true, []));
        on_true(&stop_rx).await;
        return finish_server(server).await;
    }

    let k = &settings.kubernetes;
    let client = crate::controller::client::client_of(k).await?;

    let leadership = if k.leader_election {
        match acquire_leadership(&client, k, &ready_tx, &stop_tx, &stop_rx).await? {
            Some(l) => Some(l),
            // Stopped while standing by.
            None => return finish_server(server).await,
        }
    } else {
        None
    };

    let result = match backends(&settings, &metrics, 0) {
        Ok(mut b) => {
            // A lost lease stops the writes before the next one, not after the job (see
            // driver::rounds); the handlers stop on it too (acquire_leadership).
            // On SIGTERM too: the write in flight is the last one (see SHUTDOWN_BUDGET).
            let gate = match &leadership {
                Some(l) => WriteGate::new(l.is_leader()),
                None => WriteGate::default(),
            };
            let gate = gate.stopping_on(stop_rx.clone());
            b.set_write_gate(gate.clone());
            let stores =
                StampStores { api: Api::namespaced(client.clone(), &k.lease_namespace), every: k.resync_period };
            b.set_stamp_stores(stores.clone());
            let gateways = gateways.map(|g| g(&metrics, gate.clone(), stores.clone()));
            let backends = Arc::new(backends);
            // Built with scale-out off too: a set found on Octavia then drains into the first
            // router (`run_leader`).
            let routes = Some(route_reader(&settings, &metrics, &backends));
            let spawn = Some({
                let backends = move |s: &Settings, m: &Metrics, i: RouterIndex| backends(s, m, i);
                spawn_writers(settings.clone(), backends, metrics.clone(), ready_tx.clone(), gate, stores)
            });
            let spawn = Spawners { set: spawn, routes, gateways };
            run_leader(&settings, client, b, spawn, metrics, ready_tx, &stop_rx).await
        }
        Err(e) => Err(e),
    };
    let lost = leadership.as_ref().is_some_and(|l| !*l.is_leader().borrow());
    if let Some(l) = leadership
        && let Err(e) = l.release().await
    {
        tracing::warn!(error = %e, "releasing the lease failed");
    }
    let _ = stop_tx.send(true);
    finish_server(server).await?;
    result?;
    if lost {
        return Err(ControllerError::LeaderStopped("leadership lost".into()));
    }
    Ok(())
}

/// Stand by until this replica holds the lease (`None`: stopped meanwhile, the lease released).
/// Losing the lease later sets `stop`, which stops the handlers (and the process).
async fn acquire_leadership(
    client: &kube::Client,
    k: &KubernetesSettings,
    ready_tx: &watch::Sender<Readiness>,
    stop_tx: &watch::Sender<bool>,
    stop_rx: &watch::Receiver<bool>,
) -> Result<Option<Leadership>, ControllerError> {
    let ls = k.leader_override.clone().unwrap_or_else(|| {
        LeaderSettings::new(&k.lease_name, &k.lease_namespace, &default_identity("kuryr-l7-router"))
    });
    let identity = ls.identity.clone();
    let l = Leadership::start(client.clone(), ls)?;
    // A standby is "ready" as a standby: nothing routes traffic to this pod, and a standby that
    // never turned ready would block rolling updates. /readyz of the leader reports its caches
    // and router.
    ready_tx.send_modify(|r| *r = Readiness::expecting(true, []));
    tracing::info!(lease = %k.lease_name, %identity, "waiting for leadership");
    tokio::select! {
        r = l.acquired() => r?,
        _ = on_true(stop_rx) => {
            l.release().await?;
            return Ok(None);
        }
    }
    tracing::info!("leadership acquired: starting the handlers");
    ready_tx.send_modify(|r| *r = Readiness::default());
    let mut is_leader = l.is_leader();
    let stop_tx = stop_tx.clone();
    tokio::spawn(async move {
        if is_leader.wait_for(|v| !*v).await.is_ok() {
            tracing::error!("leadership lost: stopping the handlers");
            let _ = stop_tx.send(true);
        }
    });
    Ok(Some(l))
}

async fn finish_server(server: JoinHandle<Result<(), ControllerError>>) -> Result<(), ControllerError> {
    match server.await {
        Ok(r) => r,
        Err(e) => Err(ControllerError::Server(std::io::Error::other(e.to_string()))),
    }
}

/// With scale-out: how the writer of each router other than the first is built, as the first's
/// (same gate, metrics under its own `router` label, its own line of `/readyz`).
fn spawn_writers<B, F>(
    settings: Settings,
    backends: F,
    metrics: Metrics,
    readiness: watch::Sender<Readiness>,
    gate: WriteGate,
    stores: StampStores,
) -> SpawnWriter
where
    B: RouterBackend,
    F: Fn(&Settings, &Metrics, RouterIndex) -> Result<B, ControllerError> + Send + Sync + 'static,
{
    Box::new(move |index, name| {
        let mut b =
            backends(&settings, &metrics, index).map_err(|e| WriteError::new("client_config", e.to_string()))?;
        b.set_write_gate(gate.clone());
        b.set_stamp_stores(stores.clone());
        let wm = WriterMetrics {
            router: name.to_string(),
            metrics: Some(metrics.clone()),
            readiness: Some(readiness.clone()),
        };
        Ok(Writer::spawn(b, wm))
    })
}

/// The real backends of every router of the set: the driver on Octavia and Neutron, every
/// request counted in the metrics, the writes of all routers bounded together by
/// `[octavia_defaults] parallel_writes` (their creates by `parallel_creates`).
pub fn octavia_backends(
    settings: &Settings,
) -> impl Fn(&Settings, &Metrics, RouterIndex) -> Result<OctaviaBackend, ControllerError> + Send + Sync + 'static {
    octavia_backends_with(crate::wiring::write_permits(settings))
}

/// [`octavia_backends`] bounded by `permits` (shared with the Gateways' routers).
pub(crate) fn octavia_backends_with(
    permits: crate::driver::WritePermits,
) -> impl Fn(&Settings, &Metrics, RouterIndex) -> Result<OctaviaBackend, ControllerError> + Send + Sync + 'static {
    move |settings, metrics, index| {
        let metrics = metrics.clone();
        let observer: crate::openstack::Observer = Arc::new(move |r: &crate::openstack::RequestRecord| {
            metrics.octavia_request(r.method.as_str(), &r.kind, r.status, r.duration);
        });
        crate::wiring::router_observed_at(settings, Some(observer), index, permits.clone())
            .map(OctaviaBackend::new)
            .map_err(|e| ControllerError::ClientConfig(format!("OpenStack session: {e}")))
    }
}

/// What Service notices name as router: `l7_router_uuid`, else `l7_router_name`.
fn notice_router_name(settings: &Settings) -> String {
    let o = &settings.octavia_defaults;
    o.l7_router_uuid.clone().unwrap_or_else(|| o.l7_router_name.clone())
}

/// How the leader builds the routers beyond the first: the other routers of a scale-out set,
/// and the Gateways' routers.
struct Spawners {
    set: Option<SpawnWriter>,
    /// Reads a router's routes (the upgrade of the set's records).
    routes: Option<RouteReader>,
    gateways: Option<GatewayBackends>,
}

/// The leader's work: caches, the two Controllers, the writer and the resync loop, until `stop`.
async fn run_leader<B: RouterBackend>(
    settings: &Settings,
    client: kube::Client,
    backend: B,
    spawn: Spawners,
    metrics: Metrics,
    ready_tx: watch::Sender<Readiness>,
    stop_rx: &watch::Receiver<bool>,
) -> Result<(), ControllerError> {
    let router = notice_router_name(settings);
    let found = match spawn.set {
        Some(_) => crate::controller::router_set::found_on_octavia(&backend, &router).await,
        None => Default::default(),
    };
    let mut spawn = spawn;
    // Scale-out turned off over a set: the set runs on, draining into the first router, until
    // the routers beyond it are gone.
    let mode = drain::mode(settings.octavia_defaults.scale_out.enabled, &router, &found.0);
    if mode == SetMode::Off && spawn.set.take().is_some() {
        drain::forget_records(&client, &settings.kubernetes.lease_namespace, &router).await;
    }
    let k = &settings.kubernetes;
    // The set's records (at the upgrade, the old annotations Octavia confirms: router 0 read
    // through `backend` before its writer has it).
    let routes = spawn.routes.as_ref();
    let records = match &spawn.set {
        Some(_) => Some(start_records(&client, &k.lease_namespace, &router, &backend, routes, &found).await?),
        None => None,
    };
    let writer = Writer::spawn(
        backend,
        WriterMetrics { router: router.clone(), metrics: Some(metrics.clone()), readiness: Some(ready_tx.clone()) },
    );
    let (stores, store_writers) = StoreWriters::new();
    stores.named_secrets.set_default(crate::wiring::translate_options(settings).tls.default_certificate);
    let (caches_tx, caches_rx) = watch::channel(false);
    let events = Arc::new(EventPublisher::new(client.clone(), std::env::var("POD_NAME").ok(), DEFAULT_DEDUP_WINDOW));
    let mut ctx = Context::new(
        client.clone(),
        stores.clone(),
        writer.handle(),
        events,
        metrics,
        crate::wiring::translate_options(settings),
        router.clone(),
        caches_rx,
        Some(ready_tx.clone()),
    )
    .with_member_change_window(k.member_change_window);
    if spawn.gateways.is_some() {
        ctx = ctx.with_gateway_services(Arc::default());
    }
    if k.host_ownership {
        let (store, owners) =
            crate::controller::owner_store::start_owners(&client, &k.lease_namespace, &ctx.opts.ingress_class).await?;
        ctx = ctx.with_owner_store(store, &owners);
    }
    let mut set = None;
    if let Some((spawn, (records, store))) = spawn.set.zip(records) {
        let mut built = RouterSet::new(router, settings.octavia_defaults.scale_out.clone(), spawn)
            .with_records(records, Some(store));
        if mode == SetMode::Draining {
            built = built.draining();
        }
        built.found(found.0, found.1);
        let built = Arc::new(built);
        ctx = ctx.with_router_set(built.clone());
        set = Some(built);
    }
    let ctx = Arc::new(ctx);
    let (ing_ctl, svc_ctl, mut background) = controllers(&client, k, &ctx, store_writers);
    let opts = crate::wiring::translate_options(settings);
    let gw =
        crate::controller::gateway::spawn(&client, &ctx, opts, spawn.gateways, ctx.events.clone(), stop_rx.clone());
    background.extend(gw);
    let handlers = vec![
        spawn_controller(
            "ingress",
            ing_ctl.graceful_shutdown_on(on_true(stop_rx)).run(ingress::reconcile, error_policy, ctx.clone()),
        ),
        spawn_controller(
            "service",
            svc_ctl.graceful_shutdown_on(on_true(stop_rx)).run(service::reconcile, error_policy, ctx.clone()),
        ),
    ];

    let use_slices = k.use_endpoint_slices;
    background.push(tokio::spawn(async move {
        caches_synced(stores, use_slices).await;
        tracing::info!("caches synced");
        let _ = caches_tx.send(true);
        ready_tx.send_modify(|r| r.caches_synced = true);
    }));
    let period = k.resync_period.max(Duration::from_secs(10));
    let resync = tokio::spawn(resync_loop(ctx.clone(), set.clone(), period, stop_rx.clone()));
    // A move's late target or a cancel is acted on even while the resync waits on a router.
    if let Some(set) = &set {
        let watch = crate::controller::router_set::rollback_outputs::move_watch(ctx.clone(), set.clone());
        background.push(tokio::spawn(watch));
    }
    if k.host_ownership {
        background.push(tokio::spawn(crate::controller::gateway::hosts::sync_on_claims(ctx.clone(), stop_rx.clone())));
    }

    on_true(stop_rx).await;
    drain(writer, handlers, resync, background, &ctx, set.as_deref()).await;
    Ok(())
}

/// The two Controllers over ONE watch per kind (the tasks driving the watches are returned):
///
/// - Ingresses: their own changes; IngressClass changes re-reconcile all of them; a Service
///   appearing, disappearing or changing ports re-reconciles the Ingresses naming it; a TLS
///   Secret created, renewed (cert-manager) or deleted, the Ingresses naming it.
/// - Services: their own changes and their EndpointSlices (or Endpoints); a Node label change
///   (zone, node pool: member weights change) re-reconciles only the Services it can affect
///   ([`node_change_targets`]).
fn controllers(
    client: &kube::Client,
    k: &KubernetesSettings,
    ctx: &Arc<Context>,
    w: StoreWriters,
) -> (Controller<Ingress>, Controller<Service>, Vec<JoinHandle<()>>) {
    let stores = &ctx.stores;
    // Bounded: kube's default runs every queued reconcile at once. A reconcile mostly waits on
    // the writer (which translates once per Sync job), so the bound caps the Kubernetes calls
    // and the memory of a rollout over many objects, not the throughput.
    let config = ControllerConfig::default().debounce(Duration::from_millis(500)).concurrency(RECONCILE_CONCURRENCY);
    let all = watcher::Config::default;
    let mut tasks = Vec::new();
    let (ing_writer, ing_indexes) = w.ingresses.into_parts();
    let observe = stores.named_secrets.clone().after_ingress_indexes(stores.secrets.clone(), ing_indexes);
    let (t, mut ingresses) = watch_shared(ing_writer, Api::<Ingress>::all(client.clone()), all(), 1, observe);
    tasks.push(t);
    let (t, mut services) = watch_shared(w.services, Api::<Service>::all(client.clone()), all(), 2, |_| {});
    tasks.push(t);
    // Only TLS Secrets are watched (a field selector on their type), and only the named ones'
    // data is held (`tls_secrets`).
    let tls = all().fields(&format!("type={TLS_SECRET_TYPE}"));
    let (named, ing_store) = (stores.named_secrets.clone(), stores.ingresses.clone());
    // `[kubernetes] secret_namespaces`: a watch per namespace instead (a Role in each suffices).
    let source = SecretSource::of(client, &k.secret_namespaces);
    let (t, secrets) = watch_tls_secrets(w.secrets, source, tls, named, ing_store);
    tasks.push(tokio::spawn(t));
    let class_changes = reflect(w.classes, Api::<IngressClass>::all(client.clone())).map(|_| ());

    let endpoint_nodes = Arc::new(Mutex::new(EndpointNodes::default()));
    let on_nodes = endpoint_nodes.clone();
    let mut node_labels = NodeLabels::default();
    let (t, mut nodes) = watch_shared(w.nodes, Api::<Node>::all(client.clone()), all(), 1, |_| {});
    tasks.push(t);
    // The consumers get the touched object only: one gone from the cache was deleted (a
    // node-port member leaving), which its last shape alone would not tell.
    let node_cache = stores.nodes.clone();
    let node_changes = nodes.remove(0).filter_map(move |n| {
        let gone = |n: &Node| node_cache.get(&ObjectRef::from_obj(n)).is_none();
        let ev = n.map(|n| if gone(&n) { watcher::Event::Delete(n) } else { watcher::Event::Apply(n) });
        futures::future::ready(ev.ok().and_then(|ev| node_labels.changed(&ev)).map(Ok))
    });

    let (by_service, by_secret) = (stores.clone(), stores.clone());
    // Only a Service change an Ingress can see re-reconciles the Ingresses naming it (not the
    // notices the Service handler writes: see `service_shape`).
    let (svc_store, shapes) = (stores.services.clone(), crate::controller::services::shape::ServiceShapes::default());
    let ing_ctl = Controller::for_stream(ingresses.remove(0), stores.ingresses.clone())
        .with_config(config.clone())
        .watches_stream(services.remove(1), move |svc| match shapes.changed(&svc_store, &svc) {
            true => ingress::ingresses_naming(&by_service, &svc),
            false => Vec::new(),
        })
        .watches_stream(secrets.map(Ok), move |s| ingress::ingresses_naming_secret(&by_secret, &s))
        .reconcile_all_on(class_changes);
    // No trailing debounce for Services: it keeps postponing while a rollout keeps changing the
    // endpoints; the Service handler's member change window bounds the delay instead.
    let svc_ctl = Controller::for_stream(services.remove(0), stores.services.clone())
        .with_config(config.debounce(Duration::ZERO))
        .watches_stream(node_changes, {
            // Every router's pools: with scale-out a zone-aware pool may be on any of them.
            let ctx = ctx.clone();
            move |n: Node| {
                let index = on_nodes.lock().expect("lock");
                let mut out: Vec<ObjectRef<Service>> = ctx
                    .routers
                    .iter()
                    .flat_map(|slot| node_change_targets(&index, slot.writer.last_synced().as_deref(), &n))
                    .collect();
                out.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
                out.dedup();
                out
            }
        });
    let svc_ctl = if k.use_endpoint_slices {
        let api = Api::<CompactSlice>::all(client.clone());
        let (slice_writer, mut slice_index) = w.slices.into_parts();
        let (t, mut slices) = watch_shared(slice_writer, api, all(), 1, move |ev| {
            slice_index(ev);
            endpoint_nodes.lock().expect("lock").apply(ev)
        });
        tasks.push(t);
        svc_ctl.watches_stream(slices.remove(0), service::service_of_slice)
    } else {
        let api = Api::<Endpoints>::all(client.clone());
        let (t, mut eps) =
            watch_shared(w.endpoints, api, all(), 1, move |ev| endpoint_nodes.lock().expect("lock").apply(ev));
        tasks.push(t);
        svc_ctl.watches_stream(eps.remove(0), service::service_of_endpoints)
    };
    (ing_ctl, svc_ctl, tasks)
}

/// Runs a Controller's stream of reconcile results to its end (errors are the error policy's
/// business; here they are only traced).
fn spawn_controller<S, T, E>(handler: &'static str, results: S) -> JoinHandle<()>
where
    S: Stream<Item = Result<T, E>> + Send + 'static,
    T: Send + 'static,
    E: std::fmt::Display + Send + 'static,
{
    tokio::spawn(results.for_each(move |r| async move {
        if let Err(e) = r {
            tracing::debug!(error = %e, "{handler} controller");
        }
    }))
}

/// A forced Sync from the caches at start (once they are synced) and every `period`: repairs
/// drift (a policy deleted by hand, a member list changed behind our back), and reads the
/// router's budget under the project's quotas (the driver's report carries it).
async fn resync_loop(
    ctx: Arc<Context>,
    set: Option<Arc<RouterSet>>,
    period: Duration,
    mut stop: watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            _ = ctx.wait_caches() => {}
            _ = stop.wait_for(|v| *v) => return,
        }
        let span = reconcile_span("resync", "", "");
        // Every status of ours and every conflict too: they can change without an Ingress event.
        match tracing::Instrument::instrument(ctx.sync_for(true, Scope::Resync), span).await {
            Ok((_, report)) => {
                ctx.metrics.reconcile_result("resync", "ok");
                tracing::info!(writes = report.writes.len(), "resync done");
            }
            Err(e) => {
                ctx.metrics.reconcile_result("resync", e.metric_label());
                tracing::warn!(error = %e, "resync failed");
            }
        }
        // Every router's flag is taken (no short cut): each change is answered by this one Sync.
        let changed = ctx.routers.iter().filter(|slot| slot.take_budget_change()).count();
        if changed > 0 {
            converge_to_budget(&ctx).await;
        }
        tokio::select! {
            _ = crate::controller::router_set::until_next_resync(set.as_deref(), period) => {}
            _ = stop.wait_for(|v| *v) => return,
        }
    }
}

/// The resync's report changed the router's budget: converge to it at once.
async fn converge_to_budget(ctx: &Context) {
    if let Err(e) = ctx.sync_for(false, Scope::Conflicts).await {
        tracing::warn!(error = %e, "sync after a budget change failed");
    }
}

/// Reconciles each Controller (Ingress, Service) runs at once.
pub(crate) const RECONCILE_CONCURRENCY: u16 = 16;

/// How long the writer's job in flight may go on after SIGTERM: the gate is closed, so it makes
/// no further write; this bounds the Octavia request in flight and the wait for ACTIVE after it
/// (cut short: Octavia completes the write anyway, and the next leader waits for ACTIVE before
/// its first write).
pub(crate) const WRITER_DRAIN: Duration = Duration::from_secs(10);
/// How long the handlers get to finish their Kubernetes writes once the writer answered.
pub(crate) const HANDLERS_GRACE: Duration = Duration::from_secs(15);
/// The whole shutdown after SIGTERM at most: writer, handlers, then the lease release and the
/// health server (5 s). `terminationGracePeriodSeconds` must exceed it
/// (tests/it/ship_manifests.rs); it need not exceed `write_timeout`.
pub const SHUTDOWN_BUDGET: Duration = Duration::from_secs(WRITER_DRAIN.as_secs() + HANDLERS_GRACE.as_secs() + 5);

/// Stop the leader's work once the Controllers stopped taking new work (graceful_shutdown_on).
/// The writer finishes the write in flight and answers queued jobs with `shutdown`, which ends
/// the reconciles waiting on it; then the reconciles' own Kubernetes writes get a bounded time to
/// finish. (A Controller whose cache never synced never ends by itself: kube holds it until its
/// store is ready, hence the timeout and abort.)
async fn drain(
    first: Writer,
    handlers: Vec<JoinHandle<()>>,
    resync: JoinHandle<()>,
    background: Vec<JoinHandle<()>>,
    ctx: &Context,
    set: Option<&RouterSet>,
) {
    tracing::info!("stopping: draining the router writer (no write after the one in flight)");
    let mut writers = vec![first];
    writers.extend(set.iter().flat_map(|s| s.take_writers()));
    futures::future::join_all(writers.into_iter().map(|w| w.shutdown_within(WRITER_DRAIN))).await;
    let aborts: Vec<_> = handlers.iter().map(JoinHandle::abort_handle).collect();
    let finished = async {
        for h in handlers {
            let _ = h.await;
        }
        let _ = resync.await;
    };
    // Before the caches synced no reconcile got past `wait_caches`: nothing to wait for.
    let grace = if *ctx.caches_ready.borrow() { HANDLERS_GRACE } else { Duration::ZERO };
    if tokio::time::timeout(grace, finished).await.is_err() {
        tracing::info!(grace_s = grace.as_secs(), "handlers did not stop within the grace period; aborting them");
        for a in aborts {
            a.abort();
        }
    }
    for b in background {
        b.abort();
    }
    tracing::info!("handlers stopped");
}
