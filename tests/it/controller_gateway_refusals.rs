//! Extended features an Octavia router cannot serve are refused by name through the whole
//! controller (fake Kubernetes API server, simulated load balancers): a BackendTLSPolicy on a
//! route's Service. Before, the controller did not read BackendTLSPolicy and forwarded to the
//! Service in plain HTTP what the policy's owner asked to encrypt.

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
