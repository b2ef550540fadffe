//! Placement of host groups on a set of routers, and the make-before-break move: table tests
//! for each rule, property tests for the invariants (every host on exactly one router,
//! capacity, permutation invariance, stability, move addresses).

use std::collections::{BTreeMap, BTreeSet};

use kuryr_l7_router::placement::assign::{MoveRequest, RouterLoad};
use kuryr_l7_router::placement::moves::MoveObservation;
use kuryr_l7_router::placement::{
    Capacity, Cost, IngressClaim, MovePhase, MovePlan, MoveTimings, Placement, PlacementInput, PlacementWarning,
    RouterFate, RouterIndex, RouterRecord, place, router_name,
};
use proptest::prelude::*;

const CAP: Capacity = Capacity { max_policies: 10, max_certificates: 3 };

fn claim(name: &str, hosts: &[&str], policies: u32, certs: &[&str]) -> IngressClaim {
    IngressClaim {
        ingress: name.into(),
        hosts: hosts.iter().map(|h| h.to_string()).collect(),
        policies,
        certificates: certs.iter().map(|c| c.to_string()).collect(),
    }
}

fn input(claims: Vec<IngressClaim>) -> PlacementInput {
    PlacementInput {
        claims,
        shared: Cost::new(1, 0),
        capacity: CAP,
        current: BTreeMap::new(),
        routers: BTreeMap::new(),
        now: 10_000,
        empty_grace_secs: 600,
        moving: Default::default(),
        serving: Default::default(),
    }
}

/// The next cycle's input: the previous placement recorded, as the next leader reads it.
fn after(prev: &Placement, claims: Vec<IngressClaim>, now: u64) -> PlacementInput {
    let routers = prev
        .routers
        .iter()
        .map(|(&r, load)| {
            let empty_since = match load.fate {
                RouterFate::Empty { since, .. } => Some(since),
                _ => None,
            };
            (r, RouterRecord { empty_since, ..RouterRecord::default() })
        })
        .filter(|(r, _)| prev.routers[r].fate != RouterFate::Delete)
        .collect();
    PlacementInput { current: prev.host_router.clone(), routers, now, ..input(claims) }
}

fn groups_of(p: &Placement, router: RouterIndex) -> Vec<&str> {
    p.routers[&router].groups.iter().map(String::as_str).collect()
}

#[test]
fn new_groups_go_to_the_router_with_most_room_then_to_a_new_router() {
    // Shared cost 1: a router holds 9 policies of groups.
    let p = place(&input(vec![
        claim("ns/a", &["a.com"], 6, &[]),
        claim("ns/b", &["b.com"], 5, &[]),
        claim("ns/c", &["c.com"], 3, &[]),
        claim("ns/d", &["d.com"], 2, &[]),
    ]));
    // Largest first: a → 0; b does not fit on 0 → new router 1; c → 0 (room 2/10 vs 4/10?
    // no: 0 has 7 used, 1 has 6 used, so 1 has more room) → 1; d → 0 (room 3 vs 1).
    assert_eq!(groups_of(&p, 0), ["a.com", "d.com"]);
    assert_eq!(groups_of(&p, 1), ["b.com", "c.com"]);
    assert_eq!(p.routers[&0].cost, Cost::new(9, 0));
    assert_eq!(p.routers[&1].cost, Cost::new(9, 0));
    assert!(p.warnings.is_empty() && p.moves.is_empty());
    assert_eq!(router_name("kuryr-l7-router", 1), "kuryr-l7-router-2");
}

#[test]
fn certificates_are_a_capacity_too() {
    let p = place(&input(vec![
        claim("ns/a", &["a.com"], 1, &["ns/t1", "ns/t2"]),
        claim("ns/b", &["b.com"], 1, &["ns/t3", "ns/t4"]),
    ]));
    assert_ne!(p.host_router["a.com"], p.host_router["b.com"], "4 certificates do not fit in 3");
}

#[test]
fn shared_cost_is_paid_on_every_router() {
    let mut i = input(vec![claim("ns/a", &["a.com"], 5, &[]), claim("ns/b", &["b.com"], 4, &[])]);
    i.shared = Cost::new(1, 0);
    assert_eq!(place(&i).routers.len(), 1, "1 + 5 + 4 fits in 10");
    i.claims.push(claim("ns/default-backend", &[], 1, &[]));
    let p = place(&i);
    assert_eq!(p.shared, Cost::new(2, 0), "a host-less Ingress adds to the shared cost");
    assert_eq!(p.routers.len(), 2, "2 + 5 + 4 does not fit in 10");
    assert!(p.routers.values().all(|r| r.cost.policies >= 2), "every router pays the shared cost");
}

#[test]
fn an_oversized_group_gets_a_router_of_its_own_and_a_warning_naming_it() {
    let p = place(&input(vec![claim("ns/big", &["big.com", "big2.com"], 12, &[]), claim("ns/s", &["s.com"], 2, &[])]));
    let big = p.host_router["big.com"];
    assert_eq!(groups_of(&p, big), ["big.com"]);
    assert_ne!(p.host_router["s.com"], big);
    assert_eq!(
        p.warnings,
        [PlacementWarning::OversizedGroup { group: "big.com".into(), cost: Cost::new(13, 0), router: big }]
    );
}

#[test]
fn a_placed_group_stays_when_its_router_fills_up() {
    let p1 = place(&input(vec![claim("ns/a", &["a.com"], 4, &[]), claim("ns/b", &["b.com"], 4, &[])]));
    assert_eq!(p1.routers.len(), 1);
    // a grows past the router's capacity: nothing moves by itself, the router is reported.
    let p2 = place(&after(&p1, vec![claim("ns/a", &["a.com"], 8, &[]), claim("ns/b", &["b.com"], 4, &[])], 10_100));
    assert_eq!(p2.host_router, p1.host_router);
    assert!(p2.moves.is_empty());
    assert!(
        matches!(&p2.warnings[..], [PlacementWarning::OverCapacity { router: 0, cost, .. }] if cost.policies == 13)
    );
    // A new group does not join the full router.
    let p3 = place(&after(
        &p2,
        vec![claim("ns/a", &["a.com"], 8, &[]), claim("ns/b", &["b.com"], 4, &[]), claim("ns/c", &["c.com"], 1, &[])],
        10_200,
    ));
    assert_eq!(p3.host_router["c.com"], 1);
}

#[test]
fn deleting_groups_moves_nothing_and_an_empty_router_is_deleted_after_the_grace() {
    let all =
        vec![claim("ns/a", &["a.com"], 8, &[]), claim("ns/b", &["b.com"], 8, &[]), claim("ns/c", &["c.com"], 8, &[])];
    let p1 = place(&input(all));
    assert_eq!(p1.routers.len(), 3);
    // b (router 1) and a (router 0) go away; c stays on router 2, it does not move to 0.
    let p2 = place(&after(&p1, vec![claim("ns/c", &["c.com"], 8, &[])], 20_000));
    assert_eq!(p2.host_router["c.com"], p1.host_router["c.com"]);
    assert_eq!(p2.routers[&0].fate, RouterFate::Keep, "the first router is never deleted");
    assert_eq!(p2.routers[&1].fate, RouterFate::Empty { since: 20_000, delete_at: 20_600 });
    let p3 = place(&after(&p2, vec![claim("ns/c", &["c.com"], 8, &[])], 20_599));
    assert_eq!(p3.routers[&1].fate, RouterFate::Empty { since: 20_000, delete_at: 20_600 });
    // At the deadline it is deleted, and a new group arriving then does not land on it.
    let p4 = place(&after(&p3, vec![claim("ns/c", &["c.com"], 8, &[]), claim("ns/d", &["d.com"], 1, &[])], 20_600));
    assert_eq!(p4.routers[&1].fate, RouterFate::Delete);
    assert_eq!(p4.host_router["d.com"], 0);
    // A group placed on an empty router before the grace ends keeps it.
    let p5 = place(&after(
        &p2,
        vec![claim("ns/c", &["c.com"], 8, &[]), claim("ns/e", &["e.com"], 8, &[]), claim("ns/f", &["f.com"], 8, &[])],
        20_100,
    ));
    assert_eq!(p5.routers[&1].fate, RouterFate::Keep);
    assert!(p5.routers.values().all(|r: &RouterLoad| r.fate == RouterFate::Keep));
}

#[test]
fn a_merge_keeps_the_larger_part_in_place_and_moves_the_other() {
    let p1 = place(&input(vec![claim("ns/a", &["a.com", "a2.com"], 8, &[]), claim("ns/b", &["b.com"], 8, &[])]));
    let (ra, rb) = (p1.host_router["a.com"], p1.host_router["b.com"]);
    assert_ne!(ra, rb);
    let tie = claim("ns/tie", &["b.com", "a2.com"], 0, &[]);
    let claims = vec![claim("ns/a", &["a.com", "a2.com"], 8, &[]), claim("ns/b", &["b.com"], 8, &[]), tie];
    let p2 = place(&after(&p1, claims, 10_100));
    assert_eq!(p2.group_router["a.com"], ra, "2 hosts on a's router, 1 on b's");
    assert_eq!(p2.host_router["b.com"], ra);
    assert_eq!(
        p2.moves,
        [MoveRequest { group: "a.com".into(), hosts: BTreeSet::from(["b.com".into()]), from: rb, to: ra }]
    );
}

#[test]
fn a_router_deleted_by_hand_comes_back_with_its_groups() {
    let mut i = input(vec![claim("ns/c", &["c.com"], 2, &[])]);
    i.current.insert("c.com".into(), 2);
    let p = place(&i);
    assert_eq!(p.host_router["c.com"], 2);
    assert_eq!(p.routers[&2].fate, RouterFate::Keep);
}

#[test]
fn the_move_publishes_both_addresses_then_only_the_target() {
    let t = MoveTimings { dns_grace_secs: 360, old_routes_grace_secs: 300 };
    let req = MoveRequest { group: "a.com".into(), hosts: BTreeSet::from(["a.com".into()]), from: 0, to: 1 };
    let none = MoveObservation::default();
    let active = MoveObservation { target_active: true, source_cleared: false };
    let cleared = MoveObservation { target_active: true, source_cleared: true };
    let addr = |p: &MovePlan| p.status_addresses("192.0.2.1", "192.0.2.2");
    // (now, observation, expected phase, status, source routes kept)
    let steps: &[(u64, MoveObservation, MovePhase, &[&str], bool)] = &[
        (100, none, MovePhase::CreateOnTarget { since: 0 }, &["192.0.2.1"], true),
        (130, active, MovePhase::PublishBoth { since: 130 }, &["192.0.2.1", "192.0.2.2"], true),
        (489, active, MovePhase::PublishBoth { since: 130 }, &["192.0.2.1", "192.0.2.2"], true),
        (490, active, MovePhase::PublishTarget { since: 490 }, &["192.0.2.2"], true),
        (789, cleared, MovePhase::PublishTarget { since: 490 }, &["192.0.2.2"], true),
        (790, active, MovePhase::DeleteOld { since: 790 }, &["192.0.2.2"], false),
        (800, active, MovePhase::DeleteOld { since: 790 }, &["192.0.2.2"], false),
        (810, cleared, MovePhase::Done { at: 810 }, &["192.0.2.2"], false),
    ];
    let mut plan = MovePlan::start(&req, 0);
    for (now, seen, phase, status, source) in steps {
        plan = plan.advance(*now, *seen, t);
        assert_eq!(plan.phase, *phase, "at {now}");
        assert_eq!(addr(&plan), *status, "at {now}");
        assert_eq!(plan.routes_wanted().source, *source, "at {now}");
        assert!(plan.routes_wanted().target);
    }
    assert_eq!(plan.event("l7", "l7-2").0, "MoveDone");
}

// ---- properties ----

fn gen_claims(prefix: &'static str) -> impl Strategy<Value = Vec<IngressClaim>> {
    let one = (prop::collection::vec(0..12u8, 0..4), 0..7u32, prop::collection::btree_set(0..5u8, 0..3));
    prop::collection::vec(one, 0..10).prop_map(move |items| {
        items
            .into_iter()
            .enumerate()
            .map(|(i, (hosts, policies, certs))| IngressClaim {
                ingress: format!("ns/{prefix}{i}"),
                hosts: hosts.iter().map(|h| format!("{prefix}{h}.example.com")).collect(),
                policies,
                certificates: certs.iter().map(|c| format!("ns/{prefix}tls{c}")).collect(),
            })
            .collect()
    })
}

fn claimed_hosts(claims: &[IngressClaim]) -> BTreeSet<String> {
    claims.iter().flat_map(|c| c.hosts.iter().map(|h| h.to_ascii_lowercase())).collect()
}

/// Every router fits, or holds one group that alone exceeds a router, or holds only hosts it
/// held in `before` and is reported over capacity: a placed group grew, or a group split and
/// its parts now count a certificate they share once each (a router's certificates are summed
/// per group, which over-counts and errs on the safe side). Nothing moves by itself; a router
/// over capacity never receives a new group.
fn capacity_respected(p: &Placement, before: Option<&Placement>) -> Result<(), TestCaseError> {
    for (r, load) in &p.routers {
        let oversized_alone = load.groups.len() == 1
            && p.groups.iter().any(|g| load.groups.contains(&g.id) && !p.shared.plus(g.cost).fits(CAP));
        // Nothing new joined it, and the placement says it is over.
        let hosts_on = |p: &Placement| {
            p.host_router.iter().filter(|(_, x)| *x == r).map(|(h, _)| h.clone()).collect::<BTreeSet<_>>()
        };
        let reported =
            p.warnings.iter().any(|w| matches!(w, PlacementWarning::OverCapacity { router, .. } if router == r));
        let was_over = before.is_some_and(|b| reported && hosts_on(p).is_subset(&hosts_on(b)));
        let shared_over = load.groups.is_empty() && !p.shared.fits(CAP);
        prop_assert!(
            load.cost.fits(CAP) || oversized_alone || was_over || shared_over,
            "router {} over: {:?}",
            r,
            load
        );
    }
    Ok(())
}

fn every_host_on_one_router(p: &Placement, claims: &[IngressClaim]) -> Result<(), TestCaseError> {
    prop_assert_eq!(p.host_router.keys().cloned().collect::<BTreeSet<_>>(), claimed_hosts(claims));
    let mut seen = BTreeSet::new();
    for (r, load) in &p.routers {
        for id in &load.groups {
            let group = p.groups.iter().find(|g| &g.id == id).expect("placed group exists");
            for h in &group.hosts {
                prop_assert!(seen.insert(h.clone()), "{} on two routers", h);
                prop_assert_eq!(p.host_router[h], *r);
            }
        }
    }
    prop_assert_eq!(seen.len(), p.host_router.len());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn fresh_placement_puts_every_host_on_one_router_within_capacity(claims in gen_claims("h")) {
        let p = place(&input(claims.clone()));
        every_host_on_one_router(&p, &claims)?;
        capacity_respected(&p, None)?;
        prop_assert!(p.moves.is_empty());
    }

    #[test]
    fn placement_ignores_input_order_and_host_spelling(
        claims in gen_claims("h"),
        seed in any::<u64>(),
        placed in prop::collection::btree_map(0..12u8, 0..3u32, 0..6),
    ) {
        let mut i = input(claims.clone());
        i.current = placed.iter().map(|(h, r)| (format!("h{h}.example.com"), *r)).collect();
        let mut shuffled = claims;
        // Deterministic shuffle from the seed: rotate claims and each claim's hosts, and
        // re-spell hosts (upper case, trailing dot) as a re-translation might.
        let n = shuffled.len().max(1);
        shuffled.rotate_left((seed as usize) % n);
        shuffled.reverse();
        for c in &mut shuffled {
            c.hosts.reverse();
            if seed % 2 == 1 {
                c.hosts = c.hosts.iter().map(|h| format!("{}.", h.to_ascii_uppercase())).collect();
            }
        }
        let j = PlacementInput { claims: shuffled, ..i.clone() };
        prop_assert_eq!(place(&i), place(&j));
    }

    #[test]
    fn adding_and_deleting_other_groups_never_moves_a_placed_group(
        old in gen_claims("h"),
        keep in prop::collection::vec(any::<bool>(), 10),
        new in gen_claims("n"),
    ) {
        let p1 = place(&input(old.clone()));
        let mut claims: Vec<IngressClaim> =
            old.into_iter().zip(keep.iter().cycle()).filter(|(_, k)| **k).map(|(c, _)| c).collect();
        // New host-less Ingresses raise the shared cost on every router: not a placement
        // decision, so only groups with hosts are added here.
        claims.extend(new.into_iter().filter(|c| !c.hosts.is_empty()));
        let p2 = place(&after(&p1, claims.clone(), 10_100));
        for (h, r) in &p2.host_router {
            if let Some(before) = p1.host_router.get(h) {
                prop_assert_eq!(r, before, "{} moved", h);
            }
        }
        prop_assert!(p2.moves.is_empty());
        every_host_on_one_router(&p2, &claims)?;
        capacity_respected(&p2, Some(&p1))?;
    }

    #[test]
    fn a_move_never_leaves_a_published_address_without_routes(
        steps in prop::collection::vec((0..400u64, any::<bool>(), any::<bool>()), 1..40),
    ) {
        let t = MoveTimings { dns_grace_secs: 360, old_routes_grace_secs: 300 };
        let req = MoveRequest { group: "a.com".into(), hosts: BTreeSet::from(["a.com".into()]), from: 0, to: 1 };
        let mut plan = MovePlan::start(&req, 0);
        let (mut now, mut target_live, mut both_since, mut target_only_since) = (0, false, None, None);
        for (dt, target_active, source_cleared) in steps {
            now += dt;
            plan = plan.advance(now, MoveObservation { target_active, source_cleared }, t);
            let status = plan.status_addresses("old", "new");
            let wanted = plan.routes_wanted();
            target_live |= target_active && !matches!(plan.phase, MovePhase::CreateOnTarget { .. });
            prop_assert!(!status.is_empty());
            prop_assert!(wanted.target);
            if status.contains(&"old".to_string()) {
                prop_assert!(wanted.source, "old address published without its routes");
            }
            if status.contains(&"new".to_string()) {
                prop_assert!(target_live, "new address published before the target was ACTIVE");
            }
            if status.len() == 2 {
                both_since.get_or_insert(now);
            }
            if status == ["new"] {
                let since = both_since.expect("both addresses were published first");
                prop_assert!(now >= since + t.dns_grace_secs);
                target_only_since.get_or_insert(now);
            }
            if !wanted.source {
                let since = target_only_since.expect("only the target was published first");
                prop_assert!(now >= since + t.old_routes_grace_secs);
            }
        }
    }
}
