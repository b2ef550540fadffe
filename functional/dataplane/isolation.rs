//! A named host never reaches another namespace's catch-all, through Octavia-rendered haproxy:
//! tenant A names a-api.example.com with only `/v1` (and TLS), tenant B has an Ingress with
//! only a `defaultBackend` (the router-wide catch-all). A's unmatched requests (host with a port,
//! mixed case, `/`, a path under B's prefix) get the responder's 404 on both listeners, with host
//! ownership off and on; only a host that no Ingress names reaches B's Service.

use super::converge;
use super::status_answers::{Responder, send_requests};
use crate::common::{enabled, local_router, session};
use kuryr_l7_router::openstack::Barbican;
use kuryr_l7_router::translate::manifest::load_str;
use kuryr_l7_router::translate::options::StatusResponder;
use kuryr_l7_router::translate::{Inputs, TranslateOptions, translate};
use serde_json::json;
use std::path::Path;

const TENANTS: &str = r#"
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: kuryr}
spec: {controller: openstack.org/kuryr-l7-router}
---
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Service, metadata: {name: a-api, namespace: tenant-a}, spec: {ports: [{port: 80}]}}
- {apiVersion: v1, kind: Service, metadata: {name: b-catch-all, namespace: tenant-b}, spec: {ports: [{port: 80}]}}
- {apiVersion: v1, kind: Service, metadata: {name: b-shop, namespace: tenant-b}, spec: {ports: [{port: 80}]}}
- apiVersion: v1
  kind: Service
  metadata: {name: kuryr-status-responder, namespace: kuryr-system}
  spec: {ports: [{name: not-found, port: 8404}, {name: unavailable, port: 8503}]}
- apiVersion: discovery.k8s.io/v1
  kind: EndpointSlice
  metadata: {name: r, namespace: kuryr-system, labels: {kubernetes.io/service-name: kuryr-status-responder}}
  addressType: IPv4
  ports: [{name: not-found, port: 8404}, {name: unavailable, port: 8503}]
  endpoints: [{addresses: ["10.0.8.9"]}]
- apiVersion: discovery.k8s.io/v1
  kind: EndpointSlice
  metadata: {name: a, namespace: tenant-a, labels: {kubernetes.io/service-name: a-api}}
  addressType: IPv4
  ports: [{port: 8080}]
  endpoints: [{addresses: ["10.0.8.1"]}]
- apiVersion: discovery.k8s.io/v1
  kind: EndpointSlice
  metadata: {name: b, namespace: tenant-b, labels: {kubernetes.io/service-name: b-catch-all}}
  addressType: IPv4
  ports: [{port: 8080}]
  endpoints: [{addresses: ["10.0.8.2"]}]
- apiVersion: discovery.k8s.io/v1
  kind: EndpointSlice
  metadata: {name: s, namespace: tenant-b, labels: {kubernetes.io/service-name: b-shop}}
  addressType: IPv4
  ports: [{port: 8080}]
  endpoints: [{addresses: ["10.0.8.3"]}]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: catch-all, namespace: tenant-b, creationTimestamp: "2024-01-01T00:00:00Z"}
spec:
  ingressClassName: kuryr
  defaultBackend: {service: {name: b-catch-all, port: {number: 80}}}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: shop, namespace: tenant-b, creationTimestamp: "2024-01-02T00:00:00Z"}
spec:
  ingressClassName: kuryr
  rules:
  - host: b-shop.example.com
    http:
      paths:
      - {path: /shop, pathType: Prefix, backend: {service: {name: b-shop, port: {number: 80}}}}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: api, namespace: tenant-a, creationTimestamp: "2024-02-01T00:00:00Z"}
spec:
  ingressClassName: kuryr
  tls: [{hosts: [a-api.example.com], secretName: a-tls}]
  rules:
  - host: a-api.example.com
    http:
      paths:
      - {path: /v1, pathType: Prefix, backend: {service: {name: a-api, port: {number: 80}}}}
"#;

#[tokio::test(flavor = "multi_thread")]
async fn a_named_host_never_reaches_another_namespaces_catch_all_on_either_listener() {
    if !enabled() {
        return;
    }
    let mut inputs = Inputs::default();
    load_str(TENANTS, Path::new("tenants.yaml"), &mut inputs).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(vec!["a-api.example.com".to_string()]).unwrap();
    params.distinguished_name.push(rcgen::DnType::CommonName, "a-api.example.com");
    let crt = params.self_signed(&key).unwrap();
    let secret = kuryr_l7_router::testing::tls_secret_manifest("tenant-a", "a-tls", &crt.pem(), &key.serialize_pem());
    load_str(&secret, Path::new("secret.yaml"), &mut inputs).unwrap();
    inputs.now = Some(std::time::SystemTime::now());
    let responder = Responder::start();
    let r =
        local_router("fct-dp", "conformance-isolation").await.with_barbican(Barbican::new(session("admin", "admin")));
    let cluster = r.spec().ownership.cluster.clone();
    crate::common::with_router(r, |r| async move {
        let mut requests = Vec::new();
        // (host, path, expected backend or status)
        let cases = [
            ("a-api.example.com", "/v1/users", "a-api"),
            ("a-api.example.com", "/other", "404"),
            ("a-api.example.com", "/", "404"),
            ("A-Api.Example.com:80", "/other", "404"),
            ("a-api.example.com:443", "/other", "404"),
            ("a-api.example.com", "/shop/cart", "404"),
            ("b-shop.example.com", "/shop/cart", "b-shop"),
            ("b-shop.example.com", "/other", "404"),
            ("nobody.example.com", "/anything", "b-catch-all"),
        ];
        for scheme in ["http", "https"] {
            for (host, path, expect) in cases {
                // b-shop.example.com has no TLS: its routes are not on the HTTPS listener, and
                // its requests there get the 404 too, never the catch-all.
                let expect = if scheme == "https" && host.starts_with("b-shop") { "404" } else { expect };
                let sni = host.split(':').next().unwrap().to_ascii_lowercase();
                requests.push(json!({"scheme": scheme, "host": host, "sni": sni, "path": path, "expect": expect}));
            }
        }
        for ownership in [false, true] {
            let opts = TranslateOptions {
                ingress_class: "kuryr".into(),
                status_responder: Some(StatusResponder {
                    namespace: "kuryr-system".into(),
                    name: "kuryr-status-responder".into(),
                    not_found_port: "not-found".into(),
                    unavailable_port: "unavailable".into(),
                    server_error_port: "server-error".into(),
                }),
                tenancy: kuryr_l7_router::translate::options::TenancyOptions {
                    host_ownership: ownership,
                    ..Default::default()
                },
                ..TranslateOptions::default()
            };
            let desired = translate(&inputs, &opts);
            assert!(desired.warnings.is_empty(), "{:?}", desired.warnings);
            let report = converge(&r, &desired).await;
            let results =
                tokio::task::block_in_place(|| send_requests(&report.lb_id, &desired, Some(&responder), &requests));
            let mut bad = Vec::new();
            for (q, res) in requests.iter().zip(&results) {
                let got = res["backend"].as_str().map_or_else(|| res["status"].to_string(), str::to_string);
                let body = res["body"].as_str().unwrap_or_default();
                // A 404 must be the responder's (strict), not any other 404.
                let ok = got == q["expect"] && (got != "404" || body.contains("no route for host"));
                println!(
                    "{} ownership={ownership} {}://{}{} -> {got}",
                    if ok { "ok " } else { "BAD" },
                    q["scheme"].as_str().unwrap(),
                    q["host"].as_str().unwrap(),
                    q["path"].as_str().unwrap()
                );
                if !ok {
                    bad.push(format!("ownership={ownership} {q} -> {got} {body:?}"));
                }
            }
            assert!(bad.is_empty(), "{} request(s) wrong:\n{}", bad.len(), bad.join("\n"));
        }
    })
    .await;
    super::delete_cluster_secrets(&cluster).await;
}
