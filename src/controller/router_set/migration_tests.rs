use super::*;
use crate::placement::assign::MoveRequest;
use crate::placement::{Cost, MovePlan};

fn ingress(name: &str, hosts: &[&str], annotations: &[(&str, String)]) -> Ingress {
    let rules: Vec<serde_json::Value> = hosts.iter().map(|h| serde_json::json!({"host": h})).collect();
    let mut v = serde_json::json!({"metadata": {"name": name, "namespace": "shop"}, "spec": {"rules": rules}});
    let a: serde_json::Map<String, serde_json::Value> =
        annotations.iter().map(|(k, v)| (k.to_string(), serde_json::json!(v))).collect();
    v["metadata"]["annotations"] = serde_json::Value::Object(a);
    serde_json::from_value(v).unwrap()
}

fn placed_on(router: &str) -> (&'static str, String) {
    (PLACEMENT_ANNOTATION, router.to_string())
}

fn cost(group: &str, policies: u32) -> (&'static str, String) {
    (COST_ANNOTATION, format!(r#"{{"group":"{group}","policies":{policies},"certificates":0}}"#))
}

fn move_record(hosts: &[&str], from: u32, to: u32, phase: MovePhase) -> (&'static str, String) {
    let hosts: BTreeSet<String> = hosts.iter().map(|h| h.to_string()).collect();
    let request = MoveRequest { group: hosts.first().unwrap().clone(), hosts, from, to };
    let plan = MovePlan { phase, ..MovePlan::start(&request, 1_000) };
    (MOVE_ANNOTATION, serde_json::to_string(&plan).unwrap())
}

fn observed(routers: &[(u32, &[&str])]) -> BTreeMap<RouterIndex, BTreeSet<String>> {
    routers.iter().map(|(r, hosts)| (*r, hosts.iter().map(|h| h.to_string()).collect())).collect()
}

/// Each host of an annotated Ingress is read on its router; a name outside the set and an
/// Ingress without the annotation give nothing.
#[test]
fn the_old_record_is_read_from_the_ingress_annotations() {
    let ings = [
        ingress("a", &["A.example.com", "b.example.com"], &[placed_on("edge-3")]),
        ingress("c", &["c.example.com"], &[placed_on("edge")]),
        ingress("d", &["d.example.com"], &[placed_on("other-2")]),
        ingress("e", &["e.example.com"], &[]),
    ];
    let got = recorded_placement("edge", &ings);
    let want: BTreeMap<String, RouterIndex> =
        [("a.example.com", 2), ("b.example.com", 2), ("c.example.com", 0)].map(|(h, r)| (h.to_string(), r)).into();
    assert_eq!(got, want);
    assert_eq!(routers_named("edge", &ings), BTreeSet::from([0, 2]));
}

/// A record that Octavia confirms is kept (with its cost); one naming a router that does not
/// route the host (a tenant's forgery pinning a victim's host, or naming a router that does not
/// exist) is dropped, and so is a forged move (DeleteOld towards a router that does not route
/// the hosts). A move whose routers route its hosts as its phase says is kept.
#[test]
fn the_upgrade_keeps_only_what_octavia_confirms() {
    let ings = [
        ingress("a", &["a.example.com"], &[placed_on("edge-2"), cost("a.example.com", 3)]),
        ingress("victim", &["victim.example.com"], &[]),
        ingress("forger", &["forger.example.com"], &[placed_on("edge")]),
        // The forger pins the victim's host on router 5 (no such router) and asks to delete its
        // routes from router 0.
        ingress(
            "forged",
            &["victim.example.com"],
            &[placed_on("edge-5"), move_record(&["victim.example.com"], 0, 4, MovePhase::DeleteOld { since: 1 })],
        ),
        ingress(
            "moving",
            &["m.example.com"],
            &[placed_on("edge-2"), move_record(&["m.example.com"], 0, 1, MovePhase::PublishBoth { since: 1 })],
        ),
    ];
    let octavia = observed(&[
        (0, &["victim.example.com", "forger.example.com", "m.example.com"]),
        (1, &["a.example.com", "m.example.com"]),
    ]);
    let (records, dropped) = migrate("edge", &ings, &octavia);
    let want_hosts: BTreeMap<String, HostRecord> = [
        ("a.example.com", HostRecord::on(1).with_cost("a.example.com".into(), Cost::new(3, 0))),
        ("forger.example.com", HostRecord::on(0)),
        ("m.example.com", HostRecord::on(1)),
    ]
    .map(|(h, r)| (h.to_string(), r))
    .into();
    assert_eq!(records.hosts, want_hosts, "dropped: {dropped:?}");
    assert_eq!(records.moves.keys().collect::<Vec<_>>(), ["m.example.com"], "the forged move is dropped");
    assert_eq!(dropped.len(), 2, "{dropped:?}");
    assert!(dropped.iter().any(|d| d.starts_with("victim.example.com on edge-5")), "{dropped:?}");
    // Without Octavia's word (nothing read), nothing is kept.
    let (none, _) = migrate("edge", &ings, &BTreeMap::new());
    assert_eq!(none, SetRecords::default());
}
