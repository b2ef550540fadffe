//! A Gateway with HTTP listeners on two ports (80 and 8080, GatewayPort8080) is ONE load balancer
//! with one Octavia HTTP listener per port, through the real driver (`Router::converge`) against
//! the small stateful Octavia of tests/support/fake_octavia.rs: each port's routes on its own
//! listener, the pools shared; the port dropped, its listener (ours by name and tags) and the
//! pools only it used are deleted, the other listener untouched, and listeners that are not this
//! router's (an admin's, another router's) are never deleted.

use crate::support::fake_octavia;

use kuryr_l7_router::model::{DesiredRouter, PortListener};
use kuryr_l7_router::testing::{exact_route, member, pool};
use serde_json::Value;
use std::sync::Mutex;

const ROUTER: &str = "kuryr-gw-0123456789abcdef-infra.gw";

/// `/eighty` on port 80; with `with_8080`, `/eight` on a second HTTP listener on 8080 (its own
/// pool); both listeners answer what no route matches from the `not-found` pool.
fn gateway(with_8080: bool) -> DesiredRouter {
    let mut d = DesiredRouter {
        policies: vec![exact_route("/eighty", "infra_web", 1)],
        default_pool: Some("not-found".into()),
        ..DesiredRouter::default()
    };
    for (name, ip) in [("infra_web", "10.1.0.1"), ("not-found", "10.1.0.9")] {
        d.pools.insert(name.into(), pool(name, vec![member(ip, 1)]));
    }
    if with_8080 {
        d.pools.insert("infra_alt".into(), pool("infra_alt", vec![member("10.1.0.2", 1)]));
        let alt = PortListener {
            policies: vec![exact_route("/eight", "infra_alt", 1)],
            default_pool: Some("not-found".into()),
        };
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

/// `show` (the router read back, table and JSON) lists the policies and default pool of the
/// more HTTP listener too, not only the main listener's.
#[tokio::test]
async fn show_lists_the_policies_of_each_http_port() {
    let (port, state) = fake_octavia::start(114_688).await;
    let r = fake_octavia::router_named(port, ROUTER, 114_688);
    r.converge(&gateway(true)).await.expect("converged");
    let snapshot = r.snapshot().await.expect("read").expect("the router exists");
    let (l8080, _) = routes_on(&state, 8080);
    let text = kuryr_l7_router::show::render(&snapshot);
    let section = text.split(&format!("HTTP LISTENER {}", l8080["id"].as_str().unwrap())).nth(1);
    let section = section.unwrap_or_else(|| panic!("no section for the 8080 listener:\n{text}"));
    assert!(section.contains("(HTTP port 8080)"), "{text}");
    assert!(section.contains("gateway:infra/web:/eight"), "{text}");
    assert!(section.contains("PATH EQUAL_TO /eight"), "{text}");
    assert!(section.contains("DEFAULT POOL: not-found"), "{text}");
    let main = text.split("HTTP LISTENER").next().unwrap();
    assert!(!main.contains("PATH EQUAL_TO /eight\n"), "the 8080 route is not listed as the main listener's:\n{text}");

    let json: Value = serde_json::from_str(&kuryr_l7_router::show::render_json(&snapshot)).unwrap();
    let more = json["more_http"].as_array().unwrap_or_else(|| panic!("no more_http: {json}"));
    assert_eq!(more.len(), 1, "{json}");
    assert_eq!(more[0]["port"], 8080);
    assert_eq!(more[0]["listener_id"], l8080["id"]);
    assert_eq!(more[0]["default_pool_id"], pool_id(&state, "not-found").unwrap());
    let names: Vec<&str> = more[0]["policies"].as_array().unwrap().iter().filter_map(|p| p["name"].as_str()).collect();
    assert_eq!(names, ["gateway:infra/web:/eight"]);
    assert_eq!(more[0]["policies"][0]["rules"][0]["value"], "/eight");
}

/// The Gateway's lowest HTTP port moves from 80 to 81 (its router's listener port follows): the
/// routes of the main listener are served on 81, and the router's old main listener on 80 is
/// deleted, not left answering the old port with the old routes; 8080 stays as it was.
#[tokio::test]
async fn a_gateway_whose_lowest_http_port_moves_keeps_no_listener_on_the_old_port() {
    let (port, state) = fake_octavia::start(114_688).await;
    let on80 = fake_octavia::router_named(port, ROUTER, 114_688);
    on80.converge(&gateway(true)).await.expect("converged on 80");
    let (l8080, _) = routes_on(&state, 8080);

    let on81 = fake_octavia::router_named_on(port, ROUTER, 114_688, 81);
    let moved = on81.converge(&gateway(true)).await.expect("converged on 81");
    assert_eq!(
        listeners(&state),
        vec![(format!("{ROUTER}-http"), 81), (format!("{ROUTER}-http-8080"), 8080)],
        "one main listener, on the new port"
    );
    assert_eq!(routes_on(&state, 81).1, ["/eighty"], "the main routes on the new port");
    assert_eq!(routes_on(&state, 8080), (l8080, vec!["/eight".to_string()]), "8080 untouched");
    assert_eq!(moved.writes_by_kind().get("delete_listener"), Some(&1));
    let again = on81.converge(&gateway(true)).await.expect("second convergence");
    assert!(again.writes.is_empty(), "{:?}", again.writes.iter().map(|w| &w.description).collect::<Vec<_>>());

    // `show` reads a Gateway's router on port 80 (it has no manifests): it finds the router's
    // own HTTP listener on 81 by its name, and lists both listeners with their routes.
    let shown = on80.snapshot().await.expect("read").expect("the router exists");
    assert_eq!(shown.listener.as_ref().map(|l| l.1), Some(81));
    let text = kuryr_l7_router::show::render(&shown);
    let main = text.split("\nHTTP LISTENER").next().unwrap();
    assert!(main.contains("(HTTP port 81)") && main.contains("PATH EQUAL_TO /eighty"), "{text}");
    assert!(text.contains("LISTENERS (2)") && text.contains("(HTTP port 8080)"), "{text}");
}
