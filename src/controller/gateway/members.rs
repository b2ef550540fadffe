//! Endpoint changes to the Gateways' routers: the Ingress side's Service handler (triggered by
//! the Service, its EndpointSlices or Endpoints, and the Node labels that weigh its members)
//! records each changed Service in `service_changes::ServiceChanges`; the Gateway driver takes
//! them and refills, on each Gateway router, the pools those Services feed, as Members jobs on
//! that router's writer ([`refill`]), without translating the Gateway again.
//!
//! The pools are the ones of the router's last successful Sync, refilled by the same
//! [`service_members`] the Ingress side uses, so a split pool is re-weighed over all its
//! Services. A change the Members path cannot carry (a Service gone, a port gone, a pool not
//! synced yet) asks the driver for a full pass instead.

use crate::controller::context::Stores;
use crate::controller::services::members::{endpoints_of, node_index, service_members};
use crate::model::{DesiredRouter, KubeRef, Pool};
use crate::translate::TranslateOptions;
use kube::runtime::reflector::ObjectRef;
use std::collections::BTreeSet;

/// What the changed Services make of one router's pools.
#[derive(Debug, Default, PartialEq)]
pub struct Refill {
    /// The pools fed by a changed Service, with their members of now.
    pub pools: Vec<Pool>,
    /// Why the router needs a full pass instead (None: the Members jobs suffice).
    pub needs_pass: Option<String>,
}

/// The pools of `synced` (a Gateway router's last successful Sync) fed by a Service of
/// `changed`, refilled from the caches.
pub fn refill(changed: &BTreeSet<KubeRef>, synced: &DesiredRouter, stores: &Stores, opts: &TranslateOptions) -> Refill {
    let mut out = Refill::default();
    let nodes = stores.nodes.state();
    let nodes = node_index(&nodes);
    let lookup = |s: &KubeRef| stores.services.get(&ObjectRef::new(&s.name).within(&s.namespace));
    let other = |s: &KubeRef| lookup(s).map(|svc| (svc.clone(), endpoints_of(&svc, stores, opts)));
    // A pool fed by two changed Services is refilled once.
    let mut done = BTreeSet::new();
    for service in changed {
        let names: Vec<String> = synced
            .pools
            .values()
            .filter(|p| !done.contains(&p.name) && p.feeders().contains(&service))
            .map(|p| p.name.clone())
            .collect();
        if names.is_empty() {
            continue;
        }
        let Some(svc) = lookup(service) else {
            out.needs_pass = Some(format!("{service} is gone"));
            continue;
        };
        let endpoints = endpoints_of(&svc, stores, opts);
        let update = service_members(&svc, &names, synced, &endpoints, &other, &nodes, opts);
        if update.needs_sync.is_some() {
            out.needs_pass = update.needs_sync;
        }
        done.extend(names);
        out.pools.extend(update.pools);
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::controller::context::StoreWriters;
    use crate::controller::service_changes::ServiceChanges;
    use crate::model::Member;
    use kube::runtime::watcher::Event;
    use serde_json::json;
    use std::time::Duration;

    fn pool(name: &str, service: &str) -> Pool {
        Pool {
            name: name.into(),
            service: KubeRef::service("shop", service),
            service_port: "http".into(),
            lb_algorithm: "ROUND_ROBIN".into(),
            members: vec![],
            weighting: String::new(),
            split: vec![],
            member_mode: Default::default(),
        }
    }

    /// Caches with the Service `shop/cart` (port `http` 80 → 8080) and one EndpointSlice of
    /// ready `ips`: the fixture of the Gateway member and router tests.
    pub(crate) fn stores_with(ips: &[&str]) -> Stores {
        let (stores, mut w) = StoreWriters::new();
        let service = serde_json::from_value(json!({
            "metadata": {"name": "cart", "namespace": "shop"},
            "spec": {"ports": [{"name": "http", "port": 80, "targetPort": 8080}]}
        }))
        .unwrap();
        w.services.apply_watcher_event(&Event::Apply(service));
        let slice = serde_json::from_value(json!({
            "metadata": {"name": "cart-abc", "namespace": "shop", "labels": {"kubernetes.io/service-name": "cart"}},
            "addressType": "IPv4",
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
            "endpoints": ips.iter().map(|ip| json!({"addresses": [ip], "conditions": {"ready": true}})).collect::<Vec<_>>()
        }))
        .unwrap();
        w.slices.apply_watcher_event(&Event::Apply(slice));
        stores
    }

    fn addresses(pools: &[Pool]) -> Vec<String> {
        pools.iter().flat_map(|p| &p.members).map(|m: &Member| m.address.to_string()).collect()
    }

    #[test]
    fn only_the_pools_a_changed_service_feeds_are_refilled() {
        let stores = stores_with(&["10.0.0.5", "10.0.0.6"]);
        let mut synced = DesiredRouter::default();
        synced.pools.insert("shop_cart".into(), pool("shop_cart", "cart"));
        synced.pools.insert("shop_other".into(), pool("shop_other", "other"));
        let opts = TranslateOptions { use_endpoint_slices: true, ..Default::default() };
        let changed = BTreeSet::from([KubeRef::service("shop", "cart")]);
        let got = refill(&changed, &synced, &stores, &opts);
        assert_eq!(got.needs_pass, None);
        assert_eq!(got.pools.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(), ["shop_cart"]);
        assert_eq!(addresses(&got.pools), ["10.0.0.5", "10.0.0.6"]);

        let unrelated = BTreeSet::from([KubeRef::service("shop", "nobody")]);
        assert_eq!(refill(&unrelated, &synced, &stores, &opts), Refill::default());
    }

    #[test]
    fn a_service_gone_or_a_port_gone_asks_for_a_pass() {
        let stores = stores_with(&["10.0.0.5"]);
        let mut synced = DesiredRouter::default();
        synced.pools.insert("shop_gone".into(), pool("shop_gone", "gone"));
        let mut renamed = pool("shop_cart", "cart");
        renamed.service_port = "grpc".into();
        synced.pools.insert("shop_cart".into(), renamed);
        let opts = TranslateOptions { use_endpoint_slices: true, ..Default::default() };
        let gone = refill(&BTreeSet::from([KubeRef::service("shop", "gone")]), &synced, &stores, &opts);
        assert!(gone.needs_pass.is_some_and(|w| w.contains("gone")));
        let port = refill(&BTreeSet::from([KubeRef::service("shop", "cart")]), &synced, &stores, &opts);
        assert!(port.needs_pass.is_some_and(|w| w.contains("grpc")));
    }

    #[tokio::test]
    async fn changes_of_one_window_are_taken_together() {
        let changes = ServiceChanges::default();
        changes.changed(KubeRef::service("shop", "a"));
        changes.changed(KubeRef::service("shop", "b"));
        changes.changed(KubeRef::service("shop", "a"));
        let got = changes.next(Duration::ZERO).await;
        assert_eq!(got.len(), 2);
        let waiting = tokio::time::timeout(Duration::from_millis(50), changes.next(Duration::ZERO)).await;
        assert!(waiting.is_err(), "nothing more pending");
    }
}
