//! The summary `run` ends with on a terminal: the answer, once (the
//! verdict lines of [`super::verdicts`]: faster, slower, equivalent or
//! inconclusive, with the ratio, its interval and the adjusted p), then per
//! workload, client count and host only what the answer leaves out: a SQL
//! script's statements' times and sizes, a rate-limited row's schedule
//! lag, the noisy groups and the warnings; then each guest against its physical host
//! ([`super::platform`]: "ext4 on metal1: under KVM (virtio-blk,
//! cache=none) 0.62 ± 0.05 times the tps of bare metal (p < 0.001)").
//! It fits `width` columns (100 by
//! default); the full tables (15 columns) go to the Markdown and HTML
//! reports written next to the bundle ([`write_full_reports`]).
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::html::render_html;
use super::inputs::{read_bundle, ReportInputs};
use super::markdown::render_markdown_report;
use super::platform::{platform_line, platform_sections, PLATFORM_HEADING};
use super::verdicts::VERDICTS_HEADING;
use super::view::{ms_text, statement_label};
use super::{Report, ReportOptions, Row};
use crate::results::analysis::stats::Metric;
use crate::results::{BundleError, CellResult};
use crate::text::iec_bytes;

/// The full report of one bundle as `fsmatrix report BUNDLE` gives it by
/// default (checksums verified first, stand-in hosts and TCG guests
/// marked, guests compared with their physical hosts), with the cells it
/// was built from.
pub fn bundle_report(dir: &Path) -> Result<(Report, Vec<CellResult>), BundleError> {
    let mut inputs = ReportInputs::default();
    inputs.add(read_bundle(dir, false)?);
    let r = inputs
        .build(&ReportOptions::default())
        .map_err(|e| BundleError::NotABundle {
            path: dir.to_owned(),
            why: e.to_string(),
        })?;
    Ok((r, inputs.into_cells()))
}

/// Write the bundle's full report as Markdown and HTML next to it (not in
/// the bag: `<bundle>.report.md`, `<bundle>.report.html`); their paths.
pub fn write_full_reports(
    dir: &Path,
    r: &Report,
    cells: &[CellResult],
) -> std::io::Result<(PathBuf, PathBuf)> {
    let parent = dir.parent().unwrap_or(Path::new("."));
    let name = dir
        .file_name()
        .map_or_else(|| "bundle".into(), |n| n.to_string_lossy().into_owned());
    let md = parent.join(format!("{name}.report.md"));
    let html = parent.join(format!("{name}.report.html"));
    std::fs::write(&md, render_markdown_report(r))?;
    std::fs::write(&html, render_html(r, cells))?;
    Ok((md, html))
}

/// `decided at α = 0.05 per host (Holm's step-down), equivalent within
/// ±5%`: the rule the answer was decided by, in a few words.
pub fn decided_at(r: &Report) -> String {
    let how = match r.rule.correction {
        crate::config::Correction::Holm => "Holm's step-down",
        crate::config::Correction::None => "no correction: each test alone",
    };
    format!(
        "decided at α = {} per host ({how}), equivalent within ±{}",
        r.alpha, r.rule.margin
    )
}

/// The summary text, wrapped at `width` columns.
pub fn render_summary(r: &Report, width: usize) -> String {
    // For a terminal: every line with its control characters escaped (a
    // bundle's names, notes and facts are other people's text).
    render_summary_text(r, width)
        .split_inclusive('\n')
        .map(|l| match l.strip_suffix('\n') {
            Some(body) => format!("{}\n", crate::text::terminal_safe(body)),
            None => crate::text::terminal_safe(l).into_owned(),
        })
        .collect()
}

fn render_summary_text(r: &Report, width: usize) -> String {
    let mut out = String::new();
    // Bundles side by side whose definitions differ: said before any number.
    for d in &r.definition_differences {
        wrap_into(&mut out, &format!("Definitions differ: {d}."), width);
    }
    if !r.verdicts.is_empty() {
        wrap_into(&mut out, &format!("{VERDICTS_HEADING}:"), width);
        for v in &r.verdicts {
            wrap_into(&mut out, &format!("  {}", v.sentence), width);
        }
        for l in &r.sizes {
            wrap_into(&mut out, &format!("  {}", l.sentence), width);
        }
        wrap_into(&mut out, &format!("  ({})", decided_at(r)), width);
        out.push('\n');
    }
    for t in &r.tables {
        let m = t.metric;
        for hb in &t.hosts {
            let rows: Vec<&Row> = hb
                .rows
                .iter()
                .filter(|r| !r.stats.values(m).is_empty())
                .collect();
            if rows.is_empty() {
                continue;
            }
            let how = match m {
                Metric::Tps => String::new(),
                Metric::Latency => format!(
                    " at {} (rate-limited: compared on latency)",
                    t.rate.map_or("a fixed rate".into(), |r| format!("{r} tps"))
                ),
                Metric::LoadTime => " (SQL script: compared on load time)".into(),
            };
            let mut lines = vec![format!(
                "{} with {} client{}{how} on {}:",
                t.workload,
                t.clients,
                if t.clients == 1 { "" } else { "s" },
                hb.host
            )];
            let fs = |r: &Row| format!("`{}`", r.stats.key.filesystem);
            // The answer is said once, above: here only what it leaves out
            // (statements and sizes, lag, noise, warnings).
            if m == Metric::LoadTime {
                for row in &rows {
                    lines.push(format!("  {}: {}", fs(row), load_line(row)));
                }
            }
            if m == Metric::Latency {
                for row in &rows {
                    if let Some(l) = lag_line(row) {
                        lines.push(format!("  {}: {l}", fs(row)));
                    }
                }
            }
            let noisy: Vec<String> = rows
                .iter()
                .filter(|r| r.stats.noisy)
                .map(|r| {
                    let cv = r.stats.summary(m).and_then(|s| s.cv).unwrap_or(0.0);
                    format!("{} {:.1}%", fs(r), cv * 100.0)
                })
                .collect();
            if !noisy.is_empty() {
                lines.push(format!(
                    "  noisy ({} CV above {:.0}%): {}",
                    m.name(),
                    r.cv_threshold * 100.0,
                    noisy.join(", ")
                ));
            }
            let warned: Vec<String> = rows
                .iter()
                .filter_map(|r| {
                    let tags = r.warning_tags();
                    (!tags.is_empty()).then(|| format!("{} {}", fs(r), tags.join(", ")))
                })
                .collect();
            if !warned.is_empty() {
                lines.push(format!(
                    "  warning (see the full report): {}",
                    warned.join("; ")
                ));
            }
            if lines.len() == 1 {
                continue;
            }
            for l in lines {
                wrap_into(&mut out, &l, width);
            }
            out.push('\n');
        }
    }
    if out.is_empty() {
        out.push_str("no cell finished: nothing to compare\n\n");
    }
    for s in platform_sections(r) {
        wrap_into(
            &mut out,
            &format!("{PLATFORM_HEADING}, {}:", s.heading()),
            width,
        );
        for p in &s.rows {
            wrap_into(&mut out, &format!("  {}", platform_line(p)), width);
        }
        out.push('\n');
    }
    if !r.problems.is_empty() {
        let line = format!(
            "{} cell{} failed or did not run (see the full report)",
            r.problems.len(),
            if r.problems.len() == 1 { "" } else { "s" }
        );
        wrap_into(&mut out, &line, width);
        out.push('\n');
    }
    out
}

/// A SQL script's row: its statements' mean times, the total, the sizes.
fn load_line(row: &Row) -> String {
    let g = &row.stats;
    let mut parts: Vec<String> = g
        .statements
        .iter()
        .map(|s| {
            format!(
                "{} {}",
                statement_label(&s.statement, 24),
                ms_text(s.ms.mean)
            )
        })
        .collect();
    if let Some(l) = &g.load_s {
        parts.push(format!("total {:.2} s", l.mean));
    }
    let mut sizes = Vec::new();
    if let Some(b) = g.on_disk_bytes {
        sizes.push(match g.on_disk_measure {
            crate::config::fs::SizeMeasure::Du => format!("{} on disk", iec_bytes(b)),
            m => format!("{} on disk ({})", iec_bytes(b), m.label()),
        });
    }
    if let Some(b) = g.du_apparent_bytes {
        sizes.push(format!("{} apparent", iec_bytes(b)));
    }
    if let Some(x) = g.zfs_compressratio {
        sizes.push(format!("compressratio {x:.2}x"));
    }
    if let Some(b) = g.pg_database_bytes {
        sizes.push(format!("pg_database_size {}", iec_bytes(b)));
    }
    if let Some(x) = row.on_disk_vs_baseline {
        sizes.push(format!("{x:.2}x the baseline on disk"));
    }
    if !sizes.is_empty() {
        parts.push(sizes.join(", "));
    }
    parts.join("; ")
}

/// A rate-limited row's schedule lag and skipped/late transactions.
fn lag_line(row: &Row) -> Option<String> {
    let g = &row.stats;
    let mut parts = Vec::new();
    if let Some(l) = &g.schedule_lag_ms {
        parts.push(format!("schedule lag {:.3} ms mean", l.mean));
    }
    if let Some(mx) = g.schedule_lag_max_ms {
        parts.push(format!("{mx:.3} ms max"));
    }
    if let Some(n) = g.skipped_transactions {
        parts.push(format!("{n} skipped"));
    }
    if let Some(n) = g.late_transactions {
        parts.push(format!("{n} late"));
    }
    (!parts.is_empty()).then(|| parts.join(", "))
}

/// Append `line` broken at spaces to at most `width` columns (a word longer
/// than that stays whole); continuation lines are indented 6 spaces.
fn wrap_into(out: &mut String, line: &str, width: usize) {
    let indent = line.len() - line.trim_start().len();
    let mut cur = String::new();
    for word in line.split(' ').filter(|w| !w.is_empty()) {
        let lead = if cur.is_empty() {
            if out.ends_with('\n') || out.is_empty() {
                " ".repeat(indent)
            } else {
                String::new()
            }
        } else {
            " ".into()
        };
        if !cur.trim().is_empty() && cur.chars().count() + lead.len() + word.chars().count() > width
        {
            let _ = writeln!(out, "{cur}");
            cur = format!("{}{word}", " ".repeat(indent + 6));
        } else {
            cur.push_str(&lead);
            cur.push_str(word);
        }
    }
    let _ = writeln!(out, "{cur}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_lines_wrap_at_the_width_with_an_indent() {
        let mut out = String::new();
        wrap_into(
            &mut out,
            "  `a-very-long-variant-name` ran 1.23 ± 0.04 times faster than `another-long-name`",
            40,
        );
        for l in out.lines() {
            assert!(l.chars().count() <= 40, "{l:?}");
        }
        assert!(out.lines().count() >= 2);
        assert!(out.lines().nth(1).unwrap().starts_with("        "), "{out}");
    }
}
