//! The router's budget of L7 policies and rules under the project's Octavia quotas
//! (`model::Budget`, see `translate::budget`): the quota minus what the project's other load
//! balancers use. Three reads (token info is cached by the session, the quota, the project's
//! policies), no write.

use std::collections::BTreeSet;

use super::error::DriverError;
use super::{ConvergeReport, Router};
use crate::model::{Budget, DesiredRouter, Usage};
use crate::openstack::octavia::L7Policy;
use crate::openstack::{ListQuery, Octavia, Result};

impl Router {
    /// [`Router::converge`], then the router's budget read into the report
    /// ([`ConvergeReport::budget`]): the controller keeps its budget from the reports, and never
    /// holds an Octavia client of its own. The listeners just converged tell the router's
    /// policies apart from the project's other load balancers'.
    pub async fn converge_reading_budget(&self, desired: &DesiredRouter) -> super::error::Result<ConvergeReport> {
        let mut report = self.converge(desired).await?;
        // The more listeners' policies are the router's too, not another load balancer's.
        let ours: BTreeSet<String> = std::iter::once(report.listener_id.clone())
            .chain(report.https_listener_id.clone())
            .chain(report.more_listener_ids.iter().cloned())
            .collect();
        report.budget = Some(read_budget(self.octavia(), &ours).await.map_err(|e| e.to_string()));
        Ok(report)
    }
}

impl Router {
    /// What of `desired` the fully-populated create of this (new) router may hold, when the
    /// quota leaves something out (`None`: all of it). When the controller asks for the quota
    /// (`desired.quota`), the project's room is read first (the budget of a router with no
    /// listeners: nothing on the project is ours yet), and the tighter of the two budgets holds
    /// for the whole convergence: a router of a set is often created before its own budget was
    /// ever read. When not one of its routes fits, the load balancer is not created at all:
    /// an empty router would only cost a load balancer and a floating IP.
    pub(super) async fn admit_new_router(
        &self,
        desired: &DesiredRouter,
    ) -> super::error::Result<Option<DesiredRouter>> {
        let room = match &desired.quota {
            None => None,
            Some(_) => match read_budget(self.octavia(), &BTreeSet::new()).await {
                Ok(room) => room,
                Err(e) => {
                    // A policy that forbids reading quotas: Octavia's own 403 stays the guard.
                    tracing::warn!(router = %self.cloud.spec.name, error = %e, "cannot read the project's Octavia quotas");
                    None
                }
            },
        };
        let mut ledger = self.quota.lock().expect("quota lock");
        if let (Some(room), Some(q)) = (room, ledger.quota.as_mut()) {
            q.budget = q.budget.tighter(room);
        }
        let admitted = ledger.admit_new_router(desired, &self.cloud.spec.ownership);
        let Some(admitted) = admitted else { return Ok(None) };
        if admitted.policies.is_empty() && admitted.redirects.is_empty() {
            let need = Usage::of(desired);
            let budget = ledger.quota.as_ref().map(|q| q.budget).unwrap_or_default();
            let limit = |v: Option<u64>| v.map_or_else(|| "unlimited".to_string(), |v| v.to_string());
            return Err(DriverError::NoRoomForRouter {
                name: self.cloud.spec.name.clone(),
                need_policies: need.l7policies,
                need_rules: need.l7rules,
                room: format!("{} policies and {} rules", limit(budget.l7policies), limit(budget.l7rules)),
            });
        }
        Ok(Some(admitted))
    }
}

/// L7 policies and rules of the project that are not on `our_listeners`.
pub fn usage_elsewhere(policies: &[L7Policy], our_listeners: &BTreeSet<String>) -> Usage {
    let others = policies.iter().filter(|p| !our_listeners.contains(&p.listener_id));
    others.fold(Usage::default(), |u, p| Usage {
        l7policies: u.l7policies + 1,
        l7rules: u.l7rules + p.rules.len() as u64,
    })
}

/// The budget of the router whose listeners are `our_listeners`; `None` when the project's
/// l7policy and l7rule quotas are unlimited (then nothing else is read).
pub async fn read_budget(octavia: &Octavia, our_listeners: &BTreeSet<String>) -> Result<Option<Budget>> {
    let project = octavia.session().token_info().await?.project_id.unwrap_or_default();
    let quota = octavia.get_quota(&project).await?;
    let limited = |q: Option<i64>| q.is_some_and(|q| q >= 0);
    if !limited(quota.l7policy) && !limited(quota.l7rule) {
        return Ok(None);
    }
    let q = ListQuery {
        fields: vec!["id".into(), "listener_id".into(), "rules".into()],
        extra: vec![("project_id".into(), project)],
        ..ListQuery::default()
    };
    let policies = octavia.list_l7policies(&q).await?;
    Ok(Budget::from_quota(quota.l7policy, quota.l7rule, usage_elsewhere(&policies, our_listeners)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::openstack::octavia::IdRef;

    #[test]
    fn usage_elsewhere_leaves_out_our_listeners() {
        let policy = |listener: &str, rules: usize| L7Policy {
            listener_id: listener.into(),
            rules: (0..rules).map(|i| IdRef { id: format!("r{i}") }).collect(),
            ..L7Policy::default()
        };
        let ours: BTreeSet<String> = ["http".to_string(), "https".to_string()].into();
        let cases = [
            (vec![], Usage::default()),
            (vec![policy("http", 3), policy("https", 2)], Usage::default()),
            (vec![policy("http", 3), policy("other", 2), policy("third", 0)], Usage { l7policies: 2, l7rules: 2 }),
        ];
        for (policies, want) in cases {
            assert_eq!(usage_elsewhere(&policies, &ours), want, "{policies:?}");
        }
    }
}
