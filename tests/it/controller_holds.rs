//! While an object is on hold, events do not re-read the router: a Sync of the desired state
//! last synced is answered from that Sync until the first hold's delay is over (see
//! src/controller/last_sync.rs). The Octavia side is the driver's simulator behind a counting
//! backend; the Kubernetes API is a mock that answers nothing (Events and notices fail, which
//! a Sync logs or returns after the router part).

use crate::support::router_context::router_context;
use http::{Request, Response};
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::{Ingress, IngressClass};
use kube::client::Body;
use kube::runtime::watcher;
use kuryr_l7_router::controller::FINALIZER;
use kuryr_l7_router::controller::context::StoreWriters;
use kuryr_l7_router::controller::metrics::Metrics;
use kuryr_l7_router::controller::writer::{MembersResult, RouterBackend, SyncResult, Writer, WriterMetrics};
use kuryr_l7_router::driver::ownership::Ownership;
use kuryr_l7_router::driver::plan::{DiffOptions, Write};
use kuryr_l7_router::model::{DesiredRouter, Pool};
use kuryr_l7_router::testing::SimBackend;
use kuryr_l7_router::translate::TranslateOptions;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::sync::watch;

fn fixture(name: &str) -> Value {
    let path = format!("{}/tests/fixtures/k8s/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// The simulator, counting the convergences (each reads the whole router).
struct Counting {
    inner: SimBackend,
    syncs: Arc<AtomicUsize>,
}

impl RouterBackend for Counting {
    async fn sync(&self, desired: &DesiredRouter) -> SyncResult {
        self.syncs.fetch_add(1, Ordering::SeqCst);
        self.inner.sync(desired).await
    }

    async fn set_members(&self, pool: &Pool) -> MembersResult {
        self.inner.set_members(pool).await
    }
}

#[tokio::test]
async fn events_during_a_hold_do_not_read_the_router_again() {
    let (svc, handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    drop(handle); // every Kubernetes call fails at once
    let client = kube::Client::new(svc, "default");
    let (stores, mut writers) = StoreWriters::new();
    let class: IngressClass = serde_json::from_value(
        json!({"metadata": {"name": "kuryr-l7-router"}, "spec": {"controller": "openstack.org/kuryr-l7-router"}}),
    )
    .unwrap();
    writers.classes.apply_watcher_event(&watcher::Event::Apply(class));
    let service: Service = serde_json::from_value(fixture("service.json")).unwrap();
    writers.services.apply_watcher_event(&watcher::Event::Apply(service));
    let slice: EndpointSlice = serde_json::from_value(json!({
        "metadata": {"name": "web-abc", "namespace": "shop", "labels": {"kubernetes.io/service-name": "web"}},
        "addressType": "IPv4",
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
        "endpoints": [{"addresses": ["10.0.0.5"], "conditions": {"ready": true}}]
    }))
    .unwrap();
    writers.slices.apply_watcher_event(&watcher::Event::Apply(slice.into()));
    let mut ing = fixture("ingress.json");
    ing["metadata"]["finalizers"] = json!([FINALIZER]);
    let ing: Ingress = serde_json::from_value(ing).unwrap();
    writers.ingresses.apply_watcher_event(&watcher::Event::Apply(ing));

    let mut sim = SimBackend::new(DiffOptions { ownership: Ownership::new("test"), health_monitor: None }, None);
    sim.refuse = Arc::new(|w: &Write| {
        matches!(w, Write::CreatePolicy { .. }).then(|| kuryr_l7_router::openstack::Error::Api {
            service: kuryr_l7_router::openstack::Service::LoadBalancer,
            method: "POST".into(),
            path: "/v2/lbaas/l7policies".into(),
            status: 400,
            message: "Invalid input for field/attribute value".into(),
        })
    });
    let syncs = Arc::new(AtomicUsize::new(0));
    let writer = Writer::spawn(Counting { inner: sim, syncs: syncs.clone() }, WriterMetrics::default());
    let (_ready, ready_rx) = watch::channel(true);
    let opts = TranslateOptions { ingress_class: "kuryr-l7-router".into(), ..TranslateOptions::default() };
    let ctx = router_context(client, stores, writer.handle(), Metrics::default(), opts, ready_rx);
    // The first event converges; the policy is refused and held for 10 s.
    let _ = ctx.sync(false).await;
    assert_eq!(syncs.load(Ordering::SeqCst), 1);
    // Three more events with nothing changed, within the hold: no convergence (before: one
    // read of the whole router each).
    for _ in 0..3 {
        let _ = ctx.sync(false).await;
    }
    assert_eq!(syncs.load(Ordering::SeqCst), 1, "an event during a hold re-read the router");
    // The resync still converges.
    let _ = ctx.sync(true).await;
    assert_eq!(syncs.load(Ordering::SeqCst), 2);
}

/// The simulator, its forced Syncs reading the budget `reading` (as the real driver's
/// `converge_reading_budget` does), counting those reads.
struct Budgeted {
    inner: SimBackend,
    reading: Arc<std::sync::Mutex<kuryr_l7_router::driver::report::BudgetReading>>,
    reads: Arc<AtomicUsize>,
}

impl RouterBackend for Budgeted {
    async fn sync(&self, desired: &DesiredRouter) -> SyncResult {
        self.inner.sync(desired).await
    }

    async fn sync_reading_budget(&self, desired: &DesiredRouter) -> SyncResult {
        self.reads.fetch_add(1, Ordering::SeqCst);
        let mut report = self.inner.sync(desired).await?;
        report.budget = Some(self.reading.lock().unwrap().clone());
        Ok(report)
    }

    async fn set_members(&self, pool: &Pool) -> MembersResult {
        self.inner.set_members(pool).await
    }
}

/// The router's budget comes from the driver's report of a forced Sync (the resync), not from an
/// Octavia client of the controller: the slot takes it, flags the change once, keeps it when the
/// quota is unreadable, and the next translation for that router carries it.
#[tokio::test]
async fn the_budget_comes_with_the_report_of_a_forced_sync() {
    use kuryr_l7_router::translate::budget::Budget;
    let (svc, handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    drop(handle);
    let client = kube::Client::new(svc, "default");
    let (stores, _writers) = StoreWriters::new();
    let budget = Budget { l7policies: Some(3), l7rules: Some(7) };
    let reading = Arc::new(std::sync::Mutex::new(Ok(Some(budget))));
    let reads = Arc::new(AtomicUsize::new(0));
    let sim = SimBackend::new(DiffOptions { ownership: Ownership::new("test"), health_monitor: None }, None);
    let backend = Budgeted { inner: sim, reading: reading.clone(), reads: reads.clone() };
    let writer = Writer::spawn(backend, WriterMetrics::default());
    let (_ready, ready_rx) = watch::channel(true);
    let ctx =
        router_context(client, stores, writer.handle(), Metrics::default(), TranslateOptions::default(), ready_rx);
    let router = ctx.router().clone();
    assert_eq!(router.name, "router-1");
    // An unforced Sync (an Ingress event) does not read the quota.
    let _ = ctx.sync(false).await;
    assert_eq!((reads.load(Ordering::SeqCst), router.budget()), (0, None));
    // The resync does, and the budget changed: flagged once, and the next translation carries it.
    let _ = ctx.sync(true).await;
    assert_eq!((reads.load(Ordering::SeqCst), router.budget()), (1, Some(budget)));
    assert!(router.take_budget_change());
    assert!(!router.take_budget_change());
    assert_eq!(ctx.desired().1.quota.map(|q| q.budget), Some(budget));
    // An unreadable quota keeps the last budget, and is no change.
    *reading.lock().unwrap() = Err("403 Forbidden".into());
    let _ = ctx.sync(true).await;
    assert_eq!((router.budget(), router.take_budget_change()), (Some(budget), false));
    // Unlimited again: no budget.
    *reading.lock().unwrap() = Ok(None);
    let _ = ctx.sync(true).await;
    assert_eq!((router.budget(), router.take_budget_change()), (None, true));
    writer.shutdown().await;
}
