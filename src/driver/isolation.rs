//! Failure isolation (pure, table-tested): one write that Octavia refuses for good must not
//! freeze every other change on the router.
//!
//! - A write belongs to one object ([`WriteKey`]: a pool by name, a policy by listener and name,
//!   the listener's default pool). A write Octavia will refuse again ([`is_permanent`]: a 4xx
//!   other than a busy 409, e.g. a 400 for a value, a quota 403) puts its object on hold
//!   ([`WriteBackoff`]: per object, 10 s doubling, capped at 10 min; time is a parameter).
//! - An object on hold is left out of the next plans until its delay has passed
//!   ([`exclude_held`], [`filter_held`]): a new policy or pool is planned as if it were not
//!   desired (so the positions of the others are right without it, and the policies routing to a
//!   held new pool wait with it); an existing one keeps its current state (none of its writes
//!   are sent, it is never deleted because of the hold).
//! - Transient errors (5xx, busy 409, timeouts, transport) are not isolated: the convergence
//!   fails as before and the controller retries it whole.

use super::plan::{PolicyRef, PoolRef, Write};
use super::view::DesiredView;
use crate::model::{DesiredRouter, KubeRef};
use crate::openstack::Error as OsError;
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

/// The object a write belongs to: what is put on hold when the write fails for good.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum WriteKey {
    /// Our pool (its members and health monitor included), by name.
    Pool(String),
    /// Our policy (its rules included), by listener id and name.
    Policy { listener: String, name: String },
    /// The listener's default pool.
    DefaultPool { listener: String },
    /// The router's HTTPS listener (its create, or the switch of its certificates).
    HttpsListener,
    /// A more HTTPS listener of the router, by port (`DesiredRouter::more_https`).
    HttpsListenerOn(u16),
    /// One Barbican secret of ours, by name (its create, or its delete once unused).
    Secret(String),
    /// The listing of our Barbican secrets, which every change of the HTTPS side starts from.
    SecretListing,
}

impl std::fmt::Display for WriteKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WriteKey::Pool(name) => write!(f, "pool {name}"),
            WriteKey::Policy { name, .. } => write!(f, "L7 policy {name}"),
            WriteKey::DefaultPool { .. } => write!(f, "listener default pool"),
            WriteKey::HttpsListener => write!(f, "HTTPS listener"),
            WriteKey::HttpsListenerOn(port) => write!(f, "HTTPS listener on port {port}"),
            WriteKey::Secret(name) => write!(f, "Barbican secret {name}"),
            WriteKey::SecretListing => write!(f, "Barbican listing of our secrets"),
        }
    }
}

/// The object `w` (on the listener `listener`) writes.
pub(crate) fn write_key(w: &Write, listener: &str) -> WriteKey {
    let policy = |name: &str| WriteKey::Policy { listener: listener.into(), name: name.into() };
    match w {
        Write::CreatePool { name, .. } | Write::UpdatePool { name, .. } | Write::DeletePool { name, .. } => {
            WriteKey::Pool(name.clone())
        }
        Write::SetMembers { pool_name, .. }
        | Write::CreateHealthMonitor { pool_name, .. }
        | Write::UpdateHealthMonitor { pool_name, .. }
        | Write::DeleteHealthMonitor { pool_name, .. } => WriteKey::Pool(pool_name.clone()),
        Write::CreatePolicy { name, .. } | Write::UpdatePolicy { name, .. } | Write::DeletePolicy { name, .. } => {
            policy(name)
        }
        Write::CreateRule { policy_name, .. }
        | Write::UpdateRule { policy_name, .. }
        | Write::DeleteRule { policy_name, .. } => policy(policy_name),
        Write::SetDefaultPool { .. } => WriteKey::DefaultPool { listener: listener.into() },
    }
}

/// The objects created earlier in the same plan that `w` needs (a rule needs its new policy, a
/// policy or a member list its new pool): when one of them failed, `w` cannot be sent.
pub fn needs(w: &Write, listener: &str) -> Vec<WriteKey> {
    let pool = |r: &PoolRef| match r {
        PoolRef::New(name) => Some(WriteKey::Pool(name.clone())),
        PoolRef::Id(_) => None,
    };
    let policy = |r: &PolicyRef| match r {
        PolicyRef::New(name) => Some(WriteKey::Policy { listener: listener.into(), name: name.clone() }),
        PolicyRef::Id(_) => None,
    };
    match w {
        Write::SetMembers { pool: p, .. } | Write::CreateHealthMonitor { pool: p, .. } => pool(p).into_iter().collect(),
        Write::CreatePolicy { action: super::plan::PolicyAction::Pool(p), .. } => pool(p).into_iter().collect(),
        Write::CreateRule { policy: p, .. } => policy(p).into_iter().collect(),
        Write::UpdatePolicy { policy: p, pool: target, .. } => {
            policy(p).into_iter().chain(target.as_ref().and_then(pool)).collect()
        }
        Write::SetDefaultPool { pool: Some(p), .. } => pool(p).into_iter().collect(),
        _ => Vec::new(),
    }
}

/// Whether Octavia (or Neutron) will refuse the same write again: a 4xx other than a busy 409
/// (400 for a value, 403 for a quota or a policy, 413 over limit, 409 duplicate). A 401 (token)
/// and a 404 (an object deleted behind our back: the next read sees it) are not: the whole
/// convergence is retried, as are 5xx, busy 409s, timeouts and transport errors.
pub(crate) fn is_permanent(e: &OsError) -> bool {
    match e.status() {
        Some(401) | Some(404) => false,
        Some(409) => !e.is_busy_conflict(),
        Some(s) => (400..500).contains(&s),
        None => false,
    }
}

/// The metric label of a write refused for good: `invalid` (400), `quota` (403/413, or a message
/// naming a quota), `conflict` (a 409 that is not "busy"), else `rejected`.
pub(crate) fn failure_reason(e: &OsError) -> &'static str {
    let quota = matches!(e, OsError::Api { message, .. } if message.to_ascii_lowercase().contains("quota"));
    match e.status() {
        _ if quota => "quota",
        Some(400) => "invalid",
        Some(403) | Some(413) => "quota",
        Some(409) => "conflict",
        _ => "rejected",
    }
}

/// The delay before an object is tried again after `failures` consecutive failures: 10 s
/// doubling, capped at 10 min.
pub(crate) fn retry_delay(failures: u32) -> Duration {
    let secs = 10u64.saturating_mul(1u64 << failures.saturating_sub(1).min(6));
    Duration::from_secs(secs).min(Duration::from_secs(600))
}

/// One object on hold: its last refusal, for the report and the Events.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hold {
    pub failures: u32,
    pub until: Instant,
    pub reason: &'static str,
    pub message: String,
}

/// The objects on hold, per object (see the module docs). Time is given by the caller.
#[derive(Clone, Debug, Default)]
pub struct WriteBackoff {
    holds: BTreeMap<WriteKey, Hold>,
}

impl WriteBackoff {
    /// Records one more refusal of `key` at `now`; returns the delay before it is tried again.
    pub fn failed(&mut self, key: WriteKey, reason: &'static str, message: String, now: Instant) -> Duration {
        let failures = self.holds.get(&key).map_or(0, |h| h.failures) + 1;
        let delay = retry_delay(failures);
        self.holds.insert(key, Hold { failures, until: now + delay, reason, message });
        delay
    }

    /// `key` went through: forgotten.
    pub(crate) fn succeeded(&mut self, key: &WriteKey) {
        self.holds.remove(key);
    }

    /// The objects still on hold at `now` (their delay not over).
    pub fn held(&self, now: Instant) -> BTreeMap<WriteKey, Hold> {
        self.holds.iter().filter(|(_, h)| h.until > now).map(|(k, h)| (k.clone(), h.clone())).collect()
    }

    /// When the first hold ends, counted from `now` (`None`: nothing on hold).
    pub(crate) fn next_retry(&self, now: Instant) -> Option<Duration> {
        self.holds.values().filter(|h| h.until > now).map(|h| h.until - now).min()
    }

    /// Forgets the objects no longer desired (an Ingress deleted while its write was held).
    pub fn retain(&mut self, keep: impl Fn(&WriteKey) -> bool) {
        self.holds.retain(|k, _| keep(k));
    }

    /// Forgets the holds of `listener`'s policies that `desired`, its desired state, no longer
    /// has: a deleted Ingress leaves no hold behind, and its re-created namesake (whose policies
    /// get the same names) starts without one. Other listeners' holds are kept.
    pub(crate) fn forget_undesired_policies(&mut self, listener: &str, desired: &DesiredView<'_>) {
        let policy = |name: &str| {
            desired.policies.iter().any(|p| p.name == name) || desired.redirects.iter().any(|r| r.name == name)
        };
        self.retain(|k| match k {
            WriteKey::Policy { listener: l, name } if l == listener => policy(name),
            _ => true,
        });
    }

    /// Forgets the holds of pools that the whole desired router no longer has (pools are shared
    /// by the listeners: only the whole router says a pool is gone).
    pub(crate) fn forget_undesired_pools(&mut self, desired: &DesiredRouter) {
        self.retain(|k| match k {
            WriteKey::Pool(name) => desired.pools.contains_key(name),
            _ => true,
        });
    }
}

/// `desired` without the held objects that do not exist yet (`existing`: the pools and policies
/// of ours that the router has, as keys). A held new pool takes the policies routing to it along
/// (they cannot be created without it).
/// Only the held objects are looked up (there are few): the view is narrowed, never copied.
pub fn exclude_held<'a>(
    desired: &DesiredView<'a>,
    listener: &str,
    held: &BTreeSet<WriteKey>,
    existing: &BTreeSet<WriteKey>,
) -> DesiredView<'a> {
    let mut out = desired.clone();
    let new_held: Vec<&WriteKey> = held.iter().filter(|k| !existing.contains(k)).collect();
    if new_held.is_empty() {
        return out;
    }
    let held_pools: BTreeSet<&str> = new_held
        .iter()
        .filter_map(|k| match k {
            WriteKey::Pool(name) => desired.pool(name).map(|_| name.as_str()),
            _ => None,
        })
        .collect();
    let held_policies: BTreeSet<&str> = new_held
        .iter()
        .filter_map(|k| match k {
            WriteKey::Policy { listener: l, name } if l == listener => Some(name.as_str()),
            _ => None,
        })
        .collect();
    for name in desired.pools().map(|(n, _)| n).filter(|n| held_pools.contains(n)) {
        out.leave_out_pool(name);
    }
    out.policies.retain(|p| !held_policies.contains(p.name.as_str()) && !held_pools.contains(p.pool.as_str()));
    out.redirects.retain(|r| !held_policies.contains(r.name.as_str()));
    if out.default_pool.is_some_and(|p| held_pools.contains(p)) {
        out.default_pool = None;
    }
    out
}

/// The writes of `plan` minus those of held objects (existing ones: the new ones were left out
/// of the desired state by [`exclude_held`]).
pub(crate) fn filter_held(writes: Vec<Write>, listener: &str, held: &BTreeSet<WriteKey>) -> (Vec<Write>, usize) {
    let before = writes.len();
    let kept: Vec<Write> = writes.into_iter().filter(|w| !held.contains(&write_key(w, listener))).collect();
    let skipped = before - kept.len();
    (kept, skipped)
}

/// The Ingresses an object serves: a policy's owner, a pool's routes' owners, the default pool's
/// owners; the one to tell when its write is refused.
pub fn owners(key: &WriteKey, desired: &DesiredView<'_>) -> Vec<KubeRef> {
    let mut out: BTreeSet<KubeRef> = BTreeSet::new();
    match key {
        WriteKey::Policy { name, .. } => {
            out.extend(desired.policies.iter().filter(|p| &p.name == name).map(|p| p.owner.clone()));
            out.extend(desired.redirects.iter().filter(|r| &r.name == name).map(|r| r.owner.clone()));
        }
        WriteKey::Pool(name) => {
            out.extend(desired.policies.iter().filter(|p| &p.pool == name).map(|p| p.owner.clone()));
            if desired.default_pool == Some(name.as_str()) {
                out.extend(desired.default_pool_owners.iter().cloned());
            }
        }
        WriteKey::DefaultPool { .. } => out.extend(desired.default_pool_owners.iter().cloned()),
        // The HTTPS side's holds are reported by the HTTPS phase, which knows the certificates.
        WriteKey::HttpsListener | WriteKey::HttpsListenerOn(_) | WriteKey::Secret(_) | WriteKey::SecretListing => {}
    }
    out.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::openstack::Service;

    fn api(status: u16, message: &str) -> OsError {
        OsError::Api {
            service: Service::LoadBalancer,
            method: "POST".into(),
            path: "/v2/lbaas/l7policies".into(),
            status,
            message: message.into(),
        }
    }

    #[test]
    fn permanent_errors_are_the_ones_that_repeat() {
        let cases = [
            (api(400, "Invalid input for field/attribute value"), true, "invalid"),
            (api(403, "Quota has been met for resources: L7 Policy"), true, "quota"),
            (api(413, "over limit"), true, "quota"),
            (api(409, "Duplicate member address"), true, "conflict"),
            (api(409, "Load Balancer x is immutable and cannot be updated."), false, "conflict"),
            (api(401, "token expired"), false, "rejected"),
            (api(404, "not found"), false, "rejected"),
            (api(500, "boom"), false, "rejected"),
            (api(503, "Project busy. Unable to lock the project."), false, "rejected"),
        ];
        for (e, permanent, reason) in cases {
            assert_eq!(is_permanent(&e), permanent, "{e}");
            assert_eq!(failure_reason(&e), reason, "{e}");
        }
    }

    #[test]
    fn retry_delay_doubles_and_is_capped() {
        let secs: Vec<u64> = (1..=9).map(|n| retry_delay(n).as_secs()).collect();
        assert_eq!(secs, [10, 20, 40, 80, 160, 320, 600, 600, 600]);
    }

    #[test]
    fn backoff_holds_until_the_delay_is_over_by_injected_time() {
        let t0 = Instant::now();
        let key = WriteKey::Pool("p".into());
        let mut b = WriteBackoff::default();
        assert_eq!(b.failed(key.clone(), "invalid", "400".into(), t0), Duration::from_secs(10));
        assert!(b.held(t0 + Duration::from_secs(9)).contains_key(&key));
        assert!(!b.held(t0 + Duration::from_secs(10)).contains_key(&key));
        assert_eq!(b.next_retry(t0 + Duration::from_secs(4)), Some(Duration::from_secs(6)));
        // A second refusal doubles the delay, counted from that refusal.
        let t1 = t0 + Duration::from_secs(11);
        assert_eq!(b.failed(key.clone(), "invalid", "400".into(), t1), Duration::from_secs(20));
        assert!(b.held(t1 + Duration::from_secs(19)).contains_key(&key));
        b.succeeded(&key);
        assert!(b.held(t1).is_empty());
        assert_eq!(b.next_retry(t1), None);
    }
}
