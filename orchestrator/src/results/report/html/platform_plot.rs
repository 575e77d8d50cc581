//! The HTML report's guests against bare metal ([`PLATFORM_PLOT`], only
//! where a bundle had guests: [`crate::results::report::platform`]): per
//! workload and client count, the guest ÷ bare-metal ratio of each
//! variant and guest as a dot with its 95% CI whisker, a line at 1.0
//! (bare metal), then the sentences.
use std::fmt::Write as _;

use super::ratio_plot::{draw_dots, Dot};
use super::{esc, figure};
use crate::results::analysis::compare::ALPHA;
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

/// One dot and whisker per row with a ratio ([`draw_dots`]); `None` when
/// no row has one.
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
    let dots: Vec<Dot> = rows
        .iter()
        .map(|(p, x, _)| Dot {
            label: format!(
                "{} ({}){}",
                p.variant,
                p.guest,
                if p.standin { " [TCG]" } else { "" }
            ),
            variant: p.variant.clone(),
            ratio: *x,
            ci: p.ci_low.zip(p.ci_high),
            significant: p.p.is_some_and(|p| p < ALPHA),
        })
        .collect();
    Some(draw_dots(
        PLATFORM_PLOT,
        title,
        &dots,
        "bare metal = 1",
        "variant (guest)",
        &format!("guest ÷ bare metal ({})", metric.name()),
        order,
    ))
}
