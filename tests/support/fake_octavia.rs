//! A small stateful Octavia on loopback (no OpenStack) for the driver's tests: one load
//! balancer's listeners, pools, members, L7 policies and rules as Octavia lists them, the
//! fully-populated create (refused with a 413 over `body_limit`, as oslo.middleware's
//! `max_request_body_size` does), object writes, and every request recorded (the writes with
//! their body size, the GETs by path, to count what a read costs). A policy's or pool's
//! `updated_at` moves with every write of it or of its children, as Octavia's does (the stamps of
//! `driver::stamps` rely on it). Keystone's token comes from the same port.
#![allow(dead_code)] // each test crate uses a different part

use super::http_request;
use kuryr_l7_router::driver::Router;
use kuryr_l7_router::driver::spec::RouterSpec;
use kuryr_l7_router::openstack::*;
use kuryr_l7_router::secret::Secret;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpStream;

/// The objects of one load balancer, as Octavia lists them, and every write request received.
#[derive(Default)]
pub struct State {
    /// Request bodies over this are refused with a 413.
    pub body_limit: usize,
    pub lb: Option<Value>,
    pub listeners: Vec<Value>,
    pub pools: Vec<Value>,
    pub members: Vec<(String, Value)>,
    pub policies: Vec<Value>,
    pub rules: Vec<(String, Value)>,
    pub next_id: u64,
    /// (request line, body size) of every POST, PUT and DELETE.
    pub writes: Vec<(String, usize)>,
    /// The path (without its query) of every GET.
    pub gets: Vec<String>,
    /// Seconds since the fake's epoch: each write moves it on by one.
    pub clock: u64,
    /// While this says true, a load balancer create is answered only once it says false: a
    /// create that hangs (an amphora that never boots). Each create held is counted.
    pub hold_creates: Option<tokio::sync::watch::Receiver<bool>>,
    pub creates_held: usize,
    /// The fake Barbican's secrets (`secret_ref`, `name`, `created`, and the decoded `payload`).
    pub secrets: Vec<Value>,
    /// A secret create whose name contains this is refused with a 403 (a quota).
    pub refuse_secrets_named: Option<String>,
}

impl State {
    /// The HTTPS listeners as (name, port, the name of its client CA secret,
    /// client_authentication), sorted.
    pub fn https_listeners(&self) -> Vec<(String, u64, Option<String>, String)> {
        let secret_name = |r: &Value| {
            let r = r.as_str()?;
            self.secrets.iter().find(|x| x["secret_ref"] == r).and_then(|x| x["name"].as_str().map(String::from))
        };
        let mut out: Vec<_> = self
            .listeners
            .iter()
            .filter(|l| l["protocol"] == "TERMINATED_HTTPS")
            .map(|l| {
                let auth = l["client_authentication"].as_str().unwrap_or("NONE").to_string();
                let ca = secret_name(&l["client_ca_tls_container_ref"]);
                (l["name"].as_str().unwrap_or_default().to_string(), l["protocol_port"].as_u64().unwrap_or(0), ca, auth)
            })
            .collect();
        out.sort();
        out
    }

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

    /// A new `updated_at`, later than every earlier one.
    fn tick(&mut self) -> Value {
        self.clock += 1;
        json!(format!("2026-11-26T{:02}:{:02}:{:02}", self.clock / 3600 % 24, self.clock / 60 % 60, self.clock % 60))
    }

    /// `updated_at` of the policy or pool `id` moves on (a child of it was written).
    fn touch(&mut self, id: &str) {
        let now = self.tick();
        for p in self.pools.iter_mut().chain(self.policies.iter_mut()).filter(|p| p["id"] == id) {
            p["updated_at"] = now.clone();
        }
    }

    /// The GETs since the log was last taken.
    pub fn take_gets(&mut self) -> Vec<String> {
        std::mem::take(&mut self.gets)
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
        body["updated_at"] = self.tick();
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
        self.touch(pool);
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
        body["updated_at"] = self.tick();
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

    /// The fake Barbican: secrets listed (every one: the client keeps its prefix), created,
    /// given metadata (kept) and ACL, described, deleted.
    fn barbican(&mut self, method: &str, path: &str, query: &str, v: &Value, port: u16) -> (u16, Value) {
        let parts: Vec<&str> = path.trim_start_matches("/v1/secrets").split('/').filter(|p| !p.is_empty()).collect();
        match (method, parts.as_slice()) {
            ("GET", []) => {
                let offset = query.split('&').find_map(|kv| kv.strip_prefix("offset=")).and_then(|o| o.parse().ok());
                let page: Vec<Value> = self
                    .secrets
                    .iter()
                    .skip(offset.unwrap_or(0))
                    .map(|s| json!({"secret_ref": s["secret_ref"], "name": s["name"], "created": s["created"]}))
                    .collect();
                (200, json!({"secrets": page, "total": self.secrets.len()}))
            }
            ("POST", []) => {
                let name = v["name"].as_str().unwrap_or_default().to_string();
                if self.refuse_secrets_named.as_ref().is_some_and(|r| name.contains(r.as_str())) {
                    return (403, json!({"code": 403, "title": "Forbidden", "description": "Quota exceeded"}));
                }
                self.next_id += 1;
                let id = format!("{:08x}-0000-4000-8000-{:012x}", self.next_id, self.next_id);
                use base64::Engine;
                let payload = base64::engine::general_purpose::STANDARD
                    .decode(v["payload"].as_str().unwrap_or_default())
                    .map(|b| String::from_utf8_lossy(&b).into_owned())
                    .unwrap_or_default();
                let secret_ref = format!("http://127.0.0.1:{port}/v1/secrets/{id}");
                let created = self.tick();
                self.secrets
                    .push(json!({"secret_ref": secret_ref, "name": name, "created": created, "payload": payload}));
                (201, json!({ "secret_ref": secret_ref }))
            }
            ("PUT", [id, "metadata"]) => {
                let secret =
                    self.secrets.iter_mut().find(|s| s["secret_ref"].as_str().is_some_and(|r| r.ends_with(id)));
                secret.into_iter().for_each(|s| s["metadata"] = v["metadata"].clone());
                (200, json!({}))
            }
            ("PUT", [_, "acl"]) => (200, json!({})),
            // Described as Barbican does: name and metadata, never the payload.
            ("GET", [id, rest @ ..]) => {
                match (self.secrets.iter().find(|s| s["secret_ref"].as_str().is_some_and(|r| r.ends_with(id))), rest) {
                    (Some(s), []) => (
                        200,
                        json!({"secret_ref": s["secret_ref"], "name": s["name"], "status": "ACTIVE",
                                                   "secret_type": "opaque", "created": s["created"]}),
                    ),
                    (Some(s), ["metadata"]) => (200, json!({"metadata": s["metadata"]})),
                    _ => (404, json!({"code": 404, "title": "Not Found"})),
                }
            }
            ("DELETE", [id]) => {
                self.secrets.retain(|s| !s["secret_ref"].as_str().unwrap_or_default().ends_with(id));
                (204, Value::Null)
            }
            _ => (500, json!({"faultstring": format!("the fake Barbican has no {method} {path}")})),
        }
    }

    fn answer(&mut self, method: &str, path: &str, body: &[u8], port: u16) -> (u16, Value) {
        let v: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
        if path.starts_with("/v1/secrets") {
            let (path, query) = path.split_once('?').unwrap_or((path, ""));
            return self.barbican(method, path, query, &v, port);
        }
        let (path, query) = path.split_once('?').unwrap_or((path, ""));
        // `listener_id=<id>` narrows a listing of policies to one listener's, as Octavia's does.
        let of_listener = query.split('&').find_map(|kv| kv.strip_prefix("listener_id=")).map(String::from);
        let parts: Vec<&str> = path.trim_start_matches("/v2/lbaas/").split('/').collect();
        let pick = |items: &Vec<Value>, id: &str| items.iter().find(|i| i["id"] == id).cloned();
        match (method, parts.as_slice()) {
            ("POST", _) if body.len() > self.body_limit => (413, json!({"faultstring": "Request is too large."})),
            ("GET", ["loadbalancers"]) => {
                // `name=<name>` narrows the listing, as Octavia's does (`apply` finds each router by name).
                let named = query.split('&').find_map(|kv| kv.strip_prefix("name="));
                let lbs: Vec<&Value> = self.lb.iter().filter(|lb| named.is_none_or(|n| lb["name"] == n)).collect();
                (200, json!({ "loadbalancers": lbs }))
            }
            ("GET", ["loadbalancers", id]) => match &self.lb {
                Some(lb) if lb["id"] == *id => (200, json!({ "loadbalancer": lb })),
                _ => (404, json!({"faultstring": "no such load balancer"})),
            },
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
                self.touch(id);
                (202, Value::Null)
            }
            ("POST", ["listeners"]) => {
                let mut l = v["listener"].clone();
                let id = self.id("listener");
                l["loadbalancers"] = json!([{"id": l["loadbalancer_id"].take()}]);
                l["l7policies"] = json!([]);
                let l = State::active(l, &id);
                self.listeners.push(l.clone());
                (201, json!({ "listener": l }))
            }
            ("PUT", ["listeners", id]) => {
                let Some(l) = self.listeners.iter_mut().find(|l| l["id"] == *id) else {
                    return (404, json!({"faultstring": "no such listener"}));
                };
                for (k, x) in v["listener"].as_object().cloned().unwrap_or_default() {
                    l[k] = x;
                }
                (200, json!({"listener": l.clone()}))
            }
            ("DELETE", ["listeners", id]) => {
                // Octavia deletes a listener's policies (and their rules) with it.
                self.listeners.retain(|l| l["id"] != *id);
                let gone: Vec<Value> =
                    self.policies.iter().filter(|p| p["listener_id"] == *id).map(|p| p["id"].clone()).collect();
                self.policies.retain(|p| p["listener_id"] != *id);
                self.rules.retain(|(p, _)| !gone.iter().any(|g| g == p));
                (204, Value::Null)
            }
            ("DELETE", ["loadbalancers", id]) if self.lb.as_ref().is_some_and(|lb| lb["id"] == *id) => {
                // Asked with `cascade=true`: everything goes with it.
                let (writes, gets) = (std::mem::take(&mut self.writes), std::mem::take(&mut self.gets));
                *self = State {
                    secrets: std::mem::take(&mut self.secrets),
                    body_limit: self.body_limit,
                    next_id: self.next_id,
                    clock: self.clock,
                    writes,
                    gets,
                    ..State::default()
                };
                (204, Value::Null)
            }
            ("DELETE", ["l7policies", id]) => {
                self.policies.retain(|p| p["id"] != *id);
                self.rules.retain(|(p, _)| p != id);
                (204, Value::Null)
            }
            ("DELETE", ["pools", id]) => {
                if self.policies.iter().any(|p| p["redirect_pool_id"] == *id) {
                    return (409, json!({"faultstring": format!("pool {id} is in use by an L7 policy")}));
                }
                self.pools.retain(|p| p["id"] != *id);
                self.members.retain(|(p, _)| p != id);
                (204, Value::Null)
            }
            ("GET", ["l7policies"]) => {
                let of: Vec<&Value> = self
                    .policies
                    .iter()
                    .filter(|p| of_listener.as_ref().is_none_or(|l| p["listener_id"] == *l))
                    .collect();
                (200, json!({ "l7policies": of }))
            }
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
                self.touch(id);
                (201, json!({ "rule": rule }))
            }
            ("GET", ["healthmonitors"]) => (200, json!({"healthmonitors": []})),
            ("GET", ["/v2.0", ..]) | ("GET", ["v2.0", ..]) => (200, json!({"floatingips": []})),
            _ => (500, json!({"faultstring": format!("the fake Octavia has no {method} {path}")})),
        }
    }
}

pub async fn start(body_limit: usize) -> (u16, Arc<Mutex<State>>) {
    let state = Arc::new(Mutex::new(State { body_limit, ..State::default() }));
    let shared = state.clone();
    let port = http_request::serve_on_loopback(move |conn, port| serve(conn, port, shared.clone())).await;
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
        (
            201,
            http_request::keystone_token(port, &["load-balancer", "network", "key-manager"]),
            "X-Subject-Token: t\r\n",
        )
    } else {
        if method == "POST" && path.starts_with("/v2/lbaas/loadbalancers") {
            let hold = state.lock().unwrap().hold_creates.clone();
            if let Some(mut held) = hold {
                state.lock().unwrap().creates_held += 1;
                let _ = held.wait_for(|held| !held).await;
            }
        }
        let mut s = state.lock().unwrap();
        if method == "GET" {
            let path = path.split('?').next().unwrap_or_default().to_string();
            s.gets.push(path);
        } else {
            s.writes.push((line.clone(), body.len()));
        }
        let (status, answer) = s.answer(method, path, &body, port);
        (status, answer, "")
    };
    let body = answer.to_string();
    http_request::respond_json(&mut conn, status, &body, extra).await;
}

/// A router named `name` of cluster `c1` on the fake Octavia at `port`.
pub fn router_named(port: u16, name: &str, max_create_body_bytes: usize) -> Router {
    router_named_on(port, name, max_create_body_bytes, 80)
}

/// [`router_named`] with its HTTP listener on `listener_port`.
#[allow(dead_code)] // not every test target that includes this file uses it
pub fn router_named_on(port: u16, name: &str, max_create_body_bytes: usize, listener_port: u16) -> Router {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let url = format!("http://127.0.0.1:{port}/v3");
    let session = Session::new(AuthOptions::password(&url, "u", Secret::new("p"), "p", "Default")).unwrap();
    let opts =
        OctaviaOptions { busy_retry: Duration::from_secs(5), min_delay: Duration::ZERO, max_delay: Duration::ZERO };
    let spec = RouterSpec {
        vip_subnet_id: Some("s".into()),
        listener_port,
        max_create_body_bytes,
        create_timeout: Duration::from_secs(5),
        write_timeout: Duration::from_secs(5),
        ..RouterSpec::for_tests(name)
    };
    Router::new(Octavia::new(session.clone(), opts), Neutron::new(session), spec)
}
