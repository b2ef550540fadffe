//! Scale-out (`[octavia_defaults] scale_out`): one controller drives a set of routers
//! `<l7_router_name>`, `<l7_router_name>-2`, … that together act as one logical L7 router.
//!
//! A Sync of the set translates the caches ONCE, places the host groups (`placement::place`,
//! the previous placement as input, so a placed group never moves by itself) and splits the
//! translation into one desired router per router (`placement::split`). Each router has its own
//! slot and serial writer (`controller::routers`): the parts are submitted to every writer at
//! once, so a write on one router never waits for a write on another, and a router that fails
//! (ERROR, refused writes) holds back only the groups placed on it.
//!
//! Moves (make-before-break) start when the operator asks, when an Ingress merges groups
//! placed on different routers, and when a group grows on a router that goes over capacity
//! (`controller::router_set::moves`).
//!
//! The placement, the groups' costs and the moves are recorded by the controller in its own
//! namespace (`controller::router_set::store`), never in objects tenants can write: each host's router
//! once that router synced, read back at start, so a restarted controller or a new leader places
//! every group where it was without reading any router. The annotations of versions before are
//! read once, at the upgrade, and kept only where Octavia confirms them (`set_migration`).

pub mod drain;
pub mod health;
pub mod health_outputs;
pub mod migration;
pub mod move_outputs;
pub mod moves;
pub mod observed;
pub mod rollback;
pub mod rollback_outputs;
pub mod set_sync;
pub mod store;

use crate::config::ScaleOut;
use crate::controller::outputs::PlannedEvent;
use crate::controller::outputs::events::UserEvent;
use crate::controller::router_set::moves::{self as set_moves, Moves};
use crate::controller::router_set::store::{HostRecord, SetRecords, SetStore};
use crate::controller::writer::{WriteError, Writer, WriterHandle};
use crate::model::{DesiredRouter, KubeRef};
use crate::placement::moves::MoveObservation;
use crate::placement::relief::host_costs;
use crate::placement::split::{SplitParams, split_by_homes};
use crate::placement::{
    MovePhase, MovePlan, Placement, RouterFate, RouterIndex, RouterRecord, UnixSeconds, router_name,
};
use crate::reason::Reason;
use crate::translate::namespace_of;
use k8s_openapi::api::networking::v1::Ingress;
use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Builds the writer of router `index` named `name` (its backend gated by the leader lease and
/// counted in the metrics), when placement first puts a group on it.
pub(crate) type SpawnWriter = Box<dyn Fn(RouterIndex, &str) -> Result<Writer, WriteError> + Send + Sync>;

/// One placement of the set and each router's part of the translation.
pub struct Placed {
    pub placement: Placement,
    /// The translation of the whole logical router (its warnings are all there).
    pub whole: Arc<DesiredRouter>,
    /// Each router's desired state, index 0 always.
    pub parts: BTreeMap<RouterIndex, Arc<DesiredRouter>>,
    /// The moves in progress, in the phase this placement split by.
    pub moves: Moves,
    /// Moves that entered a new phase (or started) while placing: to record and report.
    pub moved: Vec<MovePlan>,
    /// Move asks refused: (Ingress key, why).
    pub refused: Vec<(String, String)>,
    /// Hosts of the groups that grew on a router over capacity and wait to be moved.
    pub pending: BTreeSet<String>,
}

impl Placed {
    /// The router of `ing`: the router of its hosts; an Ingress with only host-less rules is on
    /// every router, and its status carries the first router's address. `None`: an Ingress with
    /// hosts that this placement does not place (one created after it was made, or whose hosts
    /// all went to others): no router's job publishes an address on it, for the first router
    /// would be an address that does not serve its hosts (its own Sync places it).
    pub(crate) fn router_of(&self, ing: &Ingress) -> Option<RouterIndex> {
        let key = format!("{}/{}", namespace_of(&ing.metadata), ing.metadata.name.as_deref().unwrap_or_default());
        if let Some(router) = self.placement.ingress_router.get(&key) {
            return Some(*router);
        }
        let rules = ing.spec.as_ref().and_then(|s| s.rules.as_ref());
        let has_hosts =
            rules.is_some_and(|rules| rules.iter().any(|r| r.host.as_deref().is_some_and(|h| !h.is_empty())));
        (!has_hosts).then_some(0)
    }

    /// Whether `ing`'s group is being moved (its status is the move's, not one router's).
    pub fn is_moving(&self, ing: &Ingress) -> bool {
        set_moves::move_of(&self.moves, ing).is_some()
    }
}

/// The routers of one controller with scale-out on.
pub struct RouterSet {
    /// `l7_router_name`: router 0's name, and the base of the others'.
    pub base: String,
    scale_out: ScaleOut,
    spawn: SpawnWriter,
    /// The writers spawned for routers other than the first (drained at shutdown).
    writers: Mutex<Vec<Writer>>,
    /// The last placement and when its translation started: a Sync requested before that reuses
    /// it (the translation saw its change), so concurrent reconciles translate once.
    last: tokio::sync::Mutex<Option<(Instant, Arc<Placed>)>>,
    /// Since when each router has been empty (for `empty_router_grace`).
    empty_since: Mutex<BTreeMap<RouterIndex, UnixSeconds>>,
    /// Routers deleted after their grace: left out of the next placements (until a new group
    /// is placed on that index again, which creates the router anew).
    gone: Mutex<BTreeSet<RouterIndex>>,
    /// The moves as this controller last advanced them (newer than the records on the
    /// Ingresses, whose patches may not be in the cache yet); a finished move stays as `Done`
    /// so that its stale record is not resumed. Lock order: `records` before `moves` when both
    /// are held.
    moves: Mutex<Moves>,
    /// Each router's floating IP, from its last Sync (a move's status names two routers).
    addresses: Mutex<BTreeMap<RouterIndex, IpAddr>>,
    /// Told when a move changes phase: the resync loop then sleeps until the move's next
    /// deadline instead of its whole period.
    pub move_changed: tokio::sync::Notify,
    /// Routers of the set found on Octavia at start (by our set tag), for the first placement:
    /// one that no placement names is then empty, and deleted after its grace.
    found: Mutex<BTreeSet<RouterIndex>>,
    /// Hosts of groups that grew on a router still over capacity, not moved yet (their router
    /// was busy with another move). A restart sees the growth again from [`COST_ANNOTATION`],
    /// which keeps the cost before the growth while it waits.
    grown: Mutex<BTreeSet<String>>,
    /// Indices whose name an untagged load balancer holds (found at start): kept off by placement
    /// unless the recorded placement names them.
    untagged: Mutex<BTreeSet<RouterIndex>>,
    /// The moves' steps not told yet, in the order they happened: concurrent Syncs (one per
    /// router) place and observe in turn, but publish later, so each step is queued where it
    /// happens and the Events are told in that order, once (`take_steps`).
    steps: Mutex<Vec<MovePlan>>,
    /// Held while the queued steps are told, so that one teller's Events do not interleave
    /// with another's.
    pub telling: tokio::sync::Mutex<()>,
    /// The set's records as this controller keeps them (`set_store`): read at start, updated
    /// after each Sync, written to `store`. Never read from the Ingresses.
    records: Mutex<SetRecords>,
    store: Option<SetStore>,
    /// The operator's move requests (`kuryr-l7-router move`), as last read from the store.
    operator_asks: Mutex<Vec<set_moves::MoveAsk>>,
    /// Held from the snapshot of `records` to the end of its write: an older snapshot is never
    /// written over a newer one.
    saving: tokio::sync::Mutex<()>,
    /// Each router's health from its Syncs: placement keeps new groups off a failing router,
    /// and a failing create waits for its backoff.
    health: health::SetHealth,
    /// Scale-out is off but routers beyond the first exist: every group on them moves to the
    /// first router (make-before-break), and each, once empty for its grace, is deleted.
    draining: bool,
    /// Moves rolled back (a late target, a cancel): the holds that keep them from starting
    /// again, the cancels read, what is still to tell.
    rollbacks: rollback::Rollbacks,
}

impl RouterSet {
    pub fn new(base: impl Into<String>, scale_out: ScaleOut, spawn: SpawnWriter) -> Self {
        Self {
            base: base.into(),
            scale_out,
            spawn,
            writers: Mutex::default(),
            last: tokio::sync::Mutex::new(None),
            empty_since: Mutex::default(),
            gone: Mutex::default(),
            moves: Mutex::default(),
            addresses: Mutex::default(),
            move_changed: tokio::sync::Notify::new(),
            found: Mutex::default(),
            grown: Mutex::default(),
            untagged: Mutex::default(),
            steps: Mutex::default(),
            telling: tokio::sync::Mutex::new(()),
            records: Mutex::default(),
            store: None,
            operator_asks: Mutex::default(),
            saving: tokio::sync::Mutex::new(()),
            health: health::SetHealth::default(),
            draining: false,
            rollbacks: rollback::Rollbacks::default(),
        }
    }

    /// Scale-out was turned off: the set drains into the first router (`placement::excess`),
    /// which has no capacity limit any more (it is the single router again); no group goes to
    /// the other routers, and no move is asked for.
    pub fn draining(mut self) -> Self {
        self.draining = true;
        self
    }

    /// Whether the set drains into the first router.
    pub fn is_draining(&self) -> bool {
        self.draining
    }

    /// Starts from `records` (read from `store` at start, or migrated), written back to `store`.
    /// The holds of the moves rolled back before are in force again (until they end).
    pub fn with_records(mut self, records: SetRecords, store: Option<SetStore>) -> Self {
        *self.rollbacks.holds.lock().expect("lock") = records.holds.clone();
        self.records = Mutex::new(records);
        self.store = store;
        self
    }

    /// The records now (tests, tools).
    pub fn records(&self) -> SetRecords {
        self.records.lock().expect("lock").clone()
    }

    /// The routers `found` exist on Octavia (found at start by our set tag), each with the time
    /// its load balancer's tag says it became empty: the next placement counts them, so an
    /// empty one is collected once its grace, counted from that time, is over. The first
    /// router is always in the set. `untagged`: indices whose name a load balancer without our
    /// set tag holds: no new group goes there unless a recorded placement names it.
    pub fn found(
        &self,
        found: impl IntoIterator<Item = (RouterIndex, Option<UnixSeconds>)>,
        untagged: impl IntoIterator<Item = RouterIndex>,
    ) {
        self.untagged.lock().expect("lock").extend(untagged.into_iter().filter(|i| *i > 0));
        let found: Vec<_> = found.into_iter().filter(|(i, _)| *i > 0).collect();
        let mut empty = self.empty_since.lock().expect("lock");
        empty.extend(found.iter().filter_map(|(i, since)| Some((*i, (*since)?))));
        self.found.lock().expect("lock").extend(found.iter().map(|(i, _)| *i));
    }

    /// The key (name) of router `index`.
    pub(crate) fn name_of(&self, index: RouterIndex) -> String {
        router_name(&self.base, index)
    }

    /// Spawns the writer of router `index`.
    pub(crate) fn spawn_writer(&self, index: RouterIndex) -> Result<WriterHandle, WriteError> {
        let writer = (self.spawn)(index, &self.name_of(index))?;
        let handle = writer.handle();
        self.writers.lock().expect("lock").push(writer);
        Ok(handle)
    }

    /// Each router's health as its Syncs told it.
    pub(crate) fn health(&self) -> &health::SetHealth {
        &self.health
    }

    /// The writers spawned so far (shutdown drains them).
    pub(crate) fn take_writers(&self) -> Vec<Writer> {
        std::mem::take(&mut *self.writers.lock().expect("lock"))
    }

    /// The placement of the caches as they are now, translated by `translate` (off the async
    /// workers), unless a placement whose translation started after `requested` exists.
    pub async fn placed(
        &self,
        requested: Instant,
        ingresses: &[Arc<Ingress>],
        translate: impl FnOnce() -> DesiredRouter + Send + 'static,
    ) -> Result<Arc<Placed>, WriteError> {
        let mut last = self.last.lock().await;
        if let Some((started, placed)) = last.as_ref()
            && *started >= requested
        {
            return Ok(placed.clone());
        }
        let started = Instant::now();
        self.read_operator_asks().await;
        let mut current = self.records.lock().expect("lock").placement();
        // The last placement wins over the record: it is newer (the record is written only for
        // the routers that synced).
        if let Some((_, prev)) = last.as_ref() {
            current.extend(prev.placement.host_router.iter().map(|(h, r)| (h.clone(), *r)));
        }
        let now = unix_now();
        let (mut moves, mut moved) = self.moves_now(now);
        let operator_asks = self.operator_asks.lock().expect("lock").clone();
        let (back, clear) = self.roll_back(&mut moves, &mut current, ingresses, &operator_asks, now);
        moved.extend(back);
        self.clear_requests(&clear).await;
        let asks = set_moves::move_asks(&self.base, ingresses.iter().map(|i| i.as_ref()));
        let mut asks = set_moves::admit_asks(asks, &self.scale_out.move_request_namespaces);
        // The operator's requests (the CLI's) are admitted from any namespace.
        asks.extend(self.operator_asks.lock().expect("lock").iter().cloned());
        if self.draining {
            asks.clear();
        }
        let routers = self.known_routers(&current, last.as_ref().map(|(_, p)| p.as_ref()));
        // The first placement of this process compares with the recorded costs.
        let before = match last.as_ref() {
            Some((_, prev)) => host_costs(&prev.placement),
            None => self.records.lock().expect("lock").costs(),
        };
        let mut held: BTreeMap<String, BTreeSet<RouterIndex>> = BTreeMap::new();
        for hold in self.rollbacks.holds(now) {
            for h in hold.hosts {
                held.entry(h).or_default().insert(hold.to);
            }
        }
        let pending = self.grown.lock().expect("lock").clone();
        let growth = set_moves::Growth { before, pending, draining: self.draining, held };
        let unlimited = crate::placement::Capacity { max_policies: u32::MAX, max_certificates: u32::MAX };
        let params = SplitParams {
            capacity: if self.draining { unlimited } else { self.scale_out.capacity },
            current,
            routers,
            now,
            empty_grace_secs: self.scale_out.empty_router_grace.as_secs(),
        };
        let (placed, grown) = tokio::task::spawn_blocking(move || {
            let whole = translate();
            let with_moves = set_moves::place_with_moves(&whole, &params, moves, &asks, now, &growth);
            let homes = set_moves::homes(&with_moves.placement, &with_moves.moves);
            let mut parts = split_by_homes(&whole, &homes);
            // An empty router's part carries the time it became empty: its load balancer's tag
            // records it for the next leader.
            for (index, part) in &mut parts {
                let load = with_moves.placement.routers.get(index);
                if let Some(RouterFate::Empty { since, .. }) = load.map(|l| &l.fate) {
                    part.empty_since = Some(*since);
                }
            }
            moved.extend(with_moves.started.iter().cloned());
            let placed = Placed {
                placement: with_moves.placement,
                whole: Arc::new(whole),
                parts: parts.into_iter().map(|(i, d)| (i, Arc::new(d))).collect(),
                moves: with_moves.moves,
                moved,
                refused: with_moves.refused,
                pending: with_moves.pending.clone(),
            };
            (placed, with_moves.pending)
        })
        .await
        .map_err(|e| WriteError::new("translation_failed", format!("translation failed: {e}")))?;
        *self.grown.lock().expect("lock") = grown;
        self.remember(&placed);
        let placed = Arc::new(placed);
        *last = Some((started, placed.clone()));
        Ok(placed)
    }

    /// The routers a placement starts from: those the current hosts use, those the last
    /// placement kept (not deleted since), the ones found at start, the empty ones with the
    /// time they became empty, and the untagged names that hold their index.
    fn known_routers(
        &self,
        current: &BTreeMap<String, RouterIndex>,
        last: Option<&Placed>,
    ) -> BTreeMap<RouterIndex, RouterRecord> {
        let mut routers: BTreeMap<RouterIndex, RouterRecord> =
            current.values().map(|r| (*r, RouterRecord::default())).collect();
        if let Some(prev) = last {
            let gone = self.gone.lock().expect("lock");
            let kept = prev.placement.routers.keys().filter(|r| !gone.contains(r));
            routers.extend(kept.map(|r| (*r, RouterRecord::default())));
        }
        // Once: the placement carries them on (as empty routers, until deleted or used again).
        for r in std::mem::take(&mut *self.found.lock().expect("lock")) {
            routers.entry(r).or_default();
        }
        for (r, since) in self.empty_since.lock().expect("lock").iter() {
            routers.insert(*r, RouterRecord { empty_since: Some(*since), ..RouterRecord::default() });
        }
        for r in self.untagged.lock().expect("lock").iter() {
            routers.entry(*r).or_default().untagged = true;
        }
        // Health only marks the routers known otherwise: it never adds one to the placement.
        let now = unix_now();
        for (r, record) in &mut routers {
            record.health = self.health.of(*r, now, crate::placement::ROUTER_SETTLE_SECS);
            record.draining = self.draining && *r > 0;
        }
        routers
    }

    /// Keeps what a new placement decided: the empty routers, the moves and their steps to
    /// tell, and wakes the resync loop when a deadline changed.
    fn remember(&self, placed: &Placed) {
        let empty: BTreeMap<RouterIndex, UnixSeconds> = placed
            .placement
            .routers
            .iter()
            .filter_map(|(r, l)| match l.fate {
                RouterFate::Empty { since, .. } => Some((*r, since)),
                _ => None,
            })
            .collect();
        let newly_empty = {
            let mut known = self.empty_since.lock().expect("lock");
            let newly = empty.keys().any(|r| !known.contains_key(r));
            *known = empty;
            newly
        };
        // An index placed on again is a router again.
        self.gone.lock().expect("lock").retain(|r| !placed.placement.routers.contains_key(r));
        for w in &placed.placement.warnings {
            tracing::warn!(warning = ?w, "placement");
        }
        {
            // A move that a router's job stepped on while this placement was made (its target
            // ACTIVE, its source cleared, a move done going on elsewhere) keeps its newer
            // state: put back to the placement's older phase, its status went back a step
            // (a move publishing both routers published the source alone again).
            let mut known = self.moves.lock().expect("lock");
            for (group, m) in &placed.moves {
                if known.get(group).is_none_or(|k| !stepped_since(k, m, &placed.moved)) {
                    known.insert(group.clone(), m.clone());
                }
            }
        }
        self.steps.lock().expect("lock").extend(placed.moved.iter().cloned());
        // The resync loop then sleeps until the new deadline (a move's phase, an empty
        // router's grace) instead of its whole period.
        if !placed.moved.is_empty() || newly_empty {
            self.move_changed.notify_one();
        }
    }
}

impl RouterSet {
    /// After the writes of a Sync that split by `placed` (`synced`: the routers whose Sync
    /// succeeded): the hosts of each group on a router that synced are recorded there, with the
    /// group's cost (the cost before, while the group's growth waits for a move, so that a new
    /// leader still sees it); hosts no longer placed are forgotten; the moves are this
    /// controller's, a finished one's record removed; the rollbacks' holds in force are kept.
    /// The hosts `placed` put on a move's target are not recorded once that move went back
    /// (rolled back, cancelled) since: the late job of a target that hung records nothing for
    /// them, so a restart does not place them there.
    pub fn record(&self, placed: &Placed, synced: &[RouterIndex]) {
        let p = &placed.placement;
        // `records` before `moves`: the order `roll_back` takes them in.
        let mut records = self.records.lock().expect("lock");
        let known = self.moves.lock().expect("lock");
        let gone_back = hosts_moved_back(placed, &known);
        records.hosts.retain(|h, _| p.host_router.contains_key(h));
        for g in &p.groups {
            let Some(router) = p.group_router.get(&g.id).filter(|r| synced.contains(r)) else { continue };
            let waits = !g.hosts.is_disjoint(&placed.pending);
            for h in g.hosts.iter().filter(|h| !gone_back.contains(*h)) {
                let record = match records.hosts.get(h) {
                    Some(old) if waits => HostRecord { router: *router, ..old.clone() },
                    _ if waits => HostRecord::on(*router),
                    _ => HostRecord::on(*router).with_cost(g.id.clone(), g.cost),
                };
                records.hosts.insert(h.clone(), record);
            }
        }
        let placed_hosts = |m: &MovePlan| m.hosts.iter().any(|h| p.host_router.contains_key(h));
        records.set_moves(known.iter().filter(|(_, m)| placed_hosts(m)));
        // After `moves`: the order `roll_back` takes the locks in. Only the holds in force.
        records.holds = self.rollbacks.holds(unix_now());
    }

    /// Reads the operator's move requests (`kuryr-l7-router move`) for the placement being made
    /// (one GET per placement, not per reconcile; unreadable: the last ones read stay).
    async fn read_operator_asks(&self) {
        let Some(store) = &self.store else { return };
        if let Some((asks, cancels)) = store.operator_asks().await {
            *self.operator_asks.lock().expect("lock") = asks;
            self.rollbacks.read_cancels(cancels);
        }
    }

    /// Removes the requests of `ingresses` from the store (cancels handled, the operator's
    /// requests of moves rolled back).
    async fn clear_requests(&self, ingresses: &[String]) {
        let Some(store) = &self.store else { return };
        for ingress in ingresses {
            store.clear_request(ingress).await;
        }
    }

    /// Writes the records to the store (the shards that changed).
    pub async fn save_records(&self) {
        let Some(store) = &self.store else { return };
        let _saving = self.saving.lock().await;
        let records = self.records();
        store.save(&records).await;
    }

    /// The routers `placed` says to delete (empty for their whole grace; never the first),
    /// not deleted yet.
    pub fn to_delete(&self, placed: &Placed) -> Vec<RouterIndex> {
        let gone = self.gone.lock().expect("lock");
        let routers = placed.placement.routers.iter();
        routers
            .filter(|(r, l)| **r != 0 && l.fate == RouterFate::Delete && !gone.contains(r))
            .map(|(r, _)| *r)
            .collect()
    }

    /// Router `index` was deleted: later placements leave it out.
    pub fn deleted(&self, index: RouterIndex) {
        self.gone.lock().expect("lock").insert(index);
        self.empty_since.lock().expect("lock").remove(&index);
        self.health.forget(index);
    }

    /// The moves in progress (the records, with this controller's newer state over them),
    /// each advanced by the clock (a grace that ended); and those that changed phase.
    fn moves_now(&self, now: UnixSeconds) -> (Moves, Vec<MovePlan>) {
        let recorded = self.records.lock().expect("lock").moves.clone();
        let mut known = self.moves.lock().expect("lock");
        // A finished move is forgotten once its record is removed.
        known.retain(|g, m| !matches!(m.phase, MovePhase::Done { .. }) || recorded.contains_key(g));
        let mut moves = recorded;
        moves.extend(known.iter().map(|(g, m)| (g.clone(), m.clone())));
        moves.retain(|_, m| !matches!(m.phase, MovePhase::Done { .. }));
        let timings = self.scale_out.move_timings();
        let mut moved = Vec::new();
        for m in moves.values_mut() {
            let next = m.advance(now, MoveObservation::default(), timings);
            if next != *m {
                *m = next;
                moved.push(m.clone());
            }
        }
        (moves, moved)
    }

    /// After the writes of a Sync that split by `placed`: the moves whose wait on Octavia is
    /// over (the target synced with the routes, the source synced without them) step on.
    /// The moves that changed phase are queued to be told (a move already stepped on by a
    /// concurrent Sync is left alone). `synced`: the routers whose Sync succeeded, with their
    /// address.
    pub fn observe(&self, placed: &Placed, synced: &BTreeMap<RouterIndex, Option<IpAddr>>) {
        {
            let mut addresses = self.addresses.lock().expect("lock");
            addresses.extend(synced.iter().filter_map(|(r, a)| Some((*r, (*a)?))));
        }
        let now = unix_now();
        let timings = self.scale_out.move_timings();
        let mut known = self.moves.lock().expect("lock");
        let mut changed = Vec::new();
        for (group, m) in &placed.moves {
            let seen = MoveObservation {
                target_active: synced.contains_key(&m.to),
                source_cleared: synced.contains_key(&m.from),
            };
            let next = m.advance(now, seen, timings);
            let current = known.get(group);
            // Unchanged, already stepped on by a concurrent Sync, or rolled back meanwhile.
            if next.phase == m.phase || current.is_none_or(|c| c.phase != m.phase || c.to != m.to) {
                continue;
            }
            // A move done whose hosts a tie placed elsewhere goes on there, make-before-break.
            let next = match set_moves::chained(&next, &placed.placement, now) {
                Some(chain) => {
                    changed.push(next);
                    chain
                }
                None => next,
            };
            known.insert(group.clone(), next.clone());
            changed.push(next);
        }
        if !changed.is_empty() {
            self.move_changed.notify_one();
        }
        self.steps.lock().expect("lock").extend(changed);
    }

    /// The steps not told yet, in the order they happened (each is taken once). Hold
    /// `telling` from the take until they are told.
    pub fn take_steps(&self) -> Vec<MovePlan> {
        std::mem::take(&mut *self.steps.lock().expect("lock"))
    }

    /// The moves as this controller knows them now, finished ones (`Done`) included until no
    /// Ingress records them.
    pub fn known_moves(&self) -> Moves {
        self.moves.lock().expect("lock").clone()
    }

    /// The last known address of router `index`.
    pub fn address_of(&self, index: RouterIndex) -> Option<IpAddr> {
        self.addresses.lock().expect("lock").get(&index).copied()
    }

    /// How long until the next grace ends: a move's, or an empty router's (None: nothing waits
    /// on the clock). An empty router's grace already over is not waited for: the Sync at its
    /// end deleted it, or failed and is tried again at the next resync.
    pub fn next_wake(&self) -> Option<Duration> {
        let timings = self.scale_out.move_timings();
        let moves = self.moves.lock().expect("lock").values().filter_map(|m| m.deadline(timings)).min();
        // A move waiting for its target is rolled back at its timeout.
        let moves = moves.into_iter().chain(self.next_target_deadline()).min();
        let now = unix_now();
        let grace = self.scale_out.empty_router_grace.as_secs();
        let empty = self.empty_since.lock().expect("lock");
        let ends = empty.values().map(|since| since.saturating_add(grace)).filter(|end| *end > now).min();
        // A failing create is tried again when its backoff ends.
        let retry = self.health.next_retry(Instant::now()).map(|d| d + MOVE_WAKE_MARGIN);
        let Some(deadline) = moves.into_iter().chain(ends).min() else { return retry };
        let now_ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis());
        let at_ms = u128::from(deadline) * 1000;
        // A little after the second the deadline names, so that the clock has reached it.
        let wake =
            Duration::from_millis(u64::try_from(at_ms.saturating_sub(now_ms)).unwrap_or(u64::MAX)) + MOVE_WAKE_MARGIN;
        Some(retry.map_or(wake, |r| r.min(wake)))
    }
}

/// Sleeps until the next resync is due: after `period`, or as soon as a move's grace or an
/// empty router's grace ends (a move that changes phase, or a router left empty, meanwhile sets
/// a new deadline), so the phases step on, and the empty router goes, on time.
pub async fn until_next_resync(set: Option<&RouterSet>, period: Duration) {
    let due = tokio::time::Instant::now() + period;
    loop {
        let left = due.saturating_duration_since(tokio::time::Instant::now());
        let wake = set.and_then(|s| s.next_wake()).map_or(left, |w| w.min(left));
        let Some(set) = set else { return tokio::time::sleep(wake).await };
        tokio::select! {
            _ = tokio::time::sleep(wake) => return,
            _ = set.move_changed.notified() => {}
        }
    }
}

/// The hosts of the moves of `placed` that this controller no longer drives as they were
/// (`known`: its moves now): rolled back or cancelled since (gone, or replaced by the way back
/// or a move on elsewhere). `placed` put them on that move's target: a job of that placement
/// ending now (a target whose create hung past the rollback) must not record them there. A
/// move finished and forgotten since counts too: its hosts were recorded on the target by the
/// Syncs that finished it, and the old placement has nothing newer to say about them.
fn hosts_moved_back(placed: &Placed, known: &Moves) -> BTreeSet<String> {
    let same =
        |g: &crate::placement::GroupId, m: &MovePlan| known.get(g).is_some_and(|k| k.from == m.from && k.to == m.to);
    placed.moves.iter().filter(|(g, m)| !same(g, m)).flat_map(|(_, m)| m.hosts.iter().cloned()).collect()
}

/// Whether `known` (this controller's move of a group now) is newer than `placed` (the same
/// group's move in a placement being made): the same move (source and target) in a later
/// phase, or another move of the group made meanwhile (a move done going on elsewhere), unless
/// the placement started `placed` itself (`moved`: its steps; a start is `CreateOnTarget`).
fn stepped_since(known: &MovePlan, placed: &MovePlan, moved: &[MovePlan]) -> bool {
    if known.from == placed.from && known.to == placed.to {
        return phase_order(&known.phase) > phase_order(&placed.phase);
    }
    let started_here = matches!(placed.phase, MovePhase::CreateOnTarget { .. }) && moved.contains(placed);
    !started_here
}

/// A move's phases in the order they come, each entered at its time.
fn phase_order(phase: &MovePhase) -> (u8, UnixSeconds) {
    match *phase {
        MovePhase::CreateOnTarget { since } => (0, since),
        MovePhase::PublishBoth { since } => (1, since),
        MovePhase::PublishTarget { since } => (2, since),
        MovePhase::DeleteOld { since } => (3, since),
        MovePhase::Done { at } => (4, at),
    }
}

/// How long the start waits for the list of the set's load balancers.
const SET_LIST_TIMEOUT: Duration = Duration::from_secs(20);

/// The routers of the set `base` on Octavia (by our set tag), other than the first, each with
/// the time its load balancer's tag says it became empty: those no placement names are
/// collected once their `empty_router_grace`, counted from then, is over; and the indices whose
/// name a load balancer without our set tag holds. A failed list finds none (logged): they are
/// collected by a later start.
pub(crate) async fn found_on_octavia<B: crate::controller::writer::RouterBackend>(
    backend: &B,
    base: &str,
) -> (Vec<(RouterIndex, Option<UnixSeconds>)>, Vec<RouterIndex>) {
    match tokio::time::timeout(SET_LIST_TIMEOUT, backend.set_load_balancers()).await {
        Ok(Ok(found)) => {
            let index =
                |lb: &crate::driver::FoundRouter| crate::placement::router_index(base, &lb.name).filter(|i| *i > 0);
            let ours = found.iter().filter(|lb| !lb.untagged).filter_map(|lb| Some((index(lb)?, lb.empty_since)));
            let untagged = found.iter().filter(|lb| lb.untagged).filter_map(index);
            (ours.collect(), untagged.collect())
        }
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "cannot list the set's load balancers: empty ones are not collected");
            Default::default()
        }
        Err(_) => {
            tracing::warn!("listing the set's load balancers timed out: empty ones are not collected");
            Default::default()
        }
    }
}

/// How long after a move's deadline the resync runs.
const MOVE_WAKE_MARGIN: Duration = Duration::from_millis(50);

fn unix_now() -> UnixSeconds {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// One Warning Event per Ingress concerned by each placement warning (`warning_text` as its
/// message, naming the routers): the Ingresses of an oversized group, those of every group on a
/// router over capacity, and, when the part copied to every router alone is too big, the
/// Ingresses whose host-less rules make it. The routes are served either way: the Events say
/// why a router is over its capacity, and what to do.
pub fn placement_events(base: &str, placed: &Placed) -> Vec<PlannedEvent> {
    use crate::placement::PlacementWarning as W;
    let p = &placed.placement;
    let of_groups = |ids: &mut dyn Iterator<Item = &String>| -> BTreeSet<String> {
        let ids: BTreeSet<&String> = ids.collect();
        p.groups.iter().filter(|g| ids.contains(&g.id)).flat_map(|g| g.ingresses.iter().cloned()).collect()
    };
    let mut out = Vec::new();
    for w in &p.warnings {
        let (reason, owners) = match w {
            W::OversizedGroup { group, .. } => (Reason::OversizedGroup, of_groups(&mut std::iter::once(group))),
            W::OverCapacity { groups, .. } => (Reason::RouterOverCapacity, of_groups(&mut groups.iter())),
            W::SharedOverCapacity { .. } => (Reason::SharedOverCapacity, hostless_owners(&placed.whole)),
        };
        let message = crate::placement::report::warning_text(base, w);
        for owner in owners {
            // Owners of other kinds (`Kind ns/name`) get their Events from their own handlers.
            let Some((ns, name)) = owner.split_once('/').filter(|_| !owner.contains(' ')) else { continue };
            let event = UserEvent::of(reason, "Placement", message.clone());
            out.push(PlannedEvent { regarding: KubeRef::new("Ingress", ns, name), event });
        }
    }
    out
}

/// The Ingresses (`ns/name`) with a host-less policy: their rules are copied to every router.
fn hostless_owners(whole: &DesiredRouter) -> BTreeSet<String> {
    let https = whole.https.iter().flat_map(|h| h.policies.iter());
    whole
        .policies
        .iter()
        .chain(https)
        .filter(|p| crate::placement::split::policy_host(p).is_none())
        .map(|p| crate::placement::split::owner_key(&p.owner))
        .collect()
}

#[cfg(test)]
#[path = "set_tests.rs"]
mod tests;
