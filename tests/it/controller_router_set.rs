//! Scale-out through the whole controller (`run_set_with`) against the FAKE Kubernetes API
//! server (`tests/support/fake_api.rs`), each router of the set on its own in-memory Octavia
//! (`SimBackend`, address 172.24.4.1N for router N): placement at a small capacity, each
//! Ingress's status pointing at its router, the placement record surviving a restart, and a
//! failing router holding back only its own groups, and moves (make-before-break): asked by the
//! operator (through a restart), of a group that grew on a router over capacity, and of the
//! part of a group that a new Ingress tied to a group on another router.

use crate::support::eventually;
use crate::support::fake_api;
use crate::support::fake_settings;
use crate::support::routed_hosts;
use eventually::eventually_every;
use fake_api::Fake;
use fake_settings::fake_cluster_settings;
use routed_hosts::routed_hosts;

use crate::controller_set_records::{move_record, put_records, recorded_router, records, records_of};
use kuryr_l7_router::controller::router_set::moves::MOVE_TO_ANNOTATION;
use kuryr_l7_router::controller::runtime::run_set_with;
use kuryr_l7_router::controller::writer::WriteError;
use kuryr_l7_router::driver::FoundRouter;
use kuryr_l7_router::driver::ownership::{Ownership, empty_since};
use kuryr_l7_router::driver::plan::DiffOptions;
use kuryr_l7_router::driver::sim::Simulator;
use kuryr_l7_router::placement::router_index;
use kuryr_l7_router::testing::SimBackend;
use kuryr_l7_router::translate::budget::Budget;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub(crate) const BASE: &str = "rset";
pub(crate) const ING: &str = "networking.k8s.io/v1/ingresses";

pub(crate) fn class() -> Value {
    json!({"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
           "metadata": {"name": "kuryr-l7-router"}, "spec": {"controller": "openstack.org/kuryr-l7-router"}})
}

/// One host, one path: one policy.
pub(crate) fn ingress(name: &str) -> Value {
    json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
           "metadata": {"name": name, "namespace": "shop", "creationTimestamp": "2026-01-01T00:00:00Z"},
           "spec": {"ingressClassName": "kuryr-l7-router", "rules": [{"host": format!("{name}.example.com"), "http": {"paths": [
               {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]}})
}

pub(crate) fn service() -> Value {
    json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "shop"},
           "spec": {"ports": [{"name": "http", "port": 80, "targetPort": 8080}]}})
}

pub(crate) fn slice() -> Value {
    json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
           "metadata": {"name": "web-abc", "namespace": "shop", "labels": {"kubernetes.io/service-name": "web"}},
           "addressType": "IPv4", "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
           "endpoints": [{"addresses": ["10.0.0.5"], "conditions": {"ready": true}}]})
}

fn settings(api_root: &str, token_file: &std::path::Path, extra: &str) -> kuryr_l7_router::config::Settings {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    // A move's graces of one second (the move tests) unless `extra` says; two policies a router
    // unless `extra` says. A phase's time is recorded in whole seconds, so a one-second grace
    // lasts between 0 and 1 s: a test that must see a phase's state uses two.
    let max = if extra.contains("max_policies_per_router") { "" } else { "max_policies_per_router = 2\n" };
    let grace = if extra.contains("move_dns_grace") { "" } else { "move_dns_grace = 1\n" };
    // The operator's namespace `shop` may ask for moves with the annotation, unless `extra` says.
    let asks = if extra.contains("move_request_namespaces") { "" } else { "move_request_namespaces = shop\n" };
    // Scale-out on unless `extra` says.
    let on = if extra.contains("scale_out") { "" } else { "scale_out = True\n" };
    let octavia = format!("l7_router_name = {BASE}\n{on}{max}{grace}{asks}{extra}");
    fake_cluster_settings("set-test.conf", api_root, token_file, port, "", &octavia)
}

pub(crate) fn fake_with(ingresses: impl IntoIterator<Item = Value>) -> Arc<Fake> {
    let fake = Fake::new();
    fake.put("ingressclasses", class());
    fake.put("services", service());
    fake.put("endpointslices", slice());
    for i in ingresses {
        fake.put("ingresses", i);
    }
    fake
}

/// The simulated Octavia of each router the controller built, by index.
pub(crate) type Sims = Arc<Mutex<BTreeMap<u32, Arc<Mutex<Simulator>>>>>;

/// Whether each router the controller built was deleted, by index.
pub(crate) type Deleted = Arc<Mutex<BTreeMap<u32, Arc<std::sync::atomic::AtomicBool>>>>;

/// The load balancer tags of each router the controller built, by index.
type LbTags = Arc<Mutex<BTreeMap<u32, Arc<Mutex<Vec<String>>>>>>;

pub(crate) struct Running {
    pub(crate) sims: Sims,
    pub(crate) deleted: Deleted,
    tags: LbTags,
    stop: tokio::sync::oneshot::Sender<()>,
    run: tokio::task::JoinHandle<Result<(), kuryr_l7_router::controller::ControllerError>>,
    _dir: tempfile::TempDir,
}

/// Runs the controller against `fake`; the routers in `failing` refuse every write.
pub(crate) async fn start(fake: &Arc<Fake>, failing: &[u32]) -> Running {
    start_with(fake, failing, &[], "").await
}

/// [`start`], router `index` of each `(index, policies)` of `budgets` reading a budget of
/// `policies` L7 policies under the project's quota (the others read none: no quota).
pub(crate) async fn start_with(fake: &Arc<Fake>, failing: &[u32], budgets: &[(u32, u64)], octavia: &str) -> Running {
    let cloud = Cloud { failing: failing.to_vec(), budgets: budgets.to_vec(), ..Cloud::default() };
    run_on(fake, octavia, cloud).await
}

/// Routers and how the controller finds them at start.
#[derive(Default, Clone)]
pub(crate) struct Cloud {
    /// The simulated Octavia of a controller before (a restart): each router's state is kept.
    pub(crate) persist: Option<Sims>,
    pub(crate) failing: Vec<u32>,
    pub(crate) budgets: Vec<(u32, u64)>,
    /// What the first router's Octavia lists as the load balancers carrying the set tag.
    pub(crate) found: Vec<FoundRouter>,
    /// Routers whose load balancer exists without the set tag (made before set tags).
    pub(crate) untagged: Vec<u32>,
}

/// [`start_with`], the first router's Octavia listing `found` as the load balancers carrying
/// the set tag, and the routers in `untagged` existing without it.
pub(crate) async fn start_finding(fake: &Arc<Fake>, octavia: &str, found: &[FoundRouter], untagged: &[u32]) -> Running {
    let cloud = Cloud { found: found.to_vec(), untagged: untagged.to_vec(), ..Cloud::default() };
    run_on(fake, octavia, cloud).await
}

/// Runs the controller against `fake`, each router on its own simulated Octavia as `cloud` says.
pub(crate) async fn run_on(fake: &Arc<Fake>, octavia: &str, cloud: Cloud) -> Running {
    let Cloud { persist, failing, budgets, found, untagged } = cloud;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let (api_root, _) = fake.serve().await;
    let (dir, token) = crate::support::fake_settings::token_file();
    let sims: Sims = Arc::default();
    let deleted: Deleted = Arc::default();
    let built = sims.clone();
    let gone = deleted.clone();
    let tags: LbTags = Arc::default();
    let lb_tags = tags.clone();
    let backends = move |_: &_, _: &_, index: u32| {
        let name = kuryr_l7_router::placement::router_name(BASE, index);
        let address = format!("172.24.4.{}", 10 + index).parse().ok();
        let ownership = Ownership::new(&name).with_set(BASE);
        let mut sim = SimBackend::new(DiffOptions { ownership, health_monitor: None }, address);
        if let Some(before) = persist.as_ref().and_then(|p| p.lock().unwrap().get(&index).cloned()) {
            sim.state = before;
        }
        if untagged.contains(&index) {
            sim.lb_tags.lock().unwrap().retain(|t| !t.starts_with("router-set:"));
        }
        lb_tags.lock().unwrap().insert(index, sim.lb_tags.clone());
        if failing.contains(&index) {
            *sim.fail.lock().unwrap() = Some(WriteError::new("router_error", "the load balancer is in ERROR"));
        }
        if let Some((_, policies)) = budgets.iter().find(|(i, _)| *i == index) {
            *sim.budget.lock().unwrap() = Some(Ok(Some(Budget { l7policies: Some(*policies), l7rules: None })));
        }
        if index == 0 {
            *sim.set_names.lock().unwrap() = found.clone();
        }
        built.lock().unwrap().insert(index, sim.state.clone());
        gone.lock().unwrap().insert(index, sim.deleted.clone());
        Ok(sim)
    };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let run = tokio::spawn(run_set_with(settings(&api_root, &token, octavia), backends, async move {
        let _ = stopped.await;
    }));
    Running { sims, deleted, tags, stop, run, _dir: dir }
}

impl Running {
    pub(crate) async fn stop(self) {
        let _ = self.stop.send(());
        tokio::time::timeout(Duration::from_secs(30), self.run).await.unwrap().unwrap().unwrap();
    }

    /// The hosts routed by router `index` (its host rules).
    pub(crate) fn hosts_of(&self, index: u32) -> Vec<String> {
        hosts_of(&self.sims, index)
    }
}

/// The hosts routed by the simulated router `index` of `sims` (if built), sorted, once each.
pub(crate) fn hosts_of(sims: &Sims, index: u32) -> Vec<String> {
    let sims = sims.lock().unwrap();
    let Some(sim) = sims.get(&index) else { return vec![] };
    let sim = sim.lock().unwrap();
    let mut hosts: Vec<String> = routed_hosts(&sim.router).collect();
    hosts.sort();
    hosts.dedup();
    hosts
}

/// (recorded router, status address) of Ingress `name`, once both are written.
pub(crate) fn placed(fake: &Fake, name: &str) -> Option<(String, String)> {
    let ing = fake.get(ING, "shop", name)?;
    let ip = ing["status"]["loadBalancer"]["ingress"][0]["ip"].as_str()?.to_string();
    Some((recorded_router(fake, name)?, ip))
}

pub(crate) async fn eventually<T>(what: &str, secs: u64, f: impl FnMut() -> Option<T>) -> T {
    eventually_every(what, secs, Duration::from_millis(50), f).await
}

pub(crate) const NAMES: [&str; 5] = ["a", "b", "c", "d", "e"];

/// Each of [`NAMES`] as [`placed`] (router, address), once all five are.
async fn all_placed(fake: &Fake) -> BTreeMap<&'static str, (String, String)> {
    eventually("every Ingress placed", 20, || NAMES.iter().map(|n| placed(fake, n).map(|p| (*n, p))).collect()).await
}

/// Five one-policy Ingresses at two policies per router: three routers, each Ingress's status
/// the address of the router that routes its host, its router recorded on it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_ingress_status_points_at_its_router() {
    let fake = fake_with(NAMES.map(ingress));
    let running = start(&fake, &[]).await;
    let got = all_placed(&fake).await;
    let mut per_router: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    for (name, (router, ip)) in &got {
        let index = router_index(BASE, router).unwrap_or_else(|| panic!("{name}: {router} is not of the set"));
        assert_eq!(ip, &format!("172.24.4.{}", 10 + index), "{name} on {router}");
        per_router.entry(index).or_default().push(format!("{name}.example.com"));
    }
    assert_eq!(per_router.keys().copied().collect::<Vec<_>>(), [0, 1, 2], "{got:?}");
    for (index, hosts) in &per_router {
        assert!(hosts.len() <= 2, "router {index} over capacity: {hosts:?}");
        assert_eq!(&running.hosts_of(*index), hosts, "router {index} routes exactly its hosts");
    }
    running.stop().await;
}

/// The Ingresses of the first router are deleted while the controller is down: on restart the
/// others stay on the routers recorded on them (a fresh placement would pack them on the
/// first router), and their statuses do not change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_keeps_the_recorded_placement() {
    let fake = fake_with(NAMES.map(ingress));
    let running = start(&fake, &[]).await;
    let before = all_placed(&fake).await;
    running.stop().await;

    let kept: Vec<Value> = NAMES
        .iter()
        .filter(|n| before[*n].0 != BASE)
        .map(|n| {
            let mut v = fake.get(ING, "shop", n).unwrap();
            v["metadata"].as_object_mut().unwrap().remove("resourceVersion");
            v
        })
        .collect();
    assert_eq!(kept.len(), 3, "{before:?}");
    for v in &kept {
        assert!(
            v["metadata"]["annotations"].as_object().is_none_or(|a| a.keys().all(|k| !k.starts_with("placement."))),
            "no record on the Ingresses: {v}"
        );
    }
    let stored = records(&fake).expect("the records in the controller's namespace");
    let fake = fake_with(kept.clone());
    put_records(&fake, &stored);
    let running = start(&fake, &[]).await;
    let kept_names: Vec<String> = kept.iter().map(|v| v["metadata"]["name"].as_str().unwrap().to_string()).collect();
    eventually("every kept host routed on its recorded router", 20, || {
        kept_names
            .iter()
            .all(|n| {
                let index = router_index(BASE, &before[n.as_str()].0).unwrap();
                running.hosts_of(index).contains(&format!("{n}.example.com"))
            })
            .then_some(())
    })
    .await;
    assert_eq!(running.hosts_of(0), Vec::<String>::new(), "nothing moved to the emptied first router");
    for n in &kept_names {
        assert_eq!(placed(&fake, n).as_ref(), Some(&before[n.as_str()]), "{n}: same router, same address");
    }
    running.stop().await;
}

/// Router 2 (`rset-2`, index 1) refuses every write: the Ingresses placed on it get no status
/// and no record, the others are routed and published as usual.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_router_holds_back_only_its_own_groups() {
    let fake = fake_with(NAMES.map(ingress));
    let running = start(&fake, &[1]).await;
    // First-fit by room: a, b on the first router, c, d on the second, e on the third.
    for (name, ip) in [("a", "172.24.4.10"), ("b", "172.24.4.10"), ("e", "172.24.4.12")] {
        let (_, got) = eventually(&format!("{name} placed"), 20, || placed(&fake, name)).await;
        assert_eq!(got, ip, "{name}");
    }
    assert_eq!(running.hosts_of(2), ["e.example.com"]);
    for name in ["c", "d"] {
        let ing = fake.get(ING, "shop", name).unwrap();
        assert!(ing["status"]["loadBalancer"]["ingress"].is_null(), "{name}: {ing}");
        assert_eq!(recorded_router(&fake, name), None, "{name}: {ing}");
    }
    running.stop().await;
}

/// The Service behind every Ingress feeds a pool on each of the three routers: an endpoint
/// change reaches the pool of each router (its notice names each router under its own key).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_on_several_routers_gets_its_members_on_each() {
    let fake = fake_with(NAMES.map(ingress));
    let running = start(&fake, &[]).await;
    all_placed(&fake).await;
    // The Syncs the records trigger are over (their debounce is 500 ms): the change below goes
    // through the member path alone (a Sync would refill every router's pools too).
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let mut moved = slice();
    moved["endpoints"][0]["addresses"] = json!(["10.0.0.9"]);
    fake.put("endpointslices", moved);
    eventually("the new endpoint in the pool of every router", 5, || {
        (0..3).all(|i| running.members_of(i) == ["10.0.0.9"]).then_some(())
    })
    .await;
    running.stop().await;
}

impl Running {
    /// The member addresses of router `index`'s pools.
    fn members_of(&self, index: u32) -> Vec<String> {
        let sims = self.sims.lock().unwrap();
        let Some(sim) = sims.get(&index) else { return vec![] };
        let sim = sim.lock().unwrap();
        sim.router.pools.iter().flat_map(|p| p.members.iter().map(|m| m.address.to_string())).collect()
    }
}

/// The Event of `reason` on Ingress `name`, if one was published.
pub(crate) fn event_on(fake: &Fake, name: &str, reason: &str) -> Option<Value> {
    fake.writes()
        .into_iter()
        .find(|w| w.path.contains("/events") && w.body["regarding"]["name"] == name && w.body["reason"] == reason)
        .map(|w| w.body)
}

/// Each router admits new routes within its own budget under the project's quota (which its
/// driver reads): `rset-3` can hold one policy, `e`'s. A new Ingress placed on it (the router
/// with the most room) waits with `QuotaExceeded` and gets no status, and `e` keeps its route.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_router_of_the_set_admits_new_routes_within_its_own_budget() {
    let fake = fake_with(NAMES.map(ingress));
    let running = start_with(&fake, &[], &[(2, 1)], "").await;
    all_placed(&fake).await;
    fake.put("ingresses", ingress("f"));
    let event = eventually("QuotaExceeded on f", 20, || event_on(&fake, "f", "QuotaExceeded")).await;
    assert!(event["note"].as_str().unwrap_or_default().contains("shop/f"), "{event}");
    assert_eq!(running.hosts_of(2), ["e.example.com"], "f waits, e keeps its route");
    let f = fake.get(ING, "shop", "f").unwrap();
    assert!(f["status"]["loadBalancer"]["ingress"].is_null(), "{f}");
    running.stop().await;
}

/// An Ingress whose host group alone needs more than a router (three policies at two per
/// router) gets a router of its own, is served there, and gets a Warning Event `OversizedGroup`
/// naming that router (before, the warning was only logged).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_group_is_served_on_its_own_router_with_a_warning_event() {
    let mut big = ingress("big");
    let path = big["spec"]["rules"][0]["http"]["paths"][0].clone();
    let paths: Vec<Value> = ["/", "/a", "/b"]
        .iter()
        .map(|p| {
            let mut v = path.clone();
            v["path"] = json!(p);
            v
        })
        .collect();
    big["spec"]["rules"][0]["http"]["paths"] = json!(paths);
    let fake = fake_with([ingress("a"), big]);
    let running = start(&fake, &[]).await;
    let event = eventually("OversizedGroup on big", 20, || event_on(&fake, "big", "OversizedGroup")).await;
    assert_eq!(event["type"], "Warning", "{event}");
    let (router, _) = eventually("big placed", 20, || placed(&fake, "big")).await;
    let note = event["note"].as_str().unwrap_or_default();
    assert!(note.contains("big.example.com") && note.contains(&format!("router {router}")), "{note}");
    assert!(event_on(&fake, "a", "OversizedGroup").is_none(), "only the Ingresses of the group");
    running.stop().await;
}

impl Running {
    /// Router `index`'s load balancer tags (empty: not built).
    fn lb_tags(&self, index: u32) -> Vec<String> {
        let tags = self.tags.lock().unwrap();
        tags.get(&index).map(|t| t.lock().unwrap().clone()).unwrap_or_default()
    }

    fn is_deleted(&self, index: u32) -> bool {
        self.deleted.lock().unwrap().get(&index).is_some_and(|d| d.load(std::sync::atomic::Ordering::SeqCst))
    }
}

/// The only Ingress of the third router (`e`) leaves our class: once `empty_router_grace` (1 s)
/// is over, the next Sync deletes that router (through its own writer), and only it; the other
/// routers keep their routes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_router_left_empty_is_deleted_after_its_grace_and_only_it() {
    let fake = fake_with(NAMES.map(ingress));
    let running = start_with(&fake, &[], &[], "empty_router_grace = 1").await;
    let got = all_placed(&fake).await;
    assert_eq!(got["e"].0, format!("{BASE}-3"), "e alone on the third router: {got:?}");
    let mut e = fake.get(ING, "shop", "e").unwrap();
    e["spec"]["ingressClassName"] = json!("someone-else");
    fake.put("ingresses", e);
    eventually("e's route gone from the third router", 20, || running.hosts_of(2).is_empty().then_some(())).await;
    assert!(!running.is_deleted(2), "not before its grace");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    // Any change makes a Sync, which finds the grace over.
    let mut a = fake.get(ING, "shop", "a").unwrap();
    a["metadata"]["labels"] = json!({"touched": "yes"});
    fake.put("ingresses", a);
    eventually("the empty router deleted", 20, || running.is_deleted(2).then_some(())).await;
    assert!(!running.is_deleted(0) && !running.is_deleted(1), "the others are kept");
    assert_eq!(running.hosts_of(0), ["a.example.com", "b.example.com"]);
    assert_eq!(running.hosts_of(1), ["c.example.com", "d.example.com"]);
    running.stop().await;
}

/// At start, Octavia lists a router of the set (`rset-3`, by the set tag) that no placement
/// names, beside names outside the set: once its `empty_router_grace` (1 s) is over, the next
/// Sync deletes it; the first router is kept, and no router is built for a name outside the set.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_router_of_the_set_that_no_placement_names_is_deleted_after_its_grace() {
    let fake = fake_with([ingress("a")]);
    let found = [BASE, "rset-3", "rset-x", "other-2", "rset-3-2"].map(FoundRouter::from);
    let running = start_finding(&fake, "empty_router_grace = 1", &found, &[]).await;
    eventually("a placed on the first router", 20, || placed(&fake, "a").filter(|(r, _)| r == BASE)).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let mut a = fake.get(ING, "shop", "a").unwrap();
    a["metadata"]["labels"] = json!({"touched": "yes"});
    fake.put("ingresses", a);
    eventually("the found empty router deleted", 20, || running.is_deleted(2).then_some(())).await;
    assert!(!running.is_deleted(0), "the first router is kept");
    assert_eq!(running.hosts_of(0), ["a.example.com"]);
    let built: Vec<u32> = running.sims.lock().unwrap().keys().copied().collect();
    assert_eq!(built, [0, 2], "nothing built for a name outside the set");
    running.stop().await;
}

fn unix_now() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64()
}

/// The third router (`rset-3`) is left empty; its load balancer's tag records since when. The
/// controller restarts 1.5 s into the grace (4 s): the new one finds that time on the load
/// balancer and deletes the router when the grace counted from it ends, with no other change
/// to wake it (its resync period is 600 s). Counted from the restart, or waiting for the next
/// Sync, it would go at the earliest 5 s after `since`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_routers_grace_is_counted_across_a_restart_and_ends_on_time() {
    let fake = fake_with(NAMES.map(ingress));
    let octavia = "empty_router_grace = 4";
    let running = start_with(&fake, &[], &[], octavia).await;
    all_placed(&fake).await;
    let mut e = fake.get(ING, "shop", "e").unwrap();
    e["spec"]["ingressClassName"] = json!("someone-else");
    fake.put("ingresses", e);
    let since = eventually("the empty router's tag", 20, || empty_since(&running.lb_tags(2))).await;
    let found: Vec<FoundRouter> = [BASE, "rset-2", "rset-3"]
        .iter()
        .enumerate()
        .map(|(i, name)| FoundRouter {
            name: name.to_string(),
            empty_since: empty_since(&running.lb_tags(i as u32)),
            untagged: false,
        })
        .collect();
    assert_eq!(found.iter().map(|f| f.empty_since).collect::<Vec<_>>(), [None, None, Some(since)]);
    let restart_at = since as f64 + 1.5;
    tokio::time::sleep(Duration::from_secs_f64((restart_at - unix_now()).max(0.0))).await;
    running.stop().await;
    let running = start_finding(&fake, octavia, &found, &[]).await;
    eventually("the empty router deleted", 20, || running.is_deleted(2).then_some(())).await;
    let at = unix_now();
    assert!(at >= since as f64 + 4.0, "not before its grace: {at} vs {since}");
    assert!(at < since as f64 + 4.8, "at the end of the grace counted from {since}, not later: {at}");
    assert!(!running.is_deleted(0) && !running.is_deleted(1), "the others are kept");
    running.stop().await;
}

/// A router made before set tags (`rset-3`: its load balancer has our cluster tags but no set
/// tag, so the start's list by set tag does not find it), that the placement recorded on `e`
/// names, is ours: its first Sync adds our set tag (so it is managed, and collected when left
/// empty, as the others), and keeps `e` there. A router no placement names is never built nor
/// touched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untagged_router_that_a_recorded_placement_names_gets_the_set_tag() {
    let recorded = [("a", BASE), ("b", BASE), ("c", "rset-2"), ("d", "rset-2"), ("e", "rset-3")];
    let fake = fake_with(recorded.map(|(name, _)| ingress(name)));
    put_records(&fake, &records_of(&recorded));
    let found = [BASE, "rset-2"].map(FoundRouter::from);
    let running = start_finding(&fake, "", &found, &[2]).await;
    let tags = eventually("rset-3 tagged", 20, || {
        let tags = running.lb_tags(2);
        tags.contains(&format!("router-set:{BASE}")).then_some(tags)
    })
    .await;
    assert!(tags.contains(&"kuryr-l7-router".to_string()), "its other tags kept: {tags:?}");
    eventually("e still on rset-3", 20, || (running.hosts_of(2) == ["e.example.com"]).then_some(())).await;
    let (router, ip) = eventually("e's status", 20, || placed(&fake, "e")).await;
    assert_eq!((router.as_str(), ip.as_str()), ("rset-3", "172.24.4.12"));
    let built: Vec<u32> = running.sims.lock().unwrap().keys().copied().collect();
    assert_eq!(built, [0, 1, 2], "nothing built for a router no placement names");
    running.stop().await;
}

/// The addresses of Ingress `name`'s status, in order.
pub(crate) fn addresses(fake: &Fake, name: &str) -> Vec<String> {
    let ing = fake.get(ING, "shop", name).unwrap_or_default();
    let list = ing["status"]["loadBalancer"]["ingress"].as_array().cloned().unwrap_or_default();
    list.iter().filter_map(|e| e["ip"].as_str().map(str::to_string)).collect()
}

/// Whether Ingress `name`'s status was ever written with `want` as its addresses: a phase of a
/// move may last less than the 50 ms between two looks at the current status.
pub(crate) fn published(fake: &Fake, name: &str, want: &[&str]) -> bool {
    let suffix = format!("/ingresses/{name}/status");
    fake.writes().iter().filter(|w| w.path.ends_with(&suffix)).any(|w| {
        let list = w.body["status"]["loadBalancer"]["ingress"].as_array().cloned().unwrap_or_default();
        list.iter().map(|e| e["ip"].as_str().unwrap_or_default()).eq(want.iter().copied())
    })
}

/// Every status Ingress `name` was written with, in order (for the messages of failed checks).
pub(crate) fn status_history(fake: &Fake, name: &str) -> Vec<Vec<String>> {
    let suffix = format!("/ingresses/{name}/status");
    let ips = |w: &fake_api::Write| {
        let list = w.body["status"]["loadBalancer"]["ingress"].as_array().cloned().unwrap_or_default();
        list.iter().map(|e| e["ip"].as_str().unwrap_or_default().to_string()).collect()
    };
    fake.writes().iter().filter(|w| w.path.ends_with(&suffix)).map(ips).collect()
}

/// The operator asks for Ingress `name`'s group to move to `router`.
pub(crate) fn ask_move(fake: &Fake, name: &str, router: &str) {
    let mut v = fake.get(ING, "shop", name).unwrap();
    v["metadata"]["annotations"][MOVE_TO_ANNOTATION] = json!(router);
    fake.put("ingresses", v);
}

/// The reasons of the Events posted on Ingress `name`, in order.
pub(crate) fn event_reasons(fake: &Fake, name: &str) -> Vec<String> {
    let on =
        |w: &fake_api::Write| w.method == "POST" && w.path.ends_with("/events") && w.body["regarding"]["name"] == name;
    fake.writes().iter().filter(|w| on(w)).filter_map(|w| w.body["reason"].as_str().map(str::to_string)).collect()
}

pub(crate) const FIRST: &str = "172.24.4.10";
pub(crate) const SECOND: &str = "172.24.4.11";

/// Ingresses a and b on the first router; the operator moves a's group to `rset-2`.
async fn start_move(fake: &Arc<Fake>) -> Running {
    let running = start(fake, &[]).await;
    for n in ["a", "b"] {
        eventually(&format!("{n} on the first router"), 20, || placed(fake, n).filter(|p| p.0 == BASE)).await;
    }
    ask_move(fake, "a", "rset-2");
    running
}

/// A move asked with the annotation: the target routes the host before the status names it;
/// the status shows both routers' addresses, then the target's alone; the old router's
/// routes for the host are gone at the end, b stays where it was, and each step is an Event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_move_publishes_both_addresses_then_the_target_and_clears_the_source() {
    let fake = fake_with(["a", "b"].map(ingress));
    let running = start_move(&fake).await;
    eventually("both addresses published", 10, || published(&fake, "a", &[FIRST, SECOND]).then_some(())).await;
    let host = "a.example.com".to_string();
    assert!(running.hosts_of(0).contains(&host) && running.hosts_of(1).contains(&host), "both routers route a");
    eventually("only the target's address", 10, || (addresses(&fake, "a") == [SECOND]).then_some(())).await;
    eventually("the old routes deleted", 10, || (!running.hosts_of(0).contains(&host)).then_some(())).await;
    eventually("the move record removed", 10, || move_record(&fake, "a").is_none().then_some(())).await;
    assert_eq!(running.hosts_of(1), [host]);
    assert_eq!(placed(&fake, "a"), Some(("rset-2".to_string(), SECOND.to_string())));
    assert_eq!(placed(&fake, "b"), Some((BASE.to_string(), FIRST.to_string())), "b did not move");
    let steps = ["MoveStarted", "MovePublishedBoth", "MovePublishedTarget", "MoveDeletingOld", "MoveDone"];
    let reasons: Vec<String> = event_reasons(&fake, "a").into_iter().filter(|r| r.starts_with("Move")).collect();
    assert_eq!(reasons, steps, "one Event per step on a");
    running.stop().await;
}

/// The controller stops while both addresses are published: the next one resumes the
/// recorded phase with its clock (the record's time is kept, not restarted), and finishes the
/// move with the host on the target only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_in_publish_both_resumes_the_move() {
    let fake = fake_with(["a", "b"].map(ingress));
    let running = start_move(&fake).await;
    let record = |fake: &Fake| move_record(fake, "a");
    let both =
        eventually("PublishBoth recorded", 10, || record(&fake).filter(|r| !r["phase"]["PublishBoth"].is_null())).await;
    running.stop().await;
    assert_eq!(addresses(&fake, "a"), [FIRST, SECOND], "stopped in PublishBoth");

    let running = start(&fake, &[]).await;
    let host = "a.example.com".to_string();
    eventually("only the target's address", 10, || (addresses(&fake, "a") == [SECOND]).then_some(())).await;
    // the status may be written before the store's record of the phase (another write): wait for it
    let after =
        eventually("a later phase recorded", 10, || record(&fake).filter(|r| r["phase"]["PublishBoth"].is_null()))
            .await;
    assert!(!after["phase"]["PublishTarget"].is_null() || !after["phase"]["DeleteOld"].is_null(), "{after}");
    let entered = after["phase"].as_object().unwrap().values().next().unwrap()["since"].as_u64().unwrap();
    let since = both["phase"]["PublishBoth"]["since"].as_u64().unwrap();
    assert!(entered > since, "the grace counted from the recorded phase: {since} -> {entered}");
    eventually("the old routes deleted", 10, || (!running.hosts_of(0).contains(&host)).then_some(())).await;
    assert_eq!(running.hosts_of(1), [host]);
    let started = event_reasons(&fake, "a").iter().filter(|r| *r == "MoveStarted").count();
    assert_eq!(started, 1, "the move resumed, not started again");
    running.stop().await;
}

/// The message of the first Event of `reason` on Ingress `name`.
fn event_note(fake: &Fake, name: &str, reason: &str) -> Option<String> {
    event_on(fake, name, reason).and_then(|e| e["note"].as_str().map(str::to_string))
}

/// Ingresses a and b (one policy each) fill the first router (two policies); a gets a second
/// path: its router is over capacity because a grew, so a's group moves by itself to a new
/// router through every phase (the status shows both addresses, then the new one; the old
/// routes go last), the Event says why; b, which did not change, stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_that_grew_over_its_router_moves_by_itself_and_the_stable_one_stays() {
    let fake = fake_with(["a", "b"].map(ingress));
    let running = start(&fake, &[]).await;
    for n in ["a", "b"] {
        eventually(&format!("{n} on the first router"), 20, || placed(&fake, n).filter(|p| p.0 == BASE)).await;
    }
    let mut a = fake.get(ING, "shop", "a").unwrap();
    let mut path = a["spec"]["rules"][0]["http"]["paths"][0].clone();
    path["path"] = json!("/more");
    a["spec"]["rules"][0]["http"]["paths"].as_array_mut().unwrap().push(path);
    fake.put("ingresses", a);
    eventually("both addresses published", 10, || published(&fake, "a", &[FIRST, SECOND]).then_some(())).await;
    let host = "a.example.com".to_string();
    assert!(running.hosts_of(0).contains(&host) && running.hosts_of(1).contains(&host), "both routers route a");
    eventually("only the target's address", 10, || (addresses(&fake, "a") == [SECOND]).then_some(())).await;
    eventually("the old routes deleted", 10, || (!running.hosts_of(0).contains(&host)).then_some(())).await;
    eventually("the move record removed", 10, || move_record(&fake, "a").is_none().then_some(())).await;
    let note = event_note(&fake, "a", "MoveStarted").unwrap_or_default();
    assert!(note.contains("automatic: router rset over capacity (3 > 2 policies)"), "{note}");
    let steps = ["MoveStarted", "MovePublishedBoth", "MovePublishedTarget", "MoveDeletingOld", "MoveDone"];
    let reasons: Vec<String> = event_reasons(&fake, "a").into_iter().filter(|r| r.starts_with("Move")).collect();
    assert_eq!(reasons, steps, "one Event per step on a");
    assert_eq!(placed(&fake, "b"), Some((BASE.to_string(), FIRST.to_string())), "b did not move");
    assert!(!event_reasons(&fake, "b").iter().any(|r| r.starts_with("Move")), "no move of b");
    assert_eq!(running.hosts_of(0), ["b.example.com"]);
    running.stop().await;
}

/// b is recorded on the first router and c on the second; a new Ingress ties b and c: the
/// merged group stays on the first router (tie: the older), and c moves there make-before-break
/// (before, c's routes left its router in the same Sync that its status changed): c's status
/// shows its old router, both, then the first; its old router routes it until the end; the
/// Ingress that tied them shows the first router's address, which routes both hosts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ingress_tying_groups_on_two_routers_moves_one_part_make_before_break() {
    let fake = fake_with([ingress("b"), ingress("c")]);
    put_records(&fake, &records_of(&[("b", BASE), ("c", "rset-2")]));
    let running = start_with(&fake, &[], &[], "max_policies_per_router = 10\nmove_dns_grace = 2").await;
    eventually("c on the second router", 20, || placed(&fake, "c").filter(|p| p.1 == SECOND)).await;
    eventually("b on the first router", 20, || placed(&fake, "b").filter(|p| p.1 == FIRST)).await;
    let mut tie = ingress("tie");
    // Its own path, so that its rules do not conflict with b's and c's.
    tie["spec"]["rules"][0]["http"]["paths"][0]["path"] = json!("/tie");
    let mut rule_c = tie["spec"]["rules"][0].clone();
    tie["spec"]["rules"][0]["host"] = json!("b.example.com");
    rule_c["host"] = json!("c.example.com");
    tie["spec"]["rules"].as_array_mut().unwrap().push(rule_c);
    fake.put("ingresses", tie);
    let c = "c.example.com".to_string();
    eventually("both addresses on c", 10, || published(&fake, "c", &[SECOND, FIRST]).then_some(())).await;
    assert!(running.hosts_of(0).contains(&c) && running.hosts_of(1).contains(&c), "both routers route c");
    // The tying Ingress is on the router of both its hosts (never on the old one alone).
    eventually("the tying Ingress on the first router", 10, || (addresses(&fake, "tie") == [FIRST]).then_some(()))
        .await;
    eventually("only the first router on c", 10, || (addresses(&fake, "c") == [FIRST]).then_some(())).await;
    eventually("c's old routes deleted", 10, || (!running.hosts_of(1).contains(&c)).then_some(())).await;
    assert_eq!(running.hosts_of(0), ["b.example.com", "c.example.com"]);
    let note = event_note(&fake, "c", "MoveStarted").unwrap_or_default();
    assert!(note.contains("merge: an Ingress ties these hosts to the group on rset"), "{note}");
    assert!(!event_reasons(&fake, "b").iter().any(|r| r.starts_with("Move")), "b does not move");
    running.stop().await;
}

/// An Ingress with the paths `/tie` on hosts `a` and `b` (ties their groups).
fn tie(a: &str, b: &str) -> Value {
    let mut tie = ingress("tie");
    // Its own path, so that its rules do not conflict with the others'.
    tie["spec"]["rules"][0]["http"]["paths"][0]["path"] = json!("/tie");
    let mut rule_b = tie["spec"]["rules"][0].clone();
    tie["spec"]["rules"][0]["host"] = json!(format!("{a}.example.com"));
    rule_b["host"] = json!(format!("{b}.example.com"));
    tie["spec"]["rules"].as_array_mut().unwrap().push(rule_b);
    tie
}

/// a moves from the first router to the second (asked); while both addresses are published a
/// new Ingress ties a to b (on the first router): the merged group goes to a's move's target,
/// so b moves there make-before-break (its status shows both routers), a's move goes on and
/// ends on its target, which routes a all along; the tying Ingress shows the target. Before,
/// the tie put a back on the first router at once and the target stopped routing a while a's
/// status named it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ingress_tying_a_moving_group_joins_the_moves_target() {
    let fake = fake_with(["a", "b"].map(ingress));
    let running = start_with(&fake, &[], &[], "max_policies_per_router = 10\nmove_dns_grace = 2").await;
    for n in ["a", "b"] {
        eventually(&format!("{n} on the first router"), 20, || placed(&fake, n).filter(|p| p.0 == BASE)).await;
    }
    ask_move(&fake, "a", "rset-2");
    eventually("both addresses on a", 10, || published(&fake, "a", &[FIRST, SECOND]).then_some(())).await;
    fake.put("ingresses", tie("a", "b"));
    let (a, b) = ("a.example.com".to_string(), "b.example.com".to_string());
    eventually("both addresses on b", 10, || published(&fake, "b", &[FIRST, SECOND]).then_some(())).await;
    assert!(running.hosts_of(1).contains(&a), "the target of a's move routes a");
    assert!(running.hosts_of(0).contains(&b) && running.hosts_of(1).contains(&b), "both routers route b");
    let note = event_note(&fake, "b", "MoveStarted").unwrap_or_default();
    assert!(note.contains("merge: an Ingress ties these hosts to the group on rset-2"), "{note}");
    eventually("a's move done", 10, || {
        (move_record(&fake, "a").is_none() && addresses(&fake, "a") == [SECOND]).then_some(())
    })
    .await;
    assert!(running.hosts_of(1).contains(&a), "a stays on its move's target");
    eventually("the tying Ingress on the target", 10, || (addresses(&fake, "tie") == [SECOND]).then_some(())).await;
    let started = event_reasons(&fake, "a").iter().filter(|r| *r == "MoveStarted").count();
    assert_eq!(started, 1, "a is not moved back");
    running.stop().await;
}

/// rset-2's name is held by a load balancer of this cluster without our set tag, and no
/// placement names it: three one-policy Ingresses at two policies a router fill the first
/// router and go to rset-3, never to rset-2 (which would adopt that load balancer by name);
/// nothing is built for rset-2.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_group_is_kept_off_a_name_an_untagged_load_balancer_holds() {
    let fake = fake_with(["a", "b", "c"].map(ingress));
    let untagged = FoundRouter { name: "rset-2".into(), empty_since: None, untagged: true };
    let running = start_finding(&fake, "", &[FoundRouter::from(BASE), untagged], &[1]).await;
    let routers: Vec<String> = eventually("every Ingress placed", 20, || {
        ["a", "b", "c"].iter().map(|n| placed(&fake, n).map(|p| p.0)).collect::<Option<Vec<_>>>()
    })
    .await;
    assert!(routers.iter().all(|r| r == BASE || r == "rset-3"), "{routers:?}");
    assert_eq!(routers.iter().filter(|r| *r == "rset-3").count(), 1, "{routers:?}");
    let built: Vec<u32> = running.sims.lock().unwrap().keys().copied().collect();
    assert_eq!(built, [0, 2], "nothing built for rset-2");
    running.stop().await;
}

const THIRD: &str = "172.24.4.12";

/// a moves to rset-2 and b to rset-3 (asked; b's ask is then taken back, its move recorded);
/// while both moves publish both addresses a new Ingress ties a and b: the group goes to rset-2
/// (of two targets, the lowest), and b's move goes on to rset-3. When it is done, b moves on from
/// rset-3 to rset-2 through the phases: its status shows both routers, then rset-2; rset-3 routes
/// b until the end. Before, b switched from rset-3 to rset-2 at once when its move was done,
/// while clients still held rset-3's address.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_moves_tied_while_moving_end_on_one_router_make_before_break() {
    let fake = fake_with(["a", "b"].map(ingress));
    let running = start_with(&fake, &[], &[], "max_policies_per_router = 10\nmove_dns_grace = 2").await;
    for n in ["a", "b"] {
        eventually(&format!("{n} on the first router"), 20, || placed(&fake, n).filter(|p| p.0 == BASE)).await;
    }
    ask_move(&fake, "a", "rset-2");
    ask_move(&fake, "b", "rset-3");
    eventually("both addresses on a", 10, || published(&fake, "a", &[FIRST, SECOND]).then_some(())).await;
    eventually("both addresses on b", 10, || published(&fake, "b", &[FIRST, THIRD]).then_some(())).await;
    let mut v = fake.get(ING, "shop", "b").unwrap();
    v["metadata"]["annotations"].as_object_mut().unwrap().remove(MOVE_TO_ANNOTATION);
    fake.put("ingresses", v);
    fake.put("ingresses", tie("a", "b"));
    let b = "b.example.com".to_string();
    eventually("b on rset-3 and rset-2", 30, || published(&fake, "b", &[THIRD, SECOND]).then_some(())).await;
    eventually("b on rset-2 only, rset-3 cleared", 30, || {
        (addresses(&fake, "b") == [SECOND] && !running.hosts_of(2).contains(&b)).then_some(())
    })
    .await;
    let history = || format!("statuses {:?}, Events {:?}", status_history(&fake, "b"), event_reasons(&fake, "b"));
    let routed = || (0..3).map(|r| running.hosts_of(r)).collect::<Vec<_>>();
    assert!(running.hosts_of(1).contains(&b), "rset-2 routes b: {:?}; {}", routed(), history());
    assert!(published(&fake, "b", &[THIRD]), "b's own move ended on rset-3 first: {}", history());
    // Once a move published both routers, the source alone is never published again: a late
    // job of a placement from before the move wrote its router's address over the move's.
    for (name, both) in [("a", [FIRST, SECOND]), ("b", [FIRST, THIRD])] {
        let history = status_history(&fake, name);
        let first_both = history.iter().position(|s| s == &both).unwrap_or_else(|| panic!("{name}: {history:?}"));
        assert!(
            !history[first_both..].contains(&vec![FIRST.to_string()]),
            "{name} went back to rset alone: {history:?}"
        );
    }
    let note = event_note(&fake, "b", "MoveStarted").unwrap_or_default();
    assert!(!note.is_empty(), "the moves are told");
    let merges = event_reasons(&fake, "b").iter().filter(|r| *r == "MoveStarted").count();
    assert_eq!(merges, 2, "b's move, then the move on to rset-2: {:?}", event_reasons(&fake, "b"));
    running.stop().await;
}
