//! Tenant isolation on the shared router (docs/routing-semantics.md, "Tenants"): whose default
//! backend catches which requests, who may set the router-wide one, host ownership, and the
//! warnings that name the winner of each conflict. Driven by tests/fixtures/tenancy/; requests
//! are answered by evaluating the generated policies as haproxy does.

#[path = "support/haproxy_eval.rs"]
mod haproxy_eval;

use std::path::PathBuf;

use k8s_openapi::api::networking::v1::IngressTLS;
use kuryr_l7_router::model::DesiredRouter;
use kuryr_l7_router::testing::tls_secret_manifest;
use kuryr_l7_router::translate::manifest::load_str;
use kuryr_l7_router::translate::tenancy::TenancyOptions;
use kuryr_l7_router::translate::{Inputs, TranslateOptions, load_manifests, translate};

const DIR: &str = "tests/fixtures/tenancy";

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
        // An Ingress with ONLY a default backend catches every request nothing else routes.
        (WITH_CATCH_ALL, "a.example.com", "/other", Some("ops/not-found")),
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
            &["host b.example.com", "b.example.com defaultBackend / of Ingress beta/site already does"],
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
        // Plain HTTP is redirected (haproxy redirects before use_backend); its routes agree.
        assert_eq!(haproxy_eval::http(&r, host, path).as_deref(), want, "http {host}{path}");
    }
}
