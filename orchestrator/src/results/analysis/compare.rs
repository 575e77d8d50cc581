//! Filesystem variants compared with a baseline, on the same host only, and
//! decided: faster, slower, equivalent within the matrix's margin, or
//! inconclusive.
//!
//! The host is a blocking factor: two hosts differ in disks, CPUs and
//! kernels, so a ratio between hosts says nothing about filesystems.  A
//! comparison is therefore only ever made between groups with the same
//! host, workload and client count.
//!
//! - The estimate: the ratio of means r = x̄₁ / x̄₂ (variant / baseline) on
//!   the log scale, with the delta method's standard error
//!   `se = √(s₁²/(n₁x̄₁²) + s₂²/(n₂x̄₂²))` and Welch–Satterthwaite ν on the
//!   same two terms ([`LogRatio`]).  Its intervals are
//!   `exp(ln r ± t(1 − a/2, ν)·se)`: asymmetric, never crossing zero.
//! - Difference (faster / slower): the t-test of ln r = 0 on that estimate,
//!   two-sided, the test whose inversion is the interval, so "the interval
//!   excludes 1" and "p < the level" are one statement.
//! - Equivalence (within ±δ): two one-sided tests (Schuirmann 1987) of
//!   ln r ≤ −ln(1+δ) and ln r ≥ ln(1+δ); p is the larger of the two, and
//!   p < a exactly when the (1 − 2a) interval lies inside [1/(1+δ), 1+δ].
//! - The error rate is held per family ([`decide_family`]): Holm's step-down
//!   (Holm 1979) over the family's difference tests and, separately, over
//!   its equivalence tests, each at [`ALPHA`]; every interval is drawn at
//!   the level Holm tested its comparison at, so it excludes 1 (or lies in
//!   the margin) exactly when the adjusted p is below [`ALPHA`].
//! - Inconclusive comparisons say how many repeats per arm would likely
//!   decide them ([`repeats_to_decide`]).
use serde::Serialize;

use super::stats::{mean, t_cdf, t_quantile, t_two_sided_p, variance, Metric};
use crate::config::{Correction, Margin, VerdictRule};

/// The family-wise error rate every verdict is held at.
pub const ALPHA: f64 = 0.05;

/// The power [`repeats_to_decide`] plans for: "likely" is 80%.
pub const PLANNING_POWER: f64 = 0.8;

/// The most repeats per arm [`repeats_to_decide`] looks at; beyond it the
/// comparison is said to be out of reach.
pub const MAX_PLANNED_REPEATS: usize = 1000;

/// Result of Welch's t-test of `a` against `b`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Welch {
    /// (mean a − mean b) / standard error.
    pub t: f64,
    /// Welch–Satterthwaite degrees of freedom.
    pub df: f64,
    /// Two-sided p-value.
    pub p: f64,
}

/// Welch–Satterthwaite ν of two variance-of-mean terms.
fn satterthwaite(ua: f64, na: usize, ub: f64, nb: usize) -> f64 {
    (ua + ub).powi(2) / (ua * ua / (na - 1) as f64 + ub * ub / (nb - 1) as f64)
}

/// Welch's t-test; `None` when a side has fewer than two values or both
/// have no variance at all (the test is then undefined, not "significant").
pub fn welch(a: &[f64], b: &[f64]) -> Option<Welch> {
    let (va, vb) = (variance(a)?, variance(b)?);
    let (na, nb) = (a.len(), b.len());
    let (ua, ub) = (va / na as f64, vb / nb as f64);
    if ua + ub <= 0.0 || !(ua + ub).is_finite() {
        return None;
    }
    let t = (mean(a) - mean(b)) / (ua + ub).sqrt();
    let df = satterthwaite(ua, na, ub, nb);
    let p = t_two_sided_p(t, df);
    // Overflowing values give no test rather than an inf or NaN one.
    (t.is_finite() && df.is_finite() && p.is_finite()).then_some(Welch { t, df, p })
}

/// Ratio of the mean of `a` to the mean of `b`, with its 95 % CI.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Ratio {
    pub ratio: f64,
    pub ci95: Option<(f64, f64)>,
}

/// mean(a) / mean(b) and its delta-method 95% CI (see the module doc); the
/// CI is `None` when a side has fewer than two values or no spread at all.
pub fn ratio_of_means(a: &[f64], b: &[f64]) -> Option<Ratio> {
    if a.is_empty() || b.is_empty() {
        return None;
    }
    let (ma, mb) = (mean(a), mean(b));
    let ratio = ma / mb;
    if !(ma > 0.0 && mb > 0.0 && ratio.is_finite() && ratio > 0.0) {
        return None;
    }
    let ci95 = LogRatio::of(a, b).map(|l| l.interval(ALPHA));
    Some(Ratio { ratio, ci95 })
}

/// The delta-method estimate of ln(mean a / mean b): what every interval,
/// test and planned repeat count of a comparison is computed from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LogRatio {
    /// mean a / mean b.
    pub ratio: f64,
    /// Standard error of ln(ratio).
    pub se: f64,
    /// Welch–Satterthwaite degrees of freedom.
    pub df: f64,
    pub n_a: usize,
    pub n_b: usize,
    /// Each side's variance of one run relative to its mean squared
    /// (s²/x̄²): the spread a planned repeat count assumes.
    pub rel_var_a: f64,
    pub rel_var_b: f64,
}

impl LogRatio {
    /// The estimate of `a` against `b`; `None` when a side has fewer than
    /// two values, a mean is not positive, or neither side has any spread.
    pub fn of(a: &[f64], b: &[f64]) -> Option<LogRatio> {
        let (va, vb) = (variance(a)?, variance(b)?);
        let (ma, mb) = (mean(a), mean(b));
        if !(ma > 0.0 && mb > 0.0) {
            return None;
        }
        let (rel_var_a, rel_var_b) = (va / (ma * ma), vb / (mb * mb));
        let (ua, ub) = (rel_var_a / a.len() as f64, rel_var_b / b.len() as f64);
        if !(ua + ub > 0.0 && (ua + ub).is_finite()) {
            return None;
        }
        let l = LogRatio {
            ratio: ma / mb,
            se: (ua + ub).sqrt(),
            df: satterthwaite(ua, a.len(), ub, b.len()),
            n_a: a.len(),
            n_b: b.len(),
            rel_var_a,
            rel_var_b,
        };
        (l.ratio.is_finite() && l.ratio > 0.0 && l.df.is_finite()).then_some(l)
    }

    /// t of ln r = 0.
    pub fn t(&self) -> f64 {
        self.ratio.ln() / self.se
    }

    /// Two-sided p of the difference test (ln r = 0).
    pub fn p_difference(&self) -> f64 {
        t_two_sided_p(self.t(), self.df)
    }

    /// TOST p of equivalence within ±`margin`: the larger of the two
    /// one-sided p-values (Schuirmann 1987).
    pub fn p_equivalence(&self, margin: f64) -> f64 {
        let (l, bound) = (self.ratio.ln(), (1.0 + margin).ln());
        let p_low = 1.0 - t_cdf((l + bound) / self.se, self.df);
        let p_high = t_cdf((l - bound) / self.se, self.df);
        p_low.max(p_high)
    }

    /// The two-sided (1 − `alpha`) interval of the ratio.
    pub fn interval(&self, alpha: f64) -> (f64, f64) {
        let h = t_quantile(1.0 - alpha / 2.0, self.df) * self.se;
        let l = self.ratio.ln();
        ((l - h).exp(), (l + h).exp())
    }
}

/// An interval of the ratio with its confidence level (0.95: a 95% CI).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Interval {
    pub low: f64,
    pub high: f64,
    pub level: f64,
}

impl Interval {
    fn of(l: &LogRatio, alpha: f64) -> Interval {
        let (low, high) = l.interval(alpha);
        Interval {
            low,
            high,
            level: 1.0 - alpha,
        }
    }

    /// `95% CI 0.58–0.66` (the level to at most two decimals: `99.17% CI`).
    pub fn text(&self) -> String {
        format!(
            "{} CI {:.2}–{:.2}",
            level_text(self.level),
            self.low,
            self.high
        )
    }
}

/// `95%`, `97.5%`, `99.17%`: a confidence level as a percentage.
pub fn level_text(level: f64) -> String {
    let pct = format!("{:.2}", level * 100.0);
    let pct = pct.trim_end_matches('0').trim_end_matches('.');
    format!("{pct}%")
}

/// What a comparison with the baseline concluded, on the row's
/// [`Metric`] (more tps, a lower latency, a shorter load time is better).
/// Its one spelling is [`Verdict::text`]: JSON (serialised through it),
/// CSV, Markdown, HTML, the terminal and the database all say these words
/// ([`Verdict::ALL`] lists them for the docs and the tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// This row is the baseline.
    Baseline,
    /// More tps (or a shorter load time) than the baseline: the interval
    /// at the family's adjusted level lies above 1.
    Faster,
    /// Fewer tps (or a longer load time) than the baseline.
    Slower,
    /// Rate-limited: a lower mean latency than the baseline.
    LowerLatency,
    /// Rate-limited: a higher mean latency than the baseline.
    HigherLatency,
    /// Within ±margin of the baseline: two one-sided tests decided it at the
    /// family's adjusted level.
    Equivalent,
    /// Neither a difference nor equivalence is decided: more repeats would
    /// tell ([`Comparison::repeats_to_decide`]).
    Inconclusive,
    /// Fewer than two counted repeats on a side, or no spread at all.
    Untestable,
    /// The baseline did not run (or finish) on this host.
    NoBaseline,
}

impl Verdict {
    /// Every verdict, in the order the docs list them.
    pub const ALL: [Verdict; 9] = [
        Verdict::Baseline,
        Verdict::Faster,
        Verdict::Slower,
        Verdict::LowerLatency,
        Verdict::HigherLatency,
        Verdict::Equivalent,
        Verdict::Inconclusive,
        Verdict::Untestable,
        Verdict::NoBaseline,
    ];

    /// The verdict's one spelling, everywhere.
    pub fn text(self) -> &'static str {
        match self {
            Verdict::Baseline => "baseline",
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::LowerLatency => "lower latency",
            Verdict::HigherLatency => "higher latency",
            Verdict::Equivalent => "equivalent",
            Verdict::Inconclusive => "inconclusive",
            Verdict::Untestable => "untestable",
            Verdict::NoBaseline => "no baseline",
        }
    }

    /// What the word means, for the reports' method notes.
    pub fn meaning(self) -> &'static str {
        match self {
            Verdict::Baseline => "the variant the others are compared with",
            Verdict::Faster => {
                "more tps, or a shorter load time, than the baseline: the ratio's interval at its adjusted level lies beyond 1"
            }
            Verdict::Slower => {
                "fewer tps, or a longer load time, than the baseline: the ratio's interval at its adjusted level lies beyond 1"
            }
            Verdict::LowerLatency => {
                "rate-limited: a lower mean latency than the baseline, decided as for faster"
            }
            Verdict::HigherLatency => {
                "rate-limited: a higher mean latency than the baseline, decided as for slower"
            }
            Verdict::Equivalent => {
                "within ±margin of the baseline: two one-sided tests (Schuirmann 1987) at the adjusted level, the ratio's (1 − 2α) interval inside [1/(1+margin), 1+margin]"
            }
            Verdict::Inconclusive => {
                "neither a difference nor equivalence is decided; the report says how many repeats per arm would likely decide it"
            }
            Verdict::Untestable => "fewer than two counted repeats on a side, or no spread at all",
            Verdict::NoBaseline => "the baseline did not run or finish on this host",
        }
    }

    /// Decided better than the baseline.
    pub fn better(self) -> bool {
        matches!(self, Verdict::Faster | Verdict::LowerLatency)
    }

    /// Decided worse than the baseline.
    pub fn worse(self) -> bool {
        matches!(self, Verdict::Slower | Verdict::HigherLatency)
    }
}

impl Serialize for Verdict {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.text())
    }
}

/// The difference test of a comparison, before and after the family's
/// adjustment.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Difference {
    /// t of ln(ratio) = 0 (delta method, see the module doc).
    pub t: f64,
    /// Welch–Satterthwaite degrees of freedom.
    pub df: f64,
    /// Two-sided p of this comparison alone.
    pub p: f64,
    /// p adjusted over the family ([`decide_family`]; `p` itself without a
    /// correction).
    pub p_adjusted: f64,
    /// The ratio's interval at the level this test was decided at: it
    /// excludes 1 exactly when `p_adjusted` < [`ALPHA`].
    pub ci: Interval,
}

/// The equivalence test (TOST) of a comparison.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Equivalence {
    /// The margin δ as a fraction (0.05: ±5%).
    pub margin: f64,
    /// The larger one-sided p of this comparison alone.
    pub p: f64,
    /// p adjusted over the family.
    pub p_adjusted: f64,
    /// The ratio's (1 − 2a) interval at the level a this test was decided
    /// at: inside [1/(1+δ), 1+δ] exactly when `p_adjusted` < [`ALPHA`].
    pub ci: Interval,
}

/// One variant against the baseline on one host.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub baseline: String,
    /// The ratio and its unadjusted 95% CI (the tables' ratio column).
    pub ratio: Option<Ratio>,
    pub difference: Option<Difference>,
    pub equivalence: Option<Equivalence>,
    /// Decided faster or slower and also equivalent: the difference is real
    /// but smaller than the margin.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub within_margin: bool,
    /// Inconclusive: the repeats per arm that would likely decide it at the
    /// observed ratio and spread ([`repeats_to_decide`]); `None` when decided
    /// or out of reach within [`MAX_PLANNED_REPEATS`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repeats_to_decide: Option<usize>,
    pub verdict: Verdict,
    /// A sequential design: the look it was decided at (or its last one),
    /// and the level its tests were held at there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sequential: Option<super::sequential::Stop>,
    /// What the tests were computed from (not in the JSON: its figures are).
    #[serde(skip)]
    pub estimate: Option<LogRatio>,
    /// What was compared (the verdict's direction and words).
    #[serde(skip)]
    pub metric: Metric,
}

impl Comparison {
    /// A comparison with nothing to compare: the baseline did not finish.
    pub fn no_baseline(baseline: &str, metric: Metric) -> Comparison {
        Comparison {
            baseline: baseline.to_owned(),
            ratio: None,
            difference: None,
            equivalence: None,
            within_margin: false,
            repeats_to_decide: None,
            verdict: Verdict::NoBaseline,
            sequential: None,
            estimate: None,
            metric,
        }
    }

    /// The raw p of the difference test.
    pub fn p(&self) -> Option<f64> {
        self.difference.map(|d| d.p)
    }

    /// The family-adjusted p of the difference test.
    pub fn p_adjusted(&self) -> Option<f64> {
        self.difference.map(|d| d.p_adjusted)
    }
}

/// Compare `variant` values of `metric` with the `baseline`'s, as a family
/// of one under `margin` (each test at [`ALPHA`]); [`decide_family`]
/// decides it again with its family.  The ratio is variant mean / baseline
/// mean of that metric (a latency ratio below 1 is better).
pub fn compare(
    baseline_name: &str,
    variant: &[f64],
    baseline: &[f64],
    metric: Metric,
    margin: Margin,
) -> Comparison {
    let mut c = Comparison {
        baseline: baseline_name.to_owned(),
        ratio: ratio_of_means(variant, baseline),
        difference: None,
        equivalence: None,
        within_margin: false,
        repeats_to_decide: None,
        verdict: Verdict::Untestable,
        sequential: None,
        estimate: LogRatio::of(variant, baseline),
        metric,
    };
    if let Some(l) = c.estimate {
        let (p, pe) = (l.p_difference(), l.p_equivalence(margin.fraction()));
        if p.is_finite() && pe.is_finite() {
            decide(&mut c, margin.fraction(), (p, ALPHA), (pe, ALPHA));
        } else {
            c.estimate = None;
        }
    }
    c
}

/// Decide `c` again from its estimate at the given adjusted p-values and
/// levels: a sequential look's ([`super::sequential::decide`]).
pub(super) fn decide_at(c: &mut Comparison, margin: f64, diff: (f64, f64), eq: (f64, f64)) {
    decide(c, margin, diff, eq)
}

/// Decide `c` from its estimate: the difference test's adjusted p and the
/// level it was tested at, and the same of the equivalence test.
fn decide(c: &mut Comparison, margin: f64, diff: (f64, f64), eq: (f64, f64)) {
    let Some(l) = c.estimate else {
        return;
    };
    let ((p_adj, a_diff), (pe_adj, a_eq)) = (diff, eq);
    c.difference = Some(Difference {
        t: l.t(),
        df: l.df,
        p: l.p_difference(),
        p_adjusted: p_adj,
        ci: Interval::of(&l, a_diff),
    });
    c.equivalence = Some(Equivalence {
        margin,
        p: l.p_equivalence(margin),
        p_adjusted: pe_adj,
        ci: Interval::of(&l, 2.0 * a_eq),
    });
    let differs = p_adj < ALPHA;
    let equivalent = pe_adj < ALPHA;
    let up = l.ratio > 1.0;
    let (better, worse) = match c.metric {
        Metric::Latency => (Verdict::LowerLatency, Verdict::HigherLatency),
        Metric::Tps | Metric::LoadTime => (Verdict::Faster, Verdict::Slower),
    };
    c.within_margin = differs && equivalent;
    c.repeats_to_decide = None;
    c.verdict = if differs {
        if up == c.metric.higher_is_better() {
            better
        } else {
            worse
        }
    } else if equivalent {
        Verdict::Equivalent
    } else {
        c.repeats_to_decide = repeats_to_decide(&l, margin, a_diff, a_eq);
        Verdict::Inconclusive
    };
}

/// The variant with the best mean on `metric`, significant or not.
pub fn best<'a, 'v>(
    variants: &[(&'a str, &'v [f64])],
    metric: Metric,
) -> Option<(&'a str, &'v [f64])> {
    let ranked = variants.iter().filter(|(_, v)| !v.is_empty());
    let by_mean = |a: &&(&str, &[f64]), b: &&(&str, &[f64])| mean(a.1).total_cmp(&mean(b.1));
    let found = if metric.higher_is_better() {
        ranked.max_by(by_mean)
    } else {
        ranked.min_by(by_mean)
    };
    found.copied()
}

/// Holm's step-down (Holm 1979) over `ps` at `alpha`: for each p, its
/// adjusted p (`max` over the smaller ones of `min(1, (m − i + 1)·p₍ᵢ₎)`,
/// as statsmodels' `multipletests(method="holm")`) and the level it was
/// tested at: α/(m − i + 1) for the i-th smallest of the r rejected, and
/// α/(m − r) for every one not rejected, so an interval drawn at that level
/// excludes the null exactly when the adjusted p is below `alpha`.
pub fn holm(ps: &[f64], alpha: f64) -> Vec<(f64, f64)> {
    let m = ps.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&i, &j| ps[i].total_cmp(&ps[j]));
    let mut out = vec![(1.0, alpha); m];
    let mut running = 0.0_f64;
    let mut rejected = 0;
    for (rank, &i) in order.iter().enumerate() {
        let k = (m - rank) as f64;
        running = running.max((k * ps[i]).min(1.0));
        out[i] = (running, alpha / k);
        if running < alpha {
            rejected += 1;
        }
    }
    for &i in &order[rejected..] {
        out[i].1 = alpha / (m - rejected) as f64;
    }
    out
}

/// Each p adjusted under `correction`, with the level it was tested at.
fn adjusted(ps: &[f64], correction: Correction) -> Vec<(f64, f64)> {
    match correction {
        Correction::Holm => holm(ps, ALPHA),
        Correction::None => ps.iter().map(|&p| (p, ALPHA)).collect(),
    }
}

/// Decide a family's comparisons together under `rule`: their difference
/// tests and `extra` (further difference tests of the family whose p-values
/// are given, such as the leader's against each other variant) under one
/// correction, their equivalence tests under another; comparisons without
/// an estimate (untestable, no baseline) are not tests and stay as they
/// are.  Returns `extra`'s adjusted p-values.
pub fn decide_family(
    comparisons: &mut [&mut Comparison],
    extra: &[f64],
    rule: VerdictRule,
) -> Vec<f64> {
    let margin = rule.margin.fraction();
    let tested: Vec<usize> = (0..comparisons.len())
        .filter(|&i| comparisons[i].estimate.is_some())
        .collect();
    let mut diff_ps: Vec<f64> = tested
        .iter()
        .filter_map(|&i| comparisons[i].estimate.map(|l| l.p_difference()))
        .collect();
    diff_ps.extend_from_slice(extra);
    let eq_ps: Vec<f64> = tested
        .iter()
        .filter_map(|&i| comparisons[i].estimate.map(|l| l.p_equivalence(margin)))
        .collect();
    let diff = adjusted(&diff_ps, rule.correction);
    let eq = adjusted(&eq_ps, rule.correction);
    for (k, &i) in tested.iter().enumerate() {
        decide(comparisons[i], margin, diff[k], eq[k]);
    }
    diff[tested.len()..].iter().map(|d| d.0).collect()
}

/// The repeats per arm that would likely decide an undecided comparison:
/// the fewest n (equal on both sides, more than the smaller side has now)
/// at which, if the true ratio and each side's relative spread are the
/// observed ones, the difference test at level `a_diff` or the equivalence
/// test within ±`margin` at level `a_eq` has [`PLANNING_POWER`], by the
/// usual normal-approximation sample size with t quantiles at Welch's ν:
/// `|ln r| ≥ (t(1 − a/2) + t(power))·se(n)`, or
/// `ln(1+δ) − |ln r| ≥ (t(1 − a) + t(power))·se(n)`.  `None` beyond
/// [`MAX_PLANNED_REPEATS`].
pub fn repeats_to_decide(l: &LogRatio, margin: f64, a_diff: f64, a_eq: f64) -> Option<usize> {
    let d = l.ratio.ln().abs();
    let room = (1.0 + margin).ln() - d;
    let (va, vb) = (l.rel_var_a, l.rel_var_b);
    let enough = |n: usize| {
        let nf = n as f64;
        let se = ((va + vb) / nf).sqrt();
        let df = (nf - 1.0) * (va + vb).powi(2) / (va * va + vb * vb);
        let power = t_quantile(PLANNING_POWER, df);
        d >= (t_quantile(1.0 - a_diff / 2.0, df) + power) * se
            || room >= (t_quantile(1.0 - a_eq, df) + power) * se
    };
    // Both conditions only get easier with n: bisect.
    let (mut lo, mut hi) = (1, MAX_PLANNED_REPEATS);
    if !enough(hi) {
        return None;
    }
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if enough(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(hi.max(l.n_a.min(l.n_b) + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) {
        assert!(
            (a - b).abs() <= tol * b.abs().max(1.0),
            "{a} is not {b} (tol {tol})"
        );
    }

    const EXT4: [f64; 4] = [812.5, 790.25, 830.0, 801.75];
    const ZFS: [f64; 3] = [610.0, 640.0, 627.5];
    const XFS: [f64; 3] = [805.0, 842.0, 779.0];

    fn rule(margin: &str, correction: Correction) -> VerdictRule {
        VerdictRule {
            margin: Margin::parse(margin).unwrap(),
            correction,
            sequential: None,
        }
    }

    #[test]
    fn welch_matches_scipy() {
        // python3 -c 'import scipy.stats as st
        // a=[610.0,640.0,627.5]; b=[812.5,790.25,830.0,801.75]; c=[805.0,842.0,779.0]
        // for x,y in [(a,b),(c,b)]:
        //   r=st.ttest_ind(x,y,equal_var=False); print(repr(r.statistic),repr(r.df),repr(r.pvalue))'
        for ((x, y), (t, df, p)) in [(&ZFS[..], &EXT4[..]), (&XFS[..], &EXT4[..])]
            .into_iter()
            .zip(PY_WELCH)
        {
            let w = welch(x, y).unwrap();
            close(w.t, t, 1e-10);
            close(w.df, df, 1e-10);
            close(w.p, p, 1e-9);
        }
    }
    const PY_WELCH: [(f64, f64, f64); 2] = [
        (
            -15.07150839467886,
            4.7406139677034105,
            3.4667007073515505e-05,
        ),
        (0.0020691254439359, 2.8591075919512785, 0.9984849070160897),
    ];

    #[test]
    fn ratio_ci_matches_python_delta_method() {
        // python3 -c 'import statistics as s, scipy.stats as st, math
        // a=[610.0,640.0,627.5]; b=[812.5,790.25,830.0,801.75]
        // ma,mb=s.mean(a),s.mean(b); r=ma/mb
        // ua=s.variance(a)/(len(a)*ma*ma); ub=s.variance(b)/(len(b)*mb*mb)
        // df=(ua+ub)**2/(ua*ua/(len(a)-1)+ub*ub/(len(b)-1))
        // h=st.t.ppf(0.975,df)*math.sqrt(ua+ub)
        // print(repr(r),repr(math.exp(math.log(r)-h)),repr(math.exp(math.log(r)+h)))'
        let r = ratio_of_means(&ZFS, &EXT4).unwrap();
        close(r.ratio, PY_RATIO.0, 1e-12);
        let (lo, hi) = r.ci95.unwrap();
        close(lo, PY_RATIO.1, 1e-10);
        close(hi, PY_RATIO.2, 1e-10);
        assert!(ratio_of_means(&[1.0], &EXT4).unwrap().ci95.is_none());
        assert!(ratio_of_means(&[], &EXT4).is_none());
        // The same interval at Holm's first level of three (α/3), as
        // above with st.t.ppf(1-0.05/3/2,df):
        let (lo, hi) = LogRatio::of(&ZFS, &EXT4).unwrap().interval(ALPHA / 3.0);
        close(lo, 0.7227102667044076, 1e-10);
        close(hi, 0.8288173415318547, 1e-10);
    }
    const PY_RATIO: (f64, f64, f64) = (0.7739475447003659, 0.7375995772201792, 0.8120866937114855);

    // The difference and equivalence tests of ln(ratio) are Welch's t-test
    // and statsmodels' TOST on each side divided by its own mean, the
    // variant's shifted by ln r (the delta method's se and ν exactly):
    // import numpy as np, scipy.stats as st, math
    // from statsmodels.stats.weightstats import ttost_ind
    // b=[812.5,790.25,830.0,801.75]
    // for a in ([610.0,640.0,627.5],[805.0,842.0,779.0]):
    //   ma,mb=np.mean(a),np.mean(b)
    //   x,y=np.array(a)/ma+math.log(ma/mb),np.array(b)/mb
    //   r=st.ttest_ind(x,y,equal_var=False); print(r.statistic,r.df,r.pvalue)
    //   for m in (0.05,0.10): d=math.log(1+m); print(ttost_ind(x,y,-d,d,usevar='unequal')[0])
    const PY_LOG_RATIO: [(f64, f64, f64, f64, f64); 2] = [
        (
            -14.734406786006948,
            4.0389562063878355,
            0.00011592827324898491,
            0.9998661399116112,
            0.9996379552405251,
        ),
        (
            0.0020691599782527463,
            2.859193942601855,
            0.9984848779305247,
            0.07487592294896786,
            0.017112289346113186,
        ),
    ];

    #[test]
    fn log_ratio_tests_match_scipy_and_statsmodels_ttost_ind() {
        for (a, (t, df, p, tost5, tost10)) in [&ZFS[..], &XFS[..]].into_iter().zip(PY_LOG_RATIO) {
            let l = LogRatio::of(a, &EXT4).unwrap();
            close(l.t(), t, 1e-9);
            close(l.df, df, 1e-9);
            close(l.p_difference(), p, 1e-9);
            close(l.p_equivalence(0.05), tost5, 1e-9);
            close(l.p_equivalence(0.10), tost10, 1e-9);
        }
        assert!(LogRatio::of(&[1.0], &EXT4).is_none());
        assert!(LogRatio::of(&[5.0, 5.0], &[5.0, 5.0]).is_none());
    }

    #[test]
    fn holm_matches_statsmodels_multipletests() {
        // from statsmodels.stats.multitest import multipletests
        // for ps in ([0.01,0.04,0.03,0.005,0.2],[0.03,0.04],[0.001,0.013,0.02,0.5]):
        //   print(multipletests(ps,alpha=0.05,method="holm")[:2])
        let cases: [(&[f64], &[f64], &[bool]); 3] = [
            (
                &[0.01, 0.04, 0.03, 0.005, 0.2],
                &[0.04, 0.09, 0.09, 0.025, 0.2],
                &[true, false, false, true, false],
            ),
            (&[0.03, 0.04], &[0.06, 0.06], &[false, false]),
            (
                &[0.001, 0.013, 0.02, 0.5],
                &[0.004, 0.039, 0.04, 0.5],
                &[true, true, true, false],
            ),
        ];
        for (ps, want, reject) in cases {
            let got = holm(ps, ALPHA);
            for (i, (adj, level)) in got.iter().enumerate() {
                close(*adj, want[i], 1e-12);
                assert_eq!(*adj < ALPHA, reject[i], "{ps:?} #{i}");
                // The level each was tested at agrees with its decision.
                assert_eq!(ps[i] < *level, reject[i], "{ps:?} #{i} at {level}");
            }
        }
        // The first case: 0.005 at α/5, 0.01 at α/4, the rest at α/3 (two
        // rejected of five).
        let levels: Vec<f64> = holm(cases[0].0, ALPHA).iter().map(|x| x.1).collect();
        for (l, want) in levels
            .iter()
            .zip([0.0125, 0.05 / 3.0, 0.05 / 3.0, 0.01, 0.05 / 3.0])
        {
            close(*l, want, 1e-15);
        }
        // p = 0.03 alone passes, but not as one of two (0.06 adjusted): its
        // interval is drawn at α/2 and contains 1.
        assert!(holm(&[0.03], ALPHA)[0].0 < ALPHA);
    }

    #[test]
    fn each_verdict_kind() {
        let tps = Metric::Tps;
        let m5 = Margin::DEFAULT;
        assert_eq!(
            compare("ext4", &ZFS, &EXT4, tps, m5).verdict,
            Verdict::Slower
        );
        assert_eq!(
            compare("zfs", &EXT4, &ZFS, tps, m5).verdict,
            Verdict::Faster
        );
        // xfs against ext4: TOST p 0.075 within ±5% (inconclusive), 0.017
        // within ±10% (equivalent).
        let c = compare("ext4", &XFS, &EXT4, tps, m5);
        assert_eq!(c.verdict, Verdict::Inconclusive);
        assert_eq!(c.repeats_to_decide, Some(7));
        let c = compare("ext4", &XFS, &EXT4, tps, Margin::parse("10%").unwrap());
        assert_eq!(c.verdict, Verdict::Equivalent);
        assert_eq!(c.repeats_to_decide, None);
        let e = c.equivalence.unwrap();
        // Equivalent: the 90% interval lies inside [1/1.1, 1.1].
        close(e.ci.level, 0.9, 1e-15);
        assert!(e.ci.low > 1.0 / 1.1 && e.ci.high < 1.1, "{e:?}");
        assert_eq!(
            compare("ext4", &[900.0], &EXT4, tps, m5).verdict,
            Verdict::Untestable
        );
        assert_eq!(
            compare("ext4", &[5.0, 5.0], &[5.0, 5.0], tps, m5).verdict,
            Verdict::Untestable
        );
        // A difference smaller than the margin, decided both ways: faster,
        // within the margin.
        let a = [1010.0, 1011.0, 1012.0, 1010.5];
        let b = [1000.0, 1001.0, 1000.5, 999.5];
        let c = compare("b", &a, &b, tps, m5);
        assert_eq!(c.verdict, Verdict::Faster);
        assert!(c.within_margin);
    }

    #[test]
    fn lower_is_better_for_latency_and_load_time() {
        let m5 = Margin::DEFAULT;
        // The same numbers read as latencies: zfs's are lower.
        let lat = Metric::Latency;
        assert_eq!(
            compare("ext4", &ZFS, &EXT4, lat, m5).verdict,
            Verdict::LowerLatency
        );
        assert_eq!(
            compare("zfs", &EXT4, &ZFS, lat, m5).verdict,
            Verdict::HigherLatency
        );
        assert_eq!(
            compare("ext4", &ZFS, &EXT4, Metric::LoadTime, m5).verdict,
            Verdict::Faster
        );
        assert_eq!(
            best(&[("ext4", &EXT4), ("zfs", &ZFS)], lat).unwrap().0,
            "zfs"
        );
    }

    #[test]
    fn a_family_holds_its_error_rate_with_holm() {
        // Three comparisons whose raw p-values are 0.03, 0.04 and 1e-4
        // (built below): alone each of the first two is "faster"; as a
        // family under Holm, 1e-4 is rejected at α/3, then 0.03 is tested at
        // α/2 and fails, and so does 0.04.
        let base = [100.0, 102.0, 98.0, 100.0, 101.0, 99.0];
        let shift = |k: f64| -> Vec<f64> { base.iter().map(|x| x * k).collect() };
        let find = |target: f64| {
            // The multiplier whose raw p is `target` (p falls as k grows).
            let (mut lo, mut hi) = (1.0, 1.2);
            for _ in 0..100 {
                let mid = (lo + hi) / 2.0;
                let p = LogRatio::of(&shift(mid), &base).unwrap().p_difference();
                if p > target {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            shift(hi)
        };
        let (a, b, c) = (find(0.03), find(0.04), find(1e-4));
        // A margin of ±1%: none of them is equivalent.
        let one = |x: &[f64]| compare("base", x, &base, Metric::Tps, Margin::parse("1%").unwrap());
        let mut cs = [one(&a), one(&b), one(&c)];
        assert!(cs.iter().all(|c| c.verdict == Verdict::Faster));
        {
            let mut refs: Vec<&mut Comparison> = cs.iter_mut().collect();
            decide_family(&mut refs, &[], rule("1%", Correction::Holm));
        }
        let verdicts: Vec<Verdict> = cs.iter().map(|c| c.verdict).collect();
        assert_eq!(
            verdicts,
            [
                Verdict::Inconclusive,
                Verdict::Inconclusive,
                Verdict::Faster
            ]
        );
        // Adjusted as multipletests([0.03, 0.04, 1e-4], method="holm"):
        // [0.06, 0.06, 3e-4]; each interval at the level it was tested at.
        for (c, (adj, level)) in
            cs.iter()
                .zip([(0.06, 0.975), (0.06, 0.975), (3e-4, 1.0 - 0.05 / 3.0)])
        {
            let d = c.difference.unwrap();
            close(d.p_adjusted, adj, 1e-6);
            close(d.ci.level, level, 1e-12);
            assert_eq!(d.ci.low > 1.0, d.p_adjusted < ALPHA, "{d:?}");
        }
        assert!(cs[0].repeats_to_decide.is_some());
        // Without a correction each stands alone.
        let mut refs: Vec<&mut Comparison> = cs.iter_mut().collect();
        decide_family(&mut refs, &[], rule("1%", Correction::None));
        assert!(cs.iter().all(|c| c.verdict == Verdict::Faster));
        // Extra tests count in the family: with a p = 0.001 extra, as
        // multipletests([0.03, 0.04, 1e-4, 0.001], method="holm") →
        // [0.06, 0.06, 4e-4, 0.003]; Holm's first level is α/4.
        let mut refs: Vec<&mut Comparison> = cs.iter_mut().collect();
        let extra = decide_family(&mut refs, &[0.001], rule("1%", Correction::Holm));
        close(extra[0], 0.003, 1e-12);
        close(cs[2].difference.unwrap().p_adjusted, 4e-4, 1e-6);
        close(cs[2].difference.unwrap().ci.level, 1.0 - 0.05 / 4.0, 1e-12);
    }

    #[test]
    fn repeats_to_decide_matches_the_python_plan_and_statsmodels_power() {
        // The plan in Python (scipy), for a=[103,99,106], b=[100,97,101]
        // and for xfs/ext4 above, margin 5%, α = 0.05 each:
        // def plan(a,b,margin=0.05,ad=0.05,ae=0.05,power=0.8):
        //   ma,mb=np.mean(a),np.mean(b); va=np.var(a,ddof=1)/ma**2; vb=np.var(b,ddof=1)/mb**2
        //   d=abs(math.log(ma/mb)); room=math.log(1+margin)-d
        //   for n in range(2,1001):
        //     se=math.sqrt((va+vb)/n); df=(n-1)*(va+vb)**2/(va*va+vb*vb); zb=st.t.ppf(power,df)
        //     if d>=(st.t.ppf(1-ad/2,df)+zb)*se or room>=(st.t.ppf(1-ae,df)+zb)*se:
        //       return max(n,min(len(a),len(b))+1)
        // → 13 and 7.  statsmodels' exact power (noncentral t) for the first:
        // tt_ind_solve_power(effect_size=d/math.sqrt((va+vb)/2),alpha=0.05,power=0.8)
        // → 12.63, so 13 repeats per arm.
        let (a, b) = ([103.0, 99.0, 106.0], [100.0, 97.0, 101.0]);
        let l = LogRatio::of(&a, &b).unwrap();
        assert_eq!(repeats_to_decide(&l, 0.05, ALPHA, ALPHA), Some(13));
        let l = LogRatio::of(&XFS, &EXT4).unwrap();
        assert_eq!(repeats_to_decide(&l, 0.05, ALPHA, ALPHA), Some(7));
        // A ratio right on the margin's edge (1.05), with a wide spread:
        // the difference alone would need some 1650 per arm, out of reach.
        let (a, b) = ([105.0, 52.5, 157.5], [100.0, 50.0, 150.0]);
        let l = LogRatio::of(&a, &b).unwrap();
        assert_eq!(repeats_to_decide(&l, 0.05, ALPHA, ALPHA), None);
    }
}
