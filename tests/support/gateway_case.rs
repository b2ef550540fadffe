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
    /// Set when the case restates OUR answer (a refusal) instead of the upstream test's
    /// expectations: the upstream test fails here whatever this case gives, and the conformance
    /// report says so (`record_result`). Why, in words.
    #[serde(default)]
    pub diverges: Option<String>,
    #[serde(default)]
    pub tls_secrets: Vec<String>,
    /// `ns/name` of the ConfigMaps holding a CA (`ca.crt`) that the test's Gateways name for
    /// client certificate validation: the upstream suite creates them (a new CA each run).
    #[serde(default)]
    pub ca_config_maps: Vec<String>,
    #[serde(default)]
    pub classes: Vec<ClassExpect>,
    #[serde(default)]
    pub gateways: Vec<GatewayExpect>,
    #[serde(default)]
    pub routes: Vec<RouteExpect>,
    #[serde(default)]
    pub listener_sets: Vec<ListenerSetExpect>,
    #[serde(default)]
    pub requests: Vec<CaseRequest>,
}

/// A ListenerSet's expected conditions, and those of its listeners.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListenerSetExpect {
    /// `ns/name`.
    pub listener_set: String,
    #[serde(default)]
    pub conditions: BTreeMap<String, String>,
    #[serde(default)]
    pub listeners: Vec<ListenerExpect>,
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
    /// How many `status.addresses` the Gateway must have (unchecked when absent).
    pub addresses: Option<usize>,
    /// `status.attachedListenerSets` (unchecked when absent).
    pub attached_listener_sets: Option<i32>,
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
    /// The parent's name (a Gateway's, or with `parentKind: ListenerSet` a ListenerSet's).
    pub parent: String,
    /// `Gateway` (default) or `ListenerSet`.
    #[serde(default)]
    pub parent_kind: Option<String>,
    pub conditions: BTreeMap<String, String>,
}

/// A new self-signed CA certificate (PEM) with common name `cn`: what the upstream suite puts in
/// the `ca.crt` of each of its CA ConfigMaps.
pub fn ca_pem(cn: &str) -> String {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.distinguished_name.push(rcgen::DnType::CommonName, cn);
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params.self_signed(&key).unwrap().pem()
}

/// One CA of the upstream suite and the client certificate it signed: the suite creates, once per
/// run (`utils/suite/suite.go`), each CA ConfigMap (`MustCreateCACertConfigMap`: `ca.crt`) and a
/// client Secret signed by its key (`MustCreateCASignedClientCertSecret`, e.g.
/// `tls-validity-checks-client-certificate` by `tls-validity-checks-ca-certificate`), which the
/// client certificate validation tests present. The same profiles as upstream's
/// (`utils/kubernetes/certificate.go`): every CA is `CN=gatewayapi, O=Kubernetes Gateway API,
/// C=US`, serial 2024, keyCertSign and digitalSignature, extended usages clientAuth and
/// serverAuth (so the CAs are told apart by their keys only, as upstream's); the client is
/// `CN=default, O=Acme Co`, no names, keyEncipherment and digitalSignature, clientAuth. The
/// differences, for no validation outcome: ECDSA P-256 keys instead of RSA 2048 (ring makes no
/// RSA keys) and rcgen's validity instead of one year from now.
pub struct SuiteCa {
    /// `ca.crt` of the ConfigMap.
    pub pem: String,
    /// The client Secret's `tls.crt` and `tls.key`.
    pub client_cert: String,
    pub client_key: String,
}

impl SuiteCa {
    fn new() -> Self {
        use rcgen::{
            BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
            KeyUsagePurpose,
        };
        let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.distinguished_name.push(DnType::OrganizationName, "Kubernetes Gateway API");
        ca.distinguished_name.push(DnType::CountryName, "US");
        ca.distinguished_name.push(DnType::CommonName, "gatewayapi");
        ca.serial_number = Some(2024u64.into());
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyCertSign];
        ca.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth, ExtendedKeyUsagePurpose::ServerAuth];
        let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().unwrap()).unwrap();
        let mut client = CertificateParams::new(Vec::<String>::new()).unwrap();
        client.distinguished_name.push(DnType::CommonName, "default");
        client.distinguished_name.push(DnType::OrganizationName, "Acme Co");
        client.key_usages = vec![KeyUsagePurpose::KeyEncipherment, KeyUsagePurpose::DigitalSignature];
        client.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let key = KeyPair::generate().unwrap();
        let cert = client.signed_by(&key, &ca).unwrap();
        SuiteCa { pem: ca.pem(), client_cert: cert.pem(), client_key: key.serialize_pem() }
    }
}

/// The suite's CA of the ConfigMap `config_map` (`ns/name`, the namespace defaulting to
/// [`INFRA`]): made on first use, then the same for the whole test process, as the upstream suite
/// makes each once per run (so a request table can name the client certificate by its CA).
pub fn suite_ca(config_map: &str) -> std::sync::Arc<SuiteCa> {
    use std::sync::{Arc, Mutex, OnceLock};
    /// The suite's CAs by their ConfigMap (namespace, name).
    type Cas = BTreeMap<(String, String), Arc<SuiteCa>>;
    static CAS: OnceLock<Mutex<Cas>> = OnceLock::new();
    let mut cas = CAS.get_or_init(Mutex::default).lock().unwrap_or_else(|e| e.into_inner());
    cas.entry(split(config_map)).or_insert_with(|| Arc::new(SuiteCa::new())).clone()
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
    /// A WebSocket upgrade (`Upgrade: websocket`) instead of a plain request: `answer` must
    /// accept it (101) and echo a text and a binary frame (the data plane sends them).
    #[serde(default)]
    pub websocket: bool,
    /// HTTPS: the client presents the upstream suite's client certificate signed by the CA of
    /// this ConfigMap (`ns/name`, see [`suite_ca`]); none when absent.
    #[serde(default, rename = "clientCertOf")]
    pub client_cert_of: Option<String>,
    /// A backend Service name, `500`, `404`, `<code> <redirect prefix>`, `a|b` (a weighted
    /// rule: each named Service answers some), or [`REFUSED`].
    pub answer: String,
}

/// The answer of a request whose TLS handshake the listener refuses (a client certificate that
/// its validation does not accept): no HTTP answer at all, as the upstream test's
/// `MakeTLSRequestAndExpectFailureResponse` expects.
pub const REFUSED: &str = "refused";

/// `ns/name`, the namespace defaulting to the conformance infra namespace.
pub fn split(s: &str) -> (String, String) {
    match s.split_once('/') {
        Some((ns, n)) => (ns.into(), n.into()),
        None => (INFRA.into(), s.into()),
    }
}

/// The environment variable naming the file where the conformance tests record each upstream
/// test's outcome (one JSON object a line), read by functional/conformance_report.py.
pub const RESULTS_ENV: &str = "KURYR_CONFORMANCE_RESULTS";

/// Records the outcome of the case named `test` (each upstream test it restates, `A + B` being
/// two) checked by `source` (`fixtures`, `upstream-manifests`, `dataplane`) with `errors`, when
/// [`RESULTS_ENV`] is set. A case that `diverges` ([`Case::diverges`]) is recorded failed, with
/// why: its upstream test fails.
pub fn record_result(test: &str, diverges: Option<&str>, source: &str, errors: &[String]) {
    let Ok(path) = std::env::var(RESULTS_ENV) else { return };
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(&path).expect("the results file opens");
    for test in test.split(" + ") {
        let mut why: Vec<String> = errors.to_vec();
        why.extend(diverges.iter().map(|d| format!("not supported: {d}")));
        let line = serde_json::json!({"test": test, "source": source, "passed": why.is_empty(), "why": why});
        writeln!(file, "{line}").expect("the results file is written");
    }
}

/// Records the features the implementation declares (`GatewayClass.status.supportedFeatures`)
/// beside the outcomes, when [`RESULTS_ENV`] is set: the report's supported features are those.
pub fn record_supported_features(features: &[&str]) {
    let Ok(path) = std::env::var(RESULTS_ENV) else { return };
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(&path).expect("the results file opens");
    writeln!(file, "{}", serde_json::json!({ "supportedFeatures": features })).expect("the results file is written");
}
