//! Human (`-o table`) and machine (`-o json`) views of a [`DesiredRouter`] for `plan`.
//! The JSON shape is the serde form of the model, documented in docs/plan-output.md.

use std::fmt::Write;

use crate::model::{CompareType, DesiredRouter, Policy, RedirectTarget, Rule, RuleType};

fn rule_text(r: &Rule) -> String {
    let t = match (r.rule_type, &r.key) {
        (RuleType::HostName, _) => "HOST_NAME".to_string(),
        (RuleType::Path, _) => "PATH".to_string(),
        (RuleType::Header, key) => format!("HEADER {}", key.as_deref().unwrap_or("")),
    };
    let c = match r.compare_type {
        CompareType::EqualTo => "EQUAL_TO",
        CompareType::StartsWith => "STARTS_WITH",
        CompareType::EndsWith => "ENDS_WITH",
        CompareType::Contains => "CONTAINS",
        CompareType::Regex => "REGEX",
    };
    format!("{}{t} {c} {}", if r.invert { "NOT " } else { "" }, r.value)
}

fn write_policies(s: &mut String, policies: &[Policy]) {
    for p in policies {
        let target = match &p.redirect {
            None => format!("pool {}", p.pool),
            Some(r) => match &r.target {
                RedirectTarget::Prefix(prefix) => format!("redirect {prefix} (HTTP {})", r.code),
                RedirectTarget::Url(url) => format!("redirect to {url} (HTTP {})", r.code),
            },
        };
        let _ = writeln!(s, "{:>4}  {}  -> {target}  [{}]", p.position, p.description, p.owner);
        let _ = writeln!(s, "      name: {}", p.name);
        for r in &p.rules {
            let _ = writeln!(s, "      rule: {}", rule_text(r));
        }
    }
}

/// The HTTPS listener: certificates (names, subjects, fingerprints; never keys), its policies,
/// and the HTTP listener's redirects.
fn write_https(s: &mut String, router: &DesiredRouter) {
    if !router.redirects.is_empty() {
        let _ = writeln!(s, "\nREDIRECTS ({}, HTTP listener)", router.redirects.len());
    }
    for r in &router.redirects {
        let _ = writeln!(s, "  redirect {} -> {} (HTTP {})  [{}]", r.host, r.prefix, r.code, r.owner);
        for rule in &r.rules {
            let _ = writeln!(s, "      rule: {}", rule_text(rule));
        }
    }
    let Some(https) = &router.https else {
        let _ = writeln!(s, "\nHTTPS LISTENER: none (no Ingress has spec.tls)");
        return;
    };
    for https in std::iter::once(https).chain(router.more_https.values()) {
        write_https_listener(s, https);
    }
}

/// One HTTPS listener: its port, client-certificate validation, certificates and policies.
fn write_https_listener(s: &mut String, https: &crate::model::HttpsListener) {
    let _ = writeln!(s, "\nHTTPS LISTENER (port {}, TERMINATED_HTTPS)", https.port);
    if let Some(v) = &https.client_validation {
        let _ = writeln!(
            s,
            "  CLIENT CERTIFICATES: {} against {} ({}, sha256 {:.16})",
            v.mode.as_octavia(),
            v.ca.name,
            v.ca.source,
            v.ca.content_id
        );
    }
    let _ = writeln!(s, "  CERTIFICATES ({}, default {})", https.certificates.len(), https.default_certificate);
    for c in https.certificates.values() {
        let _ = writeln!(s, "  {}  ({})  hosts: {}", c.name, c.secret, c.hosts.join(", "));
        match &c.content {
            Some(k) => {
                let _ = writeln!(
                    s,
                    "      subject: {}  sha256: {}  not after: {}  chain: {}  content: {}",
                    k.subject, k.fingerprint, k.not_after, k.chain_len, k.content_id
                );
            }
            None => {
                let _ =
                    writeln!(s, "      (no usable content: the last good one stored on the router is kept, if any)");
            }
        }
    }
    let _ = writeln!(s, "  POLICIES ({})", https.policies.len());
    write_policies(s, &https.policies);
}

/// Text view: policies in position order, the default pool, the HTTPS listener, pools with
/// members, warnings.
pub fn render_table(router: &DesiredRouter) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "POLICIES ({})", router.policies.len());
    write_policies(&mut s, &router.policies);
    let _ = writeln!(
        s,
        "\nDEFAULT POOL: {}",
        router.default_pool.as_deref().unwrap_or("(none: unmatched requests get 503)")
    );
    write_https(&mut s, router);
    let _ = writeln!(s, "\nPOOLS ({})", router.pools.len());
    for p in router.pools.values() {
        if p.split.is_empty() {
            let _ = writeln!(s, "  {}  ({} port {}, {})", p.name, p.service, p.service_port, p.lb_algorithm);
        } else {
            let feeds: Vec<String> =
                p.split.iter().map(|f| format!("{} port {} weight {}", f.service, f.service_port, f.weight)).collect();
            let _ = writeln!(s, "  {}  (split: {}; {})", p.name, feeds.join(", "), p.lb_algorithm);
        }
        let _ = writeln!(s, "      members: {}", p.member_mode);
        let _ = writeln!(s, "      weighting: {}", p.weighting);
        if p.members.is_empty() {
            let _ = writeln!(s, "      (no members)");
        } else {
            let _ = writeln!(s, "      {:<40} {:>5} {:>6} {:>6}  ZONE", "ADDRESS", "PORT", "WEIGHT", "BACKUP");
        }
        for m in &p.members {
            let _ = writeln!(
                s,
                "      {:<40} {:>5} {:>6} {:>6}  {}",
                m.address.to_string(),
                m.protocol_port,
                m.weight,
                if m.backup { "yes" } else { "no" },
                m.zone.as_deref().unwrap_or("-")
            );
        }
    }
    let _ = writeln!(s, "\nWARNINGS ({})", router.warnings.len());
    for w in &router.warnings {
        let _ = writeln!(s, "  {} [{}]: {}", w.reason, w.object, w.message);
    }
    s
}

/// Pretty JSON of the router (the stable `plan -o json` shape).
pub fn render_json(router: &DesiredRouter) -> String {
    serde_json::to_string_pretty(router).expect("the model always serializes")
}
