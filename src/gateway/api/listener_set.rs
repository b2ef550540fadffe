//! `ListenerSet` (v1, standard channel since Gateway API v1.5): listeners that another object
//! (often another namespace) adds to a Gateway, which admits them by its `spec.allowedListeners`.
//! The domain type the translation reads; the watch reads the generated kind
//! (`super::generated::listenersets`). Its listener entries have the Gateway listener's fields,
//! so they are [`Listener`]s here.

use super::{Listener, ListenerStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use serde::{Deserialize, Serialize};

/// `ListenerSet.spec`.
#[serde_with::skip_serializing_none]
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(group = "gateway.networking.k8s.io", version = "v1", kind = "ListenerSet", namespaced)]
#[kube(status = "ListenerSetStatus", schema = "disabled")]
#[serde(rename_all = "camelCase")]
pub struct ListenerSetSpec {
    pub parent_ref: ParentGatewayReference,
    #[serde(default)]
    pub listeners: Vec<Listener>,
}

/// The Gateway a ListenerSet adds its listeners to.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ParentGatewayReference {
    #[serde(default)]
    pub group: Option<String>,
    #[serde(default)]
    pub kind: Option<String>,
    pub name: String,
    /// The ListenerSet's namespace when unset.
    #[serde(default)]
    pub namespace: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListenerSetStatus {
    #[serde(default)]
    pub conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub listeners: Vec<ListenerStatus>,
}
