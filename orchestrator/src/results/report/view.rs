//! The report as text, once: what the Markdown and HTML renderers show.
//!
//! [`ReportView::new`] turns a [`Report`] into tables of cell texts (the
//! columns, their headers and every number's formatting: mean ± CI, p,
//! ratios, verdicts, byte sizes, [`DASH`] for what is missing) and the
//! sentences around them.  A renderer only escapes these texts and wraps
//! them in its syntax; where the two differ on purpose it is said here
//! ([`SizeText`], [`ReportView::noisy_note`]).
use std::borrow::Cow;

use super::{Report, Row, Table};
use crate::results::analysis::compare::{level_text, Verdict};
use crate::results::analysis::stats::{p_cell, Metric, Summary};
use crate::text;

/// What a cell without a value shows.
pub const DASH: &str = "—";
/// The report's title.
pub const TITLE: &str = "fsmatrix report";
/// Said instead of the report when there is nothing to show.
pub const NO_RESULTS: &str = "No cell results.";
/// Said instead of the tables when no counted run finished.
pub const NO_COUNTED_RUN: &str = "No counted run finished.";
/// The heading of the problems table.
pub const PROBLEMS_HEADING: &str = "Failed and not run";
/// The heading of the method notes (after the answer and its plot).
pub const METHOD_HEADING: &str = "How this was measured";
/// Marks a row's cell that a warning under its table explains.
pub const WARN: &str = "⚠";

/// How a column is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Left-aligned text.
    Text,
    /// Right-aligned number.
    Number,
    /// Left-aligned name of the row's variant (HTML marks the winner's).
    Variant,
}

/// One column of a table: its header and layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub header: Cow<'static, str>,
    pub kind: Kind,
}

const fn col(header: &'static str, kind: Kind) -> Column {
    Column {
        header: Cow::Borrowed(header),
        kind,
    }
}

/// The columns of a (workload, clients) table, one row per host × variant.
pub static RESULT_COLUMNS: [Column; 15] = [
    col("host", Kind::Text),
    col("filesystem", Kind::Variant),
    col("type", Kind::Text),
    col("n", Kind::Number),
    col("median tps", Kind::Number),
    col("tps min–max", Kind::Number),
    col("mean tps ± 95% CI", Kind::Number),
    col("CV", Kind::Number),
    col("latency ms (mean)", Kind::Number),
    col("vs baseline (CI at adj. level)", Kind::Number),
    col("p adj.", Kind::Number),
    col("verdict", Kind::Text),
    col("on disk", Kind::Number),
    col("apparent", Kind::Number),
    col("compressratio", Kind::Number),
];

/// The columns of a rate-limited workload's table: led by latency, the
/// metric its rows are compared on, with the schedule lag and the skipped
/// and late transactions beside it.
pub static LATENCY_COLUMNS: [Column; 18] = [
    col("host", Kind::Text),
    col("filesystem", Kind::Variant),
    col("type", Kind::Text),
    col("n", Kind::Number),
    col("median latency ms", Kind::Number),
    col("latency ms min–max", Kind::Number),
    col("mean latency ms ± 95% CI", Kind::Number),
    col("CV", Kind::Number),
    col("tps (mean)", Kind::Number),
    col("schedule lag ms (mean, max)", Kind::Number),
    col("skipped", Kind::Number),
    col("late", Kind::Number),
    col("latency vs baseline (CI at adj. level)", Kind::Number),
    col("p adj.", Kind::Number),
    col("verdict", Kind::Text),
    col("on disk", Kind::Number),
    col("apparent", Kind::Number),
    col("compressratio", Kind::Number),
];

/// The columns of a SQL script's table: its total load time (compared)
/// and the sizes after the load.  Each statement's time is in the
/// statements table above it ([`SectionView::statements`]).
pub static LOAD_COLUMNS: [Column; 18] = [
    col("host", Kind::Text),
    col("filesystem", Kind::Variant),
    col("type", Kind::Text),
    col("n", Kind::Number),
    col("median load s", Kind::Number),
    col("load s min–max", Kind::Number),
    col("mean load s ± 95% CI", Kind::Number),
    col("CV", Kind::Number),
    col("load time vs baseline (CI at adj. level)", Kind::Number),
    col("p adj.", Kind::Number),
    col("verdict", Kind::Text),
    col("on disk", Kind::Number),
    col("on disk vs baseline", Kind::Number),
    col("apparent", Kind::Number),
    col("ZFS used", Kind::Number),
    col("ZFS logicalused", Kind::Number),
    col("compressratio", Kind::Number),
    col("pg_database_size", Kind::Number),
];

/// The columns of a table of `m`.
pub fn columns(m: Metric) -> &'static [Column] {
    match m {
        Metric::Tps => &RESULT_COLUMNS,
        Metric::Latency => &LATENCY_COLUMNS,
        Metric::LoadTime => &LOAD_COLUMNS,
    }
}

/// The columns of the failed and not-run cells.
pub static PROBLEM_COLUMNS: [Column; 8] = [
    col("cell", Kind::Text),
    col("host", Kind::Text),
    col("filesystem", Kind::Text),
    col("workload", Kind::Text),
    col("clients", Kind::Number),
    col("repeat", Kind::Number),
    col("status", Kind::Text),
    col("detail", Kind::Text),
];

/// A table: its columns and, per row, one text per column.
#[derive(Debug, Clone, PartialEq)]
pub struct TableView {
    pub columns: Vec<Column>,
    pub rows: Vec<RowView>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RowView {
    /// One text per column, unescaped.
    pub cells: Vec<String>,
    /// CV above the threshold (HTML shades the row).
    pub noisy: bool,
    /// The row's variant is its host's winner.
    pub winner: bool,
    /// A warning under the table is about this row (HTML marks it).
    pub warned: bool,
}

/// One (workload, clients) table and the winners under it.
#[derive(Debug, Clone, PartialEq)]
pub struct SectionView {
    pub workload: String,
    pub clients: u32,
    /// What the rows are compared on, said when it is not tps.
    pub metric_note: Option<String>,
    /// SQL scripts: each statement's mean time per row (what the study
    /// measured), shown before the table.
    pub statements: Option<TableView>,
    pub table: TableView,
    /// The verdict lines of this table's hosts ([`super::verdicts`]: the
    /// same sentences the report leads with), in host order.
    pub verdicts: Vec<String>,
    /// The rows' warnings in words ([`Row::warnings`]),
    /// in row order.
    pub warnings: Vec<String>,
}

impl SectionView {
    /// `tpcb — 4 clients`, from the workload as the renderer escaped it.
    pub fn heading(&self, workload: &str) -> String {
        let s = if self.clients == 1 { "" } else { "s" };
        format!("{workload} — {} client{s}", self.clients)
    }
}

/// How a renderer writes byte sizes: the one cell whose text differs
/// between the Markdown (`40.0 MiB`) and the HTML report (`40 MiB`, as on
/// the plots' axes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SizeText {
    /// [`text::iec_bytes`]: one decimal above bytes.
    OneDecimal,
    /// [`text::iec_bytes_short`]: no trailing zeros.
    Short,
}

impl SizeText {
    fn of(self, b: Option<f64>) -> String {
        match (b, self) {
            (None, _) => DASH.into(),
            (Some(b), SizeText::OneDecimal) => text::iec_bytes(b),
            (Some(b), SizeText::Short) => text::iec_bytes_short(b),
        }
    }
}

/// Everything the Markdown and HTML reports say, as unescaped text.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportView {
    /// `Bundles: a, b`, when the bundles have names (the HTML report).
    pub bundles: Option<String>,
    /// No table, problem or warm-up: the report is [`NO_RESULTS`].
    pub empty: bool,
    /// Method and blocking notes, in the order shown.
    pub notes: Vec<String>,
    /// The noisy threshold in percent (`5`).
    pub cv_threshold_pct: String,
    /// One per (workload, clients); none: [`NO_COUNTED_RUN`].
    pub sections: Vec<SectionView>,
    /// `3 warm-up runs not counted.`
    pub warmups: Option<String>,
    /// Adaptive repeats that were not needed.
    pub not_needed: Option<String>,
    /// Failed and not-run cells, when there are any.
    pub problems: Option<TableView>,
}

impl ReportView {
    pub fn new(r: &Report, sizes: SizeText) -> Self {
        let bundles = (!r.bundles.iter().all(|b| b.is_empty()))
            .then(|| format!("Bundles: {}", r.bundles.join(", ")));
        let sections = r
            .tables
            .iter()
            .map(|t| SectionView {
                workload: t.workload.clone(),
                clients: t.clients,
                metric_note: t.metric.note(t.rate),
                statements: statements_table(t),
                table: TableView {
                    columns: columns(t.metric).to_vec(),
                    rows: t
                        .hosts
                        .iter()
                        .flat_map(|h| {
                            h.rows.iter().map(move |row| RowView {
                                cells: result_cells(row, t.metric, sizes),
                                noisy: row.stats.noisy,
                                winner: h.winner.as_deref()
                                    == Some(row.stats.key.filesystem.as_str()),
                                warned: !row.warnings().is_empty(),
                            })
                        })
                        .collect(),
                },
                verdicts: r
                    .verdicts
                    .iter()
                    .filter(|v| v.workload == t.workload && v.clients == t.clients)
                    .map(|v| v.sentence.clone())
                    .collect(),
                warnings: t
                    .hosts
                    .iter()
                    .flat_map(|h| &h.rows)
                    .flat_map(|row| row.warnings())
                    .collect(),
            })
            .collect();
        let problems = (!r.problems.is_empty()).then(|| TableView {
            columns: PROBLEM_COLUMNS.to_vec(),
            rows: r
                .problems
                .iter()
                .map(|p| RowView {
                    cells: vec![
                        p.cell_id.clone(),
                        p.host.clone(),
                        p.filesystem.clone(),
                        p.workload.clone(),
                        p.clients.to_string(),
                        p.repeat.to_string(),
                        p.status.clone(),
                        p.detail.clone(),
                    ],
                    noisy: false,
                    winner: false,
                    warned: false,
                })
                .collect(),
        });
        let n = r.warmups_excluded;
        ReportView {
            bundles,
            empty: r.tables.is_empty() && r.problems.is_empty() && n == 0,
            notes: r.notes.clone(),
            cv_threshold_pct: text::fmt_g(r.cv_threshold * 100.0),
            sections,
            warmups: (n > 0).then(|| {
                format!(
                    "{n} warm-up run{} not counted.",
                    if n == 1 { "" } else { "s" }
                )
            }),
            not_needed: (r.not_needed > 0).then(|| not_needed_sentence(r.not_needed)),
            problems,
        }
    }

    /// `Noisy: CV above 5%.`, with how the renderer shows noisy rows
    /// (`" (rows shaded)"` in HTML, nothing in Markdown) before the stop.
    pub fn noisy_note(&self, how_shown: &str) -> String {
        format!("Noisy: CV above {}%{how_shown}.", self.cv_threshold_pct)
    }
}

/// "4 adaptive repeats were not run: ..." for the Markdown and HTML reports.
pub fn not_needed_sentence(n: usize) -> String {
    format!(
        "{n} adaptive repeat{} not run: the repeats before {} had already narrowed the 95% CI to the target.",
        if n == 1 { " was" } else { "s were" },
        if n == 1 { "it" } else { "them" }
    )
}

/// A statement as a column header: its first `max` characters on one
/// line (`insert into dataload select…`).
pub fn statement_label(statement: &str, max: usize) -> String {
    let one: String = statement.split_whitespace().collect::<Vec<_>>().join(" ");
    let one = one.trim_end_matches(';');
    if one.chars().count() <= max {
        one.to_owned()
    } else {
        let cut: String = one.chars().take(max.saturating_sub(1)).collect();
        format!("{}…", cut.trim_end())
    }
}

/// Milliseconds as the study printed them: `6.5 ms`, `28668 ms`.
pub fn ms_text(ms: f64) -> String {
    if ms >= 100.0 {
        format!("{ms:.0} ms")
    } else {
        format!("{ms:.1} ms")
    }
}

/// The statements table of a SQL script's section: a row per host ×
/// variant, a column per statement (mean ms over the counted runs, in
/// script order), then the total.  `None` when no row has statements.
fn statements_table(t: &Table) -> Option<TableView> {
    let rows: Vec<&Row> = t.hosts.iter().flat_map(|h| &h.rows).collect();
    let widest = rows.iter().max_by_key(|r| r.stats.statements.len())?;
    if widest.stats.statements.is_empty() {
        return None;
    }
    let mut columns = vec![col("host", Kind::Text), col("filesystem", Kind::Variant)];
    for (i, s) in widest.stats.statements.iter().enumerate() {
        columns.push(Column {
            header: Cow::Owned(format!(
                "{}. {} (ms)",
                i + 1,
                statement_label(&s.statement, 32)
            )),
            kind: Kind::Number,
        });
    }
    columns.push(col("total load s (mean ± 95% CI)", Kind::Number));
    let n = widest.stats.statements.len();
    let winners: Vec<(&str, Option<&str>)> = t
        .hosts
        .iter()
        .map(|h| (h.host.as_str(), h.winner.as_deref()))
        .collect();
    Some(TableView {
        columns,
        rows: rows
            .iter()
            .map(|row| {
                let g = &row.stats;
                let mut cells = vec![g.key.host.clone(), g.key.filesystem.clone()];
                for i in 0..n {
                    cells.push(
                        g.statements
                            .get(i)
                            .map_or(DASH.into(), |s| mean_ci_text(&s.ms, 1)),
                    );
                }
                cells.push(
                    g.load_s
                        .as_ref()
                        .map_or(DASH.into(), |l| mean_ci_text(l, 2)),
                );
                RowView {
                    cells,
                    noisy: g.noisy,
                    winner: winners
                        .iter()
                        .any(|(h, w)| *h == g.key.host && *w == Some(g.key.filesystem.as_str())),
                    warned: false,
                }
            })
            .collect(),
    })
}

/// A row's texts in the order of [`columns`] of `m`.
fn result_cells(row: &Row, m: Metric, sizes: SizeText) -> Vec<String> {
    let g = &row.stats;
    let s = g.summary(m).unwrap_or(&g.tps);
    let mut cv = match s.cv {
        Some(cv) if g.noisy => format!("{:.1}% noisy", cv * 100.0),
        Some(cv) => format!("{:.1}%", cv * 100.0),
        None => DASH.into(),
    };
    // Order effects are a property of the runs' spread: marked beside it.
    if let Some(d) = &row.drift {
        if d.first_run.outlier {
            cv.push_str(&format!(" {WARN} first run"));
        }
        if d.trend.as_ref().is_some_and(|t| t.drift) {
            cv.push_str(&format!(" {WARN} drift"));
        }
    }
    let mut on_disk = sizes.of(g.on_disk_bytes);
    if g.on_disk_bytes.is_some() && g.on_disk_measure != crate::config::fs::SizeMeasure::Du {
        // Not du's: said where the number is.
        on_disk = format!("{on_disk} ({})", g.on_disk_measure.label());
    }
    if let Some(c) = row.sizes_check.as_ref().filter(|c| !c.agree) {
        on_disk = format!(
            "{WARN} {on_disk} ≠ {} {}",
            c.other_label(),
            sizes.of(Some(c.other_bytes))
        );
    }
    let ratio_cell = g
        .zfs_compressratio
        .map_or(DASH.into(), |x| format!("{x:.2}x"));
    let (ratio, p, verdict) = match &row.comparison {
        None => (
            "1".to_owned(),
            DASH.to_owned(),
            Verdict::Baseline.text().to_owned(),
        ),
        Some(c) => {
            // The interval its difference test was decided at (the
            // family's adjusted level), and that level when not 95%.
            let ratio = match (c.ratio, c.difference) {
                (Some(rt), Some(d)) => {
                    let level = if (d.ci.level - 0.95).abs() < 1e-12 {
                        String::new()
                    } else {
                        format!(", {}", level_text(d.ci.level))
                    };
                    format!("{:.3} ({:.3}–{:.3}{level})", rt.ratio, d.ci.low, d.ci.high)
                }
                (Some(rt), None) => format!("{:.3}", rt.ratio),
                (None, _) => DASH.into(),
            };
            let p = c.p_adjusted().map_or(DASH.into(), p_cell);
            let verdict = c.verdict.text().to_owned();
            (ratio, p, verdict)
        }
    };
    let digits = match m {
        Metric::Tps => 1,
        Metric::Latency => 3,
        Metric::LoadTime => 2,
    };
    let lead = vec![
        g.key.host.clone(),
        g.key.filesystem.clone(),
        g.fs_type.clone(),
        s.n.to_string(),
        format!("{:.digits$}", s.median),
        format!("{:.digits$}–{:.digits$}", s.min, s.max),
        mean_ci_text(s, digits),
        cv,
    ];
    let rest = match m {
        Metric::Tps => vec![
            g.latency_ms
                .as_ref()
                .map_or(DASH.into(), |l| mean_ci_text(l, 3)),
            ratio,
            p,
            verdict,
            on_disk,
            sizes.of(g.du_apparent_bytes),
            ratio_cell,
        ],
        Metric::Latency => vec![
            format!("{:.1}", g.tps.mean),
            match (&g.schedule_lag_ms, g.schedule_lag_max_ms) {
                (Some(l), Some(mx)) => format!("{:.3}, {mx:.3}", l.mean),
                (Some(l), None) => format!("{:.3}", l.mean),
                _ => DASH.into(),
            },
            g.skipped_transactions
                .map_or(DASH.into(), |n| n.to_string()),
            g.late_transactions.map_or(DASH.into(), |n| n.to_string()),
            ratio,
            p,
            verdict,
            on_disk,
            sizes.of(g.du_apparent_bytes),
            ratio_cell,
        ],
        Metric::LoadTime => vec![
            ratio,
            p,
            verdict,
            on_disk,
            row.on_disk_vs_baseline
                .map_or(DASH.into(), |x| format!("{x:.3}")),
            sizes.of(g.du_apparent_bytes),
            sizes.of(g.zfs_used_bytes),
            sizes.of(g.zfs_logicalused_bytes),
            ratio_cell,
            sizes.of(g.pg_database_bytes),
        ],
    };
    lead.into_iter().chain(rest).collect()
}

/// `812.5 ± 12.3`: the mean and half its 95% CI, or the mean alone.
fn mean_ci_text(s: &Summary, digits: usize) -> String {
    match s.ci95 {
        Some((lo, hi)) => format!("{:.digits$} ± {:.digits$}", s.mean, (hi - lo) / 2.0),
        None => format!("{:.digits$}", s.mean),
    }
}
