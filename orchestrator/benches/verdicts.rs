//! Does the sequential design keep its promises?  Figures from resampling a
//! replay corpus of real lab runs, not a timed test (issue 40, item 6):
//!
//! - the false faster/slower rate of an A/A pair (ext4 against an
//!   identical ext4 twin) per family, sequential and fixed (goal ≤ 5%);
//! - how often the sequential verdict agrees with the fixed 5-repeat
//!   design's (goal ≥ 95%), and each design's agreement with the oracle:
//!   the fixed design over all 20 recorded repeats;
//! - the sequential design's mean repeats per arm as a share of the fixed
//!   design's 5 (goal ≤ 55%), and the largest count per arm (≤ `max`).
//!
//!   cargo bench -p fsmatrix --bench verdicts
//!
//! The corpus (`benches/corpus/verdicts.csv`): one line per counted run of
//! a lab sweep of `benches/corpus/verdicts.toml` (20 repeats of ext4,
//! ext4-twin, btrfs and xfs under tpcb on each of lab1..lab3, one variant
//! after another: a one-disk host), host, variant, repeat, tps.  Each host
//! is one family of 3 comparisons with ext4 (v = 4 variants, m = 5 tests).
//! A resample draws, for every variant of a host, `max` runs with
//! replacement from its 20 (so runs are exchangeable: drift between the
//! variants' stretches stays in the means, as on the lab); the fixed design
//! takes the first 5 of each draw and decides the family as the report
//! does (Holm), the sequential one looks at 2..=10 as the sweep does.
//! FSMX_BENCH_RESAMPLES (default 2000) and FSMX_BENCH_SEED (default 1) set
//! the resampling.
use std::collections::BTreeMap;

use fsmatrix::config::{Correction, Looks, Margin, VerdictRule};
use fsmatrix::results::analysis::compare::{self, Comparison, Verdict};
use fsmatrix::results::analysis::sequential;
use fsmatrix::results::analysis::stats::Metric;
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};

const BASELINE: &str = "ext4";
const FIXED: usize = 5;
const LOOKS: Looks = Looks { min: 2, max: 10 };

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// host → variant → tps in repeat order.
type Corpus = BTreeMap<String, BTreeMap<String, Vec<f64>>>;

fn corpus() -> Corpus {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/corpus/verdicts.csv");
    let mut r = csv::ReaderBuilder::new()
        .comment(Some(b'#'))
        .from_path(path)
        .unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut rows: Vec<(String, String, u32, f64)> = Vec::new();
    for rec in r.records() {
        let rec = rec.unwrap_or_else(|e| panic!("{path}: {e}"));
        let field = |i: usize| rec.get(i).unwrap_or_else(|| panic!("{path}: short line"));
        rows.push((
            field(0).to_string(),
            field(1).to_string(),
            field(2)
                .parse()
                .unwrap_or_else(|e| panic!("{path}: repeat: {e}")),
            field(3)
                .parse()
                .unwrap_or_else(|e| panic!("{path}: tps: {e}")),
        ));
    }
    rows.sort_by(|a, b| (&a.0, &a.1, a.2).cmp(&(&b.0, &b.1, b.2)));
    let mut c = Corpus::new();
    for (host, variant, _, tps) in rows {
        c.entry(host)
            .or_default()
            .entry(variant)
            .or_default()
            .push(tps);
    }
    c
}

/// The fixed design over `values` (variant → runs): every variant against
/// the baseline, decided as one family under Holm, as the report does.
fn fixed(values: &BTreeMap<String, Vec<f64>>, n: usize) -> BTreeMap<String, Verdict> {
    let base = &values[BASELINE];
    let rule = VerdictRule {
        margin: Margin::DEFAULT,
        correction: Correction::Holm,
        sequential: None,
    };
    let mut cs: Vec<(String, Comparison)> = values
        .iter()
        .filter(|(v, _)| v.as_str() != BASELINE)
        .map(|(v, xs)| {
            let k = n.min(xs.len()).min(base.len());
            (
                v.clone(),
                compare::compare(BASELINE, &xs[..k], &base[..k], Metric::Tps, rule.margin),
            )
        })
        .collect();
    let mut refs: Vec<&mut Comparison> = cs.iter_mut().map(|(_, c)| c).collect();
    compare::decide_family(&mut refs, &[], rule);
    cs.into_iter().map(|(v, c)| (v, c.verdict)).collect()
}

/// The sequential design over draws of `max` runs: each variant's verdict
/// and repeats, and the baseline's repeats (it runs while any other does).
fn sequential_design(
    values: &BTreeMap<String, Vec<f64>>,
    family: usize,
) -> (BTreeMap<String, (Verdict, u32)>, u32) {
    let base = &values[BASELINE];
    let mut out = BTreeMap::new();
    let mut base_n = LOOKS.min;
    for (v, xs) in values.iter().filter(|(v, _)| v.as_str() != BASELINE) {
        let (c, stop) = sequential::decide(
            BASELINE,
            xs,
            base,
            LOOKS,
            family,
            Metric::Tps,
            Margin::DEFAULT,
        )
        .expect("a look");
        // Decided at look n: the repeat after it is not run.
        base_n = base_n.max(stop.look);
        out.insert(v.clone(), (c.verdict, stop.look));
    }
    (out, base_n)
}

fn pct(a: usize, b: usize) -> f64 {
    if b == 0 {
        f64::NAN
    } else {
        100.0 * a as f64 / b as f64
    }
}

fn main() {
    let corpus = corpus();
    let resamples = env_usize("FSMX_BENCH_RESAMPLES", 2000);
    let seed = env_usize("FSMX_BENCH_SEED", 1) as u64;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    println!(
        "corpus: benches/corpus/verdicts.csv, {} hosts; {resamples} resamples per host, seed {seed}; sequential looks {}..={}, fixed {FIXED}, oracle: fixed over all recorded repeats",
        corpus.len(),
        LOOKS.min,
        LOOKS.max
    );
    println!(
        "\n{:<6} {:<10} {:>4} {:>9} {:<14}",
        "host", "variant", "n", "ratio", "oracle"
    );
    let mut oracle: BTreeMap<(String, String), Verdict> = BTreeMap::new();
    for (host, values) in &corpus {
        for (v, verdict) in fixed(values, usize::MAX) {
            let ratio = fsmatrix::results::analysis::stats::mean(&values[&v])
                / fsmatrix::results::analysis::stats::mean(&values[BASELINE]);
            println!(
                "{host:<6} {v:<10} {:>4} {ratio:>9.3} {:<14}",
                values[&v].len(),
                verdict.text()
            );
            oracle.insert((host.clone(), v), verdict);
        }
    }
    // Tallies over every (resample, host, variant).
    let (mut n, mut agree_fixed, mut seq_oracle, mut fixed_oracle) = (0, 0, 0, 0);
    let (mut aa_families, mut aa_false_seq, mut aa_false_fixed) = (0, 0, 0);
    let (mut seq_arm_repeats, mut arms, mut largest) = (0u64, 0u64, 0u32);
    let mut kinds: BTreeMap<(String, &str), usize> = BTreeMap::new();
    for (host, values) in &corpus {
        let family = sequential::family_size([values.len()]);
        for _ in 0..resamples {
            let draw: BTreeMap<String, Vec<f64>> = values
                .iter()
                .map(|(v, xs)| {
                    let d = (0..LOOKS.max as usize)
                        .map(|_| xs[rng.random_range(0..xs.len())])
                        .collect();
                    (v.clone(), d)
                })
                .collect();
            let f = fixed(&draw, FIXED);
            let (s, base_n) = sequential_design(&draw, family);
            seq_arm_repeats += u64::from(base_n);
            arms += 1;
            largest = largest.max(base_n);
            for (v, (sv, looks)) in &s {
                let fv = f[v];
                let ov = oracle[&(host.clone(), v.clone())];
                n += 1;
                agree_fixed += usize::from(*sv == fv);
                seq_oracle += usize::from(*sv == ov);
                fixed_oracle += usize::from(fv == ov);
                seq_arm_repeats += u64::from(*looks);
                arms += 1;
                largest = largest.max(*looks);
                *kinds.entry((v.clone(), sv.text())).or_default() += 1;
            }
            // The A/A pair: a false faster/slower in this family.
            if let Some((sv, _)) = s.get("ext4-twin") {
                aa_families += 1;
                aa_false_seq += usize::from(sv.better() || sv.worse());
                aa_false_fixed += usize::from(f["ext4-twin"].better() || f["ext4-twin"].worse());
            }
        }
    }
    let mean_repeats = seq_arm_repeats as f64 / arms as f64;
    println!("\nfigures (goal in brackets):");
    println!(
        "  A/A false faster/slower per family: sequential {:.2}%, fixed {:.2}% (≤ 5%; {aa_families} families)",
        pct(aa_false_seq, aa_families),
        pct(aa_false_fixed, aa_families)
    );
    println!(
        "  sequential agrees with fixed-{FIXED}: {:.1}% (≥ 95%)",
        pct(agree_fixed, n)
    );
    println!(
        "  agreement with the oracle: sequential {:.1}%, fixed-{FIXED} {:.1}% (sequential no worse)",
        pct(seq_oracle, n),
        pct(fixed_oracle, n)
    );
    println!(
        "  mean repeats per arm: {mean_repeats:.2}, {:.0}% of the fixed design's {FIXED} (≤ 55%)",
        100.0 * mean_repeats / FIXED as f64
    );
    println!("  largest count per arm: {largest} (≤ max = {})", LOOKS.max);
    println!("\nsequential verdicts by variant (share of its comparisons):");
    let per_variant = n / 3;
    for ((v, k), c) in &kinds {
        println!("  {v:<10} {k:<14} {:>5.1}%", pct(*c, per_variant));
    }
}
