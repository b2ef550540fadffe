//! Records of the controller kept sharded in ConfigMaps of its own namespace, where tenants
//! cannot write them: the router set's placement and moves (`router_set::store`) and the host
//! owners (`owner_store`). Plumbing: it knows how records spread over shards and are read back,
//! not what they are (a [`Sharded`] type says).
//!
//! **Sharded**: the records are spread over `n` ConfigMaps (`<prefix><name>-<n>-<i>`) by a
//! stable hash of each key, `n` the smallest power of two that keeps every shard's data under
//! [`SHARD_BYTES`], so no object nears the API server's 1 MiB limit whatever the number of
//! entries. A shard whose content did not change is not written again. A new layout (`n`
//! changed) is written whole before the old one is deleted; a reader that finds two complete
//! layouts takes the newer (its `epoch`).

use crate::controller::stamp_store::{APP, APP_LABEL, router_label};
use crate::driver::digest::stable_hash;
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
/// Label: the set (its `l7_router_name`, shortened as a label value must be).
pub const SET_LABEL: &str = "kuryr-l7-router/set";
/// Label: which records (`set`, `owners`).
pub const KIND_LABEL: &str = "kuryr-l7-router/records";
/// Annotations: the set's whole name; the shard `i/n`; the layout's epoch (when it was made).
pub(crate) const SET_ANNOTATION: &str = "kuryr-l7-router/set-name";
const SHARD_ANNOTATION: &str = "kuryr-l7-router/shard";
const EPOCH_ANNOTATION: &str = "kuryr-l7-router/layout-epoch";

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

/// The name of shard `i` of `n` of records `T` of `base`.
pub fn shard_name_of<T: Sharded>(base: &str, n: usize, i: usize) -> String {
    object_name(T::PREFIX, base, &format!("{n}-{i}"))
}

/// `<prefix><base>-<suffix>`, a valid object name whatever `base` is.
pub(crate) fn object_name(prefix: &str, base: &str, suffix: &str) -> String {
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
pub struct Loaded<T> {
    /// `None`: no ConfigMap of the set (a first start of this version: the upgrade reads the
    /// annotations once).
    pub records: Option<T>,
    /// The layout read (`n`, epoch): the next write replaces the others.
    pub layout: Option<(usize, u64)>,
    /// ConfigMaps of the set outside that layout (left by a write cut short): deleted by the
    /// next write.
    pub stale: BTreeSet<String>,
}

/// The records `T` of `base` in `cms` (any ConfigMaps; others' are left out): the newest complete
/// layout, else every shard found, the newer over the older. An unreadable shard is an error
/// (the caller does not start from half the records).
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

/// Sharded records in the API (the set's, the host owners'): read once at start, written by the
/// leader after each Sync that changed them.
pub struct ShardStore<T> {
    pub(crate) api: Api<ConfigMap>,
    pub(crate) base: String,
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

impl<T: Sharded> ShardStore<T> {
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

impl<T: Sharded> ShardStore<T> {
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

fn unix_millis() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}
