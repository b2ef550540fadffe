//! kuryr.conf (oslo.config-style INI) loading and typed settings.
//!
//! Layering is done by the `config` crate: one [`::config::File`] source per file (parsed by our
//! oslo-compatible [`ini::OsloIni`] format, later files override earlier ones), then an
//! [`::config::Environment`] source for `KURYR_<SECTION>__<KEY>` variables, which win over files.
//! Every value keeps its origin (file path or environment variable) so that validation problems
//! name where the bad value came from; all problems are reported together.
//!
//! [`options()`] is the single source of truth for option names, types, defaults and help; the
//! sample file and the docs are generated from it ([`reference`]) and tested against it.

mod effective;
pub mod ini;
pub mod leader;
pub mod options;
mod problem;
pub mod reference;
mod settings;

pub use leader::LeaderSettings;
pub use options::{
    AuthType, HealthMonitorType, Interface, LbAlgorithm, LogFormat, MemberMode, OptKind, OptionSpec, RedirectCode,
    ZoneWeightingMode, options,
};
pub use problem::{ConfigProblem, MASKED_VALUE};
pub use settings::{
    DEFAULT_INGRESS_CLASS, DefaultSettings, GatewayLimits, KubernetesSettings, NeutronDefaults, NeutronSettings,
    OctaviaDefaults, ScaleOut, Settings, StatusResponderSettings, check_tag, is_uuid, parse_bool, split_list,
};

use settings::{RawEntry, Reader};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Where kuryr.conf is read from when no `--config-file` is given.
pub const DEFAULT_CONFIG_FILE: &str = "/etc/kuryr/kuryr.conf";

/// Prefix of environment overrides: `KURYR_<SECTION>__<KEY>`.
pub const ENV_PREFIX: &str = "KURYR";

/// The `config` crate's origin label for values from [`::config::Environment`].
const CONFIG_ENV_ORIGIN: &str = "the environment";

/// A loaded configuration and the non-fatal findings (unknown options).
#[derive(Clone, Debug)]
pub struct Loaded {
    pub settings: Settings,
    /// Full sentences naming file (or variable), section and key; log them at warn level.
    pub warnings: Vec<String>,
}

/// Why the configuration could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("configuration file {} not found", .path.display())]
    NotFound { path: PathBuf },
    #[error("cannot read configuration file {}: {source}", .path.display())]
    Read { path: PathBuf, source: std::io::Error },
    /// Syntax error, with file and line.
    #[error("{0}")]
    Parse(#[from] ini::IniError),
    /// Layering by the `config` crate failed (not expected with our sources).
    #[error("cannot merge configuration sources: {0}")]
    Layering(#[from] ::config::ConfigError),
    /// Every invalid or missing value.
    #[error("invalid configuration:\n{}", list_problems(.0))]
    Invalid(Vec<ConfigProblem>),
}

fn list_problems(problems: &[ConfigProblem]) -> String {
    problems.iter().map(|p| format!("  - {p}")).collect::<Vec<_>>().join("\n")
}

/// Loads kuryr.conf files (in order, later override earlier), then `KURYR_<SECTION>__<KEY>`
/// overrides from `env` (pass `std::env::vars()`; tests pass a vec).
pub fn load(paths: &[PathBuf], env: impl IntoIterator<Item = (String, String)>) -> Result<Loaded, ConfigError> {
    load_as(paths, env, Needs::OpenStack)
}

/// What the command using the configuration talks to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Needs {
    /// OpenStack (every command but `plan`): the Keystone options of `[neutron]` are required.
    OpenStack,
    /// Nothing outside (`plan`): missing Keystone options are accepted; values that are given
    /// are still validated.
    Offline,
}

/// [`load`] for a command that never talks to OpenStack (`plan`): a kuryr.conf without Keystone
/// options (`[neutron]` auth_url, username, password, project ...) is accepted.
pub fn load_offline(paths: &[PathBuf], env: impl IntoIterator<Item = (String, String)>) -> Result<Loaded, ConfigError> {
    load_as(paths, env, Needs::Offline)
}

/// [`load`] or [`load_offline`].
pub(crate) fn load_as(
    paths: &[PathBuf],
    env: impl IntoIterator<Item = (String, String)>,
    needs: Needs,
) -> Result<Loaded, ConfigError> {
    load_texts_as(&read_files(paths)?, env, needs)
}

/// Each file's `(origin, text)`, in order.
fn read_files(paths: &[PathBuf]) -> Result<Vec<(String, String)>, ConfigError> {
    let mut texts = Vec::with_capacity(paths.len());
    for path in paths {
        let text = std::fs::read_to_string(path).map_err(|source| match source.kind() {
            std::io::ErrorKind::NotFound => ConfigError::NotFound { path: path.clone() },
            _ => ConfigError::Read { path: path.clone(), source },
        })?;
        texts.push((path_label(path), text));
    }
    Ok(texts)
}

fn path_label(path: &Path) -> String {
    path.display().to_string()
}

/// Like [`load`], from in-memory `(origin, text)` pairs; handy for tests of other modules.
pub fn load_texts(
    files: &[(String, String)],
    env: impl IntoIterator<Item = (String, String)>,
) -> Result<Loaded, ConfigError> {
    load_texts_as(files, env, Needs::OpenStack)
}

/// [`load_texts`] for a command that needs `needs`.
pub fn load_texts_as(
    files: &[(String, String)],
    env: impl IntoIterator<Item = (String, String)>,
    needs: Needs,
) -> Result<Loaded, ConfigError> {
    let (settings, warnings) = load_with(files, env, |reader| match needs {
        Needs::OpenStack => reader.settings(),
        Needs::Offline => reader.keystone_optional().settings(),
    })?;
    Ok(Loaded { settings, warnings })
}

/// What `kuryr-l7-router status-responder` reads: `[DEFAULT]` and `[status_responder]` only, so
/// that its pods need neither the Keystone secret nor any other section of kuryr.conf.
pub fn load_status_responder(
    paths: &[PathBuf],
    env: impl IntoIterator<Item = (String, String)>,
) -> Result<(DefaultSettings, StatusResponderSettings), ConfigError> {
    let texts = read_files(paths)?;
    // Unknown options were already reported by the controller reading the same file: not again.
    load_with(&texts, env, Reader::status_responder_only).map(|(loaded, _)| loaded)
}

/// Layers `files` and `env`, then reads the typed values with `read`; also the warnings.
fn load_with<T>(
    files: &[(String, String)],
    env: impl IntoIterator<Item = (String, String)>,
    read: impl FnOnce(Reader) -> Result<T, Vec<ConfigProblem>>,
) -> Result<(T, Vec<String>), ConfigError> {
    let mut builder = ::config::Config::builder();
    for (origin, text) in files {
        // Parse once up front so that a syntax error is reported with file and line as our own
        // error type rather than boxed inside the `config` crate's.
        ini::parse(origin, text)?;
        builder = builder.add_source(::config::File::from_str(text, ini::OsloIni::named(origin)));
    }
    let mut warnings = Vec::new();
    let env: ::config::Map<String, String> = env
        .into_iter()
        .filter(|(name, _)| {
            // `KURYR_NEUTRON=x` would replace the whole [neutron] table in the merged tree.
            let upper = name.to_uppercase();
            let hides_section = upper
                .strip_prefix("KURYR_")
                .is_some_and(|rest| options::SECTIONS.iter().any(|s| s.eq_ignore_ascii_case(rest)));
            if hides_section {
                warnings.push(format!("environment {name}: not of the form {ENV_PREFIX}_<SECTION>__<KEY> (ignored)"));
            }
            !hides_section
        })
        .collect();
    builder = builder.add_source(
        ::config::Environment::with_prefix(ENV_PREFIX).prefix_separator("_").separator("__").source(Some(env)),
    );
    let merged = builder.build()?;

    let mut values = BTreeMap::new();
    for section in options::SECTIONS {
        let table = ini::normalize_section(section);
        // A section nobody set is simply absent.
        let Ok(entries) = merged.get_table(&table) else {
            continue;
        };
        let mut entries: Vec<_> = entries.into_iter().collect();
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        for (key, value) in entries {
            let origin = match value.origin() {
                Some(CONFIG_ENV_ORIGIN) | None => {
                    format!("environment {ENV_PREFIX}_{}__{}", table.to_uppercase(), key.to_uppercase())
                }
                Some(file) => file.to_owned(),
            };
            let known = options::find(section, &key).is_some();
            match value.into_string() {
                Ok(value) if known => {
                    values.insert((section.to_string(), key), RawEntry { value, origin });
                }
                _ => warnings.push(unknown_option(&origin, section, &key)),
            }
        }
    }
    let files = match files {
        [] => "configuration".to_owned(),
        files => files.iter().map(|(o, _)| o.as_str()).collect::<Vec<_>>().join(", "),
    };
    let read = read(Reader::new(values, files)).map_err(ConfigError::Invalid)?;
    Ok((read, warnings))
}

/// Options of kuryr-kubernetes' kuryr.conf that look like ours but are deliberately not used, with
/// why (a file shared with kuryr-kubernetes sets them; "unknown option" would mislead).
pub const NOT_USED: &[(&str, &str, &str)] = &[(
    "neutron_defaults",
    "project",
    "not used by kuryr-l7-router (ignored): every object is created in, and every lookup limited to, \
     the project of the Keystone credentials ([neutron] project_name / project_id, or the application \
     credential's); creating in another project would need the admin role, which the controller does not use",
)];

fn unknown_option(origin: &str, section: &str, key: &str) -> String {
    if let Some((_, _, why)) = NOT_USED.iter().find(|(s, k, _)| *s == section && *k == key) {
        return format!("{origin}: [{section}] {key}: {why}");
    }
    let mut msg = format!("{origin}: [{section}] {key}: unknown option (ignored)");
    let closest = options().iter().filter(|o| o.section == section).map(|o| (edit_distance(o.key, key), o.key)).min();
    if let Some((distance, candidate)) = closest
        && distance <= 2.max(key.len() / 4)
    {
        msg.push_str(&format!("; did you mean {candidate}?"));
    }
    msg
}

/// Levenshtein distance, for "did you mean".
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let substitution = prev[j] + usize::from(ca != *cb);
            cur[j + 1] = substitution.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distance() {
        assert_eq!(edit_distance("enable_ingres", "enable_ingress"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }
}
