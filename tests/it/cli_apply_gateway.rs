//! Issue 33 §5: `apply -f DIR` converges every router that `plan -f DIR` shows, the Gateways'
//! included, and prints each Gateway's status as `plan` does, with the data plane's answer;
//! `show` then lists the Gateway's router. Runs the binary against the fake Octavia on loopback
//! (`support::fake_octavia`: Keystone's token from the same port, the driver's real requests).

use crate::support::fake_octavia;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// A Gateway of ours with one HTTP listener, its HTTPRoute and the Service with one endpoint;
/// no Ingress.
const GATEWAY_ONLY: &str = "\
kind: GatewayClass\napiVersion: gateway.networking.k8s.io/v1\nmetadata: {name: kuryr}\n\
spec: {controllerName: openstack.org/kuryr-l7-router}\n---\n\
kind: Gateway\napiVersion: gateway.networking.k8s.io/v1\nmetadata: {name: web, namespace: shop}\n\
spec: {gatewayClassName: kuryr, listeners: [{name: http, port: 80, protocol: HTTP}]}\n---\n\
kind: HTTPRoute\napiVersion: gateway.networking.k8s.io/v1\nmetadata: {name: store, namespace: shop}\n\
spec: {parentRefs: [{name: web}], hostnames: [shop.example.com], \
rules: [{matches: [{path: {type: PathPrefix, value: /cart}}], backendRefs: [{name: cart, port: 80}]}]}\n---\n\
kind: Service\napiVersion: v1\nmetadata: {name: cart, namespace: shop}\nspec: {ports: [{port: 80, targetPort: 8080}]}\n---\n\
kind: EndpointSlice\napiVersion: discovery.k8s.io/v1\n\
metadata: {name: cart-1, namespace: shop, labels: {kubernetes.io/service-name: cart}}\n\
addressType: IPv4\nports: [{port: 8080}]\nendpoints: [{addresses: [10.1.0.7], conditions: {ready: true}}]\n";

/// The binary with a kuryr.conf on the fake cloud at `port`, off the test's runtime (the fake
/// answers meanwhile).
async fn kuryr(port: u16, dir: &Path, args: &[&str]) -> Output {
    let conf = dir.join("kuryr.conf");
    std::fs::write(
        &conf,
        format!(
            "[kubernetes]\nenable_ingress = True\ncluster_name = c1\n\n\
             [neutron_defaults]\nlb_subnet = 3c0f6c8e-1b2d-4c3e-8f9a-0b1c2d3e4f5a\n\n\
             [octavia_defaults]\nl7_router_name = edge\nlb_create_timeout = 10\nwrite_timeout = 10\n\n\
             [neutron]\nauth_url = http://127.0.0.1:{port}/v3\nusername = u\npassword = p\nproject_name = p\n"
        ),
    )
    .unwrap();
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    tokio::task::spawn_blocking(move || {
        let mut c = Command::new(env!("CARGO_BIN_EXE_kuryr-l7-router"));
        c.env_remove("RUST_LOG").stdin(Stdio::null());
        for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("KURYR_")) {
            c.env_remove(k);
        }
        c.arg("--config-file").arg(&conf).args(&args).output().expect("the binary runs")
    })
    .await
    .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_converges_the_gateways_router_and_prints_its_status() {
    let (port, state) = fake_octavia::start(1 << 20).await;
    let dir = tempfile::tempdir().unwrap();
    let manifests = dir.path().join("manifests");
    std::fs::create_dir(&manifests).unwrap();
    std::fs::write(manifests.join("gateway.yaml"), GATEWAY_ONLY).unwrap();
    let files = manifests.to_str().unwrap();

    // The load balancer `plan` names for the Gateway.
    let out = kuryr(port, dir.path(), &["plan", "-f", files, "-o", "json"]).await;
    assert!(out.status.success(), "plan: {}{}", text(&out.stdout), text(&out.stderr));
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let lb_name = plan["gatewayApi"]["gateways"]["shop/web"]["loadBalancer"].as_str().unwrap().to_string();
    assert!(state.lock().unwrap().writes.is_empty(), "plan writes nothing");

    let out = kuryr(port, dir.path(), &["apply", "-f", files]).await;
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "apply: {stdout}{stderr}");
    {
        let s = state.lock().unwrap();
        let lb = s.lb.as_ref().expect("apply created the Gateway's load balancer");
        assert_eq!(lb["name"], lb_name.as_str(), "the load balancer plan names");
        let listener = s.listeners.iter().find(|l| l["protocol"] == "HTTP").expect("an HTTP listener");
        assert_eq!(listener["protocol_port"], 80, "the Gateway's listener port");
        assert_eq!(s.policies.len(), 1, "the HTTPRoute's rule: {:?}", s.policies);
        let members: Vec<&serde_json::Value> = s.members.iter().map(|(_, m)| m).collect();
        assert!(members.iter().any(|m| m["address"] == "10.1.0.7" && m["protocol_port"] == 8080), "{members:?}");
        // No Ingress in the manifests: the Ingress router `edge` is not created.
        let creates = s.writes.iter().filter(|(l, _)| l.starts_with("POST /v2/lbaas/loadbalancers")).count();
        assert_eq!(creates, 1, "one create, the Gateway's: {:?}", s.writes);
    }
    assert!(stdout.contains("L7 router edge: no Ingress in the manifests, not converged"), "{stdout}");
    assert!(stdout.contains(&format!("L7 router {lb_name} (")), "the Gateway router's writes: {stdout}");
    // Its status as `plan` prints it, with the data plane's answer: programmed, its address.
    let status = stdout.split("GATEWAY API STATUS (after apply)").nth(1).unwrap_or_else(|| panic!("{stdout}"));
    assert!(status.contains("GATEWAY shop/web"), "{status}");
    assert!(status.contains("Programmed=True (Programmed:"), "{status}");
    assert!(status.contains("addresses 10.0.0.9"), "the VIP address: {status}");
    assert!(status.contains(&format!("load balancer {lb_name} (HTTP port 80)")), "{status}");
    assert!(status.contains("HTTPROUTE shop/store") && status.contains("Accepted=True"), "{status}");

    // `show` lists the Gateway's router, as Octavia has it now.
    let out = kuryr(port, dir.path(), &["show"]).await;
    let shown = text(&out.stdout);
    assert!(out.status.success(), "show: {shown}{}", text(&out.stderr));
    assert!(shown.contains(&lb_name), "{shown}");

    // A second apply: converged already, nothing written again.
    let before = state.lock().unwrap().writes.len();
    let out = kuryr(port, dir.path(), &["apply", "-f", files]).await;
    assert!(out.status.success(), "apply again: {}{}", text(&out.stdout), text(&out.stderr));
    let again = state.lock().unwrap().writes[before..].to_vec();
    assert!(again.is_empty(), "the second apply writes nothing: {again:?}");
}

/// A Gateway whose router fails: the command fails, naming the router, and the Gateway's status
/// says so (`Programmed=False`, the error), as the controller would write it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_prints_a_failed_gateway_router_in_its_status_and_fails() {
    // Every create body is over the limit, and the fallback's first create too: the router
    // cannot be created.
    let (port, _state) = fake_octavia::start(0).await;
    let dir = tempfile::tempdir().unwrap();
    let manifests = dir.path().join("gateway.yaml");
    std::fs::write(&manifests, GATEWAY_ONLY).unwrap();
    let out = kuryr(port, dir.path(), &["apply", "-f", manifests.to_str().unwrap()]).await;
    let stdout = text(&out.stdout);
    assert!(!out.status.success(), "{stdout}");
    assert!(text(&out.stderr).contains("router(s) kuryr-gw-"), "{}", text(&out.stderr));
    let status = stdout.split("GATEWAY API STATUS (after apply)").nth(1).unwrap_or_else(|| panic!("{stdout}"));
    assert!(status.contains("Programmed=False (NoResources: the load balancer failed:"), "{status}");
}
