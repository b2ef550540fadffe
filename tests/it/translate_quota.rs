//! Project quotas for L7 policies and rules (src/translate/budget.rs, src/driver/admission.rs):
//! routes on the router stay whatever the budget; new Ingresses are created within it, oldest
//! first, and the others wait with a `QuotaExceeded` Event.

use std::path::PathBuf;

use kuryr_l7_router::controller::writer::RouterBackend;
use kuryr_l7_router::driver::ownership::Ownership;
use kuryr_l7_router::driver::plan::DiffOptions;
use kuryr_l7_router::model::{DesiredRouter, Policy};
use kuryr_l7_router::testing::SimBackend;
use kuryr_l7_router::translate::budget::{Budget, QUOTA_EXCEEDED, Usage, translate_within, usage};
use kuryr_l7_router::translate::{Inputs, TranslateOptions, load_manifests, translate};

fn inputs() -> Inputs {
    load_manifests(&[PathBuf::from("tests/fixtures/tenancy/tenants.yaml")]).unwrap()
}

fn opts() -> TranslateOptions {
    TranslateOptions { ingress_class: "kuryr".into(), ..TranslateOptions::default() }
}

/// The router with only these Ingresses (namespaces; each holds one Ingress in the fixture).
fn alone(namespaces: &[&str]) -> DesiredRouter {
    let mut inp = inputs();
    inp.ingresses.retain(|i| namespaces.contains(&i.metadata.namespace.as_deref().unwrap()));
    translate(&inp, &opts())
}

fn policies_without_positions(r: &DesiredRouter) -> Vec<Policy> {
    r.policies.iter().map(|p| Policy { position: 0, ..p.clone() }).collect()
}

#[test]
fn budget_from_quota() {
    let used = Usage { l7policies: 3, l7rules: 10 };
    let cases = [
        // (l7policy quota, l7rule quota, budget)
        (Some(-1), Some(-1), None),
        (None, None, None),
        (Some(10), Some(-1), Some(Budget { l7policies: Some(7), l7rules: None })),
        (Some(-1), Some(40), Some(Budget { l7policies: None, l7rules: Some(30) })),
        // Others already use more than the quota: nothing is left, never a negative budget.
        (Some(2), Some(5), Some(Budget { l7policies: Some(0), l7rules: Some(0) })),
    ];
    for (p, r, want) in cases {
        assert_eq!(Budget::from_quota(p, r, used), want, "{p:?} {r:?}");
    }
}

/// The translation no longer refuses anything for the quota: every route is translated and the
/// budget travels with the desired router, with our Ingresses oldest first, for the driver.
#[test]
fn the_translation_keeps_every_route_and_attaches_the_budget() {
    let full = translate(&inputs(), &opts());
    let budget = Budget { l7policies: Some(0), l7rules: Some(0) };
    let r = translate_within(&inputs(), &opts(), Some(&budget));
    assert_eq!(r.policies, full.policies);
    assert!(!r.warnings.iter().any(|w| w.reason == QUOTA_EXCEEDED));
    let q = r.quota.expect("budget attached");
    assert_eq!(q.budget, budget);
    let order: Vec<&str> = q.oldest_first.iter().map(|k| k.namespace.as_str()).collect();
    assert_eq!(order, ["beta", "alpha", "gamma"], "creationTimestamp order");
    assert_eq!(translate_within(&inputs(), &opts(), None), full);
}

/// The project goes over the quota after the router converged (another team's load balancers
/// took the policies): every route that is on the router stays. Before, the newest Ingresses
/// were refused as a whole by the translation, and the driver deleted their working policies.
#[tokio::test]
async fn a_budget_below_what_the_router_holds_removes_no_serving_route() {
    let sim = SimBackend::new(DiffOptions { ownership: Ownership::new("test"), health_monitor: None }, None);
    let full = translate(&inputs(), &opts());
    sim.sync(&translate_within(&inputs(), &opts(), None)).await.unwrap();
    let serving: Vec<String> = sim.actual().policies.iter().map(|p| p.name.clone()).collect();
    assert_eq!(serving.len(), full.policies.len() + full.redirects.len());
    let need = usage(&full);
    for budget in [
        Budget { l7policies: Some(need.l7policies - 1), l7rules: None },
        Budget { l7policies: None, l7rules: Some(need.l7rules - 1) },
        Budget { l7policies: Some(0), l7rules: Some(0) },
    ] {
        let r = sim.sync(&translate_within(&inputs(), &opts(), Some(&budget))).await.unwrap();
        let now: Vec<String> = sim.actual().policies.iter().map(|p| p.name.clone()).collect();
        assert_eq!(now, serving, "{budget:?}: a serving route was removed");
        assert!(r.writes.is_empty(), "{budget:?}: {:?}", r.writes);
    }
}

/// From an empty router under a budget: the oldest Ingresses are created within it, the others
/// wait (reported, for their `QuotaExceeded` Event), as the translation refused them before.
#[tokio::test]
async fn new_ingresses_wait_oldest_first_within_the_budget() {
    let sim = SimBackend::new(DiffOptions { ownership: Ownership::new("test"), health_monitor: None }, None);
    let beta = usage(&alone(&["beta"]));
    let budget = Budget { l7policies: Some(beta.l7policies), l7rules: None };
    let r = sim.sync(&translate_within(&inputs(), &opts(), Some(&budget))).await.unwrap();
    let mut waiting: Vec<&str> = r.quota_waiting.iter().map(|w| w.owner.namespace.as_str()).collect();
    waiting.sort();
    assert_eq!(waiting, ["alpha", "gamma"]);
    let on_router: Vec<String> = sim.actual().policies.iter().map(|p| p.name.clone()).collect();
    let want: Vec<String> = policies_without_positions(&alone(&["beta"])).into_iter().map(|p| p.name).collect();
    assert_eq!(on_router, want);
}
