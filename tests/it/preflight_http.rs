//! The start-up preflight over real HTTP against a scripted cloud on loopback (Keystone, Octavia's
//! version document and providers; no OpenStack): what the controller refuses, and what it only
//! warns about, before its first write. Every request is a read; none may be a write.

use crate::support::http_request;

use kuryr_l7_router::openstack::preflight::{self, ApiVersion, Feature, Severity};
use kuryr_l7_router::openstack::*;
use kuryr_l7_router::secret::Secret;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use tokio::net::TcpStream;

/// What the scripted cloud answers: the token's roles, Octavia's newest version, its providers.
#[derive(Clone)]
struct CloudSpec {
    roles: Vec<&'static str>,
    minor: u32,
    providers: Vec<&'static str>,
    /// Answer the version document with a 500.
    versions_fail: bool,
    /// The token's `methods` (how it was obtained).
    methods: Vec<&'static str>,
}

fn zed_admin() -> CloudSpec {
    CloudSpec {
        roles: vec!["admin", "member", "reader"],
        minor: 26,
        providers: vec!["amphora", "octavia"],
        versions_fail: false,
        methods: vec!["password"],
    }
}

struct Cloud {
    port: u16,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Cloud {
    async fn start(spec: CloudSpec) -> Cloud {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let recorded = seen.clone();
        let port =
            http_request::serve_on_loopback(move |conn, port| serve(conn, port, spec.clone(), recorded.clone())).await;
        Cloud { port, seen }
    }

    fn octavia(&self) -> Octavia {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let url = format!("http://127.0.0.1:{}/v3", self.port);
        let auth = AuthOptions::password(&url, "u", Secret::new("p"), "p", "Default");
        Octavia::new(Session::new(auth).unwrap(), OctaviaOptions::default())
    }

    fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

fn answer_for(line: &str, port: u16, spec: &CloudSpec) -> (u16, Value, &'static str) {
    if line.starts_with("POST /v3/auth/tokens") {
        let roles: Vec<Value> = spec.roles.iter().map(|r| json!({"id": format!("id-{r}"), "name": r})).collect();
        let token = json!({"token": {
            "expires_at": "2099-01-01T00:00:00.000000Z", "issued_at": "2026-01-01T00:00:00.000000Z",
            "user": {"id": "u", "name": "u"}, "project": {"id": "p"}, "roles": roles, "methods": spec.methods,
            "catalog": [{"type": "load-balancer", "endpoints": [
                {"interface": "public", "region": "RegionOne", "url": format!("http://127.0.0.1:{port}/load-balancer")}]}]
        }});
        return (201, token, "X-Subject-Token: t\r\n");
    }
    if line.starts_with("GET /load-balancer/ ") && spec.versions_fail {
        return (500, json!({"faultcode": "Server", "faultstring": "Internal Server Error"}), "");
    }
    if line.starts_with("GET /load-balancer/ ") {
        // As Octavia answers it: every version, the newest CURRENT, with links and dates.
        let versions: Vec<Value> = (0..=spec.minor)
            .map(|m| {
                json!({"id": format!("v2.{m}"), "status": if m == spec.minor { "CURRENT" } else { "SUPPORTED" },
                "updated": "2022-08-01T00:00:00Z", "links": [{"href": "http://x/v2", "rel": "self"}]})
            })
            .collect();
        return (200, json!({"versions": versions}), "");
    }
    if line.starts_with("GET /load-balancer/v2/lbaas/providers ") {
        let p: Vec<Value> =
            spec.providers.iter().map(|n| json!({"name": n, "description": format!("{n} driver")})).collect();
        return (200, json!({"providers": p}), "");
    }
    (404, json!({"faultstring": "not scripted"}), "")
}

/// One HTTP/1.1 exchange per connection (`Connection: close`); bodies of requests are not needed.
async fn serve(mut conn: TcpStream, port: u16, spec: CloudSpec, seen: Arc<Mutex<Vec<String>>>) {
    let Some((head, _body)) = http_request::read_request(&mut conn).await else {
        return;
    };
    let line = head.lines().next().unwrap_or_default().to_string();
    seen.lock().unwrap().push(line.clone());
    let (status, body, extra) = answer_for(&line, port, &spec);
    let body = body.to_string();
    http_request::respond_json(&mut conn, status, &body, extra).await;
}

fn errors(r: &preflight::Report) -> Vec<String> {
    r.errors().map(|f| f.message.clone()).collect()
}

#[tokio::test]
async fn zed_with_an_admin_user_passes_with_reads_only() {
    let cloud = Cloud::start(zed_admin()).await;
    let r = preflight::run(&cloud.octavia(), "amphora", true).await.unwrap();
    assert_eq!(r.api_version, Some(ApiVersion::new(2, 26)));
    assert!(r.has(Feature::RedirectHttpCode) && r.has(Feature::Tags) && !r.has(Feature::Hsts));
    assert!(r.refusal().is_none(), "{:?}", r.findings);
    assert_eq!(
        cloud.seen(),
        vec![
            "POST /v3/auth/tokens HTTP/1.1",
            "GET /load-balancer/ HTTP/1.1",
            "GET /load-balancer/v2/lbaas/providers HTTP/1.1"
        ],
        "one token, two Octavia reads, no write"
    );
}

#[tokio::test]
async fn the_ovn_provider_is_refused_with_the_reason() {
    let cloud = Cloud::start(CloudSpec { providers: vec!["amphora", "ovn"], ..zed_admin() }).await;
    let r = preflight::run(&cloud.octavia(), "ovn", false).await.unwrap();
    let refusal = r.refusal().expect("ovn refused");
    assert!(refusal.contains("provider = ovn"), "{refusal}");
    for why in ["no L7 policies", "no HTTP/TERMINATED_HTTPS listeners", "no member weights"] {
        assert!(refusal.contains(why), "{refusal}");
    }
    // The cloud's only provider is its default one: refused even when none is configured.
    let only_ovn = Cloud::start(CloudSpec { providers: vec!["ovn"], ..zed_admin() }).await;
    let r = preflight::run(&only_ovn.octavia(), "", false).await.unwrap();
    assert!(r.refusal().is_some_and(|m| m.contains("default) provider is ovn")), "{:?}", r.findings);
}

#[tokio::test]
async fn a_configured_provider_the_cloud_lacks_is_an_error() {
    let cloud = Cloud::start(zed_admin()).await;
    let r = preflight::run(&cloud.octavia(), "f5", false).await.unwrap();
    assert_eq!(
        errors(&r),
        vec!["[octavia_defaults] provider = f5 is not offered by this cloud (providers: amphora, octavia)"]
    );
}

#[tokio::test]
async fn api_2_8_disables_redirects_with_a_warning() {
    let cloud = Cloud::start(CloudSpec { minor: 8, ..zed_admin() }).await;
    let r = preflight::run(&cloud.octavia(), "", false).await.unwrap();
    assert_eq!(r.api_version, Some(ApiVersion::new(2, 8)));
    assert!(!r.has(Feature::RedirectHttpCode) && r.has(Feature::Tags));
    assert!(r.refusal().is_none(), "a missing redirect is not fatal: {:?}", r.findings);
    let warnings: Vec<&str> = r.warnings().map(|w| w.message.as_str()).collect();
    assert!(
        warnings.contains(&"Octavia API 2.8 has no redirect_http_code (needs 2.9): HTTP→HTTPS redirects are disabled"),
        "{warnings:?}"
    );
}

/// Octavia's keystone-default-roles policy lets `member` write: the roles alone cannot tell, so a
/// token without `load-balancer_member` is a warning naming the role and the option that skips
/// the check, never a refusal; with the check off, nothing is said.
#[tokio::test]
async fn a_user_without_load_balancer_member_gets_a_warning_not_a_refusal() {
    let cloud = Cloud::start(CloudSpec { roles: vec!["member", "reader", "creator"], ..zed_admin() }).await;
    let r = preflight::run(&cloud.octavia(), "", false).await.unwrap();
    assert!(r.refusal().is_none(), "{:?}", r.findings);
    let warnings: Vec<&str> = r.warnings().map(|w| w.message.as_str()).collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("load-balancer_member or load-balancer_admin or admin"), "{warnings:?}");
    assert!(warnings[0].contains("token roles: member, reader, creator"), "{warnings:?}");
    assert!(warnings[0].contains("preflight_role_check = false"), "{warnings:?}");
    let skip = preflight::Checks { octavia_roles: false, ..preflight::Checks::default() };
    let r = preflight::run_with(&cloud.octavia(), "", &skip).await.unwrap();
    assert!(r.findings.is_empty(), "{:?}", r.findings);
    assert!(
        cloud.seen().iter().all(|l| l.starts_with("GET ") || l.starts_with("POST /v3/auth/tokens")),
        "{:?}",
        cloud.seen()
    );
}

#[tokio::test]
async fn a_user_without_creator_gets_a_warning_and_an_error_once_tls_is_used() {
    let spec = CloudSpec { roles: vec!["member", "load-balancer_member"], ..zed_admin() };
    let cloud = Cloud::start(spec).await;
    let r = preflight::run(&cloud.octavia(), "", false).await.unwrap();
    assert!(r.refusal().is_none(), "{:?}", r.findings);
    let creator: Vec<_> = r.findings.iter().filter(|f| f.message.contains("`creator`")).collect();
    assert_eq!(creator.len(), 1, "{:?}", r.findings);
    assert_eq!(creator[0].severity, Severity::Warning);
    let r = preflight::run(&cloud.octavia(), "", true).await.unwrap();
    assert!(r.refusal().is_some_and(|m| m.contains("Barbican's `creator` role")), "{:?}", r.findings);
}

/// A token from an application credential cannot serve TLS (Octavia cannot re-scope it to read
/// Barbican: every TLS listener create is a 400, docs/tls.md): said at start-up, with the fix,
/// before any TLS Ingress; an error once TLS is in use. A password token gets no such finding.
#[tokio::test]
async fn an_application_credential_is_reported_with_the_fix_before_the_first_tls_ingress() {
    let spec = CloudSpec { methods: vec!["application_credential"], ..zed_admin() };
    let cloud = Cloud::start(spec).await;
    let r = preflight::run(&cloud.octavia(), "", false).await.unwrap();
    assert!(r.refusal().is_none(), "HTTP works with it: {:?}", r.findings);
    let w: Vec<&str> = r.warnings().map(|w| w.message.as_str()).collect();
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].contains("application credential") && w[0].contains("400"), "{w:?}");
    assert!(w[0].contains("auth_type = password") && w[0].contains("KURYR_NEUTRON__PASSWORD"), "the fix: {w:?}");
    let r = preflight::run(&cloud.octavia(), "", true).await.unwrap();
    assert!(r.refusal().is_some_and(|m| m.contains("application credential")), "{:?}", r.findings);
    let password = Cloud::start(zed_admin()).await;
    let r = preflight::run(&password.octavia(), "", true).await.unwrap();
    assert!(r.findings.is_empty(), "{:?}", r.findings);
}

#[tokio::test]
async fn an_unreadable_version_document_is_an_error_naming_the_request() {
    let cloud = Cloud::start(CloudSpec { versions_fail: true, ..zed_admin() }).await;
    let err = preflight::run(&cloud.octavia(), "", false).await.unwrap_err();
    assert_eq!(err.status(), Some(500));
    assert!(err.to_string().contains("octavia GET /: HTTP 500: Internal Server Error"), "{err}");
}

fn settings(port: u16, provider: &str, ssl_redirect: bool) -> kuryr_l7_router::config::Settings {
    let text = format!(
        "[kubernetes]\nenable_ingress = True\n\n[neutron_defaults]\nproject = 5b4c1b6e0c2d4b1a9f3e2d1c0b9a8f7e\nlb_subnet = 3c0f6c8e-1b2d-4c3e-8f9a-0b1c2d3e4f5a\n\n\
         [octavia_defaults]\nprovider = {provider}\nssl_redirect = {ssl_redirect}\n\n\
         [neutron]\nauth_url = http://127.0.0.1:{port}/v3\nusername = u\npassword = p\nproject_name = p\n"
    );
    kuryr_l7_router::config::load_texts(&[("preflight-test.conf".into(), text)], Vec::new()).unwrap().settings
}

#[tokio::test]
async fn the_controller_refuses_to_start_on_a_preflight_error() {
    use kuryr_l7_router::controller::ControllerError;
    use kuryr_l7_router::controller::runtime::preflight as start_preflight;
    let cloud = Cloud::start(CloudSpec { providers: vec!["amphora", "ovn"], ..zed_admin() }).await;
    let _ = cloud.octavia(); // installs the crypto provider
    let err = start_preflight(settings(cloud.port, "ovn", true)).await.unwrap_err();
    assert!(matches!(&err, ControllerError::Preflight(m) if m.contains("no L7 policies")), "{err}");
    assert!(cloud.seen().iter().all(|l| !l.contains("/v2/lbaas/loadbalancers")), "{:?}", cloud.seen());
}

#[tokio::test]
async fn below_api_2_9_the_controller_starts_with_redirects_turned_off() {
    use kuryr_l7_router::controller::runtime::preflight as start_preflight;
    let old = Cloud::start(CloudSpec { minor: 8, ..zed_admin() }).await;
    let _ = old.octavia();
    let s = start_preflight(settings(old.port, "amphora", true)).await.unwrap();
    assert!(!s.octavia_defaults.ssl_redirect, "redirects gated off below 2.9");
    let zed = Cloud::start(zed_admin()).await;
    let s = start_preflight(settings(zed.port, "amphora", true)).await.unwrap();
    assert!(s.octavia_defaults.ssl_redirect, "kept on Zed");
}
