//! Our finalizer on the Gateways of ours (see `crate::gateway::keep`): added to each Gateway of
//! ours, removed from a Gateway being deleted once the router driver reports its load balancer
//! deleted. Without a router driver (nothing would delete the load balancer) no finalizer is
//! added, and ours is removed from a Gateway being deleted at once. A write that fails is logged
//! and made again on the next pass.

use crate::controller::gateway::driver::Released;
use crate::controller::gateway::status::GatewayStores;
use crate::controller::outputs::patches::{add_finalizer_patch, patch_params, remove_finalizer_patch};
use crate::gateway::api::generated as k8s;
use crate::gateway::keep::Fates;
use kube::api::{Api, Patch};
use kube::runtime::reflector::ObjectRef;

/// The finalizer writes one pass of the Gateway loop asks for.
pub(crate) async fn write(client: &kube::Client, stores: &GatewayStores, fates: &Fates, released: Option<&Released>) {
    if released.is_some() {
        for gw in &fates.unfinalized {
            let Some(obj) = stores.gateways.get(&ObjectRef::new(&gw.name).within(&gw.namespace)) else { continue };
            patch(client, &gw.namespace, &gw.name, add_finalizer_patch(&*obj), "added").await;
        }
    }
    for r in &fates.released {
        let key = (r.owner.namespace.clone(), r.owner.name.clone());
        if released.is_some_and(|done| !done.contains(&key)) {
            continue;
        }
        let Some(obj) = stores.gateways.get(&ObjectRef::new(&key.1).within(&key.0)) else { continue };
        if let Some(p) = remove_finalizer_patch(&*obj) {
            patch(client, &key.0, &key.1, p, "removed").await;
        }
    }
}

async fn patch(client: &kube::Client, namespace: &str, name: &str, ops: serde_json::Value, what: &str) {
    let api = Api::<k8s::Gateway>::namespaced(client.clone(), namespace);
    let ops = match serde_json::from_value(ops) {
        Ok(ops) => ops,
        Err(e) => return tracing::warn!(%namespace, gateway = %name, error = %e, "bad finalizer patch"),
    };
    let patch: Patch<()> = Patch::Json(ops);
    match api.patch_metadata(name, &patch_params(), &patch).await {
        Ok(_) => tracing::info!(%namespace, gateway = %name, "the Gateway's finalizer {what}"),
        Err(kube::Error::Api(s)) if s.code == 404 => {}
        Err(e) => {
            tracing::warn!(%namespace, gateway = %name, error = %e, "cannot write the Gateway's finalizer (retried on the next pass)")
        }
    }
}
