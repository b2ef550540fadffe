//! Security checks that need no cloud: secrets never shown (Debug, `check-config`, panics), TLS
//! verification on by default for OpenStack (refusing a self-signed endpoint unless `cafile` or
//! `insecure`) and for the Kubernetes API. The non-root container is covered by
//! tests/it/ship_dockerfile.rs and tests/it/ship_manifests.rs (see docs/reliability.md).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use kuryr_l7_router::config::{self, options};
use kuryr_l7_router::controller::client::{explicit_config, kubeconfig_config};
use kuryr_l7_router::openstack::{AuthOptions, Error, Session};
use kuryr_l7_router::secret::{MASK, Secret};
use kuryr_l7_router::wiring;

const PASSWORD: &str = "Pw-9f1c2e-do-not-print";
const APP_SECRET: &str = "AppCred-77b0d-do-not-print";
const ENV_PASSWORD: &str = "EnvPw-3a5e-do-not-print";

fn conf_text(password: &str) -> String {
    format!(
        "[neutron]\nauth_url = https://keystone.example.com/v3\nusername = kuryr\npassword = {password}\n\
         project_name = service\napplication_credential_secret = {APP_SECRET}\n"
    )
}

fn assert_clean(what: &str, text: &str) {
    for s in [PASSWORD, APP_SECRET, ENV_PASSWORD] {
        assert!(!text.contains(s), "{what} shows a secret: {text}");
    }
}

#[test]
fn debug_of_settings_auth_options_and_session_is_masked() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let loaded = config::load_texts(&[("k.conf".into(), conf_text(PASSWORD))], Vec::new()).unwrap();
    let s = &loaded.settings;
    assert_eq!(s.neutron.password.as_ref().map(Secret::expose), Some(PASSWORD), "the value is kept");
    assert_clean("Debug of Settings", &format!("{s:?} {s:#?}"));
    assert_clean("render_masked", &s.render_masked());
    let opts = wiring::auth_options(s);
    assert_clean("Debug of AuthOptions", &format!("{opts:?}"));
    let session = Session::new(opts).unwrap();
    let shown = format!("{session:?}");
    assert_clean("Debug of Session", &shown);
    assert!(shown.contains(MASK), "{shown}");
}

#[test]
fn secret_in_a_panic_message_is_masked() {
    let secret = Secret::new(PASSWORD);
    let payload = std::panic::catch_unwind(|| {
        let r: Result<(), Secret> = std::hint::black_box(Err(secret));
        r.unwrap();
    })
    .unwrap_err();
    let msg = payload.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(msg.contains(MASK), "{msg}");
    assert_clean("panic message", &msg);
}

fn binary() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_kuryr-l7-router"));
    c.env_remove("RUST_LOG").stdin(Stdio::null());
    for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("KURYR_")) {
        c.env_remove(k);
    }
    c
}

#[test]
fn check_config_output_is_masked_for_file_and_environment_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kuryr.conf");
    std::fs::write(&path, format!("[DEFAULT]\ndebug = true\n{}", conf_text(PASSWORD))).unwrap();
    for env in [None, Some(ENV_PASSWORD)] {
        let mut c = binary();
        c.arg("--config-file").arg(&path).arg("check-config").env("RUST_LOG", "debug");
        if let Some(p) = env {
            c.env("KURYR_NEUTRON__PASSWORD", p);
        }
        let out = c.output().unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "{text}");
        assert_clean("check-config", &text);
        assert!(text.contains(&format!("password = {MASK}")), "{text}");
        assert!(text.contains(&format!("application_credential_secret = {MASK}")), "{text}");
    }
    // An invalid configuration is reported with the secret masked too.
    std::fs::write(&path, format!("{}auth_type = token\n", conf_text(PASSWORD))).unwrap();
    let out = binary().arg("--config-file").arg(&path).arg("check-config").output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("auth_type"), "{text}");
    assert_clean("check-config error", &text);
}

#[test]
fn tls_verification_is_on_by_default() {
    let insecure =
        options().iter().find(|o| o.section == "neutron" && o.key == "insecure").expect("[neutron] insecure");
    assert_eq!(insecure.default, Some("false"));
    let s = config::load_texts(&[("k.conf".into(), conf_text(PASSWORD))], Vec::new()).unwrap().settings;
    assert!(!s.neutron.insecure);
    assert!(!wiring::auth_options(&s).insecure);
    assert!(!AuthOptions::password("https://k/v3", "u", Secret::new("p"), "p", "Default").insecure);
}

/// A CA and a leaf certificate for 127.0.0.1 signed by it, made with the openssl CLI.
fn make_certs(dir: &Path) -> Option<(PathBuf, PathBuf, PathBuf)> {
    let run = |args: &str| {
        Command::new("openssl")
            .args(args.split_whitespace())
            .current_dir(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    std::fs::write(dir.join("ext.cnf"), "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n").ok()?;
    let ok = run("req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj /CN=test-ca")
        && run("req -newkey rsa:2048 -nodes -keyout leaf.key -out leaf.csr -subj /CN=127.0.0.1")
        && run(
            "x509 -req -in leaf.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out leaf.pem -days 2 -extfile ext.cnf",
        );
    ok.then(|| (dir.join("ca.pem"), dir.join("leaf.pem"), dir.join("leaf.key")))
}

struct Server(std::process::Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `openssl s_server -www` on a free port: answers every request with a status page.
fn tls_server(cert: &Path, key: &Path) -> (Server, u16) {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let child = Command::new("openssl")
        .args(["s_server", "-quiet", "-www", "-accept"])
        .arg(format!("127.0.0.1:{port}"))
        .arg("-cert")
        .arg(cert)
        .arg("-key")
        .arg(key)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let server = Server(child);
    for _ in 0..100 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return (server, port);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("openssl s_server did not start on {port}");
}

#[tokio::test]
async fn keystone_client_refuses_an_untrusted_certificate_unless_told() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = tempfile::tempdir().unwrap();
    let Some((ca, cert, key)) = make_certs(dir.path()) else {
        panic!("openssl could not make the test certificates");
    };
    let (_server, port) = tls_server(&cert, &key);
    let auth = |cafile: Option<PathBuf>, insecure: bool| {
        let mut o =
            AuthOptions::password(&format!("https://127.0.0.1:{port}/v3"), "u", Secret::new(PASSWORD), "p", "Default");
        o.cafile = cafile;
        o.insecure = insecure;
        o.timeout = Duration::from_secs(10);
        o
    };
    // Default: the certificate is not trusted, no request reaches the server.
    let err = Session::new(auth(None, false)).unwrap().authenticate().await.unwrap_err();
    let chain = format!("{err} {:?}", std::error::Error::source(&err));
    assert!(matches!(err, Error::Transport { .. }), "{chain}");
    assert!(chain.to_lowercase().contains("certificate"), "names the certificate problem: {chain}");
    assert_clean("TLS error", &chain);
    // With the CA as cafile, or insecure, TLS succeeds: the failure is now about the answer
    // (openssl's status page is not a Keystone token).
    for (cafile, insecure) in [(Some(ca.clone()), false), (None, true)] {
        let err = Session::new(auth(cafile.clone(), insecure)).unwrap().authenticate().await.unwrap_err();
        assert!(!matches!(err, Error::Transport { .. }), "cafile {cafile:?} insecure {insecure}: {err}");
    }
}

#[tokio::test]
async fn kubernetes_client_keeps_tls_verification() {
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/k8s");
    let c = explicit_config("https://10.0.0.1:6443", None, Some(&fixtures.join("ca.pem"))).unwrap();
    assert!(!c.accept_invalid_certs, "explicit api_root keeps verification");
    let c = explicit_config("https://10.0.0.1:6443", None, None).unwrap();
    assert!(!c.accept_invalid_certs, "without a CA file the system roots are used, not no verification");
    let c = kubeconfig_config(&fixtures.join("kubeconfig.yaml")).await.unwrap();
    assert!(!c.accept_invalid_certs, "kubeconfig keeps verification");
}
