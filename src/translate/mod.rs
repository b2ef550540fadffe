//! Pure translation from Kubernetes objects to the desired L7 router.
//!
//! Everything here is a function of its arguments: no I/O, no clock, no randomness, so the
//! controller, the `plan` command and the tests all see the same router for the same objects.
//!
//! The shape follows the policy controllers that serve several route kinds: a front end per
//! kind ([`ingress`] here; the Gateway API's in `crate::gateway::router`, above this layer) turns its objects into kind-neutral route claims ([`claim`]) and
//! warnings; one [`table`] claims, orders and turns the claims into policies for any kind;
//! [`backends`] names the pools and [`pools`] fills them; [`pipeline::translate`] is the one
//! entry, a list of short named phases. See `docs/architecture.md` ("Translation: front ends
//! and the route table"), `docs/routing-semantics.md` and `docs/zone-aware.md`.
//!
//! This file only declares the parts and re-exports the public face: no part imports it, so
//! the parts form no import circle through it.

pub mod backends;
pub mod budget;
pub mod claim;
pub mod health;
pub mod host_claims;
pub mod hosts;
pub mod ingress;
pub mod ingress_class;
pub mod manifest;
pub mod members;
pub mod names;
pub mod node_members;
pub mod options;
pub mod pipeline;
pub mod pools;
pub mod render;
pub mod rules;
pub mod slices;
pub mod split;
pub mod status;
pub mod table;
pub mod tenancy;
pub mod tls;
pub mod zone;

pub use manifest::load_manifests;
pub use members::{SliceCache, pool_members};
pub(crate) use names::namespace_of;
pub use options::Source;
pub use options::{CONTROLLER, Inputs, IpFamily, Snapshot, TranslateOptions, ZoneMode};
pub use pipeline::translate;
pub use render::{render_json, render_table};
