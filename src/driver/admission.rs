//! The project's L7 quota applied to the plan (pure, table-tested): routes that are on the router
//! stay whatever the budget, routes that are not yet on it are created only within what is left.
//!
//! Why here and not in the translation: the budget shrinks when another team's load balancers in
//! the same project take policies, and a translation that refused whole Ingresses then deleted
//! their working routes. Only the plan knows which routes are on the router (the actual state).
//!
//! - What the router may still take (`headroom`) is the budget minus what our router holds now:
//!   this listener's policies of ours as read, the other listeners' as last planned.
//! - New routes are admitted Ingress by Ingress (all of its new routes or none, so that an
//!   Ingress is never half served), oldest first (`RouterQuota::oldest_first`), and stop at the
//!   first Ingress that does not fit: a younger small Ingress never overtakes an older one.
//! - What waits is left out of the plan as if it were not desired (as a held object is) and
//!   reported ([`Waiting`]): the controller publishes `QuotaExceeded` on the Ingress. It is
//!   admitted by the next convergence that finds room (an Ingress deleted, the budget read again
//!   at resync, a policy deleted in the same convergence: see `rounds`).
//! - Growth of a route already on the router (a rule added) is never refused: it is charged to
//!   the headroom first; Octavia's own 403, isolated by the holds, is the last guard.

use super::actual::ActualRouter;
use super::ownership::Ownership;
use super::view::DesiredView;
use crate::model::{Budget, DesiredRouter, KubeRef, RouterQuota, Usage};
use std::collections::{BTreeMap, BTreeSet};

/// An Ingress whose routes not yet on the router wait for the quota.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Waiting {
    pub owner: KubeRef,
    /// What its new routes need.
    pub need: Usage,
    /// What the router could still take when it was refused.
    pub left: Budget,
}

impl Waiting {
    /// The Event message.
    pub fn message(&self) -> String {
        let limit = |v: Option<u64>| v.map_or_else(|| "unlimited".to_string(), |v| v.to_string());
        format!(
            "{}: its new routes wait for the project's Octavia quota: they need {} L7 policies and {} L7 rules, \
             the router can take {} policies and {} rules more (older Ingresses first); the routes it already \
             has on the router are kept",
            self.owner,
            self.need.l7policies,
            self.need.l7rules,
            limit(self.left.l7policies),
            limit(self.left.l7rules)
        )
    }
}

/// The quota and what each of our listeners holds, shared by the convergences of one router.
#[derive(Clone, Debug, Default)]
pub struct QuotaLedger {
    /// As of the last desired router (`None`: unlimited).
    pub quota: Option<RouterQuota>,
    /// Our policies and rules per listener id, as last planned.
    planned: BTreeMap<String, Usage>,
}

/// One listener's desired state after admission.
#[derive(Clone, Debug, PartialEq)]
pub struct Admission {
    /// `None`: everything is admitted (the desired state as given).
    pub admitted: Option<DesiredRouter>,
    pub waiting: Vec<Waiting>,
}

/// [`Admission`] of a listener's [`DesiredView`]: the admitted part is a narrower view.
#[derive(Clone, Debug)]
pub struct ViewAdmission<'a> {
    /// `None`: everything is admitted (the view as given).
    pub admitted: Option<DesiredView<'a>>,
    pub waiting: Vec<Waiting>,
}

impl QuotaLedger {
    /// `desired` for `listener` within the quota, given what the listener holds (`actual`); what
    /// the listener will hold afterwards is recorded for the other listeners' admission.
    pub fn admit(
        &mut self,
        listener: &str,
        desired: &DesiredRouter,
        actual: &ActualRouter,
        own: &Ownership,
    ) -> Admission {
        let a = self.admit_view(listener, &DesiredView::of(desired), actual, own);
        Admission { admitted: a.admitted.map(|v| owned(desired, &v)), waiting: a.waiting }
    }

    /// [`QuotaLedger::admit`] on a view (the rounds: no copy of the desired router).
    pub(crate) fn admit_view<'a>(
        &mut self,
        listener: &str,
        desired: &DesiredView<'a>,
        actual: &ActualRouter,
        own: &Ownership,
    ) -> ViewAdmission<'a> {
        let others = self.planned.iter().filter(|(l, _)| l.as_str() != listener).map(|(_, u)| *u);
        let elsewhere = others.fold(Usage::default(), add);
        let result = match &self.quota {
            None => ViewAdmission { admitted: None, waiting: Vec::new() },
            Some(q) => admit_view(desired, actual, own, &q.budget, elsewhere, &q.oldest_first),
        };
        let after = usage_of(result.admitted.as_ref().unwrap_or(desired));
        self.planned.insert(listener.to_string(), after);
        result
    }
}

/// `desired` with only the routes and redirects that `admitted` kept (by name: unique per
/// listener).
fn owned(desired: &DesiredRouter, admitted: &DesiredView<'_>) -> DesiredRouter {
    let policies: BTreeSet<&str> = admitted.policies.iter().map(|p| p.name.as_str()).collect();
    let redirects: BTreeSet<&str> = admitted.redirects.iter().map(|r| r.name.as_str()).collect();
    let mut out = desired.clone();
    out.policies.retain(|p| policies.contains(p.name.as_str()));
    out.redirects.retain(|r| redirects.contains(r.name.as_str()));
    out
}

impl QuotaLedger {
    /// The HTTP side of `desired` for the create of a new router (nothing on it yet), when the
    /// quota leaves something out (`None`: all of it fits). Nothing is recorded: the rounds
    /// after the create admit and report as usual.
    pub(crate) fn admit_new_router(&self, desired: &DesiredRouter, own: &Ownership) -> Option<DesiredRouter> {
        let q = self.quota.as_ref()?;
        let view = DesiredView::of(desired);
        let a = admit_view(&view, &ActualRouter::default(), own, &q.budget, Usage::default(), &q.oldest_first);
        a.admitted.map(|v| owned(desired, &v))
    }

    /// Forgets what listeners other than `listeners` held (deleted ones hold nothing).
    pub(crate) fn keep_listeners(&mut self, listeners: &[&str]) {
        self.planned.retain(|l, _| listeners.contains(&l.as_str()));
    }
}

fn add(a: Usage, b: Usage) -> Usage {
    Usage { l7policies: a.l7policies + b.l7policies, l7rules: a.l7rules + b.l7rules }
}

/// The L7 policies and rules of one listener's desired state (its routes and redirects).
fn usage_of(d: &DesiredView<'_>) -> Usage {
    let policies = d.policies.iter().map(|p| p.rules.len()).chain(d.redirects.iter().map(|r| r.rules.len()));
    policies.fold(Usage::default(), |u, rules| add(u, Usage { l7policies: 1, l7rules: rules as u64 }))
}

/// `budget` minus `used` (saturating); `None` stays unlimited.
fn left(budget: &Budget, used: Usage) -> Budget {
    Budget {
        l7policies: budget.l7policies.map(|b| b.saturating_sub(used.l7policies)),
        l7rules: budget.l7rules.map(|b| b.saturating_sub(used.l7rules)),
    }
}

/// See the module docs. `elsewhere`: what our other listeners hold.
pub fn admit(
    desired: &DesiredRouter,
    actual: &ActualRouter,
    own: &Ownership,
    budget: &Budget,
    elsewhere: Usage,
    oldest_first: &[KubeRef],
) -> Admission {
    let a = admit_view(&DesiredView::of(desired), actual, own, budget, elsewhere, oldest_first);
    Admission { admitted: a.admitted.map(|v| owned(desired, &v)), waiting: a.waiting }
}

/// [`admit`] on a view.
pub(crate) fn admit_view<'a>(
    desired: &DesiredView<'a>,
    actual: &ActualRouter,
    own: &Ownership,
    budget: &Budget,
    elsewhere: Usage,
    oldest_first: &[KubeRef],
) -> ViewAdmission<'a> {
    let on_router: BTreeMap<&str, u64> =
        actual.policies.iter().filter(|p| own.owns(&p.tags)).map(|p| (p.name.as_str(), p.rules.len() as u64)).collect();
    let held = on_router.values().fold(Usage::default(), |u, r| add(u, Usage { l7policies: 1, l7rules: *r }));
    // New routes by Ingress; the growth of routes on the router is charged first.
    let mut new: BTreeMap<&KubeRef, Usage> = BTreeMap::new();
    let mut growth = 0u64;
    let routes = desired.policies.iter().map(|p| (p.name.as_str(), p.rules.len() as u64, &p.owner));
    let redirects = desired.redirects.iter().map(|r| (r.name.as_str(), r.rules.len() as u64, &r.owner));
    for (name, rules, owner) in routes.chain(redirects) {
        match on_router.get(name) {
            Some(have) => growth += rules.saturating_sub(*have),
            None => {
                let u = new.entry(owner).or_default();
                *u = add(*u, Usage { l7policies: 1, l7rules: rules });
            }
        }
    }
    if new.is_empty() {
        return ViewAdmission { admitted: None, waiting: Vec::new() };
    }
    let mut room = left(budget, add(add(elsewhere, held), Usage { l7policies: 0, l7rules: growth }));
    let rank: BTreeMap<&KubeRef, usize> = oldest_first.iter().enumerate().map(|(i, k)| (k, i)).collect();
    let mut order: Vec<(&KubeRef, Usage)> = new.into_iter().collect();
    // Ingresses the order does not name (none, normally) go last, by name.
    order.sort_by_key(|(k, _)| (rank.get(k).copied().unwrap_or(usize::MAX), *k));
    let mut waiting = Vec::new();
    for (owner, need) in order {
        if waiting.is_empty() && room.fits(need) {
            room = left(&room, need);
        } else {
            waiting.push(Waiting { owner: owner.clone(), need, left: room });
        }
    }
    if waiting.is_empty() {
        return ViewAdmission { admitted: None, waiting };
    }
    let refused: BTreeSet<&KubeRef> = waiting.iter().map(|w| &w.owner).collect();
    let keep = |name: &str, owner: &KubeRef| on_router.contains_key(name) || !refused.contains(owner);
    let mut admitted = desired.clone();
    admitted.policies.retain(|p| keep(&p.name, &p.owner));
    admitted.redirects.retain(|r| keep(&r.name, &r.owner));
    ViewAdmission { admitted: Some(admitted), waiting }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::actual::{ActualPolicy, ActualRule};
    use crate::model::{CompareType, Policy, Rule, RuleType};

    fn own() -> Ownership {
        Ownership::new("test")
    }

    fn ingress(name: &str) -> KubeRef {
        KubeRef::new("Ingress", "default", name)
    }

    /// Ingress `ing`'s route `n`, with `rules` rules.
    fn route(ing: &str, n: u32, rules: usize) -> Policy {
        let rule = Rule {
            rule_type: RuleType::Path,
            compare_type: CompareType::StartsWith,
            value: "/".into(),
            invert: false,
            key: None,
        };
        Policy {
            name: format!("{ing}-{n}"),
            position: 0,
            pool: "p".into(),
            rules: vec![rule; rules],
            owner: ingress(ing),
            description: String::new(),
            redirect: None,
        }
    }

    fn on_router(policies: &[&Policy]) -> ActualRouter {
        let mut a = ActualRouter::default();
        for p in policies {
            a.policies.push(ActualPolicy {
                id: p.name.as_str().into(),
                name: p.name.clone(),
                tags: own().tags_for(&p.owner).into(),
                rules: (0..p.rules.len())
                    .map(|i| ActualRule { id: format!("{}-{i}", p.name).into(), ..Default::default() })
                    .collect(),
                ..Default::default()
            });
        }
        a
    }

    fn names(a: &Admission, desired: &DesiredRouter) -> Vec<String> {
        a.admitted.as_ref().unwrap_or(desired).policies.iter().map(|p| p.name.clone()).collect()
    }

    fn waiting(a: &Admission) -> Vec<String> {
        a.waiting.iter().map(|w| w.owner.name.clone()).collect()
    }

    /// Routes on the router stay whatever the budget; new ones fit in what is left, Ingress by
    /// Ingress, oldest first.
    #[test]
    fn serving_routes_stay_and_new_ones_wait_oldest_first() {
        let (old1, old2) = (route("old", 1, 2), route("old", 2, 2));
        let (mid, young) = (route("mid", 1, 2), route("young", 1, 1));
        let desired = DesiredRouter {
            policies: vec![old1.clone(), old2.clone(), mid.clone(), young.clone()],
            ..DesiredRouter::default()
        };
        let order = [ingress("old"), ingress("mid"), ingress("young")];
        let actual = on_router(&[&old1, &old2]);
        let limit = |p: u64, r: u64| Budget { l7policies: Some(p), l7rules: Some(r) };
        // (budget, used by our other listeners, admitted, waiting)
        let cases: Vec<(Budget, Usage, &[&str], &[&str])> = vec![
            (limit(4, 7), Usage::default(), &["old-1", "old-2", "mid-1", "young-1"], &[]),
            (
                Budget { l7policies: None, l7rules: None },
                Usage::default(),
                &["old-1", "old-2", "mid-1", "young-1"],
                &[],
            ),
            // Room for one more Ingress: the older one.
            (limit(3, 100), Usage::default(), &["old-1", "old-2", "mid-1"], &["young"]),
            // The older one does not fit: the younger one waits behind it, though it would fit.
            (limit(100, 5), Usage::default(), &["old-1", "old-2"], &["mid", "young"]),
            // Over budget (another team took the project): the serving routes stay.
            (limit(0, 0), Usage::default(), &["old-1", "old-2"], &["mid", "young"]),
            (limit(4, 7), Usage { l7policies: 1, l7rules: 1 }, &["old-1", "old-2", "mid-1"], &["young"]),
        ];
        for (budget, elsewhere, want, want_waiting) in cases {
            let a = admit(&desired, &actual, &own(), &budget, elsewhere, &order);
            assert_eq!(names(&a, &desired), want, "{budget:?} {elsewhere:?}");
            assert_eq!(waiting(&a), want_waiting, "{budget:?} {elsewhere:?}");
        }
        let a = admit(&desired, &actual, &own(), &limit(3, 100), Usage::default(), &order);
        let m = a.waiting[0].message();
        assert!(m.starts_with("Ingress default/young: its new routes wait") && m.contains("need 1 L7 policies"), "{m}");
    }

    /// An Ingress is admitted whole or not at all; a rule added to a route on the router is
    /// charged first, never refused.
    #[test]
    fn an_ingress_is_admitted_whole_and_growth_is_charged_first() {
        let (a1, a2) = (route("a", 1, 1), route("a", 2, 1));
        let grown = route("b", 1, 3);
        let desired = DesiredRouter { policies: vec![grown.clone(), a1, a2], ..DesiredRouter::default() };
        let actual = on_router(&[&route("b", 1, 1)]);
        let order = [ingress("b"), ingress("a")];
        let budget = Budget { l7policies: Some(2), l7rules: Some(10) };
        let a = admit(&desired, &actual, &own(), &budget, Usage::default(), &order);
        assert_eq!(names(&a, &desired), ["b-1"], "one policy of room, a needs two");
        assert_eq!(waiting(&a), ["a"]);
        let budget = Budget { l7policies: Some(3), l7rules: Some(4) };
        let a = admit(&desired, &actual, &own(), &budget, Usage::default(), &order);
        assert_eq!(names(&a, &desired), ["b-1"], "b's two new rules leave one, a needs two");
    }

    /// The ledger counts what the other listeners hold: two listeners share one budget.
    #[test]
    fn listeners_share_the_budget() {
        let (x, y) = (route("x", 1, 1), route("y", 1, 1));
        let order = [ingress("x"), ingress("y")];
        let quota = RouterQuota { budget: Budget { l7policies: Some(1), l7rules: None }, oldest_first: order.to_vec() };
        let mut ledger = QuotaLedger { quota: Some(quota), ..QuotaLedger::default() };
        let http = DesiredRouter { policies: vec![x], ..DesiredRouter::default() };
        let https = DesiredRouter { policies: vec![y], ..DesiredRouter::default() };
        let empty = ActualRouter::default();
        assert!(ledger.admit("http", &http, &empty, &own()).waiting.is_empty());
        let a = ledger.admit("https", &https, &empty, &own());
        assert_eq!(waiting(&a), ["y"]);
        assert_eq!(names(&a, &https), Vec::<String>::new());
        // The HTTP listener deleted: its share is freed.
        ledger.keep_listeners(&["https"]);
        assert!(ledger.admit("https", &https, &empty, &own()).waiting.is_empty());
    }
}
