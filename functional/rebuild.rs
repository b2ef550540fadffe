//! The router comes back as it was, and one refused write stays where it started (issue 14 §1,
//! §4), against the real local OpenStack:
//!
//! - a router deleted by hand is rebuilt on the SAME floating IP, and we own exactly one;
//! - a router put in ERROR (fault injection: `UPDATE load_balancer SET provisioning_status` in
//!   Octavia's database, as Octavia has no API for it) is reported once, later jobs fail at once
//!   instead of waiting `write_timeout`, and writes resume by themselves once it is ACTIVE;
//! - a write Octavia refuses with a 400 for one Ingress does not stop another Ingress's change in
//!   the same convergence.
//!
//! Run: `KURYR_FUNCTIONAL=1 cargo test --test functional_rebuild` with the stack up.

#[path = "common/mod.rs"]
mod common;
use common::*;

use kuryr_l7_router::driver::floating_ip_description;
use kuryr_l7_router::driver::router::Router;
use kuryr_l7_router::model::{CompareType, DesiredRouter, KubeRef, Member, Policy, Pool, Rule, RuleType};
use kuryr_l7_router::openstack::ListQuery;
use std::time::{Duration, Instant};

fn pool(svc: &str, ip: &str) -> Pool {
    Pool {
        name: format!("default_{svc}"),
        service: KubeRef::new("Service", "default", svc),
        service_port: "http".into(),
        lb_algorithm: "ROUND_ROBIN".into(),
        members: vec![Member {
            address: ip.parse().unwrap(),
            protocol_port: 8080,
            weight: 1,
            backup: false,
            zone: None,
            target: None,
            monitor_port: None,
        }],
        weighting: "even".into(),
        split: Vec::new(),
        member_mode: Default::default(),
    }
}

/// The route of Ingress `ing` for `host` (Octavia refuses a rule value over 255 characters).
fn route(ing: &str, host: &str, svc: &str) -> Policy {
    Policy {
        name: format!("default_{ing}_{}", &host[..host.len().min(40)]),
        position: 0,
        pool: format!("default_{svc}"),
        rules: vec![Rule {
            rule_type: RuleType::HostName,
            compare_type: CompareType::EqualTo,
            value: host.into(),
            invert: false,
            key: None,
        }],
        owner: KubeRef::new("Ingress", "default", ing),
        description: ing.into(),
        redirect: None,
    }
}

fn desired(routes: Vec<(Policy, Pool)>) -> DesiredRouter {
    let mut d = DesiredRouter::default();
    for (i, (mut p, pool)) in routes.into_iter().enumerate() {
        p.position = i as u32 + 1;
        d.pools.insert(pool.name.clone(), pool);
        d.policies.push(p);
    }
    d
}

async fn router(tag: &str) -> Router {
    let mut r = local_router("fct-rbd", tag).await;
    r.spec_mut().fully_populated_create = false;
    r
}

async fn our_floating_ips(r: &Router) -> usize {
    let q = ListQuery {
        extra: vec![("description".into(), floating_ip_description(&r.spec().ownership, &r.spec().name))],
        ..ListQuery::default()
    };
    r.neutron().list_floating_ips(&q).await.unwrap().len()
}

/// Injects: the router's load balancer deleted by hand (cascade), its VIP port with it (as a
/// real network driver does; the stack's noop one leaves it). Asserts: the next convergence
/// rebuilds it (another load balancer) on the same floating IP, and we own exactly one.
#[tokio::test]
async fn router_deleted_by_hand_comes_back_on_the_same_floating_ip() {
    if !enabled() {
        return;
    }
    let r = router("deleted").await;
    with_router(r, |r| async move {
        let want = desired(vec![(route("a", "a.example", "svc-a"), pool("svc-a", "10.0.0.11"))]);
        let t = Instant::now();
        let first = r.converge(&want).await.unwrap();
        let fip = first.floating_ip.expect("a floating IP");
        let lb = r.find().await.unwrap().unwrap();
        r.octavia().delete_load_balancer(&lb.id, true).await.unwrap();
        r.octavia().wait_deleted(&lb.id, Duration::from_secs(120)).await.unwrap();
        if let Some(port) = &lb.vip_port_id {
            r.neutron().delete_port(port).await.unwrap();
        }

        let again = r.converge(&want).await.unwrap();
        assert_ne!(again.lb_id, lb.id, "a new load balancer");
        assert_eq!(again.floating_ip, Some(fip), "the same address");
        assert_eq!(our_floating_ips(&r).await, 1, "one floating IP, none leaked");
        println!("rebuilt on the same floating IP in {:?}", t.elapsed());
    })
    .await;
}

/// Injects: the router put in provisioning_status ERROR in Octavia's database. Asserts: the
/// convergence fails with the ERROR; the next jobs (a member update, a convergence) fail at once
/// without waiting `write_timeout`; after the router is ACTIVE again, writes resume by
/// themselves (no restart) and the change lands.
#[tokio::test]
async fn router_in_error_fails_jobs_at_once_and_recovers_by_itself() {
    if !enabled() {
        return;
    }
    let mut r = router("error").await;
    r.set_blocked_recheck(Duration::from_secs(2));
    with_router(r, |r| async move {
        let mut want = desired(vec![(route("a", "a.example", "svc-a"), pool("svc-a", "10.0.0.11"))]);
        r.converge(&want).await.unwrap();
        let lb = r.find().await.unwrap().unwrap();
        set_provisioning_status("load_balancer", &lb.id, "ERROR");
        let restore = Restore(lb.id.clone());

        let err = r.converge(&want).await.unwrap_err();
        assert_eq!(err.label(), "router_error", "{err}");
        assert!(r.is_blocked());
        let mut changed = want.pools["default_svc-a"].clone();
        changed.members[0].address = "10.0.0.12".parse().unwrap();
        let t = Instant::now();
        let err = r.set_members(&changed).await.unwrap_err();
        assert_eq!(err.label(), "router_blocked", "{err}");
        let err = r.converge(&want).await.unwrap_err();
        assert_eq!(err.label(), "router_blocked", "{err}");
        assert!(t.elapsed() < Duration::from_secs(2), "jobs fail at once: {:?}", t.elapsed());

        drop(restore);
        tokio::time::sleep(Duration::from_secs(2)).await;
        want.pools.insert(changed.name.clone(), changed);
        let report = r.converge(&want).await.unwrap();
        assert!(!r.is_blocked());
        assert_eq!(report.writes.iter().map(|w| w.kind).collect::<Vec<_>>(), ["batch_members"]);
    })
    .await;
}

/// Puts the load balancer back to ACTIVE when dropped (also when an assertion fails).
struct Restore(String);

impl Drop for Restore {
    fn drop(&mut self) {
        set_provisioning_status("load_balancer", &self.0, "ACTIVE");
    }
}

/// Injects: a rule value Octavia refuses with a 400 (over 255 characters) in Ingress `bad`'s
/// new route, next to Ingress `good`'s new route, in one convergence. Asserts: `good`'s route is
/// on the router after that one convergence, `bad`'s refusal is reported against `bad`, and the
/// next convergence (while `bad` is on hold) makes no write.
#[tokio::test]
async fn a_refused_write_does_not_stop_another_ingress() {
    if !enabled() {
        return;
    }
    let r = router("refused").await;
    with_router(r, |r| async move {
        let base = vec![(route("a", "a.example", "svc-a"), pool("svc-a", "10.0.0.11"))];
        r.converge(&desired(base.clone())).await.unwrap();
        let long_host = format!("{}.example", "x".repeat(260));
        let mut routes = base;
        routes.push((route("bad", &long_host, "svc-b"), pool("svc-b", "10.0.0.21")));
        routes.push((route("good", "good.example", "svc-c"), pool("svc-c", "10.0.0.31")));
        let want = desired(routes);
        let t = Instant::now();
        let report = r.converge(&want).await.unwrap();
        println!("{:#?}\nconverged with one refusal in {:?}", report.failures, t.elapsed());
        assert_eq!(report.failures.len(), 1);
        assert_eq!(report.failures[0].reason, "invalid");
        assert_eq!(report.failures[0].owners, [KubeRef::new("Ingress", "default", "bad")]);
        let actual = read_router(&r).await;
        let names: Vec<&str> = actual.policies.iter().map(|p| p.name.as_str()).collect();
        assert!(names.contains(&"default_good_good.example"), "{names:?}");
        // The refused policy may exist, disabled, without its rule (created before the rule was
        // refused): it routes nothing. Nothing is written for it while it is on hold.
        assert!(
            actual
                .policies
                .iter()
                .filter(|p| p.name.starts_with("default_bad"))
                .all(|p| !p.admin_state_up || p.rules.is_empty())
        );
        let again = r.converge(&want).await.unwrap();
        assert_eq!(again.writes.len(), 0, "{:?}", again.writes);
        assert_eq!(again.held.len(), 1);
    })
    .await;
}
