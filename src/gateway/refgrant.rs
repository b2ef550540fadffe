//! ReferenceGrant: whether an object may refer to an object of another namespace.

use super::api::ReferenceGrant;
use super::world::ns_of;

/// A reference from (group, kind, namespace) to (group, kind, namespace, name).
#[derive(Clone, Copy, Debug)]
pub(crate) struct CrossRef<'a> {
    pub(crate) from_group: &'a str,
    pub(crate) from_kind: &'a str,
    pub(crate) from_namespace: &'a str,
    pub(crate) to_group: &'a str,
    pub(crate) to_kind: &'a str,
    pub(crate) to_namespace: &'a str,
    pub(crate) to_name: &'a str,
}

/// A same-namespace reference is always permitted; a cross-namespace one only when a
/// ReferenceGrant in the target's namespace lists the source in `from` and the target in `to`
/// (a `to` without `name` grants every object of that kind).
pub(crate) fn permitted(r: &CrossRef<'_>, grants: &[std::sync::Arc<ReferenceGrant>]) -> bool {
    if r.from_namespace == r.to_namespace {
        return true;
    }
    grants.iter().filter(|g| ns_of(&***g) == r.to_namespace).any(|g| {
        let from = g
            .spec
            .from
            .iter()
            .any(|f| f.group == r.from_group && f.kind == r.from_kind && f.namespace == r.from_namespace);
        let to =
            g.spec.to.iter().any(|t| {
                t.group == r.to_group && t.kind == r.to_kind && t.name.as_deref().is_none_or(|n| n == r.to_name)
            });
        from && to
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gateway::api::{ReferenceGrantFrom, ReferenceGrantSpec, ReferenceGrantTo};

    fn grant(ns: &str, from_ns: &str, kind: &str, to_kind: &str, name: Option<&str>) -> std::sync::Arc<ReferenceGrant> {
        let mut g = ReferenceGrant::new(
            "g",
            ReferenceGrantSpec {
                from: vec![ReferenceGrantFrom {
                    group: "gateway.networking.k8s.io".into(),
                    kind: kind.into(),
                    namespace: from_ns.into(),
                }],
                to: vec![ReferenceGrantTo { group: "".into(), kind: to_kind.into(), name: name.map(Into::into) }],
            },
        );
        g.metadata.namespace = Some(ns.into());
        g.into()
    }

    fn route_to_service<'a>(from_ns: &'a str, to_ns: &'a str, name: &'a str) -> CrossRef<'a> {
        CrossRef {
            from_group: "gateway.networking.k8s.io",
            from_kind: "HTTPRoute",
            from_namespace: from_ns,
            to_group: "",
            to_kind: "Service",
            to_namespace: to_ns,
            to_name: name,
        }
    }

    #[test]
    fn same_namespace_needs_no_grant() {
        assert!(permitted(&route_to_service("a", "a", "s"), &[]));
    }

    #[test]
    fn cross_namespace_needs_a_grant_in_the_target_namespace() {
        let r = route_to_service("a", "b", "s");
        assert!(!permitted(&r, &[]));
        assert!(permitted(&r, &[grant("b", "a", "HTTPRoute", "Service", None)]));
        // A grant in the source namespace grants nothing.
        assert!(!permitted(&r, &[grant("a", "a", "HTTPRoute", "Service", None)]));
    }

    #[test]
    fn grant_must_match_kinds_source_namespace_and_name() {
        let r = route_to_service("a", "b", "s");
        assert!(permitted(&r, &[grant("b", "a", "HTTPRoute", "Service", Some("s"))]));
        assert!(!permitted(&r, &[grant("b", "a", "HTTPRoute", "Service", Some("other"))]));
        assert!(!permitted(&r, &[grant("b", "c", "HTTPRoute", "Service", None)]));
        assert!(!permitted(&r, &[grant("b", "a", "Gateway", "Service", None)]));
        assert!(!permitted(&r, &[grant("b", "a", "HTTPRoute", "Secret", None)]));
    }
}
