//! Digests of a parent's children (a policy's rules, a pool's members), for a fast restart: a new
//! leader that finds a parent unchanged since a recorded [`Stamp`], and whose desired children
//! have the digest the stamp recorded, can trust the parent without its child GET (each child GET
//! makes Octavia's API load the whole load balancer graph: ~195 s of reads at 200 policies).
//!
//! Why a stamp holds the parent's `updated_at` and child ids, not only a digest of what we wrote:
//! a digest of the desired children kept in the parent's tag alone is not sound. A member
//! weight changed A → B in place (the batch PUT keeps the member's id) and back to A while the
//! controller restarts leaves a tag that says A, a desired state that says A, and Octavia holding
//! B; rewriting the tag with every child write would double the writes of the hot path (one more
//! `PENDING_UPDATE` of the whole load balancer per member change). The stamp is trusted only
//! while the parent still shows the `updated_at` and exactly the child ids it was taken with:
//! Octavia sets the parent's `updated_at` on every create, update or delete of a child through
//! its API (see [`super::read_cache`]), so any write since, ours or by hand, distrusts it.
//! What no stamp can see (an edit of Octavia's database behind its API, a change within the
//! second of the read) is found by the bounded background verification ([`Verifier`]).
//!
//! The digest is order-free (children are compared as sets, like the diff does) and stable across
//! builds and processes (FNV-1a, not the std hasher, whose output may change between releases).

use super::actual::{ActualMember, ActualRule};
use super::parent::Parent;
use super::plan::{compare_type_str, rule_type_str};
use crate::model::{Member, Rule};
use std::collections::BTreeSet;

/// A digest of a set of children in Octavia's spelling.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ChildrenDigest(pub u64);

impl ChildrenDigest {
    /// The digest of children given as canonical lines (order-free: sorted first).
    fn of_lines(lines: impl IntoIterator<Item = String>) -> Self {
        let sorted: BTreeSet<String> = lines.into_iter().collect();
        let mut h = Fnv::default();
        for line in &sorted {
            h.write(line.as_bytes());
            // A separator no line contains, so ["ab", "c"] and ["a", "bc"] differ.
            h.write(&[0]);
        }
        Self(h.0)
    }

    /// The desired rules of a policy.
    pub fn of_rules(rules: &[Rule]) -> Self {
        Self::of_lines(rules.iter().map(|r| {
            rule_line(
                rule_type_str(r.rule_type),
                compare_type_str(r.compare_type),
                r.key.as_deref(),
                r.invert,
                &r.value,
            )
        }))
    }

    /// The rules of a policy as read.
    pub fn of_read_rules(rules: &[ActualRule]) -> Self {
        Self::of_lines(
            rules.iter().map(|r| rule_line(&r.rule_type, &r.compare_type, r.key.as_deref(), r.invert, &r.value)),
        )
    }

    /// The desired members of a pool.
    pub fn of_members(members: &[Member]) -> Self {
        Self::of_lines(
            members.iter().map(|m| member_line(m.address, m.protocol_port, m.weight, m.backup, m.monitor_port)),
        )
    }

    /// The members of a pool as read, when they can stand for desired members: all ours (`owned`),
    /// enabled and not in ERROR. `None` otherwise: such a pool is read every time (a batch PUT
    /// made from a trusted, synthesized read would drop a foreign member).
    pub fn of_read_members(members: &[ActualMember], owned: impl Fn(&ActualMember) -> bool) -> Option<Self> {
        if members.iter().any(|m| !owned(m) || !m.admin_state_up || m.in_error) {
            return None;
        }
        Some(Self::of_lines(
            members.iter().map(|m| member_line(m.address, m.protocol_port, m.weight, m.backup, m.monitor_port)),
        ))
    }
}

fn rule_line(rule_type: &str, compare_type: &str, key: Option<&str>, invert: bool, value: &str) -> String {
    // The value comes last: it is the only free text, so no field can run into the next one.
    format!("{rule_type}|{compare_type}|{}|{invert}|{value}", key.unwrap_or_default())
}

/// `monitor_port` is appended only when set: the digests of members without one (every pod
/// member) stay those an earlier version stamped.
fn member_line(address: std::net::IpAddr, port: u16, weight: u16, backup: bool, monitor: Option<u16>) -> String {
    match monitor {
        None => format!("{address}|{port}|{weight}|{backup}"),
        Some(m) => format!("{address}|{port}|{weight}|{backup}|{m}"),
    }
}

/// 64-bit FNV-1a of `text`: the same in every build and process (names derived from it last).
pub fn stable_hash(text: &str) -> u64 {
    let mut h = Fnv::default();
    h.write(text.as_bytes());
    h.0
}

/// 64-bit FNV-1a.
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Self(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

/// What a verified read of one parent recorded, for the next leader: the parent's `updated_at`
/// and child ids at that read, and the digest of the children it found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stamp {
    pub updated_at: String,
    /// Digest of the sorted child ids.
    pub child_ids: u64,
    pub children: ChildrenDigest,
}

impl Stamp {
    /// The stamp of children just read from `parent`; `None` for a parent that is not settled
    /// (not ACTIVE, or without `updated_at`), whose read proves nothing about the next one.
    pub fn of_read(parent: &Parent<'_>, children: ChildrenDigest) -> Option<Self> {
        let updated_at = parent.updated_at.filter(|_| parent.provisioning_status == "ACTIVE")?;
        Some(Self { updated_at: updated_at.to_string(), child_ids: ids_digest(&parent.child_ids), children })
    }

    /// Whether `parent`, as its list shows it now, can be trusted to hold children whose digest
    /// is `desired` without reading them: settled, unchanged since the stamp (same `updated_at`,
    /// same child ids) and the stamped children are the desired ones.
    pub fn trusts(&self, parent: &Parent<'_>, desired: ChildrenDigest) -> bool {
        parent.provisioning_status == "ACTIVE"
            && parent.updated_at == Some(self.updated_at.as_str())
            && ids_digest(&parent.child_ids) == self.child_ids
            && self.children == desired
    }
}

impl std::fmt::Display for Stamp {
    /// `<updated_at> <child ids digest> <children digest>`, the form the next leader parses
    /// back ([`Stamp::parse`]); `updated_at` holds no space in Octavia's ISO 8601 spelling.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {:016x} {:016x}", self.updated_at, self.child_ids, self.children.0)
    }
}

impl Stamp {
    /// A stamp in its [`Display`](std::fmt::Display) form; `None` for anything else (a stamp
    /// that does not parse is no stamp: the parent is read).
    pub fn parse(text: &str) -> Option<Self> {
        let mut parts = text.split(' ');
        let (updated_at, ids, children) = (parts.next()?, parts.next()?, parts.next()?);
        if parts.next().is_some() || updated_at.is_empty() {
            return None;
        }
        Some(Self {
            updated_at: updated_at.to_string(),
            child_ids: u64::from_str_radix(ids, 16).ok()?,
            children: ChildrenDigest(u64::from_str_radix(children, 16).ok()?),
        })
    }
}

fn ids_digest(ids: &[&str]) -> u64 {
    ChildrenDigest::of_lines(ids.iter().map(|id| id.to_string())).0
}

/// The bounded background verification: each resync reads the children of at most `per_resync`
/// trusted parents, taking them in turn, so every trusted parent is read within
/// `ceil(trusted / per_resync)` resyncs and a drift the stamps cannot see is repaired by then.
#[derive(Debug)]
pub struct Verifier {
    per_resync: usize,
    /// The last parent id verified; the next resync starts after it.
    last: Option<String>,
}

impl Verifier {
    pub fn new(per_resync: usize) -> Self {
        Self { per_resync, last: None }
    }

    /// The trusted parents (ids) to read at this resync, taken in id order after the last one
    /// verified and wrapping around; parents gone since are skipped.
    pub fn pick<'a>(&mut self, trusted: &BTreeSet<&'a str>) -> Vec<&'a str> {
        let last = self.last.as_deref();
        let after = trusted.iter().filter(|id| last.is_some_and(|l| **id > l));
        let picked: Vec<&'a str> =
            after.chain(trusted.iter()).copied().take(self.per_resync.min(trusted.len())).collect();
        if let Some(last) = picked.last() {
            self.last = Some(last.to_string());
        }
        picked
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{member, path_prefix_rule as rule, read_path_prefix_rule as read_rule};

    fn read_member(ip: &str, weight: u16) -> ActualMember {
        ActualMember {
            id: format!("m-{ip}").into(),
            name: String::new().into(),
            address: ip.parse().unwrap(),
            protocol_port: 8080,
            weight,
            backup: false,
            admin_state_up: true,
            monitor_port: None,
            tags: vec!["ours".to_string()].into(),
            in_error: false,
        }
    }

    fn parent<'a>(status: &'a str, updated: Option<&'a str>, ids: &[&'a str]) -> Parent<'a> {
        Parent { id: "pool-1", provisioning_status: status, updated_at: updated, child_ids: ids.to_vec() }
    }

    #[test]
    fn desired_and_read_children_have_one_digest_whatever_the_order() {
        let desired = ChildrenDigest::of_rules(&[rule("/api"), rule("/web")]);
        assert_eq!(desired, ChildrenDigest::of_read_rules(&[read_rule("r2", "/web"), read_rule("r1", "/api")]));
        assert_ne!(desired, ChildrenDigest::of_read_rules(&[read_rule("r1", "/api")]), "a rule less");
        assert_ne!(desired, ChildrenDigest::of_rules(&[rule("/api"), rule("/webs")]), "a value edited");
        assert_ne!(
            ChildrenDigest::of_rules(&[rule("/a"), rule("b")]),
            ChildrenDigest::of_rules(&[rule("/ab")]),
            "lines do not run into each other"
        );
        let members = [member("10.0.0.1", 1), member("10.0.0.2", 1)];
        let read = [read_member("10.0.0.2", 1), read_member("10.0.0.1", 1)];
        let ours = |m: &ActualMember| m.tags.iter().any(|t| t == "ours");
        assert_eq!(Some(ChildrenDigest::of_members(&members)), ChildrenDigest::of_read_members(&read, ours));
        let reweighted = [read_member("10.0.0.2", 1), read_member("10.0.0.1", 0)];
        assert_ne!(Some(ChildrenDigest::of_members(&members)), ChildrenDigest::of_read_members(&reweighted, ours));
    }

    #[test]
    fn a_pool_with_a_member_not_ours_or_disabled_gets_no_digest() {
        let ours = |m: &ActualMember| m.tags.iter().any(|t| t == "ours");
        let mut foreign = read_member("10.0.0.9", 1);
        foreign.tags = vec!["someone-else".to_string()].into();
        assert_eq!(ChildrenDigest::of_read_members(&[read_member("10.0.0.1", 1), foreign], ours), None);
        let mut down = read_member("10.0.0.1", 1);
        down.admin_state_up = false;
        assert_eq!(ChildrenDigest::of_read_members(&[down], ours), None);
        let mut broken = read_member("10.0.0.1", 1);
        broken.in_error = true;
        assert_eq!(ChildrenDigest::of_read_members(&[broken], ours), None);
    }

    #[test]
    fn the_digest_is_stable_across_builds() {
        // Stamps outlive the process: a new release must read the old ones the same way.
        assert_eq!(ChildrenDigest::of_lines(Vec::new()).0, 0xcbf2_9ce4_8422_2325);
        assert_eq!(ChildrenDigest::of_lines(["a".to_string()]).0, {
            let mut h = Fnv::default();
            h.write(b"a\0");
            h.0
        });
        let mut h = Fnv::default();
        h.write(b"a");
        assert_eq!(h.0, 0xaf63_dc4c_8601_ec8c, "FNV-1a test vector");
    }

    const T1: &str = "2026-11-26T06:00:01";
    const T2: &str = "2026-11-26T06:00:02";

    #[test]
    fn a_stamp_is_trusted_only_while_the_parent_is_unchanged_and_the_children_are_the_desired_ones() {
        let want = ChildrenDigest::of_members(&[member("10.0.0.1", 1)]);
        let stamp = Stamp::of_read(&parent("ACTIVE", Some(T1), &["m1"]), want).unwrap();
        let other = ChildrenDigest::of_members(&[member("10.0.0.1", 0)]);
        let cases: Vec<(&str, Parent<'_>, ChildrenDigest, bool)> = vec![
            ("unchanged", parent("ACTIVE", Some(T1), &["m1"]), want, true),
            ("desired state changed since", parent("ACTIVE", Some(T1), &["m1"]), other, false),
            ("written since (by us or by hand)", parent("ACTIVE", Some(T2), &["m1"]), want, false),
            ("being written", parent("PENDING_UPDATE", Some(T1), &["m1"]), want, false),
            ("in ERROR", parent("ERROR", Some(T1), &["m1"]), want, false),
            ("a member replaced", parent("ACTIVE", Some(T1), &["m2"]), want, false),
            ("a member more", parent("ACTIVE", Some(T1), &["m1", "m2"]), want, false),
        ];
        for (what, p, desired, trusted) in cases {
            assert_eq!(stamp.trusts(&p, desired), trusted, "{what}");
        }
        // The weight changed A -> B -> A case: B was written after the stamp, so updated_at moved.
        assert!(!stamp.trusts(&parent("ACTIVE", Some(T2), &["m1"]), want));
    }

    #[test]
    fn a_stamp_reads_back_as_written_and_a_damaged_one_is_no_stamp() {
        let d = ChildrenDigest::of_rules(&[rule("/api")]);
        let stamp = Stamp::of_read(&parent("ACTIVE", Some(T1), &["r1"]), d).unwrap();
        assert_eq!(Stamp::parse(&stamp.to_string()), Some(stamp.clone()));
        for bad in ["", T1, "2026-11-26T06:00:01 zz 00", &format!("{stamp} extra"), " 0 0"] {
            assert_eq!(Stamp::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn only_a_settled_parent_is_stamped() {
        let d = ChildrenDigest::of_members(&[]);
        assert!(Stamp::of_read(&parent("PENDING_UPDATE", Some(T1), &[]), d).is_none());
        assert!(Stamp::of_read(&parent("ACTIVE", None, &[]), d).is_none());
        assert!(Stamp::of_read(&parent("ACTIVE", Some(T1), &[]), d).is_some());
    }

    #[test]
    fn verification_reads_a_few_trusted_parents_per_resync_and_covers_them_all() {
        let trusted: BTreeSet<&str> = ["a", "b", "c", "d", "e"].into_iter().collect();
        let mut v = Verifier::new(2);
        let rounds: Vec<Vec<&str>> = (0..3).map(|_| v.pick(&trusted)).collect();
        assert_eq!(rounds, vec![vec!["a", "b"], vec!["c", "d"], vec!["e", "a"]]);
        // A parent gone since is skipped; the turn goes on after the last one read.
        let fewer: BTreeSet<&str> = ["a", "c", "d"].into_iter().collect();
        assert_eq!(v.pick(&fewer), vec!["c", "d"]);
        assert_eq!(Verifier::new(10).pick(&fewer), vec!["a", "c", "d"], "never one parent twice per resync");
        assert!(Verifier::new(3).pick(&BTreeSet::new()).is_empty());
    }
}
