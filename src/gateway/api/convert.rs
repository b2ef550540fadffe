//! The domain objects the translation reads, built from the generated Kubernetes types the
//! watches deliver ([`super::generated`]).
//!
//! Each object is converted once, when its watch event arrives ([`domain_event`], applied by the
//! Gateway loop before its caches store it): the caches hold domain objects, and a pass of the
//! loop reads them as they are.
//!
//! GatewayClass and ReferenceGrant are copied field by field (a few plain fields). Gateway and
//! HTTPRoute go through a serde round trip: both sides model the same wire format (the v1.6.1
//! CRDs), the domain side keeping only the fields the translation reads, as strings where the CRD
//! has an enum (a value a newer CRD adds is refused by name, not by a failed parse) and as raw
//! JSON for what cannot be served; a field-by-field copy would restate some 60 generated structs
//! and enums. A field the generated types drop would be lost here: the fixture test
//! (`conversion_keeps_every_field`) parses the conformance manifests both ways and compares.

use super::generated::{gatewayclasses, gateways, httproutes, referencegrants};
use super::{
    Gateway, GatewayClass, GatewayClassSpec, GatewayClassStatus, HTTPRoute, ParametersReference, ReferenceGrant,
    ReferenceGrantFrom, ReferenceGrantSpec, ReferenceGrantTo, SupportedFeature,
};
use kube::runtime::watcher::Event;
use serde::Serialize;
use serde::de::DeserializeOwned;

thread_local! {
    /// The conversions made on this thread: the count the tests and `benches/gateway_world.rs`
    /// read to prove that a pass converts nothing (per thread, so that tests running side by
    /// side do not count each other's).
    static CONVERSIONS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many objects were converted on this thread so far.
pub fn conversions_on_this_thread() -> u64 {
    CONVERSIONS.with(std::cell::Cell::get)
}

fn counted() {
    CONVERSIONS.with(|c| c.set(c.get() + 1));
}

/// A watch event of a generated kind as the same event of its domain kind: what the Gateway
/// loop's caches store.
pub fn domain_event<G, D>(event: Event<G>) -> Event<D>
where
    D: for<'a> From<&'a G>,
{
    match event {
        Event::Apply(o) => Event::Apply(D::from(&o)),
        Event::Delete(o) => Event::Delete(D::from(&o)),
        Event::InitApply(o) => Event::InitApply(D::from(&o)),
        Event::Init => Event::Init,
        Event::InitDone => Event::InitDone,
    }
}

/// `from` re-read as `T`. Cannot fail for the kinds here (the domain types accept every object
/// of the generated ones); if it ever does, the object keeps its metadata and an empty spec, so
/// the translation ignores it (no class, no parents) instead of failing the whole pass, and the
/// log names the object and the error.
fn via_json<F, T>(from: &F, kind: &str, empty: fn() -> T) -> T
where
    F: Serialize + kube::Resource,
    T: DeserializeOwned + kube::Resource,
{
    counted();
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
        counted();
        let parameters_ref = o.spec.parameters_ref.as_ref().map(|p| ParametersReference {
            group: p.group.clone(),
            kind: p.kind.clone(),
            name: p.name.clone(),
            namespace: p.namespace.clone(),
        });
        let spec = GatewayClassSpec {
            controller_name: o.spec.controller_name.clone(),
            parameters_ref,
            description: o.spec.description.clone(),
        };
        let status = o.status.as_ref().map(|s| GatewayClassStatus {
            conditions: s.conditions.clone().unwrap_or_default(),
            supported_features: (s.supported_features.iter().flatten())
                .map(|f| SupportedFeature { name: f.name.clone() })
                .collect(),
        });
        GatewayClass { metadata: o.metadata.clone(), spec, status }
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
        counted();
        let from = (o.spec.from.iter())
            .map(|f| ReferenceGrantFrom {
                group: f.group.clone(),
                kind: f.kind.clone(),
                namespace: f.namespace.clone(),
            })
            .collect();
        let to = (o.spec.to.iter())
            .map(|t| ReferenceGrantTo { group: t.group.clone(), kind: t.kind.clone(), name: t.name.clone() })
            .collect();
        ReferenceGrant { metadata: o.metadata.clone(), spec: ReferenceGrantSpec { from, to } }
    }
}

#[cfg(test)]
#[path = "convert_tests.rs"]
mod tests;
