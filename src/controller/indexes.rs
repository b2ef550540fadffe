//! Reverse indexes over the caches, kept from the watch events as they go: which Ingresses name
//! a Service or a TLS Secret, and which EndpointSlices belong to a Service. A Service event, an
//! endpoint change or a Secret renewal then costs a lookup, not a scan of every Ingress or every
//! EndpointSlice of the cluster (measured: docs/benchmarks.md, "Caches and indexes").
//!
//! An [`IndexedWriter`] applies each event to its kube store AND its indexes, so that tests
//! feeding stores by hand and the watches of `runtime` keep them the same way.

use crate::translate::namespace_of;
use crate::translate::pools::SERVICE_NAME_LABEL;
use crate::translate::slices::CompactSlice;
use k8s_openapi::api::networking::v1::Ingress;
use kube::runtime::reflector;
use kube::runtime::watcher;
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, RwLock};

/// (namespace, name) of an object.
pub(crate) type Key = (String, String);

fn key_of(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> Key {
    (namespace_of(meta).to_string(), meta.name.clone().unwrap_or_default())
}

/// Objects by the keys they name (see [`Index::apply`]).
#[derive(Debug, Default)]
struct ReverseIndex {
    /// Per object: the keys it names (to undo them on a change or a delete).
    names: HashMap<Key, Vec<Key>>,
    /// Per named key: the objects naming it.
    named_by: HashMap<Key, BTreeSet<Key>>,
    /// The objects of a relist in progress (`Init` … `InitDone`), swapped in at its end: until
    /// then the old state answers, as the kube store does.
    relist: Option<Vec<(Key, Vec<Key>)>>,
}

impl ReverseIndex {
    fn insert(&mut self, object: Key, named: Vec<Key>) {
        for n in &named {
            self.named_by.entry(n.clone()).or_default().insert(object.clone());
        }
        self.names.insert(object, named);
    }

    fn remove(&mut self, object: &Key) {
        for n in self.names.remove(object).unwrap_or_default() {
            if let Some(set) = self.named_by.get_mut(&n) {
                set.remove(object);
                if set.is_empty() {
                    self.named_by.remove(&n);
                }
            }
        }
    }
}

/// One reverse index, shared (cheap to clone) between the watch that keeps it and its readers.
#[derive(Clone, Debug, Default)]
pub struct Index(Arc<RwLock<ReverseIndex>>);

impl Index {
    /// Follows one watch event; `names` says which keys an object names.
    pub fn apply<K>(&self, event: &watcher::Event<K>, names: Names<K>)
    where
        K: kube::Resource,
    {
        let mut ix = self.0.write().expect("lock");
        match event {
            watcher::Event::Apply(o) => {
                let key = key_of(o.meta());
                ix.remove(&key);
                ix.insert(key, names(o));
            }
            watcher::Event::Delete(o) => ix.remove(&key_of(o.meta())),
            watcher::Event::Init => ix.relist = Some(Vec::new()),
            watcher::Event::InitApply(o) => {
                if let Some(relist) = ix.relist.as_mut() {
                    relist.push((key_of(o.meta()), names(o)));
                }
            }
            watcher::Event::InitDone => {
                if let Some(relist) = ix.relist.take() {
                    ix.names.clear();
                    ix.named_by.clear();
                    for (object, named) in relist {
                        ix.insert(object, named);
                    }
                }
            }
        }
    }

    /// The objects naming `key`, in (namespace, name) order.
    pub fn naming(&self, key: &Key) -> Vec<Key> {
        self.0.read().expect("lock").named_by.get(key).map(|s| s.iter().cloned().collect()).unwrap_or_default()
    }

    /// Whether any object names `key`.
    pub(crate) fn is_named(&self, key: &Key) -> bool {
        self.0.read().expect("lock").named_by.contains_key(key)
    }
}

/// The Services an Ingress routes to (default backend and every path), in its namespace.
pub(crate) fn services_of_ingress(ing: &Ingress) -> Vec<Key> {
    let Some(spec) = ing.spec.as_ref() else { return vec![] };
    let ns = namespace_of(&ing.metadata);
    let paths = spec.rules.iter().flatten().flat_map(|r| r.http.iter().flat_map(|h| &h.paths));
    let backends = spec.default_backend.iter().chain(paths.map(|p| &p.backend));
    let names: BTreeSet<&str> = backends.filter_map(|b| b.service.as_ref()).map(|s| s.name.as_str()).collect();
    names.into_iter().map(|n| (ns.to_string(), n.to_string())).collect()
}

/// (namespace, name) of every Secret an Ingress's `spec.tls` names.
pub(crate) fn tls_secrets_of(ing: &Ingress) -> Vec<(String, String)> {
    let ns = namespace_of(&ing.metadata);
    ing.spec
        .iter()
        .flat_map(|s| s.tls.iter().flatten())
        .filter_map(|t| t.secret_name.clone())
        .map(|name| (ns.to_string(), name))
        .collect()
}

/// The TLS Secrets an Ingress's `spec.tls` names.
pub(crate) fn secrets_of_ingress(ing: &Ingress) -> Vec<Key> {
    let mut out = tls_secrets_of(ing);
    out.sort();
    out.dedup();
    out
}

/// The Service of an EndpointSlice (its `kubernetes.io/service-name` label), if any.
pub fn service_of_slice(slice: &CompactSlice) -> Vec<Key> {
    let name = slice.metadata.labels.as_ref().and_then(|l| l.get(SERVICE_NAME_LABEL));
    name.map(|n| vec![(namespace_of(&slice.metadata).to_string(), n.clone())]).unwrap_or_default()
}

/// Every index the handlers read (each cheap to clone).
#[derive(Clone, Debug, Default)]
pub struct Indexes {
    /// Service (namespace, name) → the Ingresses routing to it.
    pub(crate) ingresses_by_service: Index,
    /// TLS Secret (namespace, name) → the Ingresses whose `spec.tls` names it.
    pub(crate) ingresses_by_secret: Index,
    /// Service (namespace, name) → its EndpointSlices.
    pub(crate) slices_by_service: Index,
}

/// Which keys an object names (one per index).
pub type Names<K> = fn(&K) -> Vec<Key>;

/// A kube store writer with the indexes of its kind: [`IndexedWriter::apply_watcher_event`]
/// keeps both.
pub struct IndexedWriter<K: kube::Resource<DynamicType = ()> + Clone + 'static> {
    store: reflector::store::Writer<K>,
    indexes: Vec<(Index, Names<K>)>,
}

impl<K> IndexedWriter<K>
where
    K: kube::Resource<DynamicType = ()> + Clone + 'static,
{
    pub fn new(store: reflector::store::Writer<K>, indexes: Vec<(Index, Names<K>)>) -> Self {
        Self { store, indexes }
    }

    /// Applies one event to the store, then to the indexes.
    pub fn apply_watcher_event(&mut self, event: &watcher::Event<K>) {
        self.store.apply_watcher_event(event);
        for (index, names) in &self.indexes {
            index.apply(event, *names);
        }
    }

    /// The store writer (for a reflector, which applies events itself) and what keeps the
    /// indexes from the same events (for the watch's observer, called after the reflector).
    pub(crate) fn into_parts(self) -> (reflector::store::Writer<K>, impl FnMut(&watcher::Event<K>) + Send + 'static) {
        let indexes = self.indexes;
        (self.store, move |event: &watcher::Event<K>| {
            for (index, names) in &indexes {
                index.apply(event, *names);
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::runtime::reflector::ObjectRef;
    use serde_json::json;
    use watcher::Event::*;

    fn slice_with(name: &str, svc: &str, endpoints: serde_json::Value) -> CompactSlice {
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "shop", "labels": {SERVICE_NAME_LABEL: svc}},
            "addressType": "IPv4", "endpoints": endpoints
        }))
        .unwrap()
    }

    fn slice(name: &str, svc: &str) -> CompactSlice {
        slice_with(name, svc, json!([]))
    }

    fn k(name: &str) -> Key {
        ("shop".into(), name.into())
    }

    #[test]
    fn follows_applies_label_changes_deletes_and_relists() {
        let ix = Index::default();
        let apply = |ev: watcher::Event<CompactSlice>| ix.apply(&ev, service_of_slice);
        apply(Apply(slice("web-a", "web")));
        apply(Apply(slice("web-b", "web")));
        apply(Apply(slice("api-a", "api")));
        assert_eq!(ix.naming(&k("web")), [k("web-a"), k("web-b")]);
        // A slice relabelled to another Service moves with it.
        apply(Apply(slice("web-b", "api")));
        assert_eq!(ix.naming(&k("web")), [k("web-a")]);
        assert_eq!(ix.naming(&k("api")), [k("api-a"), k("web-b")]);
        apply(Delete(slice("web-a", "web")));
        assert!(!ix.is_named(&k("web")));
        // A relist replaces everything at its end (a slice deleted meanwhile is forgotten).
        apply(Init);
        apply(InitApply(slice("new-a", "new")));
        assert_eq!(ix.naming(&k("api")), [k("api-a"), k("web-b")], "the old state serves until the relist ends");
        apply(InitDone);
        assert!(ix.naming(&k("api")).is_empty());
        assert_eq!(ix.naming(&k("new")), [k("new-a")]);
    }

    fn ingress(name: &str, services: &[&str], secret: Option<&str>) -> Ingress {
        let paths: Vec<_> = services
            .iter()
            .map(|s| json!({"path": "/", "pathType": "Prefix", "backend": {"service": {"name": s, "port": {"number": 80}}}}))
            .collect();
        let tls: Vec<_> = secret.iter().map(|s| json!({"secretName": s})).collect();
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "shop"},
            "spec": {"rules": [{"http": {"paths": paths}}], "tls": tls}
        }))
        .unwrap()
    }

    fn named(name: &str, kind: &str) -> serde_json::Value {
        json!({"metadata": {"name": name, "namespace": "shop"}, "kind": kind})
    }

    #[test]
    fn the_store_writers_keep_who_names_a_service_or_a_secret() {
        use crate::controller::context::StoreWriters;
        use crate::controller::ingress::{ingresses_naming, ingresses_naming_secret};
        let (stores, mut w) = StoreWriters::new();
        let web: k8s_openapi::api::core::v1::Service = serde_json::from_value(named("web", "Service")).unwrap();
        let api: k8s_openapi::api::core::v1::Service = serde_json::from_value(named("api", "Service")).unwrap();
        let tls: k8s_openapi::api::core::v1::Secret = serde_json::from_value(named("tls", "Secret")).unwrap();
        let names = |v: Vec<ObjectRef<Ingress>>| v.into_iter().map(|r| r.name).collect::<Vec<_>>();
        w.ingresses.apply_watcher_event(&Apply(ingress("a", &["web", "api"], Some("tls"))));
        w.ingresses.apply_watcher_event(&Apply(ingress("b", &["web"], None)));
        assert_eq!(names(ingresses_naming(&stores, &web)), ["a", "b"]);
        assert_eq!(names(ingresses_naming(&stores, &api)), ["a"]);
        assert_eq!(names(ingresses_naming_secret(&stores, &tls)), ["a"]);
        // a stops naming web and its Secret; b is deleted.
        w.ingresses.apply_watcher_event(&Apply(ingress("a", &["api"], None)));
        w.ingresses.apply_watcher_event(&Delete(ingress("b", &["web"], None)));
        assert!(ingresses_naming(&stores, &web).is_empty());
        assert_eq!(names(ingresses_naming(&stores, &api)), ["a"]);
        assert!(ingresses_naming_secret(&stores, &tls).is_empty());
    }

    #[test]
    fn a_services_endpoints_come_from_its_own_slices_only() {
        use crate::controller::context::StoreWriters;
        use crate::controller::services::members::endpoints_of;
        let (stores, mut w) = StoreWriters::new();
        let with_ip = |name: &str, svc: &str, ip: &str| {
            slice_with(name, svc, json!([{"addresses": [ip], "conditions": {"ready": true}}]))
        };
        w.slices.apply_watcher_event(&Apply(with_ip("web-a", "web", "10.0.0.1")));
        w.slices.apply_watcher_event(&Apply(with_ip("web-b", "web", "10.0.0.2")));
        w.slices.apply_watcher_event(&Apply(with_ip("api-a", "api", "10.0.0.3")));
        let web: k8s_openapi::api::core::v1::Service = serde_json::from_value(named("web", "Service")).unwrap();
        let opts = crate::translate::TranslateOptions::default();
        assert_eq!(endpoints_of(&web, &stores, &opts).len(), 2);
        w.slices.apply_watcher_event(&Delete(slice("web-b", "web")));
        assert_eq!(endpoints_of(&web, &stores, &opts).len(), 1);
    }
}
