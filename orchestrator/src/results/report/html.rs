//! `--format html`: one self-contained HTML file (inline CSS and SVG, no
//! script, nothing fetched) with the Markdown report's tables and five kinds
//! of plot drawn by `plotters`' SVG backend:
//!
//! 1. `tps-vs-clients`: mean tps per client count, one line per variant, per
//!    host × workload, 95% CI error bars (one study's main figure);
//! 2. `tps-bars`: bars of mean tps per variant grouped by client count, per
//!    host × workload, 95% CI error bars;
//! 3. `tps-timeline`: per-second tps (pgbench `-P` progress) of every counted
//!    repeat, per host × workload × clients (another study's second figure);
//!    a variant with more than [`TIMELINE_MAX_LINES`] runs is drawn as its
//!    median per second inside a min–max band;
//! 4. `size-on-disk`: logical (du apparent) vs physical (du on disk) per
//!    variant, compressratio written over the bars;
//! 5. `init-phases`: `pgbench -i` phases stacked per variant (kinds 1 to 5
//!    are drawn in `html/plots.rs`);
//! 6. `latency-percentiles` ([`LATENCY_PLOT`], only where a workload has
//!    `latency_log`): latency at each percentile per variant, with the
//!    latency and per-statement tables (`html/latency_plot.rs`);
//! 7. `platform-ratio` ([`PLATFORM_PLOT`], only where a bundle had guests):
//!    per workload and client count, each variant's guest ÷ bare-metal
//!    ratio as a dot with its 95% CI whisker and a line at 1.0, with the
//!    sentences (`html/platform_plot.rs`, [`super::platform`]).
//!
//! Every plot is an `<svg class="fsmx-plot" data-plot="KIND">`; a kind with
//! no data is left out with a sentence saying why, never drawn as an empty
//! frame.  plotters is built without font-kit: the SVG backend writes
//! `<text>` elements and the browser picks the font, so layout uses
//! plotters' rough text-size estimate.
use std::fmt::Write as _;

use plotters::coord::Shift;
use plotters::prelude::*;

use super::verdicts::VERDICTS_HEADING;
use super::view::{
    Kind, ReportView, SizeText, TableView, METHOD_HEADING, NO_COUNTED_RUN, NO_RESULTS,
    PROBLEMS_HEADING, TITLE, WARN,
};
use super::Report;
use crate::model::CellResult;
use crate::text;

mod latency_plot;
mod platform_plot;
mod plots;
mod ratio_plot;
pub use latency_plot::LATENCY_PLOT;
pub use platform_plot::PLATFORM_PLOT;
pub use plots::TIMELINE_MAX_LINES;
use plots::{plots_init, plots_sizes, plots_timelines, plots_tps_bars, plots_tps_vs_clients};
use ratio_plot::plots_ratio;
pub use ratio_plot::RATIO_PLOT;

/// The plot kinds, in the order the report shows them (`data-plot` values).
pub const PLOT_KINDS: [&str; 6] = [
    RATIO_PLOT,
    "tps-bars",
    "tps-vs-clients",
    "tps-timeline",
    "size-on-disk",
    "init-phases",
];

const W: u32 = 1000;
const H: u32 = 380;
/// Font sizes as plotters takes them (it writes size / 1.24 into the SVG).
const LABEL: u32 = 17;
const DESC: u32 = 18;
const LIGHT: RGBColor = RGBColor(238, 238, 238);

/// Colour-blind-safe palette (Okabe–Ito), then repeats.
const PALETTE: [RGBColor; 8] = [
    RGBColor(0, 114, 178),
    RGBColor(230, 159, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(213, 94, 0),
    RGBColor(240, 228, 66),
    RGBColor(0, 0, 0),
];

fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

const CSS: &str = "body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:1.5em auto;max-width:1200px;padding:0 1em;color:#222}\
h1{font-size:1.6em}h2{font-size:1.3em;margin-top:2em;border-bottom:1px solid #ccc}h3{font-size:1.05em}\
table{border-collapse:collapse;font-size:.85em;margin:.5em 0 1em}th,td{border:1px solid #ccc;padding:.2em .45em}\
th{background:#f0f0f0}td.n{text-align:right;font-variant-numeric:tabular-nums}tr.noisy td{background:#fff6e0}\
.winner{color:#060;font-weight:bold}.empty{color:#666;font-style:italic}\
figure{margin:1em 0}figcaption{font-size:.9em;color:#444}svg.fsmx-plot{max-width:100%;height:auto;background:#fff}\
ul.notes{font-size:.9em;color:#333}tr.warn td:first-child{border-left:4px solid #d55e00}\
ul.warnings{font-size:.9em;color:#8a3300}";

/// Render the report and the plots of its cells as one HTML document.
/// `cells` are the cell records the report was built from (all bundles);
/// the timelines and load phases come from them, the rest from `r`.
pub fn render_html(r: &Report, cells: &[CellResult]) -> String {
    let v = ReportView::new(r, SizeText::Short);
    let mut out = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{TITLE}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<h1>{TITLE}</h1>\n"
    );
    if let Some(b) = &v.bundles {
        let _ = writeln!(out, "<p>{}</p>", esc(b));
    }
    if v.empty {
        let _ = writeln!(out, "<p class=\"empty\">{NO_RESULTS}</p>\n</body>\n</html>");
        return out;
    }
    answer_html(&mut out, r);
    let order = variant_order(cells);
    let mut not_drawn = Vec::new();
    section(
        &mut out,
        "By how much: each variant ÷ the baseline (95% CI)",
        plots_ratio(r, &order),
        &mut not_drawn,
    );
    let _ = writeln!(out, "<h2>{METHOD_HEADING}</h2>\n<ul class=\"notes\">");
    for n in &v.notes {
        let _ = writeln!(out, "<li>{}</li>", esc(n));
    }
    let _ = writeln!(
        out,
        "<li>{}</li>\n</ul>",
        esc(&v.noisy_note(" (rows shaded)"))
    );
    for sentence in [&v.warmups, &v.not_needed].into_iter().flatten() {
        let _ = writeln!(out, "<p>{}</p>", esc(sentence));
    }
    compared_html(&mut out, r);

    out.push_str("<h2>Plots</h2>\n");
    section(
        &mut out,
        "Mean tps per variant (95% CI)",
        plots_tps_bars(r, &order),
        &mut not_drawn,
    );
    section(
        &mut out,
        "tps vs clients",
        plots_tps_vs_clients(r, &order),
        &mut not_drawn,
    );
    section(
        &mut out,
        "Per-second tps timelines",
        plots_timelines(r, cells, &order),
        &mut not_drawn,
    );
    section(
        &mut out,
        "Size on disk: logical vs physical",
        plots_sizes(r, &order),
        &mut not_drawn,
    );
    section(
        &mut out,
        "pgbench -i phase timings",
        plots_init(cells, &order),
        &mut not_drawn,
    );
    // Plots without data are not empty sections: one list says why.
    if !not_drawn.is_empty() {
        out.push_str("<ul class=\"not-drawn\">\n");
        for (title, why) in &not_drawn {
            let _ = writeln!(
                out,
                "<li class=\"empty\">Not drawn: {}: {}</li>",
                esc(title),
                esc(why)
            );
        }
        out.push_str("</ul>\n");
    }
    platform_plot::platform_html(&mut out, r, &order);

    latency_plot::latency_html(&mut out, r, &order);
    tables_html(&mut out, &v);
    out.push_str("</body>\n</html>\n");
    out
}

/// What was compared ([`super::compared`]): the system and variant tables.
fn compared_html(out: &mut String, r: &Report) {
    for (heading, t) in super::compared::compared_tables(r) {
        let _ = writeln!(out, "<h2>{}</h2>", esc(heading));
        table_html(out, &t);
    }
}

/// A plot section: its heading and figures, or, when there are none, the
/// title and why added to `not_drawn` (listed once after the plots).
fn section(
    out: &mut String,
    title: &str,
    plots: Result<Vec<Figure>, String>,
    not_drawn: &mut Vec<(String, String)>,
) {
    let figs = match plots {
        Ok(figs) if !figs.is_empty() => figs,
        Ok(_) => {
            not_drawn.push((title.to_owned(), "no data for this plot.".into()));
            return;
        }
        Err(why) => {
            not_drawn.push((title.to_owned(), why));
            return;
        }
    };
    let _ = writeln!(out, "<h3>{}</h3>", esc(title));
    for f in figs {
        // The title is drawn in the plot; a caption only says why a plot
        // could not be drawn.
        if f.svg.is_empty() {
            let _ = writeln!(out, "<p class=\"empty\">{}</p>", esc(&f.caption));
        } else {
            let _ = writeln!(out, "<figure>\n{}</figure>", f.svg);
        }
    }
}

/// The answer first: the verdict lines ([`super::verdicts`]), each a list
/// item, the variant names in `<code>` as the Markdown's backticks.
fn answer_html(out: &mut String, r: &Report) {
    // Side by side with differing definitions: said before any verdict.
    for d in &r.definition_differences {
        let _ = writeln!(
            out,
            "<p class=\"warnings\"><strong>Definitions differ:</strong> {}.</p>",
            esc(&d.to_string())
        );
    }
    if r.verdicts.is_empty() {
        return;
    }
    let _ = writeln!(out, "<h2>{VERDICTS_HEADING}</h2>\n<ul class=\"answer\">");
    for v in &r.verdicts {
        let _ = writeln!(out, "<li>{}</li>", code_spans(&v.sentence));
    }
    for l in &r.sizes {
        let _ = writeln!(out, "<li>{}</li>", code_spans(&l.sentence));
    }
    out.push_str("</ul>\n");
}

/// `text` escaped, its backtick spans as `<code>`.
fn code_spans(text: &str) -> String {
    let mut out = String::new();
    for (i, part) in text.split('`').enumerate() {
        if i % 2 == 1 {
            let _ = write!(out, "<code>{}</code>", esc(part));
        } else {
            out.push_str(&esc(part));
        }
    }
    out
}

struct Figure {
    svg: String,
    caption: String,
}

/// Variants in matrix order (first appearance), for stable colours.
fn variant_order(cells: &[CellResult]) -> Vec<String> {
    let mut order: Vec<String> = Vec::new();
    for c in cells {
        if !order.contains(&c.params.filesystem) {
            order.push(c.params.filesystem.clone());
        }
    }
    order
}

fn variant_color(order: &[String], fs: &str) -> RGBColor {
    color(order.iter().position(|o| o == fs).unwrap_or(order.len()))
}

/// Draw with plotters into an SVG string and tag its root element.
fn draw_svg(
    kind: &str,
    title: &str,
    f: impl FnOnce(&DrawingArea<SVGBackend, Shift>) -> Result<(), String>,
) -> Result<String, String> {
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (W, H)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        f(&root)?;
        root.present().map_err(|e| e.to_string())?;
    }
    let tag = format!(
        "<svg class=\"fsmx-plot\" data-plot=\"{}\" role=\"img\" aria-label=\"{}\" ",
        esc(kind),
        esc(title)
    );
    match buf.find("<svg ") {
        Some(i) => {
            buf.replace_range(i..i + 5, &tag);
            Ok(buf[i..].to_owned())
        }
        None => Err(format!("draw {kind} plot: plotters wrote no <svg> element")),
    }
}

fn figure(kind: &str, title: &str, svg: Result<String, String>) -> Figure {
    match svg {
        Ok(svg) => Figure {
            svg,
            caption: title.to_owned(),
        },
        // Drawing into a String cannot fail in practice; if it does, say so
        // in place of the plot rather than dropping it silently.
        Err(e) => Figure {
            svg: String::new(),
            caption: format!("{title}: failed to draw the {kind} plot: {e}"),
        },
    }
}

fn e2s<E: std::fmt::Debug>(e: E) -> String {
    format!("{e:?}")
}

/// The label of the category at integer position `x`, blank in between.
fn category(x: &f64, cats: &[String]) -> String {
    let i = x.round();
    if (x - i).abs() < 1e-6 && i >= 0.0 {
        cats.get(i as usize).cloned().unwrap_or_default()
    } else {
        String::new()
    }
}

/// The largest axis end a plot gets.  plotters overflows computing ticks
/// over ranges near f64::MAX (a panic, found by tests/pure/fuzz.rs), and no
/// benchmark has a trillion tps or seconds; a point beyond is drawn at the
/// edge.
const PLOT_LIMIT: f64 = 1e12;

fn upper(max: f64) -> f64 {
    if max > 0.0 && max.is_finite() {
        (max * 1.12).min(PLOT_LIMIT)
    } else {
        1.0
    }
}

/// `v` kept within a few axis lengths of `0..max`: plotters maps a point
/// far outside its range to a pixel past i32 and overflows (a panic), so a
/// value beyond is drawn at the edge instead.
fn clip(v: f64, max: f64) -> f64 {
    if v.is_nan() {
        0.0
    } else {
        v.clamp(-max, 2.0 * max)
    }
}

fn plain_y(y: &f64) -> String {
    text::fmt_g((y * 100.0).round() / 100.0)
}

fn tables_html(out: &mut String, v: &ReportView) {
    if v.sections.is_empty() {
        let _ = writeln!(out, "<p class=\"empty\">{NO_COUNTED_RUN}</p>");
    }
    for s in &v.sections {
        let _ = writeln!(out, "<h2>{}</h2>", s.heading(&esc(&s.workload)));
        if let Some(n) = &s.metric_note {
            let _ = writeln!(out, "<p>{}</p>", esc(n));
        }
        if let Some(st) = &s.statements {
            table_html(out, st);
        }
        table_html(out, &s.table);
        if !s.warnings.is_empty() {
            out.push_str("<ul class=\"warnings\">\n");
            for w in &s.warnings {
                let _ = writeln!(out, "<li>{WARN} {}</li>", esc(w));
            }
            out.push_str("</ul>\n");
        }
        if !s.verdicts.is_empty() {
            out.push_str("<ul class=\"answer\">\n");
            for l in &s.verdicts {
                let _ = writeln!(out, "<li>{}</li>", code_spans(l));
            }
            out.push_str("</ul>\n");
        }
    }
    if let Some(t) = &v.problems {
        let _ = writeln!(out, "<h2>{PROBLEMS_HEADING}</h2>");
        table_html(out, t);
    }
}

/// A table: numbers right-aligned, noisy rows shaded, the winner marked.
fn table_html(out: &mut String, t: &TableView) {
    out.push_str("<table class=\"fsmx-table\">\n<tr>");
    for c in &t.columns {
        let _ = write!(out, "<th>{}</th>", esc(&c.header));
    }
    out.push_str("</tr>\n");
    for row in &t.rows {
        out.push_str(match (row.noisy, row.warned) {
            (true, true) => "<tr class=\"noisy warn\">",
            (true, false) => "<tr class=\"noisy\">",
            (false, true) => "<tr class=\"warn\">",
            (false, false) => "<tr>",
        });
        for (c, text) in t.columns.iter().zip(&row.cells) {
            let class = match c.kind {
                Kind::Number => " class=\"n\"",
                Kind::Variant if row.winner => " class=\"winner\"",
                Kind::Text | Kind::Variant => "",
            };
            let _ = write!(out, "<td{class}>{}</td>", esc(text));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
}

#[cfg(test)]
mod tests {
    use super::super::{build_report, ReportOptions, Source};
    use super::*;
    use crate::model::*;

    fn cell(fs: &str, clients: u32, repeat: u32, tps: f64, with_extras: bool) -> CellResult {
        CellResult {
            schema: RESULT_SCHEMA,
            cell_id: format!("h-{fs}-{clients}-{repeat}"),
            params: CellParams {
                host: "h<1>".into(),
                filesystem: fs.into(),
                fs_type: if fs.starts_with("zfs") { "zfs" } else { fs }.into(),
                workload: "tpcb".into(),
                clients,
                jobs: clients,
                repeat,
                warmup: false,
                rate: None,
                sql_script: false,
            },
            status: CellStatus::Done {
                run: RunMeasures {
                    tps,
                    tps_including_connect: None,
                    latency_avg_ms: Some(2.0),
                    latency_stddev_ms: None,
                    transactions: 100,
                    failed_transactions: None,
                    schedule_lag_avg_ms: None,
                    schedule_lag_max_ms: None,
                    skipped_transactions: None,
                    late_transactions: None,
                    duration_s: 3.0,
                    progress: if with_extras {
                        (1..=3)
                            .map(|t| ProgressSample {
                                t_s: f64::from(t),
                                tps,
                                latency_avg_ms: None,
                                latency_stddev_ms: None,
                                failed: None,
                            })
                            .collect()
                    } else {
                        vec![]
                    },
                    statements: Vec::new(),
                    latency_percentiles: None,
                    statement_latencies: Vec::new(),
                },
            },
            started: None,
            ended: None,
            sizes: with_extras.then(|| Sizes {
                du_on_disk_bytes: Some(40 << 20),
                du_apparent_bytes: Some(100 << 20),
                zfs_compressratio: fs.starts_with("zfs").then_some(2.5),
                ..Sizes::default()
            }),
            init: with_extras.then(|| InitTimings {
                total_s: Some(1.5),
                phases: vec![
                    Phase {
                        name: "generate".into(),
                        seconds: 1.0,
                    },
                    Phase {
                        name: "vacuum".into(),
                        seconds: 0.5,
                    },
                ],
            }),
            fs_settings: None,
        }
    }

    fn html(cells: &[CellResult]) -> String {
        let r = build_report(&[Source { name: "b", cells }], &ReportOptions::default()).unwrap();
        render_html(&r, cells)
    }

    /// The document's outline: headings, plot tags, sentences of left-out
    /// plots and table rows (the SVG bodies are plotters' business).
    fn outline(html: &str) -> String {
        html.lines()
            .filter(|l| {
                ["<h1>", "<h2>", "<h3>", "<svg ", "<p>", "<p ", "<tr", "<li>"]
                    .iter()
                    .any(|p| l.starts_with(p))
            })
            .map(|l| match l.find(" width=") {
                Some(i) if l.starts_with("<svg") => &l[..i],
                _ => l,
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn full() -> Vec<CellResult> {
        let mut v = Vec::new();
        for (fs, k) in [("ext4", 1.0), ("zfs-lz4", 0.7)] {
            for clients in [1, 4] {
                for repeat in 1..=3 {
                    let tps = k * f64::from(clients) * (100.0 + f64::from(repeat));
                    v.push(cell(fs, clients, repeat, tps, true));
                }
            }
        }
        v
    }

    #[test]
    fn every_plot_kind_is_drawn_once_per_group() {
        let h = html(&full());
        for kind in PLOT_KINDS {
            assert!(
                h.contains(&format!("<svg class=\"fsmx-plot\" data-plot=\"{kind}\"")),
                "{kind} missing"
            );
        }
        assert_eq!(h.matches("data-plot=\"tps-timeline\"").count(), 2);
        assert!(h.contains("logical/physical "));
        assert!(
            !h.contains("compressratio 2.50x"),
            "one measure over every size bar"
        );
        assert!(!h.contains("class=\"empty\""));
        // Host names are escaped in HTML and in the SVG text.
        assert!(h.contains("h&lt;1&gt;") && !h.contains("h<1>"));
        assert!(!h.contains("<script"));
        insta::assert_snapshot!(outline(&h));
    }

    #[test]
    fn plots_without_data_are_left_out_with_a_sentence() {
        let cells: Vec<CellResult> = [("ext4", 1.0), ("xfs", 0.9)]
            .iter()
            .flat_map(|(fs, k)| {
                (1..=2).map(move |r| cell(fs, 4, r, 100.0 * k + f64::from(r), false))
            })
            .collect();
        let h = html(&cells);
        assert!(h.contains("data-plot=\"tps-bars\""));
        for kind in [
            "tps-vs-clients",
            "tps-timeline",
            "size-on-disk",
            "init-phases",
        ] {
            assert!(
                !h.contains(&format!("data-plot=\"{kind}\"")),
                "{kind} drawn"
            );
        }
        assert!(h.contains("ran one client count only"));
        assert!(
            h.contains("no per-second progress samples") || h.contains("has per-second progress")
        );
        assert!(h.contains("recorded du sizes"));
        assert!(h.contains("phase timings"));
        insta::assert_snapshot!(outline(&h));
    }

    #[test]
    fn no_cells_is_a_sentence() {
        let h = html(&[]);
        assert!(h.contains("No cell results."));
        assert!(!h.contains("<svg"));
    }
}
