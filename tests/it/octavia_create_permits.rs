//! Creates and member updates take separate permits (`[octavia_defaults] parallel_creates`
//! apart from `parallel_writes`, see `driver::door`): with as many load balancer creates
//! hanging as there are write permits, a member update on another router of the same process
//! is still written at once. The routers are built as the controller builds them
//! (`wiring::router_observed_at`, `wiring::gateway_router_observed`, sharing the first router's
//! permits), each on its own small Octavia on loopback (tests/support/fake_octavia.rs), whose
//! load balancer create hangs until the test releases it.

use crate::support::fake_octavia;

use kuryr_l7_router::config::Settings;
use kuryr_l7_router::driver::{Router, WritePermits};
use kuryr_l7_router::model::DesiredRouter;
use kuryr_l7_router::testing::{desired_with, member, pool};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Writes in flight at once: as many creates hang below.
const PARALLEL_WRITES: usize = 2;

/// The settings of a process whose OpenStack is the fake Octavia (and Keystone) on `port`.
fn settings(port: u16) -> Settings {
    let text = format!(
        "[neutron_defaults]
project = 5b4c1b6e0c2d4b1a9f3e2d1c0b9a8f7e
lb_subnet = 3C0F6C8E-1B2D-4C3E-8F9A-0B1C2D3E4F5A

[octavia_defaults]
l7_router_name = permits
parallel_writes = {PARALLEL_WRITES}

[neutron]
auth_url = http://127.0.0.1:{port}/v3
username = kuryr
password = s3cr3t-PaSS
project_name = service
"
    );
    kuryr_l7_router::config::load_texts(&[("create-permits.conf".into(), text)], Vec::new()).unwrap().settings
}

fn desired(members: &[&str]) -> DesiredRouter {
    let mut d = desired_with(&[]);
    d.pools.insert("shop_web".into(), pool("shop_web", members.iter().map(|m| member(m, 1)).collect()));
    d
}

/// A fake Octavia whose load balancer creates hang until `release` says false.
async fn hanging_octavia(release: &tokio::sync::watch::Sender<bool>) -> (u16, Arc<Mutex<fake_octavia::State>>) {
    let (port, state) = fake_octavia::start(usize::MAX).await;
    state.lock().unwrap().hold_creates = Some(release.subscribe());
    (port, state)
}

/// Router 0 of the set exists with one pool; `hanging` builds the routers whose creates hang
/// (sharing router 0's permits): while `PARALLEL_WRITES` of them hang in their create, router 0's
/// member update is written within a few seconds.
async fn member_update_beside_hanging_creates(hanging: impl Fn(&Settings, usize, WritePermits) -> Router) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let (port, first) = fake_octavia::start(usize::MAX).await;
    let router = kuryr_l7_router::wiring::router_observed(&settings(port), None).unwrap();
    router.converge(&desired(&["10.0.0.5"])).await.expect("router 0 created");
    let permits = router.write_permits().clone();

    let (release, _) = tokio::sync::watch::channel(true);
    let mut creates = Vec::new();
    let mut fakes = Vec::new();
    for i in 1..=PARALLEL_WRITES {
        let (port, state) = hanging_octavia(&release).await;
        let other = hanging(&settings(port), i, permits.clone());
        creates.push(tokio::spawn(async move { other.converge(&desired(&["10.0.0.7"])).await.map(|_| ()) }));
        fakes.push(state);
    }
    let all_held = || fakes.iter().all(|f| f.lock().unwrap().creates_held == 1);
    tokio::time::timeout(Duration::from_secs(10), async {
        while !all_held() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("every create sent and hanging");

    let moved = pool("shop_web", vec![member("10.0.0.6", 1)]);
    let written = tokio::time::timeout(Duration::from_secs(5), router.set_members(&moved)).await;
    let _ = release.send(false);
    written.expect("the member update waited behind the hanging creates").expect("members written");
    let members = first.lock().unwrap().members.iter().map(|(_, m)| m["address"].clone()).collect::<Vec<_>>();
    assert_eq!(members, ["10.0.0.6"]);
    for create in creates {
        tokio::time::timeout(Duration::from_secs(10), create).await.expect("released").unwrap().expect("created");
    }
}

/// Routers 1 and 2 of the set are being created (a scale-out), their creates hanging.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_update_never_waits_behind_hanging_set_router_creates() {
    member_update_beside_hanging_creates(|s, i, permits| {
        kuryr_l7_router::wiring::router_observed_at(s, None, i as u32, permits).unwrap()
    })
    .await;
}

/// Two Gateways' routers are being created, their creates hanging.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_update_never_waits_behind_hanging_gateway_creates() {
    member_update_beside_hanging_creates(|s, i, permits| {
        kuryr_l7_router::wiring::gateway_router_observed(s, None, &format!("kuryr-gw-shop-web{i}"), 80, None, permits)
            .unwrap()
    })
    .await;
}
