//! `kuryr-l7-router run` (the built binary) against the real API server and the 2025.1 OpenStack
//! when its watches are answered 410 Gone: etcd compacted past every resourceVersion the
//! controller saw, then the API server restarted (every watch cut; the resumed ones are too old).
//! The controller lists again and serves a change made afterwards, without re-writing what it
//! had written: no Kubernetes write of the objects it had served (audit log) and no OpenStack
//! write but the change's own (its log has every Octavia and Neutron write).

use super::common::*;
use super::kube_cluster::Cluster;
use super::kube_objects::*;
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::networking::v1::Ingress;
use kube::Api;
use kuryr_l7_router::controller::outputs::notice::notice_annotation;
use std::time::{Duration, Instant};

/// See the module docs. Without leader election: a lease check failing for longer than the write
/// deadline while the API server restarts would stop the process (by design; a pod restarts),
/// which is not what this test is about.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_api_server_binary_recovers_from_410_gone_without_rewrites() {
    if !enabled() {
        return;
    }
    let mut cluster = Cluster::start("gone410");
    let kube = cluster.admin().await;
    let name = unique("kube", "gone");
    let routers = Routers::of(&name);
    for obj in
        backend_objects("shop", "web", "10.0.0.71").into_iter().chain(backend_objects("shop", "late", "10.0.0.74"))
    {
        apply(&kube, obj).await;
    }
    apply(&kube, ingress("shop", "web", "web.example.com", "web")).await;
    let launch = Launch { no_leader_election: true, ..Launch::default() };
    let controller = Controller::start_with(&cluster, &name, "a", launch);
    let ingresses: Api<Ingress> = Api::namespaced(kube.clone(), "shop");
    let services: Api<Service> = Api::namespaced(kube.clone(), "shop");
    let notice = notice_annotation(&name);
    let body = async {
        let started = Instant::now();
        let ip = eventually_value(Duration::from_secs(600), "shop/web served (address and notice)", || async {
            let svc = services.get("web").await.ok()?;
            svc.metadata.annotations?.contains_key(&notice).then_some(())?;
            served(&ingresses, "web").await
        })
        .await;
        eprintln!("shop/web served at {ip} after {:.0} s", started.elapsed().as_secs_f64());
        // Quiet: the writes of the first convergence are done (and logged).
        tokio::time::sleep(Duration::from_secs(5)).await;
        // etcd's revision moves on (objects the controller does not watch), then is compacted.
        for i in 0..20 {
            let cm = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": format!("churn-{i}"), "namespace": "shop"}, "data": {"i": "x"}});
            apply(&kube, cm).await;
        }
        let revision = cluster.compact();
        let (before, log_mark) = (cluster.audit_len(), controller.log_len());
        let down_at = k8s_openapi::jiff::Timestamp::now();
        cluster.restart();
        // While it starts the API server refuses requests, 403 included (its authorizer's caches
        // are not filled yet): counted from its readiness on.
        let ready = cluster.audit_len();
        let ready_at = k8s_openapi::jiff::Timestamp::now();
        eprintln!("etcd compacted at revision {revision}, API server restarted");
        let t = Instant::now();
        apply(&kube, ingress("shop", "after", "after.example.com", "late")).await;
        let after = eventually_value(Duration::from_secs(300), "shop/after served after the restart", || {
            served(&ingresses, "after")
        })
        .await;
        assert_eq!(after, ip, "the same router");
        eprintln!("shop/after served {:.1} s after the restart", t.elapsed().as_secs_f64());
        tokio::time::sleep(Duration::from_secs(5)).await;

        let log = controller.log_since(log_mark);
        let gone = |kind: &str| log.lines().any(|l| l.contains(kind) && l.contains("too old resource version"));
        assert!(gone("Ingress") && gone("Service"), "no 410 Gone (too old resource version) in the log:\n{log}");
        let since = cluster.controller_requests_since(before);
        let relisted = since
            .iter()
            .any(|(_, verb, uri)| verb == "list" && uri.starts_with("/apis/networking.k8s.io/v1/ingresses"));
        assert!(relisted, "the Ingresses listed again after the 410: {since:?}");
        // Kubernetes: only the change's writes (shop/after, its Service's notice, the router's
        // stamps, Events); nothing of shop/web nor its Service.
        let writes: Vec<String> = since
            .iter()
            .filter(|(_, verb, _)| matches!(verb.as_str(), "create" | "update" | "patch" | "delete"))
            .map(|(code, verb, uri)| format!("{code} {verb} {uri}"))
            .collect();
        eprintln!("Kubernetes writes after the restart:\n{}", writes.join("\n"));
        let rewrites: Vec<&String> =
            writes.iter().filter(|w| w.contains("/ingresses/web") || w.contains("/services/web")).collect();
        assert!(rewrites.is_empty(), "the relist re-wrote what was written: {rewrites:?}");
        let unexpected: Vec<&String> = writes
            .iter()
            .filter(|w| !["/ingresses/after", "/services/late", "/configmaps", "/events"].iter().any(|p| w.contains(p)))
            .collect();
        assert!(unexpected.is_empty(), "writes that are not the change's: {unexpected:?}");
        // OpenStack: only the change's pool (shop_late_80), its members and its policies.
        let cloud = controller.cloud_writes_since(log_mark);
        eprintln!("OpenStack writes after the restart:\n{}", cloud.join("\n"));
        assert!(!cloud.is_empty(), "shop/after served without a write?");
        let foreign: Vec<&String> = cloud
            .iter()
            .filter(|w| !["shop_late", "shop/after", "after.example.com"].iter().any(|p| w.contains(p)))
            .collect();
        assert!(foreign.is_empty(), "OpenStack writes of unchanged objects after the 410:\n{foreign:#?}");
        let refused: Vec<_> =
            cluster.refused_between(0, before).into_iter().chain(cluster.refused_between(ready, usize::MAX)).collect();
        assert!(refused.is_empty(), "the API server refused requests of the controller: {refused:?}");
        // Its log: no refusal but in the restart's window (each line starts with its time).
        let after_ready: Vec<String> = controller
            .refusals_in_log()
            .into_iter()
            .filter(|l| {
                l.get(..27)
                    .and_then(|t| t.parse::<k8s_openapi::jiff::Timestamp>().ok())
                    .is_none_or(|t| t < down_at || t > ready_at)
            })
            .collect();
        assert!(after_ready.is_empty(), "refused outside the restart:\n{}", after_ready.join("\n"));
        eprintln!("whole test: {:.0} s", started.elapsed().as_secs_f64());
    };
    let result = futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(body)).await;
    finish(result, controller, &routers).await;
}
