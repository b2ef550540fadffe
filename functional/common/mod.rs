//! What every functional test needs: the gate, unique names, a router on the local stack
//! (functional/openstack.sh) and its clean-up. Included with `#[path = "common/mod.rs"] mod common;`.
#![allow(dead_code)] // each test crate uses a different part

use kuryr_l7_router::driver::floating_ip_description;
use kuryr_l7_router::driver::ownership::Ownership;
use kuryr_l7_router::driver::router::Router;
use kuryr_l7_router::driver::spec::RouterSpec;
use kuryr_l7_router::openstack::keystone::Request;
use kuryr_l7_router::openstack::*;
use kuryr_l7_router::secret::Secret;
use reqwest::Method;
use serde_json::{Value, json};
use std::time::Duration;

pub const AUTH_URL: &str = "http://127.0.0.1:5000/v3";

/// Functional tests run only with `KURYR_FUNCTIONAL=1` (functional/test.sh sets it after starting
/// the stack); otherwise they return at once and libtest counts them as passed. So that a skip
/// is never mistaken for a pass, each one writes [`SKIP_MARKER`] and its name to the process's
/// stderr directly (libtest captures `println!`, not the file descriptor): functional/test.sh
/// counts these lines and reports them as skipped, and fails when a functional phase ran none.
pub fn enabled() -> bool {
    if std::env::var("KURYR_FUNCTIONAL").as_deref() == Ok("1") {
        let _ = rustls::crypto::ring::default_provider().install_default();
        true
    } else {
        skipped("set KURYR_FUNCTIONAL=1 and run functional/openstack.sh start");
        false
    }
}

/// What a skipped functional test writes, then its name and why (see [`enabled`]).
pub const SKIP_MARKER: &str = "FUNCTIONAL TEST SKIPPED:";

/// Says, past libtest's capture, that the current test is skipped and why.
pub fn skipped(why: &str) {
    use std::io::Write;
    let thread = std::thread::current();
    let name = thread.name().unwrap_or("unnamed test");
    let _ = writeln!(std::io::stderr().lock(), "{SKIP_MARKER} {name} ({why})");
}

/// `<prefix>-<tag>-<nanos><pid>`: names and cluster tags that no other test run shares.
pub fn unique(prefix: &str, tag: &str) -> String {
    let n = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    format!("{prefix}-{tag}-{:x}{:04x}", n, std::process::id() & 0xffff)
}

pub fn session(user: &str, password: &str) -> Session {
    let mut auth = AuthOptions::password(AUTH_URL, user, Secret::new(password), "admin", "Default");
    auth.region_name = Some("RegionOne".into());
    Session::new(auth).unwrap()
}

pub async fn subnet_id(n: &Neutron, name: &str) -> String {
    n.list_subnets(&ListQuery::name(name)).await.unwrap().first().expect("subnet").id.clone()
}

/// A router of its own (unique name and cluster tag) on `private-subnet`, with floating IPs from
/// `public-subnet`. Debian's Octavia 11.0.0 leaves the children of a fully-populated create
/// PENDING_CREATE, so it is off unless `KURYR_FULLY_POPULATED=1`.
pub async fn local_router(prefix: &str, tag: &str) -> Router {
    local_router_as(prefix, tag, session("admin", "admin")).await
}

/// [`local_router`] with the credentials of `s` (its project owns the router).
pub async fn local_router_as(prefix: &str, tag: &str, s: Session) -> Router {
    let octavia = Octavia::new(s.clone(), OctaviaOptions::default());
    let neutron = Neutron::new(s);
    let name = unique(prefix, tag);
    let spec = RouterSpec {
        name: name.clone(),
        uuid: None,
        vip_subnet_id: Some(subnet_id(&neutron, "private-subnet").await),
        availability_zone: None,
        provider: Some("amphora".into()),
        listener_port: 80,
        fully_populated_create: std::env::var("KURYR_FULLY_POPULATED").as_deref() == Ok("1"),
        max_create_body_bytes: 114_688,
        floating_ip: None,
        external_svc_subnet: Some(subnet_id(&neutron, "public-subnet").await),
        ownership: Ownership::new(&name),
        member_subnet: None,
        health_monitor: None,
        create_timeout: Duration::from_secs(300),
        write_timeout: Duration::from_secs(180),
        insert_forwarded_headers: true,
        secret_read_users: vec![],
    };
    Router::new(octavia, neutron, spec)
}

/// The router's children as Octavia holds them (the router must exist; its first listener).
pub async fn read_router(r: &Router) -> kuryr_l7_router::driver::actual::ActualRouter {
    try_read_router(r).await.unwrap()
}

/// [`read_router`], its read's error returned (the router and its listener must exist).
pub async fn try_read_router(
    r: &Router,
) -> Result<kuryr_l7_router::driver::actual::ActualRouter, kuryr_l7_router::driver::error::DriverError> {
    let lb = r.find().await.unwrap().expect("router exists");
    let q = ListQuery { loadbalancer_id: Some(lb.id.clone()), ..ListQuery::default() };
    let listeners = r.octavia().list_listeners(&q).await.unwrap();
    r.read_actual(listeners.first().expect("router has a listener")).await
}

/// Whether the local stack's Octavia worker runs with Octavia 11.0.1's fully-populated-create
/// fixes (`functional/openstack.sh octavia-fixes on`); Debian's 11.0.0 worker otherwise.
pub fn octavia_fixes_on() -> bool {
    let root = std::env::var("ROOT").unwrap_or_else(|_| "/tmp/ostack".into());
    std::path::Path::new(&root).join("run/octavia-fixes").exists()
}

/// Set an object's provisioning_status in Octavia's database (`table`: load_balancer, pool,
/// member, ...), as a failed provider would leave it; the local stack's MariaDB socket, or
/// `KURYR_MYSQL_SOCKET`.
pub fn set_provisioning_status(table: &str, id: &str, status: &str) {
    mariadb(&format!("UPDATE {table} SET provisioning_status='{status}' WHERE id='{id}'"));
}

/// Advance an object's `updated_at` by a second in Octavia's database, as Octavia's own writes
/// do when they touch it: a worker's revert that leaves a member in ERROR also marks its pool
/// ACTIVE again (`mark_pool_prov_status_active`), which is what tells a reader the pool changed.
pub fn touch(table: &str, id: &str) {
    mariadb(&format!(
        "UPDATE {table} SET updated_at = COALESCE(updated_at, UTC_TIMESTAMP()) + INTERVAL 1 SECOND WHERE id='{id}'"
    ));
}

/// Run `sql` on Octavia's database (`KURYR_MYSQL_SOCKET`, else `$ROOT/run/mysql.sock`, else the
/// default Zed stack's); its output, tab-separated, without column names.
pub fn mariadb(sql: &str) -> String {
    let sock = std::env::var("KURYR_MYSQL_SOCKET").unwrap_or_else(|_| {
        let root = std::env::var("ROOT").unwrap_or_else(|_| "/tmp/ostack".into());
        format!("{root}/run/mysql.sock")
    });
    let out = std::process::Command::new("mariadb")
        .args(["--socket", &sock, "-uroot", "-N", "-B", "octavia", "-e", sql])
        .output()
        .expect("mariadb client");
    assert!(out.status.success(), "mariadb: {sql} failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Delete the router (cascade), its VIP port and the floating IPs on it or allocated for it.
pub async fn cleanup(r: &Router) {
    if r.spec().uuid.is_some() {
        if let Ok(Some(lb)) = r.find().await {
            remove_lb(r, &lb).await;
        }
        return;
    }
    // Every load balancer with the router's name and tags: a failed test may have left two.
    let q = ListQuery { tags: r.spec().ownership.router_tags(), ..ListQuery::name(&r.spec().name) };
    for lb in r.octavia().list_load_balancers(&q).await.unwrap_or_default() {
        remove_lb(r, &lb).await;
    }
}

/// Delete a load balancer (cascade), its VIP port and its floating IPs.
pub async fn remove_lb(r: &Router, lb: &kuryr_l7_router::openstack::octavia::LoadBalancer) {
    let _ = r.octavia().delete_load_balancer(&lb.id, true).await;
    let _ = r.octavia().wait_deleted(&lb.id, Duration::from_secs(120)).await;
    if let Some(port) = &lb.vip_port_id {
        let q = ListQuery { extra: vec![("port_id".into(), port.clone())], ..ListQuery::default() };
        for f in r.neutron().list_floating_ips(&q).await.unwrap_or_default() {
            let _ = r.neutron().delete_floating_ip(&f.id).await;
        }
        // A real network driver frees the VIP port; the noop one of the local stack does not.
        if let Ok(p) = r.neutron().get_port(port).await
            && p.device_owner == "Octavia"
        {
            let _ = r.neutron().delete_port(port).await;
        }
    }
    let q = ListQuery {
        extra: vec![("description".into(), floating_ip_description(&r.spec().ownership, &r.spec().name))],
        ..ListQuery::default()
    };
    for f in r.neutron().list_floating_ips(&q).await.unwrap_or_default() {
        let _ = r.neutron().delete_floating_ip(&f.id).await;
    }
}

/// Run `body` on `r`, then clean up whatever happened, re-raising the body's panic.
pub async fn with_router<F, Fut>(r: Router, body: F)
where
    F: FnOnce(Router) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let result = tokio::spawn(body(r.clone())).await;
    cleanup(&r).await;
    if let Err(e) = result {
        std::panic::resume_unwind(e.into_panic());
    }
}

/// [`with_router`] for several routers: `body` gets them all; then each is cleaned up (all at
/// once), whatever happened, and the body's panic is raised again.
pub async fn with_routers<F, Fut>(routers: Vec<Router>, body: F)
where
    F: FnOnce(Vec<Router>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let result = tokio::spawn(body(routers.clone())).await;
    futures::future::join_all(routers.iter().map(cleanup)).await;
    if let Err(e) = result {
        std::panic::resume_unwind(e.into_panic());
    }
}

/// A project of its own for a quota test (a fresh Keystone project, and a user with the admin
/// role on it): its quotas and Octavia's in-use counters are the test's alone, whatever the
/// other tests of the binary (running in parallel in the admin project) create.
pub struct ScratchProject {
    pub admin: Session,
    pub project: String,
    user: String,
    /// Its name, which is also its user's name and password.
    pub name: String,
}

impl ScratchProject {
    pub async fn create(prefix: &str) -> Self {
        let admin = session("admin", "admin");
        let name = unique(prefix, "project");
        let post = |path: &str, body: Value| {
            let (admin, path) = (admin.clone(), path.to_string());
            async move { admin.send_json::<Value>(&Request::new(Service::Identity, Method::POST, path).json(body)).await }
        };
        let p = post("/projects", json!({"project": {"name": name, "domain_id": "default"}})).await.unwrap();
        let project = p["project"]["id"].as_str().unwrap().to_string();
        let u =
            post("/users", json!({"user": {"name": name, "password": name, "domain_id": "default"}})).await.unwrap();
        let user = u["user"]["id"].as_str().unwrap().to_string();
        let roles: Value =
            admin.send_json(&Request::new(Service::Identity, Method::GET, "/roles?name=admin")).await.unwrap();
        let role = roles["roles"][0]["id"].as_str().unwrap();
        let assign = format!("/projects/{project}/users/{user}/roles/{role}");
        admin.send(&Request::new(Service::Identity, Method::PUT, assign)).await.unwrap();
        ScratchProject { admin, project, user, name }
    }

    pub fn session(&self) -> Session {
        let mut auth = AuthOptions::password(AUTH_URL, &self.name, Secret::new(&self.name), &self.name, "Default");
        auth.region_name = Some("RegionOne".into());
        Session::new(auth).unwrap()
    }

    pub async fn delete(&self) {
        for path in [format!("/users/{}", self.user), format!("/projects/{}", self.project)] {
            let _ = self.admin.send(&Request::new(Service::Identity, Method::DELETE, path)).await;
        }
    }
}

/// The settings of a router-set test: the stack's kuryr.conf (`KURYR_CONFIG_FILE`), then ours,
/// `name`: the fake API server at `api` with `token`, leader election off, a free health port,
/// IngressClass `class` resynced every 10 s, and the set `base` at two policies a router.
/// `more` follows in `[octavia_defaults]` (options of the set; it may open further sections).
pub fn set_settings(
    name: &str,
    api: &str,
    token: &std::path::Path,
    class: &str,
    base: &str,
    more: &str,
) -> kuryr_l7_router::config::Settings {
    let stack = std::env::var("KURYR_CONFIG_FILE").expect("KURYR_CONFIG_FILE: the stack's kuryr.conf");
    let ours = format!(
        "[kubernetes]\napi_root = {api}\ntoken_file = {}\nleader_election = False\nhealth_port = {}\n\
         ingress_class = {class}\nresync_period = 10\n\
         [octavia_defaults]\nl7_router_name = {base}\nmax_policies_per_router = 2\n{more}",
        token.display(),
        std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port(),
    );
    let texts = [(stack.clone(), std::fs::read_to_string(&stack).unwrap()), (name.to_string(), ours)];
    kuryr_l7_router::config::load_texts(&texts, Vec::new()).unwrap().settings
}
