//! Scale-out turned on over a full router, then off again, on the real Octavia (issue 36, item
//! 2), the Kubernetes side on the fake API server (included by `functional/leader.rs`):
//! `KURYR_FUNCTIONAL=1 cargo test --test functional_leader -- scale_toggle --nocapture`.
//!
//! 1. The single router (`scale_out = false`) routes four one-policy Ingresses: twice the
//!    capacity used next.
//! 2. `scale_out = true` at `max_policies_per_router = 2`: two hosts move to a new router
//!    `<base>-2`, make-before-break.
//! 3. `scale_out = false` again: `<base>-2` drains back into the first router, then its load
//!    balancer and floating IP are deleted.
//!
//! A sampler reads both routers' policies every ~0.5 s throughout 2 and 3: every host must be
//! routed by one of them at every sample.

use super::common::*;
use super::fake_api::Fake;
use super::routed_hosts::routed_hosts;
use super::router_set::set_records;
use kuryr_l7_router::controller::ControllerError;
use kuryr_l7_router::controller::octavia_backend::OctaviaBackend;
use kuryr_l7_router::controller::runtime::run_set_with;
use kuryr_l7_router::driver::{Router, WritePermits};
use kuryr_l7_router::openstack::ListQuery;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const NAMES: [&str; 4] = ["ta", "tb", "tc", "td"];
const CLASS: &str = "kuryr-toggle";

/// The set's settings with quick graces, and `octavia` (`scale_out`) in `[octavia_defaults]`.
fn settings(api: &str, token: &std::path::Path, base: &str, octavia: &str) -> kuryr_l7_router::config::Settings {
    set_settings(
        "toggle.conf",
        api,
        token,
        CLASS,
        base,
        &format!("move_dns_grace = 5\nempty_router_grace = 5\n{octavia}"),
    )
}

fn fixtures(fake: &Fake) {
    crate::router_set::class_and_web_service(fake, CLASS, "10.0.0.61");
    for name in NAMES {
        let ing: Value = json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": name, "namespace": "shop", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"ingressClassName": CLASS, "rules": [{"host": format!("{name}.example.com"), "http": {"paths": [
                {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]}});
        fake.put("ingresses", ing);
    }
}

fn all_hosts() -> BTreeSet<String> {
    NAMES.iter().map(|n| format!("{n}.example.com")).collect()
}

/// The hosts `r` routes now; none when it does not exist (yet, or any more). A read racing a
/// write (a policy listed, then gone) is read again.
async fn hosts_of(r: &Router) -> BTreeSet<String> {
    for _ in 0..10 {
        let Ok(Some(lb)) = r.find().await else { return BTreeSet::new() };
        let q = ListQuery { loadbalancer_id: Some(lb.id.clone()), ..ListQuery::default() };
        let Ok(listeners) = r.octavia().list_listeners(&q).await else { continue };
        let Some(listener) = listeners.first() else { return BTreeSet::new() };
        match r.read_actual(listener).await {
            Ok(actual) => return routed_hosts(&actual).collect(),
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
    panic!("reading {}: failed ten times", r.spec().name)
}

/// One run of the controller (in process, the real backends) until `done` holds (checked every
/// second) or `secs` pass; then stopped.
async fn run_until<F, Fut>(s: kuryr_l7_router::config::Settings, what: &str, secs: u64, mut done: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let permits = kuryr_l7_router::wiring::write_permits(&s);
    let backends = move |s: &_, _: &_, index: u32| {
        let router = kuryr_l7_router::wiring::router_observed_at(s, None, index, permits.clone())
            .map_err(|e| ControllerError::ClientConfig(e.to_string()))?;
        Ok(OctaviaBackend::new(router))
    };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let run = tokio::spawn(run_set_with(s, backends, async move {
        let _ = stopped.await;
    }));
    let started = Instant::now();
    let deadline = started + Duration::from_secs(secs);
    let mut ok = false;
    while Instant::now() < deadline {
        if done().await {
            ok = true;
            break;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let _ = stop.send(());
    let _ = tokio::time::timeout(Duration::from_secs(60), run).await;
    assert!(ok, "{what}: not within {secs} s");
    eprintln!("{what}: {:.1} s", started.elapsed().as_secs_f64());
}

/// The floating IPs on `r`'s VIP port.
async fn floating_ips(r: &Router) -> BTreeSet<String> {
    let Ok(Some(lb)) = r.find().await else { return BTreeSet::new() };
    let q = ListQuery { extra: vec![("port_id".into(), lb.vip_port_id.clone().unwrap())], ..ListQuery::default() };
    r.neutron().list_floating_ips(&q).await.unwrap().into_iter().map(|f| f.floating_ip_address).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scale_toggle_on_over_a_full_router_then_off_keeps_every_host_routable() {
    if !enabled() {
        return;
    }
    let fake = Fake::new();
    fixtures(&fake);
    let (api, _) = fake.serve().await;
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "fake-token\n").unwrap();
    let base = format!("{}x", unique("tog", "set"));
    let probe = settings(&api, &token, &base, "");
    let routers: Vec<Router> = (0..2)
        .map(|i| kuryr_l7_router::wiring::router_observed_at(&probe, None, i, WritePermits::unlimited()).unwrap())
        .collect();
    let routers = Arc::new(routers);
    let body = async {
        // 1. The single router, full: four policies, twice the capacity of step 2.
        let r = routers.clone();
        run_until(
            settings(&api, &token, &base, "scale_out = False\n"),
            "the single router routes every host",
            300,
            || {
                let r = r.clone();
                async move { hosts_of(&r[0]).await == all_hosts() }
            },
        )
        .await;

        // The sampler, from here on.
        let stop = Arc::new(AtomicBool::new(false));
        let sampler = {
            let (r, stop) = (routers.clone(), stop.clone());
            tokio::spawn(async move {
                let (mut samples, mut bad) = (0, Vec::new());
                let t0 = Instant::now();
                while !stop.load(Ordering::SeqCst) {
                    let (on_0, on_1) = (hosts_of(&r[0]).await, hosts_of(&r[1]).await);
                    let routed: BTreeSet<String> = on_0.union(&on_1).cloned().collect();
                    if routed != all_hosts() {
                        bad.push(format!(
                            "{:.1} s: routed {routed:?} (first {on_0:?}, second {on_1:?})",
                            t0.elapsed().as_secs_f64()
                        ));
                    }
                    samples += 1;
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
                (samples, bad)
            })
        };

        // 2. Scale-out on at two policies a router: two hosts move to the second router.
        let r = routers.clone();
        let second_fip = Arc::new(std::sync::Mutex::new(BTreeSet::new()));
        let fip = second_fip.clone();
        let on = "scale_out = True\n";
        run_until(
            settings(&api, &token, &base, on),
            "scale-out on: the excess moved to the second router",
            420,
            || {
                let (r, fip, fake, base) = (r.clone(), fip.clone(), &fake, &base);
                async move {
                    let (on_0, on_1) = (hosts_of(&r[0]).await, hosts_of(&r[1]).await);
                    let settled =
                        set_records(fake, base).is_some_and(|rec| rec.moves.is_empty() && rec.hosts.len() == 4);
                    if on_0.len() == 2 && on_1.len() == 2 && settled {
                        *fip.lock().unwrap() = floating_ips(&r[1]).await;
                        return true;
                    }
                    false
                }
            },
        )
        .await;
        let second_fip = second_fip.lock().unwrap().clone();
        assert_eq!(second_fip.len(), 1, "the second router has its floating IP: {second_fip:?}");

        // 3. Scale-out off: the second router drains into the first, then goes with its address.
        let r = routers.clone();
        let off = "scale_out = False\n";
        run_until(
            settings(&api, &token, &base, off),
            "scale-out off: drained and the second router deleted",
            420,
            || {
                let r = r.clone();
                async move { hosts_of(&r[0]).await == all_hosts() && r[1].find().await.ok().flatten().is_none() }
            },
        )
        .await;
        stop.store(true, Ordering::SeqCst);
        let (samples, bad) = sampler.await.unwrap();
        eprintln!("{samples} samples of both routers");
        assert!(samples > 20, "the sampler ran: {samples}");
        assert!(bad.is_empty(), "a host routed nowhere: {bad:?}");
        let addr = second_fip.iter().next().unwrap().clone();
        let q = ListQuery { extra: vec![("floating_ip_address".into(), addr.clone())], ..ListQuery::default() };
        let left = routers[1].neutron().list_floating_ips(&q).await.unwrap();
        assert!(left.is_empty(), "the second router's floating IP {addr} released: {left:?}");
        for n in NAMES {
            let ing = fake.get("networking.k8s.io/v1/ingresses", "shop", n).unwrap();
            let ips: Vec<&str> = ing["status"]["loadBalancer"]["ingress"]
                .as_array()
                .map(|a| a.iter().filter_map(|i| i["ip"].as_str()).collect())
                .unwrap_or_default();
            assert!(!ips.is_empty() && ips.iter().all(|ip| !second_fip.contains(*ip)), "{n}: {ips:?}");
        }
    };
    let result = futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(body)).await;
    for r in routers.iter() {
        cleanup(r).await;
    }
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
}
