//! Validation of Ingress hosts and paths, and their encoding as Octavia L7 rules.
//!
//! Octavia renders a HOST_NAME rule as `acl <id> req.hdr(host) -i -m <cmp> <value>` and a PATH
//! rule as `acl <id> path -m <cmp> <value>` (combined_listeners/templates/macros.j2,
//! `l7rule_macro`), with REGEX → `-m reg`, STARTS_WITH → `-m beg`, EQUAL_TO → `-m str`. So host
//! rules are case-insensitive (also for regexes) and see `:port`; path rules are case-sensitive
//! and see the path without the query string. The value is pasted unquoted into haproxy.cfg,
//! which is why characters meaningful to haproxy's config parser are rejected here.

use super::claim::{HeaderMatch, HeaderMatchKind, PathMatch};
use crate::model::{CompareType, Rule, RuleType};

/// Octavia's limit on a rule value (StringType(max_length=255)).
pub(crate) const MAX_VALUE: usize = 255;
/// Octavia's limit on rules per policy.
pub(crate) const MAX_RULES: usize = 50;

/// Matches an optional `:port` after the host: the Host header carries it when the client does.
pub(crate) const PORT_SUFFIX: &str = "(:[0-9]+)?";

/// Backslash-escape every regex metacharacter. Only characters that are metacharacters in both
/// Python `re` (Octavia's validation) and PCRE (haproxy) are escaped, and escaping them is
/// meaningful in both. Backslash itself never reaches here (rejected by validation) because
/// haproxy's config parser turns `\\` into `\`.
pub fn escape_regex(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if is_regex_meta(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The characters [`escape_regex`] escapes.
fn is_regex_meta(c: char) -> bool {
    matches!(c, '.' | '+' | '*' | '?' | '(' | ')' | '[' | ']' | '{' | '}' | '|' | '^' | '$' | '\\')
}

/// How a path matches, after mapping ImplementationSpecific onto Prefix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PathKind {
    Exact,
    Prefix,
}

fn dns_label_ok(l: &str) -> bool {
    let b = l.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b.iter().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

/// Kubernetes' host validation: a lower-case DNS-1123 subdomain, or `*.` + one; no IP address;
/// no `*` elsewhere; ASCII only (IDNs must be punycode). `None` when valid.
pub fn host_problem(host: &str) -> Option<String> {
    if !host.is_ascii() {
        return Some("host must be ASCII (use punycode for internationalized names)".into());
    }
    let bare = host.strip_prefix("*.").unwrap_or(host);
    if bare.contains('*') {
        return Some("a wildcard is only allowed as the whole first label (*.example.com)".into());
    }
    if bare.len() > 253 {
        return Some("host is longer than 253 characters".into());
    }
    if !bare.split('.').all(dns_label_ok) {
        return Some("host must be a lower-case DNS-1123 subdomain".into());
    }
    if bare.parse::<std::net::Ipv4Addr>().is_ok() {
        return Some("host must be a DNS name, not an IP address".into());
    }
    None
}

/// Kubernetes' path validation plus what haproxy's unquoted config and a request path can carry.
/// `path` is as written (empty only for ImplementationSpecific). `None` when valid.
pub fn path_problem(path: &str, kind_strict: bool) -> Option<String> {
    if path.is_empty() {
        return if kind_strict { Some("path is required for Exact and Prefix".into()) } else { None };
    }
    if !path.starts_with('/') {
        return Some("path must be absolute (start with '/')".into());
    }
    if !path.is_ascii() {
        return Some("path must be ASCII (percent-encode other characters)".into());
    }
    if let Some(c) = path.chars().find(|c| c.is_ascii_whitespace() || c.is_ascii_control()) {
        return Some(format!("path contains the whitespace or control character {c:?}"));
    }
    if let Some(c) = path.chars().find(|c| matches!(c, '#' | '?')) {
        return Some(format!("path contains {c:?}, which never reaches the path of a request"));
    }
    if let Some(c) = path.chars().find(|c| matches!(c, '"' | '\'' | '\\')) {
        return Some(format!("path contains {c:?}, which haproxy's configuration cannot carry unquoted"));
    }
    if kind_strict {
        for seq in ["//", "/./", "/../", "%2f", "%2F"] {
            if path.contains(seq) {
                return Some(format!("path must not contain {seq:?}"));
            }
        }
        for suf in ["/..", "/."] {
            if path.ends_with(suf) {
                return Some(format!("path must not end with {suf:?}"));
            }
        }
    }
    None
}

/// Octavia's checks on a rule value, applied before the write so a bad value becomes a warning:
/// non-empty, ≤ 255 characters, no whitespace or control characters (header_value_string,
/// INVALID_CONFIG_CHARS_RE). Our regexes compile in Python `re` by construction.
pub(crate) fn value_problem(value: &str) -> Option<String> {
    if value.is_empty() {
        return Some("rule value is empty".into());
    }
    if value.len() > MAX_VALUE {
        return Some(format!("rule value is {} characters, Octavia allows {MAX_VALUE}", value.len()));
    }
    if value.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Some("rule value contains whitespace or control characters".into());
    }
    None
}

/// Octavia's value checks on every rule a host can appear in: its own HOST_NAME rule, and the
/// inverted exclusion rule that keeps its requests out of wildcard and host-less policies
/// (`^(<host>)(:[0-9]+)?$`, the longer of the two). A 253-character host is legal in Kubernetes,
/// yet its escaped exclusion value exceeds 255 characters and Octavia answers 400.
pub(crate) fn host_value_problem(host: &str) -> Option<String> {
    std::iter::once(host_rule(host).value)
        .chain(exclusion_rules(&[host_pattern(host)]).into_iter().map(|r| r.value))
        .find_map(|v| value_problem(&v))
}

/// The regex body (no anchors) matching a host: exact hosts literally, `*.example.com` as exactly
/// one extra label (`[^.]+`), never the bare suffix and never two labels.
pub(crate) fn host_pattern(host: &str) -> String {
    match host.strip_prefix("*.") {
        Some(rest) => format!("[^.]+\\.{}", escape_regex(rest)),
        None => escape_regex(host),
    }
}

/// HOST_NAME REGEX `^<host>(:[0-9]+)?$`; haproxy applies `-i`, so Host header case is irrelevant.
pub fn host_rule(host: &str) -> Rule {
    Rule {
        rule_type: RuleType::HostName,
        compare_type: CompareType::Regex,
        value: format!("^{}{PORT_SUFFIX}$", host_pattern(host)),
        invert: false,
        key: None,
    }
}

/// Trailing slashes of a Prefix path are ignored (`/foo/` ≡ `/foo`); `/` stays `/`.
pub(crate) fn normalize_prefix(path: &str) -> &str {
    let t = path.trim_end_matches('/');
    if t.is_empty() { "/" } else { t }
}

/// The PATH rule for a route, or `None` when the route matches every path and a host rule
/// already makes the policy non-empty (Octavia skips policies without rules).
/// - Exact `p` → EQUAL_TO `p` (`-m str`, case-sensitive, trailing slash significant).
/// - Prefix `/` → STARTS_WITH `/` only when there is no host rule.
/// - Prefix `p` → REGEX `^p(/.*)?$`: matches `p`, `p/`, `p/...`, never `pX...` (element-wise).
pub fn path_rule(kind: PathKind, path: &str, has_host_rule: bool) -> Option<Rule> {
    let (compare_type, value) = match kind {
        PathKind::Exact => (CompareType::EqualTo, path.to_string()),
        PathKind::Prefix => {
            let p = normalize_prefix(path);
            if p == "/" {
                if has_host_rule {
                    return None;
                }
                (CompareType::StartsWith, "/".to_string())
            } else {
                (CompareType::Regex, format!("^{}(/.*)?$", escape_regex(p)))
            }
        }
    };
    Some(Rule { rule_type: RuleType::Path, compare_type, value, invert: false, key: None })
}

/// [`value_problem`] of the rule [`path_rule`] makes, without making it: the front end checks
/// every path before it claims it, and the rule itself is made with the policy. With a host
/// rule or without, the answer is the same.
pub(crate) fn path_rule_value_problem(kind: PathKind, path: &str) -> Option<String> {
    let p = match kind {
        PathKind::Exact => return value_problem(path),
        PathKind::Prefix => normalize_prefix(path),
    };
    if p == "/" {
        // No rule with a host rule; `STARTS_WITH /` without one: both pass.
        return None;
    }
    // `^<p escaped>(/.*)?$`: never empty; the regex around `p` and the escapes add neither
    // whitespace nor control characters.
    let escapes = p.chars().filter(|c| is_regex_meta(*c)).count();
    let len = "^".len() + p.len() + escapes + "(/.*)?$".len();
    if len > MAX_VALUE {
        return Some(format!("rule value is {len} characters, Octavia allows {MAX_VALUE}"));
    }
    if p.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Some("rule value contains whitespace or control characters".into());
    }
    None
}

/// Inverted HOST_NAME rules that exclude `patterns` (regex bodies from [`host_pattern`]), packed
/// into as few values ≤ 255 characters as possible. Used when no default pool exists to stop
/// hosts with their own rules from falling through to wildcard or host-less policies.
pub fn exclusion_rules(patterns: &[String]) -> Vec<Rule> {
    let overhead = "^()".len() + PORT_SUFFIX.len() + "$".len();
    let mut out = Vec::new();
    let mut cur: Vec<&str> = Vec::new();
    let mut cur_len = 0usize;
    let flush = |cur: &mut Vec<&str>, out: &mut Vec<Rule>| {
        if !cur.is_empty() {
            out.push(Rule {
                rule_type: RuleType::HostName,
                compare_type: CompareType::Regex,
                value: format!("^({}){PORT_SUFFIX}$", cur.join("|")),
                invert: true,
                key: None,
            });
            cur.clear();
        }
    };
    for p in patterns {
        let add = p.len() + usize::from(!cur.is_empty());
        if !cur.is_empty() && overhead + cur_len + add > MAX_VALUE {
            flush(&mut cur, &mut out);
            cur_len = 0;
        }
        cur_len += p.len() + usize::from(!cur.is_empty());
        cur.push(p);
    }
    flush(&mut cur, &mut out);
    out
}

/// The PATH rule of a route claim's path match (see [`path_rule`]); a Regex is compared as given
/// (haproxy `-m reg`, case-sensitive, unanchored unless the regex anchors itself).
pub(crate) fn path_match_rule(m: &PathMatch, has_other_rule: bool) -> Option<Rule> {
    match m {
        PathMatch::Exact(p) => path_rule(PathKind::Exact, p, has_other_rule),
        PathMatch::Prefix(p) => path_rule(PathKind::Prefix, p, has_other_rule),
        PathMatch::Regex(r) => Some(Rule {
            rule_type: RuleType::Path,
            compare_type: CompareType::Regex,
            value: r.clone(),
            invert: false,
            key: None,
        }),
    }
}

/// HEADER `key` EQUAL_TO or REGEX `value`: haproxy's `req.hdr(<key>)` (the name is
/// case-insensitive, the value is not).
pub(crate) fn header_rule(h: &HeaderMatch) -> Rule {
    let compare_type = match h.kind {
        HeaderMatchKind::Exact => CompareType::EqualTo,
        HeaderMatchKind::Regex => CompareType::Regex,
    };
    Rule { rule_type: RuleType::Header, compare_type, value: h.value.clone(), invert: false, key: Some(h.name.clone()) }
}

/// Octavia's checks on a HEADER rule: the key is an HTTP header name (RFC 9110 token
/// characters), the value passes [`value_problem`]. `None` when valid.
pub(crate) fn header_problem(h: &HeaderMatch) -> Option<String> {
    let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    if h.name.is_empty() || !h.name.chars().all(token) {
        return Some(format!("header name {:?} is not an HTTP header name", h.name));
    }
    value_problem(&h.value).map(|why| format!("header {}: {why}", h.name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn the_path_check_without_the_rule_says_what_the_rule_would(
            path in "[/a-z.+*?()\\[\\]{}|^$ \t\\\\é-]{0,300}",
            exact in any::<bool>(),
            has_host in any::<bool>(),
        ) {
            let kind = if exact { PathKind::Exact } else { PathKind::Prefix };
            let made = path_rule(kind, &path, has_host).and_then(|r| value_problem(&r.value));
            prop_assert_eq!(path_rule_value_problem(kind, &path), made);
        }
    }

    #[test]
    fn octavia_refuses_header_names_that_are_not_tokens_and_values_with_spaces() {
        let h = |name: &str, value: &str| HeaderMatch {
            name: name.into(),
            kind: HeaderMatchKind::Exact,
            value: value.into(),
        };
        assert_eq!(header_problem(&h("X-Env", "canary")), None);
        assert!(header_problem(&h("X Env", "canary")).is_some());
        assert!(header_problem(&h("", "canary")).is_some());
        assert!(header_problem(&h("X-Env", "two words")).unwrap().contains("X-Env"));
        let r = header_rule(&HeaderMatch { name: "X-Env".into(), kind: HeaderMatchKind::Regex, value: "^c".into() });
        assert_eq!(
            (r.rule_type, r.compare_type, r.key.as_deref()),
            (RuleType::Header, CompareType::Regex, Some("X-Env"))
        );
    }
}
