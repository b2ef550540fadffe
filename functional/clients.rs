//! Functional tests of the OpenStack clients against a real Keystone + Neutron + Octavia.
//! Run: `functional/openstack.sh start` then `KURYR_FUNCTIONAL=1 cargo test --test functional_clients`.
//! Everything created is named `fct-clients-<random>` and removed at the end of each test.

#[path = "common/mod.rs"]
mod common;
use common::*;

use futures::FutureExt;
use kuryr_l7_router::openstack::keystone::Request;
use kuryr_l7_router::openstack::neutron::FloatingIpCreate;
use kuryr_l7_router::openstack::octavia::*;
use kuryr_l7_router::openstack::octavia_requests::*;
use kuryr_l7_router::openstack::*;
use kuryr_l7_router::secret::Secret;
use reqwest::Method;
use serde_json::{Value, json};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

const WAIT: Duration = Duration::from_secs(60);

fn env(k: &str, default: &str) -> String {
    std::env::var(k).unwrap_or_else(|_| default.to_string())
}

fn opts(user: &str, password: &str, project: &str) -> AuthOptions {
    let mut o = AuthOptions::password(
        &env("OS_AUTH_URL", "http://127.0.0.1:5000/v3"),
        user,
        Secret::new(password),
        project,
        &env("OS_USER_DOMAIN_NAME", "Default"),
    );
    o.region_name = Some(env("OS_REGION_NAME", "RegionOne"));
    o.timeout = Duration::from_secs(30);
    o
}

fn admin_opts() -> AuthOptions {
    opts(&env("OS_USERNAME", "admin"), &env("OS_PASSWORD", "admin"), &env("OS_PROJECT_NAME", "admin"))
}

struct Cloud {
    session: Session,
    octavia: Octavia,
    neutron: Neutron,
    subnet_id: String,
}

async fn cloud() -> Cloud {
    let session = Session::new(admin_opts()).unwrap();
    session.authenticate().await.expect("Keystone unreachable or admin credentials wrong");
    let octavia = Octavia::new(session.clone(), OctaviaOptions::default());
    let neutron = Neutron::new(session.clone());
    let subnets = neutron.list_subnets(&ListQuery::name(env("KURYR_VIP_SUBNET", "private-subnet"))).await.unwrap();
    let subnet_id = subnets.first().expect("subnet private-subnet").id.clone();
    Cloud { session, octavia, neutron, subnet_id }
}

/// The listener once Octavia has settled it. Its flows mark the load balancer ACTIVE before the
/// listener, in a separate transaction (`MarkLBAndListenersActiveInDB`), so a listener read right
/// after `wait_active` may still be PENDING_*: poll the listener itself, within `WAIT`.
async fn settled_listener(o: &Octavia, id: &str) -> Listener {
    let started = Instant::now();
    loop {
        let l = o.get_listener(id).await.unwrap();
        if !l.provisioning_status.starts_with("PENDING_") || started.elapsed() > WAIT {
            return l;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn create_lb(c: &Cloud, name: &str, tags: &[&str]) -> LoadBalancer {
    let lb = c
        .octavia
        .create_load_balancer(&LoadBalancerCreate {
            name: Some(name.into()),
            vip_subnet_id: Some(c.subnet_id.clone()),
            tags: tags.iter().map(|t| t.to_string()).collect(),
            ..Default::default()
        })
        .await
        .unwrap();
    c.octavia.wait_active(&lb.id, WAIT).await.unwrap()
}

/// Cascade-deletes the LB, then the VIP port the noop network driver leaves behind and any
/// floating IP on it.
async fn cleanup_lb(c: &Cloud, lb_id: &str) {
    c.octavia.delete_load_balancer(lb_id, true).await.unwrap();
    c.octavia.wait_deleted(lb_id, WAIT).await.unwrap();
    let ports = c.neutron.list_ports(&ListQuery::default().with("device_owner", "Octavia")).await.unwrap();
    for p in ports.iter().filter(|p| p.name.contains(lb_id) || p.device_id.contains(lb_id)) {
        for f in c.neutron.list_floating_ips(&ListQuery::default().with("port_id", &p.id)).await.unwrap() {
            c.neutron.delete_floating_ip(&f.id).await.unwrap();
        }
        c.neutron.delete_port(&p.id).await.unwrap();
    }
}

/// Runs `body` with a fresh ACTIVE load balancer and always cleans up, even when `body` panics.
async fn with_lb<F, Fut>(c: &Cloud, tag: &str, tags: &[&str], body: F)
where
    F: FnOnce(LoadBalancer) -> Fut,
    Fut: Future<Output = ()>,
{
    let lb = create_lb(c, &unique(tag), tags).await;
    let id = lb.id.clone();
    let outcome = AssertUnwindSafe(body(lb)).catch_unwind().await;
    cleanup_lb(c, &id).await;
    if let Err(p) = outcome {
        std::panic::resume_unwind(p);
    }
}

fn unique(tag: &str) -> String {
    common::unique("fct-clients", tag)
}

#[tokio::test]
async fn token_catalog_and_application_credential() {
    if !enabled() {
        return;
    }
    let c = cloud().await;
    let info = c.session.token_info().await.unwrap();
    assert!(info.roles.iter().any(|r| r == "admin"), "{info:?}");
    assert!(c.session.endpoint(Service::LoadBalancer).await.unwrap().starts_with("http"));
    assert!(c.session.endpoint(Service::Network).await.unwrap().starts_with("http"));
    let mut bad = admin_opts();
    bad.region_name = Some("NoSuchRegion".into());
    let err = Session::new(bad).unwrap().endpoint(Service::LoadBalancer).await.unwrap_err();
    assert!(err.to_string().contains("NoSuchRegion") && err.to_string().contains("load-balancer"), "{err}");

    // An application credential for demo, created with demo's own token.
    let demo = Session::new(opts(&env("OS_DEMO_USERNAME", "demo"), &env("OS_DEMO_PASSWORD", "demo"), "demo")).unwrap();
    let demo_info = demo.authenticate().await.unwrap();
    let name = unique("appcred");
    let created: Value = demo
        .send_json(
            &Request::new(
                Service::Identity,
                Method::POST,
                format!("/users/{}/application_credentials", demo_info.user_id),
            )
            .json(json!({"application_credential": {"name": name}})),
        )
        .await
        .unwrap();
    let ac_id = created["application_credential"]["id"].as_str().unwrap().to_string();
    let secret = Secret::new(created["application_credential"]["secret"].as_str().unwrap());
    let check = async {
        for credential in [
            AppCredentialRef::Id(ac_id.clone()),
            AppCredentialRef::Name {
                name: name.clone(),
                user: UserRef::Name { name: "demo".into(), domain: DomainRef::Name("Default".into()) },
            },
        ] {
            let mut o = admin_opts();
            o.method = AuthMethod::ApplicationCredential { credential, secret: secret.clone() };
            assert!(!format!("{o:?}").contains(secret.expose()));
            let s = Session::new(o).unwrap();
            let i = s.authenticate().await.unwrap();
            assert_eq!(i.user_id, demo_info.user_id);
            assert_eq!(i.project_id, demo_info.project_id);
            // demo has load-balancer_member: listing works with the credential's token.
            Octavia::new(s, OctaviaOptions::default()).list_load_balancers(&ListQuery::name(&name)).await.unwrap();
        }
    };
    let outcome = AssertUnwindSafe(check).catch_unwind().await;
    demo.send(&Request::new(
        Service::Identity,
        Method::DELETE,
        format!("/users/{}/application_credentials/{ac_id}", demo_info.user_id),
    ))
    .await
    .unwrap();
    if let Err(p) = outcome {
        std::panic::resume_unwind(p);
    }
}

#[tokio::test]
async fn reauthenticates_after_revoked_token() {
    if !enabled() {
        return;
    }
    let c = cloud().await;
    let token = c.session.token().await.unwrap();
    let url = format!("{}/auth/tokens", env("OS_AUTH_URL", "http://127.0.0.1:5000/v3").trim_end_matches('/'));
    let resp = reqwest::Client::new()
        .delete(url)
        .header("X-Auth-Token", token.expose())
        .header("X-Subject-Token", token.expose())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 204);
    let before = c.session.stats();
    c.octavia.list_load_balancers(&ListQuery::name("fct-clients-none")).await.unwrap();
    let after = c.session.stats();
    assert_eq!(after.reauthentications - before.reauthentications, 1);
    assert_ne!(c.session.token().await.unwrap(), token);
}

#[tokio::test]
async fn lb_listener_pools_members_policies_rules_and_errors() {
    if !enabled() {
        return;
    }
    let c = cloud().await;
    let o = c.octavia.clone();
    let subnet_id = c.subnet_id.clone();
    with_lb(&c, "chain", &["fct-clients"], |lb| async move {
        let tag = lb.name.clone();
        // Back-to-back writes without waiting: each one hits the previous one's PENDING_UPDATE.
        let before = o.session().stats();
        let listener = o
            .create_listener(&ListenerCreate {
                name: Some(format!("{tag}-http")),
                loadbalancer_id: Some(lb.id.clone()),
                protocol: "HTTP".into(),
                protocol_port: 80,
                tags: vec![tag.clone()],
                ..Default::default()
            })
            .await
            .unwrap();
        let pool = o
            .create_pool(&PoolCreate {
                name: Some(format!("{tag}-default")),
                listener_id: Some(listener.id.clone()),
                protocol: "HTTP".into(),
                lb_algorithm: "ROUND_ROBIN".into(),
                tags: vec![tag.clone()],
                ..Default::default()
            })
            .await
            .unwrap();
        let pool2 = o
            .create_pool(&PoolCreate {
                name: Some(format!("{tag}-api")),
                loadbalancer_id: Some(lb.id.clone()),
                protocol: "HTTP".into(),
                lb_algorithm: "LEAST_CONNECTIONS".into(),
                ..Default::default()
            })
            .await
            .unwrap();
        let members: Vec<MemberCreate> = (11..14)
            .map(|i| MemberCreate {
                name: Some(format!("m{i}")),
                address: format!("10.0.0.{i}"),
                protocol_port: 8080,
                weight: Some(i),
                subnet_id: Some(subnet_id.clone()),
                ..Default::default()
            })
            .collect();
        o.replace_members(&pool2.id, &members).await.unwrap();
        let policy = L7PolicyCreate {
            name: Some(format!("{tag}-api")),
            listener_id: Some(listener.id.clone()),
            action: "REDIRECT_TO_POOL".into(),
            redirect_pool_id: Some(pool2.id.clone()),
            position: Some(1),
            rules: vec![
                L7RuleCreate {
                    rule_type: "HOST_NAME".into(),
                    compare_type: "EQUAL_TO".into(),
                    value: "www.example.com".into(),
                    ..Default::default()
                },
                L7RuleCreate {
                    rule_type: "PATH".into(),
                    compare_type: "STARTS_WITH".into(),
                    value: "/api".into(),
                    ..Default::default()
                },
            ],
            tags: vec![tag.clone()],
            ..Default::default()
        };
        let created = o.create_l7policy_with_rules(&policy).await.unwrap();
        let stats = o.session().stats();
        assert!(stats.conflict_retries > before.conflict_retries, "no 409 was survived: {stats:?}");
        assert!(stats.writes >= before.writes + 7, "{stats:?}");
        let active = o.wait_active(&lb.id, WAIT).await.unwrap();
        assert_eq!(active.provisioning_status, "ACTIVE");

        // Read everything back.
        let l = settled_listener(&o, &listener.id).await;
        assert_eq!(l.default_pool_id.as_deref(), Some(pool.id.as_str()));
        assert_eq!((l.protocol.as_str(), l.protocol_port, l.provisioning_status.as_str()), ("HTTP", 80, "ACTIVE"));
        let mut got: Vec<(String, u16, u16)> = o
            .list_members(&pool2.id, &ListQuery::default())
            .await
            .unwrap()
            .into_iter()
            .map(|m| (m.address, m.protocol_port, m.weight))
            .collect();
        got.sort();
        assert_eq!(
            got,
            vec![("10.0.0.11".into(), 8080, 11), ("10.0.0.12".into(), 8080, 12), ("10.0.0.13".into(), 8080, 13)]
        );
        let p = o.get_l7policy(&created.id).await.unwrap();
        assert_eq!(
            (&*p.action, p.position, p.redirect_pool_id.as_deref()),
            ("REDIRECT_TO_POOL", 1, Some(pool2.id.as_str()))
        );
        let mut rules: Vec<(String, String, String)> = o
            .list_l7rules(&p.id, &ListQuery::default())
            .await
            .unwrap()
            .into_iter()
            .map(|r| (r.rule_type, r.compare_type, r.value))
            .collect();
        rules.sort();
        assert_eq!(
            rules,
            vec![
                ("HOST_NAME".into(), "EQUAL_TO".into(), "www.example.com".into()),
                ("PATH".into(), "STARTS_WITH".into(), "/api".into())
            ]
        );

        // Batch update: keep m12, add m14, drop m11 and m13.
        let keep = vec![
            members[1].clone(),
            MemberCreate { address: "10.0.0.14".into(), protocol_port: 8080, ..Default::default() },
        ];
        o.replace_members(&pool2.id, &keep).await.unwrap();
        o.wait_active(&lb.id, WAIT).await.unwrap();
        let mut addrs: Vec<String> =
            o.list_members(&pool2.id, &ListQuery::default()).await.unwrap().into_iter().map(|m| m.address).collect();
        addrs.sort();
        assert_eq!(addrs, vec!["10.0.0.12", "10.0.0.14"]);

        // Rule and policy updates, health monitor CRUD.
        let rule_id = &p.rules[0].id;
        let upd = L7RuleCreate {
            rule_type: "PATH".into(),
            compare_type: "STARTS_WITH".into(),
            value: "/v2".into(),
            ..Default::default()
        };
        o.update_l7rule(&p.id, rule_id, &upd).await.unwrap();
        let hm = o
            .create_health_monitor(&HealthMonitorCreate {
                pool_id: Some(pool.id.clone()),
                monitor_type: "HTTP".into(),
                delay: 5,
                timeout: 3,
                max_retries: 2,
                url_path: Some("/healthz".into()),
                ..Default::default()
            })
            .await
            .unwrap();
        o.update_health_monitor(&hm.id, &HealthMonitorUpdate { delay: Some(7), ..Default::default() }).await.unwrap();
        o.wait_active(&lb.id, WAIT).await.unwrap();
        assert_eq!(o.get_l7rule(&p.id, rule_id).await.unwrap().value, "/v2");
        let hm = o.get_health_monitor(&hm.id).await.unwrap();
        assert_eq!((hm.delay, hm.url_path.as_deref()), (7, Some("/healthz")));
        assert_eq!(o.get_pool(&pool.id).await.unwrap().healthmonitor_id.as_deref(), Some(hm.id.as_str()));
        o.delete_health_monitor(&hm.id).await.unwrap();
        o.wait_active(&lb.id, WAIT).await.unwrap();
        assert!(o.get_health_monitor(&hm.id).await.unwrap_err().is_not_found());
        o.delete_health_monitor(&hm.id).await.unwrap(); // 404 on delete is success

        // 400 with Octavia's reason.
        let bad = L7RuleCreate {
            rule_type: "PATH".into(),
            compare_type: "EQUAL_TO".into(),
            value: "/a b".into(),
            ..Default::default()
        };
        let err = o.create_l7rule(&p.id, &bad).await.unwrap_err();
        assert_eq!((err.status(), err.label()), (Some(400), "octavia_4xx"), "{err}");
        let msg = err.to_string();
        assert!(
            msg.contains("POST /v2/lbaas/l7policies/") && msg.contains("HTTP 400") && !msg.contains("empty body"),
            "{msg}"
        );
        println!("400 surfaced as: {msg}");

        // Inline rules on a standalone policy create: what does this Octavia say?
        o.wait_active(&lb.id, WAIT).await.unwrap();
        let inline = L7PolicyCreate {
            name: Some(format!("{tag}-inline")),
            redirect_pool_id: Some(pool.id.clone()),
            position: Some(2),
            ..policy.clone()
        };
        match o.create_l7policy(&inline).await {
            Ok(p) => println!("inline rules on policy create: accepted with {} rules", p.rules.len()),
            Err(e) => println!("inline rules on policy create: {e}"),
        }
        let inline_pool = PoolCreate {
            name: Some(format!("{tag}-inline")),
            loadbalancer_id: Some(lb.id.clone()),
            protocol: "HTTP".into(),
            lb_algorithm: "ROUND_ROBIN".into(),
            members: vec![MemberCreate { address: "10.0.0.50".into(), protocol_port: 80, ..Default::default() }],
            ..Default::default()
        };
        match o.create_pool(&inline_pool).await {
            Ok(p) => println!("inline members on pool create: accepted with {} members", p.members.len()),
            Err(e) => println!("inline members on pool create: {e}"),
        }
        o.wait_active(&lb.id, WAIT).await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn filters_tags_and_pagination() {
    if !enabled() {
        return;
    }
    let c = cloud().await;
    let gets = Arc::new(AtomicU64::new(0));
    let g = gets.clone();
    let observer: Observer = Arc::new(move |r: &RequestRecord| {
        if r.method == Method::GET && r.kind == "pools" {
            g.fetch_add(1, Ordering::Relaxed);
        }
    });
    let session = Session::with_observer(admin_opts(), observer).unwrap();
    let o = Octavia::new(session, OctaviaOptions::default());
    let o2 = o.clone();
    with_lb(&c, "filters", &[], |lb| async move {
        let o = o2;
        let t = lb.name.clone();
        let (a, b) = (format!("{t}-a"), format!("{t}-b"));
        for i in 0..5 {
            let mut tags = vec![a.clone()];
            if i % 2 == 0 {
                tags.push(b.clone());
            }
            o.create_pool(&PoolCreate {
                name: Some(format!("{t}-p{i}")),
                loadbalancer_id: Some(lb.id.clone()),
                protocol: "HTTP".into(),
                lb_algorithm: "ROUND_ROBIN".into(),
                tags,
                ..Default::default()
            })
            .await
            .unwrap();
        }
        // A pool without the tag, named to sort after the tagged ones: a next page that lost the
        // first page's `tags` filter (Octavia's next links keep only the paging parameters) lists it.
        o.create_pool(&PoolCreate {
            name: Some(format!("{t}-untagged")),
            loadbalancer_id: Some(lb.id.clone()),
            protocol: "HTTP".into(),
            lb_algorithm: "ROUND_ROBIN".into(),
            ..Default::default()
        })
        .await
        .unwrap();
        o.wait_active(&lb.id, WAIT).await.unwrap();
        let names = |v: Vec<Pool>| {
            let mut n: Vec<String> = v.into_iter().map(|p| p.name).collect();
            n.sort();
            n
        };
        assert_eq!(names(o.list_pools(&ListQuery::name(format!("{t}-p3"))).await.unwrap()), vec![format!("{t}-p3")]);
        let both = o.list_pools(&ListQuery::tags([a.clone(), b.clone()])).await.unwrap();
        assert_eq!(names(both), vec![format!("{t}-p0"), format!("{t}-p2"), format!("{t}-p4")]);
        let any = ListQuery { tags_any: vec![b.clone(), "fct-clients-nothing".into()], ..Default::default() };
        assert_eq!(o.list_pools(&any).await.unwrap().len(), 3);
        let not = ListQuery {
            not_tags: vec![b.clone()],
            loadbalancer_id: Some(lb.id.clone()),
            ..ListQuery::tags([a.clone()])
        };
        assert_eq!(o.list_pools(&not).await.unwrap().len(), 2);

        let before = gets.load(Ordering::Relaxed);
        let q = ListQuery { limit: Some(2), fields: vec!["id".into(), "name".into()], ..ListQuery::tags([a.clone()]) }
            // An explicit unique sort key: with the default sort (created_at) pools created within
            // the same second were once returned twice across pages (7 rows for 5 pools).
            .with("sort", "name:asc");
        let paged = o.list_pools(&q).await.unwrap();
        let pages = gets.load(Ordering::Relaxed) - before;
        let mut unique: Vec<&str> = paged.iter().map(|p| p.id.as_str()).collect();
        unique.sort();
        unique.dedup();
        let names: Vec<&str> = paged.iter().map(|p| p.name.as_str()).collect();
        assert_eq!((paged.len(), unique.len()), (5, 5), "{names:?}");
        assert!(pages >= 3, "5 pools with limit 2 need 3 pages, got {pages}");
        assert!(paged.iter().all(|p| p.provisioning_status.is_empty()), "fields= must survive next links");
        println!("pagination: 5 pools in {pages} GETs");
    })
    .await;
}

#[tokio::test]
async fn fully_populated_create_and_cascade_delete() {
    if !enabled() {
        return;
    }
    let c = cloud().await;
    let o = &c.octavia;
    let name = unique("graph");
    let member = |i: u8| MemberCreate {
        address: format!("10.0.0.{i}"),
        protocol_port: 8080,
        subnet_id: Some(c.subnet_id.clone()),
        ..Default::default()
    };
    let req = LoadBalancerCreate {
        name: Some(name.clone()),
        vip_subnet_id: Some(c.subnet_id.clone()),
        tags: vec![name.clone()],
        listeners: vec![ListenerCreate {
            name: Some(format!("{name}-http")),
            protocol: "HTTP".into(),
            protocol_port: 80,
            default_pool: Some(NameRef { name: format!("{name}-default") }),
            l7policies: vec![L7PolicyCreate {
                name: Some(format!("{name}-api")),
                action: "REDIRECT_TO_POOL".into(),
                redirect_pool: Some(NameRef { name: format!("{name}-api") }),
                position: Some(1),
                rules: vec![
                    L7RuleCreate {
                        rule_type: "HOST_NAME".into(),
                        compare_type: "EQUAL_TO".into(),
                        value: "a.example.com".into(),
                        ..Default::default()
                    },
                    L7RuleCreate {
                        rule_type: "PATH".into(),
                        compare_type: "STARTS_WITH".into(),
                        value: "/api".into(),
                        ..Default::default()
                    },
                ],
                ..Default::default()
            }],
            ..Default::default()
        }],
        pools: vec![
            PoolCreate {
                name: Some(format!("{name}-default")),
                protocol: "HTTP".into(),
                lb_algorithm: "ROUND_ROBIN".into(),
                members: vec![member(21)],
                ..Default::default()
            },
            PoolCreate {
                name: Some(format!("{name}-api")),
                protocol: "HTTP".into(),
                lb_algorithm: "ROUND_ROBIN".into(),
                members: vec![member(31), member(32)],
                healthmonitor: Some(HealthMonitorCreate {
                    monitor_type: "HTTP".into(),
                    delay: 5,
                    timeout: 3,
                    max_retries: 2,
                    url_path: Some("/healthz".into()),
                    ..Default::default()
                }),
                ..Default::default()
            },
        ],
        ..Default::default()
    };
    let t = Instant::now();
    let lb = o.create_load_balancer(&req).await.unwrap();
    let check = async {
        let lb = o.wait_active(&lb.id, WAIT).await.unwrap();
        println!("fully-populated LB ACTIVE after {:?}", t.elapsed());
        assert_eq!((lb.listeners.len(), lb.pools.len()), (1, 2));
        let l = o.get_listener(&lb.listeners[0].id).await.unwrap();
        let pools =
            o.list_pools(&ListQuery { loadbalancer_id: Some(lb.id.clone()), ..Default::default() }).await.unwrap();
        let by_name = |n: &str| pools.iter().find(|p| p.name == format!("{name}-{n}")).unwrap().clone();
        let (default, api) = (by_name("default"), by_name("api"));
        assert_eq!(l.default_pool_id.as_deref(), Some(default.id.as_str()));
        assert_eq!(l.l7policies.len(), 1);
        let p = o.get_l7policy(&l.l7policies[0].id).await.unwrap();
        assert_eq!((p.redirect_pool_id.as_deref(), p.rules.len()), (Some(api.id.as_str()), 2));
        assert_eq!(o.list_members(&api.id, &ListQuery::default()).await.unwrap().len(), 2);
        assert_eq!(o.list_members(&default.id, &ListQuery::default()).await.unwrap().len(), 1);
        assert!(api.healthmonitor_id.is_some());
        // Cascade delete removes the children too.
        o.delete_load_balancer(&lb.id, true).await.unwrap();
        o.wait_deleted(&lb.id, WAIT).await.unwrap();
        assert!(o.get_pool(&api.id).await.unwrap_err().is_not_found());
        assert!(o.get_listener(&l.id).await.unwrap_err().is_not_found());
    };
    let outcome = AssertUnwindSafe(check).catch_unwind().await;
    cleanup_lb(&c, &lb.id).await;
    if let Err(p) = outcome {
        std::panic::resume_unwind(p);
    }
}

#[tokio::test]
async fn floating_ip_on_vip_port() {
    if !enabled() {
        return;
    }
    let c = cloud().await;
    let n = c.neutron.clone();
    let subnet_id = c.subnet_id.clone();
    with_lb(&c, "fip", &[], |lb| async move {
        let vip_port = lb.vip_port_id.clone().expect("vip_port_id");
        let port = n.get_port(&vip_port).await.unwrap();
        assert_eq!(port.fixed_ips[0].subnet_id, subnet_id);
        assert_eq!(Some(port.fixed_ips[0].ip_address.clone()), lb.vip_address);
        let subnet = n.get_subnet(&subnet_id).await.unwrap();
        assert_eq!(n.get_network(&subnet.network_id).await.unwrap().id, port.network_id);
        let public = n.list_networks(&ListQuery::name(env("KURYR_FIP_NETWORK", "public"))).await.unwrap();
        let public = public.first().expect("network public");
        assert!(public.external);
        let fip = n
            .create_floating_ip(&FloatingIpCreate {
                floating_network_id: public.id.clone(),
                description: Some(lb.name.clone()),
                ..Default::default()
            })
            .await
            .unwrap();
        let found = n.list_floating_ips(&ListQuery::default().with("description", &lb.name)).await.unwrap();
        assert_eq!(found.iter().map(|f| f.id.as_str()).collect::<Vec<_>>(), vec![fip.id.as_str()]);
        let assoc = n.associate_floating_ip(&fip.id, &vip_port).await.unwrap();
        assert_eq!(
            (assoc.port_id.as_deref(), assoc.fixed_ip_address.clone()),
            (Some(vip_port.as_str()), lb.vip_address.clone())
        );
        let by_port = n.list_floating_ips(&ListQuery::default().with("port_id", &vip_port)).await.unwrap();
        assert_eq!(by_port.len(), 1);
        let by_addr = n
            .list_floating_ips(&ListQuery::default().with("floating_ip_address", &fip.floating_ip_address))
            .await
            .unwrap();
        assert_eq!(by_addr[0].id, fip.id);
        let dis = n.disassociate_floating_ip(&fip.id).await.unwrap();
        assert_eq!(dis.port_id, None);
        n.delete_floating_ip(&fip.id).await.unwrap();
        assert!(n.get_floating_ip(&fip.id).await.unwrap_err().is_not_found());
        n.delete_floating_ip(&fip.id).await.unwrap();
    })
    .await;
}

/// A certificate as the controller will store it: a PKCS#12 bundle from an rcgen certificate, as
/// an opaque Barbican secret created with the kuryr.conf user, found again by its name prefix,
/// tagged with metadata, its read ACL set, used by a TERMINATED_HTTPS listener (Octavia reads it
/// from Barbican), then deleted (twice: the second is a 404 = done).
#[tokio::test]
async fn barbican_pkcs12_secret_lifecycle() {
    if !enabled() {
        return;
    }
    let conf = env("KURYR_CONFIG_FILE", "/tmp/ostack/etc/kuryr/kuryr.conf");
    let settings = kuryr_l7_router::config::load(&[conf.into()], Vec::new()).unwrap().settings;
    let session = Session::new(kuryr_l7_router::wiring::auth_options(&settings)).unwrap();
    let user_id = session.authenticate().await.expect("kuryr.conf credentials").user_id;
    let b = Barbican::new(session);

    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["www.example.com".to_string()]).unwrap().self_signed(&key).unwrap();
    let parsed = kuryr_l7_router::certificate::ParsedCertificate::from_pem(
        cert.pem().as_bytes(),
        key.serialize_pem().as_bytes(),
    )
    .unwrap();
    let prefix = unique("tls");
    let name = format!("{prefix}-{}", parsed.content_id());
    let secret_ref = b.create_secret(&name, &parsed.pkcs12().unwrap()).await.unwrap();

    let check = async {
        let info = b.get_secret(&secret_ref).await.unwrap();
        assert_eq!((info.status.as_str(), info.secret_type.as_str()), ("ACTIVE", "opaque"));
        assert_eq!(info.content_types.get("default").map(String::as_str), Some("application/octet-stream"));
        assert_eq!(info.name.as_deref(), Some(name.as_str()));

        let found = b.list_secrets(&prefix).await.unwrap();
        assert_eq!(found.iter().map(|s| s.secret_ref.as_str()).collect::<Vec<_>>(), [secret_ref.as_str()]);
        assert!(b.list_secrets(&format!("{prefix}-no-such")).await.unwrap().is_empty());

        let meta: std::collections::BTreeMap<String, String> = [
            ("kuryr-cluster".to_string(), settings.kubernetes.cluster_name.clone()),
            ("kuryr-owner".to_string(), "default/www-tls".to_string()),
            ("kuryr-sha256".to_string(), parsed.sha256_fingerprint().to_string()),
        ]
        .into();
        b.set_metadata(&secret_ref, &meta).await.unwrap();
        assert_eq!(b.get_metadata(&secret_ref).await.unwrap(), meta);

        assert_eq!(b.get_acl(&secret_ref).await.unwrap(), barbican::ReadAcl::default(), "no ACL yet");
        b.set_read_acl(&secret_ref, std::slice::from_ref(&user_id), true).await.unwrap();
        let acl = b.get_acl(&secret_ref).await.unwrap();
        assert!(acl.project_access && acl.users == [user_id.clone()], "{acl:?}");

        // Octavia (barbican_cert_manager) loads the bundle: a TERMINATED_HTTPS listener on it goes ACTIVE.
        let c = cloud().await;
        let (octavia, session, secret_ref) = (c.octavia.clone(), c.session.clone(), secret_ref.clone());
        with_lb(&c, "tls", &[], |lb| async move {
            let body = json!({"listener": {"name": unique("tls-listener"), "loadbalancer_id": lb.id,
                "protocol": "TERMINATED_HTTPS", "protocol_port": 443, "default_tls_container_ref": secret_ref}});
            let req = Request::new(Service::LoadBalancer, Method::POST, "/v2/lbaas/listeners").json(body);
            let created: Value = session.send_json(&req).await.expect("Octavia accepts the PKCS#12 secret");
            let listener_id = created["listener"]["id"].as_str().unwrap().to_string();
            octavia.wait_active(&lb.id, WAIT).await.unwrap();
            let l = settled_listener(&octavia, &listener_id).await;
            assert_eq!((l.protocol.as_str(), l.provisioning_status.as_str()), ("TERMINATED_HTTPS", "ACTIVE"));
        })
        .await;
    };
    let outcome = AssertUnwindSafe(check).catch_unwind().await;
    b.delete_secret(&secret_ref).await.unwrap();
    if let Err(p) = outcome {
        std::panic::resume_unwind(p);
    }
    assert!(b.get_secret(&secret_ref).await.unwrap_err().is_not_found());
    b.delete_secret(&secret_ref).await.expect("already gone is fine");
    assert!(b.list_secrets(&prefix).await.unwrap().is_empty());
}

/// The start-up preflight on the local stack (Zed: API 2.26; 2025.1: 2.30): the kuryr.conf user
/// (admin) passes, the API version and its features are reported, HSTS exactly from 2.27 on;
/// `demo2` (member + load-balancer_member, no `creator`) is reported as missing `creator`: a
/// warning, an error once TLS is used. Reads only.
#[tokio::test]
async fn preflight_on_the_local_stack() {
    use kuryr_l7_router::openstack::preflight::{self, Feature, Severity};
    if !enabled() {
        return;
    }
    let conf = env("KURYR_CONFIG_FILE", "/tmp/ostack/etc/kuryr/kuryr.conf");
    let settings = kuryr_l7_router::config::load(&[conf.into()], Vec::new()).unwrap().settings;
    let (octavia, _) = kuryr_l7_router::wiring::clients(&settings).unwrap();
    let r = preflight::run(&octavia, &settings.octavia_defaults.provider, true).await.unwrap();
    println!("{}", r.render());
    assert!(r.findings.is_empty(), "admin: nothing to report: {:?}", r.findings);
    let v = r.api_version.expect("a version");
    assert!(v >= preflight::ApiVersion::new(2, 26), "Zed is 2.26, 2025.1 2.30: {v}");
    if std::env::var("OPENSTACK_RELEASE").as_deref() == Ok("2025.1") {
        assert_eq!(v, preflight::ApiVersion::new(2, 30), "Octavia 16's newest API version");
    }
    assert!(r.has(Feature::Tags) && r.has(Feature::RedirectHttpCode) && r.has(Feature::AdditiveOnly));
    assert_eq!(r.has(Feature::Hsts), v >= preflight::ApiVersion::new(2, 27), "HSTS is gated by 2.27: {}", r.summary());
    assert!(r.providers.iter().any(|p| p == "amphora"), "{:?}", r.providers);
    assert!(r.summary().contains(&format!("Octavia API {v}")), "{}", r.summary());
    let stats = octavia.session().stats();
    assert_eq!(stats.writes, 0, "the preflight only reads");

    let demo2 = Octavia::new(Session::new(opts("demo2", "demo2", "demo")).unwrap(), OctaviaOptions::default());
    let r = preflight::run(&demo2, "amphora", false).await.unwrap();
    println!("{}", r.render());
    assert!(r.refusal().is_none(), "demo2 may write load balancers: {:?}", r.findings);
    let creator: Vec<_> = r.findings.iter().filter(|f| f.message.contains("`creator`")).collect();
    assert_eq!(creator.len(), 1, "{:?}", r.findings);
    assert_eq!(creator[0].severity, Severity::Warning);
    assert_eq!(r.findings.len(), 1, "only creator is missing: {:?}", r.findings);
    let r = preflight::run(&demo2, "amphora", true).await.unwrap();
    assert!(r.refusal().is_some_and(|m| m.contains("Barbican's `creator` role")), "{:?}", r.findings);
}
