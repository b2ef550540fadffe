//! One listener's desired state as its plan reads it, borrowed from the desired router: the
//! HTTPS listener's policies with the router's pools ([`DesiredView::https`]), or the desired
//! state minus the objects on hold that do not exist yet (`isolation::exclude_held`) or minus
//! the routes that wait for the quota (`admission`). A view costs a vector of references per
//! round, never a copy of the router (whose pools and policies can number thousands).

use crate::model::{DesiredRouter, HttpsListener, KubeRef, Policy, Pool, PoolHealthMonitor, PortListener, Redirect};
use std::collections::{BTreeMap, BTreeSet};

#[derive(Clone, Debug)]
pub struct DesiredView<'a> {
    /// In position order.
    pub policies: Vec<&'a Policy>,
    pub redirects: Vec<&'a Redirect>,
    pub default_pool: Option<&'a str>,
    pub default_pool_owners: &'a [KubeRef],
    pub health_monitors: &'a BTreeMap<String, PoolHealthMonitor>,
    /// The router's pools (shared by both listeners), less [`Self::left_out`].
    all_pools: &'a BTreeMap<String, Pool>,
    left_out: BTreeSet<&'a str>,
}

impl<'a> DesiredView<'a> {
    /// The whole desired state of the HTTP listener.
    pub fn of(desired: &'a DesiredRouter) -> Self {
        Self {
            policies: desired.policies.iter().collect(),
            redirects: desired.redirects.iter().collect(),
            default_pool: desired.default_pool.as_deref(),
            default_pool_owners: &desired.default_pool_owners,
            health_monitors: &desired.health_monitors,
            all_pools: &desired.pools,
            left_out: BTreeSet::new(),
        }
    }

    /// The HTTPS listener's desired state: its policies and default pool, the router's pools
    /// (already converged by the HTTP listener's plan, so they cost no write here).
    pub fn https(desired: &'a DesiredRouter, https: &'a HttpsListener) -> Self {
        Self {
            policies: https.policies.iter().collect(),
            redirects: Vec::new(),
            default_pool: https.default_pool.as_deref(),
            default_pool_owners: &[],
            health_monitors: &desired.health_monitors,
            all_pools: &desired.pools,
            left_out: BTreeSet::new(),
        }
    }

    /// One more HTTP listener's desired state (see [`DesiredRouter::more_http`]): its policies
    /// and default pool, the router's pools (converged by the HTTP listener's plan first).
    pub fn more_http(desired: &'a DesiredRouter, listener: &'a PortListener) -> Self {
        Self {
            policies: listener.policies.iter().collect(),
            redirects: Vec::new(),
            default_pool: listener.default_pool.as_deref(),
            default_pool_owners: &[],
            health_monitors: &desired.health_monitors,
            all_pools: &desired.pools,
            left_out: BTreeSet::new(),
        }
    }

    /// The pools, by name.
    pub fn pools(&self) -> impl Iterator<Item = (&'a str, &'a Pool)> + '_ {
        self.all_pools.iter().map(|(n, p)| (n.as_str(), p)).filter(|(n, _)| !self.left_out.contains(n))
    }

    pub fn pool(&self, name: &str) -> Option<&'a Pool> {
        self.all_pools.get(name).filter(|_| !self.left_out.contains(name))
    }

    pub(crate) fn has_pool(&self, name: &str) -> bool {
        self.pool(name).is_some()
    }

    /// Leaves the pool `name` out (its policies are left to the caller).
    pub(crate) fn leave_out_pool(&mut self, name: &'a str) {
        self.left_out.insert(name);
    }
}
