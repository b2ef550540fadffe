//! Client-certificate validation (Gateway `spec.tls.frontend`) and a Gateway's several HTTPS
//! ports through the real driver (`Router::converge`) against the stateful Octavia + Barbican of
//! tests/support/fake_octavia.rs: each CA bundle is a Barbican secret of ours (its PEM as the
//! payload), named on each listener as `client_ca_tls_container_ref` with
//! `client_authentication`; a CA change is one store and one listener PUT, then the old secret is
//! deleted; validation removed is `NONE` and the CA secret deleted; an HTTPS port added is one
//! listener create, dropped one listener delete; and a CA Barbican refuses holds that listener
//! back (never served without the validation asked for) while the other one converges.

use crate::support::fake_octavia;

use kuryr_l7_router::model::{
    CaBundle, Certificate, CertificateContent, ClientAuthentication, ClientValidation, DesiredRouter, HttpsListener,
    KubeRef,
};
use kuryr_l7_router::openstack::Barbican;
use kuryr_l7_router::testing::{exact_route, member, pool};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

const ROUTER: &str = "kuryr-gw-0123456789abcdef-infra.gw";

/// The Gateway's one server certificate (both ports serve it).
fn certificate() -> Certificate {
    let key = rcgen::KeyPair::generate().unwrap();
    let crt = rcgen::CertificateParams::new(vec!["example.org".to_string()]).unwrap().self_signed(&key).unwrap();
    let parsed =
        kuryr_l7_router::certificate::ParsedCertificate::from_pem(crt.pem().as_bytes(), key.serialize_pem().as_bytes())
            .unwrap();
    Certificate {
        name: "infra_tls".into(),
        secret: KubeRef::new("Secret", "infra", "tls"),
        hosts: vec![],
        owners: vec![KubeRef::new("Gateway", "infra", "gw")],
        content: Some(CertificateContent::new(Arc::new(parsed))),
    }
}

/// The CA bundle of ConfigMap `infra/<name>` holding `text`.
fn ca(name: &str, text: &str) -> CaBundle {
    let pem = format!("-----BEGIN CERTIFICATE-----\n{text}\n-----END CERTIFICATE-----\n");
    let digest = ring::digest::digest(&ring::digest::SHA256, pem.as_bytes());
    let content_id = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    CaBundle { name: format!("infra_{name}"), source: KubeRef::new("ConfigMap", "infra", name), pem, content_id }
}

fn https(port: u16, cert: &Certificate, validation: Option<(CaBundle, ClientAuthentication)>) -> HttpsListener {
    HttpsListener {
        port,
        certificates: BTreeMap::from([(cert.name.clone(), cert.clone())]),
        default_certificate: cert.name.clone(),
        policies: vec![exact_route(&format!("/on-{port}"), "infra_web", 1)],
        default_pool: None,
        client_validation: validation.map(|(ca, mode)| ClientValidation { ca, mode }),
    }
}

/// 443 validating against `ca443`; 8443 (when given) against its own CA.
fn gateway(
    cert: &Certificate,
    ca443: Option<(CaBundle, ClientAuthentication)>,
    more: Option<(CaBundle, ClientAuthentication)>,
) -> DesiredRouter {
    let mut d = DesiredRouter { default_pool: Some("infra_web".into()), ..DesiredRouter::default() };
    d.pools.insert("infra_web".into(), pool("infra_web", vec![member("10.1.0.1", 1)]));
    d.https = Some(https(443, cert, ca443));
    if let Some(v) = more {
        d.more_https.insert(8443, https(8443, cert, Some(v)));
    }
    d
}

fn router(port: u16) -> kuryr_l7_router::driver::Router {
    let r = fake_octavia::router_named(port, ROUTER, 114_688);
    let session = r.octavia().session().clone();
    r.with_barbican(Barbican::new(session))
}

/// The HTTPS listeners as (name, port, client CA secret name, client_authentication), sorted.
fn https_listeners(state: &Mutex<fake_octavia::State>) -> Vec<(String, u64, Option<String>, String)> {
    state.lock().unwrap().https_listeners()
}

/// The payloads of our client CA secrets, by secret name.
fn ca_secrets(state: &Mutex<fake_octavia::State>) -> BTreeMap<String, String> {
    let s = state.lock().unwrap();
    s.secrets
        .iter()
        .filter(|x| x["name"].as_str().is_some_and(|n| n.contains(":client-ca.")))
        .map(|x| (x["name"].as_str().unwrap().to_string(), x["payload"].as_str().unwrap_or_default().to_string()))
        .collect()
}

fn ca_secret_name(ca: &CaBundle) -> String {
    format!("kuryr-l7-router:c1:{ROUTER}:client-ca.{}:{}", ca.name, &ca.content_id[..16])
}

fn descriptions(r: &kuryr_l7_router::driver::ConvergeReport) -> Vec<String> {
    r.writes.iter().map(|w| format!("{} {}", w.kind, w.description)).collect()
}

#[tokio::test]
async fn each_https_port_validates_client_certificates_against_its_own_ca() {
    use ClientAuthentication::{Mandatory, Optional};
    let (port, state) = fake_octavia::start(114_688).await;
    let r = router(port);
    let cert = certificate();
    let (a1, b) = (ca("ca-a", "A1"), ca("ca-b", "B"));
    let want = gateway(&cert, Some((a1.clone(), Mandatory)), Some((b.clone(), Optional)));
    let created = r.converge(&want).await.expect("converged");
    let https_name = format!("{ROUTER}-https");
    let more_name = format!("{ROUTER}-https-8443");
    assert_eq!(
        https_listeners(&state),
        vec![
            (https_name.clone(), 443, Some(ca_secret_name(&a1)), "MANDATORY".into()),
            (more_name.clone(), 8443, Some(ca_secret_name(&b)), "OPTIONAL".into()),
        ],
        "each port its own listener, its own CA"
    );
    let stored = ca_secrets(&state);
    assert_eq!(stored.get(&ca_secret_name(&a1)), Some(&a1.pem), "the PEM is the payload");
    assert_eq!(stored.get(&ca_secret_name(&b)), Some(&b.pem));
    let kinds = created.writes_by_kind();
    // One server certificate for both ports, one secret per CA; each listener created with its
    // CA in the create body (no PUT after).
    assert_eq!(kinds.get("create_secret"), Some(&3), "{:?}", descriptions(&created));
    assert_eq!(kinds.get("create_listener"), Some(&2), "{:?}", descriptions(&created));
    assert_eq!(kinds.get("update_listener"), None, "{:?}", descriptions(&created));
    assert!(descriptions(&created).iter().all(|d| !d.contains("BEGIN")), "no PEM in the write records");
    let again = r.converge(&want).await.expect("second convergence");
    assert!(again.writes.is_empty(), "{:?}", descriptions(&again));
    // A restart (a new driver, nothing cached): nothing written, no second listener.
    let restarted = router(port).converge(&want).await.expect("after a restart");
    assert!(restarted.writes.is_empty(), "{:?}", descriptions(&restarted));

    // The CA of 443 changes: one store, one listener PUT (the CA only), the old secret deleted.
    let a2 = ca("ca-a", "A2");
    let changed = gateway(&cert, Some((a2.clone(), Mandatory)), Some((b.clone(), Optional)));
    let rotated = r.converge(&changed).await.expect("CA changed");
    assert_eq!(
        rotated.writes.iter().map(|w| w.kind).collect::<Vec<_>>(),
        ["create_secret", "update_listener", "delete_secret"],
        "{:?}",
        descriptions(&rotated)
    );
    let put =
        state.lock().unwrap().writes.iter().rev().find(|(l, _)| l.starts_with("PUT /v2/lbaas/listeners/")).cloned();
    assert!(put.is_some(), "a listener PUT");
    assert_eq!(https_listeners(&state)[0].2, Some(ca_secret_name(&a2)));
    assert_eq!(ca_secrets(&state).keys().cloned().collect::<Vec<_>>(), {
        let mut k = vec![ca_secret_name(&a2), ca_secret_name(&b)];
        k.sort();
        k
    });

    // Validation removed from 443 and port 8443 dropped: 443 goes to NONE without a CA, the 8443
    // listener is deleted, both CA secrets are deleted; the certificate stays.
    let plain = gateway(&cert, None, None);
    let removed = r.converge(&plain).await.expect("validation removed");
    let kinds = removed.writes_by_kind();
    assert_eq!(kinds.get("delete_listener"), Some(&1), "{:?}", descriptions(&removed));
    assert_eq!(kinds.get("update_listener"), Some(&1), "{:?}", descriptions(&removed));
    assert_eq!(kinds.get("delete_secret"), Some(&2), "{:?}", descriptions(&removed));
    assert_eq!(kinds.get("create_secret"), None, "{:?}", descriptions(&removed));
    assert_eq!(https_listeners(&state), vec![(https_name.clone(), 443, None, "NONE".into())]);
    assert!(ca_secrets(&state).is_empty());
    assert_eq!(state.lock().unwrap().secrets.len(), 1, "the server certificate's secret stays");
    let again = r.converge(&plain).await.expect("idempotent");
    assert!(again.writes.is_empty(), "{:?}", descriptions(&again));

    // Port 8443 added back: one listener create (and its CA's store, its route), 443 untouched.
    let added = r.converge(&gateway(&cert, None, Some((b.clone(), Mandatory)))).await.expect("8443 added");
    let kinds = added.writes_by_kind();
    assert_eq!(kinds.get("create_secret"), Some(&1), "{:?}", descriptions(&added));
    assert_eq!(kinds.get("create_listener"), Some(&1), "{:?}", descriptions(&added));
    let others = added.writes.iter().filter(|w| !w.kind.starts_with("create_")).count();
    assert_eq!(others, 0, "nothing updated or deleted: {:?}", descriptions(&added));
    assert_eq!(
        https_listeners(&state),
        vec![(https_name, 443, None, "NONE".into()), (more_name, 8443, Some(ca_secret_name(&b)), "MANDATORY".into())]
    );
}

#[tokio::test]
async fn a_ca_barbican_refuses_holds_its_listener_back_and_the_others_converge() {
    use ClientAuthentication::Mandatory;
    let (port, state) = fake_octavia::start(114_688).await;
    state.lock().unwrap().refuse_secrets_named = Some("client-ca.infra_ca-b".into());
    let r = router(port);
    let cert = certificate();
    let (a, b) = (ca("ca-a", "A"), ca("ca-b", "B"));
    let report =
        r.converge(&gateway(&cert, Some((a.clone(), Mandatory)), Some((b, Mandatory)))).await.expect("converged");
    // 443 is served with its CA; 8443 is not created without its CA (never served unchecked).
    assert_eq!(
        https_listeners(&state),
        vec![(format!("{ROUTER}-https"), 443, Some(ca_secret_name(&a)), "MANDATORY".into())]
    );
    assert_eq!(report.failures.len(), 1, "{:?}", report.failures);
    let failure = &report.failures[0];
    assert!(failure.object.contains("client-ca.infra_ca-b"), "{failure:?}");
    assert_eq!(failure.owners, vec![KubeRef::new("Gateway", "infra", "gw")]);
    assert!(
        report.conflicts.iter().any(|c| c.contains("client CA infra_ca-b") && c.contains("port 8443")),
        "{:?}",
        report.conflicts
    );
    // The HTTP side and the 443 listener's route converged all the same.
    let s = state.lock().unwrap();
    assert!(s.policies.iter().any(|p| p["name"] == "gateway:infra/web:/on-443"));
}

/// `show` (the router read back, table and JSON) lists every listener of the Gateway's router:
/// the HTTP one and both HTTPS ports, each with its policy and certificate counts, and its client
/// CA by Barbican secret name with its `client_authentication` where it has one (8443, not
/// 443); never a PEM or a key.
#[tokio::test]
async fn show_lists_each_https_port_with_its_client_ca_and_mode() {
    let (port, _state) = fake_octavia::start(114_688).await;
    let r = router(port);
    let b = ca("ca-b", "B1");
    let validated = Some((b.clone(), ClientAuthentication::Optional));
    r.converge(&gateway(&certificate(), None, validated)).await.expect("converged");
    let snapshot = r.snapshot().await.expect("read").expect("the router exists");
    let text = kuryr_l7_router::show::render(&snapshot);

    let table = text.split("\nLISTENERS (3)\n").nth(1).unwrap_or_else(|| panic!("no listener table:\n{text}"));
    let rows: Vec<Vec<&str>> = table.lines().take(4).map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(rows[0], ["PROTOCOL", "PORT", "POLICIES", "CERTIFICATES", "CLIENT", "CA"], "{text}");
    assert_eq!(rows[1], ["HTTP", "80", "0", "-", "-"], "{text}");
    let name_b = ca_secret_name(&b);
    assert_eq!(rows[2], ["TERMINATED_HTTPS", "443", "1", "1", "-"], "{text}");
    assert_eq!(rows[3], ["TERMINATED_HTTPS", "8443", "1", "1", "OPTIONAL", name_b.as_str()], "{text}");

    // Each port's section: its client CA (name, ConfigMap, content id), its certificate, its route.
    let more = &snapshot.more_https[0];
    let section = text.split(&format!("HTTPS LISTENER {} (TERMINATED_HTTPS port 8443)", more.listener_id)).nth(1);
    let section = section.unwrap_or_else(|| panic!("no section for the 8443 listener:\n{text}"));
    assert!(section.contains(&format!("CLIENT CERTIFICATES: OPTIONAL against {name_b}")), "{text}");
    assert!(section.contains(&format!("source ConfigMap infra/ca-b  sha256 {}", b.content_id)), "{text}");
    assert!(section.contains("CERTIFICATES (1, SNI)") && section.contains("PATH EQUAL_TO /on-8443"), "{text}");
    let main = text.split("(TERMINATED_HTTPS port 8443)").next().unwrap();
    assert!(main.contains("PATH EQUAL_TO /on-443") && !main.contains("CLIENT CERTIFICATES"), "{text}");

    let json: Value = serde_json::from_str(&kuryr_l7_router::show::render_json(&snapshot)).unwrap();
    assert_eq!((&json["https"]["port"], &json["https"]["client_ca"]), (&json!(443), &Value::Null), "{json}");
    let more = json["more_https"].as_array().unwrap_or_else(|| panic!("no more_https: {json}"));
    assert_eq!(more.len(), 1, "{json}");
    assert_eq!((&more[0]["port"], &more[0]["client_ca"]["name"]), (&json!(8443), &json!(name_b)), "{json}");
    assert_eq!(more[0]["client_ca"]["client_authentication"], "OPTIONAL", "{json}");
    assert_eq!(more[0]["policies"][0]["rules"][0]["value"], "/on-8443", "{json}");

    // Names and public facts only: no CA PEM, no certificate or key PEM.
    let json = json.to_string();
    for out in [&text, &json] {
        for secret in [b.pem.as_str(), "BEGIN", "PRIVATE KEY", "B1\n"] {
            assert!(!out.contains(secret), "{secret:?} in the output:\n{out}");
        }
    }
}

/// A new content of the Gateway's certificate that Barbican refuses to store (a 403) is held and
/// reported on the Gateway, and the listener keeps the last good secret (never switched to a
/// secret that does not exist); while on hold, the store is not tried again.
#[tokio::test]
async fn a_certificate_barbican_refuses_keeps_the_listener_on_its_last_good_secret() {
    let (port, state) = fake_octavia::start(114_688).await;
    let r = router(port);
    r.converge(&gateway(&certificate(), None, None)).await.expect("converged");
    let served = || {
        let s = state.lock().unwrap();
        let l = s.listeners.iter().find(|l| l["protocol"] == "TERMINATED_HTTPS").expect("the HTTPS listener");
        l["default_tls_container_ref"].as_str().unwrap_or_default().to_string()
    };
    let stores = || state.lock().unwrap().writes.iter().filter(|(l, _)| l.starts_with("POST /v1/secrets")).count();
    let last_good = served();
    assert!(!last_good.is_empty());
    let stored = stores();

    state.lock().unwrap().refuse_secrets_named = Some(":infra_tls:".into());
    let renewed = gateway(&certificate(), None, None);
    let refused = r.converge(&renewed).await.expect("converged");
    assert_eq!(refused.failures.len(), 1, "{:?}", refused.failures);
    assert!(refused.failures[0].object.contains(":infra_tls:"), "{:?}", refused.failures);
    assert_eq!(refused.failures[0].owners, vec![KubeRef::new("Gateway", "infra", "gw")]);
    assert_eq!(stores(), stored + 1, "one store tried");
    assert_eq!(served(), last_good, "the listener keeps its last good certificate");
    assert!(refused.writes.is_empty(), "nothing written: {:?}", descriptions(&refused));

    let held = r.converge(&renewed).await.expect("converged on hold");
    assert_eq!(stores(), stored + 1, "not tried again while on hold");
    assert_eq!(held.held.len(), 1, "{:?}", held.held);
    assert_eq!(served(), last_good);
}
