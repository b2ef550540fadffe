use super::*;
use crate::gateway::world::{gateway_yaml, world};

const SVC: &str =
    "kind: Service\napiVersion: v1\nmetadata: {name: web, namespace: infra}\nspec: {ports: [{port: 80}]}\n";

fn route(name: &str, spec: &str) -> String {
    format!(
        "---\nkind: HTTPRoute\napiVersion: gateway.networking.k8s.io/v1\nmetadata: {{name: {name}, namespace: infra, generation: 7}}\nspec:\n{spec}\n"
    )
}

fn run(listeners: &str, routes: &str, programmed: bool) -> Translation {
    let w = world(&format!("{}---\n{SVC}{routes}", gateway_yaml(listeners)));
    let mut p = Programmed::new();
    if programmed {
        p.insert(("infra".into(), "gw".into()), vec!["198.51.100.7".into()]);
    }
    translate(&w, &p)
}

fn accepted(t: &Translation, route: &str) -> (bool, String, String) {
    let c = t.route("infra", route).and_then(|r| r.condition("gw", "Accepted")).expect("a condition");
    (c.ok, c.reason.clone(), c.message.clone())
}

/// A load balancer that failed wins over an address it had: Programmed False, NoResources, the
/// message naming the error; the listeners wait.
#[test]
fn a_failed_load_balancer_is_not_programmed_and_names_its_error() {
    let w = world(&format!("{}---\n{SVC}", gateway_yaml("  - {name: http, port: 80, protocol: HTTP}")));
    let key = ("infra".to_string(), "gw".to_string());
    let p: Programmed = [(key.clone(), vec!["198.51.100.7".to_string()])].into();
    let f: RouterFailures = [(key, "quota_exceeded: no more load balancers".to_string())].into();
    let t = translate_with_failures(&w, &p, &f);
    let g = t.gateway("infra", "gw").unwrap();
    let c = g.condition("Programmed").unwrap();
    assert_eq!((c.ok, c.reason.as_str()), (false, "NoResources"));
    assert_eq!(c.message, "the load balancer failed: quota_exceeded: no more load balancers");
    assert_eq!(g.listener("http").unwrap().condition("Programmed").map(|c| c.ok), Some(false));
}

const BACKEND: &str = "  rules: [{backendRefs: [{name: web, port: 80}]}]";

/// Over `gateways_per_namespace`: the Gateway is not accepted (the limit named), gets no
/// router (kept: one built before the limit was lowered keeps its address) and its routes are
/// not accepted on it; the same world without the limit serves both.
#[test]
fn a_gateway_over_the_limit_gets_no_router_and_its_routes_are_told() {
    let yaml = format!(
        "{}---\n{SVC}{}",
        gateway_yaml("  - {name: http, port: 80, protocol: HTTP}"),
        route("r", &format!("  parentRefs: [{{name: gw}}]\n{BACKEND}"))
    );
    let mut w = world(&yaml);
    let mut first = (*w.gateways[0]).clone();
    first.metadata.name = Some("first".into());
    first.metadata.creation_timestamp =
        Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time("2026-01-01T00:00:00Z".parse().unwrap()));
    w.gateways.push(std::sync::Arc::new(first));
    w.limits.per_namespace = Some(1);
    let t = translate(&w, &Programmed::new());
    let g = t.gateway("infra", "gw").unwrap();
    let c = g.condition("Accepted").unwrap();
    assert_eq!((c.ok, c.reason.as_str()), (false, "LimitExceeded"));
    assert!(c.message.contains("gateways_per_namespace = 1"), "{}", c.message);
    assert!(t.router("infra", "gw").is_none() && t.router("infra", "first").is_some());
    let lb = crate::gateway::naming::load_balancer_name("infra", "gw");
    assert!(t.fates.kept.contains_key(&lb) && t.fates.limited.contains(&lb), "{:?}", t.fates);
    let (ok, reason, message) = accepted(&t, "r");
    assert_eq!((ok, reason.as_str()), (false, "LimitExceeded"), "{message}");
    w.limits.per_namespace = None;
    let t = translate(&w, &Programmed::new());
    assert!(t.router("infra", "gw").is_some() && t.router("infra", "first").is_some());
    assert!(accepted(&t, "r").0);
}

#[test]
fn gateway_is_programmed_only_with_an_address_and_reports_it() {
    let t = run("  - {name: http, port: 80, protocol: HTTP}", "", false);
    let g = t.gateway("infra", "gw").unwrap();
    assert_eq!(g.condition("Programmed").map(|c| (c.ok, c.reason.as_str())), Some((false, "Pending")));
    assert!(g.addresses.is_empty());
    assert_eq!(g.generation, Some(3));
    let t = run("  - {name: http, port: 80, protocol: HTTP}", "", true);
    let g = t.gateway("infra", "gw").unwrap();
    assert_eq!(g.condition("Programmed").map(|c| c.ok), Some(true));
    assert_eq!(g.addresses[0].value, "198.51.100.7");
    assert_eq!(g.listener("http").unwrap().condition("Programmed").map(|c| c.ok), Some(true));
}

#[test]
fn parent_port_and_section_must_name_a_listener() {
    let routes = route("p", &format!("  parentRefs: [{{name: gw, port: 8080}}]\n{BACKEND}"))
        + &route("s", &format!("  parentRefs: [{{name: gw, sectionName: http, port: 80}}]\n{BACKEND}"));
    let t = run("  - {name: http, port: 80, protocol: HTTP}", &routes, true);
    assert_eq!(accepted(&t, "p").1, "NoMatchingParent");
    assert!(accepted(&t, "s").0);
    assert_eq!(t.route("infra", "s").unwrap().generation, Some(7), "observedGeneration source");
}

#[test]
fn unsupported_route_is_refused_not_attached_and_not_served() {
    let routes = route(
        "m",
        "  parentRefs: [{name: gw}]\n  rules: [{matches: [{method: POST}], backendRefs: [{name: web, port: 80}]}]",
    );
    let t = run("  - {name: http, port: 80, protocol: HTTP}", &routes, true);
    let (ok, reason, msg) = accepted(&t, "m");
    assert!(!ok && reason == "UnsupportedValue" && msg.contains("spec.rules[0].matches[0].method"), "{reason}: {msg}");
    assert_eq!(t.gateway("infra", "gw").unwrap().listener("http").unwrap().attached_routes, 0);
    assert!(t.router("infra", "gw").unwrap().listeners[0].entries.is_empty());
}

/// A redirect that keeps the request's host: on an exact-host entry one redirect to that host;
/// on an any-host entry one redirect per known name of the Gateway (its address, the exact
/// hostnames of its routes and listeners), each to the name asked for, and 500 for any other
/// host; all of them ordered by the route's own (any) host, after the exact-host routes.
#[test]
fn a_redirect_keeping_the_request_host_is_served_per_known_name_and_never_to_another_host() {
    let redirect = "  rules: [{filters: [{type: RequestRedirect, requestRedirect: {scheme: https}}]}]";
    let routes = route("any", &format!("  parentRefs: [{{name: gw}}]\n{redirect}"))
        + &route("exact", &format!("  parentRefs: [{{name: gw}}]\n  hostnames: [a.example.com]\n{redirect}"))
        + &route(
            "other",
            &format!("  parentRefs: [{{name: gw}}]\n  hostnames: [b.example.com, '*.wild.com']\n{BACKEND}"),
        );
    let t = run("  - {name: http, port: 80, protocol: HTTP}", &routes, true);
    assert!(accepted(&t, "any").0 && accepted(&t, "exact").0);
    let mut entries = t.router("infra", "gw").unwrap().listeners[0].entries.clone();
    entries.sort_by(|a, b| a.key.cmp(&b.key));
    let seen: Vec<(&str, Option<&str>, String)> = entries
        .iter()
        .map(|e| {
            let action = match &e.action {
                Action::Redirect(r) => format!("{} {}", r.code, r.prefix),
                Action::Fixed(c) => c.to_string(),
                Action::Forward { .. } => "forward".into(),
            };
            (e.owner.name.as_str(), e.host.as_deref(), action)
        })
        .collect();
    let want = [
        ("exact", Some("a.example.com"), "302 https://a.example.com".to_string()),
        ("other", Some("b.example.com"), "forward".into()),
        ("other", Some("*.wild.com"), "forward".into()),
        ("any", Some("198.51.100.7"), "302 https://198.51.100.7".into()),
        ("any", Some("a.example.com"), "302 https://a.example.com".into()),
        ("any", Some("b.example.com"), "302 https://b.example.com".into()),
        ("any", None, "500".into()),
    ];
    assert_eq!(seen, want);
    // Before the load balancer has an address, the names are the routes' and listeners'.
    let t = run("  - {name: http, port: 80, protocol: HTTP}", &routes, false);
    let entries = &t.router("infra", "gw").unwrap().listeners[0].entries;
    let any: Vec<_> = entries.iter().filter(|e| e.owner.name == "any").map(|e| e.host.as_deref()).collect();
    assert_eq!(any, [Some("a.example.com"), Some("b.example.com"), None]);
}

/// A ListenerSet's name in YAML: `name` in namespace `ns`, child of `infra/gw`, with `listeners`.
fn listener_set(ns: &str, name: &str, listeners: &str) -> String {
    format!(
        "---\nkind: ListenerSet\napiVersion: gateway.networking.k8s.io/v1\nmetadata: {{name: {name}, namespace: {ns}, generation: 1}}\nspec:\n  parentRef: {{kind: Gateway, group: gateway.networking.k8s.io, name: gw, namespace: infra}}\n  listeners:\n{listeners}\n"
    )
}

/// Issue 33: a redirect keeping the request's host on a ListenerSet's wildcard listener is
/// served for the exact hostnames of the routes attached only through that ListenerSet, as for
/// those of routes naming the Gateway (not the 500 of an unknown name); a ListenerSet the
/// Gateway does not admit adds no names (nor policies) to it.
#[test]
fn a_keep_host_redirect_on_a_listener_sets_wildcard_is_served_for_its_routes_hostnames() {
    let gw = gateway_yaml("  - {name: http, port: 80, protocol: HTTP, hostname: gw.example.org}")
        .replace("  listeners:\n", "  allowedListeners: {namespaces: {from: Same}}\n  listeners:\n");
    let wild = "  - {name: wild, port: 80, protocol: HTTP, hostname: '*.example.com'}";
    let via = |set: &str, ns: &str| {
        format!("  parentRefs: [{{kind: ListenerSet, group: gateway.networking.k8s.io, name: {set}, namespace: {ns}}}]")
    };
    let redirect = "  rules: [{filters: [{type: RequestRedirect, requestRedirect: {scheme: https}}]}]";
    let app = "  rules: [{matches: [{path: {type: PathPrefix, value: /app}}], backendRefs: [{name: web, port: 80}]}]";
    let yaml = format!(
        "{gw}---\n{SVC}{}{}{}{}{}",
        listener_set("infra", "extra", wild),
        listener_set("other", "stray", "  - {name: wild2, port: 80, protocol: HTTP, hostname: '*.example.net'}"),
        route("to-https", &format!("{}\n{redirect}", via("extra", "infra"))),
        route("app", &format!("{}\n  hostnames: [foo.example.com]\n{app}", via("extra", "infra"))),
        route("stray", &format!("{}\n  hostnames: [evil.example.com]\n{app}", via("stray", "other"))),
    );
    let p: Programmed = [(("infra".to_string(), "gw".to_string()), vec!["198.51.100.7".to_string()])].into();
    let t = translate(&world(&yaml), &p);
    let on = |route: &str, set: &str| {
        let c = t.route("infra", route).and_then(|r| r.condition_of("ListenerSet", set, "Accepted")).unwrap();
        (c.ok, c.reason.clone())
    };
    assert_eq!(on("to-https", "extra"), (true, "Accepted".to_string()));
    assert_eq!(on("app", "extra"), (true, "Accepted".to_string()));
    assert_eq!(on("stray", "stray"), (false, "NotAllowedByListeners".to_string()));
    let entries = &t.router("infra", "gw").unwrap().listeners[0].entries;
    let redirects: Vec<(Option<&str>, String)> = entries
        .iter()
        .filter(|e| e.owner.name == "to-https")
        .map(|e| {
            let action = match &e.action {
                Action::Redirect(r) => format!("{} {}", r.code, r.prefix),
                Action::Fixed(c) => c.to_string(),
                Action::Forward { .. } => "forward".into(),
            };
            (e.host.as_deref(), action)
        })
        .collect();
    assert_eq!(
        redirects,
        [
            (Some("foo.example.com"), "302 https://foo.example.com".to_string()),
            (Some("*.example.com"), "500".to_string()),
        ]
    );
}

#[test]
fn a_request_belongs_to_the_most_specific_listener_only() {
    let listeners = "  - {name: any, port: 80, protocol: HTTP}\n  - {name: wild, port: 80, protocol: HTTP, hostname: '*.example.com'}\n  - {name: exact, port: 80, protocol: HTTP, hostname: a.example.com}";
    let routes = route("r-any", &format!("  parentRefs: [{{name: gw, sectionName: any}}]\n{BACKEND}"))
        + &route("r-wild", &format!("  parentRefs: [{{name: gw, sectionName: wild}}]\n{BACKEND}"))
        + &route(
            "r-named",
            &format!("  parentRefs: [{{name: gw, sectionName: wild}}]\n  hostnames: [a.example.com]\n{BACKEND}"),
        );
    let t = run(listeners, &routes, true);
    let entries = &t.router("infra", "gw").unwrap().listeners[0].entries;
    let by = |n: &str| entries.iter().find(|e| e.owner.name == n).map(|e| e.excluded_hosts.clone());
    assert_eq!(by("r-any"), Some(vec!["*.example.com".to_string(), "a.example.com".to_string()]));
    assert_eq!(by("r-wild"), Some(vec!["a.example.com".to_string()]));
    assert_eq!(by("r-named"), None, "a.example.com belongs to listener `exact`: the entry is dropped");
    // Still attached to `wild` (the spec counts attachment, not reachability).
    assert_eq!(t.gateway("infra", "gw").unwrap().listener("wild").unwrap().attached_routes, 2);
}

#[test]
fn gateways_of_other_classes_and_their_routes_are_left_alone() {
    let other = "kind: Gateway\napiVersion: gateway.networking.k8s.io/v1\nmetadata: {name: theirs, namespace: infra}\nspec: {gatewayClassName: nginx, listeners: [{name: http, port: 80, protocol: HTTP}]}\n";
    let routes = format!("---\n{other}") + &route("r", &format!("  parentRefs: [{{name: theirs}}]\n{BACKEND}"));
    let t = run("  - {name: http, port: 80, protocol: HTTP}", &routes, true);
    assert!(t.gateway("infra", "theirs").is_none());
    assert!(t.route("infra", "r").is_none(), "no status written for another controller's parent");
}

#[test]
fn unsupported_address_type_is_not_accepted() {
    let w = world(
        &gateway_yaml("  - {name: http, port: 80, protocol: HTTP}")
            .replace("  listeners:\n", "  addresses: [{type: Hostname, value: lb.example.com}]\n  listeners:\n"),
    );
    let t = translate(&w, &Programmed::new());
    let c = t.gateway("infra", "gw").unwrap().condition("Accepted").unwrap().clone();
    assert_eq!((c.ok, c.reason.as_str()), (false, "UnsupportedAddress"));
    // Not accepted for its own spec: its router (and address) stays, with no route.
    let r = t.router("infra", "gw").expect("the router is kept");
    assert!(r.listeners.iter().all(|l| l.entries.is_empty()), "{r:?}");
    assert!(t.fates.suspended.contains(&r.router));
}

/// A class of ours that is not accepted (the operator's `parametersRef`): its Gateways are not
/// accepted and their routers are kept as they are, not suspended.
#[test]
fn an_unaccepted_class_keeps_its_gateways_routers_as_they_are() {
    let yaml = gateway_yaml("  - {name: http, port: 80, protocol: HTTP}").replace(
        "spec: {controllerName:",
        "spec: {parametersRef: {group: example.com, kind: P, name: p}, controllerName:",
    );
    let t = translate(&world(&yaml), &Programmed::new());
    let c = t.gateway("infra", "gw").unwrap().condition("Accepted").unwrap().clone();
    assert!(!c.ok, "{c:?}");
    assert!(t.router("infra", "gw").is_none());
    let lb = crate::gateway::naming::load_balancer_name("infra", "gw");
    assert!(t.fates.kept.contains_key(&lb) && t.fates.suspended.is_empty(), "{:?}", t.fates);
}

/// GatewayStaticAddresses, the upstream test's three states: an address of an unsupported type
/// is not accepted (above); two addresses are accepted but not programmed (`AddressNotUsable`:
/// one floating IP per load balancer), served on the first; an address the driver cannot use
/// (no such floating IP, or one on another port) is `AddressNotUsable`, any other failure
/// `NoResources`; one usable address is programmed with it.
#[test]
fn static_addresses_are_programmed_one_at_a_time_and_an_unusable_one_is_named() {
    let with = |addrs: &str| {
        world(
            &gateway_yaml("  - {name: http, port: 8080, protocol: HTTP}")
                .replace("  listeners:\n", &format!("  addresses: [{addrs}]\n  listeners:\n")),
        )
    };
    let key = ("infra".to_string(), "gw".to_string());
    let two = with("{value: 203.0.113.9}, {type: IPAddress, value: 203.0.113.7}");
    let p: Programmed = [(key.clone(), vec!["203.0.113.9".to_string()])].into();
    let t = translate(&two, &p);
    let g = t.gateway("infra", "gw").unwrap();
    assert_eq!(g.condition("Accepted").map(|c| c.ok), Some(true));
    let c = g.condition("Programmed").unwrap();
    assert_eq!((c.ok, c.reason.as_str()), (false, "AddressNotUsable"));
    assert!(c.message.contains("spec.addresses[1] (203.0.113.7)"), "{}", c.message);
    assert_eq!(t.router("infra", "gw").unwrap().address, "203.0.113.9".parse().ok(), "served on the first");

    let one = with("{value: 203.0.113.7}");
    let refused = "floating_ip: floating IP 203.0.113.7 ([neutron_defaults] l7_router_ip, or a Gateway's spec.addresses): no such floating IP in this project";
    let after = |failure: &str| {
        let f: RouterFailures = [(key.clone(), failure.to_string())].into();
        let t = translate_with_failures(&one, &Programmed::new(), &f);
        t.gateway("infra", "gw").and_then(|g| g.condition("Programmed")).cloned().unwrap()
    };
    let c = after(refused);
    assert_eq!((c.ok, c.reason.as_str()), (false, "AddressNotUsable"));
    assert!(
        c.message.starts_with("spec.addresses[0] cannot be used: floating_ip: floating IP 203.0.113.7"),
        "{}",
        c.message
    );
    assert_eq!(after("quota_exceeded: no more load balancers").reason, "NoResources");

    let p: Programmed = [(key, vec!["203.0.113.7".to_string()])].into();
    let t = translate(&one, &p);
    let g = t.gateway("infra", "gw").unwrap();
    assert_eq!(g.condition("Programmed").map(|c| (c.ok, c.reason.as_str())), Some((true, "Programmed")));
    assert_eq!(g.addresses.iter().map(|a| a.value.as_str()).collect::<Vec<_>>(), ["203.0.113.7"]);
}

/// GatewayAddressEmpty: an IPAddress entry without a value is accepted and asks for no static
/// floating IP (the router allocates one); a floating IP failure is then the load balancer's
/// (`NoResources`), not an unusable address of the Gateway's; served, the status has the address.
#[test]
fn an_address_without_a_value_is_allocated_not_static() {
    let w = world(
        &gateway_yaml("  - {name: http, port: 8080, protocol: HTTP}")
            .replace("  listeners:\n", "  addresses: [{type: IPAddress}]\n  listeners:\n"),
    );
    let key = ("infra".to_string(), "gw".to_string());
    let f: RouterFailures = [(key.clone(), "floating_ip: no free floating IP in the pool".to_string())].into();
    let t = translate_with_failures(&w, &Programmed::new(), &f);
    let g = t.gateway("infra", "gw").unwrap();
    assert_eq!(g.condition("Accepted").map(|c| c.ok), Some(true));
    assert_eq!(g.condition("Programmed").map(|c| c.reason.as_str()), Some("NoResources"));
    let p: Programmed = [(key, vec!["198.51.100.4".to_string()])].into();
    let t = translate(&w, &p);
    assert_eq!(t.router("infra", "gw").unwrap().address, None, "no static floating IP");
    let g = t.gateway("infra", "gw").unwrap();
    assert_eq!(g.condition("Programmed").map(|c| (c.ok, c.reason.as_str())), Some((true, "Programmed")));
    assert_eq!(g.addresses.iter().map(|a| a.value.as_str()).collect::<Vec<_>>(), ["198.51.100.4"]);
}

/// A route whose policy Octavia holds: the Gateway is not Programmed (NoResources for a quota),
/// nor is the listener the route is attached to; the route carries PartiallyInvalid (its rules
/// dropped) and stays Accepted. No hold: all Programmed again.
#[test]
fn a_held_route_object_is_told_on_the_gateway_its_listener_and_the_route() {
    use crate::gateway::holds::{RouterHold, RouterHolds};
    let routes = route("r", &format!("  parentRefs: [{{name: gw}}]\n{BACKEND}"));
    let w = world(&format!("{}---\n{SVC}{routes}", gateway_yaml("  - {name: http, port: 80, protocol: HTTP}")));
    let key = ("infra".to_string(), "gw".to_string());
    let p: Programmed = [(key.clone(), vec!["198.51.100.7".to_string()])].into();
    let hold = RouterHold {
        https: false,
        object: "L7 policy infra.r".into(),
        reason: "quota".into(),
        message: "Quota has been met for resources: L7Policy".into(),
        routes: vec![KubeRef::new("HTTPRoute", "infra", "r")],
    };
    let holds: RouterHolds = [(key, vec![hold])].into();
    let t = translate_observed(&w, &p, &RouterFailures::new(), &holds, &mut UnservableRules::default());
    let g = t.gateway("infra", "gw").unwrap();
    let c = g.condition("Programmed").unwrap();
    assert_eq!((c.ok, c.reason.as_str()), (false, "NoResources"));
    assert!(c.message.contains("Quota has been met"), "{}", c.message);
    assert_eq!(g.listener("http").unwrap().condition("Programmed").map(|c| c.ok), Some(false));
    let r = t.route("infra", "r").unwrap();
    assert_eq!(r.condition("gw", "Accepted").map(|c| c.ok), Some(true));
    let dropped = r.condition("gw", "PartiallyInvalid").expect("PartiallyInvalid");
    assert_eq!((dropped.ok, dropped.reason.as_str()), (true, "UnsupportedValue"));
    let clear =
        translate_observed(&w, &p, &RouterFailures::new(), &RouterHolds::new(), &mut UnservableRules::default());
    assert_eq!(clear.gateway("infra", "gw").unwrap().condition("Programmed").map(|c| c.ok), Some(true));
    assert!(clear.route("infra", "r").unwrap().condition("gw", "PartiallyInvalid").is_none());
}

/// Gateway `infra/gw` (HTTP on 80): `apps` forwards `/app` on `hosts` exact names, and
/// `to-https` redirects any host to `https://secure.example.org`: behind `hosts` exact hosts'
/// routes, the redirect needs `hosts + 1` policies.
fn budget_world(hosts: usize) -> World {
    let names: Vec<String> = (0..hosts).map(|i| format!("h{i}.org")).collect();
    let routes = route(
        "apps",
        &format!(
            "  parentRefs: [{{name: gw}}]\n  hostnames: [{}]\n  rules: [{{matches: [{{path: {{type: PathPrefix, value: /app}}}}], backendRefs: [{{name: web, port: 80}}]}}]",
            names.join(", ")
        ),
    ) + &route(
        "to-https",
        "  parentRefs: [{name: gw}]\n  rules: [{filters: [{type: RequestRedirect, requestRedirect: {scheme: https, hostname: secure.example.org}}]}]",
    );
    world(&format!("{}---\n{SVC}{routes}", gateway_yaml("  - {name: http, port: 80, protocol: HTTP}")))
}

fn programmed_gw() -> Programmed {
    [(("infra".to_string(), "gw".to_string()), vec!["198.51.100.7".to_string()])].into()
}

/// Issue 33: a redirect that would need more policies than its budget to stay behind the routes
/// before it (haproxy runs redirects first, `super::redirect_order`) is not served, and its
/// route says so: `PartiallyInvalid` naming the rule and the budget, still `Accepted`. One
/// host fewer fits: no such condition.
#[test]
fn a_redirect_over_its_budget_is_a_dropped_rule_of_its_route() {
    let run_with = |hosts: usize| translate(&budget_world(hosts), &programmed_gw());
    let over = super::super::redirect_order::MAX_REDIRECT_POLICIES;
    let t = run_with(over);
    assert!(accepted(&t, "to-https").0, "still accepted: a rule dropped, not the route");
    let c = t.route("infra", "to-https").and_then(|r| r.condition("gw", "PartiallyInvalid")).expect("PartiallyInvalid");
    assert_eq!((c.ok, c.reason.as_str()), (true, "UnsupportedValue"));
    assert!(
        c.message.starts_with(
            "Dropped Rule(s): HTTPRoute infra/to-https: (any host) PathPrefix / (spec.rules[0]) is not served"
        ),
        "{}",
        c.message
    );
    assert!(c.message.contains(&format!("more than {over} policies")), "{}", c.message);
    assert!(t.route("infra", "apps").and_then(|r| r.condition("gw", "PartiallyInvalid")).is_none());
    let t = run_with(over - 1);
    assert!(t.route("infra", "to-https").and_then(|r| r.condition("gw", "PartiallyInvalid")).is_none());
}

/// The rules left out are kept from pass to pass (`UnservableRules`, as the Gateway loop keeps
/// them) and asked again where a table changed: through one memo, the redirect over its budget,
/// within it, over again, each pass gives its own world's answer (the same as a first pass);
/// a Gateway gone is forgotten.
#[test]
fn the_rules_left_out_kept_between_passes_follow_each_table_change() {
    let over = super::super::redirect_order::MAX_REDIRECT_POLICIES;
    let dropped =
        |t: &Translation| t.route("infra", "to-https").and_then(|r| r.condition("gw", "PartiallyInvalid")).cloned();
    let mut kept = UnservableRules::default();
    for hosts in [over, over, over - 1, over - 1, over] {
        let w = budget_world(hosts);
        let t = translate_reusing(&w, &programmed_gw(), &mut kept);
        assert_eq!(dropped(&t), dropped(&translate(&w, &programmed_gw())), "{hosts} hosts");
        assert_eq!(dropped(&t).is_some(), hosts == over, "{hosts} hosts");
    }
    assert_eq!(kept.routers(), [crate::gateway::naming::load_balancer_name("infra", "gw")]);
    translate_reusing(&World::default(), &programmed_gw(), &mut kept);
    assert!(kept.routers().is_empty(), "the Gateway gone, its answer is forgotten");
}
