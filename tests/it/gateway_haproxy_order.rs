//! Issue 33: haproxy runs every `redirect` (an Octavia REDIRECT_PREFIX policy) before any
//! `use_backend` (REDIRECT_TO_POOL), whatever the policies' positions. Every Gateway case of
//! tests/fixtures/gateway/ (the upstream tests' and the project's own) is translated to its
//! routers (`gateway::router::translate_gateway`), and each request of its table must get from
//! the policies in haproxy's order the policy the positions give it (the spec's precedence);
//! the own cases' requests must also get their expected answer that way. The data-plane proof
//! of the same is `functional_dataplane` `gateway::gateway_api_own_cases_through_octavia_rendered_haproxy`.

use crate::gateway_conformance::load;
use crate::support::gateway_case::{Case, CaseRequest, split};
use crate::support::haproxy_eval::{haproxy_policy, positional_policy};
use kuryr_l7_router::gateway::router::{GatewayRouter, translate_gateway};
use kuryr_l7_router::model::{Policy, RedirectTarget, SERVER_ERROR_POOL};
use kuryr_l7_router::translate::manifest::load_str;
use kuryr_l7_router::translate::{Inputs, TranslateOptions};
use std::path::{Path, PathBuf};

/// Where the conformance client sends a request without a host: the Gateway's address.
const ADDRESS: &str = "192.0.2.10";

fn files(dir: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    assert!(!files.is_empty(), "{dir}: no case");
    files
}

/// The case and the routers of its Gateways.
fn routers_of(file: &Path) -> (Case, Vec<GatewayRouter>) {
    let (case, t) = load(file);
    let mut inputs = Inputs::default();
    for f in [Path::new("tests/fixtures/gateway/base.yaml"), file] {
        load_str(&std::fs::read_to_string(f).unwrap(), f, &mut inputs)
            .unwrap_or_else(|e| panic!("{}: {e}", f.display()));
    }
    let routers = t.routers.iter().map(|r| translate_gateway(r, &inputs, &TranslateOptions::default())).collect();
    (case, routers)
}

/// The policies of the router's listener on `port`.
fn listener(r: &GatewayRouter, port: u16) -> Option<&[Policy]> {
    let d = &r.desired;
    if r.http_port == Some(port) {
        return Some(&d.policies);
    }
    if let Some(l) = d.more_http.get(&port) {
        return Some(&l.policies);
    }
    if let Some(h) = d.https.as_ref().filter(|h| h.port == port) {
        return Some(&h.policies);
    }
    d.more_https.get(&port).map(|h| h.policies.as_slice())
}

/// The case table's spelling of what a policy answers (no policy: the 404 of the default pool).
fn answer_of(r: &GatewayRouter, p: Option<&Policy>) -> String {
    let Some(p) = p else { return "404".into() };
    match &p.redirect {
        Some(d) => {
            let (RedirectTarget::Prefix(t) | RedirectTarget::Url(t)) = &d.target;
            format!("{} {t}", d.code)
        }
        None if p.pool == SERVER_ERROR_POOL => "500".into(),
        None => {
            r.desired.pools.get(&p.pool).map_or_else(|| format!("pool {}", p.pool), |pool| pool.service.name.clone())
        }
    }
}

/// What went wrong with one request of a case: haproxy's policy is not the positions' one, or
/// (`check_answer`) its answer is not the table's. `Ok(false)`: no listener to send it to (a
/// request the table expects no router or listener for: the other tests check those).
fn check(routers: &[GatewayRouter], q: &CaseRequest, check_answer: bool) -> Result<bool, String> {
    let (ns, name) = split(q.gateway.as_deref().unwrap_or("same-namespace"));
    let Some(router) = routers.iter().find(|r| r.owner.namespace == ns && r.owner.name == name) else {
        return Ok(false);
    };
    let Some(policies) = listener(router, q.port.unwrap_or(80)) else { return Ok(false) };
    let host = q.host.as_deref().unwrap_or(ADDRESS);
    let headers = |n: &str| q.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(n)).map(|(_, v)| v.clone());
    let haproxy = haproxy_policy(policies, host, &q.path, &headers);
    let positional = positional_policy(policies, host, &q.path, &headers);
    let what =
        |p: Option<&Policy>| p.map(|p| (p.owner.clone(), p.description.clone(), p.pool.clone(), p.redirect.clone()));
    if what(haproxy) != what(positional) {
        return Err(format!(
            "{host}{} {:?}: haproxy answers {} ({:?}), the positions say {} ({:?})",
            q.path,
            q.headers,
            answer_of(router, haproxy),
            haproxy.map(|p| &p.name),
            answer_of(router, positional),
            positional.map(|p| &p.name)
        ));
    }
    let got = answer_of(router, haproxy);
    if check_answer && got != q.answer {
        return Err(format!("{host}{}: want {}, haproxy answers {got}", q.path, q.answer));
    }
    Ok(true)
}

/// The failures of the cases of `dir`, and how many requests were checked.
fn failures(dir: &str, check_answer: bool) -> (Vec<String>, usize) {
    let (mut out, mut checked) = (Vec::new(), 0);
    for f in files(dir) {
        let (case, routers) = routers_of(&f);
        let mut errs = Vec::new();
        for q in &case.requests {
            match check(&routers, q, check_answer) {
                Ok(sent) => checked += usize::from(sent),
                Err(e) => errs.push(e),
            }
        }
        if !errs.is_empty() {
            out.push(format!("{} ({}):\n  {}", case.test, f.display(), errs.join("\n  ")));
        }
    }
    (out, checked)
}

#[test]
fn the_own_cases_get_their_answers_with_redirects_run_first() {
    let (failures, checked) = failures("tests/fixtures/gateway/own", true);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // redirect-shadows-a-more-precise-route (4) and listenerset-redirect-keeps-host (8).
    assert!(checked >= 12, "{checked} requests checked");
}

#[test]
fn every_upstream_case_is_served_in_the_positions_order_with_redirects_run_first() {
    let (failures, checked) = failures("tests/fixtures/gateway/cases", false);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(checked >= 100, "{checked} requests checked");
}
