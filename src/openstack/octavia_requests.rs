//! The request bodies of Octavia's writes (create and update of each object), serialized as the
//! API expects: unset optional fields are left out, so an update changes only what it names.

use serde::{Deserialize, Serialize};

/// `{"name": ...}`: how the fully-populated create references a load-balancer-level pool.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NameRef {
    pub name: String,
}

/// `POST /v2/lbaas/loadbalancers`. With `listeners`/`pools` it is Octavia's fully-populated
/// (graph) create: pools are declared here with a `name` and referenced by
/// [`ListenerCreate::default_pool`] and [`L7PolicyCreate::redirect_pool`].
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LoadBalancerCreate {
    pub name: Option<String>,
    pub description: Option<String>,
    pub vip_subnet_id: Option<String>,
    pub vip_network_id: Option<String>,
    pub vip_port_id: Option<String>,
    pub vip_address: Option<String>,
    pub provider: Option<String>,
    pub availability_zone: Option<String>,
    pub flavor_id: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub listeners: Vec<ListenerCreate>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pools: Vec<PoolCreate>,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LoadBalancerUpdate {
    pub name: Option<String>,
    pub description: Option<String>,
    pub tags: Option<Vec<String>>,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ListenerCreate {
    pub name: Option<String>,
    pub description: Option<String>,
    /// Required standalone; must be `None` inside a fully-populated create.
    pub loadbalancer_id: Option<String>,
    pub protocol: String,
    pub protocol_port: u16,
    pub default_pool_id: Option<String>,
    /// Fully-populated create only: a pool of [`LoadBalancerCreate::pools`] by name.
    pub default_pool: Option<NameRef>,
    /// Fully-populated create only.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub l7policies: Vec<L7PolicyCreate>,
    pub insert_headers: Option<std::collections::BTreeMap<String, String>>,
    pub default_tls_container_ref: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sni_container_refs: Vec<String>,
    /// A Barbican secret holding the client CA certificate(s), PEM (not a container).
    pub client_ca_tls_container_ref: Option<String>,
    /// `OPTIONAL` or `MANDATORY` with a client CA (Octavia's default: `NONE`).
    pub client_authentication: Option<String>,
    pub timeout_client_data: Option<u32>,
    pub timeout_member_data: Option<u32>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ListenerUpdate {
    pub name: Option<String>,
    pub description: Option<String>,
    /// `Some(None)` clears the default pool (sends `null`).
    pub default_pool_id: Option<Option<String>>,
    pub insert_headers: Option<std::collections::BTreeMap<String, String>>,
    pub default_tls_container_ref: Option<String>,
    /// Replaces the whole list (one PUT switches every certificate of a rotation).
    pub sni_container_refs: Option<Vec<String>>,
    /// `Some(None)` removes the client CA (sends `null`), with `client_authentication: NONE`.
    pub client_ca_tls_container_ref: Option<Option<String>>,
    pub client_authentication: Option<String>,
    pub tags: Option<Vec<String>>,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PoolCreate {
    pub name: Option<String>,
    pub description: Option<String>,
    /// One of `loadbalancer_id`/`listener_id` standalone; neither in a fully-populated create.
    pub loadbalancer_id: Option<String>,
    pub listener_id: Option<String>,
    pub protocol: String,
    pub lb_algorithm: String,
    /// Fully-populated create only (standalone pool create with members answers 500 on Zed).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<MemberCreate>,
    /// Fully-populated create only.
    pub healthmonitor: Option<HealthMonitorCreate>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PoolUpdate {
    pub name: Option<String>,
    pub description: Option<String>,
    pub lb_algorithm: Option<String>,
    pub tags: Option<Vec<String>>,
}

/// A member to create, or one entry of the batch update (matched by address + protocol_port).
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MemberCreate {
    pub name: Option<String>,
    pub address: String,
    pub protocol_port: u16,
    pub weight: Option<u16>,
    pub backup: Option<bool>,
    pub admin_state_up: Option<bool>,
    pub subnet_id: Option<String>,
    pub monitor_address: Option<String>,
    pub monitor_port: Option<u16>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct L7PolicyCreate {
    pub name: Option<String>,
    pub description: Option<String>,
    /// Required standalone; `None` inside a fully-populated create.
    pub listener_id: Option<String>,
    /// `REDIRECT_TO_POOL`, `REDIRECT_TO_URL`, `REDIRECT_PREFIX`, `REJECT`.
    pub action: String,
    pub redirect_pool_id: Option<String>,
    /// Fully-populated create only: a pool of [`LoadBalancerCreate::pools`] by name.
    pub redirect_pool: Option<NameRef>,
    pub redirect_url: Option<String>,
    /// REDIRECT_PREFIX: haproxy appends the request's path and query.
    pub redirect_prefix: Option<String>,
    /// 301, 302, 303, 307 or 308 (API 2.9).
    pub redirect_http_code: Option<u16>,
    pub position: Option<u32>,
    /// A policy created disabled is not rendered until enabled (see driver::diff).
    pub admin_state_up: Option<bool>,
    /// Fully-populated create only: standalone policy create with rules answers 500 on Zed, use
    /// [`Octavia::create_l7policy_with_rules`](super::octavia::Octavia::create_l7policy_with_rules).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<L7RuleCreate>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct L7PolicyUpdate {
    pub name: Option<String>,
    pub description: Option<String>,
    pub action: Option<String>,
    pub redirect_pool_id: Option<String>,
    /// REDIRECT_TO_URL: exactly this URL.
    pub redirect_url: Option<String>,
    pub redirect_prefix: Option<String>,
    pub redirect_http_code: Option<u16>,
    pub position: Option<u32>,
    pub admin_state_up: Option<bool>,
    pub tags: Option<Vec<String>>,
}

/// Create or full replacement of an L7 rule.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct L7RuleCreate {
    /// `HOST_NAME`, `PATH`, `HEADER`, `COOKIE`, `FILE_TYPE`, ...
    #[serde(rename = "type")]
    pub rule_type: String,
    /// `EQUAL_TO`, `STARTS_WITH`, `ENDS_WITH`, `CONTAINS`, `REGEX`.
    pub compare_type: String,
    pub key: Option<String>,
    pub value: String,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub invert: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct HealthMonitorCreate {
    pub name: Option<String>,
    /// Required standalone; `None` inside a pool of a fully-populated create.
    pub pool_id: Option<String>,
    /// `HTTP`, `TCP`, `PING`, ...
    #[serde(rename = "type")]
    pub monitor_type: String,
    pub delay: u32,
    pub timeout: u32,
    pub max_retries: u32,
    pub max_retries_down: Option<u32>,
    pub http_method: Option<String>,
    pub url_path: Option<String>,
    pub expected_codes: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct HealthMonitorUpdate {
    pub name: Option<String>,
    pub delay: Option<u32>,
    pub timeout: Option<u32>,
    pub max_retries: Option<u32>,
    pub url_path: Option<String>,
    pub expected_codes: Option<String>,
    pub tags: Option<Vec<String>>,
}
