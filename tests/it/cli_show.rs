//! `show` with scale-out reads every router of the set and the Gateways' routers, found by our
//! ownership tags, and `--router NAME` reads one. Runs the binary against a scripted Keystone and
//! Octavia on loopback that answers by path (no OpenStack): every request is a read.

use crate::support::http_request;

use serde_json::{Value, json};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use tokio::net::TcpStream;

/// The load balancers with our tags: two routers of the set `edge`, a Gateway's, and one named
/// like the set but with no index of it.
const OURS: [&str; 4] = ["edge", "edge-2", GATEWAY, "edge-1"];

/// The Gateway's router: HTTP on 80, HTTPS on 443 and 8443, each HTTPS port validating client
/// certificates against a CA secret of its own.
const GATEWAY: &str = "kuryr-gw-00000000000000ff-shop.web";

/// What Barbican would give for a secret's payload: `show` never asks for it.
const PAYLOAD: &str = "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIA==\n-----END PRIVATE KEY-----\n";

/// The Barbican secret `n` of the Gateway's router (its ref's uuid ends in `n`).
fn secret_ref(port: u16, n: u8) -> String {
    format!("http://127.0.0.1:{port}/v1/secrets/0000000{n}-0000-4000-8000-00000000000{n}")
}

/// The Barbican names of the Gateway's secrets: its certificate, then the CAs of 443 and 8443.
fn secret_name(n: u8) -> String {
    let what =
        ["shop_tls:7f5ead3d9896a703", "client-ca.shop_ca-2:9c58b735375582d1", "client-ca.shop_ca-3:d3bd49bae8237bc6"];
    format!("kuryr-l7-router:c1:{GATEWAY}:{}", what[usize::from(n) - 1])
}

/// The Gateway router's listeners as Octavia lists them (our tags, the driver's names).
fn gateway_listeners(port: u16) -> Value {
    let tags = json!(["kuryr-l7-router", "cluster:c1"]);
    let lb = json!([{"id": format!("id-{GATEWAY}")}]);
    let https = |id: &str, name: String, p: u16, ca: u8, mode: &str| {
        json!({"id": id, "name": name, "protocol": "TERMINATED_HTTPS", "protocol_port": p, "tags": tags,
               "loadbalancers": lb, "default_tls_container_ref": secret_ref(port, 1), "sni_container_refs": [],
               "client_ca_tls_container_ref": secret_ref(port, ca), "client_authentication": mode})
    };
    json!([
        {"id": "l-80", "name": format!("{GATEWAY}-http"), "protocol": "HTTP", "protocol_port": 80, "tags": tags,
         "loadbalancers": lb},
        https("l-443", format!("{GATEWAY}-https"), 443, 2, "MANDATORY"),
        https("l-8443", format!("{GATEWAY}-https-8443"), 8443, 3, "OPTIONAL"),
        // An admin's listener on the same load balancer: listed, never read.
        {"id": "l-admin", "name": "admin-ssh", "protocol": "TCP", "protocol_port": 22, "tags": [], "loadbalancers": lb,
         "client_ca_tls_container_ref": secret_ref(port, 3), "client_authentication": "MANDATORY"},
    ])
}

/// Barbican's answer for `/v1/secrets/<uuid>[/metadata|/payload]`: the name and metadata (public
/// facts) of the Gateway's secrets.
fn barbican(path: &str, port: u16) -> (u16, Value) {
    let rest = path.trim_start_matches("/v1/secrets/");
    let (uuid, what) = rest.split_once('/').unwrap_or((rest, ""));
    let Some(n) = (1..=3).find(|n| secret_ref(port, *n).ends_with(uuid)) else {
        return (404, json!({"code": 404}));
    };
    match what {
        "" => (200, json!({"secret_ref": secret_ref(port, n), "name": secret_name(n), "status": "ACTIVE"})),
        "metadata" if n == 1 => (200, json!({"metadata": {"subject": "CN=shop.example", "sha256": "603d65f9"}})),
        "metadata" => (200, json!({"metadata": {"client-ca": format!("ConfigMap shop/ca-{n}"), "sha256": "9c58b735"}})),
        _ => (200, json!(PAYLOAD)),
    }
}

async fn serve(mut conn: TcpStream, port: u16, seen: Arc<Mutex<Vec<String>>>) {
    let Some((head, _)) = http_request::read_request(&mut conn).await else { return };
    let line = head.lines().next().unwrap_or_default().to_string();
    let lb = |name: &str| json!({"id": format!("id-{name}"), "name": name, "provisioning_status": "ACTIVE"});
    let (status, body, extra) = if line.starts_with("POST /v3/auth/tokens") {
        (
            201,
            http_request::keystone_token(port, &["load-balancer", "network", "key-manager"]),
            "X-Subject-Token: t\r\n",
        )
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
        } else if path.starts_with(&format!("/v2/lbaas/listeners?loadbalancer_id=id-{GATEWAY}")) {
            (200, json!({"listeners": gateway_listeners(port)}), "")
        } else if path.starts_with("/v2/lbaas/listeners") {
            (200, json!({"listeners": []}), "")
        } else if path.starts_with("/v2/lbaas/l7policies") {
            (200, json!({"l7policies": []}), "")
        } else if path.starts_with("/v2/lbaas/pools") {
            (200, json!({"pools": []}), "")
        } else if path.starts_with("/v1/secrets/") {
            let (status, body) = barbican(path, port);
            (status, body, "")
        } else if path.starts_with("/v2.0/floatingips") {
            (200, json!({"floatingips": []}), "")
        } else {
            (404, json!({"faultstring": "not scripted"}), "")
        }
    };
    let body = body.to_string();
    http_request::respond_json(&mut conn, status, &body, extra).await;
}

async fn cloud() -> (u16, Arc<Mutex<Vec<String>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let recorded = seen.clone();
    let port = http_request::serve_on_loopback(move |conn, port| serve(conn, port, recorded.clone())).await;
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

/// A Gateway's router: `show` lists each of its listeners (HTTP 80, HTTPS 443 and 8443) with its
/// counts and its client CA by Barbican secret name and mode, and an admin's listener on the same
/// load balancer (listed, not read), then each HTTPS port's section;
/// the secrets are described (name, metadata), never read: no payload in the output, no request
/// for one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn show_lists_each_listener_of_a_gateway_router_with_its_client_ca() {
    let (port, seen) = cloud().await;
    let (code, out, err) = show(port, false, &["--router", GATEWAY]).await;
    assert_eq!(code, Some(0), "{out}{err}");
    let table = out.split("\nLISTENERS (4)\n").nth(1).unwrap_or_else(|| panic!("no listener table:\n{out}"));
    let rows: Vec<Vec<&str>> = table.lines().skip(1).take(4).map(|l| l.split_whitespace().collect()).collect();
    let (ca_443, ca_8443) = (secret_name(2), secret_name(3));
    assert_eq!(rows[0], ["HTTP", "80", "0", "-", "-"], "{out}");
    assert_eq!(rows[1], ["TERMINATED_HTTPS", "443", "0", "1", "MANDATORY", ca_443.as_str()], "{out}");
    assert_eq!(rows[2], ["TERMINATED_HTTPS", "8443", "0", "1", "OPTIONAL", ca_8443.as_str()], "{out}");
    assert_eq!(rows[3], ["TCP", "22", "-", "-", "(not", "read:", "admin-ssh", "l-admin)"], "{out}");
    assert!(seen.lock().unwrap().iter().all(|l| !l.contains("l-admin")), "the admin's listener is not read");
    let more = out.split("HTTPS LISTENER l-8443 (TERMINATED_HTTPS port 8443)").nth(1);
    let more = more.unwrap_or_else(|| panic!("no section for the 8443 listener:\n{out}"));
    assert!(more.contains(&format!("CLIENT CERTIFICATES: OPTIONAL against {ca_8443}")), "{out}");
    assert!(more.contains("source ConfigMap shop/ca-3") && more.contains(&secret_name(1)), "{out}");
    assert!(out.contains(&format!("CLIENT CERTIFICATES: MANDATORY against {ca_443}")), "{out}");

    let (code, json_out, err) = show(port, false, &["--router", GATEWAY, "-o", "json"]).await;
    assert_eq!(code, Some(0), "{json_out}{err}");
    let v: Value = serde_json::from_str(&json_out).unwrap_or_else(|e| panic!("{e}: {json_out}"));
    assert_eq!(v["https"]["client_ca"]["name"], ca_443.as_str(), "{v}");
    assert_eq!(v["more_https"][0]["port"], 8443, "{v}");
    assert_eq!(v["more_https"][0]["client_ca"]["client_authentication"], "OPTIONAL", "{v}");
    assert_eq!(v["more_https"][0]["client_ca"]["name"], ca_8443.as_str(), "{v}");
    assert_eq!(
        v["other_listeners"],
        json!([{"listener_id": "l-admin", "name": "admin-ssh", "protocol": "TCP", "port": 22}])
    );

    for printed in [&out, &json_out] {
        assert!(!printed.contains("PRIVATE KEY") && !printed.contains("MC4CAQAw"), "key material:\n{printed}");
    }
    let seen = seen.lock().unwrap();
    assert!(seen.iter().any(|l| l.contains("/v1/secrets/")), "the secrets are described: {seen:?}");
    assert!(seen.iter().all(|l| l.starts_with("GET ") && !l.contains("/payload")), "no payload read: {seen:?}");
}
