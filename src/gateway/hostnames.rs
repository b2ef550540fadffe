//! Hostname matching by the Gateway API rules: `*.example.com` matches any name with one or more
//! labels before `.example.com` (not `example.com` itself); a route's hostnames are intersected
//! with its listener's hostname.

/// Whether `pattern` (exact or `*.` wildcard) matches the exact name `host`.
pub fn matches(pattern: &str, host: &str) -> bool {
    match pattern.strip_prefix('*') {
        // The suffix keeps its leading dot, so at least one label must precede it.
        Some(suffix) => host.len() > suffix.len() && host.ends_with(suffix),
        None => pattern == host,
    }
}

/// The hostnames a route serves through a listener: the intersection of the listener's hostname
/// (`None`: any) with the route's hostnames (empty: any). `Some(vec![])` when none intersect (the
/// route does not attach to this listener); the inner `None` stands for "any host".
pub(crate) fn intersect(listener: Option<&str>, route: &[String]) -> Vec<Option<String>> {
    let Some(l) = listener else {
        return if route.is_empty() { vec![None] } else { route.iter().cloned().map(Some).collect() };
    };
    if route.is_empty() {
        return vec![Some(l.to_string())];
    }
    let mut out: Vec<Option<String>> = Vec::new();
    for h in route {
        let hit = if matches(l, h) || l == h {
            Some(h.clone())
        } else if matches(h, l) {
            Some(l.to_string())
        } else if is_wildcard(l) && is_wildcard(h) && matches(l, &h[2..]) {
            // `*.foo.example.com` through `*.example.com`: the narrower wildcard.
            Some(h.clone())
        } else if is_wildcard(l) && is_wildcard(h) && matches(h, &l[2..]) {
            Some(l.to_string())
        } else {
            None
        };
        if let Some(x) = hit.filter(|x| !out.contains(&Some(x.clone()))) {
            out.push(Some(x));
        }
    }
    out
}

pub(crate) fn is_wildcard(h: &str) -> bool {
    h.starts_with("*.")
}

/// The regex body matching a Gateway API host in a HOST_NAME rule: an exact name literally,
/// `*.example.com` as one or more labels before `.example.com` (never the bare suffix).
pub(crate) fn host_regex(host: &str) -> String {
    use crate::translate::rules::escape_regex;
    match host.strip_prefix("*.") {
        Some(rest) => format!("[^:]+\\.{}", escape_regex(rest)),
        None => escape_regex(host),
    }
}

/// Precedence of a host, smaller first: an exact name before any wildcard, longer before
/// shorter within each ("the largest number of characters in a matching non-wildcard hostname,
/// then in a matching hostname"), any host last.
pub(crate) fn specificity(host: Option<&str>) -> (u8, std::cmp::Reverse<usize>) {
    match host {
        Some(h) if !is_wildcard(h) => (0, std::cmp::Reverse(h.len())),
        Some(h) => (1, std::cmp::Reverse(h.len())),
        None => (2, std::cmp::Reverse(0)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(h: &[&str]) -> Vec<String> {
        h.iter().map(|s| s.to_string()).collect()
    }

    fn some(h: &[&str]) -> Vec<Option<String>> {
        h.iter().map(|s| Some(s.to_string())).collect()
    }

    #[test]
    fn wildcard_matches_one_or_more_labels_but_not_the_bare_suffix() {
        assert!(matches("*.example.com", "foo.example.com"));
        assert!(matches("*.example.com", "foo.bar.example.com"));
        assert!(!matches("*.example.com", "example.com"));
        assert!(!matches("*.example.com", "fooexample.com"));
        assert!(matches("foo.example.com", "foo.example.com"));
        assert!(!matches("foo.example.com", "bar.example.com"));
    }

    #[test]
    fn absent_sides_mean_any() {
        assert_eq!(intersect(None, &[]), vec![None]);
        assert_eq!(intersect(None, &v(&["a.com"])), some(&["a.com"]));
        assert_eq!(intersect(Some("a.com"), &[]), some(&["a.com"]));
    }

    #[test]
    fn exact_listener_takes_matching_route_names_and_wildcards() {
        assert_eq!(
            intersect(Some("very.specific.com"), &v(&["non.matching.com", "*.specific.com"])),
            some(&["very.specific.com"])
        );
        assert_eq!(intersect(Some("a.com"), &v(&["b.com"])), Vec::<Option<String>>::new());
    }

    #[test]
    fn wildcard_listener_keeps_the_narrower_side() {
        let l = Some("*.wildcard.io");
        assert_eq!(
            intersect(l, &v(&["bar.wildcard.io", "foo.bar.wildcard.io", "wildcard.io"])),
            some(&["bar.wildcard.io", "foo.bar.wildcard.io"])
        );
        assert_eq!(intersect(l, &v(&["*.foo.wildcard.io"])), some(&["*.foo.wildcard.io"]));
        assert_eq!(intersect(Some("*.foo.wildcard.io"), &v(&["*.wildcard.io"])), some(&["*.foo.wildcard.io"]));
        assert_eq!(intersect(l, &v(&["*.anotherwildcard.io"])), Vec::<Option<String>>::new());
    }

    #[test]
    fn exact_before_wildcard_before_any_and_longer_first() {
        let mut hs =
            vec![None, Some("*.example.com"), Some("a.example.com"), Some("*.b.example.com"), Some("ab.example.com")];
        hs.sort_by_key(|h| specificity(*h));
        assert_eq!(
            hs,
            vec![Some("ab.example.com"), Some("a.example.com"), Some("*.b.example.com"), Some("*.example.com"), None]
        );
    }
}
