//! Client certificate validation (`spec.tls.frontend`, the Gateway API's
//! GatewayFrontendClientCertificateValidation): which validation an HTTPS port of a Gateway gets
//! (its `perPort` entry, which takes precedence, else `default`), its CA bundles resolved, the
//! listener conditions the spec prescribes, and what the port's Octavia listener checks
//! ([`ClientValidation`]: `client_ca_tls_container_ref` and `client_authentication`).
//!
//! A CA bundle is a core ConfigMap with the key `ca.crt` (the spec's core support). Other kinds,
//! a Secret included, are refused as `InvalidCACertificateKind`: a CA is public material, and
//! reading it from Secrets would widen what the controller reads of tenants' Secrets (only
//! `kubernetes.io/tls` Secrets today, see `[kubernetes] secret_namespaces`). A ConfigMap of
//! another namespace needs a ReferenceGrant there (from Gateway, to ConfigMap): tenants are
//! untrusted, and a Gateway must not trust (nor reveal, through its status) a namespace's CA
//! that namespace did not offer. Several references are served together (one bundle), the
//! spec's implementation-specific extension.
//!
//! Fail closed: a listener whose validation cannot be resolved is not served at all (never
//! served without the check its owner asked for).

use super::api::{FrontendValidation, GROUP, Gateway};
use super::refgrant::{CrossRef, permitted};
use super::status::Cond;
use super::world::{World, ns_of};
use crate::certificate::{CaCertificates, sha256_hex};
use crate::model::{CaBundle, ClientAuthentication, ClientValidation, KubeRef};

/// The Gateway condition of an insecure fallback (the spec's `InsecureFrontendValidationMode`).
pub const INSECURE_FRONTEND_VALIDATION_MODE: &str = "InsecureFrontendValidationMode";

/// `mode` values.
const ALLOW_VALID_ONLY: &str = "AllowValidOnly";
const ALLOW_INSECURE_FALLBACK: &str = "AllowInsecureFallback";

/// What the client certificate validation of one HTTPS port gives its listeners.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct PortValidation {
    /// Every CA reference resolved: what the port's Octavia listener checks. `None` when the
    /// port has no validation, or when it cannot be resolved (then `refs_problem` is set).
    pub(crate) validation: Option<ClientValidation>,
    /// `ResolvedRefs=False`: (reason, message).
    pub(crate) refs_problem: Option<(&'static str, String)>,
    /// `Accepted=False`: `NoValidCACertificate` when no reference is valid, `UnsupportedValue`
    /// for a mode that is not one.
    pub(crate) refused: Option<Cond>,
}

/// The validation that applies to HTTPS port `port` of `gw` with the name of its field: its
/// `perPort` entry (which overrides `default`, even without a validation), else `default`.
fn applicable(gw: &Gateway, port: u16) -> Option<(String, &FrontendValidation)> {
    let frontend = gw.spec.tls.as_ref()?.frontend.as_ref()?;
    match frontend.per_port.iter().position(|p| p.port == i32::from(port)) {
        Some(i) => {
            let v = frontend.per_port[i].tls.validation.as_ref()?;
            Some((format!("spec.tls.frontend.perPort[{i}].tls.validation"), v))
        }
        None => {
            let v = frontend.default.as_ref()?.validation.as_ref()?;
            Some(("spec.tls.frontend.default.validation".to_string(), v))
        }
    }
}

/// The client certificate validation of HTTPS port `port` of `gw`, whoever declares the
/// listener (the Gateway or a ListenerSet of it: the validation is the Gateway's).
pub(crate) fn port_validation(gw: &Gateway, port: u16, world: &World) -> PortValidation {
    let Some((field, v)) = applicable(gw, port) else { return PortValidation::default() };
    let mode = match v.mode.as_deref() {
        None | Some(ALLOW_VALID_ONLY) => Ok(ClientAuthentication::Mandatory),
        Some(ALLOW_INSECURE_FALLBACK) => Ok(ClientAuthentication::Optional),
        Some(other) => Err(Cond::no(
            "Accepted",
            "UnsupportedValue",
            format!("{field}.mode: {other} is not served (only {ALLOW_VALID_ONLY} and {ALLOW_INSECURE_FALLBACK})"),
        )),
    };
    let gw_ns = ns_of(gw);
    let mut valid: Vec<(String, String, CaCertificates)> = Vec::new();
    let mut problems: Vec<(&'static str, String)> = Vec::new();
    for (j, r) in v.ca_certificate_refs.iter().enumerate() {
        let ns = r.namespace.clone().unwrap_or_else(|| gw_ns.clone());
        match resolve(world, &gw_ns, &ns, r) {
            Ok(ca) => valid.push((ns, r.name.clone(), ca)),
            Err((reason, why)) => {
                let kind = if r.kind.is_empty() { "(no kind)" } else { r.kind.as_str() };
                problems.push((reason, format!("{field}.caCertificateRefs[{j}] ({kind} {ns}/{}): {why}", r.name)));
            }
        }
    }
    if v.ca_certificate_refs.is_empty() {
        problems.push(("InvalidCACertificateRef", format!("{field}.caCertificateRefs: no CA certificate is named")));
    }
    let refs_problem = problems.first().map(|(reason, _)| {
        let all: Vec<&str> = problems.iter().map(|(_, m)| m.as_str()).collect();
        (*reason, all.join("; "))
    });
    let refused = match (&mode, valid.is_empty()) {
        (Err(c), _) => Some(c.clone()),
        (Ok(_), true) => {
            let why = refs_problem.as_ref().map_or_else(String::new, |(_, m)| format!(": {m}"));
            Some(Cond::no("Accepted", "NoValidCACertificate", format!("{field}: no valid CA certificate{why}")))
        }
        (Ok(_), false) => None,
    };
    let validation = match mode {
        Ok(mode) if refs_problem.is_none() && !valid.is_empty() => Some(ClientValidation { ca: bundle(&valid), mode }),
        _ => None,
    };
    PortValidation { validation, refs_problem, refused }
}

/// One CA reference: a core ConfigMap, permitted, readable, with a `ca.crt` of CA certificates.
fn resolve(
    world: &World,
    gw_ns: &str,
    ns: &str,
    r: &super::api::CaCertificateRef,
) -> Result<CaCertificates, (&'static str, String)> {
    if !r.group.is_empty() || r.kind != "ConfigMap" {
        let why = "only core ConfigMaps (with the key ca.crt) are supported as CA certificates";
        return Err(("InvalidCACertificateKind", why.into()));
    }
    let xref = CrossRef {
        from_group: GROUP,
        from_kind: "Gateway",
        from_namespace: gw_ns,
        to_group: "",
        to_kind: "ConfigMap",
        to_namespace: ns,
        to_name: &r.name,
    };
    if !permitted(&xref, &world.grants) {
        return Err(("RefNotPermitted", format!("no ReferenceGrant in {ns} permits it")));
    }
    if world.config_maps_unread {
        let why = "the controller cannot read ConfigMaps (its RBAC grants no list and watch of configmaps)";
        return Err(("InvalidCACertificateRef", why.into()));
    }
    match world.ca_config_maps.get(&(ns.to_string(), r.name.clone())) {
        None => Err(("InvalidCACertificateRef", "ConfigMap not found".into())),
        Some(None) => Err(("InvalidCACertificateRef", format!("the ConfigMap has no key {}", super::world::CA_CRT))),
        Some(Some(text)) => CaCertificates::from_pem(text.as_bytes())
            .map_err(|e| ("InvalidCACertificateRef", format!("{}: {e}", super::world::CA_CRT))),
    }
}

/// One bundle of the valid references' certificates: named after the ConfigMap
/// (`<namespace>_<name>`, as a Secret's certificate is), after the first one and the content
/// when there are several (two ports naming different lists never share a name).
fn bundle(valid: &[(String, String, CaCertificates)]) -> CaBundle {
    let pem: String = valid.iter().map(|(_, _, c)| c.pem()).collect();
    let content_id = sha256_hex(&pem);
    let (ns, name, _) = &valid[0];
    let first = format!("{ns}_{name}");
    let name = if valid.len() == 1 { first } else { format!("{first}+{}-{}", valid.len() - 1, &content_id[..12]) };
    CaBundle { name, source: KubeRef::new("ConfigMap", ns, &valid[0].1), pem, content_id }
}

/// The Gateway's `InsecureFrontendValidationMode` condition (True, `ConfigurationChanged`) when
/// any of its validations asks for `AllowInsecureFallback`, naming the fields; `None` (the
/// condition is removed) otherwise.
pub(crate) fn insecure_fallback(gw: &Gateway) -> Option<Cond> {
    let frontend = gw.spec.tls.as_ref()?.frontend.as_ref()?;
    let default = frontend.default.as_ref().and_then(|d| d.validation.as_ref());
    let mut fields: Vec<String> = Vec::new();
    if default.is_some_and(|v| v.mode.as_deref() == Some(ALLOW_INSECURE_FALLBACK)) {
        fields.push("spec.tls.frontend.default.validation.mode".into());
    }
    for (i, p) in frontend.per_port.iter().enumerate() {
        if p.tls.validation.as_ref().is_some_and(|v| v.mode.as_deref() == Some(ALLOW_INSECURE_FALLBACK)) {
            fields.push(format!("spec.tls.frontend.perPort[{i}].tls.validation.mode"));
        }
    }
    (!fields.is_empty()).then(|| {
        let m = format!(
            "{} {ALLOW_INSECURE_FALLBACK}: clients without a certificate are let in (the backends must \
             authorize them); a client presenting a certificate that does not verify is still refused at the \
             handshake (Octavia's client_authentication OPTIONAL)",
            fields.join(", ")
        );
        Cond::yes(INSECURE_FRONTEND_VALIDATION_MODE, "ConfigurationChanged", m)
    })
}

/// The ConfigMaps (namespace, name) the Gateway's client certificate validations name: what
/// the controller reads into [`World::ca_config_maps`], and whose changes wake the Gateway loop.
pub fn named_config_maps(gw: &Gateway) -> Vec<(String, String)> {
    let Some(frontend) = gw.spec.tls.as_ref().and_then(|t| t.frontend.as_ref()) else { return Vec::new() };
    let gw_ns = ns_of(gw);
    let default = frontend.default.as_ref().and_then(|d| d.validation.as_ref());
    let per_port = frontend.per_port.iter().filter_map(|p| p.tls.validation.as_ref());
    default
        .into_iter()
        .chain(per_port)
        .flat_map(|v| &v.ca_certificate_refs)
        .filter(|r| r.group.is_empty() && r.kind == "ConfigMap")
        .map(|r| (r.namespace.clone().unwrap_or_else(|| gw_ns.clone()), r.name.clone()))
        .collect()
}

#[cfg(test)]
#[path = "frontend_tests.rs"]
mod tests;
