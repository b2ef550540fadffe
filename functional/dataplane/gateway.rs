//! The Gateway API core HTTPRoute conformance tests through the data plane: every case of
//! `tests/fixtures/gateway/cases/` with a request table (the expected answers read from the
//! upstream Go tests, see `tests/it/gateway_conformance.rs`) is translated (`gateway::build` →
//! `gateway::router`), created on the real Octavia, rendered by Octavia's own templater,
//! served by haproxy with echo servers for the Services and the shipped `status-responder` for
//! the reserved 404/500 pools, and its requests are sent for real.
//!
//! Fast, for the CI budget: the Gateways served on HTTP only are created as ONE load balancer in
//! one fully-populated create, each Gateway's HTTP listener (the driver's own create body,
//! `driver::populated_create`) on a port of its own with its pools renamed apart, so one render,
//! one haproxy and one run.py serve every case. A Gateway with an HTTPS listener (its
//! certificates go through Barbican) or with HTTP listeners on several ports (GatewayPort8080:
//! one Octavia HTTP listener per port) is converged by the driver on the test router first.
//!
//! Two tests, for the CI budget: the cases of [`CI_CASES`] (each declared feature once, see
//! there) run by default with `KURYR_FUNCTIONAL=1`; the other cases are opt-in
//! (`KURYR_GATEWAY_DATAPLANE=1`) and show as skipped without it. In each, the Gateways the driver
//! converges (HTTPS, several HTTP ports) go on one router, then the combined load balancer of the
//! HTTP-only ones on a second router (not at the same time: see [`run_scope`]).
//! `KURYR_GATEWAY_DATAPLANE_CASES=<test>,<test>` keeps only the named cases of each (e.g.
//! `GatewayWithAttachedRoutesWithPort8080`). A third test runs the project's own cases
//! (`tests/fixtures/gateway/own/`: the same format, behaviours no upstream test has a request
//! table for) the same way, on by default; they are never recorded for the conformance report.
//!
//! Strict answers: a Service name must be answered 200 by that Service's echo server; `404` and
//! `500` by the status responder (its body, never haproxy's 503); `<code> <prefix>` by a
//! redirect whose Location is the prefix followed by the request's path; `a|b` (a weighted rule)
//! by each of the named Services and by no other, over [`SPLIT_REQUESTS`] requests (the counts
//! are printed; the shares themselves are the unit-tested member-weight arithmetic's).
//!
//! The fixtures' Services get one synthetic ready endpoint each (the pure fixtures carry no
//! endpoints); the certificates of `tlsSecrets` are generated for the hosts the case serves.
//! The CA ConfigMaps of `caConfigMaps` are the suite's (`gateway_case::suite_ca`, a CA and the
//! client certificate it signed, as the upstream suite makes them); a request with
//! `clientCertOf` presents that CA's client certificate, and `refused` expects its TLS handshake
//! refused (no HTTP answer), as the upstream client certificate validation tests do.

use super::status_answers::{Responder, send_requests};
use super::{converge, repo, run_py_full};
use crate::common::{enabled, local_router, session};
use crate::gateway_case::{Case, CaseRequest, REFUSED, split, suite_ca};
use kuryr_l7_router::driver::populated_create;
use kuryr_l7_router::driver::router::Router;
use kuryr_l7_router::gateway::build::{Programmed, translate};
use kuryr_l7_router::gateway::router::{GatewayRouter, translate_gateway};
use kuryr_l7_router::gateway::world::{SecretInfo, World};
use kuryr_l7_router::model::{DesiredRouter, NOT_FOUND_POOL};
use kuryr_l7_router::openstack::Barbican;
use kuryr_l7_router::translate::manifest::load_str;
use kuryr_l7_router::translate::options::StatusResponder;
use kuryr_l7_router::translate::{Inputs, TranslateOptions};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Requests sent for one weighted request of the table: each named Service must answer some.
const SPLIT_REQUESTS: usize = 30;
/// Where the conformance client sends a request without a host: the Gateway's address.
const ADDRESS: &str = "192.0.2.10";

/// The cases whose requests do not all pass through the data plane yet, with why. The test
/// fails when one of them passes (the list must shrink) or another one fails.
const KNOWN_FAILING: &[(&str, &str)] = &[];

/// The status responder's Service with one ready endpoint serving its three ports.
const RESPONDER: &str = r#"
apiVersion: v1
kind: Service
metadata: {name: kuryr-status-responder, namespace: kuryr-l7-router}
spec:
  ports:
  - {name: not-found, port: 8404, targetPort: 8404}
  - {name: unavailable, port: 8503, targetPort: 8503}
  - {name: server-error, port: 8500, targetPort: 8500}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: kuryr-status-responder-1, namespace: kuryr-l7-router, labels: {kubernetes.io/service-name: kuryr-status-responder}}
addressType: IPv4
ports: [{name: not-found, port: 8404}, {name: unavailable, port: 8503}, {name: server-error, port: 8500}]
endpoints: [{addresses: ["10.0.99.1"], conditions: {ready: true}}]
"#;

fn options() -> TranslateOptions {
    TranslateOptions {
        status_responder: Some(StatusResponder {
            namespace: "kuryr-l7-router".into(),
            name: "kuryr-status-responder".into(),
            not_found_port: "not-found".into(),
            unavailable_port: "unavailable".into(),
            server_error_port: "server-error".into(),
        }),
        ..TranslateOptions::default()
    }
}

/// The synthetic endpoint's address of a Service, by its name: the same in every case (one echo
/// name each), and how a split pool's member tells which Service it is.
fn synthetic_address(ns: &str, name: &str) -> String {
    let hash = kuryr_l7_router::translate::names::fnv1a64(format!("{ns}/{name}").as_bytes());
    format!("10.77.{}.{}", hash >> 8 & 0xff, (hash & 0xff).max(1))
}

/// One ready endpoint (an address of its own) per Service without an EndpointSlice.
fn synthetic_endpoints(inputs: &mut Inputs) {
    let sliced: BTreeSet<(String, String)> = inputs
        .endpoint_slices
        .iter()
        .filter_map(|s| {
            let svc = s.metadata.labels.as_ref()?.get("kubernetes.io/service-name")?;
            Some((s.metadata.namespace.clone().unwrap_or_default(), svc.clone()))
        })
        .collect();
    let mut text = String::new();
    for s in &inputs.services {
        let (ns, name) =
            (s.metadata.namespace.clone().unwrap_or_default(), s.metadata.name.clone().unwrap_or_default());
        if sliced.contains(&(ns.clone(), name.clone())) {
            continue;
        }
        // Each Service port's target as the slice's port of the same name (one unnamed port:
        // what the unnamed Service ports then all take).
        let mut ports = Vec::new();
        for p in s.spec.as_ref().and_then(|p| p.ports.as_ref()).into_iter().flatten() {
            let target = match &p.target_port {
                Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(n)) => *n,
                _ => p.port,
            };
            match &p.name {
                Some(n) => ports.push(format!("{{name: {n}, port: {target}}}")),
                None if !ports.iter().any(|x: &String| !x.starts_with("{name")) => {
                    ports.push(format!("{{port: {target}}}"))
                }
                None => {}
            }
        }
        text.push_str(&format!(
            "---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {{name: {name}-dp, namespace: {ns}, labels: {{kubernetes.io/service-name: {name}}}}}\naddressType: IPv4\nports: [{}]\nendpoints: [{{addresses: [\"{}\"], conditions: {{ready: true}}}}]\n",
            ports.join(", "),
            synthetic_address(&ns, &name)
        ));
    }
    load_str(&text, Path::new("synthetic-endpoints.yaml"), inputs).unwrap();
}

/// A self-signed certificate for the hosts the conformance HTTPS Gateway serves.
fn tls_secret(ns: &str, name: &str) -> String {
    let hosts = ["example.org", "second-example.org", "*.wildcard.org"].map(String::from).to_vec();
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(hosts).unwrap();
    params.distinguished_name.push(rcgen::DnType::CommonName, "example.org");
    let crt = params.self_signed(&key).unwrap();
    kuryr_l7_router::testing::tls_secret_manifest(ns, name, &crt.pem(), &key.serialize_pem())
}

/// The case, the routers of its Gateways by (namespace, name), and the translation's notes.
fn load(file: &Path) -> (Case, BTreeMap<(String, String), GatewayRouter>) {
    let text = std::fs::read_to_string(file).unwrap();
    let base = std::fs::read_to_string(repo().join("tests/fixtures/gateway/base.yaml")).unwrap();
    let case: Case = serde_saphyr::from_str(text.split("\n---\n").next().unwrap()).unwrap();
    let mut world = World::default();
    world.add_yaml(&base).unwrap();
    world.add_yaml(&text).unwrap();
    let mut inputs = Inputs::default();
    for (what, t) in [("base.yaml", base.as_str()), ("case", text.as_str()), ("responder", RESPONDER)] {
        load_str(t, Path::new(what), &mut inputs).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    }
    for s in &case.tls_secrets {
        let (ns, name) = split(s);
        world.secrets.insert((ns.clone(), name.clone()), SecretInfo::Tls);
        load_str(&tls_secret(&ns, &name), Path::new("tls.yaml"), &mut inputs).unwrap();
    }
    // The suite's CAs, whose client certificates the requests present (`client_cert_of`).
    for c in &case.ca_config_maps {
        world.ca_config_maps.insert(split(c), Some(suite_ca(c).pem.as_str().into()));
    }
    synthetic_endpoints(&mut inputs);
    inputs.now = Some(std::time::SystemTime::now());
    let programmed: Programmed = world
        .gateways
        .iter()
        .map(|g| ((g.metadata.namespace.clone().unwrap(), g.metadata.name.clone().unwrap()), vec![ADDRESS.into()]))
        .collect();
    let t = translate(&world, &programmed);
    let opts = options();
    let routers = t
        .routers
        .iter()
        .map(|r| ((r.owner.namespace.clone(), r.owner.name.clone()), translate_gateway(r, &inputs, &opts)))
        .collect();
    (case, routers)
}

/// The client certificate and key files of the suite's client of CA ConfigMap `ca`, written in
/// `keys` (a private directory of the run): run.py's `client_cert` and `client_key`.
fn client_files(ca: &str, keys: &Path) -> (String, String) {
    let pki = suite_ca(ca);
    let (ns, name) = split(ca);
    let write = |ext: &str, text: &str| {
        let p = keys.join(format!("{ns}_{name}.{ext}"));
        std::fs::write(&p, text).unwrap();
        p.to_string_lossy().into_owned()
    };
    (write("crt", &pki.client_cert), write("key", &pki.client_key))
}

/// Whether the router has an HTTPS listener on `port` (its first one, or one of its more ports).
fn serves_https(desired: &DesiredRouter, port: u16) -> bool {
    desired.https.as_ref().is_some_and(|h| h.port == port) || desired.more_https.contains_key(&port)
}

fn request_json(r: &CaseRequest, router: &GatewayRouter, keys: &Path) -> Value {
    let port = r.port.unwrap_or(80);
    let https = serves_https(&router.desired, port);
    let mut headers = serde_json::Map::new();
    for (k, v) in &r.headers {
        headers.insert(k.clone(), v.clone().into());
    }
    let mut one = json!({"scheme": if https { "https" } else { "http" }, "listener_port": port,
           "host": r.host.clone().unwrap_or_else(|| ADDRESS.into()), "path": r.path, "headers": headers});
    if r.websocket {
        // run.py upgrades the connection and sends the upstream test's text and binary frames.
        one["websocket"] = true.into();
    }
    if let Some(ca) = &r.client_cert_of {
        let (crt, key) = client_files(ca, keys);
        one["client_cert"] = crt.into();
        one["client_key"] = key.into();
    }
    one
}

/// The environment variable that turns this test on (beside `KURYR_FUNCTIONAL=1`).
const OPT_IN: &str = "KURYR_GATEWAY_DATAPLANE";

/// The listener port of the `i`-th Gateway on the combined load balancer.
const FIRST_PORT: u16 = 10_000;

/// One Gateway of one case: its router and the table's requests to it.
struct Target {
    test: String,
    router: GatewayRouter,
    table: Vec<CaseRequest>,
}

/// The selected cases whose table restates our answer instead of the upstream test's
/// ([`Case::diverges`]), with why: recorded failed for the report whatever the data plane gives.
type Diverging = BTreeMap<String, String>;

/// Every case's Gateways with requests; the cases whose table names a Gateway without a router
/// (or a port it should not listen on) are failures already, with why.
fn targets(scope: Scope) -> (Vec<Target>, BTreeMap<String, Vec<String>>, Diverging) {
    let mut out = Vec::new();
    let mut failing: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut diverging = Diverging::new();
    let files = if scope == Scope::Own { own_case_files() } else { case_files() };
    for file in files {
        let (case, mut routers) = load(&file);
        if !selected(&case.test, scope) {
            continue;
        }
        if let Some(why) = &case.diverges {
            diverging.insert(case.test.clone(), why.clone());
        }
        let mut by_gateway: BTreeMap<(String, String), Vec<CaseRequest>> = BTreeMap::new();
        for q in &case.requests {
            by_gateway.entry(split(q.gateway.as_deref().unwrap_or("same-namespace"))).or_default().push(q.clone());
        }
        for (gw, table) in by_gateway {
            let Some(router) = routers.remove(&gw) else {
                failing.entry(case.test.clone()).or_default().push(format!("Gateway {}/{}: no router", gw.0, gw.1));
                continue;
            };
            assert_eq!(router.desired.default_pool.as_deref(), Some(NOT_FOUND_POOL), "{}: 404 by default", case.test);
            // A request to a port the router must not listen on: nothing to send, only checked.
            let (absent, table): (Vec<CaseRequest>, Vec<CaseRequest>) =
                table.into_iter().partition(|q| q.answer.starts_with("no listener on port"));
            for q in absent {
                let port = q.port.unwrap_or(80);
                let served = router.http_port == Some(port) || router.desired.more_http.contains_key(&port);
                if serves_https(&router.desired, port) || served {
                    failing
                        .entry(case.test.clone())
                        .or_default()
                        .push(format!("port {port}: a listener, expected none"));
                }
            }
            let t = Target { test: case.test.clone(), router, table };
            // The driver's test router listens on 80; the combined load balancer gives each
            // Gateway a port of its own, whatever its HTTP port (e.g. a Gateway on 8080 only).
            let port = t.router.http_port;
            assert!(
                !converged_by_driver(&t) || port.is_none_or(|p| p == 80),
                "{}: the test router listens on 80",
                t.test
            );
            out.push(t);
        }
    }
    (out, failing, diverging)
}

/// Whether the driver converges the target on the test router: some of its requests go to its
/// HTTPS listener (certificates through Barbican), or it has more than one HTTP listener (the
/// combined load balancer gives each Gateway one listener).
fn converged_by_driver(t: &Target) -> bool {
    let https = t.table.iter().any(|q| q.port.is_some_and(|p| serves_https(&t.router.desired, p)));
    https || !t.router.desired.more_http.is_empty()
}

/// The environment variable naming the only cases to run (comma-separated test names).
const ONLY: &str = "KURYR_GATEWAY_DATAPLANE_CASES";

/// The cases the CI runs by default, each with what it proves that no other case of the list
/// does: together every declared feature with a request table and each kind of Octavia mapping
/// (the data plane's cost is the load balancer's create, about proportional to its listeners and
/// pools, so the list is as short as that allows). The other cases repeat these mappings with
/// other values; they run in the opt-in test. Two declared features' cases are opt-in:
/// HTTPRouteListenerPortMatching (HTTPRouteParentRefPort), a Gateway on three HTTP ports that the
/// driver converges (about 80 s); its Octavia mapping, a route on one port's listener only, is
/// GatewayWithAttachedRoutesWithPort8080's, and the port selection is the attachment's (pure).
/// GatewayFrontendClientCertificateValidation, two HTTPS listeners with a client CA each that the
/// driver converges (three Barbican secrets, two listeners, their policies: tens of seconds); its
/// Octavia mapping and the same kinds of requests (each port's own CA's client served, the other
/// CA's refused) run by default in `client_ca::two_https_ports_validate_client_certificates_...`,
/// and the translation from the upstream manifests is the fixtures' (pure) and
/// `gateway_client_ca_driver`'s (fake Octavia).
pub(crate) const CI_CASES: &[(&str, &str)] = &[
    (
        "HTTPRouteMatching",
        "PathPrefix on whole path elements (/v2example is not /v2), header Exact, several matches per rule (OR)",
    ),
    ("HTTPRoutePathMatchOrder", "Exact before PathPrefix, the longest prefix first"),
    ("HTTPRouteHeaderMatching", "several headers in one match (AND), the match with more headers first"),
    (
        "HTTPRouteMatchingAcrossRoutes",
        "precedence across two routes, route hostnames as HOST_NAME rules, the responder's 404",
    ),
    ("HTTPRouteListenerHostnameMatching", "listener hostnames, exact and wildcard, on one port"),
    (
        "GatewayHTTPListenerIsolation",
        "GatewayHTTPListenerIsolation: a request reaches only the most specific listener's routes (inverted HOST_NAME rules)",
    ),
    ("HTTPRouteWeight", "backendRef weights: one split pool, weight 0 never answers"),
    (
        "HTTPRoutePartiallyInvalidViaInvalidReferenceGrant",
        "ReferenceGrant: the granted cross-namespace Service answers, the refused rule answers the responder's 500",
    ),
    ("HTTPRouteRedirectHostAndStatus", "the RequestRedirect filter: hostname and statusCode"),
    (
        "HTTPRouteRedirectScheme",
        "SchemeRedirect (declared): a redirect keeping the request's host, served per known name of the Gateway",
    ),
    ("HTTPRouteHTTPSListener", "an HTTPS listener: a kubernetes.io/tls Secret through Barbican, SNI"),
    ("GatewayWithAttachedRoutesWithPort8080", "GatewayPort8080: a second HTTP listener on the load balancer"),
    ("HTTPRouteNamedRule", "HTTPRouteNamedRouteRule: a rule with a name is served as any rule"),
    (
        "HTTPRouteInvalidParentRefNotMatchingListenerPort",
        "HTTPRouteDestinationPortMatching: a route whose parentRef port no listener has is not served",
    ),
    (
        "HTTPRouteBackendProtocolWebSocket",
        "HTTPRouteBackendProtocolWebSocket: an Upgrade through haproxy, a text and a binary frame echoed",
    ),
];

/// Which cases a test runs: the CI's or the others (of the upstream tests), or the project's
/// own (tests/fixtures/gateway/own/).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Scope {
    Ci,
    Others,
    Own,
}

/// Whether the case `test` runs in `scope` (and is named by [`ONLY`] when it is set).
fn selected(test: &str, scope: Scope) -> bool {
    let ci = CI_CASES.iter().any(|(t, _)| *t == test);
    let named = std::env::var(ONLY).map_or(true, |only| only.split(',').any(|t| t.trim() == test));
    named && (scope == Scope::Own || ci == (scope == Scope::Ci))
}

/// run.py's requests of a target's table (a weighted answer [`SPLIT_REQUESTS`] times), sent to
/// `port` when set (its listener on the combined load balancer), and each table row's span;
/// client certificates are written in `keys`.
fn requests_of(t: &Target, port: Option<u16>, keys: &Path) -> (Vec<Value>, Vec<std::ops::Range<usize>>) {
    let (mut requests, mut spans) = (Vec::new(), Vec::new());
    for q in &t.table {
        let copies = if q.answer.contains('|') { SPLIT_REQUESTS } else { 1 };
        let mut one = request_json(q, &t.router, keys);
        if let Some(p) = port {
            one["listener_port"] = p.into();
        }
        spans.push(requests.len()..requests.len() + copies);
        requests.extend(std::iter::repeat_n(one, copies));
    }
    (requests, spans)
}

/// Why the answers to one table request are not the expected one, or None.
fn verdict(r: &CaseRequest, results: &[Value]) -> Option<String> {
    let one = &results[0];
    let status = one["status"].as_u64().unwrap_or(0);
    let body = one["body"].as_str().unwrap_or_default();
    let error = one["error"].as_str().unwrap_or_default();
    let bad = |what: &str| Some(format!("{status} {} {body:?} {error}, expected {what}", one["backend"]));
    if r.answer == REFUSED {
        // No HTTP answer: the handshake (or the first read, TLS 1.3 sends the alert after the
        // client's Finished) fails, as `MakeTLSRequestAndExpectFailureResponse` expects. A TCP
        // connection refused is no listener on the port, not a refused certificate.
        let refused = !one["status"].is_u64() && !error.is_empty() && !error.starts_with("ConnectionRefusedError");
        return (!refused).then(|| bad("the TLS handshake refused")).flatten();
    }
    if r.websocket {
        // 101, the right Sec-WebSocket-Accept and both frames echoed (run.py's send_websocket
        // names the backend only then), by the Service's echo server.
        return (status != 101 || one["backend"] != r.answer.as_str())
            .then(|| bad(&format!("a WebSocket upgraded and echoed by {}", r.answer)))
            .flatten();
    }
    match r.answer.as_str() {
        "404" => {
            (status != 404 || !body.contains("no route for host")).then(|| bad("404 from the responder")).flatten()
        }
        "500" => {
            (status != 500 || !body.contains("has no valid backend")).then(|| bad("500 from the responder")).flatten()
        }
        a if a.contains('|') => {
            let want: BTreeSet<&str> = a.split('|').collect();
            let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
            for x in results {
                *counts.entry(x["backend"].as_str().unwrap_or("(none)")).or_default() += 1;
            }
            println!("    split answers: {counts:?}");
            let got: BTreeSet<&str> = counts.keys().copied().collect();
            (want != got).then(|| format!("answered by {got:?} over {} requests, expected {want:?}", results.len()))
        }
        a => match a.split_once(' ') {
            Some((code, prefix)) => {
                let location = format!("{prefix}{}", r.path);
                (status.to_string() != code || one["location"] != location.as_str())
                    .then(|| format!("{status} to {}, expected {code} to {location}", one["location"]))
            }
            None => (status != 200 || one["backend"] != a).then(|| bad(&format!("200 from {a}"))).flatten(),
        },
    }
}

/// Records each table row's verdict on `failing` and prints it.
fn tally(
    t: &Target,
    results: &[Value],
    spans: Vec<std::ops::Range<usize>>,
    failing: &mut BTreeMap<String, Vec<String>>,
) {
    for (q, span) in t.table.iter().zip(spans) {
        let why = verdict(q, &results[span]);
        let client = q.client_cert_of.as_deref().map(|c| format!(" (client certificate of {c})")).unwrap_or_default();
        let what = format!("{:?}:{} {} {:?}{client} -> {}", q.host, q.port.unwrap_or(80), q.path, q.headers, q.answer);
        let mark = if why.is_none() { "ok " } else { "BAD" };
        println!("{mark} {}: {what}{}", t.test, why.as_deref().map(|w| format!(": {w}")).unwrap_or_default());
        if let Some(w) = why {
            failing.entry(t.test.clone()).or_default().push(format!("{what}: {w}"));
        }
    }
}

/// The HTTP-only targets as one load balancer: each one's HTTP listener on its own port.
fn combined_body(
    spec: &kuryr_l7_router::driver::RouterSpec,
    targets: &[&Target],
) -> kuryr_l7_router::openstack::octavia_requests::LoadBalancerCreate {
    let subnet = spec.vip_subnet_id.clone().expect("the test router's VIP subnet");
    let mut body = populated_create(spec, &subnet, &DesiredRouter::default());
    body.listeners.clear();
    body.pools.clear();
    for (i, t) in targets.iter().enumerate() {
        let apart = |n: &str| format!("c{i}:{n}");
        let one = populated_create(spec, &subnet, &t.router.desired);
        let mut l = one.listeners.into_iter().next().expect("the HTTP listener");
        l.protocol_port = FIRST_PORT + u16::try_from(i).unwrap();
        l.name = l.name.map(|n| apart(&n));
        if let Some(d) = l.default_pool.as_mut() {
            d.name = apart(&d.name);
        }
        for p in &mut l.l7policies {
            if let Some(d) = p.redirect_pool.as_mut() {
                d.name = apart(&d.name);
            }
        }
        body.listeners.push(l);
        body.pools.extend(one.pools.into_iter().map(|mut p| {
            p.name = p.name.map(|n| apart(&n));
            p
        }));
    }
    body
}

/// Member `address:port` → its echo name (the Service) or the responder's port (reserved pools).
fn backends_of(
    targets: &[&Target],
    responder: &Responder,
) -> (BTreeMap<String, String>, serde_json::Map<String, Value>) {
    let mut echo = BTreeMap::new();
    let mut member_map = serde_json::Map::new();
    for p in targets.iter().flat_map(|t| t.router.desired.pools.values()) {
        for m in &p.members {
            let addr = format!("{}:{}", m.address, m.protocol_port);
            match responder.port_of(&p.name) {
                Some(port) => {
                    member_map.insert(addr, format!("127.0.0.1:{port}").into());
                }
                None => {
                    // A split pool's member is the Service whose synthetic address it has.
                    let service = p
                        .split
                        .iter()
                        .find(|f| synthetic_address(&f.service.namespace, &f.service.name) == m.address.to_string())
                        .map_or(&p.service, |f| &f.service);
                    let prev = echo.insert(addr.clone(), service.name.clone());
                    assert!(prev.is_none_or(|n| n == service.name), "{addr}: two Services");
                }
            }
        }
    }
    (echo, member_map)
}

/// The verdict: every case passes but the known failing ones, which must still fail. `upstream`:
/// the cases are upstream tests, recorded for the conformance report (the project's own are
/// not: the report counts upstream tests only); a diverging case (its table states our answers,
/// e.g. GatewayFrontendClientCertificateValidationInsecureFallback's refused certificate of
/// another CA) must give our answers, and is recorded failed with why.
fn finish(cases: &BTreeSet<&str>, failing: &BTreeMap<String, Vec<String>>, diverging: &Diverging, upstream: bool) {
    println!("gateway data plane: {}/{} cases pass", cases.len() - failing.len(), cases.len());
    for (t, why) in diverging.iter().filter(|(t, _)| cases.contains(t.as_str())) {
        println!("  diverges from its upstream test (our answers checked, recorded failed): {t}: {why}");
    }
    // For the conformance report (functional/conformance-report.sh), when it asks.
    for case in cases.iter().filter(|_| upstream) {
        let errors = failing.get(*case).map_or(&[][..], Vec::as_slice);
        crate::gateway_case::record_result(case, diverging.get(*case).map(String::as_str), "dataplane", errors);
    }
    // Only the known failures among the cases run here.
    let known_run: Vec<&(&str, &str)> = KNOWN_FAILING.iter().filter(|(t, _)| cases.contains(t)).collect();
    let known: BTreeSet<&str> = known_run.iter().map(|(t, _)| *t).collect();
    for (t, why) in known_run {
        println!("  known failing: {t}: {why}");
    }
    let unexpected: Vec<String> = failing
        .iter()
        .filter(|(t, _)| !known.contains(t.as_str()))
        .map(|(t, b)| format!("{t}:\n  {}", b.join("\n  ")))
        .collect();
    assert!(unexpected.is_empty(), "{} case(s) fail:\n{}", unexpected.len(), unexpected.join("\n"));
    let failed: BTreeSet<&str> = failing.keys().map(String::as_str).collect();
    let fixed: Vec<&&str> = known.difference(&failed).collect();
    assert!(fixed.is_empty(), "{fixed:?} pass now: remove them from KNOWN_FAILING");
}

fn case_files() -> Vec<PathBuf> {
    files_of("tests/fixtures/gateway/cases")
}

/// The project's own cases: the same format, no upstream test (see their files).
fn own_case_files() -> Vec<PathBuf> {
    files_of("tests/fixtures/gateway/own")
}

fn files_of(dir: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(repo().join(dir)).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    files
}

/// Failures by case, as [`tally`] records them.
type Failing = BTreeMap<String, Vec<String>>;

/// The targets the driver converges, one after the other on `r`: each one's requests sent.
async fn run_converged(r: Router, targets: Vec<Target>, responder: Arc<Responder>, keys: PathBuf) -> Failing {
    let mut failing = Failing::new();
    for t in &targets {
        let report = converge(&r, &t.router.desired).await;
        let (requests, spans) = requests_of(t, None, &keys);
        let results = tokio::task::block_in_place(|| {
            send_requests(&report.lb_id, &t.router.desired, Some(&responder), &requests)
        });
        tally(t, &results, spans, &mut failing);
    }
    failing
}

/// The HTTP-only targets as one load balancer on `r` (one create, one render, one run.py).
async fn run_combined(r: Router, http: Vec<Target>, responder: Arc<Responder>, keys: PathBuf) -> Failing {
    let mut failing = Failing::new();
    if http.is_empty() {
        return failing;
    }
    let http: Vec<&Target> = http.iter().collect();
    let body = combined_body(r.spec(), &http);
    let t0 = std::time::Instant::now();
    let lb = r.octavia().create_load_balancer_within(&body, Duration::from_secs(600)).await.expect("create");
    r.octavia().wait_active(&lb.id, Duration::from_secs(600)).await.expect("ACTIVE");
    println!(
        "combined load balancer: {} listeners, {} pools: created in {:.0}s",
        body.listeners.len(),
        body.pools.len(),
        t0.elapsed().as_secs_f64()
    );
    let (echo, member_map) = backends_of(&http, &responder);
    let mut requests = Vec::new();
    let mut spans = Vec::new();
    for (i, t) in http.iter().enumerate() {
        let (rs, sp) = requests_of(t, Some(FIRST_PORT + u16::try_from(i).unwrap()), &keys);
        spans.push(sp.into_iter().map(|s| s.start + requests.len()..s.end + requests.len()).collect::<Vec<_>>());
        requests.extend(rs);
    }
    let t0 = std::time::Instant::now();
    let (result, _) = tokio::task::block_in_place(|| run_py_full(&lb.id, &echo, Some(&member_map), &requests));
    println!("{} requests through haproxy in {:.0}s", requests.len(), t0.elapsed().as_secs_f64());
    let results = result["results"].as_array().expect("results");
    for (t, sp) in http.iter().zip(spans) {
        tally(t, results, sp, &mut failing);
    }
    failing
}

/// Runs the cases of `scope`: the driver's Gateways on one router, then the combined load
/// balancer on another, then the verdict.
async fn run_scope(scope: Scope, tag: &str) {
    let (targets, mut failing, diverging) = targets(scope);
    if targets.is_empty() && failing.is_empty() {
        crate::common::skipped(&format!("no case selected ({ONLY})"));
        return;
    }
    let cases: BTreeSet<String> = targets.iter().map(|t| t.test.clone()).chain(failing.keys().cloned()).collect();
    let responder = Arc::new(Responder::start());
    let driven =
        local_router(&format!("{tag}-drv"), "gateway").await.with_barbican(Barbican::new(session("admin", "admin")));
    let combined = local_router(&format!("{tag}-all"), "gateway").await;
    let cluster = driven.spec().ownership.cluster.clone();
    let started = std::time::Instant::now();
    let (by_driver, http): (Vec<Target>, Vec<Target>) = targets.into_iter().partition(converged_by_driver);
    // One after the other: Octavia's API does not answer the driver's writes (no answer within
    // 30 s) while its worker creates the combined load balancer (measured 2026-11-26).
    // The client certificates' keys: a private directory, removed when the run ends.
    let keys = tempfile::tempdir().expect("a directory for the client keys");
    let dir = keys.path().to_path_buf();
    let one = tokio::spawn(run_converged(driven.clone(), by_driver, responder.clone(), dir.clone())).await;
    let two = tokio::spawn(run_combined(combined.clone(), http, responder.clone(), dir)).await;
    drop(keys);
    crate::common::cleanup(&driven).await;
    crate::common::cleanup(&combined).await;
    super::delete_cluster_secrets(&cluster).await;
    println!("gateway data plane run: {:.0}s", started.elapsed().as_secs_f64());
    for part in [one, two] {
        match part {
            Ok(f) => f.into_iter().for_each(|(t, why)| failing.entry(t).or_default().extend(why)),
            Err(e) => std::panic::resume_unwind(e.into_panic()),
        }
    }
    finish(&cases.iter().map(String::as_str).collect(), &failing, &diverging, scope != Scope::Own);
}

/// The CI's cases ([`CI_CASES`]): on by default with the other functional tests.
#[tokio::test(flavor = "multi_thread")]
async fn gateway_api_conformance_ci_cases_through_octavia_rendered_haproxy() {
    if !enabled() {
        return;
    }
    run_scope(Scope::Ci, "gwci").await;
}

/// Every other case with a request table: opt-in, for the CI budget.
#[tokio::test(flavor = "multi_thread")]
async fn gateway_api_conformance_other_cases_through_octavia_rendered_haproxy() {
    if !enabled() {
        return;
    }
    if std::env::var(OPT_IN).as_deref() != Ok("1") {
        crate::common::skipped(&format!("set {OPT_IN}=1: the cases beyond the CI's, several minutes more"));
        return;
    }
    run_scope(Scope::Others, "gwall").await;
}

/// The project's own cases (tests/fixtures/gateway/own/), e.g. issue 33's keep-the-host
/// redirect on a ListenerSet's wildcard listener: on by default (one small load balancer).
#[tokio::test(flavor = "multi_thread")]
async fn gateway_api_own_cases_through_octavia_rendered_haproxy() {
    if !enabled() {
        return;
    }
    run_scope(Scope::Own, "gwown").await;
}

#[path = "gateway_tests.rs"]
mod tests;
