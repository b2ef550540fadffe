//! Typed, validated settings built from the layered raw values, and their masked rendering.
//!
//! Validation is by hand (no serde) so that every problem can name the file (or environment
//! variable) the value came from, and so that all problems are reported at once.

use super::options::{
    AuthType, HealthMonitorType, Interface, LbAlgorithm, MemberMode, RedirectCode, ZoneWeightingMode,
};
use super::problem::ConfigProblem;
use crate::secret::Secret;
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;
use url::Url;

mod reader;
mod scale_out;
mod status_responder;
pub use reader::{DefaultSettings, check_tag, is_uuid, parse_bool, split_list};
pub(crate) use reader::{RawEntry, Reader};
pub use scale_out::ScaleOut;
pub use status_responder::StatusResponderSettings;

/// `[kubernetes]`.
#[derive(Clone, Debug, PartialEq)]
pub struct KubernetesSettings {
    /// `None`: in-cluster configuration, or `kubeconfig`.
    pub api_root: Option<Url>,
    pub ssl_ca_crt_file: Option<PathBuf>,
    pub token_file: Option<PathBuf>,
    pub kubeconfig: Option<PathBuf>,
    pub enable_ingress: bool,
    /// As configured; use [`KubernetesSettings::effective_ingress_class`].
    pub ingress_class: Option<String>,
    pub use_endpoint_slices: bool,
    pub node_pool: Option<String>,
    pub node_pool_label: String,
    pub cluster_name: String,
    pub resync_period: Duration,
    /// `member_change_window_ms`.
    pub member_change_window: Duration,
    pub leader_election: bool,
    pub lease_name: String,
    pub lease_namespace: String,
    /// Leader election as code sets it, not kuryr.conf (`None`: this lease, the identity from
    /// `POD_NAME` or `HOSTNAME`, the default timings): tests that run two replicas in one
    /// process give each its identity and short timings.
    pub leader_override: Option<super::leader::LeaderSettings>,
    pub health_port: u16,
    /// Namespaces allowed to set the router-wide default backend; empty: all.
    pub default_backend_namespaces: Vec<String>,
    /// Namespaces whose TLS Secrets are read (a watch each); empty: all (one cluster-wide watch).
    pub secret_namespaces: Vec<String>,
    pub host_ownership: bool,
    pub host_ownership_grace_period: Duration,
}

/// Default IngressClass name when neither `ingress_class` nor `node_pool` is set.
pub const DEFAULT_INGRESS_CLASS: &str = "kuryr-l7-router";

impl KubernetesSettings {
    /// The IngressClass we serve: `ingress_class` if set, else the node pool name (one
    /// controller per pool, each with its own class), else `kuryr-l7-router`.
    pub fn effective_ingress_class(&self) -> String {
        self.ingress_class
            .clone()
            .or_else(|| self.node_pool.clone())
            .unwrap_or_else(|| DEFAULT_INGRESS_CLASS.to_owned())
    }
}

/// `[neutron_defaults]`. Ids are validated dashed UUIDs, lower-cased.
#[derive(Clone, Debug, PartialEq)]
pub struct NeutronDefaults {
    pub external_svc_subnet: Option<String>,
    pub l7_router_ip: Option<IpAddr>,
    /// Always `Some` when `[kubernetes] enable_ingress` is true.
    pub lb_subnet: Option<String>,
    pub pod_subnet: Option<String>,
    pub resource_tags: Vec<String>,
    /// Not an option: the `ip_version` of the `lb_subnet` as Neutron has it, read at start by
    /// `run` (`controller::runtime::preflight`); it decides the VIP's address family.
    pub vip_ip_version: Option<u8>,
}

/// `[octavia_defaults]`.
#[derive(Clone, Debug, PartialEq)]
pub struct OctaviaDefaults {
    pub l7_router_name: String,
    pub l7_router_uuid: Option<String>,
    pub lb_algorithm: LbAlgorithm,
    /// Empty: Octavia's default provider.
    pub provider: String,
    pub availability_zone: Option<String>,
    /// Zone-aware weighting's router zone; unset: `availability_zone`.
    pub router_zone: Option<String>,
    pub member_mode: MemberMode,
    /// `member_mode_annotation`: a Service's annotation may switch its pools L3 ↔ NodePort.
    pub member_mode_annotation: bool,
    pub listener_port: u16,
    pub fully_populated_create: bool,
    /// `max_create_body_bytes`: the largest fully-populated create sent.
    pub max_create_body_bytes: usize,
    /// `verify_per_resync`: trusted policies (and pools) read again per later convergence.
    pub verify_per_resync: usize,
    pub lb_create_timeout: Duration,
    pub write_timeout: Duration,
    /// Writes in flight at once across the routers of the process (the driver's write door).
    pub parallel_writes: usize,
    /// Load balancer creates in flight at once, a permit pool apart from the writes'.
    pub parallel_creates: usize,
    /// The router set and its placement limits (`scale_out`, `max_*_per_router`, graces).
    pub scale_out: ScaleOut,
    /// `dns_record_ttl`: the TTL of the DNS records that publish the Ingresses' addresses, which
    /// sets the set's move grace unless `move_dns_grace` does ([`ScaleOut::move_dns_grace`]).
    pub dns_record_ttl: Duration,
    /// `gateway_kept_grace`: how long a Gateway not served keeps its load balancer (None: for as
    /// long as the Gateway exists).
    pub gateway_kept_grace: Option<Duration>,
    /// `gateways_per_namespace`, `gateways_per_cluster`, `gateway_address_tag` and
    /// `gateway_addresses`: what the tenants' Gateways may take.
    pub gateway_limits: GatewayLimits,
    pub request_timeout: Duration,
    pub zone_aware_default: bool,
    /// `Backup` implies `health_monitor` (validated).
    pub zone_weighting_mode: ZoneWeightingMode,
    pub zone_overload_factor: f64,
    /// Effective threshold (from `zone_overload_factor` − 1 when only the deprecated key is set).
    pub zone_overload_threshold: f64,
    pub zone_min_local_endpoints: u32,
    pub health_monitor: bool,
    pub health_monitor_type: HealthMonitorType,
    pub health_monitor_url_path: String,
    pub health_monitor_expected_codes: String,
    pub health_monitor_delay: Duration,
    /// Never more than `health_monitor_delay` (validated).
    pub health_monitor_timeout: Duration,
    pub health_monitor_max_retries: u32,
    pub https_listener_port: u16,
    /// `(namespace, name)`, validated.
    pub default_tls_secret: Option<(String, String)>,
    pub ssl_redirect: bool,
    pub ssl_redirect_code: RedirectCode,
    pub insert_forwarded_headers: bool,
    pub tls_secret_read_users: Vec<String>,
    /// Whether the preflight looks at the token's Octavia roles (a warning at most).
    pub preflight_role_check: bool,
}

/// What the tenants' Gateways may take (`[octavia_defaults]` `gateways_per_namespace`,
/// `gateways_per_cluster`, `gateway_address_tag`, `gateway_addresses`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GatewayLimits {
    /// Gateways served per namespace (None: unlimited).
    pub per_namespace: Option<u32>,
    /// Gateways served in the cluster (None: unlimited).
    pub per_cluster: Option<u32>,
    /// A floating IP with this Neutron tag may be a Gateway's static address.
    pub address_tag: Option<String>,
    /// The floating IP addresses a Gateway's static address may be.
    pub addresses: Vec<String>,
}

impl GatewayLimits {
    /// Whether `address` is one of [`Self::addresses`] (compared as addresses, so that
    /// `2001:db8::1` and `2001:db8:0::1` are one).
    pub fn lists(&self, address: std::net::IpAddr) -> bool {
        self.addresses.iter().any(|a| a.parse::<std::net::IpAddr>().is_ok_and(|a| a == address))
    }
}

/// `[neutron]`: Keystone authentication for Neutron and Octavia. Validated per `auth_type`:
/// password auth has (`username` or `user_id`), `password` and (`project_name` or `project_id`);
/// application credential auth has the secret and (`application_credential_id`, or the name with
/// `username` or `user_id`).
#[derive(Clone, Debug, PartialEq)]
pub struct NeutronSettings {
    /// Always `Some` from [`crate::config::load`]; `None` only from
    /// [`crate::config::load_offline`] (commands that never talk to OpenStack).
    pub auth_url: Option<Url>,
    pub auth_type: AuthType,
    pub username: Option<String>,
    pub user_id: Option<String>,
    pub password: Option<Secret>,
    pub user_domain_name: String,
    pub user_domain_id: Option<String>,
    pub project_name: Option<String>,
    pub project_id: Option<String>,
    pub project_domain_name: String,
    pub project_domain_id: Option<String>,
    pub application_credential_id: Option<String>,
    pub application_credential_name: Option<String>,
    pub application_credential_secret: Option<Secret>,
    pub region_name: Option<String>,
    pub interface: Interface,
    pub cafile: Option<PathBuf>,
    pub insecure: bool,
    pub timeout: Duration,
}

/// The effective configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    pub default: DefaultSettings,
    pub kubernetes: KubernetesSettings,
    pub neutron_defaults: NeutronDefaults,
    pub octavia_defaults: OctaviaDefaults,
    pub neutron: NeutronSettings,
    pub status_responder: StatusResponderSettings,
}

/// A Kubernetes DNS-1123 subdomain (IngressClass names).
fn is_dns_subdomain(raw: &str) -> bool {
    !raw.is_empty()
        && raw.len() <= 253
        && raw.split('.').all(|label| {
            !label.is_empty()
                && label.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

/// Octavia `expected_codes`: `200`, `200,202` or `200-204`, codes 100..=599.
fn is_expected_codes(raw: &str) -> bool {
    let code = |s: &str| s.len() == 3 && s.parse::<u16>().is_ok_and(|c| (100..=599).contains(&c));
    if let Some((a, b)) = raw.split_once('-') {
        return code(a) && code(b) && a <= b;
    }
    raw.split(',').all(code)
}

impl Reader {
    /// Builds and validates; `Err` carries every problem found.
    pub(crate) fn settings(mut self) -> Result<Settings, Vec<ConfigProblem>> {
        let default =
            DefaultSettings { debug: self.value("DEFAULT", "debug"), log_format: self.choice("DEFAULT", "log_format") };
        let k = "kubernetes";
        let kubernetes = KubernetesSettings {
            api_root: self.get(k, "api_root"),
            ssl_ca_crt_file: self.get(k, "ssl_ca_crt_file"),
            token_file: self.get(k, "token_file"),
            kubeconfig: self.get(k, "kubeconfig"),
            enable_ingress: self.value(k, "enable_ingress"),
            ingress_class: if self.is_set(k, "ingress_class") {
                self.get(k, "ingress_class").filter(|s: &String| !s.is_empty())
            } else {
                None
            },
            use_endpoint_slices: self.value(k, "use_endpoint_slices"),
            node_pool: self.get(k, "node_pool").filter(|s: &String| !s.is_empty()),
            node_pool_label: self.value(k, "node_pool_label"),
            cluster_name: self.value(k, "cluster_name"),
            resync_period: self.value(k, "resync_period"),
            member_change_window: Duration::from_millis(u64::from(self.value::<u32>(k, "member_change_window_ms"))),
            leader_election: self.value(k, "leader_election"),
            lease_name: self.value(k, "lease_name"),
            lease_namespace: self.value(k, "lease_namespace"),
            leader_override: None,
            health_port: self.value(k, "health_port"),
            default_backend_namespaces: self.value(k, "default_backend_namespaces"),
            secret_namespaces: self.value(k, "secret_namespaces"),
            host_ownership: self.value(k, "host_ownership"),
            host_ownership_grace_period: self.value(k, "host_ownership_grace_period"),
        };
        let class = kubernetes.effective_ingress_class();
        if !is_dns_subdomain(&class) {
            let key = if kubernetes.ingress_class.is_some() { "ingress_class" } else { "node_pool" };
            self.problem(
                k,
                key,
                true,
                format!("{class:?} is not a valid IngressClass name (lower-case DNS subdomain)"),
            );
        }
        // A namespace name is a DNS label: anything else would be a watch that never matches,
        // and every TLS Secret named refused.
        for ns in &kubernetes.secret_namespaces {
            if !is_dns_subdomain(ns) || ns.len() > 63 || ns.contains('.') {
                self.problem(k, "secret_namespaces", true, format!("{ns:?} is not a namespace name (a DNS label)"));
            }
        }
        let nd = "neutron_defaults";
        let neutron_defaults = NeutronDefaults {
            external_svc_subnet: self.get(nd, "external_svc_subnet"),
            l7_router_ip: self.get(nd, "l7_router_ip"),
            lb_subnet: self.get(nd, "lb_subnet"),
            pod_subnet: self.get(nd, "pod_subnet"),
            resource_tags: self.value(nd, "resource_tags"),
            vip_ip_version: None,
        };
        // The VIP subnet is needed to create the router, not to plan it.
        if kubernetes.enable_ingress && neutron_defaults.lb_subnet.is_none() && !self.keystone_optional {
            let origin = self.origin(k, "enable_ingress");
            self.problems.push(ConfigProblem {
                origin,
                section: nd.into(),
                key: "lb_subnet".into(),
                value: None,
                message: "required when [kubernetes] enable_ingress = true".into(),
            });
        }
        let od = "octavia_defaults";
        let octavia_defaults = self.octavia_defaults();
        if octavia_defaults.member_mode == MemberMode::L2 && neutron_defaults.pod_subnet.is_none() {
            self.problem(
                od,
                "member_mode",
                true,
                "L2 requires [neutron_defaults] pod_subnet (the subnet members are created on)".into(),
            );
        }
        self.check_octavia(&octavia_defaults);
        self.check_scale_out_addresses(
            &octavia_defaults.scale_out,
            neutron_defaults.l7_router_ip,
            neutron_defaults.external_svc_subnet.as_deref(),
        );
        let neutron = self.neutron();
        let status_responder = self.status_responder();
        if !self.problems.is_empty() {
            return Err(self.problems);
        }
        Ok(Settings { default, kubernetes, neutron_defaults, octavia_defaults, neutron, status_responder })
    }

    /// `[octavia_defaults]`, read (its checks are `check_octavia`'s).
    fn octavia_defaults(&mut self) -> OctaviaDefaults {
        let od = "octavia_defaults";
        let dns_record_ttl = self.value(od, "dns_record_ttl");
        let mut octavia_defaults = OctaviaDefaults {
            l7_router_name: self.value(od, "l7_router_name"),
            l7_router_uuid: self.get(od, "l7_router_uuid"),
            lb_algorithm: self.choice(od, "lb_algorithm"),
            provider: self.value(od, "provider"),
            availability_zone: self.get(od, "availability_zone"),
            member_mode: self.choice(od, "member_mode"),
            member_mode_annotation: self.value(od, "member_mode_annotation"),
            listener_port: self.value(od, "listener_port"),
            fully_populated_create: self.value(od, "fully_populated_create"),
            max_create_body_bytes: self.value::<u32>(od, "max_create_body_bytes") as usize,
            verify_per_resync: self.value::<u32>(od, "verify_per_resync") as usize,
            lb_create_timeout: self.value(od, "lb_create_timeout"),
            write_timeout: self.value(od, "write_timeout"),
            parallel_writes: self.value::<u32>(od, "parallel_writes") as usize,
            parallel_creates: self.value::<u32>(od, "parallel_creates") as usize,
            scale_out: self.scale_out(dns_record_ttl),
            dns_record_ttl,
            gateway_kept_grace: Some(self.value::<Duration>(od, "gateway_kept_grace")).filter(|d| !d.is_zero()),
            gateway_limits: GatewayLimits {
                per_namespace: Some(self.value::<u32>(od, "gateways_per_namespace")).filter(|n| *n > 0),
                per_cluster: Some(self.value::<u32>(od, "gateways_per_cluster")).filter(|n| *n > 0),
                address_tag: Some(self.value::<String>(od, "gateway_address_tag")).filter(|t| !t.is_empty()),
                addresses: self.value(od, "gateway_addresses"),
            },
            request_timeout: self.value(od, "request_timeout"),
            zone_aware_default: self.value(od, "zone_aware_default"),
            zone_weighting_mode: self.choice(od, "zone_weighting_mode"),
            zone_overload_factor: self.value(od, "zone_overload_factor"),
            zone_overload_threshold: 0.0,
            router_zone: self.get(od, "router_zone"),
            zone_min_local_endpoints: self.value(od, "zone_min_local_endpoints"),
            health_monitor: self.value(od, "health_monitor"),
            health_monitor_type: self.choice(od, "health_monitor_type"),
            health_monitor_url_path: self.value(od, "health_monitor_url_path"),
            health_monitor_expected_codes: self.value(od, "health_monitor_expected_codes"),
            health_monitor_delay: self.value(od, "health_monitor_delay"),
            health_monitor_timeout: self.value(od, "health_monitor_timeout"),
            health_monitor_max_retries: self.value(od, "health_monitor_max_retries"),
            https_listener_port: self.value(od, "https_listener_port"),
            default_tls_secret: self.namespaced(od, "default_tls_secret"),
            ssl_redirect: self.value(od, "ssl_redirect"),
            ssl_redirect_code: self.choice(od, "ssl_redirect_code"),
            insert_forwarded_headers: self.value(od, "insert_forwarded_headers"),
            tls_secret_read_users: self.value(od, "tls_secret_read_users"),
            preflight_role_check: self.value(od, "preflight_role_check"),
        };
        octavia_defaults.zone_overload_threshold = self.overload_threshold(octavia_defaults.zone_overload_factor);
        octavia_defaults
    }

    /// `zone_overload_threshold`, or the deprecated `zone_overload_factor` − 1 when only it is set
    /// (kuryr.conf files written for the factor keep their meaning as closely as one number can).
    fn overload_threshold(&mut self, factor: f64) -> f64 {
        let od = "octavia_defaults";
        if !self.is_set(od, "zone_overload_threshold") && self.is_set(od, "zone_overload_factor") {
            return (factor - 1.0).max(0.0);
        }
        self.value(od, "zone_overload_threshold")
    }

    fn check_octavia(&mut self, o: &OctaviaDefaults) {
        let od = "octavia_defaults";
        if o.zone_weighting_mode == ZoneWeightingMode::Backup && !o.health_monitor {
            self.problem(
                od,
                "zone_weighting_mode",
                true,
                "requires [octavia_defaults] health_monitor = true (backup members only take \
                 traffic once a health monitor has marked the local members down)"
                    .into(),
            );
        }
        if o.health_monitor_timeout > o.health_monitor_delay {
            self.problem(
                od,
                "health_monitor_timeout",
                true,
                format!(
                    "must not exceed [octavia_defaults] health_monitor_delay = {}",
                    o.health_monitor_delay.as_secs()
                ),
            );
        }
        self.check_scale_out(&o.scale_out, o.l7_router_uuid.is_some(), &o.l7_router_name);
        if !o.health_monitor_url_path.starts_with('/') {
            self.problem(od, "health_monitor_url_path", true, "expected a path starting with /".into());
        }
        if !is_expected_codes(&o.health_monitor_expected_codes) {
            self.problem(
                od,
                "health_monitor_expected_codes",
                true,
                "expected an HTTP status code (100..599), a comma list of codes or a range like 200-204".into(),
            );
        }
    }

    /// A missing Keystone option (not an invalid one) of `[neutron]`: a problem unless
    /// [`Reader::keystone_optional`].
    fn require_keystone(&mut self, key: &str, why: &str) {
        if !self.keystone_optional {
            self.require("neutron", key, why);
        }
    }

    fn neutron(&mut self) -> NeutronSettings {
        let n = "neutron";
        let before = self.problems.len();
        let auth_url: Option<Url> = self.get(n, "auth_url");
        if auth_url.is_none() && self.problems.len() == before {
            self.require_keystone("auth_url", " (Keystone identity URL)");
        }
        let s = NeutronSettings {
            auth_url,
            auth_type: self.choice(n, "auth_type"),
            username: self.get(n, "username"),
            user_id: self.get(n, "user_id"),
            password: self.get(n, "password"),
            user_domain_name: self.value(n, "user_domain_name"),
            user_domain_id: self.get(n, "user_domain_id"),
            project_name: self.get(n, "project_name"),
            project_id: self.get(n, "project_id"),
            project_domain_name: self.value(n, "project_domain_name"),
            project_domain_id: self.get(n, "project_domain_id"),
            application_credential_id: self.get(n, "application_credential_id"),
            application_credential_name: self.get(n, "application_credential_name"),
            application_credential_secret: self.get(n, "application_credential_secret"),
            region_name: self.get(n, "region_name"),
            interface: self.choice(n, "interface"),
            cafile: self.get(n, "cafile"),
            insecure: self.value(n, "insecure"),
            timeout: self.value(n, "timeout"),
        };
        let has_user = s.username.is_some() || s.user_id.is_some();
        match s.auth_type {
            AuthType::Password => {
                let why = " (auth_type = password)";
                if !has_user {
                    self.require_keystone("username", " (auth_type = password; or set user_id)");
                }
                if s.password.as_ref().is_none_or(Secret::is_empty) {
                    self.require_keystone("password", why);
                }
                if s.project_name.is_none() && s.project_id.is_none() {
                    self.require_keystone("project_name", " (auth_type = password; or set project_id)");
                }
            }
            AuthType::ApplicationCredential => {
                if s.application_credential_secret.as_ref().is_none_or(Secret::is_empty) {
                    self.require_keystone("application_credential_secret", " (auth_type = v3applicationcredential)");
                }
                if s.application_credential_id.is_none() {
                    if s.application_credential_name.is_none() {
                        self.require(
                            n,
                            "application_credential_id",
                            " (auth_type = v3applicationcredential; or set application_credential_name with username or user_id)",
                        );
                    } else if !has_user {
                        self.require_keystone("username", " (application_credential_name needs username or user_id)");
                    }
                }
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::super::options::{LogFormat, OptKind, OptionSpec, find, options};
    use super::reader::{FromOpt, parse_int};
    use super::*;

    fn spec(section: &str, key: &str) -> &'static OptionSpec {
        find(section, key).unwrap()
    }

    #[test]
    fn every_option_is_rendered() {
        let text = "[neutron]\nauth_url = https://k/v3\nusername = u\npassword = p\nproject_id = x\n";
        let loaded = crate::config::load_texts(&[("t".into(), text.into())], Vec::new()).unwrap();
        for o in options() {
            assert!(
                loaded.settings.effective(o.section, o.key).is_some(),
                "[{}] {} is missing from Settings::effective",
                o.section,
                o.key
            );
        }
        assert_eq!(loaded.settings.effective("kubernetes", "nope"), None);
    }

    #[test]
    fn every_default_parses() {
        for o in options() {
            let Some(d) = o.default else { continue };
            let ok = match o.kind {
                OptKind::Bool => bool::from_opt(d, o).is_ok(),
                OptKind::Int { .. } | OptKind::Seconds { .. } => parse_int(d, o).is_ok(),
                OptKind::Float { .. } => f64::from_opt(d, o).is_ok(),
                OptKind::Choice(names) => names.contains(&d),
                OptKind::TagList => Vec::<String>::from_opt(d, o).is_ok(),
                _ => String::from_opt(d, o).is_ok(),
            };
            assert!(ok, "default of [{}] {} = {d:?} does not parse", o.section, o.key);
        }
    }

    #[test]
    fn choice_defaults_are_enum_defaults() {
        assert_eq!(spec("DEFAULT", "log_format").default, Some(LogFormat::default().as_str()));
        assert_eq!(spec("octavia_defaults", "lb_algorithm").default, Some(LbAlgorithm::default().as_str()));
        assert_eq!(spec("octavia_defaults", "member_mode").default, Some(MemberMode::default().as_str()));
        assert_eq!(
            spec("octavia_defaults", "zone_weighting_mode").default,
            Some(ZoneWeightingMode::default().as_str())
        );
        assert_eq!(
            spec("octavia_defaults", "health_monitor_type").default,
            Some(HealthMonitorType::default().as_str())
        );
        assert_eq!(spec("neutron", "auth_type").default, Some(AuthType::default().as_str()));
        assert_eq!(spec("neutron", "interface").default, Some(Interface::default().as_str()));
    }

    #[test]
    fn value_types() {
        for (raw, want) in [("TRUE", true), ("yes", true), ("On", true), ("1", true), ("no", false), ("0", false)] {
            assert_eq!(parse_bool(raw), Some(want));
        }
        assert_eq!(parse_bool("y"), None);
        assert!(is_uuid("0f6e2a5c-1b2d-4c3e-8f9a-0b1c2d3e4f5a"));
        assert!(!is_uuid("0f6e2a5c1b2d4c3e8f9a0b1c2d3e4f5a"));
        assert!(!is_uuid("0f6e2a5c-1b2d-4c3e-8f9a-0b1c2d3e4f5g"));
        assert_eq!(split_list(" a, b,,\nc ,"), ["a", "b", "c"]);
        assert!(check_tag("kuryr:cluster=a").is_ok());
        assert!(check_tag("a b").is_err() && check_tag("a,b").is_err() && check_tag("").is_err());
        assert!(is_expected_codes("200") && is_expected_codes("200,202") && is_expected_codes("200-204"));
        assert!(!is_expected_codes("20") && !is_expected_codes("204-200") && !is_expected_codes("600"));
        assert!(is_dns_subdomain("kuryr-l7-router") && !is_dns_subdomain("Kuryr"));
    }
}
