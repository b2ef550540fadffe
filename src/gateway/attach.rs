//! Attaching an HTTPRoute to the Gateway listeners its parentRefs name.

use super::api::{GROUP, Gateway, HTTPRoute, ParentReference};
use super::hostnames::intersect;
use super::listeners::ListenerPlan;
use super::status::Cond;
use super::world::{World, name_of, ns_of};

/// The route on one listener, with the hosts it serves there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Attachment {
    /// Index of the listener in the Gateway's spec (and in its plans).
    pub listener: usize,
    /// The intersected hosts; `None` is any host.
    pub hosts: Vec<Option<String>>,
}

/// Whether a parentRef points at a Gateway (the default group and kind).
pub(crate) fn names_a_gateway(p: &ParentReference) -> bool {
    p.group.as_deref().is_none_or(|g| g == GROUP) && p.kind.as_deref().is_none_or(|k| k == "Gateway")
}

/// Whether a parentRef points at a ListenerSet (its listeners only, on its parent Gateway).
pub(crate) fn names_a_listener_set(p: &ParentReference) -> bool {
    p.group.as_deref().is_none_or(|g| g == GROUP) && p.kind.as_deref() == Some("ListenerSet")
}

/// The Gateway's (or ListenerSet's) namespace for a parentRef of `route`.
pub(crate) fn parent_namespace(route: &HTTPRoute, p: &ParentReference) -> String {
    p.namespace.clone().unwrap_or_else(|| ns_of(route))
}

/// The listeners of `gw` that `route` attaches to through `p`, or the Accepted=False condition
/// saying why it attaches to none, checked in the spec's order: a listener named by
/// sectionName/port must exist (NoMatchingParent), admit the route's namespace and kind
/// (NotAllowedByListeners) and share a hostname with it (NoMatchingListenerHostname).
/// `set`: the parentRef names that ListenerSet of `gw`, whose listeners alone it reaches; None:
/// the Gateway's own listeners.
pub(crate) fn attach(
    route: &HTTPRoute,
    p: &ParentReference,
    gw: &Gateway,
    set: Option<&(String, String)>,
    plans: &[ListenerPlan],
    world: &World,
) -> Result<Vec<Attachment>, Cond> {
    let gw_name = match set {
        Some((ns, name)) => format!("ListenerSet {ns}/{name} of Gateway {}/{}", ns_of(gw), name_of(gw)),
        None => format!("{}/{}", ns_of(gw), name_of(gw)),
    };
    let named: Vec<usize> = (0..plans.len())
        .filter(|i| plans[*i].set.as_ref() == set)
        .filter(|i| p.section_name.as_ref().is_none_or(|s| *s == plans[*i].name))
        .filter(|i| p.port.is_none_or(|port| i32::from(plans[*i].port) == port))
        .collect();
    if named.is_empty() {
        let what = match (&p.section_name, p.port) {
            (Some(s), Some(port)) => format!("listener {s} on port {port}"),
            (Some(s), None) => format!("listener {s}"),
            (None, Some(port)) => format!("listener on port {port}"),
            (None, None) => "listener".into(),
        };
        return Err(Cond::no("Accepted", "NoMatchingParent", format!("Gateway {gw_name} has no {what}")));
    }
    let route_ns = ns_of(route);
    let labels = world.namespace_labels(&route_ns);
    let allowed: Vec<usize> = named
        .into_iter()
        .filter(|i| plans[*i].attachable() && plans[*i].admits_namespace(&plans[*i].namespace, &route_ns, &labels))
        .collect();
    if allowed.is_empty() {
        let m = format!("no listener of Gateway {gw_name} admits HTTPRoutes from namespace {route_ns}");
        return Err(Cond::no("Accepted", "NotAllowedByListeners", m));
    }
    let attached: Vec<Attachment> = allowed
        .into_iter()
        .map(|i| Attachment { listener: i, hosts: intersect(plans[i].hostname.as_deref(), &route.spec.hostnames) })
        .filter(|a| !a.hosts.is_empty())
        .collect();
    if attached.is_empty() {
        let m = format!("no hostname of the route matches a listener hostname of Gateway {gw_name}");
        return Err(Cond::no("Accepted", "NoMatchingListenerHostname", m));
    }
    Ok(attached)
}
