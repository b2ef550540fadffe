//! The upgrade to the controller-owned records (`set_store`): versions before it recorded the
//! router set's placement, group costs and moves in annotations of the Ingresses, which any
//! namespace editor could write. On the first start with no store, the leader reads those
//! annotations ONCE, keeps only what Octavia confirms (the router named routes the host; a
//! move's routers route its hosts as its phase says), writes the result to the store, and
//! never reads the annotations again. The offline `plan` still reads them from the operator's
//! own manifests.

use crate::controller::ControllerError;
use crate::controller::router_set::moves::{
    self as set_moves, MOVE_ANNOTATION, Moves, annotation, ingress_hosts, ingress_key,
};
use crate::controller::router_set::store::{HostRecord, SetRecords, SetStore};
use crate::controller::writer::{RouterBackend, WriteError};
use crate::driver::actual::ActualRouter;
use crate::placement::groups::normalize_host;
use crate::placement::relief::HostCosts;
use crate::placement::{MovePhase, MovePlan, RouterIndex, router_index};
use k8s_openapi::api::networking::v1::Ingress;
use std::collections::{BTreeMap, BTreeSet};

/// The router an Ingress's hosts were placed on (versions before the store): its name.
pub const PLACEMENT_ANNOTATION: &str = "placement.kuryr-l7-router.openstack.org/router";
/// The Ingress's host group and its cost (versions before the store), JSON
/// `{"group":…,"policies":…,"certificates":…}`.
pub const COST_ANNOTATION: &str = "placement.kuryr-l7-router.openstack.org/cost";

/// The value of [`COST_ANNOTATION`].
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct RecordedCost {
    group: crate::placement::GroupId,
    #[serde(flatten)]
    cost: crate::placement::Cost,
}

/// The placement recorded in [`PLACEMENT_ANNOTATION`]s: each host of an annotated Ingress → the
/// index of the router it names (a name not of the set is ignored).
pub fn recorded_placement<'a>(
    base: &str,
    ingresses: impl IntoIterator<Item = &'a Ingress>,
) -> BTreeMap<String, RouterIndex> {
    let mut out = BTreeMap::new();
    for ing in ingresses {
        let Some(index) = annotation(ing, PLACEMENT_ANNOTATION).and_then(|n| router_index(base, n)) else { continue };
        out.extend(ingress_hosts(ing).into_iter().map(|h| (h, index)));
    }
    out
}

/// The group costs recorded in [`COST_ANNOTATION`]s (an unreadable record is ignored).
pub fn recorded_costs<'a>(ingresses: impl IntoIterator<Item = &'a Ingress>) -> HostCosts {
    let mut out = HostCosts::new();
    for ing in ingresses {
        let Some(text) = annotation(ing, COST_ANNOTATION) else { continue };
        let Ok(record) = serde_json::from_str::<RecordedCost>(text) else {
            tracing::warn!(ingress = %ingress_key(ing), "unreadable group cost record ignored");
            continue;
        };
        out.extend(ingress_hosts(ing).into_iter().map(|h| (h, (record.group.clone(), record.cost))));
    }
    out
}

/// The moves recorded in [`MOVE_ANNOTATION`]s (an unreadable record is ignored).
pub fn recorded_moves<'a>(ingresses: impl IntoIterator<Item = &'a Ingress>) -> Moves {
    let mut out = Moves::new();
    for ing in ingresses {
        let Some(text) = annotation(ing, MOVE_ANNOTATION) else { continue };
        match serde_json::from_str::<MovePlan>(text) {
            Ok(plan) => {
                out.insert(plan.group.clone(), plan);
            }
            Err(e) => tracing::warn!(ingress = %ingress_key(ing), error = %e, "unreadable move record ignored"),
        }
    }
    out
}

/// The routers named by the annotations (router 0 always): those whose routes the upgrade
/// reads.
pub fn routers_named<'a>(
    base: &str,
    ingresses: impl IntoIterator<Item = &'a Ingress> + Clone,
) -> BTreeSet<RouterIndex> {
    let mut out: BTreeSet<RouterIndex> = recorded_placement(base, ingresses.clone()).into_values().collect();
    out.extend(recorded_moves(ingresses).values().flat_map(|m| [m.from, m.to]));
    out.insert(0);
    out
}

/// The hosts `router` routes: the host of each of its HOST_NAME rules (both listeners).
pub fn routed_hosts<'a>(routers: impl IntoIterator<Item = &'a ActualRouter>) -> BTreeSet<String> {
    let rules = routers.into_iter().flat_map(|r| r.policies.iter()).flat_map(|p| p.rules.iter());
    rules
        .filter(|r| r.rule_type == "HOST_NAME" && r.compare_type == "REGEX" && !r.invert)
        .filter_map(|r| crate::placement::split::host_of_rule_value(&r.value))
        .map(|h| normalize_host(&h))
        .collect()
}

/// What the upgrade keeps of the annotations: a host's record when the router it names routes
/// it; a move when both its routers exist and route its hosts as its phase says (the source
/// until `DeleteOld`, the target from `PublishBoth` on). Costs are kept for the hosts kept only:
/// Octavia cannot confirm a cost, and a cost forged low would make a group look grown (moved).
/// `observed`: the hosts each router routes (a router missing, or that could not be read,
/// confirms nothing).
pub fn migrate<'a>(
    base: &str,
    ingresses: impl IntoIterator<Item = &'a Ingress> + Clone,
    observed: &BTreeMap<RouterIndex, BTreeSet<String>>,
) -> (SetRecords, Vec<String>) {
    let routes = |r: RouterIndex, h: &String| observed.get(&r).is_some_and(|hosts| hosts.contains(h));
    let mut dropped = Vec::new();
    let mut records = SetRecords::default();
    let costs = recorded_costs(ingresses.clone());
    for (host, router) in recorded_placement(base, ingresses.clone()) {
        if !routes(router, &host) {
            dropped.push(format!("{host} on {}: not routed there", crate::placement::router_name(base, router)));
            continue;
        }
        let record = match costs.get(&host) {
            Some((group, cost)) => HostRecord::on(router).with_cost(group.clone(), *cost),
            None => HostRecord::on(router),
        };
        records.hosts.insert(host, record);
    }
    for (group, plan) in recorded_moves(ingresses) {
        let (source, target) = match plan.phase {
            MovePhase::CreateOnTarget { .. } => (true, false),
            MovePhase::PublishBoth { .. } | MovePhase::PublishTarget { .. } => (true, true),
            MovePhase::DeleteOld { .. } => (false, true),
            MovePhase::Done { .. } => continue,
        };
        let exists = observed.contains_key(&plan.from) && observed.contains_key(&plan.to);
        let holds = plan.hosts.iter().all(|h| (!source || routes(plan.from, h)) && (!target || routes(plan.to, h)));
        if exists && holds && !plan.hosts.is_empty() && plan.from != plan.to {
            records.moves.insert(group, plan);
        } else {
            dropped
                .push(format!("move of {group} from router {} to router {}: not what Octavia has", plan.from, plan.to));
        }
    }
    (records, dropped)
}

/// Reads router `index`'s routed hosts (`RouterBackend::routed_hosts`) with its own backend.
pub type RouteReader = Box<
    dyn Fn(RouterIndex) -> futures::future::BoxFuture<'static, Result<Option<BTreeSet<String>>, WriteError>>
        + Send
        + Sync,
>;

/// How the upgrade reads the routes of the set's routers beyond the first (each with a backend
/// of its own, used for that read only).
pub fn route_reader<B, F>(
    settings: &crate::config::Settings,
    metrics: &crate::controller::metrics::Metrics,
    backends: &std::sync::Arc<F>,
) -> RouteReader
where
    B: RouterBackend,
    F: Fn(&crate::config::Settings, &crate::controller::metrics::Metrics, RouterIndex) -> Result<B, ControllerError>
        + Send
        + Sync
        + 'static,
{
    let (settings, metrics, backends) = (settings.clone(), metrics.clone(), backends.clone());
    Box::new(move |index| {
        let backend = backends(&settings, &metrics, index);
        Box::pin(async move {
            let backend = backend.map_err(|e| WriteError::new("client_config", e.to_string()))?;
            backend.routed_hosts().await
        })
    })
}

/// How many times, 2 s apart, the start tries to read the store before it gives up.
const LOAD_TRIES: u32 = 3;

/// The records the leader starts from, and their store in `namespace`: what the store holds; on
/// the first start of this version (no store yet), the annotations of the versions before, read
/// once and kept where Octavia confirms them (router 0 read with `first`, the other routers
/// of the set found at start, `found` (tagged, untagged), with `others`), then written to the store. A store that cannot be
/// read is an error: starting from no records would place every group as new.
pub async fn start_records<B: RouterBackend>(
    client: &kube::Client,
    namespace: &str,
    base: &str,
    first: &B,
    others: Option<&RouteReader>,
    found: &(Vec<(RouterIndex, Option<u64>)>, Vec<RouterIndex>),
) -> Result<(SetRecords, SetStore), ControllerError> {
    let existing: BTreeSet<RouterIndex> = found.0.iter().map(|(i, _)| *i).chain(found.1.iter().copied()).collect();
    let store: SetStore = SetStore::new(kube::Api::namespaced(client.clone(), namespace), base);
    let mut tries = 0;
    let loaded = loop {
        tries += 1;
        match store.load().await {
            Ok(loaded) => break loaded,
            Err(e) if tries >= LOAD_TRIES => return Err(ControllerError::SetRecords(e)),
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the router set's records: trying again");
                tokio::time::sleep(std::time::Duration::from_secs(2)).await;
            }
        }
    };
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let ours: Vec<RouterIndex> = found.0.iter().map(|(i, _)| *i).collect();
    match (loaded.records, loaded.layout) {
        (Some(records), Some(_)) => {
            tracing::info!(hosts = records.hosts.len(), moves = records.moves.len(), "router set's records read");
            return Ok((records, store));
        }
        // Some shards lost (no complete layout): the hosts they held are read from the routers.
        (Some(mut records), None) => {
            let observed = observe(first, others, [0].into_iter().chain(ours)).await;
            let adopted = super::observed::adopt_observed(&mut records, &observed, now);
            tracing::warn!(hosts = adopted, "router set's records incomplete: the hosts missing read from the routers");
            store.save(&records).await;
            return Ok((records, store));
        }
        (None, _) => {}
    }
    let ingresses = kube::Api::<Ingress>::all(client.clone()).list(&Default::default()).await?.items;
    let mut named = routers_named(base, &ingresses);
    // Every router of the set that exists (with our set tag; a name an untagged load balancer
    // holds may be another instance's) is read, not only those the old records name: what they
    // route is the record of the hosts no record places (`observed`), so nothing is placed as
    // new while its routes are somewhere.
    named.extend(ours);
    let observed = observe(first, others, named.into_iter().filter(|i| *i == 0 || existing.contains(i))).await;
    let (mut records, dropped) = migrate(base, &ingresses, &observed);
    for d in &dropped {
        tracing::warn!(record = %d, "an old placement record on the Ingresses is not what Octavia has: dropped");
    }
    let adopted = super::observed::adopt_observed(&mut records, &observed, now);
    tracing::info!(
        hosts = adopted,
        moves = records.moves.len(),
        "hosts without a record placed where the routers route them (no record: first start with scale-out, or \
         records lost)"
    );
    tracing::info!(
        hosts = records.hosts.len(),
        moves = records.moves.len(),
        dropped = dropped.len(),
        "router set's records migrated from the Ingresses' annotations (read once; ignored from now on)"
    );
    store.save(&records).await;
    Ok((records, store))
}

/// The hosts each of the routers `indices` routes (router 0 read with `first`, the others with
/// `others`); a router missing or unreadable (logged) is left out: it confirms nothing.
async fn observe<B: RouterBackend>(
    first: &B,
    others: Option<&RouteReader>,
    indices: impl IntoIterator<Item = RouterIndex>,
) -> BTreeMap<RouterIndex, BTreeSet<String>> {
    let mut observed = BTreeMap::new();
    for index in indices {
        let read = match (index, others) {
            (0, _) => first.routed_hosts().await,
            (_, Some(read)) => read(index).await,
            (_, None) => continue,
        };
        match read {
            Ok(Some(hosts)) => {
                observed.insert(index, hosts);
            }
            Ok(None) => {}
            Err(e) => tracing::warn!(router = index, error = %e, "cannot read the router's routes"),
        }
    }
    observed
}

/// The Ingresses carrying a move record (the controller's own annotation before the store): it
/// is not read any more, and one written by a tenant is a forgery; each gets a Warning Event.
pub fn carrying_move_records<'a>(ingresses: impl IntoIterator<Item = &'a Ingress>) -> Vec<&'a Ingress> {
    ingresses.into_iter().filter(|i| set_moves::annotation(i, MOVE_ANNOTATION).is_some()).collect()
}

#[cfg(test)]
#[path = "migration_tests.rs"]
mod tests;
