//! The summary `run` ends with on a terminal: per workload, client count
//! and host, which variant won and by how much, the way hyperfine says it
//! ("`xfs` ran 1.23 ± 0.04 times faster than `ext4`"), the noisy groups
//! named, and where the full report is.  Rows are compared on their
//! table's [`Metric`]: a rate-limited workload on latency ("`xfs` had 1.10
//! ± 0.03 times lower latency than `ext4`"), a SQL script on its load time
//! ("`zfs-on` loaded 1.20 ± 0.10 times faster"), led by its statements'
//! times and sizes; then each guest against its physical host
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
use crate::results::analysis::compare::{times_better, welch, ALPHA};
use crate::results::analysis::stats::{p_text, Metric};
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

/// `1.23 ± 0.04` (the CI's half-width), or `1.23` without a CI: how many
/// times better `best` is than `other` on `m`.
fn ratio_text(best: &Row, other: &Row, m: Metric) -> Option<String> {
    let r = times_better(best.stats.values(m), other.stats.values(m), m)?;
    Some(match r.ci95 {
        Some((lo, hi)) => format!("{:.2} ± {:.2}", r.ratio, (hi - lo) / 2.0),
        None => format!("{:.2}", r.ratio),
    })
}

/// A row's mean of `m` with its unit (`812 tps`, `4.21 ms`, `28.67 s`).
fn mean_text(row: &Row, m: Metric) -> String {
    row.stats
        .summary(m)
        .map_or_else(|| "?".into(), |s| m.value_text(s.mean))
}

/// The summary text, wrapped at `width` columns.
pub fn render_summary(r: &Report, width: usize) -> String {
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
        out.push('\n');
    }
    for t in &r.tables {
        let m = t.metric;
        for hb in &t.hosts {
            let mut rows: Vec<&Row> = hb
                .rows
                .iter()
                .filter(|r| !r.stats.values(m).is_empty())
                .collect();
            if rows.is_empty() {
                continue;
            }
            let mean = |r: &Row| r.stats.summary(m).map_or(f64::NAN, |s| s.mean);
            rows.sort_by(|a, b| {
                let o = mean(b).total_cmp(&mean(a));
                if m.higher_is_better() {
                    o
                } else {
                    o.reverse()
                }
            });
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
            let best = rows[0];
            let n_min = rows
                .iter()
                .map(|r| r.stats.values(m).len())
                .min()
                .unwrap_or(0);
            let fs = |r: &Row| format!("`{}`", r.stats.key.filesystem);
            let lead = match m {
                Metric::Tps => "highest mean",
                Metric::Latency => "lowest mean latency",
                Metric::LoadTime => "shortest mean load time",
            };
            if m == Metric::LoadTime {
                for row in &rows {
                    lines.push(format!("  {}: {}", fs(row), load_line(row)));
                }
            }
            if rows.len() == 1 {
                lines.push(format!(
                    "  {}: {} (n = {}), nothing to compare with",
                    fs(best),
                    mean_text(best, m),
                    best.stats.values(m).len()
                ));
            } else if n_min < 2 {
                lines.push(format!(
                    "  too few repeats to test (n = {n_min}); {lead}: {} {}",
                    fs(best),
                    mean_text(best, m)
                ));
            } else {
                let head = match &hb.winner {
                    Some(_) => format!("  {} {}", fs(best), m.verb()),
                    None => format!("  {lead}: {}; the others against it:", fs(best)),
                };
                lines.push(head);
                for other in &rows[1..] {
                    let ratio = ratio_text(best, other, m).unwrap_or_else(|| "?".into());
                    let p = welch(best.stats.values(m), other.stats.values(m))
                        .map(|w| w.p)
                        .unwrap_or(1.0);
                    let word = m.better_words();
                    let word = if p < ALPHA {
                        word.to_owned()
                    } else {
                        format!("{word} (not significant)")
                    };
                    lines.push(format!(
                        "    {ratio} times {word} than {} ({})",
                        fs(other),
                        p_text(p)
                    ));
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
    if let Some(b) = g.du_on_disk_bytes {
        sizes.push(format!("{} on disk", iec_bytes(b)));
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
