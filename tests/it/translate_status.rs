//! The answers Octavia cannot give by itself (issue 14 §3): routes whose backend cannot be served
//! answer 503 from a reserved pool instead of falling through to another route of the host, and
//! requests no route matches go to the status responder's 404 pool. Fixture:
//! tests/fixtures/ingress/status/app.yaml.

use std::path::PathBuf;

use kuryr_l7_router::controller::outputs::notice::desired_notices;
use kuryr_l7_router::model::{DesiredRouter, KubeRef, NOT_FOUND_POOL, UNAVAILABLE_POOL};
use kuryr_l7_router::translate::options::StatusResponder;
use kuryr_l7_router::translate::*;

fn inputs() -> Inputs {
    load_manifests(&[PathBuf::from("tests/fixtures/ingress/status")]).unwrap()
}

fn responder() -> StatusResponder {
    StatusResponder {
        namespace: "kuryr-system".into(),
        name: "kuryr-status-responder".into(),
        not_found_port: "not-found".into(),
        unavailable_port: "unavailable".into(),
        server_error_port: "server-error".into(),
    }
}

fn opts(with_responder: bool) -> TranslateOptions {
    TranslateOptions {
        ingress_class: "kuryr".into(),
        status_responder: with_responder.then(responder),
        ..TranslateOptions::default()
    }
}

/// (description, pool) of every policy, in position order.
fn policies(r: &DesiredRouter) -> Vec<(String, String)> {
    r.policies.iter().map(|p| (p.description.clone(), p.pool.clone())).collect()
}

fn pair(d: &str, p: &str) -> (String, String) {
    (d.to_string(), p.to_string())
}

fn members(r: &DesiredRouter, pool: &str) -> Vec<String> {
    r.pools[pool].members.iter().map(|m| format!("{}:{}", m.address, m.protocol_port)).collect()
}

#[test]
fn a_route_to_a_missing_service_answers_503_and_does_not_fall_through() {
    // Without a responder: the route is kept on an empty reserved pool (haproxy answers 503).
    let r = translate(&inputs(), &opts(false));
    let admin = r.policies.iter().find(|p| p.description == "app.example.com Prefix /admin").expect("route kept");
    assert_eq!(admin.pool, UNAVAILABLE_POOL);
    // Longer path first: /admin is matched before app.example.com's Prefix /.
    let root = r.policies.iter().find(|p| p.description == "app.example.com Prefix /").unwrap();
    assert!(admin.position < root.position);
    let pool = &r.pools[UNAVAILABLE_POOL];
    assert!(pool.members.is_empty());
    assert_eq!(pool.service.kind, "Config", "no Service fills it");
    // No responder: nothing answers 404, Octavia's 503 stays (documented fallback).
    assert_eq!(r.default_pool, None);
    assert!(!r.pools.contains_key(NOT_FOUND_POOL));
    let w = r.warnings.iter().find(|w| w.reason == "ServiceNotFound").expect("warning");
    assert_eq!(w.object, KubeRef::new("Ingress", "app", "site"));
    assert!(w.message.ends_with("Service app/admin not found; its requests get HTTP 503"), "{}", w.message);
    // The empty reserved pool is no Service's: no notice for it.
    let notices = desired_notices("router", &r);
    assert!(notices.keys().all(|s| s.kind == "Service" && !s.namespace.is_empty()), "{notices:?}");
}

#[test]
fn every_unservable_backend_answers_503() {
    let mut inp = inputs();
    let site = inp.ingresses.iter_mut().find(|i| i.metadata.name.as_deref() == Some("site")).unwrap();
    let paths = &mut site.spec.as_mut().unwrap().rules.as_mut().unwrap()[0].http.as_mut().unwrap().paths;
    let mut add = |path: &str, backend: serde_json::Value| {
        paths.push(
            serde_json::from_value(serde_json::json!({"path": path, "pathType": "Prefix", "backend": backend}))
                .unwrap(),
        )
    };
    add("/no-port", serde_json::json!({"service": {"name": "web", "port": {"name": "grpc"}}}));
    add("/bucket", serde_json::json!({"resource": {"kind": "StorageBucket", "name": "b"}}));
    add("/ext", serde_json::json!({"service": {"name": "ext", "port": {"number": 80}}}));
    inp.services.push(
        serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"namespace": "app", "name": "ext"},
            "spec": {"type": "ExternalName", "externalName": "example.org", "ports": [{"port": 80}]}
        }))
        .unwrap(),
    );
    let r = translate(&inp, &opts(true));
    for path in ["/admin", "/no-port", "/bucket", "/ext"] {
        let d = format!("app.example.com Prefix {path}");
        let p = r.policies.iter().find(|p| p.description == d).unwrap_or_else(|| panic!("{d} dropped"));
        assert_eq!(p.pool, UNAVAILABLE_POOL, "{d}");
    }
    let reasons: Vec<&str> = r.warnings.iter().map(|w| w.reason.as_str()).collect();
    for reason in ["ServiceNotFound", "ServicePortNotFound", "UnsupportedBackend", "ExternalNameService"] {
        assert!(reasons.contains(&reason), "{reason} missing: {reasons:?}");
    }
}

#[test]
fn with_a_responder_unmatched_requests_get_404_and_unservable_routes_503() {
    let r = translate(&inputs(), &opts(true));
    assert_eq!(r.default_pool.as_deref(), Some(NOT_FOUND_POOL));
    assert!(r.default_pool_owners.is_empty(), "no Ingress set a default backend");
    assert_eq!(
        policies(&r),
        vec![
            pair("api.example.com Prefix /v1", "app_api"),
            // api.example.com has no catch-all and *.example.com covers it: its other paths get 404.
            pair("api.example.com guard: paths without a route get the no-route answer", NOT_FOUND_POOL),
            pair("app.example.com Prefix /admin", UNAVAILABLE_POOL),
            pair("app.example.com Prefix /idle", "app_idle"),
            pair("app.example.com Prefix /", "app_web"),
            pair("*.example.com Prefix /", "app_web"),
        ]
    );
    // The 404 pool replaces the host exclusion rules: no inverted rule anywhere.
    assert!(r.policies.iter().all(|p| p.rules.iter().all(|rule| !rule.invert)));
    // The responder's endpoints fill both reserved pools, one port each, like any Service pool.
    assert_eq!(members(&r, NOT_FOUND_POOL), ["10.0.7.40:8404"]);
    assert_eq!(members(&r, UNAVAILABLE_POOL), ["10.0.7.40:8503"]);
    let responder_ref = KubeRef::new("Service", "kuryr-system", "kuryr-status-responder");
    assert_eq!(r.pools[NOT_FOUND_POOL].service, responder_ref);
    assert_eq!(r.pools[UNAVAILABLE_POOL].service_port, "unavailable");
    // No ready endpoint: the Service keeps its own (empty) pool, haproxy answers 503.
    assert!(r.pools["app_idle"].members.is_empty());
    // The Service handler fills the reserved pools from the responder Service's notice.
    let notices = desired_notices("router", &r);
    assert_eq!(notices[&responder_ref].pools, [NOT_FOUND_POOL, UNAVAILABLE_POOL]);
    assert_eq!(notices[&responder_ref].ingresses, ["app/site"]);
}

#[test]
fn the_reserved_pools_stay_when_the_responder_service_is_missing() {
    let mut inp = inputs();
    inp.services.retain(|s| s.metadata.name.as_deref() != Some("kuryr-status-responder"));
    let with = translate(&inputs(), &opts(true));
    let without = translate(&inp, &opts(true));
    // Same policies (no rewrite of every policy while the responder is deployed), empty pools.
    assert_eq!(policies(&with), policies(&without));
    assert_eq!(without.default_pool.as_deref(), Some(NOT_FOUND_POOL));
    for pool in [NOT_FOUND_POOL, UNAVAILABLE_POOL] {
        assert!(without.pools[pool].members.is_empty());
        assert!(
            without.warnings.iter().any(|w| w.reason == "StatusResponderUnavailable"
                && w.message.contains(pool)
                && w.message.contains("kuryr-system/kuryr-status-responder")),
            "{:?}",
            without.warnings
        );
    }
    // A wrong port name says so.
    let mut o = opts(true);
    o.status_responder.as_mut().unwrap().not_found_port = "nope".into();
    let r = translate(&inputs(), &o);
    let w = r.warnings.iter().find(|w| w.reason == "StatusResponderUnavailable").unwrap();
    assert!(w.message.contains("has no port nope"), "{}", w.message);
    assert!(r.pools[NOT_FOUND_POOL].members.is_empty());
    assert_eq!(members(&r, UNAVAILABLE_POOL), ["10.0.7.40:8503"]);
}

#[test]
fn a_default_backend_still_wins_over_the_404_pool() {
    let mut inp = inputs();
    // The router-wide default backend: an Ingress with only a defaultBackend (one beside host
    // rules catches those hosts only, docs/routing-semantics.md, Tenants).
    let mut catch_all = inp.ingresses.iter().find(|i| i.metadata.name.as_deref() == Some("site")).unwrap().clone();
    catch_all.metadata.name = Some("catch-all".into());
    let spec = catch_all.spec.as_mut().unwrap();
    spec.rules = None;
    spec.tls = None;
    spec.default_backend =
        Some(serde_json::from_value(serde_json::json!({"service": {"name": "api", "port": {"number": 80}}})).unwrap());
    inp.ingresses.push(catch_all);
    let r = translate(&inp, &opts(true));
    assert_eq!(r.default_pool.as_deref(), Some("app_api"));
    // The reserved pools stay (no writes when a default backend comes and goes).
    assert!(r.pools.contains_key(NOT_FOUND_POOL) && r.pools.contains_key(UNAVAILABLE_POOL));
}
