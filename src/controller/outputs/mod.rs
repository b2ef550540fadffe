//! The one output step: what a finished Sync tells Kubernetes (Service notices, Ingress
//! statuses, Events), planned purely from the desired state, the convergence report and a few
//! facts from the caches, then applied in one place (`Context::apply_outputs`).
//!
//! Every decision is made on a typed [`Reason`] and a [`KubeRef`], never on a reason's text:
//! which warnings are published on whom, which are conflicts published on the loser at every
//! Sync, which Event is Normal.
//!
//! Every waiter of one Sync job gets the same [`crate::controller::writer::Synced`], and each
//! plans its outputs from it; the router's [`Ledger`] lets only the first apply the Sync-wide
//! part (refusals, notices, Service warnings, the report's metrics) and never applies a status or
//! an Event twice for one job, so N waiters cost one set of writes plus their own results.
//!
//! Order (the order the writes are applied in): refusals of the convergence, notices, Service
//! warnings, statuses, then the Events of the scope (the reconciled Ingress's own warnings, the
//! conflicts of the other Ingresses, `Synced`).

pub mod events;
pub mod notice;
pub mod patches;
pub(crate) mod service_warnings;

use crate::controller::ControllerError;
use crate::controller::outputs::events::UserEvent;
use crate::controller::outputs::notice::{NoticeChange, ServiceNotice, desired_notices, notice_changes};
use crate::controller::outputs::patches::status_needs_update;
use crate::controller::writer::WriteError;
use crate::driver::ConvergeReport;
use crate::model::{DesiredRouter, KubeRef, Warning};
use crate::reason::Reason;
use crate::translate::namespace_of;
use k8s_openapi::api::networking::v1::Ingress;
use std::collections::{BTreeSet, HashSet, VecDeque};
use std::net::IpAddr;

/// Why the outputs of a Sync are applied: what more than the Sync-wide outputs it carries.
#[derive(Clone, Copy, Debug)]
pub enum Scope<'a> {
    /// Notices, refusals and Service warnings only (a Service reconcile, a cleanup).
    Sync,
    /// An Ingress reconcile: also its status, its own warnings, the other Ingresses'
    /// conflicts, and `Synced` on it.
    Ingress(&'a Ingress),
    /// The resync: also every status of ours and every conflict.
    Resync,
    /// A Sync after the budget changed: also every conflict.
    Conflicts,
}

/// One Event to publish, on the object `regarding`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PlannedEvent {
    pub regarding: KubeRef,
    pub event: UserEvent,
}

impl PlannedEvent {
    fn sync(regarding: &KubeRef, reason: Reason, message: impl Into<String>) -> Self {
        Self { regarding: regarding.clone(), event: UserEvent::of(reason, "Sync", message) }
    }
}

/// One Ingress status to write: `status.loadBalancer.ingress` set to `address` (None: cleared).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatusChange {
    pub ingress: KubeRef,
    pub address: Option<IpAddr>,
}

/// What the caches say, gathered by the caller for the plan.
#[derive(Default)]
pub struct Facts<'a> {
    /// Every Service's notice under our router's key now.
    pub notices: Vec<(KubeRef, ServiceNotice)>,
    /// The Services whose legacy single-key notice names our router.
    pub legacy: BTreeSet<KubeRef>,
    /// The Ingresses whose status is ours to keep (of our class, with our finalizer, not being
    /// deleted): the reconciled one, or all of them at resync.
    pub statuses: Vec<&'a Ingress>,
    /// Another waiter of the same Sync job applied its Sync-wide part (refusals, notices,
    /// Service warnings) already: they are not planned again. Each of them costs a pass over
    /// every Service and every pool, so planning them for each of the thousands of Ingress
    /// reconciles that wait on one job at start made the start quadratic.
    pub wide_applied: bool,
}

/// Everything one finished Sync writes, in application order.
#[derive(Debug, Default, PartialEq)]
pub struct Outputs {
    /// Writes Octavia refused and routes waiting for the quota (when the Sync wrote).
    pub refusals: Vec<PlannedEvent>,
    pub notices: Vec<NoticeChange>,
    /// The warnings about Services (published when due: see `service_events`).
    pub(crate) service_warnings: Vec<Warning>,
    pub statuses: Vec<StatusChange>,
    pub events: Vec<PlannedEvent>,
}

/// The outputs of the Sync of router `router` that converged to `desired` with `report`
/// (`written`: false when answered from the last Sync, which already told its refusals).
pub fn plan(
    router: &str,
    desired: &DesiredRouter,
    report: &ConvergeReport,
    written: bool,
    facts: &Facts,
    scope: Scope,
) -> Outputs {
    let statuses = facts
        .statuses
        .iter()
        .filter(|i| status_needs_update(i, report.address))
        .map(|i| StatusChange { ingress: ingress_ref(i), address: report.address })
        .collect();
    let events = scope_events(router, desired, report, scope);
    if facts.wide_applied {
        return Outputs { statuses, events, ..Outputs::default() };
    }
    let want = desired_notices(router, desired);
    Outputs {
        refusals: if written { refusals(report) } else { vec![] },
        notices: notice_changes(&want, facts.notices.iter().map(|(r, n)| (r.clone(), n)), &facts.legacy),
        service_warnings: desired.warnings.iter().filter(|w| w.object.is_service()).cloned().collect(),
        statuses,
        events,
    }
}

/// The [`KubeRef`] of an Ingress.
pub fn ingress_ref(ing: &Ingress) -> KubeRef {
    KubeRef::ingress(namespace_of(&ing.metadata), ing.metadata.name.as_deref().unwrap_or_default())
}

/// Each write Octavia refused for good: a Warning on every Ingress its object serves; each
/// Ingress waiting for the quota: a Warning on it. The other changes went on.
fn refusals(report: &ConvergeReport) -> Vec<PlannedEvent> {
    let mut out: Vec<PlannedEvent> =
        report.quota_waiting.iter().map(|w| PlannedEvent::sync(&w.owner, Reason::QuotaExceeded, w.message())).collect();
    for f in &report.failures {
        let message = format!(
            "Octavia refused a write for {} ({}): {}; it is retried with backoff, the other changes were made",
            f.object, f.write, f.message
        );
        out.extend(f.owners.iter().map(|o| PlannedEvent::sync(o, Reason::OctaviaWriteRefused, &message)));
    }
    out
}

/// The Events of `scope`: an Ingress's own warnings and `Synced`, and the conflicts of the
/// Ingresses not reconciled (a conflict can change without its loser changing).
fn scope_events(router: &str, desired: &DesiredRouter, report: &ConvergeReport, scope: Scope) -> Vec<PlannedEvent> {
    let me = match scope {
        Scope::Sync => return vec![],
        Scope::Ingress(ing) => Some(ingress_ref(ing)),
        Scope::Resync | Scope::Conflicts => None,
    };
    let about_me = |w: &&Warning| Some(&w.object) == me.as_ref();
    let mut out: Vec<PlannedEvent> =
        desired.warnings.iter().filter(about_me).map(|w| PlannedEvent::sync(&w.object, w.reason, &w.message)).collect();
    out.extend(conflict_warnings(desired, me.as_ref()).map(|w| PlannedEvent::sync(&w.object, w.reason, &w.message)));
    if let Some(me) = &me {
        let policies = desired.policies.iter().filter(|p| p.owner == *me).count();
        let message = format!(
            "L7 router {router} synced: {policies} policy(ies) for this Ingress, {} Octavia write(s)",
            report.writes.len()
        );
        out.push(PlannedEvent::sync(me, Reason::Synced, message));
    }
    out
}

/// How many Sync jobs a [`Ledger`] remembers: the waiters of a job apply their outputs right
/// after it is answered, long before this many more jobs of the same router have finished.
const LEDGER_JOBS: usize = 8;

/// What the waiters of a router's recent Sync jobs have applied already, by job.
#[derive(Debug, Default)]
pub(crate) struct Ledger {
    jobs: VecDeque<(u64, Applied)>,
}

/// What is applied of one Sync job's outputs.
#[derive(Debug, Default)]
struct Applied {
    /// The report's metrics and budget were taken.
    report: bool,
    /// Refusals, notices and Service warnings were applied.
    wide: bool,
    statuses: HashSet<KubeRef>,
    events: HashSet<PlannedEvent>,
}

impl Ledger {
    fn of(&mut self, job: u64) -> &mut Applied {
        if let Some(i) = self.jobs.iter().position(|(j, _)| *j == job) {
            return &mut self.jobs[i].1;
        }
        if self.jobs.len() == LEDGER_JOBS {
            self.jobs.pop_front();
        }
        self.jobs.push_back((job, Applied::default()));
        &mut self.jobs.back_mut().expect("just pushed").1
    }

    /// True for the first waiter of `job` only: it takes the report (metrics, budget).
    pub(crate) fn claim_report(&mut self, job: u64) -> bool {
        !std::mem::replace(&mut self.of(job).report, true)
    }

    /// Whether a waiter of `job` applied its Sync-wide part already (the others then skip
    /// gathering and planning it; [`Ledger::claim`] still decides).
    pub(crate) fn wide_applied(&mut self, job: u64) -> bool {
        self.of(job).wide
    }

    /// Leaves in `out` what no waiter of `job` has applied yet, and records it as applied: the
    /// Sync-wide part for the first waiter only, each status and Event once.
    pub fn claim(&mut self, job: u64, out: &mut Outputs) {
        let applied = self.of(job);
        if std::mem::replace(&mut applied.wide, true) {
            out.refusals.clear();
            out.notices.clear();
            out.service_warnings.clear();
        }
        out.statuses.retain(|s| applied.statuses.insert(s.ingress.clone()));
        out.events.retain(|e| applied.events.insert(e.clone()));
    }
}

/// The step of a handler that failed: the Event's action.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailedStep {
    /// A Sync (an Ingress applied or cleaned up, a Service's routing changed).
    Sync,
    /// The Members step of a Service (its pools refilled from its endpoints).
    UpdateMembers,
}

impl FailedStep {
    fn action(self) -> &'static str {
        match self {
            FailedStep::Sync => "Sync",
            FailedStep::UpdateMembers => "UpdateMembers",
        }
    }
}

/// The outputs of a handler that stops before a Sync finished, published on the object it
/// reconciles (the job is retried with backoff, so the user learns why it waits).
#[derive(Debug)]
pub enum Failure<'a> {
    /// Octavia (or the writer) failed the Sync or the members write.
    Write(FailedStep, &'a WriteError),
    /// A Service's notice annotation cannot be read; the next Sync rewrites it.
    Notice(&'a ControllerError),
}

/// The Event of `failure` (on the reconciled object), decided on its typed reason.
pub(crate) fn failure_event(failure: &Failure) -> UserEvent {
    match failure {
        Failure::Write(step, e) => UserEvent::of(Reason::OctaviaError, step.action(), &e.message),
        Failure::Notice(e) => UserEvent::of(Reason::InvalidNotice, FailedStep::UpdateMembers.action(), e.to_string()),
    }
}

/// The conflict warnings about Ingresses other than `except`. A reconcile publishes the
/// warnings about its own Ingress; but a conflict can change without the loser changing (an
/// older Ingress gains the path a younger one routed, the owner of a host claims it, the quota
/// fills), and the loser would lose its route silently until edited. So every Sync of an
/// Ingress, and the resync, also publishes these; the Event publisher's window keeps a repeated
/// one from being sent again.
pub(crate) fn conflict_warnings<'a>(
    desired: &'a DesiredRouter,
    except: Option<&'a KubeRef>,
) -> impl Iterator<Item = &'a Warning> + 'a {
    desired
        .warnings
        .iter()
        .filter(move |w| w.object.is_ingress() && Some(&w.object) != except && w.reason.is_conflict())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::WriteFailure;

    fn warning(object: KubeRef, reason: Reason) -> Warning {
        Warning { message: format!("{object}: {reason}"), object, reason }
    }

    fn ingress(name: &str, ip: Option<&str>) -> Ingress {
        let status = ip.map(|ip| serde_json::json!({"loadBalancer": {"ingress": [{"ip": ip}]}}));
        serde_json::from_value(serde_json::json!({"metadata": {"name": name, "namespace": "ns"}, "status": status}))
            .unwrap()
    }

    fn reasons(events: &[PlannedEvent]) -> Vec<String> {
        events.iter().map(|e| format!("{} {}", e.regarding.name, e.event.reason)).collect()
    }

    /// What each scope adds to the Sync-wide outputs, all decided on typed reasons.
    #[test]
    fn each_scope_plans_its_outputs() {
        let (me, loser, svc) =
            (KubeRef::ingress("ns", "me"), KubeRef::ingress("ns", "loser"), KubeRef::service("ns", "web"));
        let desired = DesiredRouter {
            warnings: vec![
                warning(me.clone(), Reason::InvalidPath),
                warning(me.clone(), Reason::DuplicateRoute),
                warning(loser.clone(), Reason::DuplicateRoute),
                warning(loser.clone(), Reason::InvalidHost),
                warning(svc.clone(), Reason::NoEndpoints),
            ],
            ..DesiredRouter::default()
        };
        let report = ConvergeReport { address: Some("172.24.4.9".parse().unwrap()), ..ConvergeReport::default() };
        let (current, stale) = (ingress("me", Some("172.24.4.9")), ingress("loser", Some("10.0.0.1")));
        let facts = Facts { statuses: vec![&current, &stale], ..Facts::default() };
        let plan_for = |scope| plan("r1", &desired, &report, true, &facts, scope);

        let sync = plan_for(Scope::Sync);
        assert!(sync.events.is_empty() && sync.refusals.is_empty());
        assert_eq!(sync.service_warnings, vec![warning(svc.clone(), Reason::NoEndpoints)]);
        // Only the status that differs is written.
        assert_eq!(sync.statuses, vec![StatusChange { ingress: loser.clone(), address: report.address }]);

        let me_ing = ingress("me", None);
        let mine = plan_for(Scope::Ingress(&me_ing));
        assert_eq!(reasons(&mine.events), ["me InvalidPath", "me DuplicateRoute", "loser DuplicateRoute", "me Synced"]);
        let synced = mine.events.last().unwrap();
        assert_eq!(synced.event.type_, kube::runtime::events::EventType::Normal);
        assert_eq!(synced.event.message, "L7 router r1 synced: 0 policy(ies) for this Ingress, 0 Octavia write(s)");

        // The resync: every conflict, on the losers only; no Synced.
        assert_eq!(reasons(&plan_for(Scope::Resync).events), ["me DuplicateRoute", "loser DuplicateRoute"]);
    }

    /// Refusals are told by the Sync that wrote, on every owner; not again by a Sync answered
    /// from the last one.
    #[test]
    fn refusals_come_from_the_sync_that_wrote() {
        let (a, b) = (KubeRef::ingress("ns", "a"), KubeRef::ingress("ns", "b"));
        let report = ConvergeReport {
            failures: vec![WriteFailure {
                object: "L7 policy p".into(),
                write: "create policy p".into(),
                reason: "invalid",
                message: "HTTP 400".into(),
                owners: vec![a.clone(), b.clone()],
            }],
            ..ConvergeReport::default()
        };
        let desired = DesiredRouter::default();
        let written = plan("r1", &desired, &report, true, &Facts::default(), Scope::Sync);
        assert_eq!(reasons(&written.refusals), ["a OctaviaWriteRefused", "b OctaviaWriteRefused"]);
        assert!(written.refusals[0].event.message.contains("HTTP 400"));
        assert!(plan("r1", &desired, &report, false, &Facts::default(), Scope::Sync).refusals.is_empty());
    }

    /// The Events of a handler that failed: the reason, type and action come from the failure's
    /// kind, the message from its error.
    #[test]
    fn failures_plan_their_events() {
        use kube::runtime::events::EventType::Warning;
        let write = WriteError::new("octavia", "HTTP 409: load balancer is immutable");
        let notice = ControllerError::InvalidNotice {
            annotation: "openstack.org/kuryr-l7-router".into(),
            service: "ns/web".into(),
            source: serde_json::from_str::<serde_json::Value>("{").unwrap_err(),
        };
        let cases = [
            (Failure::Write(FailedStep::Sync, &write), "OctaviaError", "Sync", "HTTP 409"),
            (Failure::Write(FailedStep::UpdateMembers, &write), "OctaviaError", "UpdateMembers", "HTTP 409"),
            (Failure::Notice(&notice), "InvalidNotice", "UpdateMembers", "annotation on Service ns/web"),
        ];
        for (failure, reason, action, message) in cases {
            let ev = failure_event(&failure);
            assert_eq!((ev.type_, ev.reason.as_str(), ev.action.as_str()), (Warning, reason, action), "{failure:?}");
            assert!(ev.message.contains(message), "{failure:?}: {}", ev.message);
        }
    }

    /// The waiters of one job: the first applies the Sync-wide part, the next only its own
    /// status and Events; a conflict told by one is not told again by another. A new job
    /// starts afresh.
    #[test]
    fn the_ledger_applies_a_jobs_outputs_once() {
        let (a, b, loser) = (KubeRef::ingress("ns", "a"), KubeRef::ingress("ns", "b"), KubeRef::ingress("ns", "loser"));
        let desired = DesiredRouter {
            warnings: vec![
                warning(loser.clone(), Reason::DuplicateRoute),
                warning(KubeRef::service("ns", "web"), Reason::NoEndpoints),
            ],
            ..DesiredRouter::default()
        };
        let report = ConvergeReport {
            address: Some("172.24.4.9".parse().unwrap()),
            failures: vec![WriteFailure {
                object: "pool p".into(),
                write: "create pool p".into(),
                reason: "invalid",
                message: "HTTP 400".into(),
                owners: vec![a.clone()],
            }],
            ..ConvergeReport::default()
        };
        let (ing_a, ing_b) = (ingress("a", None), ingress("b", None));
        let planned = |ing: &Ingress| {
            let facts = Facts { statuses: vec![ing], ..Facts::default() };
            plan("r1", &desired, &report, true, &facts, Scope::Ingress(ing))
        };
        let mut ledger = Ledger::default();
        assert!(ledger.claim_report(7) && !ledger.claim_report(7), "the report is taken once");

        let mut first = planned(&ing_a);
        ledger.claim(7, &mut first);
        assert_eq!(reasons(&first.refusals), ["a OctaviaWriteRefused"]);
        assert_eq!(first.service_warnings.len(), 1);
        assert_eq!(reasons(&first.events), ["loser DuplicateRoute", "a Synced"]);

        let mut second = planned(&ing_b);
        ledger.claim(7, &mut second);
        assert!(second.refusals.is_empty() && second.service_warnings.is_empty() && second.notices.is_empty());
        assert_eq!(second.statuses, vec![StatusChange { ingress: b.clone(), address: report.address }]);
        assert_eq!(reasons(&second.events), ["b Synced"], "its own result only");

        // A later waiter sees the wide part applied and does not plan it (nor read the
        // Services' notices for it): only its status and its own Events.
        assert!(ledger.wide_applied(7) && !ledger.wide_applied(9));
        let facts = Facts { statuses: vec![&ing_b], wide_applied: true, ..Facts::default() };
        let light = plan("r1", &desired, &report, true, &facts, Scope::Ingress(&ing_b));
        assert!(light.refusals.is_empty() && light.service_warnings.is_empty() && light.notices.is_empty());
        assert_eq!(light.statuses, second.statuses);
        assert_eq!(reasons(&light.events), ["loser DuplicateRoute", "b Synced"]);

        let mut again = planned(&ing_a);
        ledger.claim(7, &mut again);
        assert_eq!(again, Outputs::default(), "nothing twice for one job");

        let mut next_job = planned(&ing_b);
        ledger.claim(8, &mut next_job);
        assert_eq!(reasons(&next_job.refusals), ["a OctaviaWriteRefused"]);
        assert!(ledger.claim_report(8));
    }

    #[test]
    fn only_other_ingresses_conflicts_are_selected() {
        let w = |kind: &str, name: &str, reason: Reason| warning(KubeRef::new(kind, "ns", name), reason);
        let desired = DesiredRouter {
            warnings: vec![
                w("Ingress", "loser", Reason::DuplicateRoute),
                w("Ingress", "loser", Reason::InvalidPath),
                w("Ingress", "me", Reason::DuplicateRoute),
                w("Ingress", "tenant", Reason::HostOwnedByOtherNamespace),
                w("Ingress", "late", Reason::QuotaExceeded),
                w("Ingress", "other", Reason::ConflictingDefaultBackend),
                w("Service", "svc", Reason::NoEndpoints),
            ],
            ..Default::default()
        };
        let me = KubeRef::ingress("ns", "me");
        let got: Vec<String> =
            conflict_warnings(&desired, Some(&me)).map(|w| format!("{} {}", w.object.name, w.reason)).collect();
        assert_eq!(
            got,
            [
                "loser DuplicateRoute",
                "tenant HostOwnedByOtherNamespace",
                "late QuotaExceeded",
                "other ConflictingDefaultBackend"
            ]
        );
        // The resync has no Ingress of its own: every conflict.
        assert_eq!(conflict_warnings(&desired, None).count(), 5);
    }
}
