//! Zone-aware weights through the data plane (part of `functional_dataplane`): one router with a
//! zone-aware pool (TAR allocation over zones of unequal CPU), a pool in fallback (an endpoint
//! without zone: even weights) and a pool in a rollout (one endpoint serving while terminating:
//! weight 0). 2,000 requests through each of the first two; the share of each zone measured from
//! the echo servers that answered must be within ±3 percentage points of the share `plan` shows,
//! computed here by the function `plan` uses (`zone::shares_of` over the translated weights). The
//! terminating endpoint must get no request at all.

use super::{converge, with_router};
use kuryr_l7_router::model::{DesiredRouter, Pool};
use kuryr_l7_router::translate::manifest::load_str;
use kuryr_l7_router::translate::zone::shares_of;
use kuryr_l7_router::translate::{Inputs, TranslateOptions, translate};
use std::collections::BTreeMap;
use std::path::Path;

/// Requests per measured pool.
const REQUESTS: usize = 2000;
/// Allowed deviation of a zone's measured share from the planned one, in percentage points.
const TOLERANCE_PP: f64 = 3.0;

fn node(name: &str, zone: &str, cpu: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Node\nmetadata: {{name: {name}, labels: {{topology.kubernetes.io/zone: {zone}}}}}\n\
         status: {{allocatable: {{cpu: '{cpu}'}}, conditions: [{{type: Ready, status: 'True'}}]}}\n"
    )
}

/// A zone-aware Service and its slice; endpoints: (address, zone or "", state: ready|terminating).
fn service(name: &str, eps: &[(&str, &str, &str)]) -> String {
    let eps: String = eps
        .iter()
        .map(|(ip, zone, state)| {
            let zone = if zone.is_empty() { String::new() } else { format!(", zone: {zone}") };
            let cond = match *state {
                "terminating" => "{ready: false, serving: true, terminating: true}",
                _ => "{ready: true, serving: true, terminating: false}",
            };
            format!("- {{addresses: ['{ip}'], conditions: {cond}{zone}}}\n")
        })
        .collect();
    format!(
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: {name}\n  namespace: zones\n  \
         annotations: {{service.kubernetes.io/topology-mode: Auto}}\n\
         spec: {{ports: [{{name: http, port: 80, targetPort: 8080}}]}}\n---\n\
         apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: {name}-1\n  namespace: zones\n  \
         labels: {{kubernetes.io/service-name: {name}}}\naddressType: IPv4\nports: [{{name: http, port: 8080}}]\n\
         endpoints:\n{eps}"
    )
}

fn inputs() -> Inputs {
    let ingress = "apiVersion: networking.k8s.io/v1\nkind: IngressClass\nmetadata: {name: kuryr}\n\
                   spec: {controller: openstack.org/kuryr-l7-router}\n---\n\
                   apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: zones, namespace: zones}\n\
                   spec:\n  ingressClassName: kuryr\n  rules:\n  - host: zones.example.com\n    http:\n      paths:\n"
        .to_string()
        + &["zoned", "fallback", "rollout"]
            .iter()
            .map(|s| {
                format!(
                    "      - {{path: /{s}, pathType: Prefix, backend: {{service: {{name: {s}, port: {{number: 80}}}}}}}}\n"
                )
            })
            .collect::<String>();
    let docs = [
        ingress,
        // zone-a has twice the CPU of each other zone.
        node("n-a", "zone-a", "8"),
        node("n-b", "zone-b", "4"),
        node("n-c", "zone-c", "4000m"),
        service(
            "zoned",
            &[
                ("10.9.1.1", "zone-a", "ready"),
                ("10.9.1.2", "zone-a", "ready"),
                ("10.9.1.3", "zone-a", "ready"),
                ("10.9.1.4", "zone-b", "ready"),
                ("10.9.1.5", "zone-b", "ready"),
                ("10.9.1.6", "zone-c", "ready"),
                ("10.9.1.7", "zone-c", "ready"),
            ],
        ),
        service(
            "fallback",
            &[
                ("10.9.2.1", "zone-a", "ready"),
                ("10.9.2.2", "zone-b", "ready"),
                ("10.9.2.3", "zone-b", "ready"),
                ("10.9.2.4", "", "ready"),
            ],
        ),
        service(
            "rollout",
            &[("10.9.3.1", "zone-a", "terminating"), ("10.9.3.2", "zone-a", "ready"), ("10.9.3.3", "zone-b", "ready")],
        ),
    ];
    let mut inputs = Inputs::default();
    load_str(&docs.join("---\n"), Path::new("zones.yaml"), &mut inputs).unwrap();
    inputs
}

fn zone_of(p: &Pool, member: &str) -> String {
    p.members
        .iter()
        .find(|m| format!("{}:{}", m.address, m.protocol_port) == member)
        .map(|m| m.zone.as_deref().unwrap_or("(no zone)").to_string())
        .unwrap_or_else(|| panic!("{member} is not a member of {}", p.name))
}

/// The planned share of each zone: the function `plan` uses, over the translated weights.
pub(super) fn planned_shares(p: &Pool) -> BTreeMap<String, f64> {
    let weights: Vec<u16> = p.members.iter().map(|m| m.weight).collect();
    let mut by_zone = BTreeMap::new();
    for (m, s) in p.members.iter().zip(shares_of(&weights)) {
        *by_zone.entry(m.zone.as_deref().unwrap_or("(no zone)").to_string()).or_insert(0.0) += s;
    }
    by_zone
}

/// Requests answered per member (`address:port`) for each `(path, count)`, in ONE run.py call
/// (one rendering, one haproxy).
fn answers(lb_id: &str, d: &DesiredRouter, paths: &[(&str, usize)]) -> Vec<BTreeMap<String, usize>> {
    let requests: Vec<serde_json::Value> = paths
        .iter()
        .flat_map(|(path, n)| (0..*n).map(move |_| serde_json::json!({"host": "zones.example.com", "path": path})))
        .collect();
    let echo: BTreeMap<String, String> = d
        .pools
        .values()
        .flat_map(|p| p.members.iter().map(|m| format!("{}:{}", m.address, m.protocol_port)))
        .map(|a| (a.clone(), a))
        .collect();
    let (results, _) = super::run_py(lb_id, &echo, &requests);
    let mut out = vec![BTreeMap::new(); paths.len()];
    for r in &results {
        let path = r["request"]["path"].as_str().expect("request path");
        let i = paths.iter().position(|(p, _)| *p == path).expect("a path we sent");
        let b = r["backend"].as_str().unwrap_or_else(|| panic!("{path}: no backend answered: {r}"));
        *out[i].entry(b.to_string()).or_insert(0) += 1;
    }
    out
}

/// Measured vs planned share per zone; panics beyond the tolerance. Returns the table rows.
fn check_shares(p: &Pool, per_member: &BTreeMap<String, usize>) -> Vec<String> {
    let total: usize = per_member.values().sum();
    let mut measured: BTreeMap<String, f64> = BTreeMap::new();
    for (m, n) in per_member {
        *measured.entry(zone_of(p, m)).or_insert(0.0) += *n as f64 / total as f64;
    }
    let planned = planned_shares(p);
    let mut rows = vec![];
    for (zone, want) in &planned {
        let got = measured.get(zone).copied().unwrap_or(0.0);
        let row = format!(
            "{} | {} | {:.1}% | {:.1}% | {:+.1} pp",
            p.name,
            zone,
            want * 100.0,
            got * 100.0,
            (got - want) * 100.0
        );
        println!("{row}");
        assert!((got - want).abs() * 100.0 <= TOLERANCE_PP, "{row}: beyond ±{TOLERANCE_PP} pp ({})", p.weighting);
        rows.push(row);
    }
    assert!(measured.keys().all(|z| planned.contains_key(z)), "traffic to an unplanned zone: {measured:?}");
    rows
}

#[tokio::test(flavor = "multi_thread")]
async fn zone_shares_through_octavia_rendered_haproxy() {
    if !super::enabled() {
        return;
    }
    with_router("zones", |r| async move {
        let opts = TranslateOptions {
            ingress_class: "kuryr".into(),
            router_zone: Some("zone-a".into()),
            ..TranslateOptions::default()
        };
        let desired = translate(&inputs(), &opts);
        let (zoned, fallback, rollout) =
            (&desired.pools["zones_zoned"], &desired.pools["zones_fallback"], &desired.pools["zones_rollout"]);
        println!("zoned: {}\nfallback: {}\nrollout: {}", zoned.weighting, fallback.weighting, rollout.weighting);
        assert!(zoned.weighting.starts_with("zone-aware:"), "{}", zoned.weighting);
        assert!(fallback.weighting.starts_with("even: endpoint"), "{}", fallback.weighting);
        let report = converge(&r, &desired).await;

        let started = std::time::Instant::now();
        let got = answers(
            &report.lb_id,
            &desired,
            &[("/zoned", REQUESTS), ("/fallback", REQUESTS), ("/rollout", REQUESTS / 4)],
        );
        println!("{} requests in {:.1}s", 2 * REQUESTS + REQUESTS / 4, started.elapsed().as_secs_f64());
        let rows = [check_shares(zoned, &got[0]), check_shares(fallback, &got[1])];
        println!("pool | zone | planned | measured | deviation\n{}", rows.concat().join("\n"));

        // Rollout: the terminating endpoint stays a member with weight 0 and gets no new request.
        let draining: Vec<String> = rollout
            .members
            .iter()
            .filter(|m| m.weight == 0)
            .map(|m| format!("{}:{}", m.address, m.protocol_port))
            .collect();
        assert_eq!(draining, ["10.9.3.1:8080"], "{:?}", rollout.members);
        println!("rollout: {:?}", got[2]);
        assert_eq!(got[2].get(&draining[0]), None, "the terminating endpoint received requests: {:?}", got[2]);
        assert_eq!(got[2].values().sum::<usize>(), REQUESTS / 4);
    })
    .await;
}
