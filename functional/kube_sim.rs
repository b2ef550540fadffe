//! The Kubernetes side of the controller against the real API server, Octavia simulated: the
//! runtime of `kuryr-l7-router run` (`run_with`, in this process) with the shipped RBAC's token,
//! and `SimBackend` for the router. No OpenStack: it runs wherever `functional/kube.sh build`
//! ran (`KURYR_FUNCTIONAL=1 <functional_kube exe> --exact kube_sim::…`), and in CI's phase of
//! the real API server. What it finds is about Kubernetes alone: RBAC, the status subresources,
//! the CRDs' validation of every status written, finalizers, Events, the Lease.

use super::common::*;
use super::kube_cluster::Cluster;
use super::kube_objects::*;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::networking::v1::Ingress;
use kube::Api;
use kuryr_l7_router::config::LeaderSettings;
use kuryr_l7_router::controller::FINALIZER;
use kuryr_l7_router::controller::outputs::notice::notice_annotation;
use kuryr_l7_router::controller::runtime::run_with;
use kuryr_l7_router::driver::ownership::Ownership;
use kuryr_l7_router::driver::plan::DiffOptions;
use kuryr_l7_router::testing::SimBackend;
use std::time::{Duration, Instant};

const ADDRESS: &str = "172.24.4.10";

/// The controller's log lines of this process (warnings, or `RUST_LOG`), kept to be searched;
/// also shown on stderr when `RUST_LOG` is set.
static LOG: std::sync::Mutex<Vec<u8>> = std::sync::Mutex::new(Vec::new());

struct Capture;

impl std::io::Write for Capture {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        LOG.lock().unwrap().extend_from_slice(b);
        if std::env::var_os("RUST_LOG").is_some() {
            std::io::stderr().write_all(b)?;
        }
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn logs() {
    let filter = std::env::var("RUST_LOG").unwrap_or_else(|_| "warn".into());
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
        .with_ansi(false)
        .with_writer(|| Capture)
        .try_init();
}

fn log_len() -> usize {
    LOG.lock().unwrap().len()
}

fn log_since(at: usize) -> String {
    String::from_utf8_lossy(&LOG.lock().unwrap()[at..]).into_owned()
}

fn settings(cluster: &Cluster, name: &str) -> kuryr_l7_router::config::Settings {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let text = format!(
        "[kubernetes]\napi_root = {}\nssl_ca_crt_file = {}\ntoken_file = {}\nenable_ingress = True\n\
         ingress_class = kuryr-l7-router\ncluster_name = {name}\nleader_election = True\n\
         lease_name = kuryr-l7-router\nlease_namespace = kuryr-l7-router\nhealth_port = {port}\n\
         host_ownership = True\n[neutron_defaults]\nlb_subnet = 3c0f6c8e-1b2d-4c3e-8f9a-0b1c2d3e4f5a\n\
         [octavia_defaults]\nl7_router_name = {name}\n\
         [neutron]\nauth_url = https://keystone.invalid:5000/v3\nusername = kuryr\npassword = x\nproject_name = service\n",
        cluster.server,
        cluster.ca_file().display(),
        cluster.token_file().display(),
    );
    kuryr_l7_router::config::load_texts(&[("sim.conf".into(), text)], Vec::new()).unwrap().settings
}

/// Ingresses, Services, EndpointSlices, a Node, GatewayClass, Gateway, HTTPRoutes and a
/// ReferenceGrant through the real API; the controller's writes all accepted: the Ingress's
/// address, finalizer and the Service's notice, a Warning Event as `kubectl get events` lists
/// it, the GatewayClass and the routes' conditions (CRD validation), the ReferenceGrant added
/// and revoked, the Lease held, the Ingress deleted through its finalizer; the audit log has no
/// 403 and no 422 for the controller's ServiceAccount.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_api_server_kubernetes_side_with_a_simulated_octavia() {
    if !enabled() {
        return;
    }
    logs();
    let cluster = Cluster::start("sim");
    let kube = cluster.admin().await;
    let name = unique("kube", "sim");
    for obj in
        backend_objects("shop", "web", "10.0.0.71").into_iter().chain(backend_objects("shop", "cart", "10.0.0.72"))
    {
        apply(&kube, obj).await;
    }
    for obj in backend_objects("backend", "api", "10.0.0.73") {
        apply(&kube, obj).await;
    }
    apply(&kube, ingress("shop", "web", "web.example.com", "web")).await;
    apply(&kube, ingress("shop", "ghost", "ghost.example.com", "missing")).await;
    for obj in gateway_objects("shop", "gw") {
        apply(&kube, obj).await;
    }
    let sim =
        SimBackend::new(DiffOptions { ownership: Ownership::new(&name), health_monitor: None }, ADDRESS.parse().ok());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let run = tokio::spawn(run_with(settings(&cluster, &name), move |_, _| Ok(sim), async move {
        let _ = stopped.await;
    }));
    let ingresses: Api<Ingress> = Api::namespaced(kube.clone(), "shop");
    let ip = eventually_value(Duration::from_secs(60), "the Ingress's status.loadBalancer", || async {
        ingresses.get("web").await.ok()?.status?.load_balancer?.ingress?.first()?.ip.clone()
    })
    .await;
    assert_eq!(ip, ADDRESS);
    let ing = ingresses.get("web").await.unwrap();
    assert!(ing.metadata.finalizers.unwrap_or_default().iter().any(|f| f == FINALIZER), "our finalizer");
    let svc = Api::<Service>::namespaced(kube.clone(), "shop").get("web").await.unwrap();
    assert!(svc.metadata.annotations.unwrap_or_default().contains_key(&notice_annotation(&name)), "the notice");
    eventually_value(Duration::from_secs(30), "a ServiceNotFound Event on shop/ghost", || async {
        let list = kubectl_events(&kube, "shop").await;
        list.iter().any(|e| e.starts_with("Warning ServiceNotFound Ingress/ghost")).then_some(())
    })
    .await;
    let lease = Api::<Lease>::namespaced(kube.clone(), "kuryr-l7-router").get("kuryr-l7-router").await.unwrap();
    assert!(lease.spec.and_then(|s| s.holder_identity).is_some_and(|h| !h.is_empty()), "the Lease is held");

    eventually_value(Duration::from_secs(60), "the GatewayClass Accepted", || async {
        let c = get(&kube, GATEWAY_CLASSES, None, "kuryr").await?;
        (condition(&c["status"], "Accepted")? == "True").then_some(())
    })
    .await;
    let route = eventually_value(Duration::from_secs(60), "HTTPRoute shop/store Accepted", || async {
        let r = get(&kube, HTTP_ROUTES, Some("shop"), "store").await?;
        (condition(r["status"]["parents"].get(0)?, "Accepted")? == "True").then_some(r)
    })
    .await;
    eprintln!("route status: {:#}", route["status"]);
    let gw = get(&kube, GATEWAYS, Some("shop"), "gw").await.unwrap();
    eprintln!("gateway status: {:#}", gw["status"]);
    assert_eq!(condition(&gw["status"], "Accepted").as_deref(), Some("True"), "{:#}", gw["status"]);

    apply(&kube, cross_namespace_route("shop", "gw", "backend", "api")).await;
    wait_ref(&kube, "False", "RefNotPermitted").await;
    apply(&kube, reference_grant("backend", "shop")).await;
    wait_ref(&kube, "True", "ResolvedRefs").await;
    delete(&kube, REFERENCE_GRANTS, Some("backend"), "allow-shop").await;
    wait_ref(&kube, "False", "RefNotPermitted").await;

    ingresses.delete("web", &Default::default()).await.unwrap();
    eventually_value(Duration::from_secs(60), "the deleted Ingress gone (finalizer removed)", || async {
        matches!(ingresses.get_opt("web").await, Ok(None)).then_some(())
    })
    .await;
    assert_no_refusal(&cluster);
    let _ = stop.send(());
    let _ = tokio::time::timeout(Duration::from_secs(30), run).await;
}

async fn wait_ref(kube: &kube::Client, status: &'static str, reason: &'static str) {
    let what = format!("HTTPRoute shop/cross ResolvedRefs {status} ({reason})");
    eventually_value(Duration::from_secs(60), &what, || async {
        let r = get(kube, HTTP_ROUTES, Some("shop"), "cross").await?;
        let parent = r["status"]["parents"].get(0)?;
        let c = parent["conditions"].as_array()?.iter().find(|c| c["type"] == "ResolvedRefs")?;
        (c["status"] == status && c["reason"] == reason).then_some(())
    })
    .await;
}

/// One replica in this process: the runtime with its own identity (`POD_NAME` in a pod) and
/// short lease timings, its router simulated with its own address (so the Ingress's status
/// shows which replica wrote it).
struct Replica {
    sim: std::sync::Arc<std::sync::Mutex<kuryr_l7_router::driver::sim::Simulator>>,
    stop: tokio::sync::oneshot::Sender<()>,
    run: tokio::task::JoinHandle<Result<(), kuryr_l7_router::controller::ControllerError>>,
}

impl Replica {
    fn start(cluster: &Cluster, name: &str, id: &str, address: &str) -> Replica {
        Replica::start_with(cluster, name, id, address, (6, 2))
    }

    /// [`Replica::start`] with the lease's (duration, grace) in seconds.
    fn start_with(cluster: &Cluster, name: &str, id: &str, address: &str, (duration, grace): (u64, u64)) -> Replica {
        let mut s = settings(cluster, name);
        s.kubernetes.leader_override = Some(LeaderSettings {
            duration_secs: duration,
            grace_secs: grace,
            ..LeaderSettings::new("kuryr-l7-router", "kuryr-l7-router", id)
        });
        let sim = SimBackend::new(
            DiffOptions { ownership: Ownership::new(name), health_monitor: None },
            address.parse().ok(),
        );
        let state = sim.state.clone();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let run = tokio::spawn(run_with(s, move |_, _| Ok(sim), async move {
            let _ = stopped.await;
        }));
        Replica { sim: state, stop, run }
    }

    /// Whether this replica's router has any policy (it synced).
    fn synced(&self) -> bool {
        !self.sim.lock().unwrap().router.policies.is_empty()
    }
}

async fn holder(kube: &kube::Client) -> Option<String> {
    let lease = Api::<Lease>::namespaced(kube.clone(), "kuryr-l7-router").get_opt("kuryr-l7-router").await.ok()??;
    lease.spec?.holder_identity
}

async fn status_ip(ingresses: &Api<Ingress>) -> Option<String> {
    ingresses.get("web").await.ok()?.status?.load_balancer?.ingress?.first()?.ip.clone()
}

/// Two replicas on the real API server's Lease (the shipped Role, narrowed to the Lease's
/// name): the standby writes nothing, neither to its router nor to Kubernetes (the Ingress's
/// status keeps the leader's address), while the leader holds the Lease; the leader stopped,
/// the standby takes the Lease over and writes (its address in the status). No 403, no 422.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_api_server_lease_handover_between_two_replicas() {
    if !enabled() {
        return;
    }
    logs();
    let cluster = Cluster::start("lease");
    let kube = cluster.admin().await;
    let name = unique("kube", "lease");
    for obj in backend_objects("shop", "web", "10.0.0.71") {
        apply(&kube, obj).await;
    }
    apply(&kube, ingress("shop", "web", "web.example.com", "web")).await;
    let ingresses: Api<Ingress> = Api::namespaced(kube.clone(), "shop");
    let a = Replica::start(&cluster, &name, "replica-a", "172.24.4.11");
    eventually_value(Duration::from_secs(60), "replica-a leads and writes its address", || async {
        (holder(&kube).await? == "replica-a" && status_ip(&ingresses).await? == "172.24.4.11").then_some(())
    })
    .await;
    let b = Replica::start(&cluster, &name, "replica-b", "172.24.4.12");
    // Three lease durations with both running: the standby neither leads nor writes.
    let until = Instant::now() + Duration::from_secs(18);
    while Instant::now() < until {
        assert_eq!(holder(&kube).await.as_deref(), Some("replica-a"), "the leader keeps the Lease");
        assert_eq!(status_ip(&ingresses).await.as_deref(), Some("172.24.4.11"), "no status from the standby");
        assert!(!b.synced(), "the standby wrote to its router");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let _ = a.stop.send(());
    let _ = tokio::time::timeout(Duration::from_secs(30), a.run).await;
    let started = Instant::now();
    eventually_value(Duration::from_secs(60), "replica-b takes over and writes its address", || async {
        (holder(&kube).await? == "replica-b" && status_ip(&ingresses).await? == "172.24.4.12").then_some(())
    })
    .await;
    eprintln!("handover in {:.1} s", started.elapsed().as_secs_f64());
    assert!(b.synced(), "the new leader synced its router");
    assert_no_refusal(&cluster);
    let _ = b.stop.send(());
    let _ = tokio::time::timeout(Duration::from_secs(30), b.run).await;
}

/// A watch resumed after its resourceVersion was compacted away: the API server restarted (every
/// watch cut) after etcd was compacted past the controller's last seen version. The resumed
/// watches are answered 410 Gone, the controller lists again and goes on serving (a new Ingress
/// gets its address), and re-writes nothing it had written (no patch of the first Ingress, its
/// status or its Service).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_api_server_watch_gone_after_compaction_recovers_without_rewrites() {
    if !enabled() {
        return;
    }
    logs();
    let mut cluster = Cluster::start("gone");
    let kube = cluster.admin().await;
    let name = unique("kube", "gone");
    for obj in
        backend_objects("shop", "web", "10.0.0.71").into_iter().chain(backend_objects("shop", "late", "10.0.0.74"))
    {
        apply(&kube, obj).await;
    }
    apply(&kube, ingress("shop", "web", "web.example.com", "web")).await;
    let sim =
        SimBackend::new(DiffOptions { ownership: Ownership::new(&name), health_monitor: None }, ADDRESS.parse().ok());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    // Without leader election: a lease check that fails while the API server is down stops the
    // handlers and the process (by design, src/controller/leader.rs; a pod is restarted), which
    // is not what this test is about (the watches' 410 Gone).
    let mut s = settings(&cluster, &name);
    s.kubernetes.leader_election = false;
    let run = tokio::spawn(run_with(s, move |_, _| Ok(sim), async move {
        let _ = stopped.await;
    }));
    let ingresses: Api<Ingress> = Api::namespaced(kube.clone(), "shop");
    let services: Api<Service> = Api::namespaced(kube.clone(), "shop");
    let notice = notice_annotation(&name);
    eventually_value(Duration::from_secs(60), "shop/web served (address and notice)", || async {
        let svc = services.get("web").await.ok()?;
        let noticed = svc.metadata.annotations?.contains_key(&notice);
        (noticed && status_ip(&ingresses).await? == ADDRESS).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    // etcd's revision moves on (objects the controller does not watch), then is compacted.
    for i in 0..20 {
        let cm = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
                                    "metadata": {"name": format!("churn-{i}"), "namespace": "shop"}, "data": {"i": "x"}});
        apply(&kube, cm).await;
    }
    let revision = cluster.compact();
    let (before, log_mark) = (cluster.audit_len(), log_len());
    cluster.restart();
    // While it starts (port open, authorizer's caches not filled yet), the API server refuses
    // requests, 403 included: what a restart does in any cluster; counted from its readiness on.
    let ready = cluster.audit_len();
    eprintln!("etcd compacted at revision {revision}, API server restarted");
    apply(&kube, ingress("shop", "after", "after.example.com", "late")).await;
    let started = Instant::now();
    eventually_value(Duration::from_secs(120), "shop/after served after the restart", || async {
        let ing = ingresses.get("after").await.ok()?;
        (ing.status?.load_balancer?.ingress?.first()?.ip.as_deref()? == ADDRESS).then_some(())
    })
    .await;
    eprintln!("served {:.1} s after the restart", started.elapsed().as_secs_f64());
    // The resumed watch is answered with an ERROR event carrying the 410 (a 200 for the audit
    // log): the controller's watcher logs it, then lists again.
    let log = log_since(log_mark);
    let expired = |kind: &str| {
        log.lines().any(|l| l.contains(&format!("kind={kind} ")) && l.contains("too old resource version"))
    };
    assert!(expired("Ingress") && expired("Service"), "no 410 Gone (too old resource version) seen:\n{log}");
    let since = cluster.controller_requests_since(before);
    let relisted =
        since.iter().any(|(_, verb, uri)| verb == "list" && uri.starts_with("/apis/networking.k8s.io/v1/ingresses"));
    assert!(relisted, "the Ingresses listed again after the 410: {since:?}");
    let rewrites: Vec<_> = since
        .iter()
        .filter(|(_, verb, uri)| verb == "patch" && (uri.contains("/ingresses/web") || uri.contains("/services/web")))
        .collect();
    assert!(rewrites.is_empty(), "the relist re-wrote what was written: {rewrites:?}");
    let refused: Vec<_> =
        cluster.refused_between(0, before).into_iter().chain(cluster.refused_between(ready, usize::MAX)).collect();
    assert!(refused.is_empty(), "the API server refused requests of the controller: {refused:?}");
    let _ = stop.send(());
    let _ = tokio::time::timeout(Duration::from_secs(30), run).await;
}

/// Gateway routers on the simulator (what `run` builds on Octavia): each answers `172.24.4.100`.
fn sim_gateway_routers(name: &str) -> kuryr_l7_router::controller::gateway::driver::GatewayRouters {
    use kuryr_l7_router::controller::gateway::driver::{DeleteRouter, GatewayBackends, SpawnGatewayRouter};
    use kuryr_l7_router::controller::writer::{RouterBackend, Writer, WriterMetrics};
    let name = name.to_string();
    Box::new(move |_, gate, _| {
        let spawn = Box::new(move |_: &str, _: u16, fixed: Option<std::net::IpAddr>| {
            let address = fixed.or_else(|| "172.24.4.100".parse().ok());
            let mut sim =
                SimBackend::new(DiffOptions { ownership: Ownership::new(&name), health_monitor: None }, address);
            sim.set_write_gate(gate.clone());
            let delete: DeleteRouter = std::sync::Arc::new(|| Box::pin(async { Ok(()) }));
            Ok((Writer::spawn(sim, WriterMetrics::default()), delete))
        }) as SpawnGatewayRouter;
        GatewayBackends::from(spawn)
    })
}

/// A Gateway served to the end on the real API server (its load balancer simulated): the
/// statuses of a programmed Gateway (`Programmed: True`, `status.addresses`, the listener's
/// `Programmed`, `attachedRoutes`), the ones most bound by the v1.6.1 CRDs' schema and CEL
/// rules, are accepted; the Gateway deleted, its finalizer goes and the Gateway with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_api_server_programmed_gateway_status_accepted_by_the_crds() {
    if !enabled() {
        return;
    }
    logs();
    let cluster = Cluster::start("gwsim");
    let kube = cluster.admin().await;
    let name = unique("kube", "gwsim");
    for obj in backend_objects("shop", "cart", "10.0.0.72").into_iter().chain(gateway_objects("shop", "gw")) {
        apply(&kube, obj).await;
    }
    let sim =
        SimBackend::new(DiffOptions { ownership: Ownership::new(&name), health_monitor: None }, ADDRESS.parse().ok());
    let once = std::sync::Mutex::new(Some(sim));
    let backends = move |_: &_, _: &_, _: u32| {
        once.lock().unwrap().take().ok_or(kuryr_l7_router::controller::ControllerError::ClientConfig("one".into()))
    };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let run = tokio::spawn(kuryr_l7_router::controller::runtime::run_set_with_gateways(
        settings(&cluster, &name),
        backends,
        Some(sim_gateway_routers(&name)),
        async move {
            let _ = stopped.await;
        },
    ));
    let gw = eventually_value(Duration::from_secs(60), "the Gateway Programmed", || async {
        let g = get(&kube, GATEWAYS, Some("shop"), "gw").await?;
        let listener = g["status"]["listeners"].get(0)?;
        let ready = condition(&g["status"], "Programmed")? == "True"
            && condition(listener, "Programmed")? == "True"
            && listener["attachedRoutes"] == 1;
        ready.then_some(g)
    })
    .await;
    assert_eq!(gw["status"]["addresses"], serde_json::json!([{"type": "IPAddress", "value": "172.24.4.100"}]));
    for c in ["Accepted", "ResolvedRefs"] {
        assert_eq!(condition(&gw["status"]["listeners"][0], c).as_deref(), Some("True"), "{:#}", gw["status"]);
    }
    let fin: Vec<String> = serde_json::from_value(gw["metadata"]["finalizers"].clone()).unwrap_or_default();
    assert!(fin.iter().any(|f| f == kuryr_l7_router::gateway::keep::FINALIZER), "our finalizer: {fin:?}");
    // The validation is live: the same status with a condition reason the schema forbids is refused.
    let mut bad = gw["status"].clone();
    bad["conditions"][0]["reason"] = serde_json::json!("not a reason!");
    let e = status_patch(&kube, "gw", serde_json::json!({"status": bad}))
        .await
        .expect_err("a malformed condition reason accepted");
    assert!(matches!(&e, kube::Error::Api(s) if s.code == 422), "{e}");
    delete(&kube, GATEWAYS, Some("shop"), "gw").await;
    eventually_value(Duration::from_secs(60), "the deleted Gateway gone (finalizer removed)", || async {
        get(&kube, GATEWAYS, Some("shop"), "gw").await.is_none().then_some(())
    })
    .await;
    assert_no_refusal(&cluster);
    let _ = stop.send(());
    let _ = tokio::time::timeout(Duration::from_secs(30), run).await;
}

/// A merge patch of the Gateway `shop/<name>`'s status subresource, as the admin.
async fn status_patch(kube: &kube::Client, name: &str, patch: serde_json::Value) -> Result<(), kube::Error> {
    use kube::api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("gateway.networking.k8s.io", "v1", "Gateway"),
        "gateways",
    );
    let api: Api<DynamicObject> = Api::namespaced_with(kube.clone(), "shop", &ar);
    api.patch_status(name, &PatchParams::default(), &Patch::Merge(&patch)).await.map(|_| ())
}

/// The API server restarted just as the leader renews its Lease (60 s, writes allowed 48 s after
/// each renewal): its lease checks fail for the few seconds of the restart, and it stays the leader
/// (its handlers and process go on, the Lease is renewed by the same holder once the server is
/// back) and serves a new Ingress. Before: the first failed check stopped the handlers and the
/// process ("leadership lost"), and nothing was served until a restart of the pod.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_api_server_restart_keeps_the_leader_within_its_lease() {
    if !enabled() {
        return;
    }
    logs();
    let mut cluster = Cluster::start("restart");
    let kube = cluster.admin().await;
    let name = unique("kube", "restart");
    for obj in backend_objects("shop", "web", "10.0.0.71") {
        apply(&kube, obj).await;
    }
    apply(&kube, ingress("shop", "web", "web.example.com", "web")).await;
    let ingresses: Api<Ingress> = Api::namespaced(kube.clone(), "shop");
    // Renewed 2 x grace = 24 s before expiry (every 36 s), writes allowed 48 s after a renewal.
    let a = Replica::start_with(&cluster, &name, "replica-a", "172.24.4.11", (60, 12));
    eventually_value(Duration::from_secs(60), "replica-a leads and writes its address", || async {
        (holder(&kube).await? == "replica-a" && status_ip(&ingresses).await? == "172.24.4.11").then_some(())
    })
    .await;
    let renewed_before = renew_time(&kube).await;
    // Down from 2 s before the next renewal to some 3 s after it (5 s down, then its start):
    // that renewal fails, with 12 s left before the write deadline.
    let renewal = renewed_before.expect("renewTime") + std::time::Duration::from_secs(36);
    let wait = renewal.duration_since(k8s_openapi::jiff::Timestamp::now()).unsigned_abs();
    tokio::time::sleep(wait.saturating_sub(Duration::from_secs(2))).await;
    let log_mark = log_len();
    let down = Instant::now();
    cluster.restart_after(Duration::from_secs(5));
    eprintln!("API server down for {:.1} s around the renewal", down.elapsed().as_secs_f64());
    let ready = cluster.audit_len();
    apply(&kube, ingress("shop", "after", "after.example.com", "web")).await;
    eventually_value(Duration::from_secs(60), "shop/after served by the same leader", || async {
        let ing = ingresses.get("after").await.ok()?;
        (ing.status?.load_balancer?.ingress?.first()?.ip.as_deref()? == "172.24.4.11").then_some(())
    })
    .await;
    eventually_value(Duration::from_secs(40), "the Lease renewed by replica-a after the restart", || async {
        (holder(&kube).await? == "replica-a" && renew_time(&kube).await > renewed_before).then_some(())
    })
    .await;
    let log = log_since(log_mark);
    assert!(log.contains("leader lease check failed: leading until"), "the renewal during the restart failed:\n{log}");
    assert!(!log.contains("leadership lost"), "the leader stopped:\n{log}");
    assert!(!a.run.is_finished(), "the controller stopped");
    let refused = cluster.refused_between(ready, usize::MAX);
    assert!(refused.is_empty(), "the API server refused requests of the controller: {refused:?}");
    let _ = a.stop.send(());
    let _ = tokio::time::timeout(Duration::from_secs(30), a.run).await;
}

async fn renew_time(kube: &kube::Client) -> Option<k8s_openapi::jiff::Timestamp> {
    let lease = Api::<Lease>::namespaced(kube.clone(), "kuryr-l7-router").get_opt("kuryr-l7-router").await.ok()??;
    Some(lease.spec?.renew_time?.0)
}
