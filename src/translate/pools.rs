//! Pools and their members: for each Service port the routes forward to, the endpoints of that
//! Service (EndpointSlices or core Endpoints), on our node pool, of the VIP's family, weighed by
//! zone; and the pools' health monitors from the Services' annotations.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::Endpoints;
use k8s_openapi::api::discovery::v1::EndpointSlice;

use super::backends::{PoolKey, Services};
use super::health::service_health_monitor;
use super::members::{SliceCache, endpoints_as_slices, index_nodes};
use super::names::namespace_of;
use super::options::{IpFamily, Source, TranslateOptions, View};
use crate::model::{KubeRef, Pool, PoolHealthMonitor, Warning};

/// Label tying an EndpointSlice to its Service.
pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";

/// The endpoint objects of one wanted Service: its EndpointSlices, or its core Endpoints.
#[derive(Default)]
struct EndpointSources<'a> {
    slices: Vec<&'a EndpointSlice>,
    endpoints: Vec<&'a Endpoints>,
}

impl EndpointSources<'_> {
    /// The Service's endpoints digested. Made for one Service at a time and dropped after its
    /// pools: a digest of every wanted Service at once was the largest part of a translation's
    /// transient memory (every endpoint of the cluster copied).
    fn cache(&self, family: IpFamily) -> SliceCache {
        let mut cache = SliceCache::new(family);
        for s in &self.slices {
            cache.upsert(s);
        }
        for e in &self.endpoints {
            for slice in endpoints_as_slices(e) {
                cache.upsert(&slice);
            }
        }
        cache
    }
}

/// The endpoint objects of the wanted Services only, by (namespace, Service).
fn endpoint_sources<'a>(
    inputs: &View<'a>,
    opts: &TranslateOptions,
    keys: &'a BTreeSet<PoolKey>,
) -> BTreeMap<(&'a str, &'a str), EndpointSources<'a>> {
    let wanted: BTreeSet<(&str, &str)> = keys.iter().map(|k| (k.namespace.as_str(), k.service.as_str())).collect();
    let mut sources: BTreeMap<(&str, &str), EndpointSources<'a>> = BTreeMap::new();
    if opts.use_endpoint_slices {
        for &s in &inputs.endpoint_slices {
            let Some(svc) = s.metadata.labels.as_ref().and_then(|l| l.get(SERVICE_NAME_LABEL)) else {
                continue;
            };
            let key = (namespace_of(&s.metadata), svc.as_str());
            if wanted.contains(&key) {
                sources.entry(key).or_default().slices.push(s);
            }
        }
    } else {
        for &e in &inputs.endpoints {
            let key = (namespace_of(&e.metadata), e.metadata.name.as_deref().unwrap_or(""));
            if wanted.contains(&key) {
                sources.entry(key).or_default().endpoints.push(e);
            }
        }
    }
    sources
}

fn no_endpoints(k: &PoolKey, name: &str, opts: &TranslateOptions) -> Warning {
    let sref = KubeRef::new("Service", &k.namespace, &k.service);
    let family = match opts.vip_family {
        IpFamily::V4 => "IPv4",
        IpFamily::V6 => "IPv6",
    };
    let node_pool = opts.node_pool.as_deref().map(|p| format!(" on node pool {p}")).unwrap_or_default();
    Warning {
        object: sref.clone(),
        reason: "NoEndpoints".into(),
        message: format!(
            "{sref}: port {}: no ready {family} endpoint{node_pool}; pool {name} has no members and requests routed to it get HTTP 503",
            k.port
        ),
    }
}

/// The pool of each key, by its name in `names`; every key's Service and port exist (the
/// front ends resolved them).
pub fn build_pools(
    inputs: &(impl Source + ?Sized),
    opts: &TranslateOptions,
    keys: &BTreeSet<PoolKey>,
    names: &BTreeMap<PoolKey, String>,
    services: &Services<'_>,
    warnings: &mut Vec<Warning>,
) -> BTreeMap<String, Pool> {
    let inputs = inputs.view();
    let nodes = index_nodes(&inputs.nodes);
    let sources = endpoint_sources(&inputs, opts, keys);
    let none = EndpointSources::default();
    // Keys are sorted by (namespace, Service, port): a Service's ports are consecutive and
    // share one digest of its endpoints.
    let mut current: Option<((&str, &str), SliceCache)> = None;
    let mut pools = BTreeMap::new();
    for k in keys {
        let svc = services[&(k.namespace.as_str(), k.service.as_str())];
        let sp = svc
            .spec
            .as_ref()
            .and_then(|s| s.ports.as_ref())
            .and_then(|ps| ps.iter().find(|p| p.port == i32::from(k.port)))
            .expect("resolved ports exist");
        let service = (k.namespace.as_str(), k.service.as_str());
        if current.as_ref().is_none_or(|(of, _)| *of != service) {
            current = Some((service, sources.get(&service).unwrap_or(&none).cache(opts.vip_family)));
        }
        let cache = &current.as_ref().expect("set above").1;
        let (members, weighting, w) = cache.members(svc, sp, &nodes, opts);
        warnings.extend(w);
        let name = names[k].clone();
        if members.is_empty() {
            warnings.push(no_endpoints(k, &name, opts));
        }
        pools.insert(
            name.clone(),
            Pool {
                name,
                service: KubeRef::new("Service", &k.namespace, &k.service),
                service_port: sp.name.clone().filter(|n| !n.is_empty()).unwrap_or_else(|| sp.port.to_string()),
                lb_algorithm: opts.lb_algorithm.clone(),
                members,
                weighting,
            },
        );
    }
    pools
}

/// The health monitor each pool's Service asks for by annotation.
pub fn health_monitors(
    pools: &BTreeMap<String, Pool>,
    services: &Services<'_>,
    opts: &TranslateOptions,
    warnings: &mut Vec<Warning>,
) -> BTreeMap<String, PoolHealthMonitor> {
    pools
        .values()
        .filter_map(|p| {
            let svc = services.get(&(p.service.namespace.as_str(), p.service.name.as_str()))?;
            let hm = service_health_monitor(svc, &opts.health_monitor_defaults, warnings)?;
            Some((p.name.clone(), hm))
        })
        .collect()
}
