//! Host ownership (`[kubernetes] host_ownership = True`) across Ingress and Gateway API, through
//! the whole controller on the FAKE Kubernetes API server (the Gateways' and the Ingress
//! router's load balancers simulated): the first claim of a host wins whichever kind makes it,
//! the loser is told (an HTTPRoute `Accepted: False`, `NotAllowedByListeners`; an Ingress a
//! Warning Event) naming the owner, and its router does not serve the host; ownership survives a
//! restart through the controller's store. Each case failed before: host ownership applied to
//! Ingresses only, so another namespace's Gateway and HTTPRoute served any host.

use crate::controller_gateway_routers::{
    Built, GW_API, Running, eventually, fake_with, sim_gateway_routers, start_with,
};
use crate::controller_set_records::{CONTROLLER_NS, stored_owners};
use crate::support::fake_api::Fake;
use kuryr_l7_router::driver::sim::Simulator;
use kuryr_l7_router::gateway::naming::load_balancer_name;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const OWNERSHIP: &str = "host_ownership = True\n";

async fn start_owning(fake: &Arc<Fake>, built: &Built) -> Running {
    start_with(fake, sim_gateway_routers(built.clone(), vec![]), OWNERSHIP).await
}

/// A Service `cart` in `ns` (the fixture has one in `shop`).
fn service(fake: &Fake, ns: &str) {
    fake.put(
        "services",
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "cart", "namespace": ns},
               "spec": {"ports": [{"name": "http", "port": 80, "targetPort": 8080}]}}),
    );
}

/// A Gateway `ns/name` of our class, one HTTP listener on 8080.
fn gateway(fake: &Fake, ns: &str, name: &str) {
    fake.put(
        "gateways",
        json!({"apiVersion": GW_API, "kind": "Gateway",
               "metadata": {"name": name, "namespace": ns, "generation": 1, "creationTimestamp": "2026-01-01T00:00:00Z"},
               "spec": {"gatewayClassName": "kuryr", "listeners": [{"name": "http", "port": 8080, "protocol": "HTTP"}]}}),
    );
}

/// An HTTPRoute `ns/name` (created at `created`) on Gateway `ns/gw` for `hosts`, `/cart` to `cart`.
fn route(fake: &Fake, ns: &str, name: &str, gw: &str, hosts: &[&str], created: &str) {
    fake.put(
        "httproutes",
        json!({"apiVersion": GW_API, "kind": "HTTPRoute",
               "metadata": {"name": name, "namespace": ns, "generation": 1, "creationTimestamp": created},
               "spec": {"parentRefs": [{"name": gw}], "hostnames": hosts,
                        "rules": [{"matches": [{"path": {"type": "PathPrefix", "value": "/cart"}}],
                                   "backendRefs": [{"name": "cart", "port": 80}]}]}}),
    );
}

/// An Ingress `ns/name` of ours (created at `created`) for `host`, `/` to `cart`.
fn ingress(fake: &Fake, ns: &str, name: &str, host: &str, created: &str) {
    fake.put(
        "ingresses",
        json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
               "metadata": {"name": name, "namespace": ns, "creationTimestamp": created},
               "spec": {"ingressClassName": "kuryr-l7-router", "rules": [{"host": host, "http": {"paths": [
                   {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "cart", "port": {"number": 80}}}}]}}]}}),
    );
}

/// The route's `Accepted` condition on its (only) parent: (status, reason, message).
fn accepted(fake: &Fake, ns: &str, name: &str) -> Option<(String, String, String)> {
    let r = fake.get(&format!("{GW_API}/httproutes"), ns, name)?;
    let c = r["status"]["parents"][0]["conditions"].as_array()?.iter().find(|c| c["type"] == "Accepted")?.clone();
    let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
    Some((s(&c["status"]), s(&c["reason"]), s(&c["message"])))
}

/// The HOST_NAME rule values of a simulated router.
fn host_rules(sim: &Arc<Mutex<Simulator>>) -> Vec<String> {
    let sim = sim.lock().unwrap();
    let rules = sim.router.policies.iter().flat_map(|p| p.rules.iter()).filter(|r| r.rule_type == "HOST_NAME");
    rules.map(|r| r.value.clone()).collect()
}

/// The HOST_NAME rules of Gateway `ns/name`'s router, once built.
fn gateway_hosts(built: &Built, ns: &str, name: &str) -> Option<Vec<String>> {
    let sim = built.sims.lock().unwrap().get(&load_balancer_name(ns, name))?.2.clone();
    Some(host_rules(&sim))
}

fn names(rules: &[String], host: &str) -> bool {
    rules.iter().any(|v| v.contains(&host.replace('.', "\\.")))
}

/// A Warning whose reason contains `reason` on the object `name`, if one was published.
fn event_on(fake: &Fake, name: &str, reason: &str) -> Option<Value> {
    let on = |w: &crate::support::fake_api::Write| w.path.contains("/events") && w.body["regarding"]["name"] == name;
    fake.writes()
        .into_iter()
        .filter(on)
        .map(|w| w.body)
        .find(|b| b["reason"].as_str().is_some_and(|r| r.contains(reason)))
}

/// Long enough for both sides to act on a change (500 ms debounce, a Sync).
async fn settle() {
    tokio::time::sleep(Duration::from_secs(2)).await;
}

/// Namespace shop owns legacy.example.com through its Ingress (the fixture's, 2026-01-01). A
/// later HTTPRoute of namespace evil for it, on evil's own Gateway, is refused
/// (`NotAllowedByListeners`, naming shop and its Ingress) and evil's load balancer gets no rule for
/// the host, while evil's route for its own host is served there. Shop's own HTTPRoute for the
/// host, on shop's Gateway, coexists with shop's Ingress: both kinds of one namespace serve it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ingress_owned_host_is_refused_to_a_later_httproute_of_another_namespace() {
    let fake = fake_with(&[]);
    service(&fake, "evil");
    gateway(&fake, "evil", "gw");
    route(&fake, "evil", "steal", "gw", &["legacy.example.com"], "2026-02-01T00:00:00Z");
    route(&fake, "evil", "own", "gw", &["evil.example.com"], "2026-02-01T00:00:00Z");
    gateway(&fake, "shop", "gw");
    route(&fake, "shop", "mine", "gw", &["legacy.example.com"], "2026-02-01T00:00:00Z");
    let built = Built::default();
    let running = start_owning(&fake, &built).await;

    let (_, reason, message) =
        eventually("evil/steal refused", 20, || accepted(&fake, "evil", "steal").filter(|a| a.0 == "False")).await;
    assert_eq!(reason, "NotAllowedByListeners");
    assert!(message.contains("belongs to namespace shop (claimed first by Ingress shop/legacy)"), "{message}");
    let ev = eventually("a Warning on evil's route", 20, || event_on(&fake, "steal", "NotAllowedByListeners")).await;
    assert!(ev["note"].as_str().unwrap_or_default().contains("namespace shop"), "{ev}");
    let evil = eventually("evil's router serves evil.example.com", 20, || {
        gateway_hosts(&built, "evil", "gw").filter(|h| names(h, "evil.example.com"))
    })
    .await;
    assert!(!names(&evil, "legacy.example.com"), "no rule for shop's host on evil's router: {evil:?}");

    // Waited for, not read once: shop's route status is its own write, after evil's (the whole
    // suite on 2 cores once read it before it was written).
    eventually("shop/mine accepted", 20, || accepted(&fake, "shop", "mine").filter(|a| a.0 == "True")).await;
    eventually("shop's router serves legacy.example.com", 20, || {
        gateway_hosts(&built, "shop", "gw").filter(|h| names(h, "legacy.example.com"))
    })
    .await;
    let ingress_hosts = eventually("the Ingress router serves shop's Ingress", 20, || {
        Some(host_rules(&running.ingress_sim())).filter(|h| names(h, "legacy.example.com"))
    })
    .await;
    assert_eq!(ingress_hosts.len(), 1, "{ingress_hosts:?}");
    settle().await;
    assert!(event_on(&fake, "legacy", "HostOwned").is_none(), "shop's Ingress is not told anything");
    assert_eq!(accepted(&fake, "evil", "steal").map(|a| a.1).as_deref(), Some("NotAllowedByListeners"));
    running.stop().await;
}

/// Namespace shop owns gw.example.com through its HTTPRoute (2026-01-01). A later Ingress of
/// namespace evil naming it gets a Warning Event naming shop and the HTTPRoute, and the Ingress
/// router gets no rule for the host (shop's Ingress keeps its own); shop's route stays served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_httproute_owned_host_is_refused_to_a_later_ingress_of_another_namespace() {
    let fake = fake_with(&["gw"]);
    service(&fake, "evil");
    let built = Built::default();
    let running = start_owning(&fake, &built).await;
    eventually("shop/store-gw accepted", 20, || accepted(&fake, "shop", "store-gw").filter(|a| a.0 == "True")).await;
    eventually("shop's router serves gw.example.com", 20, || {
        gateway_hosts(&built, "shop", "gw").filter(|h| names(h, "gw.example.com"))
    })
    .await;

    ingress(&fake, "evil", "thief", "gw.example.com", "2026-03-01T00:00:00Z");
    let ev = eventually("evil's Ingress told", 20, || event_on(&fake, "thief", "HostOwned")).await;
    let note = ev["note"].as_str().unwrap_or_default();
    assert!(note.contains("belongs to namespace shop (claimed first by HTTPRoute shop/store-gw)"), "{ev}");
    assert_eq!(ev["type"], "Warning");
    settle().await;
    let hosts = host_rules(&running.ingress_sim());
    assert!(names(&hosts, "legacy.example.com"), "shop's Ingress still served: {hosts:?}");
    assert!(!names(&hosts, "gw.example.com"), "no rule for shop's host on the Ingress router: {hosts:?}");
    assert_eq!(accepted(&fake, "shop", "store-gw").map(|a| a.0).as_deref(), Some("True"));
    running.stop().await;
}

/// Shop's HTTPRoute owns gw.example.com, remembered in the controller's store. After a restart,
/// shop's route re-created (now younger) and an Ingress of evil claiming the host created in
/// between (older than the new route): shop keeps the host (the store says so), evil's Ingress
/// is refused with a Warning naming shop, and shop's route is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_httproutes_host_stays_its_namespaces_across_a_restart() {
    let fake = fake_with(&["gw"]);
    let built = Built::default();
    let running = start_owning(&fake, &built).await;
    let owners =
        eventually("the route's host stored", 20, || stored_owners(&fake).filter(|o| o.contains_key("gw.example.com")))
            .await;
    assert_eq!(owners["gw.example.com"].namespace, "shop");
    running.stop().await;

    let restarted = fake_with(&[]);
    service(&restarted, "evil");
    for n in [1, 2, 4] {
        for i in 0..n {
            use kuryr_l7_router::controller::router_set::store::shard_name_of;
            let name = shard_name_of::<kuryr_l7_router::controller::owner_store::OwnerRecords>("kuryr-l7-router", n, i);
            if let Some(mut v) = fake.get("v1/configmaps", CONTROLLER_NS, &name) {
                v["metadata"].as_object_mut().unwrap().remove("resourceVersion");
                restarted.put("configmaps", v);
            }
        }
    }
    gateway(&restarted, "shop", "gw");
    ingress(&restarted, "evil", "thief", "gw.example.com", "2026-03-01T00:00:00Z");
    route(&restarted, "shop", "store-gw", "gw", &["gw.example.com"], "2026-06-01T00:00:00Z");
    let built = Built::default();
    let running = start_owning(&restarted, &built).await;
    let ev = eventually("evil's Ingress told", 20, || event_on(&restarted, "thief", "HostOwned")).await;
    assert!(ev["note"].as_str().unwrap_or_default().contains("namespace shop"), "{ev}");
    eventually("shop's route accepted", 20, || accepted(&restarted, "shop", "store-gw").filter(|a| a.0 == "True"))
        .await;
    eventually("shop's router serves gw.example.com", 20, || {
        gateway_hosts(&built, "shop", "gw").filter(|h| names(h, "gw.example.com"))
    })
    .await;
    settle().await;
    let hosts = host_rules(&running.ingress_sim());
    assert!(!names(&hosts, "gw.example.com"), "evil's Ingress not served: {hosts:?}");
    running.stop().await;
}

/// A host an Ingress gives up reaches the HTTPRoute waiting for it at once, not at the Gateway
/// loop's 30 s recheck: the Ingress side tells the Gateway loop when its claims change
/// (`OwnerBook::set_ingress_claims`), and passes again when the vacated host's grace ends.
/// Shop's Ingress owns legacy.example.com; evil's later route for it is refused; the Ingress
/// names another host instead (no grace): the route is accepted and served well within the
/// recheck. Before, it waited for the recheck (30 s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_an_ingress_gives_up_reaches_the_waiting_httproute_without_waiting_for_the_recheck() {
    let fake = fake_with(&[]);
    service(&fake, "evil");
    gateway(&fake, "evil", "gw");
    route(&fake, "evil", "steal", "gw", &["legacy.example.com"], "2026-02-01T00:00:00Z");
    let built = Built::default();
    let running = start_with(
        &fake,
        sim_gateway_routers(built.clone(), vec![]),
        &format!("{OWNERSHIP}host_ownership_grace_period = 0\n"),
    )
    .await;
    eventually("evil/steal refused", 20, || accepted(&fake, "evil", "steal").filter(|a| a.0 == "False")).await;
    // Past the Gateway loop's first passes (its start, the routers' addresses), so that the next
    // one is the recheck's unless the Ingress side wakes it.
    settle().await;

    // Shop's Ingress moves to another host: legacy.example.com is vacated (an edit; a deletion
    // goes through the controller's finalizer, which the fake does not model).
    ingress(&fake, "shop", "legacy", "elsewhere.example.com", "2026-01-01T00:00:00Z");
    let gone = std::time::Instant::now();
    eventually("evil/steal accepted", 20, || accepted(&fake, "evil", "steal").filter(|a| a.0 == "True")).await;
    let waited = gone.elapsed();
    assert!(waited < Duration::from_secs(10), "accepted {waited:?} after the Ingress went (the recheck is 30 s)");
    eventually("evil's router serves legacy.example.com", 20, || {
        gateway_hosts(&built, "evil", "gw").filter(|h| names(h, "legacy.example.com"))
    })
    .await;
    running.stop().await;
}
