//! Status, pure: the conditions each object must carry ([`Cond`], computed by the translation)
//! rendered into the API's status types with `observedGeneration`, keeping each condition's
//! `lastTransitionTime` while its status does not change, and [`unchanged`] telling whether a
//! write is needed at all.

use super::CONTROLLER_NAME;
use super::api::{
    GatewayClassStatus, GatewayStatus, GatewayStatusAddress, HTTPRouteStatus, ListenerSetStatus, ListenerStatus,
    ParentReference, RouteGroupKind, RouteParentStatus, SupportedFeature,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use serde::Serialize;

/// One condition as computed: `ok` is status True.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cond {
    pub kind: &'static str,
    pub ok: bool,
    pub reason: String,
    pub message: String,
}

impl Cond {
    pub fn yes(kind: &'static str, reason: &str, message: impl Into<String>) -> Self {
        Self { kind, ok: true, reason: reason.into(), message: message.into() }
    }

    pub fn no(kind: &'static str, reason: &str, message: impl Into<String>) -> Self {
        Self { kind, ok: false, reason: reason.into(), message: message.into() }
    }
}

/// The features this implementation declares in `GatewayClass.status.supportedFeatures`: the
/// core of Gateway, HTTPRoute and ReferenceGrant, plus the extended ones Octavia serves exactly.
/// GatewayPort8080: each HTTP port of a Gateway is an HTTP listener of its load balancer
/// (docs/gateway-api.md, "ports"), passed through the data plane. The redirects (scheme, port,
/// 303/307/308): their upstream tests redirect without a hostname, served per known name of the
/// Gateway (`build::redirects`; the tests' Host is the Gateway's address), through the data plane.
pub const SUPPORTED_FEATURES: &[&str] = &[
    "Gateway",
    "GatewayAddressEmpty", // an IPAddress entry without a value: a floating IP is allocated
    // per HTTPS port: the listener's client CA (Barbican) with MANDATORY; not its InsecureFallback,
    // which Octavia's OPTIONAL cannot serve (docs/gateway-api.md, "Octavia's limit")
    "GatewayFrontendClientCertificateValidation",
    "GatewayHTTPListenerIsolation",
    "GatewayPort8080",
    "GatewayStaticAddresses",
    "HTTPRoute",
    "HTTPRoute303RedirectStatusCode",
    "HTTPRoute307RedirectStatusCode",
    "HTTPRoute308RedirectStatusCode",
    "HTTPRouteBackendProtocolWebSocket", // haproxy (mode http) forwards the Upgrade, then tunnels
    "HTTPRouteDestinationPortMatching",  // parentRef.port: only that port's listeners
    "HTTPRouteNamedRouteRule",           // served as any rule; named in the route's messages
    "HTTPRouteParentRefPort",            // parentRef.port: each port is an Octavia HTTP listener
    "HTTPRoutePortRedirect",
    "HTTPRouteSchemeRedirect",
    "ListenerSet", // its listeners join its Gateway's load balancer (`super::listener_sets`)
    "ReferenceGrant",
];

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassOutcome {
    pub name: String,
    pub generation: Option<i64>,
    pub accepted: Cond,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListenerOutcome {
    pub name: String,
    pub supported_kinds: Vec<RouteGroupKind>,
    pub attached_routes: i32,
    /// Accepted, ResolvedRefs, Conflicted, Programmed.
    pub conditions: Vec<Cond>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GatewayOutcome {
    pub namespace: String,
    pub name: String,
    pub generation: Option<i64>,
    /// Accepted, Programmed, and InsecureFrontendValidationMode when a client certificate
    /// validation allows the insecure fallback (`super::frontend`).
    pub conditions: Vec<Cond>,
    pub addresses: Vec<GatewayStatusAddress>,
    pub listeners: Vec<ListenerOutcome>,
    /// The ListenerSets it admits whose listeners are valid (`status.attachedListenerSets`).
    pub attached_listener_sets: i32,
}

/// The computed status of one ListenerSet naming a Gateway of ours.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListenerSetOutcome {
    pub namespace: String,
    pub name: String,
    pub generation: Option<i64>,
    /// Accepted, Programmed.
    pub conditions: Vec<Cond>,
    pub listeners: Vec<ListenerOutcome>,
}

impl ListenerSetOutcome {
    pub fn condition(&self, kind: &str) -> Option<&Cond> {
        self.conditions.iter().find(|c| c.kind == kind)
    }

    pub fn listener(&self, name: &str) -> Option<&ListenerOutcome> {
        self.listeners.iter().find(|l| l.name == name)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParentOutcome {
    pub(crate) parent_ref: ParentReference,
    /// Accepted, ResolvedRefs.
    pub conditions: Vec<Cond>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RouteOutcome {
    pub namespace: String,
    pub name: String,
    pub generation: Option<i64>,
    pub parents: Vec<ParentOutcome>,
}

impl RouteOutcome {
    /// The condition `kind` for the parent `name` (tests and `show`).
    pub fn condition(&self, parent: &str, kind: &str) -> Option<&Cond> {
        let p = self.parents.iter().find(|p| p.parent_ref.name == parent)?;
        p.conditions.iter().find(|c| c.kind == kind)
    }

    /// The condition `kind` for the parent `name` of kind `parent_kind` (`Gateway`, `ListenerSet`).
    pub fn condition_of(&self, parent_kind: &str, parent: &str, kind: &str) -> Option<&Cond> {
        let p = self.parents.iter().find(|p| {
            p.parent_ref.name == parent && p.parent_ref.kind.as_deref().unwrap_or("Gateway") == parent_kind
        })?;
        p.conditions.iter().find(|c| c.kind == kind)
    }
}

impl GatewayOutcome {
    pub fn condition(&self, kind: &str) -> Option<&Cond> {
        self.conditions.iter().find(|c| c.kind == kind)
    }

    pub fn listener(&self, name: &str) -> Option<&ListenerOutcome> {
        self.listeners.iter().find(|l| l.name == name)
    }
}

impl ListenerOutcome {
    pub fn condition(&self, kind: &str) -> Option<&Cond> {
        self.conditions.iter().find(|c| c.kind == kind)
    }
}

/// The API conditions for `conds`: a condition whose status did not change keeps its old
/// `lastTransitionTime` (the spec's meaning of the field); others take `now`.
pub(crate) fn render_conditions(
    conds: &[Cond],
    generation: Option<i64>,
    old: &[Condition],
    now: &Time,
) -> Vec<Condition> {
    conds
        .iter()
        .map(|c| {
            let status = if c.ok { "True" } else { "False" };
            let since = old
                .iter()
                .find(|o| o.type_ == c.kind && o.status == status)
                .map(|o| o.last_transition_time.clone())
                .unwrap_or_else(|| now.clone());
            Condition {
                type_: c.kind.into(),
                status: status.into(),
                reason: c.reason.clone(),
                message: c.message.clone(),
                observed_generation: generation,
                last_transition_time: since,
            }
        })
        .collect()
}

pub(crate) fn render_class(o: &ClassOutcome, old: Option<&GatewayClassStatus>, now: &Time) -> GatewayClassStatus {
    let old_c = old.map(|s| s.conditions.as_slice()).unwrap_or(&[]);
    let supported_features = if o.accepted.ok {
        SUPPORTED_FEATURES.iter().map(|f| SupportedFeature { name: (*f).into() }).collect()
    } else {
        Vec::new()
    };
    GatewayClassStatus {
        conditions: render_conditions(std::slice::from_ref(&o.accepted), o.generation, old_c, now),
        supported_features,
    }
}

pub(crate) fn render_gateway(o: &GatewayOutcome, old: Option<&GatewayStatus>, now: &Time) -> GatewayStatus {
    let old_c = old.map(|s| s.conditions.as_slice()).unwrap_or(&[]);
    GatewayStatus {
        addresses: o.addresses.clone(),
        conditions: render_conditions(&o.conditions, o.generation, old_c, now),
        listeners: render_listeners(&o.listeners, old.map(|s| s.listeners.as_slice()), o.generation, now),
        attached_listener_sets: Some(o.attached_listener_sets),
    }
}

/// The listener statuses of a Gateway or a ListenerSet.
fn render_listeners(
    listeners: &[ListenerOutcome],
    old: Option<&[ListenerStatus]>,
    generation: Option<i64>,
    now: &Time,
) -> Vec<ListenerStatus> {
    listeners
        .iter()
        .map(|l| {
            let old_l =
                old.and_then(|s| s.iter().find(|x| x.name == l.name)).map(|x| x.conditions.as_slice()).unwrap_or(&[]);
            ListenerStatus {
                name: l.name.clone(),
                supported_kinds: l.supported_kinds.clone(),
                attached_routes: l.attached_routes,
                conditions: render_conditions(&l.conditions, generation, old_l, now),
            }
        })
        .collect()
}

/// A ListenerSet's status.
pub(crate) fn render_listener_set(
    o: &ListenerSetOutcome,
    old: Option<&ListenerSetStatus>,
    now: &Time,
) -> ListenerSetStatus {
    let old_c = old.map(|s| s.conditions.as_slice()).unwrap_or(&[]);
    ListenerSetStatus {
        conditions: render_conditions(&o.conditions, o.generation, old_c, now),
        listeners: render_listeners(&o.listeners, old.map(|s| s.listeners.as_slice()), o.generation, now),
    }
}

/// The route's status: our parents' entries replace our old ones; other controllers' entries
/// are kept as they are (a route may attach to Gateways of several implementations).
pub(crate) fn render_route(o: &RouteOutcome, old: Option<&HTTPRouteStatus>, now: &Time) -> HTTPRouteStatus {
    let old_parents = old.map(|s| s.parents.as_slice()).unwrap_or(&[]);
    let mut parents: Vec<RouteParentStatus> =
        old_parents.iter().filter(|p| p.controller_name != CONTROLLER_NAME).cloned().collect();
    for p in &o.parents {
        let old_c = old_parents
            .iter()
            .find(|x| x.controller_name == CONTROLLER_NAME && x.parent_ref == p.parent_ref)
            .map(|x| x.conditions.as_slice())
            .unwrap_or(&[]);
        parents.push(RouteParentStatus {
            parent_ref: p.parent_ref.clone(),
            controller_name: CONTROLLER_NAME.into(),
            conditions: render_conditions(&p.conditions, o.generation, old_c, now),
        });
    }
    HTTPRouteStatus { parents }
}

/// Whether writing `new` over `old` would change anything but transition times: the status is
/// written only when this is false, so an unchanged world makes no API calls.
pub fn unchanged<T: Serialize>(old: Option<&T>, new: &T) -> bool {
    let Some(old) = old else { return false };
    let strip = |v: &T| {
        let mut j = serde_json::to_value(v).unwrap_or_default();
        strip_times(&mut j);
        j
    };
    strip(old) == strip(new)
}

fn strip_times(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(m) => {
            m.remove("lastTransitionTime");
            m.values_mut().for_each(strip_times);
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(strip_times),
        _ => {}
    }
}

#[cfg(test)]
#[path = "status_tests.rs"]
mod tests;
