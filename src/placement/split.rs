//! The desired state of the logical router, split by placement into one desired router per
//! router of the set.
//!
//! Works on the translation's output (the single-router [`DesiredRouter`]), so the translation
//! stays one function and the split cannot route differently from it: every policy is copied
//! as translated, only filtered and renumbered, keeping the relative order.
//!
//! - A policy with a host (its first non-inverted HOST_NAME rule), a redirect and a guard go to
//!   the router of their host; the claim of the policy's owner ties its hosts into one group.
//! - Host-less policies, the default pool and the default certificate go to every router: a
//!   request for a host that no group names reaches whichever router, and each must answer it as
//!   the single router did.
//! - A certificate goes to every router holding a host it serves (one of its TLS hosts, or an
//!   exact host its wildcard covers); pools go where a policy or default pool uses them.
//!
//! For the hosts of a router, its policies answer every request exactly as the single router
//! did: the policies dropped match only other hosts (property-tested in `tests/it/placement_split.rs`
//! with an haproxy evaluator). Wildcards are hosts of their own: `*.example.com` may be on
//! another router than `a.example.com`, as DNS resolves the exact name before the wildcard.

use std::collections::{BTreeMap, BTreeSet};

use super::groups::normalize_host;
use super::{Capacity, Cost, IngressClaim, Placement, PlacementInput, RouterFate, RouterIndex, RouterRecord, place};
use crate::model::{CompareType, DesiredRouter, HttpsListener, KubeRef, Policy, RuleType};
use crate::translate::hosts::wildcard_covers;
use crate::translate::rules::PORT_SUFFIX;

/// What the split needs besides the desired state: the recorded placement and the limits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplitParams {
    pub capacity: Capacity,
    /// The recorded placement (host → router), empty for a fresh set.
    pub current: BTreeMap<String, RouterIndex>,
    pub routers: BTreeMap<RouterIndex, RouterRecord>,
    pub now: super::UnixSeconds,
    pub empty_grace_secs: u64,
}

/// The logical router as a set: the placement and one desired router per router kept.
#[derive(Clone, Debug, PartialEq)]
pub struct RouterSet {
    pub placement: Placement,
    /// Every router of the placement except those to delete; index 0 always.
    pub routers: BTreeMap<RouterIndex, DesiredRouter>,
}

/// Places the groups of `desired` and splits it: the whole of this module in one call.
pub fn place_and_split(desired: &DesiredRouter, params: &SplitParams) -> RouterSet {
    let placement = place(&placement_input(desired, params));
    let routers = split(desired, &placement);
    RouterSet { placement, routers }
}

/// The key of a policy's owner in the placement: `namespace/name` for an Ingress (what
/// [`Placement::ingress_router`] is keyed by), `Kind namespace/name` for other kinds.
pub fn owner_key(owner: &KubeRef) -> String {
    if owner.is_ingress() { format!("{}/{}", owner.namespace, owner.name) } else { owner.to_string() }
}

/// The host a policy routes, from its first non-inverted HOST_NAME rule (the inverse of
/// `translate::rules::host_rule`); None for a host-less policy (its inverted host rules only
/// exclude other hosts).
pub fn policy_host(p: &Policy) -> Option<String> {
    p.rules
        .iter()
        .find(|r| r.rule_type == RuleType::HostName && !r.invert && r.compare_type == CompareType::Regex)
        .and_then(|r| host_of_rule_value(&r.value))
}

/// `^<pattern>(:[0-9]+)?$` → the host: `[^.]+\.` in front is the wildcard's `*.`, and every
/// other backslash escapes the next character (hosts are DNS names: only `.` is escaped).
pub fn host_of_rule_value(value: &str) -> Option<String> {
    let pattern = value.strip_prefix('^')?.strip_suffix('$')?.strip_suffix(PORT_SUFFIX)?;
    let (wild, rest) = match pattern.strip_prefix("[^.]+\\.") {
        Some(rest) => ("*.", rest),
        None => ("", pattern),
    };
    let mut host = String::from(wild);
    let mut chars = rest.chars();
    while let Some(c) = chars.next() {
        host.push(if c == '\\' { chars.next()? } else { c });
    }
    Some(normalize_host(&host))
}

/// Per owner: the hosts its policies route and how many policies have a host; host-less policies
/// counted apart (they are on every router).
#[derive(Default)]
struct OwnerRoutes {
    hosts: BTreeSet<String>,
    hosted: u32,
    hostless: u32,
}

fn all_policies(desired: &DesiredRouter) -> impl Iterator<Item = &Policy> {
    desired.policies.iter().chain(desired.https.iter().flat_map(|h| h.policies.iter()))
}

fn owner_routes(desired: &DesiredRouter) -> BTreeMap<String, OwnerRoutes> {
    let mut out: BTreeMap<String, OwnerRoutes> = BTreeMap::new();
    for p in all_policies(desired) {
        let o = out.entry(owner_key(&p.owner)).or_default();
        match policy_host(p) {
            Some(h) => {
                o.hosts.insert(h);
                o.hosted += 1;
            }
            None => o.hostless += 1,
        }
    }
    for r in &desired.redirects {
        let o = out.entry(owner_key(&r.owner)).or_default();
        o.hosts.insert(normalize_host(&r.host));
        o.hosted += 1;
    }
    out
}

/// The hosts (of `placed`) a certificate serves: its TLS hosts and the exact hosts its
/// wildcards cover.
fn served_hosts(cert_hosts: &[String], placed: &BTreeSet<String>) -> BTreeSet<String> {
    let tls: Vec<String> = cert_hosts.iter().map(|h| normalize_host(h)).collect();
    placed
        .iter()
        .filter(|h| {
            tls.iter().any(|t| t == *h || (t.starts_with("*.") && !h.starts_with("*.") && wildcard_covers(t, h)))
        })
        .cloned()
        .collect()
}

/// The placement's input: one claim per owner with hosts (its policies over both listeners, the
/// certificates serving its hosts), one per owner with host-less policies (shared cost), and the
/// default certificate as shared cost.
pub(crate) fn placement_input(desired: &DesiredRouter, params: &SplitParams) -> PlacementInput {
    let owners = owner_routes(desired);
    let placed: BTreeSet<String> = owners.values().flat_map(|o| o.hosts.iter().cloned()).collect();
    let mut certs_of: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    let mut shared = Cost::default();
    if let Some(https) = &desired.https {
        shared.certificates = 1;
        for cert in https.certificates.values().filter(|c| c.name != https.default_certificate) {
            let served = served_hosts(&cert.hosts, &placed);
            for (key, o) in &owners {
                let serves = o.hosts.iter().any(|h| served.contains(h));
                let unplaced_owner = served.is_empty() && cert.owners.iter().any(|c| owner_key(c) == *key);
                if serves || unplaced_owner {
                    certs_of.entry(key).or_default().insert(cert.name.clone());
                }
            }
        }
    }
    let mut claims = Vec::new();
    for (key, o) in &owners {
        if !o.hosts.is_empty() {
            claims.push(IngressClaim {
                ingress: key.clone(),
                hosts: o.hosts.iter().cloned().collect(),
                policies: o.hosted,
                certificates: certs_of.get(key.as_str()).cloned().unwrap_or_default(),
            });
        }
        if o.hostless > 0 {
            claims.push(IngressClaim {
                ingress: key.clone(),
                hosts: Vec::new(),
                policies: o.hostless,
                // A certificate serving no routed host, of an owner with no host either.
                certificates: if o.hosts.is_empty() {
                    certs_of.get(key.as_str()).cloned().unwrap_or_default()
                } else {
                    BTreeSet::new()
                },
            });
        }
    }
    PlacementInput {
        claims,
        shared,
        capacity: params.capacity,
        current: params.current.clone(),
        routers: params.routers.clone(),
        now: params.now,
        empty_grace_secs: params.empty_grace_secs,
        moving: BTreeSet::new(),
        serving: BTreeSet::new(),
    }
}

/// Where each host is: its router. (A move in progress puts a host on two routers: the caller
/// adds the source to [`Homes::hosts`] until the move's old routes are deleted.)
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Homes {
    pub hosts: BTreeMap<String, BTreeSet<RouterIndex>>,
    /// The routers to build, index 0 always.
    pub routers: BTreeSet<RouterIndex>,
}

impl Homes {
    /// Every host on its placed router; every router of the placement but those to delete.
    pub fn of(placement: &Placement) -> Self {
        let hosts = placement.host_router.iter().map(|(h, r)| (h.clone(), BTreeSet::from([*r]))).collect();
        let mut routers: BTreeSet<RouterIndex> =
            placement.routers.iter().filter(|(_, l)| l.fate != RouterFate::Delete).map(|(r, _)| *r).collect();
        routers.insert(0);
        Homes { hosts, routers }
    }

    /// The routers of a policy with this host; a host the placement does not know (it cannot
    /// come from the same desired state) stays on the first router rather than nowhere.
    fn of_host(&self, host: &str) -> BTreeSet<RouterIndex> {
        self.hosts.get(&normalize_host(host)).cloned().unwrap_or_else(|| BTreeSet::from([0]))
    }

    fn has(&self, host: Option<&str>, router: RouterIndex) -> bool {
        host.is_none_or(|h| self.of_host(h).contains(&router))
    }
}

/// One desired router per router of `placement` (see the module docs).
pub fn split(desired: &DesiredRouter, placement: &Placement) -> BTreeMap<RouterIndex, DesiredRouter> {
    split_by_homes(desired, &Homes::of(placement))
}

/// [`split`] with explicit homes, for hosts on two routers during a move.
pub fn split_by_homes(desired: &DesiredRouter, homes: &Homes) -> BTreeMap<RouterIndex, DesiredRouter> {
    let placed: BTreeSet<String> = homes.hosts.keys().cloned().collect();
    let used_anywhere: BTreeSet<&str> = all_policies(desired)
        .map(|p| p.pool.as_str())
        .chain(desired.default_pool.as_deref())
        .chain(desired.https.as_ref().and_then(|h| h.default_pool.as_deref()))
        .collect();
    let certs = certificate_routers(desired, homes, &placed);
    let cx = Cx { desired, homes, certs: &certs, used_anywhere: &used_anywhere };
    homes.routers.iter().map(|&r| (r, router_part(&cx, r))).collect()
}

/// What every router's part is cut from.
struct Cx<'a> {
    desired: &'a DesiredRouter,
    homes: &'a Homes,
    /// Certificate name → the routers that hold it.
    certs: &'a BTreeMap<String, BTreeSet<RouterIndex>>,
    /// Pools some policy or default pool uses.
    used_anywhere: &'a BTreeSet<&'a str>,
}

/// The routers of each certificate: those of the hosts it serves; one serving no routed host
/// goes with its owners' hosts (else to the first router); the default certificate everywhere.
fn certificate_routers(
    desired: &DesiredRouter,
    homes: &Homes,
    placed: &BTreeSet<String>,
) -> BTreeMap<String, BTreeSet<RouterIndex>> {
    let Some(https) = &desired.https else { return BTreeMap::new() };
    let owners = owner_routes(desired);
    let mut out = BTreeMap::new();
    for (name, cert) in &https.certificates {
        let routers: BTreeSet<RouterIndex> = if *name == https.default_certificate {
            homes.routers.clone()
        } else {
            let mut served = served_hosts(&cert.hosts, placed);
            if served.is_empty() {
                served = cert
                    .owners
                    .iter()
                    .filter_map(|o| owners.get(&owner_key(o)))
                    .flat_map(|o| o.hosts.iter().cloned())
                    .collect();
            }
            let rs: BTreeSet<RouterIndex> = served.iter().flat_map(|h| homes.of_host(h)).collect();
            if rs.is_empty() { BTreeSet::from([0]) } else { rs }
        };
        out.insert(name.clone(), routers);
    }
    out
}

fn keep_policies(policies: &[Policy], homes: &Homes, router: RouterIndex) -> Vec<Policy> {
    let mut kept: Vec<Policy> =
        policies.iter().filter(|p| homes.has(policy_host(p).as_deref(), router)).cloned().collect();
    crate::translate::table::number(&mut kept);
    kept
}

fn router_part(cx: &Cx<'_>, router: RouterIndex) -> DesiredRouter {
    let (desired, homes) = (cx.desired, cx.homes);
    let policies = keep_policies(&desired.policies, homes, router);
    let https = desired.https.as_ref().map(|h| https_part(h, cx, router));
    let redirects = desired.redirects.iter().filter(|r| homes.has(Some(&r.host), router)).cloned().collect();
    let mut used: BTreeSet<&str> = policies.iter().map(|p| p.pool.as_str()).collect();
    used.extend(https.iter().flat_map(|h| h.policies.iter().map(|p| p.pool.as_str())));
    used.extend(desired.default_pool.as_deref());
    used.extend(desired.https.as_ref().and_then(|h| h.default_pool.as_deref()));
    // A pool nothing routes to (a reserved pool kept ready) is on every router, as on the single one.
    let pools: BTreeMap<_, _> = desired
        .pools
        .iter()
        .filter(|(name, _)| used.contains(name.as_str()) || !cx.used_anywhere.contains(name.as_str()))
        .map(|(n, p)| (n.clone(), p.clone()))
        .collect();
    let health_monitors = desired
        .health_monitors
        .iter()
        .filter(|(n, _)| pools.contains_key(*n))
        .map(|(n, m)| (n.clone(), m.clone()))
        .collect();
    DesiredRouter {
        policies,
        default_pool: desired.default_pool.clone(),
        default_pool_owners: desired.default_pool_owners.clone(),
        pools,
        // Each translation warning becomes one Event: carried by the first router only.
        warnings: if router == 0 { desired.warnings.clone() } else { Vec::new() },
        https,
        redirects,
        // Ingress routers (the only ones placed) have no more HTTP listener.
        more_http: Default::default(),
        more_https: Default::default(),
        health_monitors,
        // The project quota is shared by the set: the caller gives each router its own budget.
        quota: desired.quota.clone(),
        // Set by the router set from the placement's fate of this router.
        empty_since: None,
    }
}

fn https_part(https: &HttpsListener, cx: &Cx<'_>, router: RouterIndex) -> HttpsListener {
    let certificates = https
        .certificates
        .iter()
        .filter(|(name, _)| cx.certs.get(*name).is_some_and(|rs| rs.contains(&router)))
        .map(|(n, c)| (n.clone(), c.clone()))
        .collect();
    HttpsListener {
        port: https.port,
        certificates,
        default_certificate: https.default_certificate.clone(),
        policies: keep_policies(&https.policies, cx.homes, router),
        default_pool: https.default_pool.clone(),
        client_validation: https.client_validation.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::translate::rules::host_rule;

    #[test]
    fn a_host_rule_reads_back_as_its_host() {
        for host in ["a.example.com", "*.example.com", "x-1.b.c", "*.a-b.org"] {
            let value = host_rule(host).value;
            assert_eq!(host_of_rule_value(&value).as_deref(), Some(host), "{value}");
        }
        assert_eq!(host_of_rule_value("^/api(/.*)?$"), None);
    }
}
