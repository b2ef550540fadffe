//! The create bodies the driver sends (pure, tested): the fully-populated create of a brand-new
//! router (listener, pools, members, health monitors, policies and rules in one call) and the
//! bodies of the single objects the writes create.

use super::listener_plan::http_listener_create;
use super::plan::{MemberSpec, compare_type_str, member_spec, rule_type_str};
use super::spec::RouterSpec;
use crate::model::HealthMonitorSpec;
use crate::model::{DesiredRouter, Policy, RedirectTarget, Rule};
use crate::openstack::octavia_requests::{
    HealthMonitorCreate, L7PolicyCreate, L7RuleCreate, ListenerCreate, LoadBalancerCreate, MemberCreate, NameRef,
    PoolCreate,
};

/// The fully-populated create body of a brand-new router holding `desired`.
pub fn populated_create(spec: &RouterSpec, vip_subnet_id: &str, desired: &DesiredRouter) -> LoadBalancerCreate {
    let own = &spec.ownership;
    let pools = desired
        .pools
        .values()
        .map(|p| {
            let tags = own.tags_for(&p.service);
            let member_tags = super::ownership::Tags::from(tags.clone());
            PoolCreate {
                name: Some(p.name.clone()),
                protocol: "HTTP".into(),
                lb_algorithm: p.lb_algorithm.clone(),
                members: p.members.iter().map(|m| member_body(spec, &member_spec(m, &member_tags))).collect(),
                healthmonitor: super::health_monitor::wanted(
                    &desired.health_monitors,
                    &p.name,
                    None,
                    &spec.diff_options(),
                )
                .map(|h| HealthMonitorCreate { tags: tags.clone(), ..health_monitor_create(&h) }),
                tags,
                ..PoolCreate::default()
            }
        })
        .collect();
    let l7policies = desired
        .policies
        .iter()
        .filter(|p| p.redirect.is_some() || desired.pools.contains_key(&p.pool))
        .map(|p| {
            let tags = own.tags_for(&p.owner);
            L7PolicyCreate {
                name: Some(p.name.clone()),
                description: Some(p.description.clone()),
                position: Some(p.position),
                rules: p.rules.iter().map(|r| rule_create(r, &tags)).collect(),
                tags,
                ..policy_action(p)
            }
        })
        .collect();
    LoadBalancerCreate {
        listeners: vec![ListenerCreate {
            default_pool: desired
                .default_pool
                .as_ref()
                .filter(|d| desired.pools.contains_key(*d))
                .map(|d| NameRef { name: d.clone() }),
            l7policies,
            ..http_listener_create(spec)
        }],
        pools,
        ..bare_create(spec, vip_subnet_id)
    }
}

/// The action part of a policy's create body: REDIRECT_TO_POOL (by pool name, inside a
/// fully-populated create), REDIRECT_PREFIX or REDIRECT_TO_URL with its `redirect_http_code`.
pub(crate) fn policy_action(p: &Policy) -> L7PolicyCreate {
    let Some(r) = &p.redirect else {
        return L7PolicyCreate {
            action: "REDIRECT_TO_POOL".into(),
            redirect_pool: Some(NameRef { name: p.pool.clone() }),
            ..L7PolicyCreate::default()
        };
    };
    let (action, redirect_prefix, redirect_url) = match &r.target {
        RedirectTarget::Prefix(prefix) => ("REDIRECT_PREFIX", Some(prefix.clone()), None),
        RedirectTarget::Url(url) => ("REDIRECT_TO_URL", None, Some(url.clone())),
    };
    L7PolicyCreate {
        action: action.into(),
        redirect_prefix,
        redirect_url,
        redirect_http_code: Some(r.code),
        ..L7PolicyCreate::default()
    }
}

/// The create body of a router without children (VIP only).
pub(crate) fn bare_create(spec: &RouterSpec, vip_subnet_id: &str) -> LoadBalancerCreate {
    LoadBalancerCreate {
        name: Some(spec.name.clone()),
        description: Some("L7 router of kuryr-l7-router: Kubernetes Ingresses as L7 policies".into()),
        vip_subnet_id: Some(vip_subnet_id.into()),
        provider: spec.provider.clone().filter(|p| !p.is_empty()),
        availability_zone: spec.availability_zone.clone(),
        tags: spec.ownership.router_tags(),
        ..LoadBalancerCreate::default()
    }
}

/// The body of a member in a create or batch update: [`member_create`], on the L2 member subnet
/// when one is configured and the member is ours (a foreign member carried over in a batch update
/// keeps what it has).
pub fn member_body(spec: &RouterSpec, m: &MemberSpec) -> MemberCreate {
    let subnet_id = spec.member_subnet.clone().filter(|_| spec.ownership.owns(&m.tags));
    MemberCreate { subnet_id, ..member_create(m) }
}

pub(crate) fn member_create(m: &MemberSpec) -> MemberCreate {
    MemberCreate {
        name: Some(m.name.whole(m.address, m.protocol_port)),
        address: m.address.to_string(),
        protocol_port: m.protocol_port,
        weight: Some(m.weight),
        backup: Some(m.backup),
        admin_state_up: Some(m.admin_state_up),
        tags: m.tags.to_vec(),
        ..MemberCreate::default()
    }
}

pub(crate) fn health_monitor_create(spec: &HealthMonitorSpec) -> HealthMonitorCreate {
    let http = spec.monitor_type.starts_with("HTTP");
    HealthMonitorCreate {
        monitor_type: spec.monitor_type.clone(),
        delay: spec.delay,
        timeout: spec.timeout,
        max_retries: spec.max_retries,
        http_method: http.then(|| "GET".to_string()),
        url_path: spec.url_path.clone().filter(|_| http),
        expected_codes: spec.expected_codes.clone().filter(|_| http),
        ..HealthMonitorCreate::default()
    }
}

/// An L7 rule in Octavia's spelling (a full replacement when used in an update, so `tags` may be
/// empty there).
pub(crate) fn rule_create(r: &Rule, tags: &[String]) -> L7RuleCreate {
    L7RuleCreate {
        rule_type: rule_type_str(r.rule_type).into(),
        compare_type: compare_type_str(r.compare_type).into(),
        key: r.key.clone(),
        value: r.value.clone(),
        invert: r.invert,
        tags: tags.to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{CompareType, KubeRef, PolicyRedirect, RuleType};

    fn policy(redirect: Option<PolicyRedirect>) -> Policy {
        Policy {
            name: "p".into(),
            position: 1,
            pool: "ns_web".into(),
            rules: vec![],
            owner: KubeRef::new("HTTPRoute", "ns", "r"),
            description: String::new(),
            redirect,
        }
    }

    #[test]
    fn a_header_rule_is_sent_with_its_key() {
        let rule = Rule {
            rule_type: RuleType::Header,
            compare_type: CompareType::Regex,
            value: "^canary$".into(),
            invert: false,
            key: Some("X-Env".into()),
        };
        let body = serde_json::to_value(rule_create(&rule, &[])).unwrap();
        assert_eq!(body["type"], "HEADER");
        assert_eq!(body["key"], "X-Env");
        assert_eq!(body["compare_type"], "REGEX");
    }

    #[test]
    fn redirect_policies_carry_their_target_and_code() {
        let prefix = policy_action(&policy(Some(PolicyRedirect {
            target: RedirectTarget::Prefix("https://b.example.com".into()),
            code: 302,
        })));
        assert_eq!(
            (prefix.action.as_str(), prefix.redirect_prefix.as_deref(), prefix.redirect_http_code),
            ("REDIRECT_PREFIX", Some("https://b.example.com"), Some(302))
        );
        assert!(prefix.redirect_pool.is_none() && prefix.redirect_url.is_none());
        let url = policy_action(&policy(Some(PolicyRedirect {
            target: RedirectTarget::Url("https://b.example.com/x".into()),
            code: 307,
        })));
        assert_eq!(
            (url.action.as_str(), url.redirect_url.as_deref(), url.redirect_http_code),
            ("REDIRECT_TO_URL", Some("https://b.example.com/x"), Some(307))
        );
        let pool = policy_action(&policy(None));
        assert_eq!((pool.action.as_str(), pool.redirect_http_code), ("REDIRECT_TO_POOL", None));
        assert_eq!(pool.redirect_pool.map(|p| p.name), Some("ns_web".to_string()));
    }
}
