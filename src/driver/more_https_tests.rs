use super::super::listener_plan::{ListenerWrite, deleted_ids};
use super::*;
use crate::model::{CaBundle, ClientAuthentication, ClientValidation, HttpsListener, KubeRef};
use std::collections::BTreeMap;

fn spec() -> RouterSpec {
    RouterSpec::for_tests("kuryr-gw-1-ns.gw")
}

fn listener(port: u16, name: &str, ours: bool) -> Listener {
    let tags = if ours { spec().ownership.router_tags() } else { vec!["someone-else".into()] };
    Listener {
        id: format!("{name}@{port}"),
        name: name.into(),
        protocol: TERMINATED_HTTPS.into(),
        protocol_port: port,
        tags,
        default_tls_container_ref: Some("https://kms/v1/secrets/cert".into()),
        sni_container_refs: vec!["https://kms/v1/secrets/cert".into()],
        insert_headers: serde_json::to_value(super::super::listener_plan::forwarded_headers(true)).ok(),
        ..Default::default()
    }
}

fn https(port: u16, ca: Option<&str>) -> HttpsListener {
    let certificate = crate::model::Certificate {
        name: "ns_cert".into(),
        secret: KubeRef::new("Secret", "ns", "cert"),
        hosts: vec![],
        owners: vec![KubeRef::new("Gateway", "ns", "gw")],
        content: None,
    };
    HttpsListener {
        port,
        certificates: BTreeMap::from([("ns_cert".to_string(), certificate)]),
        default_certificate: "ns_cert".into(),
        policies: vec![],
        default_pool: None,
        client_validation: ca.map(|name| ClientValidation {
            ca: CaBundle {
                name: name.into(),
                source: KubeRef::new("ConfigMap", "ns", name),
                pem: String::new(),
                content_id: "0".repeat(64),
            },
            mode: ClientAuthentication::Mandatory,
        }),
    }
}

/// A Gateway router with its main HTTPS listener on 443 and more ones on `more`.
fn wanting(more: &[(u16, Option<&str>)]) -> DesiredRouter {
    DesiredRouter {
        https: Some(https(443, Some("ns_ca443"))),
        more_https: more.iter().map(|(p, ca)| (*p, https(*p, *ca))).collect(),
        ..DesiredRouter::default()
    }
}

fn refs() -> (BTreeMap<String, String>, BTreeMap<String, String>) {
    let certs = BTreeMap::from([("ns_cert".to_string(), "https://kms/v1/secrets/cert".to_string())]);
    let cas = BTreeMap::from([
        ("ns_ca443".to_string(), "https://kms/v1/secrets/ca443".to_string()),
        ("ns_ca8443".to_string(), "https://kms/v1/secrets/ca8443".to_string()),
    ]);
    (certs, cas)
}

#[test]
fn each_more_port_gets_its_own_listener_with_its_own_client_ca() {
    let s = spec();
    let (certs, cas) = refs();
    let r = HttpsRefs { certificates: &certs, cas: &cas };
    let main = listener(443, "kuryr-gw-1-ns.gw-https", true);
    let d = wanting(&[(8443, Some("ns_ca8443")), (9443, None)]);
    let plans = plan_ports(std::slice::from_ref(&main), &d, r, "lb", &s);
    let creates: Vec<_> = plans
        .iter()
        .map(|(port, found, plan)| {
            assert!(found.is_none() && plan.conflict.is_none(), "{plan:?}");
            let Some(ListenerWrite::Create(b)) = plan.step.as_ref().map(|s| &s.write) else { panic!("{plan:?}") };
            assert_eq!(b.tags, s.ownership.router_tags());
            assert_eq!(b.protocol_port, *port);
            (b.name.clone().unwrap(), b.client_ca_tls_container_ref.clone(), b.client_authentication.clone())
        })
        .collect();
    assert_eq!(
        creates,
        vec![
            (
                "kuryr-gw-1-ns.gw-https-8443".to_string(),
                Some("https://kms/v1/secrets/ca8443".to_string()),
                Some("MANDATORY".to_string())
            ),
            ("kuryr-gw-1-ns.gw-https-9443".to_string(), None, None),
        ]
    );
    // Found as created (a restart): nothing to write, no second listener.
    let made = Listener {
        client_ca_tls_container_ref: Some("https://kms/v1/secrets/ca8443".into()),
        client_authentication: Some("MANDATORY".into()),
        ..listener(8443, "kuryr-gw-1-ns.gw-https-8443", true)
    };
    let plain =
        Listener { client_authentication: Some("NONE".into()), ..listener(9443, "kuryr-gw-1-ns.gw-https-9443", true) };
    let listed = [main, made.clone(), plain];
    let plans = plan_ports(&listed, &d, r, "lb", &s);
    assert!(plans.iter().all(|(_, found, plan)| found.is_some() && plan.step.is_none()), "{plans:?}");
    assert_eq!(plans[0].1.map(|l| l.id.as_str()), Some(made.id.as_str()));
    assert!(plan_stale(&listed, &d, &s).is_empty());
    // The main HTTPS port listed as a more port too is served once, by the main listener.
    assert_eq!(ports(&wanting(&[(443, None), (8443, None)])), vec![8443]);
}

#[test]
fn only_our_https_listener_on_a_port_dropped_is_deleted() {
    let s = spec();
    let listed = [
        listener(443, "kuryr-gw-1-ns.gw-https", true),
        listener(8443, "kuryr-gw-1-ns.gw-https-8443", true),
        // Another router's, ours without our tags, an admin's: never touched.
        listener(8444, "kuryr-gw-2-ns.other-https-8444", true),
        listener(8445, "kuryr-gw-1-ns.gw-https-8445", false),
        listener(8446, "admin", true),
    ];
    let deleted = |d: &DesiredRouter| deleted_ids(plan_stale(&listed, d, &s));
    assert_eq!(deleted(&wanting(&[])), vec!["kuryr-gw-1-ns.gw-https-8443@8443".to_string()]);
    assert!(deleted(&wanting(&[(8443, None)])).is_empty());
    // The main listener moved from 443 to 8443 (the lowest HTTPS port changed): the old main goes,
    // the listener on the new main port is not stale whatever its name.
    let moved = DesiredRouter { https: Some(https(8443, None)), ..DesiredRouter::default() };
    assert_eq!(deleted(&moved), vec!["kuryr-gw-1-ns.gw-https@443".to_string()]);
    // No main listener wanted: the main one is left to `https::ensure_listener`.
    let none = DesiredRouter::default();
    assert_eq!(deleted(&none), vec!["kuryr-gw-1-ns.gw-https-8443@8443".to_string()]);
}
