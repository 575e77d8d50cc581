//! What a cell's `result.json` and each `data/results.jsonl` line hold.
//!
//! Plain serde types (f64/u64/String/Option) that the run engine fills from
//! the pgbench parser and the remote scripts.  Compatibility rule: a field
//! added later is an `Option` or carries `#[serde(default)]`, so that bundles
//! written by older versions (see tests/fixtures/bundle-v1) still read.
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::text::csv_text;

mod pg_version;
pub use pg_version::{postgres_release, postgres_version_num};

/// Version of this record layout; bump only on an incompatible change.
pub const RESULT_SCHEMA: u32 = 1;

fn schema_v1() -> u32 {
    RESULT_SCHEMA
}

/// One cell: host × filesystem variant × workload × clients × repeat.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellResult {
    #[serde(default = "schema_v1")]
    pub schema: u32,
    /// The plan's stable id of the cell (also its folder under data/cells/).
    pub cell_id: String,
    pub params: CellParams,
    pub status: CellStatus,
    /// RFC 3339 UTC times of the cell's first and last step, when it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<String>,
    /// Sizes measured after the load phase (may exist for a failed cell too).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sizes: Option<Sizes>,
    /// `pgbench -i` (or SQL script) load phase of this cell's workload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init: Option<InitTimings>,
    /// Effective filesystem settings as the host reported them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fs_settings: Option<FsSettings>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellParams {
    pub host: String,
    /// Filesystem variant name from the matrix, e.g. `zfs-lz4`.
    pub filesystem: String,
    /// Filesystem type: ext3, ext4, xfs, btrfs, zfs, ufs, hammer2.
    pub fs_type: String,
    pub workload: String,
    pub clients: u32,
    pub jobs: u32,
    /// 1-based repeat number within (host, filesystem, workload, clients).
    pub repeat: u32,
    /// A warm-up run: run and kept, never counted in statistics.
    #[serde(default)]
    pub warmup: bool,
    /// pgbench `-R`: the workload's fixed load in transactions per second
    /// (all clients together).  Its tps is then the rate, so rows are
    /// compared on latency ([`crate::results::stats::Metric`]).  Absent in
    /// bundles made before rates were recorded and for workloads without a rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<u32>,
    /// The workload is a SQL script run once per cell by psql (a data load):
    /// rows are compared on its total load time and sizes.  Absent (false)
    /// in bundles made before SQL scripts were marked; such cells are still known by their
    /// [`RunMeasures::statements`].
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sql_script: bool,
}

/// A cell's outcome; each state carries only the data that can exist in it.
// One per cell, built once and read by reference: the size of the Done
// variant (a run's measures) costs nothing worth a Box.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum CellStatus {
    Done {
        run: RunMeasures,
    },
    Failed {
        /// Step that failed: make-fs, mount, pg-init, pg-start, load, run, ...
        step: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_status: Option<i32>,
        /// Last lines of the failing step's stderr.
        #[serde(default)]
        stderr_tail: String,
    },
    NotRun {
        reason: String,
    },
    /// An adaptive repeat past `min` that was not run because the repeats
    /// before it had already narrowed the 95% CI to the target.
    NotNeeded {
        reason: String,
    },
}

impl CellStatus {
    /// Short name used in CSV and reports.
    pub fn name(&self) -> &'static str {
        match self {
            CellStatus::Done { .. } => "done",
            CellStatus::Failed { .. } => "failed",
            CellStatus::NotRun { .. } => "not_run",
            CellStatus::NotNeeded { .. } => "not_needed",
        }
    }
}

impl CellResult {
    /// The first number of the record that is not finite (NaN or ±inf), by
    /// its field path: such a value has no place in a result (JSON cannot
    /// hold it, and every statistic over it would be NaN).
    pub fn non_finite_field(&self) -> Option<String> {
        if let CellStatus::Done { run } = &self.status {
            if let Some(f) = run.non_finite_field() {
                return Some(format!("status.run.{f}"));
            }
        }
        let bad = |v: Option<f64>| v.is_some_and(|x| !x.is_finite());
        if let Some(s) = &self.sizes {
            for (name, v) in [
                ("zfs_compressratio", s.zfs_compressratio),
                ("flush_wait_s", s.flush_wait_s),
            ] {
                if bad(v) {
                    return Some(format!("sizes.{name}"));
                }
            }
        }
        if let Some(init) = &self.init {
            if bad(init.total_s) {
                return Some("init.total_s".into());
            }
            if let Some(i) = init.phases.iter().position(|p| !p.seconds.is_finite()) {
                return Some(format!("init.phases[{i}].seconds"));
            }
        }
        None
    }
}

impl RunMeasures {
    /// The first number that is not finite, by field path (see
    /// [`CellResult::non_finite_field`]).
    pub fn non_finite_field(&self) -> Option<String> {
        let bad = |v: Option<f64>| v.is_some_and(|x| !x.is_finite());
        for (name, v) in [
            ("tps", Some(self.tps)),
            ("tps_including_connect", self.tps_including_connect),
            ("latency_avg_ms", self.latency_avg_ms),
            ("latency_stddev_ms", self.latency_stddev_ms),
            ("schedule_lag_avg_ms", self.schedule_lag_avg_ms),
            ("schedule_lag_max_ms", self.schedule_lag_max_ms),
            ("duration_s", Some(self.duration_s)),
        ] {
            if bad(v) {
                return Some(name.into());
            }
        }
        if let Some(i) = self.statements.iter().position(|s| !s.ms.is_finite()) {
            return Some(format!("statements[{i}].ms"));
        }
        if let Some(i) = self
            .statement_latencies
            .iter()
            .position(|s| !s.latency_ms.is_finite())
        {
            return Some(format!("statement_latencies[{i}].latency_ms"));
        }
        if let Some(l) = &self.latency_percentiles {
            let all = [l.min_ms, l.mean_ms, l.p50_ms, l.p95_ms, l.p99_ms, l.max_ms];
            if all.iter().chain(&l.curve_ms).any(|v| !v.is_finite()) {
                return Some("latency_percentiles".into());
            }
        }
        for (i, p) in self.progress.iter().enumerate() {
            for (name, v) in [
                ("t_s", Some(p.t_s)),
                ("tps", Some(p.tps)),
                ("latency_avg_ms", p.latency_avg_ms),
                ("latency_stddev_ms", p.latency_stddev_ms),
            ] {
                if bad(v) {
                    return Some(format!("progress[{i}].{name}"));
                }
            }
        }
        None
    }
}

/// The generator-neutral core of a run: what every load generator
/// measures, by its neutral name.  On disk (and in [`RunMeasures`]'s fields)
/// these keep the names the first layout gave them: `tps`,
/// `latency_avg_ms`, `duration_s`, `transactions`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunCore {
    /// Operations per second (pgbench: tps; a SQL script: statements per
    /// second).
    pub throughput: f64,
    /// Mean latency of an operation in ms, when the generator gives one.
    pub latency_ms: Option<f64>,
    /// The run's length in seconds (a SQL script: the sum of its
    /// statements' times).
    pub duration_s: f64,
    /// Operations done: transactions, or statements.
    pub operations: u64,
}

/// pgbench's own measures of a run, beside the core.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PgbenchDetail {
    pub tps_including_connect: Option<f64>,
    pub latency_stddev_ms: Option<f64>,
    pub failed_transactions: Option<u64>,
    pub schedule_lag_avg_ms: Option<f64>,
    pub schedule_lag_max_ms: Option<f64>,
    pub skipped_transactions: Option<u64>,
    pub late_transactions: Option<u64>,
    pub progress: Vec<ProgressSample>,
    pub latency_percentiles: Option<LatencyPercentiles>,
    pub statement_latencies: Vec<StatementLatency>,
}

/// A SQL script's own measures of a run: each statement's time.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SqlDetail {
    pub statements: Vec<StatementTime>,
}

/// A generator's own measures of a run.
#[derive(Debug, Clone, PartialEq)]
pub enum RunDetail {
    Pgbench(Box<PgbenchDetail>),
    Sql(SqlDetail),
}

impl RunMeasures {
    /// A run record from its core and its generator's detail.
    pub fn new(core: RunCore, detail: RunDetail) -> RunMeasures {
        let (p, sql) = match detail {
            RunDetail::Pgbench(p) => (*p, SqlDetail::default()),
            RunDetail::Sql(sql) => (PgbenchDetail::default(), sql),
        };
        RunMeasures {
            tps: core.throughput,
            tps_including_connect: p.tps_including_connect,
            latency_avg_ms: core.latency_ms,
            latency_stddev_ms: p.latency_stddev_ms,
            transactions: core.operations,
            failed_transactions: p.failed_transactions,
            schedule_lag_avg_ms: p.schedule_lag_avg_ms,
            schedule_lag_max_ms: p.schedule_lag_max_ms,
            skipped_transactions: p.skipped_transactions,
            late_transactions: p.late_transactions,
            duration_s: core.duration_s,
            progress: p.progress,
            statements: sql.statements,
            latency_percentiles: p.latency_percentiles,
            statement_latencies: p.statement_latencies,
        }
    }

    /// The generator-neutral core.
    pub fn core(&self) -> RunCore {
        RunCore {
            throughput: self.tps,
            latency_ms: self.latency_avg_ms,
            duration_s: self.duration_s,
            operations: self.transactions,
        }
    }

    /// The generator's own detail: a SQL script's when the run timed
    /// statements (how bundles made before the workload kind was recorded
    /// tell them apart too), pgbench's otherwise.
    pub fn detail(&self) -> RunDetail {
        if !self.statements.is_empty() {
            return RunDetail::Sql(SqlDetail {
                statements: self.statements.clone(),
            });
        }
        RunDetail::Pgbench(Box::new(PgbenchDetail {
            tps_including_connect: self.tps_including_connect,
            latency_stddev_ms: self.latency_stddev_ms,
            failed_transactions: self.failed_transactions,
            schedule_lag_avg_ms: self.schedule_lag_avg_ms,
            schedule_lag_max_ms: self.schedule_lag_max_ms,
            skipped_transactions: self.skipped_transactions,
            late_transactions: self.late_transactions,
            progress: self.progress.clone(),
            latency_percentiles: self.latency_percentiles.clone(),
            statement_latencies: self.statement_latencies.clone(),
        }))
    }
}

/// What one run measured: the generator-neutral core ([`RunCore`]:
/// `tps`, `latency_avg_ms`, `duration_s`, `transactions`) and each
/// generator's own detail beside it ([`PgbenchDetail`]: the other pgbench
/// fields; [`SqlDetail`]: `statements`), flat, as `result.json` has always
/// held them (so bundles of every version read, and write byte for byte as
/// they were).  Build one with [`RunMeasures::new`]; read the parts with
/// [`RunMeasures::core`] and [`RunMeasures::detail`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunMeasures {
    /// tps without initial connection time (PG ≥ 14) / excluding connections (≤ 13).
    pub tps: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tps_including_connect: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_avg_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_stddev_ms: Option<f64>,
    pub transactions: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_transactions: Option<u64>,
    /// Under `rate` (pgbench -R): the mean and largest delay between a
    /// transaction's scheduled and actual start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule_lag_avg_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule_lag_max_ms: Option<f64>,
    /// Under `rate` with `latency_limit`: transactions skipped (too late to start).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped_transactions: Option<u64>,
    /// Under `latency_limit`: transactions slower than the limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub late_transactions: Option<u64>,
    pub duration_s: f64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub progress: Vec<ProgressSample>,
    /// A SQL-script run: each statement and its time as psql's `\timing`
    /// printed it, in script order (the one parser: `generator::psql_parse`).  Empty
    /// for pgbench runs and in bundles made before statement times were kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub statements: Vec<StatementTime>,
    /// `latency_log = true` (pgbench `-l`): exact percentiles over the
    /// logged transactions ([`crate::generator::pgbench_log`]).  Absent without
    /// it and in bundles made before latency logs were read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_percentiles: Option<LatencyPercentiles>,
    /// `per_statement = true` (pgbench `-r`): each statement's mean latency,
    /// in script order.  Empty without it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub statement_latencies: Vec<StatementLatency>,
}

/// Latency percentiles of one run, from pgbench's per-transaction log
/// (`-l --sampling-rate`): nearest-rank percentiles over every logged
/// transaction that completed (skipped and failed ones are counted apart).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyPercentiles {
    /// The `--sampling-rate` the log was written at (1: every transaction).
    pub sampling_rate: f64,
    /// Completed transactions in the log (the percentiles are over these).
    pub transactions: u64,
    /// `skipped` lines (too late to start under `rate` + `latency_limit`).
    #[serde(default)]
    pub skipped: u64,
    /// `failed`/`serialization`/`deadlock` lines (PostgreSQL 15+).
    #[serde(default)]
    pub failed: u64,
    pub min_ms: f64,
    pub mean_ms: f64,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    /// The latency at each percentile of [`crate::generator::pgbench_log::CURVE`]
    /// (0 = min … 100 = max): the curve the HTML report draws.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub curve_ms: Vec<f64>,
    /// The log files, as the cell keeps them (gzip).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
}

/// One `-r` row: a statement of a script and its mean latency.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatementLatency {
    /// 0 for the first (or only) script.
    #[serde(default)]
    pub script: u32,
    /// The command as pgbench printed it (first line of it).
    pub command: String,
    pub latency_ms: f64,
    /// PostgreSQL 15+: failures of the statement, and with `--max-tries`
    /// retries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failures: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retries: Option<u64>,
}

/// One statement of a SQL script and the time the server took for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatementTime {
    /// The statement as psql echoed it.
    pub statement: String,
    pub ms: f64,
}

/// One `progress: T s, X tps, lat L ms stddev S` line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProgressSample {
    pub t_s: f64,
    pub tps: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_avg_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_stddev_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<u64>,
}

/// The three views of size one study compared, plus ZFS's own.  Taken after
/// the data is on disk (`sync`, then the filesystem's own flush:
/// [`Sizes::flush_method`]); on ZFS the dataset's accounting (`used`,
/// `logicalused`, `referenced`, `compressratio`) is the on-disk measure and
/// `du` a second one.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Sizes {
    /// `du` of the data directory: blocks on disk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub du_on_disk_bytes: Option<u64>,
    /// `du --apparent-size` (or the OS's equivalent) of the data directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub du_apparent_bytes: Option<u64>,
    /// `df` used bytes of the whole filesystem.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub df_used_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zfs_compressratio: Option<f64>,
    /// `zfs get -p logicalused`: bytes before compression (absent on pool
    /// version 23, zfs-fuse).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zfs_logicalused_bytes: Option<u64>,
    /// `zfs get -p used`: the dataset's bytes on disk, descendants and
    /// snapshots included (what compressratio is over).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zfs_used_bytes: Option<u64>,
    /// `zfs get -p referenced`: the bytes the dataset can reach.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zfs_referenced_bytes: Option<u64>,
    /// btrfs's own accounting (`btrfs filesystem usage -b`, Overall
    /// "Used:"): the device bytes its block groups use, compressed extents
    /// at their compressed size, metadata in each of its copies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub btrfs_used_bytes: Option<u64>,
    /// btrfs's data extents alone (the "Data,PROFILE:" lines' Used).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub btrfs_data_used_bytes: Option<u64>,
    /// btrfs's global metadata reserve, which statfs (df) counts as used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub btrfs_global_reserve_bytes: Option<u64>,
    /// `pg_database_size` of the benchmark database.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pg_database_bytes: Option<u64>,
    /// How the data was put on disk before the sizes were read: `sync`,
    /// `btrfs-sync` (`btrfs filesystem sync`), `zpool-sync`,
    /// `txg-sync-task` (a ZFS without `zpool sync`: a property set, which
    /// returns once its transaction group is on disk) or `txg-wait` (that
    /// refused: waited for a transaction group commit).
    /// Absent in bundles made before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flush_method: Option<String>,
    /// Seconds `txg-sync-task` took or `txg-wait` waited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flush_wait_s: Option<f64>,
    /// `txg-wait` only: false when the wait hit its bound while `used` still
    /// moved (the sizes may miss the last data).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flush_settled: Option<bool>,
}

impl Sizes {
    /// The first value no size can have, said as "sizes.<field> …": a
    /// compressratio below 1 (ZFS never reports less than 1.00x), a negative
    /// wait, a flush method that is not one lowercase word (`txg-wait`).
    /// Numbers that are not finite are [`CellResult::non_finite_field`]'s.
    pub fn invalid(&self) -> Option<String> {
        if let Some(r) = self.zfs_compressratio.filter(|r| *r < 1.0) {
            return Some(format!(
                "sizes.zfs_compressratio is {r}: ZFS never reports less than 1.00"
            ));
        }
        if let Some(w) = self.flush_wait_s.filter(|w| *w < 0.0) {
            return Some(format!("sizes.flush_wait_s is {w}: a wait is not negative"));
        }
        if let Some(m) = self.flush_method.as_deref().filter(|m| {
            m.is_empty()
                || !m
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        }) {
            return Some(format!(
                "sizes.flush_method is {m:?}: not a method word such as txg-wait"
            ));
        }
        None
    }
}

/// Load phase timings: pgbench -i's `done in T s (drop tables .. s, ...)`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct InitTimings {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_s: Option<f64>,
    /// Phases in the order pgbench printed them (names as printed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<Phase>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Phase {
    pub name: String,
    pub seconds: f64,
}

/// Effective settings read back from the host, not the ones asked for.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FsSettings {
    /// Options field of the filesystem's /proc/mounts line (or `mount -p`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mount_options: Option<String>,
    /// `zfs get` values of the properties the matrix touched, and compression.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub zfs_properties: BTreeMap<String, String>,
    /// `hammer2 stat` of a HAMMER2 mount point: `compression` (`lz4:default`,
    /// `zlib:9`) and `check` (`xxhash64`), as new files under it get them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub hammer2_properties: BTreeMap<String, String>,
    /// Options the kernel accepted but ignored (recorded, not an error).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignored_options: Vec<String>,
}

/// The columns of `data/results.csv`: one row per cell, flat.
pub const CSV_HEADER: &[&str] = &[
    "cell_id",
    "host",
    "filesystem",
    "fs_type",
    "workload",
    "clients",
    "jobs",
    "repeat",
    "warmup",
    "status",
    "tps",
    "tps_including_connect",
    "latency_avg_ms",
    "latency_stddev_ms",
    "transactions",
    "failed_transactions",
    "duration_s",
    "du_on_disk_bytes",
    "du_apparent_bytes",
    "df_used_bytes",
    "zfs_compressratio",
    "zfs_logicalused_bytes",
    "zfs_used_bytes",
    "zfs_referenced_bytes",
    "btrfs_used_bytes",
    "btrfs_data_used_bytes",
    "btrfs_global_reserve_bytes",
    "flush_method",
    "flush_wait_s",
    "pg_database_bytes",
    "init_total_s",
    "mount_options",
    "failed_step",
    "exit_status",
    "reason",
];

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|x| x.to_string()).unwrap_or_default()
}

impl CellResult {
    /// This cell as one CSV row, in [`CSV_HEADER`] order.
    pub fn csv_row(&self) -> Vec<String> {
        let p = &self.params;
        let run = match &self.status {
            CellStatus::Done { run } => Some(run),
            _ => None,
        };
        let sizes = self.sizes.clone().unwrap_or_default();
        let (step, exit, reason) = match &self.status {
            CellStatus::Done { .. } => (String::new(), String::new(), String::new()),
            CellStatus::Failed {
                step, exit_status, ..
            } => (step.clone(), opt(*exit_status), String::new()),
            CellStatus::NotRun { reason } | CellStatus::NotNeeded { reason } => {
                (String::new(), String::new(), reason.clone())
            }
        };
        vec![
            csv_text(&self.cell_id),
            csv_text(&p.host),
            csv_text(&p.filesystem),
            csv_text(&p.fs_type),
            csv_text(&p.workload),
            p.clients.to_string(),
            p.jobs.to_string(),
            p.repeat.to_string(),
            p.warmup.to_string(),
            self.status.name().to_string(),
            opt(run.map(|r| r.tps)),
            opt(run.and_then(|r| r.tps_including_connect)),
            opt(run.and_then(|r| r.latency_avg_ms)),
            opt(run.and_then(|r| r.latency_stddev_ms)),
            opt(run.map(|r| r.transactions)),
            opt(run.and_then(|r| r.failed_transactions)),
            opt(run.map(|r| r.duration_s)),
            opt(sizes.du_on_disk_bytes),
            opt(sizes.du_apparent_bytes),
            opt(sizes.df_used_bytes),
            opt(sizes.zfs_compressratio),
            opt(sizes.zfs_logicalused_bytes),
            opt(sizes.zfs_used_bytes),
            opt(sizes.zfs_referenced_bytes),
            opt(sizes.btrfs_used_bytes),
            opt(sizes.btrfs_data_used_bytes),
            opt(sizes.btrfs_global_reserve_bytes),
            csv_text(&opt(sizes.flush_method.clone())),
            opt(sizes.flush_wait_s),
            opt(sizes.pg_database_bytes),
            opt(self.init.as_ref().and_then(|i| i.total_s)),
            csv_text(&opt(self
                .fs_settings
                .as_ref()
                .and_then(|f| f.mount_options.clone()))),
            csv_text(&step),
            exit,
            csv_text(&reason),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_is_tagged_and_round_trips() {
        let c = CellResult {
            schema: RESULT_SCHEMA,
            cell_id: "c1".into(),
            params: CellParams {
                host: "h".into(),
                filesystem: "ext4".into(),
                fs_type: "ext4".into(),
                workload: "tpcb".into(),
                clients: 4,
                jobs: 4,
                repeat: 1,
                warmup: false,
                rate: None,
                sql_script: false,
            },
            status: CellStatus::Failed {
                step: "mount".into(),
                exit_status: Some(32),
                stderr_tail: "bad option".into(),
            },
            started: None,
            ended: None,
            sizes: None,
            init: None,
            fs_settings: None,
        };
        let s = serde_json::to_string(&c).unwrap();
        assert!(s.contains(r#""state":"failed""#), "{s}");
        let back: CellResult = serde_json::from_str(&s).unwrap();
        assert_eq!(back, c);
        assert_eq!(c.csv_row().len(), CSV_HEADER.len());
    }

    #[test]
    fn sizes_before_issue_14_read_and_bad_sizes_are_named() {
        // A record's sizes as bundles wrote them before the flush was recorded.
        let old: Sizes = serde_json::from_str(
            r#"{"du_on_disk_bytes":2097152,"du_apparent_bytes":39740006,"zfs_compressratio":1.0}"#,
        )
        .unwrap();
        assert_eq!(old.flush_method, None);
        assert_eq!(old.zfs_used_bytes, None);
        assert_eq!(old.invalid(), None);
        let new = Sizes {
            zfs_used_bytes: Some(22 << 20),
            zfs_referenced_bytes: Some(21 << 20),
            zfs_logicalused_bytes: Some(26 << 20),
            zfs_compressratio: Some(1.19),
            flush_method: Some("txg-wait".into()),
            flush_wait_s: Some(30.0),
            flush_settled: Some(true),
            ..Sizes::default()
        };
        let back: Sizes = serde_json::from_str(&serde_json::to_string(&new).unwrap()).unwrap();
        assert_eq!(back, new);
        assert_eq!(new.invalid(), None);
        for (bad, field) in [
            (
                Sizes {
                    zfs_compressratio: Some(0.5),
                    ..new.clone()
                },
                "sizes.zfs_compressratio",
            ),
            (
                Sizes {
                    flush_wait_s: Some(-1.0),
                    ..new.clone()
                },
                "sizes.flush_wait_s",
            ),
            (
                Sizes {
                    flush_method: Some("txg wait; rm -rf /".into()),
                    ..new.clone()
                },
                "sizes.flush_method",
            ),
            (
                Sizes {
                    flush_method: Some(String::new()),
                    ..new.clone()
                },
                "sizes.flush_method",
            ),
        ] {
            let why = bad.invalid().unwrap_or_default();
            assert!(why.starts_with(field), "{field}: {why}");
        }
    }

    /// Every cell of the first bundle layout reads, and writes back byte
    /// for byte (its signature is over these bytes); each run splits into
    /// its core and its generator's detail and is rebuilt from them.
    #[test]
    fn old_bundle_records_round_trip_byte_for_byte() {
        let cells = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/bundle-v1/data/cells");
        let mut seen = 0;
        for e in std::fs::read_dir(&cells).unwrap() {
            let path = e.unwrap().path().join("result.json");
            let Ok(text) = std::fs::read(&path) else {
                continue;
            };
            let c: CellResult = serde_json::from_slice(&text).unwrap();
            assert_eq!(
                String::from_utf8(crate::text::json_pretty_bytes(&c)).unwrap(),
                String::from_utf8(text).unwrap(),
                "{}",
                path.display()
            );
            if let CellStatus::Done { run } = &c.status {
                assert_eq!(&RunMeasures::new(run.core(), run.detail()), run);
            }
            seen += 1;
        }
        assert!(seen >= 5, "{seen} result.json files in {}", cells.display());
        let results = std::fs::read_to_string(cells.join("../results.jsonl")).unwrap();
        for line in results.lines() {
            let c: CellResult = serde_json::from_str(line).unwrap();
            assert_eq!(serde_json::to_string(&c).unwrap(), line);
        }
    }

    #[test]
    fn a_sql_run_keeps_its_statements_as_its_detail() {
        let run = RunMeasures::new(
            RunCore {
                throughput: 2.0,
                latency_ms: Some(500.0),
                duration_s: 1.0,
                operations: 2,
            },
            RunDetail::Sql(SqlDetail {
                statements: vec![StatementTime {
                    statement: "select 1;".into(),
                    ms: 1000.0,
                }],
            }),
        );
        assert!(matches!(run.detail(), RunDetail::Sql(_)));
        assert_eq!(run.core().operations, 2);
        let s = serde_json::to_string(&run).unwrap();
        assert!(s.starts_with(r#"{"tps":2.0,"latency_avg_ms":500.0,"transactions":2,"duration_s":1.0,"statements""#), "{s}");
    }

    #[test]
    fn minimal_old_record_reads() {
        // Only the fields of the first layout; every later field defaults.
        let s = r#"{"cell_id":"x","params":{"host":"h","filesystem":"xfs","fs_type":"xfs",
            "workload":"w","clients":1,"jobs":1,"repeat":2},
            "status":{"state":"not_run","reason":"host unreachable"}}"#;
        let c: CellResult = serde_json::from_str(s).unwrap();
        assert_eq!(c.schema, 1);
        assert!(!c.params.warmup);
        assert_eq!(c.status.name(), "not_run");
    }
}
