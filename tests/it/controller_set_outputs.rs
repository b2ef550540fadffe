//! Each router's outputs are written when THAT router's job ends (issue 36 item 4): through the
//! whole controller (`run_set_with`) against the FAKE Kubernetes API server, each router on its
//! own simulated Octavia that the test makes hang (every job waits, as behind a 600 s create)
//! or fail at once. A new Ingress placed on a router that works gets its status and its record
//! while another router of the same Sync hangs (a set Sync used to wait for every router before
//! it wrote any status, Event or record).
//!
//! The harness ([`start`]) is shared with `controller_set_rollback`.

use crate::controller_router_set::{BASE, ING, class, ingress, service};
use crate::controller_set_records::recorded_router;
use crate::support::eventually::eventually_every;
use crate::support::fake_api::Fake;
use crate::support::fake_settings::fake_cluster_settings;
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
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;

/// Routers the harness can make hang or fail, by index.
const ROUTERS: u32 = 4;

/// A router's simulated Octavia: every job waits while `held` says true (as behind a create
/// that does not return), and counts the Syncs it finished.
struct Hanging {
    sim: SimBackend,
    held: watch::Receiver<bool>,
    syncs: Arc<AtomicUsize>,
}

impl Hanging {
    async fn unless_held(&self) {
        let _ = self.held.clone().wait_for(|held| !held).await;
    }

    fn counted(&self, result: SyncResult) -> SyncResult {
        self.syncs.fetch_add(1, Ordering::SeqCst);
        result
    }
}

impl RouterBackend for Hanging {
    async fn sync(&self, desired: &DesiredRouter) -> SyncResult {
        self.unless_held().await;
        self.counted(self.sim.sync(desired).await)
    }

    async fn sync_reading_budget(&self, desired: &DesiredRouter) -> SyncResult {
        self.unless_held().await;
        self.counted(self.sim.sync_reading_budget(desired).await)
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

/// The controller on a set, each router's Octavia at hand.
pub(crate) struct Set {
    pub(crate) fake: Arc<Fake>,
    sims: Arc<Mutex<BTreeMap<u32, Arc<Mutex<Simulator>>>>>,
    fails: Vec<Arc<Mutex<Option<WriteError>>>>,
    holds: Vec<watch::Sender<bool>>,
    syncs: Vec<Arc<AtomicUsize>>,
    pub(crate) api_root: String,
    stop: tokio::sync::oneshot::Sender<()>,
    run: tokio::task::JoinHandle<Result<(), kuryr_l7_router::controller::ControllerError>>,
    _dir: tempfile::TempDir,
}

/// Starts the controller on the one-host Ingresses `names` with `octavia` options (two policies
/// a router and `move_dns_grace = 1` unless it says), the routers of `hung` hanging from the
/// start (a create that does not return), and waits until the Ingresses not on those are placed.
pub(crate) async fn start(names: &[&str], octavia: &str, hung: &[u32]) -> Set {
    let fake = Fake::new();
    fake.put("ingressclasses", class());
    fake.put("services", service());
    for name in names {
        fake.put("ingresses", ingress(name));
    }
    start_on(fake, octavia, hung).await
}

/// [`start`] on the objects of `fake` (a restart: the controller's ConfigMaps are kept; each
/// router's Octavia starts empty).
pub(crate) async fn start_on(fake: Arc<Fake>, octavia: &str, hung: &[u32]) -> Set {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let (api_root, _) = fake.serve().await;
    let (dir, token) = crate::support::fake_settings::token_file();
    let sims: Arc<Mutex<BTreeMap<u32, Arc<Mutex<Simulator>>>>> = Arc::default();
    let fails: Vec<Arc<Mutex<Option<WriteError>>>> = (0..ROUTERS).map(|_| Arc::default()).collect();
    let syncs: Vec<Arc<AtomicUsize>> = (0..ROUTERS).map(|_| Arc::default()).collect();
    let holds: Vec<watch::Sender<bool>> = (0..ROUTERS).map(|i| watch::channel(hung.contains(&i)).0).collect();
    let (built, fail, counts) = (sims.clone(), fails.clone(), syncs.clone());
    let held: Vec<watch::Receiver<bool>> = holds.iter().map(|h| h.subscribe()).collect();
    let backends = move |_: &_, _: &_, index: u32| {
        let ownership = Ownership::new(&router_name(BASE, index)).with_set(BASE);
        let address = format!("172.24.4.{}", 10 + index).parse().ok();
        let mut sim = SimBackend::new(DiffOptions { ownership, health_monitor: None }, address);
        built.lock().unwrap().insert(index, sim.state.clone());
        let i = index as usize;
        sim.fail = fail[i].clone();
        Ok(Hanging { sim, held: held[i].clone(), syncs: counts[i].clone() })
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let max = if octavia.contains("max_policies_per_router") { "" } else { "max_policies_per_router = 2\n" };
    let grace = if octavia.contains("move_dns_grace") { "" } else { "move_dns_grace = 1\n" };
    let options = format!("l7_router_name = {BASE}\nscale_out = True\n{max}{grace}{octavia}\n");
    let settings = fake_cluster_settings("set-outputs-test.conf", &api_root, &token, port, "", &options);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let run = tokio::spawn(run_set_with(settings, backends, async move {
        let _ = stopped.await;
    }));
    Set { fake, sims, fails, holds, syncs, api_root, stop, run, _dir: dir }
}

impl Set {
    pub(crate) async fn stop(self) {
        for h in &self.holds {
            let _ = h.send(false);
        }
        let _ = self.stop.send(());
        tokio::time::timeout(Duration::from_secs(30), self.run).await.unwrap().unwrap().unwrap();
    }

    /// Every job of router `index` waits from now on (`true`), or goes on (`false`).
    pub(crate) fn hang(&self, index: u32, hang: bool) {
        self.holds[index as usize].send(hang).unwrap();
    }

    /// Every job of router `index` fails at once from now on.
    pub(crate) fn fail(&self, index: u32) {
        let e = WriteError::new("router_error", "the load balancer is in ERROR");
        *self.fails[index as usize].lock().unwrap() = Some(e);
    }

    /// The Syncs router `index`'s Octavia finished.
    pub(crate) fn syncs(&self, index: u32) -> usize {
        self.syncs[index as usize].load(Ordering::SeqCst)
    }

    /// The hosts routed by router `index`.
    pub(crate) fn hosts_of(&self, index: u32) -> Vec<String> {
        crate::controller_router_set::hosts_of(&self.sims, index)
    }

    /// Ingress `name`'s status addresses.
    pub(crate) fn addresses(&self, name: &str) -> Vec<String> {
        crate::controller_router_set::addresses(&self.fake, name)
    }

    /// Ingress `name` is recorded on router `router` and its status is that router's address.
    pub(crate) fn live_on(&self, name: &str, router: u32) -> Option<()> {
        let recorded = recorded_router(&self.fake, name)?;
        let want = format!("172.24.4.{}", 10 + router);
        (recorded == router_name(BASE, router) && self.addresses(name) == [want]).then_some(())
    }

    /// Changes Ingress `name`'s path: a new desired state for its router.
    pub(crate) fn change_path(&self, name: &str, path: &str) {
        let mut ing: Value = self.fake.get(ING, "shop", name).unwrap();
        ing["spec"]["rules"][0]["http"]["paths"][0]["path"] = json!(path);
        self.fake.put("ingresses", ing);
    }

    /// The notes of the Events of `reason` on Ingress `name`.
    pub(crate) fn notes(&self, name: &str, reason: &str) -> Vec<String> {
        let on = |w: &crate::support::fake_api::Write| {
            w.path.contains("/events") && w.body["regarding"]["name"] == name && w.body["reason"] == reason
        };
        self.fake
            .writes()
            .iter()
            .filter(|w| on(w))
            .map(|w| w.body["note"].as_str().unwrap_or_default().into())
            .collect()
    }
}

pub(crate) async fn eventually<T>(what: &str, secs: u64, f: impl FnMut() -> Option<T>) -> T {
    eventually_every(what, secs, Duration::from_millis(50), f).await
}

/// a, b on `rset`, c, d on `rset-2`, e on `rset-3`, all live.
async fn three_routers() -> Set {
    let set = start(&["a", "b", "c", "d", "e"], "", &[]).await;
    for (name, router) in [("a", 0), ("b", 0), ("c", 1), ("d", 1), ("e", 2)] {
        eventually(&format!("{name} live on router {router}"), 20, || set.live_on(name, router)).await;
    }
    set
}

/// `rset` hangs in the middle of a job (a's change, as behind a create that does not return);
/// a new Ingress f, placed on `rset-3` (the one with room), is live there, its status and its
/// record written within seconds, while `rset`'s part of the same Sync still waits. Before, a
/// set Sync wrote no status, Event or record until every router's job ended: f waited for
/// `rset`. Released, `rset` gets a's change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_router_delays_only_its_own_ingresses_outputs() {
    let set = three_routers().await;
    set.hang(0, true);
    set.change_path("a", "/v2");
    tokio::time::sleep(Duration::from_millis(700)).await;
    set.fake.put("ingresses", ingress("f"));
    eventually("f live on rset-3 while rset hangs", 10, || set.live_on("f", 2)).await;
    assert_eq!(set.addresses("a"), ["172.24.4.10"], "a keeps its status");
    set.hang(0, false);
    eventually("a's change on rset once released", 20, || {
        let sims = set.sims.lock().unwrap();
        let sim = sims.get(&0)?.lock().unwrap();
        sim.router.policies.iter().flat_map(|p| p.rules.iter()).any(|r| r.value.contains("/v2")).then_some(())
    })
    .await;
    set.stop().await;
}

/// The same with `rset` failing at once: f is live on `rset-3`, and a's change gets a Warning
/// naming the router that holds it back. (This one passed before too: a failure at once never
/// held the Sync long; it guards that the per-router outputs keep it so.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_router_delays_only_its_own_ingresses_outputs() {
    let set = three_routers().await;
    set.fail(0);
    set.change_path("a", "/v2");
    set.fake.put("ingresses", ingress("f"));
    eventually("f live on rset-3 while rset fails", 10, || set.live_on("f", 2)).await;
    let notes = eventually("a Warning on a naming its router", 20, || {
        Some(set.notes("a", "OctaviaError")).filter(|n| !n.is_empty())
    })
    .await;
    assert!(notes.iter().any(|n| n.contains("router rset: ") && n.contains("ERROR")), "{notes:?}");
    assert_eq!(set.addresses("a"), ["172.24.4.10"], "a keeps its status");
    set.stop().await;
}
