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
    /// How many writes may be in flight across the routers of the process (see `door`).
    pub permits: WritePermits,
}

/// "May this process still write?", cheap enough to ask before every Octavia write: closed once
/// the leader lease is lost (the election's watch, see `controller::leader`) or once the process
/// is stopping (SIGTERM: the write in flight is the last one). Always open when built with
/// neither.
#[derive(Clone, Debug, Default)]
pub struct WriteGate {
    leader: Option<tokio::sync::watch::Receiver<bool>>,
    stop: Option<tokio::sync::watch::Receiver<bool>>,
}

impl WriteGate {
    /// Open while `is_leader` says `true`.
    pub fn new(is_leader: tokio::sync::watch::Receiver<bool>) -> Self {
        Self { leader: Some(is_leader), stop: None }
    }

    /// Also closed once `stop` says `true`.
    pub(crate) fn stopping_on(mut self, stop: tokio::sync::watch::Receiver<bool>) -> Self {
        self.stop = Some(stop);
        self
    }

    pub fn is_open(&self) -> bool {
        self.leader.as_ref().is_none_or(|rx| *rx.borrow()) && self.stop.as_ref().is_none_or(|rx| !*rx.borrow())
    }
}

/// How many writes may be in flight at once across every router of the process, in two pools
/// shared by every router (cloned into each): the load balancers' creates and deletes
/// (`[octavia_defaults] parallel_creates`), each held through its wait of up to
/// `lb_create_timeout`, and every other write (`parallel_writes`: members, policies, listeners,
/// secrets, floating IPs), each held only through its settle. Two pools so that a member update
/// never waits behind creates: four 600 s creates of Gateways or set routers used to hold every
/// permit while the other routers' endpoint changes queued behind them.
#[derive(Clone, Debug)]
pub struct WritePermits {
    writes: std::sync::Arc<tokio::sync::Semaphore>,
    creates: std::sync::Arc<tokio::sync::Semaphore>,
}

/// Which of the [`WritePermits`] a write takes (decided by its `door::Order`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PermitPool {
    /// Every write but a load balancer's create or delete.
    Writes,
    /// A load balancer's create or delete, which waits for the amphora (minutes).
    Creates,
}

fn semaphore(permits: usize) -> std::sync::Arc<tokio::sync::Semaphore> {
    std::sync::Arc::new(tokio::sync::Semaphore::new(permits.clamp(1, tokio::sync::Semaphore::MAX_PERMITS)))
}

impl WritePermits {
    /// `writes` other writes and `creates` creates or deletes in flight at once.
    pub fn new(writes: usize, creates: usize) -> Self {
        Self { writes: semaphore(writes), creates: semaphore(creates) }
    }

    /// No bound (a router built alone, in tests and tools).
    pub fn unlimited() -> Self {
        Self::new(tokio::sync::Semaphore::MAX_PERMITS, tokio::sync::Semaphore::MAX_PERMITS)
    }

    /// One write's permit from `pool`, held until it is dropped.
    pub(crate) async fn acquire(&self, pool: PermitPool) -> tokio::sync::SemaphorePermit<'_> {
        let semaphore = match pool {
            PermitPool::Writes => &self.writes,
            PermitPool::Creates => &self.creates,
        };
        semaphore.acquire().await.expect("the write permits are never closed")
    }

    /// Permits of `pool` free now (tests and metrics).
    pub fn available(&self, pool: PermitPool) -> usize {
        match pool {
            PermitPool::Writes => self.writes.available_permits(),
            PermitPool::Creates => self.creates.available_permits(),
        }
    }
}

impl Default for WritePermits {
    fn default() -> Self {
        Self::unlimited()
    }
}

impl Cloud {
    /// Whose Barbican secrets this router owns (see [`super::certificates`]).
    pub(crate) fn secret_scope(&self) -> super::certificates::SecretScope {
        super::certificates::SecretScope::new(&self.spec.ownership.cluster, &self.spec.name)
    }

    /// `Err(NotLeader)` once the write gate is closed: asked by the write door (`door::write`)
    /// before every write, so that a replica that lost its lease stops before its next write.
    pub fn writable(&self) -> Result<()> {
        if self.gate.is_open() { Ok(()) } else { Err(DriverError::NotLeader) }
    }

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
