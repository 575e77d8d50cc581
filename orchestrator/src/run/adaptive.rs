//! Adaptive repeats: a repeat past `min` runs only while the counted repeats
//! of its group (host, variant, workload, clients) have a 95% CI wider than
//! the target.  One [`Counted`] per host worker; a resumed sweep seeds it with
//! the kept cells' results.
//!
//! The CI is that of the value the report compares the group on
//! ([`Metric::planned`]): tps, but a rate-limited workload's mean latency
//! (its tps is the rate, whose CI is near zero after any two runs, so
//! counting tps would stop every such group at `min`) and a SQL script's
//! load time.
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::plan::Cell;
use crate::results::analysis::stats::Metric;

/// Counted values so far (of the metric each group is compared on) per
/// (filesystem variant, workload, clients) on one host: what adaptive
/// repeats decide on.  Clones share it (the workers of
/// one host's devices under `order = "interleaved"`).
#[derive(Debug, Default, Clone)]
pub struct Counted(Arc<Mutex<ByGroup>>);

/// Counted values by (variant, workload, clients).
type ByGroup = HashMap<(String, String, u32), Vec<f64>>;

impl Counted {
    fn key(c: &Cell) -> (String, String, u32) {
        (
            c.fs.name.as_str().to_string(),
            c.workload.name.as_str().to_string(),
            c.clients,
        )
    }

    /// Remember a counted (not warm-up) repeat's value of its group's
    /// metric ([`Metric::compared_value`] of its result).
    pub fn add(&self, c: &Cell, value: f64) {
        if c.warmup {
            return;
        }
        let mut m = self.0.lock().unwrap_or_else(|p| p.into_inner());
        m.entry(Self::key(c)).or_default().push(value);
    }

    /// Why cell `c` need not run: it is an adaptive repeat past `min` and the
    /// counted repeats of its group already have a 95% CI within the target.
    pub fn not_needed(&self, c: &Cell) -> Option<String> {
        if !c.is_conditional() {
            return None;
        }
        let a = c.adaptive?;
        let target = a.target_ci?;
        let m = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let xs = m.get(&Self::key(c))?;
        if xs.len() < a.min as usize {
            return None;
        }
        let half = crate::results::analysis::stats::summarize(xs)?.ci_rel_half_width()?;
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
    /// is still wider than the target (the report flags such groups as noisy
    /// only by their CV, so the run says it).
    pub fn short_of_target(&self, c: &Cell) -> Option<String> {
        let a = c.adaptive?;
        let target = a.target_ci?;
        if c.warmup || c.repeat != a.max {
            return None;
        }
        let m = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let xs = m.get(&Self::key(c))?;
        let half = crate::results::analysis::stats::summarize(xs)
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
}
