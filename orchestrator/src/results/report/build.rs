//! The report, computed once: what every format shows.  [`build_report`]
//! turns cell records into a [`Report`] (groups from
//! [`crate::results::analysis::stats`], comparisons from
//! [`crate::results::analysis::compare`], order effects from
//! [`crate::results::analysis::drift`]); the renderers are pure over it.
use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::config::{Correction, Looks, VerdictRule};
use crate::model::{CellResult, CellStatus, RunMeasures};
use crate::results::analysis::compare::{self, level_text, Comparison, LogRatio, ALPHA};
use crate::results::analysis::drift::{self, Drift, SizeCheck};
use crate::results::analysis::sequential;
use crate::results::analysis::stats::{group_stats, GroupKey, GroupStats, Metric, StatsOptions};
use crate::results::bundle::read::ChecksumCheck;

/// The label a stand-in host's rows carry in every output format.
pub fn standin_label(host: &str, os: &str) -> String {
    format!("{host} [{os} stand-in]")
}

/// Relabel the cells of stand-in hosts ([`standin_label`]) so that no table,
/// plot or CSV row shows them as real hosts.
pub fn label_standins(cells: &mut [CellResult], standins: &BTreeMap<String, String>) {
    for c in cells {
        if let Some(os) = standins.get(&c.params.host) {
            c.params.host = standin_label(&c.params.host, os);
        }
    }
}

/// Say in the report's notes which hosts were stand-ins.
pub fn mark_standins(r: &mut Report, standins: &BTreeMap<String, String>) {
    if standins.is_empty() {
        return;
    }
    let list: Vec<String> = standins
        .iter()
        .map(|(h, os)| standin_label(h, os))
        .collect();
    r.notes.insert(
        0,
        format!(
            "STAND-IN HOSTS: {} — Linux lab hosts dressed as a BSD to test fsmatrix's BSD scripts (docs/standin-hosts.md). Their numbers measure Linux, not that OS: never compare them with real hosts.",
            list.join(", ")
        ),
    );
}

/// Record the checks in `r`, and say first in its notes (the report's
/// header) whether every bundle's checksums were verified.
pub fn mark_checksums(r: &mut Report, checks: &[ChecksumCheck]) {
    let mut said = Vec::new();
    let (ok, bad): (Vec<&ChecksumCheck>, Vec<&ChecksumCheck>) =
        checks.iter().partition(|c| c.verified);
    for c in &bad {
        said.push(format!(
            "NOT VERIFIED: bundle {} does not verify ({} problem{}: {}); its numbers may not be the ones measured (reported with --allow-unverified).",
            c.bundle,
            c.problems.len(),
            if c.problems.len() == 1 { "" } else { "s" },
            c.problems.join("; ")
        ));
    }
    if !ok.is_empty() {
        let names: Vec<&str> = ok.iter().map(|c| c.bundle.as_str()).collect();
        said.push(format!(
            "Checksums verified before reporting: every file of {} matches its bundle's sha256 manifests.",
            names.join(", ")
        ));
    }
    r.notes.splice(0..0, said);
    r.checksums = checks.to_vec();
}

/// One bundle's cells, named for the notes on merged hosts.
#[derive(Debug, Clone, Copy)]
pub struct Source<'a> {
    pub name: &'a str,
    pub cells: &'a [CellResult],
}

/// What the report computes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReportOptions {
    /// Filesystem variant every other is compared with; `None`: the first
    /// variant in matrix order (the order cells appear in the bundles).
    pub baseline: Option<String>,
    pub stats: StatsOptions,
    /// Bundles side by side instead of pooled: every variant of a bundle is
    /// its own row, compared with the same variant of the first bundle on
    /// the same host (a re-run against its original).
    pub by_bundle: bool,
    /// How comparisons are decided: the margin and the correction; `None`:
    /// the bundles' recorded rule ([`super::inputs::ReportInputs::build`]),
    /// else the defaults.
    pub rule: Option<VerdictRule>,
}

/// The row label of `variant` from `bundle` when bundles are side by side.
pub fn by_bundle_label(variant: &str, bundle: &str) -> String {
    format!("{variant} @ {bundle}")
}

/// Errors of building a report.  Messages read after "failed to …".
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("compare against baseline {name:?}: no such filesystem variant in the results; valid: {valid}")]
    UnknownBaseline { name: String, valid: String },
    #[error("put bundles side by side: give at least two bundles (the first is the one the others are compared with)")]
    ByBundleNeedsTwo,
    #[error("put bundles side by side with --baseline: the first bundle given is the baseline; drop --baseline")]
    ByBundleWithBaseline,
    #[error("put bundles side by side: two bundles are both named {name:?} (rows are labelled by bundle folder name); rename or copy one")]
    ByBundleSameName { name: String },
    #[error("pool {first} with {second}: they hold the same run (cell {cell}, started {started}), so one is a copy of the other and its runs would count twice; give each bundle once")]
    SameRuns {
        first: String,
        second: String,
        cell: String,
        started: String,
    },
    #[error("pool the bundles: {differences}; runs of different definitions would count as one group: give --by-bundle to put them side by side")]
    DefinitionsDiffer { differences: String },
}

/// The version of the JSON report's shape ([`Report`] serialised): raised
/// when a field changes meaning or goes away (docs/formats.md, "The report
/// as JSON").  1: before it was written; 2: `verdicts`, one verdict spelling;
/// 3: decided verdicts (faster, slower, equivalent, inconclusive; no
/// "tied"), `difference` and `equivalence` in place of `welch`, adjusted
/// p-values and intervals, `alpha`, `margin`, `correction` and `families`;
/// 4: `sizes` (the smallest variant per host and workload), each row's
/// `on_disk_bytes` read with its filesystem's own measure (ZFS referenced,
/// btrfs used), `sizes_check` with a `kind` and generic byte fields.
pub const REPORT_SCHEMA_VERSION: u32 = 4;

/// Everything a report shows; serialised as is for `--format json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// [`REPORT_SCHEMA_VERSION`].
    pub schema_version: u32,
    pub bundles: Vec<String>,
    /// The baseline asked for with `--baseline`, if any.
    pub baseline_requested: Option<String>,
    pub cv_threshold: f64,
    /// The family-wise error rate of the verdicts.
    pub alpha: f64,
    /// The equivalence margin (`"5%"`) and the correction (`"holm"`).
    #[serde(flatten)]
    pub rule: VerdictRule,
    /// The families the error rate is held over: one per host.
    pub families: Vec<Family>,
    pub trim_start_s: f64,
    pub trim_end_s: f64,
    /// The answer, first in every format: one line per host, workload and
    /// client count ([`super::verdicts`]).
    pub verdicts: Vec<super::verdicts::VerdictLine>,
    /// "Smallest", after the verdicts in every format: one line per host
    /// and workload ([`super::sizes`]).
    pub sizes: Vec<super::sizes::SizeLine>,
    /// Method and blocking notes, in the order shown.
    pub notes: Vec<String>,
    /// Rows whose runs drift or whose first run is an outlier, and rows
    /// whose sizes disagree, in words, in table order ([`drift`]).
    pub warnings: Vec<String>,
    /// One table per (workload, clients), sorted.
    pub tables: Vec<Table>,
    pub warmups_excluded: usize,
    /// Adaptive repeats left out because the CI target was met earlier.
    #[serde(skip_serializing_if = "is_zero")]
    pub not_needed: usize,
    pub problems: Vec<Problem>,
    /// Each bundle's checksums as checked before reporting
    /// ([`crate::results::bundle::read::check_checksums`], [`mark_checksums`]);
    /// empty when not checked.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub checksums: Vec<ChecksumCheck>,
    /// Guests against their physical hosts ([`super::platform`],
    /// [`super::mark_platforms`]); empty when no bundle had a guest.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub platforms: Vec<super::Platform>,
    /// Workloads and variants that bundles put side by side define
    /// otherwise ([`super::pooling`]); empty when they agree.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub definition_differences: Vec<super::pooling::DefinitionDifference>,
    /// What was compared: one row per host (and per set of facts, when
    /// bundles disagree on a host's), and one per variant definition
    /// ([`super::compared`]); empty when nothing was recorded.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub systems: Vec<super::compared::SystemRow>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub variants: Vec<super::compared::VariantRow>,
}

/// A family of comparisons: one host's, over every workload and client
/// count of the report.  Its error rate is held at [`ALPHA`] under the
/// report's correction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Family {
    pub host: String,
    /// Variants against their baseline that were tested.
    pub comparisons: usize,
    /// The leader of a table against each other variant but the baseline,
    /// tested to name it best.
    pub leader_tests: usize,
}

impl Family {
    /// Tests of differences in the family.
    pub fn difference_tests(&self) -> usize {
        self.comparisons + self.leader_tests
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Table {
    pub workload: String,
    pub clients: u32,
    /// What the rows are compared on ([`Metric::of`]: the first row's
    /// metric; every row of a table is compared on it).
    pub metric: Metric,
    /// pgbench `-R` of the workload, when rate-limited.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate: Option<u32>,
    /// Hosts sorted by name; variants are compared within a host only.
    pub hosts: Vec<HostBlock>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HostBlock {
    pub host: String,
    /// The variant the rows are compared with on this host.
    pub baseline: Option<String>,
    /// Named only when it is decided better than every other variant at
    /// the family's error rate (its tests against them are in the family).
    pub winner: Option<String>,
    /// The variant with the best mean, and the raw p-values of its tests
    /// against every other variant but the baseline (`None` in a pair that
    /// cannot be tested): what naming it the winner takes.
    #[serde(skip)]
    pub(super) leader: Option<(String, Vec<Option<f64>>)>,
    /// Variants in matrix order.
    pub rows: Vec<Row>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    pub stats: GroupStats,
    /// `None` on the baseline row itself.
    pub comparison: Option<Comparison>,
    /// Order effects over the counted runs in run order; `None`: not
    /// tested (fewer than [`drift::MIN_RUNS`] runs).
    pub drift: Option<Drift>,
    /// du's on-disk bytes against ZFS's own (see [`drift::size_check`]);
    /// `None` without both.
    pub sizes_check: Option<SizeCheck>,
    /// SQL scripts: this row's median on-disk size (du) ÷ the baseline's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on_disk_vs_baseline: Option<f64>,
    /// This host's variants ran in alternation for this workload and
    /// client count (their runs interleaved in time, in every bundle that
    /// ran two or more of them: `alternated`), so drift hit them alike.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub alternated: bool,
    /// The counted values of the compared metric in repeat order: what a
    /// sequential design's looks are replayed on (not in the JSON: the
    /// cells are).
    #[serde(skip)]
    pub series: Vec<f64>,
}

impl Row {
    /// `lab1 ext4 tpcb c=4`: how the row's warnings name it.
    pub fn label(&self) -> String {
        let k = &self.stats.key;
        drift::row_label(&k.host, &k.filesystem, &k.workload, k.clients)
    }

    /// The row's warnings in words: drift, first-run outlier, sizes.
    pub fn warnings(&self) -> Vec<String> {
        let label = self.label();
        let mut out = match &self.drift {
            Some(d) => {
                drift::drift_sentences(&label, d, self.stats.warmups_excluded, self.alternated)
            }
            None => Vec::new(),
        };
        if let Some(s) = self.sizes_check.as_ref().filter(|s| !s.agree) {
            out.push(drift::size_sentence(&label, s));
        }
        out
    }
    /// The same, a few words each, for the terminal summary.
    pub fn warning_tags(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(d) = &self.drift {
            if d.first_run.outlier {
                out.push("first run an outlier".to_owned());
            }
            if let Some(t) = d.trend.as_ref().filter(|t| t.drift) {
                out.push(format!(
                    "{} {} {:.1}% over its runs",
                    d.metric.name(),
                    if t.change < 0.0 { "fell" } else { "rose" },
                    t.change.abs() * 100.0
                ));
            }
        }
        if self.sizes_check.as_ref().is_some_and(|s| !s.agree) {
            out.push("sizes disagree".to_owned());
        }
        out
    }
}

/// A cell that failed or did not run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Problem {
    pub cell_id: String,
    pub host: String,
    pub filesystem: String,
    pub workload: String,
    pub clients: u32,
    pub repeat: u32,
    pub status: String,
    pub detail: String,
}

/// [`method_note`] of a sequential design.
fn sequential_note(rule: VerdictRule, looks: Looks, family: &str) -> String {
    let correction = match rule.correction {
        Correction::Holm => "Bonferroni at every look (the first step of Holm's): each test at the look's level ÷ the family's size m = 2v − 3 per table of v variants (its comparisons with the baseline and the leader's tests against the others), so the chance of any false faster or slower in a family is at most α, and so is the chance of any false equivalent; the leader's tests, once on every counted run, at α ÷ m".to_owned(),
        Correction::None => format!(
            "none (correction = \"none\"): each comparison's looks at {ALPHA} on their own, so a family of k tests may hold up to k × {ALPHA} false verdicts' chance"
        ),
    };
    format!(
        "Counted repeats only (warm-up runs excluded). 95% CI of the mean: Student t. \
Ratio: variant mean / baseline mean on the same host; its tests and intervals by the delta method on the log scale with Welch–Satterthwaite degrees of freedom. \
Sequential design (repeats = {{ min = {min}, max = {max}, until = \"decided\" }}): a variant's repeats stopped as soon as its verdict against the baseline was decided, with a look after each round from {min} to {max} repeats per arm; each comparison is decided at its first deciding look, on the first n repeats of each arm, and says which. \
The error is spent across the looks by Lan–DeMets spending of the Pocock type, α(t) = α·ln(1 + (e − 1)·t) with t = n/{max}: look n tests at α(t) less what the looks before it spent, so the looks' levels sum to α. \
α = {ALPHA}. Family: {family}. Correction: {correction}. \
Margin: ±{margin} (equivalent: two one-sided tests, Schuirmann 1987, the ratio's (1 − 2a) interval inside [1/(1+{margin}), 1+{margin}] at the look's level a). \
p is the deciding look's own, p adj. scaled to α (below α exactly when p is below the look's level), every interval drawn at that level. \
Inconclusive: no look up to {max} decided it; the repeats per arm that would give {power:.0}% power at the observed ratio and spread.",
        min = looks.min,
        max = looks.max,
        margin = rule.margin,
        power = compare::PLANNING_POWER * 100.0,
    )
}

/// How the statistics are computed and decided: α, the family, the
/// correction and the margin, named.
fn method_note(rule: VerdictRule, families: &[Family]) -> String {
    let family = match families {
        [] => "each host's comparisons".to_owned(),
        fs => {
            let each: Vec<String> = fs
                .iter()
                .map(|f| {
                    let n = f.difference_tests();
                    format!("{} ({n} test{})", f.host, if n == 1 { "" } else { "s" })
                })
                .collect();
            format!("each host's comparisons: {}", each.join(", "))
        }
    };
    if let Some(looks) = rule.sequential {
        return sequential_note(rule, looks, &family);
    }
    let correction = match rule.correction {
        Correction::Holm => format!(
            "Holm's step-down (Holm 1979) over the family's difference tests (each variant against its baseline, and the leader of a table against each other variant, which naming it best takes), and separately over its equivalence tests: the chance of any false faster or slower in a family is at most {ALPHA}, and so is the chance of any false equivalent"
        ),
        Correction::None => format!(
            "none (correction = \"none\"): each test at {ALPHA} on its own, so a family of k tests may hold up to k × {ALPHA} false verdicts' chance"
        ),
    };
    format!(
        "Counted repeats only (warm-up runs excluded). 95% CI of the mean: Student t. \
Ratio: variant mean / baseline mean on the same host; its tests and intervals by the delta method on the log scale with Welch–Satterthwaite degrees of freedom. \
α = {ALPHA}. Family: {family}. Correction: {correction}. \
Margin: ±{margin} (equivalent: two one-sided tests, Schuirmann 1987, the ratio's (1 − 2α) interval inside [1/(1+{margin}), 1+{margin}]). \
p is each comparison's own, p adj. the family's; every interval of a verdict is drawn at the level its test was decided at ({} when alone), so it excludes 1, or lies inside the margin, exactly when the adjusted p is below α. \
Inconclusive: the repeats per arm that would give {:.0}% power at the observed ratio and spread.",
        level_text(1.0 - ALPHA),
        compare::PLANNING_POWER * 100.0,
        margin = rule.margin,
    )
}
/// How rows are checked for order effects and size agreement
/// ([`drift`]); the thresholds are its constants.
fn checks_note() -> String {
    format!(
        "Order effects (rows with at least {} counted runs, in run order: bundle, then repeat): \
drift when the least-squares slope of the row's metric (tps; latency when rate-limited; load time for a SQL script) over the run index has p < {} (t-test, n − 2 df) and moves it by at least {:.0}% of the mean over the runs; \
a first-run outlier when the first counted run is at least {:.0}% from the others' median and its modified z-score \
(0.6745 × distance ÷ the others' MAD) exceeds {} (the trend is then fitted without it). \
Sizes: each filesystem's own measure is its size on disk (ZFS: the dataset's referenced; btrfs: `btrfs filesystem usage` Used, compressed extents at their compressed size; others: du of the data directory), and the smallest variant per host and workload is named beside the verdicts; a ZFS row's referenced is checked against du and flagged when more than {:.0}% and more than {} apart, a btrfs row's Used against df's used less the global reserve, flagged when more than {:.0}% and more than {} apart; compressratio is ZFS's compression before allocation and may exceed du's apparent ÷ on-disk (each compressed record takes whole sectors).",
        drift::MIN_RUNS,
        ALPHA,
        drift::MIN_TREND_CHANGE * 100.0,
        drift::MIN_OUTLIER_CHANGE * 100.0,
        drift::OUTLIER_Z,
        drift::SIZE_TOLERANCE * 100.0,
        crate::text::iec_bytes_short(drift::SIZE_SLACK_BYTES),
        drift::BTRFS_SIZE_TOLERANCE * 100.0,
        crate::text::iec_bytes_short(drift::BTRFS_SIZE_SLACK_BYTES),
    )
}

/// What each verdict word means, in one note (the words are
/// [`compare::Verdict::text`]'s, in every format).
fn verdicts_note() -> String {
    let words: Vec<String> = compare::Verdict::ALL
        .iter()
        .map(|v| format!("{}: {}", v.text(), v.meaning()))
        .collect();
    format!("Verdicts: {}.", words.join("; "))
}

pub(super) const BLOCKING_NOTE: &str =
    "Variants are compared on the same host only; hosts are never compared with each other.";

/// Compute groups, comparisons and notes over the cells of all `sources`
/// (concatenated: a host of the same name in several bundles is one
/// blocking factor, and a note says so), or, with `by_bundle`, with every
/// bundle's variants side by side.
pub fn build_report(sources: &[Source], opts: &ReportOptions) -> Result<Report, ReportError> {
    // A run is one cell started at one time: a re-run (`run --from`) has
    // the same cell ids but other start times; a copy has both the same.
    let mut seen: std::collections::HashMap<(&str, &str), usize> = std::collections::HashMap::new();
    for (i, s) in sources.iter().enumerate() {
        for c in s.cells {
            let Some(started) = c.started.as_deref() else {
                continue;
            };
            match seen.insert((c.cell_id.as_str(), started), i) {
                Some(first) if first != i => {
                    return Err(ReportError::SameRuns {
                        first: sources[first].name.to_string(),
                        second: s.name.to_string(),
                        cell: c.cell_id.clone(),
                        started: started.to_string(),
                    })
                }
                _ => {}
            }
        }
    }
    if !opts.by_bundle {
        return build(sources, opts, None);
    }
    if sources.len() < 2 {
        return Err(ReportError::ByBundleNeedsTwo);
    }
    if opts.baseline.is_some() {
        return Err(ReportError::ByBundleWithBaseline);
    }
    for (i, s) in sources.iter().enumerate() {
        if sources[..i].iter().any(|o| o.name == s.name) {
            return Err(ReportError::ByBundleSameName {
                name: s.name.to_owned(),
            });
        }
    }
    // Relabel every cell's variant with its bundle; order rows by variant
    // (matrix order), then bundle (command-line order).
    let mut variants: Vec<&str> = Vec::new();
    for s in sources {
        for c in s.cells {
            if !variants.contains(&c.params.filesystem.as_str()) {
                variants.push(&c.params.filesystem);
            }
        }
    }
    let labelled: Vec<Vec<CellResult>> = sources
        .iter()
        .map(|s| {
            s.cells
                .iter()
                .map(|c| {
                    let mut c = c.clone();
                    c.params.filesystem = by_bundle_label(&c.params.filesystem, s.name);
                    c
                })
                .collect()
        })
        .collect();
    let first = sources[0].name;
    let mut side = BySide {
        order: Vec::new(),
        baseline_of: BTreeMap::new(),
        first: first.to_owned(),
    };
    for v in &variants {
        for s in sources {
            let label = by_bundle_label(v, s.name);
            side.baseline_of
                .insert(label.clone(), by_bundle_label(v, first));
            side.order.push(label);
        }
    }
    let relabelled: Vec<Source> = sources
        .iter()
        .zip(&labelled)
        .map(|(s, cells)| Source {
            name: s.name,
            cells,
        })
        .collect();
    build(&relabelled, opts, Some(&side))
}

/// Bundles side by side: row order, and each row's baseline row.
struct BySide {
    order: Vec<String>,
    baseline_of: BTreeMap<String, String>,
    first: String,
}

fn build(
    sources: &[Source],
    opts: &ReportOptions,
    side: Option<&BySide>,
) -> Result<Report, ReportError> {
    let all: Vec<CellResult> = if sources.len() == 1 {
        Vec::new()
    } else {
        sources
            .iter()
            .flat_map(|s| s.cells.iter().cloned())
            .collect()
    };
    let cells: &[CellResult] = if sources.len() == 1 {
        sources[0].cells
    } else {
        &all
    };
    // Matrix order of the variants: first appearance (side by side: each
    // variant's bundles together).
    let mut order: Vec<&str> = Vec::new();
    match side {
        Some(side) => order.extend(side.order.iter().map(String::as_str)),
        None => {
            for c in cells {
                if !order.contains(&c.params.filesystem.as_str()) {
                    order.push(&c.params.filesystem);
                }
            }
        }
    }
    if let Some(b) = &opts.baseline {
        if !order.contains(&b.as_str()) {
            return Err(ReportError::UnknownBaseline {
                name: b.clone(),
                valid: if order.is_empty() {
                    "none (no cells)".into()
                } else {
                    order.join(", ")
                },
            });
        }
    }
    let rule = opts.rule.unwrap_or_default();
    let mut notes = vec![verdicts_note(), checks_note(), BLOCKING_NOTE.to_owned()];
    match &opts.baseline {
        _ if side.is_some() => notes.push(format!(
            "Bundles side by side: a row is a variant of one bundle (\"variant @ bundle\"), compared with the same variant of {} on the same host; a significant difference means the run did not reproduce.",
            side.map_or("", |s| s.first.as_str())
        )),
        Some(b) => notes.push(format!("Baseline: {b} (--baseline).")),
        None => {
            if let Some(first) = order.first() {
                notes.push(format!(
                    "Baseline: {first}, the first variant in matrix order; a host that did not run it is compared with its own first variant."
                ));
            }
        }
    }
    // Hosts that appear in more than one bundle.
    let mut host_bundles: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for s in sources {
        for c in s.cells {
            host_bundles
                .entry(c.params.host.as_str())
                .or_default()
                .insert(s.name);
        }
    }
    for (host, bundles) in &host_bundles {
        if bundles.len() > 1 && side.is_none() {
            let names: Vec<&str> = bundles.iter().copied().collect();
            notes.push(format!(
                "Host {host} appears in bundles {}: its cells are pooled as one blocking factor because the names match; if these are different machines, rename the host in one inventory.",
                names.join(", ")
            ));
        }
    }

    let groups = group_stats(cells, &opts.stats);
    let run_order = counted_in_run_order(sources);
    let alternated = alternated(sources);
    let warmups_excluded = cells
        .iter()
        .filter(|c| c.params.warmup && matches!(c.status, CellStatus::Done { .. }))
        .count();
    let not_needed = cells
        .iter()
        .filter(|c| matches!(c.status, CellStatus::NotNeeded { .. }))
        .count();
    // (workload, clients) → host → groups
    let mut by_table: BTreeMap<(String, u32), BTreeMap<String, Vec<GroupStats>>> = BTreeMap::new();
    for g in groups {
        by_table
            .entry((g.key.workload.clone(), g.key.clients))
            .or_default()
            .entry(g.key.host.clone())
            .or_default()
            .push(g);
    }
    let rank = |fs: &str| order.iter().position(|o| *o == fs).unwrap_or(usize::MAX);
    let mut tables = Vec::new();
    for ((workload, clients), hosts) in by_table {
        // One metric per table: the first group's (a workload is
        // rate-limited or a SQL script in every bundle of a sane merge).
        let first = hosts.values().flatten().next();
        let metric = first.map_or(Metric::Tps, |g| g.metric);
        let rate = first.and_then(|g| g.rate);
        let mut blocks = Vec::new();
        for (host, mut gs) in hosts {
            gs.sort_by_key(|g| rank(&g.key.filesystem));
            let baseline = match &opts.baseline {
                Some(b) => gs.iter().find(|g| &g.key.filesystem == b),
                None => gs.first(),
            };
            let mut baseline_name = baseline.map(|b| b.key.filesystem.clone());
            let baseline_values = baseline.map(|b| b.values(metric).to_vec());
            let baseline_on_disk = baseline.and_then(|b| b.on_disk_bytes);
            let variants: Vec<(&str, &[f64])> = gs
                .iter()
                .map(|g| (g.key.filesystem.as_str(), g.values(metric)))
                .collect();
            // Side by side, runs of the same variant are not contestants.
            let leader = match side {
                Some(_) => None,
                None => leader(&variants, baseline_name.as_deref(), metric),
            };
            if side.is_some() {
                baseline_name = None;
            }
            let rows = gs
                .iter()
                .map(|g| {
                    let own = side.and_then(|s| s.baseline_of.get(&g.key.filesystem));
                    let comparison = match (own, &baseline_name, &baseline_values) {
                        (Some(b), _, _) if *b == g.key.filesystem => None,
                        (Some(b), _, _) => match gs.iter().find(|x| &x.key.filesystem == b) {
                            Some(base) => Some(compare::compare(
                                b,
                                g.values(metric),
                                base.values(metric),
                                metric,
                                rule.margin,
                            )),
                            None => Some(Comparison::no_baseline(b, metric)),
                        },
                        (None, Some(b), _) if *b == g.key.filesystem => None,
                        (None, Some(b), Some(bv)) => Some(compare::compare(
                            b,
                            g.values(metric),
                            bv,
                            metric,
                            rule.margin,
                        )),
                        _ => Some(Comparison::no_baseline(
                            &opts.baseline.clone().unwrap_or_default(),
                            metric,
                        )),
                    };
                    let in_order: Vec<f64> = run_order
                        .get(&g.key)
                        .map(|runs| runs.iter().filter_map(|r| metric.value(r)).collect())
                        .unwrap_or_default();
                    // The same runs as the group's, or no test.
                    let drift = (in_order.len() == g.values(metric).len())
                        .then(|| drift::drift(&in_order, metric))
                        .flatten();
                    let on_disk_vs_baseline = match (metric, g.on_disk_bytes, baseline_on_disk) {
                        (Metric::LoadTime, Some(d), Some(b))
                            if b > 0.0 && side.is_none() && comparison.is_some() =>
                        {
                            Some(d / b)
                        }
                        _ => None,
                    };
                    Row {
                        stats: g.clone(),
                        comparison,
                        drift,
                        sizes_check: drift::size_check(g),
                        on_disk_vs_baseline,
                        alternated: alternated.contains(&(
                            g.key.host.as_str(),
                            g.key.workload.as_str(),
                            g.key.clients,
                        )),
                        series: if in_order.len() == g.values(metric).len() {
                            in_order
                        } else {
                            g.values(metric).to_vec()
                        },
                    }
                })
                .collect();
            blocks.push(HostBlock {
                host,
                baseline: baseline_name,
                winner: None,
                leader,
                rows,
            });
        }
        tables.push(Table {
            workload,
            clients,
            metric,
            rate,
            hosts: blocks,
        });
    }

    let mut problems: Vec<Problem> = cells
        .iter()
        .filter_map(|c| {
            let p = &c.params;
            let detail = match &c.status {
                CellStatus::Done { .. } | CellStatus::NotNeeded { .. } => return None,
                CellStatus::Failed {
                    step,
                    exit_status,
                    stderr_tail,
                } => {
                    let last = stderr_tail
                        .lines()
                        .rev()
                        .find(|l| !l.trim().is_empty())
                        .unwrap_or("");
                    let exit = exit_status.map_or("no exit status".into(), |e| format!("exit {e}"));
                    format!("step {step}, {exit}: {last}")
                }
                CellStatus::NotRun { reason } => reason.clone(),
            };
            Some(Problem {
                cell_id: c.cell_id.clone(),
                host: p.host.clone(),
                filesystem: p.filesystem.clone(),
                workload: p.workload.clone(),
                clients: p.clients,
                repeat: p.repeat,
                status: c.status.name().to_owned(),
                detail,
            })
        })
        .collect();
    problems.sort_by(|a, b| {
        (&a.host, &a.filesystem, &a.workload, a.clients, a.repeat).cmp(&(
            &b.host,
            &b.filesystem,
            &b.workload,
            b.clients,
            b.repeat,
        ))
    });
    let families = decide_families(&mut tables, rule);
    notes.insert(0, method_note(rule, &families));
    let warnings = tables
        .iter()
        .flat_map(|t: &Table| &t.hosts)
        .flat_map(|h| &h.rows)
        .flat_map(Row::warnings)
        .collect();
    Ok(Report {
        schema_version: REPORT_SCHEMA_VERSION,
        verdicts: super::verdicts::verdict_lines(&tables, rule.margin),
        sizes: super::sizes::size_lines(&tables),
        bundles: sources.iter().map(|s| s.name.to_owned()).collect(),
        baseline_requested: opts.baseline.clone(),
        cv_threshold: opts.stats.cv_threshold,
        alpha: ALPHA,
        rule,
        families,
        trim_start_s: opts.stats.trim_start_s,
        trim_end_s: opts.stats.trim_end_s,
        notes,
        warnings,
        tables,
        warmups_excluded,
        not_needed,
        problems,
        checksums: Vec::new(),
        platforms: Vec::new(),
        definition_differences: Vec::new(),
        systems: Vec::new(),
        variants: Vec::new(),
    })
}

/// Each group's counted runs in run order: the order the bundles were given,
/// then the repeat number, which is the order a host runs a group's repeats
/// in (docs/formats.md, "The plan").  Start times are not compared: bundles of other
/// sweeps may write them differently.
fn counted_in_run_order<'a>(sources: &[Source<'a>]) -> BTreeMap<GroupKey, Vec<&'a RunMeasures>> {
    let mut runs: BTreeMap<GroupKey, Vec<(usize, u32, &'a RunMeasures)>> = BTreeMap::new();
    for (i, s) in sources.iter().enumerate() {
        for c in s.cells {
            let CellStatus::Done { run } = &c.status else {
                continue;
            };
            if c.params.warmup {
                continue;
            }
            let p = &c.params;
            runs.entry(GroupKey {
                host: p.host.clone(),
                filesystem: p.filesystem.clone(),
                workload: p.workload.clone(),
                clients: p.clients,
            })
            .or_default()
            .push((i, p.repeat, run));
        }
    }
    runs.into_iter()
        .map(|(k, mut v)| {
            v.sort_by_key(|&(i, repeat, _)| (i, repeat));
            (k, v.into_iter().map(|(_, _, run)| run).collect())
        })
        .collect()
}

/// (host, workload, clients): the runs of one table row block.
type RunKey<'a> = (&'a str, &'a str, u32);

/// The (host, workload, clients) whose variants ran in alternation: in
/// every bundle where the host ran two or more variants of it, some
/// variant's runs (warm-ups too; by start time, which one bundle writes
/// one way) come in two or more stretches with another's between them.
/// Sequential sweeps run each variant's runs in one stretch.
fn alternated<'a>(sources: &[Source<'a>]) -> BTreeSet<RunKey<'a>> {
    // key → per bundle: is it alternated (None: one variant only there)
    let mut seen: BTreeMap<RunKey<'a>, Vec<Option<bool>>> = BTreeMap::new();
    for s in sources {
        // key → (started, variant) of each run
        let mut runs: BTreeMap<RunKey<'a>, Vec<(&'a str, &'a str)>> = BTreeMap::new();
        for c in s.cells {
            let (CellStatus::Done { .. }, Some(started)) = (&c.status, c.started.as_deref()) else {
                continue;
            };
            let p = &c.params;
            runs.entry((p.host.as_str(), p.workload.as_str(), p.clients))
                .or_default()
                .push((started, p.filesystem.as_str()));
        }
        for (key, mut v) in runs {
            v.sort();
            let mut stretches: BTreeMap<&str, usize> = BTreeMap::new();
            for (i, (_, fs)) in v.iter().enumerate() {
                if i == 0 || v[i - 1].1 != *fs {
                    *stretches.entry(fs).or_default() += 1;
                }
            }
            let verdict = (stretches.len() > 1).then(|| stretches.values().any(|n| *n > 1));
            seen.entry(key).or_default().push(verdict);
        }
    }
    seen.into_iter()
        .filter(|(_, v)| {
            let known: Vec<bool> = v.iter().flatten().copied().collect();
            !known.is_empty() && known.iter().all(|a| *a)
        })
        .map(|(k, _)| k)
        .collect()
}

/// The leader of a host's variants (the best mean on `metric`, when at least
/// two have values) and the raw p of its test against every other variant
/// but the baseline (whose test is the other's comparison).
fn leader(
    variants: &[(&str, &[f64])],
    baseline: Option<&str>,
    metric: Metric,
) -> Option<(String, Vec<Option<f64>>)> {
    if variants.iter().filter(|(_, v)| !v.is_empty()).count() < 2 {
        return None;
    }
    let (best, best_values) = compare::best(variants, metric)?;
    // The baseline's pairs are the others' comparisons with it.
    if Some(best) == baseline {
        return Some((best.to_owned(), Vec::new()));
    }
    let ps = variants
        .iter()
        .filter(|(name, _)| *name != best && Some(*name) != baseline)
        .map(|(_, values)| LogRatio::of(best_values, values).map(|l| l.p_difference()))
        .collect();
    Some((best.to_owned(), ps))
}

/// Decide every host's comparisons as one family ([`compare::decide_family`])
/// and name each table's winner: its leader, when the leader is decided
/// better than every other variant in the family.  The families, in host
/// order.
fn decide_families(tables: &mut [Table], rule: VerdictRule) -> Vec<Family> {
    if let Some(looks) = rule.sequential {
        return decide_sequential(tables, rule, looks);
    }
    let hosts: BTreeSet<String> = tables
        .iter()
        .flat_map(|t| t.hosts.iter().map(|h| h.host.clone()))
        .collect();
    let mut families = Vec::new();
    for host in hosts {
        let extra: Vec<f64> = tables
            .iter()
            .flat_map(|t| &t.hosts)
            .filter(|h| h.host == host)
            .filter_map(|h| h.leader.as_ref())
            .flat_map(|(_, ps)| ps.iter().flatten().copied())
            .collect();
        let mut comparisons: Vec<&mut Comparison> = tables
            .iter_mut()
            .flat_map(|t| &mut t.hosts)
            .filter(|h| h.host == host)
            .flat_map(|h| &mut h.rows)
            .filter_map(|r| r.comparison.as_mut())
            .collect();
        let tested = comparisons.iter().filter(|c| c.estimate.is_some()).count();
        let adjusted = compare::decide_family(&mut comparisons, &extra, rule);
        let mut adjusted = adjusted.into_iter();
        for h in tables.iter_mut().flat_map(|t| &mut t.hosts) {
            if h.host != host {
                continue;
            }
            let Some((name, ps)) = &h.leader else {
                continue;
            };
            // Its tests against the others but the baseline, in order.
            let mut decided = true;
            for p in ps {
                match p {
                    Some(_) => decided &= adjusted.next().is_some_and(|a| a < ALPHA),
                    None => decided = false,
                }
            }
            if decided && beats_the_baseline(h, name) {
                h.winner = Some(name.clone());
            }
        }
        families.push(Family {
            host,
            comparisons: tested,
            leader_tests: extra.len(),
        });
    }
    families
}

/// Whether `name` is decided better than the baseline of `h`: the
/// baseline's comparison with it, or, when it is the baseline, every
/// other's with it.
fn beats_the_baseline(h: &HostBlock, name: &str) -> bool {
    h.rows.iter().all(|r| {
        let Some(c) = &r.comparison else {
            return true;
        };
        if r.stats.key.filesystem == name {
            c.verdict.better()
        } else if h.baseline.as_deref() == Some(name) {
            c.verdict.worse()
        } else {
            true
        }
    })
}

/// A sequential design's families: each comparison decided again at its
/// first deciding look over the rows' runs in repeat order
/// ([`sequential::decide`], what the sweep stopped on), each test at the
/// look's spend ÷ the host's family size; the leader's tests against the
/// others, once, on every counted run, at α ÷ the family size (Bonferroni).
fn decide_sequential(tables: &mut [Table], rule: VerdictRule, looks: Looks) -> Vec<Family> {
    let hosts: BTreeSet<String> = tables
        .iter()
        .flat_map(|t| t.hosts.iter().map(|h| h.host.clone()))
        .collect();
    let mut families = Vec::new();
    for host in hosts {
        let blocks = || {
            tables
                .iter()
                .flat_map(|t| &t.hosts)
                .filter(|h| h.host == host)
        };
        let m = match rule.correction {
            Correction::Holm => sequential::family_size(blocks().map(|h| h.rows.len())),
            Correction::None => 1,
        };
        let leader_tests = blocks()
            .filter_map(|h| h.leader.as_ref())
            .map(|(_, ps)| ps.iter().flatten().count())
            .sum();
        let mut tested = 0;
        for t in tables.iter_mut() {
            let metric = t.metric;
            for h in t.hosts.iter_mut().filter(|h| h.host == host) {
                let Some(baseline) = h.baseline.clone() else {
                    continue;
                };
                let Some(base_series) = h
                    .rows
                    .iter()
                    .find(|r| r.stats.key.filesystem == baseline)
                    .map(|r| r.series.clone())
                else {
                    continue;
                };
                for r in h.rows.iter_mut() {
                    let Some(c) = r.comparison.as_mut() else {
                        continue;
                    };
                    if c.estimate.is_none() {
                        continue;
                    }
                    tested += 1;
                    match sequential::decide(
                        &baseline,
                        &r.series,
                        &base_series,
                        looks,
                        m,
                        metric,
                        rule.margin,
                    ) {
                        Some((decided, _)) => *c = decided,
                        // Fewer than `min` on a side: no look.
                        None => {
                            c.verdict = compare::Verdict::Untestable;
                            c.repeats_to_decide = None;
                        }
                    }
                }
                let Some((name, ps)) = h.leader.clone() else {
                    continue;
                };
                let decided = ps
                    .iter()
                    .all(|p| p.is_some_and(|p| (p * m as f64).min(1.0) < ALPHA));
                if decided && beats_the_baseline(h, &name) {
                    h.winner = Some(name);
                }
            }
        }
        families.push(Family {
            host,
            comparisons: tested,
            leader_tests,
        });
    }
    families
}
