use super::*;
use crate::gateway::world::world;

fn route(rules: &str) -> HTTPRoute {
    let w = world(&format!(
        "kind: HTTPRoute\napiVersion: gateway.networking.k8s.io/v1\nmetadata: {{name: r, namespace: ns}}\nspec:\n  rules:\n{rules}\n"
    ));
    (*w.routes[0]).clone()
}

#[test]
fn each_unserved_field_refuses_the_route_naming_the_field() {
    let cases = [
        ("  - matches: [{method: GET}]", "spec.rules[0].matches[0].method"),
        (
            "  - matches: [{path: {value: /}}, {queryParams: [{name: a, value: b}]}]",
            "spec.rules[0].matches[1].queryParams",
        ),
        (
            "  - filters: [{type: RequestHeaderModifier, requestHeaderModifier: {add: [{name: a, value: b}]}}]",
            "spec.rules[0].filters[0].type: RequestHeaderModifier",
        ),
        ("  - filters: [{type: ResponseHeaderModifier}]", "ResponseHeaderModifier"),
        ("  - filters: [{type: URLRewrite}]", "URLRewrite"),
        ("  - {}\n  - filters: [{type: RequestMirror}]", "spec.rules[1].filters[0].type: RequestMirror"),
        (
            "  - filters: [{type: RequestRedirect, requestRedirect: {path: {type: ReplaceFullPath, replaceFullPath: /x}}}]",
            "requestRedirect.path",
        ),
        (
            "  - backendRefs: [{name: s, port: 80, filters: [{type: RequestHeaderModifier}]}]",
            "spec.rules[0].backendRefs[0].filters",
        ),
        ("  - timeouts: {request: 10s}", "spec.rules[0].timeouts"),
        ("  - timeouts: {backendRequest: 2s}", "spec.rules[0].timeouts"),
        (
            "  - filters: [{type: CORS, cors: {allowOrigins: ['https://app.example.com']}}]",
            "spec.rules[0].filters[0].type: CORS",
        ),
        (
            "  - filters: [{type: URLRewrite, urlRewrite: {path: {type: ReplacePrefixMatch, replacePrefixMatch: /v2}}}]",
            "spec.rules[0].filters[0].type: URLRewrite",
        ),
        ("  - filters: [{type: URLRewrite, urlRewrite: {hostname: b.example.com}}]", "URLRewrite"),
    ];
    for (rules, field) in cases {
        let msg = unsupported(&route(rules)).unwrap_or_else(|| panic!("{rules}: accepted"));
        assert!(msg.contains(field), "{rules}: {msg}");
    }
}

/// HTTPRouteNamedRouteRule: a refusal about a named rule names it, an unnamed one's does not.
#[test]
fn a_refusal_names_the_rule_by_its_name() {
    let named = unsupported(&route("  - {}\n  - name: checkout\n    matches: [{method: POST}]")).unwrap();
    assert!(named.starts_with("spec.rules[1].matches[0].method"), "{named}");
    assert!(named.ends_with(" (rule checkout)"), "{named}");
    let unnamed = unsupported(&route("  - matches: [{method: POST}]")).unwrap();
    assert!(!unnamed.contains("(rule"), "{unnamed}");
}

#[test]
fn served_fields_pass() {
    let r = route(
        "  - matches: [{path: {type: RegularExpression, value: '/v[0-9]+'}, headers: [{type: RegularExpression, name: X, value: 'a.*'}]}]\n  - filters: [{type: RequestRedirect, requestRedirect: {hostname: example.org, statusCode: 308}}]",
    );
    assert_eq!(unsupported(&r), None);
}

#[test]
fn matches_or_within_a_rule_conditions_and_within_a_match() {
    let r = route(
        "  - matches:\n    - path: {type: Exact, value: /a}\n      headers: [{name: Version, value: two}, {name: Color, value: red}, {name: version, value: ignored}]\n    - path: {type: PathPrefix, value: /b/}\n    - headers: [{name: x, value: 'y'}]",
    );
    let m = rule_matches(&r.spec.rules[0]);
    assert_eq!(m.len(), 3);
    assert_eq!(m[0].path, PathMatch::Exact("/a".into()));
    let exact = |n: &str, v: &str| HeaderMatch::Exact { name: n.into(), value: v.into() };
    assert_eq!(
        m[0].headers,
        vec![exact("color", "red"), exact("version", "two")],
        "lower-cased, first of a repeated name wins"
    );
    assert_eq!(m[1].path, PathMatch::Prefix("/b".into()), "trailing slash ignored");
    assert_eq!(m[2].path, PathMatch::Prefix("/".into()), "no path: prefix /");
    assert_eq!(rule_matches(&route("  - {}").spec.rules[0])[0].path, PathMatch::Prefix("/".into()));
}

#[test]
fn prefix_matches_whole_segments() {
    let p = PathMatch::Prefix("/foo".into());
    assert_eq!(p.matches("/foo"), Some(true));
    assert_eq!(p.matches("/foo/"), Some(true));
    assert_eq!(p.matches("/foo/bar"), Some(true));
    assert_eq!(p.matches("/foobar"), Some(false));
    assert_eq!(PathMatch::Prefix("/".into()).matches("/anything"), Some(true));
    assert_eq!(PathMatch::Exact("/foo".into()).matches("/foo/"), Some(false));
}
