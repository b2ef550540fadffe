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
use kuryr_l7_router::controller::FINALIZER;
use kuryr_l7_router::controller::outputs::notice::notice_annotation;
use kuryr_l7_router::controller::runtime::run_with;
use kuryr_l7_router::driver::ownership::Ownership;
use kuryr_l7_router::driver::plan::DiffOptions;
use kuryr_l7_router::testing::SimBackend;
use std::time::Duration;

const ADDRESS: &str = "172.24.4.10";

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
