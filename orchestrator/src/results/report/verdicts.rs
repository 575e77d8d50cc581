//! The answer first: per host, workload and client count, one sentence an
//! operator can act on — which variants are faster or slower than the
//! baseline and by how much (the ratio, its interval at the level its test
//! was decided at, the family-adjusted p), which are equivalent to it within
//! the margin, which are inconclusive (and how many repeats per arm would
//! likely decide them), and which could not be tested.  "No winner" is never
//! the answer when a variant is decided worse: the loser is named.
//!
//! Built once from the report's tables ([`verdict_lines`], in
//! [`super::build_report`]) into [`super::Report::verdicts`]; every format
//! leads with the same [`VerdictLine::sentence`]s: the terminal summary
//! (`run`'s last lines and `report --format summary`), Markdown, HTML and
//! the JSON `verdicts` array.  The words are [`Verdict::text`]'s.
use serde::Serialize;

use super::build::{HostBlock, Table};
use crate::config::Margin;
use crate::results::analysis::compare::{Interval, Verdict};
use crate::results::analysis::stats::{p_text, Metric};

/// The heading every format gives the verdict lines.
pub const VERDICTS_HEADING: &str = "The answer";

/// One variant against its baseline, as the sentence says it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VariantVerdict {
    pub variant: String,
    /// What it is compared with (side by side: the same variant of the
    /// first bundle).
    pub baseline: String,
    pub verdict: Verdict,
    /// Variant mean ÷ baseline mean of the table's metric.
    pub ratio: Option<f64>,
    /// The interval that decided it: the equivalence test's (1 − 2a) one
    /// for an equivalent variant, else the difference test's, each at the
    /// level the family tested it at.
    pub ci: Option<Interval>,
    /// The deciding test's p: its own, and adjusted over the family (the
    /// equivalence test's for an equivalent variant).
    pub p: Option<f64>,
    pub p_adjusted: Option<f64>,
    /// Faster or slower, and by less than the margin.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub within_margin: bool,
    /// Inconclusive: the repeats per arm that would likely decide it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repeats_to_decide: Option<usize>,
    /// Inconclusive: the counted repeats of the smaller arm now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repeats_now: Option<usize>,
    /// A sequential design: the look that decided it (or its last), and
    /// the level its tests were held at there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sequential: Option<crate::results::analysis::sequential::Stop>,
}

/// A host's answer for one (workload, clients).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VerdictLine {
    pub workload: String,
    pub clients: u32,
    pub host: String,
    pub metric: Metric,
    /// The host's baseline (none side by side: each row has its own).
    pub baseline: Option<String>,
    /// Decided better than every other variant at the family's error rate.
    pub winner: Option<String>,
    /// Every row but the baseline's, in matrix order.
    pub variants: Vec<VariantVerdict>,
    /// The line itself, as every format prints it.
    pub sentence: String,
}

/// The verdict lines of `tables`, in table order, one per host that has a
/// finished row.
pub fn verdict_lines(tables: &[Table], margin: Margin) -> Vec<VerdictLine> {
    tables
        .iter()
        .flat_map(|t| {
            t.hosts
                .iter()
                .filter(|h| h.rows.iter().any(|r| !r.stats.values(t.metric).is_empty()))
                .map(move |h| line(t, h, margin))
        })
        .collect()
}

fn line(t: &Table, h: &HostBlock, margin: Margin) -> VerdictLine {
    let m = t.metric;
    let variants: Vec<VariantVerdict> = h
        .rows
        .iter()
        .filter_map(|r| {
            let c = r.comparison.as_ref()?;
            let equivalent = c.verdict == Verdict::Equivalent;
            let (ci, p, p_adjusted) = match (equivalent, c.difference, c.equivalence) {
                (true, _, Some(e)) => (Some(e.ci), Some(e.p), Some(e.p_adjusted)),
                (false, Some(d), _) => (Some(d.ci), Some(d.p), Some(d.p_adjusted)),
                _ => (None, None, None),
            };
            Some(VariantVerdict {
                variant: r.stats.key.filesystem.clone(),
                baseline: c.baseline.clone(),
                verdict: c.verdict,
                ratio: c.ratio.map(|x| x.ratio),
                ci,
                p,
                p_adjusted,
                within_margin: c.within_margin,
                repeats_to_decide: c.repeats_to_decide,
                repeats_now: (c.verdict == Verdict::Inconclusive)
                    .then(|| c.estimate.map(|l| l.n_a.min(l.n_b)))
                    .flatten(),
                sequential: c.sequential,
            })
        })
        .collect();
    let s = if t.clients == 1 { "" } else { "s" };
    let mut lead = format!("{}, {} client{s}, on {}: ", t.workload, t.clients, h.host);
    let finished = h
        .rows
        .iter()
        .filter(|r| !r.stats.values(m).is_empty())
        .count();
    let body = if variants.is_empty() || finished < 2 {
        let only = h
            .rows
            .iter()
            .find(|r| !r.stats.values(m).is_empty())
            .map_or("?", |r| r.stats.key.filesystem.as_str());
        format!("only `{only}` finished: nothing to compare with.")
    } else {
        let mut parts = Vec::new();
        if let Some(w) = &h.winner {
            parts.push(format!(
                "`{w}` is best ({} than every other variant, decided at the family's error rate)",
                match m {
                    Metric::Tps => "more tps",
                    Metric::Latency => "lower mean latency",
                    Metric::LoadTime => "a shorter load time",
                }
            ));
        }
        let group = |pick: fn(Verdict) -> bool| -> Vec<&VariantVerdict> {
            variants.iter().filter(|v| pick(v.verdict)).collect()
        };
        for v in group(Verdict::better)
            .into_iter()
            .chain(group(Verdict::worse))
        {
            let small = if v.within_margin {
                format!(", by less than the ±{margin} margin")
            } else {
                String::new()
            };
            parts.push(format!(
                "`{}` is {} than `{}`{small}: {} ({})",
                v.variant,
                v.verdict.text(),
                v.baseline,
                ratio_words(v, m),
                ci_p(v, "p")
            ));
        }
        let equivalent = group(|v| v == Verdict::Equivalent);
        // Side by side, each row has its own baseline: one clause each.
        let one_baseline = equivalent
            .iter()
            .all(|v| v.baseline == equivalent[0].baseline);
        match equivalent.as_slice() {
            [] => {}
            some if some.len() == 1 || !one_baseline => {
                for v in some {
                    parts.push(format!(
                        "`{}` is equivalent to `{}` within ±{margin} ({}, {})",
                        v.variant,
                        v.baseline,
                        ratio_words(v, m),
                        ci_p(v, "TOST p")
                    ));
                }
            }
            many => {
                let each: Vec<String> = many
                    .iter()
                    .map(|v| {
                        format!(
                            "`{}` ({}, {})",
                            v.variant,
                            times(v.ratio),
                            ci_p(v, "TOST p")
                        )
                    })
                    .collect();
                parts.push(format!(
                    "equivalent to `{}` within ±{margin}: {}",
                    many[0].baseline,
                    each.join(", ")
                ));
            }
        }
        for v in group(|v| v == Verdict::Inconclusive) {
            let more = match (v.repeats_to_decide, v.repeats_now) {
                (Some(n), Some(now)) => format!(
                    "about {n} repeats per arm ({} more) would likely decide it",
                    n.saturating_sub(now)
                ),
                (Some(n), None) => format!("about {n} repeats per arm would likely decide it"),
                (None, _) => format!(
                    "more than {} repeats per arm would be needed: the ratio sits about the ±{margin} margin, or the runs spread too widely",
                    crate::results::analysis::compare::MAX_PLANNED_REPEATS
                ),
            };
            parts.push(format!(
                "`{}` against `{}` is inconclusive ({}, {}); {more}",
                v.variant,
                v.baseline,
                ratio_words(v, m),
                ci_p(v, "p")
            ));
        }
        for v in group(|v| v == Verdict::Untestable) {
            parts.push(format!(
                "`{}` against `{}` is untestable (fewer than two repeats on a side, or no spread)",
                v.variant, v.baseline
            ));
        }
        for v in group(|v| v == Verdict::NoBaseline) {
            parts.push(format!(
                "`{}` has no baseline here (`{}` did not finish on this host)",
                v.variant,
                if v.baseline.is_empty() {
                    "the baseline"
                } else {
                    &v.baseline
                }
            ));
        }
        let mut body = parts.join("; ");
        body.push('.');
        body
    };
    lead.push_str(&body);
    VerdictLine {
        workload: t.workload.clone(),
        clients: t.clients,
        host: h.host.clone(),
        metric: m,
        baseline: h.baseline.clone(),
        winner: h.winner.clone(),
        variants,
        sentence: lead,
    }
}

/// `0.62×`, or `?` without a ratio.
fn times(r: Option<f64>) -> String {
    r.map_or_else(|| "?".into(), |r| format!("{r:.2}×"))
}

/// `0.62× its tps`: the ratio and what it is a ratio of.
fn ratio_words(v: &VariantVerdict, m: Metric) -> String {
    let of = match m {
        Metric::Tps => "its tps",
        Metric::Latency => "its mean latency",
        Metric::LoadTime => "its load time",
    };
    format!("{} {of}", times(v.ratio))
}

/// `97.5% CI 0.58–0.66, adjusted p = 0.002` (each part only when known;
/// `what` names the test: `p`, `TOST p`).
fn ci_p(v: &VariantVerdict, what: &str) -> String {
    let mut parts = Vec::new();
    if let Some(ci) = v.ci {
        parts.push(ci.text());
    }
    parts.push(
        v.p_adjusted
            .map_or_else(|| format!("no {what}"), |p| adjusted_p_text(p, what)),
    );
    if let Some(stop) = v.sequential {
        parts.push(if stop.decided {
            format!("decided at look {} of {}", stop.look, stop.max)
        } else {
            format!(
                "undecided after {} repeats per arm (max {})",
                stop.look, stop.max
            )
        });
    }
    parts.join(", ")
}

/// `adjusted p = 0.004`, `adjusted TOST p < 0.001`.
pub fn adjusted_p_text(p: f64, what: &str) -> String {
    let t = p_text(p);
    format!("adjusted {what}{}", t.strip_prefix('p').unwrap_or(&t))
}
