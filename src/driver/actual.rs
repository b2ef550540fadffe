//! A snapshot of the router's children as read from Octavia (foreign objects included): what
//! the diff compares the desired router with.

use std::net::IpAddr;

use super::object_id::ObjectId;
use super::ownership::Tags;

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
    /// 16 bytes for Octavia's UUIDs (see [`ObjectId`]).
    pub id: ObjectId,
    pub name: String,
    pub position: u32,
    /// One of Octavia's few words, held without a heap block (see [`word`]).
    pub action: Cow<'static, str>,
    pub redirect_pool_id: Option<ObjectId>,
    /// REDIRECT_PREFIX policies (HTTP→HTTPS redirects).
    pub redirect_prefix: Option<String>,
    /// REDIRECT_TO_URL policies (route redirects to a fixed URL).
    pub redirect_url: Option<String>,
    pub redirect_http_code: Option<u16>,
    pub admin_state_up: bool,
    /// Shared with the read cache when read through it (see [`super::read_cache`]).
    pub rules: std::sync::Arc<[ActualRule]>,
    /// Shared with the other objects of the read that carry the same tags (see [`TagSet`]).
    pub tags: Tags,
    /// provisioning_status ERROR: replaced by a new one (see [`plan_writes`](super::diff::plan_writes)).
    pub in_error: bool,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct ActualRule {
    pub id: ObjectId,
    /// Octavia's words for these are few: held without a heap block (see [`word`]).
    pub rule_type: Cow<'static, str>,
    pub compare_type: Cow<'static, str>,
    pub value: String,
    pub key: Option<String>,
    pub invert: bool,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct ActualPool {
    pub id: ObjectId,
    pub name: String,
    /// One of Octavia's few words (see [`word`]).
    pub lb_algorithm: Cow<'static, str>,
    /// Shared with the read cache when read through it (see [`super::read_cache`]).
    pub members: std::sync::Arc<[ActualMember]>,
    pub healthmonitor: Option<ActualHealthMonitor>,
    /// Shared like a policy's (see [`TagSet`]).
    pub tags: Tags,
    /// provisioning_status ERROR: replaced by a new one (see [`plan_writes`](super::diff::plan_writes)).
    pub in_error: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ActualMember {
    /// 16 bytes for Octavia's UUIDs (see [`ObjectId`](super::object_id::ObjectId)).
    pub id: super::object_id::ObjectId,
    /// Only when it is not `address:port` (see [`MemberName`](super::plan::MemberName)).
    pub name: super::plan::MemberName,
    pub address: IpAddr,
    pub protocol_port: u16,
    pub weight: u16,
    pub backup: bool,
    pub admin_state_up: bool,
    /// Octavia `monitor_port` (None: the member's own port is probed).
    pub monitor_port: Option<u16>,
    /// Shared with the pool's other members that carry the same tags (see [`share_tags`]).
    pub tags: Tags,
    /// provisioning_status ERROR: rewritten by the next batch update.
    pub in_error: bool,
}

impl ActualMember {
    /// Member `id` as a batch update that names it as `spec` leaves it: every field written, out
    /// of ERROR.
    pub(crate) fn written(id: super::object_id::ObjectId, spec: super::plan::MemberSpec) -> Self {
        let super::plan::MemberSpec {
            name,
            address,
            protocol_port,
            weight,
            backup,
            admin_state_up,
            monitor_port,
            tags,
        } = spec;
        Self { id, name, address, protocol_port, weight, backup, admin_state_up, monitor_port, tags, in_error: false }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct ActualHealthMonitor {
    pub id: String,
    pub spec: HealthMonitorSpec,
    pub tags: Vec<String>,
}

/// Makes members with equal tags share one copy of them (Octavia returns a copy per member).
pub(crate) fn share_tags(members: &mut [ActualMember]) {
    let mut seen: Vec<Tags> = Vec::new();
    for m in members {
        match seen.iter().find(|t| **t == m.tags) {
            Some(t) => m.tags = t.clone(),
            None => seen.push(m.tags.clone()),
        }
    }
}

/// One copy of each distinct tag list of a read: Octavia returns a copy per object, and the
/// policies of one Ingress, or the pools of one Service, carry the same tags.
#[derive(Default)]
pub struct TagSet(std::collections::HashMap<Vec<String>, Tags>);

impl TagSet {
    pub fn share(&mut self, tags: Vec<String>) -> Tags {
        self.0.entry(tags).or_insert_with_key(|t| Tags::from(t.as_slice())).clone()
    }
}

use crate::model::HealthMonitorSpec;
use std::borrow::Cow;

/// Octavia's words that the read back holds per object: L7 rule types and compare types, L7
/// policy actions, pool algorithms.
const OCTAVIA_WORDS: [&str; 21] = [
    "HOST_NAME",
    "PATH",
    "FILE_TYPE",
    "HEADER",
    "COOKIE",
    "SSL_CONN_HAS_CERT",
    "SSL_VERIFY_RESULT",
    "SSL_DN_FIELD",
    "EQUAL_TO",
    "STARTS_WITH",
    "ENDS_WITH",
    "CONTAINS",
    "REGEX",
    "REDIRECT_TO_POOL",
    "REDIRECT_PREFIX",
    "REDIRECT_TO_URL",
    "REJECT",
    "ROUND_ROBIN",
    "LEAST_CONNECTIONS",
    "SOURCE_IP",
    "SOURCE_IP_PORT",
];

/// A rule's type or compare type, a policy's action or a pool's algorithm as read: one of
/// Octavia's words is borrowed from a constant (each was a heap block per object: two per rule
/// × 30,000 rules, one per policy and per pool, at 10k Ingresses); any other text is kept as sent.
pub(crate) fn word(read: String) -> Cow<'static, str> {
    match OCTAVIA_WORDS.iter().find(|w| **w == read) {
        Some(w) => Cow::Borrowed(w),
        None => Cow::Owned(read),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn member(tags: &[&str]) -> ActualMember {
        ActualMember {
            id: "".into(),
            name: String::new().into(),
            address: "10.0.0.1".parse().unwrap(),
            protocol_port: 80,
            weight: 1,
            backup: false,
            admin_state_up: true,
            monitor_port: None,
            tags: tags.iter().map(|t| t.to_string()).collect::<Vec<_>>().into(),
            in_error: false,
        }
    }

    #[test]
    fn octavias_rule_words_are_held_without_a_heap_block_and_others_as_sent() {
        for sent in ["HOST_NAME", "PATH", "HEADER", "STARTS_WITH", "EQUAL_TO", "REGEX"] {
            let w = word(sent.to_string());
            assert!(matches!(w, Cow::Borrowed(_)), "{sent}");
            assert_eq!(w, sent);
        }
        let w = word("SOMETHING_NEW".to_string());
        assert!(matches!(&w, Cow::Owned(s) if s == "SOMETHING_NEW"));
        assert!(matches!(word("path".to_string()), Cow::Owned(_)), "only Octavia's spelling is a known word");
    }

    #[test]
    fn octavias_policy_actions_and_pool_algorithms_are_held_without_a_heap_block() {
        for sent in ["REDIRECT_TO_POOL", "REDIRECT_PREFIX", "REDIRECT_TO_URL", "REJECT", "ROUND_ROBIN", "SOURCE_IP"] {
            let w = word(sent.to_string());
            assert!(matches!(w, Cow::Borrowed(_)), "{sent}");
            assert_eq!(w, sent);
        }
        assert!(matches!(word("round_robin".to_string()), Cow::Owned(s) if s == "round_robin"));
    }

    #[test]
    fn a_read_keeps_one_copy_of_each_distinct_tag_list() {
        let tags = |t: &[&str]| t.iter().map(|t| t.to_string()).collect::<Vec<_>>();
        let mut set = TagSet::default();
        let a = set.share(tags(&["kuryr-l7-router", "ingress:ns/a"]));
        let a2 = set.share(tags(&["kuryr-l7-router", "ingress:ns/a"]));
        let b = set.share(tags(&["kuryr-l7-router", "ingress:ns/b"]));
        assert!(Arc::ptr_eq(&a, &a2));
        assert!(!Arc::ptr_eq(&a, &b));
        assert_eq!(&b[..], &tags(&["kuryr-l7-router", "ingress:ns/b"])[..]);
    }

    #[test]
    fn members_read_with_equal_tags_share_one_copy_and_others_keep_theirs() {
        let ours = ["kuryr-l7-router", "cluster:c1", "service:shop/web"];
        let mut members = vec![member(&ours), member(&["someone-else"]), member(&ours), member(&ours)];
        assert!(!Tags::ptr_eq(&members[0].tags, &members[2].tags));
        share_tags(&mut members);
        assert!(Tags::ptr_eq(&members[0].tags, &members[2].tags));
        assert!(Tags::ptr_eq(&members[0].tags, &members[3].tags));
        assert_eq!(&*members[1].tags, ["someone-else"]);
        assert_eq!(&*members[3].tags, ours);
    }
}
