//! The Sync and Members paths of the controller against a FAKE Kubernetes API server
//! (`tests/support/fake_api.rs`) and an in-memory router (`SimBackend`): the writer translates
//! once per Sync job whatever the number of waiters, and a Service's endpoint warnings come from
//! its Members path at once, not from the next Sync.

use crate::support::fake_api;
use fake_api::Fake;

use k8s_openapi::api::networking::v1::Ingress;
use kube::runtime::watcher::Event;
use kuryr_l7_router::controller::context::{Context, StoreWriters};
use kuryr_l7_router::controller::metrics::Metrics;
use kuryr_l7_router::controller::outputs::Scope;
use kuryr_l7_router::controller::outputs::events::{DEFAULT_DEDUP_WINDOW, EventPublisher};
use kuryr_l7_router::controller::outputs::notice::notice_annotation;
use kuryr_l7_router::controller::services::handler as service;
use kuryr_l7_router::controller::writer::{Writer, WriterMetrics};
use kuryr_l7_router::driver::ownership::Ownership;
use kuryr_l7_router::driver::plan::DiffOptions;
use kuryr_l7_router::testing::SimBackend;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

fn obj<K: serde::de::DeserializeOwned>(v: Value) -> K {
    serde_json::from_value(v).unwrap()
}

fn class() -> Value {
    json!({"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
           "metadata": {"name": "kuryr-l7-router"}, "spec": {"controller": "openstack.org/kuryr-l7-router"}})
}

fn ingress(name: &str, service: &str) -> Value {
    json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
           "metadata": {"name": name, "namespace": "shop", "creationTimestamp": "2026-01-01T00:00:00Z"},
           "spec": {"ingressClassName": "kuryr-l7-router", "rules": [{"host": format!("{name}.example.com"), "http": {"paths": [
               {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": service, "port": {"number": 80}}}}]}}]}})
}

fn service(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Service",
           "metadata": {"name": name, "namespace": "shop", "uid": format!("uid-{name}")},
           "spec": {"ports": [{"name": "http", "port": 80, "targetPort": 8080}]}})
}

fn slice(service: &str, ready: bool) -> Value {
    json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
           "metadata": {"name": format!("{service}-abc"), "namespace": "shop",
                        "labels": {"kubernetes.io/service-name": service}},
           "addressType": "IPv4", "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
           "endpoints": [{"addresses": ["10.0.0.5"], "conditions": {"ready": ready}}]})
}

struct Harness {
    fake: Arc<Fake>,
    ctx: Arc<Context>,
    writers: StoreWriters,
    _writer: Writer,
    _caches_ready: watch::Sender<bool>,
}

/// `services` each with one ready endpoint and one Ingress routing to it; the router synced.
async fn harness(services: &[&str], delay: Duration) -> Harness {
    harness_with(services, delay, DEFAULT_DEDUP_WINDOW).await
}

/// [`harness`] with the Event publisher's window `dedup` (zero: every Event reaches the API).
async fn harness_with(services: &[&str], delay: Duration, dedup: Duration) -> Harness {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let fake = Fake::new();
    let (api_root, _) = fake.serve().await;
    let client = kube::Client::try_from(kube::Config::new(api_root.parse().unwrap())).unwrap();
    let (stores, mut w) = StoreWriters::new();
    w.classes.apply_watcher_event(&Event::Apply(obj(class())));
    for s in services {
        fake.put("services", service(s));
        w.services.apply_watcher_event(&Event::Apply(obj(service(s))));
        w.slices.apply_watcher_event(&Event::Apply(obj(slice(s, true))));
        w.ingresses.apply_watcher_event(&Event::Apply(obj(ingress(&format!("to-{s}"), s))));
    }
    let mut sim = SimBackend::new(DiffOptions { ownership: Ownership::new("r1"), health_monitor: None }, None);
    sim.delay = delay;
    let writer = Writer::spawn(sim, WriterMetrics::default());
    let (caches_ready, ready_rx) = watch::channel(true);
    let opts =
        kuryr_l7_router::translate::TranslateOptions { ingress_class: "kuryr-l7-router".into(), ..Default::default() };
    let events = Arc::new(EventPublisher::new(client.clone(), None, dedup));
    let ctx = Arc::new(Context::new(
        client,
        stores,
        writer.handle(),
        events,
        Metrics::default(),
        opts,
        "r1".into(),
        ready_rx,
        None,
    ));
    Harness { fake, ctx, writers: w, _writer: writer, _caches_ready: caches_ready }
}

/// Eight handlers asking for a Sync while one is in flight: the writer translates the caches
/// once for the job in flight and once for the job the eight share, and every one of them gets
/// the same desired state (before: each handler translated the whole cluster itself).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_handlers_share_one_translation_per_sync_job() {
    let h = harness(&["web"], Duration::from_millis(300)).await;
    let first = tokio::spawn({
        let ctx = h.ctx.clone();
        async move { ctx.sync(true).await.unwrap() }
    });
    tokio::time::sleep(Duration::from_millis(100)).await; // the first job is in flight
    let waiters: Vec<_> = (0..8)
        .map(|_| {
            let ctx = h.ctx.clone();
            tokio::spawn(async move { ctx.sync(true).await.unwrap() })
        })
        .collect();
    let mut desired = Vec::new();
    for w in waiters {
        desired.push(w.await.unwrap().0);
    }
    first.await.unwrap();
    assert_eq!(h.ctx.router().writer.translations(), 2, "one translation per Sync job");
    assert!(desired.iter().all(|d| Arc::ptr_eq(d, &desired[0])), "every waiter got the job's desired state");
    // An unforced Sync to an unchanged cache is answered from the last clean Sync: translated,
    // not written.
    let jobs_before = h.ctx.router().writer.translations();
    h.ctx.sync(false).await.unwrap();
    assert_eq!(h.ctx.router().writer.translations(), jobs_before + 1);
}

/// Eight Ingress reconciles waiting on one Sync job apply its Sync-wide outputs once: one
/// notice patch per Service, one Event for the conflict of an Ingress none of them is, and each
/// its own `Synced` (before: every waiter patched every notice and told the conflict again).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_of_one_sync_apply_its_outputs_once() {
    let services: Vec<String> = (0..8).map(|i| format!("s{i}")).collect();
    let services: Vec<&str> = services.iter().map(String::as_str).collect();
    let mut h = harness_with(&services, Duration::from_millis(300), Duration::ZERO).await;
    // A younger Ingress routing the host and path of to-s0: it loses them (DuplicateRoute).
    let mut dup = ingress("to-s0", "s1");
    dup["metadata"]["name"] = json!("dup");
    dup["metadata"]["creationTimestamp"] = json!("2026-01-02T00:00:00Z");
    h.writers.ingresses.apply_watcher_event(&Event::Apply(obj(dup)));
    let first = tokio::spawn({
        let ctx = h.ctx.clone();
        async move { ctx.sync(true).await.unwrap() }
    });
    tokio::time::sleep(Duration::from_millis(100)).await; // the first job is in flight
    let waiters: Vec<_> = services
        .iter()
        .map(|s| {
            let ctx = h.ctx.clone();
            let ing: Ingress = obj(ingress(&format!("to-{s}"), s));
            tokio::spawn(async move { ctx.sync_for(true, Scope::Ingress(&ing)).await.unwrap() })
        })
        .collect();
    for w in waiters {
        w.await.unwrap();
    }
    first.await.unwrap();
    assert_eq!(h.ctx.router().writer.sync_jobs(), 2, "the eight shared one job");
    let writes = h.fake.writes();
    let notices = writes.iter().filter(|w| w.method == "PATCH" && w.path.contains("/services/")).count();
    assert_eq!(notices, 2 * services.len(), "one notice patch per Service per job (the caches never see them)");
    let events: Vec<&Value> = writes.iter().filter(|w| w.path.contains("/events")).map(|w| &w.body).collect();
    let told = |reason: &str| events.iter().filter(|e| e["reason"] == reason).count();
    assert_eq!(told("DuplicateRoute"), 1, "{events:#?}");
    assert_eq!(told("Synced"), services.len(), "each waiter its own result");
    assert_eq!(events.len(), 1 + services.len(), "{events:#?}");
}

/// A Service whose last endpoint goes unready gets its `NoEndpoints` Warning from the Members
/// path at once (before: only from the next Sync, up to `resync_period` later), and a Service
/// whose slice loses the port name gets `EndpointPortNotFound` the same way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endpoint_warnings_come_from_the_member_path() {
    let mut h = harness(&["web", "api"], Duration::ZERO).await;
    h.ctx.sync(true).await.unwrap();
    let events = |fake: &Fake| -> Vec<Value> {
        fake.writes()
            .into_iter()
            .filter(|w| w.method == "POST" && w.path.ends_with("/events"))
            .map(|w| w.body)
            .collect()
    };
    assert!(events(&h.fake).is_empty(), "healthy Services: no Event yet: {:#?}", events(&h.fake));
    // The Sync wrote the notices: the caches see them as the watch would.
    for s in ["web", "api"] {
        let stored = h.fake.get("v1/services", "shop", s).unwrap();
        assert!(stored["metadata"]["annotations"][notice_annotation("r1")].is_string(), "{stored}");
        h.writers.services.apply_watcher_event(&Event::Apply(obj(stored)));
    }
    h.writers.slices.apply_watcher_event(&Event::Apply(obj(slice("web", false))));
    let mut renamed = slice("api", true);
    renamed["ports"] = json!([{"name": "grpc", "port": 9090, "protocol": "TCP"}]);
    h.writers.slices.apply_watcher_event(&Event::Apply(obj(renamed)));
    for s in ["web", "api"] {
        let svc = h.ctx.stores.services.state().into_iter().find(|x| x.metadata.name.as_deref() == Some(s)).unwrap();
        service::reconcile(svc, h.ctx.clone()).await.unwrap();
    }
    let events = events(&h.fake);
    let on = |name: &str, reason: &str| {
        events.iter().filter(|e| e["regarding"]["name"] == name && e["reason"] == reason).count()
    };
    assert_eq!(on("web", "NoEndpoints"), 1, "{events:#?}");
    assert_eq!(on("api", "EndpointPortNotFound"), 1, "{events:#?}");
    let no_eps = events.iter().find(|e| e["reason"] == "NoEndpoints").unwrap();
    assert_eq!(no_eps["regarding"]["uid"], "uid-web", "the Service from the cache");
    // The next Sync finds the same warnings: not published again.
    h.ctx.sync(true).await.unwrap();
    let again: usize = events_count(&h.fake);
    assert_eq!(again, events.len(), "a Sync does not repeat what the Members path published");
}

fn events_count(fake: &Fake) -> usize {
    fake.writes().into_iter().filter(|w| w.method == "POST" && w.path.ends_with("/events")).count()
}
