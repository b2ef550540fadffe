//! The OpenStack clients over real HTTP against a scripted server on loopback (no OpenStack):
//! what the client does with answers the real services give only under load, which the
//! functional tests cannot provoke on demand.
//!
//! - Octavia's 503 "Project busy. Unable to lock the project." (quota row lock wait timed out,
//!   the transaction rolled back) is retried like a busy 409; any other 503 is not.
//! - Octavia's API loads the whole router to answer a GET of it: the status poll never comes
//!   sooner than the last GET took, so it keeps the API at most half busy.
//! - A fully-populated create is one long request (the API writes the whole graph before it
//!   answers): `create_load_balancer_within` gives it its own timeout, while every other request
//!   keeps the session's.

use crate::support::http_request;

use kuryr_l7_router::openstack::octavia_requests::LoadBalancerCreate;
use kuryr_l7_router::openstack::*;
use kuryr_l7_router::secret::Secret;
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::TcpStream;

/// One scripted answer to an Octavia request: after `delay`, `status` with `body`.
#[derive(Clone)]
struct Answer {
    delay: Duration,
    status: u16,
    body: serde_json::Value,
}

fn answer(status: u16, body: serde_json::Value) -> Answer {
    Answer { delay: Duration::ZERO, status, body }
}

fn project_busy() -> Answer {
    let msg = "Project busy.  Unable to lock the project.  Please try again.";
    answer(503, json!({"faultcode": "Server", "faultstring": msg, "debuginfo": null}))
}

fn created(name: &str) -> Answer {
    answer(201, json!({"loadbalancer": {"id": "lb-1", "name": name, "provisioning_status": "PENDING_CREATE"}}))
}

/// Keystone (`POST /v3/auth/tokens`) and Octavia on one port: Octavia requests get the scripted
/// answers in order (the last one repeats); every Octavia request line is recorded, with when
/// it arrived.
struct Cloud {
    port: u16,
    seen: Arc<Mutex<Vec<(Instant, String)>>>,
}

impl Cloud {
    async fn start(script: Vec<Answer>) -> Cloud {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let script = Arc::new(Mutex::new(script));
        let recorded = seen.clone();
        let port =
            http_request::serve_on_loopback(move |conn, port| serve(conn, port, script.clone(), recorded.clone()))
                .await;
        Cloud { port, seen }
    }

    fn session(&self, timeout: Duration) -> Session {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let url = format!("http://127.0.0.1:{}/v3", self.port);
        let mut auth = AuthOptions::password(&url, "u", Secret::new("p"), "p", "Default");
        auth.timeout = timeout;
        Session::new(auth).unwrap()
    }

    fn octavia(&self, timeout: Duration) -> Octavia {
        let opts = OctaviaOptions {
            busy_retry: Duration::from_secs(5),
            min_delay: Duration::from_millis(10),
            max_delay: Duration::from_millis(50),
        };
        Octavia::new(self.session(timeout), opts)
    }

    fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().iter().map(|(_, l)| l.clone()).collect()
    }

    fn arrivals(&self) -> Vec<Instant> {
        self.seen.lock().unwrap().iter().map(|(t, _)| *t).collect()
    }
}

/// One HTTP/1.1 exchange per connection (`Connection: close`).
async fn serve(
    mut conn: TcpStream,
    port: u16,
    script: Arc<Mutex<Vec<Answer>>>,
    seen: Arc<Mutex<Vec<(Instant, String)>>>,
) {
    let Some((head, body)) = http_request::read_request(&mut conn).await else {
        return;
    };
    let mut line = head.lines().next().unwrap_or_default().to_string();
    // A load balancer's update is recorded with its body (its tags are what it writes).
    if line.starts_with("PUT /v2/lbaas/loadbalancers/") {
        line = format!("{line} {}", String::from_utf8_lossy(&body));
    }
    let (a, extra) = if line.starts_with("POST /v3/auth/tokens") {
        (
            answer(201, http_request::keystone_token(port, &["load-balancer", "network", "key-manager"])),
            "X-Subject-Token: t\r\n",
        )
    } else {
        seen.lock().unwrap().push((Instant::now(), line));
        let mut s = script.lock().unwrap();
        let a = if s.len() > 1 { s.remove(0) } else { s[0].clone() };
        (a, "")
    };
    tokio::time::sleep(a.delay).await;
    let body = a.body.to_string();
    http_request::respond_json(&mut conn, a.status, &body, extra).await;
}

fn router_body() -> LoadBalancerCreate {
    LoadBalancerCreate { name: Some("router".into()), vip_subnet_id: Some("s".into()), ..Default::default() }
}

#[tokio::test]
async fn project_busy_503_is_retried_until_the_write_goes_through() {
    let cloud = Cloud::start(vec![project_busy(), project_busy(), created("router")]).await;
    let o = cloud.octavia(Duration::from_secs(5));
    let lb = o.create_load_balancer(&router_body()).await.expect("created after two 503s");
    assert_eq!(lb.id, "lb-1");
    assert_eq!(cloud.seen(), vec!["POST /v2/lbaas/loadbalancers HTTP/1.1"; 3]);
    let stats = o.session().stats();
    assert_eq!(stats.conflict_retries, 2, "both refusals counted as busy retries");
    assert_eq!(stats.writes, 3);
}

fn lb_busy() -> Answer {
    let msg = "Load Balancer lb-1 is immutable and cannot be updated.";
    answer(409, json!({"faultcode": "Client", "faultstring": msg, "debuginfo": null}))
}

/// A write already retrying busy 409s asks the write permit before every retry: once it closes
/// (the leader lease lost), no further attempt is sent and the write ends as fenced, instead of
/// retrying for `busy_retry` and landing after the new leader has planned.
#[tokio::test]
async fn a_closed_write_permit_stops_the_busy_retries_of_a_write_in_progress() {
    let cloud = Cloud::start(vec![lb_busy()]).await;
    let open = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let permit = {
        let open = open.clone();
        WritePermit::new(move || open.load(std::sync::atomic::Ordering::SeqCst))
    };
    let o = cloud.octavia(Duration::from_secs(5)).with_write_permit(permit);
    let write = tokio::spawn(async move { o.create_load_balancer(&router_body()).await });
    while cloud.seen().len() < 3 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    open.store(false, std::sync::atomic::Ordering::SeqCst);
    let closed = Instant::now();
    let err = tokio::time::timeout(Duration::from_secs(2), write)
        .await
        .expect("the write ends at its next retry, not after busy_retry (5 s)")
        .unwrap()
        .unwrap_err();
    assert!(matches!(err, Error::Fenced), "{err}");
    // At most the attempt in flight when the permit closed arrives after it.
    let late = cloud.arrivals().iter().filter(|t| **t > closed).count();
    assert!(late <= 1, "{late} attempts after the permit closed: {:?}", cloud.seen());
    tokio::time::sleep(Duration::from_millis(200)).await;
    let after = cloud.arrivals().iter().filter(|t| **t > closed).count();
    assert_eq!(after, late, "no attempt once the write ended");
}

#[tokio::test]
async fn other_503s_are_reported_not_retried() {
    let down = answer(503, json!({"faultcode": "Server", "faultstring": "Service Unavailable"}));
    let cloud = Cloud::start(vec![down, created("router")]).await;
    let o = cloud.octavia(Duration::from_secs(5));
    let err = o.create_load_balancer(&router_body()).await.unwrap_err();
    assert_eq!(err.status(), Some(503));
    assert!(err.to_string().contains("Service Unavailable"), "{err}");
    assert_eq!(cloud.seen().len(), 1, "sent once");
}

#[tokio::test]
async fn project_busy_for_longer_than_busy_retry_is_an_error_naming_it() {
    let cloud = Cloud::start(vec![project_busy()]).await;
    let mut o = cloud.octavia(Duration::from_secs(5));
    o = Octavia::new(
        o.session().clone(),
        OctaviaOptions { busy_retry: Duration::from_millis(200), ..o.options().clone() },
    );
    let err = o.create_load_balancer(&router_body()).await.unwrap_err();
    assert!(err.is_project_busy(), "{err}");
    assert!(err.to_string().contains("Project busy"), "{err}");
    assert!(cloud.seen().len() >= 2, "retried while within busy_retry");
}

#[tokio::test]
async fn a_long_create_gets_its_own_timeout_and_other_requests_keep_the_session_one() {
    let slow = Answer { delay: Duration::from_millis(1500), ..created("router") };
    let cloud = Cloud::start(vec![slow.clone(), slow]).await;
    let o = cloud.octavia(Duration::from_millis(500));
    // The session's 500 ms: the same slow answer is a timeout that names the request and its limit.
    let err = o.create_load_balancer(&router_body()).await.unwrap_err();
    match &err {
        Error::Timeout { path, timeout, .. } => {
            assert_eq!(path, "/v2/lbaas/loadbalancers");
            assert_eq!(*timeout, Duration::from_millis(500));
        }
        e => panic!("expected a timeout, got {e}"),
    }
    // The create with its own 5 s limit waits for the answer.
    let lb = o.create_load_balancer_within(&router_body(), Duration::from_secs(5)).await.expect("answer after 1.5 s");
    assert_eq!(lb.name, "router");
    assert_eq!(cloud.seen().len(), 2, "neither attempt was resent");
}

#[tokio::test]
async fn status_polls_are_spaced_by_at_least_the_time_a_get_takes() {
    let lb = |status: &str| Answer {
        delay: Duration::from_millis(300),
        ..answer(200, json!({"loadbalancer": {"id": "lb-1", "provisioning_status": status}}))
    };
    let cloud =
        Cloud::start(vec![lb("PENDING_UPDATE"), lb("PENDING_UPDATE"), lb("PENDING_UPDATE"), lb("ACTIVE")]).await;
    // Backoff 10 → 50 ms: without the rule the next GET would follow 10–50 ms after an answer.
    let o = cloud.octavia(Duration::from_secs(5));
    let got = o.wait_active("lb-1", Duration::from_secs(30)).await.expect("ACTIVE on the 4th GET");
    assert_eq!(got.provisioning_status, "ACTIVE");
    let t = cloud.arrivals();
    assert_eq!(t.len(), 4);
    for w in t.windows(2) {
        // 300 ms answering + at least 300 ms pause before the next poll.
        assert!(w[1] - w[0] >= Duration::from_millis(590), "polled again after {:?}", w[1] - w[0]);
    }
}

/// How each wait ends (one poll loop serves both): `wait_active` fails at once on ERROR with the
/// object, at its deadline with the last status seen, and on a 404; `wait_deleted` ends on the
/// 404.
#[tokio::test]
async fn status_waits_end_on_error_on_the_deadline_and_when_gone() {
    let lb = |status: &str| answer(200, json!({"loadbalancer": {"id": "lb-1", "provisioning_status": status}}));
    let gone = || answer(404, json!({"faultcode": "Client", "faultstring": "Load Balancer lb-1 not found."}));
    let long = Duration::from_secs(30);
    let cloud = Cloud::start(vec![lb("PENDING_UPDATE"), lb("ERROR")]).await;
    match cloud.octavia(Duration::from_secs(5)).wait_active("lb-1", long).await {
        Err(Error::Provisioning { kind, id, status }) => {
            assert_eq!((kind, &*id, &*status), ("loadbalancer", "lb-1", "ERROR"))
        }
        other => panic!("expected the ERROR, got {other:?}"),
    }
    assert_eq!(cloud.seen().len(), 2);
    let cloud = Cloud::start(vec![lb("PENDING_CREATE"), lb("PENDING_UPDATE")]).await;
    match cloud.octavia(Duration::from_secs(5)).wait_active("lb-1", Duration::from_millis(300)).await {
        Err(Error::WaitTimeout { id, last_status, .. }) => {
            assert_eq!((&*id, &*last_status), ("lb-1", "PENDING_UPDATE"))
        }
        other => panic!("expected the deadline, got {other:?}"),
    }
    let cloud = Cloud::start(vec![gone()]).await;
    let err = cloud.octavia(Duration::from_secs(5)).wait_active("lb-1", long).await.unwrap_err();
    assert!(err.is_not_found(), "{err}");
    let cloud = Cloud::start(vec![lb("PENDING_DELETE"), lb("PENDING_DELETE"), gone()]).await;
    cloud.octavia(Duration::from_secs(5)).wait_deleted("lb-1", long).await.expect("gone on the 3rd GET");
    assert_eq!(cloud.seen().len(), 3);
}

/// A Gateway's router on the scripted cloud: named `gw`, cluster `c1`.
fn gateway_router(cloud: &Cloud) -> kuryr_l7_router::driver::Router {
    gateway_router_of(cloud, kuryr_l7_router::driver::ownership::Ownership::new("c1"))
}

/// [`gateway_router`] of the controller instance whose ownership is `ownership`.
fn gateway_router_of(
    cloud: &Cloud,
    ownership: kuryr_l7_router::driver::ownership::Ownership,
) -> kuryr_l7_router::driver::Router {
    let spec = kuryr_l7_router::driver::spec::RouterSpec {
        vip_subnet_id: Some("s".into()),
        listener_port: 8080,
        external_svc_subnet: Some("ext".into()),
        ownership,
        create_timeout: Duration::from_secs(5),
        write_timeout: Duration::from_secs(5),
        ..kuryr_l7_router::driver::spec::RouterSpec::for_tests("gw")
    };
    let session = cloud.session(Duration::from_secs(5));
    kuryr_l7_router::driver::Router::new(cloud.octavia(Duration::from_secs(5)), Neutron::new(session), spec)
}

fn our_lb() -> Answer {
    answer(
        200,
        json!({"loadbalancers": [{"id": "lb-1", "name": "gw", "vip_port_id": "port-1", "provisioning_status": "ACTIVE"}]}),
    )
}

fn fip_on_port(description: &str) -> Answer {
    answer(
        200,
        json!({"floatingips": [{"id": "fip-1", "floating_ip_address": "203.0.113.5", "port_id": "port-1",
                                "description": description}]}),
    )
}

/// A Gateway deleted: its load balancer, found by its name and our tags, is deleted with
/// cascade, and the floating IP allocated for it (described with the router's name) is released.
#[tokio::test]
async fn deleting_a_router_deletes_its_load_balancer_and_our_floating_ip() {
    let marker = kuryr_l7_router::driver::floating_ip_description(
        &kuryr_l7_router::driver::ownership::Ownership::new("c1"),
        "gw",
    );
    let cloud = Cloud::start(vec![
        our_lb(),
        fip_on_port(&marker),
        answer(204, json!(null)),
        answer(204, json!(null)),
        pending_delete(),
        gone(),
    ])
    .await;
    assert!(gateway_router(&cloud).delete_router().await.unwrap());
    let seen = cloud.seen();
    assert!(seen[0].starts_with("GET /v2/lbaas/loadbalancers?") && seen[0].contains("name=gw"), "{seen:?}");
    assert!(seen[1].starts_with("GET /v2.0/floatingips?port_id=port-1"), "{seen:?}");
    assert_eq!(
        seen[2..],
        [
            "DELETE /v2.0/floatingips/fip-1 HTTP/1.1",
            "DELETE /v2/lbaas/loadbalancers/lb-1?cascade=true HTTP/1.1",
            // Deleted means gone: PENDING_DELETE is waited through until Octavia answers 404.
            "GET /v2/lbaas/loadbalancers/lb-1 HTTP/1.1",
            "GET /v2/lbaas/loadbalancers/lb-1 HTTP/1.1",
        ]
    );
}

/// The load balancer still PENDING_DELETE after its delete was accepted.
fn pending_delete() -> Answer {
    answer(
        200,
        json!({"loadbalancer": {"id": "lb-1", "name": "gw", "vip_port_id": "port-1", "provisioning_status": "PENDING_DELETE"}}),
    )
}

/// The load balancer gone: Octavia answers 404.
fn gone() -> Answer {
    answer(404, json!({"faultcode": "Client", "faultstring": "Load Balancer lb-1 not found."}))
}

/// A floating IP on the router's VIP that we did not allocate (put there by an operator) is
/// left; the load balancer is deleted. No load balancer of ours: nothing is deleted.
#[tokio::test]
async fn deleting_a_router_never_touches_what_is_not_ours() {
    let cloud = Cloud::start(vec![our_lb(), fip_on_port("the operator's"), answer(204, json!(null)), gone()]).await;
    assert!(gateway_router(&cloud).delete_router().await.unwrap());
    let seen = cloud.seen();
    assert_eq!(seen.len(), 4, "{seen:?}");
    assert_eq!(seen[2], "DELETE /v2/lbaas/loadbalancers/lb-1?cascade=true HTTP/1.1");
    let cloud = Cloud::start(vec![answer(200, json!({"loadbalancers": []}))]).await;
    assert!(!gateway_router(&cloud).delete_router().await.unwrap());
    assert_eq!(cloud.seen().len(), 1, "a lookup only: {:?}", cloud.seen());
}

/// One Ingress (shop/web) with one policy, to be admitted within the project's quota.
fn one_route_within_quota() -> kuryr_l7_router::model::DesiredRouter {
    use kuryr_l7_router::model::*;
    use kuryr_l7_router::translate::budget::{Budget, RouterQuota};
    let owner = KubeRef::new("Ingress", "shop", "web");
    DesiredRouter {
        policies: vec![Policy {
            name: "ingress:shop/web:a.com:Exact:/x".into(),
            position: 1,
            pool: "shop_web".into(),
            rules: vec![Rule {
                rule_type: RuleType::Path,
                compare_type: CompareType::EqualTo,
                value: "/x".into(),
                invert: false,
                key: None,
            }],
            owner: owner.clone(),
            description: "a.com Exact /x".into(),
            redirect: None,
        }],
        pools: [("shop_web".to_string(), kuryr_l7_router::testing::pool("shop_web", vec![]))].into(),
        // The controller's budget for a router it never read: unlimited, with the age order.
        quota: Some(RouterQuota { budget: Budget::UNLIMITED, oldest_first: vec![owner] }),
        ..Default::default()
    }
}

/// A router of the set that does not exist yet reads the project's room before it is created:
/// the project's l7policy quota is 1 and another load balancer holds that one policy, so not one
/// route of the new router fits, and no load balancer is created (no POST): the error names the
/// router and the quota, and the Ingresses wait with it.
#[tokio::test]
async fn a_new_router_is_not_created_when_the_project_quota_has_no_room() {
    let quota = answer(200, json!({"quota": {"l7policy": 1, "l7rule": -1}}));
    let others = answer(200, json!({"l7policies": [{"id": "p1", "listener_id": "someone-else", "rules": []}]}));
    let cloud = Cloud::start(vec![answer(200, json!({"loadbalancers": []})), quota, others]).await;
    let err = gateway_router(&cloud).converge(&one_route_within_quota()).await.unwrap_err();
    assert_eq!(err.label(), "quota_exceeded", "{err}");
    let text = err.to_string();
    assert!(text.contains("gw is not created") && text.contains("need 1 L7 policies"), "{text}");
    let seen = cloud.seen();
    assert!(seen.iter().any(|l| l.starts_with("GET /v2/lbaas/quotas/p ")), "{seen:?}");
    assert!(seen.iter().all(|l| !l.starts_with("POST")), "nothing created: {seen:?}");
}

const OUR_SECRET: &str = "11111111-2222-3333-4444-555555555555";

/// A router deleted with its key manager: after the load balancer, the Barbican secrets named
/// after this router (`kuryr-l7-router:<cluster>:<router>:…`) are deleted, never another
/// router's whose name only begins like it, nor a legacy one of the cluster.
#[tokio::test]
async fn deleting_a_router_deletes_its_own_barbican_secrets_only() {
    let secret = |id: &str, name: &str| json!({"secret_ref": format!("http://kms/v1/secrets/{id}"), "name": name});
    let secrets = json!({"total": 3, "secrets": [
        secret(OUR_SECRET, "kuryr-l7-router:c1:gw:shop/tls:abc"),
        secret("99999999-2222-3333-4444-555555555555", "kuryr-l7-router:c1:gw:x:shop/tls:abc"),
        secret("88888888-2222-3333-4444-555555555555", "kuryr-l7-router:c1:gw2:shop/tls:abc"),
    ]});
    let cloud = Cloud::start(vec![
        our_lb(),
        answer(200, json!({"floatingips": []})),
        answer(204, json!(null)),
        gone(),
        answer(200, secrets),
        answer(204, json!(null)),
    ])
    .await;
    let session = cloud.session(Duration::from_secs(5));
    let router = gateway_router(&cloud).with_barbican(kuryr_l7_router::openstack::Barbican::new(session));
    assert!(router.delete_router().await.unwrap());
    let seen = cloud.seen();
    assert_eq!(seen[2], "DELETE /v2/lbaas/loadbalancers/lb-1?cascade=true HTTP/1.1", "{seen:?}");
    assert!(seen[4].starts_with("GET /v1/secrets?") && seen[4].contains("kuryr-l7-router%3Ac1%3Agw%3A"), "{seen:?}");
    assert_eq!(seen[5..], [format!("DELETE /v1/secrets/{OUR_SECRET} HTTP/1.1")], "only this router's own secret");
}

/// The Gateways' load balancers are listed by our ownership tags alone (no name filter), and
/// only those named like a Gateway's router and carrying this instance's set tag are kept:
/// another instance's (same cluster tag) and those without a set tag are never collected.
#[tokio::test]
async fn listing_the_gateway_routers_keeps_our_tags_the_gateway_prefix_and_our_set() {
    use kuryr_l7_router::driver::ownership::Ownership;
    let lbs = json!({"loadbalancers": [
        {"id": "lb-1", "name": "kuryr-gw-0123456789abcdef-shop.web", "provisioning_status": "ACTIVE",
         "tags": ["kuryr-l7-router", "cluster:c1", "router-set:edge"]},
        {"id": "lb-2", "name": "ingress-router", "provisioning_status": "ACTIVE",
         "tags": ["kuryr-l7-router", "cluster:c1", "router-set:edge"]},
        {"id": "lb-3", "name": "kuryr-gw-fedcba9876543210-shop.gone", "provisioning_status": "ACTIVE",
         "tags": ["kuryr-l7-router", "cluster:c1", "router-set:edge"]},
        {"id": "lb-4", "name": "kuryr-gw-1111111111111111-team.other", "provisioning_status": "ACTIVE",
         "tags": ["kuryr-l7-router", "cluster:c1", "router-set:other"]},
        {"id": "lb-5", "name": "kuryr-gw-2222222222222222-old.gw", "provisioning_status": "ACTIVE",
         "tags": ["kuryr-l7-router", "cluster:c1"]},
    ]});
    let cloud = Cloud::start(vec![answer(200, lbs)]).await;
    let router = gateway_router_of(&cloud, Ownership::new("c1").with_set("edge"));
    let names = router.list_ours_named("kuryr-gw-").await.unwrap();
    assert_eq!(names, ["kuryr-gw-0123456789abcdef-shop.web", "kuryr-gw-fedcba9876543210-shop.gone"]);
    let seen = cloud.seen();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert!(seen[0].starts_with("GET /v2/lbaas/loadbalancers?") && seen[0].contains("tags="), "{seen:?}");
    assert!(!seen[0].contains("name="), "no name filter: {seen:?}");
}

/// Another instance of the cluster has a load balancer of the same name (instance `rset-3`'s
/// first router is instance `rset`'s third): deleting our router of that name deletes nothing
/// (it is not ours: never adopted, never deleted); one without a set tag is ours by name, as
/// before set tags.
#[tokio::test]
async fn another_instances_router_of_the_same_name_is_neither_adopted_nor_deleted() {
    use kuryr_l7_router::driver::ownership::Ownership;
    let lb = |tags: serde_json::Value| {
        answer(
            200,
            json!({"loadbalancers": [{"id": "lb-1", "name": "gw", "provisioning_status": "ACTIVE", "tags": tags}]}),
        )
    };
    let other = lb(json!(["kuryr-l7-router", "cluster:c1", "router-set:rset-3"]));
    let cloud = Cloud::start(vec![other]).await;
    let router = gateway_router_of(&cloud, Ownership::new("c1").with_set("rset"));
    assert!(!router.delete_router().await.unwrap(), "another instance's: nothing deleted");
    assert!(router.find().await.unwrap().is_none(), "nor adopted");
    assert!(cloud.seen().iter().all(|r| r.starts_with("GET ")), "reads only: {:?}", cloud.seen());
    let untagged = lb(json!(["kuryr-l7-router", "cluster:c1"]));
    let cloud = Cloud::start(vec![untagged]).await;
    let router = gateway_router_of(&cloud, Ownership::new("c1").with_set("rset"));
    assert_eq!(router.find().await.unwrap().map(|l| l.id), Some("lb-1".to_string()), "adopted by name");
}

/// The routers of the set are the load balancers of the cluster carrying the set tag, whatever
/// their name; another instance's are left out; one without a set tag named as a router of the
/// set is listed as untagged (placement keeps new groups off its name).
#[tokio::test]
async fn the_set_is_listed_by_its_set_tag() {
    use kuryr_l7_router::driver::FoundRouter;
    use kuryr_l7_router::driver::ownership::Ownership;
    let lbs = json!({"loadbalancers": [
        {"id": "lb-1", "name": "gw-3", "tags": ["kuryr-l7-router", "cluster:c1", "router-set:gw", "empty-since:1700"]},
        {"id": "lb-2", "name": "gw-2", "tags": ["kuryr-l7-router", "cluster:c1", "router-set:gw-2"]},
        {"id": "lb-3", "name": "gw-4", "tags": ["kuryr-l7-router", "cluster:c1"]},
    ]});
    let cloud = Cloud::start(vec![answer(200, lbs)]).await;
    let router = gateway_router_of(&cloud, Ownership::new("c1").with_set("gw"));
    let found = router.set_load_balancers().await.unwrap();
    let want = [
        FoundRouter { name: "gw-3".into(), empty_since: Some(1700), untagged: false },
        FoundRouter { name: "gw-4".into(), empty_since: None, untagged: true },
    ];
    assert_eq!(found, want);
    let seen = cloud.seen();
    assert!(seen[0].contains("tags=") && seen[0].contains("fields=tags") && !seen[0].contains("name="), "{seen:?}");
}

/// A converge of a router of the set: its load balancer, made before set tags (our cluster tags,
/// no set tag), gets our set tag, and, the router being empty, the time it became empty, in ONE
/// update of its tags (the others kept); then it waits for ACTIVE before anything else.
#[tokio::test]
async fn a_converge_tags_the_load_balancer_with_the_set_and_the_time_it_became_empty() {
    use kuryr_l7_router::driver::ownership::Ownership;
    let lb = |status: &str, tags: serde_json::Value| json!({"id": "lb-1", "name": "gw", "vip_port_id": "port-1", "provisioning_status": status, "tags": tags});
    let old_tags = json!(["kuryr-l7-router", "cluster:c1", "team:a"]);
    let new_tags = json!(["kuryr-l7-router", "cluster:c1", "team:a", "router-set:edge", "empty-since:1700"]);
    let cloud = Cloud::start(vec![
        answer(200, json!({"loadbalancers": [lb("ACTIVE", old_tags)]})),
        answer(200, json!({"loadbalancer": lb("PENDING_UPDATE", new_tags.clone())})),
        answer(200, json!({"loadbalancer": lb("ACTIVE", new_tags.clone())})),
        // The rest of the convergence is not this test's: it stops here.
        answer(500, json!({"faultstring": "stop"})),
    ])
    .await;
    let desired = kuryr_l7_router::model::DesiredRouter { empty_since: Some(1700), ..Default::default() };
    let router = gateway_router_of(&cloud, Ownership::new("c1").with_set("edge"));
    let _ = tokio::time::timeout(Duration::from_secs(20), router.converge(&desired)).await;
    let seen = cloud.seen();
    assert!(seen[0].starts_with("GET /v2/lbaas/loadbalancers?"), "{seen:?}");
    let (line, body) = seen[1].split_once(" HTTP/1.1 ").unwrap();
    assert_eq!(line, "PUT /v2/lbaas/loadbalancers/lb-1");
    let body: serde_json::Value = serde_json::from_str(body).unwrap();
    assert_eq!(body, json!({"loadbalancer": {"tags": new_tags}}));
    assert!(seen[2].starts_with("GET /v2/lbaas/loadbalancers/lb-1 "), "waits for ACTIVE: {seen:?}");
}

/// The admission of a Gateway's router before its create (`controller::gateway::admission`) on
/// the scripted cloud: `address`, then the answers in order.
async fn admit(
    script: Vec<Answer>,
    limits: &kuryr_l7_router::config::GatewayLimits,
    address: Option<&str>,
) -> (Result<(), kuryr_l7_router::controller::gateway::admission::Refusal>, Vec<String>) {
    let cloud = Cloud::start(script).await;
    let neutron = Neutron::new(cloud.session(Duration::from_secs(5)));
    let octavia = cloud.octavia(Duration::from_secs(5));
    let address = address.map(|a| a.parse().unwrap());
    let r =
        kuryr_l7_router::controller::gateway::admission::admit_on(&octavia, &neutron, limits, "kuryr-gw-web", address)
            .await;
    (r, cloud.seen())
}

/// Octavia's load-balancer quota read against the project's load balancers, Neutron's floating
/// IP quota details when one is to be allocated; a load balancer of the router's name already
/// there is no create (no quota read); a static address not allowed is refused before any
/// quota is read. Only GETs.
#[tokio::test]
async fn a_gateway_create_is_checked_against_the_project_quotas_and_its_address_tag() {
    let limits = kuryr_l7_router::config::GatewayLimits::default();
    let two = answer(200, json!({"loadbalancers": [{"id": "a", "name": "x"}, {"id": "b", "name": "y"}]}));
    let lb_quota = |n: i64| answer(200, json!({"quota": {"load_balancer": n, "l7policy": -1}}));
    let (r, seen) = admit(vec![two.clone(), lb_quota(2)], &limits, None).await;
    let refusal = r.unwrap_err();
    assert!(refusal.message.contains("load balancer quota is used up (2 of 2)"), "{refusal:?}");
    assert!(seen[0].starts_with("GET /v2/lbaas/loadbalancers?") && seen[0].contains("project_id=p"), "{seen:?}");
    assert!(seen[1].starts_with("GET /v2/lbaas/quotas/p "), "{seen:?}");

    let fips = answer(200, json!({"quota": {"floatingip": {"limit": 4, "used": 3, "reserved": 1}}}));
    let (r, seen) = admit(vec![two.clone(), lb_quota(10), fips.clone()], &limits, None).await;
    assert!(r.unwrap_err().message.contains("floating IP quota is used up (4 of 4)"));
    assert!(seen[2].starts_with("GET /v2.0/quotas/p/details.json "), "{seen:?}");
    let room = answer(200, json!({"quota": {"floatingip": {"limit": -1, "used": 9, "reserved": 0}}}));
    assert_eq!(admit(vec![two.clone(), lb_quota(10), room], &limits, None).await.0, Ok(()));

    let ours = answer(200, json!({"loadbalancers": [{"id": "a", "name": "kuryr-gw-web"}]}));
    let (r, seen) = admit(vec![ours], &limits, None).await;
    assert_eq!((r, seen.len()), (Ok(()), 1), "no quota read for a load balancer that exists");

    let tagged = kuryr_l7_router::config::GatewayLimits { address_tag: Some("gw-ok".into()), ..limits.clone() };
    let fip = |tags: Vec<&str>| {
        answer(200, json!({"floatingips": [{"id": "f", "floating_ip_address": "203.0.113.9", "tags": tags}]}))
    };
    let (r, seen) = admit(vec![fip(vec!["other"])], &tagged, Some("203.0.113.9")).await;
    assert!(r.unwrap_err().message.contains("203.0.113.9 is not a floating IP the operator allows"));
    assert_eq!(seen.len(), 1, "no quota read: {seen:?}");
    assert!(seen[0].contains("floating_ip_address=203.0.113.9"), "{seen:?}");
    // Allowed by its tag: the quotas are read, and no floating IP quota for a static address.
    let (r, seen) = admit(vec![fip(vec!["gw-ok"]), two, lb_quota(10)], &tagged, Some("203.0.113.9")).await;
    assert_eq!((r, seen.len()), (Ok(()), 3), "{seen:?}");
    assert!(seen.iter().all(|l| l.starts_with("GET ")), "{seen:?}");
}
