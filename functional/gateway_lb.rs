//! One Gateway's load balancer on the real Octavia: the controller (`run_set_with_gateways`, the
//! real backends and Gateway routers) with the Kubernetes side on the fake API server. Included by
//! `functional/leader.rs` (same fake server, no test binary of its own):
//! `KURYR_FUNCTIONAL=1 cargo test --test functional_leader -- gateway_lb --nocapture`.
//!
//! Its cluster tag is its own (`gw2-…`): the controller collects the `kuryr-gw-*` load balancers
//! of its cluster whose Gateway is gone at start, so it must never see another run's.

use super::common::*;
use super::fake_api::Fake;
use kuryr_l7_router::controller::gateway::driver::octavia_gateway_routers;
use kuryr_l7_router::controller::runtime::{octavia_backends, run_set_with_gateways};
use kuryr_l7_router::driver::WritePermits;
use kuryr_l7_router::gateway::naming::load_balancer_name;
use kuryr_l7_router::openstack::ListQuery;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

const GW_API: &str = "gateway.networking.k8s.io/v1";

fn settings(api: &str, token: &std::path::Path, name: &str) -> kuryr_l7_router::config::Settings {
    let stack = std::env::var("KURYR_CONFIG_FILE").expect("KURYR_CONFIG_FILE: the stack's kuryr.conf");
    let ours = format!(
        "[kubernetes]\napi_root = {api}\ntoken_file = {}\nleader_election = False\nhealth_port = {}\n\
         ingress_class = {name}\ncluster_name = {name}\n\
         [octavia_defaults]\nl7_router_name = {name}\n",
        token.display(),
        std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
    );
    let texts = [(stack.clone(), std::fs::read_to_string(&stack).unwrap()), ("gw2.conf".into(), ours)];
    kuryr_l7_router::config::load_texts(&texts, Vec::new()).unwrap().settings
}

/// Our GatewayClass, the Gateway `shop/<gateway>` (HTTP on 80) and an HTTPRoute `/cart` to the
/// Service `cart` with one ready endpoint. No Ingress.
fn fixtures(fake: &Fake, gateway: &str) {
    fake.gateway_api.store(true, std::sync::atomic::Ordering::SeqCst);
    fake.put(
        "gatewayclasses",
        json!({"apiVersion": GW_API, "kind": "GatewayClass", "metadata": {"name": "kuryr", "generation": 1},
               "spec": {"controllerName": "openstack.org/kuryr-l7-router"}}),
    );
    fake.put(
        "services",
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "cart", "namespace": "shop"},
               "spec": {"ports": [{"name": "http", "port": 80, "targetPort": 8080}]}}),
    );
    fake.put(
        "endpointslices",
        json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
               "metadata": {"name": "cart-abc", "namespace": "shop", "labels": {"kubernetes.io/service-name": "cart"}},
               "addressType": "IPv4", "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
               "endpoints": [{"addresses": ["10.0.0.61"], "conditions": {"ready": true}}]}),
    );
    fake.put(
        "gateways",
        json!({"apiVersion": GW_API, "kind": "Gateway", "metadata": {"name": gateway, "namespace": "shop", "generation": 1},
               "spec": {"gatewayClassName": "kuryr", "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}]}}),
    );
    fake.put(
        "httproutes",
        json!({"apiVersion": GW_API, "kind": "HTTPRoute",
               "metadata": {"name": "store", "namespace": "shop", "generation": 1, "creationTimestamp": "2026-01-01T00:00:00Z"},
               "spec": {"parentRefs": [{"name": gateway}], "hostnames": ["cart.example.com"],
                        "rules": [{"matches": [{"path": {"type": "PathPrefix", "value": "/cart"}}],
                                   "backendRefs": [{"name": "cart", "port": 80}]}]}}),
    );
}

/// The Gateway's `Programmed` status and its first address, once `Programmed: True`.
fn programmed(fake: &Fake, gateway: &str) -> Option<String> {
    let st = fake.get(&format!("{GW_API}/gateways"), "shop", gateway)?["status"].clone();
    let c = st["conditions"].as_array()?.iter().find(|c| c["type"] == "Programmed")?.clone();
    (c["status"] == "True").then(|| st["addresses"][0]["value"].as_str().map(String::from))?
}

/// A Gateway and its HTTPRoute through the controller: the Gateway's own load balancer (its
/// hashed name) routes the route's path to the endpoint, the Gateway turns `Programmed: True`
/// with that load balancer's floating IP as its address; the Gateway deleted, its load balancer
/// and floating IP are deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gateway_lb_programmed_with_its_floating_ip_and_deleted_with_its_gateway() {
    if !enabled() {
        return;
    }
    // `RUST_LOG=info` shows the controller's logs.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    let h = Harness::start("lb").await;
    let (fake, gateway, gw_router) = (&h.fake, h.gateway.as_str(), &h.gw_router);
    let started = Instant::now();
    // The VIP port: the local stack's noop network driver leaves it after the delete.
    let vip_port = std::sync::Mutex::new(None::<String>);
    let body = async {
        let address = wait_programmed(fake, gateway, gw_router, 80).await;
        eprintln!("Gateway Programmed in {:.1} s at {address}", started.elapsed().as_secs_f64());
        let lb = gw_router.find().await.unwrap().expect("the Gateway's load balancer exists");
        *vip_port.lock().unwrap() = lb.vip_port_id.clone();
        let q = ListQuery { extra: vec![("port_id".into(), lb.vip_port_id.clone().unwrap())], ..ListQuery::default() };
        let fips: BTreeSet<String> = gw_router
            .neutron()
            .list_floating_ips(&q)
            .await
            .unwrap()
            .into_iter()
            .map(|f| f.floating_ip_address)
            .collect();
        assert_eq!(fips, BTreeSet::from([address.clone()]), "status.addresses = the load balancer's floating IP");
        let actual = read_router(gw_router).await;
        let paths: Vec<&str> = actual
            .policies
            .iter()
            .flat_map(|p| p.rules.iter())
            .filter(|r| r.rule_type == "PATH")
            .map(|r| r.value.as_str())
            .collect();
        assert!(paths.iter().any(|p| p.contains("/cart")), "the route's path rule: {paths:?}");
        let members: Vec<String> =
            actual.pools.iter().flat_map(|p| p.members.iter()).map(|m| m.address.to_string()).collect();
        assert!(members.contains(&"10.0.0.61".to_string()), "the route's endpoint: {members:?}");

        fake.remove(&format!("{GW_API}/gateways"), "shop", gateway);
        let deadline = Instant::now() + Duration::from_secs(60);
        while gw_router.find().await.unwrap().is_some() {
            assert!(Instant::now() < deadline, "the Gateway's load balancer not deleted in 60 s");
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        let left = gw_router.neutron().list_floating_ips(&ListQuery::default()).await.unwrap();
        assert!(!left.iter().any(|f| f.floating_ip_address == address), "its floating IP released");
        eprintln!("Gateway deleted, its load balancer gone, {:.1} s in all", started.elapsed().as_secs_f64());
    };
    let result = futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(body)).await;
    let port = vip_port.lock().unwrap().clone();
    h.finish(port, result).await;
}

fn gateway_status(fake: &Fake, gateway: &str) -> Value {
    fake.get(&format!("{GW_API}/gateways"), "shop", gateway).map(|g| g["status"].clone()).unwrap_or_default()
}

/// A controller (`run_set_with_gateways`, the real driver on the local Octavia) serving the
/// `fixtures` Gateway on a fake API server, with the routers it drives for reading back and
/// cleaning up.
struct Harness {
    fake: std::sync::Arc<Fake>,
    gateway: String,
    gw_router: kuryr_l7_router::driver::Router,
    ingress_router: kuryr_l7_router::driver::Router,
    stop: tokio::sync::oneshot::Sender<()>,
    run: tokio::task::JoinHandle<Result<(), kuryr_l7_router::controller::ControllerError>>,
    _dir: tempfile::TempDir,
}

impl Harness {
    async fn start(label: &str) -> Self {
        // `RUST_LOG=info` shows the controller's logs.
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_test_writer()
            .try_init();
        let name = unique("gw2", label);
        let gateway = format!("{name}-web");
        let fake = Fake::new();
        fixtures(&fake, &gateway);
        let (api, _) = fake.serve().await;
        let dir = tempfile::tempdir().unwrap();
        let token = dir.path().join("token");
        std::fs::write(&token, "fake-token\n").unwrap();
        let s = settings(&api, &token, &name);
        let lb_name = load_balancer_name("shop", &gateway);
        // The same router as the controller's, to read Octavia back and to clean up.
        let gw_router =
            kuryr_l7_router::wiring::gateway_router_observed(&s, None, &lb_name, 80, None, WritePermits::unlimited())
                .unwrap();
        let ingress_router =
            kuryr_l7_router::wiring::router_observed_at(&s, None, 0, WritePermits::unlimited()).unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let gateways = octavia_gateway_routers(&s, WritePermits::unlimited());
        let run = tokio::spawn(run_set_with_gateways(s.clone(), octavia_backends(&s), Some(gateways), async move {
            let _ = stopped.await;
        }));
        Harness { fake, gateway, gw_router, ingress_router, stop, run, _dir: dir }
    }

    /// Stops the controller, deletes what the test left (and the VIP `port`, which the local
    /// stack's noop network driver leaves after a delete), then re-raises the test's panic.
    async fn finish(self, port: Option<String>, result: std::thread::Result<()>) {
        let _ = self.stop.send(());
        let _ = tokio::time::timeout(Duration::from_secs(60), self.run).await;
        cleanup(&self.gw_router).await;
        cleanup(&self.ingress_router).await;
        if let Some(port) = port
            && self.gw_router.neutron().get_port(&port).await.is_ok_and(|p| p.device_owner == "Octavia")
        {
            let _ = self.gw_router.neutron().delete_port(&port).await;
        }
        if let Err(panic) = result {
            std::panic::resume_unwind(panic);
        }
    }
}

/// The Gateway's `Programmed: True` address, waited for up to `secs`.
async fn wait_programmed(fake: &Fake, gateway: &str, gw_router: &kuryr_l7_router::driver::Router, secs: u64) -> String {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(a) = programmed(fake, gateway) {
            return a;
        }
        if Instant::now() >= deadline {
            let lb = gw_router.find().await.map(|l| l.map(|l| (l.name, l.provisioning_status)));
            panic!("the Gateway not Programmed in {secs} s (load balancer: {lb:?}): {}", gateway_status(fake, gateway));
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// The floating IPs on the VIP port of `lb`.
async fn vip_floating_ips(
    gw_router: &kuryr_l7_router::driver::Router,
    lb: &kuryr_l7_router::openstack::octavia::LoadBalancer,
) -> BTreeSet<String> {
    let q = ListQuery { extra: vec![("port_id".into(), lb.vip_port_id.clone().unwrap())], ..ListQuery::default() };
    let fips = gw_router.neutron().list_floating_ips(&q).await.unwrap();
    fips.into_iter().map(|f| f.floating_ip_address).collect()
}

fn finalizers(fake: &Fake, gateway: &str) -> Vec<String> {
    let g = fake.get(&format!("{GW_API}/gateways"), "shop", gateway).unwrap_or_default();
    serde_json::from_value(g["metadata"]["finalizers"].clone()).unwrap_or_default()
}

/// The GatewayClass deleted and created again (a Helm reinstall): the Gateway keeps its load
/// balancer and its floating IP, and is `Programmed` again on the same address. Then the
/// Gateway deleted (a deletionTimestamp, our finalizer holding it): its load balancer and
/// floating IP are deleted before the finalizer is removed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gateway_lb_keeps_its_floating_ip_when_its_class_is_deleted_and_created_again() {
    if !enabled() {
        return;
    }
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    let h = Harness::start("keep").await;
    let (fake, gateway, gw_router) = (&h.fake, h.gateway.as_str(), &h.gw_router);
    let vip_port = std::sync::Mutex::new(None::<String>);
    let class = fake.get(&format!("{GW_API}/gatewayclasses"), "", "kuryr").unwrap();
    let body = async {
        let address = wait_programmed(fake, gateway, gw_router, 80).await;
        let lb = gw_router.find().await.unwrap().expect("the Gateway's load balancer exists");
        *vip_port.lock().unwrap() = lb.vip_port_id.clone();
        assert_eq!(vip_floating_ips(gw_router, &lb).await, BTreeSet::from([address.clone()]));
        let deadline = Instant::now() + Duration::from_secs(20);
        while finalizers(fake, gateway).is_empty() {
            assert!(Instant::now() < deadline, "no finalizer on the Gateway in 20 s");
            tokio::time::sleep(Duration::from_millis(250)).await;
        }

        fake.remove(&format!("{GW_API}/gatewayclasses"), "", "kuryr");
        // Several passes of the Gateway loop and of the router driver.
        tokio::time::sleep(Duration::from_secs(15)).await;
        let kept = gw_router.find().await.unwrap().expect("the load balancer kept while the class is gone");
        assert_eq!(kept.id, lb.id, "the same load balancer");
        assert_eq!(vip_floating_ips(gw_router, &kept).await, BTreeSet::from([address.clone()]), "the same address");

        let mut again = class.clone();
        again["metadata"] = json!({"name": "kuryr", "generation": 1});
        fake.put("gatewayclasses", again);
        let readdressed = wait_programmed(fake, gateway, gw_router, 60).await;
        assert_eq!(readdressed, address, "Programmed again on the same address");
        let same = gw_router.find().await.unwrap().expect("the load balancer");
        assert_eq!(same.id, lb.id, "the same load balancer");
        eprintln!("class deleted and created again: load balancer {} and {address} kept", lb.id);

        let mut deleting = fake.get(&format!("{GW_API}/gateways"), "shop", gateway).unwrap();
        deleting["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        fake.put("gateways", deleting);
        let deadline = Instant::now() + Duration::from_secs(90);
        while !finalizers(fake, gateway).is_empty() {
            assert!(Instant::now() < deadline, "the finalizer not removed in 90 s");
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        assert!(gw_router.find().await.unwrap().is_none(), "the load balancer deleted before the finalizer went");
        let left = gw_router.neutron().list_floating_ips(&ListQuery::default()).await.unwrap();
        assert!(!left.iter().any(|f| f.floating_ip_address == address), "its floating IP released");
        fake.remove(&format!("{GW_API}/gateways"), "shop", gateway);
    };
    let result = futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(body)).await;
    let port = vip_port.lock().unwrap().clone();
    h.finish(port, result).await;
}
