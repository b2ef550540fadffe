//! The route actions and rules a Gateway API route needs, through the write plan and the
//! in-memory Octavia model: a HEADER rule carries its header name (`key`), a route redirect is a
//! REDIRECT_PREFIX or REDIRECT_TO_URL policy at its route position with its code, and a
//! converged router plans nothing more.

use kuryr_l7_router::driver::diff::{
    ActualListener, ActualRouter, DiffOptions, Ownership, PolicyAction, Write, plan_writes,
};
use kuryr_l7_router::driver::sim::Simulator;
use kuryr_l7_router::model::{
    CompareType, DesiredRouter, KubeRef, Policy, PolicyRedirect, Pool, RedirectTarget, Rule, RuleType,
};

fn opts() -> DiffOptions {
    DiffOptions { ownership: Ownership::new("test"), health_monitor: None }
}

fn empty_router() -> ActualRouter {
    ActualRouter {
        listener: ActualListener { id: "l1".into(), default_pool_id: None, tags: Ownership::new("test").router_tags() },
        policies: vec![],
        pools: vec![],
    }
}

fn header(key: &str, value: &str) -> Rule {
    Rule {
        rule_type: RuleType::Header,
        compare_type: CompareType::EqualTo,
        value: value.into(),
        invert: false,
        key: Some(key.into()),
    }
}

fn host() -> Rule {
    Rule {
        rule_type: RuleType::HostName,
        compare_type: CompareType::Regex,
        value: "^a$".into(),
        invert: false,
        key: None,
    }
}

fn policy(name: &str, rules: Vec<Rule>, redirect: Option<PolicyRedirect>) -> Policy {
    Policy {
        name: name.into(),
        position: 0,
        pool: if redirect.is_some() { String::new() } else { "shop_web".into() },
        rules,
        owner: KubeRef::new("HTTPRoute", "shop", "web"),
        description: name.into(),
        redirect,
    }
}

fn router(mut policies: Vec<Policy>) -> DesiredRouter {
    for (i, p) in policies.iter_mut().enumerate() {
        p.position = i as u32 + 1;
    }
    let pool = Pool {
        name: "shop_web".into(),
        service: KubeRef::new("Service", "shop", "web"),
        service_port: "80".into(),
        lb_algorithm: "ROUND_ROBIN".into(),
        members: vec![],
        weighting: "even".into(),
    };
    DesiredRouter { policies, pools: [(pool.name.clone(), pool)].into(), ..Default::default() }
}

fn converge(sim: &mut Simulator, want: &DesiredRouter) -> Vec<Write> {
    let plan = plan_writes(want, &sim.router, &opts());
    sim.apply_all(&plan.writes).expect("Octavia model accepts the plan");
    assert!(plan_writes(want, &sim.router, &opts()).writes.is_empty(), "a second plan is empty");
    plan.writes
}

fn to(target: RedirectTarget, code: u16) -> Option<PolicyRedirect> {
    Some(PolicyRedirect { target, code })
}

#[test]
fn a_header_rule_is_created_with_its_key_and_a_changed_key_is_updated_in_place() {
    let mut sim = Simulator::new(empty_router());
    let writes = converge(&mut sim, &router(vec![policy("canary", vec![host(), header("x-env", "canary")], None)]));
    let created: Vec<&Rule> =
        writes.iter().filter_map(|w| if let Write::CreateRule { rule, .. } = w { Some(rule) } else { None }).collect();
    assert!(created.iter().any(|r| r.key.as_deref() == Some("x-env")), "{created:?}");
    let stored = &sim.router.policies[0].rules;
    assert!(stored.iter().any(|r| r.rule_type == "HEADER" && r.key.as_deref() == Some("x-env")), "{stored:?}");

    // Same value, another header: the rule is not equal any more.
    let writes = converge(&mut sim, &router(vec![policy("canary", vec![host(), header("x-stage", "canary")], None)]));
    assert!(
        matches!(&writes[..], [Write::UpdateRule { rule, .. }] if rule.key.as_deref() == Some("x-stage")),
        "{writes:?}"
    );
}

#[test]
fn route_redirects_are_created_at_their_position_with_their_code_and_updated_in_place() {
    let mut sim = Simulator::new(empty_router());
    let want = router(vec![
        policy("moved", vec![host()], to(RedirectTarget::Url("https://b.example.com/new".into()), 301)),
        policy("elsewhere", vec![host(), header("x-old", "1")], to(RedirectTarget::Prefix("https://c".into()), 302)),
        policy("served", vec![host(), header("x-env", "a")], None),
    ]);
    let writes = converge(&mut sim, &want);
    let actions: Vec<(&str, u32, &PolicyAction)> = writes
        .iter()
        .filter_map(|w| match w {
            Write::CreatePolicy { name, position, action, .. } => Some((name.as_str(), *position, action)),
            _ => None,
        })
        .collect();
    assert!(
        matches!(actions[0], ("moved", 1, PolicyAction::RedirectUrl(r)) if r.url == "https://b.example.com/new" && r.code == 301)
    );
    assert!(
        matches!(actions[1], ("elsewhere", 2, PolicyAction::Redirect(r)) if r.prefix == "https://c" && r.code == 302)
    );
    assert!(matches!(actions[2], ("served", 3, PolicyAction::Pool(_))));
    let moved = &sim.router.policies[0];
    assert_eq!(
        (moved.action.as_str(), moved.redirect_url.as_deref(), moved.redirect_http_code),
        ("REDIRECT_TO_URL", Some("https://b.example.com/new"), Some(301))
    );

    let mut changed = want.clone();
    changed.policies[0].redirect = to(RedirectTarget::Url("https://b.example.com/newer".into()), 308);
    let writes = converge(&mut sim, &changed);
    assert!(
        matches!(&writes[..], [Write::UpdatePolicy { redirect_url: Some(r), pool: None, redirect: None, .. }] if r.code == 308),
        "{writes:?}"
    );
}
