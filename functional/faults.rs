//! Fault injection against the real local OpenStack (issue 8): services stopped, hung and
//! restarted under a convergence, short-lived Keystone tokens, objects in ERROR.
//!
//! Run with the stack up (`functional/openstack.sh start`, as root):
//! `KURYR_FUNCTIONAL=1 cargo test --test functional_faults`. These tests stop and pause the
//! stack's own daemons through `functional/openstack.sh {stop,start,pause,resume}-service`, so
//! they take one lock and run one at a time, and every fault is undone by a guard even when an
//! assertion fails. `KURYR_FAULT_SECONDS` (default 60) is how long the Octavia worker stays paused.
//!
//! Also the Octavia version: Debian's 11.0.0 worker, which breaks the fully-populated create, and
//! the worker with the three fixes of 11.0.1 (`openstack.sh octavia-fixes on`).
//!
//! Each test states what it injects and asserts the final Octavia state.

#[path = "common/mod.rs"]
mod common;
use common::*;

use kuryr_l7_router::controller::metrics::Metrics;
use kuryr_l7_router::driver::router::Router;
use kuryr_l7_router::model::DesiredRouter;
use kuryr_l7_router::openstack::http::Observer;
use kuryr_l7_router::openstack::*;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One fault at a time: they act on daemons every test shares.
static STACK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn openstack_sh(args: &[&str]) -> std::process::Output {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("functional/openstack.sh");
    let out = std::process::Command::new(script).args(args).output().expect("run functional/openstack.sh");
    assert!(
        out.status.success(),
        "openstack.sh {args:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Undoes a fault when dropped (also when the test panics), so one failure does not take the
/// stack down for the tests after it.
struct Undo(Vec<&'static str>);

impl Drop for Undo {
    fn drop(&mut self) {
        if !self.0.is_empty() {
            openstack_sh(&self.0);
        }
    }
}

fn inject(fault: &[&str], undo: &[&'static str]) -> Undo {
    openstack_sh(fault);
    Undo(undo.to_vec())
}

/// The examples translated as the `apply` command does it (~50 writes from scratch).
fn examples() -> DesiredRouter {
    let examples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let inputs = kuryr_l7_router::translate::load_manifests(std::slice::from_ref(&examples)).unwrap();
    // Translated with the local stack's kuryr.conf (ingress class, availability zone), as `apply`.
    let conf = std::env::var("KURYR_CONFIG_FILE").unwrap_or_else(|_| "/tmp/ostack/etc/kuryr/kuryr.conf".into());
    let settings = kuryr_l7_router::config::load(&[conf.into()], Vec::new()).unwrap().settings;
    let mut want =
        kuryr_l7_router::translate::translate(&inputs, &kuryr_l7_router::wiring::translate_options(&settings));
    assert!(want.policies.len() >= 10, "the examples make a router worth interrupting");
    want.warnings.clear();
    want
}

/// What a router looks like to a client: policy names in order, and pool → member addresses.
type Shape = (Vec<String>, Vec<(String, Vec<String>)>);

fn shape_of(want: &DesiredRouter) -> Shape {
    let pools = want
        .pools
        .values()
        .map(|p| {
            let mut m: Vec<String> = p.members.iter().map(|m| format!("{}:{}", m.address, m.protocol_port)).collect();
            m.sort();
            (p.name.clone(), m)
        })
        .collect();
    (want.policies.iter().map(|p| p.name.clone()).collect(), pools)
}

async fn observed_shape(r: &Router) -> Shape {
    let actual = read_router(r).await;
    let mut pools: Vec<(String, Vec<String>)> = actual
        .pools
        .iter()
        .map(|p| {
            let mut m: Vec<String> = p.members.iter().map(|m| format!("{}:{}", m.address, m.protocol_port)).collect();
            m.sort();
            (p.name.clone(), m)
        })
        .collect();
    pools.sort();
    (actual.policies.iter().map(|p| p.name.clone()).collect(), pools)
}

/// A router of its own whose every Octavia/Neutron request is counted in the controller's
/// Prometheus metrics, as `run` wires it; no floating IP unless `fip`.
async fn router(tag: &str, fip: bool) -> (Router, prometheus_client::registry::Registry) {
    let base = local_router("fct-flt", tag).await;
    let (registry, metrics) = Metrics::registry();
    let m = metrics.clone();
    let observer: Observer = Arc::new(move |rec: &kuryr_l7_router::openstack::http::RequestRecord| {
        m.octavia_request(rec.method.as_str(), &rec.kind, rec.status, rec.duration)
    });
    let session = Session::with_observer(base.octavia().session().options().clone(), observer).unwrap();
    let mut spec = base.spec().clone();
    spec.fully_populated_create = false;
    if !fip {
        spec.external_svc_subnet = None;
    }
    let octavia = Octavia::new(session.clone(), base.octavia().options().clone());
    (Router::new(octavia, Neutron::new(session), spec), registry)
}

/// The value of one series of the OpenMetrics text, 0 when absent.
fn series(registry: &prometheus_client::registry::Registry, name_and_labels: &str) -> f64 {
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, registry).unwrap();
    text.lines().find_map(|l| l.strip_prefix(name_and_labels).and_then(|rest| rest.trim().parse().ok())).unwrap_or(0.0)
}

/// GETs of the router's load balancer counted in the metrics (the `wait_active` polls).
fn lb_polls(registry: &prometheus_client::registry::Registry) -> f64 {
    series(registry, r#"kuryr_l7_router_octavia_requests_total{method="GET",resource="loadbalancers",status="200"}"#)
}

/// Injects: the Octavia worker paused (SIGSTOP, as a hung or overloaded worker: the API accepts
/// the write, the router stays PENDING_UPDATE) for `KURYR_FAULT_SECONDS` (60 s) in the middle of
/// a ~50-write convergence. Asserts: the convergence neither fails nor crashes; while paused it
/// only polls, at most ~2 GETs per second (backoff capped at 500 ms), with no write and no retry
/// storm, all of it visible in the metrics; after the worker returns it completes, and the router
/// is exactly the desired one with a second convergence making no write.
#[tokio::test]
async fn octavia_worker_paused_mid_convergence() {
    if !enabled() {
        return;
    }
    let _lock = STACK.lock().await;
    let pause =
        Duration::from_secs(std::env::var("KURYR_FAULT_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(60));
    let (r, registry) = router("worker", false).await;
    with_router(r.clone(), move |r| async move {
        let want = examples();
        let task = {
            let (r, want) = (r.clone(), want.clone());
            tokio::spawn(async move { r.converge(&want).await })
        };
        // The test watches through a client of its own, so that the metrics count only the
        // driver's requests. Mid-convergence: the router and a few of its objects exist.
        let watcher =
            Octavia::new(Session::new(r.octavia().session().options().clone()).unwrap(), OctaviaOptions::default());
        let by_name = ListQuery { tags: r.spec().ownership.router_tags(), ..ListQuery::name(&r.spec().name) };
        let started = Instant::now();
        let lb_id = loop {
            if let Some(lb) = watcher.list_load_balancers(&by_name).await.unwrap_or_default().pop() {
                let q = ListQuery { loadbalancer_id: Some(lb.id.clone()), ..ListQuery::default() };
                if watcher.list_pools(&q).await.map(|p| p.len()).unwrap_or(0) >= 2 {
                    break lb.id;
                }
            }
            assert!(started.elapsed() < Duration::from_secs(300), "the convergence never got to its pools");
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        let undo = inject(&["pause-service", "octavia-worker"], &["resume-service", "octavia-worker"]);
        // Counted from the moment the worker is stopped, not from before the command that stops
        // it: under load that command took long enough for a write to finish and the next to be
        // sent meanwhile (CI, 2026-11-29: 2 writes). Once stopped, no write can finish, so the
        // driver sends at most the one whose predecessor had just finished.
        let stats_before = r.octavia().session().stats();
        let polls_before = lb_polls(&registry);
        let paused_at = Instant::now();
        let mut saw_pending = false;
        while paused_at.elapsed() < pause {
            tokio::time::sleep(Duration::from_secs(5)).await;
            assert!(!task.is_finished(), "the convergence ended while the worker was paused: {:?}", task.await);
            if let Ok(lb) = watcher.get_load_balancer(&lb_id).await {
                saw_pending |= lb.provisioning_status.starts_with("PENDING_");
            }
        }
        let during = r.octavia().session().stats();
        drop(undo); // resume the worker
        let polls = lb_polls(&registry) - polls_before;
        println!(
            "paused {pause:?}: {polls} router GETs, {} writes, {} busy retries",
            during.writes - stats_before.writes,
            during.conflict_retries - stats_before.conflict_retries
        );
        assert!(saw_pending, "the router stayed PENDING_* while the worker was paused");
        assert!(during.writes - stats_before.writes <= 1, "at most the write in flight when the worker stopped");
        assert_eq!(during.conflict_retries, stats_before.conflict_retries, "no 409 retry storm");
        // 500 ms cap → ~2 polls per second; the floor shows it kept waiting rather than giving up.
        let secs = pause.as_secs_f64();
        assert!(polls <= 2.2 * secs + 10.0, "{polls} polls in {secs} s: not backing off");
        assert!(polls >= secs / 2.0, "{polls} polls in {secs} s: stopped waiting");

        let report = tokio::time::timeout(Duration::from_secs(600), task)
            .await
            .expect("converges after the worker returns")
            .unwrap()
            .unwrap_or_else(|e| panic!("the convergence failed: {e}"));
        println!("converged with {} writes in {:?}", report.writes.len(), report.elapsed);
        assert_eq!(observed_shape(&r).await, shape_of(&want));
        assert_eq!(r.converge(&want).await.unwrap().writes.len(), 0);
    })
    .await;
}

/// Injects: the Octavia API stopped (connections refused) then Neutron stopped, each while a
/// change is pending. Asserts: the convergence fails at once (no hang, no retry loop: at most one
/// resend of an idempotent request) with an error naming the service and the request; after the
/// service is started again the same driver (no restart) converges and the router is as desired.
#[tokio::test]
async fn octavia_api_and_neutron_down_then_back() {
    if !enabled() {
        return;
    }
    let _lock = STACK.lock().await;
    let (r, _) = router("apidown", true).await;
    with_router(r, |r| async move {
        let mut want = examples();
        r.converge(&want).await.unwrap();
        // A pool with members (the reserved no-route pool, first by name, has none).
        let pool = want.pools.iter().find(|(_, p)| !p.members.is_empty()).map(|(k, _)| k.clone()).unwrap();

        for (service, named) in [("octavia-api", "octavia"), ("neutron-server", "neutron")] {
            let member = want.pools[&pool].members[0].clone();
            let address = format!("10.0.9.{}", want.pools[&pool].members.len() + 10).parse().unwrap();
            want.pools.get_mut(&pool).unwrap().members.push(kuryr_l7_router::model::Member { address, ..member });
            let undo = inject(&["stop-service", service], &["start-service", service]);
            let before = r.octavia().session().stats().requests;
            let t = Instant::now();
            let err = r.converge(&want).await.expect_err("converging without the service fails");
            let msg = err.to_string();
            println!("{service} down: {msg} (after {:?})", t.elapsed());
            assert!(msg.contains(named), "the error names {named}: {msg}");
            assert!(t.elapsed() < Duration::from_secs(30), "failed fast, not after a hang: {:?}", t.elapsed());
            let sent = r.octavia().session().stats().requests - before;
            if service == "octavia-api" {
                assert!(sent <= 2, "{sent} requests to a refused endpoint: one and one resend at most");
            }
            drop(undo);
            let report = r.converge(&want).await.unwrap_or_else(|e| panic!("after {service} is back: {e}"));
            if service == "octavia-api" {
                let kinds: Vec<_> = report.writes.iter().map(|w| w.kind).collect();
                assert_eq!(kinds, vec!["batch_members"]);
            }
            assert!(report.floating_ip.is_some(), "the floating IP is found again");
            assert_eq!(observed_shape(&r).await, shape_of(&want));
        }
    })
    .await;
}

/// Injects: Keystone stopped. Asserts: a driver that already holds a token is not affected as long
/// as the services accept it (they validate it against Keystone themselves and cache the
/// answer); a driver without a token fails fast with an error naming Keystone, after exactly one
/// authentication attempt; once Keystone is back that same driver (no restart) converges.
#[tokio::test]
async fn keystone_down_then_back() {
    if !enabled() {
        return;
    }
    let _lock = STACK.lock().await;
    let (r, _) = router("ksdown", false).await;
    with_router(r, |r| async move {
        let want = examples();
        // A fresh driver (no token yet) for the same router.
        let fresh = {
            let s = Session::new(r.octavia().session().options().clone()).unwrap();
            Router::new(Octavia::new(s.clone(), r.octavia().options().clone()), Neutron::new(s), r.spec().clone())
        };
        let undo = inject(&["stop-service", "keystone"], &["start-service", "keystone"]);
        let t = Instant::now();
        let err = fresh.converge(&want).await.expect_err("no token and no Keystone");
        let msg = err.to_string();
        println!("keystone down: {msg} (after {:?})", t.elapsed());
        assert!(msg.contains("keystone"), "the error names Keystone: {msg}");
        assert!(t.elapsed() < Duration::from_secs(30));
        assert_eq!(fresh.octavia().session().stats().authentications, 1, "one attempt per convergence, no storm");
        assert_eq!(fresh.octavia().session().stats().requests, 0, "nothing sent to Octavia without a token");
        drop(undo);
        let report = fresh.converge(&want).await.unwrap_or_else(|e| panic!("after Keystone is back: {e}"));
        assert!(!report.writes.is_empty());
        assert_eq!(observed_shape(&fresh).await, shape_of(&want));
    })
    .await;
}

/// Injects: Keystone's token lifetime cut to 20 s (`[token] expiration`, Keystone restarted).
/// Asserts: a driver converging over more than two lifetimes keeps working: it replaces its token
/// before it expires (at 90 % of its life), so no request is refused, and the router converges.
#[tokio::test]
async fn short_token_lifetime_reauthenticates() {
    if !enabled() {
        return;
    }
    let _lock = STACK.lock().await;
    let lifetime = 20u64;
    let _undo = inject(&["token-expiration", &lifetime.to_string()], &["token-expiration", "86400"]);
    let (r, _) = router("token", false).await;
    with_router(r, move |r| async move {
        let info = r.octavia().session().authenticate().await.unwrap();
        println!("token expires at {}", info.expires_at);
        let mut want = examples();
        let t = Instant::now();
        r.converge(&want).await.unwrap();
        // Changes spread over more than two token lifetimes.
        let pool = want.pools.keys().next().unwrap().clone();
        let mut i = 0u16;
        while t.elapsed() < Duration::from_secs(2 * lifetime + 5) {
            i += 1;
            want.pools.get_mut(&pool).unwrap().members[0].weight = 1 + i % 5;
            r.converge(&want).await.unwrap_or_else(|e| panic!("convergence {i} after {:?}: {e}", t.elapsed()));
            tokio::time::sleep(Duration::from_secs(3)).await;
        }
        let stats = r.octavia().session().stats();
        println!(
            "{:?} elapsed, {} authentications, {} after a 401",
            t.elapsed(),
            stats.authentications,
            stats.reauthentications
        );
        let lifetimes = t.elapsed().as_secs() / lifetime;
        assert!(stats.authentications > lifetimes, "a new token at least once per lifetime: {stats:?}");
        assert_eq!(observed_shape(&r).await, shape_of(&want));
    })
    .await;
}

/// Injects: provisioning_status ERROR on one of our pools and on a member of another pool (in
/// Octavia's database, as a failed provider would leave them). Asserts: the next convergence
/// reports both, replaces the pool (a new one with the same name and members, the policies moved
/// to it, the broken one deleted) and rewrites the member with one batch update; the router is
/// then exactly the desired one, nothing in ERROR, and converging again makes no write.
#[tokio::test]
async fn pool_and_member_in_error_are_reported_and_repaired() {
    if !enabled() {
        return;
    }
    let _lock = STACK.lock().await;
    let (r, _) = router("objerror", false).await;
    with_router(r, |r| async move {
        let want = examples();
        r.converge(&want).await.unwrap();
        let actual = read_router(&r).await;
        let broken_pool = actual.pools.iter().find(|p| !p.members.is_empty()).unwrap().clone();
        let other = actual.pools.iter().find(|p| p.id != broken_pool.id && !p.members.is_empty()).unwrap().clone();
        let broken_member = other.members[0].id.to_string();
        let broken_pool_id = broken_pool.id.to_string();
        set_provisioning_status("pool", &broken_pool_id, "ERROR");
        set_provisioning_status("member", &broken_member, "ERROR");
        // As the failed flow's revert would: it marks the member's pool ACTIVE again.
        touch("pool", &other.id.to_string());
        let report = r.converge(&want).await.unwrap();
        println!("{:#?}", report.conflicts);
        assert!(report.conflicts.iter().any(|c| c.contains(&broken_pool_id) && c.contains("ERROR")));
        assert!(report.conflicts.iter().any(|c| c.contains(&broken_member) && c.contains("ERROR")));
        let mut kinds: Vec<_> = report.writes.iter().map(|w| w.kind).collect();
        kinds.sort();
        let users = actual.policies.iter().filter(|p| p.redirect_pool_id.as_ref() == Some(&broken_pool.id)).count();
        let mut expected = vec!["batch_members", "batch_members", "create_pool", "delete_pool"];
        expected.extend(std::iter::repeat_n("update_policy", users));
        if actual.listener.default_pool_id.as_deref() == Some(broken_pool_id.as_str()) {
            expected.push("set_default_pool");
        }
        expected.sort();
        assert_eq!(kinds, expected);

        let after = read_router(&r).await;
        assert!(after.pools.iter().all(|p| p.id != broken_pool.id), "the pool in ERROR is deleted");
        assert!(!after.pools.iter().any(|p| p.in_error || p.members.iter().any(|m| m.in_error)), "nothing in ERROR");
        assert_eq!(observed_shape(&r).await, shape_of(&want));
        assert_eq!(r.converge(&want).await.unwrap().writes.len(), 0);
    })
    .await;
}

/// The kinds of the writes a convergence made, in order.
fn kinds(report: &kuryr_l7_router::driver::report::ConvergeReport) -> Vec<&'static str> {
    report.writes.iter().map(|w| w.kind).collect()
}

/// Octavia 11.0.1's worker (the three fully-populated-create fixes Debian's 11.0.0 lacks,
/// functional/octavia/worker_zed_11_0_1.py): a brand-new router with all its listener, pools,
/// members, policies and rules is ONE write, it is exactly the desired router, and it is adopted
/// as it is afterwards.
#[tokio::test]
async fn fully_populated_create_is_one_write_on_octavia_11_0_1() {
    if !enabled() {
        return;
    }
    let _lock = STACK.lock().await;
    let _fixed = inject(&["octavia-fixes", "on"], &["octavia-fixes", "off"]);
    let (mut r, _) = router("fp-1101", false).await;
    r.spec_mut().fully_populated_create = true;
    with_router(r, |r| async move {
        let want = examples();
        let report = r.converge(&want).await.unwrap();
        assert!(report.conflicts.is_empty(), "{:?}", report.conflicts);
        assert_eq!(kinds(&report), vec!["create_router"]);
        assert!(report.created_router);
        let actual = read_router(&r).await;
        assert!(!actual.pools.iter().any(|p| p.in_error) && !actual.policies.iter().any(|p| p.in_error));
        assert_eq!(observed_shape(&r).await, shape_of(&want));
        // Every child ACTIVE, so it accepts changes: an adopted router needs no write, and one
        // endpoint more is one batch update.
        assert_eq!(r.converge(&want).await.unwrap().writes.len(), 0);
        let mut more = want.clone();
        let pool = more.pools.values_mut().find(|p| !p.members.is_empty()).unwrap();
        let mut m = pool.members[0].clone();
        m.address = "10.0.0.250".parse().unwrap();
        pool.members.push(m);
        assert_eq!(kinds(&r.converge(&more).await.unwrap()), vec!["batch_members"]);
        assert_eq!(observed_shape(&r).await, shape_of(&more));
    })
    .await;
}

/// Debian's Octavia 11.0.0 worker as packaged: the children of a fully-populated create stay
/// PENDING_CREATE. The driver sees it, says so (naming the setting to change), deletes the
/// brand-new router and builds it object by object; the result is the same router.
#[tokio::test]
async fn fully_populated_create_on_octavia_11_0_0_is_detected_and_rebuilt() {
    if !enabled() {
        return;
    }
    let _lock = STACK.lock().await;
    if octavia_fixes_on() {
        // A previous run left the fixed worker on: back to Debian's, as this test is about it.
        openstack_sh(&["octavia-fixes", "off"]);
    }
    let (mut r, _) = router("fp-1100", false).await;
    r.spec_mut().fully_populated_create = true;
    with_router(r, |r| async move {
        let want = examples();
        let report = r.converge(&want).await.unwrap();
        assert_eq!(report.conflicts.len(), 1, "{:?}", report.conflicts);
        assert!(report.conflicts[0].contains("PENDING_CREATE"), "{}", report.conflicts[0]);
        assert!(report.conflicts[0].contains("fully_populated_create = False"), "{}", report.conflicts[0]);
        let k = kinds(&report);
        assert_eq!(k[..4], ["create_router", "delete_router", "create_router", "create_listener"], "{k:?}");
        let lbs = r
            .octavia()
            .list_load_balancers(&ListQuery {
                tags: r.spec().ownership.router_tags(),
                ..ListQuery::name(&r.spec().name)
            })
            .await
            .unwrap();
        assert_eq!(lbs.len(), 1, "the stuck router is deleted, not left beside the new one");
        assert_eq!(observed_shape(&r).await, shape_of(&want));
        assert_eq!(r.converge(&want).await.unwrap().writes.len(), 0);
    })
    .await;
}
