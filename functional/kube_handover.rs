//! Two `kuryr-l7-router run` processes (the built binary, the same config and the same Lease)
//! against the real API server and the 2025.1 OpenStack: one leads, the other stands by; the
//! leader stopped (SIGTERM: it releases the Lease; SIGSTOP: its Lease expires while it is frozen),
//! the other takes the Lease over and converges. Each replica has its own ServiceAccount token,
//! so the API server's audit log tells their requests apart (the token's credential id): the
//! deposed one writes nothing to Kubernetes after the new leader took the Lease, and nothing to
//! OpenStack after it was frozen (its log has every Octavia and Neutron write).

use super::common::*;
use super::kube_cluster::{Audited, Cluster, credential_id};
use super::kube_objects::*;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::networking::v1::Ingress;
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use std::path::PathBuf;
use std::time::{Duration, Instant};

async fn holder(kube: &kube::Client) -> Option<String> {
    let lease = Api::<Lease>::namespaced(kube.clone(), "kuryr-l7-router").get_opt("kuryr-l7-router").await.ok()??;
    lease.spec?.holder_identity
}

/// When the replica with `credential` took the Lease: its first accepted write of it.
fn took_lease_at(cluster: &Cluster, credential: &str) -> Timestamp {
    let audit = cluster.controller_audit();
    let took =
        audit.iter().find(|a| a.credential == credential && a.is_write() && a.code < 300 && a.uri.contains("/leases"));
    took.unwrap_or_else(|| panic!("no Lease write of {credential} in the audit log")).at
}

/// The writes (allowed or not) of `credential` the API server received after `after`.
fn writes_after(cluster: &Cluster, credential: &str, after: Timestamp) -> Vec<Audited> {
    cluster
        .controller_audit()
        .into_iter()
        .filter(|a| a.credential == credential && a.is_write() && a.at > after)
        .collect()
}

/// A replica: its process and the credential of its token.
struct Replica {
    process: Controller,
    credential: String,
}

fn replica(cluster: &Cluster, name: &str, identity: &str, token: PathBuf) -> Replica {
    let credential = credential_id(&token);
    let launch = Launch { identity: Some(identity.into()), token: Some(token), ..Launch::default() };
    Replica { process: Controller::start_with(cluster, name, identity, launch), credential }
}

/// Waits until the replica's log says it stands by for the Lease.
async fn standing_by(r: &Replica) {
    eventually_value(Duration::from_secs(60), "the new replica waiting for leadership", || async {
        std::fs::read_to_string(&r.process.log).ok()?.contains("waiting for leadership").then_some(())
    })
    .await;
}

/// See the module docs. Replica a leads and serves `web`; b stands by. SIGTERM to a: b takes the
/// Lease and serves `t1`; a wrote nothing after b took the Lease. A third replica (c) stands by;
/// SIGSTOP to b: its Lease expires, c takes it and serves `t2`; SIGCONT to b: b steps down
/// without a write (Kubernetes: audit log; OpenStack: its log). No 403 nor 422 in any log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_api_server_two_binaries_hand_over_the_lease_and_the_deposed_writes_nothing() {
    if !enabled() {
        return;
    }
    let cluster = Cluster::start("ha");
    let kube = cluster.admin().await;
    let name = unique("kube", "ha");
    let routers = Routers::of(&name);
    for obj in backend_objects("shop", "web", "10.0.0.71") {
        apply(&kube, obj).await;
    }
    apply(&kube, ingress("shop", "web", "web.example.com", "web")).await;
    let ingresses: Api<Ingress> = Api::namespaced(kube.clone(), "shop");
    let mut a = replica(&cluster, &name, "replica-a", cluster.token_file());
    let mut b = None;
    let mut c = None;
    let body = async {
        let started = Instant::now();
        let ip = eventually_value(Duration::from_secs(600), "replica-a leads and serves shop/web", || async {
            (holder(&kube).await? == "replica-a").then_some(())?;
            served(&ingresses, "web").await
        })
        .await;
        eprintln!("replica-a served shop/web at {ip} after {:.0} s", started.elapsed().as_secs_f64());
        let rb = b.insert(replica(&cluster, &name, "replica-b", cluster.mint_token("token-b")));
        standing_by(rb).await;
        tokio::time::sleep(Duration::from_secs(3)).await;
        assert_eq!(holder(&kube).await.as_deref(), Some("replica-a"), "the standby took the Lease of a live leader");
        assert!(writes_after(&cluster, &rb.credential, Timestamp::UNIX_EPOCH).is_empty(), "the standby wrote");

        // SIGTERM: a releases the Lease on its way out; b takes it at once and serves t1.
        let t = Instant::now();
        a.process.signal("TERM");
        let exit = a.process.wait_exit(Duration::from_secs(120));
        assert!(exit.is_some_and(|s| s.success()), "replica-a's exit after SIGTERM: {exit:?}");
        eventually_value(Duration::from_secs(60), "replica-b takes the Lease", || async {
            (holder(&kube).await? == "replica-b").then_some(())
        })
        .await;
        apply(&kube, ingress("shop", "t1", "t1.example.com", "web")).await;
        let t1 =
            eventually_value(Duration::from_secs(300), "replica-b serves shop/t1", || served(&ingresses, "t1")).await;
        assert_eq!(t1, ip, "the same router");
        eprintln!("SIGTERM handover: replica-b served shop/t1 {:.1} s after the signal", t.elapsed().as_secs_f64());
        let b_took = took_lease_at(&cluster, &rb.credential);
        let late = writes_after(&cluster, &a.credential, b_took);
        assert!(late.is_empty(), "replica-a wrote after replica-b took the Lease: {late:#?}");
        let b_status = cluster.controller_audit().into_iter().any(|w| {
            w.credential == rb.credential && w.code < 300 && w.verb == "patch" && w.uri.contains("/ingresses/t1/status")
        });
        assert!(b_status, "shop/t1's status written by replica-b");
        a.process.assert_no_refusal(&cluster);

        // SIGSTOP: b freezes holding the Lease; it expires, c takes it and serves t2.
        let rc = c.insert(replica(&cluster, &name, "replica-c", cluster.mint_token("token-c")));
        standing_by(rc).await;
        let b_mark = rb.process.log_len();
        let t = Instant::now();
        rb.process.signal("STOP");
        eventually_value(Duration::from_secs(60), "replica-c takes the expired Lease", || async {
            (holder(&kube).await? == "replica-c").then_some(())
        })
        .await;
        eprintln!("SIGSTOP: replica-c took the Lease {:.1} s after the signal", t.elapsed().as_secs_f64());
        apply(&kube, ingress("shop", "t2", "t2.example.com", "web")).await;
        let t2 =
            eventually_value(Duration::from_secs(300), "replica-c serves shop/t2", || served(&ingresses, "t2")).await;
        assert_eq!(t2, ip, "the same router");
        eprintln!("SIGSTOP handover: replica-c served shop/t2 {:.1} s after the signal", t.elapsed().as_secs_f64());
        // b wakes up with its old Lease and the news of t2 in its watches' buffers: it must see
        // that its write deadline has passed before anything of it writes.
        rb.process.signal("CONT");
        // It stops (the deadline passed: "leadership lost", the process exits for its pod to be
        // restarted as a standby).
        let exit = rb.process.wait_exit(Duration::from_secs(60));
        eprintln!("replica-b after SIGCONT: {exit:?}");
        assert!(exit.is_some(), "replica-b goes on after losing its Lease");
        let c_took = took_lease_at(&cluster, &rc.credential);
        let late = writes_after(&cluster, &rb.credential, c_took);
        assert!(late.is_empty(), "replica-b wrote to Kubernetes after replica-c took the Lease: {late:#?}");
        let cloud = rb.process.cloud_writes_since(b_mark);
        assert!(cloud.is_empty(), "replica-b wrote to OpenStack after it was frozen:\n{}", cloud.join("\n"));
        let woke = rb.process.log_since(b_mark);
        assert!(woke.contains("leadership lost"), "replica-b did not notice it lost the Lease:\n{woke}");
        rb.process.assert_no_refusal(&cluster);
        rc.process.assert_no_refusal(&cluster);
        eprintln!("whole test: {:.0} s", started.elapsed().as_secs_f64());
    };
    let result = futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(body)).await;
    eprintln!("logs: {}", cluster.dir.display());
    if let Some(b) = &b {
        // frozen when the test failed in between (a SIGKILL would end it anyway)
        b.process.try_signal("CONT");
    }
    drop((a, b, c));
    routers.cleanup().await;
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
}
