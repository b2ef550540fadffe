//! Octavia 16 (OpenStack 2025.1) answers, recorded from the local 2025.1 stack
//! (`OPENSTACK_RELEASE=2025.1 functional/openstack.sh start`; one fully-populated load balancer,
//! each object then read with its GET), parse into our types. Newer releases add fields we do
//! not know (`vip_sg_ids`, `vip_vnic_type`, `additional_vips` on the load balancer, `vnic_type`
//! on members, `hsts_*` on listeners): they must be ignored, never a parse error.

use kuryr_l7_router::openstack::octavia::{HealthMonitor, L7Policy, L7Rule, Listener, LoadBalancer, Member, Pool};
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The object under `key` in tests/fixtures/octavia-2025.1/`file`.json, as raw JSON and parsed.
fn recorded<T: DeserializeOwned>(file: &str, key: &str) -> (Value, T) {
    let path = format!("{}/tests/fixtures/octavia-2025.1/{file}.json", env!("CARGO_MANIFEST_DIR"));
    let body: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let raw = body[key].clone();
    let parsed = serde_json::from_value(raw.clone()).unwrap_or_else(|e| panic!("{file}: {e}"));
    (raw, parsed)
}

#[test]
fn a_load_balancer_with_the_2025_1_vip_fields_parses() {
    let (raw, lb): (_, LoadBalancer) = recorded("loadbalancer", "loadbalancer");
    for new in ["vip_sg_ids", "vip_vnic_type", "additional_vips", "tenant_id"] {
        assert!(raw.get(new).is_some(), "the recorded body carries {new}");
    }
    assert_eq!(lb.id, raw["id"].as_str().unwrap());
    assert_eq!(lb.provisioning_status, "ACTIVE");
    assert_eq!(lb.vip_address.as_deref(), raw["vip_address"].as_str());
    assert_eq!(lb.provider.as_deref(), Some("amphora"));
    assert_eq!((lb.listeners.len(), lb.pools.len()), (1, 1));
    assert_eq!(lb.tags, ["record"]);
}

#[test]
fn listener_pool_member_policy_rule_and_monitor_bodies_parse() {
    let (raw, l): (_, Listener) = recorded("listener", "listener");
    assert!(raw.get("hsts_max_age").is_some(), "2.27's HSTS fields are in the body");
    assert_eq!((l.protocol.as_str(), l.protocol_port), ("HTTP", 80));
    // A listener without client-certificate validation, as the HTTPS listeners' plan reads it.
    assert_eq!(l.client_authentication.as_deref(), Some("NONE"));
    assert_eq!(l.client_ca_tls_container_ref, None);
    assert_eq!(l.l7policies.len(), 1);
    assert!(l.default_pool_id.is_some());

    let (_, p): (_, Pool) = recorded("pool", "pool");
    assert_eq!((&*p.lb_algorithm, p.members.len()), ("ROUND_ROBIN", 1));
    assert!(p.healthmonitor_id.is_some());

    let (raw, m): (_, Member) = recorded("member", "member");
    assert!(raw.get("vnic_type").is_some(), "2.30's member vnic_type is in the body");
    assert_eq!((m.address.as_str(), m.protocol_port, m.weight), ("10.0.0.77", 8080, 3));

    let (_, pol): (_, L7Policy) = recorded("l7policy", "l7policy");
    assert_eq!((&*pol.action, pol.position, pol.rules.len()), ("REDIRECT_TO_POOL", 1, 1));
    assert_eq!(pol.redirect_pool_id, Some(p.id.clone()));

    let (_, r): (_, L7Rule) = recorded("l7rule", "rule");
    assert_eq!(
        (r.rule_type.as_str(), r.compare_type.as_str(), r.value.as_str()),
        ("HOST_NAME", "EQUAL_TO", "a.example.com")
    );

    let (_, hm): (_, HealthMonitor) = recorded("healthmonitor", "healthmonitor");
    assert_eq!((hm.monitor_type.as_str(), hm.url_path.as_deref()), ("HTTP", Some("/healthz")));
    assert_eq!(hm.pools.first().map(|x| x.id.as_str()), Some(p.id.as_str()));
}
