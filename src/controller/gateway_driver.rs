//! The Gateways' routers converged: one router per Gateway of ours, each with its own serial
//! writer and driver (its load balancer named by `crate::gateway::naming::load_balancer_name`,
//! its HTTP listener on the Gateway's port), beside the Ingress router(s) and never waiting on
//! them or on each other.
//!
//! The driver reads the route tables the Gateway loop publishes
//! ([`super::gateway::GatewayLoop::routers`]), turns them into desired routers from the Ingress
//! side's caches ([`super::gateway_routers::desired_routers`]) and hands each to the task of its
//! Gateway, which syncs it and reports back: the load balancer's address into [`Programmed`]
//! (the Gateway turns `Programmed: True` with `status.addresses`), or the error into
//! [`RouterFailures`] (`Programmed: False`, reason `NoResources`, with an Event). A Gateway gone
//! has its writer drained and then its load balancer deleted; the deletion finds the load
//! balancer by its name and our tags, so nothing that is not ours is touched.
//!
//! Members follow their Services at once: an endpoint change of a Service a Gateway route uses
//! (recorded by the Service handler in [`ServiceChanges`]) becomes Members jobs on the writers of
//! the Gateway routers whose pools that Service feeds (`super::gateway_members`), as on the
//! Ingress side. A full pass (every Gateway's desired router translated again) runs on every
//! change of the route tables, on a Service change the Members path cannot carry, and every
//! [`GatewayDriver::resync`] (a pass whose desired router is unchanged writes nothing); a failed
//! router is synced again every [`GatewayDriver::retry`].

use crate::config::Settings;
use crate::controller::context::Stores;
use crate::controller::gateway_members::refill;
use crate::controller::gateway_routers::desired_routers;
use crate::controller::metrics::Metrics;
use crate::controller::octavia_backend::OctaviaBackend;
use crate::controller::service_changes::ServiceChanges;
use crate::controller::stamp_store::{StampStore, StampStores};
use crate::controller::writer::{MembersOutcome, WriteError, Writer, WriterHandle};
use crate::controller::writer::{RouterBackend, WriterMetrics};
use crate::driver::WriteGate;
use crate::gateway::GatewayRoutes;
use crate::gateway::build::{Programmed, RouterFailures};
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
/// where each router's stamps outlive the process (see [`super::stamp_store`]).
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
}

impl From<SpawnGatewayRouter> for GatewayBackends {
    fn from(spawn: SpawnGatewayRouter) -> Self {
        Self { spawn, list: None }
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

/// What the Gateway loop gets back from the routers.
#[derive(Clone)]
pub(crate) struct DataPlane {
    pub programmed: watch::Sender<Programmed>,
    pub failures: watch::Sender<RouterFailures>,
}

impl DataPlane {
    /// A data plane with nothing programmed, and the receivers for the Gateway loop.
    pub fn new() -> (Self, watch::Receiver<Programmed>, watch::Receiver<RouterFailures>) {
        let (programmed, p) = watch::channel(Programmed::new());
        let (failures, f) = watch::channel(RouterFailures::new());
        (Self { programmed, failures }, p, f)
    }

    fn report(&self, key: &(String, String), result: Result<Vec<String>, String>) {
        match result {
            Ok(addresses) => {
                self.failures.send_if_modified(|f| f.remove(key).is_some());
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
        self.programmed.send_if_modified(|p| p.remove(key).is_some());
    }
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
    pub routes: watch::Receiver<Vec<GatewayRoutes>>,
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
            let next_pass = tokio::time::Instant::now() + self.resync;
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
        let desired = desired_routers(&routes, &self.stores, &self.opts);
        let mut live = std::collections::BTreeSet::new();
        for r in desired {
            live.insert(r.name.clone());
            let owner = (r.owner.namespace.clone(), r.owner.name.clone());
            let port = r.http_port.unwrap_or(DEFAULT_HTTP_PORT);
            let desired = Arc::new(r.desired);
            if let Some(slot) = slots.get(&r.name)
                && slot.port == port
                && slot.address == r.address
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
            match (self.spawn)(&r.name, port, r.address) {
                Ok((writer, delete)) => {
                    let mut slot = self.start(&r.name, owner, port, writer, delete, desired);
                    slot.address = r.address;
                    slots.insert(r.name.clone(), slot);
                }
                Err(e) => {
                    tracing::warn!(router = %r.name, error = %e, "cannot build the Gateway's router");
                    self.data_plane.report(&owner, Err(format!("{}: {e}", e.label)));
                }
            }
        }
        let gone: Vec<String> = slots.keys().filter(|k| !live.contains(*k)).cloned().collect();
        for name in gone {
            let slot = slots.remove(&name).expect("listed");
            let task = tokio::spawn(retire(name.clone(), slot, self.data_plane.clone(), self.retry));
            deleting.insert(name, task);
        }
        // Once, on the Gateway loop's first translation (the route tables of every Gateway of
        // ours, from synced caches): before it, an empty table means "not known yet", not "none".
        if published && let Some(list) = self.list.take() {
            self.collect_orphans(list, live, deleting).await;
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
            match (self.spawn)(&name, DEFAULT_HTTP_PORT, None) {
                Ok((writer, delete)) => {
                    tracing::info!(router = %name, "the load balancer of a Gateway gone: deleting it");
                    let (tx, _) = watch::channel(Arc::new(DesiredRouter::default()));
                    let owner = (String::new(), name.clone());
                    let task = tokio::spawn(async {});
                    let slot = GatewaySlot {
                        owner,
                        port: DEFAULT_HTTP_PORT,
                        address: None,
                        writer,
                        desired: tx,
                        task,
                        delete,
                    };
                    let task = tokio::spawn(retire(name.clone(), slot, self.data_plane.clone(), self.retry));
                    deleting.insert(name, task);
                }
                Err(e) => tracing::warn!(router = %name, error = %e, "cannot build the router of a Gateway gone"),
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
        port: u16,
        writer: Writer,
        delete: DeleteRouter,
        desired: Arc<DesiredRouter>,
    ) -> GatewaySlot {
        tracing::info!(router = %name, namespace = %owner.0, gateway = %owner.1, port, "driving the Gateway's router");
        let (tx, rx) = watch::channel(desired);
        let task = tokio::spawn(drive(
            name.to_string(),
            owner.clone(),
            writer.handle(),
            rx,
            self.data_plane.clone(),
            self.resync,
            self.retry,
        ));
        GatewaySlot { owner, port, address: None, writer, desired: tx, task, delete }
    }
}

/// Syncs one Gateway's router to its desired state on every change, every `resync` (answered
/// from the writer's last Sync when nothing changed) and `retry` after a failure, reporting each
/// outcome; ends when its slot is dropped.
async fn drive(
    name: String,
    owner: (String, String),
    writer: WriterHandle,
    mut desired: watch::Receiver<Arc<DesiredRouter>>,
    data_plane: DataPlane,
    resync: Duration,
    retry: Duration,
) {
    loop {
        let d = (**desired.borrow_and_update()).clone();
        let result = match writer.sync_to(d, false).await {
            Ok(s) => Ok(s.report.address.map(|a| a.to_string()).into_iter().collect()),
            Err(e) => {
                tracing::warn!(router = %name, namespace = %owner.0, gateway = %owner.1, error = %e, "the Gateway's router failed");
                Err(format!("{}: {e}", e.label))
            }
        };
        let wait = if result.is_ok() { resync } else { retry };
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
    Box::new(move |metrics: &Metrics, gate: WriteGate, stores: StampStores| {
        let metrics = metrics.clone();
        let list = list_gateway_routers(&settings, &permits);
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
        GatewayBackends { spawn, list: Some(list) }
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
