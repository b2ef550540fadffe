//! The answers of the status responder through Octavia-rendered haproxy (issue 14 §3): the
//! `kuryr-l7-router status-responder` binary serves the members of the reserved pools, and real
//! requests get 404 for no route (unknown host; known host, unmatched path) and 503 with the
//! reason for a route whose Service is missing, which no longer falls through to the host's `/`.
//! Then the same Ingresses without a responder: the documented fallback (503 everywhere, still no
//! fall-through).

use super::{converge, echo_names, load, options, run_py_full, with_router};
use crate::common::enabled;
use kuryr_l7_router::model::{DesiredRouter, NOT_FOUND_POOL, SERVER_ERROR_POOL, UNAVAILABLE_POOL};
use kuryr_l7_router::translate::options::StatusResponder;
use kuryr_l7_router::translate::{TranslateOptions, translate};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The shipped binary's `status-responder` on free loopback ports; killed on drop.
pub(super) struct Responder {
    child: Child,
    not_found: u16,
    unavailable: u16,
    server_error: u16,
    _dir: tempfile::TempDir,
}

impl Responder {
    pub(super) fn start() -> Self {
        let free = || TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let (not_found, unavailable, server_error, health) = (free(), free(), free(), free());
        let dir = tempfile::tempdir().unwrap();
        let conf = dir.path().join("kuryr.conf");
        std::fs::write(
            &conf,
            format!(
                "[status_responder]\nnot_found_listen = 127.0.0.1:{not_found}\nunavailable_listen = 127.0.0.1:{unavailable}\nserver_error_listen = 127.0.0.1:{server_error}\nhealth_listen = 127.0.0.1:{health}\n"
            ),
        )
        .unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_kuryr-l7-router"))
            .args(["status-responder", "--config-file"])
            .arg(&conf)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start kuryr-l7-router status-responder");
        // Owned before the wait: a responder that does not come up is killed with it (on drop).
        let mut responder = Self { child, not_found, unavailable, server_error, _dir: dir };
        let t = Instant::now();
        for port in [not_found, unavailable, server_error, health] {
            while TcpStream::connect(("127.0.0.1", port)).is_err() {
                assert!(responder.child.try_wait().unwrap().is_none(), "status-responder exited");
                assert!(t.elapsed() < Duration::from_secs(10), "status-responder does not listen on {port}");
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        responder
    }
}

impl Responder {
    /// The local port answering for reserved pool `pool`.
    pub(super) fn port_of(&self, pool: &str) -> Option<u16> {
        match pool {
            NOT_FOUND_POOL => Some(self.not_found),
            UNAVAILABLE_POOL => Some(self.unavailable),
            SERVER_ERROR_POOL => Some(self.server_error),
            _ => None,
        }
    }
}

impl Drop for Responder {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn responder_ref() -> StatusResponder {
    StatusResponder {
        namespace: "kuryr-system".into(),
        name: "kuryr-status-responder".into(),
        not_found_port: "not-found".into(),
        unavailable_port: "unavailable".into(),
        server_error_port: "server-error".into(),
    }
}

/// run.py with echo servers for the Service pools and the responder for the reserved pools'
/// members: (host, path) → (status, backend or null, body).
fn send(
    lb_id: &str,
    desired: &DesiredRouter,
    responder: Option<&Responder>,
    cases: &[(&str, &str)],
) -> Vec<serde_json::Value> {
    let requests: Vec<serde_json::Value> =
        cases.iter().map(|(host, path)| serde_json::json!({"host": host, "path": path})).collect();
    send_requests(lb_id, desired, responder, &requests)
}

/// [`send`] with run.py's request objects (method, scheme, headers...).
pub(super) fn send_requests(
    lb_id: &str,
    desired: &DesiredRouter,
    responder: Option<&Responder>,
    requests: &[serde_json::Value],
) -> Vec<serde_json::Value> {
    let mut echo = echo_names(desired);
    let mut member_map = serde_json::Map::new();
    for (pool, port) in [
        (NOT_FOUND_POOL, responder.map(|r| r.not_found)),
        (UNAVAILABLE_POOL, responder.map(|r| r.unavailable)),
        (SERVER_ERROR_POOL, responder.map(|r| r.server_error)),
    ] {
        for m in desired.pools.get(pool).map(|p| p.members.as_slice()).unwrap_or_default() {
            let addr = format!("{}:{}", m.address, m.protocol_port);
            echo.remove(&addr);
            if let Some(port) = port {
                member_map.insert(addr, format!("127.0.0.1:{port}").into());
            }
        }
    }
    let (result, _) = run_py_full(lb_id, &echo, Some(&member_map), requests);
    result["results"].as_array().expect("results").clone()
}

/// Each case: (host, path, expected backend or status, a text the body must contain).
fn check(results: &[serde_json::Value], cases: &[(&str, &str, &str, &str)]) {
    let mut bad = Vec::new();
    for (r, (host, path, expect, body)) in results.iter().zip(cases) {
        let got = r["backend"].as_str().map_or_else(|| r["status"].to_string(), str::to_string);
        let text = r["body"].as_str().unwrap_or_default();
        let ok = got == *expect && text.contains(body);
        println!("{} GET {host:<22} {path:<14} -> {got:<5} {:?}", if ok { "ok " } else { "BAD" }, text.trim_end());
        if !ok {
            bad.push(format!("GET {host} {path} -> {got} {text:?}, expected {expect} with {body:?}"));
        }
    }
    assert!(bad.is_empty(), "{} request(s) got the wrong answer:\n{}", bad.len(), bad.join("\n"));
}

#[tokio::test(flavor = "multi_thread")]
async fn status_responder_answers_404_and_503_through_octavia_rendered_haproxy() {
    if !enabled() {
        return;
    }
    let responder = Responder::start();
    with_router("status", |r| async move {
        let inputs = load("tests/fixtures/ingress/status");
        let opts = TranslateOptions { status_responder: Some(responder_ref()), ..options("kuryr") };
        let desired = translate(&inputs, &opts);
        assert_eq!(desired.default_pool.as_deref(), Some(NOT_FOUND_POOL));
        let report = converge(&r, &desired).await;
        let cases: &[(&str, &str, &str, &str)] = &[
            ("unknown.example.org", "/", "404", "no route for host \"unknown.example.org\" path \"/\""),
            ("unknown.example.org", "/x?token=s3cret", "404", "path \"/x\""),
            // Known host, unmatched path, no default backend: 404, not the wildcard's web.
            ("api.example.com", "/other", "404", "no route for host \"api.example.com\" path \"/other\""),
            ("api.example.com", "/v1/users", "api", ""),
            // The route to a missing Service: 503 with the reason, never the host's `/`.
            (
                "app.example.com",
                "/admin",
                "503",
                "the backend of host \"app.example.com\" path \"/admin\" is unavailable",
            ),
            ("app.example.com", "/admin/users", "503", "path \"/admin/users\" is unavailable"),
            ("app.example.com", "/administrator", "web", ""),
            ("app.example.com", "/", "web", ""),
            // A Service without ready endpoints: its own empty pool, haproxy's 503.
            ("app.example.com", "/idle", "503", ""),
            ("x.example.com", "/", "web", ""),
        ];
        let requests: Vec<(&str, &str)> = cases.iter().map(|(h, p, _, _)| (*h, *p)).collect();
        let results = tokio::task::block_in_place(|| send(&report.lb_id, &desired, Some(&responder), &requests));
        check(&results, cases);
        assert!(results.iter().all(|r| !r["body"].to_string().contains("s3cret")), "the query is never echoed");

        // No responder configured: the documented fallback. Unmatched requests get Octavia's 503,
        // the unservable route an empty reserved pool's 503: still never the host's `/`.
        let fallback = translate(&inputs, &options("kuryr"));
        assert_eq!(fallback.default_pool, None);
        let report = converge(&r, &fallback).await;
        let cases: &[(&str, &str, &str, &str)] = &[
            ("unknown.example.org", "/", "503", ""),
            ("api.example.com", "/other", "503", ""),
            ("app.example.com", "/admin", "503", ""),
            ("app.example.com", "/", "web", ""),
            ("x.example.com", "/", "web", ""),
        ];
        let requests: Vec<(&str, &str)> = cases.iter().map(|(h, p, _, _)| (*h, *p)).collect();
        let results = tokio::task::block_in_place(|| send(&report.lb_id, &fallback, None, &requests));
        check(&results, cases);
    })
    .await;
}
