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
    where_: &str,
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

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
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
pub(crate) fn pool_names<'a>(feeds: impl IntoIterator<Item = &'a Feed>) -> BTreeMap<Feed, String> {
    let feeds: BTreeSet<&Feed> = feeds.into_iter().collect();
    let mut per_service: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    let mut per_backends: BTreeMap<Vec<&PoolKey>, usize> = BTreeMap::new();
    for f in &feeds {
        match f {
            Feed::One(k) => *per_service.entry((&k.namespace, &k.service)).or_default() += 1,
            Feed::Split(b) => *per_backends.entry(b.iter().map(|b| &b.key).collect()).or_default() += 1,
        }
    }
    feeds
        .iter()
        .map(|f| {
            let name = match f {
                Feed::One(k) => {
                    let multi = per_service[&(k.namespace.as_str(), k.service.as_str())] > 1;
                    pool_name(&k.namespace, &k.service, multi.then_some(k.port))
                }
                Feed::Split(b) => {
                    let keys: Vec<&PoolKey> = b.iter().map(|b| &b.key).collect();
                    let list: Vec<String> =
                        keys.iter().map(|k| format!("{}/{}:{}", k.namespace, k.service, k.port)).collect();
                    let ratio = (per_backends[&keys] > 1).then(|| {
                        let w: Vec<String> = b.iter().map(|b| b.weight.to_string()).collect();
                        format!("@{}", w.join(":"))
                    });
                    bounded(format!("split:{}{}", list.join("+"), ratio.unwrap_or_default()))
                }
            };
            ((*f).clone(), name)
        })
        .collect()
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
