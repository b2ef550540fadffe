//! EndpointSlices as the caches hold them: what the member path and the indexes read, and no
//! more. A k8s-openapi `Endpoint` is 352 bytes before its strings (its address alone is a
//! `Vec<String>`); at 100,000 endpoints the objects were ~35 MiB of the caches. A
//! [`CompactSlice`] keeps per endpoint its parsed address, conditions, zone, node, zone hints
//! and target name ([`CachedEndpoint`], 88 bytes), and is what the EndpointSlice watch
//! deserializes into: the whole object lives only while one event is read.
//!
//! It is the same Kubernetes resource (`discovery.k8s.io/v1` `EndpointSlice`): the watch asks the
//! API server for EndpointSlices and converts each on receipt ([`From<EndpointSlice>`]).

use std::borrow::Cow;
use std::net::IpAddr;

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::discovery::v1::{
    Endpoint, EndpointConditions, EndpointHints, EndpointPort, EndpointSlice, ForZone,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// IP family of the router's VIP (an option) and of an endpoint slice's addresses: members of
/// the other family would be unreachable. Here, with the slices, so that the options (which name
/// the compact slice type) and the slices do not import each other.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum IpFamily {
    #[default]
    V4,
    V6,
}

/// One endpoint as the member path reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CachedEndpoint {
    /// The first address, parsed; None when missing or not an IP (such an endpoint is never a
    /// member, but its node still counts for the Node index, as before).
    pub address: Option<IpAddr>,
    pub ready: bool,
    /// `conditions.serving` (unset: same as ready).
    pub serving: bool,
    /// `conditions.terminating` (unset: false).
    pub terminating: bool,
    /// Empty zones are kept as none (`zone: ""` is how some controllers say "unknown").
    pub zone: Option<Box<str>>,
    pub node: Option<Box<str>>,
    pub for_zones: Option<Box<[Box<str>]>>,
    pub target: Option<Box<str>>,
}

impl From<&Endpoint> for CachedEndpoint {
    fn from(e: &Endpoint) -> Self {
        let cond = e.conditions.as_ref();
        // Unset `ready` means ready; unset `serving` means as ready (API contract).
        let ready = cond.and_then(|c| c.ready).unwrap_or(true);
        CachedEndpoint {
            address: e.addresses.first().and_then(|a| a.parse().ok()),
            ready,
            serving: cond.and_then(|c| c.serving).unwrap_or(ready),
            terminating: cond.and_then(|c| c.terminating).unwrap_or(false),
            zone: e.zone.as_deref().filter(|z| !z.is_empty()).map(Into::into),
            node: e.node_name.as_deref().map(Into::into),
            for_zones: e
                .hints
                .as_ref()
                .and_then(|h| h.for_zones.as_ref())
                .map(|z| z.iter().map(|z| z.name.as_str().into()).collect()),
            target: e.target_ref.as_ref().and_then(|t| t.name.as_deref()).map(Into::into),
        }
    }
}

/// An EndpointSlice reduced to what is read of it (see the module doc).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CompactSlice {
    /// As received (the watch's slimming drops `managedFields` and kubectl's copy).
    pub metadata: ObjectMeta,
    /// `addressType`: IPv4 or IPv6; None for FQDN slices (nothing routable).
    pub family: Option<IpFamily>,
    /// The TCP ports that fit a port number: (name, "" when unnamed; number). Other ports are
    /// never a member's port.
    pub ports: Vec<(String, u16)>,
    pub endpoints: Vec<CachedEndpoint>,
}

impl From<&EndpointSlice> for CompactSlice {
    fn from(s: &EndpointSlice) -> Self {
        let family = match s.address_type.as_str() {
            "IPv4" => Some(IpFamily::V4),
            "IPv6" => Some(IpFamily::V6),
            _ => None,
        };
        let ports = s
            .ports
            .iter()
            .flatten()
            .filter(|p| p.protocol.as_deref().unwrap_or("TCP") == "TCP")
            .filter_map(|p| Some((p.name.clone().unwrap_or_default(), u16::try_from(p.port?).ok()?)))
            .collect();
        CompactSlice {
            metadata: s.metadata.clone(),
            family,
            ports,
            endpoints: s.endpoints.iter().map(CachedEndpoint::from).collect(),
        }
    }
}

impl From<EndpointSlice> for CompactSlice {
    fn from(mut s: EndpointSlice) -> Self {
        let metadata = std::mem::take(&mut s.metadata);
        CompactSlice { metadata, ..CompactSlice::from(&s) }
    }
}

/// Back to an EndpointSlice with what was kept (for tests that serve the cached objects from a
/// fake API server): reads the same as the original through every path here.
impl From<&CompactSlice> for EndpointSlice {
    fn from(s: &CompactSlice) -> Self {
        let address_type = match s.family {
            Some(IpFamily::V4) => "IPv4",
            Some(IpFamily::V6) => "IPv6",
            None => "FQDN",
        };
        let ports = s
            .ports
            .iter()
            .map(|(name, port)| EndpointPort {
                name: Some(name.clone()).filter(|n| !n.is_empty()),
                port: Some(i32::from(*port)),
                protocol: Some("TCP".into()),
                ..Default::default()
            })
            .collect();
        let endpoints = s
            .endpoints
            .iter()
            .map(|e| Endpoint {
                addresses: e.address.iter().map(IpAddr::to_string).collect(),
                conditions: Some(EndpointConditions {
                    ready: Some(e.ready),
                    serving: Some(e.serving),
                    terminating: Some(e.terminating),
                }),
                zone: e.zone.as_deref().map(Into::into),
                node_name: e.node.as_deref().map(Into::into),
                hints: e.for_zones.as_ref().map(|z| EndpointHints {
                    for_zones: Some(z.iter().map(|z| ForZone { name: z.to_string() }).collect()),
                    ..Default::default()
                }),
                target_ref: e.target.as_deref().map(|t| ObjectReference { name: Some(t.into()), ..Default::default() }),
                ..Default::default()
            })
            .collect();
        EndpointSlice { metadata: s.metadata.clone(), address_type: address_type.into(), ports: Some(ports), endpoints }
    }
}

/// The watch (and manifests) read EndpointSlices straight into the compact form.
impl<'de> serde::Deserialize<'de> for CompactSlice {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        EndpointSlice::deserialize(d).map(CompactSlice::from)
    }
}

impl serde::Serialize for CompactSlice {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        EndpointSlice::from(self).serialize(s)
    }
}

/// The same resource as EndpointSlice, so that `Api<CompactSlice>`, its watch and its store
/// address `discovery.k8s.io/v1` `endpointslices`.
impl kube::Resource for CompactSlice {
    type DynamicType = ();
    type Scope = k8s_openapi::NamespaceResourceScope;

    fn kind(_: &()) -> Cow<'_, str> {
        <EndpointSlice as k8s_openapi::Resource>::KIND.into()
    }
    fn group(_: &()) -> Cow<'_, str> {
        <EndpointSlice as k8s_openapi::Resource>::GROUP.into()
    }
    fn version(_: &()) -> Cow<'_, str> {
        <EndpointSlice as k8s_openapi::Resource>::VERSION.into()
    }
    fn api_version(_: &()) -> Cow<'_, str> {
        <EndpointSlice as k8s_openapi::Resource>::API_VERSION.into()
    }
    fn plural(_: &()) -> Cow<'_, str> {
        <EndpointSlice as k8s_openapi::Resource>::URL_PATH_SEGMENT.into()
    }
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// A slice the member path can digest: the cached [`CompactSlice`], or a whole EndpointSlice
/// (fixtures, core Endpoints seen as slices), compacted on the way.
pub trait AsCompact {
    fn compact(&self) -> Cow<'_, CompactSlice>;
}

impl AsCompact for CompactSlice {
    fn compact(&self) -> Cow<'_, CompactSlice> {
        Cow::Borrowed(self)
    }
}

impl AsCompact for EndpointSlice {
    fn compact(&self) -> Cow<'_, CompactSlice> {
        Cow::Owned(self.into())
    }
}

impl<T: AsCompact + ?Sized> AsCompact for &T {
    fn compact(&self) -> Cow<'_, CompactSlice> {
        (**self).compact()
    }
}

impl<T: AsCompact + ?Sized> AsCompact for std::sync::Arc<T> {
    fn compact(&self) -> Cow<'_, CompactSlice> {
        (**self).compact()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The point of the type: at 100,000 endpoints each byte is 0.1 MB of the cache (352 bytes
    /// for k8s-openapi 0.29's `Endpoint`, before its strings).
    #[test]
    fn an_endpoint_is_88_bytes_against_352_for_the_object() {
        assert!(std::mem::size_of::<CachedEndpoint>() <= 88, "{}", std::mem::size_of::<CachedEndpoint>());
        assert!(std::mem::size_of::<Endpoint>() >= 3 * std::mem::size_of::<CachedEndpoint>());
    }

    /// What is kept reads back the same: converting again gives the same compact slice.
    #[test]
    fn a_slice_read_back_compacts_to_the_same() {
        let json = serde_json::json!({
            "metadata": {"name": "web-abc", "namespace": "shop", "labels": {"kubernetes.io/service-name": "web"}},
            "addressType": "IPv4",
            "ports": [{"name": "http", "port": 8080}, {"name": "dns", "port": 53, "protocol": "UDP"}],
            "endpoints": [
                {"addresses": ["10.0.0.1"], "conditions": {"ready": false, "serving": true, "terminating": true},
                 "nodeName": "n1", "zone": "az-1", "hints": {"forZones": [{"name": "az-1"}]},
                 "targetRef": {"kind": "Pod", "name": "web-0"}},
                {"addresses": ["not-an-ip"], "nodeName": "n2", "zone": ""},
                {"addresses": []}
            ]
        });
        let compact: CompactSlice = serde_json::from_value(json).unwrap();
        assert_eq!(compact.family, Some(IpFamily::V4));
        assert_eq!(compact.ports, [("http".to_string(), 8080)], "TCP ports only");
        let e = &compact.endpoints;
        assert_eq!(e.len(), 3);
        assert_eq!((e[0].ready, e[0].serving, e[0].terminating), (false, true, true));
        assert_eq!(
            (e[0].zone.as_deref(), e[0].node.as_deref(), e[0].target.as_deref()),
            (Some("az-1"), Some("n1"), Some("web-0"))
        );
        assert_eq!(e[0].for_zones.as_deref().map(|z| z.len()), Some(1));
        assert_eq!((e[1].address, e[1].node.as_deref(), e[1].zone.as_deref()), (None, Some("n2"), None));
        assert_eq!((e[2].ready, e[2].serving, e[2].terminating), (true, true, false), "unset conditions: ready");
        let again: CompactSlice = serde_json::from_value(serde_json::to_value(&compact).unwrap()).unwrap();
        assert_eq!(again, compact);
    }
}
