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
//! 5. `init-phases`: `pgbench -i` phases stacked per variant;
//! 6. `latency-percentiles` ([`LATENCY_PLOT`], only where a workload has
//!    `latency_log`): latency at each percentile per variant, with the
//!    latency and per-statement tables (`html/latency_plot.rs`).
//!
//! Every plot is an `<svg class="fsmx-plot" data-plot="KIND">`; a kind with
//! no data is left out with a sentence saying why, never drawn as an empty
//! frame.  plotters is built without font-kit: the SVG backend writes
//! `<text>` elements and the browser picks the font, so layout uses
//! plotters' rough text-size estimate.
use std::collections::BTreeMap;
use std::fmt::Write as _;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::report::Report;
use super::stats::{Metric, Summary};
use super::view::{
    Kind, ReportView, SizeText, TableView, NO_COUNTED_RUN, NO_RESULTS, NO_WINNER, PROBLEMS_HEADING,
    TITLE, WARN,
};
use crate::model::{CellResult, CellStatus};
use crate::text;

mod latency_plot;
pub use latency_plot::LATENCY_PLOT;

/// The plot kinds, in the order the report shows them (`data-plot` values).
pub const PLOT_KINDS: [&str; 5] = [
    "tps-vs-clients",
    "tps-bars",
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
    out.push_str("<ul class=\"notes\">\n");
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

    let order = variant_order(cells);
    out.push_str("<h2>Plots</h2>\n");
    section(&mut out, "tps vs clients", plots_tps_vs_clients(r, &order));
    section(
        &mut out,
        "Mean tps per variant (95% CI)",
        plots_tps_bars(r, &order),
    );
    section(
        &mut out,
        "Per-second tps timelines",
        plots_timelines(r, cells, &order),
    );
    section(
        &mut out,
        "Size on disk: logical vs physical",
        plots_sizes(r, &order),
    );
    section(
        &mut out,
        "pgbench -i phase timings",
        plots_init(cells, &order),
    );

    latency_plot::latency_html(&mut out, r, &order);
    tables_html(&mut out, &v);
    out.push_str("</body>\n</html>\n");
    out
}

/// A plot section: its figures, or the sentence saying why there are none.
fn section(out: &mut String, title: &str, plots: Result<Vec<Figure>, String>) {
    let _ = writeln!(out, "<h3>{}</h3>", esc(title));
    match plots {
        Ok(figs) if !figs.is_empty() => {
            for f in figs {
                // The title is drawn in the plot; a caption only says
                // why a plot could not be drawn.
                if f.svg.is_empty() {
                    let _ = writeln!(out, "<p class=\"empty\">{}</p>", esc(&f.caption));
                } else {
                    let _ = writeln!(out, "<figure>\n{}</figure>", f.svg);
                }
            }
        }
        Ok(_) => {
            let _ = writeln!(out, "<p class=\"empty\">No data for this plot.</p>");
        }
        Err(why) => {
            let _ = writeln!(out, "<p class=\"empty\">{}</p>", esc(&why));
        }
    }
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

fn ci_of(s: &Summary) -> (f64, f64) {
    s.ci95.unwrap_or((s.mean, s.mean))
}

/// (host, workload) → variant → [(clients, tps summary)], in table order.
type ByHostWorkload<'a> = BTreeMap<(String, String), BTreeMap<String, Vec<(u32, &'a Summary)>>>;

fn no_tps(r: &Report) -> String {
    if r.tables.is_empty() {
        "No counted run finished, so there is no tps to plot.".into()
    } else {
        "No workload here is compared on tps (a rate-limited one is compared on latency, a SQL script on its load time: see the tables), so there is no tps to plot.".into()
    }
}

/// The tables compared on tps only: a rate-limited workload's tps is its
/// rate, a SQL script's means nothing (their tables say so).
fn by_host_workload(r: &Report) -> ByHostWorkload<'_> {
    let mut m: ByHostWorkload = BTreeMap::new();
    for t in r.tables.iter().filter(|t| t.metric == Metric::Tps) {
        for h in &t.hosts {
            for row in &h.rows {
                m.entry((h.host.clone(), t.workload.clone()))
                    .or_default()
                    .entry(row.stats.key.filesystem.clone())
                    .or_default()
                    .push((t.clients, &row.stats.tps));
            }
        }
    }
    m
}

fn sorted_variants<'a, V>(
    order: &[String],
    m: &'a BTreeMap<String, V>,
) -> Vec<(&'a String, &'a V)> {
    let mut v: Vec<_> = m.iter().collect();
    v.sort_by_key(|(fs, _)| order.iter().position(|o| o == *fs).unwrap_or(usize::MAX));
    v
}

fn plots_tps_vs_clients(r: &Report, order: &[String]) -> Result<Vec<Figure>, String> {
    let m = by_host_workload(r);
    if m.is_empty() {
        return Err(no_tps(r));
    }
    let mut figs = Vec::new();
    let mut single = Vec::new();
    for ((host, workload), variants) in &m {
        let mut clients: Vec<u32> = variants
            .values()
            .flat_map(|v| v.iter().map(|(c, _)| *c))
            .collect();
        clients.sort_unstable();
        clients.dedup();
        if clients.len() < 2 {
            single.push(format!("{host} / {workload}"));
            continue;
        }
        let title = format!("{host} — {workload}: tps vs clients");
        // Client counts evenly spaced (studies double them: 1, 2, 4, ...).
        let client_labels: Vec<String> = clients.iter().map(u32::to_string).collect();
        let pos = |c: u32| clients.iter().position(|x| *x == c).unwrap_or(0) as f64;
        let ymax = upper(
            variants
                .values()
                .flat_map(|v| v.iter().map(|(_, s)| ci_of(s).1.max(s.mean)))
                .fold(0.0, f64::max),
        );
        let vs = sorted_variants(order, variants);
        let svg = draw_svg("tps-vs-clients", &title, |root| {
            let mut chart = ChartBuilder::on(root)
                .caption(&title, ("sans-serif", 22))
                .margin(12)
                .x_label_area_size(50)
                .y_label_area_size(85)
                .build_cartesian_2d(-0.3..(clients.len() as f64 - 0.7), 0.0..ymax)
                .map_err(e2s)?;
            chart
                .configure_mesh()
                .x_desc("clients")
                .y_desc("tps (mean)")
                .x_labels(clients.len())
                .x_label_formatter(&|x| category(x, &client_labels))
                .y_label_formatter(&plain_y)
                .label_style(("sans-serif", LABEL))
                .axis_desc_style(("sans-serif", DESC))
                .light_line_style(LIGHT)
                .disable_x_mesh()
                .draw()
                .map_err(e2s)?;
            for (fs, pts) in &vs {
                let c = variant_color(order, fs);
                let mut pts: Vec<(u32, &Summary)> = pts.to_vec();
                pts.sort_by_key(|p| p.0);
                chart
                    .draw_series(LineSeries::new(
                        pts.iter().map(|(x, s)| (pos(*x), clip(s.mean, ymax))),
                        c.stroke_width(2),
                    ))
                    .map_err(e2s)?
                    .label(fs.as_str())
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2))
                    });
                for (x, s) in &pts {
                    let (lo, hi) = ci_of(s);
                    let (lo, hi) = (clip(lo, ymax), clip(hi, ymax));
                    let x = pos(*x);
                    let st = c.stroke_width(2);
                    chart
                        .draw_series([PathElement::new(vec![(x, lo), (x, hi)], st)])
                        .map_err(e2s)?;
                    chart
                        .draw_series([lo, hi].map(|y| {
                            EmptyElement::at((x, y)) + PathElement::new(vec![(-4, 0), (4, 0)], st)
                        }))
                        .map_err(e2s)?;
                    chart
                        .draw_series(std::iter::once(Circle::new(
                            (x, clip(s.mean, ymax)),
                            3,
                            c.filled(),
                        )))
                        .map_err(e2s)?;
                }
            }
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.85))
                .label_font(("sans-serif", LABEL))
                .label_font(("sans-serif", LABEL))
                .border_style(BLACK)
                .position(SeriesLabelPosition::LowerRight)
                .draw()
                .map_err(e2s)?;
            Ok(())
        });
        figs.push(figure("tps-vs-clients", &title, svg));
    }
    if figs.is_empty() {
        return Err(format!(
            "Each host and workload ran one client count only ({}), so there is no tps-vs-clients curve; see the bars below.",
            single.join(", ")
        ));
    }
    Ok(figs)
}

/// One bar of a grouped or stacked chart.
struct Bar {
    /// Index of the category on the x axis.
    cat: usize,
    /// Position within the category's group, and the group's size.
    slot: usize,
    slots: usize,
    lo: f64,
    hi: f64,
    color: RGBColor,
    /// (low, high) of a 95% CI error bar.
    ci: Option<(f64, f64)>,
    /// Text written over the bar.
    note: Option<String>,
}

struct BarChart<'a> {
    kind: &'a str,
    title: &'a str,
    y_desc: &'a str,
    x_desc: &'a str,
    cats: Vec<String>,
    bars: Vec<Bar>,
    legend: Vec<(String, RGBColor)>,
    y_fmt: &'a dyn Fn(&f64) -> String,
}

fn draw_bars(b: &BarChart) -> Result<String, String> {
    // Headroom above the tallest bar for the legend (upper right).
    let headroom = if b.legend.is_empty() { 1.0 } else { 1.3 };
    let ymax = headroom
        * upper(
            b.bars
                .iter()
                .map(|x| x.hi.max(x.ci.map_or(0.0, |c| c.1)))
                .fold(0.0, f64::max),
        );
    let n = b.cats.len();
    draw_svg(b.kind, b.title, |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(b.title, ("sans-serif", 22))
            .margin(12)
            .x_label_area_size(50)
            .y_label_area_size(95)
            .build_cartesian_2d(-0.5..(n as f64 - 0.5), 0.0..ymax)
            .map_err(e2s)?;
        let cats = &b.cats;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_desc(b.x_desc)
            .y_desc(b.y_desc)
            .x_labels(n.max(1))
            .x_label_formatter(&|x| category(x, cats))
            .y_label_formatter(b.y_fmt)
            .label_style(("sans-serif", LABEL))
            .axis_desc_style(("sans-serif", DESC))
            .light_line_style(LIGHT)
            .draw()
            .map_err(e2s)?;
        let width = 0.8;
        for bar in &b.bars {
            let w = width / bar.slots as f64;
            let x0 = bar.cat as f64 - width / 2.0 + w * bar.slot as f64;
            let x1 = x0 + w * 0.92;
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(x0, clip(bar.lo, ymax)), (x1, clip(bar.hi, ymax))],
                    bar.color.filled(),
                )))
                .map_err(e2s)?;
            let xm = (x0 + x1) / 2.0;
            if let Some((lo, hi)) = bar.ci {
                let (lo, hi) = (clip(lo, ymax), clip(hi, ymax));
                // 95% CI bar with caps (by hand: plotters' ErrorBar needs
                // another feature).
                let st = BLACK.stroke_width(1);
                chart
                    .draw_series([PathElement::new(vec![(xm, lo), (xm, hi)], st)])
                    .map_err(e2s)?;
                chart
                    .draw_series([lo, hi].map(|y| {
                        EmptyElement::at((xm, y)) + PathElement::new(vec![(-4, 0), (4, 0)], st)
                    }))
                    .map_err(e2s)?;
            }
            if let Some(note) = &bar.note {
                let y = clip(bar.ci.map_or(bar.hi, |c| c.1.max(bar.hi)), ymax);
                chart
                    .draw_series(std::iter::once(Text::new(
                        note.clone(),
                        (xm, y),
                        ("sans-serif", LABEL)
                            .into_font()
                            .color(&BLACK)
                            .pos(Pos::new(HPos::Center, VPos::Bottom)),
                    )))
                    .map_err(e2s)?;
            }
        }
        for (name, c) in &b.legend {
            let c = *c;
            chart
                .draw_series(std::iter::empty::<Rectangle<(f64, f64)>>())
                .map_err(e2s)?
                .label(name.as_str())
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], c.filled()));
        }
        if !b.legend.is_empty() {
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.85))
                .label_font(("sans-serif", LABEL))
                .label_font(("sans-serif", LABEL))
                .border_style(BLACK)
                .position(SeriesLabelPosition::UpperRight)
                .draw()
                .map_err(e2s)?;
        }
        Ok(())
    })
}

fn plain_y(y: &f64) -> String {
    text::fmt_g((y * 100.0).round() / 100.0)
}

fn plots_tps_bars(r: &Report, order: &[String]) -> Result<Vec<Figure>, String> {
    let m = by_host_workload(r);
    if m.is_empty() {
        return Err(no_tps(r));
    }
    let mut figs = Vec::new();
    for ((host, workload), variants) in &m {
        let vs = sorted_variants(order, variants);
        let mut clients: Vec<u32> = vs
            .iter()
            .flat_map(|(_, v)| v.iter().map(|(c, _)| *c))
            .collect();
        clients.sort_unstable();
        clients.dedup();
        let mut bars = Vec::new();
        for (slot, (fs, pts)) in vs.iter().enumerate() {
            for (c, s) in pts.iter() {
                let cat = clients.iter().position(|x| x == c).unwrap_or(0);
                bars.push(Bar {
                    cat,
                    slot,
                    slots: vs.len(),
                    lo: 0.0,
                    hi: s.mean,
                    color: variant_color(order, fs),
                    ci: s.ci95,
                    note: None,
                });
            }
        }
        let title = format!("{host} — {workload}: mean tps per variant");
        let chart = BarChart {
            kind: "tps-bars",
            title: &title,
            y_desc: "tps (mean, 95% CI)",
            x_desc: "clients",
            cats: clients.iter().map(u32::to_string).collect(),
            bars,
            legend: vs
                .iter()
                .map(|(fs, _)| ((*fs).clone(), variant_color(order, fs)))
                .collect(),
            y_fmt: &plain_y,
        };
        figs.push(figure("tps-bars", &title, draw_bars(&chart)));
    }
    Ok(figs)
}

fn plots_timelines(
    r: &Report,
    cells: &[CellResult],
    order: &[String],
) -> Result<Vec<Figure>, String> {
    // (host, workload, clients) → variant → runs of (t, tps)
    type Runs = Vec<Vec<(f64, f64)>>;
    let mut m: BTreeMap<(String, String, u32), BTreeMap<String, Runs>> = BTreeMap::new();
    for c in cells {
        let CellStatus::Done { run } = &c.status else {
            continue;
        };
        if c.params.warmup || run.progress.is_empty() {
            continue;
        }
        let p = &c.params;
        m.entry((p.host.clone(), p.workload.clone(), p.clients))
            .or_default()
            .entry(p.filesystem.clone())
            .or_default()
            .push(run.progress.iter().map(|s| (s.t_s, s.tps)).collect());
    }
    if m.is_empty() {
        return Err(
            "No counted run has per-second progress samples (pgbench -P), so there is no timeline."
                .into(),
        );
    }
    let trim = (r.trim_start_s, r.trim_end_s);
    let mut figs = Vec::new();
    for ((host, workload, clients), variants) in &m {
        let title = format!(
            "{host} — {workload}, {clients} client{}: tps per second",
            if *clients == 1 { "" } else { "s" }
        );
        let tmax = variants
            .values()
            .flatten()
            .flatten()
            .map(|p| p.0)
            .filter(|t| t.is_finite())
            .fold(1.0, f64::max)
            .min(PLOT_LIMIT);
        let ymax = upper(
            variants
                .values()
                .flatten()
                .flatten()
                .map(|p| p.1)
                .fold(0.0, f64::max),
        );
        let vs = sorted_variants(order, variants);
        let svg = draw_svg("tps-timeline", &title, |root| {
            let mut chart = ChartBuilder::on(root)
                .caption(&title, ("sans-serif", 22))
                .margin(12)
                .x_label_area_size(50)
                .y_label_area_size(85)
                .build_cartesian_2d(0.0..tmax, 0.0..ymax)
                .map_err(e2s)?;
            chart
                .configure_mesh()
                .x_desc("seconds into the run")
                .y_desc("tps")
                .x_label_formatter(&|x| text::fmt_g(*x))
                .y_label_formatter(&plain_y)
                .label_style(("sans-serif", LABEL))
                .axis_desc_style(("sans-serif", DESC))
                .light_line_style(LIGHT)
                .draw()
                .map_err(e2s)?;
            // Shade what the statistics trim away.
            let shade = RGBColor(200, 200, 200).mix(0.35).filled();
            if trim.0 > 0.0 {
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(0.0, 0.0), (trim.0.min(tmax), ymax)],
                        shade,
                    )))
                    .map_err(e2s)?;
            }
            if trim.1 > 0.0 {
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [((tmax - trim.1).max(0.0), 0.0), (tmax, ymax)],
                        shade,
                    )))
                    .map_err(e2s)?;
            }
            for (fs, runs) in &vs {
                let c = variant_color(order, fs);
                if runs.len() > TIMELINE_MAX_LINES {
                    let band = median_band(runs);
                    let clipped = |t: f64, v: f64| (clip(t, tmax), clip(v, ymax));
                    let outline: Vec<(f64, f64)> = band
                        .iter()
                        .map(|&(t, _, _, hi)| clipped(t, hi))
                        .chain(band.iter().rev().map(|&(t, lo, _, _)| clipped(t, lo)))
                        .collect();
                    chart
                        .draw_series(std::iter::once(Polygon::new(outline, c.mix(0.25).filled())))
                        .map_err(e2s)?;
                    let label = format!("{fs} (median of {} runs, min–max band)", runs.len());
                    chart
                        .draw_series(LineSeries::new(
                            band.iter().map(|&(t, _, med, _)| clipped(t, med)),
                            c.stroke_width(2),
                        ))
                        .map_err(e2s)?
                        .label(label)
                        .legend(move |(x, y)| {
                            PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2))
                        });
                    continue;
                }
                for (i, run) in runs.iter().enumerate() {
                    let s = chart
                        .draw_series(LineSeries::new(
                            run.iter().map(|&(t, v)| (clip(t, tmax), clip(v, ymax))),
                            c.stroke_width(2),
                        ))
                        .map_err(e2s)?;
                    if i == 0 {
                        let label = if runs.len() > 1 {
                            format!("{fs} ({} runs)", runs.len())
                        } else {
                            (*fs).clone()
                        };
                        s.label(label).legend(move |(x, y)| {
                            PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2))
                        });
                    }
                }
            }
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.85))
                .label_font(("sans-serif", LABEL))
                .label_font(("sans-serif", LABEL))
                .border_style(BLACK)
                .position(SeriesLabelPosition::LowerRight)
                .draw()
                .map_err(e2s)?;
            Ok(())
        });
        figs.push(figure("tps-timeline", &title, svg));
    }
    Ok(figs)
}

/// Above this many runs of a variant, a timeline draws their median per
/// second and a min–max band instead of every run: eight overlapping lines
/// of one colour read as one thick smear.
pub const TIMELINE_MAX_LINES: usize = 5;

/// Per second of the runs (samples at the same time, to the millisecond):
/// (t, min, median, max), in time order.
fn median_band(runs: &[Vec<(f64, f64)>]) -> Vec<(f64, f64, f64, f64)> {
    let mut at: BTreeMap<i64, (f64, Vec<f64>)> = BTreeMap::new();
    for &(t, v) in runs.iter().flatten() {
        if t.is_finite() && v.is_finite() {
            at.entry((t * 1000.0).round() as i64)
                .or_insert_with(|| (t, Vec::new()))
                .1
                .push(v);
        }
    }
    at.into_values()
        .map(|(t, mut vs)| {
            vs.sort_by(f64::total_cmp);
            let n = vs.len();
            let med = if n % 2 == 1 {
                vs[n / 2]
            } else {
                (vs[n / 2 - 1] + vs[n / 2]) / 2.0
            };
            (t, vs[0], med, vs[n - 1])
        })
        .collect()
}

fn bytes_axis(y: &f64) -> String {
    text::iec_bytes_short(*y)
}

fn plots_sizes(r: &Report, order: &[String]) -> Result<Vec<Figure>, String> {
    // (host, workload) → variant → (apparent, on disk, compressratio), from
    // the group with the fewest clients that measured sizes.
    type Sz = (Option<f64>, Option<f64>, Option<f64>);
    let mut m: BTreeMap<(String, String), BTreeMap<String, Sz>> = BTreeMap::new();
    for t in &r.tables {
        for h in &t.hosts {
            for row in &h.rows {
                let g = &row.stats;
                if g.du_apparent_bytes.is_none() && g.du_on_disk_bytes.is_none() {
                    continue;
                }
                m.entry((h.host.clone(), t.workload.clone()))
                    .or_default()
                    .entry(g.key.filesystem.clone())
                    .or_insert((g.du_apparent_bytes, g.du_on_disk_bytes, g.zfs_compressratio));
            }
        }
    }
    if m.is_empty() {
        return Err("No finished cell recorded du sizes, so there is no size plot.".into());
    }
    let apparent_c = RGBColor(160, 190, 220);
    let on_disk_c = RGBColor(0, 90, 150);
    let mut figs = Vec::new();
    for ((host, workload), variants) in &m {
        let vs = sorted_variants(order, variants);
        let mut bars = Vec::new();
        for (cat, (_, (app, disk, ratio))) in vs.iter().enumerate() {
            if let Some(a) = app {
                bars.push(Bar {
                    cat,
                    slot: 0,
                    slots: 2,
                    lo: 0.0,
                    hi: *a,
                    color: apparent_c,
                    ci: None,
                    note: None,
                });
            }
            if let Some(d) = disk {
                let note = match (ratio, app) {
                    (Some(x), _) => Some(format!("compressratio {x:.2}x")),
                    (None, Some(a)) if *d > 0.0 => Some(format!("logical/physical {:.2}x", a / d)),
                    _ => None,
                };
                bars.push(Bar {
                    cat,
                    slot: 1,
                    slots: 2,
                    lo: 0.0,
                    hi: *d,
                    color: on_disk_c,
                    ci: None,
                    note,
                });
            }
        }
        let title = format!("{host} — {workload}: data directory size after load");
        let chart = BarChart {
            kind: "size-on-disk",
            title: &title,
            y_desc: "bytes",
            x_desc: "filesystem variant",
            cats: vs.iter().map(|(fs, _)| (*fs).clone()).collect(),
            bars,
            legend: vec![
                ("logical (du apparent)".into(), apparent_c),
                ("physical (du on disk)".into(), on_disk_c),
            ],
            y_fmt: &bytes_axis,
        };
        figs.push(figure("size-on-disk", &title, draw_bars(&chart)));
    }
    Ok(figs)
}

fn plots_init(cells: &[CellResult], order: &[String]) -> Result<Vec<Figure>, String> {
    // (host, workload) → variant → phase name → seconds of each load.
    type Phases = Vec<(String, Vec<f64>)>;
    let mut m: BTreeMap<(String, String), BTreeMap<String, Phases>> = BTreeMap::new();
    let mut phase_order: Vec<String> = Vec::new();
    for c in cells {
        let Some(init) = &c.init else { continue };
        if init.phases.is_empty() {
            continue;
        }
        let p = &c.params;
        let phases = m
            .entry((p.host.clone(), p.workload.clone()))
            .or_default()
            .entry(p.filesystem.clone())
            .or_default();
        for ph in &init.phases {
            if !ph.seconds.is_finite() {
                continue;
            }
            if !phase_order.contains(&ph.name) {
                phase_order.push(ph.name.clone());
            }
            match phases.iter_mut().find(|(n, _)| *n == ph.name) {
                Some((_, v)) => v.push(ph.seconds),
                None => phases.push((ph.name.clone(), vec![ph.seconds])),
            }
        }
    }
    if m.is_empty() {
        return Err(
            "No cell recorded pgbench -i phase timings, so there is no load-phase plot.".into(),
        );
    }
    let phase_color = |name: &str| {
        color(
            phase_order
                .iter()
                .position(|o| o == name)
                .unwrap_or(0)
                .wrapping_add(2),
        )
    };
    let mut figs = Vec::new();
    for ((host, workload), variants) in &m {
        let vs = sorted_variants(order, variants);
        let mut bars = Vec::new();
        let mut used: Vec<&String> = Vec::new();
        for (cat, (_, phases)) in vs.iter().enumerate() {
            let mut y = 0.0;
            for name in &phase_order {
                let Some((_, secs)) = phases.iter().find(|(n, _)| n == name) else {
                    continue;
                };
                let mean = secs.iter().sum::<f64>() / secs.len() as f64;
                if !used.contains(&name) {
                    used.push(name);
                }
                bars.push(Bar {
                    cat,
                    slot: 0,
                    slots: 1,
                    lo: y,
                    hi: y + mean,
                    color: phase_color(name),
                    ci: None,
                    note: None,
                });
                y += mean;
            }
            if let Some(top) = bars.last_mut() {
                top.note = Some(format!("{y:.2} s"));
            }
        }
        let title = format!("{host} — {workload}: pgbench -i phases (mean seconds)");
        let chart = BarChart {
            kind: "init-phases",
            title: &title,
            y_desc: "seconds",
            x_desc: "filesystem variant",
            cats: vs.iter().map(|(fs, _)| (*fs).clone()).collect(),
            bars,
            legend: phase_order
                .iter()
                .filter(|p| used.contains(p))
                .map(|p| (p.clone(), phase_color(p)))
                .collect(),
            y_fmt: &plain_y,
        };
        figs.push(figure("init-phases", &title, draw_bars(&chart)));
    }
    Ok(figs)
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
        let verdicts: Vec<String> = s
            .verdicts
            .iter()
            .map(|h| match &h.winner {
                Some(w) => format!(
                    "<li>{}: winner <span class=\"winner\">{}</span> {}</li>",
                    esc(&h.host),
                    esc(w),
                    esc(h.why)
                ),
                None => format!("<li>{}: {}</li>", esc(&h.host), esc(NO_WINNER)),
            })
            .collect();
        if !verdicts.is_empty() {
            let _ = writeln!(out, "<ul>\n{}\n</ul>", verdicts.join("\n"));
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
    use super::super::report::{build_report, ReportOptions, Source};
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
        assert!(h.contains("compressratio 2.50x"));
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
