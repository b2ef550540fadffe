//! The desired state of the L7 router: what the translation (pure) produces from Kubernetes
//! objects and what the driver converges Octavia to. No Kubernetes or OpenStack types here.
//!
//! Identity: every policy and pool has a `name` that is unique on the router and stable for the
//! same Kubernetes input; the driver matches Octavia objects to desired ones by that name (plus our
//! tags), so renaming is a delete + create.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::net::IpAddr;

/// A Kubernetes object by kind, namespace and name: the owner of Octavia objects and the subject
/// of warnings. Untyped, unlike kube's `ObjectRef<K>`, because the model knows no Kubernetes types.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct KubeRef {
    /// `Ingress`, `Service`, `IngressClass`, `EndpointSlice`, `Config`, ...
    pub kind: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    pub name: String,
}

impl KubeRef {
    pub fn new(kind: &str, namespace: &str, name: &str) -> Self {
        Self { kind: kind.into(), namespace: namespace.into(), name: name.into() }
    }
}

impl std::fmt::Display for KubeRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.namespace.is_empty() {
            write!(f, "{} {}", self.kind, self.name)
        } else {
            write!(f, "{} {}/{}", self.kind, self.namespace, self.name)
        }
    }
}

/// Octavia L7 rule `type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum RuleType {
    HostName,
    Path,
}

/// Octavia L7 rule `compare_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum CompareType {
    EqualTo,
    StartsWith,
    EndsWith,
    Contains,
    Regex,
}

/// One L7 rule; the rules of a policy are ANDed by Octavia.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Rule {
    #[serde(rename = "type")]
    pub rule_type: RuleType,
    pub compare_type: CompareType,
    pub value: String,
    #[serde(default)]
    pub invert: bool,
}

/// One L7 policy (action REDIRECT_TO_POOL) on the router's listener.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    /// Unique, stable key on the router (see module docs).
    pub name: String,
    /// 1-based; Octavia evaluates policies by ascending position, first match wins.
    pub position: u32,
    /// Name of the pool (a key of [`DesiredRouter::pools`]).
    pub pool: String,
    pub rules: Vec<Rule>,
    /// The Ingress this policy comes from.
    pub owner: KubeRef,
    /// Human-readable origin, e.g. `foo.bar.com Prefix /api`.
    pub description: String,
}

/// One backend member of a pool.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Member {
    pub address: IpAddr,
    pub protocol_port: u16,
    /// Octavia weight 0..=256 (0 drains).
    pub weight: u16,
    #[serde(default)]
    pub backup: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zone: Option<String>,
    /// Pod (targetRef) name when known; informative only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

/// One pool, fed by one (Service, port).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pool {
    /// `<namespace>_<service>` or `<namespace>_<service>_<port>`; unique key on the router.
    pub name: String,
    /// The Service whose endpoints fill the pool.
    pub service: KubeRef,
    /// The Service port (name if named, else number) the pool serves.
    pub service_port: String,
    /// Octavia `lb_algorithm` (ROUND_ROBIN, LEAST_CONNECTIONS, SOURCE_IP).
    pub lb_algorithm: String,
    /// Sorted by (address, port) so equal inputs give equal pools.
    pub members: Vec<Member>,
    /// Why members carry the weights they do (e.g. `zone-aware`, `even: no router zone`).
    pub weighting: String,
}

/// A problem found while translating; never fatal for other objects.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Warning {
    /// The object the warning is about (becomes the Kubernetes Event's involvedObject).
    pub object: KubeRef,
    /// Short CamelCase reason, e.g. `InvalidPath`, `ServiceNotFound` (the Event's reason).
    pub reason: String,
    /// Full sentence naming the object, the rule and why.
    pub message: String,
}

/// Everything the router should contain.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DesiredRouter {
    /// In position order (position == index + 1).
    pub policies: Vec<Policy>,
    /// The listener's default pool (from an Ingress `spec.defaultBackend`).
    pub default_pool: Option<String>,
    /// The Ingresses whose `spec.defaultBackend` names the Service of [`Self::default_pool`]
    /// (the oldest, which set it, and any other naming the same Service), sorted. They route to
    /// that Service, so its notice names them; recorded here so that the status side needs
    /// nothing but the desired state.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub default_pool_owners: Vec<KubeRef>,
    /// Keyed by pool name.
    pub pools: BTreeMap<String, Pool>,
    pub warnings: Vec<Warning>,
}
