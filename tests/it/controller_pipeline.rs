//! The `run` pipeline without a cloud: the writer's coalescing queue and member diff (pure,
//! table-tested), the Service handler's decision, and the Ingress reconcile's Kubernetes writes
//! over a mock API server with the Octavia side on the driver's simulator ([`SimBackend`]).

use crate::support::router_context::router_context;
use http::{Method, Request, Response, StatusCode};
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::networking::v1::{Ingress, IngressClass};
use kube::client::Body;
use kube::runtime::controller::Action;
use kube::runtime::watcher;
use kuryr_l7_router::controller::context::{Context, StoreWriters, backoff};
use kuryr_l7_router::controller::metrics::Metrics;
use kuryr_l7_router::controller::outputs::notice::{ServiceNotice, notice_annotation};
use kuryr_l7_router::controller::services::handler::{ServiceStep, service_step};
use kuryr_l7_router::controller::writer::{MembersOutcome, WriteError, WriteQueue, Writer, WriterMetrics};
use kuryr_l7_router::controller::{FINALIZER, ingress};
use kuryr_l7_router::driver::actual::{ActualMember, ActualPool};
use kuryr_l7_router::driver::diff::plan_members as members_write;
use kuryr_l7_router::driver::ownership::Ownership;
use kuryr_l7_router::driver::plan::{DiffOptions, Write};
use kuryr_l7_router::model::{DesiredRouter, KubeRef, Member};
use kuryr_l7_router::testing::{SimBackend, desired_with, member, pool};
use kuryr_l7_router::translate::TranslateOptions;
use kuryr_l7_router::translate::slices::CompactSlice;
use serde_json::{Value, json};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{oneshot, watch};

// ------------------------------------------------------------------ pure parts

enum Op {
    Sync(&'static [&'static str]),
    Members(&'static str, u16),
    Pop,
}

#[test]
fn write_queue_coalescing_table() {
    struct Case {
        name: &'static str,
        ops: Vec<Op>,
        want: Vec<&'static str>,
    }
    let cases = vec![
        Case { name: "empty", ops: vec![], want: vec![] },
        Case {
            name: "a newer sync replaces the queued one",
            ops: vec![Op::Sync(&["a"]), Op::Sync(&["b"])],
            want: vec!["sync"],
        },
        Case {
            name: "members for one pool: latest wins, order kept",
            ops: vec![Op::Members("p", 1), Op::Members("q", 1), Op::Members("p", 2)],
            want: vec!["members:p", "members:q"],
        },
        Case {
            name: "a sync supersedes every queued members job",
            ops: vec![Op::Members("p", 1), Op::Members("q", 1), Op::Sync(&["p"])],
            want: vec!["sync"],
        },
        Case {
            name: "members after a queued sync run after it",
            ops: vec![Op::Sync(&["p"]), Op::Members("p", 3)],
            want: vec!["sync", "members:p"],
        },
        Case {
            name: "popped jobs are gone",
            ops: vec![Op::Sync(&["p"]), Op::Members("p", 3), Op::Pop, Op::Members("q", 1)],
            want: vec!["members:p", "members:q"],
        },
    ];
    for c in cases {
        let mut q = WriteQueue::default();
        for op in c.ops {
            match op {
                Op::Sync(pools) => q.push_sync(desired_with(pools), None),
                Op::Members(p, w) => q.push_members(pool(p, vec![member("10.0.0.1", w)]), None),
                Op::Pop => {
                    q.pop();
                }
            }
        }
        assert_eq!(q.describe(), c.want, "case: {}", c.name);
        assert_eq!(q.len(), c.want.len(), "case: {}", c.name);
    }
}

/// Syncs from the caches coalesce into one job, forced when any of its waiters asked for it (a
/// resync's force is never lost to an unforced Sync queued after it), translated when it runs.
#[test]
fn write_queue_sync_from_caches_keeps_the_strongest_force() {
    use kuryr_l7_router::controller::writer::Job;
    for (first, second, want) in [(true, false, true), (false, true, true), (false, false, false)] {
        let mut q = WriteQueue::default();
        let (t1, _r1) = oneshot::channel();
        let (t2, _r2) = oneshot::channel();
        q.push_sync_from_caches(first, Some(t1));
        q.push_members(pool("p", vec![member("10.0.0.1", 1)]), None);
        q.push_sync_from_caches(second, Some(t2));
        assert_eq!(q.describe(), ["sync"]);
        match q.pop() {
            Some(Job::Sync { desired: None, force, replies, superseded, .. }) => {
                assert_eq!(force, want, "{first} then {second}");
                assert_eq!((replies.len(), superseded.len()), (2, 0));
            }
            other => panic!("unexpected {other:?}"),
        }
    }
}

#[test]
fn write_queue_latest_members_win_and_waiters_are_all_answered() {
    let mut q = WriteQueue::default();
    let (t1, mut r1) = oneshot::channel();
    let (t2, _r2) = oneshot::channel();
    q.push_members(pool("p", vec![member("10.0.0.1", 1)]), Some(t1));
    q.push_members(pool("p", vec![member("10.0.0.2", 1)]), Some(t2));
    match q.pop() {
        Some(kuryr_l7_router::controller::writer::Job::Members { pool, replies, .. }) => {
            assert_eq!(pool.members, vec![member("10.0.0.2", 1)]);
            assert_eq!(replies.len(), 2);
        }
        other => panic!("unexpected {other:?}"),
    }
    // Shutdown answers queued waiters.
    let (t3, mut r3) = oneshot::channel();
    q.push_sync(DesiredRouter::default(), Some(t3));
    q.fail_all(&WriteError::new("shutdown", "bye"));
    assert!(r3.try_recv().unwrap().is_err());
    assert!(r1.try_recv().is_err(), "the popped job's waiters are answered by the writer, not the queue");
}

fn own() -> Ownership {
    Ownership::new("test-cluster")
}

fn actual_pool(members: Vec<(&str, u16, bool)>) -> ActualPool {
    let tags = own().tags_for(&KubeRef::new("Service", "shop", "web"));
    ActualPool {
        id: "pool-1".into(),
        name: "p".into(),
        lb_algorithm: "LEAST_CONNECTIONS".into(),
        members: members
            .into_iter()
            .enumerate()
            .map(|(i, (ip, w, ours))| ActualMember {
                id: format!("m{i}").into(),
                name: ip.into(),
                address: ip.parse().unwrap(),
                protocol_port: 8080,
                weight: w,
                backup: false,
                admin_state_up: true,
                monitor_port: None,
                tags: if ours { tags.clone().into() } else { Default::default() },
                in_error: false,
            })
            .collect(),
        healthmonitor: None,
        tags: tags.into(),
        in_error: false,
    }
}

#[test]
fn members_write_table() {
    let opts = DiffOptions { ownership: own(), health_monitor: None };
    // (name, desired members, actual (ip, weight, ours), want write with these addresses)
    type Case = (&'static str, Vec<Member>, Vec<(&'static str, u16, bool)>, Option<Vec<&'static str>>);
    let cases: Vec<Case> = vec![
        (
            "equal: no write (algorithm differences are Sync's business)",
            vec![member("10.0.0.1", 1)],
            vec![("10.0.0.1", 1, true)],
            None,
        ),
        (
            "scaled up: one batch",
            vec![member("10.0.0.1", 1), member("10.0.0.2", 1)],
            vec![("10.0.0.1", 1, true)],
            Some(vec!["10.0.0.1", "10.0.0.2"]),
        ),
        ("scaled to zero: one batch emptying the pool", vec![], vec![("10.0.0.1", 1, true)], Some(vec![])),
        ("weight changed", vec![member("10.0.0.1", 5)], vec![("10.0.0.1", 1, true)], Some(vec!["10.0.0.1"])),
        (
            "foreign member carried over",
            vec![member("10.0.0.2", 1)],
            vec![("10.0.0.9", 1, false)],
            Some(vec!["10.0.0.2", "10.0.0.9"]),
        ),
    ];
    for (name, want_members, actual, want) in cases {
        let got = members_write(&pool("p", want_members), &actual_pool(actual), &opts);
        match (got, want) {
            (None, None) => {}
            (Some(Write::SetMembers { members, .. }), Some(addrs)) => {
                let mut got: Vec<String> = members.iter().map(|m| m.address.to_string()).collect();
                got.sort();
                assert_eq!(got, addrs, "case: {name}");
            }
            (got, want) => panic!("case {name}: got {got:?}, want {want:?}"),
        }
    }
}

#[test]
fn service_step_table() {
    let n = |router: &str, pools: &[&str]| ServiceNotice {
        router: router.into(),
        pools: pools.iter().map(|s| s.to_string()).collect(),
        ingresses: vec!["shop/web".into()],
    };
    let cases = vec![
        ("no notice, none wanted", None, None, ServiceStep::Ignore),
        ("another router's notice", Some(n("other", &["p"])), Some(n("r", &["p"])), ServiceStep::Ignore),
        ("created after its Ingress", None, Some(n("r", &["p"])), ServiceStep::Sync),
        ("no longer routed to", Some(n("r", &["p"])), None, ServiceStep::Sync),
        ("pools changed", Some(n("r", &["p"])), Some(n("r", &["p", "q"])), ServiceStep::Sync),
        (
            "steady: endpoints changed",
            Some(n("r", &["p", "q"])),
            Some(n("r", &["p", "q"])),
            ServiceStep::Members(vec!["p".into(), "q".into()]),
        ),
    ];
    for (name, current, want, step) in cases {
        assert_eq!(service_step("r", current.as_ref(), want.as_ref()), step, "case: {name}");
    }
}

#[test]
fn error_backoff_grows_and_caps() {
    let secs: Vec<u64> = (1..=9).map(|n| backoff(n).as_secs()).collect();
    assert_eq!(secs, [5, 10, 20, 40, 80, 160, 300, 300, 300]);
}

// ------------------------------------------------------------------ writer on the simulator

fn sim() -> SimBackend {
    SimBackend::new(DiffOptions { ownership: own(), health_monitor: None }, Some("172.24.4.10".parse().unwrap()))
}

#[tokio::test]
async fn writer_coalesces_syncs_while_one_is_in_flight() {
    let mut backend = sim();
    backend.delay = Duration::from_millis(200);
    let state = backend.state.clone();
    let writer = Writer::spawn(backend, WriterMetrics::default());
    let h = writer.handle();
    let first = h.submit_sync(desired_with(&["a"]));
    tokio::time::sleep(Duration::from_millis(50)).await; // the first one is in flight
    let second = h.submit_sync(desired_with(&["b"]));
    let members_b = h.submit_members(pool("b", vec![member("10.0.0.1", 1)]));
    let third = h.submit_sync(desired_with(&["c"]));
    assert_eq!(h.depth(), 1, "second and third coalesced, members superseded");
    let r1 = first.await.unwrap().unwrap();
    let r2 = second.await.unwrap().unwrap();
    let r3 = third.await.unwrap().unwrap();
    assert_eq!(r1.report.writes.len(), 1, "create pool a");
    assert_eq!(r2.report.writes.len(), r3.report.writes.len(), "second and third got the same result");
    assert_eq!(members_b.await.unwrap().unwrap(), MembersOutcome::Superseded);
    let names: Vec<String> = state.lock().unwrap().router.pools.iter().map(|p| p.name.clone()).collect();
    assert_eq!(names, ["c"], "only the last desired state was applied after the first");
    // Members: missing, then updated once, then unchanged.
    assert_eq!(h.members(pool("zz", vec![])).await.unwrap(), MembersOutcome::PoolMissing);
    assert_eq!(h.members(pool("c", vec![member("10.0.0.1", 1)])).await.unwrap(), MembersOutcome::Updated);
    assert_eq!(h.members(pool("c", vec![member("10.0.0.1", 1)])).await.unwrap(), MembersOutcome::Unchanged);
    writer.shutdown().await;
    assert_eq!(h.sync(DesiredRouter::default()).await.unwrap_err().label, "shutdown");
}

/// A Members job asking for the members the router already holds (as the last clean Sync or
/// Members job left them) is answered `Unchanged` without a backend call: a Node label change
/// or a Service update that keeps the members costs no Octavia request. Other members still go
/// to the backend.
#[tokio::test]
async fn writer_skips_members_the_router_already_holds() {
    let backend = sim();
    let fail = backend.fail.clone();
    let writer = Writer::spawn(backend, WriterMetrics::default());
    let h = writer.handle();
    h.sync(desired_with(&["c"])).await.unwrap();
    let held = pool("c", vec![member("10.0.0.1", 1)]);
    assert_eq!(h.members(held.clone()).await.unwrap(), MembersOutcome::Updated);
    // From now on the backend fails every call: only a skipped job can succeed.
    *fail.lock().unwrap() = Some(WriteError::new("octavia", "down"));
    assert_eq!(h.members(held).await.unwrap(), MembersOutcome::Unchanged, "no backend call");
    let other = pool("c", vec![member("10.0.0.2", 1)]);
    assert_eq!(h.members(other).await.unwrap_err().label, "octavia", "new members reach the backend");
    writer.shutdown().await;
}

// ------------------------------------------------------------------ Ingress reconcile over a mock API

type Handle = tower_test::mock::Handle<Request<Body>, Response<Body>>;

fn fixture(name: &str) -> Value {
    let path = format!("{}/tests/fixtures/k8s/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn class() -> IngressClass {
    serde_json::from_value(json!({
        "metadata": {"name": "kuryr-l7-router"},
        "spec": {"controller": "openstack.org/kuryr-l7-router"}
    }))
    .unwrap()
}

fn slice() -> CompactSlice {
    serde_json::from_value(json!({
        "metadata": {"name": "web-abc", "namespace": "shop", "labels": {"kubernetes.io/service-name": "web"}},
        "addressType": "IPv4",
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
        "endpoints": [{"addresses": ["10.0.0.5"], "conditions": {"ready": true}}]
    }))
    .unwrap()
}

struct Expect {
    method: Method,
    /// Path (the query is not compared).
    path: String,
    response: Option<Value>,
}

fn expect(method: Method, path: impl Into<String>) -> Expect {
    Expect { method, path: path.into(), response: None }
}

async fn serve(handle: &mut Handle, exp: Expect) -> (String, Value) {
    let (request, send) =
        tokio::time::timeout(Duration::from_secs(5), handle.next_request()).await.expect("timeout").expect("request");
    let uri = request.uri().clone();
    assert_eq!(request.method(), exp.method, "method of {uri}");
    assert_eq!(uri.path(), exp.path, "path");
    let bytes = request.into_body().collect_bytes().await.unwrap();
    let body: Value = if bytes.is_empty() { Value::Null } else { serde_json::from_slice(&bytes).unwrap() };
    let response = exp.response.unwrap_or_else(|| body.clone());
    send.send_response(
        Response::builder().status(StatusCode::OK).body(Body::from(serde_json::to_vec(&response).unwrap())).unwrap(),
    );
    (uri.to_string(), body)
}

const ING: &str = "/apis/networking.k8s.io/v1/namespaces/shop/ingresses/web";
const SVC: &str = "/api/v1/namespaces/shop/services/web";
const EVENTS: &str = "/apis/events.k8s.io/v1/namespaces/shop/events";

struct Harness {
    ctx: Arc<Context>,
    writers: StoreWriters,
    backend_state: Arc<std::sync::Mutex<kuryr_l7_router::driver::sim::Simulator>>,
    _writer: Writer,
    _ready: watch::Sender<bool>,
}

fn harness(client: kube::Client) -> Harness {
    harness_with(client, TranslateOptions { ingress_class: "kuryr-l7-router".into(), ..TranslateOptions::default() })
}

fn harness_with(client: kube::Client, opts: TranslateOptions) -> Harness {
    let (stores, mut writers) = StoreWriters::new();
    writers.classes.apply_watcher_event(&watcher::Event::Apply(class()));
    let svc: Service = serde_json::from_value(fixture("service.json")).unwrap();
    writers.services.apply_watcher_event(&watcher::Event::Apply(svc));
    writers.slices.apply_watcher_event(&watcher::Event::Apply(slice()));
    let backend = sim();
    let backend_state = backend.state.clone();
    let writer = Writer::spawn(backend, WriterMetrics::default());
    let (ready_tx, ready_rx) = watch::channel(true);
    let ctx = Arc::new(router_context(client, stores, writer.handle(), Metrics::default(), opts, ready_rx));
    Harness { ctx, writers, backend_state, _writer: writer, _ready: ready_tx }
}

fn ingress_with(finalizers: &[&str], deleting: bool) -> Ingress {
    let mut v = fixture("ingress.json");
    v["metadata"]["finalizers"] = json!(finalizers);
    if deleting {
        v["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
    }
    serde_json::from_value(v).unwrap()
}

#[tokio::test]
async fn new_ingress_gets_the_finalizer_first() {
    let (svc, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let h = harness(kube::Client::new(svc, "default"));
    let ing = ingress_with(&["example.com/other"], false);
    let mut patched = serde_json::to_value(&ing).unwrap();
    patched["metadata"]["finalizers"] = json!(["example.com/other", FINALIZER]);
    let server = tokio::spawn(async move {
        serve(&mut handle, Expect { response: Some(patched), ..expect(Method::PATCH, ING) }).await
    });
    let action = ingress::reconcile(Arc::new(ing), h.ctx.clone()).await.unwrap();
    assert_eq!(action, Action::await_change());
    let (_, body) = server.await.unwrap();
    assert_eq!(body[1]["value"], FINALIZER);
    assert!(h.backend_state.lock().unwrap().router.pools.is_empty(), "no Octavia write before the finalizer");
}

#[tokio::test]
async fn apply_writes_octavia_then_notice_status_and_events() {
    let (svc, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let mut h = harness(kube::Client::new(svc, "default"));
    let ing = ingress_with(&["example.com/other", FINALIZER], false);
    h.writers.ingresses.apply_watcher_event(&watcher::Event::Apply(ing.clone()));
    let ing_value = serde_json::to_value(&ing).unwrap();
    let server = tokio::spawn(async move {
        let notice = serve(&mut handle, expect(Method::PATCH, SVC)).await;
        let status =
            serve(&mut handle, Expect { response: Some(ing_value), ..expect(Method::PATCH, format!("{ING}/status")) })
                .await;
        let event = serve(&mut handle, expect(Method::POST, EVENTS)).await;
        (notice, status, event)
    });
    ingress::reconcile(Arc::new(ing), h.ctx.clone()).await.unwrap();
    let ((_, notice), (_, status), (_, event)) = server.await.unwrap();

    // Octavia (simulated): one pool with the endpoint, one policy.
    let actual = h.backend_state.lock().unwrap().router.clone();
    assert_eq!(actual.pools.len(), 1);
    assert_eq!(
        actual.pools[0].members.iter().map(|m| m.address).collect::<Vec<IpAddr>>(),
        ["10.0.0.5".parse::<IpAddr>().unwrap()]
    );
    assert_eq!(actual.policies.len(), 1);

    let key = notice_annotation("router-1");
    let n = ServiceNotice::parse(notice["metadata"]["annotations"][&key].as_str().unwrap()).unwrap();
    assert_eq!(n.router, "router-1");
    assert_eq!(n.pools, [actual.pools[0].name.clone()]);
    assert_eq!(n.ingresses, ["shop/web"]);
    assert_eq!(status, json!({"status": {"loadBalancer": {"ingress": [{"ip": "172.24.4.10"}]}}}));
    assert_eq!(event["reason"], "Synced");
    assert_eq!(event["type"], "Normal");
    assert!(event["note"].as_str().unwrap().contains("1 policy(ies)"), "{event}");
}

const CLASS: &str = "/apis/networking.k8s.io/v1/ingressclasses/kuryr-l7-router";

/// With host ownership on, a Sync that changes the hosts' owners writes them to our
/// IngressClass (where the next leader reads them), between the Service notice and the status;
/// once the class carries them, the next Sync writes the class no more.
#[tokio::test]
async fn host_owners_are_written_to_the_ingress_class_once() {
    use kuryr_l7_router::translate::tenancy::{HOST_OWNERS_ANNOTATION, RememberedOwners};
    let (svc, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let mut opts = TranslateOptions { ingress_class: "kuryr-l7-router".into(), ..TranslateOptions::default() };
    opts.tenancy.host_ownership = true;
    let mut h = harness_with(kube::Client::new(svc, "default"), opts);
    let ing = ingress_with(&[FINALIZER], false);
    h.writers.ingresses.apply_watcher_event(&watcher::Event::Apply(ing.clone()));
    let ing_value = serde_json::to_value(&ing).unwrap();
    let first = tokio::spawn(async move {
        serve(&mut handle, expect(Method::PATCH, SVC)).await;
        let (_, class) = serve(&mut handle, Expect { response: Some(json!({})), ..expect(Method::PATCH, CLASS) }).await;
        let status = Expect { response: Some(ing_value.clone()), ..expect(Method::PATCH, format!("{ING}/status")) };
        serve(&mut handle, status).await;
        serve(&mut handle, expect(Method::POST, EVENTS)).await;
        (class, handle, ing_value)
    });
    ingress::reconcile(Arc::new(ing.clone()), h.ctx.clone()).await.unwrap();
    let (class_patch, mut handle, ing_value) = first.await.unwrap();
    let value = class_patch["metadata"]["annotations"][HOST_OWNERS_ANNOTATION].as_str().expect("annotation written");
    let owners: RememberedOwners = serde_json::from_str(value).unwrap();
    assert_eq!(owners.keys().collect::<Vec<_>>(), ["shop.example.com"]);
    assert_eq!(owners["shop.example.com"].namespace, "shop");
    assert_eq!(owners["shop.example.com"].vacated, None, "its Ingress is there");

    // The class's watch brings the annotation back: the same Sync has nothing to remember.
    let mut remembered = class();
    remembered.metadata.annotations = Some([(HOST_OWNERS_ANNOTATION.to_string(), value.to_string())].into());
    h.writers.classes.apply_watcher_event(&watcher::Event::Apply(remembered));
    let second = tokio::spawn(async move {
        let mut seen = Vec::new();
        while let Ok(Some((request, send))) =
            tokio::time::timeout(Duration::from_millis(500), handle.next_request()).await
        {
            let path = request.uri().path().to_string();
            seen.push(format!("{} {path}", request.method()));
            // Status patches answer the Ingress, every other write its own body (as `serve`).
            let mut body = request.into_body().collect_bytes().await.unwrap().to_vec();
            if path.ends_with("/status") {
                body = serde_json::to_vec(&ing_value).unwrap();
            }
            send.send_response(Response::builder().status(StatusCode::OK).body(Body::from(body)).unwrap());
        }
        seen
    });
    ingress::reconcile(Arc::new(ing), h.ctx.clone()).await.unwrap();
    let seen = second.await.unwrap();
    assert!(!seen.iter().any(|w| w.ends_with(CLASS)), "no second class write: {seen:?}");
}

#[tokio::test]
async fn deletion_removes_routes_notice_and_finalizer() {
    let (svc, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let mut h = harness(kube::Client::new(svc, "default"));
    // The router already serves the Ingress, and the Service carries its notice.
    let live = ingress_with(&["example.com/other", FINALIZER], false);
    h.writers.ingresses.apply_watcher_event(&watcher::Event::Apply(live));
    let (_, desired) = h.ctx.desired();
    h.ctx.router().writer.sync(desired.clone()).await.unwrap();
    let mut svc_obj: Service = serde_json::from_value(fixture("service.json")).unwrap();
    let notice = ServiceNotice {
        router: "router-1".into(),
        pools: desired.pools.keys().cloned().collect(),
        ingresses: vec!["shop/web".into()],
    };
    svc_obj.metadata.annotations.as_mut().unwrap().insert(notice_annotation("router-1"), notice.to_annotation());
    h.writers.services.apply_watcher_event(&watcher::Event::Apply(svc_obj));
    // Now it is being deleted.
    let deleting = ingress_with(&["example.com/other", FINALIZER], true);
    h.writers.ingresses.apply_watcher_event(&watcher::Event::Apply(deleting.clone()));
    let server = tokio::spawn(async move {
        let notice =
            serve(&mut handle, Expect { response: Some(fixture("service.json")), ..expect(Method::PATCH, SVC) }).await;
        let fin =
            serve(&mut handle, Expect { response: Some(fixture("ingress.json")), ..expect(Method::PATCH, ING) }).await;
        (notice, fin)
    });
    ingress::reconcile(Arc::new(deleting), h.ctx.clone()).await.unwrap();
    let ((_, notice), (_, fin)) = server.await.unwrap();
    assert_eq!(notice, json!({"metadata": {"annotations": {notice_annotation("router-1"): null}}}));
    assert_eq!(fin[1], json!({"op": "remove", "path": "/metadata/finalizers/1"}));
    let actual = h.backend_state.lock().unwrap().router.clone();
    assert!(actual.policies.is_empty() && actual.pools.is_empty(), "{actual:?}");
}

#[tokio::test]
async fn octavia_failure_is_an_error_with_a_warning_event_and_growing_requeue() {
    let (svc, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let mut h = harness(kube::Client::new(svc, "default"));
    let ing = ingress_with(&[FINALIZER], false);
    h.writers.ingresses.apply_watcher_event(&watcher::Event::Apply(ing.clone()));
    let started = Instant::now();
    let server = tokio::spawn(async move { serve(&mut handle, expect(Method::POST, EVENTS)).await });
    // The same caches, but an Octavia that answers with a router in ERROR.
    let backend = sim();
    *backend.fail.lock().unwrap() =
        Some(WriteError::new("router_error", "L7 router r (id) is in provisioning_status ERROR"));
    let writer = Writer::spawn(backend, WriterMetrics::default());
    let client_svc = h.ctx.client.clone();
    let (_ready, ready_rx) = watch::channel(true);
    let ctx = Arc::new(router_context(
        client_svc,
        h.ctx.stores.clone(),
        writer.handle(),
        Metrics::default(),
        h.ctx.opts.clone(),
        ready_rx,
    ));
    let err = ingress::reconcile(Arc::new(ing.clone()), ctx.clone()).await.unwrap_err();
    assert_eq!(err.metric_label(), "router_error");
    let (_, event) = server.await.unwrap();
    assert_eq!(event["reason"], "OctaviaError");
    assert_eq!(event["type"], "Warning");
    let a1 = kuryr_l7_router::controller::context::error_policy(Arc::new(ing.clone()), &err, ctx.clone());
    let a2 = kuryr_l7_router::controller::context::error_policy(Arc::new(ing), &err, ctx.clone());
    assert_eq!(a1, Action::requeue(Duration::from_secs(5)));
    assert_eq!(a2, Action::requeue(Duration::from_secs(10)));
    assert!(started.elapsed() < Duration::from_secs(5));
}

// ------------------------------------------------------------------ triggers and caches

#[test]
fn triggers_map_to_the_right_objects() {
    use kuryr_l7_router::controller::services::handler::{service_of_endpoints, service_of_slice};
    let s = service_of_slice(slice()).unwrap();
    assert_eq!((s.name.as_str(), s.namespace.as_deref()), ("web", Some("shop")));
    let mut unlabeled = slice();
    unlabeled.metadata.labels = None;
    assert!(service_of_slice(unlabeled).is_none(), "a slice without service-name label triggers nothing");
    let ep: k8s_openapi::api::core::v1::Endpoints =
        serde_json::from_value(json!({"metadata": {"name": "web", "namespace": "shop"}})).unwrap();
    assert_eq!(service_of_endpoints(ep).unwrap().name, "web");

    let (stores, mut w) = StoreWriters::new();
    let mut other: Ingress = ingress_with(&[], false);
    other.metadata.name = Some("other".into());
    other.spec.as_mut().unwrap().rules.as_mut().unwrap()[0].http.as_mut().unwrap().paths[0]
        .backend
        .service
        .as_mut()
        .unwrap()
        .name = "api".into();
    w.ingresses.apply_watcher_event(&watcher::Event::Apply(ingress_with(&[], false)));
    w.ingresses.apply_watcher_event(&watcher::Event::Apply(other));
    let svc: Service = serde_json::from_value(fixture("service.json")).unwrap();
    let refs = ingress::ingresses_naming(&stores, &svc);
    assert_eq!(refs.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(), ["web"]);
}

#[test]
fn inputs_leave_out_ingresses_being_deleted() {
    let (stores, mut w) = StoreWriters::new();
    w.ingresses.apply_watcher_event(&watcher::Event::Apply(ingress_with(&[FINALIZER], true)));
    let mut live = ingress_with(&[FINALIZER], false);
    live.metadata.name = Some("live".into());
    w.ingresses.apply_watcher_event(&watcher::Event::Apply(live));
    let names: Vec<_> = stores.inputs().ingresses.iter().map(|i| i.metadata.name.clone().unwrap()).collect();
    assert_eq!(names, ["live"]);
}

/// The translation reads the caches' own objects: a snapshot shares them (the same allocation)
/// instead of copying every cache for each translation.
#[test]
fn inputs_share_the_cached_objects_instead_of_copying_them() {
    let (stores, mut w) = StoreWriters::new();
    w.ingresses.apply_watcher_event(&watcher::Event::Apply(ingress_with(&[FINALIZER], false)));
    let svc: Service = serde_json::from_value(fixture("service.json")).unwrap();
    w.services.apply_watcher_event(&watcher::Event::Apply(svc));
    let snapshot = stores.inputs();
    assert!(Arc::ptr_eq(&snapshot.ingresses[0], &stores.ingresses.state()[0]));
    assert!(Arc::ptr_eq(&snapshot.services[0], &stores.services.state()[0]));
}

/// The controller's translations share one certificate cache: a TLS Secret is parsed once
/// whatever the number of Syncs, and leaves the cache once deleted from the Secret cache.
#[test]
fn translations_from_the_caches_parse_a_tls_secret_once() {
    let (stores, mut w) = StoreWriters::new();
    w.classes.apply_watcher_event(&watcher::Event::Apply(class()));
    let mut ing = ingress_with(&[FINALIZER], false);
    let ns = ing.metadata.namespace.clone().unwrap();
    ing.spec.as_mut().unwrap().tls =
        Some(vec![k8s_openapi::api::networking::v1::IngressTLS { hosts: None, secret_name: Some("tls".into()) }]);
    w.ingresses.apply_watcher_event(&watcher::Event::Apply(ing));
    let key = rcgen::KeyPair::generate().unwrap();
    let crt = rcgen::CertificateParams::new(vec!["a.example.com".to_string()]).unwrap().self_signed(&key).unwrap();
    let secret: k8s_openapi::api::core::v1::Secret = serde_json::from_value(json!({
        "metadata": {"name": "tls", "namespace": ns, "uid": "u-1", "resourceVersion": "7"},
        "type": "kubernetes.io/tls",
        "data": {"tls.crt": base64(crt.pem()), "tls.key": base64(key.serialize_pem())}
    }))
    .unwrap();
    w.secrets.apply_watcher_event(&watcher::Event::Apply(secret.clone()));
    let opts = TranslateOptions { ingress_class: "kuryr-l7-router".into(), ..TranslateOptions::default() };
    for _ in 0..3 {
        kuryr_l7_router::translate::translate(&stores.inputs(), &opts);
    }
    assert_eq!((stores.certificates.parses(), stores.certificates.len()), (1, 1));
    w.secrets.apply_watcher_event(&watcher::Event::Delete(secret));
    kuryr_l7_router::translate::translate(&stores.inputs(), &opts);
    assert!(stores.certificates.is_empty(), "the deleted Secret's parse is dropped");
}

fn base64(text: String) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(text)
}

// ------------------------------------------------------------------ issue 14: isolation, blocked router

/// A write Octavia refuses for good for the Ingress's policy: the reconcile succeeds (the rest
/// converged), a Warning `OctaviaWriteRefused` names the object and Octavia's answer, the failure
/// is counted by reason, and the Ingress is synced again when the hold ends (today: the whole
/// Sync fails and stops every later change).
#[tokio::test]
async fn a_refused_write_is_a_warning_event_a_metric_and_a_requeue_not_a_failed_sync() {
    let (svc, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let mut h = harness(kube::Client::new(svc, "default"));
    let ing = ingress_with(&[FINALIZER], false);
    h.writers.ingresses.apply_watcher_event(&watcher::Event::Apply(ing.clone()));
    let mut backend = sim();
    backend.refuse = Arc::new(|w: &Write| {
        matches!(w, Write::CreatePolicy { .. }).then(|| kuryr_l7_router::openstack::Error::Api {
            service: kuryr_l7_router::openstack::Service::LoadBalancer,
            method: "POST".into(),
            path: "/v2/lbaas/l7policies".into(),
            status: 400,
            message: "Invalid input for field/attribute value".into(),
        })
    });
    let state = backend.state.clone();
    let writer = Writer::spawn(backend, WriterMetrics::default());
    let metrics = Metrics::default();
    let client = h.ctx.client.clone();
    let (_ready, ready_rx) = watch::channel(true);
    let ctx = Arc::new(router_context(
        client,
        h.ctx.stores.clone(),
        writer.handle(),
        metrics.clone(),
        h.ctx.opts.clone(),
        ready_rx,
    ));
    let ing_value = serde_json::to_value(&ing).unwrap();
    let server = tokio::spawn(async move {
        let refused = serve(&mut handle, expect(Method::POST, EVENTS)).await;
        serve(&mut handle, expect(Method::PATCH, SVC)).await;
        serve(&mut handle, Expect { response: Some(ing_value), ..expect(Method::PATCH, format!("{ING}/status")) })
            .await;
        let synced = serve(&mut handle, expect(Method::POST, EVENTS)).await;
        (refused, synced)
    });
    let action = ingress::reconcile(Arc::new(ing), ctx).await.unwrap();
    let ((_, refused), (_, synced)) = server.await.unwrap();
    assert_eq!((refused["type"].as_str(), refused["reason"].as_str()), (Some("Warning"), Some("OctaviaWriteRefused")));
    let note = refused["note"].as_str().unwrap();
    assert!(note.contains("L7 policy") && note.contains("HTTP 400"), "{note}");
    assert_eq!(synced["reason"], "Synced");
    assert_eq!(action, Action::requeue(Duration::from_secs(11)), "synced again once the 10 s hold ends");
    assert_eq!(
        metrics
            .write_failures
            .get_or_create(&kuryr_l7_router::controller::metrics::ReasonLabels {
                router: "router-1".into(),
                reason: "invalid".into()
            })
            .get(),
        1
    );
    // The pool (the rest of the change) was written.
    assert_eq!(state.lock().unwrap().router.pools.len(), 1);
}

/// `/readyz` follows whether the router refuses writes: not ready while it does, ready again by
/// itself after the next job finds it writable (today: stays ready while every job waits out
/// `write_timeout`).
#[tokio::test]
async fn readiness_is_lost_while_the_router_refuses_writes_and_comes_back() {
    use kuryr_l7_router::controller::health::Readiness;
    let backend = sim();
    let blocked = backend.blocked.clone();
    let mut ready = Readiness::expecting(true, ["r1"]);
    ready.router_mut("r1").ready = true;
    let (ready_tx, ready_rx) = watch::channel(ready);
    let writer =
        Writer::spawn(backend, WriterMetrics { router: "r1".into(), metrics: None, readiness: Some(ready_tx) });
    let h = writer.handle();
    blocked.store(true, std::sync::atomic::Ordering::SeqCst);
    h.sync(DesiredRouter::default()).await.unwrap();
    assert_eq!(
        ready_rx.borrow().missing().as_deref(),
        Some("router r1: refuses writes (provisioning_status ERROR or immutable)")
    );
    blocked.store(false, std::sync::atomic::Ordering::SeqCst);
    h.members(pool("zz", vec![])).await.unwrap();
    assert_eq!(ready_rx.borrow().missing(), None);
    writer.shutdown().await;
}

/// Every Ingress status is checked on each resync and patched only where it differs from the
/// router's address (a router rebuilt elsewhere, a status edited by hand); before, only a
/// reconcile of that Ingress did it.
#[tokio::test]
async fn resync_patches_only_the_ingress_statuses_that_differ() {
    let (svc, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let mut h = harness(kube::Client::new(svc, "default"));
    let stale = ingress_with(&[FINALIZER], false);
    let mut current = ingress_with(&[FINALIZER], false);
    current.metadata.name = Some("current".into());
    current.status = serde_json::from_value(json!({"loadBalancer": {"ingress": [{"ip": "172.24.4.99"}]}})).unwrap();
    h.writers.ingresses.apply_watcher_event(&watcher::Event::Apply(stale.clone()));
    h.writers.ingresses.apply_watcher_event(&watcher::Event::Apply(current));
    let stale_value = serde_json::to_value(&stale).unwrap();
    let server = tokio::spawn(async move {
        let patch = serve(
            &mut handle,
            Expect { response: Some(stale_value), ..expect(Method::PATCH, format!("{ING}/status")) },
        )
        .await;
        let more = tokio::time::timeout(Duration::from_millis(300), handle.next_request()).await;
        (patch, more.is_ok())
    });
    h.ctx.refresh_statuses(Some("172.24.4.99".parse().unwrap())).await;
    let ((_, body), more) = server.await.unwrap();
    assert_eq!(body, json!({"status": {"loadBalancer": {"ingress": [{"ip": "172.24.4.99"}]}}}));
    assert!(!more, "the Ingress whose status already matches is not patched");
}
