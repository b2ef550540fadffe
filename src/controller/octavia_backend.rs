//! The serial writer's backend on the real Octavia (see [`super::writer`]): the driver's
//! [`Router`] converges, the writer only sees labelled errors.

use crate::controller::stamp_store::{StampStore, StampStores};
use crate::controller::writer::{DeleteResult, MembersOutcome, MembersResult, RouterBackend, SyncResult, WriteError};
use crate::driver::{ConvergeReport, DriverError, Router, WriteGate};
use crate::model::{DesiredRouter, Pool};

/// [`RouterBackend`] on the real Octavia: the driver's [`Router`] does the work (it holds the
/// pool-id cache of the Members path); the writer only maps its errors to labels.
pub struct OctaviaBackend {
    router: Router,
    /// Where the stamps of the router's reads outlive the process (see [`super::stamp_store`]).
    stamps: Option<tokio::sync::Mutex<StampStore>>,
}

impl OctaviaBackend {
    pub fn new(router: Router) -> Self {
        Self { router, stamps: None }
    }

    /// Before the first read of this process: the stamps a previous leader left.
    async fn load_stamps(&self) {
        let Some(store) = &self.stamps else { return };
        if let Some(text) = store.lock().await.load_once().await {
            if self.router.load_stamps(&text) {
                tracing::info!(router = %self.router.spec().name, "stamps of an earlier read loaded: unchanged parents are not read again");
            } else {
                tracing::warn!(router = %self.router.spec().name, "stamps ConfigMap damaged: the router is read whole");
            }
        }
    }

    /// After a Sync: the stamps, if they changed, at most once per resync period.
    async fn save_stamps(&self) {
        let Some(store) = &self.stamps else { return };
        let mut store = store.lock().await;
        if store.due(std::time::Instant::now())
            && let Some(text) = self.router.take_changed_stamps()
        {
            store.save(&text).await;
        }
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
        self.load_stamps().await;
        let report = self.router.converge(desired).await.map_err(driver_error)?;
        self.save_stamps().await;
        Ok(logged(report))
    }

    async fn sync_reading_budget(&self, desired: &DesiredRouter) -> SyncResult {
        self.load_stamps().await;
        let report = self.router.converge_reading_budget(desired).await.map_err(driver_error)?;
        self.save_stamps().await;
        Ok(logged(report))
    }

    async fn set_members(&self, pool: &Pool) -> MembersResult {
        self.router.set_members(pool).await.map(MembersOutcome::from).map_err(driver_error)
    }

    fn conflict_retries(&self) -> u64 {
        self.router.conflict_retries()
    }

    async fn delete_router(&self) -> DeleteResult {
        let deleted = self.router.delete_router().await.map_err(driver_error)?;
        if let Some(store) = &self.stamps {
            store.lock().await.delete().await;
        }
        Ok(deleted)
    }

    fn set_stamp_stores(&mut self, stores: StampStores) {
        self.stamps = Some(tokio::sync::Mutex::new(StampStore::new(stores, &self.router.spec().name)));
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

    async fn routed_hosts(&self) -> Result<Option<std::collections::BTreeSet<String>>, WriteError> {
        let Some(snapshot) = self.router.snapshot().await.map_err(driver_error)? else { return Ok(None) };
        let https = snapshot.https.as_ref().map(|h| &h.actual);
        Ok(Some(crate::controller::router_set::migration::routed_hosts(snapshot.actual.iter().chain(https))))
    }
}
