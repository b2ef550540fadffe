//! The clients and the spec every step of the driver works with. The [`super::Router`] holds
//! one next to its caches; the files of the steps (lifecycle, read, execute, floating IP) take it
//! as a parameter, so they depend on this file and never on the router or on each other's callers.

use super::error::{DriverError, Result};
use super::spec::RouterSpec;
use crate::openstack::{Barbican, Error as OsError, Neutron, Octavia};

#[derive(Clone, Debug)]
pub struct Cloud {
    pub octavia: Octavia,
    pub neutron: Neutron,
    /// Where TLS certificates are stored; None when the cloud has no key manager.
    pub barbican: Option<Barbican>,
    pub spec: RouterSpec,
    /// Whether this process may write (the leader lease): checked before every write.
    pub gate: WriteGate,
}

/// "Still leader?", cheap enough to ask before every Octavia write: the leader election's watch
/// (see `controller::leader`); always open without leader election.
#[derive(Clone, Debug, Default)]
pub struct WriteGate(Option<tokio::sync::watch::Receiver<bool>>);

impl WriteGate {
    pub fn new(is_leader: tokio::sync::watch::Receiver<bool>) -> Self {
        Self(Some(is_leader))
    }

    pub fn is_open(&self) -> bool {
        self.0.as_ref().is_none_or(|rx| *rx.borrow())
    }
}

impl Cloud {
    /// Wait for the router to be ACTIVE again after one of our writes. Octavia refuses any other
    /// write meanwhile (409), so waiting here keeps the next write from burning retries; a router
    /// that went to ERROR is reported as such (it is never modified automatically).
    pub async fn settle(&self, lb_id: &str) -> Result<()> {
        match self.octavia.wait_active(lb_id, self.spec.write_timeout).await {
            Ok(_) => Ok(()),
            Err(OsError::Provisioning { .. }) => {
                Err(DriverError::RouterInError { name: self.spec.name.clone(), id: lb_id.into() })
            }
            Err(e) => Err(e.into()),
        }
    }
}
