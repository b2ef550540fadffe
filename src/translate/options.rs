//! What the translation reads: the configuration ([`TranslateOptions`]) and the Kubernetes
//! objects ([`Inputs`] owned; [`Snapshot`] shared with the caches; both read through a borrowed
//! [`View`]). A leaf of `translate`: every part may import it, it imports none of them (the parts
//! re-export their own option types from here).

use super::host_claims::HostClaim;
use super::slices::CompactSlice;
use k8s_openapi::api::core::v1::{Endpoints, Node, Secret, Service};
use k8s_openapi::api::networking::v1::{Ingress, IngressClass};
use serde::{Deserialize, Serialize};

use std::borrow::Borrow;
use std::sync::Arc;
use std::time::Duration;

/// `spec.controller` of the IngressClasses we serve.
pub const CONTROLLER: &str = "openstack.org/kuryr-l7-router";
/// Node label that names a node's pool (OpenYurt's NodePool design).
pub(crate) const DEFAULT_NODE_POOL_LABEL: &str = "apps.openyurt.io/nodepool";

/// How remote (other-zone) members are de-preferred when a pool is zone-aware.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ZoneMode {
    /// Remote members get a lower weight (never 0) so locals carry more, within the overload cap.
    #[default]
    Weight,
    /// Remote members are marked backup: only used when no local member is healthy. Needs a pool
    /// health monitor, otherwise Octavia never considers locals down.
    Backup,
}

pub use super::slices::IpFamily;

/// Everything the translation needs from the configuration (`wiring::translate_options` maps
/// kuryr.conf onto it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TranslateOptions {
    /// `[kubernetes] ingress_class`: the IngressClass name we own. When a node pool is configured
    /// and no class is, set this to the node-pool name (see [`TranslateOptions::for_node_pool`]).
    pub ingress_class: String,
    /// Always [`CONTROLLER`]; a field so tests can show that other controllers are ignored.
    pub controller: String,
    /// `[kubernetes] use_endpoint_slices`: members from EndpointSlices (true) or core Endpoints.
    pub use_endpoint_slices: bool,
    /// `[kubernetes] node_pool`: only endpoints on nodes of this pool become members.
    pub node_pool: Option<String>,
    /// `[kubernetes] node_pool_label`.
    pub node_pool_label: String,
    /// `[octavia_defaults] router_zone` (else `availability_zone`): the zone the router's traffic
    /// is considered to come from, matched against the nodes' zone labels.
    pub router_zone: Option<String>,
    /// `[octavia_defaults] zone_aware_default`: weigh every Service by zone, not only opted-in ones.
    pub zone_aware_default: bool,
    /// TAR overload threshold: no endpoint should expect more than (1 + this) times its even share.
    pub zone_overload_threshold: f64,
    /// Fewer local endpoints than this → even weights.
    pub zone_min_local_endpoints: u32,
    pub zone_mode: ZoneMode,
    /// Octavia pool `lb_algorithm`.
    pub lb_algorithm: String,
    pub vip_family: IpFamily,
    /// HTTPS listener and redirects (`[tls]`).
    #[serde(default)]
    pub tls: TlsOptions,
    /// Default backends and host ownership (`[kubernetes]`, see [`tenancy`]).
    #[serde(default)]
    pub tenancy: TenancyOptions,
    /// `[status_responder]`: the Service whose endpoints fill the reserved 404/503 pools; `None`:
    /// no responder (see `status`).
    #[serde(default)]
    pub status_responder: Option<StatusResponder>,
    /// `[octavia_defaults] health_monitor*` values: what a Service's health-monitor annotation
    /// does not say (whether or not the global monitor is enabled).
    #[serde(default)]
    pub health_monitor_defaults: crate::model::HealthMonitorSpec,
    /// `[octavia_defaults] member_mode`: pod IPs (L3, L2) or node ports (NodePort).
    #[serde(default)]
    pub member_mode: crate::model::MemberMode,
    /// `[octavia_defaults] member_mode_annotation`: a Service's
    /// `kuryr-l7-router.openstack.org/member-mode` annotation may switch its pools between L3
    /// and NodePort (see `translate::node_members`).
    #[serde(default)]
    pub member_mode_annotation: bool,
}

impl Default for TranslateOptions {
    fn default() -> Self {
        Self {
            ingress_class: "kuryr".into(),
            controller: CONTROLLER.into(),
            use_endpoint_slices: true,
            node_pool: None,
            node_pool_label: DEFAULT_NODE_POOL_LABEL.into(),
            router_zone: None,
            zone_aware_default: false,
            zone_overload_threshold: 0.2,
            zone_min_local_endpoints: 1,
            zone_mode: ZoneMode::Weight,
            lb_algorithm: "ROUND_ROBIN".into(),
            vip_family: IpFamily::V4,
            tls: TlsOptions::default(),
            tenancy: TenancyOptions::default(),
            status_responder: None,
            health_monitor_defaults: crate::model::HealthMonitorSpec::default(),
            member_mode: crate::model::MemberMode::L3,
            member_mode_annotation: false,
        }
    }
}

impl TranslateOptions {
    /// Options for a router serving one node pool: the pool name is also the default ingress
    /// class, as in OpenYurt's NodePool ingress design.
    pub fn for_node_pool(pool: &str) -> Self {
        Self { ingress_class: pool.into(), node_pool: Some(pool.into()), ..Self::default() }
    }
}

/// The Kubernetes objects the translation reads. Order does not matter: every phase sorts.
#[derive(Clone, Debug, Default)]
pub struct Inputs {
    pub ingresses: Vec<Ingress>,
    pub ingress_classes: Vec<IngressClass>,
    pub services: Vec<Service>,
    /// EndpointSlices as the caches hold them ([`CompactSlice`]; manifests read them so too).
    pub endpoint_slices: Vec<CompactSlice>,
    pub endpoints: Vec<Endpoints>,
    pub nodes: Vec<Node>,
    /// The `kubernetes.io/tls` Secrets our Ingresses name (only those are watched).
    pub secrets: Vec<Secret>,
    /// The clock, for certificate validity; None skips that check (fixtures, `plan --at`).
    pub now: Option<std::time::SystemTime>,
    /// Informational notes from loading (e.g. ignored kinds); not part of the router.
    pub notes: Vec<String>,
    /// Parsed certificates kept across translations (the controller's); None parses every
    /// Secret each time. Never changes the result, only its cost.
    pub certificates: Option<std::sync::Arc<crate::certificate::CertificateCache>>,
    /// The hosts the Gateway API objects claim (HTTPRoutes, Gateway listeners), for host
    /// ownership across both kinds (`super::tenancy`); empty without Gateway API objects.
    pub gateway_claims: Arc<Vec<HostClaim>>,
}

/// The objects the translation reads, borrowed: the translation never copies a Kubernetes
/// object. Made from owned [`Inputs`] (fixtures, manifests, `plan`) or from the controller's
/// [`Snapshot`] of its caches; every phase reads this.
#[derive(Clone, Debug, Default)]
pub struct View<'a> {
    pub ingresses: Vec<&'a Ingress>,
    pub ingress_classes: Vec<&'a IngressClass>,
    pub services: Vec<&'a Service>,
    pub endpoint_slices: Vec<&'a CompactSlice>,
    pub endpoints: Vec<&'a Endpoints>,
    pub nodes: Vec<&'a Node>,
    pub secrets: Vec<&'a Secret>,
    pub now: Option<std::time::SystemTime>,
    /// See [`Inputs::certificates`].
    pub certificates: Option<Arc<crate::certificate::CertificateCache>>,
    /// See [`Inputs::gateway_claims`].
    pub gateway_claims: Arc<Vec<HostClaim>>,
}

/// The controller's inputs: the watch caches' own objects, shared, not copied. Copying every
/// cache for each translation added 75 MiB per translation at 10,000 Ingresses and 100,000
/// endpoints (docs/benchmarks.md, "Where the memory goes"), and the CPU of 30,000 object copies.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    pub ingresses: Vec<Arc<Ingress>>,
    pub ingress_classes: Vec<Arc<IngressClass>>,
    pub services: Vec<Arc<Service>>,
    pub endpoint_slices: Vec<Arc<CompactSlice>>,
    pub endpoints: Vec<Arc<Endpoints>>,
    pub nodes: Vec<Arc<Node>>,
    /// The `kubernetes.io/tls` Secrets our Ingresses (or the default certificate) name.
    pub secrets: Vec<Arc<Secret>>,
    pub now: Option<std::time::SystemTime>,
    /// See [`Inputs::certificates`].
    pub certificates: Option<Arc<crate::certificate::CertificateCache>>,
    /// See [`Inputs::gateway_claims`].
    pub gateway_claims: Arc<Vec<HostClaim>>,
}

/// Anything the translation can read: [`Inputs`], a [`Snapshot`] or a [`View`].
pub trait Source {
    fn view(&self) -> View<'_>;
}

fn refs<K, B: Borrow<K>>(objects: &[B]) -> Vec<&K> {
    objects.iter().map(Borrow::borrow).collect()
}

/// A [`View`] of any struct with the inputs' fields (owned objects or `Arc`s).
macro_rules! view_of {
    ($s:expr) => {
        View {
            ingresses: refs(&$s.ingresses),
            ingress_classes: refs(&$s.ingress_classes),
            services: refs(&$s.services),
            endpoint_slices: refs(&$s.endpoint_slices),
            endpoints: refs(&$s.endpoints),
            nodes: refs(&$s.nodes),
            secrets: refs(&$s.secrets),
            now: $s.now,
            certificates: $s.certificates.clone(),
            gateway_claims: $s.gateway_claims.clone(),
        }
    };
}

impl Source for Inputs {
    fn view(&self) -> View<'_> {
        view_of!(self)
    }
}

impl Source for Snapshot {
    fn view(&self) -> View<'_> {
        view_of!(self)
    }
}

impl Source for View<'_> {
    fn view(&self) -> View<'_> {
        self.clone()
    }
}

/// The TLS part of the translation options (kuryr.conf `[tls]`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TlsOptions {
    /// Port of the TERMINATED_HTTPS listener.
    pub https_port: u16,
    /// `namespace/name` of the Secret served to clients whose SNI matches no certificate; else
    /// the oldest Ingress's first certificate.
    pub default_certificate: Option<(String, String)>,
    /// Redirect HTTP to HTTPS for TLS hosts unless an Ingress says otherwise. Off by default:
    /// the Ingress API does not ask for a redirect, so plain HTTP is served as routed.
    pub ssl_redirect: bool,
    /// 301, 302, 303, 307 or 308.
    pub redirect_code: u16,
    /// `[kubernetes] secret_namespaces`: the namespaces whose Secrets the controller reads (a
    /// Secret elsewhere is never in its cache); empty: all.
    #[serde(default)]
    pub secret_namespaces: Vec<String>,
}

impl Default for TlsOptions {
    fn default() -> Self {
        Self {
            https_port: 443,
            default_certificate: None,
            ssl_redirect: false,
            redirect_code: 308,
            secret_namespaces: Vec::new(),
        }
    }
}

/// The tenancy part of the translation options (kuryr.conf `[kubernetes]`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TenancyOptions {
    /// Namespaces whose Ingresses may set the router-wide default backend; empty: all.
    #[serde(default)]
    pub default_backend_namespaces: Vec<String>,
    /// The first namespace to claim a host owns it.
    #[serde(default)]
    pub host_ownership: bool,
    /// How long a remembered owner keeps a host after its last Ingress naming it went.
    #[serde(default = "default_grace")]
    pub host_ownership_grace: Duration,
}

/// `[kubernetes] host_ownership_grace_period` default: long enough for a reinstall or a restore.
pub(crate) const DEFAULT_HOST_OWNERSHIP_GRACE: Duration = Duration::from_secs(3600);

fn default_grace() -> Duration {
    DEFAULT_HOST_OWNERSHIP_GRACE
}

impl Default for TenancyOptions {
    fn default() -> Self {
        Self {
            default_backend_namespaces: Vec::new(),
            host_ownership: false,
            host_ownership_grace: DEFAULT_HOST_OWNERSHIP_GRACE,
        }
    }
}

impl TenancyOptions {
    /// May an Ingress of `namespace` set the router-wide default backend?
    pub(crate) fn may_set_router_default(&self, namespace: &str) -> bool {
        self.default_backend_namespaces.is_empty() || self.default_backend_namespaces.iter().any(|n| n == namespace)
    }
}

/// `[status_responder]` as the translation needs it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusResponder {
    pub namespace: String,
    pub name: String,
    /// Service port (name or number) answering 404.
    pub not_found_port: String,
    /// Service port (name or number) answering 503.
    pub unavailable_port: String,
    /// Service port (name or number) answering 500 (Gateway API rules without a valid backend).
    #[serde(default = "default_server_error_port")]
    pub server_error_port: String,
}

/// `[status_responder] service_server_error_port` default.
pub(crate) const DEFAULT_SERVER_ERROR_PORT: &str = "server-error";

fn default_server_error_port() -> String {
    DEFAULT_SERVER_ERROR_PORT.into()
}
