//! The upstream client certificate validation cases (tests/fixtures/gateway/cases/) from the
//! Gateway translation to Octavia: the case's objects, its CA ConfigMaps and TLS Secret as the
//! suite creates them, translated (`gateway::build`, `gateway::router`) and converged by the real
//! driver on the stateful Octavia + Barbican of tests/support/fake_octavia.rs. Each HTTPS port is
//! an Octavia listener validating against its own CA (the ConfigMap's certificate, re-encoded, as
//! the Barbican payload); a port whose CA does not resolve has no listener at all.

use crate::support::fake_octavia;
use crate::support::gateway_case::{Case, ca_pem, split};

use kuryr_l7_router::gateway::build::{Programmed, translate};
use kuryr_l7_router::gateway::router::translate_gateway;
use kuryr_l7_router::gateway::world::World;
use kuryr_l7_router::openstack::Barbican;
use kuryr_l7_router::translate::Inputs;
use kuryr_l7_router::translate::manifest::load_str;
use serde_json::json;
use std::path::Path;
use std::sync::Mutex;

/// The desired router of the case's Gateway `gw`, with the CAs' PEMs by ConfigMap name.
fn desired(file: &str, gw: &str) -> (kuryr_l7_router::gateway::router::GatewayRouter, Vec<(String, String)>) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/gateway");
    let base = std::fs::read_to_string(dir.join("base.yaml")).unwrap();
    let text = std::fs::read_to_string(dir.join("cases").join(file)).unwrap();
    let case: Case = serde_saphyr::from_str(text.split("\n---\n").next().unwrap()).unwrap();
    let mut extra = String::new();
    for s in &case.tls_secrets {
        let (ns, name) = split(s);
        let key = rcgen::KeyPair::generate().unwrap();
        let crt = rcgen::CertificateParams::new(vec!["example.org".to_string()]).unwrap().self_signed(&key).unwrap();
        extra.push_str(&kuryr_l7_router::testing::tls_secret_manifest(&ns, &name, &crt.pem(), &key.serialize_pem()));
        extra.push_str("\n---\n");
    }
    let mut cas = Vec::new();
    for c in &case.ca_config_maps {
        let (ns, name) = split(c);
        let pem = ca_pem(c);
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns},
                        "data": {"ca.crt": pem}});
        extra.push_str(&format!("{cm}\n---\n"));
        cas.push((name, pem));
    }
    let mut world = World::default();
    for t in [&base, &text, &extra] {
        world.add_yaml(t).unwrap();
    }
    let programmed: Programmed = world
        .gateways
        .iter()
        .map(|g| ((g.metadata.namespace.clone().unwrap(), g.metadata.name.clone().unwrap()), vec!["192.0.2.10".into()]))
        .collect();
    let t = translate(&world, &programmed);
    let mut inputs = Inputs::default();
    for (what, t) in [("base.yaml", &base), ("case", &text), ("secrets", &extra)] {
        load_str(t, Path::new(what), &mut inputs).unwrap();
    }
    let routes = t.router("gateway-conformance-infra", gw).unwrap_or_else(|| panic!("{file}: no router"));
    (translate_gateway(routes, &inputs, &Default::default()), cas)
}

/// The HTTPS listeners as (port, the name of its client CA secret, client_authentication), sorted.
fn https_listeners(state: &Mutex<fake_octavia::State>) -> Vec<(u64, Option<String>, String)> {
    let mut out: Vec<_> =
        state.lock().unwrap().https_listeners().into_iter().map(|(_, port, ca, auth)| (port, ca, auth)).collect();
    out.sort();
    out
}

/// The payload of the secret named `name`.
fn payload(state: &Mutex<fake_octavia::State>, name: &str) -> String {
    let s = state.lock().unwrap();
    let x = s.secrets.iter().find(|x| x["name"] == name).unwrap_or_else(|| panic!("no secret {name}"));
    x["payload"].as_str().unwrap_or_default().to_string()
}

async fn converged(r: &kuryr_l7_router::gateway::router::GatewayRouter) -> std::sync::Arc<Mutex<fake_octavia::State>> {
    let (port, state) = fake_octavia::start(114_688).await;
    let router = fake_octavia::router_named(port, &r.name, 114_688);
    let session = router.octavia().session().clone();
    let router = router.with_barbican(Barbican::new(session));
    let report = router.converge(&r.desired).await.expect("converged");
    assert!(
        report.held.is_empty() && report.failures.is_empty() && report.conflicts.is_empty(),
        "{:?} {:?} {:?}",
        report.held,
        report.failures,
        report.conflicts
    );
    state
}

#[tokio::test]
async fn the_upstream_validation_gateway_gets_a_listener_per_port_each_with_its_own_ca() {
    for (file, gw, auth) in [
        ("gateway-with-clientcertificate-validation.yaml", "client-validation-default", "MANDATORY"),
        (
            "gateway-with-clientcertificate-validation-insecure-fallback.yaml",
            "client-validation-insecure-fallback",
            "OPTIONAL",
        ),
    ] {
        let (r, cas) = desired(file, gw);
        let state = converged(&r).await;
        let listeners = https_listeners(&state);
        assert_eq!(listeners.iter().map(|l| (l.0, l.2.as_str())).collect::<Vec<_>>(), [(443, auth), (8443, auth)]);
        for (port, ca) in
            [(443, "tls-validity-checks-ca-certificate"), (8443, "tls-validity-checks-per-port-ca-certificate")]
        {
            let l = listeners.iter().find(|l| l.0 == port).unwrap();
            let secret = l.1.clone().unwrap_or_else(|| panic!("{file}: port {port} has no client CA"));
            assert!(secret.contains(&format!(":client-ca.gateway-conformance-infra_{ca}:")), "{file}: {secret}");
            let pem = &cas.iter().find(|(n, _)| n == ca).unwrap().1;
            let strip = |s: &str| s.replace(['\n', '\r'], "");
            assert_eq!(strip(&payload(&state, &secret)), strip(pem), "{file}: port {port} stores its ConfigMap's CA");
        }
    }
}

/// GatewayFrontendInvalidDefaultClientCertificateValidation: the HTTPS listener's CA does not
/// resolve, so there is no HTTPS listener at all (never served unchecked); the HTTP one is served.
#[tokio::test]
async fn an_unresolved_ca_leaves_its_port_without_a_listener_and_http_served() {
    let (r, _) = desired(
        "gateway-invalid-default-frontend-client-certificate-validation.yaml",
        "invalid-default-client-validation-config",
    );
    assert_eq!(r.http_port, Some(80));
    assert!(r.desired.https.is_none() && r.desired.more_https.is_empty());
    let state = converged(&r).await;
    assert!(https_listeners(&state).is_empty());
    let s = state.lock().unwrap();
    assert!(s.listeners.iter().any(|l| l["protocol"] == "HTTP" && l["protocol_port"] == 80), "{:?}", s.listeners);
    assert!(s.secrets.is_empty(), "nothing stored in Barbican");
}
