//! Backends, for every route kind: a route forwards to one or more weighted Service ports; each
//! Service port is a [`PoolKey`], and each pool has a name derived from its key. A leaf of the
//! route side (the pools' members are filled in `pools`).

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{Service, ServicePort};

use super::names::{bounded, namespace_of, pool_name};
use crate::model::KubeRef;

/// A resolved backend: one Service port.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PoolKey {
    pub namespace: String,
    pub service: String,
    pub port: u16,
}

/// One backend of a route with its share of the route's requests (Gateway API `weight`; an
/// Ingress backend is the only one, weight 1).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct WeightedBackend {
    pub key: PoolKey,
    pub weight: u32,
}

/// Our Services by (namespace, name).
pub type Services<'a> = BTreeMap<(&'a str, &'a str), &'a Service>;

/// `services` owned, borrowed or the cache's `Arc`s.
pub(crate) fn index_services<S: std::borrow::Borrow<Service>>(services: &[S]) -> Services<'_> {
    services
        .iter()
        .map(|s| s.borrow())
        .map(|s| ((namespace_of(&s.metadata), s.metadata.name.as_deref().unwrap_or("")), s))
        .collect()
}

/// The Service port a route asks for: by name, or by number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PortRef<'a> {
    Name(&'a str),
    Number(i32),
    /// The route names no port.
    Unset,
}

/// Resolve a Service port for `owner`'s route at `where_`, or explain why not (reason, message).
pub(crate) fn resolve_service(
    services: &Services<'_>,
    owner: &KubeRef,
    where_: &dyn std::fmt::Display,
    name: &str,
    port: PortRef<'_>,
) -> Result<PoolKey, (&'static str, String)> {
    let ns = owner.namespace.as_str();
    let Some(svc) = services.get(&(ns, name)) else {
        return Err(("ServiceNotFound", format!("{owner}: {where_}: Service {ns}/{name} not found")));
    };
    let spec = svc.spec.as_ref();
    if spec.and_then(|s| s.type_.as_deref()) == Some("ExternalName") {
        return Err((
            "ExternalNameService",
            format!(
                "{owner}: {where_}: Service {ns}/{name} is of type ExternalName, which has no endpoints to route to"
            ),
        ));
    }
    let ports: &[ServicePort] = spec.and_then(|s| s.ports.as_deref()).unwrap_or(&[]);
    let found = match port {
        PortRef::Name(n) => ports.iter().find(|p| p.name.as_deref() == Some(n)),
        PortRef::Number(num) => ports.iter().find(|p| p.port == num),
        PortRef::Unset => None,
    };
    let Some(sp) = found else {
        let asked = match port {
            PortRef::Name(n) => n.to_string(),
            PortRef::Number(num) => num.to_string(),
            PortRef::Unset => "(none)".into(),
        };
        return Err(("ServicePortNotFound", format!("{owner}: {where_}: Service {ns}/{name} has no port {asked}")));
    };
    let port = u16::try_from(sp.port)
        .map_err(|_| ("ServicePortNotFound", format!("{owner}: {where_}: invalid port {}", sp.port)))?;
    Ok(PoolKey { namespace: ns.to_string(), service: name.to_string(), port })
}

/// What fills a pool: one Service port, or a weighted split over several.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Feed {
    One(PoolKey),
    /// Two or more backends, sorted, each once, weights > 0 and divided by their greatest common
    /// divisor (1:9 and 10:90 are the same split).
    Split(Vec<WeightedBackend>),
}

impl Feed {
    /// Every Service port of the feed.
    pub fn keys(&self) -> impl Iterator<Item = &PoolKey> {
        let (one, split) = match self {
            Feed::One(k) => (Some(k), &[][..]),
            Feed::Split(b) => (None, b.as_slice()),
        };
        one.into_iter().chain(split.iter().map(|b| &b.key))
    }
}

/// The feed of a route forwarding to `backends`: those with weight > 0 (a weight-0 backend gets
/// no traffic), the same backend listed twice counting once with the sum of its weights. `None`:
/// no backend has weight.
pub(crate) fn feed_of(backends: &[WeightedBackend]) -> Option<Feed> {
    let mut merged: BTreeMap<&PoolKey, u64> = BTreeMap::new();
    for b in backends.iter().filter(|b| b.weight > 0) {
        *merged.entry(&b.key).or_default() += u64::from(b.weight);
    }
    let divisor = merged.values().copied().fold(0, gcd);
    let mut split: Vec<WeightedBackend> = merged
        .into_iter()
        .map(|(k, w)| WeightedBackend { key: k.clone(), weight: u32::try_from(w / divisor).unwrap_or(u32::MAX) })
        .collect();
    match split.len() {
        0 => None,
        1 => split.pop().map(|b| Feed::One(b.key)),
        _ => Some(Feed::Split(split)),
    }
}

/// What fills a forwarding route's pool, seen without building a [`Feed`] in the common case:
/// one Service port, borrowed from the route (a split is rare, and built owned).
pub(crate) enum FeedView<'a> {
    /// No backend has weight: the route answers 503.
    None,
    One(&'a PoolKey),
    Split(Feed),
}

/// [`feed_of`] without its map and copies when the backends with weight are one Service port
/// (an Ingress backend, most Gateway API rules): the translation asks this for every route
/// twice, and building a `Feed` through a map was a tenth of it at 10k Ingresses.
pub(crate) fn feed_view(backends: &[WeightedBackend]) -> FeedView<'_> {
    let mut weighted = backends.iter().filter(|b| b.weight > 0);
    let Some(first) = weighted.next() else { return FeedView::None };
    if weighted.all(|b| b.key == first.key) {
        return FeedView::One(&first.key);
    }
    feed_of(backends).map_or(FeedView::None, FeedView::Split)
}

/// A feed as a map of feeds compares it, borrowed: lets a `BTreeMap<Feed, _>` be searched by
/// a borrowed [`PoolKey`] (see [`name_of_one`]) with the order of [`Feed`]'s derived `Ord`.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
enum FeedRef<'a> {
    One(&'a PoolKey),
    Split(&'a [WeightedBackend]),
}

trait AsFeedRef {
    fn feed_ref(&self) -> FeedRef<'_>;
}

impl AsFeedRef for Feed {
    fn feed_ref(&self) -> FeedRef<'_> {
        match self {
            Feed::One(k) => FeedRef::One(k),
            Feed::Split(b) => FeedRef::Split(b),
        }
    }
}

/// One Service port as a lookup key.
struct OneKey<'a>(&'a PoolKey);

impl AsFeedRef for OneKey<'_> {
    fn feed_ref(&self) -> FeedRef<'_> {
        FeedRef::One(self.0)
    }
}

impl<'a> std::borrow::Borrow<dyn AsFeedRef + 'a> for Feed {
    fn borrow(&self) -> &(dyn AsFeedRef + 'a) {
        self
    }
}

impl PartialEq for dyn AsFeedRef + '_ {
    fn eq(&self, other: &Self) -> bool {
        self.feed_ref() == other.feed_ref()
    }
}

impl Eq for dyn AsFeedRef + '_ {}

impl PartialOrd for dyn AsFeedRef + '_ {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for dyn AsFeedRef + '_ {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.feed_ref().cmp(&other.feed_ref())
    }
}

/// The value of `Feed::One(key)` in `map`, without copying the key into a `Feed`.
pub(crate) fn name_of_one<'m, V>(map: &'m BTreeMap<Feed, V>, key: &PoolKey) -> Option<&'m V> {
    map.get(&OneKey(key) as &dyn AsFeedRef)
}

/// The value of the feed `view` in `map` (`None` for [`FeedView::None`]).
pub(crate) fn name_of_view<'m, V>(map: &'m BTreeMap<Feed, V>, view: &FeedView<'_>) -> Option<&'m V> {
    match view {
        FeedView::None => None,
        FeedView::One(k) => name_of_one(map, k),
        FeedView::Split(f) => map.get(f),
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// [`pool_names_of`] of borrowed feeds.
#[cfg(test)]
pub(crate) fn pool_names<'a>(feeds: impl IntoIterator<Item = &'a Feed>) -> BTreeMap<Feed, String> {
    pool_names_of(feeds.into_iter().cloned().collect())
}

/// The pool name of each feed.
///
/// - One Service port: `<ns>_<svc>`, or `<ns>_<svc>_<port>` for every port of a Service used
///   on several (Kuryr's names, unchanged: splits do not count here, so adding a split never
///   renames a Service's own pool).
/// - A split: `split:<ns>/<svc>:<port>+…` over its sorted backends, bounded to Octavia's 255
///   characters with a hash (see [`bounded`]). Names with `:` and `/` are never a Service pool's
///   (DNS labels and `_`). The weights are not in the name, so a canary's weight change updates
///   member weights instead of replacing the pool; only when two splits of one router share the
///   backends with different ratios does each get its ratio as a suffix (`@1:9`).
///
/// The feeds are owned: each becomes its map key without another copy.
pub(crate) fn pool_names_of(feeds: BTreeSet<Feed>) -> BTreeMap<Feed, String> {
    let mut per_backends: BTreeMap<Vec<&PoolKey>, usize> = BTreeMap::new();
    for f in &feeds {
        if let Feed::Split(b) = f {
            *per_backends.entry(b.iter().map(|b| &b.key).collect()).or_default() += 1;
        }
    }
    // Single-port feeds sort first, by (namespace, Service, port): the ports of one Service are
    // neighbours, so a Service used on several ports is told by its neighbours, not by a map.
    let ones: Vec<&PoolKey> = feeds
        .iter()
        .map_while(|f| match f {
            Feed::One(k) => Some(k),
            Feed::Split(_) => None,
        })
        .collect();
    let same_service = |a: &PoolKey, b: &PoolKey| a.namespace == b.namespace && a.service == b.service;
    let mut names: Vec<String> = Vec::with_capacity(feeds.len());
    names.extend(ones.iter().enumerate().map(|(i, k)| {
        let multi = (i > 0 && same_service(ones[i - 1], k)) || ones.get(i + 1).is_some_and(|n| same_service(k, n));
        pool_name(&k.namespace, &k.service, multi.then_some(k.port))
    }));
    // The rest are splits (every `One` sorts before every `Split`).
    let splits = feeds.iter().skip(ones.len()).filter_map(|f| match f {
        Feed::Split(b) => Some(b),
        Feed::One(_) => None,
    });
    names.extend(splits.map(|b| {
        let keys: Vec<&PoolKey> = b.iter().map(|b| &b.key).collect();
        let list: Vec<String> = keys.iter().map(|k| format!("{}/{}:{}", k.namespace, k.service, k.port)).collect();
        let ratio = (per_backends[&keys] > 1).then(|| {
            let w: Vec<String> = b.iter().map(|b| b.weight.to_string()).collect();
            format!("@{}", w.join(":"))
        });
        bounded(format!("split:{}{}", list.join("+"), ratio.unwrap_or_default()))
    }));
    drop(ones);
    drop(per_backends);
    feeds.into_iter().zip(names).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wb(svc: &str, port: u16, weight: u32) -> WeightedBackend {
        WeightedBackend { key: PoolKey { namespace: "ns".into(), service: svc.into(), port }, weight }
    }

    #[test]
    fn a_feed_drops_weight_zero_merges_repeats_and_reduces_the_ratio() {
        assert_eq!(feed_of(&[wb("web", 80, 0)]), None);
        assert_eq!(feed_of(&[wb("web", 80, 3), wb("canary", 80, 0)]), Some(Feed::One(wb("web", 80, 0).key)));
        let split = feed_of(&[wb("web", 80, 60), wb("canary", 80, 20), wb("web", 80, 20)]);
        assert_eq!(split, Some(Feed::Split(vec![wb("canary", 80, 1), wb("web", 80, 4)])));
        assert_eq!(split, feed_of(&[wb("canary", 80, 10), wb("web", 80, 40)]), "the same split");
    }

    #[test]
    fn single_service_pools_keep_their_names_and_splits_get_their_own() {
        let one = Feed::One(wb("web", 80, 0).key);
        let split = feed_of(&[wb("web", 80, 1), wb("canary", 80, 9)]).expect("a split");
        let names = pool_names([&one, &split]);
        assert_eq!(names[&one], "ns_web", "a split over web does not rename web's own pool");
        assert_eq!(names[&split], "split:ns/canary:80+ns/web:80");
        // Another ratio over the same backends: both splits say their ratio.
        let other = feed_of(&[wb("web", 80, 1), wb("canary", 80, 1)]).expect("a split");
        let names = pool_names([&one, &split, &other]);
        assert_eq!(names[&split], "split:ns/canary:80+ns/web:80@9:1");
        assert_eq!(names[&other], "split:ns/canary:80+ns/web:80@1:1");
        // Many long backends: bounded to Octavia's 255 characters, still distinct.
        let long = |s: &str| {
            feed_of(&(0..9).map(|i| wb(&format!("{s}{i}-{}", "x".repeat(50)), 80, 1)).collect::<Vec<_>>())
                .expect("a split")
        };
        let (a, b) = (long("a"), long("b"));
        let names = pool_names([&a, &b]);
        assert!(names.values().all(|n| n.len() <= 255 && n.starts_with("split:")), "{names:?}");
        assert_ne!(names[&a], names[&b]);
    }
}
