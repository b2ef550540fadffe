//! The router set needs a new router but the floating-IP quota is exhausted (issue 36, Proof),
//! on the real Octavia and Neutron, the Kubernetes side on the fake API server (included by
//! `functional/leader.rs`):
//! `KURYR_FUNCTIONAL=1 cargo test --test functional_leader -- fip_quota --nocapture`.
//!
//! In a Keystone project of its own (its Neutron quota is the test's alone: the other tests
//! run in the admin project), the `floatingip` quota set to 2, two policies a router:
//! 1. `fa`, `fb` on the first router, `fc` on the second: both routers get their floating IP.
//! 2. `fd` (two policies) fits on neither: the set opens a third router, whose floating IP
//!    Neutron refuses. That router is reported: a Warning `RouterCreateFailed` naming it on the
//!    IngressClass, and `router_create_failures_total{router}` on `/metrics`.
//! 3. `fe` (one policy) goes to the second router, which has room, not to the failing third
//!    (the emptiest router, where placement used to send every new group).
//! 4. The Service's endpoint changes: the first two routers' pools get the new member.
//!
//! The quota is restored and the project's routers, floating IPs, user and project deleted
//! whatever the outcome. One run on the shared 2025.1 stack: 43 s (docs/reliability.md).

use super::common::*;
use super::fake_api::Fake;
use super::routed_hosts::routed_hosts;
use super::router_set::recorded_router;
use kuryr_l7_router::controller::ControllerError;
use kuryr_l7_router::controller::octavia_backend::OctaviaBackend;
use kuryr_l7_router::controller::runtime::run_set_with;
use kuryr_l7_router::driver::{Router, WritePermits};
use kuryr_l7_router::openstack::keystone::Request;
use kuryr_l7_router::openstack::{ListQuery, Service};
use reqwest::Method;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::future::Future;
use std::time::{Duration, Instant};

const CLASS: &str = "kuryr-fipq";
const ING: &str = "networking.k8s.io/v1/ingresses";
const FIRST_ENDPOINT: &str = "10.0.0.81";
const SECOND_ENDPOINT: &str = "10.0.0.82";

/// The stack's kuryr.conf, then ours: the set's options, and the project's own user.
fn settings(api: &str, token: &std::path::Path, base: &str, p: &ScratchProject) -> kuryr_l7_router::config::Settings {
    let user = format!(
        "scale_out = True\n[neutron]\nusername = {name}\npassword = {name}\nproject_name = {name}\n",
        name = p.name
    );
    set_settings("fipq.conf", api, token, CLASS, base, &user)
}

/// Ingress `name` with one path per policy (`paths` of them), all to the Service `web`.
fn ingress(name: &str, paths: usize) -> Value {
    let paths: Vec<Value> = (0..paths)
        .map(|i| {
            json!({"path": format!("/p{i}"), "pathType": "Prefix",
                        "backend": {"service": {"name": "web", "port": {"number": 80}}}})
        })
        .collect();
    json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
           "metadata": {"name": name, "namespace": "shop", "creationTimestamp": "2026-01-01T00:00:00Z"},
           "spec": {"ingressClassName": CLASS, "rules": [{"host": format!("{name}.example.com"), "http": {"paths": paths}}]}})
}

/// Neutron's `floatingip` quota of `project` (-1: unlimited).
async fn fip_quota(p: &ScratchProject) -> i64 {
    let path = format!("/v2.0/quotas/{}", p.project);
    let got: Value = p.admin.send_json(&Request::new(Service::Network, Method::GET, path)).await.unwrap();
    got["quota"]["floatingip"].as_i64().expect("a floatingip quota")
}

async fn set_fip_quota(p: &ScratchProject, limit: i64) -> Result<(), String> {
    let path = format!("/v2.0/quotas/{}", p.project);
    let put = Request::new(Service::Network, Method::PUT, path).json(json!({"quota": {"floatingip": limit}}));
    p.admin.send(&put).await.map(|_| ()).map_err(|e| e.to_string())
}

/// The hosts `r` routes now (none when it does not exist), and its pools' member addresses.
async fn routes_and_members(r: &Router) -> (BTreeSet<String>, BTreeSet<String>) {
    let Ok(Some(lb)) = r.find().await else { return Default::default() };
    let q = ListQuery { loadbalancer_id: Some(lb.id.clone()), ..ListQuery::default() };
    let Ok(listeners) = r.octavia().list_listeners(&q).await else { return Default::default() };
    let Some(listener) = listeners.first() else { return Default::default() };
    let Ok(actual) = r.read_actual(listener).await else { return Default::default() };
    let members = actual.pools.iter().flat_map(|p| p.members.iter().map(|m| m.address.to_string())).collect();
    (routed_hosts(&actual).collect(), members)
}

/// The floating IPs on `r`'s VIP port.
async fn floating_ips(r: &Router) -> BTreeSet<String> {
    let Ok(Some(lb)) = r.find().await else { return BTreeSet::new() };
    let q = ListQuery { extra: vec![("port_id".into(), lb.vip_port_id.clone().unwrap())], ..ListQuery::default() };
    r.neutron().list_floating_ips(&q).await.unwrap().into_iter().map(|f| f.floating_ip_address).collect()
}

/// Ingress `name`'s status addresses.
fn status_of(fake: &Fake, name: &str) -> Vec<String> {
    let ing = fake.get(ING, "shop", name).unwrap_or_default();
    let list = ing["status"]["loadBalancer"]["ingress"].as_array().cloned().unwrap_or_default();
    list.iter().filter_map(|i| i["ip"].as_str().map(String::from)).collect()
}

/// The notes of the Warning Events `reason` the controller wrote.
fn notes(fake: &Fake, reason: &str) -> Vec<String> {
    let writes = fake.writes();
    let of = writes.iter().filter(|w| w.path.contains("/events") && w.body["reason"] == reason);
    of.map(|w| w.body["note"].as_str().unwrap_or_default().to_string()).collect()
}

/// Polls `check` every second until it gives `Some` or `secs` pass.
async fn within<T, F, Fut>(what: &str, secs: u64, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let t0 = Instant::now();
    loop {
        if let Some(v) = check().await {
            eprintln!("{what}: {:.1} s", t0.elapsed().as_secs_f64());
            return v;
        }
        assert!(t0.elapsed() < Duration::from_secs(secs), "{what}: not within {secs} s");
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fip_quota_exhausted_the_failing_router_is_reported_and_new_groups_go_where_there_is_room() {
    if !enabled() {
        return;
    }
    // `RUST_LOG=info` shows the controller's logs.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    let project = ScratchProject::create("fq").await;
    let fake = Fake::new();
    super::router_set::class_and_web_service(&fake, CLASS, FIRST_ENDPOINT);
    for name in ["fa", "fb", "fc"] {
        fake.put("ingresses", ingress(name, 1));
    }
    let (api, _) = fake.serve().await;
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "fake-token\n").unwrap();
    let base = format!("{}x", unique("fq", "set"));
    let s = settings(&api, &token, &base, &project);
    let routers: Vec<Router> = (0..3)
        .map(|i| kuryr_l7_router::wiring::router_observed_at(&s, None, i, WritePermits::unlimited()).unwrap())
        .collect();
    let before = fip_quota(&project).await;
    let body = async {
        set_fip_quota(&project, 2).await.unwrap();
        let permits = kuryr_l7_router::wiring::write_permits(&s);
        let backends = move |s: &_, _: &_, index: u32| {
            let router = kuryr_l7_router::wiring::router_observed_at(s, None, index, permits.clone())
                .map_err(|e| ControllerError::ClientConfig(e.to_string()))?;
            Ok(OctaviaBackend::new(router))
        };
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let run = tokio::spawn(run_set_with(s.clone(), backends, async move {
            let _ = stopped.await;
        }));
        let steps = futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(steps(&fake, &s, &base, &routers)));
        let result = steps.await;
        let _ = stop.send(());
        let _ = tokio::time::timeout(Duration::from_secs(60), run).await;
        if let Err(panic) = result {
            std::panic::resume_unwind(panic);
        }
    };
    let result = futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(body)).await;
    // The guard: whatever happened above, the quota as found, then nothing of ours left.
    let restored = set_fip_quota(&project, before).await;
    for r in &routers {
        cleanup(r).await;
    }
    project.delete().await;
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
    restored.unwrap();
}

/// Steps 1 to 4 of the module's comment, the controller running.
async fn steps(fake: &Fake, s: &kuryr_l7_router::config::Settings, base: &str, routers: &[Router]) {
    let third = &kuryr_l7_router::placement::router_name(base, 2);
    // 1. Two routers, each with its floating IP (the whole quota).
    let fips = within("fa, fb on the first router, fc on the second, published", 600, || async move {
        let (on_0, on_1) = (routes_and_members(&routers[0]).await.0, routes_and_members(&routers[1]).await.0);
        let hosts = |names: &[&str]| names.iter().map(|n| format!("{n}.example.com")).collect::<BTreeSet<_>>();
        if on_0 != hosts(&["fa", "fb"]) || on_1 != hosts(&["fc"]) {
            return None;
        }
        let fips = [floating_ips(&routers[0]).await, floating_ips(&routers[1]).await];
        let published = |name: &str, i: usize| status_of(fake, name).iter().all(|ip| fips[i].contains(ip));
        let all = !status_of(fake, "fc").is_empty() && published("fa", 0) && published("fb", 0) && published("fc", 1);
        (fips.iter().all(|f| f.len() == 1) && all).then_some(fips)
    })
    .await;

    // 2. fd (two policies) fits on neither: a third router, whose floating IP is refused.
    fake.put("ingresses", ingress("fd", 2));
    let note = within("RouterCreateFailed naming the third router", 600, || async move {
        notes(fake, "RouterCreateFailed").into_iter().find(|n| n.contains(third.as_str()))
    })
    .await;
    eprintln!("RouterCreateFailed: {note}");
    let metrics_url = &format!("http://127.0.0.1:{}/metrics", s.kubernetes.health_port);
    let failures = &format!("router_create_failures_total{{router=\"{third}\"}}");
    within("the third router's create failures on /metrics", 60, || async move {
        let text = reqwest::get(metrics_url).await.ok()?.text().await.ok()?;
        let line = text.lines().find(|l| l.contains(failures.as_str()))?;
        let count: f64 = line.rsplit(' ').next()?.parse().ok()?;
        (count >= 1.0).then_some(())
    })
    .await;
    assert!(floating_ips(&routers[2]).await.is_empty(), "the third router has no floating IP");
    assert!(
        status_of(fake, "fd").is_empty(),
        "fd has no address: {:?} (the routers' addresses: {:?}, {:?})",
        status_of(fake, "fd"),
        floating_ips(&routers[0]).await,
        floating_ips(&routers[1]).await
    );

    // 3. fe (one policy) goes to the second router, which has room, not to the failing third.
    fake.put("ingresses", ingress("fe", 1));
    let fips = &fips;
    within("fe routed and published by the second router", 300, || async move {
        let routed = routes_and_members(&routers[1]).await.0.contains("fe.example.com");
        let published = status_of(fake, "fe").iter().any(|ip| fips[1].contains(ip));
        (routed && published && recorded_router(fake, base, "fe")? == routers[1].spec().name).then_some(())
    })
    .await;
    assert!(!routes_and_members(&routers[2]).await.0.contains("fe.example.com"), "fe not on the failing router");

    // 4. The endpoint changes: the first two routers converge it.
    let mut slice = fake.get("discovery.k8s.io/v1/endpointslices", "shop", "web-abc").expect("the slice");
    slice["endpoints"][0]["addresses"] = json!([SECOND_ENDPOINT]);
    fake.put("endpointslices", slice);
    within("both routers' members on the new endpoint", 300, || async move {
        let want = BTreeSet::from([SECOND_ENDPOINT.to_string()]);
        let on_0 = routes_and_members(&routers[0]).await.1;
        let on_1 = routes_and_members(&routers[1]).await.1;
        (on_0 == want && on_1 == want).then_some(())
    })
    .await;
}
