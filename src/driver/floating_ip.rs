//! The router's floating IP: the configured one, or one allocated for it and recognised again
//! by its description, which names the router (cluster tag and router name), not its load
//! balancer: a router deleted by hand or replaced after ERROR is rebuilt on the SAME address,
//! and no address is ever allocated twice for one router.

use super::cloud::Cloud;
use super::door::{self, Order};
use super::error::{DriverError, Result};
use super::ownership::{Ownership, PRODUCT_TAG};
use super::report::WriteRecord;
use crate::openstack::neutron::{FloatingIp, FloatingIpCreate};
use crate::openstack::octavia::LoadBalancer;
use crate::openstack::{ListQuery, Neutron};
use std::net::IpAddr;

fn by(key: &str, value: &str) -> ListQuery {
    ListQuery { extra: vec![(key.to_string(), value.to_string())], ..ListQuery::default() }
}

/// The floating IP on `port` (a router's VIP port), if any.
pub(crate) async fn of_port(neutron: &Neutron, port: &str) -> Result<Option<FloatingIp>, crate::openstack::Error> {
    Ok(neutron.list_floating_ips(&by("port_id", port)).await?.into_iter().next())
}

/// How a floating IP we allocated is recognised after a restart or a rebuild of the router:
/// by the router's name (`router_name`), never by its load balancer (which a rebuild replaces).
/// Releases before 0.x described it with the load balancer's id instead; such an address is
/// re-described the first time it is found on the router's VIP port.
pub fn floating_ip_description(own: &Ownership, router_name: &str) -> String {
    format!("{PRODUCT_TAG} {} router {router_name}", own.cluster_tag())
}

/// Put the router's floating IP on its VIP port and return its address.
///
/// With `l7_router_ip`, that floating IP must exist and be free or already ours. Without it, one
/// is allocated on the external network of `external_svc_subnet`, described with the router's
/// id so that a restart finds the same one (never one more per start). Its writes go through
/// the write door and are recorded in `writes`.
pub(crate) async fn ensure(cloud: &Cloud, lb: &LoadBalancer, writes: &mut Vec<WriteRecord>) -> Result<Option<IpAddr>> {
    let Some(vip_port) = lb.vip_port_id.clone() else { return Ok(None) };
    let n = &cloud.neutron;
    if let Some(ip) = cloud.spec.floating_ip {
        let fip = n
            .list_floating_ips(&by("floating_ip_address", &ip.to_string()))
            .await?
            .into_iter()
            .next()
            .ok_or(DriverError::FloatingIpNotFound(ip))?;
        match fip.port_id.as_deref() {
            Some(p) if p == vip_port => {}
            Some(p) => {
                return Err(DriverError::FloatingIpInUse { ip, port: p.to_string(), vip_port });
            }
            None => {
                let order =
                    Order::neutron("associate_floating_ip", format!("associate floating IP {ip} with the router"));
                door::write_recorded(cloud, order, writes, n.associate_floating_ip(&fip.id, &vip_port)).await?;
            }
        }
        return Ok(Some(ip));
    }
    let Some(subnet) = &cloud.spec.external_svc_subnet else { return Ok(None) };
    let marker = floating_ip_description(&cloud.spec.ownership, &cloud.spec.name);
    if let Some(fip) = of_port(n, &vip_port).await? {
        if fip.description != marker && fip.description == floating_ip_description(&cloud.spec.ownership, &lb.id) {
            // Described by an earlier release with the load balancer's id: re-described by the
            // router's name, so that a rebuild of the router finds it again.
            let description = format!("describe floating IP {} by the router's name", fip.floating_ip_address);
            let order = Order::neutron("describe_floating_ip", description);
            door::write_recorded(cloud, order, writes, n.describe_floating_ip(&fip.id, &marker)).await?;
        }
        return Ok(fip.floating_ip_address.parse().ok());
    }
    let legacy = floating_ip_description(&cloud.spec.ownership, &lb.id);
    let mut ours = n.list_floating_ips(&by("description", &marker)).await?;
    ours.extend(n.list_floating_ips(&by("description", &legacy)).await?);
    // The free one first; one still on another port is on the VIP port of a load balancer
    // deleted by hand (a network driver that leaves the port behind) or of the router in ERROR
    // being replaced: the address is moved to the new VIP port.
    ours.sort_by_key(|f| f.port_id.is_some());
    if let Some(fip) = ours.into_iter().next() {
        tracing::info!(address = %fip.floating_ip_address, from_port = ?fip.port_id, "reusing the router's floating IP");
        let call = async {
            if fip.port_id.is_some() {
                n.disassociate_floating_ip(&fip.id).await?;
            }
            n.associate_floating_ip(&fip.id, &vip_port).await?;
            if fip.description != marker {
                n.describe_floating_ip(&fip.id, &marker).await?;
            }
            Ok::<_, crate::openstack::Error>(())
        };
        let description = format!("move the router's floating IP {} to its VIP port", fip.floating_ip_address);
        door::write_recorded(cloud, Order::neutron("associate_floating_ip", description), writes, call).await?;
        return Ok(fip.floating_ip_address.parse().ok());
    }
    let network = n.get_subnet(subnet).await?.network_id;
    let body = FloatingIpCreate {
        floating_network_id: network,
        description: Some(marker),
        port_id: Some(vip_port),
        floating_ip_address: None,
    };
    let order = Order::neutron("create_floating_ip", "allocate the router's floating IP".into());
    let fip = door::write_recorded(cloud, order, writes, n.create_floating_ip(&body)).await?;
    // Tagged as every object we create (ownership and `resource_tags`); it is still recognised by
    // its description, so a failure here only leaves it untagged until the next allocation.
    if let Err(e) = n.set_floating_ip_tags(&fip.id, &cloud.spec.ownership.router_tags()).await {
        tracing::warn!(error = %e, floating_ip = %fip.floating_ip_address, "cannot tag the floating IP");
    }
    Ok(fip.floating_ip_address.parse().ok())
}
