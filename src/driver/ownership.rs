//! Who we are on the router: the tags every object we create carries, and the test of whether an
//! object found on the router is ours (only ours are ever in a write).

use crate::model::KubeRef;

/// A member's tags, shared: every member of a pool carries the same tags, so the router as read
/// back and a plan's batch updates hold one copy per pool, not one per member (100,000 copies at
/// 100,000 endpoints).
pub type Tags = std::sync::Arc<[String]>;

/// The tag every object we create carries.
pub const PRODUCT_TAG: &str = "kuryr-l7-router";

/// Who we are on the router: objects carrying both [`PRODUCT_TAG`] and our cluster tag are ours.
///
/// `extra_tags` (`[neutron_defaults] resource_tags`) are added to every object we create, after
/// our own tags. They play no part in ownership: objects are found, adopted and garbage-collected
/// by [`Ownership::ownership_tags`] alone, so adding, changing or removing extra tags never makes
/// an object foreign nor duplicates the router. They are put on objects when they are created;
/// existing objects are not retagged (no write for a tag; the diff never compares tags).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ownership {
    pub cluster: String,
    pub extra_tags: Vec<String>,
    /// The controller instance's set tag ([`set_tag`] of its `l7_router_name`), put on every load
    /// balancer it creates: two instances in one cluster share the cluster tag, and this tells
    /// their load balancers apart. None: no set tag (tools that only read).
    pub set: Option<String>,
}

/// The prefix of the set tag: `router-set:<l7_router_name>`.
pub const SET_TAG_PREFIX: &str = "router-set:";

/// The prefix of the tag a router of a set carries while it holds no group: the Unix time it
/// became empty (`empty-since:<seconds>`), so that a new leader counts `empty_router_grace`
/// from then, not from its own start.
pub const EMPTY_SINCE_TAG_PREFIX: &str = "empty-since:";

/// When a load balancer with `tags` became empty, by its [`EMPTY_SINCE_TAG_PREFIX`] tag (an
/// unreadable one counts as none: the grace starts again, never shorter).
pub fn empty_since(tags: &[String]) -> Option<u64> {
    tags.iter().find_map(|t| t.strip_prefix(EMPTY_SINCE_TAG_PREFIX)?.parse().ok())
}

/// A load balancer of this instance's set found on Octavia: its name, and since when it has
/// been empty (its [`EMPTY_SINCE_TAG_PREFIX`] tag).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FoundRouter {
    pub name: String,
    pub empty_since: Option<u64>,
    /// Of this cluster and named as a router of the set, but without our set tag (made before
    /// set tags): a new group is not placed there unless a placement names it.
    pub untagged: bool,
}

impl From<&str> for FoundRouter {
    fn from(name: &str) -> Self {
        Self { name: name.to_string(), empty_since: None, untagged: false }
    }
}

/// Octavia's limit on one tag.
const MAX_TAG_LEN: usize = 255;

/// The set tag of the instance whose `l7_router_name` is `name`: `router-set:<name>`, or, when
/// that is longer than Octavia's 255 characters, `router-set:` and a hash of the name (a cut
/// would let two long names that share their start collide).
pub fn set_tag(name: &str) -> String {
    let tag = format!("{SET_TAG_PREFIX}{name}");
    if tag.len() <= MAX_TAG_LEN {
        return tag;
    }
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    format!("{SET_TAG_PREFIX}#{h:016x}")
}

/// Which controller instance a load balancer of our cluster belongs to, by its set tag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetMark {
    /// Our set tag.
    Ours,
    /// Another instance's set tag: never adopted, never deleted.
    Other,
    /// No set tag: created before set tags existed. Adopted by name as before, never deleted
    /// automatically.
    Untagged,
}

impl Ownership {
    pub fn new(cluster: &str) -> Self {
        Self { cluster: cluster.to_string(), extra_tags: Vec::new(), set: None }
    }

    /// With the set tag of the instance whose `l7_router_name` is `name` on every load
    /// balancer it creates (and on its listeners and floating IPs, which carry the router's tags).
    pub fn with_set(mut self, name: &str) -> Self {
        self.set = Some(set_tag(name));
        self
    }

    /// Which instance a load balancer with `tags` belongs to (any load balancer is [`SetMark::Ours`]
    /// when we have no set tag).
    pub fn set_mark(&self, tags: &[String]) -> SetMark {
        let Some(ours) = &self.set else { return SetMark::Ours };
        if tags.contains(ours) {
            SetMark::Ours
        } else if tags.iter().any(|t| t.starts_with(SET_TAG_PREFIX)) {
            SetMark::Other
        } else {
            SetMark::Untagged
        }
    }

    /// With `tags` added to every object we create (duplicates and our own tags dropped).
    pub fn with_extra_tags(mut self, tags: &[String]) -> Self {
        let own = self.ownership_tags();
        self.extra_tags.clear();
        for t in tags {
            // A set tag among the extra tags would make our load balancers look like another
            // instance's.
            if !own.contains(t) && !self.extra_tags.contains(t) && !t.starts_with(SET_TAG_PREFIX) {
                self.extra_tags.push(t.clone());
            }
        }
        self
    }

    /// The tags that say "ours" ([`PRODUCT_TAG`], cluster): what finding our router and our
    /// objects filters by.
    pub fn ownership_tags(&self) -> Vec<String> {
        vec![PRODUCT_TAG.to_string(), self.cluster_tag()]
    }

    pub(crate) fn cluster_tag(&self) -> String {
        format!("cluster:{}", self.cluster)
    }

    /// The tags of an object owned by `owner` (an Ingress for policies, a Service for pools).
    /// Plus the extra tags.
    pub fn tags_for(&self, owner: &KubeRef) -> Vec<String> {
        let mut tags = vec![PRODUCT_TAG.to_string(), self.cluster_tag(), owner_tag(owner)];
        tags.extend(self.extra_tags.iter().filter(|t| **t != tags[2]).cloned().collect::<Vec<_>>());
        tags
    }

    /// The tags that mark the router itself (load balancer, listeners, floating IP): the
    /// ownership tags, the set tag and the extra tags.
    pub fn router_tags(&self) -> Vec<String> {
        let mut tags = self.ownership_tags();
        tags.extend(self.set.iter().cloned());
        tags.extend(self.extra_tags.iter().cloned());
        tags
    }

    /// The tags the load balancer of one of our routers should carry, given its `tags` now:
    /// our set tag added when it has none (a router made before set tags existed, that this
    /// instance converges, so a placement of ours names it), and the [`EMPTY_SINCE_TAG_PREFIX`]
    /// tag set to `empty_since` (or removed). `None` when they are right already, when the
    /// load balancer carries another instance's set tag (never ours to retag), or when `tags`
    /// lack our ownership tags.
    pub fn load_balancer_tags(&self, tags: &[String], empty_since: Option<u64>) -> Option<Vec<String>> {
        // Tags without ours (not read, or not ours): never rewritten, so never lost.
        if self.set_mark(tags) == SetMark::Other || !self.owns(tags) {
            return None;
        }
        let mut want: Vec<String> = tags.iter().filter(|t| !t.starts_with(EMPTY_SINCE_TAG_PREFIX)).cloned().collect();
        if let Some(set) = &self.set
            && !want.contains(set)
        {
            want.push(set.clone());
        }
        want.extend(empty_since.map(|s| format!("{EMPTY_SINCE_TAG_PREFIX}{s}")));
        (want != tags).then_some(want)
    }

    pub fn owns(&self, tags: &[String]) -> bool {
        // Compared in place, not against a formatted `cluster_tag()`: a plan asks this of every
        // object of the router (a 10k-Ingress resync: 160,000 calls, a fifth of its time when
        // each call formatted the tag).
        let is_cluster = |t: &String| t.strip_prefix("cluster:").is_some_and(|c| c == self.cluster);
        tags.iter().any(|t| t == PRODUCT_TAG) && tags.iter().any(is_cluster)
    }
}

/// Owner-tag prefixes of the route kinds: a policy tagged with one belongs to that route, and
/// goes when the route has no policy left (`diff::removal_only`).
pub const ROUTE_OWNER_TAG_PREFIXES: [&str; 2] = ["ingress:", "httproute:"];

/// Whether `tag` names a route (an Ingress or an HTTPRoute) as the owner.
pub(crate) fn is_route_owner_tag(tag: &str) -> bool {
    ROUTE_OWNER_TAG_PREFIXES.iter().any(|p| tag.starts_with(p))
}

/// `ingress:<ns>/<name>`, `httproute:<ns>/<name>` or `service:<ns>/<name>`; Octavia tags are at most 255 characters and
/// Kubernetes names at most 253, so long names are cut (the tag is informative; identity is the
/// object name).
pub(crate) fn owner_tag(owner: &KubeRef) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extra_tags_are_added_but_ownership_ignores_them() {
        let svc = KubeRef::new("Service", "shop", "web");
        let plain = Ownership::new("c1");
        let extra = ["team=edge", "kuryr-l7-router", "env:prod", "team=edge", "service:shop/web"].map(String::from);
        let own = Ownership::new("c1").with_extra_tags(&extra);
        assert_eq!(own.ownership_tags(), ["kuryr-l7-router", "cluster:c1"]);
        assert_eq!(own.router_tags(), ["kuryr-l7-router", "cluster:c1", "team=edge", "env:prod", "service:shop/web"]);
        assert_eq!(own.tags_for(&svc), ["kuryr-l7-router", "cluster:c1", "service:shop/web", "team=edge", "env:prod"]);
        // Objects created before the extra tags were set, and after: ours either way, for both.
        for tags in [plain.tags_for(&svc), own.tags_for(&svc), plain.router_tags(), own.router_tags()] {
            assert!(own.owns(&tags) && plain.owns(&tags), "{tags:?}");
        }
        assert!(!own.owns(&["team=edge".to_string(), "env:prod".to_string()]), "extra tags alone are not ours");
        assert_eq!(plain.ownership_tags(), own.ownership_tags(), "finding the router does not depend on them");
    }

    /// The set tag names the instance, is on the router's tags only (children keep their
    /// ownership), tells our load balancers from another instance's and from untagged ones, and
    /// stays within Octavia's 255 characters.
    #[test]
    fn a_routers_load_balancer_gets_the_set_tag_and_its_empty_since_tag() {
        let own = Ownership::new("c1").with_set("edge");
        let tags = |v: &[&str]| v.iter().map(|t| t.to_string()).collect::<Vec<_>>();
        // Made before set tags: the set tag is added, the others kept.
        let old = tags(&["kuryr-l7-router", "cluster:c1", "team:a"]);
        assert_eq!(
            own.load_balancer_tags(&old, None).unwrap(),
            tags(&["kuryr-l7-router", "cluster:c1", "team:a", "router-set:edge"])
        );
        let tagged = tags(&["kuryr-l7-router", "cluster:c1", "router-set:edge"]);
        assert_eq!(own.load_balancer_tags(&tagged, None), None, "right already: no write");
        let empty = own.load_balancer_tags(&tagged, Some(1700)).unwrap();
        assert_eq!(empty, tags(&["kuryr-l7-router", "cluster:c1", "router-set:edge", "empty-since:1700"]));
        assert_eq!(empty_since(&empty), Some(1700));
        assert_eq!(own.load_balancer_tags(&empty, Some(1700)), None, "the same time: no write");
        assert_eq!(own.load_balancer_tags(&empty, None).unwrap(), tagged, "used again: the tag goes");
        let other = tags(&["kuryr-l7-router", "cluster:c1", "router-set:other"]);
        assert_eq!(own.load_balancer_tags(&other, Some(5)), None, "another instance's: never retagged");
        assert_eq!(empty_since(&tags(&["empty-since:soon"])), None);
        assert_eq!(own.load_balancer_tags(&[], Some(5)), None, "tags not read: nothing rewritten");
    }

    #[test]
    fn the_set_tag_marks_the_instance_of_a_load_balancer() {
        let a = Ownership::new("c1").with_set("edge");
        let b = Ownership::new("c1").with_set("edge-2");
        assert_eq!(a.router_tags(), ["kuryr-l7-router", "cluster:c1", "router-set:edge"]);
        assert_eq!(a.tags_for(&KubeRef::new("Service", "shop", "web")).len(), 3, "children unchanged");
        assert_eq!(a.set_mark(&a.router_tags()), SetMark::Ours);
        assert_eq!(a.set_mark(&b.router_tags()), SetMark::Other);
        assert_eq!(a.set_mark(&Ownership::new("c1").router_tags()), SetMark::Untagged);
        assert!(a.owns(&b.router_tags()), "the children's ownership is the cluster's, as before");
        let long = "x".repeat(300);
        let tag = set_tag(&long);
        assert!(tag.len() <= 255 && tag.starts_with(SET_TAG_PREFIX), "{tag}");
        assert_ne!(tag, set_tag(&format!("{long}y")));
        assert_eq!(set_tag(&"y".repeat(244)).len(), 255, "not hashed when it fits");
        let extra = Ownership::new("c1").with_extra_tags(&["router-set:other".to_string()]);
        assert!(extra.extra_tags.is_empty(), "a set tag is never an extra tag");
    }
}
