//! The one door every write of the driver goes through: the router's create and delete, both
//! listeners, the planned writes on its children, a member update, the Barbican secrets and the
//! floating IP. [`write`] owns, in this order:
//!
//! 1. the gate: `Err(NotLeader)` once this process may no longer write (the leader lease, a
//!    SIGTERM), before anything is sent;
//! 2. the permit: at most `WritePermits` writes in flight across every router of the process.
//!    Octavia's worker and the amphorae are shared: four routers writing at once stretched each
//!    write from 2 s to 5.8 s on the test cloud, so a write that waits for a permit loses little
//!    and the ones in flight finish sooner (the permit is held through the settle). A load
//!    balancer's create or delete takes its permit from a pool of its own ([`PermitPool`]): it
//!    is held for minutes, and a member update must not wait behind it;
//! 3. the timer, the error (one shape per service, naming the write), the settle (the router
//!    ACTIVE again after an Octavia write) and the record ([`WriteRecord`], one log line).
//!
//! Callers decide what to write (pure plans: `diff::plan_writes`, `listener_plan`,
//! `certificates`); this file only carries it out.

use super::cloud::{Cloud, PermitPool};
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
    /// Which permits it takes: a create's or delete's of a load balancer, else a write's.
    pub permit: PermitPool,
}

impl Order {
    pub fn octavia(kind: &'static str, description: String, lb_id: &str) -> Self {
        Self {
            kind,
            description,
            service: Service::Octavia,
            settle: Settle::Router(lb_id.into()),
            permit: PermitPool::Writes,
        }
    }

    pub fn neutron(kind: &'static str, description: String) -> Self {
        Self { kind, description, service: Service::Neutron, settle: Settle::No, permit: PermitPool::Writes }
    }

    pub fn barbican(kind: &'static str, description: String) -> Self {
        Self { kind, description, service: Service::Barbican, settle: Settle::No, permit: PermitPool::Writes }
    }

    /// A load balancer's create or delete: its call waits itself (the door has no router to
    /// wait for), for minutes, so it takes a create permit, never a write's.
    pub(crate) fn router_lifecycle(kind: &'static str, description: String) -> Self {
        Self { kind, description, service: Service::Octavia, settle: Settle::No, permit: PermitPool::Creates }
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
    let _permit = cloud.permits.acquire(order.permit).await;
    // Asked again: the lease may have gone while this write waited for its permit.
    cloud.writable()?;
    let t = Instant::now();
    let out = call.await.map_err(|e| shape(&order, e.into()))?;
    if let Settle::Router(lb_id) = &order.settle {
        cloud.settle(lb_id).await?;
    }
    let duration = t.elapsed();
    let (write, duration_ms) = (&order.description, duration.as_millis() as u64);
    // One line per write; Octavia's keep the wording operators already search for.
    match order.service {
        Service::Octavia => tracing::info!(%write, duration_ms, "octavia write done"),
        Service::Neutron => tracing::info!(%write, duration_ms, "neutron write done"),
        Service::Barbican => tracing::info!(%write, duration_ms, "barbican write done"),
    }
    Ok((out, WriteRecord { kind: order.kind, description: order.description, duration }))
}

/// [`write`], recorded in `writes` (a convergence's report).
pub(crate) async fn write_recorded<T, E>(
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::cloud::{PermitPool, WriteGate, WritePermits};
    use crate::driver::spec::RouterSpec;
    use crate::openstack::{AuthOptions, Neutron, Octavia, OctaviaOptions, Session};
    use crate::secret::Secret;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    /// A cloud whose clients are never called: the writes below are plain futures.
    fn cloud(gate: WriteGate, permits: WritePermits) -> Cloud {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let auth = AuthOptions::password("http://127.0.0.1:9/v3", "u", Secret::new("p"), "p", "Default");
        let session = Session::new(auth).expect("session");
        let spec = RouterSpec::for_tests("driverdoor");
        Cloud {
            octavia: Octavia::new(session.clone(), OctaviaOptions::default()),
            neutron: Neutron::new(session),
            barbican: None,
            spec,
            gate,
            permits,
        }
    }

    #[tokio::test]
    async fn a_closed_gate_sends_nothing() {
        let (_tx, rx) = tokio::sync::watch::channel(false);
        let c = cloud(WriteGate::new(rx), WritePermits::unlimited());
        let sent = AtomicUsize::new(0);
        let call = async {
            sent.fetch_add(1, Ordering::SeqCst);
            Ok::<_, OsError>(())
        };
        let r = write(&c, Order::neutron("associate_floating_ip", "associate".into()), call).await;
        assert!(matches!(r, Err(DriverError::NotLeader)), "{:?}", r.err());
        assert_eq!(sent.load(Ordering::SeqCst), 0);
    }

    /// Two routers sharing one permit: their writes run one at a time, and each is recorded
    /// with its own duration (the wait for the permit is not the write's).
    #[tokio::test]
    async fn routers_sharing_one_permit_write_one_at_a_time() {
        let permits = WritePermits::new(1, 1);
        let (a, b) = (cloud(WriteGate::default(), permits.clone()), cloud(WriteGate::default(), permits.clone()));
        let in_flight = AtomicUsize::new(0);
        let most = AtomicUsize::new(0);
        let one = |c: &'static str| {
            let (in_flight, most) = (&in_flight, &most);
            async move {
                let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(50)).await;
                in_flight.fetch_sub(1, Ordering::SeqCst);
                Ok::<_, OsError>(c)
            }
        };
        let started = std::time::Instant::now();
        let (ra, rb) = tokio::join!(
            write(&a, Order::neutron("create_floating_ip", "a".into()), one("a")),
            write(&b, Order::neutron("create_floating_ip", "b".into()), one("b")),
        );
        let ((_, rec_a), (_, rec_b)) = (ra.expect("a"), rb.expect("b"));
        assert_eq!(most.load(Ordering::SeqCst), 1);
        assert!(started.elapsed() >= Duration::from_millis(100));
        assert!(rec_a.duration < Duration::from_millis(95) && rec_b.duration < Duration::from_millis(95));
        assert_eq!(permits.available(PermitPool::Writes), 1);
    }

    /// The only create permit held by a create that does not end: a member update on another
    /// router still goes through at once, and a second create waits for the first.
    #[tokio::test]
    async fn a_write_never_waits_behind_a_create() {
        let permits = WritePermits::new(1, 1);
        let (a, b) = (cloud(WriteGate::default(), permits.clone()), cloud(WriteGate::default(), permits.clone()));
        let hanging = write(
            &a,
            Order::router_lifecycle("create_router", "a".into()),
            std::future::pending::<Result<(), OsError>>(),
        );
        tokio::pin!(hanging);
        assert!(tokio::time::timeout(Duration::from_millis(20), &mut hanging).await.is_err(), "the create hangs");
        assert_eq!(permits.available(PermitPool::Creates), 0);
        let member = write(&b, Order::neutron("batch_members", "b".into()), async { Ok::<_, OsError>(()) });
        tokio::time::timeout(Duration::from_secs(1), member).await.expect("not behind the create").expect("written");
        let create = write(&b, Order::router_lifecycle("create_router", "b".into()), async { Ok::<_, OsError>(()) });
        assert!(tokio::time::timeout(Duration::from_millis(50), create).await.is_err(), "a create waits for one");
    }

    #[tokio::test]
    async fn errors_are_shaped_per_service_and_name_the_write() {
        let c = cloud(WriteGate::default(), WritePermits::unlimited());
        let refused = || crate::openstack::Error::Api {
            service: crate::openstack::Service::Network,
            method: "PUT".into(),
            path: "/v2.0/floatingips/x".into(),
            status: 409,
            message: "in use".into(),
        };
        let r =
            write(&c, Order::neutron("associate_floating_ip", "associate X".into()), async { Err::<(), _>(refused()) })
                .await;
        assert!(matches!(&r, Err(DriverError::Write { write, .. }) if write == "associate X"), "{:?}", r.err());
        let r = write(&c, Order::barbican("delete_secret", "delete S".into()), async { Err::<(), _>(refused()) }).await;
        assert!(matches!(r, Err(DriverError::KeyManager { .. })), "{:?}", r.err());
    }
}
