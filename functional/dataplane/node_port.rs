//! Node-port members through the data plane (issue 34 §6; part of `functional_dataplane`): the
//! examples/ of the pod-member tests, translated with `member_mode = NodePort`, their Services made
//! `type: NodePort` and their four nodes given Ready conditions and InternalIPs, plus an
//! `externalTrafficPolicy: Local` Service (type LoadBalancer, `healthCheckNodePort`). One router,
//! one fully-populated create, one run.py call.
//!
//! The nodes' InternalIPs are loopback addresses of their own (127.a.b.11-14, a and b from the
//! process id: a parallel run binds other addresses), all four sharing each Service's one node
//! port, so the members keep their addresses in Octavia's rendering (`run.py --bind-members`) and
//! haproxy's health checks go where Octavia says: the member's address on its `monitor_port`.
//! On each node and node port an echo server stands in for kube-proxy and answers as the pod it
//! would pick: `<service>@<node>`, the Service's pod reached through that node (the Service's own
//! local pod under `Local`). Each node's `healthCheckNodePort` is kube-proxy's `/healthz`
//! stand-in (`echo.HealthServer`): 200 where the node has a local endpoint, 503 where not.
//!
//! Proved with real HTTP requests:
//! 1. routing per host and path is the pod-member case's: the examples test's `SHOP` table, the
//!    Service part of the name compared;
//! 2. zone weights: nodes in az-1 and az-2, the router in az-1; `web` (topology-mode Auto: the TAR
//!    allocation) and `api` (trafficDistribution PreferClose) each measured over [`REQUESTS`]
//!    requests, every zone's share within ±[`TOLERANCE_PP`] pp of the share `plan` shows;
//! 3. `Local`: the node whose `/healthz` answers 503 is DOWN in haproxy after its first check
//!    (Octavia renders ` port <healthCheckNodePort>` on the server check line) and gets no request;
//!    the three others share them.
//!
//! Its node-port echo server on the 503 node still answers (kube-proxy would drop the connection):
//! a request that reached it would be counted, not lost in a retry.

use super::zones::planned_shares;
use super::{SHOP, converge, load, options, run_py_with, with_router};
use crate::common::enabled;
use kuryr_l7_router::model::{DesiredRouter, MemberMode, NOT_FOUND_POOL, Pool, SERVER_ERROR_POOL, UNAVAILABLE_POOL};
use kuryr_l7_router::translate::manifest::load_str;
use kuryr_l7_router::translate::{Inputs, TranslateOptions, translate};
use std::collections::BTreeMap;
use std::path::Path;

/// Requests per zone-measured pool.
const REQUESTS: usize = 1200;
/// Requests to the `Local` Service.
const LOCAL_REQUESTS: usize = 120;
/// Allowed deviation of a zone's measured share from the planned one, in percentage points.
const TOLERANCE_PP: f64 = 5.0;
/// examples/'s nodes: (name, zone, last octet of its InternalIP).
const NODES: [(&str, &str, u8); 4] =
    [("node-a1", "az-1", 11), ("node-a2", "az-1", 12), ("node-b1", "az-2", 13), ("node-b2", "az-2", 14)];
/// The `Local` Service's node port and health-check node port (every node has both).
const LOCAL_NODE_PORT: u16 = 31100;
const HEALTH_CHECK_NODE_PORT: u16 = 32100;
/// The node without a local endpoint of the `Local` Service: its `/healthz` answers 503.
const NO_LOCAL_ENDPOINT: &str = "node-a1";

/// 127.a.b (a, b from the process id): the first three octets of the nodes' InternalIPs.
fn node_net() -> String {
    let pid = std::process::id();
    format!("127.{}.{}", 100 + pid % 100, (pid / 100) % 250)
}

fn node_yaml(net: &str, (name, zone, octet): (&str, &str, u8)) -> String {
    format!(
        "apiVersion: v1\nkind: Node\nmetadata: {{name: {name}, labels: {{topology.kubernetes.io/zone: {zone}, kubernetes.io/hostname: {name}}}}}\n\
         status:\n  allocatable: {{cpu: '4'}}\n  conditions: [{{type: Ready, status: 'True'}}]\n  addresses: [{{type: InternalIP, address: {net}.{octet}}}, {{type: Hostname, address: {name}}}]\n"
    )
}

/// A `Local` Service as Kubernetes allocates it for type LoadBalancer (node port and
/// healthCheckNodePort), its health monitor's timing from the annotation (2 s between probes, so
/// the first check runs soon after haproxy starts), and an Ingress for local.example.com.
fn local_service() -> String {
    format!(
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: local\n  namespace: shop\n  \
         annotations: {{kuryr-l7-router.openstack.org/health-monitor: '{{\"delay\": 2, \"timeout\": 1}}'}}\n\
         spec:\n  type: LoadBalancer\n  externalTrafficPolicy: Local\n  healthCheckNodePort: {HEALTH_CHECK_NODE_PORT}\n  \
         selector: {{app: local}}\n  ports: [{{name: http, port: 80, targetPort: 8080, nodePort: {LOCAL_NODE_PORT}}}]\n---\n\
         apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {{name: local, namespace: shop}}\n\
         spec:\n  ingressClassName: kuryr-l7-router\n  rules:\n  - host: local.example.com\n    http:\n      paths:\n      \
         - {{path: /, pathType: Prefix, backend: {{service: {{name: local, port: {{number: 80}}}}}}}}\n"
    )
}

/// examples/ as a NodePort cluster: its Services `type: NodePort` (node ports 30000, 30010, ...
/// in list order), its nodes Ready with InternalIPs in `net`, plus [`local_service`].
fn inputs(net: &str) -> Inputs {
    let mut inputs = load("examples");
    let names: Vec<&str> = inputs.nodes.iter().filter_map(|n| n.metadata.name.as_deref()).collect();
    assert_eq!(names, NODES.map(|n| n.0), "examples/'s nodes changed: update NODES");
    inputs.nodes.clear();
    for (i, svc) in inputs.services.iter_mut().enumerate() {
        let spec = svc.spec.as_mut().expect("examples/ Service spec");
        spec.type_ = Some("NodePort".into());
        for (j, p) in spec.ports.iter_mut().flatten().enumerate() {
            p.node_port = Some(30000 + 10 * i as i32 + j as i32);
        }
    }
    let nodes: Vec<String> = NODES.iter().map(|n| node_yaml(net, *n)).collect();
    let docs = format!("{}---\n{}", nodes.join("---\n"), local_service());
    load_str(&docs, Path::new("node-port.yaml"), &mut inputs).unwrap();
    inputs
}

fn node_of(p: &Pool, member: &str) -> String {
    let m = p.members.iter().find(|m| format!("{}:{}", m.address, m.protocol_port) == member);
    m.and_then(|m| m.target.as_deref()).unwrap_or_else(|| panic!("{member} is not a node member of {}", p.name)).into()
}

/// Member `address:port` → `<service>@<node>`: what kube-proxy's stand-in on that node answers.
fn echo_names(d: &DesiredRouter) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    for p in d.pools.values() {
        for mem in &p.members {
            let addr = format!("{}:{}", mem.address, mem.protocol_port);
            let name = format!("{}@{}", p.service.name, node_of(p, &addr));
            assert!(m.insert(addr.clone(), name).is_none(), "{addr} in two pools");
        }
    }
    m
}

/// Every pool's members are the four nodes on the Service's node port, weighted as said; the
/// `Local` pool's carry `monitor_port` = the healthCheckNodePort.
fn check_translation(d: &DesiredRouter, net: &str) {
    assert!(d.warnings.is_empty(), "{:?}", d.warnings);
    for p in d.pools.values() {
        if [NOT_FOUND_POOL, UNAVAILABLE_POOL, SERVER_ERROR_POOL].contains(&p.name.as_str()) {
            // No status responder here: the reserved pool stays empty (haproxy's 503).
            assert!(p.members.is_empty(), "{}: {:?}", p.name, p.members);
            continue;
        }
        let nodes: Vec<String> = p.members.iter().map(|m| m.address.to_string()).collect();
        let want: Vec<String> = NODES.iter().map(|(_, _, o)| format!("{net}.{o}")).collect();
        assert_eq!(nodes, want, "{}: {:?}", p.name, p.members);
        assert!(p.members.iter().all(|m| m.protocol_port >= 30000), "{}: not on node ports: {:?}", p.name, p.members);
        let monitor = if p.name == "shop_local" { Some(HEALTH_CHECK_NODE_PORT) } else { None };
        assert!(p.members.iter().all(|m| m.monitor_port == monitor), "{}: {:?}", p.name, p.members);
        println!("{}: members {:?}: {}", p.name, p.member_mode, p.weighting);
        assert_eq!(p.member_mode, MemberMode::NodePort, "{}", p.name);
    }
    assert!(d.pools["shop_web"].weighting.starts_with("zone-aware:"), "{}", d.pools["shop_web"].weighting);
    assert!(d.pools["shop_api"].weighting.contains("trafficDistribution"), "{}", d.pools["shop_api"].weighting);
}

/// Measured vs planned share per zone of `pool` from the answers `<service>@<node>`; panics
/// beyond the tolerance. Returns the table rows.
fn check_zone_shares(p: &Pool, answers: &BTreeMap<String, usize>) -> Vec<String> {
    let zone = |node: &str| NODES.iter().find(|n| n.0 == node).map(|n| n.1).expect("a node");
    let total: usize = answers.values().sum();
    let mut measured: BTreeMap<String, f64> = BTreeMap::new();
    for (name, n) in answers {
        let (svc, node) = name.split_once('@').expect("<service>@<node>");
        assert_eq!(svc, p.service.name, "{name} answered for {}", p.name);
        *measured.entry(zone(node).to_string()).or_default() += *n as f64 / total as f64;
    }
    let planned = planned_shares(p);
    let mut rows = vec![];
    for (zone, want) in &planned {
        let got = measured.get(zone).copied().unwrap_or(0.0);
        let row = format!(
            "{} | {zone} | {:.1}% | {:.1}% | {:+.1} pp",
            p.name,
            want * 100.0,
            got * 100.0,
            (got - want) * 100.0
        );
        println!("{row}");
        assert!((got - want).abs() * 100.0 <= TOLERANCE_PP, "{row}: beyond ±{TOLERANCE_PP} pp ({})", p.weighting);
        rows.push(row);
    }
    assert!(measured.keys().all(|z| planned.contains_key(z)), "traffic to an unplanned zone: {measured:?}");
    rows
}

/// The routing part: every SHOP request reached the Service the table names (any node), or got
/// the status it names.
fn check_routes(results: &[serde_json::Value]) {
    let mut bad = vec![];
    for (r, (host, path, expect)) in results.iter().zip(SHOP) {
        let got = match r["backend"].as_str() {
            Some(b) => b.split_once('@').map_or(b, |(svc, _)| svc).to_string(),
            None => r["status"].to_string(),
        };
        let ok = got == *expect;
        println!(
            "{} GET {host:<30} {path:<22} -> {:<20} (expected {expect})",
            if ok { "ok " } else { "BAD" },
            r["backend"]
        );
        if !ok {
            bad.push(format!("GET {host} {path} -> {got}, expected {expect}"));
        }
    }
    assert!(bad.is_empty(), "{} request(s) misrouted:\n{}", bad.len(), bad.join("\n"));
}

/// Answers per echo name of the requests for `host` + `path`.
fn tally(results: &[serde_json::Value], host: &str, path: &str) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for r in results.iter().filter(|r| r["request"]["host"] == host && r["request"]["path"] == path) {
        let b = r["backend"].as_str().unwrap_or_else(|| panic!("{host}{path}: no backend answered: {r}"));
        *out.entry(b.to_string()).or_insert(0) += 1;
    }
    out
}

/// The `Local` proof: haproxy checked every node's healthCheckNodePort with the monitor Octavia
/// rendered (` port <healthCheckNodePort>` on each server line), the 503 node is DOWN and got no
/// request, the others are UP and got them all.
fn check_local(out: &serde_json::Value, results: &[serde_json::Value], net: &str) {
    let servers = out["servers"].as_array().expect("servers (run.py --check-servers)");
    let local: Vec<&serde_json::Value> = servers
        .iter()
        .filter(|s| s["line"].as_str().is_some_and(|l| l.contains(&format!(":{LOCAL_NODE_PORT} "))))
        .collect();
    assert_eq!(local.len(), NODES.len(), "the Local pool's servers: {servers:#?}");
    for s in &local {
        let line = s["line"].as_str().unwrap();
        println!("{line}\n  -> haproxy: {} {} {}", s["status"], s["check_status"], s["check_code"]);
        assert!(
            line.contains(" check inter 2s ") && line.ends_with(&format!(" port {HEALTH_CHECK_NODE_PORT}")),
            "Octavia rendered no check on the healthCheckNodePort: {line}"
        );
        let checks: Vec<&str> = s["backend_checks"].as_array().unwrap().iter().filter_map(|c| c.as_str()).collect();
        assert!(
            checks.contains(&"option httpchk GET /healthz") && checks.contains(&"http-check expect rstatus 200"),
            "the Local pool's health monitor is not kube-proxy's /healthz expecting 200: {checks:?}"
        );
        let down = line.contains(&format!(" {net}.{}:", NODES.iter().find(|n| n.0 == NO_LOCAL_ENDPOINT).unwrap().2));
        let (status, check) = if down { ("DOWN", "L7STS") } else { ("UP", "L7OK") };
        assert_eq!((s["status"].as_str(), s["check_status"].as_str()), (Some(status), Some(check)), "{s}");
    }
    let hits = &out["health_hits"];
    for (_, _, o) in NODES {
        let at = format!("{net}.{o}:{HEALTH_CHECK_NODE_PORT}");
        assert!(hits[&at].as_u64().unwrap_or(0) >= 1, "no health check reached {at}: {hits}");
    }
    let got = tally(results, "local.example.com", "/");
    println!("Local: {got:?} (health checks per node: {hits})");
    assert_eq!(got.values().sum::<usize>(), LOCAL_REQUESTS);
    assert_eq!(got.get(&format!("local@{NO_LOCAL_ENDPOINT}")), None, "the node without a local endpoint got requests");
    assert_eq!(got.len(), NODES.len() - 1, "every node with a local endpoint serves: {got:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn node_port_members_route_weigh_and_drop_unhealthy_nodes_through_octavia_rendered_haproxy() {
    if !enabled() {
        return;
    }
    with_router("nodeport", |r| async move {
        let net = node_net();
        let opts = TranslateOptions { member_mode: MemberMode::NodePort, ..options("kuryr-l7-router") };
        let desired = translate(&inputs(&net), &opts);
        check_translation(&desired, &net);
        let report = converge(&r, &desired).await;
        let kinds: Vec<&str> = report.writes.iter().map(|w| w.kind).collect();
        assert_eq!(kinds, ["create_router"], "one fully-populated create: {:?}", report.writes);

        let req = |host: &str, path: &str| serde_json::json!({"host": host, "path": path});
        let mut requests: Vec<serde_json::Value> = SHOP.iter().map(|(h, p, _)| req(h, p)).collect();
        requests.extend((0..REQUESTS).map(|_| req("shop.example.com", "/")));
        requests.extend((0..REQUESTS).map(|_| req("shop.example.com", "/api")));
        requests.extend((0..LOCAL_REQUESTS).map(|_| req("local.example.com", "/")));
        let health: BTreeMap<String, u16> = NODES
            .iter()
            .map(|(name, _, o)| {
                (format!("{net}.{o}:{HEALTH_CHECK_NODE_PORT}"), if *name == NO_LOCAL_ENDPOINT { 503 } else { 200 })
            })
            .collect();
        let health = serde_json::to_string(&health).unwrap();
        let started = std::time::Instant::now();
        let (out, _) = run_py_with(
            &report.lb_id,
            &echo_names(&desired),
            None,
            &["--bind-members", "--health", &health, "--check-servers", "10"],
            &requests,
        );
        println!("{} requests in {:.1}s", requests.len(), started.elapsed().as_secs_f64());
        let results = out["results"].as_array().expect("results").clone();
        assert_eq!(results.len(), requests.len());

        let (routes, measured) = results.split_at(SHOP.len());
        check_routes(routes);
        let rows = [
            check_zone_shares(&desired.pools["shop_web"], &tally(measured, "shop.example.com", "/")),
            check_zone_shares(&desired.pools["shop_api"], &tally(measured, "shop.example.com", "/api")),
        ];
        println!("pool | zone | planned | measured | deviation\n{}", rows.concat().join("\n"));
        check_local(&out, measured, &net);
    })
    .await;
}
