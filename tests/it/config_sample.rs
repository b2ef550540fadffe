//! `etc/kuryr.conf.sample` and `docs/configuration.md` must describe exactly the options of
//! `config::options()`, with the same defaults. Regenerate both with
//! `UPDATE_CONFIG_REFERENCE=1 cargo test --test it config_sample::`.

use kuryr_l7_router::config::{self, ini, reference};
use std::collections::BTreeMap;
use std::path::PathBuf;

const UPDATE: &str = "UPDATE_CONFIG_REFERENCE";

fn repo_file(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn updating() -> bool {
    std::env::var_os(UPDATE).is_some()
}

/// (section, key) -> default (`None`: unset) from options().
fn expected() -> BTreeMap<(String, String), Option<String>> {
    config::options().iter().map(|o| ((o.section.to_owned(), o.key.to_owned()), o.default.map(str::to_owned))).collect()
}

/// Compares both directions and the defaults; panics with every difference.
fn compare(what: &str, found: &BTreeMap<(String, String), Option<String>>) {
    let want = expected();
    let mut diffs = Vec::new();
    for (k, d) in &want {
        match found.get(k) {
            None => diffs.push(format!("[{}] {} is missing", k.0, k.1)),
            Some(f) if f != d => diffs.push(format!("[{}] {}: default {f:?}, options() says {d:?}", k.0, k.1)),
            Some(_) => {}
        }
    }
    for k in found.keys().filter(|k| !want.contains_key(*k)) {
        diffs.push(format!("[{}] {} is not in options()", k.0, k.1));
    }
    assert!(diffs.is_empty(), "{what} differs from options() (regenerate with {UPDATE}=1):\n{}", diffs.join("\n"));
}

/// Reads `#key = default` lines under `[section]` headers (oslo sample style).
fn parse_sample(text: &str) -> BTreeMap<(String, String), Option<String>> {
    let mut section = String::new();
    let mut found = BTreeMap::new();
    for line in text.lines() {
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = name.to_owned();
        } else if let Some(rest) = line.strip_prefix('#').filter(|r| !r.starts_with([' ', '#']) && !r.is_empty()) {
            let (key, default) = rest.split_once('=').unwrap_or_else(|| panic!("bad sample line {line:?}"));
            let default = match default.trim() {
                "<None>" => None,
                d => Some(d.to_owned()),
            };
            let previous = found.insert((section.clone(), key.trim().to_owned()), default);
            assert!(previous.is_none(), "[{section}] {} twice in the sample", key.trim());
        }
    }
    found
}

#[test]
fn sample_matches_options() {
    let path = repo_file("etc/kuryr.conf.sample");
    if updating() {
        std::fs::write(&path, reference::sample()).unwrap();
    }
    let text = std::fs::read_to_string(&path).unwrap();
    compare("etc/kuryr.conf.sample", &parse_sample(&text));
    assert!(text == reference::sample(), "etc/kuryr.conf.sample is stale; regenerate with {UPDATE}=1");
    // The sample is a valid kuryr.conf (everything commented out).
    let sections = ini::parse("sample", &text).unwrap();
    assert!(sections.values().all(|keys| keys.is_empty()));
}

/// Reads the rows of the option tables: `| `key` | type | default | description |`.
fn parse_docs(block: &str) -> BTreeMap<(String, String), Option<String>> {
    let mut section = String::new();
    let mut found = BTreeMap::new();
    for line in block.lines() {
        if let Some(name) = line.strip_prefix("### `[").and_then(|l| l.strip_suffix("]`")) {
            section = name.to_owned();
        } else if let Some(row) = line.strip_prefix("| `") {
            let cells: Vec<&str> = row.split(" | ").collect();
            let key = cells[0].trim_end_matches('`').to_owned();
            let default = match cells[2] {
                "*unset*" => None,
                "*empty*" => Some(String::new()),
                d => Some(d.trim_matches('`').to_owned()),
            };
            found.insert((section.clone(), key), default);
        }
    }
    found
}

#[test]
fn docs_match_options() {
    let path = repo_file("docs/configuration.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let (Some(begin), Some(end)) = (text.find(reference::DOCS_BEGIN), text.find(reference::DOCS_END)) else {
        panic!("docs/configuration.md lacks the generated-options markers");
    };
    let end = end + reference::DOCS_END.len() + 1;
    let block = &text[begin..end.min(text.len())];
    if updating() {
        let updated = format!("{}{}{}", &text[..begin], reference::markdown(), &text[end.min(text.len())..]);
        std::fs::write(&path, updated).unwrap();
        return;
    }
    compare("docs/configuration.md", &parse_docs(block));
    assert!(block == reference::markdown(), "docs/configuration.md tables are stale; regenerate with {UPDATE}=1");
}
