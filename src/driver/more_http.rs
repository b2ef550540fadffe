//! The router's more HTTP listeners ([`DesiredRouter::more_http`]): a Gateway with HTTP
//! listeners on several ports (80 and 8080) is one load balancer with one Octavia HTTP listener
//! per port. The router's HTTP listener (`RouterSpec::listener_port`) is planned as before; each
//! more port gets a listener of its own, named `<router>-http-<port>` and tagged as the router's,
//! with its policies planned like the HTTPS listener's (`view::DesiredView::more_http`).
//!
//! Planned from the listing the HTTP listener's lookup already made, so an Ingress router (which
//! has none) makes no request more. A listener of ours on a port no longer wanted is deleted
//! before the HTTP listener's plan, so that the pools only its policies used are free to go: ours
//! means our tags AND this router's `-http-<port>` name, never a listener another router or an
//! admin created. The router's own HTTP listener (`<router>-http`, our tags) left on a port that
//! is no longer its listener port nor a more port is deleted too: a Gateway whose lowest HTTP port
//! moved (the router's listener port follows it) has its main listener on the new port, and the
//! old one would go on answering the old port with the old routes.

use super::cloud::Cloud;
use super::error::Result;
use super::execute::listener_write;
use super::listener_plan::{ListenerStep, choose_listener, plan_http_listener_on};
use super::report::{ConvergeReport, MoreHttpSnapshot};
use super::spec::RouterSpec;
use crate::model::DesiredRouter;
use crate::openstack::octavia::{Listener, LoadBalancer};

/// The name of the router's HTTP listener on a more port.
pub(crate) fn listener_name(spec: &RouterSpec, port: u16) -> String {
    format!("{}-http-{port}", spec.name)
}

/// Whether `l` is one of this router's more HTTP listeners (our tags, its name, HTTP).
fn is_ours(l: &Listener, spec: &RouterSpec) -> bool {
    l.protocol == "HTTP"
        && l.protocol_port != spec.listener_port
        && l.name == listener_name(spec, l.protocol_port)
        && spec.ownership.owns(&l.tags)
}

/// Whether `l` is the router's own HTTP listener on a port other than its listener port (our
/// tags and its `<router>-http` name): what a move of the lowest HTTP port leaves behind.
fn is_old_main(l: &Listener, spec: &RouterSpec) -> bool {
    l.protocol == "HTTP"
        && l.protocol_port != spec.listener_port
        && l.name == spec.http_listener_name()
        && spec.ownership.owns(&l.tags)
}

/// The deletes of our more HTTP listeners, and of our main listener left on an old port, on
/// ports the desired router no longer has.
pub(crate) fn plan_stale(found: &[Listener], desired: &DesiredRouter, spec: &RouterSpec) -> Vec<ListenerStep> {
    found
        .iter()
        .filter(|l| (is_ours(l, spec) || is_old_main(l, spec)) && !desired.more_http.contains_key(&l.protocol_port))
        .map(|l| {
            let why =
                format!("delete HTTP listener {} on port {} (no listener of the Gateway on it)", l.id, l.protocol_port);
            ListenerStep::delete(l, why)
        })
        .collect()
}

/// Each more port's listener as found (ours, else an adopted one on the port) and its write.
pub(crate) fn plan_ports<'a>(
    found: &'a [Listener],
    desired: &DesiredRouter,
    lb_id: &str,
    spec: &RouterSpec,
) -> Vec<(u16, Option<&'a Listener>, Option<ListenerStep>)> {
    desired
        .more_http
        .keys()
        .filter(|&&port| port != spec.listener_port)
        .map(|&port| {
            let l = choose_listener(found, spec, "HTTP", port);
            (port, l, plan_http_listener_on(l, lb_id, spec, port, listener_name(spec, port)))
        })
        .collect()
}

/// Creates (or makes as configured) the listener of every more port; returns them by port, for
/// their policies' plans.
pub(crate) async fn ensure(
    cloud: &Cloud,
    lb: &LoadBalancer,
    found: &[Listener],
    desired: &DesiredRouter,
    report: &mut ConvergeReport,
) -> Result<Vec<(u16, Listener)>> {
    let mut out = Vec::new();
    for (port, l, step) in plan_ports(found, desired, &lb.id, &cloud.spec) {
        let listener = match step {
            Some(step) => listener_write(cloud, &lb.id, step, &mut report.writes).await?,
            None => l.cloned(),
        };
        out.extend(listener.map(|l| (port, l)));
    }
    Ok(out)
}

/// The router's more HTTP listeners among `listed` for `show`, by port: each one's policies and
/// default pool.
pub(crate) async fn snapshot(
    cloud: &Cloud,
    reads: &std::sync::Mutex<super::read_cache::ReadCache>,
    listed: &[Listener],
) -> Result<Vec<MoreHttpSnapshot>> {
    let mut listeners: Vec<&Listener> = listed.iter().filter(|l| is_ours(l, &cloud.spec)).collect();
    listeners.sort_by_key(|l| l.protocol_port);
    let mut out = Vec::with_capacity(listeners.len());
    for l in listeners {
        let actual = super::read::read_actual(cloud, reads, l, None).await?;
        out.push(MoreHttpSnapshot { listener_id: l.id.clone(), port: l.protocol_port, actual });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::listener_plan::{ListenerWrite, deleted_ids};
    use super::*;
    use crate::model::PortListener;
    use std::collections::BTreeMap;

    fn spec() -> RouterSpec {
        RouterSpec::for_tests("kuryr-gw-1-ns.gw")
    }

    fn listener(port: u16, name: &str, ours: bool) -> Listener {
        let s = spec();
        let tags = if ours { s.ownership.router_tags() } else { vec!["someone-else".into()] };
        Listener {
            id: format!("{name}@{port}"),
            name: name.into(),
            protocol: "HTTP".into(),
            protocol_port: port,
            tags,
            insert_headers: serde_json::to_value(super::super::listener_plan::forwarded_headers(true)).ok(),
            ..Default::default()
        }
    }

    fn wanting(ports: &[u16]) -> DesiredRouter {
        let more_http: BTreeMap<u16, PortListener> = ports.iter().map(|p| (*p, PortListener::default())).collect();
        DesiredRouter { more_http, ..DesiredRouter::default() }
    }

    #[test]
    fn a_more_port_gets_a_listener_named_and_tagged_as_the_routers() {
        let s = spec();
        let main = listener(80, "kuryr-gw-1-ns.gw-http", true);
        let plans = plan_ports(std::slice::from_ref(&main), &wanting(&[8080]), "lb", &s);
        assert_eq!(plans.len(), 1);
        let (port, found, step) = &plans[0];
        assert_eq!((*port, found.is_none()), (8080, true));
        let Some(ListenerWrite::Create(body)) = step.as_ref().map(|s| &s.write) else { panic!("a create: {step:?}") };
        assert_eq!(body.name.as_deref(), Some("kuryr-gw-1-ns.gw-http-8080"));
        assert_eq!((body.protocol.as_str(), body.protocol_port), ("HTTP", 8080));
        assert_eq!(body.tags, s.ownership.router_tags());
        assert_eq!(body.loadbalancer_id.as_deref(), Some("lb"));
        // Found as created: nothing to write, the listener is used.
        let made = listener(8080, "kuryr-gw-1-ns.gw-http-8080", true);
        let listed = [main, made.clone()];
        let plans = plan_ports(&listed, &wanting(&[8080]), "lb", &s);
        assert!(plans[0].1.is_some_and(|l| l.id == made.id) && plans[0].2.is_none(), "{plans:?}");
    }

    #[test]
    fn only_our_listener_on_a_port_dropped_is_deleted() {
        let s = spec();
        let listed = [
            listener(80, "kuryr-gw-1-ns.gw-http", true),
            listener(8080, "kuryr-gw-1-ns.gw-http-8080", true),
            // Another router's, an admin's, ours without our tags: never touched.
            listener(8081, "kuryr-gw-2-ns.other-http-8081", true),
            listener(8082, "kuryr-gw-1-ns.gw-http-8082", false),
            listener(8083, "admin", true),
        ];
        let deleted = |d: &DesiredRouter| deleted_ids(plan_stale(&listed, d, &s));
        assert_eq!(deleted(&wanting(&[])), vec!["kuryr-gw-1-ns.gw-http-8080@8080".to_string()]);
        assert!(deleted(&wanting(&[8080])).is_empty());
        // An Ingress router (no more ports) deletes nothing but such a listener of its own.
        assert!(plan_ports(&listed, &wanting(&[]), "lb", &s).is_empty());
    }

    #[test]
    fn our_main_listener_left_on_an_old_port_is_deleted() {
        // The lowest HTTP port moved from 80 to 81.
        let s = RouterSpec { listener_port: 81, ..spec() };
        let listed = [
            listener(80, "kuryr-gw-1-ns.gw-http", true),
            listener(81, "kuryr-gw-1-ns.gw-http", true),
            // Named like ours without our tags, another router's: never touched.
            listener(82, "kuryr-gw-1-ns.gw-http", false),
            listener(83, "kuryr-gw-2-ns.other-http", true),
        ];
        let deleted = |d: &DesiredRouter| deleted_ids(plan_stale(&listed, d, &s));
        assert_eq!(deleted(&wanting(&[])), vec!["kuryr-gw-1-ns.gw-http@80".to_string()]);
        // 80 is a more port now: the old main listener serves it, kept.
        assert!(deleted(&wanting(&[80])).is_empty());
    }
}
