//! The route table: one for every route kind. It claims (the first claim of a match wins, the
//! losers are told who holds it), orders (host precedence, then the front end's order key) and
//! turns the routes into Octavia policies, with the guards and exclusions that keep a host's
//! unmatched requests from reaching another host's routes.

use std::collections::BTreeMap;

use super::backends::{Feed, FeedView, feed_view, name_of_view};
use super::claim::{FixedAnswer, RedirectSpec, RouteAction, RouteClaim};
#[cfg(test)]
use super::claim::{HeaderMatch, PathMatch};
use super::hosts::{HostKind, wildcard_covers};
use super::names::{bounded, guard_name, policy_name};
use super::rules::{MAX_RULES, exclusion_rules, header_rule, host_pattern, host_rule, path_match_rule};
use crate::model::{
    KubeRef, Policy, PolicyRedirect, RedirectTarget, Rule, SERVER_ERROR_POOL, UNAVAILABLE_POOL, Warning,
};
use crate::reason::Reason;

fn warn(out: &mut Vec<Warning>, object: &KubeRef, reason: Reason, message: String) {
    out.push(Warning { object: object.clone(), reason, message });
}

/// The claimed routes, in the order of what they match.
#[derive(Default)]
pub(crate) struct RouteTable {
    claimed: Vec<RouteClaim>,
}

/// The order of what two routes match (host, path, headers): equal when they compete.
fn match_order(a: &RouteClaim, b: &RouteClaim) -> std::cmp::Ordering {
    (&a.host, &a.path, &a.headers).cmp(&(&b.host, &b.path, &b.headers))
}

impl RouteTable {
    /// Claims in the order given (front ends list the oldest object first): the first claim of
    /// each match wins. The claims are sorted by match once (a stable sort keeps the first
    /// claimed first among equals) instead of a map keyed by a copy of every match; the losers'
    /// warnings come in the order of the claims, as when they were claimed one by one.
    pub(crate) fn claim_all(claims: impl IntoIterator<Item = RouteClaim>, warnings: &mut Vec<Warning>) -> Self {
        let claims: Vec<RouteClaim> = claims.into_iter().collect();
        let mut by_match: Vec<usize> = (0..claims.len()).collect();
        by_match.sort_by(|&a, &b| match_order(&claims[a], &claims[b]));
        let mut winners = Vec::new();
        // (loser, winner), by claim.
        let mut lost: Vec<(usize, usize)> = Vec::new();
        for same in by_match.chunk_by(|&a, &b| match_order(&claims[a], &claims[b]).is_eq()) {
            winners.push(same[0]);
            lost.extend(same[1..].iter().map(|&l| (l, same[0])));
        }
        lost.sort_unstable();
        for (l, w) in lost {
            lost_claim(&claims[l], &claims[w], warnings);
        }
        let mut claims: Vec<Option<RouteClaim>> = claims.into_iter().map(Some).collect();
        RouteTable { claimed: winners.into_iter().filter_map(|w| claims[w].take()).collect() }
    }

    /// The winning routes.
    pub fn routes(self) -> Vec<RouteClaim> {
        self.claimed
    }
}

/// The warning of a route whose match an older route holds. A fallback never displaces a
/// route, and is silent when its own object routes that match itself.
fn lost_claim(route: &RouteClaim, w: &RouteClaim, warnings: &mut Vec<Warning>) {
    let owner = route.owner_ref();
    if !route.fallback {
        let msg = format!(
            "{owner}: {} ignored: {} is already routed by {} (older, or listed first)",
            route.origin(),
            route.describe(),
            w.owner_ref()
        );
        warn(warnings, owner, Reason::DuplicateRoute, msg);
    } else if w.owner_ref() != owner {
        let msg = format!(
            "{owner}: {} does not catch the unmatched paths of host {}: {} of {} already does",
            route.origin(),
            route.host,
            w.describe(),
            w.owner_ref()
        );
        warn(warnings, owner, Reason::ConflictingDefaultBackend, msg);
    }
}

/// Where the requests that a host's routes do not match may go.
pub(crate) struct Stops<'a> {
    /// The listeners' default pool: the router-wide default backend, else the 404 pool, if any.
    pub default_pool: Option<&'a str>,
    /// The pool of a host's guard policy: the 404 pool (status responder), else, while a
    /// router-wide default backend exists, the empty 503 pool; `None`: exclusion rules instead.
    pub(crate) guard_pool: Option<&'a str>,
    /// A router-wide default backend exists: every named host needs a stop.
    pub(crate) router_default: bool,
}

/// The pool names a listener's policies refer to, by what fills the pool.
pub(crate) type PoolNames = BTreeMap<Feed, String>;

fn precedence(a: &RouteClaim, b: &RouteClaim) -> std::cmp::Ordering {
    (HostKind::of(&a.host), &a.host, &a.order, &a.path, &a.headers).cmp(&(
        HostKind::of(&b.host),
        &b.host,
        &b.order,
        &b.path,
        &b.headers,
    ))
}

/// Per host of `routes` (sorted by [`precedence`], so a host's routes are neighbours): does it
/// have a catch-all (matches every path, no header), and which owner speaks for it (the
/// smallest owner of its routes)?
fn host_summary(routes: &[RouteClaim]) -> BTreeMap<&str, (bool, &KubeRef)> {
    routes
        .chunk_by(|a, b| a.host == b.host)
        .map(|same| {
            let catch_all = same.iter().any(|r| r.path.is_everything() && r.headers.is_empty());
            let owner = same.iter().map(RouteClaim::owner_ref).min().unwrap_or(same[0].owner_ref());
            (same[0].host.as_str(), (catch_all, owner))
        })
        .collect()
}

/// The hosts whose unmatched requests could fall through to a later host's routes (a wildcard
/// covering them, a host-less route, the router-wide default) and that have no catch-all.
fn leaky_hosts<'a>(hosts: &BTreeMap<&'a str, (bool, &KubeRef)>, stops: &Stops<'_>) -> Vec<&'a str> {
    let any_hostless = hosts.contains_key("");
    let wildcards: Vec<&str> = hosts.keys().copied().filter(|h| HostKind::of(h) == HostKind::Wildcard).collect();
    let needs_stop = |h: &str| -> bool {
        match HostKind::of(h) {
            HostKind::Exact => stops.router_default || any_hostless || wildcards.iter().any(|w| wildcard_covers(w, h)),
            HostKind::Wildcard => stops.router_default || any_hostless,
            HostKind::Any => false,
        }
    };
    hosts.iter().filter(|(h, (catch_all, _))| !catch_all && needs_stop(h)).map(|(h, _)| *h).collect()
}

/// The host patterns the routes of `host` must exclude: only when there is no default pool to
/// guard with, a wildcard excludes the leaky exact hosts it covers and host-less routes every
/// leaky host.
fn exclusions(host: &str, leaky: &[&str], stops: &Stops<'_>) -> Vec<String> {
    if stops.default_pool.is_some() {
        return Vec::new();
    }
    match HostKind::of(host) {
        HostKind::Exact => Vec::new(),
        HostKind::Wildcard => leaky
            .iter()
            .filter(|h| HostKind::of(h) == HostKind::Exact && wildcard_covers(host, h))
            .map(|h| host_pattern(h))
            .collect(),
        HostKind::Any => leaky.iter().map(|h| host_pattern(h)).collect(),
    }
}

/// Order routes and turn them into policies.
///
/// Groups: exact hosts, then wildcard hosts, then no host (each sorted by host name for
/// determinism); within a host, the front end's order key. Kubernetes picks the host before the
/// path, so a host whose own routes do not match must not fall through to a wildcard or
/// host-less route: a guard policy sends it to the no-route answer, or (no default pool) later
/// policies exclude it with inverted host rules. Nor may it fall into the router-wide default
/// backend (another tenant's catch-all): with one, every named host without a catch-all of its
/// own gets a guard.
pub(crate) fn order_policies(
    mut routes: Vec<RouteClaim>,
    names: &PoolNames,
    stops: &Stops<'_>,
    warnings: &mut Vec<Warning>,
) -> Vec<Policy> {
    routes.sort_by(precedence);
    // Owned: the routes' owners move into their policies below, while these are still needed.
    let (leaky, guards): (Vec<String>, BTreeMap<String, KubeRef>) = {
        let hosts = host_summary(&routes);
        let leaky = leaky_hosts(&hosts, stops);
        let guards = match stops.guard_pool {
            Some(_) => leaky.iter().map(|h| (h.to_string(), hosts[h].1.clone())).collect(),
            None => BTreeMap::new(),
        };
        (leaky.iter().map(|h| h.to_string()).collect(), guards)
    };
    let leaky: Vec<&str> = leaky.iter().map(String::as_str).collect();
    let mut policies = Vec::with_capacity(routes.len() + guards.len());
    for group in routes.chunk_by_mut(|a, b| a.host == b.host) {
        let first = policies.len();
        let host = group[0].host.as_str();
        let excluded = exclusions(host, &leaky, stops);
        let excl_rules = exclusion_rules(&excluded);
        // One host rule per host, copied into each of its policies.
        let host_match = (!host.is_empty()).then(|| host_rule(host));
        policies.extend(
            group.iter().map(|r| route_policy(r, host_match.as_ref(), names, &excluded, &excl_rules, warnings)),
        );
        if let (Some(gp), Some(owner)) = (stops.guard_pool, guards.get(host)) {
            policies.push(guard_policy(host, gp, owner.clone()));
        }
        // The routes are done with: each owner moves into its policy (the guard comes last).
        for (p, r) in policies[first..].iter_mut().zip(group.iter_mut()) {
            p.owner = std::mem::replace(&mut r.owner.object, KubeRef::new("", "", ""));
        }
    }
    number(&mut policies);
    policies
}

/// Positions 1..n in list order.
pub fn number(policies: &mut [Policy]) {
    for (n, p) in policies.iter_mut().enumerate() {
        p.position = n as u32 + 1;
    }
}

/// One guard policy (host rule only → `pool`) per named host of `routes`, exact hosts first,
/// owned by the smallest owner of the host's routes.
pub(crate) fn guard_policies(routes: &[RouteClaim], pool: &str) -> Vec<Policy> {
    let mut hosts: BTreeMap<(HostKind, &str), &KubeRef> = BTreeMap::new();
    for r in routes.iter().filter(|r| !r.host.is_empty()) {
        let e = hosts.entry((HostKind::of(&r.host), r.host.as_str())).or_insert(r.owner_ref());
        if r.owner_ref() < *e {
            *e = r.owner_ref();
        }
    }
    hosts.into_iter().map(|((_, host), owner)| guard_policy(host, pool, owner.clone())).collect()
}

fn guard_policy(host: &str, pool: &str, owner: KubeRef) -> Policy {
    Policy {
        name: guard_name(host),
        position: 0,
        pool: pool.to_string(),
        rules: vec![host_rule(host)],
        owner,
        description: format!("{host} guard: paths without a route get the no-route answer"),
        redirect: None,
    }
}

/// The policy name of a route: its owner, host and path; its headers, when it has any.
fn route_policy_name(r: &RouteClaim) -> String {
    let base = policy_name(r.owner_ref(), &r.host, &r.path_type, &r.path_as_written);
    if r.headers.is_empty() {
        return base;
    }
    let headers: Vec<String> = r.headers.iter().map(|h| format!("{}={}", h.name, h.value)).collect();
    bounded(format!("{base}:{}", headers.join(",")))
}

/// The rules of a route: host, path, headers (an empty list only for a host-less route of
/// every path with no header, which Octavia would skip: it gets `STARTS_WITH /`), then as many
/// of `exclusions` as Octavia's rule limit leaves room for; the vector at its exact size. The
/// host rule is made once for the host (`None`: no host).
/// Also how many of them are the route's own (not exclusions).
fn route_rules_with(r: &RouteClaim, host: Option<&Rule>, exclusions: &[Rule]) -> (Vec<Rule>, usize) {
    let path = path_match_rule(&r.path, host.is_some() || !r.headers.is_empty());
    let own = usize::from(host.is_some()) + usize::from(path.is_some()) + r.headers.len();
    let room = MAX_RULES.saturating_sub(own);
    let mut rules = Vec::with_capacity(own + exclusions.len().min(room));
    rules.extend(host.cloned());
    rules.extend(path);
    rules.extend(r.headers.iter().map(header_rule));
    rules.extend(exclusions.iter().take(room).cloned());
    (rules, own)
}

fn redirect_of(spec: &RedirectSpec) -> PolicyRedirect {
    let port = spec.port.map(|p| format!(":{p}")).unwrap_or_default();
    let prefix = format!("{}://{}{port}", spec.scheme, spec.host);
    let target = match &spec.path {
        None => RedirectTarget::Prefix(prefix),
        Some(path) => RedirectTarget::Url(format!("{prefix}{path}")),
    };
    PolicyRedirect { target, code: spec.code }
}

/// The policy of one route: its rules, then as many of the host exclusions as Octavia's rule
/// limit leaves room for (a warning names the route when some do not fit).
fn route_policy(
    r: &RouteClaim,
    host_rule: Option<&Rule>,
    names: &PoolNames,
    excluded: &[String],
    excl_rules: &[Rule],
    warnings: &mut Vec<Warning>,
) -> Policy {
    let (rules, own) = route_rules_with(r, host_rule, excl_rules);
    let room = MAX_RULES.saturating_sub(own);
    if excl_rules.len() > room {
        warn(
            warnings,
            r.owner_ref(),
            Reason::TooManyRules,
            format!(
                "{}: {}: {} host exclusions need {} rules, Octavia allows {MAX_RULES} per policy; some hosts' unmatched requests may reach this route (set a default backend to avoid this)",
                r.owner_ref(),
                r.describe(),
                excluded.len(),
                excl_rules.len() + own
            ),
        );
    }
    policy_owned_by(r, rules, names, KubeRef::new("", "", ""))
}

/// The policy of one route with the rules its front end computed: its name, and its pool or
/// redirect from the route's action. Position 0 (see [`number`]).
pub(crate) fn policy_with_rules(r: &RouteClaim, rules: Vec<Rule>, names: &PoolNames) -> Policy {
    policy_owned_by(r, rules, names, r.owner_ref().clone())
}

/// [`policy_with_rules`] with the owner given (the route's own, moved or copied).
fn policy_owned_by(r: &RouteClaim, mut rules: Vec<Rule>, names: &PoolNames, owner: KubeRef) -> Policy {
    // Pushed one by one: no spare slots kept in the desired router, held for the router's life.
    rules.shrink_to_fit();
    let (pool, redirect) = match &r.action {
        RouteAction::Forward(_) => (forward_pool(r, names), None),
        RouteAction::Fixed(FixedAnswer::Unavailable) => (UNAVAILABLE_POOL.to_string(), None),
        RouteAction::Fixed(FixedAnswer::ServerError) => (SERVER_ERROR_POOL.to_string(), None),
        RouteAction::Redirect(spec) => (String::new(), Some(redirect_of(spec))),
    };
    Policy { name: route_policy_name(r), position: 0, pool, rules, owner, description: r.describe(), redirect }
}

/// What fills a forwarding route's pool: its backend, or the weighted split over several.
/// `None`: no backend with weight, the route answers 503.
#[cfg(test)]
pub(crate) fn route_feed(action: &RouteAction) -> Option<Feed> {
    let RouteAction::Forward(backends) = action else { return None };
    super::backends::feed_of(backends)
}

/// What fills a forwarding route's pool, borrowed from the route when it is one Service port
/// (see [`feed_view`]).
pub(crate) fn route_feed_view(action: &RouteAction) -> FeedView<'_> {
    match action {
        RouteAction::Forward(backends) => feed_view(backends),
        _ => FeedView::None,
    }
}

fn forward_pool(r: &RouteClaim, names: &PoolNames) -> String {
    match route_feed_view(&r.action) {
        FeedView::None => UNAVAILABLE_POOL.to_string(),
        view => name_of_view(names, &view).expect("the backends phase names every route's feed").clone(),
    }
}

/// Does some route answer 500 through the reserved 500 pool?
pub(crate) fn needs_server_error_pool(routes: &[RouteClaim]) -> bool {
    routes.iter().any(|r| matches!(r.action, RouteAction::Fixed(FixedAnswer::ServerError)))
}

/// Does some route answer 503 through the reserved 503 pool?
pub(crate) fn needs_unavailable_pool(routes: &[RouteClaim]) -> bool {
    routes.iter().any(|r| match &r.action {
        RouteAction::Fixed(FixedAnswer::Unavailable) => true,
        RouteAction::Fixed(FixedAnswer::ServerError) => false,
        RouteAction::Forward(b) => b.iter().all(|b| b.weight == 0),
        RouteAction::Redirect(_) => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{CompareType, RuleType};
    use crate::translate::backends::PoolKey;
    use crate::translate::claim::{HeaderMatchKind, OrderKey, OrderPart, RouteOwner};

    fn owner(name: &str) -> RouteOwner {
        RouteOwner { object: KubeRef::new("HTTPRoute", "ns", name), uid: Some(format!("uid-{name}")) }
    }

    fn key(svc: &str) -> PoolKey {
        PoolKey { namespace: "ns".into(), service: svc.into(), port: 80 }
    }

    fn claim(host: &str, path: PathMatch, headers: Vec<HeaderMatch>, action: RouteAction, order: u64) -> RouteClaim {
        RouteClaim {
            host: host.into(),
            path,
            path_type: "PathPrefix".into(),
            path_as_written: "/".into(),
            headers,
            action,
            order: OrderKey(vec![OrderPart::Number(order)]),
            owner: owner("r"),
            origin: "rules[0]".into(),
            fallback: false,
        }
    }

    fn stops() -> Stops<'static> {
        Stops { default_pool: None, guard_pool: None, router_default: false }
    }

    fn header(name: &str, value: &str) -> HeaderMatch {
        HeaderMatch { name: name.into(), kind: HeaderMatchKind::Exact, value: value.into() }
    }

    #[test]
    fn a_header_match_becomes_a_header_rule_with_its_key_and_the_front_ends_order_decides() {
        let names: PoolNames =
            [(Feed::One(key("canary")), "ns_canary".to_string()), (Feed::One(key("web")), "ns_web".to_string())].into();
        let canary = claim(
            "a.example.com",
            PathMatch::Prefix("/".into()),
            vec![header("x-canary", "yes")],
            RouteAction::to_service(key("canary")),
            0,
        );
        let web = claim("a.example.com", PathMatch::Prefix("/".into()), vec![], RouteAction::to_service(key("web")), 1);
        let routes = RouteTable::claim_all([web, canary], &mut Vec::new()).routes();
        let policies = order_policies(routes, &names, &stops(), &mut Vec::new());
        assert_eq!(policies.iter().map(|p| p.pool.as_str()).collect::<Vec<_>>(), ["ns_canary", "ns_web"]);
        let h = policies[0].rules.iter().find(|r| r.rule_type == RuleType::Header).expect("a header rule");
        assert_eq!(
            (h.key.as_deref(), h.compare_type, h.value.as_str()),
            (Some("x-canary"), CompareType::EqualTo, "yes")
        );
        assert_ne!(policies[0].name, policies[1].name, "the header is part of the policy's identity");
        assert!(policies[0].name.starts_with("httproute:ns/r:a.example.com:"), "{}", policies[0].name);
    }

    #[test]
    fn a_redirect_action_keeps_the_path_unless_it_replaces_it() {
        let to = |path: Option<&str>| {
            RouteAction::Redirect(RedirectSpec {
                scheme: "https".into(),
                host: "b.example.com".into(),
                port: Some(8443),
                path: path.map(String::from),
                code: 301,
            })
        };
        let keep = claim("a.example.com", PathMatch::Exact("/old".into()), vec![], to(None), 0);
        let replace = claim("a.example.com", PathMatch::Exact("/gone".into()), vec![], to(Some("/new")), 1);
        let routes = RouteTable::claim_all([keep, replace], &mut Vec::new()).routes();
        let policies = order_policies(routes, &PoolNames::new(), &stops(), &mut Vec::new());
        let redirects: Vec<_> = policies.iter().map(|p| (p.pool.as_str(), p.redirect.clone())).collect();
        assert_eq!(
            redirects,
            [
                (
                    "",
                    Some(PolicyRedirect {
                        target: RedirectTarget::Prefix("https://b.example.com:8443".into()),
                        code: 301
                    })
                ),
                (
                    "",
                    Some(PolicyRedirect {
                        target: RedirectTarget::Url("https://b.example.com:8443/new".into()),
                        code: 301
                    })
                ),
            ]
        );
    }

    #[test]
    fn fixed_answers_use_the_reserved_pools_and_the_first_claim_of_a_match_wins() {
        let mut warnings = Vec::new();
        let unavailable =
            claim("", PathMatch::Regex("^/x[0-9]+$".into()), vec![], RouteAction::Fixed(FixedAnswer::Unavailable), 0);
        let mut younger = unavailable.clone();
        younger.owner = owner("younger");
        younger.action = RouteAction::Fixed(FixedAnswer::ServerError);
        let routes = RouteTable::claim_all([unavailable, younger], &mut warnings).routes();
        assert_eq!(routes.len(), 1);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].message.contains("HTTPRoute ns/younger: rules[0] ignored"), "{}", warnings[0].message);
        assert!(needs_unavailable_pool(&routes) && !needs_server_error_pool(&routes));
        let policies = order_policies(routes, &PoolNames::new(), &stops(), &mut Vec::new());
        assert_eq!(policies[0].pool, UNAVAILABLE_POOL);
        assert_eq!(policies[0].rules[0].compare_type, CompareType::Regex);
        assert_eq!(policies[0].rules[0].value, "^/x[0-9]+$");
    }

    #[test]
    fn a_split_goes_to_its_own_pool_without_a_warning() {
        use crate::translate::backends::{WeightedBackend, pool_names};
        let split = RouteAction::Forward(vec![
            WeightedBackend { key: key("web"), weight: 1 },
            WeightedBackend { key: key("canary"), weight: 9 },
        ]);
        let feed = route_feed(&split).expect("a feed");
        assert!(matches!(feed, Feed::Split(ref b) if b.len() == 2), "{feed:?}");
        let names = pool_names([&feed]);
        let mut warnings = Vec::new();
        let routes = vec![claim("a.example.com", PathMatch::Prefix("/".into()), vec![], split, 0)];
        let policies = order_policies(routes, &names, &stops(), &mut warnings);
        assert_eq!(policies[0].pool, "split:ns/canary:80+ns/web:80");
        assert_eq!(warnings, []);
        let none = RouteAction::Forward(vec![WeightedBackend { key: key("web"), weight: 0 }]);
        assert_eq!(route_feed(&none), None);
    }
}
