//! Barbican v1 (key manager): the secrets that hold our TLS certificates for Octavia.
//!
//! A certificate is stored as one opaque secret whose payload is a PKCS#12 bundle (see
//! [`crate::certificate::ParsedCertificate::pkcs12`]); its `secret_ref` becomes a listener's
//! `default_tls_container_ref` / `sni_container_refs`.
//!
//! Barbican secrets have no tags: ours are found by a name prefix (the list's `name` filter is a
//! SQL `LIKE`, so `<prefix>%` narrows it on the server, and the exact prefix is checked here) and
//! carry our cluster/owner in their metadata.
//!
//! Secrecy: payloads travel only in the body of the create request. Nothing here logs a request
//! body, [`crate::openstack::RequestRecord`] has no body, and an error message that would quote
//! the payload back is scrubbed. Payloads are never read back.

use super::error::{Error, Result, Service};
use super::keystone::{Request, Session};
use base64::Engine;
use reqwest::Method;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// Page size of secret lists (Barbican's default maximum).
const PAGE: usize = 100;
/// Stop following pages after this many (a server that never ends its list).
const MAX_PAGES: usize = 1000;

/// A secret's metadata as Barbican lists it (never its payload).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct SecretInfo {
    /// Full URL, e.g. `https://barbican.example.com/v1/secrets/<uuid>`: what Octavia takes.
    pub secret_ref: String,
    /// `None` for unnamed secrets.
    pub name: Option<String>,
    /// `ACTIVE` once stored.
    pub status: String,
    pub secret_type: String,
    pub created: Option<String>,
    pub updated: Option<String>,
    pub expiration: Option<String>,
    pub creator_id: Option<String>,
    /// e.g. `{"default": "application/octet-stream"}`.
    pub content_types: BTreeMap<String, String>,
}

impl SecretInfo {
    /// The secret's UUID (last segment of `secret_ref`).
    pub fn id(&self) -> &str {
        secret_id(&self.secret_ref).unwrap_or_default()
    }
}

/// The `read` ACL of a secret.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct ReadAcl {
    /// Whether every user of the owning project with a suitable role may read it (Barbican's
    /// default, `true`, when no ACL was ever set).
    #[serde(rename = "project-access", default = "yes")]
    pub project_access: bool,
    /// Users allowed to read it whatever their project (e.g. Octavia's service user).
    #[serde(default)]
    pub users: Vec<String>,
}

fn yes() -> bool {
    true
}

impl Default for ReadAcl {
    fn default() -> Self {
        Self { project_access: true, users: Vec::new() }
    }
}

/// The Barbican client; cheap to clone.
#[derive(Clone, Debug)]
pub struct Barbican {
    session: Session,
}

impl Barbican {
    pub fn new(session: Session) -> Self {
        Self { session }
    }

    pub fn session(&self) -> &Session {
        &self.session
    }

    /// Stores `payload` as an opaque secret named `name`; returns its `secret_ref`.
    ///
    /// Sent as `payload_content_type: application/octet-stream`, base64-encoded: the form Octavia
    /// reads a PKCS#12 bundle from.
    pub async fn create_secret(&self, name: &str, payload: &[u8]) -> Result<String> {
        #[derive(Deserialize)]
        struct Created {
            secret_ref: String,
        }
        let encoded = base64::engine::general_purpose::STANDARD.encode(payload);
        let body = json!({
            "name": name,
            "secret_type": "opaque",
            "payload": encoded,
            "payload_content_type": "application/octet-stream",
            "payload_content_encoding": "base64",
        });
        let path = format!("{}/secrets", self.prefix().await?);
        let req = Request::new(Service::Barbican, Method::POST, path).json(body);
        let created: Created = self.session.send_json(&req).await.map_err(|e| name_creator_role(scrub(e, &encoded)))?;
        Ok(created.secret_ref)
    }

    /// A secret's metadata (not its payload).
    pub async fn get_secret(&self, secret_ref: &str) -> Result<SecretInfo> {
        self.get(self.secret_path(secret_ref, "").await?).await
    }

    /// Every secret of the project whose name starts with `name_prefix` (all pages).
    pub async fn list_secrets(&self, name_prefix: &str) -> Result<Vec<SecretInfo>> {
        #[derive(Deserialize)]
        struct Page {
            #[serde(default)]
            secrets: Vec<SecretInfo>,
            #[serde(default)]
            total: Option<usize>,
        }
        let path = format!("{}/secrets", self.prefix().await?);
        let mut out = Vec::new();
        let mut offset = 0;
        for _ in 0..MAX_PAGES {
            let query = vec![
                ("name".to_string(), format!("{name_prefix}%")),
                ("limit".to_string(), PAGE.to_string()),
                ("offset".to_string(), offset.to_string()),
            ];
            let req = Request::new(Service::Barbican, Method::GET, path.clone()).query(query);
            let page: Page = again_on_5xx(|| self.session.send_json(&req)).await?;
            let n = page.secrets.len();
            offset += n;
            // `LIKE` also lets `_` match any character and may ignore case: keep exact prefixes.
            out.extend(
                page.secrets.into_iter().filter(|s| s.name.as_deref().is_some_and(|n| n.starts_with(name_prefix))),
            );
            if n == 0 || page.total.is_some_and(|t| offset >= t) {
                break;
            }
        }
        Ok(out)
    }

    /// Deletes a secret; one that is already gone (404) counts as deleted.
    pub async fn delete_secret(&self, secret_ref: &str) -> Result<()> {
        let req = Request::new(Service::Barbican, Method::DELETE, self.secret_path(secret_ref, "").await?);
        match again_on_5xx(|| self.session.send(&req)).await {
            Err(e) if !e.is_not_found() => Err(e),
            _ => Ok(()),
        }
    }

    /// The secret's `read` ACL.
    pub async fn get_acl(&self, secret_ref: &str) -> Result<ReadAcl> {
        let mut v: Value = self.get(self.secret_path(secret_ref, "/acl").await?).await?;
        match v.get_mut("read").map(Value::take) {
            Some(read) => decode(read, "GET", secret_ref, "/acl"),
            None => Ok(ReadAcl::default()),
        }
    }

    /// Replaces the `read` ACL: `users` may read the secret, and, with `project_access`, the
    /// owning project's users too. Needs the `creator` role (and to own the secret) or admin.
    pub async fn set_read_acl(&self, secret_ref: &str, users: &[String], project_access: bool) -> Result<()> {
        let body = json!({"read": {"users": users, "project-access": project_access}});
        let req = Request::new(Service::Barbican, Method::PUT, self.secret_path(secret_ref, "/acl").await?).json(body);
        again_on_5xx(|| self.session.send(&req)).await.map(drop)
    }

    /// The secret's user metadata (keys are lower case: Barbican lowers them).
    pub async fn get_metadata(&self, secret_ref: &str) -> Result<BTreeMap<String, String>> {
        let mut v: Value = self.get(self.secret_path(secret_ref, "/metadata").await?).await?;
        match v.get_mut("metadata").map(Value::take) {
            Some(Value::Null) | None => Ok(BTreeMap::new()),
            Some(m) => decode(m, "GET", secret_ref, "/metadata"),
        }
    }

    /// Replaces all user metadata of the secret (e.g. our cluster and the owning Secret). Keys are
    /// sent in lower case, as Barbican stores them, so [`Barbican::get_metadata`] returns them as
    /// given here.
    pub async fn set_metadata(&self, secret_ref: &str, metadata: &BTreeMap<String, String>) -> Result<()> {
        let metadata: BTreeMap<String, &String> = metadata.iter().map(|(k, v)| (k.to_lowercase(), v)).collect();
        let req = Request::new(Service::Barbican, Method::PUT, self.secret_path(secret_ref, "/metadata").await?)
            .json(json!({ "metadata": metadata }));
        again_on_5xx(|| self.session.send(&req)).await.map(drop)
    }

    async fn get<T: DeserializeOwned>(&self, path: String) -> Result<T> {
        let req = Request::new(Service::Barbican, Method::GET, path);
        again_on_5xx(|| self.session.send_json(&req)).await
    }

    /// `/v1`, unless the catalog URL already ends with it.
    async fn prefix(&self) -> Result<&'static str> {
        let endpoint = self.session.endpoint(Service::Barbican).await?;
        Ok(if endpoint.trim_end_matches('/').ends_with("/v1") { "" } else { "/v1" })
    }

    /// `/v1/secrets/<uuid><suffix>` for a secret ref or a bare UUID. Only the UUID of a ref is
    /// used: requests go to the catalog's endpoint, never to the host a ref names.
    async fn secret_path(&self, secret_ref: &str, suffix: &str) -> Result<String> {
        let id = secret_id(secret_ref)
            .ok_or_else(|| Error::Config(format!("{secret_ref:?} is not a Barbican secret reference")))?;
        Ok(format!("{}/secrets/{id}{suffix}", self.prefix().await?))
    }
}

/// The UUID at the end of a secret ref (`.../v1/secrets/<uuid>`), or the UUID itself.
pub(crate) fn secret_id(secret_ref: &str) -> Option<&str> {
    let id = secret_ref.trim_end_matches('/').rsplit('/').next()?;
    let ok = id.len() == 36 && id.chars().all(|c| c.is_ascii_hexdigit() || c == '-');
    ok.then_some(id)
}

fn decode<T: DeserializeOwned>(v: Value, method: &str, secret_ref: &str, suffix: &str) -> Result<T> {
    serde_json::from_value(v).map_err(|e| Error::Decode {
        service: Service::Barbican,
        method: method.into(),
        path: format!("/v1/secrets/{}{suffix}", secret_id(secret_ref).unwrap_or_default()),
        message: e.to_string(),
    })
}

/// Removes from an error message any run of base64 text that is part of `encoded` (the payload):
/// a service that quotes a bad request back must not put a key into our logs and Events.
fn scrub(e: Error, encoded: &str) -> Error {
    match e {
        Error::Api { service, method, path, status, message } => {
            Error::Api { service, method, path, status, message: scrub_text(&message, encoded) }
        }
        other => other,
    }
}

fn scrub_text(message: &str, encoded: &str) -> String {
    const MIN: usize = 12;
    let is_b64 = |c: char| c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '=');
    let mut out = String::with_capacity(message.len());
    let mut run = String::new();
    let flush = |run: &mut String, out: &mut String| {
        if run.len() >= MIN && encoded.contains(run.as_str()) {
            out.push_str("<payload>");
        } else {
            out.push_str(run);
        }
        run.clear();
    };
    for c in message.chars() {
        if is_b64(c) {
            run.push(c);
        } else {
            flush(&mut run, &mut out);
            out.push(c);
        }
    }
    flush(&mut run, &mut out);
    out
}

/// A 403 on storing a certificate is almost always Barbican's `creator` role missing: say so.
fn name_creator_role(e: Error) -> Error {
    match e {
        Error::Api { service, method, path, status: 403, message } => Error::Api {
            service,
            method,
            path,
            status: 403,
            message: format!("{message} ({})", super::preflight::missing_creator_message()),
        },
        other => other,
    }
}

/// Sends a request that is safe to send again (GET, PUT, DELETE; never the POST that stores a
/// secret, which would store a second one), again up to 3 times on a 5xx. Barbican answers 500
/// "Secret metadata creation failure seen" when its database deadlocks under concurrent writes
/// (`DBDeadlock ... try restarting transaction` in its log: seen on the local stack with several
/// routers storing certificates at once); the next attempt succeeds.
async fn again_on_5xx<T, F, Fut>(op: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T>>,
{
    use backon::{ExponentialBuilder, Retryable};
    let backoff = ExponentialBuilder::default()
        .with_min_delay(std::time::Duration::from_millis(200))
        .with_max_delay(std::time::Duration::from_secs(2))
        .with_max_times(3);
    op.retry(backoff)
        .sleep(tokio::time::sleep)
        .when(|e: &Error| e.status().is_some_and(|s| (500..600).contains(&s)))
        .notify(|e, delay| tracing::debug!(error = %e, ?delay, "Barbican server error, sending again"))
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_ids() {
        let id = "2a549393-0710-444b-8aa5-84cf0f85ea79";
        assert_eq!(secret_id(&format!("http://127.0.0.1:9311/v1/secrets/{id}")), Some(id));
        assert_eq!(secret_id(&format!("https://cloud/key-manager/v1/secrets/{id}/")), Some(id));
        assert_eq!(secret_id(id), Some(id));
        assert_eq!(secret_id("http://127.0.0.1:9311/v1/secrets/"), None);
        assert_eq!(secret_id("../../v3/users"), None);
    }

    #[test]
    fn scrubs_quoted_payload() {
        let encoded = "MIIKYQIBAzCCChcGCSqGSIb3DQEHAaCCCggEggoEMIIKADCCBLcGCSqGSIb3";
        let msg = format!("Invalid payload '{}' for content type", &encoded[4..40]);
        assert_eq!(scrub_text(&msg, encoded), "Invalid payload '<payload>' for content type");
        let unrelated = "Secret creation attempt not allowed - please review privileges 2a549393";
        assert_eq!(scrub_text(unrelated, encoded), unrelated);
    }
}
