//! Node-port members (`[octavia_defaults] member_mode = NodePort`): the pool's members are the
//! nodes of the instance's node pool on the Service's node port, not the pods.
//!
//! Why: an amphora reaches a pod IP only when the pods sit on Neutron ports (Kuryr's CNI) or on
//! a pod network Neutron routes. On Calico, Cilium or Flannel overlays (Magnum, Cluster API
//! Provider OpenStack, Gardener, kubespray) it reaches the nodes only, so the members are the
//! nodes and kube-proxy forwards to the pods. Pod churn is then no Octavia write at all: the
//! members change only when a node joins, leaves, turns Ready or unschedulable, or the node port
//! changes (docs/configuration.md, "Member modes").
//!
//! Which nodes: Ready, schedulable, in the node pool, not labelled
//! `node.kubernetes.io/exclude-from-external-load-balancers`, not draining ([`left_out`]); each
//! on its InternalIP of the VIP's family. Weights follow the nodes' zones against the router's
//! zone with the Topology Aware Routing safeguards of [`super::zone`], one candidate per node.
//!
//! `externalTrafficPolicy: Local`: every node stays a member and the pool's health monitor
//! probes kube-proxy's `/healthz` on the Service's `healthCheckNodePort` (the members'
//! `monitor_port`), which answers 200 only on nodes with a ready local endpoint.

use std::collections::BTreeMap;
use std::net::IpAddr;

use k8s_openapi::api::core::v1::{Node, Service, ServicePort};

use super::health::service_health_monitor;
use super::members::{NodeIndex, SliceCache, in_node_pool, node_zone, node_zones};
use super::names::namespace_of;
use super::options::{IpFamily, TranslateOptions};
use super::zone::{Candidate, NodeZones, ZonePolicy, service_zone_policy, weigh};
use crate::model::{HealthMonitorSpec, KubeRef, Member, MemberMode, PoolHealthMonitor, Warning};

/// A Service's own choice of member mode, honoured only where the operator allows it
/// (`[octavia_defaults] member_mode_annotation`).
pub const MEMBER_MODE_ANNOTATION: &str = "kuryr-l7-router.openstack.org/member-mode";
/// Kubernetes' well-known label: the node takes no load-balancer traffic.
pub const EXCLUDE_LABEL: &str = "node.kubernetes.io/exclude-from-external-load-balancers";
/// Taints that say a node is being drained or removed: the cluster autoscaler's before it
/// deletes a node, the cordon taint (also set by `kubectl drain`), Karpenter's disruption.
pub const DRAINING_TAINTS: [&str; 3] =
    ["ToBeDeletedByClusterAutoscaler", "node.kubernetes.io/unschedulable", "karpenter.sh/disrupted"];
/// kube-proxy's health check of an `externalTrafficPolicy: Local` Service.
pub const HEALTH_CHECK_PATH: &str = "/healthz";

/// The member mode of `svc`'s pools: the instance's, or its annotation's where allowed. A
/// value not allowed is a Warning naming the Service and the instance's mode is kept.
pub fn service_member_mode(svc: &Service, opts: &TranslateOptions, warnings: &mut Vec<Warning>) -> MemberMode {
    let instance = opts.member_mode;
    let Some(raw) = svc.metadata.annotations.as_ref().and_then(|a| a.get(MEMBER_MODE_ANNOTATION)) else {
        return instance;
    };
    let asked = [MemberMode::L3, MemberMode::L2, MemberMode::NodePort]
        .into_iter()
        .find(|m| m.as_str().eq_ignore_ascii_case(raw.trim()));
    let why = match asked {
        _ if !opts.member_mode_annotation => {
            "the operator does not allow it ([octavia_defaults] member_mode_annotation = false)".to_string()
        }
        None => format!("{raw:?} is not one of L3, NodePort"),
        Some(m) if m == instance => return instance,
        // L3 and NodePort members both need no subnet on the member; L2 puts every member on
        // the pod subnet, where a node address is not.
        Some(m)
            if matches!(
                (m, instance),
                (MemberMode::L3, MemberMode::NodePort) | (MemberMode::NodePort, MemberMode::L3)
            ) =>
        {
            return m;
        }
        Some(m) => {
            format!("this instance runs member_mode = {instance}: only L3 and NodePort can replace each other, not {m}")
        }
    };
    warnings.push(Warning {
        object: service_ref(svc),
        reason: "InvalidMemberMode".into(),
        message: format!(
            "{}: annotation {MEMBER_MODE_ANNOTATION} ignored: {why}; its pools use member_mode {instance}",
            service_ref(svc)
        ),
    });
    instance
}

fn service_ref(svc: &Service) -> KubeRef {
    KubeRef::service(namespace_of(&svc.metadata), svc.metadata.name.as_deref().unwrap_or(""))
}

fn is_ready(node: &Node) -> bool {
    let conditions = node.status.as_ref().and_then(|s| s.conditions.as_ref());
    conditions.is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// Why a node takes no node-port traffic, or None when it is a member. Draining is told by the
/// taints of [`DRAINING_TAINTS`] and by a deletion in progress; cordoned by `spec.unschedulable`.
pub fn left_out(name: &str, node: &Node, nodes: &NodeIndex<'_>, opts: &TranslateOptions) -> Option<String> {
    if !in_node_pool(Some(name), nodes, opts) {
        return Some("not in the node pool".into());
    }
    if node.metadata.labels.as_ref().is_some_and(|l| l.contains_key(EXCLUDE_LABEL)) {
        return Some(format!("labelled {EXCLUDE_LABEL}"));
    }
    let spec = node.spec.as_ref();
    if spec.and_then(|s| s.unschedulable).unwrap_or(false) {
        return Some("cordoned".into());
    }
    if node.metadata.deletion_timestamp.is_some() {
        return Some("being deleted".into());
    }
    if let Some(t) =
        spec.and_then(|s| s.taints.as_ref()).into_iter().flatten().find(|t| DRAINING_TAINTS.contains(&t.key.as_str()))
    {
        return Some(format!("draining (taint {})", t.key));
    }
    if !is_ready(node) {
        return Some("not Ready".into());
    }
    None
}

/// The node's first InternalIP of `family`.
pub fn internal_ip(node: &Node, family: IpFamily) -> Option<IpAddr> {
    let addresses = node.status.as_ref().and_then(|s| s.addresses.as_ref())?;
    addresses.iter().filter(|a| a.type_ == "InternalIP").filter_map(|a| a.address.parse::<IpAddr>().ok()).find(|ip| {
        match family {
            IpFamily::V4 => ip.is_ipv4(),
            IpFamily::V6 => ip.is_ipv6(),
        }
    })
}

/// What a node change can alter of node-port members (and of zone weights): compared before and
/// after a Node update, so that the heartbeats of a Node (its status every few seconds) trigger
/// nothing, and a node joining, leaving, turning Ready or unschedulable, draining or changing
/// its address or labels does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeShape {
    labels: Option<BTreeMap<String, String>>,
    ready: bool,
    unschedulable: bool,
    deleting: bool,
    draining: Vec<String>,
    internal_ips: Vec<String>,
}

impl NodeShape {
    pub fn of(node: &Node) -> Self {
        let spec = node.spec.as_ref();
        let mut draining: Vec<String> = spec
            .and_then(|s| s.taints.as_ref())
            .into_iter()
            .flatten()
            .filter(|t| DRAINING_TAINTS.contains(&t.key.as_str()))
            .map(|t| t.key.clone())
            .collect();
        draining.sort();
        let addresses = node.status.as_ref().and_then(|s| s.addresses.as_ref()).into_iter().flatten();
        let mut internal_ips: Vec<String> =
            addresses.filter(|a| a.type_ == "InternalIP").map(|a| a.address.clone()).collect();
        internal_ips.sort();
        Self {
            labels: node.metadata.labels.clone(),
            ready: is_ready(node),
            unschedulable: spec.and_then(|s| s.unschedulable).unwrap_or(false),
            deleting: node.metadata.deletion_timestamp.is_some(),
            draining,
            internal_ips,
        }
    }
}

/// The node port of `sp`, when the Service has one (type NodePort or LoadBalancer).
fn node_port(svc: &Service, sp: &ServicePort) -> Option<u16> {
    let kind = svc.spec.as_ref().and_then(|s| s.type_.as_deref()).unwrap_or("ClusterIP");
    let port = sp.node_port.and_then(|p| u16::try_from(p).ok()).filter(|p| *p > 0);
    port.filter(|_| matches!(kind, "NodePort" | "LoadBalancer"))
}

fn is_local(svc: &Service) -> bool {
    svc.spec.as_ref().and_then(|s| s.external_traffic_policy.as_deref()) == Some("Local")
}

/// `healthCheckNodePort` of a Local Service (allocated for type LoadBalancer only).
fn health_check_node_port(svc: &Service) -> Option<u16> {
    let port = svc.spec.as_ref().and_then(|s| s.health_check_node_port)?;
    u16::try_from(port).ok().filter(|p| *p > 0)
}

/// The node-port members of the pool `pool` serving `sp` of `svc`, with the weighting reason;
/// a Warning naming the Service and the fix when it has no node port, or when no node can take
/// traffic (the route then answers 503, as for a Service without endpoints).
pub fn node_port_members(
    svc: &Service,
    sp: &ServicePort,
    nodes: &NodeIndex<'_>,
    opts: &TranslateOptions,
    pool: &str,
    warnings: &mut Vec<Warning>,
) -> (Vec<Member>, String) {
    let sref = service_ref(svc);
    let Some(port) = node_port(svc, sp) else {
        let kind = svc.spec.as_ref().and_then(|s| s.type_.as_deref()).unwrap_or("ClusterIP");
        warnings.push(Warning {
            object: sref.clone(),
            reason: "NoNodePort".into(),
            message: format!(
                "{sref}: port {}: type {kind} has no node port, and member_mode is NodePort; pool {pool} has no members and requests routed to it get HTTP 503. Fix: set spec.type: NodePort (or LoadBalancer with node ports)",
                sp.port
            ),
        });
        return (Vec::new(), "no members: the Service has no node port".into());
    };
    let monitor_port = if is_local(svc) { health_check_node_port(svc) } else { None };
    let mut members = Vec::new();
    let mut skipped: Vec<String> = Vec::new();
    for (name, node) in nodes {
        let address = match left_out(name, node, nodes, opts) {
            Some(why) if why == "not in the node pool" => continue,
            Some(why) => {
                skipped.push(format!("{name} {why}"));
                continue;
            }
            None => match internal_ip(node, opts.vip_family) {
                Some(a) => a,
                None => {
                    skipped.push(format!("{name} has no InternalIP of the VIP's family"));
                    continue;
                }
            },
        };
        members.push(Member {
            address,
            protocol_port: port,
            weight: 1,
            backup: false,
            zone: node_zone(Some(name), nodes).map(String::into_boxed_str),
            target: Some(name.as_str().into()),
            monitor_port,
        });
    }
    members.sort_by_key(|m| (m.address, m.protocol_port));
    members.dedup_by_key(|m| (m.address, m.protocol_port));
    if members.is_empty() {
        let node_pool = opts.node_pool.as_deref().map(|p| format!(" of node pool {p}")).unwrap_or_default();
        warnings.push(Warning {
            object: sref.clone(),
            reason: "NoReadyNodes".into(),
            message: format!(
                "{sref}: port {}: no Ready, schedulable node{node_pool} with an InternalIP of the VIP's family; pool {pool} has no members and requests routed to it get HTTP 503",
                sp.port
            ),
        });
    }
    let reason = weigh_nodes(&mut members, svc, nodes, opts);
    (members, with_left_out(reason, &skipped))
}

/// Zone weights, one candidate per node (the Topology Aware Routing safeguards of
/// [`super::zone`] apply per node).
fn weigh_nodes(members: &mut [Member], svc: &Service, nodes: &NodeIndex<'_>, opts: &TranslateOptions) -> String {
    let cands: Vec<Candidate> = members
        .iter()
        .map(|m| Candidate {
            label: m.target.as_deref().unwrap_or_default().to_string(),
            zone: m.zone.as_deref().map(String::from),
            for_zones: None,
        })
        .collect();
    let policy = service_zone_policy(svc, opts);
    let zones = if policy == ZonePolicy::Even { NodeZones::default() } else { node_zones(nodes, opts) };
    let w = weigh(&cands, policy, &zones, opts);
    for (m, (weight, backup)) in members.iter_mut().zip(w.weights) {
        m.weight = weight;
        m.backup = backup;
    }
    w.reason
}

fn with_left_out(reason: String, skipped: &[String]) -> String {
    const SHOWN: usize = 5;
    if skipped.is_empty() {
        return reason;
    }
    let more = skipped.len().saturating_sub(SHOWN);
    let more = if more > 0 { format!(" and {more} more") } else { String::new() };
    format!("{reason}; nodes left out: {}{more}", skipped.iter().take(SHOWN).cloned().collect::<Vec<_>>().join(", "))
}

/// The members of one feed of pool `pool` (`sp` of `svc`) in the Service's member mode, with
/// the weighting reason and the mode: node ports, or the ready endpoints of `endpoints`. The
/// one computation of the full translation and the Members path, warnings included, word for
/// word (each would otherwise take the other's warning for a new one).
pub fn feed_members(
    svc: &Service,
    sp: &ServicePort,
    endpoints: &SliceCache,
    nodes: &NodeIndex<'_>,
    opts: &TranslateOptions,
    pool: &str,
    warnings: &mut Vec<Warning>,
) -> (Vec<Member>, String, MemberMode) {
    let of_endpoints = || endpoints.members(svc, sp, nodes, opts);
    feed_members_with(svc, sp, of_endpoints, nodes, opts, pool, warnings)
}

/// [`feed_members`] with the endpoints' members made by `of_endpoints` (asked only in a pod
/// member mode): the translation reads the cached slices in place.
pub(crate) fn feed_members_with(
    svc: &Service,
    sp: &ServicePort,
    of_endpoints: impl FnOnce() -> (Vec<Member>, String, Vec<Warning>),
    nodes: &NodeIndex<'_>,
    opts: &TranslateOptions,
    pool: &str,
    warnings: &mut Vec<Warning>,
) -> (Vec<Member>, String, MemberMode) {
    let mode = service_member_mode(svc, opts, warnings);
    if mode == MemberMode::NodePort {
        let (members, reason) = node_port_members(svc, sp, nodes, opts, pool, warnings);
        return (members, reason, mode);
    }
    let (members, reason, w) = of_endpoints();
    warnings.extend(w);
    if members.is_empty() {
        warnings.push(no_endpoints(&service_ref(svc), sp, pool, opts));
    }
    (members, reason, mode)
}

fn no_endpoints(service: &KubeRef, sp: &ServicePort, pool: &str, opts: &TranslateOptions) -> Warning {
    let family = match opts.vip_family {
        IpFamily::V4 => "IPv4",
        IpFamily::V6 => "IPv6",
    };
    let node_pool = opts.node_pool.as_deref().map(|p| format!(" on node pool {p}")).unwrap_or_default();
    Warning {
        object: service.clone(),
        reason: "NoEndpoints".into(),
        message: format!(
            "{service}: port {}: no ready {family} endpoint{node_pool}; pool {pool} has no members and requests routed to it get HTTP 503",
            sp.port
        ),
    }
}

/// The pool health monitor of `svc` in `mode`. NodePort with `externalTrafficPolicy: Local`:
/// HTTP GET [`HEALTH_CHECK_PATH`] expecting 200, on the members' `monitor_port` (the
/// `healthCheckNodePort`), its timing from the Service's health-monitor annotation or the
/// defaults; without a `healthCheckNodePort` (type NodePort), kube-proxy drops connections on
/// nodes without a local endpoint, so the annotation's monitor or a TCP check on the node port
/// tells them. Otherwise the annotation's monitor, or none.
pub fn pool_health_monitor(
    svc: &Service,
    mode: MemberMode,
    opts: &TranslateOptions,
    warnings: &mut Vec<Warning>,
) -> Option<PoolHealthMonitor> {
    let annotated = service_health_monitor(svc, &opts.health_monitor_defaults, warnings);
    if mode != MemberMode::NodePort || !is_local(svc) {
        return annotated;
    }
    let base = match &annotated {
        Some(PoolHealthMonitor::Custom(spec)) => spec.clone(),
        _ => opts.health_monitor_defaults.clone(),
    };
    if health_check_node_port(svc).is_some() {
        return Some(PoolHealthMonitor::Custom(HealthMonitorSpec {
            monitor_type: "HTTP".into(),
            url_path: Some(HEALTH_CHECK_PATH.into()),
            expected_codes: Some("200".into()),
            ..base
        }));
    }
    match annotated {
        Some(PoolHealthMonitor::Custom(spec)) => Some(PoolHealthMonitor::Custom(spec)),
        _ => Some(PoolHealthMonitor::Custom(HealthMonitorSpec {
            monitor_type: "TCP".into(),
            url_path: None,
            expected_codes: None,
            ..base
        })),
    }
}

#[cfg(test)]
#[path = "node_members_tests.rs"]
mod tests;
