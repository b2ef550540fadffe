//! Octavia-backed benchmark (issue 7): cold start, latency probe, steady state, endpoint churn
//! and one new Ingress against the real local Octavia, plus the cost of one fully-populated create.
//!
//! Run (local stack up, see functional/openstack.sh):
//!   `KURYR_FUNCTIONAL=1 cargo bench --bench octavia`
//! Sizes: `KURYR_BENCH_INGRESSES` (20), `KURYR_BENCH_SERVICES` (10); `KURYR_BENCH_ONLY=fully-populated`
//! runs only the one-write create (and, with `functional/openstack.sh octavia-fixes on`, what
//! follows it on the router of that size); `KURYR_BENCH_ONLY=after-cold-start
//! KURYR_BENCH_ROUTER=<name>` only what follows, on a router a stopped run left; the wait_active
//! poll backoff:
//! `KURYR_BENCH_POLL_MIN_MS` / `KURYR_BENCH_POLL_MAX_MS` (the driver defaults, 50 / 500).
//! Scenarios of their own: `KURYR_BENCH_ONLY=scale-out`, `restart`, `node-port` (issue 34: L3
//! against NodePort members, functional/bench/node_port.rs; its pure parts are self-checked at
//! every run without `--bench`).
//! Without `--bench` in argv (as in `cargo test --all-targets`) or without KURYR_FUNCTIONAL=1 it
//! does nothing. It creates two load balancers with unique names and cluster tags and removes
//! them (cascade), their VIP ports and floating IPs at the end, also after a failure.

#[path = "../benches/common/mod.rs"]
mod common;
#[path = "common/mod.rs"]
mod functional;
#[path = "bench/node_port.rs"]
mod node_port;
#[path = "bench/restart.rs"]
mod restart;
#[path = "bench/scale_out.rs"]
mod scale_out;

use common::*;
use kuryr_l7_router::driver::populated_create;
use kuryr_l7_router::driver::report::ConvergeReport;
use kuryr_l7_router::driver::router::Router;
use kuryr_l7_router::model::DesiredRouter;
use kuryr_l7_router::openstack::octavia_requests::LoadBalancerUpdate;
use kuryr_l7_router::openstack::*;
use kuryr_l7_router::translate::{TranslateOptions, translate};
use std::time::{Duration, Instant};

fn env_usize(k: &str, d: usize) -> usize {
    std::env::var(k).ok().and_then(|v| v.parse().ok()).unwrap_or(d)
}

/// A router of its own on the local stack (functional/common), with the poll backoff of
/// `KURYR_BENCH_POLL_MIN_MS` / `KURYR_BENCH_POLL_MAX_MS` when given.
async fn router(tag: &str, fully_populated: bool) -> Router {
    let mut r = functional::local_router("bench", tag).await;
    let defaults = OctaviaOptions::default();
    let opts = OctaviaOptions {
        min_delay: Duration::from_millis(
            env_usize("KURYR_BENCH_POLL_MIN_MS", defaults.min_delay.as_millis() as usize) as u64
        ),
        max_delay: Duration::from_millis(
            env_usize("KURYR_BENCH_POLL_MAX_MS", defaults.max_delay.as_millis() as usize) as u64
        ),
        ..defaults
    };
    // A fully-populated create of a large router is one long request (its graph is written in
    // the API call): give requests 5 minutes so that the bench measures it instead of timing out.
    let mut auth = r.octavia().session().options().clone();
    auth.timeout = Duration::from_secs(300);
    r = Router::new(Octavia::new(Session::new(auth).unwrap(), opts), r.neutron().clone(), r.spec().clone());
    r.spec_mut().fully_populated_create = fully_populated;
    // On this stack a write's latency grows with the router (docs/benchmarks.md): at full size a
    // create or a write takes minutes, which the bench waits for rather than fails on.
    r.spec_mut().create_timeout = Duration::from_secs(7200);
    r.spec_mut().write_timeout = Duration::from_secs(1800);
    r
}

fn median(mut v: Vec<Duration>) -> Duration {
    if v.is_empty() {
        return Duration::ZERO;
    }
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

fn summary(label: &str, r: &ConvergeReport) -> Duration {
    let med = median(r.writes.iter().map(|w| w.duration).collect());
    println!(
        "{label}: {} writes {:?}, {} requests, wall {:.1} s, median write (sent → ACTIVE seen) {:.0} ms",
        r.writes.len(),
        r.writes_by_kind(),
        r.requests,
        secs(r.elapsed),
        ms(med)
    );
    med
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") || std::env::var("KURYR_FUNCTIONAL").as_deref() != Ok("1") {
        // The node-port scenario's pure parts, against the product's member computation.
        node_port::self_check();
        println!("skipped: run `KURYR_FUNCTIONAL=1 cargo bench --bench octavia` with the local stack up");
        return;
    }
    let _ = rustls::crypto::ring::default_provider().install_default();
    let rt = tokio::runtime::Runtime::new().unwrap();
    if std::env::var("KURYR_BENCH_ONLY").as_deref() == Ok("scale-out") {
        rt.block_on(scale_out_main());
        return;
    }
    if std::env::var("KURYR_BENCH_ONLY").as_deref() == Ok("node-port") {
        rt.block_on(node_port_main());
        return;
    }
    if std::env::var("KURYR_BENCH_ONLY").as_deref() == Ok("restart") {
        rt.block_on(async {
            let fp = router("restart", true).await;
            let result = tokio::spawn(restart::run(fp.clone())).await;
            functional::cleanup(&fp).await;
            if let Err(e) = result {
                std::panic::resume_unwind(e.into_panic());
            }
        });
        return;
    }
    rt.block_on(async {
        let r = router("l7", false).await;
        let fp = router("fp", true).await;
        let (r2, fp2) = (r.clone(), fp.clone());
        let result = tokio::spawn(async move { run(r2, fp2).await }).await;
        functional::cleanup(&r).await;
        functional::cleanup(&fp).await;
        if let Err(e) = result {
            std::panic::resume_unwind(e.into_panic());
        }
    });
}

/// `KURYR_BENCH_ONLY=scale-out` (functional/bench/scale_out.rs): fully-populated creates, as the
/// product's default on 2025.1; every router made is removed at the end, also after a panic.
async fn scale_out_main() {
    let one = router("one", true).await;
    let set = router("set", true).await;
    let made: scale_out::Made = Default::default();
    let result = tokio::spawn(scale_out::run(one, set, made.clone())).await;
    let routers: Vec<Router> = made.lock().unwrap().clone();
    for r in &routers {
        functional::cleanup(r).await;
    }
    if let Err(e) = result {
        std::panic::resume_unwind(e.into_panic());
    }
}

/// `KURYR_BENCH_ONLY=node-port` (functional/bench/node_port.rs): the same router set in each
/// mode of `KURYR_BENCH_MODES` (`L3,NodePort`), fully-populated creates; every router made is
/// removed at the end, also after a panic.
async fn node_port_main() {
    use kuryr_l7_router::model::MemberMode;
    let modes = std::env::var("KURYR_BENCH_MODES").unwrap_or_else(|_| "L3,NodePort".into());
    let mut templates = Vec::new();
    for m in modes.split(',').map(str::trim) {
        let mode = match m {
            "L3" => MemberMode::L3,
            "NodePort" => MemberMode::NodePort,
            other => panic!("KURYR_BENCH_MODES: {other:?} is not L3 or NodePort"),
        };
        templates.push((mode, router(if mode == MemberMode::L3 { "np-l3" } else { "np-np" }, true).await));
    }
    let made: scale_out::Made = Default::default();
    let result = tokio::spawn(node_port::run(templates, made.clone())).await;
    let routers: Vec<Router> = made.lock().unwrap().clone();
    for r in &routers {
        functional::cleanup(r).await;
    }
    if let Err(e) = result {
        std::panic::resume_unwind(e.into_panic());
    }
}

async fn run(r: Router, fp: Router) {
    let n_ing = env_usize("KURYR_BENCH_INGRESSES", 20);
    let n_svc = env_usize("KURYR_BENCH_SERVICES", 10);
    let eps = 5;
    let (pmin, pmax) = (r.octavia().options().min_delay.as_millis(), r.octavia().options().max_delay.as_millis());
    println!("# Octavia benchmark: {n_ing} Ingresses over {n_svc} Services x {eps} endpoints; poll {pmin}→{pmax} ms");
    let topts = TranslateOptions::default();
    let mut inp = apps(n_ing, n_svc, eps);
    let desired = translate(&inp, &topts);
    let s = shape(&desired);
    println!(
        "shape: {} policies ({} multi-rule), {} rules, {} pools ({} with members), {} members",
        s.policies, s.multi_rule_policies, s.rules, s.pools, s.pools_with_members, s.members
    );

    // `KURYR_BENCH_ONLY=fully-populated`: only the one-write create, which stays affordable at
    // sizes where the object-by-object cold start takes hours on a slow cloud.
    if std::env::var("KURYR_BENCH_ONLY").as_deref() == Ok("fully-populated") {
        fully_populated(&fp, &desired).await;
        return;
    }
    // `KURYR_BENCH_ONLY=after-cold-start KURYR_BENCH_ROUTER=<name>`: the measurements that follow
    // a cold start, on a router of that size built earlier (by a run stopped after its create).
    if std::env::var("KURYR_BENCH_ONLY").as_deref() == Ok("after-cold-start") {
        let name = std::env::var("KURYR_BENCH_ROUTER").expect("KURYR_BENCH_ROUTER: the router's name");
        let mut adopted = fp.clone();
        adopted.spec_mut().name = name.clone();
        adopted.spec_mut().ownership = kuryr_l7_router::driver::ownership::Ownership::new(&name);
        let adopted = Router::new(adopted.octavia().clone(), adopted.neutron().clone(), adopted.spec().clone());
        after_cold_start(&adopted, &desired).await;
        functional::cleanup(&adopted).await;
        return;
    }

    // ---- cold start
    let cold = r.converge(&desired).await.expect("cold start");
    let med = summary("cold start", &cold);
    let necessary = s.necessary();
    let bound = med * necessary as u32;
    println!(
        "  necessary writes {necessary} (ours {}: + {} enables); bound = {necessary} x {:.0} ms = {:.1} s; \
         ratio wall/bound = {:.2}; writes made / necessary = {:.2}",
        s.ours(),
        s.multi_rule_policies,
        ms(med),
        secs(bound),
        secs(cold.elapsed) / secs(bound),
        cold.writes.len() as f64 / necessary as f64
    );
    let write_time: Duration = cold.writes.iter().map(|w| w.duration).sum();
    println!(
        "  time in writes (sent → ACTIVE seen) {:.1} s, outside writes (reads, floating IP) {:.1} s",
        secs(write_time),
        secs(cold.elapsed.saturating_sub(write_time))
    );
    // Octavia's worker loads the router's whole object graph for every write, so a write's
    // latency grows with the router: show it by tenths of the cold start.
    let tenth = cold.writes.len().div_ceil(10).max(1);
    let by_tenth: Vec<String> = cold
        .writes
        .chunks(tenth)
        .map(|c| format!("{:.0}", ms(median(c.iter().map(|w| w.duration).collect()))))
        .collect();
    println!("  median write latency (ms) by tenth of the cold start: {}", by_tenth.join(" "));
    let lb_id = cold.lb_id.clone();

    // ---- latency probe: how much of a write's time is the poll backoff?
    probe(&r, &lb_id, med).await;

    // ---- steady state
    let before = r.octavia().session().stats();
    let steady = r.converge(&desired).await.expect("steady");
    let after = r.octavia().session().stats();
    summary("steady resync", &steady);
    println!("  session stats: {} requests, {} writes", after.requests - before.requests, after.writes - before.writes);
    assert!(steady.writes.is_empty());

    // ---- churn: 100 endpoint changes over 10 Services within 5 s, then one level-triggered converge
    let (changes, churned) = (100, 10.min(n_svc));
    let t0 = Instant::now();
    let mut cur: Vec<Vec<String>> = (0..churned).map(|s| (0..eps).map(|e| ep_ip(s, e, 0)).collect()).collect();
    for c in 0..changes {
        let s = c % churned;
        let k = (c / churned) % eps;
        cur[s][k] = ep_ip(s, k, 1 + c / churned);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(cur, churn(churned, eps, changes));
    for (svc, ips) in cur.iter().enumerate() {
        set_endpoints(&mut inp, svc, ips);
    }
    let burst = t0.elapsed();
    let churn_desired = translate(&inp, &topts);
    let rep = r.converge(&churn_desired).await.expect("churn");
    let med_churn = summary("churn converge after the burst", &rep);
    println!(
        "  burst {:.1} s; router ACTIVE with the final endpoints {:.1} s after the burst ({:.1} s after its first change); \
         bound {} x {:.0} ms = {:.1} s; naive one-write-per-change: {changes} writes ≈ {:.0} s at the same median",
        secs(burst),
        secs(rep.elapsed),
        secs(t0.elapsed()),
        churned,
        ms(med_churn),
        secs(med_churn * churned as u32),
        secs(med_churn * changes as u32)
    );

    // ---- one new Ingress: R = 3 paths, P = 2 new Services
    for k in 0..2 {
        inp.services.push(service(n_svc + k));
        let ips: Vec<String> = (0..eps).map(|e| ep_ip(n_svc + k, e, 0)).collect();
        inp.endpoint_slices.push(slice(n_svc + k, &ips).into());
    }
    inp.ingresses.push(ingress("ing-new", "new.example.com", &[("/", n_svc), ("/api", n_svc + 1), ("/static", 0)]));
    let new_desired = translate(&inp, &topts);
    let rep = r.converge(&new_desired).await.expect("new ingress");
    let med_new = summary("new Ingress (R=3, P=2)", &rep);
    let new_rules: usize =
        new_desired.policies.iter().filter(|p| p.owner.name == "ing-new").map(|p| p.rules.len()).sum();
    let nec = 2 * 2 + 3 + new_rules;
    println!(
        "  vs P + R = 5; necessary {nec} (pool + batch per new Service, policy + rules per path); bound {:.1} s; ratio {:.2}",
        secs(med_new * nec as u32),
        secs(rep.elapsed) / secs(med_new * nec as u32)
    );

    // ---- fully-populated create of the cold-start router: 1 write
    fully_populated(&fp, &desired).await;
}

/// Ten LB description updates: each is one write; time to ACTIVE seen by the driver's
/// `wait_active` (backoff) vs by a 20 ms poll.
async fn probe(r: &Router, lb_id: &str, cold_median: Duration) {
    let o = r.octavia();
    let mut backoff = Vec::new();
    let mut tight = Vec::new();
    let mut accept = Vec::new();
    let mut polls_tight = 0u64;
    for i in 0..10 {
        let u = LoadBalancerUpdate { description: Some(format!("bench probe {i}")), ..Default::default() };
        let t = Instant::now();
        o.retry_busy(|| o.update_load_balancer(lb_id, &u)).await.expect("probe write");
        accept.push(t.elapsed());
        if i % 2 == 0 {
            o.wait_active(lb_id, Duration::from_secs(120)).await.expect("active");
            backoff.push(t.elapsed());
        } else {
            loop {
                polls_tight += 1;
                if o.get_load_balancer(lb_id).await.expect("get").provisioning_status == "ACTIVE" {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            tight.push(t.elapsed());
        }
    }
    println!(
        "latency probe (LB description update x10): write 2xx after {:.0} ms median; ACTIVE seen after {:.0} ms with the \
         driver's backoff poll vs {:.0} ms with a 20 ms poll ({:.1} GETs/write); cold-start median write {:.0} ms",
        ms(median(accept)),
        ms(median(backoff)),
        ms(median(tight)),
        polls_tight as f64 / 5.0,
        ms(cold_median)
    );
}

/// A cold start in one write: the driver's fully-populated create of the whole router.
///
/// On Debian's Octavia 11.0.0 the children stay PENDING_CREATE (three bugs fixed in 11.0.1, see
/// functional/octavia/worker_zed_11_0_1.py): the raw create is measured and the stuck children
/// counted. With `functional/openstack.sh octavia-fixes on` (a Zed cloud on 11.0.1 or later) it is
/// the product path, `Router::converge` on a router that does not exist yet, followed on the
/// router of full size by a resync (0 writes), one endpoint change (1 batch write) and a latency
/// probe: the cost of the later diffs.
async fn fully_populated(fp: &Router, desired: &DesiredRouter) {
    if !functional::octavia_fixes_on() {
        let subnet = fp.spec().vip_subnet_id.clone().unwrap();
        let body = populated_create(fp.spec(), &subnet, desired);
        let t = Instant::now();
        let lb = fp.octavia().create_load_balancer_within(&body, fp.spec().create_timeout).await.expect("create");
        let accepted = t.elapsed();
        let lb = fp.octavia().wait_active(&lb.id, fp.spec().create_timeout).await.expect("active");
        let active = t.elapsed();
        let q = ListQuery { loadbalancer_id: Some(lb.id.clone()), ..ListQuery::default() };
        let pools = fp.octavia().list_pools(&q).await.unwrap_or_default();
        let pending = pools.iter().filter(|p| p.provisioning_status != "ACTIVE").count();
        println!(
            "fully-populated create (Debian's Octavia 11.0.0 worker): 1 write, 2xx after {:.0} ms, LB ACTIVE after \
             {:.1} s; {pending}/{} pools not ACTIVE (the driver would discard it and rebuild object by object; \
             `functional/openstack.sh octavia-fixes on` for 11.0.1's behaviour)",
            ms(accepted),
            secs(active),
            pools.len()
        );
        functional::remove_lb(fp, &lb).await;
        return;
    }
    let cold = fp.converge(desired).await.expect("fully-populated cold start");
    assert!(cold.conflicts.is_empty(), "{:?}", cold.conflicts);
    let create = cold.writes.first().map(|w| w.duration).unwrap_or_default();
    summary("cold start in one write (fully-populated create; children ACTIVE: Octavia 11.0.1+ or 16)", &cold);
    println!(
        "  the create: sent → router ACTIVE {:.1} s; the rest of the converge (children check, floating IP) {:.1} s; \
         bound = 1 write x {:.1} s; ratio wall/bound = {:.2}",
        secs(create),
        secs(cold.elapsed.saturating_sub(create)),
        secs(create),
        secs(cold.elapsed) / secs(create)
    );
    after_cold_start(fp, desired).await;
}

/// On a router of full size: the first read of a process (every policy's rules and pool's
/// members: Octavia's API loads the whole graph for each of those GETs), a resync with nothing
/// changed (children read again only where their parent changed: none), one endpoint change
/// (one batch member PUT) and one more write (an LB description update) to measure a write's
/// latency at that size.
async fn after_cold_start(fp: &Router, desired: &DesiredRouter) {
    let stats = || fp.octavia().session().stats();
    let (t, before) = (Instant::now(), stats());
    let actual = functional::read_router(fp).await;
    let in_error =
        actual.pools.iter().filter(|p| p.in_error).count() + actual.policies.iter().filter(|p| p.in_error).count();
    println!(
        "first read of the router by a new process: {} policies, {} rules, {} pools, {} members ({in_error} in ERROR): \
         {} GETs in {:.1} s",
        actual.policies.len(),
        actual.policies.iter().map(|p| p.rules.len()).sum::<usize>(),
        actual.pools.len(),
        actual.pools.iter().map(|p| p.members.len()).sum::<usize>(),
        stats().requests - before.requests,
        secs(t.elapsed())
    );

    let before = stats();
    let steady = fp.converge(desired).await.expect("steady");
    let after = stats();
    summary("steady resync of the full router", &steady);
    println!("  session stats: {} requests, {} writes", after.requests - before.requests, after.writes - before.writes);
    assert!(steady.writes.is_empty(), "the fully-populated router is exactly the desired one");

    // One endpoint of the first pool replaced: one batch member PUT on a router of this size.
    let mut changed = desired.clone();
    let pool = changed.pools.values_mut().next().expect("a pool");
    let m = pool.members.first_mut().expect("a member");
    m.address = "10.0.99.99".parse().unwrap();
    let before = stats();
    let one = fp.converge(&changed).await.expect("one endpoint change");
    summary("one endpoint change on the full router", &one);
    println!(
        "  session stats: {} requests, {} writes",
        stats().requests - before.requests,
        stats().writes - before.writes
    );
    assert_eq!(one.writes.len(), 1);

    if std::env::var("KURYR_BENCH_PROBE").as_deref() != Ok("0") {
        let lb = fp.find().await.unwrap().expect("router");
        probe_n(fp, &lb.id, 1).await;
    }
}

/// `n` LB description updates waited with the driver's backoff: a write's latency on this router.
async fn probe_n(r: &Router, lb_id: &str, n: usize) {
    let o = r.octavia();
    let mut v = Vec::new();
    for i in 0..n {
        let u = LoadBalancerUpdate { description: Some(format!("bench probe {i}")), ..Default::default() };
        let t = Instant::now();
        o.retry_busy(|| o.update_load_balancer(lb_id, &u)).await.expect("probe write");
        o.wait_active(lb_id, r.spec().write_timeout).await.expect("active");
        v.push(t.elapsed());
    }
    let all: Vec<String> = v.iter().map(|d| format!("{:.1}", secs(*d))).collect();
    println!("latency probe on the full router ({n} LB description updates): {} s", all.join(", "));
}
