//! A CA bundle: the X.509 CA certificates that client certificates are checked against (a
//! Gateway's `spec.tls.frontend` validation, the `ca.crt` of a ConfigMap). Public material, but
//! what is kept is re-encoded from the parsed certificates: nothing else of the text (a private
//! key pasted by mistake, comments, other PEM blocks) ever reaches Barbican or a log.
//!
//! Pure, no clock: an expired CA is still a CA (haproxy refuses the clients it signed).

use super::key::pem_problem;
use super::{CertificateError, hex, parse_x509};
use base64::Engine;
use ring::digest::{SHA256, digest};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::{self, PemObject};

/// The CA certificates of a bundle, parsed and checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaCertificates {
    /// Every certificate, re-encoded as PEM `CERTIFICATE` blocks in their order.
    pem: String,
    /// Their subjects, in order (for messages).
    subjects: Vec<String>,
}

impl CaCertificates {
    /// Parses the `CERTIFICATE` blocks of `text` (other blocks are ignored): at least one, each
    /// an X.509 certificate that may act as a CA (its basicConstraints, when present, say cA).
    /// The error names the problem and the certificate's position, quoting nothing of the text.
    pub fn from_pem(text: &[u8]) -> Result<Self, String> {
        let mut ders: Vec<CertificateDer<'static>> = Vec::new();
        let mut subjects = Vec::new();
        for item in CertificateDer::pem_slice_iter(text) {
            let der = match item {
                Ok(der) => der,
                Err(pem::Error::NoItemsFound) => break,
                Err(e) => return Err(format!("the PEM text: {}", pem_problem(&e))),
            };
            let index = ders.len() + 1;
            let cert = parse_x509(der.as_ref(), index).map_err(|e| match e {
                CertificateError::MalformedCertificate { index, problem } => format!("certificate {index}: {problem}"),
                other => other.to_string(),
            })?;
            let subject = cert.subject().to_string();
            match cert.basic_constraints() {
                Err(e) => return Err(format!("certificate {index} ({subject}): basicConstraints: {e}")),
                Ok(Some(bc)) if !bc.value.ca => {
                    return Err(format!(
                        "certificate {index} ({subject}) is not a CA certificate (basicConstraints cA is false)"
                    ));
                }
                Ok(_) => {}
            }
            subjects.push(subject);
            ders.push(der);
        }
        if ders.is_empty() {
            return Err("no PEM CERTIFICATE block".into());
        }
        let pem = ders.iter().map(|d| pem_block(d.as_ref())).collect();
        Ok(Self { pem, subjects })
    }

    /// The certificates as PEM, re-encoded.
    pub fn pem(&self) -> &str {
        &self.pem
    }

    pub fn subjects(&self) -> &[String] {
        &self.subjects
    }

    pub fn len(&self) -> usize {
        self.subjects.len()
    }

    pub fn is_empty(&self) -> bool {
        self.subjects.is_empty()
    }
}

/// SHA-256 of `text`, hex (64 characters): the content id of a CA bundle's PEM.
pub fn sha256_hex(text: &str) -> String {
    hex(digest(&SHA256, text.as_bytes()).as_ref())
}

/// One PEM `CERTIFICATE` block, base64 in lines of 64 characters.
fn pem_block(der: &[u8]) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = String::from("-----BEGIN CERTIFICATE-----\n");
    for line in b64.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(line).unwrap_or_default());
        out.push('\n');
    }
    out.push_str("-----END CERTIFICATE-----\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ca(name: &str) -> (rcgen::Certificate, rcgen::KeyPair) {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(rcgen::DnType::CommonName, name);
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        (params.self_signed(&key).unwrap(), key)
    }

    /// Two CAs and a private key in one text: both CAs are kept, re-encoded, in order; the key
    /// is not (nothing but certificates leaves this function).
    #[test]
    fn keeps_the_ca_certificates_and_nothing_else() {
        let (a, key) = ca("ca-a");
        let (b, _) = ca("ca-b");
        let text = format!("# comment\n{}{}{}", a.pem(), key.serialize_pem(), b.pem());
        let got = CaCertificates::from_pem(text.as_bytes()).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got.subjects(), ["CN=ca-a", "CN=ca-b"]);
        assert!(!got.pem().contains("PRIVATE KEY"), "{}", got.pem());
        assert!(!got.pem().contains("comment"));
        // The same certificates as the input's blocks, whatever their line lengths.
        let strip = |s: &str| s.replace(['\n', '\r'], "");
        assert_eq!(strip(got.pem()), strip(&format!("{}{}", a.pem(), b.pem())));
        assert_eq!(sha256_hex(got.pem()).len(), 64);
    }

    #[test]
    fn refuses_no_certificate_a_broken_block_and_a_leaf() {
        assert_eq!(CaCertificates::from_pem(b"").unwrap_err(), "no PEM CERTIFICATE block");
        let (_, key) = ca("x");
        let only_key = CaCertificates::from_pem(key.serialize_pem().as_bytes()).unwrap_err();
        assert_eq!(only_key, "no PEM CERTIFICATE block");
        let broken = CaCertificates::from_pem(b"-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n");
        assert!(broken.is_err());
        let garbage = "-----BEGIN CERTIFICATE-----\naGVsbG8=\n-----END CERTIFICATE-----\n";
        let e = CaCertificates::from_pem(garbage.as_bytes()).unwrap_err();
        assert!(e.starts_with("certificate 1: not an X.509 certificate"), "{e}");
        // A leaf (cA false) is no trust anchor here.
        let leaf_key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(vec!["client.example".to_string()]).unwrap();
        params.is_ca = rcgen::IsCa::ExplicitNoCa;
        let leaf = params.self_signed(&leaf_key).unwrap();
        let e = CaCertificates::from_pem(leaf.pem().as_bytes()).unwrap_err();
        assert!(e.contains("is not a CA certificate"), "{e}");
        assert!(!e.contains("BEGIN"), "the message quotes nothing of the text: {e}");
    }
}
