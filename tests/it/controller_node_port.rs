//! `[octavia_defaults] member_mode = NodePort` through the whole `run` pipeline (fake
//! Kubernetes API server → watches → Service handler → writer → simulated Octavia): members are
//! the nodes on the node port; an EndpointSlice change costs no Octavia write, a node joining
//! one batched member write per pool; cordoned and excluded nodes are no members; a ClusterIP
//! Service answers 503 with a Warning Event naming it; `externalTrafficPolicy: Local` gets the
//! health monitor on `healthCheckNodePort`.

use crate::controller_runtime::{Running, class, eventually, http_get, job_count, start_on_sim};
use crate::support::fake_api::Fake;
use kuryr_l7_router::config::MemberMode;
use kuryr_l7_router::driver::sim::Simulator;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const WINDOW: Duration = Duration::from_millis(300);

fn node(name: &str, ip: &str, spec: Value, labels: Value) -> Value {
    let mut l = json!({"topology.kubernetes.io/zone": "az-1"});
    l.as_object_mut().unwrap().extend(labels.as_object().cloned().unwrap_or_default());
    json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": l}, "spec": spec,
           "status": {"allocatable": {"cpu": "4"}, "conditions": [{"type": "Ready", "status": "True"}],
                      "addresses": [{"type": "InternalIP", "address": ip}]}})
}

fn ready_node(name: &str, ip: &str) -> Value {
    node(name, ip, json!({}), json!({}))
}

fn ingress() -> Value {
    json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
           "metadata": {"name": "a", "namespace": "shop", "creationTimestamp": "2026-01-01T00:00:00Z"},
           "spec": {"ingressClassName": "kuryr-l7-router", "rules": [{"host": "a.example.com", "http": {"paths": [
               {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]}})
}

/// Service `shop/web` with `spec` over port 80 (`nodePort` 30080).
fn service(spec: Value) -> Value {
    let mut s = json!({"ports": [{"name": "http", "port": 80, "targetPort": 8080, "nodePort": 30080}]});
    s.as_object_mut().unwrap().extend(spec.as_object().cloned().unwrap_or_default());
    json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "shop", "uid": "uid-web"}, "spec": s})
}

fn slice(ips: &[&str]) -> Value {
    let eps: Vec<Value> =
        ips.iter().map(|ip| json!({"addresses": [ip], "conditions": {"ready": true}, "nodeName": "n1"})).collect();
    json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
           "metadata": {"name": "web-abc", "namespace": "shop", "labels": {"kubernetes.io/service-name": "web"}},
           "addressType": "IPv4", "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}], "endpoints": eps})
}

/// The cluster: our class, nodes n1..n3, Service `web` with `spec`, its slice, the Ingress.
fn cluster(spec: Value) -> Arc<Fake> {
    let fake = Fake::new();
    fake.put("ingressclasses", class());
    for (n, ip) in [("n1", "10.1.0.1"), ("n2", "10.1.0.2"), ("n3", "10.1.0.3")] {
        fake.put("nodes", ready_node(n, ip));
    }
    fake.put("services", service(spec));
    fake.put("endpointslices", slice(&["10.244.0.5"]));
    fake.put("ingresses", ingress());
    fake
}

async fn start(fake: &Arc<Fake>) -> Running {
    let _ = rustls::crypto::ring::default_provider().install_default();
    start_on_sim(fake, |s| {
        s.octavia_defaults.member_mode = MemberMode::NodePort;
        s.kubernetes.member_change_window = WINDOW;
    })
    .await
}

/// (address, port, monitor_port) of the one Service pool's members on the simulated router.
fn members(sim: &Mutex<Simulator>) -> BTreeMap<String, (u16, Option<u16>)> {
    let sim = sim.lock().unwrap();
    let pool = sim.router.pools.iter().find(|p| p.name.starts_with("shop_web"));
    pool.iter()
        .flat_map(|p| p.members.iter())
        .map(|m| (m.address.to_string(), (m.protocol_port, m.monitor_port)))
        .collect()
}

fn addresses(sim: &Mutex<Simulator>) -> Vec<String> {
    members(sim).into_keys().collect()
}

async fn settle() {
    tokio::time::sleep(WINDOW * 2 + Duration::from_millis(700)).await;
}

async fn stop(r: Running) {
    r.stop.send(()).unwrap();
    let _ = tokio::time::timeout(Duration::from_secs(10), r.run).await;
}

/// Pod churn is no Octavia write; a node joining is one batched member write for the pool, no
/// Sync; a cordoned, an excluded, a draining or a deleted node leaves the pool.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endpoint_changes_cost_no_write_and_node_changes_one_per_pool() {
    let fake = cluster(json!({"type": "NodePort"}));
    let r = start(&fake).await;
    let want = |ips: &[&str]| ips.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    eventually("the nodes on the router", 15, async || {
        (addresses(&r.state) == want(&["10.1.0.1", "10.1.0.2", "10.1.0.3"])).then_some(())
    })
    .await;
    assert!(members(&r.state).values().all(|(port, monitor)| *port == 30080 && monitor.is_none()));
    settle().await;
    let puts = r.puts.load(Ordering::SeqCst);
    let metrics = http_get(r.health, "/metrics").await.unwrap().1;
    let (syncs, jobs) = (job_count(&metrics, "sync"), job_count(&metrics, "members"));

    // A rollout of the Service's pods: ten slice updates, no Octavia write.
    for i in 0..10 {
        fake.put("endpointslices", slice(&[&format!("10.244.1.{i}"), &format!("10.244.2.{i}")]));
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
    settle().await;
    assert_eq!(r.puts.load(Ordering::SeqCst), puts, "EndpointSlice changes made a member write");
    let metrics = http_get(r.health, "/metrics").await.unwrap().1;
    assert_eq!(job_count(&metrics, "sync"), syncs, "EndpointSlice changes made a Sync");

    // A node joins: one batched write for the pool, no Sync.
    fake.put("nodes", ready_node("n4", "10.1.0.4"));
    eventually("n4 a member", 10, async || addresses(&r.state).contains(&"10.1.0.4".to_string()).then_some(())).await;
    settle().await;
    assert_eq!(r.puts.load(Ordering::SeqCst), puts + 1, "one batched member write for the node joining");
    let metrics = http_get(r.health, "/metrics").await.unwrap().1;
    assert_eq!(job_count(&metrics, "sync"), syncs, "a node joining is no Sync");
    assert!(job_count(&metrics, "members") > jobs);

    // Cordoned, excluded, draining: out, in one window (one write).
    let before = r.puts.load(Ordering::SeqCst);
    fake.put("nodes", node("n2", "10.1.0.2", json!({"unschedulable": true}), json!({})));
    fake.put(
        "nodes",
        node("n3", "10.1.0.3", json!({}), json!({"node.kubernetes.io/exclude-from-external-load-balancers": "true"})),
    );
    let taint = json!({"taints": [{"key": "ToBeDeletedByClusterAutoscaler", "effect": "NoSchedule"}]});
    fake.put("nodes", node("n4", "10.1.0.4", taint, json!({})));
    eventually("n2, n3 and n4 out", 10, async || (addresses(&r.state) == want(&["10.1.0.1"])).then_some(())).await;
    settle().await;
    assert_eq!(r.puts.load(Ordering::SeqCst), before + 1, "the three node changes of one window: one write");

    // A node deleted leaves; the one left keeps the pool.
    fake.put("nodes", ready_node("n5", "10.1.0.5"));
    eventually("n5 a member", 10, async || (addresses(&r.state) == want(&["10.1.0.1", "10.1.0.5"])).then_some(()))
        .await;
    fake.remove("v1/nodes", "", "n5");
    eventually("n5 gone", 10, async || (addresses(&r.state) == want(&["10.1.0.1"])).then_some(())).await;
    stop(r).await;
}

/// A ClusterIP Service in NodePort mode: its route stays, on an empty pool (haproxy's 503), and
/// a Warning Event on the Service names it and the fix.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_ip_service_answers_503_with_a_warning_naming_it() {
    let fake = cluster(json!({"type": "ClusterIP"}));
    let r = start(&fake).await;
    let ev = eventually("a Warning NoNodePort", 15, async || {
        fake.writes().into_iter().find(|w| w.path.ends_with("/events") && w.body["reason"] == "NoNodePort")
    })
    .await;
    assert_eq!((ev.body["type"].as_str(), ev.body["regarding"]["name"].as_str()), (Some("Warning"), Some("web")));
    let note = ev.body["note"].as_str().unwrap_or_default();
    assert!(
        note.contains("Service shop/web") && note.contains("set spec.type: NodePort") && note.contains("HTTP 503"),
        "{note}"
    );
    let routed_to_empty_pool = {
        let sim = r.state.lock().unwrap();
        let pool = sim.router.pools.iter().find(|p| p.name.starts_with("shop_web")).expect("the pool");
        let routed = sim.router.policies.iter().any(|p| p.redirect_pool_id.as_ref() == Some(&pool.id));
        routed && pool.members.is_empty()
    };
    assert!(routed_to_empty_pool, "the route is kept on a pool without members");
    // Switching the Service to NodePort fills the pool.
    let mut svc = fake.get("v1/services", "shop", "web").unwrap();
    svc["spec"]["type"] = json!("NodePort");
    fake.put("services", svc);
    eventually("the nodes on the router", 10, async || (addresses(&r.state).len() == 3).then_some(())).await;
    stop(r).await;
}

/// `externalTrafficPolicy: Local`: every node stays a member, probed on `healthCheckNodePort`
/// by HTTP GET /healthz expecting 200.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_gets_the_health_monitor_on_the_health_check_node_port() {
    let fake = cluster(json!({"type": "LoadBalancer", "externalTrafficPolicy": "Local", "healthCheckNodePort": 32000}));
    let r = start(&fake).await;
    eventually("the nodes on the router", 15, async || (addresses(&r.state).len() == 3).then_some(())).await;
    assert!(members(&r.state).values().all(|m| *m == (30080, Some(32000))), "{:?}", members(&r.state));
    let monitor = {
        let sim = r.state.lock().unwrap();
        let pool = sim.router.pools.iter().find(|p| p.name.starts_with("shop_web")).expect("the pool");
        pool.healthmonitor.as_ref().map(|h| h.spec.clone())
    };
    let hm = monitor.expect("a health monitor");
    assert_eq!(
        (hm.monitor_type.as_str(), hm.url_path.as_deref(), hm.expected_codes.as_deref()),
        ("HTTP", Some("/healthz"), Some("200"))
    );
    stop(r).await;
}
