//! A pool fed by several Services with weights (Gateway API `backendRefs[].weight`): the Octavia
//! weight of every member, so that each Service gets its share of the pool's requests whatever
//! its number of endpoints, and, within a Service, its members keep their zone weights.
//!
//! Feed `i` has weight `w_i` and members `k` with zone weights `z_ik` (1 each when the Service
//! is not zone-aware; 0 for a draining member). Octavia spreads a pool's requests over its
//! members in proportion to their weights. Feed `i` must get `w_i / Σ w_j` of them, and within
//! it member `k` the fraction `z_ik / Z_i`, where `Z_i = Σ_k z_ik` over its primary (not backup)
//! members. The exact member weight is therefore proportional to `t_ik = w_i · z_ik / Z_i`;
//! scaled so the largest is 256 (Octavia's maximum) and rounded:
//!
//! ```text
//! x_ik = 256 · t_ik / max t          m_ik = max(1, round(x_ik))   (w_i > 0, z_ik > 0)
//! ```
//!
//! and `m_ik = 0` when `z_ik = 0` (draining stays draining). A backup member (zone mode
//! `backup`) is scaled as its feed's primaries are, and takes no part in `Z_i` or the maximum.
//!
//! **Precision.** Rounding moves each `m_ik` by less than 1 from `x_ik` (the `max(1, …)` floor
//! included), so feed `i`'s realized member sum `r_i` is within `n_i` (its member count) of the
//! exact `e_i`. With `N` members in all and a realized total `R`, the realized share is off the
//! asked one by at most `(n_i + d_i·N)/R ≤ 2N/R`: e.g. 10 members with total weight ≥ 1000 are
//! within 2 percentage points. Worst when a tiny share meets many members: a feed whose exact
//! weights fall below 1 gets 1 per member (more than asked), so with 256 as the top weight a share
//! below about `n_i / (256 · N)` cannot be given exactly. The property test checks the bound.

use crate::model::{KubeRef, Member};

/// One feed of a split pool with its members as its Service's own weighting made them.
#[derive(Clone, Debug)]
pub(crate) struct FeedMembers {
    pub service: KubeRef,
    pub weight: u32,
    pub members: Vec<Member>,
    pub weighting: String,
}

/// The members of a split pool: every feed's members, weighted by [`split_weights`], sorted by
/// (address, port). An endpoint behind two of the Services (same address and port) is one
/// Octavia member: its weights add up (capped at 256). Also the pool's weighting reason.
pub(crate) fn split_members(feeds: &[FeedMembers]) -> (Vec<Member>, String) {
    let weights = split_weights(
        &feeds
            .iter()
            .map(|f| FeedWeights {
                weight: f.weight,
                members: f.members.iter().map(|m| (m.weight, m.backup)).collect(),
            })
            .collect::<Vec<_>>(),
    );
    let mut out: Vec<Member> = Vec::new();
    for (f, ws) in feeds.iter().zip(weights) {
        out.extend(f.members.iter().zip(ws).map(|(m, weight)| Member { weight, ..m.clone() }));
    }
    out.sort_by_key(|m| (m.address, m.protocol_port));
    out.dedup_by(|later, kept| {
        let same = (later.address, later.protocol_port) == (kept.address, kept.protocol_port);
        if same {
            kept.weight = kept.weight.saturating_add(later.weight).min(256);
            kept.backup &= later.backup;
        }
        same
    });
    let parts: Vec<String> = feeds
        .iter()
        .map(|f| format!("{}/{} weight {} ({})", f.service.namespace, f.service.name, f.weight, f.weighting))
        .collect();
    out.shrink_to_fit();
    (out, format!("split: {}", parts.join("; ")))
}

/// One feed of a split pool: its weight and its members' zone weights (backup or not).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FeedWeights {
    /// The backendRef's weight (the spec allows 0..=1_000_000).
    pub weight: u32,
    /// Each member's weight from the Service's own weighting (0..=256), and whether it is a
    /// backup member.
    pub members: Vec<(u16, bool)>,
}

/// The Octavia weight (0..=256) of every member of every feed, in input order.
pub(crate) fn split_weights(feeds: &[FeedWeights]) -> Vec<Vec<u16>> {
    // t_ik = w_i · z_ik / Z_i, kept as the exact fraction (numerator, denominator) in u128.
    let primary_sum = |f: &FeedWeights| -> u128 { f.members.iter().filter(|m| !m.1).map(|m| u128::from(m.0)).sum() };
    let fraction = |f: &FeedWeights, z: u16| -> (u128, u128) {
        let total = primary_sum(f).max(1);
        (u128::from(f.weight) * u128::from(z), total)
    };
    let best = feeds
        .iter()
        .flat_map(|f| f.members.iter().filter(|m| !m.1).map(move |m| fraction(f, m.0)))
        .filter(|(n, _)| *n > 0)
        .max_by(|a, b| (a.0 * b.1).cmp(&(b.0 * a.1)));
    let Some((best_n, best_d)) = best else {
        // No primary member takes traffic: backups alone keep their own weights, scaled by
        // their feed's weight being positive.
        return feeds
            .iter()
            .map(|f| f.members.iter().map(|m| if f.weight == 0 { 0 } else { m.0.min(256) }).collect())
            .collect();
    };
    feeds
        .iter()
        .map(|f| {
            f.members
                .iter()
                .map(|m| {
                    let (n, d) = fraction(f, m.0);
                    if n == 0 {
                        return 0;
                    }
                    // x = 256 · (n/d) / (best_n/best_d), rounded half up in integers.
                    let num = 256 * n * best_d;
                    let den = d * best_n;
                    let rounded = (2 * num + den) / (2 * den);
                    rounded.clamp(1, 256) as u16
                })
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A feed of `n` even members.
    fn even(weight: u32, n: usize) -> FeedWeights {
        FeedWeights { weight, members: vec![(1, false); n] }
    }

    #[test]
    fn an_endpoint_behind_two_services_is_one_member_with_both_weights() {
        let m = crate::testing::member;
        let feed = |name: &str, weight: u32, members: Vec<Member>| FeedMembers {
            service: KubeRef::service("ns", name),
            weight,
            members,
            weighting: "even".into(),
        };
        let (members, why) = split_members(&[
            feed("web", 1, vec![m("10.0.0.2", 1), m("10.0.0.1", 1)]),
            feed("canary", 1, vec![m("10.0.0.1", 1)]),
        ]);
        let got: Vec<(String, u16)> = members.iter().map(|m| (m.address.to_string(), m.weight)).collect();
        // web: 128 per member, canary: 256 on its one; 10.0.0.1 serves both.
        assert_eq!(got, [("10.0.0.1".to_string(), 256), ("10.0.0.2".to_string(), 128)]);
        assert_eq!(why, "split: ns/web weight 1 (even); ns/canary weight 1 (even)");
    }

    fn flat(feeds: &[FeedWeights]) -> Vec<Vec<u16>> {
        split_weights(feeds)
    }

    #[test]
    fn equal_weights_offset_pod_counts() {
        // 1 pod vs 4 pods at weight 1 each: the lone pod carries 4 times the per-member weight.
        assert_eq!(flat(&[even(1, 1), even(1, 4)]), vec![vec![256], vec![64; 4]]);
    }

    #[test]
    fn weights_scale_to_256_and_zero_weight_or_no_member_gets_nothing() {
        assert_eq!(flat(&[even(70, 1), even(30, 1), even(0, 3)]), vec![vec![256], vec![110], vec![0; 3]]);
        assert_eq!(flat(&[even(0, 1)]), vec![vec![0]]);
        assert_eq!(flat(&[even(5, 0), even(1, 1)]), vec![vec![], vec![256]]);
    }

    #[test]
    fn a_tiny_share_keeps_weight_one() {
        assert_eq!(flat(&[even(1_000_000, 1), even(1, 1)]), vec![vec![256], vec![1]]);
    }

    #[test]
    fn zone_weights_split_a_feeds_share_and_never_change_it() {
        // Feed a: one local member (zone weight 3) and one remote (1); feed b: two even members.
        // 50/50: a's members carry 3/4 and 1/4 of a's half, b's members a quarter each.
        let a = FeedWeights { weight: 1, members: vec![(3, false), (1, false)] };
        let w = flat(&[a, even(1, 2)]);
        assert_eq!(w, vec![vec![256, 85], vec![171, 171]]);
        let a_share = f64::from(256 + 85) / f64::from(256 + 85 + 171 + 171);
        assert!((a_share - 0.5).abs() < 0.01, "{a_share}");
    }

    #[test]
    fn draining_members_stay_at_zero_and_backups_scale_with_their_feed() {
        let a = FeedWeights { weight: 3, members: vec![(1, false), (0, false), (1, true)] };
        let w = flat(&[a, even(1, 1)]);
        // a: one live primary carries all of a's 3/4; its backup is scaled the same way.
        assert_eq!(w, vec![vec![256, 0, 256], vec![85]]);
    }

    #[test]
    fn many_pods_against_one() {
        // 90/10 with 100 pods in the 10 % feed: each gets 1 (≥ the exact 0.28), so that feed
        // gets 100/(100+256) = 28 %, not 10 %: the documented bound (2N/R) allows it.
        let w = flat(&[even(90, 1), even(10, 100)]);
        assert_eq!(w[0], vec![256]);
        assert!(w[1].iter().all(|m| *m == 1));
        // With 9 pods against 1 the shares come out to within a point.
        let w = flat(&[even(90, 9), even(10, 1)]);
        let a = 9.0 * f64::from(w[0][0]);
        let share = a / (a + f64::from(w[1][0]));
        assert!((share - 0.9).abs() < 0.01, "{w:?} {share}");
    }

    proptest! {
        #[test]
        fn realized_shares_are_within_the_documented_bound(
            feeds in proptest::collection::vec(
                (0u32..1000, proptest::collection::vec(0u16..=256, 0..12)), 1..6)
        ) {
            let feeds: Vec<FeedWeights> = feeds
                .into_iter()
                .map(|(w, zs)| FeedWeights { weight: w, members: zs.into_iter().map(|z| (z, false)).collect() })
                .collect();
            let m = split_weights(&feeds);
            prop_assert!(m.iter().flatten().all(|w| *w <= 256));
            let live: Vec<usize> = (0..feeds.len())
                .filter(|i| feeds[*i].weight > 0 && feeds[*i].members.iter().any(|z| z.0 > 0))
                .collect();
            prop_assume!(!live.is_empty());
            let asked_total: f64 = live.iter().map(|i| f64::from(feeds[*i].weight)).sum();
            let sum = |i: usize| -> f64 { m[i].iter().map(|w| f64::from(*w)).sum() };
            let r: f64 = live.iter().map(|i| sum(*i)).sum();
            let n: f64 = live.iter().map(|i| feeds[*i].members.len() as f64).sum();
            for i in &live {
                let asked = f64::from(feeds[*i].weight) / asked_total;
                let got = sum(*i) / r;
                prop_assert!((got - asked).abs() <= 2.0 * n / r + 1e-9, "feed {i}: got {got} asked {asked}");
                for (k, z) in feeds[*i].members.iter().enumerate() {
                    prop_assert_eq!(m[*i][k] == 0, z.0 == 0, "feed {} member {}", i, k);
                }
            }
        }
    }
}
