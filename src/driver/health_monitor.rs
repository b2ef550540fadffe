//! The health monitor of one pool: the global `[octavia_defaults] health_monitor*` or the
//! Service's annotation ([`PoolHealthMonitor`]), converged with the fewest writes: none when equal,
//! an in-place PUT when values change, delete + create only when the type changes (Octavia's
//! `type` is immutable).

use super::actual::ActualPool;
use super::plan::{DiffOptions, PoolRef, Write};
use crate::model::HealthMonitorSpec;
use crate::model::{Pool, PoolHealthMonitor};
use std::collections::BTreeMap;

/// The monitor a pool should have; `actual` is the monitor it has (ours), for `KeepExisting`.
/// The global monitor of a reserved status pool expects the status its responder always answers
/// ([`pool_monitor`]).
pub fn wanted(
    monitors: &BTreeMap<String, PoolHealthMonitor>,
    pool: &str,
    actual: Option<&HealthMonitorSpec>,
    opts: &DiffOptions,
) -> Option<HealthMonitorSpec> {
    match monitors.get(pool) {
        Some(PoolHealthMonitor::Custom(spec)) => Some(spec.clone()),
        Some(PoolHealthMonitor::KeepExisting) => actual.cloned().or_else(|| opts.health_monitor.clone()),
        None => pool_monitor(pool, opts.health_monitor.as_ref()),
    }
}

/// The writes for the monitor of an existing pool (`monitors`: the Services' annotations, by
/// pool name).
pub fn plan(
    monitors: &BTreeMap<String, PoolHealthMonitor>,
    pool: &Pool,
    actual: &ActualPool,
    opts: &DiffOptions,
) -> Vec<Write> {
    let own = &opts.ownership;
    let pool_name = pool.name.as_str();
    let ours = actual.healthmonitor.as_ref().filter(|hm| own.owns(&hm.tags));
    let want = wanted(monitors, pool_name, ours.map(|hm| &hm.spec), opts);
    let create = |spec: &HealthMonitorSpec| Write::CreateHealthMonitor {
        pool: PoolRef::Id(actual.id.to_string()),
        pool_name: pool_name.to_string(),
        spec: spec.clone(),
        tags: own.tags_for(&pool.service).into(),
    };
    match (want.as_ref(), &actual.healthmonitor, ours) {
        (Some(spec), None, _) => vec![create(spec)],
        (Some(spec), Some(_), Some(hm)) if hm.spec.monitor_type != spec.monitor_type => {
            vec![Write::DeleteHealthMonitor { id: hm.id.clone(), pool_name: pool_name.to_string() }, create(spec)]
        }
        (Some(spec), Some(_), Some(hm)) if hm.spec != *spec => {
            vec![Write::UpdateHealthMonitor { id: hm.id.clone(), pool_name: pool_name.to_string(), spec: spec.clone() }]
        }
        (None, Some(_), Some(hm)) => {
            vec![Write::DeleteHealthMonitor { id: hm.id.clone(), pool_name: pool_name.to_string() }]
        }
        // Equal, or a foreign monitor (never touched).
        _ => vec![],
    }
}

/// The health monitor of pool `name`: `[octavia_defaults] health_monitor*`, except that an HTTP
/// monitor of a reserved status pool expects the status its responder always answers (404, 503
/// or 500), so that a live responder is not taken for a dead one.
pub fn pool_monitor(name: &str, spec: Option<&HealthMonitorSpec>) -> Option<HealthMonitorSpec> {
    let mut spec = spec?.clone();
    let code = match name {
        crate::model::NOT_FOUND_POOL => "404",
        crate::model::UNAVAILABLE_POOL => "503",
        crate::model::SERVER_ERROR_POOL => "500",
        _ => return Some(spec),
    };
    if spec.expected_codes.is_some() {
        spec.expected_codes = Some(code.to_string());
    }
    Some(spec)
}
