//! The router's two listeners, planned purely beside `diff::plan_writes`: from the listener as
//! found and the desired state, the one write it needs (or none, or a conflict to report). The
//! writes are carried out by `execute::listener_write`, through the write door.

use super::certificates::{listener_refs, secret_uuid};
use super::spec::RouterSpec;
use crate::model::HttpsListener;
use crate::openstack::octavia::Listener;
use crate::openstack::octavia_requests::{ListenerCreate, ListenerUpdate};
use std::collections::{BTreeMap, BTreeSet};

/// Octavia's protocol of the HTTPS listener.
pub const TERMINATED_HTTPS: &str = "TERMINATED_HTTPS";

/// One write on a listener of the router.
#[derive(Clone, Debug)]
pub enum ListenerWrite {
    Create(ListenerCreate),
    Update { id: String, update: ListenerUpdate },
    Delete { id: String },
}

/// A planned listener write with its record's kind and description.
#[derive(Clone, Debug)]
pub struct ListenerStep {
    pub write: ListenerWrite,
    pub kind: &'static str,
    pub description: String,
}

impl ListenerStep {
    /// The delete of listener `l`, recorded as `delete_listener` with `description` (why it goes).
    pub(crate) fn delete(l: &Listener, description: String) -> Self {
        Self { write: ListenerWrite::Delete { id: l.id.clone() }, kind: "delete_listener", description }
    }
}

/// What the HTTPS listener needs: at most one write, and a conflict to report.
#[derive(Clone, Debug, Default)]
pub struct HttpsListenerPlan {
    pub step: Option<ListenerStep>,
    pub conflict: Option<String>,
}

/// The `insert_headers` of both listeners.
pub(crate) fn forwarded_headers(on: bool) -> Option<BTreeMap<String, String>> {
    on.then(|| {
        ["X-Forwarded-For", "X-Forwarded-Port", "X-Forwarded-Proto"]
            .into_iter()
            .map(|h| (h.to_string(), "true".to_string()))
            .collect()
    })
}

/// Whether a listener's `insert_headers` (as Octavia answers them) are `want`.
pub(crate) fn headers_match(have: Option<&serde_json::Value>, want: &Option<BTreeMap<String, String>>) -> bool {
    let have: BTreeMap<String, String> = have
        .and_then(|v| v.as_object())
        .map(|o| {
            o.iter()
                .filter_map(|(k, v)| {
                    let v = v.as_str().map(str::to_ascii_lowercase).or_else(|| v.as_bool().map(|b| b.to_string()))?;
                    (v == "true").then(|| (k.clone(), v))
                })
                .collect()
        })
        .unwrap_or_default();
    have == want.clone().unwrap_or_default()
}

/// The listener of `protocol` on `port` among a router's `listeners`: ours, else an adopted one
/// (the first listed).
pub(crate) fn choose_listener<'a>(
    listeners: &'a [Listener],
    spec: &RouterSpec,
    protocol: &str,
    port: u16,
) -> Option<&'a Listener> {
    let mut on_port = listeners.iter().filter(|l| l.protocol == protocol && l.protocol_port == port);
    let first = on_port.clone().next();
    on_port.find(|l| spec.ownership.owns(&l.tags)).or(first)
}

/// The router's HTTP listener (without its load balancer id, which a fully-populated create
/// does not take).
pub(crate) fn http_listener_create(spec: &RouterSpec) -> ListenerCreate {
    http_listener_create_on(spec, spec.listener_port, spec.http_listener_name())
}

/// An HTTP listener of the router on `port`, named `name`, with our tags.
fn http_listener_create_on(spec: &RouterSpec, port: u16, name: String) -> ListenerCreate {
    ListenerCreate {
        name: Some(name),
        protocol: "HTTP".into(),
        protocol_port: port,
        insert_headers: forwarded_headers(spec.insert_forwarded_headers),
        tags: spec.ownership.router_tags(),
        ..ListenerCreate::default()
    }
}

/// The HTTP listener's write: created when the router has none on the port; ours gets its
/// `insert_headers` made equal to the configured ones (e.g. after an upgrade that turned them
/// on); an adopted one is left as it is.
pub(crate) fn plan_http_listener(found: Option<&Listener>, lb_id: &str, spec: &RouterSpec) -> Option<ListenerStep> {
    plan_http_listener_on(found, lb_id, spec, spec.listener_port, spec.http_listener_name())
}

/// [`plan_http_listener`] for the HTTP listener on `port` named `name` when we create it.
pub(crate) fn plan_http_listener_on(
    found: Option<&Listener>,
    lb_id: &str,
    spec: &RouterSpec,
    port: u16,
    name: String,
) -> Option<ListenerStep> {
    let Some(l) = found else {
        let body = ListenerCreate { loadbalancer_id: Some(lb_id.into()), ..http_listener_create_on(spec, port, name) };
        return Some(ListenerStep {
            write: ListenerWrite::Create(body),
            kind: "create_listener",
            description: format!("create HTTP listener on port {port}"),
        });
    };
    let want = forwarded_headers(spec.insert_forwarded_headers);
    if !spec.ownership.owns(&l.tags) || headers_match(l.insert_headers.as_ref(), &want) {
        return None;
    }
    let description = format!("update HTTP listener {}: insert_headers {:?}", l.id, want.clone().unwrap_or_default());
    let update = ListenerUpdate { insert_headers: Some(want.unwrap_or_default()), ..ListenerUpdate::default() };
    Some(ListenerStep {
        write: ListenerWrite::Update { id: l.id.clone(), update },
        kind: "update_listener",
        description,
    })
}

/// The secret refs an HTTPS listener is written with: certificates by name, client CAs by name.
#[derive(Clone, Copy, Debug)]
pub struct HttpsRefs<'a> {
    pub certificates: &'a BTreeMap<String, String>,
    pub cas: &'a BTreeMap<String, String>,
}

/// The router's main HTTPS listener's write (named `<router>-https`), from the desired listener,
/// the one found and the secret refs that can be served: deleted (ours) once no Ingress has TLS,
/// created, or switched to the wanted certificates, client CA and headers in one PUT; an adopted
/// listener is never changed.
pub(crate) fn plan_https_listener(
    desired: Option<&HttpsListener>,
    found: Option<&Listener>,
    refs: HttpsRefs<'_>,
    lb_id: &str,
    spec: &RouterSpec,
) -> HttpsListenerPlan {
    let Some(desired) = desired else {
        let step = (found.filter(|l| spec.ownership.owns(&l.tags)))
            .map(|l| ListenerStep::delete(l, format!("delete HTTPS listener {} (no Ingress has TLS)", l.id)));
        return HttpsListenerPlan { step, conflict: None };
    };
    plan_https_listener_named(desired, found, refs, lb_id, spec, format!("{}-https", spec.name))
}

/// The client CA ref and `client_authentication` an HTTPS listener wants: `(None, "NONE")`
/// without validation; a conflict when its CA has no secret to name (never stored, its store
/// refused or on hold): the listener is then not written, rather than served without checking
/// client certificates.
fn wanted_client_ca<'a>(
    desired: &HttpsListener,
    cas: &'a BTreeMap<String, String>,
) -> Result<(Option<&'a str>, &'static str), String> {
    let Some(v) = &desired.client_validation else { return Ok((None, "NONE")) };
    match cas.get(&v.ca.name) {
        Some(r) => Ok((Some(r.as_str()), v.mode.as_octavia())),
        None => Err(format!(
            "the client CA {} ({}) cannot be stored in Barbican: the HTTPS listener on port {} is not written \
             (it is never served without the client certificate validation asked for)",
            v.ca.name, v.ca.source, desired.port
        )),
    }
}

/// [`plan_https_listener`] for a listener named `name` when we create it (the main one, or a
/// more port's, see `more_https`).
pub(crate) fn plan_https_listener_named(
    desired: &HttpsListener,
    found: Option<&Listener>,
    refs: HttpsRefs<'_>,
    lb_id: &str,
    spec: &RouterSpec,
    name: String,
) -> HttpsListenerPlan {
    let Some((default_ref, sni)) = listener_refs(desired, refs.certificates) else {
        let conflict = format!(
            "no certificate can be served on port {} (every TLS Secret is missing or broken and none was stored \
             before): the HTTPS listener is not created",
            desired.port
        );
        return HttpsListenerPlan { step: None, conflict: Some(conflict) };
    };
    let (ca_ref, auth) = match wanted_client_ca(desired, refs.cas) {
        Ok(want) => want,
        Err(conflict) => return HttpsListenerPlan { step: None, conflict: Some(conflict) },
    };
    let headers = forwarded_headers(spec.insert_forwarded_headers);
    let Some(l) = found else {
        let body = ListenerCreate {
            name: Some(name),
            loadbalancer_id: Some(lb_id.into()),
            protocol: TERMINATED_HTTPS.into(),
            protocol_port: desired.port,
            default_tls_container_ref: Some(default_ref),
            sni_container_refs: sni,
            client_ca_tls_container_ref: ca_ref.map(String::from),
            client_authentication: ca_ref.map(|_| auth.to_string()),
            insert_headers: headers,
            tags: spec.ownership.router_tags(),
            ..ListenerCreate::default()
        };
        let description = format!(
            "create HTTPS listener on port {} with {} certificate(s){}",
            desired.port,
            body.sni_container_refs.len(),
            client_ca_note(desired, auth)
        );
        let step = ListenerStep { write: ListenerWrite::Create(body), kind: "create_listener", description };
        return HttpsListenerPlan { step: Some(step), conflict: None };
    };
    if !spec.ownership.owns(&l.tags) {
        let conflict = format!(
            "listener {} on port {} was not created by kuryr-l7-router; its certificates are not changed",
            l.id, desired.port
        );
        return HttpsListenerPlan { step: None, conflict: Some(conflict) };
    }
    let uuids = |refs: &[String]| refs.iter().map(|r| secret_uuid(r).to_string()).collect::<BTreeSet<_>>();
    let same_default = l.default_tls_container_ref.as_deref().map(secret_uuid) == Some(secret_uuid(&default_ref));
    let same_sni = uuids(&l.sni_container_refs) == uuids(&sni);
    let same_headers = headers_match(l.insert_headers.as_ref(), &headers);
    let same_ca = l.client_ca_tls_container_ref.as_deref().map(secret_uuid) == ca_ref.map(secret_uuid);
    let same_auth = l.client_authentication.as_deref().unwrap_or("NONE") == auth;
    if same_default && same_sni && same_headers && same_ca && same_auth {
        return HttpsListenerPlan::default();
    }
    // One PUT switches every certificate (and the client CA) at once: haproxy reloads with the
    // new set, so no handshake finds a certificate missing.
    let switch = !same_default || !same_sni;
    let removed = if !same_ca && ca_ref.is_none() { ", client CA removed" } else { "" };
    let note = client_ca_note(desired, auth);
    let description = format!("update HTTPS listener {}: {} certificate(s){note}{removed}", l.id, sni.len());
    let update = ListenerUpdate {
        default_tls_container_ref: switch.then(|| default_ref.clone()),
        sni_container_refs: switch.then(|| sni.clone()),
        insert_headers: (!same_headers).then(|| headers.clone().unwrap_or_default()),
        client_ca_tls_container_ref: (!same_ca).then(|| ca_ref.map(String::from)),
        client_authentication: (!same_auth || !same_ca).then(|| auth.to_string()),
        ..ListenerUpdate::default()
    };
    let step = ListenerStep {
        write: ListenerWrite::Update { id: l.id.clone(), update },
        kind: "update_listener",
        description,
    };
    HttpsListenerPlan { step: Some(step), conflict: None }
}

/// `, client CA <name> (MANDATORY)` for a write's description (names only: the PEM is public
/// but long); nothing without validation.
fn client_ca_note(desired: &HttpsListener, auth: &str) -> String {
    match &desired.client_validation {
        Some(v) => format!(", client CA {} sha256 {:.16} ({auth})", v.ca.name, v.ca.content_id),
        None => String::new(),
    }
}

/// The ids of the listeners `steps` delete (any other write fails the test): what the tests of
/// the more ports' `plan_stale` (HTTP and HTTPS) compare.
#[cfg(test)]
pub(crate) fn deleted_ids(steps: Vec<ListenerStep>) -> Vec<String> {
    steps
        .into_iter()
        .map(|st| match st.write {
            ListenerWrite::Delete { id } => id,
            w => panic!("{w:?}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> RouterSpec {
        RouterSpec::for_tests("driverdoor")
    }

    fn listener(protocol: &str, port: u16, ours: bool) -> Listener {
        let tags = if ours { spec().ownership.router_tags() } else { vec!["someone-else".into()] };
        Listener {
            id: format!("{protocol}-{port}"),
            protocol: protocol.into(),
            protocol_port: port,
            tags,
            ..Default::default()
        }
    }

    fn https(certs: &[&str]) -> HttpsListener {
        HttpsListener {
            port: 443,
            certificates: Default::default(),
            default_certificate: certs.first().map(|c| c.to_string()).unwrap_or_default(),
            policies: vec![],
            default_pool: None,
            client_validation: None,
        }
    }

    #[test]
    fn the_http_listener_is_created_fixed_or_left_alone() {
        let s = spec();
        let created = plan_http_listener(None, "lb", &s).expect("a create");
        assert!(matches!(&created.write, ListenerWrite::Create(b) if b.loadbalancer_id.as_deref() == Some("lb")));
        // Ours without the configured headers: one PUT of the headers.
        let step = plan_http_listener(Some(&listener("HTTP", 80, true)), "lb", &s).expect("an update");
        assert!(matches!(&step.write, ListenerWrite::Update { update, .. } if update.insert_headers.is_some()));
        // An adopted listener is never changed.
        assert!(plan_http_listener(Some(&listener("HTTP", 80, false)), "lb", &s).is_none());
    }

    fn no_cas() -> BTreeMap<String, String> {
        BTreeMap::new()
    }

    #[test]
    fn the_https_listener_is_deleted_only_when_ours_and_never_created_without_a_certificate() {
        let s = spec();
        let no_refs = BTreeMap::new();
        let cas = no_cas();
        let none = HttpsRefs { certificates: &no_refs, cas: &cas };
        let ours = listener(TERMINATED_HTTPS, 443, true);
        let plan = plan_https_listener(None, Some(&ours), none, "lb", &s);
        assert!(matches!(plan.step.map(|s| s.write), Some(ListenerWrite::Delete { id }) if id == ours.id));
        let foreign = listener(TERMINATED_HTTPS, 443, false);
        assert!(plan_https_listener(None, Some(&foreign), none, "lb", &s).step.is_none());
        let plan = plan_https_listener(Some(&https(&["a"])), None, none, "lb", &s);
        assert!(plan.step.is_none() && plan.conflict.is_some_and(|c| c.contains("no certificate can be served")));
        let refs = BTreeMap::from([("a".to_string(), "https://kms/v1/secrets/1".to_string())]);
        let some = HttpsRefs { certificates: &refs, cas: &cas };
        let plan = plan_https_listener(Some(&https(&["a"])), Some(&foreign), some, "lb", &s);
        assert!(plan.step.is_none() && plan.conflict.is_some_and(|c| c.contains("not created by kuryr-l7-router")));
        let plan = plan_https_listener(Some(&https(&["a"])), None, some, "lb", &s);
        assert!(matches!(plan.step.map(|s| s.write), Some(ListenerWrite::Create(b)) if b.protocol == TERMINATED_HTTPS));
    }

    fn validating(ca_content: &str, mode: crate::model::ClientAuthentication) -> HttpsListener {
        let ca = crate::model::CaBundle {
            name: "ns_ca".into(),
            source: crate::model::KubeRef::new("ConfigMap", "ns", "ca"),
            pem: "-----BEGIN CERTIFICATE-----\n...".into(),
            content_id: ca_content.into(),
        };
        HttpsListener { client_validation: Some(crate::model::ClientValidation { ca, mode }), ..https(&["a"]) }
    }

    /// The listener as Octavia answers after a create or update with these refs.
    fn written(cert: &str, ca: Option<&str>, auth: &str) -> Listener {
        Listener {
            default_tls_container_ref: Some(cert.into()),
            sni_container_refs: vec![cert.into()],
            client_ca_tls_container_ref: ca.map(String::from),
            client_authentication: Some(auth.into()),
            insert_headers: serde_json::to_value(forwarded_headers(true)).ok(),
            ..listener(TERMINATED_HTTPS, 443, true)
        }
    }

    #[test]
    fn client_validation_is_written_at_create_and_switched_alone_in_one_put() {
        use crate::model::ClientAuthentication::{Mandatory, Optional};
        let s = RouterSpec { insert_forwarded_headers: true, ..spec() };
        let cert = "https://kms/v1/secrets/cert".to_string();
        let certs = BTreeMap::from([("a".to_string(), cert.clone())]);
        let ca1 = "https://kms/v1/secrets/ca1".to_string();
        let cas = BTreeMap::from([("ns_ca".to_string(), ca1.clone())]);
        let refs = HttpsRefs { certificates: &certs, cas: &cas };
        // Create: the CA and MANDATORY in the create body itself.
        let plan = plan_https_listener(Some(&validating("c1", Mandatory)), None, refs, "lb", &s);
        let Some(ListenerWrite::Create(body)) = plan.step.map(|s| s.write) else { panic!("a create") };
        assert_eq!(body.client_ca_tls_container_ref.as_deref(), Some(ca1.as_str()));
        assert_eq!(body.client_authentication.as_deref(), Some("MANDATORY"));
        // As created (the ref through another endpoint): nothing to write.
        let now = written(&cert, Some("http://internal:9311/v1/secrets/ca1"), "MANDATORY");
        assert!(plan_https_listener(Some(&validating("c1", Mandatory)), Some(&now), refs, "lb", &s).step.is_none());
        // A new CA content (a new secret): one PUT naming the CA only.
        let ca2 = BTreeMap::from([("ns_ca".to_string(), "https://kms/v1/secrets/ca2".to_string())]);
        let refs2 = HttpsRefs { certificates: &certs, cas: &ca2 };
        let plan = plan_https_listener(Some(&validating("c2", Mandatory)), Some(&now), refs2, "lb", &s);
        let Some(ListenerWrite::Update { update, .. }) = plan.step.map(|s| s.write) else { panic!("an update") };
        let want = ListenerUpdate {
            client_ca_tls_container_ref: Some(Some("https://kms/v1/secrets/ca2".into())),
            client_authentication: Some("MANDATORY".into()),
            ..ListenerUpdate::default()
        };
        assert_eq!(update, want);
        // AllowValidOnly → AllowInsecureFallback: the mode alone.
        let plan = plan_https_listener(Some(&validating("c1", Optional)), Some(&now), refs, "lb", &s);
        let Some(ListenerWrite::Update { update, .. }) = plan.step.map(|s| s.write) else { panic!("an update") };
        assert_eq!(
            update,
            ListenerUpdate { client_authentication: Some("OPTIONAL".into()), ..ListenerUpdate::default() }
        );
        // Validation removed: the CA cleared (null) and NONE, in one PUT.
        let plan = plan_https_listener(Some(&https(&["a"])), Some(&now), refs, "lb", &s);
        let step = plan.step.expect("an update");
        assert!(step.description.contains("client CA removed"), "{}", step.description);
        let ListenerWrite::Update { update, .. } = step.write else { panic!("an update") };
        let want = ListenerUpdate {
            client_ca_tls_container_ref: Some(None),
            client_authentication: Some("NONE".into()),
            ..ListenerUpdate::default()
        };
        assert_eq!(update, want);
        assert_eq!(serde_json::to_value(&update).unwrap()["client_ca_tls_container_ref"], serde_json::Value::Null);
        // A listener without validation, none wanted: nothing (Octavia answers NONE).
        let plain = written(&cert, None, "NONE");
        assert!(plan_https_listener(Some(&https(&["a"])), Some(&plain), refs, "lb", &s).step.is_none());
    }

    #[test]
    fn a_listener_whose_client_ca_has_no_secret_is_not_written_at_all() {
        use crate::model::ClientAuthentication::Mandatory;
        let s = spec();
        let certs = BTreeMap::from([("a".to_string(), "https://kms/v1/secrets/cert".to_string())]);
        let cas = no_cas();
        let refs = HttpsRefs { certificates: &certs, cas: &cas };
        for found in [None, Some(written("https://kms/v1/secrets/cert", None, "NONE"))] {
            let plan = plan_https_listener(Some(&validating("c1", Mandatory)), found.as_ref(), refs, "lb", &s);
            assert!(plan.step.is_none(), "never served without the validation asked for");
            assert!(plan.conflict.is_some_and(|c| c.contains("client CA ns_ca") && c.contains("port 443")));
        }
    }
}
