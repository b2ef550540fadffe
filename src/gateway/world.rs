//! The snapshot of Kubernetes objects the Gateway translation reads. Built by the controller from
//! its caches; built by hand (or from YAML fixtures) in tests.

use super::api::{Gateway, GatewayClass, HTTPRoute, ListenerSet, ReferenceGrant};
use std::collections::BTreeMap;
use std::sync::Arc;

/// What the translation needs to know of a Service.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServiceInfo {
    /// The Service's port numbers.
    pub ports: Vec<i32>,
    /// ExternalName Services have no endpoints Octavia could reach.
    pub(crate) external_name: bool,
    /// The ports whose `appProtocol` is `kubernetes.io/h2c` (HTTP/2 over cleartext), which an
    /// Octavia HTTP pool cannot speak (see `super::backends`).
    pub(crate) h2c_ports: Vec<i32>,
}

/// The `appProtocol` of a Service port speaking HTTP/2 without TLS (Gateway API's name).
pub(crate) const H2C: &str = "kubernetes.io/h2c";

/// What the translation reads of a Service.
pub(crate) fn service_info(s: &k8s_openapi::api::core::v1::Service) -> ServiceInfo {
    let ports = s.spec.as_ref().and_then(|s| s.ports.as_deref()).unwrap_or_default();
    ServiceInfo {
        ports: ports.iter().map(|p| p.port).collect(),
        external_name: s.spec.as_ref().and_then(|s| s.type_.as_deref()) == Some("ExternalName"),
        h2c_ports: ports.iter().filter(|p| p.app_protocol.as_deref() == Some(H2C)).map(|p| p.port).collect(),
    }
}

/// What the translation needs to know of a Secret named by a listener.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SecretInfo {
    /// `kubernetes.io/tls` with a parsable certificate and key.
    Tls,
    /// Any other type, or a TLS Secret whose content does not parse.
    Malformed,
    /// A TLS Secret the controller's cache holds without its data until its Secret watch lists
    /// it again (`controller::ingress::tls_secrets`): served as valid meanwhile, never taken off.
    Pending,
}

/// The Gateway API objects are shared with the controller's caches (`Arc`): a pass copies none.
#[derive(Clone, Debug, Default)]
pub struct World {
    pub classes: Vec<Arc<GatewayClass>>,
    pub gateways: Vec<Arc<Gateway>>,
    pub routes: Vec<Arc<HTTPRoute>>,
    pub(crate) grants: Vec<Arc<ReferenceGrant>>,
    /// The ListenerSets: listeners added to a Gateway that admits them (`super::listener_sets`).
    pub listener_sets: Vec<Arc<ListenerSet>>,
    /// Namespace name -> its labels (for `allowedRoutes.namespaces.from: Selector`).
    pub namespaces: BTreeMap<String, BTreeMap<String, String>>,
    /// (namespace, name) -> Service.
    pub services: BTreeMap<(String, String), ServiceInfo>,
    /// (namespace, name) -> Secret.
    pub secrets: BTreeMap<(String, String), SecretInfo>,
    /// (namespace, name) -> the `ca.crt` of a ConfigMap a Gateway's client certificate
    /// validation names (`super::frontend`); `None`: the ConfigMap has no `ca.crt`. A ConfigMap
    /// absent here does not exist (or cannot be read).
    pub ca_config_maps: BTreeMap<(String, String), Option<Arc<str>>>,
    /// Whether the controller can read ConfigMaps at all (its RBAC may not grant it): when not,
    /// a CA bundle reference says so instead of "not found".
    pub config_maps_unread: bool,
    /// `[kubernetes] secret_namespaces`: the namespaces whose Secrets the controller reads (a
    /// Secret elsewhere is never in `secrets`); empty: all.
    pub secret_namespaces: Vec<String>,
    /// Services (namespace, name) a BackendTLSPolicy asks TLS for -> the policy's name.
    pub backend_tls: BTreeMap<(String, String), String>,
    /// How many Gateways are served per namespace and per cluster (`super::limits`).
    pub limits: crate::config::GatewayLimits,
    /// With `[kubernetes] host_ownership`: the Ingresses' claims and the remembered owners
    /// (`super::host_owners`); None: host ownership is off for the Gateways.
    pub hosts: Option<HostTenancy>,
}

/// What host ownership for the Gateways (`super::host_owners`) reads besides the Gateway API
/// objects; set by the controller when `[kubernetes] host_ownership` is on.
#[derive(Clone, Debug, Default)]
pub struct HostTenancy {
    /// The hosts our Ingresses claim.
    pub ingress_claims: Vec<crate::translate::host_claims::HostClaim>,
    /// The owners remembered in the controller's store.
    pub remembered: crate::translate::tenancy::RememberedOwners,
    pub now: Option<std::time::SystemTime>,
    /// `[kubernetes] host_ownership_grace_period`.
    pub grace: std::time::Duration,
}

/// The namespace of a namespaced object (empty when unset, as in a bad fixture).
pub(crate) fn ns_of<K: kube::Resource>(o: &K) -> String {
    o.meta().namespace.clone().unwrap_or_default()
}

pub(crate) fn name_of<K: kube::Resource>(o: &K) -> String {
    o.meta().name.clone().unwrap_or_default()
}

/// The label the API server sets on every Namespace to its name.
pub const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

impl World {
    pub fn class(&self, name: &str) -> Option<&GatewayClass> {
        self.classes.iter().map(|c| &**c).find(|c| c.metadata.name.as_deref() == Some(name))
    }

    pub fn gateway(&self, namespace: &str, name: &str) -> Option<&Gateway> {
        self.gateways.iter().map(|g| &**g).find(|g| ns_of(*g) == namespace && name_of(*g) == name)
    }

    /// Whether the Gateway's class is one of ours (the Gateway is then ours to serve).
    pub(crate) fn is_ours(&self, gw: &Gateway) -> bool {
        self.class(&gw.spec.gateway_class_name).is_some_and(|c| c.spec.controller_name == super::CONTROLLER_NAME)
    }

    /// Records the Services `p` asks TLS for.
    pub fn add_backend_tls(&mut self, p: &super::api::BackendTLSPolicy) {
        let name = p.metadata.name.clone().unwrap_or_default();
        for key in p.services() {
            self.backend_tls.entry(key).or_insert_with(|| name.clone());
        }
    }

    pub(crate) fn namespace_labels(&self, namespace: &str) -> BTreeMap<String, String> {
        self.namespaces.get(namespace).cloned().unwrap_or_default()
    }
}

impl World {
    /// Adds every object of a multi-document YAML (or JSON) text: the Gateway API kinds, and
    /// Namespaces, Services, Secrets and ConfigMaps (their `ca.crt`) reduced to what the
    /// translation reads. Other kinds are skipped. The error names the document and kind that
    /// does not parse.
    pub fn add_yaml(&mut self, text: &str) -> Result<(), String> {
        let docs: Vec<serde_json::Value> = serde_saphyr::from_multiple(text).map_err(|e| e.to_string())?;
        for (i, doc) in docs.into_iter().enumerate().filter(|(_, d)| !d.is_null()) {
            let kind = doc.get("kind").and_then(|k| k.as_str()).unwrap_or("").to_string();
            let bad = |e: serde_json::Error| format!("document {i} ({kind}): {e}");
            match kind.as_str() {
                "GatewayClass" => self.classes.push(Arc::new(serde_json::from_value(doc).map_err(bad)?)),
                "Gateway" => self.gateways.push(Arc::new(serde_json::from_value(doc).map_err(bad)?)),
                "HTTPRoute" => self.routes.push(Arc::new(serde_json::from_value(doc).map_err(bad)?)),
                "ReferenceGrant" => self.grants.push(Arc::new(serde_json::from_value(doc).map_err(bad)?)),
                "ListenerSet" => self.listener_sets.push(Arc::new(serde_json::from_value(doc).map_err(bad)?)),
                "BackendTLSPolicy" => {
                    let p: super::api::BackendTLSPolicy = serde_json::from_value(doc).map_err(bad)?;
                    self.add_backend_tls(&p);
                }
                "Namespace" => {
                    let ns: k8s_openapi::api::core::v1::Namespace = serde_json::from_value(doc).map_err(bad)?;
                    let name = ns.metadata.name.unwrap_or_default();
                    let mut labels = ns.metadata.labels.unwrap_or_default();
                    // The API server puts this label on every Namespace (Kubernetes >= 1.22);
                    // `allowedRoutes` selectors use it, so manifests read here carry it as well.
                    labels.entry(NAMESPACE_NAME_LABEL.to_string()).or_insert_with(|| name.clone());
                    self.namespaces.insert(name, labels);
                }
                "Service" => {
                    let s: k8s_openapi::api::core::v1::Service = serde_json::from_value(doc).map_err(bad)?;
                    let info = service_info(&s);
                    self.services
                        .insert((s.metadata.namespace.unwrap_or_default(), s.metadata.name.unwrap_or_default()), info);
                }
                "ConfigMap" => {
                    let c: k8s_openapi::api::core::v1::ConfigMap = serde_json::from_value(doc).map_err(bad)?;
                    let key =
                        (c.metadata.namespace.clone().unwrap_or_default(), c.metadata.name.clone().unwrap_or_default());
                    self.ca_config_maps.insert(key, ca_crt(&c));
                }
                "Secret" => {
                    let s: k8s_openapi::api::core::v1::Secret = serde_json::from_value(doc).map_err(bad)?;
                    let key =
                        (s.metadata.namespace.clone().unwrap_or_default(), s.metadata.name.clone().unwrap_or_default());
                    self.secrets.insert(key, secret_info(&s));
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// The key of a ConfigMap holding a CA bundle (the Gateway API's `caCertificateRefs`).
pub const CA_CRT: &str = "ca.crt";

/// The `ca.crt` of a ConfigMap (`data`, else `binaryData` when it is UTF-8).
pub(crate) fn ca_crt(c: &k8s_openapi::api::core::v1::ConfigMap) -> Option<Arc<str>> {
    let text = c.data.as_ref().and_then(|d| d.get(CA_CRT)).cloned();
    let binary = || c.binary_data.as_ref()?.get(CA_CRT).and_then(|b| String::from_utf8(b.0.clone()).ok());
    text.or_else(binary).map(Arc::from)
}

/// A listener can serve a Secret only when it is `kubernetes.io/tls` and its certificate and
/// key parse (with `stringData` merged as the API server would).
pub(crate) fn secret_info(s: &k8s_openapi::api::core::v1::Secret) -> SecretInfo {
    if s.type_.as_deref() != Some("kubernetes.io/tls") {
        return SecretInfo::Malformed;
    }
    if crate::translate::tls::held_without_data(s) {
        return SecretInfo::Pending;
    }
    let get = |k: &str| -> Vec<u8> {
        let from_string = s.string_data.as_ref().and_then(|d| d.get(k)).map(|v| v.as_bytes().to_vec());
        from_string.or_else(|| s.data.as_ref().and_then(|d| d.get(k)).map(|v| v.0.clone())).unwrap_or_default()
    };
    match crate::certificate::ParsedCertificate::from_pem(&get("tls.crt"), &get("tls.key")) {
        Ok(_) => SecretInfo::Tls,
        Err(_) => SecretInfo::Malformed,
    }
}

/// A world from YAML, for tests.
#[cfg(test)]
pub(crate) fn world(yaml: &str) -> World {
    let mut w = World::default();
    w.add_yaml(yaml).unwrap_or_else(|e| panic!("test YAML: {e}"));
    w
}

/// A GatewayClass of ours named `kuryr` and a Gateway `infra/gw` with the given listeners
/// (a YAML list indented by 2 spaces), for tests.
#[cfg(test)]
pub(crate) fn gateway_yaml(listeners: &str) -> String {
    format!(
        "kind: GatewayClass\napiVersion: gateway.networking.k8s.io/v1\nmetadata: {{name: kuryr}}\nspec: {{controllerName: {}}}\n---\n\
kind: Gateway\napiVersion: gateway.networking.k8s.io/v1\nmetadata: {{name: gw, namespace: infra, generation: 3}}\nspec:\n  gatewayClassName: kuryr\n  listeners:\n{listeners}\n",
        super::CONTROLLER_NAME
    )
}

/// A self-signed CA certificate (PEM) with common name `cn`, for tests.
#[cfg(test)]
pub(crate) fn ca_pem(cn: &str) -> String {
    let key = rcgen::KeyPair::generate().expect("a key");
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    params.distinguished_name.push(rcgen::DnType::CommonName, cn);
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params.self_signed(&key).expect("a certificate").pem()
}
