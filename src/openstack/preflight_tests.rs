use super::*;

fn versions(list: &[(&str, &str)]) -> Vec<VersionEntry> {
    list.iter().map(|(id, status)| VersionEntry { id: id.to_string(), status: status.to_string() }).collect()
}

fn providers(names: &[&str]) -> Vec<Provider> {
    names.iter().map(|n| Provider { name: n.to_string(), description: None }).collect()
}

fn roles(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

/// Octavia lists every version up to the current one.
fn up_to(minor: u32) -> Vec<VersionEntry> {
    (0..=minor)
        .map(|m| VersionEntry {
            id: format!("v2.{m}"),
            status: if m == minor { "CURRENT" } else { "SUPPORTED" }.into(),
        })
        .collect()
}

#[test]
fn version_parsing() {
    assert_eq!(ApiVersion::parse("v2.26"), Some(ApiVersion::new(2, 26)));
    assert_eq!(ApiVersion::parse("2.9"), Some(ApiVersion::new(2, 9)));
    assert_eq!(ApiVersion::parse("v2"), None);
    assert_eq!(ApiVersion::parse("vx.1"), None);
    assert!(ApiVersion::new(2, 10) > ApiVersion::new(2, 9), "numeric, not lexical");
}

#[test]
fn features_by_version_table() {
    use Feature::*;
    let cases: &[(u32, &[Feature])] = &[
        (4, &[]),
        (5, &[Tags]),
        (8, &[Tags]),
        (9, &[Tags, RedirectHttpCode]),
        (10, &[Tags, RedirectHttpCode]),
        (11, &[Tags, RedirectHttpCode, AdditiveOnly]),
        (26, &[Tags, RedirectHttpCode, AdditiveOnly]),
        (27, &[Tags, RedirectHttpCode, AdditiveOnly, Hsts]),
        (30, &[Tags, RedirectHttpCode, AdditiveOnly, Hsts]),
    ];
    for (minor, want) in cases {
        let got: Vec<Feature> = enabled_features(&up_to(*minor)).into_iter().collect();
        assert_eq!(&got, want, "API 2.{minor}");
    }
}

#[test]
fn newest_version_ignores_deprecated_and_junk() {
    let v = versions(&[("v2.0", "SUPPORTED"), ("v2.30", "DEPRECATED"), ("v2.12", "CURRENT"), ("v3", "CURRENT")]);
    assert_eq!(newest_version(&v), Some(ApiVersion::new(2, 12)));
    assert_eq!(newest_version(&[]), None);
    assert!(enabled_features(&[]).is_empty());
}

#[test]
fn provider_table() {
    use Severity::*;
    let cases: &[(&str, &[&str], Option<Severity>, &str)] = &[
        ("amphora", &["amphora", "octavia"], None, ""),
        ("ovn", &["amphora", "ovn"], Some(Error), "no L7 policies"),
        ("OVN", &["ovn"], Some(Error), "no member weights"),
        ("amphorav2", &["amphora", "ovn"], Some(Error), "not offered by this cloud (providers: amphora, ovn)"),
        ("amphora", &[], Some(Error), "providers: none"),
        ("", &["amphora", "octavia"], None, ""),
        ("", &["amphora"], None, ""),
        ("", &["ovn"], Some(Error), "only (so default) provider is ovn"),
        ("", &["amphora", "ovn"], Some(Warning), "default provider is not visible"),
    ];
    for (configured, offered, severity, text) in cases {
        let f = check_provider(configured, &providers(offered));
        assert_eq!(f.first().map(|f| f.severity), *severity, "{configured:?} on {offered:?}: {f:?}");
        if let Some(first) = f.first() {
            assert!(first.message.contains(text), "{configured:?} on {offered:?}: {}", first.message);
        }
    }
}

#[test]
fn roles_table() {
    use Severity::*;
    // (roles, tls_in_use, expected severities in order)
    let cases: &[(&[&str], bool, &[Severity])] = &[
        (&["admin"], true, &[]),
        (&["member", "load-balancer_member", "creator"], true, &[]),
        (&["load-balancer_admin", "creator"], true, &[]),
        (&["member", "load-balancer_member"], false, &[Warning]),
        (&["member", "load-balancer_member"], true, &[Error]),
        // Never a refusal for Octavia's roles: keystone-default-roles lets `member` write.
        (&["member", "creator"], false, &[Warning]),
        (&["load-balancer_global_observer", "creator"], false, &[Warning]),
        (&[], false, &[Warning, Warning]),
        (&[], true, &[Warning, Error]),
    ];
    for (r, tls, want) in cases {
        let got: Vec<Severity> = check_roles(&roles(r), *tls).iter().map(|f| f.severity).collect();
        assert_eq!(&got, want, "roles {r:?} tls {tls}");
    }
    let observer = check_roles(&roles(&["load-balancer_observer", "creator"]), false);
    assert!(observer[0].message.contains("only allow reading"), "{}", observer[0].message);
    let no_creator = check_roles(&roles(&["load-balancer_member"]), true);
    assert!(no_creator[0].message.contains("`creator`"), "{}", no_creator[0].message);
    // The option skips the Octavia roles, not Barbican's.
    let skipped: Vec<Severity> =
        check_roles_with(&roles(&["member"]), true, false).iter().map(|f| f.severity).collect();
    assert_eq!(skipped, [Error]);
}

#[test]
fn an_application_credential_is_a_warning_then_an_error_once_tls_is_used() {
    let methods = |m: &[&str]| m.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert!(check_auth(&methods(&["password"]), true).is_empty());
    assert!(check_auth(&methods(&["token"]), true).is_empty());
    let w = check_auth(&methods(&["application_credential"]), false);
    assert_eq!(w.iter().map(|f| f.severity).collect::<Vec<_>>(), [Severity::Warning]);
    assert!(w[0].message.contains("auth_type = password"), "{}", w[0].message);
    let e = check_auth(&methods(&["application_credential"]), true);
    assert_eq!(e.iter().map(|f| f.severity).collect::<Vec<_>>(), [Severity::Error]);
}

#[test]
fn report_on_zed_with_admin_is_clean_and_lists_the_features() {
    let r = Report::decide(&up_to(26), &providers(&["amphora", "octavia"]), &roles(&["admin"]), "amphora", false);
    assert_eq!(r.api_version, Some(ApiVersion::new(2, 26)));
    assert!(r.has(Feature::RedirectHttpCode) && !r.has(Feature::Hsts));
    assert!(r.refusal().is_none());
    assert_eq!(r.warnings().count(), 0, "HSTS is not used, its absence is no warning: {:?}", r.findings);
    assert!(r.summary().contains("Octavia API 2.26"), "{}", r.summary());
    assert!(r.summary().contains("missing: HSTS (needs 2.27)"), "{}", r.summary());
}

#[test]
fn report_on_2_8_disables_redirects_with_a_warning() {
    let r = Report::decide(&up_to(8), &providers(&["amphora"]), &roles(&["admin"]), "", false);
    assert!(!r.has(Feature::RedirectHttpCode));
    assert!(r.refusal().is_none());
    assert!(r.warnings().any(|w| w.message.contains("HTTP→HTTPS redirects are disabled")), "{:?}", r.findings);
    assert!(r.render().contains("preflight warning: Octavia API 2.8 has no redirect_http_code"), "{}", r.render());
}

#[test]
fn refusal_collects_every_error() {
    let r = Report::decide(&up_to(4), &providers(&["ovn"]), &roles(&["member"]), "ovn", false);
    let msg = r.refusal().expect("refused");
    assert!(msg.contains("ovn") && msg.contains("no tags"), "{msg}");
    assert!(!msg.contains("load-balancer_member"), "the roles are a warning: {msg}");
    assert!(r.warnings().any(|w| w.message.contains("load-balancer_member")), "{:?}", r.findings);
}
