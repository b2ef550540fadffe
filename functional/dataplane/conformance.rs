//! The public Ingress conformance suite (kubernetes-sigs/ingress-controller-conformance,
//! `features/*.feature`), every feature, as a data-plane test: the scenarios are transcribed
//! below and in `tests/fixtures/conformance/` (our own form; see its README), translated with the
//! **default** kuryr.conf as shipped (`etc/manifests/configmap.yaml`: every option not set there
//! at its default), built on the real Octavia, and sent as real requests through
//! Octavia-rendered haproxy, with the shipped `status-responder` serving the reserved pools.
//!
//! Strict: a scenario expecting 404 passes only on a 404 from the responder (its body), never
//! on Octavia's or haproxy's 503. Each feature runs alone on a router (the suite gives each
//! its own namespace and Ingress; run together, `default_backend`'s catch-all would answer the
//! other features' 404 scenarios): one router per feature, each made by one fully-populated
//! create of that feature's desired router (host_rules' HTTPS listener and its policies are
//! written after it, as for any new router with TLS), the five built and asked at the same time.
//! Converging each again must write nothing. 10 writes instead of 91, 70-90 s instead of
//! 3.5-13 min on the shared stack: before 2026-11-28 one router was converged from one feature
//! to the next; where those convergences are tested now: functional/dataplane/README.md,
//! "Coverage moved".
//! The only difference allowed: the `Server` response header, which Octavia's haproxy cannot
//! add (here it comes from the echo server, when it sets one). "The Ingress status shows the IP
//! address" is checked against the fake API server (`tests/it/conformance_status.rs`).

use super::status_answers::{Responder, send_requests};
use super::{converge, repo};
use crate::common::{enabled, local_router, session};
use kuryr_l7_router::driver::router::Router;
use kuryr_l7_router::model::{DesiredRouter, NOT_FOUND_POOL};
use kuryr_l7_router::openstack::Barbican;
use kuryr_l7_router::translate::manifest::load_str;
use kuryr_l7_router::translate::{Inputs, TranslateOptions, load_manifests, translate};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

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
    // ingress_class.feature: the suite checks the status only (tests/it/conformance_status.rs); the
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

/// The features, in the suite's order; each gets a router of its own.
const FEATURES: [&str; 5] = [DEFAULT_BACKEND, HOST_RULES, PATH_RULES, INGRESS_CLASS, LOAD_BALANCING];

/// The requests of `feature`: its scenarios', or load_balancing's 100.
fn feature_requests(feature: &str, address: &str) -> Vec<Value> {
    if feature == LOAD_BALANCING {
        let request = ("GET", "http", "load-balancing", "/", Service("echo-service"));
        return (0..LB_REQUESTS).map(|_| request_json(&request, address)).collect();
    }
    SCENARIOS.iter().filter(|s| s.feature == feature).map(|s| request_json(&s.request, address)).collect()
}

/// What one feature's router answered.
struct Outcome {
    feature: &'static str,
    passed: usize,
    total: usize,
    /// One line per scenario (`ok ` / `BAD`), printed together once every feature is done.
    lines: Vec<String>,
    failures: Vec<String>,
    /// The build: its writes' kinds (Octavia's and Barbican's) and how long it took.
    writes: Vec<&'static str>,
    build: std::time::Duration,
}

/// Octavia's writes among `kinds` (a TLS router's build also stores its certificates in
/// Barbican: `create_secret`).
fn octavia_writes(kinds: &[&str]) -> usize {
    kinds.iter().filter(|k| !k.ends_with("_secret")).count()
}

/// One feature on a router of its own: the router is built from nothing to the feature's desired
/// router (one fully-populated create; host_rules' HTTPS listener and its policies follow, as
/// for any new router with TLS), converging again writes nothing, and the feature's requests go
/// through Octavia-rendered haproxy with the responder serving the reserved pools.
async fn feature_on_its_own_router(
    feature: &'static str,
    r: Router,
    desired: DesiredRouter,
    responder: Arc<Responder>,
) -> Outcome {
    let address = "192.0.2.10"; // the suite's empty host: the router's address
    let started = Instant::now();
    let report = converge(&r, &desired).await;
    let build = started.elapsed();
    let writes: Vec<&'static str> = report.writes.iter().map(|w| w.kind).collect();
    // E.g. a worker that leaves a fully-populated create's children PENDING_CREATE (Octavia
    // before 11.0.1): the driver rebuilds the router object by object and says so.
    for c in &report.conflicts {
        println!("{feature}: the build reports: {c}");
    }
    let mut failures = Vec::new();
    let requests = feature_requests(feature, address);
    let (lb_id, want) = (report.lb_id.clone(), desired.clone());
    let results = tokio::task::spawn_blocking(move || send_requests(&lb_id, &want, Some(&*responder), &requests))
        .await
        .expect("run.py");
    // The create left the router exactly as desired: the driver reads it back and finds nothing
    // to write (this also reads host_rules' HTTPS listener and certificates).
    let again = converge(&r, &desired).await;
    if !again.writes.is_empty() {
        failures.push(format!("{feature}: converging again writes {:?}", again.writes));
    }
    let mut lines = Vec::new();
    if feature == LOAD_BALANCING {
        let ok = results.iter().filter(|x| x["status"] == 200 && x["backend"] == "echo-service").count();
        let pods: BTreeSet<String> = results.iter().map(|x| x["body"]["port"].to_string()).collect();
        let pass = ok == LB_REQUESTS && pods.len() == LB_PODS;
        lines.push(format!(
            "{} {feature}: {ok}/{LB_REQUESTS} answered 200 by echo-service, {} pods",
            if pass { "ok " } else { "BAD" },
            pods.len()
        ));
        if !pass {
            failures.push(format!("{feature}: {ok} of {LB_REQUESTS} 200s, {} pods", pods.len()));
        }
        return Outcome { feature, passed: usize::from(pass), total: 1, lines, failures, writes, build };
    }
    let scenarios: Vec<&Scenario> = SCENARIOS.iter().filter(|s| s.feature == feature).collect();
    let mut passed = 0;
    for (s, res) in scenarios.iter().zip(&results) {
        let (m, scheme, host, path, _) = s.request;
        match verdict(s, res) {
            None => {
                passed += 1;
                lines.push(format!("ok  {feature}: {} ({m} {scheme}://{host}{path})", s.name));
            }
            Some(why) => {
                lines.push(format!("BAD {feature}: {} ({m} {scheme}://{host}{path}): {why}", s.name));
                failures.push(format!("{feature}: {}: {why}", s.name));
            }
        }
    }
    Outcome { feature, passed, total: scenarios.len(), lines, failures, writes, build }
}

/// A panic's message.
fn panic_message(e: tokio::task::JoinError) -> String {
    if !e.is_panic() {
        return e.to_string();
    }
    let p = e.into_panic();
    p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_public_ingress_conformance_suite_passes_strict_with_the_default_configuration() {
    if !enabled() {
        return;
    }
    let opts = shipped_options();
    assert!(!opts.tls.ssl_redirect, "the default configuration does not redirect");
    assert!(opts.status_responder.is_some(), "the shipped kuryr.conf names the status responder");
    let desired: Vec<DesiredRouter> = FEATURES
        .iter()
        .map(|&feature| {
            let desired = translate(&feature_inputs(feature), &opts);
            let warnings: Vec<_> = desired.warnings.iter().filter(|w| w.object.kind == "Ingress").collect();
            assert!(warnings.is_empty(), "{feature}: {warnings:#?}");
            if feature != DEFAULT_BACKEND && feature != LOAD_BALANCING {
                assert_eq!(desired.default_pool.as_deref(), Some(NOT_FOUND_POOL), "{feature}");
            }
            desired
        })
        .collect();
    let responder = Arc::new(Responder::start());
    let mut routers = Vec::new();
    for feature in FEATURES {
        let tag = format!("conf-{}", feature.replace('_', "-"));
        let mut r = local_router("fct-dp", &tag).await.with_barbican(Barbican::new(session("admin", "admin")));
        // Built by one create call each: this test is about routing (convergence from one
        // router state to another is tested in functional_driver, functional_tls and the other
        // data-plane tests; see functional/dataplane/README.md).
        r.spec_mut().fully_populated_create = true;
        routers.push(r);
    }
    let clusters: Vec<String> = routers.iter().map(|r| r.spec().ownership.cluster.clone()).collect();
    let started = Instant::now();
    crate::common::with_routers(routers, move |routers| async move {
        // The five routers are built and asked at the same time: creates of different load
        // balancers proceed in parallel in Octavia's worker. Every task ends before the clean-up.
        let tasks: Vec<_> = FEATURES
            .iter()
            .zip(routers)
            .zip(desired)
            .map(|((&feature, r), d)| tokio::spawn(feature_on_its_own_router(feature, r, d, responder.clone())))
            .collect();
        let mut outcomes = Vec::new();
        let mut failures = Vec::new();
        for (feature, joined) in FEATURES.iter().zip(futures::future::join_all(tasks).await) {
            match joined {
                Ok(o) => outcomes.push(o),
                Err(e) => failures.push(format!("{feature}: {}", panic_message(e))),
            }
        }
        let (mut passed, mut total, mut writes) = (0, 0, 0);
        for o in &outcomes {
            for line in &o.lines {
                println!("{line}");
            }
            passed += o.passed;
            total += o.total;
            writes += octavia_writes(&o.writes);
            failures.extend(o.failures.iter().cloned());
        }
        println!("conformance (strict, default kuryr.conf): {passed}/{total} scenarios");
        for o in &outcomes {
            println!(
                "  {}: {}/{}; router built in {:.1}s with {} Octavia write(s): {}",
                o.feature,
                o.passed,
                o.total,
                o.build.as_secs_f64(),
                octavia_writes(&o.writes),
                o.writes.join(", ")
            );
        }
        println!("conformance: {writes} Octavia write(s) to build the {} routers", outcomes.len());
        assert!(failures.is_empty(), "{} failure(s):\n{}", failures.len(), failures.join("\n"));
    })
    .await;
    println!("conformance run: {:.0}s", started.elapsed().as_secs_f64());
    for cluster in clusters {
        super::delete_cluster_secrets(&cluster).await;
    }
}
