//! Client certificate validation (Gateway `spec.tls.frontend`) through the Gateway loop on the
//! FAKE Kubernetes API server: the CA bundle is a ConfigMap the loop watches, so creating it,
//! changing its `ca.crt` or deleting it re-converges the Gateway (its listener status and the
//! router table the driver serves) at once, not at the loop's periodic recheck (set to a minute
//! here, longer than the test waits).

use crate::support::eventually;
use crate::support::fake_api;
use crate::support::gateway_case::ca_pem;
use crate::support::gateway_loop::{client_of, gateway_loop, run};
use eventually::eventually_every;
use fake_api::Fake;

use kuryr_l7_router::certificate::{CaCertificates, sha256_hex};
use kuryr_l7_router::gateway::keep::Tables;
use kuryr_l7_router::model::ClientAuthentication;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::sync::watch;

const GW_API: &str = "gateway.networking.k8s.io/v1";
const NS: &str = "shop";

fn objects(fake: &Fake) {
    fake.put(
        "gatewayclasses",
        json!({"apiVersion": GW_API, "kind": "GatewayClass", "metadata": {"name": "kuryr", "generation": 1},
               "spec": {"controllerName": "openstack.org/kuryr-l7-router"}}),
    );
    let key = rcgen::KeyPair::generate().unwrap();
    let crt = rcgen::CertificateParams::new(vec!["shop.example.com".to_string()]).unwrap().self_signed(&key).unwrap();
    fake.put(
        "secrets",
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "cert", "namespace": NS},
               "type": "kubernetes.io/tls", "stringData": {"tls.crt": crt.pem(), "tls.key": key.serialize_pem()}}),
    );
    fake.put(
        "services",
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "cart", "namespace": NS},
               "spec": {"ports": [{"port": 80}]}}),
    );
    fake.put(
        "gateways",
        json!({"apiVersion": GW_API, "kind": "Gateway", "metadata": {"name": "mtls", "namespace": NS, "generation": 1},
               "spec": {"gatewayClassName": "kuryr",
                        "tls": {"frontend": {"default": {"validation": {
                            "caCertificateRefs": [{"group": "", "kind": "ConfigMap", "name": "clients"}]}}}},
                        "listeners": [{"name": "https", "port": 443, "protocol": "HTTPS",
                                       "tls": {"certificateRefs": [{"name": "cert"}]}}]}}),
    );
    fake.put(
        "httproutes",
        json!({"apiVersion": GW_API, "kind": "HTTPRoute", "metadata": {"name": "store", "namespace": NS, "generation": 1},
               "spec": {"parentRefs": [{"name": "mtls"}], "rules": [{"backendRefs": [{"name": "cart", "port": 80}]}]}}),
    );
}

fn ca_config_map(ns: &str, name: &str, pem: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns},
           "data": {"ca.crt": pem, "key.crt": "-----BEGIN RSA PRIVATE KEY-----\nnot for us\n-----END RSA PRIVATE KEY-----\n"}})
}

/// A Gateway loop on `fake` (20 ms debounce, a minute's recheck), and the router tables it
/// publishes for the driver.
async fn start(fake: &Arc<Fake>) -> (watch::Sender<bool>, watch::Receiver<Tables>) {
    let (api_root, _) = fake.serve().await;
    let (routers, tables) = watch::channel(Tables::default());
    let programmed: kuryr_l7_router::gateway::build::Programmed =
        [((NS.to_string(), "mtls".to_string()), vec!["192.0.2.10".to_string()])].into();
    let gl = gateway_loop(client_of(&api_root), watch::channel(programmed).1, routers, Duration::from_secs(60));
    (run(gl), tables)
}

/// The `https` listener's (Accepted reason, ResolvedRefs reason) in the Gateway's status.
fn listener_reasons(fake: &Fake) -> Option<(String, String)> {
    let gw = fake.get(&format!("{GW_API}/gateways"), NS, "mtls")?;
    let conds = gw["status"]["listeners"].as_array()?.iter().find(|l| l["name"] == "https")?["conditions"].clone();
    let reason = |kind: &str| {
        conds.as_array()?.iter().find(|c| c["type"] == kind).and_then(|c| c["reason"].as_str()).map(String::from)
    };
    Some((reason("Accepted")?, reason("ResolvedRefs")?))
}

/// The CA (content id, mode) the router table serves on port 443; `Some(None)`: the port is
/// served without validation; `None`: the port is not served.
fn served_ca(tables: &watch::Receiver<Tables>) -> Option<Option<(String, ClientAuthentication)>> {
    let t = tables.borrow();
    let router = t.routers.iter().find(|r| r.owner.namespace == NS && r.owner.name == "mtls")?;
    let port = router.listeners.iter().find(|p| p.port == 443)?;
    Some(port.client_validation.as_ref().map(|v| (v.ca.content_id.clone(), v.mode)))
}

fn content_id(pem: &str) -> String {
    sha256_hex(CaCertificates::from_pem(pem.as_bytes()).unwrap().pem())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ca_config_map_created_changed_or_deleted_reconverges_the_gateway_at_once() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let fake = Fake::new();
    fake.gateway_api.store(true, Ordering::SeqCst);
    objects(&fake);
    let (stop, tables) = start(&fake).await;
    let poll = Duration::from_millis(50);
    let reasons = |a: &str, r: &str| Some((a.to_string(), r.to_string()));

    // No ConfigMap yet: the listener is refused (never served without the check).
    eventually_every("NoValidCACertificate", 10, poll, || {
        (listener_reasons(&fake) == reasons("NoValidCACertificate", "InvalidCACertificateRef")).then_some(())
    })
    .await;
    assert_eq!(served_ca(&tables), None, "port 443 is not served");

    // Created: the listener is served, checking against that CA (within seconds, not the
    // minute of the recheck: the ConfigMap watch woke the loop).
    let first = ca_pem("clients-1");
    fake.put("configmaps", ca_config_map(NS, "clients", &first));
    let want = Some(Some((content_id(&first), ClientAuthentication::Mandatory)));
    eventually_every("the first CA served", 5, poll, || (served_ca(&tables) == want).then_some(())).await;
    eventually_every("Accepted", 5, poll, || {
        (listener_reasons(&fake) == reasons("Accepted", "ResolvedRefs")).then_some(())
    })
    .await;

    // Rotated: the new CA replaces it.
    let second = ca_pem("clients-2");
    fake.put("configmaps", ca_config_map(NS, "clients", &second));
    let want = Some(Some((content_id(&second), ClientAuthentication::Mandatory)));
    eventually_every("the rotated CA served", 5, poll, || (served_ca(&tables) == want).then_some(())).await;

    // A same-named ConfigMap in another namespace is not this Gateway's CA (nor is the one of
    // the Gateway's namespace replaced by it).
    fake.put("configmaps", ca_config_map("other", "clients", &ca_pem("other")));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(served_ca(&tables), want);

    // A broken ca.crt: refused again, naming the problem.
    fake.put("configmaps", ca_config_map(NS, "clients", "not a certificate"));
    eventually_every("refused again", 5, poll, || {
        (listener_reasons(&fake) == reasons("NoValidCACertificate", "InvalidCACertificateRef")).then_some(())
    })
    .await;
    assert_eq!(served_ca(&tables), None);

    // Deleted after a good one: refused.
    fake.put("configmaps", ca_config_map(NS, "clients", &first));
    eventually_every("served again", 5, poll, || served_ca(&tables).flatten().map(|_| ())).await;
    fake.remove("v1/configmaps", NS, "clients");
    eventually_every("refused once deleted", 5, poll, || served_ca(&tables).is_none().then_some(())).await;
    let _ = stop.send(true);
}
