//! Failure isolation for the HTTPS side of a convergence: a write refused for good by Octavia
//! (the HTTPS listener's create or certificate switch) or by Barbican (storing or deleting a
//! secret) puts its object on hold, with the same backoff, Events and metrics as a listener's
//! children ([`super::isolation`]), and the convergence goes on: the HTTP side, the floating IP
//! and the Ingresses' statuses do not wait for a certificate Octavia or Barbican will refuse
//! again. Transient failures (Barbican down, 5xx, busy) are not isolated here: the caller reports
//! them at the end of the convergence, after the floating IP.
//!
//! The HTTPS holds live in a backoff of their own: the rounds of the listeners' plans report
//! their holds per listener and never see these.

use super::error::DriverError;
use super::isolation::{WriteBackoff, WriteKey, failure_reason, is_permanent};
use super::report::{ConvergeReport, WriteFailure};
use crate::model::{DesiredRouter, HttpsListener, KubeRef};
use std::collections::BTreeSet;
use std::sync::Mutex;
use std::time::Instant;

/// The HTTPS holds of one convergence, at its time.
pub struct HttpsHolds<'a> {
    pub backoff: &'a Mutex<WriteBackoff>,
    pub now: Instant,
}

/// `(reason, message)` of an error that will repeat (a 4xx other than busy, a certificate that
/// cannot be bundled); None for a transient one.
pub fn refusal(e: &DriverError) -> Option<(&'static str, String)> {
    match e {
        DriverError::Write { source, .. } | DriverError::KeyManager { source } if is_permanent(source) => {
            Some((failure_reason(source), source.to_string()))
        }
        DriverError::Certificate(message) => Some(("invalid", message.clone())),
        _ => None,
    }
}

/// The Ingresses served by `certificates` of `desired` (all of them when `None`).
pub(crate) fn certificate_owners(desired: Option<&HttpsListener>, certificates: Option<&[&str]>) -> Vec<KubeRef> {
    let Some(desired) = desired else { return Vec::new() };
    let owners: BTreeSet<KubeRef> = desired
        .certificates
        .values()
        .filter(|c| certificates.is_none_or(|names| names.contains(&c.name.as_str())))
        .flat_map(|c| c.owners.iter().cloned())
        .collect();
    owners.into_iter().collect()
}

/// The owners of the HTTPS listeners that validate client certificates against the CA `ca`.
pub(crate) fn ca_owners(desired: &DesiredRouter, ca: &str) -> Vec<KubeRef> {
    let listeners = desired.https.iter().chain(desired.more_https.values());
    let using = listeners.filter(|l| l.client_validation.as_ref().is_some_and(|v| v.ca.name == ca));
    let owners: BTreeSet<KubeRef> = using.flat_map(|l| certificate_owners(Some(l), None)).collect();
    owners.into_iter().collect()
}

impl HttpsHolds<'_> {
    /// Whether `key` is on hold now.
    pub(crate) fn is_held(&self, key: &WriteKey) -> bool {
        self.backoff.lock().expect("https backoff lock").held(self.now).contains_key(key)
    }

    /// Records the refusal of `write` on `key`: on hold, reported (Events on `owners`, metric).
    pub fn refused(
        &self,
        key: WriteKey,
        write: String,
        (reason, message): (&'static str, String),
        owners: Vec<KubeRef>,
        report: &mut ConvergeReport,
    ) {
        let delay =
            self.backoff.lock().expect("https backoff lock").failed(key.clone(), reason, message.clone(), self.now);
        tracing::warn!(%write, object = %key, reason, retry_in_s = delay.as_secs(), error = %message,
            "a write of the HTTPS side was refused: its object is on hold, the other changes go on");
        report.failures.push(WriteFailure { object: key.to_string(), write, reason, message, owners });
    }

    pub(crate) fn succeeded(&self, key: &WriteKey) {
        self.backoff.lock().expect("https backoff lock").succeeded(key);
    }

    /// The holds still running, in `report.held` (with `owners` of each) and its `retry_after`.
    pub fn report(&self, report: &mut ConvergeReport, owners: impl Fn(&WriteKey) -> Vec<KubeRef>) {
        let b = self.backoff.lock().expect("https backoff lock");
        for (k, h) in b.held(self.now) {
            report.held.push(WriteFailure {
                object: k.to_string(),
                write: String::new(),
                reason: h.reason,
                message: h.message.clone(),
                owners: owners(&k),
            });
        }
        report.retry_after = match (report.retry_after, b.next_retry(self.now)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::openstack::{Error as OsError, Service};
    use std::time::Duration;

    fn api(service: Service, status: u16, message: &str) -> OsError {
        OsError::Api { service, method: "POST".into(), path: "/x".into(), status, message: message.into() }
    }

    #[test]
    fn refusals_are_the_errors_that_repeat() {
        let write =
            |status, m: &str| DriverError::Write { write: "w".into(), source: api(Service::LoadBalancer, status, m) };
        let barbican = |status, m: &str| DriverError::KeyManager { source: api(Service::Barbican, status, m) };
        assert_eq!(refusal(&write(400, "Could not retrieve certificate")).map(|r| r.0), Some("invalid"));
        assert_eq!(refusal(&write(409, "Another Listener ... protocol_port 80")).map(|r| r.0), Some("conflict"));
        assert_eq!(refusal(&barbican(403, "Quota exceeded")).map(|r| r.0), Some("quota"));
        assert_eq!(refusal(&DriverError::Certificate("no key".into())).map(|r| r.0), Some("invalid"));
        // Transient: the whole convergence is retried and reported at its end.
        assert!(refusal(&write(409, "Load Balancer x is immutable and cannot be updated.")).is_none());
        assert!(refusal(&barbican(503, "Service Unavailable")).is_none());
        assert!(refusal(&DriverError::NotLeader).is_none());
    }

    #[test]
    fn a_refusal_is_held_reported_and_released_on_success() {
        let backoff = Mutex::new(WriteBackoff::default());
        let t0 = Instant::now();
        let holds = HttpsHolds { backoff: &backoff, now: t0 };
        let mut report = ConvergeReport::default();
        let owner = KubeRef::new("Ingress", "shop", "web");
        holds.refused(
            WriteKey::HttpsListener,
            "create".into(),
            ("invalid", "400".into()),
            vec![owner.clone()],
            &mut report,
        );
        assert_eq!(report.failures.len(), 1);
        assert_eq!(report.failures[0].object, "HTTPS listener");
        assert_eq!(report.failures[0].owners, vec![owner.clone()]);
        assert!(holds.is_held(&WriteKey::HttpsListener));
        let mut next = ConvergeReport::default();
        holds.report(&mut next, |_| vec![owner.clone()]);
        assert_eq!(next.held.len(), 1);
        assert_eq!(next.retry_after, Some(Duration::from_secs(10)));
        let later = HttpsHolds { backoff: &backoff, now: t0 + Duration::from_secs(10) };
        assert!(!later.is_held(&WriteKey::HttpsListener), "tried again once the delay is over");
        later.succeeded(&WriteKey::HttpsListener);
        assert!(backoff.lock().unwrap().next_retry(t0).is_none());
    }
}
