//! `/healthz`, `/readyz` and `/metrics` on one small axum server.
//!
//! - `/healthz`: 200 while the process serves HTTP (liveness: a wedged runtime fails it).
//! - `/readyz`: 200 only once the reflector caches are synced *and* every router the replica
//!   drives exists and takes writes; 503 otherwise. The body says `ready` (or why not) and then
//!   has one line per router, `router <key>: ready|not ready|refuses writes (...)` (readiness gates the Service/rollout, and a standby
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
use std::collections::BTreeMap;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::sync::watch;

/// What `/readyz` waits for: the caches, and each router the controller drives (by key).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Readiness {
    /// Every reflector (Ingress, IngressClass, Service, EndpointSlice/Endpoints, Node) has synced.
    pub caches_synced: bool,
    /// The routers this replica drives, by key (see `super::routers`). Empty for a standby or
    /// with `enable_ingress = False`: nothing is routed through this replica's routers.
    pub routers: BTreeMap<String, RouterReadiness>,
}

/// The readiness of one router.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RouterReadiness {
    /// The router load balancer exists (found or created) in Octavia: a Sync succeeded.
    pub ready: bool,
    /// The router refuses every write (ERROR, or busy beyond `write_timeout`): not ready while
    /// it lasts, ready again by itself once the router is ACTIVE.
    pub blocked: bool,
    /// Failed creates in a row of a router of the set (0: none), and the wait before the next
    /// try after the last one.
    pub create_failures: u32,
    pub create_retry_secs: u64,
}

impl RouterReadiness {
    /// `None` when ready, else why not.
    fn missing(&self) -> Option<String> {
        if !self.ready && self.create_failures > 0 {
            Some(format!(
                "cannot be built ({} failed creates, next try {} s after the last; new groups go to other routers)",
                self.create_failures, self.create_retry_secs
            ))
        } else if !self.ready {
            Some("not ready".into())
        } else if self.blocked {
            Some("refuses writes (provisioning_status ERROR or immutable)".into())
        } else {
            None
        }
    }
}

impl Readiness {
    /// Caches synced (or not) and the routers `names`, none ready yet.
    pub fn expecting<'a>(caches_synced: bool, names: impl IntoIterator<Item = &'a str>) -> Self {
        let routers = names.into_iter().map(|n| (n.to_string(), RouterReadiness::default())).collect();
        Self { caches_synced, routers }
    }

    /// The readiness of `router`, added (not ready) if it was not known.
    pub fn router_mut(&mut self, router: &str) -> &mut RouterReadiness {
        self.routers.entry(router.to_string()).or_default()
    }

    /// `None` when ready, else the reasons, one per line (one line per router that is not).
    pub fn missing(&self) -> Option<String> {
        let mut reasons = Vec::new();
        if !self.caches_synced {
            reasons.push("caches not synced".to_string());
        }
        for (name, r) in &self.routers {
            reasons.extend(r.missing().map(|why| format!("router {name}: {why}")));
        }
        (!reasons.is_empty()).then(|| reasons.join("\n"))
    }

    /// The `/readyz` body: `ready` or the reasons, then one line per router.
    pub fn report(&self) -> String {
        let mut out = match self.missing() {
            None => "ready\n".to_string(),
            Some(_) if !self.caches_synced => "caches not synced\n".to_string(),
            Some(_) => "not ready\n".to_string(),
        };
        for (name, r) in &self.routers {
            out.push_str(&format!("router {name}: {}\n", r.missing().as_deref().unwrap_or("ready")));
        }
        out
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
    let readiness = state.readiness.borrow().clone();
    let status = if readiness.missing().is_none() { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    (status, readiness.report()).into_response()
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
    fn missing_names_each_reason_per_router() {
        let r = |ready, blocked| RouterReadiness { ready, blocked, ..RouterReadiness::default() };
        let with = |caches_synced, routers: &[(&str, RouterReadiness)]| Readiness {
            caches_synced,
            routers: routers.iter().map(|(n, r)| (n.to_string(), *r)).collect(),
        };
        assert_eq!(with(true, &[("a", r(true, false))]).missing(), None);
        assert_eq!(with(false, &[("a", r(true, false))]).missing().unwrap(), "caches not synced");
        assert_eq!(with(true, &[("a", r(false, false))]).missing().unwrap(), "router a: not ready");
        assert_eq!(
            with(true, &[("a", r(true, true))]).missing().unwrap(),
            "router a: refuses writes (provisioning_status ERROR or immutable)"
        );
        assert_eq!(
            Readiness::expecting(false, ["a", "b"]).missing().unwrap(),
            "caches not synced\nrouter a: not ready\nrouter b: not ready"
        );
        // One router's trouble is named; the other router's line says it is fine.
        let two = with(true, &[("a", r(true, false)), ("b", r(true, true))]);
        assert_eq!(
            two.report(),
            "not ready\nrouter a: ready\nrouter b: refuses writes (provisioning_status ERROR or immutable)\n"
        );
        assert_eq!(with(true, &[("a", r(true, false))]).report(), "ready\nrouter a: ready\n");
        // A router of the set whose create fails is named with its count and wait.
        let failing = RouterReadiness { create_failures: 3, create_retry_secs: 40, ..RouterReadiness::default() };
        assert_eq!(
            with(true, &[("a", r(true, false)), ("a-3", failing)]).report(),
            "not ready\nrouter a: ready\nrouter a-3: cannot be built (3 failed creates, next try 40 s after the \
             last; new groups go to other routers)\n"
        );
        // A standby drives no router: ready once its caches are.
        assert_eq!(with(true, &[]).missing(), None);
    }
}
