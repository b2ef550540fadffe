//! Scale-out turned off (issue 36, item 2): whether the set runs on to drain into the first
//! router, and what a start without a set does with the records an earlier run left.
//!
//! The drain itself is placement's (`placement::excess::drain_moves`, `RouterSet::draining`):
//! every group on a router beyond the first moves to it make-before-break, and each emptied
//! router is deleted after `empty_router_grace` with its floating IP.

use crate::controller::router_set::store::SetStore;
use crate::placement::{RouterIndex, UnixSeconds, router_name};

/// How the leader runs the Ingress routers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetMode {
    /// `scale_out = true`.
    On,
    /// `scale_out = false` with routers of the set on Octavia: drain them into the first.
    Draining,
    /// `scale_out = false`, no router beyond the first: the single router.
    Off,
}

/// The mode, from the option and the routers of the set found on Octavia (our set tag).
pub fn mode(enabled: bool, base: &str, found: &[(RouterIndex, Option<UnixSeconds>)]) -> SetMode {
    match (enabled, found.is_empty()) {
        (true, _) => SetMode::On,
        (false, true) => SetMode::Off,
        (false, false) => {
            let names: Vec<String> = found.iter().map(|(i, _)| router_name(base, *i)).collect();
            tracing::warn!(
                routers = ?names,
                "scale_out is off but routers of the set exist: their groups move to the first router \
                 (make-before-break), then they are deleted with their floating IPs"
            );
            SetMode::Draining
        }
    }
}

/// Scale-out off and no set on Octavia: the set's records, if an earlier run with scale-out left
/// some, are deleted. They would be stale by the next time scale-out is turned on (the single
/// router's hosts change meanwhile, unrecorded), and a start without records reads where the
/// routers route each host instead (`router_set::observed`). Best effort (logged).
pub async fn forget_records(client: &kube::Client, namespace: &str, base: &str) {
    let store: SetStore = SetStore::new(kube::Api::namespaced(client.clone(), namespace), base);
    match store.delete_all().await {
        Ok(0) => {}
        Ok(n) => tracing::info!(configmaps = n, "scale_out is off: the router set's records deleted"),
        Err(e) => tracing::warn!(error = %e, "scale_out is off: the router set's records not deleted"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_out_off_drains_only_while_routers_of_the_set_exist() {
        assert_eq!(mode(true, "edge", &[]), SetMode::On);
        assert_eq!(mode(true, "edge", &[(1, None)]), SetMode::On);
        assert_eq!(mode(false, "edge", &[]), SetMode::Off);
        assert_eq!(mode(false, "edge", &[(1, Some(5))]), SetMode::Draining);
    }
}
