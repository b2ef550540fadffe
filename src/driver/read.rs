//! Reading the router back from Octavia into the snapshot the diff compares with: one listener's
//! policies with their rules, and the router's pools with their members and health monitors.
//! Children are read again only where their parent changed (see [`super::read_cache`]), and not
//! at all where a stamp of an earlier read (maybe by another process) shows that the parent holds
//! the desired children (see [`super::stamps`]).

use super::actual::{
    ActualHealthMonitor, ActualListener, ActualMember, ActualPolicy, ActualPool, ActualRouter, ActualRule, TagSet,
    share_tags,
};
use super::cloud::Cloud;
use super::error::Result;
use super::object_id::ObjectId;
use super::parent::Parent;
use super::plan::MemberName;
use super::read_cache::{Cached, Child, REFRESH_PER_READ, ReadCache};
use super::stamps::{Created, DesiredChildren, StampMap};
use crate::model::HealthMonitorSpec;
use crate::openstack::octavia::{HealthMonitor, L7Policy, Listener, Member, Pool as OctaviaPool};
use crate::openstack::{Error as OsError, ListQuery};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

/// One read: the cache it uses, its budget of expired entries to refresh, and the desired
/// children its stamps may stand for.
struct Read<'a> {
    cloud: &'a Cloud,
    cache: &'a Mutex<ReadCache>,
    now: Instant,
    refresh: usize,
    desired: Option<&'a DesiredChildren<'a>>,
}

/// Read the router's children as seen from `listener`: 1 listing of its policies, one of rules
/// per changed policy, 1 of the router's pools, one of members per changed pool, 1 of our health
/// monitors. With `desired`, a parent whose stamp holds for its desired children is not read
/// (see [`super::stamps`]).
pub async fn read_actual(
    cloud: &Cloud,
    cache: &Mutex<ReadCache>,
    listener: &Listener,
    desired: Option<&DesiredChildren<'_>>,
) -> Result<ActualRouter> {
    let mut read = Read { cloud, cache, now: Instant::now(), refresh: REFRESH_PER_READ, desired };
    let policies = read.policies(&listener.id).await?;
    let lb_id = listener.loadbalancers.first().map(|l| l.id.clone()).unwrap_or_default();
    let pools = read.pools(&lb_id).await?;
    {
        // The caches are keyed by the ids' text, as the listings give them.
        let policy_ids: Vec<String> = policies.iter().map(|p| p.id.to_string()).collect();
        let pool_ids: Vec<String> = pools.iter().map(|p| p.id.to_string()).collect();
        let live_policies = policy_ids.iter().map(String::as_str).collect();
        let live_pools = pool_ids.iter().map(String::as_str).collect();
        let mut reads = lock(cache);
        reads.rules.retain(&live_policies);
        reads.members.retain(&live_pools);
        reads.stamps.retain(&listener.id, &live_policies, &live_pools);
    }
    Ok(ActualRouter {
        listener: ActualListener {
            id: listener.id.clone(),
            default_pool_id: listener.default_pool_id.clone(),
            tags: listener.tags.clone(),
        },
        policies,
        pools,
    })
}

fn lock(cache: &Mutex<ReadCache>) -> MutexGuard<'_, ReadCache> {
    // A panic while holding it cannot leave it half-written (each call is one insert or lookup),
    // so a poisoned lock is still usable.
    cache.lock().unwrap_or_else(|e| e.into_inner())
}

impl Read<'_> {
    /// The children of `parent`: the cached read while it is good, else the `trusted` ones (the
    /// desired children, when the parent's stamp holds), else `fetch`ed (no GET when the parent
    /// lists none), remembered and stamped (`stamp`).
    async fn children<T, Fut>(
        &mut self,
        kind: fn(&mut ReadCache) -> &mut Cached<T>,
        parent: &Parent<'_>,
        trusted: Option<Arc<[T]>>,
        stamp: impl FnOnce(&mut ReadCache, &[T]),
        fetch: impl FnOnce() -> Fut,
    ) -> std::result::Result<Arc<[T]>, OsError>
    where
        T: Child,
        Fut: std::future::Future<Output = std::result::Result<Vec<T>, OsError>>,
    {
        if let Some(cached) = kind(&mut lock(self.cache)).get(parent, self.now, &mut self.refresh) {
            return Ok(cached);
        }
        if let Some(trusted) = trusted {
            // Not cached: the cache holds what was read, and the stamp stands for it meanwhile.
            return Ok(trusted);
        }
        let fresh: Arc<[T]> = if parent.child_ids.is_empty() { Arc::new([]) } else { fetch().await?.into() };
        let mut reads = lock(self.cache);
        kind(&mut reads).put(parent, Instant::now(), &fresh);
        stamp(&mut reads, &fresh);
        Ok(fresh)
    }

    /// Of the parents whose stamp holds now (`candidates`), those not read this time: all but
    /// the ones the verification picks, once per resync.
    fn trusted(&self, stamps: fn(&mut ReadCache) -> &mut StampMap, candidates: BTreeSet<&str>) -> BTreeSet<String> {
        let picked = match self.desired {
            Some(d) if d.verify && !candidates.is_empty() => {
                stamps(&mut lock(self.cache)).pick_for_verification(&candidates)
            }
            _ => BTreeSet::new(),
        };
        candidates.into_iter().filter(|id| !picked.contains(*id)).map(String::from).collect()
    }

    /// One listener's policies with their rules, in position order.
    async fn policies(&mut self, listener_id: &str) -> Result<Vec<ActualPolicy>> {
        let o = &self.cloud.octavia;
        let policies =
            o.list_l7policies(&ListQuery { listener_id: Some(listener_id.into()), ..ListQuery::default() }).await?;
        let candidates = match self.desired {
            Some(d) => {
                let reads = lock(self.cache);
                policies
                    .iter()
                    .filter(|p| d.trusted_rules(&reads.stamps.rules, &p.name, &p.tags, &policy_parent(p)))
                    .map(|p| p.id.as_str())
                    .collect()
            }
            None => BTreeSet::new(),
        };
        let trusted = self.trusted(|c| &mut c.stamps.rules, candidates);
        let mut actual = Vec::with_capacity(policies.len());
        let mut tag_set = TagSet::default();
        for p in policies {
            let parent = policy_parent(&p);
            let desired = self.desired.filter(|_| trusted.contains(&p.id)).map(|d| d.rules_of(&p.name, &parent));
            let rules = self
                .children(
                    |c| &mut c.rules,
                    &parent,
                    desired,
                    |c, rules| c.stamps.record_rules(listener_id, &parent, rules),
                    || async {
                        Ok(o.list_l7rules(&p.id, &ListQuery::default()).await?.into_iter().map(actual_rule).collect())
                    },
                )
                .await?;
            actual.push(actual_policy(p, rules, &mut tag_set));
        }
        actual.sort_by_key(|p| p.position);
        Ok(actual)
    }

    /// The router's pools with their members and health monitors.
    async fn pools(&mut self, lb_id: &str) -> Result<Vec<ActualPool>> {
        let o = &self.cloud.octavia;
        let pools = o.list_pools(&ListQuery { loadbalancer_id: Some(lb_id.into()), ..ListQuery::default() }).await?;
        let monitors: BTreeMap<String, HealthMonitor> = if pools.iter().any(|p| p.healthmonitor_id.is_some()) {
            o.list_health_monitors(&ListQuery::tags(self.cloud.spec.ownership.ownership_tags()))
                .await?
                .into_iter()
                .map(|h| (h.id.clone(), h))
                .collect()
        } else {
            BTreeMap::new()
        };
        let candidates = match self.desired {
            Some(d) => {
                let reads = lock(self.cache);
                pools
                    .iter()
                    .filter(|p| d.trusted_members(&reads.stamps.members, &p.name, &p.tags, &pool_parent(p)))
                    .map(|p| p.id.as_str())
                    .collect()
            }
            None => BTreeSet::new(),
        };
        let trusted = self.trusted(|c| &mut c.stamps.members, candidates);
        let own = &self.cloud.spec.ownership;
        let mut actual = Vec::with_capacity(pools.len());
        let mut tag_set = TagSet::default();
        for p in pools {
            let parent = pool_parent(&p);
            let desired = self.desired.filter(|_| trusted.contains(&p.id)).map(|d| d.members_of(&p.name, &parent));
            // Tags are shared before the members are cached, so that the cache and every read
            // that uses it hold one copy of both.
            let members = self
                .children(
                    |c| &mut c.members,
                    &parent,
                    desired,
                    |c, members| c.stamps.record_members(&parent, members, own),
                    || async {
                        let mut members: Vec<ActualMember> = o
                            .list_members(&p.id, &ListQuery::default())
                            .await?
                            .into_iter()
                            .filter_map(actual_member)
                            .collect();
                        share_tags(&mut members);
                        Ok(members)
                    },
                )
                .await?;
            let healthmonitor = p.healthmonitor_id.as_ref().map(|id| actual_health_monitor(id, monitors.get(id)));
            actual.push(ActualPool {
                members,
                id: p.id.into(),
                name: p.name,
                lb_algorithm: super::actual::word(p.lb_algorithm),
                healthmonitor,
                in_error: p.provisioning_status == "ERROR",
                tags: tag_set.share(p.tags),
            });
        }
        Ok(actual)
    }
}

/// After a complete fully-populated create of the router `lb_id`: stamps for every created
/// policy of `listener_id` and every created pool, from their two listings and the desired
/// children the create carried, so that the next read makes no child GET where nothing changed.
/// Without them the first Sync that changed anything on a router this process had created read
/// every child: 17 min of GETs at 400 policies on the local 2025.1.
pub(crate) async fn stamp_created(
    cloud: &Cloud,
    cache: &Mutex<ReadCache>,
    (lb_id, listener_id): (&str, &str),
    desired: &DesiredChildren<'_>,
) -> Result<()> {
    let o = &cloud.octavia;
    let policies =
        o.list_l7policies(&ListQuery { listener_id: Some(listener_id.into()), ..ListQuery::default() }).await?;
    let pools = o.list_pools(&ListQuery { loadbalancer_id: Some(lb_id.into()), ..ListQuery::default() }).await?;
    let created = |parent, name, tags| Created { parent, name, tags };
    let policies: Vec<Created<'_>> = policies.iter().map(|p| created(policy_parent(p), &p.name, &p.tags)).collect();
    let pools: Vec<Created<'_>> = pools.iter().map(|p| created(pool_parent(p), &p.name, &p.tags)).collect();
    lock(cache).stamps.record_created(listener_id, desired, &policies, &pools);
    Ok(())
}

/// The members of one pool, read now (no cache: the Members path reads exactly one pool).
/// `None` when the pool is gone.
pub async fn pool_members(cloud: &Cloud, pool_id: &str) -> Result<Option<Arc<[ActualMember]>>> {
    match cloud.octavia.list_members(pool_id, &ListQuery::default()).await {
        Ok(m) => {
            let mut members: Vec<ActualMember> = m.into_iter().filter_map(actual_member).collect();
            share_tags(&mut members);
            Ok(Some(members.into()))
        }
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Our pools on the router by name, as (name, id).
pub(crate) async fn our_pool_ids(cloud: &Cloud, lb_id: &str) -> Result<BTreeMap<String, String>> {
    let own = &cloud.spec.ownership;
    Ok(cloud
        .octavia
        .list_pools(&ListQuery { loadbalancer_id: Some(lb_id.into()), ..ListQuery::default() })
        .await?
        .into_iter()
        .filter(|p: &OctaviaPool| own.owns(&p.tags))
        .map(|p| (p.name, p.id))
        .collect())
}

fn policy_parent(p: &L7Policy) -> Parent<'_> {
    Parent {
        id: &p.id,
        provisioning_status: &p.provisioning_status,
        updated_at: p.updated_at.as_deref(),
        child_ids: p.rules.iter().map(|r| r.id.as_str()).collect(),
    }
}

fn pool_parent(p: &OctaviaPool) -> Parent<'_> {
    Parent {
        id: &p.id,
        provisioning_status: &p.provisioning_status,
        updated_at: p.updated_at.as_deref(),
        child_ids: p.members.iter().map(|m| m.id.as_str()).collect(),
    }
}

fn actual_policy(p: L7Policy, rules: Arc<[ActualRule]>, tag_set: &mut TagSet) -> ActualPolicy {
    ActualPolicy {
        rules,
        id: p.id.into(),
        name: p.name,
        position: p.position,
        action: super::actual::word(p.action),
        redirect_pool_id: p.redirect_pool_id.map(ObjectId::from),
        redirect_prefix: p.redirect_prefix,
        redirect_url: p.redirect_url,
        redirect_http_code: p.redirect_http_code,
        admin_state_up: p.admin_state_up,
        in_error: p.provisioning_status == "ERROR",
        tags: tag_set.share(p.tags),
    }
}

fn actual_rule(r: crate::openstack::octavia::L7Rule) -> ActualRule {
    ActualRule {
        id: r.id.into(),
        rule_type: super::actual::word(r.rule_type),
        compare_type: super::actual::word(r.compare_type),
        value: r.value,
        key: r.key.filter(|k| !k.is_empty()),
        invert: r.invert,
    }
}

/// An Octavia member as the diff sees it (`None` for an address that does not parse, which
/// Octavia never returns).
pub(crate) fn actual_member(m: Member) -> Option<ActualMember> {
    let address = m.address.parse().ok()?;
    Some(ActualMember {
        name: MemberName::read(&m.name, address, m.protocol_port),
        address,
        id: m.id.into(),
        protocol_port: m.protocol_port,
        weight: m.weight,
        backup: m.backup,
        admin_state_up: m.admin_state_up,
        monitor_port: m.monitor_port,
        tags: m.tags.into(),
        in_error: m.provisioning_status == "ERROR",
    })
}

/// A pool's health monitor: ours as listed (tagged), or one not in our tagged listing, which is
/// someone else's monitor on our pool and is left alone (an empty spec marks it).
fn actual_health_monitor(id: &str, listed: Option<&HealthMonitor>) -> ActualHealthMonitor {
    match listed {
        Some(h) => {
            let http = h.monitor_type.starts_with("HTTP");
            ActualHealthMonitor {
                id: h.id.clone(),
                spec: HealthMonitorSpec {
                    monitor_type: h.monitor_type.clone(),
                    delay: h.delay,
                    timeout: h.timeout,
                    max_retries: h.max_retries,
                    url_path: h.url_path.clone().filter(|_| http),
                    expected_codes: h.expected_codes.clone().filter(|_| http),
                },
                tags: h.tags.clone(),
            }
        }
        None => ActualHealthMonitor {
            id: id.to_string(),
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::openstack::octavia::L7Rule;
    use std::borrow::Cow;

    const POLICY: &str = "8b4f2e1c-3d5a-4f6b-9c7d-0e1f2a3b4c5d";
    const POOL: &str = "1c2d3e4f-5a6b-4c7d-8e9f-a0b1c2d3e4f5";
    const RULE: &str = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d";

    #[test]
    fn a_policy_read_holds_its_uuids_in_16_bytes_and_its_action_as_a_word() {
        let rule = L7Rule {
            id: RULE.into(),
            rule_type: "PATH".into(),
            compare_type: "STARTS_WITH".into(),
            ..L7Rule::default()
        };
        let read = L7Policy {
            id: POLICY.into(),
            action: "REDIRECT_TO_POOL".into(),
            redirect_pool_id: Some(POOL.into()),
            ..L7Policy::default()
        };
        let p = actual_policy(read, vec![actual_rule(rule)].into(), &mut TagSet::default());
        assert!(matches!(p.id, ObjectId::Uuid(_)) && p.id == POLICY);
        assert!(matches!(p.redirect_pool_id, Some(ObjectId::Uuid(_))));
        assert_eq!(p.redirect_pool_id.as_ref().map(ToString::to_string).as_deref(), Some(POOL));
        assert!(matches!(p.action, Cow::Borrowed("REDIRECT_TO_POOL")));
        assert!(matches!(p.rules[0].id, ObjectId::Uuid(_)) && p.rules[0].id == RULE);
        // The write that targets it gets back the text Octavia sent.
        assert_eq!(p.rules[0].id.to_string(), RULE);
    }
}
