//! The listeners' `insert_headers` through Octavia-rendered haproxy: with
//! `[octavia_defaults] insert_forwarded_headers` (the default) the backend receives
//! X-Forwarded-For (the client), X-Forwarded-Port (the port the client reached) and
//! X-Forwarded-Proto (`http` / `https`) on both listeners; turned off, the listeners are updated
//! and the backend receives none of them.
//!
//! Checked on the router of `https_with_sni_redirects_and_acme_through_octavia_rendered_haproxy`
//! (functional/dataplane.rs), which has both listeners: its requests carry the first check, and
//! the option is turned off at its end. (Until 2026-11-28 a test of its own,
//! `forwarded_headers_reach_the_backend_on_both_listeners`, built a router with the same
//! manifests for it.)

use super::*;

/// The X-Forwarded-* headers the backend received for result `r` (names lower-cased).
fn forwarded(r: &serde_json::Value) -> BTreeMap<String, String> {
    let headers = r["body"]["headers"].as_object().unwrap_or_else(|| panic!("no echo body: {r:#}"));
    headers
        .iter()
        .filter(|(k, _)| k.to_ascii_lowercase().starts_with("x-forwarded-"))
        .map(|(k, v)| (k.to_ascii_lowercase(), v.as_str().unwrap_or_default().to_string()))
        .collect()
}

/// In run.py's answer `out`, the backend received the three headers on request `http` (to the
/// HTTP listener) and request `https` (to the TERMINATED_HTTPS listener). X-Forwarded-Port is
/// the local port haproxy binds for the listener (`port_map`), which is what `%[dst_port]` gives.
pub(super) fn assert_inserted(out: &serde_json::Value, desired: &DesiredRouter, http: usize, https: usize) {
    let port = |listener: u16| out["port_map"][listener.to_string()].as_u64().expect("port map").to_string();
    let https_port = desired.https.as_ref().expect("TLS listener").port;
    let want = |proto: &str, port: String| -> BTreeMap<String, String> {
        [("x-forwarded-for", "127.0.0.1".to_string()), ("x-forwarded-port", port), ("x-forwarded-proto", proto.into())]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect()
    };
    let results = out["results"].as_array().expect("results");
    assert_eq!(results[http]["request"]["scheme"], "http");
    assert_eq!(results[https]["request"]["scheme"], "https");
    println!("forwarded headers: http {:?}, https {:?}", forwarded(&results[http]), forwarded(&results[https]));
    assert_eq!(forwarded(&results[http]), want("http", port(80)), "HTTP listener");
    assert_eq!(forwarded(&results[https]), want("https", port(https_port)), "TERMINATED_HTTPS listener");
}

/// Turns `insert_forwarded_headers` off on `r` (converged to `desired`): both listeners are
/// updated (nothing else is written), and `requests` (each answered by a Service) reach their
/// backend with no X-Forwarded-* header (what [`assert_inserted`] would see if the listeners
/// lost their `insert_headers`).
pub(super) async fn assert_none_once_turned_off(
    mut r: Router,
    desired: &DesiredRouter,
    requests: &[serde_json::Value],
) {
    r.spec_mut().insert_forwarded_headers = false;
    let report = converge(&r, desired).await;
    let kinds: Vec<&str> = report.writes.iter().map(|w| w.kind).collect();
    assert_eq!(kinds, ["update_listener", "update_listener"], "the HTTP and the HTTPS listener: {:?}", report.writes);
    let (out, exited_ok) = run_py_full(&report.lb_id, &echo_names(desired), None, requests);
    assert!(exited_ok && out["ok"] == true, "data plane failed: {out:#}");
    for res in out["results"].as_array().unwrap() {
        assert_eq!(forwarded(res), BTreeMap::new(), "{}", res["request"]);
    }
}
