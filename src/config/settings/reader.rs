//! The reader of the layered raw values: typed values out of text, problems collected instead of
//! stopping at the first. A leaf of `config::settings`: every section's file (the root's
//! sections, `status_responder`, `scale_out`) reads through it, and it knows none of them.

use crate::config::options::{LogFormat, OptKind, OptionSpec, find};
use crate::config::problem::{ConfigProblem, MASKED_VALUE};
use crate::secret::Secret;
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;
use url::Url;

/// `[DEFAULT]`.
#[derive(Clone, Debug, PartialEq)]
pub struct DefaultSettings {
    pub debug: bool,
    pub log_format: LogFormat,
}

/// One raw value after layering, with where it came from.
#[derive(Clone, Debug)]
pub(crate) struct RawEntry {
    pub value: String,
    /// A file path, or `environment KURYR_<SECTION>__<KEY>`.
    pub origin: String,
}

/// Reads typed values out of the raw map, collecting problems instead of stopping at the first.
pub(crate) struct Reader {
    /// (section as in [`OptionSpec::section`], key) -> raw value.
    pub(super) values: BTreeMap<(String, String), RawEntry>,
    /// Names the files when a required value is missing (nothing set it).
    pub(super) files: String,
    pub(super) problems: Vec<ConfigProblem>,
    /// Missing Keystone options are not problems (`plan`: no OpenStack is talked to). Invalid
    /// values still are.
    pub(super) keystone_optional: bool,
}

/// Text -> typed value for one option kind.
pub(super) trait FromOpt: Sized {
    fn from_opt(raw: &str, spec: &OptionSpec) -> Result<Self, String>;
}

pub(super) fn expected(spec: &OptionSpec) -> String {
    format!("expected {}", spec.kind.describe())
}

/// oslo.config's `types.Boolean`.
pub fn parse_bool(raw: &str) -> Option<bool> {
    match raw.to_ascii_lowercase().as_str() {
        "true" | "yes" | "on" | "1" => Some(true),
        "false" | "no" | "off" | "0" => Some(false),
        _ => None,
    }
}

pub(super) fn parse_int(raw: &str, spec: &OptionSpec) -> Result<i64, String> {
    let (min, max) = match spec.kind {
        OptKind::Int { min, max } => (min, max),
        OptKind::Seconds { min } => (min, i64::from(u32::MAX)),
        _ => (i64::MIN, i64::MAX),
    };
    match raw.parse::<i64>() {
        Ok(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(expected(spec)),
    }
}

impl FromOpt for bool {
    fn from_opt(raw: &str, spec: &OptionSpec) -> Result<Self, String> {
        parse_bool(raw).ok_or_else(|| format!("{} (true/false, yes/no, on/off, 1/0)", expected(spec)))
    }
}

impl FromOpt for u16 {
    fn from_opt(raw: &str, spec: &OptionSpec) -> Result<Self, String> {
        u16::try_from(parse_int(raw, spec)?).map_err(|_| expected(spec))
    }
}

impl FromOpt for u32 {
    fn from_opt(raw: &str, spec: &OptionSpec) -> Result<Self, String> {
        u32::try_from(parse_int(raw, spec)?).map_err(|_| expected(spec))
    }
}

impl FromOpt for Duration {
    fn from_opt(raw: &str, spec: &OptionSpec) -> Result<Self, String> {
        let secs = u64::try_from(parse_int(raw, spec)?).map_err(|_| expected(spec))?;
        Ok(Duration::from_secs(secs))
    }
}

impl FromOpt for f64 {
    fn from_opt(raw: &str, spec: &OptionSpec) -> Result<Self, String> {
        let min = match spec.kind {
            OptKind::Float { min } => min,
            _ => f64::MIN,
        };
        match raw.parse::<f64>() {
            Ok(v) if v.is_finite() && v >= min => Ok(v),
            _ => Err(expected(spec)),
        }
    }
}

impl FromOpt for String {
    fn from_opt(raw: &str, spec: &OptionSpec) -> Result<Self, String> {
        match spec.kind {
            OptKind::Uuid if is_uuid(raw) => Ok(raw.to_ascii_lowercase()),
            OptKind::Uuid => Err(format!("{} (8-4-4-4-12 hexadecimal digits)", expected(spec))),
            OptKind::Tag => check_tag(raw).map(|()| raw.to_owned()),
            _ => Ok(raw.to_owned()),
        }
    }
}

impl FromOpt for Secret {
    fn from_opt(raw: &str, _spec: &OptionSpec) -> Result<Self, String> {
        Ok(Secret::new(raw))
    }
}

impl FromOpt for Url {
    fn from_opt(raw: &str, spec: &OptionSpec) -> Result<Self, String> {
        match Url::parse(raw) {
            Ok(u) if matches!(u.scheme(), "http" | "https") && u.has_host() => Ok(u),
            Ok(_) => Err(format!("{} with scheme http or https and a host", expected(spec))),
            Err(e) => Err(format!("{} ({e})", expected(spec))),
        }
    }
}

impl FromOpt for PathBuf {
    fn from_opt(raw: &str, spec: &OptionSpec) -> Result<Self, String> {
        let path = PathBuf::from(raw);
        if matches!(spec.kind, OptKind::Path { must_exist: true }) && !path.is_file() {
            return Err(format!("{}: no such file", expected(spec)));
        }
        Ok(path)
    }
}

impl FromOpt for IpAddr {
    fn from_opt(raw: &str, spec: &OptionSpec) -> Result<Self, String> {
        raw.parse().map_err(|_| expected(spec))
    }
}

impl FromOpt for Vec<String> {
    /// Comma-separated (newlines from continuation lines count as separators too), items
    /// trimmed, empty items dropped.
    fn from_opt(raw: &str, _spec: &OptionSpec) -> Result<Self, String> {
        let items: Vec<String> = split_list(raw);
        for item in &items {
            check_tag(item).map_err(|e| format!("item {item:?}: {e}"))?;
        }
        Ok(items)
    }
}

/// Splits a list value: commas and line breaks separate, whitespace is trimmed, empty items are
/// dropped.
pub fn split_list(raw: &str) -> Vec<String> {
    raw.split([',', '\n']).map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned).collect()
}

/// A dashed UUID: 8-4-4-4-12 hexadecimal digits (Neutron/Octavia id format).
pub fn is_uuid(raw: &str) -> bool {
    let groups: Vec<&str> = raw.split('-').collect();
    groups.len() == 5
        && groups.iter().zip([8, 4, 4, 4, 12]).all(|(g, n)| g.len() == n && g.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Octavia and Neutron tags: 1..=255 characters; no commas (tag filters are comma-separated
/// lists), no `/` (tags appear in URL paths), no whitespace or control characters.
pub fn check_tag(raw: &str) -> Result<(), String> {
    if raw.is_empty() || raw.chars().count() > 255 {
        return Err("expected a tag of 1 to 255 characters".into());
    }
    if let Some(c) = raw.chars().find(|c| *c == ',' || *c == '/' || c.is_whitespace() || c.is_control()) {
        return Err(format!("expected a tag without {c:?} (no commas, slashes or whitespace)"));
    }
    Ok(())
}

impl Reader {
    pub(crate) fn new(values: BTreeMap<(String, String), RawEntry>, files: String) -> Self {
        Self { values, files, problems: Vec::new(), keystone_optional: false }
    }

    /// Missing Keystone options (`[neutron]` auth_url and the credentials of its `auth_type`) are
    /// accepted: for commands that never talk to OpenStack.
    pub(crate) fn keystone_optional(mut self) -> Self {
        self.keystone_optional = true;
        self
    }

    pub(super) fn spec(section: &str, key: &str) -> &'static OptionSpec {
        match find(section, key) {
            Some(spec) => spec,
            // Only reachable through a typo in this file; the tests read every option.
            None => panic!("option [{section}] {key} is not in options()"),
        }
    }

    pub(super) fn origin(&self, section: &str, key: &str) -> String {
        self.values.get(&(section.to_owned(), key.to_owned())).map_or_else(|| self.files.clone(), |e| e.origin.clone())
    }

    pub(super) fn is_set(&self, section: &str, key: &str) -> bool {
        self.values.contains_key(&(section.to_owned(), key.to_owned()))
    }

    pub(super) fn problem(&mut self, section: &str, key: &str, shown: bool, message: String) {
        let spec = Self::spec(section, key);
        let entry = self.values.get(&(section.to_owned(), key.to_owned()));
        let value = match entry {
            Some(_) if spec.secret => Some(MASKED_VALUE.to_owned()),
            Some(e) if shown => Some(e.value.clone()),
            _ => None,
        };
        self.problems.push(ConfigProblem {
            origin: self.origin(section, key),
            section: section.to_owned(),
            key: key.to_owned(),
            value,
            message,
        });
    }

    /// The value if set and valid, else the default (`None` when there is none). An invalid
    /// value is recorded as a problem. An empty value of an option without default means unset.
    pub(super) fn get_with<T>(
        &mut self,
        section: &str,
        key: &str,
        parse: impl Fn(&str, &OptionSpec) -> Result<T, String>,
    ) -> Option<T> {
        let spec = Self::spec(section, key);
        let default = || spec.default.and_then(|d| parse(d, spec).ok());
        let Some(entry) = self.values.get(&(section.to_owned(), key.to_owned())) else {
            return default();
        };
        if entry.value.is_empty() && spec.default.is_none() {
            return None;
        }
        let result = if entry.value.contains('\n') && !spec.kind.is_list() {
            Err(format!("{}, on a single line (continuation lines are only for list options)", expected(spec)))
        } else {
            parse(&entry.value, spec)
        };
        match result {
            Ok(v) => Some(v),
            Err(message) => {
                self.problem(section, key, true, message);
                default()
            }
        }
    }

    pub(super) fn get<T: FromOpt>(&mut self, section: &str, key: &str) -> Option<T> {
        self.get_with(section, key, T::from_opt)
    }

    pub(super) fn value<T: FromOpt + Default>(&mut self, section: &str, key: &str) -> T {
        self.get(section, key).unwrap_or_default()
    }

    /// A `namespace/name` option.
    pub(super) fn namespaced(&mut self, section: &str, key: &str) -> Option<(String, String)> {
        let v: String = self.get(section, key)?;
        match v.split_once('/') {
            Some((ns, name)) if !ns.is_empty() && !name.is_empty() && !name.contains('/') => {
                Some((ns.to_string(), name.to_string()))
            }
            _ => {
                self.problem(section, key, true, "expected namespace/name".into());
                None
            }
        }
    }

    pub(super) fn choice<T: FromStr + Default>(&mut self, section: &str, key: &str) -> T {
        self.get_with(section, key, |raw, spec| T::from_str(raw).map_err(|_| expected(spec))).unwrap_or_default()
    }

    /// Records a missing required value, unless the value was given but invalid (already said).
    pub(super) fn require(&mut self, section: &str, key: &str, why: &str) {
        if self.problems.iter().any(|p| p.section == section && p.key == key) {
            return;
        }
        self.problem(section, key, false, format!("required option is not set{why}"));
    }
}
