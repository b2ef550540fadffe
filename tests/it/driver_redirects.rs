//! HTTP→HTTPS redirects in the write plan, checked against the in-memory Octavia model: a
//! redirect is a REDIRECT_PREFIX policy placed after every route (haproxy runs redirects first
//! whatever their position, so no route moves when one is added or removed), created disabled
//! until its two rules exist, updated in place when its code changes, deleted when it goes.
//!
//! And the route actions and rules a Gateway API route needs: a HEADER rule carries its header
//! name (`key`), a route redirect is a REDIRECT_PREFIX or REDIRECT_TO_URL policy at its route
//! position with its code, and a converged router plans nothing more.

use kuryr_l7_router::driver::actual::{ActualListener, ActualRouter};
use kuryr_l7_router::driver::diff::plan_writes;
use kuryr_l7_router::driver::ownership::Ownership;
use kuryr_l7_router::driver::plan::{DiffOptions, PolicyAction, PrefixRedirect, Write};
use kuryr_l7_router::driver::sim::Simulator;
use kuryr_l7_router::model::{
    CompareType, DesiredRouter, KubeRef, Policy, PolicyRedirect, Pool, Redirect, RedirectTarget, Rule, RuleType,
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

fn rule(t: RuleType, c: CompareType, v: &str, invert: bool) -> Rule {
    Rule { rule_type: t, compare_type: c, value: v.into(), invert, key: None }
}

fn route(name: &str, host: &str) -> Policy {
    Policy {
        name: name.into(),
        position: 0,
        pool: "shop_web".into(),
        rules: vec![rule(RuleType::HostName, CompareType::Regex, host, false)],
        owner: KubeRef::new("Ingress", "shop", "web"),
        description: name.into(),
        redirect: None,
    }
}

fn redirect(host: &str, code: u16) -> Redirect {
    Redirect {
        name: format!("redirect:{host}"),
        host: host.into(),
        rules: vec![
            rule(RuleType::HostName, CompareType::Regex, &format!("^{host}$"), false),
            rule(RuleType::Path, CompareType::StartsWith, "/.well-known/acme-challenge/", true),
        ],
        prefix: format!("https://{host}"),
        code,
        certificate: "shop_tls".into(),
        owner: KubeRef::new("Ingress", "shop", "web"),
    }
}

/// `policies` at positions 1, 2, … routing to one pool, and `redirects`.
fn routed(mut policies: Vec<Policy>, redirects: Vec<Redirect>) -> DesiredRouter {
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
        split: Vec::new(),
        member_mode: Default::default(),
    };
    DesiredRouter { policies, pools: [(pool.name.clone(), pool)].into(), redirects, ..Default::default() }
}

fn router(redirects: Vec<Redirect>) -> DesiredRouter {
    routed(vec![route("a", "^a$"), route("b", "^b$")], redirects)
}

fn converge(sim: &mut Simulator, want: &DesiredRouter) -> Vec<Write> {
    let plan = plan_writes(want, &sim.router, &opts());
    sim.apply_all(&plan.writes).expect("Octavia model accepts the plan");
    assert!(plan_writes(want, &sim.router, &opts()).writes.is_empty(), "a second plan is empty");
    plan.writes
}

fn kinds(ws: &[Write]) -> Vec<&'static str> {
    ws.iter().map(Write::kind).collect()
}

#[test]
fn a_redirect_is_added_after_the_routes_without_moving_them() {
    let mut sim = Simulator::new(empty_router());
    converge(&mut sim, &router(vec![]));
    let writes = converge(&mut sim, &router(vec![redirect("a", 308)]));
    assert_eq!(kinds(&writes), vec!["create_policy", "create_rule", "create_rule", "update_policy"]);
    match &writes[0] {
        Write::CreatePolicy { position, admin_state_up, action, .. } => {
            assert_eq!(*position, 3, "after the two routes");
            assert!(!admin_state_up, "disabled until the ACME exclusion exists");
            assert_eq!(action, &PolicyAction::Redirect(PrefixRedirect { prefix: "https://a".into(), code: 308 }));
        }
        other => panic!("{other:?}"),
    }
    let p = sim.router.policies.last().unwrap();
    assert_eq!(
        (&*p.action, p.redirect_prefix.as_deref(), p.redirect_http_code),
        ("REDIRECT_PREFIX", Some("https://a"), Some(308))
    );
    assert!(p.admin_state_up && p.rules.len() == 2 && p.rules[1].invert);
}

#[test]
fn a_changed_code_is_one_update_and_a_removed_redirect_one_delete() {
    let mut sim = Simulator::new(empty_router());
    converge(&mut sim, &router(vec![redirect("a", 308), redirect("b", 308)]));
    let writes = converge(&mut sim, &router(vec![redirect("a", 301), redirect("b", 308)]));
    assert_eq!(kinds(&writes), vec!["update_policy"]);
    assert!(
        matches!(&writes[0], Write::UpdatePolicy { redirect: Some(r), position: None, pool: None, .. } if r.code == 301)
    );
    let routes_before: Vec<String> = sim.router.policies.iter().take(2).map(|p| p.id.to_string()).collect();
    let writes = converge(&mut sim, &router(vec![redirect("b", 308)]));
    assert_eq!(kinds(&writes), vec!["delete_policy"]);
    let routes_after: Vec<String> = sim.router.policies.iter().take(2).map(|p| p.id.to_string()).collect();
    assert_eq!(routes_before, routes_after, "routes untouched");
}

#[test]
fn routes_added_before_existing_redirects_keep_redirects_last() {
    let mut sim = Simulator::new(empty_router());
    converge(&mut sim, &router(vec![redirect("a", 308)]));
    let mut more = router(vec![redirect("a", 308)]);
    more.policies.push(route("c", "^c$"));
    more.policies[2].position = 3;
    let writes = converge(&mut sim, &more);
    assert_eq!(
        kinds(&writes),
        vec!["create_policy", "create_rule"],
        "inserted at its slot: the redirect shifts by itself"
    );
    let names: Vec<&str> = sim.router.policies.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, vec!["a", "b", "c", "redirect:a"]);
}

// ---- route actions and rules (Gateway API) ----

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

fn to(target: RedirectTarget, code: u16) -> Option<PolicyRedirect> {
    Some(PolicyRedirect { target, code })
}

#[test]
fn a_header_rule_is_created_with_its_key_and_a_changed_key_is_updated_in_place() {
    let mut sim = Simulator::new(empty_router());
    let writes =
        converge(&mut sim, &routed(vec![policy("canary", vec![host(), header("x-env", "canary")], None)], vec![]));
    let created: Vec<&Rule> =
        writes.iter().filter_map(|w| if let Write::CreateRule { rule, .. } = w { Some(rule) } else { None }).collect();
    assert!(created.iter().any(|r| r.key.as_deref() == Some("x-env")), "{created:?}");
    let stored = &sim.router.policies[0].rules;
    assert!(stored.iter().any(|r| r.rule_type == "HEADER" && r.key.as_deref() == Some("x-env")), "{stored:?}");

    // Same value, another header: the rule is not equal any more.
    let writes =
        converge(&mut sim, &routed(vec![policy("canary", vec![host(), header("x-stage", "canary")], None)], vec![]));
    assert!(
        matches!(&writes[..], [Write::UpdateRule { rule, .. }] if rule.key.as_deref() == Some("x-stage")),
        "{writes:?}"
    );
}

#[test]
fn route_redirects_are_created_at_their_position_with_their_code_and_updated_in_place() {
    let mut sim = Simulator::new(empty_router());
    let want = routed(
        vec![
            policy("moved", vec![host()], to(RedirectTarget::Url("https://b.example.com/new".into()), 301)),
            policy(
                "elsewhere",
                vec![host(), header("x-old", "1")],
                to(RedirectTarget::Prefix("https://c".into()), 302),
            ),
            policy("served", vec![host(), header("x-env", "a")], None),
        ],
        vec![],
    );
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
        (&*moved.action, moved.redirect_url.as_deref(), moved.redirect_http_code),
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

/// A route switched between forwarding and redirecting (an HTTPRoute rule given a
/// RequestRedirect filter, then without it again) keeps its policy: one update in place each way,
/// at the same position, and the router holds the new action.
#[test]
fn a_route_switched_between_pool_and_redirect_is_updated_in_place() {
    let mut sim = Simulator::new(empty_router());
    let forward = routed(
        vec![policy("switch", vec![host()], None), policy("other", vec![host(), header("x", "1")], None)],
        vec![],
    );
    converge(&mut sim, &forward);
    let id = sim.router.policies[0].id.clone();
    let mut redirecting = forward.clone();
    redirecting.policies[0].redirect = to(RedirectTarget::Prefix("https://c.example.com".into()), 302);
    redirecting.policies[0].pool = String::new();
    for (want, action) in [(&redirecting, "REDIRECT_PREFIX"), (&forward, "REDIRECT_TO_POOL")] {
        let writes = converge(&mut sim, want);
        assert!(matches!(&writes[..], [Write::UpdatePolicy { .. }]), "{action}: {writes:?}");
        let p = &sim.router.policies[0];
        assert_eq!((p.id.to_string(), &*p.action, p.position), (id.to_string(), action, 1));
    }
}
