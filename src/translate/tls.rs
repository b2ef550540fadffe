//! Ingress `spec.tls` → the router's HTTPS listener: certificates (one per Kubernetes TLS
//! Secret), the TLS hosts' routes on that listener, and HTTP→HTTPS redirects on the HTTP one.
//!
//! Pure like the rest of the translation: the clock is an input (`Inputs::now`), and the key
//! material only travels inside [`CertificateContent`], which never serialises it.
//!
//! Decisions (see docs/tls.md):
//! - A host is a TLS host when an Ingress of ours lists it in `spec.tls[].hosts` with a Secret
//!   whose certificate covers it. The oldest Ingress wins a host claimed with two Secrets.
//! - The HTTPS listener carries the routes of the TLS hosts and the host-less routes, ordered by
//!   the same precedence as on HTTP; pools are shared with the HTTP listener.
//! - A Secret that is missing or broken gives a Warning and a certificate without content: the
//!   driver keeps serving the last good content it stored for that certificate, if any.
//! - Only certificates that won at least one host (and the configured default) are on the
//!   listener: haproxy chooses by the certificate's own SANs, so a certificate refused for a host
//!   (owned by another namespace, claimed first with another Secret, not covered) must not be
//!   there to be chosen. With no certificate left there is no HTTPS listener.
//! - Redirects are REDIRECT_PREFIX policies, one per exact TLS host. haproxy evaluates redirects
//!   before `use_backend` whatever the order, so each one matches its own host only, and never
//!   `/.well-known/acme-challenge/` (cert-manager's HTTP-01 answers there on plain HTTP). A
//!   wildcard host cannot be redirected: Octavia's prefix is a fixed URL, which cannot carry the
//!   requested host name.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::networking::v1::Ingress;

use super::hosts::{HostKind, wildcard_covers};
use super::names::namespace_of;
use super::names::{certificate_name, redirect_name};
use super::options::TlsOptions;
use super::options::View;
use super::rules::{host_problem, host_rule, host_value_problem};
use super::tenancy::{HOST_OWNED, HostOwners};
use crate::certificate::{CertificateCache, ParsedCertificate};
use crate::model::{
    Certificate, CertificateContent, CompareType, HttpsListener, KubeRef, Redirect, Rule, RuleType, Warning,
};
use crate::reason::Reason;

/// The `type` of a Kubernetes TLS Secret.
pub(crate) const TLS_SECRET_TYPE: &str = "kubernetes.io/tls";
/// The mark of a cached TLS Secret whose data the controller's Secret watch dropped on receipt
/// (named by nothing then; see `controller::ingress::tls_secrets`). Only on the cached copy: nothing is
/// written back from the Secret cache.
pub const DATA_NOT_HELD: &str = "kuryr-l7-router.openstack.org/data-not-held";

/// Whether `secret` is cached without its data ([`DATA_NOT_HELD`]): pending, not missing, when
/// something names it.
pub fn held_without_data(secret: &Secret) -> bool {
    secret.metadata.annotations.as_ref().is_some_and(|a| a.contains_key(DATA_NOT_HELD))
}

/// Per-Ingress override of [`TlsOptions::ssl_redirect`]: `"true"` or `"false"`.
pub(crate) const SSL_REDIRECT_ANNOTATION: &str = "kuryr-l7-router.openstack.org/ssl-redirect";
/// Never redirected: cert-manager's HTTP-01 solver must answer here on plain HTTP.
pub(crate) const ACME_CHALLENGE_PREFIX: &str = "/.well-known/acme-challenge/";

/// One `spec.tls[]` host claim, in age order of the Ingresses.
struct Claim {
    host: String,
    certificate: String,
    owner: KubeRef,
    redirect: bool,
}

/// The HTTPS listener (None when no Ingress of ours has TLS) and the redirects for the HTTP one.
pub(crate) struct TlsRouting {
    pub https: Option<HttpsListener>,
    pub redirects: Vec<Redirect>,
    /// Hosts served on HTTPS (exact and wildcard), for the route filter.
    pub(crate) tls_hosts: Vec<String>,
}

fn ns_name(ing: &Ingress) -> (&str, &str) {
    (namespace_of(&ing.metadata), ing.metadata.name.as_deref().unwrap_or(""))
}

fn warn(out: &mut Vec<Warning>, object: &KubeRef, reason: Reason, message: String) {
    out.push(Warning { object: object.clone(), reason, message });
}

/// The Ingress's redirect choice: the annotation if it is a boolean, else the class default.
fn wants_redirect(ing: &Ingress, owner: &KubeRef, opts: &TlsOptions, warnings: &mut Vec<Warning>) -> bool {
    match ing.metadata.annotations.as_ref().and_then(|a| a.get(SSL_REDIRECT_ANNOTATION)).map(String::as_str) {
        None => opts.ssl_redirect,
        Some("true") => true,
        Some("false") => false,
        Some(other) => {
            warn(
                warnings,
                owner,
                Reason::InvalidAnnotation,
                format!(
                    "{owner}: annotation {SSL_REDIRECT_ANNOTATION}={other:?} is not \"true\" or \"false\"; using the default ({})",
                    opts.ssl_redirect
                ),
            );
            opts.ssl_redirect
        }
    }
}

/// Every `spec.tls[]` entry of our Ingresses (oldest first) as host claims; the certificates they
/// name are created empty in `certs` (owners and hosts filled, content resolved later).
fn collect_claims(
    ours: &[&Ingress],
    opts: &TlsOptions,
    owners: Option<&HostOwners>,
    certs: &mut BTreeMap<String, Certificate>,
    warnings: &mut Vec<Warning>,
) -> Vec<Claim> {
    let mut claims = Vec::new();
    for ing in ours {
        let (ns, name) = ns_name(ing);
        let owner = KubeRef::new("Ingress", ns, name);
        let entries = ing.spec.as_ref().and_then(|s| s.tls.as_deref()).unwrap_or(&[]);
        if entries.is_empty() {
            continue;
        }
        let redirect = wants_redirect(ing, &owner, opts, warnings);
        for (i, tls) in entries.iter().enumerate() {
            let Some(secret) = tls.secret_name.as_deref().filter(|s| !s.is_empty()) else {
                warn(
                    warnings,
                    &owner,
                    Reason::MissingTlsSecret,
                    format!("{owner}: spec.tls[{i}] has no secretName; its hosts are served on HTTP only"),
                );
                continue;
            };
            let cert = certs.entry(certificate_name(ns, secret)).or_insert_with(|| empty_certificate(ns, secret));
            if !cert.owners.contains(&owner) {
                cert.owners.push(owner.clone());
            }
            for host in tls.hosts.iter().flatten() {
                if let Some(p) = host_problem(host) {
                    warn(
                        warnings,
                        &owner,
                        Reason::InvalidHost,
                        format!("{owner}: spec.tls[{i}] host {host:?} ignored: {p}"),
                    );
                    continue;
                }
                if let Some(p) = host_value_problem(host) {
                    let msg = format!("{owner}: spec.tls[{i}] host {host:?} ignored: {p}");
                    warn(warnings, &owner, Reason::InvalidRuleValue, msg);
                    continue;
                }
                if let Some(o) = owners.and_then(|o| o.refuses(ns, host)) {
                    warn(warnings, &owner, HOST_OWNED, HostOwners::message(&owner, &format!("spec.tls[{i}]"), host, o));
                    continue;
                }
                claims.push(Claim {
                    host: host.clone(),
                    certificate: cert.name.clone(),
                    owner: owner.clone(),
                    redirect,
                });
            }
        }
    }
    claims
}

fn empty_certificate(ns: &str, secret: &str) -> Certificate {
    Certificate {
        name: certificate_name(ns, secret),
        secret: KubeRef::new("Secret", ns, secret),
        hosts: Vec::new(),
        owners: Vec::new(),
        content: None,
    }
}

/// Parse (or take from the cache) and check one Secret. None: the Secret is cached without its
/// data until the Secret watch's re-list fills it (`controller::ingress::tls_secrets`): pending, not
/// missing, so nothing to warn about. Err: (Event reason, message naming the Secret; never its
/// data).
fn load_secret(
    sref: &KubeRef,
    secrets: &BTreeMap<(&str, &str), &Secret>,
    now: Option<std::time::SystemTime>,
    cache: Option<&CertificateCache>,
    read: &[String],
) -> Result<Option<CertificateContent>, (Reason, String)> {
    if let Some(why) = secret_not_read(&sref.namespace, read) {
        return Err((Reason::SecretNotRead, format!("{sref}: {why}")));
    }
    let Some(secret) = secrets.get(&(sref.namespace.as_str(), sref.name.as_str())) else {
        return Err((Reason::SecretNotFound, format!("{sref} not found")));
    };
    if held_without_data(secret) {
        tracing::debug!(secret = %sref, "TLS Secret pending: its data arrives with the Secret watch's re-list");
        return Ok(None);
    }
    let kind = secret.type_.as_deref().unwrap_or("Opaque");
    if kind != TLS_SECRET_TYPE {
        return Err((Reason::SecretWrongType, format!("{sref} is of type {kind}, not {TLS_SECRET_TYPE}")));
    }
    let data = secret.data.as_ref();
    let field = |k: &str| data.and_then(|d| d.get(k)).map(|b| b.0.as_slice()).unwrap_or(&[]);
    let (crt, key) = (field("tls.crt"), field("tls.key"));
    let parsed = match cache {
        Some(cache) => {
            let meta = &secret.metadata;
            let (uid, rv) = (meta.uid.as_deref().unwrap_or(""), meta.resource_version.as_deref().unwrap_or(""));
            cache.parse(uid, rv, crt, key)
        }
        None => ParsedCertificate::from_pem(crt, key).map(Arc::new),
    }
    .map_err(|e| (Reason::from(e.reason()), format!("{sref}: {e}")))?;
    if let Some(now) = now {
        parsed.check_validity(now).map_err(|e| (Reason::from(e.reason()), format!("{sref}: {e}")))?;
    }
    Ok(Some(CertificateContent::new(parsed)))
}

/// Why the Secrets of `namespace` are not read when the controller reads those of `read` only
/// (`[kubernetes] secret_namespaces`; empty: every namespace's), or `None`. Such a Secret is
/// never in the cache: without this, it would look missing, and nobody would know why.
pub fn secret_not_read(namespace: &str, read: &[String]) -> Option<String> {
    if read.is_empty() || read.iter().any(|n| n == namespace) {
        return None;
    }
    Some(format!(
        "the controller does not read the Secrets of namespace {namespace} ([kubernetes] secret_namespaces = {})",
        read.join(", ")
    ))
}

/// One certificate named by a listener of another route kind (a Gateway's
/// `tls.certificateRefs`), with its content from the Secret `namespace/name`, checked as an
/// Ingress's is; a missing or broken Secret warns `owner` and leaves the content empty (the
/// driver keeps the last good one).
pub(crate) fn listener_certificate(
    namespace: &str,
    name: &str,
    hosts: Vec<String>,
    owner: &KubeRef,
    inputs: &View<'_>,
    warnings: &mut Vec<Warning>,
) -> Certificate {
    let mut cert = empty_certificate(namespace, name);
    cert.hosts = hosts;
    cert.owners = vec![owner.clone()];
    let by_name = secrets_by_name(&inputs.secrets);
    // The Gateway's listener refused a Secret of a namespace not read already
    // (`gateway::listeners`): none reaches here.
    match load_secret(&cert.secret, &by_name, inputs.now, inputs.certificates.as_deref(), &[]) {
        Ok(content) => cert.content = content,
        Err((reason, msg)) => warn(warnings, owner, reason, format!("{owner}: TLS certificate from {msg}")),
    }
    cert
}

/// See the module docs. `ours` is age-sorted (oldest first), like the route translation.
/// `owners`: host ownership, when on (the same as the routes see).
/// `inputs`: its Secrets, its clock and its certificate cache.
pub(crate) fn translate_tls(
    ours: &[&Ingress],
    inputs: &View<'_>,
    topts: &TlsOptions,
    owners: Option<&HostOwners>,
    warnings: &mut Vec<Warning>,
) -> TlsRouting {
    if let Some(cache) = &inputs.certificates {
        // A Secret no longer handed over (deleted, or named by no Ingress) leaves the cache.
        cache.retain(&inputs.secrets.iter().filter_map(|s| s.metadata.uid.as_deref()).collect());
    }
    let mut certs: BTreeMap<String, Certificate> = BTreeMap::new();
    let claims = collect_claims(ours, topts, owners, &mut certs, warnings);
    if let Some((ns, name)) = &topts.default_certificate {
        certs.entry(certificate_name(ns, name)).or_insert_with(|| empty_certificate(ns, name));
    }
    if certs.is_empty() {
        return TlsRouting { https: None, redirects: Vec::new(), tls_hosts: Vec::new() };
    }
    load_contents(&mut certs, inputs, &topts.secret_namespaces, warnings);
    // Hosts: first claim (oldest Ingress) wins; a host the certificate does not cover is not TLS.
    let mut host_cert: BTreeMap<String, (String, bool)> = BTreeMap::new();
    let mut host_winner: BTreeMap<&str, &KubeRef> = BTreeMap::new();
    for c in &claims {
        if let Some((winner, _)) = host_cert.get(&c.host) {
            if *winner != c.certificate {
                warn(
                    warnings,
                    &c.owner,
                    Reason::ConflictingCertificate,
                    format!(
                        "{}: TLS host {} ignored for {}: it is already served with {} by the older {}",
                        c.owner,
                        c.host,
                        certs[&c.certificate].secret,
                        certs[winner].secret,
                        host_winner[c.host.as_str()]
                    ),
                );
            }
            continue;
        }
        let cert = certs.get_mut(&c.certificate).expect("claims name collected certificates");
        if let Some(content) = &cert.content
            && !content.parsed().covers(&c.host)
        {
            warn(
                warnings,
                &c.owner,
                Reason::HostNotCovered,
                format!(
                    "{}: TLS host {} is not covered by the certificate of {} (subject {}); the host is served on HTTP only",
                    c.owner,
                    c.host,
                    cert.secret,
                    content.subject()
                ),
            );
            continue;
        }
        cert.hosts.push(c.host.clone());
        host_cert.insert(c.host.clone(), (c.certificate.clone(), c.redirect));
        host_winner.insert(&c.host, &c.owner);
    }
    for cert in certs.values_mut() {
        cert.hosts.sort();
    }
    // Only certificates that won a host go on the listener: haproxy picks a certificate by its
    // own SANs, so a refused one (another namespace's host, a younger conflicting Secret, a host
    // it does not cover) would be served for a host it lost. The configured default stays.
    let configured = topts.default_certificate.as_ref().map(|(ns, name)| certificate_name(ns, name));
    certs.retain(|name, cert| !cert.hosts.is_empty() || configured.as_ref() == Some(name));
    if certs.is_empty() {
        return TlsRouting { https: None, redirects: Vec::new(), tls_hosts: Vec::new() };
    }
    let default_certificate = pick_default(&certs, &claims, topts);
    let redirects = build_redirects(&host_cert, &claims, topts, warnings);
    let tls_hosts = host_cert.into_keys().collect();
    let https = HttpsListener {
        port: topts.https_port,
        certificates: certs,
        default_certificate,
        policies: Vec::new(),
        default_pool: None,
        client_validation: None,
    };
    TlsRouting { https: Some(https), redirects, tls_hosts }
}

/// The Secrets by (namespace, name).
fn secrets_by_name<'a>(secrets: &[&'a Secret]) -> BTreeMap<(&'a str, &'a str), &'a Secret> {
    secrets.iter().map(|s| ((namespace_of(&s.metadata), s.metadata.name.as_deref().unwrap_or("")), *s)).collect()
}

/// Each certificate's content from its Secret; a missing or broken one warns its Ingresses.
fn load_contents(
    certs: &mut BTreeMap<String, Certificate>,
    inputs: &View<'_>,
    read: &[String],
    warnings: &mut Vec<Warning>,
) {
    let by_name = secrets_by_name(&inputs.secrets);
    for cert in certs.values_mut() {
        match load_secret(&cert.secret, &by_name, inputs.now, inputs.certificates.as_deref(), read) {
            Ok(content) => cert.content = content,
            Err((reason, msg)) => {
                for owner in &cert.owners {
                    warn(
                        warnings,
                        owner,
                        reason,
                        format!(
                            "{owner}: TLS certificate from {msg}; its hosts keep the last good certificate stored on the router, if any"
                        ),
                    );
                }
            }
        }
    }
}

/// The configured default certificate, else the oldest Ingress's first one that has content,
/// else the first one at all.
fn pick_default(certs: &BTreeMap<String, Certificate>, claims: &[Claim], opts: &TlsOptions) -> String {
    if let Some((ns, name)) = &opts.default_certificate {
        return certificate_name(ns, name);
    }
    let in_age_order = claims
        .iter()
        .map(|c| c.certificate.as_str())
        .filter(|n| certs.contains_key(*n))
        .chain(certs.keys().map(String::as_str));
    let first_good = in_age_order.clone().find(|n| certs[*n].content.is_some());
    first_good.or_else(|| in_age_order.clone().next()).expect("certs is not empty").to_string()
}

fn build_redirects(
    host_cert: &BTreeMap<String, (String, bool)>,
    claims: &[Claim],
    opts: &TlsOptions,
    warnings: &mut Vec<Warning>,
) -> Vec<Redirect> {
    let port = if opts.https_port == 443 { String::new() } else { format!(":{}", opts.https_port) };
    let mut out = Vec::new();
    for (host, (certificate, redirect)) in host_cert {
        if !redirect {
            continue;
        }
        let owner = claims.iter().find(|c| &c.host == host).map(|c| c.owner.clone()).expect("claimed host");
        if HostKind::of(host) == HostKind::Wildcard {
            warn(
                warnings,
                &owner,
                Reason::RedirectNotPossible,
                format!(
                    "{owner}: HTTP requests to {host} are not redirected to HTTPS: Octavia redirects to a fixed URL prefix, which cannot carry the requested host name of a wildcard"
                ),
            );
            continue;
        }
        out.push(Redirect {
            name: redirect_name(host),
            host: host.clone(),
            rules: vec![
                host_rule(host),
                Rule {
                    rule_type: RuleType::Path,
                    compare_type: CompareType::StartsWith,
                    value: ACME_CHALLENGE_PREFIX.into(),
                    invert: true,
                    key: None,
                },
            ],
            prefix: format!("https://{host}{port}"),
            code: opts.redirect_code,
            certificate: certificate.clone(),
            owner,
        });
    }
    out
}

/// Does a route's host belong on the HTTPS listener? Host-less routes do (a TLS host falls
/// through to them on HTTP too); a host does when it is a TLS host, a wildcard TLS host covers
/// it, or it is a wildcard that covers a TLS host.
pub(crate) fn on_https(route_host: &str, tls_hosts: &[String]) -> bool {
    route_host.is_empty()
        || tls_hosts.iter().any(|t| {
            let covers = |wild: &str, exact: &str| {
                HostKind::of(wild) == HostKind::Wildcard
                    && HostKind::of(exact) == HostKind::Exact
                    && wildcard_covers(wild, exact)
            };
            // A wildcard route that a TLS host falls into on HTTP must be there on HTTPS too.
            t == route_host || covers(t, route_host) || covers(route_host, t)
        })
}
