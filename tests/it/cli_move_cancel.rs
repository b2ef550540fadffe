//! `kuryr-l7-router move NS/ING --cancel`: runs the binary against the FAKE Kubernetes API
//! server holding the set's records. A move that has not reached deleting its old routes gets
//! the cancel request (in place of its move request); one in `DeleteOld`, or no move at all, is
//! refused with the reason and nothing is written.

use crate::controller_router_set::{BASE, ingress};
use crate::controller_set_records::{CONTROLLER_NS, put_records, records_of};
use crate::support::fake_api::Fake;
use kuryr_l7_router::controller::router_set::store::asks_name;
use kuryr_l7_router::placement::assign::MoveRequest;
use kuryr_l7_router::placement::{MovePhase, MovePlan};
use std::process::{Command, Stdio};

/// Runs `move shop/c --cancel` on a kuryr.conf pointing at `api_root`.
async fn cancel(api_root: &str) -> (Option<i32>, String, String) {
    let (dir, token) = crate::support::fake_settings::token_file();
    let conf = dir.path().join("kuryr.conf");
    let text = format!(
        "[kubernetes]\napi_root = {api_root}\ntoken_file = {}\nenable_ingress = True\n\n\
         [octavia_defaults]\nl7_router_name = {BASE}\nscale_out = True\n",
        token.display()
    );
    std::fs::write(&conf, text).unwrap();
    let out = tokio::task::spawn_blocking(move || {
        let mut c = Command::new(env!("CARGO_BIN_EXE_kuryr-l7-router"));
        c.env_remove("RUST_LOG").stdin(Stdio::null());
        for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("KURYR_")) {
            c.env_remove(k);
        }
        c.arg("--config-file").arg(&conf).args(["move", "shop/c", "--cancel"]).output().expect("the binary runs")
    })
    .await
    .unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

/// The fake with Ingress c, its request to move to `rset-3`, and its move in `phase` (None: no
/// move) recorded.
async fn fake_with_move(phase: Option<MovePhase>) -> (std::sync::Arc<Fake>, String) {
    let fake = Fake::new();
    fake.put("ingresses", ingress("c"));
    let mut records = records_of(&[("c", "rset-2")]);
    if let Some(phase) = phase {
        let host = "c.example.com".to_string();
        let request = MoveRequest { group: host.clone(), hosts: [host.clone()].into(), from: 1, to: 2 };
        records.moves.insert(host, MovePlan { phase, ..MovePlan::start(&request, 1) });
    }
    put_records(&fake, &records);
    fake.put(
        "configmaps",
        serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": asks_name(BASE), "namespace": CONTROLLER_NS}, "data": {"shop.c": "rset-3"}}),
    );
    let (api_root, _) = fake.serve().await;
    (fake, api_root)
}

fn request(fake: &Fake) -> Option<String> {
    let cm = fake.get("v1/configmaps", CONTROLLER_NS, &asks_name(BASE))?;
    cm["data"]["shop.c"].as_str().map(str::to_string)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_is_written_until_the_move_deletes_its_old_routes() {
    for phase in [MovePhase::CreateOnTarget { since: 1 }, MovePhase::PublishTarget { since: 1 }] {
        let (fake, api_root) = fake_with_move(Some(phase)).await;
        let (code, out, err) = cancel(&api_root).await;
        assert_eq!(code, Some(0), "{phase:?}: {out}{err}");
        assert!(out.contains("from rset-2 to rset-3"), "{out}");
        assert_eq!(request(&fake).as_deref(), Some("cancel"), "{phase:?}: the cancel replaces the request");
    }
    let (fake, api_root) = fake_with_move(Some(MovePhase::DeleteOld { since: 1 })).await;
    let (code, out, err) = cancel(&api_root).await;
    assert_ne!(code, Some(0), "{out}{err}");
    assert!(err.contains("can no longer be cancelled") && err.contains("move shop/c rset-2"), "{err}");
    assert_eq!(request(&fake).as_deref(), Some("rset-3"), "nothing written");
    let (fake, api_root) = fake_with_move(None).await;
    let (code, _, err) = cancel(&api_root).await;
    assert_ne!(code, Some(0));
    assert!(err.contains("nothing to cancel"), "{err}");
    assert_eq!(request(&fake).as_deref(), Some("rset-3"), "nothing written");
}
