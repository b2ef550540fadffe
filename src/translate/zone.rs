//! Zone-aware member weights after Kubernetes Topology Aware Routing (TAR). See
//! docs/zone-aware.md for the rules, the allocation and worked examples.
//!
//! Intent: keep traffic in the router's zone while no endpoint is expected to carry more than
//! (1 + `zone_overload_threshold`) times its even share, and fall back to even weights, naming the
//! rule, whenever TAR's safeguards say the zone information cannot be trusted.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Service;

use super::options::{TranslateOptions, ZoneMode};

pub(crate) const TOPOLOGY_MODE_ANNOTATION: &str = "service.kubernetes.io/topology-mode";
/// Pre-1.27 name of the same opt-in.
pub(crate) const TOPOLOGY_HINTS_ANNOTATION: &str = "service.kubernetes.io/topology-aware-hints";
pub(crate) const ZONE_LABEL: &str = "topology.kubernetes.io/zone";
pub(crate) const LEGACY_ZONE_LABEL: &str = "failure-domain.beta.kubernetes.io/zone";
/// Octavia's maximum member weight.
pub(crate) const MAX_WEIGHT: u16 = 256;

/// How a Service asks to be routed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZonePolicy {
    /// Not zone-aware: even weights.
    Even,
    /// `topology-mode: Auto` (or `zone_aware_default`): TAR allocation with its safeguards.
    Topology,
    /// `trafficDistribution: PreferSameZone` / `PreferClose`: local endpoints take everything when
    /// any exist; no overload safeguard (kube-proxy applies none for trafficDistribution).
    PreferSameZone,
}

/// The Service's zone policy. trafficDistribution wins over the annotation, as in kube-proxy.
pub fn service_zone_policy(svc: &Service, opts: &TranslateOptions) -> ZonePolicy {
    let td = svc.spec.as_ref().and_then(|s| s.traffic_distribution.as_deref());
    if matches!(td, Some("PreferClose" | "PreferSameZone")) {
        return ZonePolicy::PreferSameZone;
    }
    let ann = svc.metadata.annotations.as_ref();
    let auto = |k: &str| ann.and_then(|a| a.get(k)).is_some_and(|v| v.eq_ignore_ascii_case("auto"));
    if opts.zone_aware_default || auto(TOPOLOGY_MODE_ANNOTATION) || auto(TOPOLOGY_HINTS_ANNOTATION) {
        ZonePolicy::Topology
    } else {
        ZonePolicy::Even
    }
}

/// What the weighting knows about one member that may take new requests.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Candidate {
    /// Display name for reasons (address:port).
    pub label: String,
    pub zone: Option<String>,
    /// `hints.forZones`, when the EndpointSlice controller set them.
    pub for_zones: Option<Vec<String>>,
}

/// The zones the Ready nodes report, with their allocatable CPU (cores).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodeZones {
    pub cpu: BTreeMap<String, f64>,
    /// The first Ready node without a zone label or allocatable CPU (TAR then sets no hints).
    pub problem: Option<String>,
}

/// Result: one (weight, backup) per candidate, in order, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Weighting {
    pub weights: Vec<(u16, bool)>,
    pub reason: String,
}

/// The weights of `n` members of a Service that is not zone-aware ([`ZonePolicy::Even`]): what
/// [`weigh`] gives for it, without the candidates (the common case needs none built).
pub fn not_zone_aware(n: usize) -> Weighting {
    even(n, "even: Service is not zone-aware".into())
}

fn even(n: usize, reason: String) -> Weighting {
    Weighting { weights: vec![(1, false); n], reason }
}

/// Integer weights in 1..=256 whose weighted-round-robin shares follow `shares` (one intended
/// share per member, summing to 1). Tries every largest weight M in 1..=256 (the largest share gets
/// M, the others are rounded, at least 1 so rounding never drains a member) and keeps the smallest
/// M with the least deviation from the intended shares: exact ratios come out small (3:2), others
/// use the full range, where rounding moves a zone's share by a fraction of a percentage point.
pub fn weights_for_shares(shares: &[f64]) -> Vec<u16> {
    let max = shares.iter().copied().fold(0.0f64, f64::max);
    if max <= 0.0 || !max.is_finite() {
        return vec![1; shares.len()];
    }
    let total: f64 = shares.iter().sum();
    // Members of one zone share one value: search over the distinct values (times their count),
    // so a pool of hundreds of members costs 256 × zones steps.
    let mut distinct: Vec<(f64, f64)> = Vec::new();
    for s in shares {
        match distinct.iter_mut().find(|(v, _)| v == s) {
            Some((_, c)) => *c += 1.0,
            None => distinct.push((*s, 1.0)),
        }
    }
    let weight = |m: u16, s: f64| (f64::from(m) * s / max).round().clamp(1.0, f64::from(MAX_WEIGHT)) as u16;
    let mut best = (f64::MAX, 1);
    for m in 1..=MAX_WEIGHT {
        let sum: f64 = distinct.iter().map(|(v, c)| c * f64::from(weight(m, *v))).sum();
        let err = distinct.iter().map(|(v, _)| (f64::from(weight(m, *v)) / sum - v / total).abs()).fold(0.0, f64::max);
        if err < best.0 - 1e-12 {
            best = (err, m);
            if err < 1e-9 {
                break;
            }
        }
    }
    shares.iter().map(|s| weight(best.1, *s)).collect()
}

/// The shares a weighted round robin gives each member for `weights`.
pub fn shares_of(weights: &[u16]) -> Vec<f64> {
    let total: f64 = weights.iter().map(|w| f64::from(*w)).sum();
    weights.iter().map(|w| if total > 0.0 { f64::from(*w) / total } else { 0.0 }).collect()
}

/// "zone-a 60.0%, zone-b 40.0%": the expected share of each zone (by `keys`) for `weights`.
fn zone_shares_text(keys: &[String], weights: &[u16]) -> String {
    let mut by_zone: BTreeMap<&str, f64> = BTreeMap::new();
    for (k, s) in keys.iter().zip(shares_of(weights)) {
        *by_zone.entry(k.as_str()).or_default() += s;
    }
    by_zone.iter().map(|(z, s)| format!("{z} {:.1}%", s * 100.0)).collect::<Vec<_>>().join(", ")
}

/// Intended share of each member: `local_share` split evenly over the local members, the rest over
/// the remote zones in proportion to `zone_weight` (CPU, or 1 per member) and evenly within a zone.
fn allocate(is_local: &[bool], keys: &[String], local_share: f64, zone_weight: &dyn Fn(&str) -> f64) -> Vec<f64> {
    let local = is_local.iter().filter(|l| **l).count() as f64;
    let mut remote_count: BTreeMap<&str, f64> = BTreeMap::new();
    for (k, _) in keys.iter().zip(is_local).filter(|(_, l)| !**l) {
        *remote_count.entry(k.as_str()).or_default() += 1.0;
    }
    let remote_total: f64 = remote_count.keys().map(|z| zone_weight(z)).sum();
    keys.iter()
        .zip(is_local)
        .map(|(k, l)| {
            if *l {
                local_share / local
            } else if remote_total > 0.0 {
                (1.0 - local_share) * zone_weight(k) / remote_total / remote_count[k.as_str()]
            } else {
                0.0
            }
        })
        .collect()
}

/// Weigh the members of one pool (see the module doc and docs/zone-aware.md).
pub fn weigh(cands: &[Candidate], policy: ZonePolicy, nodes: &NodeZones, opts: &TranslateOptions) -> Weighting {
    let n = cands.len();
    if policy == ZonePolicy::Even {
        return not_zone_aware(n);
    }
    if n == 0 {
        return even(n, "even: no ready endpoints".into());
    }
    let Some(rz) = opts.router_zone.as_deref().filter(|z| !z.is_empty()) else {
        return even(n, "even: no router zone ([octavia_defaults] router_zone and availability_zone unset)".into());
    };
    if !nodes.cpu.contains_key(rz) {
        return even(n, format!("even: router zone {rz} is not a zone of any Ready node"));
    }
    match policy {
        ZonePolicy::PreferSameZone => prefer_same_zone(cands, rz, opts),
        _ => topology(cands, rz, nodes, opts),
    }
}

fn zone_keys(cands: &[Candidate]) -> Vec<String> {
    cands.iter().map(|c| c.zone.clone().unwrap_or_else(|| "(no zone)".into())).collect()
}

/// trafficDistribution: local endpoints get (nearly) everything when any exist. Remote members
/// keep weight 1 so they stay reachable (0 would drain them), or are backup members in backup mode.
fn prefer_same_zone(cands: &[Candidate], rz: &str, opts: &TranslateOptions) -> Weighting {
    let n = cands.len();
    let is_local: Vec<bool> = cands.iter().map(|c| c.zone.as_deref() == Some(rz)).collect();
    let local = is_local.iter().filter(|l| **l).count();
    if local == 0 {
        return even(n, format!("even: trafficDistribution: no endpoint in router zone {rz}"));
    }
    if opts.zone_mode == ZoneMode::Backup {
        return backup(&is_local, rz, "trafficDistribution");
    }
    let weights: Vec<u16> = is_local.iter().map(|l| if *l { MAX_WEIGHT } else { 1 }).collect();
    let text = zone_shares_text(&zone_keys(cands), &weights);
    Weighting {
        reason: format!(
            "zone-aware (trafficDistribution, no overload safeguard): {local} of {n} endpoints in router zone {rz}; expected shares {text}"
        ),
        weights: weights.into_iter().map(|w| (w, false)).collect(),
    }
}

fn backup(is_local: &[bool], rz: &str, basis: &str) -> Weighting {
    let local = is_local.iter().filter(|l| **l).count();
    Weighting {
        weights: is_local.iter().map(|l| (1, !l)).collect(),
        reason: format!(
            "zone-aware backup ({basis}): {local} of {} endpoints local to zone {rz}; the others are backup members (requires a pool health monitor)",
            is_local.len()
        ),
    }
}

/// TAR: hints when every endpoint has them, else the CPU allocation with its safeguards.
fn topology(cands: &[Candidate], rz: &str, nodes: &NodeZones, opts: &TranslateOptions) -> Weighting {
    let n = cands.len();
    let hinted = cands.iter().filter(|c| c.for_zones.as_ref().is_some_and(|z| !z.is_empty())).count();
    let use_hints = hinted == n;
    if hinted > 0 && !use_hints {
        return even(n, format!("even: only {hinted} of {n} endpoints carry zone hints (kube-proxy needs all)"));
    }
    if !use_hints {
        if let Some(p) = &nodes.problem {
            return even(n, format!("even: {p}"));
        }
        if let Some(c) = cands.iter().find(|c| c.zone.as_deref().is_none_or(str::is_empty)) {
            return even(n, format!("even: endpoint {} has no zone", c.label));
        }
        if let Some((c, z)) =
            cands.iter().find_map(|c| c.zone.as_ref().filter(|z| !nodes.cpu.contains_key(*z)).map(|z| (c, z)))
        {
            return even(n, format!("even: endpoint {} is in zone {z}, which no Ready node reports", c.label));
        }
        if n < nodes.cpu.len() {
            return even(n, format!("even: {n} endpoints, fewer than the {} zones", nodes.cpu.len()));
        }
    }
    let is_local: Vec<bool> = cands
        .iter()
        .map(|c| match (&c.for_zones, use_hints) {
            (Some(z), true) => z.iter().any(|z| z == rz),
            _ => c.zone.as_deref() == Some(rz),
        })
        .collect();
    let local = is_local.iter().filter(|l| **l).count();
    if local == 0 {
        let why = if use_hints { "among the hinted zones" } else { "the zone of any endpoint" };
        return even(n, format!("even: router zone {rz} is not {why}"));
    }
    if (local as u64) < u64::from(opts.zone_min_local_endpoints) {
        return even(
            n,
            format!(
                "even: only {local} endpoint(s) local to router zone {rz}, fewer than zone_min_local_endpoints {}",
                opts.zone_min_local_endpoints
            ),
        );
    }
    let t = if opts.zone_overload_threshold.is_finite() { opts.zone_overload_threshold.max(0.0) } else { 0.0 };
    let keys = zone_keys(cands);
    if !use_hints {
        if let Some(reason) = overloaded_zone(&keys, nodes, t) {
            return even(n, reason);
        }
    }
    if opts.zone_mode == ZoneMode::Backup {
        return backup(&is_local, rz, if use_hints { "hints" } else { "zone" });
    }
    let local_share = intended_local_share(local, n, t);
    // Remote zones by CPU; with hints, remote members share evenly (zone weight = its member count).
    let remote_weight =
        |z: &str| if use_hints { count(&keys, &is_local, z) } else { nodes.cpu.get(z).copied().unwrap_or(0.0) };
    let weights = weights_for_shares(&allocate(&is_local, &keys, local_share, &remote_weight));
    let basis = if use_hints { "hinted for" } else { "in" };
    Weighting {
        reason: format!(
            "zone-aware: {local} of {n} endpoints {basis} router zone {rz}; local allocation {:.1}% (at most {:.0}% over even); expected shares {}",
            local_share * 100.0,
            t * 100.0,
            zone_shares_text(&keys, &weights)
        ),
        weights: weights.into_iter().map(|w| (w, false)).collect(),
    }
}

fn count(keys: &[String], is_local: &[bool], z: &str) -> f64 {
    keys.iter().zip(is_local).filter(|(k, l)| !**l && k.as_str() == z).count() as f64
}

/// The share of the router's traffic the local endpoints are meant to take: everything, but no
/// local endpoint above (1 + t) times its even share 1/N.
pub fn intended_local_share(local: usize, n: usize, t: f64) -> f64 {
    if n == 0 {
        return 0.0;
    }
    ((1.0 + t) * local as f64 / n as f64).min(1.0)
}

/// TAR's balance safeguard: each zone's endpoints are expected to carry the zone's share of the
/// allocatable CPU (zones without endpoints are served by the others, in proportion). A zone whose
/// endpoints would then carry more than (1 + t) times their even share makes the Service fall back.
pub(crate) fn overloaded_zone(keys: &[String], nodes: &NodeZones, t: f64) -> Option<String> {
    let n = keys.len() as f64;
    let mut per_zone: BTreeMap<&str, f64> = BTreeMap::new();
    for k in keys {
        *per_zone.entry(k.as_str()).or_default() += 1.0;
    }
    let cpu_total: f64 = per_zone.keys().map(|z| nodes.cpu.get(*z).copied().unwrap_or(0.0)).sum();
    if cpu_total <= 0.0 {
        return Some("even: the zones of the endpoints report no allocatable CPU".into());
    }
    for (z, count) in &per_zone {
        let expected = nodes.cpu.get(*z).copied().unwrap_or(0.0) / cpu_total;
        let overload = expected * n / count - 1.0;
        if overload > t + 1e-9 {
            return Some(format!(
                "even: zone {z} has {count} of {n} endpoints but {:.1}% of the CPU: expected overload {:.0}% exceeds threshold {:.0}%",
                expected * 100.0,
                overload * 100.0,
                t * 100.0
            ));
        }
    }
    None
}

/// A stable, low-cardinality key for a weighting reason (metric label): which rule decided.
pub fn weighting_rule(reason: &str) -> &'static str {
    const RULES: [(&str, &str); 16] = [
        // A pool fed by several Services (`translate::split`): each keeps its own weighting.
        ("split: ", "split"),
        ("zone-aware backup", "backup"),
        ("zone-aware (trafficDistribution", "prefer_same_zone"),
        ("zone-aware:", "topology"),
        ("even: Service is not zone-aware", "not_zone_aware"),
        ("even: no ready endpoints", "no_endpoints"),
        ("even: no router zone", "no_router_zone"),
        ("is not a zone of any Ready node", "router_zone_unknown"),
        ("carry zone hints", "partial_hints"),
        ("even: node ", "node_without_zone_or_cpu"),
        ("report no allocatable CPU", "node_without_zone_or_cpu"),
        ("even: endpoint ", "endpoint_without_zone"),
        ("fewer than the", "fewer_endpoints_than_zones"),
        ("expected overload", "overload"),
        ("zone_min_local_endpoints", "too_few_local_endpoints"),
        ("router zone", "no_local_endpoint"),
    ];
    // Order matters: the specific phrases come before the general one ("router zone").
    RULES
        .iter()
        .find(|(p, _)| {
            if p.starts_with("even: ") || p.starts_with("zone-aware") || p.starts_with("split: ") {
                reason.starts_with(p)
            } else {
                reason.contains(p)
            }
        })
        .map_or("other", |(_, k)| k)
}
