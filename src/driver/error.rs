//! What can go wrong in the driver, with a low-cardinality label per kind for metrics.

use crate::openstack::Error as OsError;
use std::net::IpAddr;

/// The label of an error of the configured or static floating IP (none such in the project, or
/// one on another port): what a Gateway reports as `AddressNotUsable`.
pub const FLOATING_IP_LABEL: &str = "floating_ip";

#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    #[error(transparent)]
    OpenStack(OsError),
    #[error(
        "L7 router {name} ({id}) is in provisioning_status ERROR; it is not modified nor deleted automatically: \
         see docs/operations.md (\"A router in ERROR\") for the explicit recovery"
    )]
    RouterInError { name: String, id: String },
    #[error("[octavia_defaults] l7_router_uuid = {0}: no such load balancer")]
    AdoptedRouterNotFound(String),
    #[error(
        "several load balancers are named {name} with our tags ({ids}); refusing to choose: delete the extra ones or set \
         [octavia_defaults] l7_router_uuid"
    )]
    DuplicateRouters { name: String, ids: String },
    #[error("the L7 router {0} does not exist and [neutron_defaults] lb_subnet is not set, so it cannot be created")]
    NoVipSubnet(String),
    #[error(
        "floating IP {0} ([neutron_defaults] l7_router_ip, or a Gateway's spec.addresses): no such floating IP in this project"
    )]
    FloatingIpNotFound(IpAddr),
    #[error(
        "floating IP {ip} ([neutron_defaults] l7_router_ip, or a Gateway's spec.addresses) is associated to port {port}, not to the L7 router's VIP port {vip_port}"
    )]
    FloatingIpInUse { ip: IpAddr, port: String, vip_port: String },
    #[error("Ingresses have TLS but the cloud has no key-manager (Barbican) endpoint to store certificates in")]
    NoKeyManager,
    #[error("Barbican: {source}")]
    KeyManager {
        #[source]
        source: OsError,
    },
    #[error(
        "router writes held: the router has an HTTPS listener and Barbican does not answer ({source}); Octavia's \
         worker reads every certificate for most writes, so a write made now would never complete"
    )]
    WritesHeld { source: Box<DriverError> },
    /// A certificate that translated fine could not be bundled (never expected).
    #[error("certificate: {0}")]
    Certificate(String),
    #[error(
        "this replica stopped writing (its leader lease is lost, or it is shutting down): the next leader continues"
    )]
    NotLeader,
    #[error(
        "L7 router {name} ({id}) refuses writes ({why}); writes are skipped until it is ACTIVE again (checked every \
         {recheck_s} s)"
    )]
    RouterBlocked { name: String, id: String, why: String, recheck_s: u64 },
    #[error(
        "L7 router {name} is not created: the project's Octavia quota has no room for its routes (they need \
         {need_policies} L7 policies and {need_rules} L7 rules; the project can take {room}); its Ingresses wait, \
         older first, and the router is created when room is made"
    )]
    NoRoomForRouter { name: String, need_policies: u64, need_rules: u64, room: String },
    /// A write the in-memory Octavia (`super::sim`) cannot apply (tests only).
    #[error("simulated Octavia: {0}")]
    Simulated(String),
    #[error("write failed: {write}: {source}")]
    Write {
        write: String,
        #[source]
        source: OsError,
    },
}

/// A write the write permit stopped is the lost lease, whatever call it came from.
impl From<OsError> for DriverError {
    fn from(e: OsError) -> Self {
        match e {
            OsError::Fenced => DriverError::NotLeader,
            e => DriverError::OpenStack(e),
        }
    }
}

impl DriverError {
    /// A write refused by OpenStack, named; [`DriverError::NotLeader`] when it was never sent
    /// because the write gate closed (before it, or between two busy retries).
    pub fn write(write: String, source: OsError) -> Self {
        match source {
            OsError::Fenced => DriverError::NotLeader,
            source => DriverError::Write { write, source },
        }
    }

    /// Low-cardinality label for metrics.
    pub fn label(&self) -> &'static str {
        match self {
            DriverError::OpenStack(e) | DriverError::Write { source: e, .. } => e.label(),
            DriverError::RouterInError { .. } => "router_error",
            DriverError::RouterBlocked { .. } => "router_blocked",
            DriverError::NotLeader => "not_leader",
            DriverError::NoRoomForRouter { .. } => "quota_exceeded",
            DriverError::Simulated(_) => "sim",
            DriverError::AdoptedRouterNotFound(_) => "router_not_found",
            DriverError::DuplicateRouters { .. } => "duplicate_routers",
            DriverError::NoVipSubnet(_) => "config",
            DriverError::FloatingIpNotFound(_) | DriverError::FloatingIpInUse { .. } => FLOATING_IP_LABEL,
            DriverError::NoKeyManager
            | DriverError::KeyManager { .. }
            | DriverError::Certificate(_)
            | DriverError::WritesHeld { .. } => "barbican",
        }
    }
}

pub type Result<T, E = DriverError> = std::result::Result<T, E>;
