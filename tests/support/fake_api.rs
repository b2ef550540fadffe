//! A fake Kubernetes API server for tests: a small axum server on 127.0.0.1 that serves list +
//! watch (kube-runtime's default `ListWatch`: a paginated list, then `watch=true&resourceVersion=..`
//! streams of JSON lines), GET, POST, PATCH (JSON patch, merge, strategic merge and apply, the
//! last three applied as a JSON merge patch; an apply creates a missing object, as server-side
//! apply does) and DELETE on an in-memory object store, and records every write. Each address it serves on can be partitioned (answers 503). Shared by
//! `tests/it/controller_runtime.rs` and `functional/leader.rs` (`#[path = ...] mod fake_api;`).
#![allow(dead_code)] // each test crate uses a different part

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode, header};
use axum::response::Response;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::watch;

/// One write received: method, path, content type, body.
#[derive(Clone, Debug)]
pub struct Write {
    pub method: String,
    pub path: String,
    pub content_type: String,
    pub body: Value,
}

impl Write {
    pub fn line(&self) -> String {
        format!("{} {}", self.method, self.path)
    }
}

#[derive(Default)]
pub struct Store {
    pub rv: u64,
    /// (collection, namespace, name) → object. Collection: `<apiVersion>/<resource>`.
    pub objects: BTreeMap<(String, String, String), Value>,
    /// (resourceVersion, collection, namespace, event type, object): what watches stream.
    pub log: Vec<(u64, String, String, &'static str, Value)>,
    pub writes: Vec<Write>,
    /// `GET <path>?<query>` of every read (list, watch, get).
    pub reads: Vec<String>,
}

pub struct Fake {
    pub store: Mutex<Store>,
    /// The last resourceVersion: watches wait on it.
    pub rv: watch::Sender<u64>,
    /// Whether the Gateway API CRDs are installed: if not, its group answers 404 as the API
    /// server does for a resource it does not serve.
    pub gateway_api: AtomicBool,
}

/// One listening address of the fake; `down` makes it answer 503 (a partitioned replica).
#[derive(Clone)]
pub struct Front {
    pub fake: Arc<Fake>,
    pub down: Arc<AtomicBool>,
}

/// What a request path names.
pub struct Target {
    pub api_version: String,
    pub resource: String,
    pub kind: String,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub subresource: Option<String>,
}

impl Target {
    pub fn collection(&self) -> String {
        format!("{}/{}", self.api_version, self.resource)
    }
}

pub fn parse_path(path: &str) -> Option<Target> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (api_version, rest) = match segs.as_slice() {
        ["api", v, rest @ ..] => (v.to_string(), rest),
        ["apis", g, v, rest @ ..] => (format!("{g}/{v}"), rest),
        _ => return None,
    };
    let (namespace, rest) = match rest {
        ["namespaces", ns, rest @ ..] if !rest.is_empty() => (Some(ns.to_string()), rest),
        _ => (None, rest),
    };
    let (resource, name, subresource) = match rest {
        [r] => (*r, None, None),
        [r, n] => (*r, Some(n.to_string()), None),
        [r, n, s] => (*r, Some(n.to_string()), Some(s.to_string())),
        _ => return None,
    };
    let kind = match resource {
        "ingresses" => "Ingress",
        "ingressclasses" => "IngressClass",
        "services" => "Service",
        "endpointslices" => "EndpointSlice",
        "endpoints" => "Endpoints",
        "nodes" => "Node",
        "secrets" => "Secret",
        "events" => "Event",
        "leases" => "Lease",
        "configmaps" => "ConfigMap",
        "namespaces" => "Namespace",
        "gatewayclasses" => "GatewayClass",
        "gateways" => "Gateway",
        "httproutes" => "HTTPRoute",
        "referencegrants" => "ReferenceGrant",
        "backendtlspolicies" => "BackendTLSPolicy",
        "listenersets" => "ListenerSet",
        _ => return None,
    };
    Some(Target { api_version, resource: resource.into(), kind: kind.into(), namespace, name, subresource })
}

pub fn status(code: StatusCode, reason: &str, message: &str) -> Response {
    json_response(
        code,
        &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "reason": reason, "code": code.as_u16(), "message": message}),
    )
}

pub fn json_response(code: StatusCode, v: &Value) -> Response {
    Response::builder()
        .status(code)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(serde_json::to_vec(v).unwrap()))
        .unwrap()
}

/// RFC 7386 JSON merge patch.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    if let Value::Object(p) = patch {
        if !target.is_object() {
            *target = json!({});
        }
        let t = target.as_object_mut().unwrap();
        for (k, v) in p {
            if v.is_null() {
                t.remove(k);
            } else {
                merge_patch(t.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
    } else {
        *target = patch.clone();
    }
}

/// RFC 6902 JSON patch: test, add, replace, remove (no `~` escapes; enough for finalizers).
pub fn json_patch(doc: &mut Value, ops: &Value) -> Result<(), String> {
    for op in ops.as_array().ok_or("a JSON patch is an array")? {
        let path = op["path"].as_str().ok_or("op without path")?;
        let (parent, last) = path.rsplit_once('/').ok_or("bad path")?;
        let value = op["value"].clone();
        match op["op"].as_str() {
            Some("test") => {
                let current = doc.pointer(path).cloned().unwrap_or(Value::Null);
                if current != value {
                    return Err(format!("test failed at {path}: {current} != {value}"));
                }
            }
            Some(kind @ ("add" | "replace")) => match doc.pointer_mut(parent).ok_or("no parent")? {
                Value::Object(m) => {
                    m.insert(last.to_string(), value);
                }
                Value::Array(a) if last == "-" => a.push(value),
                Value::Array(a) => {
                    let i: usize = last.parse().map_err(|_| "bad index")?;
                    if kind == "add" {
                        a.insert(i, value);
                    } else {
                        *a.get_mut(i).ok_or("index out of range")? = value;
                    }
                }
                _ => return Err("parent is not a container".into()),
            },
            Some("remove") => match doc.pointer_mut(parent).ok_or("no parent")? {
                Value::Object(m) => {
                    m.remove(last).ok_or("nothing to remove")?;
                }
                Value::Array(a) => {
                    let i: usize = last.parse().map_err(|_| "bad index")?;
                    if i >= a.len() {
                        return Err("index out of range".into());
                    }
                    a.remove(i);
                }
                _ => return Err("parent is not a container".into()),
            },
            other => return Err(format!("unsupported op {other:?}")),
        }
    }
    Ok(())
}

impl Fake {
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            store: Mutex::new(Store::default()),
            rv: watch::channel(0).0,
            gateway_api: AtomicBool::new(false),
        })
    }

    /// Serves on a new 127.0.0.1 port; returns its URL and its `down` switch.
    pub async fn serve(self: &Arc<Self>) -> (String, Arc<AtomicBool>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let down = Arc::new(AtomicBool::new(false));
        let app = axum::Router::new().fallback(handle).with_state(Front { fake: self.clone(), down: down.clone() });
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        (format!("http://{addr}"), down)
    }

    /// Stores `obj` (apiVersion/kind/metadata set) as a test fixture or a change: ADDED or MODIFIED.
    pub fn put(&self, resource: &str, mut obj: Value) {
        let api_version = obj["apiVersion"].as_str().expect("apiVersion").to_string();
        let ns = obj["metadata"]["namespace"].as_str().unwrap_or_default().to_string();
        let name = obj["metadata"]["name"].as_str().expect("name").to_string();
        let mut st = self.store.lock().unwrap();
        st.rv += 1;
        let rv = st.rv;
        obj["metadata"]["resourceVersion"] = json!(rv.to_string());
        if obj["metadata"]["uid"].is_null() {
            obj["metadata"]["uid"] = json!(format!("uid-{name}"));
        }
        if resource == "namespaces" {
            // As the API server does (Kubernetes >= 1.22): Gateway selectors use it.
            obj["metadata"]["labels"]["kubernetes.io/metadata.name"] = json!(name.clone());
        }
        let collection = format!("{api_version}/{resource}");
        let key = (collection.clone(), ns.clone(), name);
        let kind = if st.objects.contains_key(&key) { "MODIFIED" } else { "ADDED" };
        st.objects.insert(key, obj.clone());
        st.log.push((rv, collection, ns, kind, obj));
        drop(st);
        self.rv.send_replace(rv);
    }

    /// Deletes the object of `resource_path` (`<apiVersion>/<resource>`): DELETED to its watches.
    pub fn remove(&self, resource_path: &str, ns: &str, name: &str) {
        let mut st = self.store.lock().unwrap();
        let key = (resource_path.to_string(), ns.to_string(), name.to_string());
        let Some(mut obj) = st.objects.remove(&key) else { return };
        st.rv += 1;
        let rv = st.rv;
        obj["metadata"]["resourceVersion"] = json!(rv.to_string());
        st.log.push((rv, key.0, key.1, "DELETED", obj));
        drop(st);
        self.rv.send_replace(rv);
    }

    pub fn get(&self, resource_path: &str, ns: &str, name: &str) -> Option<Value> {
        self.store.lock().unwrap().objects.get(&(resource_path.to_string(), ns.to_string(), name.to_string())).cloned()
    }

    pub fn writes(&self) -> Vec<Write> {
        self.store.lock().unwrap().writes.clone()
    }

    pub fn reads(&self) -> Vec<String> {
        self.store.lock().unwrap().reads.clone()
    }
}

pub async fn handle(State(front): State<Front>, req: Request) -> Response {
    if front.down.load(Ordering::SeqCst) {
        return status(StatusCode::SERVICE_UNAVAILABLE, "ServiceUnavailable", "partitioned");
    }
    let fake = front.fake;
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    let query: BTreeMap<String, String> =
        url::form_urlencoded::parse(req.uri().query().unwrap_or_default().as_bytes()).into_owned().collect();
    let content_type =
        req.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
    let bytes = axum::body::to_bytes(req.into_body(), usize::MAX).await.unwrap();
    let body: Value = if bytes.is_empty() { Value::Null } else { serde_json::from_slice(&bytes).unwrap() };
    let Some(t) = parse_path(&path) else {
        return status(StatusCode::NOT_FOUND, "NotFound", &format!("no such path {path}"));
    };
    let ns = t.namespace.clone().unwrap_or_default();
    if method == Method::GET {
        let q: Vec<String> = query.iter().map(|(k, v)| format!("{k}={v}")).collect();
        fake.store.lock().unwrap().reads.push(format!("GET {path}?{}", q.join("&")));
    }
    if t.api_version.starts_with("gateway.networking.k8s.io/") && !fake.gateway_api.load(Ordering::SeqCst) {
        return status(
            StatusCode::NOT_FOUND,
            "NotFound",
            &format!("the server could not find the requested resource {path}"),
        );
    }
    match (method.clone(), &t.name) {
        (Method::GET, None) if query.get("watch").is_some_and(|w| w == "true" || w == "1") => {
            let since = query.get("resourceVersion").and_then(|v| v.parse().ok()).unwrap_or(0);
            watch_response(fake, t, since)
        }
        (Method::GET, None) => {
            let st = fake.store.lock().unwrap();
            let items: Vec<Value> = st
                .objects
                .iter()
                .filter(|((c, n, _), _)| *c == t.collection() && (t.namespace.is_none() || *n == ns))
                .map(|(_, o)| o.clone())
                .collect();
            json_response(
                StatusCode::OK,
                &json!({"apiVersion": t.api_version, "kind": format!("{}List", t.kind),
                        "metadata": {"resourceVersion": st.rv.to_string()}, "items": items}),
            )
        }
        (Method::GET, Some(name)) => match fake.get(&t.collection(), &ns, name) {
            Some(o) => json_response(StatusCode::OK, &o),
            None => status(StatusCode::NOT_FOUND, "NotFound", &format!("{} {name} not found", t.kind)),
        },
        (Method::POST, None) => {
            let mut obj = body.clone();
            obj["apiVersion"] = json!(t.api_version);
            obj["kind"] = json!(t.kind);
            if t.namespace.is_some() {
                obj["metadata"]["namespace"] = json!(ns);
            }
            if obj["metadata"]["name"].is_null() {
                let prefix = obj["metadata"]["generateName"].as_str().unwrap_or("obj-").to_string();
                let n = fake.store.lock().unwrap().rv;
                obj["metadata"]["name"] = json!(format!("{prefix}{n:05}"));
            }
            let name = obj["metadata"]["name"].as_str().unwrap().to_string();
            if fake.get(&t.collection(), &ns, &name).is_some() {
                return status(StatusCode::CONFLICT, "AlreadyExists", &format!("{} {name} already exists", t.kind));
            }
            fake.store.lock().unwrap().writes.push(Write { method: "POST".into(), path, content_type, body });
            fake.put(&t.resource, obj);
            json_response(StatusCode::CREATED, &fake.get(&t.collection(), &ns, &name).unwrap())
        }
        (Method::PATCH, Some(name)) => {
            let apply = content_type.starts_with("application/apply-patch");
            let found = fake.get(&t.collection(), &ns, name);
            let Some(mut obj) = found.or_else(|| apply.then(|| new_object(&t, &ns, name))) else {
                return status(StatusCode::NOT_FOUND, "NotFound", &format!("{} {name} not found", t.kind));
            };
            fake.store.lock().unwrap().writes.push(Write {
                method: "PATCH".into(),
                path: path.clone(),
                content_type: content_type.clone(),
                body: body.clone(),
            });
            if content_type.starts_with("application/json-patch+json") {
                if let Err(e) = json_patch(&mut obj, &body) {
                    return status(StatusCode::UNPROCESSABLE_ENTITY, "Invalid", &e);
                }
            } else if t.subresource.as_deref() == Some("status") {
                merge_patch(&mut obj["status"], &body["status"]);
            } else {
                merge_patch(&mut obj, &body);
            }
            fake.put(&t.resource, obj);
            json_response(StatusCode::OK, &fake.get(&t.collection(), &ns, name).unwrap())
        }
        (Method::DELETE, Some(name)) => {
            let Some(obj) = fake.get(&t.collection(), &ns, name) else {
                return status(StatusCode::NOT_FOUND, "NotFound", &format!("{} {name} not found", t.kind));
            };
            fake.store.lock().unwrap().writes.push(Write { method: "DELETE".into(), path, content_type, body });
            fake.remove(&t.collection(), &ns, name);
            json_response(StatusCode::OK, &obj)
        }
        (m, _) => status(StatusCode::METHOD_NOT_ALLOWED, "MethodNotAllowed", &format!("{m} {path}")),
    }
}

/// The object a server-side apply creates: only its identity, the patch fills the rest.
fn new_object(t: &Target, ns: &str, name: &str) -> Value {
    let mut obj = json!({"apiVersion": t.api_version, "kind": t.kind, "metadata": {"name": name}});
    if t.namespace.is_some() {
        obj["metadata"]["namespace"] = json!(ns);
    }
    obj
}

/// A watch: every logged event of the collection after `since`, then the new ones as they come,
/// one JSON line each; held open until the client goes away.
pub fn watch_response(fake: Arc<Fake>, t: Target, since: u64) -> Response {
    let rx = fake.rv.subscribe();
    let stream = futures::stream::unfold((fake, t, since, rx), |(fake, t, mut since, mut rx)| async move {
        loop {
            rx.borrow_and_update();
            let mut out = Vec::new();
            {
                let st = fake.store.lock().unwrap();
                for (rv, c, ns, kind, obj) in &st.log {
                    if *rv > since && *c == t.collection() && t.namespace.as_ref().is_none_or(|n| n == ns) {
                        out.extend(serde_json::to_vec(&json!({"type": kind, "object": obj})).unwrap());
                        out.push(b'\n');
                    }
                }
                since = st.rv;
            }
            if !out.is_empty() {
                return Some((Ok::<_, Infallible>(Bytes::from(out)), (fake, t, since, rx)));
            }
            if rx.changed().await.is_err() {
                return None;
            }
        }
    });
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from_stream(stream))
        .unwrap()
}
