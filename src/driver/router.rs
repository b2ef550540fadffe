//! The L7 router on the real Octavia: find, adopt or create it, read its state, apply a
//! [`WritePlan`] one write at a time, and give it a floating IP.
//!
//! Every write is followed by a wait for the load balancer to be ACTIVE again: Octavia refuses
//! any other write on the router meanwhile (409), so waiting here is what keeps the next write
//! from burning retries. A brand-new router is one fully-populated create: listener, pools,
//! members, health monitors, policies and rules in a single call.

use super::diff::{
    ActualHealthMonitor, ActualListener, ActualMember, ActualPolicy, ActualPool, ActualRouter, ActualRule, DiffOptions,
    HealthMonitorSpec, MemberSpec, Ownership, PolicyRef, PoolRef, Write, WritePlan, plan_writes,
};
use super::read_cache::{Cached, Child, Parent, ReadCache};
use crate::model::DesiredRouter;
use crate::openstack::octavia::{
    HealthMonitorCreate, HealthMonitorUpdate, L7PolicyCreate, L7PolicyUpdate, L7RuleCreate, ListenerCreate,
    ListenerUpdate, LoadBalancer, LoadBalancerCreate, MemberCreate, NameRef, PoolCreate, PoolUpdate,
};
use crate::openstack::{Error as OsError, ListQuery, Neutron, Octavia, neutron::FloatingIpCreate};
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::{Duration, Instant};

/// What the router should be, from `[octavia_defaults]`, `[neutron_defaults]` and `[kubernetes]`.
#[derive(Clone, Debug)]
pub struct RouterSpec {
    pub name: String,
    /// Adopt this load balancer (created by devstack or an admin) instead of finding ours by name.
    pub uuid: Option<String>,
    /// VIP subnet; needed only to create the router.
    pub vip_subnet_id: Option<String>,
    pub availability_zone: Option<String>,
    pub provider: Option<String>,
    pub listener_port: u16,
    /// Build a new router in one fully-populated create (else one write per object).
    pub fully_populated_create: bool,
    /// `[neutron_defaults] l7_router_ip`: an existing floating IP to put on the VIP.
    pub floating_ip: Option<IpAddr>,
    /// `[neutron_defaults] external_svc_subnet`: where to allocate a floating IP otherwise.
    pub external_svc_subnet: Option<String>,
    pub ownership: Ownership,
    pub health_monitor: Option<HealthMonitorSpec>,
    pub create_timeout: Duration,
    pub write_timeout: Duration,
}

#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    #[error(transparent)]
    OpenStack(#[from] OsError),
    #[error(
        "L7 router {name} ({id}) is in provisioning_status ERROR; it is not modified nor deleted automatically: \
         see docs/operations.md (\"A router in ERROR\") for the explicit recovery"
    )]
    RouterInError { name: String, id: String },
    #[error("[octavia_defaults] l7_router_uuid = {0}: no such load balancer")]
    AdoptedRouterNotFound(String),
    #[error(
        "several load balancers are named {name} with our tags ({ids}); refusing to choose: delete the extra ones or set \
         [octavia_defaults] l7_router_uuid"
    )]
    DuplicateRouters { name: String, ids: String },
    #[error("the L7 router {0} does not exist and [neutron_defaults] lb_subnet is not set, so it cannot be created")]
    NoVipSubnet(String),
    #[error("[neutron_defaults] l7_router_ip = {0}: no such floating IP in this project")]
    FloatingIpNotFound(IpAddr),
    #[error(
        "[neutron_defaults] l7_router_ip = {ip} is associated to port {port}, not to the L7 router's VIP port {vip_port}"
    )]
    FloatingIpInUse { ip: IpAddr, port: String, vip_port: String },
    #[error("write failed: {write}: {source}")]
    Write {
        write: String,
        #[source]
        source: OsError,
    },
}

impl DriverError {
    /// Low-cardinality label for metrics.
    pub fn label(&self) -> &'static str {
        match self {
            DriverError::OpenStack(e) | DriverError::Write { source: e, .. } => e.label(),
            DriverError::RouterInError { .. } => "router_error",
            DriverError::AdoptedRouterNotFound(_) => "router_not_found",
            DriverError::DuplicateRouters { .. } => "duplicate_routers",
            DriverError::NoVipSubnet(_) => "config",
            DriverError::FloatingIpNotFound(_) | DriverError::FloatingIpInUse { .. } => "floating_ip",
        }
    }
}

pub type Result<T, E = DriverError> = std::result::Result<T, E>;

/// One write that was made, for the `apply` transcript and the benchmarks.
#[derive(Clone, Debug)]
pub struct WriteRecord {
    pub kind: &'static str,
    pub description: String,
    /// From sending the write to the router being ACTIVE again.
    pub duration: Duration,
}

/// The outcome of one convergence.
#[derive(Clone, Debug, Default)]
pub struct ConvergeReport {
    pub lb_id: String,
    pub listener_id: String,
    pub created_router: bool,
    pub writes: Vec<WriteRecord>,
    /// What the operator should know: things left alone because they are not ours (see
    /// [`super::diff::Conflict`]), copies deleted, objects in ERROR replaced.
    pub conflicts: Vec<String>,
    /// The router's public address: the floating IP, else the VIP.
    pub address: Option<IpAddr>,
    pub vip_address: Option<IpAddr>,
    pub floating_ip: Option<IpAddr>,
    /// HTTP requests to Octavia and Neutron during the convergence (reads and writes).
    pub requests: u64,
    /// Read → plan → write rounds (1, or more when the writes were read back; see
    /// [`Router::converge`]).
    pub rounds: usize,
    pub elapsed: Duration,
}

impl ConvergeReport {
    /// Writes by kind, sorted by kind.
    pub fn writes_by_kind(&self) -> BTreeMap<&'static str, usize> {
        let mut m = BTreeMap::new();
        for w in &self.writes {
            *m.entry(w.kind).or_default() += 1;
        }
        m
    }
}

/// The driver both handlers share.
#[derive(Clone, Debug)]
pub struct Router {
    pub octavia: Octavia,
    pub neutron: Neutron,
    pub spec: RouterSpec,
    /// Whether a convergence of this process has already read its writes back (see
    /// [`Router::converge`]).
    verified: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// Rules and members as last read, by parent stamp (see [`super::read_cache`]).
    reads: std::sync::Arc<std::sync::Mutex<ReadCache>>,
}

/// Read → plan → write rounds of one convergence at most (see [`Router::converge`]).
const MAX_ROUNDS: usize = 3;

impl Router {
    pub fn new(octavia: Octavia, neutron: Neutron, spec: RouterSpec) -> Self {
        Self { octavia, neutron, spec, verified: Default::default(), reads: Default::default() }
    }

    fn reads(&self) -> std::sync::MutexGuard<'_, ReadCache> {
        // A panic while holding it cannot leave it half-written (each call is one insert or
        // lookup), so a poisoned lock is still usable.
        self.reads.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The children of `parent`: the cached read while it is good (see [`super::read_cache`]),
    /// else `fetch`ed (no GET when the parent lists none) and remembered.
    async fn children<T, Fut>(
        &self,
        kind: fn(&mut ReadCache) -> &mut Cached<T>,
        parent: &Parent<'_>,
        now: Instant,
        refresh: &mut usize,
        fetch: impl FnOnce() -> Fut,
    ) -> std::result::Result<Vec<T>, OsError>
    where
        T: Child + Clone,
        Fut: std::future::Future<Output = std::result::Result<Vec<T>, OsError>>,
    {
        if let Some(cached) = kind(&mut self.reads()).get(parent, now, refresh) {
            return Ok(cached);
        }
        let fresh = if parent.child_ids.is_empty() { vec![] } else { fetch().await? };
        kind(&mut self.reads()).put(parent, Instant::now(), &fresh);
        Ok(fresh)
    }

    fn diff_options(&self) -> DiffOptions {
        DiffOptions { ownership: self.spec.ownership.clone(), health_monitor: self.spec.health_monitor.clone() }
    }

    /// The router's load balancer, if it exists: the adopted one, or ours found by name and tags.
    pub async fn find(&self) -> Result<Option<LoadBalancer>> {
        if let Some(uuid) = &self.spec.uuid {
            return match self.octavia.get_load_balancer(uuid).await {
                Ok(lb) => Ok(Some(lb)),
                Err(e) if e.is_not_found() => Err(DriverError::AdoptedRouterNotFound(uuid.clone())),
                Err(e) => Err(e.into()),
            };
        }
        let mut found = self.list_ours().await?;
        match found.len() {
            0 => Ok(None),
            1 => Ok(found.pop()),
            _ => Err(self.duplicate_routers(&found)),
        }
    }

    async fn list_ours(&self) -> Result<Vec<LoadBalancer>> {
        let q = ListQuery { tags: self.spec.ownership.router_tags(), ..ListQuery::name(&self.spec.name) };
        Ok(self.octavia.list_load_balancers(&q).await?)
    }

    fn duplicate_routers(&self, found: &[LoadBalancer]) -> DriverError {
        DriverError::DuplicateRouters {
            name: self.spec.name.clone(),
            ids: found.iter().map(|l| l.id.as_str()).collect::<Vec<_>>().join(", "),
        }
    }

    /// [`Router::find`] for a convergence, which also clears duplicate routers.
    ///
    /// Two load balancers with our name and tags are the trace of a router create sent by a run
    /// that died before it saw the answer, while the next run (which had found none) created its
    /// own. The one with a floating IP is the router; without one anywhere, the one with more
    /// listeners and pools, then the older. The others hold no floating IP and were made by us:
    /// they are deleted (cascade). Two with a floating IP are left to the operator.
    async fn find_clearing_duplicates(&self, report: &mut ConvergeReport) -> Result<Option<LoadBalancer>> {
        if self.spec.uuid.is_some() {
            return self.find().await;
        }
        let found = self.list_ours().await?;
        if found.len() < 2 {
            return Ok(found.into_iter().next());
        }
        let mut with_fip = Vec::new();
        for lb in &found {
            with_fip.push(self.has_floating_ip(lb).await?);
        }
        let keep = match with_fip.iter().filter(|f| **f).count() {
            0 => found
                .iter()
                .max_by(|a, b| {
                    (a.listeners.len() + a.pools.len())
                        .cmp(&(b.listeners.len() + b.pools.len()))
                        // Older first: created_at is ISO 8601, so the smaller string is older.
                        .then_with(|| b.created_at.cmp(&a.created_at))
                })
                .cloned(),
            1 => found.iter().zip(&with_fip).find(|(_, f)| **f).map(|(lb, _)| lb.clone()),
            _ => return Err(self.duplicate_routers(&found)),
        };
        let keep = keep.expect("at least two routers");
        self.delete_duplicate_routers(&keep, &found, report).await?;
        Ok(Some(keep))
    }

    /// After this convergence created the router: a dying run's create may have landed beside it.
    async fn clear_duplicates_of_new_router(&self, keep: &LoadBalancer, report: &mut ConvergeReport) -> Result<()> {
        let found = self.list_ours().await?;
        if found.len() > 1 {
            for lb in found.iter().filter(|lb| lb.id != keep.id) {
                if self.has_floating_ip(lb).await? {
                    return Err(self.duplicate_routers(&found));
                }
            }
            self.delete_duplicate_routers(keep, &found, report).await?;
        }
        Ok(())
    }

    async fn has_floating_ip(&self, lb: &LoadBalancer) -> Result<bool> {
        let Some(port) = &lb.vip_port_id else { return Ok(false) };
        let q = ListQuery { extra: vec![("port_id".into(), port.clone())], ..ListQuery::default() };
        Ok(!self.neutron.list_floating_ips(&q).await?.is_empty())
    }

    async fn delete_duplicate_routers(
        &self,
        keep: &LoadBalancer,
        found: &[LoadBalancer],
        report: &mut ConvergeReport,
    ) -> Result<()> {
        for lb in found.iter().filter(|lb| lb.id != keep.id) {
            let description = format!(
                "delete duplicate L7 router {} (an interrupted create; no floating IP); {} is the router",
                lb.id, keep.id
            );
            tracing::warn!("{description}");
            let t = Instant::now();
            self.discard_new_router(lb).await.map_err(|e| match e {
                DriverError::OpenStack(source) => DriverError::Write { write: description.clone(), source },
                e => e,
            })?;
            report.conflicts.push(description.clone());
            report.writes.push(WriteRecord { kind: "delete_router", description, duration: t.elapsed() });
        }
        Ok(())
    }

    /// Converge the router to `desired`: create it fully populated if it does not exist, else
    /// read it, plan the writes and make them; then make sure it has its floating IP.
    pub async fn converge(&self, desired: &DesiredRouter) -> Result<ConvergeReport> {
        let started = Instant::now();
        let requests_before = self.octavia.session().stats().requests;
        let mut report = ConvergeReport::default();

        let lb = match self.find_clearing_duplicates(&mut report).await? {
            Some(lb) => self.ready(lb).await?,
            None if self.spec.fully_populated_create => {
                let lb = self.create_populated(desired, &mut report).await?;
                if self.children_active(&lb).await? {
                    report.created_router = true;
                    lb
                } else {
                    // Seen on Debian's Zed packages: the load balancer goes ACTIVE but its
                    // listener, pools and members stay PENDING_CREATE, so Octavia refuses every
                    // later change to them. The router is brand-new and ours: discard it and
                    // build it object by object.
                    let msg = format!(
                        "the fully-populated create of {} left its children in PENDING_CREATE; it was deleted and \
                         rebuilt one object at a time: set [octavia_defaults] fully_populated_create = False on this cloud",
                        lb.id
                    );
                    tracing::warn!("{msg}");
                    report.conflicts.push(msg);
                    let t = Instant::now();
                    self.discard_new_router(&lb).await?;
                    report.writes.push(WriteRecord {
                        kind: "delete_router",
                        description: format!("delete L7 router {} (its children stuck in PENDING_CREATE)", lb.id),
                        duration: t.elapsed(),
                    });
                    self.create_bare(&mut report).await?
                }
            }
            None => self.create_bare(&mut report).await?,
        };
        report.lb_id = lb.id.clone();
        report.vip_address = lb.vip_address.as_deref().and_then(|a| a.parse().ok());

        let listener = self.ensure_listener(&lb, &mut report).await?;
        report.listener_id = listener.id.clone();
        if !report.created_router {
            // The snapshot a plan is made from can be stale in one way that matters: a create
            // sent by a process that died (or a leader that lost its lease) just before this one
            // read the router lands after the read, and the plan creates the object a second
            // time. That is visible afterwards only: the write of this round waited for the
            // router (409 busy retries), or this is the first convergence of the process. Then
            // the router is read again and the copies are deleted (plan_writes keeps one of each
            // name), within MAX_ROUNDS.
            let stats = || self.octavia.session().stats().conflict_retries;
            let mut listener = listener;
            for round in 1..=MAX_ROUNDS {
                let busy_before = stats();
                if round > 1 {
                    // Its default pool may have been one of the writes.
                    listener = self.octavia.get_listener(&listener.id).await?;
                }
                let actual = self.read_actual(&listener).await?;
                let plan = plan_writes(desired, &actual, &self.diff_options());
                report.rounds = round;
                if plan.writes.is_empty() && round > 1 {
                    break;
                }
                self.execute(&lb.id, &listener.id, &plan, &mut report).await?;
                let first = !self.verified.swap(true, std::sync::atomic::Ordering::SeqCst);
                let raced = stats() > busy_before;
                if plan.writes.is_empty() || !(first || raced) {
                    break;
                }
            }
            let mut seen = std::collections::BTreeSet::new();
            report.conflicts.retain(|c| seen.insert(c.clone()));
        }

        report.floating_ip = self.ensure_floating_ip(&lb).await?;
        report.address = report.floating_ip.or(report.vip_address);
        if report.writes.first().is_some_and(|w| w.kind == "create_router") && self.spec.uuid.is_none() {
            self.clear_duplicates_of_new_router(&lb, &mut report).await?;
        }
        report.requests = self.octavia.session().stats().requests - requests_before;
        report.elapsed = started.elapsed();
        Ok(report)
    }

    /// Wait out a PENDING_* router (another writer, or our own write before a restart); refuse
    /// one in ERROR.
    async fn ready(&self, lb: LoadBalancer) -> Result<LoadBalancer> {
        match lb.provisioning_status.as_str() {
            "ACTIVE" => Ok(lb),
            "ERROR" => Err(DriverError::RouterInError { name: lb.name, id: lb.id }),
            _ => match self.octavia.wait_active(&lb.id, self.spec.create_timeout).await {
                Ok(lb) => Ok(lb),
                Err(OsError::Provisioning { .. }) => Err(DriverError::RouterInError { name: lb.name, id: lb.id }),
                Err(e) => Err(e.into()),
            },
        }
    }

    /// The fully-populated create of a brand-new router: one write.
    async fn create_populated(&self, desired: &DesiredRouter, report: &mut ConvergeReport) -> Result<LoadBalancer> {
        let body = populated_create(&self.spec, &self.vip_subnet()?, desired);
        let description = format!(
            "create L7 router {} fully populated: {} pool(s), {} member(s), {} policy(ies), {} rule(s)",
            self.spec.name,
            body.pools.len(),
            body.pools.iter().map(|p| p.members.len()).sum::<usize>(),
            body.listeners.iter().map(|l| l.l7policies.len()).sum::<usize>(),
            body.listeners.iter().flat_map(|l| &l.l7policies).map(|p| p.rules.len()).sum::<usize>(),
        );
        self.create_router(&body, description, report).await
    }

    /// A bare router (VIP only); the listener and the children follow as ordinary writes.
    async fn create_bare(&self, report: &mut ConvergeReport) -> Result<LoadBalancer> {
        let body = LoadBalancerCreate {
            listeners: vec![],
            pools: vec![],
            ..populated_create(&self.spec, &self.vip_subnet()?, &DesiredRouter::default())
        };
        self.create_router(&body, format!("create L7 router {}", self.spec.name), report).await
    }

    fn vip_subnet(&self) -> Result<String> {
        self.spec.vip_subnet_id.clone().ok_or_else(|| DriverError::NoVipSubnet(self.spec.name.clone()))
    }

    /// One load balancer create, waited for until ACTIVE, recorded as a write.
    async fn create_router(
        &self,
        body: &LoadBalancerCreate,
        description: String,
        report: &mut ConvergeReport,
    ) -> Result<LoadBalancer> {
        let t = Instant::now();
        // The API answers a create only once it has written the whole graph: give that request
        // the router's create timeout, not the session's per-request one. A create abandoned by
        // the client still completes on the server (and would then be adopted by name).
        let created = self
            .octavia
            .create_load_balancer_within(body, self.spec.create_timeout)
            .await
            .map_err(|source| DriverError::Write { write: description.clone(), source })?;
        let lb = self.ready(created).await?;
        report.writes.push(WriteRecord { kind: "create_router", description, duration: t.elapsed() });
        Ok(lb)
    }

    /// Whether the listener and pools of a router we just created are ACTIVE too.
    async fn children_active(&self, lb: &LoadBalancer) -> Result<bool> {
        let q = ListQuery { loadbalancer_id: Some(lb.id.clone()), ..ListQuery::default() };
        let listeners = self.octavia.list_listeners(&q).await?;
        let pools = self.octavia.list_pools(&q).await?;
        Ok(listeners.iter().all(|l| l.provisioning_status == "ACTIVE")
            && pools.iter().all(|p| p.provisioning_status == "ACTIVE"))
    }

    /// Delete a router this very convergence created (and so holds no traffic yet).
    async fn discard_new_router(&self, lb: &LoadBalancer) -> Result<()> {
        self.octavia.delete_load_balancer(&lb.id, true).await?;
        self.octavia.wait_deleted(&lb.id, self.spec.create_timeout).await?;
        // A real network driver frees the VIP port; a noop one leaves it behind.
        if let Some(port) = &lb.vip_port_id
            && let Ok(p) = self.neutron.get_port(port).await
            && p.device_owner == "Octavia"
        {
            self.neutron.delete_port(port).await?;
        }
        Ok(())
    }

    /// The router's HTTP listener: ours, else an adopted one on the same port, else created.
    async fn ensure_listener(
        &self,
        lb: &LoadBalancer,
        report: &mut ConvergeReport,
    ) -> Result<crate::openstack::octavia::Listener> {
        let q = ListQuery { loadbalancer_id: Some(lb.id.clone()), ..ListQuery::default() };
        let listeners = self.octavia.list_listeners(&q).await?;
        let on_port: Vec<_> = listeners
            .into_iter()
            .filter(|l| l.protocol == "HTTP" && l.protocol_port == self.spec.listener_port)
            .collect();
        if let Some(l) = on_port.iter().find(|l| self.spec.ownership.owns(&l.tags)).or(on_port.first()) {
            return Ok(l.clone());
        }
        let body = ListenerCreate {
            name: Some(format!("{}-http", self.spec.name)),
            loadbalancer_id: Some(lb.id.clone()),
            protocol: "HTTP".into(),
            protocol_port: self.spec.listener_port,
            tags: self.spec.ownership.router_tags(),
            ..ListenerCreate::default()
        };
        let description = format!("create HTTP listener on port {}", self.spec.listener_port);
        let t = Instant::now();
        let l = self
            .octavia
            .create_listener(&body)
            .await
            .map_err(|source| DriverError::Write { write: description.clone(), source })?;
        self.octavia.wait_active(&lb.id, self.spec.write_timeout).await?;
        report.writes.push(WriteRecord { kind: "create_listener", description, duration: t.elapsed() });
        Ok(l)
    }

    /// Read the router's children: 1 listing of policies, one of rules per policy, 1 of pools,
    /// one of members per pool, 1 of our health monitors.
    pub async fn read_actual(&self, listener: &crate::openstack::octavia::Listener) -> Result<ActualRouter> {
        let o = &self.octavia;
        let policies =
            o.list_l7policies(&ListQuery { listener_id: Some(listener.id.clone()), ..ListQuery::default() }).await?;
        let mut actual_policies = Vec::with_capacity(policies.len());
        // Children are read again only where their parent changed (read_cache); a parent that
        // lists no children needs no GET at all.
        let now = Instant::now();
        let mut refresh = super::read_cache::REFRESH_PER_READ;
        for p in policies {
            let parent = Parent {
                id: &p.id,
                provisioning_status: &p.provisioning_status,
                updated_at: p.updated_at.as_deref(),
                child_ids: p.rules.iter().map(|r| r.id.as_str()).collect(),
            };
            let rules = self
                .children(
                    |c| &mut c.rules,
                    &parent,
                    now,
                    &mut refresh,
                    || async {
                        Ok(o.list_l7rules(&p.id, &ListQuery::default())
                            .await?
                            .into_iter()
                            .map(|r| ActualRule {
                                id: r.id,
                                rule_type: r.rule_type,
                                compare_type: r.compare_type,
                                value: r.value,
                                key: r.key.filter(|k| !k.is_empty()),
                                invert: r.invert,
                            })
                            .collect())
                    },
                )
                .await?;
            actual_policies.push(ActualPolicy {
                rules,
                id: p.id,
                name: p.name,
                position: p.position,
                action: p.action,
                redirect_pool_id: p.redirect_pool_id,
                admin_state_up: p.admin_state_up,
                in_error: p.provisioning_status == "ERROR",
                tags: p.tags,
            });
        }
        actual_policies.sort_by_key(|p| p.position);

        let lb_id = listener.loadbalancers.first().map(|l| l.id.clone()).unwrap_or_default();
        let pools = o.list_pools(&ListQuery { loadbalancer_id: Some(lb_id), ..ListQuery::default() }).await?;
        let monitors: BTreeMap<String, crate::openstack::octavia::HealthMonitor> =
            if pools.iter().any(|p| p.healthmonitor_id.is_some()) {
                o.list_health_monitors(&ListQuery::tags(self.spec.ownership.router_tags().into_iter().take(2)))
                    .await?
                    .into_iter()
                    .map(|h| (h.id.clone(), h))
                    .collect()
            } else {
                BTreeMap::new()
            };
        let mut actual_pools = Vec::with_capacity(pools.len());
        for p in pools {
            let parent = Parent {
                id: &p.id,
                provisioning_status: &p.provisioning_status,
                updated_at: p.updated_at.as_deref(),
                child_ids: p.members.iter().map(|m| m.id.as_str()).collect(),
            };
            let members = self
                .children(
                    |c| &mut c.members,
                    &parent,
                    now,
                    &mut refresh,
                    || async {
                        Ok(o.list_members(&p.id, &ListQuery::default())
                            .await?
                            .into_iter()
                            .filter_map(actual_member)
                            .collect())
                    },
                )
                .await?;
            let healthmonitor = p.healthmonitor_id.as_ref().map(|id| match monitors.get(id) {
                Some(h) => ActualHealthMonitor {
                    id: h.id.clone(),
                    spec: HealthMonitorSpec {
                        monitor_type: h.monitor_type.clone(),
                        delay: h.delay,
                        timeout: h.timeout,
                        max_retries: h.max_retries,
                        url_path: h.url_path.clone().filter(|_| h.monitor_type.starts_with("HTTP")),
                        expected_codes: h.expected_codes.clone().filter(|_| h.monitor_type.starts_with("HTTP")),
                    },
                    tags: h.tags.clone(),
                },
                // Not in our tagged listing: someone else's monitor on our pool; left alone.
                None => ActualHealthMonitor {
                    id: id.clone(),
                    spec: HealthMonitorSpec {
                        monitor_type: String::new(),
                        delay: 0,
                        timeout: 0,
                        max_retries: 0,
                        url_path: None,
                        expected_codes: None,
                    },
                    tags: vec![],
                },
            });
            actual_pools.push(ActualPool {
                members,
                id: p.id,
                name: p.name,
                lb_algorithm: p.lb_algorithm,
                healthmonitor,
                in_error: p.provisioning_status == "ERROR",
                tags: p.tags,
            });
        }
        {
            let live_policies = actual_policies.iter().map(|p| p.id.as_str()).collect();
            let live_pools = actual_pools.iter().map(|p| p.id.as_str()).collect();
            let mut reads = self.reads();
            reads.rules.retain(&live_policies);
            reads.members.retain(&live_pools);
        }
        Ok(ActualRouter {
            listener: ActualListener {
                id: listener.id.clone(),
                default_pool_id: listener.default_pool_id.clone(),
                tags: listener.tags.clone(),
            },
            policies: actual_policies,
            pools: actual_pools,
        })
    }

    /// Make the writes in order, waiting for ACTIVE after each.
    pub async fn execute(
        &self,
        lb_id: &str,
        listener_id: &str,
        plan: &WritePlan,
        report: &mut ConvergeReport,
    ) -> Result<()> {
        report.conflicts.extend(plan.conflicts.iter().map(|c| c.message.clone()));
        let mut new_pools: BTreeMap<String, String> = BTreeMap::new();
        let mut new_policies: BTreeMap<String, String> = BTreeMap::new();
        for w in &plan.writes {
            let t = Instant::now();
            self.write_one(lb_id, listener_id, w, &mut new_pools, &mut new_policies)
                .await
                .map_err(|source| DriverError::Write { write: w.to_string(), source })?;
            match self.octavia.wait_active(lb_id, self.spec.write_timeout).await {
                Ok(_) => {}
                Err(OsError::Provisioning { .. }) => {
                    return Err(DriverError::RouterInError { name: self.spec.name.clone(), id: lb_id.into() });
                }
                Err(e) => return Err(e.into()),
            }
            tracing::info!(write = %w, duration_ms = t.elapsed().as_millis() as u64, "octavia write done");
            report.writes.push(WriteRecord { kind: w.kind(), description: w.to_string(), duration: t.elapsed() });
        }
        Ok(())
    }

    async fn write_one(
        &self,
        lb_id: &str,
        listener_id: &str,
        w: &Write,
        new_pools: &mut BTreeMap<String, String>,
        new_policies: &mut BTreeMap<String, String>,
    ) -> Result<(), OsError> {
        let o = &self.octavia;
        let pool_id = |r: &PoolRef| match r {
            PoolRef::Id(id) => id.clone(),
            PoolRef::New(name) => new_pools.get(name).cloned().unwrap_or_default(),
        };
        let policy_id = |r: &PolicyRef| match r {
            PolicyRef::Id(id) => id.clone(),
            PolicyRef::New(name) => new_policies.get(name).cloned().unwrap_or_default(),
        };
        match w {
            Write::CreatePool { name, lb_algorithm, tags } => {
                let p = o
                    .create_pool(&PoolCreate {
                        name: Some(name.clone()),
                        loadbalancer_id: Some(lb_id.into()),
                        protocol: "HTTP".into(),
                        lb_algorithm: lb_algorithm.clone(),
                        tags: tags.clone(),
                        ..PoolCreate::default()
                    })
                    .await?;
                new_pools.insert(name.clone(), p.id);
            }
            Write::UpdatePool { id, lb_algorithm, .. } => {
                o.update_pool(id, &PoolUpdate { lb_algorithm: Some(lb_algorithm.clone()), ..PoolUpdate::default() })
                    .await?;
            }
            Write::SetMembers { pool, members, .. } => {
                let body: Vec<MemberCreate> = members.iter().map(member_create).collect();
                o.replace_members(&pool_id(pool), &body).await?;
            }
            Write::DeletePool { id, .. } => o.delete_pool(id).await?,
            Write::CreateHealthMonitor { pool, spec, tags, .. } => {
                o.create_health_monitor(&HealthMonitorCreate {
                    pool_id: Some(pool_id(pool)),
                    tags: tags.clone(),
                    ..health_monitor_create(spec)
                })
                .await?;
            }
            Write::UpdateHealthMonitor { id, spec, .. } => {
                o.update_health_monitor(
                    id,
                    &HealthMonitorUpdate {
                        delay: Some(spec.delay),
                        timeout: Some(spec.timeout),
                        max_retries: Some(spec.max_retries),
                        url_path: spec.url_path.clone(),
                        expected_codes: spec.expected_codes.clone(),
                        ..HealthMonitorUpdate::default()
                    },
                )
                .await?;
            }
            Write::DeleteHealthMonitor { id, .. } => o.delete_health_monitor(id).await?,
            Write::CreatePolicy { name, position, pool, admin_state_up, description, tags } => {
                let p = o
                    .create_l7policy(&L7PolicyCreate {
                        name: Some(name.clone()),
                        description: Some(description.clone()),
                        listener_id: Some(listener_id.into()),
                        action: "REDIRECT_TO_POOL".into(),
                        redirect_pool_id: Some(pool_id(pool)),
                        position: Some(*position),
                        admin_state_up: Some(*admin_state_up),
                        tags: tags.clone(),
                        ..L7PolicyCreate::default()
                    })
                    .await?;
                new_policies.insert(name.clone(), p.id);
            }
            Write::CreateRule { policy, rule, tags, .. } => {
                o.create_l7rule(&policy_id(policy), &L7RuleCreate { tags: tags.clone(), ..L7RuleCreate::from(rule) })
                    .await?;
            }
            Write::UpdateRule { policy_id, rule_id, rule, .. } => {
                o.update_l7rule(policy_id, rule_id, &L7RuleCreate::from(rule)).await?;
            }
            Write::DeleteRule { policy_id, rule_id, .. } => o.delete_l7rule(policy_id, rule_id).await?,
            Write::UpdatePolicy { policy, position, pool, admin_state_up, .. } => {
                o.update_l7policy(
                    &policy_id(policy),
                    &L7PolicyUpdate {
                        position: *position,
                        redirect_pool_id: pool.as_ref().map(pool_id),
                        admin_state_up: *admin_state_up,
                        ..L7PolicyUpdate::default()
                    },
                )
                .await?;
            }
            Write::DeletePolicy { id, .. } => o.delete_l7policy(id).await?,
            Write::SetDefaultPool { listener_id, pool } => {
                o.update_listener(
                    listener_id,
                    &ListenerUpdate { default_pool_id: Some(pool.as_ref().map(pool_id)), ..ListenerUpdate::default() },
                )
                .await?;
            }
        }
        Ok(())
    }

    /// Put the router's floating IP on its VIP port and return its address.
    ///
    /// With `l7_router_ip`, that floating IP must exist and be free or already ours. Without it, one
    /// is allocated on the external network of `external_svc_subnet`, described with the router's
    /// id so that a restart finds the same one (never one more per start).
    pub async fn ensure_floating_ip(&self, lb: &LoadBalancer) -> Result<Option<IpAddr>> {
        let Some(vip_port) = lb.vip_port_id.clone() else { return Ok(None) };
        let n = &self.neutron;
        let by = |k: &str, v: &str| ListQuery { extra: vec![(k.to_string(), v.to_string())], ..ListQuery::default() };
        if let Some(ip) = self.spec.floating_ip {
            let fip = n
                .list_floating_ips(&by("floating_ip_address", &ip.to_string()))
                .await?
                .into_iter()
                .next()
                .ok_or(DriverError::FloatingIpNotFound(ip))?;
            match fip.port_id.as_deref() {
                Some(p) if p == vip_port => {}
                Some(p) => {
                    return Err(DriverError::FloatingIpInUse { ip, port: p.to_string(), vip_port });
                }
                None => {
                    n.associate_floating_ip(&fip.id, &vip_port).await?;
                }
            }
            return Ok(Some(ip));
        }
        let Some(subnet) = &self.spec.external_svc_subnet else { return Ok(None) };
        if let Some(fip) = n.list_floating_ips(&by("port_id", &vip_port)).await?.into_iter().next() {
            return Ok(fip.floating_ip_address.parse().ok());
        }
        let marker = floating_ip_description(&self.spec.ownership, &lb.id);
        if let Some(fip) = n.list_floating_ips(&by("description", &marker)).await?.into_iter().next() {
            // Allocated by an earlier run that stopped before associating it.
            n.associate_floating_ip(&fip.id, &vip_port).await?;
            return Ok(fip.floating_ip_address.parse().ok());
        }
        let network = n.get_subnet(subnet).await?.network_id;
        let fip = n
            .create_floating_ip(&FloatingIpCreate {
                floating_network_id: network,
                description: Some(marker),
                port_id: Some(vip_port),
                floating_ip_address: None,
            })
            .await?;
        Ok(fip.floating_ip_address.parse().ok())
    }
}

/// An Octavia member as the diff sees it (`None` for an address that does not parse, which
/// Octavia never returns).
pub fn actual_member(m: crate::openstack::octavia::Member) -> Option<ActualMember> {
    Some(ActualMember {
        address: m.address.parse().ok()?,
        id: m.id,
        name: m.name,
        protocol_port: m.protocol_port,
        weight: m.weight,
        backup: m.backup,
        admin_state_up: m.admin_state_up,
        tags: m.tags,
        in_error: m.provisioning_status == "ERROR",
    })
}

/// How a floating IP we allocated is recognised after a restart.
pub fn floating_ip_description(own: &Ownership, lb_id: &str) -> String {
    format!("{} {} router {lb_id}", super::diff::PRODUCT_TAG, own.cluster_tag())
}

fn member_create(m: &MemberSpec) -> MemberCreate {
    MemberCreate {
        name: Some(m.name.clone()),
        address: m.address.to_string(),
        protocol_port: m.protocol_port,
        weight: Some(m.weight),
        backup: Some(m.backup),
        admin_state_up: Some(m.admin_state_up),
        tags: m.tags.clone(),
        ..MemberCreate::default()
    }
}

fn health_monitor_create(spec: &HealthMonitorSpec) -> HealthMonitorCreate {
    let http = spec.monitor_type.starts_with("HTTP");
    HealthMonitorCreate {
        monitor_type: spec.monitor_type.clone(),
        delay: spec.delay,
        timeout: spec.timeout,
        max_retries: spec.max_retries,
        http_method: http.then(|| "GET".to_string()),
        url_path: spec.url_path.clone().filter(|_| http),
        expected_codes: spec.expected_codes.clone().filter(|_| http),
        ..HealthMonitorCreate::default()
    }
}

/// The fully-populated create body of a brand-new router holding `desired` (pure, tested).
pub fn populated_create(spec: &RouterSpec, vip_subnet_id: &str, desired: &DesiredRouter) -> LoadBalancerCreate {
    let own = &spec.ownership;
    let pools = desired
        .pools
        .values()
        .map(|p| {
            let tags = own.tags_for(&p.service);
            PoolCreate {
                name: Some(p.name.clone()),
                protocol: "HTTP".into(),
                lb_algorithm: p.lb_algorithm.clone(),
                members: p
                    .members
                    .iter()
                    .map(|m| {
                        member_create(&MemberSpec {
                            name: m.target.clone().unwrap_or_else(|| format!("{}:{}", m.address, m.protocol_port)),
                            address: m.address,
                            protocol_port: m.protocol_port,
                            weight: m.weight,
                            backup: m.backup,
                            admin_state_up: true,
                            tags: tags.clone(),
                        })
                    })
                    .collect(),
                healthmonitor: spec
                    .health_monitor
                    .as_ref()
                    .map(|h| HealthMonitorCreate { tags: tags.clone(), ..health_monitor_create(h) }),
                tags,
                ..PoolCreate::default()
            }
        })
        .collect();
    let l7policies = desired
        .policies
        .iter()
        .filter(|p| desired.pools.contains_key(&p.pool))
        .map(|p| {
            let tags = own.tags_for(&p.owner);
            L7PolicyCreate {
                name: Some(p.name.clone()),
                description: Some(p.description.clone()),
                action: "REDIRECT_TO_POOL".into(),
                redirect_pool: Some(NameRef { name: p.pool.clone() }),
                position: Some(p.position),
                rules: p.rules.iter().map(|r| L7RuleCreate { tags: tags.clone(), ..L7RuleCreate::from(r) }).collect(),
                tags,
                ..L7PolicyCreate::default()
            }
        })
        .collect();
    LoadBalancerCreate {
        name: Some(spec.name.clone()),
        description: Some("L7 router of kuryr-l7-router: Kubernetes Ingresses as L7 policies".into()),
        vip_subnet_id: Some(vip_subnet_id.into()),
        provider: spec.provider.clone().filter(|p| !p.is_empty()),
        availability_zone: spec.availability_zone.clone(),
        tags: own.router_tags(),
        listeners: vec![ListenerCreate {
            name: Some(format!("{}-http", spec.name)),
            protocol: "HTTP".into(),
            protocol_port: spec.listener_port,
            default_pool: desired
                .default_pool
                .as_ref()
                .filter(|d| desired.pools.contains_key(*d))
                .map(|d| NameRef { name: d.clone() }),
            l7policies,
            tags: own.router_tags(),
            ..ListenerCreate::default()
        }],
        pools,
        ..LoadBalancerCreate::default()
    }
}
