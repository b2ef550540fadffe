//! `/healthz`, `/readyz` and `/metrics` on one small axum server.
//!
//! - `/healthz`: 200 while the process serves HTTP (liveness: a wedged runtime fails it).
//! - `/readyz`: 200 only once the reflector caches are synced *and* the router exists; 503 with a
//!   body naming what is missing otherwise (readiness gates the Service/rollout, and a standby
//!   replica that is not the leader is still ready: it serves metrics and can take over).
//! - `/metrics`: OpenMetrics text of the registry.

use crate::controller::ControllerError;
use crate::controller::metrics::encode;
use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use prometheus_client::registry::Registry;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::sync::watch;

/// What `/readyz` waits for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Readiness {
    /// Every reflector (Ingress, IngressClass, Service, EndpointSlice/Endpoints, Node) has synced.
    pub caches_synced: bool,
    /// The router load balancer exists (found or created) in Octavia.
    pub router_ready: bool,
    /// The router refuses every write (ERROR, or busy beyond `write_timeout`): not ready while
    /// it lasts, ready again by itself once the router is ACTIVE.
    pub router_blocked: bool,
}

impl Readiness {
    /// `None` when ready, else the reasons, one per line.
    pub fn missing(&self) -> Option<String> {
        let mut reasons = Vec::new();
        if !self.caches_synced {
            reasons.push("caches not synced");
        }
        if !self.router_ready {
            reasons.push("router not ready");
        }
        if self.router_blocked {
            reasons.push("router refuses writes (provisioning_status ERROR or immutable)");
        }
        (!reasons.is_empty()).then(|| reasons.join("\n"))
    }
}

#[derive(Clone)]
struct HealthState {
    readiness: watch::Receiver<Readiness>,
    registry: Arc<Registry>,
}

/// The health/metrics router. Update readiness through the `watch::Sender` paired with
/// `readiness` (`sender.send_modify(|r| r.caches_synced = true)`).
pub fn router(readiness: watch::Receiver<Readiness>, registry: Arc<Registry>) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .with_state(HealthState { readiness, registry })
}

async fn readyz(State(state): State<HealthState>) -> Response {
    let readiness = *state.readiness.borrow();
    match readiness.missing() {
        None => (StatusCode::OK, "ready\n").into_response(),
        Some(why) => (StatusCode::SERVICE_UNAVAILABLE, format!("{why}\n")).into_response(),
    }
}

async fn metrics(State(state): State<HealthState>) -> Response {
    ([(header::CONTENT_TYPE, "application/openmetrics-text; version=1.0.0; charset=utf-8")], encode(&state.registry))
        .into_response()
}

/// Binds `addr` and serves `router` until `shutdown` resolves (then finishes in-flight requests).
/// Returns the bound address (useful with port 0) and the server future to spawn.
pub async fn bind(
    addr: SocketAddr,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(SocketAddr, impl Future<Output = Result<(), ControllerError>>), ControllerError> {
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(ControllerError::Server)?;
    let local = listener.local_addr().map_err(ControllerError::Server)?;
    let serve = async move {
        axum::serve(listener, router).with_graceful_shutdown(shutdown).await.map_err(ControllerError::Server)
    };
    Ok((local, serve))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_names_each_reason() {
        let r = |caches_synced, router_ready, router_blocked| Readiness { caches_synced, router_ready, router_blocked };
        assert_eq!(r(true, true, false).missing(), None);
        assert_eq!(r(false, true, false).missing().unwrap(), "caches not synced");
        assert_eq!(r(true, false, false).missing().unwrap(), "router not ready");
        assert_eq!(
            r(true, true, true).missing().unwrap(),
            "router refuses writes (provisioning_status ERROR or immutable)"
        );
        assert_eq!(Readiness::default().missing().unwrap(), "caches not synced\nrouter not ready");
    }
}
