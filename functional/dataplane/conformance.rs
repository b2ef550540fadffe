//! The public Ingress conformance suite (kubernetes-sigs/ingress-controller-conformance,
//! `features/*.feature`), every feature, as a data-plane test: the scenarios are transcribed
//! below and in `tests/fixtures/conformance/` (our own form; see its README), translated with the
//! **default** kuryr.conf as shipped (`etc/manifests/configmap.yaml`: every option not set there
//! at its default), converged on the real Octavia, and sent as real requests through
//! Octavia-rendered haproxy, with the shipped `status-responder` serving the reserved pools.
//!
//! Strict: a scenario expecting 404 passes only on a 404 from the responder (its body), never
//! on Octavia's or haproxy's 503. Each feature runs alone on the router (the suite gives each
//! its own namespace and Ingress; run together, `default_backend`'s catch-all would answer the
//! other features' 404 scenarios), one router for all, converged from one feature to the next.
//! The only difference allowed: the `Server` response header, which Octavia's haproxy cannot
//! add (here it comes from the echo server, when it sets one). "The Ingress status shows the IP
//! address" is checked against the fake API server (`tests/conformance_status.rs`).

use super::status_answers::{Responder, send_requests};
use super::{converge, repo};
use crate::common::{enabled, local_router, session};
use kuryr_l7_router::model::{DesiredRouter, NOT_FOUND_POOL};
use kuryr_l7_router::openstack::Barbican;
use kuryr_l7_router::translate::manifest::load_str;
use kuryr_l7_router::translate::{Inputs, TranslateOptions, load_manifests, translate};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::path::Path;

/// What a scenario expects.
#[derive(Clone, Copy, Debug)]
enum Expect {
    /// 200 from this Service.
    Service(&'static str),
    /// 404 from the status responder.
    NotFound,
}

/// One request of a scenario: (method, scheme, host, path, expectation). An empty host is the
/// suite's `http://""/...`: the router's address.
type Request = (&'static str, &'static str, &'static str, &'static str, Expect);

/// One scenario: its feature file, its name (with the Examples row for outlines), the request.
struct Scenario {
    feature: &'static str,
    name: &'static str,
    request: Request,
}

use Expect::{NotFound, Service};

const fn sc(feature: &'static str, name: &'static str, request: Request) -> Scenario {
    Scenario { feature, name, request }
}

const DEFAULT_BACKEND: &str = "default_backend";
const HOST_RULES: &str = "host_rules";
const PATH_RULES: &str = "path_rules";
const INGRESS_CLASS: &str = "ingress_class";
const LOAD_BALANCING: &str = "load_balancing";

/// `features/<feature>.feature` → scenarios. Outline rows are one scenario each.
const SCENARIOS: &[Scenario] = &[
    // default_backend.feature: "An Ingress with no rules should send all requests to the default
    // backend" (Scenario Outline, 6 Examples rows).
    sc(DEFAULT_BACKEND, "no rules: GET my-host /", ("GET", "http", "my-host", "/", Service("echo-service"))),
    sc(
        DEFAULT_BACKEND,
        "no rules: GET my-host /sub-path",
        ("GET", "http", "my-host", "/sub-path", Service("echo-service")),
    ),
    sc(DEFAULT_BACKEND, "no rules: POST some-host /", ("POST", "http", "some-host", "/", Service("echo-service"))),
    sc(DEFAULT_BACKEND, "no rules: PUT (no host) /resource", ("PUT", "http", "", "/resource", Service("echo-service"))),
    sc(
        DEFAULT_BACKEND,
        "no rules: DELETE some-host /resource",
        ("DELETE", "http", "some-host", "/resource", Service("echo-service")),
    ),
    sc(
        DEFAULT_BACKEND,
        "no rules: PATCH my-host /resource",
        ("PATCH", "http", "my-host", "/resource", Service("echo-service")),
    ),
    // host_rules.feature
    sc(
        HOST_RULES,
        "host rule: TLS traffic to the matching backend",
        ("GET", "https", "foo.bar.com", "/", Service("foo-bar-com")),
    ),
    sc(
        HOST_RULES,
        "host rule: traffic to the matching backend",
        ("GET", "http", "foo.bar.com", "/", Service("foo-bar-com")),
    ),
    sc(
        HOST_RULES,
        "host rule: no route when the hostname does not match",
        ("GET", "http", "subdomain.bar.com", "/", NotFound),
    ),
    sc(
        HOST_RULES,
        "wildcard host rule: traffic to the matching backend",
        ("GET", "http", "bar.foo.com", "/", Service("wildcard-foo-com")),
    ),
    sc(
        HOST_RULES,
        "wildcard host rule: not more than a single DNS label",
        ("GET", "http", "baz.bar.foo.com", "/", NotFound),
    ),
    sc(HOST_RULES, "wildcard host rule: not no DNS label", ("GET", "http", "foo.com", "/", NotFound)),
    // path_rules.feature
    sc(PATH_RULES, "exact: /foo matches /foo", ("GET", "http", "exact-path-rules", "/foo", Service("foo-exact"))),
    sc(PATH_RULES, "exact: no trailing slash match", ("GET", "http", "exact-path-rules", "/foo/", NotFound)),
    sc(PATH_RULES, "exact: case sensitive", ("GET", "http", "exact-path-rules", "/FOO", NotFound)),
    sc(PATH_RULES, "exact: no other label", ("GET", "http", "exact-path-rules", "/bar", NotFound)),
    sc(PATH_RULES, "prefix: /foo matches /foo", ("GET", "http", "prefix-path-rules", "/foo", Service("foo-prefix"))),
    sc(
        PATH_RULES,
        "prefix: ignores the request trailing slash",
        ("GET", "http", "prefix-path-rules", "/foo/", Service("foo-prefix")),
    ),
    sc(PATH_RULES, "prefix: case sensitive", ("GET", "http", "prefix-path-rules", "/FOO", NotFound)),
    sc(
        PATH_RULES,
        "prefix: longest path, /aaa/bbb",
        ("GET", "http", "prefix-path-rules", "/aaa/bbb", Service("aaa-slash-bbb-prefix")),
    ),
    sc(
        PATH_RULES,
        "prefix: longest path and subpaths, /aaa/bbb/ccc",
        ("GET", "http", "prefix-path-rules", "/aaa/bbb/ccc", Service("aaa-slash-bbb-prefix")),
    ),
    sc(
        PATH_RULES,
        "prefix: /aaa matches /aaa/ccc",
        ("GET", "http", "prefix-path-rules", "/aaa/ccc", Service("aaa-prefix")),
    ),
    sc(
        PATH_RULES,
        "prefix: each label's string prefix, not /aaaccc",
        ("GET", "http", "prefix-path-rules", "/aaaccc", NotFound),
    ),
    sc(
        PATH_RULES,
        "prefix: ignores the request trailing slash (again)",
        ("GET", "http", "prefix-path-rules", "/foo/", Service("foo-prefix")),
    ),
    sc(PATH_RULES, "mixed: Exact preferred", ("GET", "http", "mixed-path-rules", "/foo", Service("foo-exact"))),
    sc(
        PATH_RULES,
        "trailing slash prefix /aaa/bbb/ matches /aaa/bbb",
        ("GET", "http", "trailing-slash-path-rules", "/aaa/bbb", Service("aaa-slash-bbb-slash-prefix")),
    ),
    sc(
        PATH_RULES,
        "trailing slash prefix /aaa/bbb/ matches /aaa/bbb/",
        ("GET", "http", "trailing-slash-path-rules", "/aaa/bbb/", Service("aaa-slash-bbb-slash-prefix")),
    ),
    sc(
        PATH_RULES,
        "trailing slash exact /foo/ does not match /foo",
        ("GET", "http", "trailing-slash-path-rules", "/foo", NotFound),
    ),
    // ingress_class.feature: the suite checks the status only (tests/conformance_status.rs); the
    // data plane must not route the Ingress either.
    sc(INGRESS_CLASS, "invalid class: not routed", ("GET", "http", "ingress-class", "/", NotFound)),
];

/// load_balancing.feature: 100 requests, all 200 from echo-service, answered by 10 pods.
const LB_REQUESTS: usize = 100;
const LB_PODS: usize = 10;

/// The translation options of the shipped kuryr.conf (every other option at its default).
fn shipped_options() -> TranslateOptions {
    let text = std::fs::read_to_string(repo().join("etc/manifests/configmap.yaml")).unwrap();
    let cm: Value = serde_saphyr::from_str(&text).expect("configmap.yaml");
    let conf = cm["data"]["kuryr.conf"].as_str().expect("kuryr.conf in the ConfigMap").to_string();
    // The credential comes from a Secret as an environment variable in the Deployment.
    let env = vec![("KURYR_NEUTRON__PASSWORD".to_string(), "unused".to_string())];
    let loaded =
        kuryr_l7_router::config::load_texts(&[("configmap.yaml".into(), conf)], env).expect("shipped kuryr.conf");
    kuryr_l7_router::wiring::translate_options(&loaded.settings)
}

/// The Kubernetes objects of one feature: our class, the responder's Service, the feature's.
fn feature_inputs(feature: &str) -> Inputs {
    let dir = repo().join("tests/fixtures/conformance");
    let files = ["class.yaml", "status_responder.yaml", &format!("{feature}.yaml")].map(|f| dir.join(f));
    let mut inputs = load_manifests(&files).unwrap_or_else(|e| panic!("{feature}: {e}"));
    if feature == HOST_RULES {
        // "Given a self-signed TLS secret named conformance-tls for the foo.bar.com hostname"
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(vec!["foo.bar.com".to_string()]).unwrap();
        params.distinguished_name.push(rcgen::DnType::CommonName, "foo.bar.com");
        let crt = params.self_signed(&key).unwrap();
        let secret = kuryr_l7_router::testing::tls_secret_manifest(
            "conformance-host-rules",
            "conformance-tls",
            &crt.pem(),
            &key.serialize_pem(),
        );
        load_str(&secret, Path::new("conformance-tls.yaml"), &mut inputs).unwrap();
    }
    inputs.now = Some(std::time::SystemTime::now());
    inputs
}

fn request_json((method, scheme, host, path, expect): &Request, address: &str) -> Value {
    let host = if host.is_empty() { address } else { host };
    let mut r = json!({"method": method, "scheme": scheme, "host": host, "path": path,
                       "headers": {"User-Agent": "Go-http-client/1.1"}});
    if let Service(svc) = expect {
        r["expect"] = (*svc).into();
    }
    r
}

/// Why a scenario's answer is not what the suite expects (strict), or None.
fn verdict(s: &Scenario, r: &Value) -> Option<String> {
    let (method, scheme, _, path, expect) = s.request;
    let status = r["status"].as_u64().unwrap_or(0);
    match expect {
        NotFound => {
            let body = r["body"].as_str().unwrap_or_default();
            (status != 404 || !body.contains("no route for host"))
                .then(|| format!("{status} {body:?}, expected 404 from the status responder"))
        }
        Service(svc) => {
            let body = &r["body"];
            let mut bad = Vec::new();
            if status != 200 || r["backend"] != svc {
                bad.push(format!("{status} from {}, expected 200 from {svc}", r["backend"]));
            }
            if r["proto"] != "HTTP/1.1" {
                bad.push(format!("response proto {}", r["proto"]));
            }
            let headers = r["headers"].as_object().cloned().unwrap_or_default();
            let has = |h: &str| headers.keys().any(|k| k.eq_ignore_ascii_case(h));
            // Server: the allowed difference (Octavia adds none); the others must be there.
            for h in ["Content-Length", "Content-Type", "Date"] {
                if !has(h) {
                    bad.push(format!("no {h} response header"));
                }
            }
            if body["method"] != method || body["proto"] != "HTTP/1.1" {
                bad.push(format!("request seen as {} {}", body["method"], body["proto"]));
            }
            if body["path"] != path {
                bad.push(format!("request path {}", body["path"]));
            }
            // haproxy passes header names on in lower case (HTX): names are case-insensitive.
            let request_headers = body["headers"].as_object().cloned().unwrap_or_default();
            let agent = request_headers.iter().find(|(k, _)| k.eq_ignore_ascii_case("User-Agent")).map(|(_, v)| v);
            if agent.is_none_or(|v| v != "Go-http-client/1.1") {
                bad.push(format!("request User-Agent {agent:?}"));
            }
            if s.feature == HOST_RULES && body["host"] != s.request.2 {
                bad.push(format!("request host {}", body["host"]));
            }
            if scheme == "https" {
                let tls = &r["tls"];
                let san = tls["san"].as_array().cloned().unwrap_or_default();
                if tls["subject_cn"] != "foo.bar.com" || !san.iter().any(|n| n == "foo.bar.com") {
                    bad.push(format!("certificate does not verify foo.bar.com: {tls}"));
                }
            }
            (!bad.is_empty()).then(|| bad.join("; "))
        }
    }
}

/// Converges `desired` and sends `requests` through the data plane with the responder.
async fn run(
    r: &kuryr_l7_router::driver::router::Router,
    desired: &DesiredRouter,
    responder: &Responder,
    requests: &[Value],
) -> Vec<Value> {
    let report = converge(r, desired).await;
    tokio::task::block_in_place(|| send_requests(&report.lb_id, desired, Some(responder), requests))
}

#[tokio::test(flavor = "multi_thread")]
async fn the_public_ingress_conformance_suite_passes_strict_with_the_default_configuration() {
    if !enabled() {
        return;
    }
    let opts = shipped_options();
    assert!(!opts.tls.ssl_redirect, "the default configuration does not redirect");
    assert!(opts.status_responder.is_some(), "the shipped kuryr.conf names the status responder");
    let responder = Responder::start();
    let router = local_router("fct-dp", "conformance").await.with_barbican(Barbican::new(session("admin", "admin")));
    let cluster = router.spec().ownership.cluster.clone();
    let started = std::time::Instant::now();
    crate::common::with_router(router, |r| async move {
        let address = "192.0.2.10"; // the suite's empty host: the router's address
        let mut tally: Vec<(&str, usize, usize)> = Vec::new();
        let mut failures = Vec::new();
        for feature in [DEFAULT_BACKEND, HOST_RULES, PATH_RULES, INGRESS_CLASS, LOAD_BALANCING] {
            let desired = translate(&feature_inputs(feature), &opts);
            let warnings: Vec<_> = desired.warnings.iter().filter(|w| w.object.kind == "Ingress").collect();
            assert!(warnings.is_empty(), "{feature}: {warnings:#?}");
            if feature == LOAD_BALANCING {
                let requests: Vec<Value> = (0..LB_REQUESTS)
                    .map(|_| request_json(&("GET", "http", "load-balancing", "/", Service("echo-service")), address))
                    .collect();
                let results = run(&r, &desired, &responder, &requests).await;
                let ok = results.iter().filter(|x| x["status"] == 200 && x["backend"] == "echo-service").count();
                let pods: BTreeSet<String> = results.iter().map(|x| x["body"]["port"].to_string()).collect();
                let pass = ok == LB_REQUESTS && pods.len() == LB_PODS;
                println!(
                    "{} {feature}: {ok}/{LB_REQUESTS} answered 200 by echo-service, {} pods",
                    if pass { "ok " } else { "BAD" },
                    pods.len()
                );
                if !pass {
                    failures.push(format!("{feature}: {ok} of {LB_REQUESTS} 200s, {} pods", pods.len()));
                }
                tally.push((feature, usize::from(pass), 1));
                continue;
            }
            if feature != DEFAULT_BACKEND {
                assert_eq!(desired.default_pool.as_deref(), Some(NOT_FOUND_POOL), "{feature}");
            }
            let scenarios: Vec<&Scenario> = SCENARIOS.iter().filter(|s| s.feature == feature).collect();
            let requests: Vec<Value> = scenarios.iter().map(|s| request_json(&s.request, address)).collect();
            let results = run(&r, &desired, &responder, &requests).await;
            let mut passed = 0;
            for (s, res) in scenarios.iter().zip(&results) {
                let (m, scheme, host, path, _) = s.request;
                match verdict(s, res) {
                    None => {
                        passed += 1;
                        println!("ok  {feature}: {} ({m} {scheme}://{host}{path})", s.name);
                    }
                    Some(why) => {
                        println!("BAD {feature}: {} ({m} {scheme}://{host}{path}): {why}", s.name);
                        failures.push(format!("{feature}: {}: {why}", s.name));
                    }
                }
            }
            tally.push((feature, passed, scenarios.len()));
        }
        let (passed, total) = tally.iter().fold((0, 0), |(p, t), (_, a, b)| (p + a, t + b));
        println!("conformance (strict, default kuryr.conf): {passed}/{total} scenarios");
        for (f, p, t) in &tally {
            println!("  {f}: {p}/{t}");
        }
        assert!(failures.is_empty(), "{} scenario(s) fail:\n{}", failures.len(), failures.join("\n"));
    })
    .await;
    println!("conformance run: {:.0}s", started.elapsed().as_secs_f64());
    super::delete_cluster_secrets(&cluster).await;
}
