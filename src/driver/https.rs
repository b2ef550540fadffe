//! The HTTPS side of the router: the certificates and client CAs in Barbican and the
//! TERMINATED_HTTPS listeners (the main one, and a Gateway's more HTTPS ports: `more_https`).
//!
//! A convergence runs it in two phases around the HTTP listener's plan:
//! 1. [`prepare`]: list our secrets, store every certificate content and client CA content
//!    (`client_ca`) that is new, for every HTTPS listener wanted. This comes first because the
//!    HTTP listener's redirects are written only for hosts whose certificate has something to
//!    serve ([`http_view`]).
//! 2. [`ensure_listener`]: create the listener, or switch its certificates in one PUT; its
//!    policies follow as an ordinary plan (`view::DesiredView::https`); then [`collect_garbage`] deletes the
//!    secrets nothing uses any more (old contents after a rotation, removed certificates).
//!
//! Barbican failures: [`prepare`] gives [`Phase::Unavailable`]. A router without an HTTPS
//! listener converges its HTTP side anyway (nothing of it needs a certificate) and the error is
//! returned at the end. A router with one is not written at all: Octavia's worker reads every
//! certificate of the load balancer for most writes (members, pools, the HTTPS listener's
//! policies), and with Barbican down such a write never completes, leaving the router
//! PENDING_UPDATE for good (measured on Zed, docs/tls-barbican-notes.md).
//!
//! Refusals (a 4xx that will repeat) of the listener's write, of a secret's store or delete, or of
//! the listing of our secrets (`Phase::Refused`: our user lacks a role; Octavia's own reads work) are
//! isolated instead ([`super::https_holds`]): the object is on hold and reported, and the
//! convergence goes on (the HTTP side, the floating IP, the statuses).

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use super::certificates::{
    CertificatePlan, SecretScope, StoredSecret, all_certificates, garbage, has_legacy, plan_certificates, secret_uuid,
    wanted_https,
};
use super::cloud::Cloud;
use super::door::{self, Order};
use super::error::{DriverError, Result};
use super::execute::listener_write;
use super::https_holds::{HttpsHolds, ca_owners, certificate_owners, refusal};
use super::isolation::WriteKey;
use super::listener_plan::{HttpsRefs, TERMINATED_HTTPS, choose_listener, plan_https_listener};
use super::report::{CertificateSnapshot, ClientCaSnapshot, ConvergeReport, HttpsSnapshot, WriteRecord};
use super::{client_ca, more_https};
use crate::model::{CaBundle, DesiredRouter, HttpsListener, KubeRef};
use crate::openstack::octavia::{Listener, LoadBalancer};
use crate::openstack::{Barbican, ListQuery};

/// What the first phase found.
pub enum Phase {
    /// No Ingress has TLS and nothing of ours is left to remove (or no key manager to look in).
    Off,
    /// Barbican could not be read or written: the HTTPS side is left as it is this time.
    Unavailable {
        /// Whether the router has an HTTPS listener (which keeps serving what it has).
        has_listener: bool,
        error: DriverError,
    },
    /// Barbican refuses the listing of our secrets for good (a 4xx such as a 403: our user lacks
    /// a role). Only our user is refused: Octavia reads the certificates as its own user, so
    /// the router's writes complete and its HTTP side converges; the HTTPS side is left as it
    /// is, the listing on hold (reported on every TLS Ingress, retried with backoff).
    Refused {
        has_listener: bool,
    },
    Ready(Box<HttpsState>),
}

impl Phase {
    /// Whether the router has its main HTTPS listener as found (any HTTPS listener when
    /// Barbican could not be read).
    pub(crate) fn has_listener(&self) -> bool {
        match self {
            Phase::Off => false,
            Phase::Unavailable { has_listener, .. } | Phase::Refused { has_listener } => *has_listener,
            Phase::Ready(state) => state.listener.is_some(),
        }
    }

    /// Whether the router has any HTTPS listener as found (a member write then waits for
    /// Barbican: see `Router::set_members`).
    pub(crate) fn has_any_listener(&self) -> bool {
        match self {
            Phase::Ready(state) => state.listener.is_some() || !state.listed.is_empty(),
            _ => self.has_listener(),
        }
    }
}

/// Whether the router has any TERMINATED_HTTPS listener (ours or not: Octavia's worker reads
/// its certificates for a member write all the same).
pub(crate) async fn has_listener(cloud: &Cloud, lb: &LoadBalancer) -> Result<bool> {
    let q = ListQuery { loadbalancer_id: Some(lb.id.clone()), ..ListQuery::default() };
    Ok(cloud.octavia.list_listeners(&q).await?.iter().any(|l| l.protocol == TERMINATED_HTTPS))
}

/// Our secrets, the certificate and client CA plans (with the refs of the secrets just created)
/// and the router's HTTPS listeners as found.
pub struct HttpsState {
    pub stored: Vec<StoredSecret>,
    pub plan: CertificatePlan,
    /// Client CA name → the secret the listeners validating against it name (its content just
    /// stored or found, else the last good one a listener uses).
    pub ca_refs: BTreeMap<String, String>,
    /// The main HTTPS listener.
    pub listener: Option<Listener>,
    /// Every TERMINATED_HTTPS listener of the router as listed (the more ports' among them).
    pub listed: Vec<Listener>,
    /// The more ports' listeners as they are after their writes, by port.
    pub more: BTreeMap<u16, Listener>,
}

impl HttpsState {
    /// The refs the listeners are written with.
    pub(crate) fn refs(&self) -> HttpsRefs<'_> {
        HttpsRefs { certificates: &self.plan.refs, cas: &self.ca_refs }
    }
}

/// The router's TERMINATED_HTTPS listeners.
async fn https_listeners(cloud: &Cloud, lb: &LoadBalancer) -> Result<Vec<Listener>> {
    let q = ListQuery { loadbalancer_id: Some(lb.id.clone()), ..ListQuery::default() };
    let listeners = cloud.octavia.list_listeners(&q).await?;
    Ok(listeners.into_iter().filter(|l| l.protocol == TERMINATED_HTTPS).collect())
}

/// The main HTTPS listener among `listed`: on the wanted port (ours, else an adopted one), or,
/// nothing wanted, ours to remove on whatever port it was made (never a more port's).
fn main_listener(listed: &[Listener], cloud: &Cloud, port: Option<u16>) -> Option<Listener> {
    match port {
        Some(port) => choose_listener(listed, &cloud.spec, TERMINATED_HTTPS, port).cloned(),
        None => {
            listed.iter().find(|l| cloud.spec.ownership.owns(&l.tags) && !more_https::is_ours(l, &cloud.spec)).cloned()
        }
    }
}

/// Phase 1: see the module docs. A secret Barbican refuses to store for good (or one on hold
/// after such a refusal) is not retried until its hold ends: its certificate serves its last
/// good content meanwhile, if any, and a client CA its last good one (see
/// [`super::https_holds`]).
pub(crate) async fn prepare(
    cloud: &Cloud,
    lb: &LoadBalancer,
    desired: &DesiredRouter,
    holds: &HttpsHolds<'_>,
    report: &mut ConvergeReport,
) -> Result<Phase> {
    let listed = https_listeners(cloud, lb).await?;
    let listener = main_listener(&listed, cloud, desired.https.as_ref().map(|d| d.port));
    // Every certificate of every HTTPS listener wanted (None: no listener wanted).
    let all = all_certificates(desired);
    let wanted = all.as_ref();
    let Some(barbican) = &cloud.barbican else {
        return Ok(match wanted {
            None => Phase::Off,
            Some(_) => Phase::Unavailable { has_listener: !listed.is_empty(), error: DriverError::NoKeyManager },
        });
    };
    // Any HTTPS listener, ours or not: Octavia's worker reads its certificates for most writes.
    let has_listener = !listed.is_empty();
    if holds.is_held(&WriteKey::SecretListing) {
        return Ok(if wanted.is_none() && !has_listener { Phase::Off } else { Phase::Refused { has_listener } });
    }
    let stored = match list_ours(cloud, barbican).await {
        Ok(s) => {
            holds.succeeded(&WriteKey::SecretListing);
            s
        }
        // Nothing wanted and no listener: only leftovers to collect, which can wait.
        Err(_) if wanted.is_none() && !has_listener => return Ok(Phase::Off),
        Err(error) => match refusal(&error) {
            Some(refused) => {
                let owners = certificate_owners(wanted, None);
                let write = "list our secrets in Barbican".to_string();
                holds.refused(WriteKey::SecretListing, write, refused, owners, report);
                return Ok(Phase::Refused { has_listener });
            }
            None => return Ok(Phase::Unavailable { has_listener, error }),
        },
    };
    let mut state = HttpsState {
        stored,
        plan: CertificatePlan::default(),
        ca_refs: BTreeMap::new(),
        listener,
        listed,
        more: BTreeMap::new(),
    };
    let Some(wanted) = wanted else {
        return Ok(Phase::Ready(Box::new(state)));
    };
    if let Err(error) = store_contents(cloud, barbican, desired, wanted, &mut state, holds, report).await {
        return Ok(Phase::Unavailable { has_listener, error });
    }
    Ok(Phase::Ready(Box::new(state)))
}

/// Plans the certificates of `wanted` and the client CAs the listeners validate against, and
/// stores every content that is new ([`store_new`]). A certificate whose new content cannot be
/// stored serves its last good one, else nothing; a CA keeps the last good secret a listener
/// uses for it, else its listeners are not written (`listener_plan`: never served without the
/// validation asked for). A transient Barbican error is returned (nothing of the HTTPS side is
/// written then).
async fn store_contents(
    cloud: &Cloud,
    barbican: &Barbican,
    desired: &DesiredRouter,
    wanted: &HttpsListener,
    state: &mut HttpsState,
    holds: &HttpsHolds<'_>,
    report: &mut ConvergeReport,
) -> Result<()> {
    let scope = cloud.secret_scope();
    let in_use: Vec<String> = state.listed.iter().flat_map(listener_secret_refs).collect();
    let mut plan = plan_certificates(wanted, &scope, &state.stored, &in_use);
    let create = std::mem::take(&mut plan.create);
    let certificates = Certificates { cloud, barbican, wanted, scope: &scope, in_use: &in_use };
    let unavailable = store_new(&certificates, create, &mut state.stored, &mut plan.refs, holds, report).await?;
    plan.unavailable.extend(unavailable);
    state.plan = plan;

    let cas = client_ca::wanted(wanted_https(desired));
    let mut plan = client_ca::plan_cas(&cas, &scope, &state.stored, &in_use);
    let create = std::mem::take(&mut plan.create);
    let client_cas = ClientCas { cloud, barbican, desired, cas: &cas, scope: &scope, listed: &state.listed };
    // A CA with nothing to serve has no ref: its listeners are not written.
    store_new(&client_cas, create, &mut state.stored, &mut plan.refs, holds, report).await?;
    state.ca_refs = plan.refs;
    Ok(())
}

/// One kind of Barbican secret the HTTPS side stores, by item (a certificate, a client CA):
/// what [`store_new`] needs to store one, report its refusal, and serve its last good secret.
trait SecretKind {
    /// Stores the new content of `item` as the secret `name`: its ref and its write record.
    async fn store(&self, item: &str, name: &str) -> Result<(String, WriteRecord)>;
    /// The write a refusal to store `item` as `name` is reported as, and on whom.
    fn refused(&self, item: &str, name: &str) -> (String, Vec<KubeRef>);
    /// The secret `item` is served from while its new content cannot be stored, if any.
    fn last_good(&self, item: &str, stored: &[StoredSecret]) -> Option<String>;
}

/// Stores each `(item, secret name)` of `create`, in order: a new secret is recorded in `stored`
/// and serves its item (`refs`); one Barbican refuses for good (a 4xx) is put on hold and
/// reported, and one on hold is not tried, each serving its last good secret meanwhile. Returns
/// the items with nothing to serve, or the first transient Barbican error.
async fn store_new<K: SecretKind>(
    kind: &K,
    create: Vec<(String, String)>,
    stored: &mut Vec<StoredSecret>,
    refs: &mut BTreeMap<String, String>,
    holds: &HttpsHolds<'_>,
    report: &mut ConvergeReport,
) -> Result<Vec<String>> {
    let mut unavailable = Vec::new();
    for (item, name) in create {
        let key = WriteKey::Secret(name.clone());
        if !holds.is_held(&key) {
            match kind.store(&item, &name).await {
                Ok((secret_ref, record)) => {
                    holds.succeeded(&key);
                    report.writes.push(record);
                    stored.push(StoredSecret { secret_ref: secret_ref.clone(), name, created: String::new() });
                    refs.insert(item, secret_ref);
                    continue;
                }
                Err(error) => {
                    let refused = refusal(&error).ok_or(error)?;
                    let (write, owners) = kind.refused(&item, &name);
                    holds.refused(key, write, refused, owners, report);
                }
            }
        }
        match kind.last_good(&item, stored) {
            Some(secret_ref) => {
                refs.insert(item, secret_ref);
            }
            None => unavailable.push(item),
        }
    }
    Ok(unavailable)
}

/// The certificates of one HTTPS listener wanted (the main one's and the more ports').
struct Certificates<'a> {
    cloud: &'a Cloud,
    barbican: &'a Barbican,
    wanted: &'a HttpsListener,
    scope: &'a SecretScope,
    in_use: &'a [String],
}

impl SecretKind for Certificates<'_> {
    /// One PKCS#12 secret, with the certificate's public facts as metadata (for `show` and for
    /// an operator browsing Barbican).
    async fn store(&self, cert: &str, name: &str) -> Result<(String, WriteRecord)> {
        let content =
            self.wanted.certificates[cert].content.as_ref().expect("only certificates with content are created");
        let bundle = content.parsed().pkcs12().map_err(|e| DriverError::Certificate(e.to_string()))?;
        let metadata = BTreeMap::from([
            ("cluster".to_string(), self.cloud.spec.ownership.cluster.clone()),
            ("router".to_string(), self.cloud.spec.name.clone()),
            ("subject".to_string(), content.subject.clone()),
            ("sha256".to_string(), content.fingerprint.clone()),
            ("not-after".to_string(), content.not_after.clone()),
        ]);
        let description = format!("store certificate {cert} in Barbican ({name}, sha256 {})", content.fingerprint);
        store_secret(self.cloud, self.barbican, name, &bundle, &metadata, description).await
    }

    fn refused(&self, cert: &str, name: &str) -> (String, Vec<KubeRef>) {
        let write = format!("store certificate {cert} in Barbican ({name})");
        (write, certificate_owners(Some(self.wanted), Some(&[cert][..])))
    }

    /// The secret the listener uses for `cert`, else its newest stored one.
    fn last_good(&self, cert: &str, stored: &[StoredSecret]) -> Option<String> {
        let c = self.wanted.certificates.get(cert)?;
        let one = HttpsListener {
            certificates: BTreeMap::from([(
                cert.to_string(),
                crate::model::Certificate { content: None, ..c.clone() },
            )]),
            port: self.wanted.port,
            default_certificate: self.wanted.default_certificate.clone(),
            policies: Vec::new(),
            default_pool: None,
            client_validation: None,
        };
        plan_certificates(&one, self.scope, stored, self.in_use).refs.remove(cert)
    }
}

/// The client CAs the HTTPS listeners validate against, by name.
struct ClientCas<'a> {
    cloud: &'a Cloud,
    barbican: &'a Barbican,
    desired: &'a DesiredRouter,
    cas: &'a BTreeMap<&'a str, &'a CaBundle>,
    scope: &'a SecretScope,
    /// The router's HTTPS listeners as listed (the CA secrets they validate against now).
    listed: &'a [Listener],
}

impl SecretKind for ClientCas<'_> {
    /// One secret holding the CA bundle (PEM); logged by name and content id only.
    async fn store(&self, ca_name: &str, name: &str) -> Result<(String, WriteRecord)> {
        let ca = self.cas[ca_name];
        let metadata = client_ca::metadata(self.scope, ca);
        let description = format!("store client CA {} in Barbican ({name}, sha256 {:.16})", ca.name, ca.content_id);
        store_secret(self.cloud, self.barbican, name, ca.pem.as_bytes(), &metadata, description).await
    }

    fn refused(&self, ca_name: &str, name: &str) -> (String, Vec<KubeRef>) {
        (format!("store client CA {ca_name} in Barbican ({name})"), ca_owners(self.desired, ca_name))
    }

    /// The CA secret of ours a listener validates against now for `ca_name` (an older content).
    fn last_good(&self, ca_name: &str, stored: &[StoredSecret]) -> Option<String> {
        let now =
            |l: &Listener| client_ca::last_good(self.scope, stored, ca_name, l.client_ca_tls_container_ref.as_deref());
        self.listed.iter().find_map(now)
    }
}

/// One secret of `payload` named `name`, with `metadata`, readable by the users the operator
/// named (Octavia's service user): its ref and its record (`description`, never the payload).
async fn store_secret(
    cloud: &Cloud,
    barbican: &Barbican,
    name: &str,
    payload: &[u8],
    metadata: &BTreeMap<String, String>,
    description: String,
) -> Result<(String, WriteRecord)> {
    let call = async {
        let secret_ref = barbican.create_secret(name, payload).await?;
        barbican.set_metadata(&secret_ref, metadata).await?;
        if !cloud.spec.secret_read_users.is_empty() {
            barbican.set_read_acl(&secret_ref, &cloud.spec.secret_read_users, true).await?;
        }
        Ok::<_, crate::openstack::Error>(secret_ref)
    };
    door::write(cloud, Order::barbican("create_secret", description), call).await
}

/// Whether Barbican answers (one listing of our secrets).
pub async fn probe(cloud: &Cloud) -> Result<()> {
    let Some(barbican) = &cloud.barbican else { return Err(DriverError::NoKeyManager) };
    list_ours(cloud, barbican).await.map(drop)
}

async fn list_ours(cloud: &Cloud, barbican: &Barbican) -> Result<Vec<StoredSecret>> {
    // The cluster's prefix: this router's secrets and the legacy ones it may adopt or collect
    // (other routers' are listed too, and left alone).
    let prefix = cloud.secret_scope().cluster_prefix();
    let listed = barbican.list_secrets(&prefix).await.map_err(|source| DriverError::KeyManager { source })?;
    Ok(listed
        .into_iter()
        .map(|s| StoredSecret {
            secret_ref: s.secret_ref,
            name: s.name.unwrap_or_default(),
            created: s.created.unwrap_or_default(),
        })
        .collect())
}

/// Deletes every Barbican secret this router owns (named with its own prefix: never another
/// router's, never a legacy one of the cluster), once its load balancer is deleted; how many.
pub(crate) async fn delete_own_secrets(cloud: &Cloud) -> Result<usize> {
    let Some(barbican) = &cloud.barbican else { return Ok(0) };
    let scope = cloud.secret_scope();
    let listed = match barbican.list_secrets(&scope.prefix()).await {
        Ok(l) => l,
        // A cloud without a key manager has no secrets of ours: the router deletes all the same.
        Err(crate::openstack::Error::EndpointNotFound { .. }) => return Ok(0),
        Err(source) => return Err(DriverError::KeyManager { source }),
    };
    let mut deleted = 0;
    for s in listed {
        let name = s.name.unwrap_or_default();
        // The listing is by prefix; the parse also refuses a longer router name sharing it.
        if scope.parse(&name).is_none_or(|(certificate, _)| certificate.contains(':')) {
            continue;
        }
        let description =
            format!("delete Barbican secret {name} ({}): its router is deleted", secret_uuid(&s.secret_ref));
        door::write(cloud, Order::barbican("delete_secret", description), barbican.delete_secret(&s.secret_ref))
            .await?;
        deleted += 1;
    }
    Ok(deleted)
}

/// Every secret ref a listener holds.
pub(crate) fn listener_secret_refs(l: &Listener) -> Vec<String> {
    super::certificates::listener_refs_of(l)
}

/// The HTTP listener's desired state: redirects only for hosts whose certificate has something
/// to serve (a redirect to a host the HTTPS listener cannot serve would break the site), and none
/// while the HTTPS listener does not exist and its create is on hold (`listener_held`).
/// Borrowed when every redirect can be written (the usual case): the desired router, which can
/// hold thousands of policies, is not copied on every convergence.
pub(crate) fn http_view<'a>(desired: &'a DesiredRouter, phase: &Phase, listener_held: bool) -> Cow<'a, DesiredRouter> {
    let servable: BTreeSet<&str> = match phase {
        Phase::Ready(state) if state.listener.is_none() && listener_held => BTreeSet::new(),
        Phase::Ready(state) => state.plan.refs.keys().map(String::as_str).collect(),
        // Barbican unknown: keep the redirects while an HTTPS listener exists to serve them.
        Phase::Unavailable { has_listener: true, .. } | Phase::Refused { has_listener: true } => {
            desired.redirects.iter().map(|r| r.certificate.as_str()).collect()
        }
        Phase::Unavailable { has_listener: false, .. } | Phase::Refused { has_listener: false } | Phase::Off => {
            BTreeSet::new()
        }
    };
    if desired.redirects.iter().all(|r| servable.contains(r.certificate.as_str())) {
        return Cow::Borrowed(desired);
    }
    Cow::Owned(DesiredRouter {
        redirects: desired.redirects.iter().filter(|r| servable.contains(r.certificate.as_str())).cloned().collect(),
        ..desired.clone()
    })
}

/// Phase 2: the listener itself (planned by `listener_plan::plan_https_listener`). Returns it
/// when it exists (for its policies' plan), and whether it is as desired (not when a conflict
/// kept it from being written); deletes ours when no Ingress has TLS any more.
pub(crate) async fn ensure_listener(
    cloud: &Cloud,
    lb: &LoadBalancer,
    desired: Option<&HttpsListener>,
    state: &mut HttpsState,
    report: &mut ConvergeReport,
) -> Result<(Option<Listener>, bool)> {
    let plan = plan_https_listener(desired, state.listener.as_ref(), state.refs(), &lb.id, &cloud.spec);
    let conflicted = plan.conflict.is_some();
    report.conflicts.extend(plan.conflict);
    let Some(step) = plan.step else {
        if desired.is_none() {
            state.listener = None;
        }
        return Ok((state.listener.clone(), !conflicted));
    };
    let listener = listener_write(cloud, &lb.id, step, &mut report.writes).await?;
    state.listener = listener.clone();
    Ok((listener, true))
}

/// [`ensure_listener`] with its refusal isolated: a listener write Octavia refuses for good (or
/// one on hold after such a refusal) leaves the listener as it is, reported and on hold. Returns
/// the listener as it is now, and whether it is as desired (only then are unused secrets
/// collected: a secret stored for a switch that did not happen is not garbage).
pub(crate) async fn ensure_listener_isolated(
    cloud: &Cloud,
    lb: &LoadBalancer,
    desired: Option<&HttpsListener>,
    state: &mut HttpsState,
    holds: &HttpsHolds<'_>,
    report: &mut ConvergeReport,
) -> Result<(Option<Listener>, bool)> {
    let key = WriteKey::HttpsListener;
    if holds.is_held(&key) {
        return Ok((state.listener.clone(), false));
    }
    match ensure_listener(cloud, lb, desired, state, report).await {
        Ok((l, as_desired)) => {
            holds.succeeded(&key);
            Ok((l, as_desired))
        }
        Err(error) => {
            let Some(refused) = refusal(&error) else { return Err(error) };
            let write = match &error {
                DriverError::Write { write, .. } => write.clone(),
                _ => "HTTPS listener".into(),
            };
            holds.refused(key, write, refused, certificate_owners(desired, None), report);
            Ok((state.listener.clone(), false))
        }
    }
}

/// The Ingresses (or Gateway) to tell about an HTTPS hold: the listener's owners for a listener,
/// every HTTPS owner for the listing, a certificate's for its secret, the owners of the
/// listeners validating against a client CA for its secret.
pub(crate) fn hold_owners(key: &WriteKey, desired: &DesiredRouter, scope: &SecretScope) -> Vec<crate::model::KubeRef> {
    match key {
        WriteKey::HttpsListener => certificate_owners(desired.https.as_ref(), None),
        WriteKey::HttpsListenerOn(port) => certificate_owners(desired.more_https.get(port), None),
        WriteKey::SecretListing => certificate_owners(all_certificates(desired).as_ref(), None),
        WriteKey::Secret(name) => match client_ca::parse(scope, name) {
            Some(ca) => ca_owners(desired, ca),
            None => match scope.parse(name).or_else(|| scope.parse_legacy(name)) {
                Some((cert, _)) => certificate_owners(all_certificates(desired).as_ref(), Some(&[cert][..])),
                None => Vec::new(),
            },
        },
        _ => Vec::new(),
    }
}

/// Delete our secrets that no HTTPS listener of the router uses (after their last writes). A
/// delete Barbican refuses for good puts that secret on hold (reported, retried with backoff).
pub(crate) async fn collect_garbage(
    cloud: &Cloud,
    state: &HttpsState,
    holds: &HttpsHolds<'_>,
    report: &mut ConvergeReport,
) -> Result<()> {
    let Some(barbican) = &cloud.barbican else { return Ok(()) };
    let keep: Vec<String> = state.listener.iter().chain(state.more.values()).flat_map(listener_secret_refs).collect();
    let scope = cloud.secret_scope();
    // A legacy secret (named after the cluster alone) may serve another router of the cluster:
    // it goes only when no listener of the project references it.
    let referenced = if has_legacy(&scope, &state.stored) {
        let all = cloud.octavia.list_listeners(&ListQuery::default()).await?;
        all.iter().filter(|l| l.protocol == TERMINATED_HTTPS).flat_map(listener_secret_refs).collect()
    } else {
        Vec::new()
    };
    for s in garbage(&scope, &state.stored, &keep, &referenced) {
        let key = WriteKey::Secret(s.name.clone());
        if holds.is_held(&key) {
            continue;
        }
        let description = format!("delete Barbican secret {} ({}): no longer used", s.name, secret_uuid(&s.secret_ref));
        let order = Order::barbican("delete_secret", description);
        match door::write_recorded(cloud, order, &mut report.writes, barbican.delete_secret(&s.secret_ref)).await {
            Ok(()) => holds.succeeded(&key),
            Err(error @ DriverError::KeyManager { .. }) => {
                let refused = refusal(&error).ok_or(error)?;
                let write = format!("delete Barbican secret {} ({})", s.name, secret_uuid(&s.secret_ref));
                holds.refused(key, write, refused, Vec::new(), report);
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The HTTPS listeners among `listeners` for `show`: the main one (ours, else an adopted one),
/// and the more ports' (ours, by port), each with its policies, each certificate's Barbican name
/// and metadata and its client CA's (a secret Barbican cannot describe is listed by its ref alone).
pub(crate) async fn snapshot(
    cloud: &Cloud,
    reads: &std::sync::Mutex<super::read_cache::ReadCache>,
    listeners: &[Listener],
) -> Result<(Option<HttpsSnapshot>, Vec<HttpsSnapshot>)> {
    let main_of = |owned: bool| {
        listeners.iter().find(|l| {
            l.protocol == TERMINATED_HTTPS
                && (!owned || cloud.spec.ownership.owns(&l.tags))
                && !more_https::is_ours(l, &cloud.spec)
        })
    };
    let main = match main_of(true).or_else(|| main_of(false)) {
        Some(l) => Some(listener_snapshot(cloud, reads, l).await?),
        None => None,
    };
    let mut more: Vec<&Listener> = listeners.iter().filter(|l| more_https::is_ours(l, &cloud.spec)).collect();
    more.sort_by_key(|l| l.protocol_port);
    let mut snapshots = Vec::with_capacity(more.len());
    for l in more {
        snapshots.push(listener_snapshot(cloud, reads, l).await?);
    }
    Ok((main, snapshots))
}

/// One HTTPS listener for `show`.
async fn listener_snapshot(
    cloud: &Cloud,
    reads: &std::sync::Mutex<super::read_cache::ReadCache>,
    l: &Listener,
) -> Result<HttpsSnapshot> {
    let actual = super::read::read_actual(cloud, reads, l, None).await?;
    let mut certificates = Vec::new();
    let tls_refs = l.default_tls_container_ref.iter().chain(&l.sni_container_refs);
    for secret_ref in tls_refs.cloned().collect::<BTreeSet<_>>() {
        let default = l.default_tls_container_ref.as_deref() == Some(secret_ref.as_str());
        let (name, metadata) = described(cloud, &secret_ref).await;
        certificates.push(CertificateSnapshot { secret_ref, name, default, metadata });
    }
    let mode = l.client_authentication.as_deref().unwrap_or("NONE");
    let client_ca = match &l.client_ca_tls_container_ref {
        Some(secret_ref) => {
            let (name, metadata) = described(cloud, secret_ref).await;
            Some(ClientCaSnapshot { secret_ref: Some(secret_ref.clone()), name, mode: mode.into(), metadata })
        }
        None if mode != "NONE" => Some(ClientCaSnapshot { mode: mode.into(), ..Default::default() }),
        None => None,
    };
    Ok(HttpsSnapshot { listener_id: l.id.clone(), port: l.protocol_port, actual, certificates, client_ca })
}

/// A secret's name and metadata as Barbican describes them (never its payload); empty when
/// Barbican cannot describe it.
async fn described(cloud: &Cloud, secret_ref: &str) -> (String, BTreeMap<String, String>) {
    let Some(b) = &cloud.barbican else { return Default::default() };
    let name = b.get_secret(secret_ref).await.ok().and_then(|info| info.name).unwrap_or_default();
    (name, b.get_metadata(secret_ref).await.unwrap_or_default())
}
