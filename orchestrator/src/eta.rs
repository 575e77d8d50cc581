//! The ETA that learns.  A host's remaining work is a list of [`Item`]s
//! (each variant's setup and teardown, each workload's load, each run),
//! every one with the plan's default duration as its prior.  As work ends,
//! the time it took is recorded ([`Timing`]) and the rest of the host's
//! work is re-estimated from what the same kind of work took *on that
//! host*: each kind's prior is scaled by the ratio observed (sum of the
//! times taken ÷ sum of their priors), preferring work on the same
//! filesystem type, then any filesystem of this sweep, then the host's
//! earlier bundles (`--history`), then the defaults.  What a timed run
//! lasts (`duration = "60s"`) is known, not learned: only its overhead is.
//!
//! A kind not seen yet on the host takes the host's ratio over every kind
//! seen (a fast disk makes mkfs and the load fast alike) before the
//! defaults.
//!
//! How sure: each kind's ratio carries a relative uncertainty — the spread
//! (coefficient of variation) of the ratios seen when there are two or
//! more, 25 % after one, 50 % when borrowed from another filesystem type,
//! 100 % from other kinds of work or the defaults (they can be 2–10× off)
//! — and the kinds' errors add in quadrature (one kind's items err
//! together: they share a ratio).
//!
//! Pure: time is passed in, so the arithmetic is tested without a clock.
use std::collections::HashSet;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

pub use crate::plan::work::{prior_total, work_of, work_of_host, Item, Work, WorkKind};
use crate::plan::{Cell, Plan};
use crate::text::{hms, plus_minus};

/// One piece of work that ended well on one host: how long its learned part
/// took (`secs`) against what the defaults expected (`prior_secs`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Timing {
    pub host: String,
    pub kind: WorkKind,
    /// The variant's filesystem type (`ext4`, `zfs`): setup and load times
    /// depend on it more than on anything else.
    pub fs_type: String,
    /// What it was done on: the variant, `variant/workload`, or the cell.
    pub on: String,
    pub secs: f64,
    /// The default's expectation for the same work (the plan's constants
    /// of the fsmatrix that wrote the line).
    pub prior_secs: f64,
}

/// The longest a piece of work can have taken, or have been expected to
/// take, for its timing to be learned from: the longest duration a matrix
/// may give (30 days).  A timings file is other people's input (`--history`
/// reads earlier bundles): a line beyond it is dropped, not believed.
pub const MAX_TIMING_SECS: f64 = 30.0 * 86_400.0;
/// The shortest prior a timing may carry (the defaults are seconds or
/// more): a ratio over a prior near zero would be near infinite.
pub const MIN_PRIOR_SECS: f64 = 1e-3;

impl Timing {
    /// Whether the numbers can be learned from: finite, `secs` in
    /// 0..=[`MAX_TIMING_SECS`], `prior_secs` in
    /// [`MIN_PRIOR_SECS`]..=[`MAX_TIMING_SECS`].  Every ratio and estimate
    /// built from usable timings is then finite.
    pub fn usable(&self) -> bool {
        (0.0..=MAX_TIMING_SECS).contains(&self.secs)
            && (MIN_PRIOR_SECS..=MAX_TIMING_SECS).contains(&self.prior_secs)
    }
}

/// `secs` as a [`Duration`], whatever the number: NaN and negatives are
/// zero, and what a `Duration` cannot hold is its largest value
/// (`Duration::from_secs_f64` panics on both).
pub fn duration_of(secs: f64) -> Duration {
    if secs.is_nan() || secs <= 0.0 {
        return Duration::ZERO;
    }
    Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX)
}

/// Where an estimate's ratios come from, the best of its kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Basis {
    /// The plan's defaults only.
    Plan,
    /// Earlier bundles of the host (`--history`).
    History,
    /// Work this sweep did on the host.
    Observed,
}

impl Basis {
    pub fn word(self) -> &'static str {
        match self {
            Basis::Plan => "plan's defaults",
            Basis::History => "earlier bundles",
            Basis::Observed => "this sweep",
        }
    }
}

/// A kind's learned ratio to its prior, and how sure it is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ratio {
    pub ratio: f64,
    /// Relative uncertainty of the ratio (0.25 = ±25 %).
    pub rel: f64,
    pub basis: Basis,
    /// Timings it rests on.
    pub n: usize,
}

const REL_ONE: f64 = 0.25;
const REL_OTHER_FS: f64 = 0.5;
/// Another kind of work's ratio: the host's pace, not this work's.
const REL_OTHER_KIND: f64 = 1.0;
const REL_PRIOR: f64 = 1.0;
/// Never claim better than ±5 %.
const REL_FLOOR: f64 = 0.05;

fn ratio_of(ts: &[&Timing], basis: Basis) -> Option<Ratio> {
    if ts.is_empty() {
        return None;
    }
    let secs: f64 = ts.iter().map(|t| t.secs).sum();
    let prior: f64 = ts.iter().map(|t| t.prior_secs).sum();
    let rel = if ts.len() == 1 {
        REL_ONE
    } else {
        let rs: Vec<f64> = ts.iter().map(|t| t.secs / t.prior_secs).collect();
        let n = rs.len() as f64;
        let mean = rs.iter().sum::<f64>() / n;
        let var = rs.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / (n - 1.0);
        if mean > 0.0 {
            (var.sqrt() / mean).max(REL_FLOOR)
        } else {
            REL_FLOOR
        }
    };
    Some(Ratio {
        ratio: secs / prior,
        rel,
        basis,
        n: ts.len(),
    })
}

/// The ratio for `kind` on `fs_type`: this sweep's same-type timings, the
/// history's same-type ones, this sweep's of any type, the history's of
/// any type, else the defaults.
pub fn ratio(observed: &[Timing], history: &[Timing], kind: WorkKind, fs_type: &str) -> Ratio {
    fn pick<'t>(ts: &'t [Timing], kind: WorkKind, fs_type: Option<&str>) -> Vec<&'t Timing> {
        ts.iter()
            .filter(|t| t.kind == kind && fs_type.is_none_or(|f| t.fs_type == f))
            .collect()
    }
    if let Some(r) = ratio_of(&pick(observed, kind, Some(fs_type)), Basis::Observed) {
        return r;
    }
    if let Some(r) = ratio_of(&pick(history, kind, Some(fs_type)), Basis::History) {
        return r;
    }
    for (ts, basis) in [(observed, Basis::Observed), (history, Basis::History)] {
        if let Some(mut r) = ratio_of(&pick(ts, kind, None), basis) {
            r.rel = r.rel.max(REL_OTHER_FS);
            return r;
        }
    }
    // No work of this kind seen yet: how the host compares with the
    // defaults on the kinds seen says more than the defaults alone.
    for (ts, basis) in [(observed, Basis::Observed), (history, Basis::History)] {
        let all: Vec<&Timing> = ts.iter().collect();
        if let Some(mut r) = ratio_of(&all, basis) {
            r.rel = r.rel.max(REL_OTHER_KIND);
            return r;
        }
    }
    Ratio {
        ratio: 1.0,
        rel: REL_PRIOR,
        basis: Basis::Plan,
        n: 0,
    }
}

/// What is left of a host's work, and how sure that is.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Estimate {
    #[serde(rename = "remaining_s")]
    pub remaining: f64,
    /// ± this many seconds (one standard error, roughly).
    #[serde(rename = "plus_minus_s")]
    pub plus_minus: f64,
    pub basis: Basis,
    /// Timings of this sweep on the host so far.
    pub observed: usize,
}

impl Estimate {
    pub fn remaining(&self) -> Duration {
        duration_of(self.remaining)
    }

    pub fn plus_minus(&self) -> Duration {
        duration_of(self.plus_minus)
    }
}

/// One host's ETA as its work goes.
#[derive(Debug, Clone)]
pub struct HostEta {
    host: String,
    items: Vec<Item>,
    done: Vec<bool>,
    ended_cells: HashSet<String>,
    /// The item under way and since when.
    current: Option<(usize, Instant)>,
    observed: Vec<Timing>,
    history: Vec<Timing>,
}

impl HostEta {
    pub fn new(host: &str, items: Vec<Item>, history: Vec<Timing>) -> Self {
        HostEta {
            host: host.to_string(),
            done: vec![false; items.len()],
            items,
            ended_cells: HashSet::new(),
            current: None,
            observed: Vec::new(),
            history,
        }
    }

    fn find(&self, work: &Work) -> Option<usize> {
        self.items
            .iter()
            .enumerate()
            .position(|(i, it)| !self.done[i] && it.work == *work)
    }

    /// `work` starts now.
    pub fn start(&mut self, work: &Work, now: Instant) {
        self.current = self.find(work).map(|i| (i, now));
    }

    /// `work` ended (`ok`: as it should; a failure's time is not learned
    /// from).  The timing recorded, if any.
    pub fn end(&mut self, work: &Work, ok: bool, now: Instant) -> Option<Timing> {
        let i = self.find(work)?;
        self.done[i] = true;
        let started = match self.current {
            Some((c, t)) if c == i => {
                self.current = None;
                t
            }
            _ => return None,
        };
        let item = &self.items[i];
        let took = now.saturating_duration_since(started).as_secs_f64();
        if !ok {
            return None;
        }
        let t = Timing {
            host: self.host.clone(),
            kind: item.kind,
            fs_type: item.fs_type.clone(),
            on: item.work.on(),
            secs: (took - item.fixed).max(0.0),
            prior_secs: item.prior,
        };
        if !t.usable() {
            return None;
        }
        self.observed.push(t.clone());
        Some(t)
    }

    /// A cell ended (in any way): its run is no longer to come.  `done`:
    /// it ran to its end, so its time is learned from.
    pub fn cell_ended(&mut self, cell: &str, done: bool, now: Instant) -> Option<Timing> {
        self.ended_cells.insert(cell.to_string());
        let work = Work::Run {
            cell: cell.to_string(),
        };
        if self.find(&work).is_some() {
            return self.end(&work, done, now);
        }
        None
    }

    /// Nothing is left (the worker finished).
    pub fn finish(&mut self) {
        self.done.iter_mut().for_each(|d| *d = true);
        self.current = None;
    }

    /// Whether the item will still happen.
    fn pending(&self, i: usize) -> bool {
        if self.done[i] {
            return false;
        }
        let it = &self.items[i];
        let underway = self.current.is_some_and(|(c, _)| c == i);
        match it.work {
            Work::Teardown { .. } => true,
            _ => underway || it.cells.iter().any(|c| !self.ended_cells.contains(c)),
        }
    }

    /// The remaining time as of `now`.
    pub fn estimate(&self, now: Instant) -> Estimate {
        let mut by_kind: Vec<(WorkKind, f64, Ratio)> = Vec::new();
        let mut fixed = 0.0;
        let mut basis = Basis::Plan;
        for (i, it) in self.items.iter().enumerate() {
            if !self.pending(i) {
                continue;
            }
            let r = ratio(&self.observed, &self.history, it.kind, &it.fs_type);
            let mut learned = it.prior * r.ratio;
            let mut known = it.fixed;
            if let Some((c, since)) = self.current {
                if c == i {
                    // Under way: what it has taken so far is not left.
                    let spent = now.saturating_duration_since(since).as_secs_f64();
                    let from_known = spent.min(known);
                    known -= from_known;
                    learned = (learned - (spent - from_known)).max(0.0);
                }
            }
            fixed += known;
            if learned > 0.0 {
                basis = basis.max(r.basis);
            }
            match by_kind
                .iter_mut()
                .find(|(k, _, rr)| *k == it.kind && rr.rel == r.rel)
            {
                Some((_, secs, _)) => *secs += learned,
                None => by_kind.push((it.kind, learned, r)),
            }
        }
        let learned: f64 = by_kind.iter().map(|(_, s, _)| s).sum();
        let var: f64 = by_kind.iter().map(|(_, s, r)| (s * r.rel).powi(2)).sum();
        if learned == 0.0 && !self.observed.is_empty() {
            // Nothing learned is left: what was learned still stands behind it.
            basis = Basis::Observed;
        }
        Estimate {
            remaining: fixed + learned,
            plus_minus: if var > 0.0 { var.sqrt() } else { 0.0 },
            basis,
            observed: self.observed.len(),
        }
    }
}

/// Each host's ETA before its sweep starts, its ratios from `history` (the
/// host's timings in earlier bundles): `plan --history`.
pub fn planned(p: &Plan, history: &dyn Fn(&str) -> Vec<Timing>) -> Vec<(String, Estimate)> {
    let now = Instant::now();
    p.hosts
        .iter()
        .map(|h| {
            let cells: Vec<&Cell> = p.cells.iter().filter(|c| c.host == h.host).collect();
            let host = h.host.as_str();
            let eta = HostEta::new(host, work_of_host(&cells, h.guest_accel), history(host));
            (host.to_string(), eta.estimate(now))
        })
        .collect()
}

/// `plan --history`'s table: each host's ETA from its earlier timings
/// beside the defaults', and the sweep's (its slowest host's).
pub fn render_planned(p: &Plan, learned: &[(String, Estimate)]) -> String {
    let mut rows = vec![vec![
        "HOST".to_string(),
        "ETA".into(),
        "DEFAULTS".into(),
        "FROM".into(),
    ]];
    for ((host, e), hp) in learned.iter().zip(&p.hosts) {
        rows.push(vec![
            host.clone(),
            match e.basis {
                Basis::Plan => hms(e.remaining()),
                _ => format!("{} {}", hms(e.remaining()), plus_minus(e.plus_minus())),
            },
            hms(hp.eta),
            match e.basis {
                Basis::Plan => "no timings of this host: the defaults".to_string(),
                _ => "its timings in earlier bundles".to_string(),
            },
        ]);
    }
    let slowest = learned
        .iter()
        .max_by(|a, b| a.1.remaining.total_cmp(&b.1.remaining));
    let mut out = String::from("\nETA from earlier bundles (--history):\n");
    out.push_str(&crate::plan::table(&rows, &[]));
    if let Some((host, e)) = slowest {
        out.push_str(&format!(
            "ETA {} (the slowest host, {host}; the defaults say {})\n",
            hms(e.remaining()),
            hms(p.eta)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(work: Work, kind: WorkKind, fs: &str, fixed: f64, prior: f64, cells: &[&str]) -> Item {
        Item {
            work,
            kind,
            fs_type: fs.into(),
            fixed,
            prior,
            cells: cells.iter().map(|c| c.to_string()).collect(),
            conditional: false,
        }
    }

    /// Two variants of two 10 s runs each, as `work_of` lays them out.
    fn two_variants() -> Vec<Item> {
        let mut items = Vec::new();
        for (v, fs, cells) in [("a", "ext4", ["a1", "a2"]), ("b", "xfs", ["b1", "b2"])] {
            let var = || v.to_string();
            items.push(item(
                Work::Setup { variant: var() },
                WorkKind::Setup,
                fs,
                0.0,
                45.0,
                &cells,
            ));
            items.push(item(
                Work::Load {
                    variant: var(),
                    workload: "w".into(),
                },
                WorkKind::Load,
                fs,
                0.0,
                10.0,
                &cells,
            ));
            for c in cells {
                items.push(item(
                    Work::Run { cell: c.into() },
                    WorkKind::RunOverhead,
                    fs,
                    10.0,
                    5.0,
                    &[c],
                ));
            }
            items.push(item(
                Work::Teardown { variant: var() },
                WorkKind::Teardown,
                fs,
                0.0,
                15.0,
                &[],
            ));
        }
        items
    }

    fn at(t0: Instant, s: f64) -> Instant {
        t0 + Duration::from_secs_f64(s)
    }

    /// A timings file is other people's input (`--history`): any number
    /// in it, alone or with others, gives a finite estimate and never a
    /// panic (`Duration::from_secs_f64` of an infinite ratio used to).
    #[test]
    fn no_number_in_a_timings_line_panics_or_gives_an_infinite_estimate() {
        let odd = [
            "0",
            "-0",
            "1",
            "-1",
            "1e-300",
            "5e-324",
            "1e300",
            "1e308",
            "1.7976931348623157e308",
            "-1e308",
            "18446744073709551615",
            "1e20",
            "2592000",
            "2592001",
            "0.001",
            "0.0009",
        ];
        let t0 = Instant::now();
        for secs in odd {
            for prior in odd {
                let line = format!(
                    r#"{{"host":"h","kind":"setup","fs_type":"ext4","on":"a","secs":{secs},"prior_secs":{prior}}}"#
                );
                let Ok(t) = serde_json::from_str::<Timing>(&line) else {
                    continue;
                };
                let history: Vec<Timing> = std::iter::repeat_n(t.clone(), 3)
                    .filter(Timing::usable)
                    .collect();
                let e = HostEta::new("h", two_variants(), history).estimate(t0);
                assert!(
                    e.remaining.is_finite() && e.plus_minus.is_finite(),
                    "secs {secs} prior {prior}: {e:?}"
                );
                let _ = (e.remaining(), e.plus_minus());
            }
        }
        // Whatever got through, the conversion itself cannot panic.
        for x in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -1.0, 1e300] {
            let e = Estimate {
                remaining: x,
                plus_minus: x,
                basis: Basis::History,
                observed: 0,
            };
            let _ = crate::text::hms(e.remaining());
            let _ = crate::text::plus_minus(e.plus_minus());
        }
        assert_eq!(duration_of(f64::INFINITY), Duration::MAX);
        assert_eq!(duration_of(f64::NAN), Duration::ZERO);
    }

    #[test]
    fn before_anything_ran_the_estimate_is_the_plans_and_unsure() {
        let e = HostEta::new("h", two_variants(), Vec::new());
        let est = e.estimate(Instant::now());
        // 2 × (45 + 10 + 2 × 15 + 15) = 200
        assert_eq!(est.remaining, 200.0);
        assert_eq!(est.basis, Basis::Plan);
        // ±100 % by kind, in quadrature: √(90² + 20² + 20² + 30²) ≈ 99.
        assert!((est.plus_minus - 98.99).abs() < 0.01, "{est:?}");
        assert_eq!(prior_total(&two_variants()), (200, 200));
    }

    #[test]
    fn after_the_first_variant_the_second_is_estimated_from_it() {
        let t0 = Instant::now();
        let mut e = HostEta::new("h", two_variants(), Vec::new());
        let a = || "a".to_string();
        // Setup 4 s, load 2 s, runs 10.5 s each, teardown 1 s.
        e.start(&Work::Setup { variant: a() }, t0);
        let t = e
            .end(&Work::Setup { variant: a() }, true, at(t0, 4.0))
            .unwrap();
        assert_eq!((t.kind, t.secs, t.prior_secs), (WorkKind::Setup, 4.0, 45.0));
        let load = Work::Load {
            variant: a(),
            workload: "w".into(),
        };
        e.start(&load, at(t0, 4.0));
        e.end(&load, true, at(t0, 6.0));
        let mut now = 6.0;
        for c in ["a1", "a2"] {
            e.start(&Work::Run { cell: c.into() }, at(t0, now));
            now += 10.5;
            let t = e.cell_ended(c, true, at(t0, now)).unwrap();
            assert_eq!(t.secs, 0.5, "only the overhead is learned");
        }
        e.start(&Work::Teardown { variant: a() }, at(t0, now));
        now += 1.0;
        e.end(&Work::Teardown { variant: a() }, true, at(t0, now));
        let est = e.estimate(at(t0, now));
        // The other variant is xfs: setup, load and teardown are borrowed
        // from ext4 (±50 %), the runs' overhead too; the 20 s of runs are known.
        assert!(
            (est.remaining - (4.0 + 2.0 + 2.0 * 10.5 + 1.0)).abs() < 1e-9,
            "{est:?}"
        );
        assert_eq!(est.basis, Basis::Observed);
        assert_eq!(est.observed, 5);
        assert!(est.plus_minus > 0.5 && est.plus_minus < 5.0, "{est:?}");
    }

    #[test]
    fn work_under_way_counts_only_what_is_left_of_it() {
        let t0 = Instant::now();
        let mut e = HostEta::new("h", two_variants(), Vec::new());
        e.start(
            &Work::Setup {
                variant: "a".into(),
            },
            t0,
        );
        let before = e.estimate(t0).remaining;
        let later = e.estimate(at(t0, 30.0)).remaining;
        assert_eq!(before - later, 30.0);
        // Past its expected end it counts as nothing left, not less.
        let late = e.estimate(at(t0, 100.0)).remaining;
        assert_eq!(before - late, 45.0);
    }

    #[test]
    fn cells_that_ended_without_running_take_their_setup_and_load_along() {
        let t0 = Instant::now();
        let mut e = HostEta::new("h", two_variants(), Vec::new());
        for c in ["b1", "b2"] {
            assert!(e.cell_ended(c, false, t0).is_none());
        }
        // Only b's teardown is left of b.
        assert_eq!(e.estimate(t0).remaining, 100.0 + 15.0);
        e.finish();
        assert_eq!(e.estimate(t0).remaining, 0.0);
    }

    #[test]
    fn same_filesystem_type_first_then_history_then_any() {
        let t = |kind, fs: &str, secs| Timing {
            host: "h".into(),
            kind,
            fs_type: fs.into(),
            on: String::new(),
            secs,
            prior_secs: 10.0,
        };
        let obs = vec![t(WorkKind::Setup, "ext4", 2.0)];
        let hist = vec![
            t(WorkKind::Setup, "zfs", 30.0),
            t(WorkKind::Setup, "zfs", 50.0),
        ];
        let r = ratio(&obs, &hist, WorkKind::Setup, "zfs");
        assert_eq!((r.ratio, r.basis, r.n), (4.0, Basis::History, 2));
        assert!((r.rel - (200f64.sqrt() / 40.0)).abs() < 1e-9, "{r:?}");
        let r = ratio(&obs, &hist, WorkKind::Setup, "ext4");
        assert_eq!((r.ratio, r.rel, r.basis), (0.2, REL_ONE, Basis::Observed));
        let r = ratio(&obs, &hist, WorkKind::Setup, "xfs");
        assert_eq!(
            (r.ratio, r.rel, r.basis),
            (0.2, REL_OTHER_FS, Basis::Observed)
        );
        // No load seen anywhere: the host's pace over the kinds seen.
        let r = ratio(&obs, &hist, WorkKind::Load, "xfs");
        assert_eq!(
            (r.ratio, r.rel, r.basis),
            (0.2, REL_OTHER_KIND, Basis::Observed)
        );
        let r = ratio(&[], &hist, WorkKind::Load, "xfs");
        assert_eq!(
            (r.ratio, r.rel, r.basis),
            (4.0, REL_OTHER_KIND, Basis::History)
        );
        let r = ratio(&[], &[], WorkKind::Load, "xfs");
        assert_eq!((r.ratio, r.rel, r.basis), (1.0, REL_PRIOR, Basis::Plan));
    }

    #[test]
    fn a_failed_piece_of_work_is_not_learned_from() {
        let t0 = Instant::now();
        let mut e = HostEta::new("h", two_variants(), Vec::new());
        let w = Work::Setup {
            variant: "a".into(),
        };
        e.start(&w, t0);
        assert!(e.end(&w, false, at(t0, 1.0)).is_none());
        assert_eq!(e.estimate(at(t0, 1.0)).basis, Basis::Plan);
    }
}
