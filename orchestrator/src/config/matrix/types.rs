//! The validated matrix: what the parser gives and the plan reads.
use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::config::error::ConfigError;
use crate::config::os::Os;
use crate::config::pgclass::PgClass;
use crate::config::values::{
    Label, MkfsOption, MountOption, PgSettingName, PgSettingValue, ZfsPropertyName,
    ZfsPropertyValue,
};

pub use crate::config::fs::FsType;

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct PgSetting {
    pub name: PgSettingName,
    pub value: PgSettingValue,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ZfsProperty {
    pub name: ZfsPropertyName,
    pub value: ZfsPropertyValue,
}

/// One concrete filesystem variant (after `vary` expansion).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FsVariant {
    pub name: Label,
    #[serde(rename = "type")]
    pub fs_type: FsType,
    pub mkfs_options: Vec<MkfsOption>,
    pub mount_options: Vec<MountOption>,
    /// ZFS dataset properties (`zfs create -o`), sorted by name.
    pub properties: Vec<ZfsProperty>,
    /// ZFS pool properties (`zpool create -o`), sorted by name.
    pub pool_properties: Vec<ZfsProperty>,
    /// Settings for this filesystem only; override [postgres] in the cell.
    pub postgres: Vec<PgSetting>,
    /// The vary values that made this variant, e.g. compression = lz4.
    pub varied: Vec<(String, String)>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Builtin {
    TpcbLike,
    SimpleUpdate,
    SelectOnly,
}

impl Builtin {
    pub fn as_str(self) -> &'static str {
        match self {
            Builtin::TpcbLike => "tpcb-like",
            Builtin::SimpleUpdate => "simple-update",
            Builtin::SelectOnly => "select-only",
        }
    }
}

/// What a workload runs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum WorkloadKind {
    /// `pgbench -b <name>` on tables made by `pgbench -i -s <scale>`.
    Builtin { builtin: Builtin },
    /// `pgbench -f <file>` on tables made by `pgbench -i -s <scale>`.
    /// The text is kept once per plan (`Plan::scripts`), not in every cell.
    PgbenchScript {
        path: PathBuf,
        sha256: String,
        #[serde(default, skip_serializing)]
        content: String,
    },
    /// `psql -f <file>`, timed statement by statement (\timing); runs once per cell.
    SqlScript {
        path: PathBuf,
        sha256: String,
        #[serde(default, skip_serializing)]
        content: String,
    },
}

impl WorkloadKind {
    /// The script file a workload names: (path as written, sha256, text).
    /// `None` for a builtin.  The one place a kind says whether it has a file.
    pub fn script(&self) -> Option<(&std::path::Path, &str, &str)> {
        match self {
            WorkloadKind::Builtin { .. } => None,
            WorkloadKind::PgbenchScript {
                path,
                sha256,
                content,
            }
            | WorkloadKind::SqlScript {
                path,
                sha256,
                content,
            } => Some((path, sha256, content)),
        }
    }
    /// The script's checksum and its text to fill in (a plan read back from
    /// JSON keeps each script's text once, in `Plan::scripts`).
    pub fn script_text_mut(&mut self) -> Option<(&str, &mut String)> {
        match self {
            WorkloadKind::Builtin { .. } => None,
            WorkloadKind::PgbenchScript {
                sha256, content, ..
            }
            | WorkloadKind::SqlScript {
                sha256, content, ..
            } => Some((sha256, content)),
        }
    }
    /// What identifies the workload's definition in a cell's id: the
    /// builtin's name, or the generator and its script's checksum.
    pub fn identity(&self) -> String {
        match self {
            WorkloadKind::Builtin { builtin } => builtin.as_str().to_string(),
            WorkloadKind::PgbenchScript { sha256, .. } => format!("pgbench:{sha256}"),
            WorkloadKind::SqlScript { sha256, .. } => format!("sql:{sha256}"),
        }
    }
    /// Whether the workload runs once per cell with one client (a SQL
    /// script run by psql), so `include` rules add no client counts.
    pub fn runs_once(&self) -> bool {
        matches!(self, WorkloadKind::SqlScript { .. })
    }
}

/// pgbench scale: a factor, or a share of the device's size that the run
/// engine resolves once it knows the size (one study sized the database to
/// 80% of the disk).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scale {
    Factor(u32),
    DevicePercent(u8),
}

impl std::fmt::Display for Scale {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Scale::Factor(n) => write!(f, "{n}"),
            Scale::DevicePercent(p) => write!(f, "{p}% of device"),
        }
    }
}

/// How long one measured run lasts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Length {
    /// `pgbench -T`.
    Seconds(u64),
    /// `pgbench -t` (per client).
    Transactions(u64),
    /// A SQL script runs to its end; the number is the ETA estimate in seconds.
    ToCompletion { estimate_secs: u64 },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Jobs {
    Fixed(u32),
    /// One pgbench thread per client (`-j` = `-c`), as the studies did.
    PerClient,
}

impl Jobs {
    /// pgbench refuses more threads than clients.
    pub fn for_clients(self, clients: u32) -> u32 {
        match self {
            Jobs::Fixed(n) => n.min(clients),
            Jobs::PerClient => clients,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Workload {
    pub name: Label,
    #[serde(flatten)]
    pub kind: WorkloadKind,
    /// `None` for SQL scripts (they make their own data).
    pub scale: Option<Scale>,
    /// `[1]` for SQL scripts.
    pub clients: Vec<u32>,
    pub jobs: Jobs,
    pub length: Length,
    pub repeats: Repeats,
    /// Warm-up runs before the counted repeats of each client count: run
    /// and kept in the bundle, never counted (`warmup = true` means 1).
    pub warmup: u32,
    /// pgbench `-P 1` (per-second progress).
    pub progress: bool,
    pub drop_caches: bool,
    /// `run_timeout`: seconds one run (pgbench, or a SQL script's psql) may
    /// take before its remote process group is killed; `None` for the
    /// default, `run::verb::run_timeout`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_timeout: Option<u64>,
    /// pgbench `-R`: a fixed load of this many transactions per second in
    /// all (latency under a given load, as operators measure it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<u32>,
    /// pgbench `-L` (milliseconds): transactions slower than this are
    /// counted apart; with `rate`, late ones are skipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_limit_ms: Option<u32>,
    /// `latency_log = true`: pgbench `-l` (a log line per transaction) at
    /// this `--sampling-rate` (`sampling_rate`, default 1: every one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_log: Option<SamplingRate>,
    /// `per_statement = true`: pgbench `-r` (mean latency per statement).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub per_statement: bool,
}

/// pgbench `--sampling-rate`: the share of transactions logged, more than 0
/// and at most 1, kept in millionths (`0.1` is 100 000) so that it is exact,
/// hashable and prints the same everywhere.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "f64", into = "f64")]
pub struct SamplingRate(u32);

impl SamplingRate {
    pub const ALL: SamplingRate = SamplingRate(1_000_000);

    /// `0 < r <= 1` with at most 6 decimals that matter (r >= 0.000001).
    pub fn from_f64(r: f64) -> Option<SamplingRate> {
        if !(r.is_finite() && r > 0.0 && r <= 1.0) {
            return None;
        }
        let ppm = (r * 1e6).round();
        (ppm >= 1.0).then_some(SamplingRate(ppm as u32))
    }

    pub fn fraction(self) -> f64 {
        f64::from(self.0) / 1e6
    }

    pub fn is_all(self) -> bool {
        self.0 == 1_000_000
    }
}

impl TryFrom<f64> for SamplingRate {
    type Error = String;
    fn try_from(r: f64) -> Result<Self, String> {
        SamplingRate::from_f64(r).ok_or_else(|| format!("sampling rate {r} is not in (0, 1]"))
    }
}

impl From<SamplingRate> for f64 {
    fn from(r: SamplingRate) -> f64 {
        r.fraction()
    }
}

/// `1`, `0.1`, `0.000001`: what pgbench's `--sampling-rate` gets (and what
/// the remote script checks: `1` or `0.` and 1 to 6 digits).
impl fmt::Display for SamplingRate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_all() {
            return write!(f, "1");
        }
        let digits = format!("{:06}", self.0);
        write!(f, "0.{}", digits.trim_end_matches('0'))
    }
}

/// How many counted repeats a workload runs per client count: a fixed
/// number (`repeats = 3`), adaptive (`repeats = { min = 3, max = 10,
/// target_ci = "2%" }`: after `min`, more repeats run until the 95%
/// confidence interval of the mean tps is within ±target of the mean, or
/// `max` is reached), or sequential (`repeats = { min = 2, max = 10,
/// until = "decided" }`: after `min`, a variant's repeats run until its
/// verdict against the baseline is decided at the family's error rate,
/// `results::analysis::sequential`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Repeats {
    pub min: u32,
    pub max: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_ci: Option<CiTarget>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<Until>,
}

/// What ends a sequential design's repeats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Until {
    /// The variant's verdict against the baseline is decided (faster,
    /// slower or equivalent); the baseline runs while any other is not.
    Decided,
}

impl Until {
    pub const ALL: [Until; 1] = [Until::Decided];

    pub fn as_str(self) -> &'static str {
        match self {
            Until::Decided => "decided",
        }
    }

    pub fn parse(s: &str) -> Option<Until> {
        Until::ALL.into_iter().find(|u| u.as_str() == s)
    }
}

impl Repeats {
    pub const fn fixed(n: u32) -> Repeats {
        Repeats {
            min: n,
            max: n,
            target_ci: None,
            until: None,
        }
    }

    pub fn is_adaptive(&self) -> bool {
        (self.target_ci.is_some() || self.until.is_some()) && self.max > self.min
    }

    /// The looks of a sequential design (`until = "decided"`).
    pub fn looks(&self) -> Option<super::verdicts::Looks> {
        self.until.map(|_| super::verdicts::Looks {
            min: self.min,
            max: self.max,
        })
    }
}

impl fmt::Display for Repeats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.target_ci, self.until) {
            (_, Some(_)) => write!(
                f,
                "{}..{} until decided against the baseline",
                self.min, self.max
            ),
            (Some(t), None) if self.max > self.min => {
                write!(f, "{}..{} until 95% CI within ±{t}", self.min, self.max)
            }
            _ => write!(f, "{}", self.max),
        }
    }
}

/// Half-width of a 95% confidence interval as a share of the mean, in
/// hundredths of a percent (`"2%"` is 200, `"0.5%"` is 50).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct CiTarget(u32);

impl CiTarget {
    /// `"2%"`, `"0.5%"`, `"1.25%"`: more than 0, at most 50.
    pub fn parse(s: &str) -> Option<CiTarget> {
        let n = s.trim().strip_suffix('%')?.trim();
        let (int, frac) = n.split_once('.').unwrap_or((n, ""));
        if int.is_empty()
            || frac.len() > 2
            || !(int.bytes().chain(frac.bytes())).all(|b| b.is_ascii_digit())
        {
            return None;
        }
        let hundredths = int.parse::<u32>().ok()?.checked_mul(100)?
            + format!("{frac:0<2}").parse::<u32>().ok()?;
        (1..=5000)
            .contains(&hundredths)
            .then_some(CiTarget(hundredths))
    }

    /// As a fraction of the mean (`"2%"` is 0.02).
    pub fn fraction(self) -> f64 {
        self.0 as f64 / 10_000.0
    }

    pub fn percent(self) -> f64 {
        self.0 as f64 / 100.0
    }
}

impl fmt::Display for CiTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 % 100 {
            0 => write!(f, "{}%", self.0 / 100),
            r if r % 10 == 0 => write!(f, "{}.{}%", self.0 / 100, r / 10),
            r => write!(f, "{}.{r:02}%", self.0 / 100),
        }
    }
}

impl TryFrom<String> for CiTarget {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        CiTarget::parse(&s).ok_or_else(|| format!("invalid CI target {s:?}"))
    }
}

impl From<CiTarget> for String {
    fn from(t: CiTarget) -> String {
        t.to_string()
    }
}

/// A GitHub-Actions-style rule: every key given must match (a list means any of).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rule {
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub host: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub host_os: Vec<Os>,
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub host_tag: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub filesystem: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub fs_type: Vec<FsType>,
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub workload: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub clients: Vec<u32>,
}

/// The order of a host's measured runs (`order = "..."`).
///
/// - `sequential` (the default): one variant after the other on the host's
///   first device, as the plan lists the cells.
/// - `interleaved`: on a host that lists several devices, one variant set
///   up per device (each with its own PostgreSQL cluster and port), and
///   their runs alternated round-robin by repeat index (A B A B …), so that
///   drift (background load, caches, a warming disk) hits every variant
///   alike.  Variants beyond the number of devices run in batches.
/// - `random`: as interleaved, but the runs of a batch in a seeded random
///   order (each variant's own runs keep their order: warm-ups first,
///   repeats ascending).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Order {
    #[default]
    Sequential,
    Interleaved,
    Random,
}

impl Order {
    pub const ALL: [Order; 3] = [Order::Sequential, Order::Interleaved, Order::Random];
    pub fn as_str(self) -> &'static str {
        match self {
            Order::Sequential => "sequential",
            Order::Interleaved => "interleaved",
            Order::Random => "random",
        }
    }
    pub fn parse(s: &str) -> Option<Order> {
        Order::ALL.into_iter().find(|o| o.as_str() == s)
    }
    pub fn is_sequential(&self) -> bool {
        *self == Order::Sequential
    }
}

impl fmt::Display for Order {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a physical host and its guests (`guest_of`) take turns on their one
/// disk: `alternate` (default): per filesystem variant, metal then each
/// guest, so that drift over the sweep does not pass for the cost of
/// virtualisation (a boot per variant); `metal-first`: every metal cell,
/// then each guest's (one boot per guest; drift and platform confounded).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GuestOrder {
    #[default]
    Alternate,
    MetalFirst,
}

impl GuestOrder {
    pub const ALL: [GuestOrder; 2] = [GuestOrder::Alternate, GuestOrder::MetalFirst];
    pub fn as_str(self) -> &'static str {
        match self {
            GuestOrder::Alternate => "alternate",
            GuestOrder::MetalFirst => "metal-first",
        }
    }
    pub fn parse(s: &str) -> Option<GuestOrder> {
        GuestOrder::ALL.into_iter().find(|o| o.as_str() == s)
    }
    pub fn is_default(&self) -> bool {
        *self == GuestOrder::Alternate
    }
}

/// The largest `seed` (TOML integers are signed 64-bit).
pub const MAX_SEED: u64 = i64::MAX as u64;

/// Which inventory hosts a matrix runs on: every criterion given must hold.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostFilter {
    pub names: Vec<String>,
    pub tags: Vec<String>,
    pub os: Vec<Os>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Matrix {
    pub path: PathBuf,
    pub name: Label,
    pub description: Option<String>,
    /// Settings for every cell, sorted by name.
    pub postgres: Vec<PgSetting>,
    pub filesystems: Vec<FsVariant>,
    pub workloads: Vec<Workload>,
    pub include: Vec<Rule>,
    pub exclude: Vec<Rule>,
    pub hosts: Option<HostFilter>,
    /// The most cells the matrix may plan (`max_cells`).
    #[serde(default = "default_max_cells")]
    pub max_cells: u64,
    /// A sweep of this matrix may be split between `fsmatrix agent`s, host
    /// by host (`split_hosts = true`); by default one agent runs all of it.
    #[serde(default)]
    pub split_hosts: bool,
    /// The order of a host's measured runs (`order`; default sequential).
    #[serde(default)]
    pub order: Order,
    /// How a physical host's cells and its guests' take turns on their
    /// one disk (`guest_order`; default alternate per variant).
    #[serde(default, skip_serializing_if = "GuestOrder::is_default")]
    pub guest_order: GuestOrder,
    /// The seed of `order = "random"`: the matrix's `seed`, or one drawn
    /// when it names none ([`Matrix::draw_seed`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// The seed was drawn, not written in the matrix.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub seed_drawn: bool,
    /// How the report decides its comparisons (`margin`, `correction`).
    #[serde(default)]
    pub verdicts: super::verdicts::VerdictRule,
    /// Where `order` is, for errors about it against the inventory.
    #[serde(skip)]
    pub(super) order_at: Option<ConfigError>,
    /// Where a plan over `max_cells` is reported.
    #[serde(skip)]
    pub(super) max_cells_at: Option<ConfigError>,
    /// Host names and tags the matrix mentions, with their position, checked
    /// against the inventory by [`Matrix::check_against`].
    #[serde(skip)]
    pub(super) refs: Vec<(RefKind, String, ConfigError)>,
    /// PostgreSQL settings that need the host owner's consent, with where
    /// they are, checked against the inventory by [`Matrix::check_against`].
    #[serde(skip)]
    pub(super) guarded: Vec<Guarded>,
}

/// A setting of a [`PgClass`] in `[postgres]` (`variant: None`) or in a
/// filesystem variant's `postgres`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Guarded {
    /// Lowercased.
    pub(super) setting: String,
    pub(super) class: PgClass,
    pub(super) variant: Option<Label>,
    pub(super) at: ConfigError,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum RefKind {
    Host,
    Tag,
}

/// Cells a matrix may plan unless it says `max_cells = N` (at most
/// [`MAX_CELLS_LIMIT`]): planning is linear, but a sweep this large is a typo.
/// The limit is what plans within memory: a plan holds ~0.4 KiB a cell, its
/// plan.json ~1 KiB (1 000 000 cells: ~0.4 GB, and a 1 GB file); at the old
/// 10 000 000, `plan --json` needed more than 8 GB.
pub const DEFAULT_MAX_CELLS: u64 = 100_000;
pub const MAX_CELLS_LIMIT: u64 = 1_000_000;

fn default_max_cells() -> u64 {
    DEFAULT_MAX_CELLS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ci_targets_parse_and_print_back() {
        for (text, hundredths, shown) in [
            ("2%", 200, "2%"),
            ("0.5%", 50, "0.5%"),
            ("1.25%", 125, "1.25%"),
            ("0.01%", 1, "0.01%"),
            ("50%", 5000, "50%"),
            (" 3 %", 300, "3%"),
        ] {
            let t = CiTarget::parse(text);
            assert_eq!(t, Some(CiTarget(hundredths)), "{text}");
            assert_eq!(t.map(|t| t.to_string()).as_deref(), Some(shown));
        }
        for bad in [
            "2", "0%", "0.001%", "50.01%", "-1%", "1e2%", "%", ".5%", "2.%x", "abc%",
        ] {
            assert_eq!(CiTarget::parse(bad), None, "{bad}");
        }
        assert_eq!(CiTarget(200).fraction(), 0.02);
    }
}
