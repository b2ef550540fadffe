//! A snapshot of the router's children as read from Octavia (foreign objects included): what
//! the diff compares the desired router with.

use std::net::IpAddr;

/// A snapshot of the router's children, as read from Octavia (foreign objects included).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ActualRouter {
    pub listener: ActualListener,
    /// In position order.
    pub policies: Vec<ActualPolicy>,
    pub pools: Vec<ActualPool>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct ActualListener {
    pub id: String,
    pub default_pool_id: Option<String>,
    pub tags: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct ActualPolicy {
    pub id: String,
    pub name: String,
    pub position: u32,
    pub action: String,
    pub redirect_pool_id: Option<String>,
    /// REDIRECT_PREFIX policies (HTTP→HTTPS redirects).
    pub redirect_prefix: Option<String>,
    /// REDIRECT_TO_URL policies (route redirects to a fixed URL).
    pub redirect_url: Option<String>,
    pub redirect_http_code: Option<u16>,
    pub admin_state_up: bool,
    pub rules: Vec<ActualRule>,
    pub tags: Vec<String>,
    /// provisioning_status ERROR: replaced by a new one (see [`plan_writes`](super::diff::plan_writes)).
    pub in_error: bool,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct ActualRule {
    pub id: String,
    pub rule_type: String,
    pub compare_type: String,
    pub value: String,
    pub key: Option<String>,
    pub invert: bool,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct ActualPool {
    pub id: String,
    pub name: String,
    pub lb_algorithm: String,
    pub members: Vec<ActualMember>,
    pub healthmonitor: Option<ActualHealthMonitor>,
    pub tags: Vec<String>,
    /// provisioning_status ERROR: replaced by a new one (see [`plan_writes`](super::diff::plan_writes)).
    pub in_error: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ActualMember {
    pub id: String,
    pub name: String,
    pub address: IpAddr,
    pub protocol_port: u16,
    pub weight: u16,
    pub backup: bool,
    pub admin_state_up: bool,
    pub tags: Vec<String>,
    /// provisioning_status ERROR: rewritten by the next batch update.
    pub in_error: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ActualHealthMonitor {
    pub id: String,
    pub spec: HealthMonitorSpec,
    pub tags: Vec<String>,
}

/// The per-pool health monitor (defined with the desired state, which may carry one per pool).
pub use crate::model::HealthMonitorSpec;
