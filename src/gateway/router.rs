//! The Gateway API front end: one Gateway's route table ([`GatewayRoutes`], built by
//! `crate::gateway::build`) → kind-neutral route claims → the desired router of that Gateway,
//! through the Ingress pipeline's own phases: claim ([`RouteTable`]), backends (pool keys and
//! names, the reserved pools), pools with their members and health monitors.
//!
//! What differs from an Ingress is what the Gateway API spec says differently:
//! - **order**: the spec's precedence, already computed (`crate::gateway::precedence`); the
//!   claims are positioned in that order, without the Ingress per-host guards (a request that no
//!   route of a more specific host matches may match a route of a less specific one);
//! - **wildcards**: `*.example.com` matches one or more labels (an Ingress wildcard exactly one);
//! - **listener isolation**: an entry must not catch the hostnames of more specific listeners on
//!   its port: inverted host rules (the entry's excluded hosts);
//! - **500**: a rule without a valid backend answers 500 from the reserved pool
//!   [`crate::model::SERVER_ERROR_POOL`];
//! - **redirects**: haproxy runs every redirect policy before any pool policy, so each redirect
//!   is written with inverted rules of the earlier pool policies it overlaps
//!   ([`super::redirect_order`]), to answer only what its position gives it.
//!
//! A router has an HTTP listener per HTTP port of the Gateway (the lowest is the router's HTTP
//! listener, the others [`DesiredRouter::more_http`]) and a TERMINATED_HTTPS listener per HTTPS
//! port (the lowest is the router's HTTPS listener, the others [`DesiredRouter::more_https`]),
//! each with its certificates and its client certificate validation.

use std::collections::BTreeMap;

use super::redirect_order::{ClaimRules, Routed, redirects_after_routes};
use super::{self as gw, Action, BackendTarget, GatewayRoutes, PortRoutes, Protocol, RouteEntry};
use crate::model::{DesiredRouter, HttpsListener, KubeRef, Policy, PortListener, Rule, Warning};
use crate::reason::Reason;
use crate::translate::backends::{PoolKey, Services, WeightedBackend, index_services};
use crate::translate::claim::{
    FixedAnswer, HeaderMatch, HeaderMatchKind, OrderKey, OrderPart, PathMatch, RedirectSpec, RouteAction, RouteClaim,
    RouteOwner,
};
use crate::translate::options::{Source, TranslateOptions, View};
use crate::translate::pipeline::Backends;
use crate::translate::pools::{build_pools, health_monitors};
use crate::translate::rules::{MAX_RULES, header_problem, value_problem};
use crate::translate::table::{PoolNames, RouteTable, number, policy_with_rules};
use crate::translate::tls::listener_certificate;

/// The desired router of one Gateway.
#[derive(Clone, Debug)]
pub struct GatewayRouter {
    /// The Gateway.
    pub owner: KubeRef,
    /// The Octavia load-balancer name (`crate::gateway::naming::load_balancer_name`).
    pub name: String,
    /// The Gateway's static address (`GatewayRoutes::address`): the floating IP to put on the VIP.
    pub address: Option<std::net::IpAddr>,
    /// The port of the router's HTTP listener, when the Gateway has an HTTP listener.
    pub http_port: Option<u16>,
    pub desired: DesiredRouter,
}

/// A claim and the hosts of more specific listeners it must not catch.
struct GatewayClaim {
    claim: RouteClaim,
    excluded_hosts: Vec<String>,
}

fn warn(out: &mut Vec<Warning>, object: &KubeRef, reason: Reason, message: String) {
    out.push(Warning { object: object.clone(), reason, message });
}

/// Translate one Gateway's route table into its router. Pure and deterministic.
/// The objects are read borrowed ([`Source`]): owned `Inputs` (`plan`) or the caches' `Snapshot`.
pub fn translate_gateway(
    routes: &GatewayRoutes,
    inputs: &(impl Source + ?Sized),
    opts: &TranslateOptions,
) -> GatewayRouter {
    let inputs = &inputs.view();
    let mut warnings = Vec::new();
    let services = index_services(&inputs.services);
    let ServedPorts { http, more_http, https, more_https } = served_ports(routes);
    let cx = Backs { services: &services, server_error: server_error_key(opts, &services) };
    // Each listener's duplicates are its own (other ports, other entries): told apart.
    let http_claims = claimed(http.map(|p| claims(p, &cx)).unwrap_or_default(), &mut warnings);
    let more_claims: Vec<(u16, Vec<GatewayClaim>)> =
        more_http.iter().map(|p| (p.port, claimed(claims(p, &cx), &mut warnings))).collect();
    let https_claims = https.map(|p| (p, claimed(claims(p, &cx), &mut warnings)));
    let more_https_claims: Vec<(&PortRoutes, Vec<GatewayClaim>)> =
        more_https.iter().map(|p| (*p, claimed(claims(p, &cx), &mut warnings))).collect();
    let all: Vec<RouteClaim> = http_claims
        .iter()
        .chain(more_claims.iter().flat_map(|(_, c)| c))
        .chain(https_claims.iter().flat_map(|(_, c)| c))
        .chain(more_https_claims.iter().flat_map(|(_, c)| c))
        .map(|c| c.claim.clone())
        .collect();
    let backends = Backends::of(&all, None, &services, opts, &mut warnings);
    let policies = listener_policies(&http_claims, &backends.names, &mut warnings);
    let more_http = more_claims
        .iter()
        .map(|(port, c)| {
            let policies = listener_policies(c, &backends.names, &mut warnings);
            (*port, PortListener { policies, default_pool: backends.default_pool.clone() })
        })
        .collect();
    let mut https_of = |(p, c): &(&PortRoutes, Vec<GatewayClaim>)| HttpsListener {
        policies: listener_policies(c, &backends.names, &mut warnings),
        default_pool: backends.default_pool.clone(),
        ..https_certificates(p, &routes.owner, inputs, &mut warnings)
    };
    let https = https_claims.as_ref().map(&mut https_of);
    let more_https = more_https_claims.iter().map(|pc| (pc.0.port, https_of(pc))).collect();
    let mut pools = build_pools(inputs, opts, &backends.names, &services, &mut warnings);
    pools.extend(backends.reserved_empty.into_iter().map(|p| (p.name.clone(), p)));
    let health_monitors = health_monitors(&pools, &services, opts, &mut warnings);
    warnings.sort();
    warnings.dedup();
    GatewayRouter {
        owner: routes.owner.clone(),
        name: routes.router.clone(),
        address: routes.address,
        http_port: http.map(|p| p.port),
        desired: DesiredRouter {
            policies,
            default_pool: backends.default_pool,
            default_pool_owners: Vec::new(),
            pools,
            warnings,
            https,
            redirects: Vec::new(),
            more_http,
            more_https,
            health_monitors,
            quota: None,
            empty_since: None,
        },
    }
}

/// The ports a router serves: the lowest HTTP port (the router's HTTP listener), the other HTTP
/// ports (one more listener each), the lowest HTTPS port (the router's HTTPS listener) and the
/// other HTTPS ports (one more TERMINATED_HTTPS listener each, with its own certificates and
/// client certificate validation).
struct ServedPorts<'a> {
    http: Option<&'a PortRoutes>,
    more_http: Vec<&'a PortRoutes>,
    https: Option<&'a PortRoutes>,
    more_https: Vec<&'a PortRoutes>,
}

fn served_ports(routes: &GatewayRoutes) -> ServedPorts<'_> {
    let mut out = ServedPorts { http: None, more_http: Vec::new(), https: None, more_https: Vec::new() };
    // Lowest port first, whatever the order of the Gateway's listeners.
    let mut ports: Vec<&PortRoutes> = routes.listeners.iter().collect();
    ports.sort_by_key(|p| p.port);
    for p in ports {
        match (p.protocol == Protocol::Http, out.http, out.https) {
            (true, None, _) => out.http = Some(p),
            (true, Some(_), _) => out.more_http.push(p),
            (false, _, None) => out.https = Some(p),
            (false, _, Some(_)) => out.more_https.push(p),
        }
    }
    out
}

/// What a rule's backends resolve against: the Services read, and the status responder's 500
/// port (the feed that answers an invalid backendRef's share of a split).
struct Backs<'a> {
    services: &'a Services<'a>,
    server_error: Option<PoolKey>,
}

/// The responder's 500 Service port, when a responder is configured and its Service has it.
fn server_error_key(opts: &TranslateOptions, services: &Services<'_>) -> Option<PoolKey> {
    let r = opts.status_responder.as_ref()?;
    let svc = services.get(&(r.namespace.as_str(), r.name.as_str()))?;
    let ports = svc.spec.as_ref()?.ports.as_ref()?;
    let p = ports
        .iter()
        .find(|p| p.name.as_deref() == Some(&r.server_error_port) || p.port.to_string() == r.server_error_port)?;
    Some(PoolKey { namespace: r.namespace.clone(), service: r.name.clone(), port: u16::try_from(p.port).ok()? })
}

/// The claims of one port's entries, in the spec's order (the entries are sorted).
fn claims(port: &PortRoutes, cx: &Backs<'_>) -> Vec<GatewayClaim> {
    port.entries.iter().enumerate().map(|(i, e)| claim(e, i, cx)).collect()
}

fn claim(e: &RouteEntry, position: usize, cx: &Backs<'_>) -> GatewayClaim {
    let (path, path_type, written) = match &e.path {
        gw::PathMatch::Exact(p) => (PathMatch::Exact(p.clone()), "Exact", p.clone()),
        gw::PathMatch::Prefix(p) => (PathMatch::Prefix(p.clone()), "PathPrefix", p.clone()),
        // The pure matcher anchors a regular expression at the path's start: so does the rule.
        gw::PathMatch::Regex(r) => (PathMatch::Regex(format!("^(?:{r})")), "RegularExpression", r.clone()),
    };
    let mut headers: Vec<HeaderMatch> = e
        .headers
        .iter()
        .map(|h| match h {
            gw::HeaderMatch::Exact { name, value } => {
                HeaderMatch { name: name.clone(), kind: HeaderMatchKind::Exact, value: value.clone() }
            }
            gw::HeaderMatch::Regex { name, value } => {
                HeaderMatch { name: name.clone(), kind: HeaderMatchKind::Regex, value: value.clone() }
            }
        })
        .collect();
    headers.sort();
    let claim = RouteClaim {
        host: e.host.clone().unwrap_or_default(),
        path,
        path_type: path_type.into(),
        path_as_written: written,
        headers,
        action: action(&e.action, cx),
        order: OrderKey(vec![OrderPart::Number(position as u64)]),
        owner: RouteOwner { object: e.owner.clone(), uid: None },
        origin: format!("spec.rules[{}]", e.rule).into(),
        fallback: false,
    };
    GatewayClaim { claim, excluded_hosts: e.excluded_hosts.clone() }
}

/// The claim's action. A backend whose Service or port is not (or no longer) among the
/// Services read is invalid, as an invalid backendRef is: the translation never builds a pool of
/// a Service it cannot see. An invalid backend's share of a rule that still serves is answered
/// 500 by the status responder (its 500 port feeds the split with that weight), as the spec
/// asks; without a responder it is dropped.
fn action(a: &Action, cx: &Backs<'_>) -> RouteAction {
    match a {
        Action::Fixed(_) => RouteAction::Fixed(FixedAnswer::ServerError),
        Action::Redirect(r) => RouteAction::Redirect(redirect_spec(&r.prefix, r.code)),
        Action::Forward { backends, .. } => {
            let resolved: Vec<(Option<PoolKey>, u32)> =
                backends.iter().map(|b| (valid_key(&b.target, cx.services), b.weight)).collect();
            if !resolved.iter().any(|(k, w)| k.is_some() && *w > 0) {
                return RouteAction::Fixed(FixedAnswer::ServerError);
            }
            let feeds = resolved
                .into_iter()
                .filter_map(|(k, weight)| Some(WeightedBackend { key: k.or_else(|| cx.server_error.clone())?, weight }))
                .collect();
            RouteAction::Forward(feeds)
        }
    }
}

/// The Service port of a backend, when it is a Service the translation read, with that port.
fn valid_key(target: &BackendTarget, services: &Services<'_>) -> Option<PoolKey> {
    let BackendTarget::Service { namespace, name, port } = target else { return None };
    let svc = services.get(&(namespace.as_str(), name.as_str()))?;
    let ports = svc.spec.as_ref().and_then(|s| s.ports.as_ref())?;
    ports.iter().any(|p| p.port == i32::from(*port)).then(|| PoolKey {
        namespace: namespace.clone(),
        service: name.clone(),
        port: *port,
    })
}

/// `scheme://host[:port]` (what `crate::gateway::redirect` builds) as a redirect spec.
fn redirect_spec(prefix: &str, code: u16) -> RedirectSpec {
    let (scheme, rest) = prefix.split_once("://").unwrap_or(("http", prefix));
    let (host, port) = match rest.rsplit_once(':') {
        Some((h, p)) if p.parse::<u16>().is_ok() => (h, p.parse().ok()),
        _ => (rest, None),
    };
    RedirectSpec { scheme: scheme.into(), host: host.into(), port, path: None, code }
}

/// The claim phase: the first claim of a match wins (they come in the spec's order), then back
/// to that order.
fn claimed(claims: Vec<GatewayClaim>, warnings: &mut Vec<Warning>) -> Vec<GatewayClaim> {
    let mut excluded: BTreeMap<OrderKey, Vec<String>> =
        claims.iter().map(|c| (c.claim.order.clone(), c.excluded_hosts.clone())).collect();
    let mut won = RouteTable::claim_all(claims.into_iter().map(|c| c.claim), warnings).routes();
    won.sort_by(|a, b| a.order.cmp(&b.order));
    won.into_iter()
        .map(|claim| {
            let excluded_hosts = excluded.remove(&claim.order).unwrap_or_default();
            GatewayClaim { claim, excluded_hosts }
        })
        .collect()
}

/// The rules of a claim: host (REGEX, case-insensitive in haproxy, any `:port`), path, headers,
/// then the excluded hosts as inverted host rules.
fn gateway_rules(c: &GatewayClaim) -> Vec<Rule> {
    ClaimRules::of(&c.claim, &c.excluded_hosts).into_rules()
}

/// Why Octavia would refuse the claim's rules, naming the route; `None` when it accepts them.
fn rules_problem(c: &GatewayClaim, rules: &[Rule]) -> Option<String> {
    let r = &c.claim;
    let why = if rules.len() > MAX_RULES {
        Some(format!("{} rules, Octavia allows {MAX_RULES} per policy", rules.len()))
    } else {
        r.headers.iter().find_map(header_problem).or_else(|| rules.iter().find_map(|rule| value_problem(&rule.value)))
    };
    why.map(|why| format!("{}: {} ({}) is not served: {why}", r.owner_ref(), r.describe(), r.origin()))
}

/// The order phase of a Gateway listener: its claims as policies, in the spec's order, each
/// redirect kept behind the forwarding policies before it (haproxy runs redirects first:
/// `super::redirect_order`).
fn listener_policies(claims: &[GatewayClaim], names: &PoolNames, warnings: &mut Vec<Warning>) -> Vec<Policy> {
    let mut listed = Vec::with_capacity(claims.len());
    for c in claims {
        let rules = gateway_rules(c);
        if let Some(msg) = rules_problem(c, &rules) {
            warn(warnings, c.claim.owner_ref(), Reason::InvalidRule, msg);
            continue;
        }
        let policy = policy_with_rules(&c.claim, rules, names);
        listed.push(Routed { claim: &c.claim, excluded: &c.excluded_hosts, policy });
    }
    let mut out = redirects_after_routes(listed, warnings);
    number(&mut out);
    out
}

/// The route rules of `routes` the router leaves out because Octavia cannot take their policies
/// (too many rules, a value Octavia refuses, a redirect over its budget behind the routes before
/// it): the `InvalidRule` warnings [`translate_gateway`] gives, for the routes' status
/// (`super::build`). Without the Services: a rule's backends never change whether its policy
/// can be written, nor whether it redirects.
pub(crate) fn unservable_rules(routes: &GatewayRoutes) -> Vec<Warning> {
    let services = Services::new();
    let cx = Backs { services: &services, server_error: None };
    let (mut claim_warnings, mut out) = (Vec::new(), Vec::new());
    for p in &routes.listeners {
        let won = claimed(claims(p, &cx), &mut claim_warnings);
        listener_policies(&won, &PoolNames::new(), &mut out);
    }
    out.retain(|w| w.reason == Reason::InvalidRule);
    out.sort();
    out.dedup();
    out
}

/// [`unservable_rules`] of each router, kept with the route table it was found in: the Gateway
/// loop's status pass runs on every Gateway API event, every data-plane change and every
/// recheck, mostly with the same tables, and the claim and policy phases (the redirects'
/// expansion above all) cost more than comparing a table with the one seen. A table that
/// changed is asked again (the answer is a function of the table alone, so a kept one is
/// never stale); a router gone is forgotten.
#[derive(Debug, Default)]
pub struct UnservableRules {
    by_router: BTreeMap<String, (GatewayRoutes, Vec<Warning>)>,
}

impl UnservableRules {
    /// Keep the answer of each of `routers` (the pass's), asking again only where a table changed.
    pub(crate) fn refresh(&mut self, routers: &[GatewayRoutes]) {
        let mut seen = std::mem::take(&mut self.by_router);
        for r in routers {
            let kept = match seen.remove(&r.router) {
                Some((table, rules)) if table == *r => (table, rules),
                _ => (r.clone(), unservable_rules(r)),
            };
            self.by_router.insert(r.router.clone(), kept);
        }
    }

    /// The route rules router `router` leaves out, as of the last [`Self::refresh`].
    pub(crate) fn of(&self, router: &str) -> &[Warning] {
        self.by_router.get(router).map_or(&[], |(_, rules)| rules.as_slice())
    }

    /// The routers whose answer is kept.
    #[cfg(test)]
    pub(crate) fn routers(&self) -> Vec<&str> {
        self.by_router.keys().map(String::as_str).collect()
    }
}

/// The HTTPS listener of port `p` with its certificates (from the listeners' Secrets; the first
/// one is served when SNI matches none) and its client certificate validation; policies and
/// default pool are set by the caller.
fn https_certificates(
    p: &PortRoutes,
    owner: &KubeRef,
    inputs: &View<'_>,
    warnings: &mut Vec<Warning>,
) -> HttpsListener {
    let certificates: BTreeMap<String, _> = p
        .certificates
        .iter()
        .map(|(ns, name)| {
            let c = listener_certificate(ns, name, Vec::new(), owner, inputs, warnings);
            (c.name.clone(), c)
        })
        .collect();
    let default_certificate = p
        .certificates
        .first()
        .map(|(ns, name)| crate::translate::names::certificate_name(ns, name))
        .unwrap_or_default();
    HttpsListener {
        port: p.port,
        certificates,
        default_certificate,
        policies: Vec::new(),
        default_pool: None,
        client_validation: p.client_validation.clone(),
    }
}

#[cfg(test)]
#[path = "router_tests.rs"]
mod tests;
