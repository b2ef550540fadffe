//! Moves that go back (issue 36 item 3): a move whose target is not ACTIVE within
//! `move_target_timeout` is rolled back, and the operator cancels a move (the cancel request of
//! `kuryr-l7-router move NS/ING --cancel`). Through the whole controller against the FAKE
//! Kubernetes API server, each router on its own simulated Octavia that the test makes hang
//! (harness of `controller_set_outputs`). The source serves the group throughout.

use crate::controller_router_set::{ING, class, ingress, published, service};
use crate::controller_set_outputs::{Set, eventually, start, start_on};
use crate::controller_set_records::{CONTROLLER_NS, move_record, put_records, recorded_router, records, records_of};
use kuryr_l7_router::controller::router_set::store::{asks_name, request_cancel, request_move};
use serde_json::{Value, json};
use std::time::Duration;

const SECOND: &str = "172.24.4.11";
const THIRD: &str = "172.24.4.12";
const BASE: &str = crate::controller_router_set::BASE;

/// a, b on `rset`, c on `rset-2`, live; `hung`: routers hanging from the start.
async fn c_on_the_second_router(octavia: &str, hung: &[u32]) -> Set {
    let set = start(&["a", "b", "c"], octavia, hung).await;
    for (name, router) in [("a", 0), ("b", 0), ("c", 1)] {
        eventually(&format!("{name} live on router {router}"), 20, || set.live_on(name, router)).await;
    }
    set
}

async fn configmaps(set: &Set) -> kube::Api<k8s_openapi::api::core::v1::ConfigMap> {
    let client = kube::Client::try_from(kube::Config::new(set.api_root.parse().unwrap())).unwrap();
    kube::Api::namespaced(client, CONTROLLER_NS)
}

/// The operator moves c to `rset-3` (the request, and a change of c that makes a Sync read it);
/// returns once the move started.
async fn move_c_to_the_third_router(set: &Set) {
    request_move(&configmaps(set).await, BASE, "shop/c", Some("rset-3")).await.unwrap();
    touch(set, "c", "1");
    eventually("the move started", 20, || Some(()).filter(|_| !set.notes("c", "MoveStarted").is_empty())).await;
}

/// A change of Ingress `name` that changes no route: the Sync it makes reads the requests.
fn touch(set: &Set, name: &str, value: &str) {
    let mut ing: Value = set.fake.get(ING, "shop", name).unwrap();
    ing["metadata"]["labels"] = json!({"touched": value});
    set.fake.put("ingresses", ing);
}

/// The operator's request for Ingress `shop/<name>` in the asks' ConfigMap, if any.
fn request_of(set: &Set, name: &str) -> Option<String> {
    let cm = set.fake.get("v1/configmaps", CONTROLLER_NS, &asks_name(BASE))?;
    cm["data"][format!("shop.{name}")].as_str().map(str::to_string)
}

/// The operator moves c to `rset-3`, whose create never returns (`move_target_timeout = 3`).
/// Within the bound plus a second, the move is rolled back: a Warning `MoveRolledBack` on c
/// names the group, the target and the reason; c stayed on `rset-2` throughout (its status
/// never named `rset-3`, its routes never left `rset-2`), the store records no move and c on
/// `rset-2`, the operator's request is removed, and the move does not start again. Released,
/// `rset-3` syncs again without c's routes. Before: the move waited for ever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_move_whose_target_is_not_active_in_time_is_rolled_back() {
    let set = c_on_the_second_router("move_target_timeout = 3", &[2]).await;
    move_c_to_the_third_router(&set).await;
    // Recorded when the job that told MoveStarted ends (its Events come first).
    eventually("the move recorded", 3, || move_record(&set.fake, "c")).await;
    let started = std::time::Instant::now();
    let note = eventually("MoveRolledBack on c", 15, || set.notes("c", "MoveRolledBack").into_iter().next()).await;
    assert!(started.elapsed() < Duration::from_secs(6), "rolled back at its bound: {:?}", started.elapsed());
    for part in ["c.example.com", "rset-3", "rset-2", "within 3 s", "move_target_timeout"] {
        assert!(note.contains(part), "{part} in {note}");
    }
    eventually("no move recorded, c on rset-2", 10, || {
        (move_record(&set.fake, "c").is_none() && recorded_router(&set.fake, "c")? == "rset-2").then_some(())
    })
    .await;
    eventually("the operator's request removed", 10, || request_of(&set, "c").is_none().then_some(())).await;
    // Long enough for a restart of the move to show (the hold is the bound, 3 s).
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert_eq!(set.notes("c", "MoveStarted").len(), 1, "not started again");
    assert_eq!(set.addresses("c"), [SECOND]);
    assert!(!published(&set.fake, "c", &[SECOND, THIRD]) && !published(&set.fake, "c", &[THIRD]), "never rset-3");
    assert!(set.hosts_of(1).contains(&"c.example.com".to_string()), "the source kept c's routes");
    set.hang(2, false);
    eventually("rset-3 synced again without c", 20, || {
        (set.syncs(2) >= 2 && !set.hosts_of(2).contains(&"c.example.com".to_string())).then_some(())
    })
    .await;
    set.stop().await;
}

/// The create of `rset-3` returns, successfully, after c's move to it was rolled back: that
/// late job (of the placement before the rollback, which put c on `rset-3`) records nothing for
/// c, which stays recorded on `rset-2` (a restart then places it there). `rset-2` hangs from
/// the rollback on, so none of its Syncs could correct the record. Before: the late job
/// recorded c on `rset-3` until `rset-2` synced again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_created_after_the_rollback_records_nothing_for_the_group() {
    let set = c_on_the_second_router("move_target_timeout = 3", &[2]).await;
    move_c_to_the_third_router(&set).await;
    eventually("MoveRolledBack on c", 15, || set.notes("c", "MoveRolledBack").into_iter().next()).await;
    eventually("no move recorded, c on rset-2", 10, || {
        (move_record(&set.fake, "c").is_none() && recorded_router(&set.fake, "c")? == "rset-2").then_some(())
    })
    .await;
    set.hang(1, true);
    // A job of rset-2's already past its wait ends meanwhile.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = set.syncs(2);
    set.hang(2, false);
    eventually("rset-3's late create done", 10, || (set.syncs(2) > before).then_some(())).await;
    // The late job's outputs (its records among them) are written after its Sync: sampled for
    // a while after it.
    for _ in 0..30 {
        assert_eq!(recorded_router(&set.fake, "c").as_deref(), Some("rset-2"), "c recorded on its source only");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(set.addresses("c"), [SECOND]);
    set.stop().await;
}

/// The operator cancels the move of c to `rset-3` while `rset-3`'s create hangs (the bound is
/// far): rolled back at the next Sync, a Warning `MoveCancelled` naming the group and the
/// target; c stays on `rset-2`, no move recorded, the cancel request removed. Before: the
/// cancel request was read as a router name and refused, the move went on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_move_is_rolled_back_before_its_target_serves() {
    let set = c_on_the_second_router("", &[2]).await;
    let api = configmaps(&set).await;
    move_c_to_the_third_router(&set).await;
    request_cancel(&api, BASE, "shop/c").await.unwrap();
    assert_eq!(request_of(&set, "c").as_deref(), Some("cancel"), "the cancel replaces the request");
    // No Ingress change: the controller reads the cancel by itself while a move is in progress.
    let note = eventually("MoveCancelled on c", 15, || set.notes("c", "MoveCancelled").into_iter().next()).await;
    for part in ["c.example.com", "rset-3", "stays on rset-2", "--cancel"] {
        assert!(note.contains(part), "{part} in {note}");
    }
    eventually("no move recorded, c on rset-2", 10, || {
        (move_record(&set.fake, "c").is_none() && recorded_router(&set.fake, "c")? == "rset-2").then_some(())
    })
    .await;
    eventually("the cancel request removed", 10, || request_of(&set, "c").is_none().then_some(())).await;
    assert_eq!(set.addresses("c"), [SECOND]);
    assert!(set.hosts_of(1).contains(&"c.example.com".to_string()), "the source kept c's routes");
    set.stop().await;
}

/// The operator cancels the move of c to `rset-3` once `rset-3` serves it (both addresses
/// published, `move_dns_grace = 3`): c goes back make-before-break. Its status shows `rset-2`
/// alone again while `rset-3` still routes c (for the grace), then `rset-3`'s routes for c go
/// and the move back is done; c recorded on `rset-2`. A Warning `MoveCancelled` says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_move_cancelled_once_its_target_serves_goes_back_make_before_break() {
    let set = c_on_the_second_router("move_dns_grace = 3", &[]).await;
    let api = configmaps(&set).await;
    request_move(&api, BASE, "shop/c", Some("rset-3")).await.unwrap();
    touch(&set, "c", "1");
    eventually("c published on both", 20, || published(&set.fake, "c", &[SECOND, THIRD]).then_some(())).await;
    request_cancel(&api, BASE, "shop/c").await.unwrap();
    touch(&set, "c", "2");
    let note = eventually("MoveCancelled on c", 10, || set.notes("c", "MoveCancelled").into_iter().next()).await;
    assert!(note.contains("goes back to rset-2 make-before-break"), "{note}");
    eventually("c's status back on rset-2 alone", 10, || (set.addresses("c") == [SECOND]).then_some(())).await;
    assert!(set.hosts_of(2).contains(&"c.example.com".to_string()), "rset-3 still serves c during the grace");
    assert!(set.hosts_of(1).contains(&"c.example.com".to_string()), "rset-2 serves c");
    eventually("rset-3's routes for c gone, the way back done", 20, || {
        let done = !set.hosts_of(2).contains(&"c.example.com".to_string()) && move_record(&set.fake, "c").is_none();
        (done && recorded_router(&set.fake, "c")? == "rset-2").then_some(())
    })
    .await;
    assert_eq!(set.addresses("c"), [SECOND]);
    assert!(set.hosts_of(1).contains(&"c.example.com".to_string()), "rset-2 kept c's routes throughout");
    set.stop().await;
}

/// The hold after an automatic move's rollback outlives a restart. Four one-policy Ingresses
/// recorded on `rset` at two policies a router: c and d leave for a new `rset-2`, whose create
/// never returns (`move_target_timeout = 10`): rolled back, and held off `rset-2` for 10 s, the
/// hold recorded with its expiry in the controller's ConfigMaps (the same placement then sends
/// the excess to `rset-3`, which hangs too). The controller restarts (its routers' Octavia
/// anew, hanging again): until the hold ends, no move of c to `rset-2` is recorded, and the
/// new leader keeps the hold in the records it writes (it read it back: `router_set`'s
/// `a_new_leader_sees_growth_from_the_recorded_costs` shows a hold read back stops the move).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hold_of_a_rolled_back_move_outlives_a_restart() {
    let fake = crate::support::fake_api::Fake::new();
    fake.put("ingressclasses", class());
    fake.put("services", service());
    for name in ["a", "b", "c", "d"] {
        fake.put("ingresses", ingress(name));
    }
    // Each with its group's cost as accepted: nothing grew, the excess moves (the largest
    // groups stay: a and b by name).
    let mut recorded = records_of(&[("a", "rset"), ("b", "rset"), ("c", "rset"), ("d", "rset")]);
    for (host, record) in recorded.hosts.iter_mut() {
        *record = record.clone().with_cost(host.clone(), kuryr_l7_router::placement::Cost::new(1, 0));
    }
    put_records(&fake, &recorded);
    let options = "move_target_timeout = 10";
    let first = start_on(fake.clone(), options, &[1, 2]).await;
    eventually("the excess move started, recorded", 20, || move_record(&fake, "c")).await;
    eventually("MoveRolledBack on c", 20, || first.notes("c", "MoveRolledBack").into_iter().next()).await;
    let hold = eventually("the hold recorded, the move not", 10, || {
        let records = records(&fake)?;
        records.moves.is_empty().then_some(())?;
        records.holds.into_iter().next()
    })
    .await;
    assert_eq!((hold.to, hold.hosts.contains("c.example.com")), (1, true), "{hold:?}");
    // Stopping releases the hanging create: it fails (not built), as it would have at Octavia.
    // (Had it succeeded, that late job of the placement before the rollback would record
    // nothing for c and d: `a_target_created_after_the_rollback_records_nothing_for_the_group`.)
    first.fail(1);
    first.stop().await;

    let again = start_on(fake.clone(), options, &[1, 2]).await;
    let now = || std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    assert!(hold.until >= now() + 3, "the restart came within the hold ({hold:?}, now {})", now());
    let mut samples = 0;
    while now() + 1 < hold.until {
        let to_held = move_record(&fake, "c").is_some_and(|m| m["to"] == 1);
        assert!(!to_held, "the move to rset-2 started again while the hold lasts");
        // Rewritten by the new leader with every change of the records: read back, kept.
        assert!(records(&fake).unwrap().holds.contains(&hold), "the hold kept by the new leader");
        samples += 1;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(samples > 20, "sampled the hold ({samples})");
    again.stop().await;
}
