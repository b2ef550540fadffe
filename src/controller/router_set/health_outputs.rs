//! What a router's health tells the operator after a Sync of the set (see
//! [`crate::controller::router_set::health`]): a failed create is counted
//! (`router_create_failures_total{router}`, `router_create_backoff_seconds{router}`), named on
//! `/readyz` with its count and wait, and told as a Warning Event `RouterCreateFailed` on our
//! IngressClass (the operator's object: a quota or a refused create is the operator's to fix, and
//! the Ingresses placed on that router already get their `OctaviaError` naming it).

use crate::controller::outputs::events::UserEvent;
use crate::controller::router_set::RouterSet;
use crate::controller::router_set::health::CreateFailure;
use crate::controller::routers::RouterSlot;
use crate::controller::writer::WriteError;
use crate::placement::RouterIndex;
use crate::reason::Reason;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::Resource;
use kube::runtime::reflector::ObjectRef;
use std::time::Instant;

impl crate::controller::context::Context {
    /// Why router `index`'s Sync is not submitted now: its create failed and waits for its
    /// backoff (None: submit it).
    pub(crate) fn create_waits(&self, set: &RouterSet, index: RouterIndex) -> Option<WriteError> {
        let f = set.health().waiting(index, Instant::now())?;
        let message = format!(
            "cannot be built ({} failed creates, last: {}); next try in {} s",
            f.failures,
            f.message,
            f.retry_in.as_secs()
        );
        Some(WriteError::new("create_backoff", message))
    }

    /// Router `index` synced: healthy (it settles before it takes new groups again).
    pub(crate) fn router_synced(&self, set: &RouterSet, index: RouterIndex, slot: &RouterSlot) {
        set.health().succeeded(index, unix_now());
        slot.metrics.create_ok();
        if let Some(r) = &self.readiness {
            r.send_if_modified(|r| {
                let line = r.router_mut(&slot.name);
                let had = line.create_failures > 0;
                (line.create_failures, line.create_retry_secs) = (0, 0);
                had
            });
        }
    }

    /// Router `index`'s Sync failed with `e` (not a Sync skipped for its backoff): failing for
    /// placement; a failed create is counted, named on `/readyz` and told on our IngressClass.
    pub(crate) async fn router_failed(&self, set: &RouterSet, index: RouterIndex, slot: &RouterSlot, e: &WriteError) {
        let Some(f) = set.health().failed(index, Instant::now(), e) else { return };
        slot.metrics.create_failed(f.retry_in);
        if let Some(r) = &self.readiness {
            r.send_modify(|r| {
                let line = r.router_mut(&slot.name);
                (line.create_failures, line.create_retry_secs) = (f.failures, f.retry_in.as_secs());
            });
        }
        let event = UserEvent::of(Reason::RouterCreateFailed, "CreateRouter", create_failure_text(&slot.name, &f));
        self.publish(&event, &self.class_reference()).await;
    }

    /// Our IngressClass, from the cache (with its uid), else by name.
    fn class_reference(&self) -> ObjectReference {
        let name = &self.opts.ingress_class;
        self.stores.classes.get(&ObjectRef::new(name)).map(|c| c.object_ref(&())).unwrap_or_else(|| ObjectReference {
            api_version: Some("networking.k8s.io/v1".into()),
            kind: Some("IngressClass".into()),
            name: Some(name.clone()),
            ..ObjectReference::default()
        })
    }
}

/// The Event's message: the router, the count, the cause, and what happens meanwhile.
pub(crate) fn create_failure_text(router: &str, f: &CreateFailure) -> String {
    format!(
        "router {router} of the set cannot be built ({} failed creates in a row, last {}: {}); next try in {} s; \
         new groups go to other routers meanwhile, its own groups wait",
        f.failures,
        f.label,
        f.message,
        f.retry_in.as_secs()
    )
}

fn unix_now() -> crate::placement::UnixSeconds {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}
