//! Leader election against a fake Lease API (a tower_test mock that stores one Lease and applies
//! the patches kube-lease-manager sends).

use http::{Method, Request, Response, StatusCode};
use kube::client::Body;
use kuryr_l7_router::config::LeaderSettings;
use kuryr_l7_router::controller::leader::Leadership;
use serde_json::{Map, Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;

type Handle = tower_test::mock::Handle<Request<Body>, Response<Body>>;

const LEASES: &str = "/apis/coordination.k8s.io/v1/namespaces/kuryr/leases";

/// The stored Lease (None until created) and the (method, path) of every request.
#[derive(Default)]
struct FakeLeases {
    lease: Option<Value>,
    log: Vec<(Method, String)>,
}

fn respond(status: StatusCode, body: &Value) -> Response<Body> {
    Response::builder().status(status).body(Body::from(serde_json::to_vec(body).unwrap())).unwrap()
}

fn not_found() -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404, "message": "not found"})
}

/// Serves the Lease API until the client is dropped.
fn fake_api(mut handle: Handle, state: Arc<Mutex<FakeLeases>>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        while let Some((req, send)) = handle.next_request().await {
            let method = req.method().clone();
            let path = req.uri().path().to_string();
            let bytes = req.into_body().collect_bytes().await.unwrap();
            let body: Value = if bytes.is_empty() { Value::Null } else { serde_json::from_slice(&bytes).unwrap() };
            let mut st = state.lock().unwrap();
            st.log.push((method.clone(), path.clone()));
            let response = match (method, path.as_str()) {
                (Method::GET, p) if p == format!("{LEASES}/kuryr-l7-router") => match &st.lease {
                    Some(l) => respond(StatusCode::OK, l),
                    None => respond(StatusCode::NOT_FOUND, &not_found()),
                },
                (Method::POST, p) if p == LEASES => {
                    let mut lease = body;
                    lease["metadata"]["resourceVersion"] = json!("1");
                    st.lease = Some(lease.clone());
                    respond(StatusCode::CREATED, &lease)
                }
                (Method::PATCH, p) if p == format!("{LEASES}/kuryr-l7-router") => {
                    let lease = st.lease.as_mut().expect("patch before create");
                    let spec = lease.as_object_mut().unwrap().entry("spec").or_insert_with(|| json!({}));
                    let spec: &mut Map<String, Value> = spec.as_object_mut().unwrap();
                    for (k, v) in body["spec"].as_object().cloned().unwrap_or_default() {
                        if v.is_null() {
                            spec.remove(&k);
                        } else {
                            spec.insert(k, v);
                        }
                    }
                    respond(StatusCode::OK, lease)
                }
                (m, p) => panic!("unexpected {m} {p}"),
            };
            drop(st);
            send.send_response(response);
        }
    })
}

fn setup() -> (kube::Client, Arc<Mutex<FakeLeases>>) {
    let (svc, handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let state = Arc::new(Mutex::new(FakeLeases::default()));
    fake_api(handle, state.clone());
    (kube::Client::new(svc, "default"), state)
}

fn spec(state: &Mutex<FakeLeases>) -> Value {
    state.lock().unwrap().lease.as_ref().map(|l| l["spec"].clone()).unwrap_or(Value::Null)
}

#[tokio::test]
async fn acquires_a_free_lease_then_releases_it_on_shutdown() {
    let (client, state) = setup();
    let leadership = Leadership::start(client, LeaderSettings::new("kuryr-l7-router", "kuryr", "pod-a")).unwrap();
    let is_leader = leadership.is_leader();
    assert!(!*is_leader.borrow());
    tokio::time::timeout(Duration::from_secs(10), leadership.acquired()).await.expect("lease acquired").unwrap();
    assert!(*is_leader.borrow());
    let held = spec(&state);
    assert_eq!(held["holderIdentity"], "pod-a");
    assert_eq!(held["leaseDurationSeconds"], 15);
    assert!(held["renewTime"].is_string());
    {
        let st = state.lock().unwrap();
        assert!(st.log.iter().any(|(m, _)| *m == Method::POST), "lease created: {:?}", st.log);
    }

    tokio::time::timeout(Duration::from_secs(10), leadership.release()).await.expect("released").unwrap();
    assert!(!*is_leader.borrow(), "is_leader drops before the lease is released");
    let released = spec(&state);
    assert!(released.get("holderIdentity").is_none(), "holder cleared: {released}");
}

#[tokio::test]
async fn a_lease_held_by_another_live_replica_is_not_taken() {
    let (client, state) = setup();
    let now = k8s_openapi::jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string();
    state.lock().unwrap().lease = Some(json!({
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "kuryr-l7-router", "namespace": "kuryr", "resourceVersion": "7"},
        "spec": {"holderIdentity": "pod-b", "leaseDurationSeconds": 15, "acquireTime": now, "renewTime": now}
    }));
    let leadership = Leadership::start(client, LeaderSettings::new("kuryr-l7-router", "kuryr", "pod-a")).unwrap();
    let r = tokio::time::timeout(Duration::from_millis(500), leadership.acquired()).await;
    assert!(r.is_err(), "must not become leader while pod-b's lease is live");
    assert!(!*leadership.is_leader().borrow());
    // Shutdown while standby: returns promptly and leaves pod-b's lease alone.
    tokio::time::timeout(Duration::from_secs(5), leadership.release()).await.expect("released").unwrap();
    assert_eq!(spec(&state)["holderIdentity"], "pod-b");
}
