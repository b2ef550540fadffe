//! The L7 router driver: owns the router load balancer and converges Octavia to the desired
//! state with the fewest writes. [`Router`] is the entry point; the rest is split by concern:
//!
//! - pure: [`diff`] (desired vs. actual → [`plan::WritePlan`]), [`plan`] (the writes),
//!   [`actual`] (the snapshot read back), [`ownership`] (our tags), `create_body` (the
//!   fully-populated create), [`sim`] (an in-memory Octavia for tests and benchmarks);
//! - on Octavia and Neutron: `lifecycle` (find, adopt, dedupe, create, discard the load
//!   balancer; its listener), `read` (+ [`read_cache`]), `execute` (the writes),
//!   `floating_ip`; all take the `cloud::Cloud` (clients + spec) as a parameter;
//! - the types the callers see: [`spec::RouterSpec`], [`error::DriverError`], [`report`].

pub mod actual;
pub mod admission;
pub mod blocked;
pub mod certificates;
pub mod client_ca;
mod cloud;
mod create_body;
pub mod diff;
pub mod digest;
pub mod door;
pub mod error;
mod execute;
mod floating_ip;
pub mod health_monitor;
mod https;
mod https_holds;
pub mod isolation;
mod lifecycle;
pub mod listener_plan;
mod more_http;
mod more_https;
pub mod object_id;
pub mod ownership;
pub mod parent;
pub mod plan;
pub mod quota;
mod read;
pub mod read_cache;
pub mod report;
pub mod rounds;
pub mod router;
#[cfg(any(test, feature = "testing"))]
pub mod sim;
pub mod spec;
pub mod stamps;
pub mod view;

pub use cloud::{PermitPool, WriteGate, WritePermits};
pub use create_body::{SizedCreate, create_body_bytes, member_body, populated_create, populated_create_within};
pub use error::DriverError;
pub use floating_ip::floating_ip_description;
pub use ownership::FoundRouter;
pub use report::{
    CertificateSnapshot, ClientCaSnapshot, ConvergeReport, HttpsSnapshot, MembersChange, MoreHttpSnapshot,
    OtherListener, RouterSnapshot, WriteFailure, WriteRecord,
};
pub use router::Router;
pub use spec::RouterSpec;
