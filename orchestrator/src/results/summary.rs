//! The summary `run` ends with on a terminal: per workload, client count
//! and host, which variant won and by how much, the way hyperfine says it
//! ("`xfs` ran 1.23 ± 0.04 times faster than `ext4`"), the noisy groups
//! named, and where the full report is.  It fits `width` columns (100 by
//! default); the full tables (15 columns) go to the Markdown and HTML
//! reports written next to the bundle ([`write_full_reports`]).
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::compare::{ratio_of_means, welch, ALPHA};
use super::report::{self, Report, ReportOptions, Row, Source};
use super::{BundleError, CellResult};

/// The full report of one bundle as `fsmatrix report BUNDLE` gives it by
/// default (checksums verified first, stand-in hosts marked), with the
/// cells it was built from.
pub fn bundle_report(dir: &Path) -> Result<(Report, Vec<CellResult>), BundleError> {
    let name = dir.file_name().map_or_else(
        || dir.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let check = report::check_checksums(dir, &name, false)?;
    let mut cells = report::load_bundle_results(dir)?;
    let standins = report::standin_hosts(dir);
    report::label_standins(&mut cells, &standins);
    let mut r = report::build_report(
        &[Source {
            name: &name,
            cells: &cells,
        }],
        &ReportOptions::default(),
    )
    .map_err(|e| BundleError::NotABundle {
        path: dir.to_owned(),
        why: e.to_string(),
    })?;
    report::mark_standins(&mut r, &standins);
    report::mark_checksums(&mut r, &[check]);
    Ok((r, cells))
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
    std::fs::write(&md, report::render_markdown_report(r))?;
    std::fs::write(&html, super::html::render_html(r, cells))?;
    Ok((md, html))
}

/// `1.23 ± 0.04` (the CI's half-width), or `1.23` without a CI.
fn ratio_text(best: &Row, other: &Row) -> Option<String> {
    let r = ratio_of_means(&best.stats.tps_values, &other.stats.tps_values)?;
    Some(match r.ci95 {
        Some((lo, hi)) => format!("{:.2} ± {:.2}", r.ratio, (hi - lo) / 2.0),
        None => format!("{:.2}", r.ratio),
    })
}

/// The summary text, wrapped at `width` columns.
pub fn render_summary(r: &Report, width: usize) -> String {
    let mut out = String::new();
    for t in &r.tables {
        for hb in &t.hosts {
            let mut rows: Vec<&Row> = hb.rows.iter().filter(|r| r.stats.tps.n > 0).collect();
            if rows.is_empty() {
                continue;
            }
            rows.sort_by(|a, b| b.stats.tps.mean.total_cmp(&a.stats.tps.mean));
            let mut lines = vec![format!(
                "{} with {} client{} on {}:",
                t.workload,
                t.clients,
                if t.clients == 1 { "" } else { "s" },
                hb.host
            )];
            let best = rows[0];
            let n_min = rows.iter().map(|r| r.stats.tps.n).min().unwrap_or(0);
            let fs = |r: &Row| format!("`{}`", r.stats.key.filesystem);
            if rows.len() == 1 {
                lines.push(format!(
                    "  {}: {:.0} tps (n = {}), nothing to compare with",
                    fs(best),
                    best.stats.tps.mean,
                    best.stats.tps.n
                ));
            } else if n_min < 2 {
                lines.push(format!(
                    "  too few repeats to test (n = {n_min}); highest mean: {} {:.0} tps",
                    fs(best),
                    best.stats.tps.mean
                ));
            } else {
                let head = match &hb.winner {
                    Some(_) => format!("  {} ran", fs(best)),
                    None => format!(
                        "  no variant is faster than every other at p < {ALPHA}; highest mean {}:",
                        fs(best)
                    ),
                };
                lines.push(head);
                for other in &rows[1..] {
                    let ratio = ratio_text(best, other).unwrap_or_else(|| "?".into());
                    let p = welch(&best.stats.tps_values, &other.stats.tps_values)
                        .map(|w| w.p)
                        .unwrap_or(1.0);
                    let word = if p < ALPHA {
                        "faster"
                    } else {
                        "faster (not significant)"
                    };
                    lines.push(format!(
                        "    {ratio} times {word} than {} (p = {})",
                        fs(other),
                        p_text(p)
                    ));
                }
            }
            let noisy: Vec<String> = rows
                .iter()
                .filter(|r| r.stats.noisy)
                .map(|r| format!("{} {:.1}%", fs(r), r.stats.tps.cv.unwrap_or(0.0) * 100.0))
                .collect();
            if !noisy.is_empty() {
                lines.push(format!(
                    "  noisy (tps CV above {:.0}%): {}",
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

fn p_text(p: f64) -> String {
    if p < 0.001 {
        "< 0.001".into()
    } else {
        format!("{p:.3}")
    }
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
