//! The Service/Endpoints handler: keeps the members of the pools a Service feeds (named by our
//! router's notice annotation on it) equal to its ready endpoints, one batch write per pool.
//!
//! Every controller instance watches every EndpointSlice and reads only its own router's notice
//! ([`crate::controller::notice::notice_annotation`]), so a Service shared by several routers
//! refreshes the members of each of them on an endpoint change.
//!
//! When the Service's notice is not the one the desired router implies (a Service created after
//! the Ingress naming it, or a route to it removed), the change is structural: a Sync (which also
//! writes the notice) rather than member updates.
//!
//! Member change window (`[kubernetes] member_change_window_ms`): a member update waits that long
//! after the change that triggered it and then reads the caches again, so every endpoint change
//! of the window goes into one batch PUT per pool (the latest endpoints win). Changes arriving
//! during the write re-trigger the Service (kube-runtime never runs one object's reconciles
//! concurrently) and open the next window. Unlike a trailing debounce, which keeps postponing
//! while a rollout keeps changing the slices, this bounds the delay of any change to one window
//! plus the write (measured: tests/controller_runtime.rs, docs/benchmarks.md).
//! A change of the Service's health-monitor annotation is applied by a Sync.

use crate::controller::context::{Context, HandlerError, instrumented};
use crate::controller::events::UserEvent;
use crate::controller::notice::{ServiceNotice, desired_notices};
use crate::controller::writer::MembersOutcome;
use crate::model::KubeRef;
use crate::translate::namespace_of;
use crate::translate::routes::SERVICE_NAME_LABEL;
use k8s_openapi::api::core::v1::{Endpoints, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use kube::{Resource, ResourceExt};
use std::sync::Arc;

/// The Service an EndpointSlice belongs to.
pub fn service_of_slice(slice: EndpointSlice) -> Option<ObjectRef<Service>> {
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
    let regarding = svc.object_ref(&());
    let current = match ServiceNotice::from_service(svc, &ctx.router_name) {
        Ok(n) => n,
        Err(e) => {
            // Rewritten by the next Sync (a malformed notice is never "equal").
            ctx.publish(&UserEvent::warning("InvalidNotice", "UpdateMembers", e.to_string()), &regarding).await;
            None
        }
    };
    let (_, desired) = ctx.desired();
    let me = KubeRef::new("Service", namespace_of(&svc.metadata), &svc.name_any());
    let want = desired_notices(&ctx.router_name, &desired).remove(&me);
    match service_step(&ctx.router_name, current.as_ref(), want.as_ref()) {
        ServiceStep::Ignore => Ok(Action::await_change()),
        ServiceStep::Sync => {
            tracing::info!("service routing changed: syncing the router");
            ctx.sync(false).await?;
            Ok(Action::await_change())
        }
        ServiceStep::Members(pools) => {
            let desired = if ctx.member_change_window.is_zero() {
                desired
            } else {
                // The change window: changes arriving meanwhile are in the caches when it closes,
                // so they go in this one batch write (the latest endpoints win); those arriving
                // during the write trigger the next window.
                tokio::time::sleep(ctx.member_change_window).await;
                ctx.desired().1
            };
            publish_health_monitor_warnings(ctx, &desired, &me, &regarding).await;
            if !ctx.health_monitors_synced(&desired, &pools) {
                tracing::info!("service health monitor changed: syncing the router");
                ctx.sync(false).await?;
                return Ok(Action::await_change());
            }
            let mut updated = 0;
            for name in pools {
                let Some(pool) = desired.pools.get(&name) else { continue };
                match ctx.writer.members(pool.clone()).await {
                    Ok(MembersOutcome::Updated) => updated += 1,
                    Ok(MembersOutcome::Unchanged | MembersOutcome::Superseded) => {}
                    Ok(MembersOutcome::PoolMissing) => {
                        tracing::info!(pool = %name, "pool missing on the router: syncing");
                        ctx.sync(true).await?;
                        break;
                    }
                    Err(e) => {
                        ctx.publish(&UserEvent::warning("OctaviaError", "UpdateMembers", &e.message), &regarding).await;
                        return Err(HandlerError::Octavia(e));
                    }
                }
            }
            if updated > 0 {
                tracing::info!(pools = updated, "members updated");
            }
            Ok(Action::await_change())
        }
    }
}

/// A bad health-monitor annotation is a Warning on the Service itself (its pools keep the
/// monitor they have).
async fn publish_health_monitor_warnings(
    ctx: &Context,
    desired: &crate::model::DesiredRouter,
    me: &KubeRef,
    regarding: &k8s_openapi::api::core::v1::ObjectReference,
) {
    for w in desired.warnings.iter().filter(|w| w.object == *me && w.reason == "InvalidHealthMonitor") {
        ctx.publish(&UserEvent::warning(&w.reason, "HealthMonitor", &w.message), regarding).await;
    }
}
