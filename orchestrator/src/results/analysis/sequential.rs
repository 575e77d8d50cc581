//! Sequential verdicts: a variant stops as soon as its comparison with the
//! baseline is decided (faster, slower, or equivalent within the margin),
//! with looks after each round of repeats and the error rate spent across
//! the looks, never past `max` repeats per arm.  The engine asks
//! [`decide`] before each repeat past `min` ([`crate::run::adaptive`]); the
//! report asks it again over the recorded runs, in repeat order, and
//! decides each comparison at its first deciding look: one function, so
//! what the sweep stopped on is what the report says.
//!
//! - Looks: after round n for n = `min` ..= `max`, on the first n counted
//!   repeats of each arm (a round is one repeat of every variant; with
//!   `order = "interleaved"` the rounds alternate A B A B).
//! - Spending: Lan & DeMets (1983) with the Pocock-type function
//!   `α(t) = α·ln(1 + (e − 1)·t)`, t = n / `max` the information fraction
//!   (repeats per arm are the information: the spread per run is what it
//!   is).  Look n tests at the increment `α(tₙ) − α(tₙ₋₁)` (the first look
//!   at `α(t_min)`), so the levels of all looks sum to α and, by the union
//!   bound, the chance of a false decision over every look is at most α
//!   whatever the correlation between looks: conservative, and exact in
//!   its guarantee without the recursive integration of exact group-
//!   sequential boundaries.  Pocock-type, not O'Brien–Fleming-type: with
//!   `max` around 10 the point is to stop clear differences at the first
//!   looks, where O'Brien–Fleming spends almost nothing (α(0.2) = 0.00001
//!   at α = 0.05 against Pocock-type's 0.0148).
//! - Family: each test at the look's level divided by the host's family
//!   size m ([`family_size`]; Bonferroni, the first step of Holm: the
//!   family's error rate at most α), the difference tests and the
//!   equivalence tests each so, as the fixed design holds them.  With
//!   `correction = "none"` m is 1.
use serde::Serialize;

use super::compare::{Comparison, LogRatio, ALPHA};
use super::stats::Metric;
pub use crate::config::Looks;
use crate::config::Margin;

/// Pocock-type spending (Lan & DeMets 1983): the error rate spent by
/// information fraction `t` (0..=1) of a design at `alpha`.
pub fn spent(alpha: f64, t: f64) -> f64 {
    alpha * (1.0 + (std::f64::consts::E - 1.0) * t.clamp(0.0, 1.0)).ln()
}

impl Looks {
    /// The level look `n` (repeats per arm) tests at, before the family's
    /// division: what [`spent`] adds between the look before and this one;
    /// 0 outside `min..=max`.
    pub fn level(&self, n: u32, alpha: f64) -> f64 {
        if n < self.min || n > self.max || self.max == 0 {
            return 0.0;
        }
        let t = |k: u32| f64::from(k) / f64::from(self.max);
        let before = if n == self.min {
            0.0
        } else {
            spent(alpha, t(n - 1))
        };
        spent(alpha, t(n)) - before
    }
}

/// The tests of one host's family at one look: m, under the matrix's
/// correction (1 without one).  A table with v ≥ 2 variants on the host
/// holds v − 1 comparisons with the baseline and, to name a winner, up to
/// v − 2 tests of its leader against the others: 2v − 3 tests.  The plan
/// counts it from its cells, the report from its rows: one function.
pub fn family_size(variants_per_table: impl IntoIterator<Item = usize>) -> usize {
    variants_per_table
        .into_iter()
        .filter(|&v| v >= 2)
        .map(|v| 2 * v - 3)
        .sum::<usize>()
        .max(1)
}

/// How a sequential comparison ended.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Stop {
    /// The look (repeats per arm) it was decided at, or the last one it had.
    pub look: u32,
    /// The design's last look.
    pub max: u32,
    /// Decided at `look`; false: no look decided it (inconclusive so far).
    pub decided: bool,
    /// The level each test of this comparison was held at at that look:
    /// the look's spend divided by the family's size.
    pub level: f64,
    /// The family's size the level was divided by.
    pub family: usize,
}

/// The comparison of `variant` with `baseline` (values in repeat order)
/// under `looks`: its first deciding look, else its last one (the shorter
/// arm's count, at most `max`), each test at the look's level ÷ `family`.
/// `None` before the first look (fewer than `min` on a side) or when no
/// look has an estimate.
pub fn decide(
    baseline_name: &str,
    variant: &[f64],
    baseline: &[f64],
    looks: Looks,
    family: usize,
    metric: Metric,
    margin: Margin,
) -> Option<(Comparison, Stop)> {
    let last = (variant.len().min(baseline.len()) as u32).min(looks.max);
    let mut kept: Option<(Comparison, Stop)> = None;
    for n in looks.min..=last {
        let level = looks.level(n, ALPHA) / family.max(1) as f64;
        let k = n as usize;
        let (v, b) = (&variant[..k], &baseline[..k]);
        let Some(l) = LogRatio::of(v, b) else {
            continue;
        };
        let (p, pe) = (l.p_difference(), l.p_equivalence(margin.fraction()));
        if !(p.is_finite() && pe.is_finite()) {
            continue;
        }
        // Adjusted p: below α exactly when p is below this look's level.
        let scale = ALPHA / level;
        let mut c = super::compare::compare(baseline_name, v, b, metric, margin);
        super::compare::decide_at(
            &mut c,
            margin.fraction(),
            ((p * scale).min(1.0), level),
            ((pe * scale).min(1.0), level),
        );
        let decided = c.verdict != super::compare::Verdict::Inconclusive;
        let stop = Stop {
            look: n,
            max: looks.max,
            decided,
            level,
            family: family.max(1),
        };
        c.sequential = Some(stop);
        kept = Some((c, stop));
        if decided {
            break;
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::analysis::compare::Verdict;

    fn close(a: f64, b: f64, tol: f64) {
        assert!((a - b).abs() <= tol * b.abs().max(1e-12), "{a} is not {b}");
    }

    #[test]
    fn the_levels_of_every_look_sum_to_alpha_and_front_load() {
        let looks = Looks { min: 2, max: 10 };
        let total: f64 = (0..=12).map(|n| looks.level(n, 0.05)).sum();
        close(total, 0.05, 1e-12);
        // python3 -c 'import math; a=0.05; f=lambda t: a*math.log(1+(math.e-1)*t)
        // print(repr(f(0.2)), repr(f(0.3)-f(0.2)), repr(f(1)-f(0.9)))'
        close(looks.level(2, 0.05), 0.014769726456017382, 1e-12);
        close(looks.level(3, 0.05), 0.006017034636164051, 1e-12);
        close(looks.level(10, 0.05), 0.003264916799941689, 1e-12);
        assert_eq!(looks.level(1, 0.05), 0.0);
        assert_eq!(looks.level(11, 0.05), 0.0);
        // Each later look spends less than the one before.
        for n in 4..=10 {
            assert!(looks.level(n, 0.05) < looks.level(n - 1, 0.05));
        }
    }

    #[test]
    fn a_family_counts_comparisons_and_leader_tests() {
        assert_eq!(family_size([2]), 1);
        assert_eq!(family_size([3, 3]), 6);
        assert_eq!(family_size([4]), 5);
        assert_eq!(family_size([1]), 1);
        assert_eq!(family_size(std::iter::empty()), 1);
    }

    const LOOKS: Looks = Looks { min: 2, max: 10 };

    #[test]
    fn a_large_difference_stops_at_an_early_look() {
        let base = [1000.0, 1010.0, 995.0, 1005.0, 1002.0, 998.0];
        let fast = [1500.0, 1490.0, 1510.0, 1505.0, 1495.0, 1502.0];
        let (c, stop) =
            decide("ext4", &fast, &base, LOOKS, 1, Metric::Tps, Margin::DEFAULT).unwrap();
        assert_eq!(c.verdict, Verdict::Faster);
        assert!(stop.decided);
        assert!(stop.look <= 3, "decided at look {}", stop.look);
        // Its interval is the look's, at the look's level, above 1.
        let d = c.difference.unwrap();
        assert!(d.ci.low > 1.0 && d.p_adjusted < ALPHA);
        close(d.ci.level, 1.0 - stop.level, 1e-12);
    }

    #[test]
    fn an_a_a_pair_is_equivalent_or_runs_to_max_never_faster() {
        // Ten repeats of the same filesystem, 2% spread.
        let a = [
            100.0, 102.0, 98.0, 101.0, 99.0, 100.5, 99.5, 101.5, 98.5, 100.0,
        ];
        let b = [
            99.0, 101.0, 100.0, 98.0, 102.0, 100.0, 99.0, 101.0, 100.0, 100.5,
        ];
        let (c, stop) = decide("a", &b, &a, LOOKS, 1, Metric::Tps, Margin::DEFAULT).unwrap();
        assert!(
            matches!(c.verdict, Verdict::Equivalent | Verdict::Inconclusive),
            "{:?}",
            c.verdict
        );
        assert!(stop.look <= 10);
        // With a family of 20 the same data decide later, or not at all.
        let (_, later) = decide("a", &b, &a, LOOKS, 20, Metric::Tps, Margin::DEFAULT).unwrap();
        assert!(later.look >= stop.look);
        close(later.level * 20.0, LOOKS.level(later.look, ALPHA), 1e-12);
    }

    #[test]
    fn before_the_first_look_there_is_nothing_to_decide() {
        assert!(decide(
            "a",
            &[1.0],
            &[1.0, 2.0],
            LOOKS,
            1,
            Metric::Tps,
            Margin::DEFAULT
        )
        .is_none());
    }
}
