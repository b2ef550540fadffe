//! The Service and Endpoints side: the notice annotations the Ingress handler writes on the
//! Services its routers use, the Service handler that reads them, and the members of each pool
//! (endpoints, or nodes in NodePort mode).

pub mod endpoint_nodes;
pub mod handler;
pub mod members;
pub(crate) mod shape;
