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
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LoadBalancerCreate {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vip_subnet_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vip_network_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vip_port_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vip_address: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub availability_zone: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flavor_id: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub listeners: Vec<ListenerCreate>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pools: Vec<PoolCreate>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LoadBalancerUpdate {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<String>>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ListenerCreate {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Required standalone; must be `None` inside a fully-populated create.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loadbalancer_id: Option<String>,
    pub protocol: String,
    pub protocol_port: u16,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_pool_id: Option<String>,
    /// Fully-populated create only: a pool of [`LoadBalancerCreate::pools`] by name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_pool: Option<NameRef>,
    /// Fully-populated create only.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub l7policies: Vec<L7PolicyCreate>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub insert_headers: Option<std::collections::BTreeMap<String, String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_tls_container_ref: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sni_container_refs: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_client_data: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_member_data: Option<u32>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ListenerUpdate {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `Some(None)` clears the default pool (sends `null`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_pool_id: Option<Option<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub insert_headers: Option<std::collections::BTreeMap<String, String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_tls_container_ref: Option<String>,
    /// Replaces the whole list (one PUT switches every certificate of a rotation).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sni_container_refs: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<String>>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PoolCreate {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// One of `loadbalancer_id`/`listener_id` standalone; neither in a fully-populated create.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loadbalancer_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub listener_id: Option<String>,
    pub protocol: String,
    pub lb_algorithm: String,
    /// Fully-populated create only (standalone pool create with members answers 500 on Zed).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<MemberCreate>,
    /// Fully-populated create only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub healthmonitor: Option<HealthMonitorCreate>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PoolUpdate {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lb_algorithm: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<String>>,
}

/// A member to create, or one entry of the batch update (matched by address + protocol_port).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MemberCreate {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub address: String,
    pub protocol_port: u16,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weight: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backup: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub admin_state_up: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subnet_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub monitor_address: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub monitor_port: Option<u16>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct L7PolicyCreate {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Required standalone; `None` inside a fully-populated create.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub listener_id: Option<String>,
    /// `REDIRECT_TO_POOL`, `REDIRECT_TO_URL`, `REDIRECT_PREFIX`, `REJECT`.
    pub action: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redirect_pool_id: Option<String>,
    /// Fully-populated create only: a pool of [`LoadBalancerCreate::pools`] by name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redirect_pool: Option<NameRef>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redirect_url: Option<String>,
    /// REDIRECT_PREFIX: haproxy appends the request's path and query.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redirect_prefix: Option<String>,
    /// 301, 302, 303, 307 or 308 (API 2.9).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redirect_http_code: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub position: Option<u32>,
    /// A policy created disabled is not rendered until enabled (see driver::diff).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub admin_state_up: Option<bool>,
    /// Fully-populated create only: standalone policy create with rules answers 500 on Zed, use
    /// [`Octavia::create_l7policy_with_rules`](super::octavia::Octavia::create_l7policy_with_rules).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<L7RuleCreate>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct L7PolicyUpdate {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redirect_pool_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    /// REDIRECT_TO_URL: exactly this URL.
    pub redirect_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redirect_prefix: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redirect_http_code: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub position: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub admin_state_up: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<String>>,
}

/// Create or full replacement of an L7 rule.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct L7RuleCreate {
    /// `HOST_NAME`, `PATH`, `HEADER`, `COOKIE`, `FILE_TYPE`, ...
    #[serde(rename = "type")]
    pub rule_type: String,
    /// `EQUAL_TO`, `STARTS_WITH`, `ENDS_WITH`, `CONTAINS`, `REGEX`.
    pub compare_type: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    pub value: String,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub invert: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct HealthMonitorCreate {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Required standalone; `None` inside a pool of a fully-populated create.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pool_id: Option<String>,
    /// `HTTP`, `TCP`, `PING`, ...
    #[serde(rename = "type")]
    pub monitor_type: String,
    pub delay: u32,
    pub timeout: u32,
    pub max_retries: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_retries_down: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_method: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url_path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected_codes: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct HealthMonitorUpdate {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delay: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_retries: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url_path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected_codes: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<String>>,
}
