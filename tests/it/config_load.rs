//! Loading kuryr.conf: oslo INI semantics, layering (files, environment), typed validation and
//! the exact shape of every error and warning.

use kuryr_l7_router::config::{
    self, AuthType, ConfigError, LbAlgorithm, Loaded, LogFormat, ZoneWeightingMode, ini::OsloIni,
};
use kuryr_l7_router::secret::MASK;
use std::path::PathBuf;
use std::time::Duration;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/config").join(name)
}

fn label(name: &str) -> String {
    fixture(name).display().to_string()
}

fn no_env() -> Vec<(String, String)> {
    Vec::new()
}

fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn load(names: &[&str], env: Vec<(String, String)>) -> Result<Loaded, ConfigError> {
    let paths: Vec<PathBuf> = names.iter().map(|n| fixture(n)).collect();
    config::load(&paths, env)
}

/// The problems of an `Invalid` error, as displayed.
fn problems(result: Result<Loaded, ConfigError>) -> Vec<String> {
    match result {
        Err(ConfigError::Invalid(problems)) => problems.iter().map(ToString::to_string).collect(),
        Err(other) => panic!("expected ConfigError::Invalid, got {other}"),
        Ok(loaded) => panic!("expected errors, loaded {:?}", loaded.settings),
    }
}

const NEUTRON: &str = "[neutron]\nauth_url = https://keystone/v3\nusername = u\npassword = p\nproject_name = p\n";

fn text(body: &str) -> Result<Loaded, ConfigError> {
    config::load_texts(&[("test.conf".into(), format!("{body}\n{NEUTRON}"))], no_env())
}

#[test]
fn realistic_file_loads_with_defaults() {
    let loaded = load(&["base.conf"], no_env()).unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    let s = loaded.settings;
    assert!(!s.default.debug);
    assert_eq!(s.default.log_format, LogFormat::Text);
    assert!(s.kubernetes.enable_ingress);
    assert_eq!(s.kubernetes.api_root.as_ref().map(|u| u.as_str()), Some("https://10.0.0.1:6443/"));
    assert_eq!(s.kubernetes.resync_period, Duration::from_secs(600));
    assert_eq!(s.kubernetes.effective_ingress_class(), "kuryr-l7-router");
    assert!(s.kubernetes.leader_election && s.kubernetes.use_endpoint_slices);
    assert_eq!(s.kubernetes.lease_namespace, "kube-system");
    assert_eq!(s.kubernetes.health_port, 8080);
    // UUIDs are normalized to lower case.
    assert_eq!(s.neutron_defaults.lb_subnet.as_deref(), Some("3c0f6c8e-1b2d-4c3e-8f9a-0b1c2d3e4f5a"));
    assert_eq!(s.octavia_defaults.lb_algorithm, LbAlgorithm::RoundRobin);
    assert_eq!(s.octavia_defaults.listener_port, 80);
    assert_eq!(s.octavia_defaults.zone_overload_factor, 2.0);
    // No HTTP→HTTPS redirect unless asked: the Ingress API and the conformance suite expect
    // plain HTTP for a TLS host to be routed (an upgrade note says so).
    assert!(!s.octavia_defaults.ssl_redirect);
    assert_eq!(s.neutron.auth_type, AuthType::Password);
    assert_eq!(s.neutron.user_domain_name, "Default");
    assert_eq!(s.neutron.password.as_ref().map(|p| p.expose()), Some("s3cr3t-PaSS"));
}

#[test]
fn oslo_ini_pitfalls_are_handled() {
    let loaded = load(&["oslo-pitfalls.conf"], no_env()).unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    let s = loaded.settings;
    // 1 + 2: comma list with continuation lines, trimmed, empty items dropped; the key after
    // the continuation is read as itself.
    assert_eq!(s.neutron_defaults.resource_tags, ["team=edge", "env:prod", "zone:a", "zone:b"]);
    assert_eq!(s.neutron_defaults.external_svc_subnet.as_deref(), Some("5c0f6c8e-1b2d-4c3e-8f9a-0b1c2d3e4f5a"));
    // 3: no escape processing.
    assert_eq!(s.neutron.password.as_ref().map(|p| p.expose()), Some(r"p@ss\w0rd\n^a-\d+$"));
    // 4: repeated sections merged, later key wins.
    assert_eq!(s.octavia_defaults.lb_algorithm, LbAlgorithm::SourceIp);
    assert_eq!(s.octavia_defaults.l7_router_name, "router-2");
    // 5: section case, `-` in keys, key case, `:` separator, quotes.
    assert!(s.default.debug);
    assert!(s.kubernetes.enable_ingress);
    assert_eq!(s.kubernetes.cluster_name, "edge-1");
    assert_eq!(s.neutron_defaults.lb_subnet.as_deref(), Some("3c0f6c8e-1b2d-4c3e-8f9a-0b1c2d3e4f5a"));
    assert_eq!(s.neutron.project_id.as_deref(), Some("5b4c1b6e0c2d4b1a9f3e2d1c0b9a8f7e"));
}

#[test]
fn continuation_line_on_a_scalar_option_is_an_error() {
    let errs = problems(text("[octavia_defaults]\nlistener_port = 80\n  81\n"));
    assert_eq!(
        errs,
        ["test.conf: [octavia_defaults] listener_port = \"80\\n81\": expected integer, 1..65535, \
             on a single line (continuation lines are only for list options)"]
    );
}

#[test]
fn later_file_overrides_earlier() {
    let s = load(&["base.conf", "override.conf"], no_env()).unwrap().settings;
    assert_eq!(s.kubernetes.cluster_name, "staging");
    assert_eq!(s.kubernetes.resync_period, Duration::from_secs(120));
    assert_eq!(s.octavia_defaults.lb_algorithm, LbAlgorithm::LeastConnections);
    // Untouched values still come from the first file.
    assert!(s.kubernetes.enable_ingress);
    // And the other order.
    let s = load(&["override.conf", "base.conf"], no_env()).unwrap().settings;
    assert_eq!(s.kubernetes.cluster_name, "staging", "base.conf does not set it");
}

#[test]
fn environment_wins_over_files() {
    let vars = env(&[
        ("KURYR_NEUTRON__PASSWORD", "from-env"),
        ("KURYR_OCTAVIA_DEFAULTS__LB_ALGORITHM", "SOURCE_IP"),
        ("KURYR_DEFAULT__LOG_FORMAT", "json"),
        ("KURYR_NEUTRON_DEFAULTS__RESOURCE_TAGS", "a, b"),
        ("PATH", "/usr/bin"),
        ("KURYR_CNI_DAEMON__DAEMON_ENABLED", "true"),
    ]);
    let loaded = load(&["base.conf", "override.conf"], vars).unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    let s = loaded.settings;
    assert_eq!(s.neutron.password.as_ref().map(|p| p.expose()), Some("from-env"));
    assert_eq!(s.octavia_defaults.lb_algorithm, LbAlgorithm::SourceIp);
    assert_eq!(s.default.log_format, LogFormat::Json);
    assert_eq!(s.neutron_defaults.resource_tags, ["a", "b"]);
}

#[test]
fn environment_errors_name_the_variable() {
    let vars = env(&[("KURYR_OCTAVIA_DEFAULTS__LISTENER_PORT", "http"), ("KURYR_KUBERNETES__ENABLE_INGRES", "1")]);
    let result = load(&["base.conf"], vars.clone());
    assert_eq!(
        problems(result),
        ["environment KURYR_OCTAVIA_DEFAULTS__LISTENER_PORT: [octavia_defaults] listener_port = \"http\": \
             expected integer, 1..65535"]
    );
    let vars = env(&[("KURYR_KUBERNETES__ENABLE_INGRES", "1")]);
    let loaded = load(&["base.conf"], vars).unwrap();
    assert_eq!(
        loaded.warnings,
        ["environment KURYR_KUBERNETES__ENABLE_INGRES: [kubernetes] enable_ingres: unknown option \
             (ignored); did you mean enable_ingress?"]
    );
}

#[test]
fn every_problem_is_reported_with_file_section_key() {
    let path = label("invalid.conf");
    let result = load(&["invalid.conf"], no_env());
    let errs = problems(result);
    let expected = [
        format!("{path}: [DEFAULT] log_format = \"yaml\": expected one of text, json"),
        format!("{path}: [kubernetes] enable_ingress = \"maybe\": expected boolean (true/false, yes/no, on/off, 1/0)"),
        format!(
            "{path}: [kubernetes] cluster_name = \"my cluster\": expected a tag without ' ' (no commas, \
             slashes or whitespace)"
        ),
        format!("{path}: [kubernetes] resync_period = \"5\": expected integer seconds, >= 10"),
        format!("{path}: [kubernetes] health_port = \"70000\": expected integer, 1..65535"),
        format!("{path}: [neutron_defaults] l7_router_ip = \"10.0.0.300\": expected IP address"),
        format!(
            "{path}: [neutron_defaults] pod_subnet = \"not-a-uuid\": expected UUID (8-4-4-4-12 hexadecimal digits)"
        ),
        format!(
            "{path}: [octavia_defaults] lb_algorithm = \"ROUND_ROBINN\": expected one of ROUND_ROBIN, \
             LEAST_CONNECTIONS, SOURCE_IP"
        ),
        format!(
            "{path}: [octavia_defaults] listener_port = \"8080\\n9090\": expected integer, 1..65535, on a \
             single line (continuation lines are only for list options)"
        ),
        format!("{path}: [octavia_defaults] zone_overload_factor = \"0.5\": expected float, >= 1.0"),
        format!(
            "{path}: [octavia_defaults] zone_weighting_mode = \"backup\": requires [octavia_defaults] \
             health_monitor = true (backup members only take traffic once a health monitor has marked \
             the local members down)"
        ),
        format!("{path}: [neutron] username: required option is not set (auth_type = password; or set user_id)"),
    ];
    assert_eq!(errs, expected);
    // The secret of the same file is never shown.
    let err = load(&["invalid.conf"], no_env()).unwrap_err().to_string();
    assert!(!err.contains("hunter2"), "{err}");
    assert!(err.starts_with("invalid configuration:\n  - "), "{err}");
}

#[test]
fn invalid_enum_message_shape() {
    let errs = problems(text("[octavia_defaults]\nlb_algorithm = ROUND_ROBINN"));
    assert_eq!(
        errs,
        ["test.conf: [octavia_defaults] lb_algorithm = \"ROUND_ROBINN\": expected one of ROUND_ROBIN, \
          LEAST_CONNECTIONS, SOURCE_IP"]
    );
}

#[test]
fn backup_weighting_needs_health_monitor() {
    let errs = problems(text("[octavia_defaults]\nzone_weighting_mode = backup"));
    assert_eq!(errs.len(), 1);
    assert!(errs[0].contains("zone_weighting_mode = \"backup\""), "{}", errs[0]);
    assert!(errs[0].contains("health_monitor = true"), "{}", errs[0]);
    let s = text("[octavia_defaults]\nzone_weighting_mode = backup\nhealth_monitor = true").unwrap().settings;
    assert_eq!(s.octavia_defaults.zone_weighting_mode, ZoneWeightingMode::Backup);
}

#[test]
fn health_monitor_timeout_not_above_delay() {
    let errs = problems(text("[octavia_defaults]\nhealth_monitor_delay = 2"));
    assert_eq!(
        errs,
        ["test.conf: [octavia_defaults] health_monitor_timeout: must not exceed [octavia_defaults] \
          health_monitor_delay = 2"]
    );
}

#[test]
fn missing_neutron_section() {
    let path = label("no-neutron.conf");
    let errs = problems(load(&["no-neutron.conf"], no_env()));
    assert_eq!(
        errs,
        [
            format!("{path}: [neutron] auth_url: required option is not set (Keystone identity URL)"),
            format!("{path}: [neutron] username: required option is not set (auth_type = password; or set user_id)"),
            format!("{path}: [neutron] password: required option is not set (auth_type = password)"),
            format!(
                "{path}: [neutron] project_name: required option is not set (auth_type = password; or set project_id)"
            ),
        ]
    );
}

#[test]
fn offline_load_accepts_missing_keystone_options_but_not_invalid_ones() {
    let paths = [fixture("no-neutron.conf")];
    let loaded = config::load_offline(&paths, no_env()).expect("plan needs no Keystone options");
    assert_eq!(loaded.settings.neutron.auth_url, None);
    let offline =
        |body: &str| config::load_texts_as(&[("t.conf".into(), body.into())], no_env(), config::Needs::Offline);
    // Nothing about OpenStack, ingress enabled: no lb_subnet either (needed to create the router only).
    assert!(offline("[kubernetes]\nenable_ingress = true\n").is_ok());
    assert_eq!(
        problems(offline("[neutron]\nauth_url = keystone\nauth_type = token\n")),
        [
            "t.conf: [neutron] auth_url = \"keystone\": expected URL (relative URL without a base)",
            "t.conf: [neutron] auth_type = \"token\": expected one of password, v3applicationcredential",
        ]
    );
    // The same file for a command that talks to OpenStack: refused, as before.
    assert!(problems(load(&["no-neutron.conf"], no_env()))[0].contains("[neutron] auth_url: required option"));
}

#[test]
fn kuryr_kubernetes_project_option_is_ignored_with_why() {
    let loaded = text("[neutron_defaults]\nproject = 5b4c1b6e0c2d4b1a9f3e2d1c0b9a8f7e").unwrap();
    assert_eq!(loaded.warnings.len(), 1, "{:?}", loaded.warnings);
    let w = &loaded.warnings[0];
    assert!(w.starts_with("test.conf: [neutron_defaults] project: not used by kuryr-l7-router (ignored)"), "{w}");
    assert!(w.contains("[neutron] project_name / project_id"), "{w}");
}

#[test]
fn member_mode_l2_requires_pod_subnet() {
    assert_eq!(
        problems(text("[octavia_defaults]\nmember_mode = L2")),
        [
            "test.conf: [octavia_defaults] member_mode = \"L2\": L2 requires [neutron_defaults] pod_subnet (the subnet members are created on)"
        ]
    );
    let pod = "0f6e2a5c-1b2d-4c3e-8f9a-0b1c2d3e4f5a";
    let s = text(&format!("[octavia_defaults]\nmember_mode = L2\n[neutron_defaults]\npod_subnet = {pod}"))
        .unwrap()
        .settings;
    assert_eq!(kuryr_l7_router::wiring::router_spec(&s).member_subnet.as_deref(), Some(pod));
    // L3 (the default): no subnet on members, even with a pod_subnet set.
    let s = text(&format!("[neutron_defaults]\npod_subnet = {pod}")).unwrap().settings;
    assert_eq!(kuryr_l7_router::wiring::router_spec(&s).member_subnet, None);
}

#[test]
fn resource_tags_are_extra_tags_of_the_router_spec() {
    let s = text("[kubernetes]\ncluster_name = c1\n[neutron_defaults]\nresource_tags = team=edge, env:prod")
        .unwrap()
        .settings;
    let own = kuryr_l7_router::wiring::router_spec(&s).ownership;
    // With the instance's set tag (`l7_router_name`, default `kuryr-l7-router`) on the router.
    assert_eq!(
        own.router_tags(),
        ["kuryr-l7-router", "cluster:c1", "router-set:kuryr-l7-router", "team=edge", "env:prod"]
    );
    assert_eq!(own.ownership_tags(), ["kuryr-l7-router", "cluster:c1"]);
}

#[test]
fn missing_value_names_all_files() {
    let errs = problems(load(&["no-neutron.conf", "override.conf"], no_env()));
    let both = format!("{}, {}", label("no-neutron.conf"), label("override.conf"));
    assert!(errs[0].starts_with(&format!("{both}: [neutron] auth_url:")), "{}", errs[0]);
}

#[test]
fn lb_subnet_required_when_ingress_enabled() {
    let errs = problems(text("[kubernetes]\nenable_ingress = true"));
    assert_eq!(errs, ["test.conf: [neutron_defaults] lb_subnet: required when [kubernetes] enable_ingress = true"]);
    // From the environment, the variable is named.
    let errs = problems(config::load_texts(
        &[("test.conf".into(), NEUTRON.into())],
        env(&[("KURYR_KUBERNETES__ENABLE_INGRESS", "yes")]),
    ));
    assert_eq!(
        errs,
        ["environment KURYR_KUBERNETES__ENABLE_INGRESS: [neutron_defaults] lb_subnet: required when \
          [kubernetes] enable_ingress = true"]
    );
}

#[test]
fn application_credentials() {
    let base = "[neutron]\nauth_url = https://keystone/v3\nauth_type = v3applicationcredential\n";
    let ok = |extra: &str| config::load_texts(&[("t.conf".into(), format!("{base}{extra}"))], no_env());
    let s = ok("application_credential_id = abc\napplication_credential_secret = xyz\n").unwrap().settings;
    assert_eq!(s.neutron.auth_type, AuthType::ApplicationCredential);
    assert!(ok("application_credential_name = n\nusername = u\napplication_credential_secret = x\n").is_ok());
    assert_eq!(
        problems(ok("application_credential_name = n\napplication_credential_secret = x\n")),
        ["t.conf: [neutron] username: required option is not set (application_credential_name needs \
          username or user_id)"]
    );
    assert_eq!(
        problems(ok("application_credential_id = abc\n")),
        ["t.conf: [neutron] application_credential_secret: required option is not set (auth_type = \
          v3applicationcredential)"]
    );
    assert_eq!(problems(ok("")).len(), 2);
}

#[test]
fn unknown_option_warning_and_unknown_section_silence() {
    let loaded =
        text("[kubernetes]\nenable_ingres = true\nfrobnicate = 1\n[pod_vif_nested]\nworker_nodes_subnets = x").unwrap();
    assert_eq!(
        loaded.warnings,
        [
            "test.conf: [kubernetes] enable_ingres: unknown option (ignored); did you mean enable_ingress?",
            "test.conf: [kubernetes] frobnicate: unknown option (ignored)",
        ]
    );
}

#[test]
fn missing_file_is_named() {
    let path = fixture("does-not-exist.conf");
    let err = config::load(&[fixture("base.conf"), path.clone()], no_env()).unwrap_err();
    assert!(matches!(&err, ConfigError::NotFound { path: p } if *p == path), "{err:?}");
    assert_eq!(err.to_string(), format!("configuration file {} not found", path.display()));
}

#[test]
fn syntax_error_has_file_and_line() {
    let err = load(&["syntax-error.conf"], no_env()).unwrap_err();
    assert!(matches!(err, ConfigError::Parse(ref e) if e.line == 3), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!("{}:3: no ':' or '=' found in assignment: \"this line has no separator\"", label("syntax-error.conf"))
    );
}

#[test]
fn secrets_never_shown() {
    let loaded = load(&["base.conf"], env(&[("KURYR_NEUTRON__APPLICATION_CREDENTIAL_SECRET", "appsecret")])).unwrap();
    let debug = format!("{:?}", loaded.settings);
    let rendered = loaded.settings.render_masked();
    for shown in [&debug, &rendered] {
        assert!(!shown.contains("s3cr3t-PaSS") && !shown.contains("appsecret"), "{shown}");
    }
    assert!(rendered.contains(&format!("\npassword = {MASK}\n")), "{rendered}");
    assert!(rendered.contains(&format!("\napplication_credential_secret = {MASK}\n")), "{rendered}");
    // An invalid secret is masked in the error too.
    let errs =
        problems(config::load_texts(&[("t.conf".into(), format!("{NEUTRON}password = line1\n  line2\n"))], no_env()));
    assert_eq!(errs.len(), 1);
    assert!(errs[0].contains(&format!("password = \"{MASK}\"")) && !errs[0].contains("line1"), "{}", errs[0]);
}

#[test]
fn render_masked_lists_every_option_and_reloads() {
    let s = load(&["oslo-pitfalls.conf"], no_env()).unwrap().settings;
    let rendered = s.render_masked();
    let sections = config::ini::parse("rendered", &rendered).unwrap();
    for o in config::options() {
        let table = config::ini::normalize_section(o.section);
        let present = sections.get(&table).is_some_and(|t| t.contains_key(o.key));
        let commented = rendered.contains(&format!("\n#{} = <None>\n", o.key));
        assert!(present || commented, "[{}] {} missing from:\n{rendered}", o.section, o.key);
    }
    assert!(rendered.contains("\nresource_tags = team=edge, env:prod, zone:a, zone:b\n"), "{rendered}");
    assert!(rendered.contains("\ningress_class = kuryr-l7-router\n"), "{rendered}");
    // Reloading the rendering (with the masked secret put back) gives the same settings.
    let unmasked = rendered.replacen(&format!("password = {MASK}"), r"password = p@ss\w0rd\n^a-\d+$", 1);
    let mut again = config::load_texts(&[("rendered".into(), unmasked)], no_env()).unwrap().settings;
    // The rendering shows the effective class, which then reads back as explicitly set.
    assert_eq!(again.kubernetes.effective_ingress_class(), s.kubernetes.effective_ingress_class());
    again.kubernetes.ingress_class = None;
    assert_eq!(again, s);
}

#[test]
fn effective_ingress_class() {
    let s = text("[kubernetes]\nnode_pool = hangzhou").unwrap().settings;
    assert_eq!(s.kubernetes.effective_ingress_class(), "hangzhou");
    let s = text("[kubernetes]\nnode_pool = hangzhou\ningress_class = edge").unwrap().settings;
    assert_eq!(s.kubernetes.effective_ingress_class(), "edge");
    let errs = problems(text("[kubernetes]\nnode_pool = Pool_A"));
    assert_eq!(
        errs,
        ["test.conf: [kubernetes] node_pool = \"Pool_A\": \"Pool_A\" is not a valid IngressClass name \
          (lower-case DNS subdomain)"]
    );
}

#[test]
fn format_plugs_into_config_file_sources() {
    // The format also works as a file format of the `config` crate on its own.
    let path = fixture("oslo-pitfalls.conf");
    let merged = ::config::Config::builder()
        .add_source(::config::File::new(&path.display().to_string(), OsloIni::default()))
        .build()
        .unwrap();
    let table = merged.get_table("octavia_defaults").unwrap();
    let name = table.get("l7_router_name").unwrap();
    // The crate reports the path relative to the working directory.
    assert!(name.origin().is_some_and(|o| o.ends_with("tests/fixtures/config/oslo-pitfalls.conf")));
    assert_eq!(name.clone().into_string().unwrap(), "router-2");
    assert_eq!(merged.get_string("default.debug").unwrap(), "yes");
}

#[test]
fn environment_variable_naming_a_whole_section_is_ignored() {
    let loaded = load(&["base.conf"], env(&[("KURYR_NEUTRON", "oops")])).unwrap();
    assert_eq!(loaded.warnings, ["environment KURYR_NEUTRON: not of the form KURYR_<SECTION>__<KEY> (ignored)"]);
    assert_eq!(loaded.settings.neutron.username.as_deref(), Some("kuryr"));
}

#[test]
fn cafile_must_exist() {
    let errs = problems(config::load_texts(
        &[("t.conf".into(), format!("{NEUTRON}cafile = /nonexistent/ca.pem\n"))],
        no_env(),
    ));
    assert_eq!(
        errs,
        ["t.conf: [neutron] cafile = \"/nonexistent/ca.pem\": expected path to an existing file: no such file"]
    );
    let existing = fixture("base.conf");
    let s = config::load_texts(&[("t.conf".into(), format!("{NEUTRON}cafile = {}\n", existing.display()))], no_env())
        .unwrap()
        .settings;
    assert_eq!(s.neutron.cafile, Some(existing));
}

#[test]
fn router_zone_and_overload_threshold_with_their_fallbacks() {
    use kuryr_l7_router::wiring::{router_zone_text, translate_options};
    // Defaults: no router zone, threshold 20%.
    let s = text("").unwrap().settings;
    assert_eq!(s.octavia_defaults.zone_overload_threshold, 0.2);
    assert_eq!(translate_options(&s).router_zone, None);
    assert!(router_zone_text(&s).starts_with("router zone: none"));
    // Only availability_zone (the old way): it is also the router zone.
    let s = text("[octavia_defaults]\navailability_zone = az-1").unwrap().settings;
    assert_eq!(translate_options(&s).router_zone.as_deref(), Some("az-1"));
    assert_eq!(router_zone_text(&s), "router zone: az-1 ([octavia_defaults] availability_zone; router_zone unset)");
    // router_zone wins; availability_zone stays the Octavia AZ.
    let s = text("[octavia_defaults]\navailability_zone = nova\nrouter_zone = zone-a").unwrap().settings;
    assert_eq!(translate_options(&s).router_zone.as_deref(), Some("zone-a"));
    assert_eq!(s.octavia_defaults.availability_zone.as_deref(), Some("nova"));
    assert_eq!(router_zone_text(&s), "router zone: zone-a ([octavia_defaults] router_zone)");
    // The deprecated factor alone still counts (threshold = factor - 1); the threshold wins.
    let s = text("[octavia_defaults]\nzone_overload_factor = 1.5").unwrap().settings;
    assert_eq!(translate_options(&s).zone_overload_threshold, 0.5);
    let s = text("[octavia_defaults]\nzone_overload_factor = 1.5\nzone_overload_threshold = 0.1").unwrap().settings;
    assert_eq!(s.octavia_defaults.zone_overload_threshold, 0.1);
}

#[test]
fn status_responder_options_are_read_and_checked() {
    let base = std::fs::read_to_string(fixture("base.conf")).unwrap();
    let text = format!(
        "{base}\n[status_responder]\nservice = kuryr-system/kuryr-status-responder\nnot_found_listen = 127.0.0.1:9404\nunavailable_listen = [::]:9503\n"
    );
    let loaded = config::load_texts(&[("k.conf".into(), text)], no_env()).unwrap();
    let sr = &loaded.settings.status_responder;
    assert_eq!(sr.service, Some(("kuryr-system".into(), "kuryr-status-responder".into())));
    assert_eq!(sr.not_found_listen.to_string(), "127.0.0.1:9404");
    assert_eq!(sr.unavailable_listen.to_string(), "[::]:9503");
    assert_eq!(sr.health_listen.to_string(), "0.0.0.0:8405", "default");
    assert_eq!(
        (sr.service_not_found_port.as_str(), sr.service_unavailable_port.as_str()),
        ("not-found", "unavailable")
    );
    // The controller's translation gets the Service and its ports.
    let t = kuryr_l7_router::wiring::translate_options(&loaded.settings).status_responder.expect("configured");
    assert_eq!(
        (t.namespace.as_str(), t.name.as_str(), t.not_found_port.as_str()),
        ("kuryr-system", "kuryr-status-responder", "not-found")
    );
    // Unset service: no responder.
    let plain = config::load(&[fixture("base.conf")], no_env()).unwrap();
    assert_eq!(plain.settings.status_responder.service, None);
    assert!(kuryr_l7_router::wiring::translate_options(&plain.settings).status_responder.is_none());

    let bad = format!("{base}\n[status_responder]\nservice = no-slash\nhealth_listen = 8405\n");
    let p = problems(config::load_texts(&[("k.conf".into(), bad)], no_env()));
    assert_eq!(
        p,
        [
            "k.conf: [status_responder] service = \"no-slash\": expected namespace/name",
            "k.conf: [status_responder] health_listen = \"8405\": expected IP:port (e.g. 0.0.0.0:8404 or [::]:8404)",
        ]
    );
}

#[test]
fn the_status_responder_reads_its_section_without_keystone_options() {
    // Its pods mount kuryr.conf without the Keystone secret: no [neutron] at all here.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kuryr.conf");
    std::fs::write(&path, "[DEFAULT]\nlog_format = json\n[status_responder]\nnot_found_listen = 127.0.0.1:9404\n")
        .unwrap();
    let (default, sr) = config::load_status_responder(
        std::slice::from_ref(&path),
        env(&[("KURYR_STATUS_RESPONDER__HEALTH_LISTEN", "127.0.0.1:9405")]),
    )
    .unwrap();
    assert_eq!(default.log_format, LogFormat::Json);
    assert_eq!(sr.not_found_listen.to_string(), "127.0.0.1:9404");
    assert_eq!(sr.health_listen.to_string(), "127.0.0.1:9405", "environment override");
    assert_eq!(sr.unavailable_listen.to_string(), "0.0.0.0:8503");
    // The full configuration refuses the same file (the controller needs Keystone).
    assert!(config::load(std::slice::from_ref(&path), no_env()).is_err());
    std::fs::write(&path, "[status_responder]\nnot_found_listen = nowhere\n").unwrap();
    match config::load_status_responder(&[path], no_env()) {
        Err(ConfigError::Invalid(p)) => assert_eq!(p.len(), 1, "{p:?}"),
        other => panic!("expected an invalid value, got {other:?}"),
    }
}

/// The VIP's address family comes from its subnet (read from Neutron at start): an IPv6 VIP
/// subnet takes the endpoints' IPv6 addresses even with an IPv4 floating IP (`l7_router_ip`),
/// which alone decided it before. Without the subnet read (`plan`), `l7_router_ip`, else IPv4.
#[test]
fn the_vip_family_comes_from_the_vip_subnet() {
    use kuryr_l7_router::translate::IpFamily;
    use kuryr_l7_router::wiring::translate_options;
    // (l7_router_ip, the subnet's ip_version, family)
    let cases = [
        ("", None, IpFamily::V4),
        ("203.0.113.10", None, IpFamily::V4),
        ("2001:db8::10", None, IpFamily::V6),
        ("", Some(6), IpFamily::V6),
        ("203.0.113.10", Some(6), IpFamily::V6),
        ("2001:db8::10", Some(4), IpFamily::V4),
        ("", Some(4), IpFamily::V4),
    ];
    for (ip, version, family) in cases {
        let body = if ip.is_empty() { String::new() } else { format!("[neutron_defaults]\nl7_router_ip = {ip}") };
        let mut s = text(&body).unwrap().settings;
        s.neutron_defaults.vip_ip_version = version;
        assert_eq!(translate_options(&s).vip_family, family, "{ip:?} {version:?}");
    }
}

#[test]
fn scale_out_limits_load_with_their_defaults_and_bad_values_are_named() {
    let od = text("").unwrap().settings.octavia_defaults;
    let s = od.scale_out;
    assert!(!s.enabled, "off unless asked: one router");
    assert_eq!((s.capacity.max_policies, s.capacity.max_certificates), (100, 24));
    // Designate's default zone TTL, and the grace it takes: the TTL plus the external-dns interval.
    assert_eq!(od.dns_record_ttl, Duration::from_secs(3600));
    assert_eq!((s.move_dns_grace, s.empty_router_grace), (Duration::from_secs(3660), Duration::from_secs(3600)));
    assert_eq!(s.move_timings(), kuryr_l7_router::placement::MoveTimings::default(), "the same graces as placement's");
    let s = text("[octavia_defaults]\nscale_out = true\nmax_policies_per_router = 40\nmax_certificates_per_router = 5\nmove_dns_grace = 90\n")
        .unwrap()
        .settings
        .octavia_defaults
        .scale_out;
    assert!(s.enabled);
    assert_eq!((s.capacity.max_policies, s.capacity.max_certificates), (40, 5));
    assert_eq!(s.move_dns_grace, Duration::from_secs(90));
    let errs = problems(text("[octavia_defaults]\nmax_policies_per_router = 1\nmax_certificates_per_router = 0\n"));
    assert_eq!(
        errs,
        [
            "test.conf: [octavia_defaults] max_policies_per_router = \"1\": expected integer, 2..10000",
            "test.conf: [octavia_defaults] max_certificates_per_router = \"0\": expected integer, 1..1000",
        ]
    );
}

/// The move's DNS grace follows the records' TTL (`dns_record_ttl` + 60 s) unless
/// `move_dns_grace` says otherwise; the effective configuration shows both.
#[test]
fn the_move_grace_is_derived_from_the_dns_record_ttl_unless_overridden() {
    let derived = |body: &str| text(body).unwrap().settings.octavia_defaults.scale_out;
    let s = derived("[octavia_defaults]\nscale_out = true\ndns_record_ttl = 300\n");
    assert_eq!(s.move_dns_grace, Duration::from_secs(360));
    assert_eq!(s.move_timings(), kuryr_l7_router::placement::MoveTimings::for_dns_ttl(300));
    assert_eq!((s.move_timings().dns_grace_secs, s.move_timings().old_routes_grace_secs), (360, 360));
    let s = derived("[octavia_defaults]\nscale_out = true\ndns_record_ttl = 0\n");
    assert_eq!(s.move_dns_grace, Duration::from_secs(60), "the external-dns interval alone");
    // An explicit grace wins, whatever the TTL.
    let s = derived("[octavia_defaults]\nscale_out = true\ndns_record_ttl = 300\nmove_dns_grace = 45\n");
    assert_eq!(s.move_dns_grace, Duration::from_secs(45));
    assert_eq!(s.move_timings().dns_grace_secs, 45);
    let errs = problems(text("[octavia_defaults]\ndns_record_ttl = soon\n"));
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(errs[0].contains("[octavia_defaults] dns_record_ttl = \"soon\""), "{}", errs[0]);
    let loaded = text("[octavia_defaults]\ndns_record_ttl = 600\n").unwrap();
    // `check-config` shows the grace in effect, derived.
    let rendered = loaded.settings.render_masked();
    assert!(
        rendered.contains("\ndns_record_ttl = 600\n") && rendered.contains("\nmove_dns_grace = 660\n"),
        "{rendered}"
    );
}

/// With a set, the routers other than the first take their floating IPs from
/// `external_svc_subnet`: with `l7_router_ip` and no such subnet they would publish their
/// private VIP addresses in the Ingress status. Refused, naming both options and the fix.
#[test]
fn scale_out_refuses_to_publish_private_addresses_beside_l7_router_ip() {
    let subnet = "11111111-2222-3333-4444-555555555555";
    let errs = problems(text("[neutron_defaults]\nl7_router_ip = 203.0.113.7\n[octavia_defaults]\nscale_out = true\n"));
    assert_eq!(errs.len(), 1, "{errs:?}");
    let e = &errs[0];
    assert!(e.starts_with("test.conf: [neutron_defaults] l7_router_ip = \"203.0.113.7\""), "{e}");
    for part in [
        "scale_out = true",
        "external_svc_subnet",
        "private VIP addresses",
        "Ingress status",
        "Set external_svc_subnet",
        "unset l7_router_ip",
    ] {
        assert!(e.contains(part), "{part:?} in {e}");
    }
    // The fix, either way; and no set: one router, its address as configured.
    text(&format!("[neutron_defaults]\nl7_router_ip = 203.0.113.7\nexternal_svc_subnet = {subnet}\n[octavia_defaults]\nscale_out = true\n")).unwrap();
    text("[octavia_defaults]\nscale_out = true\n").unwrap();
    text("[neutron_defaults]\nl7_router_ip = 203.0.113.7\n").unwrap();
}

#[test]
fn scale_out_refuses_a_pinned_router_and_a_name_that_belongs_to_another_set() {
    let uuid = "11111111-2222-3333-4444-555555555555";
    let errs = problems(text(&format!("[octavia_defaults]\nscale_out = true\nl7_router_uuid = {uuid}\n")));
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(errs[0].contains("[octavia_defaults] scale_out") && errs[0].contains("l7_router_uuid"), "{}", errs[0]);
    let errs = problems(text("[octavia_defaults]\nscale_out = true\nl7_router_name = edge-3\n"));
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(errs[0].contains("l7_router_name = \"edge-3\"") && errs[0].contains("set \"edge\""), "{}", errs[0]);
    // Without scale_out both stay what they were: one router, pinned or named freely.
    text(&format!("[octavia_defaults]\nl7_router_uuid = {uuid}\nl7_router_name = edge-3\n")).unwrap();
    text("[octavia_defaults]\nscale_out = true\nl7_router_name = edge-1\n").unwrap();
}

/// `[kubernetes] secret_namespaces`: empty by default (every namespace's Secrets, one
/// cluster-wide watch), a comma-separated list of namespaces, each a namespace name (a DNS
/// label), else a problem naming the option and the value.
#[test]
fn secret_namespaces_is_a_list_of_namespace_names() {
    let s = text("[kubernetes]\nlease_namespace = kube-system").unwrap().settings;
    assert!(s.kubernetes.secret_namespaces.is_empty());
    let s = text("[kubernetes]\nsecret_namespaces = certs, infra-tls").unwrap().settings;
    assert_eq!(s.kubernetes.secret_namespaces, ["certs", "infra-tls"]);
    let errs = problems(text("[kubernetes]\nsecret_namespaces = certs, Infra"));
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(
        errs[0].contains("[kubernetes] secret_namespaces") && errs[0].contains("\"Infra\" is not a namespace name"),
        "{errs:?}"
    );
    let errs = problems(text("[kubernetes]\nsecret_namespaces = certs.example"));
    assert!(errs.iter().any(|e| e.contains("\"certs.example\" is not a namespace name")), "{errs:?}");
}
