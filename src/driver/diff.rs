//! The pure half of the driver: compare the desired router (from the translation) with a snapshot
//! of what Octavia holds, and list the writes that converge one to the other.
//!
//! Why it is shaped this way:
//! - Octavia serializes every write on the one router load balancer (each write makes it
//!   PENDING_UPDATE for ~0.2–4 s), so the number of writes *is* the convergence time. The plan makes
//!   no write that is not needed: unchanged objects produce nothing, a member change is one batch
//!   PUT for the pool, a backend change is one PUT on the policy.
//! - Create before delete: new pools and policies are written first, stale ones deleted last, so a
//!   route that changes never has a window where nothing serves it.
//! - A policy with several rules is created disabled and enabled after its last rule: haproxy
//!   renders a policy as soon as it has one enabled rule, and a host-only policy would briefly
//!   capture every path of that host.
//! - Ownership is by tags. Objects without our tags are never in a write (not even a batch member
//!   PUT: foreign members of one of our pools are carried over unchanged, because the batch PUT
//!   deletes what it omits).

use crate::model::{CompareType, DesiredRouter, Member, ObjectRef, Pool, Rule, RuleType};
use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

/// The tag every object we create carries.
pub const PRODUCT_TAG: &str = "kuryr-l7-router";

/// Who we are on the router: objects carrying both [`PRODUCT_TAG`] and our cluster tag are ours.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ownership {
    pub cluster: String,
}

impl Ownership {
    pub fn new(cluster: &str) -> Self {
        Self { cluster: cluster.to_string() }
    }

    pub fn cluster_tag(&self) -> String {
        format!("cluster:{}", self.cluster)
    }

    /// The tags of an object owned by `owner` (an Ingress for policies, a Service for pools).
    pub fn tags_for(&self, owner: &ObjectRef) -> Vec<String> {
        vec![PRODUCT_TAG.to_string(), self.cluster_tag(), owner_tag(owner)]
    }

    /// The tags that mark the router itself (load balancer, listener).
    pub fn router_tags(&self) -> Vec<String> {
        vec![PRODUCT_TAG.to_string(), self.cluster_tag()]
    }

    pub fn owns(&self, tags: &[String]) -> bool {
        let cluster = self.cluster_tag();
        tags.iter().any(|t| t == PRODUCT_TAG) && tags.contains(&cluster)
    }
}

/// `ingress:<ns>/<name>` or `service:<ns>/<name>`; Octavia tags are at most 255 characters and
/// Kubernetes names at most 253, so long names are cut (the tag is informative; identity is the
/// object name).
pub fn owner_tag(owner: &ObjectRef) -> String {
    let mut tag = format!("{}:{}/{}", owner.kind.to_ascii_lowercase(), owner.namespace, owner.name);
    if tag.len() > 255 {
        let mut cut = 255;
        while !tag.is_char_boundary(cut) {
            cut -= 1;
        }
        tag.truncate(cut);
    }
    tag
}

pub fn rule_type_str(t: RuleType) -> &'static str {
    match t {
        RuleType::HostName => "HOST_NAME",
        RuleType::Path => "PATH",
    }
}

pub fn compare_type_str(c: CompareType) -> &'static str {
    match c {
        CompareType::EqualTo => "EQUAL_TO",
        CompareType::StartsWith => "STARTS_WITH",
        CompareType::EndsWith => "ENDS_WITH",
        CompareType::Contains => "CONTAINS",
        CompareType::Regex => "REGEX",
    }
}

// ------------------------------------------------------------------ what Octavia holds

/// A snapshot of the router's children, as read from Octavia (foreign objects included).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ActualRouter {
    pub listener: ActualListener,
    /// In position order.
    pub policies: Vec<ActualPolicy>,
    pub pools: Vec<ActualPool>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct ActualListener {
    pub id: String,
    pub default_pool_id: Option<String>,
    pub tags: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct ActualPolicy {
    pub id: String,
    pub name: String,
    pub position: u32,
    pub action: String,
    pub redirect_pool_id: Option<String>,
    pub admin_state_up: bool,
    pub rules: Vec<ActualRule>,
    pub tags: Vec<String>,
    /// provisioning_status ERROR: replaced by a new one (see [`plan_writes`]).
    pub in_error: bool,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct ActualRule {
    pub id: String,
    pub rule_type: String,
    pub compare_type: String,
    pub value: String,
    pub key: Option<String>,
    pub invert: bool,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct ActualPool {
    pub id: String,
    pub name: String,
    pub lb_algorithm: String,
    pub members: Vec<ActualMember>,
    pub healthmonitor: Option<ActualHealthMonitor>,
    pub tags: Vec<String>,
    /// provisioning_status ERROR: replaced by a new one (see [`plan_writes`]).
    pub in_error: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ActualMember {
    pub id: String,
    pub name: String,
    pub address: IpAddr,
    pub protocol_port: u16,
    pub weight: u16,
    pub backup: bool,
    pub admin_state_up: bool,
    pub tags: Vec<String>,
    /// provisioning_status ERROR: rewritten by the next batch update.
    pub in_error: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ActualHealthMonitor {
    pub id: String,
    pub spec: HealthMonitorSpec,
    pub tags: Vec<String>,
}

/// The per-pool health monitor from `[octavia_defaults] health_monitor*`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HealthMonitorSpec {
    /// HTTP or TCP.
    pub monitor_type: String,
    pub delay: u32,
    pub timeout: u32,
    pub max_retries: u32,
    /// HTTP only.
    pub url_path: Option<String>,
    pub expected_codes: Option<String>,
}

// ------------------------------------------------------------------ the writes

/// A pool that exists (by id) or is created earlier in the same plan (by name).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PoolRef {
    Id(String),
    New(String),
}

/// A policy that exists (by id) or is created earlier in the same plan (by name).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PolicyRef {
    Id(String),
    New(String),
}

/// One member in a batch member update.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemberSpec {
    pub name: String,
    pub address: IpAddr,
    pub protocol_port: u16,
    pub weight: u16,
    pub backup: bool,
    pub admin_state_up: bool,
    /// Empty for foreign members carried over unchanged.
    pub tags: Vec<String>,
}

/// One Octavia write on the router.
#[derive(Clone, Debug, PartialEq)]
pub enum Write {
    CreatePool {
        name: String,
        lb_algorithm: String,
        tags: Vec<String>,
    },
    UpdatePool {
        id: String,
        name: String,
        lb_algorithm: String,
    },
    /// `PUT /v2/lbaas/pools/{id}/members`: the complete member list of the pool.
    SetMembers {
        pool: PoolRef,
        pool_name: String,
        members: Vec<MemberSpec>,
    },
    DeletePool {
        id: String,
        name: String,
    },
    CreateHealthMonitor {
        pool: PoolRef,
        pool_name: String,
        spec: HealthMonitorSpec,
        tags: Vec<String>,
    },
    UpdateHealthMonitor {
        id: String,
        pool_name: String,
        spec: HealthMonitorSpec,
    },
    DeleteHealthMonitor {
        id: String,
        pool_name: String,
    },
    /// Created disabled when it will have more than one rule (see module docs).
    CreatePolicy {
        name: String,
        position: u32,
        pool: PoolRef,
        admin_state_up: bool,
        description: String,
        tags: Vec<String>,
    },
    CreateRule {
        policy: PolicyRef,
        policy_name: String,
        rule: Rule,
        tags: Vec<String>,
    },
    UpdateRule {
        policy_id: String,
        rule_id: String,
        policy_name: String,
        rule: Rule,
    },
    DeleteRule {
        policy_id: String,
        rule_id: String,
        policy_name: String,
    },
    UpdatePolicy {
        policy: PolicyRef,
        name: String,
        position: Option<u32>,
        pool: Option<PoolRef>,
        admin_state_up: Option<bool>,
    },
    DeletePolicy {
        id: String,
        name: String,
    },
    SetDefaultPool {
        listener_id: String,
        pool: Option<PoolRef>,
    },
}

impl Write {
    /// Short kind label, for the write summary and metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            Write::CreatePool { .. } => "create_pool",
            Write::UpdatePool { .. } => "update_pool",
            Write::SetMembers { .. } => "batch_members",
            Write::DeletePool { .. } => "delete_pool",
            Write::CreateHealthMonitor { .. } => "create_healthmonitor",
            Write::UpdateHealthMonitor { .. } => "update_healthmonitor",
            Write::DeleteHealthMonitor { .. } => "delete_healthmonitor",
            Write::CreatePolicy { .. } => "create_policy",
            Write::CreateRule { .. } => "create_rule",
            Write::UpdateRule { .. } => "update_rule",
            Write::DeleteRule { .. } => "delete_rule",
            Write::UpdatePolicy { .. } => "update_policy",
            Write::DeletePolicy { .. } => "delete_policy",
            Write::SetDefaultPool { .. } => "set_default_pool",
        }
    }
}

impl std::fmt::Display for Write {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Write::CreatePool { name, lb_algorithm, .. } => write!(f, "create pool {name} ({lb_algorithm})"),
            Write::UpdatePool { name, lb_algorithm, .. } => {
                write!(f, "update pool {name}: lb_algorithm={lb_algorithm}")
            }
            Write::SetMembers { pool_name, members, .. } => {
                write!(f, "set members of pool {pool_name}: {} member(s)", members.len())
            }
            Write::DeletePool { name, .. } => write!(f, "delete pool {name}"),
            Write::CreateHealthMonitor { pool_name, spec, .. } => {
                write!(f, "create {} health monitor on pool {pool_name}", spec.monitor_type)
            }
            Write::UpdateHealthMonitor { pool_name, .. } => write!(f, "update health monitor of pool {pool_name}"),
            Write::DeleteHealthMonitor { pool_name, .. } => write!(f, "delete health monitor of pool {pool_name}"),
            Write::CreatePolicy { name, position, admin_state_up, .. } => write!(
                f,
                "create policy {name} at position {position}{}",
                if *admin_state_up { "" } else { " (disabled until its rules exist)" }
            ),
            Write::CreateRule { policy_name, rule, .. } => write!(
                f,
                "create rule on {policy_name}: {} {} {}",
                rule_type_str(rule.rule_type),
                compare_type_str(rule.compare_type),
                rule.value
            ),
            Write::UpdateRule { policy_name, rule, .. } => write!(
                f,
                "update rule on {policy_name}: {} {} {}",
                rule_type_str(rule.rule_type),
                compare_type_str(rule.compare_type),
                rule.value
            ),
            Write::DeleteRule { policy_name, rule_id, .. } => write!(f, "delete rule {rule_id} of {policy_name}"),
            Write::UpdatePolicy { name, position, pool, admin_state_up, .. } => {
                write!(f, "update policy {name}:")?;
                if let Some(p) = position {
                    write!(f, " position={p}")?;
                }
                if let Some(p) = pool {
                    write!(f, " pool={}", pool_ref_label(p))?;
                }
                if let Some(e) = admin_state_up {
                    write!(f, " enabled={e}")?;
                }
                Ok(())
            }
            Write::DeletePolicy { name, .. } => write!(f, "delete policy {name}"),
            Write::SetDefaultPool { pool, .. } => match pool {
                Some(p) => write!(f, "set listener default pool to {}", pool_ref_label(p)),
                None => write!(f, "clear listener default pool"),
            },
        }
    }
}

fn pool_ref_label(p: &PoolRef) -> &str {
    match p {
        PoolRef::Id(id) => id,
        PoolRef::New(name) => name,
    }
}

/// Something the plan could not do without touching a foreign object; reported, never forced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conflict {
    pub message: String,
}

/// The writes that converge the router, in the order they must run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WritePlan {
    pub writes: Vec<Write>,
    pub conflicts: Vec<Conflict>,
}

/// Options of the diff that come from configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct DiffOptions {
    pub ownership: Ownership,
    pub health_monitor: Option<HealthMonitorSpec>,
}

// ------------------------------------------------------------------ the diff

/// Plan the writes that make `actual` equal to `desired` (for everything we own).
pub fn plan_writes(desired: &DesiredRouter, actual: &ActualRouter, opts: &DiffOptions) -> WritePlan {
    let own = &opts.ownership;
    let mut plan = WritePlan::default();

    // Pools: match ours by name. A foreign pool with a name we want is a conflict: we never adopt
    // or modify it, and policies that need it are skipped. Two of ours with one name are the trace
    // of a create whose sender died before it saw the answer (or whose snapshot was taken before
    // the dying sender's create landed): one is kept, the others are deleted at the end.
    let ours_pools: BTreeMap<&str, &ActualPool> = kept_pools(actual, own);
    let ours_policies: BTreeMap<&str, &ActualPolicy> = kept_policies(actual, own);
    let foreign_pool_names: BTreeSet<&str> =
        actual.pools.iter().filter(|p| !own.owns(&p.tags)).map(|p| p.name.as_str()).collect();

    for p in actual.pools.iter().filter(|p| own.owns(&p.tags) && p.in_error) {
        plan.conflicts.push(Conflict {
            message: format!("pool {} ({}) is in ERROR: replaced by a new one and deleted", p.name, p.id),
        });
    }
    for p in actual.policies.iter().filter(|p| own.owns(&p.tags) && p.in_error) {
        plan.conflicts.push(Conflict {
            message: format!("L7 policy {} ({}) is in ERROR: replaced by a new one and deleted", p.name, p.id),
        });
    }
    for p in actual.pools.iter().filter(|p| own.owns(&p.tags) && !p.in_error) {
        for m in p.members.iter().filter(|m| own.owns(&m.tags) && m.in_error) {
            plan.conflicts.push(Conflict {
                message: format!(
                    "member {}:{} ({}) of pool {} is in ERROR: rewritten by a batch member update",
                    m.address, m.protocol_port, m.id, p.name
                ),
            });
        }
    }

    let mut pool_refs: BTreeMap<&str, PoolRef> = BTreeMap::new();
    for (name, pool) in &desired.pools {
        match ours_pools.get(name.as_str()) {
            Some(existing) => {
                pool_refs.insert(name, PoolRef::Id(existing.id.clone()));
                plan_existing_pool(pool, existing, opts, &mut plan.writes);
            }
            None if foreign_pool_names.contains(name.as_str()) => plan.conflicts.push(Conflict {
                message: format!(
                    "pool {name} exists on the router without our tags; it is left alone and routes to it are skipped"
                ),
            }),
            None => {
                pool_refs.insert(name, PoolRef::New(name.clone()));
                plan_new_pool(pool, opts, &mut plan.writes);
            }
        }
    }

    plan_policies(desired, actual, own, &ours_policies, &pool_refs, &mut plan);

    // Listener default pool: only on a listener we created.
    let want_default = desired.default_pool.as_deref().and_then(|n| pool_refs.get(n).cloned());
    let have_default = actual.listener.default_pool_id.clone();
    let differs = match (&want_default, &have_default) {
        (None, None) => false,
        (Some(PoolRef::Id(w)), Some(h)) => w != h,
        _ => true,
    };
    if differs {
        if own.owns(&actual.listener.tags) {
            // Clearing a default pool we do not own would modify a foreign choice: skip it.
            let clearing_foreign = want_default.is_none()
                && have_default
                    .as_ref()
                    .is_some_and(|id| !actual.pools.iter().any(|p| &p.id == id && own.owns(&p.tags)));
            if !clearing_foreign {
                plan.writes.push(Write::SetDefaultPool { listener_id: actual.listener.id.clone(), pool: want_default });
            }
        } else if desired.default_pool.is_some() {
            plan.conflicts.push(Conflict {
                message: format!(
                    "listener {} was not created by kuryr-l7-router; its default pool is not changed (Ingress defaultBackend ignored)",
                    actual.listener.id
                ),
            });
        }
    }

    // Deletes last: stale policies, then pools nothing references any more.
    let desired_policy_names: BTreeSet<&str> = desired.policies.iter().map(|p| p.name.as_str()).collect();
    let kept_policy_ids: BTreeSet<&str> = ours_policies.values().map(|p| p.id.as_str()).collect();
    for p in actual.policies.iter().filter(|p| own.owns(&p.tags)) {
        if !desired_policy_names.contains(p.name.as_str()) || !kept_policy_ids.contains(p.id.as_str()) {
            plan.writes.push(Write::DeletePolicy { id: p.id.clone(), name: p.name.clone() });
        }
    }
    let kept_pool_ids: BTreeSet<&str> = ours_pools.values().map(|p| p.id.as_str()).collect();
    for p in actual.pools.iter().filter(|p| own.owns(&p.tags)) {
        if !desired.pools.contains_key(&p.name) || !kept_pool_ids.contains(p.id.as_str()) {
            // A foreign policy or default pool still pointing at it makes Octavia refuse the
            // delete; report it instead of failing the whole plan.
            let used_by_foreign = actual
                .policies
                .iter()
                .any(|pol| !own.owns(&pol.tags) && pol.redirect_pool_id.as_deref() == Some(p.id.as_str()))
                || (!own.owns(&actual.listener.tags)
                    && actual.listener.default_pool_id.as_deref() == Some(p.id.as_str()));
            if used_by_foreign {
                plan.conflicts.push(Conflict {
                    message: format!("pool {} is no longer needed but a foreign object still uses it; kept", p.name),
                });
            } else {
                // Octavia deletes a pool's members and health monitor with the pool.
                plan.writes.push(Write::DeletePool { id: p.id.clone(), name: p.name.clone() });
            }
        }
    }
    plan
}

/// Our pools by name, one per name, none in ERROR (Octavia does not retry a failed object: ours
/// in ERROR are replaced by a new one, then deleted). Among duplicates the one that our policies and listener
/// already point at is kept (so no policy has to move), then the one with more members, then the
/// first listed.
fn kept_pools<'a>(actual: &'a ActualRouter, own: &Ownership) -> BTreeMap<&'a str, &'a ActualPool> {
    let uses = |p: &ActualPool| {
        actual.policies.iter().filter(|pol| pol.redirect_pool_id.as_deref() == Some(p.id.as_str())).count()
            + usize::from(actual.listener.default_pool_id.as_deref() == Some(p.id.as_str()))
    };
    let mut kept: BTreeMap<&str, &ActualPool> = BTreeMap::new();
    for p in actual.pools.iter().filter(|p| own.owns(&p.tags) && !p.in_error) {
        match kept.get(p.name.as_str()) {
            Some(k) if (uses(k), k.members.len()) >= (uses(p), p.members.len()) => {}
            _ => {
                kept.insert(p.name.as_str(), p);
            }
        }
    }
    kept
}

/// Our policies by name, one per name, none in ERROR: among duplicates the first in position order, the one
/// haproxy evaluates (the others never match anything it would not).
fn kept_policies<'a>(actual: &'a ActualRouter, own: &Ownership) -> BTreeMap<&'a str, &'a ActualPolicy> {
    let mut kept: BTreeMap<&str, &ActualPolicy> = BTreeMap::new();
    for p in actual.policies.iter().filter(|p| own.owns(&p.tags) && !p.in_error) {
        kept.entry(p.name.as_str()).or_insert(p);
    }
    kept
}

fn member_spec(m: &Member, tags: &[String]) -> MemberSpec {
    MemberSpec {
        name: member_name(m),
        address: m.address,
        protocol_port: m.protocol_port,
        weight: m.weight,
        backup: m.backup,
        admin_state_up: true,
        tags: tags.to_vec(),
    }
}

/// Members are named after the pod they reach when known, else after address:port.
fn member_name(m: &Member) -> String {
    m.target.clone().unwrap_or_else(|| format!("{}:{}", m.address, m.protocol_port))
}

fn plan_new_pool(pool: &Pool, opts: &DiffOptions, writes: &mut Vec<Write>) {
    let tags = opts.ownership.tags_for(&pool.service);
    writes.push(Write::CreatePool {
        name: pool.name.clone(),
        lb_algorithm: pool.lb_algorithm.clone(),
        tags: tags.clone(),
    });
    if !pool.members.is_empty() {
        writes.push(Write::SetMembers {
            pool: PoolRef::New(pool.name.clone()),
            pool_name: pool.name.clone(),
            members: pool.members.iter().map(|m| member_spec(m, &tags)).collect(),
        });
    }
    if let Some(spec) = &opts.health_monitor {
        writes.push(Write::CreateHealthMonitor {
            pool: PoolRef::New(pool.name.clone()),
            pool_name: pool.name.clone(),
            spec: spec.clone(),
            tags,
        });
    }
}

fn plan_existing_pool(pool: &Pool, actual: &ActualPool, opts: &DiffOptions, writes: &mut Vec<Write>) {
    let own = &opts.ownership;
    let tags = own.tags_for(&pool.service);
    if actual.lb_algorithm != pool.lb_algorithm {
        writes.push(Write::UpdatePool {
            id: actual.id.clone(),
            name: pool.name.clone(),
            lb_algorithm: pool.lb_algorithm.clone(),
        });
    }

    // Members: compare ours by (address, port) on weight and backup; foreign ones are carried
    // over as they are.
    let have: BTreeMap<(IpAddr, u16), &ActualMember> =
        actual.members.iter().filter(|m| own.owns(&m.tags)).map(|m| ((m.address, m.protocol_port), m)).collect();
    let foreign: Vec<&ActualMember> = actual.members.iter().filter(|m| !own.owns(&m.tags)).collect();
    let foreign_keys: BTreeSet<(IpAddr, u16)> = foreign.iter().map(|m| (m.address, m.protocol_port)).collect();
    // A desired endpoint that a foreign member already serves is left to that member: the batch
    // PUT matches on (address, port) and would otherwise take it over.
    let want: Vec<&Member> =
        pool.members.iter().filter(|m| !foreign_keys.contains(&(m.address, m.protocol_port))).collect();
    let same = want.len() == have.len()
        && want.iter().all(|m| {
            have.get(&(m.address, m.protocol_port))
                .is_some_and(|a| a.weight == m.weight && a.backup == m.backup && a.admin_state_up && !a.in_error)
        });
    if !same {
        let mut members: Vec<MemberSpec> = want.iter().map(|m| member_spec(m, &tags)).collect();
        members.extend(foreign.iter().map(|m| MemberSpec {
            name: m.name.clone(),
            address: m.address,
            protocol_port: m.protocol_port,
            weight: m.weight,
            backup: m.backup,
            admin_state_up: m.admin_state_up,
            tags: m.tags.clone(),
        }));
        writes.push(Write::SetMembers { pool: PoolRef::Id(actual.id.clone()), pool_name: pool.name.clone(), members });
    }

    match (&opts.health_monitor, &actual.healthmonitor) {
        (Some(spec), None) => writes.push(Write::CreateHealthMonitor {
            pool: PoolRef::Id(actual.id.clone()),
            pool_name: pool.name.clone(),
            spec: spec.clone(),
            tags,
        }),
        (Some(spec), Some(hm)) if own.owns(&hm.tags) && hm.spec != *spec => writes.push(Write::UpdateHealthMonitor {
            id: hm.id.clone(),
            pool_name: pool.name.clone(),
            spec: spec.clone(),
        }),
        (None, Some(hm)) if own.owns(&hm.tags) => {
            writes.push(Write::DeleteHealthMonitor { id: hm.id.clone(), pool_name: pool.name.clone() })
        }
        _ => {}
    }
}

fn rule_matches(want: &Rule, have: &ActualRule) -> bool {
    have.rule_type == rule_type_str(want.rule_type)
        && have.compare_type == compare_type_str(want.compare_type)
        && have.value == want.value
        && have.invert == want.invert
        && have.key.is_none()
}

/// Policies: creates, rule fixes, backend changes and moves, in desired position order.
///
/// Positions: our policies take positions 1..n in desired order and foreign ones follow (Octavia
/// renumbers on insert). Walking the desired list and fixing each slot against a simulation of
/// Octavia's list means an inserted route costs one write (the create at its slot) and a deleted
/// one costs nothing but its delete: everything after it shifts by itself. Our stale policies
/// (deleted at the end of the plan) do not take a slot: where one sits between two kept ones, the
/// kept ones are already in order and need no move.
fn plan_policies(
    desired: &DesiredRouter,
    actual: &ActualRouter,
    own: &Ownership,
    ours: &BTreeMap<&str, &ActualPolicy>,
    pool_refs: &BTreeMap<&str, PoolRef>,
    plan: &mut WritePlan,
) {
    // The listener's policies in position order, by name for ours and id for foreign ones (and
    // for our duplicates, which are deleted at the end like stale ones). The walk below keeps a
    // cursor on the first of them not yet placed: everything before it is placed (our desired
    // policies, in order) or stale (ours, deleted at the end). One pass, with a map from key to
    // index, so planning stays linear in the number of policies.
    let keys: Vec<String> = actual
        .policies
        .iter()
        .map(|p| match ours.get(p.name.as_str()) {
            Some(kept) if own.owns(&p.tags) && kept.id == p.id => format!("ours:{}", p.name),
            _ if own.owns(&p.tags) => format!("duplicate:{}", p.id),
            _ => format!("foreign:{}", p.id),
        })
        .collect();
    let index_of: std::collections::HashMap<&str, usize> =
        keys.iter().enumerate().map(|(i, k)| (k.as_str(), i)).collect();
    let wanted: std::collections::HashSet<String> =
        desired.policies.iter().map(|p| format!("ours:{}", p.name)).collect();
    let stale = |k: &String| (k.starts_with("ours:") && !wanted.contains(k)) || k.starts_with("duplicate:");
    let mut moved = vec![false; keys.len()];
    let mut cursor = 0usize;
    let mut stale_before = 0usize;
    let mut placed = 0usize;

    for want in &desired.policies {
        let Some(pool) = pool_refs.get(want.pool.as_str()) else {
            // Pool is foreign (conflict reported above) or missing from the desired pools.
            continue;
        };
        while cursor < keys.len() && (moved[cursor] || stale(&keys[cursor])) {
            if !moved[cursor] {
                stale_before += 1;
            }
            cursor += 1;
        }
        let position = (placed + stale_before + 1) as u32;
        let tags = own.tags_for(&want.owner);
        match ours.get(want.name.as_str()) {
            None => {
                let multi = want.rules.len() > 1;
                plan.writes.push(Write::CreatePolicy {
                    name: want.name.clone(),
                    position,
                    pool: pool.clone(),
                    admin_state_up: !multi,
                    description: want.description.clone(),
                    tags: tags.clone(),
                });
                for rule in &want.rules {
                    plan.writes.push(Write::CreateRule {
                        policy: PolicyRef::New(want.name.clone()),
                        policy_name: want.name.clone(),
                        rule: rule.clone(),
                        tags: tags.clone(),
                    });
                }
                if multi {
                    plan.writes.push(Write::UpdatePolicy {
                        policy: PolicyRef::New(want.name.clone()),
                        name: want.name.clone(),
                        position: None,
                        pool: None,
                        admin_state_up: Some(true),
                    });
                }
            }
            Some(have) => {
                plan_rules(want, have, &tags, &mut plan.writes);
                // Not placed yet, so at or after the cursor.
                let current = index_of[format!("ours:{}", want.name).as_str()];
                let in_place = current == cursor;
                if in_place {
                    cursor += 1;
                } else {
                    moved[current] = true;
                }
                let move_to = (!in_place).then_some(position);
                let pool_change = match pool {
                    PoolRef::Id(id) => have.redirect_pool_id.as_deref() != Some(id.as_str()),
                    PoolRef::New(_) => true,
                }
                .then(|| pool.clone());
                let enable = (!have.admin_state_up).then_some(true);
                if move_to.is_some() || pool_change.is_some() || enable.is_some() {
                    plan.writes.push(Write::UpdatePolicy {
                        policy: PolicyRef::Id(have.id.clone()),
                        name: want.name.clone(),
                        position: move_to,
                        pool: pool_change,
                        admin_state_up: enable,
                    });
                }
            }
        }
        placed += 1;
    }
}

/// Rules of an existing policy: a changed value is an in-place update (atomic for haproxy), so
/// the policy never matches more than it should in between.
fn plan_rules(want: &crate::model::Policy, have: &ActualPolicy, tags: &[String], writes: &mut Vec<Write>) {
    // Each wanted rule consumes one matching rule, so a rule present twice (a create retried by
    // a restarted run) leaves its copy unmatched and deleted.
    let mut unmatched_have: Vec<&ActualRule> = have.rules.iter().collect();
    let mut missing: Vec<&Rule> = Vec::new();
    for w in &want.rules {
        match unmatched_have.iter().position(|h| rule_matches(w, h)) {
            Some(i) => {
                unmatched_have.remove(i);
            }
            None => missing.push(w),
        }
    }
    for rule in missing {
        // Prefer updating a leftover rule of the same type in place.
        if let Some(i) = unmatched_have.iter().position(|h| h.rule_type == rule_type_str(rule.rule_type)) {
            let h = unmatched_have.remove(i);
            writes.push(Write::UpdateRule {
                policy_id: have.id.clone(),
                rule_id: h.id.clone(),
                policy_name: want.name.clone(),
                rule: rule.clone(),
            });
        } else {
            writes.push(Write::CreateRule {
                policy: PolicyRef::Id(have.id.clone()),
                policy_name: want.name.clone(),
                rule: rule.clone(),
                tags: tags.to_vec(),
            });
        }
    }
    for h in unmatched_have {
        writes.push(Write::DeleteRule {
            policy_id: have.id.clone(),
            rule_id: h.id.clone(),
            policy_name: want.name.clone(),
        });
    }
}
