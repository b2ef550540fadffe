//! Kubernetes Events for users (`kubectl describe ingress|service`), without flooding.
//!
//! Two layers of aggregation:
//! 1. [`EventDedup`] (ours, pure, tested with a fake clock): an identical event (same object,
//!    type, reason and message) published again within `window` is not sent at all — a reconcile
//!    loop that fails the same way every few seconds produces one Event, not hundreds.
//! 2. kube's [`Recorder`]: when the same event is published again after our window but within
//!    kube's 6-minute cache, it PATCHes the existing Event's `series` (count, lastObservedTime)
//!    instead of creating a new one.
//!
//! kube's Recorder keys its series on (type, action, reason, reporter, object) but *not* the
//! message, and a series PATCH keeps the first event's note; so two different messages with the
//! same reason would show the stale message. To keep messages truthful, [`EventPublisher`] keeps
//! one `Recorder` per distinct message key, so each distinct message has its own series.

use crate::controller::CONTROLLER_NAME;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::Client;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// What kube's Recorder remembers an event for (its `CACHE_TTL`); our per-key Recorders are kept
/// at least this long so kube's series keep working.
const KUBE_RECORDER_TTL: Duration = Duration::from_secs(6 * 60);

/// Default suppression window for identical events.
pub const DEFAULT_DEDUP_WINDOW: Duration = Duration::from_secs(5 * 60);

/// One user-facing event, as the handlers produce it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct UserEvent {
    pub type_: EventType,
    /// Short PascalCase reason (`Synced`, `InvalidPath`, `OctaviaError`, ...).
    pub reason: String,
    /// The full sentence shown as Message (warning text, Octavia faultstring, ...).
    pub message: String,
    /// What we were doing (`Sync`, `Cleanup`, `UpdateMembers`).
    pub action: String,
}

impl UserEvent {
    /// An Event for `reason`: its type (Normal, Warning) is the reason's.
    pub fn of(reason: crate::reason::Reason, action: &str, message: impl Into<String>) -> Self {
        let type_ = match reason.event_type() {
            crate::reason::EventType::Normal => EventType::Normal,
            crate::reason::EventType::Warning => EventType::Warning,
        };
        Self { type_, reason: reason.as_str().into(), message: message.into(), action: action.into() }
    }

    pub fn normal(reason: &str, action: &str, message: impl Into<String>) -> Self {
        Self { type_: EventType::Normal, reason: reason.into(), message: message.into(), action: action.into() }
    }

    pub fn warning(reason: &str, action: &str, message: impl Into<String>) -> Self {
        Self { type_: EventType::Warning, reason: reason.into(), message: message.into(), action: action.into() }
    }
}

/// The fields of an `ObjectReference` that identify the object (not its resourceVersion, which
/// changes with every write and would defeat deduplication).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct RegardingKey {
    pub api_version: Option<String>,
    pub kind: Option<String>,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub uid: Option<String>,
}

/// Identity of an event for deduplication: the object and everything the user reads.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct DedupKey {
    pub object: RegardingKey,
    pub event: UserEvent,
}

impl DedupKey {
    pub fn new(ev: &UserEvent, regarding: &ObjectReference) -> Self {
        Self {
            object: RegardingKey {
                api_version: regarding.api_version.clone(),
                kind: regarding.kind.clone(),
                namespace: regarding.namespace.clone(),
                name: regarding.name.clone(),
                uid: regarding.uid.clone(),
            },
            event: ev.clone(),
        }
    }
}

/// Verdict of [`EventDedup::check`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dedup {
    /// Send it; `suppressed` identical events were dropped since the last send.
    Send { suppressed: u64 },
    /// An identical event was sent less than `window` ago.
    Suppress,
}

#[derive(Clone, Debug)]
struct Entry {
    last_sent: Instant,
    suppressed: u64,
}

/// Pure repeat-suppression table; the clock is passed in so tests control time.
#[derive(Debug)]
pub(crate) struct EventDedup {
    window: Duration,
    /// How long an entry is kept after its last send (≥ window).
    retain: Duration,
    entries: HashMap<DedupKey, Entry>,
}

impl EventDedup {
    pub fn new(window: Duration) -> Self {
        Self { window, retain: window.max(KUBE_RECORDER_TTL), entries: HashMap::new() }
    }

    /// Decides whether to send `key` at `now`, and records the decision.
    pub fn check(&mut self, key: &DedupKey, now: Instant) -> Dedup {
        self.gc(now);
        match self.entries.get_mut(key) {
            Some(e) if now.saturating_duration_since(e.last_sent) < self.window => {
                e.suppressed += 1;
                Dedup::Suppress
            }
            Some(e) => {
                let suppressed = std::mem::take(&mut e.suppressed);
                e.last_sent = now;
                Dedup::Send { suppressed }
            }
            None => {
                self.entries.insert(key.clone(), Entry { last_sent: now, suppressed: 0 });
                Dedup::Send { suppressed: 0 }
            }
        }
    }

    /// Forgets a send that failed, so the next attempt is not suppressed.
    pub(crate) fn forget(&mut self, key: &DedupKey) {
        self.entries.remove(key);
    }

    /// Drops entries whose last send is older than `retain`; bounded memory for a long-running pod.
    pub fn gc(&mut self, now: Instant) {
        let retain = self.retain;
        self.entries.retain(|_, e| now.saturating_duration_since(e.last_sent) < retain);
    }

    pub fn contains(&self, key: &DedupKey) -> bool {
        self.entries.contains_key(key)
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// Outcome of [`EventPublisher::publish`], for logs and tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Published {
    /// Sent to the API (created, or a series update by kube's Recorder).
    Sent,
    /// Dropped as a repeat within the window.
    Suppressed,
}

/// Publishes [`UserEvent`]s through kube's Recorder with [`EventDedup`] in front. Cheap to share
/// (`Arc`) between handlers; the lock is never held across an await.
pub struct EventPublisher {
    client: Client,
    reporter: Reporter,
    state: Mutex<State>,
}

struct State {
    dedup: EventDedup,
    recorders: HashMap<DedupKey, Recorder>,
}

impl EventPublisher {
    /// `instance` is the pod name (Event `reportingInstance`), e.g. from `POD_NAME`.
    pub fn new(client: Client, instance: Option<String>, window: Duration) -> Self {
        let reporter = Reporter { controller: CONTROLLER_NAME.to_string(), instance };
        Self {
            client,
            reporter,
            state: Mutex::new(State { dedup: EventDedup::new(window), recorders: HashMap::new() }),
        }
    }

    /// Publishes `ev` about `regarding` unless an identical one was sent within the window.
    pub async fn publish(&self, ev: &UserEvent, regarding: &ObjectReference) -> Result<Published, kube::Error> {
        self.publish_at(ev, regarding, Instant::now()).await
    }

    /// [`publish`](Self::publish) with an explicit clock (tests).
    pub async fn publish_at(
        &self,
        ev: &UserEvent,
        regarding: &ObjectReference,
        now: Instant,
    ) -> Result<Published, kube::Error> {
        let key = DedupKey::new(ev, regarding);
        let recorder = {
            let mut state = self.state.lock().expect("event state lock poisoned");
            if state.dedup.check(&key, now) == Dedup::Suppress {
                return Ok(Published::Suppressed);
            }
            let State { dedup, recorders } = &mut *state;
            recorders.retain(|k, _| dedup.contains(k));
            recorders
                .entry(key.clone())
                .or_insert_with(|| Recorder::new(self.client.clone(), self.reporter.clone()))
                .clone()
        };
        let event = Event {
            type_: ev.type_,
            reason: ev.reason.clone(),
            note: Some(truncate(&ev.message, 1024)),
            action: ev.action.clone(),
            secondary: None,
        };
        match recorder.publish(&event, regarding).await {
            Ok(()) => Ok(Published::Sent),
            Err(e) => {
                self.state.lock().expect("event state lock poisoned").dedup.forget(&key);
                Err(e)
            }
        }
    }
}

/// The API rejects notes over 1 kB; cut on a char boundary rather than lose the event.
fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max - 3;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &s[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(reason: &str, message: &str, name: &str) -> DedupKey {
        let r = ObjectReference {
            api_version: Some("networking.k8s.io/v1".into()),
            kind: Some("Ingress".into()),
            namespace: Some("ns".into()),
            name: Some(name.into()),
            ..Default::default()
        };
        DedupKey::new(&UserEvent::warning(reason, "Sync", message), &r)
    }

    #[test]
    fn repeats_within_window_are_suppressed_and_counted() {
        let t0 = Instant::now();
        let min = Duration::from_secs(60);
        let mut d = EventDedup::new(5 * min);
        let k = key("InvalidPath", "bad path", "a");
        assert_eq!(d.check(&k, t0), Dedup::Send { suppressed: 0 });
        assert_eq!(d.check(&k, t0 + min), Dedup::Suppress);
        assert_eq!(d.check(&k, t0 + 4 * min), Dedup::Suppress);
        // Window measured from the last send, not the last attempt.
        assert_eq!(d.check(&k, t0 + 5 * min), Dedup::Send { suppressed: 2 });
        assert_eq!(d.check(&k, t0 + 6 * min), Dedup::Suppress);
        assert_eq!(d.check(&k, t0 + 10 * min), Dedup::Send { suppressed: 1 });
    }

    #[test]
    fn different_object_reason_or_message_is_not_a_repeat() {
        let t0 = Instant::now();
        let mut d = EventDedup::new(Duration::from_secs(300));
        assert_eq!(d.check(&key("R", "m", "a"), t0), Dedup::Send { suppressed: 0 });
        assert_eq!(d.check(&key("R", "m2", "a"), t0), Dedup::Send { suppressed: 0 });
        assert_eq!(d.check(&key("R2", "m", "a"), t0), Dedup::Send { suppressed: 0 });
        assert_eq!(d.check(&key("R", "m", "b"), t0), Dedup::Send { suppressed: 0 });
        let normal = DedupKey {
            event: UserEvent { type_: EventType::Normal, ..key("R", "m", "a").event },
            ..key("R", "m", "a")
        };
        assert_eq!(d.check(&normal, t0), Dedup::Send { suppressed: 0 });
        assert_eq!(d.len(), 5);
    }

    #[test]
    fn forget_and_gc() {
        let t0 = Instant::now();
        let mut d = EventDedup::new(Duration::from_secs(60));
        let k = key("R", "m", "a");
        d.check(&k, t0);
        d.forget(&k);
        assert_eq!(d.check(&k, t0), Dedup::Send { suppressed: 0 }, "a failed send is retried");
        // Kept for kube's 6-minute series TTL even though the window is 1 minute.
        d.gc(t0 + Duration::from_secs(300));
        assert!(d.contains(&k));
        d.gc(t0 + Duration::from_secs(360));
        assert!(d.is_empty());
    }

    #[test]
    fn truncates_long_notes_on_char_boundary() {
        assert_eq!(truncate("short", 1024), "short");
        let long = "é".repeat(600); // 1200 bytes
        let t = truncate(&long, 1024);
        assert!(t.len() <= 1024 && t.ends_with("..."));
    }
}
