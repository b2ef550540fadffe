//! Read → plan → write rounds on one listener, with failure isolation (see [`super::isolation`])
//! and the leader gate, independent of where the reads and writes go: the real driver sends
//! them to Octavia (`execute`), the tests and `crate::testing::SimBackend` to the `driver::sim::Simulator`.
//!
//! A round ends at the first write Octavia refuses for good: the write's object is put on hold
//! and the next round re-reads and re-plans without it, so every other change still goes out in
//! the same convergence (a plan made with the refused object in it would give the others
//! positions counted with it). Transient errors end the convergence as before.

use super::actual::ActualRouter;
use super::admission::QuotaLedger;
use super::diff::plan_view;
use super::error::{DriverError, Result};
use super::isolation::{
    WriteBackoff, WriteKey, exclude_held, failure_reason, filter_held, is_permanent, owners, write_key,
};
use super::plan::{DiffOptions, Write};
use super::report::{ConvergeReport, WriteFailure, WriteRecord};
use super::view::DesiredView;
use crate::model::DesiredRouter;
use std::collections::BTreeSet;
use std::future::Future;
use std::sync::Mutex;
use std::time::Instant;

/// Read → plan → write rounds of one convergence at most, not counting the rounds that ended on
/// a refused write (see [`converge_listener`]).
pub const MAX_ROUNDS: usize = 3;
/// Refused writes one convergence isolates at most (each costs one more round); beyond, the
/// next convergence continues.
pub const MAX_REFUSALS: usize = 8;

/// One listener's reads and writes.
pub trait ListenerIo: Send {
    /// The router as seen from the listener (`round` > 1: after our own writes).
    fn read(&mut self, round: usize) -> impl Future<Output = Result<ActualRouter>> + Send;
    /// One write, waited for (the router ACTIVE again), and its record. A refusal is a
    /// [`DriverError::Write`] carrying Octavia's error.
    fn send(&mut self, w: &Write) -> impl Future<Output = Result<WriteRecord>> + Send;
    /// Writes retried after a busy 409 so far (monotonic): more after a round means someone
    /// else wrote meanwhile (see `Router::converge`).
    fn busy(&self) -> u64 {
        0
    }
    /// Whether this process may still write (the leader gate): checked before every write.
    fn may_write(&self) -> bool {
        true
    }
}

/// How the rounds of one listener run.
pub struct RoundOptions<'a> {
    pub listener: &'a str,
    pub diff: &'a DiffOptions,
    /// Read the router back after the writes even when nobody else wrote (first convergence of
    /// the process: a dead predecessor's create may land after our read).
    pub verify: bool,
    pub backoff: &'a Mutex<WriteBackoff>,
    /// The time of this convergence (injected: the holds are measured against it).
    pub now: Instant,
    /// The project's L7 quota and what the router's listeners hold (see [`super::admission`]).
    pub quota: &'a Mutex<QuotaLedger>,
}

impl RoundOptions<'_> {
    /// `now` advanced by the whole seconds since `started` (the convergence's start): a hold
    /// counts from the refusal, not from the start of a sync that may last longer than the hold
    /// on a slow Octavia (whole seconds: a table test's time stays exactly what it gives).
    fn clock(&self, started: Instant) -> Instant {
        self.now + std::time::Duration::from_secs(started.elapsed().as_secs())
    }
}

/// What a convergence of the whole router does before its listeners' rounds: forgets the holds
/// of pools no longer desired (pools are the router's, not one listener's) and takes the
/// project's L7 quota as the translation attached it (see [`super::admission`]).
pub fn begin_convergence(backoff: &Mutex<WriteBackoff>, quota: &Mutex<QuotaLedger>, desired: &DesiredRouter) {
    backoff.lock().expect("backoff lock").forget_undesired_pools(desired);
    quota.lock().expect("quota lock").quota = desired.quota.clone();
}

/// Converge one listener's children to `desired`, in rounds (see the module docs).
pub async fn converge_listener<I: ListenerIo>(
    io: &mut I,
    desired: &DesiredRouter,
    o: &RoundOptions<'_>,
    report: &mut ConvergeReport,
) -> Result<()> {
    converge_view(io, &DesiredView::of(desired), o, report).await
}

/// [`converge_listener`] on a view of the desired router (the HTTPS listener's, or the HTTP
/// listener's without its held redirects): read -> plan -> execute, in rounds.
pub(crate) async fn converge_view<I: ListenerIo>(
    io: &mut I,
    desired: &DesiredView<'_>,
    o: &RoundOptions<'_>,
    report: &mut ConvergeReport,
) -> Result<()> {
    let started = Instant::now();
    let mut rounds = 0;
    let mut refused = 0;
    // A hold on a policy no longer desired is dropped (an Ingress deleted, or re-created: the
    // finalizer makes a convergence without it run before its name can be used again). Pools:
    // see `WriteBackoff::forget_undesired_pools`, called once per convergence.
    o.backoff.lock().expect("backoff lock").forget_undesired_policies(o.listener, desired);
    let mut waiting = Vec::new();
    for round in 1.. {
        let busy_before = io.busy();
        let actual = io.read(round).await?;
        let held = o.backoff.lock().expect("backoff lock").held(o.clock(started));
        let held_keys: BTreeSet<WriteKey> = held.keys().cloned().collect();
        let existing = existing_keys(&actual, o);
        let without_held = exclude_held(desired, o.listener, &held_keys, &existing);
        let admission =
            o.quota.lock().expect("quota lock").admit_view(o.listener, &without_held, &actual, &o.diff.ownership);
        let plan = plan_view(admission.admitted.as_ref().unwrap_or(&without_held), &actual, o.diff);
        let (writes, _) = filter_held(plan.writes, o.listener, &held_keys);
        // Room freed by this round's deletes is for what waits: one more round then.
        let frees_room =
            !admission.waiting.is_empty() && writes.iter().any(|w| matches!(w, Write::DeletePolicy { .. }));
        waiting = admission.waiting;
        report.conflicts.extend(plan.conflicts.iter().map(|c| c.message.clone()));
        if round == 1 {
            report.held.extend(held.iter().map(|(k, h)| WriteFailure {
                object: k.to_string(),
                write: String::new(),
                reason: h.reason,
                message: h.message.clone(),
                owners: owners(k, desired),
            }));
        }
        report.rounds += 1;
        if writes.is_empty() && round > 1 {
            break;
        }
        let failure = run_writes(io, &writes, desired, o, started, report).await?;
        let raced = io.busy() > busy_before;
        match failure {
            Some(f) => {
                report.failures.push(f);
                refused += 1;
                if refused >= MAX_REFUSALS {
                    break;
                }
            }
            None => {
                rounds += 1;
                let again = o.verify && rounds == 1 || raced || frees_room;
                if writes.is_empty() || !again || rounds >= MAX_ROUNDS {
                    break;
                }
            }
        }
    }
    // What still waits after the last round (an Ingress waits on either listener once).
    for w in waiting {
        if !report.quota_waiting.iter().any(|r| r.owner == w.owner) {
            report.quota_waiting.push(w);
        }
    }
    // Each round reports the same conflicts again.
    let mut seen = BTreeSet::new();
    report.conflicts.retain(|c| seen.insert(c.clone()));
    let next = o.backoff.lock().expect("backoff lock").next_retry(o.clock(started));
    report.retry_after = match (report.retry_after, next) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    Ok(())
}

/// Our pools and this listener's policies that exist on the router, as keys.
fn existing_keys(actual: &ActualRouter, o: &RoundOptions<'_>) -> BTreeSet<WriteKey> {
    let own = &o.diff.ownership;
    let pools = actual.pools.iter().filter(|p| own.owns(&p.tags)).map(|p| WriteKey::Pool(p.name.clone()));
    let policies = actual
        .policies
        .iter()
        .filter(|p| own.owns(&p.tags))
        .map(|p| WriteKey::Policy { listener: o.listener.into(), name: p.name.clone() });
    pools.chain(policies).collect()
}

/// The writes of one round, in order; `Some` on the first one refused for good (its object put
/// on hold), after which the round ends.
async fn run_writes<I: ListenerIo>(
    io: &mut I,
    writes: &[Write],
    desired: &DesiredView<'_>,
    o: &RoundOptions<'_>,
    started: Instant,
    report: &mut ConvergeReport,
) -> Result<Option<WriteFailure>> {
    let mut done: BTreeSet<WriteKey> = BTreeSet::new();
    for w in writes {
        // A lost lease stops the writes here, not after the job: the new leader writes next.
        if !io.may_write() {
            return Err(DriverError::NotLeader);
        }
        let key = write_key(w, o.listener);
        match io.send(w).await {
            Ok(record) => {
                report.writes.push(record);
                done.insert(key);
            }
            Err(DriverError::Write { write, source }) if is_permanent(&source) => {
                let reason = failure_reason(&source);
                let message = source.to_string();
                let delay = o.backoff.lock().expect("backoff lock").failed(
                    key.clone(),
                    reason,
                    message.clone(),
                    o.clock(started),
                );
                tracing::warn!(%write, object = %key, reason, retry_in_s = delay.as_secs(), error = %source,
                    "octavia refused a write: its object is on hold, the other changes go on");
                return Ok(Some(WriteFailure {
                    object: key.to_string(),
                    write,
                    reason,
                    message,
                    owners: owners(&key, desired),
                }));
            }
            Err(e) => return Err(e),
        }
    }
    // Every object written in full this round is off hold.
    let mut b = o.backoff.lock().expect("backoff lock");
    for k in &done {
        b.succeeded(k);
    }
    Ok(None)
}
