//! Every Kubernetes write of the controller, against a mock API server (the ApiServerVerifier
//! pattern of kube-rs/controller-rs): a spawned task takes each request from
//! `tower_test::mock`, asserts method, path+query, content type and JSON body, and answers.

use http::{Method, Request, Response, StatusCode};
use k8s_openapi::api::core::v1::{ObjectReference, Service};
use k8s_openapi::api::networking::v1::Ingress;
use kube::api::Api;
use kube::client::Body;
use kuryr_l7_router::controller::FINALIZER;
use kuryr_l7_router::controller::outputs::events::{DEFAULT_DEDUP_WINDOW, EventPublisher, Published, UserEvent};
use kuryr_l7_router::controller::outputs::notice::{NoticeChange, ServiceNotice, notice_annotation};
use kuryr_l7_router::controller::outputs::patches as k8s;
use kuryr_l7_router::model::KubeRef;
use serde_json::{Value, json};
use std::net::IpAddr;
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;

type Handle = tower_test::mock::Handle<Request<Body>, Response<Body>>;

const FM: &str = "fieldManager=kuryr-l7-router";

fn mock_client() -> (kube::Client, Handle) {
    let (svc, handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    (kube::Client::new(svc, "default"), handle)
}

/// The Ingresses of namespace `shop` on a mock client, and the mock's handle.
fn shop_ingresses() -> (Api<Ingress>, Handle) {
    let (client, handle) = mock_client();
    (Api::namespaced(client, "shop"), handle)
}

fn fixture(name: &str) -> Value {
    let path = format!("{}/tests/fixtures/k8s/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn ingress() -> Ingress {
    serde_json::from_value(fixture("ingress.json")).unwrap()
}

/// One expected request and the answer to give.
struct Expect {
    method: Method,
    /// Path and query, exactly.
    uri: String,
    content_type: Option<&'static str>,
    /// Expected JSON body; `None` to skip the comparison (the body is still returned).
    body: Option<Value>,
    status: StatusCode,
    /// Response body; `None` echoes the request body (for create/patch of whole objects).
    response: Option<Value>,
}

impl Expect {
    fn new(method: Method, uri: impl Into<String>) -> Self {
        Self { method, uri: uri.into(), content_type: None, body: None, status: StatusCode::OK, response: None }
    }
    fn content_type(mut self, ct: &'static str) -> Self {
        self.content_type = Some(ct);
        self
    }
    fn body(mut self, v: Value) -> Self {
        self.body = Some(v);
        self
    }
    fn respond(mut self, status: StatusCode, v: Value) -> Self {
        self.status = status;
        self.response = Some(v);
        self
    }
}

/// A JSON patch (RFC 6902) of `uri` with exactly `ops`, answered 200 with `answer`.
fn json_patch(uri: String, ops: Value, answer: Value) -> Expect {
    Expect::new(Method::PATCH, uri)
        .content_type("application/json-patch+json")
        .body(ops)
        .respond(StatusCode::OK, answer)
}

/// Takes the next request, checks it against `exp`, answers, and returns its JSON body.
async fn serve(handle: &mut Handle, exp: Expect) -> Value {
    let (request, send) = handle.next_request().await.expect("request never came");
    assert_eq!(request.method(), exp.method, "method of {}", exp.uri);
    assert_eq!(request.uri().to_string(), exp.uri, "uri");
    if let Some(ct) = exp.content_type {
        assert_eq!(request.headers().get(http::header::CONTENT_TYPE).unwrap(), ct, "content type of {}", exp.uri);
    }
    let bytes = request.into_body().collect_bytes().await.unwrap();
    let body: Value = if bytes.is_empty() { Value::Null } else { serde_json::from_slice(&bytes).unwrap() };
    if let Some(want) = &exp.body {
        assert_eq!(&body, want, "body of {}", exp.uri);
    }
    let response = exp.response.unwrap_or_else(|| body.clone());
    send.send_response(
        Response::builder().status(exp.status).body(Body::from(serde_json::to_vec(&response).unwrap())).unwrap(),
    );
    body
}

/// Serves `expects` in order on a spawned task and returns the request bodies seen.
fn verifier(mut handle: Handle, expects: Vec<Expect>) -> JoinHandle<Vec<Value>> {
    tokio::spawn(async move {
        let mut seen = Vec::new();
        for exp in expects {
            seen.push(serve(&mut handle, exp).await);
        }
        seen
    })
}

async fn finish(v: JoinHandle<Vec<Value>>) -> Vec<Value> {
    tokio::time::timeout(Duration::from_secs(5), v).await.expect("verifier timed out").expect("verifier panicked")
}

fn status_error(code: u16, reason: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": reason, "reason": reason, "code": code})
}

const ING_PATH: &str = "/apis/networking.k8s.io/v1/namespaces/shop/ingresses/web";

// ---------------------------------------------------------------- finalizer

#[tokio::test]
async fn add_finalizer_appends_with_a_test_of_the_current_list() {
    let (api, handle) = shop_ingresses();
    let mut patched = fixture("ingress.json");
    patched["metadata"]["finalizers"] = json!(["example.com/other", FINALIZER]);
    let v = verifier(
        handle,
        vec![json_patch(
            format!("{ING_PATH}?&{FM}"),
            json!([
                {"op": "test", "path": "/metadata/finalizers", "value": ["example.com/other"]},
                {"op": "add", "path": "/metadata/finalizers/-", "value": FINALIZER},
            ]),
            patched,
        )],
    );
    let out = k8s::add_finalizer(&api, &ingress()).await.unwrap();
    assert!(k8s::has_finalizer(&out));
    finish(v).await;
}

#[tokio::test]
async fn add_finalizer_creates_the_list_when_absent() {
    let (api, handle) = shop_ingresses();
    let mut ing = ingress();
    ing.metadata.finalizers = None;
    let mut patched = fixture("ingress.json");
    patched["metadata"]["finalizers"] = json!([FINALIZER]);
    let v = verifier(
        handle,
        vec![json_patch(
            format!("{ING_PATH}?&{FM}"),
            json!([
                {"op": "test", "path": "/metadata/finalizers", "value": null},
                {"op": "add", "path": "/metadata/finalizers", "value": [FINALIZER]},
            ]),
            patched,
        )],
    );
    k8s::add_finalizer(&api, &ing).await.unwrap();
    finish(v).await;
}

#[tokio::test]
async fn add_finalizer_conflict_is_an_error_for_retry() {
    let (api, handle) = shop_ingresses();
    let v = verifier(
        handle,
        vec![
            Expect::new(Method::PATCH, format!("{ING_PATH}?&{FM}"))
                .respond(StatusCode::UNPROCESSABLE_ENTITY, status_error(422, "Invalid")),
        ],
    );
    let err = k8s::add_finalizer(&api, &ingress()).await.unwrap_err();
    assert_eq!(err.metric_label(), "kube_error");
    finish(v).await;
}

#[tokio::test]
async fn add_finalizer_is_a_no_op_when_present() {
    let (api, handle) = shop_ingresses();
    drop(handle); // any request would now fail
    let mut ing = ingress();
    ing.metadata.finalizers = Some(vec![FINALIZER.into()]);
    assert_eq!(k8s::add_finalizer(&api, &ing).await.unwrap(), ing);
}

#[tokio::test]
async fn remove_finalizer_removes_by_index_after_a_test() {
    let (api, handle) = shop_ingresses();
    let mut ing = ingress();
    ing.metadata.finalizers = Some(vec!["example.com/other".into(), FINALIZER.into()]);
    let v = verifier(
        handle,
        vec![json_patch(
            format!("{ING_PATH}?&{FM}"),
            json!([
                {"op": "test", "path": "/metadata/finalizers/1", "value": FINALIZER},
                {"op": "remove", "path": "/metadata/finalizers/1"},
            ]),
            fixture("ingress.json"),
        )],
    );
    k8s::remove_finalizer(&api, &ing).await.unwrap();
    finish(v).await;
}

#[tokio::test]
async fn remove_finalizer_of_a_gone_object_is_success() {
    let (api, handle) = shop_ingresses();
    let mut ing = ingress();
    ing.metadata.finalizers = Some(vec![FINALIZER.into()]);
    let v = verifier(
        handle,
        vec![
            Expect::new(Method::PATCH, format!("{ING_PATH}?&{FM}"))
                .respond(StatusCode::NOT_FOUND, status_error(404, "NotFound")),
        ],
    );
    k8s::remove_finalizer(&api, &ing).await.unwrap();
    finish(v).await;
}

#[tokio::test]
async fn remove_finalizer_is_a_no_op_when_absent() {
    let (api, handle) = shop_ingresses();
    drop(handle);
    k8s::remove_finalizer(&api, &ingress()).await.unwrap();
}

// ---------------------------------------------------------------- Service notice

const SVC_PATH: &str = "/api/v1/namespaces/shop/services/web";

#[tokio::test]
async fn service_notice_is_set_by_merge_patch() {
    let (client, handle) = mock_client();
    let api: Api<Service> = Api::namespaced(client, "shop");
    let notice = ServiceNotice {
        router: "kuryr-l7-router".into(),
        pools: vec!["shop_web_http".into()],
        ingresses: vec!["shop/web".into()],
    };
    let annotation = r#"{"router":"kuryr-l7-router","pools":["shop_web_http"],"ingresses":["shop/web"]}"#;
    let key = notice_annotation("kuryr-l7-router");
    assert_eq!(key, "kuryr-l7-router.openstack.org/kuryr-l7-router");
    let mut patched = fixture("service.json");
    patched["metadata"]["annotations"][&key] = json!(annotation);
    let v = verifier(
        handle,
        vec![
            Expect::new(Method::PATCH, format!("{SVC_PATH}?&{FM}"))
                .content_type("application/merge-patch+json")
                .body(json!({"metadata": {"annotations": {&key: annotation}}}))
                .respond(StatusCode::OK, patched),
        ],
    );
    let change = NoticeChange { service: web(), notice: Some(notice.clone()), drop_legacy: false };
    let svc = k8s::patch_service_notice(&api, "kuryr-l7-router", &change).await.unwrap();
    assert_eq!(ServiceNotice::from_service(&svc, "kuryr-l7-router").unwrap(), Some(notice));
    let current = ServiceNotice::from_service(&svc, "kuryr-l7-router").unwrap();
    assert!(!k8s::notice_needs_update(&svc, "kuryr-l7-router", current.as_ref()));
    finish(v).await;
}

fn web() -> KubeRef {
    KubeRef::new("Service", "shop", "web")
}

#[tokio::test]
async fn service_notice_is_removed_with_null_and_the_legacy_one_with_it() {
    let (client, handle) = mock_client();
    let api: Api<Service> = Api::namespaced(client, "shop");
    let v = verifier(
        handle,
        vec![
            Expect::new(Method::PATCH, format!("{SVC_PATH}?&{FM}"))
                .content_type("application/merge-patch+json")
                .body(json!({"metadata": {"annotations": {
                    "kuryr-l7-router.openstack.org/r1": null, "openstack.org/kuryr-l7-router": null}}}))
                .respond(StatusCode::OK, fixture("service.json")),
        ],
    );
    let change = NoticeChange { service: web(), notice: None, drop_legacy: true };
    let svc = k8s::patch_service_notice(&api, "r1", &change).await.unwrap();
    assert_eq!(ServiceNotice::from_service(&svc, "r1").unwrap(), None);
    finish(v).await;
}

// ---------------------------------------------------------------- Ingress status

#[tokio::test]
async fn ingress_status_is_patched_through_the_status_subresource() {
    let (api, handle) = shop_ingresses();
    let ip: IpAddr = "172.24.4.100".parse().unwrap();
    let mut patched = fixture("ingress.json");
    patched["status"] = json!({"loadBalancer": {"ingress": [{"ip": "172.24.4.100"}]}});
    let v = verifier(
        handle,
        vec![
            Expect::new(Method::PATCH, format!("{ING_PATH}/status?&{FM}"))
                .content_type("application/merge-patch+json")
                .body(json!({"status": {"loadBalancer": {"ingress": [{"ip": "172.24.4.100"}]}}}))
                .respond(StatusCode::OK, patched),
        ],
    );
    let out = k8s::patch_ingress_status(&api, &ingress(), Some(ip)).await.unwrap().expect("written");
    assert!(!k8s::status_needs_update(&out, Some(ip)));
    finish(v).await;
}

#[tokio::test]
async fn ingress_status_is_cleared_with_null() {
    let (api, handle) = shop_ingresses();
    let mut current = fixture("ingress.json");
    current["status"] = json!({"loadBalancer": {"ingress": [{"ip": "172.24.4.100"}]}});
    let ing: Ingress = serde_json::from_value(current).unwrap();
    let v = verifier(
        handle,
        vec![
            Expect::new(Method::PATCH, format!("{ING_PATH}/status?&{FM}"))
                .content_type("application/merge-patch+json")
                .body(json!({"status": {"loadBalancer": {"ingress": null}}}))
                .respond(StatusCode::OK, fixture("ingress.json")),
        ],
    );
    k8s::patch_ingress_status(&api, &ing, None).await.unwrap().expect("written");
    finish(v).await;
}

#[tokio::test]
async fn ingress_status_write_is_skipped_when_equal() {
    let (api, handle) = shop_ingresses();
    drop(handle);
    let mut current = fixture("ingress.json");
    current["status"] = json!({"loadBalancer": {"ingress": [{"ip": "172.24.4.100"}]}});
    let ing: Ingress = serde_json::from_value(current).unwrap();
    assert_eq!(k8s::patch_ingress_status(&api, &ing, Some("172.24.4.100".parse().unwrap())).await.unwrap(), None);
}

// ---------------------------------------------------------------- Events

const EVENTS_PATH: &str = "/apis/events.k8s.io/v1/namespaces/shop/events";

fn ingress_ref() -> ObjectReference {
    use kube::Resource;
    ingress().object_ref(&())
}

fn assert_event(body: &Value, type_: &str, reason: &str, note: &str) {
    assert_eq!(body["apiVersion"], "events.k8s.io/v1");
    assert_eq!(body["kind"], "Event");
    assert_eq!(body["type"], type_);
    assert_eq!(body["reason"], reason);
    assert_eq!(body["note"], note);
    assert_eq!(body["action"], "Sync");
    assert_eq!(body["reportingController"], "kuryr-l7-router");
    assert_eq!(body["reportingInstance"], "pod-a");
    assert_eq!(body["metadata"]["namespace"], "shop");
    assert!(body["metadata"]["name"].as_str().unwrap().starts_with("web."));
    assert!(body["eventTime"].is_string());
    assert_eq!(
        body["regarding"],
        json!({
            "apiVersion": "networking.k8s.io/v1",
            "kind": "Ingress",
            "name": "web",
            "namespace": "shop",
            "uid": "7f1c1f4e-3c1a-4d0e-9a57-0a0b0c0d0e0f",
        })
    );
}

#[tokio::test]
async fn event_is_created_then_repeats_are_suppressed_then_aggregated_as_a_series() {
    let (client, mut handle) = mock_client();
    let publisher = EventPublisher::new(client, Some("pod-a".into()), DEFAULT_DEDUP_WINDOW);
    let note = "path \"/a[\" of rule 0 is not a valid regex";
    let warning = UserEvent::warning("InvalidPath", "Sync", note);
    let regarding = ingress_ref();
    let t0 = Instant::now();

    let (sent, created) = tokio::join!(
        publisher.publish_at(&warning, &regarding, t0),
        serve(&mut handle, Expect::new(Method::POST, format!("{EVENTS_PATH}?")).content_type("application/json")),
    );
    assert_eq!(sent.unwrap(), Published::Sent);
    assert_event(&created, "Warning", "InvalidPath", note);
    assert!(created.get("series").is_none());
    let name = created["metadata"]["name"].as_str().unwrap().to_string();

    // Same object, reason and message within the window: nothing is sent (the handle would
    // otherwise have a pending request and the publish would hang).
    for minute in 1..5 {
        let t = t0 + Duration::from_secs(60 * minute);
        let r = tokio::time::timeout(Duration::from_secs(1), publisher.publish_at(&warning, &regarding, t)).await;
        assert_eq!(r.expect("no request expected").unwrap(), Published::Suppressed);
    }

    // After the window (and within kube's 6 minutes): kube's Recorder PATCHes the first Event
    // into a series, keeping its name and note.
    let (sent, series) = tokio::join!(
        publisher.publish_at(&warning, &regarding, t0 + DEFAULT_DEDUP_WINDOW),
        serve(
            &mut handle,
            Expect::new(Method::PATCH, format!("{EVENTS_PATH}/{name}?")).content_type("application/merge-patch+json")
        ),
    );
    assert_eq!(sent.unwrap(), Published::Sent);
    assert_event(&series, "Warning", "InvalidPath", note);
    assert_eq!(series["metadata"]["name"], name.as_str());
    assert_eq!(series["series"]["count"], 2);
    assert!(series["series"]["lastObservedTime"].is_string());

    // Same reason, new message: a new Event with the new message, not the old series.
    let other = UserEvent::warning("InvalidPath", "Sync", "another message");
    let (sent, created2) = tokio::join!(
        publisher.publish_at(&other, &regarding, t0 + DEFAULT_DEDUP_WINDOW),
        serve(&mut handle, Expect::new(Method::POST, format!("{EVENTS_PATH}?"))),
    );
    assert_eq!(sent.unwrap(), Published::Sent);
    assert_event(&created2, "Warning", "InvalidPath", "another message");
    assert!(created2.get("series").is_none());
}

#[tokio::test]
async fn normal_event_and_a_failed_send_is_not_suppressed() {
    let (client, mut handle) = mock_client();
    let publisher = EventPublisher::new(client, Some("pod-a".into()), DEFAULT_DEDUP_WINDOW);
    let synced = UserEvent::normal("Synced", "Sync", "2 policies on router kuryr-l7-router");
    let regarding = ingress_ref();
    let t0 = Instant::now();

    let (sent, _) = tokio::join!(
        publisher.publish_at(&synced, &regarding, t0),
        serve(
            &mut handle,
            Expect::new(Method::POST, format!("{EVENTS_PATH}?"))
                .respond(StatusCode::INTERNAL_SERVER_ERROR, status_error(500, "InternalError"))
        ),
    );
    assert!(sent.is_err());
    let (sent, created) = tokio::join!(
        publisher.publish_at(&synced, &regarding, t0 + Duration::from_secs(1)),
        serve(&mut handle, Expect::new(Method::POST, format!("{EVENTS_PATH}?"))),
    );
    assert_eq!(sent.unwrap(), Published::Sent);
    assert_event(&created, "Normal", "Synced", "2 policies on router kuryr-l7-router");
}

// ---------------------------------------------------------------- kube's finalizer helper

/// Our finalizer patches are byte-for-byte those of `kube::runtime::finalizer`, so the Ingress
/// handler may use either (the helper for delete, ours for "class changed away").
#[tokio::test]
async fn kube_finalizer_helper_sends_the_same_add_patch() {
    use kube::runtime::controller::Action;
    use kube::runtime::finalizer::finalizer;
    let (api, handle) = shop_ingresses();
    let ing = ingress();
    let v = verifier(
        handle,
        vec![json_patch(format!("{ING_PATH}?"), k8s::add_finalizer_patch(&ing), fixture("ingress.json"))],
    );
    finalizer(&api, FINALIZER, std::sync::Arc::new(ing), |_| async { Ok::<_, std::io::Error>(Action::await_change()) })
        .await
        .unwrap();
    finish(v).await;
}

#[tokio::test]
async fn kube_finalizer_helper_sends_the_same_remove_patch() {
    use kube::runtime::controller::Action;
    use kube::runtime::finalizer::{Event, finalizer};
    let (api, handle) = shop_ingresses();
    let mut ing = ingress();
    ing.metadata.finalizers = Some(vec!["example.com/other".into(), FINALIZER.into()]);
    ing.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(Default::default()));
    let v = verifier(
        handle,
        vec![json_patch(format!("{ING_PATH}?"), k8s::remove_finalizer_patch(&ing).unwrap(), fixture("ingress.json"))],
    );
    finalizer(&api, FINALIZER, std::sync::Arc::new(ing), |ev| async move {
        assert!(matches!(ev, Event::Cleanup(_)));
        Ok::<_, std::io::Error>(Action::await_change())
    })
    .await
    .unwrap();
    finish(v).await;
}
