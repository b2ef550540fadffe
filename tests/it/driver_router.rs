//! The fully-populated create body (pure): the JSON shape verified on the real Octavia
//! (docs/octavia-fully-populated.md): pools at load-balancer level with their members, referenced
//! by name from the listener's default pool and from the policies; tags on every object.

use kuryr_l7_router::driver::ownership::Ownership;
use kuryr_l7_router::driver::populated_create;
use kuryr_l7_router::driver::spec::RouterSpec;
use kuryr_l7_router::model::HealthMonitorSpec;
use kuryr_l7_router::model::{CompareType, DesiredRouter, KubeRef, Member, Policy, Pool, Rule, RuleType};
use serde_json::json;

fn spec(hm: Option<HealthMonitorSpec>) -> RouterSpec {
    RouterSpec {
        vip_subnet_id: Some("subnet-1".into()),
        availability_zone: Some("az-1".into()),
        provider: Some("amphora".into()),
        health_monitor: hm,
        ..RouterSpec::for_tests("router")
    }
}

fn desired() -> DesiredRouter {
    let pool = |name: &str, ip: &str| Pool {
        name: name.into(),
        service: KubeRef::new("Service", "shop", name.trim_start_matches("shop_")),
        service_port: "http".into(),
        lb_algorithm: "ROUND_ROBIN".into(),
        members: vec![Member {
            address: ip.parse().unwrap(),
            protocol_port: 8080,
            weight: 3,
            backup: false,
            zone: Some("az-1".into()),
            target: Some("web-0".into()),
            monitor_port: None,
        }],
        weighting: "even".into(),
        split: Vec::new(),
        member_mode: Default::default(),
    };
    DesiredRouter {
        policies: vec![Policy {
            name: "ingress:shop/web:a.com:Exact:/x".into(),
            position: 1,
            pool: "shop_api".into(),
            rules: vec![Rule {
                rule_type: RuleType::Path,
                compare_type: CompareType::EqualTo,
                value: "/x".into(),
                invert: false,
                key: None,
            }],
            owner: KubeRef::new("Ingress", "shop", "web"),
            description: "a.com Exact /x".into(),
            redirect: None,
        }],
        default_pool: Some("shop_web".into()),
        default_pool_owners: vec![],
        pools: [
            ("shop_api".to_string(), pool("shop_api", "10.0.0.5")),
            ("shop_web".to_string(), pool("shop_web", "10.0.0.6")),
        ]
        .into_iter()
        .collect(),
        warnings: vec![],
        ..Default::default()
    }
}

#[test]
fn populated_create_has_the_verified_shape() {
    let body = serde_json::to_value(populated_create(&spec(None), "subnet-1", &desired())).unwrap();
    let router_tags = json!(["kuryr-l7-router", "cluster:c1"]);
    assert_eq!(body["name"], "router");
    assert_eq!(body["vip_subnet_id"], "subnet-1");
    assert_eq!(body["availability_zone"], "az-1");
    assert_eq!(body["provider"], "amphora");
    assert_eq!(body["tags"], router_tags);
    let listener = &body["listeners"][0];
    assert_eq!((listener["protocol"].as_str(), listener["protocol_port"].as_u64()), (Some("HTTP"), Some(80)));
    assert_eq!(listener["default_pool"], json!({"name": "shop_web"}));
    assert!(listener.get("loadbalancer_id").is_none(), "no ids inside the graph");
    let policy = &listener["l7policies"][0];
    assert_eq!(policy["redirect_pool"], json!({"name": "shop_api"}));
    assert!(policy.get("redirect_pool_id").is_none());
    assert_eq!(policy["position"], 1);
    assert_eq!(policy["tags"], json!(["kuryr-l7-router", "cluster:c1", "ingress:shop/web"]));
    assert_eq!(
        policy["rules"],
        json!([{"type": "PATH", "compare_type": "EQUAL_TO", "value": "/x",
                "tags": ["kuryr-l7-router", "cluster:c1", "ingress:shop/web"]}])
    );
    let pools = body["pools"].as_array().unwrap();
    assert_eq!(pools.len(), 2);
    let api = pools.iter().find(|p| p["name"] == "shop_api").unwrap();
    assert_eq!(api["tags"], json!(["kuryr-l7-router", "cluster:c1", "service:shop/api"]));
    assert_eq!(api["members"][0]["address"], "10.0.0.5");
    assert_eq!(api["members"][0]["weight"], 3);
    assert_eq!(api["members"][0]["name"], "web-0");
    assert!(api.get("healthmonitor").is_none());
    assert!(api.get("loadbalancer_id").is_none());
}

#[test]
fn populated_create_carries_the_health_monitor_and_skips_policies_without_pool() {
    let hm = HealthMonitorSpec { url_path: Some("/healthz".into()), ..HealthMonitorSpec::default() };
    let mut want = desired();
    want.policies[0].pool = "missing".into();
    want.default_pool = Some("missing".into());
    let body = serde_json::to_value(populated_create(&spec(Some(hm)), "subnet-1", &want)).unwrap();
    assert!(body["listeners"][0].get("l7policies").is_none(), "a policy whose pool is absent would be a 400");
    assert!(body["listeners"][0].get("default_pool").is_none());
    let hm = &body["pools"][0]["healthmonitor"];
    assert_eq!(
        (hm["type"].as_str(), hm["url_path"].as_str(), hm["http_method"].as_str()),
        (Some("HTTP"), Some("/healthz"), Some("GET"))
    );
}

/// Issue 14 §5: `[neutron_defaults] resource_tags` are on every object of the create body, after
/// our own tags; `member_mode = L2` puts `subnet_id` = `pod_subnet` on every member, L3 none.
#[test]
fn resource_tags_and_l2_member_subnet_in_the_create_body() {
    let extra = ["team=edge".to_string(), "env:prod".to_string()];
    let l2 = RouterSpec {
        ownership: Ownership::new("c1").with_extra_tags(&extra),
        member_subnet: Some("pod-subnet-1".into()),
        ..spec(None)
    };
    let body = serde_json::to_value(populated_create(&l2, "subnet-1", &desired())).unwrap();
    let with_extra = |own: &[&str]| -> serde_json::Value {
        json!(own.iter().copied().chain(["team=edge", "env:prod"]).collect::<Vec<_>>())
    };
    assert_eq!(body["tags"], with_extra(&["kuryr-l7-router", "cluster:c1"]));
    assert_eq!(body["listeners"][0]["tags"], with_extra(&["kuryr-l7-router", "cluster:c1"]));
    let policy = &body["listeners"][0]["l7policies"][0];
    assert_eq!(policy["tags"], with_extra(&["kuryr-l7-router", "cluster:c1", "ingress:shop/web"]));
    assert_eq!(policy["rules"][0]["tags"], policy["tags"]);
    for pool in body["pools"].as_array().unwrap() {
        let svc = format!("service:shop/{}", pool["name"].as_str().unwrap().trim_start_matches("shop_"));
        assert_eq!(pool["tags"], with_extra(&["kuryr-l7-router", "cluster:c1", &svc]));
        let member = &pool["members"][0];
        assert_eq!(member["subnet_id"], "pod-subnet-1", "{member}");
        assert_eq!(member["tags"], pool["tags"]);
    }
    // L3 (the default): no subnet_id on any member.
    let body = serde_json::to_value(populated_create(&spec(None), "subnet-1", &desired())).unwrap();
    assert!(body["pools"].as_array().unwrap().iter().all(|p| p["members"][0].get("subnet_id").is_none()), "{body}");
}

/// In a batch member update, our members go on the L2 subnet; a foreign member carried over keeps
/// what it has (no `subnet_id` forced on it).
#[test]
fn l2_subnet_only_on_our_members_of_a_batch_update() {
    use kuryr_l7_router::driver::member_body;
    use kuryr_l7_router::driver::plan::MemberSpec;
    let l2 = RouterSpec { member_subnet: Some("pod-subnet-1".into()), ..spec(None) };
    let member = |tags: Vec<String>| MemberSpec {
        name: "m".into(),
        address: "10.0.0.5".parse().unwrap(),
        protocol_port: 8080,
        weight: 1,
        backup: false,
        admin_state_up: true,
        monitor_port: None,
        tags: tags.into(),
    };
    let ours = member(Ownership::new("c1").tags_for(&KubeRef::new("Service", "shop", "web")));
    assert_eq!(member_body(&l2, &ours).subnet_id.as_deref(), Some("pod-subnet-1"));
    assert_eq!(member_body(&l2, &member(vec!["someone-else".into()])).subnet_id, None);
    assert_eq!(member_body(&spec(None), &ours).subnet_id, None);
}
