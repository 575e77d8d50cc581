//! The HTML report's tps, size and load-phase plots (kinds 1 to 5 of
//! [`super::PLOT_KINDS`]), each drawn by `plotters` into an SVG string
//! ([`super::draw_svg`]); the latency plot is `latency_plot.rs`.
use std::collections::BTreeMap;

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{
    category, clip, color, draw_svg, e2s, figure, plain_y, upper, variant_color, Figure, DESC,
    LABEL, LIGHT, PLOT_LIMIT,
};
use crate::model::{CellResult, CellStatus};
use crate::results::analysis::stats::{Metric, Summary};
use crate::results::report::Report;
use crate::text;

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

pub(super) fn plots_tps_vs_clients(r: &Report, order: &[String]) -> Result<Vec<Figure>, String> {
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

/// Height of the strip above a bar chart that holds its title and legend:
/// the legend never sits inside the plot, where it would cover a bar or
/// the text over it.
const LEGEND_STRIP: u32 = 66;

fn draw_bars(b: &BarChart) -> Result<String, String> {
    let ymax = upper(
        b.bars
            .iter()
            .map(|x| x.hi.max(x.ci.map_or(0.0, |c| c.1)))
            .fold(0.0, f64::max),
    );
    let n = b.cats.len();
    draw_svg(b.kind, b.title, |root| {
        let body = if b.legend.is_empty() {
            root.clone()
        } else {
            let (head, body) = root.split_vertically(LEGEND_STRIP);
            legend_strip(&head, b.title, &b.legend)?;
            body
        };
        let mut builder = ChartBuilder::on(&body);
        if b.legend.is_empty() {
            builder.caption(b.title, ("sans-serif", 22));
        }
        let mut chart = builder
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
        Ok(())
    })
}

/// The title, centred, and under it the legend's swatches and names in
/// one row, centred (plotters' rough text width: about 0.55 em a character).
fn legend_strip(
    head: &DrawingArea<SVGBackend, plotters::coord::Shift>,
    title: &str,
    legend: &[(String, RGBColor)],
) -> Result<(), String> {
    let (w, _) = head.dim_in_pixel();
    let title_style = ("sans-serif", 22)
        .into_font()
        .color(&BLACK)
        .pos(Pos::new(HPos::Center, VPos::Top));
    head.draw(&Text::new(title, (w as i32 / 2, 8), title_style))
        .map_err(e2s)?;
    let char_w = f64::from(LABEL) * 0.55;
    let item_w = |name: &str| 22 + (name.chars().count() as f64 * char_w) as i32 + 18;
    let total: i32 = legend.iter().map(|(n, _)| item_w(n)).sum();
    let mut x = (w as i32 - total).max(0) / 2;
    let y = 48;
    for (name, c) in legend {
        head.draw(&Rectangle::new([(x, y - 6), (x + 14, y + 6)], c.filled()))
            .map_err(e2s)?;
        head.draw(&Text::new(
            name.as_str(),
            (x + 20, y),
            ("sans-serif", LABEL)
                .into_font()
                .color(&BLACK)
                .pos(Pos::new(HPos::Left, VPos::Center)),
        ))
        .map_err(e2s)?;
        x += item_w(name);
    }
    Ok(())
}

pub(super) fn plots_tps_bars(r: &Report, order: &[String]) -> Result<Vec<Figure>, String> {
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

pub(super) fn plots_timelines(
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

pub(super) fn plots_sizes(r: &Report, order: &[String]) -> Result<Vec<Figure>, String> {
    // (host, workload) → variant → (apparent, on disk, compressratio), from
    // the group with the fewest clients that measured sizes.
    type Sz = (Option<f64>, Option<f64>, Option<f64>);
    let mut m: BTreeMap<(String, String), BTreeMap<String, Sz>> = BTreeMap::new();
    for t in &r.tables {
        for h in &t.hosts {
            for row in &h.rows {
                let g = &row.stats;
                if g.du_apparent_bytes.is_none() && g.on_disk_bytes.is_none() {
                    continue;
                }
                m.entry((h.host.clone(), t.workload.clone()))
                    .or_default()
                    .entry(g.key.filesystem.clone())
                    .or_insert((g.du_apparent_bytes, g.on_disk_bytes, g.zfs_compressratio));
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
        // The axis in one binary unit picked by the largest bar (ticks at
        // 20, 40, 60 MiB, never 47.7 and 95.4 MiB of decimal steps in bytes).
        let largest = vs
            .iter()
            .flat_map(|(_, (a, d, _))| [*a, *d])
            .flatten()
            .fold(0.0, f64::max);
        let (scaled, unit) = text::iec_scaled(largest);
        let per_unit = if scaled > 0.0 { largest / scaled } else { 1.0 };
        let mut bars = Vec::new();
        for (cat, (_, (app, disk, ratio))) in vs.iter().enumerate() {
            let app = app.map(|a| a / per_unit);
            let disk = disk.map(|d| d / per_unit);
            if let Some(a) = app {
                bars.push(Bar {
                    cat,
                    slot: 0,
                    slots: 2,
                    lo: 0.0,
                    hi: a,
                    color: apparent_c,
                    ci: None,
                    note: None,
                });
            }
            if let Some(d) = disk {
                // Every bar says the same measure, logical ÷ physical (du);
                // ZFS's own compressratio (before allocation) is in the
                // tables.  Only without du's apparent size is it shown.
                let note = match (app, ratio) {
                    (Some(a), _) if d > 0.0 => Some(format!("logical/physical {:.2}x", a / d)),
                    (None, Some(x)) => Some(format!("compressratio {x:.2}x")),
                    _ => None,
                };
                bars.push(Bar {
                    cat,
                    slot: 1,
                    slots: 2,
                    lo: 0.0,
                    hi: d,
                    color: on_disk_c,
                    ci: None,
                    note,
                });
            }
        }
        let title = format!("{host} — {workload}: data directory size after load");
        let y_desc = format!("size ({unit})");
        let chart = BarChart {
            kind: "size-on-disk",
            title: &title,
            y_desc: &y_desc,
            x_desc: "filesystem variant",
            cats: vs.iter().map(|(fs, _)| (*fs).clone()).collect(),
            bars,
            legend: vec![
                ("logical (du apparent)".into(), apparent_c),
                ("physical (du on disk)".into(), on_disk_c),
            ],
            y_fmt: &plain_y,
        };
        figs.push(figure("size-on-disk", &title, draw_bars(&chart)));
    }
    Ok(figs)
}

pub(super) fn plots_init(cells: &[CellResult], order: &[String]) -> Result<Vec<Figure>, String> {
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
