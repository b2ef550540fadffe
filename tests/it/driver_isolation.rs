//! Failure isolation, removal-first deletes and the leader gate in the driver's rounds, on the
//! in-memory Octavia (the same rounds the real driver runs; see src/driver/rounds.rs).

use kuryr_l7_router::driver::actual::ActualListener;
use kuryr_l7_router::driver::isolation::WriteBackoff;
use kuryr_l7_router::driver::ownership::Ownership;
use kuryr_l7_router::driver::plan::{DiffOptions, Write};
use kuryr_l7_router::driver::rounds::{RoundOptions, converge_listener};
use kuryr_l7_router::driver::sim::{SimListener, Simulator};
use kuryr_l7_router::driver::{ConvergeReport, DriverError, WriteGate};
use kuryr_l7_router::model::{CompareType, DesiredRouter, KubeRef, Policy, Rule, RuleType};
use kuryr_l7_router::openstack::{Error as OsError, Service};
use kuryr_l7_router::testing::service_pool;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn opts() -> DiffOptions {
    DiffOptions { ownership: Ownership::new("test"), health_monitor: None }
}

/// The policy of Ingress `ing` for `host`, routing to Service `svc`.
fn route(ing: &str, host: &str, svc: &str) -> Policy {
    Policy {
        name: format!("default_{ing}_{host}"),
        position: 0,
        pool: format!("default_{svc}"),
        rules: vec![
            Rule {
                rule_type: RuleType::HostName,
                compare_type: CompareType::EqualTo,
                value: host.into(),
                invert: false,
                key: None,
            },
            Rule {
                rule_type: RuleType::Path,
                compare_type: CompareType::StartsWith,
                value: "/".into(),
                invert: false,
                key: None,
            },
        ],
        owner: KubeRef::new("Ingress", "default", ing),
        description: host.into(),
        redirect: None,
    }
}

fn desired(routes: Vec<Policy>) -> DesiredRouter {
    let mut d = DesiredRouter::default();
    for (i, mut p) in routes.into_iter().enumerate() {
        p.position = i as u32 + 1;
        let svc = p.pool.trim_start_matches("default_").to_string();
        d.pools.insert(p.pool.clone(), service_pool(&svc));
        d.policies.push(p);
    }
    d
}

fn api(status: u16, message: &str) -> OsError {
    OsError::Api {
        service: Service::LoadBalancer,
        method: "POST".into(),
        path: "/v2/lbaas/l7policies".into(),
        status,
        message: message.into(),
    }
}

struct Sim {
    state: Arc<Mutex<Simulator>>,
    backoff: Mutex<WriteBackoff>,
    /// Every write sent (refused ones included), as displayed.
    sent: Arc<Mutex<Vec<String>>>,
}

impl Sim {
    fn new() -> Self {
        let mut sim = Simulator::default();
        sim.router.listener =
            ActualListener { id: "listener".into(), default_pool_id: None, tags: Ownership::new("test").router_tags() };
        Self { state: Arc::new(Mutex::new(sim)), backoff: Mutex::default(), sent: Arc::default() }
    }

    /// One convergence at `now`, the writes matching `refuse` refused with `error`.
    async fn converge(
        &self,
        want: &DesiredRouter,
        now: Instant,
        refuse: impl Fn(&Write) -> Option<OsError> + Send + Sync + 'static,
        gate: WriteGate,
    ) -> Result<ConvergeReport, DriverError> {
        let sent = self.sent.clone();
        let mut io = SimListener {
            state: self.state.clone(),
            refuse: Arc::new(move |w| {
                sent.lock().unwrap().push(w.to_string());
                refuse(w)
            }),
            gate,
        };
        let diff = opts();
        let quota = Mutex::default();
        let o = RoundOptions {
            listener: "listener",
            diff: &diff,
            verify: false,
            backoff: &self.backoff,
            now,
            quota: &quota,
        };
        let mut report = ConvergeReport::default();
        converge_listener(&mut io, want, &o, &mut report).await.map(|()| report)
    }

    fn policy_names(&self) -> Vec<String> {
        self.state.lock().unwrap().router.policies.iter().map(|p| p.name.clone()).collect()
    }
}

fn names(d: &DesiredRouter) -> Vec<String> {
    d.policies.iter().map(|p| p.name.clone()).collect()
}

/// A write Octavia refuses with a 400 (here every write of Ingress `bad`'s policy) is reported
/// against its Ingress and put on hold; the other Ingresses' changes converge in the same sync,
/// in the right order (today the first refusal stops the whole plan).
#[tokio::test]
async fn a_refused_write_stops_only_its_own_object() {
    let sim = Sim::new();
    let want = desired(vec![
        route("a", "a.example", "svc-a"),
        route("bad", "bad.example", "svc-b"),
        route("c", "c.example", "svc-c"),
    ]);
    let refuse_bad = |w: &Write| w.to_string().contains("bad.example").then(|| api(400, "Invalid input for value"));
    let t0 = Instant::now();
    let report = sim.converge(&want, t0, refuse_bad, WriteGate::default()).await.unwrap();

    assert_eq!(sim.policy_names(), ["default_a_a.example", "default_c_c.example"]);
    assert_eq!(report.failures.len(), 1, "{:?}", report.failures);
    let f = &report.failures[0];
    assert_eq!((f.object.as_str(), f.reason), ("L7 policy default_bad_bad.example", "invalid"));
    assert_eq!(f.owners, [KubeRef::new("Ingress", "default", "bad")]);
    assert_eq!(report.retry_after, Some(Duration::from_secs(10)));

    // Within its delay the held policy is not tried again (no write names it), and nothing else
    // is written: the router is converged but for it.
    sim.sent.lock().unwrap().clear();
    let again = sim.converge(&want, t0 + Duration::from_secs(5), refuse_bad, WriteGate::default()).await.unwrap();
    assert!(again.writes.is_empty() && again.failures.is_empty(), "{:?}", again.writes);
    assert_eq!(again.held.len(), 1);
    assert!(sim.sent.lock().unwrap().is_empty(), "{:?}", sim.sent.lock().unwrap());

    // After its delay it is tried again; once Octavia accepts it, it lands at its position.
    let fixed = sim.converge(&want, t0 + Duration::from_secs(11), |_| None, WriteGate::default()).await.unwrap();
    assert!(fixed.failures.is_empty() && fixed.held.is_empty());
    assert_eq!(sim.policy_names(), names(&want));
    assert_eq!(fixed.retry_after, None);
}

/// A hold counts from the refusal, not from the start of the sync: after a sync that wrote for
/// a while before the refusal (here 1.1 s; a dozen writes on a slow Octavia last longer than the
/// 10 s hold), the object is still held 10 s after the refusal, and `retry_after` says 10 s
/// (before: the hold ended 10 s after the sync's start, so the next sync retried at once).
#[tokio::test]
async fn a_hold_counts_from_the_refusal_not_from_the_start_of_the_sync() {
    let sim = Sim::new();
    let want = desired(vec![route("a", "a.example", "svc-a"), route("bad", "bad.example", "svc-b")]);
    let slow_then_refuse = |w: &Write| {
        let s = w.to_string();
        if s.contains("bad.example") {
            return Some(api(400, "Invalid input for value"));
        }
        if matches!(w, Write::CreatePool { .. }) {
            std::thread::sleep(Duration::from_millis(550)); // two pools: 1.1 s
        }
        None
    };
    let t0 = Instant::now();
    let report = sim.converge(&want, t0, slow_then_refuse, WriteGate::default()).await.unwrap();
    assert_eq!(report.failures.len(), 1, "{:?}", report.failures);
    assert_eq!(report.retry_after, Some(Duration::from_secs(10)));
    let held = sim.backoff.lock().unwrap().held(t0 + Duration::from_millis(10_500));
    assert_eq!(held.len(), 1, "still held 10.5 s after the sync's start (refused 1 s in)");
}

/// The rules of a policy whose create was refused are never sent (they cannot be written), and a
/// refused new pool holds back the policies routing to it, not the others.
#[tokio::test]
async fn writes_that_need_a_refused_object_are_not_sent() {
    let sim = Sim::new();
    let want = desired(vec![route("a", "a.example", "svc-a"), route("b", "b.example", "svc-b")]);
    let refuse_pool_b = |w: &Write| {
        matches!(w, Write::CreatePool { name, .. } if name == "default_svc-b").then(|| api(403, "Quota has been met"))
    };
    let report = sim.converge(&want, Instant::now(), refuse_pool_b, WriteGate::default()).await.unwrap();
    assert_eq!(sim.policy_names(), ["default_a_a.example"]);
    assert_eq!(report.failures[0].reason, "quota");
    assert_eq!(report.failures[0].owners, [KubeRef::new("Ingress", "default", "b")]);
    let sent = sim.sent.lock().unwrap();
    assert!(!sent.iter().any(|w| w.contains("b.example")), "a policy of the refused pool was sent: {sent:?}");
}

/// Transient errors (5xx, busy 409) keep today's behaviour: the convergence fails as a whole and
/// nothing is put on hold.
#[tokio::test]
async fn transient_errors_fail_the_convergence_without_a_hold() {
    let sim = Sim::new();
    let want = desired(vec![route("a", "a.example", "svc-a")]);
    let err = sim
        .converge(&want, Instant::now(), |_| Some(api(409, "Load Balancer x is immutable")), WriteGate::default())
        .await
        .unwrap_err();
    assert!(matches!(err, DriverError::Write { .. }), "{err}");
    assert!(sim.backoff.lock().unwrap().held(Instant::now()).is_empty());
}

/// On a router at its policy quota, a route deleted and another added in the same sync: the
/// deleted route's policy goes first (removal-only deletes before creates), so the create fits
/// (before: creates first, refused by the quota, the delete never sent). Any route kind: an
/// Ingress or a Gateway API HTTPRoute.
#[tokio::test]
async fn removal_only_deletes_go_before_creates_on_a_full_router() {
    for kind in ["Ingress", "HTTPRoute"] {
        removal_only_first(kind).await;
    }
}

async fn removal_only_first(kind: &str) {
    let of_kind = |mut p: Policy| {
        p.owner.kind = kind.into();
        p
    };
    let route = |ing: &str, host: &str, svc: &str| of_kind(route(ing, host, svc));
    let sim = Sim::new();
    let quota = 2;
    let before = desired(vec![route("a", "a.example", "svc-a"), route("old", "old.example", "svc-o")]);
    sim.converge(&before, Instant::now(), |_| None, WriteGate::default()).await.unwrap();
    let state = sim.state.clone();
    let over_quota = move |w: &Write| {
        let full = state.lock().unwrap().router.policies.len() >= quota;
        (matches!(w, Write::CreatePolicy { .. }) && full)
            .then(|| api(403, "Quota has been met for resources: L7 Policy"))
    };
    let after = desired(vec![route("a", "a.example", "svc-a"), route("new", "new.example", "svc-n")]);
    let report = sim.converge(&after, Instant::now(), over_quota, WriteGate::default()).await.unwrap();
    assert!(report.failures.is_empty(), "{kind}: {:?}", report.failures);
    assert_eq!(sim.policy_names(), names(&after));
    assert!(report.writes[0].description.starts_with("delete policy default_old"), "{kind}: {:?}", report.writes[0]);
}

/// A leader that loses its lease mid-sync stops before its next write (today: after the job).
#[tokio::test]
async fn a_lost_lease_stops_the_writes_before_the_next_one() {
    let sim = Sim::new();
    let want = desired(vec![route("a", "a.example", "svc-a"), route("b", "b.example", "svc-b")]);
    let (leader_tx, leader_rx) = tokio::sync::watch::channel(true);
    let count = Arc::new(AtomicUsize::new(0));
    let c = count.clone();
    // The lease is lost while the 2nd write is in flight.
    let lose_at_second = move |_: &Write| {
        if c.fetch_add(1, Ordering::SeqCst) == 1 {
            leader_tx.send_replace(false);
        }
        None
    };
    let err = sim.converge(&want, Instant::now(), lose_at_second, WriteGate::new(leader_rx)).await.unwrap_err();
    assert!(matches!(err, DriverError::NotLeader), "{err}");
    assert_eq!(count.load(Ordering::SeqCst), 2, "no write after the lease was lost");
}
