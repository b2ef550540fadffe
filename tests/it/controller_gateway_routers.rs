//! The Gateways' routers through the whole controller (`run_set_with_gateways`) on the FAKE
//! Kubernetes API server (tests/support/fake_api.rs), each Gateway's load balancer an in-memory
//! Octavia (`SimBackend`): a Gateway and its HTTPRoute converge to the Gateway's own load balancer,
//! the Gateway turns Programmed with its address, a Gateway deleted has its load balancer
//! deleted, an endpoint change reaches the Gateway's members at once, and a failing Gateway
//! router holds back neither the Ingress router nor the other Gateways.

use crate::support::eventually;
use crate::support::fake_api;
use eventually::eventually_every;
use fake_api::Fake;

use kuryr_l7_router::controller::gateway::driver::{
    DeleteRouter, GatewayBackends, GatewayRouters, ListGatewayRouters, SpawnGatewayRouter,
};
use kuryr_l7_router::controller::runtime::run_set_with_gateways;
use kuryr_l7_router::controller::writer::{RouterBackend, WriteError, Writer, WriterMetrics};
use kuryr_l7_router::driver::ownership::Ownership;
use kuryr_l7_router::driver::plan::DiffOptions;
use kuryr_l7_router::driver::sim::Simulator;
use kuryr_l7_router::gateway::naming::load_balancer_name;
use kuryr_l7_router::testing::SimBackend;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub(crate) const GW_API: &str = "gateway.networking.k8s.io/v1";
pub(crate) const OURS: &str = "openstack.org/kuryr-l7-router";
/// The pre-created floating IP of the Gateway `static`.
const STATIC_IP: &str = "203.0.113.7";

/// `kubernetes`: more lines of the `[kubernetes]` section (e.g. `host_ownership = True\n`).
fn settings(api_root: &str, token_file: &std::path::Path, kubernetes: &str) -> kuryr_l7_router::config::Settings {
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let text = format!(
        "[kubernetes]\napi_root = {api_root}\ntoken_file = {}\nenable_ingress = True\nleader_election = False\n\
         health_port = {free}\n{kubernetes}\n[neutron_defaults]\nlb_subnet = 3c0f6c8e-1b2d-4c3e-8f9a-0b1c2d3e4f5a\n\n\
         [octavia_defaults]\nl7_router_name = ingress-router\n\n\
         [status_responder]\nservice = kuryr-l7-router/kuryr-status-responder\n\n\
         [neutron]\nauth_url = https://keystone.example.com:5000/v3\nusername = kuryr\npassword = x\nproject_name = service\n",
        token_file.display()
    );
    kuryr_l7_router::config::load_texts(&[("gateway.conf".into(), text)], Vec::new()).unwrap().settings
}

/// A cluster with our GatewayClass, the Service `shop/cart` with one ready endpoint, an Ingress
/// of ours to `cart`, and one Gateway + HTTPRoute (`/cart` to `cart`) per name of `gateways`.
fn cart_slice(ips: &[&str]) -> Value {
    json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
           "metadata": {"name": "cart-abc", "namespace": "shop", "labels": {"kubernetes.io/service-name": "cart"}},
           "addressType": "IPv4", "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
           "endpoints": ips.iter().map(|ip| json!({"addresses": [ip], "conditions": {"ready": true}})).collect::<Vec<_>>()})
}

pub(crate) fn fake_with(gateways: &[&str]) -> Arc<Fake> {
    let fake = Fake::new();
    fake.gateway_api.store(true, Ordering::SeqCst);
    fake.put(
        "gatewayclasses",
        json!({"apiVersion": GW_API, "kind": "GatewayClass", "metadata": {"name": "kuryr", "generation": 1},
               "spec": {"controllerName": OURS}}),
    );
    fake.put(
        "ingressclasses",
        json!({"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass", "metadata": {"name": "kuryr-l7-router"},
               "spec": {"controller": OURS}}),
    );
    fake.put(
        "services",
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "cart", "namespace": "shop"},
               "spec": {"ports": [{"name": "http", "port": 80, "targetPort": 8080}]}}),
    );
    fake.put("endpointslices", cart_slice(&["10.0.0.5"]));
    fake.put(
        "ingresses",
        json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
               "metadata": {"name": "legacy", "namespace": "shop", "creationTimestamp": "2026-01-01T00:00:00Z"},
               "spec": {"ingressClassName": "kuryr-l7-router", "rules": [{"host": "legacy.example.com", "http": {"paths": [
                   {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "cart", "port": {"number": 80}}}}]}}]}}),
    );
    for gw in gateways {
        let mut gateway = json!({"apiVersion": GW_API, "kind": "Gateway",
               "metadata": {"name": gw, "namespace": "shop", "generation": 1},
               "spec": {"gatewayClassName": "kuryr", "listeners": [{"name": "http", "port": 8080, "protocol": "HTTP"}]}});
        if *gw == "static" {
            gateway["spec"]["addresses"] = json!([{"type": "IPAddress", "value": STATIC_IP}]);
        }
        if *gw == "any-address" {
            gateway["spec"]["addresses"] = json!([{"type": "IPAddress"}]); // GatewayAddressEmpty
        }
        // GatewayPort8080: HTTP listeners on 80 and 8080, the route on the 8080 one.
        let mut parent = json!({"name": gw});
        if *gw == "two-ports" {
            gateway["spec"]["listeners"] = json!([{"name": "http", "port": 80, "protocol": "HTTP"},
                                                  {"name": "alt", "port": 8080, "protocol": "HTTP"}]);
            parent["sectionName"] = json!("alt");
        }
        fake.put("gateways", gateway);
        fake.put(
            "httproutes",
            json!({"apiVersion": GW_API, "kind": "HTTPRoute",
                   "metadata": {"name": format!("store-{gw}"), "namespace": "shop", "generation": 1,
                                "creationTimestamp": "2026-01-01T00:00:00Z"},
                   "spec": {"parentRefs": [parent], "hostnames": [format!("{gw}.example.com")],
                            "rules": [{"matches": [{"path": {"type": "PathPrefix", "value": "/cart"}}],
                                       "backendRefs": [{"name": "cart", "port": 80}]}]}}),
        );
    }
    fake
}

/// A Gateway router built: its port, its static address and its simulated Octavia.
pub(crate) type BuiltRouter = (u16, Option<std::net::IpAddr>, Arc<Mutex<Simulator>>);

/// What a test runs on each load-balancer delete, given its name.
pub(crate) type OnDelete = Box<dyn Fn(&str) + Send>;

/// A router's more HTTP listeners as last synced: their policies' names by port.
pub(crate) type MoreHttp = Arc<Mutex<BTreeMap<u16, Vec<String>>>>;

/// What the test's Gateway routers did: each built router's simulated Octavia and port by
/// load-balancer name, and the load balancers deleted.
#[derive(Clone, Default)]
pub(crate) struct Built {
    pub(crate) sims: Arc<Mutex<BTreeMap<String, BuiltRouter>>>,
    /// Each built router's more HTTP listeners as last synced (see `SimBackend::more_http`).
    pub(crate) more_http: Arc<Mutex<BTreeMap<String, MoreHttp>>>,
    pub(crate) deleted: Arc<Mutex<Vec<String>>>,
    /// Every router built, by load-balancer name, in order (a rebuild is a second entry).
    pub(crate) spawned: Arc<Mutex<Vec<String>>>,
    /// What every router's Sync reports on hold while set (see `SimBackend::held`).
    pub(crate) held: Arc<Mutex<Vec<kuryr_l7_router::driver::report::WriteFailure>>>,
    /// Called on each delete, before the load balancer goes (e.g. to look at the Gateway then).
    pub(crate) on_delete: Arc<Mutex<Option<OnDelete>>>,
    /// `[octavia_defaults] gateway_kept_grace` of the routers (None: never).
    pub(crate) kept_grace: Option<Duration>,
    /// The Gateway limits of the routers (`[octavia_defaults] gateways_per_*`).
    pub(crate) limits: kuryr_l7_router::config::GatewayLimits,
    /// What each router passes before its first Sync (None: nothing).
    pub(crate) admit: Option<kuryr_l7_router::controller::gateway::admission::AdmitGateway>,
}

/// Gateway routers on the simulator: router N built answers 172.24.4.(100+N), or its static
/// address as the driver puts that floating IP on the VIP; the routers named in `failing` fail
/// every Sync. No load balancer is listed at start.
pub(crate) fn sim_gateway_routers(built: Built, failing: Vec<String>) -> GatewayRouters {
    sim_gateway_routers_listing(built, failing, None)
}

/// [`sim_gateway_routers`] whose Octavia lists `listed` as our Gateway load balancers at start.
fn sim_gateway_routers_listing(built: Built, failing: Vec<String>, listed: Option<Vec<String>>) -> GatewayRouters {
    Box::new(move |_, gate, _| {
        let (kept_grace, limits, admit) = (built.kept_grace, built.limits.clone(), built.admit.clone());
        let list = listed.map(|names| {
            Arc::new(move || {
                let names = names.clone();
                Box::pin(async move { Ok(names) }) as futures::future::BoxFuture<'static, _>
            }) as ListGatewayRouters
        });
        let count = Arc::new(std::sync::atomic::AtomicU8::new(0));
        let spawn = Box::new(move |name: &str, port: u16, fixed: Option<std::net::IpAddr>| {
            let n = count.fetch_add(1, Ordering::SeqCst);
            let address = fixed.or_else(|| format!("172.24.4.{}", 100 + n).parse().ok());
            let mut sim =
                SimBackend::new(DiffOptions { ownership: Ownership::new("test"), health_monitor: None }, address);
            sim.set_write_gate(gate.clone());
            if failing.iter().any(|f| f == name) {
                *sim.fail.lock().unwrap() = Some(WriteError::new("router_error", "the load balancer is in ERROR"));
            }
            sim.held = built.held.clone();
            built.spawned.lock().unwrap().push(name.to_string());
            built.sims.lock().unwrap().insert(name.to_string(), (port, fixed, sim.state.clone()));
            built.more_http.lock().unwrap().insert(name.to_string(), sim.more_http.clone());
            let writer = Writer::spawn(sim, WriterMetrics::default());
            let (deleted, sims, name) = (built.deleted.clone(), built.sims.clone(), name.to_string());
            let on_delete = built.on_delete.clone();
            let delete: DeleteRouter = Arc::new(move || {
                if let Some(f) = on_delete.lock().unwrap().as_ref() {
                    f(&name);
                }
                deleted.lock().unwrap().push(name.clone());
                sims.lock().unwrap().remove(&name);
                Box::pin(async { Ok(()) })
            });
            Ok((writer, delete))
        }) as SpawnGatewayRouter;
        GatewayBackends { spawn, list, kept_grace, limits, admit }
    })
}

pub(crate) struct Running {
    ingress_sim: Arc<Mutex<Simulator>>,
    stop: tokio::sync::oneshot::Sender<()>,
    run: tokio::task::JoinHandle<Result<(), kuryr_l7_router::controller::ControllerError>>,
    _dir: tempfile::TempDir,
}

pub(crate) async fn start(fake: &Arc<Fake>, gateways: GatewayRouters) -> Running {
    start_with(fake, gateways, "").await
}

/// [`start`] with more lines of the `[kubernetes]` section (`kubernetes`).
pub(crate) async fn start_with(fake: &Arc<Fake>, gateways: GatewayRouters, kubernetes: &str) -> Running {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let (api_root, _) = fake.serve().await;
    let (dir, token) = crate::support::fake_settings::token_file();
    let ownership = Ownership::new("test");
    let sim = SimBackend::new(DiffOptions { ownership, health_monitor: None }, "172.24.4.1".parse().ok());
    let ingress_sim = sim.state.clone();
    let once = Mutex::new(Some(sim));
    let backends = move |_: &_, _: &_, _: u32| {
        once.lock().unwrap().take().ok_or(kuryr_l7_router::controller::ControllerError::ClientConfig("one".into()))
    };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let run = tokio::spawn(run_set_with_gateways(
        settings(&api_root, &token, kubernetes),
        backends,
        Some(gateways),
        async move {
            let _ = stopped.await;
        },
    ));
    Running { ingress_sim, stop, run, _dir: dir }
}

impl Running {
    /// The Ingress router's simulated Octavia.
    pub(crate) fn ingress_sim(&self) -> Arc<Mutex<Simulator>> {
        self.ingress_sim.clone()
    }

    pub(crate) async fn stop(self) {
        let _ = self.stop.send(());
        tokio::time::timeout(Duration::from_secs(30), self.run).await.unwrap().unwrap().unwrap();
    }
}

pub(crate) async fn eventually<T>(what: &str, secs: u64, f: impl FnMut() -> Option<T>) -> T {
    eventually_every(what, secs, Duration::from_millis(25), f).await
}

/// The Gateway's `Programmed` condition (status/reason/message) and its addresses.
pub(crate) fn programmed(fake: &Fake, gw: &str) -> Option<(String, String, String, Value)> {
    let st = fake.get(&format!("{GW_API}/gateways"), "shop", gw)?["status"].clone();
    let c = st["conditions"].as_array()?.iter().find(|c| c["type"] == "Programmed")?.clone();
    let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
    Some((s(&c["status"]), s(&c["reason"]), s(&c["message"]), st["addresses"].clone()))
}

/// The (path rule values, pool member addresses) the policies of `sim` route.
pub(crate) fn routed(sim: &Simulator) -> (Vec<String>, Vec<String>) {
    let rules = sim.router.policies.iter().flat_map(|p| p.rules.iter()).filter(|r| r.rule_type == "PATH");
    let members = sim.router.pools.iter().flat_map(|p| p.members.iter()).map(|m| m.address.to_string());
    (rules.map(|r| r.value.clone()).collect(), members.collect())
}

/// A Gateway and its HTTPRoute converge to the Gateway's own load balancer (its hashed name, the
/// Gateway's port, the route's policy to the Service's endpoint), the Gateway turns Programmed
/// with that load balancer's address; the Gateway deleted, its load balancer is deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_gets_its_own_load_balancer_and_loses_it_when_deleted() {
    let fake = fake_with(&["web"]);
    let built = Built::default();
    let running = start(&fake, sim_gateway_routers(built.clone(), vec![])).await;
    let lb = load_balancer_name("shop", "web");
    // Converged: its policy and its pool's member (the members may come in a later write than
    // the policies: waiting for the policies alone raced under load).
    let (port, sim) = eventually("the Gateway's router converged", 10, || {
        let sims = built.sims.lock().unwrap();
        let (port, _, sim) = sims.get(&lb)?;
        let (paths, members) = routed(&sim.lock().unwrap());
        (!paths.is_empty() && !members.is_empty()).then(|| (*port, sim.clone()))
    })
    .await;
    assert_eq!(port, 8080, "the router listens on the Gateway's port");
    let (paths, members) = routed(&sim.lock().unwrap());
    assert!(paths.iter().any(|p| p.contains("/cart")), "the route's path rule: {paths:?}");
    assert_eq!(members, ["10.0.0.5"], "the route's backend");
    let (status, reason, _, addresses) =
        eventually("Programmed True", 10, || programmed(&fake, "web").filter(|p| p.0 == "True")).await;
    assert_eq!((status.as_str(), reason.as_str()), ("True", "Programmed"));
    assert_eq!(addresses, json!([{"type": "IPAddress", "value": "172.24.4.100"}]));

    fake.remove(&format!("{GW_API}/gateways"), "shop", "web");
    eventually("the Gateway's load balancer deleted", 10, || built.deleted.lock().unwrap().contains(&lb).then_some(()))
        .await;
    assert_eq!(*built.deleted.lock().unwrap(), std::slice::from_ref(&lb), "only the deleted Gateway's load balancer");
    running.stop().await;
}

/// An EndpointSlice change of a Service a Gateway route uses reaches that Gateway's load balancer
/// at once (a Members job on its writer), not on the routers' periodic pass (60 s; 10 s before).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endpoint_change_reaches_the_gateway_members_at_once() {
    let fake = fake_with(&["web"]);
    let built = Built::default();
    let running = start(&fake, sim_gateway_routers(built.clone(), vec![])).await;
    let lb = load_balancer_name("shop", "web");
    let sim = eventually("the Gateway's router converged", 10, || {
        let sims = built.sims.lock().unwrap();
        let (_, _, sim) = sims.get(&lb)?;
        (routed(&sim.lock().unwrap()).1 == ["10.0.0.5"]).then(|| sim.clone())
    })
    .await;
    let changed = std::time::Instant::now();
    fake.put("endpointslices", cart_slice(&["10.0.0.5", "10.0.0.6"]));
    eventually("the new endpoint on the Gateway's pool", 3, || {
        (routed(&sim.lock().unwrap()).1 == ["10.0.0.5", "10.0.0.6"]).then_some(())
    })
    .await;
    eprintln!("endpoint change to Gateway member: {:?}", changed.elapsed());
    fake.put("endpointslices", cart_slice(&["10.0.0.6"]));
    eventually("the old endpoint gone", 3, || (routed(&sim.lock().unwrap()).1 == ["10.0.0.6"]).then_some(())).await;
    running.stop().await;
}

/// The load balancer of a Gateway deleted while no controller ran (listed by our tags and the
/// `kuryr-gw-` prefix at start) is deleted once the Gateways are known; the live Gateway's is
/// kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_load_balancer_of_a_gateway_deleted_meanwhile_is_collected_at_start() {
    let fake = fake_with(&["web"]);
    let built = Built::default();
    let (web, gone) = (load_balancer_name("shop", "web"), load_balancer_name("shop", "gone"));
    let listed = Some(vec![gone.clone(), web.clone()]);
    let running = start(&fake, sim_gateway_routers_listing(built.clone(), vec![], listed)).await;
    eventually("the orphan deleted", 10, || built.deleted.lock().unwrap().contains(&gone).then_some(())).await;
    eventually("web: Programmed True", 10, || programmed(&fake, "web").filter(|p| p.0 == "True")).await;
    assert_eq!(*built.deleted.lock().unwrap(), [gone], "only the load balancer whose Gateway is gone");
    running.stop().await;
}

/// A Gateway whose router fails gets Programmed=False (NoResources, naming the error) and an
/// Event, while the other Gateway and the Ingress router converge.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_gateway_router_blocks_neither_the_ingresses_nor_other_gateways() {
    let fake = fake_with(&["broken", "web"]);
    let built = Built::default();
    let broken = load_balancer_name("shop", "broken");
    let running = start(&fake, sim_gateway_routers(built.clone(), vec![broken])).await;
    let (_, reason, message, _) =
        eventually("broken: Programmed False", 10, || programmed(&fake, "broken").filter(|p| p.1 == "NoResources"))
            .await;
    assert_eq!(reason, "NoResources");
    assert!(message.contains("router_error") && message.contains("ERROR"), "{message}");
    eventually("web: Programmed True", 10, || programmed(&fake, "web").filter(|p| p.0 == "True")).await;
    eventually("the Ingress router converged", 10, || {
        let sim = running.ingress_sim.lock().unwrap();
        sim.router.policies.iter().flat_map(|p| p.rules.iter()).any(|r| r.value.contains("legacy")).then_some(())
    })
    .await;
    let event = eventually("an Event on the broken Gateway", 10, || {
        fake.writes().into_iter().find(|w| w.path.contains("/events") && w.body["regarding"]["name"] == "broken")
    })
    .await;
    assert_eq!(event.body["reason"], "NoResources", "{}", event.body);
    assert!(built.deleted.lock().unwrap().is_empty(), "nothing deleted");
    running.stop().await;
}

/// A Gateway with `spec.addresses` (StaticAddresses): its router is built with that floating IP,
/// and the Gateway's status reports it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_with_a_static_address_is_served_on_it() {
    let fake = fake_with(&["static"]);
    let built = Built::default();
    let running = start(&fake, sim_gateway_routers(built.clone(), vec![])).await;
    let (_, _, _, addresses) =
        eventually("Programmed True", 10, || programmed(&fake, "static").filter(|p| p.0 == "True")).await;
    assert_eq!(addresses, json!([{"type": "IPAddress", "value": STATIC_IP}]));
    let lb = load_balancer_name("shop", "static");
    let fixed = built.sims.lock().unwrap().get(&lb).map(|b| b.1);
    assert_eq!(fixed, Some(STATIC_IP.parse().ok()), "the router is built with the Gateway's floating IP");
    running.stop().await;
}

/// GatewayAddressEmpty: an IPAddress entry without a value asks for any address. The router is
/// built without a static floating IP (one is allocated, as without `spec.addresses`), and the
/// Gateway is Programmed with the load balancer's address in its status.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_asking_for_an_address_without_a_value_gets_one_allocated() {
    let fake = fake_with(&["any-address"]);
    let built = Built::default();
    let running = start(&fake, sim_gateway_routers(built.clone(), vec![])).await;
    let (_, _, _, addresses) =
        eventually("Programmed True", 10, || programmed(&fake, "any-address").filter(|p| p.0 == "True")).await;
    let values: Vec<&str> = addresses.as_array().unwrap().iter().filter_map(|a| a["value"].as_str()).collect();
    assert_eq!(values.len(), 1, "{addresses}");
    assert!(values[0].parse::<std::net::IpAddr>().is_ok(), "{addresses}");
    let lb = load_balancer_name("shop", "any-address");
    let fixed = built.sims.lock().unwrap().get(&lb).map(|b| b.1);
    assert_eq!(fixed, Some(None), "no static floating IP: one is allocated");
    running.stop().await;
}

/// A Gateway with HTTP listeners on 80 and 8080 (GatewayPort8080) is one router: its HTTP
/// listener on 80, a second HTTP listener on 8080 carrying the route attached to the 8080
/// listener (and only there); the class declares GatewayPort8080.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_on_80_and_8080_is_one_router_with_a_listener_per_port() {
    let fake = fake_with(&["two-ports"]);
    let built = Built::default();
    let running = start(&fake, sim_gateway_routers(built.clone(), vec![])).await;
    let lb = load_balancer_name("shop", "two-ports");
    let on_8080 = eventually("the 8080 listener's route synced", 10, || {
        let more = built.more_http.lock().unwrap().get(&lb)?.lock().unwrap().clone();
        more.get(&8080).filter(|p| !p.is_empty()).cloned()
    })
    .await;
    assert_eq!(on_8080.len(), 1, "{on_8080:?}");
    assert!(on_8080[0].contains("store-two-ports"), "{on_8080:?}");
    let (port, _, sim) = built.sims.lock().unwrap().get(&lb).cloned().expect("one router for the Gateway");
    assert_eq!(port, 80, "the router's HTTP listener is on the lowest port");
    assert_eq!(built.sims.lock().unwrap().len(), 1, "one load balancer");
    let (paths, _) = routed(&sim.lock().unwrap());
    assert!(!paths.iter().any(|p| p.contains("/cart")), "the 80 listener does not serve the 8080 route: {paths:?}");
    eventually("Programmed True", 10, || programmed(&fake, "two-ports").filter(|p| p.0 == "True")).await;
    let class = eventually("the class's features", 10, || {
        let st = fake.get(&format!("{GW_API}/gatewayclasses"), "", "kuryr")?["status"].clone();
        st["supportedFeatures"].as_array().cloned()
    })
    .await;
    assert!(class.iter().any(|f| f["name"] == "GatewayPort8080"), "{class:?}");
    running.stop().await;
}
