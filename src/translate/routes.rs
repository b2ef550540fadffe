//! Ingresses → ordered L7 policies, pools and the listener default pool.

use std::borrow::Borrow;
use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{Service, ServicePort};
use k8s_openapi::api::networking::v1::{HTTPIngressPath, Ingress, IngressBackend, IngressClass};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::members::{SliceCache, endpoints_as_slices};
use super::names::{guard_name, policy_name, pool_name};
use super::rules::{
    HostKind, MAX_RULES, PathKind, exclusion_rules, host_pattern, host_problem, host_rule, host_value_problem,
    normalize_prefix, path_problem, path_rule, value_problem,
};
use super::tenancy::{HOST_OWNED, HostOwners};
use super::{TranslateOptions, View, namespace_of};
use crate::model::{DesiredRouter, KubeRef, Policy, Pool, Warning};

const LEGACY_CLASS_ANNOTATION: &str = "kubernetes.io/ingress.class";
const DEFAULT_CLASS_ANNOTATION: &str = "ingressclass.kubernetes.io/is-default-class";
/// Label tying an EndpointSlice to its Service.
pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";

fn ingress_ref(ing: &Ingress) -> KubeRef {
    KubeRef::new("Ingress", namespace_of(&ing.metadata), ing.metadata.name.as_deref().unwrap_or(""))
}

fn warn(out: &mut Vec<Warning>, object: &KubeRef, reason: &str, message: String) {
    out.push(Warning { object: object.clone(), reason: reason.into(), message });
}

/// Is this Ingress served by us? `spec.ingressClassName` naming our IngressClass (right name and
/// controller), else the legacy annotation equal to our class, else no class at all while our
/// IngressClass is marked default.
pub fn is_ours<C: Borrow<IngressClass>>(ing: &Ingress, classes: &[C], opts: &TranslateOptions) -> bool {
    let ours = |c: &&IngressClass| {
        c.metadata.name.as_deref() == Some(opts.ingress_class.as_str())
            && c.spec.as_ref().and_then(|s| s.controller.as_deref()) == Some(opts.controller.as_str())
    };
    let spec_class = ing.spec.as_ref().and_then(|s| s.ingress_class_name.as_deref());
    if let Some(name) = spec_class {
        return name == opts.ingress_class && classes.iter().map(Borrow::borrow).any(|c| ours(&c));
    }
    if let Some(a) = ing.metadata.annotations.as_ref().and_then(|a| a.get(LEGACY_CLASS_ANNOTATION)) {
        return *a == opts.ingress_class;
    }
    classes.iter().map(Borrow::borrow).filter(ours).any(|c| {
        c.metadata.annotations.as_ref().and_then(|a| a.get(DEFAULT_CLASS_ANNOTATION)).map(String::as_str)
            == Some("true")
    })
}

/// Our IngressClass (right name and controller), if it exists.
pub fn our_class<'a, C: Borrow<IngressClass>>(classes: &'a [C], opts: &TranslateOptions) -> Option<&'a IngressClass> {
    classes.iter().map(Borrow::borrow).find(|c| {
        c.metadata.name.as_deref() == Some(opts.ingress_class.as_str())
            && c.spec.as_ref().and_then(|s| s.controller.as_deref()) == Some(opts.controller.as_str())
    })
}

/// Our Ingresses, oldest first: conflicts are won by the first claimant in this order.
pub fn ours_by_age<'a>(inputs: &View<'a>, opts: &TranslateOptions) -> Vec<&'a Ingress> {
    let mut ours: Vec<&Ingress> =
        inputs.ingresses.iter().copied().filter(|i| is_ours(i, &inputs.ingress_classes, opts)).collect();
    ours.sort_by(|a, b| age(a).cmp(&age(b)));
    ours
}

/// Host ownership, when on: the remembered owners on our IngressClass, then the oldest claimants.
pub(super) fn host_owners(ours: &[&Ingress], inputs: &View<'_>, opts: &TranslateOptions) -> Option<HostOwners> {
    opts.tenancy.host_ownership.then(|| {
        let remembered = super::tenancy::stored_owners(our_class(&inputs.ingress_classes, opts));
        HostOwners::build(ours, &remembered, inputs.now, opts.tenancy.host_ownership_grace)
    })
}

/// A resolved backend: one Service port.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PoolKey {
    pub namespace: String,
    pub service: String,
    pub port: u16,
}

/// Resolve an Ingress backend to a Service port, or explain why not (reason, message).
fn resolve_backend(
    ing: &KubeRef,
    where_: &str,
    b: &IngressBackend,
    services: &BTreeMap<(&str, &str), &Service>,
) -> Result<PoolKey, (&'static str, String)> {
    let Some(sb) = b.service.as_ref() else {
        let what = b.resource.as_ref().map(|r| format!("{} {}", r.kind, r.name)).unwrap_or_else(|| "nothing".into());
        return Err((
            "UnsupportedBackend",
            format!("{ing}: {where_}: backend is {what}, not a Service; only Service backends can be routed"),
        ));
    };
    let Some(svc) = services.get(&(ing.namespace.as_str(), sb.name.as_str())) else {
        return Err(("ServiceNotFound", format!("{ing}: {where_}: Service {}/{} not found", ing.namespace, sb.name)));
    };
    let spec = svc.spec.as_ref();
    if spec.and_then(|s| s.type_.as_deref()) == Some("ExternalName") {
        return Err((
            "ExternalNameService",
            format!(
                "{ing}: {where_}: Service {}/{} is of type ExternalName, which has no endpoints to route to",
                ing.namespace, sb.name
            ),
        ));
    }
    let ports: &[ServicePort] = spec.and_then(|s| s.ports.as_deref()).unwrap_or(&[]);
    let want = sb.port.as_ref();
    let found = match (want.and_then(|p| p.name.as_deref()), want.and_then(|p| p.number)) {
        (Some(n), _) if !n.is_empty() => ports.iter().find(|p| p.name.as_deref() == Some(n)),
        (_, Some(num)) => ports.iter().find(|p| p.port == num),
        _ => None,
    };
    let Some(sp) = found else {
        let asked = want
            .map(|p| p.name.clone().filter(|n| !n.is_empty()).unwrap_or_else(|| p.number.unwrap_or(0).to_string()))
            .unwrap_or_else(|| "(none)".into());
        return Err((
            "ServicePortNotFound",
            format!("{ing}: {where_}: Service {}/{} has no port {asked}", ing.namespace, sb.name),
        ));
    };
    let port = u16::try_from(sp.port)
        .map_err(|_| ("ServicePortNotFound", format!("{ing}: {where_}: invalid port {}", sp.port)))?;
    Ok(PoolKey { namespace: ing.namespace.clone(), service: sb.name.clone(), port })
}

/// One (host, path) after validation and backend resolution.
#[derive(Clone, Debug)]
struct Route {
    host: String,
    kind: PathKind,
    path_type: String,
    /// As written (`/` for an empty ImplementationSpecific path).
    path: String,
    /// Exact: the path; Prefix: without trailing slashes. Its length is the precedence.
    match_path: String,
    /// `None`: the backend cannot be served; the route answers 503 ([`crate::model::UNAVAILABLE_POOL`]).
    pool: Option<PoolKey>,
    owner: KubeRef,
}

impl Route {
    fn describe(&self) -> String {
        let host = if self.host.is_empty() { "(any host)" } else { &self.host };
        format!("{host} {} {}", self.path_type, self.path)
    }
}

pub(crate) type Age<'a> = (Option<&'a Time>, &'a str, &'a str);

pub(crate) fn age(ing: &Ingress) -> Age<'_> {
    (ing.metadata.creation_timestamp.as_ref(), namespace_of(&ing.metadata), ing.metadata.name.as_deref().unwrap_or(""))
}

/// See [`super::translate`].
pub fn translate(inputs: &View<'_>, opts: &TranslateOptions) -> DesiredRouter {
    let mut warnings = Vec::new();
    let services: BTreeMap<(&str, &str), &Service> = inputs
        .services
        .iter()
        .map(|&s| ((namespace_of(&s.metadata), s.metadata.name.as_deref().unwrap_or("")), s))
        .collect();

    let ours = ours_by_age(inputs, opts);
    let owners = host_owners(&ours, inputs, opts);
    // Router-wide default backend: the oldest allowed Ingress whose rules name no host.
    let mut default: Option<(PoolKey, KubeRef)> = None;
    // Routes keyed by what they match; first claimant (oldest) wins.
    let mut claimed: BTreeMap<(String, PathKind, String), Route> = BTreeMap::new();
    // Per-host catch-alls of the Ingresses' default backends, claimed after every explicit route.
    let mut catch_alls: Vec<Route> = Vec::new();
    // The namespace of the oldest Ingress naming each host in its rules: only a default backend
    // of that namespace may catch the host's unmatched paths.
    let mut host_namespace: BTreeMap<String, KubeRef> = BTreeMap::new();
    for ing in &ours {
        let owner = ingress_ref(ing);
        let spec = ing.spec.as_ref();
        if spec.is_none_or(|s| s.default_backend.is_none() && s.rules.as_ref().is_none_or(Vec::is_empty)) {
            warn(
                &mut warnings,
                &owner,
                "EmptyIngress",
                format!("{owner}: has no rules and no defaultBackend: nothing to route"),
            );
        }
        let Some(spec) = spec else {
            continue;
        };
        let default_backend = spec.default_backend.as_ref().and_then(|b| {
            resolve_backend(&owner, "defaultBackend", b, &services)
                .map_err(|(reason, msg)| warn(&mut warnings, &owner, reason, msg))
                .ok()
        });
        // The hosts this Ingress's default backend catches ("" = any host: the router-wide one).
        let mut own_hosts: BTreeSet<String> = BTreeSet::new();
        if spec.rules.as_ref().is_none_or(Vec::is_empty) {
            own_hosts.insert(String::new());
        }
        for (ri, rule) in spec.rules.iter().flatten().enumerate() {
            let host = rule.host.clone().unwrap_or_default();
            if !host.is_empty() {
                if let Some(p) = host_problem(&host) {
                    warn(
                        &mut warnings,
                        &owner,
                        "InvalidHost",
                        format!("{owner}: rules[{ri}] host {host:?} dropped: {p}"),
                    );
                    continue;
                }
                if let Some(why) = host_value_problem(&host) {
                    warn(
                        &mut warnings,
                        &owner,
                        "InvalidRuleValue",
                        format!("{owner}: rules[{ri}] host {host:?} dropped: {why}"),
                    );
                    continue;
                }
                if let Some(o) = owners.as_ref().and_then(|o| o.refuses(&owner.namespace, &host)) {
                    let msg = HostOwners::message(&owner, &format!("rules[{ri}]"), &host, o);
                    warn(&mut warnings, &owner, HOST_OWNED, msg);
                    continue;
                }
            } else if !opts.tenancy.may_set_router_default(&owner.namespace) {
                // A host-less rule catches every host: the same gate as the router-wide default.
                let msg = format!(
                    "{owner}: rules[{ri}] has no host, so it would catch requests for every host; namespace {} may not do that ([kubernetes] default_backend_namespaces = {})",
                    owner.namespace,
                    opts.tenancy.default_backend_namespaces.join(",")
                );
                warn(&mut warnings, &owner, HOSTLESS_NOT_ALLOWED, msg);
                continue;
            }
            host_namespace.entry(host.clone()).or_insert_with(|| owner.clone());
            own_hosts.insert(host.clone());
            let Some(http) = rule.http.as_ref() else {
                continue;
            };
            for (pi, p) in http.paths.iter().enumerate() {
                let where_ =
                    format!("rules[{ri}].paths[{pi}] (host {:?}, path {:?})", host, p.path.clone().unwrap_or_default());
                let Some(route) = path_route(&owner, &host, &where_, p, &services, &mut warnings) else {
                    continue;
                };
                claim(&mut claimed, route, &where_, &mut warnings);
            }
        }
        let Some(key) = default_backend else { continue };
        for host in own_hosts.iter().filter(|h| !h.is_empty()) {
            match host_namespace.get(host).filter(|first| first.namespace != owner.namespace) {
                None => catch_alls.push(catch_all_route(&owner, host, key.clone())),
                Some(first) => {
                    let msg = format!(
                        "{owner}: spec.defaultBackend does not catch the unmatched paths of host {host}: the host was named first by {first}, of another namespace"
                    );
                    warn(&mut warnings, &owner, "ConflictingDefaultBackend", msg);
                }
            }
        }
        if own_hosts.contains("") {
            claim_router_default(&mut default, &owner, key, &opts.tenancy, &mut warnings);
        }
    }
    for route in catch_alls {
        claim(&mut claimed, route, "spec.defaultBackend", &mut warnings);
    }

    let default_key = default.map(|(k, _)| k);
    let default_pool_owners = default_key.as_ref().map_or_else(Vec::new, |k| default_backend_owners(&ours, k));
    let routes: Vec<Route> = claimed.into_values().collect();
    let tls = super::tls::translate_tls(&ours, inputs, opts, &mut warnings);
    let mut pool_keys: BTreeSet<PoolKey> = routes.iter().filter_map(|r| r.pool.clone()).collect();
    pool_keys.extend(default_key.clone());
    let mut names = pool_names(&pool_keys);
    // With a router-wide default backend and no responder, a named host's unmatched paths are
    // guarded to the empty 503 pool: they must never reach another tenant's catch-all.
    let guard_to_unavailable =
        opts.status_responder.is_none() && default_key.is_some() && routes.iter().any(|r| !r.host.is_empty());
    let reserved = super::status::reserved(
        opts.status_responder.as_ref(),
        &services,
        guard_to_unavailable || routes.iter().any(|r| r.pool.is_none()),
        &opts.lb_algorithm,
        &mut warnings,
    );
    pool_keys.extend(reserved.from_service.keys().cloned());
    names.extend(reserved.from_service);
    // No default backend: requests no route matches go to the 404 pool, when there is one.
    let default_pool = default_key.as_ref().map(|k| names[k].clone()).or(reserved.not_found.clone());
    // Where a named host's unmatched paths go (see `order_policies`).
    let stops = Stops {
        default_pool: default_pool.as_deref(),
        guard_pool: reserved
            .not_found
            .as_deref()
            .or_else(|| guard_to_unavailable.then_some(crate::model::UNAVAILABLE_POOL)),
        router_default: default_key.is_some(),
    };
    let https = tls.https.map(|mut https| {
        let (on_https, off): (Vec<Route>, Vec<Route>) =
            routes.iter().cloned().partition(|r| super::tls::on_https(&r.host, &tls.tls_hosts));
        let any_hostless = on_https.iter().any(|r| r.host.is_empty());
        // Warnings of the HTTPS ordering repeat the HTTP ones (same routes): not collected twice.
        let mut policies = order_policies(on_https, &names, &stops, &mut Vec::new());
        // A named host without TLS has no route on HTTPS; its requests there must not reach
        // the router-wide catch-all or host-less routes either: a guard each, first (they match
        // their own host only, and no host on this listener is covered by them).
        if let Some(gp) = stops.guard_pool
            && (stops.router_default || any_hostless)
        {
            let mut guarded = guard_policies(&off, gp);
            guarded.append(&mut policies);
            policies = guarded;
            for (n, p) in policies.iter_mut().enumerate() {
                p.position = n as u32 + 1;
            }
        }
        https.policies = policies;
        https.default_pool = default_pool.clone();
        https
    });
    let policies = order_policies(routes, &names, &stops, &mut warnings);
    let mut pools = build_pools(inputs, opts, &pool_keys, &names, &services, &mut warnings);
    pools.extend(reserved.empty.into_iter().map(|p| (p.name.clone(), p)));
    let health_monitors = pools
        .values()
        .filter_map(|p| {
            let svc = services.get(&(p.service.namespace.as_str(), p.service.name.as_str()))?;
            let hm = super::health::service_health_monitor(svc, &opts.health_monitor_defaults, &mut warnings)?;
            Some((p.name.clone(), hm))
        })
        .collect();

    warnings.sort();
    warnings.dedup();
    DesiredRouter {
        policies,
        default_pool,
        default_pool_owners,
        pools,
        warnings,
        https,
        redirects: tls.redirects,
        health_monitors,
        quota: None,
    }
}

/// Claims a route's (host, path) for its Ingress unless an older route holds it; the loser gets
/// a warning naming the winner. A default backend's catch-all (path type `defaultBackend`) never
/// displaces an explicit `Prefix /`, and is silent when its own Ingress routes that path itself.
fn claim(
    claimed: &mut BTreeMap<(String, PathKind, String), Route>,
    route: Route,
    where_: &str,
    warnings: &mut Vec<Warning>,
) {
    let key = (route.host.clone(), route.kind, route.match_path.clone());
    let Some(w) = claimed.get(&key) else {
        claimed.insert(key, route);
        return;
    };
    let owner = &route.owner;
    if route.path_type != DEFAULT_BACKEND_PATH_TYPE {
        let msg = format!(
            "{owner}: {where_} ignored: {} is already routed by {} (older, or listed first)",
            route.describe(),
            w.owner
        );
        warn(warnings, owner, "DuplicateRoute", msg);
    } else if w.owner != *owner {
        let host = &route.host;
        let msg = format!(
            "{owner}: spec.defaultBackend does not catch the unmatched paths of host {host}: {} of {} already does",
            w.describe(),
            w.owner
        );
        warn(warnings, owner, "ConflictingDefaultBackend", msg);
    }
}

/// The Event reason of a host-less rule from a namespace that may not catch every host.
pub const HOSTLESS_NOT_ALLOWED: &str = "HostlessRuleNotAllowed";

/// Path type shown for the catch-all policy of an Ingress's default backend on one of its hosts.
pub const DEFAULT_BACKEND_PATH_TYPE: &str = "defaultBackend";

/// The catch-all of `owner`'s default backend on `host`: matches like `Prefix /`, so it comes
/// after every path of that host and stops the host's unmatched requests from going elsewhere.
fn catch_all_route(owner: &KubeRef, host: &str, pool: PoolKey) -> Route {
    Route {
        host: host.to_string(),
        kind: PathKind::Prefix,
        path_type: DEFAULT_BACKEND_PATH_TYPE.into(),
        path: "/".into(),
        match_path: "/".into(),
        pool: Some(pool),
        owner: owner.clone(),
    }
}

/// The router-wide default backend (listener default pool): the oldest claim from an allowed
/// namespace wins; the others are told why theirs is ignored.
fn claim_router_default(
    default: &mut Option<(PoolKey, KubeRef)>,
    owner: &KubeRef,
    key: PoolKey,
    tenancy: &super::tenancy::TenancyOptions,
    warnings: &mut Vec<Warning>,
) {
    if !tenancy.may_set_router_default(&owner.namespace) {
        let msg = format!(
            "{owner}: spec.defaultBackend does not catch requests for other hosts: namespace {} may not set the router-wide default backend ([kubernetes] default_backend_namespaces = {})",
            owner.namespace,
            tenancy.default_backend_namespaces.join(",")
        );
        warn(warnings, owner, "DefaultBackendNotAllowed", msg);
        return;
    }
    match default {
        None => *default = Some((key, owner.clone())),
        Some((_, winner)) => {
            let msg = format!(
                "{owner}: spec.defaultBackend ignored for hosts without rules: the router's default backend is already set by the older {winner}"
            );
            warn(warnings, owner, "ConflictingDefaultBackend", msg);
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

/// The route of one HTTP path of an Ingress rule (`host` may be empty), or `None` with a warning
/// naming the path and why it is dropped.
fn path_route(
    owner: &KubeRef,
    host: &str,
    where_: &str,
    p: &HTTPIngressPath,
    services: &BTreeMap<(&str, &str), &Service>,
    warnings: &mut Vec<Warning>,
) -> Option<Route> {
    let raw = p.path.clone().unwrap_or_default();
    let kind = match p.path_type.as_str() {
        "Exact" => PathKind::Exact,
        "Prefix" | "ImplementationSpecific" => PathKind::Prefix,
        "" => {
            warn(
                warnings,
                owner,
                "MissingPathType",
                format!("{owner}: {where_} dropped: pathType is required in networking.k8s.io/v1"),
            );
            return None;
        }
        other => {
            warn(warnings, owner, "InvalidPathType", format!("{owner}: {where_} dropped: unknown pathType {other:?}"));
            return None;
        }
    };
    if let Some(why) = path_problem(&raw, p.path_type != "ImplementationSpecific") {
        warn(warnings, owner, "InvalidPath", format!("{owner}: {where_} dropped: {why}"));
        return None;
    }
    let path = if raw.is_empty() { "/".to_string() } else { raw };
    let match_path = match kind {
        PathKind::Exact => path.clone(),
        PathKind::Prefix => normalize_prefix(&path).to_string(),
    };
    // Octavia's value checks, on the exact rules we would write.
    // (The host's values were checked with the rule: `host_value_problem`.)
    let mut values = Vec::new();
    if let Some(r) = path_rule(kind, &path, !host.is_empty()) {
        values.push(r.value);
    }
    if let Some(why) = values.iter().find_map(|v| value_problem(v)) {
        warn(warnings, owner, "InvalidRuleValue", format!("{owner}: {where_} dropped: {why}"));
        return None;
    }
    // A backend that cannot be served keeps its route, answering 503: dropping it would send its
    // paths to another route of the host (`/admin` to `/`).
    let pool = match resolve_backend(owner, where_, &p.backend, services) {
        Ok(k) => Some(k),
        Err((reason, msg)) => {
            warn(warnings, owner, reason, format!("{msg}; its requests get HTTP 503"));
            None
        }
    };
    Some(Route {
        host: host.to_string(),
        kind,
        path_type: p.path_type.clone(),
        path,
        match_path,
        pool,
        owner: owner.clone(),
    })
}

/// Pool names: `<ns>_<svc>`, or `<ns>_<svc>_<port>` for every port of a Service used on several.
pub fn pool_names(keys: &BTreeSet<PoolKey>) -> BTreeMap<PoolKey, String> {
    let mut per_service: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for k in keys {
        *per_service.entry((&k.namespace, &k.service)).or_default() += 1;
    }
    keys.iter()
        .map(|k| {
            let multi = per_service[&(k.namespace.as_str(), k.service.as_str())] > 1;
            (k.clone(), pool_name(&k.namespace, &k.service, multi.then_some(k.port)))
        })
        .collect()
}

pub(super) fn wildcard_covers(wild: &str, host: &str) -> bool {
    let suffix = &wild[1..]; // ".example.com"
    host.len() > suffix.len() && host.ends_with(suffix) && !host[..host.len() - suffix.len()].contains('.')
}

/// Order routes by Kubernetes precedence and turn them into policies.
///
/// Groups: exact hosts, then wildcard hosts, then no host (each sorted by host name for
/// determinism); within a group, longest match path first, Exact before Prefix at equal length,
/// then the path text. Kubernetes picks the host before the path, so a host whose own routes do
/// not match must not fall through to a wildcard or host-less route: a guard policy sends it to
/// the 404 answer, or (no default pool) later policies exclude it with inverted host rules.
/// Nor may it fall into the router-wide default backend (another tenant's catch-all): with one,
/// every named host without a `Prefix /` of its own gets a guard.
fn order_policies(
    mut routes: Vec<Route>,
    names: &BTreeMap<PoolKey, String>,
    stops: &Stops<'_>,
    warnings: &mut Vec<Warning>,
) -> Vec<Policy> {
    let default_pool = stops.default_pool;
    routes.sort_by(|a, b| {
        (HostKind::of(&a.host), &a.host, std::cmp::Reverse(a.match_path.len()), a.kind, &a.match_path).cmp(&(
            HostKind::of(&b.host),
            &b.host,
            std::cmp::Reverse(b.match_path.len()),
            b.kind,
            &b.match_path,
        ))
    });
    // Per host: does it have a catch-all (Prefix /)? Who owns it (oldest owner of its routes)?
    let mut hosts: BTreeMap<&str, (bool, &KubeRef)> = BTreeMap::new();
    for r in &routes {
        let e = hosts.entry(r.host.as_str()).or_insert((false, &r.owner));
        e.0 |= r.kind == PathKind::Prefix && r.match_path == "/";
        if r.owner < *e.1 {
            e.1 = &r.owner;
        }
    }
    let any_hostless = hosts.contains_key("");
    let wildcards: Vec<&str> = hosts.keys().copied().filter(|h| HostKind::of(h) == HostKind::Wildcard).collect();
    // Hosts that could fall through, and which later hosts they could fall into.
    let needs_stop = |h: &str| -> bool {
        match HostKind::of(h) {
            HostKind::Exact => stops.router_default || any_hostless || wildcards.iter().any(|w| wildcard_covers(w, h)),
            HostKind::Wildcard => stops.router_default || any_hostless,
            HostKind::Any => false,
        }
    };
    let leaky: Vec<&str> =
        hosts.iter().filter(|(h, (catch_all, _))| !catch_all && needs_stop(h)).map(|(h, _)| *h).collect();

    let mut policies = Vec::with_capacity(routes.len() + leaky.len());
    let mut i = 0;
    while i < routes.len() {
        let host = routes[i].host.clone();
        let mut j = i;
        while j < routes.len() && routes[j].host == host {
            j += 1;
        }
        // Exclusions only when there is no default pool to guard with.
        let excluded: Vec<String> = if default_pool.is_some() {
            Vec::new()
        } else {
            match HostKind::of(&host) {
                HostKind::Exact => Vec::new(),
                HostKind::Wildcard => leaky
                    .iter()
                    .filter(|h| HostKind::of(h) == HostKind::Exact && wildcard_covers(&host, h))
                    .map(|h| host_pattern(h))
                    .collect(),
                HostKind::Any => leaky.iter().map(|h| host_pattern(h)).collect(),
            }
        };
        let excl_rules = exclusion_rules(&excluded);
        policies.extend(routes[i..j].iter().map(|r| route_policy(r, names, &excluded, &excl_rules, warnings)));
        if let Some(gp) = stops.guard_pool
            && leaky.contains(&host.as_str())
        {
            policies.push(guard_policy(&host, gp, hosts[host.as_str()].1.clone()));
        }
        i = j;
    }
    for (n, p) in policies.iter_mut().enumerate() {
        p.position = n as u32 + 1;
    }
    policies
}

/// One guard policy (host rule only → `pool`) per named host of `routes`, exact hosts first,
/// owned by the oldest owner of the host's routes.
fn guard_policies(routes: &[Route], pool: &str) -> Vec<Policy> {
    let mut hosts: BTreeMap<(HostKind, &str), &KubeRef> = BTreeMap::new();
    for r in routes.iter().filter(|r| !r.host.is_empty()) {
        let e = hosts.entry((HostKind::of(&r.host), r.host.as_str())).or_insert(&r.owner);
        if r.owner < **e {
            *e = &r.owner;
        }
    }
    hosts.into_iter().map(|((_, host), owner)| guard_policy(host, pool, owner.clone())).collect()
}

fn guard_policy(host: &str, pool: &str, owner: KubeRef) -> Policy {
    Policy {
        name: guard_name(host),
        position: 0,
        pool: pool.to_string(),
        rules: vec![host_rule(host)],
        owner,
        description: format!("{host} guard: paths without a route get the no-route answer"),
    }
}

/// Where the requests that a host's routes do not match may go.
struct Stops<'a> {
    /// The listeners' default pool: the router-wide default backend, else the 404 pool, if any.
    default_pool: Option<&'a str>,
    /// The pool of a host's guard policy: the 404 pool (status responder), else, while a
    /// router-wide default backend exists, the empty 503 pool; `None`: exclusion rules instead.
    guard_pool: Option<&'a str>,
    /// An Ingress set the router-wide default backend: every named host needs a stop.
    router_default: bool,
}

/// The policy of one route: its host and path rules, then as many of the host exclusions as
/// Octavia's rule limit leaves room for (a warning names the route when some do not fit).
fn route_policy(
    r: &Route,
    names: &BTreeMap<PoolKey, String>,
    excluded: &[String],
    excl_rules: &[crate::model::Rule],
    warnings: &mut Vec<Warning>,
) -> Policy {
    let mut rules = Vec::new();
    if !r.host.is_empty() {
        rules.push(host_rule(&r.host));
    }
    rules.extend(path_rule(r.kind, &r.path, !r.host.is_empty()));
    let room = MAX_RULES.saturating_sub(rules.len());
    if excl_rules.len() > room {
        warn(
            warnings,
            &r.owner,
            "TooManyRules",
            format!(
                "{}: {}: {} host exclusions need {} rules, Octavia allows {MAX_RULES} per policy; some hosts' unmatched requests may reach this route (set a default backend to avoid this)",
                r.owner,
                r.describe(),
                excluded.len(),
                excl_rules.len() + rules.len()
            ),
        );
    }
    rules.extend(excl_rules.iter().take(room).cloned());
    Policy {
        name: policy_name(&r.owner, &r.host, &r.path_type, &r.path),
        position: 0,
        pool: r.pool.as_ref().map_or_else(|| crate::model::UNAVAILABLE_POOL.to_string(), |k| names[k].clone()),
        rules,
        owner: r.owner.clone(),
        description: r.describe(),
    }
}

fn build_pools(
    inputs: &View<'_>,
    opts: &TranslateOptions,
    keys: &BTreeSet<PoolKey>,
    names: &BTreeMap<PoolKey, String>,
    services: &BTreeMap<(&str, &str), &Service>,
    warnings: &mut Vec<Warning>,
) -> BTreeMap<String, Pool> {
    let nodes = super::members::index_nodes(&inputs.nodes);
    // Index the endpoint sources of the referenced Services only.
    let wanted: BTreeSet<(&str, &str)> = keys.iter().map(|k| (k.namespace.as_str(), k.service.as_str())).collect();
    let mut caches: BTreeMap<(&str, &str), SliceCache> = BTreeMap::new();
    if opts.use_endpoint_slices {
        for &s in &inputs.endpoint_slices {
            let Some(svc) = s.metadata.labels.as_ref().and_then(|l| l.get(SERVICE_NAME_LABEL)) else {
                continue;
            };
            let key = (namespace_of(&s.metadata), svc.as_str());
            if wanted.contains(&key) {
                caches.entry(key).or_insert_with(|| SliceCache::new(opts.vip_family)).upsert(s);
            }
        }
    } else {
        for &e in &inputs.endpoints {
            let key = (namespace_of(&e.metadata), e.metadata.name.as_deref().unwrap_or(""));
            if wanted.contains(&key) {
                let cache = caches.entry(key).or_insert_with(|| SliceCache::new(opts.vip_family));
                for slice in endpoints_as_slices(e) {
                    cache.upsert(&slice);
                }
            }
        }
    }
    let empty = SliceCache::new(opts.vip_family);
    let mut pools = BTreeMap::new();
    for k in keys {
        let svc = services[&(k.namespace.as_str(), k.service.as_str())];
        let sp = svc
            .spec
            .as_ref()
            .and_then(|s| s.ports.as_ref())
            .and_then(|ps| ps.iter().find(|p| p.port == i32::from(k.port)))
            .expect("resolved ports exist");
        let cache = caches.get(&(k.namespace.as_str(), k.service.as_str())).unwrap_or(&empty);
        let (members, weighting, w) = cache.members(svc, sp, &nodes, opts);
        warnings.extend(w);
        let name = names[k].clone();
        if members.is_empty() {
            let sref = KubeRef::new("Service", &k.namespace, &k.service);
            let family = match opts.vip_family {
                super::IpFamily::V4 => "IPv4",
                super::IpFamily::V6 => "IPv6",
            };
            let node_pool = opts.node_pool.as_deref().map(|p| format!(" on node pool {p}")).unwrap_or_default();
            warnings.push(Warning {
                object: sref.clone(),
                reason: "NoEndpoints".into(),
                message: format!(
                    "{sref}: port {}: no ready {family} endpoint{node_pool}; pool {name} has no members and requests routed to it get HTTP 503",
                    k.port
                ),
            });
        }
        pools.insert(
            name.clone(),
            Pool {
                name,
                service: KubeRef::new("Service", &k.namespace, &k.service),
                service_port: sp.name.clone().filter(|n| !n.is_empty()).unwrap_or_else(|| sp.port.to_string()),
                lb_algorithm: opts.lb_algorithm.clone(),
                members,
                weighting,
            },
        );
    }
    pools
}
