//! The pure parts of the Gateway data-plane runner (no stack needed): the CI's list, the client
//! certificate rows and their verdicts.

use super::*;

/// The CI's list names cases that exist and have requests to send (no stack needed).
#[test]
fn the_ci_cases_exist_and_have_request_tables() {
    let mut tables = BTreeMap::new();
    for file in case_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        let case: Case = serde_saphyr::from_str(text.split("\n---\n").next().unwrap()).unwrap();
        tables.insert(case.test, case.requests.len());
    }
    for (test, why) in CI_CASES {
        assert!(tables.get(*test).is_some_and(|n| *n > 0), "{test} ({why}): no case file with requests");
    }
    let unique: BTreeSet<&str> = CI_CASES.iter().map(|(t, _)| *t).collect();
    assert_eq!(unique.len(), CI_CASES.len(), "a case listed twice");
}

/// A `refused` row passes on a refused handshake only: not on an answer, not on a TCP connection
/// refused (no listener on the port); a served row fails on a refused handshake (no stack needed).
#[test]
fn a_refused_handshake_is_told_from_an_answer_and_from_no_listener() {
    let row = |answer: &str| CaseRequest {
        gateway: None,
        port: Some(443),
        host: Some("example.org".into()),
        path: "/".into(),
        headers: BTreeMap::new(),
        websocket: false,
        client_cert_of: Some("tls-validity-checks-per-port-ca-certificate".into()),
        answer: answer.into(),
    };
    let alert = json!({"status": null, "backend": null,
                       "error": "SSLError: [SSL: TLSV1_ALERT_UNKNOWN_CA] tlsv1 alert unknown ca"});
    let served = json!({"status": 200, "backend": "infra-backend-v1", "body": {"backend": "infra-backend-v1"}});
    let no_listener = json!({"status": null, "backend": null, "error": "ConnectionRefusedError: [Errno 111]"});
    assert_eq!(verdict(&row(REFUSED), std::slice::from_ref(&alert)), None);
    assert!(verdict(&row(REFUSED), std::slice::from_ref(&served)).is_some(), "served, expected refused");
    assert!(verdict(&row(REFUSED), std::slice::from_ref(&no_listener)).is_some(), "no listener is no refusal");
    assert_eq!(verdict(&row("infra-backend-v1"), std::slice::from_ref(&served)), None);
    assert!(verdict(&row("infra-backend-v1"), std::slice::from_ref(&alert)).is_some(), "refused, expected served");
}

/// Each client certificate validation case sends the client certificates of CAs it has, and
/// expects both answers: some served, some refused (no stack needed).
#[test]
fn the_client_certificate_cases_present_certificates_of_their_own_cas() {
    let mut seen = 0;
    for file in case_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        let case: Case = serde_saphyr::from_str(text.split("\n---\n").next().unwrap()).unwrap();
        let with_cert: Vec<&CaseRequest> = case.requests.iter().filter(|q| q.client_cert_of.is_some()).collect();
        if with_cert.is_empty() {
            continue;
        }
        seen += 1;
        let cas: BTreeSet<(String, String)> = case.ca_config_maps.iter().map(|c| split(c)).collect();
        for q in &with_cert {
            let ca = q.client_cert_of.as_deref().unwrap();
            assert!(cas.contains(&split(ca)), "{}: {ca} is none of the case's caConfigMaps", case.test);
        }
        assert!(with_cert.iter().any(|q| q.answer == REFUSED), "{}: no refused request", case.test);
        assert!(with_cert.iter().any(|q| q.answer != REFUSED), "{}: no served request", case.test);
    }
    assert_eq!(seen, 2, "GatewayFrontendClientCertificateValidation and its InsecureFallback");
}

/// The client certificate case goes to the driver's router with each HTTPS port's own CA
/// (MANDATORY), and its requests present the suite's client certificates (no stack needed).
#[test]
fn the_client_certificate_case_validates_each_port_against_its_ca_and_sends_client_certificates() {
    use kuryr_l7_router::model::ClientAuthentication;
    let (targets, failing, diverging) = targets(Scope::Others);
    let test = "GatewayFrontendClientCertificateValidation";
    assert!(!failing.contains_key(test), "{failing:?}");
    assert!(diverging.contains_key("GatewayFrontendClientCertificateValidationInsecureFallback"), "{diverging:?}");
    assert!(!diverging.contains_key(test));
    let t = targets.iter().find(|t| t.test == test).expect("the opt-in test runs it");
    assert!(converged_by_driver(t), "HTTPS: the driver's router (Barbican)");
    let d = &t.router.desired;
    let ca_of = |v: Option<&kuryr_l7_router::model::ClientValidation>| {
        let v = v.expect("a client validation");
        assert_eq!(v.mode, ClientAuthentication::Mandatory);
        v.ca.source.name.clone()
    };
    let on443 = ca_of(d.https.as_ref().filter(|h| h.port == 443).and_then(|h| h.client_validation.as_ref()));
    let on8443 = ca_of(d.more_https.get(&8443).and_then(|h| h.client_validation.as_ref()));
    assert_eq!(on443, "tls-validity-checks-ca-certificate");
    assert_eq!(on8443, "tls-validity-checks-per-port-ca-certificate");
    let keys = tempfile::tempdir().unwrap();
    let (requests, _) = requests_of(t, None, keys.path());
    assert_eq!(requests.len(), 4);
    for (q, r) in t.table.iter().zip(&requests) {
        let pki = suite_ca(q.client_cert_of.as_deref().expect("each request presents a certificate"));
        assert_eq!(r["scheme"], "https");
        assert_eq!(std::fs::read_to_string(r["client_cert"].as_str().unwrap()).unwrap(), pki.client_cert);
        assert_eq!(std::fs::read_to_string(r["client_key"].as_str().unwrap()).unwrap(), pki.client_key);
    }
}
