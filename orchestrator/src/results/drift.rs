//! Checks of a row against itself: drift and order effects over its runs,
//! and whether its size measures agree.
//!
//! hyperfine warns when the first run was much slower than the rest or
//! when outliers were found; a report should say the same in words rather
//! than leave a reader to spot it in a min–max column (issue 14).  Two
//! order effects are tested over a group's counted repeats in run order
//! ([`drift`]):
//!
//! - **trend**: the ordinary least-squares slope of tps over the run index
//!   (0, 1, …, n − 1), tested with its t statistic on n − 2 degrees of
//!   freedom.  Flagged when p < [`ALPHA`] *and* the fitted change over the
//!   runs is at least [`MIN_TREND_CHANGE`] of the mean: with many runs a
//!   0.3 % slope is "significant" and still harmless.
//! - **first run**: the first counted run against the others, by the
//!   modified z-score of Iglewicz and Hoaglin (0.6745 × (x − median) / MAD,
//!   with the median and MAD of the *other* runs, so the suspect does not
//!   widen its own yardstick); flagged above [`OUTLIER_Z`] = 3.5, their
//!   recommended cut, *and* at least [`MIN_OUTLIER_CHANGE`] from the
//!   median.  When the first run is flagged the trend is tested without it,
//!   so one slow first run is reported once, as what it is.
//!
//! Both need [`MIN_RUNS`] counted runs: with three, a slope has one degree
//! of freedom and "the others" are two values.
//!
//! Sizes ([`size_check`]): on ZFS, `du`'s apparent ÷ on-disk bytes of the
//! data directory and the dataset's `compressratio` measure the same
//! compression of the same data; they differ by metadata, partial records
//! and whatever else the dataset holds, which on the lab stays within a few
//! percent.  More than [`SIZE_TOLERANCE`] apart means one of them did not
//! measure the data as it was, and the row says so instead of printing both.
use serde::Serialize;

use super::compare::ALPHA;
use super::stats::{mean, t_two_sided_p};

/// Counted runs needed before either order effect is tested.
pub const MIN_RUNS: usize = 4;
/// Smallest fitted change over the runs, relative to the mean, worth a
/// drift warning (2 %: below the noise of a typical pgbench repeat).
pub const MIN_TREND_CHANGE: f64 = 0.02;
/// Modified z-score above which the first run is an outlier (Iglewicz and
/// Hoaglin, "How to Detect and Handle Outliers", 1993).
pub const OUTLIER_Z: f64 = 3.5;
/// Smallest distance of the first run from the others' median, relative to
/// it, worth a warning (a group whose other runs agree to 0.1 % makes a
/// 0.5 % first run "extreme" by MAD alone).
pub const MIN_OUTLIER_CHANGE: f64 = 0.02;
/// Largest relative difference between du's apparent ÷ on-disk and ZFS's
/// compressratio that is not flagged.
pub const SIZE_TOLERANCE: f64 = 0.15;

/// The order effects found in one group's counted runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Drift {
    /// Counted runs tested, in run order.
    pub n: usize,
    /// `None` when fewer than [`MIN_RUNS`] runs remain once a flagged first
    /// run is left out.
    pub trend: Option<Trend>,
    pub first_run: FirstRun,
}

impl Drift {
    /// Either effect was flagged.
    pub fn flagged(&self) -> bool {
        self.first_run.outlier || self.trend.as_ref().is_some_and(|t| t.drift)
    }
}

/// Least-squares line of tps over the run index.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Trend {
    /// Runs fitted (all, or all but a flagged first run).
    pub n: usize,
    /// The first run was left out (it is an outlier of its own).
    pub first_run_excluded: bool,
    /// tps per run.
    pub slope: f64,
    /// Fitted change from the first to the last run fitted, relative to the
    /// mean: slope × (n − 1) / mean (−0.06 = fell 6 %).
    pub change: f64,
    /// slope / its standard error; `None` when the runs lie exactly on the
    /// line (no residual to estimate the error from).
    pub t: Option<f64>,
    pub df: f64,
    /// Two-sided p of the slope (Student t, n − 2 df).
    pub p: f64,
    /// p < [`ALPHA`] and |change| ≥ [`MIN_TREND_CHANGE`].
    pub drift: bool,
}

/// The first counted run against the other runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FirstRun {
    pub tps: f64,
    /// Median of the other runs.
    pub median_of_others: f64,
    /// Median absolute deviation of the other runs from their median.
    pub mad_of_others: f64,
    /// 0.6745 × (tps − median) / MAD; `None` when the MAD is 0.
    pub z: Option<f64>,
    /// |z| > [`OUTLIER_Z`] (or MAD 0) and at least [`MIN_OUTLIER_CHANGE`]
    /// from the median.
    pub outlier: bool,
}

fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Test a group's counted tps, in run order, for drift and a first-run
/// outlier; `None` (not tested) below [`MIN_RUNS`] runs or with a value
/// that is not finite.
pub fn drift(tps: &[f64]) -> Option<Drift> {
    if tps.len() < MIN_RUNS || tps.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let first_run = first_run(tps);
    // Values near f64::MAX overflow a median or a deviation: what cannot be
    // computed is not tested, never reported as inf or NaN.
    if ![first_run.median_of_others, first_run.mad_of_others]
        .iter()
        .all(|x| x.is_finite())
        || first_run.z.is_some_and(|z| !z.is_finite())
    {
        return None;
    }
    let fitted = if first_run.outlier { &tps[1..] } else { tps };
    let trend = (fitted.len() >= MIN_RUNS)
        .then(|| trend(fitted, first_run.outlier))
        .flatten();
    Some(Drift {
        n: tps.len(),
        trend,
        first_run,
    })
}

fn first_run(tps: &[f64]) -> FirstRun {
    let others = &tps[1..];
    let med = median(others);
    let dev: Vec<f64> = others.iter().map(|x| (x - med).abs()).collect();
    let mad = median(&dev);
    let diff = tps[0] - med;
    let z = (mad > 0.0).then(|| 0.6745 * diff / mad);
    let far = diff.abs() >= MIN_OUTLIER_CHANGE * med.abs() && diff != 0.0;
    FirstRun {
        tps: tps[0],
        median_of_others: med,
        mad_of_others: mad,
        z,
        outlier: far && z.is_none_or(|z| z.abs() > OUTLIER_Z),
    }
}

fn trend(y: &[f64], first_run_excluded: bool) -> Option<Trend> {
    let n = y.len();
    let nf = n as f64;
    let xbar = (nf - 1.0) / 2.0;
    let ybar = mean(y);
    if !ybar.is_finite() || ybar == 0.0 {
        return None;
    }
    let sxx: f64 = (0..n).map(|i| (i as f64 - xbar).powi(2)).sum();
    let sxy: f64 = y
        .iter()
        .enumerate()
        .map(|(i, v)| (i as f64 - xbar) * (v - ybar))
        .sum();
    let slope = sxy / sxx;
    let icept = ybar - slope * xbar;
    let sse: f64 = y
        .iter()
        .enumerate()
        .map(|(i, v)| (v - icept - slope * i as f64).powi(2))
        .sum();
    let df = nf - 2.0;
    let se = (sse / df / sxx).sqrt();
    let (t, p) = if se > 0.0 {
        let t = slope / se;
        (Some(t), t_two_sided_p(t, df))
    } else if slope == 0.0 {
        (None, 1.0)
    } else {
        (None, 0.0)
    };
    let change = slope * (nf - 1.0) / ybar;
    if ![slope, se, p, change].iter().all(|x| x.is_finite()) {
        return None;
    }
    Some(Trend {
        n,
        first_run_excluded,
        slope,
        change,
        t,
        df,
        p,
        drift: p < ALPHA && change.abs() >= MIN_TREND_CHANGE,
    })
}

/// What a row's warnings call it: `lab1 ext4 tpcb c=4`.
pub fn row_label(host: &str, filesystem: &str, workload: &str, clients: u32) -> String {
    format!("{host} {filesystem} {workload} c={clients}")
}

/// `0.010`, or `< 0.001`.
fn p_text(p: f64) -> String {
    if p < 0.001 {
        "< 0.001".into()
    } else {
        format!("= {p:.3}")
    }
}

/// The warnings of a row's drift, hyperfine style, each starting with
/// `label`; `warmups` is the group's warm-up runs (what to advise).
pub fn drift_sentences(label: &str, d: &Drift, warmups: usize) -> Vec<String> {
    let mut out = Vec::new();
    let f = &d.first_run;
    if f.outlier {
        let advice = if warmups == 0 {
            "add `warmup = 1` to the workload".to_owned()
        } else {
            format!("raise `warmup` (now {warmups}) for the workload")
        };
        out.push(format!(
            "{label}: the first counted run is an outlier ({:.0} tps against a median of {:.0} for the other {}): it pays for caches filled and data laid out after the build and load; {advice}.",
            f.tps,
            f.median_of_others,
            d.n - 1
        ));
    }
    if let Some(t) = d.trend.as_ref().filter(|t| t.drift) {
        let without = if t.first_run_excluded {
            " after the first"
        } else {
            ""
        };
        out.push(format!(
            "{label}: tps {} {:.1}% over {} runs{without} (trend p {}): drift (background load, thermal throttling, cache or free-space state) may bias this row and its comparisons; check the host for other load, add warm-up runs (`warmup = N`) if it settles, or re-run the variants to see whether it repeats.",
            if t.change < 0.0 { "fell" } else { "rose" },
            t.change.abs() * 100.0,
            t.n,
            p_text(t.p)
        ));
    }
    out
}

/// du's apparent ÷ on-disk against ZFS's compressratio, for one row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SizeCheck {
    /// du apparent ÷ du on disk.
    pub du_ratio: f64,
    /// The dataset's compressratio.
    pub zfs_ratio: f64,
    /// |du_ratio / zfs_ratio − 1|.
    pub difference: f64,
    /// [`SIZE_TOLERANCE`].
    pub tolerance: f64,
    /// difference ≤ tolerance.
    pub agree: bool,
}

/// Compare du's ratio with ZFS's for a row that has all three measures
/// (only ZFS rows have a compressratio); `None` otherwise.  Without ZFS
/// there is no second measure of the same thing to check du against.
pub fn size_check(
    on_disk: Option<f64>,
    apparent: Option<f64>,
    compressratio: Option<f64>,
) -> Option<SizeCheck> {
    let (on_disk, apparent, zfs_ratio) = (on_disk?, apparent?, compressratio?);
    if !(on_disk > 0.0 && apparent > 0.0 && zfs_ratio > 0.0) {
        return None;
    }
    let du_ratio = apparent / on_disk;
    let difference = (du_ratio / zfs_ratio - 1.0).abs();
    if !difference.is_finite() {
        return None;
    }
    Some(SizeCheck {
        du_ratio,
        zfs_ratio,
        difference,
        tolerance: SIZE_TOLERANCE,
        agree: difference <= SIZE_TOLERANCE,
    })
}

/// The warning of a row whose sizes disagree.
pub fn size_sentence(label: &str, s: &SizeCheck) -> String {
    format!(
        "{label}: sizes disagree: du says {:.2}x (apparent ÷ on disk), ZFS says {:.2}x (compressratio), {:.0}% apart (tolerance {:.0}%): were they measured at different times (du before ZFS wrote the data out) or over different data (du of the data directory, compressratio of the whole dataset)? Neither is a safe compression ratio for this row.",
        s.du_ratio,
        s.zfs_ratio,
        s.difference * 100.0,
        s.tolerance * 100.0
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) {
        assert!((a - b).abs() <= tol, "{a} is not {b} (tol {tol})");
    }

    #[test]
    fn a_steady_fall_is_drift() {
        // x = 0..4, x̄ = 2, Sxx = 4 + 1 + 0 + 1 + 4 = 10.
        // y = 100 98 97 95 94, ȳ = 484 / 5 = 96.8.
        // Sxy = −2·3.2 − 1·1.2 + 0 + 1·(−1.8) + 2·(−2.8) = −15, slope = −1.5.
        // Intercept 96.8 + 1.5·2 = 99.8; fitted 99.8 98.3 96.8 95.3 93.8;
        // residuals .2 −.3 .2 −.3 .2, SSE = 0.30, s² = 0.30 / 3 = 0.1,
        // se = √(0.1 / 10) = 0.1, t = −15 on 3 df.
        // t(3) two-sided: p = 1 − (2/π)(u/(1+u²) + atan u), u = 15/√3
        // = 8.66025: 1 − (2/π)(0.113951 + 1.455835) = 0.000643.
        // Change: −1.5 · 4 / 96.8 = −0.061983 (fell 6.2 %).
        let d = drift(&[100.0, 98.0, 97.0, 95.0, 94.0]).unwrap();
        let t = d.trend.as_ref().unwrap();
        close(t.slope, -1.5, 1e-12);
        close(t.t.unwrap(), -15.0, 1e-9);
        assert_eq!(t.df, 3.0);
        close(t.p, 0.000_643_119_3, 1e-9);
        close(t.change, -0.061_983_471, 1e-8);
        assert!(t.drift && !t.first_run_excluded);
        // First run: others 98 97 95 94, median 96, |dev| 2 1 1 2, MAD 1.5;
        // z = 0.6745 · 4 / 1.5 = 1.7987: not an outlier.
        close(d.first_run.z.unwrap(), 1.798_666_7, 1e-6);
        assert!(!d.first_run.outlier);
        assert!(d.flagged());
        let words = drift_sentences("lab1 ext4 tpcb c=4", &d, 0);
        assert_eq!(words.len(), 1);
        assert!(
            words[0].starts_with("lab1 ext4 tpcb c=4: tps fell 6.2% over 5 runs (trend p < 0.001)"),
            "{}",
            words[0]
        );
    }

    #[test]
    fn flat_noise_is_not_drift() {
        // x = 0..5, x̄ = 2.5, Sxx = 17.5; Σ(x − x̄)·y = −250 − 159 − 47.5
        // + 52 + 145.5 + 257.5 = −1.5, slope = −0.0857; SSE = 90.705,
        // se = √(90.705 / 4 / 17.5) = 1.1383, t = −0.0753: p ≈ 0.94.
        let d = drift(&[100.0, 106.0, 95.0, 104.0, 97.0, 103.0]).unwrap();
        let t = d.trend.as_ref().unwrap();
        close(t.slope, -1.5 / 17.5, 1e-12);
        close(t.t.unwrap(), -0.075_298_649, 1e-8);
        assert!(t.p > 0.9, "{}", t.p);
        assert!(!t.drift);
        // Others 106 95 104 97 103: median 103, |dev| 3 8 1 6 0 → MAD 3,
        // z = 0.6745 · (100 − 103) / 3 = −0.6745.
        close(d.first_run.z.unwrap(), -0.6745, 1e-12);
        assert!(!d.first_run.outlier && !d.flagged());
        assert!(drift_sentences("x", &d, 0).is_empty());
    }

    #[test]
    fn a_slow_first_run_is_an_outlier_and_left_out_of_the_trend() {
        // Others 1040 1035 1050 1042: median (1040 + 1042) / 2 = 1041,
        // |dev| 1 6 9 1 → 1 1 6 9, MAD = (1 + 6) / 2 = 3.5;
        // z = 0.6745 · (812 − 1041) / 3.5 = −44.131; 229 / 1041 = 22 % off.
        let d = drift(&[812.0, 1040.0, 1035.0, 1050.0, 1042.0]).unwrap();
        let f = &d.first_run;
        assert_eq!((f.median_of_others, f.mad_of_others), (1041.0, 3.5));
        close(f.z.unwrap(), -44.131, 1e-3);
        assert!(f.outlier);
        // The trend is fitted to the 4 others: x̄ = 1.5, Sxx = 5,
        // Sxy = −1.5·1040 − 0.5·1035 + 0.5·1050 + 1.5·1042 = 10.5, slope 2.1,
        // a change of 2.1 · 3 / 1041.75 = 0.6 %: no drift.
        let t = d.trend.as_ref().unwrap();
        assert!(t.first_run_excluded && t.n == 4);
        close(t.slope, 2.1, 1e-12);
        assert!(!t.drift);
        let words = drift_sentences("lab2 zfs select-only c=1", &d, 0);
        assert_eq!(words.len(), 1);
        assert!(words[0].starts_with(
            "lab2 zfs select-only c=1: the first counted run is an outlier (812 tps against a median of 1041 for the other 4)"
        ));
        assert!(words[0].ends_with("add `warmup = 1` to the workload."));
        assert!(
            drift_sentences("x", &d, 2)[0].ends_with("raise `warmup` (now 2) for the workload.")
        );
        // With 4 runs and the first left out, 3 remain: no trend test.
        let d = drift(&[812.0, 1040.0, 1035.0, 1050.0]).unwrap();
        assert!(d.first_run.outlier && d.trend.is_none());
    }

    #[test]
    fn tight_groups_need_a_real_difference() {
        // Others all 1000 (MAD 0): 1010 is 1 % off, under the 2 % floor;
        // 1030 is 3 % off and flagged without a z.
        assert!(
            !drift(&[1010.0, 1000.0, 1000.0, 1000.0])
                .unwrap()
                .first_run
                .outlier
        );
        let f = drift(&[1030.0, 1000.0, 1000.0, 1000.0]).unwrap().first_run;
        assert!(f.outlier && f.z.is_none());
        // Runs exactly on a line: no residual, the slope is certain.
        let t = drift(&[100.0, 101.0, 102.0, 103.0]).unwrap().trend.unwrap();
        assert_eq!((t.t, t.p), (None, 0.0));
        assert!(t.drift, "3 / 101.5 = 3 % over 4 runs");
        let flat = drift(&[100.0; 5]).unwrap();
        assert_eq!(flat.trend.unwrap().p, 1.0);
    }

    #[test]
    fn fewer_than_four_runs_are_not_tested() {
        assert!(drift(&[1.0, 2.0, 3.0]).is_none());
        assert!(drift(&[1.0, 2.0, f64::NAN, 4.0]).is_none());
        // Overflowing sums are not tested either (found by tests/pure/fuzz.rs).
        let d = drift(&[0.0, 812.5, 0.0, f64::MAX]).unwrap();
        assert!(d.trend.is_none());
    }

    #[test]
    fn sizes_agree_within_the_tolerance() {
        // 158 MiB apparent / 60 MiB on disk = 2.6333; compressratio 2.61:
        // 2.6333 / 2.61 − 1 = 0.89 %.
        let mib = f64::from(1 << 20);
        let ok = size_check(Some(60.0 * mib), Some(158.0 * mib), Some(2.61)).unwrap();
        close(ok.du_ratio, 158.0 / 60.0, 1e-12);
        close(ok.difference, 0.008_940_6, 1e-6);
        assert!(ok.agree);
        // 190 / 100 = 1.9 against 4.87: 1.9 / 4.87 − 1 = −61 %.
        let bad = size_check(Some(100.0 * mib), Some(190.0 * mib), Some(4.87)).unwrap();
        close(bad.difference, 0.609_856, 1e-6);
        assert!(!bad.agree);
        let s = size_sentence("lab2 zfs tpcb c=1", &bad);
        assert!(
            s.starts_with("lab2 zfs tpcb c=1: sizes disagree: du says 1.90x (apparent ÷ on disk), ZFS says 4.87x (compressratio), 61% apart (tolerance 15%)"),
            "{s}"
        );
        // No compressratio (not ZFS) or no du: nothing to check.
        assert!(size_check(Some(1.0), Some(1.0), None).is_none());
        assert!(size_check(None, Some(1.0), Some(2.0)).is_none());
        assert!(size_check(Some(0.0), Some(1.0), Some(2.0)).is_none());
    }
}
