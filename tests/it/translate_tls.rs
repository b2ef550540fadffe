//! Table tests of `spec.tls` translation: certificates, hosts (wildcards included), shared
//! Secrets, several certificates, the default certificate, removal, the HTTPS listener's routes,
//! redirects, and every bad input (missing Secret, wrong type, malformed PEM, expired, host not
//! covered). Certificates are made with rcgen at test time.

use std::path::Path;
use std::time::{Duration, SystemTime};

use kuryr_l7_router::certificate::CertificateCache;
use kuryr_l7_router::model::{CompareType, DesiredRouter, RuleType};
use kuryr_l7_router::testing::tls_secret_manifest;
use kuryr_l7_router::translate::manifest::load_str;
use kuryr_l7_router::translate::options::TlsOptions;
use kuryr_l7_router::translate::{Inputs, TranslateOptions, render_json, render_table, translate};
use rcgen::{CertificateParams, KeyPair, date_time_ymd};

struct Pem {
    crt: String,
    key: String,
}

fn cert(sans: &[&str], years: (i32, i32)) -> Pem {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(sans.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
    params.not_before = date_time_ymd(years.0, 1, 1);
    params.not_after = date_time_ymd(years.1, 1, 1);
    let crt = params.self_signed(&key).unwrap();
    Pem { crt: crt.pem(), key: key.serialize_pem() }
}

fn valid(sans: &[&str]) -> Pem {
    cert(sans, (2020, 2099))
}

fn secret(ns: &str, name: &str, pem: &Pem) -> String {
    tls_secret_manifest(ns, name, &pem.crt, &pem.key)
}

const BASE: &str = r#"
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: kuryr}
spec: {controller: openstack.org/kuryr-l7-router}
---
apiVersion: v1
kind: Service
metadata: {namespace: shop, name: web}
spec: {ports: [{port: 80}]}
---
apiVersion: v1
kind: Service
metadata: {namespace: shop, name: api}
spec: {ports: [{port: 80}]}
"#;

/// An Ingress routing `hosts` (Prefix / → web, and /api → api on the first host) with one TLS
/// entry per (secret, hosts).
fn ingress(name: &str, created: &str, hosts: &[&str], tls: &[(&str, &[&str])], annotations: &str) -> String {
    let mut rules = String::new();
    for (i, h) in hosts.iter().enumerate() {
        rules.push_str(&format!("  - host: \"{h}\"\n    http:\n      paths:\n      - {{path: /, pathType: Prefix, backend: {{service: {{name: web, port: {{number: 80}}}}}}}}\n"));
        if i == 0 {
            rules.push_str(
                "      - {path: /api, pathType: Prefix, backend: {service: {name: api, port: {number: 80}}}}\n",
            );
        }
    }
    let mut tls_yaml = String::new();
    for (secret, hs) in tls {
        let list = hs.iter().map(|h| format!("\"{h}\"")).collect::<Vec<_>>().join(", ");
        tls_yaml.push_str(&format!("  - secretName: {secret}\n    hosts: [{list}]\n"));
    }
    let tls_block = if tls.is_empty() { String::new() } else { format!("  tls:\n{tls_yaml}") };
    format!(
        "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  namespace: shop\n  name: {name}\n  creationTimestamp: \"{created}\"\n  annotations: {{{annotations}}}\nspec:\n  ingressClassName: kuryr\n{tls_block}  rules:\n{rules}"
    )
}

fn inputs(docs: &[String]) -> Inputs {
    let mut inputs = Inputs::default();
    let text = std::iter::once(BASE.to_string()).chain(docs.iter().cloned()).collect::<Vec<_>>().join("\n---\n");
    load_str(&text, Path::new("test.yaml"), &mut inputs).unwrap();
    inputs.now = Some(SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000)); // 2027-01-15
    inputs
}

/// Redirects on for the class: most tables here check them. The default (off) is checked by
/// `redirect_follows_the_annotation_then_the_class_default`.
fn opts() -> TranslateOptions {
    let mut o = TranslateOptions { ingress_class: "kuryr".into(), ..TranslateOptions::default() };
    o.tls.ssl_redirect = true;
    o
}

fn reasons(r: &DesiredRouter) -> Vec<(String, String)> {
    r.warnings.iter().map(|w| (w.reason.to_string(), w.object.to_string())).collect()
}

fn https_routes(r: &DesiredRouter) -> Vec<String> {
    r.https.as_ref().unwrap().policies.iter().map(|p| format!("{} {}", p.position, p.description)).collect()
}

#[test]
fn one_tls_host_gets_a_certificate_its_routes_on_https_and_a_redirect() {
    let pem = valid(&["secure.example.com"]);
    let r = translate(
        &inputs(&[
            secret("shop", "tls-a", &pem),
            ingress(
                "web",
                "2026-01-01T00:00:00Z",
                &["secure.example.com", "plain.example.com"],
                &[("tls-a", &["secure.example.com"])],
                "",
            ),
        ]),
        &opts(),
    );
    let tls_warnings: Vec<_> = r.warnings.iter().filter(|w| w.reason != "NoEndpoints").collect();
    assert!(tls_warnings.is_empty(), "{tls_warnings:?}");
    let https = r.https.as_ref().expect("an HTTPS listener");
    assert_eq!(https.port, 443);
    assert_eq!(https.default_certificate, "shop_tls-a");
    let c = &https.certificates["shop_tls-a"];
    assert_eq!(c.hosts, vec!["secure.example.com"]);
    assert_eq!(c.owners.len(), 1);
    let content = c.content.as_ref().expect("valid content");
    assert_eq!(content.chain_len, 1);
    assert_eq!(content.fingerprint.len(), 64, "sha256 hex: {}", content.fingerprint);
    // Only the TLS host's routes, in the HTTP precedence, sharing the HTTP pools.
    assert_eq!(https_routes(&r), vec!["1 secure.example.com Prefix /api", "2 secure.example.com Prefix /"]);
    assert_eq!(https.policies[0].pool, "shop_api");
    assert_eq!(r.policies.len(), 3, "HTTP keeps every route");
    // One redirect: the host only, never the ACME challenge path, 308, path kept by haproxy.
    assert_eq!(r.redirects.len(), 1);
    let red = &r.redirects[0];
    assert_eq!(
        (red.host.as_str(), red.prefix.as_str(), red.code),
        ("secure.example.com", "https://secure.example.com", 308)
    );
    assert_eq!(red.rules[0].rule_type, RuleType::HostName);
    assert_eq!(red.rules[0].value, "^secure\\.example\\.com(:[0-9]+)?$");
    assert!(!red.rules[0].invert);
    assert_eq!(
        (red.rules[1].rule_type, red.rules[1].compare_type, red.rules[1].value.as_str(), red.rules[1].invert),
        (RuleType::Path, CompareType::StartsWith, "/.well-known/acme-challenge/", true)
    );
}

#[test]
fn wildcard_hosts_shared_secrets_and_several_certificates() {
    let wild = valid(&["*.shop.example.com"]);
    let other = valid(&["other.example.com"]);
    let r = translate(
        &inputs(&[
            secret("shop", "wild", &wild),
            secret("shop", "other", &other),
            ingress("old", "2026-01-01T00:00:00Z", &["*.shop.example.com"], &[("wild", &["*.shop.example.com"])], ""),
            ingress(
                "new",
                "2026-02-01T00:00:00Z",
                &["a.shop.example.com", "other.example.com"],
                &[("wild", &["a.shop.example.com"]), ("other", &["other.example.com"])],
                "",
            ),
        ]),
        &opts(),
    );
    let https = r.https.as_ref().unwrap();
    assert_eq!(https.certificates.len(), 2);
    let w = &https.certificates["shop_wild"];
    assert_eq!(w.hosts, vec!["*.shop.example.com", "a.shop.example.com"]);
    assert_eq!(w.owners.len(), 2, "one certificate for a Secret two Ingresses name");
    assert_eq!(https.default_certificate, "shop_wild", "the oldest Ingress's certificate");
    // The wildcard cannot be redirected (Octavia's prefix is a fixed URL): a Warning says so.
    let hosts: Vec<&str> = r.redirects.iter().map(|x| x.host.as_str()).collect();
    assert_eq!(hosts, vec!["a.shop.example.com", "other.example.com"]);
    assert!(reasons(&r).contains(&("RedirectNotPossible".into(), "Ingress shop/old".into())), "{:?}", r.warnings);
    // Exact before wildcard on HTTPS too.
    let routes = https_routes(&r);
    assert_eq!(routes.first().map(String::as_str), Some("1 a.shop.example.com Prefix /api"));
    assert!(routes.iter().any(|p| p.contains("*.shop.example.com")));
}

#[test]
fn the_configured_default_certificate_and_port_are_used() {
    let a = valid(&["a.example.com"]);
    let b = valid(&["b.example.com"]);
    let mut o = opts();
    o.tls = TlsOptions {
        https_port: 8443,
        default_certificate: Some(("shop".into(), "b".into())),
        ssl_redirect: true,
        ..TlsOptions::default()
    };
    let r = translate(
        &inputs(&[
            secret("shop", "a", &a),
            secret("shop", "b", &b),
            ingress(
                "web",
                "2026-01-01T00:00:00Z",
                &["a.example.com", "b.example.com"],
                &[("a", &["a.example.com"]), ("b", &["b.example.com"])],
                "",
            ),
        ]),
        &o,
    );
    let https = r.https.as_ref().unwrap();
    assert_eq!((https.port, https.default_certificate.as_str()), (8443, "shop_b"));
    assert_eq!(r.redirects[0].prefix, "https://a.example.com:8443");
}

#[test]
fn redirect_follows_the_annotation_then_the_class_default() {
    let a = valid(&["a.example.com"]);
    let docs = |ann: &str| {
        inputs(&[
            secret("shop", "a", &a),
            ingress("web", "2026-01-01T00:00:00Z", &["a.example.com"], &[("a", &["a.example.com"])], ann),
        ])
    };
    // The default: no redirect unless asked (the Ingress API does not ask for one); plain HTTP
    // for a TLS host is routed like any other request.
    let default = TranslateOptions::default();
    assert!(!default.tls.ssl_redirect);
    let r = translate(&docs(""), &default);
    assert!(r.redirects.is_empty(), "no redirect by default: {:?}", r.redirects);
    assert!(r.policies.iter().any(|p| p.description.starts_with("a.example.com")), "HTTP routes the host");
    let off = "kuryr-l7-router.openstack.org/ssl-redirect: \"false\"";
    assert!(translate(&docs(off), &opts()).redirects.is_empty());
    let class_off = default;
    assert!(translate(&docs(""), &class_off).redirects.is_empty());
    let on = "kuryr-l7-router.openstack.org/ssl-redirect: \"true\"";
    assert_eq!(translate(&docs(on), &class_off).redirects.len(), 1, "the annotation wins");
    let bad = translate(&docs("kuryr-l7-router.openstack.org/ssl-redirect: \"yes\""), &opts());
    assert_eq!(bad.redirects.len(), 1, "an invalid value falls back to the default");
    assert!(reasons(&bad).contains(&("InvalidAnnotation".into(), "Ingress shop/web".into())));
}

#[test]
fn removing_the_last_tls_section_removes_the_listener_and_redirects() {
    let r = translate(&inputs(&[ingress("web", "2026-01-01T00:00:00Z", &["a.example.com"], &[], "")]), &opts());
    assert!(r.https.is_none() && r.redirects.is_empty());
    assert!(render_table(&r).contains("HTTPS LISTENER: none"));
}

#[test]
fn bad_secrets_warn_on_the_ingress_and_keep_other_hosts_and_ingresses() {
    let good = valid(&["good.example.com"]);
    let expired = cert(&["old.example.com"], (2020, 2021));
    let future = cert(&["future.example.com"], (2090, 2099));
    let wrong_key = Pem { crt: valid(&["mix.example.com"]).crt, key: valid(&["mix.example.com"]).key };
    let garbage = Pem {
        crt: "-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n".into(),
        key: good.key.clone(),
    };
    let opaque = secret("shop", "opaque", &good).replace("type: kubernetes.io/tls", "type: Opaque");
    let table: &[(&str, &str, &str)] = &[
        ("missing", "nothere", "SecretNotFound"),
        ("opaque", "opaque", "SecretWrongType"),
        ("expired", "expired", "CertificateExpired"),
        ("future", "future", "CertificateNotYetValid"),
        ("mix", "mix", "KeyMismatch"),
        ("garbage", "garbage", "MalformedCertificate"),
    ];
    let mut docs = vec![
        secret("shop", "good", &good),
        secret("shop", "expired", &expired),
        secret("shop", "future", &future),
        secret("shop", "mix", &wrong_key),
        secret("shop", "garbage", &garbage),
        opaque,
        ingress("good", "2026-01-01T00:00:00Z", &["good.example.com"], &[("good", &["good.example.com"])], ""),
    ];
    for (i, (name, secret_name, _)) in table.iter().enumerate() {
        let host = format!("{name}.example.com");
        docs.push(ingress(name, &format!("2026-02-0{}T00:00:00Z", i + 1), &[&host], &[(secret_name, &[&host])], ""));
    }
    let r = translate(&inputs(&docs), &opts());
    let got = reasons(&r);
    for (name, secret_name, reason) in table {
        assert!(got.contains(&(reason.to_string(), format!("Ingress shop/{name}"))), "{name}: {reason} not in {got:?}");
        let w = r.warnings.iter().find(|w| w.reason == *reason).unwrap();
        assert!(
            w.message.contains(&format!("Secret shop/{secret_name}")),
            "the message names the Secret: {}",
            w.message
        );
        let c = &r.https.as_ref().unwrap().certificates[&format!("shop_{secret_name}")];
        assert!(c.content.is_none(), "{name}: no content, the driver keeps the last good one");
    }
    // The good Ingress is untouched: its certificate, routes and redirect are all there.
    let https = r.https.as_ref().unwrap();
    assert!(https.certificates["shop_good"].content.is_some());
    assert_eq!(https.default_certificate, "shop_good", "the oldest certificate with content");
    assert!(r.redirects.iter().any(|x| x.host == "good.example.com"));
    assert!(r.policies.iter().any(|p| p.description.starts_with("expired.example.com")), "HTTP routes stay");
}

#[test]
fn a_host_the_certificate_does_not_cover_is_served_on_http_only() {
    let pem = valid(&["a.example.com"]);
    let r = translate(
        &inputs(&[
            secret("shop", "a", &pem),
            ingress(
                "web",
                "2026-01-01T00:00:00Z",
                &["a.example.com", "b.example.com"],
                &[("a", &["a.example.com", "b.example.com"])],
                "",
            ),
        ]),
        &opts(),
    );
    assert!(reasons(&r).contains(&("HostNotCovered".into(), "Ingress shop/web".into())));
    let https = r.https.as_ref().unwrap();
    assert_eq!(https.certificates["shop_a"].hosts, vec!["a.example.com"]);
    assert!(https_routes(&r).iter().all(|p| !p.contains("b.example.com")));
    assert!(r.redirects.iter().all(|x| x.host != "b.example.com"));
}

#[test]
fn a_host_claimed_with_two_secrets_goes_to_the_oldest_ingress() {
    let a = valid(&["a.example.com"]);
    let b = valid(&["a.example.com"]);
    let r = translate(
        &inputs(&[
            secret("shop", "first", &a),
            secret("shop", "second", &b),
            ingress("old", "2026-01-01T00:00:00Z", &["a.example.com"], &[("first", &["a.example.com"])], ""),
            ingress("young", "2026-02-01T00:00:00Z", &["a.example.com"], &[("second", &["a.example.com"])], ""),
        ]),
        &opts(),
    );
    assert!(reasons(&r).contains(&("ConflictingCertificate".into(), "Ingress shop/young".into())));
    let https = r.https.as_ref().unwrap();
    assert_eq!(https.certificates["shop_first"].hosts, vec!["a.example.com"]);
    // The refused certificate is not on the listener: haproxy would pick it by its own SANs.
    assert!(!https.certificates.contains_key("shop_second"), "{:?}", https.certificates.keys());
}

#[test]
fn certificates_that_won_no_host_are_not_on_the_listener() {
    // b's certificate names a host of another namespace (ownership on), c's covers none of its
    // hosts: neither is served, whatever SNI a client sends. The configured default stays.
    let a = valid(&["a.example.com"]);
    let b = valid(&["a.example.com"]);
    let c = valid(&["other.example.com"]);
    let tenant = |doc: String, ns: &str| doc.replacen("namespace: shop", &format!("namespace: {ns}"), 1);
    let base_services = BASE.replace("namespace: shop", "namespace: tenant-b");
    let docs = [
        secret("shop", "a", &a),
        secret("tenant-b", "b", &b),
        secret("shop", "c", &c),
        ingress("a", "2026-01-01T00:00:00Z", &["a.example.com"], &[("a", &["a.example.com"])], ""),
        tenant(ingress("b", "2026-01-02T00:00:00Z", &["b.example.com"], &[("b", &["a.example.com"])], ""), "tenant-b"),
        ingress("c", "2026-01-03T00:00:00Z", &["c.example.com"], &[("c", &["c.example.com"])], ""),
        base_services,
    ];
    let mut o = opts();
    o.tenancy.host_ownership = true;
    let r = translate(&inputs(&docs), &o);
    let got = reasons(&r);
    assert!(got.contains(&("HostOwnedByOtherNamespace".into(), "Ingress tenant-b/b".into())), "{got:?}");
    assert!(got.contains(&("HostNotCovered".into(), "Ingress shop/c".into())), "{got:?}");
    let https = r.https.as_ref().unwrap();
    let names: Vec<&str> = https.certificates.keys().map(String::as_str).collect();
    assert_eq!(names, ["shop_a"]);
    assert_eq!(https.default_certificate, "shop_a");
    // Ownership off: b's entry is a ConflictingCertificate (a is older) and is still left out.
    let r = translate(&inputs(&docs), &opts());
    assert!(reasons(&r).contains(&("ConflictingCertificate".into(), "Ingress tenant-b/b".into())));
    let names: Vec<String> = r.https.as_ref().unwrap().certificates.keys().cloned().collect();
    assert_eq!(names, ["shop_a"]);
    // The configured default certificate is kept even when it names no host of an Ingress.
    let mut with_default = opts();
    with_default.tls.default_certificate = Some(("shop".into(), "c".into()));
    let r = translate(&inputs(&docs), &with_default);
    let https = r.https.as_ref().unwrap();
    assert_eq!(https.default_certificate, "shop_c");
    let mut names: Vec<&str> = https.certificates.keys().map(String::as_str).collect();
    names.sort();
    assert_eq!(names, ["shop_a", "shop_c"]);
}

#[test]
fn key_material_never_reaches_plan_output_or_debug() {
    let pem = valid(&["a.example.com"]);
    let r = translate(
        &inputs(&[
            secret("shop", "a", &pem),
            ingress("web", "2026-01-01T00:00:00Z", &["a.example.com"], &[("a", &["a.example.com"])], ""),
        ]),
        &opts(),
    );
    let key_body: String = pem.key.lines().filter(|l| !l.starts_with("-----")).collect();
    let crt_body: String = pem.crt.lines().filter(|l| !l.starts_with("-----")).collect();
    for out in [render_json(&r), render_table(&r), format!("{r:?}")] {
        assert!(!out.contains("PRIVATE KEY"), "key PEM in output");
        assert!(!out.contains(&key_body[..40]), "key bytes in output");
        assert!(!out.contains(&crt_body[..40]), "certificate PEM in output (fingerprints only)");
    }
    let table = render_table(&r);
    assert!(table.contains("HTTPS LISTENER (port 443") && table.contains("sha256: "), "{table}");
}

#[test]
fn the_https_listener_also_answers_404_through_the_status_responder() {
    let pem = valid(&["secure.example.com"]);
    let inp = inputs(&[
        secret("shop", "tls-a", &pem),
        ingress("web", "2026-01-01T00:00:00Z", &["secure.example.com"], &[("tls-a", &["secure.example.com"])], ""),
    ]);
    let responder = kuryr_l7_router::translate::options::StatusResponder {
        namespace: "kuryr-system".into(),
        name: "kuryr-status-responder".into(),
        not_found_port: "not-found".into(),
        unavailable_port: "unavailable".into(),
        server_error_port: "server-error".into(),
    };
    let r = translate(&inp, &TranslateOptions { status_responder: Some(responder), ..opts() });
    let not_found = kuryr_l7_router::model::NOT_FOUND_POOL;
    assert_eq!(r.default_pool.as_deref(), Some(not_found));
    assert_eq!(r.https.as_ref().unwrap().default_pool.as_deref(), Some(not_found));
    // Without a responder neither listener has a default pool (Octavia's 503).
    let plain = translate(&inp, &opts());
    assert_eq!((plain.default_pool.as_deref(), plain.https.unwrap().default_pool), (None, None));
}

// ------------------------------------------------------------------ parsed certificates cached

/// Two TLS Secrets (uids `uid-a`, `uid-b`, resourceVersion "1") named by one Ingress each, with
/// the controller's certificate cache.
fn cached_inputs(cache: &std::sync::Arc<CertificateCache>, a: &Pem, b: &Pem) -> Inputs {
    let mut i = inputs(&[
        secret("shop", "tls-a", a),
        secret("shop", "tls-b", b),
        ingress("web", "2026-01-01T00:00:00Z", &["a.example.com"], &[("tls-a", &["a.example.com"])], ""),
        ingress("api", "2026-01-02T00:00:00Z", &["b.example.com"], &[("tls-b", &["b.example.com"])], ""),
    ]);
    for s in &mut i.secrets {
        let name = s.metadata.name.clone().unwrap();
        s.metadata.uid = Some(format!("uid-{}", name.trim_start_matches("tls-")));
        s.metadata.resource_version = Some("1".into());
    }
    i.certificates = Some(cache.clone());
    i
}

#[test]
fn an_unchanged_secret_is_parsed_once_and_gives_the_same_router() {
    let cache = std::sync::Arc::new(CertificateCache::default());
    let (a, b) = (valid(&["a.example.com"]), valid(&["b.example.com"]));
    let i = cached_inputs(&cache, &a, &b);
    let first = translate(&i, &opts());
    assert_eq!(cache.parses(), 2, "each Secret parsed once");
    let second = translate(&i, &opts());
    assert_eq!(cache.parses(), 2, "the second translation parses nothing");
    assert_eq!(render_json(&first), render_json(&second));
    let uncached = translate(&Inputs { certificates: None, ..i.clone() }, &opts());
    assert_eq!(render_json(&first), render_json(&uncached), "the cache never changes the result");
    assert_eq!(first.https.as_ref().unwrap().certificates.len(), 2);
}

#[test]
fn a_new_resource_version_is_parsed_again_and_a_gone_secret_leaves_the_cache() {
    let cache = std::sync::Arc::new(CertificateCache::default());
    let (a, b) = (valid(&["a.example.com"]), valid(&["b.example.com"]));
    let mut i = cached_inputs(&cache, &a, &b);
    translate(&i, &opts());
    // tls-a renewed (cert-manager): new content, new resourceVersion.
    let renewed = valid(&["a.example.com"]);
    let fresh = inputs(&[secret("shop", "tls-a", &renewed)]).secrets.remove(0);
    let s = i.secrets.iter_mut().find(|s| s.metadata.name.as_deref() == Some("tls-a")).unwrap();
    s.data = fresh.data;
    s.metadata.resource_version = Some("2".into());
    let r = translate(&i, &opts());
    assert_eq!(cache.parses(), 3, "only the renewed Secret is parsed again");
    let content = r.https.as_ref().unwrap().certificates["shop_tls-a"].content.clone().unwrap();
    let expected = inputs(&[secret("shop", "tls-a", &renewed)]);
    assert_eq!(content.fingerprint, fingerprint_of(&expected, "tls-a"), "the renewed certificate is served");
    assert_eq!(cache.len(), 2);
    // tls-b deleted: no longer handed to the translation, so its parse (and key) is dropped.
    i.secrets.retain(|s| s.metadata.name.as_deref() != Some("tls-b"));
    let r = translate(&i, &opts());
    assert_eq!(cache.len(), 1, "the deleted Secret left the cache");
    assert!(reasons(&r).contains(&("SecretNotFound".into(), "Ingress shop/api".into())), "{:?}", reasons(&r));
    assert!(format!("{cache:?}").contains("entries: 1"), "Debug shows counts only: {cache:?}");
}

#[test]
fn a_cached_certificate_still_expires_with_the_clock() {
    let cache = std::sync::Arc::new(CertificateCache::default());
    let (a, b) = (cert(&["a.example.com"], (2020, 2028)), valid(&["b.example.com"]));
    let mut i = cached_inputs(&cache, &a, &b);
    assert!(translate(&i, &opts()).warnings.iter().all(|w| w.reason != "CertificateExpired"));
    i.now = Some(SystemTime::UNIX_EPOCH + Duration::from_secs(1_900_000_000)); // 2030
    let r = translate(&i, &opts());
    assert_eq!(cache.parses(), 2, "no parse: the dates are checked against the cached result");
    assert!(reasons(&r).contains(&("CertificateExpired".into(), "Ingress shop/web".into())), "{:?}", reasons(&r));
}

fn fingerprint_of(i: &Inputs, name: &str) -> String {
    let s = i.secrets.iter().find(|s| s.metadata.name.as_deref() == Some(name)).unwrap();
    let d = s.data.as_ref().unwrap();
    let parsed = kuryr_l7_router::certificate::ParsedCertificate::from_pem(&d["tls.crt"].0, &d["tls.key"].0).unwrap();
    parsed.sha256_fingerprint().to_string()
}

/// A named Secret the controller's cache holds without its data (until its watch lists it
/// again) is pending, not missing: no Warning, the certificate stays on the listener without
/// content (the router keeps the one it stores) and its host stays on HTTPS.
#[test]
fn a_secret_held_without_data_is_pending_not_missing() {
    let pending = format!(
        "apiVersion: v1\nkind: Secret\ntype: kubernetes.io/tls\nmetadata:\n  namespace: shop\n  name: tls-a\n  annotations: {{\"{}\": \"\"}}\n",
        kuryr_l7_router::translate::tls::DATA_NOT_HELD
    );
    let web =
        ingress("web", "2026-01-01T00:00:00Z", &["secure.example.com"], &[("tls-a", &["secure.example.com"])], "");
    let r = translate(&inputs(&[pending, web.clone()]), &opts());
    let tls_warnings: Vec<_> = r.warnings.iter().filter(|w| w.reason != "NoEndpoints").collect();
    assert!(tls_warnings.is_empty(), "{tls_warnings:?}");
    let https = r.https.as_ref().expect("an HTTPS listener");
    let c = &https.certificates["shop_tls-a"];
    assert!(c.content.is_none());
    assert_eq!(c.hosts, vec!["secure.example.com"]);
    // The same Secret absent: a Warning.
    let r = translate(&inputs(&[web]), &opts());
    assert!(reasons(&r).iter().any(|(reason, _)| reason == "SecretNotFound"), "{:?}", reasons(&r));
}

/// `[kubernetes] secret_namespaces`: a TLS Secret of a namespace the controller does not read is
/// refused with `SecretNotRead` naming the Secret and the option (even if a Secret of that name
/// were handed over), its host is held as for a missing Secret (no certificate content, never
/// taken off HTTP), and the other Ingresses' routes go on; listed, the same Secret is served.
#[test]
fn a_secret_of_a_namespace_not_read_is_refused_naming_the_option() {
    let a = valid(&["a.example.com"]);
    let web = ingress("web", "2026-01-01T00:00:00Z", &["a.example.com"], &[("tls-a", &["a.example.com"])], "");
    let plain = ingress("plain", "2026-01-02T00:00:00Z", &["plain.example.com"], &[], "");
    let i = inputs(&[secret("shop", "tls-a", &a), web, plain]);
    let mut o = opts();
    o.tls.secret_namespaces = vec!["certs".into(), "infra".into()];
    let r = translate(&i, &o);
    let w = r.warnings.iter().find(|w| w.reason == "SecretNotRead").expect("a SecretNotRead warning");
    assert_eq!(w.object.to_string(), "Ingress shop/web");
    for part in ["Secret shop/tls-a", "namespace shop", "[kubernetes] secret_namespaces = certs, infra"] {
        assert!(w.message.contains(part), "{part:?} not in {:?}", w.message);
    }
    assert!(r.https.as_ref().is_none_or(|h| h.certificates.values().all(|c| c.content.is_none())), "no content");
    let routes: Vec<String> = r.policies.iter().map(|p| p.description.clone()).collect();
    assert!(routes.iter().any(|d| d.contains("plain.example.com")), "the others go on: {routes:?}");
    assert!(routes.iter().any(|d| d.contains("a.example.com")), "the host stays on HTTP: {routes:?}");
    o.tls.secret_namespaces.push("shop".into());
    let r = translate(&i, &o);
    assert!(r.warnings.iter().all(|w| w.reason != "SecretNotRead"), "{:?}", reasons(&r));
    assert!(r.https.as_ref().unwrap().certificates["shop_tls-a"].content.is_some(), "served once listed");
}
