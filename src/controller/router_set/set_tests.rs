use super::*;
use crate::placement::Capacity;
use crate::translate::{TranslateOptions, translate};

/// An oversized group's Ingresses get `OversizedGroup`, naming the router it has to
/// itself; the Ingresses of every group on a router over capacity get `RouterOverCapacity`;
/// nobody else gets anything.
#[test]
fn placement_warnings_become_warning_events_on_the_ingresses_concerned() {
    use crate::placement::PlacementWarning;
    let yaml = |name: &str, hosts: &[&str], paths: usize| {
        let rules: Vec<serde_json::Value> = hosts
            .iter()
            .map(|h| {
                let paths: Vec<serde_json::Value> = (0..paths)
                    .map(|i| {
                        serde_json::json!({"path": format!("/p{i}"), "pathType": "Prefix",
                        "backend": {"service": {"name": "web", "port": {"number": 80}}}})
                    })
                    .collect();
                serde_json::json!({"host": h, "http": {"paths": paths}})
            })
            .collect();
        serde_json::json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": name, "namespace": "shop"},
            "spec": {"ingressClassName": "kuryr-l7-router", "rules": rules}})
    };
    let class = serde_json::json!({"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
        "metadata": {"name": "kuryr-l7-router"}, "spec": {"controller": "openstack.org/kuryr-l7-router"}});
    let placed = placed_of(&[yaml("big", &["big.example.com"], 3), yaml("small", &["small.example.com"], 1), class], 2);
    assert!(
        matches!(placed.placement.warnings[..], [PlacementWarning::OversizedGroup { .. }]),
        "{:?}",
        placed.placement
    );
    let events = placement_events("edge", &placed);
    let got: Vec<(String, &str)> = events.iter().map(|e| (e.regarding.to_string(), e.event.reason.as_str())).collect();
    assert_eq!(got, [("Ingress shop/big".to_string(), "OversizedGroup")]);
    assert!(matches!(events[0].event.type_, kube::runtime::events::EventType::Warning));
    assert!(events[0].event.message.contains("big.example.com"), "{}", events[0].event.message);
}

/// A new leader (no placement before it in this process) sees from the recorded costs that
/// a's group grew (1 -> 2 policies) while its router went over capacity (3 > 2): a moves by
/// itself, b stays. Without the cost records the growth cannot be seen: the excess (b) moves.
/// With a rollback's hold of a's move to router 1 in the records, nothing moves.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_new_leader_sees_growth_from_the_recorded_costs() {
    use crate::placement::moves::MoveCause;
    let records = std::sync::Mutex::new(SetRecords::default());
    let ing = |name: &str, paths: usize, cost: Option<u32>| {
        let paths: Vec<serde_json::Value> = (0..paths)
            .map(|i| {
                serde_json::json!({"path": format!("/p{i}"), "pathType": "Prefix",
                    "backend": {"service": {"name": "web", "port": {"number": 80}}}})
            })
            .collect();
        let host = format!("{name}.example.com");
        let record = match cost {
            Some(p) => HostRecord::on(0).with_cost(host.clone(), crate::placement::Cost::new(p, 0)),
            None => HostRecord::on(0),
        };
        records.lock().unwrap().hosts.insert(host.clone(), record);
        serde_json::json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": name, "namespace": "shop"},
            "spec": {"ingressClassName": "kuryr-l7-router", "rules": [{"host": host, "http": {"paths": paths}}]}})
    };
    let class = serde_json::json!({"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
        "metadata": {"name": "kuryr-l7-router"}, "spec": {"controller": "openstack.org/kuryr-l7-router"}});
    let svc = serde_json::json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "shop"},
        "spec": {"ports": [{"port": 80, "targetPort": 8080}]}});
    let scale_out = ScaleOut {
        enabled: true,
        capacity: Capacity { max_policies: 2, max_certificates: 10 },
        move_dns_grace: Duration::from_secs(60),
        empty_router_grace: Duration::from_secs(60),
        move_target_timeout: Duration::from_secs(1200),
        move_request_namespaces: Vec::new(),
    };
    let moved_by_new_leader = |recorded: bool, holds: Vec<rollback::Hold>| {
        let docs = [ing("a", 2, recorded.then_some(1)), ing("b", 1, recorded.then_some(1))];
        let text: Vec<String> = docs.iter().chain([&svc, &class]).map(|d| d.to_string()).collect();
        let mut inputs = crate::translate::options::Inputs::default();
        crate::translate::manifest::load_str(&text.join("\n---\n"), std::path::Path::new("t.yaml"), &mut inputs)
            .unwrap();
        let opts = TranslateOptions { ingress_class: "kuryr-l7-router".into(), ..TranslateOptions::default() };
        let whole = translate(&inputs, &opts);
        let ingresses: Vec<Arc<Ingress>> =
            docs.iter().map(|d| Arc::new(serde_json::from_value(d.clone()).unwrap())).collect();
        let spawn: SpawnWriter = Box::new(|_, _| Err(WriteError::new("test", "no writer")));
        let mut recorded = std::mem::take(&mut *records.lock().unwrap());
        recorded.holds = holds;
        let set = RouterSet::new("edge", scale_out.clone(), spawn).with_records(recorded, None);
        let rt = tokio::runtime::Handle::current();
        let placed =
            tokio::task::block_in_place(|| rt.block_on(set.placed(Instant::now(), &ingresses, move || whole)).unwrap());
        set.record(&placed, &[0, 1]);
        let b_record = set.records().hosts.get("b.example.com").cloned();
        (placed.moved.clone(), b_record)
    };
    let (moved, b_record) = moved_by_new_leader(true, Vec::new());
    let got: Vec<_> = moved.iter().map(|m| (m.group.as_str(), m.from, m.to)).collect();
    assert_eq!(got, [("a.example.com", 0, 1)]);
    assert!(matches!(moved[0].cause, MoveCause::OverCapacity { .. }), "{:?}", moved[0].cause);
    let want = HostRecord::on(0).with_cost("b.example.com".into(), crate::placement::Cost::new(1, 0));
    assert_eq!(b_record, Some(want), "b stays, its group and cost recorded");
    let (moved, _) = moved_by_new_leader(false, Vec::new());
    // Without the cost records the growth is not seen: the router is relieved all the
    // same, of its excess (the largest group, a, stays).
    let got: Vec<_> = moved.iter().map(|m| (m.group.as_str(), m.from, m.to)).collect();
    assert_eq!(got, [("b.example.com", 0, 1)], "{moved:?}");
    // A rollback's hold read back with the records (a restart within it): no move to that
    // router starts.
    let hold = rollback::Hold { hosts: ["a.example.com".to_string()].into(), to: 1, until: unix_now() + 600 };
    let (moved, _) = moved_by_new_leader(true, vec![hold]);
    assert!(moved.is_empty(), "held: {moved:?}");
}

/// A placement's move never puts back a move that a router's job stepped on while the
/// placement was made: the same move in a later phase, or a move done that went on elsewhere
/// (a chain) stays; the placement's own newer phase, and a move it started, replace it.
#[test]
fn a_placement_keeps_the_moves_stepped_on_meanwhile() {
    let plan = |from, to, phase| MovePlan {
        group: "b.example.com".into(),
        hosts: ["b.example.com".to_string()].into(),
        from,
        to,
        phase,
        cause: crate::placement::moves::MoveCause::Operator,
    };
    let own_both = plan(0, 2, MovePhase::PublishBoth { since: 10 });
    let own_create = plan(0, 2, MovePhase::CreateOnTarget { since: 5 });
    let own_target = plan(0, 2, MovePhase::PublishTarget { since: 12 });
    let own_done = plan(0, 2, MovePhase::Done { at: 20 });
    let chain = plan(2, 1, MovePhase::CreateOnTarget { since: 20 });
    let merge = plan(2, 1, MovePhase::CreateOnTarget { since: 21 });
    // (known now, the placement's, the placement's steps, known kept)
    let cases = [
        ("target ACTIVE meanwhile", &own_both, &own_create, vec![], true),
        ("the placement stepped further", &own_both, &own_target, vec![own_target.clone()], false),
        ("a chain made meanwhile", &chain, &plan(0, 2, MovePhase::DeleteOld { since: 14 }), vec![], true),
        ("a merge the placement started", &own_done, &merge, vec![merge.clone()], false),
    ];
    for (case, known, placed, moved, kept) in cases {
        assert_eq!(stepped_since(known, placed, &moved), kept, "{case}");
    }
}

/// An Ingress with hosts that a placement does not place (created after the placement was made)
/// belongs to no router of that placement: a router's job finishing with it publishes no address
/// on it (the first router's address would not serve its hosts). A host-less Ingress is on every
/// router and carries the first router's address; a placed one, its router's.
#[test]
fn an_ingress_newer_than_the_placement_is_on_no_router_of_it() {
    let ingress = |name: &str, host: Option<&str>| {
        let mut rule = serde_json::json!({"http": {"paths": [{"path": "/", "pathType": "Prefix",
            "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}});
        if let Some(h) = host {
            rule["host"] = serde_json::json!(h);
        }
        serde_json::json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": name, "namespace": "shop"},
            "spec": {"ingressClassName": "kuryr-l7-router", "rules": [rule]}})
    };
    let class = serde_json::json!({"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
        "metadata": {"name": "kuryr-l7-router"}, "spec": {"controller": "openstack.org/kuryr-l7-router"}});
    let placed = placed_of(&[ingress("a", Some("a.example.com")), ingress("b", Some("b.example.com")), class], 1);
    let of = |v: serde_json::Value| placed.router_of(&serde_json::from_value::<Ingress>(v).unwrap());
    let (a, b) = (of(ingress("a", Some("a.example.com"))), of(ingress("b", Some("b.example.com"))));
    assert!(a.is_some() && b.is_some() && a != b, "one router each: {a:?} {b:?}");
    assert_eq!(of(ingress("late", Some("late.example.com"))), None);
    assert_eq!(of(ingress("hostless", None)), Some(0));
}

/// The placement of `docs` (Ingresses and the IngressClass; a Service `shop/web` is added) at
/// `max_policies` a router, as the set makes it from its first translation.
fn placed_of(docs: &[serde_json::Value], max_policies: u32) -> Placed {
    use crate::placement::split::{SplitParams, place_and_split};
    let svc = serde_json::json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "shop"},
        "spec": {"ports": [{"port": 80, "targetPort": 8080}]}});
    // JSON documents are YAML documents.
    let text: Vec<String> = docs.iter().chain([&svc]).map(|d| d.to_string()).collect();
    let mut inputs = crate::translate::options::Inputs::default();
    crate::translate::manifest::load_str(&text.join("\n---\n"), std::path::Path::new("t.yaml"), &mut inputs).unwrap();
    let opts = TranslateOptions { ingress_class: "kuryr-l7-router".into(), ..TranslateOptions::default() };
    let whole = translate(&inputs, &opts);
    let params = SplitParams {
        capacity: Capacity { max_policies, max_certificates: 10 },
        current: BTreeMap::new(),
        routers: BTreeMap::new(),
        now: 0,
        empty_grace_secs: 60,
    };
    let set = place_and_split(&whole, &params);
    Placed {
        placement: set.placement,
        whole: Arc::new(whole),
        parts: set.routers.into_iter().map(|(i, d)| (i, Arc::new(d))).collect(),
        moves: Moves::default(),
        moved: Vec::new(),
        refused: Vec::new(),
        pending: BTreeSet::new(),
    }
}
