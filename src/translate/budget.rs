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

use super::ingress_class::ours_by_age;
use super::names::namespace_of;
use super::options::{Source, TranslateOptions};
use super::pipeline::translate;
use crate::model::{DesiredRouter, KubeRef};

/// The Event reason of an Ingress whose new routes wait because the router would exceed the
/// project quota.
pub const QUOTA_EXCEEDED: &str = "QuotaExceeded";

// The budget's types are the desired router's (`DesiredRouter::quota`): they live in the model,
// which the driver and the translation both read, and are re-exported here for the callers.
pub use crate::model::{Budget, RouterQuota, Usage};

/// The L7 policies and rules the router needs ([`Usage::of`]).
pub fn usage(r: &DesiredRouter) -> Usage {
    Usage::of(r)
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
