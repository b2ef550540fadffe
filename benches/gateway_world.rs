//! The Gateway loop's input per pass (docs/benchmarks.md, "Gateway API objects converted once
//! per watch event"): how many Gateway API objects are converted from the generated Kubernetes
//! types to the domain types, and what a pass's `world()` costs, for a cluster of N objects.
//!
//! - filling the caches (the first LIST): the conversions of the watch events;
//! - a pass with no event (the 30 s recheck, a data-plane address change): conversions and time;
//! - one watch event (one HTTPRoute changed) and the pass after it;
//! - the translation after `world()`: as a first pass (every router's rules left out asked,
//!   `gateway::router::unservable_rules`), with them kept from the pass before as the Gateway
//!   loop keeps them (`UnservableRules`: no table changed), and after an HTTPRoute change (one
//!   Gateway's table changed).
//!
//! Build and run (debug, as every bench here): `cargo test --bench gateway_world --no-run`, then
//! the printed binary with `--bench`. Without `--bench` in argv (as in `cargo test
//! --all-targets`) it runs a smoke-size workload.

mod common;

use common::mem;
use k8s_openapi::api::core::v1::{Secret, Service};
use kube::runtime::reflector::{self, store::Writer};
use kube::runtime::watcher::Event;
use kuryr_l7_router::controller::gateway::status::{GatewayStores, world};
use kuryr_l7_router::gateway::api::generated as k8s;
use kuryr_l7_router::gateway::api::{Blank, HTTPRoute, Parsed, conversions_on_this_thread, domain_event};
use kuryr_l7_router::gateway::build::{Programmed, translate, translate_reusing};
use kuryr_l7_router::gateway::router::UnservableRules;
use serde_json::json;
use std::time::Instant;

#[global_allocator]
static ALLOC: mem::Counting = mem::Counting;

const NS: &str = "bench";

fn gateway(i: usize) -> k8s::Gateway {
    serde_json::from_value(json!({
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
        "metadata": {"name": format!("gw{i}"), "namespace": NS, "resourceVersion": "1", "generation": 1},
        "spec": {"gatewayClassName": "kuryr", "listeners": [
            {"name": "http", "port": 80, "protocol": "HTTP", "allowedRoutes": {"namespaces": {"from": "Same"}}},
            {"name": "https", "port": 443, "protocol": "HTTPS", "hostname": format!("*.gw{i}.example.com"),
             "tls": {"mode": "Terminate", "certificateRefs": [{"name": format!("cert{i}")}]}}]}
    }))
    .unwrap()
}

/// Route `i` on Gateway `i % gateways`: two rules (a prefix with a header match, an exact path
/// with a redirect), weighted backends. `rv` is its resourceVersion (a change bumps it, and
/// changes the redirect's path: its Gateway's route table changes).
fn route(i: usize, gateways: usize, rv: usize) -> k8s::HTTPRoute {
    let old = if rv == 1 { "/old".to_string() } else { format!("/old-{rv}") };
    serde_json::from_value(json!({
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
        "metadata": {"name": format!("route{i}"), "namespace": NS, "resourceVersion": rv.to_string(), "generation": rv},
        "spec": {
            "parentRefs": [{"name": format!("gw{}", i % gateways), "sectionName": "http"}],
            "hostnames": [format!("app{i}.example.com")],
            "rules": [
                {"matches": [{"path": {"type": "PathPrefix", "value": "/"},
                              "headers": [{"name": "x-canary", "value": "yes"}]}],
                 "backendRefs": [{"name": format!("svc{}", i % 10), "port": 80, "weight": 90},
                                 {"name": format!("svc{}", (i + 1) % 10), "port": 80, "weight": 10}]},
                {"matches": [{"path": {"type": "Exact", "value": old}}],
                 "filters": [{"type": "RequestRedirect", "requestRedirect": {"path": {"type": "ReplaceFullPath", "replaceFullPath": "/new"}, "statusCode": 301}}]}
            ]
        }
    }))
    .unwrap()
}

fn class() -> k8s::GatewayClass {
    serde_json::from_value(json!({
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass",
        "metadata": {"name": "kuryr", "resourceVersion": "1"},
        "spec": {"controllerName": "openstack.org/kuryr-l7-router"}
    }))
    .unwrap()
}

fn grant(i: usize) -> k8s::ReferenceGrant {
    serde_json::from_value(json!({
        "apiVersion": "gateway.networking.k8s.io/v1beta1", "kind": "ReferenceGrant",
        "metadata": {"name": format!("grant{i}"), "namespace": NS, "resourceVersion": "1"},
        "spec": {"from": [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "namespace": format!("team{i}")}],
                 "to": [{"group": "", "kind": "Service"}]}
    }))
    .unwrap()
}

/// What the Gateway loop's watch does with an event before its cache stores it: the object
/// converted to its domain kind (`controller::gateway`).
fn feed<G, D>(w: &mut Writer<D>, ev: Event<G>)
where
    D: Blank + for<'a> From<&'a G> + Clone + 'static,
{
    let ev = match ev {
        Event::Apply(o) => Event::Apply(Parsed::Read(o)),
        Event::InitApply(o) => Event::InitApply(Parsed::Read(o)),
        Event::Delete(o) => Event::Delete(Parsed::Read(o)),
        Event::Init => Event::Init,
        Event::InitDone => Event::InitDone,
    };
    w.apply_watcher_event(&domain_event(ev, &mut |_: &D, why: &str| panic!("unreadable: {why}")));
}

/// Fills the stores as the first LIST of every watch does; the HTTPRoutes' writer is kept for
/// the change that follows.
fn filled(gateways: usize, routes: usize, grants: usize) -> (GatewayStores, Writer<HTTPRoute>) {
    let (classes, mut wc) = reflector::store();
    let (gws, mut wg) = reflector::store();
    let (rts, mut wr) = reflector::store();
    let (grs, mut wgr) = reflector::store();
    let (namespaces, mut wn) = reflector::store();
    feed(&mut wc, Event::<k8s::GatewayClass>::Init);
    feed(&mut wc, Event::InitApply(class()));
    feed(&mut wc, Event::<k8s::GatewayClass>::InitDone);
    feed(&mut wg, Event::<k8s::Gateway>::Init);
    (0..gateways).for_each(|i| feed(&mut wg, Event::InitApply(gateway(i))));
    feed(&mut wg, Event::<k8s::Gateway>::InitDone);
    feed(&mut wr, Event::<k8s::HTTPRoute>::Init);
    (0..routes).for_each(|i| feed(&mut wr, Event::InitApply(route(i, gateways, 1))));
    feed(&mut wr, Event::<k8s::HTTPRoute>::InitDone);
    feed(&mut wgr, Event::<k8s::ReferenceGrant>::Init);
    (0..grants).for_each(|i| feed(&mut wgr, Event::InitApply(grant(i))));
    feed(&mut wgr, Event::<k8s::ReferenceGrant>::InitDone);
    wn.apply_watcher_event(&Event::Init);
    wn.apply_watcher_event(&Event::InitDone);
    let (backend_tls, _) = reflector::store();
    let (listener_sets, _) = reflector::store();
    let (config_maps, _) = reflector::store();
    let stores = GatewayStores {
        classes,
        gateways: gws,
        routes: rts,
        grants: grs,
        namespaces,
        backend_tls,
        listener_sets,
        config_maps,
        config_maps_readable: true,
    };
    (stores, wr)
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    println!("mode: {}", if full { "full (--bench)" } else { "smoke (no --bench in argv)" });
    let (gateways, routes, grants, passes) = if full { (100, 5_000, 50, 10) } else { (5, 50, 2, 2) };
    let objects = 1 + gateways + routes + grants;
    let (services, _) = reflector::store::<Service>();
    let (secrets, _) = reflector::store::<Secret>();
    println!(
        "\n## {objects} Gateway API objects (1 GatewayClass, {gateways} Gateways, {routes} HTTPRoutes, {grants} ReferenceGrants)"
    );

    let c0 = conversions_on_this_thread();
    let t = Instant::now();
    let ((stores, mut wr), _, _, live) = mem::measure_live(|| filled(gateways, routes, grants));
    let fill_ms = t.elapsed().as_secs_f64() * 1e3;
    let c1 = conversions_on_this_thread();
    println!("caches filled (first LIST): {} conversions, {fill_ms:.0} ms, {live:.1} MiB live", c1 - c0);
    assert_eq!(c1 - c0, objects as u64, "one conversion per object listed");

    let programmed = Programmed::default();
    let mut best = f64::MAX;
    let (mut fresh_best, mut kept_best) = (f64::MAX, f64::MAX);
    // The Gateway loop's rules left out, kept from pass to pass: filled by a first pass.
    let mut kept = UnservableRules::default();
    translate_reusing(&world(&stores, &services, &secrets), &programmed, &mut kept);
    for _ in 0..passes {
        let t = Instant::now();
        let w = world(&stores, &services, &secrets);
        best = best.min(t.elapsed().as_secs_f64());
        let t = Instant::now();
        std::hint::black_box(translate(&w, &programmed));
        fresh_best = fresh_best.min(t.elapsed().as_secs_f64());
        let t = Instant::now();
        std::hint::black_box(translate_reusing(&w, &programmed, &mut kept));
        kept_best = kept_best.min(t.elapsed().as_secs_f64());
    }
    let c2 = conversions_on_this_thread();
    assert_eq!(c2, c1, "a pass without an event converts nothing");
    println!(
        "a pass without an event: {} conversions per pass, world() {:.1} ms (best of {passes})",
        (c2 - c1) / passes as u64,
        best * 1e3,
    );

    // One watch event: route 0 changed, then the pass it triggers.
    feed(&mut wr, Event::Apply(route(0, gateways, 2)));
    let c3 = conversions_on_this_thread();
    let t = Instant::now();
    let w = world(&stores, &services, &secrets);
    let one_ms = t.elapsed().as_secs_f64() * 1e3;
    let c4 = conversions_on_this_thread();
    println!(
        "one watch event (an HTTPRoute changed) and its pass: {} conversions (event {}, pass {}), world() {one_ms:.1} ms",
        c4 - c2,
        c3 - c2,
        c4 - c3
    );
    assert_eq!((c3 - c2, c4 - c3), (1, 0), "the event converts its object, the pass nothing");
    assert!(
        translate_reusing(&w, &programmed, &mut kept) == translate(&w, &programmed),
        "the rules left out kept through the change are those of a first pass"
    );

    // The pass after each of `passes` more changes of route 0 (its Gateway's table changes).
    let mut changed_best = f64::MAX;
    for rv in 3..3 + passes {
        feed(&mut wr, Event::Apply(route(0, gateways, rv)));
        let w = world(&stores, &services, &secrets);
        let t = Instant::now();
        std::hint::black_box(translate_reusing(&w, &programmed, &mut kept));
        changed_best = changed_best.min(t.elapsed().as_secs_f64());
    }
    println!(
        "the translation after world(), best of {passes}: {:.1} ms as a first pass (every router's rules left out \
         asked), {:.1} ms with them kept from the pass before (no table changed), {:.1} ms after an HTTPRoute change \
         (one Gateway's table changed)",
        fresh_best * 1e3,
        kept_best * 1e3,
        changed_best * 1e3
    );
}
