//! `KURYR_BENCH_ONLY=scale-out`: the same Ingresses on ONE router and on a router set at the
//! default capacity, side by side in one run against the real Octavia, then concurrent member
//! writes on N routers of one size (the `parallel_writes` question).
//!
//! The product's driver path, as the router set drives it: `placement::split::place_and_split`
//! (keeping the placement of the previous step, as the controller does), then per router
//! `Router::converge` for a Sync and `Router::set_members` for an endpoint change, every router
//! at the same time, all of them sharing one `WritePermits` of `parallel_writes`. Each router's
//! endpoint changes run one at a time, a queued change of the same pool replaced by the newer
//! one, as the controller's writer does; the controller's own queue is not used, so the
//! Kubernetes side (watch, translation in the controller) is not in these times.
//!
//! Knobs: `KURYR_BENCH_INGRESSES` (200), `KURYR_BENCH_SERVICES` (48),
//! `KURYR_BENCH_MAX_POLICIES` (100), `KURYR_BENCH_PARALLEL_WRITES` (4, the option's default),
//! `KURYR_BENCH_BURST` (50 changes), `KURYR_BENCH_BURST_GAP_MS` (200: the burst lasts 10 s),
//! `KURYR_BENCH_BURST_ONE_ROUTER` (changes of the burst on the one router, 12: the rest would
//! each wait one more write of that router's size), `KURYR_BENCH_SKIP_ONE=1` (the set only),
//! `KURYR_BENCH_SKIP_SET=1` (the one router only), `KURYR_BENCH_PARALLEL_ONLY=1` (the set's cold
//! start and the concurrent writes only), `KURYR_BENCH_PARALLEL_ROUNDS` (3),
//! `KURYR_BENCH_RESTART_STAMPS=0` (the restart without the old process's stamps, and no resync
//! before it), `KURYR_BENCH_SKIP_PARALLEL=1` (no concurrent-writes rounds after the set). The ONE
//! router of 400 policies needs `OCTAVIA_MAX_REQUEST_BODY_SIZE` raised on the stack (its create
//! body is ~270 KB; Octavia's default limit refuses it with a 413) and `KURYR_BENCH_MAX_CREATE_BODY`
//! (the driver's `max_create_body_bytes`) raised to match, to be created in one write.

use super::common::*;
use super::{env_usize, secs};
use kuryr_l7_router::driver::ownership::Ownership;
use kuryr_l7_router::driver::report::{ConvergeReport, MembersChange};
use kuryr_l7_router::driver::router::Router;
use kuryr_l7_router::driver::{WritePermits, populated_create};
use kuryr_l7_router::model::{DesiredRouter, Pool};
use kuryr_l7_router::placement::split::{SplitParams, place_and_split};
use kuryr_l7_router::placement::{Capacity, Placement, RouterIndex, RouterRecord, router_name};
use kuryr_l7_router::translate::{Inputs, TranslateOptions, translate};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Every router either deployment made, for the cleanup (also after a panic).
pub type Made = Arc<Mutex<Vec<Router>>>;

/// One logical router: a single router (`capacity` None) or a set at `capacity`.
pub(super) struct Deployment {
    label: &'static str,
    base: String,
    template: Router,
    permits: WritePermits,
    capacity: Option<Capacity>,
    placement: Option<Placement>,
    routers: BTreeMap<RouterIndex, Router>,
    parts: BTreeMap<RouterIndex, DesiredRouter>,
    made: Made,
}

impl Deployment {
    pub(super) fn new(
        label: &'static str,
        template: Router,
        capacity: Option<Capacity>,
        parallel: usize,
        made: Made,
    ) -> Self {
        let base = template.spec().name.clone();
        Deployment {
            label,
            base,
            template,
            permits: WritePermits::new(parallel, parallel),
            capacity,
            placement: None,
            routers: BTreeMap::new(),
            parts: BTreeMap::new(),
            made,
        }
    }

    /// Router `i` of this deployment as a process that starts now would build it: its own read
    /// cache, the shared write permits.
    fn fresh(&self, i: RouterIndex) -> Router {
        let name = router_name(&self.base, i);
        let mut spec = self.template.spec().clone();
        spec.ownership = Ownership::new(&name);
        spec.name = name;
        // The driver's own create limit, to match a stack started with a raised
        // OCTAVIA_MAX_REQUEST_BODY_SIZE (else a large router's create is cut at 114,688 bytes).
        if let Some(limit) = std::env::var("KURYR_BENCH_MAX_CREATE_BODY").ok().and_then(|v| v.parse().ok()) {
            spec.max_create_body_bytes = limit;
        }
        let r = Router::new(self.template.octavia().clone(), self.template.neutron().clone(), spec)
            .with_write_permits(self.permits.clone());
        self.made.lock().unwrap().push(r.clone());
        r
    }

    pub(super) fn router(&mut self, i: RouterIndex) -> Router {
        if !self.routers.contains_key(&i) {
            let r = self.fresh(i);
            self.routers.insert(i, r);
        }
        self.routers[&i].clone()
    }

    /// The desired part of each router: the placement keeps every placed group where it is
    /// (the controller's `SplitParams` from the previous placement).
    pub(super) fn split(&mut self, desired: &DesiredRouter) -> BTreeMap<RouterIndex, DesiredRouter> {
        let Some(capacity) = self.capacity else { return BTreeMap::from([(0, desired.clone())]) };
        let prev = self.placement.as_ref();
        let params = SplitParams {
            capacity,
            current: prev.map(|p| p.host_router.clone()).unwrap_or_default(),
            routers: prev
                .map(|p| p.routers.keys().map(|r| (*r, RouterRecord::default())).collect())
                .unwrap_or_default(),
            now: 0,
            empty_grace_secs: 3600,
        };
        let set = place_and_split(desired, &params);
        self.placement = Some(set.placement);
        set.routers
    }

    /// A Sync: every router whose part changed converges, all at the same time.
    async fn sync(&mut self, desired: &DesiredRouter) -> Outcome {
        let parts = self.split(desired);
        let changed: Vec<RouterIndex> =
            parts.iter().filter(|(i, p)| self.parts.get(i) != Some(*p)).map(|(i, _)| *i).collect();
        let jobs: Vec<(Router, DesiredRouter)> = changed.iter().map(|i| (self.router(*i), parts[i].clone())).collect();
        let out = converge_all(jobs).await;
        self.parts = parts;
        out
    }
}

/// What one step cost over the routers it touched.
#[derive(Default)]
struct Outcome {
    writes: usize,
    wall: Duration,
    /// Per router: (name, writes, elapsed, of which in writes).
    per_router: Vec<(String, usize, Duration, Duration)>,
    /// Convergences that failed (router: error), reported instead of ending the run.
    errors: Vec<String>,
}

impl Outcome {
    fn line(&self) -> String {
        let per: Vec<String> = self
            .per_router
            .iter()
            .map(|(n, w, e, inw)| format!("{n}: {w} writes {:.1} s ({:.1} s in writes)", secs(*e), secs(*inw)))
            .collect();
        let failed =
            if self.errors.is_empty() { String::new() } else { format!(" FAILED: {}", self.errors.join("; ")) };
        format!("{} writes, wall {:.1} s [{}]{failed}", self.writes, secs(self.wall), per.join("; "))
    }
}

async fn converge_all(jobs: Vec<(Router, DesiredRouter)>) -> Outcome {
    let t = Instant::now();
    let mut set = tokio::task::JoinSet::new();
    for (r, d) in jobs {
        set.spawn(async move { (r.spec().name.clone(), r.converge(&d).await) });
    }
    let mut out = Outcome::default();
    while let Some(res) = set.join_next().await {
        let (name, rep) = res.expect("converge task");
        let rep: ConvergeReport = match rep {
            Ok(rep) => rep,
            Err(e) => {
                out.errors.push(format!("{name}: {e}"));
                continue;
            }
        };
        let inw = rep.writes.iter().map(|w| w.duration).sum();
        out.writes += rep.writes.len();
        out.per_router.push((name, rep.writes.len(), rep.elapsed, inw));
    }
    out.per_router.sort();
    out.wall = t.elapsed();
    out
}

/// The pools of `svc` on each router of `parts` (a Service may feed several routers).
fn pools_of(parts: &BTreeMap<RouterIndex, DesiredRouter>, svc: usize) -> Vec<(RouterIndex, Pool)> {
    let name = format!("svc{svc}");
    parts
        .iter()
        .flat_map(|(i, d)| d.pools.values().filter(|p| p.service.name == name).map(move |p| (*i, p.clone())))
        .collect()
}

/// The workload: [`apps`]' 200 two-path Ingresses, but each Ingress's two Services are among
/// the Services of the Ingresses placed on its router (an app's Ingress names its own
/// Services), so that an endpoint change is one write on one router of the set. Placement
/// depends on hosts and policy counts only, so it is computed on `apps` first.
pub(super) fn workload(n_ing: usize, n_svc: usize, eps: usize, capacity: Capacity) -> Inputs {
    let mut inp = apps(n_ing, n_svc, eps);
    let placed = place_and_split(
        &translate(&inp, &TranslateOptions::default()),
        &SplitParams { capacity, current: BTreeMap::new(), routers: BTreeMap::new(), now: 0, empty_grace_secs: 3600 },
    )
    .placement;
    let n_routers = placed.routers.len().max(1);
    let per = (n_svc / n_routers).max(1);
    let mut rank: BTreeMap<RouterIndex, usize> = BTreeMap::new();
    for i in 0..n_ing {
        let r = placed.host_router[&format!("app{i}.example.com")];
        let k = rank.entry(r).or_default();
        let base = (r as usize % n_routers) * per;
        let (web, api) = (base + *k % per, base + (*k + per / 2) % per);
        *k += 1;
        inp.ingresses[i] = ingress(&format!("ing{i}"), &format!("app{i}.example.com"), &[("/", web), ("/api", api)]);
    }
    inp
}

pub async fn run(one: Router, set_template: Router, made: Made) {
    let n_ing = env_usize("KURYR_BENCH_INGRESSES", 200);
    let n_svc = env_usize("KURYR_BENCH_SERVICES", 48);
    let eps = 5;
    let capacity = Capacity { max_policies: env_usize("KURYR_BENCH_MAX_POLICIES", 100) as u32, max_certificates: 24 };
    let parallel = env_usize("KURYR_BENCH_PARALLEL_WRITES", 4);
    let skip_one = std::env::var("KURYR_BENCH_SKIP_ONE").as_deref() == Ok("1");
    let inp = workload(n_ing, n_svc, eps, capacity);
    let topts = TranslateOptions::default();
    let desired = translate(&inp, &topts);
    let s = shape(&desired);
    println!(
        "# scale-out: {n_ing} Ingresses, {} policies, {} rules, {} pools, {} members; set at max_policies_per_router \
         = {}, parallel_writes = {parallel}; load average {}",
        s.policies,
        s.rules,
        s.pools,
        s.members,
        capacity.max_policies,
        loadavg()
    );
    create_body_sizes(&set_template, eps);
    let mut set = Deployment::new("set", set_template, Some(capacity), parallel, made.clone());
    // The set first, with the parallel-writes question on its routers while nothing else of
    // ours runs; the one router after it, whose reads and writes take minutes at this size.
    // `KURYR_BENCH_SKIP_SET=1`: the one router only (e.g. in a second process beside a set run).
    if std::env::var("KURYR_BENCH_PARALLEL_ONLY").as_deref() == Ok("1") {
        let out = set.sync(&translate(&inp, &topts)).await;
        println!("[set] cold start ({} routers): {} | load {}", set.parts.len(), out.line(), loadavg());
        parallel_writes(&set).await;
        return;
    }
    if std::env::var("KURYR_BENCH_SKIP_SET").as_deref() != Ok("1") {
        phases(&mut set, inp.clone(), &topts, eps).await;
        if std::env::var("KURYR_BENCH_SKIP_PARALLEL").as_deref() != Ok("1") {
            parallel_writes(&set).await;
        }
    }
    if !skip_one {
        let mut one = Deployment::new("one", one, None, parallel, made.clone());
        phases(&mut one, inp, &topts, eps).await;
    }
}

/// Every measurement of the issue on one deployment, from the same initial Ingresses.
async fn phases(d: &mut Deployment, mut inp: Inputs, topts: &TranslateOptions, eps: usize) {
    let desired = translate(&inp, topts);
    let out = d.sync(&desired).await;
    let sizes: Vec<String> = d.parts.values().map(|p| create_body_size(&d.template, p).to_string()).collect();
    println!(
        "[{}] cold start ({} routers; fully-populated create bodies {} bytes): {} | load {}",
        d.label,
        d.parts.len(),
        sizes.join(", "),
        out.line(),
        loadavg()
    );
    if !out.errors.is_empty() {
        println!("[{}] no router to measure further", d.label);
        return;
    }

    // One EndpointSlice change: Service 0's first endpoint replaced, one batch member update on
    // each router holding its pool.
    set_endpoints(&mut inp, 0, &fresh_ips(0, eps, 1));
    let parts = d.split(&translate(&inp, topts));
    let out = set_members_all(d, pools_of(&parts, 0)).await;
    d.parts = parts;
    println!("[{}] one EndpointSlice change → ACTIVE: {} | load {}", d.label, out.line(), loadavg());

    // A new Ingress (two paths on existing Services): placed like any new group.
    inp.ingresses.push(ingress("ing-new", "new.example.com", &[("/", 0), ("/api", 1)]));
    let out = d.sync(&translate(&inp, topts)).await;
    let home = d.placement.as_ref().map_or(0, |p| p.host_router["new.example.com"]);
    let home = router_name(&d.base, home);
    println!("[{}] new Ingress → its route live (on {home}): {} | load {}", d.label, out.line(), loadavg());

    // A restart: a new process (fresh read caches) with one endpoint change made while it was
    // down. It starts from the stamps the old process left (the controller keeps them in a
    // ConfigMap per router; `KURYR_BENCH_RESTART_STAMPS=0`: without them, every child read).
    let stamped = std::env::var("KURYR_BENCH_RESTART_STAMPS").as_deref() != Ok("0");
    if stamped {
        // The old process's periodic resync: a Sync of every router with nothing to write. Its
        // read stamps each parent (a fully-populated create reads no child, so there is no
        // stamp before), and the controller saves the stamps after it.
        let parts: Vec<(RouterIndex, DesiredRouter)> = d.parts.iter().map(|(i, p)| (*i, p.clone())).collect();
        let jobs: Vec<(Router, DesiredRouter)> = parts.into_iter().map(|(i, p)| (d.router(i), p)).collect();
        let out = converge_all(jobs).await;
        println!(
            "[{}] resync of every router (a full read, stamps taken): {} | load {}",
            d.label,
            out.line(),
            loadavg()
        );
    }
    set_endpoints(&mut inp, 1, &fresh_ips(1, eps, 1));
    let parts = d.split(&translate(&inp, topts));
    let stamps: BTreeMap<RouterIndex, String> = match stamped {
        true => d.routers.iter().filter_map(|(i, r)| Some((*i, r.take_changed_stamps()?))).collect(),
        false => BTreeMap::new(),
    };
    d.routers = parts.keys().map(|i| (*i, d.fresh(*i))).collect();
    for (i, text) in &stamps {
        if let Some(r) = d.routers.get(i) {
            assert!(r.load_stamps(text), "stamps load");
        }
    }
    println!("[{}] restart with the stamps of {} routers (read by the old process)", d.label, stamps.len());
    let out = converge_all(parts.iter().map(|(i, p)| (d.routers[i].clone(), p.clone())).collect()).await;
    d.parts = parts;
    println!(
        "[{}] restart → first write ACTIVE (the router with the write: read + 1 write): {} | load {}",
        d.label,
        out.line(),
        loadavg()
    );

    let burst = env_usize("KURYR_BENCH_BURST", 50);
    let gap = Duration::from_millis(env_usize("KURYR_BENCH_BURST_GAP_MS", 200) as u64);
    let n = if d.capacity.is_some() { burst } else { env_usize("KURYR_BENCH_BURST_ONE_ROUTER", 12).min(burst) };
    burst_run(d, &mut inp, topts, (n, 2), gap, eps).await;
}

/// Bytes of the fully-populated create of `part` (Octavia's API refuses a body over its
/// `max_request_body_size`, 114,688 bytes by default, with a 413).
fn create_body_size(template: &Router, part: &DesiredRouter) -> usize {
    let subnet = template.spec().vip_subnet_id.clone().unwrap_or_default();
    serde_json::to_vec(&populated_create(template.spec(), &subnet, part)).map_or(0, |b| b.len())
}

/// The create body's size by router size, for the same app workload.
fn create_body_sizes(template: &Router, eps: usize) {
    let sizes: Vec<String> = [25usize, 50, 75, 100, 150, 200]
        .iter()
        .map(|&n| {
            let d = translate(&apps(n, (n / 4).max(1), eps), &TranslateOptions::default());
            format!("{} policies {} bytes", d.policies.len(), create_body_size(template, &d))
        })
        .collect();
    println!("fully-populated create body by router size: {}", sizes.join("; "));
}

fn fresh_ips(svc: usize, eps: usize, generation: usize) -> Vec<String> {
    (0..eps).map(|e| ep_ip(svc, e, if e == 0 { generation } else { 0 })).collect()
}

pub(super) fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// Member updates on several routers at the same time (one per router).
async fn set_members_all(d: &mut Deployment, pools: Vec<(RouterIndex, Pool)>) -> Outcome {
    let t = Instant::now();
    let mut set = tokio::task::JoinSet::new();
    for (i, pool) in pools {
        let r = d.router(i);
        set.spawn(async move {
            let t = Instant::now();
            let ch = r.set_members(&pool).await.unwrap_or_else(|e| panic!("{}: {e}", r.spec().name));
            assert!(matches!(ch, MembersChange::Updated), "{}: {ch:?}", pool.name);
            (r.spec().name.clone(), t.elapsed())
        });
    }
    let mut out = Outcome::default();
    while let Some(res) = set.join_next().await {
        let (name, e) = res.expect("member task");
        out.writes += 1;
        out.per_router.push((name, 1, e, e));
    }
    out.per_router.sort();
    out.wall = t.elapsed();
    out
}

/// `n` endpoint changes, one every `gap`, spread over the Services (so over the Ingresses):
/// each router works its own queue one write at a time (a queued change of the same pool is
/// replaced by the newer one), the routers at the same time. Latency of a change: from its
/// event to the last of its routers ACTIVE with it.
async fn burst_run(
    d: &mut Deployment,
    inp: &mut Inputs,
    topts: &TranslateOptions,
    (n, generation): (usize, usize),
    gap: Duration,
    eps: usize,
) {
    let n_svc = inp.services.len();
    let mut changes = Vec::new();
    for c in 0..n {
        let svc = (c * 7) % n_svc; // 7 is prime to 48: every Service once before any twice
        set_endpoints(inp, svc, &fresh_ips(svc, eps, generation + c));
        let parts = d.split(&translate(inp, topts));
        changes.push(pools_of(&parts, svc));
        d.parts = parts;
    }
    let queues: BTreeMap<RouterIndex, tokio::sync::mpsc::UnboundedSender<(usize, Pool)>> = BTreeMap::new();
    let done: Arc<Mutex<Vec<Vec<Instant>>>> = Arc::new(Mutex::new(vec![Vec::new(); n]));
    let mut queues = queues;
    let mut workers = tokio::task::JoinSet::new();
    let writes = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let t0 = Instant::now();
    for i in changes.iter().flatten().map(|(i, _)| *i).collect::<std::collections::BTreeSet<_>>() {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        queues.insert(i, tx);
        workers.spawn(router_queue(d.router(i), rx, (t0, gap), done.clone(), writes.clone()));
    }
    let mut events = Vec::new();
    for (c, pools) in changes.iter().enumerate() {
        tokio::time::sleep_until((t0 + gap * c as u32).into()).await;
        events.push(Instant::now());
        for (i, p) in pools {
            queues[i].send((c, p.clone())).unwrap();
        }
    }
    drop(queues);
    while let Some(r) = workers.join_next().await {
        r.expect("router queue");
    }
    let done = done.lock().unwrap();
    let mut lat: Vec<Duration> =
        events.iter().enumerate().map(|(c, e)| done[c].iter().max().map_or(Duration::ZERO, |t| *t - *e)).collect();
    lat.sort();
    let pct = |p: f64| lat[(((lat.len() as f64) * p).ceil() as usize).clamp(1, lat.len()) - 1];
    println!(
        "[{}] burst of {n} endpoint changes over {:.1} s: {} writes, all live {:.1} s after the first; \
         event → ACTIVE p50 {:.1} s, p95 {:.1} s, p99 {:.1} s, max {:.1} s | load {}",
        d.label,
        secs(gap * (n.saturating_sub(1)) as u32),
        writes.load(std::sync::atomic::Ordering::SeqCst),
        secs(done.iter().flatten().max().map_or(Duration::ZERO, |t| *t - t0)),
        secs(pct(0.50)),
        secs(pct(0.95)),
        secs(pct(0.99)),
        secs(*lat.last().unwrap_or(&Duration::ZERO)),
        loadavg()
    );
}

/// One router's writer for member updates: one write at a time; the changes queued meanwhile
/// for the same pool go in one write with the newest members.
async fn router_queue(
    r: Router,
    mut rx: tokio::sync::mpsc::UnboundedReceiver<(usize, Pool)>,
    (t0, gap): (Instant, Duration),
    done: Arc<Mutex<Vec<Vec<Instant>>>>,
    writes: Arc<std::sync::atomic::AtomicUsize>,
) {
    let mut queue: Vec<(Pool, Vec<usize>)> = Vec::new();
    loop {
        while let Ok((c, p)) = rx.try_recv() {
            enqueue(&mut queue, c, p);
        }
        if queue.is_empty() {
            match rx.recv().await {
                Some((c, p)) => enqueue(&mut queue, c, p),
                None => return,
            }
            continue;
        }
        let (pool, ids) = queue.remove(0);
        let ch = r.set_members(&pool).await.unwrap_or_else(|e| panic!("{}: {e}", r.spec().name));
        if matches!(ch, MembersChange::Updated) {
            writes.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        let now = Instant::now();
        let mut done = done.lock().unwrap();
        // Progress, so that a run stopped before the end of the burst still has its numbers.
        let lat: Vec<String> =
            ids.iter().map(|c| format!("{:.1}", secs(now.saturating_duration_since(t0 + gap * *c as u32)))).collect();
        println!("  burst: {} live on {}: changes {ids:?} after {} s", pool.name, r.spec().name, lat.join(", "));
        for c in ids {
            done[c].push(now);
        }
    }
}

fn enqueue(queue: &mut Vec<(Pool, Vec<usize>)>, c: usize, p: Pool) {
    match queue.iter_mut().find(|(q, _)| q.name == p.name) {
        Some((q, ids)) => {
            *q = p;
            ids.push(c);
        }
        None => queue.push((p, vec![c])),
    }
}

/// N member writes at once on N routers of the set (same size), without a permit bound: does
/// this stack run writes to different load balancers in parallel?
async fn parallel_writes(d: &Deployment) {
    let rounds = env_usize("KURYR_BENCH_PARALLEL_ROUNDS", 3);
    let routers: Vec<(RouterIndex, Router)> = d
        .routers
        .iter()
        .map(|(i, r)| (*i, Router::new(r.octavia().clone(), r.neutron().clone(), r.spec().clone())))
        .collect();
    // Warm up: each router finds its pool ids once (a no-op member update), as a running
    // controller has.
    for (i, r) in &routers {
        let pool = d.parts[i].pools.values().next().expect("a pool");
        r.set_members(pool).await.unwrap_or_else(|e| panic!("{}: {e}", r.spec().name));
    }
    let mut generation = 100;
    for n in [1usize, 2, 4] {
        if n > routers.len() {
            break;
        }
        let mut each = Vec::new();
        let mut walls = Vec::new();
        for _ in 0..rounds {
            generation += 1;
            let t = Instant::now();
            let mut set = tokio::task::JoinSet::new();
            for (i, r) in routers.iter().take(n) {
                let mut pool = d.parts[i].pools.values().next().expect("a pool").clone();
                let m = pool.members.first_mut().expect("a member");
                m.address = format!("10.9.{}.{}", generation % 250, i).parse().unwrap();
                let r = r.clone();
                set.spawn(async move {
                    let t = Instant::now();
                    let ch = r.set_members(&pool).await.unwrap_or_else(|e| panic!("{}: {e}", r.spec().name));
                    assert!(matches!(ch, MembersChange::Updated));
                    t.elapsed()
                });
            }
            while let Some(e) = set.join_next().await {
                each.push(e.expect("write"));
            }
            walls.push(t.elapsed());
        }
        each.sort();
        let all: Vec<String> = each.iter().map(|e| format!("{:.1}", secs(*e))).collect();
        println!(
            "parallel writes N={n} on routers of the set: each write (sent → ACTIVE) median {:.1} s [{}]; wall per round {}; \
             load {}",
            secs(each[each.len() / 2]),
            all.join(" "),
            walls.iter().map(|w| format!("{:.1} s", secs(*w))).collect::<Vec<_>>().join(", "),
            loadavg()
        );
    }
}
