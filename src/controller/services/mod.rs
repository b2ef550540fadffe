//! The Service and Endpoints side: the notice annotations the Ingress handler writes on the
//! Services its routers use, the Service handler that reads them, and the members of each pool
//! (endpoints, or nodes in NodePort mode).

pub mod changes;
pub mod endpoint_nodes;
pub(crate) mod events;
pub mod handler;
pub mod members;
pub(crate) mod shape;
