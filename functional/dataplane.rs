//! Data-plane functional tests: Kubernetes manifests → translation → the L7 router converged on
//! the real local Octavia → Octavia's own haproxy rendering of it → real HTTP requests
//! (`functional/dataplane/run.py`, see functional/dataplane/README.md).
//!
//! The expected Service of every request comes from a table written here from the Kubernetes
//! Ingress rules (host first: exact, then wildcard of exactly one label, then host-less rules;
//! then the longest matching path, Exact before Prefix, Prefix on whole path elements; else the
//! default backend, else 503), not from the translation.
//!
//! `functional/openstack.sh start`, then `KURYR_FUNCTIONAL=1 cargo test --test functional_dataplane`
//! (as root: run.py reads Octavia's config and database).

#[path = "common/mod.rs"]
mod common;
use common::*;
#[path = "dataplane/client_ca.rs"]
mod client_ca;
#[path = "dataplane/conformance.rs"]
mod conformance;
#[path = "dataplane/forwarded.rs"]
mod forwarded;
#[path = "dataplane/gateway.rs"]
mod gateway;
#[path = "../tests/support/gateway_case.rs"]
mod gateway_case;
#[path = "dataplane/isolation.rs"]
mod isolation;
#[path = "dataplane/moves.rs"]
mod moves;
#[path = "dataplane/node_port.rs"]
mod node_port;
#[path = "dataplane/rotation.rs"]
mod rotation;
#[path = "dataplane/status_answers.rs"]
mod status_answers;
#[path = "dataplane/zones.rs"]
mod zones;

use k8s_openapi::api::networking::v1::{HTTPIngressPath, Ingress};
use kuryr_l7_router::driver::report::ConvergeReport;
use kuryr_l7_router::driver::router::Router;
use kuryr_l7_router::model::DesiredRouter;
use kuryr_l7_router::openstack::Barbican;
use kuryr_l7_router::translate::manifest::load_str;
use kuryr_l7_router::translate::{Inputs, TranslateOptions, load_manifests, translate};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn load(dir: &str) -> Inputs {
    load_manifests(&[repo().join(dir)]).unwrap_or_else(|e| panic!("{dir}: {e}"))
}

fn options(class: &str) -> TranslateOptions {
    TranslateOptions { ingress_class: class.into(), router_zone: Some("az-1".into()), ..TranslateOptions::default() }
}

async fn converge(r: &Router, want: &DesiredRouter) -> ConvergeReport {
    let report = r.converge(want).await.unwrap_or_else(|e| panic!("converge failed: {e}"));
    println!(
        "{}: {} write(s) in {:.1}s{}",
        r.spec().name,
        report.writes.len(),
        report.elapsed.as_secs_f64(),
        write_kinds(&report)
    );
    report
}

/// The kinds of a convergence's writes, counted in order of first appearance:
/// ` (create_router, create_listener, create_policy ×2, ...)`; empty without writes.
fn write_kinds(report: &ConvergeReport) -> String {
    let mut kinds: Vec<(&str, usize)> = Vec::new();
    for w in &report.writes {
        match kinds.iter_mut().find(|(k, _)| *k == w.kind) {
            Some((_, n)) => *n += 1,
            None => kinds.push((w.kind, 1)),
        }
    }
    if kinds.is_empty() {
        return String::new();
    }
    let list: Vec<String> =
        kinds.iter().map(|(k, n)| if *n > 1 { format!("{k} ×{n}") } else { k.to_string() }).collect();
    format!(" ({})", list.join(", "))
}

/// Member `address:port` → the name its echo server answers with: the Service name, plus
/// `:<service port>` for a Service routed on several ports (one pool per port).
fn echo_names(d: &DesiredRouter) -> BTreeMap<String, String> {
    let mut per_service: BTreeMap<&str, usize> = BTreeMap::new();
    for p in d.pools.values() {
        *per_service.entry(p.service.name.as_str()).or_default() += 1;
    }
    let mut m = BTreeMap::new();
    for p in d.pools.values() {
        let name = if per_service[p.service.name.as_str()] > 1 {
            format!("{}:{}", p.service.name, p.service_port)
        } else {
            p.service.name.clone()
        };
        for mem in &p.members {
            let prev = m.insert(format!("{}:{}", mem.address, mem.protocol_port), name.clone());
            assert!(prev.is_none_or(|n| n == name), "{}:{} in two pools", mem.address, mem.protocol_port);
        }
    }
    m
}

/// Send `requests` (run.py's request objects) through the router's data plane: the results, and
/// whether run.py says every expectation was met (its `ok` and its exit status).
fn send(lb_id: &str, desired: &DesiredRouter, requests: &[serde_json::Value]) -> (Vec<serde_json::Value>, bool) {
    run_py(lb_id, &echo_names(desired), requests)
}

/// Runs run.py for `requests`, with `echo` naming each backend (address:port → name).
fn run_py(
    lb_id: &str,
    echo: &BTreeMap<String, String>,
    requests: &[serde_json::Value],
) -> (Vec<serde_json::Value>, bool) {
    let (result, exited_ok) = run_py_full(lb_id, echo, None, requests);
    let results = result["results"].as_array().expect("results").clone();
    assert_eq!(results.len(), requests.len());
    (results, result["ok"] == true && exited_ok)
}

/// run.py's whole answer for `requests` (results, `ok`, `port_map`) and whether it exited 0, with
/// `echo` naming each backend and `member_map` sending members elsewhere (address:port →
/// 127.0.0.1:port, e.g. to the status responder).
fn run_py_full(
    lb_id: &str,
    echo: &BTreeMap<String, String>,
    member_map: Option<&serde_json::Map<String, serde_json::Value>>,
    requests: &[serde_json::Value],
) -> (serde_json::Value, bool) {
    run_py_with(lb_id, echo, member_map, &[], requests)
}

/// [`run_py_full`] with more of run.py's options (`--bind-members`, `--health`,
/// `--check-servers`: functional/dataplane/README.md). The one place that spawns run.py.
fn run_py_with(
    lb_id: &str,
    echo: &BTreeMap<String, String>,
    member_map: Option<&serde_json::Map<String, serde_json::Value>>,
    extra: &[&str],
    requests: &[serde_json::Value],
) -> (serde_json::Value, bool) {
    let mut cmd = Command::new("/usr/bin/python3");
    cmd.arg(repo().join("functional/dataplane/run.py")).args([lb_id, "--echo", &serde_json::to_string(echo).unwrap()]);
    if let Some(map) = member_map {
        cmd.args(["--member-map", &serde_json::Value::Object(map.clone()).to_string()]);
    }
    cmd.args(extra);
    let mut child = cmd
        .args(["--requests", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run /usr/bin/python3 functional/dataplane/run.py");
    child.stdin.take().unwrap().write_all(serde_json::to_string(requests).unwrap().as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let result: serde_json::Value = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!("run.py exit {:?}: {e}\nstdout: {stdout}\nstderr: {}", out.status, String::from_utf8_lossy(&out.stderr))
    });
    assert!(result.get("error").is_none(), "data plane failed: {result:#}");
    (result, out.status.success())
}

/// Send `(host, path, expected)` through the router's data plane; panic with a table of every
/// request that reached something else.
fn assert_routes(lb_id: &str, desired: &DesiredRouter, cases: &[(&str, &str, &str)]) {
    let requests: Vec<serde_json::Value> = cases
        .iter()
        .map(|(host, path, expect)| serde_json::json!({"host": host, "path": path, "expect": expect}))
        .collect();
    let (results, all_ok) = send(lb_id, desired, &requests);
    let mut bad = vec![];
    for (r, (host, path, expect)) in results.iter().zip(cases) {
        let got = match r["backend"].as_str() {
            Some(b) => b.to_string(),
            None => r["status"].to_string(),
        };
        let ok = r["match"].as_bool() == Some(true);
        println!("{} GET {host:<30} {path:<22} -> {got:<12} (expected {expect})", if ok { "ok " } else { "BAD" });
        if !ok {
            bad.push(format!("GET {host} {path} -> {got}, expected {expect}"));
        }
    }
    assert!(bad.is_empty(), "{} request(s) misrouted:\n{}", bad.len(), bad.join("\n"));
    assert!(all_ok, "run.py reports a mismatch or failed");
}

// ------------------------------------------------------------------------------ examples/ (shop)

/// examples/ by the Ingress rules: default-backend (only a default backend: fallback), storefront
/// (shop.example.com: Prefix /, /api, /api/v2, /static, Exact /login), accounts (auth.shop.example.com: Prefix /login, Exact
/// /logout), tenants (*.shop.example.com: Prefix /), assets (static.example.com: Prefix /; any
/// host: Exact /healthz → web).
const SHOP: &[(&str, &str, &str)] = &[
    ("shop.example.com", "/", "web"),
    ("shop.example.com", "/products/42", "web"),
    ("shop.example.com", "/api", "api"),
    ("shop.example.com", "/api/", "api"),
    ("shop.example.com", "/api/orders?page=2", "api"),
    ("shop.example.com", "/apix", "web"),
    ("shop.example.com", "/api/v2", "api-v2"),
    ("shop.example.com", "/api/v2/items/7", "api-v2"),
    ("shop.example.com", "/api/v2x", "api"),
    ("shop.example.com", "/API/v2", "web"),
    ("shop.example.com", "/login", "auth"),
    ("shop.example.com", "/login/", "web"),
    ("shop.example.com", "/login?next=/cart", "auth"),
    ("shop.example.com", "/static/app.js", "static"),
    ("shop.example.com", "/healthz", "web"),
    ("SHOP.Example.COM", "/api/v2/items", "api-v2"),
    ("shop.example.com:8080", "/api", "api"),
    ("shop.example.com:80", "/login", "auth"),
    ("auth.shop.example.com", "/login", "auth"),
    ("auth.shop.example.com", "/login/reset", "auth"),
    ("auth.shop.example.com", "/logout", "auth"),
    // A named host's unmatched paths never reach the router-wide default backend (another
    // Ingress's catch-all): the no-route answer (no responder here: haproxy's 503).
    ("auth.shop.example.com", "/logout/", "503"),
    ("auth.shop.example.com", "/cart", "503"),
    ("auth.shop.example.com", "/healthz", "503"),
    ("acme.shop.example.com", "/", "tenant"),
    ("Globex.Shop.Example.com:443", "/cart", "tenant"),
    ("acme.shop.example.com", "/healthz", "tenant"),
    ("a.b.shop.example.com", "/", "fallback"),
    ("shop.example.com.evil.net", "/", "fallback"),
    ("xshop.example.com", "/", "fallback"),
    ("static.example.com", "/img/logo.png", "static"),
    ("static.example.com", "/healthz", "static"),
    ("unknown.example.org", "/healthz", "web"),
    ("unknown.example.org", "/healthz/", "fallback"),
    ("unknown.example.org", "/", "fallback"),
];

/// After the update: storefront's Prefix /static became Prefix /assets.
const SHOP_UPDATED: &[(&str, &str, &str)] = &[
    ("shop.example.com", "/static/app.js", "web"),
    ("shop.example.com", "/static", "web"),
    ("shop.example.com", "/assets/app.js", "static"),
    ("shop.example.com", "/assets", "static"),
    ("shop.example.com", "/api/v2/x", "api-v2"),
    ("unknown.example.org", "/", "fallback"),
];

/// A Service the examples do not have: the default backend moves to it.
const FALLBACK_V2: &str = r#"
apiVersion: v1
kind: Service
metadata: {name: fallback-v2, namespace: shop}
spec:
  ports:
  - {name: http, port: 80, targetPort: http, protocol: TCP}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: fallback-v2-1, namespace: shop, labels: {kubernetes.io/service-name: fallback-v2}}
addressType: IPv4
ports: [{name: http, port: 8080, protocol: TCP}]
endpoints: [{addresses: ["10.0.0.72"], conditions: {ready: true}}]
"#;

/// After the default backend moved to fallback-v2: what fell back reaches it, the rest is as
/// before.
const SHOP_NEW_DEFAULT: &[(&str, &str, &str)] = &[
    ("unknown.example.org", "/", "fallback-v2"),
    ("shop.example.com.evil.net", "/", "fallback-v2"),
    ("a.b.shop.example.com", "/", "fallback-v2"),
    ("auth.shop.example.com", "/cart", "503"),
    ("unknown.example.org", "/healthz", "web"),
    ("acme.shop.example.com", "/cart", "tenant"),
    ("shop.example.com", "/assets/a.css", "static"),
];

/// After the default-backend Ingress is deleted: unmatched requests reach nothing (503), and a
/// known host still never falls through to the wildcard or the host-less rules.
const SHOP_NO_DEFAULT: &[(&str, &str, &str)] = &[
    ("unknown.example.org", "/", "503"),
    ("shop.example.com.evil.net", "/", "503"),
    ("a.b.shop.example.com", "/", "503"),
    ("auth.shop.example.com", "/cart", "503"),
    ("auth.shop.example.com", "/healthz", "503"),
    ("auth.shop.example.com", "/login", "auth"),
    ("acme.shop.example.com", "/cart", "tenant"),
    ("acme.shop.example.com", "/healthz", "tenant"),
    ("unknown.example.org", "/healthz", "web"),
    ("shop.example.com", "/nothing/here", "web"),
    ("shop.example.com", "/assets/a.css", "static"),
];

fn ingress_mut<'a>(inputs: &'a mut Inputs, name: &str) -> &'a mut Ingress {
    inputs.ingresses.iter_mut().find(|i| i.metadata.name.as_deref() == Some(name)).expect("ingress")
}

fn path_mut<'a>(ing: &'a mut Ingress, path: &str) -> &'a mut HTTPIngressPath {
    ing.spec
        .as_mut()
        .unwrap()
        .rules
        .iter_mut()
        .flatten()
        .flat_map(|r| r.http.iter_mut().flat_map(|h| h.paths.iter_mut()))
        .find(|p| p.path.as_deref() == Some(path))
        .expect("path")
}

#[tokio::test(flavor = "multi_thread")]
async fn examples_route_as_kubernetes_says_and_follow_updates() {
    if !enabled() {
        return;
    }
    with_router("shop", |r| async move {
        let opts = options("kuryr-l7-router");
        let mut inputs = load("examples");
        let desired = translate(&inputs, &opts);
        assert!(desired.warnings.is_empty(), "examples/ has warnings: {:?}", desired.warnings);
        let report = converge(&r, &desired).await;
        assert_routes(&report.lb_id, &desired, SHOP);
        assert_eq!(converge(&r, &desired).await.writes.len(), 0, "a second convergence writes nothing");

        // Update: storefront's /static becomes /assets.
        path_mut(ingress_mut(&mut inputs, "storefront"), "/static").path = Some("/assets".into());
        let updated = translate(&inputs, &opts);
        assert!(updated.warnings.is_empty(), "{:?}", updated.warnings);
        let report = converge(&r, &updated).await;
        assert!(!report.writes.is_empty());
        assert_routes(&report.lb_id, &updated, SHOP_UPDATED);

        // Update: the default backend moves to a Service the router has no pool for: the pool is
        // created, the listener's default pool switched to it, the old default pool deleted.
        // (The conformance test converged one router from feature to feature, which did this
        // twice; it builds a router per feature now: functional/dataplane/README.md.)
        load_str(FALLBACK_V2, Path::new("fallback-v2.yaml"), &mut inputs).unwrap();
        let backend = ingress_mut(&mut inputs, "default-backend").spec.as_mut().unwrap().default_backend.as_mut();
        backend.unwrap().service.as_mut().unwrap().name = "fallback-v2".into();
        let moved = translate(&inputs, &opts);
        assert!(moved.warnings.is_empty(), "{:?}", moved.warnings);
        assert_eq!(moved.default_pool.as_deref(), Some("shop_fallback-v2"));
        let report = converge(&r, &moved).await;
        let kinds: Vec<&str> = report.writes.iter().map(|w| w.kind).collect();
        assert_eq!(kinds, ["create_pool", "batch_members", "set_default_pool", "delete_pool"], "{:?}", report.writes);
        assert_routes(&report.lb_id, &moved, SHOP_NEW_DEFAULT);

        // Update: no default backend any more.
        inputs.ingresses.retain(|i| i.metadata.name.as_deref() != Some("default-backend"));
        let no_default = translate(&inputs, &opts);
        assert!(no_default.warnings.is_empty(), "{:?}", no_default.warnings);
        assert_eq!(no_default.default_pool, None);
        let report = converge(&r, &no_default).await;
        assert_routes(&report.lb_id, &no_default, SHOP_NO_DEFAULT);
    })
    .await;
}

// ------------------------------------------------------------------------ tests/fixtures/ingress/basic

/// tests/fixtures/ingress/basic by the Ingress rules. shop (oldest): foo.bar.com Prefix / → web,
/// Prefix /api/ → api:80, Exact /api/v1 → api:admin (9090), Exact /api → web; *.bar.com
/// ImplementationSpecific /static → web; default backend fallback (no endpoints: 503) for its own
/// hosts' unmatched paths (*.bar.com). copycat (newer): its foo.bar.com / loses to shop's; any
/// host Exact /healthz → web; its default backend (web, it has a host-less rule) catches what no
/// rule routes. broken: ok.example.com Prefix /good → web, everything else in it is invalid.
/// other: not ours.
const BASIC: &[(&str, &str, &str)] = &[
    ("foo.bar.com", "/", "web"),
    ("foo.bar.com", "/anything", "web"),
    ("foo.bar.com", "/api", "web"),
    ("foo.bar.com", "/api/", "api:http"),
    ("foo.bar.com", "/api/users", "api:http"),
    ("foo.bar.com", "/api/v1", "api:admin"),
    ("foo.bar.com", "/api/v1/", "api:http"),
    ("foo.bar.com", "/apix", "web"),
    ("FOO.BAR.COM:8080", "/api/v1", "api:admin"),
    ("foo.bar.com", "/healthz", "web"),
    ("x.bar.com", "/static/a.css", "web"),
    ("x.bar.com", "/static", "web"),
    ("x.bar.com", "/staticx", "503"),
    ("x.bar.com", "/", "503"),
    ("x.y.bar.com", "/static", "web"),
    ("bar.com", "/static", "web"),
    ("anything.example.net", "/healthz", "web"),
    ("anything.example.net", "/", "web"),
    ("ok.example.com", "/good/x", "web"),
    // a route to a missing Service is kept and answers 503 (issue 14 §3), never the default
    ("ok.example.com", "/missing", "503"),
    ("Bad_Host.example.com", "/", "web"),
];

#[tokio::test(flavor = "multi_thread")]
async fn basic_fixture_routes_as_kubernetes_says() {
    if !enabled() {
        return;
    }
    with_router("basic", |r| async move {
        let desired = translate(&load("tests/fixtures/ingress/basic"), &options("kuryr"));
        // shop's default backend (fallback) has no endpoints: a pool without members
        assert!(desired.pools["shop_fallback"].members.is_empty());
        assert_eq!(desired.default_pool.as_deref(), Some("shop_web"));
        let report = converge(&r, &desired).await;
        assert_routes(&report.lb_id, &desired, BASIC);
    })
    .await;
}

#[test]
fn expectation_tables_cover_the_examples() {
    // Offline sanity check that the examples still say what the tables assume.
    let inputs = load_manifests(&[PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples")]).unwrap();
    let d = translate(&inputs, &options("kuryr-l7-router"));
    assert!(d.warnings.is_empty(), "{:?}", d.warnings);
    assert_eq!(d.default_pool.as_deref(), Some("shop_fallback"));
    let names: std::collections::BTreeSet<String> = echo_names(&d).into_values().collect();
    // A status code (the no-route answer) names no Service.
    for (_, _, expect) in SHOP.iter().filter(|(_, _, e)| e.parse::<u16>().is_err()) {
        assert!(names.contains(*expect), "{expect} is not a Service with members");
    }
}
/// Run `body` on a router of its own, then clean up whatever happened. The router's first
/// convergence is one fully-populated create (every child in the create call): these tests are
/// about routing, and a create object by object takes 40-52 Octavia writes (minutes on the shared
/// 2-core stack). Every later convergence of a test is an update, step by step as before; the
/// create object by object stays covered by functional_driver (see functional/dataplane/README.md).
async fn with_router<F, Fut>(tag: &str, body: F)
where
    F: FnOnce(Router) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let mut r = local_router("fct-dp", tag).await;
    r.spec_mut().fully_populated_create = true;
    common::with_router(r, body).await
}

// ------------------------------------------------------------------------------ HTTPS

/// A CA, an intermediate, and leaves signed by the intermediate: (tls.crt = leaf + intermediate,
/// tls.key) per name.
fn tls_pems(hosts: &[&str]) -> Vec<(String, String)> {
    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
    let ca_params = |cn: &str| {
        let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        p.distinguished_name.push(DnType::CommonName, cn);
        p
    };
    let root = CertifiedIssuer::self_signed(ca_params("kuryr test root"), KeyPair::generate().unwrap()).unwrap();
    let inter =
        CertifiedIssuer::signed_by(ca_params("kuryr test intermediate"), KeyPair::generate().unwrap(), &root).unwrap();
    hosts
        .iter()
        .map(|h| {
            let key = KeyPair::generate().unwrap();
            let mut p = CertificateParams::new(vec![h.to_string()]).unwrap();
            p.distinguished_name.push(DnType::CommonName, *h);
            let leaf = p.signed_by(&key, &inter).unwrap();
            (format!("{}{}", leaf.pem(), inter.pem()), key.serialize_pem())
        })
        .collect()
}

/// secure.example.com and *.wild.example.com with TLS (one Secret each, redirect on for the class),
/// plain.example.com without, and a cert-manager HTTP-01 solver Ingress on secure.example.com.
fn tls_manifests() -> String {
    let pems = tls_pems(&["secure.example.com", "*.wild.example.com"]);
    let secret = |name: &str, (crt, key): &(String, String)| {
        kuryr_l7_router::testing::tls_secret_manifest("tls", name, crt, key)
    };
    let service = |name: &str, ip: &str| {
        format!(
            "apiVersion: v1\nkind: Service\nmetadata: {{namespace: tls, name: {name}}}\nspec: {{ports: [{{port: 80}}]}}\n---\n\
             apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {{namespace: tls, name: {name}-1, labels: {{kubernetes.io/service-name: {name}}}}}\n\
             addressType: IPv4\nports: [{{port: 8080}}]\nendpoints: [{{addresses: [{ip}], conditions: {{ready: true}}}}]\n"
        )
    };
    let route = |host: &str, path: &str, kind: &str, svc: &str| {
        format!(
            "  - host: \"{host}\"\n    http: {{paths: [{{path: \"{path}\", pathType: {kind}, backend: {{service: {{name: {svc}, port: {{number: 80}}}}}}}}]}}\n"
        )
    };
    [
        "apiVersion: networking.k8s.io/v1\nkind: IngressClass\nmetadata: {name: kuryr-l7-router}\nspec: {controller: openstack.org/kuryr-l7-router}\n".to_string(),
        service("web", "10.0.1.11"),
        service("api", "10.0.1.12"),
        service("solver", "10.0.1.13"),
        secret("secure", &pems[0]),
        secret("wild", &pems[1]),
        format!(
            "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {{namespace: tls, name: site, creationTimestamp: \"2026-01-01T00:00:00Z\"}}\n\
             spec:\n  ingressClassName: kuryr-l7-router\n  tls:\n  - {{secretName: secure, hosts: [secure.example.com]}}\n  - {{secretName: wild, hosts: [\"*.wild.example.com\"]}}\n  rules:\n{}{}{}{}",
            route("secure.example.com", "/", "Prefix", "web"),
            route("secure.example.com", "/api", "Prefix", "api"),
            route("*.wild.example.com", "/", "Prefix", "api"),
            route("plain.example.com", "/", "Prefix", "web"),
        ),
        format!(
            "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {{namespace: tls, name: cm-acme-http-solver, creationTimestamp: \"2026-01-02T00:00:00Z\"}}\n\
             spec:\n  ingressClassName: kuryr-l7-router\n  rules:\n{}",
            route("secure.example.com", "/.well-known/acme-challenge/tok3n", "Exact", "solver"),
        ),
    ]
    .join("\n---\n")
}

/// HTTPS with SNI (each host its certificate and chain), the HTTP→HTTPS redirect with the ACME
/// solver's path left on HTTP, and, on the same router, the listeners' X-Forwarded-* headers on
/// and then off (functional/dataplane/forwarded.rs).
#[tokio::test(flavor = "multi_thread")]
async fn https_with_sni_redirects_and_acme_through_octavia_rendered_haproxy() {
    if !enabled() {
        return;
    }
    let r = local_router("fct-dp", "tls").await.with_barbican(Barbican::new(session("admin", "admin")));
    let cluster = r.spec().ownership.cluster.clone();
    common::with_router(r, |r| async move {
        let mut inputs = Inputs::default();
        load_str(&tls_manifests(), Path::new("tls.yaml"), &mut inputs).unwrap();
        inputs.now = Some(std::time::SystemTime::now());
        // Redirects are opt-in ([octavia_defaults] ssl_redirect): this test checks them.
        let mut opts = options("kuryr-l7-router");
        opts.tls.ssl_redirect = true;
        let desired = translate(&inputs, &opts);
        let unexpected: Vec<_> = desired.warnings.iter().filter(|w| w.reason != "RedirectNotPossible").collect();
        assert!(unexpected.is_empty(), "{unexpected:?}");
        let report = converge(&r, &desired).await;
        let req = |scheme: &str, host: &str, path: &str, expect: &str| {
            serde_json::json!({"scheme": scheme, "host": host, "path": path, "expect": expect})
        };
        let mut requests = vec![
            req("https", "secure.example.com", "/", "web"),
            req("https", "secure.example.com", "/api/x", "api"),
            req("https", "a.wild.example.com", "/", "api"),
            req("http", "secure.example.com", "/p?q=1", "308"),
            req("http", "secure.example.com", "/.well-known/acme-challenge/tok3n", "solver"),
            req("http", "plain.example.com", "/", "web"),
            req("http", "a.wild.example.com", "/", "api"),
        ];
        requests[0]["expect_subject"] = "secure.example.com".into();
        requests[2]["expect_subject"] = "*.wild.example.com".into();
        requests[3]["expect_location"] = "https://secure.example.com/p?q=1".into();
        let (out, exited_ok) = run_py_full(&report.lb_id, &echo_names(&desired), None, &requests);
        let results = out["results"].as_array().expect("results").clone();
        assert_eq!(results.len(), requests.len());
        let all_ok = out["ok"] == true && exited_ok;
        for (q, r) in requests.iter().zip(&results) {
            println!(
                "{} {} {}{} -> {} {} tls={}",
                if r["match"] == true { "ok " } else { "BAD" },
                q["scheme"],
                q["host"],
                q["path"],
                r["status"],
                r["backend"],
                r["tls"]
            );
        }
        assert!(all_ok, "some request did not get what Kubernetes says: {results:#?}");
        // Each SNI host got its own certificate, with the chain (leaf + intermediate).
        assert_eq!(results[0]["tls"]["subject_cn"], "secure.example.com");
        assert_eq!(results[2]["tls"]["subject_cn"], "*.wild.example.com");
        for i in [0, 1, 2] {
            assert_eq!(results[i]["tls"]["chain_len"], 2, "leaf + intermediate: {}", results[i]["tls"]);
            assert_eq!(results[i]["tls"]["issuer"], "CN=kuryr test intermediate");
        }
        assert_eq!(results[3]["status"], 308);
        assert!(results[4]["tls"].is_null() && results[5]["tls"].is_null());
        // The listeners' insert_headers (functional/dataplane/forwarded.rs) on the same router:
        // plain.example.com over HTTP and secure.example.com over HTTPS, both answered by web.
        forwarded::assert_inserted(&out, &desired, 5, 0);
        forwarded::assert_none_once_turned_off(r, &desired, &[requests[5].clone(), requests[0].clone()]).await;
    })
    .await;
    delete_cluster_secrets(&cluster).await;
}

/// Deletes every Barbican secret of the test's cluster (each router's and the legacy ones).
async fn delete_cluster_secrets(cluster: &str) {
    let b = Barbican::new(session("admin", "admin"));
    let prefix = kuryr_l7_router::driver::certificates::SecretScope::new(cluster, "").cluster_prefix();
    for s in b.list_secrets(&prefix).await.unwrap_or_default() {
        let _ = b.delete_secret(&s.secret_ref).await;
    }
}

// ------------------------------------------------------------------------ tenants (issue 14 §2)

/// Two tenants: beta (older) has a default backend beside its host rules, alpha has none. A
/// request for alpha's host that matches none of alpha's paths must not reach beta's default
/// backend (before issue 14 it did: the oldest default backend was the router's); beta's own
/// unmatched paths do.
const TENANTS: &str = r#"
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: kuryr}
spec: {controller: openstack.org/kuryr-l7-router}
---
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Service, metadata: {name: alpha-web, namespace: alpha}, spec: {ports: [{port: 80}]}}
- {apiVersion: v1, kind: Service, metadata: {name: beta-web, namespace: beta}, spec: {ports: [{port: 80}]}}
- {apiVersion: v1, kind: Service, metadata: {name: beta-fallback, namespace: beta}, spec: {ports: [{port: 80}]}}
- apiVersion: discovery.k8s.io/v1
  kind: EndpointSlice
  metadata: {name: a, namespace: alpha, labels: {kubernetes.io/service-name: alpha-web}}
  addressType: IPv4
  ports: [{port: 8080}]
  endpoints: [{addresses: ["10.0.9.1"]}]
- apiVersion: discovery.k8s.io/v1
  kind: EndpointSlice
  metadata: {name: b, namespace: beta, labels: {kubernetes.io/service-name: beta-web}}
  addressType: IPv4
  ports: [{port: 8080}]
  endpoints: [{addresses: ["10.0.9.2"]}]
- apiVersion: discovery.k8s.io/v1
  kind: EndpointSlice
  metadata: {name: f, namespace: beta, labels: {kubernetes.io/service-name: beta-fallback}}
  addressType: IPv4
  ports: [{port: 8080}]
  endpoints: [{addresses: ["10.0.9.3"]}]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: site, namespace: beta, creationTimestamp: "2024-01-01T00:00:00Z"}
spec:
  ingressClassName: kuryr
  defaultBackend: {service: {name: beta-fallback, port: {number: 80}}}
  rules:
  - host: b.example.com
    http:
      paths:
      - {path: /shop, pathType: Prefix, backend: {service: {name: beta-web, port: {number: 80}}}}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: site, namespace: alpha, creationTimestamp: "2024-02-01T00:00:00Z"}
spec:
  ingressClassName: kuryr
  rules:
  - host: a.example.com
    http:
      paths:
      - {path: /app, pathType: Prefix, backend: {service: {name: alpha-web, port: {number: 80}}}}
"#;

const TENANT_REQUESTS: &[(&str, &str, &str)] = &[
    ("a.example.com", "/app/x", "alpha-web"),
    ("a.example.com", "/other", "503"),
    ("unknown.example.com", "/", "503"),
    ("b.example.com", "/shop", "beta-web"),
    ("b.example.com", "/other", "beta-fallback"),
];

#[tokio::test(flavor = "multi_thread")]
async fn a_tenants_unmatched_paths_never_reach_another_tenants_default_backend() {
    if !enabled() {
        return;
    }
    with_router("tenants", |r| async move {
        let mut inputs = Inputs::default();
        load_str(TENANTS, Path::new("tenants.yaml"), &mut inputs).unwrap();
        let desired = translate(&inputs, &options("kuryr"));
        assert!(desired.warnings.is_empty(), "{:?}", desired.warnings);
        let t = std::time::Instant::now();
        let report = converge(&r, &desired).await;
        assert_routes(&report.lb_id, &desired, TENANT_REQUESTS);
        println!("tenants case: {:?}", t.elapsed());
    })
    .await;
}
