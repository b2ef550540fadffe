//! Health-aware placement through the whole controller (`run_set_with`) against the FAKE
//! Kubernetes API server, each router on its own in-memory Octavia (`SimBackend`, address
//! 172.24.4.1N for router index N): router `rset-3` (index 2) cannot be built (every create is
//! refused, as with an exhausted floating-IP quota). The other routers keep converging; a new
//! group goes to a router with room, not to the empty router that cannot be built; the failing
//! create backs off, and is counted, named on `/readyz` and told on the IngressClass.

use crate::support::eventually;
use crate::support::fake_api;
use crate::support::fake_settings;

use crate::controller_router_set::{BASE, ING, class, ingress, service};
use crate::controller_set_records::recorded_router;
use eventually::eventually_every;
use fake_api::Fake;
use fake_settings::fake_cluster_settings;
use kuryr_l7_router::controller::runtime::run_set_with;
use kuryr_l7_router::controller::writer::WriteError;
use kuryr_l7_router::driver::ownership::Ownership;
use kuryr_l7_router::driver::plan::DiffOptions;
use kuryr_l7_router::placement::router_name;
use kuryr_l7_router::testing::SimBackend;
use std::sync::Arc;
use std::time::Duration;

async fn eventually<T>(what: &str, secs: u64, f: impl FnMut() -> Option<T>) -> T {
    eventually_every(what, secs, Duration::from_millis(50), f).await
}

/// Ingress `name`'s status address.
fn address(fake: &Fake, name: &str) -> Option<String> {
    let ing = fake.get(ING, "shop", name)?;
    ing["status"]["loadBalancer"]["ingress"][0]["ip"].as_str().map(str::to_string)
}

/// Ingress `name` is recorded on a router and its status points at that router's address.
fn live_on(fake: &Fake, name: &str) -> Option<String> {
    let router = recorded_router(fake, name)?;
    let index = kuryr_l7_router::placement::router_index(BASE, &router)?;
    (address(fake, name)? == format!("172.24.4.{}", 10 + index)).then_some(router)
}

/// The notes of the `RouterCreateFailed` Events on the IngressClass.
fn create_failed_events(fake: &Fake) -> Vec<String> {
    fake.writes()
        .into_iter()
        .filter(|w| w.path.contains("/events") && w.body["reason"] == "RouterCreateFailed")
        .filter(|w| w.body["regarding"]["kind"] == "IngressClass" && w.body["regarding"]["name"] == "kuryr-l7-router")
        .map(|w| w.body["note"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// Two policies a router, one per Ingress: a, b on `rset`, c, d on `rset-2`, e on `rset-3`,
/// which cannot be built. Then e goes and a goes: the empty `rset-3` has the most room and
/// `rset` has room for one. The new Ingress f goes to `rset` and is live there (it used to go
/// to `rset-3` and wait for ever). Meanwhile the failing create was tried at most twice (its
/// backoff starts at 10 s, not at every Sync), counted per router on `/metrics`, named on
/// `/readyz` and told on the IngressClass each time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_router_that_cannot_be_built_gets_no_new_group_and_its_create_backs_off() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let fake = Fake::new();
    fake.put("ingressclasses", class());
    fake.put("services", service());
    for name in ["a", "b", "c", "d", "e"] {
        fake.put("ingresses", ingress(name));
    }
    let (api_root, _) = fake.serve().await;
    let (_dir, token) = crate::support::fake_settings::token_file();
    let backends = move |_: &_, _: &_, index: u32| {
        let ownership = Ownership::new(&router_name(BASE, index)).with_set(BASE);
        let address = format!("172.24.4.{}", 10 + index).parse().ok();
        let sim = SimBackend::new(DiffOptions { ownership, health_monitor: None }, address);
        if index == 2 {
            let refused = WriteError::new("create_refused", "Quota exceeded for resources: ['floatingip']");
            *sim.fail.lock().unwrap() = Some(refused);
        }
        Ok(sim)
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let octavia = format!("l7_router_name = {BASE}\nscale_out = True\nmax_policies_per_router = 2\n");
    let settings = fake_cluster_settings("set-health-test.conf", &api_root, &token, port, "", &octavia);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let run = tokio::spawn(run_set_with(settings, backends, async move {
        let _ = stopped.await;
    }));
    let fake = Arc::new(fake);
    let placed = |names: &'static [&'static str]| {
        let fake = fake.clone();
        move || names.iter().map(|n| live_on(&fake, n)).collect::<Option<Vec<_>>>()
    };
    let got = eventually("a..d live on the routers that can be built", 30, placed(&["a", "b", "c", "d"])).await;
    assert_eq!(got, ["rset", "rset", "rset-2", "rset-2"]);
    let note = eventually("a RouterCreateFailed Event on the IngressClass", 20, || {
        create_failed_events(&fake).into_iter().next()
    })
    .await;
    assert!(note.contains("rset-3") && note.contains("floatingip") && note.contains("next try in 10 s"), "{note}");
    assert!(address(&fake, "e").is_none(), "e waits for its router");

    let http = reqwest::Client::new();
    let get = |path: &'static str| {
        let http = http.clone();
        async move { http.get(format!("http://127.0.0.1:{port}{path}")).send().await.unwrap().text().await.unwrap() }
    };
    let readyz = get("/readyz").await;
    assert!(readyz.contains("router rset-3: cannot be built (1 failed creates"), "{readyz}");
    assert!(readyz.contains("router rset: ready") && readyz.contains("router rset-2: ready"), "{readyz}");

    fake.remove(ING, "shop", "e");
    fake.remove(ING, "shop", "a");
    eventually("a and e gone from the records", 20, || {
        (recorded_router(&fake, "a").is_none() && recorded_router(&fake, "e").is_none()).then_some(())
    })
    .await;
    fake.put("ingresses", ingress("f"));
    let got = eventually("f live on a router with room", 30, placed(&["f", "b", "c", "d"])).await;
    assert_eq!(got, ["rset", "rset", "rset-2", "rset-2"], "f on rset, the others where they were");

    let metrics = get("/metrics").await;
    let failures: u64 = metrics
        .lines()
        .find(|l| l.starts_with("kuryr_l7_router_router_create_failures_total{router=\"rset-3\"}"))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
        .unwrap_or_else(|| panic!("no create failures of rset-3: {metrics}"));
    assert!((1..=2).contains(&failures), "the create backs off: {failures} tries");
    assert_eq!(create_failed_events(&fake).len() as u64, failures, "one Event per failed create");
    assert!(metrics.contains("kuryr_l7_router_router_create_backoff_seconds{router=\"rset-3\"}"), "{metrics}");
    assert!(!metrics.contains("kuryr_l7_router_router_create_failures_total{router=\"rset\"}"), "{metrics}");

    let _ = stop.send(());
    tokio::time::timeout(Duration::from_secs(30), run).await.unwrap().unwrap().unwrap();
}
