//! The client CA bundles of the HTTPS listeners in Barbican, planned (pure): which to store, and
//! which secret each listener's `client_ca_tls_container_ref` names.
//!
//! Octavia reads a listener's client CA with its cert manager's `get_secret` (the API checks it
//! with `x509.load_pem_x509_certificate`, the amphora driver uploads the payload as the
//! `ca-file` of the listener's `bind`): a plain Barbican **secret** whose payload is the PEM, not
//! a certificate container. One CA content is one such secret, named like the certificates
//! (`kuryr-l7-router:<cluster>:<router>:client-ca.<namespace>_<configmap>:<content id>`, see
//! [`super::certificates`]), so the listing, the garbage collection and the deletion of a
//! router's secrets find them as they find the certificates: a new CA content is a new secret,
//! switched in one listener PUT, and the old one is deleted once no listener of the router uses
//! it. The `client-ca.` prefix keeps them apart from certificates (`<namespace>_<secret>`: a
//! namespace holds no `.`).

use std::collections::{BTreeMap, BTreeSet};

use super::certificates::{SecretScope, StoredSecret, secret_uuid};
use crate::model::{CaBundle, HttpsListener};

/// What a CA bundle's certificate name starts with among the router's secrets.
pub const CA_PREFIX: &str = "client-ca.";

/// The "certificate" part of a CA bundle's secret name.
pub fn ca_key(ca_name: &str) -> String {
    format!("{CA_PREFIX}{ca_name}")
}

/// The Barbican secret name of a CA content: the content id cut as certificates' are.
pub fn secret_name(scope: &SecretScope, ca: &CaBundle) -> String {
    let id: String = ca.content_id.chars().take(crate::certificate::CONTENT_ID_LEN).collect();
    scope.name(&ca_key(&ca.name), &id)
}

/// The CA name (`<namespace>_<configmap>`) of one of this router's CA secrets.
pub fn parse<'a>(scope: &SecretScope, name: &'a str) -> Option<&'a str> {
    scope.parse(name).and_then(|(cert, _)| cert.strip_prefix(CA_PREFIX))
}

/// The distinct CA bundles the listeners validate against, by name.
pub fn wanted<'a>(listeners: impl IntoIterator<Item = &'a HttpsListener>) -> BTreeMap<&'a str, &'a CaBundle> {
    listeners.into_iter().filter_map(|l| l.client_validation.as_ref()).map(|v| (v.ca.name.as_str(), &v.ca)).collect()
}

/// What to do in Barbican for the CA bundles.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CaPlan {
    /// CA bundles whose content is not stored yet: (CA name, secret name).
    pub create: Vec<(String, String)>,
    /// CA name → the stored secret the listeners use for it.
    pub refs: BTreeMap<String, String>,
}

/// Plans `wanted` against our stored secrets: a CA whose content is stored uses that secret (the
/// copy a listener uses, else the oldest); any other is to be stored.
pub fn plan_cas(
    wanted: &BTreeMap<&str, &CaBundle>,
    scope: &SecretScope,
    stored: &[StoredSecret],
    in_use: &[String],
) -> CaPlan {
    let in_use: BTreeSet<&str> = in_use.iter().map(|r| secret_uuid(r)).collect();
    let mut plan = CaPlan::default();
    for (name, ca) in wanted {
        let want = secret_name(scope, ca);
        let copies: Vec<&StoredSecret> = stored.iter().filter(|s| s.name == want).collect();
        let used = copies.iter().find(|s| in_use.contains(secret_uuid(&s.secret_ref)));
        let oldest = copies.iter().min_by(|a, b| (&a.created, &a.secret_ref).cmp(&(&b.created, &b.secret_ref)));
        match used.or(oldest) {
            Some(s) => {
                plan.refs.insert(name.to_string(), s.secret_ref.clone());
            }
            None => plan.create.push((name.to_string(), want)),
        }
    }
    plan
}

/// The CA secret a listener uses now when it is one of ours for the CA `ca_name` (an older
/// content): what it keeps validating against while the new content cannot be stored.
pub fn last_good(
    scope: &SecretScope,
    stored: &[StoredSecret],
    ca_name: &str,
    listener_ca_ref: Option<&str>,
) -> Option<String> {
    let uuid = secret_uuid(listener_ca_ref?);
    stored
        .iter()
        .find(|s| secret_uuid(&s.secret_ref) == uuid && parse(scope, &s.name) == Some(ca_name))
        .map(|s| s.secret_ref.clone())
}

/// The metadata of a CA secret (public facts, for an operator browsing Barbican).
pub fn metadata(scope: &SecretScope, ca: &CaBundle) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("cluster".to_string(), scope.cluster.clone()),
        ("router".to_string(), scope.router.clone()),
        ("client-ca".to_string(), ca.source.to_string()),
        ("sha256".to_string(), ca.content_id.clone()),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ClientAuthentication, ClientValidation, KubeRef};

    fn scope() -> SecretScope {
        SecretScope::new("c1", "kuryr-gw-1-ns.gw")
    }

    fn ca(name: &str, content: &str) -> CaBundle {
        CaBundle {
            name: name.into(),
            source: KubeRef::new("ConfigMap", "ns", name),
            pem: format!("-----BEGIN CERTIFICATE-----\n{content}\n-----END CERTIFICATE-----\n"),
            content_id: format!("{content:0<64}"),
        }
    }

    fn listener(port: u16, ca: Option<CaBundle>) -> HttpsListener {
        HttpsListener {
            port,
            certificates: Default::default(),
            default_certificate: String::new(),
            policies: vec![],
            default_pool: None,
            client_validation: ca.map(|ca| ClientValidation { ca, mode: ClientAuthentication::Mandatory }),
        }
    }

    fn stored(name: String, uuid: &str, created: &str) -> StoredSecret {
        StoredSecret { secret_ref: format!("https://kms/v1/secrets/{uuid}"), name, created: created.into() }
    }

    #[test]
    fn a_ca_is_stored_once_per_content_and_never_taken_for_a_certificate() {
        let s = scope();
        let a1 = ca("ns_a", "aaaa");
        let name = secret_name(&s, &a1);
        assert_eq!(name, "kuryr-l7-router:c1:kuryr-gw-1-ns.gw:client-ca.ns_a:aaaa000000000000");
        assert_eq!(parse(&s, &name), Some("ns_a"));
        // A certificate's secret of the same namespace/name is not a CA.
        assert_eq!(parse(&s, &s.name("ns_a", "aaaa000000000000")), None);
        // Two listeners with the same CA: one secret to store.
        let ls = [listener(443, Some(a1.clone())), listener(8443, Some(a1.clone())), listener(9443, None)];
        let plan = plan_cas(&wanted(&ls), &s, &[], &[]);
        assert_eq!(plan.create, vec![("ns_a".to_string(), name.clone())]);
        assert!(plan.refs.is_empty());
        // Stored (twice, after an interrupted create): the oldest, unless a listener uses the other.
        let copies = [stored(name.clone(), "new", "2026-02"), stored(name.clone(), "old", "2026-01")];
        let plan = plan_cas(&wanted(&ls), &s, &copies, &[]);
        assert!(plan.create.is_empty());
        assert_eq!(plan.refs["ns_a"], "https://kms/v1/secrets/old");
        let plan = plan_cas(&wanted(&ls), &s, &copies, &["http://internal/v1/secrets/new".into()]);
        assert_eq!(plan.refs["ns_a"], "https://kms/v1/secrets/new");
        // A new content is a new secret.
        let a2 = ca("ns_a", "bbbb");
        let plan = plan_cas(&wanted(&[listener(443, Some(a2.clone()))]), &s, &copies, &[]);
        assert_eq!(plan.create, vec![("ns_a".to_string(), secret_name(&s, &a2))]);
    }

    #[test]
    fn the_last_good_ca_is_ours_for_the_same_configmap_only() {
        let s = scope();
        let old = stored(secret_name(&s, &ca("ns_a", "aaaa")), "old", "");
        let other = stored(secret_name(&s, &ca("ns_b", "aaaa")), "other", "");
        let foreign =
            StoredSecret { secret_ref: "https://kms/v1/secrets/x".into(), name: "x".into(), created: "".into() };
        let all = [old.clone(), other.clone(), foreign];
        assert_eq!(last_good(&s, &all, "ns_a", Some("https://kms/v1/secrets/old")), Some(old.secret_ref));
        assert_eq!(last_good(&s, &all, "ns_a", Some("https://kms/v1/secrets/other")), None);
        assert_eq!(last_good(&s, &all, "ns_a", Some("https://kms/v1/secrets/x")), None);
        assert_eq!(last_good(&s, &all, "ns_a", None), None);
    }
}
