//! "By how much", as a picture ([`RATIO_PLOT`], the HTML report's first
//! plot): per host and workload (its client counts side by side), each
//! variant's ratio to the
//! baseline (the table's metric: tps, mean latency or load time) as a dot
//! with its 95% CI whisker, a line at 1.0 (the baseline), and the
//! significant ones (p < 0.05) filled and starred; tied and untestable
//! ones hollow.  The data are the verdict lines' ([`super::super::verdicts`]),
//! so the picture says what the sentences say.
//!
//! [`draw_dots`] draws any such dot-and-whisker ratio plot; the guests
//! against bare metal ([`super::platform_plot`]) use it too.
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{category, draw_svg, e2s, figure, plain_y, variant_color, Figure, DESC, LABEL, LIGHT};
use crate::results::analysis::compare::Verdict;
use crate::results::analysis::stats::Metric;
use crate::results::report::{Report, VerdictLine};

/// The `data-plot` kind of the ratio plot.
pub const RATIO_PLOT: &str = "ratio";

/// One dot: a ratio, its CI, whether it is significant.
pub(super) struct Dot {
    /// The x-axis label.
    pub label: String,
    /// The variant, for its colour.
    pub variant: String,
    pub ratio: f64,
    pub ci: Option<(f64, f64)>,
    pub significant: bool,
}

/// The largest ratio axis: a ratio past it is drawn at the edge (plotters
/// overflows far outside its range).
const RATIO_LIMIT: f64 = 1e6;

/// The y range: 1.0 and every dot and whisker, with a margin, never below 0.
fn y_range(dots: &[Dot]) -> (f64, f64) {
    let (mut lo, mut hi) = (1.0_f64, 1.0_f64);
    for d in dots {
        let (a, b) = d.ci.unwrap_or((d.ratio, d.ratio));
        for v in [a, b, d.ratio] {
            if v.is_finite() {
                lo = lo.min(v);
                hi = hi.max(v);
            }
        }
    }
    let hi = hi.min(RATIO_LIMIT);
    let pad = ((hi - lo) * 0.12).max(0.05);
    ((lo - pad).max(0.0), hi + pad)
}

/// A dot-and-whisker plot of `dots` against a reference line at 1.0
/// labelled `reference` (`ext4 = 1`, `bare metal = 1`).
pub(super) fn draw_dots(
    kind: &str,
    title: &str,
    dots: &[Dot],
    reference: &str,
    x_desc: &str,
    y_desc: &str,
    order: &[String],
) -> Result<String, String> {
    let (ylo, yhi) = y_range(dots);
    let keep = |v: f64| if v.is_nan() { ylo } else { v.clamp(ylo, yhi) };
    let n = dots.len();
    let cats: Vec<String> = dots.iter().map(|d| d.label.clone()).collect();
    draw_svg(kind, title, |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(title, ("sans-serif", 22))
            .margin(12)
            .x_label_area_size(50)
            .y_label_area_size(85)
            .build_cartesian_2d(-0.5..(n as f64 - 0.5), ylo..yhi)
            .map_err(e2s)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_desc(x_desc)
            .y_desc(y_desc)
            .x_labels(n.max(1))
            .x_label_formatter(&|x| category(x, &cats))
            .y_label_formatter(&plain_y)
            .label_style(("sans-serif", LABEL))
            .axis_desc_style(("sans-serif", DESC))
            .light_line_style(LIGHT)
            .draw()
            .map_err(e2s)?;
        let grey = RGBColor(110, 110, 110);
        chart
            .draw_series(LineSeries::new(
                [(-0.5, 1.0), (n as f64 - 0.5, 1.0)],
                grey.stroke_width(1),
            ))
            .map_err(e2s)?;
        chart
            .draw_series(std::iter::once(Text::new(
                reference.to_owned(),
                (-0.45, 1.0),
                ("sans-serif", LABEL)
                    .into_font()
                    .color(&grey)
                    .pos(Pos::new(HPos::Left, VPos::Bottom)),
            )))
            .map_err(e2s)?;
        for (i, d) in dots.iter().enumerate() {
            let c = variant_color(order, &d.variant);
            let xi = i as f64;
            let st = c.stroke_width(2);
            if let Some((lo, hi)) = d.ci {
                let (lo, hi) = (keep(lo), keep(hi));
                chart
                    .draw_series([PathElement::new(vec![(xi, lo), (xi, hi)], st)])
                    .map_err(e2s)?;
                chart
                    .draw_series([lo, hi].map(|y| {
                        EmptyElement::at((xi, y)) + PathElement::new(vec![(-5, 0), (5, 0)], st)
                    }))
                    .map_err(e2s)?;
            }
            let at = (xi, keep(d.ratio));
            if d.significant {
                chart
                    .draw_series(std::iter::once(Circle::new(at, 6, c.filled())))
                    .map_err(e2s)?;
            } else {
                // Hollow: within noise (or untestable); white inside so the
                // whisker does not show through.
                chart
                    .draw_series([
                        Circle::new(at, 6, WHITE.filled()),
                        Circle::new(at, 6, c.stroke_width(2)),
                    ])
                    .map_err(e2s)?;
            }
            let text = format!("{}{:.2}×", if d.significant { "* " } else { "" }, d.ratio);
            chart
                .draw_series(std::iter::once(Text::new(
                    text,
                    (xi + 0.06, keep(d.ratio)),
                    ("sans-serif", LABEL)
                        .into_font()
                        .color(&c)
                        .pos(Pos::new(HPos::Left, VPos::Bottom)),
                )))
                .map_err(e2s)?;
        }
        Ok(())
    })
}

/// One ratio plot per host and workload (its client counts side by side,
/// labelled `variant, N cl` when there are several), in the order of the
/// verdicts; the reason when there is none.
pub(super) fn plots_ratio(r: &Report, order: &[String]) -> Result<Vec<Figure>, String> {
    // (host, workload) in first-seen order → its verdict lines.
    let mut groups: Vec<((&str, &str), Vec<&VerdictLine>)> = Vec::new();
    for v in &r.verdicts {
        let key = (v.host.as_str(), v.workload.as_str());
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, vs)) => vs.push(v),
            None => groups.push((key, vec![v])),
        }
    }
    let mut out = Vec::new();
    for ((host, workload), lines) in groups {
        let several = lines.len() > 1;
        let dots: Vec<Dot> = lines
            .iter()
            .flat_map(|v| v.variants.iter().map(move |x| (v.clients, x)))
            .filter_map(|(clients, x)| {
                Some(Dot {
                    label: if several {
                        format!("{}, {clients} cl", x.variant)
                    } else {
                        x.variant.clone()
                    },
                    variant: x.variant.clone(),
                    ratio: x.ratio.filter(|r| r.is_finite())?,
                    ci: x.ci.map(|c| (c.low, c.high)),
                    significant: x.verdict.better() || x.verdict.worse(),
                })
            })
            .collect();
        if dots.is_empty() {
            continue;
        }
        let v = lines[0];
        let baseline = v
            .baseline
            .clone()
            .or_else(|| v.variants.first().map(|x| x.baseline.clone()))
            .unwrap_or_default();
        let title = format!("{workload} on {host}: each variant ÷ {baseline}");
        let what = match v.metric {
            Metric::Tps => "tps",
            Metric::Latency => "mean latency (lower is better)",
            Metric::LoadTime => "load time (lower is better)",
        };
        let svg = draw_dots(
            RATIO_PLOT,
            &title,
            &dots,
            &format!("{baseline} = 1"),
            "variant (* faster or slower at the family's error rate; hollow: equivalent, inconclusive or untestable)",
            &format!("ratio of {what}, interval at each verdict's adjusted level"),
            order,
        );
        out.push(figure(RATIO_PLOT, &title, svg));
    }
    if out.is_empty() {
        let why = if r.tables.is_empty() {
            "No counted run finished, so there is no ratio to plot."
        } else if r
            .verdicts
            .iter()
            .any(|v| v.variants.iter().any(|x| x.verdict == Verdict::NoBaseline))
        {
            "The baseline did not finish where the others did, so there is no ratio to plot."
        } else {
            "Each host ran one variant per workload, so there is no ratio to plot."
        };
        return Err(why.into());
    }
    Ok(out)
}
