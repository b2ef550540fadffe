//! Octavia v2 (`/v2/lbaas`): typed objects, CRUD, batch member update, provisioning waits.
//!
//! Write methods retry a "load balancer busy" 409 (Octavia rejects every write while the load
//! balancer is PENDING_*) with backoff up to [`OctaviaOptions::busy_retry`], and return as soon as
//! the write is accepted; call [`Octavia::wait_active`] when the next step needs the result.

use super::error::{Error, Result, Service};
use super::http::{ListQuery, bump, next_link, relative_next};
use super::keystone::{Request, Session};
use super::octavia_requests::{
    HealthMonitorCreate, HealthMonitorUpdate, L7PolicyCreate, L7PolicyUpdate, L7RuleCreate, ListenerCreate,
    ListenerUpdate, LoadBalancerCreate, LoadBalancerUpdate, MemberCreate, PoolCreate, PoolUpdate,
};
use backon::{BackoffBuilder, ExponentialBuilder, Retryable};
use reqwest::Method;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::ops::ControlFlow::{self, Break, Continue};
use std::time::{Duration, Instant};

/// `{"id": ...}` as Octavia lists children.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdRef {
    pub id: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct LoadBalancer {
    pub id: String,
    pub name: String,
    pub description: String,
    pub provisioning_status: String,
    pub operating_status: String,
    pub vip_address: Option<String>,
    pub vip_port_id: Option<String>,
    pub vip_subnet_id: Option<String>,
    pub vip_network_id: Option<String>,
    pub project_id: String,
    pub provider: Option<String>,
    pub availability_zone: Option<String>,
    pub admin_state_up: bool,
    pub tags: Vec<String>,
    pub listeners: Vec<IdRef>,
    pub pools: Vec<IdRef>,
    /// ISO 8601, as Octavia gives it.
    pub created_at: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct Listener {
    pub id: String,
    pub name: String,
    pub description: String,
    pub protocol: String,
    pub protocol_port: u16,
    pub default_pool_id: Option<String>,
    pub loadbalancers: Vec<IdRef>,
    pub l7policies: Vec<IdRef>,
    pub provisioning_status: String,
    pub operating_status: String,
    pub tags: Vec<String>,
    pub insert_headers: Option<Value>,
    /// TERMINATED_HTTPS: the Barbican secret served when SNI matches no other.
    pub default_tls_container_ref: Option<String>,
    /// TERMINATED_HTTPS: one Barbican secret per SNI certificate.
    pub sni_container_refs: Vec<String>,
    /// TERMINATED_HTTPS: the Barbican secret (PEM) client certificates are checked against.
    pub client_ca_tls_container_ref: Option<String>,
    /// `NONE`, `OPTIONAL` or `MANDATORY` (absent from an older Octavia: NONE).
    pub client_authentication: Option<String>,
    pub timeout_client_data: Option<u32>,
    pub timeout_member_connect: Option<u32>,
    pub timeout_member_data: Option<u32>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct Pool {
    pub id: String,
    pub name: String,
    pub description: String,
    pub protocol: String,
    pub lb_algorithm: String,
    pub listeners: Vec<IdRef>,
    pub loadbalancers: Vec<IdRef>,
    pub members: Vec<IdRef>,
    pub healthmonitor_id: Option<String>,
    pub provisioning_status: String,
    pub operating_status: String,
    pub tags: Vec<String>,
    /// ISO 8601 (seconds). Octavia sets it on every change of the pool, including the
    /// PENDING_UPDATE → ACTIVE of any change to its members.
    pub updated_at: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct Member {
    pub id: String,
    pub name: String,
    pub address: String,
    pub protocol_port: u16,
    pub weight: u16,
    pub backup: bool,
    pub subnet_id: Option<String>,
    pub monitor_address: Option<String>,
    pub monitor_port: Option<u16>,
    pub admin_state_up: bool,
    pub provisioning_status: String,
    pub operating_status: String,
    pub tags: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct L7Policy {
    pub id: String,
    pub name: String,
    pub description: String,
    pub listener_id: String,
    pub action: String,
    pub redirect_pool_id: Option<String>,
    pub redirect_url: Option<String>,
    pub redirect_prefix: Option<String>,
    pub redirect_http_code: Option<u16>,
    pub position: u32,
    pub admin_state_up: bool,
    pub rules: Vec<IdRef>,
    pub provisioning_status: String,
    pub operating_status: String,
    pub tags: Vec<String>,
    /// ISO 8601 (seconds). Octavia sets it on every change of the policy, including the
    /// PENDING_UPDATE → ACTIVE of any change to its rules.
    pub updated_at: Option<String>,
}

/// The part of a project's Octavia quotas we read.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct Quota {
    /// Load balancers (`load_balancer`; `loadbalancer` before Octavia's 2.x API renamed it).
    /// Negative: unlimited.
    #[serde(alias = "loadbalancer")]
    pub load_balancer: Option<i64>,
    pub l7policy: Option<i64>,
    pub l7rule: Option<i64>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct L7Rule {
    pub id: String,
    #[serde(rename = "type")]
    pub rule_type: String,
    pub compare_type: String,
    pub key: Option<String>,
    pub value: String,
    pub invert: bool,
    pub provisioning_status: String,
    pub operating_status: String,
    pub tags: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct HealthMonitor {
    pub id: String,
    pub name: String,
    #[serde(rename = "type")]
    pub monitor_type: String,
    pub delay: u32,
    pub timeout: u32,
    pub max_retries: u32,
    pub max_retries_down: u32,
    pub http_method: Option<String>,
    pub url_path: Option<String>,
    pub expected_codes: Option<String>,
    pub pools: Vec<IdRef>,
    pub provisioning_status: String,
    pub operating_status: String,
    pub tags: Vec<String>,
}

/// Timing knobs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OctaviaOptions {
    /// How long a write keeps retrying "load balancer busy" 409s.
    pub busy_retry: Duration,
    /// First poll/retry delay (doubles up to `max_delay`).
    pub min_delay: Duration,
    pub max_delay: Duration,
}

impl Default for OctaviaOptions {
    fn default() -> Self {
        Self {
            busy_retry: Duration::from_secs(60),
            // A write on the router takes 0.3–3 s; GETs take 30–55 ms. Polling 50 ms → 500 ms
            // overshoots ACTIVE by at most half a second at the cost of a few cheap GETs
            // (docs/benchmarks.md, latency probe).
            min_delay: Duration::from_millis(50),
            max_delay: Duration::from_millis(500),
        }
    }
}

const BASE: &str = "/v2/lbaas";

/// The pause before the next status poll: the backoff's, but never shorter than the last GET
/// took. Octavia's API loads the load balancer's whole object graph to answer a GET of it (about
/// 2.5 s of API CPU for a router of 1,300 objects on the local stack), so a fixed poll would keep
/// an API worker busy all the time on a large router; this keeps it at most half busy, and costs
/// nothing on a small one (GETs of 30–50 ms).
pub(crate) fn poll_delay(backoff: Duration, last_get: Duration) -> Duration {
    backoff.max(last_get)
}

/// "May this process still write?", asked before every attempt of a write: the first one and
/// each retry after a busy 409. A leader that lost its lease must not land a write minutes later
/// because the new leader's own writes kept its retries going (see docs/reliability.md, "the
/// leader fence").
#[derive(Clone)]
pub struct WritePermit(std::sync::Arc<dyn Fn() -> bool + Send + Sync>);

impl WritePermit {
    pub fn new(may_write: impl Fn() -> bool + Send + Sync + 'static) -> Self {
        Self(std::sync::Arc::new(may_write))
    }

    pub fn allows(&self) -> bool {
        (self.0)()
    }
}

impl std::fmt::Debug for WritePermit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WritePermit")
    }
}

/// The Octavia client; cheap to clone.
#[derive(Clone, Debug)]
pub struct Octavia {
    session: Session,
    opts: OctaviaOptions,
    permit: Option<WritePermit>,
}

impl Octavia {
    pub fn new(session: Session, opts: OctaviaOptions) -> Self {
        Self { session, opts, permit: None }
    }

    /// Ask `permit` before every write attempt (see [`WritePermit`]); a refused attempt ends
    /// the write with [`Error::Fenced`].
    pub fn with_write_permit(mut self, permit: WritePermit) -> Self {
        self.permit = Some(permit);
        self
    }

    pub fn session(&self) -> &Session {
        &self.session
    }

    pub fn options(&self) -> &OctaviaOptions {
        &self.opts
    }

    fn backoff(&self) -> ExponentialBuilder {
        ExponentialBuilder::default()
            .with_min_delay(self.opts.min_delay)
            .with_max_delay(self.opts.max_delay)
            .with_jitter()
            .without_max_times()
    }

    /// Runs a write, retrying while Octavia answers "load balancer busy" (409) or "project busy"
    /// (503, see [`Error::is_project_busy`]), with exponential backoff until
    /// [`OctaviaOptions::busy_retry`]; every retry is counted in [`super::Stats::conflict_retries`].
    /// The write permit is asked before every attempt: a closed one ends the retries at once.
    pub async fn retry_busy<T, F, Fut>(&self, mut op: F) -> Result<T>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let counters = self.session.counters();
        let permit = self.permit.clone();
        let attempt = move || {
            let allowed = permit.as_ref().is_none_or(WritePermit::allows);
            let call = allowed.then(&mut op);
            async move {
                match call {
                    Some(call) => call.await,
                    None => Err(Error::Fenced),
                }
            }
        };
        attempt
            .retry(self.backoff().with_total_delay(Some(self.opts.busy_retry)))
            .sleep(tokio::time::sleep)
            .when(Error::is_busy)
            .notify(|e, delay| {
                bump(&counters.conflict_retries);
                tracing::debug!(error = %e, ?delay, "load balancer busy, retrying");
            })
            .await
    }

    async fn get<T: DeserializeOwned>(&self, path: String, key: &str) -> Result<T> {
        let mut v: Value = self.session.send_json(&Request::new(Service::LoadBalancer, Method::GET, path)).await?;
        decode(v[key].take(), key)
    }

    /// GET a collection following every `rel=next` link.
    async fn list<T: DeserializeOwned>(&self, path: String, key: &str, q: &ListQuery) -> Result<Vec<T>> {
        list_all(&self.session, Service::LoadBalancer, path, key, q).await
    }

    async fn write<T: DeserializeOwned>(&self, method: Method, path: String, key: &str, body: Value) -> Result<T> {
        self.write_within(method, path, key, body, None).await
    }

    async fn write_within<T: DeserializeOwned>(
        &self,
        method: Method,
        path: String,
        key: &str,
        body: Value,
        timeout: Option<Duration>,
    ) -> Result<T> {
        let mut req = Request::new(Service::LoadBalancer, method, path).json(json!({ key: body }));
        req.timeout = timeout;
        let mut v: Value = self.retry_busy(|| self.session.send_json(&req)).await?;
        decode(v[key].take(), key)
    }

    async fn delete(&self, path: String) -> Result<()> {
        let req = Request::new(Service::LoadBalancer, Method::DELETE, path);
        match self.retry_busy(|| self.session.send(&req)).await {
            Ok(_) => Ok(()),
            Err(e) if e.is_not_found() => Ok(()),
            Err(e) => Err(e),
        }
    }

    // Load balancers.

    pub async fn get_load_balancer(&self, id: &str) -> Result<LoadBalancer> {
        self.get(format!("{BASE}/loadbalancers/{id}"), "loadbalancer").await
    }
    pub async fn list_load_balancers(&self, q: &ListQuery) -> Result<Vec<LoadBalancer>> {
        self.list(format!("{BASE}/loadbalancers"), "loadbalancers", q).await
    }
    /// Also the fully-populated create when `lb.listeners`/`lb.pools` are set.
    pub async fn create_load_balancer(&self, lb: &LoadBalancerCreate) -> Result<LoadBalancer> {
        self.write(Method::POST, format!("{BASE}/loadbalancers"), "loadbalancer", to_value(lb)).await
    }
    /// [`Self::create_load_balancer`] with its own request timeout: Octavia's API writes the whole
    /// graph of a fully-populated create to its database inside the request (minutes for a
    /// router of a thousand objects on a slow cloud), longer than any ordinary request.
    pub async fn create_load_balancer_within(
        &self,
        lb: &LoadBalancerCreate,
        timeout: Duration,
    ) -> Result<LoadBalancer> {
        self.write_within(Method::POST, format!("{BASE}/loadbalancers"), "loadbalancer", to_value(lb), Some(timeout))
            .await
    }
    pub async fn update_load_balancer(&self, id: &str, u: &LoadBalancerUpdate) -> Result<LoadBalancer> {
        self.write(Method::PUT, format!("{BASE}/loadbalancers/{id}"), "loadbalancer", to_value(u)).await
    }
    /// `cascade` deletes all children (without it Octavia answers 400 when there are any).
    pub async fn delete_load_balancer(&self, id: &str, cascade: bool) -> Result<()> {
        let q = if cascade { "?cascade=true" } else { "" };
        self.delete(format!("{BASE}/loadbalancers/{id}{q}")).await
    }

    // Listeners.

    pub async fn get_listener(&self, id: &str) -> Result<Listener> {
        self.get(format!("{BASE}/listeners/{id}"), "listener").await
    }
    pub async fn list_listeners(&self, q: &ListQuery) -> Result<Vec<Listener>> {
        self.list(format!("{BASE}/listeners"), "listeners", q).await
    }
    pub async fn create_listener(&self, l: &ListenerCreate) -> Result<Listener> {
        self.write(Method::POST, format!("{BASE}/listeners"), "listener", to_value(l)).await
    }
    pub async fn update_listener(&self, id: &str, u: &ListenerUpdate) -> Result<Listener> {
        self.write(Method::PUT, format!("{BASE}/listeners/{id}"), "listener", to_value(u)).await
    }
    pub async fn delete_listener(&self, id: &str) -> Result<()> {
        self.delete(format!("{BASE}/listeners/{id}")).await
    }

    // Pools.

    pub async fn get_pool(&self, id: &str) -> Result<Pool> {
        self.get(format!("{BASE}/pools/{id}"), "pool").await
    }
    pub async fn list_pools(&self, q: &ListQuery) -> Result<Vec<Pool>> {
        self.list(format!("{BASE}/pools"), "pools", q).await
    }
    pub async fn create_pool(&self, p: &PoolCreate) -> Result<Pool> {
        self.write(Method::POST, format!("{BASE}/pools"), "pool", to_value(p)).await
    }
    pub(crate) async fn update_pool(&self, id: &str, u: &PoolUpdate) -> Result<Pool> {
        self.write(Method::PUT, format!("{BASE}/pools/{id}"), "pool", to_value(u)).await
    }
    pub async fn delete_pool(&self, id: &str) -> Result<()> {
        self.delete(format!("{BASE}/pools/{id}")).await
    }

    // Members.

    pub async fn list_members(&self, pool_id: &str, q: &ListQuery) -> Result<Vec<Member>> {
        self.list(format!("{BASE}/pools/{pool_id}/members"), "members", q).await
    }
    pub async fn create_member(&self, pool_id: &str, m: &MemberCreate) -> Result<Member> {
        self.write(Method::POST, format!("{BASE}/pools/{pool_id}/members"), "member", to_value(m)).await
    }
    pub async fn delete_member(&self, pool_id: &str, id: &str) -> Result<()> {
        self.delete(format!("{BASE}/pools/{pool_id}/members/{id}")).await
    }
    /// Batch update: the pool ends up with exactly `members` (matched by address + protocol_port;
    /// omitted ones are deleted). One write and one provisioning round whatever the count; Octavia
    /// answers 202 and applies it asynchronously, so wait for ACTIVE before reading back.
    pub async fn replace_members(&self, pool_id: &str, members: &[MemberCreate]) -> Result<()> {
        let req = Request::new(Service::LoadBalancer, Method::PUT, format!("{BASE}/pools/{pool_id}/members"))
            .json(json!({ "members": members }));
        self.retry_busy(|| self.session.send(&req)).await.map(drop)
    }

    // Quotas.

    /// The project's quotas (`GET /v2/lbaas/quotas/{project}`): -1 is unlimited; absent fields
    /// (an older Octavia) are `None`.
    pub async fn get_quota(&self, project_id: &str) -> Result<Quota> {
        self.get(format!("{BASE}/quotas/{project_id}"), "quota").await
    }

    // L7 policies and rules.

    pub async fn get_l7policy(&self, id: &str) -> Result<L7Policy> {
        self.get(format!("{BASE}/l7policies/{id}"), "l7policy").await
    }
    pub async fn list_l7policies(&self, q: &ListQuery) -> Result<Vec<L7Policy>> {
        self.list(format!("{BASE}/l7policies"), "l7policies", q).await
    }
    /// Sends `p` as is (inline `rules` answer 500 on Octavia Zed; see
    /// [`Octavia::create_l7policy_with_rules`]).
    pub async fn create_l7policy(&self, p: &L7PolicyCreate) -> Result<L7Policy> {
        self.write(Method::POST, format!("{BASE}/l7policies"), "l7policy", to_value(p)).await
    }
    /// Creates the policy without rules, then each rule (each write waits out the previous one's
    /// PENDING_UPDATE through the busy retry). Returns the policy as read back at the end.
    pub async fn create_l7policy_with_rules(&self, p: &L7PolicyCreate) -> Result<L7Policy> {
        let bare = L7PolicyCreate { rules: Vec::new(), ..p.clone() };
        let policy = self.create_l7policy(&bare).await?;
        for r in &p.rules {
            self.create_l7rule(&policy.id, r).await?;
        }
        self.get_l7policy(&policy.id).await
    }
    pub(crate) async fn update_l7policy(&self, id: &str, u: &L7PolicyUpdate) -> Result<L7Policy> {
        self.write(Method::PUT, format!("{BASE}/l7policies/{id}"), "l7policy", to_value(u)).await
    }
    pub async fn delete_l7policy(&self, id: &str) -> Result<()> {
        self.delete(format!("{BASE}/l7policies/{id}")).await
    }
    pub async fn get_l7rule(&self, policy_id: &str, id: &str) -> Result<L7Rule> {
        self.get(format!("{BASE}/l7policies/{policy_id}/rules/{id}"), "rule").await
    }
    pub async fn list_l7rules(&self, policy_id: &str, q: &ListQuery) -> Result<Vec<L7Rule>> {
        self.list(format!("{BASE}/l7policies/{policy_id}/rules"), "rules", q).await
    }
    pub async fn create_l7rule(&self, policy_id: &str, r: &L7RuleCreate) -> Result<L7Rule> {
        self.write(Method::POST, format!("{BASE}/l7policies/{policy_id}/rules"), "rule", to_value(r)).await
    }
    pub async fn update_l7rule(&self, policy_id: &str, id: &str, r: &L7RuleCreate) -> Result<L7Rule> {
        self.write(Method::PUT, format!("{BASE}/l7policies/{policy_id}/rules/{id}"), "rule", to_value(r)).await
    }
    pub(crate) async fn delete_l7rule(&self, policy_id: &str, id: &str) -> Result<()> {
        self.delete(format!("{BASE}/l7policies/{policy_id}/rules/{id}")).await
    }

    // Health monitors.

    pub async fn get_health_monitor(&self, id: &str) -> Result<HealthMonitor> {
        self.get(format!("{BASE}/healthmonitors/{id}"), "healthmonitor").await
    }
    pub(crate) async fn list_health_monitors(&self, q: &ListQuery) -> Result<Vec<HealthMonitor>> {
        self.list(format!("{BASE}/healthmonitors"), "healthmonitors", q).await
    }
    pub async fn create_health_monitor(&self, h: &HealthMonitorCreate) -> Result<HealthMonitor> {
        self.write(Method::POST, format!("{BASE}/healthmonitors"), "healthmonitor", to_value(h)).await
    }
    pub async fn update_health_monitor(&self, id: &str, u: &HealthMonitorUpdate) -> Result<HealthMonitor> {
        self.write(Method::PUT, format!("{BASE}/healthmonitors/{id}"), "healthmonitor", to_value(u)).await
    }
    pub async fn delete_health_monitor(&self, id: &str) -> Result<()> {
        self.delete(format!("{BASE}/healthmonitors/{id}")).await
    }

    /// Polls the load balancer until `provisioning_status` is ACTIVE (exponential backoff from
    /// `min_delay` to `max_delay`, and never sooner than the last GET took: see
    /// [`poll_delay`]). ERROR fails at once with the object; the deadline fails with the last
    /// status seen. A 404 is an error (use [`Octavia::wait_deleted`] for deletes).
    pub async fn wait_active(&self, lb_id: &str, timeout: Duration) -> Result<LoadBalancer> {
        self.poll_load_balancer(lb_id, timeout, |read| match read {
            Err(e) => Break(Err(e)),
            Ok(lb) if lb.provisioning_status == "ACTIVE" => Break(Ok(lb)),
            Ok(lb) if lb.provisioning_status == "ERROR" => {
                Break(Err(Error::Provisioning { kind: "loadbalancer", id: lb.id, status: lb.provisioning_status }))
            }
            Ok(lb) => Continue(lb.provisioning_status),
        })
        .await
    }

    /// Polls until the load balancer is gone (404).
    pub async fn wait_deleted(&self, lb_id: &str, timeout: Duration) -> Result<()> {
        self.poll_load_balancer(lb_id, timeout, |read| match read {
            Err(e) if e.is_not_found() => Break(Ok(())),
            Err(e) => Break(Err(e)),
            Ok(lb) => Continue(lb.provisioning_status),
        })
        .await
    }

    /// GETs the load balancer until `ends` breaks with the answer, each pause as
    /// [`poll_delay`] says; `ends` continues with the status seen, which the deadline's
    /// [`Error::WaitTimeout`] names.
    async fn poll_load_balancer<T>(
        &self,
        lb_id: &str,
        timeout: Duration,
        ends: impl Fn(Result<LoadBalancer>) -> ControlFlow<Result<T>, String>,
    ) -> Result<T> {
        let started = Instant::now();
        let mut delays = self.backoff().build();
        loop {
            let asked = Instant::now();
            let read = self.get_load_balancer(lb_id).await;
            let took = asked.elapsed();
            let status = match ends(read) {
                Break(answer) => return answer,
                Continue(status) => status,
            };
            let delay = poll_delay(delays.next().unwrap_or(self.opts.max_delay), took);
            if started.elapsed() + delay > timeout {
                return Err(Error::WaitTimeout {
                    kind: "loadbalancer",
                    id: lb_id.into(),
                    waited: started.elapsed(),
                    last_status: status,
                });
            }
            tokio::time::sleep(delay).await;
        }
    }
}

fn to_value<T: Serialize>(v: &T) -> Value {
    serde_json::to_value(v).expect("request structs always serialize")
}

fn decode<T: DeserializeOwned>(v: Value, key: &str) -> Result<T> {
    serde_json::from_value(v).map_err(|e| Error::Decode {
        service: Service::LoadBalancer,
        method: "-".into(),
        path: key.into(),
        message: e.to_string(),
    })
}

/// GET `path` with `q`, then every `rel=next` page. Octavia's next links keep only `limit`,
/// `sort`, `sort_key` and `marker` (`octavia/api/common/pagination.py: _make_links`): the filters
/// (`tags`, `loadbalancer_id`, `name`, …) and `fields` are dropped, so page 2 on would list every
/// project's object of the kind, another router's pools among them. They are added back.
pub(crate) async fn list_all<T: DeserializeOwned>(
    session: &Session,
    service: Service,
    path: String,
    key: &str,
    q: &ListQuery,
) -> Result<Vec<T>> {
    let endpoint = session.endpoint(service).await?;
    let mut out = Vec::new();
    let mut req = Request::new(service, Method::GET, path).query(q.to_pairs());
    loop {
        let mut body: Value = session.send_json(&req).await?;
        let items: Vec<T> = match body.get_mut(key).map(Value::take) {
            Some(v) => serde_json::from_value(v).map_err(|e| Error::Decode {
                service,
                method: "GET".into(),
                path: req.path.split('?').next().unwrap_or_default().into(),
                message: e.to_string(),
            })?,
            None => Vec::new(),
        };
        let empty = items.is_empty();
        out.extend(items);
        match next_link(&body, key) {
            Some(href) if !empty => {
                let next = relative_next(&href, &endpoint)?;
                let extra = missing_from_next(&next, q.to_pairs());
                req = Request::new(service, Method::GET, next).query(extra);
            }
            _ => return Ok(out),
        }
    }
}

/// The pairs of the first page's query whose key the next link does not carry (Neutron's links
/// keep every parameter, Octavia's only the paging ones).
fn missing_from_next(next: &str, first_page: Vec<(String, String)>) -> Vec<(String, String)> {
    let carried: Vec<&str> = next
        .split_once('?')
        .map(|(_, query)| query.split('&').filter_map(|kv| kv.split('=').next()).collect())
        .unwrap_or_default();
    first_page.into_iter().filter(|(k, _)| !carried.contains(&k.as_str())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::openstack::octavia_requests::NameRef;

    #[test]
    fn a_next_page_keeps_the_first_pages_filters() {
        let q = ListQuery {
            limit: Some(2),
            fields: vec!["id".into(), "name".into()],
            loadbalancer_id: Some("lb-1".into()),
            ..ListQuery::tags(["kuryr-l7-router:c1".to_string()])
        }
        .with("sort", "name:asc");
        // As Octavia 2025.1 spells its next link: paging parameters only.
        let octavia = "/v2/lbaas/pools?limit=2&sort=name:asc&marker=p2";
        let added = missing_from_next(octavia, q.to_pairs());
        let keys: Vec<&str> = added.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["tags", "loadbalancer_id", "fields", "fields"]);
        assert!(added.contains(&("tags".into(), "kuryr-l7-router:c1".into())), "{added:?}");
        // Neutron keeps every parameter in its links: nothing is sent twice.
        let neutron = "/v2.0/ports?tags=kuryr-l7-router%3Ac1&loadbalancer_id=lb-1&fields=id&fields=name&limit=2&sort=name:asc&marker=p2";
        assert_eq!(missing_from_next(neutron, q.to_pairs()), Vec::<(String, String)>::new());
    }

    #[test]
    fn create_bodies_skip_unset_fields() {
        let p = L7PolicyCreate {
            name: Some("p".into()),
            action: "REDIRECT_TO_POOL".into(),
            redirect_pool: Some(NameRef { name: "pool-a".into() }),
            rules: vec![L7RuleCreate {
                rule_type: "HOST_NAME".into(),
                compare_type: "EQUAL_TO".into(),
                value: "a.b".into(),
                ..Default::default()
            }],
            ..Default::default()
        };
        assert_eq!(
            to_value(&p),
            json!({"name": "p", "action": "REDIRECT_TO_POOL", "redirect_pool": {"name": "pool-a"},
                   "rules": [{"type": "HOST_NAME", "compare_type": "EQUAL_TO", "value": "a.b"}]})
        );
        let u = ListenerUpdate { default_pool_id: Some(None), ..Default::default() };
        assert_eq!(to_value(&u), json!({"default_pool_id": null}));
        let m = MemberCreate { address: "10.0.0.1".into(), protocol_port: 80, ..Default::default() };
        assert_eq!(to_value(&m), json!({"address": "10.0.0.1", "protocol_port": 80}));
    }

    #[test]
    fn reads_octavia_objects_leniently() {
        let lb: LoadBalancer = serde_json::from_value(json!({"id": "1", "name": "x", "provisioning_status": "ACTIVE",
            "vip_address": "10.0.0.5", "listeners": [{"id": "l"}], "flavor_id": null, "availability_zone": null}))
        .unwrap();
        assert_eq!(lb.listeners, vec![IdRef { id: "l".into() }]);
        let r: L7Rule = serde_json::from_value(json!({"id": "r", "type": "PATH", "compare_type": "STARTS_WITH", "value": "/a", "key": null, "invert": false})).unwrap();
        assert_eq!(r.rule_type, "PATH");
    }
    /// A 2025.1 (Octavia 16) load balancer body, as the 2025 stack answered it
    /// (see also tests/it/octavia_2025_bodies.rs): `vip_sg_ids`, `vip_vnic_type`, `additional_vips`
    /// and `tenant_id` are unknown to us and must not break parsing.
    #[test]
    fn a_2025_1_load_balancer_body_with_new_fields_parses() {
        let lb: LoadBalancer = serde_json::from_value(json!({
            "id": "164f5a07-9357-4f8c-85d7-c694d2ac70c6", "name": "e2e25-big", "description": "",
            "provisioning_status": "PENDING_CREATE", "operating_status": "OFFLINE", "admin_state_up": true,
            "project_id": "2457e1c4e6984dbe9cdcadf0f5abbc01", "created_at": "2026-11-22T22:39:37",
            "updated_at": "2026-11-22T22:42:19", "vip_address": "10.0.0.84",
            "vip_port_id": "991b5fe5-d09e-48cc-8c7a-a397b80f5095",
            "vip_subnet_id": "1c961f1b-4b65-41b8-8b04-111eaf2ce465",
            "vip_network_id": "42688a33-1d1f-4592-adf0-6b42b65990c8", "vip_sg_ids": [],
            "additional_vips": [{"subnet_id": "s6", "ip_address": "fd00::5"}],
            "listeners": [{"id": "f4f1c6dc-bdb5-47fd-857d-8b5213f3c631"}],
            "pools": [{"id": "4836df47-8c30-4106-8d8f-8324007c3017"}], "provider": "amphora", "flavor_id": null,
            "vip_qos_policy_id": null, "tags": [], "availability_zone": null, "vip_vnic_type": "normal",
            "tenant_id": "2457e1c4e6984dbe9cdcadf0f5abbc01"
        }))
        .expect("unknown 2025.1 fields are ignored");
        assert_eq!(lb.vip_address.as_deref(), Some("10.0.0.84"));
        assert_eq!(lb.provider.as_deref(), Some("amphora"));
        assert_eq!(lb.listeners.len(), 1);
        assert_eq!(lb.provisioning_status, "PENDING_CREATE");
    }
}
