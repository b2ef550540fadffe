//! RFC 6125 host name matching, the way browsers do it: case-insensitive, a trailing dot ignored,
//! a wildcard only as the whole left-most label (`*.example.com`), matching exactly one label.
//! Partial-label wildcards (`w*.example.com`) are not honoured: clients reject them too.

/// Lower-case, without a trailing dot: the form every comparison uses.
pub(crate) fn normalize(name: &str) -> String {
    name.trim().trim_end_matches('.').to_ascii_lowercase()
}

/// Whether certificate name `pattern` (a SAN DNS name or the CN) covers `host`, both normalized.
///
/// - `a.example.com` is covered by `a.example.com` and by `*.example.com`;
/// - `example.com` and `a.b.example.com` are not covered by `*.example.com`;
/// - a wildcard Ingress host `*.example.com` is covered only by the same wildcard name;
/// - `*.com` (a wildcard over a single label) covers nothing but itself.
pub(crate) fn name_covers(pattern: &str, host: &str) -> bool {
    if pattern.is_empty() || host.is_empty() {
        return false;
    }
    if pattern == host {
        return true;
    }
    let Some(suffix) = pattern.strip_prefix("*.") else {
        return false;
    };
    // A wildcard must leave at least two labels (no `*.com`), and none of them may be a wildcard.
    if !suffix.contains('.') || suffix.contains('*') || suffix.split('.').any(str::is_empty) {
        return false;
    }
    match host.split_once('.') {
        Some((label, rest)) => !label.is_empty() && label != "*" && rest == suffix,
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcard_rules() {
        let cases = [
            ("a.example.com", "a.example.com", true),
            ("*.example.com", "a.example.com", true),
            ("*.example.com", "example.com", false),
            ("*.example.com", "a.b.example.com", false),
            ("*.example.com", "*.example.com", true),
            ("a.example.com", "*.example.com", false),
            ("*.com", "example.com", false),
            ("w*.example.com", "www.example.com", false),
            ("*.*.example.com", "a.b.example.com", false),
            ("*.example.com", ".example.com", false),
            ("*..com", "a..com", false),
            ("", "", false),
        ];
        for (pattern, host, want) in cases {
            assert_eq!(name_covers(pattern, host), want, "{pattern} covers {host}");
        }
        assert_eq!(normalize(" WWW.Example.COM. "), "www.example.com");
    }
}
