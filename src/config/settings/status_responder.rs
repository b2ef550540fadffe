//! `[status_responder]`: where the status responder listens, and which Service the controller
//! turns into the reserved 404/503 pools. Read on its own by `kuryr-l7-router status-responder`,
//! which needs no Keystone or Kubernetes options (its pods mount kuryr.conf without the secret).

use super::reader::{DefaultSettings, FromOpt, Reader, expected};
use crate::config::options::OptionSpec;
use crate::config::problem::ConfigProblem;
use std::net::SocketAddr;

const SR: &str = "status_responder";

/// `[status_responder]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatusResponderSettings {
    /// `(namespace, name)` of the responder's Service; `None`: no responder configured.
    pub service: Option<(String, String)>,
    /// Service port (name or number) answering 404.
    pub service_not_found_port: String,
    /// Service port (name or number) answering 503.
    pub service_unavailable_port: String,
    /// Service port (name or number) answering 500.
    pub service_server_error_port: String,
    pub not_found_listen: SocketAddr,
    pub unavailable_listen: SocketAddr,
    pub server_error_listen: SocketAddr,
    pub health_listen: SocketAddr,
}

impl FromOpt for SocketAddr {
    fn from_opt(raw: &str, spec: &OptionSpec) -> Result<Self, String> {
        raw.parse().map_err(|_| format!("{} (e.g. 0.0.0.0:8404 or [::]:8404)", expected(spec)))
    }
}

impl Reader {
    pub(crate) fn status_responder(&mut self) -> StatusResponderSettings {
        let unspecified = SocketAddr::from(([0, 0, 0, 0], 0));
        StatusResponderSettings {
            service: self.namespaced(SR, "service"),
            service_not_found_port: self.value(SR, "service_not_found_port"),
            service_unavailable_port: self.value(SR, "service_unavailable_port"),
            service_server_error_port: self.value(SR, "service_server_error_port"),
            not_found_listen: self.get(SR, "not_found_listen").unwrap_or(unspecified),
            unavailable_listen: self.get(SR, "unavailable_listen").unwrap_or(unspecified),
            server_error_listen: self.get(SR, "server_error_listen").unwrap_or(unspecified),
            health_listen: self.get(SR, "health_listen").unwrap_or(unspecified),
        }
    }

    /// Only `[status_responder]` (and `[DEFAULT]` for logging): what the responder reads.
    pub(crate) fn status_responder_only(
        mut self,
    ) -> Result<(DefaultSettings, StatusResponderSettings), Vec<ConfigProblem>> {
        let default =
            DefaultSettings { debug: self.value("DEFAULT", "debug"), log_format: self.choice("DEFAULT", "log_format") };
        let sr = self.status_responder();
        if self.problems.is_empty() { Ok((default, sr)) } else { Err(self.problems) }
    }
}

impl StatusResponderSettings {
    /// The effective value of a `[status_responder]` option (see `Settings::effective`).
    pub(crate) fn effective(&self, key: &str) -> Option<Option<String>> {
        Some(match key {
            "service" => self.service.as_ref().map(|(ns, name)| format!("{ns}/{name}")),
            "service_not_found_port" => Some(self.service_not_found_port.clone()),
            "service_unavailable_port" => Some(self.service_unavailable_port.clone()),
            "service_server_error_port" => Some(self.service_server_error_port.clone()),
            "not_found_listen" => Some(self.not_found_listen.to_string()),
            "unavailable_listen" => Some(self.unavailable_listen.to_string()),
            "server_error_listen" => Some(self.server_error_listen.to_string()),
            "health_listen" => Some(self.health_listen.to_string()),
            _ => return None,
        })
    }
}
