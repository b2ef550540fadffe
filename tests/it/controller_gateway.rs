//! The controller's Gateway API side on the FAKE Kubernetes API server (tests/support/fake_api.rs):
//! the status of the core Gateway, GatewayClass and HTTPRoute conformance cases
//! (tests/fixtures/gateway/cases/, the same expectations as tests/it/gateway_conformance.rs) as the
//! controller WRITES it, status written only when it changes, Events on bad input, and a cluster
//! without the Gateway API CRDs served as an Ingress-only cluster.

use crate::support::controller_run::spawn_controller;
use crate::support::controller_settings;
use crate::support::eventually;
use crate::support::fake_api;
use crate::support::gateway_case;
use crate::support::gateway_loop::{client_of, gateway_loop, run};
use controller_settings::status_responder_settings;
use eventually::eventually_every;
use fake_api::Fake;
use gateway_case::{Case, split};

use kuryr_l7_router::controller::gateway::GatewayLoop;
use kuryr_l7_router::controller::outputs::events::EventPublisher;
use kuryr_l7_router::gateway::build::Programmed;
use kuryr_l7_router::gateway::keep::Tables;
use kuryr_l7_router::gateway::world::World;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use tokio::sync::watch;

const INFRA: &str = "gateway-conformance-infra";
const OURS: &str = "openstack.org/kuryr-l7-router";

fn resource_of(kind: &str) -> Option<&'static str> {
    Some(match kind {
        "GatewayClass" => "gatewayclasses",
        "Gateway" => "gateways",
        "HTTPRoute" => "httproutes",
        "ReferenceGrant" => "referencegrants",
        "ListenerSet" => "listenersets",
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

/// A Gateway loop on `fake`, fast (20 ms debounce, 200 ms recheck), with its stop switch and
/// the data plane's addresses to feed.
async fn start(fake: &Arc<Fake>, programmed: Programmed) -> (watch::Sender<bool>, watch::Sender<Programmed>) {
    let (api_root, _) = fake.serve().await;
    let client = client_of(&api_root);
    let (prog_tx, prog_rx) = watch::channel(programmed);
    let (routers, _) = watch::channel(Tables::default());
    let events = Arc::new(EventPublisher::new(client.clone(), None, Duration::from_secs(300)));
    let gl = GatewayLoop { events: Some(events), ..gateway_loop(client, prog_rx, routers, Duration::from_millis(200)) };
    (run(gl), prog_tx)
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
        let addresses = st["addresses"].as_array().map_or(0, Vec::len);
        if let Some(n) = g.addresses.filter(|n| *n != addresses) {
            errs.push(format!("{what}: addresses want {n}, got {}", st["addresses"]));
        }
        if let Some(n) = g.attached_listener_sets.filter(|n| st["attachedListenerSets"] != json!(n)) {
            errs.push(format!("{what}: attachedListenerSets want {n}, got {}", st["attachedListenerSets"]));
        }
        errs.extend(check_listeners(&what, &g.listeners, &st));
    }
    for s in &case.listener_sets {
        let (ns, name) = split(&s.listener_set);
        let st =
            fake.get(&format!("{gw_api}/listenersets"), &ns, &name).map(|o| o["status"].clone()).unwrap_or_default();
        let what = format!("ListenerSet {ns}/{name}");
        for (k, v) in &s.conditions {
            errs.extend(check_cond(&what, &st["conditions"], k, v, None).err());
        }
        errs.extend(check_listeners(&what, &s.listeners, &st));
    }
    for r in &case.routes {
        let (ns, name) = split(&r.route);
        let st = fake.get(&format!("{gw_api}/httproutes"), &ns, &name).map(|o| o["status"].clone()).unwrap_or_default();
        let kind = r.parent_kind.as_deref().unwrap_or("Gateway");
        let parent = st["parents"].as_array().and_then(|a| {
            a.iter().find(|p| {
                p["parentRef"]["name"] == r.parent.as_str()
                    && p["parentRef"]["kind"].as_str().unwrap_or("Gateway") == kind
                    && p["controllerName"] == OURS
            })
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

/// The listener statuses of `st` (a Gateway's or ListenerSet's, `what`) against `want`.
fn check_listeners(what: &str, want: &[crate::support::gateway_case::ListenerExpect], st: &Value) -> Vec<String> {
    let mut errs = Vec::new();
    for l in want {
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
    for c in &case.ca_config_maps {
        let (ns, name) = split(c);
        fake.put(
            "configmaps",
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns},
                   "data": {"ca.crt": gateway_case::ca_pem(c)}}),
        );
    }
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

fn case_text(name: &str) -> (Case, String, String) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/gateway");
    let base = std::fs::read_to_string(dir.join("base.yaml")).unwrap();
    let (case, text) = read_case(&dir.join("cases").join(name));
    (case, base, text)
}

fn status_writes(fake: &Fake) -> Vec<String> {
    fake.writes().iter().filter(|w| w.path.ends_with("/status")).map(|w| w.line()).collect()
}

async fn eventually<T>(what: &str, secs: u64, f: impl FnMut() -> Option<T>) -> T {
    eventually_every(what, secs, Duration::from_millis(50), f).await
}

/// A status is written once, not on every pass; a new address from the data plane is written
/// (Programmed turns True), keeping the lastTransitionTime of the conditions that did not change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_is_written_only_when_it_changes_and_follows_the_data_plane() {
    let (_, base, text) = case_text("gateway-with-attached-routes.yaml");
    let fake = Fake::new();
    fake.gateway_api.store(true, Ordering::SeqCst);
    load_objects(&fake, &[&base, &text], &[]);
    let (stop, programmed) = start(&fake, Programmed::new()).await;
    let gw = || fake.get("gateway.networking.k8s.io/v1/gateways", INFRA, "gateway-with-two-attached-routes");
    let cond = |o: &Value, kind: &str| {
        o["status"]["conditions"].as_array().and_then(|a| a.iter().find(|c| c["type"] == kind)).cloned()
    };
    let pending = eventually("Programmed False/Pending", 5, || gw().filter(|o| cond(o, "Programmed").is_some())).await;
    assert_eq!(cond(&pending, "Programmed").unwrap()["reason"], "Pending");
    assert_eq!(pending["status"]["addresses"], Value::Null);
    // Every object of ours has its status; then a second of passes (every 200 ms) writes nothing.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = status_writes(&fake);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let after = status_writes(&fake);
    assert_eq!(
        after.len(),
        before.len(),
        "written again without a change: {:?}",
        &after[before.len().min(after.len())..]
    );

    let key = (INFRA.to_string(), "gateway-with-two-attached-routes".to_string());
    programmed.send_modify(|p| {
        p.insert(key, vec!["192.0.2.10".into()]);
    });
    let done = eventually("Programmed True", 5, || {
        gw().filter(|o| cond(o, "Programmed").is_some_and(|c| c["status"] == "True"))
    })
    .await;
    assert_eq!(done["status"]["addresses"], json!([{"type": "IPAddress", "value": "192.0.2.10"}]));
    let accepted = |o: &Value| cond(o, "Accepted").unwrap()["lastTransitionTime"].clone();
    assert_eq!(accepted(&done), accepted(&pending), "Accepted did not change: its transition time stays");
    let _ = stop.send(true);
}

/// Bad input (a route whose hostnames no listener accepts, a listener naming a missing Secret)
/// gets a Warning Event on the object concerned, with the condition's reason and message; the
/// other routes of the same Gateways are accepted all the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_gets_a_warning_event_on_the_object_concerned() {
    let (case, base, text) = case_text("gateway-with-attached-routes.yaml");
    let fake = Fake::new();
    fake.gateway_api.store(true, Ordering::SeqCst);
    load_objects(&fake, &[&base, &text], &[]);
    let (stop, _programmed) = start(&fake, all_programmed(&[&base, &text])).await;
    let events = || -> Vec<(String, String, String)> {
        let posts = fake.writes().into_iter().filter(|w| w.method == "POST" && w.path.ends_with("/events"));
        posts
            .map(|w| {
                let b = &w.body;
                let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
                (s(&b["regarding"]["kind"]), s(&b["regarding"]["name"]), s(&b["reason"]))
            })
            .collect()
    };
    let want = [
        ("HTTPRoute", "http-route-not-accepted", "NoMatchingListenerHostname"),
        ("Gateway", "unresolved-gateway-with-one-attached-unresolved-route", "InvalidCertificateRef"),
    ];
    eventually("the Warning Events", 5, || {
        let got = events();
        want.iter()
            .all(|(k, n, r)| got.iter().any(|g| (g.0.as_str(), g.1.as_str(), g.2.as_str()) == (*k, *n, *r)))
            .then_some(())
    })
    .await;
    let ev = fake.writes().into_iter().find(|w| w.body["reason"] == "NoMatchingListenerHostname").unwrap();
    assert_eq!(ev.body["type"], "Warning");
    assert!(ev.body["note"].as_str().unwrap().starts_with("parent gateway-with-two-attached-routes: "), "{}", ev.body);
    assert_eq!(check_case(&fake, &case), Vec::<String>::new());
    // No Event for what is fine.
    assert!(!events().iter().any(|(_, n, _)| n == "http-route-1"), "{:?}", events());
    let _ = stop.send(true);
}

/// Objects of another Gateway API release in the cluster: a route with a filter type the v1.6.1
/// standard types do not know (an experimental one) is refused by name, with its status and an
/// Event, and a route with a field of the wrong type is ignored with an Event naming the field.
/// Neither holds the other routes of the kind (before, either failed the list of every HTTPRoute).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_object_of_another_release_does_not_hold_the_others_of_its_kind() {
    let (case, base, text) = case_text("gateway-with-attached-routes.yaml");
    let fake = Fake::new();
    fake.gateway_api.store(true, Ordering::SeqCst);
    load_objects(&fake, &[&base, &text], &[]);
    fake.put(
        "gateways",
        json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
               "metadata": {"name": "other-release", "namespace": INFRA},
               "spec": {"gatewayClassName": "kuryr", "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}]}}),
    );
    let parent = json!([{"name": "other-release"}]);
    let backends = json!([{"name": "infra-backend-v1", "port": 8080}]);
    fake.put(
        "httproutes",
        json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
               "metadata": {"name": "newer-filter", "namespace": INFRA, "generation": 1},
               "spec": {"parentRefs": parent, "hostnames": ["newer.example.com"],
                        "rules": [{"filters": [{"type": "ExternalAuth"}], "backendRefs": backends}]}}),
    );
    fake.put(
        "httproutes",
        json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
               "metadata": {"name": "broken", "namespace": INFRA},
               "spec": {"parentRefs": parent, "hostnames": 5, "rules": [{"backendRefs": backends}]}}),
    );
    let (stop, _programmed) = start(&fake, all_programmed(&[&base, &text])).await;
    let route = |name: &str| fake.get("gateway.networking.k8s.io/v1/httproutes", INFRA, name);
    let newer = eventually("the newer route's status", 5, || {
        route("newer-filter").filter(|r| r["status"]["parents"].as_array().is_some_and(|p| !p.is_empty()))
    })
    .await;
    let conds = &newer["status"]["parents"][0]["conditions"];
    check_cond("newer-filter", conds, "Accepted", "False/UnsupportedValue", Some(1)).unwrap();
    let accepted = conds.as_array().unwrap().iter().find(|c| c["type"] == "Accepted").unwrap();
    assert!(accepted["message"].as_str().unwrap().contains("filters[0].type: ExternalAuth"), "{accepted}");
    let unreadable = eventually("the Event on the broken route", 5, || {
        let posts = fake.writes().into_iter().filter(|w| w.method == "POST" && w.path.ends_with("/events"));
        posts.into_iter().find(|w| w.body["reason"] == "UnreadableObject")
    })
    .await;
    assert_eq!(unreadable.body["type"], "Warning");
    assert_eq!(unreadable.body["regarding"]["kind"], "HTTPRoute");
    assert_eq!(unreadable.body["regarding"]["name"], "broken");
    assert!(unreadable.body["note"].as_str().unwrap().contains("spec.hostnames"), "{}", unreadable.body);
    // Every route of the case has its status, as without the two.
    eventually("the case's statuses", 5, || check_case(&fake, &case).is_empty().then_some(())).await;
    assert_eq!(route("broken").unwrap()["status"], Value::Null, "an ignored route gets no status");
    let _ = stop.send(true);
}

/// The whole controller (`run_with`, in-memory Octavia) on `fake`; stop it with the sender.
async fn run_controller(
    fake: &Arc<Fake>,
) -> (
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<Result<(), kuryr_l7_router::controller::ControllerError>>,
    tempfile::TempDir,
) {
    use kuryr_l7_router::driver::ownership::Ownership;
    use kuryr_l7_router::driver::plan::DiffOptions;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let (api_root, _) = fake.serve().await;
    let (dir, token) = crate::support::fake_settings::token_file();
    let settings = status_responder_settings(&api_root, &token, "gateway.conf");
    let ownership = Ownership::new(&settings.octavia_defaults.l7_router_name);
    let sim = kuryr_l7_router::testing::SimBackend::new(DiffOptions { ownership, health_monitor: None }, None);
    let (stop, run) = spawn_controller(settings, sim);
    (stop, run, dir)
}

/// The controller takes Gateway API objects when the CRDs are served: our GatewayClass is
/// accepted with the supported features, another implementation's class is left alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_controller_writes_gateway_api_status_when_the_crds_are_served() {
    let fake = Fake::new();
    fake.gateway_api.store(true, Ordering::SeqCst);
    let class = |name: &str, controller: &str| {
        json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass",
               "metadata": {"name": name, "generation": 4}, "spec": {"controllerName": controller}})
    };
    fake.put("gatewayclasses", class("kuryr", OURS));
    fake.put("gatewayclasses", class("other", "example.com/other"));
    let (stop, run, _dir) = run_controller(&fake).await;
    let status = || fake.get("gateway.networking.k8s.io/v1/gatewayclasses", "", "kuryr").map(|o| o["status"].clone());
    let st = eventually("GatewayClass kuryr Accepted", 10, || status().filter(|s| !s.is_null())).await;
    assert_eq!(check_cond("kuryr", &st["conditions"], "Accepted", "True/Accepted", Some(4)), Ok(()));
    assert!(st["supportedFeatures"].as_array().unwrap().contains(&json!({"name": "HTTPRoute"})), "{st}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!fake.writes().iter().any(|w| w.path.contains("/gatewayclasses/other")), "another controller's class");
    stop.send(()).unwrap();
    let result = tokio::time::timeout(Duration::from_secs(20), run).await.expect("run ends").unwrap();
    assert!(result.is_ok(), "{result:?}");
}

/// Without the Gateway API CRDs the controller runs Ingress-only: it probes them once (then every
/// 30 s), never watches them, and stops cleanly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_crds_the_controller_serves_ingresses_only() {
    let fake = Fake::new();
    let (stop, run, _dir) = run_controller(&fake).await;
    let gateway_reads =
        || fake.reads().into_iter().filter(|r| r.contains("/gateway.networking.k8s.io/")).collect::<Vec<_>>();
    eventually("the probe", 10, || (!gateway_reads().is_empty()).then_some(())).await;
    // The Ingress side is up: its caches list and watch.
    eventually("the Ingress watch", 10, || {
        fake.reads()
            .iter()
            .any(|r| r.starts_with("GET /apis/networking.k8s.io/v1/ingresses?") && r.contains("watch=true"))
            .then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let reads = gateway_reads();
    // One probe per kind (GatewayClass, Gateway, HTTPRoute: one item each), no watch.
    assert!(reads.len() <= 3 && reads.iter().all(|r| r.ends_with("?limit=1")), "probes only: {reads:?}");
    assert!(!run.is_finished(), "the controller runs on");
    stop.send(()).unwrap();
    let result = tokio::time::timeout(Duration::from_secs(20), run).await.expect("run ends").unwrap();
    assert!(result.is_ok(), "{result:?}");
}

/// GatewayClass/Gateway/HTTPRouteObservedGenerationBump as the upstream tests run them: the
/// spec changes (generation 1 -> 2) and every condition's observedGeneration follows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observed_generation_follows_a_spec_change() {
    let fake = Fake::new();
    fake.gateway_api.store(true, Ordering::SeqCst);
    let objects = |generation: i64, port: i64| {
        vec![
            (
                "gatewayclasses",
                json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass",
                "metadata": {"name": "kuryr", "generation": generation},
                "spec": {"controllerName": OURS, "description": format!("generation {generation}")}}),
            ),
            (
                "gateways",
                json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
                "metadata": {"name": "gw", "namespace": INFRA, "generation": generation},
                "spec": {"gatewayClassName": "kuryr", "listeners": [{"name": "http", "port": port, "protocol": "HTTP"}]}}),
            ),
            (
                "httproutes",
                json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
                "metadata": {"name": "r", "namespace": INFRA, "generation": generation},
                "spec": {"parentRefs": [{"name": "gw", "port": port}]}}),
            ),
        ]
    };
    for (r, o) in objects(1, 80) {
        fake.put(r, o);
    }
    let (stop, _programmed) = start(&fake, Programmed::new()).await;
    let generations = || {
        let get = |r: &str, ns: &str, n: &str| fake.get(&format!("gateway.networking.k8s.io/v1/{r}"), ns, n);
        let first = |v: Option<Value>, p: &str| v.and_then(|o| o.pointer(p).cloned()).unwrap_or_default();
        [
            first(get("gatewayclasses", "", "kuryr"), "/status/conditions/0/observedGeneration"),
            first(get("gateways", INFRA, "gw"), "/status/conditions/0/observedGeneration"),
            first(get("gateways", INFRA, "gw"), "/status/listeners/0/conditions/0/observedGeneration"),
            first(get("httproutes", INFRA, "r"), "/status/parents/0/conditions/0/observedGeneration"),
        ]
    };
    eventually("generation 1 observed", 5, || generations().iter().all(|g| *g == json!(1)).then_some(())).await;
    for (r, o) in objects(2, 8080) {
        fake.put(r, o);
    }
    eventually("generation 2 observed", 5, || generations().iter().all(|g| *g == json!(2)).then_some(())).await;
    let route = fake.get("gateway.networking.k8s.io/v1/httproutes", INFRA, "r").unwrap();
    assert_eq!(route["status"]["parents"][0]["parentRef"]["port"], 8080, "{route}");
    let _ = stop.send(true);
}
