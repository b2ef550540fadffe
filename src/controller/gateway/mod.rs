//! Gateway API objects as a second input beside Ingress: the watches of GatewayClass, Gateway,
//! HTTPRoute, ReferenceGrant, Namespace and ConfigMap (the CA bundles of client certificate
//! validation, `ca.crt` only), and the loop that translates them
//! ([`crate::gateway::build::translate`]) and writes their status ([`crate::controller::gateway::status`]).
//!
//! Users install the Gateway API CRDs; a cluster without them is an Ingress-only cluster. The
//! CRDs are probed before any watch (a watch of a resource the API server does not serve would
//! retry forever, logging an error each time): absent, this is logged once and probed again
//! every [`GatewayLoop::recheck`], so installing the CRDs later needs no restart.
//!
//! The routers of the Gateways ([`crate::gateway::build::Translation::routers`]) are published on
//! a watch channel for the router writer; their addresses come back as [`Programmed`].

pub mod admission;
pub mod driver;
pub(crate) mod finalizers;
pub mod hosts;
pub mod members;
pub(crate) mod routers;
pub mod status;

use crate::controller::gateway::driver::{
    DataPlane, DataPlaneView, GATEWAY_ROUTER_RESYNC, GATEWAY_ROUTER_RETRY, GatewayBackends, GatewayDriver, KeptGrace,
};
use crate::controller::gateway::status::{GatewayStores, StatusWriter, reference, world};
use crate::controller::outputs::events::{EventPublisher, UserEvent};
use crate::gateway::api::generated::{Gateway, GatewayClass, HTTPRoute, ListenerSet, ReferenceGrant};
use crate::gateway::api::{Blank, Parsed, domain_event};
use crate::gateway::build::translate_observed;
use crate::gateway::keep::Tables;
use crate::gateway::router::UnservableRules;
use crate::reason::Reason;
use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret, Service};
use kube::api::{Api, ListParams};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Notify, watch};

/// What the Gateway loop reads besides its own watches: the Ingress side's caches of Services and
/// TLS Secrets (one watch per kind in the process), and the addresses of the programmed Gateways.
pub struct GatewayLoop {
    pub client: kube::Client,
    pub services: Store<Service>,
    pub secrets: Store<Secret>,
    pub events: Option<Arc<EventPublisher>>,
    /// What the routers report: addresses, failures, holds, load balancers deleted.
    pub plane: DataPlaneView,
    /// Whether a router driver deletes the Gateways' load balancers (then our finalizer is put
    /// on each Gateway of ours, see `crate::gateway::keep`).
    pub finalize: bool,
    /// The routers the Gateways need and the fates of the others, for the router driver.
    pub routers: watch::Sender<Tables>,
    /// Changes arriving within this window are translated once.
    pub debounce: Duration,
    /// How often the CRDs are probed while absent, and how often the loop runs without a Gateway
    /// API event (Service and Secret changes arrive through the Ingress side's watches).
    pub recheck: Duration,
    /// What names TLS Secrets (the Secret watch keeps only their data): told about the Gateways'
    /// cache, and asked for a re-list when a listener names a Secret held without data.
    pub named_secrets: Option<Arc<crate::controller::named_secrets::NamedSecrets>>,
    /// How many Gateways are served per namespace and per cluster (`crate::gateway::limits`).
    pub limits: crate::config::GatewayLimits,
    /// With `[kubernetes] host_ownership`: the Ingress side's claims and owners, one owner index
    /// for both kinds (`crate::gateway::host_owners`); None: off.
    pub hosts: Option<hosts::IngressHosts>,
    /// `[kubernetes] secret_namespaces` (empty: all): a listener naming a Secret elsewhere is
    /// refused, naming the option (the Secret is never in the cache).
    pub secret_namespaces: Vec<String>,
}

/// Whether the API server serves a resource: `Some(false)` on 404 (the CRD is not installed),
/// `None` when it cannot tell (the API server is unreachable: ask again later).
async fn served<K>(api: Api<K>) -> Option<bool>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    match api.list_metadata(&ListParams::default().limit(1)).await {
        Ok(_) => Some(true),
        Err(kube::Error::Api(s)) if s.code == 404 => Some(false),
        Err(e) => {
            tracing::warn!(kind = %std::any::type_name::<K>(), error = %e, "cannot probe the Gateway API resources");
            None
        }
    }
}

/// A watch feeding `writer`; every event notifies `changed`.
fn reflect_into<K>(
    writer: reflector::store::Writer<K>,
    watch: impl Stream<Item = watcher::Result<watcher::Event<K>>> + Send + 'static,
    changed: Arc<Notify>,
) -> impl Stream<Item = ()> + Send + 'static
where
    K: kube::Resource<DynamicType = ()> + Clone + std::fmt::Debug + Send + Sync + 'static,
{
    reflector::reflector(writer, watch).map(move |r| match r {
        Ok(_) => changed.notify_one(),
        Err(e) => tracing::warn!(kind = %K::kind(&()), error = %e, "watch error (retrying)"),
    })
}

/// The cache of a kind that is not watched (not served, or not readable): listed at once and
/// empty, so that the first pass, which waits for every cache, does not wait for it.
fn listed_empty<K>(mut writer: reflector::store::Writer<K>)
where
    K: kube::Resource<DynamicType = ()> + Clone + 'static,
{
    writer.apply_watcher_event(&watcher::Event::Init);
    writer.apply_watcher_event(&watcher::Event::InitDone);
}

/// What the API server serves (and the controller may read) besides the core Gateway API kinds.
struct Served {
    grants: bool,
    backend_tls: bool,
    listener_sets: bool,
    /// ConfigMaps (CA bundles): false when the controller's RBAC forbids listing them.
    config_maps: bool,
}

/// Whether the controller may list ConfigMaps in every namespace: false on 403 (the RBAC rule
/// `etc/manifests/clusterrole.yaml` grants is missing: logged, and CA bundle references then say
/// so); true otherwise (an unreachable API server: the watch retries).
async fn readable(api: Api<ConfigMap>) -> bool {
    match api.list_metadata(&ListParams::default().limit(1)).await {
        Err(kube::Error::Api(s)) if s.code == 403 => {
            tracing::warn!(
                "the controller may not list ConfigMaps: client certificate validation (Gateway \
                 spec.tls.frontend) cannot read its CA bundles"
            );
            false
        }
        _ => true,
    }
}

/// The ConfigMap watch of the CA bundles: feeds `writer`, and wakes the Gateway loop only for a
/// ConfigMap a Gateway names (and at the end of each list): the controller's own ConfigMaps
/// change at every Sync (stamps, records), which must not start a pass each.
fn reflect_ca_bundles(
    writer: reflector::store::Writer<ConfigMap>,
    watch: impl Stream<Item = watcher::Result<watcher::Event<ConfigMap>>> + Send + 'static,
    gateways: Store<crate::gateway::api::Gateway>,
    changed: Arc<Notify>,
) -> impl Stream<Item = ()> + Send + 'static {
    reflector::reflector(writer, watch).map(move |r| match r {
        Ok(ev) if ca_bundle_event_matters(&ev, &gateways) => changed.notify_one(),
        Ok(_) => {}
        Err(e) => tracing::warn!(kind = "ConfigMap", error = %e, "watch error (retrying)"),
    })
}

/// Whether a ConfigMap event can change a Gateway's status or router: a change of one that a
/// Gateway's client certificate validation names, or the end of a (re-)list.
pub(crate) fn ca_bundle_event_matters(
    ev: &watcher::Event<ConfigMap>,
    gateways: &Store<crate::gateway::api::Gateway>,
) -> bool {
    let cm = match ev {
        watcher::Event::Apply(cm) | watcher::Event::Delete(cm) => cm,
        watcher::Event::InitDone => return true,
        watcher::Event::Init | watcher::Event::InitApply(_) => return false,
    };
    let key = (cm.metadata.namespace.clone().unwrap_or_default(), cm.metadata.name.clone().unwrap_or_default());
    gateways.state().iter().any(|g| crate::gateway::frontend::named_config_maps(g).contains(&key))
}

/// The watch of `api`'s kind, slimmed.
fn watch_of<K>(api: Api<K>) -> impl Stream<Item = watcher::Result<watcher::Event<K>>> + Send + 'static
where
    K: kube::Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
{
    watcher(api, watcher::Config::default()).default_backoff().modify(crate::controller::slim::slim::<K>)
}

/// The watch of a generated Gateway API kind (`G`), each object converted to its domain kind
/// (`D`) once, as its event arrives: the caches hold domain objects, so a pass converts nothing.
/// The watch reads [`Parsed`] objects, so that one object the generated types cannot read does
/// not fail the list of its kind (see `gateway::api::parsed`); one that not even the domain type
/// reads is cached without a spec (ignored) and gets a Warning Event naming the field.
pub(crate) fn converted<G, D>(
    watch: impl Stream<Item = watcher::Result<watcher::Event<Parsed<G>>>> + Send + 'static,
    events: Option<Arc<EventPublisher>>,
) -> impl Stream<Item = watcher::Result<watcher::Event<D>>> + Send + 'static
where
    G: 'static,
    D: Blank + for<'a> From<&'a G> + 'static,
{
    let mut unreadable = move |d: &D, why: &str| {
        let meta = d.meta();
        tracing::warn!(kind = %D::kind(&()), namespace = ?meta.namespace, name = ?meta.name, error = %why, "object ignored");
        if let Some(events) = events.clone() {
            let ev = UserEvent::of(Reason::UnreadableObject, "Read", format!("{why}: ignored until it can be read"));
            let regarding = reference::<D>(meta);
            tokio::spawn(async move {
                if let Err(e) = events.publish(&ev, &regarding).await {
                    tracing::warn!(name = ?regarding.name, error = %e, "cannot publish an Event");
                }
            });
        }
    };
    watch.map(move |r| r.map(|e| domain_event::<G, D>(e, &mut unreadable)))
}

impl GatewayLoop {
    /// Probes the CRDs until they are served (or `stop`), then watches and translates until `stop`.
    pub async fn run(mut self, mut stop: watch::Receiver<bool>) {
        let mut logged = false;
        let (grants_served, tls_served, sets_served) = loop {
            let c = self.client.clone();
            let core = [
                served(Api::<GatewayClass>::all(c.clone())).await,
                served(Api::<Gateway>::all(c.clone())).await,
                served(Api::<HTTPRoute>::all(c.clone())).await,
            ];
            if core.iter().all(|s| *s == Some(true)) {
                let tls = served(Api::<crate::gateway::api::BackendTLSPolicy>::all(c.clone())).await == Some(true);
                let sets = served(Api::<ListenerSet>::all(c.clone())).await == Some(true);
                break (served(Api::<ReferenceGrant>::all(c)).await == Some(true), tls, sets);
            }
            if core.contains(&Some(false)) && !logged {
                logged = true;
                tracing::info!(
                    recheck_s = self.recheck.as_secs(),
                    "the Gateway API CRDs (gateway.networking.k8s.io/v1) are not installed: serving Ingresses only"
                );
            }
            tokio::select! {
                _ = tokio::time::sleep(self.recheck) => {}
                _ = stop.wait_for(|v| *v) => return,
            }
        };
        if !grants_served {
            tracing::warn!("ReferenceGrant (v1beta1) is not served: cross-namespace references are refused");
        }
        let config_maps = readable(Api::<ConfigMap>::all(self.client.clone())).await;
        tracing::info!("watching the Gateway API objects");
        let changed = Arc::new(Notify::new());
        let kinds = Served { grants: grants_served, backend_tls: tls_served, listener_sets: sets_served, config_maps };
        let (stores, watches) = self.watches(kinds, &changed);
        let watches = tokio::spawn(watches);
        self.translate_loop(&stores, &changed, &mut stop).await;
        watches.abort();
    }

    fn watches(
        &self,
        kinds: Served,
        changed: &Arc<Notify>,
    ) -> (GatewayStores, impl std::future::Future<Output = ()> + Send + 'static) {
        let Served { grants: grants_served, backend_tls: tls_served, listener_sets: sets_served, config_maps } = kinds;
        let c = &self.client;
        let ev = &self.events;
        let (classes, wc) = reflector::store();
        let (gateways, wg) = reflector::store();
        let (routes, wr) = reflector::store();
        let (grants, wgr) = reflector::store::<crate::gateway::api::ReferenceGrant>();
        let (namespaces, wn) = reflector::store();
        let mut streams = vec![
            reflect_into(
                wc,
                converted(watch_of(Api::<Parsed<GatewayClass>>::all(c.clone())), ev.clone()),
                changed.clone(),
            )
            .boxed(),
            reflect_into(wg, converted(watch_of(Api::<Parsed<Gateway>>::all(c.clone())), ev.clone()), changed.clone())
                .boxed(),
            reflect_into(
                wr,
                converted(watch_of(Api::<Parsed<HTTPRoute>>::all(c.clone())), ev.clone()),
                changed.clone(),
            )
            .boxed(),
            reflect_into(wn, watch_of(Api::<Namespace>::all(c.clone())), changed.clone()).boxed(),
        ];
        if grants_served {
            let grants = converted(watch_of(Api::<Parsed<ReferenceGrant>>::all(c.clone())), ev.clone());
            streams.push(reflect_into(wgr, grants, changed.clone()).boxed());
        } else {
            // Nothing to list: the store is ready and stays empty.
            listed_empty(wgr);
        }
        let (backend_tls, wt) = reflector::store::<crate::gateway::api::BackendTLSPolicy>();
        if tls_served {
            let api = Api::<crate::gateway::api::BackendTLSPolicy>::all(c.clone());
            streams.push(reflect_into(wt, watch_of(api), changed.clone()).boxed());
        } else {
            // Not installed: no policy, and routes to any Service are served as before.
            listed_empty(wt);
        }
        let (listener_sets, wl) = reflector::store::<crate::gateway::api::ListenerSet>();
        if sets_served {
            let sets = converted(watch_of(Api::<Parsed<ListenerSet>>::all(c.clone())), ev.clone());
            streams.push(reflect_into(wl, sets, changed.clone()).boxed());
        } else {
            // Gateway API before v1.5: no ListenerSet, and each Gateway has its own listeners only.
            listed_empty(wl);
        }
        let (ca_maps, wm) = reflector::store::<ConfigMap>();
        if config_maps {
            let watch = watcher(Api::<ConfigMap>::all(c.clone()), watcher::Config::default())
                .default_backoff()
                .modify(crate::controller::slim::ca_bundle_only);
            streams.push(reflect_ca_bundles(wm, watch, gateways.clone(), changed.clone()).boxed());
        } else {
            // Not readable (RBAC): no CA bundle, and each reference to one says why.
            listed_empty(wm);
        }
        let stores = GatewayStores {
            classes,
            gateways,
            routes,
            grants,
            namespaces,
            backend_tls,
            listener_sets,
            config_maps: ca_maps,
            config_maps_readable: config_maps,
        };
        (stores, futures::stream::select_all(streams).for_each(|_| futures::future::ready(())))
    }

    async fn translate_loop(&mut self, stores: &GatewayStores, changed: &Notify, stop: &mut watch::Receiver<bool>) {
        // With host ownership, the Ingress side's caches too: a pass before them would see no
        // Ingress claim, give an Ingress's host to a later HTTPRoute and remember it so.
        let ingress_side = async {
            if let Some(h) = &self.hosts {
                futures::future::join(wait_store(h.ingresses.clone()), wait_store(h.classes.clone())).await;
            }
        };
        tokio::select! {
            _ = futures::future::join(ready(stores), ingress_side) => {}
            _ = stop.wait_for(|v| *v) => return,
        }
        tracing::info!("Gateway API caches synced");
        if let Some(named) = &self.named_secrets {
            named.watch_gateways(stores.gateways.clone());
            named.watch_listener_sets(stores.listener_sets.clone());
        }
        let mut status = StatusWriter::new(self.client.clone(), self.events.clone());
        let mut first = true;
        // Each router's rules left out, kept from pass to pass (most passes change no table).
        let mut unservable = UnservableRules::default();
        loop {
            let mut w = world(stores, &self.services, &self.secrets);
            w.limits = self.limits.clone();
            w.secret_namespaces = self.secret_namespaces.clone();
            let tenancy = self.hosts.as_ref().map(hosts::IngressHosts::tenancy);
            w.hosts = tenancy.clone();
            if let Some(named) = &self.named_secrets {
                let pending = w.secrets.iter().filter(|(_, i)| **i == crate::gateway::world::SecretInfo::Pending);
                named.relist_if_held_without_data(&self.secrets, pending.map(|(k, _)| k.clone()));
            }
            let p = &mut self.plane;
            let programmed = p.programmed.borrow_and_update().clone();
            let failures = p.failures.borrow_and_update().clone();
            let holds = p.holds.borrow_and_update().clone();
            let released = p.released.borrow_and_update().clone();
            let t = translate_observed(&w, &programmed, &failures, &holds, &mut unservable);
            let mut release = None;
            if let Some((h, before)) = self.hosts.as_ref().zip(tenancy.as_ref()) {
                release = h.after(&t, before).await;
            }
            // The first translation is always published, even when empty: the driver learns that
            // the tables are known (it collects the load balancers of Gateways gone then).
            let tables = Tables { routers: t.routers.clone(), fates: t.fates.clone() };
            self.routers.send_if_modified(|r| {
                let new = first || *r != tables;
                *r = tables;
                new
            });
            first = false;
            let released = self.finalize.then_some(&released);
            crate::controller::gateway::finalizers::write(&self.client, stores, &t.fates, released).await;
            status.write(stores, &t).await;
            let hosts = &self.hosts;
            let p = &mut self.plane;
            let ingress_claims = async {
                match hosts {
                    Some(h) => h.book.ingress_claims_changed.notified().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = changed.notified() => {}
                _ = ingress_claims => {}
                _ = programmed_changed(&mut p.programmed) => {}
                _ = programmed_changed(&mut p.failures) => {}
                _ = programmed_changed(&mut p.holds) => {}
                _ = programmed_changed(&mut p.released) => {}
                // A vacated host's grace ending is a change too (host ownership).
                _ = tokio::time::sleep(release.map_or(self.recheck, |r| r.min(self.recheck))) => {}
                _ = stop.wait_for(|v| *v) => return,
            }
            // Several changes at once (a `kubectl apply` of many objects) make one pass.
            tokio::time::sleep(self.debounce).await;
        }
    }
}

/// The next change of the data plane's addresses; never, once their sender is gone.
async fn programmed_changed<T>(rx: &mut watch::Receiver<T>) {
    if rx.changed().await.is_err() {
        std::future::pending::<()>().await;
    }
}

async fn ready(s: &GatewayStores) {
    let wait = |f: futures::future::BoxFuture<'static, ()>| f;
    let all = [
        wait(Box::pin(wait_store(s.classes.clone()))),
        wait(Box::pin(wait_store(s.gateways.clone()))),
        wait(Box::pin(wait_store(s.routes.clone()))),
        wait(Box::pin(wait_store(s.grants.clone()))),
        wait(Box::pin(wait_store(s.namespaces.clone()))),
        wait(Box::pin(wait_store(s.backend_tls.clone()))),
        wait(Box::pin(wait_store(s.listener_sets.clone()))),
        wait(Box::pin(wait_store(s.config_maps.clone()))),
    ];
    futures::future::join_all(all).await;
}

/// See `watches::wait_ready`: kube's readiness cell keeps one waker, so poll afresh.
async fn wait_store<K>(store: Store<K>)
where
    K: kube::Resource + Clone + 'static,
    K::DynamicType: std::hash::Hash + Eq + Clone,
{
    while tokio::time::timeout(Duration::from_millis(100), store.wait_until_ready()).await.is_err() {}
}

/// How often the loop runs without a Gateway API event (and probes absent CRDs again).
pub(crate) const GATEWAY_RECHECK: Duration = Duration::from_secs(30);

/// The Gateway loop of the leader, on the Ingress side's Service and Secret caches, and with
/// `routers` the driver of the Gateways' routers (`crate::controller::gateway::driver`), which reports their
/// addresses back. Without it the Gateways show `Programmed: False` (Pending). The driver takes
/// the Service changes the Service handler records in `ctx.gateway_services`.
pub fn spawn(
    client: &kube::Client,
    ctx: &crate::controller::context::Context,
    opts: crate::translate::TranslateOptions,
    routers: Option<GatewayBackends>,
    events: Arc<EventPublisher>,
    stop: watch::Receiver<bool>,
) -> Vec<tokio::task::JoinHandle<()>> {
    let (data_plane, plane) = DataPlane::new();
    let (routes_tx, routes_rx) = watch::channel(Tables::default());
    let run = GatewayLoop {
        client: client.clone(),
        services: ctx.stores.services.clone(),
        secrets: ctx.stores.secrets.clone(),
        events: Some(events.clone()),
        plane,
        finalize: routers.is_some(),
        routers: routes_tx,
        debounce: Duration::from_millis(500),
        recheck: GATEWAY_RECHECK,
        named_secrets: Some(ctx.stores.named_secrets.clone()),
        secret_namespaces: opts.tls.secret_namespaces.clone(),
        limits: routers.as_ref().map(|r| r.limits.clone()).unwrap_or_default(),
        hosts: opts.tenancy.host_ownership.then(|| hosts::IngressHosts {
            ingresses: ctx.stores.ingresses.clone(),
            classes: ctx.stores.classes.clone(),
            opts: opts.clone(),
            book: ctx.owner_book(),
        }),
    };
    let mut tasks = vec![tokio::spawn(run.run(stop.clone()))];
    if let Some(GatewayBackends { spawn, list, kept_grace, limits: _, admit }) = routers {
        let driver = GatewayDriver {
            stores: ctx.stores.clone(),
            opts,
            routes: routes_rx,
            data_plane,
            spawn,
            list,
            resync: GATEWAY_ROUTER_RESYNC,
            retry: GATEWAY_ROUTER_RETRY,
            service_changes: ctx.gateway_services.clone(),
            member_change_window: ctx.member_change_window,
            kept: KeptGrace::new(kept_grace, Some(events)),
            admit,
        };
        tasks.push(tokio::spawn(driver.run(stop)));
    }
    tasks
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::gateway::status::{GatewayStores, world};
    use crate::gateway::api::conversions_on_this_thread;
    use serde_json::json;

    fn route(name: &str, host: &str) -> Parsed<HTTPRoute> {
        serde_json::from_value(json!({
            "apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
            "metadata": {"name": name, "namespace": "shop"},
            "spec": {"parentRefs": [{"name": "gw"}], "hostnames": [host],
                     "rules": [{"backendRefs": [{"name": "web", "port": 80}]}]}
        }))
        .unwrap()
    }

    fn gateway(name: &str) -> Parsed<Gateway> {
        serde_json::from_value(json!({
            "apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
            "metadata": {"name": name, "namespace": "shop"},
            "spec": {"gatewayClassName": "kuryr", "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}]}
        }))
        .unwrap()
    }

    /// The objects of `events`, through the production path (conversion, then the cache).
    async fn reflected<G, D>(writer: reflector::store::Writer<D>, events: Vec<watcher::Event<Parsed<G>>>)
    where
        G: Send + 'static,
        D: Blank + for<'a> From<&'a G> + Clone + std::fmt::Debug + Send + Sync + 'static,
    {
        let watch = futures::stream::iter(events.into_iter().map(Ok));
        reflect_into(writer, converted(watch, None), Arc::new(Notify::new())).collect::<Vec<()>>().await;
    }

    /// Only a ConfigMap a Gateway names as its CA bundle (and the end of a list) wakes the loop:
    /// the controller's own ConfigMaps, written at every Sync, do not.
    #[test]
    fn only_the_named_ca_config_maps_wake_the_gateway_loop() {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
        use watcher::Event::{Apply, Delete, Init, InitApply, InitDone};
        let gw: crate::gateway::api::Gateway = serde_json::from_value(json!({
            "apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
            "metadata": {"name": "gw", "namespace": "shop"},
            "spec": {"gatewayClassName": "kuryr",
                     "tls": {"frontend": {"default": {"validation": {"caCertificateRefs": [
                         {"group": "", "kind": "ConfigMap", "name": "clients"},
                         {"group": "", "kind": "ConfigMap", "name": "partners", "namespace": "partner"}]}}}},
                     "listeners": [{"name": "https", "port": 443, "protocol": "HTTPS"}]}
        }))
        .unwrap();
        let (gateways, mut wg) = reflector::store();
        wg.apply_watcher_event(&Apply(gw));
        let cm = |ns: &str, name: &str| ConfigMap {
            metadata: ObjectMeta { namespace: Some(ns.into()), name: Some(name.into()), ..Default::default() },
            ..Default::default()
        };
        let matters = |ev: watcher::Event<ConfigMap>| ca_bundle_event_matters(&ev, &gateways);
        assert!(matters(Apply(cm("shop", "clients"))));
        assert!(matters(Delete(cm("shop", "clients"))));
        assert!(matters(Apply(cm("partner", "partners"))));
        assert!(!matters(Apply(cm("kuryr-l7-router", "kuryr-l7-router-stamps-x"))), "our own ConfigMaps");
        assert!(!matters(Apply(cm("partner", "clients"))), "same name, another namespace");
        assert!(!matters(InitApply(cm("shop", "clients"))), "one pass at the end of the list");
        assert!(!matters(Init));
        assert!(matters(InitDone));
    }

    /// A pass reads the cached domain objects: the conversions are one per watch event, however
    /// many passes run (each pass converted every object before).
    #[tokio::test]
    async fn each_object_is_converted_once_per_watch_event_and_never_by_a_pass() {
        use watcher::Event::{Apply, Delete, Init, InitApply, InitDone};
        let n = 30;
        let (classes, _) = reflector::store();
        let (gateways, wg) = reflector::store();
        let (routes, wr) = reflector::store();
        let (grants, _) = reflector::store();
        let (namespaces, _) = reflector::store();
        let (backend_tls, _) = reflector::store();
        let (listener_sets, _) = reflector::store();
        let (config_maps, _) = reflector::store();
        let stores = GatewayStores {
            classes,
            gateways,
            routes,
            grants,
            namespaces,
            backend_tls,
            listener_sets,
            config_maps,
            config_maps_readable: true,
        };
        let (services, _) = reflector::store();
        let (secrets, _) = reflector::store();
        let start = conversions_on_this_thread();
        reflected(wg, vec![Init, InitApply(gateway("gw")), InitDone]).await;
        let list = (0..n).map(|i| InitApply(route(&format!("r{i}"), "a.example.com")));
        let changes = [Apply(route("r0", "b.example.com")), Delete(route("r1", "a.example.com"))];
        let (tx, rx) = futures::channel::mpsc::unbounded();
        let mut watch = Box::pin(reflect_into(wr, converted(rx, None), Arc::new(Notify::new())));
        for e in std::iter::once(Init).chain(list).chain([InitDone]) {
            tx.unbounded_send(Ok(e)).unwrap();
            watch.next().await;
        }
        assert_eq!(conversions_on_this_thread() - start, 1 + n as u64, "one per object listed");
        for _ in 0..5 {
            assert_eq!(world(&stores, &services, &secrets).routes.len(), n);
        }
        assert_eq!(conversions_on_this_thread() - start, 1 + n as u64, "the passes converted nothing");
        for e in changes {
            tx.unbounded_send(Ok(e)).unwrap();
            watch.next().await;
        }
        let w = world(&stores, &services, &secrets);
        assert_eq!(conversions_on_this_thread() - start, 3 + n as u64, "one per event since");
        // The cache holds the changed object, converted, and not the deleted one.
        let r0 = w.routes.iter().find(|r| r.metadata.name.as_deref() == Some("r0")).unwrap();
        assert_eq!(r0.spec.hostnames, ["b.example.com"]);
        assert_eq!(w.routes.len(), n - 1);
        assert!(w.routes.iter().all(|r| r.metadata.name.as_deref() != Some("r1")));
    }
}
