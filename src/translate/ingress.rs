//! The Ingress front end: our Ingresses (oldest first) → route claims and warnings. Validation
//! of hosts and paths, host ownership, backend resolution, per-host catch-alls of default
//! backends and the router-wide default backend are decided here; claiming, ordering and
//! policies are the route table's (`table`), for every kind alike.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::networking::v1::{HTTPIngressPath, Ingress, IngressBackend, IngressRule};

use super::backends::{PoolKey, PortRef, Services, resolve_service};
use super::claim::{
    FixedAnswer, IngressPathAt, OrderKey, OrderPart, Origin, PathMatch, RouteAction, RouteClaim, RouteOwner,
};
use super::names::namespace_of;
use super::options::TenancyOptions;
use super::rules::PathKind;
use super::rules::{host_problem, host_value_problem, normalize_prefix, path_problem, path_rule_value_problem};
use super::tenancy::{HOST_OWNED, HostOwners};
use crate::model::{KubeRef, Warning};
use crate::reason::Reason;

/// The Event reason of a host-less rule from a namespace that may not catch every host.
pub(crate) const HOSTLESS_NOT_ALLOWED: Reason = Reason::HostlessRuleNotAllowed;

/// Path type shown for the catch-all policy of an Ingress's default backend on one of its hosts.
pub(crate) const DEFAULT_BACKEND_PATH_TYPE: &str = "defaultBackend";

fn ingress_ref(ing: &Ingress) -> KubeRef {
    KubeRef::new("Ingress", namespace_of(&ing.metadata), ing.metadata.name.as_deref().unwrap_or(""))
}

fn warn(out: &mut Vec<Warning>, object: &KubeRef, reason: Reason, message: String) {
    out.push(Warning { object: object.clone(), reason, message });
}

/// What the Ingresses ask of the route table and of the listeners.
#[derive(Debug, Default)]
pub(crate) struct IngressRoutes {
    /// Every path of every rule, in age order of the Ingresses, then the default backends'
    /// per-host catch-alls (claimed after every explicit route).
    pub claims: Vec<RouteClaim>,
    /// The router-wide default backend: the oldest allowed Ingress whose rules name no host.
    pub(crate) router_default: Option<PoolKey>,
    /// The Ingresses whose `spec.defaultBackend` names the Service of the router default.
    pub(crate) router_default_owners: Vec<KubeRef>,
}

/// What the front end reads besides the Ingresses.
pub struct Context<'a> {
    pub services: &'a Services<'a>,
    pub owners: Option<&'a HostOwners>,
    pub tenancy: &'a TenancyOptions,
}

/// The front end's state while it walks the Ingresses, oldest first.
#[derive(Default)]
struct Walk<'a> {
    default: Option<(PoolKey, KubeRef)>,
    claims: Vec<RouteClaim>,
    catch_alls: Vec<RouteClaim>,
    /// The oldest Ingress naming each host in its rules: only a default backend of its namespace
    /// may catch the host's unmatched paths. Borrowed: one per host of the router.
    host_namespace: BTreeMap<&'a str, &'a Ingress>,
}

/// `ours`: our Ingresses, oldest first.
pub(crate) fn routes(ours: &[&Ingress], cx: &Context<'_>, warnings: &mut Vec<Warning>) -> IngressRoutes {
    let mut walk = Walk::default();
    for &ing in ours {
        walk.ingress(ing, cx, warnings);
    }
    let router_default = walk.default.map(|(k, _)| k);
    let router_default_owners = router_default.as_ref().map_or_else(Vec::new, |k| default_backend_owners(ours, k));
    let mut claims = walk.claims;
    claims.append(&mut walk.catch_alls);
    IngressRoutes { claims, router_default, router_default_owners }
}

impl<'a> Walk<'a> {
    fn ingress(&mut self, ing: &'a Ingress, cx: &Context<'_>, warnings: &mut Vec<Warning>) {
        let owner = RouteOwner { object: ingress_ref(ing), uid: ing.metadata.uid.clone() };
        let o = &owner.object;
        let spec = ing.spec.as_ref();
        if spec.is_none_or(|s| s.default_backend.is_none() && s.rules.as_ref().is_none_or(Vec::is_empty)) {
            warn(
                warnings,
                o,
                Reason::EmptyIngress,
                format!("{o}: has no rules and no defaultBackend: nothing to route"),
            );
        }
        let Some(spec) = spec else { return };
        let default_backend = spec.default_backend.as_ref().and_then(|b| {
            resolve_backend(o, &"defaultBackend", b, cx.services)
                .map_err(|(reason, msg)| warn(warnings, o, reason, msg))
                .ok()
        });
        // The hosts this Ingress's default backend catches ("" = any host: the router-wide one).
        let mut own_hosts: BTreeSet<&str> = BTreeSet::new();
        if spec.rules.as_ref().is_none_or(Vec::is_empty) {
            own_hosts.insert("");
        }
        for (ri, rule) in spec.rules.iter().flatten().enumerate() {
            if let Some(host) = self.rule(ing, &owner, ri, rule, cx, warnings) {
                own_hosts.insert(host);
            }
        }
        let Some(key) = default_backend else { return };
        for host in own_hosts.iter().filter(|h| !h.is_empty()) {
            let first = self.host_namespace.get(host).filter(|first| namespace_of(&first.metadata) != o.namespace);
            match first.map(|first| ingress_ref(first)) {
                None => self.catch_alls.push(catch_all_route(&owner, host, key.clone())),
                Some(first) => {
                    let msg = format!(
                        "{o}: spec.defaultBackend does not catch the unmatched paths of host {host}: the host was named first by {first}, of another namespace"
                    );
                    warn(warnings, o, Reason::ConflictingDefaultBackend, msg);
                }
            }
        }
        if own_hosts.contains("") {
            claim_router_default(&mut self.default, o, key, cx.tenancy, warnings);
        }
    }

    /// One rule: its host checked (dropped with a warning when invalid, owned by another
    /// namespace or host-less where that is not allowed), its paths claimed. The host, if kept.
    fn rule(
        &mut self,
        ing: &'a Ingress,
        owner: &RouteOwner,
        ri: usize,
        rule: &'a IngressRule,
        cx: &Context<'_>,
        warnings: &mut Vec<Warning>,
    ) -> Option<&'a str> {
        let o = &owner.object;
        let host = rule.host.as_deref().unwrap_or_default();
        if let Some((reason, msg)) = host_refusal(o, ri, host, cx) {
            warn(warnings, o, reason, msg);
            return None;
        }
        self.host_namespace.entry(host).or_insert(ing);
        for (pi, p) in rule.http.iter().flat_map(|h| h.paths.iter()).enumerate() {
            if let Some(route) = path_route(owner, host, (ri, pi), p, cx.services, warnings) {
                self.claims.push(route);
            }
        }
        Some(host)
    }
}

/// Why rule `ri`'s host is refused (reason, message), if it is.
fn host_refusal(o: &KubeRef, ri: usize, host: &str, cx: &Context<'_>) -> Option<(Reason, String)> {
    if host.is_empty() {
        // A host-less rule catches every host: the same gate as the router-wide default.
        return (!cx.tenancy.may_set_router_default(&o.namespace)).then(|| {
            (
                HOSTLESS_NOT_ALLOWED,
                format!(
                    "{o}: rules[{ri}] has no host, so it would catch requests for every host; namespace {} may not do that ([kubernetes] default_backend_namespaces = {})",
                    o.namespace,
                    cx.tenancy.default_backend_namespaces.join(",")
                ),
            )
        });
    }
    if let Some(p) = host_problem(host) {
        return Some((Reason::InvalidHost, format!("{o}: rules[{ri}] host {host:?} dropped: {p}")));
    }
    if let Some(why) = host_value_problem(host) {
        return Some((Reason::InvalidRuleValue, format!("{o}: rules[{ri}] host {host:?} dropped: {why}")));
    }
    let holder = cx.owners.and_then(|owners| owners.refuses(&o.namespace, host))?;
    Some((HOST_OWNED, HostOwners::message(o, &format!("rules[{ri}]"), host, holder)))
}

/// Resolve an Ingress backend to a Service port, or explain why not (reason, message).
fn resolve_backend(
    ing: &KubeRef,
    where_: &dyn std::fmt::Display,
    b: &IngressBackend,
    services: &Services<'_>,
) -> Result<PoolKey, (Reason, String)> {
    let Some(sb) = b.service.as_ref() else {
        let what = b.resource.as_ref().map(|r| format!("{} {}", r.kind, r.name)).unwrap_or_else(|| "nothing".into());
        return Err((
            Reason::UnsupportedBackend,
            format!("{ing}: {where_}: backend is {what}, not a Service; only Service backends can be routed"),
        ));
    };
    let port = match sb.port.as_ref() {
        None => PortRef::Unset,
        Some(p) => match p.name.as_deref() {
            Some(n) if !n.is_empty() => PortRef::Name(n),
            _ => PortRef::Number(p.number.unwrap_or(0)),
        },
    };
    // The shared backends step still names its reasons as text (the Gateway side reads them too).
    resolve_service(services, ing, where_, &sb.name, port).map_err(|(reason, msg)| (Reason::from(reason), msg))
}

/// Ingress precedence within a host: the longest match path first, Exact before Prefix at equal
/// length, then the path text.
fn ingress_order(kind: PathKind, match_path: &str) -> OrderKey {
    let kind = match kind {
        PathKind::Exact => 0,
        PathKind::Prefix => 1,
    };
    OrderKey(vec![
        OrderPart::Number(u64::MAX - match_path.len() as u64),
        OrderPart::Number(kind),
        OrderPart::Text(match_path.to_string()),
    ])
}

/// The path kind of a `pathType`, or why the path is dropped.
fn path_kind(path_type: &str) -> Result<PathKind, (Reason, String)> {
    match path_type {
        "Exact" => Ok(PathKind::Exact),
        "Prefix" | "ImplementationSpecific" => Ok(PathKind::Prefix),
        "" => Err((Reason::MissingPathType, "pathType is required in networking.k8s.io/v1".to_string())),
        other => Err((Reason::InvalidPathType, format!("unknown pathType {other:?}"))),
    }
}

/// The route of one HTTP path of an Ingress rule (`host` may be empty), or `None` with a warning
/// naming the path (`at`: the rule's and the path's index) and why it is dropped.
fn path_route(
    owner: &RouteOwner,
    host: &str,
    at: (usize, usize),
    p: &HTTPIngressPath,
    services: &Services<'_>,
    warnings: &mut Vec<Warning>,
) -> Option<RouteClaim> {
    let o = &owner.object;
    let raw = p.path.as_deref().unwrap_or_default();
    // Spelled by a warning only: most paths have none.
    let where_ = &IngressPathAt { rule: at.0, path: at.1, host, written: raw };
    let kind = path_kind(&p.path_type)
        .map_err(|(reason, why)| warn(warnings, o, reason, format!("{o}: {where_} dropped: {why}")))
        .ok()?;
    if let Some(why) = path_problem(raw, p.path_type != "ImplementationSpecific") {
        warn(warnings, o, Reason::InvalidPath, format!("{o}: {where_} dropped: {why}"));
        return None;
    }
    let path = if raw.is_empty() { "/" } else { raw };
    let match_path = match kind {
        PathKind::Exact => path,
        PathKind::Prefix => normalize_prefix(path),
    };
    // Octavia's value checks, on the exact rules we would write.
    // (The host's values were checked with the rule: `host_value_problem`.)
    if let Some(why) = path_rule_value_problem(kind, path) {
        warn(warnings, o, Reason::InvalidRuleValue, format!("{o}: {where_} dropped: {why}"));
        return None;
    }
    // A backend that cannot be served keeps its route, answering 503: dropping it would send its
    // paths to another route of the host (`/admin` to `/`).
    let action = match resolve_backend(o, where_, &p.backend, services) {
        Ok(k) => RouteAction::to_service(k),
        Err((reason, msg)) => {
            warn(warnings, o, reason, format!("{msg}; its requests get HTTP 503"));
            RouteAction::Fixed(FixedAnswer::Unavailable)
        }
    };
    Some(RouteClaim {
        host: host.to_string(),
        order: ingress_order(kind, match_path),
        path: match kind {
            PathKind::Exact => PathMatch::Exact(match_path.to_string()),
            PathKind::Prefix => PathMatch::Prefix(match_path.to_string()),
        },
        path_type: p.path_type.clone(),
        path_as_written: path.to_string(),
        headers: Vec::new(),
        action,
        owner: owner.clone(),
        origin: Origin::IngressPath { rule: at.0, path: at.1, unwritten: raw.is_empty() },
        fallback: false,
    })
}

/// The catch-all of `owner`'s default backend on `host`: matches like `Prefix /`, so it comes
/// after every path of that host and stops the host's unmatched requests from going elsewhere.
fn catch_all_route(owner: &RouteOwner, host: &str, pool: PoolKey) -> RouteClaim {
    RouteClaim {
        host: host.to_string(),
        path: PathMatch::Prefix("/".into()),
        path_type: DEFAULT_BACKEND_PATH_TYPE.into(),
        path_as_written: "/".into(),
        headers: Vec::new(),
        action: RouteAction::to_service(pool),
        order: ingress_order(PathKind::Prefix, "/"),
        owner: owner.clone(),
        origin: "spec.defaultBackend".into(),
        fallback: true,
    }
}

/// The router-wide default backend (listener default pool): the oldest claim from an allowed
/// namespace wins; the others are told why theirs is ignored.
fn claim_router_default(
    default: &mut Option<(PoolKey, KubeRef)>,
    owner: &KubeRef,
    key: PoolKey,
    tenancy: &TenancyOptions,
    warnings: &mut Vec<Warning>,
) {
    if !tenancy.may_set_router_default(&owner.namespace) {
        let msg = format!(
            "{owner}: spec.defaultBackend does not catch requests for other hosts: namespace {} may not set the router-wide default backend ([kubernetes] default_backend_namespaces = {})",
            owner.namespace,
            tenancy.default_backend_namespaces.join(",")
        );
        warn(warnings, owner, Reason::DefaultBackendNotAllowed, msg);
        return;
    }
    match default {
        None => *default = Some((key, owner.clone())),
        Some((_, winner)) => {
            let msg = format!(
                "{owner}: spec.defaultBackend ignored for hosts without rules: the router's default backend is already set by the older {winner}"
            );
            warn(warnings, owner, Reason::ConflictingDefaultBackend, msg);
        }
    }
}

/// The Ingresses among `ours` whose `spec.defaultBackend` names the Service of `key`, sorted.
fn default_backend_owners(ours: &[&Ingress], key: &PoolKey) -> Vec<KubeRef> {
    let mut owners: Vec<KubeRef> = ours
        .iter()
        .filter(|i| {
            let service = i.spec.as_ref().and_then(|s| s.default_backend.as_ref()).and_then(|b| b.service.as_ref());
            namespace_of(&i.metadata) == key.namespace && service.is_some_and(|s| s.name == key.service)
        })
        .map(|i| ingress_ref(i))
        .collect();
    owners.sort();
    owners.dedup();
    owners
}
