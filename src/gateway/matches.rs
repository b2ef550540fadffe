//! HTTPRoute matches as Octavia can serve them, and the fields it cannot serve.
//!
//! Octavia L7 rules compare the path, a header, a cookie, the host or the client certificate;
//! they have no method or query-parameter rule, and policies cannot add, remove or rewrite
//! headers or mirror requests. A route using any of those is refused as a whole (Accepted=False,
//! reason UnsupportedValue, the message naming the field): serving it without them would answer
//! requests the user meant to be answered differently.

use super::api::{HTTPPathMatch, HTTPRoute, HTTPRouteMatch, HTTPRouteRule};

/// How an entry matches the request path.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PathMatch {
    Exact(String),
    /// Element-wise: `/foo` matches `/foo`, `/foo/` and `/foo/bar`, not `/foobar`. Stored without
    /// a trailing `/` (except `/` itself), which the spec says is ignored.
    Prefix(String),
    /// Extended: a PCRE-compatible regular expression (Octavia's REGEX compare type).
    Regex(String),
}

/// One header condition; the name is lower-cased (header names are case-insensitive).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum HeaderMatch {
    Exact { name: String, value: String },
    Regex { name: String, value: String },
}

/// One HTTPRoute match: its path and its headers, ANDed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MatchSpec {
    pub path: PathMatch,
    pub headers: Vec<HeaderMatch>,
}

/// The filters a rule may carry that Octavia serves.
const SERVED_FILTERS: &[&str] = &["RequestRedirect"];
/// Redirect codes Octavia's `redirect_http_code` accepts.
pub(crate) const REDIRECT_CODES: &[i32] = &[301, 302, 303, 307, 308];

/// The first field of the route that Octavia cannot serve, as a message naming it; `None` when
/// the whole route can be served.
pub fn unsupported(route: &HTTPRoute) -> Option<String> {
    route.spec.rules.iter().enumerate().find_map(|(i, r)| unsupported_in_rule(i, r))
}

/// ` (rule <name>)` for a rule with a `name` (HTTPRouteNamedRouteRule), else nothing: what a
/// message about one of its fields ends with, so the route's owner finds the rule by its name.
pub(crate) fn rule_label(rule: &HTTPRouteRule) -> String {
    rule.name.as_deref().map(|n| format!(" (rule {n})")).unwrap_or_default()
}

fn unsupported_in_rule(i: usize, rule: &HTTPRouteRule) -> Option<String> {
    unsupported_field(i, rule).map(|m| m + &rule_label(rule))
}

fn unsupported_field(i: usize, rule: &HTTPRouteRule) -> Option<String> {
    let at = format!("spec.rules[{i}]");
    for (j, m) in rule.matches.iter().enumerate() {
        if let Some(msg) = unsupported_in_match(&format!("{at}.matches[{j}]"), m) {
            return Some(msg);
        }
    }
    for (j, f) in rule.filters.iter().enumerate() {
        let field = format!("{at}.filters[{j}]");
        if !SERVED_FILTERS.contains(&f.filter_type.as_str()) {
            return Some(format!("{field}.type: {} is not supported by Octavia", f.filter_type));
        }
        let Some(rr) = &f.request_redirect else {
            return Some(format!("{field}.requestRedirect is required for type RequestRedirect"));
        };
        if rr.path.is_some() {
            return Some(format!("{field}.requestRedirect.path: path redirects are not supported by Octavia"));
        }
        if let Some(code) = rr.status_code.filter(|c| !REDIRECT_CODES.contains(c)) {
            return Some(format!("{field}.requestRedirect.statusCode: {code} is not a redirect code"));
        }
        if let Some(s) = rr.scheme.as_deref().filter(|s| !matches!(*s, "http" | "https")) {
            return Some(format!("{field}.requestRedirect.scheme: {s} is not http or https"));
        }
    }
    for (j, b) in rule.backend_refs.iter().enumerate() {
        if !b.filters.is_empty() {
            return Some(format!("{at}.backendRefs[{j}].filters: per-backend filters are not supported by Octavia"));
        }
    }
    if rule.timeouts.is_some() {
        return Some(format!("{at}.timeouts: per-rule timeouts are not supported by Octavia"));
    }
    None
}

fn unsupported_in_match(at: &str, m: &HTTPRouteMatch) -> Option<String> {
    if m.method.is_some() {
        return Some(format!("{at}.method: Octavia has no method rule"));
    }
    if !m.query_params.is_empty() {
        return Some(format!("{at}.queryParams: Octavia has no query-parameter rule"));
    }
    if let Some(t) = m.path.as_ref().and_then(|p| p.match_type.as_deref()) {
        if !matches!(t, "Exact" | "PathPrefix" | "RegularExpression") {
            return Some(format!("{at}.path.type: {t} is not supported"));
        }
    }
    for (k, h) in m.headers.iter().enumerate() {
        if let Some(t) = h.match_type.as_deref().filter(|t| !matches!(*t, "Exact" | "RegularExpression")) {
            return Some(format!("{at}.headers[{k}].type: {t} is not supported"));
        }
    }
    None
}

/// The matches of a rule (ORed); a rule without matches matches every path (`PathPrefix /`).
/// Call only on a route [`unsupported`] accepts.
pub fn rule_matches(rule: &HTTPRouteRule) -> Vec<MatchSpec> {
    if rule.matches.is_empty() {
        return vec![MatchSpec { path: PathMatch::Prefix("/".into()), headers: Vec::new() }];
    }
    rule.matches.iter().map(one_match).collect()
}

fn one_match(m: &HTTPRouteMatch) -> MatchSpec {
    let path = path_match(m.path.as_ref());
    let mut headers: Vec<HeaderMatch> = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    for h in &m.headers {
        let name = h.name.to_ascii_lowercase();
        // The spec: when a name repeats, the first entry wins and later ones are ignored.
        if seen.contains(&name) {
            continue;
        }
        seen.push(name.clone());
        headers.push(match h.match_type.as_deref() {
            Some("RegularExpression") => HeaderMatch::Regex { name, value: h.value.clone() },
            _ => HeaderMatch::Exact { name, value: h.value.clone() },
        });
    }
    headers.sort();
    MatchSpec { path, headers }
}

fn path_match(p: Option<&HTTPPathMatch>) -> PathMatch {
    let value = p.and_then(|p| p.value.clone()).unwrap_or_else(|| "/".into());
    match p.and_then(|p| p.match_type.as_deref()) {
        Some("Exact") => PathMatch::Exact(value),
        Some("RegularExpression") => PathMatch::Regex(value),
        _ => {
            let trimmed = value.trim_end_matches('/');
            PathMatch::Prefix(if trimmed.is_empty() { "/".into() } else { trimmed.into() })
        }
    }
}

impl PathMatch {
    /// Whether the request path matches (the prefix rule element-wise); regular expressions are
    /// not evaluated here (`None`): the data plane does that.
    pub fn matches(&self, path: &str) -> Option<bool> {
        match self {
            PathMatch::Exact(p) => Some(p == path),
            PathMatch::Prefix(p) if p == "/" => Some(true),
            PathMatch::Prefix(p) => {
                Some(path == p || path.strip_prefix(p.as_str()).is_some_and(|r| r.starts_with('/')))
            }
            PathMatch::Regex(_) => None,
        }
    }
}

#[cfg(test)]
#[path = "matches_tests.rs"]
mod tests;
