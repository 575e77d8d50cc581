//! Checks of a row against itself: drift and order effects over its runs,
//! and whether its size measures agree.
//!
//! hyperfine warns when the first run was much slower than the rest or
//! when outliers were found; a report should say the same in words rather
//! than leave a reader to spot it in a min–max column.  Two
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
//! The metric tested is the row's ([`Metric`]): tps, or the latency of a
//! rate-limited workload, or a SQL script's load time.
//!
//! Sizes ([`size_check`]): on ZFS, `du`'s on-disk bytes of the data
//! directory and the dataset's own `referenced` bytes both count what is
//! allocated on disk, and the dataset holds only the data directory, so
//! they measure the same thing.  They differ by what ZFS allocates beyond
//! the files' own blocks and by frees still pending: on the lab (zfs-fuse,
//! 8k records, ashift 12) by 15–45 MB whatever the size, −9 % to +32 % of
//! 60–550 MB data directories (plain files matched to the KiB).  Only a
//! difference beyond both [`SIZE_TOLERANCE`] and [`SIZE_SLACK_BYTES`] means
//! one of them did not measure the data as it was, or not the same data,
//! and the row says so.
//! `compressratio` is *not* compared with du's apparent ÷ on-disk: it is
//! the ratio before allocation (logical ÷ compressed bytes), and every
//! compressed record still takes whole sectors, so an 8k record on 4k
//! sectors saves at most 2x on disk however well it compresses (measured on
//! the lab: 64 MiB of text took 32.5 MiB on disk while compressratio was
//! 4.48x for the data directory).
use serde::Serialize;

use super::compare::ALPHA;
use super::stats::{mean, p_text, t_two_sided_p, GroupStats, Metric};

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
/// Largest relative difference between du's on-disk bytes of the data
/// directory and the dataset's `referenced` bytes that is not flagged
/// (|du ÷ referenced − 1|): above the 32 % measured on the lab's smallest
/// data directory, far below a du of other data or of data not written out.
pub const SIZE_TOLERANCE: f64 = 0.25;
/// ... and the absolute difference that is never flagged: above the 45 MB
/// measured on the lab's small data directories, nothing next to the GBs of
/// a study's.
pub const SIZE_SLACK_BYTES: f64 = (64u64 << 20) as f64;

/// The order effects found in one group's counted runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Drift {
    /// What was tested: the row's metric.
    pub metric: Metric,
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

/// Least-squares line of the metric over the run index.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Trend {
    /// Runs fitted (all, or all but a flagged first run).
    pub n: usize,
    /// The first run was left out (it is an outlier of its own).
    pub first_run_excluded: bool,
    /// Change of the metric per run.
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
    /// The first run's value of the metric.
    pub value: f64,
    /// Median of the other runs.
    pub median_of_others: f64,
    /// Median absolute deviation of the other runs from their median.
    pub mad_of_others: f64,
    /// 0.6745 × (value − median) / MAD; `None` when the MAD is 0.
    pub z: Option<f64>,
    /// |z| > [`OUTLIER_Z`] (or MAD 0) and at least [`MIN_OUTLIER_CHANGE`]
    /// from the median.
    pub outlier: bool,
}

use super::stats::median;

/// Test a group's counted values of `metric`, in run order, for drift and
/// a first-run outlier; `None` (not tested) below [`MIN_RUNS`] runs or with
/// a value that is not finite.
pub fn drift(tps: &[f64], metric: Metric) -> Option<Drift> {
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
        metric,
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
        value: tps[0],
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

/// The warnings of a row's drift, hyperfine style, each starting with
/// `label`; `warmups` is the group's warm-up runs (what to advise);
/// `alternated`: the host's variants ran in alternation (their runs
/// interleaved in time, `order = "interleaved"`/`"random"`), so drift hit
/// them alike and the advice is not to alternate them.
pub fn drift_sentences(label: &str, d: &Drift, warmups: usize, alternated: bool) -> Vec<String> {
    let mut out = Vec::new();
    let f = &d.first_run;
    if f.outlier {
        let advice = if warmups == 0 {
            "add `warmup = 1` to the workload".to_owned()
        } else {
            format!("raise `warmup` (now {warmups}) for the workload")
        };
        out.push(format!(
            "{label}: the first counted run is an outlier ({} against a median of {} for the other {}): it pays for caches filled and data laid out after the build and load; {advice}.",
            d.metric.value_text(f.value),
            d.metric.value_text(f.median_of_others),
            d.n - 1
        ));
    }
    if let Some(t) = d.trend.as_ref().filter(|t| t.drift) {
        let without = if t.first_run_excluded {
            " after the first"
        } else {
            ""
        };
        let advice = if alternated {
            "the variants' runs alternated on this host, so the drift hit them alike: the comparisons stand better than the figures themselves; check the host for other load, add warm-up runs (`warmup = N`) if it settles, or re-run to see whether it repeats."
        } else {
            "check the host for other load, add warm-up runs (`warmup = N`) if it settles, or re-run the variants to see whether it repeats; the variants ran one after the other, so set `order = \"interleaved\"` in the matrix (one device per variant on the host) so that drift hits every variant alike."
        };
        out.push(format!(
            "{label}: {} {} {:.1}% over {} runs{without} (trend {}): drift (background load, thermal throttling, cache or free-space state) may bias this row and its comparisons; {advice}",
            d.metric.name(),
            if t.change < 0.0 { "fell" } else { "rose" },
            t.change.abs() * 100.0,
            t.n,
            p_text(t.p)
        ));
    }
    out
}

/// Which two measures of one row's size a [`SizeCheck`] compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SizeCheckKind {
    /// ZFS: the dataset's `referenced` (the row's size) against du's
    /// on-disk bytes of the data directory.
    ZfsReferencedVsDu,
    /// btrfs: its own Used (the row's size) against df's used less the
    /// global reserve, which statfs counts as used; the same accounting
    /// read twice, so they agree closely.
    BtrfsUsedVsDf,
}

/// Largest relative difference between btrfs's Used and df's used less the
/// global reserve that is not flagged.  statfs computes its used from the
/// same space infos (linux fs/btrfs/super.c btrfs_statfs), so they match to
/// the byte when nothing writes between the two readings (measured here:
/// 10977280 both, 300 MiB of text under compress=zstd); a running cluster's
/// checkpoint between them moves them apart by a few blocks.
pub const BTRFS_SIZE_TOLERANCE: f64 = 0.05;
/// ... and the absolute difference that is never flagged.
pub const BTRFS_SIZE_SLACK_BYTES: f64 = (4u64 << 20) as f64;

/// A row's size (its filesystem's own measure) against a second measure of
/// the same data, for a row that has both.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SizeCheck {
    pub kind: SizeCheckKind,
    /// The row's on-disk size (median over the counted runs).
    pub on_disk_bytes: f64,
    /// The second measure (median).
    pub other_bytes: f64,
    /// |other ÷ on disk − 1|.
    pub difference: f64,
    pub tolerance: f64,
    pub slack_bytes: f64,
    /// difference ≤ tolerance, or |other − on disk| ≤ slack.
    pub agree: bool,
}

/// The [`SizeCheck`] of a row whose size has a second measure (ZFS rows
/// with du, btrfs rows with df and its reserve); `None` otherwise.
/// compressratio is not checked against du (see the module doc).
pub fn size_check(g: &GroupStats) -> Option<SizeCheck> {
    use crate::config::fs::SizeMeasure;
    let on_disk = g.on_disk_bytes?;
    let (kind, other, tolerance, slack_bytes) = match g.on_disk_measure {
        SizeMeasure::ZfsReferenced => (
            SizeCheckKind::ZfsReferencedVsDu,
            g.du_on_disk_bytes?,
            SIZE_TOLERANCE,
            SIZE_SLACK_BYTES,
        ),
        SizeMeasure::BtrfsUsed => (
            SizeCheckKind::BtrfsUsedVsDf,
            g.df_used_bytes? - g.btrfs_global_reserve_bytes?,
            BTRFS_SIZE_TOLERANCE,
            BTRFS_SIZE_SLACK_BYTES,
        ),
        SizeMeasure::Du | SizeMeasure::DfUsed => return None,
    };
    if !(on_disk > 0.0 && other > 0.0) {
        return None;
    }
    let difference = (other / on_disk - 1.0).abs();
    if !difference.is_finite() {
        return None;
    }
    Some(SizeCheck {
        kind,
        on_disk_bytes: on_disk,
        other_bytes: other,
        difference,
        tolerance,
        slack_bytes,
        agree: difference <= tolerance || (other - on_disk).abs() <= slack_bytes,
    })
}

impl SizeCheck {
    /// The second measure, as a table cell names it.
    pub fn other_label(&self) -> &'static str {
        match self.kind {
            SizeCheckKind::ZfsReferencedVsDu => "du",
            SizeCheckKind::BtrfsUsedVsDf => "df − reserve",
        }
    }
}

/// The warning of a row whose sizes disagree.
pub fn size_sentence(label: &str, s: &SizeCheck) -> String {
    let apart = format!(
        "{:.0}% apart (tolerance {:.0}% or {})",
        s.difference * 100.0,
        s.tolerance * 100.0,
        crate::text::iec_bytes_short(s.slack_bytes)
    );
    match s.kind {
        SizeCheckKind::ZfsReferencedVsDu => format!(
            "{label}: sizes disagree: du says {} on disk for the data directory, ZFS says {} referenced by the dataset, {apart}: was du run before ZFS wrote the data out, or does the dataset hold more than the data directory? Neither is a safe size for this row.",
            crate::text::iec_bytes(s.other_bytes),
            crate::text::iec_bytes(s.on_disk_bytes),
        ),
        SizeCheckKind::BtrfsUsedVsDf => format!(
            "{label}: sizes disagree: btrfs says {} used, df says {} used beyond its global reserve, {apart}: did something write between the two readings, or does the filesystem hold more than the cluster? Neither is a safe size for this row.",
            crate::text::iec_bytes(s.on_disk_bytes),
            crate::text::iec_bytes(s.other_bytes),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) {
        assert!((a - b).abs() <= tol, "{a} is not {b} (tol {tol})");
    }

    fn drift_tps(v: &[f64]) -> Option<Drift> {
        drift(v, Metric::Tps)
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
        let d = drift_tps(&[100.0, 98.0, 97.0, 95.0, 94.0]).unwrap();
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
        let words = drift_sentences("lab1 ext4 tpcb c=4", &d, 0, false);
        assert_eq!(words.len(), 1);
        assert!(
            words[0].starts_with("lab1 ext4 tpcb c=4: tps fell 6.2% over 5 runs (trend p < 0.001)"),
            "{}",
            words[0]
        );
        // The fix that spreads drift over every variant alike is named.
        assert!(
            words[0].contains("set `order = \"interleaved\"` in the matrix"),
            "{}",
            words[0]
        );
        // A sweep that alternated its variants is not told to alternate them.
        let alt = drift_sentences("lab1 ext4 tpcb c=4", &d, 0, true);
        assert_eq!(alt.len(), 1);
        assert!(!alt[0].contains("order = "), "{}", alt[0]);
        assert!(
            alt[0].contains(
                "the variants' runs alternated on this host, so the drift hit them alike"
            ),
            "{}",
            alt[0]
        );
    }

    #[test]
    fn flat_noise_is_not_drift() {
        // x = 0..5, x̄ = 2.5, Sxx = 17.5; Σ(x − x̄)·y = −250 − 159 − 47.5
        // + 52 + 145.5 + 257.5 = −1.5, slope = −0.0857; SSE = 90.705,
        // se = √(90.705 / 4 / 17.5) = 1.1383, t = −0.0753: p ≈ 0.94.
        let d = drift_tps(&[100.0, 106.0, 95.0, 104.0, 97.0, 103.0]).unwrap();
        let t = d.trend.as_ref().unwrap();
        close(t.slope, -1.5 / 17.5, 1e-12);
        close(t.t.unwrap(), -0.075_298_649, 1e-8);
        assert!(t.p > 0.9, "{}", t.p);
        assert!(!t.drift);
        // Others 106 95 104 97 103: median 103, |dev| 3 8 1 6 0 → MAD 3,
        // z = 0.6745 · (100 − 103) / 3 = −0.6745.
        close(d.first_run.z.unwrap(), -0.6745, 1e-12);
        assert!(!d.first_run.outlier && !d.flagged());
        assert!(drift_sentences("x", &d, 0, false).is_empty());
    }

    #[test]
    fn a_slow_first_run_is_an_outlier_and_left_out_of_the_trend() {
        // Others 1040 1035 1050 1042: median (1040 + 1042) / 2 = 1041,
        // |dev| 1 6 9 1 → 1 1 6 9, MAD = (1 + 6) / 2 = 3.5;
        // z = 0.6745 · (812 − 1041) / 3.5 = −44.131; 229 / 1041 = 22 % off.
        let d = drift_tps(&[812.0, 1040.0, 1035.0, 1050.0, 1042.0]).unwrap();
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
        let words = drift_sentences("lab2 zfs select-only c=1", &d, 0, false);
        assert_eq!(words.len(), 1);
        assert!(words[0].starts_with(
            "lab2 zfs select-only c=1: the first counted run is an outlier (812 tps against a median of 1041 tps for the other 4)"
        ));
        assert!(words[0].ends_with("add `warmup = 1` to the workload."));
        assert!(drift_sentences("x", &d, 2, false)[0]
            .ends_with("raise `warmup` (now 2) for the workload."));
        // With 4 runs and the first left out, 3 remain: no trend test.
        let d = drift_tps(&[812.0, 1040.0, 1035.0, 1050.0]).unwrap();
        assert!(d.first_run.outlier && d.trend.is_none());
    }

    #[test]
    fn tight_groups_need_a_real_difference() {
        // Others all 1000 (MAD 0): 1010 is 1 % off, under the 2 % floor;
        // 1030 is 3 % off and flagged without a z.
        assert!(
            !drift_tps(&[1010.0, 1000.0, 1000.0, 1000.0])
                .unwrap()
                .first_run
                .outlier
        );
        let f = drift_tps(&[1030.0, 1000.0, 1000.0, 1000.0])
            .unwrap()
            .first_run;
        assert!(f.outlier && f.z.is_none());
        // Runs exactly on a line: no residual, the slope is certain.
        let t = drift_tps(&[100.0, 101.0, 102.0, 103.0])
            .unwrap()
            .trend
            .unwrap();
        assert_eq!((t.t, t.p), (None, 0.0));
        assert!(t.drift, "3 / 101.5 = 3 % over 4 runs");
        let flat = drift_tps(&[100.0; 5]).unwrap();
        assert_eq!(flat.trend.unwrap().p, 1.0);
    }

    #[test]
    fn fewer_than_four_runs_are_not_tested() {
        assert!(drift_tps(&[1.0, 2.0, 3.0]).is_none());
        assert!(drift_tps(&[1.0, 2.0, f64::NAN, 4.0]).is_none());
        // Overflowing sums are not tested either (found by tests/pure/fuzz.rs).
        let d = drift_tps(&[0.0, 812.5, 0.0, f64::MAX]).unwrap();
        assert!(d.trend.is_none());
    }

    #[test]
    fn a_latency_drift_is_said_in_ms() {
        let d = drift(&[4.0, 4.1, 4.2, 4.3, 4.4], Metric::Latency).unwrap();
        let w = drift_sentences("lab1 ext4 rated c=4", &d, 1, false);
        assert!(
            w[0].starts_with(
                "lab1 ext4 rated c=4: latency rose 9.5% over 5 runs (trend p < 0.001)"
            ),
            "{w:?}"
        );
        let d = drift(&[6.0, 4.0, 4.02, 4.02, 4.0], Metric::Latency).unwrap();
        assert!(drift_sentences("x", &d, 0, false)[0].starts_with(
            "x: the first counted run is an outlier (6.00 ms against a median of 4.01 ms"
        ));
    }
}
