//! OpenStack REST clients: Keystone v3, Octavia v2, Neutron v2.0, Barbican v1.
//!
//! Everything goes through one [`Session`] (token cache, catalog, 401 re-authentication, request
//! observer and counters); [`Octavia`], [`Neutron`] and [`Barbican`] are thin typed layers on top of it.

pub mod barbican;
pub mod error;
pub mod http;
pub mod keystone;
pub mod neutron;
pub mod octavia;
pub mod octavia_requests;
pub mod preflight;

pub use barbican::Barbican;
pub use error::{Error, Result, Service};
pub use http::{ListQuery, Observer, RequestRecord, Stats};
pub use keystone::{AppCredentialRef, AuthMethod, AuthOptions, DomainRef, Interface, ProjectScope, Session, UserRef};
pub use neutron::Neutron;
pub use octavia::{Octavia, OctaviaOptions, WritePermit};
