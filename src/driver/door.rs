//! The one door every write of the driver goes through: the router's create and delete, both
//! listeners, the planned writes on its children, a member update, the Barbican secrets and the
//! floating IP. [`write`] owns, in this order:
//!
//! 1. the gate: `Err(NotLeader)` once this process may no longer write (the leader lease, a
//!    SIGTERM), before anything is sent;
//! 2. the permit: at most `WritePermits` writes in flight across every router of the process.
//!    Octavia's worker and the amphorae are shared: four routers writing at once stretched each
//!    write from 2 s to 5.8 s on the test cloud, so a write that waits for a permit loses little
//!    and the ones in flight finish sooner (the permit is held through the settle);
//! 3. the timer, the error (one shape per service, naming the write), the settle (the router
//!    ACTIVE again after an Octavia write) and the record ([`WriteRecord`], one log line).
//!
//! Callers decide what to write (pure plans: `diff::plan_writes`, `listener_plan`,
//! `certificates`); this file only carries it out.

use super::cloud::Cloud;
use super::error::{DriverError, Result};
use super::report::WriteRecord;
use crate::openstack::Error as OsError;
use std::future::Future;
use std::time::Instant;

/// Which service a write goes to: decides the shape of its error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Service {
    /// A failure is `DriverError::Write` naming the write (refusals are told apart from it).
    Octavia,
    Neutron,
    /// A failure is `DriverError::KeyManager` (Barbican unavailable holds the HTTPS side).
    Barbican,
}

/// After the call: what to wait for before the write counts as done.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Settle {
    /// Nothing (Neutron, Barbican, or a call that waits itself).
    No,
    /// The router (this load balancer id) ACTIVE again: Octavia refuses any other write on it
    /// meanwhile (see [`Cloud::settle`]).
    Router(String),
}

/// One write, as the door records it.
#[derive(Clone, Debug)]
pub struct Order {
    /// Its [`WriteRecord::kind`] (`create_listener`, `create_secret`, ...).
    pub kind: &'static str,
    /// What it does, for the record, the log and its error. Never key material.
    pub description: String,
    pub service: Service,
    pub settle: Settle,
}

impl Order {
    pub fn octavia(kind: &'static str, description: String, lb_id: &str) -> Self {
        Self { kind, description, service: Service::Octavia, settle: Settle::Router(lb_id.into()) }
    }

    pub fn neutron(kind: &'static str, description: String) -> Self {
        Self { kind, description, service: Service::Neutron, settle: Settle::No }
    }

    pub fn barbican(kind: &'static str, description: String) -> Self {
        Self { kind, description, service: Service::Barbican, settle: Settle::No }
    }

    /// An Octavia write whose call waits itself (the router's create and delete: the door has
    /// no router to wait for).
    pub fn octavia_waited(kind: &'static str, description: String) -> Self {
        Self { kind, description, service: Service::Octavia, settle: Settle::No }
    }
}

/// A call's failure: an OpenStack error (shaped by the door per service) or a driver error
/// already shaped by a call that waits or checks itself (the router's create).
pub enum CallError {
    OpenStack(OsError),
    Driver(DriverError),
}

impl From<OsError> for CallError {
    fn from(e: OsError) -> Self {
        CallError::OpenStack(e)
    }
}

impl From<DriverError> for CallError {
    fn from(e: DriverError) -> Self {
        CallError::Driver(e)
    }
}

fn shape(order: &Order, error: CallError) -> DriverError {
    match (error, order.service) {
        (CallError::Driver(e), _) => e,
        (CallError::OpenStack(source), Service::Barbican) => DriverError::KeyManager { source },
        (CallError::OpenStack(source), Service::Octavia | Service::Neutron) => {
            DriverError::write(order.description.clone(), source)
        }
    }
}

/// See the module docs. `call` is a future not yet polled: nothing is sent before the gate and
/// the permit let it through.
pub async fn write<T, E>(
    cloud: &Cloud,
    order: Order,
    call: impl Future<Output = Result<T, E>>,
) -> Result<(T, WriteRecord)>
where
    E: Into<CallError>,
{
    cloud.writable()?;
    let _permit = cloud.permits.acquire().await;
    // Asked again: the lease may have gone while this write waited for its permit.
    cloud.writable()?;
    let t = Instant::now();
    let out = call.await.map_err(|e| shape(&order, e.into()))?;
    if let Settle::Router(lb_id) = &order.settle {
        cloud.settle(lb_id).await?;
    }
    let duration = t.elapsed();
    tracing::info!(write = %order.description, duration_ms = duration.as_millis() as u64, "write done");
    Ok((out, WriteRecord { kind: order.kind, description: order.description, duration }))
}

/// [`write`], recorded in `writes` (a convergence's report).
pub async fn write_recorded<T, E>(
    cloud: &Cloud,
    order: Order,
    writes: &mut Vec<WriteRecord>,
    call: impl Future<Output = Result<T, E>>,
) -> Result<T>
where
    E: Into<CallError>,
{
    let (out, record) = write(cloud, order, call).await?;
    writes.push(record);
    Ok(out)
}
