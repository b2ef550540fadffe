//! The router's [`Stamp`]s (one per parent whose children were read) and how a read uses them: a
//! parent whose stamp still holds for the desired children is trusted without its child GET and
//! its children are the desired ones (see [`super::digest`] for why that is sound). The stamps
//! outlive the process in a text form ([`Stamps::to_text`]) that the controller keeps in a
//! ConfigMap per router, so that a new leader's first read makes the list GETs only.
//!
//! Trusted parents are still read, `[octavia_defaults] verify_per_resync` of them (default
//! [`VERIFY_PER_RESYNC`]) per resync in turn ([`Verifier`]): what no stamp can see (an edit of
//! Octavia's database behind its API) is repaired within `ceil(trusted / verify_per_resync)`
//! resyncs.

use super::actual::{ActualMember, ActualRule};
use super::digest::{ChildrenDigest, Stamp, Verifier};
use super::object_id::ObjectId;
use super::ownership::{Ownership, Tags};
use super::parent::Parent;
use super::plan::{compare_type_str, member_spec, rule_type_str};
use super::view::DesiredView;
use crate::model::{Pool, Rule};
use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

/// Trusted parents of one kind read again per resync (each costs one child GET), unless
/// `[octavia_defaults] verify_per_resync` says otherwise ([`Stamps::set_verify_per_resync`]).
pub const VERIFY_PER_RESYNC: usize = 10;

/// The first line of the text form; another version is no stamps (a full read).
const HEADER: &str = "kuryr-l7-router stamps v1";

/// The scope of pool stamps (a listener id is never empty).
const POOLS: &str = "-";

/// The stamps of one kind of parent (policies or pools), by parent id, each with its scope (the
/// listener of a policy: each listener's read forgets only its own policies gone), and their
/// verification.
#[derive(Debug)]
pub struct StampMap {
    by_parent: BTreeMap<String, (String, Stamp)>,
    verifier: Verifier,
}

impl Default for StampMap {
    fn default() -> Self {
        Self { by_parent: BTreeMap::new(), verifier: Verifier::new(VERIFY_PER_RESYNC) }
    }
}

impl StampMap {
    pub fn get(&self, parent_id: &str) -> Option<&Stamp> {
        self.by_parent.get(parent_id).map(|(_, s)| s)
    }

    pub fn len(&self) -> usize {
        self.by_parent.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_parent.is_empty()
    }

    /// The parents (of `candidates`, trusted now) whose children this resync reads anyway.
    pub fn pick_for_verification(&mut self, candidates: &BTreeSet<&str>) -> BTreeSet<String> {
        self.verifier.pick(candidates).into_iter().map(String::from).collect()
    }

    /// Records the children just read from `parent` (`None`: they cannot be stamped); whether
    /// the stamps changed.
    fn record(&mut self, scope: &str, parent: &Parent<'_>, children: Option<ChildrenDigest>) -> bool {
        match children.and_then(|d| Stamp::of_read(parent, d)) {
            Some(s) => {
                let new = (scope.to_string(), s);
                self.by_parent.insert(parent.id.to_string(), new.clone()).as_ref() != Some(&new)
            }
            None => self.by_parent.remove(parent.id).is_some(),
        }
    }

    /// Reads `per_resync` trusted parents per resync from now on.
    fn set_verify_per_resync(&mut self, per_resync: usize) {
        self.verifier = Verifier::new(per_resync);
    }

    /// Forgets the parents of `scope` not in `live`.
    fn retain(&mut self, scope: &str, live: &BTreeSet<&str>) -> bool {
        let before = self.by_parent.len();
        self.by_parent.retain(|id, (s, _)| s != scope || live.contains(id.as_str()));
        before != self.by_parent.len()
    }
}

/// The router's stamps: rules by policy, members by pool.
#[derive(Debug, Default)]
pub struct Stamps {
    pub rules: StampMap,
    pub members: StampMap,
    /// Changed since the text form was last taken ([`Stamps::take_changed`]).
    changed: bool,
}

impl Stamps {
    /// Records the rules just read from the policy `parent` of the listener `listener_id`.
    pub fn record_rules(&mut self, listener_id: &str, parent: &Parent<'_>, rules: &[ActualRule]) {
        self.changed |= self.rules.record(listener_id, parent, Some(ChildrenDigest::of_read_rules(rules)));
    }

    /// Records the members just read from the pool `parent` (pools are the router's: no scope).
    pub fn record_members(&mut self, parent: &Parent<'_>, members: &[ActualMember], own: &Ownership) {
        let digest = ChildrenDigest::of_read_members(members, |m| own.owns(&m.tags));
        self.changed |= self.members.record(POOLS, parent, digest);
    }

    /// Records what a complete fully-populated create made of the policies and pools of
    /// `desired`, as their listings (`policies` of the listener `listener_id`, the router's
    /// `pools`) show them once ACTIVE: the create carried exactly the desired children, so the
    /// next read trusts them without a child GET, as after a read. Parents not ours, not desired,
    /// or whose listed child count differs are left unstamped (they are read).
    pub fn record_created(
        &mut self,
        listener_id: &str,
        desired: &DesiredChildren<'_>,
        policies: &[Created<'_>],
        pools: &[Created<'_>],
    ) {
        for p in policies {
            if let Some(rules) = desired.matching_rules(p.name, p.tags, &p.parent) {
                self.changed |= self.rules.record(listener_id, &p.parent, Some(ChildrenDigest::of_rules(rules)));
            }
        }
        for p in pools {
            if let Some(pool) = desired.matching_pool(p.name, p.tags, &p.parent) {
                self.changed |= self.members.record(POOLS, &p.parent, Some(ChildrenDigest::of_members(&pool.members)));
            }
        }
    }

    /// Forgets the stamps of the listener's policies and the router's pools that no longer exist.
    pub fn retain(&mut self, listener_id: &str, live_policies: &BTreeSet<&str>, live_pools: &BTreeSet<&str>) {
        self.changed |= self.rules.retain(listener_id, live_policies) | self.members.retain(POOLS, live_pools);
    }

    /// `<kind> <scope> <parent id> <stamp>` per line after [`HEADER`]; none holds a space.
    pub fn to_text(&self) -> String {
        let mut out = format!("{HEADER}\n");
        for (kind, map) in [("r", &self.rules), ("m", &self.members)] {
            for (id, (scope, s)) in &map.by_parent {
                out.push_str(&format!("{kind} {scope} {id} {s}\n"));
            }
        }
        out
    }

    /// The stamps in [`Stamps::to_text`]'s form; `None` if any line is damaged or the version is
    /// another (no stamps at all then: a half-read set could trust what it should not).
    pub fn parse(text: &str) -> Option<Self> {
        let mut lines = text.lines();
        if lines.next()? != HEADER {
            return None;
        }
        let mut stamps = Self::default();
        for line in lines.filter(|l| !l.is_empty()) {
            let (kind, rest) = line.split_once(' ')?;
            let (scope, rest) = rest.split_once(' ')?;
            let (id, stamp) = rest.split_once(' ')?;
            let map = match kind {
                "r" => &mut stamps.rules,
                "m" => &mut stamps.members,
                _ => return None,
            };
            map.by_parent.insert(id.to_string(), (scope.to_string(), Stamp::parse(stamp)?));
        }
        Some(stamps)
    }

    /// Reads `per_resync` trusted policies and as many pools per resync from now on.
    pub fn set_verify_per_resync(&mut self, per_resync: usize) {
        self.rules.set_verify_per_resync(per_resync);
        self.members.set_verify_per_resync(per_resync);
    }

    /// The text form if the stamps changed since it was last taken.
    pub fn take_changed(&mut self) -> Option<String> {
        std::mem::take(&mut self.changed).then(|| self.to_text())
    }
}

/// A policy or pool as its listing shows it, with the name and tags that say whose it is.
pub struct Created<'a> {
    pub parent: Parent<'a>,
    pub name: &'a str,
    pub tags: &'a [String],
}

/// What a read trusts a parent to hold: the desired children of our parents, by name.
pub struct DesiredChildren<'a> {
    rules: HashMap<&'a str, &'a [Rule]>,
    pools: HashMap<&'a str, &'a Pool>,
    own: &'a Ownership,
    /// Read some trusted parents anyway (once per resync: the first read of a convergence).
    pub verify: bool,
}

impl<'a> DesiredChildren<'a> {
    pub fn of(view: &DesiredView<'a>, own: &'a Ownership, verify: bool) -> Self {
        let routes = view.policies.iter().map(|p| (p.name.as_str(), p.rules.as_slice()));
        let redirects = view.redirects.iter().map(|r| (r.name.as_str(), r.rules.as_slice()));
        Self { rules: routes.chain(redirects).collect(), pools: view.pools().collect(), own, verify }
    }

    /// Whether our policy `name` can be trusted to hold its desired rules without a read: its
    /// stamp holds for them, and there is one listed id per desired rule.
    pub fn trusted_rules(&self, stamps: &StampMap, name: &str, tags: &[String], parent: &Parent<'_>) -> bool {
        self.matching_rules(name, tags, parent).is_some_and(|rules| {
            stamps.get(parent.id).is_some_and(|s| s.trusts(parent, ChildrenDigest::of_rules(rules)))
        })
    }

    /// The desired rules of our policy `name` (tagged `tags` in its listing) when `parent` lists
    /// one id per desired rule. One id per distinct rule: a duplicate on either side is for the
    /// diff to see.
    fn matching_rules(&self, name: &str, tags: &[String], parent: &Parent<'_>) -> Option<&'a [Rule]> {
        let rules = *self.rules.get(name).filter(|_| self.own.owns(tags))?;
        let distinct: BTreeSet<_> = rules.iter().map(rule_key).collect();
        (distinct.len() == rules.len() && rules.len() == parent.child_ids.len()).then_some(rules)
    }

    /// The desired pool of our pool `name` when `parent` lists one id per desired member (see
    /// [`Self::matching_rules`]).
    fn matching_pool(&self, name: &str, tags: &[String], parent: &Parent<'_>) -> Option<&'a Pool> {
        let pool = *self.pools.get(name).filter(|_| self.own.owns(tags))?;
        let distinct: BTreeSet<_> = pool.members.iter().map(|m| (m.address, m.protocol_port)).collect();
        (distinct.len() == pool.members.len() && pool.members.len() == parent.child_ids.len()).then_some(pool)
    }

    /// The desired rules of the trusted policy `name` as a read would show them: ids from the
    /// policy list, content from the desired rules.
    pub fn rules_of(&self, name: &str, parent: &Parent<'_>) -> Arc<[ActualRule]> {
        let rules = self.rules.get(name).copied().unwrap_or_default();
        let mut ids: Vec<&str> = parent.child_ids.clone();
        ids.sort_unstable();
        ids.iter()
            .zip(rules)
            .map(|(id, r)| ActualRule {
                id: (*id).into(),
                rule_type: Cow::Borrowed(rule_type_str(r.rule_type)),
                compare_type: Cow::Borrowed(compare_type_str(r.compare_type)),
                value: r.value.clone(),
                key: r.key.clone(),
                invert: r.invert,
            })
            .collect()
    }

    /// Whether our pool `name` can be trusted to hold its desired members (see
    /// [`Self::trusted_rules`]).
    pub fn trusted_members(&self, stamps: &StampMap, name: &str, tags: &[String], parent: &Parent<'_>) -> bool {
        self.matching_pool(name, tags, parent).is_some_and(|pool| {
            stamps.get(parent.id).is_some_and(|s| s.trusts(parent, ChildrenDigest::of_members(&pool.members)))
        })
    }

    /// The desired members of the trusted pool `name` as a read would show them, with our tags.
    pub fn members_of(&self, name: &str, parent: &Parent<'_>) -> Arc<[ActualMember]> {
        let Some(pool) = self.pools.get(name) else { return Arc::new([]) };
        let tags: Tags = self.own.tags_for(&pool.service).into();
        let mut ids: Vec<&str> = parent.child_ids.clone();
        ids.sort_unstable();
        ids.iter()
            .zip(&pool.members)
            .map(|(id, m)| ActualMember::written(ObjectId::new(id), member_spec(m, &tags)))
            .collect()
    }
}

fn rule_key(r: &Rule) -> (&'static str, &'static str, &str, bool, &str) {
    (
        rule_type_str(r.rule_type),
        compare_type_str(r.compare_type),
        r.key.as_deref().unwrap_or_default(),
        r.invert,
        &r.value,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{DesiredRouter, KubeRef, Policy};
    use crate::testing::{path_prefix_rule as rule, read_path_prefix_rule as read_rule};

    const T1: &str = "2026-11-26T06:00:01";

    fn parent<'a>(id: &'a str, ids: &[&'a str]) -> Parent<'a> {
        Parent { id, provisioning_status: "ACTIVE", updated_at: Some(T1), child_ids: ids.to_vec() }
    }

    fn desired(rules: Vec<Rule>) -> DesiredRouter {
        let mut d = DesiredRouter::default();
        d.policies.push(Policy {
            name: "p".into(),
            position: 1,
            pool: String::new(),
            rules,
            owner: KubeRef::new("Ingress", "ns", "ing"),
            description: String::new(),
            redirect: None,
        });
        d
    }

    #[test]
    fn stamps_read_back_as_written_and_damaged_text_is_no_stamps() {
        let mut s = Stamps::default();
        s.record_rules("lis-1", &parent("pol-1", &["r1"]), &[read_rule("r1", "/a")]);
        s.record_members(&parent("pool-1", &[]), &[], &Ownership::new("c1"));
        let text = s.take_changed().expect("recorded");
        let back = Stamps::parse(&text).expect("parses");
        assert_eq!(back.to_text(), text);
        assert_eq!((back.rules.len(), back.members.len()), (1, 1));
        for bad in [
            String::new(),
            text.replacen(HEADER, "kuryr-l7-router stamps v0", 1),
            format!("{text}r lis-1 pol-2 garbage\n"),
            format!("{text}x - pool-2 {T1} 0 0\n"),
            format!("{text}r lis-1\n"),
        ] {
            assert!(Stamps::parse(&bad).is_none(), "{bad:?}");
        }
    }

    #[test]
    fn stamps_change_only_when_a_read_finds_something_new() {
        let mut s = Stamps::default();
        let p = parent("pol-1", &["r1"]);
        s.record_rules("lis-1", &p, &[read_rule("r1", "/a")]);
        assert!(s.take_changed().is_some());
        s.record_rules("lis-1", &p, &[read_rule("r1", "/a")]);
        assert!(s.take_changed().is_none(), "the same read again: nothing to save");
        s.record_rules("lis-1", &Parent { provisioning_status: "PENDING_UPDATE", ..p.clone() }, &[]);
        assert!(s.take_changed().is_some() && s.rules.is_empty(), "an unsettled read forgets the stamp");
    }

    #[test]
    fn a_listeners_read_forgets_only_its_own_policies_gone() {
        let mut s = Stamps::default();
        s.record_rules("http", &parent("pol-http", &[]), &[]);
        s.record_rules("https", &parent("pol-https", &[]), &[]);
        s.record_members(&parent("pool-1", &[]), &[], &Ownership::new("c1"));
        s.retain("http", &BTreeSet::new(), &["pool-1"].into_iter().collect());
        assert!(s.rules.get("pol-http").is_none(), "gone from its listener");
        assert!(s.rules.get("pol-https").is_some(), "the other listener's policy is kept");
        assert!(s.members.get("pool-1").is_some());
    }

    #[test]
    fn only_our_policies_with_one_listed_id_per_distinct_desired_rule_are_trusted() {
        let own = Ownership::new("c1");
        let ours = own.tags_for(&KubeRef::new("Ingress", "ns", "ing"));
        let mut s = Stamps::default();
        s.record_rules("lis", &parent("pol-1", &["r1"]), &[read_rule("r1", "/a")]);
        let d = desired(vec![rule("/a")]);
        let view = DesiredView::of(&d);
        let children = DesiredChildren::of(&view, &own, false);
        let p = parent("pol-1", &["r1"]);
        assert!(children.trusted_rules(&s.rules, "p", &ours, &p));
        assert_eq!(&*children.rules_of("p", &p), &[read_rule("r1", "/a")]);
        assert!(!children.trusted_rules(&s.rules, "p", &["someone-else".to_string()], &p), "not ours");
        assert!(!children.trusted_rules(&s.rules, "other", &ours, &p), "not desired");
        assert!(!children.trusted_rules(&s.rules, "p", &ours, &parent("pol-2", &["r1"])), "no stamp");
        // A rule present twice (a create retried) is for the diff to delete: never trusted.
        s.record_rules("lis", &parent("pol-3", &["r1", "r2"]), &[read_rule("r1", "/a"), read_rule("r2", "/a")]);
        assert!(!children.trusted_rules(&s.rules, "p", &ours, &parent("pol-3", &["r1", "r2"])));
        let twice = desired(vec![rule("/a"), rule("/a")]);
        let view = DesiredView::of(&twice);
        let children = DesiredChildren::of(&view, &own, false);
        assert!(!children.trusted_rules(&s.rules, "p", &ours, &parent("pol-3", &["r1", "r2"])));
    }
}
