//! The controller's cost per event through the whole `run` pipeline (watch → Controllers →
//! writer → simulated Octavia) on the FAKE Kubernetes API server of the tests.
//!
//! Run: `cargo bench --bench pipeline` (10k Ingresses, 10k routed Services × 10 endpoints, 10k
//! unrelated Services, 1,000 Nodes; `KURYR_PIPELINE_INGRESSES=N` scales all of them). Without `--bench` in argv (as in `cargo test
//! --all-targets`) it runs a smoke-size workload. Results go to docs/benchmarks.md
//! ("Cost per event through the run pipeline").
//!
//! Each scenario reports what this build did (translations, writer jobs, reconciles, wall time)
//! next to what the design before it paid for the same events, computed from the reconciles
//! counted in the same run: every Ingress reconcile and every Service reconcile translated the
//! whole cluster (one or two times per endpoint event), and a Node change re-reconciled every
//! Service. One translation of this cluster is timed in the same run.

mod common;
#[path = "../tests/support/fake_settings.rs"]
mod fake_settings;
use fake_settings::fake_cluster_settings;
#[path = "../tests/support/fake_api.rs"]
mod fake_api;

use common::*;
use fake_api::Fake;
use kuryr_l7_router::controller::runtime::run_with;
use kuryr_l7_router::driver::ownership::Ownership;
use kuryr_l7_router::driver::plan::DiffOptions;
use kuryr_l7_router::testing::SimBackend;
use kuryr_l7_router::translate::{TranslateOptions, translate};
use serde_json::{Value, json};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn vm_hwm_mib() -> u64 {
    status_mib("VmHWM:")
}

fn vm_rss_mib() -> u64 {
    status_mib("VmRSS:")
}

/// A `/proc/self/status` field in MiB (0 when unreadable).
fn status_mib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with(field)).map(|l| l.to_string()))
        .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse::<u64>().ok()))
        .unwrap_or(0)
        / 1024
}

struct Size {
    ingresses: usize,
    services: usize,
    endpoints: usize,
    unrelated: usize,
    nodes: usize,
}

fn node(i: usize, extra: Option<&str>) -> Value {
    let mut labels = json!({"topology.kubernetes.io/zone": format!("az-{}", i % 3 + 1)});
    if let Some(v) = extra {
        labels["example.com/rack"] = json!(v);
    }
    json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": format!("n{i}"), "labels": labels},
           "status": {"allocatable": {"cpu": "4"}, "conditions": [{"type": "Ready", "status": "True"}]}})
}

fn with_kind<T: serde::Serialize>(obj: &T, api_version: &str, kind: &str) -> Value {
    let mut v = serde_json::to_value(obj).unwrap();
    v["apiVersion"] = json!(api_version);
    v["kind"] = json!(kind);
    v
}

/// Fills the fake API server: the apps workload, its endpoints spread over the Nodes, the
/// Ingresses already carrying our finalizer (a running controller's steady state).
fn populate(fake: &Fake, size: &Size) -> kuryr_l7_router::translate::Inputs {
    let inp = apps(size.ingresses, size.services, size.endpoints);
    for c in &inp.ingress_classes {
        fake.put("ingressclasses", with_kind(c, "networking.k8s.io/v1", "IngressClass"));
    }
    for i in 0..size.nodes {
        fake.put("nodes", node(i, None));
    }
    for s in &inp.services {
        fake.put("services", with_kind(s, "v1", "Service"));
    }
    for u in 0..size.unrelated {
        let mut s = with_kind(&service(0), "v1", "Service");
        s["metadata"]["name"] = json!(format!("unrelated{u}"));
        fake.put("services", s);
    }
    for (i, sl) in inp.endpoint_slices.iter().enumerate() {
        let mut v = with_kind(sl, "discovery.k8s.io/v1", "EndpointSlice");
        for (e, ep) in v["endpoints"].as_array_mut().unwrap().iter_mut().enumerate() {
            ep["nodeName"] = json!(format!("n{}", (i * size.endpoints + e) % size.nodes));
        }
        fake.put("endpointslices", v);
    }
    for ing in &inp.ingresses {
        let mut v = with_kind(ing, "networking.k8s.io/v1", "Ingress");
        v["metadata"]["finalizers"] = json!([kuryr_l7_router::controller::FINALIZER]);
        v["metadata"]["creationTimestamp"] = json!("2026-01-01T00:00:00Z");
        fake.put("ingresses", v);
    }
    inp
}

async fn http_get(port: u16, path: &str) -> Option<(u16, String)> {
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.ok()?;
    s.write_all(format!("GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").as_bytes()).await.ok()?;
    let mut buf = String::new();
    s.read_to_string(&mut buf).await.ok()?;
    let code = buf.split_whitespace().nth(1)?.parse().ok()?;
    Some((code, buf.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default()))
}

/// The counters of `/metrics` this bench follows.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Counters {
    translations: u64,
    sync_jobs: u64,
    members_jobs: u64,
    ingress_reconciles: u64,
    service_reconciles: u64,
}

fn sum(metrics: &str, prefix: &str, filter: &str) -> u64 {
    metrics
        .lines()
        .filter(|l| l.starts_with(prefix) && l.contains(filter))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64
}

async fn counters(port: u16) -> Counters {
    let m = http_get(port, "/metrics").await.map(|r| r.1).unwrap_or_default();
    Counters {
        translations: sum(&m, "kuryr_l7_router_translations_total", ""),
        sync_jobs: sum(&m, "kuryr_l7_router_octavia_write_job_duration_seconds_count", "job=\"sync\""),
        members_jobs: sum(&m, "kuryr_l7_router_octavia_write_job_duration_seconds_count", "job=\"members\""),
        ingress_reconciles: sum(&m, "kuryr_l7_router_reconciles_total", "handler=\"ingress\""),
        service_reconciles: sum(&m, "kuryr_l7_router_reconciles_total", "handler=\"service\""),
    }
}

/// Waits until the counters stay the same for `quiet` with no Sync job in flight (at most
/// `10 * quiet`); returns them and when they last moved.
async fn settle(port: u16, quiet: Duration, since: Instant) -> (Counters, Duration) {
    let mut last = counters(port).await;
    let mut moved = since.elapsed();
    let mut still = Instant::now();
    loop {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let now = counters(port).await;
        if now != last {
            last = now;
            moved = since.elapsed();
            still = Instant::now();
        } else if still.elapsed() >= quiet && (now.translations == now.sync_jobs || still.elapsed() >= 10 * quiet) {
            // A Sync job counts its translation when it starts and itself when it ends: a long
            // job in flight is not "settled" (the check in `report` would then fail).
            return (last, moved);
        }
    }
}

fn delta(a: Counters, b: Counters) -> Counters {
    Counters {
        translations: b.translations - a.translations,
        sync_jobs: b.sync_jobs - a.sync_jobs,
        members_jobs: b.members_jobs - a.members_jobs,
        ingress_reconciles: b.ingress_reconciles - a.ingress_reconciles,
        service_reconciles: b.service_reconciles - a.service_reconciles,
    }
}

/// Prints a scenario's counts. Every translation of the controller is counted
/// (`Translator::desired`), so translations equal to Sync jobs is "one translation per Sync job,
/// whatever its waiters"; it is checked in every scenario.
fn report(what: &str, d: Counters, wall: Duration, before_translations: u64, t_translate: f64) {
    assert_eq!(d.translations, d.sync_jobs, "{what}: one translation per Sync job");
    println!(
        "{what}: {:.1} s; {} translation(s), {} sync job(s), {} members job(s), {} Ingress + {} Service reconciles; \
         translations per Sync job: {}; before: {before_translations} translations (≈ {:.0} s of translation); \
         VmHWM {} MiB",
        wall.as_secs_f64(),
        d.translations,
        d.sync_jobs,
        d.members_jobs,
        d.ingress_reconciles,
        d.service_reconciles,
        if d.sync_jobs == 0 { "-".to_string() } else { format!("{:.2}", d.translations as f64 / d.sync_jobs as f64) },
        before_translations as f64 * t_translate,
        vm_hwm_mib()
    );
}

fn settings(api_root: &str, token: &std::path::Path, health: u16) -> kuryr_l7_router::config::Settings {
    let kubernetes = "ingress_class = kuryr\nresync_period = 3600";
    fake_cluster_settings("pipeline-bench.conf", api_root, token, health, kubernetes, "availability_zone = az-1")
}

/// One endpoint change of one routed Service: O(its pool), whatever the cluster's size. The
/// counts printed are the proof: no translation, one Members job, one batch PUT of the pool's
/// members (the same at every size; compare the smoke run with `--bench`).
async fn endpoint_change(
    fake: &Fake,
    size: &Size,
    health: u16,
    puts: &std::sync::atomic::AtomicUsize,
    c0: Counters,
    t_translate: f64,
    quiet: Duration,
) -> Counters {
    let target = 4242 % size.services;
    let ips: Vec<String> = (0..size.endpoints).map(|e| ep_ip(target, e, usize::from(e == 0) * 7)).collect();
    let mut v = with_kind(&slice(target, &ips), "discovery.k8s.io/v1", "EndpointSlice");
    for (e, ep) in v["endpoints"].as_array_mut().unwrap().iter_mut().enumerate() {
        ep["nodeName"] = json!(format!("n{}", (target * size.endpoints + e) % size.nodes));
    }
    let puts_before = puts.load(Ordering::SeqCst);
    let t = Instant::now();
    fake.put("endpointslices", v);
    while puts.load(Ordering::SeqCst) == puts_before {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let to_put = t.elapsed();
    let (c1, _) = settle(health, quiet, t).await;
    let d = delta(c0, c1);
    println!(
        "\n## one endpoint change: the batch member PUT {:.1} ms after the slice update",
        to_put.as_secs_f64() * 1e3
    );
    println!(
        "work: {} translation(s), {} members job(s), {} batch member PUT(s) for a pool of {} endpoints",
        d.translations,
        d.members_jobs,
        puts.load(Ordering::SeqCst) - puts_before,
        size.endpoints
    );
    assert_eq!(d.translations, 0, "an endpoint change translates nothing");
    report("one endpoint change", d, to_put, 2 * d.service_reconciles, t_translate);
    c1
}

async fn bench(size: Size) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let fake = Fake::new();
    let t = Instant::now();
    let inputs = populate(&fake, &size);
    println!("populated the fake API server in {:.1} s", t.elapsed().as_secs_f64());
    let opts = TranslateOptions { ingress_class: "kuryr".into(), ..Default::default() };
    let t = Instant::now();
    std::hint::black_box(translate(&inputs, &opts));
    let t_translate = t.elapsed().as_secs_f64();
    println!("one translation of this cluster: {:.0} ms", t_translate * 1e3);
    drop(inputs);
    // The fake API server's share of the run's memory: its objects, before the controller
    // starts (the controller's peak is roughly the run's VmHWM minus this).
    println!("VmRSS with the fake API server populated, before the controller: {} MiB", vm_rss_mib());

    let (api_root, _) = fake.serve().await;
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "fake-token\n").unwrap();
    let health = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let settings = settings(&api_root, &token, health);
    let owner = Ownership::new(&settings.octavia_defaults.l7_router_name);
    let sim = SimBackend::new(DiffOptions { ownership: owner, health_monitor: None }, None);
    let puts = sim.member_puts.clone();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let run = tokio::spawn(run_with(settings, move |_, _| Ok(sim), async move {
        let _ = stopped.await;
    }));
    let quiet = Duration::from_secs(3);

    // Start: caches, the start-up resync, every Ingress and Service reconciled once.
    let t = Instant::now();
    while !matches!(http_get(health, "/readyz").await, Some((200, _))) {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let ready = t.elapsed();
    let (c0, moved) = settle(health, quiet, t).await;
    println!("\n## start: ready after {:.1} s", ready.as_secs_f64());
    let before = c0.ingress_reconciles + c0.service_reconciles + c0.sync_jobs;
    report("start (every object reconciled once)", c0, moved, before, t_translate);

    let c1 = endpoint_change(&fake, &size, health, &puts, c0, t_translate, quiet).await;

    // A label change on every Node (not a zone: members keep their weights).
    let t = Instant::now();
    for i in 0..size.nodes {
        fake.put("nodes", node(i, Some("b")));
    }
    let (c2, moved) = settle(health, quiet, t).await;
    let d = delta(c1, c2);
    println!("\n## a label change on all {} Nodes", size.nodes);
    // Before: every Node change re-reconciled every Service (coalesced by the Controller's
    // scheduler while queued), each reconcile translating the cluster.
    report("node label change", d, moved, (size.services + size.unrelated) as u64, t_translate);

    // Updates of Services no Ingress routes to.
    let t = Instant::now();
    for u in 0..size.unrelated {
        let mut s = with_kind(&service(0), "v1", "Service");
        s["metadata"]["name"] = json!(format!("unrelated{u}"));
        s["metadata"]["labels"] = json!({"version": "2"});
        fake.put("services", s);
    }
    let (c3, moved) = settle(health, quiet, t).await;
    let d = delta(c2, c3);
    println!("\n## {} unrelated Service updates", size.unrelated);
    report("unrelated Service updates", d, moved, d.service_reconciles, t_translate);

    // A rollout over every Ingress: one annotation changed on each.
    let t = Instant::now();
    for ing in &apps(size.ingresses, size.services, 1).ingresses {
        let mut v = with_kind(ing, "networking.k8s.io/v1", "Ingress");
        v["metadata"]["finalizers"] = json!([kuryr_l7_router::controller::FINALIZER]);
        v["metadata"]["creationTimestamp"] = json!("2026-01-01T00:00:00Z");
        v["metadata"]["annotations"] = json!({"example.com/rollout": "2"});
        fake.put("ingresses", v);
    }
    let (c4, moved) = settle(health, quiet, t).await;
    let d = delta(c3, c4);
    println!("\n## a rollout over {} Ingresses", size.ingresses);
    report("Ingress rollout", d, moved, d.ingress_reconciles, t_translate);

    stop.send(()).unwrap();
    let _ = tokio::time::timeout(Duration::from_secs(30), run).await;
    println!("\nVmHWM (peak RSS) of the whole run, fake API server included: {} MiB", vm_hwm_mib());
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    println!("mode: {}", if full { "full (--bench)" } else { "smoke (no --bench in argv)" });
    // KURYR_PIPELINE_INGRESSES=N: N Ingresses, N routed and N unrelated Services, N/10 Nodes.
    let n: usize = std::env::var("KURYR_PIPELINE_INGRESSES").ok().and_then(|v| v.parse().ok()).unwrap_or(10_000);
    let size = if full {
        Size { ingresses: n, services: n, endpoints: 10, unrelated: n, nodes: (n / 10).max(10) }
    } else {
        Size { ingresses: 40, services: 40, endpoints: 3, unrelated: 40, nodes: 20 }
    };
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(bench(size));
}
