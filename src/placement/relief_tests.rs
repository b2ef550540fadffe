use super::*;
use crate::placement::{IngressClaim, PlacementInput, RouterRecord, place};

const CAP: Capacity = Capacity { max_policies: 4, max_certificates: 10 };

/// An Ingress claiming `hosts` with `policies` policies.
fn claim(name: &str, hosts: &[&str], policies: u32) -> IngressClaim {
    IngressClaim {
        ingress: format!("ns/{name}"),
        hosts: hosts.iter().map(|h| h.to_string()).collect(),
        policies,
        certificates: BTreeSet::new(),
    }
}

/// The placement of `claims` with `current` recorded (host → router) and `routers` existing.
fn placed(claims: Vec<IngressClaim>, current: &[(&str, RouterIndex)], routers: &[RouterIndex]) -> Placement {
    place(&PlacementInput {
        claims,
        shared: Cost::default(),
        capacity: CAP,
        current: current.iter().map(|(h, r)| (h.to_string(), *r)).collect(),
        routers: routers.iter().map(|r| (*r, RouterRecord::default())).collect(),
        now: 0,
        empty_grace_secs: 600,
        moving: BTreeSet::new(),
        serving: BTreeSet::new(),
    })
}

fn ids(v: &[&str]) -> BTreeSet<GroupId> {
    v.iter().map(|s| s.to_string()).collect()
}

/// A group grew when it costs more than the groups its hosts were in; unchanged, shrunk and
/// new groups did not.
#[test]
fn grown_groups_are_those_that_cost_more_than_their_hosts_groups_did() {
    let before = placed(vec![claim("a", &["a"], 1), claim("b", &["b"], 2), claim("c", &["c"], 1)], &[], &[]);
    let before = host_costs(&before);
    let cases: [(&str, Vec<IngressClaim>, Vec<&str>); 6] = [
        ("unchanged", vec![claim("a", &["a"], 1), claim("b", &["b"], 2)], vec![]),
        ("a got a path", vec![claim("a", &["a"], 2), claim("b", &["b"], 2)], vec!["a"]),
        ("b lost a path", vec![claim("a", &["a"], 1), claim("b", &["b"], 1)], vec![]),
        ("a new group", vec![claim("a", &["a"], 1), claim("n", &["n"], 3)], vec![]),
        ("a got a new host", vec![claim("a", &["a", "z"], 2)], vec!["a"]),
        ("a and c merged", vec![claim("a", &["a"], 1), claim("c", &["c"], 1), claim("t", &["a", "c"], 1)], vec!["a"]),
    ];
    for (case, claims, want) in cases {
        assert_eq!(grown_groups(&before, &placed(claims, &[], &[])), ids(&want), "{case}");
    }
}

/// (case, claims, recorded placement, grown, busy) → the automatic moves as (group, from, to).
/// Capacity: 4 policies; router 2 exists, empty, only where the case says so.
#[test]
fn only_a_grown_group_leaves_a_router_over_capacity() {
    type Case<'a> = (&'a str, Vec<IngressClaim>, Vec<(&'a str, RouterIndex)>, Vec<&'a str>, Vec<RouterIndex>);
    /// (group, from, to)
    type Moved<'a> = Vec<(&'a str, RouterIndex, RouterIndex)>;
    let full = || vec![claim("a", &["a"], 3), claim("b", &["b"], 2)];
    let on0 = || vec![("a", 0), ("b", 0)];
    let cases: Vec<(Case, Moved)> = vec![
        (("a grew: it goes to a new router", full(), on0(), vec!["a"], vec![]), vec![("a", 0, 1)]),
        (("nothing grew: stable groups never move", full(), on0(), vec![], vec![]), vec![]),
        (("the router is busy with another move", full(), on0(), vec!["a"], vec![0]), vec![]),
        (
            ("a new router skips the index of a busy one (a move's source)", full(), on0(), vec!["a"], vec![1]),
            vec![("a", 0, 2)],
        ),
        (
            (
                "a grown group on a router within capacity",
                vec![claim("a", &["a"], 2)],
                vec![("a", 0)],
                vec!["a"],
                vec![],
            ),
            vec![],
        ),
        (
            (
                "alone on its router: moving it relieves nobody",
                vec![claim("a", &["a"], 6)],
                vec![("a", 0)],
                vec!["a"],
                vec![],
            ),
            vec![],
        ),
        (
            (
                "the router with the most room that fits",
                vec![claim("a", &["a"], 3), claim("b", &["b"], 2), claim("c", &["c"], 1), claim("d", &["d"], 3)],
                vec![("a", 0), ("b", 0), ("c", 1), ("d", 2)],
                vec!["b"],
                vec![],
            ),
            vec![("b", 0, 1)],
        ),
        (
            (
                "a busy router is no target",
                vec![claim("a", &["a"], 3), claim("b", &["b"], 2), claim("c", &["c"], 1)],
                vec![("a", 0), ("b", 0), ("c", 1)],
                vec!["b"],
                vec![1],
            ),
            vec![("b", 0, 2)],
        ),
        (
            (
                "two grew: the smallest that brings the router back within capacity",
                vec![claim("a", &["a"], 3), claim("b", &["b"], 1), claim("c", &["c"], 2)],
                vec![("a", 0), ("b", 0), ("c", 0)],
                vec!["a", "b", "c"],
                vec![],
            ),
            vec![("c", 0, 1)],
        ),
        (
            (
                "too big for any router: the empty router 2, not a new one",
                vec![claim("a", &["a"], 5), claim("b", &["b"], 1)],
                vec![("a", 0), ("b", 0)],
                vec!["a"],
                vec![],
            ),
            vec![("a", 0, 2)],
        ),
    ];
    for ((case, claims, current, grown, busy), want) in cases {
        let empty_router_2 = if case.contains("router 2") { vec![2] } else { vec![] };
        let p = placed(claims, &current, &empty_router_2);
        let moves = relief_moves(&p, CAP, &ids(&grown), &busy.into_iter().collect());
        let got: Moved = moves.iter().map(|(m, _)| (m.group.as_str(), m.from, m.to)).collect();
        assert_eq!(got, want, "{case}");
        for (m, cause) in &moves {
            assert_eq!(*cause, MoveCause::OverCapacity { cost: p.routers[&m.from].cost, capacity: CAP }, "{case}");
        }
    }
}

/// The Event says why, with the router and the count over its capacity.
#[test]
fn the_cause_names_the_router_and_its_count() {
    let cause = MoveCause::OverCapacity { cost: Cost::new(5, 1), capacity: CAP };
    assert_eq!(cause.text("edge", "edge-2"), "automatic: router edge over capacity (5 > 4 policies)");
    let certs = MoveCause::OverCapacity { cost: Cost::new(2, 11), capacity: CAP };
    assert_eq!(certs.text("edge", "edge-2"), "automatic: router edge over capacity (11 > 10 certificates)");
}
