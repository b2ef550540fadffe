//! Octavia's project quotas for L7 policies and rules, applied before any write: when the
//! router would need more than the project has left, the newest Ingresses are refused as a whole
//! (a `QuotaExceeded` warning each) and the others converge. Without this, the write that hits
//! the quota fails with a 403 and every later change waits behind it.
//!
//! The budget (how many policies and rules the router may hold) is the project quota minus what
//! the project's other load balancers use; the controller reads both (`GET
//! /v2/lbaas/quotas/{project}`, the project's L7 policies) at each resync. Refusing is a pure
//! function of the inputs and the budget: the oldest Ingresses (creationTimestamp, then
//! namespace/name, as for every conflict) are kept as long as the router fits.

use serde::{Deserialize, Serialize};

use super::routes::{age, is_ours};
use super::{Inputs, TranslateOptions, namespace_of, translate};
use crate::model::{DesiredRouter, KubeRef, Warning};

/// The Event reason of an Ingress refused because the router would exceed the project quota.
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

/// [`translate`], refusing the newest Ingresses of ours as a whole while the router exceeds the
/// budget. Only when the full router does not fit is anything translated again (a binary search
/// over how many of the oldest Ingresses are kept: about log2(n) translations).
pub fn translate_within(inputs: &Inputs, opts: &TranslateOptions, budget: Option<&Budget>) -> DesiredRouter {
    let full = translate(inputs, opts);
    let Some(budget) = budget else { return full };
    let need = usage(&full);
    if budget.fits(need) {
        return full;
    }
    let mut ours: Vec<usize> =
        (0..inputs.ingresses.len()).filter(|i| is_ours(&inputs.ingresses[*i], &inputs.ingress_classes, opts)).collect();
    ours.sort_by(|a, b| age(&inputs.ingresses[*a]).cmp(&age(&inputs.ingresses[*b])));
    let keeping = |k: usize| {
        let refused: std::collections::BTreeSet<usize> = ours[k..].iter().copied().collect();
        let mut kept = inputs.clone();
        kept.ingresses =
            (0..inputs.ingresses.len()).filter(|i| !refused.contains(i)).map(|i| inputs.ingresses[i].clone()).collect();
        translate(&kept, opts)
    };
    // Invariant: keeping `lo` fits (0 does, or nothing can), keeping `hi` does not.
    let (mut lo, mut hi) = (0, ours.len());
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if budget.fits(usage(&keeping(mid))) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let mut r = keeping(lo);
    let have = usage(&r);
    for i in &ours[lo..] {
        let m = &inputs.ingresses[*i].metadata;
        let object = KubeRef::new("Ingress", namespace_of(m), m.name.as_deref().unwrap_or(""));
        let limit = |v: Option<u64>| v.map_or_else(|| "unlimited".to_string(), |v| v.to_string());
        let message = format!(
            "{object}: refused as a whole: the L7 router would need {} L7 policies and {} L7 rules with every Ingress, and the project's Octavia quota leaves {} policies and {} rules for it; older Ingresses are served first ({} policies, {} rules)",
            need.l7policies,
            need.l7rules,
            limit(budget.l7policies),
            limit(budget.l7rules),
            have.l7policies,
            have.l7rules
        );
        r.warnings.push(Warning { object, reason: QUOTA_EXCEEDED.into(), message });
    }
    r.warnings.sort();
    r.warnings.dedup();
    r
}
