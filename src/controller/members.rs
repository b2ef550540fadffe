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
use crate::translate::health::service_health_monitor;
use crate::translate::members::{NodeIndex, SliceCache, endpoints_as_slices};
use crate::translate::{IpFamily, TranslateOptions, namespace_of};
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

/// The pools `pool_names` of `service`, refilled from `endpoints` (see the module docs).
pub fn service_members(
    service: &Service,
    pool_names: &[String],
    synced: &DesiredRouter,
    endpoints: &SliceCache,
    nodes: &NodeIndex<'_>,
    opts: &TranslateOptions,
) -> ServiceMembers {
    let me = KubeRef::service(namespace_of(&service.metadata), service.metadata.name.as_deref().unwrap_or(""));
    let mut out = ServiceMembers::default();
    let monitor = service_health_monitor(service, &opts.health_monitor_defaults, &mut out.warnings);
    for name in pool_names {
        let Some(pool) = synced.pools.get(name) else {
            out.needs_sync = Some(format!("pool {name} is not on the router yet"));
            continue;
        };
        let Some(sp) = service_port(service, &pool.service_port) else {
            out.needs_sync = Some(format!("{me}: port {} is gone", pool.service_port));
            continue;
        };
        if synced.health_monitors.get(name) != monitor.as_ref() {
            out.needs_sync = Some(format!("{me}: health monitor of pool {name} changed"));
        }
        let (members, weighting, warnings) = endpoints.members(service, sp, nodes, opts);
        out.warnings.extend(warnings);
        if members.is_empty() {
            out.warnings.push(no_endpoints(&me, sp, name, opts));
        }
        out.pools.push(Pool { members, weighting, ..pool.clone() });
    }
    out.warnings.sort();
    out.warnings.dedup();
    out
}

/// The Service port a pool serves: by name when the port is named, else by number (as the
/// translation names `Pool::service_port`).
fn service_port<'a>(service: &'a Service, port: &str) -> Option<&'a ServicePort> {
    let ports = service.spec.as_ref()?.ports.as_ref()?;
    ports.iter().find(|p| p.name.as_deref().filter(|n| !n.is_empty()).unwrap_or(&p.port.to_string()) == port)
}

/// The full translation's `NoEndpoints` warning, word for word: the Sync and the Members path
/// must publish the same warning, or each would take the other's for a new one.
fn no_endpoints(service: &KubeRef, sp: &ServicePort, pool: &str, opts: &TranslateOptions) -> Warning {
    let family = match opts.vip_family {
        IpFamily::V4 => "IPv4",
        IpFamily::V6 => "IPv6",
    };
    let node_pool = opts.node_pool.as_deref().map(|p| format!(" on node pool {p}")).unwrap_or_default();
    Warning {
        object: service.clone(),
        reason: "NoEndpoints".into(),
        message: format!(
            "{service}: port {}: no ready {family} endpoint{node_pool}; pool {pool} has no members and requests routed to it get HTTP 503",
            sp.port
        ),
    }
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
pub fn node_index(nodes: &[Arc<Node>]) -> NodeIndex<'_> {
    nodes.iter().map(|n| (n.metadata.name.clone().unwrap_or_default(), n.as_ref())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::translate::pools::SERVICE_NAME_LABEL;
    use crate::translate::{Inputs, translate};
    use k8s_openapi::api::discovery::v1::EndpointSlice;
    use serde_json::json;

    fn service(annotations: serde_json::Value) -> Service {
        serde_json::from_value(json!({
            "metadata": {"name": "web", "namespace": "shop", "annotations": annotations},
            "spec": {"ports": [{"name": "http", "port": 80, "targetPort": 8080}]}
        }))
        .unwrap()
    }

    fn slice(ips: &[&str]) -> EndpointSlice {
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
            let got = service_members(&service(json!({})), &names, &synced, &cache(ips), &Default::default(), &opts);
            assert_eq!(got.needs_sync, None);
            assert_eq!(got.pools, full.pools.values().cloned().collect::<Vec<_>>(), "ips {ips:?}");
            let about_web: Vec<Warning> = full.warnings.iter().filter(|w| w.object.is_service()).cloned().collect();
            assert_eq!(got.warnings, about_web, "ips {ips:?}");
        }
        let got = service_members(&service(json!({})), &names, &synced, &cache(&[]), &Default::default(), &opts);
        assert_eq!(got.warnings.iter().map(|w| w.reason.as_str()).collect::<Vec<_>>(), ["NoEndpoints"]);
    }

    #[test]
    fn structural_changes_need_a_sync() {
        let opts = TranslateOptions::default();
        let synced = translate(&inputs(service(json!({})), &["10.0.0.1"]), &opts);
        let names: Vec<String> = synced.pools.keys().cloned().collect();
        let c = cache(&["10.0.0.1"]);
        let nodes = Default::default();
        let unknown = service_members(&service(json!({})), &["other".into()], &synced, &c, &nodes, &opts);
        assert!(unknown.needs_sync.is_some());
        let monitored = service(json!({"kuryr-l7-router.openstack.org/health-monitor": "type=TCP"}));
        assert!(service_members(&monitored, &names, &synced, &c, &nodes, &opts).needs_sync.is_some());
        let mut renamed = service(json!({}));
        renamed.spec.as_mut().unwrap().ports.as_mut().unwrap()[0].name = Some("web".into());
        assert!(service_members(&renamed, &names, &synced, &c, &nodes, &opts).needs_sync.is_some());
    }
}
