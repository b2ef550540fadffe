//! A new router larger than Octavia's request body limit (oslo.middleware's
//! `max_request_body_size`, 114,688 bytes by default: about 170 policies in one fully-populated
//! create) is still created, and converges: the create carries what fits, the convergence writes
//! the rest one object at a time. Against a small stateful Octavia on loopback (no OpenStack) that
//! refuses bodies over its limit with a 413, as the real API does.

use crate::support::fake_octavia;

use fake_octavia::{State, start};

use kuryr_l7_router::driver::Router;
use kuryr_l7_router::model::{CompareType, DesiredRouter, KubeRef, Policy, Rule, RuleType};
use kuryr_l7_router::testing::{member, pool};
use std::sync::Mutex;

fn router(port: u16, max_create_body_bytes: usize) -> Router {
    fake_octavia::router_named(port, "big", max_create_body_bytes)
}

/// `n` Ingresses, each one host on its own Service (one policy, one rule, one pool, one member).
fn routes(n: usize) -> DesiredRouter {
    let mut d = DesiredRouter::default();
    for i in 0..n {
        let name = format!("shop_web{i}");
        d.policies.push(Policy {
            name: format!("ingress:shop/web{i}:h{i}.example.com:Prefix:/"),
            position: i as u32 + 1,
            pool: name.clone(),
            rules: vec![Rule {
                rule_type: RuleType::HostName,
                compare_type: CompareType::EqualTo,
                value: format!("h{i}.example.com"),
                invert: false,
                key: None,
            }],
            owner: KubeRef::new("Ingress", "shop", &format!("web{i}")),
            description: format!("h{i}.example.com Prefix /"),
            redirect: None,
        });
        d.pools.insert(name.clone(), pool(&name, vec![member(&format!("10.1.0.{}", i % 250 + 1), 1)]));
    }
    d
}

fn posts(state: &Mutex<State>, prefix: &str) -> Vec<usize> {
    let s = state.lock().unwrap();
    s.writes.iter().filter(|(l, _)| l.starts_with(prefix)).map(|(_, size)| *size).collect()
}

/// Everything desired is on the fake Octavia, and a second convergence writes nothing.
async fn assert_converged(r: &Router, state: &Mutex<State>, want: &DesiredRouter) {
    {
        let s = state.lock().unwrap();
        let mut names: Vec<_> = s.policies.iter().map(|p| p["name"].as_str().unwrap().to_string()).collect();
        names.sort();
        let mut wanted: Vec<_> = want.policies.iter().map(|p| p.name.clone()).collect();
        wanted.sort();
        assert_eq!(names, wanted, "every policy on the router");
        assert_eq!(s.pools.len(), want.pools.len(), "every pool on the router");
        assert_eq!(s.members.len(), want.pools.len(), "every member on the router");
    }
    let again = r.converge(want).await.expect("second convergence");
    assert!(
        again.writes.is_empty(),
        "converged: {:?}",
        again.writes.iter().map(|w| &w.description).collect::<Vec<_>>()
    );
}

/// The cloud's limit is lower than configured: Octavia answers the create with a 413. The
/// driver sends a smaller create (it used to take the 413 as a refused write, and the router
/// was never created), then writes the policies left out one at a time.
#[tokio::test]
async fn a_create_refused_as_too_large_is_sent_smaller_and_the_rest_written_after() {
    let want = routes(40);
    let (port, state) = start(12_000).await;
    let r = router(port, 114_688);
    let report = r.converge(&want).await.expect("the router is created");
    assert!(!report.lb_id.is_empty());
    let creates = posts(&state, "POST /v2/lbaas/loadbalancers ");
    assert!(creates.len() >= 2 && creates[0] > 12_000, "a 413, then a smaller create: {creates:?}");
    assert!(creates.last().is_some_and(|b| *b <= 12_000), "{creates:?}");
    assert!(!posts(&state, "POST /v2/lbaas/l7policies ").is_empty(), "the rest written one at a time");
    assert!(report.conflicts.iter().any(|c| c.contains("413") && c.contains("max_create_body_bytes")), "{report:?}");
    assert!(!report.created_router, "the router was not created whole");
    assert_converged(&r, &state, &want).await;
}

/// Over the configured limit: one create within it (no 413 sent for), then the rest.
#[tokio::test]
async fn a_create_over_the_configured_limit_carries_what_fits() {
    let want = routes(40);
    let (port, state) = start(12_000).await;
    let r = router(port, 10_000);
    r.converge(&want).await.expect("the router is created");
    let creates = posts(&state, "POST /v2/lbaas/loadbalancers ");
    assert_eq!(creates.len(), 1, "{creates:?}");
    assert!(creates[0] <= 10_000 && creates[0] > 5_000, "as much as fits: {creates:?}");
    assert_converged(&r, &state, &want).await;
}

/// Within the limit, the create holds everything: no other write.
#[tokio::test]
async fn a_create_within_the_limit_is_one_write() {
    let want = routes(5);
    let (port, state) = start(114_688).await;
    let report = router(port, 114_688).converge(&want).await.expect("the router is created");
    assert!(report.created_router);
    assert_eq!(state.lock().unwrap().writes.len(), 1, "{:?}", state.lock().unwrap().writes);
    assert_eq!(state.lock().unwrap().policies.len(), 5);
}

/// A router this process created whole is not read child by child at its next change: the
/// create leaves stamps (from two listings), so the read trusts every created parent whose
/// desired children did not change. Before, a new route on a router created fully populated
/// read every policy's rules and every pool's members first (17 min at 400 policies on the
/// local 2025.1), and the stamps a restart starts from came only from such a read.
#[tokio::test]
async fn a_router_created_whole_is_not_read_child_by_child_at_its_next_change() {
    let want = routes(5);
    let (port, state) = start(114_688).await;
    let r = router(port, 114_688);
    assert!(r.converge(&want).await.expect("created").created_router);
    assert!(r.take_changed_stamps().is_some(), "the create's stamps, for the ConfigMap");
    let created: Vec<String> = {
        let mut s = state.lock().unwrap();
        s.take_gets();
        let ids = s.policies.iter().chain(s.pools.iter()).map(|p| p["id"].as_str().unwrap().to_string());
        ids.collect()
    };
    assert_eq!(created.len(), 10);
    let more = routes(6);
    r.converge(&more).await.expect("one more route");
    let gets = state.lock().unwrap().take_gets();
    let child_gets: Vec<&String> = gets.iter().filter(|g| g.ends_with("/rules") || g.ends_with("/members")).collect();
    let of_created: Vec<&&String> =
        child_gets.iter().filter(|g| created.iter().any(|id| g.contains(&format!("/{id}/")))).collect();
    assert!(of_created.is_empty(), "the created parents were read: {gets:?}");
    assert_converged(&r, &state, &more).await;
}
