//! Gateway API v1 (standard channel) types, written by hand from the CRDs of Gateway API
//! release v1.6.1 (`config/crd/standard/gateway.networking.k8s.io_{gatewayclasses,gateways,
//! httproutes,referencegrants}.yaml`, served versions `v1` and, for ReferenceGrant, `v1beta1`).
//!
//! Why by hand: kube-rs's `gateway-api` crate (0.22.0, the newest) depends on kube 4 and
//! k8s-openapi 0.28; k8s-openapi declares a `links` key, so two of its versions cannot share one
//! build, and we are on kube 5 / k8s-openapi 0.29. Only the fields this controller reads or
//! writes are modelled: unknown fields are ignored by serde, so newer CRDs still deserialize, and
//! a field we do not model is never written back because status is patched, not replaced.
//! Filters we cannot serve keep their body as raw JSON: only their presence matters.

mod route;

pub use route::*;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector};
use kube::CustomResource;
use serde::{Deserialize, Serialize};

/// The API group of every kind here.
pub const GROUP: &str = "gateway.networking.k8s.io";

/// `GatewayClass.spec`.
#[serde_with::skip_serializing_none]
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(group = "gateway.networking.k8s.io", version = "v1", kind = "GatewayClass")]
#[kube(status = "GatewayClassStatus", schema = "disabled")]
#[serde(rename_all = "camelCase")]
pub struct GatewayClassSpec {
    pub controller_name: String,
    #[serde(default)]
    pub parameters_ref: Option<ParametersReference>,
    #[serde(default)]
    pub description: Option<String>,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ParametersReference {
    pub group: String,
    pub kind: String,
    pub name: String,
    #[serde(default)]
    pub namespace: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GatewayClassStatus {
    #[serde(default)]
    pub conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub supported_features: Vec<SupportedFeature>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SupportedFeature {
    pub name: String,
}

/// `Gateway.spec`.
#[serde_with::skip_serializing_none]
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(group = "gateway.networking.k8s.io", version = "v1", kind = "Gateway", namespaced)]
#[kube(status = "GatewayStatus", schema = "disabled")]
#[serde(rename_all = "camelCase")]
pub struct GatewaySpec {
    pub gateway_class_name: String,
    #[serde(default)]
    pub listeners: Vec<Listener>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub addresses: Vec<GatewaySpecAddress>,
    #[serde(default)]
    pub infrastructure: Option<GatewayInfrastructure>,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GatewayInfrastructure {
    #[serde(default)]
    pub parameters_ref: Option<LocalParametersReference>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LocalParametersReference {
    pub group: String,
    pub kind: String,
    pub name: String,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Listener {
    pub name: String,
    #[serde(default)]
    pub hostname: Option<String>,
    pub port: i32,
    /// `HTTP`, `HTTPS`, `TLS`, `TCP`, `UDP` or a domain-prefixed custom protocol.
    pub protocol: String,
    #[serde(default)]
    pub tls: Option<ListenerTls>,
    #[serde(default)]
    pub allowed_routes: Option<AllowedRoutes>,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListenerTls {
    /// `Terminate` (default) or `Passthrough`.
    #[serde(default)]
    pub mode: Option<String>,
    #[serde(default)]
    pub certificate_refs: Vec<SecretObjectReference>,
}

/// A reference to a Secret (group "" and kind `Secret` by default).
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SecretObjectReference {
    #[serde(default)]
    pub group: Option<String>,
    #[serde(default)]
    pub kind: Option<String>,
    pub name: String,
    #[serde(default)]
    pub namespace: Option<String>,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AllowedRoutes {
    #[serde(default)]
    pub namespaces: Option<RouteNamespaces>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kinds: Vec<RouteGroupKind>,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RouteNamespaces {
    /// `Same` (default), `All` or `Selector`.
    #[serde(default)]
    pub from: Option<String>,
    #[serde(default)]
    pub selector: Option<LabelSelector>,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RouteGroupKind {
    #[serde(default)]
    pub group: Option<String>,
    pub kind: String,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GatewaySpecAddress {
    /// `IPAddress` (default), `Hostname` or a domain-prefixed type.
    #[serde(default, rename = "type")]
    pub address_type: Option<String>,
    #[serde(default)]
    pub value: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GatewayStatus {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub addresses: Vec<GatewayStatusAddress>,
    #[serde(default)]
    pub conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub listeners: Vec<ListenerStatus>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GatewayStatusAddress {
    #[serde(rename = "type")]
    pub address_type: String,
    pub value: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListenerStatus {
    pub name: String,
    #[serde(default)]
    pub supported_kinds: Vec<RouteGroupKind>,
    pub attached_routes: i32,
    #[serde(default)]
    pub conditions: Vec<Condition>,
}

/// `ReferenceGrant.spec` (served as v1beta1 in the standard channel).
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(group = "gateway.networking.k8s.io", version = "v1beta1", kind = "ReferenceGrant")]
#[kube(namespaced, schema = "disabled")]
#[serde(rename_all = "camelCase")]
pub struct ReferenceGrantSpec {
    pub from: Vec<ReferenceGrantFrom>,
    pub to: Vec<ReferenceGrantTo>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReferenceGrantFrom {
    pub group: String,
    pub kind: String,
    pub namespace: String,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReferenceGrantTo {
    pub group: String,
    pub kind: String,
    #[serde(default)]
    pub name: Option<String>,
}
