//! The HTTP answers Octavia cannot give by itself (see `src/status_responder.rs`):
//!
//! - **404** for requests no route matches: the reserved pool [`NOT_FOUND_POOL`], filled by the
//!   status responder's Service like any other pool, is the listeners' default pool when no
//!   Ingress sets a default backend;
//! - **503** for routes whose backend cannot be served (Service missing, ExternalName, unknown
//!   port, not a Service): such a route is kept, on the reserved pool [`UNAVAILABLE_POOL`], so its
//!   paths never fall through to another route of the host (e.g. `/admin` to `/`);
//! - **500** for Gateway API rules whose backendRefs are all invalid or not permitted (the spec's
//!   answer): the reserved pool [`SERVER_ERROR_POOL`], only while such a route exists (Ingress
//!   routers never have it), filled by the responder's 500 port, else empty (haproxy's 503).
//!
//! With a responder configured both reserved pools always exist (the policies' shape does not
//! change when the responder's Service comes and goes; a missing Service leaves them empty, with
//! a warning). Without one, [`UNAVAILABLE_POOL`] exists only while a route needs it, with no
//! members: haproxy answers its own 503; unmatched requests get Octavia's 503.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Service;

use super::backends::PoolKey;
use super::options::StatusResponder;
use crate::model::{KubeRef, NOT_FOUND_POOL, Pool, SERVER_ERROR_POOL, UNAVAILABLE_POOL, Warning};

/// The owner of a reserved pool that no Service fills: the tag `config:/status_responder` says
/// where it comes from, and the Service notices leave it out (it is not a Service).
pub(crate) fn config_owner() -> KubeRef {
    KubeRef::new("Config", "", "status_responder")
}

/// The reserved pools of a router.
#[derive(Debug, Default)]
pub struct Reserved {
    /// Reserved pools filled from the responder's Service: its port → the reserved name. They go
    /// through the same member computation as every Service pool.
    pub from_service: BTreeMap<PoolKey, String>,
    /// Reserved pools with no members (no responder, or its Service or port missing).
    pub empty: Vec<Pool>,
    /// The listeners' default pool when no Ingress sets a default backend.
    pub not_found: Option<String>,
}

/// The reserved pools for `responder` (`None`: not configured); `unservable_routes`: whether some
/// route needs the 503 pool; `server_error_routes`: whether some route needs the 500 pool.
pub fn reserved(
    responder: Option<&StatusResponder>,
    services: &BTreeMap<(&str, &str), &Service>,
    unservable_routes: bool,
    server_error_routes: bool,
    lb_algorithm: &str,
    warnings: &mut Vec<Warning>,
) -> Reserved {
    let empty = |name: &str, service: KubeRef, port: &str| Pool {
        name: name.into(),
        service,
        service_port: port.into(),
        lb_algorithm: lb_algorithm.into(),
        members: Vec::new(),
        weighting: "none: reserved pool without a status responder".into(),
        split: Vec::new(),
        member_mode: Default::default(),
    };
    let mut out = Reserved::default();
    let Some(r) = responder else {
        if unservable_routes {
            out.empty.push(empty(UNAVAILABLE_POOL, config_owner(), "-"));
        }
        if server_error_routes {
            out.empty.push(empty(SERVER_ERROR_POOL, config_owner(), "-"));
        }
        return out;
    };
    let svc_ref = KubeRef::new("Service", &r.namespace, &r.name);
    let svc = services.get(&(r.namespace.as_str(), r.name.as_str()));
    let mut wanted = vec![(NOT_FOUND_POOL, &r.not_found_port), (UNAVAILABLE_POOL, &r.unavailable_port)];
    if server_error_routes {
        wanted.push((SERVER_ERROR_POOL, &r.server_error_port));
    }
    for (pool, port) in wanted {
        match svc.and_then(|s| service_port(s, port)) {
            Some(number) => {
                out.from_service.insert(
                    PoolKey { namespace: r.namespace.clone(), service: r.name.clone(), port: number },
                    pool.to_string(),
                );
            }
            None => {
                let why = if svc.is_none() { "not found".to_string() } else { format!("has no port {port}") };
                warnings.push(Warning {
                    object: svc_ref.clone(),
                    reason: crate::reason::Reason::StatusResponderUnavailable,
                    message: format!(
                        "{svc_ref} ([status_responder] service) {why}: reserved pool {pool} has no members, \
                         so its requests get HTTP 503 from haproxy instead of the responder's answer"
                    ),
                });
                out.empty.push(empty(pool, config_owner(), port));
            }
        }
    }
    out.not_found = Some(NOT_FOUND_POOL.to_string());
    out
}

/// The number of the Service port named `port` (or numbered, when `port` is a number).
fn service_port(svc: &Service, port: &str) -> Option<u16> {
    let ports = svc.spec.as_ref()?.ports.as_ref()?;
    let p = ports.iter().find(|p| p.name.as_deref() == Some(port) || p.port.to_string() == port)?;
    u16::try_from(p.port).ok()
}
