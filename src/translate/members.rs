//! Pool members from EndpointSlices (or core Endpoints), with node-pool filtering and zone weights.
//!
//! [`SliceCache`] keeps one Service's slices pre-digested and keyed by slice name (Contour's
//! EndpointSlice design): a change to one slice re-digests that slice only, and the members are a
//! cheap merge of the digested slices.

use std::collections::BTreeMap;
use std::net::IpAddr;

use k8s_openapi::api::core::v1::{Endpoints, Node, Service, ServicePort};
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointConditions, EndpointPort, EndpointSlice};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::names::namespace_of;
use super::options::{IpFamily, TranslateOptions};
use super::slices::{AsCompact, CachedEndpoint, CompactSlice};
use super::zone::{Candidate, LEGACY_ZONE_LABEL, NodeZones, ZONE_LABEL, service_zone_policy, weigh};
use crate::model::{KubeRef, Member, Warning};

/// Nodes by name, borrowed: the translation never copies Node objects.
pub(crate) type NodeIndex<'a> = BTreeMap<String, &'a Node>;

/// Index nodes by name (owned Nodes, borrowed ones, or the cache's `Arc<Node>`).
pub fn index_nodes<N: std::borrow::Borrow<Node>>(nodes: &[N]) -> NodeIndex<'_> {
    nodes.iter().map(|n| n.borrow()).map(|n| (n.metadata.name.clone().unwrap_or_default(), n)).collect()
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct CachedSlice {
    /// (port name, "" when unnamed; port number)
    ports: Vec<(String, u16)>,
    endpoints: Vec<CachedEndpoint>,
}

/// One Service's endpoints, digested per EndpointSlice and keyed by slice name.
#[derive(Clone, Debug)]
pub struct SliceCache {
    family: IpFamily,
    slices: BTreeMap<String, CachedSlice>,
}

impl SliceCache {
    /// An empty cache for a router whose VIP has `family`.
    pub fn new(family: IpFamily) -> Self {
        Self { family, slices: BTreeMap::new() }
    }

    /// Insert or replace one slice (the cached [`CompactSlice`], or a whole EndpointSlice). Slices
    /// of the other IP family and FQDN slices hold nothing routable and are stored empty (so a
    /// later `remove` is still a no-op-safe call).
    pub fn upsert<S: AsCompact + ?Sized>(&mut self, slice: &S) {
        let slice = slice.compact();
        let name = slice.metadata.name.clone().unwrap_or_default();
        let mut cached = CachedSlice { ports: Vec::new(), endpoints: Vec::new() };
        if slice.family == Some(self.family) {
            cached.ports = slice.ports.clone();
            cached.endpoints = slice
                .endpoints
                .iter()
                .filter(|e| {
                    e.address.is_some_and(|a| match self.family {
                        IpFamily::V4 => a.is_ipv4(),
                        IpFamily::V6 => a.is_ipv6(),
                    })
                })
                .cloned()
                .collect();
        }
        self.slices.insert(name, cached);
    }

    /// Forget one slice; true when it was known.
    pub fn remove(&mut self, slice_name: &str) -> bool {
        self.slices.remove(slice_name).is_some()
    }

    pub fn len(&self) -> usize {
        self.slices.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slices.is_empty()
    }

    /// The members of the pool serving `service_port` of `service`: ready endpoints, de-duplicated
    /// on (address, port) across slices, restricted to the node pool when one is configured, and
    /// weighted by zone. Returns the members sorted by (address, port), the weighting reason, and
    /// warnings (e.g. a slice without the Service port).
    pub fn members(
        &self,
        service: &Service,
        service_port: &ServicePort,
        nodes: &NodeIndex<'_>,
        opts: &TranslateOptions,
    ) -> (Vec<Member>, String, Vec<Warning>) {
        let slices = self.slices.iter().map(|(name, cs)| (name.as_str(), cs.ports.as_slice(), cs.endpoints.as_slice()));
        members_of(slices, self.family, service, service_port, nodes, opts)
    }
}

/// [`SliceCache::members`] straight from the cached slices of one Service, without digesting
/// them into a cache first (a copy of every endpoint per pool in a translation): the same
/// members, weighting and warnings. Slices are read in name order, the last of one name kept.
pub(crate) fn members_of_slices(
    slices: &[&CompactSlice],
    family: IpFamily,
    service: &Service,
    service_port: &ServicePort,
    nodes: &NodeIndex<'_>,
    opts: &TranslateOptions,
) -> (Vec<Member>, String, Vec<Warning>) {
    fn name(s: &CompactSlice) -> &str {
        s.metadata.name.as_deref().unwrap_or_default()
    }
    let ordered: std::borrow::Cow<'_, [&CompactSlice]> = if slices.len() < 2 {
        // Most Services have one slice.
        std::borrow::Cow::Borrowed(slices)
    } else {
        let mut ordered = slices.to_vec();
        ordered.sort_by(|a, b| name(a).cmp(name(b)));
        // As a cache's upsert: the later slice of one name replaces the earlier.
        ordered.reverse();
        ordered.dedup_by(|later, kept| name(later) == name(kept));
        ordered.reverse();
        std::borrow::Cow::Owned(ordered)
    };
    let none: &[CachedEndpoint] = &[];
    let digested = ordered.iter().map(|s| {
        // A slice of the other family (or FQDN) holds nothing routable: as stored empty.
        let (ports, endpoints) =
            if s.family == Some(family) { (s.ports.as_slice(), s.endpoints.as_slice()) } else { (&[][..], none) };
        (name(s), ports, endpoints)
    });
    members_of(digested, family, service, service_port, nodes, opts)
}

fn of_family(e: &CachedEndpoint, family: IpFamily) -> bool {
    e.address.is_some_and(|a| match family {
        IpFamily::V4 => a.is_ipv4(),
        IpFamily::V6 => a.is_ipv6(),
    })
}

/// The members from slices read in order: (name, ports, endpoints, of any family).
fn members_of<'a>(
    slices: impl Iterator<Item = (&'a str, &'a [(String, u16)], &'a [CachedEndpoint])>,
    family: IpFamily,
    service: &Service,
    service_port: &ServicePort,
    nodes: &NodeIndex<'_>,
    opts: &TranslateOptions,
) -> (Vec<Member>, String, Vec<Warning>) {
    let sp_name = service_port.name.as_deref().unwrap_or_default();
    let mut warnings = Vec::new();
    let mut drafts: Vec<(IpAddr, u16, &CachedEndpoint)> = Vec::new();
    for (slice_name, ports, endpoints) in slices {
        if !endpoints.iter().any(|e| of_family(e, family)) {
            continue;
        }
        let port = ports.iter().find(|(n, _)| n == sp_name).map(|(_, p)| *p).or(match &service_port.target_port {
            // Hand-made slices may carry no port names; a numeric targetPort still says where.
            Some(IntOrString::Int(n)) if ports.is_empty() => u16::try_from(*n).ok(),
            _ => None,
        });
        let Some(port) = port else {
            let ns = namespace_of(&service.metadata);
            let sref = KubeRef::new("Service", ns, service.metadata.name.as_deref().unwrap_or(""));
            warnings.push(Warning {
                object: sref.clone(),
                reason: "EndpointPortNotFound".into(),
                message: format!(
                    "{sref}: EndpointSlice {slice_name} has no port named {sp_name:?} for Service port {}; its endpoints are skipped",
                    service_port.port
                ),
            });
            continue;
        };
        drafts.reserve(endpoints.len());
        for e in endpoints.iter().filter(|e| of_family(e, family)) {
            // Ready, or serving while terminating (drained with weight 0); nothing else.
            let member = e.ready || (e.serving && e.terminating);
            if !member || !in_node_pool(e.node.as_deref(), nodes, opts) {
                continue;
            }
            let Some(address) = e.address else { continue };
            drafts.push((address, port, e));
        }
    }
    // Stable: of the same (address, port), the first read is kept, as it comes first.
    drafts.sort_by_key(|d| (d.0, d.1));
    drafts.dedup_by_key(|d| (d.0, d.1));
    let (members, reason) = weigh_drafts(drafts, service, nodes, opts);
    (members, reason, warnings)
}

/// Weights for the members: terminating ones drain (weight 0) while any endpoint takes new
/// requests; when all are terminating, the serving ones are used with normal weights, as
/// kube-proxy does, rather than an empty pool.
fn weigh_drafts(
    drafts: Vec<(IpAddr, u16, &CachedEndpoint)>,
    service: &Service,
    nodes: &NodeIndex<'_>,
    opts: &TranslateOptions,
) -> (Vec<Member>, String) {
    let all_terminating = !drafts.is_empty() && drafts.iter().all(|d| !d.2.ready);
    let active = |e: &CachedEndpoint| e.ready || all_terminating;
    let policy = service_zone_policy(service, opts);
    // A Service that is not zone-aware (the default) needs no candidates: building them cost
    // several allocations per endpoint, a third of a 10k-Ingress translation.
    let w = if policy == super::zone::ZonePolicy::Even {
        // Every active member gets (1, not backup): the weights' default below, so no vector
        // of them is made (one per pool).
        super::zone::not_zone_aware(0)
    } else {
        let cands: Vec<Candidate> = drafts
            .iter()
            .filter(|d| active(d.2))
            .map(|(a, p, e)| Candidate {
                label: format!("{a}:{p}"),
                zone: endpoint_zone(e, nodes).map(String::from),
                for_zones: e.for_zones.as_ref().map(|z| z.iter().map(|z| z.to_string()).collect()),
            })
            .collect();
        weigh(&cands, policy, &node_zones(nodes, opts), opts)
    };
    let draining = drafts.iter().filter(|d| !active(d.2)).count();
    let mut reason = w.reason;
    if all_terminating {
        reason.push_str("; every endpoint is terminating: the serving ones are used");
    } else if draining > 0 {
        reason.push_str(&format!("; {draining} terminating endpoint(s) drain with weight 0"));
    }
    let mut weights = w.weights.into_iter();
    // Built into a Vec of its exact size: `collect` from `drafts.into_iter()` reuses the drafts'
    // buffer (made for a larger element) and left ~2.4 slots per member, and the desired router
    // holding these members lives as long as the router (twice while a Sync compares it).
    let mut members = Vec::with_capacity(drafts.len());
    members.extend(drafts.into_iter().map(|(address, protocol_port, e)| {
        let (weight, backup) = if active(e) { weights.next().unwrap_or((1, false)) } else { (0, false) };
        Member {
            address,
            protocol_port,
            weight,
            backup,
            zone: endpoint_zone(e, nodes),
            target: e.target.clone(),
            monitor_port: None,
        }
    }));
    (members, reason)
}

fn endpoint_zone(e: &CachedEndpoint, nodes: &NodeIndex<'_>) -> Option<Box<str>> {
    e.zone.clone().or_else(|| node_zone(e.node.as_deref(), nodes).map(String::into_boxed_str))
}

/// Zones and allocatable CPU of the Ready nodes (of the node pool, when one is configured).
pub fn node_zones(nodes: &NodeIndex<'_>, opts: &TranslateOptions) -> NodeZones {
    let mut out = NodeZones::default();
    for (name, node) in nodes {
        let ready = node
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
        if !ready || !in_node_pool(Some(name), nodes, opts) {
            continue;
        }
        let cpu = node
            .status
            .as_ref()
            .and_then(|s| s.allocatable.as_ref())
            .and_then(|a| a.get("cpu"))
            .and_then(|q| parse_cpu(&q.0))
            .filter(|c| *c > 0.0);
        match (node_zone(Some(name), nodes), cpu) {
            (Some(z), Some(c)) => *out.cpu.entry(z).or_default() += c,
            (None, _) => {
                out.problem.get_or_insert_with(|| format!("node {name} has no {ZONE_LABEL} label"));
            }
            (Some(_), None) => {
                out.problem.get_or_insert_with(|| format!("node {name} reports no allocatable CPU"));
            }
        }
    }
    out
}

/// A CPU quantity in cores: "4", "3500m", "1.5" (other suffixes are not used for CPU).
pub fn parse_cpu(q: &str) -> Option<f64> {
    let q = q.trim();
    let v = match q.strip_suffix('m') {
        Some(m) => m.parse::<f64>().ok()? / 1000.0,
        None => q.parse::<f64>().ok()?,
    };
    v.is_finite().then_some(v)
}

pub(crate) fn in_node_pool(node: Option<&str>, nodes: &NodeIndex<'_>, opts: &TranslateOptions) -> bool {
    let Some(pool) = opts.node_pool.as_deref() else {
        return true;
    };
    node.and_then(|n| nodes.get(n))
        .and_then(|n| n.metadata.labels.as_ref())
        .and_then(|l| l.get(&opts.node_pool_label))
        .is_some_and(|v| v == pool)
}

pub(crate) fn node_zone(node: Option<&str>, nodes: &NodeIndex<'_>) -> Option<String> {
    let labels = nodes.get(node?)?.metadata.labels.as_ref()?;
    labels.get(ZONE_LABEL).or_else(|| labels.get(LEGACY_ZONE_LABEL)).filter(|z| !z.is_empty()).cloned()
}

/// Members of one pool from one Service's slices (the incremental path of the Service/Endpoints
/// handler). Same result as the full translation for that pool.
pub fn pool_members(
    service: &Service,
    service_port: &ServicePort,
    slices_by_name: &BTreeMap<String, impl AsCompact>,
    nodes: &NodeIndex<'_>,
    opts: &TranslateOptions,
) -> (Vec<Member>, String, Vec<Warning>) {
    let mut cache = SliceCache::new(opts.vip_family);
    for s in slices_by_name.values() {
        cache.upsert(s);
    }
    cache.members(service, service_port, nodes, opts)
}

/// Core Endpoints seen as EndpointSlices (one per subset and IP family), so both sources share
/// one code path. Endpoints carry no zone: the node's zone label is used.
pub(crate) fn endpoints_as_slices(e: &Endpoints) -> Vec<EndpointSlice> {
    let base = e.metadata.name.clone().unwrap_or_default();
    let mut out = Vec::new();
    for (i, s) in e.subsets.iter().flatten().enumerate() {
        for (fam, v6) in [("IPv4", false), ("IPv6", true)] {
            let mut eps = Vec::new();
            for (list, ready) in [(&s.addresses, true), (&s.not_ready_addresses, false)] {
                for a in list.iter().flatten() {
                    if a.ip.parse::<IpAddr>().map(|ip| ip.is_ipv6() == v6).unwrap_or(false) {
                        eps.push(Endpoint {
                            addresses: vec![a.ip.clone()],
                            conditions: Some(EndpointConditions { ready: Some(ready), ..Default::default() }),
                            node_name: a.node_name.clone(),
                            target_ref: a.target_ref.clone(),
                            ..Default::default()
                        });
                    }
                }
            }
            if eps.is_empty() {
                continue;
            }
            out.push(EndpointSlice {
                address_type: fam.into(),
                endpoints: eps,
                metadata: ObjectMeta {
                    name: Some(format!("{base}/{i}/{fam}")),
                    namespace: e.metadata.namespace.clone(),
                    ..Default::default()
                },
                ports: Some(
                    s.ports
                        .iter()
                        .flatten()
                        .map(|p| EndpointPort {
                            name: p.name.clone(),
                            port: Some(p.port),
                            protocol: p.protocol.clone(),
                            ..Default::default()
                        })
                        .collect(),
                ),
            });
        }
    }
    out
}
