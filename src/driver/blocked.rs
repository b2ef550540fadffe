//! A router that refuses every write (provisioning_status ERROR, or a busy 409 / PENDING_* that
//! does not clear within `write_timeout`): remembered, so that the jobs after the one that found
//! it fail at once instead of each holding the single writer for `write_timeout`. A cheap GET of
//! the load balancer, at most every [`RECHECK`], lifts it as soon as the router is ACTIVE again.

use super::error::DriverError;
use crate::openstack::Error as OsError;
use std::time::{Duration, Instant};

/// How often a blocked router is looked at again (one GET of the load balancer).
pub const RECHECK: Duration = Duration::from_secs(30);

/// The router refusing writes, since `since`, last looked at `checked`.
#[derive(Clone, Debug)]
pub struct Blocked {
    /// The load balancer (`None`: found by name at the next check).
    pub lb_id: Option<String>,
    pub why: String,
    pub since: Instant,
    pub checked: Instant,
}

/// What to do with a job while the router may be blocked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Gate {
    /// Not blocked: go on.
    Open,
    /// Blocked and looked at less than [`RECHECK`] ago: fail at once.
    Closed,
    /// Blocked, time to look again (one GET).
    Recheck,
}

/// Whether a job may write now (time injected), the router looked at every `recheck`.
pub fn gate(blocked: Option<&Blocked>, now: Instant, recheck: Duration) -> Gate {
    match blocked {
        None => Gate::Open,
        Some(b) if now.saturating_duration_since(b.checked) < recheck => Gate::Closed,
        Some(_) => Gate::Recheck,
    }
}

/// Whether `e` means the router refuses every write, and why (`None`: an error of one write or
/// of the cloud, not of the router).
pub(crate) fn blocking(e: &DriverError) -> Option<(Option<String>, String)> {
    let os = match e {
        DriverError::RouterInError { id, .. } => return Some((Some(id.clone()), "provisioning_status ERROR".into())),
        DriverError::RouterBlocked { .. } => return None,
        DriverError::OpenStack(e) | DriverError::Write { source: e, .. } => e,
        _ => return None,
    };
    match os {
        OsError::WaitTimeout { kind: "loadbalancer", id, last_status, waited } => {
            Some((Some(id.clone()), format!("still {last_status} after {}s", waited.as_secs())))
        }
        OsError::Provisioning { kind: "loadbalancer", id, status } => {
            Some((Some(id.clone()), format!("provisioning_status {status}")))
        }
        e if e.is_busy_conflict() => Some((None, "409 immutable beyond write_timeout".into())),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::openstack::Service;

    #[test]
    fn gate_closes_until_the_recheck_is_due() {
        let t0 = Instant::now();
        let b = Blocked { lb_id: None, why: "ERROR".into(), since: t0, checked: t0 };
        assert_eq!(gate(None, t0, RECHECK), Gate::Open);
        assert_eq!(gate(Some(&b), t0 + Duration::from_secs(29), RECHECK), Gate::Closed);
        assert_eq!(gate(Some(&b), t0 + RECHECK, RECHECK), Gate::Recheck);
    }

    #[test]
    fn blocking_errors_are_the_routers_not_one_writes() {
        let api = |status: u16, message: &str| OsError::Api {
            service: Service::LoadBalancer,
            method: "PUT".into(),
            path: "/v2/lbaas/pools/p/members".into(),
            status,
            message: message.into(),
        };
        let write = |source| DriverError::Write { write: "w".into(), source };
        let in_error = DriverError::RouterInError { name: "r".into(), id: "lb".into() };
        assert_eq!(blocking(&in_error), Some((Some("lb".into()), "provisioning_status ERROR".into())));
        let timeout = OsError::WaitTimeout {
            kind: "loadbalancer",
            id: "lb".into(),
            waited: Duration::from_secs(300),
            last_status: "PENDING_UPDATE".into(),
        };
        assert_eq!(blocking(&timeout.into()).unwrap().1, "still PENDING_UPDATE after 300s");
        assert!(blocking(&write(api(409, "Load Balancer lb is immutable and cannot be updated."))).is_some());
        assert_eq!(blocking(&write(api(400, "Invalid input"))), None);
        assert_eq!(blocking(&write(api(409, "Duplicate member"))), None);
        assert_eq!(blocking(&DriverError::NotLeader), None);
    }
}
