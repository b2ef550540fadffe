//! Controller scale without Octavia, and the write counts of the issue-7 scenarios at full size.
//!
//! Run: `cargo bench --bench scale` (std::time, no harness). Without `--bench` in argv (as in
//! `cargo test --all-targets`) it runs a smoke-size workload so the test suite stays fast.
//! Results go to docs/benchmarks.md ("Controller scale" and "Write counts at full size").

mod common;

use common::*;
use kuryr_l7_router::driver::actual::{ActualListener, ActualRouter};
use kuryr_l7_router::driver::diff::plan_writes;
use kuryr_l7_router::driver::isolation::{WriteKey, exclude_held};
use kuryr_l7_router::driver::ownership::Ownership;
use kuryr_l7_router::driver::parent::Parent;
use kuryr_l7_router::driver::plan::{DiffOptions, Write, WritePlan};
use kuryr_l7_router::driver::read_cache::ReadCache;
use kuryr_l7_router::driver::sim::Simulator;
use kuryr_l7_router::driver::view::DesiredView;
use kuryr_l7_router::model::{DesiredRouter, HttpsListener};
use kuryr_l7_router::translate::members::index_nodes;
use kuryr_l7_router::translate::slices::CompactSlice;
use kuryr_l7_router::translate::*;
use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Instant;

#[global_allocator]
static ALLOC: mem::Counting = mem::Counting;

fn vm_hwm_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmHWM:")).map(|l| l.to_string()))
        .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        .unwrap_or(0)
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

/// The best time of `n` runs, and the last result. The previous result is dropped before the
/// next run: the controller never holds two translations or two plans of one router, and
/// keeping both inflated the bench's peak RSS by one result.
fn best_of<T>(n: usize, mut f: impl FnMut() -> T) -> (f64, T) {
    let mut best = f64::MAX;
    let mut out = None;
    for _ in 0..n {
        drop(out.take());
        let t = Instant::now();
        out = Some(f());
        best = best.min(t.elapsed().as_secs_f64());
    }
    (best, out.unwrap())
}

/// The best wall time and the best CPU time of some runs, in seconds.
#[derive(Clone, Copy)]
struct Took {
    wall: f64,
    cpu: f64,
}

impl std::fmt::Display for Took {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:.1} ms (CPU {:.1} ms)", self.wall * 1e3, self.cpu * 1e3)
    }
}

/// This thread's time on a core so far, in seconds (Linux's schedstat). Unlike wall time it
/// hardly grows while other processes share the cores, so the guard compares CPU times.
fn thread_cpu() -> f64 {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    stat.split_whitespace().next().and_then(|ns| ns.parse::<f64>().ok()).unwrap_or(0.0) / 1e9
}

/// [`best_of`] with the best CPU time beside the best wall time.
fn timed<T>(n: usize, mut f: impl FnMut() -> T) -> (Took, T) {
    let mut best = Took { wall: f64::MAX, cpu: f64::MAX };
    let mut out = None;
    for _ in 0..n {
        drop(out.take());
        let (t, c) = (Instant::now(), thread_cpu());
        out = Some(f());
        best.cpu = best.cpu.min(thread_cpu() - c);
        best.wall = best.wall.min(t.elapsed().as_secs_f64());
    }
    (best, out.unwrap())
}

/// The resync guard (issue 36): the plan of an unchanged router and the full resync (translate
/// and plan), each as a multiple of the translation measured in the same run, in CPU time. A later
/// change that doubles either fails the bench. The limits are twice the ratios measured when the
/// guard was set (see docs/benchmarks.md, "Controller scale").
const STEADY_PLAN_PER_TRANSLATE_LIMIT: f64 = 2.0 * STEADY_PLAN_PER_TRANSLATE;
const FULL_RESYNC_PER_TRANSLATE_LIMIT: f64 = 2.0 * FULL_RESYNC_PER_TRANSLATE;
const STEADY_PLAN_PER_TRANSLATE: f64 = 0.5;
const FULL_RESYNC_PER_TRANSLATE: f64 = 2.0;

fn resync_guard(translate: Took, steady: Took, full: Took) {
    let (steady_ratio, full_ratio) = (steady.cpu / translate.cpu, full.cpu / translate.cpu);
    println!(
        "resync guard (CPU time per translate): unchanged-router plan {steady_ratio:.2} (limit \
         {STEADY_PLAN_PER_TRANSLATE_LIMIT:.2}), full resync {full_ratio:.2} (limit {FULL_RESYNC_PER_TRANSLATE_LIMIT:.2})"
    );
    assert!(
        steady_ratio <= STEADY_PLAN_PER_TRANSLATE_LIMIT,
        "the plan of an unchanged router costs {steady_ratio:.2} translations, over twice its {STEADY_PLAN_PER_TRANSLATE}"
    );
    assert!(
        full_ratio <= FULL_RESYNC_PER_TRANSLATE_LIMIT,
        "a full resync costs {full_ratio:.2} translations, over twice its {FULL_RESYNC_PER_TRANSLATE}"
    );
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    println!("mode: {}", if full { "full (--bench)" } else { "smoke (no --bench in argv)" });
    // `KURYR_SCALE_ONLY=controller` runs the controller-scale section alone (for a profiler).
    let only_controller = std::env::var("KURYR_SCALE_ONLY").is_ok_and(|v| v == "controller");
    if only_controller {
        controller_scale(full);
        return;
    }
    write_counts(full);
    controller_scale(full);
    held_object_views(full);
    // Before the memory section, whose peak resets (`mem::settle`) also reset what
    // `/usr/bin/time` reports as the maximum resident set.
    println!("VmHWM (peak RSS) of the whole run before the memory section: {} MiB", vm_hwm_kib() / 1024);
    memory_breakdown(full);
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
        inp.endpoint_slices.push(slice(n_svc + k, &ips).into());
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
    let inp = apps(n_ing, n_svc, eps);
    println!("generated inputs in {:.0} ms", t.elapsed().as_secs_f64() * 1e3);
    let opts = TranslateOptions::default();
    let (t_tr, desired) = timed(reps, || translate(&inp, &opts));
    let s = shape(&desired);
    println!(
        "translate: best of {reps} {t_tr} ({} policies, {} rules, {} pools, {} members)",
        s.policies, s.rules, s.pools, s.members
    );
    println!("VmHWM after the inputs and the translations: {} MiB", vm_hwm_kib() / 1024);
    let empty = empty_router();
    let (t_cold, cold) = timed(reps, || plan_writes(&desired, &empty, &diff_opts()));
    println!("plan_writes from an empty router: best of {reps} {t_cold} ({} writes)", cold.writes.len());
    // VmHWM only grows: each line says which phase raised the peak.
    println!("VmHWM after the cold plan: {} MiB", vm_hwm_kib() / 1024);
    let mut sim = Simulator::new(empty);
    let t = Instant::now();
    sim.apply_all(&cold.writes).expect("simulator accepts the plan");
    println!("(simulator applied them in {:.0} ms)", t.elapsed().as_secs_f64() * 1e3);
    println!("VmHWM after the simulator applied it: {} MiB", vm_hwm_kib() / 1024);
    // Executed: the controller keeps no plan once its writes are done.
    drop(cold);
    let (t_steady, steady) = timed(reps, || plan_writes(&desired, &sim.router, &diff_opts()));
    assert!(steady.writes.is_empty());
    println!("plan_writes, nothing changed (resync): best of {reps} {t_steady} (0 writes)");
    println!("VmHWM after the steady plans: {} MiB", vm_hwm_kib() / 1024);
    let (t_all, _) = timed(reps, || plan_writes(&translate(&inp, &opts), &sim.router, &diff_opts()));
    println!("translate + plan_writes (full resync): best of {reps} {t_all}");
    if full {
        resync_guard(t_tr, t_steady, t_all);
    }
    // `KURYR_SCALE_SPLIT=1`: the full resync's parts, each in CPU time (a translation right
    // after a plan costs about half as much again as one after another translation).
    if std::env::var("KURYR_SCALE_SPLIT").is_ok() {
        for _ in 0..3 {
            let c0 = thread_cpu();
            let d = translate(&inp, &opts);
            let c1 = thread_cpu();
            let p = plan_writes(&d, &sim.router, &diff_opts());
            let c2 = thread_cpu();
            drop(p);
            let c3 = thread_cpu();
            drop(d);
            let c4 = thread_cpu();
            println!(
                "split: translate {:.1} plan {:.1} drop plan {:.1} drop desired {:.1}",
                (c1 - c0) * 1e3,
                (c2 - c1) * 1e3,
                (c3 - c2) * 1e3,
                (c4 - c3) * 1e3
            );
        }
    }
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
    // The router's desired state itself, changed in place (not a second copy of it).
    let mut d = desired;
    d.pools.get_mut(&pool_name).unwrap().members = cache.members(svc, sp, &nodes, &opts).0;
    let (t_one, plan) = best_of(reps, || plan_writes(&d, &sim.router, &diff_opts()));
    assert_eq!(plan.writes.len(), 1);
    println!("  same change through a whole-router plan_writes: best of {reps} {:.1} ms (1 write)", t_one * 1e3);
}

/// What one round of a listener's plan costs before `plan_writes` when an object is on hold, at
/// full size: the desired state narrowed for the held object (a new pool whose create Octavia
/// refused) and the HTTPS listener's desired state. Before, both were copies of the router;
/// now they are borrowed views. The copies are rebuilt here as the driver made them.
fn held_object_views(full: bool) {
    let (n_ing, n_svc, eps, reps) = if full { (10_000, 10_000, 10, 5) } else { (100, 100, 10, 1) };
    println!("\n## a held object at {n_ing} Ingresses: the views one round plans from");
    let desired = translate(&apps(n_ing, n_svc, eps), &TranslateOptions::default());
    let held_pool = desired.pools.keys().nth(desired.pools.len() / 2).expect("pools").clone();
    let held: BTreeSet<WriteKey> = [WriteKey::Pool(held_pool.clone())].into();
    let existing = BTreeSet::new();
    let (t_copy, copied) = best_of(reps, || {
        // The copy of the desired router each round made before (isolation::exclude_held).
        let mut out = desired.clone();
        out.pools.retain(|name, _| *name != held_pool);
        out.policies.retain(|p| p.pool != held_pool);
        out
    });
    let (t_view, view) = best_of(reps, || exclude_held(&DesiredView::of(&desired), "listener", &held, &existing));
    assert_eq!(view.policies.len(), copied.policies.len());
    println!(
        "without the held pool: copy {:.2} ms, view {:.2} ms ({} policies, {} pools)",
        t_copy * 1e3,
        t_view * 1e3,
        copied.policies.len(),
        copied.pools.len()
    );
    let https = HttpsListener {
        port: 443,
        certificates: Default::default(),
        default_certificate: String::new(),
        policies: desired.policies.clone(),
        default_pool: desired.default_pool.clone(),
        client_validation: None,
    };
    let (t_copy, _) = best_of(reps, || DesiredRouter {
        // The HTTPS listener's desired state as https_view built it before.
        policies: https.policies.clone(),
        default_pool: https.default_pool.clone(),
        pools: desired.pools.clone(),
        health_monitors: desired.health_monitors.clone(),
        ..DesiredRouter::default()
    });
    let (t_view, _) = best_of(reps, || DesiredView::https(&desired, &https));
    println!("HTTPS listener (every Ingress with TLS): copy {:.2} ms, view {:.2} ms", t_copy * 1e3, t_view * 1e3);
    let actual = empty_router();
    let (t_plan, _) = best_of(reps, || {
        kuryr_l7_router::driver::diff::plan_view(
            &exclude_held(&DesiredView::of(&desired), "listener", &held, &existing),
            &actual,
            &diff_opts(),
        )
    });
    println!("view + plan_view from an empty router, for scale: {:.1} ms", t_plan * 1e3);
}

/// The caches as the controller holds them: each object in an `Arc`, shared with the
/// translation through a [`Snapshot`].
fn as_caches(inp: Inputs) -> Snapshot {
    fn arcs<K>(v: Vec<K>) -> Vec<Arc<K>> {
        v.into_iter().map(Arc::new).collect()
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
        certificates: inp.certificates,
        gateway_claims: inp.gateway_claims,
    }
}

/// What `Stores::inputs` made for every translation before the translation read the caches in
/// place: a deep copy of each cache.
fn deep_copy(s: &Snapshot) -> Inputs {
    fn owned<K: Clone>(v: &[Arc<K>]) -> Vec<K> {
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
        gateway_claims: s.gateway_claims.clone(),
        notes: vec![],
        certificates: s.certificates.clone(),
    }
}

/// An object as `kubectl apply` leaves it on the server: `managedFields` and the last-applied
/// annotation, each about the size of the object's own JSON (their real size, give or take).
fn as_applied<K: kube::Resource + serde::Serialize>(mut obj: K) -> K {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{FieldsV1, ManagedFieldsEntry};
    let json = serde_json::to_string(&obj).expect("JSON");
    let fields = serde_json::from_str(&json).expect("JSON");
    let meta = obj.meta_mut();
    meta.annotations.get_or_insert_default().insert(kuryr_l7_router::controller::slim::LAST_APPLIED.into(), json);
    meta.managed_fields = Some(vec![ManagedFieldsEntry {
        manager: Some("kubectl-client-side-apply".into()),
        operation: Some("Update".into()),
        fields_type: Some("FieldsV1".into()),
        fields_v1: Some(FieldsV1(fields)),
        ..Default::default()
    }]);
    obj
}

/// The read cache the controller keeps after reading `router` back: every policy's rules and
/// every pool's members, as the read shares them with it (`copied`: as it held them before, a
/// copy per parent).
fn read_cache_of(router: &ActualRouter, copied: bool) -> ReadCache {
    fn shared<T: Clone>(children: &Arc<[T]>, copied: bool) -> Arc<[T]> {
        if copied { children.to_vec().into() } else { Arc::clone(children) }
    }
    let now = Instant::now();
    let mut cache = ReadCache::default();
    fn parent<'a>(id: &'a str, child_ids: Vec<&'a str>) -> Parent<'a> {
        Parent { id, provisioning_status: "ACTIVE", updated_at: Some("2026-11-26T08:40:00"), child_ids }
    }
    // Ids as Octavia's listings send them: text.
    for p in &router.policies {
        let texts: Vec<String> = p.rules.iter().map(|r| r.id.to_string()).collect();
        let ids = texts.iter().map(String::as_str).collect();
        cache.rules.put(&parent(&p.id.to_string(), ids), now, &shared(&p.rules, copied));
    }
    for p in &router.pools {
        let texts: Vec<String> = p.members.iter().map(|m| m.id.to_string()).collect();
        let ids = texts.iter().map(String::as_str).collect();
        cache.members.put(&parent(&p.id.to_string(), ids), now, &shared(&p.members, copied));
    }
    cache
}

/// Where the memory of one translation goes, the translation inputs before and after they were
/// borrowed side by side in one run, and the objects slimmed on receipt.
/// `docs/benchmarks.md`, "Where the memory goes".
fn memory_breakdown(full: bool) {
    let (n_ing, n_svc, eps) = if full { (10_000, 10_000, 10) } else { (100, 100, 10) };
    println!("\n## memory at {n_ing} Ingresses, {n_svc} Services, {} endpoints (MiB: held / peak)", n_svc * eps);
    let opts = TranslateOptions::default();
    let (caches, held, _, live) = mem::measure_live(|| as_caches(apps(n_ing, n_svc, eps)));
    println!("[mem] the caches (Kubernetes objects in Arcs): {held:.0} (live {live:.0})");
    let (_, held, peak, live) = mem::measure_live(|| translate(&caches, &opts));
    println!("[mem] one translation from a Snapshot of the caches (now): {held:.0} / {peak:.0} (live {live:.0})");
    let (_, held, peak) = mem::measure(|| {
        let copy = deep_copy(&caches);
        let desired = translate(&copy, &opts);
        (copy, desired)
    });
    println!("[mem] one translation from a deep copy of every cache (before): {held:.0} / {peak:.0}");
    let (desired, held, peak, live) = mem::measure_live(|| translate(&caches, &opts));
    println!("[mem] one translation from a Snapshot again (order check): {held:.0} / {peak:.0} (live {live:.0})");
    let empty = empty_router();
    let (cold, held, peak, live) = mem::measure_live(|| plan_writes(&desired, &empty, &diff_opts()));
    println!("[mem] the cold plan ({} writes): {held:.0} / {peak:.0} (live {live:.0})", cold.writes.len());
    let (sim, held, peak, live) = mem::measure_live(|| {
        let mut sim = Simulator::new(empty_router());
        sim.apply_all(&cold.writes).expect("simulator accepts the plan");
        sim
    });
    println!("[mem] the router read back (ActualRouter of the simulator): {held:.0} / {peak:.0} (live {live:.0})");
    let (cache, held, _, live) = mem::measure_live(|| read_cache_of(&sim.router, false));
    println!("[mem] the controller's read cache over it, rules and members shared (now): {held:.0} (live {live:.0})");
    drop(cache);
    let (cache, held, _, live) = mem::measure_live(|| read_cache_of(&sim.router, true));
    println!(
        "[mem] the controller's read cache over it, rules and members copied (before): {held:.0} (live {live:.0})"
    );
    drop(cache);
    drop((cold, sim, desired, caches));

    // Each object is received as applied and, now, slimmed before the next one is received.
    let received = |slim: bool| {
        fn receive<K: kube::Resource + serde::Serialize + 'static>(objects: Vec<K>, slim: bool) -> Vec<K> {
            let on_receipt = |mut o: K| {
                if slim {
                    kuryr_l7_router::controller::slim::slim(&mut o);
                }
                o
            };
            objects.into_iter().map(as_applied).map(on_receipt).collect()
        }
        let mut inp = apps(n_ing, n_svc, eps);
        inp.ingresses = receive(inp.ingresses, slim);
        inp.services = receive(inp.services, slim);
        inp.endpoint_slices = receive(inp.endpoint_slices, slim);
        as_caches(inp)
    };
    let (fat, held, _) = mem::measure(|| received(false));
    println!("[mem] the caches, objects as kubectl apply leaves them (before: kept whole): {held:.0}");
    drop(fat);
    let (slim, held, _) = mem::measure(|| received(true));
    println!("[mem] the same caches, objects slimmed on receipt (now): {held:.0}");
    drop(slim);

    // The EndpointSlices alone as kube-controller-manager writes them (each endpoint with its
    // conditions, node, zone and Pod reference), held whole and compacted on receipt.
    let written =
        || (0..n_svc).map(move |s| as_written(slice(s, &(0..eps).map(|e| ep_ip(s, e, 0)).collect::<Vec<_>>())));
    let (fat, _, _, live) = mem::measure_live(|| written().collect::<Vec<_>>());
    println!("[mem] the EndpointSlices as kube-controller-manager writes them, kept whole: live {live:.1}");
    drop(fat);
    let (compact, _, _, live) = mem::measure_live(|| {
        let on_receipt = |mut o: CompactSlice| {
            kuryr_l7_router::controller::slim::slim(&mut o);
            o
        };
        written().map(CompactSlice::from).map(on_receipt).collect::<Vec<_>>()
    });
    println!("[mem] the same EndpointSlices compacted on receipt (now): live {live:.1}");
    drop(compact);
}

/// An EndpointSlice as kube-controller-manager writes it for a Deployment's Pods: each endpoint
/// with its conditions, node, zone and Pod reference (uid and resource version included).
fn as_written(
    mut slice: k8s_openapi::api::discovery::v1::EndpointSlice,
) -> k8s_openapi::api::discovery::v1::EndpointSlice {
    use k8s_openapi::api::core::v1::ObjectReference;
    use k8s_openapi::api::discovery::v1::EndpointConditions;
    let service = slice.metadata.name.clone().unwrap_or_default();
    for (i, e) in slice.endpoints.iter_mut().enumerate() {
        e.conditions = Some(EndpointConditions { ready: Some(true), serving: Some(true), terminating: Some(false) });
        e.node_name = Some(format!("node-{}", i % 100));
        e.zone = Some(format!("zone-{}", i % 3));
        e.target_ref = Some(ObjectReference {
            kind: Some("Pod".into()),
            namespace: slice.metadata.namespace.clone(),
            name: Some(format!("{service}-7d9f8b6c5-{i:05}")),
            uid: Some(format!("0b3c6f0e-9d1a-4c55-8f0e-{i:012}")),
            resource_version: Some(format!("{}", 40_000_000 + i)),
            ..Default::default()
        });
    }
    slice
}
