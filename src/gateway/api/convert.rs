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

use super::generated::{gatewayclasses, gateways, httproutes, listenersets, referencegrants};
use super::parsed::Parsed;
use super::{
    Gateway, GatewayClass, GatewayClassSpec, GatewayClassStatus, HTTPRoute, ListenerSet, ParametersReference,
    ReferenceGrant, ReferenceGrantFrom, ReferenceGrantSpec, ReferenceGrantTo, SupportedFeature,
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

/// A domain kind: what an object of it is when nothing of its spec can be read.
pub trait Blank: DeserializeOwned + kube::Resource<DynamicType = ()> {
    /// No spec: the translation ignores it (no class, no parents, no listeners).
    fn blank() -> Self;
}

impl Blank for GatewayClass {
    fn blank() -> Self {
        GatewayClass::new("", Default::default())
    }
}

impl Blank for Gateway {
    fn blank() -> Self {
        Gateway::new("", Default::default())
    }
}

impl Blank for HTTPRoute {
    fn blank() -> Self {
        HTTPRoute::new("", Default::default())
    }
}

impl Blank for ListenerSet {
    fn blank() -> Self {
        ListenerSet::new("", Default::default())
    }
}

impl Blank for ReferenceGrant {
    fn blank() -> Self {
        ReferenceGrant::new("", Default::default())
    }
}

/// A watch event of a generated kind as the same event of its domain kind: what the Gateway
/// loop's caches store. `unreadable` is told of each object applied that not even the domain
/// type reads (see [`domain_of`]), with the reason.
pub fn domain_event<G, D>(event: Event<Parsed<G>>, unreadable: &mut dyn FnMut(&D, &str)) -> Event<D>
where
    D: Blank + for<'a> From<&'a G>,
{
    let mut applied = |o: &Parsed<G>| match domain_of(o) {
        Ok(d) => d,
        Err((d, why)) => {
            unreadable(&d, &why);
            d
        }
    };
    match event {
        Event::Apply(o) => Event::Apply(applied(&o)),
        Event::InitApply(o) => Event::InitApply(applied(&o)),
        Event::Delete(o) => Event::Delete(domain_of(&o).unwrap_or_else(|(d, _)| d)),
        Event::Init => Event::Init,
        Event::InitDone => Event::InitDone,
    }
}

/// The domain object of what a watch read. An object the generated types could not read (a CRD
/// of another release or channel) is read by the domain type itself: it models enums as strings,
/// so the translation refuses a value it does not serve by name, with the route's condition and
/// Event (e.g. `filters[0].type: ExternalAuth is not supported by Octavia`), and the other
/// objects of the kind are served. `Err` when not even the domain type reads it: the object with
/// its metadata and no spec (ignored by the translation), and why.
pub fn domain_of<G, D>(o: &Parsed<G>) -> Result<D, (D, String)>
where
    D: Blank + for<'a> From<&'a G>,
{
    let u = match o {
        Parsed::Read(g) => return Ok(D::from(g)),
        Parsed::Unread(u) => u,
    };
    counted();
    let (kind, ns, name) = (D::kind(&()), &u.metadata.namespace, &u.metadata.name);
    match D::deserialize(&u.object) {
        Ok(d) => {
            tracing::warn!(%kind, namespace = ?ns, name = ?name, error = %u.error,
                "not a Gateway API v1.6.1 standard object: read field by field; values it does not know are refused");
            Ok(d)
        }
        Err(e) => {
            let mut d = D::blank();
            *d.meta_mut() = u.metadata.clone();
            Err((d, format!("cannot be read as a Gateway API v1.6.1 {kind}: {} ({e})", u.error)))
        }
    }
}

/// `from` re-read as `T`. Cannot fail for the kinds here (the domain types accept every object
/// of the generated ones); if it ever does, the object keeps its metadata and an empty spec, so
/// the translation ignores it (no class, no parents) instead of failing the whole pass, and the
/// log names the object and the error.
fn via_json<F, T>(from: &F) -> T
where
    F: Serialize + kube::Resource,
    T: Blank,
{
    counted();
    let parsed = serde_json::to_value(from).and_then(serde_json::from_value::<T>);
    parsed.unwrap_or_else(|e| {
        let meta = from.meta();
        let kind = T::kind(&());
        tracing::warn!(%kind, namespace = ?meta.namespace, name = ?meta.name, error = %e, "cannot read the object: ignored");
        let mut t = T::blank();
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
        via_json(o)
    }
}

impl From<&httproutes::HttpRoute> for HTTPRoute {
    fn from(o: &httproutes::HttpRoute) -> Self {
        via_json(o)
    }
}

impl From<&listenersets::ListenerSet> for ListenerSet {
    /// As a Gateway: its listener entries have the Gateway listener's fields.
    fn from(o: &listenersets::ListenerSet) -> Self {
        via_json(o)
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
