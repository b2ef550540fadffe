//! The status responder (`kuryr-l7-router status-responder`): the HTTP answers Octavia cannot
//! give by itself. Octavia answers 503 when no L7 policy matches and the listener has no default
//! pool; clients and monitors read a 503 as an outage. The controller therefore makes this
//! server's pods the members of the reserved pools ([`crate::model::NOT_FOUND_POOL`],
//! [`crate::model::UNAVAILABLE_POOL`], [`crate::model::SERVER_ERROR_POOL`]), one per port:
//!
//! - `not_found_listen`: **404** "no route for host H path P" to every request (the listeners'
//!   default pool when no Ingress sets a default backend);
//! - `unavailable_listen`: **503** "the backend of host H path P is unavailable" to every request
//!   (the pool of routes whose Service is missing, of type ExternalName, without the port, or
//!   not a Service at all);
//! - `server_error_listen`: **500** "the route of host H path P has no valid backend" to every
//!   request (the pool of Gateway API rules whose backendRefs are all invalid or not permitted,
//!   which the spec answers with 500);
//! - `health_listen`: `/healthz` for the pod's own probes, on a port of its own because on the two
//!   answer ports every path must get the answer.
//!
//! The body names the host and the path (never the query string, headers or cookies, which may
//! carry credentials), quoted and cut to a sane length, as `text/plain` with `nosniff`.

use crate::config::StatusResponderSettings;
use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use std::future::Future;
use std::net::SocketAddr;

/// Which answer a port gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// 404: no route matches the request.
    NotFound,
    /// 503: a route matches, but its backend cannot be served.
    Unavailable,
    /// 500: a Gateway API rule matches, but none of its backendRefs is valid.
    ServerError,
}

/// Longest host or path shown in a body; longer ones end with `...`.
const MAX_SHOWN: usize = 200;

/// A request value as shown in a body: printable ASCII other than `"` and `\`, each other
/// character as `?` (a body never carries a control character or an unbalanced quote), at most
/// [`MAX_SHOWN`] characters.
fn shown(raw: &str) -> String {
    let mut out: String = raw
        .chars()
        .take(MAX_SHOWN)
        .map(|c| if c.is_ascii_graphic() && c != '"' && c != '\\' || c == ' ' { c } else { '?' })
        .collect();
    if raw.chars().count() > MAX_SHOWN {
        out.push_str("...");
    }
    out
}

/// The status and body of `answer` for a request to `host` (the Host header; `None` without
/// one) and `path` (without the query string). Pure, for tests and the handler alike.
pub fn answer(answer: Answer, host: Option<&str>, path: &str) -> (StatusCode, String) {
    let host = host.map_or_else(|| "(none)".to_owned(), |h| format!("\"{}\"", shown(h)));
    let path = shown(path);
    match answer {
        Answer::NotFound => {
            (StatusCode::NOT_FOUND, format!("404 Not Found: no route for host {host} path \"{path}\"\n"))
        }
        Answer::Unavailable => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "503 Service Unavailable: the backend of host {host} path \"{path}\" is unavailable \
                 (its Service is missing, has no such port or cannot be routed; the Ingress's Events say which)\n"
            ),
        ),
        Answer::ServerError => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!(
                "500 Internal Server Error: the route of host {host} path \"{path}\" has no valid backend \
                 (its backendRefs are missing, not permitted or not Services; the HTTPRoute's status says which)\n"
            ),
        ),
    }
}

async fn respond(kind: Answer, req: Request) -> Response {
    let host = req.headers().get(header::HOST).and_then(|h| h.to_str().ok()).or_else(|| req.uri().host());
    let (status, body) = answer(kind, host, req.uri().path());
    let mut response = (status, Body::from(body)).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// The router of one answer port: every method and path gets `kind`'s answer.
pub fn answer_router(kind: Answer) -> Router {
    Router::new().fallback(move |req: Request| respond(kind, req))
}

/// The router of the health port.
pub fn health_router() -> Router {
    Router::new().route("/healthz", get(|| async { "ok\n" }))
}

/// Where the three servers listen (the bound addresses: useful with port 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bound {
    pub not_found: SocketAddr,
    pub unavailable: SocketAddr,
    pub server_error: SocketAddr,
    pub health: SocketAddr,
}

/// Binds the three ports of `settings` and returns their addresses and the future serving them
/// until `shutdown` resolves (in-flight requests are finished). A port that cannot be bound is
/// an error naming the option.
pub async fn bind(
    settings: &StatusResponderSettings,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(Bound, impl Future<Output = Result<(), String>>), String> {
    async fn listen(addr: SocketAddr, option: &str) -> Result<(tokio::net::TcpListener, SocketAddr), String> {
        let l = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| format!("[status_responder] {option} = {addr}: cannot listen: {e}"))?;
        let local = l.local_addr().map_err(|e| format!("[status_responder] {option}: {e}"))?;
        Ok((l, local))
    }
    let (nf, not_found) = listen(settings.not_found_listen, "not_found_listen").await?;
    let (un, unavailable) = listen(settings.unavailable_listen, "unavailable_listen").await?;
    let (se, server_error) = listen(settings.server_error_listen, "server_error_listen").await?;
    let (he, health) = listen(settings.health_listen, "health_listen").await?;
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let serve = async move {
        let wait = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
            let _ = rx.wait_for(|s| *s).await;
        };
        let servers = futures::future::try_join4(
            axum::serve(nf, answer_router(Answer::NotFound))
                .with_graceful_shutdown(wait(stopped.clone()))
                .into_future(),
            axum::serve(un, answer_router(Answer::Unavailable))
                .with_graceful_shutdown(wait(stopped.clone()))
                .into_future(),
            axum::serve(se, answer_router(Answer::ServerError))
                .with_graceful_shutdown(wait(stopped.clone()))
                .into_future(),
            axum::serve(he, health_router()).with_graceful_shutdown(wait(stopped)).into_future(),
        );
        let trigger = async move {
            shutdown.await;
            let _ = stop.send(true);
        };
        let (served, ()) = tokio::join!(servers, trigger);
        served.map(|_| ()).map_err(|e| format!("status responder: {e}"))
    };
    Ok((Bound { not_found, unavailable, server_error, health }, serve))
}

/// `kuryr-l7-router status-responder`: serves until SIGTERM/SIGINT.
pub async fn run(settings: StatusResponderSettings) -> Result<(), String> {
    let (bound, serve) = bind(&settings, crate::controller::runtime::signal()).await?;
    tracing::info!(
        not_found = %bound.not_found,
        unavailable = %bound.unavailable,
        server_error = %bound.server_error,
        health = %bound.health,
        "status responder listening (404, 503, 500, /healthz)"
    );
    serve.await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_name_host_and_path_only() {
        let (status, body) = answer(Answer::NotFound, Some("shop.example.com"), "/cart");
        assert_eq!(status, StatusCode::NOT_FOUND);
        assert_eq!(body, "404 Not Found: no route for host \"shop.example.com\" path \"/cart\"\n");
        let (status, body) = answer(Answer::Unavailable, Some("shop.example.com:8080"), "/admin");
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert!(
            body.starts_with(
                "503 Service Unavailable: the backend of host \"shop.example.com:8080\" path \"/admin\" is unavailable"
            ),
            "{body}"
        );
        assert_eq!(answer(Answer::NotFound, None, "/").1, "404 Not Found: no route for host (none) path \"/\"\n");
        let (status, body) = answer(Answer::ServerError, Some("gw.example.com"), "/v2");
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert!(
            body.starts_with(
                "500 Internal Server Error: the route of host \"gw.example.com\" path \"/v2\" has no valid backend"
            ),
            "{body}"
        );
    }

    #[test]
    fn shown_values_are_quoted_safely_and_cut() {
        assert_eq!(shown("a\"b\\c\nd\u{e9}"), "a?b?c?d?");
        let long = "x".repeat(500);
        assert_eq!(shown(&long), format!("{}...", "x".repeat(MAX_SHOWN)));
        assert_eq!(shown("/a b"), "/a b");
    }
}
