//! Workloads shared by the benchmarks (benches/scale.rs, functional/bench.rs): Kubernetes
//! objects shaped like real apps, plus the write counts of the anchor controllers' algorithms.
//! Included with `#[path]`/`mod common;` by each bench, so every item may be unused in one of them.
#![allow(dead_code)]

use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointPort, EndpointSlice};
use k8s_openapi::api::networking::v1::{
    HTTPIngressPath, HTTPIngressRuleValue, Ingress, IngressBackend, IngressClass, IngressClassSpec, IngressRule,
    IngressServiceBackend, IngressSpec, ServiceBackendPort,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kuryr_l7_router::model::DesiredRouter;
use kuryr_l7_router::translate::{CONTROLLER, Inputs};

pub mod mem;

pub const NS: &str = "bench";

fn meta(name: &str) -> ObjectMeta {
    ObjectMeta { namespace: Some(NS.into()), name: Some(name.into()), ..Default::default() }
}

/// Endpoint `e` of Service `s` (generation `g` lets churn hand out fresh addresses).
pub fn ep_ip(s: usize, e: usize, g: usize) -> String {
    let i = s * 64 + e;
    format!("10.{}.{}.{}", 100 + g % 100, (i >> 8) & 255, i & 255)
}

pub fn service(s: usize) -> Service {
    Service {
        metadata: meta(&format!("svc{s}")),
        spec: Some(ServiceSpec {
            ports: Some(vec![ServicePort { name: Some("http".into()), port: 80, ..Default::default() }]),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The one EndpointSlice of Service `s`, with ready endpoints `ips` on port 8080.
pub fn slice(s: usize, ips: &[String]) -> EndpointSlice {
    let mut m = meta(&format!("svc{s}-0"));
    m.labels = Some([("kubernetes.io/service-name".to_string(), format!("svc{s}"))].into());
    EndpointSlice {
        address_type: "IPv4".into(),
        metadata: m,
        ports: Some(vec![EndpointPort { name: Some("http".into()), port: Some(8080), ..Default::default() }]),
        endpoints: ips.iter().map(|ip| Endpoint { addresses: vec![ip.clone()], ..Default::default() }).collect(),
    }
}

/// Ingress `name` with one host and `paths` = (Prefix path, Service index).
pub fn ingress(name: &str, host: &str, paths: &[(&str, usize)]) -> Ingress {
    let backend = |s: usize| IngressBackend {
        service: Some(IngressServiceBackend {
            name: format!("svc{s}"),
            port: Some(ServiceBackendPort { number: Some(80), ..Default::default() }),
        }),
        ..Default::default()
    };
    Ingress {
        metadata: meta(name),
        spec: Some(IngressSpec {
            ingress_class_name: Some("kuryr".into()),
            rules: Some(vec![IngressRule {
                host: Some(host.into()),
                http: Some(HTTPIngressRuleValue {
                    paths: paths
                        .iter()
                        .map(|(p, s)| HTTPIngressPath {
                            path: Some((*p).into()),
                            path_type: "Prefix".into(),
                            backend: backend(*s),
                        })
                        .collect(),
                }),
            }]),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The app workload: `n_ing` Ingresses over `n_svc` Services with `eps` endpoints each. Ingress
/// `i` is `app{i}.example.com` with Prefix `/` → svc(i mod S) (web front) and Prefix `/api` →
/// svc((i + S/2) mod S) (API), so every Service backs several routes, as in real apps.
pub fn apps(n_ing: usize, n_svc: usize, eps: usize) -> Inputs {
    let mut inp = Inputs::default();
    inp.ingress_classes.push(IngressClass {
        metadata: ObjectMeta { name: Some("kuryr".into()), ..Default::default() },
        spec: Some(IngressClassSpec { controller: Some(CONTROLLER.into()), ..Default::default() }),
    });
    for s in 0..n_svc {
        inp.services.push(service(s));
        let ips: Vec<String> = (0..eps).map(|e| ep_ip(s, e, 0)).collect();
        inp.endpoint_slices.push(slice(s, &ips).into());
    }
    for i in 0..n_ing {
        inp.ingresses.push(ingress(
            &format!("ing{i}"),
            &format!("app{i}.example.com"),
            &[("/", i % n_svc), ("/api", (i + n_svc / 2) % n_svc)],
        ));
    }
    inp
}

/// Replace the endpoints of Service `s`.
pub fn set_endpoints(inp: &mut Inputs, s: usize, ips: &[String]) {
    let name = format!("svc{s}-0");
    let sl = inp.endpoint_slices.iter_mut().find(|x| x.metadata.name.as_deref() == Some(&name)).expect("slice");
    *sl = slice(s, ips).into();
}

/// A deterministic burst of `changes` endpoint changes spread round-robin over Services
/// `0..services` (each replaces one endpoint by a fresh address); returns the final endpoint
/// lists of those Services.
pub fn churn(services: usize, eps: usize, changes: usize) -> Vec<Vec<String>> {
    let mut cur: Vec<Vec<String>> = (0..services).map(|s| (0..eps).map(|e| ep_ip(s, e, 0)).collect()).collect();
    for c in 0..changes {
        let s = c % services;
        let k = (c / services) % eps;
        cur[s][k] = ep_ip(s, k, 1 + c / services);
    }
    cur
}

// ------------------------------------------------------------------ counts

/// What the desired router holds, for the bounds.
#[derive(Clone, Copy, Debug, Default)]
pub struct Shape {
    pub policies: usize,
    pub multi_rule_policies: usize,
    pub rules: usize,
    pub pools: usize,
    pub pools_with_members: usize,
    pub members: usize,
}

pub fn shape(d: &DesiredRouter) -> Shape {
    Shape {
        policies: d.policies.len(),
        multi_rule_policies: d.policies.iter().filter(|p| p.rules.len() > 1).count(),
        rules: d.policies.iter().map(|p| p.rules.len()).sum(),
        pools: d.pools.len(),
        pools_with_members: d.pools.values().filter(|p| !p.members.is_empty()).count(),
        members: d.pools.values().map(|p| p.members.len()).sum(),
    }
}

impl Shape {
    /// Writes no one-object-per-write client can avoid on this Octavia (Zed, fully-populated
    /// create unusable): the LB, the listener, each pool, one batch member PUT per non-empty pool,
    /// each policy and each rule (inline rules in a policy create answer 500 on Zed).
    pub fn necessary(&self) -> usize {
        2 + self.pools + self.pools_with_members + self.policies + self.rules
    }
    /// Our design choice on top: multi-rule policies are created disabled and enabled after their
    /// last rule (one extra write each) so a half-built policy never captures a whole host.
    pub fn ours(&self) -> usize {
        self.necessary() + self.multi_rule_policies
    }
}

/// Anchor algorithms, from their code's call pattern (assumptions in docs/benchmarks.md).
///
/// octavia-ingress-controller (cloud-provider-openstack `pkg/ingress`): one load balancer per
/// Ingress; per Ingress: create LB, create listener, then per (host, path): create pool (shared
/// pools are deleted and recreated on every Ingress update), one batch member PUT with the
/// *nodes* (NodePort members), create policy, create HOST_NAME rule, create PATH rule; a wait
/// for ACTIVE after each.
pub fn octavia_ingress_controller_cold(ingress_paths: &[usize]) -> usize {
    ingress_paths.iter().map(|&paths| 2 + paths * (2 + 3)).sum()
}

/// kuryr-kubernetes' L7 router (OCP Route / Ingress handlers): one shared LB + listener; a pool
/// per Service, members created one by one (one write per endpoint), per route one policy then
/// its rules one by one (host, path); a wait for ACTIVE after each.
/// `routes` = (host, path) pairs; each gets a policy, a HOST_NAME rule and a PATH rule.
pub fn kuryr_cold(routes: usize, pools: usize, members: usize) -> usize {
    2 + pools + members + routes * 3
}
