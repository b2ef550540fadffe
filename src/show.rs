//! `show`: the L7 router as Octavia has it, read back (not the plan): the load balancer, its
//! addresses, its listeners (one row each, with the client CA and mode of an HTTPS one), the L7
//! policies in position order with their rules and target pool, the listener default pool, each
//! more HTTP and HTTPS listener, and the pools with their members. The driver reads it
//! (`Router::snapshot`); this module only renders it.

use crate::driver::actual::{ActualPolicy, ActualPool, ActualRule};
use crate::driver::{ClientCaSnapshot, HttpsSnapshot, MoreHttpSnapshot, RouterSnapshot};
use crate::model::DesiredRouter;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::net::IpAddr;

fn rule_text(r: &ActualRule) -> String {
    let key = r.key.as_deref().map(|k| format!("[{k}] ")).unwrap_or_default();
    format!("{}{} {} {key}{}", if r.invert { "NOT " } else { "" }, r.rule_type, r.compare_type, r.value)
}

/// Policies in position order with their target (pool, or redirect) and rules.
fn write_policies(s: &mut String, policies: &[ActualPolicy], pool_name: &dyn Fn(Option<&str>) -> String) {
    let _ = writeln!(s, "  {:>3}  {:<20}  NAME / RULES (all must match)", "POS", "-> POOL");
    for p in policies {
        let target = match &*p.action {
            "REDIRECT_TO_POOL" => pool_name(p.redirect_pool_id.as_ref().map(|id| id.text()).as_deref()),
            "REDIRECT_PREFIX" => format!(
                "{} {}",
                p.redirect_http_code.map(|c| c.to_string()).unwrap_or_else(|| "302".into()),
                p.redirect_prefix.as_deref().unwrap_or("-")
            ),
            other => other.to_string(),
        };
        let disabled = if p.admin_state_up { "" } else { "  [disabled]" };
        let _ = writeln!(s, "  {:>3}  {:<20}  {}{disabled}", p.position, target, p.name);
        if p.rules.is_empty() {
            let _ = writeln!(s, "  {:>3}  {:<20}    (no rules: haproxy skips this policy)", "", "");
        }
        for r in p.rules.iter() {
            let _ = writeln!(s, "  {:>3}  {:<20}    {}", "", "", rule_text(r));
        }
    }
}

/// An HTTPS listener (the main one, or a more port's): its client CA and certificates (Barbican
/// names and public facts, never content), its policies and default pool.
fn write_https(s: &mut String, h: &HttpsSnapshot, pool_name: &dyn Fn(Option<&str>) -> String) {
    let _ = writeln!(s, "\nHTTPS LISTENER {} (TERMINATED_HTTPS port {})", h.listener_id, h.port);
    if let Some(ca) = &h.client_ca {
        let _ = writeln!(s, "  CLIENT CERTIFICATES: {} against {}", ca.mode, client_ca_name(ca));
        if let Some(secret_ref) = &ca.secret_ref {
            let m = |k: &str| ca.metadata.get(k).map(String::as_str).unwrap_or("-");
            let _ = writeln!(s, "      secret {secret_ref}");
            let _ = writeln!(s, "      source {}  sha256 {}", m("client-ca"), m("sha256"));
        }
    }
    let _ = writeln!(s, "  CERTIFICATES ({}, SNI)", h.certificates.len());
    for c in &h.certificates {
        let m = |k: &str| c.metadata.get(k).map(String::as_str).unwrap_or("-");
        let name = if c.name.is_empty() { UNREADABLE } else { c.name.as_str() };
        let default = if c.default { "  [default]" } else { "" };
        let _ = writeln!(s, "  {name}{default}");
        let _ = writeln!(s, "      secret {}", c.secret_ref);
        let _ = writeln!(s, "      subject {}  sha256 {}  not after {}", m("subject"), m("sha256"), m("not-after"));
    }
    let _ = writeln!(s, "  L7 POLICIES ({})", h.actual.policies.len());
    write_policies(s, &h.actual.policies, pool_name);
    let _ = writeln!(s, "  DEFAULT POOL: {}", pool_name(h.actual.listener.default_pool_id.as_deref()));
}

/// What `show` says of a secret Barbican does not describe to us.
const UNREADABLE: &str = "(not readable in Barbican)";

/// A client CA by its Barbican secret's name (never its content).
fn client_ca_name(ca: &ClientCaSnapshot) -> &str {
    match (&ca.secret_ref, ca.name.as_str()) {
        (None, _) => "(no client CA)",
        (Some(_), "") => UNREADABLE,
        (Some(_), name) => name,
    }
}

/// One line a listener of the router: protocol, port, policy count, certificate count, and the
/// client CA with its mode where set, in the order of the sections below it.
fn write_listeners(s: &mut String, v: &RouterSnapshot) {
    let mut rows: Vec<String> = Vec::new();
    let mut row =
        |protocol: &str, port: u16, policies: usize, certificates: Option<usize>, ca: Option<&ClientCaSnapshot>| {
            let certificates = certificates.map_or("-".to_string(), |n| n.to_string());
            let ca = ca.map_or("-".to_string(), |ca| format!("{:<9} {}", ca.mode, client_ca_name(ca)));
            rows.push(format!("  {protocol:<16} {port:>5} {policies:>8} {certificates:>12}  {ca}"));
        };
    if let (Some((_, port)), Some(a)) = (&v.listener, &v.actual) {
        row("HTTP", *port, a.policies.len(), None, None);
    }
    for m in &v.more_http {
        row("HTTP", m.port, m.actual.policies.len(), None, None);
    }
    for h in v.https.iter().chain(&v.more_https) {
        row("TERMINATED_HTTPS", h.port, h.actual.policies.len(), Some(h.certificates.len()), h.client_ca.as_ref());
    }
    for o in &v.other_listeners {
        let what = format!("(not read: {} {})", o.name, o.id);
        rows.push(format!("  {:<16} {:>5} {:>8} {:>12}  {what}", o.protocol, o.port, "-", "-"));
    }
    let _ = writeln!(s, "\nLISTENERS ({})", rows.len());
    let _ = writeln!(s, "  {:<16} {:>5} {:>8} {:>12}  CLIENT CA", "PROTOCOL", "PORT", "POLICIES", "CERTIFICATES");
    for r in rows {
        let _ = writeln!(s, "{r}");
    }
}

/// A more HTTP listener (a Gateway's other HTTP port): its policies and default pool.
fn write_more_http(s: &mut String, m: &MoreHttpSnapshot, pool_name: &dyn Fn(Option<&str>) -> String) {
    let _ = writeln!(s, "\nHTTP LISTENER {} (HTTP port {})", m.listener_id, m.port);
    let _ = writeln!(s, "  L7 POLICIES ({}), first match wins", m.actual.policies.len());
    write_policies(s, &m.actual.policies, pool_name);
    let _ = writeln!(s, "  DEFAULT POOL: {}", pool_name(m.actual.listener.default_pool_id.as_deref()));
}

/// The readable table.
pub fn render(v: &RouterSnapshot) -> String {
    render_with(v, None)
}

/// What `show` says beyond Octavia's objects: the router zone (from the configuration) and, when
/// manifests are given (`show -f`), the desired router translated from them exactly as `plan`
/// does, for each pool's weighting reason (Octavia keeps no reason, and members carry no zone).
pub struct Reasons<'a> {
    pub router_zone: String,
    pub desired: Option<&'a DesiredRouter>,
}

/// The lines `show` prints under a pool about its weights.
pub fn weighting_lines(pool: &ActualPool, desired: Option<&DesiredRouter>) -> Vec<String> {
    let Some(d) = desired else {
        return vec![];
    };
    let Some(want) = d.pools.get(&pool.name) else {
        return vec!["weighting: (pool not in the manifests given)".into()];
    };
    let mut lines = vec![format!("members: {}", want.member_mode), format!("weighting: {}", want.weighting)];
    let planned: BTreeMap<(IpAddr, u16), (u16, bool)> =
        want.members.iter().map(|m| ((m.address, m.protocol_port), (m.weight, m.backup))).collect();
    let held: BTreeMap<(IpAddr, u16), (u16, bool)> =
        pool.members.iter().map(|m| ((m.address, m.protocol_port), (m.weight, m.backup))).collect();
    if planned != held {
        lines.push(
            "(the members on Octavia differ from the plan for these manifests: the controller converges them)".into(),
        );
    }
    lines
}

pub fn render_with(v: &RouterSnapshot, reasons: Option<&Reasons<'_>>) -> String {
    let mut s = String::new();
    let lb = &v.lb;
    let _ = writeln!(s, "L7 ROUTER {}", lb.name);
    let _ = writeln!(s, "  load balancer   {}", lb.id);
    let _ = writeln!(s, "  status          provisioning {}, operating {}", lb.provisioning_status, lb.operating_status);
    let _ = writeln!(
        s,
        "  VIP             {} (port {})",
        lb.vip_address.as_deref().unwrap_or("-"),
        lb.vip_port_id.as_deref().unwrap_or("-")
    );
    let _ = writeln!(s, "  floating IP     {}", v.floating_ip.as_deref().unwrap_or("-"));
    let _ = writeln!(
        s,
        "  provider / AZ   {} / {}",
        lb.provider.as_deref().unwrap_or("-"),
        lb.availability_zone.as_deref().unwrap_or("-")
    );
    if let Some(r) = reasons {
        let _ = writeln!(s, "  {}", r.router_zone);
    }
    let (Some((listener_id, port)), Some(a)) = (&v.listener, &v.actual) else {
        let _ = writeln!(s, "  listener        (none: the router has no HTTP listener yet)");
        write_listeners(&mut s, v);
        return s;
    };
    let _ = writeln!(s, "  listener        {listener_id} (HTTP port {port})");
    write_listeners(&mut s, v);

    let pool_names: BTreeMap<String, &str> = a.pools.iter().map(|p| (p.id.to_string(), p.name.as_str())).collect();
    let pool_name = |id: Option<&str>| match id {
        Some(id) => pool_names.get(id).map(|n| n.to_string()).unwrap_or_else(|| format!("(pool {id})")),
        None => "-".to_string(),
    };

    let _ = writeln!(s, "\nL7 POLICIES ({}), first match wins", a.policies.len());
    write_policies(&mut s, &a.policies, &pool_name);
    let _ = writeln!(
        s,
        "\nLISTENER DEFAULT POOL: {}",
        match &a.listener.default_pool_id {
            Some(id) => pool_name(Some(id)),
            None => "(none: requests no policy matches get 503)".into(),
        }
    );

    for m in &v.more_http {
        write_more_http(&mut s, m, &pool_name);
    }
    for h in v.https.iter().chain(&v.more_https) {
        write_https(&mut s, h, &pool_name);
    }

    let _ = writeln!(s, "\nPOOLS ({})", a.pools.len());
    let mut pools: Vec<_> = a.pools.iter().collect();
    pools.sort_by(|x, y| x.name.cmp(&y.name));
    for p in pools {
        let hm = match &p.healthmonitor {
            Some(h) if !h.spec.monitor_type.is_empty() => {
                let http = match (&h.spec.url_path, &h.spec.expected_codes) {
                    (Some(p), Some(c)) => format!(" GET {p} expecting {c}"),
                    _ => String::new(),
                };
                format!(", health monitor {}{http} every {}s", h.spec.monitor_type, h.spec.delay)
            }
            Some(_) => ", health monitor (not ours)".into(),
            None => String::new(),
        };
        let _ = writeln!(s, "  {}  ({}, {} member(s){hm})", p.name, p.lb_algorithm, p.members.len());
        for line in weighting_lines(p, reasons.and_then(|r| r.desired)) {
            let _ = writeln!(s, "      {line}");
        }
        if p.members.is_empty() {
            let _ = writeln!(s, "      (no members: requests routed here get 503)");
            continue;
        }
        let _ = writeln!(s, "      {:<40} {:>5} {:>6} {:>6}  NAME", "ADDRESS", "PORT", "WEIGHT", "BACKUP");
        let mut members: Vec<_> = p.members.iter().collect();
        members.sort_by_key(|m| (m.address, m.protocol_port));
        for m in members {
            let _ = writeln!(
                s,
                "      {:<40} {:>5} {:>6} {:>6}  {}{}",
                m.address.to_string(),
                m.protocol_port,
                m.weight,
                if m.backup { "yes" } else { "no" },
                m.name.whole(m.address, m.protocol_port),
                if m.admin_state_up { "" } else { " [disabled]" }
            );
        }
    }
    s
}

/// One policy with its rules, as `show -o json` prints it.
fn policy_json(p: &ActualPolicy) -> serde_json::Value {
    serde_json::json!({
        "id": p.id, "name": p.name, "position": p.position, "action": p.action,
        "redirect_pool_id": p.redirect_pool_id, "admin_state_up": p.admin_state_up,
        "redirect_prefix": p.redirect_prefix, "redirect_http_code": p.redirect_http_code,
        "rules": p.rules.iter().map(|r| serde_json::json!({
            "type": r.rule_type, "compare_type": r.compare_type, "key": r.key,
            "value": r.value, "invert": r.invert,
        })).collect::<Vec<_>>(),
    })
}

/// An HTTPS listener as `show -o json` prints it: certificates and client CA by Barbican name,
/// ref and metadata (never content), policies with their rules.
fn https_json(h: &HttpsSnapshot) -> serde_json::Value {
    use serde_json::json;
    json!({
        "listener_id": h.listener_id, "port": h.port,
        "default_pool_id": h.actual.listener.default_pool_id,
        "certificates": h.certificates.iter().map(|c| json!({
            "secret_ref": c.secret_ref, "name": c.name, "default": c.default, "metadata": c.metadata,
        })).collect::<Vec<_>>(),
        "client_ca": h.client_ca.as_ref().map(|ca| json!({
            "secret_ref": ca.secret_ref, "name": ca.name, "client_authentication": ca.mode, "metadata": ca.metadata,
        })),
        "policies": h.actual.policies.iter().map(policy_json).collect::<Vec<_>>(),
    })
}

/// JSON of the same view, for scripts (`show -o json`): ids, addresses, policies, pools, members.
pub fn render_json(v: &RouterSnapshot) -> String {
    use serde_json::json;
    let lb = &v.lb;
    let (policies, pools, default_pool_id) = match &v.actual {
        Some(a) => (
            a.policies
                .iter()
                .map(policy_json)
                .collect::<Vec<_>>(),
            a.pools
                .iter()
                .map(|p| {
                    json!({
                        "id": p.id, "name": p.name, "lb_algorithm": p.lb_algorithm,
                        "members": p.members.iter().map(|m| json!({
                            "id": m.id.to_string(), "name": m.name.whole(m.address, m.protocol_port), "address": m.address.to_string(),
                            "protocol_port": m.protocol_port, "weight": m.weight, "backup": m.backup,
                            "admin_state_up": m.admin_state_up,
                        })).collect::<Vec<_>>(),
                    })
                })
                .collect::<Vec<_>>(),
            a.listener.default_pool_id.clone(),
        ),
        None => (vec![], vec![], None),
    };
    let out = json!({
        "id": lb.id, "name": lb.name, "provisioning_status": lb.provisioning_status,
        "operating_status": lb.operating_status, "vip_address": lb.vip_address, "vip_port_id": lb.vip_port_id,
        "floating_ip": v.floating_ip, "listener_id": v.listener.as_ref().map(|l| l.0.clone()),
        "default_pool_id": default_pool_id, "policies": policies, "pools": pools,
        "more_http": v.more_http.iter().map(|m| json!({
            "listener_id": m.listener_id, "port": m.port,
            "default_pool_id": m.actual.listener.default_pool_id,
            "policies": m.actual.policies.iter().map(policy_json).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "https": v.https.as_ref().map(https_json),
        "more_https": v.more_https.iter().map(https_json).collect::<Vec<_>>(),
        "other_listeners": v.other_listeners.iter().map(|o| json!({
            "listener_id": o.id, "name": o.name, "protocol": o.protocol, "port": o.port,
        })).collect::<Vec<_>>(),
    });
    serde_json::to_string_pretty(&out).expect("JSON values always serialize")
}

/// A router `show` reads: one of the set (by index), or a Gateway's (by load-balancer name).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShownRouter {
    Set(crate::placement::RouterIndex),
    Gateway,
}

/// The routers `show` reads, by name: the first router always; with `scale_out`, every other
/// router of the set among `ours` (the names of the load balancers with our ownership tags),
/// by index; then the Gateways' routers among `ours`, by name. `wanted` (`--router NAME`)
/// keeps only that one, and is an error naming the routers there are when it is none of them.
pub fn routers_to_show(
    base: &str,
    scale_out: bool,
    ours: &[String],
    wanted: Option<&str>,
) -> Result<Vec<(String, ShownRouter)>, String> {
    let mut set: Vec<(crate::placement::RouterIndex, String)> = vec![(0, base.to_string())];
    if scale_out {
        set.extend(
            ours.iter()
                .filter_map(|n| crate::placement::router_index(base, n).filter(|i| *i > 0).map(|i| (i, n.clone()))),
        );
    }
    set.sort();
    set.dedup();
    let mut gateways: Vec<String> = ours.iter().filter(|n| n.starts_with(GATEWAY_PREFIX)).cloned().collect();
    gateways.sort();
    gateways.dedup();
    let all: Vec<(String, ShownRouter)> = set
        .into_iter()
        .map(|(i, n)| (n, ShownRouter::Set(i)))
        .chain(gateways.into_iter().map(|n| (n, ShownRouter::Gateway)))
        .collect();
    match wanted {
        None => Ok(all),
        Some(w) => match all.iter().find(|(n, _)| n == w) {
            Some(found) => Ok(vec![found.clone()]),
            None => Err(format!(
                "no router {w} of this controller; there are: {}",
                all.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(", ")
            )),
        },
    }
}

/// How every Gateway's load balancer name begins (`gateway::naming::load_balancer_name`).
const GATEWAY_PREFIX: &str = "kuryr-gw-";

#[cfg(test)]
mod router_list_tests {
    use super::*;

    /// The set's routers by index (a name outside the set, `edge-1` or another controller's,
    /// is not one), then the Gateways'; `--router` picks one, or names the routers there are.
    #[test]
    fn show_lists_every_router_of_the_set_then_the_gateways() {
        let ours: Vec<String> =
            ["edge-10", "kuryr-gw-00ff-shop.web", "edge-2", "edge-1", "other", "edge"].map(String::from).to_vec();
        let names = |v: Vec<(String, ShownRouter)>| v.into_iter().map(|(n, _)| n).collect::<Vec<_>>();
        assert_eq!(
            names(routers_to_show("edge", true, &ours, None).unwrap()),
            ["edge", "edge-2", "edge-10", "kuryr-gw-00ff-shop.web"]
        );
        assert_eq!(names(routers_to_show("edge", false, &ours, None).unwrap()), ["edge", "kuryr-gw-00ff-shop.web"]);
        assert_eq!(routers_to_show("edge", true, &[], None).unwrap(), [("edge".to_string(), ShownRouter::Set(0))]);
        assert_eq!(
            routers_to_show("edge", true, &ours, Some("edge-10")).unwrap(),
            [("edge-10".to_string(), ShownRouter::Set(9))]
        );
        let err = routers_to_show("edge", true, &ours, Some("other")).unwrap_err();
        assert!(err.contains("no router other") && err.contains("edge-2"), "{err}");
    }
}
