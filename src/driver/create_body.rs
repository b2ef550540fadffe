//! The create bodies the driver sends (pure, tested): the fully-populated create of a brand-new
//! router (listener, pools, members, health monitors, policies and rules in one call) and the
//! bodies of the single objects the planned writes create or update (`execute::write_one` only
//! resolves the ids they name and sends them).

use super::listener_plan::http_listener_create;
use super::plan::{
    MemberSpec, PolicyAction, PoolRef, PrefixRedirect, UrlRedirect, compare_type_str, member_spec, rule_type_str,
};
use super::spec::RouterSpec;
use crate::model::HealthMonitorSpec;
use crate::model::{DesiredRouter, Policy, RedirectTarget, Rule};
use crate::openstack::octavia_requests::{
    HealthMonitorCreate, HealthMonitorUpdate, L7PolicyCreate, L7PolicyUpdate, L7RuleCreate, ListenerCreate,
    ListenerUpdate, LoadBalancerCreate, MemberCreate, NameRef, PoolCreate, PoolUpdate,
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

/// The body of a planned health-monitor create on the pool `pool_id`.
pub(crate) fn planned_health_monitor_create(
    spec: &HealthMonitorSpec,
    pool_id: String,
    tags: &[String],
) -> HealthMonitorCreate {
    HealthMonitorCreate { pool_id: Some(pool_id), tags: tags.to_vec(), ..health_monitor_create(spec) }
}

/// The body of a planned health-monitor update: what [`health_monitor_create`] sets that an
/// update may change.
pub(crate) fn health_monitor_update(spec: &HealthMonitorSpec) -> HealthMonitorUpdate {
    HealthMonitorUpdate {
        delay: Some(spec.delay),
        timeout: Some(spec.timeout),
        max_retries: Some(spec.max_retries),
        url_path: spec.url_path.clone(),
        expected_codes: spec.expected_codes.clone(),
        ..HealthMonitorUpdate::default()
    }
}

/// The body of a planned pool create (an HTTP pool) on the router `lb_id`.
pub(crate) fn pool_create(name: &str, lb_id: &str, lb_algorithm: &str, tags: &[String]) -> PoolCreate {
    PoolCreate {
        name: Some(name.into()),
        loadbalancer_id: Some(lb_id.into()),
        protocol: "HTTP".into(),
        lb_algorithm: lb_algorithm.into(),
        tags: tags.to_vec(),
        ..PoolCreate::default()
    }
}

/// The body of a planned pool update: its algorithm, the one pool setting the plan changes.
pub(crate) fn pool_update(lb_algorithm: &str) -> PoolUpdate {
    PoolUpdate { lb_algorithm: Some(lb_algorithm.into()), ..PoolUpdate::default() }
}

/// The body of a planned listener update of its default pool (`None`: no default pool).
pub(crate) fn default_pool_update(pool_id: Option<String>) -> ListenerUpdate {
    ListenerUpdate { default_pool_id: Some(pool_id), ..ListenerUpdate::default() }
}

/// A planned policy create (`Write::CreatePolicy`), borrowed.
pub(crate) struct PlannedPolicy<'a> {
    pub name: &'a str,
    pub description: &'a str,
    pub position: u32,
    pub admin_state_up: bool,
    pub action: &'a PolicyAction,
    pub tags: &'a [String],
}

impl PlannedPolicy<'_> {
    /// Its create body on the listener `listener_id`. Unlike [`policy_action`] (a fully-populated
    /// create, pools by name), a REDIRECT_TO_POOL names its pool by id: `pool_id` resolves it (a
    /// pool that exists, or one created earlier in the plan).
    pub(crate) fn create_body(&self, listener_id: &str, pool_id: impl Fn(&PoolRef) -> String) -> L7PolicyCreate {
        let (action, redirect_pool_id, redirect_prefix, redirect_url, redirect_http_code) = match self.action {
            PolicyAction::Pool(pool) => ("REDIRECT_TO_POOL", Some(pool_id(pool)), None, None, None),
            PolicyAction::Redirect(r) => ("REDIRECT_PREFIX", None, Some(r.prefix.clone()), None, Some(r.code)),
            PolicyAction::RedirectUrl(r) => ("REDIRECT_TO_URL", None, None, Some(r.url.clone()), Some(r.code)),
        };
        L7PolicyCreate {
            name: Some(self.name.into()),
            description: Some(self.description.into()),
            listener_id: Some(listener_id.into()),
            action: action.into(),
            redirect_pool_id,
            redirect_url,
            redirect_prefix,
            redirect_http_code,
            position: Some(self.position),
            admin_state_up: Some(self.admin_state_up),
            tags: self.tags.to_vec(),
            ..L7PolicyCreate::default()
        }
    }
}

/// The body of a planned policy update (`Write::UpdatePolicy`), its pool resolved to an id. The
/// action goes with its target, so that a route can switch between forwarding and redirecting in
/// place (Octavia clears the other targets); no target: the action stays.
pub(crate) fn policy_update(
    position: Option<u32>,
    pool_id: Option<String>,
    redirect: Option<&PrefixRedirect>,
    redirect_url: Option<&UrlRedirect>,
    admin_state_up: Option<bool>,
) -> L7PolicyUpdate {
    let action = match (&pool_id, redirect, redirect_url) {
        (Some(_), _, _) => Some("REDIRECT_TO_POOL"),
        (_, Some(_), _) => Some("REDIRECT_PREFIX"),
        (_, _, Some(_)) => Some("REDIRECT_TO_URL"),
        _ => None,
    };
    L7PolicyUpdate {
        position,
        redirect_pool_id: pool_id,
        action: action.map(str::to_string),
        redirect_url: redirect_url.map(|r| r.url.clone()),
        redirect_prefix: redirect.map(|r| r.prefix.clone()),
        redirect_http_code: redirect.map(|r| r.code).or(redirect_url.map(|r| r.code)),
        admin_state_up,
        ..L7PolicyUpdate::default()
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
    /// A planned policy names its pool by id, resolved by the executor; a redirect its target.
    #[test]
    fn a_planned_policy_create_names_its_pool_by_id_or_its_redirect() {
        let tags = ["kuryr-l7-router".to_string()];
        let pool = PolicyAction::Pool(PoolRef::New("ns_web".into()));
        let planned = PlannedPolicy {
            name: "p",
            description: "d",
            position: 3,
            admin_state_up: false,
            action: &pool,
            tags: &tags,
        };
        let body = planned.create_body("l1", |r| match r {
            PoolRef::New(name) => format!("id-of-{name}"),
            PoolRef::Id(id) => id.clone(),
        });
        assert_eq!(
            (body.action.as_str(), body.redirect_pool_id.as_deref()),
            ("REDIRECT_TO_POOL", Some("id-of-ns_web"))
        );
        assert_eq!(
            (body.listener_id.as_deref(), body.position, body.admin_state_up),
            (Some("l1"), Some(3), Some(false))
        );
        assert_eq!(
            (body.name.as_deref(), body.description.as_deref(), body.tags),
            (Some("p"), Some("d"), tags.to_vec())
        );
        assert!(body.redirect_pool.is_none() && body.redirect_http_code.is_none());
        let url = PolicyAction::RedirectUrl(UrlRedirect { url: "https://b.example.com/x".into(), code: 307 });
        let body = PlannedPolicy { action: &url, ..planned }.create_body("l1", |_| unreachable!("no pool"));
        assert_eq!(
            (body.action.as_str(), body.redirect_url.as_deref(), body.redirect_http_code, body.redirect_pool_id),
            ("REDIRECT_TO_URL", Some("https://b.example.com/x"), Some(307), None)
        );
        let prefix = PolicyAction::Redirect(PrefixRedirect { prefix: "https://a.example.com".into(), code: 301 });
        let body = PlannedPolicy { action: &prefix, ..planned }.create_body("l1", |_| unreachable!("no pool"));
        assert_eq!(
            (body.action.as_str(), body.redirect_prefix.as_deref(), body.redirect_http_code, body.redirect_url),
            ("REDIRECT_PREFIX", Some("https://a.example.com"), Some(301), None)
        );
    }

    /// An update sets the action with its new target (a route switching between forwarding and
    /// redirecting in place), and leaves it alone when only the position or state changes.
    #[test]
    fn a_planned_policy_update_sets_the_action_with_its_target() {
        let to_pool = policy_update(None, Some("pool-1".into()), None, None, None);
        assert_eq!(
            (to_pool.action.as_deref(), to_pool.redirect_pool_id.as_deref()),
            (Some("REDIRECT_TO_POOL"), Some("pool-1"))
        );
        let prefix = PrefixRedirect { prefix: "https://a.example.com".into(), code: 302 };
        let to_prefix = policy_update(None, None, Some(&prefix), None, None);
        assert_eq!(
            (to_prefix.action.as_deref(), to_prefix.redirect_prefix.as_deref(), to_prefix.redirect_http_code),
            (Some("REDIRECT_PREFIX"), Some("https://a.example.com"), Some(302))
        );
        let url = UrlRedirect { url: "https://b.example.com/x".into(), code: 308 };
        let to_url = policy_update(None, None, None, Some(&url), None);
        assert_eq!(
            (to_url.action.as_deref(), to_url.redirect_url.as_deref(), to_url.redirect_http_code),
            (Some("REDIRECT_TO_URL"), Some("https://b.example.com/x"), Some(308))
        );
        let moved = policy_update(Some(7), None, None, None, Some(true));
        assert_eq!((moved.action, moved.position, moved.admin_state_up), (None, Some(7), Some(true)));
        assert!(moved.redirect_pool_id.is_none() && moved.redirect_http_code.is_none());
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
