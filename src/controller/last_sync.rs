//! When a reconcile may answer from the last Sync instead of reading the router again.
//!
//! A reconcile whose desired state is the one last synced is answered from that Sync's report
//! (drift is the resync's business). Objects on hold do not change this: until the first hold's
//! delay is over, a new convergence of the same desired state could send nothing more (the held
//! writes wait, everything else is converged), so it would only cost a read of the whole router
//! per event. After that delay, the next reconcile converges again (the Ingress handler requeues
//! for it). Routes waiting for the quota need no timer: what admits them changes the desired
//! state (an Ingress deleted, the budget read again at resync).

use crate::driver::ConvergeReport;
use crate::model::DesiredRouter;
use std::sync::Arc;
use std::time::Instant;

/// The last successful Sync: its desired state, its report, and when its first hold ends.
#[derive(Clone, Debug)]
pub(crate) struct LastSync {
    pub desired: Arc<DesiredRouter>,
    pub report: ConvergeReport,
    retry_at: Option<Instant>,
}

impl LastSync {
    /// The Sync of `desired` that made `report`, finished at `now`.
    pub fn new(desired: Arc<DesiredRouter>, report: ConvergeReport, now: Instant) -> Self {
        let retry_at = report.retry_after.map(|d| now + d);
        Self { desired, report, retry_at }
    }

    /// The report to answer a Sync of `desired` at `now` with, if no convergence is needed:
    /// the same desired state and no hold whose delay is over (`retry_after` counts from `now`).
    pub fn reuse(&self, desired: &DesiredRouter, now: Instant) -> Option<ConvergeReport> {
        if *self.desired != *desired || self.retry_at.is_some_and(|t| t <= now) {
            return None;
        }
        let mut r = self.report.clone();
        r.retry_after = self.retry_at.map(|t| t - now);
        Some(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::WriteFailure;
    use std::time::Duration;

    /// With an object on hold, an unchanged desired state is answered without a convergence
    /// until the hold's delay is over; a changed one always converges.
    #[test]
    fn holds_reuse_the_last_sync_until_their_delay_is_over() {
        let t0 = Instant::now();
        let held = ConvergeReport {
            failures: vec![WriteFailure {
                object: "L7 policy p".into(),
                write: "create policy p".into(),
                reason: "invalid",
                message: "400".into(),
                owners: vec![],
            }],
            retry_after: Some(Duration::from_secs(10)),
            ..ConvergeReport::default()
        };
        let desired = DesiredRouter { default_pool: Some("a".into()), ..DesiredRouter::default() };
        let changed = DesiredRouter { default_pool: Some("b".into()), ..DesiredRouter::default() };
        let last = LastSync::new(Arc::new(desired.clone()), held, t0);
        let at = |s: u64| t0 + Duration::from_secs(s);
        // (desired, at, reused, retry_after of the answer)
        let cases = [
            (&desired, at(0), true, Some(10)),
            (&desired, at(4), true, Some(6)),
            (&desired, at(10), false, None),
            (&desired, at(30), false, None),
            (&changed, at(1), false, None),
        ];
        for (d, now, reused, retry) in cases {
            let got = last.reuse(d, now);
            assert_eq!(got.is_some(), reused, "{d:?} at {:?}", now - t0);
            if let Some(r) = got {
                assert_eq!(r.retry_after.map(|d| d.as_secs()), retry);
            }
        }
        // Without holds: reused as long as the desired state is the same.
        let clean = LastSync::new(Arc::new(desired.clone()), ConvergeReport::default(), t0);
        assert!(clean.reuse(&desired, at(3600)).is_some());
    }
}
