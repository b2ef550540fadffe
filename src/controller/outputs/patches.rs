//! The Kubernetes patches: every Kubernetes write the controller makes (finalizer, Service notice
//! annotation, Ingress status; Events are in [`crate::controller::outputs::events`]) and the pure decisions that say
//! when to make them.
//!
//! Writes are small async functions over `kube::Api` so each can be tested against a mock API
//! server (`tests/it/controller_k8s.rs`); the decisions are plain functions tested with tables.
//!
//! All patches carry `fieldManager=kuryr-l7-router`, so `kubectl get -o yaml --show-managed-fields`
//! tells users which fields this controller owns.

use crate::controller::outputs::notice::{NoticeChange, ServiceNotice, notice_annotation};
use crate::controller::{CONTROLLER_NAME, ControllerError, FINALIZER, NOTICE_ANNOTATION};
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::networking::v1::{Ingress, IngressLoadBalancerIngress};
use kube::api::{Api, Patch, PatchParams};
use kube::{Resource, ResourceExt};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::fmt::Debug;
use std::net::IpAddr;

/// Patch parameters for all our writes: our field manager, no dry-run, no force.
pub(crate) fn patch_params() -> PatchParams {
    PatchParams { field_manager: Some(CONTROLLER_NAME.to_string()), ..Default::default() }
}

/// Whether `obj` carries our [`FINALIZER`].
pub fn has_finalizer<K: Resource>(obj: &K) -> bool {
    obj.finalizers().iter().any(|f| f == FINALIZER)
}

/// The JSON patch that adds our finalizer, as kube-runtime's `finalizer` helper builds it: a `test`
/// op on the current list (or on its absence) guards against a concurrent writer, since Kubernetes
/// does not deduplicate finalizers; on a failed test the API answers 422 and we retry on the next
/// reconcile with a fresh object.
pub fn add_finalizer_patch<K: Resource>(obj: &K) -> Value {
    if obj.finalizers().is_empty() {
        json!([
            {"op": "test", "path": "/metadata/finalizers", "value": null},
            {"op": "add", "path": "/metadata/finalizers", "value": [FINALIZER]},
        ])
    } else {
        json!([
            {"op": "test", "path": "/metadata/finalizers", "value": obj.finalizers()},
            {"op": "add", "path": "/metadata/finalizers/-", "value": FINALIZER},
        ])
    }
}

/// The JSON patch that removes our finalizer, or `None` when it is absent. It removes by index
/// after a `test` that the index still holds our finalizer, so we never remove someone else's.
pub fn remove_finalizer_patch<K: Resource>(obj: &K) -> Option<Value> {
    let index = obj.finalizers().iter().position(|f| f == FINALIZER)?;
    let path = format!("/metadata/finalizers/{index}");
    Some(json!([
        {"op": "test", "path": path, "value": FINALIZER},
        {"op": "remove", "path": path},
    ]))
}

/// Adds our finalizer to `obj` (no request if already present). Returns the patched object.
pub async fn add_finalizer<K>(api: &Api<K>, obj: &K) -> Result<K, ControllerError>
where
    K: Resource + Clone + DeserializeOwned + Debug,
{
    if has_finalizer(obj) {
        return Ok(obj.clone());
    }
    let name = obj.meta().name.as_deref().ok_or(ControllerError::MissingObjectKey("metadata.name"))?;
    let patch: Patch<()> = Patch::Json(serde_json::from_value(add_finalizer_patch(obj))?);
    Ok(api.patch(name, &patch_params(), &patch).await?)
}

/// Removes our finalizer from `obj` after cleanup (no request if absent). A 404 means the object
/// is already gone (another finalizer-less deletion path), which is success.
pub async fn remove_finalizer<K>(api: &Api<K>, obj: &K) -> Result<(), ControllerError>
where
    K: Resource + Clone + DeserializeOwned + Debug,
{
    let Some(patch) = remove_finalizer_patch(obj) else { return Ok(()) };
    let name = obj.meta().name.as_deref().ok_or(ControllerError::MissingObjectKey("metadata.name"))?;
    let patch: Patch<()> = Patch::Json(serde_json::from_value(patch)?);
    match api.patch(name, &patch_params(), &patch).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// The merge patch that sets (`Some`) or removes (`None`, JSON null) `router`'s notice under its
/// own key ([`notice_annotation`]), and removes the legacy single-key notice when `drop_legacy`
/// (only ever when it names `router`). A merge patch touches only these keys: the notices of other
/// routers, under their own keys, and every other annotation stay as they are, whatever order
/// two controllers write in.
pub(crate) fn annotation_patch(router: &str, notice: Option<&ServiceNotice>, drop_legacy: bool) -> Value {
    let value = match notice {
        Some(n) => Value::String(n.to_annotation()),
        None => Value::Null,
    };
    let mut annotations = serde_json::Map::new();
    annotations.insert(notice_annotation(router), value);
    if drop_legacy {
        annotations.insert(NOTICE_ANNOTATION.to_string(), Value::Null);
    }
    json!({"metadata": {"annotations": annotations}})
}

/// Whether `svc` must be patched to carry exactly `notice` as `router`'s notice (compares parsed
/// values, so a notice written with other key order or spacing is not rewritten; a malformed one
/// is rewritten).
pub fn notice_needs_update(svc: &Service, router: &str, notice: Option<&ServiceNotice>) -> bool {
    match ServiceNotice::from_service(svc, router) {
        Ok(current) => current.as_ref() != notice,
        Err(_) => true,
    }
}

/// Writes one [`NoticeChange`] of `router` on its Service (in `api`'s namespace).
pub async fn patch_service_notice(
    api: &Api<Service>,
    router: &str,
    change: &NoticeChange,
) -> Result<Service, ControllerError> {
    let patch = annotation_patch(router, change.notice.as_ref(), change.drop_legacy);
    Ok(api.patch(&change.service.name, &patch_params(), &Patch::Merge(patch)).await?)
}

/// `status.loadBalancer.ingress` as we write it: one entry with the router's address, or empty.
pub(crate) fn desired_lb_ingress(address: Option<IpAddr>) -> Vec<IngressLoadBalancerIngress> {
    address
        .map(|ip| IngressLoadBalancerIngress { ip: Some(ip.to_string()), ..Default::default() })
        .into_iter()
        .collect()
}

/// Whether the Ingress status must be written: the current `status.loadBalancer.ingress` differs
/// from [`desired_lb_ingress`]. Skipping equal writes avoids a reconcile loop (each status write
/// is a watch event) and needless API traffic.
pub fn status_needs_update(ing: &Ingress, address: Option<IpAddr>) -> bool {
    let current = ing
        .status
        .as_ref()
        .and_then(|s| s.load_balancer.as_ref())
        .and_then(|lb| lb.ingress.clone())
        .unwrap_or_default();
    current != desired_lb_ingress(address)
}

/// The merge patch for the status subresource: `[{ip}]`, or null to clear it (an Ingress that
/// left our class must not keep advertising our address).
pub(crate) fn status_patch(address: Option<IpAddr>) -> Value {
    match address {
        Some(ip) => json!({"status": {"loadBalancer": {"ingress": [{"ip": ip.to_string()}]}}}),
        None => json!({"status": {"loadBalancer": {"ingress": null}}}),
    }
}

/// Writes `status.loadBalancer.ingress` of `ing` through the status subresource, unless already
/// equal. Returns `None` when the write was skipped.
pub async fn patch_ingress_status(
    api: &Api<Ingress>,
    ing: &Ingress,
    address: Option<IpAddr>,
) -> Result<Option<Ingress>, ControllerError> {
    if !status_needs_update(ing, address) {
        return Ok(None);
    }
    let name = ing.metadata.name.as_deref().ok_or(ControllerError::MissingObjectKey("metadata.name"))?;
    Ok(Some(api.patch_status(name, &patch_params(), &Patch::Merge(status_patch(address))).await?))
}

/// Writes `status.loadBalancer.ingress` of `ing` as `addresses`, in order (during a move, both
/// routers': external-dns publishes an A record for each), unless already equal.
pub async fn patch_ingress_addresses(
    api: &Api<Ingress>,
    ing: &Ingress,
    addresses: &[IpAddr],
) -> Result<Option<Ingress>, ControllerError> {
    let want: Vec<IngressLoadBalancerIngress> = addresses.iter().flat_map(|a| desired_lb_ingress(Some(*a))).collect();
    let current = ing.status.as_ref().and_then(|s| s.load_balancer.as_ref()).and_then(|lb| lb.ingress.clone());
    if current.unwrap_or_default() == want {
        return Ok(None);
    }
    let name = ing.metadata.name.as_deref().ok_or(ControllerError::MissingObjectKey("metadata.name"))?;
    let ips: Vec<Value> = addresses.iter().map(|a| json!({"ip": a.to_string()})).collect();
    let patch = json!({"status": {"loadBalancer": {"ingress": ips}}});
    Ok(Some(api.patch_status(name, &patch_params(), &Patch::Merge(patch)).await?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn ingress(finalizers: &[&str], deleting: bool) -> Ingress {
        let mut ing = Ingress::default();
        ing.metadata.name = Some("web".into());
        if !finalizers.is_empty() {
            ing.metadata.finalizers = Some(finalizers.iter().map(|s| s.to_string()).collect());
        }
        if deleting {
            ing.metadata.deletion_timestamp = Some(Time(Default::default()));
        }
        ing
    }

    #[test]
    fn finalizer_patches() {
        assert_eq!(
            add_finalizer_patch(&ingress(&[], false)),
            json!([{"op":"test","path":"/metadata/finalizers","value":null},
                   {"op":"add","path":"/metadata/finalizers","value":[FINALIZER]}])
        );
        assert_eq!(
            add_finalizer_patch(&ingress(&["a/b"], false)),
            json!([{"op":"test","path":"/metadata/finalizers","value":["a/b"]},
                   {"op":"add","path":"/metadata/finalizers/-","value":FINALIZER}])
        );
        assert_eq!(remove_finalizer_patch(&ingress(&["a/b"], true)), None);
        assert_eq!(
            remove_finalizer_patch(&ingress(&["a/b", FINALIZER], true)),
            Some(json!([{"op":"test","path":"/metadata/finalizers/1","value":FINALIZER},
                        {"op":"remove","path":"/metadata/finalizers/1"}]))
        );
        // Both are valid JSON patches for kube's Patch::Json.
        let _: Patch<()> = Patch::Json(serde_json::from_value(add_finalizer_patch(&ingress(&[], false))).unwrap());
    }

    #[test]
    fn annotation_patch_sets_and_removes_only_our_key() {
        let n = ServiceNotice { router: "r".into(), pools: vec!["p".into()], ingresses: vec!["ns/i".into()] };
        let key = "kuryr-l7-router.openstack.org/r";
        assert_eq!(
            annotation_patch("r", Some(&n), false),
            json!({"metadata":{"annotations":{key: r#"{"router":"r","pools":["p"],"ingresses":["ns/i"]}"#}}})
        );
        assert_eq!(annotation_patch("r", None, false), json!({"metadata":{"annotations":{key: null}}}));
        assert_eq!(
            annotation_patch("r", None, true),
            json!({"metadata":{"annotations":{key: null, NOTICE_ANNOTATION: null}}})
        );
    }

    /// RFC 7386, as the API server applies a merge patch.
    fn merge(target: &mut Value, patch: &Value) {
        match (target.as_object_mut(), patch.as_object()) {
            (Some(t), Some(p)) => {
                for (k, v) in p {
                    if v.is_null() {
                        t.remove(k);
                    } else {
                        merge(t.entry(k.clone()).or_insert(json!({})), v);
                    }
                }
            }
            _ => *target = patch.clone(),
        }
    }

    #[test]
    fn two_routers_notices_merge_in_any_order_and_removal_keeps_the_other() {
        let notice = |r: &str| ServiceNotice { router: r.into(), pools: vec!["shop_web".into()], ingresses: vec![] };
        let (a, b) = (notice("router-a"), notice("router-b"));
        let start = json!({"metadata": {"name": "web", "annotations": {"team": "shop"}}});
        let set_a = annotation_patch("router-a", Some(&a), false);
        let set_b = annotation_patch("router-b", Some(&b), false);
        let (mut ab, mut ba) = (start.clone(), start.clone());
        merge(&mut ab, &set_a);
        merge(&mut ab, &set_b);
        merge(&mut ba, &set_b);
        merge(&mut ba, &set_a);
        assert_eq!(ab, ba, "the order of the two controllers' writes does not matter");
        let svc: Service = serde_json::from_value(ab.clone()).unwrap();
        assert_eq!(ServiceNotice::from_service(&svc, "router-a").unwrap(), Some(a));
        assert_eq!(ServiceNotice::from_service(&svc, "router-b").unwrap(), Some(b.clone()));
        assert_eq!(svc.metadata.annotations.as_ref().unwrap()["team"], "shop");
        // router-a stops using the Service: only its own notice goes.
        merge(&mut ab, &annotation_patch("router-a", None, false));
        let svc: Service = serde_json::from_value(ab).unwrap();
        assert_eq!(ServiceNotice::from_service(&svc, "router-a").unwrap(), None);
        assert_eq!(ServiceNotice::from_service(&svc, "router-b").unwrap(), Some(b));
        assert_eq!(svc.metadata.annotations.as_ref().unwrap().len(), 2, "{:?}", svc.metadata.annotations);
    }

    #[test]
    fn notice_needs_update_compares_parsed_values() {
        let n = ServiceNotice { router: "r".into(), pools: vec!["p".into()], ingresses: vec![] };
        let key = notice_annotation("r");
        let mut svc = Service::default();
        assert!(notice_needs_update(&svc, "r", Some(&n)));
        assert!(!notice_needs_update(&svc, "r", None));
        let spaced = r#"{ "ingresses": [], "pools": ["p"], "router": "r" }"#.to_string();
        svc.metadata.annotations = Some([(key.clone(), spaced)].into());
        assert!(!notice_needs_update(&svc, "r", Some(&n)));
        assert!(notice_needs_update(&svc, "r", None));
        assert!(!notice_needs_update(&svc, "other", None), "another router's key is not ours");
        svc.metadata.annotations = Some([(key, "garbage".to_string())].into());
        assert!(notice_needs_update(&svc, "r", Some(&n)));
    }

    #[test]
    fn status_decision_table() {
        let ip: IpAddr = "172.24.4.10".parse().unwrap();
        let other: IpAddr = "172.24.4.11".parse().unwrap();
        let with = |v: Value| -> Ingress {
            serde_json::from_value(json!({"metadata": {"name": "web"}, "status": v})).unwrap()
        };
        let cases = [
            (Ingress::default(), Some(ip), true),
            (Ingress::default(), None, false),
            (with(json!({"loadBalancer": {}})), None, false),
            (with(json!({"loadBalancer": {"ingress": []}})), None, false),
            (with(json!({"loadBalancer": {"ingress": [{"ip": "172.24.4.10"}]}})), Some(ip), false),
            (with(json!({"loadBalancer": {"ingress": [{"ip": "172.24.4.10"}]}})), Some(other), true),
            (with(json!({"loadBalancer": {"ingress": [{"ip": "172.24.4.10"}]}})), None, true),
            (with(json!({"loadBalancer": {"ingress": [{"ip": "172.24.4.10"}, {"ip": "10.0.0.1"}]}})), Some(ip), true),
            (with(json!({"loadBalancer": {"ingress": [{"hostname": "lb.example"}]}})), Some(ip), true),
        ];
        for (i, (ing, addr, want)) in cases.into_iter().enumerate() {
            assert_eq!(status_needs_update(&ing, addr), want, "case {i}");
        }
        assert_eq!(status_patch(Some(ip)), json!({"status":{"loadBalancer":{"ingress":[{"ip":"172.24.4.10"}]}}}));
        assert_eq!(status_patch(None), json!({"status":{"loadBalancer":{"ingress":null}}}));
        let v6: IpAddr = "2001:db8::1".parse().unwrap();
        assert_eq!(status_patch(Some(v6)), json!({"status":{"loadBalancer":{"ingress":[{"ip":"2001:db8::1"}]}}}));
    }
}
