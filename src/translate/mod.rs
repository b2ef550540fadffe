//! Pure translation from Kubernetes objects to the desired L7 router.
//!
//! Everything here is a function of its arguments: no I/O, no clock, no randomness, so the
//! controller, the `plan` command and the tests all see the same router for the same objects.
//! The phases are: classify (is the Ingress ours?) → validate each rule (warnings, never fatal) →
//! resolve backends → resolve conflicts (oldest Ingress wins) → order by Kubernetes precedence →
//! policies → pools → members and zone-aware weights. See `docs/routing-semantics.md` and
//! `docs/zone-aware.md` for the reasoning behind each encoding.

pub mod budget;
pub mod health;
pub mod manifest;
pub mod members;
pub mod names;
pub mod render;
pub mod routes;
pub mod rules;
pub mod status;
pub mod tenancy;
pub mod tls;
pub mod zone;

use k8s_openapi::api::core::v1::{Endpoints, Node, Secret, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::{Ingress, IngressClass};
use serde::{Deserialize, Serialize};
use std::borrow::Borrow;
use std::sync::Arc;

use crate::model::DesiredRouter;

pub use manifest::{ManifestError, load_manifests};
pub use members::{SliceCache, pool_members};
pub use render::{render_json, render_table};

/// `spec.controller` of the IngressClasses we serve.
pub const CONTROLLER: &str = "openstack.org/kuryr-l7-router";
/// The namespace of an object that names none: Kubernetes' `default` (manifests given to `plan`
/// and `apply` may leave it out; objects from the API always carry one).
pub fn namespace_of(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> &str {
    meta.namespace.as_deref().unwrap_or("default")
}

/// Node label that names a node's pool (OpenYurt's NodePool design).
pub const DEFAULT_NODE_POOL_LABEL: &str = "apps.openyurt.io/nodepool";

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

/// IP family of the router's VIP; members of the other family would be unreachable.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum IpFamily {
    #[default]
    V4,
    V6,
}

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
    pub tls: tls::TlsOptions,
    /// Default backends and host ownership (`[kubernetes]`, see [`tenancy`]).
    #[serde(default)]
    pub tenancy: tenancy::TenancyOptions,
    /// `[status_responder]`: the Service whose endpoints fill the reserved 404/503 pools; `None`:
    /// no responder (see [`status`]).
    #[serde(default)]
    pub status_responder: Option<status::StatusResponder>,
    /// `[octavia_defaults] health_monitor*` values: what a Service's health-monitor annotation
    /// does not say (whether or not the global monitor is enabled).
    #[serde(default)]
    pub health_monitor_defaults: crate::model::HealthMonitorSpec,
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
            tls: tls::TlsOptions::default(),
            tenancy: tenancy::TenancyOptions::default(),
            status_responder: None,
            health_monitor_defaults: crate::model::HealthMonitorSpec::default(),
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
    pub endpoint_slices: Vec<EndpointSlice>,
    pub endpoints: Vec<Endpoints>,
    pub nodes: Vec<Node>,
    /// The `kubernetes.io/tls` Secrets our Ingresses name (only those are watched).
    pub secrets: Vec<Secret>,
    /// The clock, for certificate validity; None skips that check (fixtures, `plan --at`).
    pub now: Option<std::time::SystemTime>,
    /// Informational notes from loading (e.g. ignored kinds); not part of the router.
    pub notes: Vec<String>,
}

/// The objects the translation reads, borrowed: the translation never copies a Kubernetes object.
/// Built from owned [`Inputs`] (fixtures, manifests) or from the controller's [`Snapshot`].
#[derive(Clone, Debug, Default)]
pub struct View<'a> {
    pub ingresses: Vec<&'a Ingress>,
    pub ingress_classes: Vec<&'a IngressClass>,
    pub services: Vec<&'a Service>,
    pub endpoint_slices: Vec<&'a EndpointSlice>,
    pub endpoints: Vec<&'a Endpoints>,
    pub nodes: Vec<&'a Node>,
    pub secrets: Vec<&'a Secret>,
    pub now: Option<std::time::SystemTime>,
}

/// The controller's inputs: the watch caches' own objects, shared, not copied. Copying every
/// cache for each translation doubled the controller's object memory (72 MiB more at 10,000
/// Ingresses and 100,000 endpoints, docs/benchmarks.md "Controller scale").
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    pub ingresses: Vec<Arc<Ingress>>,
    pub ingress_classes: Vec<Arc<IngressClass>>,
    pub services: Vec<Arc<Service>>,
    pub endpoint_slices: Vec<Arc<EndpointSlice>>,
    pub endpoints: Vec<Arc<Endpoints>>,
    pub nodes: Vec<Arc<Node>>,
    /// The `kubernetes.io/tls` Secrets our Ingresses (or the default certificate) name.
    pub secrets: Vec<Arc<Secret>>,
    pub now: Option<std::time::SystemTime>,
}

/// Anything the translation can read: [`Inputs`], [`Snapshot`] or a [`View`].
pub trait Source {
    fn view(&self) -> View<'_>;
}

fn refs<K, B: Borrow<K>>(objects: &[B]) -> Vec<&K> {
    objects.iter().map(Borrow::borrow).collect()
}

impl Source for Inputs {
    fn view(&self) -> View<'_> {
        View {
            ingresses: refs(&self.ingresses),
            ingress_classes: refs(&self.ingress_classes),
            services: refs(&self.services),
            endpoint_slices: refs(&self.endpoint_slices),
            endpoints: refs(&self.endpoints),
            nodes: refs(&self.nodes),
            secrets: refs(&self.secrets),
            now: self.now,
        }
    }
}

impl Source for Snapshot {
    fn view(&self) -> View<'_> {
        View {
            ingresses: refs(&self.ingresses),
            ingress_classes: refs(&self.ingress_classes),
            services: refs(&self.services),
            endpoint_slices: refs(&self.endpoint_slices),
            endpoints: refs(&self.endpoints),
            nodes: refs(&self.nodes),
            secrets: refs(&self.secrets),
            now: self.now,
        }
    }
}

impl Source for View<'_> {
    fn view(&self) -> View<'_> {
        self.clone()
    }
}

/// Translate Kubernetes objects into the desired L7 router. Pure and deterministic.
pub fn translate(inputs: &(impl Source + ?Sized), opts: &TranslateOptions) -> DesiredRouter {
    routes::translate(&inputs.view(), opts)
}
