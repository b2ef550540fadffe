//! The Service notice: the annotation `openstack.org/kuryr-l7-router` that tells the Service
//! handler which router pools the Service's endpoints must fill, and the pure computation of which
//! Services must carry which notice for a desired router.
//!
//! Why an annotation: the Service handler (a Controller on Service) is triggered by the Service's
//! own changes; writing the notice on the Service makes "this Service now feeds pools" an event it
//! sees, survives controller restarts, and is visible to users (`kubectl get svc -o yaml`).

use crate::controller::{ControllerError, NOTICE_ANNOTATION};
use crate::model::{DesiredRouter, KubeRef};
use k8s_openapi::api::core::v1::Service;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

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

    /// The notice currently on `svc`, if any. A malformed value is an error (reported as a
    /// Warning Event by the caller) rather than silently treated as absent.
    pub fn from_service(svc: &Service) -> Result<Option<Self>, ControllerError> {
        let Some(value) = svc.metadata.annotations.as_ref().and_then(|a| a.get(NOTICE_ANNOTATION)) else {
            return Ok(None);
        };
        Self::parse(value).map(Some).map_err(|source| ControllerError::InvalidNotice {
            annotation: NOTICE_ANNOTATION,
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
/// - pools: every pool of [`DesiredRouter::pools`] whose `service` is that Service;
/// - ingresses: the owners of the policies routing to those pools, plus, for the listener's
///   default pool, [`DesiredRouter::default_pool_owners`].
pub fn desired_notices(router: &str, desired: &DesiredRouter) -> BTreeMap<KubeRef, ServiceNotice> {
    let mut out: BTreeMap<KubeRef, ServiceNotice> = BTreeMap::new();
    // Reserved pools that no Service fills (`status::config_owner`) need no notice.
    for pool in desired.pools.values().filter(|p| p.service.kind == "Service") {
        let notice = out
            .entry(service_key(&pool.service))
            .or_insert_with(|| ServiceNotice { router: router.to_string(), ..Default::default() });
        notice.pools.push(pool.name.clone());
        let policy_owners = desired.policies.iter().filter(|p| p.pool == pool.name).map(|p| &p.owner);
        let default_owners =
            desired.default_pool_owners.iter().filter(|_| desired.default_pool.as_ref() == Some(&pool.name));
        notice.ingresses.extend(policy_owners.chain(default_owners).map(|o| format!("{}/{}", o.namespace, o.name)));
    }
    out.into_iter().map(|(k, v)| (k, v.normalize())).collect()
}

/// One annotation write: set the notice on the Service, or remove it (`None`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NoticeChange {
    pub service: KubeRef,
    pub notice: Option<ServiceNotice>,
}

/// The annotation writes that take the Services from `current` to `desired`.
///
/// `current` is every Service that carries a notice now (from the Service cache). A notice naming
/// another router is never touched (another controller instance owns it); a notice of `router`
/// that is no longer desired is removed; a desired notice that differs (or is absent) is written.
/// Sorted by Service, so callers and tests see a stable order.
pub fn notice_changes<'a>(
    router: &str,
    desired: &BTreeMap<KubeRef, ServiceNotice>,
    current: impl IntoIterator<Item = (KubeRef, &'a ServiceNotice)>,
) -> Vec<NoticeChange> {
    let current: BTreeMap<KubeRef, &ServiceNotice> =
        current.into_iter().map(|(svc, n)| (service_key(&svc), n)).collect();
    let mut services: BTreeSet<&KubeRef> = desired.keys().collect();
    services.extend(current.keys());
    let mut changes = Vec::new();
    for svc in services {
        match (desired.get(svc), current.get(svc)) {
            (Some(want), Some(have)) if want == *have => {}
            // Another router already claims this Service: leave it; the translation decides who
            // wins and reports it, not the annotation writer.
            (Some(_), Some(have)) if have.router != router => {}
            (Some(want), _) => changes.push(NoticeChange { service: svc.clone(), notice: Some(want.clone()) }),
            (None, Some(have)) if have.router == router => {
                changes.push(NoticeChange { service: svc.clone(), notice: None })
            }
            (None, _) => {}
        }
    }
    changes
}

/// Services are compared by namespace and name; the model's `kind` is always `Service` here.
fn service_key(r: &KubeRef) -> KubeRef {
    KubeRef::new("Service", &r.namespace, &r.name)
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
            }],
            owner: KubeRef::new("Ingress", owner_ns, owner),
            description: String::new(),
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
    fn annotation_round_trips_and_has_the_documented_shape() {
        let n = notice(&["default_web_80"], &["default/web"]);
        let s = n.to_annotation();
        assert_eq!(s, r#"{"router":"r1","pools":["default_web_80"],"ingresses":["default/web"]}"#);
        assert_eq!(ServiceNotice::parse(&s).unwrap(), n);
        assert!(ServiceNotice::parse("{not json").is_err());
    }

    #[test]
    fn from_service_reads_absent_valid_and_invalid() {
        let mut s = Service::default();
        assert_eq!(ServiceNotice::from_service(&s).unwrap(), None);
        s.metadata.annotations = Some([(NOTICE_ANNOTATION.to_string(), notice(&["p"], &[]).to_annotation())].into());
        assert_eq!(ServiceNotice::from_service(&s).unwrap(), Some(notice(&["p"], &[])));
        s.metadata.annotations = Some([(NOTICE_ANNOTATION.to_string(), "garbage".to_string())].into());
        let err = ServiceNotice::from_service(&s).unwrap_err();
        assert_eq!(err.metric_label(), "invalid_notice");
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
        let foreign = ServiceNotice { router: "other-router".into(), ..notice(&["x"], &[]) };
        struct Case {
            name: &'static str,
            desired: Vec<(KubeRef, ServiceNotice)>,
            current: Vec<(KubeRef, ServiceNotice)>,
            want: Vec<NoticeChange>,
        }
        let set = |s: KubeRef, n: &ServiceNotice| NoticeChange { service: s, notice: Some(n.clone()) };
        let remove = |s: KubeRef| NoticeChange { service: s, notice: None };
        let cases = vec![
            Case { name: "nothing", desired: vec![], current: vec![], want: vec![] },
            Case {
                name: "new service gets its notice",
                desired: vec![(svc("ns", "a"), a.clone())],
                current: vec![],
                want: vec![set(svc("ns", "a"), &a)],
            },
            Case {
                name: "equal notice is not rewritten",
                desired: vec![(svc("ns", "a"), a.clone())],
                current: vec![(svc("ns", "a"), a.clone())],
                want: vec![],
            },
            Case {
                name: "changed pools are rewritten",
                desired: vec![(svc("ns", "a"), a2.clone())],
                current: vec![(svc("ns", "a"), a.clone())],
                want: vec![set(svc("ns", "a"), &a2)],
            },
            Case {
                name: "service no longer used loses the notice",
                desired: vec![],
                current: vec![(svc("ns", "a"), a.clone())],
                want: vec![remove(svc("ns", "a"))],
            },
            Case {
                name: "another router's notice is left alone, whether we want the service or not",
                desired: vec![(svc("ns", "b"), a.clone())],
                current: vec![(svc("ns", "b"), foreign.clone()), (svc("ns", "c"), foreign.clone())],
                want: vec![],
            },
            Case {
                name: "mixed, sorted by service",
                desired: vec![(svc("z", "new"), a.clone()), (svc("a", "keep"), a.clone())],
                current: vec![(svc("a", "keep"), a.clone()), (svc("m", "gone"), a.clone())],
                want: vec![remove(svc("m", "gone")), set(svc("z", "new"), &a)],
            },
        ];
        for c in cases {
            let desired: BTreeMap<_, _> = c.desired.into_iter().collect();
            let got = notice_changes("r1", &desired, c.current.iter().map(|(s, n)| (s.clone(), n)));
            assert_eq!(got, c.want, "case: {}", c.name);
        }
    }
}
