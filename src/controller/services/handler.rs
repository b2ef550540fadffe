//! The Service/Endpoints handler: keeps the members of the pools a Service feeds (named by our
//! router's notice annotation on it) equal to its ready endpoints, one batch write per pool.
//!
//! Every controller instance watches every EndpointSlice and reads only its own router's notice
//! ([`crate::controller::outputs::notice::notice_annotation`]), so a Service shared by several routers
//! refreshes the members of each of them on an endpoint change.
//!
//! An endpoint change costs O(the Service's pools), never a translation of the cluster: the
//! Service's notice is compared with the one the LAST Sync's desired state implies, and its pools
//! are refilled from its own endpoints ([`crate::controller::services::members`]). When the notice differs
//! (a route to it added or removed), or a port or health-monitor annotation changed, the change
//! is structural: a Sync (which also writes the notice) rather than member updates. The Service's
//! endpoint warnings (`NoEndpoints`, `EndpointPortNotFound`) are published from this path too, at
//! once rather than at the next Sync.
//!
//! Member change window (`[kubernetes] member_change_window_ms`): a member update waits that long
//! after the change that triggered it and then reads the caches again, so every endpoint change
//! of the window goes into one batch PUT per pool (the latest endpoints win). Changes arriving
//! during the write re-trigger the Service (kube-runtime never runs one object's reconciles
//! concurrently) and open the next window. Unlike a trailing debounce, which keeps postponing
//! while a rollout keeps changing the slices, this bounds the delay of any change to one window
//! plus the write (measured: tests/it/controller_runtime.rs, docs/benchmarks.md).
//! A change of the Service's health-monitor annotation is applied by a Sync.

use crate::controller::context::{Context, HandlerError, instrumented};
use crate::controller::outputs::notice::ServiceNotice;
use crate::controller::outputs::{FailedStep, Failure, failure_event};
use crate::controller::routers::RouterSlot;
use crate::controller::services::members::{endpoints_of, node_index, service_members};
use crate::controller::writer::{MembersOutcome, WriteError};
use crate::model::KubeRef;
use crate::translate::namespace_of;
use crate::translate::pools::SERVICE_NAME_LABEL;
use crate::translate::slices::CompactSlice;
use k8s_openapi::api::core::v1::{Endpoints, ObjectReference, Service};
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use kube::{Resource, ResourceExt};
use std::sync::Arc;
use std::time::Duration;

/// The Service an EndpointSlice belongs to.
pub fn service_of_slice(slice: CompactSlice) -> Option<ObjectRef<Service>> {
    let name = slice.labels().get(SERVICE_NAME_LABEL)?.clone();
    Some(ObjectRef::new(&name).within(&slice.namespace()?))
}

/// The Service of core Endpoints (same name).
pub fn service_of_endpoints(ep: Endpoints) -> Option<ObjectRef<Service>> {
    Some(ObjectRef::new(&ep.name_any()).within(&ep.namespace()?))
}

/// What the Service handler must do, decided from the notice it carries and the one the desired
/// router implies (pure, tested).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServiceStep {
    /// Not ours (no notice, none wanted) or another router's: nothing.
    Ignore,
    /// The notice must change: Sync the router (which writes the notices).
    Sync,
    /// Update the members of these pools.
    Members(Vec<String>),
}

pub fn service_step(router: &str, current: Option<&ServiceNotice>, want: Option<&ServiceNotice>) -> ServiceStep {
    match (current, want) {
        (Some(c), _) if c.router != router => ServiceStep::Ignore,
        (None, None) => ServiceStep::Ignore,
        (c, w) if c != w => ServiceStep::Sync,
        (Some(c), _) => ServiceStep::Members(c.pools.clone()),
        (None, Some(_)) => ServiceStep::Sync,
    }
}

/// The reconcile of one Service (see [`instrumented`]).
pub async fn reconcile(svc: Arc<Service>, ctx: Arc<Context>) -> Result<Action, HandlerError> {
    instrumented("service", svc.as_ref(), &ctx, reconcile_inner(&svc, &ctx)).await
}

async fn reconcile_inner(svc: &Service, ctx: &Context) -> Result<Action, HandlerError> {
    ctx.wait_caches().await;
    if let Some(changes) = &ctx.gateway_services {
        // The Gateways' routers take their share first: they never wait on the Ingress writes.
        changes.changed(KubeRef::service(namespace_of(&svc.metadata), &svc.name_any()));
    }
    // Each router's notice names the pools the Service feeds there: with scale-out a Service
    // used on several routers (the status responder, the default backend, shared backends) gets
    // its member update on each. All at once, each within its wait: a router that fails or
    // hangs holds back only its own pools, never the next router's.
    let routers: Vec<_> = ctx.routers.iter().collect();
    let wait = ctx.member_change_window + ROUTER_WAIT;
    let parts = routers.iter().map(|router| tokio::time::timeout(wait, reconcile_on(svc, ctx, router)));
    let outcomes = RouterOutcomes::of(routers.iter().zip(futures::future::join_all(parts).await));
    outcomes.report(&svc.object_ref(&()), ctx).await;
    if let Some(force) = outcomes.sync {
        // One Sync of the routers for all of them (a set Sync writes every router's notice).
        ctx.sync(force).await?;
    }
    outcomes.action()
}

/// How long a Service reconcile waits for one router's part, after the change window. A member
/// write with its settle takes 2 to 6 s on a loaded cloud (docs/benchmarks.md); a router that
/// takes longer is busy with something else (a create of up to `lb_create_timeout`, a long
/// Sync): its job stays queued on its writer, and the Service is reconciled again after this
/// long, so that its next endpoint change reaches the other routers meanwhile.
const ROUTER_WAIT: Duration = Duration::from_secs(10);

/// What one router's part of a Service reconcile leaves to the reconcile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RouterNeeds {
    Nothing,
    /// A Sync of the routers (forced: a pool went missing on the router).
    Sync {
        force: bool,
    },
}

/// The routers' parts of one Service reconcile, gathered.
#[derive(Debug, Default)]
struct RouterOutcomes {
    /// A Sync is needed, forced if any part asked for it so.
    sync: Option<bool>,
    /// The routers whose member write failed, each error naming its router.
    failed: Vec<WriteError>,
    /// The routers whose part did not end within [`ROUTER_WAIT`].
    busy: Vec<String>,
}

type RouterPart = Result<Result<RouterNeeds, WriteError>, tokio::time::error::Elapsed>;

impl RouterOutcomes {
    fn of<'a>(parts: impl Iterator<Item = (&'a Arc<RouterSlot>, RouterPart)>) -> Self {
        let mut out = Self::default();
        for (router, part) in parts {
            match part {
                Ok(Ok(RouterNeeds::Nothing)) => {}
                Ok(Ok(RouterNeeds::Sync { force })) => out.sync = Some(force || out.sync.unwrap_or(false)),
                // As a set Sync says it: the Event and the log name the router.
                Ok(Err(e)) => {
                    out.failed.push(WriteError::new(e.label, format!("router {}: {}", router.name, e.message)))
                }
                Err(_) => out.busy.push(router.name.clone()),
            }
        }
        out
    }

    /// One log line and one Event on the Service per router that failed, one log line per
    /// router still busy (its job runs when its writer is free; the requeue reads its outcome).
    /// The writer's `octavia_write_job_duration_seconds{router,job="members",result}` counts
    /// each failure by router and reason.
    async fn report(&self, regarding: &ObjectReference, ctx: &Context) {
        for e in &self.failed {
            tracing::warn!(reason = e.label, error = %e, "member update failed on a router; the other routers were written");
            ctx.publish(&failure_event(&Failure::Write(FailedStep::UpdateMembers, e)), regarding).await;
        }
        for router in &self.busy {
            tracing::warn!(%router, wait_s = ROUTER_WAIT.as_secs(), "member update not done on a busy router: it stays queued there, the Service is requeued");
        }
    }

    /// A failure is retried with the handler's backoff (the routers already written answer
    /// `Unchanged` without Octavia); a busy router is asked again after its wait.
    fn action(self) -> Result<Action, HandlerError> {
        let mut failed = self.failed.into_iter();
        if let Some(first) = failed.next() {
            let label = first.label;
            let message = std::iter::once(first).chain(failed).map(|e| e.message).collect::<Vec<_>>().join("; ");
            return Err(HandlerError::Octavia(WriteError::new(label, message)));
        }
        if self.busy.is_empty() { Ok(Action::await_change()) } else { Ok(Action::requeue(ROUTER_WAIT)) }
    }
}

/// The reconcile of one Service for one router (its notice, its pools).
async fn reconcile_on(svc: &Service, ctx: &Context, router: &RouterSlot) -> Result<RouterNeeds, WriteError> {
    let regarding = svc.object_ref(&());
    let current = match ServiceNotice::from_service(svc, &router.name) {
        Ok(n) => n,
        Err(e) => {
            // Rewritten by the next Sync (a malformed notice is never "equal").
            ctx.publish(&failure_event(&Failure::Notice(&e)), &regarding).await;
            None
        }
    };
    let me = KubeRef::service(namespace_of(&svc.metadata), &svc.name_any());
    // The notice is checked against the last Sync's desired state, not a fresh translation: a
    // change that alters the routes (an Ingress, this Service's ports) triggers a Sync of its own,
    // which writes the notice. Before the first Sync only a notice of ours needs one.
    let Some(synced) = router.writer.last_synced() else {
        let ours = current.as_ref().is_some_and(|c| c.router == router.name);
        return Ok(if ours { RouterNeeds::Sync { force: false } } else { RouterNeeds::Nothing });
    };
    let want = ctx.notice_for(&router.name, &synced, &me);
    match service_step(&router.name, current.as_ref(), want.as_ref()) {
        // Neither notice nor route yet, but an Ingress names this Service: it may have just
        // appeared (or got its port), which the last synced state, translated without it,
        // cannot tell; a Sync translates it now (the writer answers it without Octavia when
        // nothing changed).
        ServiceStep::Ignore
            if current.is_none()
                && ctx
                    .stores
                    .indexes
                    .ingresses_by_service
                    .is_named(&(namespace_of(&svc.metadata).to_string(), svc.name_any())) =>
        {
            tracing::info!(router = %router.name, "a Service an Ingress names has no route yet: syncing the router");
            Ok(RouterNeeds::Sync { force: false })
        }
        ServiceStep::Ignore => Ok(RouterNeeds::Nothing),
        ServiceStep::Sync => {
            tracing::info!(router = %router.name, "service routing changed: syncing the router");
            Ok(RouterNeeds::Sync { force: false })
        }
        ServiceStep::Members(pools) => update_members(svc, ctx, router, &me, &pools).await,
    }
}

/// The Members step: the Service's pools refilled from its endpoints (one batch write per pool
/// that changed), its endpoint warnings published at once.
async fn update_members(
    svc: &Service,
    ctx: &Context,
    router: &RouterSlot,
    me: &KubeRef,
    pools: &[String],
) -> Result<RouterNeeds, WriteError> {
    let mut svc = std::borrow::Cow::Borrowed(svc);
    if !ctx.member_change_window.is_zero() {
        // The change window: changes arriving meanwhile are in the caches when it closes, so
        // they go in this one batch write (the latest endpoints win); those arriving during
        // the write trigger the next window.
        tokio::time::sleep(ctx.member_change_window).await;
        match ctx.stores.services.get(&ObjectRef::from_obj(svc.as_ref())) {
            Some(now) => svc = std::borrow::Cow::Owned((*now).clone()),
            None => return Ok(RouterNeeds::Nothing),
        }
    }
    let Some(synced) = router.writer.last_synced() else { return Ok(RouterNeeds::Nothing) };
    let update = {
        let endpoints = endpoints_of(&svc, &ctx.stores, &ctx.opts);
        let nodes = ctx.stores.nodes.state();
        // A split pool's other Services, read after the same change window.
        let other = |s: &KubeRef| {
            let other = ctx.stores.services.get(&ObjectRef::new(&s.name).within(&s.namespace))?;
            let endpoints = endpoints_of(&other, &ctx.stores, &ctx.opts);
            Some((other, endpoints))
        };
        service_members(&svc, pools, &synced, &endpoints, &other, &node_index(&nodes), &ctx.opts)
    };
    ctx.publish_service_warnings(Some(me), &update.warnings).await;
    if let Some(why) = update.needs_sync {
        tracing::info!(router = %router.name, %why, "service change needs a Sync");
        return Ok(RouterNeeds::Sync { force: false });
    }
    let mut updated = 0;
    for pool in update.pools {
        let name = pool.name.clone();
        match router.writer.members(pool).await {
            Ok(MembersOutcome::Updated) => updated += 1,
            Ok(MembersOutcome::Unchanged | MembersOutcome::Superseded) => {}
            Ok(MembersOutcome::PoolMissing) => {
                tracing::info!(router = %router.name, pool = %name, "pool missing on the router: syncing");
                return Ok(RouterNeeds::Sync { force: true });
            }
            // Reported with the other routers' outcomes (see `RouterOutcomes::report`).
            Err(e) => return Err(e),
        }
    }
    if updated > 0 {
        tracing::info!(router = %router.name, pools = updated, "members updated");
    }
    Ok(RouterNeeds::Nothing)
}
