//! What both Gateway conformance tests read from a case file of tests/fixtures/gateway/cases/:
//! the request table and the `ns/name` references (the pure test, tests/gateway_conformance.rs,
//! with `#[path = "support/gateway_case.rs"] mod gateway_case;`, and the data-plane proof,
//! functional/dataplane/gateway.rs).

use serde::Deserialize;
use std::collections::BTreeMap;

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
