//! Table tests of the node-port member translation: nodes × Service × policy → members,
//! weights, health monitor, warnings.

use super::*;
use crate::model::PoolHealthMonitor;
use crate::translate::members::index_nodes;
use serde_json::{Value, json};

/// A node: `zone`, `ready`, extra `spec` and `labels`, InternalIP `ip` (and an IPv6 one).
fn node(name: &str, ip: &str, zone: &str, ready: bool, spec: Value, labels: Value) -> Node {
    let mut l = json!({"topology.kubernetes.io/zone": zone});
    l.as_object_mut().unwrap().extend(labels.as_object().cloned().unwrap_or_default());
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": l},
        "spec": spec,
        "status": {
            "allocatable": {"cpu": "4"},
            "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}],
            "addresses": [{"type": "Hostname", "address": name}, {"type": "ExternalIP", "address": "203.0.113.9"},
                          {"type": "InternalIP", "address": ip}, {"type": "InternalIP", "address": "fd00::1"}]
        }
    }))
    .unwrap()
}

fn ready(name: &str, ip: &str, zone: &str) -> Node {
    node(name, ip, zone, true, json!({}), json!({}))
}

fn service(spec: Value, annotations: Value) -> Service {
    let mut s = json!({"ports": [{"name": "http", "port": 80, "targetPort": 8080, "nodePort": 30080}]});
    s.as_object_mut().unwrap().extend(spec.as_object().cloned().unwrap_or_default());
    serde_json::from_value(
        json!({"metadata": {"name": "web", "namespace": "shop", "annotations": annotations}, "spec": s}),
    )
    .unwrap()
}

fn node_port_svc() -> Service {
    service(json!({"type": "NodePort"}), json!({}))
}

fn port(svc: &Service) -> ServicePort {
    svc.spec.as_ref().unwrap().ports.as_ref().unwrap()[0].clone()
}

fn opts() -> TranslateOptions {
    TranslateOptions { member_mode: MemberMode::NodePort, ..TranslateOptions::default() }
}

/// (address, port, weight, monitor_port) of one member.
type Row = (String, u16, u16, Option<u16>);

/// The members' [`Row`]s, the reason and the warnings' reasons.
fn members_of(svc: &Service, nodes: &[Node], opts: &TranslateOptions) -> (Vec<Row>, String, Vec<String>) {
    let idx = index_nodes(nodes);
    let mut warnings = Vec::new();
    let (members, reason) = node_port_members(svc, &port(svc), &idx, opts, "shop_web", &mut warnings);
    let m = members.iter().map(|m| (m.address.to_string(), m.protocol_port, m.weight, m.monitor_port)).collect();
    (m, reason, warnings.iter().map(|w| w.reason.as_str().to_string()).collect())
}

#[test]
fn members_are_the_ready_schedulable_nodes_on_the_node_port() {
    let cordoned = node("n3", "10.1.0.3", "az-1", true, json!({"unschedulable": true}), json!({}));
    let excluded = node("n4", "10.1.0.4", "az-1", true, json!({}), json!({EXCLUDE_LABEL: ""}));
    let autoscaled = json!({"taints": [{"key": "ToBeDeletedByClusterAutoscaler", "effect": "NoSchedule"}]});
    let draining = node("n5", "10.1.0.5", "az-1", true, autoscaled, json!({}));
    let not_ready = node("n6", "10.1.0.6", "az-1", false, json!({}), json!({}));
    let nodes =
        [ready("n1", "10.1.0.1", "az-1"), ready("n2", "10.1.0.2", "az-2"), cordoned, excluded, draining, not_ready];
    let (members, reason, warnings) = members_of(&node_port_svc(), &nodes, &opts());
    assert_eq!(members, [("10.1.0.1".into(), 30080, 1, None), ("10.1.0.2".into(), 30080, 1, None)]);
    assert!(warnings.is_empty(), "{warnings:?}");
    for why in [
        "n3 cordoned",
        "n4 labelled node.kubernetes.io/exclude-from-external-load-balancers",
        "n5 draining (taint ToBeDeletedByClusterAutoscaler)",
        "n6 not Ready",
    ] {
        assert!(reason.contains(why), "{why}: {reason}");
    }
    assert!(reason.starts_with("even: Service is not zone-aware"), "{reason}");
}

#[test]
fn the_vip_family_picks_the_internal_ip() {
    let v6 = TranslateOptions { vip_family: IpFamily::V6, ..opts() };
    let (members, _, _) = members_of(&node_port_svc(), &[ready("n1", "10.1.0.1", "az-1")], &v6);
    assert_eq!(members, [("fd00::1".into(), 30080, 1, None)]);
    // A node without an InternalIP of the family is left out, and said so.
    let only_v4: Node = serde_json::from_value(json!({"metadata": {"name": "n1"},
        "status": {"conditions": [{"type": "Ready", "status": "True"}], "addresses": [{"type": "InternalIP", "address": "10.1.0.1"}]}})).unwrap();
    let (members, reason, warnings) = members_of(&node_port_svc(), &[only_v4], &v6);
    assert!(members.is_empty());
    assert!(reason.contains("n1 has no InternalIP of the VIP's family"), "{reason}");
    assert_eq!(warnings, ["NoReadyNodes"]);
}

#[test]
fn only_nodes_of_the_node_pool() {
    let pooled = |name: &str, ip: &str, pool: &str| {
        node(name, ip, "az-1", true, json!({}), json!({"apps.openyurt.io/nodepool": pool}))
    };
    let o = TranslateOptions { node_pool: Some("edge".into()), ..opts() };
    let nodes = [pooled("n1", "10.1.0.1", "edge"), pooled("n2", "10.1.0.2", "cloud"), ready("n3", "10.1.0.3", "az-1")];
    let (members, reason, _) = members_of(&node_port_svc(), &nodes, &o);
    assert_eq!(members, [("10.1.0.1".into(), 30080, 1, None)]);
    assert!(!reason.contains("n2"), "nodes of other pools are not news: {reason}");
}

#[test]
fn a_service_without_a_node_port_has_no_members_and_a_warning_with_the_fix() {
    let cases = [
        ("ClusterIP", service(json!({"type": "ClusterIP"}), json!({}))),
        ("unset type", service(json!({}), json!({}))),
        ("LoadBalancer without node ports", {
            let mut s = service(json!({"type": "LoadBalancer", "allocateLoadBalancerNodePorts": false}), json!({}));
            s.spec.as_mut().unwrap().ports.as_mut().unwrap()[0].node_port = None;
            s
        }),
    ];
    for (what, svc) in cases {
        let idx_nodes = [ready("n1", "10.1.0.1", "az-1")];
        let idx = index_nodes(&idx_nodes);
        let mut warnings = Vec::new();
        let (members, _) = node_port_members(&svc, &port(&svc), &idx, &opts(), "shop_web", &mut warnings);
        assert!(members.is_empty(), "{what}");
        assert_eq!(warnings.len(), 1, "{what}");
        let w = &warnings[0];
        assert_eq!((w.reason.as_str(), w.object.to_string()), ("NoNodePort", "Service shop/web".to_string()), "{what}");
        assert!(
            w.message.contains("set spec.type: NodePort") && w.message.contains("HTTP 503"),
            "{what}: {}",
            w.message
        );
    }
    let lb = service(json!({"type": "LoadBalancer"}), json!({}));
    assert_eq!(
        members_of(&lb, &[ready("n1", "10.1.0.1", "az-1")], &opts()).0.len(),
        1,
        "LoadBalancer with a node port"
    );
}

/// Zone weights per node, with Topology Aware Routing's safeguards (zone.rs) applied to nodes.
#[test]
fn node_weights_follow_their_zone_with_the_safeguards() {
    let zoned = TranslateOptions { router_zone: Some("az-1".into()), zone_aware_default: true, ..opts() };
    let nodes = [
        ready("n1", "10.1.0.1", "az-1"),
        ready("n2", "10.1.0.2", "az-1"),
        ready("n3", "10.1.0.3", "az-2"),
        ready("n4", "10.1.0.4", "az-2"),
    ];
    // Balanced CPU: locals get (1 + 0.2) × 2/4 = 60% → 3:3:2:2.
    let (members, reason, _) = members_of(&node_port_svc(), &nodes, &zoned);
    assert_eq!(members.iter().map(|m| m.2).collect::<Vec<_>>(), [3, 3, 2, 2], "{reason}");
    assert!(reason.starts_with("zone-aware: 2 of 4 endpoints in router zone az-1"), "{reason}");
    // One of the two local nodes cordoned: az-1 has 1 of 3 member nodes but half the CPU
    // (node_zones counts every Ready node): an expected overload of 50% > 20%: even weights.
    let mut with_cordon = nodes.clone();
    with_cordon[1] = node("n2", "10.1.0.2", "az-1", true, json!({"unschedulable": true}), json!({}));
    let (members, reason, _) = members_of(&node_port_svc(), &with_cordon, &zoned);
    assert_eq!(members.iter().map(|m| m.2).collect::<Vec<_>>(), [1, 1, 1], "{reason}");
    assert!(reason.contains("expected overload"), "{reason}");
    // trafficDistribution: PreferClose: the local nodes take (nearly) everything.
    let prefer = service(json!({"type": "NodePort", "trafficDistribution": "PreferClose"}), json!({}));
    let (members, reason, _) =
        members_of(&prefer, &nodes, &TranslateOptions { zone_aware_default: false, ..zoned.clone() });
    assert_eq!(members.iter().map(|m| m.2).collect::<Vec<_>>(), [256, 256, 1, 1], "{reason}");
    // No router zone: even.
    let (members, _, _) = members_of(&node_port_svc(), &nodes, &TranslateOptions { router_zone: None, ..zoned });
    assert!(members.iter().all(|m| m.2 == 1));
}

#[test]
fn local_policy_keeps_every_node_and_monitors_the_health_check_node_port() {
    let local = service(
        json!({"type": "LoadBalancer", "externalTrafficPolicy": "Local", "healthCheckNodePort": 32000}),
        json!({}),
    );
    let nodes = [ready("n1", "10.1.0.1", "az-1"), ready("n2", "10.1.0.2", "az-2")];
    let (members, _, _) = members_of(&local, &nodes, &opts());
    assert_eq!(members, [("10.1.0.1".into(), 30080, 1, Some(32000)), ("10.1.0.2".into(), 30080, 1, Some(32000))]);
    let hm = pool_health_monitor(&local, MemberMode::NodePort, &opts(), &mut Vec::new());
    let Some(PoolHealthMonitor::Custom(spec)) = hm else { panic!("{hm:?}") };
    assert_eq!(
        (spec.monitor_type.as_str(), spec.url_path.as_deref(), spec.expected_codes.as_deref()),
        ("HTTP", Some("/healthz"), Some("200"))
    );
    // The annotation's timing is kept; its path and codes are kube-proxy's.
    let timed = service(
        json!({"type": "LoadBalancer", "externalTrafficPolicy": "Local", "healthCheckNodePort": 32000}),
        json!({"kuryr-l7-router.openstack.org/health-monitor": r#"{"path": "/ready", "delay": 10, "timeout": 2}"#}),
    );
    let Some(PoolHealthMonitor::Custom(spec)) =
        pool_health_monitor(&timed, MemberMode::NodePort, &opts(), &mut Vec::new())
    else {
        panic!()
    };
    assert_eq!((spec.delay, spec.timeout, spec.url_path.as_deref()), (10, 2, Some("/healthz")));
    // Type NodePort + Local has no healthCheckNodePort: kube-proxy drops connections on nodes
    // without a local endpoint, so a TCP check on the node port tells them.
    let np_local = service(json!({"type": "NodePort", "externalTrafficPolicy": "Local"}), json!({}));
    let (members, _, _) = members_of(&np_local, &nodes, &opts());
    assert!(members.iter().all(|m| m.3.is_none()));
    let Some(PoolHealthMonitor::Custom(spec)) =
        pool_health_monitor(&np_local, MemberMode::NodePort, &opts(), &mut Vec::new())
    else {
        panic!()
    };
    assert_eq!(spec.monitor_type, "TCP");
}

#[test]
fn cluster_policy_uses_the_annotated_monitor_or_none() {
    let plain = node_port_svc();
    assert_eq!(pool_health_monitor(&plain, MemberMode::NodePort, &opts(), &mut Vec::new()), None);
    let annotated = service(
        json!({"type": "NodePort"}),
        json!({"kuryr-l7-router.openstack.org/health-monitor": r#"{"path": "/ready"}"#}),
    );
    let Some(PoolHealthMonitor::Custom(spec)) =
        pool_health_monitor(&annotated, MemberMode::NodePort, &opts(), &mut Vec::new())
    else {
        panic!()
    };
    assert_eq!(spec.url_path.as_deref(), Some("/ready"));
    // Local in a pod mode: the members are pods, no node health check.
    let local = service(
        json!({"type": "LoadBalancer", "externalTrafficPolicy": "Local", "healthCheckNodePort": 32000}),
        json!({}),
    );
    assert_eq!(pool_health_monitor(&local, MemberMode::L3, &opts(), &mut Vec::new()), None);
}

#[test]
fn the_annotation_switches_l3_and_node_port_only_where_allowed() {
    let annotated = |v: &str| service(json!({"type": "NodePort"}), json!({MEMBER_MODE_ANNOTATION: v}));
    let allowed =
        |mode| TranslateOptions { member_mode: mode, member_mode_annotation: true, ..TranslateOptions::default() };
    // (instance mode, allowed, annotation) → (mode, warning?)
    let cases = [
        (MemberMode::L3, true, "NodePort", MemberMode::NodePort, false),
        (MemberMode::L3, true, "nodeport", MemberMode::NodePort, false),
        (MemberMode::NodePort, true, "L3", MemberMode::L3, false),
        (MemberMode::NodePort, true, "NodePort", MemberMode::NodePort, false),
        (MemberMode::L3, false, "NodePort", MemberMode::L3, true),
        (MemberMode::L2, true, "NodePort", MemberMode::L2, true),
        (MemberMode::NodePort, true, "L2", MemberMode::NodePort, true),
        (MemberMode::L3, true, "pods", MemberMode::L3, true),
    ];
    for (instance, allow, value, want, warned) in cases {
        let o = TranslateOptions { member_mode_annotation: allow, ..allowed(instance) };
        let mut warnings = Vec::new();
        let got = service_member_mode(&annotated(value), &o, &mut warnings);
        assert_eq!((got, !warnings.is_empty()), (want, warned), "{instance} allow={allow} {value}");
        if warned {
            assert_eq!(warnings[0].reason.as_str(), "InvalidMemberMode");
            assert!(warnings[0].message.contains("Service shop/web"), "{}", warnings[0].message);
        }
    }
    assert_eq!(service_member_mode(&node_port_svc(), &allowed(MemberMode::L2), &mut Vec::new()), MemberMode::L2);
}

/// What a Node update must trigger: heartbeats nothing, a member-moving change something.
#[test]
fn node_shape_ignores_heartbeats_and_sees_member_changes() {
    let base = ready("n1", "10.1.0.1", "az-1");
    let mut heartbeat = base.clone();
    heartbeat.status.as_mut().unwrap().conditions.as_mut().unwrap()[0].last_heartbeat_time =
        Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(Default::default()));
    heartbeat.metadata.resource_version = Some("2".into());
    assert_eq!(NodeShape::of(&base), NodeShape::of(&heartbeat));
    let changes = [
        node("n1", "10.1.0.1", "az-1", false, json!({}), json!({})),
        node("n1", "10.1.0.1", "az-1", true, json!({"unschedulable": true}), json!({})),
        node(
            "n1",
            "10.1.0.1",
            "az-1",
            true,
            json!({"taints": [{"key": "ToBeDeletedByClusterAutoscaler", "effect": "NoSchedule"}]}),
            json!({}),
        ),
        node("n1", "10.1.0.9", "az-1", true, json!({}), json!({})),
        node("n1", "10.1.0.1", "az-2", true, json!({}), json!({})),
    ];
    for c in changes {
        assert_ne!(NodeShape::of(&base), NodeShape::of(&c), "{c:?}");
    }
}
