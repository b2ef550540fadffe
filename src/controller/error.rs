//! [`ControllerError`]: everything the Kubernetes side can fail with.

use std::path::PathBuf;

/// Errors of the controller's Kubernetes side. Each variant has a stable [`metric_label`]
/// (`reconciles_total{result=...}`), so dashboards do not depend on message text.
///
/// [`metric_label`]: ControllerError::metric_label
#[derive(Debug, thiserror::Error)]
pub enum ControllerError {
    /// A Kubernetes API call failed (including conflicts on a JSON patch `test` op).
    #[error("Kubernetes API error: {0}")]
    Kube(#[from] kube::Error),

    /// A file named in the configuration could not be read.
    #[error("cannot read {path}: {source}")]
    ReadFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// The Kubernetes client configuration is unusable (bad URL, empty token, bad CA bundle, ...).
    #[error("invalid Kubernetes client configuration: {0}")]
    ClientConfig(String),

    /// No kubeconfig and no in-cluster configuration could be found or loaded.
    #[error("cannot infer a Kubernetes client configuration: {0}")]
    InferConfig(#[from] kube::config::InferConfigError),

    /// A kubeconfig file was given but could not be used.
    #[error("invalid kubeconfig: {0}")]
    Kubeconfig(#[from] kube::config::KubeconfigError),

    /// The `openstack.org/kuryr-l7-router` annotation of a Service is not a valid notice.
    #[error("invalid {annotation} annotation on Service {service}: {source}")]
    InvalidNotice {
        annotation: String,
        service: String,
        #[source]
        source: serde_json::Error,
    },

    /// JSON (de)serialization of something we built ourselves; a bug if it ever happens.
    #[error("serialization error: {0}")]
    Serialization(#[from] serde_json::Error),

    /// An object lacks a field every API object has (name, namespace); a bug or a broken cache.
    #[error("object has no {0}")]
    MissingObjectKey(&'static str),

    /// Leader election failed (Lease API error or inconsistent lease state).
    #[error("leader election: {0}")]
    Lease(#[from] kube_lease_manager::LeaseManagerError),

    /// The leader election task ended (its error, if any, was returned by `release`) or panicked.
    #[error("leader election stopped: {0}")]
    LeaderStopped(String),

    /// The start-up preflight refused the cloud or the user (see `openstack::preflight`).
    #[error("{0}")]
    Preflight(String),

    /// The router set's records (`set_store`) cannot be read: the leader does not start from
    /// none (every group would be placed as new).
    #[error("the router set's records: {0}")]
    SetRecords(String),

    /// The health/metrics HTTP server failed to bind or serve.
    #[error("health server: {0}")]
    Server(#[source] std::io::Error),
}

impl ControllerError {
    /// Short label for the `result` of `reconciles_total`, stable across message changes.
    pub fn metric_label(&self) -> &'static str {
        match self {
            ControllerError::Kube(kube::Error::Api(status)) if status.code == 409 => "kube_conflict",
            ControllerError::Kube(kube::Error::Api(status)) if status.code == 404 => "kube_not_found",
            ControllerError::Kube(_) => "kube_error",
            ControllerError::ReadFile { .. } => "read_file",
            ControllerError::ClientConfig(_) | ControllerError::InferConfig(_) | ControllerError::Kubeconfig(_) => {
                "client_config"
            }
            ControllerError::InvalidNotice { .. } => "invalid_notice",
            ControllerError::Serialization(_) => "serialization",
            ControllerError::MissingObjectKey(_) => "missing_object_key",
            ControllerError::Lease(_) | ControllerError::LeaderStopped(_) => "lease",
            ControllerError::Server(_) => "server",
            ControllerError::Preflight(_) => "preflight",
            ControllerError::SetRecords(_) => "set_records",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api_error(code: u16) -> ControllerError {
        let status = kube::core::Status::failure("boom", "Reason").with_code(code);
        ControllerError::Kube(kube::Error::Api(Box::new(status)))
    }

    #[test]
    fn labels_distinguish_conflicts_and_not_found() {
        assert_eq!(api_error(409).metric_label(), "kube_conflict");
        assert_eq!(api_error(404).metric_label(), "kube_not_found");
        assert_eq!(api_error(500).metric_label(), "kube_error");
        assert_eq!(ControllerError::MissingObjectKey("name").metric_label(), "missing_object_key");
        assert_eq!(ControllerError::ClientConfig("x".into()).metric_label(), "client_config");
    }
}
