//! Making the writes of a plan on the router, in order, one at a time, each followed by a wait
//! for the router to be ACTIVE again (see [`Cloud::settle`]); the rounds, the failure isolation
//! and the leader gate are [`super::rounds`]'.

use super::actual::ActualRouter;
use super::cloud::Cloud;
use super::create_body::{
    PlannedPolicy, default_pool_update, health_monitor_update, member_body, planned_health_monitor_create,
    policy_update, pool_create, pool_update, rule_create,
};
use super::door::{self, Order};
use super::error::Result;
use super::listener_plan::{ListenerStep, ListenerWrite};
use super::plan::{MemberSpec, PolicyRef, PoolRef, Write};
use super::read;
use super::read_cache::ReadCache;
use super::report::WriteRecord;
use super::rounds::ListenerIo;
use super::stamps::DesiredChildren;
use crate::openstack::Error as OsError;
use crate::openstack::octavia::Listener;
use crate::openstack::octavia_requests::MemberCreate;
use std::collections::BTreeMap;
use std::sync::Mutex;

/// Where the writes of one listener go, and the ids of the objects created so far (later writes
/// name them by [`PoolRef::New`] / [`PolicyRef::New`]).
struct Target {
    lb_id: String,
    listener_id: String,
    new_pools: BTreeMap<String, String>,
    new_policies: BTreeMap<String, String>,
}

/// One listener of the router on the real Octavia, for [`super::rounds::converge_listener`]:
/// reads through the read cache, writes one at a time, each waited for (see [`Cloud::settle`]).
pub struct OctaviaListener<'a> {
    cloud: &'a Cloud,
    reads: &'a Mutex<ReadCache>,
    listener: Listener,
    target: Target,
    /// What the stamps of earlier reads may stand for (see [`super::stamps`]).
    desired: DesiredChildren<'a>,
}

impl<'a> OctaviaListener<'a> {
    pub fn new(
        cloud: &'a Cloud,
        reads: &'a Mutex<ReadCache>,
        lb_id: &str,
        listener: Listener,
        desired: DesiredChildren<'a>,
    ) -> Self {
        let target = Target {
            lb_id: lb_id.into(),
            listener_id: listener.id.clone(),
            new_pools: BTreeMap::new(),
            new_policies: BTreeMap::new(),
        };
        Self { cloud, reads, listener, target, desired }
    }
}

impl ListenerIo for OctaviaListener<'_> {
    async fn read(&mut self, round: usize) -> Result<ActualRouter> {
        if round > 1 {
            // Its default pool may have been one of the writes.
            self.listener = self.cloud.octavia.get_listener(&self.listener.id).await?;
        }
        // The verification reads its few trusted parents at the first read of a convergence only.
        self.desired.verify &= round == 1;
        read::read_actual(self.cloud, self.reads, &self.listener, Some(&self.desired)).await
    }

    async fn send(&mut self, w: &Write) -> Result<WriteRecord> {
        let order = Order::octavia(w.kind(), w.to_string(), &self.target.lb_id);
        let (cloud, target) = (self.cloud, &mut self.target);
        let ((), record) = door::write(cloud, order, write_one(cloud, target, w)).await?;
        Ok(record)
    }

    fn busy(&self) -> u64 {
        self.cloud.octavia.session().stats().conflict_retries
    }

    fn may_write(&self) -> bool {
        self.cloud.gate.is_open()
    }
}

/// One batch member update of an existing pool (`pool_id`) of the router `lb_id`, waited for.
pub async fn replace_members(cloud: &Cloud, lb_id: &str, pool_id: &str, write: &Write) -> Result<WriteRecord> {
    let Write::SetMembers { members, .. } = write else {
        unreachable!("replace_members is given the SetMembers write of plan_members")
    };
    let bodies = member_bodies(cloud, members);
    let order = Order::octavia(write.kind(), write.to_string(), lb_id);
    let ((), record) = door::write(cloud, order, cloud.octavia.replace_members(pool_id, &bodies)).await?;
    Ok(record)
}

/// One planned listener write (see `listener_plan`), waited for and recorded: the listener as
/// it is afterwards, `None` once deleted.
pub(crate) async fn listener_write(
    cloud: &Cloud,
    lb_id: &str,
    step: ListenerStep,
    writes: &mut Vec<WriteRecord>,
) -> Result<Option<Listener>> {
    let order = Order::octavia(step.kind, step.description, lb_id);
    let o = &cloud.octavia;
    let call = async {
        match &step.write {
            ListenerWrite::Create(body) => o.create_listener(body).await.map(Some),
            ListenerWrite::Update { id, update } => o.update_listener(id, update).await.map(Some),
            ListenerWrite::Delete { id } => o.delete_listener(id).await.map(|()| None),
        }
    };
    door::write_recorded(cloud, order, writes, call).await
}

/// Planned listener writes one after the other (e.g. the stale listeners of the more ports:
/// Octavia deletes their policies with them), stopping at the first failure.
pub(crate) async fn listener_writes(
    cloud: &Cloud,
    lb_id: &str,
    steps: Vec<ListenerStep>,
    writes: &mut Vec<WriteRecord>,
) -> Result<()> {
    for step in steps {
        listener_write(cloud, lb_id, step, writes).await?;
    }
    Ok(())
}

fn member_bodies(cloud: &Cloud, members: &[MemberSpec]) -> Vec<MemberCreate> {
    members.iter().map(|m| member_body(&cloud.spec, m)).collect()
}

impl Target {
    /// A pool's id: it exists, or an earlier write of the plan created it.
    fn pool_id(&self, r: &PoolRef) -> String {
        match r {
            PoolRef::Id(id) => id.clone(),
            PoolRef::New(name) => self.new_pools.get(name).cloned().unwrap_or_default(),
        }
    }

    /// A policy's id: it exists, or an earlier write of the plan created it.
    fn policy_id(&self, r: &PolicyRef) -> String {
        match r {
            PolicyRef::Id(id) => id.clone(),
            PolicyRef::New(name) => self.new_policies.get(name).cloned().unwrap_or_default(),
        }
    }
}

/// One write: a plain `match` from the planned write to its Octavia call, with the body that
/// `create_body` builds and the ids the target resolves.
async fn write_one(cloud: &Cloud, target: &mut Target, w: &Write) -> Result<(), OsError> {
    let o = &cloud.octavia;
    let pool_id = |r: &PoolRef| target.pool_id(r);
    match w {
        Write::CreatePool { name, lb_algorithm, tags } => {
            let p = o.create_pool(&pool_create(name, &target.lb_id, lb_algorithm, tags)).await?;
            target.new_pools.insert(name.clone(), p.id);
        }
        Write::UpdatePool { id, lb_algorithm, .. } => {
            o.update_pool(id, &pool_update(lb_algorithm)).await?;
        }
        Write::SetMembers { pool, members, .. } => {
            o.replace_members(&pool_id(pool), &member_bodies(cloud, members)).await?;
        }
        Write::DeletePool { id, .. } => o.delete_pool(id).await?,
        Write::CreateHealthMonitor { pool, spec, tags, .. } => {
            o.create_health_monitor(&planned_health_monitor_create(spec, pool_id(pool), tags)).await?;
        }
        Write::UpdateHealthMonitor { id, spec, .. } => {
            o.update_health_monitor(id, &health_monitor_update(spec)).await?;
        }
        Write::DeleteHealthMonitor { id, .. } => o.delete_health_monitor(id).await?,
        Write::CreatePolicy { name, position, action, admin_state_up, description, tags } => {
            let planned =
                PlannedPolicy { name, description, position: *position, admin_state_up: *admin_state_up, action, tags };
            let p = o.create_l7policy(&planned.create_body(&target.listener_id, pool_id)).await?;
            target.new_policies.insert(name.clone(), p.id);
        }
        Write::CreateRule { policy, rule, tags, .. } => {
            o.create_l7rule(&target.policy_id(policy), &rule_create(rule, tags)).await?;
        }
        Write::UpdateRule { policy_id, rule_id, rule, .. } => {
            o.update_l7rule(policy_id, rule_id, &rule_create(rule, &[])).await?;
        }
        Write::DeleteRule { policy_id, rule_id, .. } => o.delete_l7rule(policy_id, rule_id).await?,
        Write::UpdatePolicy { policy, position, pool, redirect, redirect_url, admin_state_up, .. } => {
            let pool = pool.as_ref().map(pool_id);
            let body = policy_update(*position, pool, redirect.as_ref(), redirect_url.as_ref(), *admin_state_up);
            o.update_l7policy(&target.policy_id(policy), &body).await?;
        }
        Write::DeletePolicy { id, .. } => o.delete_l7policy(id).await?,
        Write::SetDefaultPool { listener_id, pool } => {
            o.update_listener(listener_id, &default_pool_update(pool.as_ref().map(pool_id))).await?;
        }
    }
    Ok(())
}
