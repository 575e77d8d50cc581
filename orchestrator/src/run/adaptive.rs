//! Adaptive repeats: a repeat past `min` runs only while its group (host,
//! variant, workload, clients) needs it.  Two rules:
//!
//! - `target_ci`: while the counted repeats of the group have a 95% CI
//!   wider than the target;
//! - `until = "decided"` (a sequential design): while the variant's verdict
//!   against the host's baseline is not decided at the family's error rate
//!   ([`crate::results::analysis::sequential::decide`], the function the
//!   report decides with), and, for the baseline, while any other variant's
//!   is not.
//!
//! One [`Counted`] per sweep host (shared with its guests' segments, whose
//! groups are their own: the host is part of the key); a resumed sweep
//! seeds it with the kept cells' results.
//!
//! The value counted is the one the report compares the group on
//! ([`Metric::planned`]): tps, but a rate-limited workload's mean latency
//! (its tps is the rate, whose CI is near zero after any two runs, so
//! counting tps would stop every such group at `min`) and a SQL script's
//! load time.
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::config::{Correction, VerdictRule};
use crate::plan::{Cell, Plan};
use crate::results::analysis::compare::Comparison;
use crate::results::analysis::sequential::{self, Stop};
use crate::results::analysis::stats::Metric;

/// Counted values so far (of the metric each group is compared on) per
/// (host, filesystem variant, workload, clients), with what a sequential
/// design decides on.  Clones share it (the workers of one host's devices
/// under `order = "interleaved"`, a host's guests).
#[derive(Debug, Default, Clone)]
pub struct Counted(Arc<Mutex<State>>);

/// (host, variant, workload, clients).
type Key = (String, String, String, u32);
/// (host, workload, clients): the variants compared with each other.
type Group = (String, String, u32);

#[derive(Debug, Default)]
struct State {
    /// Each group's counted values with their repeat numbers.
    values: HashMap<Key, Vec<(u32, f64)>>,
    /// The plan's sequential design, when it has one.
    design: Option<Design>,
}

#[derive(Debug)]
struct Design {
    rule: VerdictRule,
    /// Each group's variants in matrix order: the first is the baseline.
    variants: HashMap<Group, Vec<String>>,
    /// Each host's family size ([`sequential::family_size`]).
    family: HashMap<String, usize>,
}

fn key(c: &Cell) -> Key {
    (
        c.host.as_str().to_string(),
        c.fs.name.as_str().to_string(),
        c.workload.name.as_str().to_string(),
        c.clients,
    )
}

fn group(c: &Cell) -> Group {
    (
        c.host.as_str().to_string(),
        c.workload.name.as_str().to_string(),
        c.clients,
    )
}

impl Counted {
    /// For a sweep of `p`: with its sequential design's groups and families
    /// when it has one (else as [`Counted::default`]).
    pub fn for_plan(p: &Plan) -> Counted {
        let design = p.verdicts.sequential.map(|_| {
            let mut variants: HashMap<Group, Vec<String>> = HashMap::new();
            for c in p.cells.iter().filter(|c| !c.warmup) {
                let v = variants.entry(group(c)).or_default();
                let name = c.fs.name.as_str().to_string();
                if !v.contains(&name) {
                    v.push(name);
                }
            }
            // Matrix order (the host's variants), not run order: the
            // report's baseline is the first variant in matrix order.
            for ((host, ..), v) in variants.iter_mut() {
                if let Some(hp) = p.hosts.iter().find(|h| h.host.as_str() == host) {
                    let rank = |n: &String| {
                        hp.fs_variants
                            .iter()
                            .position(|f| f.as_str() == n)
                            .unwrap_or(usize::MAX)
                    };
                    v.sort_by_key(rank);
                }
            }
            let mut per_host: HashMap<String, Vec<usize>> = HashMap::new();
            for ((host, ..), v) in &variants {
                per_host.entry(host.clone()).or_default().push(v.len());
            }
            let family = per_host
                .into_iter()
                .map(|(h, counts)| {
                    let m = match p.verdicts.correction {
                        Correction::Holm => sequential::family_size(counts),
                        Correction::None => 1,
                    };
                    (h, m)
                })
                .collect();
            Design {
                rule: p.verdicts,
                variants,
                family,
            }
        });
        Counted(Arc::new(Mutex::new(State {
            values: HashMap::new(),
            design,
        })))
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Remember a counted (not warm-up) repeat's value of its group's
    /// metric ([`Metric::compared_value`] of its result).
    pub fn add(&self, c: &Cell, value: f64) {
        if c.warmup {
            return;
        }
        let mut m = self.state();
        let v = m.values.entry(key(c)).or_default();
        v.push((c.repeat, value));
        v.sort_by_key(|&(r, _)| r);
    }

    /// Why cell `c` need not run: it is an adaptive repeat past `min` and
    /// its group no longer needs it (the CI is within the target, or its
    /// sequential verdict is decided).
    pub fn not_needed(&self, c: &Cell) -> Option<String> {
        if !c.is_conditional() {
            return None;
        }
        let a = c.adaptive?;
        let st = self.state();
        if a.until.is_some() {
            return st.not_needed_sequential(c);
        }
        let target = a.target_ci?;
        let xs = st.series(&key(c));
        if xs.len() < a.min as usize {
            return None;
        }
        let half = crate::results::analysis::stats::summarize(&xs)?.ci_rel_half_width()?;
        (half <= target.fraction()).then(|| {
            format!(
                "adaptive repeats: the {} counted repeats before it have a 95% CI of ±{:.2}% of the mean {}, within the target ±{target}",
                xs.len(),
                half * 100.0,
                Metric::planned(&c.params()).name()
            )
        })
    }

    /// After the last repeat an adaptive rule allows: a sentence when the CI
    /// is still wider than the target, or a sequential comparison is still
    /// undecided (the report says so too).
    pub fn short_of_target(&self, c: &Cell) -> Option<String> {
        let a = c.adaptive?;
        if c.warmup || c.repeat != a.max {
            return None;
        }
        let st = self.state();
        if a.until.is_some() {
            let (b, stop) = st.verdict(c)?;
            return (!stop.decided).then(|| {
                format!(
                    "{} {} c={}: still inconclusive against `{b}` after {} counted repeats per arm (max {}); the report says how many more would likely decide it",
                    c.fs.name.as_str(),
                    c.workload.name.as_str(),
                    c.clients,
                    stop.look,
                    a.max
                )
            });
        }
        let target = a.target_ci?;
        let xs = st.series(&key(c));
        let half = crate::results::analysis::stats::summarize(&xs)
            .and_then(|s| s.ci_rel_half_width())
            .unwrap_or(f64::INFINITY);
        (half > target.fraction()).then(|| {
            format!(
                "{} {} c={}: {} counted repeats (max {}) leave the 95% CI at ±{:.2}% of the mean {}, wider than the target ±{target}",
                c.fs.name.as_str(),
                c.workload.name.as_str(),
                c.clients,
                xs.len(),
                a.max,
                half * 100.0,
                Metric::planned(&c.params()).name()
            )
        })
    }
}

impl State {
    /// A group's values in repeat order.
    fn series(&self, k: &Key) -> Vec<f64> {
        self.values
            .get(k)
            .map(|v| v.iter().map(|&(_, x)| x).collect())
            .unwrap_or_default()
    }

    /// `variant`'s sequential comparison with the baseline of `c`'s group
    /// so far: the baseline's name and how it stands.
    fn compare(&self, c: &Cell, variant: &str) -> Option<(String, Comparison, Stop)> {
        let d = self.design.as_ref()?;
        let looks = d.rule.sequential?;
        let g = group(c);
        let baseline = d.variants.get(&g)?.first()?.clone();
        let series = |v: &str| self.series(&(g.0.clone(), v.to_string(), g.1.clone(), g.2));
        let family = d.family.get(&g.0).copied().unwrap_or(1);
        let (cmp, stop) = sequential::decide(
            &baseline,
            &series(variant),
            &series(&baseline),
            looks,
            family,
            Metric::planned(&c.params()),
            d.rule.margin,
        )?;
        Some((baseline, cmp, stop))
    }

    /// `c`'s variant's comparison with its baseline (none for the baseline).
    fn verdict(&self, c: &Cell) -> Option<(String, Stop)> {
        let (b, _, stop) = self.compare(c, c.fs.name.as_str())?;
        (b != c.fs.name.as_str()).then_some((b, stop))
    }

    fn not_needed_sequential(&self, c: &Cell) -> Option<String> {
        let d = self.design.as_ref()?;
        let variants = d.variants.get(&group(c))?;
        let baseline = variants.first()?;
        let me = c.fs.name.as_str();
        if me != baseline {
            let (b, cmp, stop) = self.compare(c, me)?;
            return stop.decided.then(|| {
                format!(
                    "sequential: decided {} against `{b}` at look {} of {} (ratio {:.3}; each test at level {:.4}, family of {})",
                    cmp.verdict.text(),
                    stop.look,
                    stop.max,
                    cmp.estimate.map_or(f64::NAN, |l| l.ratio),
                    stop.level,
                    stop.family
                )
            });
        }
        // The baseline: needed while any other variant is undecided.
        let mut said = Vec::new();
        for v in variants.iter().skip(1) {
            let (_, cmp, stop) = self.compare(c, v)?;
            if !stop.decided {
                return None;
            }
            said.push(format!(
                "`{v}` {} at look {}",
                cmp.verdict.text(),
                stop.look
            ));
        }
        (!said.is_empty()).then(|| {
            format!(
                "sequential: every other variant is decided against this baseline ({})",
                said.join(", ")
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::config::{Inventory, Matrix};

    fn cells(target: &str) -> Vec<Cell> {
        let inv = Inventory::parse(
            Path::new("inv.toml"),
            "[[host]]\nname = \"h\"\naddress = \"127.0.0.1\"\nos = \"linux\"\ndevices = [\"/dev/loop9\"]\n"
                .to_string(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let m = Matrix::parse(
            Path::new("m.toml"),
            format!(
                "name = \"m\"\nwarmup = 1\nrepeats = {{ min = 3, max = 5, target_ci = \"{target}\" }}\n\
                 [[filesystem]]\nname = \"e\"\ntype = \"ext4\"\n\
                 [[workload]]\nname = \"w\"\nbuiltin = \"select-only\"\nscale = 1\nclients = [1, 2]\nduration = \"5s\"\n"
            ),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        crate::plan::plan(&inv, &m).cells
    }

    /// 95% CI half-width of {100, 101, 99}: t(0.975, 2) · 1 / √3 =
    /// 4.302652729911275 / 1.7320508 = 2.4841377% of the mean (Python).
    #[test]
    fn adaptive_repeats_stop_once_the_ci_is_within_target() {
        for (target, stops) in [("2.49%", true), ("2.48%", false)] {
            let cs = cells(target);
            let c1: Vec<&Cell> = cs.iter().filter(|c| c.clients == 1).collect();
            let c2: Vec<&Cell> = cs.iter().filter(|c| c.clients == 2).collect();
            // warm-up, repeats 1..=5
            assert_eq!(c1.len(), 6);
            let counted = Counted::default();
            // A warm-up's tps is never counted, however far off.
            counted.add(c1[0], 10.0);
            for (c, tps) in c1[1..4].iter().zip([100.0, 101.0, 99.0]) {
                assert_eq!(counted.not_needed(c), None, "repeats up to min always run");
                counted.add(c, tps);
            }
            let why = counted.not_needed(c1[4]);
            assert_eq!(why.is_some(), stops, "{target}: {why:?}");
            if let Some(w) = why {
                assert!(w.contains("3 counted repeats"), "{w}");
                assert!(w.contains("±2.48%"), "{w}");
                assert!(w.contains(&format!("target ±{target}")), "{w}");
            }
            // Another client count is another group: nothing counted there.
            assert_eq!(counted.not_needed(c2[4]), None);
        }
    }

    #[test]
    fn a_failed_repeat_leaves_the_group_short_so_later_ones_run() {
        let cs = cells("50%");
        let c1: Vec<&Cell> = cs.iter().filter(|c| c.clients == 1).collect();
        let counted = Counted::default();
        // Repeat 2 failed: only two counted values when repeat 4 comes up.
        counted.add(c1[1], 100.0);
        counted.add(c1[3], 100.5);
        assert_eq!(counted.not_needed(c1[4]), None);
        counted.add(c1[4], 99.5);
        assert!(counted.not_needed(c1[5]).is_some());
    }

    #[test]
    fn reaching_max_short_of_the_target_is_said() {
        let cs = cells("0.5%");
        let c1: Vec<&Cell> = cs.iter().filter(|c| c.clients == 1).collect();
        let counted = Counted::default();
        for (c, tps) in c1[1..].iter().zip([100.0, 104.0, 96.0, 101.0, 99.0]) {
            counted.add(c, tps);
            let said = counted.short_of_target(c);
            // Only after repeat 5, the max.
            assert_eq!(said.is_some(), c.repeat == 5, "{said:?}");
        }
        let said = counted.short_of_target(c1[5]).unwrap_or_default();
        // mean 100, sd 2.915476, t(0.975, 4) = 2.776445: ±3.62% (Python).
        assert!(said.contains("5 counted repeats (max 5)"), "{said}");
        assert!(said.contains("±3.62%"), "{said}");
        assert!(said.contains("target ±0.5%"), "{said}");
        let met = cells("50%");
        let m1: Vec<&Cell> = met.iter().filter(|c| c.clients == 1).collect();
        let counted = Counted::default();
        for (c, tps) in m1[1..].iter().zip([100.0, 104.0, 96.0, 101.0, 99.0]) {
            counted.add(c, tps);
        }
        assert_eq!(counted.short_of_target(m1[5]), None);
    }

    fn sequential_plan(variants: &[&str]) -> crate::plan::Plan {
        let inv = Inventory::parse(
            Path::new("inv.toml"),
            "[[host]]\nname = \"h\"\naddress = \"127.0.0.1\"\nos = \"linux\"\ndevices = [\"/dev/loop9\", \"/dev/loop10\", \"/dev/loop11\"]\n"
                .to_string(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let fs: String = variants
            .iter()
            .map(|v| format!("[[filesystem]]\nname = \"{v}\"\ntype = \"ext4\"\n"))
            .collect();
        let m = Matrix::parse(
            Path::new("m.toml"),
            format!(
                "name = \"m\"\norder = \"interleaved\"\nrepeats = {{ min = 2, max = 8, until = \"decided\" }}\n{fs}\
                 [[workload]]\nname = \"w\"\nbuiltin = \"select-only\"\nscale = 1\nclients = [1]\nduration = \"5s\"\n"
            ),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        crate::plan::plan(&inv, &m)
    }

    fn cell<'a>(p: &'a crate::plan::Plan, fs: &str, repeat: u32) -> &'a Cell {
        p.cells
            .iter()
            .find(|c| c.fs.name.as_str() == fs && c.repeat == repeat && !c.warmup)
            .unwrap_or_else(|| panic!("no cell {fs} {repeat}"))
    }

    /// Interleaved rounds: once every other variant is decided against the
    /// baseline, the baseline's next repeat is not needed either; while one
    /// is not, it runs.
    #[test]
    fn the_baseline_runs_while_any_other_variant_is_undecided() {
        let p = sequential_plan(&["a", "fast", "same"]);
        let counted = Counted::for_plan(&p);
        let rounds = [
            [1000.0, 1500.0, 1001.0],
            [1010.0, 1520.0, 1012.0],
            [990.0, 1490.0, 985.0],
        ];
        for (r, round) in rounds.iter().enumerate() {
            for (v, x) in ["a", "fast", "same"].iter().zip(round) {
                let c = cell(&p, v, r as u32 + 1);
                if r >= 2 && *v == "fast" {
                    // Decided at an earlier look: not run, and why.
                    let why = counted.not_needed(c).unwrap_or_default();
                    assert!(
                        why.contains("sequential: decided faster against `a` at look"),
                        "{why}"
                    );
                    continue;
                }
                counted.add(c, *x);
            }
        }
        // `same` is undecided after 3 (a 5% margin needs more): the
        // baseline runs on, and so does `same`.
        assert_eq!(counted.not_needed(cell(&p, "a", 4)), None);
        assert_eq!(counted.not_needed(cell(&p, "same", 4)), None);
        // With only `fast` beside it, the baseline stops too.
        let p = sequential_plan(&["a", "fast"]);
        let counted = Counted::for_plan(&p);
        for (r, round) in rounds.iter().take(2).enumerate() {
            counted.add(cell(&p, "a", r as u32 + 1), round[0]);
            counted.add(cell(&p, "fast", r as u32 + 1), round[1]);
        }
        let b = counted.not_needed(cell(&p, "a", 3)).unwrap_or_default();
        assert!(
            b.contains(
                "every other variant is decided against this baseline (`fast` faster at look 2)"
            ),
            "{b}"
        );
        // A plan without the design never asks.
        let (cs, plain) = (cells("2%"), Counted::default());
        assert_eq!(plain.not_needed(&cs[3]), None);
    }
}
