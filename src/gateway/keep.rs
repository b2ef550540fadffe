//! What becomes of each Gateway's load balancer (and its floating IP), pure: it is deleted only
//! when the Gateway itself is deleted (see docs/gateway-api.md, "A Gateway keeps its address").
//!
//! Each Gateway of ours carries our finalizer ([`FINALIZER`]). A Gateway the translation serves
//! is a router of [`super::build::Translation::routers`]; every other Gateway of the cache falls
//! in one of these:
//! - `released`: being deleted (deletionTimestamp) with our finalizer: its load balancer is
//!   deleted, and only then is the finalizer removed.
//! - `kept`: not served now, but still there: its class is missing (a Helm reinstall deletes and
//!   re-creates it), not readable, not accepted (an operator's `parametersRef`), or another
//!   controller's while the Gateway still carries our finalizer; or the Gateway itself cannot be
//!   read (a newer CRD release). Its router keeps its last good state and its address: nothing
//!   the tenant did asked for a change, and a cluster-wide operator action must not take every
//!   tenant offline.
//! - `suspended` (decided by the translation): ours, but not accepted because of its own spec
//!   (every listener invalid, an unsupported address or parameters): its router keeps its
//!   address and listener port with no routes (the listener answers 503), as a Gateway that is
//!   not accepted must not keep serving what the user's edit meant to change.
//! - `kept` and `limited` (decided by the translation): over `gateways_per_namespace` or
//!   `gateways_per_cluster` (`super::limits`): no load balancer is built; one built before the
//!   limit was lowered is kept, with no grace.
//!
//! A Gateway of another controller's class without our finalizer is not ours: nothing is kept
//! for it (a load balancer of ours by its name, if any, is collected like a Gateway gone).

use super::api::Gateway;
use super::naming::load_balancer_name;
use super::world::{World, name_of, ns_of};
use super::{CONTROLLER_NAME, GatewayRoutes};
use crate::model::KubeRef;
use std::collections::{BTreeMap, BTreeSet};

/// Our finalizer on each Gateway of ours: the same name as on the Ingresses of ours.
pub const FINALIZER: &str = CONTROLLER_NAME;

/// The load balancers of the Gateways not served now (see the module docs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Fates {
    /// The routers kept as they are (no write): load-balancer name -> its Gateway.
    pub kept: BTreeMap<String, KubeRef>,
    /// Those of `kept` whose Gateway is over a limit (`super::limits`): not subject to
    /// `gateway_kept_grace`.
    pub limited: BTreeSet<String>,
    /// Load-balancer names of the routers served with no routes (their tables are in `routers`).
    pub suspended: BTreeSet<String>,
    /// The Gateways being deleted with our finalizer: their load balancers to delete.
    pub released: Vec<Released>,
    /// The Gateways of ours, not being deleted, without our finalizer yet.
    pub unfinalized: Vec<KubeRef>,
}

/// A Gateway being deleted whose load balancer is deleted before its finalizer is removed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Released {
    pub owner: KubeRef,
    /// Its load balancer's name.
    pub router: String,
}

/// What the Gateway loop hands the router driver: the route tables of the Gateways served and
/// the fates of the others, in one value so that the driver never sees one without the other.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tables {
    pub routers: Vec<GatewayRoutes>,
    pub fates: Fates,
}

pub fn has_finalizer(gw: &Gateway) -> bool {
    gw.metadata.finalizers.iter().flatten().any(|f| f == FINALIZER)
}

pub fn deleting(gw: &Gateway) -> bool {
    gw.metadata.deletion_timestamp.is_some()
}

/// Whether the translation serves the Gateway: ours and not being deleted.
pub(crate) fn translated(world: &World, gw: &Gateway) -> bool {
    world.is_ours(gw) && !deleting(gw)
}

/// The fates of the Gateways the translation does not serve, and the finalizers to add (see the
/// module docs). `suspended` and the `kept` Gateways of an unaccepted class of ours are the
/// translation's to add.
pub(crate) fn fates(world: &World) -> Fates {
    let mut f = Fates::default();
    for gw in world.gateways.iter().map(|g| &**g) {
        let (ns, name) = (ns_of(gw), name_of(gw));
        let router = load_balancer_name(&ns, &name);
        if deleting(gw) {
            if has_finalizer(gw) {
                f.released.push(Released { owner: KubeRef::new("Gateway", &ns, &name), router });
            }
            continue;
        }
        if world.is_ours(gw) {
            if !has_finalizer(gw) {
                f.unfinalized.push(KubeRef::new("Gateway", &ns, &name));
            }
            continue;
        }
        // Handed over: a class that exists, is readable and is another controller's.
        let handed_over = world
            .class(&gw.spec.gateway_class_name)
            .is_some_and(|c| !c.spec.controller_name.is_empty() && c.spec.controller_name != CONTROLLER_NAME);
        if has_finalizer(gw) || !handed_over {
            f.kept.insert(router, KubeRef::new("Gateway", &ns, &name));
        }
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gateway::world::world;

    fn objects(class: &str, gateway_meta: &str) -> String {
        format!(
            "kind: GatewayClass\napiVersion: gateway.networking.k8s.io/v1\nmetadata: {{name: kuryr}}\n\
spec: {{controllerName: {class}}}\n---\n\
kind: Gateway\napiVersion: gateway.networking.k8s.io/v1\nmetadata: {{name: gw, namespace: infra{gateway_meta}}}\n\
spec: {{gatewayClassName: kuryr, listeners: [{{name: http, port: 80, protocol: HTTP}}]}}\n"
        )
    }

    const FIN: &str = ", finalizers: [openstack.org/kuryr-l7-router]";
    const DELETING: &str = ", deletionTimestamp: '2026-01-01T00:00:00Z'";

    #[test]
    fn each_gateway_has_one_fate() {
        let lb = load_balancer_name("infra", "gw");
        let gw = KubeRef::new("Gateway", "infra", "gw");
        let ours = fates(&world(&objects(CONTROLLER_NAME, "")));
        assert_eq!(ours.unfinalized, std::slice::from_ref(&gw), "ours without the finalizer: added");
        assert!(ours.kept.is_empty() && ours.released.is_empty());
        let finalized = fates(&world(&objects(CONTROLLER_NAME, FIN)));
        assert_eq!(finalized, Fates::default(), "ours and finalized: served, nothing else");
        let deleted = fates(&world(&objects(CONTROLLER_NAME, &format!("{FIN}{DELETING}"))));
        assert_eq!(deleted.released, [Released { owner: gw, router: lb.clone() }]);
        let deleted_unfinalized = fates(&world(&objects(CONTROLLER_NAME, DELETING)));
        assert_eq!(deleted_unfinalized, Fates::default(), "no finalizer of ours: nothing to release");
        let other = fates(&world(&objects("example.com/other", FIN)));
        assert_eq!(other.kept.keys().collect::<Vec<_>>(), [&lb], "another controller's, with our finalizer: kept");
        let handed = fates(&world(&objects("example.com/other", "")));
        assert_eq!(handed, Fates::default(), "another controller's without our finalizer: not ours");
        let mut classless = world(&objects(CONTROLLER_NAME, ""));
        classless.classes.clear();
        assert_eq!(
            fates(&classless).kept,
            BTreeMap::from([(lb.clone(), KubeRef::new("Gateway", "infra", "gw"))]),
            "class gone: kept, finalizer or not"
        );
        // An object of a newer CRD release not even the domain type reads: no spec (blank).
        let unreadable =
            world(&objects(CONTROLLER_NAME, "").replace("gatewayClassName: kuryr", "gatewayClassName: ''"));
        assert_eq!(fates(&unreadable).kept.keys().collect::<Vec<_>>(), [&lb], "unreadable: kept");
    }
}
