use super::*;
use crate::gateway::build::{Programmed, Translation, translate};
use crate::gateway::world::World;
use crate::model::RuleType;
use crate::model::{NOT_FOUND_POOL, RedirectTarget, SERVER_ERROR_POOL, Usage};
use crate::translate::Inputs;
use crate::translate::manifest::load_str;
use crate::translate::options::StatusResponder;
use std::path::Path;

const OBJECTS: &str = r#"
kind: GatewayClass
apiVersion: gateway.networking.k8s.io/v1
metadata: {name: kuryr}
spec: {controllerName: openstack.org/kuryr-l7-router}
---
kind: Gateway
apiVersion: gateway.networking.k8s.io/v1
metadata: {name: gw, namespace: infra}
spec:
  gatewayClassName: kuryr
  listeners:
  - {name: any, port: 80, protocol: HTTP}
  - {name: wild, port: 80, protocol: HTTP, hostname: "*.example.com"}
  - {name: alt, port: 8080, protocol: HTTP}
---
kind: HTTPRoute
apiVersion: gateway.networking.k8s.io/v1
metadata: {name: web, namespace: infra, creationTimestamp: "2024-01-01T00:00:00Z"}
spec:
  parentRefs: [{name: gw, sectionName: any}]
  rules:
  - backendRefs: [{name: web, port: 80}]
  - matches: [{path: {type: PathPrefix, value: /v2}, headers: [{name: Version, value: two}]}]
    backendRefs: [{name: v2, port: 80}]
  - matches: [{path: {type: Exact, value: /missing}}]
    backendRefs: [{name: nowhere, port: 80}]
---
kind: HTTPRoute
apiVersion: gateway.networking.k8s.io/v1
metadata: {name: wild, namespace: infra, creationTimestamp: "2024-01-02T00:00:00Z"}
spec:
  parentRefs: [{name: gw, sectionName: wild}]
  rules:
  - matches: [{path: {type: PathPrefix, value: /old}}]
    filters: [{type: RequestRedirect, requestRedirect: {hostname: new.example.org, port: 8443, statusCode: 301}}]
  - backendRefs: [{name: web, port: 80}]
---
kind: Service
apiVersion: v1
metadata: {name: web, namespace: infra}
spec: {ports: [{port: 80}]}
---
kind: Service
apiVersion: v1
metadata: {name: v2, namespace: infra}
spec: {ports: [{port: 80}]}
---
kind: Service
apiVersion: v1
metadata: {name: responder, namespace: kuryr}
spec: {ports: [{name: not-found, port: 8404}, {name: unavailable, port: 8503}, {name: server-error, port: 8500}]}
"#;

fn router(opts: &TranslateOptions) -> GatewayRouter {
    router_of(OBJECTS, opts)
}

fn router_of(objects: &str, opts: &TranslateOptions) -> GatewayRouter {
    let (t, inputs) = translated(&[objects], &[objects]);
    translate_gateway(t.router("infra", "gw").expect("the Gateway's routes"), &inputs, opts)
}

/// The Gateway translation of the objects of `world`, and the translator's inputs read from
/// `inputs` (the Services, Secrets, ... of the Gateways' routers).
fn translated(world: &[&str], inputs: &[&str]) -> (Translation, Inputs) {
    let mut w = World::default();
    for objects in world {
        w.add_yaml(objects).unwrap();
    }
    let t = translate(&w, &Programmed::new());
    let mut read = Inputs::default();
    for objects in inputs {
        load_str(objects, Path::new("objects.yaml"), &mut read).unwrap();
    }
    (t, read)
}

/// The conformance base objects with those of the case file at `path` (its expectations left
/// out).
fn conformance_objects(path: &str) -> String {
    let base = std::fs::read_to_string("tests/fixtures/gateway/base.yaml").unwrap();
    let case = std::fs::read_to_string(path).unwrap();
    base + "\n---\n" + case.split_once("\n---\n").unwrap().1
}

fn responder() -> TranslateOptions {
    TranslateOptions {
        status_responder: Some(StatusResponder {
            namespace: "kuryr".into(),
            name: "responder".into(),
            not_found_port: "not-found".into(),
            unavailable_port: "unavailable".into(),
            server_error_port: "server-error".into(),
        }),
        ..TranslateOptions::default()
    }
}

fn host_rule_of(p: &Policy) -> Option<&str> {
    p.rules.iter().find(|r| r.rule_type == RuleType::HostName && !r.invert).map(|r| r.value.as_str())
}

#[test]
fn policies_follow_the_spec_order_and_a_wildcard_listener_host_spans_several_labels() {
    let r = router(&responder());
    let order: Vec<(&str, Option<&str>)> =
        r.desired.policies.iter().map(|p| (p.pool.as_str(), host_rule_of(p))).collect();
    let wild_host = "^[^:]+\\.example\\.com(:[0-9]+)?$";
    let wild = Some(wild_host);
    assert_eq!(
        order,
        [
            // The wildcard listener's routes first (a more specific host), redirect then catch-all.
            ("", wild),
            ("infra_web", wild),
            // Then the host-less listener's: Exact, longest prefix with a header, then `/`.
            (SERVER_ERROR_POOL, None),
            ("infra_v2", None),
            ("infra_web", None),
        ]
    );
    let re = regex::Regex::new(wild_host).unwrap();
    assert!(re.is_match("a.b.example.com:80") && !re.is_match("example.com"));
    assert_eq!(r.desired.default_pool.as_deref(), Some(NOT_FOUND_POOL));
    assert_eq!(r.http_port, Some(80));
    assert!(r.name.starts_with("kuryr-gw-"), "{}", r.name);
}

#[test]
fn the_host_less_listener_does_not_catch_the_wildcard_listeners_hosts() {
    let r = router(&responder());
    for p in r.desired.policies.iter().filter(|p| host_rule_of(p).is_none()) {
        let excl: Vec<&Rule> = p.rules.iter().filter(|r| r.invert).collect();
        assert_eq!(excl.len(), 1, "{}: {:?}", p.name, p.rules);
        assert_eq!(excl[0].value, "^([^:]+\\.example\\.com)(:[0-9]+)?$");
    }
}

#[test]
fn a_rule_without_a_valid_backend_answers_from_the_responders_500_pool() {
    let r = router(&responder());
    let pool = r.desired.pools.get(SERVER_ERROR_POOL).expect("the 500 pool");
    assert_eq!(pool.service.name, "responder");
    assert_eq!(pool.service_port, "server-error");
    // Without a responder: an empty reserved pool (haproxy's 503), never another route.
    let r = router(&TranslateOptions::default());
    let pool = r.desired.pools.get(SERVER_ERROR_POOL).expect("the empty 500 pool");
    assert!(pool.members.is_empty());
    assert_eq!(r.desired.default_pool, None);
}

#[test]
fn a_redirect_keeps_the_path() {
    let r = router(&responder());
    let redirect = r.desired.policies[0].redirect.as_ref().expect("a redirect");
    assert_eq!(redirect.target, RedirectTarget::Prefix("http://new.example.org:8443".into()));
    assert_eq!(redirect.code, 301);
}

/// A Gateway with HTTP listeners on 80 and 8080 (GatewayPort8080): the router's HTTP listener
/// on 80, one more listener on 8080 with the routes attached to the 8080 listener only, sharing
/// the router's pools; no port is left unserved.
#[test]
fn a_second_http_port_is_a_listener_of_its_own_with_its_routes() {
    let objects = format!(
        "{OBJECTS}---\n{}",
        r#"kind: HTTPRoute
apiVersion: gateway.networking.k8s.io/v1
metadata: {name: eight, namespace: infra, creationTimestamp: "2024-01-03T00:00:00Z"}
spec:
  parentRefs: [{name: gw, sectionName: alt}]
  rules:
  - matches: [{path: {type: Exact, value: /eight}}]
    backendRefs: [{name: v2, port: 80}]
"#
    );
    let r = router_of(&objects, &responder());
    assert_eq!(r.http_port, Some(80));
    let ports: Vec<&Warning> =
        r.desired.warnings.iter().filter(|w| w.reason == crate::reason::Reason::ListenerPortUnsupported).collect();
    assert!(ports.is_empty(), "{ports:?}");
    assert_eq!(r.desired.more_http.keys().copied().collect::<Vec<_>>(), vec![8080]);
    let alt = &r.desired.more_http[&8080];
    assert_eq!(alt.default_pool.as_deref(), Some(NOT_FOUND_POOL));
    let has_eight = |p: &Policy| p.rules.iter().any(|rule| rule.value == "/eight");
    assert_eq!(alt.policies.len(), 1, "{:?}", alt.policies);
    assert!(has_eight(&alt.policies[0]) && alt.policies[0].position == 1);
    let pool = &alt.policies[0].pool;
    assert!(r.desired.pools.contains_key(pool), "{pool}: one of the router's pools");
    assert!(!r.desired.policies.iter().any(has_eight), "the 80 listener does not serve the 8080 route");
}

/// A route rule Octavia cannot express is left out with a typed `InvalidRule` warning on its
/// route; the route's other rules are served.
#[test]
fn a_rule_octavia_cannot_express_is_an_invalid_rule() {
    let objects = OBJECTS.replace("value: two}", "value: two words}");
    let r = router_of(&objects, &TranslateOptions::default());
    let invalid: Vec<&Warning> =
        r.desired.warnings.iter().filter(|w| w.reason == crate::reason::Reason::InvalidRule).collect();
    assert_eq!(invalid.len(), 1, "{:?}", r.desired.warnings);
    assert!(invalid[0].message.contains("whitespace"), "{}", invalid[0].message);
    assert_eq!(invalid[0].object, KubeRef::new("HTTPRoute", "infra", "web"));
    assert_eq!(r.desired.policies.len(), router(&TranslateOptions::default()).desired.policies.len() - 1);
}

#[test]
fn ingress_routers_never_get_the_500_pool() {
    // The Ingress pipeline shares the backends phase: without a ServerError route, no 500 pool.
    let inputs = Inputs::default();
    let d = crate::translate::translate(&inputs, &responder());
    assert!(!d.pools.contains_key(SERVER_ERROR_POOL));
}

const HTTPS_GATEWAY: &str = r#"
kind: GatewayClass
apiVersion: gateway.networking.k8s.io/v1
metadata: {name: kuryr}
spec: {controllerName: openstack.org/kuryr-l7-router}
---
kind: Gateway
apiVersion: gateway.networking.k8s.io/v1
metadata: {name: tls, namespace: infra}
spec:
  gatewayClassName: kuryr
  listeners:
  - {name: https, port: 443, protocol: HTTPS, hostname: secure.example.com, tls: {certificateRefs: [{name: cert}]}}
---
kind: HTTPRoute
apiVersion: gateway.networking.k8s.io/v1
metadata: {name: web, namespace: infra}
spec:
  parentRefs: [{name: tls}]
  rules: [{backendRefs: [{name: web, port: 80}]}]
---
kind: Service
apiVersion: v1
metadata: {name: web, namespace: infra}
spec: {ports: [{port: 80}]}
"#;

fn https_router(with_secret: bool) -> GatewayRouter {
    let key = rcgen::KeyPair::generate().unwrap();
    let params = rcgen::CertificateParams::new(vec!["secure.example.com".to_string()]).unwrap();
    let crt = params.self_signed(&key).unwrap();
    let secret = crate::testing::tls_secret_manifest("infra", "cert", &crt.pem(), &key.serialize_pem());
    let read: &[&str] = if with_secret { &[HTTPS_GATEWAY, &secret] } else { &[HTTPS_GATEWAY] };
    let (t, inputs) = translated(&[HTTPS_GATEWAY, &secret], read);
    translate_gateway(t.router("infra", "tls").expect("the Gateway's routes"), &inputs, &responder())
}

#[test]
fn an_https_listener_serves_its_certificate_and_its_routes() {
    let r = https_router(true);
    assert_eq!(r.http_port, None);
    assert!(r.desired.policies.is_empty(), "no HTTP listener: no HTTP policies");
    let https = r.desired.https.as_ref().expect("the HTTPS listener");
    assert_eq!(https.port, 443);
    assert_eq!(https.default_certificate, "infra_cert");
    let cert = &https.certificates["infra_cert"];
    assert!(cert.content.is_some(), "the Secret's certificate is read");
    assert_eq!(https.policies.len(), 1);
    assert_eq!(https.policies[0].pool, "infra_web");
    assert_eq!(https.default_pool.as_deref(), Some(NOT_FOUND_POOL));
}

#[test]
fn a_missing_certificate_secret_is_warned_on_the_gateway_and_never_fails_the_router() {
    let r = https_router(false);
    let https = r.desired.https.as_ref().expect("the HTTPS listener stays (the driver keeps the last content)");
    assert!(https.certificates["infra_cert"].content.is_none());
    let w = r.desired.warnings.iter().find(|w| w.reason.as_str() == "SecretNotFound").expect("a warning");
    assert_eq!(w.object, KubeRef::new("Gateway", "infra", "tls"));
    assert!(w.message.contains("Secret infra/cert not found"), "{}", w.message);
}

/// `web` (weight 1, two pods) and `canary` (weight 3, one pod) on one rule.
const SPLIT: &str = r#"
kind: GatewayClass
apiVersion: gateway.networking.k8s.io/v1
metadata: {name: kuryr}
spec: {controllerName: openstack.org/kuryr-l7-router}
---
kind: Gateway
apiVersion: gateway.networking.k8s.io/v1
metadata: {name: gw, namespace: infra}
spec:
  gatewayClassName: kuryr
  listeners: [{name: any, port: 80, protocol: HTTP}]
---
kind: HTTPRoute
apiVersion: gateway.networking.k8s.io/v1
metadata: {name: split, namespace: infra}
spec:
  parentRefs: [{name: gw}]
  rules:
  - backendRefs: [{name: web, port: 80, weight: 1}, {name: canary, port: 80, weight: 3}]
  - matches: [{path: {type: PathPrefix, value: /web}}]
    backendRefs: [{name: web, port: 80}, {name: canary, port: 80, weight: 0}]
---
kind: Service
apiVersion: v1
metadata: {name: web, namespace: infra}
spec: {ports: [{port: 80, targetPort: 8080}]}
---
kind: Service
apiVersion: v1
metadata: {name: canary, namespace: infra}
spec: {ports: [{port: 80, targetPort: 8080}]}
---
kind: EndpointSlice
apiVersion: discovery.k8s.io/v1
metadata: {name: web-1, namespace: infra, labels: {kubernetes.io/service-name: web}}
addressType: IPv4
ports: [{port: 8080}]
endpoints: [{addresses: [10.0.0.1]}, {addresses: [10.0.0.2]}]
---
kind: EndpointSlice
apiVersion: discovery.k8s.io/v1
metadata: {name: canary-1, namespace: infra, labels: {kubernetes.io/service-name: canary}}
addressType: IPv4
ports: [{port: 8080}]
endpoints: [{addresses: [10.0.0.9]}]
"#;

#[test]
fn a_weighted_split_is_one_pool_whose_members_give_each_service_its_share() {
    let r = router_of(SPLIT, &TranslateOptions::default());
    let pools: Vec<&str> = r.desired.policies.iter().map(|p| p.pool.as_str()).collect();
    assert_eq!(pools, ["infra_web", "split:infra/canary:80+infra/web:80"], "a weight-0 backend feeds nothing");
    let split = &r.desired.pools["split:infra/canary:80+infra/web:80"];
    let members: Vec<(String, u16)> = split.members.iter().map(|m| (m.address.to_string(), m.weight)).collect();
    // web's quarter over two pods, canary's three quarters on one: 256/6 per web pod, 256 for canary.
    assert_eq!(members, [("10.0.0.1".into(), 43), ("10.0.0.2".into(), 43), ("10.0.0.9".into(), 256)]);
    assert_eq!(
        split.split.iter().map(|f| (f.service.name.as_str(), f.weight)).collect::<Vec<_>>(),
        [("canary", 3), ("web", 1)]
    );
    assert_eq!(split.service.name, "canary", "the first feed owns the pool's tag");
    assert_eq!(r.desired.pools["infra_web"].split, [], "web's own pool is unchanged");
    assert!(r.desired.warnings.is_empty(), "{:?}", r.desired.warnings);
    let table = crate::translate::render_table(&r.desired);
    assert!(
        table.contains("(split: Service infra/canary port 80 weight 3, Service infra/web port 80 weight 1;"),
        "{table}"
    );
}

#[test]
fn an_invalid_backends_share_is_answered_500_by_the_responder_within_the_split() {
    let route = r#"
---
kind: HTTPRoute
apiVersion: gateway.networking.k8s.io/v1
metadata: {name: half, namespace: infra}
spec:
  parentRefs: [{name: gw}]
  rules:
  - matches: [{path: {type: PathPrefix, value: /half}}]
    backendRefs: [{name: web, port: 80, weight: 3}, {name: nowhere, port: 80, weight: 1}]
---
kind: Service
apiVersion: v1
metadata: {name: responder, namespace: kuryr}
spec: {ports: [{name: not-found, port: 8404}, {name: unavailable, port: 8503}, {name: server-error, port: 8500}]}
"#;
    let objects = format!("{SPLIT}{route}");
    let r = router_of(&objects, &responder());
    let half = r.desired.policies.iter().find(|p| p.name.contains("half")).expect("the /half policy");
    assert_eq!(half.pool, "split:infra/web:80+kuryr/responder:8500");
    let feeds: Vec<(String, u32)> =
        r.desired.pools[&half.pool].split.iter().map(|f| (f.service.to_string(), f.weight)).collect();
    assert_eq!(feeds, [("Service infra/web".to_string(), 3), ("Service kuryr/responder".to_string(), 1)]);
    // Without a responder the invalid share is dropped: web's own pool.
    let r = router_of(&objects, &TranslateOptions::default());
    let half = r.desired.policies.iter().find(|p| p.name.contains("half")).expect("the /half policy");
    assert_eq!(half.pool, "infra_web");
}

/// GatewayHTTPListenerIsolation on Octavia: each listener's policies carry its hostname and
/// one inverted HOST_NAME rule excluding its more specific siblings (packed into one value), and
/// the rule budget of the upstream test's two Gateways is counted here (docs/gateway-api.md).
#[test]
fn listener_isolation_is_inverted_host_rules_and_its_rule_budget_is_counted() {
    let objects = conformance_objects("tests/fixtures/gateway/cases/gateway-http-listener-isolation.yaml");
    let (t, inputs) = translated(&[&objects], &[&objects]);
    let of = |name: &str| {
        let routes = t.router("gateway-conformance-infra", name).expect("the Gateway's routes");
        translate_gateway(routes, &inputs, &TranslateOptions::default())
    };
    let plain = of("http-listener-isolation");
    let inverted = |p: &Policy| p.rules.iter().filter(|r| r.invert).map(|r| r.value.clone()).collect::<Vec<_>>();
    let by_path = |r: &GatewayRouter, path: &str| -> Vec<(Option<String>, Vec<String>)> {
        r.desired
            .policies
            .iter()
            .filter(|p| p.rules.iter().any(|r| r.rule_type == RuleType::Path && r.value.contains(path)))
            .map(|p| (host_rule_of(p).map(str::to_string), inverted(p)))
            .collect()
    };
    let foo = "[^:]+\\.foo\\.example\\.com";
    assert_eq!(
        by_path(&plain, "empty"),
        [(None, vec![format!("^([^:]+\\.example\\.com|{foo}|abc\\.foo\\.example\\.com)(:[0-9]+)?$")])]
    );
    assert_eq!(
        by_path(&plain, "wildcard-foo"),
        [(Some(format!("^{foo}(:[0-9]+)?$")), vec!["^(abc\\.foo\\.example\\.com)(:[0-9]+)?$".to_string()])]
    );
    assert_eq!(by_path(&plain, "abc-foo"), [(Some("^abc\\.foo\\.example\\.com(:[0-9]+)?$".to_string()), vec![])]);
    let usage = |r: &GatewayRouter| crate::translate::budget::usage(&r.desired);
    // One policy per listener; rules: host (3 listeners with one), path (4), inverted (3).
    assert_eq!(usage(&plain), Usage { l7policies: 4, l7rules: 10 });
    // With the routes' hostnames: one policy per hostname the listener and route share, less
    // those a more specific listener owns outright (`abc.foo.example.com` and, through the
    // host-less listener, `*.example.com` and `*.foo.example.com`; through `*.example.com`,
    // `*.foo.example.com`): as many as above, the host-less listener's one policy for `bar.com`
    // only, a host rule instead of the inverted one.
    let both = of("http-listener-isolation-with-hostname-intersection");
    assert_eq!(usage(&both), Usage { l7policies: 4, l7rules: 10 }, "{:#?}", both.desired.policies);
    assert_eq!(by_path(&both, "empty"), [(Some("^bar\\.com(:[0-9]+)?$".to_string()), vec![])]);
    let invalid = |r: &GatewayRouter| r.desired.warnings.iter().any(|w| w.reason == crate::reason::Reason::InvalidRule);
    assert!(!invalid(&plain) && !invalid(&both), "{:?}", both.desired.warnings);
}

/// Issue 33: haproxy runs every redirect before any route, so the own case's http->https
/// redirect (served per known name: `foo.example.com`) is written without the `/app` of the
/// route before it: one inverted rule more, no policy more, counted in the router's usage.
#[test]
fn a_redirect_behind_a_more_precise_route_misses_its_requests_at_the_cost_of_one_rule() {
    let objects = conformance_objects("tests/fixtures/gateway/own/redirect-shadows-a-more-precise-route.yaml");
    let (t, inputs) = translated(&[&objects], &[&objects]);
    let routes = t.router("gateway-conformance-infra", "redirect-and-forward").expect("the Gateway's routes");
    let r = translate_gateway(routes, &inputs, &responder());
    // Per policy: its redirect target, and its rules' values with their `invert`.
    type Shape<'a> = (Option<&'a str>, Vec<(&'a str, bool)>);
    let shape: Vec<Shape<'_>> = r
        .desired
        .policies
        .iter()
        .map(|p| {
            let target = p.redirect.as_ref().map(|d| match &d.target {
                RedirectTarget::Prefix(t) | RedirectTarget::Url(t) => t.as_str(),
            });
            (target, p.rules.iter().map(|x| (x.value.as_str(), x.invert)).collect())
        })
        .collect();
    let foo = "^foo\\.example\\.com(:[0-9]+)?$";
    assert_eq!(
        shape,
        [
            (None, vec![(foo, false), ("^/app(/.*)?$", false)]),
            (Some("https://foo.example.com"), vec![(foo, false), ("^/app(/.*)?$", true)]),
            // Any other name of the wildcard: the 500 of a name the redirect cannot repeat.
            (None, vec![("^[^:]+\\.example\\.com(:[0-9]+)?$", false)]),
        ]
    );
    assert_eq!(crate::translate::budget::usage(&r.desired), Usage { l7policies: 3, l7rules: 5 });
    assert!(!r.desired.warnings.iter().any(|w| w.reason == crate::reason::Reason::InvalidRule));
}

/// Issue 33: the wildcard listener of a keep-the-host redirect declared by a ListenerSet is
/// served as the same listener declared by the Gateway: the same policies (a redirect per
/// exact hostname of the routes attached through it, to that same host, then the 500 for any
/// other name) and the same rule budget.
#[test]
fn a_listener_sets_keep_host_redirect_gets_the_policies_and_budget_of_a_gateway_listener() {
    const COMMON: &str = r#"
kind: GatewayClass
apiVersion: gateway.networking.k8s.io/v1
metadata: {name: kuryr}
spec: {controllerName: openstack.org/kuryr-l7-router}
---
kind: Service
apiVersion: v1
metadata: {name: web, namespace: infra}
spec: {ports: [{port: 80}]}
---
kind: Service
apiVersion: v1
metadata: {name: responder, namespace: kuryr}
spec: {ports: [{name: not-found, port: 8404}, {name: unavailable, port: 8503}, {name: server-error, port: 8500}]}
"#;
    let wild = "{name: wild, port: 80, protocol: HTTP, hostname: '*.example.com'}";
    let gateway = |extra: &str| {
        format!(
            "---\nkind: Gateway\napiVersion: gateway.networking.k8s.io/v1\nmetadata: {{name: gw, namespace: infra}}\nspec:\n  gatewayClassName: kuryr\n  allowedListeners: {{namespaces: {{from: Same}}}}\n  listeners:\n  - {{name: base, port: 80, protocol: HTTP, hostname: base.example.org}}\n{extra}"
        )
    };
    let routes = |parent: &str| {
        format!(
            r#"---
kind: HTTPRoute
apiVersion: gateway.networking.k8s.io/v1
metadata: {{name: to-https, namespace: infra, creationTimestamp: "2024-01-01T00:00:00Z"}}
spec:
  parentRefs: [{parent}]
  rules: [{{filters: [{{type: RequestRedirect, requestRedirect: {{scheme: https, statusCode: 301}}}}]}}]
---
kind: HTTPRoute
apiVersion: gateway.networking.k8s.io/v1
metadata: {{name: app, namespace: infra, creationTimestamp: "2024-01-02T00:00:00Z"}}
spec:
  parentRefs: [{parent}]
  hostnames: [foo.example.com, bar.example.com]
  rules: [{{matches: [{{path: {{type: PathPrefix, value: /app}}}}], backendRefs: [{{name: web, port: 80}}]}}]
"#
        )
    };
    let own = format!("{COMMON}{}{}", gateway(&format!("  - {wild}\n")), routes("{name: gw, sectionName: wild}"));
    let set = format!(
        "---\nkind: ListenerSet\napiVersion: gateway.networking.k8s.io/v1\nmetadata: {{name: extra, namespace: infra}}\nspec:\n  parentRef: {{kind: Gateway, group: gateway.networking.k8s.io, name: gw}}\n  listeners:\n  - {wild}\n"
    );
    let through_set = format!(
        "{COMMON}{}{set}{}",
        gateway(""),
        routes("{kind: ListenerSet, group: gateway.networking.k8s.io, name: extra, sectionName: wild}")
    );
    let shape = |r: &GatewayRouter| -> Vec<(String, Option<String>, Option<RedirectTarget>)> {
        r.desired
            .policies
            .iter()
            .map(|p| {
                (p.pool.clone(), host_rule_of(p).map(str::to_string), p.redirect.as_ref().map(|d| d.target.clone()))
            })
            .collect()
    };
    let (a, b) = (router_of(&own, &responder()), router_of(&through_set, &responder()));
    assert_eq!(shape(&b), shape(&a));
    let usage = |r: &GatewayRouter| crate::translate::budget::usage(&r.desired);
    assert_eq!(usage(&b), usage(&a));
    // The redirects themselves: to the host asked for, never to another; 500 for other names.
    let redirects: Vec<(Option<String>, Option<RedirectTarget>)> = shape(&b)
        .into_iter()
        .filter(|(pool, _, d)| d.is_some() || pool == SERVER_ERROR_POOL)
        .map(|(_, h, d)| (h, d))
        .collect();
    let host = |h: &str| Some(format!("^{}(:[0-9]+)?$", h.replace('.', "\\.")));
    let to = |h: &str| Some(RedirectTarget::Prefix(format!("https://{h}")));
    assert_eq!(
        redirects,
        [
            (host("bar.example.com"), to("bar.example.com")),
            (host("foo.example.com"), to("foo.example.com")),
            (Some("^[^:]+\\.example\\.com(:[0-9]+)?$".to_string()), None),
        ]
    );
    assert!(
        !b.desired.warnings.iter().any(|w| w.reason == crate::reason::Reason::InvalidRule),
        "{:?}",
        b.desired.warnings
    );
}

/// A ConfigMap `infra/<name>` holding a new CA as `ca.crt`.
fn ca_config_map(name: &str) -> String {
    let pem = serde_json::to_string(&crate::gateway::world::ca_pem(name)).unwrap();
    format!(
        "kind: ConfigMap\napiVersion: v1\nmetadata: {{name: {name}, namespace: infra}}\ndata: {{\"ca.crt\": {pem}}}\n"
    )
}

/// A Gateway with HTTPS listeners on 443 and 8443 (the upstream client certificate validation
/// tests): the router's HTTPS listener on 443, one more TERMINATED_HTTPS listener on 8443, each
/// with its own certificates, routes and client certificate validation (the port's `perPort`
/// entry over `default`), sharing the router's pools; no port is left unserved, and the rule
/// budget counts both listeners' policies.
#[test]
fn each_https_port_is_a_listener_of_its_own_with_its_certificates_routes_and_client_validation() {
    use crate::model::ClientAuthentication::{Mandatory, Optional};
    let frontend = "  tls:\n    frontend:\n      default: {validation: {caCertificateRefs: [{kind: ConfigMap, group: '', name: ca}]}}\n      perPort:\n      - {port: 8443, tls: {validation: {mode: AllowInsecureFallback, caCertificateRefs: [{kind: ConfigMap, group: '', name: ca2}]}}}\n  listeners:\n";
    let second = "  - {name: second, port: 8443, protocol: HTTPS, hostname: second.example.com, tls: {certificateRefs: [{name: cert2}]}}\n---\nkind: HTTPRoute\napiVersion: gateway.networking.k8s.io/v1\nmetadata: {name: second, namespace: infra}\nspec:\n  parentRefs: [{name: tls, sectionName: second}]\n  rules: [{matches: [{path: {type: PathPrefix, value: /second}}], backendRefs: [{name: web, port: 80}]}]\n---\n";
    let objects = HTTPS_GATEWAY
        .replace("  listeners:\n", frontend)
        .replacen("---\nkind: HTTPRoute", &format!("{second}kind: HTTPRoute"), 1)
        .replace("parentRefs: [{name: tls}]", "parentRefs: [{name: tls, sectionName: https}]");
    let mut secrets = String::new();
    for (name, host) in [("cert", "secure.example.com"), ("cert2", "second.example.com")] {
        let key = rcgen::KeyPair::generate().unwrap();
        let crt = rcgen::CertificateParams::new(vec![host.to_string()]).unwrap().self_signed(&key).unwrap();
        secrets.push_str(&crate::testing::tls_secret_manifest("infra", name, &crt.pem(), &key.serialize_pem()));
        secrets.push_str("\n---\n");
    }
    let ca_maps = format!("{}---\n{}", ca_config_map("ca"), ca_config_map("ca2"));
    let (t, inputs) = translated(&[&objects, &secrets, &ca_maps], &[&objects, &secrets]);
    let r = translate_gateway(t.router("infra", "tls").expect("the Gateway's routes"), &inputs, &responder());
    let ports: Vec<&Warning> =
        r.desired.warnings.iter().filter(|w| w.reason == crate::reason::Reason::ListenerPortUnsupported).collect();
    assert!(ports.is_empty(), "{ports:?}");
    let https = r.desired.https.as_ref().expect("the HTTPS listener");
    assert_eq!((https.port, https.default_certificate.as_str()), (443, "infra_cert"));
    let v = https.client_validation.as_ref().expect("443: the default validation");
    assert_eq!((v.ca.name.as_str(), v.mode), ("infra_ca", Mandatory));
    assert_eq!(r.desired.more_https.keys().copied().collect::<Vec<_>>(), vec![8443]);
    let more = &r.desired.more_https[&8443];
    assert_eq!((more.port, more.default_certificate.as_str()), (8443, "infra_cert2"));
    assert_eq!(more.certificates.keys().collect::<Vec<_>>(), ["infra_cert2"]);
    assert!(more.certificates["infra_cert2"].content.is_some());
    let v = more.client_validation.as_ref().expect("8443: its perPort validation");
    assert_eq!((v.ca.name.as_str(), v.mode), ("infra_ca2", Optional));
    assert_eq!(more.default_pool.as_deref(), Some(NOT_FOUND_POOL));
    let has_second = |p: &Policy| p.rules.iter().any(|rule| rule.value.contains("/second"));
    assert_eq!(more.policies.len(), 1, "{:?}", more.policies);
    assert!(has_second(&more.policies[0]) && more.policies[0].position == 1);
    assert!(r.desired.pools.contains_key(&more.policies[0].pool), "one of the router's pools");
    assert!(!https.policies.iter().any(has_second), "443 does not serve the 8443 route");
    let usage = Usage::of(&r.desired);
    assert_eq!(usage.l7policies as usize, r.desired.policies.len() + https.policies.len() + more.policies.len());
}
