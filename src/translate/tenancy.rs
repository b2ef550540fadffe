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
//! - Ownership survives the owner's re-creation (a Helm reinstall, `kubectl replace`): the owners
//!   are remembered in an annotation on our IngressClass ([`HOST_OWNERS_ANNOTATION`], which only
//!   cluster administrators can edit, read from the cache like every input, so it survives a
//!   restart and a leader change). A remembered owner keeps its host, whatever the age of other
//!   namespaces' Ingresses, while it has an Ingress naming it, and for
//!   `[kubernetes] host_ownership_grace_period` after its last one went; then the oldest claimant
//!   takes it. The controller writes the annotation when [`remembered_owners`] changes it.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use k8s_openapi::api::networking::v1::{Ingress, IngressClass};
use serde::{Deserialize, Serialize};

use super::host_claims::{HostClaim, by_age, ingress_claims};
use super::hosts::{HostKind, wildcard_covers};
use super::ingress_class::{our_class, ours_by_age};
use super::options::{Source, TranslateOptions, View};
use crate::model::KubeRef;
use crate::reason::Reason;

/// Annotation of our IngressClass: the remembered owner of each host (JSON [`RememberedOwners`]).
pub const HOST_OWNERS_ANNOTATION: &str = "kuryr-l7-router.openstack.org/host-owners";

/// A host's remembered owner.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RememberedOwner {
    pub namespace: String,
    /// Unix seconds when the namespace's last Ingress naming the host went; absent while it has one.
    #[serde(default)]
    pub vacated: Option<u64>,
}

/// Host → remembered owner.
pub type RememberedOwners = BTreeMap<String, RememberedOwner>;

fn unix(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// The remembered owners stored on `class` (none, or unreadable: none, as before any was stored).
pub(crate) fn stored_owners(class: Option<&IngressClass>) -> RememberedOwners {
    class
        .and_then(|c| c.metadata.annotations.as_ref())
        .and_then(|a| a.get(HOST_OWNERS_ANNOTATION))
        .and_then(|v| serde_json::from_str(v).ok())
        .unwrap_or_default()
}

/// Is a remembered owner still holding its host at `now` (`None`: no clock, it is)?
fn holds(r: &RememberedOwner, now: Option<SystemTime>, grace: Duration) -> bool {
    match (r.vacated, now) {
        (Some(v), Some(now)) => unix(now) < v.saturating_add(grace.as_secs()),
        _ => true,
    }
}

/// How long from `now` until the first of the vacated hosts of `next` (the owners a pass
/// remembered, over `previous`, those it started from) is released, its grace ended: zero when
/// one vacated in this pass is due already (no grace). `None`: none to wait for. Whoever decided
/// with these owners decides again then, so that a host goes to its next claimant when its grace
/// ends, not at some later pass. A host vacated before this pass whose grace has ended and that
/// is still remembered (kept through its namespace's wildcard) is not waited for again.
pub fn next_release(
    next: &RememberedOwners,
    previous: &RememberedOwners,
    now: SystemTime,
    grace: Duration,
) -> Option<Duration> {
    let release = |v: u64| SystemTime::UNIX_EPOCH + Duration::from_secs(v.saturating_add(grace.as_secs()));
    next.iter()
        .filter_map(|(host, r)| Some((host, r.vacated?)))
        .filter_map(|(host, v)| match release(v).duration_since(now) {
            Ok(left) if !left.is_zero() => Some(left),
            _ if previous.get(host).is_some_and(|p| p.vacated == Some(v)) => None,
            _ => Some(Duration::ZERO),
        })
        .min()
}

/// Which Ingress's namespace owns each claimed host (exact and wildcard), when ownership is on.
#[derive(Clone, Debug, Default)]
pub struct HostOwners {
    owners: BTreeMap<String, KubeRef>,
}

/// Is `host` (exact) one more label in front of the wildcard's suffix?
fn covered_by(wild: &str, host: &str) -> bool {
    HostKind::of(wild) == HostKind::Wildcard && HostKind::of(host) == HostKind::Exact && wildcard_covers(wild, host)
}

impl HostOwners {
    /// The owners from our Ingresses, `ours` sorted oldest first, after the `remembered` owners
    /// still holding their hosts at `now`. Invalid hosts claim nothing.
    pub fn build(ours: &[&Ingress], remembered: &RememberedOwners, now: Option<SystemTime>, grace: Duration) -> Self {
        Self::of_claims(&ingress_claims(ours), remembered, now, grace)
    }

    /// The owners from `claims` of any kind (decided oldest first, see [`by_age`]), after the
    /// `remembered` owners still holding their hosts at `now`.
    pub fn of_claims(
        claims: &[HostClaim],
        remembered: &RememberedOwners,
        now: Option<SystemTime>,
        grace: Duration,
    ) -> Self {
        let claims = by_age(claims);
        let mut owners: BTreeMap<String, KubeRef> = BTreeMap::new();
        for (host, r) in remembered.iter().filter(|(_, r)| holds(r, now, grace)) {
            // Named by the oldest claim of the namespace that names it, if one does.
            let by = claims.iter().find(|c| c.by.namespace == r.namespace && c.host == *host);
            let owner = by.map_or_else(|| KubeRef::new("Ingress", &r.namespace, ""), |c| c.by.clone());
            owners.insert(host.clone(), owner);
        }
        for claim in claims {
            let host = claim.host.as_str();
            if owners.contains_key(host) {
                continue;
            }
            // An exact host inside a wildcard claimed earlier belongs to the wildcard's owner.
            let by_wildcard = owners.iter().find(|(w, _)| covered_by(w, host)).map(|(_, o)| o.clone());
            owners.insert(host.to_string(), by_wildcard.unwrap_or_else(|| claim.by.clone()));
        }
        Self { owners }
    }

    /// The object whose namespace owns `host`, when that is not `namespace`: the claim is refused.
    pub fn refuses(&self, namespace: &str, host: &str) -> Option<&KubeRef> {
        self.owners.get(host).filter(|o| o.namespace != namespace)
    }

    /// The Warning message for a refused claim (`what`: which rule or TLS entry).
    pub fn message(claimant: &KubeRef, what: &str, host: &str, owner: &KubeRef) -> String {
        format!(
            "{claimant}: {what} for host {host} refused: the host belongs to namespace {} ({}); [kubernetes] host_ownership is on",
            owner.namespace,
            Self::owned_by(owner)
        )
    }

    /// How `owner` came to own its host, for messages: the object that claimed it first, or
    /// its namespace remembered while it re-creates that object.
    pub fn owned_by(owner: &KubeRef) -> String {
        if owner.name.is_empty() {
            "kept for its re-creation during [kubernetes] host_ownership_grace_period".to_string()
        } else {
            format!("claimed first by {owner}")
        }
    }

    /// The owners to remember after this sync: every owned host, `vacated` set (to `now`) when
    /// no claim of its owner's namespace (of any kind) names it any more, dropped once the grace
    /// period is over.
    pub fn remember(
        &self,
        claims: &[HostClaim],
        previous: &RememberedOwners,
        now: Option<SystemTime>,
    ) -> RememberedOwners {
        let mut out = RememberedOwners::new();
        for (host, owner) in &self.owners {
            let named = claims.iter().any(|c| c.by.namespace == owner.namespace && c.host == *host);
            let vacated = if named {
                None
            } else {
                match previous.get(host).filter(|p| p.namespace == owner.namespace) {
                    Some(p) if p.vacated.is_some() => p.vacated,
                    // Owned through a wildcard of the namespace: the wildcard's entry keeps it.
                    _ if !previous.contains_key(host) => continue,
                    _ => now.map(unix),
                }
            };
            out.insert(host.clone(), RememberedOwner { namespace: owner.namespace.clone(), vacated });
        }
        out
    }
}

/// Every claim host ownership decides: our Ingresses' (`ours`, oldest first), then those of the
/// Gateway API objects given with the inputs (`View::gateway_claims`).
fn all_claims(ours: &[&Ingress], inputs: &View<'_>) -> Vec<HostClaim> {
    let mut claims = ingress_claims(ours);
    claims.extend(inputs.gateway_claims.iter().cloned());
    claims
}

/// Host ownership, when on: the remembered owners on our IngressClass, then the oldest claimants
/// of either kind.
pub(crate) fn host_owners(ours: &[&Ingress], inputs: &View<'_>, opts: &TranslateOptions) -> Option<HostOwners> {
    opts.tenancy.host_ownership.then(|| {
        let remembered = stored_owners(our_class(&inputs.ingress_classes, opts));
        HostOwners::of_claims(&all_claims(ours, inputs), &remembered, inputs.now, opts.tenancy.host_ownership_grace)
    })
}

/// The value of [`HOST_OWNERS_ANNOTATION`] that our IngressClass should carry after a sync of
/// these inputs, when it differs from the stored one (`None`: nothing to write). Host ownership
/// off: nothing is remembered (a stored value is left alone, for when it is turned back on).
/// Without our IngressClass, nothing either: the remembered owners are not in the inputs then
/// (the Gateway side remembers its own hosts, `crate::gateway::host_owners`).
pub fn remembered_owners(inputs: &(impl Source + ?Sized), opts: &TranslateOptions) -> Option<String> {
    if !opts.tenancy.host_ownership {
        return None;
    }
    let inputs = &inputs.view();
    remembered_owners_of(inputs, opts, ingress_claims(&ours_by_age(inputs, opts)))
}

/// [`remembered_owners`] from our Ingresses' claims made already (`claims`, oldest first, as
/// [`ingress_claims`] makes them): the controller makes them once per translation, for this and
/// for the Gateway loop (`OwnerBook::set_ingress_claims`).
pub fn remembered_owners_of(inputs: &View<'_>, opts: &TranslateOptions, mut claims: Vec<HostClaim>) -> Option<String> {
    if !opts.tenancy.host_ownership {
        return None;
    }
    let class = our_class(&inputs.ingress_classes, opts)?;
    let previous = stored_owners(Some(class));
    claims.extend(inputs.gateway_claims.iter().cloned());
    let owners = HostOwners::of_claims(&claims, &previous, inputs.now, opts.tenancy.host_ownership_grace);
    let next = owners.remember(&claims, &previous, inputs.now);
    (next != previous).then(|| serde_json::to_string(&next).expect("plain JSON"))
}

/// The Event reason of a claim refused by host ownership.
pub(crate) const HOST_OWNED: Reason = Reason::HostOwnedByOtherNamespace;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_next_release_is_when_the_first_vacated_hosts_grace_ends() {
        let at = |v: Option<u64>| RememberedOwner { namespace: "a".into(), vacated: v };
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
        let grace = Duration::from_secs(60);
        let next: RememberedOwners =
            [("x".to_string(), at(Some(990))), ("y".to_string(), at(Some(1_000))), ("z".to_string(), at(None))].into();
        // x is released at 1,050, y at 1,060: the first in 50 s.
        assert_eq!(next_release(&next, &RememberedOwners::new(), now, grace), Some(Duration::from_secs(50)));
        // Nothing vacated: nothing to wait for.
        let held: RememberedOwners = [("z".to_string(), at(None))].into();
        assert_eq!(next_release(&held, &RememberedOwners::new(), now, grace), None);
        // No grace: a host vacated in this pass is due now; one vacated before and still kept
        // (through a wildcard) is not waited for again, or the loop would pass without end.
        let vacated_now: RememberedOwners = [("y".to_string(), at(Some(1_000)))].into();
        assert_eq!(next_release(&vacated_now, &held, now, Duration::ZERO), Some(Duration::ZERO));
        assert_eq!(next_release(&vacated_now, &vacated_now, now, Duration::ZERO), None);
    }
    use crate::translate::options::{DEFAULT_HOST_OWNERSHIP_GRACE, TenancyOptions};

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
        let none = RememberedOwners::new();
        let grace = DEFAULT_HOST_OWNERSHIP_GRACE;
        let owners = HostOwners::build(&[&a, &b2, &b], &none, None, grace);
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
        let owners = HostOwners::build(&[&early, &late], &none, None, grace);
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
