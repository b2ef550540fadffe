//! Two controller replicas against the real Octavia with a lease lost mid-sync (issue 14 §4):
//! `KURYR_FUNCTIONAL=1 cargo test --test functional_leader -- --nocapture`.
//!
//! Both replicas are `controller::runtime::run_with` with the real driver backend (the local
//! stack's kuryr.conf, a router of their own) and share one fake Kubernetes API server
//! (`tests/support/fake_api.rs`) holding the Lease, each through its own address. Every Octavia
//! and Neutron write of each replica is recorded (start time, method, kind) by its session's
//! observer, and the moment its write gate closes (the lease lost) by a wrapper backend.
//! Also included, on the same fake server: `router_set` (scale-out), `scale_toggle` (scale-out
//! turned on and off), `fip_quota` (the set's next router refused its floating IP) and
//! `gateway_lb` (one Gateway's load balancer).

#[path = "common/mod.rs"]
mod common;
use common::*;

#[path = "../tests/support/eventually.rs"]
mod eventually;
#[path = "../tests/support/fake_api.rs"]
mod fake_api;
use eventually::eventually_every;
use fake_api::Fake;

/// The set with the floating-IP quota exhausted (issue 36, Proof).
#[path = "fip_quota.rs"]
mod fip_quota;
#[path = "gateway_lb.rs"]
mod gateway_lb;
/// A kill -9 mid-move, on `router_set`'s routers.
#[path = "kill_move.rs"]
mod kill_move;
/// Scale-out on the real Octavia, on the same fake API server.
#[path = "../tests/support/routed_hosts.rs"]
mod routed_hosts;
#[path = "router_set.rs"]
mod router_set;
/// Scale-out turned on over a full router, then off, make-before-break (issue 36, item 2).
#[path = "scale_toggle.rs"]
mod scale_toggle;

use kuryr_l7_router::config::LeaderSettings;
use kuryr_l7_router::controller::ControllerError;
use kuryr_l7_router::controller::metrics::Metrics;
use kuryr_l7_router::controller::octavia_backend::OctaviaBackend;
use kuryr_l7_router::controller::runtime::run_with;
use kuryr_l7_router::controller::writer::{MembersResult, RouterBackend, SyncResult};
use kuryr_l7_router::driver::WriteGate;
use kuryr_l7_router::driver::router::Router;
use kuryr_l7_router::model::{DesiredRouter, Pool};
use kuryr_l7_router::openstack::{RequestRecord, Service};
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const INGRESSES: [&str; 3] = ["alpha", "beta", "gamma"];

/// One replica's Octavia/Neutron writes (start, "METHOD kind") and when its write gate closed.
#[derive(Clone, Default)]
struct Record {
    writes: Arc<Mutex<Vec<(Instant, Instant, String)>>>,
    gate_closed: Arc<Mutex<Option<Instant>>>,
}

impl Record {
    fn writes(&self) -> Vec<(Instant, Instant, String)> {
        self.writes.lock().unwrap().clone()
    }
}

/// The real backend, its gate watched.
struct Watched {
    inner: OctaviaBackend,
    record: Record,
}

impl RouterBackend for Watched {
    async fn sync(&self, desired: &DesiredRouter) -> SyncResult {
        self.inner.sync(desired).await
    }
    async fn set_members(&self, pool: &Pool) -> MembersResult {
        self.inner.set_members(pool).await
    }
    fn conflict_retries(&self) -> u64 {
        self.inner.conflict_retries()
    }
    async fn sync_reading_budget(&self, desired: &DesiredRouter) -> SyncResult {
        self.inner.sync_reading_budget(desired).await
    }
    fn blocked(&self) -> bool {
        self.inner.blocked()
    }
    fn set_write_gate(&mut self, gate: WriteGate) {
        let (watch, closed) = (gate.clone(), self.record.gate_closed.clone());
        tokio::spawn(async move {
            while watch.is_open() {
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            closed.lock().unwrap().get_or_insert(Instant::now());
        });
        self.inner.set_write_gate(gate);
    }
}

fn backend(settings: &kuryr_l7_router::config::Settings, record: Record) -> Result<Watched, ControllerError> {
    let writes = record.writes.clone();
    let observer: kuryr_l7_router::openstack::Observer = Arc::new(move |r: &RequestRecord| {
        if r.method != reqwest::Method::GET && r.service != Service::Identity {
            let end = Instant::now();
            writes.lock().unwrap().push((end - r.duration, end, format!("{} {}", r.method, r.kind)));
        }
    });
    let router = kuryr_l7_router::wiring::router_observed(settings, Some(observer))
        .map_err(|e| ControllerError::ClientConfig(e.to_string()))?;
    Ok(Watched { inner: OctaviaBackend::new(router), record })
}

fn settings(api: &str, token: &std::path::Path, router: &str) -> kuryr_l7_router::config::Settings {
    let stack = std::env::var("KURYR_CONFIG_FILE").expect("KURYR_CONFIG_FILE: the stack's kuryr.conf");
    let ours = format!(
        "[kubernetes]\napi_root = {api}\ntoken_file = {}\nleader_election = True\nhealth_port = {}\n\
         ingress_class = kuryr-lease\n\
         [octavia_defaults]\nl7_router_name = {router}\nfully_populated_create = False\n",
        token.display(),
        std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
    );
    let texts = [(stack.clone(), std::fs::read_to_string(&stack).unwrap()), ("lease.conf".into(), ours)];
    kuryr_l7_router::config::load_texts(&texts, Vec::new()).unwrap().settings
}

fn fixtures(fake: &Fake) {
    fake.put(
        "ingressclasses",
        json!({"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
               "metadata": {"name": "kuryr-lease"}, "spec": {"controller": "openstack.org/kuryr-l7-router"}}),
    );
    for (i, name) in INGRESSES.iter().enumerate() {
        fake.put(
            "services",
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": "shop"},
                   "spec": {"ports": [{"name": "http", "port": 80, "targetPort": 8080}]}}),
        );
        fake.put(
            "endpointslices",
            json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                   "metadata": {"name": format!("{name}-abc"), "namespace": "shop",
                                "labels": {"kubernetes.io/service-name": name}},
                   "addressType": "IPv4", "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
                   "endpoints": [{"addresses": [format!("10.0.0.{}", 50 + i)], "conditions": {"ready": true}}]}),
        );
        fake.put(
            "ingresses",
            json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
                   "metadata": {"name": name, "namespace": "shop", "creationTimestamp": format!("2026-01-0{}T00:00:00Z", i + 1)},
                   "spec": {"ingressClassName": "kuryr-lease", "rules": [{"host": format!("{name}.example.com"), "http": {"paths": [
                       {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": name, "port": {"number": 80}}}}]}}]}}),
        );
    }
}

/// Waits until `f` returns `Some`, polling every 100 ms, failing after `secs`.
async fn eventually<T>(what: &str, secs: u64, f: impl FnMut() -> Option<T>) -> T {
    eventually_every(what, secs, Duration::from_millis(100), f).await
}

/// Replica A leads and starts the router's first sync (one write per object: fully-populated
/// create off); after its 4th write (the pools) its API address is partitioned (503, its lease
/// renewals included). Asserts: A sends no write once its gate closed (the lease lost; at most the
/// write in flight finishes), B takes over after the lease expired and converges, and the router
/// ends exactly as desired: one load balancer, one policy per Ingress, one pool per Service with
/// its member, no copy left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_lost_mid_sync_stops_the_writes_and_the_standby_converges() {
    lease_lost_after(4).await;
}

/// The same with the partition after A's first write (the router's create): the writes outside
/// the plan's rounds (the listener, the floating IP) are gated too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_lost_during_the_router_create_stops_the_writes_too() {
    lease_lost_after(1).await;
}

async fn lease_lost_after(partition_after: usize) {
    if !enabled() {
        return;
    }
    // `RUST_LOG=info` shows both replicas' logs.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    let started = Instant::now();
    let router_name = unique("fct-lease", "router");
    let fake = Fake::new();
    fixtures(&fake);
    let (url_a, down_a) = fake.serve().await;
    let (url_b, _) = fake.serve().await;
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "test-token").unwrap();
    let replica = |url: &str, id: &str| {
        let mut s = settings(url, &token, &router_name);
        s.kubernetes.leader_override = Some(LeaderSettings {
            // pod-a writes until 5 s after its last renewal, pod-b may lead 8 s after it: a write
            // begun just before pod-a's deadline has 3 s to end (writes took up to 2.2 s on a
            // loaded 2-core stack, four functional tests at once).
            duration_secs: 8,
            grace_secs: 3,
            ..LeaderSettings::new("kuryr-l7-router", "kuryr", id)
        });
        s
    };
    let cleanup_router = kuryr_l7_router::wiring::router_observed(&replica(&url_a, "cleanup"), None).unwrap();
    let (rec_a, rec_b) = (Record::default(), Record::default());
    let (stop_a, stop_a_rx) = tokio::sync::oneshot::channel::<()>();
    let (stop_b, stop_b_rx) = tokio::sync::oneshot::channel::<()>();
    let a = {
        let (s, rec) = (replica(&url_a, "pod-a"), rec_a.clone());
        tokio::spawn(run_with(s, move |s: &_, _: &Metrics| backend(s, rec), async move {
            let _ = stop_a_rx.await;
        }))
    };
    eventually("pod-a leads", 10, || (holder(&fake).as_deref() == Some("pod-a")).then_some(())).await;
    let b = {
        let (s, rec) = (replica(&url_b, "pod-b"), rec_b.clone());
        tokio::spawn(run_with(s, move |s: &_, _: &Metrics| backend(s, rec), async move {
            let _ = stop_b_rx.await;
        }))
    };
    let (fake2, rec_a2) = (fake.clone(), rec_a.clone());
    let body = async move {
        let (fake, rec_a) = (fake2, rec_a2);
        eventually("pod-a's writes", 120, || (rec_a.writes().len() >= partition_after).then_some(())).await;
        down_a.store(true, Ordering::SeqCst);
        let partitioned = Instant::now();
        let closed = eventually("pod-a's write gate closes", 20, || *rec_a.gate_closed.lock().unwrap()).await;
        eventually("pod-b leads", 20, || (holder(&fake).as_deref() == Some("pod-b")).then_some(())).await;
        // B converged: every Ingress's status carries the router's address (patched after a sync).
        eventually("pod-b converges", 120, || {
            INGRESSES
                .iter()
                .all(|n| {
                    let i = fake.get("networking.k8s.io/v1/ingresses", "shop", n).unwrap();
                    i["status"]["loadBalancer"]["ingress"].as_array().is_some_and(|a| !a.is_empty())
                })
                .then_some(())
        })
        .await;
        let converged = Instant::now();
        // A ends by itself (its release of the lease waits for kube's retries on its partition).
        let a_result = tokio::time::timeout(Duration::from_secs(30), a).await.expect("pod-a stops").unwrap();
        assert!(a_result.is_err(), "pod-a reports its lost lease: {a_result:?}");
        println!("pod-a's run_with ended {:?} after the partition: {a_result:?}", partitioned.elapsed());
        let _ = stop_b.send(());
        let _ = tokio::time::timeout(Duration::from_secs(30), b).await;
        (partitioned, closed, converged)
    };
    let outcome = tokio::spawn(async move { tokio::time::timeout(Duration::from_secs(240), body).await }).await;
    let (writes_a, writes_b) = (rec_a.writes(), rec_b.writes());
    let check = match &outcome {
        Ok(Ok(times)) => Some(verify(&cleanup_router, &writes_a, &writes_b, *times, started).await),
        _ => None,
    };
    let _ = stop_a.send(());
    cleanup(&cleanup_router).await;
    println!("partition after {partition_after} write(s): total {:?}", started.elapsed());
    match outcome {
        Err(e) => std::panic::resume_unwind(e.into_panic()),
        Ok(Err(_)) => panic!("timed out; pod-a wrote {writes_a:?}, pod-b wrote {writes_b:?}"),
        Ok(Ok(_)) => {}
    }
    if let Some(Err(e)) = check {
        std::panic::resume_unwind(e.into_panic());
    }
}

/// The Lease's holder on the fake API server.
fn holder(fake: &Fake) -> Option<String> {
    let l = fake.get("coordination.k8s.io/v1/leases", "kuryr", "kuryr-l7-router")?;
    l["spec"]["holderIdentity"].as_str().map(String::from)
}

type Writes = [(Instant, Instant, String)];

async fn verify(
    r: &Router,
    a: &Writes,
    b: &Writes,
    (partitioned, closed, converged): (Instant, Instant, Instant),
    started: Instant,
) -> Result<(), tokio::task::JoinError> {
    let (r, a, b) = (r.clone(), a.to_vec(), b.to_vec());
    tokio::spawn(async move {
        let at = |t: Instant| format!("{:.1}s", t.duration_since(started).as_secs_f64());
        let show = |w: &Writes| w.iter().map(|(s, e, k)| format!("{k} [{}..{}]", at(*s), at(*e))).collect::<Vec<_>>();
        println!(
            "partitioned at {}, pod-a's gate closed at {}, pod-b converged at {}",
            at(partitioned),
            at(closed),
            at(converged)
        );
        println!("pod-a: {} writes {:?}", a.len(), show(&a));
        println!("pod-b: {} writes {:?}", b.len(), show(&b));
        // A stops before its next write once it knows: nothing of its starts after the gate closed.
        let late: Vec<_> = a.iter().filter(|(s, _, _)| *s > closed).cloned().collect();
        assert!(late.is_empty(), "pod-a wrote after losing its lease at {}: {:?}", at(closed), show(&late));
        // Never two writers: B's first write starts after A's last one ended.
        let a_end = a.iter().map(|w| w.1).max().unwrap();
        let b_start = b.iter().map(|w| w.0).min().expect("pod-b had writes left to make");
        assert!(b_start > a_end, "pod-b wrote at {} before pod-a's last write ended at {}", at(b_start), at(a_end));
        assert!(b.iter().any(|w| w.2.starts_with("POST")), "pod-b created what pod-a left undone: {:?}", show(&b));

        // The router exactly as desired: one load balancer, one policy per Ingress (no copy),
        // one pool per Service with its one member.
        let q = kuryr_l7_router::openstack::ListQuery {
            tags: r.spec().ownership.router_tags(),
            ..kuryr_l7_router::openstack::ListQuery::name(&r.spec().name)
        };
        assert_eq!(r.octavia().list_load_balancers(&q).await.unwrap().len(), 1, "one load balancer");
        let actual = read_router(&r).await;
        let policies: Vec<&str> = actual.policies.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(policies.len(), INGRESSES.len(), "{policies:?}");
        for n in INGRESSES {
            assert_eq!(policies.iter().filter(|p| p.contains(&format!("shop/{n}:"))).count(), 1, "{n}: {policies:?}");
        }
        let pools: BTreeMap<String, Vec<String>> = actual
            .pools
            .iter()
            .map(|p| (p.name.clone(), p.members.iter().map(|m| m.address.to_string()).collect()))
            .collect();
        let members: BTreeSet<String> = pools.values().flatten().cloned().collect();
        assert_eq!(pools.len(), INGRESSES.len(), "{pools:?}");
        assert_eq!(members, (0..INGRESSES.len()).map(|i| format!("10.0.0.{}", 50 + i)).collect(), "{pools:?}");
        assert!(pools.values().all(|m| m.len() == 1), "{pools:?}");
        println!(
            "lease lost → gate closed {:?}; gate closed → pod-b's first write {:?}",
            closed - partitioned,
            b_start - closed
        );
    })
    .await
}

/// The fence with busy 409s in play: a write of the leader is retrying "load balancer busy"
/// (the router held PENDING_UPDATE, as the new leader's own writes keep it) when its lease is
/// lost. Asserts: the retries stop at the next one (the write gate is asked before every
/// attempt), the write ends as "not leader" within one backoff step, at most the attempt in
/// flight is sent after the gate closed, and once the router is writable again the stale write
/// never lands. Before, the retries went on for `write_timeout` (180 s here) and the write
/// landed as soon as the router was ACTIVE again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deposed_leaders_busy_retries_stop_at_the_gate_and_its_write_never_lands() {
    if !enabled() {
        return;
    }
    let mut r = local_router("hardening-fence", "router").await;
    let (leader, is_leader) = tokio::sync::watch::channel(true);
    r.set_write_gate(WriteGate::new(is_leader));
    with_router(r, move |r| async move {
        r.converge(&DesiredRouter::default()).await.expect("the router converges");
        let lb = r.find().await.unwrap().expect("router");
        // Busy for anyone: what the new leader's writes do to the old leader's retries.
        set_provisioning_status("load_balancer", &lb.id, "PENDING_UPDATE");
        let before = r.octavia().session().stats();
        let (o, id) = (r.octavia().clone(), lb.id.clone());
        let stale = kuryr_l7_router::openstack::octavia_requests::LoadBalancerUpdate {
            description: Some("stale write of a deposed leader".into()),
            ..Default::default()
        };
        let write = tokio::spawn(async move { o.update_load_balancer(&id, &stale).await });
        eventually("busy 409 retries", 30, || {
            (r.octavia().session().stats().conflict_retries >= before.conflict_retries + 3).then_some(())
        })
        .await;
        let at_close = r.octavia().session().stats();
        leader.send(false).unwrap();
        let closed = Instant::now();
        let ended = tokio::time::timeout(Duration::from_secs(10), write).await;
        let stopped_after = closed.elapsed();
        // Writable again: a write still retrying would land now.
        set_provisioning_status("load_balancer", &lb.id, "ACTIVE");
        tokio::time::sleep(Duration::from_secs(3)).await;
        let after = r.octavia().session().stats();
        let described = r.octavia().get_load_balancer(&lb.id).await.unwrap().description;
        println!(
            "busy retries before the gate closed: {}; the write ended {stopped_after:?} after it; writes sent after \
             it: {}",
            at_close.conflict_retries - before.conflict_retries,
            after.writes - at_close.writes
        );
        let result = ended.expect("the write ends at its next retry, not after write_timeout").unwrap();
        let err = result.expect_err("the stale write is not sent");
        assert!(matches!(err, kuryr_l7_router::openstack::Error::Fenced), "{err}");
        assert!(after.writes - at_close.writes <= 1, "at most the attempt in flight: {at_close:?} → {after:?}");
        assert_ne!(described, "stale write of a deposed leader", "the deposed leader's write landed");
    })
    .await;
}
