//! Reports: statistics and comparisons of one or more bundles, rendered as
//! Markdown, CSV or JSON.
//!
//! [`build_report`] turns cell records into a [`Report`] (groups from
//! [`super::stats`], comparisons from [`super::compare`]); the `render_*`
//! functions are pure over it; the CLI reads bundles
//! ([`load_bundle_results`]) and writes the output in one place.
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;

use super::bundle::{read_results_jsonl, RESULTS_JSONL};
use super::compare::{self, Comparison};
use super::drift::{self, Drift, SizeCheck};
use super::stats::{group_stats, GroupKey, GroupStats, Metric, StatsOptions};
use super::view::{
    Kind, ReportView, SizeText, TableView, NO_COUNTED_RUN, NO_RESULTS, NO_WINNER, PROBLEMS_HEADING,
    TITLE, WARN,
};
use super::BundleError;
use crate::model::RunMeasures;
use crate::model::{CellResult, CellStatus};
use crate::text::csv_text;
/// The cell records of a bundle: `data/results.jsonl`, or, when that is
/// absent (a bundle closed before any cell finished writing it), every
/// `data/cells/*/result.json`.
pub fn load_bundle_results(dir: &Path) -> Result<Vec<CellResult>, BundleError> {
    let unsafe_ = super::manifest::unsafe_entries(dir);
    if !unsafe_.is_empty() {
        return Err(BundleError::NotABundle {
            path: dir.to_owned(),
            why: format!("it holds what a bundle may not: {}", unsafe_.join("; ")),
        });
    }
    let jsonl = dir.join("data").join(RESULTS_JSONL);
    if jsonl.is_file() {
        return read_results_jsonl(&jsonl);
    }
    let cells = dir.join("data").join("cells");
    if !dir.join("bagit.txt").is_file() {
        return Err(BundleError::NotABundle {
            path: dir.to_owned(),
            why: "it has no bagit.txt; give the bundle's top folder".into(),
        });
    }
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(&cells) else {
        return Ok(out);
    };
    let mut dirs: Vec<_> = rd.filter_map(Result::ok).map(|e| e.path()).collect();
    dirs.sort();
    for d in dirs {
        let p = d.join("result.json");
        if !p.is_file() {
            continue;
        }
        let text = std::fs::read_to_string(&p).map_err(|e| BundleError::io("read", &p, e))?;
        let c = super::bundle::parse_cell_result(&text).map_err(|what| BundleError::Results {
            path: p.clone(),
            line: 1,
            what,
        })?;
        out.push(c);
    }
    Ok(out)
}

/// How a bundle's checksums stood when it was reported on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChecksumCheck {
    pub bundle: String,
    pub verified: bool,
    /// What `verify` found, when it did not verify.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
}

/// Verify `dir` as `fsmatrix verify` does (every sha256 of its manifests)
/// before reporting on it.  A bundle that does not verify is refused naming
/// it and each problem (the files); with `allow_unverified` it is kept, and
/// the check says it was not verified.
pub fn check_checksums(
    dir: &Path,
    name: &str,
    allow_unverified: bool,
) -> Result<ChecksumCheck, BundleError> {
    let r = super::verify(dir).map_err(|e| BundleError::NotABundle {
        path: dir.to_owned(),
        why: e.why,
    })?;
    let problems: Vec<String> = r.problems.iter().map(ToString::to_string).collect();
    if !problems.is_empty() && !allow_unverified {
        return Err(BundleError::NotVerified {
            path: dir.to_owned(),
            problems: problems.join("; "),
        });
    }
    Ok(ChecksumCheck {
        bundle: name.to_owned(),
        verified: problems.is_empty(),
        problems,
    })
}

/// The stand-in hosts of a bundle (docs/standin-hosts.md): host name → the
/// OS it was dressed as, from the `standin` key its facts recorded
/// (`data/hosts/<host>/facts.json`).  A bundle is untrusted input: only
/// regular files of at most 1 MiB are read, and only a lowercase OS name is
/// taken; anything else is no mark.
pub fn standin_hosts(dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(dir.join("data").join("hosts")) else {
        return out;
    };
    for e in entries.flatten() {
        let facts = e.path().join("facts.json");
        let Ok(meta) = std::fs::symlink_metadata(&facts) else {
            continue;
        };
        if !meta.file_type().is_file() || meta.len() > 1 << 20 {
            continue;
        }
        let Ok(v) = std::fs::read(&facts)
            .map_err(|_| ())
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).map_err(|_| ()))
        else {
            continue;
        };
        if let Some(os) = v.get("standin").and_then(|o| o.as_str()) {
            if !os.is_empty() && os.len() <= 32 && os.bytes().all(|b| b.is_ascii_lowercase()) {
                out.insert(e.file_name().to_string_lossy().into_owned(), os.to_string());
            }
        }
    }
    out
}

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
}

/// Everything a report shows; serialised as is for `--format json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub bundles: Vec<String>,
    /// The baseline asked for with `--baseline`, if any.
    pub baseline_requested: Option<String>,
    pub cv_threshold: f64,
    pub trim_start_s: f64,
    pub trim_end_s: f64,
    /// Method and blocking notes, in the order shown.
    pub notes: Vec<String>,
    /// Rows whose runs drift or whose first run is an outlier, and rows
    /// whose sizes disagree, in words, in table order ([`super::drift`]).
    pub warnings: Vec<String>,
    /// One table per (workload, clients), sorted.
    pub tables: Vec<Table>,
    pub warmups_excluded: usize,
    /// Adaptive repeats left out because the CI target was met earlier.
    #[serde(skip_serializing_if = "is_zero")]
    pub not_needed: usize,
    pub problems: Vec<Problem>,
    /// Each bundle's checksums as checked before reporting
    /// ([`check_checksums`], [`mark_checksums`]); empty when not checked.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub checksums: Vec<ChecksumCheck>,
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
    /// Named only when it beats every other variant at p < 0.05.
    pub winner: Option<String>,
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
    /// ran two or more of them: [`alternated`]), so drift hit them alike.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub alternated: bool,
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

const METHOD_NOTE: &str =
    "Counted repeats only (warm-up runs excluded). 95% CI of the mean: Student t. \
Ratio: variant mean / baseline mean on the same host, 95% CI by the delta method on the log scale. \
p: Welch's t-test, two-sided. A verdict or winner is named only at p < 0.05.";
/// How rows are checked for order effects and size agreement
/// ([`super::drift`]); the thresholds are its constants.
fn checks_note() -> String {
    format!(
        "Order effects (rows with at least {} counted runs, in run order: bundle, then repeat): \
drift when the least-squares slope of the row's metric (tps; latency when rate-limited; load time for a SQL script) over the run index has p < {} (t-test, n − 2 df) and moves it by at least {:.0}% of the mean over the runs; \
a first-run outlier when the first counted run is at least {:.0}% from the others' median and its modified z-score \
(0.6745 × distance ÷ the others' MAD) exceeds {} (the trend is then fitted without it). \
Sizes (ZFS rows): du's on-disk bytes of the data directory are compared with the dataset's own allocated bytes (zfs referenced) and flagged when more than {:.0}% and more than {} apart; compressratio is ZFS's compression before allocation and may exceed du's apparent ÷ on-disk (each compressed record takes whole sectors).",
        drift::MIN_RUNS,
        compare::ALPHA,
        drift::MIN_TREND_CHANGE * 100.0,
        drift::MIN_OUTLIER_CHANGE * 100.0,
        drift::OUTLIER_Z,
        drift::SIZE_TOLERANCE * 100.0,
        crate::text::iec_bytes_short(drift::SIZE_SLACK_BYTES),
    )
}

const BLOCKING_NOTE: &str =
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
    let mut notes = vec![
        METHOD_NOTE.to_owned(),
        checks_note(),
        BLOCKING_NOTE.to_owned(),
    ];
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
            let baseline_on_disk = baseline.and_then(|b| b.du_on_disk_bytes);
            let variants: Vec<(&str, &[f64])> = gs
                .iter()
                .map(|g| (g.key.filesystem.as_str(), g.values(metric)))
                .collect();
            // Side by side, runs of the same variant are not contestants.
            let winner = match side {
                Some(_) => None,
                None => compare::winner(&variants, metric).map(str::to_owned),
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
                            )),
                            None => Some(Comparison {
                                baseline: b.clone(),
                                ratio: None,
                                welch: None,
                                verdict: compare::Verdict::NoBaseline,
                            }),
                        },
                        (None, Some(b), _) if *b == g.key.filesystem => None,
                        (None, Some(b), Some(bv)) => {
                            Some(compare::compare(b, g.values(metric), bv, metric))
                        }
                        _ => Some(Comparison {
                            baseline: opts.baseline.clone().unwrap_or_default(),
                            ratio: None,
                            welch: None,
                            verdict: compare::Verdict::NoBaseline,
                        }),
                    };
                    let in_order: Vec<f64> = run_order
                        .get(&g.key)
                        .map(|runs| runs.iter().filter_map(|r| metric.value(r)).collect())
                        .unwrap_or_default();
                    // The same runs as the group's, or no test.
                    let drift = (in_order.len() == g.values(metric).len())
                        .then(|| drift::drift(&in_order, metric))
                        .flatten();
                    let on_disk_vs_baseline = match (metric, g.du_on_disk_bytes, baseline_on_disk) {
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
                    }
                })
                .collect();
            blocks.push(HostBlock {
                host,
                baseline: baseline_name,
                winner,
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
    let warnings = tables
        .iter()
        .flat_map(|t: &Table| &t.hosts)
        .flat_map(|h| &h.rows)
        .flat_map(Row::warnings)
        .collect();
    Ok(Report {
        bundles: sources.iter().map(|s| s.name.to_owned()).collect(),
        baseline_requested: opts.baseline.clone(),
        cv_threshold: opts.stats.cv_threshold,
        trim_start_s: opts.stats.trim_start_s,
        trim_end_s: opts.stats.trim_end_s,
        notes,
        warnings,
        tables,
        warmups_excluded,
        not_needed,
        problems,
        checksums: Vec::new(),
    })
}

/// Each group's counted runs in run order: the order the bundles were given,
/// then the repeat number, which is the order a host runs a group's repeats
/// in (README, "The plan").  Start times are not compared: bundles of other
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

/// Make text safe inside a Markdown table cell (and a line of a list).
fn md_text(s: &str) -> String {
    s.replace('|', "\\|")
        .replace(['\n', '\r'], " ")
        .trim()
        .to_owned()
}

/// Render cell records as Markdown with default options (the report the
/// run prints at its end).
pub fn render_markdown(cells: &[CellResult]) -> String {
    match build_report(&[Source { name: "", cells }], &ReportOptions::default()) {
        Ok(r) => render_markdown_report(&r),
        // Unreachable without a requested baseline; say so rather than panic.
        Err(e) => format!("# {TITLE}\n\nfailed to {e}\n"),
    }
}

/// Markdown: per (workload, clients) a table with one row per host ×
/// filesystem (hosts sorted, variants in matrix order), the winner per host,
/// then failed and not-run cells.  The texts are [`ReportView`]'s; this only
/// escapes and joins them.
pub fn render_markdown_report(r: &Report) -> String {
    let v = ReportView::new(r, SizeText::OneDecimal);
    let mut out = format!("# {TITLE}\n\n");
    if v.empty {
        let _ = writeln!(out, "{NO_RESULTS}");
        return out;
    }
    for n in &v.notes {
        let _ = writeln!(out, "- {}", md_text(n));
    }
    let _ = writeln!(out, "- {}\n", md_text(&v.noisy_note("")));
    if v.sections.is_empty() {
        let _ = writeln!(out, "{NO_COUNTED_RUN}\n");
    }
    for s in &v.sections {
        let _ = writeln!(out, "## {}\n", s.heading(&md_text(&s.workload)));
        if let Some(n) = &s.metric_note {
            let _ = writeln!(out, "{}\n", md_text(n));
        }
        if let Some(st) = &s.statements {
            md_table(&mut out, st);
            out.push('\n');
        }
        md_table(&mut out, &s.table);
        out.push('\n');
        for w in &s.warnings {
            let _ = writeln!(out, "- {WARN} {}", md_text(w));
        }
        if !s.warnings.is_empty() {
            out.push('\n');
        }
        for h in &s.verdicts {
            let host = md_text(&h.host);
            let _ = match &h.winner {
                Some(w) => writeln!(out, "- {host}: winner **{}** {}", md_text(w), h.why),
                None => writeln!(out, "- {host}: {NO_WINNER}"),
            };
        }
        if !s.verdicts.is_empty() {
            out.push('\n');
        }
    }
    for sentence in [&v.warmups, &v.not_needed].into_iter().flatten() {
        let _ = writeln!(out, "{}\n", md_text(sentence));
    }
    out.push_str(&super::latency::markdown(r));
    if let Some(t) = &v.problems {
        let _ = writeln!(out, "## {PROBLEMS_HEADING}\n");
        md_table(&mut out, t);
        out.push('\n');
    }
    out
}

/// A Markdown table: header, alignment row, one line per row.
fn md_table(out: &mut String, t: &TableView) {
    fn line<'a>(out: &mut String, cells: impl Iterator<Item = &'a str>) {
        out.push('|');
        for c in cells {
            let _ = write!(out, " {} |", md_text(c));
        }
        out.push('\n');
    }
    line(out, t.columns.iter().map(|c| c.header.as_ref()));
    out.push('|');
    for c in &t.columns {
        out.push_str(if c.kind == Kind::Number {
            "--:|"
        } else {
            "---|"
        });
    }
    out.push('\n');
    for row in &t.rows {
        line(out, row.cells.iter().map(String::as_str));
    }
}

/// The columns of `--format csv`, one row per host × filesystem × workload × clients;
/// `metric` says what the ratio, p and verdict compare (tps, latency, load_time).
pub const REPORT_CSV_HEADER: &[&str] = &[
    "workload",
    "clients",
    "metric",
    "host",
    "filesystem",
    "fs_type",
    "n",
    "warmups_excluded",
    "tps_median",
    "tps_mean",
    "tps_min",
    "tps_max",
    "tps_sd",
    "tps_cv",
    "tps_ci95_low",
    "tps_ci95_high",
    "noisy",
    "latency_ms_median",
    "latency_ms_mean",
    "latency_ms_ci95_low",
    "latency_ms_ci95_high",
    "per_second_n",
    "per_second_tps_median",
    "per_second_tps_mean",
    "per_second_tps_cv",
    "du_on_disk_bytes",
    "du_apparent_bytes",
    "zfs_compressratio",
    "baseline",
    "ratio",
    "ratio_ci95_low",
    "ratio_ci95_high",
    "welch_t",
    "welch_df",
    "p_value",
    "verdict",
    "winner",
];

fn num(v: Option<f64>) -> String {
    v.filter(|x| x.is_finite())
        .map(|x| x.to_string())
        .unwrap_or_default()
}

/// CSV (RFC 4180 quoting by the `csv` crate, `\n` line ends) of the
/// report's rows, [`REPORT_CSV_HEADER`] first.
pub fn render_csv(r: &Report) -> String {
    match csv_bytes(r) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        // Writing to memory fails only on a record of another length than
        // the header's, which csv_row's type rules out; say so, not panic.
        Err(e) => format!("failed to render the report as csv: {e}\n"),
    }
}

fn csv_bytes(r: &Report) -> Result<Vec<u8>, csv::Error> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(REPORT_CSV_HEADER)?;
    for t in &r.tables {
        for h in &t.hosts {
            for row in &h.rows {
                w.write_record(csv_row(t, h, row))?;
            }
        }
    }
    w.into_inner().map_err(|e| e.into_error().into())
}

/// One row of [`render_csv`], in [`REPORT_CSV_HEADER`] order.
fn csv_row(t: &Table, h: &HostBlock, row: &Row) -> [String; REPORT_CSV_HEADER.len()] {
    let g = &row.stats;
    let lat = g.latency_ms.as_ref();
    let ps = g.per_second_tps.as_ref();
    let c = row.comparison.as_ref();
    let ratio = c.and_then(|c| c.ratio);
    let welch = c.and_then(|c| c.welch);
    [
        csv_text(&t.workload),
        t.clients.to_string(),
        t.metric.csv_name().to_owned(),
        csv_text(&h.host),
        csv_text(&g.key.filesystem),
        csv_text(&g.fs_type),
        g.tps.n.to_string(),
        g.warmups_excluded.to_string(),
        num(Some(g.tps.median)),
        num(Some(g.tps.mean)),
        num(Some(g.tps.min)),
        num(Some(g.tps.max)),
        num(g.tps.sd),
        num(g.tps.cv),
        num(g.tps.ci95.map(|c| c.0)),
        num(g.tps.ci95.map(|c| c.1)),
        g.noisy.to_string(),
        num(lat.map(|l| l.median)),
        num(lat.map(|l| l.mean)),
        num(lat.and_then(|l| l.ci95).map(|c| c.0)),
        num(lat.and_then(|l| l.ci95).map(|c| c.1)),
        ps.map_or("0".into(), |p| p.n.to_string()),
        num(ps.map(|p| p.median)),
        num(ps.map(|p| p.mean)),
        num(ps.and_then(|p| p.cv)),
        num(g.du_on_disk_bytes),
        num(g.du_apparent_bytes),
        num(g.zfs_compressratio),
        csv_text(
            &c.map(|c| c.baseline.clone())
                .or_else(|| h.baseline.clone())
                .unwrap_or_default(),
        ),
        num(ratio.map(|x| x.ratio)),
        num(ratio.and_then(|x| x.ci95).map(|c| c.0)),
        num(ratio.and_then(|x| x.ci95).map(|c| c.1)),
        num(welch.map(|w| w.t)),
        num(welch.map(|w| w.df)),
        num(welch.map(|w| w.p)),
        c.map_or("baseline", |c| c.verdict.text()).to_owned(),
        (h.winner.as_deref() == Some(g.key.filesystem.as_str())).to_string(),
    ]
}

/// The report as pretty JSON (the [`Report`] structure; non-finite numbers
/// become null).
pub fn render_json(r: &Report) -> String {
    match serde_json::to_string_pretty(r) {
        Ok(mut s) => {
            s.push('\n');
            s
        }
        // Report holds only strings, numbers and maps with string keys.
        Err(e) => format!("{{\"error\": {:?}}}\n", e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::*;

    #[test]
    fn stand_in_hosts_come_from_their_facts_and_are_labelled_everywhere() {
        let tmp = tempfile::tempdir().unwrap();
        let hosts = tmp.path().join("data/hosts");
        for (h, facts) in [
            ("lab1", r#"{"os":"linux"}"#),
            ("lab4", r#"{"os":"freebsd","standin":"freebsd"}"#),
            ("evil", r#"{"standin":"freebsd; rm -rf /"}"#),
            ("big", r#"{"standin":"FreeBSD"}"#),
        ] {
            std::fs::create_dir_all(hosts.join(h)).unwrap();
            std::fs::write(hosts.join(h).join("facts.json"), facts).unwrap();
        }
        // A facts.json that is a link to another file is not read.
        std::fs::create_dir_all(hosts.join("link")).unwrap();
        std::os::unix::fs::symlink(hosts.join("lab4/facts.json"), hosts.join("link/facts.json"))
            .unwrap();
        let found = standin_hosts(tmp.path());
        assert_eq!(
            found.into_iter().collect::<Vec<_>>(),
            [("lab4".to_string(), "freebsd".to_string())]
        );
        let mut cells = vec![
            cell("lab4", "ufs", "ufs", "tpcb", 1, 1, done(100.0, 10.0)),
            cell("lab1", "ext4", "ext4", "tpcb", 1, 1, done(100.0, 10.0)),
        ];
        let found = standin_hosts(tmp.path());
        label_standins(&mut cells, &found);
        assert_eq!(cells[0].params.host, "lab4 [freebsd stand-in]");
        assert_eq!(cells[1].params.host, "lab1");
        let mut r = build_report(
            &[Source {
                name: "b",
                cells: &cells,
            }],
            &ReportOptions::default(),
        )
        .unwrap();
        mark_standins(&mut r, &found);
        assert!(
            r.notes[0].starts_with("STAND-IN HOSTS: lab4 [freebsd stand-in]"),
            "{:?}",
            r.notes
        );
        let md = render_markdown_report(&r);
        assert!(md.contains("lab4 [freebsd stand-in]"), "{md}");
    }

    fn cell(
        host: &str,
        fs: &str,
        fs_type: &str,
        workload: &str,
        clients: u32,
        repeat: u32,
        status: CellStatus,
    ) -> CellResult {
        CellResult {
            schema: RESULT_SCHEMA,
            cell_id: format!("{host}-{fs}-{workload}-{clients}-{repeat}"),
            params: CellParams {
                host: host.into(),
                filesystem: fs.into(),
                fs_type: fs_type.into(),
                workload: workload.into(),
                clients,
                jobs: clients,
                repeat,
                warmup: repeat == 0,
                rate: None,
                sql_script: false,
            },
            status,
            started: None,
            ended: None,
            sizes: Some(Sizes {
                du_on_disk_bytes: Some(if fs_type == "zfs" {
                    60 << 20
                } else {
                    160 << 20
                }),
                du_apparent_bytes: Some(158 << 20),
                zfs_compressratio: (fs_type == "zfs").then_some(2.61),
                ..Sizes::default()
            }),
            init: None,
            fs_settings: None,
        }
    }

    fn done(tps: f64, lat: f64) -> CellStatus {
        CellStatus::Done {
            run: RunMeasures {
                tps,
                tps_including_connect: None,
                latency_avg_ms: Some(lat),
                latency_stddev_ms: None,
                transactions: (tps * 10.0) as u64,
                failed_transactions: Some(0),
                schedule_lag_avg_ms: None,
                schedule_lag_max_ms: None,
                skipped_transactions: None,
                late_transactions: None,
                duration_s: 10.0,
                progress: vec![],
                statements: Vec::new(),
                latency_percentiles: None,
                statement_latencies: Vec::new(),
            },
        }
    }

    #[test]
    fn non_finite_numbers_in_a_bundle_are_refused_with_file_and_field() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("data")).unwrap();
        let good = serde_json::to_string(&sample()[1]).unwrap();
        for (field, bad) in [
            ("tps", good.replacen("\"tps\":812.5", "\"tps\":1e999", 1)),
            (
                "duration_s",
                good.replacen("\"duration_s\":", "\"duration_s\":-1e400,\"x\":", 1),
            ),
        ] {
            assert_ne!(bad, good, "the fixture has no {field}");
            let jsonl = dir.path().join("data").join(RESULTS_JSONL);
            std::fs::write(&jsonl, format!("{good}\n{bad}\n")).unwrap();
            let msg = load_bundle_results(dir.path()).unwrap_err().to_string();
            assert!(
                msg.contains("results.jsonl line 2") && msg.contains(&format!("field \"{field}\"")),
                "{msg}"
            );
        }
        // A record built in memory (from parsed text) is held to the same rule.
        let mut c = sample()[1].clone();
        if let CellStatus::Done { run } = &mut c.status {
            run.progress.push(crate::model::ProgressSample {
                t_s: 1.0,
                tps: f64::INFINITY,
                latency_avg_ms: None,
                latency_stddev_ms: None,
                failed: None,
            });
        }
        assert_eq!(
            c.non_finite_field().as_deref(),
            Some("status.run.progress[0].tps")
        );
        c.status = CellStatus::NotRun { reason: "x".into() };
        c.init = Some(crate::model::InitTimings {
            total_s: Some(f64::NAN),
            phases: vec![],
        });
        assert_eq!(c.non_finite_field().as_deref(), Some("init.total_s"));
    }

    pub(crate) fn sample() -> Vec<CellResult> {
        vec![
            cell("deb1", "ext4", "ext4", "tpcb", 4, 0, done(100.0, 40.0)),
            cell("deb1", "ext4", "ext4", "tpcb", 4, 1, done(812.5, 4.92)),
            cell("deb1", "ext4", "ext4", "tpcb", 4, 2, done(790.25, 5.06)),
            cell("deb1", "ext4", "ext4", "tpcb", 4, 3, done(830.0, 4.81)),
            cell("deb1", "zfs-lz4", "zfs", "tpcb", 4, 1, done(610.0, 6.55)),
            cell("deb1", "zfs-lz4", "zfs", "tpcb", 4, 2, done(640.0, 6.25)),
            cell("deb1", "ext4", "ext4", "tpcb", 1, 1, done(301.0, 3.32)),
            cell(
                "deb1",
                "ext4",
                "ext4",
                "select-only",
                1,
                1,
                done(9120.4, 0.11),
            ),
            cell(
                "deb1",
                "xfs",
                "xfs",
                "tpcb",
                4,
                1,
                CellStatus::Failed {
                    step: "mount".into(),
                    exit_status: Some(32),
                    stderr_tail: "mount: /mnt: wrong fs type | bad option\n".into(),
                },
            ),
            cell(
                "deb2",
                "ext4",
                "ext4",
                "tpcb",
                4,
                1,
                CellStatus::NotRun {
                    reason: "host unreachable: connection refused".into(),
                },
            ),
        ]
    }

    /// The tpcb, 4 clients table of a report of [`sample`]-like cells.
    fn tpcb4(r: &Report) -> &Table {
        r.tables
            .iter()
            .find(|t| t.workload == "tpcb" && t.clients == 4)
            .expect("a tpcb, 4 clients table")
    }

    fn report(cells: &[CellResult], baseline: Option<&str>) -> Report {
        let opts = ReportOptions {
            baseline: baseline.map(str::to_owned),
            ..ReportOptions::default()
        };
        build_report(&[Source { name: "b1", cells }], &opts).unwrap()
    }

    #[test]
    fn markdown_report_snapshot() {
        insta::assert_snapshot!(render_markdown(&sample()));
    }

    #[test]
    fn csv_report_snapshot() {
        let csv = render_csv(&report(&sample(), None));
        for line in csv.lines() {
            assert_eq!(line.split(',').count(), REPORT_CSV_HEADER.len(), "{line}");
        }
        insta::assert_snapshot!(csv);
    }

    #[test]
    fn json_report_snapshot() {
        let json = render_json(&report(&sample(), Some("zfs-lz4")));
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["tables"].as_array().unwrap().len(), 3);
        insta::assert_snapshot!(json);
    }

    #[test]
    fn median_and_warmup_exclusion() {
        let md = render_markdown(&sample());
        // ext4 tpcb 4 clients: repeats 1..3 counted, the warm-up (100 tps) not.
        assert!(
            md.contains("| deb1 | ext4 | ext4 | 3 | 812.5 | 790.2–830.0 |"),
            "{md}"
        );
        assert!(
            md.contains("| deb1 | zfs-lz4 | zfs | 2 | 625.0 | 610.0–640.0 |"),
            "{md}"
        );
        assert!(md.contains("1 warm-up run not counted."), "{md}");
        assert!(md.contains("wrong fs type \\| bad option"), "{md}");
        assert!(md.contains("slower than ext4"), "{md}");
        assert!(md.contains("deb1: winner **ext4**"), "{md}");
    }

    #[test]
    fn explicit_baseline_and_unknown_baseline() {
        let r = report(&sample(), Some("zfs-lz4"));
        let t = tpcb4(&r);
        let h = &t.hosts[0];
        assert_eq!(h.baseline.as_deref(), Some("zfs-lz4"));
        let ext4 = &h.rows[0];
        assert_eq!(ext4.stats.key.filesystem, "ext4");
        let c = ext4.comparison.as_ref().unwrap();
        assert_eq!(c.verdict, compare::Verdict::Faster);
        assert!(c.ratio.unwrap().ratio > 1.0);
        // select-only ran no zfs-lz4 on deb1: no silent fallback.
        let sel = r
            .tables
            .iter()
            .find(|t| t.workload == "select-only")
            .unwrap();
        assert_eq!(sel.hosts[0].baseline, None);
        assert_eq!(
            sel.hosts[0].rows[0].comparison.as_ref().unwrap().verdict,
            compare::Verdict::NoBaseline
        );
        let e = build_report(
            &[Source {
                name: "b1",
                cells: &sample(),
            }],
            &ReportOptions {
                baseline: Some("btrfs".into()),
                ..ReportOptions::default()
            },
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("valid: ext4, zfs-lz4, xfs"), "{e}");
    }

    #[test]
    fn merged_bundles_pool_a_host_of_the_same_name_and_say_so() {
        let a = sample();
        let mut b = sample();
        for c in &mut b {
            c.params.repeat += 10;
            if c.params.host == "deb2" {
                c.params.host = "bsd1".into();
            }
        }
        let r = build_report(
            &[
                Source {
                    name: "linux",
                    cells: &a,
                },
                Source {
                    name: "again",
                    cells: &b,
                },
            ],
            &ReportOptions::default(),
        )
        .unwrap();
        let pooled: Vec<&String> = r
            .notes
            .iter()
            .filter(|n| n.contains("pooled as one blocking factor"))
            .collect();
        assert_eq!(pooled.len(), 1, "{:?}", r.notes);
        assert!(pooled[0].starts_with("Host deb1 appears in bundles again, linux"));
        let t = tpcb4(&r);
        assert_eq!(t.hosts[0].rows[0].stats.tps.n, 6);
    }

    #[test]
    fn bundles_side_by_side_compare_each_variant_with_its_original() {
        let orig = sample();
        let mut rerun = sample();
        for c in &mut rerun {
            if let (CellStatus::Done { run }, "zfs-lz4") =
                (&mut c.status, c.params.filesystem.as_str())
            {
                run.tps /= 2.0;
            }
        }
        let sources = [
            Source {
                name: "orig",
                cells: &orig,
            },
            Source {
                name: "rerun",
                cells: &rerun,
            },
        ];
        let opts = ReportOptions {
            by_bundle: true,
            ..ReportOptions::default()
        };
        let r = build_report(&sources, &opts).unwrap();
        let t = tpcb4(&r);
        let h = &t.hosts[0];
        let rows: Vec<(&str, Option<&str>, Option<compare::Verdict>)> = h
            .rows
            .iter()
            .map(|r| {
                (
                    r.stats.key.filesystem.as_str(),
                    r.comparison.as_ref().map(|c| c.baseline.as_str()),
                    r.comparison.as_ref().map(|c| c.verdict),
                )
            })
            .collect();
        assert_eq!(
            rows,
            [
                ("ext4 @ orig", None, None),
                (
                    "ext4 @ rerun",
                    Some("ext4 @ orig"),
                    Some(compare::Verdict::NotSignificant)
                ),
                ("zfs-lz4 @ orig", None, None),
                (
                    "zfs-lz4 @ rerun",
                    Some("zfs-lz4 @ orig"),
                    Some(compare::Verdict::Slower)
                ),
            ]
        );
        let ratio = h.rows[3]
            .comparison
            .as_ref()
            .and_then(|c| c.ratio)
            .map(|r| r.ratio);
        assert_eq!(ratio, Some(0.5));
        // Runs of one variant are not contestants; nothing is pooled.
        assert_eq!(h.winner, None);
        assert!(r
            .notes
            .iter()
            .any(|n| n.starts_with("Bundles side by side")));
        assert!(!r.notes.iter().any(|n| n.contains("pooled")));
        let md = render_markdown_report(&r);
        assert!(md.contains("| deb1 | zfs-lz4 @ rerun | zfs |"), "{md}");
        assert!(md.contains("slower than zfs-lz4 @ orig"), "{md}");
        // One bundle, or a --baseline, cannot be put side by side.
        let one = build_report(&sources[..1], &opts).unwrap_err();
        assert!(one.to_string().contains("give at least two bundles"));
        let with_baseline = ReportOptions {
            baseline: Some("ext4".into()),
            ..opts.clone()
        };
        assert!(build_report(&sources, &with_baseline).is_err());
        let twins = [sources[0], sources[0]];
        let e = build_report(&twins, &opts).unwrap_err();
        assert!(e.to_string().contains("both named \"orig\""), "{e}");
    }

    #[test]
    fn adaptive_repeats_not_needed_are_said_not_listed_as_problems() {
        let mut cells = sample();
        cells.push(cell(
            "deb1",
            "ext4",
            "ext4",
            "tpcb",
            4,
            4,
            CellStatus::NotNeeded {
                reason: "adaptive repeats: the 3 counted repeats before it have a 95% CI of ±1.20% of the mean tps, within the target ±2%".into(),
            },
        ));
        let r = report(&cells, None);
        assert_eq!(r.not_needed, 1);
        assert!(r.problems.iter().all(|p| p.status != "not_needed"));
        let md = render_markdown_report(&r);
        assert!(md.contains("1 adaptive repeat was not run"), "{md}");
        // The counted group is unchanged by it.
        let t = tpcb4(&r);
        assert_eq!(t.hosts[0].rows[0].stats.tps.n, 3);
        assert!(render_json(&r).contains("\"not_needed\": 1"));
        assert!(!render_json(&report(&sample(), None)).contains("not_needed"));
    }

    #[test]
    fn a_bundle_is_never_pooled_with_its_copy_but_a_rerun_is() {
        // Runs that ran have a start time (the worker records one).
        let mut cells = sample();
        for (i, c) in cells.iter_mut().enumerate() {
            c.started = Some(format!("2026-01-01T00:00:{i:02}Z"));
        }
        let opts = ReportOptions::default();
        let copy = [
            Source {
                name: "a",
                cells: &cells,
            },
            Source {
                name: "a-copy",
                cells: &cells,
            },
        ];
        let e = build_report(&copy, &opts).expect_err("a copy pools its runs twice");
        assert!(
            e.to_string()
                .contains("pool a with a-copy: they hold the same run"),
            "{e}"
        );
        let mut rerun = cells.clone();
        for c in &mut rerun {
            c.started = c.started.as_ref().map(|s| format!("{s}-again"));
        }
        let both = [
            Source {
                name: "a",
                cells: &cells,
            },
            Source {
                name: "rerun",
                cells: &rerun,
            },
        ];
        assert!(build_report(&both, &opts).is_ok());
    }

    #[test]
    fn empty_input() {
        assert!(render_markdown(&[]).contains("No cell results."));
    }
}
