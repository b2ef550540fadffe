//! The Gateways' routers converged: one router per Gateway of ours, each with its own serial
//! writer and driver (its load balancer named by `crate::gateway::naming::load_balancer_name`,
//! its HTTP listener on the Gateway's port), beside the Ingress router(s) and never waiting on
//! them or on each other.
//!
//! The driver reads the route tables the Gateway loop publishes
//! ([`crate::controller::gateway::GatewayLoop::routers`]), turns them into desired routers from the Ingress
//! side's caches ([`crate::controller::gateway::routers::desired_routers`]) and hands each to the task of its
//! Gateway, which syncs it and reports back: the load balancer's address into [`Programmed`]
//! (the Gateway turns `Programmed: True` with `status.addresses`), or the error into
//! [`RouterFailures`] (`Programmed: False`, reason `NoResources`, with an Event), and the writes
//! a Sync left on hold into [`RouterHolds`]. A Gateway deleted (its deletionTimestamp set, our
//! finalizer holding it: `crate::gateway::keep`'s `released`) has its writer drained and then its
//! load balancer deleted, reported in [`Released`] so that the loop removes the finalizer; the
//! deletion finds the load balancer by its name and our tags, so nothing that is not ours is
//! touched. A Gateway not served but still there (`kept`) keeps its router as it is; one not
//! accepted for its own spec (`suspended`) keeps its port and address with no routes.
//!
//! Before a router's first Sync, its admission (`super::gateway_admission`: the static address
//! allowed, the project's quotas) must pass; a refusal is reported as a failure (no load
//! balancer is created) and asked again every `GatewayDriver::retry`.
//!
//! Members follow their Services at once: an endpoint change of a Service a Gateway route uses
//! (recorded by the Service handler in [`ServiceChanges`]) becomes Members jobs on the writers of
//! the Gateway routers whose pools that Service feeds (`crate::controller::gateway::members`), as on the
//! Ingress side. A full pass (every Gateway's desired router translated again) runs on every
//! change of the route tables, on a Service change the Members path cannot carry, and every
//! [`GatewayDriver::resync`] (a pass whose desired router is unchanged writes nothing); a failed
//! router is synced again every [`GatewayDriver::retry`].

use crate::config::{GatewayLimits, Settings};
use crate::controller::context::Stores;
use crate::controller::gateway::admission::{AdmitGateway, octavia_admission};
use crate::controller::gateway::members::refill;
use crate::controller::gateway::routers::desired_routers;
use crate::controller::metrics::Metrics;
use crate::controller::octavia_backend::OctaviaBackend;
use crate::controller::services::changes::ServiceChanges;
use crate::controller::stamp_store::{StampStore, StampStores};
use crate::controller::writer::{MembersOutcome, WriteError, Writer, WriterHandle};
use crate::controller::writer::{RouterBackend, WriterMetrics};
use crate::driver::WriteGate;
use crate::gateway::build::{Programmed, RouterFailures};
use crate::gateway::holds::{RouterHold, RouterHolds};
use crate::gateway::keep::Tables;
use crate::gateway::naming::GATEWAY_PREFIX;
use crate::model::{DesiredRouter, KubeRef};
use crate::translate::TranslateOptions;
use futures::future::BoxFuture;
use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// Deletes one Gateway's load balancer (and the floating IP allocated for it), found by its name
/// and our tags; called after its writer is drained, again until it succeeds.
pub type DeleteRouter = Arc<dyn Fn() -> BoxFuture<'static, Result<(), WriteError>> + Send + Sync>;

/// Builds the writer of the Gateway router named `name` whose HTTP listener is on `port` (with
/// `address`, the Gateway's static floating IP, on its VIP), and how its load balancer is deleted.
pub type SpawnGatewayRouter =
    Box<dyn Fn(&str, u16, Option<IpAddr>) -> Result<(Writer, DeleteRouter), WriteError> + Send + Sync + 'static>;

/// Builds the Gateways' routers once this replica leads, given the metrics, the leader gate and
/// where each router's stamps outlive the process (see [`crate::controller::stamp_store`]).
pub type GatewayRouters = Box<dyn FnOnce(&Metrics, WriteGate, StampStores) -> GatewayBackends + Send>;

/// The names of the Gateway load balancers of ours (`kuryr-gw-*` with our ownership tags).
pub type ListGatewayRouters = Arc<dyn Fn() -> BoxFuture<'static, Result<Vec<String>, WriteError>> + Send + Sync>;

/// How the Gateways' routers are built, and how the load balancers of Gateways deleted while
/// no controller ran are found ([`GatewayBackends::list`]: deleted through a router built by
/// `spawn`, as any Gateway gone).
pub struct GatewayBackends {
    pub spawn: SpawnGatewayRouter,
    /// None: nothing is collected at start.
    pub list: Option<ListGatewayRouters>,
    /// `[octavia_defaults] gateway_kept_grace`: how long a kept router (its Gateway not served,
    /// `crate::gateway::keep`) stays before it is deleted; None: for as long as its Gateway.
    pub kept_grace: Option<Duration>,
    /// `[octavia_defaults] gateways_per_namespace`, `gateways_per_cluster`,
    /// `gateway_address_tag` and `gateway_addresses` (`crate::gateway::limits`,
    /// `super::gateway_admission`).
    pub limits: GatewayLimits,
    /// What each router passes before its load balancer is created (None: nothing).
    pub admit: Option<AdmitGateway>,
}

impl From<SpawnGatewayRouter> for GatewayBackends {
    fn from(spawn: SpawnGatewayRouter) -> Self {
        Self { spawn, list: None, kept_grace: None, limits: GatewayLimits::default(), admit: None }
    }
}

/// How often every Gateway's desired router is translated again without a change of its routes
/// (what no event announces, e.g. a Service's health-monitor annotation). Endpoint changes do not
/// wait for it (see the module docs).
pub const GATEWAY_ROUTER_RESYNC: Duration = Duration::from_secs(60);

/// How soon a Gateway router whose Sync failed is synced again (and a failed deletion retried).
pub const GATEWAY_ROUTER_RETRY: Duration = Duration::from_secs(10);

/// The port a Gateway router's HTTP listener takes when the Gateway has only HTTPS listeners
/// (its HTTPS listener is the driver's own).
pub(crate) const DEFAULT_HTTP_PORT: u16 = 80;

/// The Gateways (namespace, name) whose load balancer was deleted on their deletion: their
/// finalizer may go.
pub type Released = BTreeSet<(String, String)>;

/// What the Gateway loop gets back from the routers.
#[derive(Clone)]
pub(crate) struct DataPlane {
    pub programmed: watch::Sender<Programmed>,
    pub failures: watch::Sender<RouterFailures>,
    pub holds: watch::Sender<RouterHolds>,
    pub released: watch::Sender<Released>,
}

/// The Gateway loop's side of the [`DataPlane`].
pub struct DataPlaneView {
    pub programmed: watch::Receiver<Programmed>,
    pub failures: watch::Receiver<RouterFailures>,
    pub holds: watch::Receiver<RouterHolds>,
    pub released: watch::Receiver<Released>,
}

/// A router's Sync outcome as the Gateway loop reads it.
type Synced = Result<(Vec<String>, Vec<RouterHold>), String>;

impl DataPlane {
    /// A data plane with nothing programmed, and the receivers for the Gateway loop.
    pub fn new() -> (Self, DataPlaneView) {
        let (programmed, p) = watch::channel(Programmed::new());
        let (failures, f) = watch::channel(RouterFailures::new());
        let (holds, h) = watch::channel(RouterHolds::new());
        let (released, r) = watch::channel(Released::new());
        let view = DataPlaneView { programmed: p, failures: f, holds: h, released: r };
        (Self { programmed, failures, holds, released }, view)
    }

    fn report(&self, key: &(String, String), result: Synced) {
        match result {
            Ok((addresses, holds)) => {
                self.failures.send_if_modified(|f| f.remove(key).is_some());
                // The holds before the address: a first address is not shown Programmed for
                // the moment of a pass that has not seen its holds yet.
                self.holds.send_if_modified(|h| match holds.is_empty() {
                    true => h.remove(key).is_some(),
                    false => h.insert(key.clone(), holds.clone()).as_ref() != Some(&holds),
                });
                self.programmed.send_if_modified(|p| p.insert(key.clone(), addresses.clone()) != Some(addresses));
            }
            Err(e) => {
                // The failure first: the Gateway loop reads both when either changes.
                self.failures.send_if_modified(|f| f.insert(key.clone(), e.clone()) != Some(e));
            }
        }
    }

    fn forget(&self, key: &(String, String)) {
        self.failures.send_if_modified(|f| f.remove(key).is_some());
        self.holds.send_if_modified(|h| h.remove(key).is_some());
        self.programmed.send_if_modified(|p| p.remove(key).is_some());
    }

    /// The Gateway's load balancer is deleted: its finalizer may go.
    fn release(&self, key: &(String, String)) {
        self.released.send_if_modified(|r| r.insert(key.clone()));
    }
}

/// The holds of a Sync's report as the Gateway's status tells them: the objects refused in this
/// Sync and those still on hold, each once, and the routes waiting for the L7 quota.
fn holds_of(report: &crate::driver::ConvergeReport) -> Vec<RouterHold> {
    let mut out: Vec<RouterHold> = Vec::new();
    for f in report.failures.iter().chain(&report.held) {
        if out.iter().any(|h| h.object == f.object) {
            continue;
        }
        // The main HTTPS listener, a more port's ("HTTPS listener on port 8443"), a secret.
        let https = f.object.starts_with("HTTPS listener") || f.object.starts_with("Barbican");
        let routes = f.owners.iter().filter(|o| o.kind == "HTTPRoute").cloned().collect();
        out.push(RouterHold {
            https,
            object: f.object.clone(),
            reason: f.reason.to_string(),
            message: f.message.clone(),
            routes,
        });
    }
    // Routes the project's L7 quota does not admit yet (`driver::admission`): not written at
    // all, which the status must tell as well as a quota 403.
    for w in &report.quota_waiting {
        let routes = (w.owner.kind == "HTTPRoute").then(|| w.owner.clone()).into_iter().collect();
        let object = format!("the new routes of {} {}/{}", w.owner.kind, w.owner.namespace, w.owner.name);
        out.push(RouterHold { https: false, object, reason: "quota".into(), message: w.message(), routes });
    }
    out
}

/// One Gateway's router: its writer, the task feeding it, and how its load balancer is deleted.
struct GatewaySlot {
    owner: (String, String),
    port: u16,
    address: Option<IpAddr>,
    writer: Writer,
    desired: watch::Sender<Arc<DesiredRouter>>,
    task: tokio::task::JoinHandle<()>,
    delete: DeleteRouter,
}

/// The routers of the Gateways, by load-balancer name.
pub(crate) struct GatewayDriver {
    pub stores: Stores,
    pub opts: TranslateOptions,
    pub routes: watch::Receiver<Tables>,
    pub(crate) data_plane: DataPlane,
    pub spawn: SpawnGatewayRouter,
    /// Lists our Gateway load balancers, to collect those of Gateways gone (None: no collection).
    pub list: Option<ListGatewayRouters>,
    /// How often every desired router is translated again without a change of the routes.
    pub resync: Duration,
    /// How soon a failed router is synced again, and a failed deletion retried.
    pub retry: Duration,
    /// The Services whose endpoints changed (None: members follow on the passes only).
    pub service_changes: Option<Arc<ServiceChanges>>,
    /// `[kubernetes] member_change_window_ms`: the changes of one window make one batch write.
    pub member_change_window: Duration,
    /// See [`GatewayBackends::kept_grace`], with the Warning Event's publisher and, per kept
    /// router, since when it is kept (or None once its grace is over and it was deleted).
    pub(crate) kept: KeptGrace,
    /// See [`GatewayBackends::admit`].
    pub admit: Option<AdmitGateway>,
}

/// The grace of the kept routers (`[octavia_defaults] gateway_kept_grace`).
#[derive(Default)]
pub(crate) struct KeptGrace {
    pub grace: Option<Duration>,
    pub events: Option<Arc<crate::controller::outputs::events::EventPublisher>>,
    since: BTreeMap<String, Option<tokio::time::Instant>>,
}

impl KeptGrace {
    pub fn new(
        grace: Option<Duration>,
        events: Option<Arc<crate::controller::outputs::events::EventPublisher>>,
    ) -> Self {
        Self { grace, events, since: BTreeMap::new() }
    }

    /// The next time a kept router's grace is over (None: none runs).
    fn next_expiry(&self) -> Option<tokio::time::Instant> {
        let grace = self.grace?;
        self.since.values().flatten().map(|s| *s + grace).min()
    }
}

impl GatewayDriver {
    /// Converges the Gateways' routers until `stop`; then drains their writers (their load
    /// balancers stay: a restarted or new leader takes them over by name).
    pub async fn run(mut self, mut stop: watch::Receiver<bool>) {
        let mut slots: BTreeMap<String, GatewaySlot> = BTreeMap::new();
        // The deletions under way, by load-balancer name.
        let mut deleting: BTreeMap<String, tokio::task::JoinHandle<()>> = BTreeMap::new();
        let changes = self.service_changes.clone();
        // Whether the Gateway loop has published its first translation (see `pass`).
        let mut published = false;
        'passes: loop {
            self.pass(&mut slots, &mut deleting, published).await;
            let resync = tokio::time::Instant::now() + self.resync;
            let next_pass = self.kept.next_expiry().map_or(resync, |e| e.min(resync));
            // Between passes, endpoint changes become Members jobs; a change they cannot carry,
            // a change of the route tables or the resync period ends the wait.
            loop {
                tokio::select! {
                    r = self.routes.changed() => if r.is_err() { break 'passes } else { published = true; break },
                    _ = tokio::time::sleep_until(next_pass) => break,
                    _ = stop.wait_for(|v| *v) => break 'passes,
                    changed = next_changes(changes.as_deref(), self.member_change_window) => {
                        if self.refill_members(&slots, &changed) {
                            break;
                        }
                    }
                }
            }
        }
        for t in deleting.into_values() {
            t.abort();
        }
        for (_, slot) in slots {
            slot.task.abort();
            slot.writer.shutdown().await;
        }
    }

    /// One pass: every Gateway's desired router translated from the caches and handed to its
    /// slot (a new slot for a new Gateway or a changed port or address); the slots of Gateways
    /// gone are retired.
    async fn pass(
        &mut self,
        slots: &mut BTreeMap<String, GatewaySlot>,
        deleting: &mut BTreeMap<String, tokio::task::JoinHandle<()>>,
        published: bool,
    ) {
        deleting.retain(|_, t| !t.is_finished());
        let (routes, published) = {
            let r = self.routes.borrow_and_update();
            // Published before this driver first looked, or since (`changed` marks it seen).
            (r.clone(), published || r.has_changed())
        };
        let desired = desired_routers(&routes.routers, &self.stores, &self.opts);
        let fates = &routes.fates;
        // Kept routers: their slots stay as they are (their last good state, their address);
        // without a slot (a restart), nothing touches their load balancer.
        let mut live: BTreeSet<String> = fates.kept.keys().cloned().collect();
        for r in desired {
            live.insert(r.name.clone());
            let owner = (r.owner.namespace.clone(), r.owner.name.clone());
            let mut port = r.http_port.unwrap_or(DEFAULT_HTTP_PORT);
            let mut address = r.address;
            if fates.suspended.contains(&r.name)
                && let Some(slot) = slots.get(&r.name).filter(|s| s.owner == owner)
            {
                // Served with no routes: on the port and address it has, whatever the spec says.
                (port, address) = (slot.port, slot.address);
            }
            let desired = Arc::new(r.desired);
            if let Some(slot) = slots.get(&r.name)
                && slot.port == port
                && slot.address == address
                && slot.owner == owner
            {
                slot.desired.send_if_modified(|d| {
                    let new = **d != *desired;
                    *d = desired.clone();
                    new
                });
                continue;
            }
            if deleting.contains_key(&r.name) {
                // Deleted and created again while its load balancer is being deleted: built
                // once that delete is done (next pass), never beside it.
                continue;
            }
            // A new Gateway, or its port or static address changed (fixed per driver): a writer for what it is now. The load balancer stays; it is its name's.
            if let Some(old) = slots.remove(&r.name) {
                old.task.abort();
                old.writer.shutdown().await;
            }
            match (self.spawn)(&r.name, port, address) {
                Ok((writer, delete)) => {
                    let mut slot = self.start(&r.name, owner, (port, address), writer, delete, desired);
                    slot.address = address;
                    slots.insert(r.name.clone(), slot);
                }
                Err(e) => {
                    tracing::warn!(router = %r.name, error = %e, "cannot build the Gateway's router");
                    self.data_plane.report(&owner, Err(format!("{}: {e}", e.label)));
                }
            }
        }
        self.release(fates, slots, deleting);
        self.expire_kept(fates, slots, deleting);
        let gone: Vec<String> = slots.keys().filter(|k| !live.contains(*k)).cloned().collect();
        for name in gone {
            let slot = slots.remove(&name).expect("listed");
            let task = tokio::spawn(retire(name.clone(), slot, self.data_plane.clone(), self.retry));
            deleting.insert(name, task);
        }
        live.extend(fates.released.iter().map(|r| r.router.clone()));
        // Once, on the Gateway loop's first translation (the route tables of every Gateway of
        // ours, from synced caches): before it, an empty table means "not known yet", not "none".
        if published && let Some(list) = self.list.take() {
            self.collect_orphans(list, live, deleting).await;
        }
    }

    /// The Gateways being deleted with our finalizer: each one's load balancer deleted (its
    /// slot's, or through a router built for its name), once; then reported released, so that
    /// the Gateway loop removes the finalizer. The released no longer deleting are forgotten.
    fn release(
        &self,
        fates: &crate::gateway::keep::Fates,
        slots: &mut BTreeMap<String, GatewaySlot>,
        deleting: &mut BTreeMap<String, tokio::task::JoinHandle<()>>,
    ) {
        let key = |r: &crate::gateway::keep::Released| (r.owner.namespace.clone(), r.owner.name.clone());
        let pending: BTreeSet<(String, String)> = fates.released.iter().map(key).collect();
        self.data_plane.released.send_if_modified(|r| {
            let before = r.len();
            r.retain(|k| pending.contains(k));
            r.len() != before
        });
        let done = self.data_plane.released.borrow().clone();
        for r in &fates.released {
            let owner = key(r);
            if done.contains(&owner) || deleting.contains_key(&r.router) {
                continue;
            }
            let slot = match slots.remove(&r.router) {
                Some(slot) => slot,
                None => match self.orphan_slot(&r.router, owner.clone()) {
                    Some(slot) => slot,
                    None => continue,
                },
            };
            tracing::info!(router = %r.router, namespace = %owner.0, gateway = %owner.1, "the Gateway is deleted: deleting its load balancer");
            let task = tokio::spawn(retire(r.router.clone(), slot, self.data_plane.clone(), self.retry));
            deleting.insert(r.router.clone(), task);
        }
    }

    /// With `gateway_kept_grace`: the kept routers whose grace is over deleted (their slot's, or
    /// through a router built for the name), each once while it stays kept, with a Warning
    /// Event on its Gateway. A router served again is built anew (a new address).
    fn expire_kept(
        &mut self,
        fates: &crate::gateway::keep::Fates,
        slots: &mut BTreeMap<String, GatewaySlot>,
        deleting: &mut BTreeMap<String, tokio::task::JoinHandle<()>>,
    ) {
        let Some(grace) = self.kept.grace else { return };
        let now = tokio::time::Instant::now();
        let graced = |name: &String| fates.kept.contains_key(name) && !fates.limited.contains(name);
        self.kept.since.retain(|name, _| graced(name));
        // A Gateway over a limit is not subject to the grace: most never had a load balancer,
        // and one that has (the limit lowered) is the tenant's until it fits again or goes.
        for (name, gateway) in fates.kept.iter().filter(|(name, _)| graced(name)) {
            let since = self.kept.since.entry(name.clone()).or_insert(Some(now));
            let Some(at) = *since else { continue };
            if now < at + grace || deleting.contains_key(name) {
                continue;
            }
            *since = None;
            let owner = (gateway.namespace.clone(), gateway.name.clone());
            let slot = match slots.remove(name) {
                Some(slot) => slot,
                None => match self.orphan_slot(name, owner.clone()) {
                    Some(slot) => slot,
                    None => continue,
                },
            };
            let message = format!(
                "not served for {} s ([octavia_defaults] gateway_kept_grace): its load balancer {name} and \
                 floating IP are deleted; served again, it gets a new address",
                grace.as_secs()
            );
            tracing::warn!(router = %name, namespace = %owner.0, gateway = %owner.1, "{message}");
            if let Some(events) = self.kept.events.clone() {
                let ev =
                    crate::controller::outputs::events::UserEvent::warning("LoadBalancerReleased", "Delete", message);
                let regarding = k8s_openapi::api::core::v1::ObjectReference {
                    api_version: Some("gateway.networking.k8s.io/v1".into()),
                    kind: Some("Gateway".into()),
                    namespace: Some(owner.0.clone()),
                    name: Some(owner.1.clone()),
                    ..Default::default()
                };
                tokio::spawn(async move {
                    if let Err(e) = events.publish(&ev, &regarding).await {
                        tracing::warn!(name = ?regarding.name, error = %e, "cannot publish an Event");
                    }
                });
            }
            let task = tokio::spawn(retire(name.clone(), slot, self.data_plane.clone(), self.retry));
            deleting.insert(name.clone(), task);
        }
    }

    /// A slot that only deletes the load balancer `name` (nothing syncs it).
    fn orphan_slot(&self, name: &str, owner: (String, String)) -> Option<GatewaySlot> {
        match (self.spawn)(name, DEFAULT_HTTP_PORT, None) {
            Ok((writer, delete)) => {
                let (tx, _) = watch::channel(Arc::new(DesiredRouter::default()));
                let task = tokio::spawn(async {});
                Some(GatewaySlot { owner, port: DEFAULT_HTTP_PORT, address: None, writer, desired: tx, task, delete })
            }
            Err(e) => {
                tracing::warn!(router = %name, error = %e, "cannot build the router of a Gateway gone");
                None
            }
        }
    }

    /// The load balancers of ours named like a Gateway's router whose Gateway is not among
    /// `live` (deleted, or no longer accepted, while no controller ran): each deleted like a
    /// Gateway gone, through a router built for its name.
    async fn collect_orphans(
        &self,
        list: ListGatewayRouters,
        live: BTreeSet<String>,
        deleting: &mut BTreeMap<String, tokio::task::JoinHandle<()>>,
    ) {
        let names = match list().await {
            Ok(n) => n,
            Err(e) => {
                // Collected by the next start; a Gateway deleted while this one runs is retired.
                tracing::warn!(error = %e, "cannot list the Gateways' load balancers: none collected");
                return;
            }
        };
        let orphans: Vec<String> =
            names.into_iter().filter(|n| !live.contains(n) && !deleting.contains_key(n)).collect();
        for name in orphans {
            if let Some(slot) = self.orphan_slot(&name, (String::new(), name.clone())) {
                tracing::info!(router = %name, "the load balancer of a Gateway gone: deleting it");
                let task = tokio::spawn(retire(name.clone(), slot, self.data_plane.clone(), self.retry));
                deleting.insert(name, task);
            }
        }
    }

    /// The pools the `changed` Services feed, refilled on every Gateway router that holds them
    /// (Members jobs on its writer, awaited by a task of their own so that the driver never
    /// waits on Octavia). `true`: a change needs a full pass instead.
    fn refill_members(&self, slots: &BTreeMap<String, GatewaySlot>, changed: &BTreeSet<KubeRef>) -> bool {
        let mut needs_pass = false;
        for (name, slot) in slots {
            let writer = slot.writer.handle();
            let Some(synced) = writer.last_synced() else { continue };
            let refill = refill(changed, &synced, &self.stores, &self.opts);
            if let Some(why) = refill.needs_pass {
                tracing::info!(router = %name, %why, "a Service change needs the Gateway router's pass");
                needs_pass = true;
                continue;
            }
            if refill.pools.is_empty() {
                continue;
            }
            let name = name.clone();
            tokio::spawn(async move {
                for pool in refill.pools {
                    let pool_name = pool.name.clone();
                    match writer.members(pool).await {
                        Ok(MembersOutcome::Updated) => {
                            tracing::info!(router = %name, pool = %pool_name, "members updated")
                        }
                        Ok(MembersOutcome::PoolMissing) => {
                            // The next pass (or a Sync already queued) builds it.
                            tracing::info!(router = %name, pool = %pool_name, "pool missing on the Gateway router")
                        }
                        Ok(_) => {}
                        Err(e) => {
                            tracing::warn!(router = %name, pool = %pool_name, error = %e, "cannot update the members")
                        }
                    }
                }
            });
        }
        needs_pass
    }

    fn start(
        &self,
        name: &str,
        owner: (String, String),
        (port, address): (u16, Option<IpAddr>),
        writer: Writer,
        delete: DeleteRouter,
        desired: Arc<DesiredRouter>,
    ) -> GatewaySlot {
        tracing::info!(router = %name, namespace = %owner.0, gateway = %owner.1, port, "driving the Gateway's router");
        let (tx, rx) = watch::channel(desired);
        let admission = self.admit.clone().map(|a| (a, address));
        let task = tokio::spawn(drive(
            Driven { name: name.to_string(), owner: owner.clone(), writer: writer.handle(), admission },
            rx,
            self.data_plane.clone(),
            self.resync,
            self.retry,
        ));
        GatewaySlot { owner, port, address: None, writer, desired: tx, task, delete }
    }
}

/// The router one [`drive`] task syncs.
struct Driven {
    name: String,
    owner: (String, String),
    writer: WriterHandle,
    /// Asked before the first Sync, with the Gateway's static address (None: nothing to pass).
    admission: Option<(AdmitGateway, Option<IpAddr>)>,
}

/// Syncs one Gateway's router to its desired state on every change, every `resync` (answered
/// from the writer's last Sync when nothing changed) and `retry` after a failure, reporting each
/// outcome; ends when its slot is dropped. Nothing is synced (no load balancer is created)
/// before its admission passes (`super::gateway_admission`): a refusal is reported as a
/// failure and asked again every `retry`.
async fn drive(
    driven: Driven,
    mut desired: watch::Receiver<Arc<DesiredRouter>>,
    data_plane: DataPlane,
    resync: Duration,
    retry: Duration,
) {
    let Driven { name, owner, writer, mut admission } = driven;
    loop {
        if let Some((admit, address)) = &admission {
            match admit(&name, *address).await {
                Ok(()) => admission = None,
                Err(refusal) => {
                    tracing::warn!(router = %name, namespace = %owner.0, gateway = %owner.1, reason = %refusal.message, "the Gateway's load balancer is not created");
                    data_plane.report(&owner, Err(format!("{}: {}", refusal.label, refusal.message)));
                    tokio::select! {
                        r = desired.changed() => if r.is_err() { return },
                        _ = tokio::time::sleep(retry) => {}
                    }
                    continue;
                }
            }
        }
        let d = (**desired.borrow_and_update()).clone();
        let mut wait = retry;
        let result = match writer.sync_to(d, false).await {
            Ok(s) => {
                // With writes on hold, synced again when the first may be retried: the status
                // recovers by itself once the hold clears.
                let holds = holds_of(&s.report);
                let first_retry = s.report.retry_after.filter(|_| !holds.is_empty());
                wait = first_retry.map_or(resync, |r| r.clamp(Duration::from_millis(100), resync));
                Ok((s.report.address.map(|a| a.to_string()).into_iter().collect(), holds))
            }
            Err(e) => {
                tracing::warn!(router = %name, namespace = %owner.0, gateway = %owner.1, error = %e, "the Gateway's router failed");
                Err(format!("{}: {e}", e.label))
            }
        };
        data_plane.report(&owner, result);
        tokio::select! {
            r = desired.changed() => if r.is_err() { return },
            _ = tokio::time::sleep(wait) => {}
        }
    }
}

/// A Gateway gone: its writer drained, then its load balancer deleted (retried every `retry`
/// until it is), then its status entries forgotten.
async fn retire(name: String, slot: GatewaySlot, data_plane: DataPlane, retry: Duration) {
    slot.task.abort();
    slot.writer.shutdown().await;
    loop {
        match (slot.delete)().await {
            Ok(()) => {
                tracing::info!(router = %name, namespace = %slot.owner.0, gateway = %slot.owner.1, "the Gateway's load balancer is deleted");
                break;
            }
            Err(e) => {
                tracing::warn!(router = %name, error = %e, "cannot delete the Gateway's load balancer (retrying)");
                tokio::time::sleep(retry).await;
            }
        }
    }
    data_plane.forget(&slot.owner);
    data_plane.release(&slot.owner);
}

/// The next Services changed; never, without a source of changes.
async fn next_changes(changes: Option<&ServiceChanges>, window: Duration) -> BTreeSet<KubeRef> {
    match changes {
        Some(c) => c.next(window).await,
        None => std::future::pending().await,
    }
}

/// The real Gateway routers: the driver on Octavia and Neutron (one session per router, every
/// request counted in the metrics), their writes bounded by `permits` together with the Ingress
/// routers'. Their writers have no line of `/readyz`: a failing Gateway must not take the
/// controller out of service. Each keeps the stamps of its reads in its ConfigMap, as an
/// Ingress router does (a new leader reads an unchanged Gateway router with its lists only), and
/// its deletion deletes that ConfigMap.
pub fn octavia_gateway_routers(settings: &Settings, permits: crate::driver::WritePermits) -> GatewayRouters {
    let settings = settings.clone();
    let kept_grace = settings.octavia_defaults.gateway_kept_grace;
    Box::new(move |metrics: &Metrics, gate: WriteGate, stores: StampStores| {
        let metrics = metrics.clone();
        let list = list_gateway_routers(&settings, &permits);
        let (limits, admit) = (settings.octavia_defaults.gateway_limits.clone(), octavia_admission(&settings));
        let spawn = Box::new(move |name: &str, port: u16, address: Option<IpAddr>| {
            let build = || {
                let m = metrics.clone();
                let observer: crate::openstack::Observer = Arc::new(move |r: &crate::openstack::RequestRecord| {
                    m.octavia_request(r.method.as_str(), &r.kind, r.status, r.duration);
                });
                let mut router = crate::wiring::gateway_router_observed(
                    &settings,
                    Some(observer),
                    name,
                    port,
                    address,
                    permits.clone(),
                )
                .map_err(|e| WriteError::new("client_config", format!("OpenStack session: {e}")))?;
                router.set_write_gate(gate.clone());
                Ok::<_, WriteError>(router)
            };
            let mut backend = OctaviaBackend::new(build()?);
            backend.set_write_gate(gate.clone());
            backend.set_stamp_stores(stores.clone());
            let wm = WriterMetrics { router: name.to_string(), metrics: Some(metrics.clone()), readiness: None };
            let writer = Writer::spawn(backend, wm);
            let deleter = Arc::new(build()?);
            let stamps = Arc::new(StampStore::new(stores.clone(), name));
            let delete: DeleteRouter = Arc::new(move || {
                let (d, stamps) = (deleter.clone(), stamps.clone());
                Box::pin(async move {
                    d.delete_router().await.map_err(|e| WriteError::new(e.label(), e.to_string()))?;
                    // After the load balancer: a failed delete keeps the stamps of what is left.
                    stamps.delete().await;
                    Ok(())
                })
            });
            Ok((writer, delete))
        }) as SpawnGatewayRouter;
        GatewayBackends { spawn, list: Some(list), kept_grace, limits, admit: Some(admit) }
    })
}

/// The Gateway load balancers of ours on Octavia: listed by our ownership tags, kept by the
/// name prefix every Gateway router has (`crate::gateway::naming`).
fn list_gateway_routers(settings: &Settings, permits: &crate::driver::WritePermits) -> ListGatewayRouters {
    let (settings, permits) = (settings.clone(), permits.clone());
    Arc::new(move || {
        let router = crate::wiring::gateway_router_observed(
            &settings,
            None,
            GATEWAY_PREFIX,
            DEFAULT_HTTP_PORT,
            None,
            permits.clone(),
        );
        Box::pin(async move {
            let router = router.map_err(|e| WriteError::new("client_config", format!("OpenStack session: {e}")))?;
            router.list_ours_named(GATEWAY_PREFIX).await.map_err(|e| WriteError::new(e.label(), e.to_string()))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::ConvergeReport;
    use crate::driver::admission::Waiting;
    use crate::driver::report::WriteFailure;
    use crate::translate::budget::{Budget, Usage};

    fn failure(object: &str, reason: &'static str, owners: Vec<KubeRef>) -> WriteFailure {
        WriteFailure { object: object.into(), write: String::new(), reason, message: "400: no".into(), owners }
    }

    #[test]
    fn a_reports_holds_are_told_once_each_with_their_routes() {
        let route = KubeRef::new("HTTPRoute", "shop", "r");
        let report = ConvergeReport {
            failures: vec![failure("HTTPS listener", "invalid", vec![KubeRef::new("Gateway", "shop", "gw")])],
            held: vec![
                failure("HTTPS listener", "invalid", vec![]),
                failure("L7 policy shop.r", "quota", vec![route.clone()]),
                failure("Barbican secret kuryr:x", "quota", vec![]),
            ],
            quota_waiting: vec![Waiting {
                owner: route.clone(),
                need: Usage { l7policies: 1, l7rules: 1 },
                left: Budget { l7policies: Some(0), l7rules: Some(0) },
            }],
            ..ConvergeReport::default()
        };
        let holds = holds_of(&report);
        let got: Vec<(&str, bool, &str, usize)> =
            holds.iter().map(|h| (h.object.as_str(), h.https, h.reason.as_str(), h.routes.len())).collect();
        assert_eq!(
            got,
            [
                ("HTTPS listener", true, "invalid", 0),
                ("L7 policy shop.r", false, "quota", 1),
                ("Barbican secret kuryr:x", true, "quota", 0),
                ("the new routes of HTTPRoute shop/r", false, "quota", 1),
            ]
        );
        assert!(holds_of(&ConvergeReport::default()).is_empty());
    }
}
