//! The router set's own records, where tenants cannot write them: the placement of each host
//! (its router, its group and the group's cost as accepted there) and the moves in progress,
//! kept in ConfigMaps of the controller's namespace (`[kubernetes] lease_namespace`, where its
//! Lease and the stamps' ConfigMaps are), written by the leader only.
//!
//! Before, these records were annotations on the Ingresses, read from every Ingress of every
//! class and trusted as they were: any namespace editor could pin or move another tenant's
//! hosts, or make the set create routers. The annotations are now read once, at the upgrade,
//! and only what Octavia confirms is kept (`set_migration`).
//!
//! **Sharded** (`controller::sharded`): the records are spread over `n` ConfigMaps
//! (`kuryr-l7-router-set-<set>-<n>-<i>`) by a stable hash of each host (of each move's group),
//! so no object nears the API server's 1 MiB limit whatever the number of hosts (10k hosts:
//! `set_store_tests`).

use crate::controller::router_set::moves::{MoveAsk, Moves};
use crate::controller::router_set::rollback::Hold;
pub use crate::controller::sharded::{
    KIND_LABEL, OBJECT_LIMIT, SET_LABEL, SHARD_BYTES, Sharded, config_maps, json, read_key, read_shards, shard_name_of,
    shard_of,
};
use crate::controller::sharded::{SET_ANNOTATION, ShardStore, object_name};
use crate::controller::stamp_store::{APP, APP_LABEL};
use crate::placement::relief::HostCosts;
use crate::placement::{Cost, GroupId, MovePhase, RouterIndex};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{ObjectMeta, Patch, PatchParams};
use std::collections::BTreeMap;

/// The prefix of the set's ConfigMaps.
const PREFIX: &str = "kuryr-l7-router-set-";

/// The set's records in the API (`sharded`): read once at start, written by the leader after
/// each Sync of the set that changed them.
pub type SetStore<T = SetRecords> = ShardStore<T>;

/// What a read of the store found.
pub type Loaded<T = SetRecords> = crate::controller::sharded::Loaded<T>;

/// Data keys: the hosts' records, the moves in progress, the rollbacks' holds (only in a shard
/// that has some, so that a set without holds writes what it wrote before them).
const HOSTS_KEY: &str = "hosts";
const MOVES_KEY: &str = "moves";
const HOLDS_KEY: &str = "holds";

/// One host's record: its router, and its group with the group's cost as last accepted there
/// (what a new leader compares with to see which groups grew).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct HostRecord {
    #[serde(rename = "r")]
    pub router: RouterIndex,
    #[serde(rename = "g", default, skip_serializing_if = "Option::is_none")]
    pub group: Option<GroupId>,
    #[serde(rename = "p", default, skip_serializing_if = "Option::is_none")]
    pub policies: Option<u32>,
    #[serde(rename = "c", default, skip_serializing_if = "Option::is_none")]
    pub certificates: Option<u32>,
}

impl HostRecord {
    pub fn on(router: RouterIndex) -> Self {
        Self { router, group: None, policies: None, certificates: None }
    }

    /// The recorded group and cost, if any.
    pub fn cost(&self) -> Option<(GroupId, Cost)> {
        let cost = Cost { policies: self.policies?, certificates: self.certificates? };
        Some((self.group.clone()?, cost))
    }

    pub fn with_cost(mut self, group: GroupId, cost: Cost) -> Self {
        self.group = Some(group);
        self.policies = Some(cost.policies);
        self.certificates = Some(cost.certificates);
        self
    }
}

/// The set's records.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SetRecords {
    pub hosts: BTreeMap<String, HostRecord>,
    /// The moves in progress, by the group id they started with (never a finished one).
    pub moves: Moves,
    /// The holds of the moves rolled back (`rollback`), each with its expiry: a restarted
    /// leader does not start such a move again before the hold ends.
    pub holds: Vec<Hold>,
}

impl SetRecords {
    /// Each recorded host → its router.
    pub fn placement(&self) -> BTreeMap<String, RouterIndex> {
        self.hosts.iter().map(|(h, r)| (h.clone(), r.router)).collect()
    }

    /// Each host with a recorded cost → its group and the group's cost.
    pub fn costs(&self) -> HostCosts {
        self.hosts.iter().filter_map(|(h, r)| Some((h.clone(), r.cost()?))).collect()
    }

    /// Keeps only the moves not finished.
    pub fn set_moves<'a>(&mut self, moves: impl IntoIterator<Item = (&'a GroupId, &'a crate::placement::MovePlan)>) {
        self.moves = moves
            .into_iter()
            .filter(|(_, m)| !matches!(m.phase, MovePhase::Done { .. }))
            .map(|(g, m)| (g.clone(), m.clone()))
            .collect();
    }
}

impl Sharded for SetRecords {
    const PREFIX: &'static str = PREFIX;
    const KIND: &'static str = "set";

    fn split(&self, n: usize) -> Vec<BTreeMap<String, String>> {
        let mut hosts = vec![BTreeMap::new(); n];
        let mut moves = vec![Moves::new(); n];
        let mut holds: Vec<Vec<&Hold>> = vec![Vec::new(); n];
        for (host, record) in &self.hosts {
            hosts[shard_of(host, n)].insert(host.clone(), record.clone());
        }
        for (group, plan) in &self.moves {
            moves[shard_of(group, n)].insert(group.clone(), plan.clone());
        }
        for hold in &self.holds {
            holds[shard_of(hold.hosts.first().map_or("", String::as_str), n)].push(hold);
        }
        let shards = hosts.iter().zip(&moves).zip(&holds);
        shards
            .map(|((h, m), held)| {
                let mut data = BTreeMap::from([(HOSTS_KEY.to_string(), json(h)), (MOVES_KEY.to_string(), json(m))]);
                if !held.is_empty() {
                    data.insert(HOLDS_KEY.to_string(), json(held));
                }
                data
            })
            .collect()
    }

    fn merge(&mut self, name: &str, data: Option<&BTreeMap<String, String>>) -> Result<(), String> {
        let hosts: BTreeMap<String, HostRecord> = read_key(name, data, HOSTS_KEY)?;
        let moves: Moves = read_key(name, data, MOVES_KEY)?;
        let holds: Vec<Hold> = match data.and_then(|d| d.get(HOLDS_KEY)) {
            Some(text) => serde_json::from_str(text).map_err(|e| format!("ConfigMap {name}: {HOLDS_KEY}: {e}"))?,
            None => Vec::new(),
        };
        self.hosts.extend(hosts);
        self.moves.extend(moves);
        self.holds.extend(holds);
        Ok(())
    }
}

/// The name of shard `i` of `n` of set `base` (a valid object name whatever `base` is).
pub fn shard_name(base: &str, n: usize, i: usize) -> String {
    shard_name_of::<SetRecords>(base, n, i)
}

/// The name of the ConfigMap of the operator's move requests of set `base` (`kuryr-l7-router
/// move`): written by the operator, only read by the controller.
pub fn asks_name(base: &str) -> String {
    object_name(PREFIX, base, "moves")
}

/// The data key of Ingress `namespace/name` in the asks' ConfigMap: `namespace.name` (a
/// namespace has no dot, so the first one splits them back).
pub fn ask_key(ingress: &str) -> Option<String> {
    let (ns, name) = ingress.split_once('/')?;
    let valid = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-.".contains(c));
    (valid(ns) && !ns.contains('.') && valid(name)).then(|| format!("{ns}.{name}"))
}

/// The operator's move requests in the asks' ConfigMap: Ingress key → the router named (a name
/// outside the set is refused with its reason, as the annotation's).
/// A cancel request (`kuryr-l7-router move --cancel`) is the key's value [`CANCEL_REQUEST`]
/// instead of a router: it is not an ask (see [`read_cancels`]).
pub fn read_asks(base: &str, cm: &ConfigMap) -> Vec<MoveAsk> {
    let data = cm.data.iter().flatten().filter(|(_, v)| v.trim() != CANCEL_REQUEST);
    let ask = |(key, router): (&String, &String)| {
        let (ns, name) = key.split_once('.')?;
        let target = crate::placement::router_index(base, router.trim()).ok_or_else(|| {
            format!(
                "kuryr-l7-router move: {router:?} is not a router of this set (expected {base} or {base}-N, N >= 2)"
            )
        });
        Some(MoveAsk { ingress: format!("{ns}/{name}"), target })
    };
    data.filter_map(ask).collect()
}

/// Writes (or, `router` None, removes) the operator's request to move the host group of
/// Ingress `namespace/name` to `router` (`kuryr-l7-router move`). The controller reads it at
/// its next Sync of the set; the request stays until removed (a group on the router named does
/// not move again, and is never moved automatically).
pub async fn request_move(api: &Api<ConfigMap>, base: &str, ingress: &str, router: Option<&str>) -> Result<(), String> {
    let key = ask_key(ingress).ok_or_else(|| format!("{ingress:?} is not <namespace>/<name> of an Ingress"))?;
    if let Some(r) = router
        && crate::placement::router_index(base, r).is_none()
    {
        return Err(format!("{r:?} is not a router of the set {base:?} (expected {base} or {base}-N, N >= 2)"));
    }
    write_request(api, base, key, router).await
}

/// The value of an Ingress's key in the asks' ConfigMap that asks to cancel its group's move.
pub const CANCEL_REQUEST: &str = "cancel";

/// The Ingresses (`namespace/name`) whose group's move the operator asks to cancel.
pub fn read_cancels(cm: &ConfigMap) -> Vec<String> {
    let data = cm.data.iter().flatten().filter(|(_, v)| v.trim() == CANCEL_REQUEST);
    data.filter_map(|(key, _)| key.split_once('.').map(|(ns, name)| format!("{ns}/{name}"))).collect()
}

/// Writes the operator's request to cancel the move of Ingress `namespace/name`'s group
/// (`kuryr-l7-router move --cancel`), in place of its move request if any. The controller
/// removes it once it rolled the move back, or refused to.
pub async fn request_cancel(api: &Api<ConfigMap>, base: &str, ingress: &str) -> Result<(), String> {
    let key = ask_key(ingress).ok_or_else(|| format!("{ingress:?} is not <namespace>/<name> of an Ingress"))?;
    write_request(api, base, key, Some(CANCEL_REQUEST)).await
}

/// Writes (`value` None: removes) Ingress key `key`'s value in the asks' ConfigMap.
async fn write_request(api: &Api<ConfigMap>, base: &str, key: String, router: Option<&str>) -> Result<(), String> {
    let name = asks_name(base);
    let patch = serde_json::json!({"data": {key.clone(): router}});
    match api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 404 && router.is_some() => {
            let cm = ConfigMap {
                metadata: ObjectMeta {
                    name: Some(name),
                    labels: Some(BTreeMap::from([(APP_LABEL.to_string(), APP.to_string())])),
                    annotations: Some(BTreeMap::from([(SET_ANNOTATION.to_string(), base.to_string())])),
                    ..ObjectMeta::default()
                },
                data: Some(BTreeMap::from([(key, router.unwrap_or_default().to_string())])),
                ..ConfigMap::default()
            };
            api.create(&Default::default(), &cm).await.map(|_| ()).map_err(|e| e.to_string())
        }
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        Err(e) => Err(e.to_string()),
    }
}

/// The records of set `base` in `cms` (any ConfigMaps; others' are left out): the newest
/// complete layout, else every shard found, the newer over the older. An unreadable shard is
/// an error (the caller does not start from half the records).
pub fn read_config_maps(base: &str, cms: &[ConfigMap]) -> Result<Loaded, String> {
    read_shards::<SetRecords>(base, cms)
}

impl SetStore<SetRecords> {
    /// The operator's move requests (`kuryr-l7-router move`): none when there are none; `None`
    /// when they cannot be read (logged: the last ones read stay in force).
    /// With them, the Ingresses whose group's move the operator asks to cancel.
    pub async fn operator_asks(&self) -> Option<(Vec<MoveAsk>, Vec<String>)> {
        match self.api.get_opt(&asks_name(&self.base)).await {
            Ok(Some(cm)) => Some((read_asks(&self.base, &cm), read_cancels(&cm))),
            Ok(None) => Some(Default::default()),
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the operator's move requests");
                None
            }
        }
    }
}

impl SetStore<SetRecords> {
    /// Removes Ingress `ingress`'s request (a cancel handled, an operator's move rolled back).
    pub async fn clear_request(&self, ingress: &str) {
        if let Err(e) = request_move(&self.api, &self.base, ingress, None).await {
            tracing::warn!(ingress, error = %e, "cannot remove the operator's request: removed at the next Sync");
        }
    }
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
