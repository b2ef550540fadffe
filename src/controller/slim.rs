//! Objects are slimmed on receipt, before the watch caches: what nothing here reads is dropped,
//! so that the caches (which the translation reads in place, see `translate::Snapshot`) hold
//! only what is used.

use k8s_openapi::api::core::v1::{ConfigMap, Endpoints, Node, ObjectReference, Secret};

/// kubectl's copy of the last applied object, in an annotation.
pub const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// The keys of a TLS Secret the certificate path reads (`translate::tls`, `gateway::world`).
pub(crate) const TLS_KEYS: [&str; 2] = ["tls.crt", "tls.key"];

/// Drops `managedFields` and kubectl's last-applied copy (often most of an object; for a TLS
/// Secret a second copy of its key), a Node's image list (tens of kB per Node), and every key of a Secret but
/// [`TLS_KEYS`] (`ca.crt`, and the keystores and combined PEM cert-manager can add: more key
/// material we would hold for nothing). EndpointSlices are compacted as they are read
/// (`translate::slices::CompactSlice`). Nothing is written back
/// from a cached object (JSON patches of our finalizer, merge patches of our annotations and
/// statuses), so nothing is lost on the server.
pub fn slim<K: kube::Resource + 'static>(obj: &mut K) {
    let meta = obj.meta_mut();
    meta.managed_fields = None;
    if let Some(a) = meta.annotations.as_mut() {
        a.remove(LAST_APPLIED);
    }
    let any = obj as &mut dyn std::any::Any;
    if let Some(status) = any.downcast_mut::<Node>().and_then(|n| n.status.as_mut()) {
        status.images = None;
    } else if let Some(secret) = any.downcast_mut::<Secret>() {
        if let Some(data) = secret.data.as_mut() {
            data.retain(|k, _| TLS_KEYS.contains(&k.as_str()));
        }
        if let Some(data) = secret.string_data.as_mut() {
            data.retain(|k, _| TLS_KEYS.contains(&k.as_str()));
        }
    } else if let Some(endpoints) = any.downcast_mut::<Endpoints>() {
        for subset in endpoints.subsets.iter_mut().flatten() {
            for a in subset.addresses.iter_mut().chain(subset.not_ready_addresses.iter_mut()).flatten() {
                a.hostname = None;
                a.target_ref = target_name(a.target_ref.take());
            }
        }
    }
}

/// A ConfigMap as the Gateway loop caches it: its `ca.crt` only (a Gateway's client certificate
/// validation reads nothing else; `crate::gateway::world::CA_CRT`), without labels and
/// annotations. The watch is cluster-wide, so every other key (application settings, and what a
/// ConfigMap should never hold but sometimes does, such as a CA's private key next to it) is
/// dropped on receipt: never cached, never logged.
pub fn ca_bundle_only(cm: &mut ConfigMap) {
    slim(cm);
    let meta = &mut cm.metadata;
    meta.labels = None;
    meta.annotations = None;
    let ca = crate::gateway::world::CA_CRT;
    if let Some(data) = cm.data.as_mut() {
        data.retain(|k, _| k == ca);
    }
    if let Some(data) = cm.binary_data.as_mut() {
        data.retain(|k, _| k == ca);
    }
}

/// Of a target reference, only its name (the member's target).
fn target_name(target: Option<ObjectReference>) -> Option<ObjectReference> {
    target.map(|t| ObjectReference { name: t.name, ..Default::default() })
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

    /// An EndpointSlice as kube-controller-manager writes it, read as the watch reads it (into
    /// a `CompactSlice`) and slimmed: what the member path reads stays (same digest as the whole
    /// object), its metadata loses what `slim` drops.
    /// A cluster-wide ConfigMap watch caches the `ca.crt` of each ConfigMap and nothing else: a
    /// CA's private key stored beside it (as the upstream conformance suite does) is dropped.
    #[test]
    fn a_config_map_keeps_only_its_ca_crt() {
        let mut cm = ConfigMap {
            metadata: meta(),
            data: Some(
                [("ca.crt", "CERT"), ("key.crt", "KEY"), ("app.conf", "x=1")]
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .into(),
            ),
            binary_data: Some([("blob".to_string(), k8s_openapi::ByteString(b"secret".to_vec()))].into()),
            ..Default::default()
        };
        ca_bundle_only(&mut cm);
        assert_eq!(cm.data.unwrap().into_iter().collect::<Vec<_>>(), [("ca.crt".to_string(), "CERT".to_string())]);
        assert!(cm.binary_data.unwrap().is_empty());
        assert_eq!(cm.metadata.managed_fields, None);
        assert_eq!(cm.metadata.labels, None);
        assert_eq!(cm.metadata.annotations, None);
        assert_eq!(cm.metadata.name.as_deref(), Some("n1"));
    }

    #[test]
    fn an_endpoint_slice_keeps_what_the_member_path_reads() {
        use crate::translate::TranslateOptions;
        use crate::translate::members::SliceCache;
        use crate::translate::slices::CompactSlice;
        use k8s_openapi::api::discovery::v1::EndpointSlice;
        let json = serde_json::json!({
            "metadata": {"name": "web-abc", "namespace": "shop",
                         "labels": {"kubernetes.io/service-name": "web"},
                         "managedFields": [{"manager": "kube-controller-manager"}],
                         "annotations": {"endpoints.kubernetes.io/last-change-trigger-time": "2026-01-01T00:00:00Z"}},
            "addressType": "IPv4",
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP", "appProtocol": "http"}],
            "endpoints": [{
                "addresses": ["10.0.0.1", "10.0.0.9"],
                "conditions": {"ready": false, "serving": true, "terminating": true},
                "hostname": "web-0", "nodeName": "n1", "zone": "az-1",
                "deprecatedTopology": {"kubernetes.io/hostname": "n1"},
                "hints": {"forZones": [{"name": "az-1"}], "forNodes": [{"name": "n1"}]},
                "targetRef": {"kind": "Pod", "namespace": "shop", "name": "web-0",
                              "uid": "0b3c6f0e-9d1a-4c55-8f0e-2a6f7a1d2c3b", "resourceVersion": "123456"}
            }]
        });
        let received: EndpointSlice = serde_json::from_value(json.clone()).unwrap();
        let mut slice: CompactSlice = serde_json::from_value(json).unwrap();
        slim(&mut slice);
        assert_eq!(slice.metadata.managed_fields, None);
        assert_eq!(slice.metadata.labels, received.metadata.labels);
        let e = &slice.endpoints[0];
        assert_eq!(e.address, Some("10.0.0.1".parse().unwrap()));
        assert_eq!(
            (e.node.as_deref(), e.zone.as_deref(), e.target.as_deref()),
            (Some("n1"), Some("az-1"), Some("web-0"))
        );
        // The member path digests both alike.
        let opts = TranslateOptions::default();
        let (mut before, mut after) = (SliceCache::new(opts.vip_family), SliceCache::new(opts.vip_family));
        before.upsert(&received);
        after.upsert(&slice);
        assert_eq!(format!("{before:?}"), format!("{after:?}"));
    }

    #[test]
    fn core_endpoints_keep_the_address_node_and_target_name() {
        let mut e: Endpoints = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "web", "namespace": "shop"},
            "subsets": [{"addresses": [{"ip": "10.0.0.1", "hostname": "web-0", "nodeName": "n1",
                         "targetRef": {"kind": "Pod", "name": "web-0", "uid": "u"}}],
                         "ports": [{"name": "http", "port": 8080}]}]
        }))
        .unwrap();
        slim(&mut e);
        let a = &e.subsets.as_ref().unwrap()[0].addresses.as_ref().unwrap()[0];
        assert_eq!((a.ip.as_str(), a.node_name.as_deref(), a.hostname.as_deref()), ("10.0.0.1", Some("n1"), None));
        assert_eq!(a.target_ref, Some(ObjectReference { name: Some("web-0".into()), ..Default::default() }));
    }

    #[test]
    fn ingresses_and_secrets_lose_managed_fields_and_the_last_applied_copy_and_secrets_keep_only_tls_keys() {
        let mut ing = Ingress { metadata: meta(), ..Default::default() };
        slim(&mut ing);
        assert_eq!(ing.metadata.managed_fields, None);
        assert_eq!(ing.metadata.annotations, kept_annotations());
        assert_eq!(ing.metadata.name.as_deref(), Some("n1"));

        let bytes = |b: &[u8]| k8s_openapi::ByteString(b.to_vec());
        let data = [
            ("tls.key".to_string(), bytes(b"key")),
            ("tls.crt".to_string(), bytes(b"crt")),
            ("ca.crt".to_string(), bytes(b"ca")),
            ("keystore.p12".to_string(), bytes(b"the key again")),
        ];
        let mut secret = Secret { metadata: meta(), data: Some(data.into()), ..Default::default() };
        slim(&mut secret);
        assert_eq!(secret.metadata.annotations, kept_annotations());
        let data = secret.data.unwrap();
        assert_eq!(data.keys().collect::<Vec<_>>(), ["tls.crt", "tls.key"], "only what the certificate path reads");
        assert_eq!((data["tls.key"].0.as_slice(), data["tls.crt"].0.as_slice()), (&b"key"[..], &b"crt"[..]));
    }
}
