//! Non-disruptive faults against the real local Keystone, Neutron and Octavia
//! (`KURYR_FUNCTIONAL=1 cargo test --test functional_reliability`). No service is stopped: every
//! fault is a bad request, a bad option or a hand edit of our own router. Each test states what it
//! injects and asserts the final state; each cleans up the load balancer, its VIP port and every
//! port, floating IP or user it created.

#[path = "common/mod.rs"]
mod common;
use common::*;

use kuryr_l7_router::driver::router::{DriverError, Router};
use kuryr_l7_router::model::{CompareType, DesiredRouter, KubeRef, Member, Policy, Pool, Rule, RuleType};
use kuryr_l7_router::openstack::keystone::Request;
use kuryr_l7_router::openstack::neutron::FloatingIpCreate;
use kuryr_l7_router::openstack::octavia::{MemberCreate, PoolCreate};
use kuryr_l7_router::openstack::*;
use reqwest::Method;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::Duration;

fn member(ip: &str) -> Member {
    Member { address: ip.parse().unwrap(), protocol_port: 8080, weight: 1, backup: false, zone: None, target: None }
}

fn rule(rule_type: RuleType, compare_type: CompareType, value: &str) -> Rule {
    Rule { rule_type, compare_type, value: value.into(), invert: false }
}

/// Two routes to two pools; `path_value` is the value of the second policy's path rule.
fn shop(path_value: &str) -> DesiredRouter {
    let pool = |name: &str, ip: &str| Pool {
        name: name.into(),
        service: KubeRef::new("Service", "shop", name),
        service_port: "http".into(),
        lb_algorithm: "ROUND_ROBIN".into(),
        members: vec![member(ip)],
        weighting: "even".into(),
    };
    let host = rule(RuleType::HostName, CompareType::Regex, r"^shop\.example\.com(:[0-9]+)?$");
    let policy = |n: u32, name: &str, pool: &str, rules: Vec<Rule>| Policy {
        name: name.into(),
        position: n,
        pool: pool.into(),
        rules,
        owner: KubeRef::new("Ingress", "shop", "web"),
        description: name.into(),
    };
    DesiredRouter {
        policies: vec![
            policy(
                1,
                "shop:api",
                "shop_api",
                vec![host.clone(), rule(RuleType::Path, CompareType::StartsWith, path_value)],
            ),
            policy(2, "shop:front", "shop_front", vec![host]),
        ],
        default_pool: None,
        default_pool_owners: vec![],
        pools: [pool("shop_api", "10.0.0.31"), pool("shop_front", "10.0.0.41")]
            .into_iter()
            .map(|p| (p.name.clone(), p))
            .collect::<BTreeMap<_, _>>(),
        warnings: vec![],
        ..Default::default()
    }
}

/// (policy name, rule values) in position order, and pool name → member addresses.
async fn observe(r: &Router) -> (Vec<(String, Vec<String>)>, BTreeMap<String, Vec<String>>) {
    let lb = r.find().await.unwrap().expect("router exists");
    let q = ListQuery { loadbalancer_id: Some(lb.id.clone()), ..ListQuery::default() };
    let listener = r.octavia().list_listeners(&q).await.unwrap().remove(0);
    let actual = r.read_actual(&listener).await.unwrap();
    let policies = actual
        .policies
        .iter()
        .map(|p| {
            let mut v: Vec<String> = p.rules.iter().map(|r| r.value.clone()).collect();
            v.sort();
            (p.name.clone(), v)
        })
        .collect();
    let pools = actual
        .pools
        .iter()
        .map(|p| (p.name.clone(), p.members.iter().map(|m| m.address.to_string()).collect()))
        .collect();
    (policies, pools)
}

/// Injects: a wrong password. Asserts: a clear 401 naming Keystone, the password not in the
/// message, and exactly one authentication per call (no retry storm).
/// A router without floating IP (these tests are about Octavia faults).
async fn router(tag: &str) -> Router {
    let mut r = local_router("fct-rel", tag).await;
    r.spec_mut().fully_populated_create = false;
    r.spec_mut().external_svc_subnet = None;
    r
}

#[tokio::test]
async fn wrong_password_is_a_clear_401_without_retry_storm() {
    if !enabled() {
        return;
    }
    let wrong = "Wrong-Pw-5be1-do-not-print";
    let s = session("admin", wrong);
    let err = s.authenticate().await.unwrap_err();
    let msg = err.to_string();
    assert_eq!(err.status(), Some(401), "{msg}");
    assert!(msg.starts_with("keystone POST /auth/tokens: HTTP 401"), "{msg}");
    assert!(!msg.contains(wrong), "{msg}");
    assert_eq!(s.stats().authentications, 1);
    // An API call with that session fails the same way, after one more authentication only.
    let err = Octavia::new(s.clone(), OctaviaOptions::default()).list_load_balancers(&ListQuery::default()).await;
    assert_eq!(err.unwrap_err().status(), Some(401));
    assert_eq!(s.stats().authentications, 2, "one authentication per call, no retries");
    assert_eq!(s.stats().requests, 0, "nothing reached Octavia");
}

/// Injects: an lb_subnet that does not exist. Asserts: the create fails with Octavia's
/// faultstring and the write that failed; no load balancer is left behind.
#[tokio::test]
async fn unknown_lb_subnet_fails_cleanly() {
    if !enabled() {
        return;
    }
    let mut r = router("nosubnet").await;
    r.spec_mut().vip_subnet_id = Some("0badc0de-0000-4000-8000-000000000000".into());
    let err = r.converge(&shop("/api")).await.unwrap_err();
    let msg = err.to_string();
    cleanup(&r).await;
    assert!(matches!(err, DriverError::Write { .. }), "{msg}");
    assert!(msg.contains(&format!("create L7 router {}", r.spec().name)), "names the write: {msg}");
    assert!(msg.contains("octavia POST") && msg.contains("HTTP 400"), "{msg}");
    assert!(msg.to_lowercase().contains("subnet"), "carries Octavia's faultstring: {msg}");
    assert!(r.find().await.unwrap().is_none(), "no load balancer left");
}

/// One router, several injected faults in turn (creating a router costs a minute):
/// 1. a policy deleted by hand → restored by the next converge;
/// 2. a member deleted by hand → restored;
/// 3. an untagged foreign pool + member added by hand → never modified nor deleted;
/// 4. a rule value with a space (bypassing the translation's validation) → Octavia's 400 with
///    the faultstring and the failed write, reported in the convergence's `failures` (its
///    object on hold, the convergence itself succeeds); the next converge of a good state
///    succeeds;
/// 5. l7_router_ip that does not exist → FloatingIpNotFound;
/// 6. l7_router_ip bound to another port → FloatingIpInUse naming both ports, FIP untouched.
///
/// Final state asserted after each step: our policies and pools exactly as desired.
#[tokio::test]
async fn hand_edits_and_bad_writes_are_repaired_or_reported() {
    if !enabled() {
        return;
    }
    let r = router("repair").await;
    let mut created_port: Option<String> = None;
    let mut created_fip: Option<String> = None;
    let result = tokio::spawn(faults(r.clone(), unique("fct-rel", "port"))).await;
    if let Ok((port, fip)) = &result {
        created_port = port.clone();
        created_fip = fip.clone();
    }
    cleanup(&r).await;
    if let Some(f) = created_fip {
        let _ = r.neutron().delete_floating_ip(&f).await;
    }
    if let Some(p) = created_port {
        let _ = r.neutron().delete_port(&p).await;
    }
    if let Err(e) = result {
        std::panic::resume_unwind(e.into_panic());
    }
}

async fn faults(mut r: Router, port_name: String) -> (Option<String>, Option<String>) {
    let good = shop("/api");
    r.converge(&good).await.unwrap_or_else(|e| panic!("first converge: {e}"));
    let want = observe(&r).await;
    assert_eq!(want.0.len(), 2);
    let lb = r.find().await.unwrap().unwrap();
    let wait = || r.octavia().wait_active(&lb.id, Duration::from_secs(60));
    let q = ListQuery { loadbalancer_id: Some(lb.id.clone()), ..ListQuery::default() };
    let listener = r.octavia().list_listeners(&q).await.unwrap().remove(0);

    // 1. A policy deleted by hand.
    let actual = r.read_actual(&listener).await.unwrap();
    r.octavia().delete_l7policy(&actual.policies[0].id).await.unwrap();
    wait().await.unwrap();
    let rep = r.converge(&good).await.unwrap();
    assert!(rep.writes.iter().any(|w| w.kind == "create_policy"), "{:?}", rep.writes);
    assert_eq!(observe(&r).await, want, "policy restored");

    // 2. A member deleted by hand.
    let actual = r.read_actual(&listener).await.unwrap();
    let pool = actual.pools.iter().find(|p| p.name == "shop_api").unwrap();
    r.octavia().delete_member(&pool.id, &pool.members[0].id).await.unwrap();
    wait().await.unwrap();
    let rep = r.converge(&good).await.unwrap();
    assert!(!rep.writes.is_empty());
    assert_eq!(observe(&r).await, want, "member restored");

    // 3. An untagged foreign pool with a member.
    let foreign = r
        .octavia()
        .create_pool(&PoolCreate {
            name: Some("foreign-pool".into()),
            loadbalancer_id: Some(lb.id.clone()),
            protocol: "HTTP".into(),
            lb_algorithm: "ROUND_ROBIN".into(),
            ..PoolCreate::default()
        })
        .await
        .unwrap();
    wait().await.unwrap();
    r.octavia()
        .create_member(
            &foreign.id,
            &MemberCreate { address: "10.0.0.99".into(), protocol_port: 9999, ..MemberCreate::default() },
        )
        .await
        .unwrap();
    wait().await.unwrap();
    let rep = r.converge(&good).await.unwrap();
    assert!(rep.writes.iter().all(|w| !w.description.contains(&foreign.id)), "{:?}", rep.writes);
    let after = r.octavia().get_pool(&foreign.id).await.expect("foreign pool kept");
    assert_eq!((after.name.as_str(), after.lb_algorithm.as_str()), ("foreign-pool", "ROUND_ROBIN"));
    let members = r.octavia().list_members(&foreign.id, &ListQuery::default()).await.unwrap();
    assert_eq!(
        members.iter().map(|m| (m.address.as_str(), m.protocol_port)).collect::<Vec<_>>(),
        [("10.0.0.99", 9999)]
    );
    assert_eq!(observe(&r).await.0, want.0, "our policies unchanged");

    // 4. A rule value Octavia refuses: reported against its object (put on hold), the
    // convergence itself goes on (issue 14: one refusal never stops the other changes).
    let rep = r.converge(&shop("/bad value")).await.unwrap();
    assert_eq!(rep.failures.len(), 1, "{:?}", rep.failures);
    let msg = format!("{} {}", rep.failures[0].write, rep.failures[0].message);
    assert_eq!(rep.failures[0].reason, "invalid", "{msg}");
    assert!(msg.contains("HTTP 400"), "{msg}");
    assert!(msg.contains("shop:api"), "names the write: {msg}");
    assert_eq!(r.find().await.unwrap().unwrap().provisioning_status, "ACTIVE", "router not poisoned");
    r.converge(&good).await.unwrap_or_else(|e| panic!("converge after the 400: {e}"));
    assert_eq!(observe(&r).await.0, want.0, "good state restored after the 400");

    // 5. l7_router_ip that does not exist (TEST-NET-3, never allocated).
    r.spec_mut().floating_ip = Some("203.0.113.77".parse().unwrap());
    let err = r.converge(&good).await.unwrap_err();
    assert!(matches!(err, DriverError::FloatingIpNotFound(_)), "{err}");
    assert!(err.to_string().contains("203.0.113.77"), "{err}");

    // 6. l7_router_ip on another port: a port on the private network with a floating IP.
    let s = r.octavia().session();
    let private = r.neutron().get_subnet(&subnet_id(r.neutron(), "private-subnet").await).await.unwrap().network_id;
    let body = json!({"port": {"name": port_name, "network_id": private}});
    let resp: Value =
        s.send_json(&Request::new(Service::Network, Method::POST, "/v2.0/ports").json(body)).await.unwrap();
    let port = resp["port"]["id"].as_str().unwrap().to_string();
    let public = r.neutron().get_subnet(&subnet_id(r.neutron(), "public-subnet").await).await.unwrap().network_id;
    let fip = match r
        .neutron()
        .create_floating_ip(&FloatingIpCreate {
            floating_network_id: public,
            description: Some(port_name.clone()),
            port_id: Some(port.clone()),
            floating_ip_address: None,
        })
        .await
    {
        Ok(f) => f,
        Err(e) => {
            println!("step 6 skipped: this cloud cannot put a floating IP on the private network: {e}");
            return (Some(port), None);
        }
    };
    r.spec_mut().floating_ip = Some(fip.floating_ip_address.parse().unwrap());
    let err = r.converge(&good).await.unwrap_err();
    let msg = err.to_string();
    let vip_port = lb.vip_port_id.clone().unwrap();
    assert!(matches!(err, DriverError::FloatingIpInUse { .. }), "{msg}");
    assert!(msg.contains(&port) && msg.contains(&vip_port), "names both ports: {msg}");
    let after = r.neutron().get_floating_ip(&fip.id).await.unwrap();
    assert_eq!(after.port_id.as_deref(), Some(port.as_str()), "floating IP untouched");
    (Some(port), Some(fip.id))
}

/// Injects: a `smoke` run of the binary at RUST_LOG=debug with a user whose password is
/// distinctive. Asserts: neither the password nor any Fernet token (`gAAAAA...`) is logged.
#[tokio::test]
async fn debug_logs_of_a_smoke_run_hold_no_secret() {
    if !enabled() {
        return;
    }
    let admin = session("admin", "admin");
    let name = unique("fct-rel", "user");
    let password = format!("Smoke-Pw-{}", &name[name.len() - 8..]);
    let id = |v: &Value, k: &str| v[k][0]["id"].as_str().unwrap().to_string();
    let get = |path: String| {
        let admin = admin.clone();
        async move { admin.send_json::<Value>(&Request::new(Service::Identity, Method::GET, path)).await.unwrap() }
    };
    let project = id(&get("/projects?name=admin".into()).await, "projects");
    let role = id(&get("/roles?name=admin".into()).await, "roles");
    let body = json!({"user": {"name": name, "password": password, "domain_id": "default"}});
    let user: Value =
        admin.send_json(&Request::new(Service::Identity, Method::POST, "/users").json(body)).await.unwrap();
    let user_id = user["user"]["id"].as_str().unwrap().to_string();
    let assign = format!("/projects/{project}/users/{user_id}/roles/{role}");
    admin.send(&Request::new(Service::Identity, Method::PUT, assign)).await.unwrap();

    let subnet = subnet_id(&Neutron::new(admin.clone()), "private-subnet").await;
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("kuryr.conf");
    std::fs::write(
        &conf,
        format!(
            "[DEFAULT]\ndebug = true\n[neutron_defaults]\nlb_subnet = {subnet}\n[octavia_defaults]\n\
             l7_router_name = {name}\nprovider = amphora\n[neutron]\nauth_url = {AUTH_URL}\nusername = {name}\n\
             password = {password}\nproject_name = admin\nregion_name = RegionOne\n"
        ),
    )
    .unwrap();
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_kuryr-l7-router"))
        .arg("--config-file")
        .arg(&conf)
        .arg("smoke")
        .env("RUST_LOG", "debug")
        .env_remove("KURYR_NEUTRON__PASSWORD")
        .output()
        .await
        .unwrap();
    let _ = admin.send(&Request::new(Service::Identity, Method::DELETE, format!("/users/{user_id}"))).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "smoke failed:\n{stdout}\n{stderr}");
    assert!(stderr.contains("DEBUG"), "debug logging was on: {stderr}");
    for text in [&stdout, &stderr] {
        assert!(!text.contains(&password), "password logged: {text}");
        assert!(!text.contains("gAAAAA"), "a Fernet token logged: {text}");
    }
}

/// The project's l7policy quota (set with the admin credentials, restored afterwards) leaves room
/// for the oldest tenant's Ingress only: the budget read from Octavia refuses the two newer
/// Ingresses as a whole before any write, and the router converges without a 403. Converging the
/// whole router anyway (what the controller did before) is refused by Octavia's quota.
#[tokio::test]
#[ignore = "Octavia enforces quotas against its own in-use counter (quotas.in_use_l7policy), which drifts from the policies that exist (70 vs 5 on the local stack, 2026-11-23) and is not in the API: the budget from listing the project's policies is too optimistic there (docs/reliability.md)"]
async fn quota_refuses_the_newest_ingresses_before_writing() {
    use kuryr_l7_router::driver::quota::{read_budget, usage_elsewhere};
    use kuryr_l7_router::translate::budget::{QUOTA_EXCEEDED, translate_within, usage};
    use kuryr_l7_router::translate::{TranslateOptions, load_manifests, translate};
    if !enabled() {
        return;
    }
    let r = local_router("kq", "quota").await;
    let octavia = r.octavia().clone();
    let project = octavia.session().token_info().await.unwrap().project_id.unwrap();
    let quota_path = format!("/v2/lbaas/quotas/{project}");
    let before = octavia.get_quota(&project).await.unwrap();
    let inputs = load_manifests(&["tests/fixtures/tenancy/tenants.yaml".into()]).unwrap();
    let opts = TranslateOptions { ingress_class: "kuryr".into(), ..TranslateOptions::default() };
    let full = translate(&inputs, &opts);
    let mut oldest = inputs.clone();
    oldest.ingresses.retain(|i| i.metadata.namespace.as_deref() == Some("beta"));
    let room = usage(&translate(&oldest, &opts)).l7policies;
    assert!(room < usage(&full).l7policies);
    let q = ListQuery { extra: vec![("project_id".into(), project.clone())], ..ListQuery::default() };
    let elsewhere = usage_elsewhere(&octavia.list_l7policies(&q).await.unwrap(), &Default::default());
    let set = |v: Value| Request::new(Service::LoadBalancer, Method::PUT, quota_path.clone()).json(json!({"quota": v}));
    octavia.session().send(&set(json!({"l7policy": elsewhere.l7policies + room}))).await.unwrap();
    let t = std::time::Instant::now();
    let body = {
        let (octavia, inputs, opts) = (octavia.clone(), inputs.clone(), opts.clone());
        move |r: Router| async move {
            // No listener of ours yet: every policy of the project is someone else's.
            let budget = read_budget(&octavia, &Default::default()).await.unwrap().expect("a quota is set");
            assert_eq!(budget.l7policies, Some(room));
            let within = translate_within(&inputs, &opts, Some(&budget));
            let refused: Vec<String> =
                within.warnings.iter().filter(|w| w.reason == QUOTA_EXCEEDED).map(|w| w.object.to_string()).collect();
            assert_eq!(refused, ["Ingress alpha/site", "Ingress gamma/site"]);
            r.converge(&within).await.expect("the budgeted router fits the quota");
            let (policies, _) = observe(&r).await;
            assert_eq!(policies.len() as u64, room, "{policies:?}");
            let e = r.converge(&full).await.expect_err("the whole router exceeds the quota").to_string();
            assert!(e.contains("403") || e.to_lowercase().contains("quota"), "{e}");
        }
    };
    let result = tokio::spawn(body(r.clone())).await;
    let restore = json!({"l7policy": before.l7policy.unwrap_or(-1), "l7rule": before.l7rule.unwrap_or(-1)});
    octavia.session().send(&set(restore)).await.unwrap();
    cleanup(&r).await;
    println!("quota case: {:?}", t.elapsed());
    if let Err(e) = result {
        std::panic::resume_unwind(e.into_panic());
    }
}
