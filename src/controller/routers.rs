//! The routers one controller drives, each a key (its name) and a slot of everything that is
//! per router: its writer (which holds its last Sync and its objects on hold), its budget under
//! the project's quotas, its line of `/readyz` and its metrics.
//!
//! Without scale-out a controller drives exactly one router; with `[octavia_defaults] scale_out`
//! it drives one slot per router of the set (`crate::controller::router_set`).

use crate::controller::health::Readiness;
use crate::controller::metrics::{Metrics, RouterMetrics};
use crate::controller::outputs::Ledger;
use crate::controller::writer::WriterHandle;
use crate::driver::ConvergeReport;
use crate::translate::budget::Budget;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::sync::watch;

/// One router the controller drives.
pub struct RouterSlot {
    /// The router's key: what Service notices name (`l7_router_uuid`, else `l7_router_name`),
    /// the `router` label of its metrics, its line of `/readyz`.
    pub name: String,
    /// Its serial writer: the only caller of its driver; holds its last Sync and holds.
    pub writer: WriterHandle,
    pub metrics: RouterMetrics,
    /// What the project's Octavia quotas leave for the router (None: unlimited or not read
    /// yet), as the driver's last report that read it said (see `translate::budget`).
    budget: Mutex<Option<Budget>>,
    /// Set when a report changed the budget, until [`RouterSlot::take_budget_change`].
    budget_changed: AtomicBool,
    /// Whether a report ever read the budget (an unread router of a set forces its Syncs to read
    /// it: see `Context::sync_set`).
    budget_read: AtomicBool,
    /// What the waiters of its recent Sync jobs have applied of their outputs.
    pub(crate) outputs: Mutex<Ledger>,
}

impl RouterSlot {
    pub fn new(name: impl Into<String>, writer: WriterHandle, metrics: &Metrics) -> Self {
        let name = name.into();
        Self {
            metrics: metrics.router(&name),
            name,
            writer,
            budget: Mutex::new(None),
            budget_changed: AtomicBool::new(false),
            budget_read: AtomicBool::new(false),
            outputs: Mutex::default(),
        }
    }

    /// The budget the translation for this router refuses Ingresses beyond.
    pub fn budget(&self) -> Option<Budget> {
        *self.budget.lock().expect("lock")
    }

    /// Sets the budget; true when it changed.
    pub(crate) fn set_budget(&self, budget: Option<Budget>) -> bool {
        let changed = std::mem::replace(&mut *self.budget.lock().expect("lock"), budget) != budget;
        if changed {
            self.budget_changed.store(true, Ordering::SeqCst);
        }
        changed
    }

    /// Takes the budget a convergence read (if it read one). An unreadable quota (e.g. a policy
    /// that forbids reading it) keeps the budget the router had.
    pub(crate) fn take_budget_of(&self, report: &ConvergeReport) {
        if report.budget.is_some() {
            self.budget_read.store(true, Ordering::SeqCst);
        }
        match &report.budget {
            None => {}
            Some(Ok(budget)) if self.set_budget(*budget) => {
                tracing::info!(router = %self.name, ?budget, "L7 policy/rule budget under the project quota changed");
            }
            Some(Ok(_)) => {}
            Some(Err(e)) => tracing::warn!(router = %self.name, error = %e, "cannot read the project's Octavia quotas"),
        }
    }

    /// Whether a convergence has read the budget (even as unreadable).
    pub fn budget_read(&self) -> bool {
        self.budget_read.load(Ordering::SeqCst)
    }

    /// Whether the budget changed since the last call (then the router must converge to it).
    pub fn take_budget_change(&self) -> bool {
        self.budget_changed.swap(false, Ordering::SeqCst)
    }

    /// `/readyz`: the router exists (a Sync succeeded).
    pub(crate) fn mark_ready(&self, readiness: &watch::Sender<Readiness>) {
        readiness.send_if_modified(|r| !std::mem::replace(&mut r.router_mut(&self.name).ready, true));
    }
}

/// The routers, by key. With scale-out a router joins the set when placement first puts a group
/// on it (`crate::controller::router_set`), so the map grows while the controller runs.
pub struct Routers {
    slots: std::sync::RwLock<BTreeMap<String, Arc<RouterSlot>>>,
}

impl Routers {
    pub fn new(slots: impl IntoIterator<Item = RouterSlot>) -> Self {
        Self { slots: std::sync::RwLock::new(slots.into_iter().map(|s| (s.name.clone(), Arc::new(s))).collect()) }
    }

    pub fn get(&self, name: &str) -> Option<Arc<RouterSlot>> {
        self.slots.read().expect("lock").get(name).cloned()
    }

    /// Adds `slot` unless a slot of that key exists; the slot of that key either way.
    pub fn insert(&self, slot: RouterSlot) -> Arc<RouterSlot> {
        let mut slots = self.slots.write().expect("lock");
        slots.entry(slot.name.clone()).or_insert_with(|| Arc::new(slot)).clone()
    }

    /// Every slot, by key.
    pub fn iter(&self) -> std::vec::IntoIter<Arc<RouterSlot>> {
        self.slots.read().expect("lock").values().cloned().collect::<Vec<_>>().into_iter()
    }

    pub fn names(&self) -> Vec<String> {
        self.slots.read().expect("lock").keys().cloned().collect()
    }

    /// The first router: the only one without scale-out; with it, the router that also
    /// carries the translation's warnings (see `placement::split`).
    pub(crate) fn primary(&self) -> Arc<RouterSlot> {
        self.slots.read().expect("lock").values().next().cloned().expect("a controller drives at least one router")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::writer::{Writer, WriterMetrics};
    use crate::translate::budget::Budget;

    /// A report's budget reading: a new budget is taken and flagged once; an unreadable quota
    /// keeps the last budget; a report that did not read leaves everything as it was.
    #[tokio::test]
    async fn budget_follows_the_reports_that_read_it() {
        use crate::driver::ownership::Ownership;
        use crate::driver::plan::DiffOptions;
        let opts = DiffOptions { ownership: Ownership::new("r1"), health_monitor: None };
        let writer = Writer::spawn(crate::testing::SimBackend::new(opts, None), WriterMetrics::default());
        let slot = RouterSlot::new("r1", writer.handle(), &Metrics::default());
        let b = Budget { l7policies: Some(5), l7rules: None };
        let report = |budget| ConvergeReport { budget, ..ConvergeReport::default() };
        assert!(!slot.budget_read());
        slot.take_budget_of(&report(None));
        assert!(!slot.budget_read(), "a report that did not read");
        slot.take_budget_of(&report(Some(Ok(Some(b)))));
        assert!(slot.budget_read());
        assert_eq!((slot.budget(), slot.take_budget_change()), (Some(b), true));
        assert!(!slot.take_budget_change(), "a change is taken once");
        slot.take_budget_of(&report(Some(Err("403".into()))));
        slot.take_budget_of(&report(None));
        slot.take_budget_of(&report(Some(Ok(Some(b)))));
        assert_eq!((slot.budget(), slot.take_budget_change()), (Some(b), false));
        slot.take_budget_of(&report(Some(Ok(None))));
        assert_eq!((slot.budget(), slot.take_budget_change()), (None, true));
        writer.shutdown().await;
    }
}
