//! `KURYR_BENCH_ONLY=node-port` (issue 34): the same router set of Ingresses with pod members
//! (`member_mode = L3`) and with node-port members (`NodePort`), side by side in one run against
//! the real Octavia: the writes and the time from each event to live for one endpoint change, a
//! rollout of one Deployment, a burst of endpoint changes over many Services, one node joining.
//!
//! What is the product's and what is the bench's:
//! - the set: [`workload`] and the placement of `scale_out.rs` (default capacity: 2 routers of
//!   100 policies at 100 Ingresses), each router created by a Sync through the controller's own
//!   writer ([`Writer`] on [`OctaviaBackend`], i.e. `Router::converge`), which also records the
//!   members each pool holds;
//! - each event's members: the Service handler's computation, [`service_members`] (the
//!   Service's pools on each router, named by [`desired_notices`], refilled from its
//!   EndpointSlices and the Nodes in the router's member mode), for EVERY pool it names: the
//!   bench submits every pool it returns to the router's writer (`WriterHandle::members`), which
//!   writes only a pool whose members differ from those the router holds (one batch member
//!   update). NodePort's 0 writes on endpoint changes are therefore the computation returning
//!   the members unchanged, not a call the bench skips;
//! - which Services a Node event reconciles: the controller's [`node_change_targets`];
//! - the bench's own model of the Service controller: one reconcile of a Service at a time; an
//!   event opens the change window (`[kubernetes] member_change_window_ms`, 500 ms by default,
//!   `KURYR_BENCH_WINDOW_MS`), the members are computed when it closes from the objects as they
//!   are then, and an event arriving during a reconcile triggers one more after it (kube-runtime's
//!   behaviour). The watch and the API server are not in these times.
//!
//! An event is live when the last router it changes is ACTIVE with it (the reconcile that read
//! it has finished its writes). With no write, nothing stands between the event and kube-proxy:
//! the time printed is then the controller's, to conclude that there is nothing to write.
//!
//! Knobs: `KURYR_BENCH_INGRESSES` (100), `KURYR_BENCH_SERVICES` (24), `KURYR_BENCH_MAX_POLICIES`
//! (100), `KURYR_BENCH_PARALLEL_WRITES` (4), `KURYR_BENCH_NODES` (3 before the join),
//! `KURYR_BENCH_ROLLOUT_PODS` (10), `KURYR_BENCH_ROLLOUT_GAP_MS` (1000: one pod replaced a
//! second), `KURYR_BENCH_BURST` (20 Services), `KURYR_BENCH_BURST_GAP_MS` (200),
//! `KURYR_BENCH_WINDOW_MS` (500), `KURYR_BENCH_MODES` (`L3,NodePort`).

use super::common::*;
use super::scale_out::{Deployment, Made, loadavg, workload};
use super::{env_usize, median, secs};
use k8s_openapi::api::core::v1::Node;
use kuryr_l7_router::controller::octavia_backend::OctaviaBackend;
use kuryr_l7_router::controller::outputs::notice::desired_notices;
use kuryr_l7_router::controller::services::endpoint_nodes::EndpointNodes;
use kuryr_l7_router::controller::services::members::service_members;
use kuryr_l7_router::controller::watches::node_change_targets;
use kuryr_l7_router::controller::writer::{MembersOutcome, Writer, WriterHandle, WriterMetrics};
use kuryr_l7_router::driver::router::Router;
use kuryr_l7_router::model::{DesiredRouter, KubeRef, MemberMode, Pool};
use kuryr_l7_router::placement::split::{SplitParams, place_and_split};
use kuryr_l7_router::placement::{Capacity, RouterIndex};
use kuryr_l7_router::translate::members::{SliceCache, index_nodes};
use kuryr_l7_router::translate::{Inputs, TranslateOptions, translate};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// The Service whose Deployment is rolled out, and the Service of the single change.
const ROLLED: usize = 0;
const SINGLE: usize = 1;

// ------------------------------------------------------------------ the objects (pure)

/// A Ready, schedulable node with one InternalIP.
pub(super) fn node(i: usize) -> Node {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": format!("node-{i}")},
        "status": {
            "conditions": [{"type": "Ready", "status": "True"}],
            "addresses": [{"type": "InternalIP", "address": format!("10.1.0.{}", i + 1)}]
        }
    }))
    .expect("a Node")
}

/// The workload of `scale_out.rs`, its Services of type NodePort (node port 30000 + s), the
/// rolled-out Service with `pods` endpoints, and `nodes` nodes: the same objects in both modes.
pub(super) fn objects(n_ing: usize, n_svc: usize, capacity: Capacity, pods: usize, nodes: usize) -> Inputs {
    let mut inp = workload(n_ing, n_svc, 5, capacity);
    for (s, svc) in inp.services.iter_mut().enumerate() {
        let spec = svc.spec.as_mut().expect("spec");
        spec.type_ = Some("NodePort".into());
        for p in spec.ports.iter_mut().flatten() {
            p.node_port = Some(30000 + s as i32);
        }
    }
    set_endpoints(&mut inp, ROLLED, &rollout_steps(ROLLED, pods)[0]);
    inp.nodes = (0..nodes).map(node).collect();
    inp
}

/// The rolled-out Service's endpoints before the rollout (index 0) and after each of its `pods`
/// replacements: replacement k swaps pod k's address for a new one.
pub(super) fn rollout_steps(svc: usize, pods: usize) -> Vec<Vec<String>> {
    let mut cur: Vec<String> = (0..pods).map(|e| ep_ip(svc, e, 0)).collect();
    let mut steps = vec![cur.clone()];
    for k in 0..pods {
        cur[k] = ep_ip(svc, k, 1);
        steps.push(cur.clone());
    }
    steps
}

/// The Services with a pool on some router of `parts` (the ones an endpoint change concerns).
pub(super) fn pooled_services(parts: &BTreeMap<RouterIndex, DesiredRouter>) -> BTreeSet<usize> {
    // No pool of this workload is split: a pool's Service is its one feeder.
    let services = parts.values().flat_map(|d| d.pools.values()).map(|p| &p.service);
    services.filter_map(|s| s.name.strip_prefix("svc")?.parse().ok()).collect()
}

/// The `n` Services of the burst: pooled ones other than the rolled-out one, in order.
pub(super) fn burst_services(pooled: &BTreeSet<usize>, n: usize) -> Vec<usize> {
    pooled.iter().copied().filter(|s| *s != ROLLED).take(n).collect()
}

/// Service `svc`'s pools on each router, as the Service handler computes them from the objects
/// now: [`service_members`] over the pools the router's notice names.
pub(super) fn refill(
    inp: &Inputs,
    parts: &BTreeMap<RouterIndex, DesiredRouter>,
    names: &BTreeMap<RouterIndex, String>,
    svc: usize,
    opts: &TranslateOptions,
) -> Vec<(RouterIndex, Pool)> {
    let name = format!("svc{svc}");
    let service = inp.services.iter().find(|s| s.metadata.name.as_deref() == Some(&name)).expect("the Service");
    let mut endpoints = SliceCache::new(opts.vip_family);
    let label = |s: &&kuryr_l7_router::translate::slices::CompactSlice| {
        s.metadata.labels.as_ref().and_then(|l| l.get("kubernetes.io/service-name")) == Some(&name)
    };
    for s in inp.endpoint_slices.iter().filter(label) {
        endpoints.upsert(s);
    }
    let nodes = index_nodes(&inp.nodes);
    let me = KubeRef::service(NS, &name);
    let mut out = Vec::new();
    for (i, part) in parts {
        let Some(notice) = desired_notices(&names[i], part).remove(&me) else { continue };
        // No pool of this workload is split between Services.
        let other = |_: &KubeRef| None;
        let up = service_members(service, &notice.pools, part, &endpoints, &other, &nodes, opts);
        assert_eq!(up.needs_sync, None, "{name} on {}: a member change, not a structural one", names[i]);
        out.extend(up.pools.into_iter().map(|p| (*i, p)));
    }
    out
}

/// The Services a Node change reconciles on any router (the controller's own choice); the new
/// node has no endpoint yet.
pub(super) fn node_targets(parts: &BTreeMap<RouterIndex, DesiredRouter>, node: &Node) -> BTreeSet<usize> {
    let index = EndpointNodes::default();
    let targets = parts.values().flat_map(|d| node_change_targets(&index, Some(d), node));
    targets.filter_map(|s| s.name.strip_prefix("svc")?.parse().ok()).collect()
}

/// When each event of a phase was live: `events[k]` = (its time, the (Service, generation) it
/// made); `done[svc]` = (generation read, time its writes ended) of each finished reconcile.
/// An event is live when every Service it changed had a reconcile that read it finish.
pub(super) fn live_times(
    events: &[(Instant, Vec<(usize, u64)>)],
    done: &BTreeMap<usize, Vec<(u64, Instant)>>,
) -> Vec<Option<Duration>> {
    events
        .iter()
        .map(|(at, changed)| {
            let mut last = *at;
            for (svc, generation) in changed {
                let reconciles = done.get(svc).into_iter().flatten();
                let t = reconciles.filter(|(g, _)| g >= generation).map(|(_, t)| *t).min()?;
                last = last.max(t);
            }
            Some(last - *at)
        })
        .collect()
}

// ------------------------------------------------------------------ the live run

/// One mode's routers, their writers and the objects as the "caches" hold them.
struct Mode {
    label: &'static str,
    opts: TranslateOptions,
    parts: BTreeMap<RouterIndex, DesiredRouter>,
    names: BTreeMap<RouterIndex, String>,
    routers: BTreeMap<RouterIndex, Router>,
    writers: BTreeMap<RouterIndex, WriterHandle>,
    state: Arc<Mutex<State>>,
    /// Batch member updates made (the writers' `Updated`).
    updated: Arc<AtomicUsize>,
    window: Duration,
}

#[derive(Default)]
struct State {
    inp: Inputs,
    /// Per Service: its endpoints' (or the nodes') generation, bumped by each event.
    generation: BTreeMap<usize, u64>,
    done: BTreeMap<usize, Vec<(u64, Instant)>>,
}

/// What one event row cost in one mode.
#[derive(Default)]
struct Row {
    writes: u64,
    requests: u64,
    jobs: usize,
    /// Per event: event → live.
    live: Vec<Duration>,
    /// First event → last live.
    all: Duration,
    reconciled: usize,
    /// The writers' `Updated` answers (each one batch member update).
    updated: usize,
}

impl Mode {
    fn stats(&self) -> (u64, u64) {
        let s = self.routers.values().next().expect("a router").octavia().session().stats();
        (s.requests, s.writes)
    }

    /// One reconcile of Service `svc` (after its window): the members computed from the objects
    /// now, every pool submitted to its router's writer, the routers at the same time.
    async fn reconcile(&self, svc: usize, jobs: &AtomicUsize) {
        tokio::time::sleep(self.window).await;
        let (generation, pools) = {
            let st = self.state.lock().unwrap();
            let g = st.generation.get(&svc).copied().unwrap_or(0);
            (g, refill(&st.inp, &self.parts, &self.names, svc, &self.opts))
        };
        let mut by_router: BTreeMap<RouterIndex, Vec<Pool>> = BTreeMap::new();
        for (i, p) in pools {
            by_router.entry(i).or_default().push(p);
        }
        let writes = by_router.into_iter().map(|(i, pools)| {
            let w = self.writers[&i].clone();
            let updated = self.updated.clone();
            jobs.fetch_add(pools.len(), Ordering::SeqCst);
            async move {
                for pool in pools {
                    match w.members(pool).await {
                        Ok(MembersOutcome::Updated) => {
                            updated.fetch_add(1, Ordering::SeqCst);
                        }
                        Ok(MembersOutcome::Unchanged | MembersOutcome::Superseded) => {}
                        Ok(MembersOutcome::PoolMissing) => panic!("a pool of the last Sync is missing"),
                        Err(e) => panic!("member update: {e}"),
                    }
                }
            }
        });
        futures::future::join_all(writes).await;
        self.state.lock().unwrap().done.entry(svc).or_default().push((generation, Instant::now()));
    }

    /// Drives `events` (at their offsets: the change applied to the objects, the Services it
    /// touches notified) through one reconcile loop per Service, until every event is live.
    async fn phase(self: &Arc<Self>, events: Vec<(Duration, Event)>) -> Row {
        let (req0, wr0) = self.stats();
        let updated0 = self.updated.load(Ordering::SeqCst);
        self.state.lock().unwrap().done.clear();
        let jobs = Arc::new(AtomicUsize::new(0));
        let mut bells: BTreeMap<usize, Arc<Notify>> = BTreeMap::new();
        let mut loops = tokio::task::JoinSet::new();
        let t0 = Instant::now();
        let mut marks = Vec::new();
        let mut touched = BTreeSet::new();
        for (offset, ev) in events {
            tokio::time::sleep_until((t0 + offset).into()).await;
            let svcs = self.apply(ev);
            let mut st = self.state.lock().unwrap();
            let changed: Vec<(usize, u64)> = svcs
                .iter()
                .map(|s| {
                    let g = st.generation.entry(*s).or_default();
                    *g += 1;
                    (*s, *g)
                })
                .collect();
            drop(st);
            marks.push((Instant::now(), changed));
            for s in svcs {
                touched.insert(s);
                let bell = bells.entry(s).or_insert_with(|| {
                    let bell = Arc::new(Notify::new());
                    let (me, b, jobs) = (self.clone(), bell.clone(), jobs.clone());
                    loops.spawn(async move {
                        loop {
                            b.notified().await;
                            me.reconcile(s, &jobs).await;
                        }
                    });
                    bell
                });
                bell.notify_one();
            }
        }
        // Until every event is live.
        let live = loop {
            let done = self.state.lock().unwrap().done.clone();
            let live = live_times(&marks, &done);
            if live.iter().all(Option::is_some) {
                break live.into_iter().flatten().collect::<Vec<_>>();
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        loops.abort_all();
        let (req1, wr1) = self.stats();
        let first = marks.first().map(|m| m.0).unwrap_or(t0);
        let all = marks.iter().zip(&live).map(|((at, _), l)| *at + *l - first).max().unwrap_or_default();
        Row {
            writes: wr1 - wr0,
            requests: req1 - req0,
            jobs: jobs.load(Ordering::SeqCst),
            live,
            all,
            reconciled: touched.len(),
            updated: self.updated.load(Ordering::SeqCst) - updated0,
        }
    }

    /// Applies one event to the objects; the Services the controller reconciles for it.
    fn apply(&self, ev: Event) -> Vec<usize> {
        let mut st = self.state.lock().unwrap();
        match ev {
            Event::Endpoints(svc, ips) => {
                set_endpoints(&mut st.inp, svc, &ips);
                vec![svc]
            }
            Event::NodeJoins(n) => {
                let targets = node_targets(&self.parts, &n);
                st.inp.nodes.push(*n);
                targets.into_iter().collect()
            }
        }
    }
}

enum Event {
    Endpoints(usize, Vec<String>),
    NodeJoins(Box<Node>),
}

/// The settings of one run.
struct Plan {
    capacity: Capacity,
    pods: usize,
    nodes: usize,
    rollout_gap: Duration,
    burst: usize,
    burst_gap: Duration,
    window: Duration,
}

pub async fn run(templates: Vec<(MemberMode, Router)>, made: Made) {
    let n_ing = env_usize("KURYR_BENCH_INGRESSES", 100);
    let n_svc = env_usize("KURYR_BENCH_SERVICES", 24);
    let plan = Plan {
        capacity: Capacity { max_policies: env_usize("KURYR_BENCH_MAX_POLICIES", 100) as u32, max_certificates: 24 },
        pods: env_usize("KURYR_BENCH_ROLLOUT_PODS", 10),
        nodes: env_usize("KURYR_BENCH_NODES", 3),
        rollout_gap: Duration::from_millis(env_usize("KURYR_BENCH_ROLLOUT_GAP_MS", 1000) as u64),
        burst: env_usize("KURYR_BENCH_BURST", 20),
        burst_gap: Duration::from_millis(env_usize("KURYR_BENCH_BURST_GAP_MS", 200) as u64),
        window: Duration::from_millis(env_usize("KURYR_BENCH_WINDOW_MS", 500) as u64),
    };
    let parallel = env_usize("KURYR_BENCH_PARALLEL_WRITES", 4);
    let inp = objects(n_ing, n_svc, plan.capacity, plan.pods, plan.nodes);
    println!(
        "# node-port (issue 34): {n_ing} Ingresses over {n_svc} Services (svc{ROLLED}: {} pods), {} nodes; \
         max_policies_per_router = {}, parallel_writes = {parallel}; change window {} ms; load {}",
        plan.pods,
        plan.nodes,
        plan.capacity.max_policies,
        plan.window.as_millis(),
        loadavg()
    );
    let mut rows = Vec::new();
    for (mode, template) in templates {
        let label: &'static str = if mode == MemberMode::NodePort { "NodePort" } else { "L3" };
        let d = Deployment::new(label, template, Some(plan.capacity), parallel, made.clone());
        rows.push((label, one_mode(d, mode, inp.clone(), &plan).await));
    }
    print_table(&rows);
}

/// Per row: (writes, Members jobs, Octavia requests, event → live max, all live, serial bound).
type Rows = Vec<(usize, u64, u64, Duration, Duration, Duration, usize)>;

async fn one_mode(mut d: Deployment, mode: MemberMode, inp: Inputs, plan: &Plan) -> Rows {
    let opts = TranslateOptions { member_mode: mode, ..TranslateOptions::default() };
    let desired = translate(&inp, &opts);
    let parts = d.split(&desired);
    let label = if mode == MemberMode::NodePort { "NodePort" } else { "L3" };
    let routers: BTreeMap<RouterIndex, Router> = parts.keys().map(|i| (*i, d.router(*i))).collect();
    let names = routers.iter().map(|(i, r)| (*i, r.spec().name.clone())).collect();
    let spawned: BTreeMap<RouterIndex, Writer> = routers
        .iter()
        .map(|(i, r)| {
            let metrics = WriterMetrics { router: r.spec().name.clone(), ..Default::default() };
            (*i, Writer::spawn(OctaviaBackend::new(r.clone()), metrics))
        })
        .collect();
    let writers: BTreeMap<RouterIndex, WriterHandle> = spawned.iter().map(|(i, w)| (*i, w.handle())).collect();

    // The cold start: one Sync per router through its writer, all at once.
    let t = Instant::now();
    let syncs = parts.iter().map(|(i, p)| writers[i].sync(p.clone()));
    let synced = futures::future::join_all(syncs).await;
    let writes: usize = synced.iter().map(|s| s.as_ref().map_or(0, |s| s.report.writes.len())).sum();
    let failed: Vec<String> = synced.iter().filter_map(|s| s.as_ref().err().map(|e| e.to_string())).collect();
    let members: usize = parts.values().flat_map(|p| p.pools.values()).map(|p| p.members.len()).sum();
    println!(
        "[{label}] cold start: {} routers ({} policies, {} pools, {members} members), {writes} writes, {:.1} s{} | load {}",
        parts.len(),
        parts.values().map(|p| p.policies.len()).sum::<usize>(),
        parts.values().map(|p| p.pools.len()).sum::<usize>(),
        secs(t.elapsed()),
        if failed.is_empty() { String::new() } else { format!(" FAILED: {}", failed.join("; ")) },
        loadavg()
    );
    assert!(failed.is_empty(), "the cold start must succeed to measure the events");
    let alone = write_alone(&routers, &parts).await;
    println!("[{label}] one member write alone (sent → ACTIVE), median of 2: {:.1} s", secs(alone));

    let pooled = pooled_services(&parts);
    let m = Arc::new(Mode {
        label,
        opts,
        parts,
        names,
        routers,
        writers,
        state: Arc::new(Mutex::new(State { inp, ..State::default() })),
        updated: Arc::new(AtomicUsize::new(0)),
        window: plan.window,
    });
    let mut rows = Rows::new();
    let mut row = |name: &str, r: Row, events: usize| {
        let bound = alone * r.writes as u32;
        let max = r.live.iter().max().copied().unwrap_or_default();
        // With no write nothing waits for Octavia (kube-proxy follows the pods): the times are
        // then the controller's, to find nothing to write (the change window and the check).
        let what = match r.writes {
            0 => "no write, live at the event; event → the controller's no-write answer",
            _ => "event → live",
        };
        println!(
            "[{}] {name}: {} events, {} Services reconciled, {} Members jobs, {} writes ({} batch member updates), {} Octavia requests; \
             {what}: median {:.1} s, max {:.1} s; all done {:.1} s after the first event; serial bound {} x {:.1} s = {:.1} s | load {}",
            m.label,
            events,
            r.reconciled,
            r.jobs,
            r.writes,
            r.updated,
            r.requests,
            secs(median(r.live.clone())),
            secs(max),
            secs(r.all),
            r.writes,
            secs(alone),
            secs(bound),
            loadavg()
        );
        rows.push((r.jobs, r.writes, r.requests, max, r.all, bound, r.reconciled));
    };

    // (1) One endpoint change of one Service.
    let ips: Vec<String> = (0..5).map(|e| ep_ip(SINGLE, e, usize::from(e == 0))).collect();
    row("one endpoint change", m.phase(vec![(Duration::ZERO, Event::Endpoints(SINGLE, ips))]).await, 1);

    // (2) A rollout: each pod replaced is one EndpointSlice update, one every rollout gap.
    let steps = rollout_steps(ROLLED, plan.pods);
    let events: Vec<(Duration, Event)> = steps[1..]
        .iter()
        .enumerate()
        .map(|(k, ips)| (plan.rollout_gap * k as u32, Event::Endpoints(ROLLED, ips.clone())))
        .collect();
    row("rollout of one Deployment", m.phase(events).await, plan.pods);

    // (3) A burst: one endpoint change on each of `burst` Services, one every burst gap.
    let services = burst_services(&pooled, plan.burst);
    let events: Vec<(Duration, Event)> = services
        .iter()
        .enumerate()
        .map(|(k, s)| {
            let ips = (0..5).map(|e| ep_ip(*s, e, if e == 0 { 2 } else { 0 })).collect();
            (plan.burst_gap * k as u32, Event::Endpoints(*s, ips))
        })
        .collect();
    row(&format!("burst over {} Services", services.len()), m.phase(events).await, services.len());

    // (4) One node joins the pool.
    row("one node joining", m.phase(vec![(Duration::ZERO, Event::NodeJoins(Box::new(node(plan.nodes))))]).await, 1);
    drop(m);
    for w in spawned.into_values() {
        w.shutdown().await;
    }
    rows
}

/// A member write alone on the first router: its first pool's first member moved and moved
/// back, each write timed from sent to ACTIVE.
async fn write_alone(
    routers: &BTreeMap<RouterIndex, Router>,
    parts: &BTreeMap<RouterIndex, DesiredRouter>,
) -> Duration {
    let (i, r) = routers.iter().next().expect("a router");
    let pool = parts[i].pools.values().find(|p| !p.members.is_empty()).expect("a pool with members").clone();
    let mut moved = pool.clone();
    moved.members[0].address = "10.9.9.9".parse().unwrap();
    let mut each = Vec::new();
    for p in [&moved, &pool] {
        let t = Instant::now();
        r.set_members(p).await.unwrap_or_else(|e| panic!("{}: {e}", r.spec().name));
        each.push(t.elapsed());
    }
    median(each)
}

fn print_table(rows: &[(&str, Rows)]) {
    let events = ["one endpoint change", "rollout of one Deployment", "burst of endpoint changes", "one node joining"];
    let heads: Vec<&str> = rows.iter().map(|(l, _)| *l).collect();
    println!(
        "\n| event | {} |",
        heads
            .iter()
            .map(|h| format!("{h}: writes, event → live (max), all live, serial bound"))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    println!("|---|{}", "---|".repeat(heads.len()));
    for (k, ev) in events.iter().enumerate() {
        let cells: Vec<String> = rows
            .iter()
            .map(|(_, r)| match r.get(k) {
                Some((jobs, writes, requests, max, all, bound, reconciled)) => format!(
                    "{writes} writes ({requests} requests, {jobs} Members jobs, {reconciled} Services), {:.1} s, {:.1} s, {:.1} s",
                    secs(*max),
                    secs(*all),
                    secs(*bound)
                ),
                None => "not run".into(),
            })
            .collect();
        println!("| {ev} | {} |", cells.join(" | "));
    }
}

/// Without Octavia (smoke size, every `cargo test --all-targets`): the product's computation
/// says what the live run relies on: in NodePort mode an endpoint change and a rollout step
/// leave every pool's members as synced and a node joining changes every pool; in L3 mode the
/// endpoint change changes the pool and a node joining reconciles no Service.
pub(super) fn self_check() {
    let capacity = Capacity { max_policies: 100, max_certificates: 24 };
    // The full size's shape: 2 routers of 100 policies, 20 Services for the burst.
    let full = objects(100, 24, capacity, 10, 3);
    let params =
        SplitParams { capacity, current: BTreeMap::new(), routers: BTreeMap::new(), now: 0, empty_grace_secs: 3600 };
    let parts = place_and_split(&translate(&full, &TranslateOptions::default()), &params).routers;
    let policies: Vec<usize> = parts.values().map(|p| p.policies.len()).collect();
    assert_eq!(policies, [100, 100], "the full size's routers");
    assert_eq!(burst_services(&pooled_services(&parts), 20).len(), 20, "the full size's burst");
    let inp = objects(10, 20, capacity, 10, 3);
    let steps = rollout_steps(ROLLED, 10);
    assert_eq!(steps.len(), 11);
    for w in steps.windows(2) {
        assert_eq!(w[0].iter().zip(&w[1]).filter(|(a, b)| a != b).count(), 1, "one pod replaced per step");
    }
    assert!(steps[10].iter().all(|ip| !steps[0].contains(ip)), "every pod replaced");
    for mode in [MemberMode::L3, MemberMode::NodePort] {
        let opts = TranslateOptions { member_mode: mode, ..TranslateOptions::default() };
        let parts = BTreeMap::from([(0, translate(&inp, &opts))]);
        let names = BTreeMap::from([(0, "r0".to_string())]);
        let pooled = pooled_services(&parts);
        assert_eq!(burst_services(&pooled, 20).len(), 19, "20 pooled Services, the rolled-out one left out");
        let synced = |svc: usize| -> Vec<Pool> {
            parts[&0].pools.values().filter(|p| p.service.name == format!("svc{svc}")).cloned().collect()
        };
        let unchanged = |now: &Inputs, svc: usize| {
            refill(now, &parts, &names, svc, &opts).into_iter().map(|(_, p)| p).collect::<Vec<_>>() == synced(svc)
        };
        assert!(unchanged(&inp, SINGLE), "{mode}: nothing changed, nothing to write");
        let mut now = inp.clone();
        set_endpoints(&mut now, SINGLE, &(0..5).map(|e| ep_ip(SINGLE, e, usize::from(e == 0))).collect::<Vec<_>>());
        set_endpoints(&mut now, ROLLED, &steps[1]);
        assert_eq!(unchanged(&now, SINGLE), mode == MemberMode::NodePort, "{mode}: an endpoint change");
        assert_eq!(unchanged(&now, ROLLED), mode == MemberMode::NodePort, "{mode}: a rollout step");
        let joining = node(3);
        let targets = node_targets(&parts, &joining);
        now.nodes.push(joining);
        if mode == MemberMode::NodePort {
            assert_eq!(targets, pooled, "a node joining reconciles every node-port Service");
            for s in &pooled {
                let pools = refill(&now, &parts, &names, *s, &opts);
                assert!(pools.iter().all(|(_, p)| p.members.len() == 4), "svc{s}: the new node is a member");
            }
        } else {
            assert!(targets.is_empty(), "L3: a node without endpoints reconciles no Service: {targets:?}");
        }
    }
    println!("node-port self-check: ok");
}
