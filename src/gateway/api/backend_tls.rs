//! BackendTLSPolicy (v1, standard channel), read only for its targets: a route to a Service that
//! a policy asks TLS for is refused by name (`crate::gateway::backends`), since an Octavia pool
//! cannot originate TLS as the policy says, and serving it in plain HTTP would send in clear what
//! its owner asked to encrypt. Only `targetRefs` is modelled; every other field is ignored, so
//! that no policy of a newer release fails the list.

use kube::CustomResource;
use serde::{Deserialize, Serialize};

/// `BackendTLSPolicy.spec`, its targets only.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(group = "gateway.networking.k8s.io", version = "v1", kind = "BackendTLSPolicy")]
#[kube(plural = "backendtlspolicies", namespaced, schema = "disabled")]
#[serde(rename_all = "camelCase")]
pub struct BackendTLSPolicySpec {
    #[serde(default)]
    pub target_refs: Vec<PolicyTargetRef>,
}

/// A policy's target: a Service of the policy's namespace (`group` empty, `kind` Service).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyTargetRef {
    #[serde(default)]
    pub group: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub name: String,
}

impl BackendTLSPolicy {
    /// The Services (namespace, name) this policy asks TLS for.
    pub fn services(&self) -> impl Iterator<Item = (String, String)> + '_ {
        let ns = self.metadata.namespace.clone().unwrap_or_default();
        self.spec
            .target_refs
            .iter()
            .filter(|t| t.group.is_empty() && t.kind == "Service")
            .map(move |t| (ns.clone(), t.name.clone()))
    }
}
