//! Names of Octavia objects. A policy's or pool's name is its identity on the router (the driver
//! diffs on it), so it must be readable, unique and stable for the same Kubernetes input.

use crate::model::KubeRef;

/// The namespace of an object that names none: Kubernetes' `default` (manifests given to `plan`
/// and `apply` may leave it out; objects from the API always carry one).
pub(crate) fn namespace_of(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> &str {
    meta.namespace.as_deref().unwrap_or("default")
}

/// Octavia's limit on `name` (StringType(max_length=255)).
pub(crate) const MAX_NAME: usize = 255;

/// 64-bit FNV-1a: tiny, dependency-free and stable across releases and platforms (unlike
/// `std::hash`), which is what a persisted identity needs.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// `full` if it fits in 255 bytes, else its longest prefix that leaves room for `~` and the
/// 16-hex-digit FNV-1a of the whole name, so two long names that share a prefix stay distinct.
pub fn bounded(full: String) -> String {
    if full.len() <= MAX_NAME {
        return full;
    }
    let mut cut = MAX_NAME - 17;
    while !full.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}~{:016x}", &full[..cut], fnv1a64(full.as_bytes()))
}

/// `<kind>:<namespace>/<name>:<host or _>:<pathType>:<path>` (kind in lower case, `ingress` for
/// an Ingress): the owner is part of the identity because two objects may list the same route
/// (only one wins, but the winner can change).
pub fn policy_name(owner: &KubeRef, host: &str, path_type: &str, path: &str) -> String {
    let host = if host.is_empty() { "_" } else { host };
    // Pushed into one string of its size: one allocation per policy, not three.
    let parts = [owner.kind.as_str(), &owner.namespace, &owner.name, host, path_type, path];
    let mut name = String::with_capacity(parts.iter().map(|p| p.len()).sum::<usize>() + 5);
    name.extend(owner.kind.chars().map(|c| c.to_ascii_lowercase()));
    for (sep, part) in [':', '/', ':', ':', ':'].into_iter().zip(&parts[1..]) {
        name.push(sep);
        name.push_str(part);
    }
    bounded(name)
}

/// `guard:<host>`: the policy that stops a host's unmatched requests from reaching wildcard or
/// host-less routes (Kubernetes picks the host first, then the path).
pub(crate) fn guard_name(host: &str) -> String {
    bounded(format!("guard:{host}"))
}

/// `<namespace>_<service>` (Kuryr's design) or `<namespace>_<service>_<port>` when the Service is
/// referenced on more than one port. Namespaces and Service names are DNS labels (no `_`), so the
/// names cannot collide.
pub fn pool_name(namespace: &str, service: &str, port: Option<u16>) -> String {
    match port {
        None => format!("{namespace}_{service}"),
        Some(p) => format!("{namespace}_{service}_{p}"),
    }
}

/// `<namespace>_<secret>`: one certificate per Kubernetes TLS Secret (Secret names are DNS
/// subdomains, without `_`, so the names cannot collide).
pub(crate) fn certificate_name(namespace: &str, secret: &str) -> String {
    format!("{namespace}_{secret}")
}

/// `redirect:<host>`: the HTTP→HTTPS redirect policy of a TLS host.
pub(crate) fn redirect_name(host: &str) -> String {
    bounded(format!("redirect:{host}"))
}
