//! Isolation between the routers of a set in the Service handler, through the whole controller
//! (`run_set_with`) against the FAKE Kubernetes API server (tests/support/fake_api.rs), each
//! router on its own in-memory Octavia (`SimBackend`) that the test can make fail or hang: the
//! Service behind every Ingress feeds a pool on each of the three routers, and an endpoint
//! change reaches the routers that work whatever the first router (`rset`, the first the
//! handler visits) does, its failure reported with its name.

use crate::support::eventually;
use crate::support::fake_api;
use crate::support::fake_settings;

use eventually::eventually_every;
use fake_api::Fake;
use fake_settings::fake_cluster_settings;
use kuryr_l7_router::controller::runtime::run_set_with;
use kuryr_l7_router::controller::writer::{MembersResult, RouterBackend, SyncResult, WriteError};
use kuryr_l7_router::driver::ownership::Ownership;
use kuryr_l7_router::driver::plan::DiffOptions;
use kuryr_l7_router::driver::sim::Simulator;
use kuryr_l7_router::driver::{FoundRouter, WriteGate};
use kuryr_l7_router::model::{DesiredRouter, Pool};
use kuryr_l7_router::placement::router_name;
use kuryr_l7_router::testing::SimBackend;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;

// The set's fixtures: one class, one Ingress per host, the Service `shop/web`.
use crate::controller_router_set::{BASE, ING, class, ingress, service};

const NAMES: [&str; 5] = ["a", "b", "c", "d", "e"];

fn slice(address: &str) -> Value {
    json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
           "metadata": {"name": "web-abc", "namespace": "shop", "labels": {"kubernetes.io/service-name": "web"}},
           "addressType": "IPv4", "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
           "endpoints": [{"addresses": [address], "conditions": {"ready": true}}]})
}

/// A router's simulated Octavia that the test makes fail at once (`fail`) or hang (`held`: every
/// job waits until it says false, as behind a create that never returns).
struct Faulty {
    sim: SimBackend,
    held: watch::Receiver<bool>,
}

impl Faulty {
    async fn unless_held(&self) {
        let _ = self.held.clone().wait_for(|held| !held).await;
    }
}

impl RouterBackend for Faulty {
    async fn sync(&self, desired: &DesiredRouter) -> SyncResult {
        self.unless_held().await;
        self.sim.sync(desired).await
    }

    async fn sync_reading_budget(&self, desired: &DesiredRouter) -> SyncResult {
        self.unless_held().await;
        self.sim.sync_reading_budget(desired).await
    }

    async fn set_members(&self, pool: &Pool) -> MembersResult {
        self.unless_held().await;
        self.sim.set_members(pool).await
    }

    async fn delete_router(&self) -> kuryr_l7_router::controller::writer::DeleteResult {
        self.sim.delete_router().await
    }

    fn set_write_gate(&mut self, gate: WriteGate) {
        self.sim.set_write_gate(gate);
    }

    async fn set_load_balancers(&self) -> Result<Vec<FoundRouter>, WriteError> {
        self.sim.set_load_balancers().await
    }
}

/// The handles of each router the controller built, by index.
#[derive(Default)]
struct Handles {
    sims: BTreeMap<u32, Arc<Mutex<Simulator>>>,
    fails: BTreeMap<u32, Arc<Mutex<Option<WriteError>>>>,
}

struct Running {
    fake: Arc<Fake>,
    handles: Arc<Mutex<Handles>>,
    /// True: every job of router 0 hangs.
    hold: watch::Sender<bool>,
    stop: tokio::sync::oneshot::Sender<()>,
    run: tokio::task::JoinHandle<Result<(), kuryr_l7_router::controller::ControllerError>>,
    _dir: tempfile::TempDir,
}

/// The controller on a set of two policies a router: five Ingresses make three routers, each
/// with a pool of shop/web, their first placement over before this returns.
async fn start() -> Running {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let fake = Fake::new();
    fake.put("ingressclasses", class());
    fake.put("services", service());
    fake.put("endpointslices", slice("10.0.0.5"));
    for name in NAMES {
        fake.put("ingresses", ingress(name));
    }
    let (api_root, _) = fake.serve().await;
    let (dir, token) = crate::support::fake_settings::token_file();
    let handles: Arc<Mutex<Handles>> = Arc::default();
    let (hold, held) = watch::channel(false);
    let built = handles.clone();
    let backends = move |_: &_, _: &_, index: u32| {
        let ownership = Ownership::new(&router_name(BASE, index)).with_set(BASE);
        let address = format!("172.24.4.{}", 10 + index).parse().ok();
        let sim = SimBackend::new(DiffOptions { ownership, health_monitor: None }, address);
        let mut h = built.lock().unwrap();
        h.sims.insert(index, sim.state.clone());
        h.fails.insert(index, sim.fail.clone());
        // Only router 0 hangs when told: the others' jobs never wait.
        let held = if index == 0 { held.clone() } else { watch::channel(false).1 };
        Ok(Faulty { sim, held })
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let octavia =
        format!("l7_router_name = {BASE}\nscale_out = True\nmax_policies_per_router = 2\nmove_dns_grace = 1\n");
    let settings = fake_cluster_settings("isolation-test.conf", &api_root, &token, port, "", &octavia);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let run = tokio::spawn(run_set_with(settings, backends, async move {
        let _ = stopped.await;
    }));
    let running = Running { fake, handles, hold, stop, run, _dir: dir };
    eventually("every Ingress placed", 20, || NAMES.iter().map(|n| running.placed(n)).collect::<Option<Vec<_>>>())
        .await;
    eventually("three routers with the first endpoint", 20, || {
        (0..3).all(|i| running.members_of(i) == ["10.0.0.5"]).then_some(())
    })
    .await;
    // The Syncs the placement records trigger are over (their debounce is 500 ms): the changes
    // below go through the member path alone.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    running
}

impl Running {
    async fn stop(self) {
        let _ = self.hold.send(false);
        let _ = self.stop.send(());
        tokio::time::timeout(Duration::from_secs(30), self.run).await.unwrap().unwrap().unwrap();
    }

    fn placed(&self, name: &str) -> Option<()> {
        let ing = self.fake.get(ING, "shop", name)?;
        crate::controller_set_records::recorded_router(&self.fake, name)?;
        ing["status"]["loadBalancer"]["ingress"][0]["ip"].as_str().map(|_| ())
    }

    /// The member addresses of router `index`'s pools.
    fn members_of(&self, index: u32) -> Vec<String> {
        let handles = self.handles.lock().unwrap();
        let Some(sim) = handles.sims.get(&index) else { return vec![] };
        let sim = sim.lock().unwrap();
        sim.router.pools.iter().flat_map(|p| p.members.iter().map(|m| m.address.to_string())).collect()
    }

    /// Router `index` fails every job at once from now on.
    fn fail(&self, index: u32) {
        let e = WriteError::new("router_error", "the load balancer is in ERROR");
        *self.handles.lock().unwrap().fails[&index].lock().unwrap() = Some(e);
    }

    fn endpoint(&self, address: &str) {
        self.fake.put("endpointslices", slice(address));
    }

    /// The notes of the `OctaviaError` Events on Service shop/web.
    fn service_errors(&self) -> Vec<String> {
        self.fake
            .writes()
            .into_iter()
            .filter(|w| w.path.contains("/events") && w.body["regarding"]["kind"] == "Service")
            .filter(|w| w.body["regarding"]["name"] == "web" && w.body["reason"] == "OctaviaError")
            .map(|w| w.body["note"].as_str().unwrap_or_default().to_string())
            .collect()
    }
}

async fn eventually<T>(what: &str, secs: u64, f: impl FnMut() -> Option<T>) -> T {
    eventually_every(what, secs, Duration::from_millis(50), f).await
}

/// Router 0 fails every write at once: an endpoint change still reaches the pools of routers 1
/// and 2 (the handler used to stop at the first failure), and the Service gets a Warning Event
/// naming router 0 with its reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_router_holds_back_no_other_routers_members() {
    let running = start().await;
    running.fail(0);
    running.endpoint("10.0.0.9");
    eventually("the new endpoint on routers 1 and 2", 5, || {
        (1..3).all(|i| running.members_of(i) == ["10.0.0.9"]).then_some(())
    })
    .await;
    let notes = eventually("an Event naming the failing router", 10, || {
        Some(running.service_errors()).filter(|n| !n.is_empty())
    })
    .await;
    let named = format!("router {BASE}: the load balancer is in ERROR");
    assert!(notes.iter().all(|n| n.contains(&named)), "{notes:?}");
    assert_eq!(running.members_of(0), ["10.0.0.5"], "router 0 keeps its members");
    running.stop().await;
}

/// Router 0 hangs (its jobs never end, as behind a create that never returns): two endpoint
/// changes in a row each reach routers 1 and 2 while it hangs. Once released, router 0 gets
/// the last endpoint (its job stayed queued on its writer); released into a failure, the
/// failure is reported naming it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_router_holds_back_no_other_routers_members() {
    let running = start().await;
    running.hold.send(true).unwrap();
    for address in ["10.0.0.9", "10.0.0.10"] {
        running.endpoint(address);
        // Within a router's wait (10 s) and the change window, whatever router 0 does.
        eventually(&format!("{address} on routers 1 and 2"), 15, || {
            (1..3).all(|i| running.members_of(i) == [address]).then_some(())
        })
        .await;
        assert_eq!(running.members_of(0), ["10.0.0.5"], "router 0 hangs");
    }
    running.hold.send(false).unwrap();
    eventually("the last endpoint on router 0 once released", 20, || {
        (running.members_of(0) == ["10.0.0.10"]).then_some(())
    })
    .await;

    running.hold.send(true).unwrap();
    running.endpoint("10.0.0.11");
    eventually("10.0.0.11 on routers 1 and 2", 15, || {
        (1..3).all(|i| running.members_of(i) == ["10.0.0.11"]).then_some(())
    })
    .await;
    running.fail(0);
    running.hold.send(false).unwrap();
    let notes = eventually("an Event naming the router that hung, then failed", 30, || {
        Some(running.service_errors()).filter(|n| !n.is_empty())
    })
    .await;
    assert!(notes.iter().all(|n| n.contains(&format!("router {BASE}: "))), "{notes:?}");
    running.stop().await;
}
