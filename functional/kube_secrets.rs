//! TLS Secrets read in some namespaces only, as etc/overlays/secret-namespaces deploys it: the
//! API server has the shipped RBAC without the cluster-wide read of Secrets and the overlay's
//! Role in namespace `certs`; `kuryr-l7-router run` (the binary, against the 2025.1 OpenStack
//! with Barbican) has the overlay's `[kubernetes] secret_namespaces`. A TLS Ingress whose Secret
//! is in `certs` is served with its certificate; one in `shop` is refused (a Warning naming the
//! Secret and the option) and keeps its HTTP route; no request is refused (403) and every
//! Secret request stays in `certs`.

use super::common::*;
use super::kube_cluster::{Cluster, WITHOUT_CLUSTER_SECRETS};
use super::kube_objects::*;
use k8s_openapi::api::networking::v1::Ingress;
use kube::Api;
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant};

fn overlay_file(file: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("etc/overlays/secret-namespaces").join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A `kubernetes.io/tls` Secret `ns/name` for `host` (self-signed, made now).
fn tls_secret(ns: &str, name: &str, host: &str) -> Value {
    let key = rcgen::KeyPair::generate().unwrap();
    let crt = rcgen::CertificateParams::new(vec![host.to_string()]).unwrap().self_signed(&key).unwrap();
    json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
           "metadata": {"name": name, "namespace": ns},
           "stringData": {"tls.crt": crt.pem(), "tls.key": key.serialize_pem()}})
}

/// [`ingress`] with `spec.tls` naming the Secret `secret` for its host.
fn tls_ingress(ns: &str, name: &str, host: &str, secret: &str) -> Value {
    let mut ing = ingress(ns, name, host, "web");
    ing["spec"]["tls"] = json!([{"hosts": [host], "secretName": secret}]);
    ing
}

/// See the module docs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_api_server_secrets_read_only_in_the_listed_namespaces() {
    if !enabled() {
        return;
    }
    let cluster = Cluster::start_with("secrets", WITHOUT_CLUSTER_SECRETS);
    let kube = cluster.admin().await;
    let name = unique("kube", "sns");
    let routers = Routers::of(&name);
    for obj in
        backend_objects("certs", "web", "10.0.0.75").into_iter().chain(backend_objects("shop", "web", "10.0.0.76"))
    {
        apply(&kube, obj).await;
    }
    // The overlay's Role and RoleBinding, as shipped (their namespace exists now).
    for doc in serde_saphyr::from_multiple::<Value>(&overlay_file("secrets-role.yaml")).unwrap() {
        apply(&kube, doc).await;
    }
    apply(&kube, tls_secret("certs", "web-tls", "secure.example.com")).await;
    apply(&kube, tls_secret("shop", "web-tls", "shop.example.com")).await;
    apply(&kube, tls_ingress("certs", "web", "secure.example.com", "web-tls")).await;
    apply(&kube, tls_ingress("shop", "web", "shop.example.com", "web-tls")).await;
    // The overlay's secret-namespaces.conf, as shipped (its [kubernetes] lines).
    let conf = overlay_file("secret-namespaces.conf");
    let option = conf.lines().find(|l| l.starts_with("secret_namespaces")).expect("secret_namespaces in the overlay");
    let launch = Launch { kubernetes: option.to_string(), ..Launch::default() };
    let controller = Controller::start_with(&cluster, &name, "a", launch);
    let (in_certs, in_shop): (Api<Ingress>, Api<Ingress>) =
        (Api::namespaced(kube.clone(), "certs"), Api::namespaced(kube.clone(), "shop"));
    let body = async {
        let started = Instant::now();
        let ip = eventually_value(Duration::from_secs(600), "certs/web served", || served(&in_certs, "web")).await;
        eprintln!("certs/web served at {ip} after {:.0} s", started.elapsed().as_secs_f64());
        let refusal = eventually_value(Duration::from_secs(120), "a SecretNotRead Warning on shop/web", || async {
            let list = kubectl_events(&kube, "shop").await;
            list.into_iter().find(|e| e.starts_with("Warning SecretNotRead Ingress/web"))
        })
        .await;
        eprintln!("{refusal}");
        for part in ["shop/web-tls", "secret_namespaces = certs"] {
            assert!(refusal.contains(part), "the Warning names {part:?}: {refusal}");
        }
        // Its host is held as for a missing Secret, never blocking the rest: its HTTP route is
        // served, on the same router.
        let shop = eventually_value(Duration::from_secs(120), "shop/web served", || served(&in_shop, "web")).await;
        assert_eq!(shop, ip);
        // The certificate of certs is on the router (stored in Barbican), the one of shop not.
        let log = controller.log_since(0);
        let stored: Vec<&str> = log.lines().filter(|l| l.contains("barbican write done")).collect();
        eprintln!("Barbican writes:\n{}", stored.join("\n"));
        assert!(stored.iter().any(|l| l.contains("certs_web-tls")), "the certificate of certs/web-tls stored");
        assert!(!stored.iter().any(|l| l.contains("shop_web-tls")), "the certificate of shop/web-tls stored");
        // Namespaced RBAC enough: nothing refused, and every Secret request in `certs`.
        controller.assert_no_refusal(&cluster);
        let secrets: Vec<String> = cluster
            .controller_requests_since(0)
            .into_iter()
            .filter(|(_, _, uri)| uri.contains("/secrets"))
            .map(|(code, verb, uri)| format!("{code} {verb} {uri}"))
            .collect();
        assert!(!secrets.is_empty(), "no Secret read at all");
        let outside: Vec<&String> =
            secrets.iter().filter(|r| !r.contains("/api/v1/namespaces/certs/secrets")).collect();
        assert!(outside.is_empty(), "Secret requests outside certs: {outside:?}");
        // Deleted: the finalizer goes once the routes and the certificate are off the router.
        for api in [&in_certs, &in_shop] {
            api.delete("web", &Default::default()).await.unwrap();
        }
        eventually_value(Duration::from_secs(180), "both Ingresses gone", || async {
            let gone = |r: Result<Option<Ingress>, kube::Error>| matches!(r, Ok(None));
            (gone(in_certs.get_opt("web").await) && gone(in_shop.get_opt("web").await)).then_some(())
        })
        .await;
        eprintln!("whole test: {:.0} s", started.elapsed().as_secs_f64());
    };
    let result = futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(body)).await;
    finish(result, controller, &routers).await;
}
