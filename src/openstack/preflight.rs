//! Start-up preflight: what the cloud can do and what the configured user may do, checked with
//! three reads (Keystone token, Octavia's version document, Octavia's providers) before the first
//! write, instead of finding out from a failed write minutes later.
//!
//! The decisions are pure functions over what was read ([`enabled_features`], [`check_provider`],
//! [`check_roles`]), table-tested; [`run`] does the reads. Not checked (it needs a write): whether
//! a fully-populated create leaves its children ACTIVE on this cloud.

use super::error::{Result, Service};
use super::keystone::Request;
use super::octavia::Octavia;
use reqwest::Method;
use serde::Deserialize;
use std::collections::BTreeSet;

/// An Octavia API version `v2.N` (compared by major, then minor).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ApiVersion {
    pub major: u32,
    pub minor: u32,
}

impl ApiVersion {
    pub const fn new(major: u32, minor: u32) -> Self {
        Self { major, minor }
    }

    /// `"v2.26"` (or `"2.26"`); `None` for anything else.
    pub fn parse(s: &str) -> Option<Self> {
        let (major, minor) = s.strip_prefix('v').unwrap_or(s).split_once('.')?;
        Some(Self { major: major.parse().ok()?, minor: minor.parse().ok()? })
    }
}

impl std::fmt::Display for ApiVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// One entry of Octavia's version document (`GET /`). Unknown fields (`links`, `updated`) ignored.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
pub struct VersionEntry {
    pub id: String,
    #[serde(default)]
    pub status: String,
}

/// One entry of `GET /v2/lbaas/providers`.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
pub struct Provider {
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
}

/// Optional Octavia features the router uses, each gated by the API version that added it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Feature {
    /// Tags on every object: how we find, adopt and garbage-collect what we created.
    Tags,
    /// `redirect_http_code` on L7 policies: our HTTP→HTTPS redirects (308/301).
    RedirectHttpCode,
    /// `additive_only` on the `allowed_cidrs`/`tls_*` listener updates.
    AdditiveOnly,
    /// HSTS headers on TERMINATED_HTTPS listeners.
    Hsts,
}

impl Feature {
    pub fn name(self) -> &'static str {
        match self {
            Feature::Tags => "tags",
            Feature::RedirectHttpCode => "redirect_http_code (HTTP→HTTPS redirects)",
            Feature::AdditiveOnly => "additive_only",
            Feature::Hsts => "HSTS",
        }
    }
}

/// Feature → the first Octavia API version that has it.
pub const FEATURES: &[(Feature, ApiVersion)] = &[
    (Feature::Tags, ApiVersion::new(2, 5)),
    (Feature::RedirectHttpCode, ApiVersion::new(2, 9)),
    (Feature::AdditiveOnly, ApiVersion::new(2, 11)),
    (Feature::Hsts, ApiVersion::new(2, 27)),
];

/// The newest usable version: the highest `CURRENT` or `SUPPORTED` one (`DEPRECATED` ones are not
/// counted, nor ids that are not `vN.M`).
pub(crate) fn newest_version(versions: &[VersionEntry]) -> Option<ApiVersion> {
    versions
        .iter()
        .filter(|v| matches!(v.status.to_ascii_uppercase().as_str(), "CURRENT" | "SUPPORTED"))
        .filter_map(|v| ApiVersion::parse(&v.id))
        .max()
}

/// The features the cloud's newest usable API version has.
pub(crate) fn enabled_features(versions: &[VersionEntry]) -> BTreeSet<Feature> {
    let Some(newest) = newest_version(versions) else { return BTreeSet::new() };
    FEATURES.iter().filter(|(_, min)| newest >= *min).map(|(f, _)| *f).collect()
}

/// How bad a finding is: an [`Severity::Error`] stops the controller before its first write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Warning,
    Error,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    pub severity: Severity,
    pub message: String,
}

impl Finding {
    fn error(message: impl Into<String>) -> Self {
        Self { severity: Severity::Error, message: message.into() }
    }
    fn warning(message: impl Into<String>) -> Self {
        Self { severity: Severity::Warning, message: message.into() }
    }
}

const OVN_REFUSED: &str = "the ovn provider has no L7 policies, no HTTP/TERMINATED_HTTPS listeners and no member \
     weights, all of which the L7 router needs; use the amphora provider";

/// The configured provider (`""`: Octavia's default) against the cloud's list. Octavia's default
/// provider is not in its API: with none configured we can only tell it when the cloud offers
/// exactly one provider.
pub(crate) fn check_provider(configured: &str, providers: &[Provider]) -> Vec<Finding> {
    let names: Vec<&str> = providers.iter().map(|p| p.name.as_str()).collect();
    if !configured.is_empty() {
        if configured.eq_ignore_ascii_case("ovn") {
            return vec![Finding::error(format!("[octavia_defaults] provider = {configured}: {OVN_REFUSED}"))];
        }
        if !names.contains(&configured) {
            return vec![Finding::error(format!(
                "[octavia_defaults] provider = {configured} is not offered by this cloud (providers: {})",
                if names.is_empty() { "none".to_string() } else { names.join(", ") }
            ))];
        }
        return Vec::new();
    }
    match names.as_slice() {
        ["ovn"] => vec![Finding::error(format!("the cloud's only (so default) provider is ovn: {OVN_REFUSED}"))],
        [_] => Vec::new(),
        _ if names.contains(&"ovn") => vec![Finding::warning(format!(
            "[octavia_defaults] provider is not set and the cloud offers {}; Octavia's default provider is not \
             visible in its API: if it is ovn, creating the router fails. Set provider = amphora to be sure",
            names.join(", ")
        ))],
        _ => Vec::new(),
    }
}

/// Roles that may write load balancers under Octavia's default policy.
pub const OCTAVIA_WRITE_ROLES: &[&str] = &["load-balancer_member", "load-balancer_admin", "admin"];
/// Roles that may only read under Octavia's default policy.
pub const OCTAVIA_READ_ROLES: &[&str] =
    &["load-balancer_observer", "load-balancer_global_observer", "load-balancer_admin", "admin"];
/// Roles that may create Barbican secrets (TLS certificates) under Barbican's default policy.
pub const BARBICAN_CREATE_ROLES: &[&str] = &["creator", "admin"];

fn has_any(roles: &[String], wanted: &[&str]) -> bool {
    roles.iter().any(|r| wanted.iter().any(|w| r.eq_ignore_ascii_case(w)))
}

/// Whether the token's roles may create Barbican secrets.
pub(crate) fn can_store_certificates(roles: &[String]) -> bool {
    has_any(roles, BARBICAN_CREATE_ROLES)
}

/// The message for a TLS Ingress when the user cannot store its certificate.
pub(crate) fn missing_creator_message() -> String {
    "the OpenStack user lacks Barbican's `creator` role (or admin), needed to store TLS certificates for Octavia \
     (openstack role add --user <user> --project <project> creator)"
        .to_string()
}

/// The token's roles against Octavia's and Barbican's default policies. `tls_in_use`: some Ingress
/// has TLS, so a missing `creator` is an error rather than a warning. A token without Octavia's
/// write roles is only a warning: a cloud with Octavia's keystone-default-roles policy lets
/// `member` write, which the roles alone cannot tell (`[octavia_defaults] preflight_role_check =
/// false` skips it, see [`check_roles_with`]).
pub fn check_roles(roles: &[String], tls_in_use: bool) -> Vec<Finding> {
    check_roles_with(roles, tls_in_use, true)
}

/// [`check_roles`], the Octavia roles looked at only when `octavia_roles`.
pub(crate) fn check_roles_with(roles: &[String], tls_in_use: bool, octavia_roles: bool) -> Vec<Finding> {
    let mut out = Vec::new();
    let list = if roles.is_empty() { "none".to_string() } else { roles.join(", ") };
    if octavia_roles && !has_any(roles, OCTAVIA_WRITE_ROLES) {
        let why = if has_any(roles, OCTAVIA_READ_ROLES) { " (its roles only allow reading)" } else { "" };
        out.push(Finding::warning(format!(
            "the OpenStack user may not be able to write load balancers{why}: Octavia's default policy needs the \
             role {} (token roles: {list}); a cloud with Octavia's keystone-default-roles policy lets `member` \
             write. If writes are refused (403), add the role; if they are not, set [octavia_defaults] \
             preflight_role_check = false to skip this check",
            OCTAVIA_WRITE_ROLES.join(" or ")
        )));
    }
    if !can_store_certificates(roles) {
        let msg = missing_creator_message();
        out.push(if tls_in_use {
            Finding::error(msg)
        } else {
            Finding::warning(format!("{msg}; TLS Ingresses will fail"))
        });
    }
    out
}

/// The Keystone method of an application credential's token.
pub const APPLICATION_CREDENTIAL: &str = "application_credential";

/// The message for TLS with an application credential (measured in docs/tls.md).
pub(crate) fn application_credential_tls_message() -> String {
    "the OpenStack credentials are an application credential: Octavia cannot re-scope its token to read TLS \
     certificates from Barbican (\"Using a delegated token to create another token is not allowed\"), so every \
     HTTPS listener create is refused (400) and TLS Ingresses are not served (their HTTP routes are). Fix: use \
     password authentication ([neutron] auth_type = password, username, project_name, and the password from \
     the Secret as KURYR_NEUTRON__PASSWORD; docs/deployment.md)"
        .to_string()
}

/// How the token was obtained (`methods`) against TLS: an application credential cannot serve it.
/// `tls_in_use`: some Ingress has TLS, so it is an error rather than a warning.
pub(crate) fn check_auth(methods: &[String], tls_in_use: bool) -> Vec<Finding> {
    if !methods.iter().any(|m| m == APPLICATION_CREDENTIAL) {
        return Vec::new();
    }
    let msg = application_credential_tls_message();
    vec![if tls_in_use { Finding::error(msg) } else { Finding::warning(msg) }]
}

/// Findings for missing features the router uses: tags are an error (without them nothing we
/// create can be found again), redirects a warning (they are turned off). The others (HSTS,
/// `additive_only`) are not used yet: their absence is only listed in [`Report::summary`].
pub(crate) fn check_features(features: &BTreeSet<Feature>, newest: Option<ApiVersion>) -> Vec<Finding> {
    let v = newest.map(|v| v.to_string()).unwrap_or_else(|| "unknown".into());
    FEATURES
        .iter()
        .filter(|(f, _)| !features.contains(f))
        .filter_map(|(f, min)| match f {
            Feature::Tags => Some(Finding::error(format!(
                "Octavia API {v} has no tags (needs {min}): the router could not find what it created"
            ))),
            Feature::RedirectHttpCode => Some(Finding::warning(format!(
                "Octavia API {v} has no redirect_http_code (needs {min}): HTTP→HTTPS redirects are disabled"
            ))),
            Feature::AdditiveOnly | Feature::Hsts => None,
        })
        .collect()
}

/// What the preflight found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    pub api_version: Option<ApiVersion>,
    pub features: BTreeSet<Feature>,
    pub providers: Vec<String>,
    pub roles: Vec<String>,
    pub findings: Vec<Finding>,
}

/// What the preflight looks at beyond the cloud's capabilities.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checks {
    /// Some Ingress has TLS (then what TLS needs is an error, not a warning).
    pub tls_in_use: bool,
    /// `[octavia_defaults] preflight_role_check`.
    pub octavia_roles: bool,
}

impl Default for Checks {
    fn default() -> Self {
        Self { tls_in_use: false, octavia_roles: true }
    }
}

impl Report {
    /// Decides from what was read.
    pub fn decide(
        versions: &[VersionEntry],
        providers: &[Provider],
        roles: &[String],
        configured_provider: &str,
        tls_in_use: bool,
    ) -> Self {
        let checks = Checks { tls_in_use, ..Checks::default() };
        Self::decide_with(versions, providers, roles, &[], configured_provider, &checks)
    }

    /// [`Report::decide`] with the token's `methods` and the [`Checks`].
    pub(crate) fn decide_with(
        versions: &[VersionEntry],
        providers: &[Provider],
        roles: &[String],
        methods: &[String],
        configured_provider: &str,
        checks: &Checks,
    ) -> Self {
        let api_version = newest_version(versions);
        let features = enabled_features(versions);
        let mut findings = check_provider(configured_provider, providers);
        findings.extend(check_roles_with(roles, checks.tls_in_use, checks.octavia_roles));
        findings.extend(check_auth(methods, checks.tls_in_use));
        findings.extend(check_features(&features, api_version));
        Self {
            api_version,
            features,
            providers: providers.iter().map(|p| p.name.clone()).collect(),
            roles: roles.to_vec(),
            findings,
        }
    }

    pub fn has(&self, f: Feature) -> bool {
        self.features.contains(&f)
    }

    pub fn errors(&self) -> impl Iterator<Item = &Finding> {
        self.findings.iter().filter(|f| f.severity == Severity::Error)
    }

    pub fn warnings(&self) -> impl Iterator<Item = &Finding> {
        self.findings.iter().filter(|f| f.severity == Severity::Warning)
    }

    /// All errors in one message (`None`: the controller may start).
    pub fn refusal(&self) -> Option<String> {
        let errors: Vec<&str> = self.errors().map(|f| f.message.as_str()).collect();
        (!errors.is_empty()).then(|| format!("preflight failed: {}", errors.join("; ")))
    }

    /// The summary line: version, features (with and without), providers, roles (not secret).
    pub fn summary(&self) -> String {
        let list = |v: Vec<String>| if v.is_empty() { "none".to_string() } else { v.join(", ") };
        let missing =
            FEATURES.iter().filter(|(f, _)| !self.has(*f)).map(|(f, min)| format!("{} (needs {min})", f.name()));
        format!(
            "Octavia API {} (features: {}; missing: {}); providers: {}; token roles: {}",
            self.api_version.map(|v| v.to_string()).unwrap_or_else(|| "unknown".into()),
            list(self.features.iter().map(|f| f.name().to_string()).collect()),
            list(missing.collect()),
            list(self.providers.clone()),
            list(self.roles.clone()),
        )
    }

    /// For `check-config --online`: the summary, then one line per finding.
    pub fn render(&self) -> String {
        let mut out = format!("preflight: {}\n", self.summary());
        for f in &self.findings {
            let tag = match f.severity {
                Severity::Error => "error",
                Severity::Warning => "warning",
            };
            out.push_str(&format!("preflight {tag}: {}\n", f.message));
        }
        if self.findings.is_empty() {
            out.push_str("preflight: OK\n");
        }
        out
    }

    /// Logs the summary and each finding once.
    pub fn log(&self) {
        tracing::info!("preflight: {}", self.summary());
        for f in &self.findings {
            match f.severity {
                Severity::Error => tracing::error!("preflight: {}", f.message),
                Severity::Warning => tracing::warn!("preflight: {}", f.message),
            }
        }
    }
}

/// Octavia's version document (`GET /` of the load-balancer endpoint).
pub(crate) async fn read_versions(octavia: &Octavia) -> Result<Vec<VersionEntry>> {
    #[derive(Deserialize)]
    struct Doc {
        #[serde(default)]
        versions: Vec<VersionEntry>,
    }
    let doc: Doc = octavia.session().send_json(&Request::new(Service::LoadBalancer, Method::GET, "/")).await?;
    Ok(doc.versions)
}

/// `GET /v2/lbaas/providers`.
pub(crate) async fn read_providers(octavia: &Octavia) -> Result<Vec<Provider>> {
    #[derive(Deserialize)]
    struct Doc {
        #[serde(default)]
        providers: Vec<Provider>,
    }
    let req = Request::new(Service::LoadBalancer, Method::GET, "/v2/lbaas/providers");
    let doc: Doc = octavia.session().send_json(&req).await?;
    Ok(doc.providers)
}

/// The three reads and the decision. A failed read is an error (the cloud cannot be used).
pub async fn run(octavia: &Octavia, configured_provider: &str, tls_in_use: bool) -> Result<Report> {
    run_with(octavia, configured_provider, &Checks { tls_in_use, ..Checks::default() }).await
}

/// [`run`] with the [`Checks`].
pub async fn run_with(octavia: &Octavia, configured_provider: &str, checks: &Checks) -> Result<Report> {
    let token = octavia.session().token_info().await?;
    let versions = read_versions(octavia).await?;
    let providers = read_providers(octavia).await?;
    Ok(Report::decide_with(&versions, &providers, &token.roles, &token.methods, configured_provider, checks))
}

#[cfg(test)]
#[path = "preflight_tests.rs"]
mod tests;
