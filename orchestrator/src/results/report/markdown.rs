//! `--format md`: the report as Markdown, the texts [`ReportView`]'s and
//! [`super::latency`]'s, escaped and joined here.
use std::fmt::Write as _;

use super::latency::{
    group_name, latency_cells, ms, rows, LATENCY_COLUMNS, LATENCY_HEADING, LATENCY_NOTE,
    STATEMENTS_HEADING,
};
use super::platform::{platform_line, platform_sections, PLATFORM_HEADING};
use super::verdicts::VERDICTS_HEADING;
use super::view::{
    Kind, ReportView, SizeText, TableView, METHOD_HEADING, NO_COUNTED_RUN, NO_RESULTS,
    PROBLEMS_HEADING, TITLE, WARN,
};
use super::{build_report, Report, ReportOptions, Source};
use crate::model::CellResult;

/// Make text safe inside a Markdown table cell (and a line of a list):
/// every character that can open a Markdown or HTML construct (emphasis,
/// a link or image, raw HTML, an entity, a heading, a table column) is
/// backslash-escaped, as CommonMark allows for any ASCII
/// punctuation; line breaks become spaces and other control characters
/// `\u{..}` text.  The text comes from other
/// people's bundles: a host's kernel string or error, a variant's name.
pub(super) fn md_text(s: &str) -> String {
    let flat = s.replace(['\n', '\r'], " ");
    let chars: Vec<char> = flat.trim().chars().collect();
    let mut out = String::with_capacity(flat.len() + 8);
    for (i, &c) in chars.iter().enumerate() {
        // `_` inside a word (pg_database_size) never opens emphasis in
        // CommonMark; at a word's edge it may.
        let in_word = |j: Option<usize>| {
            j.and_then(|j| chars.get(j))
                .is_some_and(|c| c.is_alphanumeric())
        };
        let next = chars.get(i + 1).copied();
        let escape = match c {
            '_' => !(in_word(i.checked_sub(1)) && in_word(Some(i + 1))),
            // A tag or an autolink starts `<` + a non-space; an entity `&` +
            // a letter or `#`; a quote or heading only at the text's start.
            '<' => next.is_some_and(|n| !n.is_whitespace()),
            '&' => next.is_some_and(|n| n.is_alphanumeric() || n == '#'),
            '>' | '#' | '+' | '-' => i == 0,
            // A backtick stays: a code span interprets nothing inside it
            // (no HTML, no link), and our own texts use them for code.
            '|' | '*' | '[' | ']' | '~' | '\\' => true,
            _ => false,
        };
        if c.is_control() {
            // An escape sequence or a carriage return: shown, not obeyed
            // (the backslash escaped, so it renders as written).
            let _ = write!(out, "\\\\u{{{:x}}}", c as u32);
            continue;
        }
        if escape {
            out.push('\\');
        }
        out.push(c);
    }
    out
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
    // Side by side with differing definitions: said before any verdict.
    for d in &r.definition_differences {
        let _ = writeln!(
            out,
            "**Definitions differ:** {}.\n",
            md_text(&d.to_string())
        );
    }
    if !r.verdicts.is_empty() {
        let _ = writeln!(out, "## {VERDICTS_HEADING}\n");
        for l in &r.verdicts {
            let _ = writeln!(out, "- {}", md_text(&l.sentence));
        }
        for l in &r.sizes {
            let _ = writeln!(out, "- {}", md_text(&l.sentence));
        }
        out.push('\n');
    }
    let _ = writeln!(out, "## {METHOD_HEADING}\n");
    for n in &v.notes {
        let _ = writeln!(out, "- {}", md_text(n));
    }
    let _ = writeln!(out, "- {}\n", md_text(&v.noisy_note("")));
    compared_markdown(&mut out, r);
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
        for l in &s.verdicts {
            let _ = writeln!(out, "- {}", md_text(l));
        }
        if !s.verdicts.is_empty() {
            out.push('\n');
        }
    }
    platforms_markdown(&mut out, r);
    for sentence in [&v.warmups, &v.not_needed].into_iter().flatten() {
        let _ = writeln!(out, "{}\n", md_text(sentence));
    }
    out.push_str(&latency_markdown(r));
    if let Some(t) = &v.problems {
        let _ = writeln!(out, "## {PROBLEMS_HEADING}\n");
        md_table(&mut out, t);
        out.push('\n');
    }
    out
}

/// What was compared ([`super::compared`]): the system and variant tables.
fn compared_markdown(out: &mut String, r: &Report) {
    for (heading, t) in super::compared::compared_tables(r) {
        let _ = writeln!(out, "## {heading}\n");
        md_table(out, &t);
        out.push('\n');
    }
}

/// The guests against bare metal ([`super::platform`]): per (workload,
/// clients) one line per variant and guest; nothing without guests.
fn platforms_markdown(out: &mut String, r: &Report) {
    let sections = platform_sections(r);
    if sections.is_empty() {
        return;
    }
    let _ = writeln!(out, "## {PLATFORM_HEADING}\n");
    for s in sections {
        let _ = writeln!(out, "### {}\n", md_text(&s.heading()));
        for p in &s.rows {
            let _ = writeln!(out, "- {}", md_text(&platform_line(p)));
        }
        out.push('\n');
    }
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

/// Make text safe inside a Markdown table cell that may sit in backticks.
fn md_code_text(s: &str) -> String {
    s.replace('|', "\\|")
        .replace('`', "'")
        .replace(['\n', '\r'], " ")
        .trim()
        .to_owned()
}

/// The latency sections: the latency table and the per-statement tables;
/// empty when no row has either.
pub fn latency_markdown(r: &Report) -> String {
    let mut out = String::new();
    let with_log: Vec<_> = rows(r)
        .filter_map(|(_, g)| g.latency_percentiles.as_ref().map(|l| (g, l)))
        .collect();
    if !with_log.is_empty() {
        let _ = writeln!(out, "## {LATENCY_HEADING}\n\n{LATENCY_NOTE}\n");
        let _ = writeln!(out, "| {} | p99 per run |", LATENCY_COLUMNS.join(" | "));
        let _ = writeln!(out, "|{}", "---|".repeat(LATENCY_COLUMNS.len() + 1));
        for (g, l) in with_log {
            let cells: Vec<String> = latency_cells(g, l)
                .iter()
                .map(|c| md_code_text(c))
                .collect();
            let per_run: Vec<String> = l.per_run.iter().map(|p| ms(p.p99_ms)).collect();
            let _ = writeln!(out, "| {} | {} |", cells.join(" | "), per_run.join(", "));
        }
        out.push('\n');
    }
    let with_statements: Vec<_> = rows(r)
        .map(|(_, g)| g)
        .filter(|g| !g.statement_latencies.is_empty())
        .collect();
    if !with_statements.is_empty() {
        let _ = writeln!(
            out,
            "## {STATEMENTS_HEADING}\n\nEach statement's mean latency over the counted runs (pgbench prints each run's mean per statement).\n"
        );
        for g in with_statements {
            let _ = writeln!(out, "### {}\n", md_code_text(&group_name(g)));
            let counts = g.statement_latencies.iter().any(|s| s.failures.is_some());
            let _ = writeln!(
                out,
                "| script | statement | mean ms | runs |{}\n|---|---|---|---|{}",
                if counts { " failures | retries |" } else { "" },
                if counts { "---|---|" } else { "" }
            );
            for s in &g.statement_latencies {
                let _ = write!(
                    out,
                    "| {} | `{}` | {} | {} |",
                    s.script + 1,
                    md_code_text(&s.command),
                    ms(s.latency_ms),
                    s.runs
                );
                if counts {
                    let n = |v: Option<u64>| v.map_or(String::new(), |v| v.to_string());
                    let _ = write!(out, " {} | {} |", n(s.failures), n(s.retries));
                }
                out.push('\n');
            }
            out.push('\n');
        }
    }
    out
}
