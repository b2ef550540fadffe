//! Per-Service health monitors: the `kuryr-l7-router.openstack.org/health-monitor` annotation.
//!
//! Why: one global monitor (HTTP GET `/` expecting 200) marks down every application that answers
//! `/` with a redirect or a 404. A Service says how it is probed; what it does not say comes from
//! `[octavia_defaults] health_monitor*`. Values are checked against Octavia's own limits here, so
//! a bad annotation is a Warning naming the Service and the field, never a failed write that would
//! hold up the rest of the router; and it never changes a running monitor
//! ([`PoolHealthMonitor::KeepExisting`]).

use k8s_openapi::api::core::v1::Service;
use serde::Deserialize;

use crate::model::{HealthMonitorSpec, KubeRef, PoolHealthMonitor, Warning};

pub const HEALTH_MONITOR_ANNOTATION: &str = "kuryr-l7-router.openstack.org/health-monitor";

/// The annotation's JSON. Field names follow Kubernetes probes where they exist (`path`,
/// `periodSeconds`-like `delay`), with Octavia's names accepted as aliases.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Annotation {
    #[serde(rename = "type")]
    monitor_type: Option<String>,
    #[serde(alias = "url_path", alias = "urlPath")]
    path: Option<String>,
    #[serde(alias = "expected_codes")]
    expected_codes: Option<String>,
    #[serde(alias = "interval")]
    delay: Option<u32>,
    timeout: Option<u32>,
    #[serde(alias = "max_retries")]
    max_retries: Option<u32>,
}

const TYPES: [&str; 4] = ["HTTP", "HTTPS", "TCP", "PING"];

/// Octavia's `expected_codes`: one code, a comma list (200,301) or a range (200-204), 100..599.
pub fn is_expected_codes(raw: &str) -> bool {
    let code = |s: &str| s.len() == 3 && s.parse::<u16>().is_ok_and(|c| (100..=599).contains(&c));
    if let Some((a, b)) = raw.split_once('-') {
        return code(a) && code(b) && a <= b;
    }
    raw.split(',').all(code)
}

/// The monitor an annotation asks for, on top of `base` (the global values), or why not.
pub fn parse_health_monitor(raw: &str, base: &HealthMonitorSpec) -> Result<HealthMonitorSpec, String> {
    let a: Annotation = serde_json::from_str(raw).map_err(|e| format!("not a valid JSON object: {e}"))?;
    let monitor_type = a.monitor_type.as_deref().unwrap_or(&base.monitor_type).to_ascii_uppercase();
    if !TYPES.contains(&monitor_type.as_str()) {
        return Err(format!("type {monitor_type:?} is not one of {}", TYPES.join(", ")));
    }
    let http = monitor_type.starts_with("HTTP");
    if !http && (a.path.is_some() || a.expected_codes.is_some()) {
        return Err(format!("path and expectedCodes apply to HTTP and HTTPS monitors only, not {monitor_type}"));
    }
    let delay = a.delay.unwrap_or(base.delay);
    let timeout = a.timeout.unwrap_or(base.timeout);
    let max_retries = a.max_retries.unwrap_or(base.max_retries);
    if delay == 0 || timeout == 0 {
        return Err(format!("delay ({delay}) and timeout ({timeout}) must be at least 1 second"));
    }
    if timeout > delay {
        return Err(format!("timeout ({timeout}) must not exceed delay ({delay}): Octavia refuses it"));
    }
    if !(1..=10).contains(&max_retries) {
        return Err(format!("maxRetries ({max_retries}) must be 1..10"));
    }
    let (url_path, expected_codes) = if http {
        let path = a.path.or_else(|| base.url_path.clone()).unwrap_or_else(|| "/".into());
        if !path.starts_with('/') || path.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(format!("path {path:?} must start with / and contain no spaces"));
        }
        let codes = a.expected_codes.or_else(|| base.expected_codes.clone()).unwrap_or_else(|| "200".into());
        if !is_expected_codes(&codes) {
            return Err(format!("expectedCodes {codes:?} is not a code (200), a list (200,301) or a range (200-204)"));
        }
        (Some(path), Some(codes))
    } else {
        (None, None)
    };
    Ok(HealthMonitorSpec { monitor_type, delay, timeout, max_retries, url_path, expected_codes })
}

/// The Service's health monitor for its pools: `None` without the annotation, else a monitor or
/// (with a Warning naming the Service) `KeepExisting`.
pub(crate) fn service_health_monitor(
    svc: &Service,
    base: &HealthMonitorSpec,
    warnings: &mut Vec<Warning>,
) -> Option<PoolHealthMonitor> {
    let raw = svc.metadata.annotations.as_ref()?.get(HEALTH_MONITOR_ANNOTATION)?;
    match parse_health_monitor(raw, base) {
        Ok(spec) => Some(PoolHealthMonitor::Custom(spec)),
        Err(why) => {
            let sref = KubeRef::new(
                "Service",
                super::names::namespace_of(&svc.metadata),
                svc.metadata.name.as_deref().unwrap_or(""),
            );
            warnings.push(Warning {
                object: sref.clone(),
                reason: crate::reason::Reason::InvalidHealthMonitor,
                message: format!(
                    "{sref}: annotation {HEALTH_MONITOR_ANNOTATION} ignored: {why}; its pools keep the health monitor they have (the global default if none)"
                ),
            });
            Some(PoolHealthMonitor::KeepExisting)
        }
    }
}
