//! The kube `Client`: from kuryr's explicit `[kubernetes]` options (api_root, token_file,
//! ssl_ca_crt_file), from a kubeconfig file, or inferred (`KUBECONFIG`/`~/.kube/config`, then
//! in-cluster service account).

use crate::controller::ControllerError;
use kube::config::{Config, KubeConfigOptions, Kubeconfig};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use std::path::Path;

/// The client `[kubernetes]` configures (see [`make_client`]).
pub async fn client_of(k: &crate::config::KubernetesSettings) -> Result<kube::Client, ControllerError> {
    let api_root = k.api_root.as_ref().map(|u| u.as_str());
    make_client(api_root, k.token_file.as_deref(), k.ssl_ca_crt_file.as_deref(), k.kubeconfig.as_deref()).await
}

/// Builds the client. Precedence: `api_root` (explicit, kuryr style) > `kubeconfig` > inferred.
pub async fn make_client(
    api_root: Option<&str>,
    token_file: Option<&Path>,
    ca_file: Option<&Path>,
    kubeconfig: Option<&Path>,
) -> Result<kube::Client, ControllerError> {
    let config = match (api_root, kubeconfig) {
        (Some(root), _) => explicit_config(root, token_file, ca_file)?,
        (None, Some(path)) => kubeconfig_config(path).await?,
        (None, None) => Config::infer().await?,
    };
    Ok(kube::Client::try_from(config)?)
}

/// Config from kuryr's options, without touching the network.
///
/// - the token is not copied into the config: kube re-reads `token_file` (like in-cluster), so a
///   rotated projected service-account token keeps working; it is read once here to fail early.
///   Exception: a file with surrounding whitespace (a hand-written token ending in a newline) is
///   read once and trimmed, since kube would send the newline and every request would fail;
/// - the CA bundle is parsed here (PEM → DER, error if it holds no certificate) and also set as
///   `root_cert_file`, which kube's rustls stack re-reads periodically to follow CA rotation.
pub fn explicit_config(
    api_root: &str,
    token_file: Option<&Path>,
    ca_file: Option<&Path>,
) -> Result<Config, ControllerError> {
    let mut config = Config::new(
        api_root.parse().map_err(|e| ControllerError::ClientConfig(format!("api_root {api_root:?}: {e}")))?,
    );
    if config.cluster_url.scheme().is_none() || config.cluster_url.authority().is_none() {
        return Err(ControllerError::ClientConfig(format!("api_root {api_root:?} must be an absolute http(s) URL")));
    }
    if let Some(path) = token_file {
        let token = read(path)?;
        let text = String::from_utf8_lossy(&token);
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return Err(ControllerError::ClientConfig(format!("token file {} is empty", path.display())));
        }
        if trimmed.len() == text.len() {
            config.auth_info.token_file = Some(path.to_string_lossy().into_owned());
        } else {
            // kube sends a token file's bytes as they are: a trailing newline (`echo $TOKEN > file`,
            // which kuryr strips) is an invalid header value and fails every request. Such a file
            // is read once here, trimmed; service-account tokens (no newline) keep being re-read.
            tracing::warn!(path = %path.display(), "token file has surrounding whitespace: read once, trimmed (no rotation)");
            config.auth_info.token = Some(trimmed.to_string().into());
        }
    }
    if let Some(path) = ca_file {
        let pem = read(path)?;
        let certs: Vec<Vec<u8>> = CertificateDer::pem_slice_iter(&pem)
            .map(|c| c.map(|c| c.to_vec()))
            .collect::<Result<_, _>>()
            .map_err(|e| ControllerError::ClientConfig(format!("CA file {}: {e}", path.display())))?;
        if certs.is_empty() {
            return Err(ControllerError::ClientConfig(format!("CA file {} holds no certificate", path.display())));
        }
        config.root_cert = Some(certs);
        config.root_cert_file = Some(path.to_path_buf());
    }
    Ok(config)
}

/// Config from a kubeconfig file (its current context).
pub async fn kubeconfig_config(path: &Path) -> Result<Config, ControllerError> {
    let kubeconfig = Kubeconfig::read_from(path)?;
    Ok(Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?)
}

fn read(path: &Path) -> Result<Vec<u8>, ControllerError> {
    std::fs::read(path).map_err(|source| ControllerError::ReadFile { path: path.to_path_buf(), source })
}
