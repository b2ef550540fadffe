//! What a tenant's Gateway may take (issue 33, item 2): the number of Gateways served per
//! namespace and per cluster (`kuryr_l7_router::gateway::limits`), the floating IPs its
//! `spec.addresses` may name, and the project's load-balancer and floating-IP quota checked
//! before its create (`kuryr_l7_router::controller::gateway::admission`). Through the whole
//! controller on the FAKE Kubernetes API server, each Gateway's load balancer an in-memory
//! Octavia (the fixtures of `controller_gateway_routers`); the admission's decisions are the
//! production ones, its reads of the cloud a test table. Each case failed before: every Gateway
//! got a load balancer, on any free floating IP, and a quota shortage was a failed Sync.

use crate::controller_gateway_routers::{
    Built, GW_API, eventually, fake_with, programmed, routed, sim_gateway_routers, start,
};
use crate::support::fake_api::Fake;
use kuryr_l7_router::config::GatewayLimits;
use kuryr_l7_router::controller::gateway::admission::{AdmitGateway, address_refusal, room_refusal};
use kuryr_l7_router::gateway::naming::load_balancer_name;
use kuryr_l7_router::openstack::neutron::FloatingIp;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn condition(fake: &Fake, ns: &str, gw: &str, kind: &str) -> Option<(String, String, String)> {
    let st = fake.get(&format!("{GW_API}/gateways"), ns, gw)?["status"].clone();
    let c = st["conditions"].as_array()?.iter().find(|c| c["type"] == kind)?.clone();
    let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
    Some((s(&c["status"]), s(&c["reason"]), s(&c["message"])))
}

/// A Gateway of ours with one HTTP listener, created at `created`.
fn put_gateway(fake: &Fake, ns: &str, name: &str, created: &str, address: Option<&str>) {
    let mut gw = json!({"apiVersion": GW_API, "kind": "Gateway",
        "metadata": {"name": name, "namespace": ns, "generation": 1, "creationTimestamp": created},
        "spec": {"gatewayClassName": "kuryr", "listeners": [{"name": "http", "port": 8080, "protocol": "HTTP"}]}});
    if let Some(a) = address {
        gw["spec"]["addresses"] = json!([{"type": "IPAddress", "value": a}]);
    }
    fake.put("gateways", gw);
}

fn spawned(built: &Built, ns: &str, name: &str) -> bool {
    built.spawned.lock().unwrap().contains(&load_balancer_name(ns, name))
}

async fn served(fake: &Fake, ns: &str, name: &str) {
    eventually(&format!("{ns}/{name} Programmed"), 10, || {
        condition(fake, ns, name, "Programmed").filter(|c| c.0 == "True")
    })
    .await;
}

async fn over_limit(fake: &Fake, ns: &str, name: &str) -> String {
    let (_, _, message) = eventually(&format!("{ns}/{name} over the limit"), 10, || {
        condition(fake, ns, name, "Accepted").filter(|c| c.0 == "False" && c.1 == "LimitExceeded")
    })
    .await;
    let (status, reason, _) = condition(fake, ns, name, "Programmed").unwrap();
    assert_eq!((status.as_str(), reason.as_str()), ("False", "Invalid"));
    message
}

/// Long enough for the Gateway loop (500 ms debounce) and the router driver to act on a change.
async fn settle() {
    tokio::time::sleep(Duration::from_secs(2)).await;
}

/// One Gateway per namespace: the oldest is served, whatever the names, and the other gets
/// `Accepted: False` naming the limit and no load balancer; another namespace is not counted.
/// A Gateway that turns ours later with an older creationTimestamp does not take the place of
/// the one served. The served one deleted, the next one is served by itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_the_namespace_limit_a_gateway_gets_no_load_balancer_and_the_served_one_stays() {
    let fake = fake_with(&[]);
    put_gateway(&fake, "shop", "b-old", "2026-01-01T00:00:00Z", None);
    put_gateway(&fake, "shop", "a-new", "2026-02-01T00:00:00Z", None);
    put_gateway(&fake, "team", "c", "2026-03-01T00:00:00Z", None);
    let limits = GatewayLimits { per_namespace: Some(1), ..GatewayLimits::default() };
    let built = Built { limits, ..Built::default() };
    let running = start(&fake, sim_gateway_routers(built.clone(), vec![])).await;
    served(&fake, "shop", "b-old").await;
    served(&fake, "team", "c").await;
    let message = over_limit(&fake, "shop", "a-new").await;
    assert!(message.contains("gateways_per_namespace = 1") && message.contains("namespace shop"), "{message}");
    settle().await;
    assert!(!spawned(&built, "shop", "a-new"), "no load balancer over the limit");

    // An older Gateway (e.g. moved to our class): the one served keeps its place.
    put_gateway(&fake, "shop", "older", "2025-01-01T00:00:00Z", None);
    over_limit(&fake, "shop", "older").await;
    settle().await;
    assert!(!spawned(&built, "shop", "older"));
    assert_eq!(condition(&fake, "shop", "b-old", "Programmed").unwrap().0, "True");
    assert!(built.deleted.lock().unwrap().is_empty(), "nothing deleted: {:?}", built.deleted.lock().unwrap());

    // The served one deleted (no finalizer in this fake: gone at once): the oldest left is next.
    fake.remove(&format!("{GW_API}/gateways"), "shop", "b-old");
    served(&fake, "shop", "older").await;
    assert!(spawned(&built, "shop", "older"));
    over_limit(&fake, "shop", "a-new").await;
    running.stop().await;
}

/// Two Gateways in the cluster: the third, the newest, gets `Accepted: False` naming the
/// cluster limit and no load balancer; `gateway_kept_grace` does not apply to it (no delete, no
/// `LoadBalancerReleased` Event for a load balancer it never had).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_the_cluster_limit_the_newest_gateway_gets_no_load_balancer() {
    let fake = fake_with(&[]);
    put_gateway(&fake, "shop", "a", "2026-01-01T00:00:00Z", None);
    put_gateway(&fake, "team", "b", "2026-01-02T00:00:00Z", None);
    put_gateway(&fake, "lab", "a", "2026-01-03T00:00:00Z", None);
    let limits = GatewayLimits { per_namespace: Some(5), per_cluster: Some(2), ..GatewayLimits::default() };
    let built = Built { limits, kept_grace: Some(Duration::from_secs(1)), ..Built::default() };
    let running = start(&fake, sim_gateway_routers(built.clone(), vec![])).await;
    served(&fake, "shop", "a").await;
    served(&fake, "team", "b").await;
    let message = over_limit(&fake, "lab", "a").await;
    assert!(message.contains("gateways_per_cluster = 2"), "{message}");
    settle().await;
    settle().await;
    assert!(!spawned(&built, "lab", "a"));
    assert!(built.deleted.lock().unwrap().is_empty(), "{:?}", built.deleted.lock().unwrap());
    assert!(!fake.writes().iter().any(|w| w.path.contains("/events") && w.body["reason"] == "LoadBalancerReleased"));
    running.stop().await;
}

/// The project's floating IPs as the admission reads them: the address -> its tags.
type FloatingIps = Arc<Mutex<Vec<(String, Vec<String>)>>>;

/// The project's quotas as the admission reads them: the load balancers' (limit, count), the
/// floating IPs' (limit, used).
type Quotas = Arc<Mutex<((i64, usize), (i64, i64))>>;

/// The production admission's decision on a test table of floating IPs and quotas: the load
/// balancers' (limit, count), the floating IPs' (limit, used).
fn admission(limits: GatewayLimits, fips: FloatingIps, quota: Quotas) -> AdmitGateway {
    Arc::new(move |_name: &str, address: Option<std::net::IpAddr>| {
        let (limits, fips, quota) = (limits.clone(), fips.clone(), quota.clone());
        Box::pin(async move {
            if let Some(a) = address {
                let fip = fips.lock().unwrap().iter().find(|(ip, _)| *ip == a.to_string()).map(|(ip, tags)| {
                    FloatingIp { floating_ip_address: ip.clone(), tags: tags.clone(), ..FloatingIp::default() }
                });
                if let Some(r) = address_refusal(&limits, a, fip.as_ref()) {
                    return Err(r);
                }
            }
            let ((lb_limit, lbs), (fip_limit, used)) = *quota.lock().unwrap();
            let detail = kuryr_l7_router::openstack::neutron::QuotaDetail { limit: fip_limit, used, reserved: 0 };
            match room_refusal((Some(lb_limit), lbs), Some(detail), address.is_none()) {
                Some(r) => Err(r),
                None => Ok(()),
            }
        })
    })
}

/// A static address must be a floating IP the operator allows (here: by its tag): `static`
/// (203.0.113.7, tagged) is served on it; `bad` (203.0.113.9, not tagged) gets `Programmed:
/// False`, reason `AddressNotUsable` naming the address, a Warning Event, and nothing synced
/// (no load balancer, the address not taken). Tagged later, it is served by itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_static_address_must_be_one_the_operator_allows() {
    let fake = fake_with(&["static"]);
    put_gateway(&fake, "shop", "bad", "2026-01-01T00:00:00Z", Some("203.0.113.9"));
    let limits = GatewayLimits { address_tag: Some("gateway-ok".into()), ..GatewayLimits::default() };
    let fips: FloatingIps = Arc::new(Mutex::new(vec![
        ("203.0.113.7".into(), vec!["gateway-ok".into()]),
        ("203.0.113.9".into(), vec!["another-tenant".into()]),
    ]));
    let quota: Quotas = Arc::new(Mutex::new(((-1, 0), (-1, 0))));
    let admit = admission(limits.clone(), fips.clone(), quota);
    let built = Built { limits, admit: Some(admit), ..Built::default() };
    let running = start(&fake, sim_gateway_routers(built.clone(), vec![])).await;

    let (_, _, _, addresses) =
        eventually("static served", 10, || programmed(&fake, "static").filter(|p| p.0 == "True")).await;
    assert_eq!(addresses[0]["value"], "203.0.113.7");
    let (_, _, message) = eventually("bad not usable", 10, || {
        condition(&fake, "shop", "bad", "Programmed").filter(|c| c.1 == "AddressNotUsable")
    })
    .await;
    assert!(message.contains("203.0.113.9") && message.contains("gateway_address_tag"), "{message}");
    assert_eq!(condition(&fake, "shop", "bad", "Accepted").unwrap().0, "True", "its spec is valid");
    let event = eventually("a Warning Event on bad", 10, || {
        fake.writes().into_iter().find(|w| {
            w.path.contains("/events") && w.body["reason"] == "AddressNotUsable" && w.body["regarding"]["name"] == "bad"
        })
    })
    .await;
    assert_eq!(event.body["type"], "Warning");
    let bad = load_balancer_name("shop", "bad");
    let sim = built.sims.lock().unwrap().get(&bad).map(|s| s.2.clone()).expect("its writer is built");
    settle().await;
    let (paths, members) = routed(&sim.lock().unwrap());
    assert!(paths.is_empty() && members.is_empty(), "nothing synced");
    let address = programmed(&fake, "bad").unwrap().3;
    assert!(address.is_null() || address.as_array().is_some_and(|a| a.is_empty()), "no address: {address}");

    // The operator tags it: served by itself (asked again every retry).
    fips.lock().unwrap()[1].1.push("gateway-ok".into());
    let (_, _, _, addresses) =
        eventually("bad served once allowed", 30, || programmed(&fake, "bad").filter(|p| p.0 == "True")).await;
    assert_eq!(addresses[0]["value"], "203.0.113.9");
    running.stop().await;
}

/// The project's load-balancer quota is used up: the Gateway gets `Programmed: False`, reason
/// `NoResources` naming the quota, with a Warning Event, and no load balancer; the quota
/// freed, it is served by itself. A floating IP quota used up holds a Gateway that needs one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quota_shortage_is_a_condition_and_recovers_by_itself() {
    let fake = fake_with(&["web"]);
    let quota = Arc::new(Mutex::new(((3, 3), (10, 0))));
    let admit = admission(GatewayLimits::default(), Arc::default(), quota.clone());
    let built = Built { admit: Some(admit), ..Built::default() };
    let running = start(&fake, sim_gateway_routers(built.clone(), vec![])).await;

    let (_, _, message) = eventually("web has no room", 10, || {
        condition(&fake, "shop", "web", "Programmed").filter(|c| c.1 == "NoResources")
    })
    .await;
    assert!(message.contains("load balancer quota is used up (3 of 3)"), "{message}");
    assert!(message.starts_with("no load balancer is created"), "{message}");
    let event = eventually("a Warning Event on web", 10, || {
        fake.writes().into_iter().find(|w| {
            w.path.contains("/events") && w.body["reason"] == "NoResources" && w.body["regarding"]["name"] == "web"
        })
    })
    .await;
    assert_eq!(event.body["type"], "Warning");
    let sim = built.sims.lock().unwrap().get(&load_balancer_name("shop", "web")).map(|s| s.2.clone()).unwrap();
    settle().await;
    assert!(routed(&sim.lock().unwrap()).0.is_empty(), "nothing synced");

    // A load balancer is freed, but no floating IP is left: still held, now for that.
    *quota.lock().unwrap() = ((3, 2), (10, 10));
    let (_, _, message) = eventually("web waits for a floating IP", 30, || {
        condition(&fake, "shop", "web", "Programmed").filter(|c| c.2.contains("floating IP quota"))
    })
    .await;
    assert!(message.contains("(10 of 10)"), "{message}");
    *quota.lock().unwrap() = ((3, 2), (10, 9));
    eventually("web served once the quota frees", 30, || programmed(&fake, "web").filter(|p| p.0 == "True")).await;
    assert!(!routed(&sim.lock().unwrap()).0.is_empty(), "its routes synced");
    running.stop().await;
}
