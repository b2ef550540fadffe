//! The children of the router as last read: each policy's rules and each pool's members, kept
//! with the stamp their parent had, so that a resync GETs only what changed.
//!
//! Why: every `GET /l7policies/{id}/rules` and `GET /pools/{id}/members` makes Octavia's API load
//! the load balancer's whole object graph (fixed upstream only in Octavia 16.0.0, bug 2019311).
//! On the local stack that is ~4 s per GET for a router of 1,300 objects, i.e. ~30 min for the
//! 450 GETs of a full read, while the policy and pool lists (which carry the children's ids) take
//! well under a second.
//!
//! When the cached children are used (all must hold; else they are read again):
//! - the parent is ACTIVE and its `updated_at` is the one they were read with. Octavia moves
//!   the parent to PENDING_UPDATE and back to ACTIVE for every create, update or delete of one of
//!   its children, through its API or a worker's revert, and each of those sets `updated_at`;
//! - the ids the parent lists now are exactly the cached children's ids;
//! - they were read less than [`MAX_AGE`] ago, so that a change that begins and ends within the
//!   same second as the read (`updated_at` has whole seconds), or an edit of Octavia's database
//!   behind its API, is seen in the end. Older entries are read again at most
//!   [`REFRESH_PER_READ`] per read (the others are still used): a full read of a large router
//!   takes longer than `MAX_AGE` (28.6 min at 1,300 objects on the local stack), so expiring
//!   everything at once would make every resync a full read. A new process starts empty (a full
//!   read).

use super::actual::{ActualMember, ActualRule};
use super::parent::Parent;
use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The age after which a cached read is refreshed (at most [`REFRESH_PER_READ`] per read).
pub const MAX_AGE: Duration = Duration::from_secs(600);

/// How many expired entries one read refreshes; the rest wait for the next reads.
pub const REFRESH_PER_READ: usize = 20;

#[derive(Clone, Debug)]
struct Entry<T> {
    updated_at: String,
    read_at: Instant,
    /// The one copy of the children: the router read back holds the same allocation, so a
    /// cached pool's members are held once, not once here and once per read.
    children: Arc<[T]>,
}

/// Children that carry an Octavia id.
pub trait Child {
    fn id(&self) -> Cow<'_, str>;
}
impl Child for ActualRule {
    fn id(&self) -> Cow<'_, str> {
        self.id.text()
    }
}
impl Child for ActualMember {
    fn id(&self) -> Cow<'_, str> {
        self.id.text()
    }
}

/// One kind of children (rules of policies, members of pools), by parent id.
#[derive(Debug)]
pub struct Cached<T> {
    entries: HashMap<String, Entry<T>>,
}

impl<T> Default for Cached<T> {
    fn default() -> Self {
        Self { entries: HashMap::new() }
    }
}

impl<T: Child> Cached<T> {
    /// The children of `parent` if the cached read is still good at `now` (see the module doc).
    /// An entry older than [`MAX_AGE`] is refused while `refresh` (the read's budget of
    /// refreshes) lasts, and used once it is spent.
    pub fn get(&self, parent: &Parent<'_>, now: Instant, refresh: &mut usize) -> Option<Arc<[T]>> {
        let e = self.entries.get(parent.id)?;
        let unchanged = parent.provisioning_status == "ACTIVE" && parent.updated_at == Some(e.updated_at.as_str());
        let ids: BTreeSet<Cow<'_, str>> = e.children.iter().map(Child::id).collect();
        let same_ids =
            ids == parent.child_ids.iter().map(|id| Cow::Borrowed(*id)).collect() && ids.len() == e.children.len();
        if !(unchanged && same_ids) {
            return None;
        }
        if now.saturating_duration_since(e.read_at) >= MAX_AGE && *refresh > 0 {
            *refresh -= 1;
            return None;
        }
        Some(Arc::clone(&e.children))
    }

    /// Remember children just read (shared, not copied); only from a settled parent (ACTIVE,
    /// with an `updated_at`).
    pub fn put(&mut self, parent: &Parent<'_>, read_at: Instant, children: &Arc<[T]>) {
        match parent.updated_at {
            Some(u) if parent.provisioning_status == "ACTIVE" => {
                self.entries.insert(
                    parent.id.to_string(),
                    Entry { updated_at: u.to_string(), read_at, children: Arc::clone(children) },
                );
            }
            _ => {
                self.entries.remove(parent.id);
            }
        }
    }

    /// Forget parents that no longer exist.
    pub fn retain(&mut self, live: &BTreeSet<&str>) {
        self.entries.retain(|id, _| live.contains(id.as_str()));
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// The router's cached reads: rules by policy, members by pool.
#[derive(Debug, Default)]
pub struct ReadCache {
    pub rules: Cached<ActualRule>,
    pub members: Cached<ActualMember>,
    /// What the reads found, for the next process (see [`super::stamps`]).
    pub stamps: super::stamps::Stamps,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(id: &str) -> ActualRule {
        ActualRule {
            id: id.into(),
            rule_type: "PATH".into(),
            compare_type: "STARTS_WITH".into(),
            value: "/api".into(),
            key: None,
            invert: false,
        }
    }

    fn parent<'a>(status: &'a str, updated: Option<&'a str>, ids: &[&'a str]) -> Parent<'a> {
        Parent { id: "pol-1", provisioning_status: status, updated_at: updated, child_ids: ids.to_vec() }
    }

    const T1: &str = "2026-11-22T06:00:01";
    const T2: &str = "2026-11-22T06:00:02";

    #[test]
    fn a_cached_read_is_used_only_while_its_parent_is_unchanged() {
        let t0 = Instant::now();
        let mut c = Cached::<ActualRule>::default();
        let read = parent("ACTIVE", Some(T1), &["r1", "r2"]);
        let mut budget = REFRESH_PER_READ;
        assert_eq!(c.get(&read, t0, &mut budget), None, "nothing read yet");
        c.put(&read, t0, &[rule("r1"), rule("r2")].into());
        let soon = t0 + Duration::from_secs(5);
        let cases: Vec<(&str, Parent<'_>, Instant, bool)> = vec![
            ("same stamp, same ids", parent("ACTIVE", Some(T1), &["r2", "r1"]), soon, true),
            ("updated since", parent("ACTIVE", Some(T2), &["r1", "r2"]), soon, false),
            ("being changed", parent("PENDING_UPDATE", Some(T1), &["r1", "r2"]), soon, false),
            ("in ERROR", parent("ERROR", Some(T1), &["r1", "r2"]), soon, false),
            ("a child more", parent("ACTIVE", Some(T1), &["r1", "r2", "r3"]), soon, false),
            ("a child less", parent("ACTIVE", Some(T1), &["r1"]), soon, false),
            ("a child replaced", parent("ACTIVE", Some(T1), &["r1", "r9"]), soon, false),
            (
                "just under MAX_AGE",
                parent("ACTIVE", Some(T1), &["r1", "r2"]),
                t0 + MAX_AGE - Duration::from_millis(1),
                true,
            ),
            ("MAX_AGE reached", parent("ACTIVE", Some(T1), &["r1", "r2"]), t0 + MAX_AGE, false),
        ];
        for (what, p, at, hit) in cases {
            let mut budget = REFRESH_PER_READ;
            assert_eq!(c.get(&p, at, &mut budget).is_some(), hit, "{what}");
        }
        let mut budget = REFRESH_PER_READ;
        let got = c.get(&read, soon, &mut budget).unwrap();
        assert_eq!(got.iter().map(|r| r.id.to_string()).collect::<Vec<_>>(), ["r1", "r2"]);
        assert_eq!(budget, REFRESH_PER_READ, "a fresh entry costs no refresh");
    }

    #[test]
    fn expired_entries_are_refreshed_a_few_per_read() {
        let t0 = Instant::now();
        let mut c = Cached::<ActualRule>::default();
        let ids = ["pol-0", "pol-1", "pol-2", "pol-3", "pol-4"];
        let p = |id| Parent { id, ..parent("ACTIVE", Some(T1), &["r1"]) };
        for id in ids {
            c.put(&p(id), t0, &[rule("r1")].into());
        }
        let later = t0 + MAX_AGE + Duration::from_secs(1);
        let mut budget = 2;
        let refused = ids.iter().filter(|id| c.get(&p(id), later, &mut budget).is_none()).count();
        assert_eq!((refused, budget), (2, 0), "two expired entries read again, three still used");
        // A change is never served from the cache, whatever the budget.
        let changed = Parent { updated_at: Some(T2), ..p(ids[4]) };
        assert!(c.get(&changed, later, &mut 0).is_none());
    }

    #[test]
    fn only_settled_parents_are_remembered_and_an_unsettled_read_forgets() {
        let t0 = Instant::now();
        let mut c = Cached::<ActualRule>::default();
        c.put(&parent("PENDING_UPDATE", Some(T1), &["r1"]), t0, &[rule("r1")].into());
        assert!(c.is_empty(), "a parent being changed is not remembered");
        c.put(&parent("ACTIVE", None, &["r1"]), t0, &[rule("r1")].into());
        assert!(c.is_empty(), "nor one without updated_at");
        c.put(&parent("ACTIVE", Some(T1), &["r1"]), t0, &[rule("r1")].into());
        assert_eq!(c.len(), 1);
        // Read again while it was being changed: the earlier read is dropped, not kept.
        c.put(&parent("PENDING_UPDATE", Some(T2), &["r1"]), t0, &[rule("r1")].into());
        assert!(c.get(&parent("ACTIVE", Some(T1), &["r1"]), t0, &mut 1).is_none());
        assert!(c.is_empty());
    }

    #[test]
    fn a_duplicated_child_id_is_not_a_match() {
        // Two cached rules with one id cannot stand for the one rule the parent lists.
        let t0 = Instant::now();
        let mut c = Cached::<ActualRule>::default();
        let p = parent("ACTIVE", Some(T1), &["r1"]);
        c.put(&p, t0, &[rule("r1"), rule("r1")].into());
        assert!(c.get(&p, t0, &mut 1).is_none());
    }

    #[test]
    fn a_cached_read_hands_out_the_cached_copy_not_a_second_one() {
        // The router read back and the cache hold one allocation of the children: at 100,000
        // members a second copy was the size of the read back's members (~30 MiB).
        let t0 = Instant::now();
        let mut c = Cached::<ActualRule>::default();
        let p = parent("ACTIVE", Some(T1), &["r1", "r2"]);
        let read: Arc<[ActualRule]> = [rule("r1"), rule("r2")].into();
        c.put(&p, t0, &read);
        let first = c.get(&p, t0, &mut 0).unwrap();
        let second = c.get(&p, t0, &mut 0).unwrap();
        assert!(Arc::ptr_eq(&first, &read) && Arc::ptr_eq(&second, &read), "the cached children, not a copy");
        assert_eq!(Arc::strong_count(&read), 4, "one copy held by the read, the cache and two reads");
        drop((first, second));
        c.retain(&BTreeSet::new());
        assert_eq!(Arc::strong_count(&read), 1, "a parent forgotten frees the cache's share");
    }

    #[test]
    fn parents_gone_are_forgotten() {
        let t0 = Instant::now();
        let mut c = Cached::<ActualRule>::default();
        c.put(&Parent { id: "a", ..parent("ACTIVE", Some(T1), &["r1"]) }, t0, &[rule("r1")].into());
        c.put(&Parent { id: "b", ..parent("ACTIVE", Some(T1), &["r2"]) }, t0, &[rule("r2")].into());
        c.retain(&["b"].into_iter().collect());
        assert_eq!(c.len(), 1);
        assert!(c.get(&Parent { id: "b", ..parent("ACTIVE", Some(T1), &["r2"]) }, t0, &mut 1).is_some());
        assert!(c.get(&Parent { id: "a", ..parent("ACTIVE", Some(T1), &["r1"]) }, t0, &mut 1).is_none());
    }
}
