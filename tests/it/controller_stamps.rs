//! The stamps of a router's reads kept in its ConfigMap (`controller::stamp_store`), through the
//! whole controller (`run_with` with the real driver, `OctaviaBackend`) against the FAKE
//! Kubernetes API server (tests/support/fake_api.rs) and a small stateful Octavia on loopback
//! that logs every GET (tests/support/fake_octavia.rs): a controller saves the stamps after its
//! Sync, a new one loads them and its first Sync reads no child of an unchanged router, a damaged
//! ConfigMap is ignored with a log line, the router's deletion deletes its ConfigMap, and every
//! ConfigMap call is one the RBAC grants.

use crate::controller_router_set::{class, ingress, service, slice};
use crate::support::controller_run::spawn_controller;
use crate::support::eventually;
use crate::support::fake_api;
use crate::support::fake_octavia;
use crate::support::fake_settings;

use eventually::eventually_every;
use fake_api::Fake;
use fake_settings::fake_cluster_settings;
use kuryr_l7_router::controller::API_CALLS;
use kuryr_l7_router::controller::octavia_backend::OctaviaBackend;
use kuryr_l7_router::controller::stamp_store::{StampStores, config_map_name};
use kuryr_l7_router::controller::writer::RouterBackend;
use kuryr_l7_router::testing::{desired_with, member, pool};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const ROUTER: &str = "stamps-test";
/// `[kubernetes] lease_namespace`, as etc/manifests/ sets it.
const NS: &str = "kuryr-l7-router";
const CM: &str = "v1/configmaps";
const ING: &str = "networking.k8s.io/v1/ingresses";
const INGRESSES: [&str; 3] = ["a", "b", "c"];

fn cluster() -> Arc<Fake> {
    let fake = Fake::new();
    fake.put("ingressclasses", class());
    fake.put("services", service());
    fake.put("endpointslices", slice());
    for name in INGRESSES {
        fake.put("ingresses", ingress(name));
    }
    fake
}

/// A controller process on the fake API server, its router on the fake Octavia at `octavia`.
struct Running {
    stop: tokio::sync::oneshot::Sender<()>,
    run: tokio::task::JoinHandle<Result<(), kuryr_l7_router::controller::ControllerError>>,
    _dir: tempfile::TempDir,
}

async fn start(fake: &Arc<Fake>, octavia: u16) -> Running {
    let (api_root, _) = fake.serve().await;
    let (dir, token) = crate::support::fake_settings::token_file();
    let health = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let kubernetes = format!("lease_namespace = {NS}");
    let octavia_opts = format!("l7_router_name = {ROUTER}");
    let settings = fake_cluster_settings("stamps-test.conf", &api_root, &token, health, &kubernetes, &octavia_opts);
    let backend = OctaviaBackend::new(fake_octavia::router_named(octavia, ROUTER, 114_688));
    let (stop, run) = spawn_controller(settings, backend);
    Running { stop, run, _dir: dir }
}

impl Running {
    async fn stop(self) {
        let _ = self.stop.send(());
        tokio::time::timeout(Duration::from_secs(30), self.run).await.unwrap().unwrap().unwrap();
    }
}

fn stamps_config_map(fake: &Fake) -> Option<Value> {
    fake.get(CM, NS, &config_map_name(ROUTER))
}

/// The stamps in a ConfigMap's text: (policies, pools).
fn stamp_counts(text: &str) -> (usize, usize) {
    let count = |kind: &str| text.lines().filter(|l| l.starts_with(kind)).count();
    (count("r "), count("m "))
}

/// The GETs of a parent's children (a policy's rules, a pool's members) in `gets`.
fn child_gets(gets: &[String]) -> Vec<String> {
    gets.iter().filter(|p| p.ends_with("/rules") || p.ends_with("/members")).cloned().collect()
}

/// Waits for the Ingresses' statuses: the controller's first convergence is done.
async fn converged(fake: &Fake) {
    eventually_every("every Ingress's status", 30, Duration::from_millis(50), || {
        INGRESSES
            .iter()
            .all(|n| fake.get(ING, "shop", n).is_some_and(|i| !i["status"]["loadBalancer"]["ingress"].is_null()))
            .then_some(())
    })
    .await;
}

/// Runs a controller until its first Sync after start has written its Synced Events (a new
/// process's recorder writes them again), and returns the GETs the fake Octavia answered.
async fn one_run(fake: &Arc<Fake>, port: u16, octavia: &Mutex<fake_octavia::State>) -> Vec<String> {
    octavia.lock().unwrap().take_gets();
    let writes_before = fake.writes().len();
    let running = start(fake, port).await;
    converged(fake).await;
    eventually_every("a Synced Event of this process", 30, Duration::from_millis(50), || {
        fake.writes()[writes_before..]
            .iter()
            .any(|w| w.path.contains("/events") && w.body["reason"] == "Synced")
            .then_some(())
    })
    .await;
    running.stop().await;
    octavia.lock().unwrap().take_gets()
}

/// The router as a first controller created it (its complete create leaves stamps, saved at
/// once), then, that ConfigMap deleted, the stamps a second controller saved from its full read
/// (its child GETs).
async fn created_and_read(fake: &Arc<Fake>, port: u16, octavia: &Mutex<fake_octavia::State>) -> (Value, Vec<String>) {
    one_run(fake, port, octavia).await;
    let created =
        eventually_every("the create's stamps", 30, Duration::from_millis(50), || stamps_config_map(fake)).await;
    let text = created["data"]["stamps"].as_str().unwrap_or_default();
    assert_eq!(stamp_counts(text), (3, 1), "a stamp per created policy and pool:\n{text}");
    fake.remove(CM, NS, &config_map_name(ROUTER));
    let full_read = one_run(fake, port, octavia).await;
    let cm = eventually_every("the stamps ConfigMap", 30, Duration::from_millis(50), || stamps_config_map(fake)).await;
    (cm, full_read)
}

/// What a controller leaves, the next one starts from: its first Sync reads the lists only (no
/// child GET), where the start without the ConfigMap read every policy and pool.
#[tokio::test]
async fn a_new_controller_starts_from_the_stamps_its_predecessor_saved() {
    let (port, octavia) = fake_octavia::start(114_688).await;
    let fake = cluster();
    let (cm, full_read) = created_and_read(&fake, port, &octavia).await;
    assert_eq!(child_gets(&full_read).len(), 4, "no ConfigMap: 3 policies and 1 pool read: {full_read:?}");
    assert_eq!(cm["metadata"]["labels"]["app.kubernetes.io/name"], "kuryr-l7-router");
    assert_eq!(cm["metadata"]["labels"]["kuryr-l7-router/router"], ROUTER);
    assert_eq!(cm["metadata"]["annotations"]["kuryr-l7-router/router-name"], ROUTER);
    let text = cm["data"]["stamps"].as_str().expect("the stamps' text").to_string();
    assert_eq!(stamp_counts(&text), (3, 1), "one stamp per policy and per pool:\n{text}");
    let writes = octavia.lock().unwrap().writes.len();

    let with_stamps = one_run(&fake, port, &octavia).await;
    assert!(with_stamps.iter().any(|g| g == "/v2/lbaas/pools"), "the lists are read: {with_stamps:?}");
    assert_eq!(child_gets(&with_stamps), Vec::<String>::new(), "every parent trusted from its stamp");
    assert_eq!(octavia.lock().unwrap().writes.len(), writes, "an unchanged router: no write");

    // Every ConfigMap call is one the RBAC grants (API_CALLS, which tests/it/ship_manifests.rs
    // holds equal to etc/manifests/), and in the controller's namespace only.
    let granted = |verb: &str| API_CALLS.contains(&("", "configmaps", verb));
    let calls: Vec<String> = fake.reads().into_iter().chain(fake.writes().iter().map(|w| w.line())).collect();
    let on_config_maps: Vec<&String> = calls.iter().filter(|c| c.contains("/configmaps")).collect();
    assert!(!on_config_maps.is_empty());
    for call in on_config_maps {
        // With scale-out off, the start lists the set's records by label once (to delete
        // stale ones: `runtime::forget_set_records`); every other call names its ConfigMap.
        let listed = call.starts_with("GET ") && call.contains("/configmaps?labelSelector=");
        if listed {
            assert!(call.contains(&format!("/api/v1/namespaces/{NS}/configmaps?")), "{call}");
            assert!(granted("list"), "{call}: not granted by the RBAC");
            continue;
        }
        assert!(call.contains(&format!("/api/v1/namespaces/{NS}/configmaps/")), "{call}");
        let verbs: &[&str] = match call.split(' ').next() {
            Some("GET") => &["get"],
            // A server-side apply creates the ConfigMap the first time.
            Some("PATCH") => &["patch", "create"],
            Some("DELETE") => &["delete"],
            _ => &["(none)"],
        };
        assert!(verbs.iter().all(|v| granted(v)), "{call}: not granted by the RBAC");
    }
}

/// A damaged ConfigMap (a line garbled), or one another router wrote: no stamps, a log line,
/// the router read whole and converged, and the ConfigMap written again from that read.
#[tokio::test]
async fn a_damaged_or_foreign_config_map_is_ignored_with_a_log_line() {
    let logs = crate::support::logs::capture_thread(tracing::Level::INFO);
    let (port, octavia) = fake_octavia::start(114_688).await;
    let fake = cluster();
    let (good, _) = created_and_read(&fake, port, &octavia).await;
    let text = good["data"]["stamps"].as_str().unwrap().to_string();

    let mut damaged = good.clone();
    damaged["data"]["stamps"] = json!(text.replacen("\nr ", "\nr garbage\nr ", 1));
    let mut foreign = good.clone();
    foreign["metadata"]["annotations"]["kuryr-l7-router/router-name"] = json!("another-router");
    for (what, cm, log) in [
        ("damaged", damaged, "stamps ConfigMap damaged: the router is read whole"),
        ("another router's", foreign, "stamps ConfigMap of another router or without stamps"),
    ] {
        fake.put("configmaps", cm);
        let gets = one_run(&fake, port, &octavia).await;
        assert_eq!(child_gets(&gets).len(), 4, "{what}: the router read whole: {gets:?}");
        assert!(logs.text().contains(log), "{what}: logged");
        let again = stamps_config_map(&fake).unwrap();
        assert_eq!(again["data"]["stamps"], json!(text), "{what}: written again from the full read");
        assert_eq!(again["metadata"]["annotations"]["kuryr-l7-router/router-name"], ROUTER);
    }
}

/// The router deleted (the Sync that deletes it: a router left empty in a set, a Gateway gone)
/// takes its ConfigMap with it; a ConfigMap already gone is no error.
#[tokio::test]
async fn a_deleted_router_deletes_its_config_map() {
    let (port, octavia) = fake_octavia::start(114_688).await;
    let fake = Fake::new();
    let (api_root, _) = fake.serve().await;
    let client = kube::Client::try_from(kube::Config::new(api_root.parse().unwrap())).unwrap();
    let stores = StampStores { api: kube::Api::namespaced(client, NS), every: Duration::from_secs(600) };
    let mut backend = OctaviaBackend::new(fake_octavia::router_named(port, ROUTER, 114_688));
    backend.set_stamp_stores(stores);
    let mut d = desired_with(&["shop_web"]);
    d.pools.insert("shop_web".into(), pool("shop_web", vec![member("10.0.0.5", 1)]));
    backend.sync(&d).await.expect("created");
    // The create's read back is the first read: the next Sync stamps what it reads.
    backend.sync(&d).await.expect("converged");
    assert!(stamps_config_map(&fake).is_some(), "saved after the Sync");
    assert!(backend.delete_router().await.expect("deleted"), "the load balancer was ours");
    assert!(octavia.lock().unwrap().lb.is_none());
    assert!(stamps_config_map(&fake).is_none(), "the ConfigMap goes with its router");
    let deletes = fake.writes().iter().filter(|w| w.method == "DELETE").count();
    assert_eq!(deletes, 1);
    backend.delete_router().await.expect("nothing left to delete: no error");
}

/// The settings of the Gateways' routers on the fake Octavia at `port` (its Keystone too).
fn gateway_settings(port: u16) -> kuryr_l7_router::config::Settings {
    let text = format!(
        "[kubernetes]
lease_namespace = {NS}

[neutron_defaults]
project = 5b4c1b6e0c2d4b1a9f3e2d1c0b9a8f7e
lb_subnet = 3C0F6C8E-1B2D-4C3E-8F9A-0B1C2D3E4F5A

[neutron]
auth_url = http://127.0.0.1:{port}/v3
username = kuryr
password = s3cr3t-PaSS
project_name = service
"
    );
    kuryr_l7_router::config::load_texts(&[("gateway-stamps.conf".into(), text)], Vec::new()).unwrap().settings
}

/// One route (a host rule) to one pool, as a Gateway's HTTPRoute becomes.
fn gateway_desired() -> kuryr_l7_router::model::DesiredRouter {
    use kuryr_l7_router::model::{CompareType, KubeRef, Policy, Rule, RuleType};
    let mut d = desired_with(&[]);
    d.pools.insert("shop_web".into(), pool("shop_web", vec![member("10.0.0.5", 1), member("10.0.0.6", 1)]));
    d.policies.push(Policy {
        name: "httproute:shop/web:0".into(),
        position: 1,
        pool: "shop_web".into(),
        rules: vec![Rule {
            rule_type: RuleType::HostName,
            compare_type: CompareType::EqualTo,
            value: "web.example.com".into(),
            invert: false,
            key: None,
        }],
        owner: KubeRef::new("HTTPRoute", "shop", "web"),
        description: "web.example.com".into(),
        redirect: None,
    });
    d
}

/// A Gateway's router, built as the controller builds it (`octavia_gateway_routers`), keeps its
/// stamps in its ConfigMap: the writer of a new leader reads the unchanged router with its lists
/// only, and the Gateway's deletion deletes the ConfigMap with the load balancer.
#[tokio::test]
async fn a_gateway_router_keeps_its_stamps_and_its_deletion_deletes_them() {
    use kuryr_l7_router::controller::gateway::driver::octavia_gateway_routers;
    use kuryr_l7_router::controller::metrics::Metrics;
    use kuryr_l7_router::driver::{WriteGate, WritePermits};
    let (port, octavia) = fake_octavia::start(114_688).await;
    let fake = Fake::new();
    let (api_root, _) = fake.serve().await;
    let client = kube::Client::try_from(kube::Config::new(api_root.parse().unwrap())).unwrap();
    let stores = StampStores { api: kube::Api::namespaced(client, NS), every: Duration::from_secs(600) };
    let (_, metrics) = Metrics::registry();
    let routers = octavia_gateway_routers(&gateway_settings(port), WritePermits::unlimited());
    let backends = routers(&metrics, WriteGate::default(), stores);
    let name = "kuryr-gw-shop-web";
    let config_map = || fake.get(CM, NS, &config_map_name(name));

    let (writer, _) = (backends.spawn)(name, 80, None).expect("built");
    writer.handle().sync(gateway_desired()).await.expect("created");
    assert!(config_map().is_some(), "a complete create leaves the stamps of what it created");
    writer.shutdown().await;
    fake.remove(CM, NS, &config_map_name(name));

    // A new leader: no ConfigMap, the router read whole, its stamps kept.
    octavia.lock().unwrap().take_gets();
    let (writer, _) = (backends.spawn)(name, 80, None).expect("built");
    writer.handle().sync(gateway_desired()).await.expect("converged");
    writer.shutdown().await;
    let full_read = octavia.lock().unwrap().take_gets();
    assert_eq!(child_gets(&full_read).len(), 2, "one policy, one pool: {full_read:?}");
    let cm = config_map().expect("the stamps of the Gateway's router");
    assert_eq!(cm["metadata"]["annotations"]["kuryr-l7-router/router-name"], name);

    // The next leader starts from them.
    let (writer, delete) = (backends.spawn)(name, 80, None).expect("built");
    writer.handle().sync(gateway_desired()).await.expect("converged");
    writer.shutdown().await;
    let with_stamps = octavia.lock().unwrap().take_gets();
    assert!(with_stamps.iter().any(|g| g == "/v2/lbaas/pools"), "the lists are read: {with_stamps:?}");
    assert_eq!(child_gets(&with_stamps), Vec::<String>::new(), "every parent trusted from its stamp");

    delete().await.expect("the Gateway's load balancer deleted");
    assert!(octavia.lock().unwrap().lb.is_none());
    assert!(config_map().is_none(), "the ConfigMap goes with the Gateway's router");
}
