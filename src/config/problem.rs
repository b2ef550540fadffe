//! What a configuration problem says, and how secrets are shown: a leaf that the reader and
//! the loader both use.

/// How secrets are shown.
pub const MASKED_VALUE: &str = crate::secret::MASK;

/// One invalid or missing value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigProblem {
    /// The file the value came from, `environment KURYR_<SECTION>__<KEY>`, or (for a missing
    /// value) the files that were read.
    pub origin: String,
    /// As written in kuryr.conf: `DEFAULT`, `kubernetes`, ...
    pub section: String,
    pub key: String,
    /// The offending value; `********` for secrets; `None` when missing.
    pub value: Option<String>,
    /// What is expected.
    pub message: String,
}

impl std::fmt::Display for ConfigProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: [{}] {}", self.origin, self.section, self.key)?;
        if let Some(value) = &self.value {
            write!(f, " = {value:?}")?;
        }
        write!(f, ": {}", self.message)
    }
}
