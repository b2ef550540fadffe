//! The router set's records belong to the controller (`controller::router_set::store`): placement and
//! moves are kept in ConfigMaps of its own namespace, never read from Ingress annotations that
//! any namespace editor can write. Through the whole controller on the FAKE Kubernetes API server,
//! each router on its own simulated Octavia (helpers of `controller_router_set`): a forged move
//! record changes nothing and gets a Warning; `move-to` is honoured only from the namespaces
//! allowed and within the set's bounds; the upgrade keeps only the old records Octavia confirms.

use crate::controller_router_set::{
    BASE, Cloud, FIRST, ING, NAMES, SECOND, addresses, ask_move, event_on, event_reasons, eventually, fake_with,
    ingress, placed, run_on, start_with,
};
use crate::support::controller_run::spawn_controller;
use crate::support::fake_api::Fake;
use kuryr_l7_router::controller::router_set::migration::{COST_ANNOTATION, PLACEMENT_ANNOTATION};
use kuryr_l7_router::controller::router_set::moves::{MOVE_ANNOTATION, MOVE_TO_ANNOTATION};
use kuryr_l7_router::controller::router_set::store::{
    HostRecord, SetRecords, config_maps, read_config_maps, shard_name,
};
use kuryr_l7_router::driver::FoundRouter;
use kuryr_l7_router::placement::assign::MoveRequest;
use kuryr_l7_router::placement::{MovePhase, MovePlan, router_index};
use serde_json::{Value, json};
use std::collections::BTreeSet;

/// The controller's own namespace (the default `[kubernetes] lease_namespace`).
pub(crate) const CONTROLLER_NS: &str = "kube-system";

/// The set's records as the controller stored them: its ConfigMaps in its own namespace.
pub(crate) fn records(fake: &Fake) -> Option<SetRecords> {
    let mut cms = Vec::new();
    for n in [1, 2, 4, 8, 16, 32, 64] {
        for i in 0..n {
            if let Some(v) = fake.get("v1/configmaps", CONTROLLER_NS, &shard_name(BASE, n, i)) {
                cms.push(serde_json::from_value(v).unwrap());
            }
        }
    }
    read_config_maps(BASE, &cms).unwrap().records
}

/// Puts `records` in the controller's namespace, as a controller before would have left them.
pub(crate) fn put_records(fake: &Fake, records: &SetRecords) {
    for cm in config_maps(BASE, records, 1) {
        let mut v = serde_json::to_value(cm).unwrap();
        v["apiVersion"] = json!("v1");
        v["kind"] = json!("ConfigMap");
        v["metadata"]["namespace"] = json!(CONTROLLER_NS);
        fake.put("configmaps", v);
    }
}

/// Records of hosts `<name>.example.com` on the routers named.
pub(crate) fn records_of(placed: &[(&str, &str)]) -> SetRecords {
    let mut out = SetRecords::default();
    for (name, router) in placed {
        let index = router_index(BASE, router).unwrap();
        out.hosts.insert(format!("{name}.example.com"), HostRecord::on(index));
    }
    out
}

/// The router recorded for Ingress `name`'s host in the controller's records.
pub(crate) fn recorded_router(fake: &Fake, name: &str) -> Option<String> {
    let records = records(fake)?;
    let index = records.hosts.get(&format!("{name}.example.com"))?.router;
    Some(kuryr_l7_router::placement::router_name(BASE, index))
}

/// The move in progress recorded for the group `<name>.example.com`, as JSON.
pub(crate) fn move_record(fake: &Fake, name: &str) -> Option<Value> {
    let records = records(fake)?;
    records.moves.get(&format!("{name}.example.com")).map(|m| serde_json::to_value(m).unwrap())
}

/// Ingress `name` (host `<name>.example.com`) in namespace `ns`, with the Service it names there.
fn ingress_in(fake: &Fake, ns: &str, name: &str) -> Value {
    let mut svc = crate::controller_router_set::service();
    svc["metadata"]["namespace"] = json!(ns);
    fake.put("services", svc);
    let mut ing = ingress(name);
    ing["metadata"]["namespace"] = json!(ns);
    ing
}

/// A forged move record: the group of `<victim>.example.com` from router `from` to `to`, at
/// `phase`.
fn forged_move(victim: &str, from: u32, to: u32, phase: MovePhase) -> String {
    let host = format!("{victim}.example.com");
    let request = MoveRequest { group: host.clone(), hosts: BTreeSet::from([host]), from, to };
    serde_json::to_string(&MovePlan { phase, ..MovePlan::start(&request, 1) }).unwrap()
}

/// The indices of the routers the controller built a backend for.
fn built(running: &crate::controller_router_set::Running) -> Vec<u32> {
    running.sims.lock().unwrap().keys().copied().collect()
}

/// a and b (namespace shop) are placed and recorded; then a tenant of namespace `evil` forges,
/// on its own Ingress of our class and on one of another IngressClass, a move record sending
/// a's group to router index 4 in `DeleteOld` (the victim's routes deleted from its router) and
/// b's to index 6, and a placement record. Nothing changes: a and b are still routed on the
/// first router and published with its address, no router is built, no move is recorded, the
/// victims' Ingresses carry no record, and each forging Ingress gets a Warning Event. (Before,
/// the record was read from every Ingress of every class and trusted: router 4 was created,
/// a's routes left the first router and the record was copied onto a's Ingress.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_move_record_on_a_foreign_ingress_changes_nothing() {
    let fake = fake_with(["a", "b"].map(ingress));
    let running = start_with(&fake, &[], &[], "max_policies_per_router = 10").await;
    for n in ["a", "b"] {
        eventually(&format!("{n} recorded on the first router"), 20, || placed(&fake, n).filter(|p| p.0 == BASE)).await;
    }
    let mut forger = ingress_in(&fake, "evil", "forger");
    forger["metadata"]["annotations"] = json!({
        MOVE_ANNOTATION: forged_move("a", 0, 4, MovePhase::DeleteOld { since: 1 }),
        PLACEMENT_ANNOTATION: "rset-5",
    });
    fake.put("ingresses", forger);
    let mut other_class = ingress_in(&fake, "evil", "other-class");
    other_class["spec"]["ingressClassName"] = json!("someone-else");
    other_class["metadata"]["annotations"] =
        json!({MOVE_ANNOTATION: forged_move("b", 0, 6, MovePhase::PublishTarget { since: 1 })});
    fake.put("ingresses", other_class);
    let note = eventually("a Warning on the forging Ingress", 20, || {
        let ev = event_on(&fake, "forger", "MoveRecordIgnored")?;
        (ev["type"] == "Warning").then(|| ev["note"].as_str().unwrap_or_default().to_string())
    })
    .await;
    assert!(note.contains(MOVE_ANNOTATION) && note.contains("ignored"), "{note}");
    eventually("a Warning on the other class's Ingress", 20, || event_on(&fake, "other-class", "MoveRecordIgnored"))
        .await;
    eventually("the forger's own host placed", 20, || {
        let records = records(&fake)?;
        (records.hosts.get("forger.example.com")?.router == 0).then_some(())
    })
    .await;
    // A few more Syncs (the resync, the Events' own changes) would have carried the forgery out.
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    assert_eq!(built(&running), [0], "no router built for the forged records");
    let hosts = running.hosts_of(0);
    assert!(hosts.contains(&"a.example.com".into()) && hosts.contains(&"b.example.com".into()), "{hosts:?}");
    assert_eq!(addresses(&fake, "a"), [FIRST]);
    assert_eq!(addresses(&fake, "b"), [FIRST]);
    let records = records(&fake).unwrap();
    assert!(records.moves.is_empty(), "no move recorded: {:?}", records.moves);
    for victim in ["a", "b"] {
        let v = fake.get(ING, "shop", victim).unwrap();
        let annotations = v["metadata"]["annotations"].as_object().cloned().unwrap_or_default();
        assert!(annotations.keys().all(|k| !k.starts_with("placement.")), "{victim}: {annotations:?}");
        assert!(!event_reasons(&fake, victim).iter().any(|r| r.starts_with("Move")), "{victim} not moved");
    }
    running.stop().await;
}

/// `move-to` is admitted only from the namespaces of `move_request_namespaces` (here `shop`),
/// and only to a router within the set's bounds (its routers, or the next new one): x of
/// namespace `evil` asking for rset-2 is refused with a Warning naming the option, b asking
/// for rset-9 is refused naming the bounds, and neither moves nor makes a router; a (shop)
/// asking for rset-2 moves there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn move_to_is_admitted_only_from_allowed_namespaces_and_within_the_sets_bounds() {
    let fake = fake_with(["a", "b"].map(ingress));
    let x = ingress_in(&fake, "evil", "x");
    fake.put("ingresses", x);
    let running = start_with(&fake, &[], &[], "max_policies_per_router = 10").await;
    for n in ["a", "b"] {
        eventually(&format!("{n} on the first router"), 20, || placed(&fake, n).filter(|p| p.0 == BASE)).await;
    }
    eventually("x on the first router", 20, || (running.hosts_of(0).contains(&"x.example.com".into())).then_some(()))
        .await;
    let mut x = fake.get(ING, "evil", "x").unwrap();
    x["metadata"]["annotations"][MOVE_TO_ANNOTATION] = json!("rset-2");
    fake.put("ingresses", x);
    ask_move(&fake, "b", "rset-9");
    let refused = eventually("x's ask refused", 20, || event_on(&fake, "x", "MoveRefused")).await;
    assert_eq!(refused["type"], "Warning");
    let note = refused["note"].as_str().unwrap();
    assert!(note.contains("\"evil\"") && note.contains("move_request_namespaces"), "{note}");
    let refused = eventually("b's ask refused", 20, || event_on(&fake, "b", "MoveRefused")).await;
    let note = refused["note"].as_str().unwrap();
    assert!(note.contains("index 8") && note.contains("bounds"), "{note}");
    ask_move(&fake, "a", "rset-2");
    eventually("a published on both routers", 20, || {
        crate::controller_router_set::published(&fake, "a", &[FIRST, SECOND]).then_some(())
    })
    .await;
    assert_eq!(built(&running), [0, 1], "only a's target is built");
    assert!(!running.hosts_of(1).contains(&"x.example.com".into()), "x did not move");
    assert!(!running.hosts_of(1).contains(&"b.example.com".into()), "b did not move");
    assert_eq!(addresses(&fake, "b"), [FIRST]);
    running.stop().await;
}

/// The upgrade. A controller places a..e on three routers (a, b on rset; c, d on rset-2; e on
/// rset-3) and stops; then, as a version before the store would have left them, the records are
/// annotations: c, d and e's are true, a tenant's Ingress f claims rset-2 and forges a move of
/// c's group from rset-2 to index 5 in DeleteOld; a and b are deleted (a fresh placement would
/// pack everything on the emptied first router). The new controller, with no store yet, keeps
/// the records Octavia confirms (c, d on rset-2, e on rset-3: nothing moves), drops f's claim
/// (f is placed as new, on the emptiest router) and the forged move (c's routes stay, nothing
/// is built for index 5), writes the store, and warns on f.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_upgrade_keeps_the_records_octavia_confirms_and_drops_forged_ones() {
    let fake = fake_with(NAMES.map(ingress));
    let running = start_with(&fake, &[], &[], "").await;
    for (n, router) in [("a", BASE), ("b", BASE), ("c", "rset-2"), ("d", "rset-2"), ("e", "rset-3")] {
        eventually(&format!("{n} on {router}"), 20, || placed(&fake, n).filter(|p| p.0 == router)).await;
    }
    let sims = running.sims.clone();
    running.stop().await;

    let old = fake_with([]);
    for (n, router) in [("c", "rset-2"), ("d", "rset-2"), ("e", "rset-3")] {
        let mut v = ingress(n);
        let cost = json!({"group": format!("{n}.example.com"), "policies": 1, "certificates": 0}).to_string();
        v["metadata"]["annotations"] = json!({PLACEMENT_ANNOTATION: router, COST_ANNOTATION: cost});
        old.put("ingresses", v);
    }
    let mut f = ingress_in(&old, "evil", "f");
    f["metadata"]["annotations"] = json!({
        PLACEMENT_ANNOTATION: "rset-2",
        MOVE_ANNOTATION: forged_move("c", 1, 5, MovePhase::DeleteOld { since: 1 }),
    });
    old.put("ingresses", f);
    assert_eq!(records(&old), None, "no store yet");
    let found = [BASE, "rset-2", "rset-3"].map(FoundRouter::from).to_vec();
    let cloud = Cloud { persist: Some(sims), found, ..Cloud::default() };
    let running = run_on(&old, "", cloud).await;
    let migrated = eventually("f placed and recorded", 20, || {
        let r = records(&old)?;
        r.hosts.contains_key("f.example.com").then_some(r)
    })
    .await;
    let on = |r: &SetRecords, n: &str| r.hosts.get(&format!("{n}.example.com")).map(|h| h.router);
    assert_eq!(["c", "d", "e", "f"].map(|n| on(&migrated, n)), [Some(1), Some(1), Some(2), Some(0)]);
    assert!(migrated.moves.is_empty(), "the forged move is dropped: {:?}", migrated.moves);
    eventually("f routed on the first router", 20, || (running.hosts_of(0) == ["f.example.com"]).then_some(())).await;
    assert_eq!(running.hosts_of(1), ["c.example.com", "d.example.com"], "c and d stay, c's routes kept");
    assert_eq!(running.hosts_of(2), ["e.example.com"]);
    assert!(built(&running).iter().all(|i| *i <= 2), "nothing built for the forged index: {:?}", built(&running));
    eventually("a Warning on f", 20, || event_on(&old, "f", "MoveRecordIgnored")).await;
    running.stop().await;
}

/// `hosts` hosts of ~60 characters on 100 routers, each with its group (of 4) and cost.
fn many(hosts: usize) -> SetRecords {
    let mut out = SetRecords::default();
    for i in 0..hosts {
        let name = |i: usize| format!("service-{i:05}.team-{:03}.apps.example-cluster.example.com", i % 977);
        let cost = kuryr_l7_router::placement::Cost::new(4 + (i % 7) as u32, (i % 3) as u32);
        out.hosts.insert(name(i), HostRecord::on((i % 100) as u32).with_cost(name(i - i % 4), cost));
    }
    out
}

/// The set's ConfigMaps in the fake, with their size as stored (JSON).
fn stored(fake: &Fake) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    for n in [1, 2, 4, 8, 16, 32, 64] {
        for i in 0..n {
            let name = shard_name(BASE, n, i);
            if let Some(v) = fake.get("v1/configmaps", CONTROLLER_NS, &name) {
                out.push((name, serde_json::to_vec(&v).unwrap().len()));
            }
        }
    }
    out
}

/// Through the API (the fake server): 10k hosts' records are written in several ConfigMaps,
/// each under the 1 MiB object limit, and read back whole by a new store (a restart); an
/// unchanged save writes nothing, a change writes one shard; shrinking back to a few hosts
/// leaves one ConfigMap, the old layout's deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_hosts_are_stored_and_reloaded_through_the_api() {
    use kuryr_l7_router::controller::router_set::store::{OBJECT_LIMIT, SetStore};
    let fake = Fake::new();
    let (api_root, _) = fake.serve().await;
    let client = kube::Client::try_from(kube::Config::new(api_root.parse().unwrap())).unwrap();
    let api = || kube::Api::namespaced(client.clone(), CONTROLLER_NS);
    let store = SetStore::new(api(), BASE);
    assert_eq!(store.load().await.unwrap().records, None, "nothing stored yet");
    store.save(&many(10)).await;
    assert_eq!(stored(&fake).len(), 1);
    let mut big = many(10_000);
    store.save(&big).await;
    let objects = stored(&fake);
    assert!(objects.len() > 1, "{objects:?}");
    assert!(objects.iter().all(|(_, bytes)| *bytes < OBJECT_LIMIT), "{objects:?}");
    assert!(!objects.iter().any(|(name, _)| *name == shard_name(BASE, 1, 0)), "the old layout deleted");
    let again = SetStore::new(api(), BASE);
    assert_eq!(again.load().await.unwrap().records, Some(big.clone()), "a restart reads every record");
    let writes = |fake: &Fake| fake.writes().iter().filter(|w| w.path.contains("/configmaps/")).count();
    let before = writes(&fake);
    again.save(&big).await;
    assert_eq!(writes(&fake), before, "nothing changed: nothing written");
    big.hosts.values_mut().next().unwrap().router = 7;
    again.save(&big).await;
    assert_eq!(writes(&fake), before + 1, "one host changed: one shard written");
    assert_eq!(SetStore::new(api(), BASE).load().await.unwrap().records, Some(big));
    again.save(&many(10)).await;
    assert_eq!(stored(&fake).iter().map(|(n, _)| n.clone()).collect::<Vec<_>>(), [shard_name(BASE, 1, 0)]);
}

/// The operator asks through `kuryr-l7-router move` (its request in the controller's namespace),
/// with no namespace allowed to ask by annotation: a's annotation is refused, the operator's
/// request for b moves b to rset-2 (make-before-break); a bad router name is refused by the
/// command itself, and `--clear` removes the request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operators_move_request_is_honoured_without_any_namespace_allowed() {
    use kuryr_l7_router::controller::router_set::store::{asks_name, request_move};
    let fake = fake_with(["a", "b"].map(ingress));
    let running = start_with(&fake, &[], &[], "max_policies_per_router = 10\nmove_request_namespaces =").await;
    for n in ["a", "b"] {
        eventually(&format!("{n} on the first router"), 20, || placed(&fake, n).filter(|p| p.0 == BASE)).await;
    }
    ask_move(&fake, "a", "rset-2");
    let refused = eventually("a's annotation refused", 20, || event_on(&fake, "a", "MoveRefused")).await;
    assert!(refused["note"].as_str().unwrap().contains("move_request_namespaces"), "{refused}");
    let (api_root, _) = fake.serve().await;
    let client = kube::Client::try_from(kube::Config::new(api_root.parse().unwrap())).unwrap();
    let api = kube::Api::namespaced(client, CONTROLLER_NS);
    let bad = request_move(&api, BASE, "shop/b", Some("other-2")).await.unwrap_err();
    assert!(bad.contains("not a router of the set"), "{bad}");
    request_move(&api, BASE, "shop/b", Some("rset-2")).await.unwrap();
    // Any change of the set's Ingresses makes a Sync, which reads the request.
    let mut touched = fake.get(ING, "shop", "b").unwrap();
    touched["metadata"]["labels"] = json!({"touched": "yes"});
    fake.put("ingresses", touched);
    eventually("b published on both routers", 20, || {
        crate::controller_router_set::published(&fake, "b", &[FIRST, SECOND]).then_some(())
    })
    .await;
    eventually("b on rset-2 only", 20, || (addresses(&fake, "b") == [SECOND]).then_some(())).await;
    assert!(!running.hosts_of(1).contains(&"a.example.com".into()), "a did not move");
    request_move(&api, BASE, "shop/b", None).await.unwrap();
    let cm = fake.get("v1/configmaps", CONTROLLER_NS, &asks_name(BASE)).unwrap();
    assert!(cm["data"].get("shop.b").is_none_or(Value::is_null), "the request removed: {cm}");
    running.stop().await;
}

/// A Warning of a reason containing `reason` on Ingress `name`, if one was published.
fn event_like(fake: &Fake, name: &str, reason: &str) -> Option<Value> {
    let on = |w: &crate::support::fake_api::Write| w.path.contains("/events") && w.body["regarding"]["name"] == name;
    fake.writes()
        .into_iter()
        .filter(on)
        .map(|w| w.body)
        .find(|b| b["reason"].as_str().is_some_and(|r| r.contains(reason)))
}

/// A one-router controller with host ownership on, against `fake`; stop it with the sender.
async fn run_owning(
    fake: &std::sync::Arc<Fake>,
) -> (
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<Result<(), kuryr_l7_router::controller::ControllerError>>,
    tempfile::TempDir,
) {
    use kuryr_l7_router::driver::ownership::Ownership;
    use kuryr_l7_router::driver::plan::DiffOptions;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let (api_root, _) = fake.serve().await;
    let (dir, token) = crate::support::fake_settings::token_file();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let settings = crate::support::fake_settings::fake_cluster_settings(
        "owners.conf",
        &api_root,
        &token,
        port,
        "host_ownership = True",
        "l7_router_name = owners",
    );
    let sim = kuryr_l7_router::testing::SimBackend::new(
        DiffOptions { ownership: Ownership::new("owners"), health_monitor: None },
        "172.24.4.10".parse().ok(),
    );
    let (stop, run) = spawn_controller(settings, sim);
    (stop, run, dir)
}

/// The owners' ConfigMaps of our class in the controller's namespace, read back.
pub(crate) fn stored_owners(fake: &Fake) -> Option<kuryr_l7_router::translate::tenancy::RememberedOwners> {
    use kuryr_l7_router::controller::owner_store::OwnerRecords;
    use kuryr_l7_router::controller::router_set::store::{read_shards, shard_name_of};
    let class = "kuryr-l7-router";
    let cms: Vec<_> = [1, 2, 4, 8]
        .into_iter()
        .flat_map(|n| (0..n).map(move |i| (n, i)))
        .filter_map(|(n, i)| fake.get("v1/configmaps", CONTROLLER_NS, &shard_name_of::<OwnerRecords>(class, n, i)))
        .map(|v| serde_json::from_value(v).unwrap())
        .collect();
    read_shards::<OwnerRecords>(class, &cms).unwrap().records.map(|r| r.0)
}

/// An older Ingress of namespace `evil` claiming `a.example.com`.
fn thief(fake: &Fake) -> Value {
    let mut v = ingress_in(fake, "evil", "thief");
    v["metadata"]["creationTimestamp"] = json!("2025-01-01T00:00:00Z");
    v["spec"]["rules"][0]["host"] = json!("a.example.com");
    v
}

/// Host ownership keeps the owners in the controller's namespace (sharded ConfigMaps), not in
/// an annotation of the IngressClass (limited to 256 KiB, about 4–5k hosts: past it every
/// Sync's outputs failed). They survive a restart: a's host stays shop's while its Ingress is
/// gone (grace), and an older Ingress of another namespace claiming it is refused. At the
/// upgrade, the owners in the class's annotation are moved to the store once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_owners_are_kept_in_the_controllers_namespace_and_survive_a_restart() {
    let fake = fake_with([ingress("a")]);
    let (stop, run, _dir) = run_owning(&fake).await;
    let owners =
        eventually("a's owner stored", 20, || stored_owners(&fake).filter(|o| o.contains_key("a.example.com"))).await;
    assert_eq!(owners["a.example.com"].namespace, "shop");
    let class = fake.get("networking.k8s.io/v1/ingressclasses", "", "kuryr-l7-router").unwrap();
    assert!(class["metadata"]["annotations"].is_null(), "the class is not written: {class}");
    let _ = stop.send(());
    run.await.unwrap().unwrap();

    // Restart: shop's Ingress gone meanwhile, an older Ingress of `evil` claims its host.
    let restarted = fake_with([]);
    for n in [1, 2, 4] {
        for i in 0..n {
            use kuryr_l7_router::controller::router_set::store::shard_name_of;
            let name = shard_name_of::<kuryr_l7_router::controller::owner_store::OwnerRecords>("kuryr-l7-router", n, i);
            if let Some(mut v) = fake.get("v1/configmaps", CONTROLLER_NS, &name) {
                v["metadata"].as_object_mut().unwrap().remove("resourceVersion");
                restarted.put("configmaps", v);
            }
        }
    }
    let v = thief(&restarted);
    restarted.put("ingresses", v);
    let (stop, run, _dir2) = run_owning(&restarted).await;
    let refused = eventually("evil's claim refused", 20, || event_like(&restarted, "thief", "HostOwned")).await;
    assert!(refused["note"].as_str().unwrap().contains("namespace shop"), "{refused}");
    let _ = stop.send(());
    run.await.unwrap().unwrap();

    // Upgrade: the owners in the class's annotation, no store yet.
    let upgraded = fake_with([]);
    let mut class = crate::controller_router_set::class();
    class["metadata"]["annotations"] = json!({
        kuryr_l7_router::translate::tenancy::HOST_OWNERS_ANNOTATION: r#"{"a.example.com":{"namespace":"shop"}}"#});
    upgraded.put("ingressclasses", class);
    let v = thief(&upgraded);
    upgraded.put("ingresses", v);
    let (stop, run, _dir3) = run_owning(&upgraded).await;
    eventually("evil's claim refused after the upgrade", 20, || event_like(&upgraded, "thief", "HostOwned")).await;
    let moved = eventually("owners moved to the store", 20, || stored_owners(&upgraded)).await;
    assert_eq!(moved["a.example.com"].namespace, "shop");
    let _ = stop.send(());
    run.await.unwrap().unwrap();
}
