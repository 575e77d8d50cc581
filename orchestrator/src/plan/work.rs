//! The work a host's cells make, as items with the defaults' durations
//! ([`super::eta`]) as priors: their sum is the plan's ETA, and the run
//! engine's learning ETA ([`crate::eta`]) re-estimates the same items.
use serde::{Deserialize, Serialize};

use super::{eta, load_secs_of, Cell};
use crate::config::inventory::vm::Accel;
use crate::generator::{for_workload, RunPrior};
/// The kinds of work whose durations are learned, each with a prior in
/// [`crate::plan::eta`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkKind {
    /// A filesystem variant set up: leftovers torn down, preflight, make-fs,
    /// mount, initdb, PostgreSQL started.
    Setup,
    /// A pgbench workload's data loaded (`pgbench -i`) and its sizes read.
    Load,
    /// What a timed run costs besides its duration: caches dropped,
    /// counters read, output collected, the cell recorded.
    RunOverhead,
    /// A run bounded by transactions, or a SQL script run to its end: its
    /// whole time is learned.
    RunOpen,
    /// PostgreSQL stopped and the device torn down.
    Teardown,
    /// A guest started and answering on SSH (`vm-start` to its log-in),
    /// once per variant: metal and guest alternate on one disk.
    Boot,
}

impl WorkKind {
    pub const ALL: [WorkKind; 6] = [
        WorkKind::Setup,
        WorkKind::Load,
        WorkKind::RunOverhead,
        WorkKind::RunOpen,
        WorkKind::Teardown,
        WorkKind::Boot,
    ];

    pub fn name(self) -> &'static str {
        match self {
            WorkKind::Setup => "setup",
            WorkKind::Load => "load",
            WorkKind::RunOverhead => "run overhead",
            WorkKind::RunOpen => "open-ended run",
            WorkKind::Teardown => "teardown",
            WorkKind::Boot => "guest boot",
        }
    }
}

/// One piece of a host's work, as the worker announces it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Work {
    Setup {
        variant: String,
    },
    Load {
        variant: String,
        workload: String,
    },
    Run {
        cell: String,
    },
    Teardown {
        variant: String,
    },
    /// A guest's boot before its cells of `variant`.
    Boot {
        variant: String,
    },
}

impl Work {
    /// What it is done on: the variant, `variant/workload`, the cell.
    pub fn on(&self) -> String {
        match self {
            Work::Setup { variant } | Work::Teardown { variant } | Work::Boot { variant } => {
                variant.clone()
            }
            Work::Load { variant, workload } => format!("{variant}/{workload}"),
            Work::Run { cell } => cell.clone(),
        }
    }
}

/// One item of the remaining work.
#[derive(Debug, Clone)]
pub struct Item {
    pub work: Work,
    pub kind: WorkKind,
    pub fs_type: String,
    /// Seconds known in advance (a timed run's duration): not learned.
    pub fixed: f64,
    /// The default for the learned part.
    pub prior: f64,
    /// The cells that need it (setup, load: when all of them have ended
    /// without it, it will not happen).
    pub cells: Vec<String>,
    /// An adaptive repeat that may not be needed.
    pub conditional: bool,
}

/// The work of `cells` (one host's, in run order) as items, with priors
/// from the plan's constants: their sum is the plan's ETA.
pub fn work_of(cells: &[&Cell]) -> Vec<Item> {
    let mut variants: Vec<&str> = Vec::new();
    for c in cells {
        if !variants.contains(&c.fs.name.as_str()) {
            variants.push(c.fs.name.as_str());
        }
    }
    let mut items = Vec::new();
    for v in variants {
        let of_v: Vec<&Cell> = cells
            .iter()
            .copied()
            .filter(|c| c.fs.name.as_str() == v)
            .collect();
        let fs_type = of_v[0].fs.fs_type.as_str().to_string();
        let ids = |cs: &[&Cell]| cs.iter().map(|c| c.id.clone()).collect::<Vec<_>>();
        items.push(Item {
            work: Work::Setup {
                variant: v.to_string(),
            },
            kind: WorkKind::Setup,
            fs_type: fs_type.clone(),
            fixed: 0.0,
            prior: eta::FS_BUILD_SECS as f64,
            cells: ids(&of_v),
            conditional: false,
        });
        let mut workloads: Vec<&str> = Vec::new();
        for c in &of_v {
            if !workloads.contains(&c.workload.name.as_str()) {
                workloads.push(c.workload.name.as_str());
            }
        }
        for w in workloads {
            let of_w: Vec<&Cell> = of_v
                .iter()
                .copied()
                .filter(|c| c.workload.name.as_str() == w)
                .collect();
            let prior = load_secs_of(&of_w[0].workload.kind, of_w[0].workload.scale);
            if prior == 0 {
                continue;
            }
            items.push(Item {
                work: Work::Load {
                    variant: v.to_string(),
                    workload: w.to_string(),
                },
                kind: WorkKind::Load,
                fs_type: fs_type.clone(),
                fixed: 0.0,
                prior: prior as f64,
                cells: ids(&of_w),
                conditional: false,
            });
        }
        for c in &of_v {
            let (kind, fixed) = run_split(c);
            items.push(Item {
                work: Work::Run { cell: c.id.clone() },
                kind,
                fs_type: fs_type.clone(),
                fixed,
                prior: super::cell_secs(c) as f64 - fixed,
                cells: vec![c.id.clone()],
                conditional: c.is_conditional(),
            });
        }
        items.push(Item {
            work: Work::Teardown {
                variant: v.to_string(),
            },
            kind: WorkKind::Teardown,
            fs_type,
            fixed: 0.0,
            prior: eta::FS_TEARDOWN_SECS as f64,
            cells: Vec::new(),
            conditional: false,
        });
    }
    items
}

/// [`work_of`] for a host that is a guest booted with `guest` (its
/// accelerator): a boot before each variant's setup.
pub fn work_of_host(cells: &[&Cell], guest: Option<Accel>) -> Vec<Item> {
    let items = work_of(cells);
    let Some(accel) = guest else {
        return items;
    };
    let mut out = Vec::with_capacity(items.len() + 4);
    for it in items {
        if let Work::Setup { variant } = &it.work {
            out.push(Item {
                work: Work::Boot {
                    variant: variant.clone(),
                },
                kind: WorkKind::Boot,
                fs_type: it.fs_type.clone(),
                fixed: 0.0,
                prior: eta::guest_boot_secs(accel) as f64,
                cells: it.cells.clone(),
                conditional: false,
            });
        }
        out.push(it);
    }
    out
}

/// A run's kind and the seconds of it known in advance.
fn run_split(c: &Cell) -> (WorkKind, f64) {
    match for_workload(&c.workload.kind).run_prior(c.length) {
        RunPrior::Timed(s) => (WorkKind::RunOverhead, s as f64),
        RunPrior::Open => (WorkKind::RunOpen, 0.0),
    }
}

/// Seconds of `items` by the defaults alone (all of them, and without the
/// conditional adaptive repeats).
pub fn prior_total(items: &[Item]) -> (u64, u64) {
    let all: f64 = items.iter().map(|i| i.fixed + i.prior).sum();
    let min: f64 = items
        .iter()
        .filter(|i| !i.conditional)
        .map(|i| i.fixed + i.prior)
        .sum();
    (all.round() as u64, min.round() as u64)
}
