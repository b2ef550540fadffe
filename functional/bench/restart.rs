//! `KURYR_BENCH_ONLY=restart`: a restart to its first write, without and with the stamps of the
//! previous process's read (see `driver::stamps`), on one router of `KURYR_BENCH_INGRESSES`
//! (50: 100 policies) Ingresses over `KURYR_BENCH_SERVICES` (20) Services, created fully populated.
//!
//! Each "restart" is a new driver (`Router::new`: empty read cache, no stamps, or the stamps the
//! previous one left, as the controller hands them on in a ConfigMap) converging to the desired
//! state with one endpoint changed, i.e. exactly one write due: the time is the new process's
//! first Sync, read → plan → that write → ACTIVE.

use super::common::*;
use super::{env_usize, secs};
use kuryr_l7_router::driver::router::Router;
use kuryr_l7_router::model::DesiredRouter;
use kuryr_l7_router::translate::{TranslateOptions, translate};
use std::time::Instant;

fn new_process(template: &Router) -> Router {
    Router::new(template.octavia().clone(), template.neutron().clone(), template.spec().clone())
}

/// `desired` with the first pool's first endpoint at `address`: one batch member write due.
fn one_endpoint_changed(desired: &DesiredRouter, address: &str) -> DesiredRouter {
    let mut changed = desired.clone();
    let pool = changed.pools.values_mut().find(|p| !p.members.is_empty()).expect("a pool with members");
    pool.members[0].address = address.parse().unwrap();
    changed
}

/// One restart's first Sync; returns the process (its stamps).
async fn restart(template: &Router, label: &str, stamps: Option<&str>, desired: &DesiredRouter) -> Router {
    let r = new_process(template);
    if let Some(s) = stamps {
        assert!(r.load_stamps(s), "stamps load");
    }
    let stats = || template.octavia().session().stats();
    let (t, before) = (Instant::now(), stats());
    let report = r.converge(desired).await.expect("restart converge");
    let after = stats();
    let first_write = report.writes.first().map(|w| w.duration).unwrap_or_default();
    println!(
        "restart to first write, {label}: {:.1} s (the write itself {:.1} s); {} requests ({} writes); {} writes: {:?}",
        secs(t.elapsed()),
        secs(first_write),
        after.requests - before.requests,
        after.writes - before.writes,
        report.writes.len(),
        report.writes.iter().map(|w| w.kind).collect::<Vec<_>>()
    );
    r
}

pub async fn run(fp: Router) {
    let n_ing = env_usize("KURYR_BENCH_INGRESSES", 50);
    let n_svc = env_usize("KURYR_BENCH_SERVICES", 20);
    let desired = translate(&apps(n_ing, n_svc, 5), &TranslateOptions::default());
    let s = shape(&desired);
    println!(
        "# restart bench: {} policies, {} rules, {} pools, {} members; load average {}",
        s.policies,
        s.rules,
        s.pools,
        s.members,
        std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim()
    );
    let t = Instant::now();
    let cold = fp.converge(&desired).await.expect("cold start");
    println!("cold start: {} writes in {:.1} s", cold.writes.len(), secs(t.elapsed()));
    let first = restart(&fp, "without stamps", None, &one_endpoint_changed(&desired, "10.0.99.1")).await;
    let stamps = first.take_changed_stamps().expect("a full read stamps every parent");
    println!("stamps: {} bytes", stamps.len());
    // The stamps were taken after the first restart's write, as the controller saves them after
    // a Sync: the pool it wrote was read back, so its stamp is the current one.
    let second = one_endpoint_changed(&desired, "10.0.99.2");
    restart(&fp, "with stamps", Some(&stamps), &second).await;
}
