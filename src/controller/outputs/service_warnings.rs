//! Warning Events on Services: the translation's warnings about a Service (`NoEndpoints`: a pool
//! without any ready member; `EndpointPortNotFound`: an EndpointSlice without the Service port's
//! name) become Kubernetes Events on that Service, so `kubectl describe service` says why its
//! route answers 503. They are part of every Sync's outputs (`crate::controller::outputs`), published
//! when due.
//!
//! Every Sync (an Ingress change, a Service change, the periodic resync) translates again and finds
//! the same warnings, so publishing each time would post one Event per Sync. [`ServiceWarnings`]
//! publishes a warning when it appears, and again only after [`REPUBLISH_AFTER`] while it lasts
//! (Kubernetes drops Events after an hour by default: a problem that lasts must stay visible); a
//! warning that went away and came back is new again. The Event publisher's own suppression
//! window ([`crate::controller::outputs::events`]) still applies on top.

use crate::controller::outputs::events::UserEvent;
use crate::model::{KubeRef, Warning};
use k8s_openapi::api::core::v1::{ObjectReference, Service};
use kube::Resource;
use kube::runtime::reflector::{ObjectRef, Store};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// A warning still present is published again after this long (Kubernetes' default event TTL).
pub(crate) const REPUBLISH_AFTER: Duration = Duration::from_secs(60 * 60);

/// The Service warnings published, and when (pure, clock passed in).
#[derive(Debug, Default)]
pub(crate) struct ServiceWarnings {
    published: BTreeMap<Warning, Instant>,
}

impl ServiceWarnings {
    /// The warnings of one translation that must be published now: those about a Service that
    /// were not in the previous translation, or were published [`REPUBLISH_AFTER`] ago or more.
    /// Forgets the warnings no longer present (so they are published again if they come back).
    pub(crate) fn due(&mut self, warnings: &[Warning], now: Instant) -> Vec<Warning> {
        let current: Vec<&Warning> = warnings.iter().filter(|w| w.object.is_service()).collect();
        self.published.retain(|w, _| current.contains(&w));
        self.fresh(current, now)
    }

    /// [`ServiceWarnings::due`] for the warnings about ONE Service (the Members path computes
    /// that Service's pools only): the other Services' warnings are left as they are.
    pub(crate) fn due_for(&mut self, service: &KubeRef, warnings: &[Warning], now: Instant) -> Vec<Warning> {
        let current: Vec<&Warning> = warnings.iter().filter(|w| w.object == *service).collect();
        self.published.retain(|w, _| w.object != *service || current.contains(&w));
        self.fresh(current, now)
    }

    fn fresh(&mut self, current: Vec<&Warning>, now: Instant) -> Vec<Warning> {
        let mut out = Vec::new();
        for w in current {
            let fresh = self.published.get(w).is_none_or(|at| now.saturating_duration_since(*at) >= REPUBLISH_AFTER);
            if fresh && !out.contains(w) {
                self.published.insert(w.clone(), now);
                out.push(w.clone());
            }
        }
        out
    }
}

/// The Event's object: the Service from the caches (with its uid), else a reference by name.
fn regarding(services: &Store<Service>, service: &KubeRef) -> ObjectReference {
    services.get(&ObjectRef::new(&service.name).within(&service.namespace)).map(|s| s.object_ref(&())).unwrap_or_else(
        || ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Service".into()),
            namespace: Some(service.namespace.clone()),
            name: Some(service.name.clone()),
            ..ObjectReference::default()
        },
    )
}

/// The Events of the Service warnings `due` (see [`ServiceWarnings::due`]), each on its
/// Service; `action` is the step that found them (`Sync`, or `UpdateMembers` for one Service's
/// Members path). The context publishes them.
pub fn events(due: &[Warning], services: &Store<Service>, action: &str) -> Vec<(UserEvent, ObjectReference)> {
    due.iter().map(|w| (UserEvent::of(w.reason, action, &w.message), regarding(services, &w.object))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn warning(kind: &str, name: &str, reason: &str) -> Warning {
        Warning {
            object: KubeRef::new(kind, "shop", name),
            reason: crate::reason::Reason::named(reason).unwrap(),
            message: format!("{kind} shop/{name}: {reason}"),
        }
    }

    #[test]
    fn due_table() {
        let t0 = Instant::now();
        let no_eps = warning("Service", "web", "NoEndpoints");
        let port = warning("Service", "api", "EndpointPortNotFound");
        let ingress = warning("Ingress", "web", "InvalidPath");
        let mut w = ServiceWarnings::default();
        // (step, now, warnings of the translation, published)
        let steps: Vec<(&str, Instant, Vec<Warning>, Vec<Warning>)> = vec![
            (
                "first sight; Ingress warnings are not ours",
                t0,
                vec![no_eps.clone(), ingress.clone()],
                vec![no_eps.clone()],
            ),
            ("resync: same warning, not again", t0 + Duration::from_secs(600), vec![no_eps.clone()], vec![]),
            (
                "a second one appears",
                t0 + Duration::from_secs(601),
                vec![no_eps.clone(), port.clone()],
                vec![port.clone()],
            ),
            ("twice in one translation: once", t0 + Duration::from_secs(602), vec![port.clone(), port.clone()], vec![]),
            ("NoEndpoints cleared", t0 + Duration::from_secs(700), vec![port.clone()], vec![]),
            (
                "and back: new again",
                t0 + Duration::from_secs(701),
                vec![no_eps.clone(), port.clone()],
                vec![no_eps.clone()],
            ),
            (
                "lasting an hour: republished",
                t0 + Duration::from_secs(601 + 3600),
                vec![no_eps.clone(), port.clone()],
                vec![port.clone()],
            ),
        ];
        for (step, now, warnings, want) in steps {
            assert_eq!(w.due(&warnings, now), want, "step: {step}");
        }
    }

    /// The Events of due warnings: one per warning, on its Service (by name when the cache has
    /// not got it), with the action of the step that found it.
    #[test]
    fn due_warnings_become_events_on_their_service() {
        let services = kube::runtime::reflector::store::Writer::<Service>::default().as_reader();
        let due = [warning("Service", "web", "NoEndpoints")];
        let events = events(&due, &services, "UpdateMembers");
        assert_eq!(events.len(), 1);
        let (ev, on) = &events[0];
        assert_eq!((ev.reason.as_str(), ev.action.as_str()), ("NoEndpoints", "UpdateMembers"));
        assert_eq!(
            (on.kind.as_deref(), on.namespace.as_deref(), on.name.as_deref()),
            (Some("Service"), Some("shop"), Some("web"))
        );
    }
}
