//! `kuryr-l7-router teardown` against a scripted Keystone, Octavia and Neutron on loopback (it
//! filters load balancers by name and tags as Octavia does, and records every request) and the
//! fake Kubernetes API server: it deletes this set's load balancers, the floating IPs allocated
//! for them and the set's ConfigMaps, and keeps everything else (a load balancer named like the
//! set without our set tag, another instance's, another product's, a floating IP the operator
//! made, another set's ConfigMaps); without `--yes` and without a terminal it deletes nothing.

use crate::controller_set_records::{CONTROLLER_NS, put_records, records_of};
use crate::support::fake_api::Fake;
use crate::support::http_request;
use kuryr_l7_router::controller::router_set::store::{asks_name, config_maps, shard_name};
use kuryr_l7_router::controller::stamp_store;
use serde_json::{Value, json};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use tokio::net::TcpStream;

const BASE: &str = "rset";

/// (name, id, tags, VIP port): `ours` are the ownership tags, `set` our set tag.
fn load_balancers(ours: &[String], set: &str) -> Vec<(String, Vec<String>)> {
    let with = |extra: &[&str]| ours.iter().cloned().chain(extra.iter().map(|t| t.to_string())).collect::<Vec<_>>();
    vec![
        ("rset".into(), with(&[set])),
        ("rset-2".into(), with(&[set])),
        // Named like the set, no set tag (made before set tags; maybe another instance's).
        ("rset-3".into(), with(&[])),
        // Another instance's set.
        ("rset-4".into(), with(&["router-set:other"])),
        // Another product's.
        ("rset-5".into(), vec!["someone-else".into()]),
    ]
}

fn decode(s: &str) -> String {
    let mut out = Vec::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            out.push(u8::from_str_radix(&s[i + 1..i + 3], 16).unwrap());
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

struct Cloud {
    lbs: Vec<(String, Vec<String>)>,
    /// (id, VIP port, description)
    fips: Vec<(String, String, String)>,
    seen: Vec<String>,
}

async fn serve(mut conn: TcpStream, port: u16, cloud: Arc<Mutex<Cloud>>) {
    let Some((head, _)) = http_request::read_request(&mut conn).await else { return };
    let line = head.lines().next().unwrap_or_default().to_string();
    let (status, body, extra) = if line.starts_with("POST /v3/auth/tokens") {
        (201, http_request::keystone_token(port, &["load-balancer", "network"]), "X-Subject-Token: t\r\n")
    } else {
        let mut c = cloud.lock().unwrap();
        c.seen.push(line.clone());
        let (method, target) = line.split_once(' ').unwrap_or_default();
        let target = target.split(' ').next().unwrap_or_default();
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        let param = |k: &str| query.split('&').find_map(|kv| kv.strip_prefix(&format!("{k}="))).map(decode);
        match (method, path) {
            ("GET", "/v2/lbaas/loadbalancers") => {
                let tags: Vec<String> =
                    param("tags").map(|t| t.split(',').map(String::from).collect()).unwrap_or_default();
                let name = param("name");
                let lbs: Vec<Value> = c
                    .lbs
                    .iter()
                    .filter(|(n, t)| name.as_ref().is_none_or(|w| w == n) && tags.iter().all(|w| t.contains(w)))
                    .map(|(n, t)| {
                        json!({"id": format!("id-{n}"), "name": n, "tags": t, "provisioning_status": "ACTIVE",
                               "operating_status": "ONLINE", "vip_port_id": format!("port-{n}"), "vip_address": "10.0.0.1"})
                    })
                    .collect();
                (200, json!({"loadbalancers": lbs}), "")
            }
            ("GET", "/v2.0/floatingips") => {
                let port = param("port_id");
                let fips: Vec<Value> = c
                    .fips
                    .iter()
                    .filter(|(_, p, _)| port.as_ref().is_none_or(|w| w == p))
                    .map(|(id, p, d)| json!({"id": id, "port_id": p, "description": d, "floating_ip_address": "172.24.4.9"}))
                    .collect();
                (200, json!({"floatingips": fips}), "")
            }
            ("DELETE", p) if p.starts_with("/v2/lbaas/loadbalancers/id-") => {
                let name = p.trim_start_matches("/v2/lbaas/loadbalancers/id-").to_string();
                c.lbs.retain(|(n, _)| *n != name);
                (204, Value::Null, "")
            }
            ("DELETE", p) if p.starts_with("/v2.0/floatingips/") => {
                let id = p.trim_start_matches("/v2.0/floatingips/").to_string();
                c.fips.retain(|(i, _, _)| *i != id);
                (204, Value::Null, "")
            }
            _ => (404, json!({"faultstring": "not scripted"}), ""),
        }
    };
    let body = if body.is_null() { String::new() } else { body.to_string() };
    http_request::respond_json(&mut conn, status, &body, extra).await;
}

async fn start_cloud(cloud: Arc<Mutex<Cloud>>) -> u16 {
    http_request::serve_on_loopback(move |conn, port| serve(conn, port, cloud.clone())).await
}

fn conf_text(port: u16, api_root: &str, token: &std::path::Path) -> String {
    format!(
        "[kubernetes]\napi_root = {api_root}\ntoken_file = {}\nenable_ingress = True\ncluster_name = c1\n\n\
         [neutron_defaults]\nlb_subnet = 3c0f6c8e-1b2d-4c3e-8f9a-0b1c2d3e4f5a\n\n\
         [octavia_defaults]\nl7_router_name = {BASE}\nscale_out = True\n\n\
         [neutron]\nauth_url = http://127.0.0.1:{port}/v3\nusername = u\npassword = p\nproject_name = p\n",
        token.display()
    )
}

fn config_map(name: &str, labels: Value, annotations: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "namespace": CONTROLLER_NS, "labels": labels, "annotations": annotations},
           "data": {"x": "y"}})
}

/// The set's ConfigMaps and others: another set's records, another router's stamps, the
/// controller's Lease-side objects.
fn kubernetes() -> Arc<Fake> {
    let fake = Fake::new();
    put_records(&fake, &records_of(&[("a", "rset"), ("c", "rset-2")]));
    let other = records_of(&[]);
    for cm in config_maps("other", &other, 1) {
        let mut v = serde_json::to_value(cm).unwrap();
        v["metadata"]["namespace"] = json!(CONTROLLER_NS);
        fake.put("configmaps", v);
    }
    fake.put("configmaps", config_map(&asks_name(BASE), json!({}), json!({})));
    for router in ["rset", "rset-2", "rset-3", "kuryr-gw-00000000000000ff-shop.web"] {
        let name = stamp_store::config_map_name(router);
        fake.put("configmaps", config_map(&name, json!({}), json!({})));
    }
    fake.put("configmaps", config_map("unrelated", json!({}), json!({})));
    fake
}

fn config_map_names(fake: &Fake) -> Vec<String> {
    let mut names: Vec<String> = [
        shard_name(BASE, 1, 0),
        shard_name("other", 1, 0),
        asks_name(BASE),
        stamp_store::config_map_name("rset"),
        stamp_store::config_map_name("rset-2"),
        stamp_store::config_map_name("rset-3"),
        stamp_store::config_map_name("kuryr-gw-00000000000000ff-shop.web"),
        "unrelated".into(),
    ]
    .into_iter()
    .filter(|n| fake.get("v1/configmaps", CONTROLLER_NS, n).is_some())
    .collect();
    names.sort();
    names
}

fn run_binary(conf: &std::path::Path, args: &[&str]) -> (Option<i32>, String, String) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_kuryr-l7-router"));
    c.env_remove("RUST_LOG").stdin(Stdio::null());
    for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("KURYR_")) {
        c.env_remove(k);
    }
    let out = c.arg("--config-file").arg(conf).arg("teardown").args(args).output().expect("the binary runs");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn teardown_deletes_the_sets_objects_and_keeps_everything_else() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let (dir, token) = crate::support::fake_settings::token_file();
    let fake = kubernetes();
    let (api_root, _) = fake.serve().await;
    let settings = |port: u16| {
        let text = conf_text(port, &api_root, &token);
        kuryr_l7_router::config::load_texts(&[("teardown.conf".into(), text)], Vec::new()).unwrap().settings
    };
    let own = kuryr_l7_router::wiring::ownership(&settings(1));
    let ours = own.ownership_tags();
    let set_tag = own.router_tags().into_iter().find(|t| t.starts_with("router-set:")).expect("a set tag");
    // How the driver describes a floating IP it allocated (`driver::floating_ip`).
    let product = kuryr_l7_router::driver::ownership::PRODUCT_TAG;
    let marker = |router: &str| format!("{product} {} router {router}", ours[1]);
    let cloud = Arc::new(Mutex::new(Cloud {
        lbs: load_balancers(&ours, &set_tag),
        fips: vec![
            ("fip-rset".into(), "port-rset".into(), marker("rset")),
            ("fip-rset-2".into(), "port-rset-2".into(), marker("rset-2")),
            // Made by the operator for another router named like ours: not ours.
            ("fip-rset-3".into(), "port-rset-3".into(), "the operator's".into()),
        ],
        seen: Vec::new(),
    }));
    let port = start_cloud(cloud.clone()).await;
    let conf = dir.path().join("kuryr.conf");
    std::fs::write(&conf, conf_text(port, &api_root, &token)).unwrap();

    // Without a terminal and without --yes: refused, nothing deleted.
    let refused = conf.clone();
    let (code, out, err) = tokio::task::spawn_blocking(move || run_binary(&refused, &[])).await.unwrap();
    assert_ne!(code, Some(0), "{out}{err}");
    assert!(err.contains("--yes"), "{err}");
    assert!(out.contains("rset-2, rset") && out.contains("kept (not tagged as this set's): rset-3"), "{out}");
    assert!(cloud.lock().unwrap().seen.iter().all(|l| l.starts_with("GET ")), "{:?}", cloud.lock().unwrap().seen);
    assert_eq!(config_map_names(&fake).len(), 8, "no ConfigMap deleted");

    let (code, out, err) = tokio::task::spawn_blocking(move || run_binary(&conf, &["--yes"])).await.unwrap();
    assert_eq!(code, Some(0), "{out}{err}");
    let c = cloud.lock().unwrap();
    let left: Vec<&str> = c.lbs.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(left, ["rset-3", "rset-4", "rset-5"], "the set's load balancers deleted, the others kept");
    let fips: Vec<&str> = c.fips.iter().map(|(id, _, _)| id.as_str()).collect();
    assert_eq!(fips, ["fip-rset-3"], "our floating IPs deleted, the operator's kept");
    let deletes: Vec<&String> = c.seen.iter().filter(|l| l.starts_with("DELETE ")).collect();
    assert_eq!(deletes.len(), 4, "{deletes:?}");
    let mut want = vec![
        shard_name("other", 1, 0),
        stamp_store::config_map_name("rset-3"),
        stamp_store::config_map_name("kuryr-gw-00000000000000ff-shop.web"),
        "unrelated".to_string(),
    ];
    want.sort();
    assert_eq!(config_map_names(&fake), want, "the set's ConfigMaps deleted, the others kept");
}
