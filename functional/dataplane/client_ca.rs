//! Client-certificate validation (Gateway `spec.tls.frontend`, GatewayFrontendClientCertificate-
//! Validation and its InsecureFallback) on the real local Octavia and Barbican, then through
//! Octavia-rendered haproxy with real TLS handshakes.
//!
//! One router with two HTTPS listeners, as the upstream tests' Gateway has them: 443 validating
//! against client CA A with MANDATORY (`AllowValidOnly`), 8443 against client CA B with OPTIONAL
//! (`AllowInsecureFallback`). Read back from Octavia: each listener's `client_authentication` and
//! its `client_ca_tls_container_ref`, a Barbican secret of this router named after its CA. Then
//! requests with the client certificate CA A signed, the one CA B signed, and none. Then 443's
//! CA changes (one store, one listener PUT, the old secret deleted) and the validation is
//! removed while 8443 is dropped (Octavia clears the CA: `NONE`, no ref).
//!
//! What Octavia renders for a listener with a client CA (macros.j2 of 11.0.0 and 16.0.0, line 37):
//! `ca-file <path> verify <none|optional|required>` on the `bind`, no `ca-ignore-err` /
//! `crt-ignore-err`. haproxy aborts the handshake of a client certificate that does not verify
//! whatever `verify` says unless its error is ignored that way: with OPTIONAL a client without a
//! certificate is served, one with a certificate of another CA is refused. The upstream
//! InsecureFallback test expects that last request to pass ("non-matching client certificate
//! ... passing"): Octavia cannot render it. This test asserts what Octavia's rendering does.

use super::*;
use kuryr_l7_router::model::{
    CaBundle, Certificate, CertificateContent, ClientAuthentication, ClientValidation, CompareType, HttpsListener,
    KubeRef, Policy, Rule, RuleType,
};
use kuryr_l7_router::openstack::ListQuery;
use kuryr_l7_router::testing::{member, pool};
use std::sync::Arc;

/// A client CA and a client certificate it signs: (CA PEM, client cert PEM, client key PEM).
fn client_pki(name: &str) -> (String, String, String) {
    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.distinguished_name.push(DnType::CommonName, format!("kuryr test client CA {name}"));
    let ca = CertifiedIssuer::self_signed(p, KeyPair::generate().unwrap()).unwrap();
    let key = KeyPair::generate().unwrap();
    let mut leaf = CertificateParams::new(Vec::<String>::new()).unwrap();
    leaf.distinguished_name.push(DnType::CommonName, format!("client of {name}"));
    let cert = leaf.signed_by(&key, &ca).unwrap();
    (ca.pem(), cert.pem(), key.serialize_pem())
}

fn ca_bundle(name: &str, pem: &str) -> CaBundle {
    let digest = ring::digest::digest(&ring::digest::SHA256, pem.as_bytes());
    CaBundle {
        name: format!("infra_{name}"),
        source: KubeRef::new("ConfigMap", "infra", name),
        pem: pem.into(),
        content_id: digest.as_ref().iter().map(|b| format!("{b:02x}")).collect(),
    }
}

fn host_route(host: &str, pool: &str) -> Policy {
    Policy {
        name: format!("gateway:infra/route:{host}"),
        position: 1,
        pool: pool.into(),
        rules: vec![Rule {
            rule_type: RuleType::HostName,
            compare_type: CompareType::EqualTo,
            value: host.into(),
            invert: false,
            key: None,
        }],
        owner: KubeRef::new("HTTPRoute", "infra", "route"),
        description: format!("{host} Prefix /"),
        redirect: None,
    }
}

fn listener(port: u16, cert: &Certificate, route: Policy, ca: CaBundle, mode: ClientAuthentication) -> HttpsListener {
    HttpsListener {
        port,
        certificates: BTreeMap::from([(cert.name.clone(), cert.clone())]),
        default_certificate: cert.name.clone(),
        default_pool: Some(route.pool.clone()),
        policies: vec![route],
        client_validation: Some(ClientValidation { ca, mode }),
    }
}

/// The listener on `port` as Octavia has it: (client_authentication, the Barbican name of its
/// client CA secret).
async fn read_back(r: &Router, lb_id: &str, port: u16) -> (String, String) {
    let q = ListQuery { loadbalancer_id: Some(lb_id.into()), ..ListQuery::default() };
    let listeners = r.octavia().list_listeners(&q).await.unwrap();
    let l = listeners.iter().find(|l| l.protocol_port == port).unwrap_or_else(|| panic!("no listener on {port}"));
    let ca_ref = l.client_ca_tls_container_ref.clone().unwrap_or_else(|| panic!("no client CA on {port}: {l:?}"));
    let name = r.barbican().unwrap().get_secret(&ca_ref).await.unwrap().name.unwrap_or_default();
    (l.client_authentication.clone().unwrap_or_default(), name)
}

#[tokio::test(flavor = "multi_thread")]
async fn two_https_ports_validate_client_certificates_against_their_own_ca_through_octavia_rendered_haproxy() {
    if !enabled() {
        return;
    }
    let r = local_router("holds-dp", "mtls").await.with_barbican(Barbican::new(session("admin", "admin")));
    let cluster = r.spec().ownership.cluster.clone();
    // In a task of its own, so that the secrets are deleted whatever the test's outcome.
    let test = tokio::spawn(common::with_router(r, |r| async move {
        let pems = tls_pems(&["example.org"]);
        let parsed =
            kuryr_l7_router::certificate::ParsedCertificate::from_pem(pems[0].0.as_bytes(), pems[0].1.as_bytes())
                .unwrap();
        let cert = Certificate {
            name: "infra_tls".into(),
            secret: KubeRef::new("Secret", "infra", "tls"),
            hosts: vec![],
            owners: vec![KubeRef::new("Gateway", "infra", "gw")],
            content: Some(CertificateContent::new(Arc::new(parsed))),
        };
        let (ca_a, client_a, key_a) = client_pki("A");
        let (ca_b, client_b, key_b) = client_pki("B");
        let (bundle_a, bundle_b) = (ca_bundle("ca-a", &ca_a), ca_bundle("ca-b", &ca_b));
        let mut desired = DesiredRouter { default_pool: Some("infra_v1".into()), ..DesiredRouter::default() };
        desired.pools.insert("infra_v1".into(), pool("infra_v1", vec![member("10.0.0.81", 1)]));
        desired.pools.insert("infra_v2".into(), pool("infra_v2", vec![member("10.0.0.82", 1)]));
        let on443 = listener(
            443,
            &cert,
            host_route("example.org", "infra_v1"),
            bundle_a.clone(),
            ClientAuthentication::Mandatory,
        );
        let on8443 = listener(
            8443,
            &cert,
            host_route("second-example.org", "infra_v2"),
            bundle_b.clone(),
            ClientAuthentication::Optional,
        );
        desired.https = Some(on443);
        desired.more_https.insert(8443, on8443);

        let report = converge(&r, &desired).await;
        let kinds = report.writes_by_kind();
        assert_eq!(kinds.get("create_secret"), Some(&3), "one certificate, two CAs: {kinds:?}");
        let https_creates = report.writes.iter().filter(|w| w.description.starts_with("create HTTPS listener")).count();
        assert_eq!(https_creates, 2, "one TERMINATED_HTTPS listener per port, its CA in the create: {kinds:?}");
        assert_eq!(kinds.get("update_listener"), None, "{kinds:?}");
        assert_eq!(converge(&r, &desired).await.writes.len(), 0, "a second convergence writes nothing");

        let scope =
            kuryr_l7_router::driver::certificates::SecretScope::new(&r.spec().ownership.cluster, &r.spec().name);
        let secret = |ca: &CaBundle| kuryr_l7_router::driver::client_ca::secret_name(&scope, ca);
        assert_eq!(read_back(&r, &report.lb_id, 443).await, ("MANDATORY".to_string(), secret(&bundle_a)));
        assert_eq!(read_back(&r, &report.lb_id, 8443).await, ("OPTIONAL".to_string(), secret(&bundle_b)));

        let dir = tempfile_dir();
        let write = |name: &str, text: &str| {
            let p = dir.join(name);
            std::fs::write(&p, text).unwrap();
            p.to_string_lossy().into_owned()
        };
        let (crt_a, key_a) = (write("a.crt", &client_a), write("a.key", &key_a));
        let (crt_b, key_b) = (write("b.crt", &client_b), write("b.key", &key_b));
        let req = |port: u16, host: &str, client: Option<(&str, &str)>, expect: &str| {
            let mut r = serde_json::json!({"scheme": "https", "host": host, "path": "/", "listener_port": port,
                                          "expect": expect});
            if let Some((crt, key)) = client {
                r["client_cert"] = crt.into();
                r["client_key"] = key.into();
            }
            r
        };
        let requests = [
            // 443, AllowValidOnly: CA A's client only.
            req(443, "example.org", Some((&crt_a, &key_a)), "v1"),
            req(443, "example.org", Some((&crt_b, &key_b)), "error"),
            req(443, "example.org", None, "error"),
            // 8443, AllowInsecureFallback: CA B's client and a client without a certificate.
            req(8443, "second-example.org", Some((&crt_b, &key_b)), "v2"),
            req(8443, "second-example.org", None, "v2"),
            // A certificate of another CA: refused by haproxy as Octavia renders OPTIONAL
            // (`verify optional`, no `ca-ignore-err`): the upstream test expects it to pass.
            req(8443, "second-example.org", Some((&crt_a, &key_a)), "error"),
        ];
        let echo = BTreeMap::from([
            ("10.0.0.81:8080".to_string(), "v1".to_string()),
            ("10.0.0.82:8080".to_string(), "v2".to_string()),
        ]);
        let (results, all_ok) = run_py(&report.lb_id, &echo, &requests);
        for (req, res) in requests.iter().zip(&results) {
            println!(
                "{} :{} client {:<5} -> {} {} {}",
                if res["match"] == true { "ok " } else { "BAD" },
                req["listener_port"],
                req.get("client_cert").and_then(|c| c.as_str()).map_or("none", |c| if c.ends_with("a.crt") {
                    "A"
                } else {
                    "B"
                }),
                res["status"],
                res["backend"],
                res["error"]
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
        assert!(all_ok, "client-certificate validation through Octavia-rendered haproxy: {results:#?}");

        // The CA of 443 changes (a new CA in the ConfigMap): one store, one listener PUT, the
        // old secret deleted.
        let (ca_c, _, _) = client_pki("C");
        let bundle_c = ca_bundle("ca-a", &format!("{ca_a}{ca_c}"));
        let mut changed = desired.clone();
        changed.https.as_mut().unwrap().client_validation.as_mut().unwrap().ca = bundle_c.clone();
        let rotated = converge(&r, &changed).await;
        let kinds: Vec<&str> = rotated.writes.iter().map(|w| w.kind).collect();
        assert_eq!(kinds, ["create_secret", "update_listener", "delete_secret"]);
        assert_eq!(read_back(&r, &report.lb_id, 443).await, ("MANDATORY".to_string(), secret(&bundle_c)));

        // Validation removed from 443, port 8443 dropped: Octavia clears the CA (NONE, no ref),
        // the 8443 listener and both CA secrets go.
        let mut plain = changed.clone();
        plain.https.as_mut().unwrap().client_validation = None;
        plain.more_https.clear();
        let removed = converge(&r, &plain).await;
        let kinds = removed.writes_by_kind();
        assert_eq!(kinds.get("update_listener"), Some(&1), "{kinds:?}");
        assert_eq!(kinds.get("delete_listener"), Some(&1), "{kinds:?}");
        assert_eq!(kinds.get("delete_secret"), Some(&2), "{kinds:?}");
        let q = ListQuery { loadbalancer_id: Some(report.lb_id.clone()), ..ListQuery::default() };
        let listeners = r.octavia().list_listeners(&q).await.unwrap();
        let tls: Vec<_> = listeners.iter().filter(|l| l.protocol == "TERMINATED_HTTPS").collect();
        assert_eq!(tls.len(), 1, "{tls:?}");
        assert_eq!(tls[0].client_authentication.as_deref(), Some("NONE"));
        assert_eq!(tls[0].client_ca_tls_container_ref, None);
        assert_eq!(converge(&r, &plain).await.writes.len(), 0, "then nothing to write");
    }))
    .await;
    super::delete_cluster_secrets(&cluster).await;
    if let Err(e) = test {
        std::panic::resume_unwind(e.into_panic());
    }
}

/// A private directory for the client keys (removed at the end of the test).
fn tempfile_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(unique("kuryr-mtls", "keys"));
    std::fs::create_dir_all(&dir).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    dir
}
