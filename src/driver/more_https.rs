//! The router's more HTTPS listeners ([`DesiredRouter::more_https`]): a Gateway with HTTPS
//! listeners on several ports (443 and 8443, each with its own client-certificate validation)
//! is one load balancer with one TERMINATED_HTTPS Octavia listener per port. The main HTTPS
//! listener ([`DesiredRouter::https`]) is planned as before; each more port gets a listener of its
//! own, named `<router>-https-<port>` and tagged as the router's, written like the main one
//! (`listener_plan::plan_https_listener_named`: its certificates, client CA and headers in one
//! create or PUT) and with its policies planned like the main one's (`view::DesiredView::https`).
//!
//! Planned from the listing the HTTP listener's lookup already made (an Ingress router, which
//! has none, makes no request more). Ours means our tags AND this router's `-https-<port>` name,
//! never a listener another router or an admin created. A listener of ours on a port no longer
//! wanted is deleted before the HTTP listener's plan, so that the pools only its policies used
//! are free to go; so is our main HTTPS listener (`<router>-https`) left on a port that is
//! neither the main HTTPS port nor a more port (the Gateway's lowest HTTPS port moved).

use std::collections::BTreeMap;

use super::cloud::Cloud;
use super::error::{DriverError, Result};
use super::execute::listener_write;
use super::https_holds::{HttpsHolds, certificate_owners, refusal};
use super::isolation::WriteKey;
use super::listener_plan::{
    HttpsListenerPlan, HttpsRefs, ListenerStep, TERMINATED_HTTPS, choose_listener, plan_https_listener_named,
};
use super::report::ConvergeReport;
use super::spec::RouterSpec;
use crate::model::DesiredRouter;
use crate::openstack::octavia::{Listener, LoadBalancer};

/// The name of the router's HTTPS listener on a more port.
pub(crate) fn listener_name(spec: &RouterSpec, port: u16) -> String {
    format!("{}-https-{port}", spec.name)
}

/// The name of the router's main HTTPS listener.
pub(crate) fn main_name(spec: &RouterSpec) -> String {
    format!("{}-https", spec.name)
}

/// Whether `l` is one of this router's more HTTPS listeners (our tags, its name, TLS).
pub(crate) fn is_ours(l: &Listener, spec: &RouterSpec) -> bool {
    l.protocol == TERMINATED_HTTPS && l.name == listener_name(spec, l.protocol_port) && spec.ownership.owns(&l.tags)
}

/// The deletes of our more HTTPS listeners on ports the desired router no longer has, and of our
/// main HTTPS listener left on a port that is no longer the main one (only while a main one is
/// wanted: without, `https::ensure_listener` deletes it). A listener on the main HTTPS port is
/// never stale: it serves the main listener's port whatever its name.
pub(crate) fn plan_stale(found: &[Listener], desired: &DesiredRouter, spec: &RouterSpec) -> Vec<ListenerStep> {
    let main_port = desired.https.as_ref().map(|h| h.port);
    let old_main = |l: &Listener| {
        main_port.is_some()
            && l.protocol == TERMINATED_HTTPS
            && l.name == main_name(spec)
            && spec.ownership.owns(&l.tags)
    };
    found
        .iter()
        .filter(|l| Some(l.protocol_port) != main_port && !desired.more_https.contains_key(&l.protocol_port))
        .filter(|l| is_ours(l, spec) || old_main(l))
        .map(|l| {
            let why = format!(
                "delete HTTPS listener {} on port {} (no HTTPS listener of the Gateway on it)",
                l.id, l.protocol_port
            );
            ListenerStep::delete(l, why)
        })
        .collect()
}

/// The more ports to serve: those of `desired.more_https` other than the main HTTPS port.
pub(crate) fn ports(desired: &DesiredRouter) -> Vec<u16> {
    let main = desired.https.as_ref().map(|h| h.port);
    desired.more_https.keys().copied().filter(|p| Some(*p) != main).collect()
}

/// Each more port's listener as found (ours, else an adopted one on the port) and its plan.
pub(crate) fn plan_ports<'a>(
    found: &'a [Listener],
    desired: &DesiredRouter,
    refs: HttpsRefs<'_>,
    lb_id: &str,
    spec: &RouterSpec,
) -> Vec<(u16, Option<&'a Listener>, HttpsListenerPlan)> {
    ports(desired)
        .into_iter()
        .map(|port| {
            let want = &desired.more_https[&port];
            let l = choose_listener(found, spec, TERMINATED_HTTPS, port);
            (port, l, plan_https_listener_named(want, l, refs, lb_id, spec, listener_name(spec, port)))
        })
        .collect()
}

/// Creates (or switches) the listener of every more port, each write isolated like the main
/// listener's: one Octavia refuses for good (or on hold) leaves that listener as it is, reported
/// on its owners, and the others go on. Returns the listeners as they are now, by port, and
/// whether every one is as desired (no refusal, hold or conflict: only then is garbage collected).
pub(crate) async fn ensure_isolated(
    cloud: &Cloud,
    lb: &LoadBalancer,
    listed: &[Listener],
    desired: &DesiredRouter,
    refs: HttpsRefs<'_>,
    holds: &HttpsHolds<'_>,
    report: &mut ConvergeReport,
) -> Result<(BTreeMap<u16, Listener>, bool)> {
    let mut now = BTreeMap::new();
    let mut as_desired = true;
    for (port, found, plan) in plan_ports(listed, desired, refs, &lb.id, &cloud.spec) {
        let key = WriteKey::HttpsListenerOn(port);
        as_desired &= plan.conflict.is_none();
        report.conflicts.extend(plan.conflict);
        let step = match plan.step {
            Some(step) if !holds.is_held(&key) => step,
            step => {
                as_desired &= step.is_none();
                now.extend(found.cloned().map(|l| (port, l)));
                continue;
            }
        };
        match listener_write(cloud, &lb.id, step, &mut report.writes).await {
            Ok(l) => {
                holds.succeeded(&key);
                now.extend(l.map(|l| (port, l)));
            }
            Err(error) => {
                let Some(refused) = refusal(&error) else { return Err(error) };
                let write = match &error {
                    DriverError::Write { write, .. } => write.clone(),
                    _ => format!("HTTPS listener on port {port}"),
                };
                holds.refused(key, write, refused, certificate_owners(desired.more_https.get(&port), None), report);
                as_desired = false;
                now.extend(found.cloned().map(|l| (port, l)));
            }
        }
    }
    Ok((now, as_desired))
}

#[cfg(test)]
#[path = "more_https_tests.rs"]
mod tests;
