//! Gateway API (v1, standard channel) as a second input beside Ingress: pure translation of
//! GatewayClass, Gateway, HTTPRoute and ReferenceGrant objects into per-Gateway route tables and
//! into the status each object must carry. Nothing here talks to Kubernetes or OpenStack: the
//! input is a [`world::World`] snapshot, the output [`build::Translation`].
//!
//! One Gateway is one router (one Octavia load balancer, see [`naming`]). Its listeners sharing a
//! port become one Octavia listener ([`listeners`]); the HTTPRoutes attached to them
//! ([`attach`]) become ordered [`RouteEntry`]s ([`precedence`]) whose actions forward to one pool
//! per rule ([`backends`]; weighted members: `crate::translate::split`), redirect ([`redirect`]) or answer a fixed status.

pub mod api;
pub(crate) mod attach;
pub mod backends;
pub mod build;
pub mod frontend;
pub mod holds;
pub mod host_owners;
pub mod hostnames;
pub mod keep;
pub mod limits;
pub mod listener_sets;
pub mod listeners;
pub mod matches;
pub mod naming;
pub mod plan;
pub mod precedence;
pub mod protocol;
pub mod redirect;
pub(crate) mod redirect_order;
pub(crate) mod refgrant;
pub mod router;
pub mod status;
pub mod world;

use crate::model::KubeRef;
pub use matches::{HeaderMatch, PathMatch};
pub use precedence::OrderKey;
pub use protocol::Protocol;
pub use redirect::RedirectAction;

/// `GatewayClass.spec.controllerName` of the classes this controller serves.
pub(crate) const CONTROLLER_NAME: &str = "openstack.org/kuryr-l7-router";

/// The route table of one Gateway: what its router must serve.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GatewayRoutes {
    /// The Gateway.
    pub owner: KubeRef,
    /// The Octavia load-balancer name ([`naming::load_balancer_name`]).
    pub router: String,
    /// One per port, ascending.
    pub listeners: Vec<PortRoutes>,
    /// The first of `spec.addresses` (validated: an IP address): a pre-created floating IP for
    /// the load balancer (StaticAddresses); None: one is allocated.
    pub address: Option<std::net::IpAddr>,
}

/// The Gateway listeners sharing one port: one Octavia listener.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortRoutes {
    pub port: u16,
    pub protocol: Protocol,
    /// The programmed Gateway listeners on this port, by name.
    pub(crate) listener_names: Vec<String>,
    /// HTTPS: the Secrets (namespace, name) to serve, by SNI; the first one is the default.
    pub certificates: Vec<(String, String)>,
    /// HTTPS: the client certificate validation of the port (`frontend`); None: clients are
    /// not asked for a certificate.
    pub client_validation: Option<crate::model::ClientValidation>,
    /// First match wins, in this order.
    pub entries: Vec<RouteEntry>,
}

/// One HTTPRoute match on one (intersected) host: an Octavia L7 policy with its rules ANDed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RouteEntry {
    /// Exact (`foo.example.com`) or wildcard (`*.example.com`) host; `None` matches any host.
    pub host: Option<String>,
    /// Hosts this entry must not catch: the hostnames of more specific listeners on the same
    /// port, whose requests belong to those listeners' routes only.
    pub excluded_hosts: Vec<String>,
    pub path: PathMatch,
    /// ANDed.
    pub headers: Vec<HeaderMatch>,
    pub action: Action,
    /// Sorting entries by this key gives the spec's precedence.
    pub key: OrderKey,
    /// The HTTPRoute and the index of its rule.
    pub owner: KubeRef,
    pub rule: usize,
}

/// What a matched request gets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// One pool per rule, named `pool`, with the rule's backends and their weights.
    Forward {
        pool: String,
        backends: Vec<WeightedBackend>,
    },
    Redirect(RedirectAction),
    /// A status responder answer: 500 for a rule whose backends are all invalid.
    Fixed(u16),
}

/// One backendRef of a rule, resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WeightedBackend {
    pub target: BackendTarget,
    /// The backendRef's weight (default 1).
    pub weight: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BackendTarget {
    Service {
        namespace: String,
        name: String,
        port: u16,
    },
    /// An invalid or not-permitted backendRef keeps its share of the traffic, answered 500 by
    /// the status responder (a member pointing at the responder's 500 port).
    Status500,
}
