//! Moves of host groups between the routers of a set, as the controller drives them
//! (make-before-break: `placement::MovePlan` is the state machine, this module feeds it).
//!
//! - The operator asks with [`MOVE_TO_ANNOTATION`] on one Ingress of the group: the name of the
//!   target router. The annotation is the durable intent: a controller killed before it
//!   recorded the move starts it again, and creating routes that exist is a no-op for the
//!   converge, so nothing is duplicated.
//! - The move in progress is recorded in [`MOVE_ANNOTATION`] on every Ingress of the group (the
//!   plan as JSON, with the time its phase was entered), so a new leader resumes the phase
//!   with its clock: a restart never shortens a grace.
//! - While the source must keep its routes, the group's hosts are on both routers
//!   ([`homes`]); the Ingresses' status carries the addresses of the phase.
//!
//! - Moves also start by themselves: the parts of a group an Ingress ties across routers go
//!   to the router of the rest (a merge), and a group that grew on a router now over capacity
//!   goes to the router with the most room (`placement::relief`); a stable group never moves.

use crate::placement::assign::MoveRequest;
use crate::placement::excess;
use crate::placement::groups::normalize_host;
use crate::placement::moves::MoveCause;
use crate::placement::relief::{self, HostCosts};
use crate::placement::split::{Homes, SplitParams, placement_input};
use crate::placement::{
    GroupId, HostGroup, MovePhase, MovePlan, Placement, RouterIndex, UnixSeconds, place, router_index,
};
use crate::translate::namespace_of;
use k8s_openapi::api::networking::v1::Ingress;
use std::collections::{BTreeMap, BTreeSet};

/// Asks for a move of the Ingress's host group to the router named (`<l7_router_name>[-N]`).
pub const MOVE_TO_ANNOTATION: &str = "placement.kuryr-l7-router.openstack.org/move-to";
/// The move in progress of the Ingress's host group (written by the controller).
pub const MOVE_ANNOTATION: &str = "placement.kuryr-l7-router.openstack.org/move";

/// The moves in progress, by the group id they started with.
pub type Moves = BTreeMap<GroupId, MovePlan>;

/// `namespace/name` of an Ingress, as the placement keys it.
pub fn ingress_key(ing: &Ingress) -> String {
    format!("{}/{}", namespace_of(&ing.metadata), ing.metadata.name.as_deref().unwrap_or_default())
}

/// The hosts of an Ingress's rules, normalized.
pub fn ingress_hosts(ing: &Ingress) -> BTreeSet<String> {
    let rules = ing.spec.as_ref().and_then(|s| s.rules.as_ref());
    rules.into_iter().flatten().filter_map(|r| r.host.as_deref()).map(normalize_host).collect()
}

pub(crate) fn annotation<'a>(ing: &'a Ingress, key: &str) -> Option<&'a str> {
    ing.metadata.annotations.as_ref().and_then(|a| a.get(key)).map(String::as_str)
}

/// A move the operator asked for: the Ingress key and the target, or why it cannot be done.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MoveAsk {
    pub ingress: String,
    pub target: Result<RouterIndex, String>,
}

/// The asks of Ingresses outside `allowed` (`[octavia_defaults] move_request_namespaces`)
/// refused: a tenant may not steer the set (make it create routers, move its hosts at will).
pub fn admit_asks(asks: Vec<MoveAsk>, allowed: &[String]) -> Vec<MoveAsk> {
    asks.into_iter()
        .map(|mut ask| {
            let ns = ask.ingress.split_once('/').map_or("", |(ns, _)| ns);
            if ask.target.is_ok() && !allowed.iter().any(|a| a == ns) {
                ask.target = Err(format!(
                    "{MOVE_TO_ANNOTATION}: namespace {ns:?} may not ask for moves (not in [octavia_defaults] \
                     move_request_namespaces); ask the operator (kuryr-l7-router move)"
                ));
            }
            ask
        })
        .collect()
}

/// The moves asked for with [`MOVE_TO_ANNOTATION`].
pub fn move_asks<'a>(base: &str, ingresses: impl IntoIterator<Item = &'a Ingress>) -> Vec<MoveAsk> {
    let mut out = Vec::new();
    for ing in ingresses {
        let Some(name) = annotation(ing, MOVE_TO_ANNOTATION) else { continue };
        let target = match router_index(base, name.trim()) {
            Some(i) => Ok(i),
            None => Err(format!(
                "{MOVE_TO_ANNOTATION}: {name:?} is not a router of this set (expected {base} or {base}-N, N >= 2)"
            )),
        };
        out.push(MoveAsk { ingress: ingress_key(ing), target });
    }
    out
}

/// What automatic moves need from the Syncs before: the last placement's groups by host (to
/// see which groups grew), and the hosts of grown groups whose router is still over capacity
/// (a router busy with another move is relieved once that move is done).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Growth {
    pub before: HostCosts,
    pub pending: BTreeSet<String>,
    /// Scale-out is off: the routers other than the first drain into it (`placement::excess`).
    pub draining: bool,
    /// Hosts a rolled-back move keeps off its target for a while (`router_set::rollback`): no
    /// move of theirs to that router starts, whatever its cause.
    pub held: BTreeMap<String, BTreeSet<RouterIndex>>,
}

/// The placement with the moves applied, and the moves in force.
#[derive(Clone, Debug, PartialEq)]
pub struct MovesPlaced {
    pub placement: Placement,
    /// The moves in progress (a move whose hosts are all gone is dropped).
    pub moves: Moves,
    /// Moves started by this placement.
    pub started: Vec<MovePlan>,
    /// Asks that cannot be done: (Ingress key, why).
    pub refused: Vec<(String, String)>,
    /// [`Growth::pending`] for the next placement.
    pub pending: BTreeSet<String>,
}

/// Places with the moves: a moving group's hosts are placed on the target (its cost counts
/// there from the start). Moves start for: the parts of a group that an Ingress merged on
/// another router (to the router of the rest), an ask whose Ingress's group is elsewhere and
/// not moving, and a group that grew on a router now over capacity (`placement::relief`).
/// Pure.
pub fn place_with_moves(
    desired: &crate::model::DesiredRouter,
    params: &SplitParams,
    mut moves: Moves,
    asks: &[MoveAsk],
    now: UnixSeconds,
    growth: &Growth,
) -> MovesPlaced {
    let mut params = params.clone();
    pin_moving_hosts(&mut params, moves.values());
    let mut placement = place_moving(desired, &params, moves.values());
    let placed_hosts = &placement.host_router;
    moves.retain(|_, m| m.hosts.iter().any(|h| placed_hosts.contains_key(h)));
    let mut started = merge_moves(&placement, &moves, now);
    let refused = operator_moves(&placement, &params.routers, &moves, asks, now, &mut started);
    let mut grown = relief::grown_groups(&growth.before, &placement);
    grown.extend(placement.groups.iter().filter(|g| !g.hosts.is_disjoint(&growth.pending)).map(|g| g.id.clone()));
    // A group the operator placed (a move-to annotation, which may stay after its move) is
    // never moved automatically: the next Sync would move it back to the named router.
    let asked = |g: &HostGroup| asks.iter().any(|a| a.target.is_ok() && g.ingresses.contains(&a.ingress));
    grown.retain(|id| placement.groups.iter().find(|g| &g.id == id).is_none_or(|g| !asked(g)));
    let mut busy: BTreeSet<RouterIndex> = moves.values().chain(&started).flat_map(|m| [m.from, m.to]).collect();
    // A router that fails (or has not settled) is neither a relief's target nor its source: a
    // move to or from it would wait on a Sync that does not succeed.
    busy.extend(params.routers.iter().filter(|(_, rec)| !rec.health.takes_new_groups(now)).map(|(r, _)| *r));
    for (request, cause) in relief::relief_moves(&placement, params.capacity, &grown, &busy) {
        started.push(MovePlan::start(&request, now).because(cause));
    }
    // What is still over capacity (capacity lowered, groups observed on a full router), or the
    // drain of scale-out turned off: make-before-break moves too.
    busy.extend(started.iter().flat_map(|m| [m.from, m.to]));
    let more = match growth.draining {
        true => excess::drain_moves(&placement, &busy),
        false => {
            let stay = placement.groups.iter().filter(|g| asked(g)).map(|g| g.id.clone()).collect();
            excess::excess_moves(&placement, params.capacity, &busy, &stay)
        }
    };
    started.extend(more.into_iter().map(|(request, cause)| MovePlan::start(&request, now).because(cause)));
    started.retain(|m| !m.hosts.iter().any(|h| growth.held.get(h).is_some_and(|to| to.contains(&m.to))));
    let moving = |g: &HostGroup| moves.values().chain(&started).any(|m| !m.hosts.is_disjoint(&g.hosts));
    let over = |g: &HostGroup| {
        let router = placement.group_router.get(&g.id).and_then(|r| placement.routers.get(r));
        router.is_some_and(|l| !l.cost.fits(params.capacity))
    };
    let pending = placement
        .groups
        .iter()
        .filter(|g| grown.contains(&g.id) && over(g) && !moving(g))
        .flat_map(|g| g.hosts.iter().cloned())
        .collect();
    if !started.is_empty() {
        pin_moving_hosts(&mut params, started.iter());
        placement = place_moving(desired, &params, moves.values().chain(&started));
        moves.extend(started.iter().map(|m| (m.group.clone(), m.clone())));
    }
    MovesPlaced { placement, moves, started, refused, pending }
}

/// A group an Ingress ties across routers stays on the router holding most of its hosts
/// (placement rule 6): each other part moves there, make-before-break, keyed by its own
/// smallest host (the parts of one group move independently). A part already moving waits.
fn merge_moves(placement: &Placement, moves: &Moves, now: UnixSeconds) -> Vec<MovePlan> {
    let mut out: Vec<MovePlan> = Vec::new();
    for request in &placement.moves {
        let busy = moves.values().chain(&out).any(|m| !m.hosts.is_disjoint(&request.hosts));
        let Some(first) = request.hosts.first().filter(|_| !busy) else { continue };
        let part = MoveRequest { group: first.clone(), ..request.clone() };
        out.push(MovePlan::start(&part, now).because(MoveCause::Merge));
    }
    out
}

/// The moves asked for with [`MOVE_TO_ANNOTATION`] that start now (pushed on `started`), and
/// the asks refused: (Ingress key, why).
fn operator_moves(
    placement: &Placement,
    routers: &BTreeMap<RouterIndex, crate::placement::RouterRecord>,
    moves: &Moves,
    asks: &[MoveAsk],
    now: UnixSeconds,
    started: &mut Vec<MovePlan>,
) -> Vec<(String, String)> {
    let mut refused = Vec::new();
    for ask in asks {
        let to = match &ask.target {
            Ok(to) => *to,
            Err(why) => {
                refused.push((ask.ingress.clone(), why.clone()));
                continue;
            }
        };
        let Some(group) = placement.groups.iter().find(|g| g.ingresses.contains(&ask.ingress)) else { continue };
        let Some(&from) = placement.group_router.get(&group.id) else { continue };
        let taken: BTreeSet<RouterIndex> = moves.values().chain(started.iter()).map(|m| m.to).collect();
        if let Err(why) = within_bounds(placement, routers, &taken, to) {
            refused.push((ask.ingress.clone(), why));
            continue;
        }
        let busy = moves.values().chain(started.iter()).any(|m| !m.hosts.is_disjoint(&group.hosts));
        if from == to || busy {
            continue;
        }
        let request = MoveRequest { group: group.id.clone(), hosts: group.hosts.clone(), from, to };
        started.push(MovePlan::start(&request, now));
    }
    refused
}

/// Whether an operator's move may go to router `to`: a router of the set (in the placement, or
/// the target of a move, `taken`), or the next new one (the smallest free index, as placement
/// would make it). A name an untagged load balancer holds is not: moving there would adopt
/// that load balancer.
pub fn within_bounds(
    placement: &Placement,
    routers: &BTreeMap<RouterIndex, crate::placement::RouterRecord>,
    taken: &BTreeSet<RouterIndex>,
    to: RouterIndex,
) -> Result<(), String> {
    let untagged = |i: &RouterIndex| routers.get(i).is_some_and(|r| r.untagged);
    let used = |i: &RouterIndex| placement.routers.get(i).is_some_and(|l| !l.groups.is_empty()) || taken.contains(i);
    let known = |i: &RouterIndex| placement.routers.contains_key(i) || taken.contains(i);
    if known(&to) && (!untagged(&to) || used(&to)) {
        return Ok(());
    }
    let next = (1..).find(|i| !known(i) && !untagged(i)).unwrap_or(1);
    if to == next {
        return Ok(());
    }
    Err(format!(
        "{MOVE_TO_ANNOTATION}: router index {to} is outside the set's bounds (its routers are {:?}; a new one \
         would be index {next})",
        placement.routers.keys().collect::<Vec<_>>()
    ))
}

/// The move that goes on from a move just finished (`done`) whose hosts the placement puts on
/// another router than its target: an Ingress tied them, while both moved, to a group another
/// move took elsewhere (the target holding most moving hosts wins the tie). They do not switch
/// there at once (the target published their address until now): they move on from the target
/// to that router through the phases, as any part of a tied group does (a merge).
pub fn chained(done: &MovePlan, placement: &Placement, now: UnixSeconds) -> Option<MovePlan> {
    if !matches!(done.phase, MovePhase::Done { .. }) {
        return None;
    }
    let hosts: BTreeSet<String> =
        done.hosts.iter().filter(|h| placement.host_router.contains_key(*h)).cloned().collect();
    let to = *placement.host_router.get(hosts.first()?)?;
    let request = MoveRequest { group: done.group.clone(), hosts, from: done.to, to };
    (to != done.to).then(|| MovePlan::start(&request, now).because(MoveCause::Merge))
}

/// Places with the hosts of `moves` as moving: a group an Ingress ties to a moving part stays
/// on that move's target (the other parts move there), so the tie never takes hosts away from
/// the router the move publishes.
fn place_moving<'a>(
    desired: &crate::model::DesiredRouter,
    params: &SplitParams,
    moves: impl Iterator<Item = &'a MovePlan>,
) -> Placement {
    let mut input = placement_input(desired, params);
    let in_progress: Vec<&MovePlan> = moves.filter(|m| !matches!(m.phase, MovePhase::Done { .. })).collect();
    input.moving = in_progress.iter().flat_map(|m| m.hosts.iter().cloned()).collect();
    // Each source routes its move's hosts until the move is done: never empty meanwhile.
    input.serving = in_progress.iter().map(|m| m.from).collect();
    place(&input)
}

fn pin_moving_hosts<'a>(params: &mut SplitParams, moves: impl Iterator<Item = &'a MovePlan>) {
    for m in moves.filter(|m| !matches!(m.phase, MovePhase::Done { .. })) {
        for h in &m.hosts {
            params.current.insert(h.clone(), m.to);
        }
        params.routers.entry(m.to).or_default();
    }
}

/// Where each host's routes are: its placed router, the target of its move (which publishes
/// its address until the move is done), and the source until the move deletes its old routes.
pub fn homes(placement: &Placement, moves: &Moves) -> Homes {
    let mut homes = Homes::of(placement);
    for m in moves.values().filter(|m| m.routes_wanted().source) {
        for h in &m.hosts {
            if let Some(routers) = homes.hosts.get_mut(h) {
                routers.insert(m.from);
                routers.insert(m.to);
            }
        }
        homes.routers.insert(m.from);
        homes.routers.insert(m.to);
    }
    homes
}

/// The move in progress that carries every host of `ing`, if any: its status is the move's.
/// An Ingress with hosts outside the move (the Ingress that tied a merge) is on the target,
/// which routes all its hosts from the move's start: its status is its router's.
pub fn move_of<'a>(moves: &'a Moves, ing: &Ingress) -> Option<&'a MovePlan> {
    let hosts = ingress_hosts(ing);
    let carries = |m: &&MovePlan| !hosts.is_empty() && hosts.is_subset(&m.hosts);
    moves.values().filter(|m| !matches!(m.phase, MovePhase::Done { .. })).find(carries)
}

#[cfg(test)]
#[path = "moves_tests.rs"]
mod tests;
