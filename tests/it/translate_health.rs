//! Per-Service health monitors: the annotation is validated against Octavia's limits (a bad value
//! is a Warning naming the Service and keeps the monitor the pool has), and the driver converges
//! a pool's monitor with the fewest writes (none when equal, one PUT when values change, delete +
//! create only for a type change), checked by applying the plans on the simulator.

use kuryr_l7_router::driver::diff::plan_writes;
use kuryr_l7_router::driver::ownership::Ownership;
use kuryr_l7_router::driver::plan::{DiffOptions, Write};
use kuryr_l7_router::driver::populated_create;
use kuryr_l7_router::driver::sim::Simulator;
use kuryr_l7_router::driver::spec::RouterSpec;
use kuryr_l7_router::model::HealthMonitorSpec;
use kuryr_l7_router::model::{DesiredRouter, PoolHealthMonitor};
use kuryr_l7_router::translate::health::{HEALTH_MONITOR_ANNOTATION, is_expected_codes, parse_health_monitor};
use kuryr_l7_router::translate::manifest::load_str;
use kuryr_l7_router::translate::{Inputs, TranslateOptions, translate};
use std::path::Path;

fn base() -> HealthMonitorSpec {
    HealthMonitorSpec::default()
}

#[test]
fn annotation_fields_override_the_global_values() {
    let hm = parse_health_monitor(r#"{"path": "/healthz", "expectedCodes": "200-399", "delay": 10}"#, &base()).unwrap();
    assert_eq!(hm.url_path.as_deref(), Some("/healthz"));
    assert_eq!(hm.expected_codes.as_deref(), Some("200-399"));
    assert_eq!(hm.delay, 10);
    // What the annotation does not say comes from the base.
    assert_eq!((hm.monitor_type.as_str(), hm.timeout, hm.max_retries), ("HTTP", base().timeout, base().max_retries));
    // Octavia's names are accepted too; the type is case-insensitive; TCP has no path or codes.
    let tcp =
        parse_health_monitor(r#"{"type": "tcp", "interval": 7, "timeout": 7, "max_retries": 5}"#, &base()).unwrap();
    assert_eq!(
        tcp,
        HealthMonitorSpec {
            monitor_type: "TCP".into(),
            delay: 7,
            timeout: 7,
            max_retries: 5,
            url_path: None,
            expected_codes: None
        }
    );
    let https = parse_health_monitor(r#"{"type": "HTTPS", "url_path": "/ready"}"#, &base()).unwrap();
    assert_eq!((https.monitor_type.as_str(), https.url_path.as_deref()), ("HTTPS", Some("/ready")));
}

#[test]
fn bad_annotations_are_refused_with_the_field_named() {
    let cases: &[(&str, &str)] = &[
        (r#"{"delay": 2, "timeout": 3}"#, "timeout (3) must not exceed delay (2)"),
        (r#"{"timeout": 0}"#, "at least 1 second"),
        (r#"{"path": "healthz"}"#, "must start with /"),
        (r#"{"path": "/a b"}"#, "must start with / and contain no spaces"),
        (r#"{"expectedCodes": "2xx"}"#, "expectedCodes \"2xx\""),
        (r#"{"expectedCodes": "204-200"}"#, "expectedCodes"),
        (r#"{"type": "UDP-CONNECT"}"#, "is not one of HTTP, HTTPS, TCP, PING"),
        (r#"{"type": "PING", "path": "/"}"#, "HTTP and HTTPS monitors only"),
        (r#"{"maxRetries": 11}"#, "maxRetries (11) must be 1..10"),
        (r#"{"pth": "/"}"#, "unknown field `pth`"),
        (r#"/healthz"#, "not a valid JSON object"),
    ];
    for (raw, want) in cases {
        let err = parse_health_monitor(raw, &base()).expect_err(raw);
        assert!(err.contains(want), "{raw}: {err:?} does not say {want:?}");
    }
}

#[test]
fn expected_codes_follow_octavias_syntax() {
    for ok in ["200", "200,301", "200,202,204", "200-204", "100-599"] {
        assert!(is_expected_codes(ok), "{ok}");
    }
    for bad in ["", "20", "2000", "600", "200-", "200,", "200 - 204", "204-200", "200-204,301", "abc"] {
        assert!(!is_expected_codes(bad), "{bad}");
    }
}

/// One Ingress routing to `web` and `api`; `web` carries `annotation` when given.
fn inputs(annotation: Option<&str>) -> Inputs {
    let ann =
        annotation.map(|a| format!("  annotations: {{{HEALTH_MONITOR_ANNOTATION}: '{a}'}}\n")).unwrap_or_default();
    let text = format!(
        r#"apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {{name: kuryr}}
spec: {{controller: openstack.org/kuryr-l7-router}}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {{name: shop, namespace: shop}}
spec:
  ingressClassName: kuryr
  rules:
  - host: shop.example.com
    http:
      paths:
      - {{path: /, pathType: Prefix, backend: {{service: {{name: web, port: {{number: 80}}}}}}}}
      - {{path: /api, pathType: Prefix, backend: {{service: {{name: api, port: {{number: 80}}}}}}}}
---
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: shop
{ann}spec:
  ports: [{{port: 80, targetPort: 8080}}]
---
apiVersion: v1
kind: Service
metadata: {{name: api, namespace: shop}}
spec:
  ports: [{{port: 80, targetPort: 8080}}]
"#
    );
    let mut inputs = Inputs::default();
    load_str(&text, Path::new("health.yaml"), &mut inputs).unwrap();
    inputs
}

fn desired(annotation: Option<&str>) -> DesiredRouter {
    translate(&inputs(annotation), &TranslateOptions::default())
}

#[test]
fn the_annotation_reaches_the_services_pools_only() {
    let d = desired(Some(r#"{"path": "/healthz", "expectedCodes": "200,301"}"#));
    assert_eq!(d.health_monitors.len(), 1, "{:?}", d.health_monitors);
    let Some(PoolHealthMonitor::Custom(hm)) = d.health_monitors.get("shop_web") else {
        panic!("shop_web: {:?}", d.health_monitors);
    };
    assert_eq!((hm.url_path.as_deref(), hm.expected_codes.as_deref()), (Some("/healthz"), Some("200,301")));
    assert!(!d.warnings.iter().any(|w| w.reason == "InvalidHealthMonitor"), "{:?}", d.warnings);
    assert!(desired(None).health_monitors.is_empty());
}

#[test]
fn a_bad_annotation_is_a_warning_on_the_service_and_keeps_the_monitor() {
    let d = desired(Some(r#"{"delay": 1, "timeout": 5}"#));
    assert_eq!(d.health_monitors.get("shop_web"), Some(&PoolHealthMonitor::KeepExisting));
    let w: Vec<_> = d.warnings.iter().filter(|w| w.reason == "InvalidHealthMonitor").collect();
    assert_eq!(w.len(), 1, "{:?}", d.warnings);
    assert_eq!(w[0].object.to_string(), "Service shop/web");
    assert!(
        w[0].message.contains(HEALTH_MONITOR_ANNOTATION) && w[0].message.contains("timeout (5)"),
        "{}",
        w[0].message
    );
    // Other routes are unaffected.
    assert_eq!(d.policies.len(), 2);
}

fn opts(global: Option<HealthMonitorSpec>) -> DiffOptions {
    DiffOptions { ownership: Ownership::new("c1"), health_monitor: global }
}

/// Plan and apply on the simulator; the writes made.
fn converge(sim: &mut Simulator, d: &DesiredRouter, o: &DiffOptions) -> Vec<Write> {
    let plan = plan_writes(d, &sim.router, o);
    sim.apply_all(&plan.writes).unwrap();
    plan.writes
}

fn monitor_of(sim: &Simulator, pool: &str) -> Option<HealthMonitorSpec> {
    sim.router.pools.iter().find(|p| p.name == pool).and_then(|p| p.healthmonitor.as_ref()).map(|h| h.spec.clone())
}

fn kinds(writes: &[Write]) -> Vec<&'static str> {
    writes.iter().map(Write::kind).collect()
}

#[test]
fn monitor_changes_cost_the_fewest_writes() {
    for global in [None, Some(base())] {
        let o = opts(global.clone());
        let mut sim = Simulator::default();
        let first = desired(Some(r#"{"path": "/healthz"}"#));
        converge(&mut sim, &first, &o);
        let want = |d: &DesiredRouter| match &d.health_monitors["shop_web"] {
            PoolHealthMonitor::Custom(h) => h.clone(),
            other => panic!("{other:?}"),
        };
        assert_eq!(monitor_of(&sim, "shop_web"), Some(want(&first)));
        assert_eq!(monitor_of(&sim, "shop_api"), global, "the other pool keeps the global default");
        assert!(converge(&mut sim, &first, &o).is_empty(), "equal: no write");

        // New values: one PUT, in place.
        let changed = desired(Some(r#"{"path": "/ready", "expectedCodes": "200-204", "delay": 9}"#));
        assert_eq!(kinds(&converge(&mut sim, &changed, &o)), ["update_healthmonitor"]);
        assert_eq!(monitor_of(&sim, "shop_web"), Some(want(&changed)));

        // A bad value: a warning, and the running monitor is kept (no write).
        let bad = desired(Some(r#"{"path": "ready"}"#));
        assert!(converge(&mut sim, &bad, &o).is_empty());
        assert_eq!(monitor_of(&sim, "shop_web"), Some(want(&changed)));

        // The type is immutable in Octavia: delete + create.
        let tcp = desired(Some(r#"{"type": "TCP"}"#));
        assert_eq!(kinds(&converge(&mut sim, &tcp, &o)), ["delete_healthmonitor", "create_healthmonitor"]);
        assert_eq!(monitor_of(&sim, "shop_web").map(|h| h.monitor_type), Some("TCP".into()));

        // Annotation removed: back to the global default (or no monitor).
        converge(&mut sim, &desired(None), &o);
        assert_eq!(monitor_of(&sim, "shop_web"), global);
        assert!(converge(&mut sim, &desired(None), &o).is_empty());
    }
}

#[test]
fn a_bad_annotation_on_a_new_pool_gets_the_global_default() {
    let o = opts(Some(base()));
    let mut sim = Simulator::default();
    converge(&mut sim, &desired(Some("{")), &o);
    assert_eq!(monitor_of(&sim, "shop_web"), Some(base()));
}

#[test]
fn the_fully_populated_create_carries_the_services_monitor() {
    let spec = RouterSpec { insert_forwarded_headers: false, ..RouterSpec::for_tests("r") };
    let body = populated_create(&spec, "subnet", &desired(Some(r#"{"path": "/healthz"}"#)));
    let body = serde_json::to_value(body).unwrap();
    let pools = body["pools"].as_array().unwrap();
    let web = pools.iter().find(|p| p["name"] == "shop_web").unwrap();
    let api = pools.iter().find(|p| p["name"] == "shop_api").unwrap();
    assert_eq!(web["healthmonitor"]["url_path"], "/healthz");
    assert!(api.get("healthmonitor").is_none());
}
