//! The listeners' `insert_headers` through Octavia-rendered haproxy: with
//! `[octavia_defaults] insert_forwarded_headers` (the default) the backend receives
//! X-Forwarded-For (the client), X-Forwarded-Port (the port the client reached) and
//! X-Forwarded-Proto (`http` / `https`) on both listeners; turned off, the listeners are updated
//! and the backend receives none of them.

use super::*;

/// run.py's whole answer for `requests` (its results and its `port_map`: listener port → the
/// local port haproxy binds, which is what `%[dst_port]` gives X-Forwarded-Port here).
fn run_full(lb_id: &str, desired: &DesiredRouter, requests: &[serde_json::Value]) -> serde_json::Value {
    let (v, exited_ok) = run_py_full(lb_id, &echo_names(desired), None, requests);
    assert!(exited_ok, "data plane failed: {v:#}");
    v
}

/// The X-Forwarded-* headers the backend received for result `r` (names lower-cased).
fn forwarded(r: &serde_json::Value) -> BTreeMap<String, String> {
    let headers = r["body"]["headers"].as_object().unwrap_or_else(|| panic!("no echo body: {r:#}"));
    headers
        .iter()
        .filter(|(k, _)| k.to_ascii_lowercase().starts_with("x-forwarded-"))
        .map(|(k, v)| (k.to_ascii_lowercase(), v.as_str().unwrap_or_default().to_string()))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn forwarded_headers_reach_the_backend_on_both_listeners() {
    if !enabled() {
        return;
    }
    let r = local_router("holds-dp", "fwd").await.with_barbican(Barbican::new(session("admin", "admin")));
    let cluster = r.spec().ownership.cluster.clone();
    common::with_router(r, |r| async move {
        let mut r = r;
        let mut inputs = Inputs::default();
        load_str(&tls_manifests(), Path::new("tls.yaml"), &mut inputs).unwrap();
        inputs.now = Some(std::time::SystemTime::now());
        let desired = translate(&inputs, &options("kuryr-l7-router"));
        let report = converge(&r, &desired).await;
        let requests = [
            serde_json::json!({"scheme": "http", "host": "plain.example.com", "path": "/", "expect": "web"}),
            serde_json::json!({"scheme": "https", "host": "secure.example.com", "path": "/", "expect": "web"}),
        ];
        let out = run_full(&report.lb_id, &desired, &requests);
        let port = |listener: u16| out["port_map"][listener.to_string()].as_u64().expect("port map").to_string();
        let https_port = desired.https.as_ref().expect("TLS listener").port;
        let want = |proto: &str, port: String| -> BTreeMap<String, String> {
            [
                ("x-forwarded-for", "127.0.0.1".to_string()),
                ("x-forwarded-port", port),
                ("x-forwarded-proto", proto.into()),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect()
        };
        let results = out["results"].as_array().unwrap();
        println!("http: {:?}\nhttps: {:?}", forwarded(&results[0]), forwarded(&results[1]));
        assert_eq!(forwarded(&results[0]), want("http", port(80)), "HTTP listener");
        assert_eq!(forwarded(&results[1]), want("https", port(https_port)), "TERMINATED_HTTPS listener");

        // Turned off: both listeners are updated, and the backend receives none of them (this
        // is what the assertions above would see if the listeners lost their insert_headers).
        r.spec_mut().insert_forwarded_headers = false;
        let report = converge(&r, &desired).await;
        let updates = report.writes.iter().filter(|w| w.description.contains("insert_headers")).count();
        println!("insert_forwarded_headers off: {updates} listener update(s)");
        let out = run_full(&report.lb_id, &desired, &requests);
        for res in out["results"].as_array().unwrap() {
            assert_eq!(forwarded(res), BTreeMap::new(), "{}", res["request"]);
        }
    })
    .await;
    super::delete_cluster_secrets(&cluster).await;
}
