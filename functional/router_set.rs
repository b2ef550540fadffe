//! Scale-out on the real Octavia: the controller (`run_set_with`, the real backends) drives a set
//! of three routers built at a capacity of two policies, the Kubernetes side on the fake API
//! server. On the same set-up (one test, to keep CI short): the three routers' writes in flight
//! at once, a router deleted by hand rebuilt on the same floating IP with the same groups, and
//! a router in ERROR holding back only itself; then, its controller stopped, a move driven by
//! real `kuryr-l7-router run` processes killed with SIGKILL mid-move (`kill_move`). Included by `functional/leader.rs` (same fake
//! server, no test binary of its own):
//! `KURYR_FUNCTIONAL=1 cargo test --test functional_leader -- router_set --nocapture`.

use super::common::*;
use super::fake_api::Fake;
use super::routed_hosts::routed_hosts;
use kuryr_l7_router::controller::ControllerError;
use kuryr_l7_router::controller::octavia_backend::OctaviaBackend;
use kuryr_l7_router::controller::router_set::store::{SetRecords, read_config_maps, shard_name};
use kuryr_l7_router::controller::runtime::run_set_with;
use kuryr_l7_router::controller::writer::{
    DeleteResult, FoundRouter, MembersResult, RouterBackend, SyncResult, WriteError,
};
use kuryr_l7_router::driver::{Router, WriteGate, WritePermits};
use kuryr_l7_router::model::{DesiredRouter, Pool};
use kuryr_l7_router::openstack::ListQuery;
use kuryr_l7_router::placement::router_index;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const NAMES: [&str; 5] = ["ra", "rb", "rc", "rd", "re"];
const ING: &str = "networking.k8s.io/v1/ingresses";

fn settings(api: &str, token: &std::path::Path, base: &str) -> kuryr_l7_router::config::Settings {
    let stack = std::env::var("KURYR_CONFIG_FILE").expect("KURYR_CONFIG_FILE: the stack's kuryr.conf");
    let ours = format!(
        "[kubernetes]\napi_root = {api}\ntoken_file = {}\nleader_election = False\nhealth_port = {}\n\
         ingress_class = kuryr-rset\nresync_period = 10\n\
         [octavia_defaults]\nl7_router_name = {base}\nscale_out = True\nmax_policies_per_router = 2\n",
        token.display(),
        std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
    );
    let texts = [(stack.clone(), std::fs::read_to_string(&stack).unwrap()), ("rset.conf".into(), ours)];
    kuryr_l7_router::config::load_texts(&texts, Vec::new()).unwrap().settings
}

/// One Service on every router (its pool on each), five one-policy Ingresses.
fn fixtures(fake: &Fake) {
    class_and_web_service(fake, "kuryr-rset", "10.0.0.60");
    for name in NAMES {
        fake.put("ingresses", ingress(name));
    }
}

/// The IngressClass `class` of ours, and Service shop/web (port 80 → 8080) with one ready
/// endpoint at `endpoint`: what the set tests route their Ingresses to.
pub(crate) fn class_and_web_service(fake: &Fake, class: &str, endpoint: &str) {
    fake.put(
        "ingressclasses",
        json!({"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
               "metadata": {"name": class}, "spec": {"controller": "openstack.org/kuryr-l7-router"}}),
    );
    fake.put(
        "services",
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "shop"},
               "spec": {"ports": [{"name": "http", "port": 80, "targetPort": 8080}]}}),
    );
    fake.put(
        "endpointslices",
        json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
               "metadata": {"name": "web-abc", "namespace": "shop", "labels": {"kubernetes.io/service-name": "web"}},
               "addressType": "IPv4", "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
               "endpoints": [{"addresses": [endpoint], "conditions": {"ready": true}}]}),
    );
}

/// One host, one path: one policy.
fn ingress(name: &str) -> Value {
    json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
           "metadata": {"name": name, "namespace": "shop", "creationTimestamp": "2026-01-01T00:00:00Z"},
           "spec": {"ingressClassName": "kuryr-rset", "rules": [{"host": format!("{name}.example.com"), "http": {"paths": [
               {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]}})
}

/// Each Sync that wrote, by router: (router index, start, end, writes). A Sync's interval runs
/// from its first request to the router ACTIVE again after its last write.
type Syncs = Arc<Mutex<Vec<(u32, Instant, Instant, usize)>>>;

/// Each failed Sync: (router index, end, error label).
type Failures = Arc<Mutex<Vec<(u32, Instant, String)>>>;

/// The real backend of router `index`, its Syncs timed.
struct Timed {
    inner: OctaviaBackend,
    index: u32,
    syncs: Syncs,
    failures: Failures,
}

impl Timed {
    fn timed(&self, started: Instant, result: SyncResult) -> SyncResult {
        match &result {
            Ok(report) if !report.writes.is_empty() => {
                self.syncs.lock().unwrap().push((self.index, started, Instant::now(), report.writes.len()));
            }
            Ok(_) => {}
            Err(e) => self.failures.lock().unwrap().push((self.index, Instant::now(), e.label.to_string())),
        }
        result
    }
}

impl RouterBackend for Timed {
    async fn sync(&self, desired: &DesiredRouter) -> SyncResult {
        let started = Instant::now();
        let result = self.inner.sync(desired).await;
        self.timed(started, result)
    }
    async fn sync_reading_budget(&self, desired: &DesiredRouter) -> SyncResult {
        let started = Instant::now();
        let result = self.inner.sync_reading_budget(desired).await;
        self.timed(started, result)
    }
    async fn set_members(&self, pool: &Pool) -> MembersResult {
        self.inner.set_members(pool).await
    }
    fn conflict_retries(&self) -> u64 {
        self.inner.conflict_retries()
    }
    fn blocked(&self) -> bool {
        self.inner.blocked()
    }
    async fn delete_router(&self) -> DeleteResult {
        self.inner.delete_router().await
    }
    fn set_write_gate(&mut self, gate: WriteGate) {
        self.inner.set_write_gate(gate);
    }
    async fn set_load_balancers(&self) -> Result<Vec<FoundRouter>, WriteError> {
        self.inner.set_load_balancers().await
    }
}

/// A router's Sync interval: (router index, start, end).
type Interval = (u32, Instant, Instant);

/// Two Syncs with writes on different routers whose intervals overlap (the first pair found).
fn overlapping(syncs: &[(u32, Instant, Instant, usize)]) -> Option<(Interval, Interval)> {
    for (i, a) in syncs.iter().enumerate() {
        for b in &syncs[i + 1..] {
            if a.0 != b.0 && a.1.max(b.1) < a.2.min(b.2) {
                return Some(((a.0, a.1, a.2), (b.0, b.1, b.2)));
            }
        }
    }
    None
}

/// The set's records as the controller stored them: ConfigMaps of its own namespace (the
/// default `[kubernetes] lease_namespace`), never annotations of the Ingresses.
pub(crate) fn set_records(fake: &Fake, base: &str) -> Option<SetRecords> {
    let mut cms = Vec::new();
    for n in [1, 2, 4, 8] {
        for i in 0..n {
            if let Some(v) = fake.get("v1/configmaps", "kube-system", &shard_name(base, n, i)) {
                cms.push(serde_json::from_value(v).unwrap());
            }
        }
    }
    read_config_maps(base, &cms).ok()?.records
}

/// The router recorded for host `<name>.example.com`.
pub(crate) fn recorded_router(fake: &Fake, base: &str, name: &str) -> Option<String> {
    let index = set_records(fake, base)?.hosts.get(&format!("{name}.example.com"))?.router;
    Some(kuryr_l7_router::placement::router_name(base, index))
}

/// The move in progress of host `<name>.example.com`'s group, as JSON text.
pub(crate) fn move_record(fake: &Fake, base: &str, name: &str) -> Option<String> {
    let records = set_records(fake, base)?;
    let host = format!("{name}.example.com");
    records.moves.values().find(|m| m.hosts.contains(&host)).map(|m| serde_json::to_string(m).unwrap())
}

/// (recorded router, status address) of Ingress `name`, once both are written.
fn placed(fake: &Fake, base: &str, name: &str) -> Option<(String, String)> {
    let ing: Value = fake.get(ING, "shop", name)?;
    let ip = ing["status"]["loadBalancer"]["ingress"][0]["ip"].as_str()?.to_string();
    Some((recorded_router(fake, base, name)?, ip))
}

/// Five Ingresses at two policies per router: three load balancers are created, each routes
/// exactly the hosts placed on it, and each Ingress's status is its router's floating IP.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn router_set_three_routers_each_ingress_status_points_at_its_router() {
    if !enabled() {
        return;
    }
    let fake = Fake::new();
    fixtures(&fake);
    let (api, _) = fake.serve().await;
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "fake-token\n").unwrap();
    // The base must not end in -<number>: the letter keeps `unique`'s hex suffix from being one.
    let base = format!("{}x", unique("rset", "set"));
    let s = settings(&api, &token, &base);
    let routers: Vec<_> = (0..3)
        .map(|i| kuryr_l7_router::wiring::router_observed_at(&s, None, i, WritePermits::unlimited()).unwrap())
        .collect();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let started = Instant::now();
    let syncs: Syncs = Arc::default();
    let failures: Failures = Arc::default();
    let (timed, failed) = (syncs.clone(), failures.clone());
    let permits = kuryr_l7_router::wiring::write_permits(&s);
    let backends = move |s: &_, _: &_, index: u32| {
        let router = kuryr_l7_router::wiring::router_observed_at(s, None, index, permits.clone())
            .map_err(|e| ControllerError::ClientConfig(e.to_string()))?;
        Ok(Timed { inner: OctaviaBackend::new(router), index, syncs: timed.clone(), failures: failed.clone() })
    };
    let run = tokio::spawn(run_set_with(s.clone(), backends, async move {
        let _ = stopped.await;
    }));
    let body = async {
        let deadline = Instant::now() + Duration::from_secs(600);
        let got: BTreeMap<&str, (String, String)> = loop {
            if let Some(all) = NAMES.iter().map(|n| placed(&fake, &base, n).map(|p| (*n, p))).collect::<Option<_>>() {
                break all;
            }
            assert!(Instant::now() < deadline, "not every Ingress placed in 600 s");
            tokio::time::sleep(Duration::from_millis(500)).await;
        };
        eprintln!("every Ingress placed and published in {:.1} s: {got:?}", started.elapsed().as_secs_f64());
        let mut hosts: BTreeMap<u32, BTreeSet<String>> = BTreeMap::new();
        let mut address: BTreeMap<u32, BTreeSet<String>> = BTreeMap::new();
        for (name, (router, ip)) in &got {
            let i = router_index(&base, router).unwrap_or_else(|| panic!("{name}: {router} not of the set"));
            hosts.entry(i).or_default().insert(format!("{name}.example.com"));
            address.entry(i).or_default().insert(ip.clone());
        }
        assert_eq!(hosts.keys().copied().collect::<Vec<_>>(), [0, 1, 2], "three routers: {got:?}");
        let all: BTreeSet<&String> = address.values().flatten().collect();
        assert_eq!(all.len(), 3, "one address per router, none shared: {address:?}");
        for (i, r) in routers.iter().enumerate() {
            let i = i as u32;
            let lb = r.find().await.unwrap().unwrap_or_else(|| panic!("router {} exists", r.spec().name));
            let q =
                ListQuery { extra: vec![("port_id".into(), lb.vip_port_id.clone().unwrap())], ..ListQuery::default() };
            let fips: BTreeSet<String> =
                r.neutron().list_floating_ips(&q).await.unwrap().into_iter().map(|f| f.floating_ip_address).collect();
            assert_eq!(fips, address[&i], "{}: status = its floating IP", r.spec().name);
            let actual = read_router(r).await;
            let routed: BTreeSet<String> = routed_hosts(&actual).collect();
            assert_eq!(routed, hosts[&i], "{} routes exactly its hosts", r.spec().name);
            assert_eq!(actual.pools.len(), 1, "{}: the shared Service's pool", r.spec().name);
        }
        writes_in_flight_at_once(&syncs.lock().unwrap(), started);
        rebuilt_after_a_hand_delete(&routers[1], &address[&1], &hosts[&1]).await;
        an_error_router_holds_back_only_itself(&fake, &routers, &base, &address, &failures).await;
    };
    let result = futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(body)).await;
    let _ = stop.send(());
    let _ = tokio::time::timeout(Duration::from_secs(60), run).await;
    // On the same routers, the in-process controller stopped: real processes killed mid-move.
    let result = match result {
        Ok(()) => {
            let kill = super::kill_move::a_kill_9_mid_move_converges(&fake, &api, &token, &base, &routers);
            futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(kill)).await
        }
        Err(panic) => Err(panic),
    };
    for r in &routers {
        cleanup(r).await;
    }
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
}

/// The routers' first Syncs (their creates) ran at once: two routers' write intervals overlap.
fn writes_in_flight_at_once(syncs: &[(u32, Instant, Instant, usize)], t0: Instant) {
    let at = |t: Instant| t.duration_since(t0).as_secs_f64();
    for (i, from, to, writes) in syncs {
        eprintln!("router {i}: Sync with {writes} writes from {:.1} s to {:.1} s", at(*from), at(*to));
    }
    let ((a, a0, a1), (b, b0, b1)) = overlapping(syncs).expect("two routers' writes in flight at once");
    eprintln!(
        "router {a} [{:.1}, {:.1}] and router {b} [{:.1}, {:.1}] overlap for {:.1} s",
        at(a0),
        at(a1),
        at(b0),
        at(b1),
        (a1.min(b1) - a0.max(b0)).as_secs_f64()
    );
}

/// Router `r`'s load balancer deleted by hand (cascade): the next resync (every 10 s) builds it
/// again, on the same floating IP (found by its description), with the same hosts.
async fn rebuilt_after_a_hand_delete(r: &Router, fip: &BTreeSet<String>, hosts: &BTreeSet<String>) {
    let lb = r.find().await.unwrap().expect("the router exists");
    r.octavia().delete_load_balancer(&lb.id, true).await.unwrap();
    r.octavia().wait_deleted(&lb.id, Duration::from_secs(120)).await.unwrap();
    let deleted = Instant::now();
    let deadline = deleted + Duration::from_secs(300);
    let rebuilt = loop {
        if let Some(new) = r.find().await.unwrap().filter(|n| n.id != lb.id && n.provisioning_status == "ACTIVE") {
            let routed: BTreeSet<String> = routed_hosts(&read_router(r).await).collect();
            let q =
                ListQuery { extra: vec![("port_id".into(), new.vip_port_id.clone().unwrap())], ..ListQuery::default() };
            let fips: BTreeSet<String> =
                r.neutron().list_floating_ips(&q).await.unwrap().into_iter().map(|f| f.floating_ip_address).collect();
            if &routed == hosts && !fips.is_empty() {
                break fips;
            }
        }
        assert!(Instant::now() < deadline, "{} not rebuilt in 300 s", r.spec().name);
        tokio::time::sleep(Duration::from_secs(1)).await;
    };
    eprintln!("{} rebuilt with its hosts {hosts:?} in {:.1} s", r.spec().name, deleted.elapsed().as_secs_f64());
    assert_eq!(&rebuilt, fip, "rebuilt on the same floating IP");
}

/// Router 1's load balancer put in ERROR (in Octavia's database, as a failed provider leaves
/// it); a new Ingress, placed on router 2 (the only one with room), gets its route and its
/// status there, and router 1's Ingresses keep theirs.
async fn an_error_router_holds_back_only_itself(
    fake: &Fake,
    routers: &[Router],
    base: &str,
    address: &BTreeMap<u32, BTreeSet<String>>,
    failures: &Failures,
) {
    let lb = routers[1].find().await.unwrap().expect("router 1 exists");
    set_provisioning_status("load_balancer", &lb.id, "ERROR");
    let in_error = Instant::now();
    let before: BTreeMap<&str, Option<(String, String)>> = NAMES.iter().map(|n| (*n, placed(fake, base, n))).collect();
    let put = Instant::now();
    fake.put("ingresses", ingress("rf"));
    let deadline = put + Duration::from_secs(300);
    let (router, ip) = loop {
        if let Some(p) = placed(fake, base, "rf") {
            break p;
        }
        assert!(Instant::now() < deadline, "rf not published in 300 s while router 1 is in ERROR");
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    eprintln!("rf published on {router} in {:.1} s, router 1 in ERROR", put.elapsed().as_secs_f64());
    assert_eq!(router_index(base, &router), Some(2), "rf on the router with room");
    assert!(address[&2].contains(&ip), "rf's status is router 2's address: {ip}");
    let routed: BTreeSet<String> = routed_hosts(&read_router(&routers[2]).await).collect();
    assert!(routed.contains("rf.example.com"), "rf routed on router 2: {routed:?}");
    let after: BTreeMap<&str, Option<(String, String)>> = NAMES.iter().map(|n| (*n, placed(fake, base, n))).collect();
    assert_eq!(after, before, "the other Ingresses keep their router and status");
    let lb = routers[1].octavia().get_load_balancer(&lb.id).await.unwrap();
    assert_eq!(lb.provisioning_status, "ERROR", "router 1 left as it is");
    // Its Syncs (the resync's, every 10 s) fail meanwhile: it was in the Syncs, and held back.
    let deadline = Instant::now() + Duration::from_secs(30);
    let failed = loop {
        let f = failures.lock().unwrap().iter().find(|(i, at, _)| *i == 1 && *at > in_error).cloned();
        if let Some(f) = f {
            break f;
        }
        assert!(Instant::now() < deadline, "router 1's Sync never failed while in ERROR");
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    assert_eq!(failed.2, "router_error", "router 1's Sync fails on its ERROR");
}
