//! The Kubernetes side of the Gateway translation: the [`World`] built from the caches, and the
//! status writes (GatewayClass, Gateway with its listeners, HTTPRoute parents) with the Events on
//! the objects whose input is bad. A status is written only when it changes (transition times
//! aside); a write that fails is logged and retried on the next pass, never blocking the others.

use crate::controller::outputs::events::{EventPublisher, UserEvent};
use crate::gateway::api::generated as k8s;
use crate::gateway::api::{Gateway, GatewayClass, HTTPRoute, Listener, ListenerSet, ListenerTls, ReferenceGrant};
use crate::gateway::build::Translation;
use crate::gateway::frontend::named_config_maps;
use crate::gateway::status::{Cond, render_class, render_gateway, render_listener_set, render_route, unchanged};
use crate::gateway::world::{World, ca_crt, secret_info};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, ObjectReference, Secret, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::reflector::{ObjectRef, Store};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;

/// The Gateway API caches, filled by the Gateway loop's watches: the domain objects, each
/// converted from the generated Kubernetes type once, when its watch event arrived
/// (`crate::controller::gateway::converted`).
#[derive(Clone)]
pub struct GatewayStores {
    pub classes: Store<GatewayClass>,
    pub gateways: Store<Gateway>,
    pub routes: Store<HTTPRoute>,
    /// Empty when the API server does not serve ReferenceGrant (every cross-namespace
    /// reference is then refused).
    pub grants: Store<ReferenceGrant>,
    pub namespaces: Store<Namespace>,
    /// Empty when the API server does not serve BackendTLSPolicy.
    pub backend_tls: Store<crate::gateway::api::BackendTLSPolicy>,
    /// Empty when the API server does not serve ListenerSet (Gateway API before v1.5).
    pub listener_sets: Store<ListenerSet>,
    /// Every ConfigMap, holding its `ca.crt` only (`crate::controller::slim::ca_bundle_only`):
    /// the CA bundles of the Gateways' client certificate validation.
    pub config_maps: Store<ConfigMap>,
    /// False when the controller may not list ConfigMaps (its RBAC): `config_maps` stays empty
    /// and every CA bundle reference says why.
    pub config_maps_readable: bool,
}

/// The translation's input from the caches: the cached Gateway API objects themselves (shared,
/// not copied nor converted). Only the Secrets our Gateways' listeners name are parsed (a cluster
/// may hold many TLS Secrets), and only the ConfigMaps their client certificate validations name
/// are read.
pub fn world(s: &GatewayStores, services: &Store<Service>, secrets: &Store<Secret>) -> World {
    let mut w = World {
        classes: s.classes.state(),
        gateways: s.gateways.state(),
        routes: s.routes.state(),
        grants: s.grants.state(),
        listener_sets: s.listener_sets.state(),
        ..World::default()
    };
    for p in s.backend_tls.state() {
        w.add_backend_tls(&p);
    }
    for ns in s.namespaces.state() {
        w.namespaces
            .insert(ns.metadata.name.clone().unwrap_or_default(), ns.metadata.labels.clone().unwrap_or_default());
    }
    for svc in services.state() {
        let info = crate::gateway::world::service_info(&svc);
        let key = (svc.metadata.namespace.clone().unwrap_or_default(), svc.metadata.name.clone().unwrap_or_default());
        w.services.insert(key, info);
    }
    let mut named: Vec<(String, String)> =
        w.gateways.iter().filter(|g| w.is_ours(g)).flat_map(|g| secret_refs(g)).collect();
    // The ListenerSets of our Gateways name Secrets of their own namespaces.
    for ls in w.listener_sets.iter() {
        let ours = crate::gateway::listener_sets::parent_of(ls)
            .and_then(|(ns, name)| w.gateway(&ns, &name))
            .is_some_and(|g| w.is_ours(g));
        if ours {
            named.extend(listener_secret_refs(&ls.metadata.namespace.clone().unwrap_or_default(), &ls.spec.listeners));
        }
    }
    for (ns, name) in named {
        if let Some(secret) = secrets.get(&ObjectRef::new(&name).within(&ns)) {
            w.secrets.insert((ns, name), secret_info(&secret));
        }
    }
    // Only the CA bundles our Gateways name are read (every namespace has ConfigMaps).
    w.config_maps_unread = !s.config_maps_readable;
    let cas: Vec<(String, String)> =
        w.gateways.iter().filter(|g| w.is_ours(g)).flat_map(|g| named_config_maps(g)).collect();
    for (ns, name) in cas {
        if let Some(cm) = s.config_maps.get(&ObjectRef::new(&name).within(&ns)) {
            w.ca_config_maps.insert((ns, name), ca_crt(&cm));
        }
    }
    w
}

/// The Secrets the Gateway's listeners name, (namespace, name).
fn secret_refs(gw: &Gateway) -> Vec<(String, String)> {
    listener_secret_refs(&gw.metadata.namespace.clone().unwrap_or_default(), &gw.spec.listeners)
}

/// The Secrets `listeners` of an object of namespace `ns` name, (namespace, name).
fn listener_secret_refs(ns: &str, listeners: &[Listener]) -> Vec<(String, String)> {
    let ns = ns.to_string();
    let tls = listeners.iter().filter_map(|l| l.tls.as_ref());
    tls.flat_map(|t: &ListenerTls| t.certificate_refs.iter())
        .map(|r| (r.namespace.clone().unwrap_or_else(|| ns.clone()), r.name.clone()))
        .collect()
}

/// The status writes of the Gateway loop, remembering what it wrote: the cache shows a write only
/// once its watch event arrives, and the next pass must not write the same status again.
pub(crate) struct StatusWriter {
    client: kube::Client,
    events: Option<Arc<EventPublisher>>,
    /// (kind, namespace, name) -> (the cached resourceVersion when written, the status written).
    written: HashMap<(String, String, String), (Option<String>, Value)>,
}

/// `null` for each empty list the status types leave out, so that a merge patch clears it.
fn with_nulls(mut v: Value, keys: &[&str]) -> Value {
    if let Some(m) = v.as_object_mut() {
        for k in keys {
            m.entry(*k).or_insert(Value::Null);
        }
    }
    v
}

impl StatusWriter {
    pub fn new(client: kube::Client, events: Option<Arc<EventPublisher>>) -> Self {
        Self { client, events, written: HashMap::new() }
    }

    /// Writes every status `t` computes that differs from the cached one.
    pub async fn write(&mut self, s: &GatewayStores, t: &Translation) {
        let now = Time(k8s_openapi::jiff::Timestamp::now());
        // Forget the objects gone from the translation (deleted, or no longer ours).
        let live: std::collections::HashSet<(&str, &str, &str)> =
            (t.classes.iter().map(|c| ("GatewayClass", "", c.name.as_str())))
                .chain(t.gateways.iter().map(|g| ("Gateway", g.namespace.as_str(), g.name.as_str())))
                .chain(t.routes.iter().map(|r| ("HTTPRoute", r.namespace.as_str(), r.name.as_str())))
                .chain(t.listener_sets.iter().map(|l| ("ListenerSet", l.namespace.as_str(), l.name.as_str())))
                .collect();
        self.written.retain(|(k, ns, n), _| live.contains(&(k.as_str(), ns.as_str(), n.as_str())));
        for o in &t.classes {
            let Some(obj) = s.classes.get(&ObjectRef::new(&o.name)) else { continue };
            let old = obj.status.as_ref();
            let new = render_class(o, old, &now);
            if unchanged(old, &new) {
                continue;
            }
            let body = with_nulls(serde_json::to_value(&new).unwrap_or_default(), &["supportedFeatures"]);
            let bad = bad_conditions(std::slice::from_ref(&o.accepted), "");
            self.patch(Api::<k8s::GatewayClass>::all(self.client.clone()), &obj.metadata, body, bad).await;
        }
        for o in &t.gateways {
            let Some(obj) = s.gateways.get(&ObjectRef::new(&o.name).within(&o.namespace)) else { continue };
            let old = obj.status.as_ref();
            let new = render_gateway(o, old, &now);
            if unchanged(old, &new) {
                continue;
            }
            let body = with_nulls(serde_json::to_value(&new).unwrap_or_default(), &["addresses", "listeners"]);
            let mut bad = bad_conditions(&o.conditions, "");
            for l in &o.listeners {
                bad.extend(bad_conditions(&l.conditions, &format!("listener {}: ", l.name)));
            }
            self.patch(Api::<k8s::Gateway>::namespaced(self.client.clone(), &o.namespace), &obj.metadata, body, bad)
                .await;
        }
        for o in &t.listener_sets {
            let Some(obj) = s.listener_sets.get(&ObjectRef::new(&o.name).within(&o.namespace)) else { continue };
            let old = obj.status.as_ref();
            let new = render_listener_set(o, old, &now);
            if unchanged(old, &new) {
                continue;
            }
            let body = with_nulls(serde_json::to_value(&new).unwrap_or_default(), &["listeners"]);
            let mut bad = bad_conditions(&o.conditions, "");
            for l in &o.listeners {
                bad.extend(bad_conditions(&l.conditions, &format!("listener {}: ", l.name)));
            }
            let api = Api::<k8s::ListenerSet>::namespaced(self.client.clone(), &o.namespace);
            self.patch(api, &obj.metadata, body, bad).await;
        }
        for o in &t.routes {
            let Some(obj) = s.routes.get(&ObjectRef::new(&o.name).within(&o.namespace)) else { continue };
            let old = obj.status.as_ref();
            let new = render_route(o, old, &now);
            if unchanged(old, &new) {
                continue;
            }
            let body = serde_json::to_value(&new).unwrap_or_default();
            let mut bad = Vec::new();
            for p in &o.parents {
                bad.extend(bad_conditions(&p.conditions, &format!("parent {}: ", p.parent_ref.name)));
            }
            self.patch(Api::<k8s::HTTPRoute>::namespaced(self.client.clone(), &o.namespace), &obj.metadata, body, bad)
                .await;
        }
    }

    /// Patches the status of the object of kind `K` and metadata `meta` to `status` unless this
    /// very status was written over the same cached version; then publishes the Events for its
    /// bad input.
    async fn patch<K>(&mut self, api: Api<K>, meta: &ObjectMeta, status: Value, bad: Vec<UserEvent>)
    where
        K: kube::Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
    {
        let name = meta.name.clone().unwrap_or_default();
        let key = (K::kind(&()).into_owned(), meta.namespace.clone().unwrap_or_default(), name.clone());
        let stripped = strip(&status);
        if self.written.get(&key) == Some(&(meta.resource_version.clone(), stripped.clone())) {
            return;
        }
        let patch = Patch::Merge(json!({ "status": status }));
        match api.patch_status(&name, &PatchParams::default(), &patch).await {
            Ok(_) => {
                tracing::info!(kind = %key.0, namespace = %key.1, name = %key.2, "Gateway API status written");
                self.written.insert(key.clone(), (meta.resource_version.clone(), stripped));
            }
            Err(e) => {
                tracing::warn!(kind = %key.0, namespace = %key.1, name = %key.2, error = %e, "status write failed (retried on the next pass)");
                return;
            }
        }
        let Some(events) = &self.events else { return };
        let regarding = reference::<K>(meta);
        for ev in bad {
            if let Err(e) = events.publish(&ev, &regarding).await {
                tracing::warn!(kind = %key.0, name = %key.2, error = %e, "cannot publish an Event");
            }
        }
    }
}

fn strip(v: &Value) -> Value {
    let mut v = v.clone();
    fn walk(v: &mut Value) {
        match v {
            Value::Object(m) => {
                m.remove("lastTransitionTime");
                m.values_mut().for_each(walk);
            }
            Value::Array(a) => a.iter_mut().for_each(walk),
            _ => {}
        }
    }
    walk(&mut v);
    v
}

/// The Warning Events for the conditions that report bad input: a condition that should be True
/// and is not (Accepted, ResolvedRefs), or `Conflicted` True. `Programmed` False while the load
/// balancer is being built (`Pending`) or because the input is invalid is no news: no Event; a
/// load balancer that failed (`NoResources`, the message naming the error) is one, and so are an
/// address that cannot be used (`AddressNotUsable`) and writes Octavia or Barbican hold
/// (`crate::gateway::holds`).
pub(crate) fn bad_conditions(conds: &[Cond], prefix: &str) -> Vec<UserEvent> {
    conds
        .iter()
        .filter(|c| match c.kind {
            "Accepted" | "ResolvedRefs" => !c.ok,
            "Conflicted" => c.ok,
            "Programmed" => {
                !c.ok
                    && (matches!(c.reason.as_str(), "NoResources" | "AddressNotUsable")
                        || c.message.starts_with(crate::gateway::holds::HELD))
            }
            _ => false,
        })
        .map(|c| UserEvent::warning(&c.reason, "Status", format!("{prefix}{}", c.message)))
        .collect()
}

pub(crate) fn reference<K: kube::Resource<DynamicType = ()>>(meta: &ObjectMeta) -> ObjectReference {
    ObjectReference {
        api_version: Some(K::api_version(&()).into_owned()),
        kind: Some(K::kind(&()).into_owned()),
        namespace: meta.namespace.clone(),
        name: meta.name.clone(),
        uid: meta.uid.clone(),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_for_bad_input_only() {
        let conds = [
            Cond::no("Accepted", "NotAllowedByListeners", "no listener allows the route"),
            Cond::yes("ResolvedRefs", "ResolvedRefs", "ok"),
            Cond::yes("Conflicted", "HostnameConflict", "two listeners on port 80 share foo.example.com"),
            Cond::no("Programmed", "Pending", "waiting for the load balancer"),
            Cond::no("Programmed", "NoResources", "the load balancer failed: quota: no more load balancers"),
        ];
        let evs = bad_conditions(&conds, "parent gw: ");
        let got: Vec<(&str, &str)> = evs.iter().map(|e| (e.reason.as_str(), e.message.as_str())).collect();
        assert_eq!(
            got,
            [
                ("NotAllowedByListeners", "parent gw: no listener allows the route"),
                ("HostnameConflict", "parent gw: two listeners on port 80 share foo.example.com"),
                ("NoResources", "parent gw: the load balancer failed: quota: no more load balancers")
            ]
        );
    }

    #[test]
    fn empty_lists_are_cleared_by_the_merge_patch() {
        let v = with_nulls(json!({"conditions": []}), &["addresses", "listeners"]);
        assert_eq!(v, json!({"conditions": [], "addresses": null, "listeners": null}));
        let kept = with_nulls(json!({"addresses": [{"type": "IPAddress", "value": "192.0.2.1"}]}), &["addresses"]);
        assert_eq!(kept["addresses"][0]["value"], "192.0.2.1");
    }
}
