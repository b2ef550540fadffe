//! The router's load balancer and listener over their lifetime: find ours (or the adopted one),
//! clear the duplicates an interrupted create left, create it (fully populated, with a fallback
//! for the Octavia releases that break that create), discard one we just made, and find or
//! create its HTTP listener.

use super::cloud::Cloud;
use super::create_body::{SizedCreate, bare_create, populated_create_within};
use super::door::{self, CallError, Order};
use super::error::{DriverError, Result};
use super::execute::listener_write;
use super::floating_ip;
use super::listener_plan::{choose_listener, plan_http_listener};
use super::ownership::SetMark;
use super::report::ConvergeReport;
use super::spec::RouterSpec;
use crate::model::DesiredRouter;
use crate::openstack::octavia::{Listener, LoadBalancer};
use crate::openstack::octavia_requests::{LoadBalancerCreate, LoadBalancerUpdate};
use crate::openstack::{Error as OsError, ListQuery};

/// The router's load balancer, if it exists: the adopted one, or ours found by name and tags.
pub async fn find(cloud: &Cloud) -> Result<Option<LoadBalancer>> {
    if let Some(uuid) = &cloud.spec.uuid {
        return match cloud.octavia.get_load_balancer(uuid).await {
            Ok(lb) => Ok(Some(lb)),
            Err(e) if e.is_not_found() => Err(DriverError::AdoptedRouterNotFound(uuid.clone())),
            Err(e) => Err(e.into()),
        };
    }
    let mut found = list_ours(cloud).await?;
    match found.len() {
        0 => Ok(None),
        1 => Ok(found.pop()),
        _ => Err(duplicate_routers(&cloud.spec, &found)),
    }
}

async fn list_ours(cloud: &Cloud) -> Result<Vec<LoadBalancer>> {
    // By the ownership tags only: a router created before `resource_tags` changed is still ours.
    let q = ListQuery { tags: cloud.spec.ownership.ownership_tags(), ..ListQuery::name(&cloud.spec.name) };
    let mut found = cloud.octavia.list_load_balancers(&q).await?;
    // Another instance of this cluster may have a router of the same name (instance `edge-2`'s
    // first router is instance `edge`'s second): its set tag says it is not ours. One without a
    // set tag predates them and is adopted by name, as before.
    found.retain(|lb| cloud.spec.ownership.set_mark(&lb.tags) != SetMark::Other);
    Ok(found)
}

fn duplicate_routers(spec: &RouterSpec, found: &[LoadBalancer]) -> DriverError {
    DriverError::DuplicateRouters {
        name: spec.name.clone(),
        ids: found.iter().map(|l| l.id.as_str()).collect::<Vec<_>>().join(", "),
    }
}

/// [`find`] for a convergence, which also clears duplicate routers.
///
/// Two load balancers with our name and tags are the trace of a router create sent by a run
/// that died before it saw the answer, while the next run (which had found none) created its
/// own. The one with a floating IP is the router; without one anywhere, the one with more
/// listeners and pools, then the older. The others hold no floating IP and were made by us:
/// they are deleted (cascade). Two with a floating IP are left to the operator.
pub(crate) async fn find_clearing_duplicates(
    cloud: &Cloud,
    report: &mut ConvergeReport,
) -> Result<Option<LoadBalancer>> {
    if cloud.spec.uuid.is_some() {
        return find(cloud).await;
    }
    let found = list_ours(cloud).await?;
    if found.len() < 2 {
        return Ok(found.into_iter().next());
    }
    let mut with_fip = Vec::new();
    for lb in &found {
        with_fip.push(has_floating_ip(cloud, lb).await?);
    }
    let keep = match with_fip.iter().filter(|f| **f).count() {
        0 => found
            .iter()
            .max_by(|a, b| {
                (a.listeners.len() + a.pools.len())
                    .cmp(&(b.listeners.len() + b.pools.len()))
                    // Older first: created_at is ISO 8601, so the smaller string is older.
                    .then_with(|| b.created_at.cmp(&a.created_at))
            })
            .cloned(),
        1 => found.iter().zip(&with_fip).find(|(_, f)| **f).map(|(lb, _)| lb.clone()),
        _ => return Err(duplicate_routers(&cloud.spec, &found)),
    };
    let keep = keep.expect("at least two routers");
    delete_duplicate_routers(cloud, &keep, &found, report).await?;
    Ok(Some(keep))
}

/// After this convergence created the router: a dying run's create may have landed beside it.
pub(crate) async fn clear_duplicates_of_new_router(
    cloud: &Cloud,
    keep: &LoadBalancer,
    report: &mut ConvergeReport,
) -> Result<()> {
    let found = list_ours(cloud).await?;
    if found.len() > 1 {
        for lb in found.iter().filter(|lb| lb.id != keep.id) {
            if has_floating_ip(cloud, lb).await? {
                return Err(duplicate_routers(&cloud.spec, &found));
            }
        }
        delete_duplicate_routers(cloud, keep, &found, report).await?;
    }
    Ok(())
}

async fn has_floating_ip(cloud: &Cloud, lb: &LoadBalancer) -> Result<bool> {
    let Some(port) = &lb.vip_port_id else { return Ok(false) };
    Ok(floating_ip::of_port(&cloud.neutron, port).await?.is_some())
}

async fn delete_duplicate_routers(
    cloud: &Cloud,
    keep: &LoadBalancer,
    found: &[LoadBalancer],
    report: &mut ConvergeReport,
) -> Result<()> {
    for lb in found.iter().filter(|lb| lb.id != keep.id) {
        let description = format!(
            "delete duplicate L7 router {} (an interrupted create; no floating IP); {} is the router",
            lb.id, keep.id
        );
        tracing::warn!("{description}");
        let order = Order::router_lifecycle("delete_router", description.clone());
        door::write_recorded(cloud, order, &mut report.writes, discard_new_router(cloud, lb)).await?;
        report.conflicts.push(description);
    }
    Ok(())
}

/// Wait out a PENDING_* router (another writer, or our own write before a restart); refuse
/// one in ERROR.
pub async fn ready(cloud: &Cloud, lb: LoadBalancer) -> Result<LoadBalancer> {
    match lb.provisioning_status.as_str() {
        "ACTIVE" => Ok(lb),
        "ERROR" => Err(DriverError::RouterInError { name: lb.name, id: lb.id }),
        _ => match cloud.octavia.wait_active(&lb.id, cloud.spec.create_timeout).await {
            Ok(lb) => Ok(lb),
            Err(OsError::Provisioning { .. }) => Err(DriverError::RouterInError { name: lb.name, id: lb.id }),
            Err(e) => Err(e.into()),
        },
    }
}

/// The load balancer's own tags as [`super::ownership::Ownership::load_balancer_tags`] wants
/// them: the set tag on a router made before set tags existed (this instance converges it, so
/// one of its placements names it: it is then collected when left empty, as the routers made
/// since), and the `empty-since` tag of a router of a set that holds no group. One write when
/// they differ (on an empty router it is cheap), none otherwise; an adopted load balancer (by
/// UUID) is not ours to tag.
pub async fn mark(
    cloud: &Cloud,
    lb: LoadBalancer,
    empty_since: Option<u64>,
    report: &mut ConvergeReport,
) -> Result<LoadBalancer> {
    if cloud.spec.uuid.is_some() {
        return Ok(lb);
    }
    let Some(tags) = cloud.spec.ownership.load_balancer_tags(&lb.tags, empty_since) else { return Ok(lb) };
    let started = std::time::Instant::now();
    let description = format!("load balancer {} tags: {}", lb.name, tags.join(", "));
    let update = LoadBalancerUpdate { tags: Some(tags), ..LoadBalancerUpdate::default() };
    let updated = cloud.octavia.retry_busy(|| cloud.octavia.update_load_balancer(&lb.id, &update)).await?;
    let lb = ready(cloud, updated).await?;
    let duration = started.elapsed();
    report.writes.push(super::report::WriteRecord { kind: "load_balancer_tags", description, duration });
    Ok(lb)
}

/// Create the router that does not exist yet: fully populated with `desired` when configured
/// (`report.created_router` then says the children are in place), else bare. A create body over
/// Octavia's request limit carries what fits; the convergence writes the rest.
pub async fn create(cloud: &Cloud, desired: &DesiredRouter, report: &mut ConvergeReport) -> Result<LoadBalancer> {
    if !cloud.spec.fully_populated_create {
        return create_bare(cloud, report).await;
    }
    let (lb, complete) = create_populated(cloud, desired, report).await?;
    if children_active(cloud, &lb).await? {
        report.created_router = complete;
        return Ok(lb);
    }
    // Seen on Debian's Zed packages: the load balancer goes ACTIVE but its listener, pools and
    // members stay PENDING_CREATE, so Octavia refuses every later change to them. The router is
    // brand-new and ours: discard it and build it object by object.
    let msg = format!(
        "the fully-populated create of {} left its children in PENDING_CREATE; it was deleted and \
         rebuilt one object at a time: set [octavia_defaults] fully_populated_create = False on this cloud",
        lb.id
    );
    tracing::warn!("{msg}");
    report.conflicts.push(msg);
    let description = format!("delete L7 router {} (its children stuck in PENDING_CREATE)", lb.id);
    let order = Order::router_lifecycle("delete_router", description);
    door::write_recorded(cloud, order, &mut report.writes, discard_new_router(cloud, &lb)).await?;
    create_bare(cloud, report).await
}

/// The fully-populated create of a brand-new router: one write, within
/// `max_create_body_bytes`. A 413 (the cloud's limit is lower than configured) halves the body
/// until it is the listener alone: the router is created either way, and the convergence writes
/// what was left out. Returns whether the body held all of `desired`.
async fn create_populated(
    cloud: &Cloud,
    desired: &DesiredRouter,
    report: &mut ConvergeReport,
) -> Result<(LoadBalancer, bool)> {
    let vip = vip_subnet(&cloud.spec)?;
    let mut limit = cloud.spec.max_create_body_bytes;
    loop {
        let sized = populated_create_within(&cloud.spec, &vip, desired, limit);
        let has_children = !sized.body.pools.is_empty() || sized.policies_sent > 0;
        match create_router(cloud, &sized.body, create_description(&cloud.spec.name, &sized), report).await {
            Ok(lb) => return Ok((lb, sized.complete)),
            Err(e) if too_large(&e) && has_children => {
                let msg = format!(
                    "Octavia refused the {}-byte fully-populated create of {} as too large (413): sent again \
                     with fewer children, the rest written one at a time; set [octavia_defaults] \
                     max_create_body_bytes to the cloud's max_request_body_size",
                    sized.bytes, cloud.spec.name
                );
                tracing::warn!("{msg}");
                report.conflicts.push(msg);
                limit = sized.bytes / 2;
            }
            Err(e) => return Err(e),
        }
    }
}

/// The create's transcript line: what it carries, and what it leaves to the convergence.
fn create_description(name: &str, sized: &SizedCreate) -> String {
    let body = &sized.body;
    let left = if sized.complete {
        String::new()
    } else {
        format!(
            " (over the request limit: {} of {} policies, the rest written one at a time)",
            sized.policies_sent, sized.policies_wanted
        )
    };
    format!(
        "create L7 router {name} fully populated: {} pool(s), {} member(s), {} policy(ies), {} rule(s), {} bytes{left}",
        body.pools.len(),
        body.pools.iter().map(|p| p.members.len()).sum::<usize>(),
        sized.policies_sent,
        body.listeners.iter().flat_map(|l| &l.l7policies).map(|p| p.rules.len()).sum::<usize>(),
        sized.bytes,
    )
}

/// Octavia's API answer to a request body over its `max_request_body_size`.
fn too_large(e: &DriverError) -> bool {
    matches!(e, DriverError::Write { source, .. } if source.status() == Some(413))
}

/// A bare router (VIP only); the listener and the children follow as ordinary writes.
async fn create_bare(cloud: &Cloud, report: &mut ConvergeReport) -> Result<LoadBalancer> {
    let body = bare_create(&cloud.spec, &vip_subnet(&cloud.spec)?);
    create_router(cloud, &body, format!("create L7 router {}", cloud.spec.name), report).await
}

fn vip_subnet(spec: &RouterSpec) -> Result<String> {
    spec.vip_subnet_id.clone().ok_or_else(|| DriverError::NoVipSubnet(spec.name.clone()))
}

/// One load balancer create, waited for until ACTIVE (within the create timeout, by the call:
/// the door has no router to wait for yet), recorded as a write.
async fn create_router(
    cloud: &Cloud,
    body: &LoadBalancerCreate,
    description: String,
    report: &mut ConvergeReport,
) -> Result<LoadBalancer> {
    let order = Order::router_lifecycle("create_router", description.clone());
    let call = async {
        // The API answers a create only once it has written the whole graph: give that request
        // the router's create timeout, not the session's per-request one. A create abandoned by
        // the client still completes on the server (and would then be adopted by name).
        let created = cloud
            .octavia
            .create_load_balancer_within(body, cloud.spec.create_timeout)
            .await
            .map_err(|source| DriverError::write(description, source))?;
        ready(cloud, created).await.map_err(CallError::from)
    };
    door::write_recorded(cloud, order, &mut report.writes, call).await
}

/// Whether the listener and pools of a router we just created are ACTIVE too.
async fn children_active(cloud: &Cloud, lb: &LoadBalancer) -> Result<bool> {
    let q = ListQuery { loadbalancer_id: Some(lb.id.clone()), ..ListQuery::default() };
    let listeners = cloud.octavia.list_listeners(&q).await?;
    let pools = cloud.octavia.list_pools(&q).await?;
    Ok(listeners.iter().all(|l| l.provisioning_status == "ACTIVE")
        && pools.iter().all(|p| p.provisioning_status == "ACTIVE"))
}

/// Delete a router this very convergence created (and so holds no traffic yet): the call of a
/// `delete_router` write (see `door`), which waits for the delete itself.
async fn discard_new_router(cloud: &Cloud, lb: &LoadBalancer) -> std::result::Result<(), OsError> {
    cloud.octavia.delete_load_balancer(&lb.id, true).await?;
    cloud.octavia.wait_deleted(&lb.id, cloud.spec.create_timeout).await?;
    if let Some(port) = &lb.vip_port_id {
        cloud.neutron.delete_leftover_vip_port(port).await?;
    }
    Ok(())
}

/// The router's HTTP listener among `listed` for `show`: on the configured port (see
/// [`choose_listener`]), else ours by its name on whatever port it is (`show` reads a Gateway's
/// router on port 80 without its manifests, and the Gateway's lowest HTTP port may be another).
pub(crate) fn shown_http_listener<'a>(listed: &'a [Listener], spec: &RouterSpec) -> Option<&'a Listener> {
    let name = spec.http_listener_name();
    let ours_named = || listed.iter().find(|l| l.protocol == "HTTP" && l.name == name && spec.ownership.owns(&l.tags));
    choose_listener(listed, spec, "HTTP", spec.listener_port).or_else(ours_named)
}

/// The router's HTTP listener: ours (its headers made as configured), else an adopted one on
/// the same port, else created (see `listener_plan::plan_http_listener`); with the router's
/// listeners as listed for it (what the more HTTP listeners are planned from).
pub(crate) async fn ensure_http_listener(
    cloud: &Cloud,
    lb: &LoadBalancer,
    report: &mut ConvergeReport,
) -> Result<(Listener, Vec<Listener>)> {
    let q = ListQuery { loadbalancer_id: Some(lb.id.clone()), ..ListQuery::default() };
    let listed = cloud.octavia.list_listeners(&q).await?;
    let found = choose_listener(&listed, &cloud.spec, "HTTP", cloud.spec.listener_port).cloned();
    let Some(step) = plan_http_listener(found.as_ref(), &lb.id, &cloud.spec) else {
        return Ok((found.expect("a listener found needs no write or an update"), listed));
    };
    let written = listener_write(cloud, &lb.id, step, &mut report.writes).await?;
    Ok((written.expect("a create or an update returns the listener"), listed))
}
