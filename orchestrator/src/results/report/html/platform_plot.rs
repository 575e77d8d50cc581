//! The HTML report's guests against bare metal ([`PLATFORM_PLOT`], only
//! where a bundle had guests: [`crate::results::report::platform`]): per
//! workload and client count, the guest ÷ bare-metal ratio of each
//! variant and guest as a dot with its 95% CI whisker, a line at 1.0
//! (bare metal), then the sentences.
use std::fmt::Write as _;

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{
    category, clip, draw_svg, e2s, esc, figure, plain_y, upper, variant_color, DESC, LABEL, LIGHT,
};
use crate::results::report::platform::{
    platform_line, platform_sections, PlatformSection, PLATFORM_HEADING,
};
use crate::results::report::Report;

/// The `data-plot` kind of the ratio plot.
pub const PLATFORM_PLOT: &str = "platform-ratio";

/// The section: nothing when the report has no guests.
pub(super) fn platform_html(out: &mut String, r: &Report, order: &[String]) {
    let sections = platform_sections(r);
    if sections.is_empty() {
        return;
    }
    let _ = writeln!(out, "<h3>{}</h3>", esc(PLATFORM_HEADING));
    for s in &sections {
        let title = format!("{}: guest ÷ bare metal", s.heading());
        match draw_ratio(s, &title, order) {
            Some(svg) => {
                let f = figure(PLATFORM_PLOT, &title, svg);
                if f.svg.is_empty() {
                    let _ = writeln!(out, "<p class=\"empty\">{}</p>", esc(&f.caption));
                } else {
                    let _ = writeln!(out, "<figure>\n{}</figure>", f.svg);
                }
            }
            None => {
                let _ = writeln!(
                    out,
                    "<p class=\"empty\">{}: no variant has done runs on both a guest and its physical host, so there is no ratio to plot.</p>",
                    esc(&s.heading())
                );
            }
        }
        out.push_str("<ul class=\"platforms\">\n");
        for p in &s.rows {
            let _ = writeln!(out, "<li>{}</li>", esc(&platform_line(p)));
        }
        out.push_str("</ul>\n");
    }
}

/// One dot and whisker per row with a ratio; `None` when no row has one.
fn draw_ratio(
    s: &PlatformSection<'_>,
    title: &str,
    order: &[String],
) -> Option<Result<String, String>> {
    let rows: Vec<_> = s
        .rows
        .iter()
        .filter_map(|p| Some((*p, p.ratio?, p.metric?)))
        .collect();
    let metric = rows.first()?.2;
    let cats: Vec<String> = rows
        .iter()
        .map(|(p, _, _)| {
            let mark = if p.standin { " [TCG]" } else { "" };
            format!("{} ({}){mark}", p.variant, p.guest)
        })
        .collect();
    let ymax = upper(
        rows.iter()
            .map(|(p, x, _)| p.ci_high.unwrap_or(*x).max(*x))
            .fold(1.0, f64::max),
    );
    let y_desc = format!("guest ÷ bare metal ({})", metric.name());
    let n = rows.len();
    Some(draw_svg(PLATFORM_PLOT, title, |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(title, ("sans-serif", 22))
            .margin(12)
            .x_label_area_size(50)
            .y_label_area_size(85)
            .build_cartesian_2d(-0.5..(n as f64 - 0.5), 0.0..ymax)
            .map_err(e2s)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_desc("variant (guest)")
            .y_desc(y_desc.as_str())
            .x_labels(n.max(1))
            .x_label_formatter(&|x| category(x, &cats))
            .y_label_formatter(&plain_y)
            .label_style(("sans-serif", LABEL))
            .axis_desc_style(("sans-serif", DESC))
            .light_line_style(LIGHT)
            .draw()
            .map_err(e2s)?;
        // Bare metal: ratio 1.
        let grey = RGBColor(110, 110, 110);
        chart
            .draw_series(LineSeries::new(
                [(-0.5, 1.0), (n as f64 - 0.5, 1.0)],
                grey.stroke_width(1),
            ))
            .map_err(e2s)?;
        chart
            .draw_series(std::iter::once(Text::new(
                "bare metal = 1",
                (-0.45, clip(1.0, ymax)),
                ("sans-serif", LABEL)
                    .into_font()
                    .color(&grey)
                    .pos(Pos::new(HPos::Left, VPos::Bottom)),
            )))
            .map_err(e2s)?;
        for (i, (p, x, _)) in rows.iter().enumerate() {
            let c = variant_color(order, &p.variant);
            let xi = i as f64;
            let st = c.stroke_width(2);
            if let (Some(lo), Some(hi)) = (p.ci_low, p.ci_high) {
                let (lo, hi) = (clip(lo, ymax), clip(hi, ymax));
                chart
                    .draw_series([PathElement::new(vec![(xi, lo), (xi, hi)], st)])
                    .map_err(e2s)?;
                chart
                    .draw_series([lo, hi].map(|y| {
                        EmptyElement::at((xi, y)) + PathElement::new(vec![(-5, 0), (5, 0)], st)
                    }))
                    .map_err(e2s)?;
            }
            chart
                .draw_series(std::iter::once(Circle::new(
                    (xi, clip(*x, ymax)),
                    5,
                    c.filled(),
                )))
                .map_err(e2s)?;
        }
        Ok(())
    }))
}
