//! The status steps of the public Ingress conformance suite (`features/*.feature`: "The Ingress
//! status shows the IP address or FQDN where it is exposed", and ingress_class.feature's "The
//! Ingress status should not contain the IP address or FQDN"), on the scenarios' own Ingresses
//! (tests/fixtures/conformance/), with the controller running against the FAKE Kubernetes API
//! server (`tests/support/fake_api.rs`) and the in-memory Octavia (`SimBackend`). The data plane
//! of the same scenarios is `functional/dataplane/conformance.rs`.

use crate::support::controller_run::spawn_controller;
use crate::support::controller_settings;
use crate::support::fake_api;
use controller_settings::status_responder_settings;
use fake_api::Fake;

use kuryr_l7_router::driver::ownership::Ownership;
use kuryr_l7_router::driver::plan::DiffOptions;
use kuryr_l7_router::testing::SimBackend;
use kuryr_l7_router::translate::load_manifests;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::time::{Duration, Instant};

const FEATURES: [&str; 5] = ["default_backend", "host_rules", "path_rules", "ingress_class", "load_balancing"];

/// Every object of the conformance fixtures, as the API server would list it.
fn objects() -> Vec<(&'static str, Value)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/conformance");
    let mut files = vec![dir.join("class.yaml"), dir.join("status_responder.yaml")];
    files.extend(FEATURES.iter().map(|f| dir.join(format!("{f}.yaml"))));
    let inputs = load_manifests(&files).unwrap();
    let mut out = Vec::new();
    out.extend(as_json("ingressclasses", &inputs.ingress_classes));
    out.extend(as_json("services", &inputs.services));
    out.extend(as_json("endpointslices", &inputs.endpoint_slices));
    out.extend(as_json("ingresses", &inputs.ingresses));
    out
}

fn as_json<T: serde::Serialize>(resource: &'static str, objects: &[T]) -> Vec<(&'static str, Value)> {
    objects.iter().map(|o| (resource, serde_json::to_value(o).unwrap())).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_conformance_ingress_shows_the_router_address_except_another_class() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let fake = Fake::new();
    let objects = objects();
    let ingresses: Vec<(String, String)> = objects
        .iter()
        .filter(|(r, _)| *r == "ingresses")
        .map(|(_, o)| {
            (o["metadata"]["namespace"].as_str().unwrap().into(), o["metadata"]["name"].as_str().unwrap().into())
        })
        .collect();
    assert_eq!(ingresses.len(), FEATURES.len());
    for (resource, o) in objects {
        fake.put(resource, o);
    }
    let (api_root, _) = fake.serve().await;
    let (_dir, token) = crate::support::fake_settings::token_file();
    let settings = status_responder_settings(&api_root, &token, "conformance.conf");
    let router_name = settings.octavia_defaults.l7_router_name.clone();
    let address: std::net::IpAddr = "172.24.4.10".parse().unwrap();
    let sim =
        SimBackend::new(DiffOptions { ownership: Ownership::new(&router_name), health_monitor: None }, Some(address));
    let (stop, run) = spawn_controller(settings, sim);

    let status = |ns: &str, name: &str| {
        fake.get("networking.k8s.io/v1/ingresses", ns, name).map(|o| o["status"]["loadBalancer"].clone())
    };
    let ours: Vec<&(String, String)> = ingresses.iter().filter(|(ns, _)| ns != "conformance-ingress-class").collect();
    let t = Instant::now();
    loop {
        let shown = ours.iter().filter(|(ns, n)| status(ns, n) == Some(json!({"ingress": [{"ip": "172.24.4.10"}]})));
        if shown.count() == ours.len() {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "statuses: {:?}",
            ours.iter().map(|(ns, n)| status(ns, n)).collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // "The Ingress status should not contain the IP address or FQDN": never written.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let other = status("conformance-ingress-class", "test-ingress-class").unwrap();
    assert!(other.is_null() || other.get("ingress").is_none_or(Value::is_null), "{other}");
    assert!(!fake.writes().iter().any(|w| w.path.contains("/namespaces/conformance-ingress-class/")));

    stop.send(()).unwrap();
    let result = tokio::time::timeout(Duration::from_secs(10), run).await.expect("run ends").unwrap();
    assert!(result.is_ok(), "{result:?}");
}
