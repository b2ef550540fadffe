//! The TLS Secret watch on a FAKE Kubernetes API server (`tests/support/fake_api.rs`): only the
//! Secrets something names keep their data in the cache; a Secret named later is filled by a
//! re-list of the watch (never a GET beside it) and served; a renewal of a named Secret still
//! reaches the router; the key material is never logged.

use crate::support::controller_run::spawn_controller;
use crate::support::fake_api;
use crate::support::fake_settings;
use fake_api::Fake;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::networking::v1::Ingress;
use kube::api::Api;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kuryr_l7_router::controller::context::StoreWriters;
use kuryr_l7_router::controller::ingress::tls_secrets::{SecretSource, held_without_data, watch_tls_secrets};
use kuryr_l7_router::controller::writer::{MembersResult, RouterBackend, SyncResult};
use kuryr_l7_router::driver::ownership::Ownership;
use kuryr_l7_router::driver::plan::DiffOptions;
use kuryr_l7_router::model::{DesiredRouter, Pool};
use kuryr_l7_router::testing::SimBackend;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A certificate for `host` and its key, PEM.
fn certificate(host: &str) -> (String, String) {
    let key = rcgen::KeyPair::generate().unwrap();
    let crt = rcgen::CertificateParams::new(vec![host.to_string()]).unwrap().self_signed(&key).unwrap();
    (crt.pem(), key.serialize_pem())
}

fn base64(text: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(text)
}

fn tls_secret(name: &str, (crt, key): &(String, String)) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
           "metadata": {"name": name, "namespace": "shop"},
           "data": {"tls.crt": base64(crt), "tls.key": base64(key)}})
}

/// An Ingress of `class` with one host routed to `web`, `spec.tls` naming `secret` if any.
fn ingress(name: &str, class: &str, secret: Option<&str>) -> Value {
    let host = format!("{name}.example.com");
    let tls: Vec<Value> = secret.iter().map(|s| json!({"hosts": [host], "secretName": s})).collect();
    json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
           "metadata": {"name": name, "namespace": "shop", "creationTimestamp": "2026-01-01T00:00:00Z"},
           "spec": {"ingressClassName": class, "tls": tls, "rules": [{"host": host, "http": {"paths": [
               {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]}})
}

async fn eventually<T>(what: &str, secs: u64, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn tls_key(s: &Secret) -> Option<Vec<u8>> {
    s.data.as_ref().and_then(|d| d.get("tls.key")).map(|k| k.0.clone())
}

fn lists_of_secrets(fake: &Fake) -> usize {
    fake.reads().iter().filter(|r| r.starts_with("GET /api/v1/secrets?") && !r.contains("watch=")).count()
}

/// The watch alone: an unnamed Secret is cached without its key; an Ingress naming it later
/// makes one re-list, which fills it; a renewal and a delete still arrive.
#[tokio::test]
async fn only_named_secrets_keep_their_data_and_a_late_name_is_filled_by_a_relist() {
    // What the controller logs, to look for key material in it.
    let logs = crate::support::logs::capture_thread(tracing::Level::DEBUG);
    let fake = Fake::new();
    let (named_pem, unnamed_pem, renewed_pem) = (certificate("a"), certificate("b"), certificate("c"));
    fake.put("secrets", tls_secret("named", &named_pem));
    fake.put("secrets", tls_secret("unnamed", &unnamed_pem));
    let (api_root, _) = fake.serve().await;
    let client = kube::Client::try_from(kube::Config::new(api_root.parse().unwrap())).unwrap();
    let (stores, mut w) = StoreWriters::new();
    let first: Ingress = serde_json::from_value(ingress("first", "any", Some("named"))).unwrap();
    for ev in [watcher::Event::Init, watcher::Event::InitApply(first), watcher::Event::InitDone] {
        w.ingresses.apply_watcher_event(&ev);
    }
    let named = stores.named_secrets.clone();
    let (task, touched) = watch_tls_secrets(
        w.secrets,
        SecretSource::All(Box::new(Api::all(client))),
        watcher::Config::default(),
        named.clone(),
        stores.ingresses,
    );
    let watch = tokio::spawn(task);
    tokio::spawn(touched.for_each(|_| async {}));
    let secrets = stores.secrets.clone();
    let get = move |name: &str| secrets.get(&ObjectRef::<Secret>::new(name).within("shop"));
    let unnamed = eventually("both Secrets cached", 5, || get("named").and(get("unnamed"))).await;
    assert_eq!(tls_key(&unnamed), None, "the key of a Secret nothing names is not held");
    assert!(held_without_data(&unnamed), "it is marked as held without data");
    assert_eq!(tls_key(&get("named").unwrap()), Some(named_pem.1.as_bytes().to_vec()), "a named Secret is whole");
    assert_eq!(lists_of_secrets(&fake), 1);

    // An Ingress names it now: one re-list (no GET of the Secret), and it is held whole.
    let late =
        watcher::Event::Apply(serde_json::from_value::<Ingress>(ingress("late", "any", Some("unnamed"))).unwrap());
    w.ingresses.apply_watcher_event(&late);
    named.ingress_changed(&stores.secrets, &late);
    eventually("the late-named Secret filled", 5, || {
        get("unnamed").as_deref().and_then(tls_key).filter(|k| k == unnamed_pem.1.as_bytes())
    })
    .await;
    assert!(!held_without_data(&get("unnamed").unwrap()));
    assert_eq!((lists_of_secrets(&fake), named.relists()), (2, 1), "one re-list");
    assert!(
        !fake.reads().iter().any(|r| r.starts_with("GET /api/v1/namespaces/shop/secrets/")),
        "no GET beside the watch"
    );

    // Renewed, then deleted: the watch carries both.
    fake.put("secrets", tls_secret("unnamed", &renewed_pem));
    eventually("the renewal cached", 5, || {
        get("unnamed").as_deref().and_then(tls_key).filter(|k| k == renewed_pem.1.as_bytes())
    })
    .await;
    fake.remove("v1/secrets", "shop", "named");
    eventually("the delete cached", 5, || get("named").is_none().then_some(())).await;
    watch.abort();
    let logs = logs.text();
    assert!(logs.contains("listing the TLS Secrets again"), "{logs}");
    for pem in [&named_pem, &unnamed_pem, &renewed_pem] {
        let body = pem.1.lines().nth(1).unwrap();
        assert!(!logs.contains(body) && !logs.contains(&base64(&pem.1)), "key material in the logs");
    }
}

/// The certificates of one desired router: name → fingerprint (None without content).
type Certificates = Vec<(String, Option<String>)>;

/// The router's backend in memory, recording the certificates (name → fingerprint, None while
/// without content) of every desired router it is asked to converge.
struct Recording {
    sim: SimBackend,
    certificates: Arc<Mutex<Vec<Certificates>>>,
}

impl RouterBackend for Recording {
    async fn sync(&self, desired: &DesiredRouter) -> SyncResult {
        let certs = desired.https.iter().flat_map(|h| h.certificates.iter());
        let certs = certs.map(|(n, c)| (n.clone(), c.content.as_ref().map(|c| c.fingerprint.clone()))).collect();
        self.certificates.lock().unwrap().push(certs);
        self.sim.sync(desired).await
    }
    async fn set_members(&self, pool: &Pool) -> MembersResult {
        self.sim.set_members(pool).await
    }
}

fn fingerprint((crt, key): &(String, String)) -> String {
    let parsed = kuryr_l7_router::certificate::ParsedCertificate::from_pem(crt.as_bytes(), key.as_bytes()).unwrap();
    parsed.sha256_fingerprint().to_string()
}

/// The whole controller: a Secret that exists before any Ingress names it is served once one
/// does (after the re-list), its renewal reaches the router, and no Warning is ever written
/// about it (pending is not missing).
#[tokio::test]
async fn a_secret_named_after_it_arrived_is_served_and_its_renewal_reaches_the_router() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let fake = Fake::new();
    fake.put(
        "ingressclasses",
        json!({"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
        "metadata": {"name": "kuryr-l7-router"}, "spec": {"controller": "openstack.org/kuryr-l7-router"}}),
    );
    let (first, renewed) = (certificate("b.example.com"), certificate("b.example.com"));
    fake.put("secrets", tls_secret("b-tls", &first));
    fake.put("ingresses", ingress("a", "kuryr-l7-router", None));
    let (api_root, _) = fake.serve().await;
    let (_dir, token) = crate::support::fake_settings::token_file();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let settings = fake_settings::fake_cluster_settings("secrets-test.conf", &api_root, &token, port, "", "");
    let owner = Ownership::new(&settings.octavia_defaults.l7_router_name);
    let sim = SimBackend::new(DiffOptions { ownership: owner, health_monitor: None }, None);
    let certificates = Arc::new(Mutex::new(Vec::new()));
    let backend = Recording { sim, certificates: certificates.clone() };
    let (stop, run) = spawn_controller(settings, backend);
    let served = |fp: String| {
        let certificates = certificates.clone();
        move || {
            let last = certificates.lock().unwrap().last().cloned()?;
            last.iter().any(|(_, f)| f.as_ref() == Some(&fp)).then_some(())
        }
    };
    eventually("a first Sync", 15, || (!certificates.lock().unwrap().is_empty()).then_some(())).await;
    fake.put("ingresses", ingress("b", "kuryr-l7-router", Some("b-tls")));
    eventually("the late-named Secret served", 10, served(fingerprint(&first))).await;
    fake.put("secrets", tls_secret("b-tls", &renewed));
    eventually("the renewal on the router", 10, served(fingerprint(&renewed))).await;
    let warnings: Vec<String> = fake
        .writes()
        .iter()
        .filter(|w| w.path.contains("/events") && w.body["type"] == "Warning")
        .map(|w| w.body.to_string())
        .collect();
    assert!(warnings.iter().all(|m| !m.contains("b-tls")), "{warnings:?}");
    let _ = stop.send(());
    run.await.unwrap().unwrap();
}

/// `[kubernetes] secret_namespaces = certs, infra`: one list and watch per namespace
/// (`/api/v1/namespaces/<ns>/secrets`), never the cluster-wide path, into one cache holding
/// the Secrets of both and none of another namespace; a Secret created later in either arrives.
#[tokio::test]
async fn secret_namespaces_watch_each_listed_namespace_only() {
    let fake = Fake::new();
    let pem = certificate("a");
    for ns in ["certs", "infra", "shop"] {
        let mut s = tls_secret(&format!("in-{ns}"), &pem);
        s["metadata"]["namespace"] = json!(ns);
        fake.put("secrets", s);
    }
    let (api_root, _) = fake.serve().await;
    let client = kube::Client::try_from(kube::Config::new(api_root.parse().unwrap())).unwrap();
    let (stores, mut w) = StoreWriters::new();
    for ev in [watcher::Event::Init, watcher::Event::InitDone] {
        w.ingresses.apply_watcher_event(&ev);
    }
    let source = SecretSource::of(&client, &["certs".to_string(), "infra".to_string()]);
    let (task, touched) = watch_tls_secrets(
        w.secrets,
        source,
        watcher::Config::default(),
        stores.named_secrets.clone(),
        stores.ingresses,
    );
    let watch = tokio::spawn(task);
    tokio::spawn(touched.for_each(|_| async {}));
    let secrets = stores.secrets.clone();
    let cached = move || {
        let mut v: Vec<String> = secrets
            .state()
            .iter()
            .map(|s| format!("{}/{}", s.metadata.namespace.as_deref().unwrap(), s.metadata.name.as_deref().unwrap()))
            .collect();
        v.sort();
        v
    };
    let c = cached.clone();
    eventually("the Secrets of certs and infra", 5, || (c().len() == 2).then_some(())).await;
    assert_eq!(cached(), ["certs/in-certs", "infra/in-infra"]);
    let mut later = tls_secret("later", &pem);
    later["metadata"]["namespace"] = json!("infra");
    fake.put("secrets", later);
    let c = cached.clone();
    eventually("a Secret created later in infra", 5, || c().contains(&"infra/later".to_string()).then_some(())).await;
    let reads: Vec<String> = fake.reads().into_iter().filter(|r| r.contains("secrets")).collect();
    assert!(
        reads.iter().all(|r| r.contains("/namespaces/certs/secrets") || r.contains("/namespaces/infra/secrets")),
        "{reads:#?}"
    );
    for ns in ["certs", "infra"] {
        assert!(
            reads.iter().any(|r| r.contains(&format!("/namespaces/{ns}/secrets")) && r.contains("watch=")),
            "{reads:#?}"
        );
    }
    watch.abort();
}
