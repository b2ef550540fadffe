//! A redirect keeps its place behind the routes that precede it, on haproxy.
//!
//! Octavia renders a REDIRECT_PREFIX (or REDIRECT_TO_URL) policy as haproxy
//! `redirect ... if <rules>` and a REDIRECT_TO_POOL one as `use_backend ... if <rules>`, and
//! haproxy runs every `redirect` before any `use_backend`, whatever the policies' positions
//! (among the redirects, and among the `use_backend`s, the position order holds). So a redirect
//! answers every request it matches, also one that a route of higher precedence (an earlier
//! position) forwards: `foo.example.com/app` gets the 302 of an http→https redirect of
//! `foo.example.com` or `*.example.com` for `/`, not its backend.
//!
//! The fix is on the rules: a redirect R is served as `R AND NOT F1 AND NOT F2 ...` over the
//! forwarding policies Fi before it that can match a request R matches (the fixed answers, a
//! `use_backend` of a reserved pool, included). Octavia ANDs a policy's rules and can invert
//! each, but has no OR, so `NOT F` (F = c1 AND c2 ...) is the alternatives `NOT c1`, `NOT c2`,
//! ...: R becomes one policy per way to miss every Fi, each with R's rules, its escape rules and
//! R's redirect. With that, whichever evaluation order: a request an earlier Fi matches is
//! redirected by none of R's policies, and one R matches and no earlier Fi does is redirected by
//! one of them, as the positions say.
//!
//! To keep it small:
//! - an Fi that cannot overlap R (another exact host, a wildcard that does not cover it, paths
//!   that exclude each other, the same header with another exact value, a host either one's
//!   listener isolation excludes) is left out;
//! - a condition of Fi that every request of R meets (Fi's host covers R's, Fi's path covers
//!   R's, the same header match, Fi's excluded hosts are none of R's) is no way to miss it;
//! - when R's host is not one exact name and some Fi's is, R is split by those hosts first:
//!   one policy per such host (where only that host's Fi count), one for the other hosts (an
//!   inverted HOST_NAME rule of them all). A wildcard redirect behind n exact hosts' routes
//!   costs n + 1 policies, not 2^n;
//! - the alternatives are combined keeping only the minimal ones (`NOT /app` makes
//!   `NOT /app AND NOT foo` redundant), the same redirect answering whichever matches.
//!
//! The alternatives of one redirect may overlap (they redirect alike, so it does not matter),
//! which costs fewer rules than making them disjoint (`NOT c1`, `c1 AND NOT c2`, ...).
//!
//! **Budget**: at most [`MAX_REDIRECT_POLICIES`] policies per redirect entry, each within
//! Octavia's [`MAX_RULES`]; over it, the redirect is not served (an `InvalidRule` warning names
//! the route, its rule and what it needed) rather than served over routes that precede it.

use super::hostnames::{host_regex, is_wildcard, matches as host_matches};
use crate::model::{CompareType, KubeRef, Policy, Rule, RuleType, Warning};
use crate::reason::Reason;
use crate::translate::claim::{HeaderMatch, HeaderMatchKind, PathMatch, RouteClaim};
use crate::translate::names::bounded;
use crate::translate::rules::{
    MAX_RULES, PORT_SUFFIX, exclusion_rules, header_rule, normalize_prefix, path_match_rule,
};

/// The policies one redirect entry may become (each one L7 policy of the project's quota, and
/// a write of the whole load balancer): a wildcard redirect behind 15 exact hosts' routes, or
/// an any-host one behind routes on 15 names.
pub(crate) const MAX_REDIRECT_POLICIES: usize = 16;

/// The rules of a Gateway claim by what each tests, as the policy carries them: host, path,
/// headers, then the inverted rules of the hosts of more specific listeners.
pub(crate) struct ClaimRules {
    pub host: Option<Rule>,
    pub path: Option<Rule>,
    pub headers: Vec<Rule>,
    pub exclusions: Vec<Rule>,
}

/// HOST_NAME REGEX `^<host>(:[0-9]+)?$` (case-insensitive in haproxy, any `:port`).
pub(crate) fn host_name_rule(host: &str) -> Rule {
    Rule {
        rule_type: RuleType::HostName,
        compare_type: CompareType::Regex,
        value: format!("^{}{PORT_SUFFIX}$", host_regex(host)),
        invert: false,
        key: None,
    }
}

impl ClaimRules {
    /// The rules of `r`, which must not catch the `excluded` hosts.
    pub(crate) fn of(r: &RouteClaim, excluded: &[String]) -> Self {
        let patterns: Vec<String> = excluded.iter().map(|h| host_regex(h)).collect();
        let others = !r.host.is_empty() || !r.headers.is_empty() || !patterns.is_empty();
        ClaimRules {
            host: (!r.host.is_empty()).then(|| host_name_rule(&r.host)),
            path: path_match_rule(&r.path, others),
            headers: r.headers.iter().map(header_rule).collect(),
            exclusions: exclusion_rules(&patterns),
        }
    }

    /// In the policy's order.
    pub(crate) fn into_rules(self) -> Vec<Rule> {
        let mut rules = Vec::with_capacity(2 + self.headers.len() + self.exclusions.len());
        rules.extend(self.host);
        rules.extend(self.path);
        rules.extend(self.headers);
        rules.extend(self.exclusions);
        rules
    }
}

/// A listener's policy and the claim it serves, in position order.
pub(crate) struct Routed<'a> {
    pub claim: &'a RouteClaim,
    /// The hosts of more specific listeners the claim must not catch.
    pub excluded: &'a [String],
    pub policy: Policy,
}

/// What a set of requests asks for: a host (empty: any; less the `excluded`), a path and
/// headers.
#[derive(Clone, Copy)]
struct Scope<'a> {
    host: &'a str,
    path: &'a PathMatch,
    headers: &'a [HeaderMatch],
    excluded: &'a [String],
}

impl<'a> Scope<'a> {
    fn of(r: &'a Routed<'_>) -> Self {
        Scope { host: &r.claim.host, path: &r.claim.path, headers: &r.claim.headers, excluded: r.excluded }
    }
}

/// The listener's policies with each redirect kept behind the forwarding policies before it
/// (see the module docs); a redirect over the budget is left out with a warning.
pub(crate) fn redirects_after_routes(listed: Vec<Routed<'_>>, warnings: &mut Vec<Warning>) -> Vec<Policy> {
    let plans: Vec<Option<Result<Vec<Vec<Rule>>, String>>> = (0..listed.len())
        .map(|i| {
            listed[i].policy.redirect.as_ref()?;
            let earlier: Vec<&Routed<'_>> = listed[..i].iter().filter(|f| f.policy.redirect.is_none()).collect();
            Some(expansions(&listed[i], &earlier))
        })
        .collect();
    let mut out = Vec::with_capacity(listed.len());
    for (r, plan) in listed.into_iter().zip(plans) {
        match plan {
            None => out.push(r.policy),
            Some(Ok(sets)) => out.extend(expanded(r.policy, sets)),
            Some(Err(why)) => {
                let c = r.claim;
                let message = format!("{}: {} ({}) is not served: {why}", c.owner_ref(), c.describe(), c.origin());
                warn(warnings, c.owner_ref(), message);
            }
        }
    }
    out
}

fn warn(out: &mut Vec<Warning>, object: &KubeRef, message: String) {
    out.push(Warning { object: object.clone(), reason: Reason::InvalidRule, message });
}

/// The redirect's policies: the first keeps its name (a redirect with nothing before it is
/// unchanged), the others `<name>#<n>`.
fn expanded(policy: Policy, sets: Vec<Vec<Rule>>) -> Vec<Policy> {
    let n = sets.len();
    let mut out = Vec::with_capacity(n);
    for (k, rules) in sets.into_iter().enumerate() {
        let name = if k == 0 { policy.name.clone() } else { bounded(format!("{}#{}", policy.name, k + 1)) };
        out.push(Policy { name, rules, ..policy.clone() });
    }
    out
}

/// The rules of each policy redirect `r` becomes behind the forwarding policies `earlier`
/// (before it, in order); `Err`: over the budget, why.
fn expansions(r: &Routed<'_>, earlier: &[&Routed<'_>]) -> Result<Vec<Vec<Rule>>, String> {
    let own = Scope::of(r);
    let over: Vec<&Routed<'_>> = earlier.iter().copied().filter(|f| overlaps(Scope::of(f), own)).collect();
    if over.is_empty() {
        return Ok(vec![r.policy.rules.clone()]);
    }
    // The exact hosts to split a wildcard or any-host redirect by, sorted.
    let split: std::collections::BTreeSet<&str> = if is_exact(own.host) {
        Default::default()
    } else {
        over.iter().map(|f| f.claim.host.as_str()).filter(|h| is_exact(h)).collect()
    };
    let own_host_rule = (!own.host.is_empty()).then(|| host_name_rule(own.host));
    let mut branches: Vec<(Vec<Rule>, Scope<'_>)> = Vec::with_capacity(split.len() + 1);
    for host in &split {
        let mut base: Vec<Rule> =
            r.policy.rules.iter().filter(|x| Some(*x) != own_host_rule.as_ref()).cloned().collect();
        base.insert(0, host_name_rule(host));
        branches.push((base, Scope { host, ..own }));
    }
    let mut rest = r.policy.rules.clone();
    rest.extend(exclusion_rules(&split.iter().map(|h| host_regex(h)).collect::<Vec<_>>()));
    branches.push((rest, own));
    let mut out = Vec::new();
    for (base, scope) in branches {
        let relevant = over.iter().filter(|f| !split.contains(f.claim.host.as_str()) || scope.host == f.claim.host);
        let escapes: Vec<Vec<Rule>> =
            relevant.filter(|f| overlaps(Scope::of(f), scope)).map(|f| escapes(f, scope)).collect();
        let Some(sets) = product(escapes, &base) else {
            return Err(over_budget(over.len(), None));
        };
        for set in sets {
            let mut rules = base.clone();
            rules.extend(set);
            if rules.len() > MAX_RULES {
                return Err(over_budget(over.len(), Some(rules.len())));
            }
            out.push(rules);
        }
        if out.len() > MAX_REDIRECT_POLICIES {
            return Err(over_budget(over.len(), None));
        }
    }
    Ok(out)
}

fn over_budget(routes: usize, rules: Option<usize>) -> String {
    let what = match rules {
        Some(n) => format!("a policy of {n} rules, Octavia allows {MAX_RULES} per policy"),
        None => format!("more than {MAX_REDIRECT_POLICIES} policies, the most a redirect may become"),
    };
    format!(
        "haproxy runs a redirect before any route, so to leave their requests to the {routes} forwarding policies of \
         higher precedence it overlaps, the redirect would need {what}"
    )
}

fn is_exact(host: &str) -> bool {
    !host.is_empty() && !is_wildcard(host)
}

/// Every name `inner` matches, `outer` matches (an empty host: any).
fn host_within(inner: &str, outer: &str) -> bool {
    outer.is_empty() || inner == outer || (!inner.is_empty() && is_wildcard(outer) && host_matches(outer, inner))
}

fn hosts_overlap(a: &str, b: &str) -> bool {
    host_within(a, b) || host_within(b, a)
}

/// Every path `inner` matches, `outer` matches (a regular expression only itself).
fn path_within(inner: &PathMatch, outer: &PathMatch) -> bool {
    let under = |path: &str, prefix: &str| {
        let p = normalize_prefix(prefix);
        p == "/" || path == p || path.strip_prefix(p).is_some_and(|rest| rest.starts_with('/'))
    };
    match (inner, outer) {
        (PathMatch::Exact(a), PathMatch::Exact(b)) => a == b,
        (PathMatch::Exact(a), PathMatch::Prefix(p)) => under(a, p),
        (PathMatch::Prefix(a), PathMatch::Prefix(p)) => under(normalize_prefix(a), p),
        (PathMatch::Regex(a), PathMatch::Regex(b)) => a == b,
        _ => false,
    }
}

fn paths_overlap(a: &PathMatch, b: &PathMatch) -> bool {
    matches!(a, PathMatch::Regex(_)) || matches!(b, PathMatch::Regex(_)) || path_within(a, b) || path_within(b, a)
}

/// The same header asked with two different exact values: no request has both.
fn headers_exclude(a: &[HeaderMatch], b: &[HeaderMatch]) -> bool {
    let exact = |h: &HeaderMatch| h.kind == HeaderMatchKind::Exact;
    a.iter()
        .filter(|x| exact(x))
        .any(|x| b.iter().filter(|y| exact(y)).any(|y| x.name.eq_ignore_ascii_case(&y.name) && x.value != y.value))
}

/// Can a request match both? `false` only when it surely cannot.
fn overlaps(a: Scope<'_>, b: Scope<'_>) -> bool {
    let isolated = |x: Scope<'_>, y: Scope<'_>| !x.host.is_empty() && y.excluded.iter().any(|e| host_within(x.host, e));
    hosts_overlap(a.host, b.host)
        && paths_overlap(a.path, b.path)
        && !headers_exclude(a.headers, b.headers)
        && !isolated(a, b)
        && !isolated(b, a)
}

fn negated(mut r: Rule) -> Rule {
    r.invert = !r.invert;
    r
}

/// The ways a request of `scope` misses forwarding policy `f`: its conditions that not every
/// such request meets, each inverted. None: `f` takes every request of the scope.
fn escapes(f: &Routed<'_>, scope: Scope<'_>) -> Vec<Rule> {
    let rules = ClaimRules::of(f.claim, f.excluded);
    let mut out = Vec::new();
    out.extend(rules.host.filter(|_| !host_within(scope.host, &f.claim.host)).map(negated));
    out.extend(rules.path.filter(|_| !path_within(scope.path, &f.claim.path)).map(negated));
    for (h, rule) in f.claim.headers.iter().zip(rules.headers) {
        if !scope.headers.contains(h) {
            out.push(negated(rule));
        }
    }
    let none_excluded = !scope.host.is_empty() && !f.excluded.iter().any(|e| hosts_overlap(e, scope.host));
    if !none_excluded {
        out.extend(rules.exclusions.into_iter().map(negated));
    }
    out
}

/// Policies beyond which [`product`] stops (its sets only shrink in number by absorption
/// afterwards, never below what one forwarding policy more multiplies).
const MAX_SETS: usize = MAX_REDIRECT_POLICIES * 4;

/// The minimal sets of escape rules that miss every forwarding policy (one escape of each,
/// `escapes[i]` those of the i-th), without a set that contradicts itself or `base`. `None`:
/// more than [`MAX_SETS`] on the way.
fn product(escapes: Vec<Vec<Rule>>, base: &[Rule]) -> Option<Vec<Vec<Rule>>> {
    let mut sets: Vec<Vec<Rule>> = vec![Vec::new()];
    for alternatives in escapes {
        let mut next = Vec::with_capacity(sets.len() * alternatives.len().max(1));
        for set in &sets {
            if alternatives.iter().any(|a| set.contains(a)) {
                next.push(set.clone());
                continue;
            }
            for a in &alternatives {
                let mut grown = set.clone();
                grown.push(a.clone());
                grown.sort();
                next.push(grown);
            }
        }
        sets = minimal(next, base);
        if sets.len() > MAX_SETS {
            return None;
        }
    }
    Some(sets)
}

/// A rule and its inverse in one policy: it matches nothing.
fn contradicts(set: &[Rule], base: &[Rule]) -> bool {
    set.iter().any(|r| {
        let inverse = negated(r.clone());
        set.contains(&inverse) || base.contains(&inverse)
    })
}

/// `sets` without the duplicates, the self-contradicting ones and those that contain another
/// (a policy of fewer rules matches all the requests of one with more).
fn minimal(mut sets: Vec<Vec<Rule>>, base: &[Rule]) -> Vec<Vec<Rule>> {
    sets.retain(|s| !contradicts(s, base));
    sets.sort_by_key(Vec::len);
    let mut out: Vec<Vec<Rule>> = Vec::with_capacity(sets.len());
    for s in sets {
        if !out.iter().any(|kept| kept.iter().all(|r| s.contains(r))) {
            out.push(s);
        }
    }
    out
}

#[cfg(test)]
#[path = "redirect_order_tests.rs"]
mod tests;
