//! A restart with the stamps of an earlier read (see `driver::stamps`), against the fake Octavia
//! over real HTTP on loopback (tests/support/fake_octavia.rs) that logs the GETs: a new process
//! that loads the stamps reads an unchanged router with its list GETs only, a rule or member
//! changed behind our back since the stamp (its parent's `updated_at` moved) is read and its
//! repair planned at once, and later convergences verify `verify_per_resync` trusted parents.

use crate::support::fake_octavia;

use fake_octavia::State;
use kuryr_l7_router::driver::Router;
use kuryr_l7_router::driver::diff::plan_writes;
use kuryr_l7_router::driver::ownership::Ownership;
use kuryr_l7_router::driver::plan::{DiffOptions, Write};
use kuryr_l7_router::model::{CompareType, DesiredRouter, KubeRef, Policy, Rule, RuleType};
use kuryr_l7_router::openstack::octavia::{IdRef, Listener};
use kuryr_l7_router::testing::{member, pool};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

const T1: &str = "2026-11-26T06:00:01";
const T2: &str = "2026-11-26T06:00:09";

/// The fake Octavia (tests/support/fake_octavia.rs) holding a router's children.
struct Fake {
    port: u16,
    state: Arc<Mutex<State>>,
}

impl Fake {
    async fn start(state: State) -> Fake {
        let (port, shared) = fake_octavia::start(114_688).await;
        *shared.lock().unwrap() = State { body_limit: 114_688, ..state };
        Fake { port, state: shared }
    }

    /// A new process: its own client and driver, nothing read yet.
    fn router(&self) -> Router {
        fake_octavia::router_named(self.port, "restart-stamps", 114_688)
    }

    fn take_gets(&self) -> Vec<String> {
        self.state.lock().unwrap().take_gets()
    }

    fn edit(&self, f: impl FnOnce(&mut State)) {
        f(&mut self.state.lock().unwrap())
    }
}

fn own() -> Ownership {
    Ownership::new("c1")
}

fn ingress() -> KubeRef {
    KubeRef::new("Ingress", "shop", "web")
}

fn desired() -> DesiredRouter {
    let mut d = DesiredRouter::default();
    d.pools.insert("shop_web".into(), pool("shop_web", vec![member("10.0.0.1", 1), member("10.0.0.2", 1)]));
    d.policies.push(Policy {
        name: "shop/web:0".into(),
        position: 1,
        pool: "shop_web".into(),
        rules: vec![Rule {
            rule_type: RuleType::Path,
            compare_type: CompareType::StartsWith,
            value: "/api".into(),
            invert: false,
            key: None,
        }],
        owner: ingress(),
        description: "shop web".into(),
        redirect: None,
    });
    d
}

fn rule_json(id: &str, value: &str) -> Value {
    json!({"id": id, "type": "PATH", "compare_type": "STARTS_WITH", "value": value, "invert": false,
           "provisioning_status": "ACTIVE", "tags": own().tags_for(&ingress())})
}

fn member_json(id: &str, ip: &str, weight: u16) -> Value {
    json!({"id": id, "name": format!("{ip}:8080"), "address": ip, "protocol_port": 8080, "weight": weight,
           "backup": false, "admin_state_up": true, "provisioning_status": "ACTIVE",
           "tags": own().tags_for(&KubeRef::new("Service", "shop", "web"))})
}

/// The router as the desired state has it, settled at `T1`.
fn converged() -> State {
    State {
        policies: vec![json!({"id": "pol-1", "name": "shop/web:0", "position": 1, "action": "REDIRECT_TO_POOL",
            "redirect_pool_id": "pool-1", "admin_state_up": true, "provisioning_status": "ACTIVE",
            "listener_id": "lis-1", "updated_at": T1, "rules": [{"id": "rule-1"}], "description": "shop web",
            "tags": own().tags_for(&ingress())})],
        rules: vec![("pol-1".into(), rule_json("rule-1", "/api"))],
        pools: vec![json!({"id": "pool-1", "name": "shop_web", "lb_algorithm": "ROUND_ROBIN",
            "provisioning_status": "ACTIVE", "updated_at": T1,
            "tags": own().tags_for(&KubeRef::new("Service", "shop", "web"))})],
        members: vec![
            ("pool-1".into(), member_json("m-1", "10.0.0.1", 1)),
            ("pool-1".into(), member_json("m-2", "10.0.0.2", 1)),
        ],
        ..State::default()
    }
}

fn listener() -> Listener {
    Listener {
        id: "lis-1".into(),
        protocol: "HTTP".into(),
        protocol_port: 80,
        loadbalancers: vec![IdRef { id: "lb-1".into() }],
        provisioning_status: "ACTIVE".into(),
        ..Listener::default()
    }
}

fn opts() -> DiffOptions {
    DiffOptions { ownership: own(), health_monitor: None }
}

const LISTS: [&str; 2] = ["/v2/lbaas/l7policies", "/v2/lbaas/pools"];
const FULL_READ: [&str; 4] =
    ["/v2/lbaas/l7policies", "/v2/lbaas/l7policies/pol-1/rules", "/v2/lbaas/pools", "/v2/lbaas/pools/pool-1/members"];

/// A first process reads the whole router and hands its stamps on (as the controller does
/// through the ConfigMap).
async fn stamps_of_a_full_read(fake: &Fake) -> String {
    let first = fake.router();
    let actual = first.read_for(&listener(), &desired(), false).await.unwrap();
    assert_eq!(fake.take_gets(), FULL_READ, "no stamps: every parent is read");
    assert!(plan_writes(&desired(), &actual, &opts()).writes.is_empty(), "the fake holds the desired router");
    let text = first.take_changed_stamps().expect("a full read stamps every parent");
    assert!(first.take_changed_stamps().is_none(), "unchanged since taken");
    text
}

#[tokio::test]
async fn a_restarted_process_with_stamps_reads_an_unchanged_router_with_its_list_gets_only() {
    let fake = Fake::start(converged()).await;
    let stamps = stamps_of_a_full_read(&fake).await;
    let second = fake.router();
    assert!(second.load_stamps(&stamps));
    let actual = second.read_for(&listener(), &desired(), false).await.unwrap();
    assert_eq!(fake.take_gets(), LISTS, "trusted parents: no child GET");
    assert!(plan_writes(&desired(), &actual, &opts()).writes.is_empty(), "nothing to write");
    // Without the desired state (`show`), nothing is trusted.
    second.read_actual(&listener()).await.unwrap();
    assert_eq!(fake.take_gets(), FULL_READ);
}

#[tokio::test]
async fn a_rule_edited_behind_our_back_after_the_stamp_is_read_and_repaired() {
    let fake = Fake::start(converged()).await;
    let stamps = stamps_of_a_full_read(&fake).await;
    // Edited through Octavia's API: the policy's updated_at moves.
    fake.edit(|s| {
        s.rules = vec![("pol-1".into(), rule_json("rule-1", "/admin"))];
        s.policies[0]["updated_at"] = json!(T2);
    });
    let second = fake.router();
    assert!(second.load_stamps(&stamps));
    let actual = second.read_for(&listener(), &desired(), false).await.unwrap();
    assert_eq!(fake.take_gets(), ["/v2/lbaas/l7policies", "/v2/lbaas/l7policies/pol-1/rules", "/v2/lbaas/pools"]);
    let writes = plan_writes(&desired(), &actual, &opts()).writes;
    assert!(matches!(writes.as_slice(), [Write::UpdateRule { rule, .. }] if rule.value == "/api"), "{writes:?}");
}

#[tokio::test]
async fn a_member_changed_behind_our_back_after_the_stamp_is_read_and_repaired() {
    let fake = Fake::start(converged()).await;
    let stamps = stamps_of_a_full_read(&fake).await;
    fake.edit(|s| {
        s.members = vec![
            ("pool-1".into(), member_json("m-1", "10.0.0.1", 0)),
            ("pool-1".into(), member_json("m-2", "10.0.0.2", 1)),
        ];
        s.pools[0]["updated_at"] = json!(T2);
    });
    let second = fake.router();
    assert!(second.load_stamps(&stamps));
    let actual = second.read_for(&listener(), &desired(), false).await.unwrap();
    assert_eq!(fake.take_gets(), ["/v2/lbaas/l7policies", "/v2/lbaas/pools", "/v2/lbaas/pools/pool-1/members"]);
    let writes = plan_writes(&desired(), &actual, &opts()).writes;
    assert!(matches!(writes.as_slice(), [Write::SetMembers { .. }]), "{writes:?}");
}

#[tokio::test]
async fn a_desired_change_since_the_stamp_or_damaged_stamps_mean_a_read() {
    let fake = Fake::start(converged()).await;
    let stamps = stamps_of_a_full_read(&fake).await;
    // The desired state moved on while no process ran: the stamp no longer stands for it.
    let mut moved = desired();
    moved.policies[0].rules[0].value = "/v2".into();
    let second = fake.router();
    assert!(second.load_stamps(&stamps));
    let actual = second.read_for(&listener(), &moved, false).await.unwrap();
    assert_eq!(fake.take_gets(), ["/v2/lbaas/l7policies", "/v2/lbaas/l7policies/pol-1/rules", "/v2/lbaas/pools"]);
    assert_eq!(actual.policies[0].rules[0].value, "/api", "read, not taken from the desired state");
    let third = fake.router();
    assert!(!third.load_stamps(&stamps.replace(" m ", " x ").replacen('\n', "\nr lis-1 pol-1 garbage\n", 1)));
    third.read_for(&listener(), &desired(), false).await.unwrap();
    assert_eq!(fake.take_gets(), FULL_READ, "damaged stamps are no stamps");
}

#[tokio::test]
async fn trusted_parents_are_read_again_by_the_verification_of_later_convergences() {
    let fake = Fake::start(converged()).await;
    let stamps = stamps_of_a_full_read(&fake).await;
    // An edit no stamp can see (behind Octavia's API: updated_at unchanged).
    fake.edit(|s| s.rules = vec![("pol-1".into(), rule_json("rule-1", "/admin"))]);
    let second = fake.router();
    assert!(second.load_stamps(&stamps));
    second.read_for(&listener(), &desired(), false).await.unwrap();
    assert_eq!(fake.take_gets(), LISTS, "the first convergence trusts the stamps");
    let actual = second.read_for(&listener(), &desired(), true).await.unwrap();
    assert_eq!(fake.take_gets(), FULL_READ, "a later one reads the trusted parents in turn");
    let writes = plan_writes(&desired(), &actual, &opts()).writes;
    assert!(matches!(writes.as_slice(), [Write::UpdateRule { rule, .. }] if rule.value == "/api"), "{writes:?}");
}

/// `n` policies (one host each) on the one pool `shop_web`.
fn desired_hosts(n: usize) -> DesiredRouter {
    let mut d = desired();
    let first = d.policies[0].clone();
    d.policies = (0..n)
        .map(|i| Policy {
            name: format!("shop/web:{i}"),
            position: i as u32 + 1,
            rules: vec![Rule { value: format!("/p{i}"), ..first.rules[0].clone() }],
            ..first.clone()
        })
        .collect();
    d
}

/// `[octavia_defaults] verify_per_resync`: the verifying read of a later convergence reads that
/// many trusted policies (one rules GET each), not the built-in 10.
#[tokio::test]
async fn the_verification_reads_as_many_trusted_parents_as_configured() {
    let want = desired_hosts(3);
    let fake = Fake::start(State::default()).await;
    fake.router().converge(&want).await.expect("created on the fake");
    let listener_id = fake.state.lock().unwrap().listeners[0]["id"].as_str().unwrap().to_string();
    let lis = Listener { id: listener_id, ..listener() };
    let reader = fake.router();
    reader.read_for(&lis, &want, false).await.unwrap();
    let stamps = reader.take_changed_stamps().expect("a full read stamps every parent");
    let rule_gets = |gets: Vec<String>| gets.iter().filter(|g| g.ends_with("/rules")).count();
    for (per_resync, want_read) in [(None, 3), (Some(1), 1), (Some(2), 2)] {
        let next = match per_resync {
            Some(n) => fake.router().with_verify_per_resync(n),
            None => fake.router(),
        };
        assert!(next.load_stamps(&stamps));
        fake.take_gets();
        next.read_for(&lis, &want, false).await.unwrap();
        assert_eq!(rule_gets(fake.take_gets()), 0, "the first convergence trusts the stamps");
        next.read_for(&lis, &want, true).await.unwrap();
        assert_eq!(rule_gets(fake.take_gets()), want_read, "verify_per_resync = {per_resync:?}");
    }
}
