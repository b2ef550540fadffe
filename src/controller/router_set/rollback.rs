//! Moves that go back: a move whose target is not ACTIVE with the group's routes within
//! `[octavia_defaults] move_target_timeout` is rolled back, and the operator may cancel a move
//! (`kuryr-l7-router move NS/ING --cancel`, a cancel request in the asks' ConfigMap) until it
//! starts deleting the old routes.
//!
//! The source serves the group throughout: a move's source keeps its routes until
//! `DeleteOld`, and a rollback never reaches that phase.
//! - Before the target served the group (`CreateOnTarget`: the status shows the source only,
//!   DNS never named the target), the move is dropped: the group is placed on its source
//!   again, so the target's next Sync removes its partial routes, and the status stays the
//!   source's.
//! - Once the target served it (`PublishBoth`, `PublishTarget`: DNS may name the target), a
//!   cancel is the way back, make-before-break: a move from the target to the source entering
//!   the phase that publishes the source again (`PublishTarget` from `PublishBoth`, `PublishBoth`
//!   from `PublishTarget`), so the target keeps serving for the DNS grace before its routes go.
//! - In `DeleteOld` (the source's routes are being deleted) a cancel is refused: the group is
//!   moved back with a new move once this one is done.
//!
//! A move rolled back (or cancelled) is not started again, to the same target, for
//! `move_target_timeout` (and the way back's graces): an automatic move would otherwise start
//! it again at the next Sync. An operator's request for it is removed from the store. The
//! holds are kept with the set's records (the controller's ConfigMaps, with their expiry) and
//! read back at start: a restart does not try the move once more either.

use crate::controller::router_set::moves::Moves;
use crate::placement::moves::MoveCause;
use crate::placement::{GroupId, MovePhase, MovePlan, MoveTimings, RouterIndex, UnixSeconds};
use std::collections::BTreeSet;
use std::sync::Mutex;

/// Why a move went back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Why {
    /// The target was not ACTIVE with the group's routes within this many seconds.
    TargetTimeout { secs: u64 },
    /// The operator cancelled it, naming this Ingress.
    Cancelled { ingress: String },
}

/// A move that went back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RolledBack {
    /// The move as it was.
    pub plan: MovePlan,
    pub why: Why,
    /// The way back, when the target served the group already (None: dropped at once).
    pub back: Option<MovePlan>,
}

/// What [`roll_back`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    pub rolled: Vec<RolledBack>,
    /// Cancels refused: (Ingress key, why).
    pub refused: Vec<(String, String)>,
}

/// Rolls back, in `moves`, each move still waiting for its target `timeout_secs` after it
/// started, and each move the operator cancels (`cancels`: the Ingress named, with its hosts).
/// `name_of`: a router's name, for the refusals. Pure.
pub fn roll_back(
    moves: &mut Moves,
    now: UnixSeconds,
    timeout_secs: u64,
    cancels: &[(String, BTreeSet<String>)],
    name_of: &dyn Fn(RouterIndex) -> String,
) -> Outcome {
    let mut out = Outcome::default();
    let late = |m: &MovePlan| matches!(m.phase, MovePhase::CreateOnTarget { since } if now >= since.saturating_add(timeout_secs));
    let timed_out: Vec<GroupId> = moves.iter().filter(|(_, m)| late(m)).map(|(g, _)| g.clone()).collect();
    for g in timed_out {
        let Some(plan) = moves.remove(&g) else { continue };
        out.rolled.push(RolledBack { plan, why: Why::TargetTimeout { secs: timeout_secs }, back: None });
    }
    for (ingress, hosts) in cancels {
        let of_hosts = |m: &MovePlan| !hosts.is_empty() && !m.hosts.is_disjoint(hosts);
        let Some((group, plan)) = moves.iter().find(|(_, m)| of_hosts(m)).map(|(g, m)| (g.clone(), m.clone())) else {
            // Rolled back by its timeout in this same pass: nothing more to do.
            if !out.rolled.iter().any(|r| of_hosts(&r.plan)) {
                let why = format!(
                    "kuryr-l7-router move --cancel: no move of {ingress}'s hosts ({}) is in progress: nothing to cancel",
                    hosts.iter().map(String::as_str).collect::<Vec<_>>().join(", ")
                );
                out.refused.push((ingress.clone(), why));
            }
            continue;
        };
        let why = Why::Cancelled { ingress: ingress.clone() };
        let back_phase = match plan.phase {
            MovePhase::CreateOnTarget { .. } => {
                moves.remove(&group);
                out.rolled.push(RolledBack { plan, why, back: None });
                continue;
            }
            // The status shows both: the source alone again, both serving for the grace.
            MovePhase::PublishBoth { .. } => MovePhase::PublishTarget { since: now },
            // The status shows the target only: both again first, so DNS turns back in time.
            MovePhase::PublishTarget { .. } => MovePhase::PublishBoth { since: now },
            MovePhase::DeleteOld { .. } | MovePhase::Done { .. } => {
                let (from, to) = (name_of(plan.from), name_of(plan.to));
                let why = format!(
                    "kuryr-l7-router move --cancel refused: the move of {} from {from} to {to} is deleting the \
                     routes on {from}, it can no longer be cancelled; once it is done (MoveDone), move the group \
                     back with kuryr-l7-router move {ingress} {from}",
                    plan.hosts.iter().map(String::as_str).collect::<Vec<_>>().join(", ")
                );
                out.refused.push((ingress.clone(), why));
                continue;
            }
        };
        let back = MovePlan {
            group: group.clone(),
            hosts: plan.hosts.clone(),
            from: plan.to,
            to: plan.from,
            phase: back_phase,
            cause: MoveCause::Cancelled,
        };
        moves.insert(group, back.clone());
        out.rolled.push(RolledBack { plan, why, back: Some(back) });
    }
    out
}

/// A group kept off a target after a rollback, until `until`. Kept with the set's records
/// (`store`), so that a restart does not try the move again before `until`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Hold {
    pub hosts: BTreeSet<String>,
    pub to: RouterIndex,
    pub until: UnixSeconds,
}

impl Hold {
    /// Whether `m` would start the move held again.
    pub fn blocks(&self, m: &MovePlan, now: UnixSeconds) -> bool {
        now < self.until && m.to == self.to && !m.hosts.is_disjoint(&self.hosts)
    }
}

/// The hold after `r`: as long as the timeout, plus the way back's graces.
pub fn hold_after(r: &RolledBack, now: UnixSeconds, timeout_secs: u64, timings: MoveTimings) -> Hold {
    let back = if r.back.is_some() { timings.dns_grace_secs.saturating_add(timings.old_routes_grace_secs) } else { 0 };
    Hold { hosts: r.plan.hosts.clone(), to: r.plan.to, until: now.saturating_add(timeout_secs).saturating_add(back) }
}

/// The set's rollbacks: the holds in force, the cancels read from the store, and what is still
/// to tell (taken once by the Sync that publishes it).
#[derive(Default)]
pub(crate) struct Rollbacks {
    pub(crate) holds: Mutex<Vec<Hold>>,
    /// The cancel requests last read from the store (Ingress keys).
    pub(crate) cancels: Mutex<Vec<String>>,
    /// Cancels already handled, until the store no longer has them (their removal can fail).
    pub(crate) handled: Mutex<BTreeSet<String>>,
    /// Rollbacks and refused cancels not told yet.
    pub(crate) told: Mutex<Vec<Told>>,
}

/// One thing to tell, with the routers' names.
#[derive(Clone, Debug)]
pub(crate) enum Told {
    RolledBack { rolled: Box<RolledBack>, source: String, target: String, hold_secs: u64 },
    Refused { ingress: String, why: String },
}

impl Rollbacks {
    /// The cancel requests read from the store now (`read`: every one there).
    pub(crate) fn read_cancels(&self, read: Vec<String>) {
        let mut handled = self.handled.lock().expect("lock");
        handled.retain(|k| read.contains(k));
        *self.cancels.lock().expect("lock") = read.into_iter().filter(|k| !handled.contains(k)).collect();
    }

    /// Whether a cancel waits to be handled.
    pub(crate) fn cancel_waits(&self) -> bool {
        !self.cancels.lock().expect("lock").is_empty()
    }

    /// The holds in force at `now` (the others forgotten).
    pub(crate) fn holds(&self, now: UnixSeconds) -> Vec<Hold> {
        let mut holds = self.holds.lock().expect("lock");
        holds.retain(|h| now < h.until);
        holds.clone()
    }

    /// What to tell, taken once.
    pub(crate) fn take_told(&self) -> Vec<Told> {
        std::mem::take(&mut *self.told.lock().expect("lock"))
    }
}

#[cfg(test)]
#[path = "rollback_tests.rs"]
mod tests;
