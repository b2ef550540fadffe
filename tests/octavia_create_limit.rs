//! A new router larger than Octavia's request body limit (oslo.middleware's
//! `max_request_body_size`, 114,688 bytes by default: about 170 policies in one fully-populated
//! create) is still created, and converges: the create carries what fits, the convergence writes
//! the rest one object at a time. Against a small stateful Octavia on loopback (no OpenStack) that
//! refuses bodies over its limit with a 413, as the real API does.

#[path = "support/http_request.rs"]
mod http_request;

use kuryr_l7_router::driver::Router;
use kuryr_l7_router::driver::ownership::Ownership;
use kuryr_l7_router::driver::spec::RouterSpec;
use kuryr_l7_router::model::{CompareType, DesiredRouter, KubeRef, Policy, Rule, RuleType};
use kuryr_l7_router::openstack::*;
use kuryr_l7_router::secret::Secret;
use kuryr_l7_router::testing::{member, pool};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

/// The objects of one load balancer, as Octavia lists them, and every write request received.
#[derive(Default)]
struct State {
    /// Request bodies over this are refused with a 413.
    body_limit: usize,
    lb: Option<Value>,
    listeners: Vec<Value>,
    pools: Vec<Value>,
    members: Vec<(String, Value)>,
    policies: Vec<Value>,
    rules: Vec<(String, Value)>,
    next_id: u64,
    /// (request line, body size) of every POST, PUT and DELETE.
    writes: Vec<(String, usize)>,
}

impl State {
    fn id(&mut self, kind: &str) -> String {
        self.next_id += 1;
        format!("{kind}-{}", self.next_id)
    }

    fn active(mut v: Value, id: &str) -> Value {
        v["id"] = json!(id);
        v["provisioning_status"] = json!("ACTIVE");
        v["operating_status"] = json!("ONLINE");
        if v.get("admin_state_up").is_none_or(Value::is_null) {
            v["admin_state_up"] = json!(true);
        }
        v
    }

    fn pool_id(&self, name: &Value) -> Option<String> {
        let p = self.pools.iter().find(|p| p["name"] == name["name"])?;
        p["id"].as_str().map(String::from)
    }

    fn add_pool(&mut self, mut body: Value) -> Value {
        let id = self.id("pool");
        let mut refs = vec![];
        for m in body["members"].take().as_array().cloned().unwrap_or_default() {
            refs.push(json!({"id": self.add_member(&id, m)["id"]}));
        }
        body["members"] = json!(refs);
        body["healthmonitor"].take();
        let pool = State::active(body, &id);
        self.pools.push(pool.clone());
        pool
    }

    /// The pools with their members' ids as they are now.
    fn pools_read(&self) -> Vec<Value> {
        let members_of = |id: &Value| -> Vec<Value> {
            self.members.iter().filter(|(p, _)| *p == *id).map(|(_, m)| json!({"id": m["id"]})).collect()
        };
        self.pools
            .iter()
            .map(|p| Value::Object(p.as_object().cloned().unwrap_or_default()))
            .map(|mut p| {
                p["members"] = json!(members_of(&p["id"]));
                p
            })
            .collect()
    }

    fn add_member(&mut self, pool: &str, m: Value) -> Value {
        let member = State::active(m, &self.id("member"));
        self.members.push((pool.into(), member.clone()));
        member
    }

    fn add_policy(&mut self, mut body: Value, listener: &str) -> Value {
        let id = self.id("policy");
        if let Some(pool) = body.get("redirect_pool").cloned() {
            body["redirect_pool_id"] = json!(self.pool_id(&pool));
        }
        let mut refs = vec![];
        for r in body["rules"].take().as_array().cloned().unwrap_or_default() {
            let rule = State::active(r, &self.id("rule"));
            refs.push(json!({"id": rule["id"]}));
            self.rules.push((id.clone(), rule));
        }
        body["rules"] = json!(refs);
        body["listener_id"] = json!(listener);
        let policy = State::active(body, &id);
        self.policies.push(policy.clone());
        policy
    }

    /// The fully-populated create: the load balancer, its listener, pools, members, policies.
    fn create(&mut self, mut body: Value) -> Value {
        let mut pools = vec![];
        for p in body["pools"].take().as_array().cloned().unwrap_or_default() {
            pools.push(json!({"id": self.add_pool(p)["id"]}));
        }
        let lb_id = self.id("lb");
        let mut listeners = vec![];
        for mut l in body["listeners"].take().as_array().cloned().unwrap_or_default() {
            let id = self.id("listener");
            if let Some(default) = l.get("default_pool").cloned() {
                l["default_pool_id"] = json!(self.pool_id(&default));
            }
            let mut policies = vec![];
            for p in l["l7policies"].take().as_array().cloned().unwrap_or_default() {
                policies.push(json!({"id": self.add_policy(p, &id)["id"]}));
            }
            l["l7policies"] = json!(policies);
            l["loadbalancers"] = json!([{"id": lb_id}]);
            self.listeners.push(State::active(l, &id));
            listeners.push(json!({"id": id}));
        }
        (body["pools"], body["listeners"]) = (json!(pools), json!(listeners));
        body["vip_address"] = json!("10.0.0.9");
        self.lb = Some(State::active(body, &lb_id));
        self.lb.clone().expect("created")
    }

    fn answer(&mut self, method: &str, path: &str, body: &[u8]) -> (u16, Value) {
        let v: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
        let path = path.split('?').next().unwrap_or_default();
        let parts: Vec<&str> = path.trim_start_matches("/v2/lbaas/").split('/').collect();
        let pick = |items: &Vec<Value>, id: &str| items.iter().find(|i| i["id"] == id).cloned();
        match (method, parts.as_slice()) {
            ("POST", _) if body.len() > self.body_limit => (413, json!({"faultstring": "Request is too large."})),
            ("GET", ["loadbalancers"]) => (200, json!({"loadbalancers": self.lb.iter().collect::<Vec<_>>()})),
            ("GET", ["loadbalancers", _]) => (200, json!({"loadbalancer": self.lb})),
            ("POST", ["loadbalancers"]) => (201, json!({"loadbalancer": self.create(v["loadbalancer"].clone())})),
            ("GET", ["listeners"]) => (200, json!({"listeners": self.listeners})),
            ("GET", ["listeners", id]) => (200, json!({"listener": pick(&self.listeners, id)})),
            ("GET", ["pools"]) => (200, json!({"pools": self.pools_read()})),
            ("GET", ["pools", id]) => (200, json!({"pool": pick(&self.pools_read(), id)})),
            ("POST", ["pools"]) => (201, json!({"pool": self.add_pool(v["pool"].clone())})),
            ("GET", ["pools", id, "members"]) => {
                let of: Vec<_> = self.members.iter().filter(|(p, _)| p == id).map(|(_, m)| m.clone()).collect();
                (200, json!({"members": of}))
            }
            ("POST", ["pools", id, "members"]) => (201, json!({"member": self.add_member(id, v["member"].clone())})),
            ("PUT", ["pools", id, "members"]) => {
                // The batch member update: the pool's members become exactly the body's.
                self.members.retain(|(p, _)| p != id);
                for m in v["members"].as_array().cloned().unwrap_or_default() {
                    self.add_member(id, m);
                }
                (202, Value::Null)
            }
            ("GET", ["l7policies"]) => (200, json!({"l7policies": self.policies})),
            ("GET", ["l7policies", id]) => (200, json!({"l7policy": pick(&self.policies, id)})),
            ("POST", ["l7policies"]) => {
                let listener = v["l7policy"]["listener_id"].as_str().unwrap_or_default().to_string();
                (201, json!({"l7policy": self.add_policy(v["l7policy"].clone(), &listener)}))
            }
            ("GET", ["l7policies", id, "rules"]) => {
                let of: Vec<_> = self.rules.iter().filter(|(p, _)| p == id).map(|(_, r)| r.clone()).collect();
                (200, json!({"rules": of}))
            }
            ("POST", ["l7policies", id, "rules"]) => {
                let rule = State::active(v["rule"].clone(), &self.id("rule"));
                let Some(policy) = self.policies.iter_mut().find(|p| p["id"] == *id) else {
                    return (404, json!({"faultstring": "no such policy"}));
                };
                policy["rules"].as_array_mut().expect("refs").push(json!({"id": rule["id"]}));
                self.rules.push((id.to_string(), rule.clone()));
                (201, json!({ "rule": rule }))
            }
            ("GET", ["healthmonitors"]) => (200, json!({"healthmonitors": []})),
            ("GET", ["/v2.0", ..]) | ("GET", ["v2.0", ..]) => (200, json!({"floatingips": []})),
            _ => (500, json!({"faultstring": format!("the fake Octavia has no {method} {path}")})),
        }
    }
}

async fn start(body_limit: usize) -> (u16, Arc<Mutex<State>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let state = Arc::new(Mutex::new(State { body_limit, ..State::default() }));
    let shared = state.clone();
    tokio::spawn(async move {
        loop {
            let Ok((conn, _)) = listener.accept().await else { return };
            tokio::spawn(serve(conn, port, shared.clone()));
        }
    });
    (port, state)
}

/// One HTTP/1.1 exchange per connection: Keystone's token, else the fake Octavia.
async fn serve(mut conn: TcpStream, port: u16, state: Arc<Mutex<State>>) {
    let Some((head, body)) = http_request::read_request(&mut conn).await else {
        return;
    };
    let line = head.lines().next().unwrap_or_default().to_string();
    let mut words = line.split(' ');
    let (method, path) = (words.next().unwrap_or_default(), words.next().unwrap_or_default());
    let (status, answer, extra) = if line.starts_with("POST /v3/auth/tokens") {
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
        if method != "GET" {
            s.writes.push((line.clone(), body.len()));
        }
        let (status, answer) = s.answer(method, path, &body);
        (status, answer, "")
    };
    let body = answer.to_string();
    let resp = format!(
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = conn.write_all(resp.as_bytes()).await;
    let _ = conn.shutdown().await;
}

fn router(port: u16, max_create_body_bytes: usize) -> Router {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let url = format!("http://127.0.0.1:{port}/v3");
    let session = Session::new(AuthOptions::password(&url, "u", Secret::new("p"), "p", "Default")).unwrap();
    let opts =
        OctaviaOptions { busy_retry: Duration::from_secs(5), min_delay: Duration::ZERO, max_delay: Duration::ZERO };
    let spec = RouterSpec {
        name: "big".into(),
        uuid: None,
        vip_subnet_id: Some("s".into()),
        availability_zone: None,
        provider: None,
        listener_port: 80,
        fully_populated_create: true,
        max_create_body_bytes,
        floating_ip: None,
        external_svc_subnet: None,
        ownership: Ownership::new("c1"),
        member_subnet: None,
        health_monitor: None,
        create_timeout: Duration::from_secs(5),
        write_timeout: Duration::from_secs(5),
        insert_forwarded_headers: true,
        secret_read_users: vec![],
    };
    Router::new(Octavia::new(session.clone(), opts), Neutron::new(session), spec)
}

/// `n` Ingresses, each one host on its own Service (one policy, one rule, one pool, one member).
fn routes(n: usize) -> DesiredRouter {
    let mut d = DesiredRouter::default();
    for i in 0..n {
        let name = format!("shop_web{i}");
        d.policies.push(Policy {
            name: format!("ingress:shop/web{i}:h{i}.example.com:Prefix:/"),
            position: i as u32 + 1,
            pool: name.clone(),
            rules: vec![Rule {
                rule_type: RuleType::HostName,
                compare_type: CompareType::EqualTo,
                value: format!("h{i}.example.com"),
                invert: false,
                key: None,
            }],
            owner: KubeRef::new("Ingress", "shop", &format!("web{i}")),
            description: format!("h{i}.example.com Prefix /"),
            redirect: None,
        });
        d.pools.insert(name.clone(), pool(&name, vec![member(&format!("10.1.0.{}", i % 250 + 1), 1)]));
    }
    d
}

fn posts(state: &Mutex<State>, prefix: &str) -> Vec<usize> {
    let s = state.lock().unwrap();
    s.writes.iter().filter(|(l, _)| l.starts_with(prefix)).map(|(_, size)| *size).collect()
}

/// Everything desired is on the fake Octavia, and a second convergence writes nothing.
async fn assert_converged(r: &Router, state: &Mutex<State>, want: &DesiredRouter) {
    {
        let s = state.lock().unwrap();
        let mut names: Vec<_> = s.policies.iter().map(|p| p["name"].as_str().unwrap().to_string()).collect();
        names.sort();
        let mut wanted: Vec<_> = want.policies.iter().map(|p| p.name.clone()).collect();
        wanted.sort();
        assert_eq!(names, wanted, "every policy on the router");
        assert_eq!(s.pools.len(), want.pools.len(), "every pool on the router");
        assert_eq!(s.members.len(), want.pools.len(), "every member on the router");
    }
    let again = r.converge(want).await.expect("second convergence");
    assert!(
        again.writes.is_empty(),
        "converged: {:?}",
        again.writes.iter().map(|w| &w.description).collect::<Vec<_>>()
    );
}

/// The cloud's limit is lower than configured: Octavia answers the create with a 413. The
/// driver sends a smaller create (it used to take the 413 as a refused write, and the router
/// was never created), then writes the policies left out one at a time.
#[tokio::test]
async fn a_create_refused_as_too_large_is_sent_smaller_and_the_rest_written_after() {
    let want = routes(40);
    let (port, state) = start(12_000).await;
    let r = router(port, 114_688);
    let report = r.converge(&want).await.expect("the router is created");
    assert!(!report.lb_id.is_empty());
    let creates = posts(&state, "POST /v2/lbaas/loadbalancers ");
    assert!(creates.len() >= 2 && creates[0] > 12_000, "a 413, then a smaller create: {creates:?}");
    assert!(creates.last().is_some_and(|b| *b <= 12_000), "{creates:?}");
    assert!(!posts(&state, "POST /v2/lbaas/l7policies ").is_empty(), "the rest written one at a time");
    assert!(report.conflicts.iter().any(|c| c.contains("413") && c.contains("max_create_body_bytes")), "{report:?}");
    assert!(!report.created_router, "the router was not created whole");
    assert_converged(&r, &state, &want).await;
}

/// Over the configured limit: one create within it (no 413 sent for), then the rest.
#[tokio::test]
async fn a_create_over_the_configured_limit_carries_what_fits() {
    let want = routes(40);
    let (port, state) = start(12_000).await;
    let r = router(port, 10_000);
    r.converge(&want).await.expect("the router is created");
    let creates = posts(&state, "POST /v2/lbaas/loadbalancers ");
    assert_eq!(creates.len(), 1, "{creates:?}");
    assert!(creates[0] <= 10_000 && creates[0] > 5_000, "as much as fits: {creates:?}");
    assert_converged(&r, &state, &want).await;
}

/// Within the limit, the create holds everything: no other write.
#[tokio::test]
async fn a_create_within_the_limit_is_one_write() {
    let want = routes(5);
    let (port, state) = start(114_688).await;
    let report = router(port, 114_688).converge(&want).await.expect("the router is created");
    assert!(report.created_router);
    assert_eq!(state.lock().unwrap().writes.len(), 1, "{:?}", state.lock().unwrap().writes);
    assert_eq!(state.lock().unwrap().policies.len(), 5);
}
