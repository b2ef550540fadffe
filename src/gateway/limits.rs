//! The Gateways over `[octavia_defaults] gateways_per_namespace` and `gateways_per_cluster`,
//! pure. Each Gateway costs a load balancer, an amphora and a floating IP of the project that
//! every tenant shares, so the number of Gateways served is bounded per namespace and per
//! cluster; the Gateways over a limit get `Accepted: False` (reason [`LIMIT_EXCEEDED`]) and no
//! load balancer (`super::keep`: kept, so that one built before the limit was lowered keeps its
//! address).
//!
//! Which Gateways are served is stable: those the data plane already serves first (an address,
//! a failure or holds reported), then the oldest (creationTimestamp), then by namespace and
//! name. A new Gateway never takes the place of one served, whatever its name, and a Gateway
//! whose class becomes ours does not either once the others are served.

use super::api::Gateway;
use super::world::{name_of, ns_of};
use crate::config::GatewayLimits;
use std::collections::{BTreeMap, BTreeSet};

/// The `Accepted` reason of a Gateway over a limit. Not one of the spec's reasons (none says
/// "over a quota the operator set"); the spec lets an implementation add its own.
pub const LIMIT_EXCEEDED: &str = "LimitExceeded";

/// The Gateways (namespace, name) of `gateways` over the limits, each with the message of its
/// condition (naming the limit). `served`: the Gateways the data plane serves now.
pub fn over_limits<'a>(
    gateways: impl IntoIterator<Item = &'a Gateway>,
    served: &BTreeSet<(String, String)>,
    limits: &GatewayLimits,
) -> BTreeMap<(String, String), String> {
    let mut out = BTreeMap::new();
    if limits.per_namespace.is_none() && limits.per_cluster.is_none() {
        return out;
    }
    // The rank: served first, then with a creationTimestamp (oldest first; one without, as a
    // hand-made object, after every time), then by namespace and name.
    let rank = |gw: &Gateway| {
        let key = (ns_of(gw), name_of(gw));
        let created = gw.metadata.creation_timestamp.as_ref().map(|t| t.0);
        (!served.contains(&key), created.is_none(), created, key)
    };
    let mut ranked: Vec<_> = gateways.into_iter().map(rank).collect();
    ranked.sort();
    let mut per_namespace: BTreeMap<String, u32> = BTreeMap::new();
    let mut total = 0u32;
    for (_, _, _, key) in ranked {
        let in_namespace = per_namespace.entry(key.0.clone()).or_default();
        if let Some(max) = limits.per_namespace.filter(|max| *in_namespace >= *max) {
            let m = format!(
                "namespace {} has {max} Gateways served already ([octavia_defaults] gateways_per_namespace = {max}): \
                 this one gets no load balancer until one of them is deleted",
                key.0
            );
            out.insert(key, m);
            continue;
        }
        if let Some(max) = limits.per_cluster.filter(|max| total >= *max) {
            let m = format!(
                "the cluster has {max} Gateways served already ([octavia_defaults] gateways_per_cluster = {max}): \
                 this one gets no load balancer until one of them is deleted"
            );
            out.insert(key, m);
            continue;
        }
        *in_namespace += 1;
        total += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn gw(ns: &str, name: &str, created: Option<&str>) -> Gateway {
        let mut g = Gateway::new(name, super::super::api::GatewaySpec::default());
        g.metadata.namespace = Some(ns.into());
        g.metadata.name = Some(name.into());
        g.metadata.creation_timestamp = created.map(|c| Time(c.parse().unwrap()));
        g
    }

    fn key(ns: &str, name: &str) -> (String, String) {
        (ns.into(), name.into())
    }

    #[test]
    fn the_oldest_are_served_then_by_name_and_the_served_first() {
        let gws = [
            gw("a", "new", Some("2026-03-01T00:00:00Z")),
            gw("a", "old", Some("2026-01-01T00:00:00Z")),
            gw("a", "zz-old", Some("2026-01-01T00:00:00Z")),
            gw("b", "x", Some("2026-02-01T00:00:00Z")),
            gw("b", "none", None),
        ];
        let per_ns = GatewayLimits { per_namespace: Some(2), ..GatewayLimits::default() };
        let over = over_limits(&gws, &BTreeSet::new(), &per_ns);
        assert_eq!(over.keys().cloned().collect::<Vec<_>>(), [key("a", "new")]);
        assert!(over[&key("a", "new")].contains("gateways_per_namespace = 2"), "{over:?}");
        // One per cluster: the oldest, the name breaking the tie.
        let cluster = GatewayLimits { per_cluster: Some(1), ..GatewayLimits::default() };
        let over = over_limits(&gws, &BTreeSet::new(), &cluster);
        assert!(!over.contains_key(&key("a", "old")) && over.len() == 4, "{over:?}");
        assert!(over[&key("b", "none")].contains("gateways_per_cluster = 1"));
        // A Gateway served keeps its place before an older one that is not.
        let served = BTreeSet::from([key("a", "new")]);
        let over = over_limits(&gws, &served, &per_ns);
        assert_eq!(over.keys().cloned().collect::<Vec<_>>(), [key("a", "zz-old")]);
        // No limit: none over.
        assert!(over_limits(&gws, &BTreeSet::new(), &GatewayLimits::default()).is_empty());
    }
}
