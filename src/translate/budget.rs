//! Octavia's project quotas for L7 policies and rules: the budget (how many policies and rules
//! the router may hold) is the project quota minus what the project's other load balancers use;
//! the controller reads both (`GET /v2/lbaas/quotas/{project}`, the project's L7 policies) at each
//! resync. Without it, the write that hits the quota fails with a 403 and is held.
//!
//! The translation only attaches the budget and the age order of our Ingresses (creationTimestamp,
//! then namespace/name, as for every conflict) to the desired router. The driver applies it
//! (`driver::admission`), because only it knows what is on the router: routes that are on the
//! router stay whatever the budget (another team's load balancers filling the project must never
//! take a serving route off), and new ones are created within what is left, oldest Ingress first;
//! the others wait with a `QuotaExceeded` Event.

use serde::{Deserialize, Serialize};

use super::ingress_class::ours_by_age;
use super::names::namespace_of;
use super::options::{Source, TranslateOptions};
use super::pipeline::translate;
use crate::model::{DesiredRouter, KubeRef};

/// The Event reason of an Ingress whose new routes wait because the router would exceed the
/// project quota.
pub const QUOTA_EXCEEDED: &str = "QuotaExceeded";

/// What the router may hold; `None`: unlimited.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Budget {
    pub l7policies: Option<u64>,
    pub l7rules: Option<u64>,
}

/// Octavia objects counted by the l7policy and l7rule quotas.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    pub l7policies: u64,
    pub l7rules: u64,
}

impl Budget {
    /// No limit. A router of a scale-out set gets it until its driver has read its own budget:
    /// the desired state still carries the age order, so that the driver admits a new router's
    /// routes within the room it reads before creating it (`driver::quota`).
    pub const UNLIMITED: Budget = Budget { l7policies: None, l7rules: None };

    /// The tighter of two budgets, limit by limit (`None` is unlimited).
    pub fn tighter(self, other: Budget) -> Budget {
        let min = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        Budget { l7policies: min(self.l7policies, other.l7policies), l7rules: min(self.l7rules, other.l7rules) }
    }

    /// From the project's quotas (`-1`: unlimited, Octavia's convention; `None`: not set) and
    /// what the project's other load balancers use. `None` when neither is limited.
    pub fn from_quota(policies: Option<i64>, rules: Option<i64>, elsewhere: Usage) -> Option<Self> {
        let left = |quota: Option<i64>, used: u64| {
            quota.filter(|q| *q >= 0).map(|q| u64::try_from(q).unwrap_or(0).saturating_sub(used))
        };
        let b = Budget { l7policies: left(policies, elsewhere.l7policies), l7rules: left(rules, elsewhere.l7rules) };
        (b != Budget::default()).then_some(b)
    }

    pub fn fits(&self, u: Usage) -> bool {
        self.l7policies.is_none_or(|m| u.l7policies <= m) && self.l7rules.is_none_or(|m| u.l7rules <= m)
    }
}

/// The L7 policies and rules the router needs: both listeners' policies and the redirects.
pub fn usage(r: &DesiredRouter) -> Usage {
    let https = r.https.iter().flat_map(|h| &h.policies);
    let policies = r.policies.iter().chain(https);
    let (mut n, mut rules) = (0u64, 0u64);
    for p in policies {
        n += 1;
        rules += p.rules.len() as u64;
    }
    for red in &r.redirects {
        n += 1;
        rules += red.rules.len() as u64;
    }
    Usage { l7policies: n, l7rules: rules }
}

/// The budget as the driver applies it: the limits, and our Ingresses oldest first (the order
/// in which their new routes are admitted).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RouterQuota {
    pub budget: Budget,
    pub oldest_first: Vec<KubeRef>,
}

/// The one entry ([`translate`]), with the budget attached for the driver (`desired.quota`). Every route is
/// translated: only the driver knows which routes are on the router already, and those are never
/// removed for the quota (see `driver::admission`); the new ones wait, oldest Ingress first.
pub fn translate_within(
    inputs: &(impl Source + ?Sized),
    opts: &TranslateOptions,
    budget: Option<&Budget>,
) -> DesiredRouter {
    let mut r = translate(inputs, opts);
    r.quota = budget.map(|budget| router_quota(inputs, opts, budget));
    r
}

/// `quota` (the age order of the whole translation) with router `budget` (None: unlimited, or
/// not read yet): what one router of a scale-out set admits within.
pub fn for_router(quota: Option<&RouterQuota>, budget: Option<Budget>) -> Option<RouterQuota> {
    quota.map(|q| RouterQuota { budget: budget.unwrap_or(Budget::UNLIMITED), oldest_first: q.oldest_first.clone() })
}

/// The quota phase: the budget and our Ingresses oldest first.
fn router_quota(inputs: &(impl Source + ?Sized), opts: &TranslateOptions, budget: &Budget) -> RouterQuota {
    let oldest_first = ours_by_age(inputs, opts)
        .into_iter()
        .map(|i| KubeRef::new("Ingress", namespace_of(&i.metadata), i.metadata.name.as_deref().unwrap_or("")))
        .collect();
    RouterQuota { budget: *budget, oldest_first }
}
