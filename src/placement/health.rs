//! Whether a router of the set takes new groups: a router that cannot be built (quota, a
//! refused create) or is in ERROR is the emptiest router, so without this rule every new group
//! would go to the one router that cannot serve it. Groups already placed there stay (moving
//! them is an operator's or a relief's decision); only NEW groups are kept away, until the
//! router has been healthy for a while (`ROUTER_SETTLE_SECS`, counted by the controller).

use serde::{Deserialize, Serialize};

use super::UnixSeconds;

/// How long a router whose Sync failed must sync again without failure before new groups go
/// there again (a create refused for quota often succeeds once, then fails again).
pub const ROUTER_SETTLE_SECS: u64 = 300;

/// A router's health as its writer last saw it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum RouterHealth {
    /// Never failed (or failed so long ago that it settled): takes new groups.
    #[default]
    Healthy,
    /// Its last Sync failed (a create refused, ERROR): takes no new group.
    Failing,
    /// Synced again after a failure; takes new groups from `until` on.
    Recovering { until: UnixSeconds },
}

impl RouterHealth {
    /// Whether placement may put a new group on this router at `now`.
    pub fn takes_new_groups(self, now: UnixSeconds) -> bool {
        match self {
            RouterHealth::Healthy => true,
            RouterHealth::Failing => false,
            RouterHealth::Recovering { until } => now >= until,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_router_healthy_for_its_settle_period_takes_new_groups() {
        // (health, now, takes new groups)
        let cases = [
            (RouterHealth::Healthy, 0, true),
            (RouterHealth::Failing, 0, false),
            (RouterHealth::Failing, u64::MAX, false),
            (RouterHealth::Recovering { until: 1300 }, 1000, false),
            (RouterHealth::Recovering { until: 1300 }, 1299, false),
            (RouterHealth::Recovering { until: 1300 }, 1300, true),
            (RouterHealth::Recovering { until: 1300 }, 5000, true),
        ];
        for (health, now, takes) in cases {
            assert_eq!(health.takes_new_groups(now), takes, "{health:?} at {now}");
        }
    }
}
