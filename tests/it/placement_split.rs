//! The translated router split by placement into one desired router per router of the set: a
//! table test of what goes where, and a property test that the routers together route every
//! request as the single router did (evaluated as haproxy does), with no host on two routers.

use crate::support::haproxy_eval;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

use kuryr_l7_router::model::{DesiredRouter, Policy};
use kuryr_l7_router::placement::split::{RouterSet, SplitParams, owner_key, place_and_split, policy_host};
use kuryr_l7_router::placement::{Capacity, PlacementWarning, RouterIndex};
use kuryr_l7_router::testing::tls_secret_manifest;
use kuryr_l7_router::translate::manifest::load_str;
use kuryr_l7_router::translate::{Inputs, TranslateOptions, translate};
use proptest::prelude::*;
use rcgen::{CertificateParams, KeyPair, date_time_ymd};

const BASE: &str = "apiVersion: networking.k8s.io/v1\nkind: IngressClass\nmetadata: {name: kuryr}\nspec: {controller: openstack.org/kuryr-l7-router}\n";

fn service(name: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Service\nmetadata: {{namespace: shop, name: {name}}}\nspec: {{ports: [{{port: 80}}]}}\n"
    )
}

/// Self-signed certificates, made once: key generation is the slow part of a case.
fn secrets() -> &'static [String] {
    static SECRETS: OnceLock<Vec<String>> = OnceLock::new();
    SECRETS.get_or_init(|| {
        [("tls-wild", &["*.foo.com", "foo.com"][..]), ("tls-ab", &["a.com", "b.com"]), ("tls-c", &["c.org"])]
            .iter()
            .map(|(name, sans)| {
                let key = KeyPair::generate().unwrap();
                let mut params =
                    CertificateParams::new(sans.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
                params.not_before = date_time_ymd(2020, 1, 1);
                params.not_after = date_time_ymd(2099, 1, 1);
                let crt = params.self_signed(&key).unwrap();
                tls_secret_manifest("shop", name, &crt.pem(), &key.serialize_pem())
            })
            .collect()
    })
}

struct Ing<'a> {
    name: &'a str,
    /// (host, path, service); host "" is a host-less rule.
    routes: Vec<(&'a str, &'a str, &'a str)>,
    default: Option<&'a str>,
    tls: Option<(&'a str, Vec<&'a str>)>,
}

fn ingress_yaml(i: usize, ing: &Ing<'_>) -> String {
    let mut by_host: BTreeMap<&str, Vec<(&str, &str)>> = BTreeMap::new();
    for (h, p, s) in &ing.routes {
        by_host.entry(h).or_default().push((p, s));
    }
    let mut rules = String::new();
    for (h, paths) in by_host {
        rules.push_str(if h.is_empty() { "  - http:\n" } else { "  - host: \"HOST\"\n    http:\n" });
        rules = rules.replace("HOST", h);
        rules.push_str("      paths:\n");
        for (p, s) in paths {
            rules.push_str(&format!(
                "      - {{path: \"{p}\", pathType: Prefix, backend: {{service: {{name: {s}, port: {{number: 80}}}}}}}}\n"
            ));
        }
    }
    let mut spec = String::from("  ingressClassName: kuryr\n");
    if let Some(d) = ing.default {
        spec.push_str(&format!("  defaultBackend: {{service: {{name: {d}, port: {{number: 80}}}}}}\n"));
    }
    if let Some((secret, hosts)) = &ing.tls {
        let list = hosts.iter().map(|h| format!("\"{h}\"")).collect::<Vec<_>>().join(", ");
        spec.push_str(&format!("  tls:\n  - secretName: {secret}\n    hosts: [{list}]\n"));
    }
    if !rules.is_empty() {
        spec.push_str(&format!("  rules:\n{rules}"));
    }
    format!(
        "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  namespace: shop\n  name: {}\n  creationTimestamp: \"2026-01-{:02}T00:00:00Z\"\nspec:\n{spec}",
        ing.name,
        i + 1
    )
}

fn translated(ings: &[Ing<'_>]) -> DesiredRouter {
    let mut docs = vec![BASE.to_string(), service("web"), service("api"), service("other")];
    docs.extend(secrets().iter().cloned());
    docs.extend(ings.iter().enumerate().map(|(i, g)| ingress_yaml(i, g)));
    let mut inputs = Inputs::default();
    load_str(&docs.join("\n---\n"), Path::new("test.yaml"), &mut inputs).unwrap();
    inputs.now = Some(SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000));
    translate(&inputs, &TranslateOptions { ingress_class: "kuryr".into(), ..TranslateOptions::default() })
}

fn params(max_policies: u32, max_certificates: u32) -> SplitParams {
    SplitParams {
        capacity: Capacity { max_policies, max_certificates },
        current: BTreeMap::new(),
        routers: BTreeMap::new(),
        now: 1_000,
        empty_grace_secs: 600,
    }
}

fn names(policies: &[Policy]) -> Vec<&str> {
    policies.iter().map(|p| p.name.as_str()).collect()
}

fn hosts_of(r: &DesiredRouter) -> BTreeSet<String> {
    r.policies.iter().chain(r.https.iter().flat_map(|h| &h.policies)).filter_map(policy_host).collect()
}

#[test]
fn each_host_group_is_on_one_router_and_the_shared_part_on_every_router() {
    let desired = translated(&[
        Ing { name: "catch-all", routes: vec![("", "/static", "other")], default: Some("other"), tls: None },
        Ing {
            name: "ab",
            routes: vec![("a.com", "/", "web"), ("a.com", "/api", "api"), ("b.com", "/", "web")],
            default: None,
            tls: Some(("tls-ab", vec!["a.com", "b.com"])),
        },
        Ing { name: "c", routes: vec![("c.org", "/", "api")], default: None, tls: Some(("tls-c", vec!["c.org"])) },
        Ing {
            name: "wild",
            routes: vec![("*.foo.com", "/", "web"), ("x.foo.com", "/x", "api")],
            default: None,
            tls: None,
        },
    ]);
    let set = place_and_split(&desired, &params(8, 3));
    let p = &set.placement;
    assert_eq!(p.host_router["a.com"], p.host_router["b.com"], "one Ingress's hosts share a router");
    assert_eq!(p.ingress_router["shop/ab"], p.host_router["a.com"]);
    assert!(set.routers.len() >= 2, "the groups do not fit one router of 8 policies: {:?}", p.routers);
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
    let mut seen: BTreeMap<String, RouterIndex> = BTreeMap::new();
    for (&index, r) in &set.routers {
        for host in hosts_of(r) {
            assert_eq!(*seen.entry(host.clone()).or_insert(index), index, "{host} on two routers");
        }
        assert_eq!(r.default_pool, desired.default_pool, "router {index}: the default backend is shared");
        let hostless: Vec<_> = r.policies.iter().filter(|p| policy_host(p).is_none()).map(|p| &p.name).collect();
        assert_eq!(hostless.len(), 1, "router {index}: the host-less rule is copied: {:?}", names(&r.policies));
        for (n, p) in r.policies.iter().enumerate() {
            assert_eq!(p.position as usize, n + 1, "router {index}: renumbered");
            assert!(r.pools.contains_key(&p.pool), "router {index}: {} has its pool {}", p.name, p.pool);
        }
        let certs: BTreeSet<&str> = r.https.iter().flat_map(|h| h.certificates.keys().map(String::as_str)).collect();
        let https = r.https.as_ref().expect("every router serves HTTPS when the single one does");
        assert!(certs.contains(https.default_certificate.as_str()), "router {index}: default certificate");
        // The oldest Ingress's certificate is the default one (no SNI match): on every router.
        assert_eq!(https.default_certificate, "shop_tls-ab");
        assert_eq!(certs.contains("shop_tls-c"), index == p.host_router["c.org"], "router {index}: {certs:?}");
        let only_here = |h: &str| p.host_router[h] == index;
        assert_eq!(
            r.pools.contains_key("shop_api"),
            only_here("a.com") || only_here("c.org") || only_here("x.foo.com")
        );
    }
    assert_eq!(set.routers[&0].warnings, desired.warnings, "translation warnings once, on the first router");
    assert!(set.routers.iter().filter(|(i, _)| **i != 0).all(|(_, r)| r.warnings.is_empty()));
}

#[test]
fn a_group_larger_than_a_router_gets_one_of_its_own_with_a_warning() {
    let desired = translated(&[
        Ing { name: "small", routes: vec![("s.com", "/", "web")], default: None, tls: None },
        Ing {
            name: "big",
            routes: vec![
                ("big.com", "/", "web"),
                ("big.com", "/a", "api"),
                ("big.com", "/b", "api"),
                ("big2.com", "/", "web"),
            ],
            default: None,
            tls: None,
        },
    ]);
    let set = place_and_split(&desired, &params(3, 1));
    let big = set.placement.host_router["big.com"];
    assert_ne!(big, set.placement.host_router["s.com"]);
    assert!(
        set.placement.warnings.iter().any(|w| matches!(w, PlacementWarning::OversizedGroup { group, router, .. } if group == "big.com" && *router == big)),
        "{:?}",
        set.placement.warnings
    );
    assert_eq!(set.routers[&big].policies.len(), 4);
}

#[test]
fn during_a_move_the_moved_hosts_are_served_by_both_routers() {
    use kuryr_l7_router::placement::split::{Homes, split_by_homes};
    let desired = translated(&[
        Ing { name: "c", routes: vec![("c.org", "/", "api")], default: None, tls: Some(("tls-c", vec!["c.org"])) },
        Ing { name: "d", routes: vec![("d.net", "/", "web")], default: None, tls: None },
    ]);
    let set = place_and_split(&desired, &params(2, 2));
    let (c, d) = (set.placement.host_router["c.org"], set.placement.host_router["d.net"]);
    assert_ne!(c, d, "one group per router at 2 policies");
    // c.org moving from its router to d.net's: the target serves it too until the source lets go.
    let mut homes = Homes::of(&set.placement);
    homes.hosts.get_mut("c.org").unwrap().insert(d);
    let both = split_by_homes(&desired, &homes);
    for r in [c, d] {
        assert!(hosts_of(&both[&r]).contains("c.org"), "router {r} serves c.org during the move");
        let certs = &both[&r].https.as_ref().unwrap().certificates;
        assert!(certs.contains_key("shop_tls-c"), "router {r} holds c.org's certificate");
        assert!(both[&r].pools.contains_key("shop_api"), "router {r} has c.org's pool");
    }
    assert!(!hosts_of(&both[&c]).contains("d.net"), "only the moved hosts are on two routers");
}

// ---- property: the set routes like the single router ----

const HOSTS: &[&str] = &["a.com", "b.com", "c.org", "foo.com", "x.foo.com", "*.foo.com", "d.net", ""];
const PATHS: &[&str] = &["/", "/api", "/api/v1", "/x"];
const SERVICES: &[&str] = &["web", "api", "other"];
const REQ_HOSTS: &[&str] = &["a.com", "b.com", "c.org", "foo.com", "x.foo.com", "y.foo.com", "d.net", "elsewhere.io"];
const REQ_PATHS: &[&str] = &["/", "/api", "/api/v1/z", "/x", "/nothing"];
const TLS: &[(&str, &[&str])] =
    &[("tls-wild", &["*.foo.com", "foo.com"]), ("tls-ab", &["a.com", "b.com"]), ("tls-c", &["c.org"])];

type GenIng = (Vec<(usize, usize, usize)>, Option<usize>, Option<usize>);

fn gen_ingress() -> impl Strategy<Value = GenIng> {
    let route = (0..HOSTS.len(), 0..PATHS.len(), 0..SERVICES.len());
    (
        prop::collection::vec(route, 1..4),
        prop::option::weighted(0.2, 0..SERVICES.len()),
        prop::option::weighted(0.4, 0..TLS.len()),
    )
}

fn build(ings: &[GenIng]) -> Vec<Ing<'static>> {
    let names = ["i0", "i1", "i2", "i3", "i4", "i5", "i6", "i7"];
    ings.iter()
        .zip(names)
        .map(|((routes, default, tls), name)| Ing {
            name,
            routes: routes.iter().map(|&(h, p, s)| (HOSTS[h], PATHS[p], SERVICES[s])).collect(),
            default: default.map(|d| SERVICES[d]),
            tls: tls.map(|t| (TLS[t].0, TLS[t].1.to_vec())),
        })
        .collect()
}

/// The router DNS sends a request for `host` to: the router of the host, else of the wildcard
/// covering it; None: a host no group names (any router answers).
fn home(set: &RouterSet, host: &str) -> Option<RouterIndex> {
    let hr = &set.placement.host_router;
    hr.get(host).copied().or_else(|| {
        let (_, parent) = host.split_once('.')?;
        hr.get(&format!("*.{parent}")).copied()
    })
}

fn check_union(single: &DesiredRouter, set: &RouterSet) -> Result<(), TestCaseError> {
    let listeners = |r: &DesiredRouter| -> Vec<Vec<Policy>> {
        vec![r.policies.clone(), r.https.as_ref().map(|h| h.policies.clone()).unwrap_or_default()]
    };
    for (l, want) in listeners(single).into_iter().enumerate() {
        let mut union: BTreeMap<String, usize> = BTreeMap::new();
        for r in set.routers.values() {
            let got = &listeners(r)[l];
            let order: Vec<&str> = names(&want).into_iter().filter(|n| got.iter().any(|p| p.name == *n)).collect();
            prop_assert_eq!(names(got), order, "a router keeps the single router's order");
            for p in got {
                *union.entry(p.name.clone()).or_default() += 1;
            }
        }
        for p in &want {
            let copies = union.remove(&p.name).unwrap_or(0);
            let expected = if policy_host(p).is_some() { 1 } else { set.routers.len() };
            prop_assert_eq!(copies, expected, "listener {}: {} copies of {}", l, copies, &p.name);
            if let Some(h) = policy_host(p) {
                let on = set.routers.iter().find(|(_, r)| listeners(r)[l].iter().any(|q| q.name == p.name));
                prop_assert_eq!(on.map(|(i, _)| *i), Some(set.placement.host_router[&h]));
                let owner = owner_key(&p.owner);
                prop_assert_eq!(set.placement.ingress_router.get(&owner).copied(), Some(set.placement.host_router[&h]));
            }
        }
        prop_assert!(union.is_empty(), "policies not in the single router: {:?}", union);
    }
    let redirects: BTreeSet<String> =
        set.routers.values().flat_map(|r| r.redirects.iter().map(|x| x.name.clone())).collect();
    let n: usize = set.routers.values().map(|r| r.redirects.len()).sum();
    prop_assert_eq!(n, single.redirects.len());
    prop_assert_eq!(redirects, single.redirects.iter().map(|x| x.name.clone()).collect::<BTreeSet<_>>());
    let pools: BTreeSet<&String> = set.routers.values().flat_map(|r| r.pools.keys()).collect();
    prop_assert_eq!(pools, single.pools.keys().collect::<BTreeSet<_>>());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]
    #[test]
    fn the_routers_together_route_every_request_as_the_single_router(
        ings in prop::collection::vec(gen_ingress(), 1..7),
        max_policies in 3u32..12,
        max_certificates in 1u32..4,
    ) {
        let single = translated(&build(&ings));
        let set = place_and_split(&single, &params(max_policies, max_certificates));
        check_union(&single, &set)?;
        let mut host_on: BTreeMap<String, RouterIndex> = BTreeMap::new();
        for (&i, r) in &set.routers {
            for h in hosts_of(r) {
                prop_assert_eq!(*host_on.entry(h.clone()).or_insert(i), i, "{} on two routers", h);
            }
            prop_assert_eq!(r.https.is_some(), single.https.is_some());
        }
        for host in REQ_HOSTS {
            let routers: Vec<RouterIndex> = match home(&set, host) {
                Some(r) => vec![r],
                None => set.routers.keys().copied().collect(),
            };
            for path in REQ_PATHS {
                for r in &routers {
                    let part = &set.routers[r];
                    prop_assert_eq!(
                        haproxy_eval::http(part, host, path),
                        haproxy_eval::http(&single, host, path),
                        "HTTP {}{} on router {}", host, path, r
                    );
                    prop_assert_eq!(
                        haproxy_eval::https(part, host, path),
                        haproxy_eval::https(&single, host, path),
                        "HTTPS {}{} on router {}", host, path, r
                    );
                }
            }
            // SNI: the router of a TLS host holds every certificate serving it (wildcards included).
            if let (Some(r), Some(https)) = (home(&set, host), &single.https) {
                let serves = |h: &String| h == host || h.strip_prefix('*').is_some_and(|dot_suffix| {
                    host.strip_suffix(dot_suffix).is_some_and(|label| !label.is_empty() && !label.contains('.'))
                });
                for cert in https.certificates.values().filter(|c| c.hosts.iter().any(serves)) {
                    let held = set.routers[&r].https.as_ref().is_some_and(|h| h.certificates.contains_key(&cert.name));
                    prop_assert!(held, "{} on router {} lacks {}", host, r, &cert.name);
                }
            }
        }
    }

    #[test]
    fn the_split_does_not_depend_on_the_order_of_the_ingresses(ings in prop::collection::vec(gen_ingress(), 1..6)) {
        let single = translated(&build(&ings));
        let a = place_and_split(&single, &params(5, 2));
        let mut reordered = single.clone();
        reordered.policies.reverse();
        kuryr_l7_router::translate::table::number(&mut reordered.policies);
        reordered.redirects.reverse();
        let b = place_and_split(&reordered, &params(5, 2));
        prop_assert_eq!(&a.placement, &b.placement);
    }
}
