use super::*;
use crate::model::{PolicyRedirect, RedirectTarget};
use crate::translate::claim::{FixedAnswer, OrderKey, RouteAction, RouteOwner};
use proptest::prelude::*;

/// One route of a listener: its host (empty: any), path, headers, whether it redirects, and the
/// hosts it must not catch (listener isolation).
#[derive(Clone, Debug)]
struct Route {
    host: &'static str,
    path: PathMatch,
    headers: Vec<HeaderMatch>,
    redirect: bool,
    excluded: Vec<String>,
}

fn route(host: &'static str, path: PathMatch, redirect: bool) -> Route {
    Route { host, path, headers: Vec::new(), redirect, excluded: Vec::new() }
}

fn prefix(p: &str) -> PathMatch {
    PathMatch::Prefix(p.into())
}

fn canary(value: &str) -> HeaderMatch {
    HeaderMatch { name: "X-Env".into(), kind: HeaderMatchKind::Exact, value: value.into() }
}

fn claim_of(i: usize, r: &Route) -> RouteClaim {
    let action = if r.redirect {
        RouteAction::Fixed(FixedAnswer::ServerError) // unused: the policy says it redirects
    } else {
        RouteAction::Fixed(FixedAnswer::Unavailable)
    };
    RouteClaim {
        host: r.host.into(),
        path: r.path.clone(),
        path_type: "PathPrefix".into(),
        path_as_written: "/".into(),
        headers: r.headers.clone(),
        action,
        order: OrderKey::default(),
        owner: RouteOwner { object: KubeRef::new("HTTPRoute", "ns", &format!("r{i}")), uid: None },
        origin: format!("spec.rules[{i}]").into(),
        fallback: false,
    }
}

fn policy_of(i: usize, c: &RouteClaim, r: &Route) -> Policy {
    let redirect =
        r.redirect.then(|| PolicyRedirect { target: RedirectTarget::Prefix(format!("https://to-r{i}")), code: 302 });
    Policy {
        name: format!("r{i}"),
        position: 0,
        pool: if r.redirect { String::new() } else { format!("pool-r{i}") },
        rules: ClaimRules::of(c, &r.excluded).into_rules(),
        owner: c.owner_ref().clone(),
        description: c.describe(),
        redirect,
    }
}

/// The listener's policies as the router writes them, and its warnings.
fn listener(routes: &[Route]) -> (Vec<Policy>, Vec<Policy>, Vec<Warning>) {
    let claims: Vec<RouteClaim> = routes.iter().enumerate().map(|(i, r)| claim_of(i, r)).collect();
    let before: Vec<Policy> = claims.iter().zip(routes).enumerate().map(|(i, (c, r))| policy_of(i, c, r)).collect();
    let listed = claims
        .iter()
        .zip(routes)
        .zip(&before)
        .map(|((c, r), p)| Routed { claim: c, excluded: &r.excluded, policy: p.clone() })
        .collect();
    let mut warnings = Vec::new();
    let after = redirects_after_routes(listed, &mut warnings);
    (before, after, warnings)
}

/// A request: Host header, path, X-Env header.
type Request<'a> = (&'a str, &'a str, Option<&'a str>);

fn rule_matches(r: &Rule, (host, path, env): Request<'_>) -> bool {
    let subject = match r.rule_type {
        RuleType::HostName => Some(host.to_ascii_lowercase()),
        RuleType::Path => Some(path.to_string()),
        RuleType::Header if r.key.as_deref().is_some_and(|k| k.eq_ignore_ascii_case("x-env")) => env.map(String::from),
        _ => None,
    };
    // haproxy: a fetch of an absent header matches no value.
    let hit = subject.is_some_and(|s| match r.compare_type {
        CompareType::Regex => regex_matches(&r.value, r.rule_type == RuleType::HostName, &s),
        CompareType::EqualTo => s == r.value,
        CompareType::StartsWith => s.starts_with(&r.value),
        CompareType::EndsWith => s.ends_with(&r.value),
        CompareType::Contains => s.contains(&r.value),
    });
    hit != r.invert
}

thread_local! {
    /// Compiled rule values: the property test evaluates the same few rules many times.
    static REGEXES: std::cell::RefCell<std::collections::HashMap<(String, bool), regex::Regex>> = Default::default();
}

fn regex_matches(value: &str, case_insensitive: bool, subject: &str) -> bool {
    REGEXES.with(|cache| {
        let mut cache = cache.borrow_mut();
        let re = cache
            .entry((value.to_string(), case_insensitive))
            .or_insert_with(|| regex::RegexBuilder::new(value).case_insensitive(case_insensitive).build().unwrap());
        re.is_match(subject)
    })
}

fn policy_matches(p: &Policy, q: Request<'_>) -> bool {
    !p.rules.is_empty() && p.rules.iter().all(|r| rule_matches(r, q))
}

/// What the spec (and the positions) say: the first policy that matches, by its route.
fn by_position(policies: &[Policy], q: Request<'_>) -> Option<KubeRef> {
    policies.iter().find(|p| policy_matches(p, q)).map(|p| p.owner.clone())
}

/// What haproxy does with Octavia's rendering: every redirect first, then the `use_backend`s.
fn by_haproxy(policies: &[Policy], q: Request<'_>) -> Option<KubeRef> {
    let first =
        |redirects: bool| policies.iter().filter(|p| p.redirect.is_some() == redirects).find(|p| policy_matches(p, q));
    first(true).or_else(|| first(false)).map(|p| p.owner.clone())
}

const HOSTS: &[&str] = &["foo.example.com", "FOO.example.com:8080", "bar.example.com", "a.b.example.com", "other.org"];
const PATHS: &[&str] = &["/", "/app", "/app/x", "/apple", "/api", "/login"];
const ENVS: &[Option<&str>] = &[None, Some("canary"), Some("stable")];

/// Every request of the grid gets on haproxy what the positions of `before` say.
fn assert_served_in_order(before: &[Policy], after: &[Policy]) {
    for host in HOSTS {
        for path in PATHS {
            for env in ENVS {
                let q = (*host, *path, *env);
                assert_eq!(
                    by_haproxy(after, q),
                    by_position(before, q),
                    "{q:?}\nbefore: {before:#?}\nafter: {after:#?}"
                );
            }
        }
    }
}

fn r(i: usize) -> KubeRef {
    KubeRef::new("HTTPRoute", "ns", &format!("r{i}"))
}

#[test]
fn a_redirect_that_overlaps_no_earlier_route_is_unchanged() {
    // Another exact host before it, and a route of its own host after it.
    let routes = [
        route("bar.example.com", prefix("/app"), false),
        route("foo.example.com", prefix("/"), true),
        route("foo.example.com", prefix("/app"), false),
    ];
    let (before, after, warnings) = listener(&routes);
    assert_eq!(after, before);
    assert_eq!(warnings, []);
    // Before the fix too, haproxy served these in order: the later route is the spec's loser.
    assert_served_in_order(&before, &after);
}

#[test]
fn a_redirect_of_the_same_host_leaves_the_longer_prefix_to_its_route() {
    // The own case: `foo.example.com/app` forwards, the rest of `foo.example.com` redirects.
    let routes = [route("foo.example.com", prefix("/app"), false), route("foo.example.com", prefix("/"), true)];
    let (before, after, warnings) = listener(&routes);
    assert_eq!(warnings, []);
    assert_eq!(by_haproxy(&before, ("foo.example.com", "/app", None)), Some(r(1)), "the defect, as it was");
    assert_eq!(after.len(), 2);
    let redirect = &after[1];
    assert_eq!(redirect.name, "r1", "one policy keeps the redirect's name");
    let path_app = before[0].rules[1].clone();
    assert_eq!(redirect.rules, [before[1].rules[0].clone(), Rule { invert: true, ..path_app }]);
    assert_served_in_order(&before, &after);
}

#[test]
fn a_wildcard_redirect_is_split_by_the_exact_hosts_of_the_routes_before_it() {
    let routes = [route("foo.example.com", prefix("/app"), false), route("*.example.com", prefix("/"), true)];
    let (before, after, warnings) = listener(&routes);
    assert_eq!(warnings, []);
    let rules: Vec<Vec<(&str, bool)>> =
        after[1..].iter().map(|p| p.rules.iter().map(|x| (x.value.as_str(), x.invert)).collect()).collect();
    assert_eq!(
        rules,
        [
            // foo.example.com, not /app
            vec![("^foo\\.example\\.com(:[0-9]+)?$", false), ("^/app(/.*)?$", true)],
            // any other name of the wildcard
            vec![("^[^:]+\\.example\\.com(:[0-9]+)?$", false), ("^(foo\\.example\\.com)(:[0-9]+)?$", true)],
        ]
    );
    assert_eq!(after.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(), ["r0", "r1", "r1#2"]);
    assert!(after[1..].iter().all(|p| p.redirect == before[1].redirect && p.owner == before[1].owner));
    assert_served_in_order(&before, &after);
}

#[test]
fn two_routes_before_a_redirect_each_keep_their_requests() {
    // Same host: one policy missing both paths.
    let same = [
        route("foo.example.com", prefix("/app"), false),
        route("foo.example.com", PathMatch::Exact("/login".into()), false),
        route("foo.example.com", prefix("/"), true),
    ];
    let (before, after, warnings) = listener(&same);
    assert_eq!((after.len(), warnings.len()), (3, 0));
    assert_eq!(after[2].rules.iter().filter(|x| x.invert).count(), 2, "{:?}", after[2].rules);
    assert_served_in_order(&before, &after);
    // Two hosts behind a wildcard redirect: one policy per host and one for the others (n + 1).
    let two_hosts = [
        route("foo.example.com", prefix("/app"), false),
        route("bar.example.com", prefix("/api"), false),
        route("*.example.com", prefix("/"), true),
    ];
    let (before, after, warnings) = listener(&two_hosts);
    assert_eq!((after.len(), warnings.len()), (5, 0), "{after:#?}");
    assert_served_in_order(&before, &after);
    // A header route and an any-host route before an any-host redirect: the alternatives.
    let mut header = route("foo.example.com", prefix("/"), false);
    header.headers = vec![canary("canary")];
    let mixed = [header, route("", prefix("/api"), false), route("", prefix("/"), true)];
    let (before, after, warnings) = listener(&mixed);
    assert_eq!(warnings, []);
    assert_served_in_order(&before, &after);
}

#[test]
fn a_redirect_wholly_behind_a_route_gets_no_policy() {
    let routes = [route("*.example.com", prefix("/"), false), route("foo.example.com", prefix("/app"), true)];
    let (before, after, warnings) = listener(&routes);
    assert_eq!((after.len(), warnings.len()), (1, 0), "{after:#?}");
    assert_served_in_order(&before, &after);
}

#[test]
fn listener_isolation_is_no_overlap() {
    // The any-host listener's route does not catch the wildcard listener's names: no split.
    let mut hostless = route("", prefix("/app"), false);
    hostless.excluded = vec!["*.example.com".into()];
    let routes = [hostless, route("foo.example.com", prefix("/"), true)];
    let (before, after, warnings) = listener(&routes);
    assert_eq!((after, warnings), (before, vec![]));
}

#[test]
fn a_redirect_over_the_budget_is_not_served_and_named() {
    // More exact hosts before an any-host redirect than the policies it may become.
    const NAMES: [&str; MAX_REDIRECT_POLICIES] = [
        "h0.org", "h1.org", "h2.org", "h3.org", "h4.org", "h5.org", "h6.org", "h7.org", "h8.org", "h9.org", "h10.org",
        "h11.org", "h12.org", "h13.org", "h14.org", "h15.org",
    ];
    let mut routes: Vec<Route> = NAMES.iter().map(|h| route(h, prefix("/app"), false)).collect();
    routes.push(route("", prefix("/"), true));
    let (_, after, warnings) = listener(&routes);
    assert_eq!(after.len(), MAX_REDIRECT_POLICIES, "the routes, without the redirect");
    assert!(after.iter().all(|p| p.redirect.is_none()));
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!((&warnings[0].object, warnings[0].reason), (&r(16), Reason::InvalidRule));
    let m = &warnings[0].message;
    assert!(m.starts_with("HTTPRoute ns/r16: (any host) PathPrefix / (spec.rules[16]) is not served"), "{m}");
    assert!(m.contains(&format!("more than {MAX_REDIRECT_POLICIES} policies")), "{m}");
    // One host fewer: within the budget (15 hosts + the others), served in order.
    let (before, after, warnings) = listener(&routes[1..]);
    assert_eq!((after.len(), warnings.len()), (15 + 16, 0));
    assert_served_in_order(&before, &after);
    // Rules: one policy escaping 50 paths of its own host is 51 rules.
    let mut routes: Vec<Route> =
        (0..MAX_RULES).map(|i| route("foo.example.com", PathMatch::Exact(format!("/p{i}")), false)).collect();
    routes.push(route("foo.example.com", prefix("/"), true));
    let (_, after, warnings) = listener(&routes);
    assert_eq!(after.len(), MAX_RULES);
    assert!(warnings[0].message.contains("a policy of 51 rules, Octavia allows 50"), "{:?}", warnings);
}

fn any_route() -> impl Strategy<Value = Route> {
    let hosts =
        prop::sample::select(vec!["foo.example.com", "bar.example.com", "*.example.com", "*.b.example.com", ""]);
    let paths = prop::sample::select(vec![
        prefix("/"),
        prefix("/app"),
        PathMatch::Exact("/app/x".into()),
        PathMatch::Exact("/login".into()),
        PathMatch::Regex("^(?:/ap.*)".into()),
    ]);
    let headers = prop::sample::select(vec![None, Some("canary"), Some("stable")]);
    let excluded = prop::sample::select(vec![None, Some("*.b.example.com"), Some("foo.example.com")]);
    (hosts, paths, headers, any::<bool>(), excluded).prop_map(|(host, path, env, redirect, excluded)| Route {
        host,
        path,
        headers: env.map(canary).into_iter().collect(),
        redirect,
        excluded: excluded.filter(|e| *e != host).map(String::from).into_iter().collect(),
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    /// Whatever the listener's policies (in whatever order), haproxy serves each request as the
    /// first policy by position does, unless a redirect was refused for its budget.
    #[test]
    fn haproxy_serves_every_request_as_the_positions_say(routes in prop::collection::vec(any_route(), 1..7)) {
        let (before, after, warnings) = listener(&routes);
        prop_assume!(warnings.is_empty());
        assert_served_in_order(&before, &after);
    }
}
