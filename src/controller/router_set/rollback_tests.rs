use super::*;
use crate::placement::assign::MoveRequest;

fn plan(group: &str, from: RouterIndex, to: RouterIndex, phase: MovePhase) -> MovePlan {
    let request = MoveRequest { group: group.into(), hosts: [group.to_string()].into(), from, to };
    MovePlan { phase, ..MovePlan::start(&request, 0) }
}

fn name(i: RouterIndex) -> String {
    crate::placement::router_name("edge", i)
}

fn hosts(h: &str) -> BTreeSet<String> {
    [h.to_string()].into()
}

/// Only a move still waiting for its target at its start plus the timeout is dropped; the
/// others (target served, within the bound) go on untouched.
#[test]
fn a_move_whose_target_is_late_is_dropped_and_only_it() {
    let mut moves: Moves = [
        ("late.com".into(), plan("late.com", 0, 2, MovePhase::CreateOnTarget { since: 100 })),
        ("young.com".into(), plan("young.com", 0, 2, MovePhase::CreateOnTarget { since: 150 })),
        ("served.com".into(), plan("served.com", 0, 1, MovePhase::PublishBoth { since: 110 })),
    ]
    .into();
    let out = roll_back(&mut moves, 160, 60, &[], &name);
    assert_eq!(moves.keys().collect::<Vec<_>>(), ["served.com", "young.com"]);
    assert_eq!(out.rolled.len(), 1);
    assert_eq!(out.rolled[0].plan.group, "late.com");
    assert_eq!(out.rolled[0].why, Why::TargetTimeout { secs: 60 });
    assert_eq!(out.rolled[0].back, None);
    assert!(out.refused.is_empty());
    // One second earlier, nothing goes back.
    let mut moves: Moves =
        [("late.com".into(), plan("late.com", 0, 2, MovePhase::CreateOnTarget { since: 100 }))].into();
    assert_eq!(roll_back(&mut moves, 159, 60, &[], &name), Outcome::default());
}

/// A cancel: before the target served, the move is dropped; once it served (both published, or
/// the target only), the way back from the target, entering the phase that publishes the
/// source again; while deleting the old routes, refused with how to move back; with no move,
/// refused.
#[test]
fn a_cancel_goes_back_make_before_break_until_the_old_routes_are_deleted() {
    let cases = [
        (MovePhase::CreateOnTarget { since: 100 }, Some(None)),
        (MovePhase::PublishBoth { since: 100 }, Some(Some(MovePhase::PublishTarget { since: 200 }))),
        (MovePhase::PublishTarget { since: 100 }, Some(Some(MovePhase::PublishBoth { since: 200 }))),
        (MovePhase::DeleteOld { since: 100 }, None),
    ];
    for (phase, want) in cases {
        let mut moves: Moves = [("a.com".into(), plan("a.com", 0, 1, phase))].into();
        let cancels = [("shop/a".to_string(), hosts("a.com"))];
        let out = roll_back(&mut moves, 200, 1000, &cancels, &name);
        match want {
            None => {
                assert!(out.rolled.is_empty(), "{phase:?}");
                let why = &out.refused[0].1;
                assert!(why.contains("deleting the routes on edge") && why.contains("move shop/a edge"), "{why}");
                assert_eq!(moves["a.com"].phase, phase, "the move goes on");
            }
            Some(None) => {
                assert!(moves.is_empty(), "{phase:?}: dropped");
                assert_eq!(out.rolled[0].why, Why::Cancelled { ingress: "shop/a".into() });
            }
            Some(Some(back)) => {
                let b = &moves["a.com"];
                assert_eq!((b.from, b.to, b.phase, b.cause), (1, 0, back, MoveCause::Cancelled), "{phase:?}");
                assert!(b.routes_wanted().source, "the target keeps serving on the way back");
                assert_eq!(b.status_addresses("T", "S").last().map(String::as_str), Some("S"));
                assert_eq!(out.rolled[0].back.as_ref(), Some(b));
            }
        }
    }
    let mut moves = Moves::new();
    let out = roll_back(&mut moves, 200, 1000, &[("shop/z".into(), hosts("z.com"))], &name);
    assert!(out.refused[0].1.contains("nothing to cancel"), "{:?}", out.refused);
}

/// A hold blocks the same hosts to the same target until it ends; the way back holds longer
/// (its two graces).
#[test]
fn a_hold_keeps_the_group_off_its_target_for_the_bound() {
    let timings = MoveTimings { dns_grace_secs: 10, old_routes_grace_secs: 10 };
    let dropped = RolledBack {
        plan: plan("a.com", 0, 2, MovePhase::CreateOnTarget { since: 0 }),
        why: Why::TargetTimeout { secs: 60 },
        back: None,
    };
    let hold = hold_after(&dropped, 100, 60, timings);
    let again = plan("a.com", 0, 2, MovePhase::CreateOnTarget { since: 120 });
    assert!(hold.blocks(&again, 159));
    assert!(!hold.blocks(&again, 160), "over at its end");
    assert!(!hold.blocks(&plan("a.com", 0, 3, MovePhase::CreateOnTarget { since: 120 }), 120), "another target");
    assert!(!hold.blocks(&plan("b.com", 0, 2, MovePhase::CreateOnTarget { since: 120 }), 120), "other hosts");
    let back = RolledBack { back: Some(again.clone()), ..dropped };
    assert_eq!(hold_after(&back, 100, 60, timings).until, 180);
}
