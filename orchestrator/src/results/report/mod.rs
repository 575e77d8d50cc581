//! Presentation: reports of results.
//!
//! [`build_report`] computes a [`Report`] once from the cell records of one
//! or more bundles ([`build`]); each format is one renderer, pure over it,
//! in a file of its own, named by one row of [`Format`]:
//! [`markdown`], [`csv`], [`json`] and [`html`] (with its SVG plots).  Their
//! shared texts are [`view`] (the tables and sentences) and [`latency`];
//! [`summary`] is the few lines `run` ends with on a terminal.
//! [`platform`] compares guests with their physical hosts (issue 26): every
//! format shows it ([`mark_platforms`] fills [`Report::platforms`]).
//! [`pooling`] refuses to pool bundles whose workloads or variants are
//! defined otherwise ([`check_pooling`], [`mark_differences`]);
//! [`compared`] says what was compared: the system and variant tables
//! ([`mark_compared`]).
//!
//! To add a format: a renderer file here, its row in [`Format`] (the name,
//! the `mod` line and the arm of [`Format::render`]), and a test.
use crate::model::CellResult;

pub mod build;
pub mod compared;
pub mod csv;
pub mod html;
pub mod inputs;
pub mod json;
pub mod latency;
pub mod markdown;
pub mod platform;
pub mod pooling;
pub mod sizes;
pub mod summary;
pub mod verdicts;
pub mod view;

#[cfg(test)]
mod tests;

pub use build::{
    build_report, by_bundle_label, label_standins, mark_checksums, mark_standins, standin_label,
    HostBlock, Problem, Report, ReportError, ReportOptions, Row, Source, Table,
    REPORT_SCHEMA_VERSION,
};
pub use compared::mark_compared;
pub use platform::{label_tcg_guests, mark_platforms, tcg_label, Platform};
pub use pooling::{check_pooling, mark_differences};
pub use verdicts::{verdict_lines, VerdictLine, VERDICTS_HEADING};

/// What `report` writes: the formats, by their `--format` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Markdown: the answer, the method, the tables.
    Md,
    /// One row per host × variant × workload × clients, with its verdict.
    Csv,
    /// The whole report (`schema_version`, `verdicts`, tables).
    Json,
    /// One self-contained file with SVG plots, the ratio plot first.
    Html,
    /// The few lines `run` ends with: the answer, then each host's ranking.
    Summary,
}

impl Format {
    /// `r` in this format.  `sources` are the cell records `r` was built
    /// from, for the formats that draw more than the report (the HTML
    /// plots' timelines and load phases); `width` is the columns the
    /// summary is wrapped at.
    pub fn render(self, r: &Report, sources: &[Source], width: usize) -> String {
        match self {
            Format::Summary => summary::render_summary(r, width),
            Format::Md => markdown::render_markdown_report(r),
            Format::Csv => csv::render_csv(r),
            Format::Json => json::render_json(r),
            Format::Html => {
                let all: Vec<CellResult> = sources
                    .iter()
                    .flat_map(|s| s.cells.iter().cloned())
                    .collect();
                html::render_html(r, &all)
            }
        }
    }
}
