//! Changes of the router set itself are make-before-break (issue 36, item 2), through the whole
//! controller against the fake Kubernetes API server and a simulated Octavia per router
//! (`controller_router_set`'s harness, each router's state kept across restarts): scale-out
//! turned on over a full router, capacity lowered (and raised), records lost, scale-out turned
//! off. A sampler reads every router's routes every 10 ms: a host's routes never leave a router
//! unless another router has routed the host for at least [`OVERLAP`] (a move's graces), and a
//! host once routed is routed somewhere at every sample.

use crate::controller_router_set::{BASE, Cloud, ING, Running, Sims, eventually, fake_with, ingress, placed, run_on};
use crate::controller_set_records::{CONTROLLER_NS, records};
use crate::support::routed_hosts::routed_hosts;
use kuryr_l7_router::controller::router_set::store::shard_name;
use kuryr_l7_router::driver::FoundRouter;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const NAMES: [&str; 4] = ["a", "b", "c", "d"];

/// How long a host must have been on another router before a router may drop it: below the two
/// graces of a move ([`GRACES`]), far above the milliseconds between a new router's create and
/// the old router's write when both run at once.
const OVERLAP: Duration = Duration::from_millis(500);

/// The graces of a move in these tests: 3 s, so that a sampler starved for a while on a loaded
/// machine (the whole suite at once on 2 cores) still sees [`OVERLAP`] of the new router's
/// routes before the old router drops them (with 1 s it once saw less, and failed).
const GRACES: &str = "move_dns_grace = 3\n";

/// Below the two graces of a move ([`GRACES`]: at least 4 s together), above what a sampler
/// starved for a while misses of them.
const DRAIN_OVERLAP: Duration = Duration::from_secs(3);

async fn run_with_graces(fake: &Arc<crate::support::fake_api::Fake>, octavia: &str, cloud: Cloud) -> Running {
    run_on(fake, &format!("{GRACES}{octavia}"), cloud).await
}

/// Watches the routes of every router of the `maps` (the routers of a run before a restart,
/// then those of the run after it).
struct Sampler {
    stop: Arc<AtomicBool>,
    run: tokio::task::JoinHandle<(Vec<String>, usize)>,
}

fn routes_now(maps: &[Sims]) -> BTreeMap<(String, u32), ()> {
    let mut out = BTreeMap::new();
    for map in maps {
        let sims: Vec<(u32, _)> = map.lock().unwrap().iter().map(|(i, s)| (*i, s.clone())).collect();
        for (index, sim) in sims {
            let sim = sim.lock().unwrap();
            for h in routed_hosts(&sim.router) {
                out.insert((h, index), ());
            }
        }
    }
    out
}

impl Sampler {
    fn start(maps: Vec<Sims>) -> Self {
        Self::start_with(maps, OVERLAP)
    }

    /// A sampler that wants `overlap` of another router's routes before a router drops a host.
    fn start_with(maps: Vec<Sims>, overlap: Duration) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let run = tokio::spawn(async move {
            let mut since: BTreeMap<(String, u32), Instant> = BTreeMap::new();
            let mut seen: BTreeSet<String> = BTreeSet::new();
            let mut bad = Vec::new();
            let mut samples = 0;
            while !stopping.load(Ordering::SeqCst) {
                let now = Instant::now();
                let routes = routes_now(&maps);
                for key in since.keys().filter(|k| !routes.contains_key(*k)) {
                    let (host, router) = key;
                    let covered = routes
                        .keys()
                        .filter(|(h, r)| h == host && r != router)
                        .any(|k| since.get(k).is_some_and(|t| now.duration_since(*t) >= overlap));
                    if !covered {
                        bad.push(format!(
                            "{host} left router {router} before another router routed it for {overlap:?}"
                        ));
                    }
                }
                since.retain(|k, _| routes.contains_key(k));
                for k in routes.keys() {
                    since.entry(k.clone()).or_insert(now);
                    seen.insert(k.0.clone());
                }
                for host in &seen {
                    if !routes.keys().any(|(h, _)| h == host) {
                        bad.push(format!("{host} routed by no router"));
                    }
                }
                samples += 1;
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            (bad, samples)
        });
        Self { stop, run }
    }

    /// Stops and asserts that no sample saw a route dropped too early.
    async fn assert_make_before_break(self) {
        self.stop.store(true, Ordering::SeqCst);
        let (bad, samples) = self.run.await.unwrap();
        assert!(samples > 50, "the sampler ran ({samples} samples)");
        assert!(bad.is_empty(), "routes dropped before their new router had them: {bad:?}");
    }
}

fn hosts(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| format!("{n}.example.com")).collect()
}

/// Runs until every Ingress is routed and recorded; the first two on router 0, the other two on
/// router 1 (capacity 2, fresh placement: first fit on the router with the most room).
async fn two_routers(fake: &Arc<crate::support::fake_api::Fake>) -> Running {
    let running = run_with_graces(fake, "", Cloud::default()).await;
    eventually("a, b on the first router and c, d on the second, recorded", 30, || {
        let recorded = records(fake)?.hosts.len() == 4;
        (recorded && running.hosts_of(0) == hosts(&["a", "b"]) && running.hosts_of(1) == hosts(&["c", "d"]))
            .then_some(())
    })
    .await;
    eventually("every status on its router", 10, || statuses_follow_the_routes(fake, &running)).await;
    running
}

fn found_second() -> Vec<FoundRouter> {
    vec![FoundRouter { name: format!("{BASE}-2"), empty_since: None, untagged: false }]
}

fn restart(before: &Sims, found: Vec<FoundRouter>) -> Cloud {
    Cloud { persist: Some(before.clone()), found, ..Cloud::default() }
}

/// Every Ingress's status is the address of the router that routes its host.
fn statuses_follow_the_routes(fake: &crate::support::fake_api::Fake, running: &Running) -> Option<()> {
    for n in NAMES {
        let (router, ip) = placed(fake, n)?;
        let index = kuryr_l7_router::placement::router_index(BASE, &router)?;
        let routed = running.hosts_of(index).contains(&format!("{n}.example.com"));
        (routed && ip == format!("172.24.4.{}", 10 + index)).then_some(())?;
    }
    Some(())
}

/// The single router holds four one-policy Ingresses; scale-out is turned on at two policies a
/// router. The two beyond capacity move to a new router make-before-break: router 0 keeps their
/// routes until the new router has had them through the graces. Before: they were placed as
/// new, and router 0 dropped them while the new router was being created.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scale_out_turned_on_over_a_full_router_moves_the_excess_make_before_break() {
    let fake = fake_with(NAMES.map(ingress));
    let single = run_with_graces(&fake, "scale_out = False\n", Cloud::default()).await;
    eventually("the single router routes every host", 20, || (single.hosts_of(0) == hosts(&NAMES)).then_some(())).await;
    let single_sims = single.sims.clone();
    single.stop().await;
    assert!(records(&fake).is_none(), "the single router keeps no set records");

    let sampler_maps = vec![single_sims.clone()];
    let set = run_with_graces(&fake, "", restart(&single_sims, Vec::new())).await;
    let sampler = Sampler::start(sampler_maps.into_iter().chain([set.sims.clone()]).collect());
    eventually("two hosts moved to the new router, two left on the first", 30, || {
        (set.hosts_of(0).len() == 2 && set.hosts_of(1).len() == 2).then_some(())
    })
    .await;
    eventually("every status on its router", 10, || statuses_follow_the_routes(&fake, &set)).await;
    let mut all: Vec<String> = set.hosts_of(0).into_iter().chain(set.hosts_of(1)).collect();
    all.sort();
    assert_eq!(all, hosts(&NAMES));
    set.stop().await;
    sampler.assert_make_before_break().await;
}

/// Capacity lowered from 4 to 2: the excess moves make-before-break. Raised again to 4: nothing
/// moves back (a placed group never moves needlessly).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capacity_lowered_moves_the_excess_make_before_break_and_raised_moves_nothing() {
    let fake = fake_with(NAMES.map(ingress));
    let wide = run_with_graces(&fake, "max_policies_per_router = 4\n", Cloud::default()).await;
    eventually("the first router routes every host, recorded", 20, || {
        (wide.hosts_of(0) == hosts(&NAMES) && records(&fake)?.hosts.len() == 4).then_some(())
    })
    .await;
    let wide_sims = wide.sims.clone();
    wide.stop().await;

    let narrow = run_with_graces(&fake, "", restart(&wide_sims, Vec::new())).await;
    let sampler = Sampler::start(vec![wide_sims.clone(), narrow.sims.clone()]);
    eventually("the excess moved to a second router", 30, || {
        (narrow.hosts_of(0).len() == 2 && narrow.hosts_of(1).len() == 2).then_some(())
    })
    .await;
    eventually("every status on its router", 10, || statuses_follow_the_routes(&fake, &narrow)).await;
    let (on_0, on_1) = (narrow.hosts_of(0), narrow.hosts_of(1));
    // Let the last move's record settle before the restart.
    eventually("no move recorded in progress", 10, || records(&fake)?.moves.is_empty().then_some(())).await;
    let narrow_sims = narrow.sims.clone();
    narrow.stop().await;
    sampler.assert_make_before_break().await;

    let found = vec![FoundRouter { name: format!("{BASE}-2"), empty_since: None, untagged: false }];
    let raised = run_with_graces(&fake, "max_policies_per_router = 4\n", restart(&narrow_sims, found)).await;
    eventually("every status on its router", 20, || statuses_follow_the_routes(&fake, &raised)).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!((raised.hosts_of(0), raised.hosts_of(1)), (on_0, on_1), "nothing moved when capacity was raised");
    assert!(records(&fake).unwrap().moves.is_empty(), "no move started");
    raised.stop().await;
}

/// The set's records are deleted while the controller is down (a restore, a `kubectl delete`):
/// the restarted controller reads where each router routes each host and keeps them there. No
/// route is dropped, nothing moves. Before: every group was placed as new over both routers, and
/// each router dropped the hosts the other one got.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_with_lost_records_drops_no_route() {
    let fake = fake_with(NAMES.map(ingress));
    let first = two_routers(&fake).await;
    let first_sims = first.sims.clone();
    first.stop().await;
    for n in [1, 2, 4] {
        for i in 0..n {
            fake.remove("v1/configmaps", CONTROLLER_NS, &shard_name(BASE, n, i));
        }
    }
    assert!(records(&fake).is_none(), "the records are gone");

    let sampler = Sampler::start(vec![first_sims.clone()]);
    let again = run_with_graces(&fake, "", restart(&first_sims, found_second())).await;
    eventually("the records written again", 20, || (records(&fake)?.hosts.len() == 4).then_some(())).await;
    eventually("every status on its router", 10, || statuses_follow_the_routes(&fake, &again)).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(again.hosts_of(0), hosts(&["a", "b"]), "the first router keeps its hosts");
    assert_eq!(again.hosts_of(1), hosts(&["c", "d"]), "the second router keeps its hosts");
    assert!(records(&fake).unwrap().moves.is_empty(), "nothing moves");
    again.stop().await;
    sampler.assert_make_before_break().await;
}

/// Scale-out turned off over two routers: the second drains into the first make-before-break,
/// every status then shows the first router, and the second router (its load balancer and
/// floating IP) is deleted once empty for `empty_router_grace`. Before: the second router was
/// left serving for ever.
///
/// The second router keeps its routes through both graces of the drain's move (each at least
/// 2 s of its 3, phases being timed in whole seconds), so the sampler wants [`DRAIN_OVERLAP`]
/// of the first router's routes before the second drops a host. Before: the second router was
/// deleted `empty_router_grace` (1 s) after the drain started, while the move still published
/// its address (nothing was placed on it: it counted as empty); the sampler's 500 ms caught it
/// only when the first router's write was late (2 of 6 runs with 6 copies at once).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scale_out_turned_off_drains_into_the_first_router_then_deletes_the_others() {
    let fake = fake_with(NAMES.map(ingress));
    let set = two_routers(&fake).await;
    let set_sims = set.sims.clone();
    set.stop().await;

    let sampler = Sampler::start_with(vec![set_sims.clone()], DRAIN_OVERLAP);
    let off =
        run_with_graces(&fake, "scale_out = False\nempty_router_grace = 1\n", restart(&set_sims, found_second())).await;
    eventually("the first router routes every host", 30, || (off.hosts_of(0) == hosts(&NAMES)).then_some(())).await;
    eventually("the second router deleted", 30, || {
        let deleted = off.deleted.lock().unwrap().get(&1).cloned()?;
        deleted.load(Ordering::SeqCst).then_some(())
    })
    .await;
    let first_only = |n: &str| {
        let ing = fake.get(ING, "shop", n).unwrap();
        let ips: Vec<String> = ing["status"]["loadBalancer"]["ingress"]
            .as_array()
            .map(|a| a.iter().filter_map(|i| i["ip"].as_str().map(String::from)).collect())
            .unwrap_or_default();
        ips == ["172.24.4.10"]
    };
    eventually("every status on the first router only", 10, || NAMES.iter().all(|n| first_only(n)).then_some(())).await;
    off.stop().await;
    sampler.assert_make_before_break().await;
}
