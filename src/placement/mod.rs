//! Placement of host groups on a set of small L7 routers that together act as one logical router.
//!
//! Pure: every function here is a function of its arguments (no I/O, no clock: the caller passes
//! `now`), so the controller, the `plan` command and the tests compute the same placement from
//! the same inputs. The rules, the record of placement and the move protocol are explained in
//! `docs/scale-out.md`.
//!
//! - [`groups`]: the unit placed, a host group (hosts tied together by Ingresses), and its cost.
//! - [`assign`]: which router each group goes to, keeping every placed group where it is.
//! - [`health`]: which routers take new groups (a failing router does not).
//! - [`moves`]: the make-before-break move of a group between two routers, as a state machine.
//! - [`relief`]: which group a router over capacity sends elsewhere (the group that grew).
//! - [`excess`]: what a router still over capacity sends elsewhere, and the drain when
//!   scale-out is turned off.
//! - [`split`]: the translation's desired router → the placement's input, and one desired
//!   router per router of the set.
//! - [`report`]: how `plan` shows a placement.

pub mod assign;
pub mod excess;
pub mod groups;
pub mod health;
pub mod moves;
pub mod relief;
pub mod report;
pub mod split;

use serde::{Deserialize, Serialize};

pub use assign::{Placement, PlacementInput, PlacementWarning, RouterFate, RouterRecord, place};
pub use groups::{GroupId, HostGroup, IngressClaim, group_claims};
pub use health::{ROUTER_SETTLE_SECS, RouterHealth};
pub use moves::{DEFAULT_DNS_RECORD_TTL_SECS, DNS_UPDATE_MARGIN_SECS, MovePhase, MovePlan, MoveTimings};

/// Seconds since the Unix epoch, passed in by the caller (placement never reads a clock).
pub type UnixSeconds = u64;

/// Position of a router in the set: 0 is the first router (the adopted single router), which
/// is never deleted.
pub type RouterIndex = u32;

/// What a group (or the shared part) costs on a router, counted over both listeners.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Cost {
    /// L7 policies on the HTTP and the HTTPS listener together.
    pub policies: u32,
    /// SNI certificates: Octavia fetches each from Barbican again on every listener write.
    pub certificates: u32,
}

impl Cost {
    pub fn new(policies: u32, certificates: u32) -> Self {
        Cost { policies, certificates }
    }

    pub fn plus(self, other: Cost) -> Cost {
        Cost {
            policies: self.policies.saturating_add(other.policies),
            certificates: self.certificates.saturating_add(other.certificates),
        }
    }

    /// What is left of this cost once `other` leaves (never below zero).
    pub fn minus(self, other: Cost) -> Cost {
        Cost {
            policies: self.policies.saturating_sub(other.policies),
            certificates: self.certificates.saturating_sub(other.certificates),
        }
    }

    /// True when this cost stays within `cap` in both dimensions.
    pub fn fits(self, cap: Capacity) -> bool {
        self.policies <= cap.max_policies && self.certificates <= cap.max_certificates
    }
}

/// Per-router limits (`[octavia_defaults] max_policies_per_router` and
/// `max_certificates_per_router`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Capacity {
    pub max_policies: u32,
    pub max_certificates: u32,
}

impl Capacity {
    /// Room left after `used`, in parts per million of the tighter dimension: a single number
    /// so that "the router with the most room" is one deterministic comparison.
    pub(crate) fn room_ppm(self, used: Cost) -> u64 {
        fn ppm(used: u32, cap: u32) -> u64 {
            let cap = u64::from(cap.max(1));
            cap.saturating_sub(u64::from(used)) * 1_000_000 / cap
        }
        ppm(used.policies, self.max_policies).min(ppm(used.certificates, self.max_certificates))
    }
}

/// Name of the router at `index`: `<l7_router_name>`, `<l7_router_name>-2`, `<l7_router_name>-3`, …
pub fn router_name(base: &str, index: RouterIndex) -> String {
    if index == 0 { base.to_string() } else { format!("{base}-{}", u64::from(index) + 1) }
}

/// Inverse of [`router_name`]: the index of `name` in the set named `base`, or None when `name`
/// is not one of ours (a load balancer named `<base>-1` or `<base>-x` is not in the set).
pub fn router_index(base: &str, name: &str) -> Option<RouterIndex> {
    if name == base {
        return Some(0);
    }
    let suffix = name.strip_prefix(base)?.strip_prefix('-')?;
    if suffix.starts_with('0') || !suffix.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = suffix.parse().ok()?;
    if n < 2 {
        return None;
    }
    RouterIndex::try_from(n - 1).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        assert_eq!(router_name("l7", 0), "l7");
        assert_eq!(router_name("l7", 1), "l7-2");
        assert_eq!(router_name("l7", 9), "l7-10");
        for i in [0, 1, 2, 41] {
            assert_eq!(router_index("l7", &router_name("l7", i)), Some(i));
        }
        for foreign in ["l7-1", "l7-0", "l7-02", "l7-x", "l7x-2", "other", "l7-", "l7--2"] {
            assert_eq!(router_index("l7", foreign), None, "{foreign}");
        }
    }

    #[test]
    fn room_is_the_tighter_dimension() {
        let cap = Capacity { max_policies: 100, max_certificates: 10 };
        assert_eq!(cap.room_ppm(Cost::new(0, 0)), 1_000_000);
        assert_eq!(cap.room_ppm(Cost::new(10, 5)), 500_000);
        assert_eq!(cap.room_ppm(Cost::new(150, 0)), 0);
        assert!(Cost::new(100, 10).fits(cap));
        assert!(!Cost::new(101, 0).fits(cap));
    }
}
