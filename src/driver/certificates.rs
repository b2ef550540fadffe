//! Our certificates in Barbican, planned (pure): which secrets to create, which refs the HTTPS
//! listener uses, and which secrets are garbage once it does.
//!
//! One certificate content is one opaque Barbican secret (a PKCS#12 bundle), named
//! `kuryr-l7-router:<cluster>:<router>:<certificate>:<content id>`. Barbican secrets carry no
//! tags, so the name is how we find, adopt and garbage-collect our own: a secret whose name does
//! not start with this router's prefix is never deleted, so that routers of one cluster (another
//! IngressClass, another node pool, several routers of one controller) never collect each
//! other's certificates. Secrets named after the cluster alone (the versions before) are
//! replaced by the router's own on its next convergence and deleted only once no listener of the
//! project references them ([`garbage`]). The content id is part of the name, so a renewed
//! certificate (cert-manager) is a new secret: it is created, the listener is switched to it in
//! one PUT, and only then is the old one deleted, so no handshake ever finds a deleted secret.

use std::collections::{BTreeMap, BTreeSet};

use super::ownership::PRODUCT_TAG;
use crate::model::{DesiredRouter, HttpsListener};

/// A secret of ours as listed from Barbican.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredSecret {
    /// `secret_ref`, the URL Octavia is given.
    pub secret_ref: String,
    pub name: String,
    /// Barbican's `created` (RFC 3339): the oldest of two copies is kept.
    pub created: String,
}

/// Whose secrets a router looks at: its own, named after the cluster and the router, and the
/// cluster's legacy ones (named after the cluster alone, by the versions before per-router names),
/// which it may use but deletes only when no listener of the project references them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SecretScope {
    pub cluster: String,
    pub router: String,
}

impl SecretScope {
    pub fn new(cluster: impl Into<String>, router: impl Into<String>) -> Self {
        Self { cluster: cluster.into(), router: router.into() }
    }

    /// `kuryr-l7-router:<cluster>:`: what Barbican is listed by (this router's secrets, the
    /// other routers' of the cluster and the legacy ones all start with it).
    pub fn cluster_prefix(&self) -> String {
        format!("{PRODUCT_TAG}:{}:", self.cluster)
    }

    /// `kuryr-l7-router:<cluster>:<router>:`: every secret this router owns starts with it.
    pub fn prefix(&self) -> String {
        format!("{}{}:", self.cluster_prefix(), self.router)
    }

    /// The Barbican secret name of one certificate content of this router.
    pub fn name(&self, certificate: &str, content_id: &str) -> String {
        format!("{}{certificate}:{content_id}", self.prefix())
    }

    /// `(certificate, content id)` of a secret this router owns; None for anything else
    /// (another router's, a legacy one, a foreign one).
    pub fn parse<'a>(&self, name: &'a str) -> Option<(&'a str, &'a str)> {
        split_certificate(name.strip_prefix(&self.prefix())?)
    }

    /// `(certificate, content id)` of a legacy secret of the cluster
    /// (`kuryr-l7-router:<cluster>:<certificate>:<content id>`, no router in it: certificate
    /// names never hold a colon, so the two forms cannot be confused).
    pub fn parse_legacy<'a>(&self, name: &'a str) -> Option<(&'a str, &'a str)> {
        let (certificate, content) = split_certificate(name.strip_prefix(&self.cluster_prefix())?)?;
        (!certificate.contains(':')).then_some((certificate, content))
    }
}

fn split_certificate(rest: &str) -> Option<(&str, &str)> {
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

/// certificate → content id → copies (several only after an interrupted create).
type ByCertificate<'a> = BTreeMap<&'a str, BTreeMap<&'a str, Vec<&'a StoredSecret>>>;

fn by_certificate<'a>(
    stored: &'a [StoredSecret],
    parse: impl Fn(&'a str) -> Option<(&'a str, &'a str)>,
) -> ByCertificate<'a> {
    let mut by_cert: ByCertificate<'a> = BTreeMap::new();
    for s in stored {
        if let Some((cert, content)) = parse(&s.name) {
            by_cert.entry(cert).or_default().entry(content).or_default().push(s);
        }
    }
    by_cert
}

/// Plan the certificates of `desired` against the secrets in Barbican (this router's and the
/// cluster's legacy ones) and the refs the listener uses now (`in_use`). A certificate with
/// content uses this router's secret of that content (created if missing: a legacy secret is
/// replaced by one of ours, switched in the same listener PUT as any rotation); one without
/// (its Secret is broken) keeps the secret the listener uses for it, else its newest stored one
/// (ours first, else a legacy one): the last good certificate.
pub fn plan_certificates(
    desired: &HttpsListener,
    scope: &SecretScope,
    stored: &[StoredSecret],
    in_use: &[String],
) -> CertificatePlan {
    let in_use: BTreeSet<&str> = in_use.iter().map(|r| secret_uuid(r)).collect();
    let ours = by_certificate(stored, |n| scope.parse(n));
    let legacy = by_certificate(stored, |n| scope.parse_legacy(n));
    let pick = |copies: &Vec<&StoredSecret>| -> String {
        let used = copies.iter().find(|s| in_use.contains(secret_uuid(&s.secret_ref)));
        let oldest = copies.iter().min_by(|a, b| (&a.created, &a.secret_ref).cmp(&(&b.created, &b.secret_ref)));
        used.or(oldest).expect("copies is never empty").secret_ref.clone()
    };
    let last_good = |contents: &BTreeMap<&str, Vec<&StoredSecret>>| -> String {
        let in_use_copy = contents.values().find(|c| c.iter().any(|s| in_use.contains(secret_uuid(&s.secret_ref))));
        let newest = contents.values().max_by(|a, b| newest_created(a).cmp(newest_created(b)));
        pick(in_use_copy.or(newest).expect("contents is never empty"))
    };
    let mut plan = CertificatePlan::default();
    for (name, cert) in &desired.certificates {
        let contents = ours.get(name.as_str());
        match &cert.content {
            Some(content) => match contents.and_then(|c| c.get(content.content_id.as_str())) {
                Some(copies) => {
                    plan.refs.insert(name.clone(), pick(copies));
                }
                None => plan.create.push((name.clone(), scope.name(name, &content.content_id))),
            },
            None => match contents.or_else(|| legacy.get(name.as_str())) {
                Some(contents) => {
                    plan.refs.insert(name.clone(), last_good(contents));
                }
                None => plan.unavailable.push(name.clone()),
            },
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

/// The secrets to delete once the listener holds `keep`: this router's that it does not use (old
/// contents after a rotation, copies, certificates no Ingress names any more), and the cluster's
/// legacy ones that no listener of the project references (`referenced`: every listener's refs,
/// read when legacy secrets exist; another router of the cluster may still serve one). Never
/// another router's secret, never a foreign one.
pub fn garbage<'a>(
    scope: &SecretScope,
    stored: &'a [StoredSecret],
    keep: &[String],
    referenced: &[String],
) -> Vec<&'a StoredSecret> {
    let keep: BTreeSet<&str> = keep.iter().map(|r| secret_uuid(r)).collect();
    let referenced: BTreeSet<&str> = referenced.iter().map(|r| secret_uuid(r)).collect();
    stored
        .iter()
        .filter(|s| {
            let uuid = secret_uuid(&s.secret_ref);
            let ours = scope.parse(&s.name).is_some() && !keep.contains(uuid);
            let legacy = scope.parse_legacy(&s.name).is_some() && !keep.contains(uuid) && !referenced.contains(uuid);
            ours || legacy
        })
        .collect()
}

/// Whether `stored` holds legacy secrets (then [`garbage`] needs every listener's refs).
pub fn has_legacy(scope: &SecretScope, stored: &[StoredSecret]) -> bool {
    stored.iter().any(|s| scope.parse_legacy(&s.name).is_some())
}

/// Every secret ref a listener holds: its default and SNI certificates and its client CA.
pub fn listener_refs_of(l: &crate::openstack::octavia::Listener) -> Vec<String> {
    let tls = l.default_tls_container_ref.iter().chain(l.sni_container_refs.iter());
    tls.chain(l.client_ca_tls_container_ref.iter()).cloned().collect()
}

/// Every HTTPS listener the router wants: the main one, then the more ports'.
pub fn wanted_https(desired: &DesiredRouter) -> impl Iterator<Item = &HttpsListener> {
    desired.https.iter().chain(desired.more_https.values())
}

/// The certificates of every HTTPS listener in one listener (what Barbican must hold; the
/// hosts and owners of a certificate that several listeners serve are merged). None when the
/// router wants no HTTPS listener.
pub fn all_certificates(desired: &DesiredRouter) -> Option<HttpsListener> {
    let mut listeners = wanted_https(desired);
    let mut all = listeners.next()?.clone();
    for l in listeners {
        for (name, c) in &l.certificates {
            let merged = all.certificates.entry(name.clone()).or_insert_with(|| c.clone());
            merged.hosts.extend(c.hosts.iter().cloned());
            merged.hosts.sort();
            merged.hosts.dedup();
            merged.owners.extend(c.owners.iter().cloned());
            merged.owners.sort();
            merged.owners.dedup();
        }
    }
    Some(all)
}
