//! `show` says which zone the router is in and why each pool is weighted the way it is: the
//! reasons come from the translation of the manifests given (`show -f`), the very computation
//! `plan` prints, next to the weights Octavia holds (here: the simulator after applying the plan).

use kuryr_l7_router::driver::RouterSnapshot;
use kuryr_l7_router::driver::diff::plan_writes;
use kuryr_l7_router::driver::ownership::Ownership;
use kuryr_l7_router::driver::plan::DiffOptions;
use kuryr_l7_router::driver::sim::Simulator;
use kuryr_l7_router::openstack::octavia::LoadBalancer;
use kuryr_l7_router::show::{Reasons, render_with, weighting_lines};
use kuryr_l7_router::translate::{TranslateOptions, load_manifests, translate};
use std::path::PathBuf;

fn converged() -> (kuryr_l7_router::model::DesiredRouter, Simulator) {
    let inputs = load_manifests(&[PathBuf::from("tests/fixtures/ingress/zones")]).unwrap();
    let desired = translate(&inputs, &TranslateOptions { router_zone: Some("zone-a".into()), ..Default::default() });
    let mut sim = Simulator::default();
    let opts = DiffOptions { ownership: Ownership::new("c1"), health_monitor: None };
    let plan = plan_writes(&desired, &sim.router, &opts);
    sim.apply_all(&plan.writes).unwrap();
    (desired, sim)
}

#[test]
fn every_pool_shows_the_reason_plan_computes() {
    let (desired, sim) = converged();
    assert!(!sim.router.pools.is_empty());
    for p in &sim.router.pools {
        let lines = weighting_lines(p, Some(&desired));
        let want = &desired.pools[&p.name];
        assert_eq!(
            lines,
            [format!("members: {}", want.member_mode), format!("weighting: {}", want.weighting)],
            "{}",
            p.name
        );
    }
    // Without manifests, show says nothing it cannot know.
    assert!(weighting_lines(&sim.router.pools[0], None).is_empty());
}

#[test]
fn weights_that_differ_from_the_plan_are_pointed_out() {
    let (desired, mut sim) = converged();
    let pool = sim.router.pools.iter_mut().find(|p| p.members.len() > 1).unwrap();
    std::sync::Arc::make_mut(&mut pool.members)[0].weight += 1;
    let lines = weighting_lines(pool, Some(&desired));
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert!(lines[2].contains("differ from the plan"), "{lines:?}");
    pool.name = "elsewhere_pool".into();
    assert_eq!(weighting_lines(pool, Some(&desired)), ["weighting: (pool not in the manifests given)"]);
}

#[test]
fn the_table_names_the_router_zone_and_each_reason() {
    let (desired, sim) = converged();
    let snapshot = RouterSnapshot {
        lb: LoadBalancer { id: "lb-1".into(), name: "router".into(), ..Default::default() },
        floating_ip: None,
        listener: Some(("listener-1".into(), 80)),
        actual: Some(sim.router.clone()),
        https: None,
        more_https: vec![],
        more_http: vec![],
        other_listeners: vec![],
    };
    let zone = "router zone: zone-a ([octavia_defaults] router_zone)".to_string();
    let text = render_with(&snapshot, Some(&Reasons { router_zone: zone.clone(), desired: Some(&desired) }));
    assert!(text.contains(&zone), "{text}");
    for p in desired.pools.values() {
        assert!(text.contains(&format!("weighting: {}", p.weighting)), "{}: {text}", p.name);
    }
}
