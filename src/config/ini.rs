//! An oslo.config-compatible INI reader, plugged into the `config` crate as a [`::config::Format`].
//!
//! The `config` crate's own INI mode (rust-ini) reads kuryr.conf files wrongly: comma lists and
//! indented continuation lines are mangled, backslashes are eaten as escapes (a regex `^a-\d+$`
//! becomes `^a-d+$`), a repeated section replaces the earlier one and section names keep their
//! case. This module mirrors `oslo_config/iniparser.py` (`BaseParser.parse`) and
//! `oslo_config/cfg.py` (`ConfigParser`) instead:
//!
//! * `key = value` and `key: value` (whichever separator comes first splits the line);
//! * a line starting with `#` or `;` is a comment (only at column 0: an indented line is a
//!   continuation, exactly as in oslo);
//! * an indented line continues the previous value; the pieces are joined with `'\n'`; a blank
//!   line ends the value;
//! * no escape processing at all;
//! * the value is stripped, and if it starts and ends with the same quote (`"` or `'`) that pair
//!   is removed (oslo does exactly this, nothing more);
//! * a repeated section is merged with the earlier one; a repeated key: the later one wins;
//! * section names other than `DEFAULT` are lower-cased (oslo's `_normalize_group_name`);
//! * keys are lower-cased and `-` is read as `_` (oslo option dests use `_`).
//!
//! Two deliberate differences: `[DEFAULT]` is stored under the table name `default` so that the
//! environment source (which lower-cases variable names) lands in the same table; and an
//! assignment before any section is reported at the line of the key, not the line after it.

use ::config::{FileStoredFormat, Format, Map, Value, ValueKind};
use std::collections::BTreeMap;

/// Name of the table that holds `[DEFAULT]` in the `config` crate's tree.
pub const DEFAULT_TABLE: &str = "default";

/// A syntax error in one file, with the 1-based line number.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{origin}:{line}: {message}: {text:?}")]
pub struct IniError {
    /// The file (or other origin) being parsed.
    pub origin: String,
    pub line: usize,
    pub message: String,
    /// The offending line as written.
    pub text: String,
}

/// One parsed assignment: the value (continuation lines joined with `'\n'`) and its first line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IniValue {
    pub value: String,
    pub line: usize,
}

/// Section (normalized) -> key (normalized) -> value. Sections are merged, later keys win.
pub type IniSections = BTreeMap<String, BTreeMap<String, IniValue>>;

/// Normalizes a section name the way oslo does (`DEFAULT` kept, everything else lower-cased),
/// then maps `DEFAULT` to [`DEFAULT_TABLE`].
pub fn normalize_section(name: &str) -> String {
    if name == "DEFAULT" { DEFAULT_TABLE.to_owned() } else { name.to_lowercase() }
}

/// Normalizes an option name: lower-case, `-` read as `_`.
pub(crate) fn normalize_key(name: &str) -> String {
    name.trim().to_lowercase().replace('-', "_")
}

/// Parses oslo-style INI text. `origin` only labels errors.
pub fn parse(origin: &str, text: &str) -> Result<IniSections, IniError> {
    let mut parser = Parser { origin, sections: IniSections::new(), section: None };
    parser.run(text)?;
    Ok(parser.sections)
}

struct Parser<'a> {
    origin: &'a str,
    sections: IniSections,
    section: Option<String>,
}

/// An assignment being collected (it may continue over the following indented lines).
struct Pending {
    key: String,
    pieces: Vec<String>,
    line: usize,
    text: String,
}

impl Parser<'_> {
    fn error(&self, line: usize, message: &str, text: &str) -> IniError {
        IniError { origin: self.origin.to_owned(), line, message: message.to_owned(), text: text.to_owned() }
    }

    fn run(&mut self, text: &str) -> Result<(), IniError> {
        let mut pending: Option<Pending> = None;
        for (index, raw) in text.lines().enumerate() {
            let lineno = index + 1;
            let line = raw.trim_end();
            if line.is_empty() {
                // A blank line ends a multi-line value.
                self.flush(pending.take())?;
                continue;
            }
            if line.starts_with([' ', '\t']) {
                match pending.as_mut() {
                    Some(p) => p.pieces.push(line.trim_start().to_owned()),
                    None => return Err(self.error(lineno, "unexpected continuation line", raw)),
                }
                continue;
            }
            self.flush(pending.take())?;
            if let Some(rest) = line.strip_prefix('[') {
                let Some(name) = rest.strip_suffix(']') else {
                    return Err(self.error(lineno, "invalid section (must end with ])", raw));
                };
                if name.is_empty() {
                    return Err(self.error(lineno, "empty section name", raw));
                }
                let name = normalize_section(name);
                self.sections.entry(name.clone()).or_default();
                self.section = Some(name);
            } else if line.starts_with(['#', ';']) {
                // Comment.
            } else {
                let (key, value) = split_key_value(line)
                    .ok_or_else(|| self.error(lineno, "no ':' or '=' found in assignment", raw))?;
                if key.is_empty() {
                    return Err(self.error(lineno, "key cannot be empty", raw));
                }
                pending =
                    Some(Pending { key: normalize_key(key), pieces: vec![value], line: lineno, text: raw.to_owned() });
            }
        }
        self.flush(pending)
    }

    fn flush(&mut self, pending: Option<Pending>) -> Result<(), IniError> {
        let Some(p) = pending else { return Ok(()) };
        let Some(section) = self.section.as_ref() else {
            return Err(self.error(p.line, "section must be started before assignment", &p.text));
        };
        let value = IniValue { value: p.pieces.join("\n"), line: p.line };
        self.sections.entry(section.clone()).or_default().insert(p.key, value);
        Ok(())
    }
}

/// oslo's `_split_key_value`: the first of `=` / `:` splits; surrounding quotes are removed only
/// when the whole (stripped) value starts and ends with the same quote character.
fn split_key_value(line: &str) -> Option<(&str, String)> {
    let at = match (line.find('='), line.find(':')) {
        (Some(e), Some(c)) => e.min(c),
        (Some(e), None) => e,
        (None, Some(c)) => c,
        (None, None) => return None,
    };
    let key = line[..at].trim();
    let value = line[at + 1..].trim();
    let value = match value.chars().next() {
        Some(q @ ('"' | '\'')) if value.ends_with(q) => {
            // `value[1:-1]` in Python; a lone quote becomes the empty string, as in oslo.
            if value.len() >= 2 { &value[1..value.len() - 1] } else { "" }
        }
        _ => value,
    };
    Some((key, value.to_owned()))
}

/// The [`::config::Format`] for kuryr.conf files. `origin` (normally the file path) becomes the
/// origin of every value, so that validation errors can name the file a value came from even
/// when the source was built with [`::config::File::from_str`] (which passes no URI).
#[derive(Clone, Debug, Default)]
pub struct OsloIni {
    pub origin: Option<String>,
}

impl OsloIni {
    pub fn named(origin: impl Into<String>) -> Self {
        Self { origin: Some(origin.into()) }
    }
}

impl Format for OsloIni {
    fn parse(
        &self,
        uri: Option<&String>,
        text: &str,
    ) -> Result<Map<String, Value>, Box<dyn std::error::Error + Send + Sync>> {
        let origin = self.origin.as_ref().or(uri).cloned().unwrap_or_else(|| "<string>".into());
        let sections = parse(&origin, text)?;
        Ok(to_config_map(&origin, sections))
    }
}

impl FileStoredFormat for OsloIni {
    fn file_extensions(&self) -> &'static [&'static str] {
        &["conf", "ini"]
    }
}

/// Converts parsed sections into the `config` crate's tree: one table per section, string leaves
/// carrying `origin`. Types are applied later, per option, like oslo does.
pub(crate) fn to_config_map(origin: &str, sections: IniSections) -> Map<String, Value> {
    let origin = origin.to_owned();
    sections
        .into_iter()
        .map(|(section, keys)| {
            let table: Map<String, Value> =
                keys.into_iter().map(|(k, v)| (k, Value::new(Some(&origin), ValueKind::String(v.value)))).collect();
            (section, Value::new(Some(&origin), ValueKind::Table(table)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(s: &IniSections, section: &str, key: &str) -> String {
        s.get(section).and_then(|k| k.get(key)).map(|v| v.value.clone()).unwrap_or_default()
    }

    #[test]
    fn separators_comments_quotes() {
        let s =
            parse("t", "[DEFAULT]\n# c\n; c\na = 1\nb: 2\nc = x:y\nd: x=y\ne = \"q\"\nf = \"q' \ng='a b'\nh = \"\n")
                .unwrap();
        assert_eq!(get(&s, "default", "a"), "1");
        assert_eq!(get(&s, "default", "b"), "2");
        assert_eq!(get(&s, "default", "c"), "x:y");
        assert_eq!(get(&s, "default", "d"), "x=y");
        assert_eq!(get(&s, "default", "e"), "q");
        assert_eq!(get(&s, "default", "f"), "\"q'");
        assert_eq!(get(&s, "default", "g"), "a b");
        assert_eq!(get(&s, "default", "h"), "");
    }

    #[test]
    fn continuation_blank_line_and_comment_end_value() {
        let s = parse("t", "[x]\na = 1,\n  2,\n\t3\nb = 4\n\n  \nc = 5\n").unwrap();
        assert_eq!(get(&s, "x", "a"), "1,\n2,\n3");
        assert_eq!(get(&s, "x", "b"), "4");
        assert_eq!(get(&s, "x", "c"), "5");
    }

    #[test]
    fn errors_have_lines() {
        let e = parse("f.conf", "[x]\na = 1\nnovalue\n").unwrap_err();
        assert_eq!((e.line, e.origin.as_str()), (3, "f.conf"));
        assert!(e.to_string().starts_with("f.conf:3: no ':' or '=' found"), "{e}");
        assert_eq!(parse("f", "  x\n").unwrap_err().line, 1);
        assert_eq!(parse("f", "[x\n").unwrap_err().message, "invalid section (must end with ])");
        assert_eq!(parse("f", "[]\n").unwrap_err().message, "empty section name");
        assert_eq!(parse("f", "[x]\n= 1\n").unwrap_err().message, "key cannot be empty");
        let e = parse("f", "# c\na = 1\n").unwrap_err();
        assert_eq!((e.line, e.message.as_str()), (2, "section must be started before assignment"));
    }

    #[test]
    fn crlf_is_tolerated() {
        let s = parse("t", "[X]\r\nKey-Name = v \r\n").unwrap();
        assert_eq!(get(&s, "x", "key_name"), "v");
    }
}
