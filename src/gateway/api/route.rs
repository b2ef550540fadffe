//! HTTPRoute v1 (Gateway API v1.6.1 standard channel), the fields this controller reads.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use serde::{Deserialize, Serialize};

/// `HTTPRoute.spec`.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(group = "gateway.networking.k8s.io", version = "v1", kind = "HTTPRoute", namespaced)]
#[kube(status = "HTTPRouteStatus", schema = "disabled")]
#[serde(rename_all = "camelCase")]
pub struct HTTPRouteSpec {
    #[serde(default)]
    pub parent_refs: Vec<ParentReference>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hostnames: Vec<String>,
    /// The CRD defaults an absent list to one rule matching `PathPrefix /` with no backend.
    #[serde(default = "default_rules")]
    pub rules: Vec<HTTPRouteRule>,
}

fn default_rules() -> Vec<HTTPRouteRule> {
    vec![HTTPRouteRule::default()]
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ParentReference {
    #[serde(default)]
    pub group: Option<String>,
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub namespace: Option<String>,
    pub name: String,
    #[serde(default)]
    pub section_name: Option<String>,
    #[serde(default)]
    pub port: Option<i32>,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HTTPRouteRule {
    #[serde(default)]
    pub name: Option<String>,
    /// Empty means the CRD default: one match, `PathPrefix /`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub matches: Vec<HTTPRouteMatch>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub filters: Vec<HTTPRouteFilter>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub backend_refs: Vec<HTTPBackendRef>,
    /// Request/backend timeouts: an extended feature we do not serve; kept raw.
    #[serde(default)]
    pub timeouts: Option<serde_json::Value>,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HTTPRouteMatch {
    #[serde(default)]
    pub path: Option<HTTPPathMatch>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<HTTPHeaderMatch>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub query_params: Vec<serde_json::Value>,
    #[serde(default)]
    pub method: Option<String>,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HTTPPathMatch {
    /// `Exact`, `PathPrefix` (default) or `RegularExpression`.
    #[serde(default, rename = "type")]
    pub match_type: Option<String>,
    /// Defaults to `/`.
    #[serde(default)]
    pub value: Option<String>,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HTTPHeaderMatch {
    /// `Exact` (default) or `RegularExpression`.
    #[serde(default, rename = "type")]
    pub match_type: Option<String>,
    pub name: String,
    pub value: String,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HTTPRouteFilter {
    /// `RequestHeaderModifier`, `ResponseHeaderModifier`, `RequestMirror`, `RequestRedirect`,
    /// `URLRewrite`, `ExtensionRef`, `CORS`, ...
    #[serde(rename = "type")]
    pub filter_type: String,
    #[serde(default)]
    pub request_redirect: Option<HTTPRequestRedirectFilter>,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HTTPRequestRedirectFilter {
    /// `http` or `https`.
    #[serde(default)]
    pub scheme: Option<String>,
    #[serde(default)]
    pub hostname: Option<String>,
    /// Path modifiers (`ReplaceFullPath`, `ReplacePrefixMatch`): an extended feature, kept raw.
    #[serde(default)]
    pub path: Option<serde_json::Value>,
    #[serde(default)]
    pub port: Option<i32>,
    /// 301 (default) or 302 in core; 303, 307 and 308 are extended.
    #[serde(default)]
    pub status_code: Option<i32>,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HTTPBackendRef {
    /// Defaults to the core group "" (a Service).
    #[serde(default)]
    pub group: Option<String>,
    /// Defaults to `Service`.
    #[serde(default)]
    pub kind: Option<String>,
    pub name: String,
    #[serde(default)]
    pub namespace: Option<String>,
    #[serde(default)]
    pub port: Option<i32>,
    /// Defaults to 1.
    #[serde(default)]
    pub weight: Option<i32>,
    /// Per-backend filters: none of them can be served by Octavia; kept raw.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub filters: Vec<serde_json::Value>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HTTPRouteStatus {
    #[serde(default)]
    pub parents: Vec<RouteParentStatus>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RouteParentStatus {
    pub parent_ref: ParentReference,
    pub controller_name: String,
    #[serde(default)]
    pub conditions: Vec<Condition>,
}
