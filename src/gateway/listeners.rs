//! The listeners of a Gateway: protocol, port, hostname, which routes may attach, conflicts
//! between listeners sharing a port, and the TLS certificates they name.

use super::Protocol;
use super::api::{GROUP, Gateway, Listener, RouteGroupKind, SecretObjectReference};
use super::frontend::{PortValidation, port_validation};
use super::refgrant::{CrossRef, permitted};
use super::status::Cond;
use super::world::{SecretInfo, World, ns_of};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use std::collections::BTreeMap;

/// Which namespaces' routes a listener admits.
#[derive(Clone, Debug, PartialEq)]
pub enum AllowedNamespaces {
    Same,
    All,
    Selector(LabelSelector),
}

/// One Gateway listener, checked.
#[derive(Clone, Debug, PartialEq)]
pub struct ListenerPlan {
    pub name: String,
    pub port: u16,
    /// `None` for a protocol Octavia's L7 rules cannot serve (TCP, UDP, TLS, custom).
    pub protocol: Option<Protocol>,
    pub hostname: Option<String>,
    pub namespaces: AllowedNamespaces,
    pub supported_kinds: Vec<RouteGroupKind>,
    /// HTTPS: the Secrets (namespace, name), all resolved.
    pub certificates: Vec<(String, String)>,
    pub accepted: Cond,
    pub(crate) resolved_refs: Cond,
    pub(crate) conflicted: Cond,
    /// The ListenerSet (namespace, name) that adds this listener to the Gateway; None: one of
    /// the Gateway's own. Routes reach it only through a parentRef to that ListenerSet.
    pub set: Option<(String, String)>,
    /// The namespace of the object declaring it (`allowedRoutes` `Same`, certificateRefs).
    pub namespace: String,
    /// HTTPS: the client certificate validation of its port, resolved (`super::frontend`);
    /// `None`: none asked (or not resolved: the listener is then not programmable).
    pub client_validation: Option<crate::model::ClientValidation>,
}

impl ListenerPlan {
    /// Routes may attach: accepted, not conflicted, and admitting HTTPRoutes.
    pub(crate) fn attachable(&self) -> bool {
        self.accepted.ok && !self.conflicted.ok && !self.supported_kinds.is_empty()
    }

    /// Served by the data plane: attachable and every reference resolved.
    pub(crate) fn programmable(&self) -> bool {
        self.attachable() && self.resolved_refs.ok
    }

    /// Whether a route in `namespace` (whose labels are given) may attach.
    pub(crate) fn admits_namespace(
        &self,
        gateway_ns: &str,
        namespace: &str,
        labels: &BTreeMap<String, String>,
    ) -> bool {
        match &self.namespaces {
            AllowedNamespaces::Same => gateway_ns == namespace,
            AllowedNamespaces::All => true,
            AllowedNamespaces::Selector(s) => selector_matches(s, labels),
        }
    }
}

fn http_route_kind() -> RouteGroupKind {
    RouteGroupKind { group: Some(GROUP.into()), kind: "HTTPRoute".into() }
}

/// The listeners of `gw` in spec order, each with its Accepted, ResolvedRefs and Conflicted
/// conditions.
pub fn plan(gw: &Gateway, world: &World) -> Vec<ListenerPlan> {
    let owner = Declared { kind: "Gateway", namespace: ns_of(gw), set: None, gateway: gw };
    let mut plans: Vec<ListenerPlan> = gw.spec.listeners.iter().map(|l| plan_one(&owner, l, world)).collect();
    mark_conflicts(&mut plans);
    plans
}

/// The object declaring a listener: a Gateway or a ListenerSet.
pub(crate) struct Declared<'a> {
    /// `Gateway` or `ListenerSet`: the `from` kind of a ReferenceGrant for its certificateRefs.
    pub kind: &'static str,
    pub namespace: String,
    /// A ListenerSet's (namespace, name).
    pub set: Option<(String, String)>,
    /// The Gateway whose listeners these are, or become: its `spec.tls.frontend` applies to
    /// every HTTPS port of it, a ListenerSet's listeners' too (`super::frontend`).
    pub gateway: &'a Gateway,
}

pub(crate) fn plan_one(owner: &Declared<'_>, l: &Listener, world: &World) -> ListenerPlan {
    let protocol = match l.protocol.as_str() {
        "HTTP" => Some(Protocol::Http),
        "HTTPS" => Some(Protocol::Https),
        _ => None,
    };
    let mut accepted = Cond::yes("Accepted", "Accepted", "the listener is valid");
    let port = u16::try_from(l.port).ok().filter(|p| *p > 0);
    // Client certificate validation: the Gateway's, for each HTTPS port (`super::frontend`).
    let frontend = match (protocol, port) {
        (Some(Protocol::Https), Some(p)) => port_validation(owner.gateway, p, world),
        _ => PortValidation::default(),
    };
    if protocol.is_none() {
        let msg = format!("listener {}: protocol {} is not served (only HTTP and HTTPS)", l.name, l.protocol);
        accepted = Cond::no("Accepted", "UnsupportedProtocol", msg);
    } else if port.is_none() {
        accepted =
            Cond::no("Accepted", "PortUnavailable", format!("listener {}: port {} is out of range", l.name, l.port));
    } else if protocol == Some(Protocol::Https)
        && l.tls.as_ref().and_then(|t| t.mode.as_deref()).is_some_and(|m| m != "Terminate")
    {
        accepted = Cond::no(
            "Accepted",
            "UnsupportedValue",
            format!("listener {}: spec.listeners.tls.mode: only Terminate is served on HTTPS", l.name),
        );
    } else if let Some(c) = frontend.refused.clone() {
        accepted = Cond { message: format!("listener {}: {}", l.name, c.message), ..c };
    }
    let (supported_kinds, kinds_problem) = supported_kinds(l, protocol.is_some());
    let (certificates, cert_problem) = match protocol {
        Some(Protocol::Https) => certificates(owner, l, world),
        _ => (Vec::new(), None),
    };
    let ca_problem = frontend.refs_problem.map(|(reason, m)| (reason, format!("listener {}: {m}", l.name)));
    let resolved_refs = match (kinds_problem, cert_problem.or(ca_problem)) {
        (Some(m), _) => Cond::no("ResolvedRefs", "InvalidRouteKinds", m),
        (None, Some((reason, m))) => Cond::no("ResolvedRefs", reason, m),
        (None, None) => Cond::yes("ResolvedRefs", "ResolvedRefs", "all references are resolved"),
    };
    let namespaces = match l.allowed_routes.as_ref().and_then(|a| a.namespaces.as_ref()) {
        Some(n) if n.from.as_deref() == Some("All") => AllowedNamespaces::All,
        Some(n) if n.from.as_deref() == Some("Selector") => {
            AllowedNamespaces::Selector(n.selector.clone().unwrap_or_default())
        }
        _ => AllowedNamespaces::Same,
    };
    ListenerPlan {
        name: l.name.clone(),
        port: port.unwrap_or(0),
        protocol,
        hostname: l.hostname.clone(),
        namespaces,
        supported_kinds,
        certificates,
        accepted,
        resolved_refs,
        conflicted: Cond::no("Conflicted", "NoConflicts", "no conflicts"),
        set: owner.set.clone(),
        namespace: owner.namespace.clone(),
        client_validation: frontend.validation,
    }
}

/// The route kinds a listener admits: HTTPRoute only, and only on HTTP/HTTPS.
fn supported_kinds(l: &Listener, protocol_ok: bool) -> (Vec<RouteGroupKind>, Option<String>) {
    let asked = l.allowed_routes.as_ref().map(|a| a.kinds.clone()).unwrap_or_default();
    if !protocol_ok && asked.is_empty() {
        return (Vec::new(), None);
    }
    if !protocol_ok {
        // HTTPRoute asked on a protocol that cannot carry it (TLS, TCP): no kind is valid there.
        let names: Vec<String> =
            asked.iter().map(|k| format!("{}/{}", k.group.as_deref().unwrap_or(GROUP), k.kind)).collect();
        let m = format!(
            "listener {}: spec.listeners.allowedRoutes.kinds: {} not supported on protocol {}",
            l.name,
            names.join(", "),
            l.protocol
        );
        return (Vec::new(), Some(m));
    }
    if asked.is_empty() {
        return (vec![http_route_kind()], None);
    }
    let (ok, bad): (Vec<_>, Vec<_>) =
        asked.into_iter().partition(|k| k.kind == "HTTPRoute" && k.group.as_deref().is_none_or(|g| g == GROUP));
    let supported = if ok.is_empty() { Vec::new() } else { vec![http_route_kind()] };
    let problem = (!bad.is_empty()).then(|| {
        let names: Vec<String> =
            bad.iter().map(|k| format!("{}/{}", k.group.as_deref().unwrap_or(""), k.kind)).collect();
        format!(
            "listener {}: spec.listeners.allowedRoutes.kinds: {} not supported (only HTTPRoute)",
            l.name,
            names.join(", ")
        )
    });
    (supported, problem)
}

type Problem = Option<(&'static str, String)>;

fn certificates(owner: &Declared, l: &Listener, world: &World) -> (Vec<(String, String)>, Problem) {
    let refs: &[SecretObjectReference] = l.tls.as_ref().map(|t| t.certificate_refs.as_slice()).unwrap_or(&[]);
    if refs.is_empty() {
        return (
            Vec::new(),
            Some(("InvalidCertificateRef", format!("listener {}: HTTPS needs tls.certificateRefs", l.name))),
        );
    }
    let gw_ns = owner.namespace.clone();
    let mut out = Vec::new();
    for r in refs {
        let ns = r.namespace.clone().unwrap_or_else(|| gw_ns.clone());
        let what = format!("listener {}: certificateRef {ns}/{}", l.name, r.name);
        if r.group.as_deref().is_some_and(|g| !g.is_empty()) || r.kind.as_deref().is_some_and(|k| k != "Secret") {
            return (Vec::new(), Some(("InvalidCertificateRef", format!("{what}: only core Secrets are supported"))));
        }
        let xref = CrossRef {
            from_group: GROUP,
            from_kind: owner.kind,
            from_namespace: &gw_ns,
            to_group: "",
            to_kind: "Secret",
            to_namespace: &ns,
            to_name: &r.name,
        };
        if !permitted(&xref, &world.grants) {
            return (Vec::new(), Some(("RefNotPermitted", format!("{what}: no ReferenceGrant in {ns} permits it"))));
        }
        if let Some(why) = crate::translate::tls::secret_not_read(&ns, &world.secret_namespaces) {
            return (Vec::new(), Some(("InvalidCertificateRef", format!("{what}: {why}"))));
        }
        match world.secrets.get(&(ns.clone(), r.name.clone())) {
            // Pending: its content arrives with the Secret watch's re-list; the router keeps
            // the certificate it stores meanwhile.
            Some(SecretInfo::Tls | SecretInfo::Pending) => out.push((ns, r.name.clone())),
            Some(SecretInfo::Malformed) => {
                return (
                    Vec::new(),
                    Some(("InvalidCertificateRef", format!("{what}: not a valid kubernetes.io/tls Secret"))),
                );
            }
            None => return (Vec::new(), Some(("InvalidCertificateRef", format!("{what}: Secret not found")))),
        }
    }
    (out, None)
}

/// Listeners sharing a port must share a protocol (else all of them conflict) and have distinct
/// hostnames (else the duplicates conflict).
pub(crate) fn mark_conflicts(plans: &mut [ListenerPlan]) {
    let mut by_port: BTreeMap<u16, Vec<usize>> = BTreeMap::new();
    for (i, p) in plans.iter().enumerate().filter(|(_, p)| p.accepted.ok) {
        by_port.entry(p.port).or_default().push(i);
    }
    for idx in by_port.values() {
        let first = plans[idx[0]].protocol;
        if idx.iter().any(|i| plans[*i].protocol != first) {
            for i in idx {
                let m = format!(
                    "listener {}: another listener on port {} has another protocol",
                    plans[*i].name, plans[*i].port
                );
                plans[*i].conflicted = Cond::yes("Conflicted", "ProtocolConflict", m);
            }
            continue;
        }
        for i in idx {
            let dup = idx.iter().any(|j| j != i && plans[*j].hostname == plans[*i].hostname);
            if dup {
                let h = plans[*i].hostname.clone().unwrap_or_else(|| "(any)".into());
                let m = format!(
                    "listener {}: another listener on port {} has hostname {h}",
                    plans[*i].name, plans[*i].port
                );
                plans[*i].conflicted = Cond::yes("Conflicted", "HostnameConflict", m);
            }
        }
    }
}

/// Kubernetes label-selector semantics: every matchLabels pair and every expression must hold.
pub(crate) fn selector_matches(s: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    let pairs = s.match_labels.iter().flatten().all(|(k, v)| labels.get(k) == Some(v));
    let exprs = s.match_expressions.iter().flatten().all(|e| {
        let values = e.values.clone().unwrap_or_default();
        let got = labels.get(&e.key);
        match e.operator.as_str() {
            "In" => got.is_some_and(|v| values.contains(v)),
            "NotIn" => got.is_none_or(|v| !values.contains(v)),
            "Exists" => got.is_some(),
            "DoesNotExist" => got.is_none(),
            _ => false,
        }
    });
    pairs && exprs
}

#[cfg(test)]
#[path = "listeners_tests.rs"]
mod tests;
