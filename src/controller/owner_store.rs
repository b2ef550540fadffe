//! Where the hosts' remembered owners (`[kubernetes] host_ownership`, `translate::tenancy`)
//! outlive the process: sharded ConfigMaps of the controller's namespace
//! (`kuryr-l7-router-owners-<ingress class>-<n>-<i>`, `controller::sharded`'s sharding), written
//! by the leader when a translation changes them, read once at start.
//!
//! Before, they were one annotation of our IngressClass: past the API server's 256 KiB limit on
//! an object's annotations (about 4–5k hosts) the patch failed, and with it the outputs of every
//! Sync. The translation still reads the owners from our IngressClass's annotation: the
//! controller puts the store's owners there in its in-memory copy of the class (never written),
//! so the translation is the same for `plan` and `run`. The annotation on the cluster's class is
//! read once, at the upgrade (only cluster administrators can write it), then never again.

use crate::controller::ControllerError;
use crate::controller::sharded::{ShardStore, Sharded, json, read_key, shard_of};
use crate::translate::host_claims::HostClaim;
use crate::translate::tenancy::{HOST_OWNERS_ANNOTATION, RememberedOwner, RememberedOwners};
use k8s_openapi::api::networking::v1::IngressClass;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};
use tokio::sync::Notify;

const OWNERS_KEY: &str = "owners";

/// The remembered owners, as the store shards them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OwnerRecords(pub RememberedOwners);

impl Sharded for OwnerRecords {
    const PREFIX: &'static str = "kuryr-l7-router-owners-";
    const KIND: &'static str = "owners";

    fn split(&self, n: usize) -> Vec<BTreeMap<String, String>> {
        let mut shards = vec![BTreeMap::<&String, &RememberedOwner>::new(); n];
        for (host, owner) in &self.0 {
            shards[shard_of(host, n)].insert(host, owner);
        }
        shards.iter().map(|s| BTreeMap::from([(OWNERS_KEY.to_string(), json(s))])).collect()
    }

    fn merge(&mut self, name: &str, data: Option<&BTreeMap<String, String>>) -> Result<(), String> {
        let owners: RememberedOwners = read_key(name, data, OWNERS_KEY)?;
        self.0.extend(owners);
        Ok(())
    }
}

/// The store of the owners of `class`'s hosts.
pub type OwnerStore = ShardStore<OwnerRecords>;

/// The owners the leader starts from, and their store in `namespace`: what the store holds; on
/// the first start of this version (no store yet), the owners in our IngressClass's annotation
/// (read once), written to the store. A store that cannot be read is an error: starting from no
/// owners would hand hosts to whichever namespace's Ingress is oldest.
pub async fn start_owners(
    client: &kube::Client,
    namespace: &str,
    class: &str,
) -> Result<(Arc<OwnerStore>, RememberedOwners), ControllerError> {
    let store = OwnerStore::new(kube::Api::namespaced(client.clone(), namespace), class);
    let loaded = store.load().await.map_err(ControllerError::SetRecords)?;
    if let Some(OwnerRecords(owners)) = loaded.records {
        tracing::info!(owners = owners.len(), "host owners read");
        return Ok((Arc::new(store), owners));
    }
    let api: kube::Api<IngressClass> = kube::Api::all(client.clone());
    let stored = api.get_opt(class).await?;
    let owners = crate::translate::tenancy::stored_owners(stored.as_ref());
    tracing::info!(owners = owners.len(), "host owners moved from the IngressClass annotation (read once)");
    store.save(&OwnerRecords(owners.clone())).await;
    Ok((Arc::new(store), owners))
}

/// `classes` with our class (`class`) carrying `owners` (JSON) as its annotation: the in-memory
/// copy the translation reads (nothing is written to the cluster).
pub fn with_owners(classes: &mut [Arc<IngressClass>], class: &str, owners: &str) {
    for c in classes.iter_mut().filter(|c| c.metadata.name.as_deref() == Some(class)) {
        let mut ours = c.as_ref().clone();
        ours.metadata
            .annotations
            .get_or_insert_default()
            .insert(HOST_OWNERS_ANNOTATION.to_string(), owners.to_string());
        *c = Arc::new(ours);
    }
}

/// What the Ingress and the Gateway sides share for host ownership while the leader runs (one
/// owner index for both kinds, `translate::tenancy`): the owners remembered in the store, the
/// hosts the Gateway API objects claim, and the store both write.
#[derive(Default)]
pub struct OwnerBook {
    /// The owners as the store holds them, as JSON (None: no store; the Ingress side reads
    /// our IngressClass's annotation then).
    remembered: Mutex<Option<Arc<str>>>,
    /// The Gateway API's claims of the Gateway loop's last pass, for the Ingress translation.
    gateway_claims: Mutex<Arc<Vec<HostClaim>>>,
    /// Notified when `gateway_claims` changed: the Ingress side translates again (its losers
    /// get their Events, its routes for hosts a Gateway API object owns are taken off).
    pub claims_changed: Notify,
    /// A digest of our Ingresses' claims at the Ingress side's last translation.
    ingress_digest: Mutex<Option<u64>>,
    /// Notified when that digest changed: the Gateway loop makes a pass at once, so that a host
    /// an Ingress gave up (or took) reaches the waiting HTTPRoute without the loop's 30 s recheck.
    pub ingress_claims_changed: Notify,
    store: OnceLock<Arc<OwnerStore>>,
    /// One remember at a time: the in-memory owners and the store's stay the same.
    saving: tokio::sync::Mutex<()>,
}

impl OwnerBook {
    /// Keeps the owners in `store`, starting from `owners`.
    pub fn use_store(&self, store: Arc<OwnerStore>, owners: &RememberedOwners) {
        let json = serde_json::to_string(owners).unwrap_or_else(|_| "{}".into());
        *self.remembered.lock().expect("lock") = Some(json.into());
        let _ = self.store.set(store);
    }

    /// Whether the owners are kept in the store (else on our IngressClass).
    pub fn has_store(&self) -> bool {
        self.store.get().is_some()
    }

    /// The remembered owners (JSON) when they are kept in the store.
    pub fn remembered_json(&self) -> Option<Arc<str>> {
        self.remembered.lock().expect("lock").clone()
    }

    /// The remembered owners when they are kept in the store.
    pub fn remembered(&self) -> Option<RememberedOwners> {
        self.remembered_json().map(|j| serde_json::from_str(&j).unwrap_or_default())
    }

    pub fn gateway_claims(&self) -> Arc<Vec<HostClaim>> {
        self.gateway_claims.lock().expect("lock").clone()
    }

    /// The Gateway API's claims now; the Ingress side is told when they changed.
    pub fn set_gateway_claims(&self, claims: Vec<HostClaim>) {
        let mut held = self.gateway_claims.lock().expect("lock");
        if **held != claims {
            *held = Arc::new(claims);
            self.claims_changed.notify_one();
        }
    }

    /// Our Ingresses' claims now (the Ingress translation's); the Gateway loop is told when they
    /// changed since the last call.
    pub fn set_ingress_claims(&self, claims: &[HostClaim]) {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        for c in claims {
            (&c.host, &c.by.kind, &c.by.namespace, &c.by.name).hash(&mut h);
            c.created.as_ref().map(|t| (t.0.as_second(), t.0.subsec_nanosecond())).hash(&mut h);
        }
        let digest = Some(h.finish());
        let mut held = self.ingress_digest.lock().expect("lock");
        if *held != digest {
            // The first digest too: the Gateway loop's pass before it read no Ingress claim
            // made since the controller started, perhaps.
            *held = digest;
            self.ingress_claims_changed.notify_one();
        }
    }

    /// Remembers `owners` (JSON) in the store when they differ from the remembered ones; false
    /// without a store (nothing done).
    pub async fn remember(&self, owners: &str) -> bool {
        let Some(store) = self.store.get() else { return false };
        let _one = self.saving.lock().await;
        if self.remembered_json().as_deref() == Some(owners) {
            return true;
        }
        let parsed: RememberedOwners = serde_json::from_str(owners).unwrap_or_default();
        *self.remembered.lock().expect("lock") = Some(owners.into());
        store.save(&OwnerRecords(parsed)).await;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::sharded::{OBJECT_LIMIT, config_maps, read_shards};

    /// 6,000 hosts' owners are kept in ConfigMaps each under the object limit (one annotation
    /// holds about 4–5k) and read back whole; another kind of records of the same name is not
    /// read as owners.
    #[test]
    fn six_thousand_owners_round_trip_within_the_object_limit() {
        let owners: RememberedOwners = (0..6000)
            .map(|i| {
                let host = format!("service-{i:05}.team-{:03}.apps.example-cluster.example.com", i % 977);
                let vacated = (i % 5 == 0).then_some(1_800_000_000 + i as u64);
                (host, RememberedOwner { namespace: format!("team-{:03}", i % 977), vacated })
            })
            .collect();
        let annotation = serde_json::to_string(&owners).unwrap();
        assert!(annotation.len() > 256 * 1024, "more than one annotation holds: {}", annotation.len());
        let cms = config_maps("kuryr-l7-router", &OwnerRecords(owners.clone()), 1);
        assert!(cms.len() > 1);
        for cm in &cms {
            assert!(serde_json::to_vec(cm).unwrap().len() < OBJECT_LIMIT, "{:?}", cm.metadata.name);
        }
        let read = read_shards::<OwnerRecords>("kuryr-l7-router", &cms).unwrap();
        assert_eq!(read.records, Some(OwnerRecords(owners)));
        let set = read_shards::<crate::controller::router_set::store::SetRecords>("kuryr-l7-router", &cms).unwrap();
        assert_eq!(set.records, None, "owners are not the set's records");
    }

    #[test]
    fn the_translation_reads_the_owners_from_the_in_memory_class() {
        let class: IngressClass = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "kuryr-l7-router", "annotations": {HOST_OWNERS_ANNOTATION: "{}"}}}))
        .unwrap();
        let other: IngressClass = serde_json::from_value(serde_json::json!({"metadata": {"name": "other"}})).unwrap();
        let mut classes = vec![Arc::new(class), Arc::new(other)];
        with_owners(&mut classes, "kuryr-l7-router", r#"{"a.example.com":{"namespace":"shop"}}"#);
        let owners = crate::translate::tenancy::stored_owners(Some(&classes[0]));
        assert_eq!(owners["a.example.com"].namespace, "shop");
        assert!(classes[1].metadata.annotations.is_none(), "another class untouched");
    }
}
