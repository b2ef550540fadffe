//! Generated reference material: `etc/kuryr.conf.sample` and the option tables of
//! `docs/configuration.md`. Both are checked against [`options()`] by `tests/it/config_sample.rs`;
//! regenerate with `UPDATE_CONFIG_REFERENCE=1 cargo test --test it config_sample::`.

use super::options::{OptionSpec, SECTIONS, options};

/// Marks the generated part of `docs/configuration.md`.
pub const DOCS_BEGIN: &str = "<!-- BEGIN GENERATED OPTIONS (src/config/options.rs) -->";
pub const DOCS_END: &str = "<!-- END GENERATED OPTIONS -->";

fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.len() + 1 + word.len() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

fn sample_default(spec: &OptionSpec) -> String {
    match spec.default {
        None => " = <None>".to_owned(),
        Some("") => " =".to_owned(),
        Some(d) => format!(" = {d}"),
    }
}

/// The oslo-style sample: every option commented out with its default, under its section.
pub fn sample() -> String {
    let mut out = String::from(
        "# kuryr-l7-router configuration sample.\n\
         #\n\
         # Generated from src/config/options.rs; do not edit by hand (regenerate with\n\
         # `UPDATE_CONFIG_REFERENCE=1 cargo test --test it config_sample::`).\n\
         #\n\
         # Values read by kuryr-l7-router from kuryr.conf; other sections of a kuryr.conf\n\
         # are ignored. Each option can be overridden by the environment variable\n\
         # KURYR_<SECTION>__<KEY>, e.g. KURYR_NEUTRON__PASSWORD.\n",
    );
    for section in SECTIONS {
        out.push_str(&format!("\n[{section}]\n"));
        for spec in options().iter().filter(|o| o.section == *section) {
            out.push('\n');
            let help = format!("{} ({})", spec.help, spec.type_description());
            for line in wrap(&help, 76) {
                out.push_str(&format!("# {line}\n"));
            }
            out.push_str(&format!("#{}{}\n", spec.key, sample_default(spec)));
        }
    }
    out
}

fn cell(text: &str) -> String {
    text.replace('|', "\\|")
}

/// The Markdown tables that go between [`DOCS_BEGIN`] and [`DOCS_END`] (markers included).
pub fn markdown() -> String {
    let mut out = format!("{DOCS_BEGIN}\n");
    for section in SECTIONS {
        out.push_str(&format!("\n### `[{section}]`\n\n| Option | Type | Default | Description |\n|---|---|---|---|\n"));
        for spec in options().iter().filter(|o| o.section == *section) {
            let default = match spec.default {
                None => "*unset*".to_owned(),
                Some("") => "*empty*".to_owned(),
                Some(d) => format!("`{d}`"),
            };
            let secret = if spec.secret { " Secret: never logged or shown." } else { "" };
            out.push_str(&format!(
                "| `{}` | {} | {} | {}{} |\n",
                spec.key,
                cell(&spec.type_description()),
                default,
                cell(spec.help),
                secret
            ));
        }
    }
    out.push_str(&format!("\n{DOCS_END}\n"));
    out
}
