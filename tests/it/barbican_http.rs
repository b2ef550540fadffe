//! The Barbican client over real HTTP against a scripted Keystone + Barbican on loopback: request
//! shapes, pagination, 404 on delete, error mapping, and that neither the payload nor the token
//! shows up in any log line or request record.

use crate::support::{http_request, logs};

use base64::Engine;
use kuryr_l7_router::openstack::*;
use kuryr_l7_router::secret::Secret;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use tokio::net::TcpStream;

const TOKEN: &str = "gAAAAAtoken-XYZ-0123456789";
const ID: &str = "2a549393-0710-444b-8aa5-84cf0f85ea79";

/// One request as the server saw it.
#[derive(Clone, Debug)]
struct Seen {
    method: String,
    /// Path and query, as sent.
    target: String,
    headers: String,
    body: String,
}

impl Seen {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap()
    }
    fn query(&self) -> BTreeMap<String, String> {
        let url = url::Url::parse(&format!("http://x{}", self.target)).unwrap();
        url.query_pairs().map(|(k, v)| (k.into_owned(), v.into_owned())).collect()
    }
    fn path(&self) -> &str {
        self.target.split('?').next().unwrap()
    }
}

type Handler = Arc<dyn Fn(&Seen, u16) -> (u16, Value) + Send + Sync>;

/// Keystone (`POST /v3/auth/tokens`, catalog with `key-manager` at `catalog_suffix`) and a
/// Barbican answered by `handler` (given the request and the server's port).
struct Cloud {
    port: u16,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Cloud {
    async fn start(catalog_suffix: &'static str, handler: Handler) -> Cloud {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let recorded = seen.clone();
        let port = http_request::serve_on_loopback(move |conn, port| {
            serve(conn, port, catalog_suffix, handler.clone(), recorded.clone())
        })
        .await;
        Cloud { port, seen }
    }

    fn barbican(&self, observer: Observer) -> Barbican {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let url = format!("http://127.0.0.1:{}/v3", self.port);
        let auth = AuthOptions::password(&url, "u", Secret::new("password-not-logged"), "p", "Default");
        Barbican::new(Session::with_observer(auth, observer).unwrap())
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

async fn serve(mut conn: TcpStream, port: u16, suffix: &str, handler: Handler, seen: Arc<Mutex<Vec<Seen>>>) {
    let Some((head, body)) = http_request::read_request(&mut conn).await else {
        return;
    };
    let mut first = head.lines().next().unwrap_or_default().split(' ');
    let req = Seen {
        method: first.next().unwrap_or_default().into(),
        target: first.next().unwrap_or_default().into(),
        headers: head.clone(),
        body: String::from_utf8_lossy(&body).into(),
    };
    let (status, body, extra) = if req.method == "POST" && req.target == "/v3/auth/tokens" {
        let token = json!({"token": {
            "expires_at": "2099-01-01T00:00:00.000000Z", "issued_at": "2026-01-01T00:00:00.000000Z",
            "user": {"id": "u"}, "project": {"id": "p"}, "roles": [{"name": "creator"}],
            "catalog": [{"type": "key-manager", "endpoints": [
                {"interface": "public", "region": "RegionOne", "url": format!("http://127.0.0.1:{port}{suffix}")}]}]
        }});
        (201, token, format!("X-Subject-Token: {TOKEN}\r\n"))
    } else {
        seen.lock().unwrap().push(req.clone());
        let (s, b) = handler(&req, port);
        (s, b, String::new())
    };
    let body = if body.is_null() { String::new() } else { body.to_string() };
    http_request::respond_json(&mut conn, status, &body, &extra).await;
}

fn records() -> (Arc<Mutex<Vec<String>>>, Observer) {
    let recs = Arc::new(Mutex::new(Vec::new()));
    let r = recs.clone();
    (recs, Arc::new(move |rec: &RequestRecord| r.lock().unwrap().push(format!("{rec:?}"))))
}

fn secret_json(port: u16, i: usize, name: &str) -> Value {
    json!({"secret_ref": format!("http://127.0.0.1:{port}/v1/secrets/00000000-0000-0000-0000-{i:012}"),
           "name": name, "status": "ACTIVE", "secret_type": "opaque", "created": "2026-01-01T00:00:00",
           "content_types": {"default": "application/octet-stream"}})
}

#[tokio::test]
async fn create_sends_an_opaque_base64_secret_and_never_logs_the_payload() {
    let capture = logs::capture();
    let handler: Handler = Arc::new(|_req: &Seen, port: u16| {
        (201, json!({"secret_ref": format!("http://127.0.0.1:{port}/v1/secrets/{ID}")}))
    });
    let cloud = Cloud::start("", handler).await;
    let (recs, observer) = records();
    let b = cloud.barbican(observer);
    // A payload with a recognisable text inside, and binary bytes.
    let mut payload = b"-----BEGIN PRIVATE KEY----- very secret key bytes".to_vec();
    payload.extend((0u8..=255).cycle().take(3000));
    let secret_ref = b.create_secret("kuryr-l7-router-c1-0123456789abcdef", &payload).await.unwrap();
    assert_eq!(secret_ref, format!("http://127.0.0.1:{}/v1/secrets/{ID}", cloud.port));

    let seen = cloud.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!((seen[0].method.as_str(), seen[0].target.as_str()), ("POST", "/v1/secrets"));
    assert!(seen[0].headers.contains(TOKEN), "authenticated with the session's token");
    let body = seen[0].json();
    let encoded = base64::engine::general_purpose::STANDARD.encode(&payload);
    assert_eq!(
        body,
        json!({"name": "kuryr-l7-router-c1-0123456789abcdef", "secret_type": "opaque", "payload": encoded,
               "payload_content_type": "application/octet-stream", "payload_content_encoding": "base64"})
    );

    let logs = capture.text();
    assert!(logs.contains("openstack request"), "debug request line captured: {logs}");
    let recs = recs.lock().unwrap().join("\n");
    assert!(recs.contains("Barbican") && recs.contains("secrets"), "{recs}");
    for text in [&logs, &recs] {
        assert!(!text.contains(&encoded[..16]) && !text.contains(&encoded[2000..2016]), "payload in {text}");
        assert!(!text.contains("very secret"), "payload in {text}");
        assert!(!text.contains(TOKEN) && !text.contains("password-not-logged"), "credential in {text}");
    }
    // Barbican calls are observed but not counted as load-balancer work.
    assert_eq!(b.session().stats().writes, 0);
    assert_eq!(b.session().stats().requests, 0);
}

#[tokio::test]
async fn list_follows_offsets_and_keeps_only_the_exact_prefix() {
    let handler: Handler = Arc::new(|req: &Seen, port: u16| {
        let q = req.query();
        let offset: usize = q["offset"].parse().unwrap();
        let limit: usize = q["limit"].parse().unwrap();
        // 230 secrets matched by LIKE 'kuryr-a%' (one of them `kuryr-A...`, case-insensitive collation).
        let all: Vec<Value> = (0..230)
            .map(|i| {
                let name = if i == 7 { "KURYR-a-upper".to_string() } else { format!("kuryr-a-{i}") };
                secret_json(port, i, &name)
            })
            .collect();
        let page: Vec<Value> = all.iter().skip(offset).take(limit).cloned().collect();
        (200, json!({"secrets": page, "total": all.len()}))
    });
    let cloud = Cloud::start("", handler).await;
    let b = cloud.barbican(records().1);
    let got = b.list_secrets("kuryr-a").await.unwrap();
    assert_eq!(got.len(), 229, "one name differs in case");
    assert!(got.iter().all(|s| s.name.as_deref().unwrap().starts_with("kuryr-a-")));
    assert_eq!(got[0].id(), "00000000-0000-0000-0000-000000000000");
    assert_eq!(got[0].content_types["default"], "application/octet-stream");
    let seen = cloud.seen();
    let offsets: Vec<String> = seen.iter().map(|s| s.query()["offset"].clone()).collect();
    assert_eq!(offsets, ["0", "100", "200"], "three pages, then total reached");
    for s in &seen {
        assert_eq!(s.path(), "/v1/secrets");
        assert_eq!(s.query()["name"], "kuryr-a%", "server-side LIKE prefix");
        assert_eq!(s.query()["limit"], "100");
    }
}

#[tokio::test]
async fn list_stops_at_an_empty_page_without_total() {
    let handler: Handler = Arc::new(|req: &Seen, port: u16| {
        let offset: usize = req.query()["offset"].parse().unwrap();
        let page: Vec<Value> =
            if offset == 0 { (0..3).map(|i| secret_json(port, i, &format!("p-{i}"))).collect() } else { vec![] };
        (200, json!({ "secrets": page }))
    });
    let cloud = Cloud::start("", handler).await;
    let got = cloud.barbican(records().1).list_secrets("p-").await.unwrap();
    assert_eq!(got.len(), 3);
    assert_eq!(cloud.seen().len(), 2);
}

#[tokio::test]
async fn delete_treats_404_as_gone_and_reports_other_errors() {
    let handler: Handler = Arc::new(|req: &Seen, _| match req.path() {
        p if p.ends_with("-000000000404") => {
            (404, json!({"code": 404, "title": "Not Found", "description": "Secret not found."}))
        }
        p if p.ends_with("-000000000500") => {
            (500, json!({"code": 500, "title": "Internal Server Error", "description": "boom"}))
        }
        _ => (204, Value::Null),
    });
    let cloud = Cloud::start("", handler).await;
    let b = cloud.barbican(records().1);
    b.delete_secret(ID).await.unwrap();
    b.delete_secret("http://elsewhere.example/v1/secrets/00000000-0000-0000-0000-000000000404").await.unwrap();
    let e = b.delete_secret("00000000-0000-0000-0000-000000000500").await.unwrap_err();
    assert_eq!(e.status(), Some(500));
    assert_eq!(e.label(), "barbican_5xx");
    assert!(e.to_string().contains("barbican DELETE /v1/secrets/00000000-0000-0000-0000-000000000500"), "{e}");
    assert!(e.to_string().contains("boom"), "{e}");
    let paths: Vec<String> = cloud.seen().iter().map(|s| format!("{} {}", s.method, s.target)).collect();
    assert_eq!(paths[0], format!("DELETE /v1/secrets/{ID}"));
    // Only the UUID of a foreign ref is used: the request went to the catalog's endpoint.
    assert_eq!(paths[1], "DELETE /v1/secrets/00000000-0000-0000-0000-000000000404");
    assert!(b.delete_secret("not-a-ref").await.is_err(), "a non-ref is refused before any request");
    // The 500 was sent 4 times (a delete is safe to send again): then the error.
    assert_eq!(cloud.seen().len(), 2 + 4);
}

/// Barbican's database deadlocks under concurrent writes and answers 500 ("Secret metadata
/// creation failure seen"); the request that is safe to send again is sent again and succeeds.
/// The POST that stores a secret is never sent twice (it would store a second secret).
#[tokio::test]
async fn a_transient_server_error_is_sent_again_but_never_a_store() {
    let failures = Arc::new(Mutex::new(1));
    let left = failures.clone();
    let handler: Handler = Arc::new(move |req: &Seen, port: u16| match (req.method.as_str(), req.path()) {
        ("PUT", p) if p.ends_with("/metadata") => {
            let mut n = left.lock().unwrap();
            if *n > 0 {
                *n -= 1;
                let why = "Secret metadata creation failure seen - please contact site administrator.";
                (500, json!({"code": 500, "title": "Internal Server Error", "description": why}))
            } else {
                (201, json!({"metadata_ref": format!("http://127.0.0.1:{port}{p}")}))
            }
        }
        ("POST", _) => (500, json!({"code": 500, "title": "Internal Server Error", "description": "deadlock"})),
        _ => (200, secret_json(port, 1, "one")),
    });
    let cloud = Cloud::start("/v1", handler).await;
    let b = cloud.barbican(records().1);
    let r = format!("http://127.0.0.1:{}/v1/secrets/{ID}", cloud.port);
    let meta: BTreeMap<String, String> = [("kuryr-cluster".to_string(), "c1".to_string())].into();
    b.set_metadata(&r, &meta).await.expect("sent again after the 500");
    let puts = cloud.seen().iter().filter(|s| s.method == "PUT").count();
    assert_eq!(puts, 2);
    let e = b.create_secret("one", b"not a certificate").await.unwrap_err();
    assert_eq!(e.status(), Some(500));
    let posts = cloud.seen().iter().filter(|s| s.method == "POST").count();
    assert_eq!(posts, 1, "a store is never sent twice");
}

#[tokio::test]
async fn acl_and_metadata_requests_and_answers() {
    let handler: Handler = Arc::new(|req: &Seen, port: u16| match (req.method.as_str(), req.path()) {
        ("GET", p) if p.ends_with("/acl") => {
            (200, json!({"read": {"project-access": false, "users": ["octavia-uid"], "created": "x", "updated": "y"}}))
        }
        ("PUT", p) if p.ends_with("/acl") => (200, json!({"acl_ref": format!("http://127.0.0.1:{port}{p}")})),
        ("GET", p) if p.ends_with("/metadata") => {
            (200, json!({"metadata": {"kuryr-cluster": "c1", "owner": "ns/tls"}}))
        }
        ("PUT", p) if p.ends_with("/metadata") => (201, json!({"metadata_ref": format!("http://127.0.0.1:{port}{p}")})),
        _ => (200, secret_json(port, 1, "one")),
    });
    let cloud = Cloud::start("/v1", handler).await;
    let b = cloud.barbican(records().1);
    let r = format!("http://127.0.0.1:{}/v1/secrets/{ID}", cloud.port);

    let acl = b.get_acl(&r).await.unwrap();
    assert_eq!(acl, barbican::ReadAcl { project_access: false, users: vec!["octavia-uid".into()] });
    b.set_read_acl(&r, &["octavia-uid".to_string()], true).await.unwrap();
    let meta: BTreeMap<String, String> =
        [("Kuryr-Cluster".to_string(), "c1".to_string()), ("owner".to_string(), "ns/tls".to_string())].into();
    b.set_metadata(&r, &meta).await.unwrap();
    let got = b.get_metadata(&r).await.unwrap();
    assert_eq!(got.get("kuryr-cluster").map(String::as_str), Some("c1"));
    let info = b.get_secret(&r).await.unwrap();
    assert_eq!(info.name.as_deref(), Some("one"));

    let seen = cloud.seen();
    let lines: Vec<String> = seen.iter().map(|s| format!("{} {}", s.method, s.target)).collect();
    // The catalog URL ends with /v1: it is not doubled.
    assert_eq!(
        lines,
        [
            format!("GET /v1/secrets/{ID}/acl"),
            format!("PUT /v1/secrets/{ID}/acl"),
            format!("PUT /v1/secrets/{ID}/metadata"),
            format!("GET /v1/secrets/{ID}/metadata"),
            format!("GET /v1/secrets/{ID}"),
        ]
    );
    assert_eq!(seen[1].json(), json!({"read": {"users": ["octavia-uid"], "project-access": true}}));
    assert_eq!(seen[2].json(), json!({"metadata": {"kuryr-cluster": "c1", "owner": "ns/tls"}}), "keys lowered");
}

#[tokio::test]
async fn an_acl_never_set_means_project_access_and_no_users() {
    let handler: Handler = Arc::new(|_: &Seen, _| (200, json!({"read": {"project-access": true}})));
    let cloud = Cloud::start("", handler).await;
    let acl = cloud.barbican(records().1).get_acl(ID).await.unwrap();
    assert_eq!(acl, barbican::ReadAcl::default());
    assert!(acl.project_access && acl.users.is_empty());
}

#[tokio::test]
async fn errors_carry_barbicans_description_and_never_the_payload() {
    let capture = logs::capture();
    // A 400 that quotes the payload back, and a 403 as Barbican words it.
    let handler: Handler = Arc::new(|req: &Seen, _| {
        let payload = req.json()["payload"].as_str().unwrap().to_string();
        if req.json()["name"] == "quoting" {
            (
                400,
                json!({"code": 400, "title": "Bad Request", "description": format!("Invalid payload '{}'", &payload[..40])}),
            )
        } else {
            let d = "Secret creation attempt not allowed - please review your user/project privileges";
            (403, json!({"code": 403, "title": "Forbidden", "description": d}))
        }
    });
    let cloud = Cloud::start("", handler).await;
    let b = cloud.barbican(records().1);
    let payload: Vec<u8> = (0..600u32).map(|i| (i * 7 % 251) as u8).collect();
    let encoded = base64::engine::general_purpose::STANDARD.encode(&payload);

    let e = b.create_secret("forbidden", &payload).await.unwrap_err();
    assert_eq!(e.status(), Some(403));
    assert_eq!(e.label(), "forbidden");
    assert_eq!(
        e.to_string(),
        "barbican POST /v1/secrets: HTTP 403: Secret creation attempt not allowed - please review your user/project \
         privileges (the OpenStack user lacks Barbican's `creator` role (or admin), needed to store TLS certificates \
         for Octavia (openstack role add --user <user> --project <project> creator))",
        "a 403 on storing a certificate names the missing role"
    );

    let e = b.create_secret("quoting", &payload).await.unwrap_err();
    assert_eq!(e.status(), Some(400));
    assert_eq!(e.to_string(), "barbican POST /v1/secrets: HTTP 400: Invalid payload '<payload>'");
    assert!(!format!("{e:?}").contains(&encoded[..40]));
    let logs = capture.text();
    assert!(!logs.contains(&encoded[..24]), "payload logged: {logs}");
}
