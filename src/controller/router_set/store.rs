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
//! **Sharded**: the records are spread over `n` ConfigMaps (`kuryr-l7-router-set-<set>-<n>-<i>`)
//! by a stable hash of each host (of each move's group), `n` the smallest power of two that
//! keeps every shard's data under [`SHARD_BYTES`], so no object nears the API server's 1 MiB
//! limit whatever the number of hosts (10k hosts: `set_store_tests`). A shard whose content did
//! not change is not written again. A new layout (`n` changed) is written whole before the old
//! one is deleted; a reader that finds two complete layouts takes the newer (its `epoch`).

use crate::controller::router_set::moves::{MoveAsk, Moves};
use crate::controller::stamp_store::{APP, APP_LABEL, router_label};
use crate::driver::digest::stable_hash;
use crate::placement::relief::HostCosts;
use crate::placement::{Cost, GroupId, MovePhase, RouterIndex};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{DeleteParams, ListParams, ObjectMeta, Patch, PatchParams};
use std::collections::{BTreeMap, BTreeSet};

/// Data of one shard at most (bytes of its JSON values): a quarter of the object limit.
pub const SHARD_BYTES: usize = 256 * 1024;
/// The API server's limit on one ConfigMap's data (and, with its metadata, about the object's).
pub const OBJECT_LIMIT: usize = 1024 * 1024;
/// Shards at most: 1024 × 256 KiB is far beyond any set.
const MAX_SHARDS: usize = 1024;
const PREFIX: &str = "kuryr-l7-router-set-";
/// Label: the set (its `l7_router_name`, shortened as a label value must be).
pub const SET_LABEL: &str = "kuryr-l7-router/set";
/// Label: which records (`set`, `owners`).
pub const KIND_LABEL: &str = "kuryr-l7-router/records";
/// Annotations: the set's whole name; the shard `i/n`; the layout's epoch (when it was made).
const SET_ANNOTATION: &str = "kuryr-l7-router/set-name";
const SHARD_ANNOTATION: &str = "kuryr-l7-router/shard";
const EPOCH_ANNOTATION: &str = "kuryr-l7-router/layout-epoch";
/// Data keys: the hosts' records, the moves in progress.
const HOSTS_KEY: &str = "hosts";
const MOVES_KEY: &str = "moves";

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

/// Records kept sharded in ConfigMaps: how their entries spread over shards and read back.
pub trait Sharded: Default + Clone + PartialEq + Send + Sync {
    /// The ConfigMaps' name prefix.
    const PREFIX: &'static str;
    /// The value of their [`KIND_LABEL`]: which records they hold.
    const KIND: &'static str;
    /// The entries spread over `n` shards by a stable hash of each key: each shard's data.
    fn split(&self, n: usize) -> Vec<BTreeMap<String, String>>;
    /// Adds one shard's data read back (`name`: its ConfigMap, for the error).
    fn merge(&mut self, name: &str, data: Option<&BTreeMap<String, String>>) -> Result<(), String>;
}

/// The shard of `key` among `n`.
pub fn shard_of(key: &str, n: usize) -> usize {
    (stable_hash(key) % n as u64) as usize
}

/// `value` (JSON) at `key` of a shard's data (an absent key: empty).
pub fn read_key<T: serde::de::DeserializeOwned>(
    name: &str,
    data: Option<&BTreeMap<String, String>>,
    key: &str,
) -> Result<T, String> {
    let text = data.and_then(|d| d.get(key)).map(String::as_str).unwrap_or("{}");
    serde_json::from_str(text).map_err(|e| format!("ConfigMap {name}: {key}: {e}"))
}

impl Sharded for SetRecords {
    const PREFIX: &'static str = PREFIX;
    const KIND: &'static str = "set";

    fn split(&self, n: usize) -> Vec<BTreeMap<String, String>> {
        let mut hosts = vec![BTreeMap::new(); n];
        let mut moves = vec![Moves::new(); n];
        for (host, record) in &self.hosts {
            hosts[shard_of(host, n)].insert(host.clone(), record.clone());
        }
        for (group, plan) in &self.moves {
            moves[shard_of(group, n)].insert(group.clone(), plan.clone());
        }
        hosts
            .iter()
            .zip(&moves)
            .map(|(h, m)| BTreeMap::from([(HOSTS_KEY.to_string(), json(h)), (MOVES_KEY.to_string(), json(m))]))
            .collect()
    }

    fn merge(&mut self, name: &str, data: Option<&BTreeMap<String, String>>) -> Result<(), String> {
        let hosts: BTreeMap<String, HostRecord> = read_key(name, data, HOSTS_KEY)?;
        let moves: Moves = read_key(name, data, MOVES_KEY)?;
        self.hosts.extend(hosts);
        self.moves.extend(moves);
        Ok(())
    }
}

/// `value` as JSON text.
pub fn json<V: serde::Serialize>(value: &V) -> String {
    serde_json::to_string(value).expect("records serialize")
}

/// The records spread over the fewest shards (a power of two) that keep every shard's data
/// under [`SHARD_BYTES`]; a shard's data as the ConfigMap holds it.
fn layout<T: Sharded>(records: &T) -> Vec<BTreeMap<String, String>> {
    let mut n = 1;
    loop {
        let data = records.split(n);
        let fits = data.iter().all(|d| d.values().map(String::len).sum::<usize>() <= SHARD_BYTES);
        if fits || n >= MAX_SHARDS {
            return data;
        }
        n *= 2;
    }
}

/// The name of shard `i` of `n` of set `base` (a valid object name whatever `base` is).
pub fn shard_name(base: &str, n: usize, i: usize) -> String {
    shard_name_of::<SetRecords>(base, n, i)
}

/// The name of shard `i` of `n` of records `T` of `base`.
pub fn shard_name_of<T: Sharded>(base: &str, n: usize, i: usize) -> String {
    object_name(T::PREFIX, base, &format!("{n}-{i}"))
}

/// The name of the ConfigMap of the operator's move requests of set `base` (`kuryr-l7-router
/// move`): written by the operator, only read by the controller.
pub fn asks_name(base: &str) -> String {
    object_name(PREFIX, base, "moves")
}

/// `<prefix><base>-<suffix>`, a valid object name whatever `base` is.
fn object_name(prefix: &str, base: &str, suffix: &str) -> String {
    let whole = format!("{prefix}{base}-{suffix}");
    let valid = whole.len() <= 253
        && whole.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !whole.ends_with('-');
    if valid {
        return whole;
    }
    let short: String =
        base.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' }).take(150).collect();
    format!("{prefix}{}-{:016x}-{suffix}", short.trim_matches('-'), stable_hash(base))
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

/// The ConfigMaps holding `records` for set `base`, with the layout's `epoch`.
pub fn config_maps<T: Sharded>(base: &str, records: &T, epoch: u64) -> Vec<ConfigMap> {
    let shards = layout(records);
    let n = shards.len();
    shards
        .into_iter()
        .enumerate()
        .map(|(i, data)| ConfigMap {
            metadata: ObjectMeta {
                name: Some(shard_name_of::<T>(base, n, i)),
                labels: Some(BTreeMap::from([
                    (APP_LABEL.to_string(), APP.to_string()),
                    (SET_LABEL.to_string(), router_label(base)),
                    (KIND_LABEL.to_string(), T::KIND.to_string()),
                ])),
                annotations: Some(BTreeMap::from([
                    (SET_ANNOTATION.to_string(), base.to_string()),
                    (SHARD_ANNOTATION.to_string(), format!("{i}/{n}")),
                    (EPOCH_ANNOTATION.to_string(), epoch.to_string()),
                ])),
                ..ObjectMeta::default()
            },
            data: Some(data),
            ..ConfigMap::default()
        })
        .collect()
}

/// A shard read back: its layout, epoch and place, if it is one of set `base`'s.
struct ShardOf<'a> {
    n: usize,
    i: usize,
    epoch: u64,
    cm: &'a ConfigMap,
}

fn shard_of_set<'a, T: Sharded>(base: &str, cm: &'a ConfigMap) -> Option<ShardOf<'a>> {
    let a = cm.metadata.annotations.as_ref()?;
    let kind = cm.metadata.labels.as_ref().and_then(|l| l.get(KIND_LABEL)).map(String::as_str);
    if a.get(SET_ANNOTATION).map(String::as_str) != Some(base) || kind != Some(T::KIND) {
        return None;
    }
    let (i, n) = a.get(SHARD_ANNOTATION)?.split_once('/')?;
    let (i, n): (usize, usize) = (i.parse().ok()?, n.parse().ok()?);
    let epoch = a.get(EPOCH_ANNOTATION).and_then(|e| e.parse().ok()).unwrap_or(0);
    (i < n).then_some(ShardOf { n, i, epoch, cm })
}

/// What a read of the store found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Loaded<T = SetRecords> {
    /// `None`: no ConfigMap of the set (a first start of this version: the upgrade reads the
    /// annotations once).
    pub records: Option<T>,
    /// The layout read (`n`, epoch): the next write replaces the others.
    pub layout: Option<(usize, u64)>,
    /// ConfigMaps of the set outside that layout (left by a write cut short): deleted by the
    /// next write.
    pub stale: BTreeSet<String>,
}

/// The records of set `base` in `cms` (any ConfigMaps; others' are left out): the newest
/// complete layout, else every shard found, the newer over the older. An unreadable shard is
/// an error (the caller does not start from half the records).
pub fn read_config_maps(base: &str, cms: &[ConfigMap]) -> Result<Loaded, String> {
    read_shards::<SetRecords>(base, cms)
}

/// [`read_config_maps`] for records `T`.
pub fn read_shards<T: Sharded>(base: &str, cms: &[ConfigMap]) -> Result<Loaded<T>, String> {
    let shards: Vec<ShardOf<'_>> = cms.iter().filter_map(|cm| shard_of_set::<T>(base, cm)).collect();
    if shards.is_empty() {
        return Ok(Loaded { records: None, layout: None, stale: BTreeSet::new() });
    }
    let mut layouts: BTreeMap<(u64, usize), BTreeSet<usize>> = BTreeMap::new();
    for s in &shards {
        layouts.entry((s.epoch, s.n)).or_default().insert(s.i);
    }
    let complete = layouts.iter().rev().find(|((_, n), found)| found.len() == *n).map(|(k, _)| *k);
    let mut chosen: Vec<&ShardOf<'_>> =
        shards.iter().filter(|s| complete.is_none_or(|(epoch, n)| s.epoch == epoch && s.n == n)).collect();
    chosen.sort_by_key(|s| s.epoch);
    let mut records = T::default();
    for s in &chosen {
        records.merge(s.cm.metadata.name.as_deref().unwrap_or_default(), s.cm.data.as_ref())?;
    }
    let layout = complete.map(|(epoch, n)| (n, epoch));
    let kept: BTreeSet<&str> = chosen.iter().filter_map(|s| s.cm.metadata.name.as_deref()).collect();
    let stale = match complete {
        Some(_) => {
            shards.iter().filter_map(|s| s.cm.metadata.name.clone()).filter(|n| !kept.contains(n.as_str())).collect()
        }
        // No complete layout: every shard read is replaced by the next write.
        None => kept.iter().map(|n| n.to_string()).collect(),
    };
    Ok(Loaded { records: Some(records), layout, stale })
}

/// The set's records in the API: read once at start, written by the leader after each Sync of
/// the set that changed them.
pub struct SetStore<T = SetRecords> {
    api: Api<ConfigMap>,
    base: String,
    /// What was last written (or read), by ConfigMap name: a shard equal to it is not written.
    written: tokio::sync::Mutex<Written>,
    records: std::marker::PhantomData<fn() -> T>,
}

#[derive(Default)]
struct Written {
    layout: Option<(usize, u64)>,
    data: BTreeMap<String, BTreeMap<String, String>>,
    stale: BTreeSet<String>,
}

impl<T: Sharded> SetStore<T> {
    pub fn new(api: Api<ConfigMap>, base: &str) -> Self {
        let written = tokio::sync::Mutex::default();
        Self { api, base: base.to_string(), written, records: std::marker::PhantomData }
    }

    /// Reads the set's records (its ConfigMaps, found by label). An API error or a damaged
    /// shard is an error: starting from no records would place every group as new.
    pub async fn load(&self) -> Result<Loaded<T>, String> {
        let selector = format!("{SET_LABEL}={},{KIND_LABEL}={}", router_label(&self.base), T::KIND);
        let list = self.api.list(&ListParams::default().labels(&selector)).await.map_err(|e| e.to_string())?;
        let loaded = read_shards::<T>(&self.base, &list.items)?;
        let mut w = self.written.lock().await;
        w.layout = loaded.layout;
        w.stale.clone_from(&loaded.stale);
        w.data = list
            .items
            .iter()
            .filter_map(|cm| Some((cm.metadata.name.clone()?, cm.data.clone().unwrap_or_default())))
            .collect();
        Ok(loaded)
    }

    /// Writes `records`: each shard that changed (server-side apply), then deletes what an older
    /// layout left. A failure is logged and written again by the next save.
    pub async fn save(&self, records: &T) {
        let mut w = self.written.lock().await;
        let n = layout(records).len();
        let epoch = match w.layout {
            Some((old_n, epoch)) if old_n == n => epoch,
            _ => unix_millis(),
        };
        let params = PatchParams::apply(APP).force();
        let mut all_written = true;
        for cm in config_maps(&self.base, records, epoch) {
            let name = cm.metadata.name.clone().unwrap_or_default();
            let data = cm.data.clone().unwrap_or_default();
            if w.layout == Some((n, epoch)) && w.data.get(&name) == Some(&data) {
                continue;
            }
            match self.api.patch(&name, &params, &Patch::Apply(&cm)).await {
                Ok(_) => {
                    w.data.insert(name, data);
                }
                Err(e) => {
                    all_written = false;
                    w.data.remove(&name);
                    tracing::warn!(configmap = %name, error = %e, "the router set's records not written: tried again at the next Sync");
                }
            }
        }
        if w.layout != Some((n, epoch)) {
            if let Some((old_n, _)) = w.layout {
                w.stale.extend((0..old_n).map(|i| shard_name_of::<T>(&self.base, old_n, i)));
            }
            if !all_written {
                // The old layout stays the one read until the new one is whole.
                return;
            }
            w.layout = Some((n, epoch));
        }
        let keep: BTreeSet<String> = (0..n).map(|i| shard_name_of::<T>(&self.base, n, i)).collect();
        let stale: Vec<String> = w.stale.iter().filter(|s| !keep.contains(*s)).cloned().collect();
        for name in stale {
            match self.api.delete(&name, &DeleteParams::default()).await {
                Ok(_) => {}
                Err(kube::Error::Api(e)) if e.code == 404 => {}
                Err(e) => {
                    tracing::warn!(configmap = %name, error = %e, "an old shard of the set's records not deleted");
                    continue;
                }
            }
            w.stale.remove(&name);
            w.data.remove(&name);
        }
    }
}

impl<T: Sharded> SetStore<T> {
    /// Deletes every ConfigMap of these records (found by label); how many were deleted.
    pub async fn delete_all(&self) -> Result<usize, String> {
        let selector = format!("{SET_LABEL}={},{KIND_LABEL}={}", router_label(&self.base), T::KIND);
        let list = self.api.list(&ListParams::default().labels(&selector)).await.map_err(|e| e.to_string())?;
        let mut deleted = 0;
        // Only the shards of this set's records (its annotations say so), whatever the list
        // answered: never another set's ConfigMap.
        let ours = list.items.iter().filter(|cm| shard_of_set::<T>(&self.base, cm).is_some());
        for name in ours.filter_map(|cm| cm.metadata.name.as_deref()) {
            match self.api.delete(name, &DeleteParams::default()).await {
                Ok(_) => deleted += 1,
                Err(kube::Error::Api(e)) if e.code == 404 => {}
                Err(e) => return Err(format!("ConfigMap {name}: {e}")),
            }
        }
        *self.written.lock().await = Written::default();
        Ok(deleted)
    }
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

fn unix_millis() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
