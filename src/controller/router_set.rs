//! Scale-out (`[octavia_defaults] scale_out`): one controller drives a set of routers
//! `<l7_router_name>`, `<l7_router_name>-2`, … that together act as one logical L7 router.
//!
//! A Sync of the set translates the caches ONCE, places the host groups (`placement::place`,
//! the previous placement as input, so a placed group never moves by itself) and splits the
//! translation into one desired router per router (`placement::split`). Each router has its own
//! slot and serial writer (`controller::routers`): the parts are submitted to every writer at
//! once, so a write on one router never waits for a write on another, and a router that fails
//! (ERROR, refused writes) holds back only the groups placed on it.
//!
//! The placement record is an annotation on each Ingress ([`PLACEMENT_ANNOTATION`]: the name of
//! its router), written once the router holding it synced. It is read back from the watch cache
//! at start, so a restarted controller or a new leader places every group where it was without
//! reading any router (see `docs/scale-out.md` for why an annotation and not Octavia tags).

use crate::config::ScaleOut;
use crate::controller::writer::{WriteError, Writer, WriterHandle};
use crate::model::DesiredRouter;
use crate::placement::groups::normalize_host;
use crate::placement::split::{SplitParams, place_and_split};
use crate::placement::{Placement, RouterFate, RouterIndex, RouterRecord, UnixSeconds, router_index, router_name};
use crate::translate::namespace_of;
use k8s_openapi::api::networking::v1::Ingress;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The router an Ingress's hosts are placed on: its name (`<l7_router_name>[-N]`).
pub const PLACEMENT_ANNOTATION: &str = "placement.kuryr-l7-router.openstack.org/router";

/// Builds the writer of router `index` named `name` (its backend gated by the leader lease and
/// counted in the metrics), when placement first puts a group on it.
pub(crate) type SpawnWriter = Box<dyn Fn(RouterIndex, &str) -> Result<Writer, WriteError> + Send + Sync>;

/// One placement of the set and each router's part of the translation.
pub struct Placed {
    pub placement: Placement,
    /// The translation of the whole logical router (its warnings are all there).
    pub whole: Arc<DesiredRouter>,
    /// Each router's desired state, index 0 always.
    pub parts: BTreeMap<RouterIndex, Arc<DesiredRouter>>,
}

impl Placed {
    /// The router of `ing`: the router of its hosts; an Ingress with only host-less rules is on
    /// every router, and its status carries the first router's address.
    pub(crate) fn router_of(&self, ing: &Ingress) -> RouterIndex {
        let key = format!("{}/{}", namespace_of(&ing.metadata), ing.metadata.name.as_deref().unwrap_or_default());
        self.placement.ingress_router.get(&key).copied().unwrap_or(0)
    }

    /// Whether `ing` has hosts (then its router is recorded on it).
    pub(crate) fn is_placed(&self, ing: &Ingress) -> bool {
        let key = format!("{}/{}", namespace_of(&ing.metadata), ing.metadata.name.as_deref().unwrap_or_default());
        self.placement.ingress_router.contains_key(&key)
    }
}

/// The routers of one controller with scale-out on.
pub struct RouterSet {
    /// `l7_router_name`: router 0's name, and the base of the others'.
    pub base: String,
    scale_out: ScaleOut,
    spawn: SpawnWriter,
    /// The writers spawned for routers other than the first (drained at shutdown).
    writers: Mutex<Vec<Writer>>,
    /// The last placement and when its translation started: a Sync requested before that reuses
    /// it (the translation saw its change), so concurrent reconciles translate once.
    last: tokio::sync::Mutex<Option<(Instant, Arc<Placed>)>>,
    /// Since when each router has been empty (for `empty_router_grace`).
    empty_since: Mutex<BTreeMap<RouterIndex, UnixSeconds>>,
}

impl RouterSet {
    pub fn new(base: impl Into<String>, scale_out: ScaleOut, spawn: SpawnWriter) -> Self {
        Self {
            base: base.into(),
            scale_out,
            spawn,
            writers: Mutex::default(),
            last: tokio::sync::Mutex::new(None),
            empty_since: Mutex::default(),
        }
    }

    /// The key (name) of router `index`.
    pub(crate) fn name_of(&self, index: RouterIndex) -> String {
        router_name(&self.base, index)
    }

    /// Spawns the writer of router `index`.
    pub(crate) fn spawn_writer(&self, index: RouterIndex) -> Result<WriterHandle, WriteError> {
        let writer = (self.spawn)(index, &self.name_of(index))?;
        let handle = writer.handle();
        self.writers.lock().expect("lock").push(writer);
        Ok(handle)
    }

    /// The writers spawned so far (shutdown drains them).
    pub(crate) fn take_writers(&self) -> Vec<Writer> {
        std::mem::take(&mut *self.writers.lock().expect("lock"))
    }

    /// The placement of the caches as they are now, translated by `translate` (off the async
    /// workers), unless a placement whose translation started after `requested` exists.
    pub async fn placed(
        &self,
        requested: Instant,
        ingresses: &[Arc<Ingress>],
        translate: impl FnOnce() -> DesiredRouter + Send + 'static,
    ) -> Result<Arc<Placed>, WriteError> {
        let mut last = self.last.lock().await;
        if let Some((started, placed)) = last.as_ref()
            && *started >= requested
        {
            return Ok(placed.clone());
        }
        let started = Instant::now();
        let mut current = recorded_placement(&self.base, ingresses.iter().map(|i| i.as_ref()));
        // The last placement wins over the record: it is newer (its annotations may not be
        // written yet).
        if let Some((_, prev)) = last.as_ref() {
            current.extend(prev.placement.host_router.iter().map(|(h, r)| (h.clone(), *r)));
        }
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let mut routers: BTreeMap<RouterIndex, RouterRecord> =
            current.values().map(|r| (*r, RouterRecord::default())).collect();
        if let Some((_, prev)) = last.as_ref() {
            routers.extend(prev.placement.routers.keys().map(|r| (*r, RouterRecord::default())));
        }
        for (r, since) in self.empty_since.lock().expect("lock").iter() {
            routers.insert(*r, RouterRecord { empty_since: Some(*since) });
        }
        let params = SplitParams {
            capacity: self.scale_out.capacity,
            current,
            routers,
            now,
            empty_grace_secs: self.scale_out.empty_router_grace.as_secs(),
        };
        let placed = tokio::task::spawn_blocking(move || {
            let whole = translate();
            let set = place_and_split(&whole, &params);
            Placed {
                placement: set.placement,
                whole: Arc::new(whole),
                parts: set.routers.into_iter().map(|(i, d)| (i, Arc::new(d))).collect(),
            }
        })
        .await
        .map_err(|e| WriteError::new("translation_failed", format!("translation failed: {e}")))?;
        *self.empty_since.lock().expect("lock") = placed
            .placement
            .routers
            .iter()
            .filter_map(|(r, l)| match l.fate {
                RouterFate::Empty { since, .. } => Some((*r, since)),
                _ => None,
            })
            .collect();
        for w in &placed.placement.warnings {
            tracing::warn!(warning = ?w, "placement");
        }
        let placed = Arc::new(placed);
        *last = Some((started, placed.clone()));
        Ok(placed)
    }
}

/// The placement recorded on the Ingresses: each host of an Ingress carrying
/// [`PLACEMENT_ANNOTATION`] → the index of the router it names (a name not of the set is
/// ignored: the group is placed as new).
pub(crate) fn recorded_placement<'a>(
    base: &str,
    ingresses: impl IntoIterator<Item = &'a Ingress>,
) -> BTreeMap<String, RouterIndex> {
    let mut out = BTreeMap::new();
    for ing in ingresses {
        let Some(name) = ing.metadata.annotations.as_ref().and_then(|a| a.get(PLACEMENT_ANNOTATION)) else { continue };
        let Some(index) = router_index(base, name) else { continue };
        let rules = ing.spec.as_ref().and_then(|s| s.rules.as_ref());
        for host in rules.into_iter().flatten().filter_map(|r| r.host.as_deref()) {
            out.insert(normalize_host(host), index);
        }
    }
    out
}

/// The router name `ing` records, if any.
pub(crate) fn recorded_router(ing: &Ingress) -> Option<&str> {
    ing.metadata.annotations.as_ref().and_then(|a| a.get(PLACEMENT_ANNOTATION)).map(String::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ingress(name: &str, hosts: &[&str], router: Option<&str>) -> Arc<Ingress> {
        let rules: Vec<serde_json::Value> = hosts.iter().map(|h| serde_json::json!({"host": h})).collect();
        let mut v = serde_json::json!({"metadata": {"name": name, "namespace": "shop"}, "spec": {"rules": rules}});
        if let Some(r) = router {
            v["metadata"]["annotations"] = serde_json::json!({PLACEMENT_ANNOTATION: r});
        }
        Arc::new(serde_json::from_value(v).unwrap())
    }

    /// Each host of an annotated Ingress is recorded on its router; a name outside the set and
    /// an Ingress without the annotation record nothing.
    #[test]
    fn the_record_is_read_from_the_ingress_annotations() {
        let ings = [
            ingress("a", &["A.example.com", "b.example.com"], Some("edge-3")),
            ingress("c", &["c.example.com"], Some("edge")),
            ingress("d", &["d.example.com"], Some("other-2")),
            ingress("e", &["e.example.com"], None),
        ];
        let got = recorded_placement("edge", ings.iter().map(|i| i.as_ref()));
        let want: BTreeMap<String, RouterIndex> =
            [("a.example.com", 2), ("b.example.com", 2), ("c.example.com", 0)].map(|(h, r)| (h.to_string(), r)).into();
        assert_eq!(got, want);
    }
}
