//! What the driver tells its callers: the report of a convergence, the outcome of a member
//! update, and the router as read back for `show`.

use super::actual::ActualRouter;
use crate::openstack::octavia::LoadBalancer;
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::Duration;

/// One write that was made, for the `apply` transcript and the benchmarks.
#[derive(Clone, Debug)]
pub struct WriteRecord {
    pub kind: &'static str,
    pub description: String,
    /// From sending the write to the router being ACTIVE again.
    pub duration: Duration,
}

/// The outcome of one convergence.
#[derive(Clone, Debug, Default)]
pub struct ConvergeReport {
    pub lb_id: String,
    pub listener_id: String,
    /// The TERMINATED_HTTPS listener, once any Ingress has TLS.
    pub https_listener_id: Option<String>,
    /// The router's more HTTP listeners (a Gateway's other HTTP ports), as converged.
    pub more_listener_ids: Vec<String>,
    pub created_router: bool,
    pub writes: Vec<WriteRecord>,
    /// What the operator should know: things left alone because they are not ours (see
    /// [`super::plan::Conflict`]), copies deleted, objects in ERROR replaced.
    pub conflicts: Vec<String>,
    /// The router's public address: the floating IP, else the VIP.
    pub address: Option<IpAddr>,
    pub vip_address: Option<IpAddr>,
    pub floating_ip: Option<IpAddr>,
    /// HTTP requests to Octavia and Neutron during the convergence (reads and writes).
    pub requests: u64,
    /// Read → plan → write rounds (1, or more when the writes were read back; see
    /// `Router::converge`).
    pub rounds: usize,
    pub elapsed: Duration,
    /// Writes Octavia refused for good in this convergence: their objects are on hold, every
    /// other change went on (see `super::isolation`).
    pub failures: Vec<WriteFailure>,
    /// Objects still on hold from an earlier refusal: none of their writes was sent.
    pub held: Vec<WriteFailure>,
    /// When the first object on hold may be tried again (the controller syncs again then).
    pub retry_after: Option<Duration>,
    /// Ingresses whose routes not yet on the router wait for the project's L7 quota (their
    /// routes on the router stay; see `super::admission`).
    pub quota_waiting: Vec<super::admission::Waiting>,
    /// The router's budget of L7 policies and rules under the project's Octavia quotas, when
    /// this convergence read it ([`BudgetReading`]; `None`: not read).
    pub budget: Option<BudgetReading>,
}

/// A write Octavia refused for good, or an object on hold since such a refusal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteFailure {
    /// The object (`L7 policy <name>`, `pool <name>`, `listener default pool`).
    pub object: String,
    /// The write refused (empty for an object on hold).
    pub write: String,
    /// Metric label: `invalid`, `quota`, `conflict`, `rejected`.
    pub reason: &'static str,
    /// Octavia's answer.
    pub message: String,
    /// The Ingresses the object serves (to tell them).
    pub owners: Vec<crate::model::KubeRef>,
}

impl ConvergeReport {
    /// Writes by kind, sorted by kind.
    pub fn writes_by_kind(&self) -> BTreeMap<&'static str, usize> {
        let mut m = BTreeMap::new();
        for w in &self.writes {
            *m.entry(w.kind).or_default() += 1;
        }
        m
    }
}

/// What `Router::set_members` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MembersChange {
    /// The pool already had exactly these members: no write.
    Unchanged,
    /// One batch member update was made (and the router is ACTIVE again).
    Updated,
    /// The pool does not exist on the router (yet): only a full convergence can create it.
    PoolMissing,
}

/// The router as Octavia has it, read back (not planned), for `show`.
#[derive(Clone, Debug)]
pub struct RouterSnapshot {
    pub lb: LoadBalancer,
    /// The floating IP on the VIP port, if any.
    pub floating_ip: Option<String>,
    /// The HTTP listener on the configured port, (id, port) (`None`: the router has none yet).
    pub listener: Option<(String, u16)>,
    /// The listener's policies and the router's pools (`None` without a listener).
    pub actual: Option<ActualRouter>,
    /// The TERMINATED_HTTPS listener, when the router has one.
    pub https: Option<HttpsSnapshot>,
    /// The router's more HTTPS listeners (a Gateway's other HTTPS ports), by port.
    pub more_https: Vec<HttpsSnapshot>,
    /// The router's more HTTP listeners (a Gateway's other HTTP ports), by port.
    pub more_http: Vec<MoreHttpSnapshot>,
    /// The load balancer's other listeners (not this router's, or ours left on a port no longer
    /// served until the next convergence deletes them): listed, not read.
    pub other_listeners: Vec<OtherListener>,
}

/// A listener of the load balancer that `show` lists without reading it.
#[derive(Clone, Debug)]
pub struct OtherListener {
    pub id: String,
    pub name: String,
    pub protocol: String,
    pub port: u16,
}

/// One more HTTP listener of the router (`<router>-http-<port>`) as Octavia has it.
#[derive(Clone, Debug)]
pub struct MoreHttpSnapshot {
    pub listener_id: String,
    pub port: u16,
    /// Its policies (in position order) and default pool.
    pub actual: ActualRouter,
}

/// An HTTPS listener as Octavia has it, with its certificates and client CA as Barbican
/// describes them.
#[derive(Clone, Debug)]
pub struct HttpsSnapshot {
    pub listener_id: String,
    pub port: u16,
    /// Its policies (in position order) and default pool.
    pub actual: ActualRouter,
    pub certificates: Vec<CertificateSnapshot>,
    /// The client-certificate validation, when the listener has a client CA or a
    /// `client_authentication` other than `NONE`.
    pub client_ca: Option<ClientCaSnapshot>,
}

/// The client CA of an HTTPS listener: `client_ca_tls_container_ref` with its Barbican secret's
/// name and metadata (the ConfigMap, the content's sha256), never its content (the PEM).
#[derive(Clone, Debug, Default)]
pub struct ClientCaSnapshot {
    /// `None`: a `client_authentication` without a CA (not one this controller writes).
    pub secret_ref: Option<String>,
    /// The Barbican secret's name (empty when it could not be read).
    pub name: String,
    /// `client_authentication`: `MANDATORY`, `OPTIONAL` or `NONE`.
    pub mode: String,
    pub metadata: std::collections::BTreeMap<String, String>,
}

/// One certificate of the HTTPS listener: its Barbican secret's name and metadata (subject,
/// fingerprint, validity), never its content.
#[derive(Clone, Debug, Default)]
pub struct CertificateSnapshot {
    pub secret_ref: String,
    /// The Barbican secret's name (empty when it could not be read).
    pub name: String,
    /// `default_tls_container_ref`.
    pub default: bool,
    pub metadata: std::collections::BTreeMap<String, String>,
}

/// What a convergence read of the router's budget: `Ok(None)` when the project's quotas are
/// unlimited, `Err` with the reason when they could not be read (e.g. a policy that forbids
/// reading them: the caller keeps the budget it had).
pub type BudgetReading = std::result::Result<Option<crate::model::Budget>, String>;
