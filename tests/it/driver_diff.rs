//! The driver's write planning, checked against the in-memory Octavia model: the exact writes for
//! each kind of change, convergence (plan, apply, plan again = nothing), and that foreign objects
//! are never named by a write.

use kuryr_l7_router::driver::actual::{
    ActualListener, ActualMember, ActualPolicy, ActualPool, ActualRouter, ActualRule,
};
use kuryr_l7_router::driver::diff::plan_writes;
use kuryr_l7_router::driver::ownership::Ownership;
use kuryr_l7_router::driver::plan::{DiffOptions, PoolRef, Write};
use kuryr_l7_router::driver::sim::Simulator;
use kuryr_l7_router::model::HealthMonitorSpec;
use kuryr_l7_router::model::{CompareType, DesiredRouter, KubeRef, Member, Policy, Pool, Rule, RuleType};
use kuryr_l7_router::testing::member;
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::net::IpAddr;

fn opts() -> DiffOptions {
    DiffOptions { ownership: Ownership::new("test"), health_monitor: None }
}

fn empty_router() -> ActualRouter {
    ActualRouter {
        listener: ActualListener {
            id: "listener-1".into(),
            default_pool_id: None,
            tags: Ownership::new("test").router_tags(),
        },
        policies: vec![],
        pools: vec![],
    }
}

fn pool(name: &str, members: Vec<Member>) -> Pool {
    Pool {
        name: name.into(),
        service: KubeRef::new("Service", "default", name.trim_start_matches("default_")),
        service_port: "http".into(),
        lb_algorithm: "ROUND_ROBIN".into(),
        members,
        weighting: "even".into(),
        split: Vec::new(),
        member_mode: Default::default(),
    }
}

fn policy(name: &str, pool: &str, host: Option<&str>, path: Option<&str>) -> Policy {
    let mut rules = vec![];
    if let Some(h) = host {
        rules.push(Rule {
            rule_type: RuleType::HostName,
            compare_type: CompareType::Regex,
            value: h.into(),
            invert: false,
            key: None,
        });
    }
    if let Some(p) = path {
        rules.push(Rule {
            rule_type: RuleType::Path,
            compare_type: CompareType::Regex,
            value: p.into(),
            invert: false,
            key: None,
        });
    }
    Policy {
        name: name.into(),
        position: 0,
        pool: pool.into(),
        rules,
        owner: KubeRef::new("Ingress", "default", "web"),
        description: name.into(),
        redirect: None,
    }
}

fn desired(policies: Vec<Policy>, pools: Vec<Pool>, default_pool: Option<&str>) -> DesiredRouter {
    let policies = policies
        .into_iter()
        .enumerate()
        .map(|(i, mut p)| {
            p.position = i as u32 + 1;
            p
        })
        .collect();
    DesiredRouter {
        policies,
        default_pool: default_pool.map(String::from),
        default_pool_owners: vec![],
        pools: pools.into_iter().map(|p| (p.name.clone(), p)).collect::<BTreeMap<_, _>>(),
        warnings: vec![],
        ..Default::default()
    }
}

fn kinds(ws: &[Write]) -> Vec<&'static str> {
    ws.iter().map(|w| w.kind()).collect()
}

/// Plan, apply on the model, and check that a second plan is empty; returns the writes.
fn converge(sim: &mut Simulator, want: &DesiredRouter, o: &DiffOptions) -> Vec<Write> {
    let plan = plan_writes(want, &sim.router, o);
    sim.apply_all(&plan.writes).expect("Octavia model accepts the plan");
    let again = plan_writes(want, &sim.router, o);
    assert!(again.writes.is_empty(), "second plan must be empty, got {:#?}", again.writes);
    plan.writes
}

fn our_order(r: &ActualRouter) -> Vec<String> {
    let own = Ownership::new("test");
    r.policies.iter().filter(|p| own.owns(&p.tags)).map(|p| p.name.clone()).collect()
}

fn base() -> DesiredRouter {
    desired(
        vec![
            policy("web:a.com:Exact:/login", "default_auth", Some("^a\\.com$"), Some("/login")),
            policy("web:a.com:Prefix:/", "default_app", Some("^a\\.com$"), None),
        ],
        vec![
            pool("default_auth", vec![member("10.0.0.1", 1), member("10.0.0.2", 1)]),
            pool("default_app", vec![member("10.0.0.3", 1)]),
        ],
        Some("default_app"),
    )
}

/// Every member of a pool carries the same tags: the plan's batch updates and the router read
/// back hold one copy of them per pool, not one per member (at 100,000 endpoints, 100,000 copies).
#[test]
fn a_pools_members_share_one_copy_of_their_tags_in_the_plan_and_the_router() {
    let mut sim = Simulator::new(empty_router());
    let writes = converge(&mut sim, &base(), &opts());
    let batch = writes
        .iter()
        .find_map(|w| match w {
            Write::SetMembers { pool_name, members, .. } if pool_name == "default_auth" => Some(members),
            _ => None,
        })
        .expect("a batch update of default_auth");
    assert_eq!(batch.len(), 2);
    assert!(std::sync::Arc::ptr_eq(&batch[0].tags, &batch[1].tags));
    let auth = sim.router.pools.iter().find(|p| p.name == "default_auth").unwrap();
    assert!(std::sync::Arc::ptr_eq(&auth.members[0].tags, &auth.members[1].tags));
    assert!(opts().ownership.owns(&auth.members[0].tags));
}

/// A cold plan is held while it is executed (80,000 writes at 10k Ingresses): no spare slots.
#[test]
fn a_plan_holds_no_spare_slots() {
    let plan = plan_writes(&base(), &empty_router(), &opts());
    assert_eq!(plan.writes.len(), 11);
    assert_eq!(plan.writes.capacity(), plan.writes.len());
}

#[test]
fn cold_start_creates_everything_once_and_in_order() {
    let mut sim = Simulator::new(empty_router());
    let writes = converge(&mut sim, &base(), &opts());
    assert_eq!(
        kinds(&writes),
        vec![
            "create_pool",
            "batch_members",
            "create_pool",
            "batch_members",
            "create_policy",
            "create_rule",
            "create_rule",
            "update_policy",
            "create_policy",
            "create_rule",
            "set_default_pool",
        ]
    );
    // The two-rule policy is created disabled and enabled after its rules; the one-rule policy is
    // enabled from the start.
    assert!(matches!(&writes[4], Write::CreatePolicy { admin_state_up: false, position: 1, .. }));
    assert!(matches!(&writes[7], Write::UpdatePolicy { admin_state_up: Some(true), position: None, .. }));
    assert!(matches!(&writes[8], Write::CreatePolicy { admin_state_up: true, position: 2, .. }));
    assert_eq!(our_order(&sim.router), vec!["web:a.com:Exact:/login", "web:a.com:Prefix:/"]);
    assert!(sim.router.policies.iter().all(|p| p.admin_state_up));
}

/// (name, position, rules, pool) of each policy.
type PolicyShape = (String, u32, Vec<String>, String);

/// Names and shapes of the router, ids left out: what two routers that route alike share.
fn shape(r: &ActualRouter) -> (Vec<PolicyShape>, Vec<(String, usize)>, String) {
    let pool_name = |id: Option<String>| {
        r.pools.iter().find(|p| id.as_ref().is_some_and(|id| p.id == *id)).map(|p| p.name.clone()).unwrap_or_default()
    };
    let mut pools: Vec<_> = r.pools.iter().map(|p| (p.name.clone(), p.members.len())).collect();
    pools.sort();
    (
        r.policies
            .iter()
            .map(|p| {
                let mut rules: Vec<String> = p.rules.iter().map(|r| format!("{} {}", r.rule_type, r.value)).collect();
                rules.sort();
                (p.name.clone(), p.position, rules, pool_name(p.redirect_pool_id.as_ref().map(ToString::to_string)))
            })
            .collect(),
        pools,
        pool_name(r.listener.default_pool_id.clone()),
    )
}

/// The router as a clean convergence of [`base`] leaves it (the reference the repair tests compare
/// with).
fn clean_base() -> Simulator {
    let mut clean = Simulator::new(empty_router());
    converge(&mut clean, &base(), &opts());
    clean
}

/// A run killed after sending a create, and the next run that read the router before that create
/// landed, leave the same pool, policy or rule twice. The next plan deletes the copies (policies
/// before pools, so Octavia accepts every delete) and nothing else, and the router is then exactly
/// the clean one.
#[test]
fn duplicates_left_by_an_interrupted_run_are_deleted() {
    let clean = clean_base();
    let mut sim = Simulator::new(clean.router.clone());

    // Copies of the auth pool (empty: its members went to the first one), of the last policy
    // (appended, as Octavia does without a position) and of one rule of the first policy.
    let mut pool = sim.router.pools.iter().find(|p| p.name == "default_auth").unwrap().clone();
    pool.id = "dup-pool".into();
    pool.members = Default::default();
    sim.router.pools.push(pool);
    let mut pol = sim.router.policies.last().unwrap().clone();
    pol.id = "dup-policy".into();
    pol.position = sim.router.policies.len() as u32 + 1;
    sim.router.policies.push(pol);
    let mut rule = sim.router.policies[0].rules[0].clone();
    rule.id = "dup-rule".into();
    let rules = &mut sim.router.policies[0].rules;
    *rules = rules.iter().cloned().chain([rule]).collect();

    let writes = converge(&mut sim, &base(), &opts());
    let mut k = kinds(&writes);
    k.sort();
    assert_eq!(k, vec!["delete_policy", "delete_pool", "delete_rule"], "{writes:#?}");
    assert!(writes.iter().any(|w| matches!(w, Write::DeletePool { id, .. } if id == "dup-pool")));
    assert!(writes.iter().any(|w| matches!(w, Write::DeletePolicy { id, .. } if id == "dup-policy")));
    assert!(writes.iter().any(|w| matches!(w, Write::DeleteRule { rule_id, .. } if rule_id == "dup-rule")));
    assert_eq!(shape(&sim.router), shape(&clean.router));
}

/// Among two copies of a pool, the one the policies already use is kept even when it was created
/// second: no policy has to move and the copy nothing uses goes.
#[test]
fn the_duplicate_pool_in_use_is_the_one_kept() {
    let clean = clean_base();
    let mut sim = Simulator::new(clean.router.clone());
    let first = sim.router.pools.iter().position(|p| p.name == "default_auth").unwrap();
    let mut orphan = sim.router.pools[first].clone();
    orphan.members = Default::default();
    orphan.id = "orphan".into();
    // The orphan comes first in the listing, as the older of the two would.
    sim.router.pools.insert(first, orphan);

    let writes = converge(&mut sim, &base(), &opts());
    assert_eq!(kinds(&writes), vec!["delete_pool"]);
    assert!(matches!(&writes[0], Write::DeletePool { id, .. } if id == "orphan"));
    assert_eq!(shape(&sim.router), shape(&clean.router));
}

/// A duplicate policy placed before the original (a create with an explicit position) is the
/// one kept, because it is the one haproxy evaluates; the later one is deleted, no move is needed.
#[test]
fn the_first_of_duplicate_policies_is_kept() {
    let clean = clean_base();
    let mut sim = Simulator::new(clean.router.clone());
    let mut copy = sim.router.policies[0].clone();
    copy.id = "copy".into();
    sim.router.policies.insert(0, copy);
    for (i, p) in sim.router.policies.iter_mut().enumerate() {
        p.position = i as u32 + 1;
    }
    let original = sim.router.policies[1].id.to_string();
    let writes = converge(&mut sim, &base(), &opts());
    assert_eq!(kinds(&writes), vec!["delete_policy"]);
    assert!(matches!(&writes[0], Write::DeletePolicy { id, .. } if *id == original));
    assert_eq!(shape(&sim.router), shape(&clean.router));
}

/// Objects of ours in provisioning_status ERROR (Octavia does not retry them): a pool or a policy
/// is replaced by a new one with the same name and then deleted, a member is rewritten by the
/// pool's batch update; each is reported, and the router ends as a clean run leaves it.
#[test]
fn objects_in_error_are_reported_and_replaced() {
    let clean = clean_base();

    // A pool in ERROR that a policy and the listener's default use.
    let mut sim = Simulator::new(clean.router.clone());
    let app = sim.router.pools.iter_mut().find(|p| p.name == "default_app").unwrap();
    app.in_error = true;
    let broken = app.id.to_string();
    let plan = plan_writes(&base(), &sim.router, &opts());
    assert!(plan.conflicts.iter().any(|c| c.message.contains(&broken) && c.message.contains("ERROR")), "{plan:?}");
    let writes = converge(&mut sim, &base(), &opts());
    assert_eq!(
        kinds(&writes),
        vec!["create_pool", "batch_members", "update_policy", "set_default_pool", "delete_pool"],
        "{writes:#?}"
    );
    assert!(matches!(writes.last(), Some(Write::DeletePool { id, .. }) if *id == broken));
    assert_eq!(shape(&sim.router), shape(&clean.router));

    // A policy in ERROR: recreated in its place (with its rules), the broken one deleted.
    let mut sim = Simulator::new(clean.router.clone());
    sim.router.policies[0].in_error = true;
    let broken = sim.router.policies[0].id.to_string();
    let writes = converge(&mut sim, &base(), &opts());
    assert_eq!(kinds(&writes), vec!["create_policy", "create_rule", "create_rule", "update_policy", "delete_policy"]);
    assert!(matches!(writes.last(), Some(Write::DeletePolicy { id, .. }) if *id == broken));
    assert_eq!(shape(&sim.router), shape(&clean.router));

    // A member in ERROR: one batch update of its pool.
    let mut sim = Simulator::new(clean.router.clone());
    let auth = sim.router.pools.iter_mut().find(|p| p.name == "default_auth").unwrap();
    std::sync::Arc::make_mut(&mut auth.members)[1].in_error = true;
    let plan = plan_writes(&base(), &sim.router, &opts());
    assert!(plan.conflicts.iter().any(|c| c.message.contains("10.0.0.2:8080")), "{plan:?}");
    let writes = converge(&mut sim, &base(), &opts());
    assert_eq!(kinds(&writes), vec!["batch_members"]);
    assert_eq!(shape(&sim.router), shape(&clean.router));
}

#[test]
fn member_weight_change_is_one_batch_update() {
    let mut sim = Simulator::new(empty_router());
    converge(&mut sim, &base(), &opts());
    let mut want = base();
    want.pools.get_mut("default_auth").unwrap().members[1].weight = 3;
    let writes = converge(&mut sim, &want, &opts());
    assert_eq!(kinds(&writes), vec!["batch_members"]);
    let Write::SetMembers { members, .. } = &writes[0] else { unreachable!() };
    assert_eq!(members.iter().map(|m| m.weight).collect::<Vec<_>>(), vec![1, 3]);
}

#[test]
fn endpoint_scale_up_and_down_is_one_batch_update_each() {
    let mut sim = Simulator::new(empty_router());
    converge(&mut sim, &base(), &opts());
    for n in [50usize, 3, 1] {
        let mut want = base();
        want.pools.get_mut("default_app").unwrap().members =
            (0..n).map(|i| member(&format!("10.0.1.{}", i + 1), 1)).collect();
        let writes = converge(&mut sim, &want, &opts());
        assert_eq!(kinds(&writes), vec!["batch_members"], "scale to {n}");
        let pool = sim.router.pools.iter().find(|p| p.name == "default_app").unwrap();
        assert_eq!(pool.members.len(), n);
    }
}

#[test]
fn inserted_route_costs_its_own_writes_only() {
    let mut sim = Simulator::new(empty_router());
    converge(&mut sim, &base(), &opts());
    let mut want = base();
    want.policies.insert(1, policy("web:a.com:Prefix:/api", "default_auth", Some("^a\\.com$"), Some("^/api(/.*)?$")));
    for (i, p) in want.policies.iter_mut().enumerate() {
        p.position = i as u32 + 1;
    }
    let writes = converge(&mut sim, &want, &opts());
    assert_eq!(kinds(&writes), vec!["create_policy", "create_rule", "create_rule", "update_policy"]);
    assert!(matches!(&writes[0], Write::CreatePolicy { position: 2, .. }));
    assert_eq!(our_order(&sim.router), vec!["web:a.com:Exact:/login", "web:a.com:Prefix:/api", "web:a.com:Prefix:/"]);
}

#[test]
fn removed_route_and_its_pool_are_deleted_policy_first() {
    let mut sim = Simulator::new(empty_router());
    converge(&mut sim, &base(), &opts());
    let want = desired(
        vec![policy("web:a.com:Prefix:/", "default_app", Some("^a\\.com$"), None)],
        vec![pool("default_app", vec![member("10.0.0.3", 1)])],
        Some("default_app"),
    );
    let writes = converge(&mut sim, &want, &opts());
    assert_eq!(kinds(&writes), vec!["delete_policy", "delete_pool"]);
}

#[test]
fn backend_change_is_one_policy_update_after_the_new_pool() {
    let mut sim = Simulator::new(empty_router());
    converge(&mut sim, &base(), &opts());
    let mut want = base();
    want.policies[0].pool = "default_auth2".into();
    want.pools.insert("default_auth2".into(), pool("default_auth2", vec![member("10.0.0.9", 1)]));
    want.pools.remove("default_auth");
    let writes = converge(&mut sim, &want, &opts());
    assert_eq!(kinds(&writes), vec!["create_pool", "batch_members", "update_policy", "delete_pool"]);
    assert!(matches!(&writes[2], Write::UpdatePolicy { pool: Some(PoolRef::New(_)), position: None, .. }));
}

#[test]
fn changed_rule_value_is_updated_in_place() {
    let mut sim = Simulator::new(empty_router());
    converge(&mut sim, &base(), &opts());
    let mut want = base();
    want.policies[0].rules[1].value = "/signin".into();
    let writes = converge(&mut sim, &want, &opts());
    assert_eq!(kinds(&writes), vec!["update_rule"]);
}

#[test]
fn reorder_moves_only_what_is_out_of_place() {
    let mut sim = Simulator::new(empty_router());
    let names = ["p1", "p2", "p3", "p4", "p5"];
    let pools = vec![pool("default_app", vec![member("10.0.0.3", 1)])];
    let mk = |order: &[&str]| {
        desired(
            order.iter().map(|n| policy(n, "default_app", None, Some(&format!("^/{n}$")))).collect(),
            pools.clone(),
            None,
        )
    };
    converge(&mut sim, &mk(&names), &opts());
    // p5 moves to the front: one move, the rest shift by themselves.
    let writes = converge(&mut sim, &mk(&["p5", "p1", "p2", "p3", "p4"]), &opts());
    assert_eq!(kinds(&writes), vec!["update_policy"]);
    assert_eq!(our_order(&sim.router), vec!["p5", "p1", "p2", "p3", "p4"]);
}

#[test]
fn foreign_objects_are_never_written() {
    let foreign_tags = vec!["someone-else".to_string()];
    let mut router = empty_router();
    router.pools.push(ActualPool {
        id: "foreign-pool".into(),
        name: "manual".into(),
        lb_algorithm: "ROUND_ROBIN".into(),
        members: Default::default(),
        healthmonitor: None,
        tags: foreign_tags.clone().into(),
        in_error: false,
    });
    router.policies.push(ActualPolicy {
        id: "foreign-policy".into(),
        name: "manual".into(),
        position: 1,
        action: "REDIRECT_TO_POOL".into(),
        redirect_pool_id: Some("foreign-pool".into()),
        redirect_prefix: None,
        redirect_url: None,
        redirect_http_code: None,
        admin_state_up: true,
        rules: [ActualRule {
            id: "foreign-rule".into(),
            rule_type: "PATH".into(),
            compare_type: "STARTS_WITH".into(),
            value: "/manual".into(),
            key: None,
            invert: false,
        }]
        .into(),
        tags: foreign_tags.clone().into(),
        in_error: false,
    });
    let mut sim = Simulator::new(router);
    converge(&mut sim, &base(), &opts());
    // A foreign member is added by hand to one of our pools; a weight change keeps it as it is.
    let auth = sim.router.pools.iter_mut().find(|p| p.name == "default_auth").unwrap();
    let mut members = auth.members.to_vec();
    members.push(ActualMember {
        id: "foreign-member".into(),
        name: "manual".into(),
        address: "192.0.2.7".parse::<IpAddr>().unwrap(),
        protocol_port: 80,
        weight: 7,
        backup: false,
        admin_state_up: true,
        monitor_port: None,
        tags: Default::default(),
        in_error: false,
    });
    auth.members = members.into();
    let mut want = base();
    want.pools.get_mut("default_auth").unwrap().members[0].weight = 2;
    let writes = converge(&mut sim, &want, &opts());
    assert_eq!(kinds(&writes), vec!["batch_members"]);
    let auth = sim.router.pools.iter().find(|p| p.name == "default_auth").unwrap();
    let kept = auth.members.iter().find(|m| m.id == "foreign-member").expect("foreign member kept");
    assert_eq!((kept.weight, kept.tags.is_empty()), (7, true));
    // The foreign policy and pool are still there, unchanged apart from Octavia's renumbering.
    let fp = sim.router.policies.iter().find(|p| p.id == "foreign-policy").unwrap();
    assert_eq!(fp.rules.len(), 1);
    assert!(sim.router.pools.iter().any(|p| p.id == "foreign-pool"));
    // Even when everything of ours goes away, nothing foreign is deleted.
    let writes = converge(&mut sim, &DesiredRouter::default(), &opts());
    for w in &writes {
        let s = format!("{w:?}");
        assert!(!s.contains("foreign-"), "write names a foreign object: {s}");
    }
    assert!(sim.router.pools.iter().any(|p| p.id == "foreign-pool"));
    assert_eq!(sim.router.policies.len(), 1);
}

#[test]
fn another_clusters_objects_are_foreign() {
    let mut sim = Simulator::new(empty_router());
    converge(&mut sim, &base(), &DiffOptions { ownership: Ownership::new("other"), health_monitor: None });
    let before = sim.router.clone();
    // Cluster "test" sees none of it as its own and so deletes nothing of it.
    let plan = plan_writes(&DesiredRouter::default(), &before, &opts());
    assert!(plan.writes.iter().all(|w| !matches!(w, Write::DeletePolicy { .. } | Write::DeletePool { .. })));
}

#[test]
fn health_monitor_is_created_updated_and_removed_with_the_option() {
    let hm = HealthMonitorSpec { url_path: Some("/healthz".into()), ..HealthMonitorSpec::default() };
    let with_hm = DiffOptions { ownership: Ownership::new("test"), health_monitor: Some(hm.clone()) };
    let mut sim = Simulator::new(empty_router());
    let writes = converge(&mut sim, &base(), &with_hm);
    assert_eq!(writes.iter().filter(|w| w.kind() == "create_healthmonitor").count(), 2);
    let changed = DiffOptions { health_monitor: Some(HealthMonitorSpec { delay: 10, ..hm }), ..with_hm.clone() };
    let writes = converge(&mut sim, &base(), &changed);
    assert_eq!(kinds(&writes), vec!["update_healthmonitor", "update_healthmonitor"]);
    let writes = converge(&mut sim, &base(), &opts());
    assert_eq!(kinds(&writes), vec!["delete_healthmonitor", "delete_healthmonitor"]);
}

#[test]
fn default_backend_is_set_changed_and_cleared() {
    let mut sim = Simulator::new(empty_router());
    converge(&mut sim, &base(), &opts());
    let mut want = base();
    want.default_pool = Some("default_auth".into());
    assert_eq!(kinds(&converge(&mut sim, &want, &opts())), vec!["set_default_pool"]);
    want.default_pool = None;
    assert_eq!(kinds(&converge(&mut sim, &want, &opts())), vec!["set_default_pool"]);
    assert_eq!(sim.router.listener.default_pool_id, None);
}

// ------------------------------------------------------------------ property

fn arb_desired() -> impl Strategy<Value = DesiredRouter> {
    let names = prop::sample::subsequence((0..12).collect::<Vec<u32>>(), 0..12).prop_shuffle();
    let pools = prop::collection::vec(prop::collection::btree_set(1u8..40, 0..6), 3);
    let weights = prop::collection::vec(1u16..=256, 40);
    (names, pools, weights, prop::option::of(0usize..3)).prop_map(|(names, pools, weights, default)| {
        let pools: Vec<Pool> = pools
            .into_iter()
            .enumerate()
            .map(|(i, ips)| {
                pool(
                    &format!("default_s{i}"),
                    ips.into_iter().map(|ip| member(&format!("10.0.{i}.{ip}"), weights[ip as usize % 40])).collect(),
                )
            })
            .collect();
        let policies = names
            .iter()
            .map(|n| {
                let host = (n % 2 == 0).then(|| format!("^h{}\\.com$", n % 3));
                policy(&format!("p{n}"), &format!("default_s{}", n % 3), host.as_deref(), Some(&format!("^/p{n}$")))
            })
            .collect();
        desired(policies, pools, default.map(|d| format!("default_s{d}")).as_deref())
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    /// From any state we produced, any new desired state is reached by one plan, a second plan is
    /// empty, and our policies sit in desired order in front of the foreign one.
    #[test]
    fn any_change_converges_in_one_plan(first in arb_desired(), second in arb_desired()) {
        let mut router = empty_router();
        router.policies.push(ActualPolicy {
            id: "foreign-policy".into(), name: "manual".into(), position: 1, action: "REJECT".into(),
            redirect_pool_id: None, redirect_prefix: None, redirect_url: None, redirect_http_code: None, admin_state_up: true,
            rules: Default::default(), tags: Default::default(), in_error: false,
        });
        let mut sim = Simulator::new(router);
        converge(&mut sim, &first, &opts());
        converge(&mut sim, &second, &opts());
        let want: Vec<String> = second.policies.iter().map(|p| p.name.clone()).collect();
        prop_assert_eq!(our_order(&sim.router), want.clone());
        prop_assert_eq!(sim.router.policies.last().map(|p| p.id.to_string()), Some("foreign-policy".to_string()));
        let default_name = sim.router.listener.default_pool_id.as_ref()
            .and_then(|id| sim.router.pools.iter().find(|p| &p.id == id)).map(|p| p.name.clone());
        prop_assert_eq!(default_name, second.default_pool.clone());
    }
}

#[test]
fn reserved_status_pools_expect_their_own_answer_from_http_monitors() {
    use kuryr_l7_router::model::{NOT_FOUND_POOL, SERVER_ERROR_POOL, UNAVAILABLE_POOL};
    // Octavia's usual HTTP monitor: GET / expecting 200.
    let hm = HealthMonitorSpec::default();
    let with_hm = DiffOptions { ownership: Ownership::new("test"), health_monitor: Some(hm.clone()) };
    let mut want = base();
    for name in [NOT_FOUND_POOL, UNAVAILABLE_POOL, SERVER_ERROR_POOL] {
        want.pools.insert(name.into(), Pool { name: name.into(), ..pool(name, vec![member("10.0.9.9", 1)]) });
    }
    let mut sim = Simulator::new(empty_router());
    converge(&mut sim, &want, &with_hm);
    let codes: BTreeMap<String, Option<String>> = sim
        .router
        .pools
        .iter()
        .map(|p| (p.name.clone(), p.healthmonitor.as_ref().and_then(|h| h.spec.expected_codes.clone())))
        .collect();
    // The responder answers 404 / 503 / 500 on every path: a 200-expecting monitor would mark it
    // down.
    assert_eq!(codes[NOT_FOUND_POOL].as_deref(), Some("404"));
    assert_eq!(codes[UNAVAILABLE_POOL].as_deref(), Some("503"));
    assert_eq!(codes[SERVER_ERROR_POOL].as_deref(), Some("500"));
    assert!(codes.iter().filter(|(n, _)| n.starts_with("default_")).all(|(_, c)| c.as_deref() == Some("200")));
    assert!(converge(&mut sim, &want, &with_hm).is_empty(), "stable: no update of the reserved monitors");
    // TCP monitors have no codes to adjust.
    let tcp = HealthMonitorSpec { monitor_type: "TCP".into(), url_path: None, expected_codes: None, ..hm };
    let monitor = kuryr_l7_router::driver::health_monitor::pool_monitor(NOT_FOUND_POOL, Some(&tcp)).unwrap();
    assert_eq!(monitor, tcp);
}

/// Issue 14 §5: `resource_tags` are extra tags on what we create, never part of ownership. A
/// router built without them is adopted as is once they are set (0 writes, nothing recreated),
/// objects created with them carry them, and a second convergence writes nothing (no update
/// loop); removing them again changes nothing either.
#[test]
fn extra_resource_tags_keep_adoption_and_idempotence() {
    let tagged = DiffOptions {
        ownership: Ownership::new("test").with_extra_tags(&["team=edge".to_string()]),
        health_monitor: None,
    };
    let mut sim = Simulator::new(empty_router());
    converge(&mut sim, &base(), &opts());
    assert!(plan_writes(&base(), &sim.router, &tagged).writes.is_empty(), "adopted without a write");
    // A new route and a new pool: created with the extra tag, and then nothing more to do.
    let mut want = base();
    want.pools.insert("ns_extra".into(), pool("ns_extra", vec![member("10.0.9.1", 1)]));
    want.policies.push(policy("ingress:ns/extra", "ns_extra", Some("extra.example.com"), Some("/")));
    assert!(!converge(&mut sim, &want, &tagged).is_empty());
    let extra = sim.router.pools.iter().find(|p| p.name == "ns_extra").expect("created");
    assert!(extra.tags.contains(&"team=edge".to_string()) && extra.members[0].tags.contains(&"team=edge".to_string()));
    assert!(plan_writes(&want, &sim.router, &tagged).writes.is_empty(), "idempotent with extra tags");
    assert!(plan_writes(&want, &sim.router, &opts()).writes.is_empty(), "and without them");
}
