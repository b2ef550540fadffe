//! Per-endpoint Octavia member weights for a rule's pool, so that each backend gets its share of
//! the traffic whatever its number of endpoints.
//!
//! Backend `i` has weight `w_i` and `n_i` endpoints. Octavia spreads a pool's requests over its
//! members in proportion to their weights, so backend `i`'s share is `n_i·m_i / Σ n_j·m_j`, where
//! `m_i` is the weight of each of its members; the spec wants `w_i / Σ w_j`. The exact member
//! weight is proportional to `w_i / n_i`; scaled so the largest is 256 (Octavia's maximum):
//!
//! ```text
//! x_i = 256 · (w_i / n_i) / max_j (w_j / n_j)          m_i = max(1, round(x_i))   (w_i > 0)
//! ```
//!
//! `m_i = 0` when `w_i = 0` (drained) and no members at all when `n_i = 0`. Rounding moves each
//! `m_i` by less than 1 from `x_i` (the `max(1, …)` floor included), so each backend's realized
//! member sum `r_i = n_i·m_i` is within `n_i` of the exact `e_i = n_i·x_i`. With `N = Σ n_j` and
//! `R = Σ r_j`, the realized share `s_i = r_i/R` is off the asked share `d_i = e_i/E` by
//!
//! ```text
//! |s_i − d_i| = |(r_i − e_i)·E − e_i·(R − E)| / (R·E) ≤ (n_i + d_i·N) / R ≤ 2N / R
//! ```
//!
//! e.g. 10 endpoints in all, total member weight ≥ 1000: within 2 percentage points. The
//! property test below checks this bound on random inputs.

/// One backend of a rule's pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Share {
    /// The backendRef's weight (the spec allows 0..=1_000_000).
    pub weight: u32,
    /// How many endpoints (members) it has.
    pub endpoints: u32,
}

/// The Octavia weight (0..=256) of each member of each backend, in input order.
pub fn member_weights(backends: &[Share]) -> Vec<u16> {
    // Compare w_i/n_i by cross-multiplication: exact in u128, no floating point for the max.
    let best = backends.iter().filter(|b| b.weight > 0 && b.endpoints > 0).max_by(|a, b| {
        (u128::from(a.weight) * u128::from(b.endpoints)).cmp(&(u128::from(b.weight) * u128::from(a.endpoints)))
    });
    let Some(best) = best else {
        return vec![0; backends.len()];
    };
    backends
        .iter()
        .map(|b| {
            if b.weight == 0 || b.endpoints == 0 {
                return 0;
            }
            // x = 256 · (w/n) / (W/N) = 256·w·N / (n·W), rounded half up in integers.
            let num = 256 * u128::from(b.weight) * u128::from(best.endpoints);
            let den = u128::from(b.endpoints) * u128::from(best.weight);
            let rounded = (2 * num + den) / (2 * den);
            rounded.clamp(1, 256) as u16
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn s(weight: u32, endpoints: u32) -> Share {
        Share { weight, endpoints }
    }

    #[test]
    fn equal_weights_offset_pod_counts() {
        // 1 pod vs 4 pods at weight 1 each: the lone pod carries 4 times the per-member weight.
        assert_eq!(member_weights(&[s(1, 1), s(1, 4)]), vec![256, 64]);
    }

    #[test]
    fn weights_scale_to_256_and_zero_drains() {
        assert_eq!(member_weights(&[s(70, 1), s(30, 1), s(0, 3)]), vec![256, 110, 0]);
        assert_eq!(member_weights(&[s(0, 1)]), vec![0]);
        assert_eq!(member_weights(&[s(5, 0), s(1, 1)]), vec![0, 256]);
    }

    #[test]
    fn a_tiny_share_keeps_weight_one() {
        assert_eq!(member_weights(&[s(1_000_000, 1), s(1, 1)]), vec![256, 1]);
    }

    proptest! {
        #[test]
        fn realized_shares_are_within_the_documented_bound(
            bs in proptest::collection::vec((0u32..1000, 0u32..40), 1..6)
        ) {
            let shares: Vec<Share> = bs.iter().map(|(w, n)| s(*w, *n)).collect();
            let m = member_weights(&shares);
            prop_assert!(m.iter().all(|w| *w <= 256));
            let live: Vec<usize> = (0..shares.len()).filter(|i| shares[*i].weight > 0 && shares[*i].endpoints > 0).collect();
            prop_assume!(!live.is_empty());
            let asked_total: f64 = live.iter().map(|i| f64::from(shares[*i].weight)).sum();
            let r: f64 = live.iter().map(|i| f64::from(shares[*i].endpoints) * f64::from(m[*i])).sum();
            let n: f64 = live.iter().map(|i| f64::from(shares[*i].endpoints)).sum();
            for i in &live {
                let asked = f64::from(shares[*i].weight) / asked_total;
                let got = f64::from(shares[*i].endpoints) * f64::from(m[*i]) / r;
                prop_assert!((got - asked).abs() <= 2.0 * n / r + 1e-9, "backend {i}: got {got} asked {asked}");
                prop_assert!(m[*i] >= 1);
            }
        }
    }
}
