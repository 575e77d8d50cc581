//! Statistics over counted repeats: summaries, Student's t, per-second tps.
//!
//! Pure functions over `f64` slices and cell records.  The Student t
//! distribution is computed here (regularised incomplete beta by Lentz's
//! continued fraction, log-gamma by Lanczos, the quantile by bisection on the
//! CDF) instead of pulling a statistics crate and its linear-algebra
//! dependencies; the unit tests pin it against scipy to 1e-9.
//!
//! Warm-up runs (`params.warmup`) and cells that did not finish are never
//! counted (the first run after `pgbench -i` was ~9 % slow on the
//! local lab, so counting it punishes whichever filesystem runs first).
use crate::config::fs::SizeMeasure;
use serde::Serialize;

use crate::model::{CellParams, CellResult, CellStatus, ProgressSample, RunMeasures};

/// What a row is measured and compared on: the one choice every renderer
/// (terminal summary, Markdown, HTML, JSON) and every check (noise, drift,
/// the winner, the tests and CIs against the baseline) takes from here
/// ([`Metric::of`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Transactions per second of each run; higher is better.
    Tps,
    /// Mean latency of each run in ms; lower is better.  A rate-limited
    /// workload (pgbench `-R`) runs at the rate whatever the filesystem, so
    /// its tps says nothing: the latency under that load does.
    Latency,
    /// Total time of a SQL script's statements in s (a data load); lower is
    /// better.  Its rows also lead with each statement's time and the sizes.
    LoadTime,
}

impl Metric {
    /// The metric of a finished cell: a SQL script's load time, a
    /// rate-limited workload's latency, otherwise tps.
    pub fn of(params: &CellParams, run: &RunMeasures) -> Metric {
        if !run.statements.is_empty() {
            Metric::LoadTime
        } else {
            Metric::planned(params)
        }
    }

    /// The metric a cell will be compared on, known before it runs (what
    /// adaptive repeats decide on): a SQL script's load time, a
    /// rate-limited workload's latency, otherwise tps.
    pub fn planned(params: &CellParams) -> Metric {
        if params.sql_script {
            Metric::LoadTime
        } else if params.rate.is_some() {
            Metric::Latency
        } else {
            Metric::Tps
        }
    }

    /// A finished cell's value of the metric it is compared on; `None` for
    /// a cell that did not finish (or a latency pgbench did not print).
    pub fn compared_value(r: &CellResult) -> Option<f64> {
        match &r.status {
            CellStatus::Done { run } => Metric::of(&r.params, run).value(run),
            _ => None,
        }
    }

    /// The run's value of this metric (latency: when pgbench printed it).
    pub fn value(self, run: &RunMeasures) -> Option<f64> {
        match self {
            Metric::Tps => Some(run.tps),
            Metric::Latency => run.latency_avg_ms,
            // The run's duration: the host's clock around psql (a bundle
            // from before held the statements' sum there, so it reads
            // as it always did), never a sum of lines the script printed.
            Metric::LoadTime => Some(run.duration_s),
        }
    }

    /// As the JSON report and the CSV's `metric` column spell it.
    pub fn csv_name(self) -> &'static str {
        match self {
            Metric::Tps => "tps",
            Metric::Latency => "latency",
            Metric::LoadTime => "load_time",
        }
    }

    pub fn higher_is_better(self) -> bool {
        self == Metric::Tps
    }

    /// `tps`, `latency`, `load time`: what the sentences call it.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Tps => "tps",
            Metric::Latency => "latency",
            Metric::LoadTime => "load time",
        }
    }

    /// A value with its unit: `812 tps`, `4.21 ms`, `28.67 s`.
    pub fn value_text(self, v: f64) -> String {
        match self {
            Metric::Tps => format!("{v:.0} tps"),
            Metric::Latency => format!("{v:.2} ms"),
            Metric::LoadTime => format!("{v:.2} s"),
        }
    }

    /// "`a` ran 1.2 times faster than `b`": the words between the ratio
    /// and the other variant, for the better side.
    pub fn better_words(self) -> &'static str {
        match self {
            Metric::Tps => "faster",
            Metric::Latency => "lower latency",
            Metric::LoadTime => "faster",
        }
    }

    /// The verb before the ratio: `ran`, `had`, `loaded`.
    pub fn verb(self) -> &'static str {
        match self {
            Metric::Tps => "ran",
            Metric::Latency => "had",
            Metric::LoadTime => "loaded",
        }
    }

    /// Why a row is a host's winner.
    pub fn winner_why(self) -> &'static str {
        match self {
            Metric::Tps => "(more tps than every other variant, p < 0.05)",
            Metric::Latency => "(lower mean latency than every other variant, p < 0.05)",
            Metric::LoadTime => "(shorter load time than every other variant, p < 0.05)",
        }
    }

    /// The sentence under a table that says what its rows are compared on;
    /// `None` for tps (the default, said in the method note).
    pub fn note(self, rate: Option<u32>) -> Option<String> {
        match self {
            Metric::Tps => None,
            Metric::Latency => Some(format!(
                "Rate-limited{} (pgbench -R): tps is fixed by the rate, so variants are compared on mean latency per run (lower is better); schedule lag, skipped and late transactions are shown beside it.",
                rate.map_or(String::new(), |r| format!(" at {r} tps"))
            )),
            Metric::LoadTime => Some(
                "SQL script (a data load, timed per statement by psql): variants are compared on the total load time per run (lower is better) and on the sizes after the load; tps and latency mean nothing here.".to_owned(),
            ),
        }
    }
}

/// Below this a p-value is said as `p < 0.001`.
pub const P_FLOOR: f64 = 0.001;

/// A p-value in a sentence: `p < 0.001` or `p = 0.012` (the one place it
/// is worded; the summary, the warnings and the notes use it).
pub fn p_text(p: f64) -> String {
    if p < P_FLOOR {
        format!("p < {P_FLOOR}")
    } else {
        format!("p = {p:.3}")
    }
}

/// A p-value in a table's p column: `<0.001` or `0.012`.
pub fn p_cell(p: f64) -> String {
    if p < P_FLOOR {
        format!("<{P_FLOOR}")
    } else {
        format!("{p:.3}")
    }
}

/// Default coefficient of variation above which a group is flagged noisy.
pub const DEFAULT_CV_THRESHOLD: f64 = 0.05;

/// Summary of one sample.  Spread fields are `None` when `n < 2`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    pub n: usize,
    pub mean: f64,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    /// Sample standard deviation (n − 1 in the denominator).
    pub sd: Option<f64>,
    /// Coefficient of variation: sd / mean.
    pub cv: Option<f64>,
    /// 95 % confidence interval of the mean (Student t, n − 1 df).
    pub ci95: Option<(f64, f64)>,
}

impl Summary {
    /// Half-width of the 95 % CI relative to the mean (e.g. 0.02 = ±2 %).
    pub fn ci_rel_half_width(&self) -> Option<f64> {
        let (lo, hi) = self.ci95?;
        (self.mean != 0.0).then(|| (hi - lo) / 2.0 / self.mean.abs())
    }
}

/// Mean of a non-empty slice.
/// The median of `xs` (the mean of the middle two for an even count).
pub fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

pub fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// Sample variance (n − 1); `None` below two values.
pub fn variance(xs: &[f64]) -> Option<f64> {
    if xs.len() < 2 {
        return None;
    }
    let m = mean(xs);
    Some(xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (xs.len() - 1) as f64)
}

/// Summarise a sample; `None` when it is empty or holds a non-finite value.
pub fn summarize(xs: &[f64]) -> Option<Summary> {
    if xs.is_empty() || xs.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    let m = mean(&v);
    // Values near f64::MAX overflow a sum or a square: what cannot be
    // computed is left out (None), never reported as inf or NaN.
    if !m.is_finite() {
        return None;
    }
    let sd = variance(&v).map(f64::sqrt).filter(|s| s.is_finite());
    let cv = sd
        .and_then(|s| (m != 0.0).then(|| s / m.abs()))
        .filter(|c| c.is_finite());
    let ci95 = sd
        .map(|s| {
            let h = t_quantile(0.975, (n - 1) as f64) * s / (n as f64).sqrt();
            (m - h, m + h)
        })
        .filter(|(lo, hi)| lo.is_finite() && hi.is_finite());
    Some(Summary {
        n,
        mean: m,
        median,
        min: v[0],
        max: v[n - 1],
        sd,
        cv,
        ci95,
    })
}

/// ln Γ(x) for x > 0 (Lanczos, g = 7, 9 terms; ~1e-15 relative).
fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x)Γ(1−x) = π / sin(πx).
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + G + 0.5;
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// Continued fraction of the incomplete beta (modified Lentz).
fn beta_cf(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..=300 {
        let m = m as f64;
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        if d.abs() < TINY {
            d = TINY;
        }
        c = 1.0 + aa / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        if d.abs() < TINY {
            d = TINY;
        }
        c = 1.0 + aa / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// Regularised incomplete beta I_x(a, b).
fn inc_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_front = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln();
    let front = ln_front.exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_cf(a, b, x) / a
    } else {
        1.0 - front * beta_cf(b, a, 1.0 - x) / b
    }
}

/// CDF of Student's t with `df` (> 0, may be fractional) degrees of freedom.
pub fn t_cdf(t: f64, df: f64) -> f64 {
    if t.is_nan() || df.is_nan() || df <= 0.0 {
        return f64::NAN;
    }
    if t.is_infinite() {
        return if t > 0.0 { 1.0 } else { 0.0 };
    }
    let tail = 0.5 * inc_beta(df / 2.0, 0.5, df / (df + t * t));
    if t > 0.0 {
        1.0 - tail
    } else {
        tail
    }
}

/// Two-sided p-value of a t statistic.
pub fn t_two_sided_p(t: f64, df: f64) -> f64 {
    if t.is_nan() || df.is_nan() || df <= 0.0 {
        return f64::NAN;
    }
    inc_beta(df / 2.0, 0.5, df / (df + t * t)).min(1.0)
}

/// Quantile of Student's t: the `t` with `t_cdf(t, df) == p`, 0 < p < 1.
/// Memoised per thread: a report asks for t(0.975, n − 1) for thousands of
/// groups with the same few n.
pub fn t_quantile(p: f64, df: f64) -> f64 {
    thread_local! {
        static CACHE: std::cell::RefCell<std::collections::HashMap<(u64, u64), f64>> =
            std::cell::RefCell::new(std::collections::HashMap::new());
    }
    let key = (p.to_bits(), df.to_bits());
    if let Some(v) = CACHE.with(|c| c.borrow().get(&key).copied()) {
        return v;
    }
    let v = t_quantile_uncached(p, df);
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        // Fractional Welch df never repeat; keep the cache bounded.
        if c.len() > 4096 {
            c.clear();
        }
        c.insert(key, v);
    });
    v
}

fn t_quantile_uncached(p: f64, df: f64) -> f64 {
    if !(p > 0.0 && p < 1.0) || df.is_nan() || df <= 0.0 {
        return f64::NAN;
    }
    if p < 0.5 {
        return -t_quantile_uncached(1.0 - p, df);
    }
    if p == 0.5 {
        return 0.0;
    }
    // Bracket [0, hi] then bisect; the CDF is monotone.
    let mut hi = 2.0;
    while t_cdf(hi, df) < p {
        hi *= 2.0;
        if hi > 1e12 {
            return f64::INFINITY;
        }
    }
    let mut lo = 0.0;
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if t_cdf(mid, df) < p {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo <= 1e-13 * hi.max(1.0) {
            break;
        }
    }
    0.5 * (lo + hi)
}

/// Per-second tps of one run's `-P 1` progress samples, trimmed: samples
/// whose second ends at or before `drop_start_s` (warm-up of the run) or
/// after `last − drop_end_s` (the tail, when clients finish unevenly) are
/// dropped.  `last` is the latest sample's time.
pub fn trimmed_progress_tps(
    samples: &[ProgressSample],
    drop_start_s: f64,
    drop_end_s: f64,
) -> Vec<f64> {
    let last = samples
        .iter()
        .map(|s| s.t_s)
        .fold(f64::NEG_INFINITY, f64::max);
    samples
        .iter()
        .filter(|s| s.t_s > drop_start_s && s.t_s <= last - drop_end_s && s.tps.is_finite())
        .map(|s| s.tps)
        .collect()
}

/// How groups are summarised.
#[derive(Debug, Clone, PartialEq)]
pub struct StatsOptions {
    /// CV above which a group is flagged noisy (0.05 = 5 %).
    pub cv_threshold: f64,
    /// Seconds of progress dropped at the start of each run.
    pub trim_start_s: f64,
    /// Seconds of progress dropped at the end of each run.
    pub trim_end_s: f64,
}

impl Default for StatsOptions {
    fn default() -> Self {
        StatsOptions {
            cv_threshold: DEFAULT_CV_THRESHOLD,
            trim_start_s: 0.0,
            trim_end_s: 0.0,
        }
    }
}

/// host × filesystem variant × workload × clients.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct GroupKey {
    pub host: String,
    pub filesystem: String,
    pub workload: String,
    pub clients: u32,
}

/// One statement of a SQL script over the counted runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StatementStats {
    /// The statement as the first counted run echoed it.
    pub statement: String,
    /// Its time in ms over the counted runs.
    pub ms: Summary,
}

/// Statistics of one group over its counted repeats.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupStats {
    pub key: GroupKey,
    pub fs_type: String,
    /// What the group is compared on ([`Metric::of`] of its counted runs).
    pub metric: Metric,
    /// pgbench `-R` of the workload, when rate-limited.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate: Option<u32>,
    /// tps of each counted repeat, in the order the cells came.
    pub tps_values: Vec<f64>,
    pub tps: Summary,
    /// Mean latency of each counted repeat that printed one, in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub latency_values: Vec<f64>,
    pub latency_ms: Option<Summary>,
    /// SQL scripts: total load time of each counted repeat (s), in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub load_s_values: Vec<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load_s: Option<Summary>,
    /// SQL scripts: each statement's time, in script order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub statements: Vec<StatementStats>,
    /// Rate-limited runs: the mean schedule lag of each run (ms), summarised.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schedule_lag_ms: Option<Summary>,
    /// The largest schedule lag of any counted run (ms).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schedule_lag_max_ms: Option<f64>,
    /// Transactions skipped (`-R` with `-L`: too late to start), summed
    /// over the counted runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped_transactions: Option<u64>,
    /// Transactions slower than `-L`, summed over the counted runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub late_transactions: Option<u64>,
    /// `latency_log`: percentiles from the runs' per-transaction logs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_percentiles: Option<super::latency::GroupLatency>,
    /// `per_statement` (pgbench `-r`): each statement's mean over the runs.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub statement_latencies: Vec<super::latency::StatementMean>,
    /// Trimmed per-second tps of all counted repeats pooled.
    pub per_second_tps: Option<Summary>,
    /// CV of the group's metric above the threshold.
    pub noisy: bool,
    pub warmups_excluded: usize,
    /// The data's size on disk as its filesystem's row says it is read
    /// (`config::fs::SizeMeasure`: du, ZFS's referenced, btrfs's used),
    /// median over the counted repeats: what "on disk" and "smallest" mean.
    pub on_disk_bytes: Option<f64>,
    /// Which measure [`GroupStats::on_disk_bytes`] is.
    pub on_disk_measure: crate::config::fs::SizeMeasure,
    /// The filesystem's used bytes (`df`), median, when measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub df_used_bytes: Option<f64>,
    /// Median of the sizes over counted repeats, when measured.
    pub du_on_disk_bytes: Option<f64>,
    pub du_apparent_bytes: Option<f64>,
    pub zfs_compressratio: Option<f64>,
    /// ZFS's own accounting (`zfs get -p`), medians like the others; absent
    /// from the JSON report where not measured (other filesystems, bundles
    /// made before fsmatrix recorded it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zfs_used_bytes: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zfs_logicalused_bytes: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zfs_referenced_bytes: Option<f64>,
    /// btrfs's own accounting (`btrfs filesystem usage`), medians.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub btrfs_used_bytes: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub btrfs_data_used_bytes: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub btrfs_global_reserve_bytes: Option<f64>,
    /// `pg_database_size` of the benchmark database, median.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pg_database_bytes: Option<f64>,
}

impl GroupStats {
    /// The counted runs' values of `m`, in order.
    pub fn values(&self, m: Metric) -> &[f64] {
        match m {
            Metric::Tps => &self.tps_values,
            Metric::Latency => &self.latency_values,
            Metric::LoadTime => &self.load_s_values,
        }
    }

    /// The summary of `m`, when the runs measured it.
    pub fn summary(&self, m: Metric) -> Option<&Summary> {
        match m {
            Metric::Tps => Some(&self.tps),
            Metric::Latency => self.latency_ms.as_ref(),
            Metric::LoadTime => self.load_s.as_ref(),
        }
    }
}

/// Group the finished, counted cells and summarise each group.  Groups come
/// in the order of their first cell (the plan's order within a bundle).
pub fn group_stats(cells: &[CellResult], opts: &StatsOptions) -> Vec<GroupStats> {
    #[derive(Default)]
    struct Acc<'a> {
        fs_type: &'a str,
        metric: Option<Metric>,
        rate: Option<u32>,
        tps: Vec<f64>,
        lat: Vec<f64>,
        load: Vec<f64>,
        statements: Vec<(String, Vec<f64>)>,
        lag: Vec<f64>,
        lag_max: Option<f64>,
        skipped: Option<u64>,
        late: Option<u64>,
        tx_log: Vec<&'a crate::model::LatencyPercentiles>,
        stmt_lat: Vec<&'a [crate::model::StatementLatency]>,
        pg_db: Vec<f64>,
        per_second: Vec<f64>,
        warmups: usize,
        on_disk: Vec<f64>,
        df_used: Vec<f64>,
        apparent: Vec<f64>,
        ratio: Vec<f64>,
        zfs_used: Vec<f64>,
        zfs_logical: Vec<f64>,
        zfs_referenced: Vec<f64>,
        btrfs_used: Vec<f64>,
        btrfs_data: Vec<f64>,
        btrfs_reserve: Vec<f64>,
    }
    let mut order: Vec<GroupKey> = Vec::new();
    let mut accs: std::collections::HashMap<GroupKey, Acc> = std::collections::HashMap::new();
    for c in cells {
        let CellStatus::Done { run } = &c.status else {
            continue;
        };
        let p = &c.params;
        let key = GroupKey {
            host: p.host.clone(),
            filesystem: p.filesystem.clone(),
            workload: p.workload.clone(),
            clients: p.clients,
        };
        let acc = accs.entry(key.clone()).or_insert_with(|| {
            order.push(key);
            Acc::default()
        });
        acc.fs_type = &p.fs_type;
        if p.warmup {
            acc.warmups += 1;
            continue;
        }
        let metric = *acc.metric.get_or_insert(Metric::of(p, run));
        acc.rate = acc.rate.or(p.rate);
        acc.tps.push(run.tps);
        acc.lat.extend(run.latency_avg_ms);
        if metric == Metric::LoadTime {
            acc.load.extend(Metric::LoadTime.value(run));
        }
        for (i, st) in run.statements.iter().enumerate() {
            match acc.statements.get_mut(i) {
                Some((_, v)) => v.push(st.ms),
                None => acc.statements.push((st.statement.clone(), vec![st.ms])),
            }
        }
        acc.lag.extend(run.schedule_lag_avg_ms);
        if let Some(m) = run.schedule_lag_max_ms {
            acc.lag_max = Some(acc.lag_max.map_or(m, |x: f64| x.max(m)));
        }
        if let Some(n) = run.skipped_transactions {
            acc.skipped = Some(acc.skipped.unwrap_or(0).saturating_add(n));
        }
        if let Some(n) = run.late_transactions {
            acc.late = Some(acc.late.unwrap_or(0).saturating_add(n));
        }
        acc.tx_log.extend(&run.latency_percentiles);
        if !run.statement_latencies.is_empty() {
            acc.stmt_lat.push(&run.statement_latencies);
        }
        acc.per_second.extend(trimmed_progress_tps(
            &run.progress,
            opts.trim_start_s,
            opts.trim_end_s,
        ));
        if let Some(s) = &c.sizes {
            acc.on_disk.extend(s.du_on_disk_bytes.map(|b| b as f64));
            acc.df_used.extend(s.df_used_bytes.map(|b| b as f64));
            acc.apparent.extend(s.du_apparent_bytes.map(|b| b as f64));
            acc.ratio.extend(s.zfs_compressratio);
            acc.zfs_used.extend(s.zfs_used_bytes.map(|b| b as f64));
            acc.zfs_logical
                .extend(s.zfs_logicalused_bytes.map(|b| b as f64));
            acc.zfs_referenced
                .extend(s.zfs_referenced_bytes.map(|b| b as f64));
            acc.btrfs_used.extend(s.btrfs_used_bytes.map(|b| b as f64));
            acc.btrfs_data
                .extend(s.btrfs_data_used_bytes.map(|b| b as f64));
            acc.btrfs_reserve
                .extend(s.btrfs_global_reserve_bytes.map(|b| b as f64));
            acc.pg_db.extend(s.pg_database_bytes.map(|b| b as f64));
        }
    }
    let med = |v: &[f64]| summarize(v).map(|s| s.median);
    order
        .into_iter()
        .filter_map(|key| {
            let acc = accs.remove(&key)?;
            // A group of warm-ups only has nothing to count.
            let tps = summarize(&acc.tps)?;
            let latency_ms = summarize(&acc.lat);
            let load_s = summarize(&acc.load);
            // A group is compared on its metric only when every counted run
            // measured it (a rate-limited run without a latency: on tps).
            let n = acc.tps.len();
            let metric = match acc.metric.unwrap_or(Metric::Tps) {
                Metric::Latency if acc.lat.len() != n => Metric::Tps,
                Metric::LoadTime if acc.load.len() != n => Metric::Tps,
                m => m,
            };
            let cv = match metric {
                Metric::Tps => tps.cv,
                Metric::Latency => latency_ms.as_ref().and_then(|s| s.cv),
                Metric::LoadTime => load_s.as_ref().and_then(|s| s.cv),
            };
            let noisy = cv.is_some_and(|cv| cv > opts.cv_threshold);
            let statements = acc
                .statements
                .into_iter()
                .filter_map(|(statement, ms)| {
                    Some(StatementStats {
                        statement,
                        ms: summarize(&ms)?,
                    })
                })
                .collect();
            // The row's measure; a bundle without it (made before fsmatrix
            // read it) falls back to the next one, said as that one.
            let measure = crate::config::FsType::parse(acc.fs_type)
                .map_or(SizeMeasure::Du, |t| crate::config::fs::FsSpec::of(t).size);
            let (on_disk_bytes, on_disk_measure) = measure
                .with_fallbacks()
                .iter()
                .find_map(|m| {
                    let bytes = match m {
                        SizeMeasure::Du => med(&acc.on_disk),
                        SizeMeasure::ZfsReferenced => med(&acc.zfs_referenced),
                        SizeMeasure::BtrfsUsed => med(&acc.btrfs_used),
                        SizeMeasure::DfUsed => med(&acc.df_used),
                    };
                    bytes.map(|b| (Some(b), *m))
                })
                .unwrap_or((None, measure));
            Some(GroupStats {
                fs_type: acc.fs_type.to_owned(),
                on_disk_bytes,
                on_disk_measure,
                df_used_bytes: med(&acc.df_used),
                metric,
                rate: acc.rate,
                tps_values: acc.tps,
                latency_values: acc.lat,
                latency_ms,
                load_s_values: acc.load,
                load_s,
                statements,
                schedule_lag_ms: summarize(&acc.lag),
                schedule_lag_max_ms: acc.lag_max,
                skipped_transactions: acc.skipped,
                late_transactions: acc.late,
                latency_percentiles: super::latency::group_latency(&acc.tx_log),
                statement_latencies: super::latency::statement_means(&acc.stmt_lat),
                per_second_tps: summarize(&acc.per_second),
                noisy,
                warmups_excluded: acc.warmups,
                du_on_disk_bytes: med(&acc.on_disk),
                du_apparent_bytes: med(&acc.apparent),
                zfs_compressratio: med(&acc.ratio),
                zfs_used_bytes: med(&acc.zfs_used),
                zfs_logicalused_bytes: med(&acc.zfs_logical),
                zfs_referenced_bytes: med(&acc.zfs_referenced),
                btrfs_used_bytes: med(&acc.btrfs_used),
                btrfs_data_used_bytes: med(&acc.btrfs_data),
                btrfs_global_reserve_bytes: med(&acc.btrfs_reserve),
                pg_database_bytes: med(&acc.pg_db),
                tps,
                key,
            })
        })
        .collect()
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

    #[test]
    fn summary_matches_python_statistics() {
        // python3 -c 'import statistics as s, scipy.stats as st, math
        // x=[812.5,790.25,830.0,801.75,825.5]; m=s.mean(x); sd=s.stdev(x)
        // h=st.t.ppf(0.975,len(x)-1)*sd/math.sqrt(len(x))
        // print(repr(m),repr(s.median(x)),repr(sd),repr(sd/m),repr(m-h),repr(m+h))'
        let x = [812.5, 790.25, 830.0, 801.75, 825.5];
        let s = summarize(&x).unwrap();
        assert_eq!(s.n, 5);
        close(s.mean, 812.0, 1e-12);
        close(s.median, 812.5, 1e-12);
        assert_eq!((s.min, s.max), (790.25, 830.0));
        close(s.sd.unwrap(), PY_SD, 1e-12);
        close(s.cv.unwrap(), PY_CV, 1e-12);
        let (lo, hi) = s.ci95.unwrap();
        close(lo, PY_LO, 1e-10);
        close(hi, PY_HI, 1e-10);
    }
    const PY_SD: f64 = 16.46682270506366;
    const PY_CV: f64 = 0.020279338306728643;
    const PY_LO: f64 = 791.5537390823181;
    const PY_HI: f64 = 832.4462609176819;

    #[test]
    fn one_value_has_no_spread_and_empty_has_no_summary() {
        let s = summarize(&[5.0]).unwrap();
        assert_eq!((s.n, s.mean, s.median), (1, 5.0, 5.0));
        assert_eq!((s.sd, s.cv, s.ci95), (None, None, None));
        assert!(summarize(&[]).is_none());
        assert!(summarize(&[1.0, f64::NAN]).is_none());
        // Even count: the median is the mean of the middle two.
        assert_eq!(summarize(&[4.0, 1.0, 3.0, 2.0]).unwrap().median, 2.5);
    }

    #[test]
    fn t_distribution_matches_scipy() {
        // python3 -c 'import scipy.stats as st
        // for p,df in [(0.975,1),(0.975,2),(0.975,4),(0.975,9),(0.975,30),(0.95,3.7),(0.995,120)]: print(repr(st.t.ppf(p,df)))
        // for t,df in [(2.0,3),(-1.5,7.25),(0.3,1),(4.0,12.5)]: print(repr(st.t.cdf(t,df)))'
        for (p, df, want) in T_PPF {
            close(t_quantile(*p, *df), *want, 1e-9);
        }
        for (t, df, want) in T_CDF {
            close(t_cdf(*t, *df), *want, 1e-9);
        }
        assert_eq!(t_quantile(0.5, 3.0), 0.0);
        close(t_quantile(0.025, 4.0), -T_PPF[2].2, 1e-9);
        assert!(t_quantile(1.0, 3.0).is_nan());
        assert!(t_cdf(1.0, 0.0).is_nan());
    }
    const T_PPF: &[(f64, f64, f64)] = &[
        (0.975, 1.0, 12.706204736174694),
        (0.975, 2.0, 4.302652729749462),
        (0.975, 4.0, 2.7764451051977934),
        (0.975, 9.0, 2.262157162798205),
        (0.975, 30.0, 2.0422724563012378),
        (0.95, 3.7, 2.1824938039146007),
        (0.995, 120.0, 2.6174211451068654),
    ];
    const T_CDF: &[(f64, f64, f64)] = &[
        (2.0, 3.0, 0.9303370157205785),
        (-1.5, 7.25, 0.08792135806219986),
        (0.3, 1.0, 0.5927735790777423),
        (4.0, 12.5, 0.9991854685396766),
    ];

    #[test]
    fn progress_trimming_drops_start_and_tail() {
        let samples: Vec<ProgressSample> = (1..=10)
            .map(|t| ProgressSample {
                t_s: t as f64,
                tps: 100.0 + t as f64,
                latency_avg_ms: None,
                latency_stddev_ms: None,
                failed: None,
            })
            .collect();
        assert_eq!(trimmed_progress_tps(&samples, 0.0, 0.0).len(), 10);
        let kept = trimmed_progress_tps(&samples, 2.0, 1.0);
        assert_eq!(kept, vec![103.0, 104.0, 105.0, 106.0, 107.0, 108.0, 109.0]);
        assert!(trimmed_progress_tps(&samples, 8.0, 3.0).is_empty());
        assert!(trimmed_progress_tps(&[], 1.0, 1.0).is_empty());
    }

    fn cell(fs: &str, repeat: u32, warmup: bool, tps: f64) -> CellResult {
        use crate::model::*;
        CellResult {
            schema: RESULT_SCHEMA,
            cell_id: format!("{fs}-{repeat}"),
            params: CellParams {
                host: "h".into(),
                filesystem: fs.into(),
                fs_type: fs.into(),
                workload: "tpcb".into(),
                clients: 4,
                jobs: 4,
                repeat,
                warmup,
                rate: None,
                sql_script: false,
            },
            status: CellStatus::Done {
                run: RunMeasures {
                    tps,
                    tps_including_connect: None,
                    latency_avg_ms: Some(4000.0 / tps),
                    latency_stddev_ms: None,
                    transactions: 0,
                    failed_transactions: None,
                    schedule_lag_avg_ms: None,
                    schedule_lag_max_ms: None,
                    skipped_transactions: None,
                    late_transactions: None,
                    duration_s: 3.0,
                    progress: (1..=3)
                        .map(|t| ProgressSample {
                            t_s: t as f64,
                            tps: tps + t as f64,
                            latency_avg_ms: None,
                            latency_stddev_ms: None,
                            failed: None,
                        })
                        .collect(),
                    statements: Vec::new(),
                    latency_percentiles: None,
                    statement_latencies: Vec::new(),
                },
            },
            started: None,
            ended: None,
            sizes: None,
            init: None,
            fs_settings: None,
        }
    }

    #[test]
    fn groups_skip_warmups_and_flag_noise() {
        let cells = vec![
            cell("xfs", 0, true, 1.0),
            cell("xfs", 1, false, 100.0),
            cell("xfs", 2, false, 102.0),
            cell("ext4", 1, false, 100.0),
            cell("ext4", 2, false, 130.0),
            cell("ext4", 0, true, 1.0),
        ];
        let opts = StatsOptions {
            trim_start_s: 1.0,
            ..StatsOptions::default()
        };
        let g = group_stats(&cells, &opts);
        // First-appearance order, warm-ups counted apart.
        assert_eq!(g[0].key.filesystem, "xfs");
        assert_eq!(g[0].tps_values, vec![100.0, 102.0]);
        assert_eq!(g[0].warmups_excluded, 1);
        assert!(!g[0].noisy, "cv {:?}", g[0].tps.cv);
        assert_eq!(g[1].key.filesystem, "ext4");
        assert_eq!(g[1].warmups_excluded, 1);
        assert!(g[1].noisy, "cv {:?}", g[1].tps.cv);
        // Per-second: seconds 2 and 3 of both counted runs.
        let ps = g[0].per_second_tps.as_ref().unwrap();
        assert_eq!((ps.n, ps.min, ps.max), (4, 102.0, 105.0));
        let only_warmup = vec![cell("zfs", 0, true, 5.0)];
        assert!(group_stats(&only_warmup, &opts).is_empty());
    }

    #[test]
    fn zfs_accounting_is_the_median_of_counted_repeats() {
        let mib = 1u64 << 20;
        let sized = |repeat: u32, warmup: bool, used: u64| {
            let mut c = cell("zfs", repeat, warmup, 100.0);
            c.sizes = Some(crate::model::Sizes {
                zfs_used_bytes: Some(used * mib),
                zfs_referenced_bytes: Some((used - 1) * mib),
                zfs_logicalused_bytes: Some(2 * used * mib),
                zfs_compressratio: Some(2.0),
                flush_method: Some("txg-wait".into()),
                ..Default::default()
            });
            c
        };
        // The warm-up's 1 MiB (read before the data was on disk) is not counted.
        let cells = vec![
            sized(0, true, 1),
            sized(1, false, 40),
            sized(2, false, 44),
            sized(3, false, 42),
        ];
        let g = group_stats(&cells, &StatsOptions::default());
        assert_eq!(g[0].zfs_used_bytes, Some((42 * mib) as f64));
        assert_eq!(g[0].zfs_referenced_bytes, Some((41 * mib) as f64));
        assert_eq!(g[0].zfs_logicalused_bytes, Some((84 * mib) as f64));
        assert_eq!(g[0].zfs_compressratio, Some(2.0));
        // Other filesystems have none.
        let ext4 = group_stats(&[cell("ext4", 1, false, 1.0)], &StatsOptions::default());
        assert_eq!(ext4[0].zfs_used_bytes, None);
    }

    /// Issue 40: each filesystem's size is read as its row says.  btrfs
    /// with compression: du sees the uncompressed size (st_blocks), so its
    /// "on disk" is btrfs's own Used (`btrfs filesystem usage`), or for a
    /// bundle made before fsmatrix read it the dedicated filesystem's used
    /// bytes (df), as measured on the lab (du 318 MiB, df 35.7 MB); ZFS's
    /// is the dataset's referenced; ext4's stays du's; a bundle that has
    /// neither for btrfs falls back to du, and says so.
    #[test]
    fn on_disk_is_read_with_each_filesystem_s_own_measure() {
        let sized = |fs: &str, du: u64, df: Option<u64>| {
            let mut c = cell(fs, 1, false, 100.0);
            c.sizes = Some(crate::model::Sizes {
                du_on_disk_bytes: Some(du),
                df_used_bytes: df,
                ..Default::default()
            });
            c
        };
        let o = StatsOptions::default();
        let btrfs = group_stats(&[sized("btrfs", 333_447_168, Some(35_700_000))], &o);
        assert_eq!(btrfs[0].on_disk_bytes, Some(35_700_000.0));
        assert_eq!(btrfs[0].on_disk_measure, SizeMeasure::DfUsed);
        assert_eq!(btrfs[0].du_on_disk_bytes, Some(333_447_168.0));
        let ext4 = group_stats(&[sized("ext4", 90_000_000, Some(120_000_000))], &o);
        assert_eq!(ext4[0].on_disk_bytes, Some(90_000_000.0));
        assert_eq!(ext4[0].on_disk_measure, SizeMeasure::Du);
        let old = group_stats(&[sized("btrfs", 333_447_168, None)], &o);
        assert_eq!(old[0].on_disk_bytes, Some(333_447_168.0));
        assert_eq!(old[0].on_disk_measure, SizeMeasure::Du);
        let mut own = sized("btrfs", 333_447_168, Some(35_700_000));
        if let Some(s) = c_sizes(&mut own) {
            s.btrfs_used_bytes = Some(29_900_000);
            s.btrfs_global_reserve_bytes = Some(5_767_168);
        }
        let own = group_stats(&[own], &o);
        assert_eq!(own[0].on_disk_bytes, Some(29_900_000.0));
        assert_eq!(own[0].on_disk_measure, SizeMeasure::BtrfsUsed);
        assert_eq!(own[0].df_used_bytes, Some(35_700_000.0));
        let mut zfs = sized("zfs", 130_131_968, Some(160_000_000));
        if let Some(s) = c_sizes(&mut zfs) {
            s.zfs_referenced_bytes = Some(159_318_016);
        }
        let zfs = group_stats(&[zfs], &o);
        assert_eq!(zfs[0].on_disk_bytes, Some(159_318_016.0));
        assert_eq!(zfs[0].on_disk_measure, SizeMeasure::ZfsReferenced);
        let old_zfs = group_stats(&[sized("zfs", 130_131_968, None)], &o);
        assert_eq!(old_zfs[0].on_disk_measure, SizeMeasure::Du);
    }

    fn c_sizes(c: &mut CellResult) -> Option<&mut crate::model::Sizes> {
        c.sizes.as_mut()
    }
}
