//! Hosts as every route kind names them: exact (`foo.example.com`), wildcard
//! (`*.example.com`, exactly one more label) or none (any host). A leaf: how a host is checked
//! and encoded as an Octavia rule lives in `rules`.

/// Host kind, in precedence order: Kubernetes prefers an exact host over a wildcard over none
/// (Ingress and Gateway API alike).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum HostKind {
    Exact,
    Wildcard,
    Any,
}

impl HostKind {
    pub fn of(host: &str) -> Self {
        if host.is_empty() {
            HostKind::Any
        } else if host.starts_with("*.") {
            HostKind::Wildcard
        } else {
            HostKind::Exact
        }
    }
}

/// Does the wildcard `wild` (`*.example.com`) cover `host`: exactly one label in front of its
/// suffix, never the bare suffix and never two labels?
pub(crate) fn wildcard_covers(wild: &str, host: &str) -> bool {
    let suffix = &wild[1..]; // ".example.com"
    host.len() > suffix.len() && host.ends_with(suffix) && !host[..host.len() - suffix.len()].contains('.')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wildcard_covers_one_label_only() {
        assert!(wildcard_covers("*.example.com", "a.example.com"));
        assert!(!wildcard_covers("*.example.com", "example.com"));
        assert!(!wildcard_covers("*.example.com", "a.b.example.com"));
        assert_eq!(HostKind::of(""), HostKind::Any);
        assert_eq!(HostKind::of("*.x.org"), HostKind::Wildcard);
        assert!(HostKind::Exact < HostKind::Wildcard && HostKind::Wildcard < HostKind::Any);
    }
}
