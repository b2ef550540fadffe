//! The Services whose endpoints changed, from the Ingress side's Service handler to the Gateway
//! driver (`gateway_members` refills their pools). A leaf: the context holds it, and the Gateway
//! side takes from it, without either importing the other.

use crate::model::KubeRef;
use std::collections::BTreeSet;
use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::Notify;

/// The Services whose endpoints (or Node weights) changed since the Gateway driver last looked:
/// a set, so a burst of changes to one Service is one refill.
#[derive(Default)]
pub struct ServiceChanges {
    pending: Mutex<BTreeSet<KubeRef>>,
    notify: Notify,
}

impl ServiceChanges {
    /// Records a change of `service`.
    pub fn changed(&self, service: KubeRef) {
        self.pending.lock().expect("lock").insert(service);
        // A permit is kept when the driver is not waiting: no change is lost.
        self.notify.notify_one();
    }

    /// The Services changed: waits for the first, then `window` more (the member change window,
    /// so that the changes of a rollout go in one batch write per pool), then takes them all.
    pub async fn next(&self, window: Duration) -> BTreeSet<KubeRef> {
        loop {
            let notified = self.notify.notified();
            if !self.pending.lock().expect("lock").is_empty() {
                break;
            }
            notified.await;
        }
        if !window.is_zero() {
            tokio::time::sleep(window).await;
        }
        std::mem::take(&mut *self.pending.lock().expect("lock"))
    }
}
