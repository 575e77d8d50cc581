//! Filesystem variants compared with a baseline, on the same host only.
//!
//! The host is a blocking factor: two hosts differ in disks, CPUs and
//! kernels, so a ratio between hosts says nothing about filesystems.  A
//! comparison is therefore only ever made between groups with the same
//! host, workload and client count.
//!
//! - Significance: Welch's two-sample t-test (unequal variances,
//!   Welch–Satterthwaite degrees of freedom), two-sided, suited to the 3–10
//!   repeats a sweep affords.
//! - Ratio of means (variant / baseline) with a 95 % CI by the delta method
//!   on the log scale: `ln r ± t(0.975, ν) · √(s₁²/(n₁x̄₁²) + s₂²/(n₂x̄₂²))`,
//!   ν by Welch–Satterthwaite on the same two terms, then exponentiated (so
//!   the interval is asymmetric and never crosses zero).
//! - A winner is named only when significant at [`ALPHA`].
use serde::Serialize;

use super::stats::{mean, t_quantile, t_two_sided_p, variance, Metric};

/// Significance level of every verdict.
pub const ALPHA: f64 = 0.05;

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

/// mean(a) / mean(b) and its delta-method CI (see the module doc); the CI
/// is `None` when a side has fewer than two values or no spread at all.
pub fn ratio_of_means(a: &[f64], b: &[f64]) -> Option<Ratio> {
    if a.is_empty() || b.is_empty() {
        return None;
    }
    let (ma, mb) = (mean(a), mean(b));
    if ma <= 0.0 || mb <= 0.0 {
        return None;
    }
    let ratio = ma / mb;
    if !(ratio.is_finite() && ratio > 0.0) {
        return None;
    }
    let ci95 = (|| {
        let (va, vb) = (variance(a)?, variance(b)?);
        let ua = va / (a.len() as f64 * ma * ma);
        let ub = vb / (b.len() as f64 * mb * mb);
        if ua + ub <= 0.0 {
            return None;
        }
        let df = satterthwaite(ua, a.len(), ub, b.len());
        let h = t_quantile(0.975, df) * (ua + ub).sqrt();
        let ci = ((ratio.ln() - h).exp(), (ratio.ln() + h).exp());
        (ci.0.is_finite() && ci.1.is_finite()).then_some(ci)
    })();
    Some(Ratio { ratio, ci95 })
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
    /// Significantly more tps (or a shorter load time) than the baseline.
    Faster,
    /// Significantly fewer tps (or a longer load time) than the baseline.
    Slower,
    /// Rate-limited: a significantly lower mean latency than the baseline.
    LowerLatency,
    /// Rate-limited: a significantly higher mean latency than the baseline.
    HigherLatency,
    /// p ≥ 0.05: within noise of the baseline.
    Tied,
    /// Fewer than two counted repeats on a side, or no spread at all.
    Untestable,
    /// The baseline did not run (or finish) on this host.
    NoBaseline,
}

impl Verdict {
    /// Every verdict, in the order the docs list them.
    pub const ALL: [Verdict; 8] = [
        Verdict::Baseline,
        Verdict::Faster,
        Verdict::Slower,
        Verdict::LowerLatency,
        Verdict::HigherLatency,
        Verdict::Tied,
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
            Verdict::Tied => "tied",
            Verdict::Untestable => "untestable",
            Verdict::NoBaseline => "no baseline",
        }
    }

    /// What the word means, for the reports' method notes.
    pub fn meaning(self) -> &'static str {
        match self {
            Verdict::Baseline => "the variant the others are compared with",
            Verdict::Faster => "more tps, or a shorter load time, than the baseline at p < 0.05",
            Verdict::Slower => "fewer tps, or a longer load time, than the baseline at p < 0.05",
            Verdict::LowerLatency => {
                "rate-limited: a lower mean latency than the baseline at p < 0.05"
            }
            Verdict::HigherLatency => {
                "rate-limited: a higher mean latency than the baseline at p < 0.05"
            }
            Verdict::Tied => "within noise of the baseline (p ≥ 0.05)",
            Verdict::Untestable => "fewer than two counted repeats on a side, or no spread at all",
            Verdict::NoBaseline => "the baseline did not run or finish on this host",
        }
    }

    /// Significantly better than the baseline.
    pub fn better(self) -> bool {
        matches!(self, Verdict::Faster | Verdict::LowerLatency)
    }

    /// Significantly worse than the baseline.
    pub fn worse(self) -> bool {
        matches!(self, Verdict::Slower | Verdict::HigherLatency)
    }
}

impl Serialize for Verdict {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.text())
    }
}

/// One variant against the baseline on one host.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub baseline: String,
    pub ratio: Option<Ratio>,
    pub welch: Option<Welch>,
    pub verdict: Verdict,
}

/// Compare `variant` values of `metric` with the `baseline`'s; the ratio
/// is variant mean / baseline mean of that metric (a latency ratio below 1
/// is better).
pub fn compare(
    baseline_name: &str,
    variant: &[f64],
    baseline: &[f64],
    metric: Metric,
) -> Comparison {
    let ratio = ratio_of_means(variant, baseline);
    let welch = welch(variant, baseline);
    let (better, worse) = match metric {
        Metric::Latency => (Verdict::LowerLatency, Verdict::HigherLatency),
        Metric::Tps | Metric::LoadTime => (Verdict::Faster, Verdict::Slower),
    };
    let verdict = match welch {
        None => Verdict::Untestable,
        Some(w) if w.p < ALPHA && (w.t > 0.0) == metric.higher_is_better() => better,
        Some(w) if w.p < ALPHA => worse,
        Some(_) => Verdict::Tied,
    };
    Comparison {
        baseline: baseline_name.to_owned(),
        ratio,
        welch,
        verdict,
    }
}

/// The best variant on `metric` (highest mean tps, lowest mean latency or
/// load time), when its Welch test against every other variant is
/// significant at [`ALPHA`]; `None` when any difference is within noise or
/// untestable, or there is only one variant.
pub fn winner<'a>(variants: &[(&'a str, &[f64])], metric: Metric) -> Option<&'a str> {
    if variants.len() < 2 {
        return None;
    }
    let (best, best_values) = best(variants, metric)?;
    for (name, values) in variants {
        if *name == best {
            continue;
        }
        let w = welch(best_values, values)?;
        if !(w.p < ALPHA && (w.t > 0.0) == metric.higher_is_better()) {
            return None;
        }
    }
    Some(best)
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

/// How many times better `best` is than `other` on `metric`, ≥ 1 when
/// `best` is better (tps: best / other; latency and load time: other /
/// best), with its 95% CI: the "1.23 ± 0.04 times" of the summary.
pub fn times_better(best: &[f64], other: &[f64], metric: Metric) -> Option<Ratio> {
    if metric.higher_is_better() {
        ratio_of_means(best, other)
    } else {
        ratio_of_means(other, best)
    }
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
    }
    const PY_RATIO: (f64, f64, f64) = (0.7739475447003659, 0.7375995772201792, 0.8120866937114855);

    #[test]
    fn verdicts_and_winner() {
        let tps = Metric::Tps;
        assert_eq!(compare("ext4", &ZFS, &EXT4, tps).verdict, Verdict::Slower);
        assert_eq!(compare("ext4", &XFS, &EXT4, tps).verdict, Verdict::Tied);
        assert_eq!(
            compare("ext4", &[900.0], &EXT4, tps).verdict,
            Verdict::Untestable
        );
        assert_eq!(
            compare("ext4", &[5.0, 5.0], &[5.0, 5.0], tps).verdict,
            Verdict::Untestable
        );
        // ext4 and xfs are within noise of each other: no winner.
        assert_eq!(
            winner(&[("ext4", &EXT4), ("zfs", &ZFS), ("xfs", &XFS)], tps),
            None
        );
        assert_eq!(winner(&[("ext4", &EXT4), ("zfs", &ZFS)], tps), Some("ext4"));
        assert_eq!(winner(&[("ext4", &EXT4)], tps), None);
    }

    #[test]
    fn lower_is_better_for_latency_and_load_time() {
        // The same numbers read as latencies: zfs's are lower, so zfs wins.
        let lat = Metric::Latency;
        assert_eq!(
            compare("ext4", &ZFS, &EXT4, lat).verdict,
            Verdict::LowerLatency
        );
        assert_eq!(
            compare("zfs", &EXT4, &ZFS, lat).verdict,
            Verdict::HigherLatency
        );
        assert_eq!(winner(&[("ext4", &EXT4), ("zfs", &ZFS)], lat), Some("zfs"));
        assert_eq!(
            compare("ext4", &ZFS, &EXT4, Metric::LoadTime).verdict,
            Verdict::Faster
        );
        // "zfs had 1.29 times lower latency than ext4": ext4 / zfs ≥ 1.
        let r = times_better(&ZFS, &EXT4, lat).unwrap();
        close(r.ratio, 1.0 / PY_RATIO.0, 1e-12);
        let (lo, hi) = r.ci95.unwrap();
        close(lo, 1.0 / PY_RATIO.2, 1e-10);
        close(hi, 1.0 / PY_RATIO.1, 1e-10);
        assert_eq!(
            best(&[("ext4", &EXT4), ("zfs", &ZFS)], lat).unwrap().0,
            "zfs"
        );
    }
}
