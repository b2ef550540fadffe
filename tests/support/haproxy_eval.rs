//! Which Service answers a request, by evaluating desired policies as haproxy does with Octavia's
//! configuration: policies by position, rules ANDed (host rules case-insensitive, `-i`), policies
//! without rules skipped, no match → the listener's default pool
//! (`crate::support::haproxy_eval`).

use kuryr_l7_router::model::{CompareType, DesiredRouter, Policy, Rule, RuleType};

/// The answer of a reserved pool without members (no status responder): haproxy's own 503.
#[allow(dead_code)]
pub const EMPTY_POOL_503: &str = "haproxy 503 (empty reserved pool)";

thread_local! {
    /// Compiled rule values: property tests evaluate the same few thousand rules many times.
    static REGEXES: std::cell::RefCell<std::collections::HashMap<String, regex::Regex>> = Default::default();
}

fn rule_matches(r: &Rule, host: &str, path: &str) -> bool {
    let (subject, ci) = match r.rule_type {
        RuleType::HostName => (host.to_ascii_lowercase(), true),
        RuleType::Path => (path.to_string(), false),
        // The requests evaluated here carry no header: a header rule never matches.
        RuleType::Header => return r.invert,
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
