//! "Smallest", answered beside "fastest": per host and workload, which
//! variant keeps the data in the fewest bytes on disk, each read with its
//! own filesystem's measure (`config::fs::SizeMeasure`: du, ZFS's
//! referenced, btrfs's used), and each variant's ratio to the baseline's.
//!
//! A variant's size is the median of its rows' sizes over the workload's
//! client counts (each row's own is already the median over its counted
//! repeats).  The repeats of one build hold the same data, so their sizes
//! barely differ and carry no interval: a difference of sizes is answered
//! as measured, and two sizes within [`SIZE_TIE`] of each other are said to
//! be as small as each other.  A row whose two measures disagree
//! ([`crate::results::analysis::drift::size_check`]) is named, not ranked.
//! Built once ([`size_lines`]) into [`super::Report::sizes`]; every format
//! prints the same [`SizeLine::sentence`] after the verdict lines.
use serde::Serialize;

use super::build::Table;
use crate::config::fs::SizeMeasure;
use crate::text::iec_bytes;

/// Sizes closer than this (relative) are as small as each other: below
/// the run-to-run wobble of a data directory's size within one build.
pub const SIZE_TIE: f64 = 0.01;

/// One variant's size in a [`SizeLine`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VariantSize {
    pub variant: String,
    pub on_disk_bytes: f64,
    pub measure: SizeMeasure,
    /// on disk ÷ the baseline's (the baseline's own: 1).
    pub ratio: Option<f64>,
    /// Its two measures disagree: not ranked.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub sizes_disagree: bool,
}

/// A host's smallest variant for one workload.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SizeLine {
    pub workload: String,
    pub host: String,
    pub baseline: Option<String>,
    /// The smallest variant, and any within [`SIZE_TIE`] of it, smallest
    /// first; empty when no two variants could be ranked.
    pub smallest: Vec<String>,
    /// Every variant with a size, smallest first (disagreeing ones last).
    pub variants: Vec<VariantSize>,
    pub sentence: String,
}

/// The size lines of `tables`: one per host and workload whose variants
/// (two or more) have sizes, in table order.  Side by side (no host
/// baseline) there is nothing to rank: each row is the same variant.
pub fn size_lines(tables: &[Table]) -> Vec<SizeLine> {
    // (workload, host) in first-seen order, each variant's sizes in order.
    type Sizes = Vec<(String, Vec<f64>, SizeMeasure, bool)>;
    let mut order: Vec<(String, String, Option<String>, Sizes)> = Vec::new();
    for t in tables {
        for h in &t.hosts {
            let Some(baseline) = &h.baseline else {
                continue;
            };
            let i = match order
                .iter()
                .position(|(w, host, ..)| *w == t.workload && *host == h.host)
            {
                Some(i) => i,
                None => {
                    order.push((
                        t.workload.clone(),
                        h.host.clone(),
                        Some(baseline.clone()),
                        Vec::new(),
                    ));
                    order.len() - 1
                }
            };
            let sizes = &mut order[i].3;
            for r in &h.rows {
                let Some(b) = r.stats.on_disk_bytes else {
                    continue;
                };
                let disagree = r.sizes_check.as_ref().is_some_and(|c| !c.agree);
                let name = &r.stats.key.filesystem;
                match sizes.iter_mut().find(|(v, ..)| v == name) {
                    Some((_, v, _, d)) => {
                        v.push(b);
                        *d |= disagree;
                    }
                    None => sizes.push((name.clone(), vec![b], r.stats.on_disk_measure, disagree)),
                }
            }
        }
    }
    order
        .into_iter()
        .filter(|(.., sizes)| sizes.len() >= 2)
        .map(|(workload, host, baseline, sizes)| line(workload, host, baseline, sizes))
        .collect()
}

fn line(
    workload: String,
    host: String,
    baseline: Option<String>,
    sizes: Vec<(String, Vec<f64>, SizeMeasure, bool)>,
) -> SizeLine {
    let mut variants: Vec<VariantSize> = sizes
        .into_iter()
        .map(|(variant, v, measure, sizes_disagree)| VariantSize {
            variant,
            on_disk_bytes: crate::results::analysis::stats::median(&v),
            measure,
            ratio: None,
            sizes_disagree,
        })
        .collect();
    let base = variants
        .iter()
        .find(|v| Some(&v.variant) == baseline.as_ref() && !v.sizes_disagree)
        .map(|v| v.on_disk_bytes)
        .filter(|b| *b > 0.0);
    for v in &mut variants {
        v.ratio = base.map(|b| v.on_disk_bytes / b);
    }
    variants.sort_by(|a, b| {
        a.sizes_disagree
            .cmp(&b.sizes_disagree)
            .then(a.on_disk_bytes.total_cmp(&b.on_disk_bytes))
    });
    let ranked: Vec<&VariantSize> = variants.iter().filter(|v| !v.sizes_disagree).collect();
    let smallest: Vec<String> = match ranked.first() {
        Some(first) if ranked.len() >= 2 => ranked
            .iter()
            .take_while(|v| v.on_disk_bytes <= first.on_disk_bytes * (1.0 + SIZE_TIE))
            .map(|v| v.variant.clone())
            .collect(),
        _ => Vec::new(),
    };
    let sentence = sentence(&workload, &host, baseline.as_deref(), &smallest, &variants);
    SizeLine {
        workload,
        host,
        baseline,
        smallest,
        variants,
        sentence,
    }
}

/// `34.1 MiB (btrfs used), 0.39× `ext4`'s`.
fn size_words(v: &VariantSize, baseline: Option<&str>) -> String {
    let mut s = format!("{} ({})", iec_bytes(v.on_disk_bytes), v.measure.label());
    match (v.ratio, baseline) {
        (Some(r), Some(b)) if b != v.variant => s.push_str(&format!(", {r:.2}× `{b}`'s")),
        _ => {}
    }
    s
}

fn sentence(
    workload: &str,
    host: &str,
    baseline: Option<&str>,
    smallest: &[String],
    variants: &[VariantSize],
) -> String {
    let mut out = format!("{workload} on {host}, on disk: ");
    let by_name = |n: &str| variants.iter().find(|v| v.variant == n);
    match smallest {
        [] => out.push_str("no two variants' sizes can be ranked"),
        [one] => {
            let v = by_name(one).expect("smallest is a variant");
            out.push_str(&format!("`{one}` is smallest, {}", size_words(v, baseline)));
        }
        many => {
            let each: Vec<String> = many
                .iter()
                .map(|n| {
                    format!(
                        "`{n}` {}",
                        size_words(by_name(n).expect("a variant"), baseline)
                    )
                })
                .collect();
            out.push_str(&format!(
                "smallest within {:.0}% of each other: {}",
                SIZE_TIE * 100.0,
                each.join(", ")
            ));
        }
    }
    let rest: Vec<String> = variants
        .iter()
        .filter(|v| !v.sizes_disagree && !smallest.contains(&v.variant))
        .map(|v| format!("`{}` {}", v.variant, size_words(v, baseline)))
        .collect();
    if !rest.is_empty() {
        out.push_str(&format!("; then {}", rest.join(", ")));
    }
    let unsure: Vec<String> = variants
        .iter()
        .filter(|v| v.sizes_disagree)
        .map(|v| format!("`{}`", v.variant))
        .collect();
    if !unsure.is_empty() {
        out.push_str(&format!(
            "; not ranked, its two size measures disagree: {}",
            unsure.join(", ")
        ));
    }
    out.push('.');
    out
}
