use super::*;
use crate::placement::MoveTimings;
use crate::placement::moves::MoveObservation;

fn ingress(name: &str, hosts: &[&str], annotations: &[(&str, &str)]) -> Ingress {
    let rules: Vec<serde_json::Value> = hosts.iter().map(|h| serde_json::json!({"host": h})).collect();
    let ann: serde_json::Map<String, serde_json::Value> =
        annotations.iter().map(|(k, v)| (k.to_string(), serde_json::Value::from(*v))).collect();
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "namespace": "shop", "annotations": ann},
        "spec": {"rules": rules}}))
    .unwrap()
}

fn plan(phase: MovePhase) -> MovePlan {
    MovePlan { group: "a.com".into(), hosts: ["a.com".to_string()].into(), from: 0, to: 1, phase }
}

/// The record keeps the phase and the time it was entered: a controller restarted in the middle
/// of a grace resumes it where it was, neither restarting nor shortening it.
#[test]
fn a_recorded_move_resumes_with_its_clock() {
    let t = MoveTimings { dns_grace_secs: 60, old_routes_grace_secs: 60 };
    let before = plan(MovePhase::PublishBoth { since: 1_000 });
    let record = serde_json::to_string(&before).unwrap();
    let ing = ingress("a", &["a.com"], &[(MOVE_ANNOTATION, &record)]);
    let resumed = recorded_moves([&ing]);
    assert_eq!(resumed.get("a.com"), Some(&before));
    let seen = MoveObservation::default();
    // 59 s after the phase was entered (the restart took part of the grace): still both.
    assert_eq!(resumed["a.com"].advance(1_059, seen, t).phase, MovePhase::PublishBoth { since: 1_000 });
    assert_eq!(resumed["a.com"].advance(1_060, seen, t).phase, MovePhase::PublishTarget { since: 1_060 });
}

/// Asks are read from the annotation; a name outside the set is refused with a clear reason.
#[test]
fn asks_name_a_router_of_the_set() {
    let ok = ingress("a", &["a.com"], &[(MOVE_TO_ANNOTATION, "edge-3")]);
    let bad = ingress("b", &["b.com"], &[(MOVE_TO_ANNOTATION, "other")]);
    let none = ingress("c", &["c.com"], &[]);
    let asks = move_asks("edge", [&ok, &bad, &none]);
    assert_eq!(asks.len(), 2);
    assert_eq!(asks[0], MoveAsk { ingress: "shop/a".into(), target: Ok(2) });
    let why = asks[1].target.clone().unwrap_err();
    assert!(why.contains("\"other\"") && why.contains("edge-N"), "{why}");
}

/// Until the old routes are deleted the group's hosts are on both routers, afterwards on the
/// target only.
#[test]
fn homes_keep_the_source_until_delete_old() {
    let placement = crate::placement::place(&crate::placement::PlacementInput {
        claims: vec![crate::placement::IngressClaim {
            ingress: "shop/a".into(),
            hosts: vec!["a.com".into()],
            policies: 1,
            certificates: Default::default(),
        }],
        shared: Default::default(),
        capacity: crate::placement::Capacity { max_policies: 10, max_certificates: 10 },
        current: [("a.com".to_string(), 1)].into(),
        routers: Default::default(),
        now: 0,
        empty_grace_secs: 0,
    });
    assert_eq!(placement.host_router["a.com"], 1);
    for (phase, want) in [
        (MovePhase::CreateOnTarget { since: 0 }, vec![0, 1]),
        (MovePhase::PublishBoth { since: 0 }, vec![0, 1]),
        (MovePhase::PublishTarget { since: 0 }, vec![0, 1]),
        (MovePhase::DeleteOld { since: 0 }, vec![1]),
    ] {
        let moves: Moves = [("a.com".to_string(), plan(phase))].into();
        let got: Vec<RouterIndex> = homes(&placement, &moves).hosts["a.com"].iter().copied().collect();
        assert_eq!(got, want, "{phase:?}");
    }
}
