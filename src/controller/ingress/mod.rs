//! The Ingress handler: finalizer, Sync of the whole router, Service notices, status, Events.

pub mod secret_namespaces;
pub mod tls_secrets;

use crate::controller::context::{Context, HandlerError, Stores, instrumented};
use crate::controller::outputs::patches::{self, has_finalizer};
use crate::controller::outputs::{FailedStep, Failure, Scope, failure_event};
use crate::translate::ingress_class::is_ours;
use crate::translate::namespace_of;
use k8s_openapi::api::core::v1::{Secret, Service};
use k8s_openapi::api::networking::v1::Ingress;
use kube::api::Api;
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use kube::{Resource, ResourceExt};
use std::sync::Arc;
use std::time::Duration;

/// What the Ingress handler must do with an Ingress, decided from its finalizers, its deletion
/// timestamp and whether it is of our class (decided by the caller from IngressClass/config).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IngressStep {
    /// Ours and not yet protected: add the finalizer first (so a deletion while we are down is
    /// still seen), then apply. The patch triggers a new reconcile, which applies.
    AddFinalizer,
    /// Ours and protected: update policies, pools, notices and status.
    Apply,
    /// Being deleted, or no longer ours (class changed), and still carrying our finalizer: remove
    /// its policies, unused pools and notices, then [`patches::remove_finalizer`].
    Cleanup,
    /// Nothing of ours on it: not our class and no finalizer, or deleted after cleanup.
    Ignore,
}

/// Decides the [`IngressStep`]; `ours` is "the Ingress is of our IngressClass".
pub(crate) fn ingress_step(ing: &Ingress, ours: bool) -> IngressStep {
    let deleting = ing.metadata.deletion_timestamp.is_some();
    match (has_finalizer(ing), deleting, ours) {
        (true, true, _) | (true, false, false) => IngressStep::Cleanup,
        (true, false, true) => IngressStep::Apply,
        (false, false, true) => IngressStep::AddFinalizer,
        (false, true, _) | (false, false, false) => IngressStep::Ignore,
    }
}

/// The Ingresses that name `svc` (from the index kept on Ingress events): a Service appearing,
/// disappearing or changing its ports changes their routes.
pub fn ingresses_naming(stores: &Stores, svc: &Service) -> Vec<ObjectRef<Ingress>> {
    refs(stores.indexes.ingresses_by_service.naming(&(svc.namespace().unwrap_or_default(), svc.name_any())))
}

/// The Ingresses whose `spec.tls` names `secret` (from the index): its certificate changed.
pub(crate) fn ingresses_naming_secret(stores: &Stores, secret: &Secret) -> Vec<ObjectRef<Ingress>> {
    refs(stores.indexes.ingresses_by_secret.naming(&(secret.namespace().unwrap_or_default(), secret.name_any())))
}

fn refs(keys: Vec<(String, String)>) -> Vec<ObjectRef<Ingress>> {
    keys.into_iter().map(|(ns, name)| ObjectRef::new(&name).within(&ns)).collect()
}

/// The reconcile of one Ingress (see [`instrumented`]).
pub async fn reconcile(ing: Arc<Ingress>, ctx: Arc<Context>) -> Result<Action, HandlerError> {
    instrumented("ingress", ing.as_ref(), &ctx, reconcile_inner(&ing, &ctx)).await
}

async fn reconcile_inner(ing: &Ingress, ctx: &Context) -> Result<Action, HandlerError> {
    ctx.wait_caches().await;
    let ns = namespace_of(&ing.metadata);
    let api: Api<Ingress> = Api::namespaced(ctx.client.clone(), ns);
    let ours = is_ours(ing, &ctx.stores.classes.state(), &ctx.opts);
    let regarding = ing.object_ref(&());
    let step = ingress_step(ing, ours);
    tracing::debug!(?step, "ingress step");
    match step {
        IngressStep::Ignore => Ok(Action::await_change()),
        IngressStep::AddFinalizer => {
            patches::add_finalizer(&api, ing).await?;
            Ok(Action::await_change())
        }
        IngressStep::Apply => {
            // Its status, its own warnings, the other Ingresses' conflicts and `Synced`: the
            // outputs of the Sync for this Ingress (see `outputs::plan`).
            let (_, report) = match ctx.sync_for(false, Scope::Ingress(ing)).await {
                Ok(r) => r,
                Err(e) => {
                    octavia_event(ctx, &e, &regarding).await;
                    return Err(e);
                }
            };
            // An object on hold after a refused write: sync again when its delay is over.
            Ok(report.retry_after.map_or_else(Action::await_change, |d| Action::requeue(d + Duration::from_secs(1))))
        }
        IngressStep::Cleanup => {
            // The caches' Ingress is being deleted (left out of the inputs) or no longer ours
            // (left out by the translation): a Sync removes its policies and unused pools.
            if let Err(e) = ctx.sync(false).await {
                octavia_event(ctx, &e, &regarding).await;
                return Err(e);
            }
            if ing.metadata.deletion_timestamp.is_none() {
                // Class changed away: stop advertising our address.
                patches::patch_ingress_status(&api, ing, None).await?;
            }
            patches::remove_finalizer(&api, ing).await?;
            tracing::info!("ingress removed from the L7 router");
            Ok(Action::await_change())
        }
    }
}

async fn octavia_event(ctx: &Context, e: &HandlerError, regarding: &k8s_openapi::api::core::v1::ObjectReference) {
    if let HandlerError::Octavia(w) = e {
        ctx.publish(&failure_event(&Failure::Write(FailedStep::Sync, w)), regarding).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::FINALIZER;

    fn ingress(finalizers: &[&str], deleting: bool) -> Ingress {
        serde_json::from_value(serde_json::json!({"metadata": {
            "name": "web",
            "finalizers": finalizers,
            "deletionTimestamp": deleting.then_some("2024-01-01T00:00:00Z"),
        }}))
        .unwrap()
    }

    #[test]
    fn ingress_step_table() {
        use IngressStep::*;
        let other = "example.com/other";
        let cases = [
            // (finalizers, deleting, ours, expected)
            (&[][..], false, true, AddFinalizer),
            (&[other][..], false, true, AddFinalizer),
            (&[FINALIZER][..], false, true, Apply),
            (&[other, FINALIZER][..], false, true, Apply),
            (&[FINALIZER][..], true, true, Cleanup),
            (&[FINALIZER][..], false, false, Cleanup),
            (&[FINALIZER][..], true, false, Cleanup),
            (&[][..], true, true, Ignore),
            (&[other][..], true, true, Ignore),
            (&[][..], false, false, Ignore),
        ];
        for (fin, deleting, ours, want) in cases {
            assert_eq!(ingress_step(&ingress(fin, deleting), ours), want, "{fin:?} deleting={deleting} ours={ours}");
        }
    }
}
