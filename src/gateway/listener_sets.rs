//! ListenerSets: listeners that a ListenerSet adds to its parent Gateway of ours, when the
//! Gateway's `spec.allowedListeners` admits the ListenerSet's namespace (none by default). An
//! admitted ListenerSet's listeners are planned as the Gateway's own (`super::listeners`), after
//! them: they share the Gateway's load balancer (a listener on a port is a listener of that
//! port's Octavia listener), and a ListenerSet's listener that conflicts with the Gateway's, or
//! with an older ListenerSet's, is the one not served. Routes reach a ListenerSet's listeners
//! only through a parentRef to the ListenerSet (`super::attach`).

use super::api::{GROUP, Gateway, HTTPRoute, ListenerSet, ParentReference};
use super::attach::{names_a_listener_set, parent_namespace};
use super::listeners::{Declared, ListenerPlan, mark_conflicts, plan_one, selector_matches};
use super::status::{Cond, ListenerOutcome, ListenerSetOutcome};
use super::world::{World, name_of, ns_of};

/// The Gateway (namespace, name) a ListenerSet names as its parent; None when its parentRef is
/// not a Gateway.
pub(crate) fn parent_of(ls: &ListenerSet) -> Option<(String, String)> {
    let p = &ls.spec.parent_ref;
    let gateway = p.group.as_deref().is_none_or(|g| g == GROUP) && p.kind.as_deref().is_none_or(|k| k == "Gateway");
    gateway.then(|| (p.namespace.clone().unwrap_or_else(|| ns_of(ls)), p.name.clone()))
}

/// Whether `gw`'s `spec.allowedListeners` admits ListenerSets of `namespace`.
pub(crate) fn admits(gw: &Gateway, namespace: &str, world: &World) -> bool {
    let Some(n) = gw.spec.allowed_listeners.as_ref().and_then(|a| a.namespaces.as_ref()) else { return false };
    match n.from.as_deref() {
        Some("All") => true,
        Some("Same") => ns_of(gw) == namespace,
        Some("Selector") => {
            n.selector.as_ref().is_some_and(|s| selector_matches(s, &world.namespace_labels(namespace)))
        }
        _ => false,
    }
}

/// The reason of a listener whose protocol Octavia's L7 rules cannot serve (`super::listeners`).
const UNSUPPORTED: &str = "UnsupportedProtocol";

/// One ListenerSet of a Gateway while translating: admitted or not.
pub(crate) struct SetWork<'a> {
    pub ls: &'a ListenerSet,
    pub admitted: bool,
}

/// The ListenerSets naming `gw`, oldest first (then by namespace/name): the spec's precedence
/// between conflicting listeners.
pub(crate) fn sets_of<'a>(gw: &Gateway, world: &'a World) -> Vec<SetWork<'a>> {
    let key = (ns_of(gw), name_of(gw));
    let mut sets: Vec<&ListenerSet> =
        world.listener_sets.iter().map(|s| &**s).filter(|s| parent_of(s).as_ref() == Some(&key)).collect();
    sets.sort_by(|a, b| {
        let t = |s: &ListenerSet| s.metadata.creation_timestamp.as_ref().map(|t| t.0);
        (t(a), ns_of(*a), name_of(*a)).cmp(&(t(b), ns_of(*b), name_of(*b)))
    });
    sets.into_iter().map(|ls| SetWork { ls, admitted: admits(gw, &ns_of(ls), world) }).collect()
}

/// Appends the listeners of the admitted `sets` to the Gateway's `plans`, each conflicting with
/// an earlier listener on its port (another protocol, or the same hostname) marked Conflicted
/// and not accepted: the earlier one keeps the port or the name.
pub(crate) fn add_set_plans(gw: &Gateway, sets: &[SetWork<'_>], world: &World, plans: &mut Vec<ListenerPlan>) {
    for s in sets.iter().filter(|s| s.admitted) {
        let set = Some((ns_of(s.ls), name_of(s.ls)));
        let owner = Declared { kind: "ListenerSet", namespace: ns_of(s.ls), set, gateway: gw };
        let mut mine: Vec<ListenerPlan> = s.ls.spec.listeners.iter().map(|l| plan_one(&owner, l, world)).collect();
        mark_conflicts(&mut mine);
        // A listener of a protocol Octavia does not serve (TCP, say) on a port taken by an earlier
        // HTTP listener is in conflict before being unsupported: the spec's reason is the conflict.
        let candidate = |p: &ListenerPlan| (p.accepted.ok || p.accepted.reason == UNSUPPORTED) && !p.conflicted.ok;
        for p in mine.iter_mut().filter(|p| candidate(p)) {
            let earlier = plans.iter().filter(|e| e.accepted.ok && !e.conflicted.ok && e.port == p.port);
            let conflict = earlier.fold(None, |c, e| {
                c.or_else(|| {
                    if e.protocol != p.protocol {
                        Some(("ProtocolConflict", format!("another listener on port {} has another protocol", p.port)))
                    } else if e.hostname == p.hostname {
                        let h = p.hostname.clone().unwrap_or_else(|| "(any)".into());
                        Some(("HostnameConflict", format!("another listener on port {} has hostname {h}", p.port)))
                    } else {
                        None
                    }
                })
            });
            if let Some((reason, m)) = conflict {
                let m = format!("listener {}: {m}", p.name);
                p.conflicted = Cond::yes("Conflicted", reason, m.clone());
                p.accepted = Cond::no("Accepted", reason, m);
            }
        }
        plans.extend(mine);
    }
}

/// The ListenerSet's status from its listeners' (`listeners`, those of its plans) and its
/// Gateway's: not admitted: `NotAllowed`; no valid listener (accepted and resolved):
/// `ListenersNotValid`; else
/// Accepted, and Programmed once the Gateway is.
pub(crate) fn outcome(
    s: &SetWork<'_>,
    gateway_accepted: &Cond,
    gateway_programmed: &Cond,
    listeners: Vec<ListenerOutcome>,
) -> ListenerSetOutcome {
    let (ns, name) = (ns_of(s.ls), name_of(s.ls));
    // Valid: accepted with every reference resolved (a certificate no ReferenceGrant permits
    // makes its listener unservable, so a ListenerSet of only such listeners is not valid).
    let ok = |l: &ListenerOutcome, kind: &str| l.condition(kind).is_some_and(|c| c.ok);
    let valid = listeners.iter().filter(|l| ok(l, "Accepted") && ok(l, "ResolvedRefs")).count();
    let conditions = if !s.admitted {
        let m = format!("the Gateway's spec.allowedListeners does not admit ListenerSets of namespace {ns}");
        vec![Cond::no("Accepted", "NotAllowed", m.clone()), Cond::no("Programmed", "NotAllowed", m)]
    } else if !gateway_accepted.ok {
        let m = format!("the parent Gateway is not accepted: {}", gateway_accepted.message);
        vec![Cond::no("Accepted", "ParentNotAccepted", m.clone()), Cond::no("Programmed", "ParentNotAccepted", m)]
    } else if valid == 0 {
        let m = "no listener is valid".to_string();
        vec![Cond::no("Accepted", "ListenersNotValid", m.clone()), Cond::no("Programmed", "ListenersNotValid", m)]
    } else {
        let accepted = if valid == listeners.len() {
            Cond::yes("Accepted", "Accepted", "the ListenerSet is valid")
        } else {
            Cond::yes("Accepted", "ListenersNotValid", format!("{} listener(s) are not valid", listeners.len() - valid))
        };
        let programmed = if gateway_programmed.ok {
            Cond::yes("Programmed", "Programmed", "its listeners are served by the Gateway's load balancer")
        } else {
            Cond::no("Programmed", "Pending", format!("the Gateway is not programmed: {}", gateway_programmed.message))
        };
        vec![accepted, programmed]
    };
    ListenerSetOutcome {
        namespace: ns,
        name,
        generation: s.ls.metadata.generation,
        conditions,
        listeners: if s.admitted { listeners } else { Vec::new() },
    }
}

/// A namespaced object's (namespace, name).
pub(crate) type Key = (String, String);

/// What a parentRef of `route` reaches: the Gateway (namespace, name), and for a parentRef to a
/// ListenerSet, that ListenerSet (namespace, name). None: a ListenerSet that does not exist or
/// whose parent is not a Gateway.
pub(crate) fn parent_target(route: &HTTPRoute, p: &ParentReference, world: &World) -> Option<(Key, Option<Key>)> {
    let key = (parent_namespace(route, p), p.name.clone());
    if !names_a_listener_set(p) {
        return Some((key, None));
    }
    let ls = world.listener_sets.iter().map(|s| &**s).find(|s| ns_of(*s) == key.0 && name_of(*s) == key.1)?;
    Some((parent_of(ls)?, Some(key)))
}
