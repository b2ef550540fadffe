//! A real control plane for one test (`functional/kube/`, built by `functional/kube.sh build`):
//! kube-apiserver and etcd on this process's loopback (inside the 2025.1 stack's network namespace
//! when the test runs there), RBAC on, the Gateway API v1.6.1 CRDs and the shipped RBAC of
//! `etc/manifests` applied, and a token of the `kuryr-l7-router` ServiceAccount (TokenRequest).
//! Killed, and its directory removed, on drop.

use kube::config::{KubeConfigOptions, Kubeconfig};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The user of the token the launcher minted (etc/manifests/serviceaccount.yaml).
pub const CONTROLLER_USER: &str = "system:serviceaccount:kuryr-l7-router:kuryr-l7-router";

/// The shipped manifests applied (the RBAC and the IngressClass of etc/manifests, in order).
pub const SHIPPED: &str = "namespace.yaml,serviceaccount.yaml,clusterrole.yaml,clusterrolebinding.yaml,\
                           secrets-clusterrole.yaml,role.yaml,rolebinding.yaml,ingressclass.yaml";

/// [`SHIPPED`] without the cluster-wide read of Secrets, as etc/overlays/secret-namespaces
/// deploys it (its Roles per namespace are the test's to apply: their namespaces come first).
pub const WITHOUT_CLUSTER_SECRETS: &str = "namespace.yaml,serviceaccount.yaml,clusterrole.yaml,\
                                           clusterrolebinding.yaml,role.yaml,rolebinding.yaml,ingressclass.yaml";

pub struct Cluster {
    child: Child,
    pub dir: PathBuf,
    /// `https://127.0.0.1:<port>`
    pub server: String,
}

/// Where `functional/kube.sh build` put the binary and the CRDs' path.
fn built() -> (PathBuf, String) {
    let home = std::env::var("KURYR_KUBE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(std::env::var("HOME").expect("HOME")).join(".cache/kuryr-kube"));
    let bin = home.join("bin/kube-testcluster");
    let crds = std::fs::read_to_string(home.join("crds.path")).unwrap_or_default();
    assert!(
        bin.exists() && !crds.trim().is_empty(),
        "{} not built: run functional/kube.sh build (outside the stack's network namespace: it needs the Go module proxy)",
        bin.display()
    );
    (bin, crds.trim().to_string())
}

impl Cluster {
    pub fn start(tag: &str) -> Cluster {
        Cluster::start_with(tag, SHIPPED)
    }

    /// [`Cluster::start`] with the manifests `apply` (file names of etc/manifests, in order).
    pub fn start_with(tag: &str, apply: &str) -> Cluster {
        let dir = std::env::temp_dir().join(super::common::unique("kuryr-kube", tag));
        let child = spawn(&dir, Some(apply));
        let mut cluster = Cluster { child, dir, server: String::new() };
        cluster.wait_ready();
        cluster
    }

    /// Kills the API server and etcd (SIGKILL: every watch is cut) and starts them again on the
    /// same data, keys and ports.
    pub fn restart(&mut self) {
        self.restart_after(Duration::ZERO);
    }

    /// [`Self::restart`], down for `pause` more before it starts again.
    pub fn restart_after(&mut self, pause: Duration) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        std::thread::sleep(pause);
        let _ = std::fs::remove_file(self.dir.join("ready"));
        self.child = spawn(&self.dir, None);
        self.wait_ready();
    }

    /// Compacts etcd at its current revision: older resourceVersions are gone for good.
    pub fn compact(&self) -> u64 {
        let (bin, _) = built();
        let out = Command::new(bin).arg("compact").arg("-dir").arg(&self.dir).output().unwrap();
        assert!(out.status.success(), "compact: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
    }

    fn log(&self) -> PathBuf {
        PathBuf::from(format!("{}.log", self.dir.display()))
    }

    fn wait_ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(180);
        loop {
            if let Ok(s) = std::fs::read_to_string(self.dir.join("ready")) {
                self.server = s.trim().to_string();
                return;
            }
            let exited = self.child.try_wait().unwrap();
            if exited.is_some() || Instant::now() > deadline {
                let text = std::fs::read_to_string(self.log()).unwrap_or_default();
                let tail: Vec<&str> = text.lines().rev().take(30).collect();
                panic!(
                    "the control plane did not become ready ({exited:?}; log {}):\n{}",
                    self.log().display(),
                    tail.into_iter().rev().collect::<Vec<_>>().join("\n")
                );
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// An admin client (client certificate in system:masters): what a cluster operator sees.
    pub async fn admin(&self) -> kube::Client {
        let kc = Kubeconfig::read_from(self.dir.join("admin.kubeconfig")).unwrap();
        let config = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default()).await.unwrap();
        kube::Client::try_from(config).unwrap()
    }

    /// The controller's in-cluster-style files: the ServiceAccount token and the cluster's CA.
    pub fn token_file(&self) -> PathBuf {
        self.dir.join("serviceaccount/token")
    }

    pub fn ca_file(&self) -> PathBuf {
        self.dir.join("serviceaccount/ca.crt")
    }

    /// The requests of the controller's ServiceAccount that the API server refused, from its
    /// audit log: 403 (RBAC) and 422 (a schema, CEL rule or admission), as
    /// `code VERB URI`.
    pub fn refused(&self) -> Vec<String> {
        self.refused_between(0, usize::MAX)
    }

    /// [`Self::refused`] among the audit log's lines `from..to`.
    pub fn refused_between(&self, from: usize, to: usize) -> Vec<String> {
        let text = std::fs::read_to_string(self.dir.join("audit.log")).unwrap_or_default();
        text.lines()
            .take(to)
            .skip(from)
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|e| e["user"]["username"] == CONTROLLER_USER)
            .filter(|e| matches!(e["responseStatus"]["code"].as_i64(), Some(403 | 422)))
            .map(|e| format!("{} {} {}", e["responseStatus"]["code"], e["verb"], e["requestURI"]))
            .collect()
    }

    /// Lines in the audit log so far (for [`Self::controller_requests_since`]).
    pub fn audit_len(&self) -> usize {
        std::fs::read_to_string(self.dir.join("audit.log")).unwrap_or_default().lines().count()
    }

    /// The controller's requests after the first `skip` lines of the audit log, as
    /// (code, verb, URI).
    pub fn controller_requests_since(&self, skip: usize) -> Vec<(i64, String, String)> {
        let text = std::fs::read_to_string(self.dir.join("audit.log")).unwrap_or_default();
        text.lines()
            .skip(skip)
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|e| e["user"]["username"] == CONTROLLER_USER)
            .map(|e| {
                let s = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_string();
                (e["responseStatus"]["code"].as_i64().unwrap_or(0), s(&e["verb"]), s(&e["requestURI"]))
            })
            .collect()
    }

    /// A fresh token of the controller's ServiceAccount (TokenRequest, one hour), written to
    /// `serviceaccount/<file>` beside the first one: a second replica's own credential.
    pub fn mint_token(&self, file: &str) -> PathBuf {
        let (bin, _) = built();
        let out = Command::new(bin).arg("token").arg("-dir").arg(&self.dir).output().unwrap();
        assert!(out.status.success(), "token: {}", String::from_utf8_lossy(&out.stderr));
        let path = self.dir.join("serviceaccount").join(file);
        std::fs::write(&path, String::from_utf8_lossy(&out.stdout).trim()).unwrap();
        path
    }

    /// The controller's requests in the audit log, each with the credential (token) it came with.
    pub fn controller_audit(&self) -> Vec<Audited> {
        let text = std::fs::read_to_string(self.dir.join("audit.log")).unwrap_or_default();
        text.lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|e| e["user"]["username"] == CONTROLLER_USER)
            .map(|e| {
                let s = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_string();
                Audited {
                    at: s(&e["requestReceivedTimestamp"]).parse().expect("requestReceivedTimestamp"),
                    code: e["responseStatus"]["code"].as_i64().unwrap_or(0),
                    verb: s(&e["verb"]),
                    uri: s(&e["requestURI"]),
                    credential: s(&e["user"]["extra"]["authentication.kubernetes.io/credential-id"][0]),
                }
            })
            .collect()
    }

    /// How many requests of the controller the API server answered (its audit log).
    pub fn controller_requests(&self) -> usize {
        let text = std::fs::read_to_string(self.dir.join("audit.log")).unwrap_or_default();
        text.lines().filter(|l| l.contains(CONTROLLER_USER)).count()
    }
}

/// `kube-testcluster serve` on `dir`, fresh with the manifests `apply`, or `-reuse` of its data
/// (`None`), its output appended to `<dir>.log`.
fn spawn(dir: &Path, apply: Option<&str>) -> Child {
    let (bin, crds) = built();
    let log = PathBuf::from(format!("{}.log", dir.display()));
    let out = std::fs::OpenOptions::new().create(true).append(true).open(&log).unwrap();
    let manifests = Path::new(env!("CARGO_MANIFEST_DIR")).join("etc/manifests");
    let mut c = Command::new(&bin);
    c.arg("serve").arg("-dir").arg(dir).arg("-manifests").arg(&manifests).arg("-crds").arg(&crds);
    c.arg("-exit-with-parent");
    match apply {
        Some(files) => c.arg("-apply").arg(files.split_whitespace().collect::<String>()),
        None => c.arg("-reuse"),
    };
    c.stdout(out.try_clone().unwrap()).stderr(out).stdin(Stdio::null()).spawn().expect("start kube-testcluster")
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // KURYR_KUBE_KEEP=1 keeps it (its audit.log, etcd data) to look at after a test
        if std::env::var("KURYR_KUBE_KEEP").as_deref() != Ok("1") {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// One request of the controller's ServiceAccount, from the audit log.
#[derive(Debug, Clone)]
pub struct Audited {
    /// When the API server received it.
    pub at: k8s_openapi::jiff::Timestamp,
    pub code: i64,
    pub verb: String,
    pub uri: String,
    /// `JTI=<the token's jti>` ([`credential_id`]).
    pub credential: String,
}

impl Audited {
    /// A request that changes something (whether or not it was allowed).
    pub fn is_write(&self) -> bool {
        matches!(self.verb.as_str(), "create" | "update" | "patch" | "delete" | "deletecollection")
    }
}

/// The audit log's credential id of the ServiceAccount token in `token_file`:
/// `JTI=<its jti claim>` (`user.extra["authentication.kubernetes.io/credential-id"]`).
pub fn credential_id(token_file: &Path) -> String {
    use base64::Engine;
    let token = std::fs::read_to_string(token_file).unwrap();
    let payload = token.trim().split('.').nth(1).expect("a JWT");
    let claims = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload.trim_end_matches('=')).unwrap();
    let claims: serde_json::Value = serde_json::from_slice(&claims).unwrap();
    format!("JTI={}", claims["jti"].as_str().expect("a jti claim"))
}
