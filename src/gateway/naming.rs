//! Octavia names for Gateway objects. Gateway names may be 253 characters long and namespaces
//! 63, and Octavia caps names at 255, so names are not plain concatenations: the load balancer's
//! identity is a hash of `namespace/name` placed first, so a readable tail that has to be cut
//! never makes two Gateways collide.

use crate::translate::names::{MAX_NAME, bounded, fnv1a64};

/// How every Gateway's load-balancer name begins: with our ownership tags, what finds the load
/// balancers of Gateways deleted while no controller ran.
pub const GATEWAY_PREFIX: &str = "kuryr-gw-";

/// `kuryr-gw-<16 hex digits of FNV-1a("namespace/name")>-<namespace>.<name>`, cut to 255 bytes.
/// The hash alone is the identity; the tail only helps an operator reading `openstack
/// loadbalancer list`.
pub fn load_balancer_name(namespace: &str, name: &str) -> String {
    let full = format!("{GATEWAY_PREFIX}{:016x}-{namespace}.{name}", fnv1a64(format!("{namespace}/{name}").as_bytes()));
    let mut cut = full.len().min(MAX_NAME);
    while !full.is_char_boundary(cut) {
        cut -= 1;
    }
    full[..cut].to_string()
}

/// `httproute:<namespace>/<name>:<rule index>`: one pool per rule; the `:` keeps it apart from
/// Service pools (`<namespace>_<service>`) and the reserved status pools.
pub fn pool_name(namespace: &str, route: &str, rule: usize) -> String {
    bounded(format!("httproute:{namespace}/{route}:{rule}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longest_gateway_name_fits_and_stays_distinct() {
        let a = "a".repeat(253);
        let mut b = "a".repeat(252);
        b.push('b');
        let (na, nb) = (load_balancer_name(&"n".repeat(63), &a), load_balancer_name(&"n".repeat(63), &b));
        assert!(na.len() <= 255 && nb.len() <= 255);
        assert_ne!(na, nb, "names differing only past the cut differ by their hash");
    }

    #[test]
    fn short_names_are_readable_and_stable() {
        let n = load_balancer_name("infra", "gw");
        assert!(n.starts_with("kuryr-gw-") && n.ends_with("-infra.gw"), "{n}");
        assert_eq!(n, load_balancer_name("infra", "gw"));
        assert_ne!(n, load_balancer_name("infr", "a.gw"), "the hash separates namespace from name");
    }

    #[test]
    fn pool_names_are_bounded_and_per_rule() {
        assert_eq!(pool_name("ns", "r", 2), "httproute:ns/r:2");
        assert!(pool_name(&"n".repeat(63), &"r".repeat(253), 0).len() <= 255);
        assert_ne!(pool_name(&"n".repeat(63), &"r".repeat(253), 0), pool_name(&"n".repeat(63), &"r".repeat(253), 1));
    }
}
