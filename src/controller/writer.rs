//! The serial router writer: ONE task per router owns the driver and makes every Octavia write,
//! one job at a time (Octavia refuses concurrent writes on a load balancer with 409 anyway).
//!
//! Handlers submit jobs through a [`WriterHandle`] and may await the result:
//!
//! - [`Job::Sync`]: converge the whole router (Ingress handler, Service handler on a structural
//!   change, resync). A Sync from the caches carries no desired state: the writer translates
//!   ONCE when it takes the job, from the caches as they are then, and answers every waiter with
//!   that one [`Synced`] (desired state and report). A Sync whose desired state equals the last
//!   clean Sync's and that is not forced is answered without touching the router (drift is the
//!   resync's business);
//! - [`Job::Members`]: replace one pool's members (Service/Endpoints handler), one batch write.
//!
//! Coalescing ([`WriteQueue`], pure and table-tested): a Sync stands for the full desired state
//! of the caches *after* everything already queued, so a new Sync replaces a queued
//! Sync (every waiter gets the result of the one that runs) and makes the queued Members jobs it
//! covers redundant (their waiters get [`MembersOutcome::Superseded`] once the Sync succeeded). A
//! newer Members job for a pool replaces the queued one for the same pool (latest wins: one batch
//! member update per pool per change window).
//!
//! Endpoint changes do not wait behind whole-router Syncs: a Members job whose pool the router
//! holds (it is in the last successful Sync's desired state) runs *before* a queued Sync that
//! translates the caches when it starts, and such a Sync no longer supersedes it. While Ingress
//! reconciles keep submitting Syncs (a start, a rollout), the endpoint change would otherwise
//! wait for the Sync in flight and then a whole Sync more (minutes at 10k Ingresses) instead of
//! one batch write. Correctness holds because the overtaken Sync translates the caches after the
//! Members job ran, so it carries the same endpoints or newer ones and finds that pool's members
//! already right. A Sync to a desired state given at submission (the placed set's parts) keeps
//! the old order: it may predate the endpoint change, so the Members job runs after it. A queued
//! Sync is overtaken by at most [`MEMBERS_AHEAD_OF_A_SYNC`] Members jobs, so a stream of
//! endpoint changes over many pools cannot starve it.
//!
//! The queue therefore holds at most one Sync and at most one Members job per pool.

use crate::controller::health::Readiness;
use crate::controller::metrics::{Metrics, RouterMetrics};
use crate::driver::{ConvergeReport, MembersChange, WriteGate};
use crate::model::{DesiredRouter, Pool};
use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::sync::{Notify, oneshot, watch};
use tokio::task::JoinHandle;

/// A failed write, cloneable so every coalesced waiter gets it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct WriteError {
    /// Low-cardinality label (the driver error's label, or `shutdown`).
    pub label: &'static str,
    pub message: String,
}

impl WriteError {
    pub fn new(label: &'static str, message: impl Into<String>) -> Self {
        Self { label, message: message.into() }
    }

    fn shutdown() -> Self {
        Self::new("shutdown", "the router writer is shutting down")
    }
}

/// What a Members job did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MembersOutcome {
    /// The pool already had exactly these members: no write.
    Unchanged,
    /// One batch member update was made (and the router is ACTIVE again).
    Updated,
    /// The pool does not exist on the router (yet): the caller must submit a Sync.
    PoolMissing,
    /// A Sync queued after this job made it redundant and succeeded.
    Superseded,
}

impl From<MembersChange> for MembersOutcome {
    fn from(c: MembersChange) -> Self {
        match c {
            MembersChange::Unchanged => MembersOutcome::Unchanged,
            MembersChange::Updated => MembersOutcome::Updated,
            MembersChange::PoolMissing => MembersOutcome::PoolMissing,
        }
    }
}

/// What a Sync job answers its waiters: the one desired state it converged to and the report.
#[derive(Clone, Debug)]
pub struct Synced {
    pub desired: Arc<DesiredRouter>,
    pub report: ConvergeReport,
    /// False when the job was answered from the last clean Sync (same desired state, not forced).
    pub written: bool,
    /// The job's number on its writer: the waiters of one job share it, so that its outputs
    /// are applied once (see `outputs::Ledger`).
    pub job: u64,
}

/// The translation of the caches as they are now (installed by the controller's `Context`).
pub type Translate = Arc<dyn Fn() -> DesiredRouter + Send + Sync>;

/// What the backend's convergence returns.
pub type SyncResult = Result<ConvergeReport, WriteError>;
/// What a Sync job answers its waiters.
pub(crate) type SyncedResult = Result<Synced, WriteError>;
pub type MembersResult = Result<MembersOutcome, WriteError>;

/// What the writer needs from the driver; implemented by the real `Router` (`OctaviaBackend`)
/// and by an in-memory `crate::testing::SimBackend` for tests.
pub use crate::driver::FoundRouter;

pub trait RouterBackend: Send + Sync + 'static {
    /// Converge the whole router to `desired`.
    fn sync(&self, desired: &DesiredRouter) -> impl Future<Output = SyncResult> + Send;
    /// Make `pool`'s members exactly `pool.members` (one batch write if they differ).
    fn set_members(&self, pool: &Pool) -> impl Future<Output = MembersResult> + Send;
    /// Writes retried after a 409 so far (monotonic), for metrics.
    fn conflict_retries(&self) -> u64 {
        0
    }
    /// [`RouterBackend::sync`], the router's budget under the project's quotas read into the
    /// report too (`ConvergeReport::budget`; by default not read: no quotas to honour).
    fn sync_reading_budget(&self, desired: &DesiredRouter) -> impl Future<Output = SyncResult> + Send {
        self.sync(desired)
    }
    /// Whether the router refuses every write now (see `driver::blocked`), for `/readyz`.
    fn blocked(&self) -> bool {
        false
    }
    /// Delete the router's load balancer and the floating IP allocated for it, when ours; true
    /// when one was deleted (by default nothing: a backend without routers to delete).
    fn delete_router(&self) -> impl Future<Output = DeleteResult> + Send {
        async { Ok(false) }
    }
    /// Write only while `gate` is open (the leader lease), checked before every write.
    fn set_write_gate(&mut self, _gate: WriteGate) {}
    /// Keep the stamps of the router's reads in these ConfigMaps (see
    /// [`super::stamp_store`]); by default nothing is kept.
    fn set_stamp_stores(&mut self, _stores: super::stamp_store::StampStores) {}
    /// The load balancers carrying this instance's set tag (the routers of its set, whatever
    /// their index), read once at start (by default none: nothing to find).
    fn set_load_balancers(&self) -> impl Future<Output = Result<Vec<FoundRouter>, WriteError>> + Send {
        async { Ok(Vec::new()) }
    }
    /// The hosts the router routes now, as Octavia has them (the upgrade to the controller's
    /// own records keeps only the old records these confirm); `None`: the router does not
    /// exist. By default they cannot be read (nothing is confirmed).
    fn routed_hosts(
        &self,
    ) -> impl Future<Output = Result<Option<std::collections::BTreeSet<String>>, WriteError>> + Send {
        async { Err(WriteError::new("not_readable", "this backend cannot read its routes")) }
    }
}

/// One queued job with its waiters.
#[derive(Debug)]
pub enum Job {
    Sync {
        /// None: translate the caches when the job runs (the controller's Syncs); Some: this
        /// desired state (tests, tools). Boxed: a desired router is far larger than the other
        /// jobs, and queued jobs are moved around.
        desired: Option<Box<DesiredRouter>>,
        /// Converge even if the desired state is the last clean Sync's (resync, a missing pool).
        force: bool,
        /// When the oldest coalesced request was made (change→ACTIVE latency).
        since: Instant,
        replies: Vec<oneshot::Sender<SyncedResult>>,
        /// Waiters of Members jobs this Sync superseded.
        superseded: Vec<oneshot::Sender<MembersResult>>,
    },
    Members {
        pool: Pool,
        /// The pool was on the router when the job was queued: the job may run before a queued
        /// Sync from the caches (see the module docs).
        on_router: bool,
        since: Instant,
        replies: Vec<oneshot::Sender<MembersResult>>,
    },
    /// Delete the router (a router of a set left empty for its whole grace period): its load
    /// balancer and the floating IP allocated for it, only if ours.
    Delete { replies: Vec<oneshot::Sender<DeleteResult>> },
}

/// What a Delete job answers: whether a load balancer was deleted.
pub type DeleteResult = Result<bool, WriteError>;

/// How many Members jobs may run before one queued Sync (see the module docs): at a few seconds
/// per batch member update on Octavia, a Sync waits at most a minute or two behind them.
pub(crate) const MEMBERS_AHEAD_OF_A_SYNC: usize = 32;

impl Job {
    /// `sync` or `members`.
    pub fn kind(&self) -> &'static str {
        match self {
            Job::Sync { .. } => "sync",
            Job::Members { .. } => "members",
            Job::Delete { .. } => "delete",
        }
    }

    /// A Members job for a pool the router held when it was queued.
    fn on_router(&self) -> bool {
        matches!(self, Job::Members { on_router: true, .. })
    }
}

/// The pure coalescing queue (see the module docs).
#[derive(Debug, Default)]
pub struct WriteQueue {
    /// Set at shutdown: no job is accepted any more.
    pub closed: bool,
    sync: Option<Job>,
    /// A queued Delete: it runs before anything else (the router holds no group any more).
    delete: Option<Job>,
    /// Members jobs in arrival order (at most one per pool).
    members: VecDeque<Job>,
    /// Members jobs that have run before the queued Sync so far (bounded by
    /// [`MEMBERS_AHEAD_OF_A_SYNC`]; back to 0 when the Sync runs).
    overtaken: usize,
}

impl WriteQueue {
    /// Queues a Sync to `desired` (always converged: forced).
    pub fn push_sync(&mut self, desired: DesiredRouter, reply: Option<oneshot::Sender<SyncedResult>>) {
        self.push(Some(desired), true, reply);
    }

    /// Queues a Sync to the caches, translated when the job runs; `force` as in [`Job::Sync`].
    pub fn push_sync_from_caches(&mut self, force: bool, reply: Option<oneshot::Sender<SyncedResult>>) {
        self.push(None, force, reply);
    }

    /// Queues the router's deletion (waiters of a Delete already queued share it).
    pub fn push_delete(&mut self, reply: oneshot::Sender<DeleteResult>) {
        match &mut self.delete {
            Some(Job::Delete { replies }) => replies.push(reply),
            _ => self.delete = Some(Job::Delete { replies: vec![reply] }),
        }
    }

    /// Queues a Sync to `desired` (a router's part of the placed set), converged only when it
    /// differs from the last clean Sync's unless `force`.
    pub(crate) fn push_sync_to(
        &mut self,
        desired: DesiredRouter,
        force: bool,
        reply: Option<oneshot::Sender<SyncedResult>>,
    ) {
        self.push(Some(desired), force, reply);
    }

    fn push(&mut self, desired: Option<DesiredRouter>, force: bool, reply: Option<oneshot::Sender<SyncedResult>>) {
        let now = Instant::now();
        let (mut since, mut replies, mut superseded, mut forced) = match self.sync.take() {
            Some(Job::Sync { since, replies, superseded, force, .. }) => (since, replies, superseded, force),
            _ => (now, Vec::new(), Vec::new(), false),
        };
        forced |= force;
        // A Sync from the caches leaves the Members jobs that may run before it; any other Sync
        // was translated at submission, after they were queued, and carries their change.
        let from_caches = desired.is_none();
        let (keep, covered): (VecDeque<Job>, VecDeque<Job>) =
            std::mem::take(&mut self.members).into_iter().partition(|j| from_caches && j.on_router());
        self.members = keep;
        for job in covered {
            if let Job::Members { replies, since: s, .. } = job {
                superseded.extend(replies);
                since = since.min(s);
            }
        }
        replies.extend(reply);
        self.sync = Some(Job::Sync { desired: desired.map(Box::new), force: forced, since, replies, superseded });
    }

    /// Queues a Members job for a pool not known to be on the router: it runs after a queued
    /// Sync, which supersedes it.
    pub fn push_members(&mut self, pool: Pool, reply: Option<oneshot::Sender<MembersResult>>) {
        self.push_members_job(pool, false, reply);
    }

    /// Queues a Members job for a pool the router holds: it may run before a queued Sync from the
    /// caches (see the module docs).
    pub(crate) fn push_members_on_router(&mut self, pool: Pool, reply: Option<oneshot::Sender<MembersResult>>) {
        self.push_members_job(pool, true, reply);
    }

    fn push_members_job(&mut self, pool: Pool, on_router: bool, reply: Option<oneshot::Sender<MembersResult>>) {
        for job in self.members.iter_mut() {
            if let Job::Members { pool: queued, replies, on_router: known, .. } = job
                && queued.name == pool.name
            {
                *queued = pool;
                *known = on_router;
                replies.extend(reply);
                return;
            }
        }
        let replies = reply.into_iter().collect();
        self.members.push_back(Job::Members { pool, on_router, since: Instant::now(), replies });
    }

    /// How many queued Members jobs run before the queued Sync, were nothing pushed meanwhile.
    fn ahead_of_sync(&self) -> usize {
        match self.sync {
            Some(Job::Sync { desired: None, .. }) => MEMBERS_AHEAD_OF_A_SYNC.saturating_sub(self.overtaken),
            _ => 0,
        }
    }

    /// The next job to run: a Members job that may overtake the queued Sync (see the module
    /// docs), else the Sync if one is queued, else the oldest Members job.
    pub fn pop(&mut self) -> Option<Job> {
        if let Some(delete) = self.delete.take() {
            return Some(delete);
        }
        if self.ahead_of_sync() > 0
            && let Some(i) = self.members.iter().position(Job::on_router)
        {
            self.overtaken += 1;
            return self.members.remove(i);
        }
        if let Some(sync) = self.sync.take() {
            self.overtaken = 0;
            return Some(sync);
        }
        self.members.pop_front()
    }

    pub fn len(&self) -> usize {
        usize::from(self.sync.is_some()) + usize::from(self.delete.is_some()) + self.members.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// What is queued, in run order: `sync` or `members:<pool>` (tests, debug logs).
    pub fn describe(&self) -> Vec<String> {
        let name = |j: &Job| match j {
            Job::Members { pool, .. } => format!("members:{}", pool.name),
            Job::Sync { .. } => "sync".into(),
            Job::Delete { .. } => "delete".into(),
        };
        let mut ahead = self.ahead_of_sync();
        let (mut first, mut rest) = (self.delete.iter().map(name).collect::<Vec<_>>(), Vec::new());
        for job in &self.members {
            if ahead > 0 && job.on_router() {
                ahead -= 1;
                first.push(name(job));
            } else {
                rest.push(name(job));
            }
        }
        first.extend(self.sync.iter().map(name));
        first.extend(rest);
        first
    }

    /// Answers every queued waiter with `err` and empties the queue (shutdown).
    pub fn fail_all(&mut self, err: &WriteError) {
        while let Some(job) = self.pop() {
            answer(job, Err(err.clone()), err);
        }
    }
}

fn answer(job: Job, sync_result: SyncedResult, err_for_members: &WriteError) {
    match job {
        Job::Sync { replies, superseded, .. } => {
            let ok = sync_result.is_ok();
            for r in superseded {
                let _ = r.send(if ok { Ok(MembersOutcome::Superseded) } else { Err(err_for_members.clone()) });
            }
            for r in replies {
                let _ = r.send(sync_result.clone());
            }
        }
        Job::Members { replies, .. } => {
            for r in replies {
                let _ = r.send(Err(err_for_members.clone()));
            }
        }
        Job::Delete { replies } => {
            for r in replies {
                let _ = r.send(Err(err_for_members.clone()));
            }
        }
    }
}

/// Observations of the writer for metrics; none in tests that do not look at them.
#[derive(Clone, Default)]
pub struct WriterMetrics {
    /// The key of the router this writer serves: the `router` label of its metrics and its line
    /// of `/readyz`.
    pub router: String,
    pub metrics: Option<Metrics>,
    /// `/readyz`: not ready while the router refuses every write.
    pub readiness: Option<watch::Sender<Readiness>>,
}

struct Shared {
    queue: Mutex<WriteQueue>,
    notify: Notify,
    /// The router's key (see [`WriterMetrics::router`]).
    router: String,
    metrics: Option<RouterMetrics>,
    readiness: Option<watch::Sender<Readiness>>,
    /// How a Sync from the caches gets its desired state (None: such a Sync fails).
    translate: Mutex<Option<Translate>>,
    /// Translations made so far (one per Sync job from the caches).
    translations: AtomicU64,
    /// Sync jobs run so far: the last one's number.
    sync_jobs: AtomicU64,
    last: Mutex<LastSync>,
}

/// What the last Syncs left, for the handlers between Syncs.
#[derive(Default)]
struct LastSync {
    /// The desired state of the last successful Sync (with or without objects on hold): the
    /// Members path fills its pools and checks the Service notices against it.
    synced: Option<Arc<DesiredRouter>>,
    /// The last successful Sync and its report: an unforced Sync to the same desired state is
    /// answered from it, with objects on hold too until the first hold's delay is over (see
    /// [`crate::controller::last_sync`]).
    reusable: Option<crate::controller::last_sync::LastSync>,
    /// A hash of each pool's members as the router was last seen or made to hold them (by a
    /// clean Sync, or a Members job): a Members job asking for them again is answered
    /// `Unchanged` without reading the router, so a Node label change or a Service update that
    /// leaves the members as they are costs no Octavia call (drift is the resync's business).
    members: HashMap<String, u64>,
}

fn members_hash(pool: &Pool) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    pool.members.hash(&mut h);
    h.finish()
}

/// A Members job: skipped when the router already holds these members (see
/// [`LastSync::members`]), else the backend's batch update.
async fn set_members<B: RouterBackend>(backend: &B, shared: &Shared, pool: &Pool) -> MembersResult {
    let hash = members_hash(pool);
    if shared.last.lock().expect("writer lock").members.get(&pool.name) == Some(&hash) {
        return Ok(MembersOutcome::Unchanged);
    }
    let result = backend.set_members(pool).await;
    let mut last = shared.last.lock().expect("writer lock");
    match &result {
        Ok(MembersOutcome::Updated | MembersOutcome::Unchanged) => last.members.insert(pool.name.clone(), hash),
        _ => last.members.remove(&pool.name),
    };
    result
}

impl Shared {
    /// After each job: `/readyz` and the gauge follow whether the router refuses writes.
    fn blocked_is(&self, blocked: bool) {
        if let Some(r) = &self.readiness {
            r.send_if_modified(|r| std::mem::replace(&mut r.router_mut(&self.router).blocked, blocked) != blocked);
        }
        if let Some(m) = &self.metrics {
            m.writes_blocked(blocked);
        }
    }

    fn depth_changed(&self, depth: usize) {
        if let Some(m) = &self.metrics {
            m.queue_depth(depth);
        }
    }
}

/// Submits jobs to the writer task. Cheap to clone.
#[derive(Clone)]
pub struct WriterHandle {
    shared: Arc<Shared>,
}

impl WriterHandle {
    /// Queues a Sync; the receiver gets the result of the Sync that actually runs.
    pub fn submit_sync(&self, desired: DesiredRouter) -> oneshot::Receiver<SyncedResult> {
        self.submit(|q, tx| q.push_sync(desired, Some(tx)))
    }

    /// Queues a Sync to the caches (translated by the writer when it takes the job) and waits
    /// for its result: every waiter coalesced into one job gets the same [`Synced`].
    pub(crate) async fn sync_from_caches(&self, force: bool) -> SyncedResult {
        self.submit(|q, tx| q.push_sync_from_caches(force, Some(tx)))
            .await
            .unwrap_or_else(|_| Err(WriteError::shutdown()))
    }

    /// Queues a Sync to `desired` (see [`WriteQueue::push_sync_to`]) and waits for its result.
    pub(crate) async fn sync_to(&self, desired: DesiredRouter, force: bool) -> SyncedResult {
        self.submit(|q, tx| q.push_sync_to(desired, force, Some(tx)))
            .await
            .unwrap_or_else(|_| Err(WriteError::shutdown()))
    }

    /// Queues the router's deletion and waits for it (see [`Job::Delete`]).
    pub async fn delete_router(&self) -> DeleteResult {
        self.submit(|q, tx| q.push_delete(tx)).await.unwrap_or_else(|_| Err(WriteError::shutdown()))
    }

    /// Installs how a Sync from the caches gets its desired state.
    pub(crate) fn set_translate(&self, translate: Translate) {
        *self.shared.translate.lock().expect("writer lock") = Some(translate);
    }

    /// Translations made so far (one per Sync job from the caches, whatever its waiters).
    pub fn translations(&self) -> u64 {
        self.shared.translations.load(Ordering::Relaxed)
    }

    /// Sync jobs run so far (each answers all the waiters coalesced into it).
    pub fn sync_jobs(&self) -> u64 {
        self.shared.sync_jobs.load(Ordering::Relaxed)
    }

    /// The desired state of the last successful Sync.
    pub(crate) fn last_synced(&self) -> Option<Arc<DesiredRouter>> {
        self.shared.last.lock().expect("writer lock").synced.clone()
    }

    /// The last successful Sync (objects on hold or not) and its report.
    pub fn last_sync(&self) -> Option<(Arc<DesiredRouter>, ConvergeReport)> {
        let last = self.shared.last.lock().expect("writer lock");
        last.reusable.as_ref().map(|l| (l.desired.clone(), l.report.clone()))
    }

    /// Queue a job (unless the writer is shut down) and wake the writer.
    fn submit<R>(
        &self,
        push: impl FnOnce(&mut WriteQueue, oneshot::Sender<Result<R, WriteError>>),
    ) -> oneshot::Receiver<Result<R, WriteError>> {
        let (tx, rx) = oneshot::channel();
        let depth = {
            let mut q = self.shared.queue.lock().expect("writer lock");
            if q.closed {
                let _ = tx.send(Err(WriteError::shutdown()));
                return rx;
            }
            push(&mut q, tx);
            q.len()
        };
        self.shared.depth_changed(depth);
        self.shared.notify.notify_one();
        rx
    }

    /// Queues a Sync and waits for its result.
    pub async fn sync(&self, desired: DesiredRouter) -> SyncedResult {
        self.submit_sync(desired).await.unwrap_or_else(|_| Err(WriteError::shutdown()))
    }

    /// Queues a Members job; one for a pool of the last successful Sync may run before a queued
    /// Sync from the caches (see the module docs). A pool that Sync held back answers
    /// [`MembersOutcome::PoolMissing`], as it would without a Sync queued.
    pub fn submit_members(&self, pool: Pool) -> oneshot::Receiver<MembersResult> {
        let on_router = {
            let last = self.shared.last.lock().expect("writer lock");
            last.synced.as_ref().is_some_and(|d| d.pools.contains_key(&pool.name))
        };
        if on_router {
            self.submit(|q, tx| q.push_members_on_router(pool, Some(tx)))
        } else {
            self.submit(|q, tx| q.push_members(pool, Some(tx)))
        }
    }

    /// Queues a Members job and waits for its result.
    pub async fn members(&self, pool: Pool) -> MembersResult {
        self.submit_members(pool).await.unwrap_or_else(|_| Err(WriteError::shutdown()))
    }

    /// The key of the router this writer serves.
    pub fn router(&self) -> &str {
        &self.shared.router
    }

    /// Jobs waiting (not counting the one running).
    pub fn depth(&self) -> usize {
        self.shared.queue.lock().expect("writer lock").len()
    }
}

/// The running writer: [`Writer::shutdown`] stops accepting jobs, lets the job in flight finish,
/// and answers the queued ones with a `shutdown` error.
pub struct Writer {
    handle: WriterHandle,
    task: JoinHandle<()>,
}

impl Writer {
    pub fn spawn<B: RouterBackend>(backend: B, metrics: WriterMetrics) -> Self {
        let shared = Arc::new(Shared {
            queue: Mutex::new(WriteQueue::default()),
            notify: Notify::new(),
            metrics: metrics.metrics.as_ref().map(|m| m.router(&metrics.router)),
            readiness: metrics.readiness,
            router: metrics.router,
            translate: Mutex::new(None),
            translations: AtomicU64::new(0),
            sync_jobs: AtomicU64::new(0),
            last: Mutex::new(LastSync::default()),
        });
        let task = tokio::spawn(run_writer(backend, shared.clone()));
        Self { handle: WriterHandle { shared }, task }
    }

    pub fn handle(&self) -> WriterHandle {
        self.handle.clone()
    }

    pub async fn shutdown(self) {
        self.handle.shared.queue.lock().expect("writer lock").closed = true;
        self.handle.shared.notify.notify_one();
        if let Err(e) = self.task.await {
            tracing::error!(error = %e, "router writer task failed");
        }
    }

    /// [`Writer::shutdown`], the job in flight given at most `limit` (then dropped: a write
    /// already sent completes in Octavia anyway; queued waiters get a `shutdown` error).
    pub(crate) async fn shutdown_within(mut self, limit: std::time::Duration) {
        self.handle.shared.queue.lock().expect("writer lock").closed = true;
        self.handle.shared.notify.notify_one();
        match tokio::time::timeout(limit, &mut self.task).await {
            Ok(Err(e)) => tracing::error!(error = %e, "router writer task failed"),
            Ok(Ok(())) => {}
            Err(_) => {
                tracing::warn!(limit_s = limit.as_secs(), "the job in flight did not end in time: dropped");
                self.task.abort();
                self.handle.shared.queue.lock().expect("writer lock").fail_all(&WriteError::shutdown());
            }
        }
    }
}

async fn run_writer<B: RouterBackend>(backend: B, shared: Arc<Shared>) {
    let mut retries_seen = backend.conflict_retries();
    loop {
        let job = {
            let mut q = shared.queue.lock().expect("writer lock");
            if q.closed {
                q.fail_all(&WriteError::shutdown());
                drop(q);
                shared.depth_changed(0);
                return;
            }
            let job = q.pop();
            let depth = q.len();
            drop(q);
            shared.depth_changed(depth);
            job
        };
        let Some(job) = job else {
            shared.notify.notified().await;
            continue;
        };
        let started = Instant::now();
        let kind = job.kind();
        let result_label = match job {
            Job::Sync { desired, force, since, replies, superseded } => {
                let result = run_sync(&backend, &shared, desired.map(|d| *d), force, since).await;
                let label = result.as_ref().map_or_else(|e| e.label, |_| "ok");
                let err = result.as_ref().err().cloned().unwrap_or_else(WriteError::shutdown);
                answer(Job::Sync { desired: None, force, since, replies, superseded }, result, &err);
                label
            }
            Job::Members { pool, since, replies, .. } => {
                let result = set_members(&backend, &shared, &pool).await;
                if let (Ok(MembersOutcome::Updated), Some(m)) = (&result, &shared.metrics) {
                    m.change_to_active(since.elapsed());
                }
                if let Err(e) = &result {
                    tracing::warn!(pool = %pool.name, error = %e, "member update failed");
                }
                let label = result.as_ref().map_or_else(|e| e.label, |_| "ok");
                for r in replies {
                    let _ = r.send(result.clone());
                }
                label
            }
            Job::Delete { replies } => {
                let result = backend.delete_router().await;
                match &result {
                    Ok(deleted) => tracing::info!(deleted, "empty router of the set deleted"),
                    Err(e) => tracing::warn!(error = %e, "cannot delete the empty router"),
                }
                let label = result.as_ref().map_or_else(|e| e.label, |_| "ok");
                for r in replies {
                    let _ = r.send(result.clone());
                }
                label
            }
        };
        shared.blocked_is(backend.blocked());
        let retries = backend.conflict_retries();
        if let Some(m) = &shared.metrics {
            m.job_done(kind, result_label, started.elapsed());
            m.conflict_retries(retries.saturating_sub(retries_seen));
        }
        retries_seen = retries;
    }
}

/// The desired state of a Sync job: the one given, or the caches translated now (off the async
/// workers: at 10k Ingresses a translation takes a few hundred ms).
async fn desired_of(shared: &Shared, given: Option<DesiredRouter>) -> Result<DesiredRouter, WriteError> {
    if let Some(d) = given {
        return Ok(d);
    }
    let translate = shared.translate.lock().expect("writer lock").clone();
    let translate = translate.ok_or_else(|| WriteError::new("no_translation", "no translation installed"))?;
    shared.translations.fetch_add(1, Ordering::Relaxed);
    tokio::task::spawn_blocking(move || translate())
        .await
        .map_err(|e| WriteError::new("translation_failed", format!("translation failed: {e}")))
}

/// One Sync job: translate once, answer from the last clean Sync when nothing changed (and
/// the job is not forced), else converge the router.
async fn run_sync<B: RouterBackend>(
    backend: &B,
    shared: &Shared,
    given: Option<DesiredRouter>,
    force: bool,
    since: Instant,
) -> SyncedResult {
    let job = shared.sync_jobs.fetch_add(1, Ordering::Relaxed) + 1;
    let desired = Arc::new(desired_of(shared, given).await?);
    if !force {
        let last = shared.last.lock().expect("writer lock").reusable.clone();
        if let Some(last) = last
            && let Some(report) = last.reuse(&desired, Instant::now())
        {
            return Ok(Synced { desired: last.desired, report, written: false, job });
        }
    }
    // A forced Sync (the resync) also reads the router's budget under the quotas: as often as
    // drift is repaired, not on every change.
    let result = if force { backend.sync_reading_budget(&desired).await } else { backend.sync(&desired).await };
    match &result {
        Ok(r) => {
            tracing::info!(writes = r.writes.len(), elapsed_ms = r.elapsed.as_millis() as u64, "router synced");
            if let Some(m) = &shared.metrics {
                m.change_to_active(since.elapsed());
                m.set_provisioning_status("ACTIVE");
            }
            let mut last = shared.last.lock().expect("writer lock");
            last.synced = Some(desired.clone());
            let clean = r.failures.is_empty() && r.held.is_empty();
            last.reusable =
                Some(crate::controller::last_sync::LastSync::new(desired.clone(), r.clone(), Instant::now()));
            // Only a clean Sync says every pool holds exactly its desired members.
            last.members = if clean {
                desired.pools.values().map(|p| (p.name.clone(), members_hash(p))).collect()
            } else {
                HashMap::new()
            };
        }
        Err(e) => {
            tracing::warn!(error = %e, "router sync failed");
            shared.last.lock().expect("writer lock").members.clear();
            if let Some(m) = &shared.metrics
                && e.label == "router_error"
            {
                m.set_provisioning_status("ERROR");
            }
        }
    }
    result.map(|report| Synced { desired, report, written: true, job })
}

#[cfg(test)]
#[path = "writer_tests.rs"]
mod tests;
