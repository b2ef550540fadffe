//! Zone-aware weights: bounds, locality, every safeguard, hints, backup mode.

use std::path::PathBuf;

use kuryr_l7_router::translate::zone::{Candidate, weigh, zone_weights};
use kuryr_l7_router::translate::*;
use proptest::prelude::*;

fn zones_router(opts: &TranslateOptions) -> kuryr_l7_router::model::DesiredRouter {
    translate(&load_manifests(&[PathBuf::from("tests/fixtures/ingress/zones")]).unwrap(), opts)
}

fn weights(r: &kuryr_l7_router::model::DesiredRouter, pool: &str) -> Vec<u16> {
    r.pools[pool].members.iter().map(|m| m.weight).collect()
}

fn za() -> TranslateOptions {
    TranslateOptions { router_zone: Some("zone-a".into()), ..Default::default() }
}

#[test]
fn opted_in_services_are_weighted_by_zone() {
    let r = zones_router(&za());
    // catalog: 2 of 6 local, f = 2 → locals may carry 2/6 each = 2/3 together: ratio 4:1.
    assert_eq!(weights(&r, "shop_catalog"), [4, 4, 1, 1, 1, 1]);
    assert!(
        r.pools["shop_catalog"].weighting.starts_with("zone-aware: 2 of 6"),
        "{}",
        r.pools["shop_catalog"].weighting
    );
    // plain: not opted in → even.
    assert_eq!(weights(&r, "shop_plain"), [1, 1]);
    assert!(r.pools["shop_plain"].weighting.starts_with("even: Service is not zone-aware"));
    // zone_aware_default covers it.
    let r = zones_router(&TranslateOptions { zone_aware_default: true, ..za() });
    assert_eq!(weights(&r, "shop_plain"), [256, 1]);
}

#[test]
fn hints_decide_locality_when_present() {
    // cart (trafficDistribution: PreferClose): 10.2.0.2 lives in zone-b but is hinted for zone-a.
    let r = zones_router(&za());
    let w = weights(&r, "shop_cart");
    assert!(w[1] > w[0] && w[1] > w[2], "{w:?}");
    assert!(r.pools["shop_cart"].weighting.contains("hinted for"));
}

#[test]
fn safeguards_fall_back_to_even_weights() {
    let r = zones_router(&TranslateOptions::default());
    assert!(r.pools["shop_catalog"].weighting.contains("no router zone"));
    assert_eq!(weights(&r, "shop_catalog"), [1; 6]);
    let r = zones_router(&TranslateOptions { router_zone: Some("zone-x".into()), ..Default::default() });
    assert!(r.pools["shop_catalog"].weighting.contains("no ready endpoint in router zone zone-x"));
    let r = zones_router(&TranslateOptions { zone_min_local_endpoints: 3, ..za() });
    assert!(r.pools["shop_catalog"].weighting.contains("fewer than zone_min_local_endpoints 3"));
    let cands = vec![
        Candidate { label: "a".into(), zone: Some("zone-a".into()), for_zones: None },
        Candidate { label: "b".into(), zone: None, for_zones: None },
    ];
    let w = weigh(&cands, true, &za());
    assert_eq!(w.weights, [(1, false), (1, false)]);
    assert_eq!(w.reason, "even: endpoint b has no zone");
}

#[test]
fn backup_mode_marks_remote_members() {
    let r = zones_router(&TranslateOptions { zone_mode: ZoneMode::Backup, ..za() });
    let b: Vec<bool> = r.pools["shop_catalog"].members.iter().map(|m| m.backup).collect();
    assert_eq!(b, [false, false, true, true, true, true]);
    assert!(r.pools["shop_catalog"].weighting.contains("requires a pool health monitor"));
}

/// Expected shares of traffic for `local` locals of `n` with weights (wl, wr).
fn shares(local: usize, n: usize, (wl, wr): (u16, u16)) -> (f64, f64) {
    let total = local as f64 * f64::from(wl) + (n - local) as f64 * f64::from(wr);
    (f64::from(wl) / total, f64::from(wr) / total)
}

#[test]
fn worked_examples_of_docs() {
    // (local, n, factor) → (wl, wr): the table in docs/zone-aware.md.
    for (l, n, f, want) in [
        (1, 3, 2.0, (4, 1)),
        (2, 6, 2.0, (4, 1)),
        (1, 2, 2.0, (256, 1)),
        (1, 10, 2.0, (128, 57)),
        (3, 10, 1.5, (256, 135)),
        (5, 5, 2.0, (1, 1)),
        (2, 6, 1.0, (1, 1)),
    ] {
        assert_eq!(zone_weights(l, n, f), want, "L={l} N={n} f={f}");
    }
}

proptest! {
    #[test]
    fn weights_are_bounded_local_and_capped(local in 1usize..60, remote in 0usize..60, f in 1.0f64..5.0) {
        let n = local + remote;
        let (wl, wr) = zone_weights(local, n, f);
        prop_assert!((1..=256).contains(&wl) && (1..=256).contains(&wr));
        let (sl, sr) = shares(local, n, (wl, wr));
        let even = 1.0 / n as f64;
        // Locality never below even weights, and no endpoint above f times its even share.
        prop_assert!(sl * local as f64 >= even * local as f64 - 1e-9);
        prop_assert!(sl <= f * even + 1e-9, "local share {} > {} x {}", sl, f, even);
        prop_assert!(sr <= f * even + 1e-9);
    }

    #[test]
    fn weigh_always_gives_valid_octavia_weights(zones in prop::collection::vec(prop::option::weighted(0.9, 0..3u8), 0..30), min in 0u32..4, backup in any::<bool>()) {
        let cands: Vec<Candidate> = zones.iter().enumerate().map(|(i, z)| Candidate { label: i.to_string(), zone: z.map(|z| format!("zone-{}", (b'a' + z) as char)), for_zones: None }).collect();
        let opts = TranslateOptions { zone_min_local_endpoints: min, zone_mode: if backup { ZoneMode::Backup } else { ZoneMode::Weight }, ..za() };
        let w = weigh(&cands, true, &opts);
        prop_assert_eq!(w.weights.len(), cands.len());
        prop_assert!(w.weights.iter().all(|(w, _)| (1..=256).contains(w)));
        if !w.reason.starts_with("zone-aware") {
            prop_assert!(w.weights.iter().all(|x| *x == (1, false)));
        }
    }
}
