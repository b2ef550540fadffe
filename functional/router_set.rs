//! Scale-out on the real Octavia: the controller (`run_set_with`, the real backends) drives a set
//! of three routers built at a capacity of two policies, the Kubernetes side on the fake API
//! server. Included by `functional/leader.rs` (same fake server, no test binary of its own):
//! `KURYR_FUNCTIONAL=1 cargo test --test functional_leader -- router_set --nocapture`.

use super::common::*;
use super::fake_api::Fake;
use super::routed_hosts::routed_hosts;
use kuryr_l7_router::controller::router_set::PLACEMENT_ANNOTATION;
use kuryr_l7_router::controller::runtime::{octavia_backends, run_set_with};
use kuryr_l7_router::driver::WritePermits;
use kuryr_l7_router::openstack::ListQuery;
use kuryr_l7_router::placement::router_index;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

const NAMES: [&str; 5] = ["ra", "rb", "rc", "rd", "re"];
const ING: &str = "networking.k8s.io/v1/ingresses";

fn settings(api: &str, token: &std::path::Path, base: &str) -> kuryr_l7_router::config::Settings {
    let stack = std::env::var("KURYR_CONFIG_FILE").expect("KURYR_CONFIG_FILE: the stack's kuryr.conf");
    let ours = format!(
        "[kubernetes]\napi_root = {api}\ntoken_file = {}\nleader_election = False\nhealth_port = {}\n\
         ingress_class = kuryr-rset\n\
         [octavia_defaults]\nl7_router_name = {base}\nscale_out = True\nmax_policies_per_router = 2\n",
        token.display(),
        std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
    );
    let texts = [(stack.clone(), std::fs::read_to_string(&stack).unwrap()), ("rset.conf".into(), ours)];
    kuryr_l7_router::config::load_texts(&texts, Vec::new()).unwrap().settings
}

/// One Service on every router (its pool on each), five one-policy Ingresses.
fn fixtures(fake: &Fake) {
    fake.put(
        "ingressclasses",
        json!({"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
               "metadata": {"name": "kuryr-rset"}, "spec": {"controller": "openstack.org/kuryr-l7-router"}}),
    );
    fake.put(
        "services",
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "shop"},
               "spec": {"ports": [{"name": "http", "port": 80, "targetPort": 8080}]}}),
    );
    fake.put(
        "endpointslices",
        json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
               "metadata": {"name": "web-abc", "namespace": "shop", "labels": {"kubernetes.io/service-name": "web"}},
               "addressType": "IPv4", "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
               "endpoints": [{"addresses": ["10.0.0.60"], "conditions": {"ready": true}}]}),
    );
    for name in NAMES {
        fake.put(
            "ingresses",
            json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
                   "metadata": {"name": name, "namespace": "shop", "creationTimestamp": "2026-01-01T00:00:00Z"},
                   "spec": {"ingressClassName": "kuryr-rset", "rules": [{"host": format!("{name}.example.com"), "http": {"paths": [
                       {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]}}),
        );
    }
}

/// (recorded router, status address) of Ingress `name`, once both are written.
fn placed(fake: &Fake, name: &str) -> Option<(String, String)> {
    let ing: Value = fake.get(ING, "shop", name)?;
    let router = ing["metadata"]["annotations"][PLACEMENT_ANNOTATION].as_str()?.to_string();
    let ip = ing["status"]["loadBalancer"]["ingress"][0]["ip"].as_str()?.to_string();
    Some((router, ip))
}

/// Five Ingresses at two policies per router: three load balancers are created, each routes
/// exactly the hosts placed on it, and each Ingress's status is its router's floating IP.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn router_set_three_routers_each_ingress_status_points_at_its_router() {
    if !enabled() {
        return;
    }
    let fake = Fake::new();
    fixtures(&fake);
    let (api, _) = fake.serve().await;
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "fake-token\n").unwrap();
    // The base must not end in -<number>: the letter keeps `unique`'s hex suffix from being one.
    let base = format!("{}x", unique("rset", "set"));
    let s = settings(&api, &token, &base);
    let routers: Vec<_> = (0..3)
        .map(|i| kuryr_l7_router::wiring::router_observed_at(&s, None, i, WritePermits::unlimited()).unwrap())
        .collect();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let started = Instant::now();
    let run = tokio::spawn(run_set_with(s.clone(), octavia_backends(&s), async move {
        let _ = stopped.await;
    }));
    let body = async {
        let deadline = Instant::now() + Duration::from_secs(600);
        let got: BTreeMap<&str, (String, String)> = loop {
            if let Some(all) = NAMES.iter().map(|n| placed(&fake, n).map(|p| (*n, p))).collect::<Option<_>>() {
                break all;
            }
            assert!(Instant::now() < deadline, "not every Ingress placed in 600 s");
            tokio::time::sleep(Duration::from_millis(500)).await;
        };
        eprintln!("every Ingress placed and published in {:.1} s: {got:?}", started.elapsed().as_secs_f64());
        let mut hosts: BTreeMap<u32, BTreeSet<String>> = BTreeMap::new();
        let mut address: BTreeMap<u32, BTreeSet<String>> = BTreeMap::new();
        for (name, (router, ip)) in &got {
            let i = router_index(&base, router).unwrap_or_else(|| panic!("{name}: {router} not of the set"));
            hosts.entry(i).or_default().insert(format!("{name}.example.com"));
            address.entry(i).or_default().insert(ip.clone());
        }
        assert_eq!(hosts.keys().copied().collect::<Vec<_>>(), [0, 1, 2], "three routers: {got:?}");
        let all: BTreeSet<&String> = address.values().flatten().collect();
        assert_eq!(all.len(), 3, "one address per router, none shared: {address:?}");
        for (i, r) in routers.iter().enumerate() {
            let i = i as u32;
            let lb = r.find().await.unwrap().unwrap_or_else(|| panic!("router {} exists", r.spec().name));
            let q =
                ListQuery { extra: vec![("port_id".into(), lb.vip_port_id.clone().unwrap())], ..ListQuery::default() };
            let fips: BTreeSet<String> =
                r.neutron().list_floating_ips(&q).await.unwrap().into_iter().map(|f| f.floating_ip_address).collect();
            assert_eq!(fips, address[&i], "{}: status = its floating IP", r.spec().name);
            let actual = read_router(r).await;
            let routed: BTreeSet<String> = routed_hosts(&actual).collect();
            assert_eq!(routed, hosts[&i], "{} routes exactly its hosts", r.spec().name);
            assert_eq!(actual.pools.len(), 1, "{}: the shared Service's pool", r.spec().name);
        }
    };
    let result = futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(body)).await;
    let _ = stop.send(());
    let _ = tokio::time::timeout(Duration::from_secs(60), run).await;
    for r in &routers {
        cleanup(r).await;
    }
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
}
