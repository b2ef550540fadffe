//! Keystone v3: authentication, token cache, catalog, and the authenticated request path every
//! other client goes through ([`Session::send`]).

use super::error::{Error, Result, Service, fault_message};
use super::http::{Counters, Observer, RequestRecord, Stats, build_client, bump, is_write, resource_kind};
use crate::secret::Secret;
use k8s_openapi::jiff::Timestamp;
use reqwest::Method;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Which catalog URL to use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Interface {
    #[default]
    Public,
    Internal,
    Admin,
}

impl Interface {
    pub fn as_str(self) -> &'static str {
        match self {
            Interface::Public => "public",
            Interface::Internal => "internal",
            Interface::Admin => "admin",
        }
    }
}

impl std::str::FromStr for Interface {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.trim_end_matches("URL") {
            "public" => Ok(Interface::Public),
            "internal" => Ok(Interface::Internal),
            "admin" => Ok(Interface::Admin),
            other => Err(Error::Config(format!("interface must be public, internal or admin, not {other:?}"))),
        }
    }
}

/// A Keystone domain, by name or id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DomainRef {
    Id(String),
    Name(String),
}

/// A user, by id or by name within a domain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UserRef {
    Id(String),
    Name { name: String, domain: DomainRef },
}

/// The project a password token is scoped to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProjectScope {
    Id(String),
    Name { name: String, domain: DomainRef },
}

/// An application credential, by id or by name of one of the user's credentials.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AppCredentialRef {
    Id(String),
    Name { name: String, user: UserRef },
}

/// How to authenticate. Secrets are [`Secret`]s so `Debug` of the options is safe to log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AuthMethod {
    Password {
        user: UserRef,
        password: Secret,
        project: ProjectScope,
    },
    /// Application credentials carry their own project scope.
    ApplicationCredential {
        credential: AppCredentialRef,
        secret: Secret,
    },
}

/// Everything needed to talk to the cloud.
#[derive(Clone, Debug)]
pub struct AuthOptions {
    /// Keystone v3 URL, e.g. `https://keystone.example.com:5000/v3`.
    pub auth_url: String,
    pub method: AuthMethod,
    /// `None` accepts an endpoint of any region (fine on single-region clouds).
    pub region_name: Option<String>,
    pub interface: Interface,
    /// Extra CA bundle (PEM) trusted in addition to the system roots.
    pub cafile: Option<PathBuf>,
    /// Skip certificate verification (test clouds only).
    pub insecure: bool,
    /// Per HTTP request, connect + answer.
    pub timeout: Duration,
}

impl AuthOptions {
    /// Password auth with user and project in the same domain (by name).
    pub fn password(auth_url: &str, username: &str, password: Secret, project: &str, domain: &str) -> Self {
        Self {
            auth_url: auth_url.into(),
            method: AuthMethod::Password {
                user: UserRef::Name { name: username.into(), domain: DomainRef::Name(domain.into()) },
                password,
                project: ProjectScope::Name { name: project.into(), domain: DomainRef::Name(domain.into()) },
            },
            region_name: None,
            interface: Interface::Public,
            cafile: None,
            insecure: false,
            timeout: Duration::from_secs(30),
        }
    }
}

fn domain_json(d: &DomainRef) -> Value {
    match d {
        DomainRef::Id(id) => json!({ "id": id }),
        DomainRef::Name(name) => json!({ "name": name }),
    }
}

fn user_json(u: &UserRef) -> Value {
    match u {
        UserRef::Id(id) => json!({ "id": id }),
        UserRef::Name { name, domain } => json!({ "name": name, "domain": domain_json(domain) }),
    }
}

/// The body of `POST /v3/auth/tokens`. The only place a password or credential secret is exposed.
fn auth_body(m: &AuthMethod) -> Value {
    match m {
        AuthMethod::Password { user, password, project } => {
            let mut user = user_json(user);
            user["password"] = json!(password.expose());
            let project = match project {
                ProjectScope::Id(id) => json!({ "id": id }),
                ProjectScope::Name { name, domain } => {
                    json!({ "name": name, "domain": domain_json(domain) })
                }
            };
            json!({"auth": {
                "identity": {"methods": ["password"], "password": {"user": user}},
                "scope": {"project": project}}})
        }
        AuthMethod::ApplicationCredential { credential, secret } => {
            let mut cred = match credential {
                AppCredentialRef::Id(id) => json!({ "id": id }),
                AppCredentialRef::Name { name, user } => {
                    json!({ "name": name, "user": user_json(user) })
                }
            };
            cred["secret"] = json!(secret.expose());
            json!({"auth": {"identity": {"methods": ["application_credential"], "application_credential": cred}}})
        }
    }
}

/// One service of the catalog.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
pub struct CatalogService {
    #[serde(rename = "type")]
    pub service_type: String,
    #[serde(default)]
    pub endpoints: Vec<CatalogEndpoint>,
}

#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
pub struct CatalogEndpoint {
    pub interface: String,
    #[serde(default)]
    pub region: Option<String>,
    #[serde(default)]
    pub region_id: Option<String>,
    pub url: String,
}

/// The URL of `service_type` for `interface` in `region` (any region if `None`).
pub(crate) fn select_endpoint(
    catalog: &[CatalogService],
    service_type: &str,
    region: Option<&str>,
    interface: Interface,
) -> Result<String> {
    let region_ok = |e: &CatalogEndpoint| {
        region.is_none_or(|r| e.region_id.as_deref() == Some(r) || e.region.as_deref() == Some(r))
    };
    catalog
        .iter()
        .filter(|s| s.service_type == service_type)
        .flat_map(|s| &s.endpoints)
        .find(|e| e.interface == interface.as_str() && region_ok(e))
        .map(|e| e.url.trim_end_matches('/').to_string())
        .ok_or_else(|| {
            let mut available: Vec<String> = catalog
                .iter()
                .flat_map(|s| {
                    s.endpoints.iter().map(move |e| {
                        format!(
                            "{}/{}/{}",
                            s.service_type,
                            e.interface,
                            e.region_id.as_deref().or(e.region.as_deref()).unwrap_or("-")
                        )
                    })
                })
                .collect();
            available.sort();
            Error::EndpointNotFound {
                service_type: service_type.into(),
                interface: interface.as_str().into(),
                region: region.unwrap_or("(any)").into(),
                available: if available.is_empty() { "nothing".into() } else { available.join(", ") },
            }
        })
}

/// How long before expiry a token is replaced: 10 % of its lifetime, at most 5 minutes. Keeps a
/// margin for clock skew and long reconciles without throwing away short-lived tokens early.
pub(crate) fn refresh_margin(lifetime: Duration) -> Duration {
    (lifetime / 10).min(Duration::from_secs(300))
}

/// Whether a token received `age` ago with `lifetime` must be replaced now. Local monotonic time is
/// used (not the wall clock against `expires_at`), so skew between us and Keystone does not matter.
pub(crate) fn needs_refresh(lifetime: Duration, age: Duration) -> bool {
    age + refresh_margin(lifetime) >= lifetime
}

/// What we keep of a token.
struct Token {
    value: Secret,
    catalog: Vec<CatalogService>,
    info: TokenInfo,
    received: Instant,
    lifetime: Duration,
}

/// Public, non-secret facts about the current token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenInfo {
    pub user_id: String,
    pub project_id: Option<String>,
    pub expires_at: String,
    pub roles: Vec<String>,
    /// How the token was obtained (`password`, `application_credential`, `token`, ...).
    pub methods: Vec<String>,
}

struct Inner {
    opts: AuthOptions,
    http: reqwest::Client,
    token: tokio::sync::Mutex<Option<Arc<Token>>>,
    observer: Option<Observer>,
    counters: Counters,
}

/// An authenticated connection to the cloud; cheap to clone (all clones share the token).
#[derive(Clone)]
pub struct Session {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session").field("opts", &self.inner.opts).finish_non_exhaustive()
    }
}

/// One authenticated request. `path` is relative to the service endpoint (for
/// [`Service::Identity`]: relative to `auth_url`, e.g. `/users/<id>`) and may carry a query.
/// `Debug` leaves the body out: it may be a Barbican secret payload.
#[derive(Clone)]
pub struct Request {
    pub service: Service,
    pub method: Method,
    pub path: String,
    pub query: Vec<(String, String)>,
    pub body: Option<Value>,
    /// Overrides the session's per-request timeout (e.g. a large fully-populated create, which
    /// Octavia's API writes to its database inside the one request).
    pub timeout: Option<Duration>,
}

impl std::fmt::Debug for Request {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Request")
            .field("service", &self.service)
            .field("method", &self.method)
            .field("path", &self.path)
            .field("query", &self.query)
            .field("body", &self.body.as_ref().map(|_| "<omitted>"))
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl Request {
    pub fn new(service: Service, method: Method, path: impl Into<String>) -> Self {
        Self { service, method, path: path.into(), query: Vec::new(), body: None, timeout: None }
    }
    pub fn query(mut self, pairs: Vec<(String, String)>) -> Self {
        self.query.extend(pairs);
        self
    }
    pub fn json(mut self, body: Value) -> Self {
        self.body = Some(body);
        self
    }
}

/// A successful answer.
#[derive(Clone, Debug)]
pub struct Response {
    pub status: u16,
    pub body: Vec<u8>,
}

impl Session {
    /// Builds the HTTP client; does not contact Keystone (the first request does).
    pub fn new(opts: AuthOptions) -> Result<Self> {
        Self::build(opts, None)
    }

    /// Like [`Session::new`], calling `observer` after every HTTP attempt (for metrics).
    pub fn with_observer(opts: AuthOptions, observer: Observer) -> Result<Self> {
        Self::build(opts, Some(observer))
    }

    fn build(opts: AuthOptions, observer: Option<Observer>) -> Result<Self> {
        url::Url::parse(&opts.auth_url).map_err(|e| Error::Config(format!("auth_url {:?}: {e}", opts.auth_url)))?;
        let http = build_client(opts.cafile.as_deref(), opts.insecure, opts.timeout)?;
        Ok(Self {
            inner: Arc::new(Inner { opts, http, token: Default::default(), observer, counters: Counters::default() }),
        })
    }

    pub fn options(&self) -> &AuthOptions {
        &self.inner.opts
    }

    pub fn stats(&self) -> Stats {
        self.inner.counters.snapshot()
    }

    pub(crate) fn counters(&self) -> &Counters {
        &self.inner.counters
    }

    /// Gets a token now (normally done lazily); useful to fail fast at startup.
    pub async fn authenticate(&self) -> Result<TokenInfo> {
        Ok(self.current(true).await?.info.clone())
    }

    /// The current token value (for tools/tests that must call Keystone themselves).
    pub async fn token(&self) -> Result<Secret> {
        Ok(self.current(false).await?.value.clone())
    }

    pub async fn token_info(&self) -> Result<TokenInfo> {
        Ok(self.current(false).await?.info.clone())
    }

    /// The endpoint URL of `service` (no trailing slash).
    pub async fn endpoint(&self, service: Service) -> Result<String> {
        let token = self.current(false).await?;
        self.endpoint_in(&token, service)
    }

    fn endpoint_in(&self, token: &Token, service: Service) -> Result<String> {
        let o = &self.inner.opts;
        match service {
            Service::Identity => Ok(o.auth_url.trim_end_matches('/').to_string()),
            _ => select_endpoint(&token.catalog, service.catalog_type(), o.region_name.as_deref(), o.interface),
        }
    }

    /// The cached token, or a new one if there is none, it is close to expiry, or `force`.
    async fn current(&self, force: bool) -> Result<Arc<Token>> {
        let mut slot = self.inner.token.lock().await;
        if let Some(t) = slot.as_ref().filter(|t| !force && !needs_refresh(t.lifetime, t.received.elapsed())) {
            return Ok(t.clone());
        }
        let t = Arc::new(self.issue().await?);
        *slot = Some(t.clone());
        Ok(t)
    }

    /// Forgets `old` unless another task already replaced it.
    async fn invalidate(&self, old: &Arc<Token>) {
        let mut slot = self.inner.token.lock().await;
        if slot.as_ref().is_some_and(|t| Arc::ptr_eq(t, old)) {
            *slot = None;
        }
    }

    async fn issue(&self) -> Result<Token> {
        #[derive(Deserialize)]
        struct Body {
            token: TokenBody,
        }
        #[derive(Deserialize)]
        struct TokenBody {
            expires_at: String,
            #[serde(default)]
            issued_at: Option<String>,
            #[serde(default)]
            catalog: Vec<CatalogService>,
            user: IdOnly,
            #[serde(default)]
            project: Option<IdOnly>,
            #[serde(default)]
            roles: Vec<Named>,
            #[serde(default)]
            methods: Vec<String>,
        }
        #[derive(Deserialize)]
        struct IdOnly {
            id: String,
        }
        #[derive(Deserialize)]
        struct Named {
            name: String,
        }
        bump(&self.inner.counters.authentications);
        let o = &self.inner.opts;
        let path = "/auth/tokens";
        let url = format!("{}{path}", o.auth_url.trim_end_matches('/'));
        let rb = self.inner.http.post(url).json(&auth_body(&o.method));
        let (status, headers, body) = self.exchange(Service::Identity, &Method::POST, path, rb, None).await?;
        let err = |message: String| Error::Decode {
            service: Service::Identity,
            method: "POST".into(),
            path: path.into(),
            message,
        };
        let value = headers
            .get("x-subject-token")
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| err(format!("HTTP {status} without X-Subject-Token")))?;
        let b: Body = serde_json::from_slice(&body).map_err(|e| err(e.to_string()))?;
        let parse = |s: &str| s.parse::<Timestamp>().map_err(|e| err(format!("bad timestamp {s:?}: {e}")));
        let expires = parse(&b.token.expires_at)?;
        let issued = match &b.token.issued_at {
            Some(s) => parse(s)?,
            None => Timestamp::now(),
        };
        let lifetime = Duration::try_from(expires.duration_since(issued)).unwrap_or_default();
        tracing::debug!(expires_at = %b.token.expires_at, ?lifetime, "keystone token issued");
        Ok(Token {
            value: Secret::new(value),
            catalog: b.token.catalog,
            info: TokenInfo {
                user_id: b.token.user.id,
                project_id: b.token.project.map(|p| p.id),
                expires_at: b.token.expires_at,
                roles: b.token.roles.into_iter().map(|r| r.name).collect(),
                methods: b.token.methods,
            },
            received: Instant::now(),
            lifetime,
        })
    }

    /// Sends one prepared request: observes, logs, and turns statuses >= 400 into [`Error::Api`].
    async fn exchange(
        &self,
        service: Service,
        method: &Method,
        path: &str,
        rb: reqwest::RequestBuilder,
        timeout: Option<Duration>,
    ) -> Result<(u16, reqwest::header::HeaderMap, Vec<u8>)> {
        let path = path.split('?').next().unwrap_or_default();
        let started = Instant::now();
        let sent = rb.header(reqwest::header::ACCEPT, "application/json").send().await;
        let result = match sent {
            Ok(resp) => {
                let status = resp.status().as_u16();
                let headers = resp.headers().clone();
                resp.bytes().await.map(|b| (status, headers, b.to_vec()))
            }
            Err(e) => Err(e),
        };
        let duration = started.elapsed();
        let status = result.as_ref().ok().map(|r| r.0);
        tracing::debug!(%service, %method, path, status, duration_ms = duration.as_millis() as u64, "openstack request");
        // The counters measure load-balancer work (Octavia and Neutron); Barbican calls are observed
        // but not counted.
        if matches!(service, Service::LoadBalancer | Service::Network) {
            bump(&self.inner.counters.requests);
            if is_write(method) {
                bump(&self.inner.counters.writes);
            }
        }
        if let Some(obs) = &self.inner.observer {
            obs(&RequestRecord { service, method: method.clone(), kind: resource_kind(path), status, duration });
        }
        let (status, headers, body) = result.map_err(|source| {
            if source.is_timeout() {
                Error::Timeout {
                    service,
                    method: method.to_string(),
                    path: path.into(),
                    timeout: timeout.unwrap_or(self.inner.opts.timeout),
                }
            } else {
                Error::Transport { service, method: method.to_string(), path: path.into(), source }
            }
        })?;
        if status >= 400 {
            return Err(Error::Api {
                service,
                method: method.to_string(),
                path: path.into(),
                status,
                message: fault_message(&body),
            });
        }
        Ok((status, headers, body))
    }

    /// Sends an authenticated request. On a 401 the token is dropped, a new one is issued and the
    /// request is sent once more (tokens can be revoked or the Keystone cache flushed at any time).
    pub async fn send(&self, req: &Request) -> Result<Response> {
        let mut retried = false;
        loop {
            let token = self.current(false).await?;
            let url = format!("{}{}", self.endpoint_in(&token, req.service)?, req.path);
            let mut rb = self.inner.http.request(req.method.clone(), url).header("X-Auth-Token", token.value.expose());
            if !req.query.is_empty() {
                rb = rb.query(&req.query);
            }
            if let Some(b) = &req.body {
                rb = rb.json(b);
            }
            if let Some(t) = req.timeout {
                rb = rb.timeout(t);
            }
            match self.exchange(req.service, &req.method, &req.path, rb, req.timeout).await {
                Err(Error::Api { status: 401, .. }) if !retried => {
                    retried = true;
                    bump(&self.inner.counters.reauthentications);
                    tracing::info!(service = %req.service, path = req.path.split('?').next().unwrap_or_default(), "token rejected (401), re-authenticating");
                    self.invalidate(&token).await;
                }
                // A pooled keep-alive connection the server closed while idle (gunicorn closes
                // them after 2 s) fails the request before any answer: safe to resend once when
                // the method is idempotent.
                Err(Error::Transport { .. }) if !retried && is_idempotent(&req.method) => {
                    retried = true;
                    tracing::debug!(service = %req.service, method = %req.method, "transport error, resending once");
                }
                Err(e) => return Err(e),
                Ok((status, _, body)) => return Ok(Response { status, body }),
            }
        }
    }

    /// [`Session::send`] and decode the JSON answer.
    pub async fn send_json<T: DeserializeOwned>(&self, req: &Request) -> Result<T> {
        let resp = self.send(req).await?;
        serde_json::from_slice(&resp.body).map_err(|e| Error::Decode {
            service: req.service,
            method: req.method.to_string(),
            path: req.path.split('?').next().unwrap_or_default().into(),
            message: e.to_string(),
        })
    }
}

fn is_idempotent(m: &Method) -> bool {
    matches!(*m, Method::GET | Method::HEAD | Method::PUT | Method::DELETE)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog() -> Vec<CatalogService> {
        serde_json::from_value(json!([
            {"type": "load-balancer", "endpoints": [
                {"interface": "public", "region": "RegionOne", "region_id": "RegionOne", "url": "https://lb.one/"},
                {"interface": "internal", "region": "RegionOne", "region_id": "RegionOne", "url": "http://lb.one.internal"},
                {"interface": "public", "region": "RegionTwo", "region_id": "RegionTwo", "url": "https://lb.two"}]},
            {"type": "network", "endpoints": [
                {"interface": "public", "region_id": "RegionTwo", "url": "https://net.two"}]}
        ]))
        .unwrap()
    }

    #[test]
    fn endpoint_selection() {
        let c = catalog();
        assert_eq!(
            select_endpoint(&c, "load-balancer", Some("RegionOne"), Interface::Public).unwrap(),
            "https://lb.one"
        );
        assert_eq!(
            select_endpoint(&c, "load-balancer", Some("RegionOne"), Interface::Internal).unwrap(),
            "http://lb.one.internal"
        );
        assert_eq!(
            select_endpoint(&c, "load-balancer", Some("RegionTwo"), Interface::Public).unwrap(),
            "https://lb.two"
        );
        assert_eq!(select_endpoint(&c, "network", None, Interface::Public).unwrap(), "https://net.two");
        let e = select_endpoint(&c, "network", Some("RegionOne"), Interface::Public).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("\"network\"") && msg.contains("RegionOne") && msg.contains("public"), "{msg}");
        assert!(msg.contains("network/public/RegionTwo"), "{msg}");
        assert_eq!(e.label(), "endpoint_not_found");
        assert!(select_endpoint(&c, "load-balancer", None, Interface::Admin).is_err());
        assert!(select_endpoint(&[], "network", None, Interface::Public).unwrap_err().to_string().contains("nothing"));
    }

    #[test]
    fn refresh_decision() {
        let h = Duration::from_secs(3600);
        assert_eq!(refresh_margin(h), Duration::from_secs(300));
        assert_eq!(refresh_margin(Duration::from_secs(600)), Duration::from_secs(60));
        assert!(!needs_refresh(h, Duration::from_secs(0)));
        assert!(!needs_refresh(h, Duration::from_secs(3299)));
        assert!(needs_refresh(h, Duration::from_secs(3300)));
        assert!(needs_refresh(Duration::from_secs(600), Duration::from_secs(540)));
        assert!(!needs_refresh(Duration::from_secs(600), Duration::from_secs(530)));
        assert!(needs_refresh(Duration::ZERO, Duration::ZERO));
    }

    #[test]
    fn secrets_masked_in_debug_but_sent() {
        let mut o = AuthOptions::password("http://k/v3", "admin", Secret::new("hunter2"), "admin", "Default");
        let dbg = format!("{o:?}");
        assert!(!dbg.contains("hunter2") && dbg.contains("admin"), "{dbg}");
        assert_eq!(auth_body(&o.method)["auth"]["identity"]["password"]["user"]["password"], "hunter2");
        o.method = AuthMethod::ApplicationCredential {
            credential: AppCredentialRef::Name {
                name: "ac".into(),
                user: UserRef::Name { name: "demo".into(), domain: DomainRef::Id("default".into()) },
            },
            secret: Secret::new("s3cr3t"),
        };
        assert!(!format!("{o:?}").contains("s3cr3t"));
        let b = auth_body(&o.method);
        assert_eq!(b["auth"]["identity"]["application_credential"]["secret"], "s3cr3t");
        assert_eq!(b["auth"]["identity"]["application_credential"]["user"]["domain"]["id"], "default");
        assert!(b["auth"].get("scope").is_none());
        let _ = rustls::crypto::ring::default_provider().install_default();
        let s = Session::new(o).unwrap();
        assert!(!format!("{s:?}").contains("s3cr3t"));
    }

    #[test]
    fn request_debug_omits_the_body() {
        let r = Request::new(Service::Barbican, Method::POST, "/v1/secrets").json(json!({"payload": "c2VjcmV0"}));
        let dbg = format!("{r:?}");
        assert!(dbg.contains("/v1/secrets") && dbg.contains("<omitted>") && !dbg.contains("c2VjcmV0"), "{dbg}");
    }

    #[test]
    fn interface_parse() {
        assert_eq!("internalURL".parse::<Interface>().unwrap(), Interface::Internal);
        assert!("private".parse::<Interface>().is_err());
    }
}
