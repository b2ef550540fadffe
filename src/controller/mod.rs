//! The Kubernetes side of `kuryr-l7-router run`: the long-running controller.
//!
//! - [`runtime`]: `run`, the process wiring (health server, leader election, caches, the two
//!   Controllers, the writer, the resync loop, shutdown);
//! - [`context`]: what a reconcile needs ([`context::Context`], the caches, the Sync and the
//!   application of its outputs), its one error type and the instrumented wrapper both
//!   handlers use;
//! - [`routers`]: the routers the controller drives, by key, each with its slot (writer,
//!   budget, readiness, metrics);
//! - [`outputs`]: the pure plan of what a finished Sync tells Kubernetes (notices, statuses,
//!   Events), decided on typed reasons;
//! - [`ingress`], [`service`]: the two handlers, each with its pure step decision;
//! - [`endpoint_nodes`]: which Services have endpoints on which Node (a Node change's targets);
//! - [`members`]: the Members path of one Service (its pools refilled from its own endpoints);
//! - [`writer`]: the serial router writer (one task per router, coalescing queue), the only
//!   caller of the driver (`converge`, `set_members`);
//! - [`patches`]: every Kubernetes write (finalizer, Service notice annotation, Ingress status)
//!   and the pure decisions behind them;
//! - [`events`]: Kubernetes Events with repeat suppression on top of kube's `Recorder`;
//! - [`gateway`], [`gateway_status`]: the Gateway API watches (when its CRDs are installed),
//!   translation and status writes;
//! - [`gateway_driver`], [`gateway_routers`]: one router per Gateway (its own load balancer,
//!   writer and floating IP), its address or error back to the Gateway's status;
//!   [`gateway_members`]: endpoint changes to those routers' members;
//! - [`service_events`]: the translation's warnings about a Service as Events on it;
//! - [`notice`]: which Services must carry which [`notice::ServiceNotice`] for a desired router;
//! - [`metrics`], [`health`]: Prometheus metrics and the `/healthz`, `/readyz`, `/metrics` server;
//! - [`client`]: the kube `Client` from kubeconfig, in-cluster, or kuryr's explicit options;
//! - [`leader`]: leader election on a Lease;
//! - [`error`]: [`ControllerError`], with a label per variant for metrics.

pub mod client;
pub mod context;
pub mod error;
pub mod gateway;
pub mod health;
pub mod indexes;
pub mod ingress;
pub mod last_sync;
pub mod leader;
pub mod metrics;
pub mod named_secrets;
pub mod octavia_backend;
pub mod outputs;
pub mod owner_store;
pub mod router_set;
pub mod routers;
pub mod runtime;
pub mod service_changes;
pub mod services;
pub mod sharded;
pub mod slim;
pub mod stamp_store;
pub mod watches;
pub mod writer;

pub use error::ControllerError;

/// Finalizer on Ingresses of our class: deletion waits until the Ingress's policies, unused pools
/// and Service notices are gone, even if the controller was down when the Ingress was deleted.
pub const FINALIZER: &str = "openstack.org/kuryr-l7-router";

/// The legacy Service notice annotation: ONE router and its pools (value:
/// [`notice::ServiceNotice`] as JSON), written by versions before per-router notices. Read only
/// to move a notice naming our router to our own key ([`notice::notice_annotation`]).
pub(crate) const NOTICE_ANNOTATION: &str = "openstack.org/kuryr-l7-router";

/// Prefix of the per-router Service notice annotations: `kuryr-l7-router.openstack.org/<router>`
/// ([`notice::notice_annotation`]), one per router whose pools the Service's endpoints fill.
pub(crate) const NOTICE_ANNOTATION_PREFIX: &str = "kuryr-l7-router.openstack.org/";

/// Name of this controller: Event `reportingController` and server-side field manager.
pub(crate) const CONTROLLER_NAME: &str = "kuryr-l7-router";

/// The span of one reconcile, naming the handler and the object, so every log line of the
/// reconcile (including the Octavia calls it makes) carries them.
pub(crate) fn reconcile_span(handler: &'static str, namespace: &str, name: &str) -> tracing::Span {
    tracing::info_span!("reconcile", handler, namespace, name)
}

/// Every Kubernetes API call the controller makes, as (apiGroup, resource, verb); "" is the core
/// group. The RBAC of etc/manifests/ must grant exactly these (tests/it/ship_manifests.rs); keep this
/// table next to the code that makes the calls when adding one.
pub const API_CALLS: &[(&str, &str, &str)] = &[
    // runtime.rs: reflectors and Controllers (kube-runtime watcher: list + watch, never get).
    ("networking.k8s.io", "ingresses", "list"),
    ("networking.k8s.io", "ingresses", "watch"),
    ("networking.k8s.io", "ingressclasses", "list"),
    ("networking.k8s.io", "ingressclasses", "watch"),
    ("", "services", "list"),
    ("", "services", "watch"),
    ("", "endpoints", "list"),
    ("", "endpoints", "watch"),
    ("discovery.k8s.io", "endpointslices", "list"),
    ("discovery.k8s.io", "endpointslices", "watch"),
    ("", "nodes", "list"),
    ("", "nodes", "watch"),
    // TLS certificates of Ingresses: only Secrets of type kubernetes.io/tls (field selector).
    ("", "secrets", "list"),
    ("", "secrets", "watch"),
    // patches.rs: finalizer add/remove (JSON patch), Service notice (merge patch), Ingress status.
    ("networking.k8s.io", "ingresses", "patch"),
    ("networking.k8s.io", "ingresses/status", "patch"),
    ("", "services", "patch"),
    // context.rs: the remembered host owners on our IngressClass ([kubernetes] host_ownership)
    // when no store is given (the runtime keeps them in ConfigMaps: owner_store.rs, which reads
    // the class's annotation once at the upgrade: get).
    ("networking.k8s.io", "ingressclasses", "patch"),
    ("networking.k8s.io", "ingressclasses", "get"),
    // events.rs: kube-runtime's Recorder (events.k8s.io/v1): create, then patch on repeat.
    ("events.k8s.io", "events", "create"),
    ("events.k8s.io", "events", "patch"),
    // gateway.rs: the Gateway API watches (a probe lists one item first: list + watch), and
    // the Namespaces' labels for `allowedRoutes.namespaces.from: Selector`.
    ("gateway.networking.k8s.io", "gatewayclasses", "list"),
    ("gateway.networking.k8s.io", "gatewayclasses", "watch"),
    ("gateway.networking.k8s.io", "gateways", "list"),
    ("gateway.networking.k8s.io", "gateways", "watch"),
    ("gateway.networking.k8s.io", "httproutes", "list"),
    ("gateway.networking.k8s.io", "httproutes", "watch"),
    ("gateway.networking.k8s.io", "referencegrants", "list"),
    ("gateway.networking.k8s.io", "referencegrants", "watch"),
    // BackendTLSPolicy: only its targets, to refuse the routes to those Services by name.
    ("gateway.networking.k8s.io", "backendtlspolicies", "list"),
    ("gateway.networking.k8s.io", "backendtlspolicies", "watch"),
    // ListenerSet: the listeners it adds to a Gateway of ours that admits it.
    ("gateway.networking.k8s.io", "listenersets", "list"),
    ("gateway.networking.k8s.io", "listenersets", "watch"),
    ("", "namespaces", "list"),
    ("", "namespaces", "watch"),
    // The CA bundles of the Gateways' client certificate validation (spec.tls.frontend): a
    // watch of ConfigMaps in every namespace (list + watch; a probe lists one item first),
    // cached with their `ca.crt` only.
    ("", "configmaps", "watch"),
    // gateway_status.rs: their status (merge patch of the status subresource).
    ("gateway.networking.k8s.io", "gatewayclasses/status", "patch"),
    ("gateway.networking.k8s.io", "gateways/status", "patch"),
    ("gateway.networking.k8s.io", "httproutes/status", "patch"),
    ("gateway.networking.k8s.io", "listenersets/status", "patch"),
    // gateway_finalizers.rs: our finalizer on the Gateways of ours (JSON patch of metadata).
    ("gateway.networking.k8s.io", "gateways", "patch"),
    // leader.rs: kube-lease-manager, in [kubernetes] lease_namespace.
    ("coordination.k8s.io", "leases", "get"),
    ("coordination.k8s.io", "leases", "create"),
    ("coordination.k8s.io", "leases", "patch"),
    // stamp_store.rs: one ConfigMap per router in the same namespace: read at a new leader's
    // start, server-side applied after a Sync (patch; create when it does not exist yet),
    // deleted with the router.
    ("", "configmaps", "get"),
    // set_store.rs: the router set's records, ConfigMaps of the same namespace found by label
    // (list, which the CA bundles' watch needs cluster-wide anyway), server-side applied (patch)
    // and deleted when their layout changes.
    ("", "configmaps", "list"),
    ("", "configmaps", "create"),
    ("", "configmaps", "patch"),
    ("", "configmaps", "delete"),
];
