//! Test doubles for the tests in `tests/` and the demos: not used by the controller itself.
//! Compiled only with the `testing` feature, which the crate's dev-dependency on itself turns on
//! for `cargo test` and the benches, so that no extra flag is needed and the binary has none of it.

use crate::controller::writer::{MembersOutcome, MembersResult, RouterBackend, SyncResult, WriteError};
use crate::driver::actual::{ActualListener, ActualRouter};
use crate::driver::admission::QuotaLedger;
use crate::driver::diff::plan_members;
use crate::driver::isolation::WriteBackoff;
use crate::driver::plan::DiffOptions;
use crate::driver::rounds::{RoundOptions, converge_listener};
use crate::driver::sim::{Refuse, SimListener, Simulator};
use crate::driver::{ConvergeReport, WriteGate};
use crate::model::{DesiredRouter, Pool};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// [`RouterBackend`] on the driver's [`Simulator`]: plans with the real diff and applies the
/// writes as Octavia would, without a cloud. `fail` makes the next calls fail.
pub struct SimBackend {
    pub state: Arc<Mutex<Simulator>>,
    pub opts: DiffOptions,
    pub address: Option<std::net::IpAddr>,
    pub fail: Arc<Mutex<Option<WriteError>>>,
    /// Artificial duration of each job, to observe coalescing.
    pub delay: Duration,
    /// Batch member PUTs applied so far (Members jobs and the member writes of Syncs).
    pub member_puts: Arc<AtomicUsize>,
    /// Writes the simulated Octavia refuses (none by default): see [`SimListener`].
    pub refuse: Refuse,
    /// Objects on hold after a refusal (see `driver::isolation`).
    pub backoff: Arc<Mutex<WriteBackoff>>,
    /// The project's L7 quota as the driver applies it (see `driver::admission`).
    pub quota: Arc<Mutex<QuotaLedger>>,
    /// The leader gate, checked before every write.
    pub gate: WriteGate,
    /// What [`RouterBackend::blocked`] answers (a router refusing every write).
    pub blocked: Arc<std::sync::atomic::AtomicBool>,
    /// Set when the router was deleted (its simulated load balancer is emptied too).
    pub deleted: Arc<std::sync::atomic::AtomicBool>,
    /// What a Sync that reads the budget reports (`None`: it reads nothing, as without quotas).
    pub budget: Arc<Mutex<Option<crate::driver::report::BudgetReading>>>,
    /// What [`RouterBackend::set_load_balancers`] answers: the load balancers carrying the
    /// set tag, as Octavia would list them.
    pub set_names: Arc<Mutex<Vec<crate::driver::FoundRouter>>>,
    /// The simulated load balancer's own tags (the driver's `lifecycle::mark` keeps them as
    /// Octavia's would be: the set tag, the `empty-since` tag of an empty router).
    pub lb_tags: Arc<Mutex<Vec<String>>>,
    /// The more HTTP listeners of the last Sync (`DesiredRouter::more_http`), by port: their
    /// policies' names. The simulator has one listener; these are recorded, not simulated.
    pub more_http: Arc<Mutex<std::collections::BTreeMap<u16, Vec<String>>>>,
    /// Objects every Sync reports on hold (`ConvergeReport::held`, retried after 200 ms) while
    /// set: a refusal of the HTTPS side or of Barbican, which the simulator does not simulate.
    pub held: Arc<Mutex<Vec<crate::driver::report::WriteFailure>>>,
}

impl SimBackend {
    pub fn new(opts: DiffOptions, address: Option<std::net::IpAddr>) -> Self {
        let mut sim = Simulator::default();
        sim.router.listener =
            ActualListener { id: "listener".into(), default_pool_id: None, tags: opts.ownership.router_tags() };
        let lb_tags = opts.ownership.router_tags();
        Self {
            state: Arc::new(Mutex::new(sim)),
            opts,
            address,
            fail: Arc::new(Mutex::new(None)),
            delay: Duration::ZERO,
            member_puts: Arc::new(AtomicUsize::new(0)),
            refuse: Arc::new(|_| None),
            backoff: Default::default(),
            quota: Default::default(),
            gate: WriteGate::default(),
            blocked: Default::default(),
            budget: Default::default(),
            deleted: Default::default(),
            set_names: Default::default(),
            lb_tags: Arc::new(Mutex::new(lb_tags)),
            more_http: Default::default(),
            held: Default::default(),
        }
    }

    /// A copy of the simulated router.
    pub fn actual(&self) -> ActualRouter {
        self.state.lock().expect("sim lock").router.clone()
    }

    /// The artificial delay, then the injected failure if any.
    async fn before_job(&self) -> Result<(), WriteError> {
        if !self.delay.is_zero() {
            tokio::time::sleep(self.delay).await;
        }
        match self.fail.lock().expect("sim lock").clone() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

impl RouterBackend for SimBackend {
    async fn sync(&self, desired: &DesiredRouter) -> SyncResult {
        self.before_job().await?;
        // The real driver's rounds (isolation, leader gate) on the simulated listener.
        let mut io = SimListener { state: self.state.clone(), refuse: self.refuse.clone(), gate: self.gate.clone() };
        crate::driver::rounds::begin_convergence(&self.backoff, &self.quota, desired);
        let opts = RoundOptions {
            listener: "listener",
            diff: &self.opts,
            verify: false,
            backoff: &self.backoff,
            now: Instant::now(),
            quota: &self.quota,
        };
        let mut report = ConvergeReport {
            lb_id: "sim-router".into(),
            listener_id: "listener".into(),
            address: self.address,
            vip_address: self.address,
            ..ConvergeReport::default()
        };
        {
            let mut tags = self.lb_tags.lock().expect("sim lock");
            if let Some(want) = self.opts.ownership.load_balancer_tags(&tags, desired.empty_since) {
                *tags = want;
            }
        }
        converge_listener(&mut io, desired, &opts, &mut report)
            .await
            .map_err(|e| WriteError::new(e.label(), e.to_string()))?;
        for w in &mut report.writes {
            w.duration = Duration::ZERO;
        }
        let held = self.held.lock().expect("sim lock").clone();
        if !held.is_empty() {
            report.held.extend(held);
            report.retry_after = Some(Duration::from_millis(200));
        }
        let puts = report.writes.iter().filter(|w| w.kind == "batch_members").count();
        self.member_puts.fetch_add(puts, Ordering::SeqCst);
        *self.more_http.lock().expect("sim lock") = desired
            .more_http
            .iter()
            .map(|(port, l)| (*port, l.policies.iter().map(|p| p.name.clone()).collect()))
            .collect();
        Ok(report)
    }

    async fn sync_reading_budget(&self, desired: &DesiredRouter) -> SyncResult {
        let mut report = self.sync(desired).await?;
        report.budget = self.budget.lock().expect("sim lock").clone();
        Ok(report)
    }

    async fn delete_router(&self) -> crate::controller::writer::DeleteResult {
        self.before_job().await?;
        if !self.gate.is_open() {
            let e = crate::driver::DriverError::NotLeader;
            return Err(WriteError::new(e.label(), e.to_string()));
        }
        self.state.lock().expect("sim lock").router = ActualRouter::default();
        Ok(!self.deleted.swap(true, Ordering::SeqCst))
    }

    fn blocked(&self) -> bool {
        self.blocked.load(std::sync::atomic::Ordering::SeqCst)
    }

    fn set_write_gate(&mut self, gate: WriteGate) {
        self.gate = gate;
    }

    async fn set_load_balancers(&self) -> Result<Vec<crate::driver::FoundRouter>, WriteError> {
        Ok(self.set_names.lock().expect("sim lock").clone())
    }

    async fn routed_hosts(&self) -> Result<Option<std::collections::BTreeSet<String>>, WriteError> {
        if self.deleted.load(std::sync::atomic::Ordering::SeqCst) {
            return Ok(None);
        }
        let sim = self.state.lock().expect("sim lock");
        Ok(Some(crate::controller::router_set::migration::routed_hosts([&sim.router])))
    }

    async fn set_members(&self, pool: &Pool) -> MembersResult {
        self.before_job().await?;
        if !self.gate.is_open() {
            let e = crate::driver::DriverError::NotLeader;
            return Err(WriteError::new(e.label(), e.to_string()));
        }
        let mut sim = self.state.lock().expect("sim lock");
        let Some(actual) =
            sim.router.pools.iter().find(|p| p.name == pool.name && self.opts.ownership.owns(&p.tags)).cloned()
        else {
            return Ok(MembersOutcome::PoolMissing);
        };
        match plan_members(pool, &actual, &self.opts) {
            None => Ok(MembersOutcome::Unchanged),
            Some(w) => {
                sim.apply(&w).map_err(|e| WriteError::new("sim", e))?;
                self.member_puts.fetch_add(1, Ordering::SeqCst);
                Ok(MembersOutcome::Updated)
            }
        }
    }
}

/// A `kubernetes.io/tls` Secret manifest (YAML, `stringData`) holding `crt` and `key` (PEM), as
/// the tests and fixtures of the HTTPS translation write them.
pub fn tls_secret_manifest(namespace: &str, name: &str, crt: &str, key: &str) -> String {
    let indent = |s: &str| s.lines().map(|l| format!("    {l}")).collect::<Vec<_>>().join("\n");
    format!(
        "apiVersion: v1\nkind: Secret\nmetadata: {{namespace: {namespace}, name: {name}}}\ntype: kubernetes.io/tls\n\
         stringData:\n  tls.crt: |\n{}\n  tls.key: |\n{}\n",
        indent(crt),
        indent(key)
    )
}

/// A member on port 8080 of `ip` (primary, no zone, no target reference), for desired states
/// written by hand in tests.
pub fn member(ip: &str, weight: u16) -> crate::model::Member {
    crate::model::Member {
        address: ip.parse().unwrap(),
        protocol_port: 8080,
        weight,
        backup: false,
        zone: None,
        target: None,
        monitor_port: None,
    }
}

/// Pool `name` of Service shop/web port 80, round robin, even weights, with `members`.
pub fn pool(name: &str, members: Vec<crate::model::Member>) -> Pool {
    Pool {
        name: name.into(),
        service: crate::model::KubeRef::new("Service", "shop", "web"),
        service_port: "80".into(),
        lb_algorithm: "ROUND_ROBIN".into(),
        members,
        weighting: "even".into(),
        split: Vec::new(),
        member_mode: Default::default(),
    }
}

/// Pool `default_<svc>` of Service default/<svc> port `http`, round robin, even weights, with
/// one member (10.0.0.1, weight 1): the pool of an Ingress backend.
pub fn service_pool(svc: &str) -> Pool {
    Pool {
        name: format!("default_{svc}"),
        service: crate::model::KubeRef::new("Service", "default", svc),
        service_port: "http".into(),
        members: vec![member("10.0.0.1", 1)],
        ..pool("", vec![])
    }
}

/// HTTPRoute infra/web's rule `Exact path` to `pool`, at `position`.
pub fn exact_route(path: &str, pool: &str, position: u32) -> crate::model::Policy {
    use crate::model::{CompareType, Rule, RuleType};
    crate::model::Policy {
        name: format!("gateway:infra/web:{path}"),
        position,
        pool: pool.into(),
        rules: vec![Rule {
            rule_type: RuleType::Path,
            compare_type: CompareType::EqualTo,
            value: path.into(),
            invert: false,
            key: None,
        }],
        owner: crate::model::KubeRef::new("HTTPRoute", "infra", "web"),
        description: format!("Exact {path}"),
        redirect: None,
    }
}

/// The desired rule `PATH STARTS_WITH value`.
pub fn path_prefix_rule(value: &str) -> crate::model::Rule {
    crate::model::Rule {
        rule_type: crate::model::RuleType::Path,
        compare_type: crate::model::CompareType::StartsWith,
        value: value.into(),
        invert: false,
        key: None,
    }
}

/// [`path_prefix_rule`] as a read of Octavia shows it, with `id`.
pub fn read_path_prefix_rule(id: &str, value: &str) -> crate::driver::actual::ActualRule {
    crate::driver::actual::ActualRule {
        id: id.into(),
        rule_type: "PATH".into(),
        compare_type: "STARTS_WITH".into(),
        value: value.into(),
        key: None,
        invert: false,
    }
}

/// A desired router with only the empty pools `pools` (see [`pool`]).
pub fn desired_with(pools: &[&str]) -> DesiredRouter {
    DesiredRouter { pools: pools.iter().map(|p| (p.to_string(), pool(p, vec![]))).collect(), ..Default::default() }
}
