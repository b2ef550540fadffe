//! What the Gateway conformance tests read from a case file of tests/fixtures/gateway/cases/:
//! the expected conditions, the request table and the `ns/name` references (the pure test,
//! tests/it/gateway_conformance.rs, as `crate::support::gateway_case`,
//! the status through the controller, tests/it/controller_gateway.rs, and the data-plane proof,
//! functional/dataplane/gateway.rs).

#![allow(dead_code)] // each test crate reads a different part

use serde::Deserialize;
use std::collections::BTreeMap;

/// The first document of a case file: the expected status conditions and the request table.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Case {
    pub kind: String,
    pub test: String,
    #[serde(default)]
    pub tls_secrets: Vec<String>,
    #[serde(default)]
    pub classes: Vec<ClassExpect>,
    #[serde(default)]
    pub gateways: Vec<GatewayExpect>,
    #[serde(default)]
    pub routes: Vec<RouteExpect>,
    #[serde(default)]
    pub requests: Vec<CaseRequest>,
}

/// A GatewayClass's expected `Accepted` condition.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClassExpect {
    pub name: String,
    pub observed_generation: i64,
    pub accepted: String,
}

/// A Gateway's expected conditions, and those of its listeners.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GatewayExpect {
    pub gateway: String,
    pub observed_generation: Option<i64>,
    #[serde(default)]
    pub conditions: BTreeMap<String, String>,
    #[serde(default)]
    pub listeners: Vec<ListenerExpect>,
}

/// A listener's expected attached routes, supported kinds and conditions.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListenerExpect {
    pub name: String,
    pub attached_routes: Option<i32>,
    pub supported_kinds: Option<usize>,
    #[serde(default)]
    pub conditions: BTreeMap<String, String>,
}

/// A route's expected conditions on one parent.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RouteExpect {
    pub route: String,
    pub observed_generation: Option<i64>,
    pub parent: String,
    pub conditions: BTreeMap<String, String>,
}

/// The namespace of the upstream conformance infrastructure (Gateways, backends).
pub const INFRA: &str = "gateway-conformance-infra";

/// One request of a case's table and the answer the upstream Go test expects.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseRequest {
    /// The Gateway that receives it (`ns/name`; `same-namespace` when absent).
    pub gateway: Option<String>,
    pub port: Option<u16>,
    pub host: Option<String>,
    pub path: String,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// A backend Service name, `500`, `404`, `<code> <redirect prefix>`, or `a|b` (a weighted
    /// rule: each named Service answers some).
    pub answer: String,
}

/// `ns/name`, the namespace defaulting to the conformance infra namespace.
pub fn split(s: &str) -> (String, String) {
    match s.split_once('/') {
        Some((ns, n)) => (ns.into(), n.into()),
        None => (INFRA.into(), s.into()),
    }
}
