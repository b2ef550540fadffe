//! Which router each host group goes to.
//!
//! The rules (see `docs/scale-out.md`): every host on exactly one router; a placed group stays
//! where it is (also when its router fills up or other groups go away); a new group goes to the
//! router with the most room that fits it among the routers that take new groups (not failing,
//! see [`super::health`]), else to a new router (unless a router of the set fails: then to the
//! failing router with room, where it waits, rather than to one more router that would fail
//! the same way); a group too big for any router
//! gets a router of its own and a warning; groups that merge stay on the router holding most of
//! their hosts and the other parts are moved there, make-before-break; an empty router other
//! than the first is deleted once it has been empty for a grace period.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::groups::{GroupId, HostGroup, IngressClaim, group_claims};
use super::health::RouterHealth;
use super::{Capacity, Cost, RouterIndex, UnixSeconds};

/// What the placement recorded about an existing router.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RouterRecord {
    /// When the router was first seen holding no group (None while it holds groups).
    pub empty_since: Option<UnixSeconds>,
    /// A load balancer of this cluster holds the router's name without our set tag (made before
    /// set tags). Unless the recorded placement names it (then it is ours: its Sync tags it),
    /// no group goes there, nor does a new router take its index: placing one would adopt
    /// that load balancer by name.
    #[serde(default)]
    pub untagged: bool,
    /// Its health as its writer last saw it: a router that fails, or has not been healthy for
    /// long, takes no new group (the groups placed there stay).
    #[serde(default)]
    pub health: RouterHealth,
    /// Scale-out is off and this router drains into the first: it takes no new group.
    #[serde(default)]
    pub draining: bool,
}

/// Everything placement depends on; nothing else is read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlacementInput {
    pub claims: Vec<IngressClaim>,
    /// Cost copied to every router: the router-wide default backend and host-less rules that
    /// are not in `claims` (host-less claims are added to it).
    pub shared: Cost,
    pub capacity: Capacity,
    /// The recorded placement: host → router. Keyed by host, not by group, because a group's
    /// identity changes when groups merge or split while each host's router does not.
    pub current: BTreeMap<String, RouterIndex>,
    /// The routers that exist (router 0 is always part of the set).
    pub routers: BTreeMap<RouterIndex, RouterRecord>,
    pub now: UnixSeconds,
    /// How long a router other than the first stays empty before it is deleted.
    pub empty_grace_secs: u64,
    /// Hosts of the moves in progress (`current` names each one's target). A group holding any
    /// stays on such a target, and its other parts move there: a merge never takes hosts away
    /// from a move's target while the move publishes that target's address.
    #[serde(default)]
    pub moving: BTreeSet<String>,
    /// The sources of the moves in progress: each still routes its move's hosts (until the
    /// move's `DeleteOld` has cleared them), and DNS may still send clients there. Such a
    /// router is kept, never empty (so never deleted), whatever is placed on it.
    #[serde(default)]
    pub serving: BTreeSet<RouterIndex>,
}

/// A part of a group to move to the router of the rest of its group (after a merge).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MoveRequest {
    pub group: GroupId,
    pub hosts: BTreeSet<String>,
    pub from: RouterIndex,
    pub to: RouterIndex,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum PlacementWarning {
    /// The group alone (with the shared cost) exceeds a router's capacity: it got a router of
    /// its own and that router is over capacity.
    OversizedGroup { group: GroupId, cost: Cost, router: RouterIndex },
    /// A router is over capacity because placed groups grew or merged (or the shared part
    /// did). Placement moves nothing; the controller moves a group that grew there
    /// (`relief`), the operator may move any.
    OverCapacity { router: RouterIndex, cost: Cost, groups: BTreeSet<GroupId> },
    /// The cost copied to every router (default backend, host-less rules) alone exceeds a
    /// router's capacity: every router is over, and more routers do not help.
    SharedOverCapacity { cost: Cost },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum RouterFate {
    /// Holds groups, or is the first router: kept.
    Keep,
    /// Empty since `since`; deleted once `now >= delete_at`. Record `since` where the next
    /// leader finds it.
    Empty { since: UnixSeconds, delete_at: UnixSeconds },
    /// Empty for the whole grace period: delete it (no group was placed on it).
    Delete,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RouterLoad {
    pub groups: BTreeSet<GroupId>,
    /// Shared cost plus the cost of its groups.
    pub cost: Cost,
    pub fate: RouterFate,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    pub groups: Vec<HostGroup>,
    pub shared: Cost,
    pub group_router: BTreeMap<GroupId, RouterIndex>,
    /// Every host of every group, on exactly one router (after the moves below).
    pub host_router: BTreeMap<String, RouterIndex>,
    /// Ingresses with hosts → their router (an Ingress with only host-less rules is on all).
    pub ingress_router: BTreeMap<String, RouterIndex>,
    pub routers: BTreeMap<RouterIndex, RouterLoad>,
    pub moves: Vec<MoveRequest>,
    pub warnings: Vec<PlacementWarning>,
    /// Indices held by untagged load balancers no placement names ([`RouterRecord::untagged`]):
    /// not in `routers`, and no new router takes them.
    #[serde(default)]
    pub held: BTreeSet<RouterIndex>,
}

/// Working state while placing.
struct Loads {
    cap: Capacity,
    shared: Cost,
    cost: BTreeMap<RouterIndex, Cost>,
    groups: BTreeMap<RouterIndex, BTreeSet<GroupId>>,
    held: BTreeSet<RouterIndex>,
    /// Routers that take no new group ([`RouterHealth::takes_new_groups`]).
    closed: BTreeSet<RouterIndex>,
    /// A router of the set fails now: no new router is opened while one is in use elsewhere.
    failing: bool,
}

impl Loads {
    fn add(&mut self, router: RouterIndex, group: &HostGroup) {
        let shared = self.shared;
        let c = self.cost.entry(router).or_insert(shared);
        *c = c.plus(group.cost);
        self.groups.entry(router).or_default().insert(group.id.clone());
    }

    fn is_empty(&self, router: RouterIndex) -> bool {
        self.groups.get(&router).is_none_or(BTreeSet::is_empty)
    }

    /// The smallest index not in use: the name `<base>-N` of a deleted router is reused.
    fn new_router(&mut self) -> RouterIndex {
        let free = |i: &RouterIndex| !self.cost.contains_key(i) && !self.held.contains(i);
        let index = (0..).find(free).expect("fewer than u32::MAX routers");
        self.cost.insert(index, self.shared);
        index
    }
}

/// Places every group. Deterministic: the same inputs in any order give the same placement.
pub fn place(input: &PlacementInput) -> Placement {
    let (groups, hostless) = group_claims(&input.claims);
    let shared = input.shared.plus(hostless);
    let named: BTreeSet<RouterIndex> = input.current.values().copied().collect();
    let held: BTreeSet<RouterIndex> =
        input.routers.iter().filter(|(r, rec)| rec.untagged && !named.contains(r)).map(|(r, _)| *r).collect();
    let closed = input
        .routers
        .iter()
        .filter(|(_, rec)| rec.draining || !rec.health.takes_new_groups(input.now))
        .map(|(r, _)| *r);
    let failing = input.routers.values().any(|rec| rec.health == RouterHealth::Failing);
    let mut loads = Loads {
        cap: input.capacity,
        shared,
        cost: BTreeMap::new(),
        groups: BTreeMap::new(),
        held,
        closed: closed.collect(),
        failing,
    };
    let known = input.routers.keys().filter(|r| !loads.held.contains(r)).chain(&named).chain(&input.serving);
    let known = known.copied().chain([0]);
    for r in known {
        loads.cost.insert(r, shared);
    }
    let mut group_router = BTreeMap::new();
    let mut moves = Vec::new();
    let mut new_groups = Vec::new();
    for group in &groups {
        match keep_placed(group, input, &mut moves) {
            Some(router) => {
                loads.add(router, group);
                group_router.insert(group.id.clone(), router);
            }
            None => new_groups.push(group),
        }
    }
    let expired: BTreeSet<RouterIndex> = loads
        .cost
        .keys()
        .copied()
        .filter(|&r| r != 0 && loads.is_empty(r) && !input.serving.contains(&r) && grace_over(input, r))
        .collect();
    let mut warnings = Vec::new();
    if !shared.fits(input.capacity) {
        warnings.push(PlacementWarning::SharedOverCapacity { cost: shared });
    }
    // Largest first (first-fit decreasing packs tighter), then by id for a total order.
    new_groups.sort_by(|a, b| b.cost.cmp(&a.cost).then_with(|| a.id.cmp(&b.id)));
    for group in new_groups {
        let router = choose_router(&mut loads, &expired, group, &mut warnings);
        loads.add(router, group);
        group_router.insert(group.id.clone(), router);
    }
    let over = over_capacity_warnings(&loads, &warnings);
    warnings.extend(over);
    let routers = router_fates(input, &loads, &expired);
    let mut host_router = BTreeMap::new();
    let mut ingress_router = BTreeMap::new();
    for group in &groups {
        let router = group_router[&group.id];
        host_router.extend(group.hosts.iter().map(|h| (h.clone(), router)));
        ingress_router.extend(group.ingresses.iter().map(|i| (i.clone(), router)));
    }
    let held = loads.held;
    Placement { groups, shared, group_router, host_router, ingress_router, routers, moves, warnings, held }
}

/// The router of an already placed group: the router holding most of its hosts (ties: the
/// lowest index, the older router); of a group holding hosts of a move in progress, the target
/// of those moves holding most of them. Hosts recorded on other routers (the group merged) are
/// moved there; hosts not recorded yet (new hosts) simply join.
fn keep_placed(group: &HostGroup, input: &PlacementInput, moves: &mut Vec<MoveRequest>) -> Option<RouterIndex> {
    let mut parts: BTreeMap<RouterIndex, BTreeSet<String>> = BTreeMap::new();
    let mut moving: BTreeMap<RouterIndex, usize> = BTreeMap::new();
    for host in &group.hosts {
        if let Some(&r) = input.current.get(host) {
            parts.entry(r).or_default().insert(host.clone());
            if input.moving.contains(host) {
                *moving.entry(r).or_default() += 1;
            }
        }
    }
    let mut anchor: Option<(RouterIndex, usize)> = None;
    for (&r, hosts) in &parts {
        // A move's target wins over any router without a move to it.
        let weight = if moving.is_empty() { hosts.len() } else { moving.get(&r).copied().unwrap_or(0) };
        if weight > 0 && anchor.is_none_or(|(_, n)| weight > n) {
            anchor = Some((r, weight));
        }
    }
    let (anchor, _) = anchor?;
    for (r, hosts) in parts {
        if r != anchor {
            moves.push(MoveRequest { group: group.id.clone(), hosts, from: r, to: anchor });
        }
    }
    Some(anchor)
}

fn grace_over(input: &PlacementInput, router: RouterIndex) -> bool {
    let since = input.routers.get(&router).and_then(|r| r.empty_since);
    since.is_some_and(|t| input.now >= t.saturating_add(input.empty_grace_secs))
}

/// A router for a group placed for the first time: among the routers that take new groups;
/// failing that, a new router, unless a router of the set fails (a quota or a refused create
/// fails the next router too): then a failing router, where the group waits for it.
fn choose_router(
    loads: &mut Loads,
    expired: &BTreeSet<RouterIndex>,
    group: &HostGroup,
    warnings: &mut Vec<PlacementWarning>,
) -> RouterIndex {
    let (open, closed): (Vec<RouterIndex>, Vec<RouterIndex>) =
        loads.cost.keys().copied().filter(|r| !expired.contains(r)).partition(|r| !loads.closed.contains(r));
    let failing = loads.failing;
    if !loads.shared.plus(group.cost).fits(loads.cap) {
        let empty = |list: &[RouterIndex]| list.iter().copied().find(|&r| loads.is_empty(r));
        let router =
            empty(&open).or_else(|| if failing { empty(&closed) } else { None }).unwrap_or_else(|| loads.new_router());
        warnings.push(PlacementWarning::OversizedGroup {
            group: group.id.clone(),
            cost: loads.shared.plus(group.cost),
            router,
        });
        return router;
    }
    if let Some(router) = most_room(loads, &open, group) {
        return router;
    }
    if failing && let Some(router) = most_room(loads, &closed, group) {
        return router;
    }
    loads.new_router()
}

/// The router of `candidates` with the most room that `group` fits (ties: the lowest index).
fn most_room(loads: &Loads, candidates: &[RouterIndex], group: &HostGroup) -> Option<RouterIndex> {
    let mut best: Option<(RouterIndex, u64)> = None;
    for &r in candidates {
        let used = loads.cost[&r];
        if !used.plus(group.cost).fits(loads.cap) {
            continue;
        }
        let room = loads.cap.room_ppm(used);
        if best.is_none_or(|(_, b)| room > b) {
            best = Some((r, room));
        }
    }
    best.map(|(r, _)| r)
}

/// Routers over capacity for any reason other than one oversized group placed alone.
fn over_capacity_warnings(loads: &Loads, oversized: &[PlacementWarning]) -> Vec<PlacementWarning> {
    let alone: BTreeSet<RouterIndex> = oversized
        .iter()
        .filter_map(|w| match w {
            PlacementWarning::OversizedGroup { router, .. } => Some(*router),
            _ => None,
        })
        .collect();
    let mut out = Vec::new();
    for (&router, &cost) in &loads.cost {
        let groups = loads.groups.get(&router).cloned().unwrap_or_default();
        let single_oversized = alone.contains(&router) && groups.len() == 1;
        if !cost.fits(loads.cap) && !single_oversized && !groups.is_empty() {
            out.push(PlacementWarning::OverCapacity { router, cost, groups });
        }
    }
    out
}

fn router_fates(
    input: &PlacementInput,
    loads: &Loads,
    expired: &BTreeSet<RouterIndex>,
) -> BTreeMap<RouterIndex, RouterLoad> {
    let mut out = BTreeMap::new();
    for (&router, &cost) in &loads.cost {
        let groups = loads.groups.get(&router).cloned().unwrap_or_default();
        // A move's source still serving its hosts is not empty: deleting it would drop routes
        // that DNS may still resolve to (the move is make-before-break, so is its end).
        let fate = if router == 0 || !groups.is_empty() || input.serving.contains(&router) {
            RouterFate::Keep
        } else if expired.contains(&router) {
            RouterFate::Delete
        } else {
            let since = input.routers.get(&router).and_then(|r| r.empty_since).unwrap_or(input.now);
            RouterFate::Empty { since, delete_at: since.saturating_add(input.empty_grace_secs) }
        };
        out.insert(router, RouterLoad { groups, cost, fate });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim(name: &str, hosts: &[&str], policies: u32) -> IngressClaim {
        IngressClaim {
            ingress: name.into(),
            hosts: hosts.iter().map(|h| h.to_string()).collect(),
            policies,
            certificates: BTreeSet::new(),
        }
    }

    fn input(claims: Vec<IngressClaim>, current: &[(&str, RouterIndex)]) -> PlacementInput {
        PlacementInput {
            claims,
            shared: Cost::new(1, 0),
            capacity: Capacity { max_policies: 10, max_certificates: 4 },
            current: current.iter().map(|(h, r)| (h.to_string(), *r)).collect(),
            routers: BTreeMap::new(),
            now: 1000,
            empty_grace_secs: 600,
            moving: BTreeSet::new(),
            serving: BTreeSet::new(),
        }
    }

    #[test]
    fn merge_keeps_the_router_of_the_larger_part_and_moves_the_other() {
        let p = place(&input(
            vec![claim("ns/a", &["a.com", "b.com"], 2), claim("ns/tie", &["b.com", "c.com"], 1)],
            &[("a.com", 1), ("b.com", 1), ("c.com", 0)],
        ));
        assert_eq!(p.group_router["a.com"], 1);
        assert_eq!(p.host_router["c.com"], 1);
        assert_eq!(p.moves.len(), 1);
        assert_eq!(p.moves[0].from, 0);
        assert_eq!(p.moves[0].to, 1);
        assert_eq!(p.moves[0].hosts.iter().collect::<Vec<_>>(), ["c.com"]);
    }

    #[test]
    fn merge_of_equal_parts_stays_on_the_lower_router() {
        let p = place(&input(vec![claim("ns/tie", &["x.com", "y.com"], 1)], &[("x.com", 2), ("y.com", 1)]));
        assert_eq!(p.group_router["x.com"], 1);
        assert_eq!(p.moves[0].from, 2);
    }

    /// Router 1 holds no group any more (its hosts are placed on their move's target) and has
    /// been empty longer than its grace, but the move's source still routes them: it is kept,
    /// not empty. Once the move is done it is empty from then, and deleted after its grace.
    #[test]
    fn a_move_source_still_serving_is_kept_however_long_it_holds_no_group() {
        let mut i = input(vec![claim("ns/c", &["c.com"], 1)], &[("c.com", 0)]);
        i.routers.insert(1, RouterRecord { empty_since: Some(1), ..RouterRecord::default() });
        i.moving = ["c.com".to_string()].into();
        i.serving = [1].into();
        assert_eq!(place(&i).routers[&1].fate, RouterFate::Keep, "the source of a move in progress");
        i.serving.clear();
        i.routers.insert(1, RouterRecord::default());
        let p = place(&i);
        assert_eq!(p.routers[&1].fate, RouterFate::Empty { since: 1000, delete_at: 1600 }, "the move done");
    }

    /// Router 1's name is held by an untagged load balancer that no placement names: a group
    /// that fits nowhere else gets a new router at index 2, not 1. Once the recorded placement
    /// names index 1, it is a router of the set like the others.
    #[test]
    fn a_new_group_is_kept_off_an_index_an_untagged_load_balancer_holds() {
        let claims = || vec![claim("ns/a", &["a.com"], 8), claim("ns/b", &["b.com"], 8)];
        let mut i = input(claims(), &[("a.com", 0)]);
        i.routers.insert(1, RouterRecord { untagged: true, ..RouterRecord::default() });
        let p = place(&i);
        assert_eq!(p.group_router["b.com"], 2);
        assert_eq!(p.routers.keys().copied().collect::<Vec<_>>(), [0, 2], "index 1 is not a router of the set");
        assert_eq!(p.held, [1].into());
        let mut named = input(claims(), &[("a.com", 0), ("b.com", 1)]);
        named.routers.insert(1, RouterRecord { untagged: true, ..RouterRecord::default() });
        assert_eq!(place(&named).group_router["b.com"], 1);
    }

    /// A group holding a host of a move in progress stays on that move's target, even when
    /// another router holds more of its hosts: the other part moves there.
    #[test]
    fn a_merge_with_a_moving_part_goes_to_the_moves_target() {
        let claims = vec![claim("ns/a", &["a.com", "b.com"], 2), claim("ns/tie", &["b.com", "c.com"], 1)];
        let mut i = input(claims, &[("a.com", 0), ("b.com", 0), ("c.com", 3)]);
        i.moving = ["c.com".to_string()].into();
        let p = place(&i);
        assert_eq!(p.group_router["a.com"], 3);
        let moves: Vec<_> = p.moves.iter().map(|m| (m.hosts.len(), m.from, m.to)).collect();
        assert_eq!(moves, [(2, 0, 3)]);
    }

    /// A router that fails, or has not been healthy for its settle period, gets no new group:
    /// it goes to the router with room among the others. The groups placed on it stay. When no
    /// other router has room, no new router is opened while one fails (it would fail the same
    /// way): the group waits on the failing router. A router only recovering opens none.
    #[test]
    fn new_groups_stay_off_routers_that_fail_or_have_not_settled() {
        use RouterHealth::{Failing, Healthy, Recovering};
        // Router 0 holds a.com (5 policies), 1 holds b.com (4), 2 holds d.com (1); new: c.com
        // (`c` policies). Capacity 10, shared 1: rooms 40 %, 50 %, 80 %.
        let placed = |health: RouterHealth, c: u32| {
            let claims = vec![claim("ns/a", &["a.com"], 5), claim("ns/b", &["b.com"], 4), claim("ns/d", &["d.com"], 1)];
            let mut claims = claims;
            claims.push(claim("ns/c", &["c.com"], c));
            let mut i = input(claims, &[("a.com", 0), ("b.com", 1), ("d.com", 2)]);
            i.routers.insert(2, RouterRecord { health, ..RouterRecord::default() });
            let p = place(&i);
            assert_eq!(p.host_router["d.com"], 2, "a placed group stays ({health:?})");
            p.host_router["c.com"]
        };
        // (router 2's health at now = 1000, c.com's policies, c.com's router)
        let cases = [
            (Healthy, 2, 2),
            (Failing, 2, 1),
            (Recovering { until: 1300 }, 2, 1),
            (Recovering { until: 1000 }, 2, 2),
            // Fits only on router 2: it waits there rather than on a new router.
            (Failing, 6, 2),
            // Router 2 is built (recovering): a new router, as for a full set.
            (Recovering { until: 1300 }, 6, 3),
            // Fits nowhere: a new router either way.
            (Failing, 9, 3),
        ];
        for (health, c, want) in cases {
            assert_eq!(placed(health, c), want, "router 2 {health:?}, c.com {c} policies");
        }
    }
}
