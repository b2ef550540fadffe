//! Tenant isolation on the shared router: who may set the router-wide default backend, and (opt
//! in) which namespace owns a host.
//!
//! Decisions (see docs/routing-semantics.md, "Tenants"):
//! - An Ingress's `spec.defaultBackend` catches the unmatched paths of the hosts of its own rules
//!   (a per-host catch-all after that host's path policies). Only an Ingress whose rules name no
//!   host (no rules, or a rule without `host`) claims the router-wide catch-all, i.e. the
//!   listener's default pool, and only from a namespace that
//!   `[kubernetes] default_backend_namespaces` allows (empty: every namespace).
//! - Host ownership (`[kubernetes] host_ownership`): the namespace of the oldest Ingress
//!   (creationTimestamp, then namespace/name) naming a host in its rules or `spec.tls` owns it;
//!   other namespaces' rules and TLS entries for it are refused. A wildcard `*.example.com` is a
//!   host of its own and also owns every one-label host it covers that nobody claimed before it,
//!   so a younger tenant cannot take `shop.example.com` out of another tenant's wildcard (exact
//!   hosts win over wildcards in Kubernetes precedence). An exact host claimed before the
//!   wildcard keeps its owner. Host-less rules name no host and are not subject to ownership.

use std::collections::BTreeMap;

use k8s_openapi::api::networking::v1::Ingress;
use serde::{Deserialize, Serialize};

use super::namespace_of;
use super::rules::{HostKind, host_problem};
use crate::model::KubeRef;

/// The tenancy part of the translation options (kuryr.conf `[kubernetes]`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TenancyOptions {
    /// Namespaces whose Ingresses may set the router-wide default backend; empty: all.
    #[serde(default)]
    pub default_backend_namespaces: Vec<String>,
    /// The first namespace to claim a host owns it.
    #[serde(default)]
    pub host_ownership: bool,
}

impl TenancyOptions {
    /// May an Ingress of `namespace` set the router-wide default backend?
    pub fn may_set_router_default(&self, namespace: &str) -> bool {
        self.default_backend_namespaces.is_empty() || self.default_backend_namespaces.iter().any(|n| n == namespace)
    }
}

/// Which Ingress's namespace owns each claimed host (exact and wildcard), when ownership is on.
#[derive(Clone, Debug, Default)]
pub struct HostOwners {
    owners: BTreeMap<String, KubeRef>,
}

/// Is `host` (exact) one more label in front of the wildcard's suffix?
fn covered_by(wild: &str, host: &str) -> bool {
    HostKind::of(wild) == HostKind::Wildcard
        && HostKind::of(host) == HostKind::Exact
        && super::routes::wildcard_covers(wild, host)
}

impl HostOwners {
    /// The owners from our Ingresses, `ours` sorted oldest first. Invalid hosts claim nothing.
    pub fn build(ours: &[&Ingress]) -> Self {
        let mut owners: BTreeMap<String, KubeRef> = BTreeMap::new();
        for ing in ours {
            let owner =
                KubeRef::new("Ingress", namespace_of(&ing.metadata), ing.metadata.name.as_deref().unwrap_or(""));
            let Some(spec) = ing.spec.as_ref() else { continue };
            let rule_hosts = spec.rules.iter().flatten().filter_map(|r| r.host.as_deref());
            let tls_hosts = spec.tls.iter().flatten().flat_map(|t| t.hosts.iter().flatten()).map(String::as_str);
            for host in rule_hosts.chain(tls_hosts) {
                if host.is_empty() || host_problem(host).is_some() || owners.contains_key(host) {
                    continue;
                }
                // An exact host inside a wildcard claimed earlier belongs to the wildcard's owner.
                let by_wildcard = owners.iter().find(|(w, _)| covered_by(w, host)).map(|(_, o)| o.clone());
                owners.insert(host.to_string(), by_wildcard.unwrap_or_else(|| owner.clone()));
            }
        }
        Self { owners }
    }

    /// The Ingress whose namespace owns `host`, when that is not `namespace`: the claim is refused.
    pub fn refuses(&self, namespace: &str, host: &str) -> Option<&KubeRef> {
        self.owners.get(host).filter(|o| o.namespace != namespace)
    }

    /// The Warning message for a refused claim (`what`: which rule or TLS entry).
    pub fn message(claimant: &KubeRef, what: &str, host: &str, owner: &KubeRef) -> String {
        format!(
            "{claimant}: {what} for host {host} refused: the host belongs to namespace {} (claimed first by {owner}); [kubernetes] host_ownership is on",
            owner.namespace
        )
    }
}

/// The Event reason of a claim refused by host ownership.
pub const HOST_OWNED: &str = "HostOwnedByOtherNamespace";

#[cfg(test)]
mod tests {
    use super::*;

    fn ing(ns: &str, name: &str, age: u32, hosts: &[&str], tls: &[&str]) -> Ingress {
        let rules: Vec<_> = hosts.iter().map(|h| serde_json::json!({"host": h})).collect();
        serde_json::from_value(serde_json::json!({
            "metadata": {"namespace": ns, "name": name, "creationTimestamp": format!("2024-01-{age:02}T00:00:00Z")},
            "spec": {"rules": rules, "tls": [{"hosts": tls, "secretName": "s"}]},
        }))
        .unwrap()
    }

    #[test]
    fn first_namespace_owns_a_host_and_wildcards_own_later_subdomains() {
        let a = ing("a", "old", 1, &["shop.example.com", "*.apps.example.com"], &["tls.example.com"]);
        let b = ing("b", "mid", 2, &["shop.example.com", "x.apps.example.com", "b.example.com"], &[]);
        let b2 = ing("b", "early-sub", 1, &["y.apps.example.com"], &[]);
        // Sorted oldest first as the translation does: (age, ns, name).
        let owners = HostOwners::build(&[&a, &b2, &b]);
        let cases: &[(&str, &str, Option<&str>)] = &[
            // (namespace asking, host, refused by)
            ("a", "shop.example.com", None),
            ("b", "shop.example.com", Some("Ingress a/old")),
            ("b", "tls.example.com", Some("Ingress a/old")),
            ("b", "b.example.com", None),
            ("a", "b.example.com", Some("Ingress b/mid")),
            // claimed by b (same age, b2 sorts after a) after a's wildcard: a's
            ("b", "x.apps.example.com", Some("Ingress a/old")),
            ("b", "y.apps.example.com", Some("Ingress a/old")),
            ("b", "*.apps.example.com", Some("Ingress a/old")),
            // two labels deep: not covered by the wildcard, nobody claimed it
            ("b", "z.y.apps.example.com", None),
            ("c", "unclaimed.example.com", None),
        ];
        for (ns, host, want) in cases {
            assert_eq!(owners.refuses(ns, host).map(|o| o.to_string()).as_deref(), *want, "{ns} {host}");
        }
        // An exact host claimed before the wildcard keeps its owner.
        let early = ing("b", "early", 1, &["w.apps.example.com"], &[]);
        let late = ing("a", "late", 2, &["*.apps.example.com"], &[]);
        let owners = HostOwners::build(&[&early, &late]);
        assert_eq!(
            owners.refuses("a", "w.apps.example.com").map(|o| o.to_string()).as_deref(),
            Some("Ingress b/early")
        );
        assert!(owners.refuses("b", "w.apps.example.com").is_none());
    }

    #[test]
    fn router_default_allow_list() {
        let any = TenancyOptions::default();
        let some = TenancyOptions { default_backend_namespaces: vec!["ops".into()], ..Default::default() };
        for (opts, ns, want) in [(&any, "x", true), (&some, "ops", true), (&some, "x", false)] {
            assert_eq!(opts.may_set_router_default(ns), want, "{opts:?} {ns}");
        }
    }
}
