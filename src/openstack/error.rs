//! One error type for all OpenStack calls. Every API error names the call (method + path, never the
//! query: it may be long and is not needed to find the object) and carries the service's own
//! explanation, because "HTTP 400" alone is useless to someone reading an Ingress event.

use std::time::Duration;

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The OpenStack service a request goes to (also the catalog `type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Service {
    Identity,
    LoadBalancer,
    Network,
    /// Barbican (catalog type `key-manager`), where TLS certificates are stored for Octavia.
    Barbican,
}

impl Service {
    /// The Keystone catalog `type`.
    pub(crate) fn catalog_type(self) -> &'static str {
        match self {
            Service::Identity => "identity",
            Service::LoadBalancer => "load-balancer",
            Service::Network => "network",
            Service::Barbican => "key-manager",
        }
    }
    /// Short name used in logs and metric labels.
    pub fn name(self) -> &'static str {
        match self {
            Service::Identity => "keystone",
            Service::LoadBalancer => "octavia",
            Service::Network => "neutron",
            Service::Barbican => "barbican",
        }
    }
}

impl std::fmt::Display for Service {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The service answered with a non-success status.
    #[error("{service} {method} {path}: HTTP {status}: {message}")]
    Api { service: Service, method: String, path: String, status: u16, message: String },
    /// Connection refused, reset, TLS failure, ...
    #[error("{service} {method} {path}: transport error: {source}")]
    Transport {
        service: Service,
        method: String,
        path: String,
        #[source]
        source: reqwest::Error,
    },
    /// The HTTP client's per-request timeout fired.
    #[error("{service} {method} {path}: no answer within {timeout:?}")]
    Timeout { service: Service, method: String, path: String, timeout: Duration },
    /// A success answer we could not understand.
    #[error("{service} {method} {path}: cannot decode the answer: {message}")]
    Decode { service: Service, method: String, path: String, message: String },
    /// The catalog has no matching endpoint.
    #[error(
        "no endpoint for service type {service_type:?} with interface {interface} in region \
         {region} in the Keystone catalog (catalog has: {available})"
    )]
    EndpointNotFound { service_type: String, interface: String, region: String, available: String },
    /// An Octavia object went to provisioning_status ERROR.
    #[error("{kind} {id} is in provisioning_status {status}")]
    Provisioning { kind: &'static str, id: String, status: String },
    /// Waiting for ACTIVE (or for the end of a 409 storm) exceeded the deadline.
    #[error("{kind} {id} not ACTIVE after {waited:?}: last provisioning_status {last_status}")]
    WaitTimeout { kind: &'static str, id: String, waited: Duration, last_status: String },
    /// Bad client options (CA file unreadable, bad URL, ...).
    #[error("OpenStack client configuration: {0}")]
    Config(String),
    /// A write (or its next busy retry) not sent: the process may no longer write (its leader
    /// lease is lost, or it is stopping).
    #[error("octavia write not sent: this process may no longer write")]
    Fenced,
}

impl Error {
    /// The HTTP status of an API error.
    pub fn status(&self) -> Option<u16> {
        match self {
            Error::Api { status, .. } => Some(*status),
            _ => None,
        }
    }

    pub fn is_not_found(&self) -> bool {
        self.status() == Some(404)
    }

    /// A 409 that only means "the load balancer is busy": Octavia rejects every write while the
    /// load balancer is PENDING_*, and the same write succeeds once it is ACTIVE again. Other 409s
    /// (duplicate member address:port, port in use) are real conflicts and must not be retried.
    pub(crate) fn is_busy_conflict(&self) -> bool {
        match self {
            Error::Api { status: 409, message, .. } => {
                message.contains("immutable") || message.contains("Invalid state") || message.contains("PENDING_")
            }
            _ => false,
        }
    }

    /// A 503 "Project busy. Unable to lock the project.": Octavia's API locks the project's quota
    /// row for every create and gives up after the database's lock wait (another request of the
    /// project holds it, e.g. a large fully-populated create, which holds it for minutes). The
    /// transaction was rolled back, nothing was created: the same write is safe to send again.
    pub fn is_project_busy(&self) -> bool {
        matches!(self, Error::Api { status: 503, message, .. } if message.contains("Project busy"))
    }

    /// Busy either way: the write was refused as a whole and succeeds later as it is.
    pub(crate) fn is_busy(&self) -> bool {
        self.is_busy_conflict() || self.is_project_busy()
    }

    /// Low-cardinality label for metrics.
    pub fn label(&self) -> &'static str {
        match self {
            Error::Api { status: 401, .. } => "unauthorized",
            Error::Api { status: 403, .. } => "forbidden",
            Error::Api { status: 404, .. } => "not_found",
            Error::Api { status: 409, .. } => "conflict",
            Error::Api { service, status, .. } => match (service, *status >= 500) {
                (Service::Identity, false) => "keystone_4xx",
                (Service::Identity, true) => "keystone_5xx",
                (Service::LoadBalancer, false) => "octavia_4xx",
                (Service::LoadBalancer, true) => "octavia_5xx",
                (Service::Network, false) => "neutron_4xx",
                (Service::Network, true) => "neutron_5xx",
                (Service::Barbican, false) => "barbican_4xx",
                (Service::Barbican, true) => "barbican_5xx",
            },
            Error::Transport { .. } => "transport",
            Error::Timeout { .. } => "timeout",
            Error::Decode { .. } => "decode",
            Error::EndpointNotFound { .. } => "endpoint_not_found",
            Error::Provisioning { .. } => "provisioning_error",
            Error::WaitTimeout { .. } => "wait_timeout",
            Error::Config(_) => "config",
            Error::Fenced => "not_leader",
        }
    }
}

/// The human explanation inside an error body. Understands Octavia/WSME
/// (`{"faultcode","faultstring"}`), Neutron (`{"NeutronError":{"type","message"}}`) and
/// Keystone/keystonemiddleware (`{"error":{"code","title","message"}}`), Barbican
/// (`{"code","title","description"}`); anything else is returned
/// as (truncated) text so nothing is lost.
pub(crate) fn fault_message(body: &[u8]) -> String {
    if let Ok(v) = serde_json::from_slice::<serde_json::Value>(body) {
        let s = |p: &str| v.pointer(p).and_then(|m| m.as_str()).map(str::to_owned);
        if let Some(m) = s("/faultstring")
            .or_else(|| s("/NeutronError/message"))
            .or_else(|| s("/error/message"))
            .or_else(|| s("/message"))
            .or_else(|| s("/description"))
        {
            return m;
        }
    }
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    if text.is_empty() {
        return "(empty body)".into();
    }
    text.chars().take(300).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_three_error_shapes() {
        let octavia = br#"{"faultcode":"Client","faultstring":"Load Balancer x is immutable and cannot be updated.","debuginfo":null}"#;
        assert_eq!(fault_message(octavia), "Load Balancer x is immutable and cannot be updated.");
        let neutron = br#"{"NeutronError":{"type":"PortNotFound","message":"Port p could not be found.","detail":""}}"#;
        assert_eq!(fault_message(neutron), "Port p could not be found.");
        let keystone = br#"{"error":{"code":401,"title":"Unauthorized","message":"The request you have made requires authentication."}}"#;
        assert_eq!(fault_message(keystone), "The request you have made requires authentication.");
        let barbican = br#"{"code": 403, "title": "Forbidden", "description": "Secret creation attempt not allowed - please review your user/project privileges"}"#;
        assert_eq!(
            fault_message(barbican),
            "Secret creation attempt not allowed - please review your user/project privileges"
        );
        assert_eq!(fault_message(b"<html>Bad Gateway</html>"), "<html>Bad Gateway</html>");
        assert_eq!(fault_message(b""), "(empty body)");
    }

    fn api(service: Service, status: u16, message: &str) -> Error {
        Error::Api { service, method: "POST".into(), path: "/v2/lbaas/pools".into(), status, message: message.into() }
    }

    #[test]
    fn labels_and_busy_conflicts() {
        assert_eq!(api(Service::LoadBalancer, 400, "bad").label(), "octavia_4xx");
        assert_eq!(api(Service::Network, 500, "x").label(), "neutron_5xx");
        assert_eq!(api(Service::LoadBalancer, 401, "x").label(), "unauthorized");
        let busy = api(Service::LoadBalancer, 409, "Load Balancer 1 is immutable and cannot be updated.");
        assert!(busy.is_busy_conflict());
        assert_eq!(busy.label(), "conflict");
        assert!(
            api(Service::LoadBalancer, 409, "Invalid state PENDING_UPDATE of loadbalancer resource 1")
                .is_busy_conflict()
        );
        assert!(!api(Service::LoadBalancer, 409, "Duplicate member 10.0.0.1:80").is_busy_conflict());
        // Octavia's ProjectBusyException (quota lock wait timed out; the write was rolled back).
        let locked = api(Service::LoadBalancer, 503, "Project busy.  Unable to lock the project.  Please try again.");
        assert!(locked.is_project_busy() && locked.is_busy() && !locked.is_busy_conflict());
        assert!(busy.is_busy() && !busy.is_project_busy());
        // Any other 503 (API down behind a proxy) is not "busy": it is reported, not retried here.
        assert!(!api(Service::LoadBalancer, 503, "Service Unavailable").is_busy());
        let e = api(Service::LoadBalancer, 400, "Invalid input");
        assert_eq!(e.to_string(), "octavia POST /v2/lbaas/pools: HTTP 400: Invalid input");
    }
}
