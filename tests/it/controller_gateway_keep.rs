//! A Gateway keeps its load balancer and its address until the Gateway itself is deleted
//! (`kuryr_l7_router::gateway::keep`), and its status tells the writes Octavia or Barbican hold
//! (`kuryr_l7_router::gateway::holds`): through the whole controller on the FAKE Kubernetes API
//! server, each Gateway's load balancer an in-memory Octavia (the fixtures of
//! `controller_gateway_routers`). Each case failed before: the load balancer (and its floating
//! IP) was deleted as soon as the Gateway stopped being Accepted, and a Sync with holds showed
//! `Programmed: True`.

use crate::controller_gateway_routers::{
    Built, GW_API, OURS, eventually, fake_with, programmed, routed, sim_gateway_routers, start,
};
use crate::support::fake_api::Fake;
use kuryr_l7_router::driver::report::WriteFailure;
use kuryr_l7_router::gateway::naming::load_balancer_name;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const FINALIZER: &str = "openstack.org/kuryr-l7-router";

fn gateway(fake: &Fake, name: &str) -> Option<Value> {
    fake.get(&format!("{GW_API}/gateways"), "shop", name)
}

fn condition(fake: &Fake, gw: &str, kind: &str) -> Option<(String, String, String)> {
    let st = gateway(fake, gw)?["status"].clone();
    let c = st["conditions"].as_array()?.iter().find(|c| c["type"] == kind)?.clone();
    let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
    Some((s(&c["status"]), s(&c["reason"]), s(&c["message"])))
}

fn listener_programmed(fake: &Fake, gw: &str, listener: &str) -> Option<(String, String, String)> {
    let st = gateway(fake, gw)?["status"].clone();
    let l = st["listeners"].as_array()?.iter().find(|l| l["name"] == listener)?.clone();
    let c = l["conditions"].as_array()?.iter().find(|c| c["type"] == "Programmed")?.clone();
    let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
    Some((s(&c["status"]), s(&c["reason"]), s(&c["message"])))
}

fn finalizers(fake: &Fake, gw: &str) -> Vec<String> {
    let g = gateway(fake, gw).unwrap_or_default();
    serde_json::from_value(g["metadata"]["finalizers"].clone()).unwrap_or_default()
}

fn put_class(fake: &Fake, parameters: bool) {
    let mut class = json!({"apiVersion": GW_API, "kind": "GatewayClass", "metadata": {"name": "kuryr", "generation": 2},
                           "spec": {"controllerName": OURS}});
    if parameters {
        class["spec"]["parametersRef"] = json!({"group": "example.com", "kind": "Params", "name": "p"});
    }
    fake.put("gatewayclasses", class);
}

/// The Gateways served and finalized with their addresses: `web` on 172.24.4.100 (the first
/// router built), `static` on its floating IP.
async fn served(fake: &Fake, gateways: &[&str]) -> Vec<Value> {
    let mut addresses = Vec::new();
    for gw in gateways {
        let (_, _, _, a) = eventually("Programmed True", 10, || programmed(fake, gw).filter(|p| p.0 == "True")).await;
        eventually("the finalizer added", 10, || (finalizers(fake, gw) == [FINALIZER]).then_some(())).await;
        addresses.push(a);
    }
    addresses
}

/// Long enough for the Gateway loop (500 ms debounce) and the router driver to act on a change.
async fn settle() {
    tokio::time::sleep(Duration::from_secs(2)).await;
}

/// The operator adds a `parametersRef` to the class: every Gateway of the class is no longer
/// Accepted, and every load balancer stays, routes and address included (no delete, no rebuild).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_class_edit_with_parameters_ref_keeps_every_load_balancer_and_address() {
    let fake = fake_with(&["web", "static"]);
    let built = Built::default();
    let running = start(&fake, sim_gateway_routers(built.clone(), vec![])).await;
    let before = served(&fake, &["web", "static"]).await;

    put_class(&fake, true);
    eventually("web: Accepted False", 10, || condition(&fake, "web", "Accepted").filter(|c| c.0 == "False")).await;
    settle().await;
    assert!(built.deleted.lock().unwrap().is_empty(), "no load balancer deleted: {:?}", built.deleted);
    assert_eq!(built.spawned.lock().unwrap().len(), 2, "no router rebuilt");
    for gw in ["web", "static"] {
        let sim = built.sims.lock().unwrap().get(&load_balancer_name("shop", gw)).unwrap().2.clone();
        let (paths, _) = routed(&sim.lock().unwrap());
        assert!(paths.iter().any(|p| p.contains("/cart")), "{gw} keeps its last good state: {paths:?}");
    }

    put_class(&fake, false);
    for (gw, address) in ["web", "static"].into_iter().zip(before) {
        let (_, _, _, now) =
            eventually("Programmed again", 10, || programmed(&fake, gw).filter(|p| p.0 == "True")).await;
        assert_eq!(now, address, "{gw}: the same address");
    }
    assert!(built.deleted.lock().unwrap().is_empty());
    running.stop().await;
}

/// The class deleted and created again (a Helm reinstall): the same load balancer and address,
/// nothing deleted, nothing rebuilt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_class_deleted_and_created_again_moves_no_address() {
    let fake = fake_with(&["web"]);
    let built = Built::default();
    let running = start(&fake, sim_gateway_routers(built.clone(), vec![])).await;
    let before = served(&fake, &["web"]).await;

    fake.remove(&format!("{GW_API}/gatewayclasses"), "", "kuryr");
    settle().await;
    assert!(built.deleted.lock().unwrap().is_empty(), "no load balancer deleted: {:?}", built.deleted);
    assert_eq!(finalizers(&fake, "web"), [FINALIZER], "the Gateway stays ours");
    put_class(&fake, false);
    eventually("the class accepted again", 10, || {
        let c = fake.get(&format!("{GW_API}/gatewayclasses"), "", "kuryr")?["status"]["conditions"][0].clone();
        (c["observedGeneration"] == 2 && c["status"] == "True").then_some(())
    })
    .await;
    settle().await;
    let (_, _, _, now) =
        eventually("Programmed again", 10, || programmed(&fake, "web").filter(|p| p.0 == "True")).await;
    assert_eq!(now, before[0], "the same address");
    settle().await;
    assert!(built.deleted.lock().unwrap().is_empty());
    assert_eq!(*built.spawned.lock().unwrap(), [load_balancer_name("shop", "web")], "one router, never rebuilt");
    running.stop().await;
}

/// The Gateway edited into an object this release cannot read (a field of another type, as a
/// newer CRD release could make): it is ignored with an Event, and its load balancer keeps its
/// last good state and address; readable again, it is served by the same router.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreadable_gateway_keeps_its_load_balancer() {
    let fake = fake_with(&["web"]);
    let built = Built::default();
    let running = start(&fake, sim_gateway_routers(built.clone(), vec![])).await;
    served(&fake, &["web"]).await;
    let lb = load_balancer_name("shop", "web");
    let sim = built.sims.lock().unwrap().get(&lb).unwrap().2.clone();

    let mut gw = gateway(&fake, "web").unwrap();
    let good = gw["spec"]["listeners"].clone();
    gw["spec"]["listeners"] = json!(5);
    fake.put("gateways", gw.clone());
    eventually("the UnreadableObject Event", 10, || {
        fake.writes()
            .into_iter()
            .find(|w| w.body["reason"] == "UnreadableObject" && w.body["regarding"]["name"] == "web")
    })
    .await;
    settle().await;
    assert!(built.deleted.lock().unwrap().is_empty(), "the load balancer stays");
    let (paths, _) = routed(&sim.lock().unwrap());
    assert!(paths.iter().any(|p| p.contains("/cart")), "its last good state: {paths:?}");

    gw["spec"]["listeners"] = good;
    gw["metadata"]["generation"] = json!(2);
    fake.put("gateways", gw);
    eventually("Programmed for generation 2", 10, || {
        condition(&fake, "web", "Accepted").filter(|c| c.0 == "True")?;
        let g = gateway(&fake, "web")?;
        let c = g["status"]["conditions"].as_array()?.iter().find(|c| c["type"] == "Programmed")?.clone();
        (c["status"] == "True" && c["observedGeneration"] == 2).then_some(())
    })
    .await;
    assert_eq!(*built.spawned.lock().unwrap(), std::slice::from_ref(&lb), "never rebuilt");
    assert!(built.deleted.lock().unwrap().is_empty());
    running.stop().await;
}

/// With `[octavia_defaults] gateway_kept_grace`: a Gateway whose class is gone longer than the
/// grace loses its load balancer, with a Warning Event on it; the class back, it is served by a
/// new router (a new address). Without the option (above) nothing is deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kept_load_balancer_is_deleted_after_the_grace_period_with_an_event() {
    let fake = fake_with(&["web"]);
    let built = Built { kept_grace: Some(Duration::from_secs(2)), ..Built::default() };
    let running = start(&fake, sim_gateway_routers(built.clone(), vec![])).await;
    let before = served(&fake, &["web"]).await;
    let lb = load_balancer_name("shop", "web");

    let removed = std::time::Instant::now();
    fake.remove(&format!("{GW_API}/gatewayclasses"), "", "kuryr");
    eventually("deleted after the grace", 10, || built.deleted.lock().unwrap().contains(&lb).then_some(())).await;
    assert!(removed.elapsed() >= Duration::from_secs(2), "not before the grace: {:?}", removed.elapsed());
    let event = eventually("a Warning Event on the Gateway", 10, || {
        fake.writes().into_iter().find(|w| w.path.contains("/events") && w.body["reason"] == "LoadBalancerReleased")
    })
    .await;
    assert_eq!(event.body["regarding"]["name"], "web", "{}", event.body);
    assert_eq!(event.body["type"], "Warning");
    settle().await;
    assert_eq!(built.deleted.lock().unwrap().len(), 1, "deleted once");

    put_class(&fake, false);
    // The status written before the class went stays until the Gateway is ours again.
    eventually("Programmed on a new address", 10, || {
        programmed(&fake, "web").filter(|p| p.0 == "True" && p.3 != before[0])
    })
    .await;
    assert_eq!(built.spawned.lock().unwrap().len(), 2, "a new load balancer");
    running.stop().await;
}

/// An edit makes the Gateway's only listener invalid: the Gateway is not Accepted, its load
/// balancer and address stay, its routes are taken off (the listener answers 503) and the route
/// is told; the edit fixed, the routes are back on the same address.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_making_the_only_listener_invalid_keeps_the_address_and_takes_the_routes_off() {
    let fake = fake_with(&["web"]);
    let built = Built::default();
    let running = start(&fake, sim_gateway_routers(built.clone(), vec![])).await;
    let before = served(&fake, &["web"]).await;
    let lb = load_balancer_name("shop", "web");
    let sim = built.sims.lock().unwrap().get(&lb).unwrap().2.clone();

    let mut gw = gateway(&fake, "web").unwrap();
    let good = gw["spec"]["listeners"].clone();
    gw["spec"]["listeners"] = json!([{"name": "http", "port": 8080, "protocol": "UDP"}]);
    gw["metadata"]["generation"] = json!(2);
    fake.put("gateways", gw.clone());
    eventually("web: Accepted False", 10, || condition(&fake, "web", "Accepted").filter(|c| c.0 == "False")).await;
    eventually("the routes off", 10, || routed(&sim.lock().unwrap()).0.is_empty().then_some(())).await;
    let route = eventually("the route told", 10, || {
        let r = fake.get(&format!("{GW_API}/httproutes"), "shop", "store-web")?;
        let p = r["status"]["parents"].as_array()?.first()?.clone();
        let c = p["conditions"].as_array()?.iter().find(|c| c["type"] == "Accepted")?.clone();
        (c["status"] == "False").then_some(c)
    })
    .await;
    assert_ne!(route["reason"], "Accepted", "{route}");
    settle().await;
    assert!(built.deleted.lock().unwrap().is_empty(), "the load balancer stays");
    assert_eq!(*built.spawned.lock().unwrap(), std::slice::from_ref(&lb), "one router, on its port: never rebuilt");

    gw["spec"]["listeners"] = good;
    gw["metadata"]["generation"] = json!(3);
    fake.put("gateways", gw);
    let (_, _, _, now) =
        eventually("Programmed again", 10, || programmed(&fake, "web").filter(|p| p.0 == "True")).await;
    assert_eq!(now, before[0], "the same address");
    eventually("the routes back", 10, || (!routed(&sim.lock().unwrap()).0.is_empty()).then_some(())).await;
    running.stop().await;
}

/// The Gateway deleted (deletionTimestamp, our finalizer holding it): its load balancer (and
/// floating IP) deleted first, then the finalizer removed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_deleted_loses_its_finalizer_only_after_its_load_balancer() {
    let fake = fake_with(&["web"]);
    let built = Built::default();
    let at_delete: Arc<Mutex<Vec<Vec<String>>>> = Arc::default();
    let (f, seen) = (fake.clone(), at_delete.clone());
    *built.on_delete.lock().unwrap() = Some(Box::new(move |_| seen.lock().unwrap().push(finalizers(&f, "web"))));
    let running = start(&fake, sim_gateway_routers(built.clone(), vec![])).await;
    served(&fake, &["web"]).await;
    let lb = load_balancer_name("shop", "web");

    let mut gw = gateway(&fake, "web").unwrap();
    gw["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
    fake.put("gateways", gw);
    eventually("the finalizer removed", 10, || finalizers(&fake, "web").is_empty().then_some(())).await;
    assert_eq!(*built.deleted.lock().unwrap(), [lb], "its load balancer deleted");
    assert_eq!(*at_delete.lock().unwrap(), [vec![FINALIZER.to_string()]], "deleted while the finalizer held");
    running.stop().await;
}

/// A held HTTPS listener (Octavia's 400) gives `Programmed=False` on the Gateway and on its
/// HTTPS listener with Octavia's answer, and a Warning Event; the hold cleared, both recover.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_https_listener_is_not_programmed_until_the_hold_clears() {
    let fake = fake_with(&["web"]);
    let key = rcgen::KeyPair::generate().unwrap();
    let crt = rcgen::CertificateParams::new(vec!["web.example.com".to_string()]).unwrap().self_signed(&key).unwrap();
    let b64 = |s: String| base64_encode(s.as_bytes());
    fake.put(
        "secrets",
        json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
               "metadata": {"name": "web-tls", "namespace": "shop"},
               "data": {"tls.crt": b64(crt.pem()), "tls.key": b64(key.serialize_pem())}}),
    );
    let mut gw = gateway(&fake, "web").unwrap();
    gw["spec"]["listeners"] = json!([{"name": "http", "port": 8080, "protocol": "HTTP"},
        {"name": "https", "port": 443, "protocol": "HTTPS", "hostname": "web.example.com",
         "tls": {"mode": "Terminate", "certificateRefs": [{"name": "web-tls"}]}}]);
    fake.put("gateways", gw);
    let built = Built::default();
    *built.held.lock().unwrap() = vec![WriteFailure {
        object: "HTTPS listener".into(),
        write: String::new(),
        reason: "invalid",
        message: "Octavia 400: Could not retrieve certificate".into(),
        owners: Vec::new(),
    }];
    let running = start(&fake, sim_gateway_routers(built.clone(), vec![])).await;

    let (_, reason, message) = eventually("Programmed False with the hold", 10, || {
        condition(&fake, "web", "Programmed").filter(|c| c.0 == "False" && c.2.contains("Could not retrieve"))
    })
    .await;
    assert_eq!(reason, "Invalid", "{message}");
    let https = listener_programmed(&fake, "web", "https").unwrap();
    assert_eq!((https.0.as_str(), https.1.as_str()), ("False", "Invalid"));
    assert!(https.2.contains("Could not retrieve certificate"), "{}", https.2);
    let http = listener_programmed(&fake, "web", "http").unwrap();
    assert_eq!(http.0, "True", "the HTTP listener is served: {http:?}");
    let event = eventually("a Warning Event on the Gateway", 10, || {
        fake.writes().into_iter().find(|w| {
            // (A first pass may warn of the Secret not cached yet.)
            let note = w.body["note"].as_str().unwrap_or_default();
            w.path.contains("/events") && w.body["regarding"]["name"] == "web" && note.contains("Could not retrieve")
        })
    })
    .await;
    assert_eq!((&event.body["type"], &event.body["reason"]), (&json!("Warning"), &json!("Invalid")), "{}", event.body);

    built.held.lock().unwrap().clear();
    eventually("Programmed True again", 10, || programmed(&fake, "web").filter(|p| p.0 == "True")).await;
    eventually("the HTTPS listener programmed", 10, || {
        listener_programmed(&fake, "web", "https").filter(|l| l.0 == "True")
    })
    .await;
    running.stop().await;
}

fn base64_encode(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The route's condition `kind` on its (only) parent: (status, reason, message).
fn route_condition(fake: &Fake, route: &str, kind: &str) -> Option<(String, String, String)> {
    let r = fake.get(&format!("{GW_API}/httproutes"), "shop", route)?;
    let c = r["status"]["parents"][0]["conditions"].as_array()?.iter().find(|c| c["type"] == kind)?.clone();
    let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
    Some((s(&c["status"]), s(&c["reason"]), s(&c["message"])))
}

/// A Warning Event on Gateway `gw` whose note contains `text`.
fn gateway_event(fake: &Fake, gw: &str, text: &str) -> Option<Value> {
    fake.writes().into_iter().map(|w| (w.path, w.body)).find_map(|(path, body)| {
        let note = body["note"].as_str().unwrap_or_default();
        (path.contains("/events") && body["regarding"]["name"] == gw && note.contains(text)).then_some(body)
    })
}

/// A hold of `reason` on the policy of HTTPRoute shop/store-web.
fn route_hold(reason: &'static str, message: &str) -> WriteFailure {
    WriteFailure {
        object: "L7 policy store-web".into(),
        write: String::new(),
        reason,
        message: message.into(),
        owners: vec![kuryr_l7_router::model::KubeRef::new("HTTPRoute", "shop", "store-web")],
    }
}

/// Octavia refuses a route's policy (400) on the Gateway's router: the Gateway and the listener
/// the route is attached to are `Programmed: False` (`Invalid`) naming Octavia's answer, the route
/// `PartiallyInvalid: True` ("Dropped Rule(s) until retried") with `Accepted: True`, a Warning
/// Event on the Gateway; the hold cleared, all recover by themselves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_route_policy_is_told_on_the_gateway_its_listener_and_the_route_until_it_clears() {
    let fake = fake_with(&["web"]);
    let built = Built::default();
    *built.held.lock().unwrap() = vec![route_hold("invalid", "Octavia 400: Invalid input for field/attribute value")];
    let running = start(&fake, sim_gateway_routers(built.clone(), vec![])).await;

    let (_, reason, message) = eventually("Programmed False with the hold", 10, || {
        condition(&fake, "web", "Programmed").filter(|c| c.0 == "False" && c.2.contains("Invalid input"))
    })
    .await;
    assert_eq!(reason, "Invalid", "{message}");
    assert!(message.contains("L7 policy store-web refused (invalid)"), "{message}");
    let http = listener_programmed(&fake, "web", "http").unwrap();
    assert_eq!((http.0.as_str(), http.1.as_str()), ("False", "Invalid"), "{http:?}");
    assert!(http.2.contains("Invalid input"), "{}", http.2);
    let partial =
        eventually("the route partially invalid", 10, || route_condition(&fake, "store-web", "PartiallyInvalid")).await;
    assert_eq!((partial.0.as_str(), partial.1.as_str()), ("True", "UnsupportedValue"));
    assert!(
        partial.2.starts_with("Dropped Rule(s) until retried:") && partial.2.contains("Invalid input"),
        "{partial:?}"
    );
    assert_eq!(route_condition(&fake, "store-web", "Accepted").map(|c| c.0).as_deref(), Some("True"));
    let event = eventually("a Warning Event on the Gateway", 10, || gateway_event(&fake, "web", "Invalid input")).await;
    assert_eq!(event["type"], "Warning");

    built.held.lock().unwrap().clear();
    eventually("Programmed True again", 10, || programmed(&fake, "web").filter(|p| p.0 == "True")).await;
    eventually("the listener programmed", 10, || listener_programmed(&fake, "web", "http").filter(|l| l.0 == "True"))
        .await;
    eventually("the route no longer partially invalid", 10, || {
        route_condition(&fake, "store-web", "Accepted")
            .filter(|_| route_condition(&fake, "store-web", "PartiallyInvalid").is_none())
    })
    .await;
    running.stop().await;
}

/// A quota hold (Octavia 403 on the route's policy): the Gateway is `Programmed: False` with
/// reason `NoResources` (the spec's reason for insufficient resources), naming the quota.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quota_hold_is_no_resources_on_the_gateway_until_it_clears() {
    let fake = fake_with(&["web"]);
    let built = Built::default();
    *built.held.lock().unwrap() = vec![route_hold("quota", "Octavia 403: Quota has been met for resources: L7 Policy")];
    let running = start(&fake, sim_gateway_routers(built.clone(), vec![])).await;

    let (_, reason, message) = eventually("Programmed False with the quota", 10, || {
        condition(&fake, "web", "Programmed").filter(|c| c.0 == "False" && c.2.contains("Quota has been met"))
    })
    .await;
    assert_eq!(reason, "NoResources", "{message}");
    assert!(message.contains("refused (quota)"), "{message}");
    let http = listener_programmed(&fake, "web", "http").unwrap();
    assert_eq!((http.0.as_str(), http.1.as_str()), ("False", "Invalid"), "{http:?}");
    let event = eventually("a Warning Event", 10, || gateway_event(&fake, "web", "Quota has been met")).await;
    assert_eq!((&event["type"], &event["reason"]), (&json!("Warning"), &json!("NoResources")), "{event}");

    built.held.lock().unwrap().clear();
    eventually("Programmed True again", 10, || programmed(&fake, "web").filter(|p| p.0 == "True")).await;
    running.stop().await;
}
