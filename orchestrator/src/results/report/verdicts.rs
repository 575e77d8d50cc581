//! The answer first: per host, workload and client count, one sentence an
//! operator can act on — which variants are better or worse than the
//! baseline and by how much (the ratio, its 95% CI and p), which are tied
//! with it, and which could not be tested.  "No winner" is never the
//! answer when a variant is significantly worse: the loser is named.
//!
//! Built once from the report's tables ([`verdict_lines`], in
//! [`super::build_report`]) into [`super::Report::verdicts`]; every format
//! leads with the same [`VerdictLine::sentence`]s: the terminal summary
//! (`run`'s last lines and `report --format summary`), Markdown, HTML and
//! the JSON `verdicts` array.  The words are [`Verdict::text`]'s.
use serde::Serialize;

use super::build::{HostBlock, Table};
use crate::results::analysis::compare::Verdict;
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
    pub ci95: Option<(f64, f64)>,
    pub p: Option<f64>,
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
    /// Better than every other variant at p < 0.05.
    pub winner: Option<String>,
    /// Every row but the baseline's, in matrix order.
    pub variants: Vec<VariantVerdict>,
    /// The line itself, as every format prints it.
    pub sentence: String,
}

/// The verdict lines of `tables`, in table order, one per host that has a
/// finished row.
pub fn verdict_lines(tables: &[Table]) -> Vec<VerdictLine> {
    tables
        .iter()
        .flat_map(|t| {
            t.hosts
                .iter()
                .filter(|h| h.rows.iter().any(|r| !r.stats.values(t.metric).is_empty()))
                .map(move |h| line(t, h))
        })
        .collect()
}

fn line(t: &Table, h: &HostBlock) -> VerdictLine {
    let m = t.metric;
    let variants: Vec<VariantVerdict> = h
        .rows
        .iter()
        .filter_map(|r| {
            let c = r.comparison.as_ref()?;
            Some(VariantVerdict {
                variant: r.stats.key.filesystem.clone(),
                baseline: c.baseline.clone(),
                verdict: c.verdict,
                ratio: c.ratio.map(|x| x.ratio),
                ci95: c.ratio.and_then(|x| x.ci95),
                p: c.welch.map(|w| w.p),
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
                "`{w}` is best ({} than every other variant, p < 0.05)",
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
            parts.push(format!(
                "`{}` is {} than `{}`: {} ({})",
                v.variant,
                v.verdict.text(),
                v.baseline,
                ratio_words(v, m),
                ci_p(v)
            ));
        }
        let tied = group(|v| v == Verdict::Tied);
        // Side by side, each row has its own baseline: one clause each.
        let one_baseline = tied.iter().all(|v| v.baseline == tied[0].baseline);
        match tied.as_slice() {
            [] => {}
            some if some.len() == 1 || !one_baseline => {
                for v in some {
                    parts.push(format!(
                        "`{}` is tied with `{}` ({}, {})",
                        v.variant,
                        v.baseline,
                        ratio_words(v, m),
                        ci_p(v)
                    ));
                }
            }
            many => {
                let each: Vec<String> = many
                    .iter()
                    .map(|v| format!("`{}` ({}, {})", v.variant, times(v.ratio), ci_p(v)))
                    .collect();
                parts.push(format!(
                    "tied with `{}`: {}",
                    many[0].baseline,
                    each.join(", ")
                ));
            }
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

/// `95% CI 0.58–0.66, p = 0.002` (each part only when known).
fn ci_p(v: &VariantVerdict) -> String {
    let mut parts = Vec::new();
    if let Some((lo, hi)) = v.ci95 {
        parts.push(format!("95% CI {lo:.2}–{hi:.2}"));
    }
    parts.push(v.p.map_or_else(|| "no p".into(), p_text));
    parts.join(", ")
}
