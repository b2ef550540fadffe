//! Shared HTTP plumbing: the reqwest client (TLS options), request records for metrics, counters,
//! list queries and pagination links.

use super::error::{Error, Result, Service};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// What an observer learns about every HTTP attempt (one per try, retries included).
#[derive(Clone, Debug)]
pub struct RequestRecord {
    pub service: Service,
    pub method: reqwest::Method,
    /// Resource kind from the path, e.g. `loadbalancers`, `members`, `tokens` (low cardinality).
    pub kind: String,
    /// `None` when no answer came (transport error or timeout).
    pub status: Option<u16>,
    pub duration: Duration,
}

/// Called synchronously after every HTTP attempt; keep it cheap (e.g. bump a metric).
pub type Observer = Arc<dyn Fn(&RequestRecord) + Send + Sync>;

/// Counters that tests and benchmarks read to assert how much work was done.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub writes: AtomicU64,
    pub requests: AtomicU64,
    pub conflict_retries: AtomicU64,
    pub reauthentications: AtomicU64,
    pub authentications: AtomicU64,
}

/// A snapshot of [`Counters`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// POST/PUT/PATCH/DELETE sent to Octavia or Neutron (token requests excluded), retries included.
    pub writes: u64,
    /// All HTTP attempts to Octavia or Neutron.
    pub requests: u64,
    /// Writes retried because the load balancer was busy (409 immutable / PENDING_*).
    pub conflict_retries: u64,
    /// Re-authentications forced by a 401.
    pub reauthentications: u64,
    /// Token requests (initial, refresh, after 401).
    pub authentications: u64,
}

impl Counters {
    pub fn snapshot(&self) -> Stats {
        let l = |c: &AtomicU64| c.load(Ordering::Relaxed);
        Stats {
            writes: l(&self.writes),
            requests: l(&self.requests),
            conflict_retries: l(&self.conflict_retries),
            reauthentications: l(&self.reauthentications),
            authentications: l(&self.authentications),
        }
    }
}

pub(crate) fn bump(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

pub(crate) fn is_write(m: &reqwest::Method) -> bool {
    matches!(*m, reqwest::Method::POST | reqwest::Method::PUT | reqwest::Method::PATCH | reqwest::Method::DELETE)
}

/// The resource kind of a path: the last segment that is not an id, so that
/// `/v2/lbaas/pools/<id>/members/<id>` is `members` and metrics stay low-cardinality.
pub(crate) fn resource_kind(path: &str) -> String {
    let path = path.split('?').next().unwrap_or_default();
    path.split('/').rfind(|s| !s.is_empty() && !looks_like_id(s)).unwrap_or("root").to_string()
}

fn looks_like_id(s: &str) -> bool {
    s.len() >= 32 && s.chars().all(|c| c.is_ascii_hexdigit() || c == '-')
}

/// Builds the reqwest client: rustls with the process-wide provider, optional extra CA, optional
/// (logged) certificate verification bypass, one timeout per request.
pub(crate) fn build_client(cafile: Option<&Path>, insecure: bool, timeout: Duration) -> Result<reqwest::Client> {
    let mut b = reqwest::Client::builder().timeout(timeout).connect_timeout(timeout.min(Duration::from_secs(10)));
    if let Some(path) = cafile {
        let pem =
            std::fs::read(path).map_err(|e| Error::Config(format!("cannot read CA file {}: {e}", path.display())))?;
        let certs = reqwest::Certificate::from_pem_bundle(&pem)
            .map_err(|e| Error::Config(format!("CA file {} is not PEM: {e}", path.display())))?;
        for c in certs {
            b = b.add_root_certificate(c);
        }
    }
    if insecure {
        tracing::warn!("TLS certificate verification of OpenStack endpoints is disabled (insecure)");
        b = b.danger_accept_invalid_certs(true);
    }
    b.build().map_err(|e| Error::Config(format!("cannot build the HTTP client: {e}")))
}

/// Filters of a list call. Octavia ANDs `tags` and ORs `tags-any` (both comma-joined; it also
/// accepts the parameter repeated), `fields` is repeated.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListQuery {
    pub name: Option<String>,
    /// All of these tags.
    pub tags: Vec<String>,
    /// At least one of these tags.
    pub tags_any: Vec<String>,
    /// None of these tags.
    pub not_tags: Vec<String>,
    pub loadbalancer_id: Option<String>,
    pub listener_id: Option<String>,
    /// Only these attributes (plus whatever the service always returns).
    pub fields: Vec<String>,
    /// Page size; all pages are followed anyway.
    pub limit: Option<u32>,
    /// Anything else, sent as is (e.g. `("device_owner", "Octavia")`).
    pub extra: Vec<(String, String)>,
}

impl ListQuery {
    pub fn name(name: impl Into<String>) -> Self {
        Self { name: Some(name.into()), ..Self::default() }
    }
    pub fn tags<S: Into<String>>(tags: impl IntoIterator<Item = S>) -> Self {
        Self { tags: tags.into_iter().map(Into::into).collect(), ..Self::default() }
    }
    pub fn with(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.extra.push((key.into(), value.into()));
        self
    }

    pub(crate) fn to_pairs(&self) -> Vec<(String, String)> {
        let mut q = Vec::new();
        let mut push = |k: &str, v: String| q.push((k.to_string(), v));
        if let Some(n) = &self.name {
            push("name", n.clone());
        }
        if !self.tags.is_empty() {
            push("tags", self.tags.join(","));
        }
        if !self.tags_any.is_empty() {
            push("tags-any", self.tags_any.join(","));
        }
        if !self.not_tags.is_empty() {
            push("not-tags", self.not_tags.join(","));
        }
        if let Some(v) = &self.loadbalancer_id {
            push("loadbalancer_id", v.clone());
        }
        if let Some(v) = &self.listener_id {
            push("listener_id", v.clone());
        }
        for f in &self.fields {
            push("fields", f.clone());
        }
        if let Some(l) = self.limit {
            push("limit", l.to_string());
        }
        for (k, v) in &self.extra {
            push(k, v.clone());
        }
        q
    }
}

/// The `rel=next` href of a `<collection>_links` array, if any.
pub(crate) fn next_link(body: &serde_json::Value, collection: &str) -> Option<String> {
    body.get(format!("{collection}_links"))?
        .as_array()?
        .iter()
        .find(|l| l.get("rel").and_then(|r| r.as_str()) == Some("next"))?
        .get("href")?
        .as_str()
        .map(str::to_owned)
}

/// Turns a next-link href into a path+query relative to our endpoint. Only the path and query of
/// the href are trusted: the token is never sent to a host the catalog did not name (services
/// behind a proxy often render links with their internal host). A path prefix the endpoint has
/// (e.g. `https://cloud/load-balancer`) is removed so it is not doubled.
pub(crate) fn relative_next(href: &str, endpoint: &str) -> Result<String> {
    let url = url::Url::parse(href)
        .or_else(|_| url::Url::parse(endpoint)?.join(href))
        .map_err(|e| Error::Config(format!("bad pagination link {href:?}: {e}")))?;
    let prefix = url::Url::parse(endpoint).map(|u| u.path().trim_end_matches('/').to_string()).unwrap_or_default();
    let path = url.path();
    let path = path.strip_prefix(prefix.as_str()).filter(|p| p.starts_with('/')).unwrap_or(path);
    Ok(match url.query() {
        Some(q) => format!("{path}?{q}"),
        None => path.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn kinds() {
        assert_eq!(resource_kind("/v2/lbaas/pools/0b7a3c52-7c57-4a2e-9f0e-3d6f0e6c1b11/members"), "members");
        assert_eq!(
            resource_kind("/v2/lbaas/loadbalancers/0b7a3c527c574a2e9f0e3d6f0e6c1b11?cascade=true"),
            "loadbalancers"
        );
        assert_eq!(resource_kind("/v3/auth/tokens"), "tokens");
        assert_eq!(resource_kind("/"), "root");
    }

    #[test]
    fn query_pairs() {
        let q = ListQuery {
            tags: vec!["a".into(), "b".into()],
            tags_any: vec!["c".into(), "d".into()],
            fields: vec!["id".into(), "name".into()],
            limit: Some(2),
            ..ListQuery::name("x")
        }
        .with("device_owner", "Octavia");
        let got = q.to_pairs();
        let want: Vec<(String, String)> = [
            ("name", "x"),
            ("tags", "a,b"),
            ("tags-any", "c,d"),
            ("fields", "id"),
            ("fields", "name"),
            ("limit", "2"),
            ("device_owner", "Octavia"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(got, want);
        assert!(ListQuery::default().to_pairs().is_empty());
    }

    #[test]
    fn pagination_links() {
        let body = json!({"pools": [], "pools_links": [
            {"rel": "previous", "href": "http://127.0.0.1:9876/v2/lbaas/pools?limit=2&marker=a&page_reverse=True"},
            {"rel": "next", "href": "http://10.1.2.3:9876/v2/lbaas/pools?limit=2&marker=b"}]});
        let href = next_link(&body, "pools").unwrap();
        assert_eq!(relative_next(&href, "http://127.0.0.1:9876").unwrap(), "/v2/lbaas/pools?limit=2&marker=b");
        assert_eq!(
            relative_next("https://cloud/load-balancer/v2/lbaas/pools?marker=b", "https://cloud/load-balancer/")
                .unwrap(),
            "/v2/lbaas/pools?marker=b"
        );
        assert_eq!(next_link(&json!({"pools": [], "pools_links": []}), "pools"), None);
        assert_eq!(next_link(&json!({"pools": []}), "pools"), None);
    }
}
