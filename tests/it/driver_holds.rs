//! The lifecycle of holds and the project's L7 quota in the driver, on the in-memory Octavia
//! (`SimBackend`: the real rounds, isolation and admission; see src/driver/rounds.rs,
//! isolation.rs, admission.rs).

use kuryr_l7_router::controller::writer::RouterBackend;
use kuryr_l7_router::driver::ownership::Ownership;
use kuryr_l7_router::driver::plan::{DiffOptions, Write};
use kuryr_l7_router::model::{CompareType, DesiredRouter, KubeRef, Policy, Rule, RuleType};
use kuryr_l7_router::openstack::{Error as OsError, Service};
use kuryr_l7_router::testing::{SimBackend, service_pool};
use kuryr_l7_router::translate::budget::{Budget, RouterQuota};
use std::sync::{Arc, Mutex};
use std::time::Instant;

fn sim() -> SimBackend {
    SimBackend::new(DiffOptions { ownership: Ownership::new("test"), health_monitor: None }, None)
}

/// Ingress `ing`'s route for `host` to the Service of the same name.
fn route(ing: &str, host: &str) -> Policy {
    let rule = |rule_type, value: &str| Rule {
        rule_type,
        compare_type: CompareType::EqualTo,
        value: value.into(),
        invert: false,
        key: None,
    };
    Policy {
        name: format!("default_{ing}_{host}"),
        position: 0,
        pool: format!("default_{ing}"),
        rules: vec![rule(RuleType::HostName, host), rule(RuleType::Path, "/")],
        owner: KubeRef::new("Ingress", "default", ing),
        description: host.into(),
        redirect: None,
    }
}

fn desired(ingresses: &[&str]) -> DesiredRouter {
    let mut d = DesiredRouter::default();
    for (i, ing) in ingresses.iter().enumerate() {
        let mut p = route(ing, &format!("{ing}.example"));
        p.position = i as u32 + 1;
        d.pools.insert(p.pool.clone(), service_pool(ing));
        d.policies.push(p);
    }
    d
}

fn refuse_ingress(sim: &mut SimBackend, ing: &'static str, sent: Arc<Mutex<Vec<String>>>) {
    sim.refuse = Arc::new(move |w: &Write| {
        let s = w.to_string();
        sent.lock().unwrap().push(s.clone());
        s.contains(&format!("{ing}.example")).then(|| OsError::Api {
            service: Service::LoadBalancer,
            method: "POST".into(),
            path: "/v2/lbaas/l7policies".into(),
            status: 400,
            message: "Invalid input for value".into(),
        })
    });
}

fn policy_names(sim: &SimBackend) -> Vec<String> {
    sim.actual().policies.iter().map(|p| p.name.clone()).collect()
}

/// A hold on an object no longer desired is dropped at the next convergence (before, nothing
/// ever called `WriteBackoff::retain`: the hold stayed until its delay was over, however often
/// the Ingress came and went), and a re-created Ingress of the same name is written at once.
#[tokio::test]
async fn a_deleted_or_re_created_ingress_leaves_no_hold_behind() {
    let mut sim = sim();
    let sent = Arc::new(Mutex::new(Vec::new()));
    refuse_ingress(&mut sim, "bad", sent.clone());
    let r = sim.sync(&desired(&["a", "bad"])).await.unwrap();
    assert_eq!(r.failures.len(), 1, "{:?}", r.failures);
    assert!(!sim.backoff.lock().unwrap().held(Instant::now()).is_empty());

    // The Ingress is deleted (the finalizer's cleanup sync): its hold goes with it.
    sim.sync(&desired(&["a"])).await.unwrap();
    assert!(sim.backoff.lock().unwrap().held(Instant::now()).is_empty(), "hold of a deleted Ingress kept");

    // Re-created (fixed, or Octavia fixed): tried at once, not after the old hold's delay.
    sim.refuse = Arc::new(|_| None);
    let r = sim.sync(&desired(&["a", "bad"])).await.unwrap();
    assert!(r.held.is_empty() && r.failures.is_empty(), "{:?} {:?}", r.held, r.failures);
    assert_eq!(policy_names(&sim), ["default_a_a.example", "default_bad_bad.example"]);
}

/// A held pool no longer desired is forgotten too (pools are the router's: forgotten once per
/// convergence of the whole router).
#[tokio::test]
async fn a_held_pool_no_longer_desired_is_forgotten() {
    let mut sim = sim();
    sim.refuse = Arc::new(|w: &Write| {
        matches!(w, Write::CreatePool { name, .. } if name == "default_bad").then(|| OsError::Api {
            service: Service::LoadBalancer,
            method: "POST".into(),
            path: "/v2/lbaas/pools".into(),
            status: 403,
            message: "Quota has been met for resources: Pool".into(),
        })
    });
    let r = sim.sync(&desired(&["a", "bad"])).await.unwrap();
    assert_eq!(r.failures[0].object, "pool default_bad");
    sim.sync(&desired(&["a"])).await.unwrap();
    assert!(sim.backoff.lock().unwrap().held(Instant::now()).is_empty());
}

/// Holds live in the process: after a restart or a failover the new leader has none, so each
/// held write is sent once more; refused again, it is held again (10 s, doubling from there),
/// and the other changes converge meanwhile. Nothing is lost and nothing is sent more than once
/// per restart.
#[tokio::test]
async fn after_a_restart_each_held_write_is_tried_once_and_held_again() {
    let mut first = sim();
    let sent = Arc::new(Mutex::new(Vec::new()));
    refuse_ingress(&mut first, "bad", sent.clone());
    let want = desired(&["a", "bad"]);
    first.sync(&want).await.unwrap();
    assert!(first.sync(&want).await.unwrap().held.len() == 1, "held within the process");

    // The new leader: the same router, a process of its own.
    let mut next = sim();
    next.state = first.state.clone();
    refuse_ingress(&mut next, "bad", sent.clone());
    sent.lock().unwrap().clear();
    let r = next.sync(&desired(&["a", "bad", "c"])).await.unwrap();
    let tried: Vec<String> = sent.lock().unwrap().iter().filter(|w| w.contains("bad.example")).cloned().collect();
    assert_eq!(tried.len(), 1, "the held policy's create is sent once: {tried:?}");
    assert_eq!(r.failures.len(), 1);
    assert_eq!(r.retry_after, Some(std::time::Duration::from_secs(10)), "a fresh hold");
    assert_eq!(policy_names(&next), ["default_a_a.example", "default_c_c.example"]);
    sent.lock().unwrap().clear();
    assert_eq!(next.sync(&desired(&["a", "bad", "c"])).await.unwrap().held.len(), 1);
    assert!(sent.lock().unwrap().is_empty(), "held again: {:?}", sent.lock().unwrap());
}

fn with_quota(mut d: DesiredRouter, policies: u64, oldest_first: &[&str]) -> DesiredRouter {
    let oldest_first = oldest_first.iter().map(|i| KubeRef::new("Ingress", "default", i)).collect();
    d.quota = Some(RouterQuota { budget: Budget { l7policies: Some(policies), l7rules: None }, oldest_first });
    d
}

/// The project goes over the quota (another team's load balancers): the routes on the router
/// stay, the new Ingress waits (reported for its `QuotaExceeded` Event) and is created once
/// there is room.
#[tokio::test]
async fn serving_routes_stay_over_quota_and_new_ones_wait_for_room() {
    let sim = sim();
    let order = ["a", "b", "c"];
    sim.sync(&with_quota(desired(&["a", "b"]), 10, &order)).await.unwrap();
    assert_eq!(policy_names(&sim), ["default_a_a.example", "default_b_b.example"]);

    // Another team took the project's policies: nothing is left for the router.
    let r = sim.sync(&with_quota(desired(&["a", "b", "c"]), 0, &order)).await.unwrap();
    assert_eq!(policy_names(&sim), ["default_a_a.example", "default_b_b.example"], "serving routes removed");
    assert!(r.writes.iter().all(|w| !w.kind.starts_with("delete")), "{:?}", r.writes);
    let waiting: Vec<&str> = r.quota_waiting.iter().map(|w| w.owner.name.as_str()).collect();
    assert_eq!(waiting, ["c"]);
    assert!(r.quota_waiting[0].message().contains("routes it already has on the router are kept"));

    // Room again (the budget read at resync): the waiting Ingress is created.
    let r = sim.sync(&with_quota(desired(&["a", "b", "c"]), 3, &order)).await.unwrap();
    assert!(r.quota_waiting.is_empty());
    assert_eq!(policy_names(&sim), ["default_a_a.example", "default_b_b.example", "default_c_c.example"]);
}

/// An Ingress deleted in the same convergence frees its room for the one that waits: the
/// deletes go first and the plan is made again, so the waiting Ingress does not wait for the
/// next event.
#[tokio::test]
async fn room_freed_in_a_convergence_admits_what_waits() {
    let sim = sim();
    sim.sync(&with_quota(desired(&["a", "old"]), 2, &["old", "a", "new"])).await.unwrap();
    let r = sim.sync(&with_quota(desired(&["a", "new"]), 2, &["a", "new"])).await.unwrap();
    assert!(r.quota_waiting.is_empty(), "{:?}", r.quota_waiting);
    assert_eq!(policy_names(&sim), ["default_a_a.example", "default_new_new.example"]);
}
