//! Translation benchmark: 10,000 Ingresses over 1,000 Services with 100,000 endpoints
//! (100 per Service, in slices of 50, spread over 3 zones). std::time only, no harness.
//! Run: `cargo bench --bench translate`. Without `--bench` in argv (as in `cargo test
//! --all-targets`) it runs a smoke-size workload (20 Ingresses) so the test suite stays fast.
//! Results go to docs/benchmarks.md ("Translation").

use std::collections::BTreeMap;
use std::time::Instant;

use k8s_openapi::api::core::v1::{Node, Service, ServicePort, ServiceSpec};
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointPort, EndpointSlice};
use k8s_openapi::api::networking::v1::{
    HTTPIngressPath, HTTPIngressRuleValue, Ingress, IngressBackend, IngressClass, IngressClassSpec, IngressRule,
    IngressServiceBackend, IngressSpec, ServiceBackendPort,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kuryr_l7_router::translate::members::index_nodes;
use kuryr_l7_router::translate::slices::CompactSlice;
use kuryr_l7_router::translate::*;

const EPS_PER_SERVICE: usize = 100;

fn meta(ns: &str, name: &str) -> ObjectMeta {
    ObjectMeta { namespace: Some(ns.into()), name: Some(name.into()), ..Default::default() }
}

fn inputs(ingresses: usize, services: usize) -> Inputs {
    let mut inp = Inputs::default();
    inp.ingress_classes.push(IngressClass {
        metadata: ObjectMeta { name: Some("kuryr".into()), ..Default::default() },
        spec: Some(IngressClassSpec { controller: Some(CONTROLLER.into()), ..Default::default() }),
    });
    for s in 0..services {
        let mut svc = Service {
            metadata: meta("bench", &format!("svc{s}")),
            spec: Some(ServiceSpec {
                ports: Some(vec![ServicePort { name: Some("http".into()), port: 80, ..Default::default() }]),
                ..Default::default()
            }),
            ..Default::default()
        };
        if s % 2 == 0 {
            svc.spec.as_mut().unwrap().traffic_distribution = Some("PreferClose".into());
        }
        inp.services.push(svc);
        for chunk in 0..EPS_PER_SERVICE / 50 {
            let mut m = meta("bench", &format!("svc{s}-{chunk}"));
            m.labels = Some([("kubernetes.io/service-name".to_string(), format!("svc{s}"))].into());
            inp.endpoint_slices.push(
                EndpointSlice {
                    address_type: "IPv4".into(),
                    metadata: m,
                    ports: Some(vec![EndpointPort {
                        name: Some("http".into()),
                        port: Some(8080),
                        ..Default::default()
                    }]),
                    endpoints: (0..50)
                        .map(|e| {
                            let i = s * EPS_PER_SERVICE + chunk * 50 + e;
                            Endpoint {
                                addresses: vec![format!("10.{}.{}.{}", i >> 16, (i >> 8) & 255, i & 255)],
                                zone: Some(format!("zone-{}", i % 3)),
                                node_name: Some(format!("node{}", i % 300)),
                                ..Default::default()
                            }
                        })
                        .collect(),
                }
                .into(),
            );
        }
    }
    for n in 0..300 {
        inp.nodes.push(Node { metadata: meta("", &format!("node{n}")), ..Default::default() });
    }
    let backend = |s: usize| IngressBackend {
        service: Some(IngressServiceBackend {
            name: format!("svc{s}"),
            port: Some(ServiceBackendPort { number: Some(80), ..Default::default() }),
        }),
        ..Default::default()
    };
    for i in 0..ingresses {
        let path = |p: &str, t: &str| HTTPIngressPath {
            path: Some(p.into()),
            path_type: t.into(),
            backend: backend(i % services),
        };
        inp.ingresses.push(Ingress {
            metadata: meta("bench", &format!("ing{i}")),
            spec: Some(IngressSpec {
                ingress_class_name: Some("kuryr".into()),
                rules: Some(vec![IngressRule {
                    host: Some(if i % 10 == 0 { format!("*.w{i}.example.com") } else { format!("h{i}.example.com") }),
                    http: Some(HTTPIngressRuleValue {
                        paths: vec![path("/", "Prefix"), path("/api/v1", "Prefix"), path("/healthz", "Exact")],
                    }),
                }]),
                ..Default::default()
            }),
            ..Default::default()
        });
    }
    inp
}

fn main() {
    // `cargo test --all-targets` runs this binary too, without `--bench`: keep that run tiny.
    let full = std::env::args().any(|a| a == "--bench");
    let (ingresses, services, iters) = if full { (10_000, 1_000, 10_000) } else { (20, 2, 10) };
    let t = Instant::now();
    let inp = inputs(ingresses, services);
    println!("generated {} ingresses, {} slices in {:?}", inp.ingresses.len(), inp.endpoint_slices.len(), t.elapsed());
    let opts = TranslateOptions { router_zone: Some("zone-0".into()), ..Default::default() };
    let mut best = f64::MAX;
    let mut router = None;
    for _ in 0..5 {
        let t = Instant::now();
        router = Some(translate(&inp, &opts));
        best = best.min(t.elapsed().as_secs_f64());
    }
    let router = router.unwrap();
    let members: usize = router.pools.values().map(|p| p.members.len()).sum();
    println!(
        "translate: best of 5 {:.1} ms ({} policies, {} pools, {} members, {} warnings)",
        best * 1e3,
        router.policies.len(),
        router.pools.len(),
        members,
        router.warnings.len()
    );

    // Incremental: one Service's members after one of its slices changed.
    let svc = &inp.services[0];
    let sp = &svc.spec.as_ref().unwrap().ports.as_ref().unwrap()[0];
    let nodes = index_nodes(&inp.nodes);
    let slices: BTreeMap<String, CompactSlice> =
        inp.endpoint_slices[..2].iter().map(|s| (s.metadata.name.clone().unwrap(), s.clone())).collect();
    let mut cache = SliceCache::new(IpFamily::V4);
    for s in slices.values() {
        cache.upsert(s);
    }
    let t = Instant::now();
    for _ in 0..iters {
        cache.upsert(&slices["svc0-1"]);
        std::hint::black_box(cache.members(svc, sp, &nodes, &opts));
    }
    println!(
        "incremental: one slice upsert + one pool's members: {:.1} µs",
        t.elapsed().as_secs_f64() * 1e6 / iters as f64
    );
    let t = Instant::now();
    for _ in 0..iters {
        std::hint::black_box(pool_members(svc, sp, &slices, &nodes, &opts));
    }
    println!("pool_members (from scratch, 100 endpoints): {:.1} µs", t.elapsed().as_secs_f64() * 1e6 / iters as f64);
}
