//! Where the stamps of a router's reads (see `driver::stamps`) outlive the process: a ConfigMap
//! per router in the controller's namespace, written by the leader after a Sync at most once per
//! resync period (never on the Members path), read by a new leader before its first read, and
//! deleted with the router. A missing, unreadable or damaged ConfigMap is no stamps: the router
//! is read whole, as before. It holds Octavia ids, timestamps and digests, never key material.

use crate::driver::digest::stable_hash;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{DeleteParams, ObjectMeta, Patch, PatchParams};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// The data key holding the stamps' text form.
const KEY: &str = "stamps";
const PREFIX: &str = "kuryr-l7-router-stamps-";
/// Labels: the app, and the router (a label value has at most 63 characters).
pub const APP_LABEL: &str = "app.kubernetes.io/name";
pub const APP: &str = "kuryr-l7-router";
pub const ROUTER_LABEL: &str = "kuryr-l7-router/router";
/// The router's whole name, whatever the label and the ConfigMap's name had to shorten.
const ROUTER_ANNOTATION: &str = "kuryr-l7-router/router-name";

/// The ConfigMap's name: the prefix and the router's name when that is a valid object name,
/// else as much of it as fits, lowercased, with a hash of the whole name (so two long names
/// with one start never share a ConfigMap).
pub fn config_map_name(router: &str) -> String {
    let whole = format!("{PREFIX}{router}");
    if whole.len() <= 253 && is_dns_subdomain(&whole) {
        return whole;
    }
    format!("{PREFIX}{}-{:016x}", sanitized(router, 200), stable_hash(router))
}

/// The router's label value: its name if it is a valid label value, else a shortened one with
/// its hash.
pub fn router_label(router: &str) -> String {
    let valid = router.len() <= 63
        && router.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        && router.starts_with(|c: char| c.is_ascii_alphanumeric())
        && router.ends_with(|c: char| c.is_ascii_alphanumeric());
    if valid { router.to_string() } else { format!("{}-{:016x}", sanitized(router, 40), stable_hash(router)) }
}

fn sanitized(name: &str, max: usize) -> String {
    let s: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' }).take(max).collect();
    let s = s.trim_matches('-');
    if s.is_empty() { "router".into() } else { s.into() }
}

fn is_dns_subdomain(s: &str) -> bool {
    s.split('.').all(|part| {
        !part.is_empty()
            && part.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            && !part.starts_with('-')
            && !part.ends_with('-')
    })
}

/// The ConfigMap holding `text`, the stamps of `router`.
pub fn config_map(router: &str, text: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(config_map_name(router)),
            labels: Some(BTreeMap::from([
                (APP_LABEL.to_string(), APP.to_string()),
                (ROUTER_LABEL.to_string(), router_label(router)),
            ])),
            annotations: Some(BTreeMap::from([(ROUTER_ANNOTATION.to_string(), router.to_string())])),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([(KEY.to_string(), text.to_string())])),
        ..ConfigMap::default()
    }
}

/// The stamps' text in a ConfigMap read back, if it is the one of `router`.
pub fn stamps_text(cm: &ConfigMap, router: &str) -> Option<String> {
    let annotations = cm.metadata.annotations.as_ref()?;
    if annotations.get(ROUTER_ANNOTATION).map(String::as_str) != Some(router) {
        return None;
    }
    cm.data.as_ref()?.get(KEY).cloned()
}

/// The ConfigMaps of the routers, in the controller's namespace.
#[derive(Clone)]
pub struct StampStores {
    pub api: Api<ConfigMap>,
    /// The least time between two writes of one router's stamps (the resync period).
    pub every: Duration,
}

/// One router's ConfigMap.
pub struct StampStore {
    stores: StampStores,
    router: String,
    loaded: bool,
    written: Option<Instant>,
}

impl StampStore {
    pub fn new(stores: StampStores, router: &str) -> Self {
        Self { stores, router: router.to_string(), loaded: false, written: None }
    }

    /// The stamps a previous leader left, once (before this process's first read); `None`
    /// when there are none or they cannot be read (logged: the router is read whole).
    pub async fn load_once(&mut self) -> Option<String> {
        if std::mem::replace(&mut self.loaded, true) {
            return None;
        }
        let name = config_map_name(&self.router);
        match self.stores.api.get_opt(&name).await {
            Ok(Some(cm)) => {
                let text = stamps_text(&cm, &self.router);
                if text.is_none() {
                    tracing::warn!(router = %self.router, configmap = %name, "stamps ConfigMap of another router or without stamps: the router is read whole");
                }
                text
            }
            Ok(None) => {
                tracing::info!(router = %self.router, configmap = %name, "no stamps ConfigMap: the router is read whole");
                None
            }
            Err(e) => {
                tracing::warn!(router = %self.router, configmap = %name, error = %e, "stamps ConfigMap unreadable: the router is read whole");
                None
            }
        }
    }

    /// Whether the stamps may be written now (at most once per [`StampStores::every`]).
    pub fn due(&self, now: Instant) -> bool {
        self.written.is_none_or(|t| now.saturating_duration_since(t) >= self.stores.every)
    }

    /// Writes the stamps (server-side apply: creates or replaces). A failure is logged: the
    /// next leader then reads more, nothing else.
    pub async fn save(&mut self, text: &str) {
        self.written = Some(Instant::now());
        let name = config_map_name(&self.router);
        let params = PatchParams::apply(APP).force();
        if let Err(e) = self.stores.api.patch(&name, &params, &Patch::Apply(config_map(&self.router, text))).await {
            tracing::warn!(router = %self.router, configmap = %name, error = %e, "stamps not saved: the next leader reads more of the router");
        }
    }

    /// Deletes the router's ConfigMap (the router is gone); already gone is fine.
    pub async fn delete(&self) {
        let name = config_map_name(&self.router);
        match self.stores.api.delete(&name, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => {
                tracing::warn!(router = %self.router, configmap = %name, error = %e, "stamps ConfigMap not deleted")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_valid_and_distinct_whatever_the_router_name() {
        assert_eq!(config_map_name("l7-router"), "kuryr-l7-router-stamps-l7-router");
        assert_eq!(router_label("l7-router"), "l7-router");
        let long_a = format!("{}a", "r".repeat(300));
        let long_b = format!("{}b", "r".repeat(300));
        for name in ["Router_One", long_a.as_str(), long_b.as_str(), "--", "gw:ns/name"] {
            let cm = config_map_name(name);
            assert!(cm.len() <= 253 && is_dns_subdomain(&cm), "{name} -> {cm}");
            let label = router_label(name);
            assert!(label.len() <= 63, "{name} -> {label}");
        }
        assert_ne!(config_map_name(&long_a), config_map_name(&long_b), "a hash of the whole name");
        assert_ne!(router_label(&long_a), router_label(&long_b));
        assert_ne!(config_map_name("Router_One"), config_map_name("router-one"));
    }

    #[test]
    fn a_config_map_reads_back_for_its_router_only() {
        let cm = config_map("l7-router", "text");
        let labels = cm.metadata.labels.clone().unwrap();
        assert_eq!(labels[APP_LABEL], APP);
        assert_eq!(labels[ROUTER_LABEL], "l7-router");
        assert_eq!(stamps_text(&cm, "l7-router").as_deref(), Some("text"));
        assert_eq!(stamps_text(&cm, "other"), None, "another router's (a hash collision) is no stamps");
        let mut empty = cm.clone();
        empty.data = None;
        assert_eq!(stamps_text(&empty, "l7-router"), None);
    }
}
