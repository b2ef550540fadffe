//! A kill -9 in the middle of a move, on the real Octavia: on the router set that
//! `router_set` built (three routers at two policies each; its in-process controller stopped),
//! the shipped binary (`kuryr-l7-router run`, a real process) drives an operator's move
//! (`move-to`) of one Ingress's host from router 0 to router 2 with a short `move_dns_grace`.
//! It is killed with SIGKILL twice: once in `CreateOnTarget` right after the target's write was
//! sent (the host's policy listed on the target; no move record written yet, or
//! `CreateOnTarget`), once in `PublishBoth` (status with both addresses). A third process
//! finishes the move.
//!
//! Asserted: the move finishes (record gone, placement and status the target's only); the host
//! is routed on the target only; no policy or pool twice on either router (listed by our
//! tags); and, sampled all along, every address published in the Ingress's status has the
//! host's routes, so the source routes it until `DeleteOld`, and for one more grace after the
//! status named the target alone.

use super::common::*;
use super::fake_api::Fake;
use super::routed_hosts::routed_hosts;
use super::router_set::{move_record, recorded_router};
use kuryr_l7_router::controller::router_set::moves::MOVE_TO_ANNOTATION;
use kuryr_l7_router::driver::Router;
use kuryr_l7_router::openstack::ListQuery;
use kuryr_l7_router::placement::{router_index, router_name};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const ING: &str = "networking.k8s.io/v1/ingresses";
/// `move_dns_grace`: both addresses this long, then the target's alone this long again.
const GRACE_SECS: u64 = 15;

/// One `kuryr-l7-router run` process, its output in a log file; killed (SIGKILL) on drop.
struct Controller {
    child: Child,
    log: PathBuf,
}

impl Controller {
    fn start(dir: &Path, conf: &Path, label: &str) -> Self {
        let stack = std::env::var("KURYR_CONFIG_FILE").expect("KURYR_CONFIG_FILE: the stack's kuryr.conf");
        let log = dir.join(format!("controller-{label}.log"));
        let out = std::fs::File::create(&log).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_kuryr-l7-router"))
            .args(["--config-file", &stack, "--config-file"])
            .arg(conf)
            .arg("run")
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .stdin(Stdio::null())
            .spawn()
            .expect("start kuryr-l7-router run");
        Controller { child, log }
    }

    /// SIGKILL: no shutdown path of ours runs.
    fn kill_9(&mut self) {
        assert!(self.child.try_wait().unwrap().is_none(), "controller exited by itself: {}", self.tail());
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    fn tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn config(dir: &Path, api: &str, token: &Path, base: &str) -> PathBuf {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let text = format!(
        "[kubernetes]\napi_root = {api}\ntoken_file = {}\nleader_election = False\nhealth_port = {port}\n\
         ingress_class = kuryr-rset\nresync_period = 10\n\
         [octavia_defaults]\nl7_router_name = {base}\nscale_out = True\nmax_policies_per_router = 2\n\
         move_dns_grace = {GRACE_SECS}\nmove_request_namespaces = shop\n",
        token.display()
    );
    let path = dir.join("killmove.conf");
    std::fs::write(&path, text).unwrap();
    path
}

/// The Ingress's status addresses.
fn status(fake: &Fake, name: &str) -> Vec<String> {
    let ing = fake.get(ING, "shop", name).unwrap_or_default();
    let list = ing["status"]["loadBalancer"]["ingress"].as_array().cloned().unwrap_or_default();
    list.iter().filter_map(|a| a["ip"].as_str().map(str::to_string)).collect()
}

/// The router's floating IP, as Neutron has it.
async fn floating_ip(r: &Router) -> String {
    let lb = r.find().await.unwrap().expect("router exists");
    let q = ListQuery { extra: vec![("port_id".into(), lb.vip_port_id.clone().unwrap())], ..ListQuery::default() };
    let fips = r.neutron().list_floating_ips(&q).await.unwrap();
    fips.first().expect("router has a floating IP").floating_ip_address.clone()
}

/// Whether `r` routes `host`. A read that races the controller's delete of a policy (listed,
/// then its rules answer 404) is read again: that is the very moment the source clears the host.
async fn routes(r: &Router, host: &str) -> bool {
    for _ in 0..10 {
        match try_read_router(r).await {
            Ok(actual) => return routed_hosts(&actual).any(|h| h == host),
            Err(kuryr_l7_router::driver::error::DriverError::OpenStack(e)) if e.is_not_found() => {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => panic!("reading {}: {e}", r.spec().name),
        }
    }
    panic!("reading {}: a policy vanished between listing and reading ten times", r.spec().name)
}

/// One sample: the status read before and after reading both routers, and whether each routes
/// the host.
#[derive(Clone, Debug)]
struct Sample {
    at: f64,
    before: Vec<String>,
    after: Vec<String>,
    source: bool,
    target: bool,
}

/// Samples the Ingress's status and both routers' routes every second until `done` is set.
fn watch(
    fake: Arc<Fake>,
    name: String,
    host: String,
    source: Router,
    target: Router,
    t0: Instant,
) -> (Arc<Mutex<Vec<Sample>>>, Arc<std::sync::atomic::AtomicBool>, tokio::task::JoinHandle<()>) {
    let samples: Arc<Mutex<Vec<Sample>>> = Arc::default();
    let done: Arc<std::sync::atomic::AtomicBool> = Arc::default();
    let (out, stop) = (samples.clone(), done.clone());
    let task = tokio::spawn(async move {
        while !stop.load(std::sync::atomic::Ordering::SeqCst) {
            let before = status(&fake, &name);
            let (s, t) = tokio::join!(routes(&source, &host), routes(&target, &host));
            let after = status(&fake, &name);
            out.lock().unwrap().push(Sample { at: t0.elapsed().as_secs_f64(), before, after, source: s, target: t });
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    });
    (samples, done, task)
}

async fn wait_for<T>(what: &str, secs: u64, mut f: impl AsyncFnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(Instant::now() < deadline, "{what}: not within {secs} s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Our policies (by listener) and pools on router `r`: each name once.
async fn no_duplicates(r: &Router) -> (usize, usize) {
    let lb = r.find().await.unwrap().expect("router exists");
    let ours = r.spec().ownership.ownership_tags();
    let q = ListQuery { loadbalancer_id: Some(lb.id.clone()), ..ListQuery::default() };
    let mut policies = 0;
    for l in r.octavia().list_listeners(&q).await.unwrap() {
        let q = ListQuery { listener_id: Some(l.id.clone()), tags: ours.clone(), ..ListQuery::default() };
        let mut names: BTreeMap<String, usize> = BTreeMap::new();
        for p in r.octavia().list_l7policies(&q).await.unwrap().into_iter().filter(|p| p.listener_id == l.id) {
            *names.entry(p.name).or_default() += 1;
        }
        let twice: Vec<_> = names.iter().filter(|(_, n)| **n > 1).collect();
        assert!(twice.is_empty(), "{} listener {}: policies twice: {twice:?}", r.spec().name, l.name);
        policies += names.len();
    }
    let q = ListQuery { loadbalancer_id: Some(lb.id.clone()), tags: ours, ..ListQuery::default() };
    let mut names: BTreeMap<String, usize> = BTreeMap::new();
    for p in
        r.octavia().list_pools(&q).await.unwrap().into_iter().filter(|p| p.loadbalancers.iter().any(|x| x.id == lb.id))
    {
        *names.entry(p.name).or_default() += 1;
    }
    let twice: Vec<_> = names.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "{}: pools twice: {twice:?}", r.spec().name);
    (policies, names.len())
}

/// The move of the Ingress on router 0 to router 2, through two kill -9s (see the module doc).
pub(super) async fn a_kill_9_mid_move_converges(
    fake: &Arc<Fake>,
    api: &str,
    token: &Path,
    base: &str,
    routers: &[Router],
) {
    let t0 = Instant::now();
    let at = || t0.elapsed().as_secs_f64();
    // `router_set` left router 1 in ERROR: back to ACTIVE, so that the set is whole again.
    let lb1 = routers[1].find().await.unwrap().expect("router 1 exists");
    set_provisioning_status("load_balancer", &lb1.id, "ACTIVE");
    let names = ["ra", "rb", "rc", "rd", "re"];
    let name = names
        .iter()
        .find(|n| recorded_router(fake, base, n).is_some_and(|r| router_index(base, &r) == Some(0)))
        .expect("an Ingress on router 0")
        .to_string();
    let host = format!("{name}.example.com");
    let (source, target) = (&routers[0], &routers[2]);
    let (source_ip, target_ip) = (floating_ip(source).await, floating_ip(target).await);
    assert_eq!(status(fake, &name), std::slice::from_ref(&source_ip), "{name} starts on router 0");
    assert!(routes(source, &host).await && !routes(target, &host).await, "{host} starts on router 0 only");

    let dir = tempfile::tempdir().unwrap();
    let conf = config(dir.path(), api, token, base);
    let mut ing: Value = fake.get(ING, "shop", &name).unwrap();
    ing["metadata"]["annotations"][MOVE_TO_ANNOTATION] = json!(router_name(base, 2));
    fake.put("ingresses", ing);
    let (samples, done, sampler) = watch(fake.clone(), name.clone(), host.clone(), source.clone(), target.clone(), t0);

    let mut a = Controller::start(dir.path(), &conf, "a");
    // Killed right after the target's write was sent: its policy for the host listed (Octavia
    // lists it from the API's accept on), the load balancer most likely still PENDING_UPDATE.
    let target_lb = target.find().await.unwrap().expect("router 2 exists").id;
    wait_for("the host's policy on router 2 (the move's write sent)", 180, async || {
        routes(target, &host).await.then_some(())
    })
    .await;
    a.kill_9();
    let lb = target.octavia().get_load_balancer(&target_lb).await.unwrap();
    let record = move_record(fake, base, &name);
    eprintln!(
        "{:.1} s: controller a killed with {host} on router 2, which is {}; move record: {record:?}",
        at(),
        lb.provisioning_status
    );
    assert!(record.is_none_or(|r| r.contains("CreateOnTarget")), "killed in CreateOnTarget");

    let mut b = Controller::start(dir.path(), &conf, "b");
    wait_for("status with both addresses (PublishBoth)", 240, async || {
        (status(fake, &name) == [source_ip.clone(), target_ip.clone()]).then_some(())
    })
    .await;
    b.kill_9();
    let record = move_record(fake, base, &name);
    eprintln!("{:.1} s: controller b killed in PublishBoth; move record: {record:?}", at());
    assert!(
        record.as_deref().is_some_and(|r| r.contains("PublishBoth")),
        "the move recorded in PublishBoth: {record:?}"
    );

    let c = Controller::start(dir.path(), &conf, "c");
    let result = futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(async {
        wait_for("the move done (record removed, status the target's)", 300, async || {
            let finished = move_record(fake, base, &name).is_none() && status(fake, &name) == [target_ip.clone()];
            (finished && !routes(source, &host).await).then_some(())
        })
        .await;
        eprintln!("{:.1} s: move done after two kill -9s", at());
        // Sampled a little after the end, then the invariants over every sample.
        tokio::time::sleep(Duration::from_secs(2)).await;
        done.store(true, std::sync::atomic::Ordering::SeqCst);
        let _ = sampler.await;
        let samples = samples.lock().unwrap().clone();
        published_addresses_always_had_routes(&samples, &source_ip, &target_ip);
        assert_eq!(
            recorded_router(fake, base, &name).as_deref(),
            Some(router_name(base, 2).as_str()),
            "{name}'s placement: router 2"
        );
        assert!(routes(target, &host).await && !routes(source, &host).await, "{host} on router 2 only");
        for r in routers {
            let (policies, pools) = no_duplicates(r).await;
            eprintln!("{}: {policies} policies, {pools} pools, none twice", r.spec().name);
        }
    }))
    .await;
    if result.is_err() {
        for ctl in [&a, &b, &c] {
            eprintln!("--- {}:\n{}", ctl.log.display(), ctl.tail());
        }
    }
    drop(c);
    eprintln!("kill -9 mid-move: {:.1} s in all", at());
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
}

/// Each address published in both status reads of a sample had the host's routes then; the
/// source was seen routing after the status named the target alone (the old routes' grace).
fn published_addresses_always_had_routes(samples: &[Sample], source_ip: &str, target_ip: &str) {
    for s in samples {
        let published = |ip: &str| s.before.iter().any(|a| a == ip) && s.after.iter().any(|a| a == ip);
        assert!(!published(source_ip) || s.source, "source published without the host's routes: {s:?}");
        assert!(!published(target_ip) || s.target, "target published without the host's routes: {s:?}");
    }
    let both = samples.iter().filter(|s| s.before.len() == 2 && s.after.len() == 2).count();
    let target_alone = samples.iter().find(|s| s.before == [target_ip] && s.after == [target_ip]);
    let gone = samples.iter().find(|s| !s.source);
    eprintln!(
        "{} samples; both addresses in {both}; target alone from {:?} s; source without the host from {:?} s",
        samples.len(),
        target_alone.map(|s| s.at),
        gone.map(|s| s.at)
    );
    assert!(both > 0, "both addresses were published");
    let (alone, gone) = (target_alone.expect("the target alone published").at, gone.expect("source cleared").at);
    assert!(
        gone - alone >= GRACE_SECS as f64 / 2.0,
        "the source kept the host's routes one more grace after the target alone was published ({alone:.1} s -> {gone:.1} s)"
    );
}
