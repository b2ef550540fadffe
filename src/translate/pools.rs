//! Pools and their members: for each Service port the routes forward to, the endpoints of that
//! Service (EndpointSlices or core Endpoints), on our node pool, of the VIP's family, weighed by
//! zone; and the pools' health monitors from the Services' annotations.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{Endpoints, Service, ServicePort};

use super::backends::{Feed, PoolKey, Services};
use super::members::{SliceCache, endpoints_as_slices, index_nodes, members_of_slices};
use super::names::namespace_of;
use super::node_members::{feed_members, feed_members_with, pool_health_monitor, service_member_mode};
use super::options::{IpFamily, Source, TranslateOptions, View};
use super::slices::CompactSlice;
use super::split::{FeedMembers, split_members};
use crate::model::{KubeRef, MemberMode, Pool, PoolFeed, PoolHealthMonitor, Warning};

/// Label tying an EndpointSlice to its Service.
pub(crate) const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";

/// The endpoint objects of one wanted Service: its EndpointSlices, or its core Endpoints.
#[derive(Default)]
struct EndpointSources<'a> {
    slices: Vec<&'a CompactSlice>,
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
    wanted: &BTreeSet<(&'a str, &'a str)>,
) -> BTreeMap<(&'a str, &'a str), EndpointSources<'a>> {
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

/// A pool's member mode from its feeds': NodePort when any feed is (a Node change must then
/// refill it), else the first feed's.
pub(crate) fn pool_mode(modes: &[MemberMode]) -> MemberMode {
    if modes.contains(&MemberMode::NodePort) {
        MemberMode::NodePort
    } else {
        modes.first().copied().unwrap_or_default()
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
pub(crate) fn port_label(sp: &ServicePort) -> String {
    sp.name.clone().filter(|n| !n.is_empty()).unwrap_or_else(|| sp.port.to_string())
}

/// The pool of each feed, by its name in `names`; every key's Service and port exist (the
/// front ends resolved them). A split pool's members come from all its Services
/// ([`split_members`]); a Service without endpoints leaves its share to the others (a warning
/// says so, as for any pool).
pub(crate) fn build_pools(
    inputs: &(impl Source + ?Sized),
    opts: &TranslateOptions,
    names: &BTreeMap<Feed, String>,
    services: &Services<'_>,
    warnings: &mut Vec<Warning>,
) -> BTreeMap<String, Pool> {
    let inputs = inputs.view();
    let nodes = index_nodes(&inputs.nodes);
    let wanted = names.keys().flat_map(Feed::keys).map(|k| (k.namespace.as_str(), k.service.as_str())).collect();
    let sources = endpoint_sources(&inputs, opts, &wanted);
    let none = EndpointSources::default();
    // Core Endpoints are digested into a cache, one Service at a time (single-Service feeds are
    // sorted by (namespace, Service, port): a Service's ports are consecutive and share it).
    // EndpointSlices are read in place.
    let mut current: Option<((&str, &str), SliceCache)> = None;
    // Collected, then made a map at once (sorted, built without a search per pool).
    let mut pools = Vec::with_capacity(names.len());
    for (feed, name) in names {
        let mut members_of_key = one_key(|k| {
            let svc = services[&(k.namespace.as_str(), k.service.as_str())];
            let sp = key_port(svc, k);
            let of = (k.namespace.as_str(), k.service.as_str());
            let source = sources.get(&of).unwrap_or(&none);
            let (members, weighting, mode) = if opts.use_endpoint_slices {
                let of_slices = || members_of_slices(&source.slices, opts.vip_family, svc, sp, &nodes, opts);
                feed_members_with(svc, sp, of_slices, &nodes, opts, name, warnings)
            } else {
                if current.as_ref().is_none_or(|(c, _)| *c != of) {
                    current = Some((of, source.cache(opts.vip_family)));
                }
                let cache = &current.as_ref().expect("set above").1;
                feed_members(svc, sp, cache, &nodes, opts, name, warnings)
            };
            (members, weighting, mode, sp)
        });
        let pool = match feed {
            Feed::One(k) => {
                // One Service: its members as they are (what `pool_of` makes of one feed).
                let (members, weighting, mode, sp) = members_of_key(k);
                Pool {
                    name: name.clone(),
                    service: KubeRef::new("Service", &k.namespace, &k.service),
                    service_port: port_label(sp),
                    lb_algorithm: opts.lb_algorithm.clone(),
                    members,
                    weighting,
                    split: Vec::new(),
                    member_mode: pool_mode(&[mode]),
                }
            }
            Feed::Split(b) => {
                let mut feeds = Vec::with_capacity(b.len());
                let mut modes = Vec::with_capacity(b.len());
                for wb in b {
                    let (members, weighting, mode, sp) = members_of_key(&wb.key);
                    modes.push(mode);
                    let service = KubeRef::new("Service", &wb.key.namespace, &wb.key.service);
                    feeds.push((FeedMembers { service, weight: wb.weight, members, weighting }, port_label(sp)));
                }
                let mut pool = pool_of(name, feed, feeds, opts);
                pool.member_mode = pool_mode(&modes);
                pool
            }
        };
        pools.push((name.clone(), pool));
    }
    pools.into_iter().collect()
}

/// `f` as a closure over keys of one lifetime (the names' keys), so that it may keep one.
fn one_key<'k, R>(f: impl FnMut(&'k PoolKey) -> R) -> impl FnMut(&'k PoolKey) -> R {
    f
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
        member_mode: MemberMode::default(),
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
            // The first Service's own mode (its mode warning was told with its members).
            let mode = service_member_mode(svc, opts, &mut Vec::new());
            let hm = pool_health_monitor(svc, mode, opts, warnings)?;
            Some((p.name.clone(), hm))
        })
        .collect()
}
