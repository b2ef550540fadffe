//! `show` with scale-out reads every router of the set and the Gateways' routers, found by our
//! ownership tags, and `--router NAME` reads one. Runs the binary against a scripted Keystone and
//! Octavia on loopback that answers by path (no OpenStack): every request is a read.

use crate::support::http_request;

use serde_json::{Value, json};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

/// The load balancers with our tags: two routers of the set `edge`, a Gateway's, and one named
/// like the set but with no index of it.
const OURS: [&str; 4] = ["edge", "edge-2", "kuryr-gw-00000000000000ff-shop.web", "edge-1"];

async fn serve(mut conn: TcpStream, port: u16, seen: Arc<Mutex<Vec<String>>>) {
    let Some((head, _)) = http_request::read_request(&mut conn).await else { return };
    let line = head.lines().next().unwrap_or_default().to_string();
    let lb = |name: &str| json!({"id": format!("id-{name}"), "name": name, "provisioning_status": "ACTIVE"});
    let (status, body, extra) = if line.starts_with("POST /v3/auth/tokens") {
        let url = format!("http://127.0.0.1:{port}");
        let token = json!({"token": {
            "expires_at": "2099-01-01T00:00:00.000000Z", "issued_at": "2026-01-01T00:00:00.000000Z",
            "user": {"id": "u"}, "project": {"id": "p"}, "roles": [{"name": "member"}],
            "catalog": [
                {"type": "load-balancer", "endpoints": [{"interface": "public", "region": "RegionOne", "url": url}]},
                {"type": "network", "endpoints": [{"interface": "public", "region": "RegionOne", "url": url}]}]}});
        (201, token, "X-Subject-Token: t\r\n")
    } else {
        seen.lock().unwrap().push(line.clone());
        let path = line.split(' ').nth(1).unwrap_or_default();
        let name = path.split(['?', '&']).find_map(|kv| kv.strip_prefix("name="));
        if path.starts_with("/v2/lbaas/loadbalancers") {
            let lbs: Vec<Value> = match name {
                Some(n) => OURS.iter().filter(|o| **o == n).map(|o| lb(o)).collect(),
                None => OURS.iter().map(|o| lb(o)).collect(),
            };
            (200, json!({"loadbalancers": lbs}), "")
        } else if path.starts_with("/v2/lbaas/listeners") {
            (200, json!({"listeners": []}), "")
        } else if path.starts_with("/v2.0/floatingips") {
            (200, json!({"floatingips": []}), "")
        } else {
            (404, json!({"faultstring": "not scripted"}), "")
        }
    };
    let body = body.to_string();
    let resp = format!(
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = conn.write_all(resp.as_bytes()).await;
    let _ = conn.shutdown().await;
}

async fn cloud() -> (u16, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let recorded = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((conn, _)) = listener.accept().await else { return };
            tokio::spawn(serve(conn, port, recorded.clone()));
        }
    });
    (port, seen)
}

/// Runs `kuryr-l7-router show <args>` on a kuryr.conf pointing at the scripted cloud (off the
/// test's runtime: the server answers meanwhile).
async fn show(port: u16, scale_out: bool, args: &[&str]) -> (Option<i32>, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("kuryr.conf");
    let text = format!(
        "[kubernetes]\nenable_ingress = True\ncluster_name = c1\n\n[neutron_defaults]\nlb_subnet = 3c0f6c8e-1b2d-4c3e-8f9a-0b1c2d3e4f5a\n\n\
         [octavia_defaults]\nl7_router_name = edge\nscale_out = {scale_out}\n\n\
         [neutron]\nauth_url = http://127.0.0.1:{port}/v3\nusername = u\npassword = p\nproject_name = p\n"
    );
    std::fs::write(&conf, text).unwrap();
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let out = tokio::task::spawn_blocking(move || {
        let mut c = Command::new(env!("CARGO_BIN_EXE_kuryr-l7-router"));
        c.env_remove("RUST_LOG").stdin(Stdio::null());
        for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("KURYR_")) {
            c.env_remove(k);
        }
        c.arg("--config-file").arg(&conf).arg("show").args(&args).output().expect("the binary runs")
    })
    .await
    .unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

fn names(json_out: &str) -> Vec<String> {
    let v: Value = serde_json::from_str(json_out).unwrap_or_else(|e| panic!("{e}: {json_out}"));
    let one = |r: &Value| r["name"].as_str().unwrap_or_default().to_string();
    match v.as_array() {
        Some(all) => all.iter().map(one).collect(),
        None => vec![one(&v)],
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn show_lists_every_router_of_the_set_and_the_gateways_routers() {
    let (port, seen) = cloud().await;
    let (code, out, err) = show(port, true, &["-o", "json"]).await;
    assert_eq!(code, Some(0), "{out}{err}");
    assert_eq!(names(&out), ["edge", "edge-2", "kuryr-gw-00000000000000ff-shop.web"], "edge-1 is not of the set");
    let (code, out, err) = show(port, true, &[]).await;
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("==== ROUTER edge-2 ====") && out.contains("==== ROUTER edge ===="), "{out}");
    // One router: printed as before, one JSON object.
    let (code, out, err) = show(port, true, &["--router", "edge-2", "-o", "json"]).await;
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(serde_json::from_str::<Value>(&out).unwrap().is_object(), "{out}");
    assert_eq!(names(&out), ["edge-2"]);
    let (code, _, err) = show(port, true, &["--router", "edge-1"]).await;
    assert_ne!(code, Some(0), "{err}");
    assert!(err.contains("no router edge-1") && err.contains("edge-2"), "{err}");
    assert!(seen.lock().unwrap().iter().all(|l| l.starts_with("GET ")), "reads only: {:?}", seen.lock().unwrap());
}
