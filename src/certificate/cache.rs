//! Parsed certificates kept across translations, keyed by the Secret's uid and resourceVersion:
//! the controller translates the whole router on every Sync, and parsing PEM and X.509 (and
//! checking the key against the leaf) is most of what a TLS Secret costs. An unchanged Secret is
//! parsed once; a new resourceVersion (a renewal) replaces its entry; a Secret no longer handed
//! to the translation (deleted, or no Ingress names it) leaves the cache at the next
//! translation, so key material is not kept for a Secret we no longer serve.
//!
//! The cache holds parse results only. Validity dates are checked by the caller at each
//! translation: they depend on the clock, not on the Secret.

use super::{CertificateError, ParsedCertificate};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// A parse result as the cache keeps it.
pub type Parsed = Result<Arc<ParsedCertificate>, CertificateError>;

/// See the module docs. Shared by every translation of one controller (`Arc`).
#[derive(Default)]
pub struct CertificateCache {
    /// uid → (resourceVersion, result). One entry per Secret: a newer version replaces it.
    entries: Mutex<HashMap<String, (String, Parsed)>>,
    /// Parses done (cache misses), for tests and the benchmark.
    parses: AtomicU64,
}

/// Public facts only: the cache holds private keys.
impl std::fmt::Debug for CertificateCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CertificateCache").field("entries", &self.len()).field("parses", &self.parses()).finish()
    }
}

impl CertificateCache {
    /// The parse of `tls.crt` and `tls.key` of the Secret `uid` at `resource_version`, from the
    /// cache when that version was parsed before. Without a uid or a resourceVersion (objects
    /// read from files), nothing identifies the content: it is parsed and not kept.
    pub fn parse(&self, uid: &str, resource_version: &str, tls_crt: &[u8], tls_key: &[u8]) -> Parsed {
        if uid.is_empty() || resource_version.is_empty() {
            return self.parse_now(tls_crt, tls_key);
        }
        if let Some((rv, parsed)) = self.entries.lock().expect("lock").get(uid)
            && rv == resource_version
        {
            return parsed.clone();
        }
        // Parsed outside the lock: concurrent translations of other Secrets do not wait on it.
        let parsed = self.parse_now(tls_crt, tls_key);
        self.entries.lock().expect("lock").insert(uid.to_string(), (resource_version.to_string(), parsed.clone()));
        parsed
    }

    /// Drops every entry whose uid is not in `uids` (the Secrets handed to this translation).
    pub fn retain(&self, uids: &HashSet<&str>) {
        self.entries.lock().expect("lock").retain(|uid, _| uids.contains(uid.as_str()));
    }

    /// How many parses were done (cache misses) since the cache was made.
    pub fn parses(&self) -> u64 {
        self.parses.load(Ordering::Relaxed)
    }

    /// Secrets with a parse result kept.
    pub fn len(&self) -> usize {
        self.entries.lock().expect("lock").len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn parse_now(&self, tls_crt: &[u8], tls_key: &[u8]) -> Parsed {
        self.parses.fetch_add(1, Ordering::Relaxed);
        ParsedCertificate::from_pem(tls_crt, tls_key).map(Arc::new)
    }
}
