//! The Service notices: one annotation per router, `kuryr-l7-router.openstack.org/<router>`, that
//! tells each router's Service handler which of its pools the Service's endpoints must fill, and
//! the pure computation of which Services must carry which notice for a desired router.
//!
//! Why an annotation: the Service handler (a Controller on Service) is triggered by the Service's
//! own changes; writing the notice on the Service makes "this Service now feeds pools" an event it
//! sees, survives controller restarts, and is visible to users (`kubectl get svc -o yaml`).
//!
//! Why one key per router: a Service may feed several routers (controller instances for other
//! IngressClasses or node pools). Each instance writes and removes only its own key with a merge
//! patch, so two instances never overwrite each other's notice and each one's Service handler
//! finds its own pools (issue 14 §2). Versions before that wrote one notice under
//! [`NOTICE_ANNOTATION`]; a Sync moves a legacy notice naming our router to our key.

use crate::controller::{ControllerError, NOTICE_ANNOTATION, NOTICE_ANNOTATION_PREFIX};
use crate::model::{DesiredRouter, KubeRef};
use k8s_openapi::api::core::v1::Service;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// The annotation key of `router`'s notice: `kuryr-l7-router.openstack.org/<router>`.
///
/// The name part of an annotation key is at most 63 characters of `[A-Za-z0-9._-]`, starting and
/// ending alphanumeric. A router name (`l7_router_name`) or id (`l7_router_uuid`) that fits is
/// used as is (readable); any other gets its cleaned first 40 characters and 16 hexadecimal
/// digits of its SHA-256 (stable, and distinct per router).
pub fn notice_annotation(router: &str) -> String {
    let alnum = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    let valid = router.len() <= 63
        && alnum(router.chars().next())
        && alnum(router.chars().last())
        && router.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if valid {
        return format!("{NOTICE_ANNOTATION_PREFIX}{router}");
    }
    let cleaned: String = router
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') { c } else { '-' })
        .take(40)
        .collect();
    let cleaned = cleaned.trim_matches(|c: char| !c.is_ascii_alphanumeric());
    let digest = ring::digest::digest(&ring::digest::SHA256, router.as_bytes());
    let hash: String = digest.as_ref()[..8].iter().map(|b| format!("{b:02x}")).collect();
    match cleaned {
        "" => format!("{NOTICE_ANNOTATION_PREFIX}{hash}"),
        c => format!("{NOTICE_ANNOTATION_PREFIX}{c}-{hash}"),
    }
}

/// Value of the `openstack.org/kuryr-l7-router` annotation on a Service.
///
/// Lists are sorted and deduplicated so equal inputs give byte-equal annotations (no spurious
/// patches, no reconcile loops).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServiceNotice {
    /// The router (load balancer name or id) holding the pools.
    pub router: String,
    /// Names of the router pools this Service's ready endpoints must fill.
    pub pools: Vec<String>,
    /// The Ingresses (`namespace/name`) that route to this Service, for users and for cleanup.
    pub ingresses: Vec<String>,
}

impl ServiceNotice {
    /// Parses the annotation value.
    pub fn parse(value: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(value)
    }

    /// The annotation value (compact JSON).
    pub fn to_annotation(&self) -> String {
        serde_json::to_string(self).expect("a struct of strings always serializes")
    }

    /// `router`'s notice on `svc` (under [`notice_annotation`]), if any. A malformed value is an
    /// error (reported as a Warning Event by the caller) rather than silently treated as absent.
    pub fn from_service(svc: &Service, router: &str) -> Result<Option<Self>, ControllerError> {
        Self::under(svc, &notice_annotation(router))
    }

    /// The notice under the legacy single key [`NOTICE_ANNOTATION`] (written by versions before
    /// per-router notices), if any and well-formed.
    pub fn legacy(svc: &Service) -> Option<Self> {
        Self::under(svc, NOTICE_ANNOTATION).ok().flatten()
    }

    fn under(svc: &Service, key: &str) -> Result<Option<Self>, ControllerError> {
        let Some(value) = svc.metadata.annotations.as_ref().and_then(|a| a.get(key)) else {
            return Ok(None);
        };
        Self::parse(value).map(Some).map_err(|source| ControllerError::InvalidNotice {
            annotation: key.to_string(),
            service: format!(
                "{}/{}",
                svc.metadata.namespace.as_deref().unwrap_or_default(),
                svc.metadata.name.as_deref().unwrap_or_default()
            ),
            source,
        })
    }

    fn normalize(mut self) -> Self {
        self.pools.sort();
        self.pools.dedup();
        self.ingresses.sort();
        self.ingresses.dedup();
        self
    }
}

/// For every Service the desired router needs endpoints from, the notice it must carry.
///
/// - pools: every pool of [`DesiredRouter::pools`] that Service fills (alone, or in a split);
/// - ingresses: the owners of the policies routing to those pools, plus, for the listener's
///   default pool, [`DesiredRouter::default_pool_owners`].
pub fn desired_notices(router: &str, desired: &DesiredRouter) -> BTreeMap<KubeRef, ServiceNotice> {
    let mut out: BTreeMap<KubeRef, ServiceNotice> = BTreeMap::new();
    // The owners of each pool's policies, indexed once: scanning every policy for every pool
    // was O(pools × policies), minutes per Sync at 10k Ingresses.
    let mut owners_of: HashMap<&str, Vec<&KubeRef>> = HashMap::new();
    for p in &desired.policies {
        owners_of.entry(p.pool.as_str()).or_default().push(&p.owner);
    }
    // Reserved pools that no Service fills (`status::config_owner`) need no notice.
    // A split pool is in the notice of each of its Services: a change of any one's endpoints
    // re-weighs the whole pool.
    for pool in desired.pools.values() {
        for service in pool.feeders().into_iter().filter(|s| s.is_service()) {
            let notice = out
                .entry(service_key(service))
                .or_insert_with(|| ServiceNotice { router: router.to_string(), ..Default::default() });
            notice.pools.push(pool.name.clone());
            let policy_owners = owners_of.get(pool.name.as_str()).into_iter().flatten().copied();
            let default_owners =
                desired.default_pool_owners.iter().filter(|_| desired.default_pool.as_ref() == Some(&pool.name));
            let owners = policy_owners.chain(default_owners).map(|o| format!("{}/{}", o.namespace, o.name));
            notice.ingresses.extend(owners);
        }
    }
    out.into_iter().map(|(k, v)| (k, v.normalize())).collect()
}

/// One annotation write on a Service: set our notice, or remove it (`None`); and remove the
/// legacy single-key notice when it names our router (`drop_legacy`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NoticeChange {
    pub service: KubeRef,
    pub notice: Option<ServiceNotice>,
    pub drop_legacy: bool,
}

/// The annotation writes that take the Services from `current` to `desired`.
///
/// `current` is every Service that carries OUR notice now (under our key, from the Service
/// cache); `legacy` the Services whose legacy single-key notice names our router. Other routers'
/// notices are under their own keys and never in a write. A notice of ours that is no longer
/// desired is removed; a desired notice that differs (or is absent) is written; a legacy notice
/// of ours is removed in the same patch. Sorted by Service, so callers and tests see a stable
/// order.
pub(crate) fn notice_changes<'a>(
    desired: &BTreeMap<KubeRef, ServiceNotice>,
    current: impl IntoIterator<Item = (KubeRef, &'a ServiceNotice)>,
    legacy: &BTreeSet<KubeRef>,
) -> Vec<NoticeChange> {
    let current: BTreeMap<KubeRef, &ServiceNotice> =
        current.into_iter().map(|(svc, n)| (service_key(&svc), n)).collect();
    let legacy: BTreeSet<KubeRef> = legacy.iter().map(service_key).collect();
    let mut services: BTreeSet<&KubeRef> = desired.keys().collect();
    services.extend(current.keys());
    services.extend(legacy.iter());
    let mut changes = Vec::new();
    for svc in services {
        let want = desired.get(svc);
        let drop_legacy = legacy.contains(svc);
        if want == current.get(svc).copied() && !drop_legacy {
            continue;
        }
        changes.push(NoticeChange { service: svc.clone(), notice: want.cloned(), drop_legacy });
    }
    changes
}

/// Services are compared by namespace and name; the model's `kind` is always `Service` here.
fn service_key(r: &KubeRef) -> KubeRef {
    KubeRef::service(&r.namespace, &r.name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{CompareType, Policy, Pool, Rule, RuleType};

    fn pool(name: &str, ns: &str, svc: &str) -> Pool {
        Pool {
            name: name.into(),
            service: KubeRef::new("Service", ns, svc),
            service_port: "80".into(),
            lb_algorithm: "ROUND_ROBIN".into(),
            members: vec![],
            weighting: "even".into(),
            split: Vec::new(),
            member_mode: Default::default(),
        }
    }

    fn policy(name: &str, pool: &str, owner_ns: &str, owner: &str) -> Policy {
        Policy {
            name: name.into(),
            position: 1,
            pool: pool.into(),
            rules: vec![Rule {
                rule_type: RuleType::Path,
                compare_type: CompareType::StartsWith,
                value: "/".into(),
                invert: false,
                key: None,
            }],
            owner: KubeRef::new("Ingress", owner_ns, owner),
            description: String::new(),
            redirect: None,
        }
    }

    fn router(policies: Vec<Policy>, pools: Vec<Pool>, default_pool: Option<&str>) -> DesiredRouter {
        DesiredRouter {
            policies,
            default_pool: default_pool.map(String::from),
            default_pool_owners: vec![],
            pools: pools.into_iter().map(|p| (p.name.clone(), p)).collect(),
            warnings: vec![],
            ..Default::default()
        }
    }

    fn notice(pools: &[&str], ingresses: &[&str]) -> ServiceNotice {
        ServiceNotice {
            router: "r1".into(),
            pools: pools.iter().map(|s| s.to_string()).collect(),
            ingresses: ingresses.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn svc(ns: &str, name: &str) -> KubeRef {
        KubeRef::new("Service", ns, name)
    }

    #[test]
    fn a_split_pool_is_in_the_notice_of_each_of_its_services() {
        use crate::model::PoolFeed;
        let feed = |name: &str, weight| PoolFeed { service: svc("shop", name), service_port: "80".into(), weight };
        let split = Pool { split: vec![feed("canary", 3), feed("web", 1)], ..pool("split:x", "shop", "canary") };
        let d = router(vec![policy("p", "split:x", "shop", "r")], vec![split, pool("shop_web", "shop", "web")], None);
        let n = desired_notices("r1", &d);
        assert_eq!(n[&svc("shop", "canary")], notice(&["split:x"], &["shop/r"]));
        assert_eq!(n[&svc("shop", "web")], notice(&["shop_web", "split:x"], &["shop/r"]));
    }

    #[test]
    fn annotation_round_trips_and_has_the_documented_shape() {
        let n = notice(&["default_web_80"], &["default/web"]);
        let s = n.to_annotation();
        assert_eq!(s, r#"{"router":"r1","pools":["default_web_80"],"ingresses":["default/web"]}"#);
        assert_eq!(ServiceNotice::parse(&s).unwrap(), n);
        assert!(ServiceNotice::parse("{not json").is_err());
    }

    #[test]
    fn from_service_reads_our_key_only_absent_valid_and_invalid() {
        let key = notice_annotation("r1");
        let mut s = Service::default();
        assert_eq!(ServiceNotice::from_service(&s, "r1").unwrap(), None);
        s.metadata.annotations = Some([(key.clone(), notice(&["p"], &[]).to_annotation())].into());
        assert_eq!(ServiceNotice::from_service(&s, "r1").unwrap(), Some(notice(&["p"], &[])));
        assert_eq!(ServiceNotice::from_service(&s, "r2").unwrap(), None, "another router's key");
        assert_eq!(ServiceNotice::legacy(&s), None);
        s.metadata.annotations = Some([(key, "garbage".to_string())].into());
        let err = ServiceNotice::from_service(&s, "r1").unwrap_err();
        assert_eq!(err.metric_label(), "invalid_notice");
        s.metadata.annotations = Some([(NOTICE_ANNOTATION.to_string(), notice(&["p"], &[]).to_annotation())].into());
        assert_eq!(ServiceNotice::legacy(&s), Some(notice(&["p"], &[])));
        assert_eq!(ServiceNotice::from_service(&s, "r1").unwrap(), None, "the legacy key is not ours");
    }

    #[test]
    fn notice_annotation_keys_are_valid_and_distinct() {
        let name_ok = |k: &str| {
            let (prefix, name) = k.split_once('/').unwrap();
            prefix == "kuryr-l7-router.openstack.org"
                && !name.is_empty()
                && name.len() <= 63
                && name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
                && name.starts_with(|c: char| c.is_ascii_alphanumeric())
                && name.ends_with(|c: char| c.is_ascii_alphanumeric())
        };
        let uuid = "0f6e2a5c-1b2d-4c3e-8f9a-0b1c2d3e4f5a";
        assert_eq!(notice_annotation("kuryr-l7-router"), "kuryr-l7-router.openstack.org/kuryr-l7-router");
        assert_eq!(notice_annotation(uuid), format!("kuryr-l7-router.openstack.org/{uuid}"));
        let odd = ["router b", "-edge-", "ルーター", &"x".repeat(64), "a/b", "", "_"];
        let mut keys: BTreeSet<String> = BTreeSet::new();
        for r in odd.iter().copied().chain(["kuryr-l7-router", uuid, "router-b", "router_b"]) {
            let k = notice_annotation(r);
            assert!(name_ok(&k), "{r:?} -> {k:?}");
            assert_eq!(k, notice_annotation(r), "stable");
            assert!(keys.insert(k), "distinct for {r:?}");
        }
        assert!(notice_annotation("router b").starts_with("kuryr-l7-router.openstack.org/router-b-"));
    }

    #[test]
    fn desired_notices_table() {
        struct Case {
            name: &'static str,
            desired: DesiredRouter,
            want: Vec<(KubeRef, ServiceNotice)>,
        }
        let cases = vec![
            Case { name: "empty router", desired: DesiredRouter::default(), want: vec![] },
            Case {
                name: "one ingress one service",
                desired: router(vec![policy("a", "ns_web", "ns", "ing")], vec![pool("ns_web", "ns", "web")], None),
                want: vec![(svc("ns", "web"), notice(&["ns_web"], &["ns/ing"]))],
            },
            Case {
                name: "two ports of one service, shared by two ingresses, sorted and deduplicated",
                desired: router(
                    vec![
                        policy("b", "ns_web_8080", "ns", "zeta"),
                        policy("a", "ns_web_80", "ns", "alpha"),
                        policy("c", "ns_web_80", "ns", "zeta"),
                        policy("d", "ns_web_80", "ns", "zeta"),
                    ],
                    vec![pool("ns_web_80", "ns", "web"), pool("ns_web_8080", "ns", "web")],
                    None,
                ),
                want: vec![(svc("ns", "web"), notice(&["ns_web_80", "ns_web_8080"], &["ns/alpha", "ns/zeta"]))],
            },
            Case {
                name: "default backend pool names the ingress(es) whose defaultBackend is that service",
                desired: DesiredRouter {
                    default_pool_owners: vec![KubeRef::new("Ingress", "ns", "ing")],
                    ..router(
                        vec![policy("a", "ns_api", "ns", "ing")],
                        vec![pool("ns_api", "ns", "api"), pool("ns_fallback", "ns", "fallback")],
                        Some("ns_fallback"),
                    )
                },
                want: vec![
                    (svc("ns", "api"), notice(&["ns_api"], &["ns/ing"])),
                    (svc("ns", "fallback"), notice(&["ns_fallback"], &["ns/ing"])),
                ],
            },
            Case {
                name: "pool with no policy (e.g. kept for draining) still notifies its service",
                desired: router(vec![], vec![pool("ns_old", "ns", "old")], None),
                want: vec![(svc("ns", "old"), notice(&["ns_old"], &[]))],
            },
        ];
        for c in cases {
            let got: Vec<_> = desired_notices("r1", &c.desired).into_iter().collect();
            assert_eq!(got, c.want, "case: {}", c.name);
        }
    }

    #[test]
    fn notice_changes_table() {
        let a = notice(&["ns_a"], &["ns/i"]);
        let a2 = notice(&["ns_a", "ns_a_8080"], &["ns/i"]);
        struct Case {
            name: &'static str,
            desired: Vec<(KubeRef, ServiceNotice)>,
            current: Vec<(KubeRef, ServiceNotice)>,
            legacy: Vec<KubeRef>,
            want: Vec<NoticeChange>,
        }
        let set =
            |s: KubeRef, n: &ServiceNotice| NoticeChange { service: s, notice: Some(n.clone()), drop_legacy: false };
        let remove = |s: KubeRef| NoticeChange { service: s, notice: None, drop_legacy: false };
        let cases = vec![
            Case { name: "nothing", desired: vec![], current: vec![], legacy: vec![], want: vec![] },
            Case {
                name: "new service gets its notice (whatever other routers' keys it carries)",
                desired: vec![(svc("ns", "a"), a.clone())],
                current: vec![],
                legacy: vec![],
                want: vec![set(svc("ns", "a"), &a)],
            },
            Case {
                name: "equal notice is not rewritten",
                desired: vec![(svc("ns", "a"), a.clone())],
                current: vec![(svc("ns", "a"), a.clone())],
                legacy: vec![],
                want: vec![],
            },
            Case {
                name: "changed pools are rewritten",
                desired: vec![(svc("ns", "a"), a2.clone())],
                current: vec![(svc("ns", "a"), a.clone())],
                legacy: vec![],
                want: vec![set(svc("ns", "a"), &a2)],
            },
            Case {
                name: "service no longer used loses our notice",
                desired: vec![],
                current: vec![(svc("ns", "a"), a.clone())],
                legacy: vec![],
                want: vec![remove(svc("ns", "a"))],
            },
            Case {
                name: "a legacy notice of ours moves to our key in one patch",
                desired: vec![(svc("ns", "a"), a.clone())],
                current: vec![],
                legacy: vec![svc("ns", "a")],
                want: vec![NoticeChange { service: svc("ns", "a"), notice: Some(a.clone()), drop_legacy: true }],
            },
            Case {
                name: "a legacy notice of ours on an unused service is removed",
                desired: vec![],
                current: vec![],
                legacy: vec![svc("ns", "old")],
                want: vec![NoticeChange { service: svc("ns", "old"), notice: None, drop_legacy: true }],
            },
            Case {
                name: "mixed, sorted by service",
                desired: vec![(svc("z", "new"), a.clone()), (svc("a", "keep"), a.clone())],
                current: vec![(svc("a", "keep"), a.clone()), (svc("m", "gone"), a.clone())],
                legacy: vec![],
                want: vec![remove(svc("m", "gone")), set(svc("z", "new"), &a)],
            },
        ];
        for c in cases {
            let desired: BTreeMap<_, _> = c.desired.into_iter().collect();
            let legacy: BTreeSet<_> = c.legacy.into_iter().collect();
            let got = notice_changes(&desired, c.current.iter().map(|(s, n)| (s.clone(), n)), &legacy);
            assert_eq!(got, c.want, "case: {}", c.name);
        }
    }
}
