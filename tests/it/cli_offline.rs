//! Issue 14 §5: `plan` talks to no OpenStack, so it runs on a kuryr.conf without any Keystone
//! option (no `[neutron]` section at all, no `lb_subnet`); the commands that talk to OpenStack
//! still refuse such a file, naming the missing option. Runs the binary.

use std::path::Path;
use std::process::{Command, Output, Stdio};

fn run(conf: &Path, args: &[&str]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_kuryr-l7-router"));
    c.env_remove("RUST_LOG").stdin(Stdio::null());
    for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("KURYR_")) {
        c.env_remove(k);
    }
    c.arg("--config-file").arg(conf).args(args).output().expect("the binary runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A kuryr.conf as a user trying `plan` writes it: the router, no OpenStack credentials.
const NO_KEYSTONE: &str = "[kubernetes]\nenable_ingress = true\n\n[octavia_defaults]\nl7_router_name = demo-router\n";

#[test]
fn plan_needs_no_keystone_options() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("kuryr.conf");
    std::fs::write(&conf, NO_KEYSTONE).unwrap();
    let examples = concat!(env!("CARGO_MANIFEST_DIR"), "/examples");
    let out = run(&conf, &["plan", "-f", examples, "-o", "json"]);
    assert!(out.status.success(), "plan failed: {}{}", text(&out.stdout), text(&out.stderr));
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).expect("plan -o json prints JSON");
    assert!(!plan["policies"].as_array().expect("policies").is_empty(), "{plan}");

    // A command that talks to OpenStack still refuses the file, naming what is missing.
    for cmd in [&["apply", "-f", examples][..], &["show"], &["smoke"], &["check-config"]] {
        let out = run(&conf, cmd);
        assert_eq!(out.status.code(), Some(2), "{cmd:?}: {}{}", text(&out.stdout), text(&out.stderr));
        let err = text(&out.stderr);
        assert!(err.contains("[neutron] auth_url: required option is not set"), "{cmd:?}: {err}");
        assert!(err.contains("[neutron_defaults] lb_subnet"), "{cmd:?}: {err}");
    }

    // Given Keystone values are still validated by `plan`.
    std::fs::write(&conf, format!("{NO_KEYSTONE}\n[neutron]\nauth_url = not a url\n")).unwrap();
    let out = run(&conf, &["plan", "-f", examples]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("[neutron] auth_url"), "{}", text(&out.stderr));
}

/// With `scale_out`, `plan` shows the router set: each router with its groups and their cost,
/// each Ingress's router, and (JSON) each router's desired state.
#[test]
fn plan_shows_the_router_of_each_ingress_with_scale_out() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("kuryr.conf");
    std::fs::write(&conf, format!("{NO_KEYSTONE}scale_out = true\nmax_policies_per_router = 6\n")).unwrap();
    let examples = concat!(env!("CARGO_MANIFEST_DIR"), "/examples");
    let out = run(&conf, &["plan", "-f", examples, "-o", "json"]);
    assert!(out.status.success(), "plan failed: {}{}", text(&out.stdout), text(&out.stderr));
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).expect("plan -o json prints JSON");
    let routers = plan["routers"].as_object().expect("routers by name");
    assert_eq!(routers.keys().collect::<Vec<_>>(), ["demo-router", "demo-router-2"], "{plan}");
    for (name, r) in routers {
        let policies = r["desired"]["policies"].as_array().expect("each router's desired state").len();
        assert_eq!(r["cost"]["policies"].as_u64(), Some(policies as u64), "{name}: the cost counts its policies");
        assert!(policies <= 6, "{name}: {policies} policies over the capacity");
    }
    assert_eq!(plan["ingresses"]["shop/storefront"], "demo-router", "{plan}");
    assert_eq!(plan["ingresses"]["shop/accounts"], "demo-router-2", "{plan}");
    let out = run(&conf, &["plan", "-f", examples]);
    let table = text(&out.stdout);
    assert!(table.contains("PLACEMENT (2 routers; at most 6 policies and 24 certificates each"), "{table}");
    assert!(table.contains("  ROUTER demo-router-2  6 policies, 0 certificates"), "{table}");
    assert!(table.contains("    shop/accounts -> demo-router-2"), "{table}");
    assert!(table.contains("PLACEMENT WARNINGS (0)"), "{table}");

    // The placement recorded on an Ingress is kept: storefront stays on the router it names.
    let copied = dir.path().join("examples");
    std::fs::create_dir(&copied).unwrap();
    for e in std::fs::read_dir(examples).unwrap().flatten().filter(|e| e.path().is_file()) {
        let text = std::fs::read_to_string(e.path()).unwrap().replace(
            "  name: storefront\n  namespace: shop\n",
            "  name: storefront\n  namespace: shop\n  annotations:\n    placement.kuryr-l7-router.openstack.org/router: demo-router-2\n",
        );
        std::fs::write(copied.join(e.file_name()), text).unwrap();
    }
    let out = run(&conf, &["plan", "-f", copied.to_str().unwrap(), "-o", "json"]);
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).expect("plan -o json prints JSON");
    assert_eq!(plan["ingresses"]["shop/storefront"], "demo-router-2", "{plan}");

    // Without scale_out the output is the single router, as before.
    std::fs::write(&conf, NO_KEYSTONE).unwrap();
    let out = run(&conf, &["plan", "-f", examples]);
    assert!(!text(&out.stdout).contains("PLACEMENT"), "{}", text(&out.stdout));
}

/// An Ingress with one path per entry of `paths` on host `<name>.example.com`, with `annotations`.
fn moving_ingress(name: &str, paths: &[&str], annotations: &str) -> String {
    let paths: Vec<String> = paths
        .iter()
        .map(|p| {
            format!(
                "      - {{path: {p}, pathType: Prefix, backend: {{service: {{name: web, port: {{number: 80}}}}}}}}\n"
            )
        })
        .collect();
    format!(
        "---\napiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: {name}\n  namespace: shop\n  annotations:\n{annotations}spec:\n  ingressClassName: kuryr-l7-router\n  rules:\n  - host: {name}.example.com\n    http:\n      paths:\n{}",
        paths.concat()
    )
}

/// With `scale_out`, `plan` shows the moves `run` would drive: the move recorded in progress on
/// an Ingress (c, from the second router to the third), and the move its placement would start
/// (a's group grew from the one policy recorded with it to two, on a router now over its two
/// policies: it leaves to a new router, the others being busy with c's move); b stays.
#[test]
fn plan_shows_the_moves_in_progress_and_those_it_would_start() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("kuryr.conf");
    std::fs::write(&conf, format!("{NO_KEYSTONE}scale_out = true\nmax_policies_per_router = 2\n")).unwrap();
    let placed = |router: &str, policies: u32, host: &str| {
        format!(
            "    placement.kuryr-l7-router.openstack.org/router: {router}\n    placement.kuryr-l7-router.openstack.org/cost: '{{\"group\":\"{host}\",\"policies\":{policies},\"certificates\":0}}'\n"
        )
    };
    let record = r#"{"group":"c.example.com","hosts":["c.example.com"],"from":1,"to":2,"phase":{"PublishBoth":{"since":1700}},"cause":"Operator"}"#;
    let moving = format!(
        "{}    placement.kuryr-l7-router.openstack.org/move: '{record}'\n",
        placed("demo-router-3", 1, "c.example.com")
    );
    let manifests = [
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/00-ingressclass.yaml")).unwrap(),
        "---\napiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: shop}\nspec: {ports: [{port: 80}]}\n"
            .into(),
        moving_ingress("a", &["/", "/more"], &placed("demo-router", 1, "a.example.com")),
        moving_ingress("b", &["/"], &placed("demo-router", 1, "b.example.com")),
        moving_ingress("c", &["/"], &moving),
    ];
    let file = dir.path().join("moves.yaml");
    std::fs::write(&file, manifests.concat()).unwrap();
    let out = run(&conf, &["plan", "-f", file.to_str().unwrap()]);
    let table = text(&out.stdout);
    assert!(out.status.success(), "plan failed: {table}{}", text(&out.stderr));
    assert!(table.contains("MOVES (2: 1 in progress, 1 to start)"), "{table}");
    assert!(
        table.contains(
            "  MOVE c.example.com: demo-router-2 -> demo-router-3  in progress: both addresses published since 1700"
        ),
        "{table}"
    );
    assert!(
        table.contains("  MOVE a.example.com: demo-router -> demo-router-4  to start: automatic: router demo-router over capacity (3 > 2 policies)"),
        "{table}"
    );
    assert!(!table.contains("MOVE b.example.com"), "{table}");
    let out = run(&conf, &["plan", "-f", file.to_str().unwrap(), "-o", "json"]);
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).expect("plan -o json prints JSON");
    let moves = plan["moves"].as_array().expect("the moves");
    let got: Vec<(&str, &str, &str, bool)> = moves
        .iter()
        .map(|m| {
            (
                m["hosts"][0].as_str().unwrap(),
                m["from"].as_str().unwrap(),
                m["to"].as_str().unwrap(),
                m["inProgress"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("c.example.com", "demo-router-2", "demo-router-3", true),
            ("a.example.com", "demo-router", "demo-router-4", false)
        ]
    );
}

/// The README's two commands run as root on a bare machine, which may have no `sudo`: neither the
/// docs nor the scripts behind them call it (devstack's plugin is the exception: devstack runs as
/// its non-root stack user).
#[test]
fn readme_commands_and_their_scripts_need_no_sudo() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("README.md")];
    for dir in ["docs", "functional", ".ci"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else { continue };
        files.extend(entries.flatten().map(|e| e.path()).filter(|p| p.is_file()));
    }
    files.retain(|p| p.file_name().is_some_and(|n| n != "devstack.md"));
    assert!(files.iter().any(|p| p.ends_with("functional/demo.sh")), "{files:?}");
    // `sudo` used as a command: followed by blanks and a command word (not "no `sudo`:").
    let sudo = regex::Regex::new(r"(^|[\s;&|(`$])sudo\s+[-\w/.$]").unwrap();
    for f in files {
        let Ok(body) = std::fs::read_to_string(&f) else { continue };
        for (i, line) in body.lines().enumerate() {
            assert!(!sudo.is_match(line), "{}:{}: {line}", f.display(), i + 1);
        }
    }
    assert!(sudo.is_match("sudo functional/demo.sh") && sudo.is_match("  && sudo -E apt-get install x"));
}

/// A Gateway of ours, its HTTPRoute and Service, as `plan` reads them.
const GATEWAY_MANIFESTS: &str = "\
kind: GatewayClass\napiVersion: gateway.networking.k8s.io/v1\nmetadata: {name: kuryr}\n\
spec: {controllerName: openstack.org/kuryr-l7-router}\n---\n\
kind: Gateway\napiVersion: gateway.networking.k8s.io/v1\nmetadata: {name: web, namespace: shop}\n\
spec: {gatewayClassName: kuryr, listeners: [{name: http, port: 80, protocol: HTTP}]}\n---\n\
kind: HTTPRoute\napiVersion: gateway.networking.k8s.io/v1\nmetadata: {name: store, namespace: shop}\n\
spec: {parentRefs: [{name: web}], hostnames: [shop.example.com], \
rules: [{matches: [{path: {type: PathPrefix, value: /cart}}], backendRefs: [{name: cart, port: 80}]}]}\n---\n\
kind: HTTPRoute\napiVersion: gateway.networking.k8s.io/v1\nmetadata: {name: nowhere, namespace: shop}\n\
spec: {parentRefs: [{name: web, sectionName: https}], rules: [{backendRefs: [{name: cart, port: 80}]}]}\n---\n\
kind: Service\napiVersion: v1\nmetadata: {name: cart, namespace: shop}\nspec: {ports: [{port: 80}]}\n";

/// `plan` takes Gateway API objects as it takes Ingresses: each Gateway of ours with its load
/// balancer, its router and its status, and each HTTPRoute's parents; an Ingress-only plan is
/// printed as before (no `gatewayApi` key).
#[test]
fn plan_shows_each_gateway_router_and_the_gateway_api_status() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("kuryr.conf");
    std::fs::write(&conf, NO_KEYSTONE).unwrap();
    let manifests = dir.path().join("gateway.yaml");
    std::fs::write(&manifests, GATEWAY_MANIFESTS).unwrap();
    let out = run(&conf, &["plan", "-f", manifests.to_str().unwrap(), "-o", "json"]);
    assert!(out.status.success(), "plan failed: {}{}", text(&out.stdout), text(&out.stderr));
    assert!(!text(&out.stderr).contains("ignored"), "Gateway API kinds are read: {}", text(&out.stderr));
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).expect("plan -o json prints JSON");
    let g = &plan["gatewayApi"]["gateways"]["shop/web"];
    assert!(g["loadBalancer"].as_str().unwrap().starts_with("kuryr-gw-"), "{plan}");
    assert_eq!(g["httpPort"], 80);
    assert_eq!(g["router"]["policies"].as_array().unwrap().len(), 1, "{g}");
    assert_eq!(g["listeners"][0]["attachedRoutes"], 1);
    let cond = |route: &str, kind: &str| {
        let parents = plan["gatewayApi"]["httpRoutes"][route].as_array().unwrap().clone();
        let c = parents[0]["conditions"].as_array().unwrap().iter().find(|c| c["type"] == kind).unwrap().clone();
        format!("{}/{}", c["status"].as_str().unwrap(), c["reason"].as_str().unwrap())
    };
    assert_eq!(cond("shop/store", "Accepted"), "True/Accepted");
    assert_eq!(cond("shop/nowhere", "Accepted"), "False/NoMatchingParent");

    let out = run(&conf, &["plan", "-f", manifests.to_str().unwrap()]);
    let table = text(&out.stdout);
    assert!(table.contains("GATEWAY shop/web") && table.contains("load balancer kuryr-gw-"), "{table}");
    assert!(table.contains("HTTPROUTE shop/nowhere"), "{table}");

    let examples = concat!(env!("CARGO_MANIFEST_DIR"), "/examples");
    let out = run(&conf, &["plan", "-f", examples, "-o", "json"]);
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(plan.get("gatewayApi").is_none(), "Ingress-only: {plan}");
}

/// Issue 33: `plan` decides host ownership across both kinds as the controller does (one owner
/// index, the first claim wins whichever kind makes it): an older Ingress keeps its host from a
/// later HTTPRoute of another namespace, and an older HTTPRoute keeps its host from a later
/// Ingress of another namespace.
const CROSS_KIND_MANIFESTS: &str = "\
kind: IngressClass\napiVersion: networking.k8s.io/v1\nmetadata: {name: kuryr-l7-router}\n\
spec: {controller: openstack.org/kuryr-l7-router}\n---\n\
kind: GatewayClass\napiVersion: gateway.networking.k8s.io/v1\nmetadata: {name: kuryr}\n\
spec: {controllerName: openstack.org/kuryr-l7-router}\n---\n\
kind: Gateway\napiVersion: gateway.networking.k8s.io/v1\n\
metadata: {name: web, namespace: team-b, creationTimestamp: '2024-01-02T00:00:00Z'}\n\
spec: {gatewayClassName: kuryr, listeners: [{name: http, port: 80, protocol: HTTP}]}\n---\n\
kind: HTTPRoute\napiVersion: gateway.networking.k8s.io/v1\n\
metadata: {name: late, namespace: team-b, creationTimestamp: '2024-01-05T00:00:00Z'}\n\
spec: {parentRefs: [{name: web}], hostnames: [shop.example.com], rules: [{backendRefs: [{name: app, port: 80}]}]}\n---\n\
kind: HTTPRoute\napiVersion: gateway.networking.k8s.io/v1\n\
metadata: {name: blog, namespace: team-b, creationTimestamp: '2023-12-01T00:00:00Z'}\n\
spec: {parentRefs: [{name: web}], hostnames: [blog.example.com], rules: [{backendRefs: [{name: app, port: 80}]}]}\n---\n\
kind: Service\napiVersion: v1\nmetadata: {name: app, namespace: team-b}\nspec: {ports: [{port: 80}]}\n---\n\
kind: Ingress\napiVersion: networking.k8s.io/v1\n\
metadata: {name: shop, namespace: team-a, creationTimestamp: '2024-01-01T00:00:00Z'}\n\
spec: {ingressClassName: kuryr-l7-router, rules: [{host: shop.example.com, http: {paths: [{path: /, pathType: Prefix, \
backend: {service: {name: app, port: {number: 80}}}}]}}]}\n---\n\
kind: Ingress\napiVersion: networking.k8s.io/v1\n\
metadata: {name: blog, namespace: team-a, creationTimestamp: '2024-01-03T00:00:00Z'}\n\
spec: {ingressClassName: kuryr-l7-router, rules: [{host: blog.example.com, http: {paths: [{path: /, pathType: Prefix, \
backend: {service: {name: app, port: {number: 80}}}}]}}]}\n---\n\
kind: Service\napiVersion: v1\nmetadata: {name: app, namespace: team-a}\nspec: {ports: [{port: 80}]}\n";

#[test]
fn plan_decides_host_ownership_across_ingresses_and_httproutes() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("kuryr.conf");
    std::fs::write(&conf, NO_KEYSTONE.replace("[kubernetes]\n", "[kubernetes]\nhost_ownership = True\n")).unwrap();
    let manifests = dir.path().join("both.yaml");
    std::fs::write(&manifests, CROSS_KIND_MANIFESTS).unwrap();
    let out = run(&conf, &["plan", "-f", manifests.to_str().unwrap(), "-o", "json"]);
    assert!(out.status.success(), "plan failed: {}{}", text(&out.stdout), text(&out.stderr));
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).expect("plan -o json prints JSON");

    // The later HTTPRoute loses shop.example.com to the older Ingress of team-a, named.
    let late = &plan["gatewayApi"]["httpRoutes"]["team-b/late"][0]["conditions"];
    let accepted = late.as_array().unwrap().iter().find(|c| c["type"] == "Accepted").unwrap();
    assert_eq!(
        (accepted["status"].as_str(), accepted["reason"].as_str()),
        (Some("False"), Some("NotAllowedByListeners")),
        "{plan}"
    );
    assert!(accepted["message"].as_str().unwrap().contains("team-a"), "names the owner: {accepted}");
    // The older HTTPRoute keeps blog.example.com.
    let blog = &plan["gatewayApi"]["httpRoutes"]["team-b/blog"][0]["conditions"];
    let accepted = blog.as_array().unwrap().iter().find(|c| c["type"] == "Accepted").unwrap();
    assert_eq!(accepted["status"], "True", "{plan}");

    // The Ingress side: shop.example.com is routed, blog.example.com is refused with a warning
    // naming the HTTPRoute's namespace, and no policy of the Ingress router serves it.
    let policies = plan["policies"].as_array().expect("the Ingress router's policies");
    let hosts: Vec<String> = policies.iter().map(|p| p.to_string()).collect();
    assert!(hosts.iter().any(|p| p.contains("shop.example.com")), "{plan}");
    assert!(!hosts.iter().any(|p| p.contains("blog.example.com")), "the refused host is not routed: {plan}");
    let warnings = plan["warnings"].as_array().unwrap();
    let refused = warnings.iter().find(|w| w.to_string().contains("blog.example.com")).expect("a warning for blog");
    assert!(
        refused.to_string().contains("HostOwnedByOtherNamespace") && refused.to_string().contains("team-b"),
        "{refused}"
    );
}
