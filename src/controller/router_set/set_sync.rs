//! A Sync of the router set (`Context::sync_for` with scale-out): one translation and
//! placement, each router's part submitted to its own writer at once, and each router's outputs
//! (the statuses of the Ingresses placed on it, its notices and Events, the moves it advances,
//! the records of its groups) written as soon as THAT router's job ends: a router that hangs (a
//! create of up to `lb_create_timeout`) delays its own Ingresses only, never another router's.

use crate::controller::context::{Context, HandlerError, SetSync, SyncAnswer};
use crate::controller::outputs::{self, Scope};
use crate::controller::router_set::{Placed, RouterSet};
use crate::controller::routers::RouterSlot;
use crate::controller::writer::{Synced, WriteError};
use crate::placement::RouterIndex;
use crate::translate::budget::Budget;
use futures::future::BoxFuture;
use k8s_openapi::api::networking::v1::Ingress;
use std::collections::BTreeMap;
use std::sync::Arc;

/// What a Sync of the set answers: the reconciled Ingress's router's result, or the first
/// router's.
type SetAnswer = SyncAnswer;

/// The Context's Sync hands over to the set's when it drives one.
impl SetSync for RouterSet {
    fn sync<'a>(&'a self, ctx: &'a Context, force: bool, scope: Scope<'a>) -> BoxFuture<'a, SyncAnswer> {
        Box::pin(ctx.sync_set(self, force, scope))
    }
}

impl Context {
    /// [`Context::sync_for`] with scale-out: one translation and placement, each router's part
    /// submitted to its writer at once, then each router's outputs when its job ends
    /// ([`Context::router_done`]). The result is the reconciled Ingress's router's (a failure
    /// of another router holds back only its own groups); for the other scopes, the first
    /// router's, failing only when every router failed.
    pub(crate) async fn sync_set(&self, set: &RouterSet, force: bool, scope: Scope<'_>) -> SetAnswer {
        let requested = std::time::Instant::now();
        self.wait_caches().await;
        let (translator, metrics) = (self.translator.clone(), self.router().metrics.clone());
        // Translated with the age order and no limit: each router gets its own budget below.
        let placed = set
            .placed(requested, &self.stores.ingresses.state(), move || {
                translator.desired(Some(Budget::UNLIMITED), &metrics).1
            })
            .await
            .map_err(HandlerError::Octavia)?;
        // Rollbacks are told at once: their target may be the router that hangs.
        self.tell_rollbacks(set).await;
        self.tell_move_refusals(&placed).await;
        self.publish_placement_warnings(set, &placed, scope).await;
        let mut slots = Vec::new();
        for &index in placed.parts.keys() {
            slots.push((index, self.slot_at(set, index)?));
        }
        let jobs = slots.iter().map(|(index, slot)| self.router_job(set, &placed, *index, slot, force, scope));
        let results = futures::future::join_all(jobs).await;
        let mine = match scope {
            Scope::Ingress(ing) => Some(placed.router_of(ing).unwrap_or(0)),
            _ => None,
        };
        let mut answer: Option<SetAnswer> = None;
        for ((index, _), result) in slots.iter().zip(results) {
            let take = match mine {
                Some(m) => m == *index,
                None => answer.as_ref().is_none_or(|a| a.is_err()) && (answer.is_none() || result.is_ok()),
            };
            if take {
                answer = Some(result);
            }
        }
        self.delete_empty_routers(set, &placed).await;
        answer.unwrap_or_else(|| Err(HandlerError::Octavia(WriteError::new("no_router", "no router in the set"))))
    }

    /// The slot of router `index` of `set`, its writer spawned when placement first uses it.
    pub(crate) fn slot_at(&self, set: &RouterSet, index: RouterIndex) -> Result<Arc<RouterSlot>, HandlerError> {
        let name = set.name_of(index);
        if let Some(slot) = self.routers.get(&name) {
            return Ok(slot);
        }
        let writer = set.spawn_writer(index).map_err(HandlerError::Octavia)?;
        tracing::info!(router = %name, "router joins the set");
        if let Some(r) = &self.readiness {
            r.send_modify(|r| {
                r.router_mut(&name);
            });
        }
        Ok(self.routers.insert(RouterSlot::new(name, writer, &self.metrics)))
    }

    /// Router `index`'s part of a Sync of the set: submitted to its writer (unless its failed
    /// create waits for its backoff), then its outputs ([`Context::router_done`]).
    async fn router_job(
        &self,
        set: &RouterSet,
        placed: &Placed,
        index: RouterIndex,
        slot: &RouterSlot,
        force: bool,
        scope: Scope<'_>,
    ) -> SetAnswer {
        // A router whose create failed waits for its backoff: its Sync is not submitted.
        let waited = self.create_waits(set, index);
        let result = match waited.clone() {
            Some(e) => Err(e),
            None => {
                // Each router admits new routes within its own budget: the project's quota minus
                // what the project's other load balancers, the other routers of the set among
                // them, hold (its driver reads it). A router whose budget was never read reads it
                // at its next convergence (a new one reads the project's room before it is
                // created).
                let mut part = placed.parts[&index].as_ref().clone();
                part.quota = crate::translate::budget::for_router(placed.whole.quota.as_ref(), slot.budget());
                slot.writer.sync_to(part, force || !slot.budget_read()).await
            }
        };
        match result {
            Ok(synced) => self.router_done(set, placed, index, slot, &synced, scope).await,
            Err(e) => {
                if waited.is_none() {
                    self.router_failed(set, index, slot, &e).await;
                }
                tracing::warn!(router = %slot.name, error = %e, "router sync failed: its groups wait");
                // Nothing recorded on it; the hosts no longer placed are forgotten, the moves kept.
                set.record(placed, &[]);
                set.save_records().await;
                // The Event on the Ingress says which router of the set holds it back.
                Err(HandlerError::Octavia(WriteError::new(e.label, format!("router {}: {}", slot.name, e.message))))
            }
        }
    }

    /// The outputs of router `index`'s finished Sync, at once: its slot's report, its health,
    /// the statuses and Events of its Ingresses, the moves it advances (a target ACTIVE with the
    /// group, a source cleared) with their statuses and Events, and the records of the groups
    /// placed on it (written to the store).
    async fn router_done(
        &self,
        set: &RouterSet,
        placed: &Placed,
        index: RouterIndex,
        slot: &RouterSlot,
        synced: &Synced,
        scope: Scope<'_>,
    ) -> SetAnswer {
        self.took(slot, synced);
        self.router_synced(set, index, slot);
        let out = self.set_outputs(placed, index, slot, synced, scope).await;
        set.observe(placed, &BTreeMap::from([(index, synced.report.address)]));
        self.drive_moves(set).await;
        // The records (each host's router once it synced, the moves) in the controller's own
        // namespace, never on the Ingresses.
        set.record(placed, &[index]);
        set.save_records().await;
        out.map(|()| (synced.desired.clone(), synced.report.clone()))
    }

    /// The placement's warnings as Warning Events on the Ingresses concerned, as for the
    /// translation's warnings: the reconciled Ingress gets its own, the resync everyone's.
    async fn publish_placement_warnings(&self, set: &RouterSet, placed: &Placed, scope: Scope<'_>) {
        let me = match scope {
            Scope::Ingress(ing) => Some(ing),
            Scope::Resync => None,
            Scope::Sync | Scope::Conflicts => return,
        };
        for ev in crate::controller::router_set::placement_events(&set.base, placed) {
            if me.is_none_or(|ing| outputs::ingress_ref(ing) == ev.regarding) {
                self.publish_on_ingress(&ev, me).await;
            }
        }
    }

    /// Deletes the routers of the set left empty for their whole `empty_router_grace` (never
    /// the first), each through its own writer (its load balancer and the floating IP allocated
    /// for it, found by name and our tags: nothing that is not ours). A failed delete is tried
    /// again at the next Sync.
    async fn delete_empty_routers(&self, set: &RouterSet, placed: &Placed) {
        for index in set.to_delete(placed) {
            let slot = match self.slot_at(set, index) {
                Ok(slot) => slot,
                Err(e) => {
                    tracing::warn!(router = %set.name_of(index), error = %e, "cannot delete the empty router");
                    continue;
                }
            };
            match slot.writer.delete_router().await {
                Ok(deleted) => {
                    tracing::info!(router = %slot.name, deleted, "router empty for its whole grace: deleted");
                    set.deleted(index);
                }
                Err(e) => tracing::warn!(router = %slot.name, error = %e, "cannot delete the empty router"),
            }
        }
    }

    /// The outputs of router `index`'s Sync: the statuses of the Ingresses placed on it, its
    /// notices, and for the reconciled Ingress's router its own Events (with the warnings of
    /// the whole translation, which the split leaves on the first router only).
    async fn set_outputs(
        &self,
        placed: &Placed,
        index: RouterIndex,
        slot: &RouterSlot,
        synced: &Synced,
        scope: Scope<'_>,
    ) -> Result<(), HandlerError> {
        // A moving group's status carries the move's addresses (`drive_moves`).
        let here = |ing: &Ingress| placed.router_of(ing) == Some(index) && !placed.is_moving(ing);
        match scope {
            Scope::Ingress(ing) if !here(ing) => self.apply_outputs(slot, synced, Scope::Sync, &here).await,
            Scope::Ingress(_) if index != 0 => {
                let mut desired = synced.desired.as_ref().clone();
                desired.warnings = placed.whole.warnings.clone();
                let with_warnings = Synced { desired: Arc::new(desired), ..synced.clone() };
                self.apply_outputs(slot, &with_warnings, scope, &here).await
            }
            _ => self.apply_outputs(slot, synced, scope, &here).await,
        }
    }
}
