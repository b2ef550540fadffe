//! Property test: an independent matcher written from the Kubernetes Ingress spec and an
//! evaluator of the generated Octavia policies with haproxy semantics must pick the same backend.

use std::collections::BTreeMap;

use k8s_openapi::api::networking::v1::Ingress;
use kuryr_l7_router::model::{CompareType, DesiredRouter, Rule, RuleType};
use kuryr_l7_router::translate::{Inputs, TranslateOptions, translate};
use proptest::prelude::*;
use serde_json::json;

const HOSTS: &[&str] = &["foo.com", "bar.foo.com", "baz.bar.foo.com", "*.foo.com", "*.bar.foo.com", ""];
const PATHS: &[&str] = &["/", "/foo", "/foo/", "/foobar", "/foo/bar", "/foo/bar/", "/a.b", "/a+b", "/Foo"];
const TYPES: &[&str] = &["Exact", "Prefix", "ImplementationSpecific"];
const REQ_HOSTS: &[&str] = &[
    "foo.com",
    "FOO.com",
    "bar.foo.com:8080",
    "Bar.Foo.Com",
    "baz.bar.foo.com",
    "x.foo.com",
    "other.org",
    "x.y.foo.com",
    "foo.com:80",
];
const REQ_PATHS: &[&str] = &[
    "/",
    "/foo",
    "/foo/",
    "/foobar",
    "/foo/bar",
    "/foo/bar/baz",
    "/foo/barbaz",
    "/a.b",
    "/aXb",
    "/a+b",
    "/aab",
    "/FOO",
    "/Foo/x",
];

#[derive(Clone, Debug)]
struct GenPath {
    path: usize,
    ty: usize,
    svc: usize,
}
#[derive(Clone, Debug)]
struct GenRule {
    host: usize,
    paths: Vec<GenPath>,
}
#[derive(Clone, Debug)]
struct GenIngress {
    default: Option<usize>,
    rules: Vec<GenRule>,
}

fn gen_ingress() -> impl Strategy<Value = GenIngress> {
    let path = (0..PATHS.len(), 0..TYPES.len(), 0..3usize).prop_map(|(path, ty, svc)| GenPath { path, ty, svc });
    let rule = (0..HOSTS.len(), prop::collection::vec(path, 1..4)).prop_map(|(host, paths)| GenRule { host, paths });
    (prop::option::weighted(0.3, 0..3usize), prop::collection::vec(rule, 1..4))
        .prop_map(|(default, rules)| GenIngress { default, rules })
}

fn inputs(ings: &[GenIngress]) -> Inputs {
    let mut inp = Inputs::default();
    inp.ingress_classes.push(
        serde_json::from_value(
            json!({"metadata": {"name": "kuryr"}, "spec": {"controller": "openstack.org/kuryr-l7-router"}}),
        )
        .unwrap(),
    );
    for s in 0..3 {
        inp.services.push(
            serde_json::from_value(
                json!({"metadata": {"name": format!("svc{s}"), "namespace": "ns"}, "spec": {"ports": [{"port": 80}]}}),
            )
            .unwrap(),
        );
    }
    for (i, g) in ings.iter().enumerate() {
        let rules: Vec<_> = g
            .rules
            .iter()
            .map(|r| {
                let paths: Vec<_> = r
                    .paths
                    .iter()
                    .map(|p| json!({"path": PATHS[p.path], "pathType": TYPES[p.ty], "backend": {"service": {"name": format!("svc{}", p.svc), "port": {"number": 80}}}}))
                    .collect();
                let mut v = json!({"http": {"paths": paths}});
                if !HOSTS[r.host].is_empty() {
                    v["host"] = json!(HOSTS[r.host]);
                }
                v
            })
            .collect();
        let mut spec = json!({"ingressClassName": "kuryr", "rules": rules});
        if let Some(d) = g.default {
            spec["defaultBackend"] = json!({"service": {"name": format!("svc{d}"), "port": {"number": 80}}});
        }
        // Names in reverse of age, so age (not name) must decide conflicts.
        let ing: Ingress = serde_json::from_value(json!({
            "metadata": {"name": format!("ing{}", 9 - i), "namespace": "ns", "creationTimestamp": format!("2024-01-0{}T00:00:00Z", i + 1)},
            "spec": spec
        }))
        .unwrap();
        inp.ingresses.push(ing);
    }
    inp
}

/// The Kubernetes spec, written independently: host first (exact, then the one-label wildcard,
/// then host-less rules), then the longest matching path, Exact over Prefix at equal length;
/// the oldest Ingress owns a duplicated (host, path). An Ingress's default backend catches the
/// unmatched paths of its own hosts (as a `/` of that host, after every explicit path, oldest
/// first); a host that an Ingress names and none of its paths matched → no route; any other
/// request → the oldest default backend of an Ingress with a host-less rule.
fn k8s_match(ings: &[GenIngress], host_header: &str, path: &str) -> Option<String> {
    let host = host_header.split(':').next().unwrap().to_ascii_lowercase();
    // (host, exact?, normalized path) -> svc, first (oldest) wins
    let mut routes: BTreeMap<(String, bool, String), usize> = BTreeMap::new();
    for g in ings {
        for r in &g.rules {
            for p in &r.paths {
                let exact = TYPES[p.ty] == "Exact";
                let mut np = PATHS[p.path].to_string();
                if !exact {
                    while np.len() > 1 && np.ends_with('/') {
                        np.pop();
                    }
                }
                routes.entry((HOSTS[r.host].to_string(), exact, np)).or_insert(p.svc);
            }
        }
    }
    for g in ings {
        for r in g.rules.iter().filter(|r| !HOSTS[r.host].is_empty()) {
            if let Some(d) = g.default {
                routes.entry((HOSTS[r.host].to_string(), false, "/".into())).or_insert(d);
            }
        }
    }
    let wildcard_matches = |w: &str| {
        w.strip_prefix('*').is_some_and(|suffix| {
            host.ends_with(suffix) && host.len() > suffix.len() && !host[..host.len() - suffix.len()].contains('.')
        })
    };
    let group: String = if routes.keys().any(|(h, _, _)| *h == host) {
        host.clone()
    } else if let Some((w, _, _)) = routes.keys().find(|(h, _, _)| h.starts_with("*.") && wildcard_matches(h)) {
        w.clone()
    } else {
        String::new()
    };
    let best = routes
        .iter()
        .filter(|((h, _, _), _)| *h == group)
        .filter(
            |((_, exact, p), _)| {
                if *exact { path == p } else { p == "/" || path == p || path.starts_with(&format!("{p}/")) }
            },
        )
        .max_by_key(|((_, exact, p), _)| (p.len(), *exact));
    match best {
        Some((_, svc)) => Some(format!("svc{svc}")),
        // A named host's unmatched path never reaches the router-wide default backend.
        None if !group.is_empty() => None,
        None => ings
            .iter()
            .filter(|g| g.rules.iter().any(|r| HOSTS[r.host].is_empty()))
            .find_map(|g| g.default)
            .map(|d| format!("svc{d}")),
    }
}

fn rule_matches(r: &Rule, re: Option<&regex::Regex>, host: &str, path: &str) -> bool {
    let (subject, ci) = match r.rule_type {
        RuleType::HostName => (host, true),
        RuleType::Path => (path, false),
        // The requests simulated here carry no header, and Ingresses write no header rule.
        RuleType::Header => return r.invert,
    };
    let hit = match r.compare_type {
        CompareType::Regex => re.expect("compiled").is_match(subject),
        CompareType::EqualTo => {
            if ci {
                subject.eq_ignore_ascii_case(&r.value)
            } else {
                subject == r.value
            }
        }
        CompareType::StartsWith => {
            if ci {
                subject.to_ascii_lowercase().starts_with(&r.value.to_ascii_lowercase())
            } else {
                subject.starts_with(&r.value)
            }
        }
        CompareType::EndsWith => subject.ends_with(&r.value),
        CompareType::Contains => subject.contains(&r.value),
    };
    hit != r.invert
}

/// haproxy as configured by Octavia: policies by position, rules ANDed, policies without rules
/// skipped, no match → listener default pool.
fn compile(router: &DesiredRouter) -> Vec<Vec<Option<regex::Regex>>> {
    router
        .policies
        .iter()
        .map(|p| {
            p.rules
                .iter()
                .map(|r| {
                    (r.compare_type == CompareType::Regex).then(|| {
                        // haproxy's `-i` (HOST_NAME) makes the regex case-insensitive.
                        regex::RegexBuilder::new(&r.value)
                            .case_insensitive(r.rule_type == RuleType::HostName)
                            .build()
                            .unwrap()
                    })
                })
                .collect()
        })
        .collect()
}

fn octavia_eval(
    router: &DesiredRouter,
    compiled: &[Vec<Option<regex::Regex>>],
    host: &str,
    path: &str,
) -> Option<String> {
    let mut ps: Vec<_> = router.policies.iter().zip(compiled).collect();
    ps.sort_by_key(|(p, _)| p.position);
    let pool = ps
        .iter()
        .find(|(p, res)| {
            !p.rules.is_empty()
                && p.rules.iter().zip(res.iter()).all(|(r, re)| rule_matches(r, re.as_ref(), host, path))
        })
        .map(|(p, _)| p)
        .map(|p| p.pool.clone())
        .or_else(|| router.default_pool.clone())?;
    // A reserved pool without members (no responder): haproxy's 503, no route.
    let service = &router.pools[&pool].service;
    (service.kind == "Service").then(|| service.name.clone())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]
    #[test]
    fn octavia_policies_route_like_kubernetes(ings in prop::collection::vec(gen_ingress(), 1..5)) {
        let router = translate(&inputs(&ings), &TranslateOptions::default());
        let compiled = compile(&router);
        for (i, p) in router.policies.iter().enumerate() {
            prop_assert_eq!(p.position as usize, i + 1);
            prop_assert!(p.rules.len() <= 50);
        }
        for h in REQ_HOSTS {
            for p in REQ_PATHS {
                let want = k8s_match(&ings, h, p);
                let got = octavia_eval(&router, &compiled, h, p);
                prop_assert_eq!(&got, &want, "request Host: {} path {} policies {:#?}", h, p, router.policies);
            }
        }
    }

    #[test]
    fn translation_is_deterministic_and_order_independent(ings in prop::collection::vec(gen_ingress(), 1..5)) {
        let inp = inputs(&ings);
        let a = translate(&inp, &TranslateOptions::default());
        let mut rev = inp.clone();
        rev.ingresses.reverse();
        rev.services.reverse();
        let b = translate(&rev, &TranslateOptions::default());
        prop_assert_eq!(a, b);
    }
}
