//! Host groups: the hosts that Ingresses tie together, found with union-find.
//!
//! Every host of an Ingress must be on one router (the Ingress's status carries one address),
//! so an Ingress with hosts a and b and another with b and c make one group {a, b, c}.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::Cost;

/// Stable identity of a group: its lexicographically smallest (normalized) host. It depends
/// only on the set of hosts, never on the order of the inputs or on Ingress names, so
/// re-translating the same Ingresses yields the same id.
pub type GroupId = String;

/// What one Ingress claims: its hosts and the cost of its host rules.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IngressClaim {
    /// `namespace/name`.
    pub ingress: String,
    /// Hosts of its rules (and TLS hosts). Empty for an Ingress with only host-less rules or
    /// a default backend: those are copied to every router, so its cost is shared.
    pub hosts: Vec<String>,
    /// Policies its rules produce, counted over both listeners.
    pub policies: u32,
    /// Certificates it references (`namespace/secret`); a certificate shared by several
    /// Ingresses of one group is counted once for the group.
    pub certificates: BTreeSet<String>,
}

/// One host group with its cost and the Ingresses in it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostGroup {
    pub id: GroupId,
    pub hosts: BTreeSet<String>,
    pub ingresses: BTreeSet<String>,
    pub cost: Cost,
}

/// Hosts compare case-insensitively (DNS) and without a trailing dot.
pub(crate) fn normalize_host(host: &str) -> String {
    host.trim().trim_end_matches('.').to_ascii_lowercase()
}

/// Union-find over host indices, with path halving; the smaller index wins a union so the
/// result does not depend on the order of unions.
struct Forest(Vec<usize>);

impl Forest {
    fn find(&mut self, mut x: usize) -> usize {
        while self.0[x] != x {
            self.0[x] = self.0[self.0[x]];
            x = self.0[x];
        }
        x
    }

    fn union(&mut self, a: usize, b: usize) {
        let (ra, rb) = (self.find(a), self.find(b));
        let (keep, child) = if ra < rb { (ra, rb) } else { (rb, ra) };
        self.0[child] = keep;
    }
}

/// Groups the claims' hosts. Returns the groups in id order, and the cost of the host-less
/// claims (added to the cost shared by every router).
pub fn group_claims(claims: &[IngressClaim]) -> (Vec<HostGroup>, Cost) {
    let hosts: BTreeSet<String> =
        claims.iter().flat_map(|c| c.hosts.iter().map(|h| normalize_host(h))).filter(|h| !h.is_empty()).collect();
    let index: BTreeMap<&str, usize> = hosts.iter().enumerate().map(|(i, h)| (h.as_str(), i)).collect();
    let mut forest = Forest((0..hosts.len()).collect());
    let mut shared = Cost::default();
    let mut claim_root = Vec::with_capacity(claims.len());
    for claim in claims {
        let ids: Vec<usize> =
            claim.hosts.iter().filter_map(|h| index.get(normalize_host(h).as_str()).copied()).collect();
        for pair in ids.windows(2) {
            forest.union(pair[0], pair[1]);
        }
        if ids.is_empty() {
            shared =
                shared.plus(Cost::new(claim.policies, u32::try_from(claim.certificates.len()).unwrap_or(u32::MAX)));
        }
        claim_root.push(ids.first().copied());
    }
    // Roots are the smallest index of each set, and indices follow the sorted host order, so
    // the root's host is the group's smallest host: its id.
    let names: Vec<&String> = hosts.iter().collect();
    let mut groups: BTreeMap<usize, (HostGroup, BTreeSet<String>)> = BTreeMap::new();
    for (i, host) in names.iter().enumerate() {
        let root = forest.find(i);
        let entry = groups.entry(root).or_insert_with(|| (empty_group(names[root]), BTreeSet::new()));
        entry.0.hosts.insert((*host).clone());
    }
    for (claim, root) in claims.iter().zip(claim_root) {
        let Some(first) = root else { continue };
        let root = forest.find(first);
        let (group, certs) = groups.get_mut(&root).expect("every host has a group");
        group.ingresses.insert(claim.ingress.clone());
        group.cost.policies = group.cost.policies.saturating_add(claim.policies);
        certs.extend(claim.certificates.iter().cloned());
    }
    let groups = groups
        .into_values()
        .map(|(mut g, certs)| {
            g.cost.certificates = u32::try_from(certs.len()).unwrap_or(u32::MAX);
            g
        })
        .collect();
    (groups, shared)
}

fn empty_group(id: &str) -> HostGroup {
    HostGroup { id: id.to_string(), hosts: BTreeSet::new(), ingresses: BTreeSet::new(), cost: Cost::default() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim(name: &str, hosts: &[&str], policies: u32, certs: &[&str]) -> IngressClaim {
        IngressClaim {
            ingress: name.into(),
            hosts: hosts.iter().map(|h| h.to_string()).collect(),
            policies,
            certificates: certs.iter().map(|c| c.to_string()).collect(),
        }
    }

    #[test]
    fn chained_ingresses_make_one_group() {
        let (groups, shared) = group_claims(&[
            claim("ns/x", &["b.com", "A.com."], 2, &["ns/t1"]),
            claim("ns/y", &["c.com", "b.com"], 3, &["ns/t1", "ns/t2"]),
            claim("ns/z", &["d.com"], 1, &[]),
            claim("ns/default", &[], 4, &["ns/t3"]),
        ]);
        assert_eq!(groups.len(), 2);
        assert_eq!(groups[0].id, "a.com");
        assert_eq!(groups[0].hosts.iter().cloned().collect::<Vec<_>>(), ["a.com", "b.com", "c.com"]);
        assert_eq!(groups[0].ingresses.len(), 2);
        assert_eq!(groups[0].cost, Cost::new(5, 2), "a certificate shared inside a group counts once");
        assert_eq!(groups[1].id, "d.com");
        assert_eq!(shared, Cost::new(4, 1), "host-less Ingresses cost on every router");
    }
}
