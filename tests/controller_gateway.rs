//! The controller's Gateway API side on the FAKE Kubernetes API server (tests/support/fake_api.rs):
//! the status of the core Gateway, GatewayClass and HTTPRoute conformance cases
//! (tests/fixtures/gateway/cases/, the same expectations as tests/gateway_conformance.rs) as the
//! controller WRITES it, status written only when it changes, Events on bad input, and a cluster
//! without the Gateway API CRDs served as an Ingress-only cluster.

#[path = "support/fake_api.rs"]
mod fake_api;
use fake_api::Fake;

use kuryr_l7_router::controller::events::EventPublisher;
use kuryr_l7_router::controller::gateway::GatewayLoop;
use kuryr_l7_router::gateway::build::Programmed;
use kuryr_l7_router::gateway::world::World;
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use tokio::sync::watch;

const INFRA: &str = "gateway-conformance-infra";
const OURS: &str = "openstack.org/kuryr-l7-router";

/// The expectations of a case file (its first document; see tests/gateway_conformance.rs).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Case {
    test: String,
    #[serde(default)]
    tls_secrets: Vec<String>,
    #[serde(default)]
    classes: Vec<ClassExpect>,
    #[serde(default)]
    gateways: Vec<GatewayExpect>,
    #[serde(default)]
    routes: Vec<RouteExpect>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ClassExpect {
    name: String,
    observed_generation: i64,
    accepted: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct GatewayExpect {
    gateway: String,
    observed_generation: Option<i64>,
    #[serde(default)]
    conditions: BTreeMap<String, String>,
    #[serde(default)]
    listeners: Vec<ListenerExpect>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ListenerExpect {
    name: String,
    attached_routes: Option<i64>,
    supported_kinds: Option<usize>,
    #[serde(default)]
    conditions: BTreeMap<String, String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RouteExpect {
    route: String,
    observed_generation: Option<i64>,
    parent: String,
    conditions: BTreeMap<String, String>,
}

fn split(s: &str) -> (String, String) {
    match s.split_once('/') {
        Some((ns, n)) => (ns.into(), n.into()),
        None => (INFRA.into(), s.into()),
    }
}

fn resource_of(kind: &str) -> Option<&'static str> {
    Some(match kind {
        "GatewayClass" => "gatewayclasses",
        "Gateway" => "gateways",
        "HTTPRoute" => "httproutes",
        "ReferenceGrant" => "referencegrants",
        "Namespace" => "namespaces",
        "Service" => "services",
        "Secret" => "secrets",
        _ => return None,
    })
}

/// A `kubernetes.io/tls` Secret with a fresh self-signed certificate.
fn tls_secret(ns: &str, name: &str) -> Value {
    let key = rcgen::KeyPair::generate().unwrap();
    let crt = rcgen::CertificateParams::new(vec!["example.com".to_string()]).unwrap().self_signed(&key).unwrap();
    json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": ns},
           "type": "kubernetes.io/tls", "stringData": {"tls.crt": crt.pem(), "tls.key": key.serialize_pem()}})
}

/// Puts every object of `texts` the Gateway translation reads into the fake API server.
fn load_objects(fake: &Fake, texts: &[&str], tls_secrets: &[String]) {
    for text in texts {
        let docs: Vec<Value> = serde_saphyr::from_multiple(text).unwrap();
        for doc in docs.into_iter().filter(|d| !d.is_null()) {
            if let Some(resource) = resource_of(doc["kind"].as_str().unwrap_or_default()) {
                fake.put(resource, doc);
            }
        }
    }
    for s in tls_secrets {
        let (ns, name) = split(s);
        fake.put("secrets", tls_secret(&ns, &name));
    }
}

/// Reflectors of Services and Secrets on the fake (the Ingress side's caches in the controller).
fn caches(
    client: &kube::Client,
) -> (
    kube::runtime::reflector::Store<k8s_openapi::api::core::v1::Service>,
    kube::runtime::reflector::Store<k8s_openapi::api::core::v1::Secret>,
) {
    use futures::StreamExt;
    use kube::runtime::{WatchStreamExt, reflector, watcher};
    let (services, ws) = reflector::store();
    let (secrets, wsec) = reflector::store();
    let w = watcher(kube::Api::all(client.clone()), watcher::Config::default()).default_backoff();
    tokio::spawn(reflector::reflector(ws, w).for_each(|_| async {}));
    let w = watcher(kube::Api::all(client.clone()), watcher::Config::default()).default_backoff();
    tokio::spawn(reflector::reflector(wsec, w).for_each(|_| async {}));
    (services, secrets)
}

async fn client_of(api_root: &str) -> kube::Client {
    let config = kube::Config::new(api_root.parse().unwrap());
    kube::Client::try_from(config).unwrap()
}

/// A Gateway loop on `fake`, fast (20 ms debounce, 200 ms recheck), with its stop switch and
/// the data plane's addresses to feed.
async fn start(fake: &Arc<Fake>, programmed: Programmed) -> (watch::Sender<bool>, watch::Sender<Programmed>) {
    let (api_root, _) = fake.serve().await;
    let client = client_of(&api_root).await;
    let (services, secrets) = caches(&client);
    let (prog_tx, prog_rx) = watch::channel(programmed);
    let (routers, _) = watch::channel(Vec::new());
    let events = Arc::new(EventPublisher::new(client.clone(), None, Duration::from_secs(300)));
    let gl = GatewayLoop {
        client,
        services,
        secrets,
        events: Some(events),
        programmed: prog_rx,
        routers,
        debounce: Duration::from_millis(20),
        recheck: Duration::from_millis(200),
    };
    let (stop_tx, stop_rx) = watch::channel(false);
    tokio::spawn(gl.run(stop_rx));
    (stop_tx, prog_tx)
}

/// `True`, `False`, `True/Reason` or `False/Reason` against the condition `kind` of `conds`.
fn check_cond(what: &str, conds: &Value, kind: &str, want: &str, generation: Option<i64>) -> Result<(), String> {
    let c = conds
        .as_array()
        .and_then(|a| a.iter().find(|c| c["type"] == kind))
        .ok_or_else(|| format!("{what} {kind}: no condition"))?;
    let (status, reason) = want.split_once('/').unwrap_or((want, ""));
    if c["status"] != status || (!reason.is_empty() && c["reason"] != reason) {
        return Err(format!("{what} {kind}: want {want}, got {}/{} ({})", c["status"], c["reason"], c["message"]));
    }
    if let Some(g) = generation.filter(|g| c["observedGeneration"] != json!(g)) {
        return Err(format!("{what} {kind}: observedGeneration want {g}, got {}", c["observedGeneration"]));
    }
    Ok(())
}

fn check_case(fake: &Fake, case: &Case) -> Vec<String> {
    let gw_api = "gateway.networking.k8s.io/v1";
    let mut errs = Vec::new();
    for c in &case.classes {
        let st = fake.get(&format!("{gw_api}/gatewayclasses"), "", &c.name).map(|o| o["status"].clone());
        let st = st.unwrap_or_default();
        let what = format!("GatewayClass {}", c.name);
        errs.extend(check_cond(&what, &st["conditions"], "Accepted", &c.accepted, Some(c.observed_generation)).err());
        if c.accepted.starts_with("True") && st["supportedFeatures"].as_array().is_none_or(Vec::is_empty) {
            errs.push(format!("{what}: no supportedFeatures"));
        }
    }
    for g in &case.gateways {
        let (ns, name) = split(&g.gateway);
        let st = fake.get(&format!("{gw_api}/gateways"), &ns, &name).map(|o| o["status"].clone()).unwrap_or_default();
        let what = format!("Gateway {ns}/{name}");
        for (k, v) in &g.conditions {
            errs.extend(check_cond(&what, &st["conditions"], k, v, g.observed_generation).err());
        }
        for l in &g.listeners {
            let ls = st["listeners"].as_array().and_then(|a| a.iter().find(|x| x["name"] == l.name.as_str()));
            let Some(ls) = ls else {
                errs.push(format!("{what} listener {}: absent", l.name));
                continue;
            };
            if let Some(n) = l.attached_routes.filter(|n| ls["attachedRoutes"] != json!(n)) {
                errs.push(format!("{what} listener {}: attachedRoutes want {n}, got {}", l.name, ls["attachedRoutes"]));
            }
            if let Some(n) = l.supported_kinds.filter(|n| ls["supportedKinds"].as_array().map(Vec::len) != Some(*n)) {
                errs.push(format!("{what} listener {}: supportedKinds want {n}, got {}", l.name, ls["supportedKinds"]));
            }
            for (k, v) in &l.conditions {
                errs.extend(check_cond(&format!("{what} listener {}", l.name), &ls["conditions"], k, v, None).err());
            }
        }
    }
    for r in &case.routes {
        let (ns, name) = split(&r.route);
        let st = fake.get(&format!("{gw_api}/httproutes"), &ns, &name).map(|o| o["status"].clone()).unwrap_or_default();
        let parent = st["parents"].as_array().and_then(|a| {
            a.iter().find(|p| p["parentRef"]["name"] == r.parent.as_str() && p["controllerName"] == OURS)
        });
        let what = format!("HTTPRoute {ns}/{name} parent {}", r.parent);
        let Some(parent) = parent else {
            errs.push(format!("{what}: no status"));
            continue;
        };
        for (k, v) in &r.conditions {
            errs.extend(check_cond(&what, &parent["conditions"], k, v, r.observed_generation).err());
        }
    }
    errs
}

fn case_files() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/gateway/cases");
    let mut files: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    files
}

fn read_case(file: &Path) -> (Case, String) {
    let text = std::fs::read_to_string(file).unwrap();
    let case: Case = serde_saphyr::from_str(text.split("\n---\n").next().unwrap()).unwrap();
    (case, text)
}

/// Every Gateway of the texts at 192.0.2.10: the data plane's answer once programmed.
fn all_programmed(texts: &[&str]) -> Programmed {
    let mut w = World::default();
    texts.iter().for_each(|t| w.add_yaml(t).unwrap());
    w.gateways
        .iter()
        .map(|g| ((g.metadata.namespace.clone().unwrap(), g.metadata.name.clone().unwrap()), vec!["192.0.2.10".into()]))
        .collect()
}

/// Runs one case: its objects on a fake API server of their own, the Gateway loop, and the
/// statuses it writes checked against the case's expectations (within 5 s).
async fn run_case(file: PathBuf) -> Result<(), String> {
    let base =
        std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/gateway/base.yaml"))
            .unwrap();
    let (case, text) = read_case(&file);
    let fake = Fake::new();
    fake.gateway_api.store(true, Ordering::SeqCst);
    load_objects(&fake, &[&base, &text], &case.tls_secrets);
    let (stop, _prog) = start(&fake, all_programmed(&[&base, &text])).await;
    let t = Instant::now();
    let result = loop {
        let errs = check_case(&fake, &case);
        if errs.is_empty() {
            break Ok(());
        }
        if t.elapsed() > Duration::from_secs(5) {
            break Err(format!("{} ({}):\n  {}", case.test, file.display(), errs.join("\n  ")));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let _ = stop.send(true);
    result
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_statuses_are_written_on_the_fake_api_server() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let files = case_files();
    assert!(files.len() >= 20, "the case files are missing");
    let results = futures::future::join_all(files.into_iter().map(run_case)).await;
    let failures: Vec<String> = results.into_iter().filter_map(Result::err).collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
