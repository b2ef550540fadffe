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

/// A fully-populated create cut to a request body limit ([`populated_create_within`]).
#[derive(Clone, Debug)]
pub struct SizedCreate {
    pub body: LoadBalancerCreate,
    /// The request body's size, as sent.
    pub bytes: usize,
    /// L7 policies in the body, and in the desired router.
    pub policies_sent: usize,
    pub policies_wanted: usize,
    /// Everything of the desired router is in the body (nothing is left to the convergence).
    pub complete: bool,
}

/// The request body of a load balancer create: the body under `loadbalancer`.
pub fn create_body_bytes(body: &LoadBalancerCreate) -> usize {
    serde_json::to_vec(&serde_json::json!({ "loadbalancer": body })).map_or(usize::MAX, |b| b.len())
}

/// [`populated_create`] within `limit` bytes of request body: Octavia's API refuses a larger one
/// with a 413 (oslo.middleware's `max_request_body_size`, 114,688 bytes by default, about 170
/// policies). Over it, the body keeps the listener, the longest prefix of the policies (in
/// position order, so that the positions stay right) that fits, and the pools those and the
/// default pool use; the convergence that follows writes the rest one object at a time. When not
/// even the default pool fits, the listener goes alone.
pub fn populated_create_within(
    spec: &RouterSpec,
    vip_subnet_id: &str,
    desired: &DesiredRouter,
    limit: usize,
) -> SizedCreate {
    let sized = |d: &DesiredRouter| {
        let body = populated_create(spec, vip_subnet_id, d);
        let bytes = create_body_bytes(&body);
        let policies_sent = body.listeners.iter().map(|l| l.l7policies.len()).sum();
        SizedCreate { body, bytes, policies_sent, policies_wanted: 0, complete: false }
    };
    let whole = sized(desired);
    let policies_wanted = whole.policies_sent;
    if whole.bytes <= limit {
        return SizedCreate { policies_wanted, complete: true, ..whole };
    }
    // The body grows with the prefix: the largest prefix that fits, by bisection.
    let (mut fits, mut over) = (None, desired.policies.len());
    let mut low = 0;
    while low < over {
        let mid = (low + over) / 2;
        let candidate = sized(&first_policies(desired, mid));
        if candidate.bytes <= limit {
            low = mid + 1;
            fits = Some(candidate);
        } else {
            over = mid;
        }
    }
    let cut = fits.unwrap_or_else(|| sized(&listener_only(desired)));
    SizedCreate { policies_wanted, ..cut }
}

/// `desired` with its first `n` policies, and only the pools they and the default pool use.
fn first_policies(desired: &DesiredRouter, n: usize) -> DesiredRouter {
    let policies: Vec<Policy> = desired.policies.iter().take(n).cloned().collect();
    let used = |name: &String| desired.default_pool.as_ref() == Some(name) || policies.iter().any(|p| &p.pool == name);
    let pools = desired.pools.iter().filter(|(name, _)| used(name)).map(|(k, v)| (k.clone(), v.clone())).collect();
    DesiredRouter { policies, pools, ..desired.clone() }
}

/// `desired` without a child: the load balancer and its HTTP listener only.
fn listener_only(desired: &DesiredRouter) -> DesiredRouter {
    DesiredRouter { policies: vec![], pools: Default::default(), default_pool: None, ..desired.clone() }
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
        monitor_port: m.monitor_port,
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
    fn routes(n: usize) -> DesiredRouter {
        let mut d = DesiredRouter::default();
        for i in 0..n {
            let pool = format!("ns_web{i}");
            d.policies.push(Policy {
                name: format!("p{i}"),
                position: i as u32 + 1,
                pool: pool.clone(),
                ..policy(None)
            });
            d.pools.insert(pool.clone(), crate::testing::pool(&pool, vec![crate::testing::member("10.1.0.1", 1)]));
        }
        d
    }

    fn sent_policies(c: &SizedCreate) -> Vec<String> {
        c.body.listeners[0].l7policies.iter().map(|p| p.name.clone().unwrap_or_default()).collect()
    }

    #[test]
    fn a_create_over_the_limit_keeps_the_first_policies_and_their_pools() {
        let spec = RouterSpec::for_tests("r");
        let mut want = routes(30);
        want.default_pool = Some("ns_web29".into());
        let whole = populated_create_within(&spec, "s", &want, usize::MAX);
        assert!(whole.complete && whole.policies_sent == 30);
        let cut = populated_create_within(&spec, "s", &want, whole.bytes / 2);
        assert!(!cut.complete && cut.bytes <= whole.bytes / 2, "{} bytes", cut.bytes);
        assert_eq!(cut.policies_wanted, 30);
        // The longest prefix in position order: one more policy would not fit.
        let n = cut.policies_sent;
        assert!((10..30).contains(&n), "{n}");
        assert_eq!(sent_policies(&cut), (0..n).map(|i| format!("p{i}")).collect::<Vec<_>>());
        let more = populated_create(&spec, "s", &first_policies(&want, n + 1));
        assert!(create_body_bytes(&more) > whole.bytes / 2);
        // Their pools and the default pool, no other.
        let mut pools: Vec<_> = cut.body.pools.iter().map(|p| p.name.clone().unwrap_or_default()).collect();
        pools.sort();
        let mut expected: Vec<_> = (0..n).chain([29]).map(|i| format!("ns_web{i}")).collect();
        expected.sort();
        assert_eq!(pools, expected);
        assert_eq!(cut.body.listeners[0].default_pool.as_ref().map(|p| p.name.as_str()), Some("ns_web29"));
    }

    #[test]
    fn a_create_with_no_room_for_a_pool_is_the_listener_alone() {
        let spec = RouterSpec::for_tests("r");
        let mut want = routes(3);
        want.default_pool = Some("ns_web0".into());
        let bare = populated_create(&spec, "s", &listener_only(&want));
        let cut = populated_create_within(&spec, "s", &want, create_body_bytes(&bare));
        assert_eq!((cut.policies_sent, cut.body.pools.len(), cut.complete), (0, 0, false));
        assert!(cut.body.listeners[0].default_pool.is_none());
        assert_eq!(cut.body.listeners.len(), 1, "the listener goes with the load balancer");
    }
}
