//! The runtime wiring ([`run_with`]: reflectors, both Controllers, writer, health server, shutdown)
//! and leader election against a FAKE Kubernetes API server (`tests/support/fake_api.rs`). The
//! router writer is backed by `SimBackend` (in-memory Octavia).

use crate::support::controller_run::spawn_controller;
use crate::support::fake_api;
use crate::support::fake_settings;
use fake_api::{Fake, Write};
use fake_settings::fake_cluster_settings;

use kuryr_l7_router::config::Settings;
use kuryr_l7_router::controller::ControllerError;
use kuryr_l7_router::controller::FINALIZER;
use kuryr_l7_router::controller::outputs::notice::{ServiceNotice, notice_annotation};
use kuryr_l7_router::driver::ownership::Ownership;
use kuryr_l7_router::driver::plan::DiffOptions;
use kuryr_l7_router::driver::sim::Simulator;
use kuryr_l7_router::testing::SimBackend;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::watch;

// ------------------------------------------------------------------ fixtures

pub(crate) fn class() -> Value {
    json!({"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
           "metadata": {"name": "kuryr-l7-router"}, "spec": {"controller": "openstack.org/kuryr-l7-router"}})
}

fn node(name: &str, zone: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Node",
           "metadata": {"name": name, "labels": {"topology.kubernetes.io/zone": zone}},
           "status": {"allocatable": {"cpu": "4"}, "conditions": [{"type": "Ready", "status": "True"}]}})
}

fn ingress(name: &str, class: &str) -> Value {
    json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
           "metadata": {"name": name, "namespace": "shop", "creationTimestamp": "2026-01-01T00:00:00Z"},
           "spec": {"ingressClassName": class, "rules": [{"host": format!("{name}.example.com"), "http": {"paths": [
               {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]}})
}

/// A zone-aware Service.
fn service() -> Value {
    json!({"apiVersion": "v1", "kind": "Service",
           "metadata": {"name": "web", "namespace": "shop",
                        "annotations": {"service.kubernetes.io/topology-mode": "Auto"}},
           "spec": {"ports": [{"name": "http", "port": 80, "targetPort": 8080}]}})
}

/// Endpoints with `nodeName` and no `zone`: the zone comes from the Node.
fn slice() -> Value {
    let eps: Vec<Value> = [("10.0.0.5", "n1"), ("10.0.0.6", "n2"), ("10.0.0.7", "n3")]
        .iter()
        .map(|(ip, n)| json!({"addresses": [ip], "conditions": {"ready": true}, "nodeName": n}))
        .collect();
    json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
           "metadata": {"name": "web-abc", "namespace": "shop", "labels": {"kubernetes.io/service-name": "web"}},
           "addressType": "IPv4", "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}], "endpoints": eps})
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// `GET path` on the health server: (status code, body); `None` if not answering.
pub(crate) async fn http_get(port: u16, path: &str) -> Option<(u16, String)> {
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.ok()?;
    s.write_all(format!("GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").as_bytes()).await.ok()?;
    let mut buf = String::new();
    s.read_to_string(&mut buf).await.ok()?;
    let code = buf.split_whitespace().nth(1)?.parse().ok()?;
    Some((code, buf.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default()))
}

/// Waits until `f` returns `Some`, polling every 50 ms, failing after `secs`.
pub(crate) async fn eventually<T>(what: &str, secs: u64, mut f: impl AsyncFnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out after {secs} s waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Sum of `octavia_write_job_duration_seconds_count` samples for `job` (any result).
pub(crate) fn job_count(metrics: &str, job: &str) -> u64 {
    metrics
        .lines()
        .filter(|l| l.contains("octavia_write_job_duration_seconds_count{") && l.contains(&format!("job=\"{job}\"")))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64
}

/// Sum of `reconciles_total` samples of `handler` (any result).
fn reconcile_count(metrics: &str, handler: &str) -> u64 {
    metrics
        .lines()
        .filter(|l| l.contains("reconciles_total{") && l.contains(&format!("handler=\"{handler}\"")))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64
}

/// address → weight of the one pool of the simulated router.
fn sim_weights(sim: &Mutex<Simulator>) -> BTreeMap<String, u16> {
    let sim = sim.lock().unwrap();
    sim.router.pools.iter().flat_map(|p| p.members.iter().map(|m| (m.address.to_string(), m.weight))).collect()
}

fn settings(api_root: &str, token_file: &std::path::Path, health_port: u16) -> kuryr_l7_router::config::Settings {
    settings_with(api_root, token_file, health_port, "", "")
}

/// [`settings`] with extra lines in `[kubernetes]` and `[octavia_defaults]`.
fn settings_with(
    api_root: &str,
    token_file: &std::path::Path,
    health_port: u16,
    kubernetes: &str,
    octavia: &str,
) -> kuryr_l7_router::config::Settings {
    let octavia = format!("{octavia}\navailability_zone = az-1\nzone_min_local_endpoints = 1");
    fake_cluster_settings("runtime-test.conf", api_root, token_file, health_port, kubernetes, &octavia)
}

/// The controller's whole `run` pipeline on the fake API server, writing to the simulated router.
pub(crate) struct Running {
    pub(crate) state: Arc<Mutex<Simulator>>,
    /// Batch member PUTs the simulated router applied.
    pub(crate) puts: Arc<AtomicUsize>,
    pub(crate) health: u16,
    pub(crate) stop: tokio::sync::oneshot::Sender<()>,
    pub(crate) run: tokio::task::JoinHandle<Result<(), ControllerError>>,
    pub(crate) _token_dir: tempfile::TempDir,
}

/// Starts [`run_with`] on `fake` (served from now on) with the test settings, changed by `tune`.
pub(crate) async fn start_on_sim(fake: &Arc<Fake>, tune: impl FnOnce(&mut Settings)) -> Running {
    let (api_root, _) = fake.serve().await;
    let (dir, token) = crate::support::fake_settings::token_file();
    let health = free_port();
    let mut settings = settings(&api_root, &token, health);
    tune(&mut settings);
    let owner = Ownership::new(&settings.octavia_defaults.l7_router_name);
    let sim = SimBackend::new(DiffOptions { ownership: owner, health_monitor: None }, None);
    let (state, puts) = (sim.state.clone(), sim.member_puts.clone());
    let (stop, run) = spawn_controller(settings, sim);
    Running { state, puts, health, stop, run, _token_dir: dir }
}

// ------------------------------------------------------------------ tests

/// The cluster of [`run_against_a_fake_api_server`]: our class, three Nodes in two zones, one
/// Service with its slice, an Ingress of ours and one of another class.
fn seeded_cluster() -> Arc<Fake> {
    let fake = Fake::new();
    fake.put("ingressclasses", class());
    for (n, z) in [("n1", "az-1"), ("n2", "az-2"), ("n3", "az-2")] {
        fake.put("nodes", node(n, z));
    }
    fake.put("services", service());
    fake.put("endpointslices", slice());
    fake.put("ingresses", ingress("a", "kuryr-l7-router"));
    fake.put("ingresses", ingress("other", "nginx"));
    fake
}

/// Every informer listed once, then watched from the list's resourceVersion; Secrets by type.
fn assert_each_kind_listed_once_and_watched(reads: &[String]) {
    for coll in [
        "/apis/networking.k8s.io/v1/ingresses",
        "/apis/networking.k8s.io/v1/ingressclasses",
        "/api/v1/services",
        "/apis/discovery.k8s.io/v1/endpointslices",
        "/api/v1/nodes",
        "/api/v1/secrets",
    ] {
        assert!(reads.iter().any(|r| r.starts_with(&format!("GET {coll}?")) && !r.contains("watch=")), "list {coll}");
        assert!(
            reads.iter().any(|r| r.starts_with(&format!("GET {coll}?")) && r.contains("watch=true")),
            "watch {coll}"
        );
        // Each kind is listed once: one watch feeds its cache and every Controller trigger.
        let lists = reads.iter().filter(|r| r.starts_with(&format!("GET {coll}?")) && !r.contains("watch=")).count();
        assert_eq!(lists, 1, "{coll} listed {lists} times: {reads:#?}");
    } // Only TLS Secrets are listed and watched: the field selector is on every Secret read.
    let secret_reads: Vec<&String> = reads.iter().filter(|r| r.starts_with("GET /api/v1/secrets?")).collect();
    assert!(secret_reads.iter().all(|r| r.contains("fieldSelector=type=kubernetes.io/tls")), "{secret_reads:?}");
    assert!(!reads.iter().any(|r| r.contains("/endpoints?")), "core Endpoints are not watched with slices");
}

/// Ingress a: the finalizer and the notice on its Service, then the status with the address, and
/// a Synced Event; the Ingress of another class is left alone.
async fn assert_first_sync_outputs(fake: &Arc<Fake>, router_name: &str) {
    // (The start-up resync converges every Ingress of our class, finalizer or not, so the notice
    // may come before the finalizer patch; a route of an Ingress deleted meanwhile goes with the
    // next Sync, since the translation reads the caches.)
    const ING: &str = "/apis/networking.k8s.io/v1/namespaces/shop/ingresses/a";
    const SVC: &str = "/api/v1/namespaces/shop/services/web";
    let writes = eventually("finalizer, notice and status written", 15, async || {
        let w = fake.writes();
        w.iter().any(|w| w.path == format!("{ING}/status")).then_some(w)
    })
    .await;
    let lines: Vec<String> = writes.iter().map(Write::line).collect();
    let pos = |line: &str| lines.iter().position(|l| l == line).unwrap_or_else(|| panic!("no {line} in {lines:#?}"));
    let (fin, notice, st) =
        (pos(&format!("PATCH {ING}")), pos(&format!("PATCH {SVC}")), pos(&format!("PATCH {ING}/status")));
    assert!(fin < st && notice < st, "finalizer and notice, then status: {lines:#?}");
    assert!(writes[fin].content_type.starts_with("application/json-patch+json"));
    assert_eq!(writes[st].body, json!({"status": {"loadBalancer": {"ingress": [{"ip": "172.24.4.10"}]}}}));
    let stored = fake.get("networking.k8s.io/v1/ingresses", "shop", "a").unwrap();
    assert_eq!(stored["metadata"]["finalizers"], json!([FINALIZER]));
    let svc = fake.get("v1/services", "shop", "web").unwrap();
    let key = notice_annotation(router_name);
    let n = ServiceNotice::parse(svc["metadata"]["annotations"][&key].as_str().unwrap()).unwrap();
    assert_eq!((n.router.as_str(), n.ingresses.as_slice()), (router_name, &["shop/a".to_string()][..]));
    assert!(!lines.iter().any(|l| l.contains("/ingresses/other")), "another class's Ingress is left alone");
    // An Event reports the Sync on the Ingress.
    eventually("Synced event", 10, async || {
        fake.writes()
            .iter()
            .any(|w| w.method == "POST" && w.path.ends_with("/events") && w.body["reason"] == "Synced")
            .then_some(())
    })
    .await;
}

/// Quiet: the writes of the reconciles triggered by our own patches are done.
async fn wait_for_no_kubernetes_writes(fake: &Arc<Fake>) {
    let mut settled = fake.writes().len();
    eventually("no more Kubernetes writes for 1 s", 10, async || {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now = fake.writes().len();
        std::mem::replace(&mut settled, now).eq(&now).then_some(())
    })
    .await;
}

/// Node n2 moves to az-1: the Service handler runs (reconcile_all_on Node changes) and makes one
/// members job; no Sync, no Kubernetes write. `syncs` and `members`: the job counts before.
async fn a_node_move_is_one_members_job(
    fake: &Arc<Fake>,
    health: u16,
    sim_state: &Mutex<Simulator>,
    (syncs, members): (u64, u64),
) {
    let writes_before = fake.writes().len();
    fake.put("nodes", node("n2", "az-1"));
    eventually("members job after the Node change", 10, async || {
        let m = http_get(health, "/metrics").await?.1;
        (job_count(&m, "members") > members).then_some(())
    })
    .await;
    assert_eq!(
        sim_weights(sim_state),
        // 2 of 3 in az-1 (8 of 12 CPUs, balanced): locals take min(1, 1.2 × 2/3) = 80% → 2:2:1.
        BTreeMap::from([("10.0.0.5".into(), 2), ("10.0.0.6".into(), 2), ("10.0.0.7".into(), 1)])
    );
    tokio::time::sleep(Duration::from_millis(700)).await; // past the controller debounce
    let metrics = http_get(health, "/metrics").await.unwrap().1;
    assert_eq!(job_count(&metrics, "sync"), syncs, "a Node change is no Sync");
    let after: Vec<String> = fake.writes()[writes_before..].iter().map(Write::line).collect();
    assert!(after.is_empty(), "no Kubernetes write for a Node change: {after:?}");
}

/// Another router's notice written on the Service (as each Service handler writes its own)
/// re-reconciles no Ingress: it changes nothing an Ingress reads. A label does.
async fn only_a_label_on_the_service_rereconciles_the_ingress(fake: &Arc<Fake>, health: u16) {
    let ingress_reconciles = async || reconcile_count(&http_get(health, "/metrics").await.unwrap().1, "ingress");
    // Quiet first: the Ingress reconciles queued by earlier events (slow on a loaded machine) are
    // done, so that only the notice below could add one.
    let mut before = ingress_reconciles().await;
    eventually("no Ingress reconcile for 1.2 s", 15, async || {
        tokio::time::sleep(Duration::from_millis(1200)).await;
        let now = ingress_reconciles().await;
        std::mem::replace(&mut before, now).eq(&now).then_some(())
    })
    .await;
    let mut svc = fake.get("v1/services", "shop", "web").unwrap();
    let other = ServiceNotice { router: "other-router".into(), pools: vec!["p".into()], ingresses: vec![] };
    svc["metadata"]["annotations"][notice_annotation("other-router")] = json!(other.to_annotation());
    fake.put("services", svc.clone());
    tokio::time::sleep(Duration::from_millis(1200)).await; // past the Ingress Controller's debounce
    assert_eq!(ingress_reconciles().await, before, "a notice re-reconciled the Ingress");
    svc["metadata"]["labels"] = json!({"team": "shop"});
    fake.put("services", svc);
    eventually("an Ingress reconcile after a label change on its Service", 10, async || {
        (ingress_reconciles().await > before).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_against_a_fake_api_server() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    // `RUST_LOG=info cargo test --test it controller_runtime::run_against -- --nocapture` shows the
    // controller's logs (support/logs.rs: the one global subscriber of the integration tests).
    crate::support::logs::init();
    let started = Instant::now();
    let fake = seeded_cluster();
    let (api_root, _) = fake.serve().await;
    let (_dir, token) = crate::support::fake_settings::token_file();
    let health = free_port();
    let settings = settings(&api_root, &token, health);
    let router_name = settings.octavia_defaults.l7_router_name.clone();
    let address: std::net::IpAddr = "172.24.4.10".parse().unwrap();
    let sim =
        SimBackend::new(DiffOptions { ownership: Ownership::new(&router_name), health_monitor: None }, Some(address));
    let sim_state = sim.state.clone();
    let (stop, run) = spawn_controller(settings, sim);

    // Caches sync and the first Sync succeeds: /readyz turns 200.
    eventually("/readyz 200", 15, async || match http_get(health, "/readyz").await {
        Some((200, _)) => Some(()),
        _ => None,
    })
    .await;
    assert_each_kind_listed_once_and_watched(&fake.reads());
    assert_first_sync_outputs(&fake, &router_name).await;
    // 1 of 3 endpoints in the router's zone az-1, 3 equal zones: the local one takes 1.2 × 1/3
    // = 40%, the others 30% each → 4:3:3.
    assert_eq!(
        sim_weights(&sim_state),
        BTreeMap::from([("10.0.0.5".into(), 4), ("10.0.0.6".into(), 3), ("10.0.0.7".into(), 3)])
    );
    wait_for_no_kubernetes_writes(&fake).await;
    let metrics = http_get(health, "/metrics").await.expect("metrics").1;
    let (syncs, members) = (job_count(&metrics, "sync"), job_count(&metrics, "members"));
    assert!(syncs >= 1, "{metrics}");
    // The zone-aware pool is counted under the TAR rule.
    let weighting = format!("kuryr_l7_router_pool_weighting{{router=\"{router_name}\",rule=\"topology\"}} 1");
    assert!(metrics.lines().any(|l| l == weighting), "{metrics}");
    a_node_move_is_one_members_job(&fake, health, &sim_state, (syncs, members)).await;
    only_a_label_on_the_service_rereconciles_the_ingress(&fake, health).await;
    // Shutdown (as SIGTERM): run ends cleanly, promptly, and the health server is gone.
    stop.send(()).unwrap();
    let result = tokio::time::timeout(Duration::from_secs(10), run).await.expect("run ends within 10 s").unwrap();
    assert!(result.is_ok(), "{result:?}");
    assert!(http_get(health, "/healthz").await.is_none(), "health server stopped");
    assert!(started.elapsed() < Duration::from_secs(30), "{:?}", started.elapsed());
}

/// Leader election on the fake API server: pod-a holds the Lease (3 s, renewed 2 s before
/// expiry); pod-b waits. pod-a is then partitioned (its API address answers 503, as a replica cut
/// off from the API server): it steps down `grace` before its lease expires, and pod-b takes over
/// once the lease expired, within one lease duration after the expiry, never before it: never two
/// leaders at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_standby_takes_over_after_the_holders_lease_expires() {
    use k8s_openapi::jiff::Timestamp;
    use kuryr_l7_router::config::LeaderSettings;
    use kuryr_l7_router::controller::leader::Leadership;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let fake = Fake::new();
    let (url_a, down_a) = fake.serve().await;
    let (url_b, _) = fake.serve().await;
    let client = |url: &str| kube::Client::try_from(kube::Config::new(url.parse().unwrap())).unwrap();
    let settings = |id: &str| LeaderSettings {
        duration_secs: 3,
        grace_secs: 1,
        ..LeaderSettings::new("kuryr-l7-router", "kuryr", id)
    };
    let lease =
        || fake.get("coordination.k8s.io/v1/leases", "kuryr", "kuryr-l7-router").expect("lease")["spec"].clone();
    let time = |v: &Value| v.as_str().expect("a time").parse::<Timestamp>().unwrap();

    let a = Leadership::start(client(&url_a), settings("pod-a")).unwrap();
    tokio::time::timeout(Duration::from_secs(5), a.acquired()).await.expect("pod-a leads").unwrap();
    let b = Leadership::start(client(&url_b), settings("pod-b")).unwrap();
    // Longer than the lease: pod-a renews it, pod-b stays standby.
    tokio::time::sleep(Duration::from_millis(3000)).await;
    assert!(!*b.is_leader().borrow(), "pod-b must wait while pod-a renews");
    assert_eq!(lease()["holderIdentity"], "pod-a");

    down_a.store(true, Ordering::SeqCst);
    let partitioned = Instant::now();
    let last_renew = time(&lease()["renewTime"]);
    // pod-a steps down by itself at its write deadline, renewTime + duration - grace: its renewal
    // hangs in kube's client retries and its reads fail, but the deadline is a timer.
    let mut a_leader = a.is_leader();
    let a_down = tokio::spawn(async move {
        a_leader.wait_for(|l| !*l).await.expect("pod-a's election runs");
        Instant::now()
    });
    tokio::time::timeout(Duration::from_secs(8), b.acquired()).await.expect("pod-b takes over").unwrap();
    let b_leads = Instant::now();
    let took = partitioned.elapsed();
    let spec = lease();
    assert_eq!(spec["holderIdentity"], "pod-b");
    let acquired = time(&spec["acquireTime"]);
    let expiry = last_renew + std::time::Duration::from_secs(3);
    assert!(acquired >= expiry, "taken at {acquired}, before pod-a's lease expired at {expiry}");
    assert!(acquired < expiry + std::time::Duration::from_secs(2), "taken at {acquired}, expiry {expiry}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    let a_stepped_down = tokio::time::timeout(Duration::from_secs(1), a_down)
        .await
        .expect("pod-a stepped down before pod-b led")
        .unwrap();
    assert!(
        a_stepped_down + Duration::from_millis(500) <= b_leads,
        "never two leaders: pod-a stepped down {:?} after the partition, pod-b led {:?} after it",
        a_stepped_down - partitioned,
        b_leads - partitioned
    );
    tokio::time::timeout(Duration::from_secs(5), b.release()).await.expect("pod-b releases").unwrap();
    assert!(lease().get("holderIdentity").is_none(), "released: {}", lease());
    let _ = tokio::time::timeout(Duration::from_secs(5), a.release()).await;
}

/// Issue 14 §2: one Service used by two routers (two controller instances, each with its own
/// IngressClass and router). Each instance writes its own notice key on the Service, and one
/// EndpointSlice change gives BOTH routers' pools the new member within seconds (not at the next
/// resync, 600 s later).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_shared_by_two_routers_refreshes_both_on_an_endpoint_change() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let fake = Fake::new();
    fake.put("ingressclasses", class());
    let mut pool_b_class = class();
    pool_b_class["metadata"]["name"] = json!("pool-b");
    fake.put("ingressclasses", pool_b_class);
    for (n, z) in [("n1", "az-1"), ("n2", "az-2"), ("n3", "az-2")] {
        fake.put("nodes", node(n, z));
    }
    fake.put("services", service());
    fake.put("endpointslices", slice());
    fake.put("ingresses", ingress("a", "kuryr-l7-router"));
    fake.put("ingresses", ingress("b", "pool-b"));
    let (api_root, _) = fake.serve().await;
    let (_dir, token) = crate::support::fake_settings::token_file();

    let mut instances = Vec::new();
    for (class, router) in [("kuryr-l7-router", "router-a"), ("pool-b", "router-b")] {
        let health = free_port();
        let settings = settings_with(
            &api_root,
            &token,
            health,
            &format!("ingress_class = {class}"),
            &format!("l7_router_name = {router}"),
        );
        let sim = SimBackend::new(
            DiffOptions { ownership: Ownership::new(router), health_monitor: None },
            Some("172.24.4.10".parse().unwrap()),
        );
        let state = sim.state.clone();
        let (stop, run) = spawn_controller(settings, sim);
        instances.push((router, health, state, stop, run));
    }
    let addresses = |sim: &Mutex<Simulator>| -> Vec<String> { sim_weights(sim).into_keys().collect() };
    let three = ["10.0.0.5", "10.0.0.6", "10.0.0.7"].map(String::from).to_vec();
    for (router, health, state, ..) in &instances {
        eventually(&format!("{router} ready with 3 members"), 15, async || {
            let ready = matches!(http_get(*health, "/readyz").await, Some((200, _)));
            (ready && addresses(state) == three).then_some(())
        })
        .await;
    }
    // Both notices, each under its own router's key, neither overwriting the other.
    let svc = eventually("both notices on the Service", 10, async || {
        let svc = fake.get("v1/services", "shop", "web")?;
        let a = svc["metadata"]["annotations"].get(notice_annotation("router-a"))?.as_str()?.to_string();
        let b = svc["metadata"]["annotations"].get(notice_annotation("router-b"))?.as_str()?.to_string();
        Some((ServiceNotice::parse(&a).unwrap(), ServiceNotice::parse(&b).unwrap(), svc))
    })
    .await;
    assert_eq!((svc.0.router.as_str(), svc.0.ingresses.as_slice()), ("router-a", &["shop/a".to_string()][..]));
    assert_eq!((svc.1.router.as_str(), svc.1.ingresses.as_slice()), ("router-b", &["shop/b".to_string()][..]));
    assert_eq!(svc.2["metadata"]["annotations"]["service.kubernetes.io/topology-mode"], "Auto");

    // Quiet: the reconciles triggered by the start-up writes (finalizers, notices, status) are
    // done, so what follows is the endpoint change's own doing.
    let mut settled = fake.writes().len();
    eventually("no more Kubernetes writes for 1 s", 10, async || {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now = fake.writes().len();
        std::mem::replace(&mut settled, now).eq(&now).then_some(())
    })
    .await;

    // One EndpointSlice change: a fourth ready endpoint.
    let mut changed = slice();
    changed["endpoints"]
        .as_array_mut()
        .unwrap()
        .push(json!({"addresses": ["10.0.0.8"], "conditions": {"ready": true}, "nodeName": "n1"}));
    let changed_at = Instant::now();
    fake.put("endpointslices", changed);
    let four = ["10.0.0.5", "10.0.0.6", "10.0.0.7", "10.0.0.8"].map(String::from).to_vec();
    for (router, _, state, ..) in &instances {
        eventually(&format!("{router} gets the new member"), 5, async || (addresses(state) == four).then_some(()))
            .await;
    }
    let took = changed_at.elapsed();
    eprintln!("both routers updated {took:?} after the EndpointSlice change");
    assert!(took < Duration::from_secs(3), "{took:?}");

    for (_, _, _, stop, run) in instances {
        stop.send(()).unwrap();
        let result = tokio::time::timeout(Duration::from_secs(10), run).await.expect("run ends").unwrap();
        assert!(result.is_ok(), "{result:?}");
    }
}

/// Issue 14 §1: the translation's warnings about a Service (`NoEndpoints`, `EndpointPortNotFound`)
/// become Warning Events on that Service (POSTed to the fake API server), once: three forced
/// Syncs (as three resyncs) post each one Event, not three.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_warnings_become_events_on_the_service_once() {
    use kube::runtime::watcher::Event;
    use kuryr_l7_router::controller::context::{Context, StoreWriters};
    use kuryr_l7_router::controller::metrics::Metrics;
    use kuryr_l7_router::controller::outputs::events::{DEFAULT_DEDUP_WINDOW, EventPublisher};
    use kuryr_l7_router::controller::writer::{Writer, WriterMetrics};
    let _ = rustls::crypto::ring::default_provider().install_default();
    let fake = Fake::new();
    let (api_root, _) = fake.serve().await;
    let client = kube::Client::try_from(kube::Config::new(api_root.parse().unwrap())).unwrap();
    let (stores, mut w) = StoreWriters::new();
    fn obj<K: serde::de::DeserializeOwned>(v: Value) -> K {
        serde_json::from_value(v).unwrap()
    }
    w.classes.apply_watcher_event(&Event::Apply(obj(class())));
    // web: no EndpointSlice at all. api: a slice whose port is not named as the Service port.
    let mut web = service();
    web["metadata"]["uid"] = json!("uid-web");
    fake.put("services", web.clone());
    w.services.apply_watcher_event(&Event::Apply(obj(web)));
    let mut api = service();
    api["metadata"]["name"] = json!("api");
    w.services.apply_watcher_event(&Event::Apply(obj(api)));
    let mut api_slice = slice();
    api_slice["metadata"]["name"] = json!("api-abc");
    api_slice["metadata"]["labels"]["kubernetes.io/service-name"] = json!("api");
    api_slice["ports"] = json!([{"name": "grpc", "port": 9090, "protocol": "TCP"}]);
    w.slices.apply_watcher_event(&Event::Apply(obj(api_slice)));
    w.ingresses.apply_watcher_event(&Event::Apply(obj(ingress("a", "kuryr-l7-router"))));
    let mut to_api = ingress("b", "kuryr-l7-router");
    to_api["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]["name"] = json!("api");
    w.ingresses.apply_watcher_event(&Event::Apply(obj(to_api)));

    let sim = SimBackend::new(DiffOptions { ownership: Ownership::new("r1"), health_monitor: None }, None);
    let writer = Writer::spawn(sim, WriterMetrics::default());
    let (_ready_tx, ready_rx) = watch::channel(true);
    let opts =
        kuryr_l7_router::translate::TranslateOptions { ingress_class: "kuryr-l7-router".into(), ..Default::default() };
    let events = Arc::new(EventPublisher::new(client.clone(), None, DEFAULT_DEDUP_WINDOW));
    let ctx =
        Context::new(client, stores, writer.handle(), events, Metrics::default(), opts, "r1".into(), ready_rx, None);
    for _ in 0..3 {
        ctx.sync(true).await.unwrap();
    }
    let events: Vec<Value> = fake
        .writes()
        .into_iter()
        .filter(|w| w.method == "POST" && w.path.ends_with("/events"))
        .map(|w| w.body)
        .collect();
    let on = |name: &str, reason: &str| -> Vec<&Value> {
        events.iter().filter(|e| e["regarding"]["name"] == name && e["reason"] == reason).collect()
    };
    let no_eps = on("web", "NoEndpoints");
    assert_eq!(no_eps.len(), 1, "one Event, not one per Sync: {events:#?}");
    let e = no_eps[0];
    assert_eq!((e["type"].as_str(), e["regarding"]["kind"].as_str()), (Some("Warning"), Some("Service")));
    assert_eq!(e["regarding"]["uid"], "uid-web", "the Service from the cache");
    let note = e["note"].as_str().unwrap();
    assert!(note.contains("Service shop/web") && note.contains("port 80") && note.contains("503"), "{note}");
    let port = on("api", "EndpointPortNotFound");
    assert_eq!(port.len(), 1, "{events:#?}");
    let note = port[0]["note"].as_str().unwrap();
    assert!(note.contains("shop/api") && note.contains("api-abc") && note.contains("\"http\""), "{note}");
    assert!(events.iter().all(|e| e["regarding"]["kind"] == "Service"), "no Ingress event from a Sync: {events:#?}");
    drop(writer);
}

// ------------------------------------------------------------------ rollouts: member change window

/// The slice of `web` with these `(address, node, state)` endpoints; state: `ready`,
/// `terminating` (serving while terminating).
fn slice_of(eps: &[(String, &str, &str)]) -> Value {
    let eps: Vec<Value> = eps
        .iter()
        .map(|(ip, n, state)| {
            let cond = match *state {
                "ready" => json!({"ready": true, "serving": true, "terminating": false}),
                _ => json!({"ready": false, "serving": true, "terminating": true}),
            };
            json!({"addresses": [ip], "conditions": cond, "nodeName": n})
        })
        .collect();
    let mut s = slice();
    s["endpoints"] = json!(eps);
    s
}

/// A rolling update replacing every endpoint, as the EndpointSlice controller reports it: for each
/// old pod, its replacement turns ready, the old one terminates (serving), then leaves the slice.
fn rollout_states(old: &[(&str, &str)], new: &[(&str, &str)]) -> Vec<Vec<(String, &'static str, &'static str)>> {
    let nodes = |n: &str| -> &'static str { ["n1", "n2", "n3"].into_iter().find(|x| *x == n).unwrap() };
    let mut cur: Vec<(String, &'static str, &'static str)> =
        old.iter().map(|(ip, n)| (ip.to_string(), nodes(n), "ready")).collect();
    let mut states = vec![];
    for ((oip, _), (nip, nn)) in old.iter().zip(new) {
        cur.push((nip.to_string(), nodes(nn), "ready"));
        states.push(cur.clone());
        cur.iter_mut().filter(|e| e.0 == *oip).for_each(|e| e.2 = "terminating");
        states.push(cur.clone());
        cur.retain(|e| e.0 != *oip);
        states.push(cur.clone());
    }
    states
}

struct RolloutRun {
    updates: usize,
    puts: usize,
    /// Batch PUTs made before the last update was sent (0 = the writes waited for the end).
    puts_during: usize,
    /// From the last update to the router holding the final members.
    lag: Duration,
    weights: BTreeMap<String, u16>,
}

/// Runs the controller on the fake API server with `window`, replaces every endpoint of `web` with
/// updates `gap` apart, and counts the batch member PUTs the rollout cost.
async fn rollout_through_the_controller(window: Duration, gap: Duration) -> RolloutRun {
    const OLD: [(&str, &str); 3] = [("10.0.0.5", "n1"), ("10.0.0.6", "n2"), ("10.0.0.7", "n3")];
    const NEW: [(&str, &str); 3] = [("10.0.1.5", "n1"), ("10.0.1.6", "n2"), ("10.0.1.7", "n3")];
    let fake = Fake::new();
    fake.put("ingressclasses", class());
    for (n, z) in [("n1", "az-1"), ("n2", "az-2"), ("n3", "az-2")] {
        fake.put("nodes", node(n, z));
    }
    fake.put("services", service());
    fake.put("endpointslices", slice_of(&rollout_states(&OLD, &NEW)[0][..3]));
    fake.put("ingresses", ingress("a", "kuryr-l7-router"));
    let Running { state, puts, stop, run, _token_dir, .. } =
        start_on_sim(&fake, |s| s.kubernetes.member_change_window = window).await;
    let initial = eventually("the old endpoints on the router", 15, async || {
        let w = sim_weights(&state);
        (w.len() == 3).then_some(w)
    })
    .await;
    tokio::time::sleep(window * 2 + Duration::from_millis(500)).await; // start-up reconciles done
    let before = puts.load(std::sync::atomic::Ordering::SeqCst);
    let states = rollout_states(&OLD, &NEW);
    for s in &states {
        fake.put("endpointslices", slice_of(s));
        tokio::time::sleep(gap).await;
    }
    let sent = Instant::now() - gap;
    let puts_during = puts.load(std::sync::atomic::Ordering::SeqCst) - before;
    let want: Vec<String> = NEW.iter().map(|(ip, _)| ip.to_string()).collect();
    let weights = eventually("the new endpoints on the router", 15, async || {
        let w = sim_weights(&state);
        w.keys().eq(want.iter()).then_some(w)
    })
    .await;
    let lag = sent.elapsed();
    tokio::time::sleep(window + Duration::from_millis(300)).await; // a late extra write would show
    let puts = puts.load(std::sync::atomic::Ordering::SeqCst) - before;
    stop.send(()).unwrap();
    let _ = tokio::time::timeout(Duration::from_secs(10), run).await;
    // Same nodes, same zones: each new endpoint carries the weight of the one it replaced.
    for ((o, _), (n, _)) in OLD.iter().zip(&NEW) {
        assert_eq!(weights[*n], initial[*o], "{n} replaced {o}: {weights:?} vs {initial:?}");
    }
    let run = RolloutRun { updates: states.len(), puts, puts_during, lag, weights };
    println!(
        "member_change_window {} ms, {} EndpointSlice updates {} ms apart: {} batch member PUT(s) ({} before the last update), final members {} ms after the last update",
        window.as_millis(),
        run.updates,
        gap.as_millis(),
        run.puts,
        run.puts_during,
        run.lag.as_millis()
    );
    run
}

/// A rollout that replaces every endpoint, driven through the whole `run` pipeline (watch →
/// Service handler → writer → simulated Octavia): the change window makes a burst one batch PUT,
/// a slow rollout one PUT per window (never postponed to the end, as a trailing debounce would),
/// and without a window every update is a PUT. docs/benchmarks.md has the numbers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rollout_costs_one_batch_put_per_change_window() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let window = Duration::from_millis(500);
    let burst = rollout_through_the_controller(window, Duration::from_millis(20)).await;
    assert!(burst.weights.len() == 3 && burst.puts >= 1, "{:?}", burst.weights);
    assert!(burst.puts <= 2, "a 9-update burst within one window: {} PUTs", burst.puts);
    assert!(burst.lag < window + Duration::from_secs(2), "{:?}", burst.lag);

    let unwindowed = rollout_through_the_controller(Duration::ZERO, Duration::from_millis(20)).await;
    assert!(unwindowed.puts > burst.puts, "without a window: {} PUTs vs {}", unwindowed.puts, burst.puts);

    let gap = Duration::from_millis(200);
    let slow = rollout_through_the_controller(window, gap).await;
    let span = gap * (slow.updates as u32 - 1);
    let most = (span.as_millis() / window.as_millis()) as usize + 2;
    assert!(slow.puts <= most, "{} PUTs over {span:?} with a {window:?} window (at most {most})", slow.puts);
    assert!(slow.puts_during >= 1, "members were written while the rollout went on");
    assert!(slow.lag < window + Duration::from_secs(2), "{:?}", slow.lag);
}

/// The health-monitor annotation through the `run` pipeline: the Service handler turns a change
/// of it into a Sync (endpoint changes stay Members jobs), the pool's monitor gets its values; a
/// bad value is a Warning Event on the Service and the monitor is kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_health_monitor_annotation_reaches_the_pool() {
    use kuryr_l7_router::translate::health::HEALTH_MONITOR_ANNOTATION;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let fake = Fake::new();
    fake.put("ingressclasses", class());
    fake.put("nodes", node("n1", "az-1"));
    fake.put("services", service());
    fake.put("endpointslices", slice());
    fake.put("ingresses", ingress("a", "kuryr-l7-router"));
    let Running { state, stop, run, _token_dir, .. } =
        start_on_sim(&fake, |s| s.kubernetes.member_change_window = Duration::from_millis(100)).await;
    let monitor = || {
        let sim = state.lock().unwrap();
        sim.router.pools.first().and_then(|p| p.healthmonitor.as_ref()).map(|h| h.spec.clone())
    };
    eventually("the pool on the router", 15, async || (!sim_weights(&state).is_empty()).then_some(())).await;
    assert_eq!(monitor(), None);
    let annotate = |value: &str| {
        // The Service as the API holds it now (with the notice our Sync wrote), plus the annotation.
        let mut svc = fake.get("v1/services", "shop", "web").unwrap();
        svc["metadata"]["annotations"][HEALTH_MONITOR_ANNOTATION] = json!(value);
        fake.put("services", svc);
    };
    annotate(r#"{"path": "/healthz", "expectedCodes": "200-399"}"#);
    let hm = eventually("the monitor from the annotation", 10, async || monitor()).await;
    assert_eq!((hm.url_path.as_deref(), hm.expected_codes.as_deref()), (Some("/healthz"), Some("200-399")));
    annotate(r#"{"path": "healthz"}"#);
    let ev = eventually("a Warning InvalidHealthMonitor", 10, async || {
        fake.writes().into_iter().find(|w| w.path.ends_with("/events") && w.body["reason"] == "InvalidHealthMonitor")
    })
    .await;
    assert!(ev.body["note"].as_str().unwrap_or_default().contains("must start with /"), "{:?}", ev.body);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(monitor(), Some(hm), "a bad value keeps the running monitor");
    stop.send(()).unwrap();
    let _ = tokio::time::timeout(Duration::from_secs(10), run).await;
}

/// A Service created after the Ingress naming it gets its pool and members at once: its event
/// finds that Ingress through the index of Ingresses by Service (kept from the Ingress watch),
/// not at the next resync (600 s later).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_created_after_its_ingress_is_routed_at_once() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let fake = Fake::new();
    fake.put("ingressclasses", class());
    for (n, z) in [("n1", "az-1"), ("n2", "az-2"), ("n3", "az-2")] {
        fake.put("nodes", node(n, z));
    }
    fake.put("ingresses", ingress("a", "kuryr-l7-router"));
    let Running { state, health, stop, run, _token_dir, .. } = start_on_sim(&fake, |_| {}).await;
    eventually("/readyz 200", 15, async || matches!(http_get(health, "/readyz").await, Some((200, _))).then_some(()))
        .await;
    // Quiet: the Ingress's own reconciles (finalizer, status) are done, so no Sync of theirs
    // picks the Service up by chance.
    let mut settled = fake.writes().len();
    eventually("no more Kubernetes writes for 1 s", 10, async || {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now = fake.writes().len();
        std::mem::replace(&mut settled, now).eq(&now).then_some(())
    })
    .await;
    assert!(sim_weights(&state).is_empty(), "no Service yet, no members");
    fake.put("services", service());
    fake.put("endpointslices", slice());
    eventually("the late Service's members on the router", 5, async || (sim_weights(&state).len() == 3).then_some(()))
        .await;
    let _ = stop.send(());
    run.await.unwrap().unwrap();
}
