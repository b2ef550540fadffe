//! Backends, for every route kind: a route forwards to one or more weighted Service ports; each
//! Service port is a [`PoolKey`], and each pool has a name derived from its key. A leaf of the
//! route side (the pools' members are filled in `pools`).

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{Service, ServicePort};

use super::names::{namespace_of, pool_name};
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
pub struct WeightedBackend {
    pub key: PoolKey,
    pub weight: u32,
}

/// Our Services by (namespace, name).
pub type Services<'a> = BTreeMap<(&'a str, &'a str), &'a Service>;

/// `services` owned, borrowed or the cache's `Arc`s.
pub fn index_services<S: std::borrow::Borrow<Service>>(services: &[S]) -> Services<'_> {
    services
        .iter()
        .map(|s| s.borrow())
        .map(|s| ((namespace_of(&s.metadata), s.metadata.name.as_deref().unwrap_or("")), s))
        .collect()
}

/// The Service port a route asks for: by name, or by number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PortRef<'a> {
    Name(&'a str),
    Number(i32),
    /// The route names no port.
    Unset,
}

/// Resolve a Service port for `owner`'s route at `where_`, or explain why not (reason, message).
pub fn resolve_service(
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

/// Pool names: `<ns>_<svc>`, or `<ns>_<svc>_<port>` for every port of a Service used on several.
pub fn pool_names(keys: &BTreeSet<PoolKey>) -> BTreeMap<PoolKey, String> {
    let mut per_service: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for k in keys {
        *per_service.entry((&k.namespace, &k.service)).or_default() += 1;
    }
    keys.iter()
        .map(|k| {
            let multi = per_service[&(k.namespace.as_str(), k.service.as_str())] > 1;
            (k.clone(), pool_name(&k.namespace, &k.service, multi.then_some(k.port)))
        })
        .collect()
}
