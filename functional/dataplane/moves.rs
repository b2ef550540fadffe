//! A host group moved between two routers of a set, make-before-break, through each router's
//! Octavia-rendered haproxy: in every phase, requests to BOTH routers reach the right Service
//! while that router is meant to serve the host; after `DeleteOld` the old router answers the
//! status responder's 404 for it, and the other group never left the old router.
//!
//! The routes of each phase come from the controller's own move path
//! (`set_moves::place_with_moves`, `set_moves::homes`, `split_by_homes`: what a Sync of the set
//! writes); the phases step on with `MovePlan::advance` over a clock of one-second graces.

use super::converge;
use super::status_answers::{Responder, send_requests};
use crate::common::{cleanup, enabled, local_router};
use kuryr_l7_router::controller::router_set::moves::{Growth, MoveAsk, Moves, homes, place_with_moves};
use kuryr_l7_router::driver::router::Router;
use kuryr_l7_router::model::DesiredRouter;
use kuryr_l7_router::placement::moves::MoveObservation;
use kuryr_l7_router::placement::split::{SplitParams, split_by_homes};
use kuryr_l7_router::placement::{Capacity, MovePhase, MovePlan, MoveTimings, Placement};
use kuryr_l7_router::translate::manifest::load_str;
use kuryr_l7_router::translate::options::StatusResponder;
use kuryr_l7_router::translate::{Inputs, TranslateOptions, translate};
use serde_json::json;
use std::path::Path;

const SHOP: &str = r#"
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: kuryr}
spec: {controller: openstack.org/kuryr-l7-router}
---
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Service, metadata: {name: svc-a, namespace: shop}, spec: {ports: [{port: 80}]}}
- {apiVersion: v1, kind: Service, metadata: {name: svc-b, namespace: shop}, spec: {ports: [{port: 80}]}}
- apiVersion: v1
  kind: Service
  metadata: {name: kuryr-status-responder, namespace: kuryr-system}
  spec: {ports: [{name: not-found, port: 8404}, {name: unavailable, port: 8503}]}
- apiVersion: discovery.k8s.io/v1
  kind: EndpointSlice
  metadata: {name: r, namespace: kuryr-system, labels: {kubernetes.io/service-name: kuryr-status-responder}}
  addressType: IPv4
  ports: [{name: not-found, port: 8404}, {name: unavailable, port: 8503}]
  endpoints: [{addresses: ["10.0.9.9"]}]
- apiVersion: discovery.k8s.io/v1
  kind: EndpointSlice
  metadata: {name: a, namespace: shop, labels: {kubernetes.io/service-name: svc-a}}
  addressType: IPv4
  ports: [{port: 8080}]
  endpoints: [{addresses: ["10.0.9.1"]}]
- apiVersion: discovery.k8s.io/v1
  kind: EndpointSlice
  metadata: {name: b, namespace: shop, labels: {kubernetes.io/service-name: svc-b}}
  addressType: IPv4
  ports: [{port: 8080}]
  endpoints: [{addresses: ["10.0.9.2"]}]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: a, namespace: shop, creationTimestamp: "2024-01-01T00:00:00Z"}
spec:
  ingressClassName: kuryr
  rules:
  - host: a.example.com
    http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: svc-a, port: {number: 80}}}}]}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: b, namespace: shop, creationTimestamp: "2024-01-02T00:00:00Z"}
spec:
  ingressClassName: kuryr
  rules:
  - host: b.example.com
    http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: svc-b, port: {number: 80}}}}]}
"#;

fn options() -> TranslateOptions {
    TranslateOptions {
        ingress_class: "kuryr".into(),
        status_responder: Some(StatusResponder {
            namespace: "kuryr-system".into(),
            name: "kuryr-status-responder".into(),
            not_found_port: "not-found".into(),
            unavailable_port: "unavailable".into(),
            server_error_port: "server-error".into(),
        }),
        ..TranslateOptions::default()
    }
}

/// Both routers converged to their part in the move's phase (the set's routers write in
/// parallel, as the controller's writers do).
async fn converge_both(
    routers: &[Router; 2],
    desired: &DesiredRouter,
    placement: &Placement,
    moves: &Moves,
) -> Vec<(String, DesiredRouter)> {
    let parts = split_by_homes(desired, &homes(placement, moves));
    let want: Vec<DesiredRouter> = (0..2).map(|i| parts.get(&i).cloned().expect("both routers in a move")).collect();
    let (r0, r1) = tokio::join!(converge(&routers[0], &want[0]), converge(&routers[1], &want[1]));
    vec![(r0.lb_id, want[0].clone()), (r1.lb_id, want[1].clone())]
}

/// Sends a and b's requests to both routers: `expect[i]` is what router i must answer for
/// (a.example.com, b.example.com).
fn check(phase: &str, responder: &Responder, lbs: &[(String, DesiredRouter)], expect: [[&str; 2]; 2]) {
    let requests = [json!({"host": "a.example.com", "path": "/x"}), json!({"host": "b.example.com", "path": "/y"})];
    let mut bad = Vec::new();
    for (i, (lb_id, part)) in lbs.iter().enumerate() {
        let results = tokio::task::block_in_place(|| send_requests(lb_id, part, Some(responder), &requests));
        for (q, (res, want)) in requests.iter().zip(results.iter().zip(expect[i])) {
            let got = res["backend"].as_str().map_or_else(|| res["status"].to_string(), str::to_string);
            let ok = got == want && (want != "404" || res["body"].as_str().unwrap_or_default().contains("no route"));
            println!("{} {phase}: router {i} {} -> {got} (expected {want})", if ok { "ok " } else { "BAD" }, q["host"]);
            if !ok {
                bad.push(format!("{phase}: router {i} {} -> {got}, expected {want}", q["host"]));
            }
        }
    }
    assert!(bad.is_empty(), "{} request(s) wrong:\n{}", bad.len(), bad.join("\n"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_moved_group_is_served_in_every_phase_by_both_routers_haproxy() {
    if !enabled() {
        return;
    }
    let mut inputs = Inputs::default();
    load_str(SHOP, Path::new("moves.yaml"), &mut inputs).unwrap();
    let desired = translate(&inputs, &options());
    assert!(desired.warnings.is_empty(), "{:?}", desired.warnings);
    let responder = Responder::start();
    let mut routers = [local_router("moves", "src").await, local_router("moves", "dst").await];
    // One create call with every child, as the controller's set creates its routers: a create
    // child by child takes minutes on the shared 2-core stack.
    for r in &mut routers {
        r.spec_mut().fully_populated_create = true;
    }
    let (for_test, for_cleanup) = (routers.clone(), routers.clone());
    let result = tokio::spawn(async move {
        let routers = for_test;
        let timings = MoveTimings { dns_grace_secs: 1, old_routes_grace_secs: 1 };
        let params = SplitParams {
            capacity: Capacity { max_policies: 10, max_certificates: 10 },
            current: [("a.example.com".to_string(), 0), ("b.example.com".to_string(), 0)].into(),
            routers: Default::default(),
            now: 1_000,
            empty_grace_secs: 3600,
        };
        let ask = [MoveAsk { ingress: "shop/a".into(), target: Ok(1) }];
        let started = place_with_moves(&desired, &params, Moves::new(), &ask, params.now, &Growth::default());
        assert_eq!(started.started.len(), 1, "{:?}", started.refused);
        let mut plan: MovePlan = started.started[0].clone();
        let seen = |target_active, source_cleared| MoveObservation { target_active, source_cleared };
        let mut now = params.now;
        let both = [["svc-a", "svc-b"], ["svc-a", "404"]];
        // CreateOnTarget: the target gets a's routes; the source keeps them.
        let lbs = converge_both(&routers, &desired, &started.placement, &started.moves).await;
        check("CreateOnTarget", &responder, &lbs, both);
        let step = |plan: &mut MovePlan, now: u64, s: MoveObservation| {
            *plan = plan.advance(now, s, timings);
            Moves::from([(plan.group.clone(), plan.clone())])
        };
        for (name, observed, wait) in [("PublishBoth", seen(true, false), 0), ("PublishTarget", seen(true, false), 1)] {
            now += wait;
            let moves = step(&mut plan, now, observed);
            assert_eq!(format!("{:?}", plan.phase).split(' ').next(), Some(name));
            let again = place_with_moves(&desired, &params, moves.clone(), &[], now, &Growth::default());
            let lbs = converge_both(&routers, &desired, &again.placement, &again.moves).await;
            check(name, &responder, &lbs, both);
        }
        now += 1;
        let moves = step(&mut plan, now, seen(true, false));
        assert!(matches!(plan.phase, MovePhase::DeleteOld { .. }), "{:?}", plan.phase);
        let last = place_with_moves(&desired, &params, moves, &[], now, &Growth::default());
        let lbs = converge_both(&routers, &desired, &last.placement, &last.moves).await;
        // The old router no longer routes a (the responder's 404); b never moved.
        check("DeleteOld", &responder, &lbs, [["404", "svc-b"], ["svc-a", "404"]]);
        step(&mut plan, now, seen(true, true));
        assert!(matches!(plan.phase, MovePhase::Done { .. }), "{:?}", plan.phase);
    })
    .await;
    let [r0, r1] = for_cleanup;
    tokio::join!(cleanup(&r0), cleanup(&r1));
    if let Err(e) = result {
        std::panic::resume_unwind(e.into_panic());
    }
}
