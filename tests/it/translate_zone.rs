//! Zone-aware weights after Kubernetes Topology Aware Routing: router zone validation, the CPU
//! allocation and its safeguards, hints, trafficDistribution, endpoint conditions, backup mode.
//!
//! The worked examples are the seed's (docs/zone-aware.md has the table): zones of unequal CPU,
//! "zone-a twice as large as zone-b with only 2 endpoints", fewer endpoints than zones, a new zone.

use std::collections::BTreeMap;
use std::path::PathBuf;

use k8s_openapi::api::core::v1::{Node, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kuryr_l7_router::translate::members::{index_nodes, node_zones, parse_cpu};
use kuryr_l7_router::translate::zone::{
    Candidate, NodeZones, ZonePolicy, intended_local_share, shares_of, weigh, weights_for_shares,
};
use kuryr_l7_router::translate::*;
use proptest::prelude::*;

fn zones_router(opts: &TranslateOptions) -> kuryr_l7_router::model::DesiredRouter {
    translate(&load_manifests(&[PathBuf::from("tests/fixtures/ingress/zones")]).unwrap(), opts)
}

fn weights(r: &kuryr_l7_router::model::DesiredRouter, pool: &str) -> Vec<u16> {
    r.pools[pool].members.iter().map(|m| m.weight).collect()
}

fn za() -> TranslateOptions {
    TranslateOptions { router_zone: Some("zone-a".into()), ..Default::default() }
}

fn in_zone(rz: &str) -> TranslateOptions {
    TranslateOptions { router_zone: Some(rz.into()), ..Default::default() }
}

fn nodes(cpu: &[(&str, f64)]) -> NodeZones {
    NodeZones { cpu: cpu.iter().map(|(z, c)| (z.to_string(), *c)).collect(), problem: None }
}

/// Candidates with these zones, labelled by index.
fn cands(zones: &[&str]) -> Vec<Candidate> {
    zones
        .iter()
        .enumerate()
        .map(|(i, z)| Candidate { label: format!("ep{i}"), zone: Some(z.to_string()), for_zones: None })
        .collect()
}

fn w_of(w: &kuryr_l7_router::translate::zone::Weighting) -> Vec<u16> {
    w.weights.iter().map(|(w, _)| *w).collect()
}

/// Share of the traffic the members of `zone` receive for these weights.
fn zone_share(c: &[Candidate], w: &[u16], zone: &str) -> f64 {
    c.iter().zip(shares_of(w)).filter(|(c, _)| c.zone.as_deref() == Some(zone)).map(|(_, s)| s).sum()
}

#[test]
fn fixture_pools_follow_the_tar_allocation() {
    let r = zones_router(&za());
    // catalog: 2 endpoints in each of 3 equal zones. Locals take 1.2 × 2/6 = 40%, the two remote
    // zones 30% each: per endpoint 0.20 vs 0.15 → 4:3.
    assert_eq!(weights(&r, "shop_catalog"), [4, 4, 3, 3, 3, 3]);
    let why = &r.pools["shop_catalog"].weighting;
    assert!(why.contains("local allocation 40.0%"), "{why}");
    assert!(why.contains("expected shares zone-a 40.0%, zone-b 30.0%, zone-c 30.0%"), "{why}");
    // plain: not opted in → even; with zone_aware_default: 2 endpoints, 3 zones → even.
    assert_eq!(weights(&r, "shop_plain"), [1, 1]);
    assert!(r.pools["shop_plain"].weighting.starts_with("even: Service is not zone-aware"));
    let r2 = zones_router(&TranslateOptions { zone_aware_default: true, ..za() });
    assert_eq!(weights(&r2, "shop_plain"), [1, 1]);
    assert_eq!(r2.pools["shop_plain"].weighting, "even: 2 endpoints, fewer than the 3 zones");
    // cart: trafficDistribution: PreferClose → the one zone-a endpoint gets (nearly) everything.
    assert_eq!(weights(&r, "shop_cart"), [256, 1, 1]);
    assert!(r.pools["shop_cart"].weighting.contains("no overload safeguard"));
}

#[test]
fn router_zone_is_validated_against_the_nodes() {
    let r = zones_router(&TranslateOptions::default());
    assert!(r.pools["shop_catalog"].weighting.contains("no router zone"));
    assert_eq!(weights(&r, "shop_catalog"), [1; 6]);
    let r = zones_router(&in_zone("az-9"));
    assert_eq!(r.pools["shop_catalog"].weighting, "even: router zone az-9 is not a zone of any Ready node");
    assert_eq!(r.pools["shop_cart"].weighting, "even: router zone az-9 is not a zone of any Ready node");
    assert_eq!(weights(&r, "shop_catalog"), [1; 6]);
}

#[test]
fn unequal_cpu_seed_examples() {
    // zone-a twice as large as zone-b, only 2 endpoints: zone-a's endpoint would carry 2/3 of the
    // load, 33% over its even half: above 20% → no zone-aware weights (the seed's example).
    let nz = nodes(&[("zone-a", 8.0), ("zone-b", 4.0)]);
    let c = cands(&["zone-a", "zone-b"]);
    let w = weigh(&c, ZonePolicy::Topology, &nz, &za());
    assert_eq!(w_of(&w), [1, 1]);
    assert!(
        w.reason.contains(
            "zone zone-a has 1 of 2 endpoints but 66.7% of the CPU: expected overload 33% exceeds threshold 20%"
        ),
        "{}",
        w.reason
    );
    // A looser threshold (0.5) accepts it: locals take min(1, 1.5 × 1/2) = 75%.
    let w = weigh(&c, ZonePolicy::Topology, &nz, &TranslateOptions { zone_overload_threshold: 0.5, ..za() });
    assert_eq!(w_of(&w), [3, 1]);
    assert!((zone_share(&c, &w_of(&w), "zone-a") - 0.75).abs() < 0.01);
    // Endpoints in proportion to CPU (4 in zone-a, 2 in zone-b): balanced.
    let c = cands(&["zone-a", "zone-a", "zone-a", "zone-a", "zone-b", "zone-b"]);
    let w = weigh(&c, ZonePolicy::Topology, &nz, &za());
    assert_eq!(w_of(&w), [2, 2, 2, 2, 1, 1], "{}", w.reason); // 80% local: 1.2 × 4/6
    assert!((zone_share(&c, &w_of(&w), "zone-a") - 0.8).abs() < 1e-9);
    let w = weigh(&c, ZonePolicy::Topology, &nz, &in_zone("zone-b"));
    assert_eq!(w_of(&w), [3, 3, 3, 3, 4, 4], "{}", w.reason); // 40% local: 1.2 × 2/6
    // Remote zones share the rest in proportion to their CPU: zone-b (8) twice zone-c (4).
    let nz3 = nodes(&[("zone-a", 4.0), ("zone-b", 8.0), ("zone-c", 4.0)]);
    let c = cands(&["zone-a", "zone-a", "zone-b", "zone-b", "zone-b", "zone-b", "zone-c", "zone-c"]);
    let w = weigh(&c, ZonePolicy::Topology, &nz3, &za());
    let ws = w_of(&w);
    assert!((zone_share(&c, &ws, "zone-a") - 0.3).abs() < 0.01, "{}", w.reason);
    assert!((zone_share(&c, &ws, "zone-b") - 0.7 * 2.0 / 3.0).abs() < 0.01, "{}", w.reason);
    assert!((zone_share(&c, &ws, "zone-c") - 0.7 / 3.0).abs() < 0.01, "{}", w.reason);
}

#[test]
fn one_local_of_two_gets_the_tar_allocation_not_256_to_1() {
    let nz = nodes(&[("zone-a", 4.0), ("zone-b", 4.0)]);
    let c = cands(&["zone-a", "zone-b"]);
    let w = weigh(&c, ZonePolicy::Topology, &nz, &za());
    // 1.2 × 1/2 = 60% on the local pod (was 256:1 = 99.6%).
    assert_eq!(w_of(&w), [3, 2]);
    assert!(w.reason.contains("expected shares zone-a 60.0%, zone-b 40.0%"), "{}", w.reason);
}

#[test]
fn safeguards_fall_back_to_even_weights() {
    let nz = nodes(&[("zone-a", 4.0), ("zone-b", 4.0), ("zone-c", 4.0)]);
    // Fewer endpoints than zones.
    let w = weigh(&cands(&["zone-a", "zone-b"]), ZonePolicy::Topology, &nz, &za());
    assert_eq!((w_of(&w), w.reason.as_str()), (vec![1, 1], "even: 2 endpoints, fewer than the 3 zones"));
    // An endpoint without zone.
    let mut c = cands(&["zone-a", "zone-b", "zone-c"]);
    c[1].zone = None;
    let w = weigh(&c, ZonePolicy::Topology, &nz, &za());
    assert_eq!(w.reason, "even: endpoint ep1 has no zone");
    // An endpoint in a zone no Ready node reports.
    let w = weigh(&cands(&["zone-a", "zone-b", "zone-x"]), ZonePolicy::Topology, &nz, &za());
    assert_eq!(w.reason, "even: endpoint ep2 is in zone zone-x, which no Ready node reports");
    // A node without zone label or allocatable CPU.
    let bad = NodeZones { problem: Some("node n1 reports no allocatable CPU".into()), ..nz.clone() };
    let w = weigh(&cands(&["zone-a", "zone-b", "zone-c"]), ZonePolicy::Topology, &bad, &za());
    assert_eq!(w.reason, "even: node n1 reports no allocatable CPU");
    // zone_min_local_endpoints still applies.
    let opts = TranslateOptions { zone_min_local_endpoints: 2, ..za() };
    let w = weigh(&cands(&["zone-a", "zone-b", "zone-c"]), ZonePolicy::Topology, &nz, &opts);
    assert!(w.reason.contains("fewer than zone_min_local_endpoints 2"), "{}", w.reason);
    assert!(w.weights.iter().all(|w| *w == (1, false)));
}

#[test]
fn a_new_zone_without_endpoints() {
    // zone-c was just added: nodes, no endpoints. 4 endpoints ≥ 3 zones; zone-a and zone-b carry
    // zone-c's share between them in proportion, so the balance holds.
    let nz = nodes(&[("zone-a", 4.0), ("zone-b", 4.0), ("zone-c", 4.0)]);
    let c = cands(&["zone-a", "zone-a", "zone-b", "zone-b"]);
    let w = weigh(&c, ZonePolicy::Topology, &nz, &za());
    assert_eq!(w_of(&w), [3, 3, 2, 2], "{}", w.reason);
    // A router in the new zone has no local endpoint (kube-proxy: zone not represented) → even.
    let w = weigh(&c, ZonePolicy::Topology, &nz, &in_zone("zone-c"));
    assert_eq!(w.reason, "even: router zone zone-c is not the zone of any endpoint");
}

fn hinted(zone: &str, hints: &[&str]) -> Candidate {
    Candidate {
        label: format!("{zone}/{}", hints.join("+")),
        zone: Some(zone.into()),
        for_zones: Some(hints.iter().map(|h| h.to_string()).collect()),
    }
}

#[test]
fn hints_as_kube_proxy_uses_them() {
    // Hints decide locality and the CPU balance is the controller's job: zone-b's endpoint is
    // hinted for zone-a, so it is the router's local member (1.2 × 1/3 = 40%).
    let nz = nodes(&[("zone-a", 4.0), ("zone-b", 4.0), ("zone-c", 4.0)]);
    let c = vec![hinted("zone-a", &["zone-b"]), hinted("zone-b", &["zone-a"]), hinted("zone-c", &["zone-c"])];
    let w = weigh(&c, ZonePolicy::Topology, &nz, &za());
    assert_eq!(w_of(&w), [3, 4, 3], "{}", w.reason);
    assert!(w.reason.contains("1 of 3 endpoints hinted for router zone zone-a"), "{}", w.reason);
    // Partial hints: a transition → all endpoints, even weights.
    let mut partial = c.clone();
    partial[2].for_zones = None;
    let w = weigh(&partial, ZonePolicy::Topology, &nz, &za());
    assert_eq!(w.reason, "even: only 2 of 3 endpoints carry zone hints (kube-proxy needs all)");
    // The router's zone not among the hints → even.
    let c = vec![hinted("zone-a", &["zone-b"]), hinted("zone-b", &["zone-b"]), hinted("zone-c", &["zone-c"])];
    let w = weigh(&c, ZonePolicy::Topology, &nz, &za());
    assert_eq!(w.reason, "even: router zone zone-a is not among the hinted zones");
}

#[test]
fn traffic_distribution_prefers_local_without_overload_safeguard() {
    // Unequal CPU and 2 endpoints would fall back under TAR; PreferSameZone does not look.
    let nz = nodes(&[("zone-a", 8.0), ("zone-b", 4.0)]);
    let c = cands(&["zone-a", "zone-b"]);
    let w = weigh(&c, ZonePolicy::PreferSameZone, &nz, &za());
    assert_eq!(w_of(&w), [256, 1]);
    let w = weigh(&cands(&["zone-b", "zone-b"]), ZonePolicy::PreferSameZone, &nz, &za());
    assert_eq!(w.reason, "even: trafficDistribution: no endpoint in router zone zone-a");
    let svc: Service = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "s"}, "spec": {"trafficDistribution": "PreferSameZone"}}))
    .unwrap();
    assert_eq!(zone::service_zone_policy(&svc, &za()), ZonePolicy::PreferSameZone);
}

#[test]
fn backup_mode_marks_remote_members() {
    let r = zones_router(&TranslateOptions { zone_mode: ZoneMode::Backup, ..za() });
    let b: Vec<bool> = r.pools["shop_catalog"].members.iter().map(|m| m.backup).collect();
    assert_eq!(b, [false, false, true, true, true, true]);
    assert!(r.pools["shop_catalog"].weighting.contains("requires a pool health monitor"));
}

fn node(name: &str, zone: Option<&str>, cpu: Option<&str>, ready: bool) -> Node {
    let mut labels = serde_json::Map::new();
    if let Some(z) = zone {
        labels.insert("topology.kubernetes.io/zone".into(), z.into());
    }
    let alloc = cpu.map_or(serde_json::json!({}), |c| serde_json::json!({"cpu": c}));
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "labels": labels},
        "status": {"allocatable": alloc, "conditions": [{"type": "Ready", "status": if ready {"True"} else {"False"}}]}
    }))
    .unwrap()
}

#[test]
fn node_zones_count_ready_nodes_cpu() {
    assert_eq!(parse_cpu("3500m"), Some(3.5));
    assert_eq!(parse_cpu("2"), Some(2.0));
    assert_eq!(parse_cpu("x"), None);
    let ns = vec![
        node("n1", Some("zone-a"), Some("4"), true),
        node("n2", Some("zone-a"), Some("500m"), true),
        node("n3", Some("zone-b"), Some("2"), true),
        node("n4", Some("zone-c"), Some("8"), false),
    ];
    let nz = node_zones(&index_nodes(&ns), &TranslateOptions::default());
    assert_eq!(nz.cpu, BTreeMap::from([("zone-a".to_string(), 4.5), ("zone-b".to_string(), 2.0)]));
    assert_eq!(nz.problem, None);
    let ns = vec![node("n1", None, Some("4"), true), node("n2", Some("zone-a"), None, true)];
    let nz = node_zones(&index_nodes(&ns), &TranslateOptions::default());
    assert_eq!(nz.problem.as_deref(), Some("node n1 has no topology.kubernetes.io/zone label"));
}

/// One Service with the given endpoints (address, zone, ready, serving, terminating), weighed.
fn pool(eps: &[(&str, &str, bool, bool, bool)]) -> (Vec<(String, u16)>, String) {
    let svc: Service = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "s", "namespace": "ns", "annotations": {"service.kubernetes.io/topology-mode": "Auto"}},
        "spec": {"ports": [{"name": "http", "port": 80, "targetPort": 8080}]}}))
    .unwrap();
    let endpoints: Vec<_> = eps
        .iter()
        .map(|(a, z, r, s, t)| {
            serde_json::json!({"addresses": [a], "zone": z,
            "conditions": {"ready": r, "serving": s, "terminating": t}})
        })
        .collect();
    let slice: EndpointSlice = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "s-1", "namespace": "ns"}, "addressType": "IPv4",
        "ports": [{"name": "http", "port": 8080}], "endpoints": endpoints}))
    .unwrap();
    let ns = vec![node("n1", Some("zone-a"), Some("4"), true), node("n2", Some("zone-b"), Some("4"), true)];
    let sp = svc.spec.as_ref().unwrap().ports.as_ref().unwrap()[0].clone();
    let slices = BTreeMap::from([("s-1".to_string(), slice)]);
    let (members, why, _) = pool_members(&svc, &sp, &slices, &index_nodes(&ns), &za());
    (members.iter().map(|m| (m.address.to_string(), m.weight)).collect(), why)
}

#[test]
fn terminating_endpoints_drain_with_weight_zero() {
    let (m, why) = pool(&[
        ("10.0.0.1", "zone-a", true, true, false),
        ("10.0.0.2", "zone-b", true, true, false),
        ("10.0.0.3", "zone-a", false, true, true), // terminating, still serving → weight 0
        ("10.0.0.4", "zone-b", false, false, true), // terminating, not serving → gone
        ("10.0.0.5", "zone-b", false, false, false), // not ready → gone
    ]);
    let m: Vec<(&str, u16)> = m.iter().map(|(a, w)| (a.as_str(), *w)).collect();
    assert_eq!(m, [("10.0.0.1", 3), ("10.0.0.2", 2), ("10.0.0.3", 0)], "{why}");
    assert!(why.ends_with("; 1 terminating endpoint(s) drain with weight 0"), "{why}");
}

#[test]
fn all_terminating_uses_the_serving_ones() {
    let (m, why) = pool(&[
        ("10.0.0.1", "zone-a", false, true, true),
        ("10.0.0.2", "zone-b", false, true, true),
        ("10.0.0.3", "zone-b", false, false, true),
    ]);
    let m: Vec<(&str, u16)> = m.iter().map(|(a, w)| (a.as_str(), *w)).collect();
    assert_eq!(m, [("10.0.0.1", 3), ("10.0.0.2", 2)], "{why}");
    assert!(why.ends_with("every endpoint is terminating: the serving ones are used"), "{why}");
}

proptest! {
    #[test]
    fn weights_mean_what_they_say(
        cpu in prop::collection::vec(1u32..16, 1..4),
        counts in prop::collection::vec(0usize..12, 4),
        t in 0.0f64..0.6,
        rz in 0usize..4,
    ) {
        let names: Vec<String> = (0..cpu.len()).map(|i| format!("zone-{i}")).collect();
        let nz = NodeZones { cpu: names.iter().zip(&cpu).map(|(z, c)| (z.clone(), f64::from(*c))).collect(), problem: None };
        let zones: Vec<&str> = names.iter().zip(&counts).flat_map(|(z, n)| std::iter::repeat_n(z.as_str(), *n)).collect();
        let c = cands(&zones);
        let opts = TranslateOptions { router_zone: Some(format!("zone-{rz}")), zone_overload_threshold: t, ..Default::default() };
        let w = weigh(&c, ZonePolicy::Topology, &nz, &opts);
        prop_assert_eq!(w.weights.len(), c.len());
        prop_assert!(w.weights.iter().all(|(w, b)| (1..=256).contains(w) && !b));
        if !w.reason.starts_with("zone-aware:") {
            prop_assert!(w.weights.iter().all(|x| *x == (1, false)), "{}", w.reason);
            return Ok(());
        }
        let ws = w_of(&w);
        let n = c.len();
        let local_zone = format!("zone-{rz}");
        let local = zones.iter().filter(|z| **z == local_zone).count();
        let s = intended_local_share(local, n, t);
        prop_assert!((zone_share(&c, &ws, &local_zone) - s).abs() <= 0.01, "local {} vs {}: {}", zone_share(&c, &ws, &local_zone), s, w.reason);
        let remote_cpu: f64 = names.iter().zip(&cpu).zip(&counts).filter(|((z, _), n)| **z != local_zone && **n > 0).map(|((_, c), _)| f64::from(*c)).sum();
        for ((z, cz), k) in names.iter().zip(&cpu).zip(&counts) {
            if *z != local_zone && *k > 0 {
                let want = (1.0 - s) * f64::from(*cz) / remote_cpu;
                prop_assert!((zone_share(&c, &ws, z) - want).abs() <= 0.01, "{z}: {} vs {want}: {}", zone_share(&c, &ws, z), w.reason);
            }
        }
        // No local endpoint above (1 + t) × its even share (plus rounding).
        prop_assert!(zone_share(&c, &ws, &local_zone) / local as f64 <= (1.0 + t) / n as f64 + 0.01);
    }

    #[test]
    fn weights_for_shares_are_octavia_weights(shares in prop::collection::vec(0.0f64..1.0, 1..40)) {
        let w = weights_for_shares(&shares);
        prop_assert_eq!(w.len(), shares.len());
        prop_assert!(w.iter().all(|w| (1..=256).contains(w)));
    }
}

#[test]
fn every_weighting_reason_has_a_metric_rule() {
    use kuryr_l7_router::translate::zone::weighting_rule;
    let nz = nodes(&[("zone-a", 4.0), ("zone-b", 4.0), ("zone-c", 4.0)]);
    let big = nodes(&[("zone-a", 8.0), ("zone-b", 4.0)]);
    let mut no_zone = cands(&["zone-a", "zone-b", "zone-c"]);
    no_zone[0].zone = None;
    let hinted_b = vec![hinted("zone-a", &["zone-b"]), hinted("zone-b", &["zone-b"]), hinted("zone-c", &["zone-c"])];
    let mut partial = hinted_b.clone();
    partial[0].for_zones = None;
    let bad = NodeZones { problem: Some("node n1 has no topology.kubernetes.io/zone label".into()), ..nz.clone() };
    let three = cands(&["zone-a", "zone-b", "zone-c"]);
    let cases: Vec<(Vec<Candidate>, ZonePolicy, &NodeZones, TranslateOptions, &str)> = vec![
        (three.clone(), ZonePolicy::Topology, &nz, za(), "topology"),
        (three.clone(), ZonePolicy::PreferSameZone, &nz, za(), "prefer_same_zone"),
        (three.clone(), ZonePolicy::Topology, &nz, TranslateOptions { zone_mode: ZoneMode::Backup, ..za() }, "backup"),
        (three.clone(), ZonePolicy::Even, &nz, za(), "not_zone_aware"),
        (vec![], ZonePolicy::Topology, &nz, za(), "no_endpoints"),
        (three.clone(), ZonePolicy::Topology, &nz, TranslateOptions::default(), "no_router_zone"),
        (three.clone(), ZonePolicy::Topology, &nz, in_zone("az-9"), "router_zone_unknown"),
        (partial, ZonePolicy::Topology, &nz, za(), "partial_hints"),
        (three.clone(), ZonePolicy::Topology, &bad, za(), "node_without_zone_or_cpu"),
        (no_zone, ZonePolicy::Topology, &nz, za(), "endpoint_without_zone"),
        (cands(&["zone-a", "zone-b"]), ZonePolicy::Topology, &nz, za(), "fewer_endpoints_than_zones"),
        (cands(&["zone-a", "zone-b"]), ZonePolicy::Topology, &big, za(), "overload"),
        (
            three.clone(),
            ZonePolicy::Topology,
            &nz,
            TranslateOptions { zone_min_local_endpoints: 2, ..za() },
            "too_few_local_endpoints",
        ),
        (hinted_b, ZonePolicy::Topology, &nz, za(), "no_local_endpoint"),
        (cands(&["zone-b", "zone-b", "zone-c"]), ZonePolicy::Topology, &nz, za(), "no_local_endpoint"),
        (cands(&["zone-b"]), ZonePolicy::PreferSameZone, &nz, za(), "no_local_endpoint"),
    ];
    for (c, policy, n, opts, want) in cases {
        let w = weigh(&c, policy, n, &opts);
        assert_eq!(weighting_rule(&w.reason), want, "{}", w.reason);
    }
}

#[test]
fn a_draining_member_is_removed_when_it_leaves_the_slice() {
    let svc: Service = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "s", "namespace": "ns"},
        "spec": {"ports": [{"name": "http", "port": 80, "targetPort": 8080}]}}))
    .unwrap();
    let sp = svc.spec.as_ref().unwrap().ports.as_ref().unwrap()[0].clone();
    let slice = |eps: serde_json::Value| -> EndpointSlice {
        serde_json::from_value(serde_json::json!({"metadata": {"name": "s-1", "namespace": "ns"},
            "addressType": "IPv4", "ports": [{"name": "http", "port": 8080}], "endpoints": eps}))
        .unwrap()
    };
    let mut cache = SliceCache::new(IpFamily::V4);
    cache.upsert(&slice(serde_json::json!([
        {"addresses": ["10.0.0.1"], "conditions": {"ready": true}},
        {"addresses": ["10.0.0.2"], "conditions": {"ready": false, "serving": true, "terminating": true}}])));
    let nodes = BTreeMap::new();
    let (m, why, _) = cache.members(&svc, &sp, &nodes, &za());
    let got: Vec<(String, u16)> = m.iter().map(|m| (m.address.to_string(), m.weight)).collect();
    assert_eq!(got, [("10.0.0.1".to_string(), 1), ("10.0.0.2".to_string(), 0)], "{why}");
    // The pod is gone from the slice: so is the member.
    cache.upsert(&slice(serde_json::json!([{"addresses": ["10.0.0.1"], "conditions": {"ready": true}}])));
    let (m, _, _) = cache.members(&svc, &sp, &nodes, &za());
    assert_eq!(m.iter().map(|m| m.address.to_string()).collect::<Vec<_>>(), ["10.0.0.1"]);
}
