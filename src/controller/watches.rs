//! The watches behind the controller's caches: one watch per kind feeding its cache and the
//! Controllers' triggers, the caches' readiness, and which Node changes matter (moved out of
//! `runtime`, which wires them).

use crate::controller::context::Stores;
use crate::controller::services::endpoint_nodes::EndpointNodes;
use crate::translate::node_members::NodeShape;
use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::{Node, Service};
use kube::api::Api;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use std::collections::HashMap;
use std::time::Duration;
use tokio::task::JoinHandle;

/// Waits until `store` has listed its objects (or its writer is gone).
///
/// kube's store readiness cell (`DelayedInit`, a futures oneshot) keeps ONE waker: of two tasks
/// waiting on the same store at once, only the one that polled last is woken. Each Controller
/// waits on its own store (Ingress, Service) while [`caches_synced`] waits on it too, so the
/// caches could stay "not synced" forever, every reconcile blocked in `wait_caches` and /readyz
/// at 503 (found by tests/it/controller_runtime.rs). Polling afresh every 100 ms does not depend on
/// that wake-up; a Controller that lost it is re-polled by its scheduler's timers as soon as it
/// has anything to reconcile.
async fn wait_ready<K>(store: &Store<K>)
where
    K: kube::Resource + Clone + 'static,
    K::DynamicType: std::hash::Hash + Eq + Clone,
{
    while tokio::time::timeout(Duration::from_millis(100), store.wait_until_ready()).await.is_err() {}
}

/// Resolves once every store in use has listed its objects (EndpointSlices or Endpoints, as
/// configured).
pub(crate) async fn caches_synced(stores: Stores, use_endpoint_slices: bool) {
    wait_ready(&stores.ingresses).await;
    wait_ready(&stores.classes).await;
    wait_ready(&stores.services).await;
    wait_ready(&stores.nodes).await;
    wait_ready(&stores.secrets).await;
    if use_endpoint_slices {
        wait_ready(&stores.slices).await;
    } else {
        wait_ready(&stores.endpoints).await;
    }
}

/// A watch stream feeding `writer`'s store; errors are logged and retried with backoff.
pub(crate) fn reflect<K>(
    writer: reflector::store::Writer<K>,
    api: Api<K>,
) -> impl Stream<Item = watcher::Event<K>> + Send + 'static
where
    K: kube::Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
{
    reflect_with(writer, api, watcher::Config::default())
}

/// [`reflect`] with a watch configuration (selectors). Objects are slimmed before the cache
/// ([`crate::controller::slim`]).
fn reflect_with<K>(
    writer: reflector::store::Writer<K>,
    api: Api<K>,
    config: watcher::Config,
) -> impl Stream<Item = watcher::Event<K>> + Send + 'static
where
    K: kube::Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
{
    let watch = watcher(api, config).default_backoff().modify(crate::controller::slim::slim::<K>);
    reflector::reflector(writer, watch).filter_map(|r| async move {
        match r {
            Ok(ev) => Some(ev),
            Err(e) => {
                tracing::warn!(kind = %K::kind(&()), error = %e, "watch error (retrying)");
                None
            }
        }
    })
}

/// The shape last seen per Node ([`NodeShape`]: labels, Ready, unschedulable, draining,
/// InternalIPs), to tell a change that can move members (zone, node pool, a node-port member
/// joining or leaving) from the many Node updates that only renew their status.
#[derive(Default)]
pub(crate) struct NodeLabels {
    seen: HashMap<String, NodeShape>,
}

impl NodeLabels {
    /// The Node whose shape `ev` changes (None for a heartbeat).
    pub(crate) fn changed(&mut self, ev: &watcher::Event<Node>) -> Option<Node> {
        match ev {
            watcher::Event::Apply(n) | watcher::Event::InitApply(n) => {
                let name = n.metadata.name.clone().unwrap_or_default();
                let shape = NodeShape::of(n);
                (self.seen.get(&name) != Some(&shape)).then(|| {
                    self.seen.insert(name, shape);
                    n.clone()
                })
            }
            watcher::Event::Delete(n) => {
                self.seen.remove(n.metadata.name.as_deref().unwrap_or_default()).is_some().then(|| n.clone())
            }
            watcher::Event::InitDone | watcher::Event::Init => None,
        }
    }
}

/// The Services a Node change can re-weight: those with an endpoint on the Node (its zone or
/// node pool decides their members), those whose pools the last Sync weighted by zone (a Node
/// changing zones moves CPU between zones, which weighs every zone-aware pool), and those of
/// node-port pools (the Node may join or leave every one of them). Not the Services weighted
/// evenly elsewhere: their members do not depend on this Node.
pub fn node_change_targets(
    index: &EndpointNodes,
    synced: Option<&crate::model::DesiredRouter>,
    node: &Node,
) -> Vec<ObjectRef<Service>> {
    let mut out = index.services_on(node.metadata.name.as_deref().unwrap_or_default());
    let even = ["not_zone_aware", "no_endpoints"];
    let zone_aware = synced.iter().flat_map(|d| d.pools.values());
    let node_port = |p: &crate::model::Pool| p.member_mode == crate::model::MemberMode::NodePort;
    for pool in
        zone_aware.filter(|p| node_port(p) || !even.contains(&crate::translate::zone::weighting_rule(&p.weighting)))
    {
        for s in pool.feeders().into_iter().filter(|s| s.is_service()) {
            out.push(ObjectRef::new(&s.name).within(&s.namespace));
        }
    }
    out.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    out.dedup();
    out
}

/// The objects an event touches (applied or deleted): what a Controller's trigger maps.
fn touched<K: Clone>(ev: &watcher::Event<K>) -> Option<K> {
    match ev {
        watcher::Event::Apply(o) | watcher::Event::InitApply(o) | watcher::Event::Delete(o) => Some(o.clone()),
        watcher::Event::Init | watcher::Event::InitDone => None,
    }
}

/// ONE watch of `K` feeding its cache (`writer`); `observe` sees each event after the cache
/// applied it, and every object touched is handed to each of the `consumers` returned (the
/// Controllers' triggers), so that no kind is watched twice.
#[allow(clippy::type_complexity)]
pub(crate) fn watch_shared<K>(
    writer: reflector::store::Writer<K>,
    api: Api<K>,
    config: watcher::Config,
    consumers: usize,
    mut observe: impl FnMut(&watcher::Event<K>) + Send + 'static,
) -> (JoinHandle<()>, Vec<futures::stream::BoxStream<'static, Result<K, watcher::Error>>>)
where
    K: kube::Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
{
    let (txs, rxs): (Vec<_>, Vec<_>) = (0..consumers).map(|_| futures::channel::mpsc::unbounded::<K>()).unzip();
    let task = tokio::spawn(reflect_with(writer, api, config).for_each(move |ev| {
        observe(&ev);
        if let Some(obj) = touched(&ev) {
            for tx in &txs {
                let _ = tx.unbounded_send(obj.clone());
            }
        }
        futures::future::ready(())
    }));
    (task, rxs.into_iter().map(|rx| rx.map(Ok).boxed()).collect())
}
