//! Project quotas for L7 policies and rules (src/translate/budget.rs): an Ingress that would take
//! the router over the budget is refused as a whole, newest first, with a `QuotaExceeded`
//! warning; the older ones are served as they would be alone.

use std::path::PathBuf;

use kuryr_l7_router::model::{DesiredRouter, Policy};
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

#[test]
fn newest_ingresses_are_refused_as_a_whole() {
    let full = translate(&inputs(), &opts());
    let need = usage(&full);
    // Ages in the fixture: beta (oldest), alpha, gamma (newest).
    let beta = usage(&alone(&["beta"]));
    let beta_alpha = usage(&alone(&["beta", "alpha"]));
    assert!(beta.l7policies < beta_alpha.l7policies && beta_alpha.l7policies < need.l7policies);
    let limit = |p: u64, r: u64| Budget { l7policies: Some(p), l7rules: Some(r) };
    // (budget, namespaces kept, namespaces refused)
    let cases: Vec<(Option<Budget>, &[&str], &[&str])> = vec![
        (None, &["beta", "alpha", "gamma"], &[]),
        (Some(limit(need.l7policies, need.l7rules)), &["beta", "alpha", "gamma"], &[]),
        (Some(limit(need.l7policies - 1, need.l7rules)), &["beta", "alpha"], &["gamma"]),
        (Some(Budget { l7policies: None, l7rules: Some(need.l7rules - 1) }), &["beta", "alpha"], &["gamma"]),
        (Some(limit(beta_alpha.l7policies - 1, 1000)), &["beta"], &["alpha", "gamma"]),
        (Some(limit(beta.l7policies, beta.l7rules)), &["beta"], &["alpha", "gamma"]),
        (Some(limit(0, 0)), &[], &["beta", "alpha", "gamma"]),
    ];
    for (budget, kept, refused) in cases {
        let r = translate_within(&inputs(), &opts(), budget.as_ref());
        // The kept Ingresses are served exactly as they would be alone.
        assert_eq!(policies_without_positions(&r), policies_without_positions(&alone(kept)), "{budget:?}");
        if let Some(b) = budget {
            assert!(b.fits(usage(&r)), "{budget:?}: {:?}", usage(&r));
        }
        let mut got: Vec<&str> =
            r.warnings.iter().filter(|w| w.reason == QUOTA_EXCEEDED).map(|w| w.object.namespace.as_str()).collect();
        got.sort();
        let mut want = refused.to_vec();
        want.sort();
        assert_eq!(got, want, "{budget:?}");
        for w in r.warnings.iter().filter(|w| w.reason == QUOTA_EXCEEDED) {
            assert!(w.message.starts_with(&w.object.to_string()) && w.message.contains("refused as a whole"));
            assert!(w.message.contains(&format!("need {} L7 policies", need.l7policies)), "{}", w.message);
        }
    }
}
