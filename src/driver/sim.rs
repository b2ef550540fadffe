//! An in-memory model of how Octavia applies each [`Write`] to a router: positions renumbered on
//! insert and move, the batch member update matching on (address, port) and deleting what it
//! omits, pools refused while a policy redirects to them.
//!
//! It lets the tests check the convergence property (plan, apply, plan again = no write) for any
//! input without a cloud, and lets the benchmarks count the writes of large scenarios. The
//! functional tests check the same behaviour against the real Octavia.

use super::actual::{ActualHealthMonitor, ActualMember, ActualPolicy, ActualPool, ActualRouter, ActualRule};
use super::object_id::ObjectId;
use super::plan::{PolicyAction, PolicyRef, PoolRef, Write, compare_type_str, rule_type_str};

/// The simulator's ids are this and a 12-hex-digit number: canonical UUIDs, as Octavia's are, so
/// that the router read back holds them as the controller does (see [`ObjectId`](super::object_id::ObjectId)).
const SIM_ID_PREFIX: &str = "00000000-0000-4000-8000-";

/// Applies writes to a snapshot, handing out ids shaped like Octavia's (UUIDs), numbered:
/// `00000000-0000-4000-8000-000000000001`, ...
#[derive(Debug, Default)]
pub struct Simulator {
    pub router: ActualRouter,
    next_id: u64,
}

impl Simulator {
    pub fn new(router: ActualRouter) -> Self {
        // Continue after the ids of a snapshot taken from another simulator, so none is reused.
        let ids = router
            .policies
            .iter()
            .flat_map(|p| std::iter::once(p.id.to_string()).chain(p.rules.iter().map(|r| r.id.to_string())))
            .chain(
                router
                    .pools
                    .iter()
                    .flat_map(|p| std::iter::once(p.id.to_string()).chain(p.members.iter().map(|m| m.id.to_string()))),
            );
        let next_id =
            ids.filter_map(|id| u64::from_str_radix(id.strip_prefix(SIM_ID_PREFIX)?, 16).ok()).max().unwrap_or(0);
        Self { router, next_id }
    }

    fn id(&mut self) -> ObjectId {
        self.next_id += 1;
        format!("{SIM_ID_PREFIX}{:012x}", self.next_id).into()
    }

    fn pool_id(&self, r: &PoolRef) -> Result<ObjectId, String> {
        match r {
            PoolRef::Id(id) => self
                .router
                .pools
                .iter()
                .find(|p| p.id == id.as_str())
                .map(|p| p.id.clone())
                .ok_or(format!("no pool {id}")),
            PoolRef::New(name) => self
                .router
                .pools
                .iter()
                .rev()
                .find(|p| &p.name == name)
                .map(|p| p.id.clone())
                .ok_or(format!("pool {name} not created yet")),
        }
    }

    fn policy_index(&self, r: &PolicyRef) -> Result<usize, String> {
        match r {
            PolicyRef::Id(id) => {
                self.router.policies.iter().position(|p| p.id == id.as_str()).ok_or(format!("no policy {id}"))
            }
            PolicyRef::New(name) => self
                .router
                .policies
                .iter()
                .rposition(|p| &p.name == name)
                .ok_or(format!("policy {name} not created yet")),
        }
    }

    fn renumber(&mut self) {
        for (i, p) in self.router.policies.iter_mut().enumerate() {
            p.position = i as u32 + 1;
        }
    }

    /// Apply one write as Octavia would; an error is what Octavia would refuse.
    pub fn apply(&mut self, w: &Write) -> Result<(), String> {
        match w {
            Write::CreatePool { name, lb_algorithm, tags } => {
                let id = self.id();
                self.router.pools.push(ActualPool {
                    id,
                    name: name.clone(),
                    lb_algorithm: super::actual::word(lb_algorithm.clone()),
                    members: Default::default(),
                    healthmonitor: None,
                    tags: tags.clone(),
                    in_error: false,
                });
            }
            Write::UpdatePool { id, lb_algorithm, .. } => {
                let pool = self.router.pools.iter_mut().find(|p| p.id == id.as_str()).ok_or(format!("no pool {id}"))?;
                pool.lb_algorithm = super::actual::word(lb_algorithm.clone());
            }
            Write::SetMembers { pool, members, .. } => {
                let pid = self.pool_id(pool)?;
                let mut seen = std::collections::BTreeSet::new();
                for m in members {
                    if !seen.insert((m.address, m.protocol_port)) {
                        return Err(format!("duplicate member {}:{} in batch", m.address, m.protocol_port));
                    }
                }
                let mut ids = Vec::new();
                for _ in members {
                    ids.push(self.id());
                }
                let p = self.router.pools.iter_mut().find(|p| p.id == pid).expect("pool id resolved above");
                let old = std::mem::take(&mut p.members);
                p.members = members
                    .iter()
                    .zip(ids)
                    .map(|(m, new_id)| {
                        let id = old
                            .iter()
                            .find(|o| o.address == m.address && o.protocol_port == m.protocol_port)
                            .map(|o| o.id.clone())
                            .unwrap_or(new_id);
                        // The batch update rewrites every member it names.
                        ActualMember::written(id, m.clone())
                    })
                    .collect();
            }
            Write::DeletePool { id, name } => {
                if self.router.policies.iter().any(|p| p.redirect_pool_id.as_ref().is_some_and(|r| r == id.as_str())) {
                    return Err(format!("pool {name} is in use by an L7 policy"));
                }
                self.router.pools.retain(|p| p.id != id.as_str());
                if self.router.listener.default_pool_id.as_deref() == Some(id.as_str()) {
                    self.router.listener.default_pool_id = None;
                }
            }
            Write::CreateHealthMonitor { pool, spec, tags, .. } => {
                let pid = self.pool_id(pool)?;
                let id = self.id();
                let p = self.router.pools.iter_mut().find(|p| p.id == pid).expect("pool id resolved above");
                if p.healthmonitor.is_some() {
                    return Err(format!("pool {} already has a health monitor", p.name));
                }
                p.healthmonitor =
                    Some(ActualHealthMonitor { id: id.to_string(), spec: spec.clone(), tags: tags.to_vec() });
            }
            Write::UpdateHealthMonitor { id, spec, .. } => {
                let hm = self
                    .router
                    .pools
                    .iter_mut()
                    .filter_map(|p| p.healthmonitor.as_mut())
                    .find(|h| &h.id == id)
                    .ok_or(format!("no health monitor {id}"))?;
                hm.spec = spec.clone();
            }
            Write::DeleteHealthMonitor { id, .. } => {
                for p in &mut self.router.pools {
                    if p.healthmonitor.as_ref().is_some_and(|h| &h.id == id) {
                        p.healthmonitor = None;
                    }
                }
            }
            Write::CreatePolicy { name, position, action, admin_state_up, tags, .. } => {
                let (kind, redirect_pool_id, redirect) = match action {
                    PolicyAction::Pool(pool) => ("REDIRECT_TO_POOL", Some(self.pool_id(pool)?), None),
                    PolicyAction::Redirect(r) => {
                        ("REDIRECT_PREFIX", None, Some((r.code, Some(r.prefix.clone()), None)))
                    }
                    PolicyAction::RedirectUrl(r) => {
                        ("REDIRECT_TO_URL", None, Some((r.code, None, Some(r.url.clone()))))
                    }
                };
                let id = self.id();
                let at = (*position as usize).saturating_sub(1).min(self.router.policies.len());
                self.router.policies.insert(
                    at,
                    ActualPolicy {
                        id,
                        name: name.clone(),
                        position: *position,
                        action: kind.into(),
                        redirect_pool_id,
                        redirect_prefix: redirect.as_ref().and_then(|r| r.1.clone()),
                        redirect_url: redirect.as_ref().and_then(|r| r.2.clone()),
                        redirect_http_code: redirect.as_ref().map(|r| r.0),
                        admin_state_up: *admin_state_up,
                        rules: Default::default(),
                        tags: tags.clone(),
                        in_error: false,
                    },
                );
                self.renumber();
            }
            Write::CreateRule { policy, rule, .. } => {
                let i = self.policy_index(policy)?;
                let id = self.id();
                let p = &mut self.router.policies[i];
                if p.rules.len() >= 50 {
                    return Err(format!("policy {} already has 50 rules", p.name));
                }
                let mut rules = p.rules.to_vec();
                rules.push(ActualRule {
                    id,
                    rule_type: rule_type_str(rule.rule_type).into(),
                    compare_type: compare_type_str(rule.compare_type).into(),
                    value: rule.value.clone(),
                    key: rule.key.clone(),
                    invert: rule.invert,
                });
                p.rules = rules.into();
            }
            Write::UpdateRule { policy_id, rule_id, rule, .. } => {
                let i = self.policy_index(&PolicyRef::Id(policy_id.clone()))?;
                let r = std::sync::Arc::make_mut(&mut self.router.policies[i].rules)
                    .iter_mut()
                    .find(|r| r.id == rule_id.as_str())
                    .ok_or(format!("no rule {rule_id}"))?;
                r.rule_type = rule_type_str(rule.rule_type).into();
                r.compare_type = compare_type_str(rule.compare_type).into();
                r.value = rule.value.clone();
                r.key = rule.key.clone();
                r.invert = rule.invert;
            }
            Write::DeleteRule { policy_id, rule_id, .. } => {
                let i = self.policy_index(&PolicyRef::Id(policy_id.clone()))?;
                let rules = &mut self.router.policies[i].rules;
                *rules = rules.iter().filter(|r| r.id != rule_id.as_str()).cloned().collect();
            }
            Write::UpdatePolicy { policy, position, pool, redirect, redirect_url, admin_state_up, .. } => {
                let i = self.policy_index(policy)?;
                // As Octavia: the action goes with its target, the other targets are cleared.
                if let Some(pool) = pool {
                    let pid = self.pool_id(pool)?;
                    let p = &mut self.router.policies[i];
                    p.action = "REDIRECT_TO_POOL".into();
                    (p.redirect_prefix, p.redirect_url, p.redirect_http_code) = (None, None, None);
                    p.redirect_pool_id = Some(pid);
                }
                if let Some(r) = redirect {
                    let p = &mut self.router.policies[i];
                    p.action = "REDIRECT_PREFIX".into();
                    (p.redirect_pool_id, p.redirect_url) = (None, None);
                    p.redirect_prefix = Some(r.prefix.clone());
                    p.redirect_http_code = Some(r.code);
                }
                if let Some(r) = redirect_url {
                    let p = &mut self.router.policies[i];
                    p.action = "REDIRECT_TO_URL".into();
                    (p.redirect_pool_id, p.redirect_prefix) = (None, None);
                    p.redirect_url = Some(r.url.clone());
                    p.redirect_http_code = Some(r.code);
                }
                if let Some(up) = admin_state_up {
                    self.router.policies[i].admin_state_up = *up;
                }
                if let Some(pos) = position {
                    let p = self.router.policies.remove(i);
                    let at = (*pos as usize).saturating_sub(1).min(self.router.policies.len());
                    self.router.policies.insert(at, p);
                    self.renumber();
                }
            }
            Write::DeletePolicy { id, .. } => {
                self.router.policies.retain(|p| p.id != id.as_str());
                self.renumber();
            }
            Write::SetDefaultPool { pool, .. } => {
                self.router.listener.default_pool_id = match pool {
                    Some(p) => Some(self.pool_id(p)?.to_string()),
                    None => None,
                };
            }
        }
        Ok(())
    }

    pub fn apply_all(&mut self, writes: &[Write]) -> Result<(), String> {
        for w in writes {
            self.apply(w).map_err(|e| format!("{w}: {e}"))?;
        }
        Ok(())
    }
}

/// A refusal injected into a [`SimListener`]: `Some(error)` for a write Octavia would refuse.
pub type Refuse = std::sync::Arc<dyn Fn(&Write) -> Option<crate::openstack::Error> + Send + Sync>;

/// One listener on a shared [`Simulator`] for [`super::rounds::converge_listener`]: the same
/// rounds, isolation and leader gate as the real driver, without a cloud. `refuse` injects
/// Octavia's refusals (called before each write; a test may also flip the gate from it).
pub struct SimListener {
    pub state: std::sync::Arc<std::sync::Mutex<Simulator>>,
    pub refuse: Refuse,
    pub gate: super::cloud::WriteGate,
}

impl super::rounds::ListenerIo for SimListener {
    async fn read(&mut self, _round: usize) -> super::error::Result<ActualRouter> {
        Ok(self.state.lock().expect("sim lock").router.clone())
    }

    async fn send(&mut self, w: &Write) -> super::error::Result<super::report::WriteRecord> {
        if let Some(source) = (self.refuse)(w) {
            return Err(super::error::DriverError::Write { write: w.to_string(), source });
        }
        let t = std::time::Instant::now();
        self.state.lock().expect("sim lock").apply(w).map_err(super::error::DriverError::Simulated)?;
        Ok(super::report::WriteRecord { kind: w.kind(), description: w.to_string(), duration: t.elapsed() })
    }

    fn may_write(&self) -> bool {
        self.gate.is_open()
    }
}
