//! The serial writer's backend on the real Octavia (see [`super::writer`]): the driver's
//! [`Router`] converges, the writer only sees labelled errors.

use crate::controller::writer::{DeleteResult, MembersOutcome, MembersResult, RouterBackend, SyncResult, WriteError};
use crate::driver::{ConvergeReport, DriverError, Router, WriteGate};
use crate::model::{DesiredRouter, Pool};

/// [`RouterBackend`] on the real Octavia: the driver's [`Router`] does the work (it holds the
/// pool-id cache of the Members path); the writer only maps its errors to labels.
pub struct OctaviaBackend {
    router: Router,
}

impl OctaviaBackend {
    pub fn new(router: Router) -> Self {
        Self { router }
    }
}

/// Foreign objects left alone, copies deleted, objects in ERROR replaced: the operator learns it
/// here (`apply` prints the same lines).
fn logged(report: ConvergeReport) -> ConvergeReport {
    for c in &report.conflicts {
        tracing::warn!(router = %report.lb_id, "{c}");
    }
    report
}

fn driver_error(e: DriverError) -> WriteError {
    WriteError::new(e.label(), e.to_string())
}

impl RouterBackend for OctaviaBackend {
    async fn sync(&self, desired: &DesiredRouter) -> SyncResult {
        Ok(logged(self.router.converge(desired).await.map_err(driver_error)?))
    }

    async fn sync_reading_budget(&self, desired: &DesiredRouter) -> SyncResult {
        Ok(logged(self.router.converge_reading_budget(desired).await.map_err(driver_error)?))
    }

    async fn set_members(&self, pool: &Pool) -> MembersResult {
        self.router.set_members(pool).await.map(MembersOutcome::from).map_err(driver_error)
    }

    fn conflict_retries(&self) -> u64 {
        self.router.conflict_retries()
    }

    async fn delete_router(&self) -> DeleteResult {
        self.router.delete_router().await.map_err(driver_error)
    }

    fn blocked(&self) -> bool {
        self.router.is_blocked()
    }

    fn set_write_gate(&mut self, gate: WriteGate) {
        self.router.set_write_gate(gate);
    }

    async fn set_load_balancers(&self) -> Result<Vec<crate::driver::FoundRouter>, WriteError> {
        self.router.set_load_balancers().await.map_err(driver_error)
    }
}
