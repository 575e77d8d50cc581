//! The matrix: filesystems and their options, PostgreSQL settings,
//! workloads, client counts, repeats, include/exclude rules and a host
//! filter.  Format documented in README.md and the examples in matrix/.
use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_spanned::Spanned;
use toml::de::{DeTable, DeValue};

use super::error::{ConfigError, ConfigErrors, Errors, Source};
use super::fsopts::{check_mkfs, check_mount};
use super::inventory::{Host, Inventory};
use super::os::Os;
use super::pgclass::{class_with_value, PgClass};
use super::values::{
    check_vary_value, Label, MkfsOption, MountOption, PgSettingName, PgSettingValue,
    ZfsPropertyName, ZfsPropertyValue,
};
use super::walk::{int_value, scalar_string, str_list_value, tables, type_name, Tbl, Val};
use crate::text::sha256_hex;

/// Filesystem types fsmatrix knows how to build (in remote-scripts/).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FsType {
    Ext3,
    Ext4,
    Xfs,
    Btrfs,
    Zfs,
    Ufs,
    Hammer,
    Hammer2,
}

impl FsType {
    pub const ALL: [FsType; 8] = [
        FsType::Ext3,
        FsType::Ext4,
        FsType::Xfs,
        FsType::Btrfs,
        FsType::Zfs,
        FsType::Ufs,
        FsType::Hammer,
        FsType::Hammer2,
    ];
    pub fn as_str(self) -> &'static str {
        match self {
            FsType::Ext3 => "ext3",
            FsType::Ext4 => "ext4",
            FsType::Xfs => "xfs",
            FsType::Btrfs => "btrfs",
            FsType::Zfs => "zfs",
            FsType::Ufs => "ufs",
            FsType::Hammer => "hammer",
            FsType::Hammer2 => "hammer2",
        }
    }
    pub fn parse(s: &str) -> Option<FsType> {
        FsType::ALL.into_iter().find(|t| t.as_str() == s)
    }
    /// The filesystems each OS can build and mount.
    pub fn for_os(os: Os) -> &'static [FsType] {
        match os {
            Os::Linux => &[
                FsType::Ext3,
                FsType::Ext4,
                FsType::Xfs,
                FsType::Btrfs,
                FsType::Zfs,
            ],
            Os::Freebsd => &[FsType::Ufs, FsType::Zfs],
            Os::Dragonfly => &[FsType::Hammer, FsType::Hammer2, FsType::Ufs],
        }
    }
    pub fn runs_on(self, os: Os) -> bool {
        FsType::for_os(os).contains(&self)
    }
}

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
/// number (`repeats = 3`), or adaptive (`repeats = { min = 3, max = 10,
/// target_ci = "2%" }`): after `min`, more repeats run until the 95%
/// confidence interval of the mean tps is within ±target of the mean, or
/// `max` is reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Repeats {
    pub min: u32,
    pub max: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_ci: Option<CiTarget>,
}

impl Repeats {
    pub const fn fixed(n: u32) -> Repeats {
        Repeats {
            min: n,
            max: n,
            target_ci: None,
        }
    }

    pub fn is_adaptive(&self) -> bool {
        self.target_ci.is_some() && self.max > self.min
    }
}

impl fmt::Display for Repeats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.target_ci {
            Some(t) if self.max > self.min => {
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
    /// The seed of `order = "random"`: the matrix's `seed`, or one drawn
    /// when it names none ([`Matrix::draw_seed`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// The seed was drawn, not written in the matrix.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub seed_drawn: bool,
    /// Where `order` is, for errors about it against the inventory.
    #[serde(skip)]
    order_at: Option<ConfigError>,
    /// Where a plan over `max_cells` is reported.
    #[serde(skip)]
    max_cells_at: Option<ConfigError>,
    /// Host names and tags the matrix mentions, with their position, checked
    /// against the inventory by [`Matrix::check_against`].
    #[serde(skip)]
    refs: Vec<(RefKind, String, ConfigError)>,
    /// PostgreSQL settings that need the host owner's consent, with where
    /// they are, checked against the inventory by [`Matrix::check_against`].
    #[serde(skip)]
    guarded: Vec<Guarded>,
}

/// A setting of a [`PgClass`] in `[postgres]` (`variant: None`) or in a
/// filesystem variant's `postgres`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Guarded {
    /// Lowercased.
    setting: String,
    class: PgClass,
    variant: Option<Label>,
    at: ConfigError,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RefKind {
    Host,
    Tag,
}

const TOP_KEYS: &[&str] = &[
    "name",
    "description",
    "repeats",
    "drop_caches",
    "warmup",
    "progress",
    "run_timeout",
    "hosts",
    "max_cells",
    "split_hosts",
    "order",
    "seed",
    "postgres",
    "filesystem",
    "workload",
    "include",
    "exclude",
];
const FS_KEYS: &[&str] = &[
    "name",
    "type",
    "mkfs_options",
    "mount_options",
    "properties",
    "pool_properties",
    "postgres",
    "vary",
];
const WL_KEYS: &[&str] = &[
    "name",
    "builtin",
    "pgbench_script",
    "sql_script",
    "scale",
    "clients",
    "jobs",
    "duration",
    "transactions",
    "estimate",
    "repeats",
    "warmup",
    "progress",
    "drop_caches",
    "run_timeout",
    "rate",
    "latency_limit",
    "latency_log",
    "sampling_rate",
    "per_statement",
];
const RULE_KEYS: &[&str] = &[
    "host",
    "host_os",
    "host_tag",
    "filesystem",
    "fs_type",
    "workload",
    "clients",
];

/// A seed for `order = "random"` from the OS's randomness (std's hasher
/// keys come from it) and the clock; at most [`MAX_SEED`], so that it can
/// be written back as `seed = N`.
fn draw_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    h.write_u128(nanos);
    h.write_u32(std::process::id());
    h.finish() & MAX_SEED
}

/// At most this many variants from one `[[filesystem]]`'s `vary`.
pub const MAX_VARIANTS_PER_ENTRY: usize = 1000;

/// Cells a matrix may plan unless it says `max_cells = N` (at most
/// [`MAX_CELLS_LIMIT`]): planning is linear, but a sweep this large is a typo.
pub const DEFAULT_MAX_CELLS: u64 = 100_000;
pub const MAX_CELLS_LIMIT: u64 = 10_000_000;

fn default_max_cells() -> u64 {
    DEFAULT_MAX_CELLS
}

/// ETA for a SQL script that names no `estimate`.
pub const SQL_DEFAULT_ESTIMATE_SECS: u64 = 60;

/// The longest run or estimate a matrix may name: 30 days.  Longer is a
/// typo (or hostile), and sums of such durations would overflow.
pub const MAX_DURATION_SECS: u64 = 30 * 86400;

/// "10s", "15m", "2h", "1h30m", "90s" → seconds; `None` for anything else,
/// 0, or more than [`MAX_DURATION_SECS`].
pub fn parse_duration(s: &str) -> Option<u64> {
    let mut total: u64 = 0;
    let mut num = String::new();
    let mut any = false;
    for c in s.chars() {
        if c.is_ascii_digit() {
            num.push(c);
        } else {
            let n: u64 = num.parse().ok()?;
            num.clear();
            let mult = match c {
                's' => 1,
                'm' => 60,
                'h' => 3600,
                'd' => 86400,
                _ => return None,
            };
            total = total.checked_add(n.checked_mul(mult)?)?;
            any = true;
        }
    }
    if !num.is_empty() || !any || total == 0 || total > MAX_DURATION_SECS {
        return None;
    }
    Some(total)
}

impl Matrix {
    /// The most cells this matrix can plan on `hosts` hosts (every variant
    /// on every host, before OS drops, filters and excludes), without
    /// planning them.
    pub fn most_cells(&self, hosts: usize) -> u128 {
        let per_variant: u128 = self
            .workloads
            .iter()
            .map(|w| w.clients.len() as u128 * u128::from(w.warmup + w.repeats.max))
            .sum();
        per_variant * self.filesystems.len() as u128 * hosts as u128
    }

    /// Read and validate a matrix file (and the scripts it names, relative to it).
    pub fn load(path: &Path) -> Result<Matrix, ConfigErrors> {
        let text = super::read_file(path)?;
        Matrix::parse(path, text)
    }

    /// Validate matrix text; scripts are read relative to `path`'s folder.
    pub fn parse(path: &Path, text: String) -> Result<Matrix, ConfigErrors> {
        super::parse_collecting(path, text, parse_doc)
    }

    /// Host names and tags the matrix mentions must exist in the inventory:
    /// a typo in an exclude rule would otherwise exclude nothing, silently.
    pub fn check_against(&self, inv: &Inventory) -> Result<(), ConfigErrors> {
        let mut out = Vec::new();
        let most = self.most_cells(inv.hosts.len());
        if most > u128::from(self.max_cells) {
            let mut e = self.max_cells_at.clone().unwrap_or_else(|| ConfigError {
                file: self.path.clone(),
                line: 1,
                column: 1,
                message: String::new(),
            });
            e.message = format!(
                "the matrix can plan up to {most} cells on the {} hosts of {}, more than max_cells = {}; \
                 narrow the matrix, or raise max_cells (at most {MAX_CELLS_LIMIT})",
                inv.hosts.len(),
                inv.path.display(),
                self.max_cells
            );
            out.push(e);
        }
        for (kind, value, at) in &self.refs {
            match kind {
                RefKind::Host => {
                    if !inv.hosts.iter().any(|h| h.name.as_str() == value) {
                        let names: Vec<&str> = inv.hosts.iter().map(|h| h.name.as_str()).collect();
                        let mut e = at.clone();
                        e.message = format!(
                            "host `{value}` is not in the inventory {}; valid: {}",
                            inv.path.display(),
                            names.join(", ")
                        );
                        out.push(e);
                    }
                }
                RefKind::Tag => {
                    if !inv
                        .hosts
                        .iter()
                        .any(|h| h.tags.iter().any(|t| t.as_str() == value))
                    {
                        let mut tags: Vec<&str> = inv
                            .hosts
                            .iter()
                            .flat_map(|h| h.tags.iter().map(|t| t.as_str()))
                            .collect();
                        tags.sort();
                        tags.dedup();
                        let mut e = at.clone();
                        e.message = format!(
                            "no host of the inventory {} has tag `{value}`; valid: {}",
                            inv.path.display(),
                            if tags.is_empty() {
                                "(no tags defined)".to_string()
                            } else {
                                tags.join(", ")
                            }
                        );
                        out.push(e);
                    }
                }
            }
        }
        out.extend(self.check_settings_allowed(inv));
        out.extend(self.check_order(inv));
        let mut list = ConfigErrors(out);
        list.sort();
        if list.is_empty() {
            Ok(())
        } else {
            Err(list)
        }
    }

    /// `order = "random"` without a `seed`: draw one (recorded in the plan,
    /// so that the run can be repeated exactly).  Nothing otherwise.
    pub fn draw_seed(&mut self) {
        if self.order == Order::Random && self.seed.is_none() {
            self.seed = Some(draw_seed());
            self.seed_drawn = true;
        }
    }

    /// Use `seed` (the one a bundle or a queued sweep recorded) when the
    /// matrix names none.
    pub fn use_recorded_seed(&mut self, seed: Option<u64>) {
        if self.order == Order::Random && (self.seed.is_none() || self.seed_drawn) {
            if let Some(s) = seed {
                self.seed = Some(s);
                self.seed_drawn = true;
            }
        }
    }

    /// Interleaved and random orders need one device per variant set up at
    /// a time: a selected host with one device and several variants is
    /// refused (rebuilding between runs is not supported), and the ports
    /// derived per device (pg_port + device index) must exist.
    fn check_order(&self, inv: &Inventory) -> Vec<ConfigError> {
        if self.order.is_sequential() {
            return Vec::new();
        }
        let at = || {
            self.order_at.clone().unwrap_or_else(|| ConfigError {
                file: self.path.clone(),
                line: 1,
                column: 1,
                message: String::new(),
            })
        };
        let mut out = Vec::new();
        for h in inv.hosts.iter().filter(|h| self.selects(h)) {
            let variants = self
                .filesystems
                .iter()
                .filter(|f| {
                    f.fs_type.runs_on(h.os)
                        && super::fsopts::os_refuses(f.fs_type, h.os, &f.mkfs_options).is_none()
                })
                .count();
            if h.devices.len() < 2 && variants > 1 {
                let mut e = at();
                e.message = format!(
                    "order = \"{}\" needs one device per variant set up at the same time, \
                     but host {} of {} lists one device ({}) for {variants} variants, and \
                     rebuilding the filesystem between runs is not supported; valid: list more \
                     devices on host {} (devices = [...] in the inventory) or use order = \"sequential\"",
                    self.order,
                    h.name,
                    inv.path.display(),
                    h.device(),
                    h.name
                );
                out.push(e);
            }
            let slots = h.devices.len().min(variants.max(1));
            if u32::from(h.pg_port) + slots as u32 - 1 > u32::from(u16::MAX) {
                let mut e = at();
                e.message = format!(
                    "order = \"{}\" gives each device of host {} its own PostgreSQL port \
                     (pg_port + device index), but pg_port = {} + {} is beyond 65535; \
                     valid: a lower pg_port for host {}",
                    self.order,
                    h.name,
                    h.pg_port,
                    slots - 1,
                    h.name
                );
                out.push(e);
            }
        }
        out
    }

    /// Whether the matrix's `[hosts]` filter keeps `h` (as the plan decides).
    fn selects(&self, h: &Host) -> bool {
        let Some(f) = &self.hosts else { return true };
        (f.names.is_empty() || f.names.iter().any(|n| n == h.name.as_str()))
            && (f.tags.is_empty()
                || h.tags
                    .iter()
                    .any(|t| f.tags.iter().any(|x| x == t.as_str())))
            && (f.os.is_empty() || f.os.contains(&h.os))
    }

    /// Settings that run commands, load code or name files run only on
    /// hosts whose inventory entry allows them: one error per setting, with
    /// every host that does not.
    fn check_settings_allowed(&self, inv: &Inventory) -> Vec<ConfigError> {
        let mut out = Vec::new();
        for g in &self.guarded {
            let fs_types: Vec<FsType> = match &g.variant {
                Some(v) => self
                    .filesystems
                    .iter()
                    .filter(|f| &f.name == v)
                    .map(|f| f.fs_type)
                    .collect(),
                None => self.filesystems.iter().map(|f| f.fs_type).collect(),
            };
            let refused: Vec<&str> = inv
                .hosts
                .iter()
                .filter(|h| self.selects(h))
                .filter(|h| fs_types.iter().any(|t| t.runs_on(h.os)))
                .filter(|h| {
                    !h.allow_postgres_settings
                        .iter()
                        .any(|a| a.as_str() == g.setting)
                })
                .map(|h| h.name.as_str())
                .collect();
            if refused.is_empty() {
                continue;
            }
            let mut e = g.at.clone();
            let place = match &g.variant {
                Some(v) => format!("filesystem `{v}`"),
                None => "[postgres]".to_string(),
            };
            e.message = {
                format!(
                    "postgresql setting `{}` in {place} {} and is refused on host{} {} of {}: \
                     the host's owner must allow it there; valid: add \
                     allow_postgres_settings = [\"{}\"] to the [[host]] (or [defaults]) of the inventory",
                    g.setting,
                    g.class,
                    if refused.len() > 1 { "s" } else { "" },
                    refused.join(", "),
                    inv.path.display(),
                    g.setting
                )
            };
            out.push(e);
        }
        out
    }
}

fn parse_doc(src: &Source, errs: &mut Errors<'_>) -> Option<Matrix> {
    let doc = match DeTable::parse(&src.text) {
        Ok(d) => d,
        Err(e) => {
            let span = e.span().unwrap_or(0..0);
            errs.push(&span, format!("invalid toml: {}", e.message().trim_end()));
            return None;
        }
    };
    let root = Tbl {
        t: doc.get_ref(),
        span: &doc.span(),
        ctx: "the matrix",
    };
    root.check_keys(errs, TOP_KEYS);
    let name = match root.get("name") {
        Some(_) => root.typed(errs, "name", Label::new),
        None => {
            errs.push(
                &(0..0),
                "the matrix has no `name`; add name = \"...\" (it names the result bundle)",
            );
            None
        }
    };
    let description = root.str(errs, "description").map(|s| s.into_inner());
    let max_cells_v = root.int(errs, "max_cells", 1, MAX_CELLS_LIMIT as i64);
    let max_cells = max_cells_v
        .as_ref()
        .map_or(DEFAULT_MAX_CELLS, |n| *n.get_ref() as u64);
    let split_hosts = root.bool(errs, "split_hosts").unwrap_or(false);
    let order_v = root.str(errs, "order");
    let order = match &order_v {
        None => Order::Sequential,
        Some(v) => Order::parse(v.get_ref()).unwrap_or_else(|| {
            let valid: Vec<&str> = Order::ALL.iter().map(|o| o.as_str()).collect();
            errs.push(
                &v.span(),
                format!(
                    "unknown order `{}`; valid: {}",
                    v.get_ref(),
                    valid.join(", ")
                ),
            );
            Order::Sequential
        }),
    };
    let seed_v = root.int(errs, "seed", 0, MAX_SEED as i64);
    if let Some(v) = &seed_v {
        if order != Order::Random {
            errs.push(
                &v.span(),
                format!(
                    "`seed` is for order = \"random\" only (this matrix's order is {order}); \
                     valid: remove seed, or set order = \"random\""
                ),
            );
        }
    }
    let seed = seed_v.as_ref().map(|n| *n.get_ref() as u64);
    let order_at = Some(src.error(&order_v.as_ref().map_or(0..0, |v| v.span()), String::new()));
    let max_cells_at = Some(src.error(
        &max_cells_v.as_ref().map_or(0..0, |n| n.span()),
        String::new(),
    ));
    let defaults = WlDefaults {
        repeats: root
            .get("repeats")
            .and_then(|v| repeats_value(errs, v, "the matrix"))
            .unwrap_or(Repeats::fixed(1)),
        drop_caches: root.bool(errs, "drop_caches").unwrap_or(false),
        warmup: root
            .get("warmup")
            .and_then(|v| warmup_value(errs, v, "the matrix"))
            .unwrap_or(0),
        progress: root.bool(errs, "progress").unwrap_or(false),
        run_timeout: root
            .get("run_timeout")
            .and_then(|v| run_timeout_value(errs, v, "the matrix").map(|n| (n, v.span()))),
    };
    let mut guarded: Vec<Guarded> = Vec::new();
    let postgres = match root.table(errs, "postgres") {
        Some(v) => {
            let mut g = Vec::new();
            let out = settings(errs, v, "[postgres]", &[], &mut g);
            guarded.extend(g.into_iter().map(|(setting, class, at)| Guarded {
                setting,
                class,
                variant: None,
                at,
            }));
            out
        }
        None => Vec::new(),
    };
    let mut refs = Vec::new();
    let hosts = root
        .table(errs, "hosts")
        .map(|v| host_filter(src, errs, v, &mut refs));

    // Filesystems.
    let mut filesystems: Vec<(FsVariant, Range<usize>)> = Vec::new();
    match root.get("filesystem") {
        Some(v) => {
            for (t, span) in tables(errs, v, "filesystem") {
                filesystems.extend(filesystem(errs, t, &span, &mut guarded));
            }
        }
        None => errs.push(
            &(0..0),
            "the matrix has no [[filesystem]]; add at least one with name and type",
        ),
    }
    for i in 0..filesystems.len() {
        let (f, span) = &filesystems[i];
        if filesystems[..i].iter().any(|(g, _)| g.name == f.name) {
            errs.push(
                span,
                format!(
                    "duplicate filesystem variant name `{}`; give every [[filesystem]] (and every vary value, via {{key}} in the name) its own name",
                    f.name
                ),
            );
        }
    }

    // Workloads.
    let base = src.path.parent().unwrap_or(Path::new("")).to_path_buf();
    let mut workloads: Vec<(Workload, Range<usize>)> = Vec::new();
    match root.get("workload") {
        Some(v) => {
            for (t, span) in tables(errs, v, "workload") {
                if let Some(w) = workload(errs, t, &span, &base, &defaults) {
                    workloads.push((w, span));
                }
            }
        }
        None => errs.push(
            &(0..0),
            "the matrix has no [[workload]]; add at least one (e.g. builtin = \"tpcb-like\")",
        ),
    }
    for i in 0..workloads.len() {
        let (w, span) = &workloads[i];
        if workloads[..i].iter().any(|(x, _)| x.name == w.name) {
            errs.push(
                span,
                format!(
                    "duplicate workload name `{}`; every [[workload]] needs its own name",
                    w.name
                ),
            );
        }
    }

    let fs_names: Vec<String> = filesystems
        .iter()
        .map(|(f, _)| f.name.as_str().to_string())
        .collect();
    let wl_names: Vec<String> = workloads
        .iter()
        .map(|(w, _)| w.name.as_str().to_string())
        .collect();
    let names = Names {
        fs: &fs_names,
        wl: &wl_names,
    };
    let include = rules(src, errs, &root, "include", &names, &mut refs);
    let exclude = rules(src, errs, &root, "exclude", &names, &mut refs);

    Some(Matrix {
        path: src.path.clone(),
        name: name?,
        description,
        postgres,
        filesystems: filesystems.into_iter().map(|(f, _)| f).collect(),
        workloads: workloads.into_iter().map(|(w, _)| w).collect(),
        include,
        exclude,
        hosts,
        max_cells,
        split_hosts,
        order,
        seed,
        seed_drawn: false,
        order_at,
        max_cells_at,
        refs,
        guarded,
    })
}

struct WlDefaults {
    repeats: Repeats,
    drop_caches: bool,
    warmup: u32,
    progress: bool,
    /// Seconds, and where the matrix says it (a workload too short for it
    /// is an error there).
    run_timeout: Option<(u64, Range<usize>)>,
}

/// `run_timeout = "2m"`: a duration, as `duration` is written.
fn run_timeout_value(errs: &mut Errors<'_>, v: &Val<'_>, ctx: &str) -> Option<u64> {
    let n = v.get_ref().as_str().and_then(parse_duration);
    if n.is_none() {
        errs.push(
            &v.span(),
            format!(
                "`run_timeout` in {ctx} must be a duration such as \"90s\", \"10m\" or \"2h\" (at most 30d): how long one run may take before it is killed"
            ),
        );
    }
    n
}

struct Names<'a> {
    fs: &'a [String],
    wl: &'a [String],
}

/// A table of PostgreSQL settings; `vars` are substituted into `{key}`s.
/// Names are stored lowercased, as PostgreSQL compares them (guc.c
/// `guc_name_compare`), so that what plan accepts the host's script
/// accepts; settings of a [`PgClass`] are recorded in `guarded` with where
/// they are, for [`Matrix::check_against`].
fn settings(
    errs: &mut Errors<'_>,
    v: &Val<'_>,
    ctx: &str,
    vars: &[(String, String)],
    guarded: &mut Vec<(String, PgClass, ConfigError)>,
) -> Vec<PgSetting> {
    let DeValue::Table(t) = v.get_ref() else {
        return Vec::new();
    };
    let mut out: BTreeMap<String, PgSetting> = BTreeMap::new();
    // Lowercased name → as written, to name both spellings of one setting.
    let mut spelled: BTreeMap<String, String> = BTreeMap::new();
    for (k, val) in t.iter() {
        let name = match PgSettingName::new(k.get_ref())
            .and_then(|_| PgSettingName::new(&k.get_ref().to_ascii_lowercase()))
        {
            Ok(n) => n,
            Err(e) => {
                errs.push(&k.span(), e.0);
                continue;
            }
        };
        let written: &str = k.get_ref().as_ref();
        if let Some(first) = spelled.insert(name.as_str().to_string(), written.to_string()) {
            errs.push(
                &k.span(),
                format!(
                    "settings `{first}` and `{written}` in {ctx} are one setting (PostgreSQL setting names are case-insensitive); set it once"
                ),
            );
            continue;
        }
        if name.as_str() == "settings" && val.get_ref().is_table() {
            errs.push(
                &val.span(),
                format!("put settings directly under [postgres] (e.g. shared_buffers = \"1GB\"), not in a `settings` table ({ctx})"),
            );
            continue;
        }
        let Some(raw) = scalar_string(val.get_ref()) else {
            errs.push(
                &val.span(),
                format!(
                    "setting `{name}` in {ctx} must be a string, a number or a boolean, found {}",
                    type_name(val.get_ref())
                ),
            );
            continue;
        };
        let Some(s) = subst(errs, &raw, &val.span(), vars) else {
            continue;
        };
        match PgSettingValue::new(&s) {
            Ok(value) => {
                let class = class_with_value(name.as_str(), value.as_str());
                if class == Some(PgClass::Fsmatrix) {
                    errs.push(
                        &k.span(),
                        format!(
                            "postgresql setting `{}` in {ctx} {}: fsmatrix writes it for every cluster \
                             (the port is the inventory's `pg_port`); remove it from the matrix",
                            k.get_ref().as_ref() as &str,
                            PgClass::Fsmatrix
                        ),
                    );
                    continue;
                }
                if let Some(class) = class {
                    guarded.push((
                        name.as_str().to_string(),
                        class,
                        errs.src.error(&k.span(), String::new()),
                    ));
                }
                out.insert(name.as_str().to_string(), PgSetting { name, value });
            }
            Err(e) => errs.push(&val.span(), e.0),
        }
    }
    out.into_values().collect()
}

/// The HAMMER2 compression a variant may ask for: `hammer2 setcomp`'s
/// algorithms (DragonFly sbin/hammer2/cmd_setcomp.c, hammer2(8)): none,
/// autozero, lz4 (newfs_hammer2's default), zlib, zlib:6 to zlib:9.
pub const HAMMER2_COMPRESSION: &[&str] = &[
    "none", "autozero", "lz4", "zlib", "zlib:6", "zlib:7", "zlib:8", "zlib:9",
];

/// One validator for a hammer2 `properties` entry.
pub fn check_hammer2_property(name: &str, value: &str) -> Result<(), String> {
    if name != "compression" {
        return Err(format!(
            "hammer2 property `{name}` is unknown: hammer2 takes only `compression` \
             (hammer2 setcomp: {})",
            HAMMER2_COMPRESSION.join(", ")
        ));
    }
    if !HAMMER2_COMPRESSION.contains(&value) {
        return Err(format!(
            "hammer2 compression `{value}` is not one of {}",
            HAMMER2_COMPRESSION.join(", ")
        ));
    }
    Ok(())
}

fn zfs_props(
    errs: &mut Errors<'_>,
    v: &Val<'_>,
    ctx: &str,
    vars: &[(String, String)],
) -> Vec<ZfsProperty> {
    let DeValue::Table(t) = v.get_ref() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (k, val) in t.iter() {
        let name = match ZfsPropertyName::new(k.get_ref()) {
            Ok(n) => n,
            Err(e) => {
                errs.push(&k.span(), e.0);
                continue;
            }
        };
        let Some(raw) = scalar_string(val.get_ref()) else {
            errs.push(
                &val.span(),
                format!(
                    "property `{name}` in {ctx} must be a string or a number, found {}",
                    type_name(val.get_ref())
                ),
            );
            continue;
        };
        let Some(s) = subst(errs, &raw, &val.span(), vars) else {
            continue;
        };
        match ZfsPropertyValue::new(&s) {
            Ok(value) => out.push(ZfsProperty { name, value }),
            Err(e) => errs.push(&val.span(), e.0),
        }
    }
    out
}

/// Replace `{key}` with the vary value; an unknown key or a lone brace is an error.
fn subst(
    errs: &mut Errors<'_>,
    template: &str,
    span: &Range<usize>,
    vars: &[(String, String)],
) -> Option<String> {
    let mut out = String::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else {
            errs.push(
                span,
                format!("`{template}` has a `{{` without `}}`; write {{key}} with a key of `vary`"),
            );
            return None;
        };
        let key = &after[..close];
        match vars.iter().find(|(k, _)| k == key) {
            Some((_, v)) => out.push_str(v),
            None => {
                let keys: Vec<&str> = vars.iter().map(|(k, _)| k.as_str()).collect();
                errs.push(
                    span,
                    format!(
                        "`{{{key}}}` in `{template}` is not a key of `vary`; valid: {}",
                        if keys.is_empty() {
                            "(no vary table here)".to_string()
                        } else {
                            keys.join(", ")
                        }
                    ),
                );
                return None;
            }
        }
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    Some(out)
}

fn uses(template: &str, key: &str) -> bool {
    template.contains(&format!("{{{key}}}"))
}

/// One [[filesystem]] entry → its variants (one per vary combination).
fn filesystem(
    errs: &mut Errors<'_>,
    t: &DeTable<'_>,
    span: &Range<usize>,
    guarded: &mut Vec<Guarded>,
) -> Vec<(FsVariant, Range<usize>)> {
    let label = t
        .iter()
        .find(|(k, _)| k.get_ref().as_ref() == "name")
        .and_then(|(_, v)| v.get_ref().as_str().map(str::to_string))
        .unwrap_or_else(|| "?".into());
    let ctx = format!("[[filesystem]] `{label}`");
    let f = Tbl { t, span, ctx: &ctx };
    f.check_keys(errs, FS_KEYS);
    let before = errs.list.len();
    let name_t = match f.get("name") {
        Some(_) => f.str(errs, "name"),
        None => {
            errs.push(span, format!("{ctx} has no `name`"));
            None
        }
    };
    let fs_type = match f.get("type") {
        Some(_) => f.str(errs, "type").and_then(|s| match FsType::parse(s.get_ref()) {
            Some(t) => Some(t),
            None => {
                errs.push(
                    &s.span(),
                    format!(
                        "unknown filesystem type `{}` in {ctx}; valid: ext3, ext4, xfs, btrfs, zfs, ufs, hammer, hammer2",
                        s.get_ref()
                    ),
                );
                None
            }
        }),
        None => {
            errs.push(
                span,
                format!("{ctx} has no `type` (ext3, ext4, xfs, btrfs, zfs, ufs, hammer, hammer2)"),
            );
            None
        }
    };
    let mkfs_t = f.str_list(errs, "mkfs_options").unwrap_or_default();
    let mount_t = f.str_list(errs, "mount_options").unwrap_or_default();
    let props_v = f.table(errs, "properties");
    let pool_v = f.table(errs, "pool_properties");
    let pg_v = f.table(errs, "postgres");
    if let Some(ft) = fs_type {
        if ft != FsType::Zfs {
            for key in ["properties", "pool_properties"] {
                // HAMMER2 has one property of its own: compression (hammer2 setcomp).
                if ft == FsType::Hammer2 && key == "properties" {
                    continue;
                }
                if let Some(v) = f.get(key) {
                    errs.push(
                        &v.span(),
                        format!(
                            "`{key}` are ZFS properties but {ctx} is {}; use mount_options and mkfs_options",
                            ft.as_str()
                        ),
                    );
                }
            }
        }
    }

    // vary: key -> values, combined in key order (first key varies slowest).
    let mut axes: Vec<(Spanned<String>, Vec<String>)> = Vec::new();
    if let Some(v) = f.table(errs, "vary") {
        if let DeValue::Table(vt) = v.get_ref() {
            for (k, vals) in vt.iter() {
                let key: String = k.get_ref().to_string();
                if let Err(e) = ZfsPropertyName::new(&key) {
                    errs.push(&k.span(), format!("vary key: {}", e.0));
                    continue;
                }
                let DeValue::Array(a) = vals.get_ref() else {
                    errs.push(
                        &vals.span(),
                        format!(
                            "vary `{key}` in {ctx} must be an array of values, found {}",
                            type_name(vals.get_ref())
                        ),
                    );
                    continue;
                };
                if a.is_empty() {
                    errs.push(
                        &vals.span(),
                        format!("vary `{key}` in {ctx} is empty; give at least one value"),
                    );
                    continue;
                }
                let mut values = Vec::new();
                for item in a.iter() {
                    match scalar_string(item.get_ref()) {
                        Some(s) => match check_vary_value(&s) {
                            Ok(()) => {
                                if values.contains(&s) {
                                    errs.push(
                                        &item.span(),
                                        format!("vary `{key}` lists `{s}` twice; list each value once"),
                                    );
                                }
                                values.push(s)
                            }
                            Err(e) => errs.push(&item.span(), e.0),
                        },
                        None => errs.push(
                            &item.span(),
                            format!(
                                "every vary value must be a string, a number or a boolean, found {}",
                                type_name(item.get_ref())
                            ),
                        ),
                    }
                }
                axes.push((Spanned::new(k.span(), key), values));
            }
        }
    }
    if errs.list.len() > before {
        return Vec::new();
    }
    let (Some(name_t), Some(fs_type)) = (name_t, fs_type) else {
        return Vec::new();
    };
    // Which vary keys are used by a template other than the name?
    let mut templates: Vec<Spanned<String>> = Vec::new();
    templates.extend(mkfs_t.iter().cloned());
    templates.extend(mount_t.iter().cloned());
    for v in [props_v, pool_v, pg_v].into_iter().flatten() {
        if let DeValue::Table(t) = v.get_ref() {
            templates.extend(
                t.values()
                    .filter_map(|v| scalar_string(v.get_ref()).map(|s| Spanned::new(v.span(), s))),
            );
        }
    }
    // Every {placeholder} must be a vary key (reported once, at its template).
    let no_values: Vec<(String, String)> = axes
        .iter()
        .map(|(k, _)| (k.get_ref().clone(), String::new()))
        .collect();
    for t in templates.iter().chain(std::iter::once(&name_t)) {
        subst(errs, t.get_ref(), &t.span(), &no_values);
    }
    if errs.list.len() > before {
        return Vec::new();
    }
    let templates: Vec<String> = templates.into_iter().map(|s| s.into_inner()).collect();
    let mut implicit_props: Vec<&Spanned<String>> = Vec::new();
    for (key, _) in &axes {
        if templates.iter().any(|t| uses(t, key.get_ref())) {
            continue;
        }
        if fs_type == FsType::Zfs {
            implicit_props.push(key);
        } else {
            errs.push(
                &key.span(),
                format!(
                    "vary `{}` in {ctx} changes nothing: put `{{{}}}` in a mount option, mkfs option or postgres setting (only on zfs does a vary key name a property by itself)",
                    key.get_ref(),
                    key.get_ref()
                ),
            );
        }
    }
    for (key, _) in &axes {
        if !uses(name_t.get_ref(), key.get_ref()) && axes.iter().any(|a| a.1.len() > 1) {
            errs.push(
                &name_t.span(),
                format!(
                    "the name `{}` of {ctx} does not contain `{{{}}}`: its variants would share a name",
                    name_t.get_ref(),
                    key.get_ref()
                ),
            );
        }
    }
    if errs.list.len() > before {
        return Vec::new();
    }

    // Cartesian product, bounded before it is built.
    let variants = axes
        .iter()
        .try_fold(1usize, |n, a| n.checked_mul(a.1.len()))
        .filter(|n| *n <= MAX_VARIANTS_PER_ENTRY);
    if variants.is_none() {
        let sizes: Vec<String> = axes.iter().map(|a| a.1.len().to_string()).collect();
        errs.push(
            &axes[0].0.span(),
            format!(
                "vary in {ctx} makes {} variants; at most {MAX_VARIANTS_PER_ENTRY} per [[filesystem]] (give fewer values, or split it into several entries)",
                sizes.join(" × ")
            ),
        );
        return Vec::new();
    }
    let mut combos: Vec<Vec<(String, String)>> = vec![Vec::new()];
    for (key, values) in &axes {
        let mut next = Vec::new();
        for c in &combos {
            for v in values {
                let mut c = c.clone();
                c.push((key.get_ref().clone(), v.clone()));
                next.push(c);
            }
        }
        combos = next;
    }
    let mut out = Vec::new();
    for vars in combos {
        let n0 = errs.list.len();
        let name = subst(errs, name_t.get_ref(), &name_t.span(), &vars).and_then(|n| {
            match Label::new(&n) {
                Ok(l) => Some(l),
                Err(e) => {
                    errs.push(&name_t.span(), e.0);
                    None
                }
            }
        });
        let mut mkfs = Vec::new();
        for s in &mkfs_t {
            if let Some(x) = subst(errs, s.get_ref(), &s.span(), &vars) {
                match MkfsOption::new(&x) {
                    Ok(o) => mkfs.push(o),
                    Err(e) => errs.push(&s.span(), e.0),
                }
            }
        }
        // Allow-listed per type, after vary substitution (see fsopts.rs).
        if mkfs.len() == mkfs_t.len() {
            if let Err((i, e)) = check_mkfs(fs_type, &mkfs) {
                errs.push(&mkfs_t[i].span(), e);
            }
        }
        let mut mount = Vec::new();
        for s in &mount_t {
            if let Some(x) = subst(errs, s.get_ref(), &s.span(), &vars) {
                match MountOption::new(&x).and_then(|o| {
                    check_mount(fs_type, &o)
                        .map(|()| o)
                        .map_err(super::values::ValueError)
                }) {
                    Ok(o) => mount.push(o),
                    Err(e) => errs.push(&s.span(), e.0),
                }
            }
        }
        let mut props = props_v
            .map(|v| zfs_props(errs, v, &ctx, &vars))
            .unwrap_or_default();
        for key in &implicit_props {
            let value = vars
                .iter()
                .find(|(k, _)| k == key.get_ref())
                .map(|(_, v)| v.clone())
                .unwrap_or_default();
            match (
                ZfsPropertyName::new(key.get_ref()),
                ZfsPropertyValue::new(&value),
            ) {
                (Ok(name), Ok(value)) => {
                    props.retain(|p| p.name != name);
                    props.push(ZfsProperty { name, value });
                }
                (Err(e), _) | (_, Err(e)) => errs.push(&key.span(), e.0),
            }
        }
        props.sort();
        if fs_type == FsType::Hammer2 {
            let at = props_v.map(|v| v.span()).unwrap_or_else(|| span.clone());
            for p in &props {
                if let Err(e) = check_hammer2_property(p.name.as_str(), p.value.as_str()) {
                    errs.push(&at, format!("{e} (in {ctx})"));
                }
            }
        }
        let mut pool = pool_v
            .map(|v| zfs_props(errs, v, &ctx, &vars))
            .unwrap_or_default();
        pool.sort();
        let mut g = Vec::new();
        let pg = pg_v
            .map(|v| settings(errs, v, &ctx, &vars, &mut g))
            .unwrap_or_default();
        if errs.list.len() > n0 {
            continue;
        }
        if let Some(name) = name {
            guarded.extend(g.into_iter().map(|(setting, class, at)| Guarded {
                setting,
                class,
                variant: Some(name.clone()),
                at,
            }));
            out.push((
                FsVariant {
                    name,
                    fs_type,
                    mkfs_options: mkfs,
                    mount_options: mount,
                    properties: props,
                    pool_properties: pool,
                    postgres: pg,
                    varied: vars,
                },
                span.clone(),
            ));
        }
    }
    out
}

/// The largest workload script a matrix may name: the text travels in the
/// plan, the bundle and to every host.
pub const MAX_SCRIPT_BYTES: u64 = 16 * 1024 * 1024;

/// A workload script path as written → the path fsmatrix keeps: `.` parts
/// dropped (`./x.sql` is `x.sql`), `..` refused.  A bundle keeps a relative
/// script at the same path beside its matrix snapshot, so the path must
/// stay inside the matrix's folder; `run`, `resume` and `run --from` use the
/// path this returns, so what plan accepts they accept.
pub fn script_path(written: &str) -> Result<PathBuf, String> {
    use std::path::Component;
    let p = Path::new(written);
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                return Err(format!(
                    "script path `{}` has a `..` part; a bundle keeps scripts beside its matrix, \
                     so valid: a path inside the matrix's folder (e.g. sql/x.sql) or an absolute path",
                    super::values::shown(written)
                ))
            }
            other => out.push(other.as_os_str()),
        }
    }
    if out.as_os_str().is_empty() || written.ends_with('/') {
        return Err(format!(
            "script path `{}` names no file; valid: a file path relative to the matrix (e.g. sql/x.sql)",
            super::values::shown(written)
        ));
    }
    Ok(out)
}

/// Read a workload script: a regular file (a FIFO, a device or a folder is
/// refused from its metadata, and opened non-blocking: see
/// [`crate::files::read_regular`]) of at most [`MAX_SCRIPT_BYTES`], in UTF-8.
pub fn read_script(path: &Path) -> Result<String, String> {
    let bytes = crate::files::read_regular(path, MAX_SCRIPT_BYTES)?;
    String::from_utf8(bytes).map_err(|_| "it is not UTF-8 text".to_string())
}

fn workload(
    errs: &mut Errors<'_>,
    t: &DeTable<'_>,
    span: &Range<usize>,
    base: &Path,
    d: &WlDefaults,
) -> Option<Workload> {
    let label = t
        .iter()
        .find(|(k, _)| k.get_ref().as_ref() == "name")
        .and_then(|(_, v)| v.get_ref().as_str().map(str::to_string))
        .unwrap_or_else(|| "?".into());
    let ctx = format!("[[workload]] `{label}`");
    let w = Tbl { t, span, ctx: &ctx };
    w.check_keys(errs, WL_KEYS);
    let before = errs.list.len();
    let name = match w.get("name") {
        Some(_) => w.typed(errs, "name", Label::new),
        None => {
            errs.push(span, format!("{ctx} has no `name`"));
            None
        }
    };
    let given: Vec<&str> = ["builtin", "pgbench_script", "sql_script"]
        .into_iter()
        .filter(|k| w.get(k).is_some())
        .collect();
    if given.len() != 1 {
        errs.push(
            span,
            format!(
                "{ctx} needs exactly one of builtin (tpcb-like, simple-update, select-only), pgbench_script or sql_script; found {}",
                if given.is_empty() { "none".to_string() } else { given.join(" and ") }
            ),
        );
        return None;
    }
    let kind = match given[0] {
        "builtin" => w.str(errs, "builtin").and_then(|s| {
            let b = match s.get_ref().as_str() {
                "tpcb-like" => Builtin::TpcbLike,
                "simple-update" => Builtin::SimpleUpdate,
                "select-only" => Builtin::SelectOnly,
                other => {
                    errs.push(
                        &s.span(),
                        format!(
                            "unknown builtin `{other}` in {ctx}; valid: tpcb-like, simple-update, select-only"
                        ),
                    );
                    return None;
                }
            };
            Some(WorkloadKind::Builtin { builtin: b })
        }),
        key => w.str(errs, key).and_then(|s| {
            let rel = match script_path(s.get_ref()) {
                Ok(rel) => rel,
                Err(e) => {
                    errs.push(&s.span(), e);
                    return None;
                }
            };
            let path = base.join(&rel);
            match read_script(&path) {
                Ok(content) => {
                    let sha256 = sha256_hex(content.as_bytes());
                    Some(if key == "sql_script" {
                        WorkloadKind::SqlScript {
                            path: rel,
                            sha256,
                            content,
                        }
                    } else {
                        WorkloadKind::PgbenchScript {
                            path: rel,
                            sha256,
                            content,
                        }
                    })
                }
                Err(e) => {
                    errs.push(
                        &s.span(),
                        format!(
                            "cannot read `{}` ({}): {e}; valid: a regular file of at most {} MiB, relative to the matrix file",
                            s.get_ref(),
                            path.display(),
                            MAX_SCRIPT_BYTES >> 20
                        ),
                    );
                    None
                }
            }
        }),
    };
    let is_sql = matches!(kind, Some(WorkloadKind::SqlScript { .. }));
    let scale = match w.get("scale") {
        Some(v) if is_sql => {
            errs.push(
                &v.span(),
                format!("{ctx} is a SQL script: it makes its own data, so `scale` does not apply"),
            );
            None
        }
        Some(v) => match v.get_ref() {
            DeValue::Integer(_) => int_value(errs, v, &format!("`scale` in {ctx}"), 1, 1_000_000)
                .map(|n| Scale::Factor(*n.get_ref() as u32)),
            DeValue::String(s) => match s.strip_suffix('%').and_then(|p| p.parse::<u8>().ok()) {
                Some(p) if (1..=95).contains(&p) => Some(Scale::DevicePercent(p)),
                _ => {
                    errs.push(
                            &v.span(),
                            format!(
                                "`scale` in {ctx} is \"{s}\"; valid: a number (pgbench -i -s) or a share of the device from \"1%\" to \"95%\""
                            ),
                        );
                    None
                }
            },
            other => {
                errs.push(
                    &v.span(),
                    format!(
                        "`scale` in {ctx} must be a number or a percentage string such as \"80%\", found {}",
                        type_name(other)
                    ),
                );
                None
            }
        },
        None if is_sql => None,
        None => {
            errs.push(
                span,
                format!("{ctx} has no `scale`; give a number (pgbench -i -s) or a share of the device such as \"80%\""),
            );
            None
        }
    };
    let clients = match w.get("clients") {
        Some(v) => match v.get_ref() {
            DeValue::Array(a) => {
                if a.is_empty() {
                    errs.push(
                        &v.span(),
                        format!("`clients` of {ctx} is empty; list at least one client count, e.g. [1, 4]"),
                    );
                }
                let mut out: Vec<u32> = Vec::new();
                for item in a.iter() {
                    if let Some(n) =
                        int_value(errs, item, &format!("a client count of {ctx}"), 1, 10_000)
                    {
                        let n = *n.get_ref() as u32;
                        if out.contains(&n) {
                            errs.push(
                                &item.span(),
                                format!("client count {n} is listed twice in {ctx}"),
                            );
                        }
                        out.push(n);
                    }
                }
                if is_sql && out != [1] {
                    errs.push(
                        &v.span(),
                        format!("{ctx} is a SQL script run once by psql; `clients` must be [1] or absent"),
                    );
                }
                out
            }
            other => {
                errs.push(
                    &v.span(),
                    format!(
                        "`clients` of {ctx} must be an array of integers such as [1, 4], found {}",
                        type_name(other)
                    ),
                );
                Vec::new()
            }
        },
        None if is_sql => vec![1],
        None => {
            errs.push(
                span,
                format!("{ctx} has no `clients`; list the client counts, e.g. clients = [1, 4]"),
            );
            Vec::new()
        }
    };
    let jobs = match w.get("jobs") {
        Some(v) => match v.get_ref() {
            DeValue::String(s) if s.as_ref() == "clients" => Jobs::PerClient,
            DeValue::Integer(_) => int_value(errs, v, &format!("`jobs` in {ctx}"), 1, 1024)
                .map(|n| Jobs::Fixed(*n.get_ref() as u32))
                .unwrap_or(Jobs::Fixed(1)),
            other => {
                errs.push(
                    &v.span(),
                    format!(
                        "`jobs` in {ctx} must be a number or \"clients\" (one thread per client), found {}",
                        match other {
                            DeValue::String(s) => format!("\"{s}\""),
                            o => type_name(o).to_string(),
                        }
                    ),
                );
                Jobs::Fixed(1)
            }
        },
        None => Jobs::Fixed(1),
    };
    let duration = w.str(errs, "duration").and_then(|s| match parse_duration(s.get_ref()) {
        Some(n) => Some(n),
        None => {
            errs.push(
                &s.span(),
                format!(
                    "`duration` in {ctx} is \"{}\"; valid: a number with a unit s, m, h or d, e.g. \"10s\", \"15m\", \"2h\", \"1h30m\", at most 30d",
                    s.get_ref()
                ),
            );
            None
        }
    });
    let transactions = w
        .int(errs, "transactions", 1, 1_000_000_000)
        .map(|n| *n.get_ref() as u64);
    let estimate = w
        .str(errs, "estimate")
        .and_then(|s| match parse_duration(s.get_ref()) {
            Some(n) => Some(n),
            None => {
                errs.push(
                    &s.span(),
                    format!(
                        "`estimate` in {ctx} is \"{}\"; valid: e.g. \"90s\", \"5m\", at most 30d",
                        s.get_ref()
                    ),
                );
                None
            }
        });
    let length = if is_sql {
        for key in ["duration", "transactions", "jobs"] {
            if let Some(v) = w.get(key) {
                errs.push(
                    &v.span(),
                    format!("{ctx} is a SQL script that runs to its end: `{key}` does not apply (use `estimate` for the ETA)"),
                );
            }
        }
        Some(Length::ToCompletion {
            estimate_secs: estimate.unwrap_or(SQL_DEFAULT_ESTIMATE_SECS),
        })
    } else {
        if let Some(v) = w.get("estimate") {
            errs.push(
                &v.span(),
                format!("`estimate` applies to SQL scripts only; {ctx} runs for its `duration`"),
            );
        }
        match (
            duration,
            transactions,
            w.get("duration").is_some() || w.get("transactions").is_some(),
        ) {
            (Some(d), None, _) => Some(Length::Seconds(d)),
            (None, Some(t), _) => Some(Length::Transactions(t)),
            (Some(_), Some(_), _) => {
                errs.push(
                    span,
                    format!("{ctx} gives both `duration` and `transactions`; give one"),
                );
                None
            }
            (None, None, true) => None,
            (None, None, false) => {
                errs.push(
                    span,
                    format!("{ctx} has no `duration` (e.g. \"60s\") or `transactions`"),
                );
                None
            }
        }
    };
    let repeats = w
        .get("repeats")
        .and_then(|v| repeats_value(errs, v, &ctx))
        .unwrap_or(d.repeats);
    let warmup = w
        .get("warmup")
        .and_then(|v| warmup_value(errs, v, &ctx))
        .unwrap_or(d.warmup);
    let progress = w.bool(errs, "progress").unwrap_or(d.progress);
    let drop_caches = w.bool(errs, "drop_caches").unwrap_or(d.drop_caches);
    let run_timeout = match w.get("run_timeout") {
        Some(v) => run_timeout_value(errs, v, &ctx).map(|n| (n, v.span())),
        None => d.run_timeout.clone(),
    };
    // A timed run killed before its duration is up would fail every cell.
    if let (Some((limit, at)), Some(Length::Seconds(secs))) = (&run_timeout, &length) {
        if limit <= secs {
            errs.push(
                at,
                format!(
                    "`run_timeout` ({limit} s) is not longer than the `duration` of {ctx} ({secs} s): every run would be killed; valid: more than {secs} s, e.g. \"{}s\"",
                    secs.saturating_add(60)
                ),
            );
        }
    }
    let rate = w
        .int(errs, "rate", 1, MAX_RATE)
        .map(|n| *n.get_ref() as u32);
    let latency_limit_ms = w.get("latency_limit").and_then(|v| {
        let ms = v.get_ref().as_str().and_then(parse_millis);
        if ms.is_none() {
            errs.push(
                &v.span(),
                format!(
                    "`latency_limit` in {ctx} must be a time such as \"50ms\" or \"2s\" (1 ms to 1 h): pgbench counts slower transactions apart (-L)"
                ),
            );
        }
        ms
    });
    if is_sql && (rate.is_some() || latency_limit_ms.is_some()) {
        if let Some(v) = w.get("rate").or_else(|| w.get("latency_limit")) {
            errs.push(
                &v.span(),
                format!(
                    "`rate` and `latency_limit` in {ctx} are pgbench's (-R, -L): a sql_script runs through psql; use builtin or pgbench_script"
                ),
            );
        }
    }
    let (latency_log, per_statement) = latency_keys(errs, &w, &ctx, is_sql);
    if errs.list.len() > before {
        return None;
    }
    Some(Workload {
        name: name?,
        kind: kind?,
        scale,
        clients,
        jobs,
        length: length?,
        repeats,
        warmup,
        progress,
        drop_caches,
        run_timeout: run_timeout.map(|(n, _)| n),
        rate,
        latency_limit_ms,
        latency_log,
        per_statement,
    })
}

/// `latency_log`, `sampling_rate` and `per_statement`: pgbench's `-l
/// --sampling-rate` and `-r`.
fn latency_keys(
    errs: &mut Errors<'_>,
    w: &Tbl<'_, '_>,
    ctx: &str,
    is_sql: bool,
) -> (Option<SamplingRate>, bool) {
    let log = w.bool(errs, "latency_log").unwrap_or(false);
    let per_statement = w.bool(errs, "per_statement").unwrap_or(false);
    let rate = w.get("sampling_rate").and_then(|v| {
        let text = match v.get_ref() {
            DeValue::Float(f) => Some(f.as_str().replace('_', "")),
            DeValue::Integer(i) if i.radix() == 10 => Some(i.as_str().replace('_', "")),
            _ => None,
        };
        let r = text
            .and_then(|t| t.parse::<f64>().ok())
            .and_then(SamplingRate::from_f64);
        if r.is_none() {
            errs.push(
                &v.span(),
                format!(
                    "`sampling_rate` in {ctx} must be a number more than 0 and at most 1 (e.g. 0.1: one transaction in ten logged), at least 0.000001; valid: 0 < sampling_rate <= 1"
                ),
            );
        }
        r.map(|r| (r, v.span()))
    });
    if let Some((_, at)) = &rate {
        if !log {
            errs.push(
                at,
                format!("`sampling_rate` in {ctx} applies to the per-transaction log: add `latency_log = true`"),
            );
        }
    }
    if is_sql && (log || per_statement) {
        if let Some(v) = w.get("latency_log").or_else(|| w.get("per_statement")) {
            errs.push(
                &v.span(),
                format!(
                    "`latency_log` and `per_statement` in {ctx} are pgbench's (-l, -r): a sql_script runs through psql, which times each statement already; use builtin or pgbench_script"
                ),
            );
        }
    }
    (
        log.then(|| rate.map_or(SamplingRate::ALL, |(r, _)| r)),
        per_statement,
    )
}

/// The highest `rate` (pgbench -R, transactions per second in all).
pub const MAX_RATE: i64 = 10_000_000;

/// "50ms" or "2s" as milliseconds, 1 ms to 1 h.
fn parse_millis(s: &str) -> Option<u32> {
    let (n, unit) = match s.strip_suffix("ms") {
        Some(n) => (n, 1),
        None => (s.strip_suffix('s')?, 1000),
    };
    if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) || n.len() > 7 {
        return None;
    }
    let ms = n.parse::<u32>().ok()?.checked_mul(unit)?;
    (1..=3_600_000).contains(&ms).then_some(ms)
}

/// Most counted repeats a client count may ask for.
pub const MAX_REPEATS: i64 = 1000;
/// Most warm-up runs per client count.
pub const MAX_WARMUP: i64 = 100;

/// `repeats = 3` or `repeats = { min = 3, max = 10, target_ci = "2%" }`.
fn repeats_value(errs: &mut Errors<'_>, v: &Val<'_>, ctx: &str) -> Option<Repeats> {
    match v.get_ref() {
        DeValue::Integer(_) => int_value(errs, v, &format!("`repeats` in {ctx}"), 1, MAX_REPEATS)
            .map(|n| Repeats::fixed(*n.get_ref() as u32)),
        DeValue::Table(t) => {
            let what = format!("`repeats` in {ctx}");
            let tbl = Tbl {
                t,
                span: &v.span(),
                ctx: &what,
            };
            tbl.check_keys(errs, &["min", "max", "target_ci"]);
            let min = tbl
                .int(errs, "min", 2, MAX_REPEATS)
                .map(|n| *n.get_ref() as u32);
            let max = tbl.int(errs, "max", 2, MAX_REPEATS);
            let target = tbl.str(errs, "target_ci").and_then(|s| {
                let t = CiTarget::parse(s.get_ref());
                if t.is_none() {
                    errs.push(
                        &s.span(),
                        format!(
                            "`target_ci` in {what} is \"{}\"; valid: a share of the mean from \"0.01%\" to \"50%\", e.g. \"2%\" (95% CI half-width)",
                            s.get_ref()
                        ),
                    );
                }
                t
            });
            let mut missing = Vec::new();
            for key in ["min", "max", "target_ci"] {
                if tbl.get(key).is_none() {
                    missing.push(key);
                }
            }
            if !missing.is_empty() {
                errs.push(
                    &v.span(),
                    format!(
                        "{what} lacks {}; adaptive repeats need all three, e.g. {{ min = 3, max = 10, target_ci = \"2%\" }} (or give a plain number)",
                        missing.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")
                    ),
                );
                return None;
            }
            let (min, max, target) = (min?, max?, target?);
            let max_v = *max.get_ref() as u32;
            if max_v < min {
                errs.push(
                    &max.span(),
                    format!("`max` in {what} is {max_v}, below `min` = {min}; valid: {min}..={MAX_REPEATS}"),
                );
                return None;
            }
            Some(Repeats {
                min,
                max: max_v,
                target_ci: Some(target),
            })
        }
        other => {
            errs.push(
                &v.span(),
                format!(
                    "`repeats` in {ctx} must be a number (e.g. 3) or a table {{ min = 3, max = 10, target_ci = \"2%\" }}, found {}",
                    type_name(other)
                ),
            );
            None
        }
    }
}

/// `warmup = 2`, or `true` (1) / `false` (0).
fn warmup_value(errs: &mut Errors<'_>, v: &Val<'_>, ctx: &str) -> Option<u32> {
    match v.get_ref() {
        DeValue::Boolean(b) => Some(*b as u32),
        DeValue::Integer(_) => int_value(errs, v, &format!("`warmup` in {ctx}"), 0, MAX_WARMUP)
            .map(|n| *n.get_ref() as u32),
        other => {
            errs.push(
                &v.span(),
                format!(
                    "`warmup` in {ctx} must be a number of warm-up runs (0..={MAX_WARMUP}) or true/false, found {}",
                    type_name(other)
                ),
            );
            None
        }
    }
}

/// A rule value: a scalar or an array of them, each with its span.
fn rule_values(errs: &mut Errors<'_>, v: &Val<'_>, what: &str) -> Vec<Spanned<String>> {
    match v.get_ref() {
        DeValue::Array(_) => str_list_value(errs, v, what).unwrap_or_default(),
        DeValue::String(s) => vec![Spanned::new(v.span(), s.to_string())],
        other => {
            errs.push(
                &v.span(),
                format!(
                    "{what} must be a string or an array of strings, found {}",
                    type_name(other)
                ),
            );
            Vec::new()
        }
    }
}

fn or_none(names: &[String]) -> String {
    if names.is_empty() {
        "(none defined)".to_string()
    } else {
        names.join(", ")
    }
}

fn reference(src: &Source, kind: RefKind, s: &Spanned<String>) -> (RefKind, String, ConfigError) {
    (
        kind,
        s.get_ref().clone(),
        src.error(&s.span(), String::new()),
    )
}

fn rules(
    src: &Source,
    errs: &mut Errors<'_>,
    root: &Tbl<'_, '_>,
    key: &str,
    names: &Names<'_>,
    refs: &mut Vec<(RefKind, String, ConfigError)>,
) -> Vec<Rule> {
    let Some(v) = root.get(key) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (t, span) in tables(errs, v, key) {
        let ctx = format!("an `{key}` rule");
        let r = Tbl {
            t,
            span: &span,
            ctx: &ctx,
        };
        r.check_keys(errs, RULE_KEYS);
        if t.is_empty() {
            errs.push(
                &span,
                format!(
                    "{ctx} is empty; give at least one of {}",
                    RULE_KEYS.join(", ")
                ),
            );
            continue;
        }
        let mut rule = Rule::default();
        for (k, val) in t.iter() {
            let what = format!("`{}` in {ctx}", k.get_ref());
            match k.get_ref().as_ref() {
                "host" => {
                    for s in rule_values(errs, val, &what) {
                        refs.push(reference(src, RefKind::Host, &s));
                        rule.host.push(s.into_inner());
                    }
                }
                "host_tag" => {
                    for s in rule_values(errs, val, &what) {
                        refs.push(reference(src, RefKind::Tag, &s));
                        rule.host_tag.push(s.into_inner());
                    }
                }
                "host_os" => {
                    for s in rule_values(errs, val, &what) {
                        match Os::parse(s.get_ref()) {
                            Some(o) => rule.host_os.push(o),
                            None => errs.push(
                                &s.span(),
                                format!(
                                    "unknown os `{}` in {ctx}; valid: {}",
                                    s.get_ref(),
                                    Os::names(", ")
                                ),
                            ),
                        }
                    }
                }
                "fs_type" => {
                    for s in rule_values(errs, val, &what) {
                        match FsType::parse(s.get_ref()) {
                            Some(o) => rule.fs_type.push(o),
                            None => errs.push(
                                &s.span(),
                                format!(
                                    "unknown filesystem type `{}` in {ctx}; valid: ext3, ext4, xfs, btrfs, zfs, ufs, hammer, hammer2",
                                    s.get_ref()
                                ),
                            ),
                        }
                    }
                }
                "filesystem" => {
                    for s in rule_values(errs, val, &what) {
                        if !names.fs.contains(s.get_ref()) {
                            errs.push(
                                &s.span(),
                                format!(
                                    "{ctx} names filesystem `{}`, which the matrix does not define; valid: {}",
                                    s.get_ref(),
                                    or_none(names.fs)
                                ),
                            );
                        }
                        rule.filesystem.push(s.into_inner());
                    }
                }
                "workload" => {
                    for s in rule_values(errs, val, &what) {
                        if !names.wl.contains(s.get_ref()) {
                            errs.push(
                                &s.span(),
                                format!(
                                    "{ctx} names workload `{}`, which the matrix does not define; valid: {}",
                                    s.get_ref(),
                                    or_none(names.wl)
                                ),
                            );
                        }
                        rule.workload.push(s.into_inner());
                    }
                }
                "clients" => match val.get_ref() {
                    DeValue::Array(a) => {
                        for item in a.iter() {
                            if let Some(n) = int_value(
                                errs,
                                item,
                                &format!("a client count in {ctx}"),
                                1,
                                10_000,
                            ) {
                                rule.clients.push(*n.get_ref() as u32);
                            }
                        }
                    }
                    _ => {
                        if let Some(n) = int_value(errs, val, &what, 1, 10_000) {
                            rule.clients.push(*n.get_ref() as u32);
                        }
                    }
                },
                _ => {}
            }
        }
        if key == "include" && rule.clients.is_empty() && r.get("clients").is_none() {
            errs.push(
                &span,
                "an `include` rule adds client counts to the combinations it matches: give `clients`; to restrict cells use `exclude` or `hosts`",
            );
            continue;
        }
        out.push(rule);
    }
    out
}

fn host_filter(
    src: &Source,
    errs: &mut Errors<'_>,
    v: &Val<'_>,
    refs: &mut Vec<(RefKind, String, ConfigError)>,
) -> HostFilter {
    let DeValue::Table(t) = v.get_ref() else {
        return HostFilter::default();
    };
    let span = v.span();
    let h = Tbl {
        t,
        span: &span,
        ctx: "[hosts]",
    };
    h.check_keys(errs, &["names", "tags", "os"]);
    let mut f = HostFilter::default();
    for s in h.str_list(errs, "names").unwrap_or_default() {
        refs.push(reference(src, RefKind::Host, &s));
        f.names.push(s.into_inner());
    }
    for s in h.str_list(errs, "tags").unwrap_or_default() {
        refs.push(reference(src, RefKind::Tag, &s));
        f.tags.push(s.into_inner());
    }
    for s in h.str_list(errs, "os").unwrap_or_default() {
        match Os::parse(s.get_ref()) {
            Some(o) => f.os.push(o),
            None => errs.push(
                &s.span(),
                format!(
                    "unknown os `{}` in [hosts]; valid: {}",
                    s.get_ref(),
                    Os::names(", ")
                ),
            ),
        }
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        for (s, want) in [
            ("10s", Some(10)),
            ("15m", Some(900)),
            ("2h", Some(7200)),
            ("1h30m", Some(5400)),
            ("10", None),
            ("", None),
            ("0s", None),
            ("5x", None),
            ("m", None),
            ("30d", Some(2_592_000)),
            ("30d1s", None),
            ("18446744073709551615s", None),
            ("99999999999999999999h", None),
        ] {
            assert_eq!(parse_duration(s), want, "{s:?}");
        }
    }
}

#[cfg(test)]
mod vary_tests {
    use super::*;

    fn parse(text: &str) -> Result<Matrix, ConfigErrors> {
        Matrix::parse(Path::new("m.toml"), text.to_string())
    }

    const WL: &str = "[[workload]]\nname = \"w\"\nbuiltin = \"tpcb-like\"\nscale = 1\nclients = [1]\nduration = \"5s\"\n";

    #[test]
    fn rate_and_latency_limit_are_pgbench_options_of_a_workload() {
        let fs = "[[filesystem]]\nname = \"e\"\ntype = \"ext4\"\n";
        let m = parse(&format!(
            "name = \"m\"\n{WL}rate = 200\nlatency_limit = \"50ms\"\n{fs}"
        ))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(m.workloads[0].rate, Some(200));
        assert_eq!(m.workloads[0].latency_limit_ms, Some(50));
        let m = parse(&format!("name = \"m\"\n{WL}latency_limit = \"2s\"\n{fs}"))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (m.workloads[0].rate, m.workloads[0].latency_limit_ms),
            (None, Some(2000))
        );
        for (extra, want) in [
            ("rate = 0\n", "`rate`"),
            ("rate = \"fast\"\n", "`rate`"),
            ("latency_limit = \"50\"\n", "\"50ms\" or \"2s\""),
            ("latency_limit = \"0ms\"\n", "1 ms to 1 h"),
            ("latency_limit = \"-5ms\"\n", "1 ms to 1 h"),
            ("latency_limit = \"2h\"\n", "1 ms to 1 h"),
        ] {
            let e = parse(&format!("name = \"m\"\n{WL}{extra}{fs}"))
                .expect_err(extra)
                .to_string();
            assert!(e.contains(want), "{extra}: {e}");
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("load.sql"), "SELECT 1;\n").unwrap();
        let sql = "[[workload]]\nname = \"s\"\nsql_script = \"load.sql\"\nrate = 10\n";
        let e = Matrix::parse(
            &dir.path().join("m.toml"),
            format!("name = \"m\"\n{sql}{fs}"),
        )
        .expect_err("rate on a sql script")
        .to_string();
        assert!(e.contains("psql"), "{e}");
        assert_eq!(parse_millis("1500ms"), Some(1500));
        assert_eq!(parse_millis("3600s"), Some(3_600_000));
        assert_eq!(parse_millis("3601s"), None);
        assert_eq!(parse_millis("1.5s"), None);
    }

    #[test]
    fn latency_log_sampling_rate_and_per_statement_of_a_workload() {
        let fs = "[[filesystem]]\nname = \"e\"\ntype = \"ext4\"\n";
        let wl = |extra: &str| parse(&format!("name = \"m\"\n{WL}{extra}{fs}"));
        let m = wl("latency_log = true\nsampling_rate = 0.1\nper_statement = true\n")
            .unwrap_or_else(|e| panic!("{e}"));
        let r = m.workloads[0].latency_log.expect("latency_log");
        assert_eq!((r.to_string(), r.fraction()), ("0.1".to_string(), 0.1));
        assert!(m.workloads[0].per_statement);
        let m = wl("latency_log = true\n").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(m.workloads[0].latency_log, Some(SamplingRate::ALL));
        assert_eq!(SamplingRate::ALL.to_string(), "1");
        let m = wl("latency_log = true\nsampling_rate = 1\n").unwrap_or_else(|e| panic!("{e}"));
        assert!(m.workloads[0].latency_log.unwrap().is_all());
        let m =
            wl("latency_log = true\nsampling_rate = 0.000_001\n").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(m.workloads[0].latency_log.unwrap().to_string(), "0.000001");
        let m = wl("").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (m.workloads[0].latency_log, m.workloads[0].per_statement),
            (None, false)
        );
        for (extra, want) in [
            (
                "latency_log = true\nsampling_rate = 0\n",
                "`sampling_rate` in [[workload]]",
            ),
            (
                "latency_log = true\nsampling_rate = 0.0\n",
                "0 < sampling_rate <= 1",
            ),
            (
                "latency_log = true\nsampling_rate = 1.5\n",
                "0 < sampling_rate <= 1",
            ),
            (
                "latency_log = true\nsampling_rate = -0.1\n",
                "0 < sampling_rate <= 1",
            ),
            (
                "latency_log = true\nsampling_rate = 0.0000001\n",
                "at least 0.000001",
            ),
            (
                "latency_log = true\nsampling_rate = nan\n",
                "0 < sampling_rate <= 1",
            ),
            (
                "latency_log = true\nsampling_rate = \"0.1\"\n",
                "0 < sampling_rate <= 1",
            ),
            ("sampling_rate = 0.1\n", "add `latency_log = true`"),
            ("latency_log = 1\n", "`latency_log` in [[workload]]"),
            (
                "per_statement = \"yes\"\n",
                "`per_statement` in [[workload]]",
            ),
        ] {
            let e = wl(extra).expect_err(extra).to_string();
            assert!(e.contains(want), "{extra}: {e}");
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("load.sql"), "SELECT 1;\n").unwrap();
        let sql = "[[workload]]\nname = \"s\"\nsql_script = \"load.sql\"\nper_statement = true\n";
        let e = Matrix::parse(
            &dir.path().join("m.toml"),
            format!("name = \"m\"\n{sql}{fs}"),
        )
        .expect_err("-r on a sql script")
        .to_string();
        assert!(e.contains("`per_statement`") && e.contains("psql"), "{e}");
    }

    #[test]
    fn run_timeout_from_the_matrix_or_the_workload_and_longer_than_the_run() {
        let fs = "[[filesystem]]\nname = \"e\"\ntype = \"ext4\"\n";
        let m = parse(&format!("name = \"m\"\nrun_timeout = \"1m\"\n{WL}{fs}"))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(m.workloads[0].run_timeout, Some(60));
        let m = parse(&format!(
            "name = \"m\"\nrun_timeout = \"1m\"\n{WL}run_timeout = \"20s\"\n{fs}"
        ))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(m.workloads[0].run_timeout, Some(20));
        let m = parse(&format!("name = \"m\"\n{WL}{fs}")).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(m.workloads[0].run_timeout, None);
        // Not longer than the 5 s duration, from either place; not a duration.
        for (text, want) in [
            (
                format!("name = \"m\"\n{WL}run_timeout = \"5s\"\n{fs}"),
                "not longer than the `duration`",
            ),
            (
                format!("name = \"m\"\nrun_timeout = \"3s\"\n{WL}{fs}"),
                "valid: more than 5 s",
            ),
            (
                format!("name = \"m\"\n{WL}run_timeout = 30\n{fs}"),
                "must be a duration such as",
            ),
            (
                format!("name = \"m\"\n{WL}run_timeout = \"31d\"\n{fs}"),
                "at most 30d",
            ),
        ] {
            match parse(&text) {
                Ok(_) => panic!("accepted:\n{text}"),
                Err(e) => assert!(e.to_string().contains(want), "{want:?} not in {e}"),
            }
        }
    }

    #[test]
    fn vary_expands_in_key_order_and_interpolates() {
        let m = parse(&format!(
            "name = \"m\"\n{WL}[[filesystem]]\nname = \"b-{{compress}}-{{commit}}\"\ntype = \"btrfs\"\nmount_options = [\"compress={{compress}}\", \"commit={{commit}}\"]\npostgres = {{ wal_compression = \"{{compress}}\" }}\nvary = {{ compress = [\"zstd\", \"lzo\"], commit = [5, 30] }}\n[[filesystem]]\nname = \"z-{{recordsize}}\"\ntype = \"zfs\"\nproperties = {{ atime = \"off\" }}\nvary = {{ recordsize = [\"8k\", \"128k\"] }}\n"
        ));
        let m = match m {
            Ok(m) => m,
            Err(e) => panic!("{e}"),
        };
        let got: Vec<String> = m
            .filesystems
            .iter()
            .map(|f| {
                format!(
                    "{} mount={:?} props={:?} pg={:?}",
                    f.name,
                    f.mount_options
                        .iter()
                        .map(|o| o.as_str())
                        .collect::<Vec<_>>(),
                    f.properties
                        .iter()
                        .map(|p| format!("{}={}", p.name, p.value))
                        .collect::<Vec<_>>(),
                    f.postgres
                        .iter()
                        .map(|p| format!("{}={}", p.name, p.value))
                        .collect::<Vec<_>>()
                )
            })
            .collect();
        // Keys in sorted order (commit before compress): commit varies slowest.
        assert_eq!(
            got,
            [
                "b-zstd-5 mount=[\"compress=zstd\", \"commit=5\"] props=[] pg=[\"wal_compression=zstd\"]",
                "b-lzo-5 mount=[\"compress=lzo\", \"commit=5\"] props=[] pg=[\"wal_compression=lzo\"]",
                "b-zstd-30 mount=[\"compress=zstd\", \"commit=30\"] props=[] pg=[\"wal_compression=zstd\"]",
                "b-lzo-30 mount=[\"compress=lzo\", \"commit=30\"] props=[] pg=[\"wal_compression=lzo\"]",
                "z-8k mount=[] props=[\"atime=off\", \"recordsize=8k\"] pg=[]",
                "z-128k mount=[] props=[\"atime=off\", \"recordsize=128k\"] pg=[]",
            ]
        );
    }

    #[test]
    fn hammer2_takes_only_its_compression_as_a_property() {
        let m = parse(&format!(
            "name = \"m\"\n{WL}[[filesystem]]\nname = \"h-{{c}}\"\ntype = \"hammer2\"\nproperties = {{ compression = \"zlib:{{c}}\" }}\nvary = {{ c = [6, 9] }}\n"
        ))
        .unwrap_or_else(|e| panic!("{e}"));
        let got: Vec<String> = m
            .filesystems
            .iter()
            .map(|f| format!("{}={}", f.name.as_str(), f.properties[0].value.as_str()))
            .collect();
        assert_eq!(got, ["h-6=zlib:6", "h-9=zlib:9"]);
        for (props, want) in [
            (
                "properties = { compression = \"zstd\" }",
                "is not one of none, autozero, lz4",
            ),
            ("properties = { recordsize = \"8k\" }", "only `compression`"),
            (
                "pool_properties = { ashift = \"12\" }",
                "are ZFS properties",
            ),
        ] {
            let e = parse(&format!(
                "name = \"m\"\n{WL}[[filesystem]]\nname = \"h\"\ntype = \"hammer2\"\n{props}\n"
            ));
            let Err(e) = e else {
                panic!("{props}: accepted")
            };
            assert!(e.to_string().contains(want), "{props}: {e}");
        }
        // Other types still refuse `properties`.
        let e = parse(&format!(
            "name = \"m\"\n{WL}[[filesystem]]\nname = \"h\"\ntype = \"hammer\"\nproperties = {{ compression = \"lz4\" }}\n"
        ));
        assert!(e.is_err_and(|e| e.to_string().contains("are ZFS properties")));
    }

    #[test]
    fn numbers_keep_their_value_and_paths_are_not_zfs_properties() {
        let m = parse(&format!(
            "name = \"m\"\n{WL}[postgres]\nmax_connections = 0x20\nwork_mem = 0o10\n[[filesystem]]\nname = \"b\"\ntype = \"btrfs\"\nmount_options = [\"commit={{c}}\"]\nvary = {{ c = [0b101] }}\n"
        ))
        .unwrap_or_else(|e| panic!("{e}"));
        let got: Vec<(String, String)> = m
            .postgres
            .iter()
            .map(|s| (s.name.as_str().to_string(), s.value.as_str().to_string()))
            .collect();
        assert!(
            got.contains(&("max_connections".into(), "32".into())),
            "{got:?}"
        );
        assert!(got.contains(&("work_mem".into(), "8".into())), "{got:?}");
        assert_eq!(m.filesystems[0].mount_options[0].as_str(), "commit=5");
        for (props, where_) in [
            ("properties = { mountpoint = \"/etc\" }", "properties"),
            ("vary = { cachefile = [\"/etc/x\"] }", "vary"),
            ("pool_properties = { altroot = \"/\" }", "pool_properties"),
        ] {
            let e = parse(&format!(
                "name = \"m\"\n{WL}[[filesystem]]\nname = \"z\"\ntype = \"zfs\"\n{props}\n"
            ));
            let Err(e) = e else {
                panic!("{where_}: accepted a path-valued ZFS property")
            };
            assert!(e.to_string().contains("is refused"), "{where_}: {e}");
        }
    }

    #[test]
    fn a_vary_too_large_is_refused_before_it_is_built() {
        let vals = |n: usize| {
            (0..n)
                .map(|i| format!("\"v{i}\""))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let e = parse(&format!(
            "name = \"m\"\n{WL}[[filesystem]]\nname = \"z-{{a}}-{{b}}\"\ntype = \"zfs\"\nvary = {{ a = [{}], b = [{}] }}\n",
            vals(40),
            vals(40)
        ));
        let Err(e) = e else {
            panic!("accepted 1600 variants")
        };
        assert!(
            e.to_string()
                .contains("makes 40 × 40 variants; at most 1000"),
            "{e}"
        );
    }

    #[test]
    fn a_plan_larger_than_max_cells_is_refused_with_the_count() {
        let inv = crate::config::Inventory::parse(
            Path::new("inv.toml"),
            "[defaults]\nos = \"linux\"\n[[host]]\nname = \"a\"\naddress = \"10.0.0.1\"\ndevices = [\"/dev/sdb\"]\n[[host]]\nname = \"b\"\naddress = \"10.0.0.2\"\ndevices = [\"/dev/sdb\"]\n".to_string(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let text = |max: &str| {
            format!("name = \"m\"\n{max}repeats = 5\n[[filesystem]]\nname = \"e\"\ntype = \"ext4\"\n[[workload]]\nname = \"w\"\nbuiltin = \"select-only\"\nscale = 1\nclients = [1, 2]\nduration = \"5s\"\n")
        };
        // 2 hosts × 1 variant × 2 clients × 5 repeats = 20 cells.
        let m = parse(&text("max_cells = 19\n")).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(m.most_cells(2), 20);
        let e = m.check_against(&inv).expect_err("20 > 19");
        let e = e.to_string();
        assert!(
            e.contains("m.toml:2:13:") && e.contains("up to 20 cells on the 2 hosts"),
            "{e}"
        );
        let m = parse(&text("max_cells = 20\n")).unwrap_or_else(|e| panic!("{e}"));
        assert!(m.check_against(&inv).is_ok());
        let m = parse(&text("")).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(m.max_cells, DEFAULT_MAX_CELLS);
        assert!(parse(&text("max_cells = 0\n")).is_err());
    }

    #[test]
    fn duplicate_variant_names_across_entries() {
        let e = parse(&format!(
            "name = \"m\"\n{WL}[[filesystem]]\nname = \"z-on\"\ntype = \"zfs\"\n[[filesystem]]\nname = \"z-{{compression}}\"\ntype = \"zfs\"\nvary = {{ compression = [\"off\", \"on\"] }}\n"
        ));
        let Err(e) = e else {
            panic!("accepted duplicate names")
        };
        assert!(
            e.to_string()
                .contains("m.toml:11:1: error: duplicate filesystem variant name `z-on`"),
            "{e}"
        );
    }

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

    #[test]
    fn repeats_and_warmup_forms() {
        let m = parse(
            r#"
name = "m"
repeats = { min = 3, max = 10, target_ci = "2%" }
warmup = true
[[filesystem]]
name = "e"
type = "ext4"
[[workload]]
name = "a"
builtin = "select-only"
scale = 1
clients = [1]
duration = "5s"
[[workload]]
name = "b"
builtin = "select-only"
scale = 1
clients = [1]
duration = "5s"
repeats = 4
warmup = 3
"#,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let a = &m.workloads[0];
        assert_eq!(
            (a.repeats.min, a.repeats.max, a.repeats.target_ci, a.warmup),
            (3, 10, CiTarget::parse("2%"), 1)
        );
        assert!(a.repeats.is_adaptive());
        let b = &m.workloads[1];
        assert_eq!((b.repeats, b.warmup), (Repeats::fixed(4), 3));
        assert!(!b.repeats.is_adaptive());
        // min = max with a target is a fixed count in effect.
        let same = Repeats {
            min: 3,
            max: 3,
            target_ci: CiTarget::parse("2%"),
        };
        assert!(!same.is_adaptive());
        assert_eq!(same.to_string(), "3");
    }

    #[test]
    fn settings_that_run_commands_need_the_inventory_s_consent_per_host() {
        let inv = Inventory::parse(
            Path::new("/i/inv.toml"),
            "[defaults]\nos = \"linux\"\n[[host]]\nname = \"a\"\naddress = \"10.0.0.1\"\ndevices = [\"/dev/sdb\"]\nallow_postgres_settings = [\"Shared_Preload_Libraries\"]\n[[host]]\nname = \"b\"\naddress = \"10.0.0.2\"\ndevices = [\"/dev/sdb\"]\n".to_string(),
        )
        .expect("inventory");
        let m = parse(&format!(
            "name = \"m\"\n{WL}[postgres]\nArchive_Command = \"true\"\n[[filesystem]]\nname = \"e\"\ntype = \"ext4\"\npostgres = {{ shared_preload_libraries = \"pg_stat_statements\", Work_Mem = \"4MB\" }}\n"
        ))
        .expect("matrix");
        // Names are stored as PostgreSQL compares them.
        let names: Vec<&str> = m.filesystems[0]
            .postgres
            .iter()
            .map(|s| s.name.as_str())
            .collect();
        assert_eq!(names, ["shared_preload_libraries", "work_mem"]);
        assert_eq!(m.postgres[0].name.as_str(), "archive_command");
        let e = m.check_against(&inv).expect_err("refused").to_string();
        let lines: Vec<&str> = e.lines().collect();
        assert_eq!(lines.len(), 2, "{e}");
        assert!(
            lines[0].starts_with("m.toml:9:1: error: postgresql setting `archive_command` in [postgres] runs a command on the host and is refused on hosts a, b of /i/inv.toml"),
            "{e}"
        );
        assert!(
            lines[0].ends_with("valid: add allow_postgres_settings = [\"archive_command\"] to the [[host]] (or [defaults]) of the inventory"),
            "{e}"
        );
        assert!(
            lines[1].contains("setting `shared_preload_libraries` in filesystem `e` loads code into the server and is refused on host b of"),
            "{e}"
        );
        // fsmatrix's own settings are refused in the matrix itself; a
        // name set twice in two cases is one setting set twice.
        let e = parse(&format!(
            "name = \"m\"\n{WL}[postgres]\nPort = 5433\nwork_mem = \"1MB\"\nWORK_MEM = \"2MB\"\n[[filesystem]]\nname = \"e\"\ntype = \"ext4\"\n"
        ))
        .expect_err("refused")
        .to_string();
        assert!(
            e.contains("setting `Port` in [postgres] is set by fsmatrix itself"),
            "{e}"
        );
        assert!(
            e.contains("settings `WORK_MEM` and `work_mem` in [postgres] are one setting"),
            "{e}"
        );
        // An inventory cannot allow fsmatrix's own settings or plain ones.
        let e = Inventory::parse(
            Path::new("/i/inv.toml"),
            "[defaults]\nos = \"linux\"\nallow_postgres_settings = [\"port\", \"shared_buffers\"]\n[[host]]\nname = \"a\"\naddress = \"10.0.0.1\"\ndevices = [\"/dev/sdb\"]\n".to_string(),
        )
        .expect_err("refused")
        .to_string();
        assert!(
            e.contains(
                "/i/inv.toml:3:28: error: postgresql setting `port` is set by fsmatrix itself"
            ),
            "{e}"
        );
        assert!(e.contains("`shared_buffers` needs no allowing"), "{e}");
    }
}
