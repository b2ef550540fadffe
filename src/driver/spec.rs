//! What the router should be, from `[octavia_defaults]`, `[neutron_defaults]` and `[kubernetes]`.

use super::ownership::Ownership;
use super::plan::DiffOptions;
use crate::model::HealthMonitorSpec;
use std::net::IpAddr;
use std::time::Duration;

/// What the router should be, from `[octavia_defaults]`, `[neutron_defaults]` and `[kubernetes]`.
#[derive(Clone, Debug)]
pub struct RouterSpec {
    pub name: String,
    /// Adopt this load balancer (created by devstack or an admin) instead of finding ours by name.
    pub uuid: Option<String>,
    /// VIP subnet; needed only to create the router.
    pub vip_subnet_id: Option<String>,
    pub availability_zone: Option<String>,
    pub provider: Option<String>,
    pub listener_port: u16,
    /// Build a new router in one fully-populated create (else one write per object).
    pub fully_populated_create: bool,
    /// The largest fully-populated create body sent (Octavia's API refuses a larger request with
    /// a 413); what does not fit is written object by object afterwards.
    pub max_create_body_bytes: usize,
    /// `[neutron_defaults] l7_router_ip`: an existing floating IP to put on the VIP.
    pub floating_ip: Option<IpAddr>,
    /// `[neutron_defaults] external_svc_subnet`: where to allocate a floating IP otherwise.
    pub external_svc_subnet: Option<String>,
    pub ownership: Ownership,
    /// `[octavia_defaults] member_mode = L2`: the subnet (`[neutron_defaults] pod_subnet`) every
    /// member of ours is created on, as Kuryr does; `None` (L3): members are routed addresses.
    pub member_subnet: Option<String>,
    pub health_monitor: Option<HealthMonitorSpec>,
    pub create_timeout: Duration,
    pub write_timeout: Duration,
    /// X-Forwarded-For/Port/Proto on both listeners.
    pub insert_forwarded_headers: bool,
    /// Keystone user ids given read access to our Barbican secrets (Octavia's service user, where
    /// the cloud's Octavia does not add itself to the secret's ACL).
    pub secret_read_users: Vec<String>,
}

impl RouterSpec {
    /// The part of the spec the pure diff needs.
    pub(crate) fn diff_options(&self) -> DiffOptions {
        DiffOptions { ownership: self.ownership.clone(), health_monitor: self.health_monitor.clone() }
    }

    /// The name of the router's HTTP listener, when we create it.
    pub(crate) fn http_listener_name(&self) -> String {
        format!("{}-http", self.name)
    }

    /// A spec for the tests (router `name` of cluster `c1` on port 80, no subnet nor zone,
    /// timeouts of a second).
    #[cfg(any(test, feature = "testing"))]
    pub fn for_tests(name: &str) -> Self {
        Self {
            name: name.into(),
            uuid: None,
            vip_subnet_id: None,
            availability_zone: None,
            provider: None,
            listener_port: 80,
            fully_populated_create: true,
            max_create_body_bytes: 114_688,
            floating_ip: None,
            external_svc_subnet: None,
            ownership: Ownership::new("c1"),
            member_subnet: None,
            health_monitor: None,
            create_timeout: Duration::from_secs(1),
            write_timeout: Duration::from_secs(1),
            insert_forwarded_headers: true,
            secret_read_users: vec![],
        }
    }
}
