//! Which Services have endpoints on which Node, kept from the endpoint watch as it goes, so that
//! a Node label change (zone, node pool: member weights change) re-reconciles only the Services
//! with an endpoint on that Node: a cost in proportion to the pools it affects, not to the
//! cluster (every Service re-reconciled on every Node change, before).

use crate::translate::pools::SERVICE_NAME_LABEL;
use crate::translate::slices::CompactSlice;
use k8s_openapi::api::core::v1::{Endpoints, Service};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use std::collections::{BTreeSet, HashMap};

/// An endpoint source (an EndpointSlice or core Endpoints): its Service and the Nodes its
/// endpoints are on.
pub(crate) trait EndpointSource {
    /// (namespace, name) of the source object itself.
    fn key(&self) -> (String, String);
    fn service(&self) -> Option<ObjectRef<Service>>;
    fn nodes(&self) -> BTreeSet<String>;
}

impl EndpointSource for CompactSlice {
    fn key(&self) -> (String, String) {
        (self.metadata.namespace.clone().unwrap_or_default(), self.metadata.name.clone().unwrap_or_default())
    }
    fn service(&self) -> Option<ObjectRef<Service>> {
        let name = self.metadata.labels.as_ref()?.get(SERVICE_NAME_LABEL)?;
        Some(ObjectRef::new(name).within(self.metadata.namespace.as_deref()?))
    }
    fn nodes(&self) -> BTreeSet<String> {
        self.endpoints.iter().filter_map(|e| e.node.as_deref().map(String::from)).collect()
    }
}

impl EndpointSource for Endpoints {
    fn key(&self) -> (String, String) {
        (self.metadata.namespace.clone().unwrap_or_default(), self.metadata.name.clone().unwrap_or_default())
    }
    fn service(&self) -> Option<ObjectRef<Service>> {
        Some(ObjectRef::new(self.metadata.name.as_deref()?).within(self.metadata.namespace.as_deref()?))
    }
    fn nodes(&self) -> BTreeSet<String> {
        let subsets = self.subsets.iter().flatten();
        let addresses =
            subsets.flat_map(|s| s.addresses.iter().flatten().chain(s.not_ready_addresses.iter().flatten()));
        addresses.filter_map(|a| a.node_name.clone()).collect()
    }
}

/// The Services with endpoints on each Node.
#[derive(Debug, Default)]
pub struct EndpointNodes {
    /// Per source object: its Service and Nodes (to undo its contribution on a change).
    sources: HashMap<(String, String), (ObjectRef<Service>, BTreeSet<String>)>,
    /// Per Node: the Services with an endpoint on it, with the number of sources saying so.
    by_node: HashMap<String, HashMap<ObjectRef<Service>, usize>>,
    /// The sources of a relist in progress (`Init` … `InitDone`), swapped in at its end.
    relist: Option<Vec<Source>>,
}

/// One endpoint source object: its Service, its own (namespace, name), its Nodes.
type Source = (ObjectRef<Service>, (String, String), BTreeSet<String>);

impl EndpointNodes {
    /// Follows one event of the endpoint watch.
    pub(crate) fn apply<K: EndpointSource>(&mut self, event: &watcher::Event<K>) {
        match event {
            watcher::Event::Apply(o) => {
                self.remove(&o.key());
                if let Some(svc) = o.service() {
                    self.insert(svc, o.key(), o.nodes());
                }
            }
            watcher::Event::Delete(o) => self.remove(&o.key()),
            watcher::Event::Init => self.relist = Some(Vec::new()),
            watcher::Event::InitApply(o) => {
                if let (Some(relist), Some(svc)) = (self.relist.as_mut(), o.service()) {
                    relist.push((svc, o.key(), o.nodes()));
                }
            }
            watcher::Event::InitDone => {
                if let Some(relist) = self.relist.take() {
                    *self = Self::default();
                    for (svc, key, nodes) in relist {
                        self.insert(svc, key, nodes);
                    }
                }
            }
        }
    }

    /// The Services with an endpoint on `node`.
    pub(crate) fn services_on(&self, node: &str) -> Vec<ObjectRef<Service>> {
        let mut out: Vec<_> = self.by_node.get(node).map(|m| m.keys().cloned().collect()).unwrap_or_default();
        out.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
        out
    }

    fn insert(&mut self, svc: ObjectRef<Service>, key: (String, String), nodes: BTreeSet<String>) {
        for n in &nodes {
            *self.by_node.entry(n.clone()).or_default().entry(svc.clone()).or_default() += 1;
        }
        self.sources.insert(key, (svc, nodes));
    }

    fn remove(&mut self, key: &(String, String)) {
        let Some((svc, nodes)) = self.sources.remove(key) else { return };
        for n in nodes {
            let Some(services) = self.by_node.get_mut(&n) else { continue };
            if let Some(count) = services.get_mut(&svc) {
                *count -= 1;
                if *count == 0 {
                    services.remove(&svc);
                }
            }
            if services.is_empty() {
                self.by_node.remove(&n);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn slice(name: &str, svc: &str, nodes: &[&str]) -> CompactSlice {
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "shop", "labels": {SERVICE_NAME_LABEL: svc}},
            "addressType": "IPv4",
            "endpoints": nodes.iter().map(|n| json!({"addresses": ["10.0.0.1"], "nodeName": n})).collect::<Vec<_>>()
        }))
        .unwrap()
    }

    fn names(v: Vec<ObjectRef<Service>>) -> Vec<String> {
        v.into_iter().map(|r| r.name).collect()
    }

    #[test]
    fn follows_applies_deletes_and_relists() {
        use watcher::Event::*;
        let mut idx = EndpointNodes::default();
        idx.apply(&Apply(slice("web-a", "web", &["n1", "n2"])));
        idx.apply(&Apply(slice("web-b", "web", &["n2"])));
        idx.apply(&Apply(slice("api-a", "api", &["n2", "n3"])));
        assert_eq!(names(idx.services_on("n1")), ["web"]);
        assert_eq!(names(idx.services_on("n2")), ["api", "web"]);
        assert!(idx.services_on("n9").is_empty());
        // web-a moves off n1 and n2; web-b still keeps web on n2.
        idx.apply(&Apply(slice("web-a", "web", &["n3"])));
        assert!(idx.services_on("n1").is_empty());
        assert_eq!(names(idx.services_on("n2")), ["api", "web"]);
        assert_eq!(names(idx.services_on("n3")), ["api", "web"]);
        idx.apply(&Delete(slice("web-b", "web", &[])));
        assert_eq!(names(idx.services_on("n2")), ["api"]);
        // A relist replaces everything at its end (a slice deleted meanwhile is forgotten).
        idx.apply::<CompactSlice>(&Init);
        idx.apply(&InitApply(slice("api-a", "api", &["n1"])));
        assert_eq!(names(idx.services_on("n3")), ["api", "web"], "the old state serves until the relist ends");
        idx.apply::<CompactSlice>(&InitDone);
        assert_eq!(names(idx.services_on("n1")), ["api"]);
        assert!(idx.services_on("n3").is_empty());
    }
}
