//! The controller as shipped against a real Kubernetes API server (issue 35): the
//! `kuryr-l7-router run` binary, authenticated by a ServiceAccount token bound by exactly the
//! RBAC of `etc/manifests`, against kube-apiserver with the Gateway API v1.6.1 CRDs and their
//! validation (`functional/kube/`, one per test, see `kube_cluster.rs`) and the local 2025.1
//! OpenStack. The objects are created through the real API, as a user would.
//!
//! `functional/kube.sh build` first (it needs the Go module proxy), then
//! `OPENSTACK_RELEASE=2025.1 functional/openstack.sh run env KURYR_FUNCTIONAL=1 <functional_kube exe> --nocapture`.

#[path = "common/mod.rs"]
mod common;
use common::*;

#[path = "kube_cluster.rs"]
mod kube_cluster;
use kube_cluster::Cluster;

/// The Kubernetes side of the tests (objects, conditions, the controller's process).
#[path = "kube_objects.rs"]
mod kube_objects;
use kube_objects::*;

/// The Kubernetes side alone, Octavia simulated (no OpenStack).
#[path = "kube_sim.rs"]
mod kube_sim;

/// Two replicas of the binary: the Lease handed over, nothing written by the deposed one.
#[path = "kube_handover.rs"]
mod kube_handover;

/// The binary's watches answered 410 Gone: recovered without a re-write.
#[path = "kube_gone.rs"]
mod kube_gone;

/// TLS Secrets read in the listed namespaces only (etc/overlays/secret-namespaces).
#[path = "kube_secrets.rs"]
mod kube_secrets;

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::networking::v1::Ingress;
use kube::Api;
use kuryr_l7_router::controller::FINALIZER;
use kuryr_l7_router::controller::outputs::notice::{ServiceNotice, notice_annotation};
use serde_json::json;
use std::time::{Duration, Instant};

/// An Ingress through the real API: the router's address in `status.loadBalancer`, our finalizer,
/// the Service's notice annotation, a Warning Event for an Ingress whose Service is missing (as
/// `kubectl get events` lists it), and the Ingress deleted: the finalizer removed by the
/// controller, the object gone. No 403 and no rejected write in the controller's log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_api_server_ingress_status_finalizer_notice_and_events() {
    if !enabled() {
        return;
    }
    let cluster = Cluster::start("ing");
    let kube = cluster.admin().await;
    let name = unique("kube", "ing");
    let routers = Routers::of(&name);
    for obj in backend_objects("shop", "web", "10.0.0.71") {
        apply(&kube, obj).await;
    }
    apply(&kube, ingress("shop", "web", "web.example.com", "web")).await;
    // A Service that does not exist: a Warning Event on the Ingress.
    apply(&kube, ingress("shop", "ghost", "ghost.example.com", "missing")).await;
    let controller = Controller::start(&cluster, &name, "a");
    let ingresses: Api<Ingress> = Api::namespaced(kube.clone(), "shop");
    let body = async {
        let started = Instant::now();
        let ip = eventually_value(Duration::from_secs(600), "the Ingress's status.loadBalancer", || async {
            let ing = ingresses.get("web").await.ok()?;
            let lb = ing.status?.load_balancer?.ingress?;
            lb.first()?.ip.clone()
        })
        .await;
        eprintln!("Ingress web has {ip} after {:.0} s", started.elapsed().as_secs_f64());
        let ing = ingresses.get("web").await.unwrap();
        assert!(
            ing.metadata.finalizers.unwrap_or_default().iter().any(|f| f == FINALIZER),
            "our finalizer on the served Ingress"
        );
        let services: Api<Service> = Api::namespaced(kube.clone(), "shop");
        let svc = services.get("web").await.unwrap();
        let key = notice_annotation(&name);
        let text = svc.metadata.annotations.unwrap_or_default().remove(&key);
        let notice: ServiceNotice = serde_json::from_str(text.as_deref().expect("the notice annotation")).unwrap();
        assert_eq!(notice.router, name, "the notice names the router");
        assert!(!notice.pools.is_empty(), "the notice names the Service's pools: {notice:?}");
        let events = eventually_value(Duration::from_secs(60), "a ServiceNotFound Event on shop/ghost", || async {
            let list = kubectl_events(&kube, "shop").await;
            list.iter().any(|e| e.starts_with("Warning ServiceNotFound Ingress/ghost")).then_some(list)
        })
        .await;
        eprintln!("events: {events:#?}");
        // Deleted: the API server sets deletionTimestamp; the controller removes the router's
        // routes, then its finalizer, and only then is the Ingress gone.
        ingresses.delete("web", &Default::default()).await.unwrap();
        eventually_value(Duration::from_secs(180), "the deleted Ingress gone (finalizer removed)", || async {
            matches!(ingresses.get_opt("web").await, Ok(None)).then_some(())
        })
        .await;
        controller.assert_no_refusal(&cluster);
    };
    let result = futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(body)).await;
    finish(result, controller, &routers).await;
}

/// A GatewayClass, a Gateway and an HTTPRoute through the real API: every status the controller
/// writes passes the CRDs' schema and CEL rules (a rejected write would never show), the Gateway
/// is `Programmed` with the load balancer's address, its listener and the route are accepted
/// with resolved references; a route to another namespace's Service is refused until a
/// ReferenceGrant allows it, and refused again once the grant is deleted; the Gateway deleted,
/// our finalizer goes and so does the Gateway. No 403 and no rejected write in the log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_api_server_gateway_conditions_accepted_by_the_crds() {
    if !enabled() {
        return;
    }
    let cluster = Cluster::start("gw");
    let kube = cluster.admin().await;
    let name = unique("kube", "gw");
    let routers = Routers::of(&name).with_gateway("shop", "web");
    for obj in
        backend_objects("shop", "cart", "10.0.0.72").into_iter().chain(backend_objects("backend", "api", "10.0.0.73"))
    {
        apply(&kube, obj).await;
    }
    for obj in gateway_objects("shop", "web") {
        apply(&kube, obj).await;
    }
    let controller = Controller::start(&cluster, &name, "a");
    let body = async {
        let started = Instant::now();
        let class = eventually_value(Duration::from_secs(120), "the GatewayClass Accepted", || async {
            let c = get(&kube, GATEWAY_CLASSES, None, "kuryr").await?;
            (condition(&c["status"], "Accepted")? == "True").then_some(c)
        })
        .await;
        let accepted =
            class["status"]["conditions"].as_array().unwrap().iter().find(|c| c["type"] == "Accepted").unwrap();
        assert_eq!(accepted["observedGeneration"], class["metadata"]["generation"], "{class:#}");
        let gw = eventually_value(Duration::from_secs(600), "the Gateway Programmed", || async {
            let g = get(&kube, GATEWAYS, Some("shop"), "web").await?;
            (condition(&g["status"], "Programmed")? == "True").then_some(g)
        })
        .await;
        eprintln!("Gateway Programmed after {:.0} s: {:#}", started.elapsed().as_secs_f64(), gw["status"]);
        assert_eq!(condition(&gw["status"], "Accepted").as_deref(), Some("True"));
        assert!(gw["status"]["addresses"][0]["value"].as_str().is_some_and(|a| !a.is_empty()), "an address");
        let listener = &gw["status"]["listeners"][0];
        for c in ["Accepted", "Programmed", "ResolvedRefs"] {
            assert_eq!(condition(listener, c).as_deref(), Some("True"), "listener {c}: {listener:#}");
        }
        assert_eq!(listener["supportedKinds"][0]["kind"], "HTTPRoute", "{listener:#}");
        let fin: Vec<String> = serde_json::from_value(gw["metadata"]["finalizers"].clone()).unwrap_or_default();
        assert!(fin.iter().any(|f| f == kuryr_l7_router::gateway::keep::FINALIZER), "our finalizer: {fin:?}");
        eventually_value(Duration::from_secs(120), "HTTPRoute shop/store Accepted and ResolvedRefs", || async {
            let r = get(&kube, HTTP_ROUTES, Some("shop"), "store").await?;
            let parent = r["status"]["parents"].get(0)?.clone();
            (condition(&parent, "Accepted")? == "True" && condition(&parent, "ResolvedRefs")? == "True").then_some(())
        })
        .await;
        eventually_value(Duration::from_secs(60), "the listener's attachedRoutes: 1", || async {
            (listener_attached(&kube).await == 1).then_some(())
        })
        .await;

        // Another namespace's Service: refused, allowed by a ReferenceGrant, refused once revoked.
        apply(&kube, cross_namespace_route("shop", "web", "backend", "api")).await;
        wait_resolved(&kube, "cross", "False", "RefNotPermitted").await;
        apply(&kube, reference_grant("backend", "shop")).await;
        wait_resolved(&kube, "cross", "True", "ResolvedRefs").await;
        delete(&kube, REFERENCE_GRANTS, Some("backend"), "allow-shop").await;
        wait_resolved(&kube, "cross", "False", "RefNotPermitted").await;

        delete(&kube, GATEWAYS, Some("shop"), "web").await;
        eventually_value(Duration::from_secs(180), "the deleted Gateway gone (finalizer removed)", || async {
            get(&kube, GATEWAYS, Some("shop"), "web").await.is_none().then_some(())
        })
        .await;
        controller.assert_no_refusal(&cluster);
    };
    let result = futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(body)).await;
    finish(result, controller, &routers).await;
}

async fn wait_resolved(kube: &kube::Client, route: &str, status: &'static str, reason: &'static str) {
    let what = format!("HTTPRoute shop/{route} ResolvedRefs {status} ({reason})");
    eventually_value(Duration::from_secs(120), &what, || async {
        let r = get(kube, HTTP_ROUTES, Some("shop"), route).await?;
        let c = r["status"]["parents"].get(0)?["conditions"]
            .as_array()?
            .iter()
            .find(|c| c["type"] == "ResolvedRefs")?
            .clone();
        (c["status"] == status && c["reason"] == reason).then_some(())
    })
    .await;
}

async fn listener_attached(kube: &kube::Client) -> i64 {
    let g = get(kube, GATEWAYS, Some("shop"), "web").await.unwrap_or(json!({}));
    g["status"]["listeners"][0]["attachedRoutes"].as_i64().unwrap_or(-1)
}
