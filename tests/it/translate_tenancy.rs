//! Tenant isolation on the shared router (docs/routing-semantics.md, "Tenants"): whose default
//! backend catches which requests, who may set the router-wide one, host ownership, and the
//! warnings that name the winner of each conflict. Driven by tests/fixtures/tenancy/; requests
//! are answered by evaluating the generated policies as haproxy does.

use crate::support::haproxy_eval;

use std::path::PathBuf;

use k8s_openapi::api::networking::v1::IngressTLS;
use kuryr_l7_router::model::DesiredRouter;
use kuryr_l7_router::testing::tls_secret_manifest;
use kuryr_l7_router::translate::manifest::load_str;
use kuryr_l7_router::translate::options::TenancyOptions;
use kuryr_l7_router::translate::{Inputs, TranslateOptions, load_manifests, translate};

const DIR: &str = "tests/fixtures/tenancy";
/// A named host's unmatched path without a default backend of its own: the empty 503 pool.
const NO_ROUTE: &str = haproxy_eval::EMPTY_POOL_503;

fn inputs(with_catch_all: bool) -> Inputs {
    let mut files = vec![PathBuf::from(DIR).join("tenants.yaml")];
    if with_catch_all {
        files.push(PathBuf::from(DIR).join("catch-all.yaml"));
    }
    load_manifests(&files).unwrap()
}

fn opts(allowed: &[&str], ownership: bool) -> TranslateOptions {
    TranslateOptions {
        ingress_class: "kuryr".into(),
        tenancy: TenancyOptions {
            default_backend_namespaces: allowed.iter().map(|s| s.to_string()).collect(),
            host_ownership: ownership,
            ..TenancyOptions::default()
        },
        ..TranslateOptions::default()
    }
}

/// (catch-all Ingress loaded, allowed namespaces, host ownership) → a router.
type Setup = (bool, &'static [&'static str], bool);

const DEFAULTS: Setup = (false, &[], false);
const WITH_CATCH_ALL: Setup = (true, &[], false);
const CATCH_ALL_NOT_ALLOWED: Setup = (true, &["alpha"], false);
const CATCH_ALL_ALLOWED: Setup = (true, &["ops"], false);
const OWNERSHIP: Setup = (false, &[], true);

fn router((catch_all, allowed, ownership): Setup) -> DesiredRouter {
    translate(&inputs(catch_all), &opts(allowed, ownership))
}

#[test]
fn who_answers_each_request() {
    // (setup, host, path, Service answering; None: no route)
    let cases: &[(Setup, &str, &str, Option<&str>)] = &[
        // An Ingress without a default backend: its unmatched paths reach no other tenant.
        (DEFAULTS, "a.example.com", "/app/x", Some("alpha/web")),
        (DEFAULTS, "a.example.com", "/other", None),
        (DEFAULTS, "A.Example.com:8080", "/other", None),
        (DEFAULTS, "unknown.example.com", "/", None),
        // beta's default backend catches beta's hosts' unmatched paths, the wildcard's too.
        (DEFAULTS, "b.example.com", "/shop/cart", Some("beta/web")),
        (DEFAULTS, "b.example.com", "/other", Some("beta/fallback")),
        (DEFAULTS, "two.apps.example.com", "/x", Some("beta/web")),
        (DEFAULTS, "two.apps.example.com", "/y", Some("beta/fallback")),
        // Paths of other Ingresses on beta's host still route (ownership off), before the catch-all.
        (DEFAULTS, "b.example.com", "/alpha", Some("alpha/web")),
        (DEFAULTS, "b.example.com", "/gamma/1", Some("gamma/web")),
        // An exact host inside beta's wildcard is alpha's own (Kubernetes: exact host first).
        (DEFAULTS, "one.apps.example.com", "/y", Some("alpha/web")),
        // An Ingress with ONLY a default backend catches the hosts that no Ingress names, never
        // a named host's unmatched paths (another tenant's requests, cookies and credentials).
        (WITH_CATCH_ALL, "a.example.com", "/other", Some(NO_ROUTE)),
        (WITH_CATCH_ALL, "A.Example.com:80", "/other", Some(NO_ROUTE)),
        (WITH_CATCH_ALL, "a.example.com", "/", Some(NO_ROUTE)),
        (WITH_CATCH_ALL, "a.example.com", "/shop/cart", Some(NO_ROUTE)),
        (WITH_CATCH_ALL, "two.apps.example.com", "/x", Some("beta/web")),
        (WITH_CATCH_ALL, "unknown.example.com", "/", Some("ops/not-found")),
        (WITH_CATCH_ALL, "b.example.com", "/other", Some("beta/fallback")),
        (WITH_CATCH_ALL, "a.example.com", "/app", Some("alpha/web")),
        (CATCH_ALL_ALLOWED, "unknown.example.com", "/", Some("ops/not-found")),
        // ... unless the operator allows other namespaces only.
        (CATCH_ALL_NOT_ALLOWED, "a.example.com", "/other", None),
        (CATCH_ALL_NOT_ALLOWED, "unknown.example.com", "/", None),
        (CATCH_ALL_NOT_ALLOWED, "b.example.com", "/other", Some("beta/fallback")),
        // Host ownership: beta owns b.example.com and *.apps.example.com (and what it covers).
        (OWNERSHIP, "b.example.com", "/alpha", Some("beta/fallback")),
        (OWNERSHIP, "b.example.com", "/gamma/1", Some("beta/fallback")),
        (OWNERSHIP, "one.apps.example.com", "/y", Some("beta/fallback")),
        (OWNERSHIP, "a.example.com", "/app", Some("alpha/web")),
    ];
    for (setup, host, path, want) in cases {
        let r = router(*setup);
        assert_eq!(haproxy_eval::http(&r, host, path).as_deref(), *want, "{setup:?} {host}{path}");
    }
}

#[test]
fn conflict_losers_are_told_who_won() {
    // (setup, losing Ingress, reason, message substrings)
    let cases: &[(Setup, &str, &str, &[&str])] = &[
        (
            DEFAULTS,
            "Ingress gamma/site",
            "ConflictingDefaultBackend",
            &["host b.example.com", "named first by Ingress beta/site, of another namespace"],
        ),
        (
            CATCH_ALL_NOT_ALLOWED,
            "Ingress ops/catch-all",
            "DefaultBackendNotAllowed",
            &["namespace ops may not set the router-wide default backend", "default_backend_namespaces = alpha"],
        ),
        (
            OWNERSHIP,
            "Ingress alpha/site",
            "HostOwnedByOtherNamespace",
            &["rules[1] for host b.example.com refused", "namespace beta (claimed first by Ingress beta/site)"],
        ),
        (
            OWNERSHIP,
            "Ingress alpha/site",
            "HostOwnedByOtherNamespace",
            &["rules[2] for host one.apps.example.com refused", "Ingress beta/site"],
        ),
        (OWNERSHIP, "Ingress gamma/site", "HostOwnedByOtherNamespace", &["host b.example.com refused"]),
    ];
    for (setup, object, reason, parts) in cases {
        let r = router(*setup);
        let found = r.warnings.iter().any(|w| {
            w.object.to_string() == *object
                && w.reason == *reason
                && w.message.starts_with(object)
                && parts.iter().all(|p| w.message.contains(p))
        });
        assert!(found, "{setup:?}: no {reason} on {object} with {parts:?}: {:#?}", r.warnings);
    }
    // No warning when nothing conflicts: the winners, and the defaults without a catch-all.
    // (Services without endpoints are warned about too: not this test's business.)
    for setup in [DEFAULTS, CATCH_ALL_ALLOWED] {
        let r = router(setup);
        let ingress_warnings: Vec<_> = r.warnings.iter().filter(|w| w.object.kind == "Ingress").collect();
        assert!(ingress_warnings.iter().all(|w| w.object.namespace == "gamma"), "{setup:?}: {ingress_warnings:#?}");
    }
}

#[test]
fn https_listener_has_the_same_catch_alls() {
    let mut inp = inputs(false);
    for (ns, host) in [("alpha", "a.example.com"), ("beta", "b.example.com")] {
        let key = rcgen::KeyPair::generate().unwrap();
        let crt = rcgen::CertificateParams::new(vec![host.to_string()]).unwrap().self_signed(&key).unwrap();
        let secret = tls_secret_manifest(ns, "tls", &crt.pem(), &key.serialize_pem());
        load_str(&secret, std::path::Path::new("secret.yaml"), &mut inp).unwrap();
        let ing = inp.ingresses.iter_mut().find(|i| i.metadata.namespace.as_deref() == Some(ns)).unwrap();
        ing.spec.as_mut().unwrap().tls =
            Some(vec![IngressTLS { hosts: Some(vec![host.into()]), secret_name: Some("tls".into()) }]);
    }
    let r = translate(&inp, &opts(&[], false));
    let cases = [
        ("a.example.com", "/other", None),
        ("a.example.com", "/app", Some("alpha/web")),
        ("b.example.com", "/other", Some("beta/fallback")),
        ("b.example.com", "/shop", Some("beta/web")),
    ];
    for (host, path, want) in cases {
        assert_eq!(haproxy_eval::https(&r, host, path).as_deref(), want, "https {host}{path}");
        // Plain HTTP (no redirect by default) routes the same.
        assert_eq!(haproxy_eval::http(&r, host, path).as_deref(), want, "http {host}{path}");
    }
}

/// `yaml` added to the tenants (and the catch-all when `catch_all`).
fn inputs_with(catch_all: bool, yaml: &str) -> Inputs {
    let mut inp = inputs(catch_all);
    load_str(yaml, std::path::Path::new("extra.yaml"), &mut inp).unwrap();
    inp
}

fn responder() -> kuryr_l7_router::translate::options::StatusResponder {
    kuryr_l7_router::translate::options::StatusResponder {
        namespace: "kuryr-system".into(),
        name: "kuryr-status-responder".into(),
        not_found_port: "not-found".into(),
        unavailable_port: "unavailable".into(),
        server_error_port: "server-error".into(),
    }
}

const RESPONDER_SERVICE: &str = r#"
apiVersion: v1
kind: Service
metadata: {name: kuryr-status-responder, namespace: kuryr-system}
spec: {ports: [{name: not-found, port: 8404}, {name: unavailable, port: 8503}]}
"#;

#[test]
fn a_named_host_never_reaches_another_namespaces_catch_all() {
    // Tenant A names a-api.example.com with /v1 only (and TLS); ops sets the router-wide
    // catch-all; gamma (younger) names A's host with a default backend of its own.
    let extra = r#"
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: api, namespace: alpha, creationTimestamp: "2024-02-02T00:00:00Z"}
spec:
  ingressClassName: kuryr
  tls: [{hosts: [a-api.example.com], secretName: tls}]
  rules:
  - host: a-api.example.com
    http:
      paths:
      - {path: /v1, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: squat, namespace: gamma, creationTimestamp: "2024-05-01T00:00:00Z"}
spec:
  ingressClassName: kuryr
  defaultBackend: {service: {name: fallback, port: {number: 80}}}
  rules:
  - host: a-api.example.com
"#;
    let key = rcgen::KeyPair::generate().unwrap();
    let crt = rcgen::CertificateParams::new(vec!["a-api.example.com".to_string()]).unwrap().self_signed(&key).unwrap();
    let secret = tls_secret_manifest("alpha", "tls", &crt.pem(), &key.serialize_pem());
    let yaml = format!("{extra}\n---\n{secret}\n---\n{RESPONDER_SERVICE}");
    let inp = inputs_with(true, &yaml);
    for ownership in [false, true] {
        for with_responder in [false, true] {
            let mut o = opts(&[], ownership);
            o.status_responder = with_responder.then(responder);
            let r = translate(&inp, &o);
            let no_route = if with_responder { "kuryr-system/kuryr-status-responder" } else { NO_ROUTE };
            // (host, path, answer)
            let cases = [
                ("a-api.example.com", "/v1/users", "alpha/web"),
                ("a-api.example.com", "/other", no_route),
                ("a-api.example.com", "/", no_route),
                ("A-Api.Example.com:80", "/other", no_route),
                ("a-api.example.com:443", "/other", no_route),
                // a path under another tenant's prefix (beta's /shop on b.example.com)
                ("a-api.example.com", "/shop/cart", no_route),
                ("unknown.example.com", "/", "ops/not-found"),
            ];
            for (host, path, want) in cases {
                let what = format!("ownership {ownership}, responder {with_responder}: {host}{path}");
                assert_eq!(haproxy_eval::http(&r, host, path).as_deref(), Some(want), "http {what}");
                assert_eq!(haproxy_eval::https(&r, host, path).as_deref(), Some(want), "https {what}");
            }
            // beta's host has no TLS: on HTTPS it has no route, and never reaches ops either.
            let b = haproxy_eval::https(&r, "b.example.com", "/other");
            assert_eq!(b.as_deref(), Some(no_route), "https b.example.com, ownership {ownership}");
            let refused = r.warnings.iter().any(|w| {
                w.object.to_string() == "Ingress gamma/squat"
                    && ["ConflictingDefaultBackend", "HostOwnedByOtherNamespace"].contains(&w.reason.as_str())
            });
            assert!(refused, "gamma is told its default backend does not catch alpha's host: {:#?}", r.warnings);
        }
    }
}

#[test]
fn a_named_host_falls_back_to_its_own_namespaces_default_backend() {
    // alpha's second Ingress names alpha's host with a default backend: it catches the host.
    let extra = r#"
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: fallback, namespace: alpha, creationTimestamp: "2024-06-01T00:00:00Z"}
spec:
  ingressClassName: kuryr
  defaultBackend: {service: {name: web, port: {number: 80}}}
  rules:
  - host: a.example.com
"#;
    let r = translate(&inputs_with(true, extra), &opts(&[], false));
    assert_eq!(haproxy_eval::http(&r, "a.example.com", "/other").as_deref(), Some("alpha/web"));
    assert_eq!(haproxy_eval::http(&r, "unknown.example.com", "/").as_deref(), Some("ops/not-found"));
}

#[test]
fn hostless_rules_are_gated_like_the_router_wide_default_backend() {
    // gamma's host-less Prefix / would catch every unknown host; only ops may do that.
    let extra = r#"
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: everything, namespace: gamma, creationTimestamp: "2024-05-01T00:00:00Z"}
spec:
  ingressClassName: kuryr
  rules:
  - http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}
"#;
    let inp = inputs_with(false, extra);
    let r = translate(&inp, &opts(&["ops"], false));
    for host in ["unknown.example.com", "a.example.com"] {
        assert_eq!(haproxy_eval::http(&r, host, "/zzz"), None, "{host}: gamma's host-less rule is refused");
    }
    let w = r.warnings.iter().find(|w| w.reason == "HostlessRuleNotAllowed").expect("a warning");
    assert_eq!(w.object.to_string(), "Ingress gamma/everything");
    assert!(w.message.contains("rules[0] has no host") && w.message.contains("default_backend_namespaces = ops"));
    // Allowed namespaces (or none configured) keep the Kubernetes meaning: every unknown host.
    for allowed in [&[][..], &["gamma"][..]] {
        let r = translate(&inp, &opts(allowed, false));
        assert_eq!(haproxy_eval::http(&r, "unknown.example.com", "/zzz").as_deref(), Some("gamma/web"), "{allowed:?}");
    }
}

/// alpha owns api.example.com; beta's older Ingress for it is pending. alpha re-creates its
/// Ingress (a Helm reinstall): younger than beta's now, yet alpha keeps the host.
#[test]
fn host_ownership_survives_the_owners_re_creation_within_the_grace_period() {
    use kuryr_l7_router::translate::tenancy::{HOST_OWNERS_ANNOTATION, remembered_owners};
    use std::time::{Duration, SystemTime};
    let ingress = |ns: &str, created: &str| {
        format!(
            "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {{name: api, namespace: {ns}, creationTimestamp: \"{created}\"}}\n\
             spec:\n  ingressClassName: kuryr\n  rules:\n  - host: api.example.com\n    http:\n      paths:\n      - {{path: /, pathType: Prefix, backend: {{service: {{name: web, port: {{number: 80}}}}}}}}\n"
        )
    };
    let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let mut o = opts(&[], true);
    o.tenancy.host_ownership_grace = Duration::from_secs(600);
    // State → (inputs, the annotation written back, if any).
    let sync = |ingresses: &[String], stored: Option<&str>, now: SystemTime| {
        let mut inp = inputs_with(false, &ingresses.join("\n---\n"));
        inp.now = Some(now);
        if let Some(v) = stored {
            let class = inp.ingress_classes.iter_mut().find(|c| c.metadata.name.as_deref() == Some("kuryr")).unwrap();
            class
                .metadata
                .annotations
                .get_or_insert_with(Default::default)
                .insert(HOST_OWNERS_ANNOTATION.into(), v.into());
        }
        let written = remembered_owners(&inp, &o);
        (translate(&inp, &o), written)
    };
    let alpha_old = ingress("alpha", "2024-02-01T00:00:00Z");
    let beta = ingress("beta", "2024-03-01T00:00:00Z");
    let alpha_new = ingress("alpha", "2024-04-01T00:00:00Z");
    let answer = |r: &DesiredRouter| haproxy_eval::http(r, "api.example.com", "/x");

    // 1. alpha is the oldest: it owns the host, and the owner is remembered.
    let (r, stored) = sync(&[alpha_old.clone(), beta.clone()], None, t0);
    assert_eq!(answer(&r).as_deref(), Some("alpha/web"));
    let stored = stored.expect("the owners are written to the IngressClass");
    assert_eq!(sync(&[alpha_old, beta.clone()], Some(&stored), t0).1, None, "no write when nothing changes");
    // 2. alpha's Ingress is deleted: beta does not take the host during the grace period.
    let gone = t0 + Duration::from_secs(5);
    let (r, vacated) = sync(std::slice::from_ref(&beta), Some(&stored), gone);
    assert_eq!(answer(&r), None, "the host is kept for alpha: {:#?}", r.warnings);
    assert!(r.warnings.iter().any(|w| w.reason == "HostOwnedByOtherNamespace" && w.object.namespace == "beta"));
    let vacated = vacated.expect("the time alpha's last Ingress went is remembered");
    // 3. alpha re-creates it (younger than beta's now): alpha keeps the host.
    let back = gone + Duration::from_secs(30);
    let (r, reclaimed) = sync(&[alpha_new.clone(), beta.clone()], Some(&vacated), back);
    assert_eq!(answer(&r).as_deref(), Some("alpha/web"), "{:#?}", r.warnings);
    assert_eq!(reclaimed.as_deref(), Some(stored.as_str()), "held again, no vacated time");
    // Without the memory (the old rule), beta (older now) would have taken it.
    let (r, _) = sync(&[alpha_new.clone(), beta.clone()], None, back);
    assert_eq!(answer(&r).as_deref(), Some("beta/web"));
    // 4. alpha does not come back within the grace period: the next oldest claimant takes it.
    let late = gone + Duration::from_secs(601);
    let (r, moved) = sync(std::slice::from_ref(&beta), Some(&vacated), late);
    assert_eq!(answer(&r).as_deref(), Some("beta/web"));
    assert!(moved.unwrap().contains("\"beta\""));
    // The restarted controller reads the same annotation: no state of its own is needed.
    let (r, _) = sync(&[alpha_new, beta], Some(&vacated), back);
    assert_eq!(answer(&r).as_deref(), Some("alpha/web"));
}

/// One owner index for both kinds: an HTTPRoute of beta that claimed api.example.com before
/// alpha's Ingress (a Gateway API claim handed to the Ingress translation) owns the host: alpha's
/// rule is refused, naming beta and the HTTPRoute, and the owner remembered is beta. Without the
/// claim (or with a younger one), alpha's Ingress serves the host as before.
#[test]
fn a_gateway_api_claim_older_than_an_ingress_owns_the_host() {
    use kuryr_l7_router::model::KubeRef;
    use kuryr_l7_router::translate::host_claims::HostClaim;
    use kuryr_l7_router::translate::tenancy::{RememberedOwners, remembered_owners};
    let alpha = "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: api, namespace: alpha, creationTimestamp: \"2024-03-01T00:00:00Z\"}\n\
spec:\n  ingressClassName: kuryr\n  rules:\n  - host: api.example.com\n    http:\n      paths:\n      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}\n";
    let claim = |created: &str| {
        let t = serde_json::from_value(serde_json::json!(created)).unwrap();
        HostClaim::new("api.example.com", KubeRef::new("HTTPRoute", "beta", "r"), Some(&t))
    };
    let o = opts(&[], true);
    let answer = |r: &DesiredRouter| haproxy_eval::http(r, "api.example.com", "/x");
    // (the HTTPRoute's claim, alpha served, the owner remembered)
    let cases = [
        (None, true, "alpha"),
        (Some(claim("2024-02-01T00:00:00Z")), false, "beta"),
        (Some(claim("2024-04-01T00:00:00Z")), true, "alpha"),
    ];
    for (c, served, owner) in cases {
        let mut inp = inputs_with(false, alpha);
        inp.gateway_claims = std::sync::Arc::new(c.clone().into_iter().collect());
        let r = translate(&inp, &o);
        let refused = r
            .warnings
            .iter()
            .find(|w| w.reason == "HostOwnedByOtherNamespace" && w.message.contains("host api.example.com"));
        assert_eq!(answer(&r).as_deref() == Some("alpha/web"), served, "{c:?}: {:?} {:#?}", answer(&r), r.warnings);
        assert_eq!(refused.is_none(), served, "{c:?}");
        if let Some(w) = refused {
            assert!(
                w.message.contains("belongs to namespace beta (claimed first by HTTPRoute beta/r)"),
                "{}",
                w.message
            );
        }
        let stored: RememberedOwners = serde_json::from_str(&remembered_owners(&inp, &o).unwrap()).unwrap();
        assert_eq!(stored["api.example.com"].namespace, owner, "{c:?}");
    }
    // With ownership off, a claim refuses nothing.
    let mut inp = inputs_with(false, alpha);
    inp.gateway_claims = std::sync::Arc::new(vec![claim("2024-02-01T00:00:00Z")]);
    assert_eq!(answer(&translate(&inp, &opts(&[], false))).as_deref(), Some("alpha/web"));
}
