//! The Members path of one Service, without translating the cluster: the Service's pools, as
//! the last Sync built them, refilled from that Service's own endpoints.
//!
//! The last successful Sync's desired state says which pools the Service fills and how (port,
//! algorithm, health monitor); only the members change between Syncs. [`service_members`] is
//! pure: the Service, its endpoints (digested in a [`SliceCache`]), the Nodes, that desired
//! state. It also says when the change is structural after all (a pool the last Sync did not
//! build, a Service port gone, a health-monitor annotation changed): then the caller Syncs.

use crate::controller::context::Stores;
use crate::model::{DesiredRouter, KubeRef, Pool, Warning};
use crate::translate::members::{NodeIndex, SliceCache, endpoints_as_slices};
use crate::translate::node_members::{feed_members, pool_health_monitor, service_member_mode};
use crate::translate::pools::pool_mode;
use crate::translate::split::{FeedMembers, split_members};
use crate::translate::{TranslateOptions, namespace_of};
use k8s_openapi::api::core::v1::{Node, Service, ServicePort};
use kube::runtime::reflector::ObjectRef;
use std::sync::Arc;

/// What one Service's endpoints make of its pools.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ServiceMembers {
    /// The Service's pools with their members of now (same result as a full translation).
    pub pools: Vec<Pool>,
    /// The translation's warnings about this Service (`NoEndpoints`, `EndpointPortNotFound`,
    /// `InvalidHealthMonitor`), worded as the full translation words them.
    pub warnings: Vec<Warning>,
    /// Why a Sync must handle the change instead (None: member updates suffice).
    pub needs_sync: Option<String>,
}

/// Another Service feeding a split pool, with its endpoints, as the caches hold them now
/// (`None`: not in the cache).
pub type OtherFeed<'a> = &'a dyn Fn(&KubeRef) -> Option<(Arc<Service>, SliceCache)>;

/// The pools `pool_names` of `service`, refilled from `endpoints` (see the module docs). A split
/// pool is re-weighed over all its Services: the others' endpoints come from `other`.
pub fn service_members(
    service: &Service,
    pool_names: &[String],
    synced: &DesiredRouter,
    endpoints: &SliceCache,
    other: OtherFeed<'_>,
    nodes: &NodeIndex<'_>,
    opts: &TranslateOptions,
) -> ServiceMembers {
    let me = KubeRef::service(namespace_of(&service.metadata), service.metadata.name.as_deref().unwrap_or(""));
    let mut out = ServiceMembers::default();
    // The mode's own warning is told with the members (`feed_members`).
    let mode = service_member_mode(service, opts, &mut Vec::new());
    let monitor = pool_health_monitor(service, mode, opts, &mut out.warnings);
    for name in pool_names {
        let Some(pool) = synced.pools.get(name) else {
            out.needs_sync = Some(format!("pool {name} is not on the router yet"));
            continue;
        };
        // The pool's health monitor is its (first) Service's.
        if pool.service == me && synced.health_monitors.get(name) != monitor.as_ref() {
            out.needs_sync = Some(format!("{me}: health monitor of pool {name} changed"));
        }
        let refilled = if pool.split.is_empty() {
            one_service(service, &me, pool, endpoints, nodes, opts, &mut out.warnings)
        } else {
            split_pool(service, &me, pool, endpoints, other, nodes, opts, &mut out.warnings)
        };
        match refilled {
            Ok(p) => out.pools.push(p),
            Err(why) => out.needs_sync = Some(why),
        }
    }
    out.warnings.sort();
    out.warnings.dedup();
    out
}

/// A pool of `service` alone, refilled; `Err`: why a Sync must build it instead.
fn one_service(
    service: &Service,
    me: &KubeRef,
    pool: &Pool,
    endpoints: &SliceCache,
    nodes: &NodeIndex<'_>,
    opts: &TranslateOptions,
    warnings: &mut Vec<Warning>,
) -> Result<Pool, String> {
    let Some(sp) = service_port(service, &pool.service_port) else {
        return Err(format!("{me}: port {} is gone", pool.service_port));
    };
    let (members, weighting, mode) = feed_members(service, sp, endpoints, nodes, opts, &pool.name, warnings);
    if mode != pool.member_mode {
        return Err(format!("{me}: member mode of pool {} changed to {mode}", pool.name));
    }
    Ok(Pool { members, weighting, ..pool.clone() })
}

/// A split pool, re-weighed over all its Services (the same [`split_members`] as the full
/// translation's); only `service`'s own warnings are kept (the others' endpoints did not
/// change, nor did their warnings). `Err`: why a Sync must build it instead.
#[allow(clippy::too_many_arguments)]
fn split_pool(
    service: &Service,
    me: &KubeRef,
    pool: &Pool,
    endpoints: &SliceCache,
    other: OtherFeed<'_>,
    nodes: &NodeIndex<'_>,
    opts: &TranslateOptions,
    warnings: &mut Vec<Warning>,
) -> Result<Pool, String> {
    let mut feeds = Vec::with_capacity(pool.split.len());
    let mut modes = Vec::with_capacity(pool.split.len());
    for feed in &pool.split {
        let fetched;
        let (svc, cache) = if feed.service == *me {
            (service, endpoints)
        } else {
            fetched = other(&feed.service).ok_or_else(|| format!("{} of pool {} is gone", feed.service, pool.name))?;
            (fetched.0.as_ref(), &fetched.1)
        };
        let Some(sp) = service_port(svc, &feed.service_port) else {
            return Err(format!("{}: port {} is gone", feed.service, feed.service_port));
        };
        let mut told = Vec::new();
        let (members, weighting, mode) = feed_members(svc, sp, cache, nodes, opts, &pool.name, &mut told);
        if feed.service == *me {
            warnings.extend(told);
        }
        modes.push(mode);
        feeds.push(FeedMembers { service: feed.service.clone(), weight: feed.weight, members, weighting });
    }
    if pool_mode(&modes) != pool.member_mode {
        return Err(format!("{me}: member mode of pool {} changed", pool.name));
    }
    let (members, weighting) = split_members(&feeds);
    Ok(Pool { members, weighting, ..pool.clone() })
}

/// The Service port a pool serves: by name when the port is named, else by number (as the
/// translation names `Pool::service_port`).
fn service_port<'a>(service: &'a Service, port: &str) -> Option<&'a ServicePort> {
    let ports = service.spec.as_ref()?.ports.as_ref()?;
    ports.iter().find(|p| p.name.as_deref().filter(|n| !n.is_empty()).unwrap_or(&p.port.to_string()) == port)
}

/// One Service's endpoints from the caches, digested: its EndpointSlices (found by the index of
/// their `kubernetes.io/service-name` label, not by a scan of every slice), or its core Endpoints.
pub fn endpoints_of(service: &Service, stores: &Stores, opts: &TranslateOptions) -> SliceCache {
    let ns = namespace_of(&service.metadata);
    let name = service.metadata.name.as_deref().unwrap_or("");
    let mut cache = SliceCache::new(opts.vip_family);
    if opts.use_endpoint_slices {
        for (ns, slice) in stores.indexes.slices_by_service.naming(&(ns.to_string(), name.to_string())) {
            if let Some(s) = stores.slices.get(&ObjectRef::new(&slice).within(&ns)) {
                cache.upsert(&s);
            }
        }
    } else if let Some(e) = stores.endpoints.get(&ObjectRef::new(name).within(ns)) {
        for s in endpoints_as_slices(&e) {
            cache.upsert(&s);
        }
    }
    cache
}

/// Nodes by name, borrowed from the cache's snapshot `nodes`.
pub(crate) fn node_index(nodes: &[Arc<Node>]) -> NodeIndex<'_> {
    nodes.iter().map(|n| (n.metadata.name.clone().unwrap_or_default(), n.as_ref())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::translate::IpFamily;
    use crate::translate::pools::SERVICE_NAME_LABEL;
    use crate::translate::slices::CompactSlice;
    use crate::translate::{Inputs, translate};
    use serde_json::json;

    fn service(annotations: serde_json::Value) -> Service {
        serde_json::from_value(json!({
            "metadata": {"name": "web", "namespace": "shop", "annotations": annotations},
            "spec": {"ports": [{"name": "http", "port": 80, "targetPort": 8080}]}
        }))
        .unwrap()
    }

    fn slice(ips: &[&str]) -> CompactSlice {
        serde_json::from_value(json!({
            "metadata": {"name": "web-abc", "namespace": "shop", "labels": {SERVICE_NAME_LABEL: "web"}},
            "addressType": "IPv4",
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
            "endpoints": ips.iter().map(|ip| json!({"addresses": [ip], "conditions": {"ready": true}})).collect::<Vec<_>>()
        }))
        .unwrap()
    }

    fn ingress() -> k8s_openapi::api::networking::v1::Ingress {
        serde_json::from_value(json!({
            "metadata": {"name": "web", "namespace": "shop", "annotations": {"kubernetes.io/ingress.class": "kuryr"}},
            "spec": {"rules": [{"host": "shop.example.com", "http": {"paths": [
                {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "web", "port": {"name": "http"}}}}
            ]}}]}
        }))
        .unwrap()
    }

    fn inputs(svc: Service, ips: &[&str]) -> Inputs {
        Inputs {
            ingresses: vec![ingress()],
            services: vec![svc],
            endpoint_slices: vec![slice(ips)],
            ..Default::default()
        }
    }

    fn none(_: &KubeRef) -> Option<(Arc<Service>, SliceCache)> {
        None
    }

    fn cache(ips: &[&str]) -> SliceCache {
        let mut c = SliceCache::new(IpFamily::V4);
        c.upsert(&slice(ips));
        c
    }

    /// The Members path gives the pools and the Service warnings the full translation gives.
    #[test]
    fn same_pools_and_warnings_as_the_full_translation() {
        let opts = TranslateOptions::default();
        let synced = translate(&inputs(service(json!({})), &["10.0.0.1"]), &opts);
        let names: Vec<String> = synced.pools.keys().cloned().collect();
        assert_eq!(names.len(), 1, "{synced:?}");
        for ips in [&["10.0.0.1", "10.0.0.2"][..], &[][..]] {
            let full = translate(&inputs(service(json!({})), ips), &opts);
            let got =
                service_members(&service(json!({})), &names, &synced, &cache(ips), &none, &Default::default(), &opts);
            assert_eq!(got.needs_sync, None);
            assert_eq!(got.pools, full.pools.values().cloned().collect::<Vec<_>>(), "ips {ips:?}");
            let about_web: Vec<Warning> = full.warnings.iter().filter(|w| w.object.is_service()).cloned().collect();
            assert_eq!(got.warnings, about_web, "ips {ips:?}");
        }
        let got = service_members(&service(json!({})), &names, &synced, &cache(&[]), &none, &Default::default(), &opts);
        assert_eq!(got.warnings.iter().map(|w| w.reason.as_str()).collect::<Vec<_>>(), ["NoEndpoints"]);
    }

    #[test]
    fn structural_changes_need_a_sync() {
        let opts = TranslateOptions::default();
        let synced = translate(&inputs(service(json!({})), &["10.0.0.1"]), &opts);
        let names: Vec<String> = synced.pools.keys().cloned().collect();
        let c = cache(&["10.0.0.1"]);
        let nodes = Default::default();
        let unknown = service_members(&service(json!({})), &["other".into()], &synced, &c, &none, &nodes, &opts);
        assert!(unknown.needs_sync.is_some());
        let monitored = service(json!({"kuryr-l7-router.openstack.org/health-monitor": "type=TCP"}));
        assert!(service_members(&monitored, &names, &synced, &c, &none, &nodes, &opts).needs_sync.is_some());
        let mut renamed = service(json!({}));
        renamed.spec.as_mut().unwrap().ports.as_mut().unwrap()[0].name = Some("web".into());
        assert!(service_members(&renamed, &names, &synced, &c, &none, &nodes, &opts).needs_sync.is_some());
    }
}

#[cfg(test)]
mod split_tests {
    use super::*;
    use crate::gateway::build::{Programmed, translate};
    use crate::gateway::router::translate_gateway;
    use crate::gateway::world::World;
    use crate::translate::Inputs;
    use crate::translate::IpFamily;
    use crate::translate::manifest::load_str;
    use std::path::Path;

    const POOL: &str = "split:shop/canary:80+shop/web:80";

    /// A Gateway routing to `web` (weight 1) and `canary` (weight 3), with their endpoints.
    fn objects(web: &[&str], canary: &[&str]) -> String {
        let eps = |ips: &[&str]| ips.iter().map(|ip| format!("{{addresses: [{ip}]}}")).collect::<Vec<_>>().join(", ");
        format!(
            r#"
kind: GatewayClass
apiVersion: gateway.networking.k8s.io/v1
metadata: {{name: kuryr}}
spec: {{controllerName: openstack.org/kuryr-l7-router}}
---
kind: Gateway
apiVersion: gateway.networking.k8s.io/v1
metadata: {{name: gw, namespace: shop}}
spec: {{gatewayClassName: kuryr, listeners: [{{name: any, port: 80, protocol: HTTP}}]}}
---
kind: HTTPRoute
apiVersion: gateway.networking.k8s.io/v1
metadata: {{name: split, namespace: shop}}
spec:
  parentRefs: [{{name: gw}}]
  rules: [{{backendRefs: [{{name: web, port: 80, weight: 1}}, {{name: canary, port: 80, weight: 3}}]}}]
---
kind: Service
apiVersion: v1
metadata: {{name: web, namespace: shop}}
spec: {{ports: [{{port: 80, targetPort: 8080}}]}}
---
kind: Service
apiVersion: v1
metadata: {{name: canary, namespace: shop}}
spec: {{ports: [{{port: 80, targetPort: 8080}}]}}
---
kind: EndpointSlice
apiVersion: discovery.k8s.io/v1
metadata: {{name: web-1, namespace: shop, labels: {{kubernetes.io/service-name: web}}}}
addressType: IPv4
ports: [{{port: 8080}}]
endpoints: [{web}]
---
kind: EndpointSlice
apiVersion: discovery.k8s.io/v1
metadata: {{name: canary-1, namespace: shop, labels: {{kubernetes.io/service-name: canary}}}}
addressType: IPv4
ports: [{{port: 8080}}]
endpoints: [{canary}]
"#,
            web = eps(web),
            canary = eps(canary)
        )
    }

    fn router(web: &[&str], canary: &[&str]) -> (DesiredRouter, Inputs) {
        let objects = objects(web, canary);
        let mut world = World::default();
        world.add_yaml(&objects).unwrap();
        let t = translate(&world, &Programmed::new());
        let mut inputs = Inputs::default();
        load_str(&objects, Path::new("objects.yaml"), &mut inputs).unwrap();
        let desired = translate_gateway(t.router("shop", "gw").expect("routes"), &inputs, &Default::default()).desired;
        (desired, inputs)
    }

    fn service_of(inputs: &Inputs, name: &str) -> Service {
        inputs.services.iter().find(|s| s.metadata.name.as_deref() == Some(name)).expect("a Service").clone()
    }

    fn endpoints(inputs: &Inputs, name: &str) -> SliceCache {
        let mut c = SliceCache::new(IpFamily::V4);
        for s in inputs.endpoint_slices.iter().filter(|s| s.metadata.name.as_deref() == Some(&format!("{name}-1"))) {
            c.upsert(s);
        }
        c
    }

    /// One Service's endpoint change re-weighs the whole split pool, exactly as a full
    /// translation does (a third web pod lowers every web member's weight).
    #[test]
    fn a_change_of_one_feed_reweighs_the_split_pool_as_the_full_translation() {
        let opts = TranslateOptions::default();
        let (synced, _) = router(&["10.0.0.1"], &["10.0.0.9"]);
        assert_eq!(
            synced.pools[POOL].members.iter().map(|m| m.weight).collect::<Vec<_>>(),
            [85, 256],
            "web 1/4 on one pod, canary 3/4 on one"
        );
        let (full, now) = router(&["10.0.0.1", "10.0.0.2", "10.0.0.3"], &["10.0.0.9"]);
        let other = |s: &KubeRef| Some((Arc::new(service_of(&now, &s.name)), endpoints(&now, &s.name)));
        let web = service_of(&now, "web");
        let got =
            service_members(&web, &[POOL.into()], &synced, &endpoints(&now, "web"), &other, &Default::default(), &opts);
        assert_eq!(got.needs_sync, None);
        assert_eq!(got.pools, [full.pools[POOL].clone()]);
        assert_eq!(got.pools[0].members.iter().map(|m| m.weight).collect::<Vec<_>>(), [28, 28, 28, 256]);
        // The other feed's change, the same way.
        let (full, now) = router(&["10.0.0.1"], &[]);
        let other = |s: &KubeRef| Some((Arc::new(service_of(&now, &s.name)), endpoints(&now, &s.name)));
        let canary = service_of(&now, "canary");
        let got = service_members(
            &canary,
            &[POOL.into()],
            &synced,
            &endpoints(&now, "canary"),
            &other,
            &Default::default(),
            &opts,
        );
        assert_eq!(got.pools, [full.pools[POOL].clone()], "canary gone: web takes the pool");
        assert_eq!(
            got.warnings.iter().map(|w| (w.object.name.as_str(), w.reason.as_str())).collect::<Vec<_>>(),
            [("canary", "NoEndpoints")]
        );
    }

    #[test]
    fn a_split_pool_whose_other_service_is_gone_needs_a_sync() {
        let (synced, now) = router(&["10.0.0.1"], &["10.0.0.9"]);
        let gone = |_: &KubeRef| None;
        let web = service_of(&now, "web");
        let got = service_members(
            &web,
            &[POOL.into()],
            &synced,
            &endpoints(&now, "web"),
            &gone,
            &Default::default(),
            &Default::default(),
        );
        assert!(got.needs_sync.as_deref().is_some_and(|w| w.contains("shop/canary")), "{got:?}");
    }
}
