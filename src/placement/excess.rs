//! Moves that bring the set back within its capacity, or drain it, make-before-break (issue 36,
//! item 2): a change of the set itself never drops a route.
//!
//! - [`excess_moves`]: a router over capacity sends the groups beyond its capacity elsewhere,
//!   whatever made it go over: capacity lowered, scale-out turned on over a full router (its
//!   groups were observed on it: they are placed where they are, so the router is over), a
//!   merge. [`super::relief`] moves the group that grew first; this one moves what is still
//!   in excess on a router no move is busy with.
//! - [`drain_moves`]: scale-out turned off: every router other than the first sends all its
//!   groups to the first one.
//!
//! Both only say what moves; the moves themselves go through the phases of
//! [`super::MovePlan`] (the source keeps the routes until the target is ACTIVE with them and the
//! DNS graces are over). Pure and deterministic: routers in index order, groups by cost then id.

use std::collections::{BTreeMap, BTreeSet};

use super::assign::{MoveRequest, Placement};
use super::groups::HostGroup;
use super::moves::MoveCause;
use super::{Capacity, Cost, RouterIndex};

/// For each router over `capacity` with two groups or more, not `busy` (the source or target of
/// a move in progress, or failing): the groups that stay are chosen largest first (the largest
/// always stays; fewer routes move), each next one while the router still fits; the others
/// move. Each goes to the router with the most room that fits it (not busy, not being deleted,
/// not a name an untagged load balancer holds), else to a new router (smallest free index), as
/// [`super::relief`] picks its targets; the groups going to one target move together (one move). The targets are busy afterwards, so
/// one router is relieved into them at a time. Nothing moves when the part copied to every
/// router alone exceeds the capacity (more routers do not help).
pub fn excess_moves(
    p: &Placement,
    capacity: Capacity,
    busy: &BTreeSet<RouterIndex>,
    stay: &BTreeSet<super::GroupId>,
) -> Vec<(MoveRequest, MoveCause)> {
    if !p.shared.fits(capacity) {
        return Vec::new();
    }
    let mut cost: BTreeMap<RouterIndex, Cost> = p.routers.iter().map(|(r, l)| (*r, l.cost)).collect();
    let mut busy = busy.clone();
    let mut out = Vec::new();
    for (&from, load) in &p.routers {
        if busy.contains(&from) || load.cost.fits(capacity) || load.groups.len() < 2 {
            continue;
        }
        let mut on_it: Vec<&HostGroup> = p.groups.iter().filter(|g| load.groups.contains(&g.id)).collect();
        let stays = |g: &HostGroup| stay.contains(&g.id);
        on_it.sort_by(|a, b| stays(b).cmp(&stays(a)).then_with(|| b.cost.cmp(&a.cost)).then_with(|| a.id.cmp(&b.id)));
        let mut kept = p.shared;
        let mut leaving = Vec::new();
        for (i, g) in on_it.into_iter().enumerate() {
            if i == 0 || stays(g) || kept.plus(g.cost).fits(capacity) {
                kept = kept.plus(g.cost);
            } else {
                leaving.push(g);
            }
        }
        if leaving.is_empty() {
            continue;
        }
        busy.insert(from);
        cost.insert(from, kept);
        let mut by_target: BTreeMap<RouterIndex, Vec<&HostGroup>> = BTreeMap::new();
        for g in leaving {
            let to = super::relief::pick_target(p, &cost, &busy, g, capacity);
            let c = cost.entry(to).or_insert(p.shared);
            *c = c.plus(g.cost);
            by_target.entry(to).or_default().push(g);
        }
        for (to, groups) in by_target {
            busy.insert(to);
            let request = together(&groups, from, to);
            out.push((request, MoveCause::OverCapacity { cost: load.cost, capacity }));
        }
    }
    out
}

/// Scale-out turned off: each router other than the first that holds groups and is not `busy`
/// (the source or target of a move in progress) sends all of them to the first router, in one
/// move (the first router's capacity is not counted: it is the single router again).
pub fn drain_moves(p: &Placement, busy: &BTreeSet<RouterIndex>) -> Vec<(MoveRequest, MoveCause)> {
    let mut out = Vec::new();
    for (&from, load) in p.routers.iter().filter(|(r, l)| **r != 0 && !busy.contains(r) && !l.groups.is_empty()) {
        let groups: Vec<&HostGroup> = p.groups.iter().filter(|g| load.groups.contains(&g.id)).collect();
        out.push((together(&groups, from, 0), MoveCause::Drain));
    }
    out
}

/// One move of `groups` (keyed by the smallest group id) from `from` to `to`.
fn together(groups: &[&HostGroup], from: RouterIndex, to: RouterIndex) -> MoveRequest {
    let group = groups.iter().map(|g| g.id.clone()).min().unwrap_or_default();
    let hosts = groups.iter().flat_map(|g| g.hosts.iter().cloned()).collect();
    MoveRequest { group, hosts, from, to }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::placement::{IngressClaim, PlacementInput, place};

    fn claim(host: &str, policies: u32) -> IngressClaim {
        IngressClaim {
            ingress: format!("shop/{host}"),
            hosts: vec![host.to_string()],
            policies,
            certificates: BTreeSet::new(),
        }
    }

    fn placed(claims: &[(&str, u32)], on: &[(&str, RouterIndex)], max: u32) -> Placement {
        place(&PlacementInput {
            claims: claims.iter().map(|(h, p)| claim(h, *p)).collect(),
            shared: Cost::default(),
            capacity: Capacity { max_policies: max, max_certificates: 100 },
            current: on.iter().map(|(h, r)| (h.to_string(), *r)).collect(),
            routers: BTreeMap::new(),
            now: 0,
            empty_grace_secs: 60,
            moving: BTreeSet::new(),
            serving: BTreeSet::new(),
        })
    }

    /// Capacity lowered from 4 to 2 (or scale-out turned on over a full router): the largest
    /// groups stay, the rest leave together for one new router; nothing else moves.
    #[test]
    fn a_router_over_capacity_sends_its_excess_to_a_new_router_in_one_move() {
        let on = [("a", 0), ("b", 0), ("c", 0), ("d", 0)];
        let p = placed(&[("a", 1), ("b", 1), ("c", 1), ("d", 1)], &on, 2);
        let cap = Capacity { max_policies: 2, max_certificates: 100 };
        let got = excess_moves(&p, cap, &BTreeSet::new(), &BTreeSet::new());
        // The operator's group d stays; b leaves instead.
        let kept_d = excess_moves(&p, cap, &BTreeSet::new(), &["d".to_string()].into());
        assert_eq!(kept_d[0].0.hosts, ["b", "c"].map(String::from).into());
        let hosts: BTreeSet<String> = ["c", "d"].map(String::from).into();
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].0, MoveRequest { group: "c".into(), hosts, from: 0, to: 1 });
        assert!(matches!(got[0].1, MoveCause::OverCapacity { .. }));
        // Busy (a move in progress there): waits.
        assert!(excess_moves(&p, cap, &[0].into(), &BTreeSet::new()).is_empty());
        // Capacity raised: nothing moves.
        assert!(
            excess_moves(&p, Capacity { max_policies: 8, max_certificates: 100 }, &BTreeSet::new(), &BTreeSet::new())
                .is_empty()
        );
    }

    /// An existing router with room takes the excess before a new one is opened; a group alone
    /// on its router never moves (it is oversized wherever it goes).
    #[test]
    fn the_excess_goes_to_a_router_with_room_first() {
        let on = [("a", 0), ("b", 0), ("c", 0), ("d", 1)];
        let p = placed(&[("a", 2), ("b", 1), ("c", 1), ("d", 1)], &on, 3);
        let cap = Capacity { max_policies: 3, max_certificates: 100 };
        let got: Vec<_> =
            excess_moves(&p, cap, &BTreeSet::new(), &BTreeSet::new()).into_iter().map(|(r, _)| r).collect();
        assert_eq!(got, [MoveRequest { group: "c".into(), hosts: ["c".to_string()].into(), from: 0, to: 1 }]);
        let alone = placed(&[("a", 5)], &[("a", 0)], 3);
        assert!(excess_moves(&alone, cap, &BTreeSet::new(), &BTreeSet::new()).is_empty());
    }

    /// Scale-out off: every router but the first drains into it, one move each, unless a move
    /// already involves it.
    #[test]
    fn draining_sends_every_group_of_the_other_routers_to_the_first() {
        let on = [("a", 0), ("b", 1), ("c", 1), ("d", 2)];
        let p = placed(&[("a", 1), ("b", 1), ("c", 1), ("d", 1)], &on, 100);
        let got: Vec<_> = drain_moves(&p, &BTreeSet::new()).into_iter().map(|(r, _)| (r.hosts, r.from, r.to)).collect();
        let set = |h: &[&str]| h.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
        assert_eq!(got, [(set(&["b", "c"]), 1, 0), (set(&["d"]), 2, 0)]);
        assert_eq!(drain_moves(&p, &[2].into()).len(), 1);
    }
}
