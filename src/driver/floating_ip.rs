//! The router's floating IP: the configured one, or one allocated for it and recognised again
//! after a restart by its description.

use super::cloud::Cloud;
use super::error::{DriverError, Result};
use super::ownership::{Ownership, PRODUCT_TAG};
use crate::openstack::neutron::{FloatingIp, FloatingIpCreate};
use crate::openstack::octavia::LoadBalancer;
use crate::openstack::{ListQuery, Neutron};
use std::net::IpAddr;

fn by(key: &str, value: &str) -> ListQuery {
    ListQuery { extra: vec![(key.to_string(), value.to_string())], ..ListQuery::default() }
}

/// The floating IP on `port` (a router's VIP port), if any.
pub async fn of_port(neutron: &Neutron, port: &str) -> Result<Option<FloatingIp>, crate::openstack::Error> {
    Ok(neutron.list_floating_ips(&by("port_id", port)).await?.into_iter().next())
}

/// How a floating IP we allocated is recognised after a restart.
pub fn floating_ip_description(own: &Ownership, lb_id: &str) -> String {
    format!("{PRODUCT_TAG} {} router {lb_id}", own.cluster_tag())
}

/// Put the router's floating IP on its VIP port and return its address.
///
/// With `l7_router_ip`, that floating IP must exist and be free or already ours. Without it, one
/// is allocated on the external network of `external_svc_subnet`, described with the router's
/// id so that a restart finds the same one (never one more per start).
pub async fn ensure(cloud: &Cloud, lb: &LoadBalancer) -> Result<Option<IpAddr>> {
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
                n.associate_floating_ip(&fip.id, &vip_port).await?;
            }
        }
        return Ok(Some(ip));
    }
    let Some(subnet) = &cloud.spec.external_svc_subnet else { return Ok(None) };
    if let Some(fip) = of_port(n, &vip_port).await? {
        return Ok(fip.floating_ip_address.parse().ok());
    }
    let marker = floating_ip_description(&cloud.spec.ownership, &lb.id);
    if let Some(fip) = n.list_floating_ips(&by("description", &marker)).await?.into_iter().next() {
        // Allocated by an earlier run that stopped before associating it.
        n.associate_floating_ip(&fip.id, &vip_port).await?;
        return Ok(fip.floating_ip_address.parse().ok());
    }
    let network = n.get_subnet(subnet).await?.network_id;
    let fip = n
        .create_floating_ip(&FloatingIpCreate {
            floating_network_id: network,
            description: Some(marker),
            port_id: Some(vip_port),
            floating_ip_address: None,
        })
        .await?;
    // Tagged as every object we create (ownership and `resource_tags`); it is still recognised by
    // its description, so a failure here only leaves it untagged until the next allocation.
    if let Err(e) = n.set_floating_ip_tags(&fip.id, &cloud.spec.ownership.router_tags()).await {
        tracing::warn!(error = %e, floating_ip = %fip.floating_ip_address, "cannot tag the floating IP");
    }
    Ok(fip.floating_ip_address.parse().ok())
}
