//! Zone-aware member weights. See docs/zone-aware.md for the formula and worked examples.
//!
//! Intent: keep as much traffic as possible in the router's zone while no endpoint is expected to
//! carry more than `zone_overload_factor` times its even share (1/N), and keep every remote
//! endpoint reachable (weight ≥ 1; Octavia weights are 1..256, 0 drains).

use k8s_openapi::api::core::v1::Service;

use super::{TranslateOptions, ZoneMode};

pub const TOPOLOGY_MODE_ANNOTATION: &str = "service.kubernetes.io/topology-mode";
/// Pre-1.27 name of the same opt-in.
pub const TOPOLOGY_HINTS_ANNOTATION: &str = "service.kubernetes.io/topology-aware-hints";
pub const ZONE_LABEL: &str = "topology.kubernetes.io/zone";
pub const LEGACY_ZONE_LABEL: &str = "failure-domain.beta.kubernetes.io/zone";
/// Octavia's maximum member weight.
pub const MAX_WEIGHT: u16 = 256;

/// Has the Service opted into topology-aware routing (or is every Service zone-aware by config)?
pub fn service_is_zone_aware(svc: &Service, opts: &TranslateOptions) -> bool {
    if opts.zone_aware_default {
        return true;
    }
    let ann = svc.metadata.annotations.as_ref();
    let auto = |k: &str| ann.and_then(|a| a.get(k)).is_some_and(|v| v.eq_ignore_ascii_case("auto"));
    let td = svc.spec.as_ref().and_then(|s| s.traffic_distribution.as_deref());
    auto(TOPOLOGY_MODE_ANNOTATION)
        || auto(TOPOLOGY_HINTS_ANNOTATION)
        || matches!(td, Some("PreferClose" | "PreferSameZone"))
}

/// What the weighting knows about one ready member.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Candidate {
    /// Display name for reasons (address:port).
    pub label: String,
    pub zone: Option<String>,
    /// `hints.forZones`, when the EndpointSlice controller set them.
    pub for_zones: Option<Vec<String>>,
}

/// Result: one (weight, backup) per candidate, in order, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Weighting {
    pub weights: Vec<(u16, bool)>,
    pub reason: String,
}

fn even(n: usize, reason: String) -> Weighting {
    Weighting { weights: vec![(1, false); n], reason }
}

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// Integer weights (local, remote) for `local` of `n` endpoints in the router's zone.
///
/// With f = max(factor, 1) and L local of N: locals may carry at most f/N each, so at most
/// min(1, L·f/N) together. If L·f ≥ N every local may take 1/L: weights 256:1 (remote keeps a
/// trickle). Otherwise the ideal ratio is r = f·R / (N − L·f) ≥ 1; local = 256 and
/// remote = ⌈256 / r⌉ (rounding the remote weight *up* keeps locals under the cap), then both are
/// divided by their gcd for readability.
pub fn zone_weights(local: usize, n: usize, factor: f64) -> (u16, u16) {
    let f = if factor.is_finite() && factor >= 1.0 { factor } else { 1.0 };
    let (l, nn) = (local as f64, n as f64);
    let remote = nn - l;
    if remote <= 0.0 {
        return (1, 1);
    }
    let (wl, wr) = if l * f >= nn {
        (u32::from(MAX_WEIGHT), 1)
    } else {
        let ratio = f * remote / (nn - l * f);
        let wr = (f64::from(MAX_WEIGHT) / ratio - 1e-9).ceil().clamp(1.0, f64::from(MAX_WEIGHT)) as u32;
        (u32::from(MAX_WEIGHT), wr)
    };
    let g = gcd(wl, wr);
    ((wl / g) as u16, (wr / g) as u16)
}

/// Weigh the ready members of one pool. Falls back to even weights, with the reason, when the
/// zone information cannot be trusted: no router zone, a member without zone, no local member, or
/// fewer local members than `zone_min_local_endpoints`.
pub fn weigh(cands: &[Candidate], zone_aware: bool, opts: &TranslateOptions) -> Weighting {
    let n = cands.len();
    if !zone_aware {
        return even(n, "even: Service is not zone-aware".into());
    }
    if n == 0 {
        return even(n, "even: no ready endpoints".into());
    }
    let Some(rz) = opts.router_zone.as_deref().filter(|z| !z.is_empty()) else {
        return even(n, "even: no router zone ([octavia_defaults] availability_zone unset)".into());
    };
    if let Some(c) = cands.iter().find(|c| c.zone.as_deref().is_none_or(str::is_empty)) {
        return even(n, format!("even: endpoint {} has no zone", c.label));
    }
    // Hints are used only when every member has them (as kube-proxy does).
    let use_hints = cands.iter().all(|c| c.for_zones.as_ref().is_some_and(|z| !z.is_empty()));
    let is_local: Vec<bool> = cands
        .iter()
        .map(|c| {
            if use_hints {
                c.for_zones.as_ref().is_some_and(|z| z.iter().any(|z| z == rz))
            } else {
                c.zone.as_deref() == Some(rz)
            }
        })
        .collect();
    let local = is_local.iter().filter(|l| **l).count();
    let basis = if use_hints { "hinted for" } else { "in" };
    if local == 0 {
        return even(n, format!("even: no ready endpoint {basis} router zone {rz}"));
    }
    if (local as u64) < u64::from(opts.zone_min_local_endpoints) {
        return even(
            n,
            format!(
                "even: only {local} endpoint(s) {basis} router zone {rz}, fewer than zone_min_local_endpoints {}",
                opts.zone_min_local_endpoints
            ),
        );
    }
    match opts.zone_mode {
        ZoneMode::Backup => Weighting {
            weights: is_local.iter().map(|l| (1, !l)).collect(),
            reason: format!(
                "zone-aware backup: {local} of {n} endpoints {basis} zone {rz}; the others are backup members (requires a pool health monitor)"
            ),
        },
        ZoneMode::Weight => {
            let (wl, wr) = zone_weights(local, n, opts.zone_overload_factor);
            let share =
                (local as f64 * f64::from(wl)) / (local as f64 * f64::from(wl) + (n - local) as f64 * f64::from(wr));
            Weighting {
                weights: is_local.iter().map(|l| (if *l { wl } else { wr }, false)).collect(),
                reason: format!(
                    "zone-aware: {local} of {n} endpoints {basis} zone {rz}, weights local {wl} remote {wr}, expected local share {:.0}%",
                    share * 100.0
                ),
            }
        }
    }
}
