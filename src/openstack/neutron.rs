//! Neutron v2.0: the few calls the router needs (VIP subnet/network lookups, the VIP port, and
//! the floating IP that exposes the load balancer).

use super::error::{Result, Service};
use super::http::ListQuery;
use super::keystone::{Request, Session};
use super::octavia::list_all;
use reqwest::Method;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct Network {
    pub id: String,
    pub name: String,
    pub status: String,
    #[serde(rename = "router:external")]
    pub external: bool,
    pub subnets: Vec<String>,
    pub tags: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct Subnet {
    pub id: String,
    pub name: String,
    pub network_id: String,
    pub cidr: String,
    pub ip_version: u8,
    pub gateway_ip: Option<String>,
    pub tags: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct FixedIp {
    pub subnet_id: String,
    pub ip_address: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct Port {
    pub id: String,
    pub name: String,
    pub description: String,
    pub network_id: String,
    pub device_id: String,
    pub device_owner: String,
    pub fixed_ips: Vec<FixedIp>,
    pub status: String,
    pub tags: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct FloatingIp {
    pub id: String,
    pub floating_ip_address: String,
    pub floating_network_id: String,
    pub fixed_ip_address: Option<String>,
    pub port_id: Option<String>,
    pub router_id: Option<String>,
    pub status: String,
    pub description: String,
    pub tags: Vec<String>,
}

/// The part of a project's Neutron quota details we read.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct QuotaDetails {
    pub floatingip: QuotaDetail,
}

/// One resource's quota: its `limit` (negative: unlimited), what is `used` and `reserved`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct QuotaDetail {
    pub limit: i64,
    pub used: i64,
    pub reserved: i64,
}

/// `POST /v2.0/floatingips`.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FloatingIpCreate {
    pub floating_network_id: String,
    /// Set it to find the address again after a restart (e.g. `kuryr-l7-router <cluster>`).
    pub description: Option<String>,
    /// Associate at creation.
    pub port_id: Option<String>,
    /// Ask for a specific address (admin or pre-allocated only).
    pub floating_ip_address: Option<String>,
}

/// The Neutron client; cheap to clone. List filters are [`ListQuery`]: `name`, `tags`,
/// `tags-any`, `fields`, `limit`, and anything else through `extra`, e.g.
/// `device_owner=Octavia`, `network_id=...`, `fixed_ips=ip_address=10.0.0.5`,
/// `floating_ip_address=...`, `port_id=...`, `floating_network_id=...`, `description=...`.
#[derive(Clone, Debug)]
pub struct Neutron {
    session: Session,
}

const BASE: &str = "/v2.0";

impl Neutron {
    pub fn new(session: Session) -> Self {
        Self { session }
    }

    async fn get<T: DeserializeOwned>(&self, path: String, key: &str) -> Result<T> {
        let mut v: Value = self.session.send_json(&Request::new(Service::Network, Method::GET, path.clone())).await?;
        serde_json::from_value(v[key].take()).map_err(|e| super::Error::Decode {
            service: Service::Network,
            method: "GET".into(),
            path,
            message: e.to_string(),
        })
    }

    async fn write<T: DeserializeOwned>(&self, method: Method, path: String, key: &str, body: Value) -> Result<T> {
        let req = Request::new(Service::Network, method, path.clone()).json(json!({ key: body }));
        let mut v: Value = self.session.send_json(&req).await?;
        serde_json::from_value(v[key].take()).map_err(|e| super::Error::Decode {
            service: Service::Network,
            method: req.method.to_string(),
            path,
            message: e.to_string(),
        })
    }

    async fn delete(&self, path: String) -> Result<()> {
        match self.session.send(&Request::new(Service::Network, Method::DELETE, path)).await {
            Err(e) if !e.is_not_found() => Err(e),
            _ => Ok(()),
        }
    }

    pub async fn get_network(&self, id: &str) -> Result<Network> {
        self.get(format!("{BASE}/networks/{id}"), "network").await
    }
    pub async fn list_networks(&self, q: &ListQuery) -> Result<Vec<Network>> {
        list_all(&self.session, Service::Network, format!("{BASE}/networks"), "networks", q).await
    }
    pub async fn get_subnet(&self, id: &str) -> Result<Subnet> {
        self.get(format!("{BASE}/subnets/{id}"), "subnet").await
    }
    pub async fn list_subnets(&self, q: &ListQuery) -> Result<Vec<Subnet>> {
        list_all(&self.session, Service::Network, format!("{BASE}/subnets"), "subnets", q).await
    }
    pub async fn get_port(&self, id: &str) -> Result<Port> {
        self.get(format!("{BASE}/ports/{id}"), "port").await
    }
    pub async fn list_ports(&self, q: &ListQuery) -> Result<Vec<Port>> {
        list_all(&self.session, Service::Network, format!("{BASE}/ports"), "ports", q).await
    }
    /// Delete the VIP port of a deleted load balancer if it is still there and still Octavia's:
    /// a real network driver frees it with the load balancer, a noop one (test clouds) leaves it
    /// behind. Whether a port was deleted.
    pub(crate) async fn delete_leftover_vip_port(&self, id: &str) -> Result<bool> {
        match self.get_port(id).await {
            Ok(p) if p.device_owner == "Octavia" => {
                self.delete_port(id).await?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// 404 counts as success.
    pub async fn delete_port(&self, id: &str) -> Result<()> {
        self.delete(format!("{BASE}/ports/{id}")).await
    }
    pub async fn get_floating_ip(&self, id: &str) -> Result<FloatingIp> {
        self.get(format!("{BASE}/floatingips/{id}"), "floatingip").await
    }
    pub async fn list_floating_ips(&self, q: &ListQuery) -> Result<Vec<FloatingIp>> {
        list_all(&self.session, Service::Network, format!("{BASE}/floatingips"), "floatingips", q).await
    }
    /// `GET /v2.0/quotas/{project_id}/details.json` (the quota-details extension): each
    /// resource's limit, use and reservations.
    pub async fn get_quota_details(&self, project_id: &str) -> Result<QuotaDetails> {
        self.get(format!("{BASE}/quotas/{project_id}/details.json"), "quota").await
    }
    pub async fn create_floating_ip(&self, f: &FloatingIpCreate) -> Result<FloatingIp> {
        let body = serde_json::to_value(f).expect("serializable");
        self.write(Method::POST, format!("{BASE}/floatingips"), "floatingip", body).await
    }
    /// Points the floating IP at `port_id` (e.g. the load balancer's `vip_port_id`).
    pub async fn associate_floating_ip(&self, id: &str, port_id: &str) -> Result<FloatingIp> {
        self.write(Method::PUT, format!("{BASE}/floatingips/{id}"), "floatingip", json!({ "port_id": port_id })).await
    }
    /// Sets the floating IP's description (how the router recognises its address).
    pub(crate) async fn describe_floating_ip(&self, id: &str, description: &str) -> Result<FloatingIp> {
        self.write(Method::PUT, format!("{BASE}/floatingips/{id}"), "floatingip", json!({ "description": description }))
            .await
    }
    pub async fn disassociate_floating_ip(&self, id: &str) -> Result<FloatingIp> {
        self.write(Method::PUT, format!("{BASE}/floatingips/{id}"), "floatingip", json!({ "port_id": null })).await
    }
    /// Replaces the tags of the floating IP `id` (`PUT /v2.0/floatingips/{id}/tags`, the
    /// `standard-attr-tag` extension; a create body cannot carry tags before Neutron's
    /// `tag-creation` extension).
    pub(crate) async fn set_floating_ip_tags(&self, id: &str, tags: &[String]) -> Result<()> {
        let req = Request::new(Service::Network, Method::PUT, format!("{BASE}/floatingips/{id}/tags"))
            .json(json!({ "tags": tags }));
        self.session.send_json::<Value>(&req).await.map(|_| ())
    }
    /// 404 counts as success.
    pub async fn delete_floating_ip(&self, id: &str) -> Result<()> {
        self.delete(format!("{BASE}/floatingips/{id}")).await
    }
}
