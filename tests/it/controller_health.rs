//! `/healthz`, `/readyz`, `/metrics` over real HTTP on 127.0.0.1:0.

use kuryr_l7_router::controller::health::{Readiness, bind, router};
use kuryr_l7_router::controller::metrics::Metrics;
use std::sync::Arc;
use tokio::sync::{oneshot, watch};

#[tokio::test]
async fn endpoints_follow_readiness_and_serve_metrics() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let (registry, metrics) = Metrics::registry();
    metrics.reconcile_result("ingress", "ok");
    let (ready_tx, ready_rx) = watch::channel(Readiness::expecting(false, ["r1"]));
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let (addr, serve) = bind("127.0.0.1:0".parse().unwrap(), router(ready_rx, Arc::new(registry)), async {
        let _ = stop_rx.await;
    })
    .await
    .unwrap();
    let server = tokio::spawn(serve);
    let http = reqwest::Client::new();
    let get = |path: &str| {
        let req = http.get(format!("http://{addr}{path}"));
        async move {
            let resp = req.send().await.unwrap();
            let status = resp.status().as_u16();
            let ct = resp.headers().get("content-type").map(|v| v.to_str().unwrap().to_string());
            (status, ct, resp.text().await.unwrap())
        }
    };

    assert_eq!(get("/healthz").await.0, 200);
    let (status, _, body) = get("/readyz").await;
    assert_eq!((status, body.as_str()), (503, "caches not synced\nrouter r1: not ready\n"));

    ready_tx.send_modify(|r| r.caches_synced = true);
    let (status, _, body) = get("/readyz").await;
    assert_eq!((status, body.as_str()), (503, "not ready\nrouter r1: not ready\n"));

    ready_tx.send_modify(|r| r.router_mut("r1").ready = true);
    let (status, _, body) = get("/readyz").await;
    assert_eq!((status, body.as_str()), (200, "ready\nrouter r1: ready\n"));
    assert_eq!(get("/healthz").await.0, 200);

    let (status, ct, body) = get("/metrics").await;
    assert_eq!(status, 200);
    assert!(ct.unwrap().starts_with("application/openmetrics-text"));
    assert!(body.contains(r#"kuryr_l7_router_reconciles_total{handler="ingress",result="ok"} 1"#), "{body}");

    assert_eq!(get("/nope").await.0, 404);

    // Graceful shutdown: the server future ends once the signal fires.
    stop_tx.send(()).unwrap();
    server.await.unwrap().unwrap();
}
