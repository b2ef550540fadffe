//! The Gateway API core conformance tests (v1.6.1), restated in our own fixtures under
//! tests/fixtures/gateway/: each case file holds a `ConformanceCase` document (our own kind:
//! the expected conditions and request -> answer table, read from the upstream Go test) and the
//! objects of the test. The pure translation must produce those conditions, and the ordered
//! route entries must answer those requests (checked here with a tiny matcher; the data-plane
//! proof through haproxy is separate).

use kuryr_l7_router::gateway::build::{Programmed, Translation, translate};
use kuryr_l7_router::gateway::status::Cond;
use kuryr_l7_router::gateway::world::{SecretInfo, World};
use kuryr_l7_router::gateway::{Action, BackendTarget, HeaderMatch, PathMatch, RouteEntry};
use std::path::Path;

#[path = "support/gateway_case.rs"]
mod gateway_case;
use gateway_case::{Case, CaseRequest, split};

fn load(file: &Path) -> (Case, Translation) {
    let text = std::fs::read_to_string(file).unwrap();
    let base = std::fs::read_to_string("tests/fixtures/gateway/base.yaml").unwrap();
    let case_doc = text.split("\n---\n").next().unwrap();
    let case: Case = serde_saphyr::from_str(case_doc).unwrap_or_else(|e| panic!("{}: case: {e}", file.display()));
    assert_eq!(case.kind, "ConformanceCase");
    let mut world = World::default();
    world.add_yaml(&base).unwrap();
    world.add_yaml(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    for s in &case.tls_secrets {
        world.secrets.insert(split(s), SecretInfo::Tls);
    }
    // Every Gateway of ours is programmed (the data plane answers with an address).
    let programmed: Programmed = world
        .gateways
        .iter()
        .map(|g| {
            ((g.metadata.namespace.clone().unwrap(), g.metadata.name.clone().unwrap()), vec!["192.0.2.10".to_string()])
        })
        .collect();
    let t = translate(&world, &programmed);
    (case, t)
}

/// `True`, `False`, `True/Reason` or `False/Reason` against a condition.
fn check_cond(what: &str, c: Option<&Cond>, want: &str) -> Result<(), String> {
    let c = c.ok_or_else(|| format!("{what}: no condition"))?;
    let (status, reason) = want.split_once('/').unwrap_or((want, ""));
    let got = if c.ok { "True" } else { "False" };
    if got != status || (!reason.is_empty() && reason != c.reason) {
        return Err(format!("{what}: want {want}, got {got}/{} ({})", c.reason, c.message));
    }
    Ok(())
}

fn check_status(case: &Case, t: &Translation) -> Vec<String> {
    let mut errs = Vec::new();
    for c in &case.classes {
        match t.classes.iter().find(|o| o.name == c.name) {
            None => errs.push(format!("GatewayClass {}: no status", c.name)),
            Some(o) => {
                errs.extend(
                    check_cond(&format!("GatewayClass {} Accepted", c.name), Some(&o.accepted), &c.accepted).err(),
                );
                if o.generation != Some(c.observed_generation) {
                    errs.push(format!(
                        "GatewayClass {}: observedGeneration want {}, got {:?}",
                        c.name, c.observed_generation, o.generation
                    ));
                }
            }
        }
    }
    for g in &case.gateways {
        let (ns, name) = split(&g.gateway);
        let Some(o) = t.gateway(&ns, &name) else {
            errs.push(format!("Gateway {ns}/{name}: no status"));
            continue;
        };
        for (k, v) in &g.conditions {
            errs.extend(check_cond(&format!("Gateway {name} {k}"), o.condition(k), v).err());
        }
        if let Some(n) = g.observed_generation.filter(|n| o.generation != Some(*n)) {
            errs.push(format!("Gateway {name}: observedGeneration want {n}, got {:?}", o.generation));
        }
        for l in &g.listeners {
            let Some(lo) = o.listener(&l.name) else {
                errs.push(format!("Gateway {name} listener {}: absent", l.name));
                continue;
            };
            if let Some(n) = l.attached_routes.filter(|n| *n != lo.attached_routes) {
                errs.push(format!(
                    "Gateway {name} listener {}: attachedRoutes want {n}, got {}",
                    l.name, lo.attached_routes
                ));
            }
            if let Some(n) = l.supported_kinds.filter(|n| *n != lo.supported_kinds.len()) {
                errs.push(format!(
                    "Gateway {name} listener {}: supportedKinds want {n}, got {:?}",
                    l.name, lo.supported_kinds
                ));
            }
            for (k, v) in &l.conditions {
                errs.extend(check_cond(&format!("Gateway {name} listener {} {k}", l.name), lo.condition(k), v).err());
            }
        }
    }
    for r in &case.routes {
        let (ns, name) = split(&r.route);
        let Some(o) = t.route(&ns, &name) else {
            errs.push(format!("HTTPRoute {ns}/{name}: no status"));
            continue;
        };
        for (k, v) in &r.conditions {
            errs.extend(
                check_cond(&format!("HTTPRoute {name} parent {} {k}", r.parent), o.condition(&r.parent, k), v).err(),
            );
        }
        if let Some(n) = r.observed_generation.filter(|n| o.generation != Some(*n)) {
            errs.push(format!("HTTPRoute {name}: observedGeneration want {n}, got {:?}", o.generation));
        }
    }
    errs
}

fn host_ok(e: &RouteEntry, host: &str) -> bool {
    // The Host header may carry a port; hosts match without it.
    let host = host.rsplit_once(':').map_or(host, |(h, _)| h);
    let m = |p: &str| kuryr_l7_router::gateway::hostnames::matches(p, host);
    e.host.as_deref().is_none_or(m) && !e.excluded_hosts.iter().any(|x| m(x))
}

fn entry_matches(e: &RouteEntry, r: &CaseRequest, host: &str) -> bool {
    let path_ok = match &e.path {
        PathMatch::Regex(re) => regex::Regex::new(&format!("^(?:{re})")).unwrap().is_match(&r.path),
        p => p.matches(&r.path).unwrap(),
    };
    let header = |name: &str| r.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str());
    let headers_ok = e.headers.iter().all(|h| match h {
        HeaderMatch::Exact { name, value } => header(name) == Some(value.as_str()),
        HeaderMatch::Regex { name, value } => {
            header(name).is_some_and(|v| regex::Regex::new(value).unwrap().is_match(v))
        }
    });
    host_ok(e, host) && path_ok && headers_ok
}

fn answer(t: &Translation, r: &CaseRequest) -> String {
    let (ns, name) = split(r.gateway.as_deref().unwrap_or("same-namespace"));
    let Some(router) = t.router(&ns, &name) else { return format!("no router for {ns}/{name}") };
    let port = r.port.unwrap_or(80);
    let Some(pr) = router.listeners.iter().find(|p| p.port == port) else {
        return format!("no listener on port {port}");
    };
    // The conformance client sends the Gateway's address as Host when the test sets none.
    let host = r.host.clone().unwrap_or_else(|| "192.0.2.10".into());
    let Some(e) = pr.entries.iter().find(|e| entry_matches(e, r, &host)) else { return "404".into() };
    match &e.action {
        Action::Fixed(code) => code.to_string(),
        Action::Redirect(rd) => format!("{} {}", rd.code, rd.prefix),
        Action::Forward { backends, .. } => {
            let names: Vec<String> = backends
                .iter()
                .filter(|b| b.weight > 0)
                .map(|b| match &b.target {
                    BackendTarget::Service { name, .. } => name.clone(),
                    BackendTarget::Status500 => "500".into(),
                })
                .collect();
            names.join("|")
        }
    }
}

#[test]
fn conformance_cases() {
    let mut files: Vec<_> =
        std::fs::read_dir("tests/fixtures/gateway/cases").unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    assert!(files.len() >= 20, "the case files are missing");
    let mut failures = Vec::new();
    for f in &files {
        let (case, t) = load(f);
        let mut errs = check_status(&case, &t);
        for r in &case.requests {
            let got = answer(&t, r);
            if got != r.answer {
                errs.push(format!("{:?} {} {:?}: want {}, got {got}", r.host, r.path, r.headers, r.answer));
            }
        }
        if !errs.is_empty() {
            failures.push(format!("{} ({}):\n  {}", case.test, f.display(), errs.join("\n  ")));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
