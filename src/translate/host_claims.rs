//! The claims on hosts that host ownership (`[kubernetes] host_ownership`, [`super::tenancy`])
//! orders, kind-neutral: an Ingress naming a host in its rules or `spec.tls`, an HTTPRoute's
//! effective hostname on a Gateway listener, a Gateway listener's hostname
//! (`crate::gateway::host_owners` makes the last two). One owner index serves both kinds, so a
//! namespace owning a host through one kind is not overtaken through the other.

use k8s_openapi::api::networking::v1::Ingress;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde::{Deserialize, Serialize};

use super::names::namespace_of;
use super::rules::host_problem;
use crate::model::KubeRef;

/// One object's claim on one host (exact or `*.` wildcard).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostClaim {
    pub host: String,
    /// The object claiming it (`Ingress`, `HTTPRoute` or `Gateway`); its namespace is the
    /// namespace that would own the host.
    pub by: KubeRef,
    /// Its `creationTimestamp`: the oldest claim wins.
    pub created: Option<Time>,
}

impl HostClaim {
    pub fn new(host: &str, by: KubeRef, created: Option<&Time>) -> Self {
        Self { host: host.to_string(), by, created: created.cloned() }
    }

    /// The order claims are decided in: creationTimestamp (none first, as for Ingresses), then
    /// namespace and name. Kind last, so that one object's claims keep their own order.
    fn age(&self) -> (Option<&Time>, &str, &str) {
        (self.created.as_ref(), &self.by.namespace, &self.by.name)
    }
}

/// `claims` oldest first (stable: one object's claims keep their order; an Ingress before a
/// Gateway API object of the same age, namespace and name, as the Ingresses are given first).
pub(crate) fn by_age<'a>(claims: impl IntoIterator<Item = &'a HostClaim>) -> Vec<&'a HostClaim> {
    let mut out: Vec<&HostClaim> = claims.into_iter().collect();
    out.sort_by(|a, b| a.age().cmp(&b.age()));
    out
}

/// The hosts our Ingresses (`ours`) claim: each valid host of their rules, then of `spec.tls`.
/// Invalid hosts claim nothing; neither do host-less rules.
pub fn ingress_claims(ours: &[&Ingress]) -> Vec<HostClaim> {
    let mut out = Vec::new();
    for ing in ours {
        let Some(spec) = ing.spec.as_ref() else { continue };
        let by = KubeRef::new("Ingress", namespace_of(&ing.metadata), ing.metadata.name.as_deref().unwrap_or(""));
        let rule_hosts = spec.rules.iter().flatten().filter_map(|r| r.host.as_deref());
        let tls_hosts = spec.tls.iter().flatten().flat_map(|t| t.hosts.iter().flatten()).map(String::as_str);
        for host in rule_hosts.chain(tls_hosts).filter(|h| !h.is_empty() && host_problem(h).is_none()) {
            out.push(HostClaim::new(host, by.clone(), ing.metadata.creation_timestamp.as_ref()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim(host: &str, kind: &str, ns: &str, name: &str, day: Option<u32>) -> HostClaim {
        let created =
            day.map(|d| serde_json::from_value(serde_json::json!(format!("2024-01-{d:02}T00:00:00Z"))).unwrap());
        HostClaim { host: host.into(), by: KubeRef::new(kind, ns, name), created }
    }

    #[test]
    fn claims_are_ordered_by_age_then_namespace_and_name_whatever_their_kind() {
        let claims = [
            claim("a", "HTTPRoute", "b", "r", Some(2)),
            claim("b", "Ingress", "z", "i", Some(1)),
            claim("c", "Gateway", "a", "g", Some(2)),
            claim("d", "Ingress", "b", "r", Some(2)),
            claim("e", "HTTPRoute", "b", "r", Some(2)),
            claim("f", "Ingress", "y", "old", None),
        ];
        let order: Vec<&str> = by_age(&claims).iter().map(|c| c.host.as_str()).collect();
        assert_eq!(order, ["f", "b", "c", "a", "d", "e"]);
    }

    #[test]
    fn an_ingress_claims_its_valid_rule_and_tls_hosts() {
        let ing: Ingress = serde_json::from_value(serde_json::json!({
            "metadata": {"namespace": "shop", "name": "web"},
            "spec": {"rules": [{"host": "a.example.com"}, {"host": "Bad.Example.com"}, {}],
                     "tls": [{"hosts": ["t.example.com", "*.w.example.com"]}]},
        }))
        .unwrap();
        let hosts: Vec<String> = ingress_claims(&[&ing]).into_iter().map(|c| format!("{} {}", c.host, c.by)).collect();
        assert_eq!(
            hosts,
            ["a.example.com Ingress shop/web", "t.example.com Ingress shop/web", "*.w.example.com Ingress shop/web"]
        );
    }
}
