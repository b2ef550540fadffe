//! Pools and their members: for each Service port the routes forward to, the endpoints of that
//! Service (EndpointSlices or core Endpoints), on our node pool, of the VIP's family, weighed by
//! zone; and the pools' health monitors from the Services' annotations.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{Service, ServicePort};

use super::backends::{Feed, PoolKey, Services};
use super::health::service_health_monitor;
use super::members::{SliceCache, endpoints_as_slices, index_nodes};
use super::names::namespace_of;
use super::options::{IpFamily, Source, TranslateOptions, View};
use super::split::{FeedMembers, split_members};
use crate::model::{KubeRef, Pool, PoolFeed, PoolHealthMonitor, Warning};

/// Label tying an EndpointSlice to its Service.
pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";

/// The endpoint caches of the wanted Services only.
fn endpoint_caches<'a>(
    inputs: &View<'a>,
    opts: &TranslateOptions,
    wanted: &BTreeSet<(&str, &str)>,
) -> BTreeMap<(String, String), SliceCache> {
    let mut caches: BTreeMap<(String, String), SliceCache> = BTreeMap::new();
    fn cache<'c>(
        caches: &'c mut BTreeMap<(String, String), SliceCache>,
        wanted: &BTreeSet<(&str, &str)>,
        opts: &TranslateOptions,
        (ns, svc): (&str, &str),
    ) -> Option<&'c mut SliceCache> {
        if !wanted.contains(&(ns, svc)) {
            return None;
        }
        Some(caches.entry((ns.to_string(), svc.to_string())).or_insert_with(|| SliceCache::new(opts.vip_family)))
    }
    if opts.use_endpoint_slices {
        for &s in &inputs.endpoint_slices {
            let Some(svc) = s.metadata.labels.as_ref().and_then(|l| l.get(SERVICE_NAME_LABEL)) else {
                continue;
            };
            if let Some(c) = cache(&mut caches, wanted, opts, (namespace_of(&s.metadata), svc)) {
                c.upsert(s);
            }
        }
    } else {
        for &e in &inputs.endpoints {
            let key = (namespace_of(&e.metadata), e.metadata.name.as_deref().unwrap_or(""));
            if let Some(c) = cache(&mut caches, wanted, opts, key) {
                for slice in endpoints_as_slices(e) {
                    c.upsert(&slice);
                }
            }
        }
    }
    caches
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

/// The Service port of a resolved key (the front ends resolved every key: it exists).
fn key_port<'a>(svc: &'a Service, k: &PoolKey) -> &'a ServicePort {
    svc.spec
        .as_ref()
        .and_then(|s| s.ports.as_ref())
        .and_then(|ps| ps.iter().find(|p| p.port == i32::from(k.port)))
        .expect("resolved ports exist")
}

/// How a pool names its Service port: by name when named, else by number.
pub fn port_label(sp: &ServicePort) -> String {
    sp.name.clone().filter(|n| !n.is_empty()).unwrap_or_else(|| sp.port.to_string())
}

/// The pool of each feed, by its name in `names`; every key's Service and port exist (the
/// front ends resolved them). A split pool's members come from all its Services
/// ([`split_members`]); a Service without endpoints leaves its share to the others (a warning
/// says so, as for any pool).
pub fn build_pools(
    inputs: &(impl Source + ?Sized),
    opts: &TranslateOptions,
    names: &BTreeMap<Feed, String>,
    services: &Services<'_>,
    warnings: &mut Vec<Warning>,
) -> BTreeMap<String, Pool> {
    let inputs = inputs.view();
    let nodes = index_nodes(&inputs.nodes);
    let wanted = names.keys().flat_map(Feed::keys).map(|k| (k.namespace.as_str(), k.service.as_str())).collect();
    let caches = endpoint_caches(&inputs, opts, &wanted);
    let empty = SliceCache::new(opts.vip_family);
    let mut pools = BTreeMap::new();
    for (feed, name) in names {
        let mut feeds = Vec::new();
        let backends: Vec<(&PoolKey, u32)> = match feed {
            Feed::One(k) => vec![(k, 1)],
            Feed::Split(b) => b.iter().map(|b| (&b.key, b.weight)).collect(),
        };
        for (k, weight) in backends {
            let svc = services[&(k.namespace.as_str(), k.service.as_str())];
            let sp = key_port(svc, k);
            let cache = caches.get(&(k.namespace.clone(), k.service.clone())).unwrap_or(&empty);
            let (members, weighting, w) = cache.members(svc, sp, &nodes, opts);
            warnings.extend(w);
            if members.is_empty() {
                warnings.push(no_endpoints(k, name, opts));
            }
            let service = KubeRef::new("Service", &k.namespace, &k.service);
            feeds.push((FeedMembers { service, weight, members, weighting }, port_label(sp)));
        }
        pools.insert(name.clone(), pool_of(name, feed, feeds, opts));
    }
    pools
}

/// A pool from its feeds' members: as they are for one Service, weighted for a split.
fn pool_of(name: &str, feed: &Feed, mut feeds: Vec<(FeedMembers, String)>, opts: &TranslateOptions) -> Pool {
    let split: Vec<PoolFeed> = match feed {
        Feed::One(_) => Vec::new(),
        Feed::Split(_) => feeds
            .iter()
            .map(|(f, port)| PoolFeed { service: f.service.clone(), service_port: port.clone(), weight: f.weight })
            .collect(),
    };
    let (members, weighting) = if split.is_empty() {
        let f = &mut feeds[0].0;
        (std::mem::take(&mut f.members), std::mem::take(&mut f.weighting))
    } else {
        split_members(&feeds.iter().map(|f| f.0.clone()).collect::<Vec<_>>())
    };
    let (first, port) = feeds.swap_remove(0);
    Pool {
        name: name.to_string(),
        service: first.service,
        service_port: port,
        lb_algorithm: opts.lb_algorithm.clone(),
        members,
        weighting,
        split,
    }
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
