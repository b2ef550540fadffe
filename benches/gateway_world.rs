//! The Gateway loop's input per pass (docs/benchmarks.md, "Gateway API objects converted once
//! per watch event"): how many Gateway API objects are converted from the generated Kubernetes
//! types to the domain types, and what a pass's `world()` costs, for a cluster of N objects.
//!
//! - filling the caches (the first LIST): the conversions of the watch events;
//! - a pass with no event (the 30 s recheck, a data-plane address change): conversions and time;
//! - one watch event (one HTTPRoute changed) and the pass after it;
//! - the same objects with every route served (this workload's routes redirect with a path
//!   replaced, which Octavia cannot: none is accepted and every Gateway's table is empty): the
//!   translation after `world()` as a first pass (every router's rules left out asked,
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
/// changes the redirect's path: its Gateway's route table changes). The redirect replaces the
/// path, which Octavia cannot: the route is not accepted, and its Gateway's table is empty.
/// `served`: the routes are accepted instead (see [`served_rules`]).
fn route(i: usize, gateways: usize, rv: usize, served: bool) -> k8s::HTTPRoute {
    let old = if rv == 1 { "/old".to_string() } else { format!("/old-{rv}") };
    let rules = if served {
        served_rules(i, rv)
    } else {
        json!([
            {"matches": [{"path": {"type": "PathPrefix", "value": "/"},
                          "headers": [{"name": "x-canary", "value": "yes"}]}],
             "backendRefs": [{"name": format!("svc{}", i % 10), "port": 80, "weight": 90},
                             {"name": format!("svc{}", (i + 1) % 10), "port": 80, "weight": 10}]},
            {"matches": [{"path": {"type": "Exact", "value": old}}],
             "filters": [{"type": "RequestRedirect", "requestRedirect": {"path": {"type": "ReplaceFullPath", "replaceFullPath": "/new"}, "statusCode": 301}}]}
        ])
    };
    serde_json::from_value(json!({
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
        "metadata": {"name": format!("route{i}"), "namespace": NS, "resourceVersion": rv.to_string(), "generation": rv},
        "spec": {
            "parentRefs": [{"name": format!("gw{}", i % gateways), "sectionName": "http"}],
            "hostnames": [format!("app{i}.example.com")],
            "rules": rules
        }
    }))
    .unwrap()
}

/// Rules a router serves, each route's redirect behind its forward (`gateway::redirect_order`):
/// `/api` with a header match forwards (its backends are not read: answered 500, a forwarding
/// policy still), then an http→https redirect of the rest of the host, which becomes one policy
/// per way to miss the forward (2). A change (`rv`) moves the forward's path.
fn served_rules(i: usize, rv: usize) -> serde_json::Value {
    let api = if rv == 1 { "/api".to_string() } else { format!("/api-{rv}") };
    json!([
        {"matches": [{"path": {"type": "PathPrefix", "value": api}, "headers": [{"name": "x-canary", "value": "yes"}]}],
         "backendRefs": [{"name": format!("svc{}", i % 10), "port": 80}]},
        {"matches": [{"path": {"type": "PathPrefix", "value": "/"}}],
         "filters": [{"type": "RequestRedirect", "requestRedirect": {"scheme": "https", "statusCode": 301}}]}
    ])
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
fn filled(gateways: usize, routes: usize, grants: usize, served: bool) -> (GatewayStores, Writer<HTTPRoute>) {
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
    (0..routes).for_each(|i| feed(&mut wr, Event::InitApply(route(i, gateways, 1, served))));
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
    let ((stores, mut wr), _, _, live) = mem::measure_live(|| filled(gateways, routes, grants, false));
    let fill_ms = t.elapsed().as_secs_f64() * 1e3;
    let c1 = conversions_on_this_thread();
    println!("caches filled (first LIST): {} conversions, {fill_ms:.0} ms, {live:.1} MiB live", c1 - c0);
    assert_eq!(c1 - c0, objects as u64, "one conversion per object listed");

    let programmed = Programmed::default();
    let mut best = f64::MAX;
    let mut translate_best = f64::MAX;
    for _ in 0..passes {
        let t = Instant::now();
        let w = world(&stores, &services, &secrets);
        best = best.min(t.elapsed().as_secs_f64());
        let t = Instant::now();
        std::hint::black_box(translate(&w, &programmed));
        translate_best = translate_best.min(t.elapsed().as_secs_f64());
    }
    let c2 = conversions_on_this_thread();
    assert_eq!(c2, c1, "a pass without an event converts nothing");
    println!(
        "a pass without an event: {} conversions per pass, world() {:.1} ms (best of {passes}); the translation after it {:.1} ms",
        (c2 - c1) / passes as u64,
        best * 1e3,
        translate_best * 1e3
    );

    // One watch event: route 0 changed, then the pass it triggers.
    feed(&mut wr, Event::Apply(route(0, gateways, 2, false)));
    let c3 = conversions_on_this_thread();
    let t = Instant::now();
    std::hint::black_box(world(&stores, &services, &secrets));
    let one_ms = t.elapsed().as_secs_f64() * 1e3;
    let c4 = conversions_on_this_thread();
    println!(
        "one watch event (an HTTPRoute changed) and its pass: {} conversions (event {}, pass {}), world() {one_ms:.1} ms",
        c4 - c2,
        c3 - c2,
        c4 - c3
    );
    assert_eq!((c3 - c2, c4 - c3), (1, 0), "the event converts its object, the pass nothing");

    println!("\n## the same, every route served: a forward, then a redirect kept behind it");
    let (stores, mut wr) = filled(gateways, routes, grants, true);
    let inputs = (&services, &secrets);
    let (first, kept, changed) = translation_passes(&stores, &mut wr, inputs, gateways, passes);
    println!(
        "the translation after world(), best of {passes}: {:.1} ms as a first pass (every router's rules left out \
         asked), {:.1} ms with them kept from the pass before (no table changed), {:.1} ms after an HTTPRoute change \
         (one Gateway's table changed)",
        first * 1e3,
        kept * 1e3,
        changed * 1e3
    );
}

/// The translation after `world()` in seconds, best of `passes` each: as a first pass, with the
/// rules left out kept from the pass before as the Gateway loop keeps them (no table changed),
/// and after a change of route 0 (its Gateway's table changed); the kept answer is checked
/// against a first pass's after a change.
fn translation_passes(
    stores: &GatewayStores,
    wr: &mut Writer<HTTPRoute>,
    (services, secrets): (&reflector::Store<Service>, &reflector::Store<Secret>),
    gateways: usize,
    passes: usize,
) -> (f64, f64, f64) {
    let programmed = Programmed::default();
    let w = world(stores, services, secrets);
    let t = translate(&w, &programmed);
    let entries: usize = t.routers.iter().flat_map(|r| &r.listeners).map(|l| l.entries.len()).sum();
    assert!(entries > 0, "the routes are served");
    let (mut first, mut kept_best, mut changed) = (f64::MAX, f64::MAX, f64::MAX);
    let (mut kept, _, _, live) = mem::measure_live(|| {
        let mut kept = UnservableRules::default();
        translate_reusing(&w, &programmed, &mut kept);
        kept
    });
    println!("the rules left out kept, with a copy of each router's table: {live:.1} MiB live");
    for _ in 0..passes {
        let w = world(stores, services, secrets);
        let t = Instant::now();
        std::hint::black_box(translate(&w, &programmed));
        first = first.min(t.elapsed().as_secs_f64());
        let t = Instant::now();
        std::hint::black_box(translate_reusing(&w, &programmed, &mut kept));
        kept_best = kept_best.min(t.elapsed().as_secs_f64());
    }
    for rv in 2..2 + passes {
        feed(wr, Event::Apply(route(0, gateways, rv, true)));
        let w = world(stores, services, secrets);
        let t = Instant::now();
        let kept_answer = std::hint::black_box(translate_reusing(&w, &programmed, &mut kept));
        changed = changed.min(t.elapsed().as_secs_f64());
        assert!(kept_answer == translate(&w, &programmed), "kept through a change: a first pass's answer");
    }
    (first, kept_best, changed)
}
