//! What a Gateway's router must pass before its load balancer is created (the driver asks
//! before its first Sync, `super::driver`): its static address is one the operator
//! allows (`[octavia_defaults] gateway_address_tag`, `gateway_addresses`), and the project has
//! the room for one more load balancer (Octavia's quota) and, when one is allocated, one more
//! floating IP (Neutron's). A refusal is the Gateway's `Programmed: False` (reason
//! `AddressNotUsable` or `NoResources`, the message naming the limit) with a Warning Event, not
//! a failed Sync; the driver asks again every `retry`, so the Gateway is served by itself once
//! the quota frees or the address is allowed. A router whose load balancer exists already is
//! never refused for quota: only a create spends it.

use crate::config::{GatewayLimits, Settings};
use crate::driver::error::FLOATING_IP_LABEL;
use crate::openstack::neutron::{FloatingIp, QuotaDetail};
use crate::openstack::{ListQuery, Neutron, Octavia};
use futures::future::BoxFuture;
use std::net::IpAddr;
use std::sync::Arc;

/// The failure label of a refusal for room (the Gateway's `Programmed: False`, `NoResources`,
/// told as "no load balancer is created", see `crate::gateway::build`).
pub use crate::gateway::build::NOT_CREATED_LABEL;

/// Why a Gateway's load balancer is not created (yet).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// [`FLOATING_IP_LABEL`] (an address not allowed) or [`NOT_CREATED_LABEL`] (no room).
    pub label: &'static str,
    pub message: String,
}

impl Refusal {
    fn address(message: String) -> Self {
        Self { label: FLOATING_IP_LABEL, message }
    }

    fn room(message: String) -> Self {
        Self { label: NOT_CREATED_LABEL, message }
    }
}

/// Asks whether the router named `name` (with `address`, the Gateway's static floating IP)
/// may be built: called before its first Sync, and again every retry until it may.
pub type AdmitGateway =
    Arc<dyn Fn(&str, Option<IpAddr>) -> BoxFuture<'static, Result<(), Refusal>> + Send + Sync + 'static>;

/// Why `address` may not be a Gateway's static address (None: it may), given the floating IP
/// of the project that has it (None: there is none).
pub fn address_refusal(limits: &GatewayLimits, address: IpAddr, fip: Option<&FloatingIp>) -> Option<Refusal> {
    if limits.lists(address) {
        return None;
    }
    let tagged = |t: &String| fip.is_some_and(|f| f.tags.contains(t));
    if limits.address_tag.as_ref().is_some_and(tagged) {
        return None;
    }
    let allowed = match &limits.address_tag {
        Some(t) => format!("only the floating IPs tagged {t} ([octavia_defaults] gateway_address_tag)"),
        None => "no floating IP tag ([octavia_defaults] gateway_address_tag)".to_string(),
    };
    let listed = match limits.addresses.is_empty() {
        true => "none listed".to_string(),
        false => format!("those listed: {}", limits.addresses.join(", ")),
    };
    Some(Refusal::address(format!(
        "{address} is not a floating IP the operator allows for Gateways: {allowed}, or \
         [octavia_defaults] gateway_addresses ({listed})"
    )))
}

/// Why the project has no room for one more load balancer (`load_balancers`: its quota, negative
/// or None unlimited, and how many it has) and, if `floating_ip`, one more floating IP.
pub fn room_refusal(
    load_balancers: (Option<i64>, usize),
    floating_ips: Option<QuotaDetail>,
    floating_ip: bool,
) -> Option<Refusal> {
    let (lb_limit, lbs) = load_balancers;
    if let Some(limit) = lb_limit.filter(|l| *l >= 0)
        && lbs as i64 >= limit
    {
        return Some(Refusal::room(format!(
            "the project's Octavia load balancer quota is used up ({lbs} of {limit}): the Gateway's load \
             balancer is created once one is deleted or the quota is raised"
        )));
    }
    if let Some(q) = floating_ips.filter(|q| floating_ip && q.limit >= 0)
        && q.used + q.reserved >= q.limit
    {
        return Some(Refusal::room(format!(
            "the project's Neutron floating IP quota is used up ({} of {}): the Gateway's load balancer is \
             created once one is released or the quota is raised",
            q.used + q.reserved,
            q.limit
        )));
    }
    None
}

/// The admission on the cloud: the floating IP read by its address, the quotas and the
/// project's load balancers read (a policy that forbids reading a quota leaves Octavia's and
/// Neutron's own 403 as the guard, with a warning).
pub fn octavia_admission(settings: &Settings) -> AdmitGateway {
    let limits = settings.octavia_defaults.gateway_limits.clone();
    // One session for every admission (its token cached), built once.
    let clients = crate::wiring::clients(settings).map_err(|e| e.to_string());
    Arc::new(move |name: &str, address: Option<IpAddr>| {
        let (clients, limits, name) = (clients.clone(), limits.clone(), name.to_string());
        Box::pin(async move {
            let (octavia, neutron) =
                clients.map_err(|e| Refusal::room(format!("cannot reach OpenStack to check the quotas: {e}")))?;
            admit_on(&octavia, &neutron, &limits, &name, address).await
        })
    })
}

/// [`octavia_admission`]'s check on these clients: the static address first (no quota is read
/// for an address refused), then the room.
pub async fn admit_on(
    octavia: &Octavia,
    neutron: &Neutron,
    limits: &GatewayLimits,
    name: &str,
    address: Option<IpAddr>,
) -> Result<(), Refusal> {
    if let Some(address) = address {
        let fip = find_floating_ip(neutron, address)
            .await
            .map_err(|e| Refusal::address(format!("cannot read the floating IP {address}: {e}")))?;
        if let Some(r) = address_refusal(limits, address, fip.as_ref()) {
            return Err(r);
        }
    }
    check_room(octavia, neutron, name, address.is_none()).await
}

async fn find_floating_ip(neutron: &Neutron, address: IpAddr) -> crate::openstack::Result<Option<FloatingIp>> {
    let q = ListQuery { extra: vec![("floating_ip_address".into(), address.to_string())], ..ListQuery::default() };
    Ok(neutron.list_floating_ips(&q).await?.into_iter().next())
}

/// The quota check of a router named `name` (none when its load balancer exists).
async fn check_room(octavia: &Octavia, neutron: &Neutron, name: &str, floating_ip: bool) -> Result<(), Refusal> {
    let read = |e: crate::openstack::Error| Refusal::room(format!("cannot read the project's load balancers: {e}"));
    let project = octavia.session().token_info().await.map_err(read)?.project_id.unwrap_or_default();
    let q = ListQuery {
        fields: vec!["id".into(), "name".into()],
        extra: vec![("project_id".into(), project.clone())],
        ..ListQuery::default()
    };
    let lbs = octavia.list_load_balancers(&q).await.map_err(read)?;
    if lbs.iter().any(|lb| lb.name == name) {
        return Ok(());
    }
    let lb_limit = match octavia.get_quota(&project).await {
        Ok(q) => q.load_balancer,
        Err(e) => {
            tracing::warn!(router = %name, error = %e, "cannot read the project's Octavia quotas");
            None
        }
    };
    let fips = match floating_ip {
        false => None,
        true => match neutron.get_quota_details(&project).await {
            Ok(q) => Some(q.floatingip),
            Err(e) => {
                tracing::warn!(router = %name, error = %e, "cannot read the project's Neutron quotas");
                None
            }
        },
    };
    match room_refusal((lb_limit, lbs.len()), fips, floating_ip) {
        Some(r) => Err(r),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fip(tags: &[&str]) -> FloatingIp {
        FloatingIp { tags: tags.iter().map(|t| t.to_string()).collect(), ..FloatingIp::default() }
    }

    #[test]
    fn an_address_is_allowed_by_its_tag_or_the_list_and_nothing_else() {
        let ip: IpAddr = "203.0.113.7".parse().unwrap();
        let none = GatewayLimits::default();
        let r = address_refusal(&none, ip, Some(&fip(&[]))).expect("nothing allowed by default");
        assert_eq!(r.label, FLOATING_IP_LABEL);
        assert!(r.message.contains("203.0.113.7") && r.message.contains("gateway_address_tag"), "{}", r.message);
        let tag = GatewayLimits { address_tag: Some("tenant-ok".into()), ..GatewayLimits::default() };
        assert_eq!(address_refusal(&tag, ip, Some(&fip(&["tenant-ok"]))), None);
        assert!(address_refusal(&tag, ip, Some(&fip(&["other"]))).is_some());
        assert!(address_refusal(&tag, ip, None).is_some(), "no such floating IP");
        let list = GatewayLimits { addresses: vec!["203.0.113.7".into()], ..GatewayLimits::default() };
        assert_eq!(address_refusal(&list, ip, None), None);
        assert!(address_refusal(&list, "203.0.113.8".parse().unwrap(), None).is_some());
    }

    #[test]
    fn the_room_is_the_quota_minus_what_the_project_has() {
        let fips = |limit, used, reserved| Some(QuotaDetail { limit, used, reserved });
        assert_eq!(room_refusal((Some(3), 2), fips(5, 4, 0), true), None);
        let full = room_refusal((Some(3), 3), None, true).expect("no load balancer left");
        assert_eq!(full.label, NOT_CREATED_LABEL);
        assert!(full.message.contains("load balancer quota is used up (3 of 3)"), "{}", full.message);
        assert_eq!(room_refusal((Some(-1), 50), None, true), None, "unlimited");
        assert_eq!(room_refusal((None, 50), None, true), None, "not readable");
        let r = room_refusal((Some(10), 1), fips(5, 4, 1), true).expect("no floating IP left");
        assert!(r.message.contains("floating IP quota is used up (5 of 5)"), "{}", r.message);
        assert_eq!(room_refusal((Some(10), 1), fips(5, 5, 0), false), None, "a static address spends none");
    }
}
