//! Make-before-break move of a group (or part of one) from one router to another.
//!
//! A pure state machine over timestamps. The caller performs the phase's action, records the
//! plan where the next leader finds it, and calls [`MovePlan::advance`] with what it observed;
//! each phase's clock starts when the phase is entered, so a restart never shortens a grace.
//!
//! 1. `CreateOnTarget`: the routes (and certificates) are created on the target; wait ACTIVE.
//!    Status: the source's address only.
//! 2. `PublishBoth`: status carries both addresses, so external-dns resolves the names to both
//!    routers. Both routers serve the hosts. Lasts `dns_grace`.
//! 3. `PublishTarget`: status carries only the target's address. The source keeps its routes
//!    one more grace, for resolvers and clients still holding the old record.
//! 4. `DeleteOld`: the source's routes are deleted; wait until they are gone.
//! 5. `Done`: the group lives on the target only.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::assign::MoveRequest;
use super::groups::GroupId;
use super::{Capacity, Cost, RouterIndex, UnixSeconds};

/// What a DNS change takes beyond the records' TTL: external-dns's sync interval (its
/// `--interval`, 1 m by default) between a status change and the record written.
pub const DNS_UPDATE_MARGIN_SECS: u64 = 60;

/// Designate's default TTL of a zone (`[DEFAULT] default_ttl`), which records without a TTL of
/// their own take: `[octavia_defaults] dns_record_ttl`'s default.
pub const DEFAULT_DNS_RECORD_TTL_SECS: u64 = 3600;

/// Graces of a move. Each must cover the records' TTL plus the external-dns interval: a resolver
/// may answer the old address a whole TTL after the record changed ([`MoveTimings::for_dns_ttl`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MoveTimings {
    pub dns_grace_secs: u64,
    pub old_routes_grace_secs: u64,
}

impl MoveTimings {
    /// Both graces for records of TTL `ttl_secs`: the TTL plus [`DNS_UPDATE_MARGIN_SECS`].
    pub fn for_dns_ttl(ttl_secs: u64) -> Self {
        let grace = ttl_secs.saturating_add(DNS_UPDATE_MARGIN_SECS);
        MoveTimings { dns_grace_secs: grace, old_routes_grace_secs: grace }
    }
}

impl Default for MoveTimings {
    /// For records of Designate's default TTL: 3660 s each.
    fn default() -> Self {
        MoveTimings::for_dns_ttl(DEFAULT_DNS_RECORD_TTL_SECS)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum MovePhase {
    CreateOnTarget { since: UnixSeconds },
    PublishBoth { since: UnixSeconds },
    PublishTarget { since: UnixSeconds },
    DeleteOld { since: UnixSeconds },
    Done { at: UnixSeconds },
}

/// What the caller saw on the routers since the last step.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MoveObservation {
    /// The target router is ACTIVE with the group's routes on it.
    pub target_active: bool,
    /// The source router is ACTIVE without the group's routes.
    pub source_cleared: bool,
}

/// Which routers must carry the group's routes in the current phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoutesWanted {
    pub source: bool,
    pub target: bool,
}

/// Why a move started (said in its `MoveStarted` Event; recorded with the plan).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum MoveCause {
    /// The operator asked (the move-to annotation). Also what a record written before causes
    /// were recorded reads as.
    #[default]
    Operator,
    /// An Ingress tied these hosts to a group on the target router (placement rule 6).
    Merge,
    /// The group grew while on the source, which went over its capacity (`cost` > `capacity`).
    OverCapacity { cost: Cost, capacity: Capacity },
    /// Scale-out was turned off: the routers other than the first drain into it.
    Drain,
    /// The records were lost and both routers were found routing the hosts (a move's records
    /// lost): the source keeps them through the graces.
    Observed,
    /// The way back of a move cancelled once its target served the group: from that target back
    /// to the move's source, make-before-break (`controller::router_set::rollback`).
    Cancelled,
}

impl MoveCause {
    /// Why, in words, for the `MoveStarted` Event.
    pub fn text(self, source_name: &str, target_name: &str) -> String {
        match self {
            MoveCause::Operator => "asked by the operator".to_string(),
            MoveCause::Merge => format!("merge: an Ingress ties these hosts to the group on {target_name}"),
            MoveCause::OverCapacity { cost, capacity } => {
                let (used, max, what) = if cost.policies > capacity.max_policies {
                    (cost.policies, capacity.max_policies, "policies")
                } else {
                    (cost.certificates, capacity.max_certificates, "certificates")
                };
                format!("automatic: router {source_name} over capacity ({used} > {max} {what})")
            }
            MoveCause::Drain => format!("scale-out is off: {source_name} drains into {target_name}"),
            MoveCause::Observed => {
                format!("no record: both {source_name} and {target_name} routed these hosts at start")
            }
            MoveCause::Cancelled => format!("the move to {source_name} was cancelled: back to {target_name}"),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MovePlan {
    pub group: GroupId,
    pub hosts: BTreeSet<String>,
    pub from: RouterIndex,
    pub to: RouterIndex,
    pub phase: MovePhase,
    #[serde(default)]
    pub cause: MoveCause,
}

impl MovePlan {
    pub fn start(request: &MoveRequest, now: UnixSeconds) -> MovePlan {
        MovePlan {
            group: request.group.clone(),
            hosts: request.hosts.clone(),
            from: request.from,
            to: request.to,
            phase: MovePhase::CreateOnTarget { since: now },
            cause: MoveCause::Operator,
        }
    }

    /// The same plan, started for `cause`.
    pub fn because(self, cause: MoveCause) -> MovePlan {
        MovePlan { cause, ..self }
    }

    /// At most one step forward. A phase that waits on a grace advances once `now` reaches its
    /// deadline; a phase that waits on Octavia advances once the observation says so.
    pub fn advance(&self, now: UnixSeconds, seen: MoveObservation, timings: MoveTimings) -> MovePlan {
        use MovePhase::*;
        let deadline_passed = self.deadline(timings).is_some_and(|d| now >= d);
        let phase = match self.phase {
            CreateOnTarget { .. } if seen.target_active => PublishBoth { since: now },
            PublishBoth { .. } if deadline_passed => PublishTarget { since: now },
            PublishTarget { .. } if deadline_passed => DeleteOld { since: now },
            DeleteOld { .. } if seen.source_cleared => Done { at: now },
            unchanged => unchanged,
        };
        MovePlan { phase, ..self.clone() }
    }

    /// When the current phase's grace ends (None: the phase waits on Octavia, or is done).
    pub fn deadline(&self, timings: MoveTimings) -> Option<UnixSeconds> {
        match self.phase {
            MovePhase::PublishBoth { since } => Some(since.saturating_add(timings.dns_grace_secs)),
            MovePhase::PublishTarget { since } => Some(since.saturating_add(timings.old_routes_grace_secs)),
            _ => None,
        }
    }

    /// The addresses the status of the group's Ingresses shows in this phase.
    pub fn status_addresses(&self, source: &str, target: &str) -> Vec<String> {
        match self.phase {
            MovePhase::CreateOnTarget { .. } => vec![source.to_string()],
            MovePhase::PublishBoth { .. } => vec![source.to_string(), target.to_string()],
            MovePhase::PublishTarget { .. } | MovePhase::DeleteOld { .. } | MovePhase::Done { .. } => {
                vec![target.to_string()]
            }
        }
    }

    /// The source keeps serving until `DeleteOld`; the target serves from the first phase on.
    pub fn routes_wanted(&self) -> RoutesWanted {
        let source = matches!(
            self.phase,
            MovePhase::CreateOnTarget { .. } | MovePhase::PublishBoth { .. } | MovePhase::PublishTarget { .. }
        );
        RoutesWanted { source, target: true }
    }

    /// Event reason and message for the group's Ingresses on entering this phase.
    pub fn event(&self, source_name: &str, target_name: &str) -> (&'static str, String) {
        let hosts = self.hosts.iter().map(String::as_str).collect::<Vec<_>>().join(", ");
        match self.phase {
            MovePhase::CreateOnTarget { .. } => (
                "MoveStarted",
                format!(
                    "creating routes for {hosts} on {target_name} (moving from {source_name}; {})",
                    self.cause.text(source_name, target_name)
                ),
            ),
            MovePhase::PublishBoth { .. } => {
                ("MovePublishedBoth", format!("{hosts}: status shows both {source_name} and {target_name}"))
            }
            MovePhase::PublishTarget { .. } => {
                ("MovePublishedTarget", format!("{hosts}: status shows only {target_name}; {source_name} still serves"))
            }
            MovePhase::DeleteOld { .. } => ("MoveDeletingOld", format!("{hosts}: deleting routes on {source_name}")),
            MovePhase::Done { .. } => ("MoveDone", format!("{hosts}: moved from {source_name} to {target_name}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grace_counts_from_entering_the_phase() {
        let req = MoveRequest { group: "a.com".into(), hosts: ["a.com".into()].into(), from: 0, to: 1 };
        let t = MoveTimings::for_dns_ttl(300);
        let active = MoveObservation { target_active: true, source_cleared: false };
        let p = MovePlan::start(&req, 100).advance(150, active, t);
        assert_eq!(p.phase, MovePhase::PublishBoth { since: 150 });
        assert_eq!(p.advance(150 + 359, active, t).phase, p.phase);
        assert_eq!(p.advance(150 + 360, active, t).phase, MovePhase::PublishTarget { since: 510 });
    }
}
