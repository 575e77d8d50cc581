//! The HTML report's latency part, shown only when some row has
//! it: per host × workload × clients a `latency-percentiles` plot (each
//! variant's mean latency at each percentile of
//! [`crate::generator::pgbench_log::CURVE`], the percentiles evenly spaced so
//! that the tail gets room), the latency table, and the per-statement
//! tables.  Drawn like the other plots ([`super::draw_svg`]).
use std::collections::BTreeMap;
use std::fmt::Write as _;

use plotters::prelude::*;

use super::{
    category, clip, draw_svg, e2s, esc, figure, plain_y, section, upper, variant_color, Figure,
    DESC, LABEL, LIGHT,
};
use crate::generator::pgbench_log::CURVE;
use crate::results::report::latency::{
    group_name, latency_cells, ms, rows, LATENCY_COLUMNS, LATENCY_HEADING, STATEMENTS_HEADING,
};
use crate::results::report::Report;

/// The plot's `data-plot` kind.
pub const LATENCY_PLOT: &str = "latency-percentiles";

/// The latency plots and tables; nothing when no row has a log or `-r`.
pub fn latency_html(out: &mut String, r: &Report, order: &[String]) {
    let any_log = rows(r).any(|(_, g)| g.latency_percentiles.is_some());
    if any_log {
        let _ = writeln!(out, "<h2>{}</h2>", esc(LATENCY_HEADING));
        let mut not_drawn = Vec::new();
        section(
            out,
            "Latency at each percentile (mean of the counted runs)",
            plots(r, order),
            &mut not_drawn,
        );
        for (title, why) in not_drawn {
            let _ = writeln!(
                out,
                "<p class=\"empty\">Not drawn: {}: {}</p>",
                esc(&title),
                esc(&why)
            );
        }
        out.push_str("<table class=\"fsmx-table\">\n<tr>");
        for c in LATENCY_COLUMNS {
            let _ = write!(out, "<th>{}</th>", esc(c));
        }
        out.push_str("<th>p99 per run</th></tr>\n");
        for (_, g) in rows(r) {
            let Some(l) = &g.latency_percentiles else {
                continue;
            };
            out.push_str("<tr>");
            for (i, c) in latency_cells(g, l).iter().enumerate() {
                let class = if i >= 3 { " class=\"n\"" } else { "" };
                let _ = write!(out, "<td{class}>{}</td>", esc(c));
            }
            let per_run: Vec<String> = l.per_run.iter().map(|p| ms(p.p99_ms)).collect();
            let _ = writeln!(
                out,
                "<td class=\"n\">{}</td></tr>",
                esc(&per_run.join(", "))
            );
        }
        out.push_str("</table>\n");
    }
    let with_statements: Vec<_> = rows(r)
        .map(|(_, g)| g)
        .filter(|g| !g.statement_latencies.is_empty())
        .collect();
    if with_statements.is_empty() {
        return;
    }
    let _ = writeln!(out, "<h2>{}</h2>", esc(STATEMENTS_HEADING));
    for g in with_statements {
        let _ = writeln!(out, "<h3>{}</h3>", esc(&group_name(g)));
        let counts = g.statement_latencies.iter().any(|s| s.failures.is_some());
        out.push_str(
            "<table class=\"fsmx-table\">\n<tr><th>script</th><th>statement</th><th>mean ms</th><th>runs</th>",
        );
        if counts {
            out.push_str("<th>failures</th><th>retries</th>");
        }
        out.push_str("</tr>\n");
        for s in &g.statement_latencies {
            let _ = write!(
                out,
                "<tr><td class=\"n\">{}</td><td><code>{}</code></td><td class=\"n\">{}</td><td class=\"n\">{}</td>",
                s.script + 1,
                esc(&s.command),
                ms(s.latency_ms),
                s.runs
            );
            if counts {
                let n = |v: Option<u64>| v.map_or(String::new(), |v| v.to_string());
                let _ = write!(
                    out,
                    "<td class=\"n\">{}</td><td class=\"n\">{}</td>",
                    n(s.failures),
                    n(s.retries)
                );
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</table>\n");
    }
}

fn plots(r: &Report, order: &[String]) -> Result<Vec<Figure>, String> {
    // (host, workload, clients) → variant → curve
    let mut m: BTreeMap<(String, String, u32), BTreeMap<String, Vec<f64>>> = BTreeMap::new();
    for (_, g) in rows(r) {
        if let Some(l) = g
            .latency_percentiles
            .as_ref()
            .filter(|l| l.curve_ms.len() == CURVE.len())
        {
            let k = &g.key;
            m.entry((k.host.clone(), k.workload.clone(), k.clients))
                .or_default()
                .insert(k.filesystem.clone(), l.curve_ms.clone());
        }
    }
    if m.is_empty() {
        return Err("No counted run has a latency curve.".into());
    }
    let labels: Vec<String> = CURVE
        .iter()
        .map(|&p| match p {
            0.0 => "min".to_owned(),
            100.0 => "max".to_owned(),
            p if [50.0, 90.0, 95.0, 99.0, 99.9].contains(&p) => format!("p{p}"),
            _ => String::new(),
        })
        .collect();
    let mut figs = Vec::new();
    for ((host, workload, clients), variants) in &m {
        let title = format!(
            "{host} — {workload}, {clients} client{}: latency percentiles",
            if *clients == 1 { "" } else { "s" }
        );
        let ymax = upper(variants.values().flatten().copied().fold(0.0, f64::max));
        let mut vs: Vec<_> = variants.iter().collect();
        vs.sort_by_key(|(fs, _)| order.iter().position(|o| o == *fs).unwrap_or(usize::MAX));
        let n = CURVE.len();
        let svg = draw_svg(LATENCY_PLOT, &title, |root| {
            let mut chart = ChartBuilder::on(root)
                .caption(&title, ("sans-serif", 22))
                .margin(12)
                .x_label_area_size(50)
                .y_label_area_size(85)
                .build_cartesian_2d(-0.5..(n as f64 - 0.5), 0.0..ymax)
                .map_err(e2s)?;
            chart
                .configure_mesh()
                .disable_x_mesh()
                .x_desc("percentile of the logged transactions")
                .y_desc("latency (ms)")
                .x_labels(n)
                .x_label_formatter(&|x| category(x, &labels))
                .y_label_formatter(&plain_y)
                .label_style(("sans-serif", LABEL))
                .axis_desc_style(("sans-serif", DESC))
                .light_line_style(LIGHT)
                .draw()
                .map_err(e2s)?;
            for (fs, curve) in &vs {
                let c = variant_color(order, fs);
                let points: Vec<(f64, f64)> = curve
                    .iter()
                    .enumerate()
                    .map(|(i, &v)| (i as f64, clip(v, ymax)))
                    .collect();
                chart
                    .draw_series(LineSeries::new(points.clone(), c.stroke_width(2)))
                    .map_err(e2s)?
                    .label((*fs).clone())
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2))
                    });
                chart
                    .draw_series(points.iter().map(|&p| Circle::new(p, 3, c.filled())))
                    .map_err(e2s)?;
            }
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.85))
                .label_font(("sans-serif", LABEL))
                .border_style(BLACK)
                .position(SeriesLabelPosition::UpperLeft)
                .draw()
                .map_err(e2s)?;
            Ok(())
        });
        figs.push(figure(LATENCY_PLOT, &title, svg));
    }
    Ok(figs)
}
