//! The private key of a TLS Secret: PEM decoding (PKCS#8, PKCS#1 RSA, SEC1 EC), the check that it
//! belongs to a certificate (with the ring provider, the one crypto provider of the process), and
//! its normalized PKCS#8 form (what PKCS#12 bundles carry).
//!
//! [`PrivateKey`] never shows its bytes: `Debug` is redacted and it has no `Serialize`, `Display`
//! or public accessor outside this crate.

use super::error::CertificateError;
use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use x509_parser::prelude::FromDer;
use x509_parser::x509::SubjectPublicKeyInfo;

/// An unencrypted private key in PKCS#8 DER.
pub(crate) struct PrivateKey {
    pkcs8: Vec<u8>,
    /// `RSA`, `ECDSA` or `ED25519`.
    algorithm: String,
    /// The public key (SubjectPublicKeyInfo DER) ring derives from it.
    spki: Vec<u8>,
}

impl std::fmt::Debug for PrivateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PrivateKey").field("algorithm", &self.algorithm).field("der", &"<redacted>").finish()
    }
}

impl PrivateKey {
    /// PKCS#8 DER: only for the PKCS#12 bundle and the content id.
    pub(crate) fn pkcs8_der(&self) -> &[u8] {
        &self.pkcs8
    }

    pub(crate) fn algorithm(&self) -> &str {
        &self.algorithm
    }

    /// Whether this is the key of the certificate whose public key is `cert_spki`.
    pub(crate) fn matches(&self, cert_spki: &SubjectPublicKeyInfo<'_>) -> bool {
        let Ok((_, own)) = SubjectPublicKeyInfo::from_der(&self.spki) else {
            return false;
        };
        // Compare the algorithm and the key bits, not the whole DER: an RSA AlgorithmIdentifier may
        // encode its NULL parameters or omit them, and both are the same key.
        own.algorithm.algorithm == cert_spki.algorithm.algorithm
            && own.subject_public_key.data == cert_spki.subject_public_key.data
    }
}

/// Decodes the first private key of `pem` (as Go's `tls.X509KeyPair` and so `kubectl create secret
/// tls` do) and normalizes it to PKCS#8.
pub(crate) fn load(pem_text: &[u8]) -> Result<PrivateKey, CertificateError> {
    if pem_text.iter().all(u8::is_ascii_whitespace) {
        return Err(CertificateError::NoKey);
    }
    if contains(pem_text, b"ENCRYPTED PRIVATE KEY") || contains(pem_text, b"Proc-Type: 4,ENCRYPTED") {
        return Err(unsupported("the private key is encrypted; a TLS Secret carries an unencrypted key"));
    }
    let der = match PrivateKeyDer::from_pem_slice(pem_text) {
        Ok(der) => der,
        Err(pem::Error::NoItemsFound) => {
            for other in [&b"DSA PRIVATE KEY"[..], b"OPENSSH PRIVATE KEY"] {
                if contains(pem_text, other) {
                    let kind = String::from_utf8_lossy(other).into_owned();
                    return Err(unsupported(&format!("{kind} blocks are not supported; use PKCS#8, RSA or EC")));
                }
            }
            return Err(CertificateError::NoKey);
        }
        Err(e) => return Err(CertificateError::MalformedKey { problem: pem_problem(&e).into() }),
    };
    let signing = rustls::crypto::ring::sign::any_supported_type(&der).map_err(|_| {
        if is_one_der_sequence(der.secret_der()) {
            unsupported("not an RSA (2048 to 8192 bits), ECDSA P-256/P-384 or Ed25519 private key")
        } else {
            CertificateError::MalformedKey { problem: "the key block is not DER".into() }
        }
    })?;
    let spki = signing.public_key().ok_or_else(|| unsupported("cannot derive the public key of this key"))?.to_vec();
    let algorithm = format!("{:?}", signing.algorithm());
    let pkcs8 = match &der {
        PrivateKeyDer::Pkcs8(k) => k.secret_pkcs8_der().to_vec(),
        // PKCS#1 and SEC1 keys go into a PrivateKeyInfo with the algorithm identifier of their own
        // public key (rsaEncryption, or ecPublicKey with the curve): RFC 5208 / RFC 5915.
        PrivateKeyDer::Pkcs1(k) => wrap_pkcs8(&spki, k.secret_pkcs1_der())?,
        PrivateKeyDer::Sec1(k) => wrap_pkcs8(&spki, &sec1_without_parameters(k.secret_sec1_der())?)?,
        _ => return Err(unsupported("unknown private key encoding")),
    };
    // The normalized form must load to the same public key, or the bundle would carry a broken key.
    let again = rustls::crypto::ring::sign::any_supported_type(&PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
        pkcs8.as_slice(),
    )))
    .ok()
    .and_then(|k| k.public_key().map(|p| p.to_vec()));
    if again.as_deref() != Some(spki.as_slice()) {
        return Err(unsupported("cannot convert this key to PKCS#8"));
    }
    Ok(PrivateKey { pkcs8, algorithm, spki })
}

fn unsupported(problem: &str) -> CertificateError {
    CertificateError::UnsupportedKey { problem: problem.into() }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// A description of a PEM error that quotes nothing from the input (the input is key material).
pub(crate) fn pem_problem(e: &pem::Error) -> &'static str {
    match e {
        pem::Error::MissingSectionEnd { .. } => "a PEM block has no END line",
        pem::Error::IllegalSectionStart { .. } => "a PEM BEGIN line is malformed",
        pem::Error::Base64Decode(_) => "a PEM block is not valid base64",
        pem::Error::NoItemsFound => "no PEM block found",
        _ => "the PEM text cannot be read",
    }
}

/// PrivateKeyInfo { version 0, algorithm (from `spki`), privateKey OCTET STRING }.
fn wrap_pkcs8(spki: &[u8], inner: &[u8]) -> Result<Vec<u8>, CertificateError> {
    let broken = || unsupported("the public key of this key has an unexpected encoding");
    let (tag, content) = der_element(spki).ok_or_else(broken)?;
    if tag != TAG_SEQUENCE {
        return Err(broken());
    }
    let (alg_tag, _) = der_element(content).ok_or_else(broken)?;
    if alg_tag != TAG_SEQUENCE {
        return Err(broken());
    }
    let alg_len = der_total_len(content).ok_or_else(broken)?;
    let mut body = vec![0x02, 0x01, 0x00];
    body.extend_from_slice(&content[..alg_len]);
    body.extend_from_slice(&der_encode(TAG_OCTET_STRING, inner));
    Ok(der_encode(TAG_SEQUENCE, &body))
}

/// The ECPrivateKey without its `[0] parameters`: inside PKCS#8 the curve is in the algorithm
/// identifier already, and `openssl pkcs8 -topk8` omits it too, so a SEC1 key and its PKCS#8 twin
/// normalize to the same bytes (and the same content id).
fn sec1_without_parameters(sec1: &[u8]) -> Result<Vec<u8>, CertificateError> {
    let broken = || CertificateError::MalformedKey { problem: "the EC private key is not a DER SEQUENCE".into() };
    let (tag, mut rest) = der_element(sec1).ok_or_else(broken)?;
    if tag != TAG_SEQUENCE {
        return Err(broken());
    }
    let mut body = Vec::with_capacity(rest.len());
    while !rest.is_empty() {
        let len = der_total_len(rest).ok_or_else(broken)?;
        if rest[0] != TAG_EC_PARAMETERS {
            body.extend_from_slice(&rest[..len]);
        }
        rest = &rest[len..];
    }
    Ok(der_encode(TAG_SEQUENCE, &body))
}

const TAG_EC_PARAMETERS: u8 = 0xa0;
const TAG_SEQUENCE: u8 = 0x30;
const TAG_OCTET_STRING: u8 = 0x04;

/// The tag and content of the DER element at the start of `input`.
fn der_element(input: &[u8]) -> Option<(u8, &[u8])> {
    let (header, len) = der_header(input)?;
    Some((input[0], input.get(header..header + len)?))
}

/// Bytes taken by the DER element at the start of `input` (header + content).
fn der_total_len(input: &[u8]) -> Option<usize> {
    let (header, len) = der_header(input)?;
    (input.len() >= header + len).then_some(header + len)
}

/// (header length, content length) of the element at the start of `input`; definite lengths only.
fn der_header(input: &[u8]) -> Option<(usize, usize)> {
    let first = *input.get(1)?;
    if first < 0x80 {
        return Some((2, first as usize));
    }
    let n = (first & 0x7f) as usize;
    if n == 0 || n > 4 {
        return None;
    }
    let len = input.get(2..2 + n)?.iter().fold(0usize, |acc, b| (acc << 8) | *b as usize);
    Some((2 + n, len))
}

fn der_encode(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = content.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes: Vec<u8> = len.to_be_bytes().into_iter().skip_while(|b| *b == 0).collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend_from_slice(&bytes);
    }
    out.extend_from_slice(content);
    out
}

/// Whether `der` is exactly one DER SEQUENCE (a key ring does not support, rather than garbage).
fn is_one_der_sequence(der: &[u8]) -> bool {
    der.first() == Some(&TAG_SEQUENCE) && der_total_len(der) == Some(der.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn der_lengths_round_trip() {
        for len in [0usize, 1, 127, 128, 255, 256, 70_000] {
            let content = vec![7u8; len];
            let enc = der_encode(TAG_OCTET_STRING, &content);
            assert_eq!(der_total_len(&enc), Some(enc.len()), "len {len}");
            assert_eq!(der_element(&enc), Some((TAG_OCTET_STRING, content.as_slice())));
        }
        assert_eq!(der_header(&[0x30]), None);
        assert_eq!(der_header(&[0x30, 0x80]), None, "indefinite length is not DER");
        assert!(!is_one_der_sequence(&[0x30, 0x05, 1, 2]));
    }

    #[test]
    fn debug_is_redacted() {
        let k = PrivateKey { pkcs8: vec![0xAB; 40], algorithm: "ECDSA".into(), spki: vec![] };
        let dbg = format!("{k:?}");
        assert!(dbg.contains("<redacted>") && dbg.contains("ECDSA"), "{dbg}");
        assert!(!dbg.contains("171") && !dbg.to_lowercase().contains("ab, ab"), "{dbg}");
    }
}
