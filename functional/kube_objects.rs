//! The Kubernetes side of `functional/kube_real.rs`: objects applied as an operator would
//! (server-side apply through the admin client), the controller's process with its shipped RBAC,
//! and the routers it builds (read back for clean-up).

use super::common::*;
use super::kube_cluster::Cluster;
use k8s_openapi::api::core::v1::Event;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams};
use serde_json::{Value, json};
use std::future::Future;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// (apiVersion, kind, plural)
pub type Kind = (&'static str, &'static str, &'static str);
const GW_API: &str = "gateway.networking.k8s.io/v1";
pub const GATEWAY_CLASSES: Kind = (GW_API, "GatewayClass", "gatewayclasses");
pub const GATEWAYS: Kind = (GW_API, "Gateway", "gateways");
pub const HTTP_ROUTES: Kind = (GW_API, "HTTPRoute", "httproutes");
pub const REFERENCE_GRANTS: Kind = ("gateway.networking.k8s.io/v1beta1", "ReferenceGrant", "referencegrants");
const KINDS: [Kind; 13] = [
    ("v1", "Namespace", "namespaces"),
    ("v1", "ConfigMap", "configmaps"),
    ("v1", "Service", "services"),
    ("v1", "Node", "nodes"),
    ("discovery.k8s.io/v1", "EndpointSlice", "endpointslices"),
    ("networking.k8s.io/v1", "Ingress", "ingresses"),
    ("v1", "Secret", "secrets"),
    GATEWAY_CLASSES,
    GATEWAYS,
    HTTP_ROUTES,
    REFERENCE_GRANTS,
    ("rbac.authorization.k8s.io/v1", "Role", "roles"),
    ("rbac.authorization.k8s.io/v1", "RoleBinding", "rolebindings"),
];

fn resource((api_version, kind, plural): Kind) -> ApiResource {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}

fn api(kube: &kube::Client, kind: Kind, namespace: Option<&str>) -> Api<DynamicObject> {
    match namespace {
        Some(ns) => Api::namespaced_with(kube.clone(), ns, &resource(kind)),
        None => Api::all_with(kube.clone(), &resource(kind)),
    }
}

/// Server-side apply of `obj` (its kind one of [`KINDS`]), as `kubectl apply --server-side`.
pub async fn apply(kube: &kube::Client, obj: Value) {
    let kind = *KINDS
        .iter()
        .find(|k| obj["apiVersion"] == k.0 && obj["kind"] == k.1)
        .unwrap_or_else(|| panic!("no kind for {obj}"));
    let name = obj["metadata"]["name"].as_str().unwrap().to_string();
    let ns = obj["metadata"]["namespace"].as_str();
    let pp = PatchParams::apply("kuryr-functional").force();
    if let Err(e) = api(kube, kind, ns).patch(&name, &pp, &Patch::Apply(&obj)).await {
        panic!("apply {} {ns:?}/{name}: {e}", kind.1);
    }
}

pub async fn get(kube: &kube::Client, kind: Kind, namespace: Option<&str>, name: &str) -> Option<Value> {
    let o = api(kube, kind, namespace).get_opt(name).await.unwrap()?;
    Some(serde_json::to_value(o).unwrap())
}

pub async fn delete(kube: &kube::Client, kind: Kind, namespace: Option<&str>, name: &str) {
    api(kube, kind, namespace).delete(name, &DeleteParams::default()).await.unwrap();
}

/// The `status` of condition `type` in `obj["conditions"]`.
pub fn condition(obj: &Value, kind: &str) -> Option<String> {
    let c = obj["conditions"].as_array()?.iter().find(|c| c["type"] == kind)?;
    c["status"].as_str().map(String::from)
}

/// `TYPE REASON Kind/name: message` of the namespace's Events, as `kubectl get events` lists them
/// (core/v1; the controller writes events.k8s.io/v1, the same objects).
pub async fn kubectl_events(kube: &kube::Client, namespace: &str) -> Vec<String> {
    let events: Api<Event> = Api::namespaced(kube.clone(), namespace);
    let list = events.list(&ListParams::default()).await.unwrap();
    list.items
        .iter()
        .map(|e| {
            let o = &e.involved_object;
            format!(
                "{} {} {}/{}: {}",
                e.type_.as_deref().unwrap_or(""),
                e.reason.as_deref().unwrap_or(""),
                o.kind.as_deref().unwrap_or(""),
                o.name.as_deref().unwrap_or(""),
                e.message.as_deref().unwrap_or("")
            )
        })
        .collect()
}

/// Polls `f` until it gives a value, up to `within`; panics naming `what` after that.
pub async fn eventually_value<T, F, Fut>(within: Duration, what: &str, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + within;
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(Instant::now() < deadline, "{what}: not within {} s", within.as_secs());
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// The namespace, a Node in zone az-1, the Service `name` (80 → 8080) and its EndpointSlice with
/// one ready endpoint at `ip`.
pub fn backend_objects(ns: &str, name: &str, ip: &str) -> Vec<Value> {
    vec![
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
        json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1",
               "labels": {"topology.kubernetes.io/zone": "az-1"}}}),
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": ns},
               "spec": {"ports": [{"name": "http", "port": 80, "targetPort": 8080}]}}),
        json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
               "metadata": {"name": format!("{name}-abc"), "namespace": ns, "labels": {"kubernetes.io/service-name": name}},
               "addressType": "IPv4", "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
               "endpoints": [{"addresses": [ip], "conditions": {"ready": true}, "nodeName": "node-1"}]}),
    ]
}

/// An Ingress of the shipped IngressClass (`kuryr-l7-router`, etc/manifests/ingressclass.yaml).
pub fn ingress(ns: &str, name: &str, host: &str, service: &str) -> Value {
    json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": name, "namespace": ns},
           "spec": {"ingressClassName": "kuryr-l7-router", "rules": [{"host": host, "http": {"paths": [
               {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": service, "port": {"number": 80}}}}]}}]}})
}

/// Our GatewayClass `kuryr`, the Gateway `ns/gateway` (HTTP on 80) and the HTTPRoute `store`
/// (`/cart` to the Service `cart`).
pub fn gateway_objects(ns: &str, gateway: &str) -> Vec<Value> {
    vec![
        json!({"apiVersion": GW_API, "kind": "GatewayClass", "metadata": {"name": "kuryr"},
               "spec": {"controllerName": "openstack.org/kuryr-l7-router"}}),
        json!({"apiVersion": GW_API, "kind": "Gateway", "metadata": {"name": gateway, "namespace": ns},
               "spec": {"gatewayClassName": "kuryr", "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}]}}),
        json!({"apiVersion": GW_API, "kind": "HTTPRoute", "metadata": {"name": "store", "namespace": ns},
               "spec": {"parentRefs": [{"name": gateway}], "hostnames": ["cart.example.com"],
                        "rules": [{"matches": [{"path": {"type": "PathPrefix", "value": "/cart"}}],
                                   "backendRefs": [{"name": "cart", "port": 80}]}]}}),
    ]
}

/// The HTTPRoute `ns/cross` to the Service `to_ns/service`.
pub fn cross_namespace_route(ns: &str, gateway: &str, to_ns: &str, service: &str) -> Value {
    json!({"apiVersion": GW_API, "kind": "HTTPRoute", "metadata": {"name": "cross", "namespace": ns},
           "spec": {"parentRefs": [{"name": gateway}], "hostnames": ["api.example.com"],
                    "rules": [{"backendRefs": [{"name": service, "namespace": to_ns, "port": 80}]}]}})
}

/// `ns/allow-<from>`: HTTPRoutes of `from` may use the Services of `ns`.
pub fn reference_grant(ns: &str, from: &str) -> Value {
    json!({"apiVersion": REFERENCE_GRANTS.0, "kind": "ReferenceGrant",
           "metadata": {"name": format!("allow-{from}"), "namespace": ns},
           "spec": {"from": [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "namespace": from}],
                    "to": [{"group": "", "kind": "Service"}]}})
}

/// One `kuryr-l7-router run` process (the built binary) with the ServiceAccount's token and the
/// cluster's CA, as in a pod; SIGKILLed on drop.
pub struct Controller {
    child: Child,
    pub log: PathBuf,
}

/// How a controller process is started, beyond [`Controller::start`]'s defaults.
#[derive(Default)]
pub struct Launch {
    /// `POD_NAME` (the downward API in a pod): the replica's `holderIdentity` in the Lease.
    pub identity: Option<String>,
    /// A token file of its own (the cluster's by default): each token has its own credential id
    /// in the audit log, which tells the replicas' requests apart.
    pub token: Option<PathBuf>,
    /// `leader_election = False` (the default config has it on).
    pub no_leader_election: bool,
    /// More `[kubernetes]` lines.
    pub kubernetes: String,
}

impl Controller {
    /// The stack's kuryr.conf, then ours: the cluster, the router `name` (also the cluster tag),
    /// the shipped IngressClass and the Lease where etc/manifests/configmap.yaml puts it.
    pub fn start(cluster: &Cluster, name: &str, label: &str) -> Controller {
        Controller::start_with(cluster, name, label, Launch::default())
    }

    /// [`Controller::start`] as `launch` says.
    pub fn start_with(cluster: &Cluster, name: &str, label: &str, launch: Launch) -> Controller {
        let stack = std::env::var("KURYR_CONFIG_FILE").expect("KURYR_CONFIG_FILE: the stack's kuryr.conf");
        let conf = cluster.dir.join(format!("controller-{label}.conf"));
        std::fs::write(&conf, overlay(cluster, name, &launch)).unwrap();
        let log = cluster.dir.with_extension(format!("controller-{label}.log"));
        let out = std::fs::File::create(&log).unwrap();
        let mut c = Command::new(env!("CARGO_BIN_EXE_kuryr-l7-router"));
        c.args(["--config-file", &stack, "--config-file"]).arg(&conf).arg("run").env("NO_COLOR", "1");
        if let Some(id) = &launch.identity {
            c.env("POD_NAME", id);
        }
        let child = c
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .stdin(Stdio::null())
            .spawn()
            .expect("start kuryr-l7-router run");
        Controller { child, log }
    }

    /// Sends `signal` (`TERM`, `STOP`, `CONT`, ...) to the running process.
    pub fn signal(&self, signal: &str) {
        assert!(self.try_signal(signal), "kill -{signal} {}", self.child.id());
    }

    /// [`Controller::signal`], `false` when it failed (the process is gone).
    pub fn try_signal(&self, signal: &str) -> bool {
        let mut kill = Command::new("kill");
        kill.arg(format!("-{signal}")).arg(self.child.id().to_string()).stderr(Stdio::null());
        kill.status().is_ok_and(|s| s.success())
    }

    /// Waits up to `within` for the process to exit; its status, if it did.
    pub fn wait_exit(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + within;
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                return Some(s);
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// The log's length so far (for [`Controller::log_since`]).
    pub fn log_len(&self) -> usize {
        std::fs::read(&self.log).map(|b| b.len()).unwrap_or(0)
    }

    /// The log written after [`Controller::log_len`] gave `mark`.
    pub fn log_since(&self, mark: usize) -> String {
        let bytes = std::fs::read(&self.log).unwrap_or_default();
        String::from_utf8_lossy(&bytes[mark.min(bytes.len())..]).into_owned()
    }

    /// Its OpenStack writes (`octavia write done`, `neutron write done`, ...) logged after `mark`.
    pub fn cloud_writes_since(&self, mark: usize) -> Vec<String> {
        let log = self.log_since(mark);
        log.lines().filter(|l| l.contains(" write done")).map(String::from).collect()
    }

    /// No request of the controller was refused: no 403 (RBAC), no 422 (a status or patch
    /// rejected by the schema, the CRDs' CEL rules or admission): in the API server's audit log,
    /// and in the controller's own log.
    pub fn assert_no_refusal(&self, cluster: &Cluster) {
        assert_no_refusal(cluster);
        let refused = self.refusals_in_log();
        assert!(refused.is_empty(), "the API server refused the controller's requests:\n{}", refused.join("\n"));
    }

    /// The lines of its log that tell of a refused request (403, 422, forbidden, invalid).
    pub fn refusals_in_log(&self) -> Vec<String> {
        let text = std::fs::read_to_string(&self.log).unwrap();
        let refused = |l: &&str| {
            let l = l.to_ascii_lowercase();
            l.contains("forbidden") || l.contains("code: 403") || l.contains("code: 422") || l.contains("is invalid")
        };
        text.lines().filter(refused).map(String::from).collect()
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn overlay(cluster: &Cluster, name: &str, launch: &Launch) -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let token = launch.token.clone().unwrap_or_else(|| cluster.token_file());
    format!(
        "[kubernetes]\napi_root = {}\nssl_ca_crt_file = {}\ntoken_file = {}\nenable_ingress = True\n\
         ingress_class = kuryr-l7-router\ncluster_name = {name}\nleader_election = {}\n\
         lease_name = kuryr-l7-router\nlease_namespace = kuryr-l7-router\nhealth_port = {port}\n{}\n\
         [octavia_defaults]\nl7_router_name = {name}\n",
        cluster.server,
        cluster.ca_file().display(),
        token.display(),
        if launch.no_leader_election { "False" } else { "True" },
        launch.kubernetes,
    )
}

/// The first address in an Ingress's `status.loadBalancer`, once the controller wrote one.
pub async fn served(ingresses: &Api<k8s_openapi::api::networking::v1::Ingress>, name: &str) -> Option<String> {
    ingresses.get(name).await.ok()?.status?.load_balancer?.ingress?.first()?.ip.clone()
}

/// After a test's body (`result`, caught): the controller's log named, the controller stopped,
/// the routers it built deleted, and then the body's panic raised again, if it panicked.
pub async fn finish(result: std::thread::Result<()>, controller: Controller, routers: &Routers) {
    eprintln!("controller log: {}", controller.log.display());
    drop(controller);
    routers.cleanup().await;
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
}

/// The routers the controller builds under `name`, the same way, to delete what a test leaves.
pub struct Routers {
    name: String,
    gateways: Vec<(String, String)>,
}

impl Routers {
    pub fn of(name: &str) -> Routers {
        Routers { name: name.to_string(), gateways: Vec::new() }
    }

    pub fn with_gateway(mut self, ns: &str, gateway: &str) -> Routers {
        self.gateways.push((ns.into(), gateway.into()));
        self
    }

    pub async fn cleanup(&self) {
        use kuryr_l7_router::driver::WritePermits;
        let stack = std::env::var("KURYR_CONFIG_FILE").unwrap();
        let ours = format!(
            "[kubernetes]\ncluster_name = {0}\ningress_class = kuryr-l7-router\n[octavia_defaults]\nl7_router_name = {0}\n",
            self.name
        );
        let texts = [(stack.clone(), std::fs::read_to_string(&stack).unwrap()), ("ours.conf".into(), ours)];
        let s = kuryr_l7_router::config::load_texts(&texts, Vec::new()).unwrap().settings;
        let ingress = kuryr_l7_router::wiring::router_observed_at(&s, None, 0, WritePermits::unlimited()).unwrap();
        cleanup(&ingress).await;
        for (ns, gw) in &self.gateways {
            let lb = kuryr_l7_router::gateway::naming::load_balancer_name(ns, gw);
            let r =
                kuryr_l7_router::wiring::gateway_router_observed(&s, None, &lb, 80, None, WritePermits::unlimited())
                    .unwrap();
            cleanup(&r).await;
        }
    }
}

/// The API server's audit log holds requests of the controller, and none refused.
pub fn assert_no_refusal(cluster: &Cluster) {
    let n = cluster.controller_requests();
    assert!(n > 10, "the audit log has {n} requests of the controller's ServiceAccount");
    let refused = cluster.refused();
    assert!(refused.is_empty(), "the API server refused requests of the controller:\n{}", refused.join("\n"));
}
