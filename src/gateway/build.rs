//! The whole translation: every GatewayClass, Gateway and HTTPRoute of ours in a [`World`] to
//! route tables and status outcomes. Pure and deterministic: the same world gives the same
//! output, whatever the order of its lists.

use super::api::{Gateway, HTTPRequestRedirectFilter, HTTPRoute};
use super::attach::{Attachment, attach, names_a_gateway, names_a_listener_set};
use super::backends::forward;
use super::frontend::insecure_fallback;
use super::holds::{RouterHold, RouterHolds, gateway_programmed, listener_programmed, route_dropped};
use super::host_owners::{GatewayHosts, ServedGateways, allowed, decide};
use super::hostnames::{is_wildcard, matches as host_matches, specificity};
use super::keep::{Fates, fates, translated};
use super::limits::{LIMIT_EXCEEDED, over_limits};
use super::listener_sets::{SetWork, add_set_plans, parent_target, sets_of};
use super::listeners::{ListenerPlan, plan};
use super::matches::{rule_matches, unsupported};
use super::precedence::{Origin, key};
use super::redirect::{RedirectFrom, octavia_redirect};
use super::router::UnservableRules;
use super::status::{
    ClassOutcome, Cond, GatewayOutcome, ListenerOutcome, ListenerSetOutcome, ParentOutcome, RouteOutcome,
};
use super::world::{World, name_of, ns_of};
use super::{Action, CONTROLLER_NAME, GatewayRoutes, PortRoutes, RouteEntry};
use crate::model::KubeRef;
use crate::translate::host_claims::HostClaim;
use crate::translate::tenancy::{HostOwners, RememberedOwners};
use std::collections::{BTreeMap, BTreeSet};

/// The addresses of each programmed Gateway's load balancer, by (namespace, name): the data
/// plane's answer. A Gateway absent here is not (yet) programmed.
pub type Programmed = BTreeMap<(String, String), Vec<String>>;

/// The error of each Gateway whose load balancer failed, by (namespace, name): the Gateway is
/// not programmed (`NoResources`, the message naming the error), whatever `Programmed` holds.
pub(crate) type RouterFailures = BTreeMap<(String, String), String>;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Translation {
    pub classes: Vec<ClassOutcome>,
    pub gateways: Vec<GatewayOutcome>,
    /// One per accepted Gateway of ours.
    pub routers: Vec<GatewayRoutes>,
    /// One per HTTPRoute with at least one parent of ours.
    pub routes: Vec<RouteOutcome>,
    /// One per ListenerSet naming a Gateway of ours.
    pub listener_sets: Vec<ListenerSetOutcome>,
    /// What becomes of the load balancers of the Gateways not served (see `super::keep`).
    pub fates: Fates,
    /// With host ownership (`World::hosts`): the hosts the Gateway API objects claim, for the
    /// Ingress side's owner index (`super::host_owners`); empty without.
    pub host_claims: Vec<HostClaim>,
    /// With host ownership: the owners to remember after this pass (None: without).
    pub remember: Option<RememberedOwners>,
}

impl Translation {
    pub fn gateway(&self, namespace: &str, name: &str) -> Option<&GatewayOutcome> {
        self.gateways.iter().find(|g| g.namespace == namespace && g.name == name)
    }

    pub fn route(&self, namespace: &str, name: &str) -> Option<&RouteOutcome> {
        self.routes.iter().find(|r| r.namespace == namespace && r.name == name)
    }

    pub fn listener_set(&self, namespace: &str, name: &str) -> Option<&ListenerSetOutcome> {
        self.listener_sets.iter().find(|s| s.namespace == namespace && s.name == name)
    }

    pub fn router(&self, namespace: &str, name: &str) -> Option<&GatewayRoutes> {
        self.routers.iter().find(|r| r.owner.namespace == namespace && r.owner.name == name)
    }
}

/// One Gateway of ours while translating.
struct GatewayWork<'a> {
    gw: &'a Gateway,
    /// The Gateway's own listeners, then those of the ListenerSets it admits.
    plans: Vec<ListenerPlan>,
    /// The ListenerSets naming it, admitted or not.
    sets: Vec<SetWork<'a>>,
    accepted: Cond,
    /// Per listener: the routes attached (namespace, name).
    attached: Vec<Vec<(String, String)>>,
    entries: Vec<(usize, RouteEntry)>,
    /// The names a request reaches this Gateway by, as far as we know them (see [`known_names`]).
    names: BTreeSet<String>,
    /// Over `gateways_per_namespace` or `gateways_per_cluster` (`super::limits`): no router.
    limited: bool,
}

pub fn translate(world: &World, programmed: &Programmed) -> Translation {
    translate_with_failures(world, programmed, &RouterFailures::new())
}

/// [`translate`] as a loop of passes runs it: `unservable` keeps each router's rules left out
/// from one pass to the next ([`UnservableRules`]), asked again only for a table that changed.
pub fn translate_reusing(world: &World, programmed: &Programmed, unservable: &mut UnservableRules) -> Translation {
    translate_observed(world, programmed, &RouterFailures::new(), &RouterHolds::new(), unservable)
}

/// [`translate`] with the data plane's failures as well as its addresses.
pub(crate) fn translate_with_failures(
    world: &World,
    programmed: &Programmed,
    failures: &RouterFailures,
) -> Translation {
    translate_observed(world, programmed, failures, &RouterHolds::new(), &mut UnservableRules::default())
}

/// [`translate_with_failures`] with the writes each router holds after its last Sync, and the
/// rules each router left out in the passes before (`unservable`, refreshed).
pub(crate) fn translate_observed(
    world: &World,
    programmed: &Programmed,
    failures: &RouterFailures,
    holds: &RouterHolds,
    unservable: &mut UnservableRules,
) -> Translation {
    let classes = world
        .classes
        .iter()
        .map(|c| &**c)
        .filter(|c| c.spec.controller_name == CONTROLLER_NAME)
        .map(|c| ClassOutcome { name: name_of(c), generation: c.metadata.generation, accepted: class_accepted(c) })
        .collect::<Vec<_>>();
    let mut work: BTreeMap<(String, String), GatewayWork<'_>> = BTreeMap::new();
    for gw in world.gateways.iter().map(|g| &**g).filter(|g| translated(world, g)) {
        let mut plans = plan(gw, world);
        let accepted = gateway_accepted(gw, world, &plans);
        let sets = sets_of(gw, world);
        add_set_plans(gw, &sets, world, &mut plans);
        let attached = vec![Vec::new(); plans.len()];
        let key = (ns_of(gw), name_of(gw));
        let mut names: BTreeSet<String> = programmed.get(&key).into_iter().flatten().cloned().collect();
        names.extend(plans.iter().filter_map(|l| l.hostname.clone()).filter(|h| !is_wildcard(h)));
        let entries = Vec::new();
        work.insert(key, GatewayWork { gw, plans, sets, accepted, attached, entries, names, limited: false });
    }
    let served: BTreeSet<(String, String)> =
        programmed.keys().chain(failures.keys()).chain(holds.keys()).cloned().collect();
    for (key, message) in over_limits(work.values().map(|w| w.gw), &served, &world.limits) {
        if let Some(w) = work.get_mut(&key) {
            w.accepted = Cond::no("Accepted", LIMIT_EXCEEDED, message);
            w.limited = true;
        }
    }
    known_names(world, &mut work);
    let hosts = world.hosts.as_ref().map(|t| {
        let served: ServedGateways<'_> =
            work.iter().filter(|(_, w)| w.accepted.ok).map(|(k, w)| (k.clone(), (w.gw, w.plans.as_slice()))).collect();
        decide(t, world, &served)
    });
    let owners = hosts.as_ref().map(|h| &h.owners);
    let mut routes: Vec<RouteOutcome> =
        world.routes.iter().filter_map(|r| route_parents(r, world, &mut work, holds, owners)).collect();
    routes.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    let mut gateways = Vec::new();
    let mut listener_sets = Vec::new();
    let mut routers = Vec::new();
    let mut fates = fates(world);
    for ((ns, name), w) in work {
        let key = (ns.clone(), name.clone());
        let observed = Observed {
            addresses: programmed.get(&key),
            failure: failures.get(&key),
            holds: holds.get(&key).map_or(&[], Vec::as_slice),
        };
        let (gateway, sets) = gateway_outcome(&ns, &name, &w, observed);
        gateways.push(gateway);
        listener_sets.extend(sets);
        let lb = super::naming::load_balancer_name(&ns, &name);
        if w.accepted.ok {
            routers.push(router(&ns, &name, w));
        } else if w.limited {
            // Over a limit: no load balancer is built for it; one built before the limit was
            // lowered keeps its last good state and its address (an operator's edit).
            fates.limited.insert(lb.clone());
            fates.kept.insert(lb, KubeRef::new("Gateway", &ns, &name));
        } else if !class_accepted_for(w.gw, world) {
            // The operator's class edit: every Gateway of the class keeps its last good state.
            fates.kept.insert(lb, KubeRef::new("Gateway", &ns, &name));
        } else {
            // The Gateway's own spec is not valid: its address stays, its routes do not.
            // Its valid listeners answer 503; with none, the router's HTTP listener does.
            fates.suspended.insert(lb);
            let mut w = w;
            w.entries.clear();
            routers.push(router(&ns, &name, w));
        }
    }
    let (host_claims, remember) = match hosts {
        Some(GatewayHosts { claims, remember, .. }) => (claims, Some(remember)),
        None => (Vec::new(), None),
    };
    listener_sets.sort_by(|a: &ListenerSetOutcome, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    unservable.refresh(&routers);
    mark_unservable(&mut routes, &routers, unservable, world);
    Translation { classes, gateways, routers, routes, listener_sets, fates, host_claims, remember }
}

/// `PartiallyInvalid` (`UnsupportedValue`) on each accepted parent of a route whose rules a
/// Gateway's router leaves out (`super::router::unservable_rules`, kept in `unservable`: e.g. a
/// redirect that would need more policies than its budget to stay behind the routes before
/// it), naming them.
fn mark_unservable(
    routes: &mut [RouteOutcome],
    routers: &[GatewayRoutes],
    unservable: &UnservableRules,
    world: &World,
) {
    for router in routers {
        let gw_key = (router.owner.namespace.clone(), router.owner.name.clone());
        for w in unservable.of(&router.router) {
            let (ns, name) = (&w.object.namespace, &w.object.name);
            let Some(route) = world.routes.iter().map(|r| &**r).find(|r| ns_of(*r) == *ns && name_of(*r) == *name)
            else {
                continue;
            };
            let Some(out) = routes.iter_mut().find(|o| o.namespace == *ns && o.name == *name) else { continue };
            for parent in &mut out.parents {
                let here = parent_target(route, &parent.parent_ref, world).is_some_and(|(k, _)| k == gw_key);
                if !here || !parent.conditions.iter().any(|c| c.kind == "Accepted" && c.ok) {
                    continue;
                }
                let dropped = format!("Dropped Rule(s): {}", w.message);
                match parent.conditions.iter_mut().find(|c| c.kind == "PartiallyInvalid") {
                    Some(c) if !c.message.contains(&w.message) => c.message = format!("{}; {dropped}", c.message),
                    Some(_) => {}
                    None => parent.conditions.push(Cond::yes("PartiallyInvalid", "UnsupportedValue", dropped)),
                }
            }
        }
    }
}

/// Whether the Gateway's class (ours) is accepted.
fn class_accepted_for(gw: &Gateway, world: &World) -> bool {
    world.class(&gw.spec.gateway_class_name).is_some_and(|c| c.spec.parameters_ref.is_none())
}

/// What the data plane reported of one Gateway's router.
struct Observed<'a> {
    addresses: Option<&'a Vec<String>>,
    failure: Option<&'a String>,
    holds: &'a [RouterHold],
}

fn class_accepted(c: &super::api::GatewayClass) -> Cond {
    match &c.spec.parameters_ref {
        Some(p) => Cond::no(
            "Accepted",
            "InvalidParameters",
            format!("parametersRef {}/{} {}: no parameters are supported", p.group, p.kind, p.name),
        ),
        None => Cond::yes("Accepted", "Accepted", "served by kuryr-l7-router"),
    }
}

fn gateway_accepted(gw: &Gateway, world: &World, plans: &[ListenerPlan]) -> Cond {
    let class = world.class(&gw.spec.gateway_class_name);
    if let Some(c) = class.filter(|c| c.spec.parameters_ref.is_some()) {
        return Cond::no("Accepted", "Invalid", format!("GatewayClass {} is not accepted", name_of(c)));
    }
    if let Some(p) = gw.spec.infrastructure.as_ref().and_then(|i| i.parameters_ref.as_ref()) {
        return Cond::no(
            "Accepted",
            "InvalidParameters",
            format!("spec.infrastructure.parametersRef {}/{} {}: no parameters are supported", p.group, p.kind, p.name),
        );
    }
    for (i, a) in gw.spec.addresses.iter().enumerate() {
        let t = a.address_type.as_deref().unwrap_or("IPAddress");
        let ip_ok = a.value.as_deref().is_none_or(|v| v.parse::<std::net::IpAddr>().is_ok());
        if t != "IPAddress" || !ip_ok {
            let m = format!("spec.addresses[{i}]: only IPAddress values (a floating IP) are supported");
            return Cond::no("Accepted", "UnsupportedAddress", m);
        }
    }
    // Its own listeners: a ListenerSet's invalid listener is the ListenerSet's concern.
    let own = plans.iter().filter(|p| p.set.is_none()).count();
    let invalid = plans.iter().filter(|p| p.set.is_none() && (!p.accepted.ok || p.conflicted.ok)).count();
    if invalid == 0 {
        Cond::yes("Accepted", "Accepted", "the Gateway is valid")
    } else if invalid == own {
        Cond::no("Accepted", "ListenersNotValid", "no listener is valid")
    } else {
        Cond::yes("Accepted", "ListenersNotValid", format!("{invalid} listener(s) are not valid"))
    }
}

/// Adds the exact hostnames of every route naming a Gateway, or a ListenerSet the Gateway
/// admits, to that Gateway's names, which start as its addresses (the data plane's) and its
/// listeners' exact hostnames (its ListenerSets' included): what external-dns publishes for it,
/// and what a client sends as `Host` when it uses the address. A redirect that keeps the
/// request's host is served for these names (see [`entries`]). A route reaching the Gateway
/// only through a ListenerSet names it as much as one naming the Gateway: without its names, a
/// keep-the-host redirect on a ListenerSet's wildcard listener answered 500 for them. A
/// ListenerSet the Gateway does not admit adds none: a namespace the Gateway does not let in
/// spends none of its rule budget.
fn known_names(world: &World, work: &mut BTreeMap<(String, String), GatewayWork<'_>>) {
    for route in world.routes.iter().map(|r| &**r) {
        for p in route.spec.parent_refs.iter().filter(|p| names_a_gateway(p) || names_a_listener_set(p)) {
            let Some((gw_key, set)) = parent_target(route, p, world) else { continue };
            let Some(w) = work.get_mut(&gw_key) else { continue };
            if set.as_ref().is_none_or(|k| admits_set(w, k)) {
                w.names.extend(route.spec.hostnames.iter().filter(|h| !is_wildcard(h)).cloned());
            }
        }
    }
}

/// Whether the Gateway being translated admits its ListenerSet `set` (namespace, name).
fn admits_set(w: &GatewayWork<'_>, set: &(String, String)) -> bool {
    w.sets.iter().any(|s| s.admitted && (ns_of(s.ls), name_of(s.ls)) == *set)
}

/// The route's outcome on each of its parents of ours; records attachments and entries.
fn route_parents(
    route: &HTTPRoute,
    world: &World,
    work: &mut BTreeMap<(String, String), GatewayWork<'_>>,
    holds: &RouterHolds,
    owners: Option<&HostOwners>,
) -> Option<RouteOutcome> {
    let refused = unsupported(route);
    let rules: Vec<_> = route.spec.rules.iter().enumerate().map(|(i, r)| forward(route, i, r, world)).collect();
    let resolved = match rules.iter().flat_map(|(_, p)| p).next() {
        Some(p) => Cond::no("ResolvedRefs", p.reason, p.message.clone()),
        None => Cond::yes("ResolvedRefs", "ResolvedRefs", "all backendRefs are resolved"),
    };
    let actions: Vec<Action> = rules.into_iter().map(|(a, _)| a).collect();
    let mut parents = Vec::new();
    for p in route.spec.parent_refs.iter().filter(|p| names_a_gateway(p) || names_a_listener_set(p)) {
        let Some((gw_key, set)) = parent_target(route, p, world) else { continue };
        let Some(w) = work.get_mut(&gw_key) else { continue };
        // Host ownership: the hostnames another namespace owns are not served here (through a
        // ListenerSet: unless the ListenerSet's own namespace owns them).
        let mut partial = None;
        let listeners_ns = set.as_ref().map_or(&gw_key.0, |k| &k.0).clone();
        let admitted = set.as_ref().is_none_or(|k| admits_set(w, k));
        let attached = if admitted {
            attach(route, p, w.gw, set.as_ref(), &w.plans, world)
        } else {
            let m =
                format!("ListenerSet {}/{} is not admitted by Gateway {}/{}", p_ns(&set), p.name, gw_key.0, gw_key.1);
            Err(Cond::no("Accepted", "NotAllowedByListeners", m))
        };
        let attached = attached.and_then(|att| match owners {
            Some(o) => allowed(o, route, &listeners_ns, att).map(|(att, p)| {
                partial = p;
                att
            }),
            None => Ok(att),
        });
        let accepted = match attached {
            Err(c) => c,
            // Its Gateway has no load balancer: the route is not served there, and says so.
            Ok(_) if w.limited => Cond::no(
                "Accepted",
                LIMIT_EXCEEDED,
                format!("Gateway {}/{} is not served: {}", gw_key.0, gw_key.1, w.accepted.message),
            ),
            Ok(_) if refused.is_some() => Cond::no("Accepted", "UnsupportedValue", refused.clone().unwrap_or_default()),
            Ok(att) => match entries(route, &att, w, &actions) {
                Err(m) => Cond::no("Accepted", "UnsupportedValue", m),
                Ok(es) => {
                    for a in &att {
                        let key = (ns_of(route), name_of(route));
                        if !w.attached[a.listener].contains(&key) {
                            w.attached[a.listener].push(key);
                        }
                    }
                    w.entries.extend(es);
                    Cond::yes("Accepted", "Accepted", "attached")
                }
            },
        };
        let dropped = accepted
            .ok
            .then(|| route_dropped(&ns_of(route), &name_of(route), holds.get(&gw_key).map_or(&[], Vec::as_slice)))
            .flatten();
        let partial = match (partial.filter(|_| accepted.ok), dropped) {
            (Some(mut a), Some(b)) => {
                a.message = format!("{}; {}", b.message, a.message);
                Some(a)
            }
            (a, b) => a.or(b),
        };
        let mut conditions = vec![accepted, resolved.clone()];
        conditions.extend(partial);
        parents.push(ParentOutcome { parent_ref: p.clone(), conditions });
    }
    (!parents.is_empty()).then(|| RouteOutcome {
        namespace: ns_of(route),
        name: name_of(route),
        generation: route.metadata.generation,
        parents,
    })
}

/// The namespace of a ListenerSet key.
fn p_ns(set: &Option<(String, String)>) -> &str {
    set.as_ref().map_or("", |k| k.0.as_str())
}

/// The route's entries on its attached listeners, each tagged with its listener index; `Err`
/// when a redirect cannot be served on one of them (the route is then not served there at all).
fn entries(
    route: &HTTPRoute,
    att: &[Attachment],
    w: &GatewayWork<'_>,
    actions: &[Action],
) -> Result<Vec<(usize, RouteEntry)>, String> {
    let (ns, name) = (ns_of(route), name_of(route));
    let owner = KubeRef::new("HTTPRoute", &ns, &name);
    let mut out = Vec::new();
    for a in att {
        let l = &w.plans[a.listener];
        let Some(protocol) = l.protocol else { continue };
        for host in &a.hosts {
            let Some(excluded_hosts) = excluded(&w.plans, a.listener, host.as_deref()) else { continue };
            for (ri, rule) in route.spec.rules.iter().enumerate() {
                let redirect =
                    rule.filters.iter().enumerate().find_map(|(fi, f)| f.request_redirect.as_ref().map(|r| (fi, r)));
                let served = match redirect {
                    Some((fi, r)) => {
                        let field = format!("spec.rules[{ri}].filters[{fi}]");
                        let from = RedirectFrom { protocol, port: l.port, host: host.as_deref() };
                        redirects(r, from, &w.names, &excluded_hosts, &field)?
                    }
                    None => vec![(host.clone(), actions[ri].clone())],
                };
                for (mi, m) in rule_matches(rule).into_iter().enumerate() {
                    let origin = Origin {
                        created: route.metadata.creation_timestamp.as_ref(),
                        namespace: &ns,
                        name: &name,
                        rule: ri,
                        matched: mi,
                    };
                    // The route's own host orders the entries, also those of a redirect served
                    // per name: the names take no precedence the route does not have.
                    let order = key(host.as_deref(), &m, origin);
                    for (entry_host, action) in &served {
                        let entry = RouteEntry {
                            key: order.clone(),
                            host: entry_host.clone(),
                            excluded_hosts: excluded_hosts.clone(),
                            path: m.path.clone(),
                            headers: m.headers.clone(),
                            action: action.clone(),
                            owner: owner.clone(),
                            rule: ri,
                        };
                        out.push((a.listener, entry));
                    }
                }
            }
        }
    }
    Ok(out)
}

/// The entries of a redirect filter at `from` (host, action). Octavia's redirect prefix is a
/// literal `scheme://host[:port]`, so a redirect that keeps the request's host (no
/// `requestRedirect.hostname`) on a route entry without one exact host is served per name:
/// one entry for each known name of the Gateway that the entry's host matches (its addresses,
/// the exact hostnames of its listeners and routes, those of its admitted ListenerSets and of
/// the routes attached through them: the names clients use), each redirecting to
/// that same name, and for any other host the rule answers 500 (the status responder's "no valid
/// backend"): never a redirect to a host the client did not ask for.
fn redirects(
    r: &HTTPRequestRedirectFilter,
    from: RedirectFrom<'_>,
    names: &BTreeSet<String>,
    excluded_hosts: &[String],
    field: &str,
) -> Result<Vec<(Option<String>, Action)>, String> {
    let keeps_host = r.hostname.is_none() && from.host.is_none_or(is_wildcard);
    if !keeps_host {
        return Ok(vec![(from.host.map(str::to_string), Action::Redirect(octavia_redirect(r, from, field)?))]);
    }
    let mut out = Vec::new();
    let reaches = |n: &&String| {
        from.host.is_none_or(|h| host_matches(h, n)) && !excluded_hosts.iter().any(|x| host_matches(x, n))
    };
    for n in names.iter().filter(reaches) {
        let at = RedirectFrom { host: Some(n), ..from };
        out.push((Some(n.clone()), Action::Redirect(octavia_redirect(r, at, field)?)));
    }
    out.push((from.host.map(str::to_string), Action::Fixed(500)));
    Ok(out)
}

/// The hostnames of more specific listeners on the same port that `host` (through listener
/// `i`) would otherwise catch: a request goes to the most specific matching listener only.
/// `None` when every name `host` covers is owned by such a listener (the entry can never match:
/// an exact name, or a wildcard equal to or under the sibling's, e.g. a route's `*.example.com`
/// through a host-less listener beside a `*.example.com` listener).
fn excluded(plans: &[ListenerPlan], i: usize, host: Option<&str>) -> Option<Vec<String>> {
    let me = &plans[i];
    let mut out = Vec::new();
    for (j, other) in plans.iter().enumerate() {
        let Some(h2) = other.hostname.as_deref() else { continue };
        if j == i || other.port != me.port || !other.programmable() {
            continue;
        }
        let more_specific = specificity(Some(h2)) < specificity(me.hostname.as_deref())
            && me
                .hostname
                .as_deref()
                .is_none_or(|mine| host_matches(mine, h2) || host_matches(mine, h2.trim_start_matches("*.")));
        if !more_specific {
            continue;
        }
        match host {
            // Every name `h` covers (an exact name, or a wildcard equal to or under `h2`) is the
            // sibling's: a policy for it could never match, and would spend the rule budget.
            Some(h) if host_matches(h2, h) => return None,
            Some(h) if h.starts_with("*.") => {
                if host_matches(h, h2) || host_matches(h, h2.trim_start_matches("*.")) {
                    out.push(h2.to_string());
                }
            }
            Some(_) => {}
            None => out.push(h2.to_string()),
        }
    }
    out.sort();
    Some(out)
}

/// `Programmed` of a Gateway whose load balancer failed: `AddressNotUsable` when what failed is
/// its static address (the driver's `floating_ip` errors: no such floating IP in the project, or
/// one on another port), else `NoResources`; the message names the error.
/// The label of a Gateway router's failure that is a refusal before its create (no room for
/// its load balancer or floating IP under the project's quotas): `NoResources`, with no
/// load balancer.
pub const NOT_CREATED_LABEL: &str = "not_created";

fn failed(gw: &Gateway, e: &str) -> Cond {
    // The driver's failures read `<label>: <error>` (`controller::gateway::driver`).
    let label = e.split_once(':').map(|(l, _)| l);
    if let Some((NOT_CREATED_LABEL, why)) = e.split_once(':') {
        Cond::no("Programmed", "NoResources", format!("no load balancer is created:{why}"))
    } else if gw.spec.addresses.iter().any(|a| a.value.is_some())
        && label == Some(crate::driver::error::FLOATING_IP_LABEL)
    {
        // Only a static address can be unusable; one without a value (GatewayAddressEmpty) is
        // allocated, and its failure is the load balancer's.
        Cond::no("Programmed", "AddressNotUsable", format!("spec.addresses[0] cannot be used: {e}"))
    } else {
        Cond::no("Programmed", "NoResources", format!("the load balancer failed: {e}"))
    }
}

fn gateway_outcome(
    ns: &str,
    name: &str,
    w: &GatewayWork<'_>,
    observed: Observed<'_>,
) -> (GatewayOutcome, Vec<ListenerSetOutcome>) {
    let Observed { addresses, failure, holds } = observed;
    let programmed_gw = w.accepted.ok && addresses.is_some() && failure.is_none();
    let programmed = if !w.accepted.ok {
        Cond::no("Programmed", "Invalid", "the Gateway is not accepted")
    } else if let Some(e) = failure {
        failed(w.gw, e)
    } else if let Some(held) = gateway_programmed(holds).filter(|_| programmed_gw) {
        held
    } else if let Some(extra) = w.gw.spec.addresses.get(1) {
        // One floating IP per load balancer: the Gateway is served on its first address only.
        let m = format!(
            "spec.addresses[1] ({}): an Octavia load balancer has one floating IP; only spec.addresses[0] is served",
            extra.value.as_deref().unwrap_or_default()
        );
        Cond::no("Programmed", "AddressNotUsable", m)
    } else if programmed_gw {
        Cond::yes("Programmed", "Programmed", "the load balancer serves the Gateway")
    } else {
        Cond::no("Programmed", "Pending", "waiting for the load balancer")
    };
    let listener = |(p, att): (&ListenerPlan, &Vec<(String, String)>)| {
        let held = || listener_programmed(&p.name, p.protocol, att, holds);
        let prog = if p.set.is_some() && p.conflicted.ok {
            // A ListenerSet's listener that lost a conflict: the spec's reason is the conflict.
            Cond::no("Programmed", &p.conflicted.reason, p.conflicted.message.clone())
        } else if !p.programmable() {
            Cond::no("Programmed", "Invalid", format!("listener {} is not valid", p.name))
        } else if let Some(c) = held().filter(|_| programmed_gw) {
            c
        } else if programmed_gw {
            Cond::yes("Programmed", "Programmed", format!("listener {} is served", p.name))
        } else {
            Cond::no("Programmed", "Pending", "waiting for the load balancer")
        };
        ListenerOutcome {
            name: p.name.clone(),
            supported_kinds: p.supported_kinds.clone(),
            attached_routes: i32::try_from(att.len()).unwrap_or(i32::MAX),
            conditions: vec![p.accepted.clone(), p.resolved_refs.clone(), p.conflicted.clone(), prog],
        }
    };
    let of = |set: Option<&(String, String)>| -> Vec<ListenerOutcome> {
        w.plans.iter().zip(&w.attached).filter(|(p, _)| p.set.as_ref() == set).map(listener).collect()
    };
    let listeners = of(None);
    let addresses = addresses
        .into_iter()
        .flatten()
        .map(|v| super::api::GatewayStatusAddress { address_type: "IPAddress".into(), value: v.clone() })
        .collect();
    let sets: Vec<ListenerSetOutcome> = w
        .sets
        .iter()
        .map(|s| {
            let key = (ns_of(s.ls), name_of(s.ls));
            super::listener_sets::outcome(s, &w.accepted, &programmed, of(Some(&key)))
        })
        .collect();
    let attached_listener_sets = sets.iter().filter(|s| s.condition("Accepted").is_some_and(|c| c.ok)).count();
    let mut conditions = vec![w.accepted.clone(), programmed];
    conditions.extend(insecure_fallback(w.gw));
    let gateway = GatewayOutcome {
        namespace: ns.into(),
        name: name.into(),
        generation: w.gw.metadata.generation,
        conditions,
        addresses,
        listeners,
        attached_listener_sets: i32::try_from(attached_listener_sets).unwrap_or(i32::MAX),
    };
    (gateway, sets)
}

fn router(ns: &str, name: &str, w: GatewayWork<'_>) -> GatewayRoutes {
    let mut ports: BTreeMap<u16, PortRoutes> = BTreeMap::new();
    for p in w.plans.iter().filter(|p| p.programmable()) {
        let Some(protocol) = p.protocol else { continue };
        let e = ports.entry(p.port).or_insert_with(|| PortRoutes {
            port: p.port,
            protocol,
            listener_names: Vec::new(),
            certificates: Vec::new(),
            // One per port: every HTTPS listener of the port has the port's validation.
            client_validation: p.client_validation.clone(),
            entries: Vec::new(),
        });
        e.listener_names.push(p.name.clone());
        for c in &p.certificates {
            if !e.certificates.contains(c) {
                e.certificates.push(c.clone());
            }
        }
    }
    for (li, entry) in w.entries {
        let port = w.plans[li].port;
        if let Some(pr) = ports.get_mut(&port).filter(|_| w.plans[li].programmable()) {
            pr.entries.push(entry);
        }
    }
    for pr in ports.values_mut() {
        pr.entries.sort_by(|a, b| a.key.cmp(&b.key));
    }
    GatewayRoutes {
        owner: KubeRef::new("Gateway", ns, name),
        router: super::naming::load_balancer_name(ns, name),
        listeners: ports.into_values().collect(),
        address: w.gw.spec.addresses.iter().find_map(|a| a.value.as_deref()?.parse().ok()),
    }
}

#[cfg(test)]
#[path = "build_tests.rs"]
mod tests;
