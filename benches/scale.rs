//! Controller scale without Octavia, and the write counts of the issue-7 scenarios at full size.
//!
//! Run: `cargo bench --bench scale` (std::time, no harness). Without `--bench` in argv (as in
//! `cargo test --all-targets`) it runs a smoke-size workload so the test suite stays fast.
//! Results go to docs/benchmarks.md ("Controller scale" and "Write counts at full size").

mod common;

use common::*;
use kuryr_l7_router::driver::diff::{
    ActualListener, ActualRouter, DiffOptions, Ownership, Write, WritePlan, plan_writes,
};
use kuryr_l7_router::driver::sim::Simulator;
use kuryr_l7_router::model::DesiredRouter;
use kuryr_l7_router::translate::Snapshot;
use kuryr_l7_router::translate::members::index_nodes;
use kuryr_l7_router::translate::*;
use std::collections::BTreeMap;
use std::time::Instant;

fn vm_hwm_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmHWM:")).map(|l| l.to_string()))
        .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        .unwrap_or(0)
}

/// Current resident set (VmRSS), to tell what a phase holds from what it briefly allocated.
fn vm_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmRSS:")).map(|l| l.to_string()))
        .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        .unwrap_or(0)
}

/// Memory at a phase of the run: where the peak comes from.
fn mem(phase: &str) {
    println!("  [mem] {phase}: VmRSS {} MiB, VmHWM {} MiB", vm_rss_kib() / 1024, vm_hwm_kib() / 1024);
}

unsafe extern "C" {
    fn malloc_trim(pad: usize) -> i32;
}

/// Reset VmHWM to the current RSS (Linux >= 4.0) after giving freed memory back.
fn reset_peak() {
    unsafe { malloc_trim(0) };
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn snapshot(inp: Inputs) -> Snapshot {
    fn arcs<K>(v: Vec<K>) -> Vec<std::sync::Arc<K>> {
        v.into_iter().map(std::sync::Arc::new).collect()
    }
    Snapshot {
        ingresses: arcs(inp.ingresses),
        ingress_classes: arcs(inp.ingress_classes),
        services: arcs(inp.services),
        endpoint_slices: arcs(inp.endpoint_slices),
        endpoints: arcs(inp.endpoints),
        nodes: arcs(inp.nodes),
        secrets: arcs(inp.secrets),
        now: inp.now,
    }
}

fn deep_copy(s: &Snapshot) -> Inputs {
    fn owned<K: Clone>(v: &[std::sync::Arc<K>]) -> Vec<K> {
        v.iter().map(|a| (**a).clone()).collect()
    }
    Inputs {
        ingresses: owned(&s.ingresses),
        ingress_classes: owned(&s.ingress_classes),
        services: owned(&s.services),
        endpoint_slices: owned(&s.endpoint_slices),
        endpoints: owned(&s.endpoints),
        nodes: owned(&s.nodes),
        secrets: owned(&s.secrets),
        now: s.now,
        notes: vec![],
    }
}

fn probe(inp: &Snapshot) {
    let opts = TranslateOptions::default();
    reset_peak();
    mem("probe start");
    let d = translate(inp, &opts);
    mem("probe: one translate (HWM = its transient peak)");
    reset_peak();
    mem("probe: holding one desired");
    let empty = empty_router();
    let p = plan_writes(&d, &empty, &diff_opts());
    mem("probe: one cold plan");
    reset_peak();
    mem("probe: holding desired + cold plan");
    let mut sim = Simulator::new(empty);
    sim.apply_all(&p.writes).unwrap();
    mem("probe: simulator applied");
    drop(p);
    reset_peak();
    mem("probe: holding desired + sim router");
    let st = plan_writes(&d, &sim.router, &diff_opts());
    mem("probe: steady plan");
    drop(st);
    drop(sim);
    reset_peak();
    mem("probe: holding desired");
    drop(d);
    reset_peak();
    mem("probe: end");
}

fn diff_opts() -> DiffOptions {
    DiffOptions { ownership: Ownership::new("bench"), health_monitor: None }
}

/// A router with only our listener (what exists after the LB and listener writes).
fn empty_router() -> ActualRouter {
    ActualRouter {
        listener: ActualListener {
            id: "listener".into(),
            default_pool_id: None,
            tags: diff_opts().ownership.router_tags(),
        },
        ..Default::default()
    }
}

fn by_kind(p: &WritePlan) -> BTreeMap<&'static str, usize> {
    let mut m = BTreeMap::new();
    for w in &p.writes {
        *m.entry(w.kind()).or_default() += 1;
    }
    m
}

/// Plan from `actual`, apply in the simulator, check a second plan is empty.
fn converge(sim: &mut Simulator, desired: &DesiredRouter) -> WritePlan {
    let plan = plan_writes(desired, &sim.router, &diff_opts());
    sim.apply_all(&plan.writes).expect("simulator accepts the plan");
    let again = plan_writes(desired, &sim.router, &diff_opts());
    assert!(again.writes.is_empty(), "not converged: {:?}", again.writes.first().map(|w| w.to_string()));
    plan
}

fn best_of<T>(n: usize, mut f: impl FnMut() -> T) -> (f64, T) {
    let mut best = f64::MAX;
    let mut out = None;
    for _ in 0..n {
        let t = Instant::now();
        out = Some(f());
        best = best.min(t.elapsed().as_secs_f64());
    }
    (best, out.unwrap())
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    println!("mode: {}", if full { "full (--bench)" } else { "smoke (no --bench in argv)" });
    write_counts(full);
    mem("write counts done");
    controller_scale(full);
    println!("VmHWM (peak RSS) of the whole run: {} MiB", vm_hwm_kib() / 1024);
}

/// Issue-7 scenarios at full size, counted with the Simulator, next to the anchors.
fn write_counts(full: bool) {
    let (n_ing, n_svc, eps) = if full { (200, 50, 5) } else { (20, 10, 5) };
    let opts = TranslateOptions::default();
    let mut inp = apps(n_ing, n_svc, eps);
    let desired = translate(&inp, &opts);
    let s = shape(&desired);
    let mut sim = Simulator::new(empty_router());
    let cold = converge(&mut sim, &desired);
    let cold_writes = 2 + cold.writes.len(); // + LB create + listener create
    let routes = desired.policies.len();
    println!("\n## write counts: {n_ing} Ingresses over {n_svc} Services x {eps} endpoints");
    println!(
        "shape: {} policies ({} multi-rule), {} rules, {} pools ({} with members), {} members",
        s.policies, s.multi_rule_policies, s.rules, s.pools, s.pools_with_members, s.members
    );
    println!("cold start: {cold_writes} writes (LB + listener + {:?})", by_kind(&cold));
    println!(
        "  necessary (no fully-populated create) {}; ours {} (= necessary + {} enables); fully-populated create: 1",
        s.necessary(),
        s.ours(),
        s.multi_rule_policies
    );
    let oic = octavia_ingress_controller_cold(&vec![2; n_ing]);
    let kuryr = kuryr_cold(routes, s.pools, s.members);
    println!("  octavia-ingress-controller: {oic} writes on {n_ing} load balancers; kuryr: {kuryr}");

    // Steady state.
    let steady = plan_writes(&desired, &sim.router, &diff_opts());
    println!("steady resync: {} writes", steady.writes.len());

    // Churn: 100 endpoint changes over 10 Services, coalesced level-triggered.
    let (changes, churned) = (100, 10.min(n_svc));
    let finals = churn(churned, eps, changes);
    for (svc, ips) in finals.iter().enumerate() {
        set_endpoints(&mut inp, svc, ips);
    }
    let after = translate(&inp, &opts);
    let plan = converge(&mut sim, &after);
    println!(
        "churn: {changes} endpoint changes over {churned} Services: {} writes {:?}; naive one-write-per-change: {changes}; \
         kuryr (member create + delete per change): {}; octavia-ingress-controller: 0 (NodePort members)",
        plan.writes.len(),
        by_kind(&plan),
        2 * changes
    );

    // One new Ingress with R = 3 paths, P = 2 of them to new Services.
    let (p_new, r) = (2usize, 3usize);
    for k in 0..p_new {
        inp.services.push(service(n_svc + k));
        let ips: Vec<String> = (0..eps).map(|e| ep_ip(n_svc + k, e, 0)).collect();
        inp.endpoint_slices.push(slice(n_svc + k, &ips));
    }
    inp.ingresses.push(ingress("ing-new", "new.example.com", &[("/", n_svc), ("/api", n_svc + 1), ("/static", 0)]));
    let after_new = translate(&inp, &opts);
    let plan = converge(&mut sim, &after_new);
    let moves = plan.writes.iter().filter(|w| matches!(w, Write::UpdatePolicy { position: Some(_), .. })).count();
    println!(
        "new Ingress (R={r} paths, P={p_new} new Services): {} writes {:?} vs P + R = {}; necessary {} \
         (2 per new pool + policy + rules per path); position moves: {moves}",
        plan.writes.len(),
        by_kind(&plan),
        p_new + r,
        2 * p_new
            + r
            + after_new.policies.iter().filter(|p| p.owner.name == "ing-new").map(|p| p.rules.len()).sum::<usize>(),
    );
    println!(
        "  octavia-ingress-controller: {} (own LB); kuryr: {} (pool + {eps} members per new Service, policy + 2 rules per path)",
        octavia_ingress_controller_cold(&[r]),
        p_new * (1 + eps) + r * 3
    );
}

/// Translate + diff for 10,000 Ingresses and 100,000 endpoints; one Service's endpoint change.
fn controller_scale(full: bool) {
    let (n_ing, n_svc, eps, reps) = if full { (10_000, 10_000, 10, 3) } else { (100, 100, 10, 1) };
    println!("\n## controller scale: {n_ing} Ingresses, {n_svc} Services, {} endpoints", n_svc * eps);
    let t = Instant::now();
    // As the controller holds them: the watch caches' Arc'd objects, read through a Snapshot.
    let inp = snapshot(apps(n_ing, n_svc, eps));
    println!("generated inputs in {:.0} ms", t.elapsed().as_secs_f64() * 1e3);
    mem("inputs generated (the caches)");
    // What the controller paid on top before it translated from a Snapshot: a deep copy of
    // every cache per translation.
    reset_peak();
    let copy = deep_copy(&inp);
    mem("a deep copy of every cache (the old Inputs)");
    drop(copy);
    if std::env::var_os("KURYR_BENCH_MEM_PROBE").is_some() {
        probe(&inp);
    }
    let opts = TranslateOptions::default();
    let (t_tr, desired) = best_of(reps, || translate(&inp, &opts));
    mem("translated");
    let s = shape(&desired);
    println!(
        "translate: best of {reps} {:.1} ms ({} policies, {} rules, {} pools, {} members)",
        t_tr * 1e3,
        s.policies,
        s.rules,
        s.pools,
        s.members
    );
    let empty = empty_router();
    let (t_cold, cold) = best_of(reps, || plan_writes(&desired, &empty, &diff_opts()));
    println!("plan_writes from an empty router: best of {reps} {:.1} ms ({} writes)", t_cold * 1e3, cold.writes.len());
    mem("cold plan");
    let mut sim = Simulator::new(empty);
    let t = Instant::now();
    sim.apply_all(&cold.writes).expect("simulator accepts the plan");
    println!("(simulator applied them in {:.0} ms)", t.elapsed().as_secs_f64() * 1e3);
    mem("simulator applied");
    drop(cold);
    mem("cold plan dropped");
    let (t_steady, steady) = best_of(reps, || plan_writes(&desired, &sim.router, &diff_opts()));
    assert!(steady.writes.is_empty());
    println!("plan_writes, nothing changed (resync): best of {reps} {:.1} ms (0 writes)", t_steady * 1e3);
    mem("steady plan");
    let (t_all, _) = best_of(reps, || plan_writes(&translate(&inp, &opts), &sim.router, &diff_opts()));
    println!("translate + plan_writes (full resync): best of {reps} {:.1} ms", t_all * 1e3);
    println!("VmHWM after translate + diff: {} MiB", vm_hwm_kib() / 1024);

    // One endpoint of one Service (svc 4242) changes.
    let target = 4242 % n_svc;
    let svc = &inp.services[target];
    let sp = &svc.spec.as_ref().unwrap().ports.as_ref().unwrap()[0];
    let nodes = index_nodes(&inp.nodes);
    let mut ips: Vec<String> = (0..eps).map(|e| ep_ip(target, e, 0)).collect();
    ips[0] = ep_ip(target, 0, 7);
    let changed = slice(target, &ips);
    let mut cache = SliceCache::new(IpFamily::V4);
    cache.upsert(&inp.endpoint_slices[target]);
    let pool_name = desired.pools.values().find(|p| p.service.name == format!("svc{target}")).unwrap().name.clone();
    let one_desired =
        DesiredRouter { pools: [(pool_name.clone(), desired.pools[&pool_name].clone())].into(), ..Default::default() };
    let one_actual = ActualRouter {
        listener: sim.router.listener.clone(),
        pools: sim.router.pools.iter().filter(|p| p.name == pool_name).cloned().collect(),
        ..Default::default()
    };
    let iters = if full { 10_000 } else { 100 };
    let mut writes = 0;
    let t = Instant::now();
    for _ in 0..iters {
        cache.upsert(&changed);
        let (members, _, _) = cache.members(svc, sp, &nodes, &opts);
        let mut d = one_desired.clone();
        d.pools.get_mut(&pool_name).unwrap().members = members;
        let plan = plan_writes(&d, &one_actual, &diff_opts());
        writes = plan.writes.len();
        std::hint::black_box(plan);
    }
    println!(
        "endpoint change, one Service among {n_svc}: SliceCache upsert + members + plan_writes on that pool: {:.1} µs \
         ({writes} write: the batch member PUT)",
        t.elapsed().as_secs_f64() * 1e6 / iters as f64
    );
    let mut d = desired.clone();
    d.pools.get_mut(&pool_name).unwrap().members = cache.members(svc, sp, &nodes, &opts).0;
    let (t_one, plan) = best_of(reps, || plan_writes(&d, &sim.router, &diff_opts()));
    assert_eq!(plan.writes.len(), 1);
    println!("  same change through a whole-router plan_writes: best of {reps} {:.1} ms (1 write)", t_one * 1e3);
}
