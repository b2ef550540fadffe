use super::*;

fn t(s: &str) -> Time {
    Time(s.parse().unwrap())
}

fn gw(accepted: Cond, attached: i32) -> GatewayOutcome {
    GatewayOutcome {
        namespace: "infra".into(),
        name: "gw".into(),
        generation: Some(2),
        conditions: vec![accepted, Cond::no("Programmed", "Pending", "waiting")],
        addresses: vec![],
        listeners: vec![ListenerOutcome {
            name: "http".into(),
            supported_kinds: vec![],
            attached_routes: attached,
            conditions: vec![Cond::yes("Accepted", "Accepted", "ok")],
        }],
        attached_listener_sets: 0,
    }
}

#[test]
fn conditions_carry_generation_and_keep_their_transition_time_while_unchanged() {
    let first = render_gateway(&gw(Cond::yes("Accepted", "Accepted", "ok"), 0), None, &t("2026-01-01T00:00:00Z"));
    assert_eq!(first.conditions[0].observed_generation, Some(2));
    assert_eq!(first.listeners[0].conditions[0].observed_generation, Some(2));
    let later =
        render_gateway(&gw(Cond::yes("Accepted", "Accepted", "ok"), 0), Some(&first), &t("2026-02-01T00:00:00Z"));
    assert_eq!(later.conditions[0].last_transition_time, t("2026-01-01T00:00:00Z"));
    assert!(unchanged(Some(&first), &later), "same status: no write");
    let flipped = render_gateway(
        &gw(Cond::no("Accepted", "ListenersNotValid", "no"), 0),
        Some(&first),
        &t("2026-02-01T00:00:00Z"),
    );
    assert_eq!(flipped.conditions[0].last_transition_time, t("2026-02-01T00:00:00Z"));
    assert!(!unchanged(Some(&first), &flipped));
}

#[test]
fn any_field_change_but_time_needs_a_write() {
    let now = t("2026-01-01T00:00:00Z");
    let a = render_gateway(&gw(Cond::yes("Accepted", "Accepted", "ok"), 0), None, &now);
    let b = render_gateway(&gw(Cond::yes("Accepted", "Accepted", "ok"), 1), Some(&a), &now);
    assert!(!unchanged(Some(&a), &b), "attachedRoutes changed");
    let mut g = gw(Cond::yes("Accepted", "Accepted", "ok"), 0);
    g.generation = Some(3);
    assert!(!unchanged(Some(&a), &render_gateway(&g, Some(&a), &now)), "observedGeneration changed");
    assert!(!unchanged(None, &a), "no status yet");
}

#[test]
fn class_declares_features_only_when_accepted() {
    let now = t("2026-01-01T00:00:00Z");
    let ok = ClassOutcome { name: "c".into(), generation: Some(1), accepted: Cond::yes("Accepted", "Accepted", "ok") };
    let s = render_class(&ok, None, &now);
    assert_eq!(s.conditions[0].status, "True");
    let names: Vec<&str> = s.supported_features.iter().map(|f| f.name.as_str()).collect();
    assert!(names.contains(&"HTTPRoute") && names.contains(&"HTTPRoute308RedirectStatusCode"));
    assert!(!names.contains(&"HTTPRouteMethodMatching") && !names.contains(&"HTTPRouteQueryParamMatching"));
    // An HTTP listener per port: a listener on 8080 beside one on 80 is served.
    assert!(names.contains(&"GatewayPort8080"), "{names:?}");
    // Client certificate validation, MANDATORY only: Octavia's OPTIONAL refuses a certificate of
    // another CA, which the InsecureFallback test expects served.
    assert!(names.contains(&"GatewayFrontendClientCertificateValidation"), "{names:?}");
    assert!(!names.contains(&"GatewayFrontendClientCertificateValidationInsecureFallback"), "{names:?}");
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted, "the API lists features sorted");
    let bad = ClassOutcome { accepted: Cond::no("Accepted", "InvalidParameters", "x"), ..ok };
    assert!(render_class(&bad, None, &now).supported_features.is_empty());
}

#[test]
fn route_status_replaces_only_our_parent_entries() {
    let now = t("2026-01-01T00:00:00Z");
    let theirs = RouteParentStatus {
        parent_ref: ParentReference { name: "other-gw".into(), ..Default::default() },
        controller_name: "example.com/other".into(),
        conditions: vec![],
    };
    let stale_ours = RouteParentStatus {
        parent_ref: ParentReference { name: "removed-gw".into(), ..Default::default() },
        controller_name: CONTROLLER_NAME.into(),
        conditions: vec![],
    };
    let old = HTTPRouteStatus { parents: vec![theirs.clone(), stale_ours] };
    let o = RouteOutcome {
        namespace: "n".into(),
        name: "r".into(),
        generation: Some(4),
        parents: vec![ParentOutcome {
            parent_ref: ParentReference { name: "gw".into(), ..Default::default() },
            conditions: vec![Cond::yes("Accepted", "Accepted", "ok"), Cond::yes("ResolvedRefs", "ResolvedRefs", "ok")],
        }],
    };
    let s = render_route(&o, Some(&old), &now);
    assert_eq!(s.parents.len(), 2);
    assert_eq!(s.parents[0], theirs);
    assert_eq!(s.parents[1].parent_ref.name, "gw");
    assert_eq!(s.parents[1].controller_name, CONTROLLER_NAME);
    assert_eq!(s.parents[1].conditions[1].observed_generation, Some(4));
}
