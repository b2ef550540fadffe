//! Objects are slimmed on receipt, before the watch caches: what nothing here reads is dropped,
//! so that the caches (which the translation reads in place, see `translate::Snapshot`) hold
//! only what is used.

use k8s_openapi::api::core::v1::Node;

/// kubectl's copy of the last applied object, in an annotation.
pub const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Drops `managedFields` and kubectl's last-applied copy (often most of an object; for a TLS
/// Secret a second copy of its key), and a Node's image list (tens of kB per Node). Nothing is
/// written back from a cached object (JSON patches of our finalizer, merge patches of our
/// annotations and statuses), so nothing is lost on the server.
pub fn slim<K: kube::Resource + 'static>(obj: &mut K) {
    let meta = obj.meta_mut();
    meta.managed_fields = None;
    if let Some(a) = meta.annotations.as_mut() {
        a.remove(LAST_APPLIED);
    }
    if let Some(status) = (obj as &mut dyn std::any::Any).downcast_mut::<Node>().and_then(|n| n.status.as_mut()) {
        status.images = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{ContainerImage, NodeCondition, NodeStatus, Secret};
    use k8s_openapi::api::networking::v1::Ingress;
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ManagedFieldsEntry, ObjectMeta};

    fn meta() -> ObjectMeta {
        ObjectMeta {
            name: Some("n1".into()),
            labels: Some([("topology.kubernetes.io/zone".to_string(), "az-1".to_string())].into()),
            annotations: Some(
                [(LAST_APPLIED.to_string(), "{\"big\":1}".to_string()), ("a/b".to_string(), "kept".to_string())].into(),
            ),
            managed_fields: Some(vec![ManagedFieldsEntry { manager: Some("kubectl".into()), ..Default::default() }]),
            ..Default::default()
        }
    }

    fn kept_annotations() -> Option<std::collections::BTreeMap<String, String>> {
        Some([("a/b".to_string(), "kept".to_string())].into())
    }

    #[test]
    fn a_node_keeps_its_labels_conditions_and_allocatable_and_loses_its_images() {
        let mut node = Node {
            metadata: meta(),
            status: Some(NodeStatus {
                images: Some(vec![ContainerImage { names: Some(vec!["img".into()]), size_bytes: Some(1) }]),
                allocatable: Some([("cpu".to_string(), Quantity("4".into()))].into()),
                conditions: Some(vec![NodeCondition {
                    type_: "Ready".into(),
                    status: "True".into(),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
            ..Default::default()
        };
        slim(&mut node);
        let status = node.status.as_ref().unwrap();
        assert_eq!(status.images, None);
        assert!(status.allocatable.as_ref().unwrap().contains_key("cpu"));
        assert_eq!(status.conditions.as_ref().unwrap().len(), 1);
        assert_eq!(node.metadata.managed_fields, None);
        assert_eq!(node.metadata.annotations, kept_annotations());
        assert_eq!(node.metadata.labels, meta().labels);
    }

    #[test]
    fn ingresses_and_secrets_lose_managed_fields_and_the_last_applied_copy_only() {
        let mut ing = Ingress { metadata: meta(), ..Default::default() };
        slim(&mut ing);
        assert_eq!(ing.metadata.managed_fields, None);
        assert_eq!(ing.metadata.annotations, kept_annotations());
        assert_eq!(ing.metadata.name.as_deref(), Some("n1"));

        let data = [("tls.key".to_string(), k8s_openapi::ByteString(b"key".to_vec()))].into();
        let mut secret = Secret { metadata: meta(), data: Some(data), ..Default::default() };
        slim(&mut secret);
        assert_eq!(secret.metadata.annotations, kept_annotations());
        assert_eq!(secret.data.unwrap()["tls.key"].0, b"key");
    }
}
