use super::*;
use crate::placement::MoveTimings;
use crate::placement::moves::{MoveCause, MoveObservation};

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
    MovePlan {
        group: "a.com".into(),
        hosts: ["a.com".to_string()].into(),
        from: 0,
        to: 1,
        phase,
        cause: Default::default(),
    }
}

/// The record keeps the phase and the time it was entered: a controller restarted in the middle
/// of a grace resumes it where it was, neither restarting nor shortening it.
#[test]
fn a_recorded_move_resumes_with_its_clock() {
    let t = MoveTimings { dns_grace_secs: 60, old_routes_grace_secs: 60 };
    let before = plan(MovePhase::PublishBoth { since: 1_000 });
    let record = serde_json::to_string(&before).unwrap();
    let ing = ingress("a", &["a.com"], &[(MOVE_ANNOTATION, &record)]);
    let resumed = crate::controller::router_set::migration::recorded_moves([&ing]);
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
        moving: Default::default(),
        serving: Default::default(),
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

const TIED: &str = r#"
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: kuryr}
spec: {controller: openstack.org/kuryr-l7-router}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec: {ports: [{port: 80}]}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: ix, namespace: shop}
spec:
  ingressClassName: kuryr
  rules:
  - {host: a.com, http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}]}}
  - {host: b.com, http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}]}}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: iy, namespace: shop}
spec:
  ingressClassName: kuryr
  rules:
  - {host: b.com, http: {paths: [{path: /y, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}]}}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: iz, namespace: shop}
spec:
  ingressClassName: kuryr
  rules:
  - {host: c.com, http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}]}}
"#;

/// An ask on one Ingress moves its whole host group (the hosts another Ingress ties to it), and
/// only that group; the placement counts the group on the target from the start; an ask while
/// the group moves, or for its own router, starts nothing; a bad name is refused.
#[test]
fn an_ask_moves_the_whole_group_once() {
    let mut inputs = crate::translate::Inputs::default();
    crate::translate::manifest::load_str(TIED, std::path::Path::new("tied.yaml"), &mut inputs).unwrap();
    let opts = crate::translate::TranslateOptions { ingress_class: "kuryr".into(), ..Default::default() };
    let desired = crate::translate::translate(&inputs, &opts);
    let current = [("a.com", 0), ("b.com", 0), ("c.com", 0)].map(|(h, r)| (h.to_string(), r)).into();
    let params = SplitParams {
        capacity: crate::placement::Capacity { max_policies: 10, max_certificates: 10 },
        current,
        routers: Default::default(),
        now: 500,
        empty_grace_secs: 3600,
    };
    let ask = |ingress: &str, target| MoveAsk { ingress: ingress.into(), target };
    let asks = [ask("shop/iy", Ok(1)), ask("shop/iz", Err("bad name".into()))];
    let got = place_with_moves(&desired, &params, Moves::new(), &asks, 500, &Growth::default());
    assert_eq!(got.started.len(), 1, "{got:?}");
    let m = &got.started[0];
    let hosts: Vec<&str> = m.hosts.iter().map(String::as_str).collect();
    assert_eq!(
        (hosts, m.from, m.to, m.phase),
        (vec!["a.com", "b.com"], 0, 1, MovePhase::CreateOnTarget { since: 500 })
    );
    assert_eq!(got.placement.host_router["a.com"], 1);
    assert_eq!(got.placement.host_router["c.com"], 0, "the other group stays");
    assert_eq!(got.refused, vec![("shop/iz".to_string(), "bad name".to_string())]);
    // The next Sync: the same ask (the annotation stays) while the group moves, and once done.
    let again =
        place_with_moves(&desired, &params, got.moves.clone(), &[ask("shop/ix", Ok(2))], 501, &Growth::default());
    assert!(again.started.is_empty(), "a moving group is not moved again: {:?}", again.started);
    let mut done_params = params.clone();
    done_params.current.extend([("a.com".to_string(), 1), ("b.com".to_string(), 1)]);
    let done =
        place_with_moves(&desired, &done_params, Moves::new(), &[ask("shop/iy", Ok(1))], 900, &Growth::default());
    assert!(done.started.is_empty(), "already on its target: {:?}", done.started);
}

fn tied_desired() -> crate::model::DesiredRouter {
    let mut inputs = crate::translate::Inputs::default();
    crate::translate::manifest::load_str(TIED, std::path::Path::new("tied.yaml"), &mut inputs).unwrap();
    let opts = crate::translate::TranslateOptions { ingress_class: "kuryr".into(), ..Default::default() };
    crate::translate::translate(&inputs, &opts)
}

fn params_at(max_policies: u32, current: &[(&str, RouterIndex)]) -> SplitParams {
    SplitParams {
        capacity: crate::placement::Capacity { max_policies, max_certificates: 10 },
        current: current.iter().map(|(h, r)| (h.to_string(), *r)).collect(),
        routers: Default::default(),
        now: 500,
        empty_grace_secs: 3600,
    }
}

/// Ingress ix ties a.com (on the first router) and b.com (on the second): b.com moves to the
/// first router through the move phases (a merge), not at once; its old router keeps its
/// routes; the move is keyed by the part's own host, so a later Sync resumes it.
#[test]
fn a_merge_moves_the_other_part_make_before_break() {
    let params = params_at(10, &[("a.com", 0), ("b.com", 1), ("c.com", 0)]);
    let got = place_with_moves(&tied_desired(), &params, Moves::new(), &[], 500, &Growth::default());
    let started: Vec<_> = got.started.iter().map(|m| (m.group.as_str(), m.from, m.to, m.phase, m.cause)).collect();
    assert_eq!(started, [("b.com", 1, 0, MovePhase::CreateOnTarget { since: 500 }, MoveCause::Merge)]);
    let routers: Vec<RouterIndex> = homes(&got.placement, &got.moves).hosts["b.com"].iter().copied().collect();
    assert_eq!(routers, [0, 1], "the source keeps b.com until the move deletes it");
    let again = place_with_moves(&tied_desired(), &params, got.moves.clone(), &[], 501, &Growth::default());
    assert!(again.started.is_empty(), "the move goes on, it does not start again: {:?}", again.started);
    let (reason, message) = got.started[0].event("edge-2", "edge");
    assert_eq!(reason, "MoveStarted");
    assert!(message.contains("merge: an Ingress ties these hosts to the group on edge"), "{message}");
}

/// At 3 policies a router, group a.com (ix and iy: 3 policies) and c.com (1) on the first
/// router make it over capacity. A group that grew moves first (here: pending from an earlier
/// Sync), to a new router, with the cause; without growth the excess moves; a grown group
/// already moving is not moved again; growth waits while its router is busy.
#[test]
fn a_grown_group_leaves_its_router_over_capacity_and_a_stable_one_stays() {
    let params = params_at(3, &[("a.com", 0), ("b.com", 0), ("c.com", 0)]);
    let grown = Growth { pending: ["b.com".to_string()].into(), ..Growth::default() };
    let got = place_with_moves(&tied_desired(), &params, Moves::new(), &[], 500, &grown);
    let started: Vec<_> = got.started.iter().map(|m| (m.group.as_str(), m.from, m.to)).collect();
    assert_eq!(started, [("a.com", 0, 1)]);
    let cause = MoveCause::OverCapacity { cost: crate::placement::Cost::new(4, 0), capacity: params.capacity };
    assert_eq!(got.started[0].cause, cause);
    assert_eq!(got.placement.host_router["c.com"], 0, "the stable group stays");
    assert!(got.pending.is_empty(), "the grown group is moving: {:?}", got.pending);

    // Nothing grew (capacity lowered, groups observed on a full router): the router is still
    // over capacity, so its excess moves (`placement::excess`): the largest group stays.
    let stable = place_with_moves(&tied_desired(), &params, Moves::new(), &[], 500, &Growth::default());
    let started: Vec<_> = stable.started.iter().map(|m| (m.group.as_str(), m.from, m.to)).collect();
    assert_eq!(started, [("c.com", 0, 1)], "the excess leaves, the largest group stays");

    // The operator placed the group on the first router (move-to, left on ix): it stays, and
    // the excess is the other group.
    let pinned = [MoveAsk { ingress: "shop/ix".into(), target: Ok(0) }];
    let kept = place_with_moves(&tied_desired(), &params, Moves::new(), &pinned, 500, &grown);
    let started: Vec<_> = kept.started.iter().map(|m| m.group.as_str()).collect();
    assert_eq!(started, ["c.com"], "the operator's placement wins");

    // A move of c.com into the first router in progress keeps it busy: a.com waits, pending.
    let busy: Moves = [(
        "c.com".to_string(),
        MovePlan {
            group: "c.com".into(),
            hosts: ["c.com".to_string()].into(),
            from: 2,
            to: 0,
            phase: MovePhase::PublishBoth { since: 400 },
            cause: MoveCause::Operator,
        },
    )]
    .into();
    let waits = place_with_moves(&tied_desired(), &params, busy, &[], 500, &grown);
    assert!(waits.started.is_empty(), "{:?}", waits.started);
    assert_eq!(waits.pending, ["a.com".to_string(), "b.com".to_string()].into());
}

/// Ingress ix ties a.com (on the first router) to b.com while b.com moves from the second
/// router to the third. In every phase of that move the merged group goes to the move's target
/// (the third router), which already routes b.com and publishes its address: a.com moves there
/// make-before-break (a merge), b.com's move goes on, and b.com stays routed on its target (and
/// on its source until the move deletes the old routes). Before, the tie placed b.com on the
/// first router at once and its move's target stopped routing it while its status showed it.
#[test]
fn a_tie_to_a_moving_group_goes_to_the_moves_target() {
    let params = params_at(10, &[("a.com", 0), ("b.com", 1), ("c.com", 0)]);
    let phases = [
        (MovePhase::CreateOnTarget { since: 400 }, vec![1, 2]),
        (MovePhase::PublishBoth { since: 400 }, vec![1, 2]),
        (MovePhase::PublishTarget { since: 400 }, vec![1, 2]),
        (MovePhase::DeleteOld { since: 400 }, vec![2]),
    ];
    for (phase, b_homes) in phases {
        let moving = MovePlan {
            group: "b.com".into(),
            hosts: ["b.com".to_string()].into(),
            from: 1,
            to: 2,
            phase,
            cause: MoveCause::Operator,
        };
        let moves: Moves = [("b.com".to_string(), moving.clone())].into();
        let got = place_with_moves(&tied_desired(), &params, moves, &[], 500, &Growth::default());
        let started: Vec<_> = got.started.iter().map(|m| (m.group.as_str(), m.from, m.to, m.cause)).collect();
        assert_eq!(started, [("a.com", 0, 2, MoveCause::Merge)], "{phase:?}");
        assert_eq!(got.moves.get("b.com"), Some(&moving), "{phase:?}: b.com's move goes on unchanged");
        let host_routers = (got.placement.host_router["a.com"], got.placement.host_router["b.com"]);
        assert_eq!(host_routers, (2, 2), "{phase:?}");
        assert_eq!(got.placement.host_router["c.com"], 0, "{phase:?}: the other group stays");
        let homes = homes(&got.placement, &got.moves);
        let of = |h: &str| homes.hosts[h].iter().copied().collect::<Vec<RouterIndex>>();
        assert_eq!(of("b.com"), b_homes, "{phase:?}");
        assert_eq!(of("a.com"), [0, 2], "{phase:?}: a.com is on both until its own move deletes it");
    }
}

/// An Ingress ties a.com (moving 0 → 2) and b.com (moving 1 → 3): the group goes to router 2
/// (ties between targets: the lowest index) and b.com's move goes on to router 3. When that move
/// is done, b.com moves on from 3 to 2 through the phases: 3 keeps routing (and publishing) it
/// until the chained move deletes its old routes. Before, it switched to 2 at once when its
/// move was done: router 3 dropped its routes while clients still held its address.
#[test]
fn a_move_done_whose_hosts_a_tie_placed_elsewhere_moves_on_make_before_break() {
    let params = params_at(10, &[("a.com", 0), ("b.com", 1), ("c.com", 0)]);
    let mv = |host: &str, from, to, phase| MovePlan {
        group: host.into(),
        hosts: [host.to_string()].into(),
        from,
        to,
        phase,
        cause: MoveCause::Operator,
    };
    let a = mv("a.com", 0, 2, MovePhase::PublishBoth { since: 400 });
    let b = mv("b.com", 1, 3, MovePhase::DeleteOld { since: 400 });
    let moves: Moves = [("a.com".to_string(), a.clone()), ("b.com".to_string(), b.clone())].into();
    let got = place_with_moves(&tied_desired(), &params, moves, &[], 500, &Growth::default());
    assert_eq!(got.placement.host_router["b.com"], 2, "the tied group is on the first move's target");
    assert!(got.started.is_empty(), "b.com's move goes on: {:?}", got.started);
    let seen = MoveObservation { target_active: true, source_cleared: true };
    let timings = MoveTimings { dns_grace_secs: 60, old_routes_grace_secs: 60 };
    let done = b.advance(510, seen, timings);
    assert!(matches!(done.phase, MovePhase::Done { .. }));
    let chain = chained(&done, &got.placement, 510).expect("b.com moves on");
    assert_eq!(
        (chain.from, chain.to, chain.phase, chain.cause),
        (3, 2, MovePhase::CreateOnTarget { since: 510 }, MoveCause::Merge)
    );
    assert_eq!(chain.group, "b.com");
    // Through its phases, router 3 keeps b.com until the chained move deletes its old routes.
    for (phase, b_homes) in [
        (MovePhase::CreateOnTarget { since: 510 }, vec![2, 3]),
        (MovePhase::PublishBoth { since: 510 }, vec![2, 3]),
        (MovePhase::PublishTarget { since: 510 }, vec![2, 3]),
        (MovePhase::DeleteOld { since: 510 }, vec![2]),
    ] {
        let on = MovePlan { phase, ..chain.clone() };
        let moves: Moves = [("a.com".to_string(), a.clone()), ("b.com".to_string(), on)].into();
        let later = place_with_moves(&tied_desired(), &params, moves, &[], 520, &Growth::default());
        assert!(later.started.is_empty(), "{phase:?}: {:?}", later.started);
        let homes = homes(&later.placement, &later.moves);
        let of: Vec<RouterIndex> = homes.hosts["b.com"].iter().copied().collect();
        assert_eq!(of, b_homes, "{phase:?}");
    }
    // A move done on the router its hosts are placed on goes nowhere.
    let a_done = MovePlan { phase: MovePhase::Done { at: 530 }, ..a };
    assert_eq!(chained(&a_done, &got.placement, 530), None);
}

/// Scale-out off: c.com drains from the second router into the first. The second router holds
/// no group any more (c.com is placed on the move's target) and its empty grace is long over,
/// but it routes c.com until the move's `DeleteOld`: it is kept in every phase before that, and
/// empty (its grace running) only once the move is done. Before, it was empty (then deleted, with its floating IP)
/// as soon as the drain started, while the status still published its address.
#[test]
fn a_drained_router_is_kept_until_its_move_is_done() {
    let mut params = params_at(10, &[("a.com", 0), ("b.com", 0), ("c.com", 1)]);
    params
        .routers
        .insert(1, crate::placement::RouterRecord { empty_since: Some(1), draining: true, ..Default::default() });
    let draining = Growth { draining: true, ..Growth::default() };
    let got = place_with_moves(&tied_desired(), &params, Moves::new(), &[], 500, &draining);
    let started: Vec<_> = got.started.iter().map(|m| (m.group.as_str(), m.from, m.to, m.cause)).collect();
    assert_eq!(started, [("c.com", 1, 0, MoveCause::Drain)]);
    let fate = |moves: &Moves| {
        // The record follows the moves: a host is on the target once its move is done.
        let mut params = params.clone();
        let done = moves.values().filter(|m| matches!(m.phase, MovePhase::Done { .. }));
        params.current.extend(done.flat_map(|m| m.hosts.iter().map(|h| (h.clone(), m.to))));
        let placed = place_with_moves(&tied_desired(), &params, moves.clone(), &[], 5000, &draining);
        placed.placement.routers.get(&1).map(|l| l.fate)
    };
    assert_eq!(fate(&got.moves), Some(crate::placement::RouterFate::Keep), "CreateOnTarget");
    let timings = MoveTimings { dns_grace_secs: 60, old_routes_grace_secs: 60 };
    let active = MoveObservation { target_active: true, source_cleared: true };
    let mut moves = got.moves.clone();
    for at in [501, 600, 700] {
        moves.values_mut().for_each(|m| *m = m.advance(at, active, timings));
        let phase = moves["c.com"].phase;
        assert!(!matches!(phase, MovePhase::Done { .. }));
        assert_eq!(fate(&moves), Some(crate::placement::RouterFate::Keep), "{phase:?}");
    }
    moves.values_mut().for_each(|m| *m = m.advance(701, active, timings));
    assert_eq!(moves["c.com"].phase, MovePhase::Done { at: 701 });
    assert!(matches!(fate(&moves), Some(crate::placement::RouterFate::Empty { .. })), "emptied: its grace runs");
}
