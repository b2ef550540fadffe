//! Automatic moves: a router over capacity because one of its groups grew sends that group
//! elsewhere (make-before-break, through [`super::MovePlan`]).
//!
//! A placed group never moves by itself because its router filled up: only the group that
//! grew on it moves, never a stable one. Growth is seen by comparing a placement with the
//! one before it ([`grown_groups`]); the caller keeps the grown groups pending while their
//! router stays over capacity (a router busy with another move is relieved later). The rules
//! are in `docs/scale-out.md`, "Automatic moves".

use std::collections::{BTreeMap, BTreeSet};

use super::assign::{MoveRequest, Placement, RouterFate};
use super::groups::{GroupId, HostGroup};
use super::moves::MoveCause;
use super::{Capacity, Cost, RouterIndex};

/// Each placed host → (its group, the group's cost): what [`grown_groups`] compares with.
pub type HostCosts = BTreeMap<String, (GroupId, Cost)>;

/// The placement's groups by host, to compare the next placement with.
pub fn host_costs(p: &Placement) -> HostCosts {
    let mut out = HostCosts::new();
    for g in &p.groups {
        out.extend(g.hosts.iter().map(|h| (h.clone(), (g.id.clone(), g.cost))));
    }
    out
}

/// The groups of `after` that cost more, in either dimension, than the groups their hosts
/// were in `before` together (each counted once): a group that got paths, certificates, new
/// hosts, or merged with another. A group none of whose hosts was placed before is new, not
/// grown (new groups are placed where they fit).
pub fn grown_groups(before: &HostCosts, after: &Placement) -> BTreeSet<GroupId> {
    let mut out = BTreeSet::new();
    for g in &after.groups {
        let was: BTreeMap<&GroupId, Cost> =
            g.hosts.iter().filter_map(|h| before.get(h)).map(|(id, c)| (id, *c)).collect();
        if was.is_empty() {
            continue;
        }
        let was = was.values().fold(Cost::default(), |sum, c| sum.plus(*c));
        if g.cost.policies > was.policies || g.cost.certificates > was.certificates {
            out.insert(g.id.clone());
        }
    }
    out
}

/// The automatic moves of placement `p`, each with its cause: for each router over `capacity` that holds other
/// groups too and is not `busy` (source or target of a move in progress: one move per router
/// at a time), one of its `grown` groups moves: the smallest whose departure brings the router
/// back within capacity, else the largest. Its target is the router with the most room that
/// fits it (not busy, not being deleted), else a new router (smallest free index); a group too
/// big for any router goes to an empty router, else a new one (it is oversized wherever it
/// is, but no longer crowds the others). Deterministic: routers in index order, ties by id.
pub fn relief_moves(
    p: &Placement,
    capacity: Capacity,
    grown: &BTreeSet<GroupId>,
    busy: &BTreeSet<RouterIndex>,
) -> Vec<(MoveRequest, MoveCause)> {
    let mut cost: BTreeMap<RouterIndex, Cost> = p.routers.iter().map(|(r, l)| (*r, l.cost)).collect();
    let mut busy = busy.clone();
    let mut out = Vec::new();
    for (&from, load) in &p.routers {
        if busy.contains(&from) || load.cost.fits(capacity) || load.groups.len() < 2 {
            continue;
        }
        let on_it = p.groups.iter().filter(|g| load.groups.contains(&g.id) && grown.contains(&g.id));
        let Some(group) = pick_group(on_it.collect(), load.cost, capacity) else { continue };
        busy.insert(from);
        let to = pick_target(p, &cost, &busy, group, capacity);
        cost.insert(from, load.cost.minus(group.cost));
        let target = cost.entry(to).or_insert(p.shared);
        *target = target.plus(group.cost);
        busy.insert(to);
        let request = MoveRequest { group: group.id.clone(), hosts: group.hosts.clone(), from, to };
        out.push((request, MoveCause::OverCapacity { cost: load.cost, capacity }));
    }
    out
}

fn pick_group(mut grown: Vec<&HostGroup>, router: Cost, capacity: Capacity) -> Option<&HostGroup> {
    grown.sort_by(|a, b| a.cost.cmp(&b.cost).then_with(|| a.id.cmp(&b.id)));
    let relieves = |g: &&HostGroup| router.minus(g.cost).fits(capacity);
    let smallest_enough = grown.iter().copied().find(relieves);
    smallest_enough.or_else(|| grown.iter().copied().max_by(|a, b| a.cost.cmp(&b.cost).then_with(|| b.id.cmp(&a.id))))
}

/// The router with the most room that fits `group` (not busy, not being deleted); a group alone
/// over capacity takes an empty router; else a new router: the smallest index no router, busy
/// router or held name uses. Shared by the relief of a grown group and the excess moves
/// ([`super::excess`]).
pub(super) fn pick_target(
    p: &Placement,
    cost: &BTreeMap<RouterIndex, Cost>,
    busy: &BTreeSet<RouterIndex>,
    group: &HostGroup,
    capacity: Capacity,
) -> RouterIndex {
    let open = |r: &RouterIndex| !busy.contains(r) && p.routers.get(r).is_none_or(|l| l.fate != RouterFate::Delete);
    let mut best: Option<(RouterIndex, u64)> = None;
    for r in cost.keys().copied().filter(open) {
        if !cost[&r].plus(group.cost).fits(capacity) {
            continue;
        }
        let room = capacity.room_ppm(cost[&r]);
        if best.is_none_or(|(_, b)| room > b) {
            best = Some((r, room));
        }
    }
    if let Some((r, _)) = best {
        return r;
    }
    let oversized = !p.shared.plus(group.cost).fits(capacity);
    let empty = |r: &RouterIndex| p.routers.get(r).is_some_and(|l| l.groups.is_empty());
    if oversized && let Some(r) = cost.keys().copied().filter(open).find(empty) {
        return r;
    }
    // Not the index of a busy router either: a move's source may hold no group any more.
    let free = |i: &RouterIndex| !cost.contains_key(i) && !busy.contains(i) && !p.held.contains(i);
    (0..).find(free).expect("fewer than u32::MAX routers")
}

#[cfg(test)]
#[path = "relief_tests.rs"]
mod tests;
