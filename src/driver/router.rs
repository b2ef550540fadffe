//! The L7 router on the real Octavia: the one entry point of the driver. The controller knows it
//! through three calls: [`Router::converge`] (the whole router), [`Router::set_members`] (one
//! pool's members) and [`Router::snapshot`] (`show`). Each step lives in a file of its own:
//! `lifecycle` (find, adopt, dedupe, create, discard), `read`,
//! `execute` (the writes), `floating_ip` and `create_body` (pure).
//!
//! Every write is followed by a wait for the load balancer to be ACTIVE again: Octavia refuses
//! any other write on the router meanwhile (409), so waiting here is what keeps the next write
//! from burning retries. A brand-new router is one fully-populated create: listener, pools,
//! members, health monitors, policies and rules in a single call.

use super::actual::ActualRouter;
use super::admission::QuotaLedger;
use super::blocked;
use super::cloud::WriteGate;
use super::cloud::{Cloud, WritePermits};
use super::diff::plan_members;
use super::https_holds::HttpsHolds;
use super::isolation::{WriteBackoff, WriteKey};
use super::ownership::{FoundRouter, SetMark, empty_since};
use super::read_cache::ReadCache;
use super::report::{MembersChange, OtherListener, RouterSnapshot};
use super::stamps::{DesiredChildren, Stamps};
use super::view::DesiredView;
use super::{execute, floating_ip, https, lifecycle, more_http, more_https, read, rounds};
use crate::model::{DesiredRouter, Pool};
use crate::openstack::octavia::{Listener, LoadBalancer};
use crate::openstack::{Barbican, Neutron, Octavia};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::error::{DriverError, Result};
use super::report::ConvergeReport;
use super::spec::RouterSpec;

/// The router's id and our pools' ids by name, as last looked up by [`Router::set_members`].
type PoolIds = (String, BTreeMap<String, String>);

/// Values of `Router::has_https`.
struct HttpsKnown;

impl HttpsKnown {
    const UNKNOWN: u8 = 0;
    const NO: u8 = 1;
    const YES: u8 = 2;

    fn of(has: bool) -> u8 {
        if has { Self::YES } else { Self::NO }
    }
}

/// The driver both handlers share (clones share the caches).
#[derive(Clone, Debug)]
pub struct Router {
    pub(super) cloud: Cloud,
    /// Whether a convergence of this process has already read its writes back (see
    /// [`Router::converge`]).
    verified: Arc<AtomicBool>,
    /// Whether the router has an HTTPS listener ([`HttpsKnown`]): then every write waits for
    /// Barbican to answer (see [`Router::set_members`] and [`https::Phase`]). Set by every
    /// convergence as soon as it knows, and read from Octavia by the first member job of a
    /// process that has not converged yet.
    has_https: Arc<AtomicU8>,
    /// Rules and members as last read, by parent stamp (see [`super::read_cache`]).
    reads: Arc<Mutex<ReadCache>>,
    /// For the Members path: forgotten after every convergence (pools may have come or gone)
    /// and on a miss.
    pool_ids: Arc<tokio::sync::Mutex<Option<PoolIds>>>,
    /// Objects whose write Octavia refused for good, on hold (see [`super::isolation`]).
    backoff: Arc<Mutex<WriteBackoff>>,
    /// The project's L7 quota and what our listeners hold (see [`super::admission`]).
    pub(super) quota: Arc<Mutex<QuotaLedger>>,
    /// Holds for the HTTPS listener and our Barbican secrets (see [`super::https_holds`]).
    https_backoff: Arc<Mutex<WriteBackoff>>,
    /// Set while the router refuses every write (ERROR, or busy beyond `write_timeout`).
    blocked: Arc<Mutex<Option<blocked::Blocked>>>,
    /// How often a blocked router is looked at again ([`blocked::RECHECK`]).
    recheck: std::time::Duration,
    /// Trusted parents of each kind read again per later convergence (see [`super::stamps`]).
    verify_per_resync: usize,
}

impl Router {
    pub fn new(octavia: Octavia, neutron: Neutron, spec: RouterSpec) -> Self {
        Self {
            cloud: Cloud {
                octavia,
                neutron,
                barbican: None,
                spec,
                gate: WriteGate::default(),
                permits: WritePermits::default(),
            },
            verified: Default::default(),
            has_https: Default::default(),
            reads: Default::default(),
            pool_ids: Default::default(),
            backoff: Default::default(),
            quota: Default::default(),
            https_backoff: Default::default(),
            blocked: Default::default(),
            recheck: blocked::RECHECK,
            verify_per_resync: super::stamps::VERIFY_PER_RESYNC,
        }
    }

    /// Read `per_resync` trusted policies, and as many pools, at each later convergence
    /// (`[octavia_defaults] verify_per_resync`; see [`super::stamps`]).
    pub fn with_verify_per_resync(mut self, per_resync: usize) -> Self {
        self.verify_per_resync = per_resync;
        self.reads.lock().unwrap_or_else(|e| e.into_inner()).stamps.set_verify_per_resync(per_resync);
        self
    }

    /// Write only while `gate` is open (the leader lease): checked before every write, and by
    /// the Octavia client before each busy retry of a write already started.
    pub fn set_write_gate(&mut self, gate: WriteGate) {
        let permit = gate.clone();
        self.cloud.octavia =
            self.cloud.octavia.clone().with_write_permit(crate::openstack::WritePermit::new(move || permit.is_open()));
        self.cloud.gate = gate;
    }

    /// Share these write permits (see [`WritePermits`]): every router of one process is given
    /// the same, so that their writes in flight together stay within the bound.
    pub fn with_write_permits(mut self, permits: WritePermits) -> Self {
        self.cloud.permits = permits;
        self
    }

    /// The write permits this router takes from (to share with another router).
    pub fn write_permits(&self) -> &WritePermits {
        &self.cloud.permits
    }

    /// Store TLS certificates in this Barbican (the HTTPS listener needs it).
    pub fn with_barbican(mut self, barbican: Barbican) -> Self {
        self.cloud.barbican = Some(barbican);
        self
    }

    pub fn barbican(&self) -> Option<&Barbican> {
        self.cloud.barbican.as_ref()
    }

    pub fn octavia(&self) -> &Octavia {
        &self.cloud.octavia
    }

    pub fn neutron(&self) -> &Neutron {
        &self.cloud.neutron
    }

    pub fn spec(&self) -> &RouterSpec {
        &self.cloud.spec
    }

    /// The spec, to change before the router is used (tests and benchmarks point one router at
    /// another configuration).
    pub fn spec_mut(&mut self) -> &mut RouterSpec {
        &mut self.cloud.spec
    }

    /// Writes retried after a 409 so far (monotonic), for metrics.
    pub fn conflict_retries(&self) -> u64 {
        self.cloud.octavia.session().stats().conflict_retries
    }

    /// The router's load balancer, if it exists: the adopted one, or ours found by name and tags.
    pub async fn find(&self) -> Result<Option<LoadBalancer>> {
        lifecycle::find(&self.cloud).await
    }

    /// Deletes the router's load balancer (cascade), the floating IP allocated for it, found by
    /// the router's name and our tags, and the Barbican secrets it owns (named after the router:
    /// never another router's). An adopted router (`uuid`) is never deleted: it is not ours.
    /// False when there was no load balancer (its secrets are deleted all the same: a delete cut
    /// short after the load balancer went). A configured floating IP (`l7_router_ip`) is left.
    /// Returns once Octavia no longer has the load balancer (404), or fails after `create_timeout`.
    pub async fn delete_router(&self) -> Result<bool> {
        if self.cloud.spec.uuid.is_some() {
            return Ok(false);
        }
        if !self.cloud.gate.is_open() {
            return Err(super::error::DriverError::NotLeader);
        }
        let found = lifecycle::find(&self.cloud).await?;
        if let Some(lb) = &found {
            let marker = floating_ip::floating_ip_description(&self.cloud.spec.ownership, &self.cloud.spec.name);
            if let Some(port) = &lb.vip_port_id
                && let Some(fip) = floating_ip::of_port(&self.cloud.neutron, port).await?
                && fip.description == marker
            {
                self.cloud.neutron.delete_floating_ip(&fip.id).await?;
            }
            self.cloud.octavia.delete_load_balancer(&lb.id, true).await?;
            // Deleted means gone, not PENDING_DELETE: a caller that then forgets the router (a
            // Gateway's finalizer removed, a set router dropped) must not leave a load balancer
            // that a find by name still returns, nor a name that a new router cannot take yet.
            self.cloud.octavia.wait_deleted(&lb.id, self.cloud.spec.create_timeout).await?;
        }
        // After the load balancer: its HTTPS listener no longer references them.
        https::delete_own_secrets(&self.cloud).await?;
        Ok(found.is_some())
    }

    /// The names of the load balancers of this instance (our ownership tags and our set tag)
    /// whose name starts with `prefix`: the Gateways' routers (`kuryr-gw-`), to find those whose
    /// Gateway is gone. Another instance's are left out; so are those without a set tag (made
    /// before set tags existed: they may be another instance's), each logged, as they are never
    /// deleted automatically.
    pub async fn list_ours_named(&self, prefix: &str) -> Result<Vec<String>> {
        let mut names = Vec::new();
        for (mark, lb) in self.marked_load_balancers().await? {
            match mark {
                SetMark::Ours if lb.name.starts_with(prefix) => names.push(lb.name),
                SetMark::Untagged if lb.name.starts_with(prefix) => tracing::warn!(
                    load_balancer = %lb.name, id = %lb.id,
                    "a load balancer of this cluster without a set tag: never deleted automatically \
                     (delete it by hand if no Gateway of any controller instance names it)"
                ),
                _ => {}
            }
        }
        names.sort();
        names.dedup();
        Ok(names)
    }

    /// This instance's load balancers (our ownership tags and set tag), whatever their name: at
    /// start, the routers of the set that no placement names yet, with the time each became
    /// empty (its `empty-since` tag). Those named like a router of the set (`<this router's
    /// name>-…`) without a set tag are logged: made before set tags existed, they may be another
    /// instance's. The first Sync of a router of ours (a placement of ours names it) adds our set
    /// tag; one that no placement names is never touched.
    pub async fn set_load_balancers(&self) -> Result<Vec<FoundRouter>> {
        if self.cloud.spec.ownership.set.is_none() {
            return Ok(Vec::new());
        }
        let set_prefix = format!("{}-", self.cloud.spec.name);
        let mut found = Vec::new();
        for (mark, lb) in self.marked_load_balancers().await? {
            match mark {
                SetMark::Ours => {
                    found.push(FoundRouter { empty_since: empty_since(&lb.tags), name: lb.name, untagged: false })
                }
                SetMark::Untagged if lb.name.starts_with(&set_prefix) => {
                    tracing::warn!(
                        load_balancer = %lb.name, id = %lb.id,
                        "a load balancer of this cluster without a set tag: tagged as ours if a placement of ours \
                         names it, else never touched nor given a new group (delete it by hand if no controller \
                         instance uses it)"
                    );
                    found.push(FoundRouter { name: lb.name, empty_since: None, untagged: true });
                }
                _ => {}
            }
        }
        Ok(found)
    }

    /// The names of the load balancers carrying our ownership tags, whatever their name
    /// (`show` finds the routers of a set and the Gateways' routers among them), but not those
    /// of another instance (its set tag). Read only.
    pub async fn our_load_balancer_names(&self) -> Result<Vec<String>> {
        let found = self.marked_load_balancers().await?.into_iter();
        Ok(found.filter(|(mark, _)| *mark != SetMark::Other).map(|(_, lb)| lb.name).collect())
    }

    /// The load balancers carrying our ownership tags (id, name and tags only), each with whose
    /// instance its set tag says it is: the one list the three lookups above filter.
    async fn marked_load_balancers(&self) -> Result<Vec<(SetMark, crate::openstack::octavia::LoadBalancer)>> {
        let own = &self.cloud.spec.ownership;
        let q = crate::openstack::ListQuery {
            tags: own.ownership_tags(),
            fields: ["id", "name", "tags"].map(String::from).to_vec(),
            ..Default::default()
        };
        let found = self.cloud.octavia.list_load_balancers(&q).await?;
        Ok(found.into_iter().map(|lb| (own.set_mark(&lb.tags), lb)).collect())
    }

    /// Read the router's children as seen from `listener` (see `read`).
    pub async fn read_actual(&self, listener: &Listener) -> Result<ActualRouter> {
        read::read_actual(&self.cloud, &self.reads, listener, None).await
    }

    /// Read the router's children as seen from `listener`, for a plan towards `desired`: a parent
    /// whose stamp holds for its desired children is not read (see [`super::stamps`]), except
    /// the few the verification picks when `verify` (as the first read of a later convergence).
    pub async fn read_for(&self, listener: &Listener, desired: &DesiredRouter, verify: bool) -> Result<ActualRouter> {
        let view = DesiredView::of(desired);
        let children = DesiredChildren::of(&view, &self.cloud.spec.ownership, verify);
        read::read_actual(&self.cloud, &self.reads, listener, Some(&children)).await
    }

    /// The stamps of this router's reads in their text form, if they changed since last taken
    /// (the controller keeps them for the next leader; see [`super::stamps`]).
    pub fn take_changed_stamps(&self) -> Option<String> {
        self.reads.lock().unwrap_or_else(|e| e.into_inner()).stamps.take_changed()
    }

    /// Starts from the stamps of an earlier process (their text form); `false`, and no stamps, if
    /// the text is damaged (every parent is read then).
    pub fn load_stamps(&self, text: &str) -> bool {
        let parsed = Stamps::parse(text);
        let ok = parsed.is_some();
        let mut stamps = parsed.unwrap_or_default();
        stamps.set_verify_per_resync(self.verify_per_resync);
        self.reads.lock().unwrap_or_else(|e| e.into_inner()).stamps = stamps;
        ok
    }

    /// The router as Octavia has it (`show`): load balancer, HTTP listener, children, the HTTPS
    /// listeners' (main and more ports') and more HTTP listeners' policies, and floating IP.
    /// `None` when the router does not exist.
    pub async fn snapshot(&self) -> Result<Option<RouterSnapshot>> {
        let Some(lb) = self.find().await? else { return Ok(None) };
        let q = crate::openstack::ListQuery { loadbalancer_id: Some(lb.id.clone()), ..Default::default() };
        let listed = self.cloud.octavia.list_listeners(&q).await?;
        let listener = lifecycle::shown_http_listener(&listed, &self.cloud.spec);
        let actual = match listener {
            Some(l) => Some(self.read_actual(l).await?),
            None => None,
        };
        let floating_ip = match &lb.vip_port_id {
            Some(port) => floating_ip::of_port(&self.cloud.neutron, port).await?.map(|f| f.floating_ip_address),
            None => None,
        };
        let (https, more_https) = https::snapshot(&self.cloud, &self.reads, &listed).await?;
        let more_http = more_http::snapshot(&self.cloud, &self.reads, &listed).await?;
        let shown: BTreeSet<&str> = listener
            .iter()
            .map(|l| l.id.as_str())
            .chain(https.iter().chain(&more_https).map(|h| h.listener_id.as_str()))
            .chain(more_http.iter().map(|m| m.listener_id.as_str()))
            .collect();
        let other_listeners = listed
            .iter()
            .filter(|l| !shown.contains(l.id.as_str()))
            .map(|l| OtherListener {
                id: l.id.clone(),
                name: l.name.clone(),
                protocol: l.protocol.clone(),
                port: l.protocol_port,
            })
            .collect();
        let listener = listener.map(|l| (l.id.clone(), l.protocol_port));
        Ok(Some(RouterSnapshot { lb, floating_ip, listener, actual, https, more_https, more_http, other_listeners }))
    }

    /// Converge the router to `desired`: create it fully populated if it does not exist, else
    /// read it, plan the writes and make them; then make sure it has its floating IP.
    pub async fn converge(&self, desired: &DesiredRouter) -> Result<ConvergeReport> {
        self.check_blocked().await?;
        rounds::begin_convergence(&self.backoff, &self.quota, desired);
        let result = self.converge_once(desired).await;
        // Pools may have been created or deleted: resolve them again on the next Members job.
        *self.pool_ids.lock().await = None;
        self.note_blocking(result)
    }

    /// Whether the router refuses writes now (see [`blocked`]): `Err` at once while it is
    /// blocked, one GET of the load balancer every [`blocked::RECHECK`] to lift it.
    async fn check_blocked(&self) -> Result<()> {
        let (lb_id, since) = {
            let b = self.blocked.lock().expect("blocked lock");
            match blocked::gate(b.as_ref(), Instant::now(), self.recheck) {
                blocked::Gate::Open => return Ok(()),
                blocked::Gate::Closed => return Err(self.blocked_error(b.as_ref())),
                blocked::Gate::Recheck => {
                    let b = b.as_ref().expect("blocked");
                    (b.lb_id.clone(), b.since)
                }
            }
        };
        let lb = match &lb_id {
            Some(id) => match self.cloud.octavia.get_load_balancer(id).await {
                Ok(lb) => Some(lb),
                Err(e) if e.is_not_found() => None,
                Err(e) => return Err(e.into()),
            },
            None => self.find().await?,
        };
        let mut b = self.blocked.lock().expect("blocked lock");
        match lb {
            Some(lb) if lb.provisioning_status != "ACTIVE" => {
                if let Some(b) = b.as_mut() {
                    b.checked = Instant::now();
                    b.lb_id = Some(lb.id);
                }
                Err(self.blocked_error(b.as_ref()))
            }
            // ACTIVE again, or gone (the next convergence creates it).
            _ => {
                tracing::warn!(blocked_s = since.elapsed().as_secs(), "L7 router writable again: writes resume");
                *b = None;
                Ok(())
            }
        }
    }

    fn blocked_error(&self, b: Option<&blocked::Blocked>) -> DriverError {
        DriverError::RouterBlocked {
            name: self.cloud.spec.name.clone(),
            id: b.and_then(|b| b.lb_id.clone()).unwrap_or_default(),
            why: b.map(|b| b.why.clone()).unwrap_or_default(),
            recheck_s: self.recheck.as_secs(),
        }
    }

    /// Remembers a router that refuses every write (reported once, here); passes `result` on.
    fn note_blocking<T>(&self, result: Result<T>) -> Result<T> {
        if let Err(e) = &result
            && let Some((lb_id, why)) = blocked::blocking(e)
        {
            let mut b = self.blocked.lock().expect("blocked lock");
            if b.is_none() {
                tracing::error!(router = %self.cloud.spec.name, %why, error = %e,
                    "L7 router refuses writes: later jobs fail at once until it is ACTIVE again");
                let now = Instant::now();
                *b = Some(blocked::Blocked { lb_id, why, since: now, checked: now });
            }
        }
        result
    }

    /// How often a blocked router is looked at again (tests shorten it).
    pub fn set_blocked_recheck(&mut self, every: std::time::Duration) {
        self.recheck = every;
    }

    /// Whether the router is known to refuse writes (for `/readyz`).
    pub fn is_blocked(&self) -> bool {
        self.blocked.lock().expect("blocked lock").is_some()
    }

    async fn converge_once(&self, desired: &DesiredRouter) -> Result<ConvergeReport> {
        let c = &self.cloud;
        let started = Instant::now();
        let requests_before = c.octavia.session().stats().requests;
        let mut report = ConvergeReport::default();

        let mut waits_for_quota = false;
        let lb = match lifecycle::find_clearing_duplicates(c, &mut report).await? {
            Some(lb) => lifecycle::ready(c, lb).await?,
            None => {
                // A new router is created within the project's quota too: what waits is left out
                // of the fully-populated create and reported by the rounds below.
                let admitted = self.admit_new_router(desired).await?;
                waits_for_quota = admitted.is_some();
                lifecycle::create(c, admitted.as_ref().unwrap_or(desired), &mut report).await?
            }
        };
        let lb = lifecycle::mark(c, lb, desired.empty_since, &mut report).await?;
        report.lb_id = lb.id.clone();
        report.vip_address = lb.vip_address.as_deref().and_then(|a| a.parse().ok());

        let holds = HttpsHolds { backoff: &self.https_backoff, now: Instant::now() };
        let mut phase = https::prepare(c, &lb, desired, &holds, &mut report).await?;
        let (listener, listed) = lifecycle::ensure_http_listener(c, &lb, &mut report).await?;
        report.listener_id = listener.id.clone();
        execute::listener_writes(c, &lb.id, more_http::plan_stale(&listed, desired, &c.spec), &mut report.writes)
            .await?;
        self.has_https.store(HttpsKnown::of(phase.has_any_listener()), Ordering::SeqCst);
        if let https::Phase::Unavailable { has_listener: true, error } = phase {
            // Octavia's worker reads every certificate of the router for most writes (members,
            // pools, policies of the HTTPS listener): with Barbican down such a write never
            // completes and leaves the router PENDING_UPDATE for good. Nothing is written.
            return Err(DriverError::WritesHeld { source: Box::new(error) });
        }
        // More HTTPS listeners no longer wanted go before the HTTP side's plan, which may
        // delete the pools only their policies used.
        execute::listener_writes(c, &lb.id, more_https::plan_stale(&listed, desired, &c.spec), &mut report.writes)
            .await?;
        // A router created fully populated has everything but its HTTPS side and redirects.
        let listener_held = holds.is_held(&WriteKey::HttpsListener);
        let http = https::http_view(desired, &phase, listener_held);
        if !report.created_router || waits_for_quota || desired.https.is_some() || !desired.redirects.is_empty() {
            self.converge_children(&DesiredView::of(&http), &lb, listener.clone(), &mut report).await?;
        } else {
            // Nothing to write: the create carried it all. Its stamps spare the next read a
            // child GET per parent (two listings now instead). They only save reads: a failed
            // listing leaves the router unstamped (the next read reads it whole), not the Sync
            // failed.
            let children = DesiredChildren::of(&DesiredView::of(&http), &c.spec.ownership, false);
            if let Err(e) = read::stamp_created(c, &self.reads, (&lb.id, &listener.id), &children).await {
                tracing::warn!(router = %c.spec.name, error = %e, "cannot stamp the router just created: its next read reads every child");
            }
        }
        // More HTTP listeners (a Gateway's other HTTP ports) on the pools just converged.
        for (_, l) in more_http::ensure(c, &lb, &listed, desired, &mut report).await? {
            report.more_listener_ids.push(l.id.clone());
            if let Some(want) = desired.more_http.get(&l.protocol_port) {
                self.converge_children(&DesiredView::more_http(desired, want), &lb, l, &mut report).await?;
            }
        }
        // The HTTP side is converged either way. The HTTPS side's refusals are isolated (held,
        // reported); its transient failures (Barbican down, a 5xx) fail the convergence at the
        // end, after the floating IP, so that it is retried and reported.
        let mut deferred = None;
        match &mut phase {
            https::Phase::Off => {}
            // Held and reported, not failed: a Sync would fail on it again and again.
            https::Phase::Refused { .. } => {
                let scope = c.secret_scope();
                holds.report(&mut report, |k| https::hold_owners(k, desired, &scope));
            }
            https::Phase::Unavailable { error, .. } => {
                deferred = Some(std::mem::replace(error, DriverError::NoKeyManager));
            }
            https::Phase::Ready(state) => {
                if let Err(e) = self.converge_https(desired, &lb, state, &mut report).await {
                    deferred = Some(stop_or_defer(e)?);
                }
            }
        }
        // The HTTPS listener's create was refused just now: the redirects written above would
        // send clients to a port nothing serves; they go again until it exists.
        let refused_now = !listener_held && holds.is_held(&WriteKey::HttpsListener);
        if refused_now && !phase.has_listener() && !desired.redirects.is_empty() {
            let http = https::http_view(desired, &phase, true);
            self.converge_children(&DesiredView::of(&http), &lb, listener, &mut report).await?;
        }

        // A listener gone (the HTTPS one once no Ingress has TLS) holds nothing of the quota.
        let listeners = [Some(report.listener_id.as_str()), report.https_listener_id.as_deref()];
        let more = report.more_listener_ids.iter().map(String::as_str);
        self.quota
            .lock()
            .expect("quota lock")
            .keep_listeners(&listeners.into_iter().flatten().chain(more).collect::<Vec<_>>());
        // The floating IP's writes go through the door (gate, permit, error, log line) but stay out
        // of the report's writes, which count the router's Octavia objects as before.
        report.floating_ip = floating_ip::ensure(c, &lb, &mut Vec::new()).await?;
        report.address = report.floating_ip.or(report.vip_address);
        if report.writes.first().is_some_and(|w| w.kind == "create_router") && c.spec.uuid.is_none() {
            lifecycle::clear_duplicates_of_new_router(c, &lb, &mut report).await?;
        }
        report.requests = c.octavia.session().stats().requests - requests_before;
        report.elapsed = started.elapsed();
        match deferred {
            Some(e) => Err(e),
            None => Ok(report),
        }
    }

    /// Phase 2 of the HTTPS side (see [`https`]): the listener, its policies, the garbage; a
    /// refused write is on hold (see [`super::https_holds`]), a transient failure is returned.
    async fn converge_https(
        &self,
        desired: &DesiredRouter,
        lb: &LoadBalancer,
        state: &mut https::HttpsState,
        report: &mut ConvergeReport,
    ) -> Result<()> {
        let c = &self.cloud;
        let want = desired.https.as_ref();
        let holds = HttpsHolds { backoff: &self.https_backoff, now: Instant::now() };
        let result = async {
            let (listener, as_desired) = https::ensure_listener_isolated(c, lb, want, state, &holds, report).await?;
            if let (Some(l), Some(https)) = (listener, want) {
                report.https_listener_id = Some(l.id.clone());
                self.converge_children(&DesiredView::https(desired, https), lb, l, report).await?;
            }
            // The more HTTPS ports' listeners (a Gateway's other HTTPS ports), each with its own
            // certificates and client CA, on the pools the HTTP side converged.
            let (more, more_as_desired) =
                more_https::ensure_isolated(c, lb, &state.listed, desired, state.refs(), &holds, report).await?;
            state.more = more.clone();
            self.has_https.store(HttpsKnown::of(state.listener.is_some() || !more.is_empty()), Ordering::SeqCst);
            for (port, l) in more {
                report.more_listener_ids.push(l.id.clone());
                if let Some(https) = desired.more_https.get(&port) {
                    self.converge_children(&DesiredView::https(desired, https), lb, l, report).await?;
                }
            }
            if as_desired && more_as_desired {
                https::collect_garbage(c, state, &holds, report).await?;
            }
            Ok::<(), DriverError>(())
        }
        .await;
        let scope = c.secret_scope();
        holds.report(report, |k| https::hold_owners(k, desired, &scope));
        result
    }

    /// Read → plan → write on the router's children, in rounds (see [`rounds`]).
    ///
    /// The snapshot a plan is made from can be stale in one way that matters: a create sent by a
    /// process that died (or a leader that lost its lease) just before this one read the router
    /// lands after the read, and the plan creates the object a second time. That is visible
    /// afterwards only: the write of this round waited for the router (409 busy retries), or this
    /// is the first convergence of the process. Then the router is read again and the copies are
    /// deleted (plan_writes keeps one of each name), within `rounds::MAX_ROUNDS`.
    async fn converge_children(
        &self,
        desired: &DesiredView<'_>,
        lb: &LoadBalancer,
        listener: Listener,
        report: &mut ConvergeReport,
    ) -> Result<()> {
        let c = &self.cloud;
        let listener_id = listener.id.clone();
        // No verification before the first writes of the process: its first convergence reads
        // the list GETs only where the stamps hold; the later ones verify a few trusted parents.
        let children = DesiredChildren::of(desired, &c.spec.ownership, self.verified.load(Ordering::SeqCst));
        let mut io = execute::OctaviaListener::new(c, &self.reads, &lb.id, listener, children);
        let diff = c.spec.diff_options();
        let opts = rounds::RoundOptions {
            listener: &listener_id,
            diff: &diff,
            verify: !self.verified.load(Ordering::SeqCst),
            backoff: &self.backoff,
            now: Instant::now(),
            quota: &self.quota,
        };
        rounds::converge_view(&mut io, desired, &opts, report).await?;
        self.verified.store(true, Ordering::SeqCst);
        let mut seen = BTreeSet::new();
        report.conflicts.retain(|c| seen.insert(c.clone()));
        Ok(())
    }

    /// Make `pool`'s members exactly `pool.members`: one batch member update if they differ (the
    /// same member diff as [`Router::converge`]), none if they do not.
    pub async fn set_members(&self, pool: &Pool) -> Result<MembersChange> {
        self.check_blocked().await?;
        let result = self.set_members_unblocked(pool).await;
        self.note_blocking(result)
    }

    async fn set_members_unblocked(&self, pool: &Pool) -> Result<MembersChange> {
        if self.has_https_listener().await? {
            // A member write makes Octavia's worker read the router's certificates: with Barbican
            // down it would never complete (see converge). One cheap read of ours first.
            https::probe(&self.cloud).await.map_err(|e| DriverError::WritesHeld { source: Box::new(e) })?;
        }
        let Some((lb_id, pool_id)) = self.pool_id(&pool.name).await? else {
            return Ok(MembersChange::PoolMissing);
        };
        let Some(members) = read::pool_members(&self.cloud, &pool_id).await? else {
            *self.pool_ids.lock().await = None;
            return Ok(MembersChange::PoolMissing);
        };
        // Found among our pools by name, so ours and not in the way of the member diff.
        let actual = super::actual::ActualPool {
            id: pool_id.as_str().into(),
            name: pool.name.clone(),
            lb_algorithm: super::actual::word(pool.lb_algorithm.clone()),
            members,
            healthmonitor: None,
            tags: self.cloud.spec.ownership.tags_for(&pool.service).into(),
            in_error: false,
        };
        match plan_members(pool, &actual, &self.cloud.spec.diff_options()) {
            None => Ok(MembersChange::Unchanged),
            Some(write) => {
                execute::replace_members(&self.cloud, &lb_id, &pool_id, &write).await?;
                Ok(MembersChange::Updated)
            }
        }
    }

    /// Whether the router has an HTTPS listener: as the last convergence left it, else (a process
    /// whose first job is a member update) as Octavia lists the router's listeners.
    async fn has_https_listener(&self) -> Result<bool> {
        match self.has_https.load(Ordering::SeqCst) {
            HttpsKnown::YES => return Ok(true),
            HttpsKnown::NO => return Ok(false),
            _ => {}
        }
        let Some(lb) = self.find().await? else { return Ok(false) };
        let has = https::has_listener(&self.cloud, &lb).await?;
        // A convergence that finished meanwhile knows better.
        let _ = self.has_https.compare_exchange(
            HttpsKnown::UNKNOWN,
            HttpsKnown::of(has),
            Ordering::SeqCst,
            Ordering::SeqCst,
        );
        Ok(has)
    }

    /// (router id, pool id) of our pool `name`, looked up again when not cached.
    async fn pool_id(&self, name: &str) -> Result<Option<(String, String)>> {
        let mut cache = self.pool_ids.lock().await;
        if let Some((lb, pools)) = cache.as_ref()
            && let Some(id) = pools.get(name)
        {
            return Ok(Some((lb.clone(), id.clone())));
        }
        let lb = match cache.as_ref() {
            Some((lb, _)) => lb.clone(),
            None => match self.find().await? {
                Some(lb) => lb.id,
                None => return Ok(None),
            },
        };
        let pools = read::our_pool_ids(&self.cloud, &lb).await?;
        let found = pools.get(name).map(|id| (lb.clone(), id.clone()));
        *cache = Some((lb, pools));
        Ok(found)
    }
}

/// An error of the HTTPS side that ends the convergence at once (the lease lost, the router
/// refusing every write), or else the one to report after the floating IP.
fn stop_or_defer(e: DriverError) -> Result<DriverError> {
    match e {
        DriverError::NotLeader | DriverError::RouterInError { .. } | DriverError::RouterBlocked { .. } => Err(e),
        e if blocked::blocking(&e).is_some() => Err(e),
        e => Ok(e),
    }
}
