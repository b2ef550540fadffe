//! Warning Events for the losers of a conflict whose Ingress was not the one reconciled.
//!
//! A reconcile publishes the translation's warnings about its own Ingress. But a conflict can
//! change without the loser changing: an older Ingress gains the path a younger one routed, the
//! owner of a host claims it, the quota fills. The loser would then lose its route silently
//! until it is edited. So every sync (a reconcile's and the resync's) also publishes the
//! conflict warnings about every other Ingress; the [`EventDedup`](super::events::EventDedup)
//! window keeps a repeated one from being sent again.

use kube::Resource;
use kube::runtime::reflector::ObjectRef;

use super::context::Context;
use super::events::UserEvent;
use crate::model::{DesiredRouter, KubeRef, Warning};
use crate::translate::tenancy::HOST_OWNED;

/// The warning reasons that arise from another Ingress (they name the winner, or the owner).
pub const CONFLICT_REASONS: &[&str] = &[
    "DuplicateRoute",
    "ConflictingDefaultBackend",
    "ConflictingCertificate",
    "DefaultBackendNotAllowed",
    HOST_OWNED,
    crate::translate::budget::QUOTA_EXCEEDED,
];

/// The conflict warnings about Ingresses other than `except`.
pub fn conflict_warnings<'a>(
    desired: &'a DesiredRouter,
    except: Option<&'a KubeRef>,
) -> impl Iterator<Item = &'a Warning> + 'a {
    desired.warnings.iter().filter(move |w| {
        w.object.kind == "Ingress" && Some(&w.object) != except && CONFLICT_REASONS.contains(&w.reason.as_str())
    })
}

/// Publishes [`conflict_warnings`] on the Ingresses still in the cache.
pub async fn publish_conflicts(ctx: &Context, desired: &DesiredRouter, except: Option<&KubeRef>) {
    for w in conflict_warnings(desired, except) {
        let key = ObjectRef::new(&w.object.name).within(&w.object.namespace);
        let Some(ing) = ctx.stores.ingresses.get(&key) else { continue };
        ctx.publish(&UserEvent::warning(&w.reason, "Sync", &w.message), &ing.object_ref(&())).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_other_ingresses_conflicts_are_selected() {
        let w = |kind: &str, name: &str, reason: &str| Warning {
            object: KubeRef::new(kind, "ns", name),
            reason: reason.into(),
            message: format!("{kind} ns/{name}: {reason}"),
        };
        let desired = DesiredRouter {
            warnings: vec![
                w("Ingress", "loser", "DuplicateRoute"),
                w("Ingress", "loser", "InvalidPath"),
                w("Ingress", "me", "DuplicateRoute"),
                w("Ingress", "tenant", HOST_OWNED),
                w("Ingress", "late", "QuotaExceeded"),
                w("Ingress", "other", "ConflictingDefaultBackend"),
                w("Service", "svc", "NoEndpoints"),
            ],
            ..Default::default()
        };
        let me = KubeRef::new("Ingress", "ns", "me");
        let got: Vec<String> =
            conflict_warnings(&desired, Some(&me)).map(|w| format!("{} {}", w.object.name, w.reason)).collect();
        assert_eq!(
            got,
            [
                "loser DuplicateRoute",
                format!("tenant {HOST_OWNED}").as_str(),
                "late QuotaExceeded",
                "other ConflictingDefaultBackend"
            ]
        );
        // The resync has no Ingress of its own: every conflict.
        assert_eq!(conflict_warnings(&desired, None).count(), 5);
    }
}
