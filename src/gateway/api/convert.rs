//! The domain objects the translation reads, built from the generated Kubernetes types the
//! watches deliver ([`super::generated`]).
//!
//! Both sides model the same wire format (the v1.6.1 CRDs), so each conversion is the serde
//! identity through JSON: the domain types keep only the fields the translation reads, as
//! strings where the CRD has an enum (a value a newer CRD adds is refused by name, not by a
//! failed parse). A field the generated types drop would be lost here: the fixture test
//! (`conversion_keeps_every_field`) parses the conformance manifests both ways and compares.

use super::generated::{gatewayclasses, gateways, httproutes, referencegrants};
use super::{Gateway, GatewayClass, HTTPRoute, ReferenceGrant};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// `from` re-read as `T`. Cannot fail for the kinds here (the domain types accept every object
/// of the generated ones); if it ever does, the object keeps its metadata and an empty spec, so
/// the translation ignores it (no class, no parents) instead of failing the whole pass.
fn via_json<F, T>(from: &F, kind: &str, empty: fn() -> T) -> T
where
    F: Serialize + kube::Resource,
    T: DeserializeOwned + kube::Resource,
{
    let parsed = serde_json::to_value(from).and_then(serde_json::from_value::<T>);
    parsed.unwrap_or_else(|e| {
        let meta = from.meta();
        tracing::warn!(kind, namespace = ?meta.namespace, name = ?meta.name, error = %e, "cannot read the object: ignored");
        let mut t = empty();
        *t.meta_mut() = meta.clone();
        t
    })
}

impl From<&gatewayclasses::GatewayClass> for GatewayClass {
    fn from(o: &gatewayclasses::GatewayClass) -> Self {
        via_json(o, "GatewayClass", || GatewayClass::new("", Default::default()))
    }
}

impl From<&gateways::Gateway> for Gateway {
    fn from(o: &gateways::Gateway) -> Self {
        via_json(o, "Gateway", || Gateway::new("", Default::default()))
    }
}

impl From<&httproutes::HttpRoute> for HTTPRoute {
    fn from(o: &httproutes::HttpRoute) -> Self {
        via_json(o, "HTTPRoute", || HTTPRoute::new("", Default::default()))
    }
}

impl From<&referencegrants::ReferenceGrant> for ReferenceGrant {
    fn from(o: &referencegrants::ReferenceGrant) -> Self {
        via_json(o, "ReferenceGrant", || ReferenceGrant::new("", Default::default()))
    }
}

#[cfg(test)]
#[path = "convert_tests.rs"]
mod tests;
