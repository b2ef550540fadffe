//! Functional test of the `run` handler pipeline: the real Octavia (through the serial writer and
//! the driver) with the Kubernetes side mocked (caches filled by hand, API writes recorded).
//! `KURYR_FUNCTIONAL=1 cargo test --test functional_controller -- --nocapture`.
//!
//! One router for the whole story (an amphora takes minutes to build), in order: Ingress before
//! its Service, endpoints scaled (one batch member write), a second Ingress on the same Service,
//! the second Ingress's class changed away, the first Ingress deleted, a Service that exists
//! before its Ingress, resync repairing drift, and a Node changing zone (member weights only).
//! Octavia is read back with `Router::read_actual` after every step.

#[path = "common/mod.rs"]
mod common;
use common::*;

use ::http::{Request, Response, StatusCode};
use k8s_openapi::api::core::v1::{Node, Service};
use k8s_openapi::api::networking::v1::{Ingress, IngressClass};
use kube::client::Body;
use kube::runtime::watcher;
use kuryr_l7_router::controller::context::{Context, StoreWriters};
use kuryr_l7_router::controller::metrics::Metrics;
use kuryr_l7_router::controller::octavia_backend::OctaviaBackend;
use kuryr_l7_router::controller::outputs::events::{DEFAULT_DEDUP_WINDOW, EventPublisher};
use kuryr_l7_router::controller::outputs::notice::ServiceNotice;
use kuryr_l7_router::controller::outputs::notice::notice_annotation;
use kuryr_l7_router::controller::services::handler as service;
use kuryr_l7_router::controller::writer::{Writer, WriterMetrics};
use kuryr_l7_router::controller::{FINALIZER, ingress};
use kuryr_l7_router::driver::object_id::ObjectId;
use kuryr_l7_router::driver::router::Router;
use kuryr_l7_router::translate::TranslateOptions;
use kuryr_l7_router::translate::slices::CompactSlice;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;

/// (policies: name → pool, pools: name → sorted "ip:port")
type Observed = (BTreeMap<String, String>, BTreeMap<String, Vec<String>>);

async fn observe(r: &Router) -> Observed {
    let actual = read_router(r).await;
    let pool_name = |id: &Option<ObjectId>| {
        id.as_ref().and_then(|id| actual.pools.iter().find(|p| &p.id == id)).map(|p| p.name.clone()).unwrap_or_default()
    };
    (
        actual.policies.iter().map(|p| (p.name.clone(), pool_name(&p.redirect_pool_id))).collect(),
        actual
            .pools
            .iter()
            .map(|p| {
                let mut m: Vec<String> =
                    p.members.iter().map(|m| format!("{}:{}", m.address, m.protocol_port)).collect();
                m.sort();
                (p.name.clone(), m)
            })
            .collect(),
    )
}

/// Every Kubernetes request, answered with a plausible object.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<(String, String, Value)>>>);

impl Recorder {
    fn take(&self) -> Vec<(String, String, Value)> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

fn mock_client(rec: Recorder) -> kube::Client {
    let (svc, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    tokio::spawn(async move {
        while let Some((req, send)) = handle.next_request().await {
            let method = req.method().to_string();
            let path = req.uri().path().to_string();
            let bytes = req.into_body().collect_bytes().await.unwrap();
            let body: Value = if bytes.is_empty() { Value::Null } else { serde_json::from_slice(&bytes).unwrap() };
            let response = if path.contains("/services/") {
                json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "x", "namespace": "shop"}})
            } else if path.contains("/ingresses/") {
                json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "x", "namespace": "shop"}})
            } else {
                body.clone()
            };
            rec.0.lock().unwrap().push((method, path, body));
            send.send_response(
                Response::builder()
                    .status(StatusCode::OK)
                    .body(Body::from(serde_json::to_vec(&response).unwrap()))
                    .unwrap(),
            );
        }
    });
    kube::Client::new(svc, "default")
}

fn class() -> IngressClass {
    serde_json::from_value(json!({
        "metadata": {"name": "kuryr-l7-router"},
        "spec": {"controller": "openstack.org/kuryr-l7-router"}
    }))
    .unwrap()
}

fn ingress(name: &str, host: &str, svc: &str, class: &str, deleting: bool) -> Ingress {
    let mut v = json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
        "metadata": {"name": name, "namespace": "shop", "uid": format!("uid-{name}"), "finalizers": [FINALIZER],
                     "creationTimestamp": format!("2026-01-01T00:00:0{}Z", name.len() % 10)},
        "spec": {"ingressClassName": class, "rules": [{"host": host, "http": {"paths": [
            {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": svc, "port": {"number": 80}}}}]}}]}
    });
    if deleting {
        v["metadata"]["deletionTimestamp"] = json!("2026-01-02T00:00:00Z");
    }
    serde_json::from_value(v).unwrap()
}

fn service(name: &str, notice: Option<&ServiceNotice>) -> Service {
    let mut v = json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "namespace": "shop", "uid": format!("uid-svc-{name}")},
        "spec": {"ports": [{"name": "http", "port": 80, "targetPort": 8080}]}
    });
    if let Some(n) = notice {
        v["metadata"]["annotations"] = json!({notice_annotation(&n.router): n.to_annotation()});
    }
    serde_json::from_value(v).unwrap()
}

fn slice(svc: &str, ips: &[&str]) -> CompactSlice {
    slice_of(svc, ips.iter().map(|ip| json!({"addresses": [ip], "conditions": {"ready": true}})).collect())
}

/// The one IPv4 EndpointSlice of `svc` (port `http` 8080) with these endpoints.
fn slice_of(svc: &str, eps: Vec<Value>) -> CompactSlice {
    serde_json::from_value(json!({
        "metadata": {"name": format!("{svc}-abc"), "namespace": "shop", "labels": {"kubernetes.io/service-name": svc}},
        "addressType": "IPv4",
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
        "endpoints": eps
    }))
    .unwrap()
}

/// A zone-aware Service (`service.kubernetes.io/topology-mode: Auto`).
fn zoned_service(name: &str, notice: Option<&ServiceNotice>) -> Service {
    let mut s = service(name, notice);
    s.metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert("service.kubernetes.io/topology-mode".into(), "Auto".into());
    s
}

/// A slice whose endpoints carry `nodeName` but no `zone` (the zone comes from the Node).
fn slice_on_nodes(svc: &str, eps: &[(&str, &str)]) -> CompactSlice {
    let eps: Vec<Value> = eps
        .iter()
        .map(|(ip, node)| json!({"addresses": [ip], "conditions": {"ready": true}, "nodeName": node}))
        .collect();
    slice_of(svc, eps)
}

fn node(name: &str, zone: &str) -> Node {
    // Ready with allocatable CPU: Topology Aware Routing weighs zones by the CPU of Ready nodes.
    serde_json::from_value(json!({"metadata": {"name": name, "labels": {"topology.kubernetes.io/zone": zone}},
        "status": {"allocatable": {"cpu": "4"}, "conditions": [{"type": "Ready", "status": "True"}]}}))
    .unwrap()
}

/// Members of `pool` on Octavia as "ip:port" → weight.
async fn weights(r: &Router, pool: &str) -> BTreeMap<String, u16> {
    let actual = read_router(r).await;
    let p = actual.pools.iter().find(|p| p.name == pool).expect("pool exists");
    p.members.iter().map(|m| (format!("{}:{}", m.address, m.protocol_port), m.weight)).collect()
}

/// The notice each Service PATCH in `reqs` writes under `router`'s own key (None: removed).
fn notice_patches(reqs: &[(String, String, Value)], router: &str) -> BTreeMap<String, Option<ServiceNotice>> {
    let key = notice_annotation(router);
    reqs.iter()
        .filter(|(m, p, _)| m == "PATCH" && p.contains("/services/"))
        .map(|(_, p, b)| {
            let name = p.rsplit('/').next().unwrap().to_string();
            let n = b["metadata"]["annotations"][key.as_str()].as_str().map(|s| ServiceNotice::parse(s).unwrap());
            (name, n)
        })
        .collect()
}

fn paths(reqs: &[(String, String, Value)]) -> Vec<String> {
    reqs.iter().map(|(m, p, _)| format!("{m} {p}")).collect()
}

fn events(reqs: &[(String, String, Value)]) -> Vec<String> {
    reqs.iter()
        .filter(|(m, p, _)| m == "POST" && p.ends_with("/events"))
        .map(|(_, _, b)| {
            format!("{} {}", b["type"].as_str().unwrap_or_default(), b["reason"].as_str().unwrap_or_default())
        })
        .collect()
}

async fn router(tag: &str) -> Router {
    let mut r = local_router("fct-ctl", tag).await;
    r.spec_mut().fully_populated_create = false;
    r
}

#[tokio::test]
async fn handler_pipeline_on_real_octavia() {
    if !enabled() {
        return;
    }
    let r = router("pipe").await;
    let result = tokio::spawn(story(r.clone())).await;
    cleanup(&r).await;
    if let Err(e) = result {
        std::panic::resume_unwind(e.into_panic());
    }
}

async fn story(r: Router) {
    let rec = Recorder::default();
    let client = mock_client(rec.clone());
    let (stores, mut w) = StoreWriters::new();
    w.classes.apply_watcher_event(&watcher::Event::Apply(class()));
    let writer = Writer::spawn(OctaviaBackend::new(r.clone()), WriterMetrics::default());
    let (_ready, ready_rx) = watch::channel(true);
    let router_name = r.spec().name.clone();
    let ctx = Arc::new(
        Context::new(
            client.clone(),
            stores,
            writer.handle(),
            Arc::new(EventPublisher::new(client, None, DEFAULT_DEDUP_WINDOW)),
            Metrics::default(),
            TranslateOptions {
                ingress_class: "kuryr-l7-router".into(),
                // `[octavia_defaults] availability_zone`; only zone-aware Services (step 8) use it.
                router_zone: Some("az-1".into()),
                ..TranslateOptions::default()
            },
            router_name.clone(),
            ready_rx,
            None,
        )
        .with_member_change_window(WINDOW),
    );
    let notice = |pools: &[&str], ings: &[&str]| ServiceNotice {
        router: router_name.clone(),
        pools: pools.iter().map(|s| s.to_string()).collect(),
        ingresses: ings.iter().map(|s| s.to_string()).collect(),
    };

    // 1. Ingress before its Service: the router is created, the route answers 503 from the
    //    reserved pool (no responder configured: an empty pool) until the Service exists.
    println!("1. Ingress a before Service web");
    let a = ingress("a", "a.example.com", "web", "kuryr-l7-router", false);
    w.ingresses.apply_watcher_event(&watcher::Event::Apply(a.clone()));
    ingress::reconcile(Arc::new(a.clone()), ctx.clone()).await.unwrap();
    let reqs = rec.take();
    assert!(events(&reqs).contains(&"Warning ServiceNotFound".to_string()), "{:?}", paths(&reqs));
    assert!(events(&reqs).contains(&"Normal Synced".to_string()));
    assert!(paths(&reqs).contains(&"PATCH /apis/networking.k8s.io/v1/namespaces/shop/ingresses/a/status".into()));
    let (policies, pools) = observe(&r).await;
    let unavailable = kuryr_l7_router::model::UNAVAILABLE_POOL;
    assert!(policies.len() == 1 && policies.values().all(|p| p == unavailable), "{policies:?}");
    assert!(pools.len() == 1 && pools.get(unavailable).is_some_and(|m| m.is_empty()), "{pools:?}");

    // The Service and its endpoints appear: the Service handler syncs and writes the notice.
    println!("   Service web appears");
    let svc = service("web", None);
    w.services.apply_watcher_event(&watcher::Event::Apply(svc.clone()));
    w.slices.apply_watcher_event(&watcher::Event::Apply(slice("web", &["10.0.0.5"])));
    service::reconcile(Arc::new(svc), ctx.clone()).await.unwrap();
    let reqs = rec.take();
    let (policies, pools) = observe(&r).await;
    assert_eq!(policies.len(), 1, "{policies:?}");
    let pool_name = pools.keys().next().expect("a pool").clone();
    assert_eq!(pools[&pool_name], ["10.0.0.5:8080"]);
    let web_notice = notice(&[&pool_name], &["shop/a"]);
    assert_eq!(notice_patches(&reqs, &router_name), BTreeMap::from([("web".to_string(), Some(web_notice.clone()))]));
    w.services.apply_watcher_event(&watcher::Event::Apply(service("web", Some(&web_notice))));

    // 2. Endpoints scaled: one batch member write, no Kubernetes write.
    println!("2. endpoints scaled to 3");
    w.slices.apply_watcher_event(&watcher::Event::Apply(slice("web", &["10.0.0.5", "10.0.0.6", "10.0.0.7"])));
    let writes_before = r.octavia().session().stats().writes;
    service::reconcile(Arc::new(service("web", Some(&web_notice))), ctx.clone()).await.unwrap();
    let writes = r.octavia().session().stats().writes - writes_before;
    assert_eq!(writes, 1, "one batch member update");
    assert!(rec.take().is_empty());
    let (_, pools) = observe(&r).await;
    assert_eq!(pools[&pool_name], ["10.0.0.5:8080", "10.0.0.6:8080", "10.0.0.7:8080"]);

    // 3. A second Ingress on the same Service: a second policy, same pool, notice names both.
    println!("3. Ingress b on the same Service");
    let b = ingress("bb", "b.example.com", "web", "kuryr-l7-router", false);
    w.ingresses.apply_watcher_event(&watcher::Event::Apply(b.clone()));
    ingress::reconcile(Arc::new(b.clone()), ctx.clone()).await.unwrap();
    let reqs = rec.take();
    let (policies, pools) = observe(&r).await;
    assert_eq!(policies.len(), 2);
    assert!(policies.values().all(|p| *p == pool_name));
    assert_eq!(pools.len(), 1);
    let both = notice(&[&pool_name], &["shop/a", "shop/bb"]);
    assert_eq!(notice_patches(&reqs, &router_name), BTreeMap::from([("web".to_string(), Some(both.clone()))]));
    w.services.apply_watcher_event(&watcher::Event::Apply(service("web", Some(&both))));

    // 4. The second Ingress's class changes away: its policy goes, status cleared, finalizer removed.
    println!("4. Ingress b's class changed away");
    let mut b_other = ingress("bb", "b.example.com", "web", "other-class", false);
    // It still advertises the router's address from step 3.
    b_other.status = serde_json::from_value(json!({"loadBalancer": {"ingress": [{"ip": "172.24.4.99"}]}})).unwrap();
    w.ingresses.apply_watcher_event(&watcher::Event::Apply(b_other.clone()));
    ingress::reconcile(Arc::new(b_other), ctx.clone()).await.unwrap();
    let reqs = rec.take();
    let (policies, pools) = observe(&r).await;
    assert_eq!(policies.len(), 1);
    assert_eq!(pools.len(), 1);
    assert_eq!(notice_patches(&reqs, &router_name), BTreeMap::from([("web".to_string(), Some(web_notice.clone()))]));
    let p = paths(&reqs);
    assert!(p.contains(&"PATCH /apis/networking.k8s.io/v1/namespaces/shop/ingresses/bb/status".into()), "{p:?}");
    assert!(p.contains(&"PATCH /apis/networking.k8s.io/v1/namespaces/shop/ingresses/bb".into()), "{p:?}");
    w.services.apply_watcher_event(&watcher::Event::Apply(service("web", Some(&web_notice))));

    // 5. The first Ingress is deleted: policy and pool go, notice removed, finalizer removed.
    println!("5. Ingress a deleted");
    let a_del = ingress("a", "a.example.com", "web", "kuryr-l7-router", true);
    w.ingresses.apply_watcher_event(&watcher::Event::Apply(a_del.clone()));
    ingress::reconcile(Arc::new(a_del), ctx.clone()).await.unwrap();
    let reqs = rec.take();
    let (policies, pools) = observe(&r).await;
    assert!(policies.is_empty() && pools.is_empty(), "{policies:?} {pools:?}");
    assert_eq!(notice_patches(&reqs, &router_name), BTreeMap::from([("web".to_string(), None)]));
    assert!(paths(&reqs).contains(&"PATCH /apis/networking.k8s.io/v1/namespaces/shop/ingresses/a".into()));
    w.ingresses.apply_watcher_event(&watcher::Event::Delete(a));
    w.services.apply_watcher_event(&watcher::Event::Apply(service("web", None)));

    // 6. Service before its Ingress: the Ingress's Sync creates pool and members at once.
    println!("6. Service api before Ingress c");
    let api = service("api", None);
    w.services.apply_watcher_event(&watcher::Event::Apply(api.clone()));
    w.slices.apply_watcher_event(&watcher::Event::Apply(slice("api", &["10.0.1.5"])));
    service::reconcile(Arc::new(api), ctx.clone()).await.unwrap();
    assert!(rec.take().is_empty(), "a Service no Ingress names is left alone");
    let c = ingress("c", "c.example.com", "api", "kuryr-l7-router", false);
    w.ingresses.apply_watcher_event(&watcher::Event::Apply(c.clone()));
    ingress::reconcile(Arc::new(c), ctx.clone()).await.unwrap();
    let reqs = rec.take();
    let (policies, pools) = observe(&r).await;
    assert_eq!(policies.len(), 1);
    let api_pool = pools.keys().next().unwrap().clone();
    assert_eq!(pools[&api_pool], ["10.0.1.5:8080"]);
    assert_eq!(
        notice_patches(&reqs, &router_name),
        BTreeMap::from([("api".to_string(), Some(notice(&[&api_pool], &["shop/c"])))])
    );

    // 7. Resync repairs drift: a policy deleted by hand comes back.
    println!("7. resync restores a hand-deleted policy");
    let lb = r.find().await.unwrap().unwrap();
    let actual = read_router(&r).await;
    r.octavia().delete_l7policy(&actual.policies[0].id.to_string()).await.unwrap();
    r.octavia().wait_active(&lb.id, Duration::from_secs(120)).await.unwrap();
    assert!(observe(&r).await.0.is_empty());
    let (_, report) = ctx.sync(true).await.unwrap();
    assert!(!report.writes.is_empty());
    assert_eq!(observe(&r).await.0, policies);
    let api_notice = notice(&[&api_pool], &["shop/c"]);
    w.services.apply_watcher_event(&watcher::Event::Apply(service("api", Some(&api_notice))));
    rec.take();

    // 8. Node zone changed: a zone-aware Service whose endpoints carry nodeName but no zone; the
    // zone comes from the Nodes' labels. Router zone az-1.
    println!("8. node zone changed");
    for n in [node("n1", "az-1"), node("n2", "az-2"), node("n3", "az-2")] {
        w.nodes.apply_watcher_event(&watcher::Event::Apply(n));
    }
    let zoned = zoned_service("zoned", None);
    w.services.apply_watcher_event(&watcher::Event::Apply(zoned.clone()));
    w.slices.apply_watcher_event(&watcher::Event::Apply(slice_on_nodes(
        "zoned",
        &[("10.0.2.5", "n1"), ("10.0.2.6", "n2"), ("10.0.2.7", "n3")],
    )));
    let z = ingress("z", "z.example.com", "zoned", "kuryr-l7-router", false);
    w.ingresses.apply_watcher_event(&watcher::Event::Apply(z.clone()));
    ingress::reconcile(Arc::new(z), ctx.clone()).await.unwrap();
    let reqs = rec.take();
    let (_, pools) = observe(&r).await;
    let zoned_pool = pools.keys().find(|p| p.contains("zoned")).expect("the zoned pool").clone();
    let zoned_notice = notice(&[&zoned_pool], &["shop/z"]);
    assert_eq!(
        notice_patches(&reqs, &router_name),
        BTreeMap::from([("zoned".to_string(), Some(zoned_notice.clone()))])
    );
    w.services.apply_watcher_event(&watcher::Event::Apply(zoned_service("zoned", Some(&zoned_notice))));
    // 1 local of 3 in 3 equal zones, threshold 20%: the local takes 1.2 × 1/3 = 40%, the
    // others 30% each → 4:3:3.
    let expect = |w: [u16; 3]| -> BTreeMap<String, u16> {
        ["10.0.2.5:8080", "10.0.2.6:8080", "10.0.2.7:8080"].iter().map(|a| a.to_string()).zip(w).collect()
    };
    assert_eq!(weights(&r, &zoned_pool).await, expect([4, 3, 3]));

    // n2 moves to az-1. The runtime re-reconciles every Service on a Node label change
    // (`reconcile_all_on(node_changes)`): do the same. Only the zoned pool changes: exactly one
    // Octavia write (the batch member update), no Kubernetes write.
    w.nodes.apply_watcher_event(&watcher::Event::Apply(node("n2", "az-1")));
    let writes_before = r.octavia().session().stats().writes;
    let services: Vec<Arc<Service>> = ctx.stores.services.state();
    assert_eq!(services.len(), 3, "web, api, zoned");
    for s in services {
        service::reconcile(s, ctx.clone()).await.unwrap();
    }
    let writes = r.octavia().session().stats().writes - writes_before;
    assert_eq!(writes, 1, "one batch member update");
    let reqs = rec.take();
    assert!(reqs.is_empty(), "no Kubernetes write: {:?}", paths(&reqs));
    // 2 local of 3 (az-1 has 8 of 12 CPUs: balanced): locals take min(1, 1.2 × 2/3) = 80% → 2:2:1.
    assert_eq!(weights(&r, &zoned_pool).await, expect([2, 2, 1]));

    rollout(&r, &ctx, &mut w, &zoned_pool).await;
    health_monitor_annotation(&r, &ctx, &mut w, &rec, &zoned_notice).await;
    writer.shutdown().await;
}

/// The member change window of the story's Context.
const WINDOW: Duration = Duration::from_millis(500);

/// Step 9: a rollout replaces every endpoint of `zoned` (9 slice updates, 20 ms apart) while the
/// Service handler's window is open: ONE batch member PUT on Octavia, and the weights there are
/// the ones the translation computes for the new endpoints.
async fn rollout(r: &Router, ctx: &Arc<Context>, w: &mut StoreWriters, pool: &str) {
    println!("9. rollout replaces every endpoint of zoned");
    let old = [("10.0.2.5", "n1"), ("10.0.2.6", "n2"), ("10.0.2.7", "n3")];
    let new = [("10.0.3.5", "n1"), ("10.0.3.6", "n2"), ("10.0.3.7", "n3")];
    let ep = |ip: &str, node: &str, terminating: bool| {
        json!({"addresses": [ip], "nodeName": node,
               "conditions": {"ready": !terminating, "serving": true, "terminating": terminating}})
    };
    let mut cur: Vec<(&str, &str, bool)> = old.iter().map(|(ip, n)| (*ip, *n, false)).collect();
    let mut states = vec![];
    for ((oip, _), (nip, nn)) in old.iter().zip(&new) {
        cur.push((nip, nn, false));
        states.push(cur.clone());
        cur.iter_mut().filter(|e| e.0 == *oip).for_each(|e| e.2 = true);
        states.push(cur.clone());
        cur.retain(|e| e.0 != *oip);
        states.push(cur.clone());
    }
    let apply = |w: &mut StoreWriters, s: &[(&str, &str, bool)]| {
        let eps = s.iter().map(|(ip, n, t)| ep(ip, n, *t)).collect();
        w.slices.apply_watcher_event(&watcher::Event::Apply(slice_of("zoned", eps)));
    };
    let writes_before = r.octavia().session().stats().writes;
    let started = std::time::Instant::now();
    apply(w, &states[0]);
    // The first change triggers the Service handler; the others land while its window is open.
    let svc = ctx.stores.services.state().into_iter().find(|s| s.metadata.name.as_deref() == Some("zoned")).unwrap();
    let first = tokio::spawn(service::reconcile(svc.clone(), ctx.clone()));
    for s in &states[1..] {
        tokio::time::sleep(Duration::from_millis(20)).await;
        apply(w, s);
    }
    assert!(started.elapsed() < WINDOW, "the updates took longer than the window: {:?}", started.elapsed());
    first.await.unwrap().unwrap();
    // The pending trigger runs once more after the write, as kube-runtime would: nothing to do.
    service::reconcile(svc, ctx.clone()).await.unwrap();
    let writes = r.octavia().session().stats().writes - writes_before;
    println!(
        "   {} slice updates -> {writes} Octavia write(s) in {:.1}s",
        states.len(),
        started.elapsed().as_secs_f64()
    );
    assert_eq!(writes, 1, "one batch member PUT for the whole rollout");
    let want: BTreeMap<String, u16> = ctx.desired().1.pools[pool]
        .members
        .iter()
        .map(|m| (format!("{}:{}", m.address, m.protocol_port), m.weight))
        .collect();
    assert_eq!(want.keys().map(|k| &k[..8]).collect::<Vec<_>>(), ["10.0.3.5", "10.0.3.6", "10.0.3.7"]);
    assert_eq!(weights(r, pool).await, want, "Octavia holds the weights the translation computes");
}

/// The pool's health monitor as Octavia holds it: (type, url_path, expected_codes, delay).
async fn monitor(r: &Router, pool: &str) -> Option<(String, Option<String>, Option<String>, u32)> {
    let actual = read_router(r).await;
    let p = actual.pools.iter().find(|p| p.name == pool)?;
    p.healthmonitor
        .as_ref()
        .map(|h| (h.spec.monitor_type.clone(), h.spec.url_path.clone(), h.spec.expected_codes.clone(), h.spec.delay))
}

/// Step 10: the health-monitor annotation: set → the pool's monitor created with its values; changed
/// → one PUT; a bad value → a Warning Event on the Service and no write (the monitor is kept).
async fn health_monitor_annotation(
    r: &Router,
    ctx: &Arc<Context>,
    w: &mut StoreWriters,
    rec: &Recorder,
    notice: &ServiceNotice,
) {
    use kuryr_l7_router::translate::health::HEALTH_MONITOR_ANNOTATION;
    println!("10. health-monitor annotation on zoned");
    let pool = notice.pools[0].clone();
    let mut step = async |value: &str| {
        let mut svc = zoned_service("zoned", Some(notice));
        svc.metadata.annotations.as_mut().unwrap().insert(HEALTH_MONITOR_ANNOTATION.into(), value.into());
        w.services.apply_watcher_event(&watcher::Event::Apply(svc.clone()));
        let before = r.octavia().session().stats().writes;
        let started = std::time::Instant::now();
        service::reconcile(Arc::new(svc), ctx.clone()).await.unwrap();
        let writes = r.octavia().session().stats().writes - before;
        println!("   {value}: {writes} write(s) in {:.1}s", started.elapsed().as_secs_f64());
        writes
    };
    assert_eq!(monitor(r, &pool).await, None, "no global monitor in this story");
    assert_eq!(step(r#"{"path": "/healthz", "expectedCodes": "200-399", "delay": 7, "timeout": 2}"#).await, 1);
    let created = monitor(r, &pool).await;
    assert_eq!(created, Some(("HTTP".into(), Some("/healthz".into()), Some("200-399".into()), 7)));
    rec.take();
    assert_eq!(step(r#"{"path": "/ready", "expectedCodes": "200,301", "delay": 7, "timeout": 2}"#).await, 1, "one PUT");
    let updated = monitor(r, &pool).await;
    assert_eq!(updated, Some(("HTTP".into(), Some("/ready".into()), Some("200,301".into()), 7)));
    assert!(events(&rec.take()).is_empty());
    assert_eq!(step(r#"{"path": "ready", "delay": 1, "timeout": 2}"#).await, 0, "a bad value writes nothing");
    assert_eq!(monitor(r, &pool).await, updated, "the previous monitor is kept");
    assert!(events(&rec.take()).contains(&"Warning InvalidHealthMonitor".to_string()));
}
