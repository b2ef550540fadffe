//! Building the kube Client from kuryr's explicit options and from a kubeconfig, without network.

use kuryr_l7_router::controller::client::{explicit_config, kubeconfig_config, make_client};
use std::io::Write;
use std::path::PathBuf;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/k8s").join(name)
}

fn token_file(content: &str) -> tempfile::NamedTempFile {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    f.write_all(content.as_bytes()).unwrap();
    f
}

#[test]
fn explicit_config_sets_url_token_file_and_ca() {
    let token = token_file("eyJhbGciOi.token");
    let ca = fixture("ca.pem");
    let config = explicit_config("https://10.0.0.1:6443", Some(token.path()), Some(&ca)).unwrap();
    assert_eq!(config.cluster_url.to_string(), "https://10.0.0.1:6443/");
    // The token is re-read by kube (rotation), never copied into the config.
    assert_eq!(config.auth_info.token_file.as_deref(), Some(token.path().to_str().unwrap()));
    assert!(config.auth_info.token.is_none());
    let certs = config.root_cert.as_ref().unwrap();
    assert_eq!(certs.len(), 1);
    assert_eq!(certs[0][0], 0x30, "DER, not PEM");
    assert_eq!(config.root_cert_file.as_deref(), Some(ca.as_path()));
    assert!(!config.accept_invalid_certs);
}

/// kube sends a token file as it is; a trailing newline would be an invalid header value on every
/// request (found by tests/it/controller_runtime.rs), so such a file is read once, trimmed.
#[test]
fn explicit_config_trims_a_token_file_ending_in_a_newline() {
    let token = token_file("eyJhbGciOi.token\n");
    let config = explicit_config("https://10.0.0.1:6443", Some(token.path()), None).unwrap();
    assert!(config.auth_info.token_file.is_none());
    // (The trimmed value reaching the API server is checked by tests/it/controller_runtime.rs.)
    assert!(config.auth_info.token.is_some());
}

#[test]
fn explicit_config_plain_http_without_token_or_ca() {
    let config = explicit_config("http://127.0.0.1:8080", None, None).unwrap();
    assert_eq!(config.cluster_url.to_string(), "http://127.0.0.1:8080/");
    assert!(config.auth_info.token_file.is_none());
    assert!(config.root_cert.is_none());
}

#[test]
fn explicit_config_errors() {
    let label = |r: Result<_, kuryr_l7_router::controller::ControllerError>| r.unwrap_err().metric_label();
    assert_eq!(label(explicit_config("not a url", None, None)), "client_config");
    assert_eq!(label(explicit_config("/relative", None, None)), "client_config");
    assert_eq!(label(explicit_config("https://k", Some(&fixture("missing-token")), None)), "read_file");
    let empty = token_file("  \n");
    assert_eq!(label(explicit_config("https://k", Some(empty.path()), None)), "client_config");
    let not_pem = token_file("this is no certificate");
    assert_eq!(label(explicit_config("https://k", None, Some(not_pem.path()))), "client_config");
}

#[tokio::test]
async fn kubeconfig_current_context() {
    let config = kubeconfig_config(&fixture("kubeconfig.yaml")).await.unwrap();
    assert_eq!(config.cluster_url.to_string(), "https://10.0.0.1:6443/");
    assert_eq!(config.default_namespace, "kuryr");
    assert!(config.auth_info.token.is_some());
}

#[tokio::test]
async fn make_client_prefers_explicit_options_and_needs_no_network() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let token = token_file("t");
    let client =
        make_client(Some("https://10.0.0.1:6443"), Some(token.path()), Some(&fixture("ca.pem")), None).await.unwrap();
    assert_eq!(client.default_namespace(), "default");
    let client = make_client(None, None, None, Some(&fixture("kubeconfig.yaml"))).await.unwrap();
    assert_eq!(client.default_namespace(), "kuryr");
}
