//! Prometheus metrics of the controller (prometheus-client, OpenMetrics text on `/metrics`).
//!
//! All names carry the `kuryr_l7_router_` prefix (one registry for the process). Label values are
//! bounded sets (handler names, HTTP methods, Octavia resource kinds, status codes, error labels
//! from [`ControllerError::metric_label`]) so series do not grow with the number of objects.
//!
//! Every metric of one router (its writer, its translation, its refusals) carries a `router`
//! label, the router's key (see `super::routers`): one controller drives a set of routers, and
//! their series must not add up into one. [`RouterMetrics`] is the view of one router.

use crate::controller::ControllerError;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Prefix of every metric name.
pub(crate) const PREFIX: &str = "kuryr_l7_router";

/// Octavia load balancer `provisioning_status` values, so all are exported (0 or 1).
pub(crate) const PROVISIONING_STATUSES: [&str; 6] =
    ["ACTIVE", "PENDING_CREATE", "PENDING_UPDATE", "PENDING_DELETE", "DELETED", "ERROR"];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReconcileLabels {
    /// `ingress` or `service`.
    pub handler: String,
    /// `ok` or an error's metric label.
    pub result: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct HandlerLabels {
    pub handler: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OctaviaLabels {
    /// HTTP method (`GET`, `POST`, `PUT`, `DELETE`).
    pub method: String,
    /// Octavia resource kind (`loadbalancer`, `listener`, `pool`, `member`, `l7policy`, `l7rule`).
    pub resource: String,
    /// HTTP status code, or `error` when no response came back.
    pub status: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct OctaviaDurationLabels {
    pub method: String,
    pub resource: String,
}

/// The router a series is about (its key: `l7_router_uuid`, else `l7_router_name`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RouterLabels {
    pub router: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct JobLabels {
    pub router: String,
    /// `sync` or `members`.
    pub job: String,
    /// `ok` or the error's label.
    pub result: String,
}

/// Why Octavia refused a write for good (see `driver::isolation::failure_reason`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReasonLabels {
    pub router: String,
    pub reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct StatusLabels {
    pub router: String,
    pub status: String,
}

/// How a pool's members are weighted: a stable rule key (see `translate::zone::weighting_rule`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct WeightingLabels {
    pub router: String,
    pub rule: String,
}

type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;

/// All controller metrics; clone-cheap handles (metrics are `Arc`s inside), registered once.
#[derive(Clone)]
pub struct Metrics {
    pub reconciles: Family<ReconcileLabels, Counter>,
    pub(crate) reconcile_duration: HistogramFamily<HandlerLabels>,
    pub octavia_requests: Family<OctaviaLabels, Counter>,
    pub(crate) octavia_request_duration: HistogramFamily<OctaviaDurationLabels>,
    pub(crate) octavia_write_queue_depth: Family<RouterLabels, Gauge>,
    pub(crate) octavia_conflict_retries: Family<RouterLabels, Counter>,
    pub(crate) change_to_active: HistogramFamily<RouterLabels>,
    pub(crate) router_provisioning_status: Family<StatusLabels, Gauge>,
    /// Duration of each router writer job by job and result.
    pub(crate) octavia_write_job_duration: HistogramFamily<JobLabels>,
    /// Pools of the desired router by weighting rule (zone-aware kinds and each even fallback).
    pub(crate) pool_weighting: Family<WeightingLabels, Gauge>,
    /// Writes Octavia refused for good (their object put on hold), by reason.
    pub write_failures: Family<ReasonLabels, Counter>,
    /// 1 while the router refuses every write (ERROR, or busy beyond write_timeout).
    pub(crate) router_writes_blocked: Family<RouterLabels, Gauge>,
    /// Ingresses whose new routes wait for the project's L7 quota (as of the last Sync).
    pub(crate) ingresses_waiting_for_quota: Family<RouterLabels, Gauge>,
    /// Translations of the whole cluster (one per Sync job, whatever its waiters).
    pub translations: Family<RouterLabels, Counter>,
    /// Failed creates of a router of the set (quota, refused create).
    pub router_create_failures: Family<RouterLabels, Counter>,
    /// The wait before the next create of a router whose create failed (0: none waits).
    pub(crate) router_create_backoff: Family<RouterLabels, Gauge>,
    /// The weighting rules last counted per router, so that a rule gone from one router's
    /// pools is removed without touching the other routers' series.
    weighting_rules: std::sync::Arc<std::sync::Mutex<HashMap<String, Vec<&'static str>>>>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self {
            reconciles: Family::default(),
            // 10 ms .. ~82 s: reconciles wait for Octavia (a write takes seconds).
            reconcile_duration: Family::new_with_constructor(|| Histogram::new(exponential_buckets(0.01, 2.0, 14))),
            octavia_requests: Family::default(),
            // 5 ms .. ~20 s.
            octavia_request_duration: Family::new_with_constructor(|| {
                Histogram::new(exponential_buckets(0.005, 2.0, 13))
            }),
            octavia_write_queue_depth: Family::default(),
            octavia_conflict_retries: Family::default(),
            // 0.5 s .. ~17 min: amphora updates take seconds to minutes.
            change_to_active: Family::new_with_constructor(|| Histogram::new(exponential_buckets(0.5, 2.0, 12))),
            router_provisioning_status: Family::default(),
            // 0.05 s .. ~7 min.
            octavia_write_job_duration: Family::new_with_constructor(|| {
                Histogram::new(exponential_buckets(0.05, 2.0, 14))
            }),
            pool_weighting: Family::default(),
            write_failures: Family::default(),
            router_writes_blocked: Family::default(),
            ingresses_waiting_for_quota: Family::default(),
            translations: Family::default(),
            router_create_failures: Family::default(),
            router_create_backoff: Family::default(),
            weighting_rules: Default::default(),
        }
    }
}

impl Metrics {
    /// Creates the metrics and registers them in `registry` (use [`Metrics::registry`] for a fresh
    /// prefixed one).
    pub(crate) fn register(registry: &mut Registry) -> Self {
        let m = Self::default();
        registry.register("reconciles", "Reconciles by handler and result", m.reconciles.clone());
        registry.register(
            "translations",
            "Translations of the whole cluster (one per Sync job of the router writer)",
            m.translations.clone(),
        );
        registry.register(
            "write_failures",
            "Octavia writes refused for good (their object put on hold, the others go on), by reason",
            m.write_failures.clone(),
        );
        registry.register(
            "router_create_failures",
            "Failed creates of a router of the set (amphora, Nova or floating-IP quota, refused create); retried after a backoff",
            m.router_create_failures.clone(),
        );
        registry.register_with_unit(
            "router_create_backoff",
            "The wait before the next create of a router whose create failed (0: none waits)",
            prometheus_client::registry::Unit::Seconds,
            m.router_create_backoff.clone(),
        );
        registry.register(
            "router_writes_blocked",
            "1 while the L7 router refuses every write (provisioning_status ERROR or busy beyond write_timeout)",
            m.router_writes_blocked.clone(),
        );
        registry.register(
            "ingresses_waiting_for_quota",
            "Ingresses whose routes not yet on the L7 router wait for the project's Octavia L7 quota (their routes on the router stay)",
            m.ingresses_waiting_for_quota.clone(),
        );
        registry.register_with_unit(
            "reconcile_duration",
            "Reconcile duration by handler",
            prometheus_client::registry::Unit::Seconds,
            m.reconcile_duration.clone(),
        );
        registry.register(
            "octavia_requests",
            "Octavia API requests by method, resource and status",
            m.octavia_requests.clone(),
        );
        registry.register_with_unit(
            "octavia_request_duration",
            "Octavia API request duration by method and resource",
            prometheus_client::registry::Unit::Seconds,
            m.octavia_request_duration.clone(),
        );
        registry.register(
            "octavia_write_queue_depth",
            "Octavia writes waiting for the router to be ACTIVE",
            m.octavia_write_queue_depth.clone(),
        );
        registry.register(
            "octavia_conflict_retries",
            "Octavia writes retried after 409 (router immutable)",
            m.octavia_conflict_retries.clone(),
        );
        registry.register_with_unit(
            "change_to_active",
            "Time from a Kubernetes change to the router being ACTIVE with it",
            prometheus_client::registry::Unit::Seconds,
            m.change_to_active.clone(),
        );
        registry.register(
            "router_provisioning_status",
            "Router provisioning_status (1 for the current one)",
            m.router_provisioning_status.clone(),
        );
        registry.register_with_unit(
            "octavia_write_job_duration",
            "Duration of each router writer job (sync, members) by result",
            prometheus_client::registry::Unit::Seconds,
            m.octavia_write_job_duration.clone(),
        );
        registry.register(
            "pool_weighting",
            "Pools of the desired router by member weighting rule (topology, prefer_same_zone, backup, or the even fallback's rule)",
            m.pool_weighting.clone(),
        );
        m
    }

    /// The metrics of the router `router` (its key).
    pub fn router(&self, router: &str) -> RouterMetrics {
        RouterMetrics { router: router.to_string(), metrics: self.clone() }
    }

    /// A fresh `kuryr_l7_router`-prefixed registry with the metrics in it.
    pub fn registry() -> (Registry, Self) {
        let mut registry = Registry::with_prefix(PREFIX);
        let metrics = Self::register(&mut registry);
        (registry, metrics)
    }

    /// Starts timing a reconcile of `handler`; the duration is recorded when the guard drops
    /// (also on early return or panic), like controller-rs's `ReconcileMeasurer`.
    pub(crate) fn reconcile_timer(&self, handler: &str) -> ReconcileTimer {
        ReconcileTimer {
            start: Instant::now(),
            histogram: self.reconcile_duration.get_or_create_owned(&HandlerLabels { handler: handler.into() }),
        }
    }

    /// Counts a finished reconcile of `handler`.
    pub fn reconciled<T>(&self, handler: &str, result: &Result<T, ControllerError>) {
        let result = match result {
            Ok(_) => "ok",
            Err(e) => e.metric_label(),
        };
        self.reconcile_result(handler, result);
    }

    /// Counts a finished reconcile with an explicit result label (for errors of other modules).
    pub fn reconcile_result(&self, handler: &str, result: &str) {
        self.reconciles.get_or_create(&ReconcileLabels { handler: handler.into(), result: result.into() }).inc();
    }

    /// Records one Octavia request; `status` is `None` when no response came back.
    pub fn octavia_request(&self, method: &str, resource: &str, status: Option<u16>, elapsed: Duration) {
        let status = status.map_or_else(|| "error".to_string(), |s| s.to_string());
        self.octavia_requests
            .get_or_create(&OctaviaLabels { method: method.into(), resource: resource.into(), status })
            .inc();
        self.octavia_request_duration
            .get_or_create(&OctaviaDurationLabels { method: method.into(), resource: resource.into() })
            .observe(elapsed.as_secs_f64());
    }
}

/// The metrics of one router: every series it sets carries `router="<key>"`.
#[derive(Clone)]
pub struct RouterMetrics {
    router: String,
    metrics: Metrics,
}

impl RouterMetrics {
    fn labels(&self) -> RouterLabels {
        RouterLabels { router: self.router.clone() }
    }

    /// The router's key.
    pub fn router(&self) -> &str {
        &self.router
    }

    /// Sets the router's provisioning status: 1 for `current`, 0 for every other known status.
    pub fn set_provisioning_status(&self, current: &str) {
        for s in PROVISIONING_STATUSES.iter().copied().chain(std::iter::once(current)) {
            let labels = StatusLabels { router: self.router.clone(), status: s.into() };
            self.metrics.router_provisioning_status.get_or_create(&labels).set(i64::from(s == current));
        }
    }

    /// Counts the desired router's pools by weighting rule (replacing this router's previous
    /// counts, not the other routers').
    pub(crate) fn pool_weightings<'a>(&self, reasons: impl Iterator<Item = &'a str>) {
        let mut counts: std::collections::BTreeMap<&'static str, i64> = std::collections::BTreeMap::new();
        for r in reasons {
            *counts.entry(crate::translate::zone::weighting_rule(r)).or_default() += 1;
        }
        let label = |rule: &str| WeightingLabels { router: self.router.clone(), rule: rule.into() };
        let mut last = self.metrics.weighting_rules.lock().expect("metrics lock");
        for rule in last.remove(&self.router).unwrap_or_default() {
            self.metrics.pool_weighting.remove(&label(rule));
        }
        for (rule, n) in &counts {
            self.metrics.pool_weighting.get_or_create(&label(rule)).set(*n);
        }
        last.insert(self.router.clone(), counts.into_keys().collect());
    }

    /// Jobs waiting in the router's writer (not counting the one running).
    pub(crate) fn queue_depth(&self, depth: usize) {
        self.metrics.octavia_write_queue_depth.get_or_create(&self.labels()).set(depth as i64);
    }

    /// Writes of the router retried after a 409.
    pub fn conflict_retries(&self, n: u64) {
        self.metrics.octavia_conflict_retries.get_or_create(&self.labels()).inc_by(n);
    }

    /// From a Kubernetes change to the router being ACTIVE with it.
    pub(crate) fn change_to_active(&self, elapsed: Duration) {
        self.metrics.change_to_active.get_or_create(&self.labels()).observe(elapsed.as_secs_f64());
    }

    /// One writer job (`sync`, `members`) finished with `result` (`ok` or the error's label).
    pub(crate) fn job_done(&self, job: &str, result: &str, elapsed: Duration) {
        let labels = JobLabels { router: self.router.clone(), job: job.into(), result: result.into() };
        self.metrics.octavia_write_job_duration.get_or_create(&labels).observe(elapsed.as_secs_f64());
    }

    /// One translation of the whole cluster for this router.
    pub fn translated(&self) {
        self.metrics.translations.get_or_create(&self.labels()).inc();
    }

    /// A create of the router failed; the next waits `backoff`.
    pub(crate) fn create_failed(&self, backoff: Duration) {
        self.metrics.router_create_failures.get_or_create(&self.labels()).inc();
        self.metrics.router_create_backoff.get_or_create(&self.labels()).set(backoff.as_secs() as i64);
    }

    /// The router synced: no create waits.
    pub(crate) fn create_ok(&self) {
        self.metrics.router_create_backoff.get_or_create(&self.labels()).set(0);
    }

    /// Whether the router refuses every write now.
    pub(crate) fn writes_blocked(&self, blocked: bool) {
        self.metrics.router_writes_blocked.get_or_create(&self.labels()).set(i64::from(blocked));
    }

    /// Ingresses whose new routes wait for the quota, as of the last Sync.
    pub(crate) fn waiting_for_quota(&self, n: usize) {
        self.metrics.ingresses_waiting_for_quota.get_or_create(&self.labels()).set(n as i64);
    }

    /// A write Octavia refused for good, by reason.
    pub(crate) fn write_failure(&self, reason: &str) {
        let labels = ReasonLabels { router: self.router.clone(), reason: reason.into() };
        self.metrics.write_failures.get_or_create(&labels).inc();
    }
}

/// Drop guard recording a reconcile's duration.
pub(crate) struct ReconcileTimer {
    start: Instant,
    histogram: Histogram,
}

impl Drop for ReconcileTimer {
    fn drop(&mut self) {
        self.histogram.observe(self.start.elapsed().as_secs_f64());
    }
}

/// OpenMetrics text of `registry`.
pub fn encode(registry: &Registry) -> String {
    let mut out = String::new();
    prometheus_client::encoding::text::encode(&mut out, registry).expect("writing to a String cannot fail");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_contains_every_metric_after_use() {
        let (registry, m) = Metrics::registry();
        {
            let _t = m.reconcile_timer("ingress");
        }
        m.reconciled::<()>("ingress", &Ok(()));
        m.reconciled::<()>("service", &Err(ControllerError::MissingObjectKey("name")));
        m.octavia_request("PUT", "member", Some(202), Duration::from_millis(30));
        m.octavia_request("POST", "l7policy", None, Duration::from_millis(5));
        let r = m.router("r1");
        r.queue_depth(3);
        r.conflict_retries(1);
        r.change_to_active(Duration::from_secs(4));
        r.set_provisioning_status("PENDING_UPDATE");
        r.set_provisioning_status("ACTIVE");
        let text = encode(&registry);
        for needle in [
            r#"kuryr_l7_router_reconciles_total{handler="ingress",result="ok"} 1"#,
            r#"kuryr_l7_router_reconciles_total{handler="service",result="missing_object_key"} 1"#,
            r#"kuryr_l7_router_reconcile_duration_seconds_count{handler="ingress"} 1"#,
            r#"kuryr_l7_router_octavia_requests_total{method="PUT",resource="member",status="202"} 1"#,
            r#"kuryr_l7_router_octavia_requests_total{method="POST",resource="l7policy",status="error"} 1"#,
            r#"kuryr_l7_router_octavia_request_duration_seconds_count{method="PUT",resource="member"} 1"#,
            r#"kuryr_l7_router_octavia_write_queue_depth{router="r1"} 3"#,
            r#"kuryr_l7_router_octavia_conflict_retries_total{router="r1"} 1"#,
            r#"kuryr_l7_router_change_to_active_seconds_count{router="r1"} 1"#,
            r#"kuryr_l7_router_router_provisioning_status{router="r1",status="ACTIVE"} 1"#,
            r#"kuryr_l7_router_router_provisioning_status{router="r1",status="PENDING_UPDATE"} 0"#,
            r#"kuryr_l7_router_router_provisioning_status{router="r1",status="ERROR"} 0"#,
        ] {
            assert!(text.contains(needle), "missing {needle:?} in\n{text}");
        }
        assert!(text.ends_with("# EOF\n"));
    }

    #[test]
    fn unknown_provisioning_status_is_exported_too() {
        let (registry, m) = Metrics::registry();
        m.router("r1").set_provisioning_status("SOMETHING_NEW");
        let text = encode(&registry);
        assert!(text.contains(r#"router_provisioning_status{router="r1",status="SOMETHING_NEW"} 1"#), "{text}");
        assert!(text.contains(r#"router_provisioning_status{router="r1",status="ACTIVE"} 0"#), "{text}");
    }

    /// Two routers' series stay apart: each router's pool weighting counts replace only its
    /// own, and its gauges carry its key.
    #[test]
    fn router_series_carry_the_router_and_stay_apart() {
        let (registry, m) = Metrics::registry();
        let (a, b) = (m.router("a"), m.router("b"));
        a.pool_weightings(["zone-aware: x", "zone-aware: y"].into_iter());
        b.pool_weightings(["zone-aware: x"].into_iter());
        a.pool_weightings(std::iter::empty());
        a.writes_blocked(true);
        b.waiting_for_quota(2);
        b.write_failure("quota");
        b.translated();
        let text = encode(&registry);
        for needle in [
            r#"kuryr_l7_router_pool_weighting{router="b",rule="topology"} 1"#,
            r#"kuryr_l7_router_router_writes_blocked{router="a"} 1"#,
            r#"kuryr_l7_router_ingresses_waiting_for_quota{router="b"} 2"#,
            r#"kuryr_l7_router_write_failures_total{router="b",reason="quota"} 1"#,
            r#"kuryr_l7_router_translations_total{router="b"} 1"#,
        ] {
            assert!(text.contains(needle), "missing {needle:?} in\n{text}");
        }
        assert!(!text.contains(r#"pool_weighting{router="a""#), "router a has no pool any more:\n{text}");
    }
}
