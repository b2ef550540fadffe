//! backendRefs: which Service each names, whether the route may use it, and the rule's action.
//!
//! An invalid backendRef (unknown kind, missing Service or port, another namespace without a
//! ReferenceGrant) keeps its share of the rule's traffic, answered 500 by the status responder,
//! as the spec requires; a rule with no usable backend at all answers 500 for all of it. The
//! route's ResolvedRefs condition names the first bad reference.

use super::api::{GROUP, HTTPBackendRef, HTTPRoute, HTTPRouteRule};
use super::naming::pool_name;
use super::refgrant::{CrossRef, permitted};
use super::world::{H2C, World, name_of, ns_of};
use super::{Action, BackendTarget, WeightedBackend};

/// A bad backendRef: the ResolvedRefs reason and a message naming the field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackendProblem {
    /// `InvalidKind`, `RefNotPermitted`, `BackendNotFound` or `UnsupportedProtocol`.
    pub reason: &'static str,
    pub message: String,
}

fn problem(reason: &'static str, message: String) -> BackendProblem {
    BackendProblem { reason, message }
}

/// The Service (namespace, name, port) `b` names, or why it cannot be used.
pub(crate) fn resolve(
    route: &HTTPRoute,
    field: &str,
    b: &HTTPBackendRef,
    world: &World,
) -> Result<(String, String, u16), BackendProblem> {
    let route_ns = ns_of(route);
    let ns = b.namespace.clone().unwrap_or_else(|| route_ns.clone());
    let group = b.group.as_deref().unwrap_or("");
    let kind = b.kind.as_deref().unwrap_or("Service");
    if !group.is_empty() || kind != "Service" {
        return Err(problem("InvalidKind", format!("{field}: {group}/{kind} is not a Service")));
    }
    let xref = CrossRef {
        from_group: GROUP,
        from_kind: "HTTPRoute",
        from_namespace: &route_ns,
        to_group: "",
        to_kind: "Service",
        to_namespace: &ns,
        to_name: &b.name,
    };
    if !permitted(&xref, &world.grants) {
        return Err(problem(
            "RefNotPermitted",
            format!("{field}: Service {ns}/{} needs a ReferenceGrant in {ns}", b.name),
        ));
    }
    let Some(svc) = world.services.get(&(ns.clone(), b.name.clone())) else {
        return Err(problem("BackendNotFound", format!("{field}: Service {ns}/{} not found", b.name)));
    };
    if svc.external_name {
        return Err(problem(
            "BackendNotFound",
            format!("{field}: Service {ns}/{} is ExternalName (no endpoints)", b.name),
        ));
    }
    if let Some(policy) = world.backend_tls.get(&(ns.clone(), b.name.clone())) {
        // Plain HTTP would send in clear what the policy's owner asked to encrypt.
        return Err(problem(
            "UnsupportedProtocol",
            format!(
                "{field}: BackendTLSPolicy {ns}/{policy} asks for TLS to Service {ns}/{}: an Octavia pool cannot send the policy's hostname as SNI nor verify the backend's certificate against it; not served in plain HTTP",
                b.name
            ),
        ));
    }
    let port = b.port.ok_or_else(|| problem("BackendNotFound", format!("{field}.port: required for a Service")))?;
    if !svc.ports.contains(&port) {
        return Err(problem("BackendNotFound", format!("{field}.port: Service {ns}/{} has no port {port}", b.name)));
    }
    if svc.h2c_ports.contains(&port) {
        // The spec's reason for an appProtocol the implementation does not support.
        return Err(problem(
            "UnsupportedProtocol",
            format!(
                "{field}: Service {ns}/{} port {port} has appProtocol {H2C}: an Octavia HTTP pool speaks HTTP/1.1 to its members (HTTP/2 only over TLS, by ALPN)",
                b.name
            ),
        ));
    }
    let port =
        u16::try_from(port).map_err(|_| problem("BackendNotFound", format!("{field}.port: {port} is out of range")))?;
    Ok((ns, b.name.clone(), port))
}

/// The forwarding action of rule `i` (a rule without a redirect) and its bad references.
pub fn forward(route: &HTTPRoute, i: usize, rule: &HTTPRouteRule, world: &World) -> (Action, Vec<BackendProblem>) {
    let mut problems = Vec::new();
    let mut backends = Vec::new();
    for (j, b) in rule.backend_refs.iter().enumerate() {
        let weight = u32::try_from(b.weight.unwrap_or(1)).unwrap_or(0);
        let field = format!("spec.rules[{i}].backendRefs[{j}]{}", super::matches::rule_label(rule));
        let target = match resolve(route, &field, b, world) {
            Ok((namespace, name, port)) => BackendTarget::Service { namespace, name, port },
            Err(p) => {
                problems.push(p);
                BackendTarget::Status500
            }
        };
        backends.push(WeightedBackend { target, weight });
    }
    let serves = backends.iter().any(|b| b.weight > 0 && b.target != BackendTarget::Status500);
    let action = if serves {
        Action::Forward { pool: pool_name(&ns_of(route), &name_of(route), i), backends }
    } else {
        // No backendRefs, all invalid, or all weighted 0: the spec's 500 for every request.
        Action::Fixed(500)
    };
    (action, problems)
}

#[cfg(test)]
#[path = "backends_tests.rs"]
mod tests;
