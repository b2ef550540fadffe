//! The routes the routers hold, as the placement's record when there is none (issue 36, item
//! 2): the first start with scale-out (the single router full of routes, no records yet), and a
//! start whose records were lost (their ConfigMaps deleted, a restore from a backup). Without
//! this every group was placed as new, and a router whose groups went elsewhere deleted their
//! routes at once, while the new router was still being built.
//!
//! A host a router routes and no record places is recorded on that router: placement then keeps
//! it there (a placed group never moves by itself), and a router over capacity sends its excess
//! elsewhere through make-before-break moves (`placement::excess`). A host routed by several
//! routers (the records of a move lost) is recorded on the lowest of them, and a move from each
//! other one to it starts in `PublishBoth`: the others keep its routes for both DNS graces, as
//! any move's source does.

use crate::controller::router_set::store::{HostRecord, SetRecords};
use crate::placement::moves::MoveCause;
use crate::placement::{MovePhase, MovePlan, RouterIndex, UnixSeconds};
use std::collections::{BTreeMap, BTreeSet};

/// Adds to `records` the hosts `observed` (each router's routed hosts) that no record places
/// and no recorded move carries; returns how many hosts were added.
pub fn adopt_observed(
    records: &mut SetRecords,
    observed: &BTreeMap<RouterIndex, BTreeSet<String>>,
    now: UnixSeconds,
) -> usize {
    let moving: BTreeSet<&String> = records.moves.values().flat_map(|m| m.hosts.iter()).collect();
    let mut routers_of: BTreeMap<&String, Vec<RouterIndex>> = BTreeMap::new();
    for (r, hosts) in observed {
        for h in hosts {
            routers_of.entry(h).or_default().push(*r);
        }
    }
    let mut doubles: BTreeMap<(RouterIndex, RouterIndex), BTreeSet<String>> = BTreeMap::new();
    let mut added = 0;
    for (host, routers) in routers_of {
        if records.hosts.contains_key(host) || moving.contains(host) {
            continue;
        }
        let Some((&home, others)) = routers.split_first() else { continue };
        records.hosts.insert(host.clone(), HostRecord::on(home));
        added += 1;
        for &from in others {
            doubles.entry((from, home)).or_default().insert(host.clone());
        }
    }
    for ((from, to), hosts) in doubles {
        let Some(group) = hosts.first().cloned() else { continue };
        let plan = MovePlan {
            group: group.clone(),
            hosts,
            from,
            to,
            phase: MovePhase::PublishBoth { since: now },
            cause: MoveCause::Observed,
        };
        records.moves.insert(group, plan);
    }
    added
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(hosts: &[&str]) -> BTreeSet<String> {
        hosts.iter().map(|h| h.to_string()).collect()
    }

    /// Unrecorded hosts are recorded where they are routed; recorded ones and moving ones are
    /// left as recorded; a host on two routers stays on the lower, the other one keeping it
    /// through a move's graces.
    #[test]
    fn observed_routes_become_the_record_where_there_is_none() {
        let mut records = SetRecords::default();
        records.hosts.insert("r.com".into(), HostRecord::on(1));
        let observed: BTreeMap<RouterIndex, BTreeSet<String>> =
            [(0, set(&["a.com", "b.com", "r.com"])), (1, set(&["b.com", "c.com"]))].into();
        let added = adopt_observed(&mut records, &observed, 500);
        assert_eq!(added, 3);
        let on: BTreeMap<&str, RouterIndex> = records.hosts.iter().map(|(h, r)| (h.as_str(), r.router)).collect();
        assert_eq!(on, [("a.com", 0), ("b.com", 0), ("c.com", 1), ("r.com", 1)].into());
        let moves: Vec<_> = records.moves.values().map(|m| (m.hosts.clone(), m.from, m.to, m.phase)).collect();
        assert_eq!(moves, [(set(&["b.com"]), 1, 0, MovePhase::PublishBoth { since: 500 })]);
        // Nothing new the second time.
        assert_eq!(adopt_observed(&mut records, &observed, 600), 0);
    }
}
