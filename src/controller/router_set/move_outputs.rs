//! The outputs of the moves after a Sync of the router set: Events for each step and the
//! status of the group's Ingresses during the move (see [`crate::controller::router_set::moves`] for
//! the protocol). The move's record is the controller's own (`set_store`), never written on
//! the Ingresses: a move record found on an Ingress is a forgery (or left by a version before
//! the store) and gets a Warning Event.

use crate::controller::outputs::events::UserEvent;
use crate::controller::outputs::patches;
use crate::controller::router_set::moves::{MOVE_ANNOTATION, ingress_hosts, ingress_key};
use crate::controller::router_set::{Placed, RouterSet};
use crate::placement::MovePlan;
use crate::translate::namespace_of;
use k8s_openapi::api::networking::v1::Ingress;
use kube::Resource;
use kube::api::Api;
use std::net::IpAddr;

impl crate::controller::context::Context {
    /// The refusals of a placement of the set, once per Sync: a Warning on each Ingress whose
    /// ask is refused, and on each carrying a move record (a forgery, or a version before's).
    pub(crate) async fn tell_move_refusals(&self, placed: &Placed) {
        let cached = self.stores.ingresses.state();
        for (key, why) in &placed.refused {
            if let Some(ing) = cached.iter().find(|i| ingress_key(i) == *key) {
                self.publish(&UserEvent::warning("MoveRefused", "Move", why.clone()), &ing.object_ref(&())).await;
            }
        }
        for ing in crate::controller::router_set::migration::carrying_move_records(cached.iter().map(|i| i.as_ref())) {
            let why = format!(
                "{MOVE_ANNOTATION} is ignored: the router set's moves are recorded by the controller in its own \
                 namespace, not on Ingresses; remove it (to ask for a move: kuryr-l7-router move, or the move-to \
                 annotation from a namespace in [octavia_defaults] move_request_namespaces)"
            );
            self.publish(&UserEvent::warning("MoveRecordIgnored", "Move", why), &ing.object_ref(&())).await;
        }
    }

    /// The moves' outputs after a router's Sync of the set: an Event on the group's Ingresses
    /// for each step, and their status (the addresses of the phase).
    pub(crate) async fn drive_moves(&self, set: &RouterSet) {
        // The steps in the order they happened, each told once: a move can take two steps in
        // one Sync (started, then its target ACTIVE), and a concurrent Sync of another router
        // can step it on before this one tells its start.
        let _telling = set.telling.lock().await;
        let stepped = set.take_steps();
        let known = set.known_moves();
        // Called after each router's job: with no step to tell and no move in progress there is
        // no Event or status to write, and no need to look at every Ingress.
        if stepped.is_empty() && known.values().all(|m| matches!(m.phase, crate::placement::MovePhase::Done { .. })) {
            return;
        }
        let cached = self.stores.ingresses.state();
        for ing in cached.iter().filter(|i| self.keeps_status_of(i)) {
            let hosts = ingress_hosts(ing);
            let Some(plan) = known.values().find(|m| !m.hosts.is_disjoint(&hosts)) else { continue };
            for step in stepped.iter().filter(|s| !s.hosts.is_disjoint(&hosts)) {
                let (reason, message) = step.event(&set.name_of(step.from), &set.name_of(step.to));
                self.publish(&UserEvent::normal(reason, "Move", message), &ing.object_ref(&())).await;
            }
            // The Ingress that tied a merge has hosts outside the move: the target routes all of
            // them from the start, so its status is its router's (`set_outputs`).
            if !hosts.is_empty() && hosts.is_subset(&plan.hosts) {
                self.write_move_status(set, ing, plan).await;
            }
        }
    }

    /// The status of a moving group's Ingress: the addresses its phase publishes (an address
    /// not known yet is left out rather than guessed).
    async fn write_move_status(&self, set: &RouterSet, ing: &Ingress, plan: &MovePlan) {
        let (Some(source), Some(target)) = (set.address_of(plan.from), set.address_of(plan.to)) else {
            return;
        };
        let addresses: Vec<IpAddr> = plan
            .status_addresses(&source.to_string(), &target.to_string())
            .iter()
            .filter_map(|a| a.parse().ok())
            .collect();
        let api: Api<Ingress> = Api::namespaced(self.client.clone(), namespace_of(&ing.metadata));
        match patches::patch_ingress_addresses(&api, ing, &addresses).await {
            Ok(Some(_)) => tracing::info!(ingress = %ingress_key(ing), ?addresses, "ingress status written (move)"),
            Ok(None) => {}
            Err(e) => tracing::warn!(ingress = %ingress_key(ing), error = %e, "cannot patch the ingress status"),
        }
    }
}
