//! Host ownership (`[kubernetes] host_ownership`) for the Gateway API, pure: one owner index with
//! the Ingresses ([`crate::translate::tenancy::HostOwners`]), so that the first claim of a host
//! wins whichever kind makes it.
//!
//! What claims a host (decided oldest first by creationTimestamp, then namespace and name):
//! - an HTTPRoute: each of its **effective hostnames** on a listener of a Gateway of ours that
//!   is served, i.e. its hostnames intersected with the listener's (`super::hostnames`): the
//!   names it is served for, and that external-dns publishes. A route without hostnames on a
//!   listener without one serves "any host": it claims nothing (as a host-less Ingress rule);
//! - a Gateway of ours that is served: each exact hostname of its valid listeners, for the
//!   Gateway's namespace (a listener reserves its name as an Ingress rule does). A wildcard
//!   listener hostname claims nothing: it delegates the names under it to the routes it admits,
//!   whose effective hostnames are the claims. Were it a claim, its wildcard would own every
//!   name under it for the Gateway's namespace, and two tenants' routes on one shared wildcard
//!   Gateway would never be told apart (nor could another namespace's Ingress name one);
//! - an Ingress of ours: its rule and TLS hosts (`crate::translate::host_claims`).
//!
//! Wildcards are owned as on the Ingress side: `*.example.com` is a host of its own, and also
//! owns each one-label host it covers that nobody claimed before it.
//!
//! A route's effective hostname is refused when its owner's namespace is neither the route's
//! nor its Gateway's: a Gateway's owner delegates its hosts to the routes its `allowedRoutes`
//! admit (a shared Gateway of an infrastructure namespace, tenants' routes attached to it),
//! and never to a Gateway of another namespace. A refused hostname is not served on that
//! parent; with none left the parent gets `Accepted: False`, reason `NotAllowedByListeners`,
//! the message naming the owner; with some left, `PartiallyInvalid: True` naming the refused.

use super::api::{Gateway, HTTPRoute};
use super::attach::{Attachment, attach, names_a_gateway, names_a_listener_set};
use super::hostnames::is_wildcard;
use super::listener_sets::parent_target;
use super::listeners::ListenerPlan;
use super::status::Cond;
use super::world::{HostTenancy, World, name_of, ns_of};
use crate::model::KubeRef;
use crate::translate::TranslateOptions;
use crate::translate::host_claims::HostClaim;
use crate::translate::host_claims::ingress_claims;
use crate::translate::ingress_class::{our_class, ours_by_age};
use crate::translate::options::Source;
use crate::translate::tenancy::{HostOwners, RememberedOwners, stored_owners};
use std::collections::BTreeMap;

/// What host ownership for the Gateways reads of the Ingress side (`inputs`: our Ingresses
/// among them, and our IngressClass): their claims, and the owners remembered in `remembered`
/// (the controller's store) or else on our IngressClass, as the Ingress translation reads them.
/// `None` with host ownership off. The controller's Gateway loop and the offline `plan` and
/// `apply` both start from it, so that both decide one owner index the same way.
pub fn ingress_tenancy(
    inputs: &(impl Source + ?Sized),
    opts: &TranslateOptions,
    remembered: Option<RememberedOwners>,
) -> Option<HostTenancy> {
    if !opts.tenancy.host_ownership {
        return None;
    }
    let view = inputs.view();
    let ours = ours_by_age(&view, opts);
    let remembered = remembered.unwrap_or_else(|| stored_owners(our_class(&view.ingress_classes, opts)));
    Some(HostTenancy {
        ingress_claims: ingress_claims(&ours),
        remembered,
        now: Some(view.now.unwrap_or_else(std::time::SystemTime::now)),
        grace: opts.tenancy.host_ownership_grace,
    })
}

/// The served Gateways of ours, by (namespace, name), with their listener plans.
pub(crate) type ServedGateways<'a> = BTreeMap<(String, String), (&'a Gateway, &'a [ListenerPlan])>;

/// The hosts the Gateway API objects of `world` claim (see the module docs).
pub(crate) fn gateway_claims(world: &World, served: &ServedGateways<'_>) -> Vec<HostClaim> {
    let mut out = Vec::new();
    for (gw, plans) in served.values() {
        let gw_ref = KubeRef::new("Gateway", &ns_of(*gw), &name_of(*gw));
        for p in plans.iter().filter(|p| p.programmable()) {
            let Some(h) = p.hostname.as_deref().filter(|h| !is_wildcard(h)) else { continue };
            // A ListenerSet's listener claims its hostname for the ListenerSet's namespace.
            let by = match &p.set {
                Some((ns, name)) => KubeRef::new("ListenerSet", ns, name),
                None => gw_ref.clone(),
            };
            out.push(HostClaim::new(h, by, gw.metadata.creation_timestamp.as_ref()));
        }
    }
    for route in world.routes.iter().map(|r| &**r) {
        let by = KubeRef::new("HTTPRoute", &ns_of(route), &name_of(route));
        for p in route.spec.parent_refs.iter().filter(|p| names_a_gateway(p) || names_a_listener_set(p)) {
            let Some((gw_key, set)) = parent_target(route, p, world) else { continue };
            let Some((gw, plans)) = served.get(&gw_key) else { continue };
            for a in attach(route, p, gw, set.as_ref(), plans, world).unwrap_or_default() {
                for h in a.hosts.iter().flatten() {
                    let claim = HostClaim::new(h, by.clone(), route.metadata.creation_timestamp.as_ref());
                    if !out.contains(&claim) {
                        out.push(claim);
                    }
                }
            }
        }
    }
    out
}

/// The owner index of both kinds, and what to remember after this pass.
#[derive(Clone, Debug, Default)]
pub(crate) struct GatewayHosts {
    pub owners: HostOwners,
    /// The Gateway API's claims (for the Ingress side).
    pub claims: Vec<HostClaim>,
    /// The owners to remember after this pass.
    pub remember: RememberedOwners,
}

/// The owners of every host claimed by the Ingresses and the Gateway API objects of `world`.
pub(crate) fn decide(t: &HostTenancy, world: &World, served: &ServedGateways<'_>) -> GatewayHosts {
    let claims = gateway_claims(world, served);
    let mut all = t.ingress_claims.clone();
    all.extend(claims.iter().cloned());
    let owners = HostOwners::of_claims(&all, &t.remembered, t.now, t.grace);
    let remember = owners.remember(&all, &t.remembered, t.now);
    GatewayHosts { owners, claims, remember }
}

/// `att` without the hostnames that host ownership refuses to `route` through the Gateway of
/// namespace `gw_ns`; `Err` with the `Accepted: False` condition when none is left, else the
/// `PartiallyInvalid` condition naming the refused ones, if any.
pub(crate) fn allowed(
    owners: &HostOwners,
    route: &HTTPRoute,
    gw_ns: &str,
    att: Vec<Attachment>,
) -> Result<(Vec<Attachment>, Option<Cond>), Cond> {
    let me = KubeRef::new("HTTPRoute", &ns_of(route), &name_of(route));
    let mut refused: Vec<String> = Vec::new();
    let mut kept = Vec::new();
    for mut a in att {
        a.hosts.retain(|h| {
            let Some(h) = h.as_deref() else { return true };
            let Some(owner) = owners.refuses(&me.namespace, h).filter(|o| o.namespace != gw_ns) else { return true };
            let m = HostOwners::message(&me, "spec.hostnames", h, owner);
            if !refused.contains(&m) {
                refused.push(m);
            }
            false
        });
        if !a.hosts.is_empty() {
            kept.push(a);
        }
    }
    if refused.is_empty() {
        return Ok((kept, None));
    }
    let message = refused.join("; ");
    if kept.is_empty() {
        return Err(Cond::no("Accepted", "NotAllowedByListeners", message));
    }
    Ok((kept, Some(Cond::yes("PartiallyInvalid", "UnsupportedValue", message))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gateway::build::{Programmed, translate};
    use crate::gateway::world::world;
    use crate::translate::host_claims::ingress_claims;
    use crate::translate::tenancy::RememberedOwner;
    use k8s_openapi::api::networking::v1::Ingress;
    use std::time::Duration;

    const CLASS: &str = "kind: GatewayClass\napiVersion: gateway.networking.k8s.io/v1\nmetadata: {name: kuryr}\nspec: {controllerName: openstack.org/kuryr-l7-router}\n";

    /// A Gateway `ns/name` (created on `day`) with one HTTP listener (hostname `listener`, all
    /// namespaces admitted).
    fn gateway(ns: &str, name: &str, day: u32, listener: Option<&str>) -> String {
        let host = listener.map_or(String::new(), |h| format!(", hostname: \"{h}\""));
        format!(
            "---\nkind: Gateway\napiVersion: gateway.networking.k8s.io/v1\nmetadata: {{name: {name}, namespace: {ns}, creationTimestamp: \"2024-01-{day:02}T00:00:00Z\"}}\n\
spec:\n  gatewayClassName: kuryr\n  listeners:\n  - {{name: http, port: 80, protocol: HTTP{host}, allowedRoutes: {{namespaces: {{from: All}}}}}}\n"
        )
    }

    fn route(ns: &str, name: &str, day: u32, gw: (&str, &str), hosts: &[&str]) -> String {
        format!(
            "---\nkind: HTTPRoute\napiVersion: gateway.networking.k8s.io/v1\nmetadata: {{name: {name}, namespace: {ns}, creationTimestamp: \"2024-01-{day:02}T00:00:00Z\"}}\n\
spec:\n  parentRefs: [{{name: {}, namespace: {}}}]\n  hostnames: {hosts:?}\n  rules: [{{backendRefs: [{{name: web, port: 80}}]}}]\n",
            gw.1, gw.0
        )
    }

    fn ingress(ns: &str, name: &str, day: u32, host: &str) -> Ingress {
        serde_json::from_value(serde_json::json!({
            "metadata": {"namespace": ns, "name": name, "creationTimestamp": format!("2024-01-{day:02}T00:00:00Z")},
            "spec": {"rules": [{"host": host}]},
        }))
        .unwrap()
    }

    /// Each route's (Accepted reason, message) on its parent, and the hosts its Gateway serves.
    fn outcome(yaml: &str, ingresses: &[Ingress], remembered: RememberedOwners) -> BTreeMap<String, (String, String)> {
        let mut w = world(&format!("{CLASS}{yaml}"));
        let ours: Vec<&Ingress> = ingresses.iter().collect();
        w.hosts = Some(HostTenancy {
            ingress_claims: ingress_claims(&ours),
            remembered,
            now: None,
            grace: Duration::from_secs(3600),
        });
        let t = translate(&w, &Programmed::new());
        let mut out = BTreeMap::new();
        for r in &t.routes {
            let conds = &r.parents[0].conditions;
            let accepted = conds.iter().find(|c| c.kind == "Accepted").unwrap();
            let partial = conds.iter().find(|c| c.kind == "PartiallyInvalid").map(|c| format!(" | {}", c.message));
            let reason = if accepted.ok { "Accepted".to_string() } else { accepted.reason.to_string() };
            out.insert(
                format!("{}/{}", r.namespace, r.name),
                (reason, format!("{}{}", accepted.message, partial.unwrap_or_default())),
            );
        }
        for router in &t.routers {
            let hosts: Vec<String> =
                router.listeners.iter().flat_map(|l| &l.entries).filter_map(|e| e.host.clone()).collect();
            out.insert(format!("router {}", router.owner), ("hosts".into(), hosts.join(",")));
        }
        out
    }

    #[test]
    fn the_first_claim_wins_whichever_kind_makes_it() {
        let none = RememberedOwners::new;
        // (case, yaml, ingresses, route, want reason, message fragment)
        type Case = (&'static str, String, Vec<Ingress>, &'static str, &'static str, &'static str);
        let cases: Vec<Case> = vec![
            (
                "an older Ingress of a owns the host: b's route on b's Gateway is refused",
                gateway("b", "gw", 1, None) + &route("b", "r", 3, ("b", "gw"), &["shop.example.com"]),
                vec![ingress("a", "shop", 2, "shop.example.com")],
                "b/r",
                "NotAllowedByListeners",
                "belongs to namespace a (claimed first by Ingress a/shop)",
            ),
            (
                "b's route is older than a's Ingress: accepted",
                gateway("b", "gw", 1, None) + &route("b", "r", 1, ("b", "gw"), &["shop.example.com"]),
                vec![ingress("a", "shop", 2, "shop.example.com")],
                "b/r",
                "Accepted",
                "attached",
            ),
            (
                "same namespace: both kinds coexist",
                gateway("a", "gw", 1, None) + &route("a", "r", 3, ("a", "gw"), &["shop.example.com"]),
                vec![ingress("a", "shop", 2, "shop.example.com")],
                "a/r",
                "Accepted",
                "attached",
            ),
            (
                "a Gateway listener hostname of a claims it: b's older route through b's Gateway is refused",
                gateway("a", "gw", 1, Some("shop.example.com"))
                    + &gateway("b", "gw", 2, None)
                    + &route("b", "r", 3, ("b", "gw"), &["shop.example.com"]),
                vec![],
                "b/r",
                "NotAllowedByListeners",
                "claimed first by Gateway a/gw",
            ),
            (
                "a's Gateway delegates its listener's host to the routes it admits: b's route on it is served",
                gateway("a", "gw", 1, Some("shop.example.com"))
                    + &route("b", "r", 3, ("a", "gw"), &["shop.example.com"]),
                vec![],
                "b/r",
                "Accepted",
                "attached",
            ),
            (
                "on infra's shared wildcard Gateway, a's older route owns its host: b's route for it is refused",
                gateway("infra", "gw", 1, Some("*.example.com"))
                    + &route("a", "first", 2, ("infra", "gw"), &["app.example.com"])
                    + &route("b", "r", 3, ("infra", "gw"), &["app.example.com"]),
                vec![],
                "b/r",
                "NotAllowedByListeners",
                "claimed first by HTTPRoute a/first",
            ),
            (
                "a wildcard listener claims nothing: b's Ingress-free route under it on b's Gateway is served",
                gateway("a", "gw", 1, Some("*.example.com"))
                    + &gateway("b", "gw", 2, None)
                    + &route("b", "r", 3, ("b", "gw"), &["b.example.com"]),
                vec![],
                "b/r",
                "Accepted",
                "attached",
            ),
            (
                "a wildcard Ingress of a owns the one-label hosts under it claimed later",
                gateway("b", "gw", 1, None)
                    + &route("b", "r", 3, ("b", "gw"), &["x.apps.example.com", "free.example.com"]),
                vec![ingress("a", "apps", 2, "*.apps.example.com")],
                "b/r",
                "Accepted",
                "| HTTPRoute b/r: spec.hostnames for host x.apps.example.com refused",
            ),
            (
                "a route without hostnames on a listener without one claims nothing and is not refused",
                gateway("b", "gw", 1, None) + &route("b", "r", 3, ("b", "gw"), &[]),
                vec![ingress("a", "shop", 2, "shop.example.com")],
                "b/r",
                "Accepted",
                "attached",
            ),
        ];
        for (case, yaml, ings, r, reason, fragment) in cases {
            let out = outcome(&yaml, &ings, none());
            let (got, message) = &out[r];
            assert_eq!(got, reason, "{case}: {out:?}");
            assert!(message.contains(fragment), "{case}: {message}");
        }
    }

    #[test]
    fn a_refused_host_is_not_served_and_the_free_ones_are() {
        let yaml =
            gateway("b", "gw", 1, None) + &route("b", "r", 3, ("b", "gw"), &["shop.example.com", "b.example.com"]);
        let out = outcome(&yaml, &[ingress("a", "shop", 2, "shop.example.com")], RememberedOwners::new());
        assert_eq!(out["router Gateway b/gw"].1, "b.example.com");
        assert!(out["b/r"].1.contains("| HTTPRoute b/r: spec.hostnames for host shop.example.com refused"), "{out:?}");
    }

    #[test]
    fn a_remembered_owner_keeps_its_host_against_an_older_route() {
        let yaml = gateway("b", "gw", 1, None) + &route("b", "r", 1, ("b", "gw"), &["shop.example.com"]);
        let remembered = RememberedOwners::from([(
            "shop.example.com".to_string(),
            RememberedOwner { namespace: "a".into(), vacated: Some(1) },
        )]);
        let out = outcome(&yaml, &[], remembered);
        assert_eq!(out["b/r"].0, "NotAllowedByListeners");
        assert!(out["b/r"].1.contains("host_ownership_grace_period"), "{out:?}");
    }

    #[test]
    fn without_host_ownership_nothing_is_refused() {
        let yaml =
            format!("{CLASS}{}{}", gateway("b", "gw", 1, None), route("b", "r", 3, ("b", "gw"), &["shop.example.com"]));
        let t = translate(&world(&yaml), &Programmed::new());
        assert!(t.routes[0].parents[0].conditions[0].ok);
        assert!(t.host_claims.is_empty() && t.remember.is_none());
    }
}
