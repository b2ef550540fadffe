//! Leader-election timings and names: plain data the configuration carries and
//! `controller::leader` runs with (config sits below the controller, so the type lives here).

/// Default lease duration: a standby takes over at most this long after the leader died.
pub const DEFAULT_LEASE_DURATION_SECS: u64 = 15;
/// Default renew margin: the leader renews this long before expiry (also the tolerated clock skew).
pub const DEFAULT_LEASE_GRACE_SECS: u64 = 5;

/// Where and how to hold the lease.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaderSettings {
    /// Lease name, e.g. `kuryr-l7-router` (one lease per router).
    pub lease_name: String,
    /// Namespace of the Lease (the controller's own namespace).
    pub namespace: String,
    /// This replica's identity (`holderIdentity`): the pod name.
    pub identity: String,
    pub duration_secs: u64,
    pub grace_secs: u64,
}

impl LeaderSettings {
    pub fn new(lease_name: &str, namespace: &str, identity: &str) -> Self {
        Self {
            lease_name: lease_name.into(),
            namespace: namespace.into(),
            identity: identity.into(),
            duration_secs: DEFAULT_LEASE_DURATION_SECS,
            grace_secs: DEFAULT_LEASE_GRACE_SECS,
        }
    }
}
