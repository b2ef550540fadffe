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

    /// The Ingress `namespace/name`.
    pub fn ingress(namespace: &str, name: &str) -> Self {
        Self::new(INGRESS, namespace, name)
    }

    pub(crate) fn is_ingress(&self) -> bool {
        self.kind == INGRESS
    }

    /// The Service `namespace/name`.
    pub fn service(namespace: &str, name: &str) -> Self {
        Self::new(SERVICE, namespace, name)
    }

    pub(crate) fn is_service(&self) -> bool {
        self.kind == SERVICE
    }
}

/// [`KubeRef::kind`] of an Ingress.
pub(crate) const INGRESS: &str = "Ingress";
/// [`KubeRef::kind`] of a Service.
pub(crate) const SERVICE: &str = "Service";

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
    /// A request header, named by [`Rule::key`].
    Header,
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
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Rule {
    #[serde(rename = "type")]
    pub rule_type: RuleType,
    pub compare_type: CompareType,
    pub value: String,
    #[serde(default)]
    pub invert: bool,
    /// The header name of a [`RuleType::Header`] rule (Octavia's `key`); `None` for the others.
    #[serde(default)]
    pub key: Option<String>,
}

/// One L7 policy on the router's listener: REDIRECT_TO_POOL to [`Policy::pool`], or, when
/// [`Policy::redirect`] is set, a redirect.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    /// Unique, stable key on the router (see module docs).
    pub name: String,
    /// 1-based; Octavia evaluates policies by ascending position, first match wins.
    pub position: u32,
    /// Name of the pool (a key of [`DesiredRouter::pools`]); empty for a redirect.
    pub pool: String,
    pub rules: Vec<Rule>,
    /// The Ingress this policy comes from.
    pub owner: KubeRef,
    /// Human-readable origin, e.g. `foo.bar.com Prefix /api`.
    pub description: String,
    /// The redirect this policy answers with instead of a pool (Gateway API `RequestRedirect`).
    #[serde(default)]
    pub redirect: Option<PolicyRedirect>,
}

/// A redirect action of a policy.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyRedirect {
    pub target: RedirectTarget,
    /// `redirect_http_code`: 301, 302, 303, 307 or 308.
    pub code: u16,
}

/// Where a redirect sends the client.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RedirectTarget {
    /// REDIRECT_PREFIX: `scheme://host[:port]`, haproxy appends the request's path and query.
    Prefix(String),
    /// REDIRECT_TO_URL: exactly this URL.
    Url(String),
}

/// The reserved pool answering 404 (no route matches): the listeners' default pool when no
/// Ingress sets a default backend and a status responder is configured. Reserved names never
/// collide with Service pools, which are `<namespace>_<service>` (namespaces have no `_`).
pub const NOT_FOUND_POOL: &str = "kuryr-status-404";
/// The reserved pool answering 503 for routes whose backend cannot be served (Service missing,
/// ExternalName, unknown port, not a Service): the status responder's 503 port, or no members
/// (haproxy's own 503) when no responder is configured.
pub const UNAVAILABLE_POOL: &str = "kuryr-status-503";
/// The reserved pool answering 500 for Gateway API rules whose backendRefs are all invalid or not
/// permitted (the spec's answer): the status responder's 500 port, or no members (haproxy's 503)
/// when no responder is configured. It exists only while a route needs it.
pub const SERVER_ERROR_POOL: &str = "kuryr-status-500";

/// One backend member of a pool.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Member {
    pub address: IpAddr,
    pub protocol_port: u16,
    /// Octavia weight 0..=256 (0 drains).
    pub weight: u16,
    #[serde(default)]
    pub backup: bool,
    /// Boxed, like [`target`](Self::target): a `String`'s capacity word × 100,000 members at
    /// 10k Ingresses, in a desired router held twice while a Sync compares it with the last.
    #[serde(default)]
    pub zone: Option<Box<str>>,
    /// Pod (targetRef) name when known, or the Node's name for a node-port member; informative
    /// only. Moved from the endpoint's digest.
    #[serde(default)]
    pub target: Option<Box<str>>,
    /// Octavia `monitor_port`: where the pool's health monitor probes this member instead of
    /// `protocol_port` (node-port members of an `externalTrafficPolicy: Local` Service: the
    /// Service's `healthCheckNodePort`). None: the member's own port.
    #[serde(default)]
    pub monitor_port: Option<u16>,
}

/// Where a pool's members come from (`[octavia_defaults] member_mode`, or a Service's
/// `kuryr-l7-router.openstack.org/member-mode` annotation where the operator allows it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum MemberMode {
    /// Pod IPs from the EndpointSlices, routed (no `subnet_id` on the member).
    #[default]
    L3,
    /// Pod IPs from the EndpointSlices, each member on `[neutron_defaults] pod_subnet`.
    L2,
    /// The Ready, schedulable nodes of the node pool on the Service's node port: pod churn is
    /// no Octavia write (kube-proxy follows the pods).
    NodePort,
}

impl MemberMode {
    pub fn as_str(self) -> &'static str {
        match self {
            MemberMode::L3 => "L3",
            MemberMode::L2 => "L2",
            MemberMode::NodePort => "NodePort",
        }
    }
}

impl std::fmt::Display for MemberMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One Service port of a pool that several feed (a weighted split), with its share.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct PoolFeed {
    pub service: KubeRef,
    /// The Service port (name if named, else number), as [`Pool::service_port`].
    pub service_port: String,
    /// Its share of the pool's requests, relative to the other feeds' (never 0: a backend with
    /// weight 0 gets no traffic and feeds nothing).
    pub weight: u32,
}

/// One pool, fed by one (Service, port), or by several with weights ([`Pool::split`]).
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
    /// A split pool's feeds, sorted (empty: the pool is fed by `service` alone). `service` and
    /// `service_port` are then the first feed's (the pool's owner tag and health monitor).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub split: Vec<PoolFeed>,
    /// Where the members come from: NodePort when any feed is served by node ports (a Node
    /// change then refills the pool), else the pod addressing of the instance.
    #[serde(default)]
    pub member_mode: MemberMode,
}

impl Pool {
    /// The Services whose endpoints fill the pool: its split's, or its one Service.
    pub(crate) fn feeders(&self) -> Vec<&KubeRef> {
        if self.split.is_empty() { vec![&self.service] } else { self.split.iter().map(|f| &f.service).collect() }
    }
}

/// A pool's Octavia health monitor: `[octavia_defaults] health_monitor*` for every pool, or a
/// Service's `kuryr-l7-router.openstack.org/health-monitor` annotation for its pools.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HealthMonitorSpec {
    /// HTTP, HTTPS, TCP or PING.
    pub monitor_type: String,
    /// Seconds between probes (never less than `timeout`).
    pub delay: u32,
    pub timeout: u32,
    /// Successful probes before a member is ONLINE (1..10).
    pub max_retries: u32,
    /// HTTP(S) only.
    #[serde(default)]
    pub url_path: Option<String>,
    #[serde(default)]
    pub expected_codes: Option<String>,
}

impl Default for HealthMonitorSpec {
    /// Octavia's usual HTTP monitor, as `[octavia_defaults] health_monitor*` defaults.
    fn default() -> Self {
        Self {
            monitor_type: "HTTP".into(),
            delay: 5,
            timeout: 3,
            max_retries: 3,
            url_path: Some("/".into()),
            expected_codes: Some("200".into()),
        }
    }
}

/// What a Service's health-monitor annotation asks for its pools.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PoolHealthMonitor {
    /// A valid annotation: this monitor, created or updated in place.
    Custom(HealthMonitorSpec),
    /// An invalid annotation (a Warning names it): the monitor the pool has is left as it is (a
    /// typo never changes a running health check); a pool without one gets the global default.
    KeepExisting,
}

/// A problem found while translating; never fatal for other objects.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Warning {
    /// The object the warning is about (becomes the Kubernetes Event's involvedObject).
    pub object: KubeRef,
    /// Why (the Event's reason, e.g. `InvalidPath`, `ServiceNotFound`), typed: what it implies
    /// (Event type, conflict, route condition) is the reason's, not its text's.
    pub reason: crate::reason::Reason,
    /// Full sentence naming the object, the rule and why.
    pub message: String,
}

/// Everything the router should contain.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DesiredRouter {
    /// In position order (position == index + 1).
    pub policies: Vec<Policy>,
    /// The listener's default pool: from an Ingress `spec.defaultBackend`, else
    /// [`NOT_FOUND_POOL`] when a status responder is configured, else none (Octavia's 503).
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
    /// The TERMINATED_HTTPS listener, once any Ingress of ours has `spec.tls`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub https: Option<HttpsListener>,
    /// HTTP→HTTPS redirects on the HTTP listener, by host.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redirects: Vec<Redirect>,
    /// More HTTP listeners, by port (a Gateway with HTTP listeners on several ports): each one
    /// an Octavia HTTP listener of its own beside the router's HTTP listener, sharing its pools.
    /// Ingress routers have none.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub more_http: BTreeMap<u16, PortListener>,
    /// More TERMINATED_HTTPS listeners, by port (a Gateway with HTTPS listeners on several
    /// ports, each with its own client validation), beside [`Self::https`] and sharing the
    /// router's pools. Ingress routers have none.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub more_https: BTreeMap<u16, HttpsListener>,
    /// Per-pool health monitors from Service annotations, by pool name; a pool not listed gets
    /// the global `[octavia_defaults] health_monitor*` (or none).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub health_monitors: BTreeMap<String, PoolHealthMonitor>,
    /// What the project's Octavia quota leaves for the router's L7 policies and rules, with our
    /// Ingresses oldest first: the driver creates routes that are not on the router yet within
    /// it, oldest Ingress first, and never removes a route for it (see `driver::admission`).
    /// `None`: unlimited, or not read yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quota: Option<RouterQuota>,
    /// A router of a set that holds no group: since when (Unix seconds). The driver records it
    /// as a tag on the load balancer, where a new leader finds it at start (`None`: not empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub empty_since: Option<u64>,
}

// The project quota of a router's L7 policies and rules (computed in `translate::budget`,
// applied in `driver::admission`): part of the desired router, hence here.

/// What the router may hold; `None`: unlimited.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Budget {
    pub l7policies: Option<u64>,
    pub l7rules: Option<u64>,
}

/// Octavia objects counted by the l7policy and l7rule quotas.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    pub l7policies: u64,
    pub l7rules: u64,
}

impl Budget {
    /// No limit. A router of a scale-out set gets it until its driver has read its own budget:
    /// the desired state still carries the age order, so that the driver admits a new router's
    /// routes within the room it reads before creating it (`driver::quota`).
    pub const UNLIMITED: Budget = Budget { l7policies: None, l7rules: None };

    /// The tighter of two budgets, limit by limit (`None` is unlimited).
    pub fn tighter(self, other: Budget) -> Budget {
        let min = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        Budget { l7policies: min(self.l7policies, other.l7policies), l7rules: min(self.l7rules, other.l7rules) }
    }

    /// From the project's quotas (`-1`: unlimited, Octavia's convention; `None`: not set) and
    /// what the project's other load balancers use. `None` when neither is limited.
    pub fn from_quota(policies: Option<i64>, rules: Option<i64>, elsewhere: Usage) -> Option<Self> {
        let left = |quota: Option<i64>, used: u64| {
            quota.filter(|q| *q >= 0).map(|q| u64::try_from(q).unwrap_or(0).saturating_sub(used))
        };
        let b = Budget { l7policies: left(policies, elsewhere.l7policies), l7rules: left(rules, elsewhere.l7rules) };
        (b != Budget::default()).then_some(b)
    }

    pub fn fits(&self, u: Usage) -> bool {
        self.l7policies.is_none_or(|m| u.l7policies <= m) && self.l7rules.is_none_or(|m| u.l7rules <= m)
    }
}

impl Usage {
    /// The L7 policies and rules the router needs: every listener's policies (the HTTP and
    /// HTTPS listeners, and a Gateway router's more listeners) and the redirects.
    pub fn of(r: &DesiredRouter) -> Usage {
        let https = r.https.iter().chain(r.more_https.values()).flat_map(|h| &h.policies);
        let more_http = r.more_http.values().flat_map(|l| &l.policies);
        let policies = r.policies.iter().chain(https).chain(more_http);
        let (mut n, mut rules) = (0u64, 0u64);
        for p in policies {
            n += 1;
            rules += p.rules.len() as u64;
        }
        for red in &r.redirects {
            n += 1;
            rules += red.rules.len() as u64;
        }
        Usage { l7policies: n, l7rules: rules }
    }
}

/// The budget as the driver applies it: the limits, and our Ingresses oldest first (the order
/// in which their new routes are admitted).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RouterQuota {
    pub budget: Budget,
    pub oldest_first: Vec<KubeRef>,
}

/// What a Kubernetes TLS Secret holds now, checked. The key material stays inside
/// [`CertificateContent::parsed`]: it is never serialised (plan output, logs) and `Debug` shows
/// only the public facts. Two contents are equal when their content ids are.
#[derive(Clone, Serialize, Deserialize)]
pub struct CertificateContent {
    /// Subject of the leaf certificate.
    pub subject: String,
    /// SHA-256 of the leaf certificate (DER), hex.
    pub fingerprint: String,
    /// End of validity of the leaf, RFC 3339.
    pub not_after: String,
    /// Certificates in `tls.crt` (leaf + chain).
    pub chain_len: usize,
    /// Identifies the whole content (chain and key): names its Barbican secret, so a renewed
    /// certificate gets a new secret.
    pub content_id: String,
    #[serde(skip)]
    parsed: Option<std::sync::Arc<crate::certificate::ParsedCertificate>>,
}

impl CertificateContent {
    pub fn new(parsed: std::sync::Arc<crate::certificate::ParsedCertificate>) -> Self {
        Self {
            subject: parsed.subject().to_string(),
            fingerprint: parsed.sha256_fingerprint().to_string(),
            not_after: parsed.not_after_rfc3339(),
            chain_len: parsed.certificates().len(),
            content_id: parsed.content_id().to_string(),
            parsed: Some(parsed),
        }
    }

    /// The parsed certificate and key. Panics on a content read back from JSON (which never
    /// carries key material): only translated contents are written to Barbican.
    pub fn parsed(&self) -> &crate::certificate::ParsedCertificate {
        self.parsed.as_deref().expect("certificate content was translated, not deserialised")
    }

    /// The subject, for messages.
    pub fn subject(&self) -> &str {
        &self.subject
    }
}

impl PartialEq for CertificateContent {
    fn eq(&self, other: &Self) -> bool {
        self.content_id == other.content_id
    }
}
impl Eq for CertificateContent {}

impl std::fmt::Debug for CertificateContent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CertificateContent")
            .field("subject", &self.subject)
            .field("fingerprint", &self.fingerprint)
            .field("not_after", &self.not_after)
            .field("content_id", &self.content_id)
            .finish_non_exhaustive()
    }
}

/// One certificate of the HTTPS listener: one Kubernetes TLS Secret.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Certificate {
    /// `<namespace>_<secret>`: unique key on the router.
    pub name: String,
    /// The Kubernetes Secret (`kubernetes.io/tls`).
    pub secret: KubeRef,
    /// TLS hosts served with it (from `spec.tls[].hosts`), sorted.
    pub hosts: Vec<String>,
    /// The Ingresses naming it.
    pub owners: Vec<KubeRef>,
    /// None when the Secret is missing or broken: the driver keeps the last good content it
    /// stored for this certificate, if any (a Warning says why).
    pub content: Option<CertificateContent>,
}

/// The TERMINATED_HTTPS listener, present once any Ingress of ours has `spec.tls`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HttpsListener {
    pub port: u16,
    /// Keyed by certificate name; each one is an SNI certificate of the listener.
    pub certificates: BTreeMap<String, Certificate>,
    /// The certificate served when SNI matches none (`default_tls_container_ref`).
    pub default_certificate: String,
    /// The TLS hosts' routes (and host-less ones), in position order, sharing the HTTP pools.
    pub policies: Vec<Policy>,
    /// Same as the HTTP listener's.
    pub default_pool: Option<String>,
    /// Client-certificate validation (Gateway `spec.tls.frontend`): Octavia's
    /// `client_ca_tls_container_ref` + `client_authentication` on this listener.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_validation: Option<ClientValidation>,
}

/// How an HTTPS listener checks client certificates against a CA bundle.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientValidation {
    pub ca: CaBundle,
    pub mode: ClientAuthentication,
}

/// Octavia `client_authentication` of a listener that validates client certificates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ClientAuthentication {
    /// Gateway `AllowValidOnly`: a valid client certificate is required.
    Mandatory,
    /// Gateway `AllowInsecureFallback`: a client certificate is asked for, not required.
    Optional,
}

impl ClientAuthentication {
    /// Octavia's value.
    pub fn as_octavia(self) -> &'static str {
        match self {
            ClientAuthentication::Mandatory => "MANDATORY",
            ClientAuthentication::Optional => "OPTIONAL",
        }
    }
}

/// The CA certificate(s) client certificates are checked against: public material, stored in
/// Barbican as the listener's `client_ca_tls_container_ref`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CaBundle {
    /// `<namespace>_<configmap>`: unique key on the router, like [`Certificate::name`].
    pub name: String,
    /// The ConfigMap (or Secret) it came from.
    pub source: KubeRef,
    /// The CA certificate(s), PEM.
    pub pem: String,
    /// SHA-256 of `pem`, hex: what the driver compares (a new content is a new Barbican secret).
    pub content_id: String,
}

/// One more HTTP listener of the router ([`DesiredRouter::more_http`]), on its own port.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortListener {
    /// In position order, sharing the router's pools.
    pub policies: Vec<Policy>,
    /// Same as the HTTP listener's.
    pub default_pool: Option<String>,
}

/// An HTTP→HTTPS redirect (Octavia REDIRECT_PREFIX policy on the HTTP listener).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Redirect {
    /// `redirect:<host>`: unique among the HTTP listener's policies.
    pub name: String,
    pub host: String,
    /// The host's rule and an inverted ACME-challenge path rule.
    pub rules: Vec<Rule>,
    /// `https://<host>[:port]`: haproxy appends the path and query.
    pub prefix: String,
    /// `redirect_http_code`.
    pub code: u16,
    /// The certificate serving the host: no redirect while it has nothing to serve.
    pub certificate: String,
    pub owner: KubeRef,
}
