//! The certificate of a `kubernetes.io/tls` Secret (`tls.crt`: PEM leaf then chain, `tls.key`:
//! PEM private key), checked and turned into what Barbican stores for Octavia: a PKCS#12 bundle.
//!
//! Pure: no I/O, no clock (callers pass `now`). Parsing checks that the Secret is usable at all
//! (PEM, X.509, key belongs to the leaf); validity dates and host coverage are separate checks
//! because they depend on the time and on the Ingress.

mod ca_bundle;
mod cache;
mod error;
mod host;
mod key;

pub use ca_bundle::{CaCertificates, sha256_hex};
pub use cache::CertificateCache;
pub use error::CertificateError;

use key::PrivateKey;
use ring::digest::{SHA256, digest};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::{self, PemObject};
use std::time::{Duration, SystemTime};
use x509_parser::certificate::X509Certificate;
use x509_parser::extensions::GeneralName;
use x509_parser::prelude::FromDer;

/// Length of [`ParsedCertificate::content_id`] in hex characters (64 bits).
pub const CONTENT_ID_LEN: usize = 16;

/// A TLS Secret's certificate chain and key, parsed and checked to belong together.
///
/// Holds the private key: its `Debug` shows only public facts, and it is not `Serialize`.
pub struct ParsedCertificate {
    /// Leaf first, then the chain as given.
    certificates: Vec<CertificateDer<'static>>,
    key: PrivateKey,
    subject: String,
    common_name: Option<String>,
    /// SAN DNS names, normalized (lower case, no trailing dot).
    dns_names: Vec<String>,
    not_before: i64,
    not_after: i64,
    fingerprint: String,
    content_id: String,
}

impl std::fmt::Debug for ParsedCertificate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParsedCertificate")
            .field("subject", &self.subject)
            .field("dns_names", &self.dns_names)
            .field("not_before", &rfc3339(self.not_before))
            .field("not_after", &rfc3339(self.not_after))
            .field("sha256", &self.fingerprint)
            .field("content_id", &self.content_id)
            .field("chain_certificates", &self.chain_len())
            .field("key", &self.key)
            .finish()
    }
}

impl ParsedCertificate {
    /// Parses `tls.crt` and `tls.key` of a TLS Secret.
    ///
    /// `tls.crt`: one or more `CERTIFICATE` blocks, the server (leaf) certificate first; other
    /// blocks are ignored. `tls.key`: the first `PRIVATE KEY`, `RSA PRIVATE KEY` or
    /// `EC PRIVATE KEY` block (RSA 2048–8192 bits, ECDSA P-256/P-384, Ed25519).
    pub fn from_pem(tls_crt: &[u8], tls_key: &[u8]) -> Result<Self, CertificateError> {
        let certificates = certificates_from_pem(tls_crt)?;
        let key = key::load(tls_key)?;
        let leaf_der = certificates[0].as_ref();
        let leaf = parse_x509(leaf_der, 1)?;
        let fingerprint = hex(digest(&SHA256, leaf_der).as_ref());
        let subject = leaf.subject().to_string();
        if !key.matches(leaf.public_key()) {
            let matches = certificates.iter().enumerate().skip(1).find_map(|(i, c)| {
                let cert = parse_x509(c.as_ref(), i + 1).ok()?;
                key.matches(cert.public_key()).then_some(i + 1)
            });
            return Err(CertificateError::KeyMismatch { subject, fingerprint, matches });
        }
        let common_name = leaf.subject().iter_common_name().next().and_then(|cn| cn.as_str().ok()).map(str::to_owned);
        let dns_names = dns_names(&leaf)?;
        let validity = leaf.validity();
        let (not_before, not_after) = (validity.not_before.timestamp(), validity.not_after.timestamp());
        let content_id = content_id(&certificates, key.pkcs8_der());
        Ok(Self { certificates, key, subject, common_name, dns_names, not_before, not_after, fingerprint, content_id })
    }

    /// The leaf's subject DN, e.g. `CN=www.example.com, O=Example`.
    pub fn subject(&self) -> &str {
        &self.subject
    }

    /// The leaf's first subject CN, if any.
    pub fn common_name(&self) -> Option<&str> {
        self.common_name.as_deref()
    }

    /// The leaf's SAN DNS names (lower case, without a trailing dot).
    pub fn dns_names(&self) -> &[String] {
        &self.dns_names
    }

    /// Start of the leaf's validity.
    pub fn not_before(&self) -> SystemTime {
        system_time(self.not_before)
    }

    /// End of the leaf's validity.
    /// `not_after` as RFC 3339, for plan output and messages.
    pub(crate) fn not_after_rfc3339(&self) -> String {
        rfc3339(self.not_after)
    }

    pub fn not_after(&self) -> SystemTime {
        system_time(self.not_after)
    }

    /// SHA-256 of the leaf certificate's DER, lower-case hex without colons.
    pub fn sha256_fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// Number of certificates after the leaf in `tls.crt` (intermediates, maybe a root).
    pub fn chain_len(&self) -> usize {
        self.certificates.len() - 1
    }

    /// All certificates, leaf first (public data).
    pub fn certificates(&self) -> &[CertificateDer<'static>] {
        &self.certificates
    }

    /// `RSA`, `ECDSA` or `ED25519`.
    pub fn key_algorithm(&self) -> &str {
        self.key.algorithm()
    }

    /// [`CONTENT_ID_LEN`] hex characters of a SHA-256 over every certificate and the key (in its
    /// PKCS#8 form, so the same key in PKCS#1 or SEC1 gives the same id). Names the Barbican
    /// secret: a renewed certificate or a new key gets a new secret, an unchanged Secret keeps it.
    pub fn content_id(&self) -> &str {
        &self.content_id
    }

    /// The names hosts are matched against: the SAN DNS names, or the CN when there are none
    /// (RFC 6125: clients ignore the CN as soon as there is a SAN).
    pub fn names(&self) -> Vec<&str> {
        if self.dns_names.is_empty() {
            self.common_name.iter().map(String::as_str).collect()
        } else {
            self.dns_names.iter().map(String::as_str).collect()
        }
    }

    /// Whether the certificate is valid for `host` (RFC 6125, case-insensitive, wildcard SANs
    /// cover exactly one left-most label; a wildcard host `*.example.com` needs that very SAN).
    pub fn covers(&self, host: &str) -> bool {
        let host = host::normalize(host);
        self.names().iter().any(|n| host::name_covers(&host::normalize(n), &host))
    }

    /// [`ParsedCertificate::covers`] as a result naming the host and what the certificate covers.
    pub fn check_host(&self, host: &str) -> Result<(), CertificateError> {
        if self.covers(host) {
            return Ok(());
        }
        Err(CertificateError::HostNotCovered {
            host: host.to_string(),
            subject: self.subject.clone(),
            fingerprint: self.fingerprint.clone(),
            names: self.names().into_iter().map(str::to_owned).collect(),
        })
    }

    /// Whether the leaf is valid at `now` (both ends inclusive, as in RFC 5280).
    pub fn check_validity(&self, now: SystemTime) -> Result<(), CertificateError> {
        let now = unix_seconds(now);
        if now < self.not_before {
            return Err(CertificateError::CertificateNotYetValid {
                subject: self.subject.clone(),
                fingerprint: self.fingerprint.clone(),
                not_before: rfc3339(self.not_before),
            });
        }
        if now > self.not_after {
            return Err(CertificateError::CertificateExpired {
                subject: self.subject.clone(),
                fingerprint: self.fingerprint.clone(),
                not_after: rfc3339(self.not_after),
            });
        }
        Ok(())
    }

    /// A PKCS#12 bundle of the key, the leaf and the chain, protected by the empty password
    /// (PBES2/AES-256 and an HMAC-SHA256 MAC, as `openssl pkcs12 -export -passout pass:` writes
    /// it): the payload of the Barbican secret Octavia loads with no passphrase.
    pub fn pkcs12(&self) -> Result<Vec<u8>, CertificateError> {
        use p12_keystore::{Certificate, KeyStore, KeyStoreEntry, PrivateKey, PrivateKeyChain};
        let fail = |e: p12_keystore::error::Error| CertificateError::Encoding {
            subject: self.subject.clone(),
            problem: e.to_string(),
        };
        let key = PrivateKey::from_der(self.key.pkcs8_der()).map_err(fail)?;
        let certs = self.certificates.iter().map(|c| Certificate::from_der(c.as_ref())).collect::<Result<Vec<_>, _>>();
        // localKeyId ties the key to the leaf; the leaf's fingerprint is unique and public.
        let local_key_id = digest(&SHA256, self.certificates[0].as_ref()).as_ref()[..20].to_vec();
        let chain = PrivateKeyChain::new(local_key_id, key, certs.map_err(fail)?);
        let mut store = KeyStore::new();
        store.add_entry(&format!("kuryr-{}", self.content_id), KeyStoreEntry::PrivateKeyChain(chain));
        store.writer("").write().map_err(fail)
    }
}

/// Every `CERTIFICATE` block of `pem_text`, in order.
fn certificates_from_pem(pem_text: &[u8]) -> Result<Vec<CertificateDer<'static>>, CertificateError> {
    let mut out = Vec::new();
    for item in CertificateDer::pem_slice_iter(pem_text) {
        match item {
            Ok(der) => {
                parse_x509(der.as_ref(), out.len() + 1)?;
                out.push(der);
            }
            Err(pem::Error::NoItemsFound) => break,
            // Quote nothing: tls.crt may hold a key by mistake.
            Err(e) => {
                return Err(CertificateError::MalformedCertificate { index: 0, problem: key::pem_problem(&e).into() });
            }
        }
    }
    if out.is_empty() {
        return Err(CertificateError::NoCertificate);
    }
    Ok(out)
}

fn parse_x509(der: &[u8], index: usize) -> Result<X509Certificate<'_>, CertificateError> {
    match X509Certificate::from_der(der) {
        Ok(([], cert)) => Ok(cert),
        Ok(_) => Err(CertificateError::MalformedCertificate {
            index,
            problem: "trailing bytes after the certificate".into(),
        }),
        Err(e) => {
            Err(CertificateError::MalformedCertificate { index, problem: format!("not an X.509 certificate: {e}") })
        }
    }
}

fn dns_names(cert: &X509Certificate<'_>) -> Result<Vec<String>, CertificateError> {
    let san = cert.subject_alternative_name().map_err(|e| CertificateError::MalformedCertificate {
        index: 1,
        problem: format!("subjectAltName extension: {e}"),
    })?;
    let Some(san) = san else { return Ok(Vec::new()) };
    Ok(san
        .value
        .general_names
        .iter()
        .filter_map(|n| match n {
            GeneralName::DNSName(d) => Some(host::normalize(d)),
            _ => None,
        })
        .collect())
}

/// SHA-256 over a label, then each certificate and the key, each with its length (so no two
/// different lists hash the same bytes), truncated to [`CONTENT_ID_LEN`].
fn content_id(certificates: &[CertificateDer<'_>], key_pkcs8: &[u8]) -> String {
    let mut ctx = ring::digest::Context::new(&SHA256);
    ctx.update(b"kuryr-l7-router certificate content v1");
    for part in certificates.iter().map(|c| c.as_ref()).chain([key_pkcs8]) {
        ctx.update(&(part.len() as u64).to_be_bytes());
        ctx.update(part);
    }
    let mut id = hex(ctx.finish().as_ref());
    id.truncate(CONTENT_ID_LEN);
    id
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn system_time(unix: i64) -> SystemTime {
    if unix >= 0 {
        SystemTime::UNIX_EPOCH + Duration::from_secs(unix as u64)
    } else {
        SystemTime::UNIX_EPOCH - Duration::from_secs(unix.unsigned_abs())
    }
}

fn unix_seconds(t: SystemTime) -> i64 {
    match t.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(d) => d.as_secs() as i64,
        Err(e) => -(e.duration().as_secs() as i64),
    }
}

fn rfc3339(unix: i64) -> String {
    k8s_openapi::jiff::Timestamp::from_second(unix).map(|t| t.to_string()).unwrap_or_else(|_| format!("@{unix}"))
}
