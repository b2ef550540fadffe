//! Precedence across HTTPRoutes, as the spec orders it. Octavia evaluates a listener's policies
//! by position, first match wins, so the entries are sorted by [`OrderKey`] and positioned in
//! that order.
//!
//! The spec's order, continuing on ties: the most specific hostname (the most characters in a
//! matching non-wildcard hostname, then in a matching hostname); an `Exact` path; the longest
//! `PathPrefix`; a method match; the most header matches; the most query-parameter matches; then
//! the oldest route; then the route first by `{namespace}/{name}`; then the first rule and match
//! within the route. Method and query-parameter matches are never served (see
//! [`super::matches`]), so they never break a tie here. `RegularExpression` paths are
//! implementation-specific in the spec; they rank after `Exact` and before every `PathPrefix`,
//! because a shorter prefix such as `/` would otherwise hide them entirely.

use super::hostnames::specificity;
use super::matches::{MatchSpec, PathMatch};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use std::cmp::Reverse;

/// Sorts ascending into evaluation order.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct OrderKey {
    pub host: (u8, Reverse<usize>),
    /// 0 Exact, 1 RegularExpression, 2 PathPrefix.
    pub(crate) path_kind: u8,
    pub(crate) path_len: Reverse<usize>,
    pub headers: Reverse<usize>,
    /// `None` (unknown) sorts first, as the API server always sets it.
    pub created: Option<Time>,
    pub namespace: String,
    pub name: String,
    pub rule: usize,
    pub matched: usize,
}

/// Where the route's rule and match sit, for the tie-breaks.
#[derive(Clone, Copy, Debug)]
pub struct Origin<'a> {
    pub created: Option<&'a Time>,
    pub namespace: &'a str,
    pub name: &'a str,
    pub rule: usize,
    pub matched: usize,
}

pub fn key(host: Option<&str>, m: &MatchSpec, o: Origin<'_>) -> OrderKey {
    let (path_kind, len) = match &m.path {
        PathMatch::Exact(p) => (0, p.len()),
        PathMatch::Regex(p) => (1, p.len()),
        PathMatch::Prefix(p) => (2, p.len()),
    };
    OrderKey {
        host: specificity(host),
        path_kind,
        path_len: Reverse(len),
        headers: Reverse(m.headers.len()),
        created: o.created.cloned(),
        namespace: o.namespace.into(),
        name: o.name.into(),
        rule: o.rule,
        matched: o.matched,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gateway::matches::HeaderMatch;

    fn m(path: PathMatch, headers: usize) -> MatchSpec {
        let headers = (0..headers).map(|i| HeaderMatch::Exact { name: format!("h{i}"), value: "v".into() }).collect();
        MatchSpec { path, headers }
    }

    fn at(ns: &str, name: &str, rule: usize) -> Origin<'static> {
        Origin {
            created: None,
            namespace: Box::leak(ns.to_string().into_boxed_str()),
            name: Box::leak(name.to_string().into_boxed_str()),
            rule,
            matched: 0,
        }
    }

    #[test]
    fn exact_path_before_longer_prefix_before_shorter_prefix() {
        let e = key(None, &m(PathMatch::Exact("/a".into()), 0), at("n", "z", 9));
        let p_long = key(None, &m(PathMatch::Prefix("/abc/def".into()), 0), at("n", "a", 0));
        let p_short = key(None, &m(PathMatch::Prefix("/abc".into()), 5), at("n", "a", 0));
        assert!(e < p_long && p_long < p_short);
    }

    #[test]
    fn more_headers_win_on_equal_paths() {
        let two = key(None, &m(PathMatch::Prefix("/".into()), 2), at("n", "z", 0));
        let one = key(None, &m(PathMatch::Prefix("/".into()), 1), at("n", "a", 0));
        assert!(two < one);
    }

    #[test]
    fn host_specificity_comes_first() {
        let exact = key(Some("a.example.com"), &m(PathMatch::Prefix("/".into()), 0), at("n", "z", 0));
        let wild = key(Some("*.example.com"), &m(PathMatch::Exact("/very/long/exact".into()), 3), at("n", "a", 0));
        assert!(exact < wild);
    }

    #[test]
    fn ties_go_to_the_oldest_route_then_namespace_name_then_rule_order() {
        let t = |s: &str| Time(s.parse().unwrap());
        let (old, new) = (t("2024-01-01T00:00:00Z"), t("2025-01-01T00:00:00Z"));
        let mm = m(PathMatch::Prefix("/x".into()), 0);
        let mut o = at("b", "b", 0);
        o.created = Some(&new);
        let newer = key(None, &mm, o);
        let mut o = at("z", "z", 3);
        o.created = Some(&old);
        let older = key(None, &mm, o);
        assert!(older < newer);
        let mut o = at("a", "z", 0);
        o.created = Some(&new);
        assert!(key(None, &mm, o) < newer, "same age: namespace/name order");
        assert!(key(None, &mm, at("n", "r", 0)) < key(None, &mm, at("n", "r", 1)), "same route: rule order");
    }

    #[test]
    fn regex_between_exact_and_prefix() {
        let e = key(None, &m(PathMatch::Exact("/a".into()), 0), at("n", "a", 0));
        let r = key(None, &m(PathMatch::Regex("/a.*".into()), 0), at("n", "a", 0));
        let p = key(None, &m(PathMatch::Prefix("/a/very/long/prefix".into()), 0), at("n", "a", 0));
        assert!(e < r && r < p);
    }
}
