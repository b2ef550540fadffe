//! Non-disruptive faults against the real local Keystone, Neutron and Octavia
//! (`KURYR_FUNCTIONAL=1 cargo test --test functional_reliability`). No service is stopped: every
//! fault is a bad request, a bad option or a hand edit of our own router. Each test states what it
//! injects and asserts the final state; each cleans up the load balancer, its VIP port and every
//! port, floating IP or user it created.

#[path = "common/mod.rs"]
mod common;
use common::*;

use kuryr_l7_router::driver::error::DriverError;
use kuryr_l7_router::driver::router::Router;
use kuryr_l7_router::model::{CompareType, DesiredRouter, KubeRef, Member, Policy, Pool, Rule, RuleType};
use kuryr_l7_router::openstack::keystone::Request;
use kuryr_l7_router::openstack::neutron::FloatingIpCreate;
use kuryr_l7_router::openstack::octavia_requests::{MemberCreate, PoolCreate};
use kuryr_l7_router::openstack::*;
use reqwest::Method;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::Duration;

fn member(ip: &str) -> Member {
    Member {
        address: ip.parse().unwrap(),
        protocol_port: 8080,
        weight: 1,
        backup: false,
        zone: None,
        target: None,
        monitor_port: None,
    }
}

fn rule(rule_type: RuleType, compare_type: CompareType, value: &str) -> Rule {
    Rule { rule_type, compare_type, value: value.into(), invert: false, key: None }
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
        split: Vec::new(),
        member_mode: Default::default(),
    };
    let host = rule(RuleType::HostName, CompareType::Regex, r"^shop\.example\.com(:[0-9]+)?$");
    let policy = |n: u32, name: &str, pool: &str, rules: Vec<Rule>| Policy {
        name: name.into(),
        position: n,
        pool: pool.into(),
        rules,
        owner: KubeRef::new("Ingress", "shop", "web"),
        description: name.into(),
        redirect: None,
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
    r.octavia().delete_l7policy(&actual.policies[0].id.to_string()).await.unwrap();
    wait().await.unwrap();
    let rep = r.converge(&good).await.unwrap();
    assert!(rep.writes.iter().any(|w| w.kind == "create_policy"), "{:?}", rep.writes);
    assert_eq!(observe(&r).await, want, "policy restored");

    // 2. A member deleted by hand.
    let actual = r.read_actual(&listener).await.unwrap();
    let pool = actual.pools.iter().find(|p| p.name == "shop_api").unwrap();
    r.octavia().delete_member(&pool.id.to_string(), &pool.members[0].id.to_string()).await.unwrap();
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
    assert_eq!((after.name.as_str(), &*after.lb_algorithm), ("foreign-pool", "ROUND_ROBIN"));
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

/// Octavia's in-use counters of `project` (`quotas.in_use_l7policy`, `in_use_l7rule`; "NULL"
/// when unset, "" without a quota row).
fn in_use_counters(project: &str) -> String {
    mariadb(&format!("SELECT in_use_l7policy, in_use_l7rule FROM quotas WHERE project_id='{project}'"))
}

/// Octavia's in-use counters made true: NULL makes Octavia count the project's objects that are
/// not DELETED on the next quota check, and store that count (`check_quota_met`, "the upgrade
/// case"; 0 does the same).
fn true_counters(project: &str) {
    mariadb(&format!("UPDATE quotas SET in_use_l7policy=NULL, in_use_l7rule=NULL WHERE project_id='{project}'"));
}

/// Octavia's l7policy counter set `by` above the project's real policies, as Octavia's own
/// drift leaves it (docs/reliability.md).
fn drift_l7policy_counter(project: &str, by: u32) {
    mariadb(&format!(
        "UPDATE quotas SET in_use_l7policy = (SELECT COUNT(*) FROM l7policy WHERE project_id='{project}' \
         AND provisioning_status <> 'DELETED') + {by} WHERE project_id='{project}'"
    ));
}

/// The quota budget against the real Octavia, in a project of its own (its quotas and Octavia's
/// in-use counters are the test's alone; all restored or removed afterwards):
/// 1. Octavia's in-use counters made true (NULL in its database: it counts the policies that
///    exist), the `l7policy` quota set to room for the oldest tenant's Ingress only: with the
///    budget read from Octavia, the two newer Ingresses wait (not created, reported for their
///    `QuotaExceeded` Event), and the router converges with no refusal (no 403).
/// 2. The quota raised to what the whole router needs (the budget now refuses nothing) and
///    Octavia's counter drifted one above the policies that exist, as Octavia's own bugs leave
///    it: Octavia refuses the last policy create with a 403 although the budget allows it. That
///    policy alone is reported (`quota`, naming its Ingress) and put on hold; every other policy,
///    the other new Ingress's included, is created in the same sync; the next sync sends nothing
///    for it while it is held.
/// 3. The quota lowered to leave the router nothing (another team's load balancers): every
///    policy on the router stays, no write.
#[tokio::test]
async fn quota_refuses_the_newest_ingresses_before_writing() {
    use kuryr_l7_router::translate::load_manifests;
    if !enabled() {
        return;
    }
    let t = std::time::Instant::now();
    let tenant = ScratchProject::create("kq").await;
    let r = local_router_as("kq", "quota", tenant.session()).await;
    let octavia = r.octavia().clone();
    let project = tenant.project.clone();
    let before = octavia.get_quota(&project).await.unwrap();
    let counters_before = in_use_counters(&project);
    let inputs = load_manifests(&["tests/fixtures/tenancy/tenants.yaml".into()]).unwrap();
    let result = tokio::spawn(quota_steps(r.clone(), project.clone(), inputs)).await;
    let quota_path = format!("/v2/lbaas/quotas/{project}");
    let restore = json!({"quota": {"l7policy": before.l7policy.unwrap_or(-1), "l7rule": before.l7rule.unwrap_or(-1)}});
    let put = Request::new(Service::LoadBalancer, Method::PUT, quota_path).json(restore);
    let restored = octavia.session().send(&put).await;
    cleanup(&r).await;
    // The counters as found (a cascade delete leaves the router's policies in them: see
    // docs/reliability.md), then the project.
    let (policy, rule) = counters_before.split_once('\t').unwrap_or(("NULL", "NULL"));
    mariadb(&format!("UPDATE quotas SET in_use_l7policy={policy}, in_use_l7rule={rule} WHERE project_id='{project}'"));
    tenant.delete().await;
    println!("quota case: {:?}", t.elapsed());
    if let Err(e) = result {
        std::panic::resume_unwind(e.into_panic());
    }
    restored.unwrap();
}

async fn quota_steps(r: Router, project: String, inputs: kuryr_l7_router::translate::Inputs) {
    use kuryr_l7_router::driver::quota::{read_budget, usage_elsewhere};
    use kuryr_l7_router::translate::budget::{translate_within, usage};
    use kuryr_l7_router::translate::{TranslateOptions, translate};
    let octavia = r.octavia().clone();
    let set = |v: Value| {
        let req = Request::new(Service::LoadBalancer, Method::PUT, format!("/v2/lbaas/quotas/{project}"));
        let octavia = octavia.clone();
        async move { octavia.session().send(&req.json(json!({"quota": v}))).await.unwrap() }
    };
    let opts = TranslateOptions { ingress_class: "kuryr".into(), ..TranslateOptions::default() };
    let full = translate(&inputs, &opts);
    let mut oldest = inputs.clone();
    oldest.ingresses.retain(|i| i.metadata.namespace.as_deref() == Some("beta"));
    let room = usage(&translate(&oldest, &opts)).l7policies;
    let need = usage(&full).l7policies;
    assert!(room < need);
    let q = ListQuery { extra: vec![("project_id".into(), project.clone())], ..ListQuery::default() };
    let elsewhere = usage_elsewhere(&octavia.list_l7policies(&q).await.unwrap(), &Default::default());

    // 1. True counters, room for the oldest Ingress: refused before writing, no 403.
    set(json!({"l7policy": elsewhere.l7policies + room})).await;
    true_counters(&project);
    // No listener of ours yet: every policy of the project is someone else's.
    let budget = read_budget(&octavia, &Default::default()).await.unwrap().expect("a quota is set");
    assert_eq!(budget.l7policies, Some(room));
    let within = translate_within(&inputs, &opts, Some(&budget));
    let rep = r.converge(&within).await.expect("the budgeted router fits the quota");
    let waiting: Vec<String> = rep.quota_waiting.iter().map(|w| w.owner.to_string()).collect();
    assert_eq!(waiting, ["Ingress alpha/site", "Ingress gamma/site"]);
    assert!(rep.failures.is_empty(), "no refusal, no 403: {:?}", rep.failures);
    let (policies, _) = observe(&r).await;
    let names =
        |d: &DesiredRouter| d.policies.iter().map(|p| p.name.clone()).collect::<std::collections::BTreeSet<_>>();
    let oldest_alone = translate(&oldest, &opts);
    assert_eq!(policies.iter().map(|p| p.0.clone()).collect::<std::collections::BTreeSet<_>>(), names(&oldest_alone));
    assert_eq!(policies.len() as u64, room, "{policies:?}");
    println!("counters after step 1: {} ({} policies exist)", in_use_counters(&project), policies.len());

    // 2. Room for everything, but Octavia's counter one above the truth: its 403 is isolated.
    set(json!({"l7policy": elsewhere.l7policies + need})).await;
    drift_l7policy_counter(&project, 1);
    let ours: std::collections::BTreeSet<String> = [rep.listener_id.clone()].into();
    let budget = read_budget(&octavia, &ours).await.unwrap().expect("a quota is set");
    assert_eq!(budget.l7policies, Some(need));
    let within = translate_within(&inputs, &opts, Some(&budget));
    let rep = r.converge(&within).await.expect("a refused policy does not fail the sync");
    assert!(rep.quota_waiting.is_empty(), "{:?}", rep.quota_waiting);
    // One object refused; on a loaded stack a round can outlast its 10-s hold, and the same
    // policy is then tried and refused once more in the same convergence.
    let refused_objects: std::collections::BTreeSet<&str> = rep.failures.iter().map(|f| f.object.as_str()).collect();
    assert_eq!(refused_objects.len(), 1, "{:?}", rep.failures);
    let f = &rep.failures[0];
    assert_eq!(f.reason, "quota", "{f:?}");
    assert!(f.message.contains("403"), "{f:?}");
    let refused_policy = f.object.strip_prefix("L7 policy ").unwrap_or_else(|| panic!("a policy: {f:?}"));
    let refused_owner = within.policies.iter().find(|p| p.name == refused_policy).unwrap().owner.clone();
    assert_eq!(f.owners, std::slice::from_ref(&refused_owner), "{f:?}");
    let (policies, _) = observe(&r).await;
    let have: std::collections::BTreeSet<String> = policies.iter().map(|p| p.0.clone()).collect();
    let mut want = names(&within);
    want.remove(refused_policy);
    assert_eq!(have, want, "every other policy converged in the same sync");
    let other_new = within
        .policies
        .iter()
        .filter(|p| p.owner != refused_owner && p.owner.namespace != "beta")
        .map(|p| p.name.clone())
        .collect::<Vec<_>>();
    assert!(!other_new.is_empty() && other_new.iter().all(|n| have.contains(n)), "{other_new:?} {have:?}");
    println!(
        "refused: {} of {refused_owner} (403 on a drifted counter, {}); created in the same sync: {other_new:?}",
        f.object,
        in_use_counters(&project)
    );
    // On hold: the next sync sends nothing for it. On a loaded stack the sync above can outlast
    // the hold (10 s, then 20 s): the policy is then tried once more and refused again, and
    // nothing else is written either way.
    let again = r.converge(&within).await.unwrap();
    assert!(again.writes.is_empty(), "{:?}", again.writes);
    let named: Vec<(&str, &str)> =
        again.held.iter().chain(&again.failures).map(|h| (h.object.as_str(), h.reason)).collect();
    assert!(!named.is_empty() && named.iter().all(|n| *n == (f.object.as_str(), "quota")), "{named:?}");
    println!("next sync: {} held, {} refused again (its hold was over)", again.held.len(), again.failures.len());
    assert!(again.retry_after.is_some());

    // 3. Another team fills the project: the quota leaves the router nothing. Every policy on
    //    the router stays (no write at all); before, the translation refused the two newer
    //    Ingresses as a whole and the driver deleted their serving policies.
    let (serving, _) = observe(&r).await;
    set(json!({"l7policy": elsewhere.l7policies})).await;
    let budget = read_budget(&octavia, &ours).await.unwrap().expect("a quota is set");
    assert_eq!(budget.l7policies, Some(0));
    let rep = r.converge(&translate_within(&inputs, &opts, Some(&budget))).await.unwrap();
    assert!(rep.writes.is_empty(), "no write over the quota: {:?}", rep.writes);
    let (after, _) = observe(&r).await;
    assert_eq!(after, serving, "every serving policy stays");
    let waiting: Vec<String> = rep.quota_waiting.iter().map(|w| w.owner.to_string()).collect();
    println!("over quota: {} policies kept, waiting: {waiting:?}", after.len());
}

/// `openstack <args>` as the admin, through functional/openstack.sh; its stdout.
fn openstack_cli(args: &[&str]) -> String {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("functional/openstack.sh");
    let out = std::process::Command::new(script)
        .args(["run", "env", "OS_CLOUD=admin", "openstack"])
        .args(args)
        .output()
        .expect("run functional/openstack.sh");
    assert!(out.status.success(), "openstack {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A router whose VIP subnet is IPv6: the family read from the subnet (as `run` does) makes the
/// translation take the IPv6 endpoints, and the router is created with an IPv6 VIP, its HOST_NAME
/// routes and IPv6 members, and converges (a second convergence writes nothing).
#[tokio::test]
async fn h2_a_router_on_an_ipv6_vip_subnet_converges_with_ipv6_members() {
    if !enabled() {
        return;
    }
    let net = unique("h2-v6", "net");
    openstack_cli(&["network", "create", &net, "-f", "value", "-c", "id"]);
    let _net = DeleteNetwork(net.clone());
    let subnet = openstack_cli(&[
        "subnet",
        "create",
        "--ip-version",
        "6",
        "--ipv6-address-mode",
        "slaac",
        "--ipv6-ra-mode",
        "slaac",
        "--network",
        &net,
        "--subnet-range",
        "fd00:42:7::/64",
        &format!("{net}-subnet"),
        "-f",
        "value",
        "-c",
        "id",
    ]);
    let mut r = local_router("h2-v6", "vip").await;
    r.spec_mut().vip_subnet_id = Some(subnet.clone());
    r.spec_mut().external_svc_subnet = None; // no IPv4 floating IP for an IPv6-only VIP port
    let family = match r.neutron().get_subnet(&subnet).await.unwrap().ip_version {
        6 => kuryr_l7_router::translate::IpFamily::V6,
        _ => kuryr_l7_router::translate::IpFamily::V4,
    };
    assert_eq!(family, kuryr_l7_router::translate::IpFamily::V6);
    let text = r#"
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: kuryr}
spec: {controller: openstack.org/kuryr-l7-router}
---
apiVersion: v1
kind: Service
metadata: {namespace: shop, name: web}
spec: {ports: [{port: 80}]}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {namespace: shop, name: web-v4, labels: {kubernetes.io/service-name: web}}
addressType: IPv4
ports: [{port: 8080}]
endpoints: [{addresses: [10.0.0.11], conditions: {ready: true}}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {namespace: shop, name: web-v6, labels: {kubernetes.io/service-name: web}}
addressType: IPv6
ports: [{port: 8080}]
endpoints: [{addresses: ["fd00:42:7::11"], conditions: {ready: true}}]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {namespace: shop, name: web}
spec:
  ingressClassName: kuryr
  rules:
  - host: v6.example.com
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}
"#;
    let mut inputs = kuryr_l7_router::translate::Inputs::default();
    kuryr_l7_router::translate::manifest::load_str(text, std::path::Path::new("v6.yaml"), &mut inputs).unwrap();
    let opts = kuryr_l7_router::translate::TranslateOptions {
        ingress_class: "kuryr".into(),
        vip_family: family,
        ..Default::default()
    };
    let want = kuryr_l7_router::translate::translate(&inputs, &opts);
    let members: Vec<String> =
        want.pools.values().flat_map(|p| p.members.iter().map(|m| m.address.to_string())).collect();
    assert_eq!(members, vec!["fd00:42:7::11".to_string()], "the IPv6 endpoints only");
    with_router(r, move |r| async move {
        let report = r.converge(&want).await.unwrap_or_else(|e| panic!("converges: {e}"));
        let vip = report.vip_address.expect("VIP address");
        assert!(vip.is_ipv6(), "IPv6 VIP: {vip}");
        let actual = read_router(&r).await;
        let rules: Vec<_> = actual.policies.iter().flat_map(|p| p.rules.iter()).collect();
        assert!(rules.iter().any(|x| x.rule_type == "HOST_NAME" && x.value.contains(r"v6\.example\.com")), "{rules:?}");
        let addrs: Vec<_> = actual.pools.iter().flat_map(|p| p.members.iter().map(|m| m.address)).collect();
        assert!(!addrs.is_empty() && addrs.iter().all(|a| a.is_ipv6()), "IPv6 members: {addrs:?}");
        let again = r.converge(&want).await.expect("converges again");
        assert!(again.writes.is_empty(), "converged: {:?}", again.writes);
    })
    .await;
}

/// Deletes the test's network (and its subnet) on drop, even after a failed assert.
struct DeleteNetwork(String);

impl Drop for DeleteNetwork {
    fn drop(&mut self) {
        openstack_cli(&["network", "delete", &self.0]);
    }
}
