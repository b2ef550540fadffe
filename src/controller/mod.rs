//! The Kubernetes side of `kuryr-l7-router run`: building blocks for the long-running controller.
//!
//! Each piece is small and tested on its own so the lead can wire them into the kube-runtime
//! Controllers (Ingress, Service) without re-testing the plumbing:
//!
//! - [`k8s`]: every Kubernetes write (finalizer, Service notice annotation, Ingress status) and the
//!   pure decisions behind them;
//! - [`events`]: Kubernetes Events with repeat suppression on top of kube's `Recorder`;
//! - [`notice`]: which Services must carry which [`notice::ServiceNotice`] for a desired router;
//! - [`metrics`], [`health`]: Prometheus metrics and the `/healthz`, `/readyz`, `/metrics` server;
//! - [`client`]: the kube `Client` from kubeconfig, in-cluster, or kuryr's explicit options;
//! - [`leader`]: leader election on a Lease;
//! - [`error`]: [`ControllerError`], with a label per variant for metrics;
//! - [`writer`]: the serial router writer (one task per router, coalescing queue);
//! - [`ingress`], [`service`]: the two handlers; [`runtime`]: `run`, wiring everything.

pub mod client;
pub mod error;
pub mod events;
pub mod health;
pub mod ingress;
pub mod k8s;
pub mod leader;
pub mod metrics;
pub mod notice;
pub mod runtime;
pub mod service;
pub mod writer;

pub use error::ControllerError;

/// Finalizer on Ingresses of our class: deletion waits until the Ingress's policies, unused pools
/// and Service notices are gone, even if the controller was down when the Ingress was deleted.
pub const FINALIZER: &str = "openstack.org/kuryr-l7-router";

/// Annotation on a Service naming the router and pools its endpoints must fill
/// (value: [`notice::ServiceNotice`] as JSON).
pub const NOTICE_ANNOTATION: &str = "openstack.org/kuryr-l7-router";

/// Name of this controller: Event `reportingController` and server-side field manager.
pub const CONTROLLER_NAME: &str = "kuryr-l7-router";

/// The span of one reconcile, naming the handler and the object, so every log line of the
/// reconcile (including the Octavia calls it makes) carries them.
pub fn reconcile_span(handler: &'static str, namespace: &str, name: &str) -> tracing::Span {
    tracing::info_span!("reconcile", handler, namespace, name)
}
