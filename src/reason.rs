//! Why the controller tells a user something: one [`Reason`] per Kubernetes Event reason, with
//! what each implies (its Event type, whether it comes from another object's conflict, which
//! route condition it sets). The translation's warnings carry it, and the controller's output
//! step decides from it alone, never from the reason's text.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The Event `type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventType {
    Normal,
    Warning,
}

impl EventType {
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

/// The condition of a route (an Ingress today, a Gateway API route next) a reason sets to
/// False, as Gateway API names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RouteCondition {
    /// The route (or part of it) is not accepted: invalid, or lost to another route.
    Accepted,
    /// A reference (Service, port, Secret) does not resolve.
    ResolvedRefs,
}

macro_rules! reasons {
    ($($(#[$doc:meta])* $name:ident),+ $(,)?) => {
        /// An Event reason (see the module docs). [`Reason::Other`] keeps a reason that has no
        /// variant yet, so that a new warning is published (as a Warning) before it gets one.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Reason {
            $($(#[$doc])* $name,)+
            Other(&'static str),
        }

        impl Reason {
            /// Every reason with a variant.
            pub const ALL: &'static [Reason] = &[$(Reason::$name),+];

            /// The Event reason.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Reason::$name => stringify!($name),)+
                    Reason::Other(s) => s,
                }
            }

            /// The reason named `s`, if it has a variant.
            pub fn named(s: &str) -> Option<Reason> {
                match s {
                    $(stringify!($name) => Some(Reason::$name),)+
                    _ => None,
                }
            }
        }
    };
}

reasons! {
    // The controller's own.
    /// An Ingress's routes converged on the router.
    Synced,
    /// A write or read of Octavia failed (the job is retried).
    OctaviaError,
    /// Octavia refused one write for good; its object is on hold, the rest went on.
    OctaviaWriteRefused,
    /// A Service's notice annotation cannot be read (the next Sync rewrites it).
    InvalidNotice,
    // Conflicts: they name another Ingress (the winner, or the host's owner) or the quota.
    DuplicateRoute,
    ConflictingDefaultBackend,
    ConflictingCertificate,
    DefaultBackendNotAllowed,
    HostOwnedByOtherNamespace,
    QuotaExceeded,
    // The Ingress's own content.
    EmptyIngress,
    InvalidHost,
    InvalidPath,
    InvalidPathType,
    MissingPathType,
    InvalidRuleValue,
    TooManyRules,
    HostlessRuleNotAllowed,
    InvalidAnnotation,
    InvalidHealthMonitor,
    RedirectNotPossible,
    UnsupportedBackend,
    /// A Gateway API route rule the router cannot express (its matches or filters).
    InvalidRule,
    // About a Gateway.
    /// A Gateway listener on a port the router cannot serve. No longer raised: every HTTP and
    /// HTTPS port of a Gateway is a listener of its router (`DesiredRouter::more_http`,
    /// `more_https`); kept for the Events earlier versions wrote.
    ListenerPortUnsupported,
    /// A Gateway API object that not even the domain types read (a field of an unexpected type):
    /// it is ignored, the others of its kind are served.
    UnreadableObject,
    // References that do not resolve.
    ServiceNotFound,
    ServicePortNotFound,
    ExternalNameService,
    SecretNotFound,
    /// A Secret in a namespace the controller does not read (`[kubernetes] secret_namespaces`).
    SecretNotRead,
    SecretWrongType,
    MissingTlsSecret,
    // A certificate that cannot be used.
    NoCertificate,
    NoKey,
    MalformedCertificate,
    MalformedKey,
    UnsupportedKey,
    KeyMismatch,
    HostNotCovered,
    CertificateExpired,
    CertificateNotYetValid,
    CertificateEncodingFailed,
    // About a Service (published on the Service).
    NoEndpoints,
    EndpointPortNotFound,
    /// `member_mode = NodePort` and the Service has no node port for the routed port (type
    /// ClusterIP, or a LoadBalancer without node ports).
    NoNodePort,
    /// `member_mode = NodePort` and no node of the pool can take traffic (none Ready and
    /// schedulable with an address of the VIP's family).
    NoReadyNodes,
    /// A Service's member-mode annotation that is not allowed or not understood (ignored).
    InvalidMemberMode,
    // About the router's configuration.
    StatusResponderUnavailable,
    // Scale-out placement (the routes are served; the router set is over its capacity).
    /// A host group alone needs more than a router's capacity: it has a router of its own.
    OversizedGroup,
    /// A router holds more than its capacity: placed groups grew or merged, and no automatic
    /// move relieved it (busy router, growth before a restart, a group alone on its router).
    RouterOverCapacity,
    /// The part copied to every router (host-less rules, default certificate) alone exceeds a
    /// router's capacity: more routers do not help.
    SharedOverCapacity,
    /// A router of the set cannot be built (its create failed: a quota, a refused create): it
    /// is tried again after a backoff, and new groups go to other routers meanwhile. Published
    /// on our IngressClass (the operator's object).
    RouterCreateFailed,
}

impl Reason {
    /// The Event type: Normal for news, Warning for every problem.
    pub fn event_type(self) -> EventType {
        match self {
            Reason::Synced => EventType::Normal,
            _ => EventType::Warning,
        }
    }

    /// Whether the reason arises from another object (it names the winner, or the host's
    /// owner, or the quota): the loser can change without being edited, so every Sync publishes
    /// it on the loser, not only a reconcile of the loser.
    pub fn is_conflict(self) -> bool {
        matches!(
            self,
            Reason::DuplicateRoute
                | Reason::ConflictingDefaultBackend
                | Reason::ConflictingCertificate
                | Reason::DefaultBackendNotAllowed
                | Reason::HostOwnedByOtherNamespace
                | Reason::QuotaExceeded
        )
    }

    /// The route condition this reason sets to False (None: not about a route's acceptance).
    pub fn route_condition(self) -> Option<RouteCondition> {
        use Reason::*;
        match self {
            ServiceNotFound
            | ServicePortNotFound
            | ExternalNameService
            | SecretNotFound
            | SecretNotRead
            | SecretWrongType
            | MissingTlsSecret
            | NoCertificate
            | NoKey
            | MalformedCertificate
            | MalformedKey
            | UnsupportedKey
            | KeyMismatch
            | HostNotCovered
            | CertificateExpired
            | CertificateNotYetValid
            | CertificateEncodingFailed => Some(RouteCondition::ResolvedRefs),
            DuplicateRoute
            | ConflictingDefaultBackend
            | ConflictingCertificate
            | DefaultBackendNotAllowed
            | HostOwnedByOtherNamespace
            | QuotaExceeded
            | EmptyIngress
            | InvalidHost
            | InvalidPath
            | InvalidPathType
            | MissingPathType
            | InvalidRuleValue
            | TooManyRules
            | HostlessRuleNotAllowed
            | InvalidAnnotation
            | InvalidHealthMonitor
            | RedirectNotPossible
            | UnsupportedBackend
            | InvalidRule => Some(RouteCondition::Accepted),
            Synced
            | OctaviaError
            | OctaviaWriteRefused
            | InvalidNotice
            | NoEndpoints
            | EndpointPortNotFound
            | NoNodePort
            | NoReadyNodes
            | InvalidMemberMode
            | StatusResponderUnavailable
            | OversizedGroup
            | RouterOverCapacity
            | SharedOverCapacity
            | RouterCreateFailed
            // A Gateway's listener is not a route.
            | ListenerPortUnsupported
            // No condition can be written: its parents cannot be read.
            | UnreadableObject
            | Other(_) => None,
        }
    }
}

/// The translation names reasons by their Event reason (`"InvalidPath"`); one without a
/// variant is kept as [`Reason::Other`].
impl From<&'static str> for Reason {
    fn from(s: &'static str) -> Self {
        Reason::named(s).unwrap_or(Reason::Other(s))
    }
}

/// Ordered by name, as the warnings were when reasons were text (the translation sorts its
/// warnings, and their order is the order of the Events).
impl Ord for Reason {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl PartialOrd for Reason {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<str> for Reason {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Reason {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl Serialize for Reason {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Reason {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Reason::named(&s).ok_or_else(|| serde::de::Error::custom(format!("unknown reason {s:?}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_round_trips_and_only_synced_is_normal() {
        for r in Reason::ALL {
            assert_eq!(Reason::named(r.as_str()), Some(*r));
            let json = serde_json::to_string(r).unwrap();
            assert_eq!(serde_json::from_str::<Reason>(&json).unwrap(), *r);
            assert_eq!(r.event_type() == EventType::Normal, *r == Reason::Synced, "{r}");
        }
        assert_eq!(Reason::from("NotAVariant"), Reason::Other("NotAVariant"));
        assert_eq!(Reason::from("NotAVariant").event_type(), EventType::Warning);
        assert!(serde_json::from_str::<Reason>("\"NotAVariant\"").is_err());
        // Ordered by name: the translation's warnings keep the order they had as text.
        assert!(Reason::EndpointPortNotFound < Reason::NoEndpoints && Reason::NoEndpoints < Reason::Synced);
    }

    /// The conflicts are exactly the reasons that name another object; each sets Accepted.
    #[test]
    fn conflicts_are_the_reasons_that_name_another_object() {
        let conflicts: Vec<&str> = Reason::ALL.iter().filter(|r| r.is_conflict()).map(|r| r.as_str()).collect();
        assert_eq!(
            conflicts,
            [
                "DuplicateRoute",
                "ConflictingDefaultBackend",
                "ConflictingCertificate",
                "DefaultBackendNotAllowed",
                crate::translate::tenancy::HOST_OWNED.as_str(),
                crate::translate::budget::QUOTA_EXCEEDED,
            ]
        );
        for r in Reason::ALL.iter().filter(|r| r.is_conflict()) {
            assert_eq!(r.route_condition(), Some(RouteCondition::Accepted), "{r}");
        }
        assert_eq!(Reason::SecretNotFound.route_condition(), Some(RouteCondition::ResolvedRefs));
        assert_eq!(Reason::NoEndpoints.route_condition(), None);
    }
}
