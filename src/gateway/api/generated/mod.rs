//! The Kubernetes types of the Gateway API kinds we watch and patch, generated from the v1.6.1
//! standard-channel CRDs by `scripts/generate-gateway-types` (kopium; the command, its version
//! and the CRD are in each file's header). Do not edit the files: run the script again. They
//! are exempt from the file-length rule and from rustfmt and clippy, being generated.

#[rustfmt::skip]
#[allow(clippy::all, clippy::pedantic, unused_imports, missing_docs)]
pub mod gatewayclasses;
#[rustfmt::skip]
#[allow(clippy::all, clippy::pedantic, unused_imports, missing_docs)]
pub mod gateways;
#[rustfmt::skip]
#[allow(clippy::all, clippy::pedantic, unused_imports, missing_docs)]
pub mod httproutes;
#[rustfmt::skip]
#[allow(clippy::all, clippy::pedantic, unused_imports, missing_docs)]
pub mod listenersets;
#[rustfmt::skip]
#[allow(clippy::all, clippy::pedantic, unused_imports, missing_docs)]
pub mod referencegrants;

pub use gatewayclasses::GatewayClass;
pub use gateways::Gateway;
pub use httproutes::HttpRoute as HTTPRoute;
pub use listenersets::ListenerSet;
pub use referencegrants::ReferenceGrant;
