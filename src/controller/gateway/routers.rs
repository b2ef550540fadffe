//! The desired router of each Gateway, from the Gateway loop's route tables
//! ([`crate::controller::gateway::GatewayLoop::routers`]) and the Ingress side's caches (Services,
//! EndpointSlices, Nodes, TLS Secrets): what a router slot per Gateway converges.
//!
//! The routers are driven by `crate::controller::gateway::driver`: one writer per [`GatewayRouter::name`] (the
//! hashed load-balancer name, `crate::gateway::naming`) on a driver for that load balancer and
//! the Gateway's port. They are kept apart from the Ingress routers' slot map (`crate::controller::routers`):
//! that map's first key is the Ingress router every Ingress status and warning goes to, and a
//! Gateway's `/readyz` line would let one bad Gateway take the controller out of service.

use crate::controller::context::Stores;
use crate::gateway::GatewayRoutes;
use crate::gateway::router::{GatewayRouter, translate_gateway};
use crate::translate::TranslateOptions;

/// One desired router per Gateway, in the order of `routes`, reading the caches in place.
pub(crate) fn desired_routers(
    routes: &[GatewayRoutes],
    stores: &Stores,
    opts: &TranslateOptions,
) -> Vec<GatewayRouter> {
    let snapshot = stores.inputs();
    routes.iter().map(|r| translate_gateway(r, &snapshot, opts)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gateway::build::{Programmed, translate};
    use crate::gateway::world::World;

    const OBJECTS: &str = "\
kind: GatewayClass\napiVersion: gateway.networking.k8s.io/v1\nmetadata: {name: kuryr}\n\
spec: {controllerName: openstack.org/kuryr-l7-router}\n---\n\
kind: Gateway\napiVersion: gateway.networking.k8s.io/v1\nmetadata: {name: web, namespace: shop}\n\
spec: {gatewayClassName: kuryr, listeners: [{name: http, port: 80, protocol: HTTP}]}\n---\n\
kind: HTTPRoute\napiVersion: gateway.networking.k8s.io/v1\nmetadata: {name: store, namespace: shop}\n\
spec: {parentRefs: [{name: web}], rules: [{backendRefs: [{name: cart, port: 80}]}]}\n---\n\
kind: Service\napiVersion: v1\nmetadata: {name: cart, namespace: shop}\nspec: {ports: [{port: 80}]}\n";

    #[test]
    fn each_gateway_router_takes_its_members_from_the_caches() {
        let mut world = World::default();
        world.add_yaml(OBJECTS).unwrap();
        let routes = translate(&world, &Programmed::new()).routers;
        let stores = crate::controller::gateway::members::tests::stores_with(&["10.0.0.5"]);

        let routers = desired_routers(&routes, &stores, &TranslateOptions::default());
        assert_eq!(routers.len(), 1);
        let r = &routers[0];
        assert_eq!(r.name, crate::gateway::naming::load_balancer_name("shop", "web"));
        assert_eq!(r.http_port, Some(80));
        let members: Vec<String> =
            r.desired.pools.values().flat_map(|p| p.members.iter().map(|m| m.address.to_string())).collect();
        assert_eq!(members, ["10.0.0.5"], "{:?}", r.desired.pools);
    }
}
