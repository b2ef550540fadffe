//! Our certificates in Barbican, planned (pure): which secrets to create, which refs the HTTPS
//! listener uses, and which secrets are garbage once it does.
//!
//! One certificate content is one opaque Barbican secret (a PKCS#12 bundle), named
//! `kuryr-l7-router:<cluster>:<certificate>:<content id>`. Barbican secrets carry no tags, so the
//! name is how we find, adopt and garbage-collect our own: a secret whose name does not start
//! with our prefix is never touched. The content id is part of the name, so a renewed
//! certificate (cert-manager) is a new secret: it is created, the listener is switched to it in
//! one PUT, and only then is the old one deleted, so no handshake ever finds a deleted secret.

use std::collections::{BTreeMap, BTreeSet};

use super::diff::PRODUCT_TAG;
use crate::model::HttpsListener;

/// A secret of ours as listed from Barbican.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredSecret {
    /// `secret_ref`, the URL Octavia is given.
    pub secret_ref: String,
    pub name: String,
    /// Barbican's `created` (RFC 3339): the oldest of two copies is kept.
    pub created: String,
}

/// `kuryr-l7-router:<cluster>:`: every secret of ours starts with it.
pub fn secret_prefix(cluster: &str) -> String {
    format!("{PRODUCT_TAG}:{cluster}:")
}

/// The Barbican secret name of one certificate content.
pub fn secret_name(cluster: &str, certificate: &str, content_id: &str) -> String {
    format!("{}{certificate}:{content_id}", secret_prefix(cluster))
}

/// `(certificate, content id)` of one of our secret names; None for anything else.
pub fn parse_secret_name<'a>(cluster: &str, name: &'a str) -> Option<(&'a str, &'a str)> {
    let rest = name.strip_prefix(&secret_prefix(cluster))?;
    let (certificate, content) = rest.rsplit_once(':')?;
    (!certificate.is_empty() && !content.is_empty()).then_some((certificate, content))
}

/// The UUID at the end of a secret ref: refs are compared by it, because the same secret may be
/// written with another endpoint URL (public vs internal interface).
pub fn secret_uuid(secret_ref: &str) -> &str {
    secret_ref.trim_end_matches('/').rsplit('/').next().unwrap_or(secret_ref)
}

/// What to do in Barbican before the HTTPS listener is written.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CertificatePlan {
    /// Certificates whose current content is not stored yet: (certificate, secret name).
    pub create: Vec<(String, String)>,
    /// Certificate → the stored secret the listener uses for it.
    pub refs: BTreeMap<String, String>,
    /// Certificates with nothing to serve: broken or missing, and never stored before.
    pub unavailable: Vec<String>,
}

/// Plan the certificates of `desired` against the secrets of ours in Barbican and the refs the
/// listener uses now (`in_use`). A certificate with content uses the secret of that content
/// (created if missing); one without (its Secret is broken) keeps the secret the listener uses
/// for it, else its newest stored one: the last good certificate.
pub fn plan_certificates(
    desired: &HttpsListener,
    cluster: &str,
    stored: &[StoredSecret],
    in_use: &[String],
) -> CertificatePlan {
    let in_use: BTreeSet<&str> = in_use.iter().map(|r| secret_uuid(r)).collect();
    // certificate → content id → copies (several only after an interrupted create).
    let mut by_cert: BTreeMap<&str, BTreeMap<&str, Vec<&StoredSecret>>> = BTreeMap::new();
    for s in stored {
        if let Some((cert, content)) = parse_secret_name(cluster, &s.name) {
            by_cert.entry(cert).or_default().entry(content).or_default().push(s);
        }
    }
    let mut plan = CertificatePlan::default();
    for (name, cert) in &desired.certificates {
        let contents = by_cert.get(name.as_str());
        let pick = |copies: &Vec<&StoredSecret>| -> String {
            let used = copies.iter().find(|s| in_use.contains(secret_uuid(&s.secret_ref)));
            let oldest = copies.iter().min_by(|a, b| (&a.created, &a.secret_ref).cmp(&(&b.created, &b.secret_ref)));
            used.or(oldest).expect("copies is never empty").secret_ref.clone()
        };
        match &cert.content {
            Some(content) => match contents.and_then(|c| c.get(content.content_id.as_str())) {
                Some(copies) => {
                    plan.refs.insert(name.clone(), pick(copies));
                }
                None => plan.create.push((name.clone(), secret_name(cluster, name, &content.content_id))),
            },
            None => {
                let Some(contents) = contents else {
                    plan.unavailable.push(name.clone());
                    continue;
                };
                let in_use_copy =
                    contents.values().find(|c| c.iter().any(|s| in_use.contains(secret_uuid(&s.secret_ref))));
                let newest = contents.values().max_by(|a, b| newest_created(a).cmp(newest_created(b)));
                let copies = in_use_copy.or(newest).expect("contents is never empty");
                plan.refs.insert(name.clone(), pick(copies));
            }
        }
    }
    plan
}

fn newest_created<'a>(copies: &[&'a StoredSecret]) -> &'a str {
    copies.iter().map(|s| s.created.as_str()).max().unwrap_or("")
}

/// The listener's TLS refs from the available certificates: (default ref, SNI refs sorted). The
/// configured default when it is available, else the first available certificate by name. None
/// when no certificate is available: the listener cannot exist.
pub fn listener_refs(desired: &HttpsListener, refs: &BTreeMap<String, String>) -> Option<(String, Vec<String>)> {
    let default = refs.get(&desired.default_certificate).or_else(|| refs.values().next())?.clone();
    let mut sni: Vec<String> = refs.values().cloned().collect();
    sni.sort();
    sni.dedup();
    Some((default, sni))
}

/// Our secrets that nothing uses once the listener holds `keep` (old contents after a
/// rotation, copies, certificates no Ingress names any more). Never a foreign secret.
pub fn garbage<'a>(cluster: &str, stored: &'a [StoredSecret], keep: &[String]) -> Vec<&'a StoredSecret> {
    let keep: BTreeSet<&str> = keep.iter().map(|r| secret_uuid(r)).collect();
    stored
        .iter()
        .filter(|s| parse_secret_name(cluster, &s.name).is_some() && !keep.contains(secret_uuid(&s.secret_ref)))
        .collect()
}
