//! Which Service answers a request, by evaluating desired policies as haproxy does with Octavia's
//! configuration: policies by position, rules ANDed (host rules case-insensitive, `-i`), policies
//! without rules skipped, no match → the listener's default pool
//! (`crate::support::haproxy_eval`). A listener with redirect policies: [`haproxy_policy`]
//! (haproxy runs every `redirect` before any `use_backend`) against [`positional_policy`].

use kuryr_l7_router::model::{CompareType, DesiredRouter, Policy, Rule, RuleType};

/// The answer of a reserved pool without members (no status responder): haproxy's own 503.
#[allow(dead_code)]
pub const EMPTY_POOL_503: &str = "haproxy 503 (empty reserved pool)";

thread_local! {
    /// Compiled rule values: property tests evaluate the same few thousand rules many times.
    static REGEXES: std::cell::RefCell<std::collections::HashMap<String, regex::Regex>> = Default::default();
}

fn rule_matches(r: &Rule, host: &str, path: &str) -> bool {
    rule_matches_with(r, host, path, &|_| None)
}

/// A request's header value by name (case-insensitive), when it has the header.
type Headers<'a> = &'a dyn Fn(&str) -> Option<String>;

fn rule_matches_with(r: &Rule, host: &str, path: &str, headers: Headers<'_>) -> bool {
    let (subject, ci) = match r.rule_type {
        RuleType::HostName => (host.to_ascii_lowercase(), true),
        RuleType::Path => (path.to_string(), false),
        // haproxy's `req.hdr(<key>)`: a request without the header matches no value.
        RuleType::Header => match r.key.as_deref().and_then(headers) {
            Some(v) => (v, false),
            None => return r.invert,
        },
    };
    let value = if ci { r.value.to_ascii_lowercase() } else { r.value.clone() };
    let hit = match r.compare_type {
        CompareType::Regex => REGEXES.with(|cache| {
            let mut cache = cache.borrow_mut();
            cache.entry(value.clone()).or_insert_with(|| regex::Regex::new(&value).unwrap()).is_match(&subject)
        }),
        CompareType::EqualTo => subject == value,
        CompareType::StartsWith => subject.starts_with(&value),
        CompareType::EndsWith => subject.ends_with(&value),
        CompareType::Contains => subject.contains(&value),
    };
    hit != r.invert
}

/// `namespace/service` answering `host` + `path` on a listener with these policies and default
/// pool; None: no route (Octavia answers 503).
pub fn answer(
    router: &DesiredRouter,
    policies: &[Policy],
    default_pool: Option<&str>,
    host: &str,
    path: &str,
) -> Option<String> {
    let mut ps: Vec<&Policy> = policies.iter().collect();
    ps.sort_by_key(|p| p.position);
    let pool = ps
        .iter()
        .find(|p| !p.rules.is_empty() && p.rules.iter().all(|r| rule_matches(r, host, path)))
        .map(|p| p.pool.as_str())
        .or(default_pool)?;
    let s = &router.pools[pool].service;
    if s.kind != "Service" {
        // A reserved pool that no Service fills: haproxy answers 503 itself.
        return Some(EMPTY_POOL_503.to_string());
    }
    Some(format!("{}/{}", s.namespace, s.name))
}

/// [`answer`] on the HTTP listener.
pub fn http(router: &DesiredRouter, host: &str, path: &str) -> Option<String> {
    answer(router, &router.policies, router.default_pool.as_deref(), host, path)
}

/// [`answer`] on the HTTPS listener (None when there is none).
pub fn https(router: &DesiredRouter, host: &str, path: &str) -> Option<String> {
    let l = router.https.as_ref()?;
    answer(router, &l.policies, l.default_pool.as_deref(), host, path)
}

fn policy_matches(p: &Policy, host: &str, path: &str, headers: Headers<'_>) -> bool {
    !p.rules.is_empty() && p.rules.iter().all(|r| rule_matches_with(r, host, path, headers))
}

/// The policy the positions choose (the first that matches): what the translation means.
#[allow(dead_code)]
pub fn positional_policy<'a>(
    policies: &'a [Policy],
    host: &str,
    path: &str,
    headers: Headers<'_>,
) -> Option<&'a Policy> {
    let mut ps: Vec<&Policy> = policies.iter().collect();
    ps.sort_by_key(|p| p.position);
    ps.into_iter().find(|p| policy_matches(p, host, path, headers))
}

/// The policy haproxy applies with Octavia's rendering: a redirect policy is a `redirect` rule,
/// any other a `use_backend` one, and haproxy runs every `redirect` (by position) before any
/// `use_backend` (by position), wherever they are in the configuration.
#[allow(dead_code)]
pub fn haproxy_policy<'a>(policies: &'a [Policy], host: &str, path: &str, headers: Headers<'_>) -> Option<&'a Policy> {
    let mut ps: Vec<&Policy> = policies.iter().collect();
    ps.sort_by_key(|p| (p.redirect.is_none(), p.position));
    ps.into_iter().find(|p| policy_matches(p, host, path, headers))
}
