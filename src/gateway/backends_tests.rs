use super::*;
use crate::gateway::world::world;

const SERVICES: &str = "kind: Service\napiVersion: v1\nmetadata: {name: web, namespace: ns}\nspec: {ports: [{port: 8080}]}\n---\nkind: Service\napiVersion: v1\nmetadata: {name: web, namespace: other}\nspec: {ports: [{port: 8080}]}\n---\nkind: Service\napiVersion: v1\nmetadata: {name: ext, namespace: ns}\nspec: {type: ExternalName, externalName: example.com}\n";

fn run(backends: &str, extra: &str) -> (Action, Vec<BackendProblem>) {
    let w = world(&format!(
        "{SERVICES}---\n{extra}---\nkind: HTTPRoute\napiVersion: gateway.networking.k8s.io/v1\nmetadata: {{name: r, namespace: ns}}\nspec:\n  rules:\n  - backendRefs: {backends}\n"
    ));
    forward(&w.routes[0], 0, &w.routes[0].spec.rules[0], &w)
}

fn reasons(p: &[BackendProblem]) -> Vec<&str> {
    p.iter().map(|p| p.reason).collect()
}

#[test]
fn valid_backends_forward_with_their_weights_to_one_pool_per_rule() {
    let (a, p) = run("[{name: web, port: 8080, weight: 3}, {name: web, port: 8080}]", "");
    assert!(p.is_empty());
    let Action::Forward { pool, backends } = a else { panic!("{a:?}") };
    assert_eq!(pool, "httproute:ns/r:0");
    assert_eq!(backends.iter().map(|b| b.weight).collect::<Vec<_>>(), vec![3, 1]);
}

#[test]
fn each_bad_reference_gets_its_reason_and_keeps_its_share_as_500() {
    let (a, p) = run(
        "[{name: web, port: 8080}, {name: missing, port: 80}, {name: web, namespace: other, port: 8080}, {group: example.com, kind: Thing, name: x}, {name: ext, port: 80}, {name: web, port: 9}]",
        "",
    );
    assert_eq!(
        reasons(&p),
        vec!["BackendNotFound", "RefNotPermitted", "InvalidKind", "BackendNotFound", "BackendNotFound"]
    );
    let Action::Forward { backends, .. } = a else { panic!("{a:?}") };
    assert_eq!(backends.iter().filter(|b| b.target == BackendTarget::Status500).count(), 5);
}

/// HTTPRouteNamedRouteRule: a bad reference of a named rule names the rule.
#[test]
fn a_bad_reference_of_a_named_rule_names_the_rule() {
    let w = world(&format!(
        "{SERVICES}---\nkind: HTTPRoute\napiVersion: gateway.networking.k8s.io/v1\nmetadata: {{name: r, namespace: ns}}\nspec:\n  rules:\n  - name: cart\n    backendRefs: [{{name: missing, port: 80}}]\n"
    ));
    let (_, p) = forward(&w.routes[0], 0, &w.routes[0].spec.rules[0], &w);
    assert!(
        p[0].message.starts_with("spec.rules[0].backendRefs[0] (rule cart): Service ns/missing"),
        "{}",
        p[0].message
    );
}

#[test]
fn a_reference_grant_permits_the_cross_namespace_backend() {
    let grant = "kind: ReferenceGrant\napiVersion: gateway.networking.k8s.io/v1beta1\nmetadata: {name: g, namespace: other}\nspec:\n  from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: ns}]\n  to: [{group: '', kind: Service, name: web}]\n";
    let (a, p) = run("[{name: web, namespace: other, port: 8080}]", grant);
    assert!(p.is_empty(), "{p:?}");
    assert!(matches!(a, Action::Forward { .. }));
}

#[test]
fn no_usable_backend_answers_500() {
    assert_eq!(run("[]", "").0, Action::Fixed(500));
    assert_eq!(run("[{name: missing, port: 80}]", "").0, Action::Fixed(500));
    assert_eq!(run("[{name: web, port: 8080, weight: 0}]", "").0, Action::Fixed(500));
}

/// A Service port with appProtocol kubernetes.io/h2c: refused by name (`UnsupportedProtocol`,
/// the spec's reason), its share answered 500; the same Service's HTTP/1.1 port is served.
#[test]
fn an_h2c_backend_is_refused_with_unsupported_protocol() {
    let h2c = "kind: Service\napiVersion: v1\nmetadata: {name: grpc, namespace: ns}\nspec: {ports: [{port: 80, appProtocol: kubernetes.io/h2c}, {port: 81, appProtocol: kubernetes.io/ws}]}\n";
    let (a, p) = run("[{name: grpc, port: 80}, {name: grpc, port: 81}]", h2c);
    assert_eq!(reasons(&p), vec!["UnsupportedProtocol"]);
    assert!(p[0].message.contains("port 80 has appProtocol kubernetes.io/h2c"), "{}", p[0].message);
    let Action::Forward { backends, .. } = a else { panic!("{a:?}") };
    assert_eq!(backends[0].target, BackendTarget::Status500);
    assert!(matches!(backends[1].target, BackendTarget::Service { port: 81, .. }));
}

/// A Service that a BackendTLSPolicy asks TLS for: refused by name (`UnsupportedProtocol`,
/// naming the policy), its share answered 500, never forwarded in plain HTTP; a policy for
/// another Service (or of another namespace) changes nothing.
#[test]
fn a_backend_tls_policy_target_is_refused_not_served_in_plain_http() {
    let policy = |ns: &str, svc: &str| {
        format!(
            "kind: BackendTLSPolicy\napiVersion: gateway.networking.k8s.io/v1\nmetadata: {{name: tls, namespace: {ns}}}\nspec:\n  targetRefs: [{{group: '', kind: Service, name: {svc}}}]\n  validation: {{hostname: web.example.com, wellKnownCACertificates: System}}\n"
        )
    };
    let (a, p) = run("[{name: web, port: 8080}]", &policy("ns", "web"));
    assert_eq!(reasons(&p), vec!["UnsupportedProtocol"]);
    assert!(p[0].message.contains("BackendTLSPolicy ns/tls asks for TLS to Service ns/web"), "{}", p[0].message);
    assert_eq!(a, Action::Fixed(500));
    for other in [policy("ns", "api"), policy("other", "web")] {
        let (a, p) = run("[{name: web, port: 8080}]", &other);
        assert!(p.is_empty(), "{other}: {p:?}");
        assert!(matches!(a, Action::Forward { .. }));
    }
}
