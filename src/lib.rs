//! kuryr-l7-router: Kubernetes Ingresses as L7 routing on one shared Octavia load balancer.

pub mod certificate;
pub mod cli;
pub mod config;
pub mod controller;
pub mod driver;
pub mod gateway;
pub mod model;
pub mod openstack;
pub mod placement;
pub mod reason;
pub mod secret;
pub mod show;
pub mod status_responder;
pub mod teardown;
/// Test doubles, only for the tests, benches and demos (the `testing` feature; the crate's
/// tests and benches get it through its dev-dependency on itself), never in the release binary.
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod translate;
pub mod wiring;
