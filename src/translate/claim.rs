//! Route claims: what a front end (one per route kind) asks of the route table. Kind-neutral:
//! an Ingress path and a Gateway API HTTPRoute match both become one [`RouteClaim`]; the table
//! never looks at the Kubernetes object again.

use std::borrow::Cow;

use super::backends::{PoolKey, WeightedBackend};
use crate::model::KubeRef;

/// How the path matches. The value is what the rule compares: an Exact path as written, a
/// Prefix without trailing slashes (`/` stays `/`), a Regex as given.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PathMatch {
    Exact(String),
    Prefix(String),
    Regex(String),
}

impl PathMatch {
    /// Matches every path: a route with it is its host's catch-all.
    pub(crate) fn is_everything(&self) -> bool {
        matches!(self, PathMatch::Prefix(p) if p == "/")
    }
}

/// How a header value matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum HeaderMatchKind {
    Exact,
    Regex,
}

/// One request header the route requires (all of a route's headers must match).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HeaderMatch {
    /// The header name; compared case-insensitively by haproxy (`req.hdr`).
    pub name: String,
    pub kind: HeaderMatchKind,
    pub value: String,
}

/// An answer the router gives by itself, through a reserved pool (see `status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum FixedAnswer {
    /// 503: a backend that cannot be served.
    Unavailable,
    /// 500: a Gateway API rule whose backendRefs are all invalid or not permitted (the spec's
    /// answer; Ingress never asks for it).
    ServerError,
}

/// Where a redirect sends the client. The request path and query are kept unless `path` is set
/// (Octavia REDIRECT_PREFIX), else the client goes to exactly that URL (REDIRECT_TO_URL).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct RedirectSpec {
    /// `http` or `https`.
    pub scheme: String,
    pub host: String,
    pub port: Option<u16>,
    /// A full replacement path; `None`: the request's own.
    pub path: Option<String>,
    /// 301, 302, 303, 307 or 308.
    pub code: u16,
}

/// What the route does with the requests it matches.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum RouteAction {
    /// Forward to a pool fed by these Service ports, by weight.
    Forward(Vec<WeightedBackend>),
    Redirect(RedirectSpec),
    Fixed(FixedAnswer),
}

impl RouteAction {
    /// One Service port with all the weight (what an Ingress backend is).
    pub(crate) fn to_service(key: PoolKey) -> Self {
        RouteAction::Forward(vec![WeightedBackend { key, weight: 1 }])
    }
}

/// A sortable precedence among the routes of one host, given by the front end: the spec's
/// precedence is kind-specific (Ingress: the longest path first, Exact before Prefix; Gateway
/// API: exact path, longest prefix, most headers, oldest route). Smaller sorts first.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct OrderKey(pub Vec<OrderPart>);

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum OrderPart {
    Number(u64),
    Text(String),
}

/// The object a route comes from: the owner of its policy, the subject of its Events and
/// status. `uid` tells a re-created object from the one before it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct RouteOwner {
    /// Kind (`Ingress`, `HTTPRoute`), namespace and name.
    pub object: KubeRef,
    pub uid: Option<String>,
}

/// Where in its object a route is written (`spec.rules[0]`), as its warnings name it.
#[derive(Clone, Debug)]
pub(crate) enum Origin {
    Text(Cow<'static, str>),
    /// Path `path` of Ingress rule `rule`: `rules[<rule>].paths[<path>] (host "<host>", path
    /// "<path as written>")`, spelled only when a warning needs it (most routes never lose a
    /// claim, and spelling it for each was a copy and a format per path).
    IngressPath {
        rule: usize,
        path: usize,
        /// The path was not written (`path_as_written` is then `/`).
        unwritten: bool,
    },
}

impl From<&'static str> for Origin {
    fn from(text: &'static str) -> Self {
        Origin::Text(Cow::Borrowed(text))
    }
}

impl From<String> for Origin {
    fn from(text: String) -> Self {
        Origin::Text(Cow::Owned(text))
    }
}

/// Where an Ingress path is written: `rules[<rule>].paths[<path>] (host "<host>", path
/// "<path>")` (the path as written, empty when unset).
pub(crate) struct IngressPathAt<'a> {
    pub rule: usize,
    pub path: usize,
    pub host: &'a str,
    pub written: &'a str,
}

impl std::fmt::Display for IngressPathAt<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "rules[{}].paths[{}] (host {:?}, path {:?})", self.rule, self.path, self.host, self.written)
    }
}

/// One route a front end asks for.
#[derive(Clone, Debug)]
pub(crate) struct RouteClaim {
    /// Exact, `*.`-wildcard, or empty (any host).
    pub host: String,
    pub path: PathMatch,
    /// The path as written and its kind's spelling (`Prefix`, `Exact`, `defaultBackend`, ...):
    /// the policy's name and description, stable for the same input.
    pub path_type: String,
    pub(crate) path_as_written: String,
    /// Sorted, so that equal matches compare equal.
    pub headers: Vec<HeaderMatch>,
    pub action: RouteAction,
    pub order: OrderKey,
    pub owner: RouteOwner,
    /// Where in its object the route is written, for the loser's warning of a conflict.
    pub origin: Origin,
    /// A fallback (an Ingress default backend's catch-all of a host): yields to any route of the
    /// same match, silently when it has the same owner.
    pub fallback: bool,
}

impl RouteClaim {
    pub fn describe(&self) -> String {
        let host = if self.host.is_empty() { "(any host)" } else { &self.host };
        // One string of its size (a description per policy).
        let mut text = String::with_capacity(host.len() + self.path_type.len() + self.path_as_written.len() + 2);
        for (i, part) in [host, &self.path_type, &self.path_as_written].into_iter().enumerate() {
            if i > 0 {
                text.push(' ');
            }
            text.push_str(part);
        }
        text
    }

    /// Where in its object the route is written.
    pub(crate) fn origin(&self) -> Cow<'_, str> {
        match &self.origin {
            Origin::Text(text) => Cow::Borrowed(text),
            Origin::IngressPath { rule, path, unwritten } => {
                let written = if *unwritten { "" } else { self.path_as_written.as_str() };
                Cow::Owned(IngressPathAt { rule: *rule, path: *path, host: &self.host, written }.to_string())
            }
        }
    }

    /// The owner as Events and Octavia tags name it.
    pub(crate) fn owner_ref(&self) -> &KubeRef {
        &self.owner.object
    }
}
