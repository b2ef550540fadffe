//! A Gateway with HTTP listeners on two ports (80 and 8080, GatewayPort8080) is ONE load balancer
//! with one Octavia HTTP listener per port, through the real driver (`Router::converge`) against
//! the small stateful Octavia of tests/support/fake_octavia.rs: each port's routes on its own
//! listener, the pools shared; the port dropped, its listener (ours by name and tags) and the
//! pools only it used are deleted, the other listener untouched, and listeners that are not this
//! router's (an admin's, another router's) are never deleted.

#[path = "support/fake_octavia.rs"]
mod fake_octavia;
#[path = "support/http_request.rs"]
mod http_request;

use kuryr_l7_router::model::{CompareType, DesiredRouter, KubeRef, Policy, PortListener, Rule, RuleType};
use kuryr_l7_router::testing::{member, pool};
use serde_json::Value;
use std::sync::Mutex;

const ROUTER: &str = "kuryr-gw-0123456789abcdef-infra.gw";

/// One route: `path` to the pool `pool` (one member).
fn route(path: &str, pool_name: &str, position: u32) -> Policy {
    Policy {
        name: format!("gateway:infra/web:{path}"),
        position,
        pool: pool_name.into(),
        rules: vec![Rule {
            rule_type: RuleType::Path,
            compare_type: CompareType::EqualTo,
            value: path.into(),
            invert: false,
            key: None,
        }],
        owner: KubeRef::new("HTTPRoute", "infra", "web"),
        description: format!("Exact {path}"),
        redirect: None,
    }
}

/// `/eighty` on port 80; with `with_8080`, `/eight` on a second HTTP listener on 8080 (its own
/// pool); both listeners answer what no route matches from the `not-found` pool.
fn gateway(with_8080: bool) -> DesiredRouter {
    let mut d = DesiredRouter {
        policies: vec![route("/eighty", "infra_web", 1)],
        default_pool: Some("not-found".into()),
        ..DesiredRouter::default()
    };
    for (name, ip) in [("infra_web", "10.1.0.1"), ("not-found", "10.1.0.9")] {
        d.pools.insert(name.into(), pool(name, vec![member(ip, 1)]));
    }
    if with_8080 {
        d.pools.insert("infra_alt".into(), pool("infra_alt", vec![member("10.1.0.2", 1)]));
        let alt =
            PortListener { policies: vec![route("/eight", "infra_alt", 1)], default_pool: Some("not-found".into()) };
        d.more_http.insert(8080, alt);
    }
    d
}

/// The fake's listeners as (name, port), sorted.
fn listeners(state: &Mutex<fake_octavia::State>) -> Vec<(String, u64)> {
    let s = state.lock().unwrap();
    let mut out: Vec<(String, u64)> = s
        .listeners
        .iter()
        .map(|l| (l["name"].as_str().unwrap_or_default().into(), l["protocol_port"].as_u64().unwrap_or(0)))
        .collect();
    out.sort();
    out
}

/// The listener on `port` and the PATH values of its policies.
fn routes_on(state: &Mutex<fake_octavia::State>, port: u64) -> (Value, Vec<String>) {
    let s = state.lock().unwrap();
    let l = s.listeners.iter().find(|l| l["protocol_port"] == port).cloned().expect("a listener on the port");
    let policies: Vec<&Value> = s.policies.iter().filter(|p| p["listener_id"] == l["id"]).collect();
    let paths = policies
        .iter()
        .flat_map(|p| {
            let id = p["id"].clone();
            s.rules
                .iter()
                .filter(move |(pid, _)| *pid == id)
                .map(|(_, r)| r["value"].as_str().unwrap_or_default().to_string())
        })
        .collect();
    (l, paths)
}

/// Listeners with the router's tags, named `name` on port `p`, added behind the driver's back.
fn add_listeners(state: &Mutex<fake_octavia::State>, named: &[(&str, u64)]) {
    let mut s = state.lock().unwrap();
    let lb = s.lb.clone().expect("the load balancer")["id"].clone();
    let tags = s.listeners[0]["tags"].clone();
    for (name, p) in named {
        let l = serde_json::json!({"id": format!("foreign-{p}"), "name": name, "protocol": "HTTP", "protocol_port": p,
            "tags": tags, "loadbalancers": [{"id": lb}], "l7policies": [], "provisioning_status": "ACTIVE",
            "operating_status": "ONLINE"});
        s.listeners.push(l);
    }
}

fn pool_id(state: &Mutex<fake_octavia::State>, name: &str) -> Option<Value> {
    state.lock().unwrap().pools.iter().find(|p| p["name"] == name).map(|p| p["id"].clone())
}

#[tokio::test]
async fn a_gateway_router_serves_each_http_port_on_a_listener_of_its_own() {
    let (port, state) = fake_octavia::start(114_688).await;
    let r = fake_octavia::router_named(port, ROUTER, 114_688);
    let report = r.converge(&gateway(true)).await.expect("converged");
    assert_eq!(
        listeners(&state),
        vec![(format!("{ROUTER}-http"), 80), (format!("{ROUTER}-http-8080"), 8080)],
        "one load balancer, one HTTP listener per port"
    );
    assert_eq!(report.more_listener_ids.len(), 1);
    let (l80, on80) = routes_on(&state, 80);
    let (l8080, on8080) = routes_on(&state, 8080);
    assert_eq!(on80, ["/eighty"], "port 80 serves its own routes only");
    assert_eq!(on8080, ["/eight"], "port 8080 serves its own routes only");
    assert_eq!(l8080["tags"], l80["tags"], "tagged as the router's");
    let not_found = pool_id(&state, "not-found");
    assert_eq!(Some(l8080["default_pool_id"].clone()), not_found, "8080 answers 404 from the shared pool");
    assert_eq!(state.lock().unwrap().pools.len(), 3, "the pools are the router's, shared");
    let again = r.converge(&gateway(true)).await.expect("second convergence");
    assert!(again.writes.is_empty(), "{:?}", again.writes.iter().map(|w| &w.description).collect::<Vec<_>>());

    // Listeners on other ports that are not this router's: an admin's, another router's name.
    let foreign = [("admin-8081", 8081), ("kuryr-gw-fedcba9876543210-infra.other-http-8082", 8082)];
    add_listeners(&state, &foreign);

    // The Gateway drops its 8080 listener: our 8080 listener and the pool only it used go; the
    // listener on 80 and its routes stay as they are, and the listeners not ours too.
    let dropped = r.converge(&gateway(false)).await.expect("converged without 8080");
    let mut left = vec![(format!("{ROUTER}-http"), 80)];
    left.extend(foreign.iter().map(|(n, p)| (n.to_string(), *p)));
    left.sort();
    assert_eq!(listeners(&state), left);
    assert_eq!(routes_on(&state, 80).1, ["/eighty"]);
    assert_eq!(pool_id(&state, "infra_alt"), None, "the 8080 route's pool is deleted");
    let kinds = dropped.writes_by_kind();
    assert_eq!(kinds.get("delete_listener"), Some(&1), "{kinds:?}");
    let again = r.converge(&gateway(false)).await.expect("third convergence");
    assert!(again.writes.is_empty(), "{:?}", again.writes.iter().map(|w| &w.description).collect::<Vec<_>>());
}
