//! The Ingress handlers' context of one router, `router-1`, for the tests that reconcile
//! against a mock or fake API server (tests/it/controller_pipeline.rs, controller_holds.rs).

use kuryr_l7_router::controller::context::{Context, Stores};
use kuryr_l7_router::controller::metrics::Metrics;
use kuryr_l7_router::controller::outputs::events::{DEFAULT_DEDUP_WINDOW, EventPublisher};
use kuryr_l7_router::controller::writer::WriterHandle;
use kuryr_l7_router::translate::TranslateOptions;
use std::sync::Arc;
use tokio::sync::watch;

/// Router `router-1`'s context on `client`: its caches `stores`, its writer, an Event publisher
/// of its own (the default dedup window), `metrics`, `opts`, the caches' readiness from
/// `caches_ready`, no readiness to report.
pub fn router_context(
    client: kube::Client,
    stores: Stores,
    writer: WriterHandle,
    metrics: Metrics,
    opts: TranslateOptions,
    caches_ready: watch::Receiver<bool>,
) -> Context {
    let events = Arc::new(EventPublisher::new(client.clone(), None, DEFAULT_DEDUP_WINDOW));
    Context::new(client, stores, writer, events, metrics, opts, "router-1".into(), caches_ready, None)
}
