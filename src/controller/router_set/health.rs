//! Each router's health as its Syncs tell it, for two decisions:
//!
//! - placement: a router whose last Sync failed (a create refused for an amphora, Nova or
//!   floating-IP quota; ERROR) takes no new group until it has synced without failure for
//!   `placement::ROUTER_SETTLE_SECS` (`placement::health`);
//! - the create's retry: a router that never synced in this process (its create fails) is
//!   tried again only after an exponential backoff (`CREATE_BACKOFF_MIN` doubling up to
//!   `CREATE_BACKOFF_MAX`), not at every reconcile of every Ingress. A router that exists and
//!   then fails (ERROR) is not backed off: its writer refuses at once, without a create.

use crate::controller::writer::WriteError;
use crate::placement::{RouterHealth, RouterIndex, UnixSeconds};
use backon::{BackoffBuilder, ExponentialBackoff, ExponentialBuilder};
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The first wait after a failed create.
pub const CREATE_BACKOFF_MIN: Duration = Duration::from_secs(10);
/// The longest wait between two creates (the resync period's order).
pub const CREATE_BACKOFF_MAX: Duration = Duration::from_secs(300);

/// A router's create failed (or waits for its next try): what the metric, the Event and
/// `/readyz` say.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CreateFailure {
    /// Failed creates in a row.
    pub failures: u32,
    /// Until the next try.
    pub retry_in: Duration,
    /// The last failure's label and message.
    pub label: &'static str,
    pub message: String,
}

#[derive(Default)]
struct Track {
    /// A Sync of this router succeeded in this process: it exists.
    built: bool,
    /// Its last Sync failed.
    failing: bool,
    /// The first success after the last failure (None: never failed, or settled).
    healthy_since: Option<UnixSeconds>,
    failures: u32,
    backoff: Option<ExponentialBackoff>,
    retry_at: Option<Instant>,
    last: Option<(&'static str, String)>,
}

/// The health of every router of the set, by index.
#[derive(Default)]
pub struct SetHealth {
    routers: Mutex<BTreeMap<RouterIndex, Track>>,
}

fn create_backoff() -> ExponentialBackoff {
    ExponentialBuilder::new()
        .with_min_delay(CREATE_BACKOFF_MIN)
        .with_max_delay(CREATE_BACKOFF_MAX)
        .with_factor(2.0)
        .without_max_times()
        .build()
}

impl SetHealth {
    /// Router `index` synced at `now`.
    pub fn succeeded(&self, index: RouterIndex, now: UnixSeconds) {
        let mut routers = self.routers.lock().expect("lock");
        let t = routers.entry(index).or_default();
        if t.failing {
            t.healthy_since = Some(now);
        }
        *t = Track { built: true, healthy_since: t.healthy_since, ..Track::default() };
    }

    /// Router `index`'s Sync failed with `e` at `at`. A router never built: its create failed,
    /// and waits for its backoff (returned).
    pub fn failed(&self, index: RouterIndex, at: Instant, e: &WriteError) -> Option<CreateFailure> {
        let mut routers = self.routers.lock().expect("lock");
        let t = routers.entry(index).or_default();
        t.failing = true;
        t.healthy_since = None;
        t.last = Some((e.label, e.message.clone()));
        // Another waiter of the same failed job (concurrent Syncs share a writer's job): counted once.
        if t.built || t.retry_at.is_some_and(|r| r > at) {
            return None;
        }
        t.failures = t.failures.saturating_add(1);
        let delay = t.backoff.get_or_insert_with(create_backoff).next().unwrap_or(CREATE_BACKOFF_MAX);
        t.retry_at = Some(at + delay);
        Some(CreateFailure { failures: t.failures, retry_in: delay, label: e.label, message: e.message.clone() })
    }

    /// Whether router `index`'s create waits at `at` for its backoff (then its Sync is not
    /// submitted): the failure so far, with the time left.
    pub fn waiting(&self, index: RouterIndex, at: Instant) -> Option<CreateFailure> {
        let routers = self.routers.lock().expect("lock");
        let t = routers.get(&index)?;
        let retry_at = t.retry_at.filter(|r| *r > at)?;
        let (label, message) = t.last.clone().unwrap_or(("create_failed", String::new()));
        Some(CreateFailure { failures: t.failures, retry_in: retry_at - at, label, message })
    }

    /// The health placement sees for router `index` at `now`, with `settle` seconds of health
    /// needed after a failure.
    pub fn of(&self, index: RouterIndex, now: UnixSeconds, settle: u64) -> RouterHealth {
        let routers = self.routers.lock().expect("lock");
        match routers.get(&index) {
            None => RouterHealth::Healthy,
            Some(t) if t.failing => RouterHealth::Failing,
            Some(t) => match t.healthy_since.map(|s| s.saturating_add(settle)) {
                Some(until) if until > now => RouterHealth::Recovering { until },
                _ => RouterHealth::Healthy,
            },
        }
    }

    /// Until the first create's backoff ends (None: none waits).
    pub fn next_retry(&self, at: Instant) -> Option<Duration> {
        let routers = self.routers.lock().expect("lock");
        routers.values().filter_map(|t| t.retry_at).filter(|r| *r > at).map(|r| r - at).min()
    }

    /// Router `index` was deleted: a router at that index later is a new one.
    pub fn forget(&self, index: RouterIndex) {
        self.routers.lock().expect("lock").remove(&index);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A router that never synced: each failed create doubles the wait (10, 20, 40 … capped
    /// at 300 s), during which it is not tried; placement sees it Failing. Once it syncs, it
    /// is Recovering for the settle period, then Healthy. A built router that fails (ERROR) is
    /// Failing but never waits.
    #[test]
    fn failed_creates_back_off_and_a_recovered_router_settles() {
        let health = SetHealth::default();
        let t0 = Instant::now();
        let e = WriteError::new("create_refused", "Quota exceeded for resources: ['floatingip']");
        let mut delays = Vec::new();
        let mut at = t0;
        for _ in 0..7 {
            let f = health.failed(2, at, &e).expect("a create failed");
            delays.push(f.retry_in.as_secs());
            assert_eq!(health.waiting(2, at + Duration::from_secs(1)).map(|w| w.failures), Some(f.failures));
            assert_eq!(health.failed(2, at, &e), None, "the same job's other waiter is not counted again");
            at += f.retry_in;
            assert_eq!(health.waiting(2, at), None, "its wait is over");
        }
        assert_eq!(delays, [10, 20, 40, 80, 160, 300, 300]);
        assert_eq!(health.of(2, 1000, 300), RouterHealth::Failing);
        assert_eq!(health.next_retry(t0), Some(Duration::from_secs(10 + 20 + 40 + 80 + 160 + 300 + 300)));
        health.succeeded(2, 2000);
        assert_eq!(health.waiting(2, t0), None);
        // (now, health) with a 300 s settle period from 2000.
        for (now, want) in [
            (2000, RouterHealth::Recovering { until: 2300 }),
            (2299, RouterHealth::Recovering { until: 2300 }),
            (2300, RouterHealth::Healthy),
        ] {
            assert_eq!(health.of(2, now, 300), want, "at {now}");
        }
        // Built, then ERROR: Failing, no backoff, no create failure.
        assert_eq!(health.failed(2, t0, &WriteError::new("router_error", "ERROR")), None);
        assert_eq!(health.of(2, 2400, 300), RouterHealth::Failing);
        assert_eq!(health.waiting(2, t0), None);
        // A router never seen is healthy.
        assert_eq!(health.of(5, 0, 300), RouterHealth::Healthy);
    }
}
