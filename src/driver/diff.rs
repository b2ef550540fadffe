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

use super::actual::{ActualMember, ActualPolicy, ActualPool, ActualRouter, ActualRule};
use super::object_id::ObjectId;
use super::ownership::is_route_owner_tag;
use super::ownership::{Ownership, Tags, owner_tag};
use super::plan::{
    Conflict, DiffOptions, MemberSpec, PolicyAction, PolicyRef, PoolRef, PrefixRedirect, UrlRedirect, Write, WritePlan,
    compare_type_str, member_spec, rule_type_str,
};
use super::view::DesiredView;
use crate::model::{DesiredRouter, HealthMonitorSpec, KubeRef, Member, Policy, Pool, Redirect, RedirectTarget, Rule};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::net::IpAddr;

// ------------------------------------------------------------------ the diff

/// Plan the writes that make `actual` equal to `desired` (for everything we own).
pub fn plan_writes(desired: &DesiredRouter, actual: &ActualRouter, opts: &DiffOptions) -> WritePlan {
    plan_view(&DesiredView::of(desired), actual, opts)
}

/// [`plan_writes`] from a view of one listener's desired state (see `view`).
pub fn plan_view(desired: &DesiredView<'_>, actual: &ActualRouter, opts: &DiffOptions) -> WritePlan {
    let own = &opts.ownership;
    let mut plan = WritePlan::default();

    // Pools: match ours by name. A foreign pool with a name we want is a conflict: we never adopt
    // or modify it, and policies that need it are skipped. Two of ours with one name are the trace
    // of a create whose sender died before it saw the answer (or whose snapshot was taken before
    // the dying sender's create landed): one is kept, the others are deleted at the end.
    // The policies of Ingresses that route nothing any more (deleted, or all their routes gone)
    // are deleted FIRST: nothing replaces them, so no traffic gap, and on a router at its quota
    // they make room for the creates (a full router never deadlocks: deleting an Ingress always
    // works). The others' stale policies stay last (create before delete).
    let (removed, policies) = removal_only(desired, &actual.policies, own);
    let policies: &[&ActualPolicy] = &policies;
    plan.writes.extend(removed.iter().map(|p| Write::DeletePolicy { id: p.id.to_string(), name: p.name.clone() }));
    let ours_pools: HashMap<&str, &ActualPool> = kept_pools(actual, own);
    let ours_policies: HashMap<&str, &ActualPolicy> = kept_policies(policies, own);
    let foreign_pool_names: HashSet<&str> =
        actual.pools.iter().filter(|p| !own.owns(&p.tags)).map(|p| p.name.as_str()).collect();

    report_objects_in_error(actual, own, &mut plan);

    let mut pool_refs: HashMap<&str, PoolAt<'_>> = HashMap::with_capacity(actual.pools.len());
    for (name, pool) in desired.pools() {
        match ours_pools.get(name) {
            Some(existing) => {
                pool_refs.insert(name, PoolAt::Id(&existing.id));
                plan_existing_pool(pool, existing, opts, &mut plan.writes);
                plan.writes.extend(super::health_monitor::plan(desired.health_monitors, pool, existing, opts));
            }
            None if foreign_pool_names.contains(name) => plan.conflicts.push(Conflict {
                message: format!(
                    "pool {name} exists on the router without our tags; it is left alone and routes to it are skipped"
                ),
            }),
            None => {
                pool_refs.insert(name, PoolAt::New(name));
                let monitor = super::health_monitor::wanted(desired.health_monitors, name, None, opts);
                plan_new_pool(pool, monitor, opts, &mut plan.writes);
            }
        }
    }

    // Routes, then redirects: haproxy runs every redirect before any route whatever the order, so
    // redirects go last, where adding or removing one moves no route.
    let wanted = Wanted::all(desired);
    plan_listener_policies(&wanted, policies, own, &ours_policies, &pool_refs, &mut plan);

    plan_default_pool(desired.default_pool, actual, own, &pool_refs, &mut plan);

    // Deletes last: stale policies, then pools nothing references any more.
    plan_deletes(desired, &wanted, actual, policies, own, &ours_policies, &ours_pools, &mut plan);
    // Pushed one by one: a cold plan of 80,000 writes kept up to as many spare slots (168 bytes
    // each) while it was executed.
    plan.writes.shrink_to_fit();
    plan
}

/// Our policies whose owner route (Ingress or HTTPRoute) has no policy in `desired` any more (split off the rest,
/// which keep their order): see [`plan_writes`]. A policy without an owner tag stays with the rest.
fn removal_only<'a>(
    desired: &DesiredView<'_>,
    actual: &'a [ActualPolicy],
    own: &Ownership,
) -> (Vec<&'a ActualPolicy>, Vec<&'a ActualPolicy>) {
    // Hashed, and one tag per run of policies of one owner (a route's policies are adjacent):
    // a sorted set of one formatted tag per policy was a tenth of a 10k-Ingress resync.
    let mut live: HashSet<String> = HashSet::with_capacity(desired.policies.len());
    let owners = desired.policies.iter().map(|p| &p.owner).chain(desired.redirects.iter().map(|r| &r.owner));
    let mut last: Option<&KubeRef> = None;
    for owner in owners {
        if last != Some(owner) {
            live.insert(owner_tag(owner));
            last = Some(owner);
        }
    }
    // References, not copies: every policy of the router with its rules was cloned here on
    // every plan.
    actual.iter().partition(|p| {
        own.owns(&p.tags) && p.tags.iter().any(|t| is_route_owner_tag(t)) && !p.tags.iter().any(|t| live.contains(t))
    })
}

/// Our objects in ERROR, reported: Octavia does not retry a failed object, so the plan replaces
/// (pools, policies) or rewrites (members) them.
fn report_objects_in_error(actual: &ActualRouter, own: &Ownership, plan: &mut WritePlan) {
    // The flag first: ownership compares tags, and most objects are not in ERROR.
    for p in actual.pools.iter().filter(|p| p.in_error && own.owns(&p.tags)) {
        plan.conflicts.push(Conflict {
            message: format!("pool {} ({}) is in ERROR: replaced by a new one and deleted", p.name, p.id),
        });
    }
    for p in actual.policies.iter().filter(|p| p.in_error && own.owns(&p.tags)) {
        plan.conflicts.push(Conflict {
            message: format!("L7 policy {} ({}) is in ERROR: replaced by a new one and deleted", p.name, p.id),
        });
    }
    for p in actual.pools.iter().filter(|p| own.owns(&p.tags) && !p.in_error) {
        for m in p.members.iter().filter(|m| m.in_error && own.owns(&m.tags)) {
            plan.conflicts.push(Conflict {
                message: format!(
                    "member {}:{} ({}) of pool {} is in ERROR: rewritten by a batch member update",
                    m.address, m.protocol_port, m.id, p.name
                ),
            });
        }
    }
}

/// The listener's default pool (`default_pool`: the desired pool's name), changed only on a
/// listener we created.
fn plan_default_pool(
    default_pool: Option<&str>,
    actual: &ActualRouter,
    own: &Ownership,
    pool_refs: &HashMap<&str, PoolAt<'_>>,
    plan: &mut WritePlan,
) {
    let want_default = default_pool.and_then(|n| pool_refs.get(n).map(|p| p.to_ref()));
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
                    .is_some_and(|id| !actual.pools.iter().any(|p| p.id == id.as_str() && own.owns(&p.tags)));
            if !clearing_foreign {
                plan.writes.push(Write::SetDefaultPool { listener_id: actual.listener.id.clone(), pool: want_default });
            }
        } else if default_pool.is_some() {
            plan.conflicts.push(Conflict {
                message: format!(
                    "listener {} was not created by kuryr-l7-router; its default pool is not changed (Ingress defaultBackend ignored)",
                    actual.listener.id
                ),
            });
        }
    }
}

/// The deletes, planned last: our policies no longer desired (or duplicates), then our pools
/// nothing references any more (or duplicates, or in ERROR).
#[allow(clippy::too_many_arguments)]
fn plan_deletes(
    desired: &DesiredView<'_>,
    wanted: &[Wanted<'_>],
    actual: &ActualRouter,
    policies: &[&ActualPolicy],
    own: &Ownership,
    ours_policies: &HashMap<&str, &ActualPolicy>,
    ours_pools: &HashMap<&str, &ActualPool>,
    plan: &mut WritePlan,
) {
    let desired_policy_names: HashSet<&str> = wanted.iter().map(|w| w.name).collect();
    let kept_policy_ids: HashSet<&ObjectId> = ours_policies.values().map(|p| &p.id).collect();
    for p in policies.iter().filter(|p| own.owns(&p.tags)) {
        if !desired_policy_names.contains(p.name.as_str()) || !kept_policy_ids.contains(&p.id) {
            plan.writes.push(Write::DeletePolicy { id: p.id.to_string(), name: p.name.clone() });
        }
    }
    let kept_pool_ids: HashSet<&ObjectId> = ours_pools.values().map(|p| &p.id).collect();
    for p in actual.pools.iter().filter(|p| own.owns(&p.tags)) {
        if !desired.has_pool(&p.name) || !kept_pool_ids.contains(&p.id) {
            // A foreign policy or default pool still pointing at it makes Octavia refuse the
            // delete; report it instead of failing the whole plan.
            let used_by_foreign =
                actual.policies.iter().any(|pol| !own.owns(&pol.tags) && pol.redirect_pool_id.as_ref() == Some(&p.id))
                    || (!own.owns(&actual.listener.tags)
                        && actual.listener.default_pool_id.as_deref().is_some_and(|d| p.id == d));
            if used_by_foreign {
                plan.conflicts.push(Conflict {
                    message: format!("pool {} is no longer needed but a foreign object still uses it; kept", p.name),
                });
            } else {
                // Octavia deletes a pool's members and health monitor with the pool.
                plan.writes.push(Write::DeletePool { id: p.id.to_string(), name: p.name.clone() });
            }
        }
    }
}

/// Our pools by name, one per name, none in ERROR (Octavia does not retry a failed object: ours
/// in ERROR are replaced by a new one, then deleted). Among duplicates the one that our policies and listener
/// already point at is kept (so no policy has to move), then the one with more members, then the
/// first listed.
fn kept_pools<'a>(actual: &'a ActualRouter, own: &Ownership) -> HashMap<&'a str, &'a ActualPool> {
    let uses = |p: &ActualPool| {
        actual.policies.iter().filter(|pol| pol.redirect_pool_id.as_ref() == Some(&p.id)).count()
            + usize::from(actual.listener.default_pool_id.as_deref().is_some_and(|d| p.id == d))
    };
    let mut kept: HashMap<&str, &ActualPool> = HashMap::with_capacity(actual.pools.len());
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
fn kept_policies<'a>(policies: &[&'a ActualPolicy], own: &Ownership) -> HashMap<&'a str, &'a ActualPolicy> {
    let mut kept: HashMap<&str, &ActualPolicy> = HashMap::with_capacity(policies.len());
    for &p in policies.iter().filter(|p| own.owns(&p.tags) && !p.in_error) {
        kept.entry(p.name.as_str()).or_insert(p);
    }
    kept
}

fn plan_new_pool(pool: &Pool, hm: Option<HealthMonitorSpec>, opts: &DiffOptions, writes: &mut Vec<Write>) {
    // One copy of the tags for the pool, its members and its monitor (shared, not one per write).
    let tags = Tags::from(opts.ownership.tags_for(&pool.service));
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
    if let Some(spec) = hm {
        writes.push(Write::CreateHealthMonitor {
            pool: PoolRef::New(pool.name.clone()),
            pool_name: pool.name.clone(),
            spec: spec.clone(),
            tags,
        });
    }
}

fn plan_existing_pool(pool: &Pool, actual: &ActualPool, opts: &DiffOptions, writes: &mut Vec<Write>) {
    if actual.lb_algorithm != pool.lb_algorithm {
        writes.push(Write::UpdatePool {
            id: actual.id.to_string(),
            name: pool.name.clone(),
            lb_algorithm: pool.lb_algorithm.clone(),
        });
    }

    writes.extend(plan_members(pool, actual, opts));
}

/// The batch member update that makes `actual`'s members equal to `pool.members`, or `None` when
/// they already are: ours compared by (address, port) on weight and backup, foreign ones carried
/// over as they are. Only the members: the algorithm and the health monitor are Sync's business
/// (see [`plan_writes`]), so the Members path and a full Sync always agree on the members.
pub fn plan_members(pool: &Pool, actual: &ActualPool, opts: &DiffOptions) -> Option<Write> {
    let own = &opts.ownership;
    if members_as_wanted(pool, actual, own) {
        return None;
    }
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
            have.get(&(m.address, m.protocol_port)).is_some_and(|a| {
                a.weight == m.weight
                    && a.backup == m.backup
                    && a.monitor_port == m.monitor_port
                    && a.admin_state_up
                    && !a.in_error
            })
        });
    if same {
        return None;
    }
    // Made only for a write: a resync of an unchanged router plans every pool.
    let tags = Tags::from(own.tags_for(&pool.service));
    let mut members: Vec<MemberSpec> = want.iter().map(|m| member_spec(m, &tags)).collect();
    members.extend(foreign.iter().map(|m| MemberSpec {
        name: m.name.clone(),
        address: m.address,
        protocol_port: m.protocol_port,
        weight: m.weight,
        backup: m.backup,
        admin_state_up: m.admin_state_up,
        monitor_port: m.monitor_port,
        tags: m.tags.clone(),
    }));
    Some(Write::SetMembers { pool: PoolRef::Id(actual.id.to_string()), pool_name: pool.name.clone(), members })
}

/// The members of `actual` are ours and, in order, the wanted ones (sorted by distinct
/// (address, port), as the translation makes them) with their weight, backup and monitor port,
/// enabled and not in ERROR: what [`plan_members`] would find equal, told without its maps (a
/// resync of an unchanged router asks it of every pool). `false` says nothing: the full
/// comparison decides.
fn members_as_wanted(pool: &Pool, actual: &ActualPool, own: &Ownership) -> bool {
    if pool.members.len() != actual.members.len() {
        return false;
    }
    // A pool's members share one copy of their tags (`share_tags`): asked once per copy.
    let mut ours_tags: Option<&Tags> = None;
    for (i, (m, a)) in pool.members.iter().zip(actual.members.iter()).enumerate() {
        let key = (m.address, m.protocol_port);
        let sorted = i.checked_sub(1).is_none_or(|p| (pool.members[p].address, pool.members[p].protocol_port) < key);
        let same = (a.address, a.protocol_port) == key
            && a.weight == m.weight
            && a.backup == m.backup
            && a.monitor_port == m.monitor_port
            && a.admin_state_up
            && !a.in_error;
        if !sorted || !same {
            return false;
        }
        if !ours_tags.is_some_and(|t| std::sync::Arc::ptr_eq(t, &a.tags)) {
            if !own.owns(&a.tags) {
                return false;
            }
            ours_tags = Some(&a.tags);
        }
    }
    true
}

fn rule_matches(want: &Rule, have: &ActualRule) -> bool {
    have.rule_type == rule_type_str(want.rule_type)
        && have.compare_type == compare_type_str(want.compare_type)
        && have.value == want.value
        && have.invert == want.invert
        && have.key == want.key
}

/// One listener's policies (`actual`: as read, in position order; `ours`: our kept ones by name,
/// see `kept_policies`): creates, rule fixes, backend changes and moves, in desired position order.
///
/// Positions: our policies take positions 1..n in desired order and foreign ones follow (Octavia
/// renumbers on insert). Walking the desired list and fixing each slot against a simulation of
/// Octavia's list means an inserted route costs one write (the create at its slot) and a deleted
/// one costs nothing but its delete: everything after it shifts by itself. Our stale policies
/// (deleted at the end of the plan) do not take a slot: where one sits between two kept ones, the
/// kept ones are already in order and need no move.
fn plan_listener_policies(
    desired: &[Wanted<'_>],
    actual: &[&ActualPolicy],
    own: &Ownership,
    ours: &HashMap<&str, &ActualPolicy>,
    pool_refs: &HashMap<&str, PoolAt<'_>>,
    plan: &mut WritePlan,
) {
    // The listener's policies in position order, by name for ours and id for foreign ones (and
    // for our duplicates, which are deleted at the end like stale ones). The walk below keeps a
    // cursor on the first of them not yet placed: everything before it is placed (our desired
    // policies, in order) or stale (ours, deleted at the end). One pass, with a map from key to
    // index, so planning stays linear in the number of policies.
    // Borrowed keys, not formatted ones: this runs for every policy on every resync.
    let keys: Vec<Slot<'_>> = actual
        .iter()
        .map(|p| match ours.get(p.name.as_str()) {
            Some(kept) if own.owns(&p.tags) && kept.id == p.id => Slot::Ours(p.name.as_str()),
            _ if own.owns(&p.tags) => Slot::Duplicate,
            _ => Slot::Foreign,
        })
        .collect();
    let index_of: std::collections::HashMap<&str, usize> = keys
        .iter()
        .enumerate()
        .filter_map(|(i, k)| match k {
            Slot::Ours(name) => Some((*name, i)),
            _ => None,
        })
        .collect();
    let wanted: std::collections::HashSet<&str> = desired.iter().map(|p| p.name).collect();
    let stale = |k: &Slot<'_>| match k {
        Slot::Ours(name) => !wanted.contains(name),
        Slot::Duplicate => true,
        Slot::Foreign => false,
    };
    let mut moved = vec![false; keys.len()];
    let mut cursor = 0usize;
    let mut stale_before = 0usize;
    let mut placed = 0usize;

    for want in desired {
        // Borrowed: copied only into a write (a resync of an unchanged router writes none).
        let action = match &want.target {
            WantedTarget::Pool(name) => match pool_refs.get(name) {
                Some(pool) => ActionAt::Pool(*pool),
                // Pool is foreign (conflict reported above) or missing from the desired pools.
                None => continue,
            },
            WantedTarget::Redirect(r) => ActionAt::Redirect(r),
            WantedTarget::RedirectUrl(r) => ActionAt::RedirectUrl(r),
        };
        while cursor < keys.len() && (moved[cursor] || stale(&keys[cursor])) {
            if !moved[cursor] {
                stale_before += 1;
            }
            cursor += 1;
        }
        let position = (placed + stale_before + 1) as u32;
        // Made only for a create: a resync of an unchanged router plans every policy.
        let tags = || Tags::from(own.tags_for(want.owner));
        match ours.get(want.name) {
            None => plan_new_policy(want, position, action.to_action(), &tags(), &mut plan.writes),
            Some(have) => {
                plan_rules(want, have, &tags, &mut plan.writes);
                // Not placed yet, so at or after the cursor.
                let current = index_of[want.name];
                let in_place = current == cursor;
                if in_place {
                    cursor += 1;
                } else {
                    moved[current] = true;
                }
                let move_to = (!in_place).then_some(position);
                let (pool, redirect, redirect_url) = action_change(action, have);
                let enable = (!have.admin_state_up).then_some(true);
                if move_to.is_some()
                    || pool.is_some()
                    || redirect.is_some()
                    || redirect_url.is_some()
                    || enable.is_some()
                {
                    plan.writes.push(Write::UpdatePolicy {
                        policy: PolicyRef::Id(have.id.to_string()),
                        name: want.name.to_string(),
                        position: move_to,
                        pool,
                        redirect,
                        redirect_url,
                        admin_state_up: enable,
                    });
                }
            }
        }
        placed += 1;
    }
}

/// A new policy at `position`: created, then its rules; created disabled and enabled after its
/// last rule when it has several (see the module docs).
fn plan_new_policy(want: &Wanted<'_>, position: u32, action: PolicyAction, tags: &Tags, writes: &mut Vec<Write>) {
    let multi = want.rules.len() > 1;
    writes.push(Write::CreatePolicy {
        name: want.name.to_string(),
        position,
        action,
        admin_state_up: !multi,
        description: want.description.to_string(),
        tags: tags.clone(),
    });
    for rule in want.rules {
        writes.push(Write::CreateRule {
            policy: PolicyRef::New(want.name.to_string()),
            policy_name: want.name.to_string(),
            rule: rule.clone(),
            tags: tags.clone(),
        });
    }
    if multi {
        writes.push(Write::UpdatePolicy {
            policy: PolicyRef::New(want.name.to_string()),
            name: want.name.to_string(),
            position: None,
            pool: None,
            redirect: None,
            redirect_url: None,
            admin_state_up: Some(true),
        });
    }
}

/// The change an existing policy's action needs.
type ActionChange = (Option<PoolRef>, Option<PrefixRedirect>, Option<UrlRedirect>);

/// What an existing policy's action needs: (new pool, new redirect prefix, new redirect URL),
/// each None when unchanged.
fn action_change(action: ActionAt<'_>, have: &ActualPolicy) -> ActionChange {
    match action {
        ActionAt::Pool(pool) => {
            let differs = match pool {
                // Ids compare as their text does (a canonical UUID is always held as one).
                PoolAt::Id(id) => have.redirect_pool_id.as_ref().is_none_or(|h| h != id),
                PoolAt::New(_) => true,
            };
            // A redirect turned back into a route: the same policy, its action switched.
            ((differs || have.action != "REDIRECT_TO_POOL").then(|| pool.to_ref()), None, None)
        }
        ActionAt::Redirect(r) => {
            let differs = have.action != "REDIRECT_PREFIX"
                || have.redirect_prefix.as_deref() != Some(r.prefix.as_str())
                || have.redirect_http_code != Some(r.code);
            (None, differs.then(|| r.clone()), None)
        }
        ActionAt::RedirectUrl(r) => {
            let differs = have.action != "REDIRECT_TO_URL"
                || have.redirect_url.as_deref() != Some(r.url.as_str())
                || have.redirect_http_code != Some(r.code);
            (None, None, differs.then(|| r.clone()))
        }
    }
}

/// A pool a policy routes to, borrowed from the plan's inputs: an existing pool by its id, or
/// a pool this plan creates, by name. Made a [`PoolRef`] only for a write.
#[derive(Clone, Copy)]
enum PoolAt<'a> {
    Id(&'a ObjectId),
    New(&'a str),
}

impl PoolAt<'_> {
    fn to_ref(self) -> PoolRef {
        match self {
            PoolAt::Id(id) => PoolRef::Id(id.to_string()),
            PoolAt::New(name) => PoolRef::New(name.to_string()),
        }
    }
}

/// A policy's action, borrowed (see [`PoolAt`]).
#[derive(Clone, Copy)]
enum ActionAt<'a> {
    Pool(PoolAt<'a>),
    Redirect(&'a PrefixRedirect),
    RedirectUrl(&'a UrlRedirect),
}

impl ActionAt<'_> {
    fn to_action(self) -> PolicyAction {
        match self {
            ActionAt::Pool(pool) => PolicyAction::Pool(pool.to_ref()),
            ActionAt::Redirect(r) => PolicyAction::Redirect(r.clone()),
            ActionAt::RedirectUrl(r) => PolicyAction::RedirectUrl(r.clone()),
        }
    }
}

/// One policy wanted on a listener: a route to a pool or redirecting, or an HTTP→HTTPS redirect.
struct Wanted<'a> {
    name: &'a str,
    rules: &'a [Rule],
    owner: &'a KubeRef,
    /// Borrowed for a route: only a create sends it.
    description: std::borrow::Cow<'a, str>,
    target: WantedTarget<'a>,
}

/// A policy of the listener as the walk of [`plan_listener_policies`] sees it.
enum Slot<'a> {
    /// Ours and kept, by name.
    Ours(&'a str),
    /// Ours, but a second one of its name (deleted at the end, like a stale one).
    Duplicate,
    /// Not ours: keeps its place.
    Foreign,
}

enum WantedTarget<'a> {
    /// A pool of the desired router, by name.
    Pool(&'a str),
    Redirect(PrefixRedirect),
    RedirectUrl(UrlRedirect),
}

impl<'a> Wanted<'a> {
    /// The routes in position order, then the redirects.
    fn all(desired: &DesiredView<'a>) -> Vec<Self> {
        let routes = desired.policies.iter().map(|p| Self::route(p));
        routes.chain(desired.redirects.iter().map(|r| Self::redirect(r))).collect()
    }

    fn route(p: &'a Policy) -> Self {
        Self {
            name: &p.name,
            rules: &p.rules,
            owner: &p.owner,
            description: std::borrow::Cow::Borrowed(&p.description),
            target: match &p.redirect {
                None => WantedTarget::Pool(&p.pool),
                Some(r) => match &r.target {
                    RedirectTarget::Prefix(prefix) => {
                        WantedTarget::Redirect(PrefixRedirect { prefix: prefix.clone(), code: r.code })
                    }
                    RedirectTarget::Url(url) => {
                        WantedTarget::RedirectUrl(UrlRedirect { url: url.clone(), code: r.code })
                    }
                },
            },
        }
    }

    fn redirect(r: &'a Redirect) -> Self {
        Self {
            name: &r.name,
            rules: &r.rules,
            owner: &r.owner,
            description: format!("{} redirect to HTTPS", r.host).into(),
            target: WantedTarget::Redirect(PrefixRedirect { prefix: r.prefix.clone(), code: r.code }),
        }
    }
}

/// Rules of an existing policy: a changed value is an in-place update (atomic for haproxy), so
/// the policy never matches more than it should in between.
fn plan_rules(want: &Wanted<'_>, have: &ActualPolicy, tags: &dyn Fn() -> Tags, writes: &mut Vec<Write>) {
    // The rules as wanted, one for one and in order (an unchanged policy): nothing to write, as
    // the matching below would find (matching is equality), without its vectors.
    if want.rules.len() == have.rules.len() && want.rules.iter().zip(have.rules.iter()).all(|(w, h)| rule_matches(w, h))
    {
        return;
    }
    // Each wanted rule consumes one matching rule, so a rule present twice (a create retried by
    // a restarted run) leaves its copy unmatched and deleted.
    let mut unmatched_have: Vec<&ActualRule> = have.rules.iter().collect();
    let mut missing: Vec<&Rule> = Vec::new();
    for w in want.rules {
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
                policy_id: have.id.to_string(),
                rule_id: h.id.to_string(),
                policy_name: want.name.to_string(),
                rule: rule.clone(),
            });
        } else {
            writes.push(Write::CreateRule {
                policy: PolicyRef::Id(have.id.to_string()),
                policy_name: want.name.to_string(),
                rule: rule.clone(),
                tags: tags(),
            });
        }
    }
    for h in unmatched_have {
        writes.push(Write::DeleteRule {
            policy_id: have.id.to_string(),
            rule_id: h.id.to_string(),
            policy_name: want.name.to_string(),
        });
    }
}
