//! What both handlers and the resync loop share: the caches ([`Stores`]), the [`Context`] of a
//! reconcile (the Sync + notices step, Events, the failure table), the one error type of a
//! reconcile ([`HandlerError`], whose labels feed the metrics), the requeue policy, and the
//! instrumented wrapper both handlers' `reconcile` go through.

use crate::certificate::CertificateCache;
use crate::controller::health::Readiness;
use crate::controller::indexes::{
    IndexedWriter, Indexes, secrets_of_ingress, service_of_slice, services_of_ingress, tls_secrets_of,
};
use crate::controller::metrics::{Metrics, RouterMetrics};
use crate::controller::named_secrets::NamedSecrets;
use crate::controller::outputs::events::{EventPublisher, UserEvent};
use crate::controller::outputs::notice::{ServiceNotice, desired_notices};
use crate::controller::outputs::patches;
use crate::controller::outputs::service_warnings::{self, ServiceWarnings};
use crate::controller::outputs::{self, Facts, PlannedEvent, Scope};
use crate::controller::routers::{RouterSlot, Routers};
use crate::controller::service_changes::ServiceChanges;
use crate::controller::writer::{Synced, WriteError, WriterHandle};
use crate::controller::{ControllerError, reconcile_span};
use crate::driver::ConvergeReport;
use crate::model::{DesiredRouter, KubeRef, Warning};
use crate::translate::budget::{Budget, translate_within};
use crate::translate::slices::CompactSlice;
use crate::translate::{Snapshot, TranslateOptions, namespace_of};
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::{Endpoints, Node, ObjectReference, Secret, Service};
use k8s_openapi::api::networking::v1::{Ingress, IngressClass};
use kube::Resource;
use kube::ResourceExt;
use kube::api::Api;
use kube::runtime::controller::Action;
use kube::runtime::reflector::{self, ObjectRef, Store};
use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;
use tracing::Instrument;

/// The caches the translation reads. Cheap to clone (each is an `Arc`).
#[derive(Clone)]
pub struct Stores {
    pub ingresses: Store<Ingress>,
    pub classes: Store<IngressClass>,
    pub services: Store<Service>,
    /// EndpointSlices, compacted on receipt ([`CompactSlice`]).
    pub slices: Store<CompactSlice>,
    pub endpoints: Store<Endpoints>,
    pub nodes: Store<Node>,
    /// `kubernetes.io/tls` Secrets (the watch is field-selected on that type).
    pub secrets: Store<Secret>,
    /// Who names whom, kept by the Ingress and EndpointSlice writers.
    pub indexes: Indexes,
    /// The Secrets' parsed certificates, shared by every translation from these caches.
    pub certificates: Arc<CertificateCache>,
    /// What names TLS Secrets: only those keep their data in `secrets`.
    pub named_secrets: Arc<NamedSecrets>,
}

/// Writers of [`Stores`] built without watches (tests, and the stores that `run` fills itself).
pub struct StoreWriters {
    pub ingresses: IndexedWriter<Ingress>,
    pub classes: reflector::store::Writer<IngressClass>,
    pub services: reflector::store::Writer<Service>,
    pub slices: IndexedWriter<CompactSlice>,
    pub endpoints: reflector::store::Writer<Endpoints>,
    pub nodes: reflector::store::Writer<Node>,
    pub secrets: reflector::store::Writer<Secret>,
}

impl StoreWriters {
    pub fn new() -> (Stores, StoreWriters) {
        let (ingresses, wi) = reflector::store();
        let (classes, wc) = reflector::store();
        let (services, ws) = reflector::store();
        let (slices, wsl) = reflector::store();
        let (endpoints, we) = reflector::store();
        let (nodes, wn) = reflector::store();
        let (secrets, wse) = reflector::store();
        let indexes = Indexes::default();
        let wi = IndexedWriter::new(
            wi,
            vec![
                (indexes.ingresses_by_service.clone(), services_of_ingress),
                (indexes.ingresses_by_secret.clone(), secrets_of_ingress),
            ],
        );
        let wsl = IndexedWriter::new(wsl, vec![(indexes.slices_by_service.clone(), service_of_slice)]);
        let certificates = Arc::default();
        let named_secrets = Arc::new(NamedSecrets::new(indexes.ingresses_by_secret.clone()));
        (
            Stores {
                ingresses,
                classes,
                services,
                slices,
                endpoints,
                nodes,
                secrets,
                indexes,
                certificates,
                named_secrets,
            },
            StoreWriters {
                ingresses: wi,
                classes: wc,
                services: ws,
                slices: wsl,
                endpoints: we,
                nodes: wn,
                secrets: wse,
            },
        )
    }
}

impl Stores {
    /// The translation inputs: a snapshot of every cache, sharing the cached objects (no copy).
    /// Ingresses being deleted are left out, so a Sync removes their policies while their
    /// finalizer holds them.
    pub fn inputs(&self) -> Snapshot {
        self.inputs_with(None)
    }

    /// [`Stores::inputs`], with the configured default certificate's Secret (`namespace`, `name`)
    /// among the Secrets handed over.
    pub fn inputs_with(&self, default_tls_secret: Option<&(String, String)>) -> Snapshot {
        let mut ingresses = self.ingresses.state();
        ingresses.retain(|i| i.metadata.deletion_timestamp.is_none());
        // Only the Secrets an Ingress (or the configured default certificate, or a Gateway) names
        // are handed to the translation: the others' key material is not read.
        let mut named: std::collections::BTreeSet<(String, String)> =
            ingresses.iter().flat_map(|i| tls_secrets_of(i)).collect();
        named.extend(default_tls_secret.cloned());
        let mut secrets = self.secrets.state();
        secrets.retain(|s| {
            let key = (namespace_of(&s.metadata).to_string(), s.name_any());
            named.contains(&key) || self.named_secrets.named_by_gateway(&key)
        });
        Snapshot {
            ingresses,
            ingress_classes: self.classes.state(),
            services: self.services.state(),
            endpoint_slices: self.slices.state(),
            endpoints: self.endpoints.state(),
            nodes: self.nodes.state(),
            secrets,
            now: Some(std::time::SystemTime::now()),
            certificates: Some(self.certificates.clone()),
            gateway_claims: Default::default(),
        }
    }
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
    /// The routers this controller drives, by key: each one's writer, budget, readiness and
    /// metrics (see [`crate::controller::routers`]).
    pub routers: Routers,
    /// With scale-out: the Sync of the router set (`router_set::set_sync`: placement, and the
    /// writers of the routers other than the first). None: the one router of `routers` gets
    /// every Ingress.
    pub(crate) set: Option<Arc<dyn SetSync>>,
    pub events: Arc<EventPublisher>,
    pub metrics: Metrics,
    pub opts: TranslateOptions,
    /// `true` once every cache has listed its objects; reconciles wait for it, since a Sync from
    /// a half-filled cache would delete routes.
    pub caches_ready: watch::Receiver<bool>,
    /// Readiness of the process (each router's is set by its first successful Sync).
    pub readiness: Option<watch::Sender<Readiness>>,
    /// The translation of the caches; the writer runs it once per Sync job.
    pub(crate) translator: Arc<Translator>,
    /// The Service notices of the last synced desired state (built once per Sync, looked up by
    /// every Service reconcile until the next one), with the router they name.
    notices: Mutex<Option<SyncedNotices>>,
    /// Consecutive failures per object, for the growing requeue delay.
    failures: Mutex<HashMap<String, u32>>,
    /// The translation's warnings about Services already published as Events on them.
    pub(crate) service_warnings: Mutex<ServiceWarnings>,
    /// `[kubernetes] member_change_window_ms`: how long a Service's member update waits for more
    /// endpoint changes (see `service::reconcile`).
    pub member_change_window: Duration,
    /// Where the Service handler records the Services it sees changed, for the Gateways'
    /// routers (`super::gateway::members`); None without a Gateway driver.
    pub gateway_services: Option<Arc<ServiceChanges>>,
}

/// What a Sync answers: the desired state synced and the convergence report.
pub(crate) type SyncAnswer = Result<(Arc<DesiredRouter>, ConvergeReport), HandlerError>;

/// The Sync of a router set (scale-out), which [`Context::sync_for`] hands over to when one is
/// installed. The Context holds it as this hook, so that the plumbing names no room: the set's
/// state and its Sync steps are the router set's own (`router_set::set_sync`).
pub(crate) trait SetSync: Send + Sync {
    /// A Sync of every router of the set, with the outputs of `scope` (see [`Context::sync_for`]).
    fn sync<'a>(&'a self, ctx: &'a Context, force: bool, scope: Scope<'a>) -> BoxFuture<'a, SyncAnswer>;
}

/// A desired state and the Service notices it implies.
type SyncedNotices = (String, Arc<DesiredRouter>, Arc<BTreeMap<KubeRef, ServiceNotice>>);

/// The whole-router translation from the caches: what the writer runs once per Sync job.
pub(crate) struct Translator {
    stores: Stores,
    opts: TranslateOptions,
    /// The host owners our IngressClass should remember after the last translation, when they
    /// changed (`translate::tenancy::remembered_owners`); taken by the next finished Sync.
    owners: Mutex<Option<String>>,
    /// The owners remembered in the controller's store, as JSON: put on the in-memory copy of
    /// our IngressClass that the translation reads (None: the class as cached); and the hosts
    /// the Gateway API objects claim, shared with the Gateway loop.
    book: Arc<crate::controller::owner_store::OwnerBook>,
}

impl Translator {
    /// The inputs and the desired state of a router (its `budget`, its `metrics`) from the
    /// caches now. Every translation of the controller comes here, so `translations_total`
    /// counts them all (the writer's, the placement's with scale-out, the tools').
    pub fn desired(&self, budget: Option<Budget>, metrics: &RouterMetrics) -> (Snapshot, DesiredRouter) {
        metrics.translated();
        let mut inputs = self.stores.inputs_with(self.opts.tls.default_certificate.as_ref());
        if let Some(owners) = self.book.remembered_json() {
            crate::controller::owner_store::with_owners(&mut inputs.ingress_classes, &self.opts.ingress_class, &owners);
        }
        let mut owners = None;
        if self.opts.tenancy.host_ownership {
            inputs.gateway_claims = self.book.gateway_claims();
            // Our Ingresses' claims, made once: the Gateway loop is told of a change, and the
            // owners to remember are decided from them.
            let ours = crate::translate::ingress_class::ours_by_age(&inputs, &self.opts);
            let claims = crate::translate::host_claims::ingress_claims(&ours);
            self.book.set_ingress_claims(&claims);
            owners = crate::translate::tenancy::remembered_owners_of(
                &crate::translate::options::Source::view(&inputs),
                &self.opts,
                claims,
            );
        }
        let desired = translate_within(&inputs, &self.opts, budget.as_ref());
        metrics.pool_weightings(desired.pools.values().map(|p| p.weighting.as_str()));
        *self.owners.lock().expect("lock") = owners;
        (inputs, desired)
    }
}

impl Context {
    /// A context driving one router, `router_name` (its key), through `writer`.
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
        let translator = Arc::new(Translator {
            stores: stores.clone(),
            opts: opts.clone(),
            owners: Mutex::new(None),
            book: Arc::default(),
        });
        let routers = Routers::new([RouterSlot::new(router_name, writer, &metrics)]);
        for slot in routers.iter() {
            // Each writer translates for its own router: its budget, its metrics.
            let (t, s) = (translator.clone(), slot.clone());
            slot.writer.set_translate(Arc::new(move || t.desired(s.budget(), &s.metrics).1));
        }
        if let Some(r) = &readiness {
            r.send_modify(|r| {
                for n in routers.names() {
                    r.router_mut(&n);
                }
            });
        }
        Self {
            client,
            stores,
            routers,
            set: None,
            events,
            metrics,
            opts,
            caches_ready,
            readiness,
            translator,
            notices: Mutex::new(None),
            failures: Mutex::new(HashMap::new()),
            service_warnings: Mutex::new(ServiceWarnings::default()),
            member_change_window: Duration::ZERO,
            gateway_services: None,
        }
    }

    /// With a member change window (see [`Context::member_change_window`]).
    pub fn with_member_change_window(mut self, window: Duration) -> Self {
        self.member_change_window = window;
        self
    }

    /// With the Gateways' routers told of every Service change (see [`Context::gateway_services`]).
    pub fn with_gateway_services(mut self, changes: Arc<ServiceChanges>) -> Self {
        self.gateway_services = Some(changes);
        self
    }

    /// Keeps the hosts' owners in `store` (starting from `owners`) instead of our IngressClass.
    pub(crate) fn with_owner_store(
        self,
        store: Arc<crate::controller::owner_store::OwnerStore>,
        owners: &crate::translate::tenancy::RememberedOwners,
    ) -> Self {
        self.translator.book.use_store(store, owners);
        self
    }

    /// What the Ingress and Gateway sides share for host ownership.
    pub fn owner_book(&self) -> Arc<crate::controller::owner_store::OwnerBook> {
        self.translator.book.clone()
    }

    /// With scale-out: drives the router set `set` (the first router is the one given to
    /// [`Context::new`]).
    pub(crate) fn with_router_set(mut self, set: Arc<dyn SetSync>) -> Self {
        self.set = Some(set);
        self
    }

    /// The first router: without scale-out, the one every Ingress of the class goes to.
    pub fn router(&self) -> Arc<RouterSlot> {
        self.routers.primary()
    }

    /// Waits until every cache is synced.
    pub(crate) async fn wait_caches(&self) {
        let mut rx = self.caches_ready.clone();
        let _ = rx.wait_for(|r| *r).await;
    }

    /// The inputs and the desired router from the caches now (a whole translation: the
    /// handlers leave it to the writer, once per Sync job; tests and tools call it).
    pub fn desired(&self) -> (Snapshot, DesiredRouter) {
        let slot = self.router();
        self.translator.desired(slot.budget(), &slot.metrics)
    }

    /// Converges the router to the caches (unless `force` is false and the desired state is the
    /// one last synced), then applies the Sync-wide outputs (refusals, notices, Service
    /// warnings). The writer translates once per Sync job; every handler waiting on that job
    /// shares its desired state.
    pub async fn sync(&self, force: bool) -> Result<(Arc<DesiredRouter>, ConvergeReport), HandlerError> {
        self.sync_for(force, Scope::Sync).await
    }

    /// [`Context::sync`], then the outputs of `scope` too (see [`outputs::plan`]).
    pub async fn sync_for(&self, force: bool, scope: Scope<'_>) -> SyncAnswer {
        if let Some(set) = &self.set {
            return set.sync(self, force, scope).await;
        }
        self.wait_caches().await;
        let slot = self.router();
        let synced = slot.writer.sync_from_caches(force).await.map_err(HandlerError::Octavia)?;
        self.took(&slot, &synced);
        self.apply_outputs(&slot, &synced, scope, &|_| true).await?;
        Ok((synced.desired, synced.report))
    }

    /// What a router's finished Sync tells its slot: budget, metrics, readiness (by the first
    /// of the job's waiters only: the metrics count the job's failures once).
    pub(crate) fn took(&self, slot: &RouterSlot, synced: &Synced) {
        if synced.written && slot.outputs.lock().expect("lock").claim_report(synced.job) {
            slot.take_budget_of(&synced.report);
            slot.metrics.waiting_for_quota(synced.report.quota_waiting.len());
            for f in &synced.report.failures {
                slot.metrics.write_failure(f.reason);
            }
            if let Some(r) = &self.readiness {
                slot.mark_ready(r);
            }
        }
    }

    /// The one output step of a finished Sync: plans (purely) and applies its notices,
    /// statuses and Events, less what another waiter of the same job applied already (see
    /// [`outputs::Ledger`]). A notice write that fails fails the call; so does the status of the
    /// reconciled Ingress (it is retried with it), while the resync only logs a status it could
    /// not write.
    /// `here`: whether an Ingress is placed on this router (its status carries this router's
    /// address).
    pub(crate) async fn apply_outputs(
        &self,
        slot: &RouterSlot,
        synced: &Synced,
        scope: Scope<'_>,
        here: &(dyn Fn(&Ingress) -> bool + Sync),
    ) -> Result<(), HandlerError> {
        let services = self.stores.services.state();
        let key =
            |s: &Service| KubeRef::service(namespace_of(&s.metadata), s.metadata.name.as_deref().unwrap_or_default());
        let router = slot.name.as_str();
        let cached = self.stores.ingresses.state();
        let wide_applied = slot.outputs.lock().expect("lock").wide_applied(synced.job);
        // Only the waiter that will apply the Sync-wide part reads every Service's notice.
        let (notices, legacy) = if wide_applied {
            Default::default()
        } else {
            (
                services
                    .iter()
                    .filter_map(|s| Some((key(s), ServiceNotice::from_service(s, router).ok().flatten()?)))
                    .collect(),
                services
                    .iter()
                    .filter(|s| ServiceNotice::legacy(s).is_some_and(|n| n.router == router))
                    .map(|s| key(s))
                    .collect(),
            )
        };
        let facts = Facts {
            notices,
            legacy,
            wide_applied,
            statuses: match scope {
                Scope::Ingress(ing) => vec![ing],
                Scope::Resync => {
                    cached.iter().map(|i| i.as_ref()).filter(|i| self.keeps_status_of(i) && here(i)).collect()
                }
                Scope::Sync | Scope::Conflicts => vec![],
            },
        };
        let mut out = outputs::plan(router, &synced.desired, &synced.report, synced.written, &facts, scope);
        slot.outputs.lock().expect("lock").claim(synced.job, &mut out);
        for ev in &out.refusals {
            self.publish_on_ingress(ev, None).await;
        }
        for change in &out.notices {
            let api: Api<Service> = Api::namespaced(self.client.clone(), &change.service.namespace);
            match patches::patch_service_notice(&api, router, change).await {
                Ok(_) => {
                    tracing::info!(service = %change.service, set = change.notice.is_some(), "service notice written")
                }
                Err(ControllerError::Kube(kube::Error::Api(s))) if s.code == 404 => {}
                Err(e) => return Err(e.into()),
            }
        }
        self.remember_host_owners().await?;
        self.publish_service_warnings(None, &out.service_warnings).await;
        let by_ref = by_ref(&facts.statuses);
        for change in &out.statuses {
            let Some(ing) = by_ref.get(&change.ingress) else { continue };
            let api: Api<Ingress> = Api::namespaced(self.client.clone(), &change.ingress.namespace);
            match patches::patch_ingress_status(&api, ing, change.address).await {
                Ok(_) => tracing::info!(ingress = %change.ingress, address = ?change.address, "ingress status written"),
                Err(e) if matches!(scope, Scope::Ingress(_)) => return Err(e.into()),
                Err(e) => tracing::warn!(ingress = %change.ingress, error = %e, "cannot patch the ingress status"),
            }
        }
        let me = match scope {
            Scope::Ingress(ing) => Some(ing),
            _ => None,
        };
        for ev in &out.events {
            self.publish_on_ingress(ev, me).await;
        }
        Ok(())
    }

    /// Whether the status of `ing` is ours to keep: of our class, with our finalizer, not
    /// being deleted.
    pub(crate) fn keeps_status_of(&self, ing: &Ingress) -> bool {
        crate::translate::ingress_class::is_ours(ing, &self.stores.classes.state(), &self.opts)
            && patches::has_finalizer(ing)
            && ing.metadata.deletion_timestamp.is_none()
    }

    /// Publishes `ev` on its Ingress: `me` (the reconciled one) when it is about it, else the
    /// Ingress from the cache (an Ingress gone meanwhile is told nothing).
    pub(crate) async fn publish_on_ingress(&self, ev: &PlannedEvent, me: Option<&Ingress>) {
        let regarding = match me {
            Some(ing) if outputs::ingress_ref(ing) == ev.regarding => ing.object_ref(&()),
            _ => {
                let key = ObjectRef::<Ingress>::new(&ev.regarding.name).within(&ev.regarding.namespace);
                let Some(ing) = self.stores.ingresses.get(&key) else { return };
                ing.object_ref(&())
            }
        };
        self.publish(&ev.event, &regarding).await;
    }

    /// With host ownership on, stores the hosts' owners on our IngressClass when the last
    /// translation changed them (`translate::tenancy`): the next sync, of this or a new leader,
    /// reads them from the cache.
    async fn remember_host_owners(&self) -> Result<(), HandlerError> {
        let Some(value) = self.translator.owners.lock().expect("lock").take() else {
            return Ok(());
        };
        // The controller's own store, sharded: no annotation limit (the class is not written).
        if self.translator.book.remember(&value).await {
            tracing::info!(class = %self.opts.ingress_class, "host owners remembered");
            return Ok(());
        }
        let api: Api<IngressClass> = Api::all(self.client.clone());
        let patch = serde_json::json!({"metadata": {"annotations": {
            crate::translate::tenancy::HOST_OWNERS_ANNOTATION: value}}});
        let params = kube::api::PatchParams::default();
        match api.patch(&self.opts.ingress_class, &params, &kube::api::Patch::Merge(&patch)).await {
            Ok(_) => tracing::info!(class = %self.opts.ingress_class, "host owners remembered"),
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => return Err(e.into()),
        }
        Ok(())
    }

    /// The notice `service` must carry for `synced` (a desired state the writer synced).
    /// `router` is the key of the router that synced it.
    pub(crate) fn notice_for(
        &self,
        router: &str,
        synced: &Arc<DesiredRouter>,
        service: &KubeRef,
    ) -> Option<ServiceNotice> {
        let mut cached = self.notices.lock().expect("lock");
        let notices = match cached.as_ref() {
            Some((r, d, n)) if r == router && Arc::ptr_eq(d, synced) => n.clone(),
            _ => {
                let n = Arc::new(desired_notices(router, synced));
                *cached = Some((router.to_string(), synced.clone(), n.clone()));
                n
            }
        };
        notices.get(service).cloned()
    }

    /// The status address of every Ingress of ours made equal to the router's (patched only
    /// where it differs): what the resync's outputs do (see [`Context::sync_for`]), on its own.
    pub async fn refresh_statuses(&self, address: Option<std::net::IpAddr>) {
        let cached = self.stores.ingresses.state();
        let facts = Facts {
            statuses: cached.iter().map(|i| i.as_ref()).filter(|i| self.keeps_status_of(i)).collect(),
            ..Facts::default()
        };
        let report = ConvergeReport { address, ..ConvergeReport::default() };
        let out = outputs::plan(&self.router().name, &DesiredRouter::default(), &report, false, &facts, Scope::Sync);
        let by_ref = by_ref(&facts.statuses);
        for change in out.statuses {
            let Some(ing) = by_ref.get(&change.ingress) else { continue };
            let api: Api<Ingress> = Api::namespaced(self.client.clone(), &change.ingress.namespace);
            match patches::patch_ingress_status(&api, ing, address).await {
                Ok(_) => tracing::info!(ingress = %change.ingress, ?address, "ingress status corrected"),
                Err(e) => tracing::warn!(ingress = %change.ingress, error = %e, "cannot patch the ingress status"),
            }
        }
    }

    /// Publishes the Service warnings of `warnings` that are due (see [`ServiceWarnings::due`]);
    /// with `service`, those of that Service only, from its Members path
    /// ([`ServiceWarnings::due_for`]): a Service that loses its last endpoint says so at once,
    /// not at the next Sync.
    pub(crate) async fn publish_service_warnings(&self, service: Option<&KubeRef>, warnings: &[Warning]) {
        let now = std::time::Instant::now();
        let (due, action) = {
            let mut published = self.service_warnings.lock().expect("lock");
            match service {
                None => (published.due(warnings, now), "Sync"),
                Some(s) => (published.due_for(s, warnings, now), "UpdateMembers"),
            }
        };
        for (ev, regarding) in service_warnings::events(&due, &self.stores.services, action) {
            self.publish(&ev, &regarding).await;
        }
    }

    /// Publishes an Event, logging (never failing on) errors.
    pub async fn publish(&self, ev: &UserEvent, regarding: &ObjectReference) {
        if let Err(e) = self.events.publish(ev, regarding).await {
            tracing::warn!(error = %e, reason = %ev.reason, "cannot publish event");
        }
    }

    /// Forgets the failures of `key` (after a successful reconcile).
    pub(crate) fn succeeded(&self, key: &str) {
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
pub(crate) fn object_key<K: kube::Resource<DynamicType = ()>>(obj: &K) -> String {
    let m = obj.meta();
    format!("{}/{}/{}", K::kind(&()), m.namespace.as_deref().unwrap_or_default(), m.name.as_deref().unwrap_or_default())
}

/// The reconcile of one object by `handler` (`ingress`, `service`): one span naming the handler
/// and the object (so every log line of the reconcile, the Octavia calls included, carries
/// them), the duration and result metrics, and the failure table cleared on success.
pub(crate) async fn instrumented<K: kube::Resource<DynamicType = ()>>(
    handler: &'static str,
    obj: &K,
    ctx: &Context,
    work: impl Future<Output = Result<Action, HandlerError>>,
) -> Result<Action, HandlerError> {
    let span = reconcile_span(handler, &obj.namespace().unwrap_or_default(), &obj.name_any());
    async move {
        let _timer = ctx.metrics.reconcile_timer(handler);
        let result = work.await;
        ctx.metrics.reconcile_result(handler, result.as_ref().map_or_else(|e| e.metric_label(), |_| "ok"));
        if result.is_ok() {
            ctx.succeeded(&object_key(obj));
        }
        result
    }
    .instrument(span)
    .await
}

/// The Ingresses of `statuses` by reference, built once per Sync: finding each status change's
/// Ingress by a scan was O(changes × Ingresses), tens of millions of comparisons at 10k.
fn by_ref<'a>(statuses: &[&'a Ingress]) -> std::collections::HashMap<crate::model::KubeRef, &'a Ingress> {
    statuses.iter().map(|i| (outputs::ingress_ref(i), *i)).collect()
}
