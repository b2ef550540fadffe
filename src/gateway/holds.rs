//! Truthful status for a router that synced with writes on hold, pure: Octavia or Barbican
//! refused some writes for good (an HTTPS listener 400/409, a Barbican store 403, a policy 400,
//! a quota 403; see `crate::driver::isolation` and `crate::driver::https_holds`), every other
//! change went on, and the held objects are retried with backoff. Such a Gateway is not
//! `Programmed` (the Gateway and the listeners concerned say why, naming Octavia's or Barbican's
//! answer); a route whose objects are held carries `PartiallyInvalid` (its held rules are dropped,
//! the spec's "Dropped Rule" approach: `Accepted` stays True). A hold that clears clears these
//! by itself: the next Sync reports no hold.

use super::protocol::Protocol;
use super::status::Cond;
use crate::model::KubeRef;
use std::collections::BTreeMap;

/// The writes on hold of each Gateway's router after its last Sync, by (namespace, name).
pub type RouterHolds = BTreeMap<(String, String), Vec<RouterHold>>;

/// One object on hold on a Gateway's router.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RouterHold {
    /// Whether it is of the HTTPS side (the HTTPS listener, its certificates' Barbican secrets).
    pub https: bool,
    /// The object (`HTTPS listener`, `L7 policy <name>`, `Barbican secret <name>`).
    pub object: String,
    /// `invalid`, `quota`, `conflict`, `rejected`.
    pub reason: String,
    /// Octavia's or Barbican's answer.
    pub message: String,
    /// The HTTPRoutes the object serves.
    pub routes: Vec<KubeRef>,
}

impl RouterHold {
    fn describe(&self) -> String {
        format!("{} refused ({}): {}", self.object, self.reason, self.message)
    }
}

/// How the Gateway's `Programmed` message of a router with writes on hold starts (the Gateway
/// loop puts a Warning Event on the Gateway for it).
pub const HELD: &str = "writes on hold, retried: ";

/// The spec's reason for a Gateway whose writes are held: `NoResources` when one is a quota,
/// else `Invalid` (Octavia or Barbican refused a value).
fn gateway_reason(holds: &[RouterHold]) -> &'static str {
    if holds.iter().any(|h| h.reason == "quota") { "NoResources" } else { "Invalid" }
}

/// The Gateway's `Programmed` when its router holds writes; None without a hold.
pub(crate) fn gateway_programmed(holds: &[RouterHold]) -> Option<Cond> {
    if holds.is_empty() {
        return None;
    }
    let what: Vec<String> = holds.iter().map(RouterHold::describe).collect();
    Some(Cond::no("Programmed", gateway_reason(holds), format!("{HELD}{}", what.join("; "))))
}

/// The `Programmed` of a listener (`protocol`, the routes attached to it) when writes it carries
/// are held: an HTTPS listener for the HTTPS side, any listener for its routes' objects. The
/// listener's reason is `Invalid`, the only False reason the spec gives a listener besides
/// `Pending`.
pub(crate) fn listener_programmed(
    name: &str,
    protocol: Option<Protocol>,
    attached: &[(String, String)],
    holds: &[RouterHold],
) -> Option<Cond> {
    let concerned: Vec<String> = holds
        .iter()
        .filter(|h| {
            (h.https && protocol == Some(Protocol::Https))
                || h.routes.iter().any(|r| attached.iter().any(|(ns, n)| *ns == r.namespace && *n == r.name))
        })
        .map(RouterHold::describe)
        .collect();
    (!concerned.is_empty())
        .then(|| Cond::no("Programmed", "Invalid", format!("listener {name}: {}", concerned.join("; "))))
}

/// `PartiallyInvalid` of a route on a Gateway whose router holds objects of the route; None
/// without one.
pub(crate) fn route_dropped(namespace: &str, name: &str, holds: &[RouterHold]) -> Option<Cond> {
    let mine: Vec<String> = holds
        .iter()
        .filter(|h| h.routes.iter().any(|r| r.kind == "HTTPRoute" && r.namespace == namespace && r.name == name))
        .map(RouterHold::describe)
        .collect();
    (!mine.is_empty()).then(|| {
        Cond::yes("PartiallyInvalid", "UnsupportedValue", format!("Dropped Rule(s) until retried: {}", mine.join("; ")))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hold(https: bool, reason: &str, routes: Vec<KubeRef>) -> RouterHold {
        let object = if https { "HTTPS listener" } else { "L7 policy p" };
        RouterHold { https, object: object.into(), reason: reason.into(), message: "400: bad".into(), routes }
    }

    #[test]
    fn a_hold_is_named_on_the_gateway_its_listener_and_its_routes() {
        assert_eq!(gateway_programmed(&[]), None);
        let https = [hold(true, "invalid", vec![])];
        let c = gateway_programmed(&https).unwrap();
        assert_eq!((c.ok, c.reason.as_str()), (false, "Invalid"));
        assert_eq!(c.message, "writes on hold, retried: HTTPS listener refused (invalid): 400: bad");
        let quota = [hold(false, "quota", vec![KubeRef::new("HTTPRoute", "shop", "r")])];
        assert_eq!(gateway_programmed(&quota).unwrap().reason, "NoResources");
        assert!(listener_programmed("tls", Some(Protocol::Https), &[], &https).is_some());
        assert!(listener_programmed("web", Some(Protocol::Http), &[], &https).is_none(), "not the HTTP one");
        let attached = [("shop".to_string(), "r".to_string())];
        assert!(listener_programmed("web", Some(Protocol::Http), &attached, &quota).is_some());
        assert!(listener_programmed("web", Some(Protocol::Http), &[], &quota).is_none());
        let c = route_dropped("shop", "r", &quota).unwrap();
        assert_eq!((c.kind, c.ok, c.reason.as_str()), ("PartiallyInvalid", true, "UnsupportedValue"));
        assert!(c.message.starts_with("Dropped Rule"), "{}", c.message);
        assert!(route_dropped("shop", "other", &quota).is_none());
    }
}
