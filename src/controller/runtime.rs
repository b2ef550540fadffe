//! `kuryr-l7-router run`: the long-running controller.
//!
//! ```text
//!  watch (reflectors) ──► Ingress handler ──┐  Sync(desired)    ┌──────────────┐
//!  Ingress, IngressClass, Service,          ├──────────────────►│ serial writer│──► Octavia
//!  EndpointSlice|Endpoints, Node            │  Members(pool)    │ (one / router)│
//!                     └► Service handler ───┘                   └──────────────┘
//!                                  ▲ resync every [kubernetes] resync_period (Sync)
//! ```
//!
//! This module holds what both handlers share ([`Stores`], [`Context`], the Sync + notices step,
//! the error policy) and [`run`], which wires the clients, caches, controllers, writer, leader
//! election, health server and signal handling. See `docs/architecture.md`.

use crate::config::Settings;
use crate::controller::events::{DEFAULT_DEDUP_WINDOW, EventPublisher, UserEvent};
use crate::controller::health::{self, Readiness};
use crate::controller::leader::{LeaderSettings, Leadership, default_identity};
use crate::controller::metrics::Metrics;
use crate::controller::notice::{ServiceNotice, desired_notices, notice_changes};
use crate::controller::writer::{
    OctaviaBackend, RouterBackend, WriteError, Writer, WriterHandle, WriterMetrics, job_duration_family,
};
use crate::controller::{ControllerError, k8s};
use crate::driver::router::ConvergeReport;
use crate::model::{DesiredRouter, ObjectRef};
use crate::translate::routes::is_ours;
use crate::translate::{Inputs, TranslateOptions, translate};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Endpoints, Node, ObjectReference, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::{Ingress, IngressClass};
use kube::api::Api;
use kube::runtime::controller::Action;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{oneshot, watch};

/// The caches the translation reads. Cheap to clone (each is an `Arc`).
#[derive(Clone)]
pub struct Stores {
    pub ingresses: Store<Ingress>,
    pub classes: Store<IngressClass>,
    pub services: Store<Service>,
    pub slices: Store<EndpointSlice>,
    pub endpoints: Store<Endpoints>,
    pub nodes: Store<Node>,
}

/// Writers of [`Stores`] built without watches (tests, and the stores that `run` fills itself).
pub struct StoreWriters {
    pub ingresses: reflector::store::Writer<Ingress>,
    pub classes: reflector::store::Writer<IngressClass>,
    pub services: reflector::store::Writer<Service>,
    pub slices: reflector::store::Writer<EndpointSlice>,
    pub endpoints: reflector::store::Writer<Endpoints>,
    pub nodes: reflector::store::Writer<Node>,
}

impl StoreWriters {
    pub fn new() -> (Stores, StoreWriters) {
        let (ingresses, wi) = reflector::store();
        let (classes, wc) = reflector::store();
        let (services, ws) = reflector::store();
        let (slices, wsl) = reflector::store();
        let (endpoints, we) = reflector::store();
        let (nodes, wn) = reflector::store();
        (
            Stores { ingresses, classes, services, slices, endpoints, nodes },
            StoreWriters { ingresses: wi, classes: wc, services: ws, slices: wsl, endpoints: we, nodes: wn },
        )
    }
}

impl Stores {
    /// The translation inputs: a snapshot of every cache. Ingresses being deleted are left out,
    /// so a Sync removes their policies while their finalizer holds them.
    pub fn inputs(&self) -> Inputs {
        Inputs {
            ingresses: owned(&self.ingresses).into_iter().filter(|i| i.metadata.deletion_timestamp.is_none()).collect(),
            ingress_classes: owned(&self.classes),
            services: owned(&self.services),
            endpoint_slices: owned(&self.slices),
            endpoints: owned(&self.endpoints),
            nodes: owned(&self.nodes),
            notes: vec![],
        }
    }
}

fn owned<K>(store: &Store<K>) -> Vec<K>
where
    K: kube::Resource + Clone + 'static,
    K::DynamicType: std::hash::Hash + Eq + Clone,
{
    store.state().iter().map(|a| (**a).clone()).collect()
}

/// Errors of a reconcile: a Kubernetes write or an Octavia write.
#[derive(Debug, thiserror::Error)]
pub enum HandlerError {
    #[error(transparent)]
    Kube(#[from] ControllerError),
    #[error("Octavia: {0}")]
    Octavia(WriteError),
}

impl From<kube::Error> for HandlerError {
    fn from(e: kube::Error) -> Self {
        HandlerError::Kube(e.into())
    }
}

impl HandlerError {
    pub fn metric_label(&self) -> &'static str {
        match self {
            HandlerError::Kube(e) => e.metric_label(),
            HandlerError::Octavia(e) => e.label,
        }
    }
}

/// Everything a reconcile needs. Shared by both handlers and the resync loop.
pub struct Context {
    pub client: kube::Client,
    pub stores: Stores,
    pub writer: WriterHandle,
    pub events: Arc<EventPublisher>,
    pub metrics: Metrics,
    pub opts: TranslateOptions,
    /// What Service notices name as router (`l7_router_uuid`, else `l7_router_name`).
    pub router_name: String,
    /// `true` once every cache has listed its objects; reconciles wait for it, since a Sync from
    /// a half-filled cache would delete routes.
    pub caches_ready: watch::Receiver<bool>,
    /// Readiness of the process (`router_ready` is set by the first successful Sync).
    pub readiness: Option<watch::Sender<Readiness>>,
    /// The desired state and report of the last successful Sync: a reconcile whose desired state
    /// is unchanged reuses it instead of re-reading the router (drift is the resync's business).
    last_sync: Mutex<Option<(DesiredRouter, ConvergeReport)>>,
    /// Consecutive failures per object, for the growing requeue delay.
    failures: Mutex<HashMap<String, u32>>,
}

impl Context {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        client: kube::Client,
        stores: Stores,
        writer: WriterHandle,
        events: Arc<EventPublisher>,
        metrics: Metrics,
        opts: TranslateOptions,
        router_name: String,
        caches_ready: watch::Receiver<bool>,
        readiness: Option<watch::Sender<Readiness>>,
    ) -> Self {
        Self {
            client,
            stores,
            writer,
            events,
            metrics,
            opts,
            router_name,
            caches_ready,
            readiness,
            last_sync: Mutex::new(None),
            failures: Mutex::new(HashMap::new()),
        }
    }

    /// Waits until every cache is synced.
    pub async fn wait_caches(&self) {
        let mut rx = self.caches_ready.clone();
        let _ = rx.wait_for(|r| *r).await;
    }

    /// The inputs and the desired router from the caches now.
    pub fn desired(&self) -> (Inputs, DesiredRouter) {
        let inputs = self.stores.inputs();
        let desired = translate(&inputs, &self.opts);
        (inputs, desired)
    }

    /// Ingresses of our class among `inputs`.
    pub fn our_ingresses(&self, inputs: &Inputs) -> Vec<Ingress> {
        inputs.ingresses.iter().filter(|i| is_ours(i, &inputs.ingress_classes, &self.opts)).cloned().collect()
    }

    /// Converges the router to the caches (unless `force` is false and the desired state is the
    /// one last synced), then writes the Service notices that changed.
    pub async fn sync(&self, force: bool) -> Result<(DesiredRouter, ConvergeReport), HandlerError> {
        self.wait_caches().await;
        let (inputs, desired) = self.desired();
        let cached = if force {
            None
        } else {
            self.last_sync.lock().expect("lock").as_ref().filter(|(d, _)| *d == desired).map(|(_, r)| r.clone())
        };
        let report = match cached {
            Some(r) => r,
            None => {
                let report = self.writer.sync(desired.clone()).await.map_err(HandlerError::Octavia)?;
                *self.last_sync.lock().expect("lock") = Some((desired.clone(), report.clone()));
                if let Some(r) = &self.readiness {
                    r.send_modify(|r| r.router_ready = true);
                }
                report
            }
        };
        self.apply_notices(&inputs, &desired).await?;
        Ok((desired, report))
    }

    /// Writes the notice changes for `desired` (Services gone meanwhile are skipped).
    pub async fn apply_notices(&self, inputs: &Inputs, desired: &DesiredRouter) -> Result<(), HandlerError> {
        let want = desired_notices(&self.router_name, desired, &self.our_ingresses(inputs));
        let current: Vec<(ObjectRef, ServiceNotice)> = inputs
            .services
            .iter()
            .filter_map(|s| {
                let n = ServiceNotice::from_service(s).ok().flatten()?;
                let r = ObjectRef::new(
                    "Service",
                    s.metadata.namespace.as_deref().unwrap_or("default"),
                    s.metadata.name.as_deref().unwrap_or_default(),
                );
                Some((r, n))
            })
            .collect();
        for change in notice_changes(&self.router_name, &want, current.iter().map(|(r, n)| (r.clone(), n))) {
            let api: Api<Service> = Api::namespaced(self.client.clone(), &change.service.namespace);
            match k8s::patch_service_notice(&api, &change.service.name, change.notice.as_ref()).await {
                Ok(_) => {
                    tracing::info!(service = %change.service, set = change.notice.is_some(), "service notice written")
                }
                Err(ControllerError::Kube(kube::Error::Api(s))) if s.code == 404 => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// Publishes an Event, logging (never failing on) errors.
    pub async fn publish(&self, ev: &UserEvent, regarding: &ObjectReference) {
        if let Err(e) = self.events.publish(ev, regarding).await {
            tracing::warn!(error = %e, reason = %ev.reason, "cannot publish event");
        }
    }

    /// Forgets the failures of `key` (after a successful reconcile).
    pub fn succeeded(&self, key: &str) {
        self.failures.lock().expect("lock").remove(key);
    }

    /// The requeue delay after one more failure of `key`: 5 s, 10 s, 20 s ... capped at 5 min.
    pub fn failed(&self, key: &str) -> Duration {
        let mut f = self.failures.lock().expect("lock");
        let n = f.entry(key.to_string()).or_insert(0);
        *n += 1;
        backoff(*n)
    }
}

/// Requeue delay after `failures` consecutive failures: 5 s doubling, capped at 300 s.
pub fn backoff(failures: u32) -> Duration {
    Duration::from_secs(5u64.saturating_mul(1u64 << failures.saturating_sub(1).min(6))).min(Duration::from_secs(300))
}

/// The error policy of both handlers: requeue with a growing delay (never a tight loop).
pub fn error_policy<K: kube::Resource<DynamicType = ()>>(obj: Arc<K>, err: &HandlerError, ctx: Arc<Context>) -> Action {
    let key = object_key(obj.as_ref());
    let delay = ctx.failed(&key);
    tracing::warn!(object = %key, error = %err, retry_in_s = delay.as_secs(), "reconcile failed");
    Action::requeue(delay)
}

/// `kind/namespace/name` of an object, for logs and the failure table.
pub fn object_key<K: kube::Resource<DynamicType = ()>>(obj: &K) -> String {
    let m = obj.meta();
    format!("{}/{}/{}", K::kind(&()), m.namespace.as_deref().unwrap_or_default(), m.name.as_deref().unwrap_or_default())
}

// ------------------------------------------------------------------ run

/// A future that resolves once `rx` turns `true`; `Send + Sync` as kube's
/// `graceful_shutdown_on` requires (a oneshot fed by a small task).
fn on_true(rx: &watch::Receiver<bool>) -> impl Future<Output = ()> + Send + Sync + 'static {
    let (tx, done) = oneshot::channel::<()>();
    let mut rx = rx.clone();
    tokio::spawn(async move {
        let _ = rx.wait_for(|v| *v).await;
        let _ = tx.send(());
    });
    async move {
        let _ = done.await;
    }
}

async fn signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => tokio::select! {
                _ = term.recv() => tracing::info!("SIGTERM received, shutting down"),
                _ = tokio::signal::ctrl_c() => tracing::info!("SIGINT received, shutting down"),
            },
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Runs the controller until SIGTERM/SIGINT (or, as leader, until leadership is lost, which
/// returns an error so the pod restarts as a standby).
pub async fn run(settings: Settings) -> Result<(), ControllerError> {
    run_with(settings, octavia_backend, signal()).await
}

/// [`run`] with its two outside ends given: `backend` builds the router writer's backend once
/// this replica leads (`run` passes [`octavia_backend`]; `tests/controller_runtime.rs` passes an
/// in-memory [`crate::testing::SimBackend`]), and `shutdown` resolving stops the
/// controller as SIGTERM does (`run` passes the signal handler).
pub async fn run_with<B, F>(
    settings: Settings,
    backend: F,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ControllerError>
where
    B: RouterBackend,
    F: FnOnce(&Settings, &Metrics) -> Result<B, ControllerError>,
{
    let (mut registry, metrics) = Metrics::registry();
    let job_duration = job_duration_family();
    registry.register_with_unit(
        "octavia_write_job_duration",
        "Duration of each router writer job (sync, members) by result",
        prometheus_client::registry::Unit::Seconds,
        job_duration.clone(),
    );
    let (ready_tx, ready_rx) = watch::channel(Readiness::default());
    let (stop_tx, stop_rx) = watch::channel(false);
    {
        let stop_tx = stop_tx.clone();
        tokio::spawn(async move {
            shutdown.await;
            let _ = stop_tx.send(true);
        });
    }
    let addr = std::net::SocketAddr::from(([0, 0, 0, 0], settings.kubernetes.health_port));
    let (bound, serve) = health::bind(addr, health::router(ready_rx, Arc::new(registry)), on_true(&stop_rx)).await?;
    tracing::info!(%bound, "health server listening (/healthz, /readyz, /metrics)");
    let server = tokio::spawn(serve);

    if !settings.kubernetes.enable_ingress {
        tracing::info!("ingress handlers disabled ([kubernetes] enable_ingress = False)");
        ready_tx.send_modify(|r| *r = Readiness { caches_synced: true, router_ready: true });
        on_true(&stop_rx).await;
        return finish_server(server).await;
    }

    let k = &settings.kubernetes;
    let client = crate::controller::client::make_client(
        k.api_root.as_ref().map(|u| u.as_str()),
        k.token_file.as_deref(),
        k.ssl_ca_crt_file.as_deref(),
        k.kubeconfig.as_deref(),
    )
    .await?;

    let leadership = if k.leader_election {
        let identity = default_identity("kuryr-l7-router");
        let l = Leadership::start(client.clone(), LeaderSettings::new(&k.lease_name, &k.lease_namespace, &identity))?;
        // A standby is "ready" as a standby: nothing routes traffic to this pod, and a standby
        // that never turned ready would block rolling updates. /readyz of the leader reports
        // its caches and router.
        ready_tx.send_modify(|r| *r = Readiness { caches_synced: true, router_ready: true });
        tracing::info!(lease = %k.lease_name, %identity, "waiting for leadership");
        tokio::select! {
            r = l.acquired() => r?,
            _ = on_true(&stop_rx) => {
                l.release().await?;
                return finish_server(server).await;
            }
        }
        tracing::info!("leadership acquired: starting the handlers");
        ready_tx.send_modify(|r| *r = Readiness::default());
        // Losing the lease stops the handlers (and the process, see below).
        let mut is_leader = l.is_leader();
        let stop_tx = stop_tx.clone();
        tokio::spawn(async move {
            if is_leader.wait_for(|v| !*v).await.is_ok() {
                tracing::error!("leadership lost: stopping the handlers");
                let _ = stop_tx.send(true);
            }
        });
        Some(l)
    } else {
        None
    };

    let result = match backend(&settings, &metrics) {
        Ok(b) => run_leader(&settings, client, b, metrics, job_duration, ready_tx, &stop_rx).await,
        Err(e) => Err(e),
    };
    let lost = leadership.as_ref().is_some_and(|l| !*l.is_leader().borrow());
    if let Some(l) = leadership
        && let Err(e) = l.release().await
    {
        tracing::warn!(error = %e, "releasing the lease failed");
    }
    let _ = stop_tx.send(true);
    finish_server(server).await?;
    result?;
    if lost {
        return Err(ControllerError::LeaderStopped("leadership lost".into()));
    }
    Ok(())
}

async fn finish_server(server: tokio::task::JoinHandle<Result<(), ControllerError>>) -> Result<(), ControllerError> {
    match server.await {
        Ok(r) => r,
        Err(e) => Err(ControllerError::Server(std::io::Error::other(e.to_string()))),
    }
}

/// Waits until `store` has listed its objects (or its writer is gone).
///
/// kube's store readiness cell (`DelayedInit`, a futures oneshot) keeps ONE waker: of two tasks
/// waiting on the same store at once, only the one that polled last is woken. Each Controller
/// waits on its own store (Ingress, Service) while the caches task below waits on it too, so the
/// caches could stay "not synced" forever, every reconcile blocked in `wait_caches` and /readyz
/// at 503 (found by tests/controller_runtime.rs). Polling afresh every 100 ms does not depend on
/// that wake-up; a Controller that lost it is re-polled by its scheduler's timers as soon as it
/// has anything to reconcile.
async fn wait_ready<K>(store: &Store<K>)
where
    K: kube::Resource + Clone + 'static,
    K::DynamicType: std::hash::Hash + Eq + Clone,
{
    while tokio::time::timeout(Duration::from_millis(100), store.wait_until_ready()).await.is_err() {}
}

/// A watch stream feeding `writer`'s store; errors are logged and retried with backoff.
fn reflect<K>(
    writer: reflector::store::Writer<K>,
    api: Api<K>,
) -> impl futures::Stream<Item = watcher::Event<K>> + Send + 'static
where
    K: kube::Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
{
    reflector::reflector(writer, watcher(api, watcher::Config::default()).default_backoff()).filter_map(
        |r| async move {
            match r {
                Ok(ev) => Some(ev),
                Err(e) => {
                    tracing::warn!(kind = %K::kind(&()), error = %e, "watch error (retrying)");
                    None
                }
            }
        },
    )
}

/// The real router backend: the driver on Octavia and Neutron, every request counted in `metrics`.
pub fn octavia_backend(settings: &Settings, metrics: &Metrics) -> Result<OctaviaBackend, ControllerError> {
    let observer_metrics = metrics.clone();
    let observer: crate::openstack::http::Observer = Arc::new(move |r: &crate::openstack::http::RequestRecord| {
        observer_metrics.octavia_request(r.method.as_str(), &r.kind, r.status, r.duration);
    });
    let session = crate::openstack::Session::with_observer(crate::wiring::auth_options(settings), observer)
        .map_err(|e| ControllerError::ClientConfig(format!("OpenStack session: {e}")))?;
    let octavia = crate::openstack::Octavia::new(
        session.clone(),
        crate::openstack::OctaviaOptions {
            busy_retry: settings.octavia_defaults.write_timeout,
            ..crate::openstack::OctaviaOptions::default()
        },
    );
    let router = crate::driver::Router::new(
        octavia,
        crate::openstack::Neutron::new(session),
        crate::wiring::router_spec(settings),
    );
    Ok(OctaviaBackend::new(router))
}

async fn run_leader<B: RouterBackend>(
    settings: &Settings,
    client: kube::Client,
    backend: B,
    metrics: Metrics,
    job_duration: crate::controller::writer::JobDurations,
    ready_tx: watch::Sender<Readiness>,
    stop_rx: &watch::Receiver<bool>,
) -> Result<(), ControllerError> {
    use kube::runtime::controller::{Config as CtlConfig, Controller};

    let writer =
        Writer::spawn(backend, WriterMetrics { metrics: Some(metrics.clone()), job_duration: Some(job_duration) });

    let k = &settings.kubernetes;
    let ctl_config = CtlConfig::default().debounce(Duration::from_millis(500));
    let ing_ctl = Controller::new(Api::<Ingress>::all(client.clone()), watcher::Config::default())
        .with_config(ctl_config.clone());
    let svc_ctl =
        Controller::new(Api::<Service>::all(client.clone()), watcher::Config::default()).with_config(ctl_config);
    let (ing_store, svc_store) = (ing_ctl.store(), svc_ctl.store());

    let (classes, class_w) = reflector::store::<IngressClass>();
    let (slices, slice_w) = reflector::store::<EndpointSlice>();
    let (endpoints, ep_w) = reflector::store::<Endpoints>();
    let (nodes, node_w) = reflector::store::<Node>();
    let stores = Stores {
        ingresses: ing_store.clone(),
        classes: classes.clone(),
        services: svc_store.clone(),
        slices: slices.clone(),
        endpoints: endpoints.clone(),
        nodes: nodes.clone(),
    };

    let (caches_tx, caches_rx) = watch::channel(false);
    let router_name = settings
        .octavia_defaults
        .l7_router_uuid
        .clone()
        .unwrap_or_else(|| settings.octavia_defaults.l7_router_name.clone());
    let events = Arc::new(EventPublisher::new(client.clone(), std::env::var("POD_NAME").ok(), DEFAULT_DEDUP_WINDOW));
    let ctx = Arc::new(Context::new(
        client.clone(),
        stores,
        writer.handle(),
        events,
        metrics,
        crate::wiring::translate_options(settings),
        router_name,
        caches_rx,
        Some(ready_tx.clone()),
    ));

    // IngressClass changes re-reconcile every Ingress (their class may have changed meaning).
    let class_changes = reflect(class_w, Api::<IngressClass>::all(client.clone())).map(|_| ());
    // Node label changes (zone, node pool) re-reconcile the Services: member weights change.
    let node_changes = {
        let mut seen: HashMap<String, Option<std::collections::BTreeMap<String, String>>> = HashMap::new();
        reflect(node_w, Api::<Node>::all(client.clone())).filter_map(move |ev| {
            let changed = match &ev {
                watcher::Event::Apply(n) | watcher::Event::InitApply(n) => {
                    let name = n.metadata.name.clone().unwrap_or_default();
                    seen.insert(name, n.metadata.labels.clone()) != Some(n.metadata.labels.clone())
                }
                watcher::Event::Delete(n) => seen.remove(n.metadata.name.as_deref().unwrap_or_default()).is_some(),
                watcher::Event::InitDone => true,
                watcher::Event::Init => false,
            };
            futures::future::ready(changed.then_some(()))
        })
    };
    let mut background = Vec::new();
    if k.use_endpoint_slices {
        background
            .push(tokio::spawn(reflect(slice_w, Api::<EndpointSlice>::all(client.clone())).for_each(|_| async {})));
    } else {
        background.push(tokio::spawn(reflect(ep_w, Api::<Endpoints>::all(client.clone())).for_each(|_| async {})));
    }

    // Services appearing, disappearing or changing ports re-reconcile the Ingresses naming them.
    let ing_for_svc = ing_store.clone();
    let ing_ctl = ing_ctl
        .watches(Api::<Service>::all(client.clone()), watcher::Config::default(), move |svc| {
            crate::controller::ingress::ingresses_naming(&ing_for_svc, &svc)
        })
        .reconcile_all_on(class_changes)
        .graceful_shutdown_on(on_true(stop_rx));
    let svc_ctl = if k.use_endpoint_slices {
        svc_ctl.watches(
            Api::<EndpointSlice>::all(client.clone()),
            watcher::Config::default(),
            crate::controller::service::service_of_slice,
        )
    } else {
        svc_ctl.watches(
            Api::<Endpoints>::all(client.clone()),
            watcher::Config::default(),
            crate::controller::service::service_of_endpoints,
        )
    }
    .reconcile_all_on(node_changes)
    .graceful_shutdown_on(on_true(stop_rx));

    let ing_run = tokio::spawn(ing_ctl.run(crate::controller::ingress::reconcile, error_policy, ctx.clone()).for_each(
        |r| async move {
            if let Err(e) = r {
                tracing::debug!(error = %e, "ingress controller");
            }
        },
    ));
    let svc_run = tokio::spawn(svc_ctl.run(crate::controller::service::reconcile, error_policy, ctx.clone()).for_each(
        |r| async move {
            if let Err(e) = r {
                tracing::debug!(error = %e, "service controller");
            }
        },
    ));

    let (ing_run_abort, svc_run_abort) = (ing_run.abort_handle(), svc_run.abort_handle());

    // Caches: ready when every store used has listed its objects.
    {
        let (i, c, s, sl, ep, n) = (ing_store, classes, svc_store, slices, endpoints, nodes);
        let use_slices = k.use_endpoint_slices;
        let ready_tx = ready_tx.clone();
        background.push(tokio::spawn(async move {
            wait_ready(&i).await;
            wait_ready(&c).await;
            wait_ready(&s).await;
            wait_ready(&n).await;
            if use_slices {
                wait_ready(&sl).await;
            } else {
                wait_ready(&ep).await;
            }
            tracing::info!("caches synced");
            let _ = caches_tx.send(true);
            ready_tx.send_modify(|r| r.caches_synced = true);
        }));
    }

    // Resync: a full Sync at start and every resync_period (repairs drift).
    let resync = {
        let ctx = ctx.clone();
        let period = k.resync_period.max(Duration::from_secs(10));
        let mut stop = stop_rx.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = ctx.wait_caches() => {}
                    _ = stop.wait_for(|v| *v) => return,
                }
                let span = crate::controller::reconcile_span("resync", "", "");
                let r = tracing::Instrument::instrument(ctx.sync(true), span).await;
                match r {
                    Ok((_, report)) => {
                        ctx.metrics.reconcile_result("resync", "ok");
                        tracing::info!(writes = report.writes.len(), "resync done");
                    }
                    Err(e) => {
                        ctx.metrics.reconcile_result("resync", e.metric_label());
                        tracing::warn!(error = %e, "resync failed");
                    }
                }
                tokio::select! {
                    _ = tokio::time::sleep(period) => {}
                    _ = stop.wait_for(|v| *v) => return,
                }
            }
        })
    };

    on_true(stop_rx).await;
    // The controllers stopped taking new work (graceful_shutdown_on). The writer finishes the
    // write in flight and answers queued jobs with `shutdown`, which ends the reconciles waiting
    // on it; then the reconciles' own Kubernetes writes get a bounded time to finish. (A
    // controller whose cache never synced never ends by itself: kube holds it until its store is
    // ready, hence the timeout and abort.)
    tracing::info!("stopping: draining the router writer (the write in flight finishes)");
    writer.shutdown().await;
    let handlers = async {
        let _ = ing_run.await;
        let _ = svc_run.await;
        let _ = resync.await;
    };
    let (ing_abort, svc_abort) = (ing_run_abort, svc_run_abort);
    // Before the caches synced no reconcile got past `wait_caches`: nothing to wait for.
    let grace = if *ctx.caches_ready.borrow() { Duration::from_secs(20) } else { Duration::ZERO };
    if tokio::time::timeout(grace, handlers).await.is_err() {
        tracing::info!(grace_s = grace.as_secs(), "handlers did not stop within the grace period; aborting them");
        ing_abort.abort();
        svc_abort.abort();
    }
    for b in background {
        b.abort();
    }
    tracing::info!("handlers stopped");
    Ok(())
}
