//! A restart with the stamps of an earlier read (see `driver::stamps`), against a fake Octavia
//! over real HTTP on loopback that counts the GETs: a new process that loads the stamps reads an
//! unchanged router with its list GETs only, and a rule or member changed behind our back since
//! the stamp (its parent's `updated_at` moved) is read and its repair planned at once.

#[path = "support/http_request.rs"]
mod http_request;

use kuryr_l7_router::driver::diff::plan_writes;
use kuryr_l7_router::driver::ownership::Ownership;
use kuryr_l7_router::driver::plan::{DiffOptions, Write};
use kuryr_l7_router::driver::{Router, RouterSpec};
use kuryr_l7_router::model::{CompareType, DesiredRouter, KubeRef, Policy, Rule, RuleType};
use kuryr_l7_router::openstack::octavia::{IdRef, Listener};
use kuryr_l7_router::openstack::*;
use kuryr_l7_router::secret::Secret;
use kuryr_l7_router::testing::{member, pool};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

const T1: &str = "2026-11-26T06:00:01";
const T2: &str = "2026-11-26T06:00:09";

/// The router's children as the fake Octavia holds them, and the GETs it answered.
#[derive(Default)]
struct State {
    policy: Value,
    rules: Value,
    pool: Value,
    members: Value,
    gets: Vec<String>,
}

struct Fake {
    port: u16,
    state: Arc<Mutex<State>>,
}

impl Fake {
    async fn start(state: State) -> Fake {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let state = Arc::new(Mutex::new(state));
        let shared = state.clone();
        tokio::spawn(async move {
            loop {
                let Ok((conn, _)) = listener.accept().await else { return };
                tokio::spawn(serve(conn, port, shared.clone()));
            }
        });
        Fake { port, state }
    }

    /// A new process: its own client and driver, nothing read yet.
    fn router(&self) -> Router {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let url = format!("http://127.0.0.1:{}/v3", self.port);
        let session = Session::new(AuthOptions::password(&url, "u", Secret::new("p"), "p", "Default")).unwrap();
        let opts = OctaviaOptions {
            busy_retry: Duration::from_secs(5),
            min_delay: Duration::from_millis(10),
            max_delay: Duration::from_millis(50),
        };
        Router::new(Octavia::new(session.clone(), opts), Neutron::new(session), spec())
    }

    fn take_gets(&self) -> Vec<String> {
        std::mem::take(&mut self.state.lock().unwrap().gets)
    }

    fn edit(&self, f: impl FnOnce(&mut State)) {
        f(&mut self.state.lock().unwrap())
    }
}

async fn serve(mut conn: TcpStream, port: u16, state: Arc<Mutex<State>>) {
    let Some((head, _)) = http_request::read_request(&mut conn).await else { return };
    let line = head.lines().next().unwrap_or_default().to_string();
    let path = line.split(' ').nth(1).unwrap_or_default().split('?').next().unwrap_or_default().to_string();
    let (status, body, extra) = if line.starts_with("POST /v3/auth/tokens") {
        let endpoint =
            json!([{"interface": "public", "region": "RegionOne", "url": format!("http://127.0.0.1:{port}")}]);
        let token = json!({"token": {
            "expires_at": "2099-01-01T00:00:00.000000Z", "issued_at": "2026-01-01T00:00:00.000000Z",
            "user": {"id": "u"}, "project": {"id": "p"}, "roles": [{"name": "member"}],
            "catalog": [{"type": "load-balancer", "endpoints": endpoint}, {"type": "network", "endpoints": endpoint}]
        }});
        (201, token, "X-Subject-Token: t\r\n")
    } else {
        let mut s = state.lock().unwrap();
        s.gets.push(path.clone());
        let body = match path.as_str() {
            "/v2/lbaas/l7policies" => json!({"l7policies": [s.policy]}),
            "/v2/lbaas/l7policies/pol-1/rules" => json!({"rules": s.rules}),
            "/v2/lbaas/pools" => json!({"pools": [s.pool]}),
            "/v2/lbaas/pools/pool-1/members" => json!({"members": s.members}),
            other => panic!("unexpected request {other}"),
        };
        (200, body, "")
    };
    let body = body.to_string();
    let resp = format!(
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = conn.write_all(resp.as_bytes()).await;
    let _ = conn.shutdown().await;
}

fn own() -> Ownership {
    Ownership::new("c1")
}

fn spec() -> RouterSpec {
    RouterSpec {
        name: "restart-stamps".into(),
        uuid: None,
        vip_subnet_id: Some("s".into()),
        availability_zone: None,
        provider: None,
        listener_port: 80,
        fully_populated_create: true,
        max_create_body_bytes: 114_688,
        floating_ip: None,
        external_svc_subnet: None,
        ownership: own(),
        member_subnet: None,
        health_monitor: None,
        create_timeout: Duration::from_secs(5),
        write_timeout: Duration::from_secs(5),
        insert_forwarded_headers: true,
        secret_read_users: vec![],
    }
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
        policy: json!({"id": "pol-1", "name": "shop/web:0", "position": 1, "action": "REDIRECT_TO_POOL",
            "redirect_pool_id": "pool-1", "admin_state_up": true, "provisioning_status": "ACTIVE",
            "updated_at": T1, "rules": [{"id": "rule-1"}], "description": "shop web",
            "tags": own().tags_for(&ingress())}),
        rules: json!([rule_json("rule-1", "/api")]),
        pool: json!({"id": "pool-1", "name": "shop_web", "lb_algorithm": "ROUND_ROBIN", "provisioning_status": "ACTIVE",
            "updated_at": T1, "members": [{"id": "m-1"}, {"id": "m-2"}],
            "tags": own().tags_for(&KubeRef::new("Service", "shop", "web"))}),
        members: json!([member_json("m-1", "10.0.0.1", 1), member_json("m-2", "10.0.0.2", 1)]),
        gets: Vec::new(),
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
        s.rules = json!([rule_json("rule-1", "/admin")]);
        s.policy["updated_at"] = json!(T2);
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
        s.members = json!([member_json("m-1", "10.0.0.1", 0), member_json("m-2", "10.0.0.2", 1)]);
        s.pool["updated_at"] = json!(T2);
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
    fake.edit(|s| s.rules = json!([rule_json("rule-1", "/admin")]));
    let second = fake.router();
    assert!(second.load_stamps(&stamps));
    second.read_for(&listener(), &desired(), false).await.unwrap();
    assert_eq!(fake.take_gets(), LISTS, "the first convergence trusts the stamps");
    let actual = second.read_for(&listener(), &desired(), true).await.unwrap();
    assert_eq!(fake.take_gets(), FULL_READ, "a later one reads the trusted parents in turn");
    let writes = plan_writes(&desired(), &actual, &opts()).writes;
    assert!(matches!(writes.as_slice(), [Write::UpdateRule { rule, .. }] if rule.value == "/api"), "{writes:?}");
}
