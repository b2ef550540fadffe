//! Extended features an Octavia router cannot serve are refused by name through the whole
//! controller (fake Kubernetes API server, simulated load balancers): a BackendTLSPolicy on a
//! route's Service. Before, the controller did not read BackendTLSPolicy and forwarded to the
//! Service in plain HTTP what the policy's owner asked to encrypt.
//! And a redirect haproxy cannot keep behind the routes before it within its policy budget is
//! a dropped rule on its route's status, until the routes before it shrink.

use crate::controller_gateway_routers::{Built, GW_API, eventually, fake_with, routed, sim_gateway_routers, start};
use kuryr_l7_router::gateway::naming::load_balancer_name;
use serde_json::{Value, json};

/// A BackendTLSPolicy on shop/cart: the route to it gets `ResolvedRefs: False`,
/// `UnsupportedProtocol`, naming the policy; its Gateway's router has no member of cart (the
/// rule answers 500); the policy deleted, the route is resolved and served again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_route_to_a_service_with_a_backend_tls_policy_is_refused_not_served_in_plain_http() {
    let fake = fake_with(&["web"]);
    fake.put(
        "backendtlspolicies",
        json!({"apiVersion": GW_API, "kind": "BackendTLSPolicy", "metadata": {"name": "cart-tls", "namespace": "shop"},
               "spec": {"targetRefs": [{"group": "", "kind": "Service", "name": "cart"}],
                        "validation": {"hostname": "cart.shop.svc", "wellKnownCACertificates": "System"}}}),
    );
    let built = Built::default();
    let running = start(&fake, sim_gateway_routers(built.clone(), vec![])).await;
    let resolved = |fake: &crate::support::fake_api::Fake| -> Option<(String, String, String)> {
        let r = fake.get(&format!("{GW_API}/httproutes"), "shop", "store-web")?;
        let c =
            r["status"]["parents"][0]["conditions"].as_array()?.iter().find(|c| c["type"] == "ResolvedRefs")?.clone();
        let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
        Some((s(&c["status"]), s(&c["reason"]), s(&c["message"])))
    };
    let (_, reason, message) =
        eventually("ResolvedRefs False", 20, || resolved(&fake).filter(|c| c.0 == "False")).await;
    assert_eq!(reason, "UnsupportedProtocol");
    assert!(message.contains("BackendTLSPolicy shop/cart-tls asks for TLS to Service shop/cart"), "{message}");
    let sim = eventually("the router built", 20, || {
        built.sims.lock().unwrap().get(&load_balancer_name("shop", "web")).map(|s| s.2.clone())
    })
    .await;
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    let (_, members) = routed(&sim.lock().unwrap());
    assert!(!members.iter().any(|m| m == "10.0.0.5"), "cart's endpoint is no member: {members:?}");

    fake.remove(&format!("{GW_API}/backendtlspolicies"), "shop", "cart-tls");
    eventually("resolved again", 20, || resolved(&fake).filter(|c| c.0 == "True")).await;
    eventually("cart's endpoint served", 20, || {
        let (_, members) = routed(&sim.lock().unwrap());
        members.iter().any(|m| m == "10.0.0.5").then_some(())
    })
    .await;
    running.stop().await;
}

/// HTTPRoute `shop/apps`: `/app` to cart on each of `hosts` exact names (`h0.org`, ...).
fn apps_route(hosts: usize, generation: i64) -> Value {
    let names: Vec<String> = (0..hosts).map(|i| format!("h{i}.org")).collect();
    json!({"apiVersion": GW_API, "kind": "HTTPRoute",
           "metadata": {"name": "apps", "namespace": "shop", "generation": generation,
                        "creationTimestamp": "2026-01-01T00:00:00Z"},
           "spec": {"parentRefs": [{"name": "web"}], "hostnames": names,
                    "rules": [{"matches": [{"path": {"type": "PathPrefix", "value": "/app"}}],
                               "backendRefs": [{"name": "cart", "port": 80}]}]}})
}

/// The condition `kind` (status, reason, message) of route `route` on its parent Gateway `web`.
fn on_web(fake: &crate::support::fake_api::Fake, route: &str, kind: &str) -> Option<(String, String, String)> {
    let r = fake.get(&format!("{GW_API}/httproutes"), "shop", route)?;
    let parent = r["status"]["parents"].as_array()?.iter().find(|p| p["parentRef"]["name"] == "web")?.clone();
    let c = parent["conditions"].as_array()?.iter().find(|c| c["type"] == kind)?.clone();
    let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
    Some((s(&c["status"]), s(&c["reason"]), s(&c["message"])))
}

/// (redirect policies to secure.example.org, forwarding policies with a `h<n>.org` host rule)
/// of the Gateway's router as the simulated Octavia holds them.
fn written(sim: &kuryr_l7_router::driver::sim::Simulator) -> (usize, usize) {
    let policies = &sim.router.policies;
    let redirects = policies
        .iter()
        .filter(|p| p.redirect_prefix.iter().chain(&p.redirect_url).any(|r| r.contains("secure.example.org")));
    let forwards = policies.iter().filter(|p| {
        p.redirect_prefix.is_none()
            && p.redirect_url.is_none()
            && p.rules.iter().any(|r| r.rule_type == "HOST_NAME" && !r.invert && r.value.contains(r"\.org"))
    });
    (redirects.count(), forwards.count())
}

/// An any-host http→https redirect (`shop/to-https`) behind the forwarding routes of 16 exact
/// hosts (store-web's and 15 of `shop/apps`) would need 17 policies to stay behind them, over
/// its budget of 16 (`gateway::redirect_order`): it is not written, and the route that holds it
/// gets `PartiallyInvalid: True` (`UnsupportedValue`, "Dropped Rule(s): ..." naming its rule)
/// on the Gateway while `Accepted: True`; the other routes are written. `apps` edited to 14
/// hosts, the redirect fits (16 policies): it is written, and the condition goes by itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_over_its_policy_budget_is_a_dropped_rule_until_the_routes_before_it_shrink() {
    let fake = fake_with(&["web"]);
    fake.put("httproutes", apps_route(15, 1));
    fake.put(
        "httproutes",
        json!({"apiVersion": GW_API, "kind": "HTTPRoute",
               "metadata": {"name": "to-https", "namespace": "shop", "generation": 1,
                            "creationTimestamp": "2026-01-01T00:00:00Z"},
               "spec": {"parentRefs": [{"name": "web"}],
                        "rules": [{"filters": [{"type": "RequestRedirect",
                                                "requestRedirect": {"scheme": "https", "hostname": "secure.example.org"}}]}]}}),
    );
    let built = Built::default();
    let running = start(&fake, sim_gateway_routers(built.clone(), vec![])).await;

    let (_, reason, message) =
        eventually("to-https partially invalid", 20, || on_web(&fake, "to-https", "PartiallyInvalid")).await;
    assert_eq!(reason, "UnsupportedValue", "{message}");
    assert!(
        message.starts_with(
            "Dropped Rule(s): HTTPRoute shop/to-https: (any host) PathPrefix / (spec.rules[0]) is not served"
        ),
        "{message}"
    );
    assert!(message.contains("more than 16 policies"), "{message}");
    assert_eq!(on_web(&fake, "to-https", "PartiallyInvalid").map(|c| c.0).as_deref(), Some("True"));
    assert_eq!(on_web(&fake, "to-https", "Accepted").map(|c| c.0).as_deref(), Some("True"));
    let apps = eventually("apps accepted", 20, || on_web(&fake, "apps", "Accepted")).await;
    assert_eq!(apps.0, "True", "{apps:?}");
    assert_eq!(on_web(&fake, "apps", "PartiallyInvalid"), None, "the routes before the redirect are served");

    let lb = load_balancer_name("shop", "web");
    let sim = eventually("apps' 15 hosts written", 20, || {
        let sim = built.sims.lock().unwrap().get(&lb)?.2.clone();
        let forwards = written(&sim.lock().unwrap()).1;
        (forwards == 15).then_some(sim)
    })
    .await;
    let (paths, members) = routed(&sim.lock().unwrap());
    assert!(paths.iter().any(|p| p.contains("/cart")), "store-web written: {paths:?}");
    assert!(members.iter().any(|m| m == "10.0.0.5"), "{members:?}");
    assert_eq!(written(&sim.lock().unwrap()).0, 0, "no policy of the refused redirect");

    fake.put("httproutes", apps_route(14, 2));
    eventually("the redirect written behind the 15 hosts", 20, || {
        (written(&sim.lock().unwrap()) == (16, 14)).then_some(())
    })
    .await;
    eventually("to-https no longer partially invalid", 20, || {
        on_web(&fake, "to-https", "Accepted")
            .filter(|a| a.0 == "True" && on_web(&fake, "to-https", "PartiallyInvalid").is_none())
    })
    .await;
    running.stop().await;
}
