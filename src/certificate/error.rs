//! Why a `kubernetes.io/tls` Secret cannot be served. One variant per thing the owner of the
//! Secret has to fix; [`CertificateError::reason`] is the Kubernetes Event reason.
//!
//! Messages name the problem, the certificate (subject, SHA-256 fingerprint), a host or a date,
//! never key material or PEM text: they end up in Events, logs and `kubectl describe`.

/// A problem with the certificate or key of a TLS Secret.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CertificateError {
    /// `tls.crt` is empty or holds no `CERTIFICATE` PEM block.
    #[error("tls.crt holds no PEM CERTIFICATE block")]
    NoCertificate,
    /// `tls.key` is empty or holds no private key PEM block.
    #[error("tls.key holds no PEM private key (PRIVATE KEY, RSA PRIVATE KEY or EC PRIVATE KEY block)")]
    NoKey,
    /// A `CERTIFICATE` block is not valid PEM/base64 or not an X.509 certificate.
    /// `index` counts from 1 in the order of `tls.crt` (0: the PEM text itself is broken).
    #[error("tls.crt: {}: {problem}", position(*index))]
    MalformedCertificate { index: usize, problem: String },
    /// The key block is not valid PEM/base64 or not a DER private key of its declared kind.
    #[error("tls.key is malformed: {problem}")]
    MalformedKey { problem: String },
    /// A well-formed key we cannot use (encrypted, unsupported algorithm or size).
    #[error("tls.key: {problem}")]
    UnsupportedKey { problem: String },
    /// The key is not the key of the first (server) certificate.
    #[error(
        "tls.key does not belong to the first certificate of tls.crt ({subject}, sha256 {fingerprint}){}",
        match matches {
            Some(i) => format!(
                "; it belongs to certificate {i} of tls.crt: put the server certificate first, then its intermediates"
            ),
            None => String::new(),
        }
    )]
    KeyMismatch {
        subject: String,
        fingerprint: String,
        /// 1-based position of the certificate the key does belong to, if any.
        matches: Option<usize>,
    },
    /// `not_after` is in the past.
    #[error("certificate {subject} (sha256 {fingerprint}) expired at {not_after}")]
    CertificateExpired { subject: String, fingerprint: String, not_after: String },
    /// `not_before` is in the future.
    #[error("certificate {subject} (sha256 {fingerprint}) is not valid before {not_before}")]
    CertificateNotYetValid { subject: String, fingerprint: String, not_before: String },
    /// The Ingress names a host the certificate does not cover.
    #[error(
        "certificate {subject} (sha256 {fingerprint}) does not cover host {host} (it covers: {})",
        if names.is_empty() { "no DNS name".to_string() } else { names.join(", ") }
    )]
    HostNotCovered { host: String, subject: String, fingerprint: String, names: Vec<String> },
    /// Building the PKCS#12 bundle failed (should not happen for a parsed certificate).
    #[error("cannot build the PKCS#12 bundle of certificate {subject}: {problem}")]
    Encoding { subject: String, problem: String },
}

fn position(index: usize) -> String {
    if index == 0 { "the PEM text".to_string() } else { format!("certificate {index}") }
}

impl CertificateError {
    /// The CamelCase reason of the Kubernetes Event that reports this error.
    pub fn reason(&self) -> &'static str {
        match self {
            CertificateError::NoCertificate => "NoCertificate",
            CertificateError::NoKey => "NoKey",
            CertificateError::MalformedCertificate { .. } => "MalformedCertificate",
            CertificateError::MalformedKey { .. } => "MalformedKey",
            CertificateError::UnsupportedKey { .. } => "UnsupportedKey",
            CertificateError::KeyMismatch { .. } => "KeyMismatch",
            CertificateError::CertificateExpired { .. } => "CertificateExpired",
            CertificateError::CertificateNotYetValid { .. } => "CertificateNotYetValid",
            CertificateError::HostNotCovered { .. } => "HostNotCovered",
            CertificateError::Encoding { .. } => "CertificateEncodingFailed",
        }
    }
}
