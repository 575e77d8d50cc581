//! Load generators: how a workload's data is loaded, how it is run, how its
//! output is measured, what it is compared on, and its prior for the ETA.
//!
//! One trait, [`LoadGenerator`], with pgbench ([`pgbench`]: builtin and
//! custom scripts) and a SQL script run by psql ([`sql`]) as its
//! implementations, chosen in one place: [`for_workload`].  The run engine,
//! the plan's work items and the sink call the trait and never ask which
//! generator they hold.  "Load" means only the data-load phase.
//!
//! The load runs on the host under test, against its own PostgreSQL over a
//! unix socket, as the published studies did; the remote script's `load` and
//! `run` verbs build the pgbench and psql command lines
//! (docs/remote-scripts.md) and run them with `LC_ALL=C` (their messages are
//! translated otherwise), and the raw stdout/stderr come back to be parsed
//! here.  The bundle keeps the raw files; the parsers' outcome types hold
//! only parsed values, and [`measures`] turns them into what `result.json`
//! records; [`pgbench_log`] reads pgbench's per-transaction logs (`-l`) into
//! latency percentiles.
//!
//! The output formats across versions, and where they changed, are in
//! `tests/fixtures/pgbench/README.md`, with real output from PostgreSQL
//! 9.4–17 beside it.
//!
//! A new generator is its implementation file here, one arm in
//! [`for_workload`], its kind in the matrix's `WorkloadKind`, and its
//! shell fragment in `remote-scripts/common.sh`.

pub mod measures;
pub mod pgbench;
pub mod pgbench_log;
pub mod pgbench_parse;
pub mod psql_parse;
mod scan;
pub mod sql;

pub use pgbench_parse::{
    parse_init, parse_run, CountPct, InitOutcome, InitPhase, InitProgress, InvalidReason,
    ProgressClock, ProgressSample, RunOutcome, RunSummary, Tps, TpsKind,
};
pub use psql_parse::{parse_psql, PsqlInvalidReason, PsqlOutcome, TimedStatement};

use crate::config::{Length, SamplingRate, ScriptUse, WorkloadKind};
use crate::model::InitTimings;
use measures::Measured;

/// The generator of a workload of `kind`: the one place the kind of load
/// is chosen.
pub fn for_workload(kind: &WorkloadKind) -> &'static dyn LoadGenerator {
    match kind {
        WorkloadKind::Builtin { .. } | WorkloadKind::PgbenchScript { .. } => &pgbench::Pgbench,
        WorkloadKind::SqlScript { .. } => &sql::SqlScript,
    }
}

/// The script verb a generator's remote call runs (docs/remote-scripts.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScriptVerb {
    Load,
    Run,
}

/// One remote call of a generator: its verb, and the arguments that follow
/// the PostgreSQL folder, port and output folder every such call takes.
#[derive(Debug, Clone, PartialEq)]
pub struct Invocation {
    pub verb: ScriptVerb,
    pub args: Vec<(&'static str, String)>,
}

impl Invocation {
    fn new(verb: ScriptVerb) -> Invocation {
        Invocation {
            verb,
            args: Vec::new(),
        }
    }

    fn arg(mut self, name: &'static str, value: impl Into<String>) -> Invocation {
        self.args.push((name, value.into()));
        self
    }
}

/// One cell's run as a generator needs to know it.
#[derive(Debug, Clone, Copy)]
pub struct RunShape<'a> {
    pub kind: &'a WorkloadKind,
    pub clients: u32,
    pub jobs: u32,
    pub length: Length,
    /// pgbench `-R`: a fixed rate in transactions per second (all clients).
    pub rate: Option<u32>,
    /// pgbench `-L` in milliseconds.
    pub latency_limit_ms: Option<u32>,
    /// pgbench `-l --sampling-rate`: the per-transaction log.
    pub latency_log: Option<SamplingRate>,
    /// pgbench `-r`: per-statement latencies.
    pub per_statement: bool,
    /// The matrix asks for progress lines in the bundle.
    pub progress: bool,
    /// Where the workload's script file was uploaded, if it has one.
    pub script: Option<&'a str>,
}

/// What rows of a generator's cells are compared on (the results' metric).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compared {
    /// Operations per second; higher is better.
    Throughput,
    /// Mean latency; lower is better.
    Latency,
    /// The run's total time as a data load; lower is better.
    LoadTime,
}

/// A run's prior for the ETA: how much of it is known in advance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunPrior {
    /// It runs for these seconds (plus the per-run overhead).
    Timed(u64),
    /// It runs until its work is done: only an estimate is known.
    Open,
}

/// One live progress sample of a run (the live view's tps line).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LiveSample {
    pub t_s: f64,
    pub tps: f64,
    pub lat_ms: Option<f64>,
}

/// A way to put load on the PostgreSQL under test.
pub trait LoadGenerator: Sync {
    /// The file extension its script file gets on the host.
    fn script_ext(&self) -> &'static str;

    /// Does each run load its own data (so there is no separate load phase,
    /// and the sizes are measured after each run)?
    fn loads_in_run(&self) -> bool;

    /// The remote call of the load phase at `scale` (resolved from the
    /// device), when [`LoadGenerator::loads_in_run`] is false.
    fn load(&self, scale: Option<u64>) -> Invocation;

    /// The load phase's timings from its output; `None`: it did not finish.
    fn measure_load(&self, stdout: &str, stderr: &str) -> Option<InitTimings>;

    /// The remote call of one cell's run.
    fn run(&self, r: &RunShape) -> Invocation;

    /// A run's raw output measured into the run record (`length` is the
    /// cell's; `wall_ms` the host's own clock around the run, the verb's
    /// `elapsed_ms`, which the workload cannot write).
    fn measure(
        &self,
        stdout: &str,
        stderr: &str,
        status: Option<i32>,
        wall_ms: Option<f64>,
        length: Length,
    ) -> Measured;

    /// A line the run marked for the live view (the mark removed) as a
    /// progress sample, if it is one.
    fn live_sample(&self, _line: &str) -> Option<LiveSample> {
        None
    }

    /// What its cells are compared on, given the workload's fixed rate.
    fn compared_on(&self, rate: Option<u32>) -> Compared;

    /// Its run's prior for the ETA.
    fn run_prior(&self, length: Length) -> RunPrior;

    /// What a script of this generator does that needs the host owner's
    /// consent (runs a program, reaches a file, loads code), each with its
    /// line: its own meta-commands and the server-side SQL features.
    fn script_uses(&self, text: &str) -> Vec<ScriptUse>;
}

/// The features of a workload's script that need the host owner's consent
/// (none for a builtin): the scanner every caller of
/// `Matrix::check_against` passes, so that `plan`, `run`, `check`,
/// `resume` and the agent refuse alike.
pub fn script_uses(kind: &WorkloadKind) -> Vec<ScriptUse> {
    match kind.script() {
        Some((_, _, text)) => for_workload(kind).script_uses(text),
        None => Vec::new(),
    }
}

/// The script file of a workload (its checksum and text), if it has one.
pub fn script_of(kind: &WorkloadKind) -> Option<(&str, &str)> {
    kind.script().map(|(_, sha256, content)| (sha256, content))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Builtin;

    fn kinds() -> [WorkloadKind; 3] {
        [
            WorkloadKind::Builtin {
                builtin: Builtin::TpcbLike,
            },
            WorkloadKind::PgbenchScript {
                path: "w.pgbench".into(),
                sha256: "ab".repeat(32),
                content: "select 1;".into(),
            },
            WorkloadKind::SqlScript {
                path: "w.sql".into(),
                sha256: "cd".repeat(32),
                content: "select 1;".into(),
            },
        ]
    }

    #[test]
    fn each_kind_gets_its_generator() {
        let [builtin, script, sql] = kinds();
        for k in [&builtin, &script] {
            let g = for_workload(k);
            assert_eq!(g.script_ext(), "pgbench");
            assert!(!g.loads_in_run());
            assert_eq!(g.compared_on(None), Compared::Throughput);
            assert_eq!(g.compared_on(Some(100)), Compared::Latency);
            assert_eq!(g.run_prior(Length::Seconds(60)), RunPrior::Timed(60));
        }
        let g = for_workload(&sql);
        assert_eq!(g.script_ext(), "sql");
        assert!(g.loads_in_run());
        assert_eq!(g.compared_on(Some(100)), Compared::LoadTime);
        assert_eq!(g.run_prior(Length::Seconds(60)), RunPrior::Open);
        assert_eq!(script_of(&builtin), None);
        assert!(script_of(&sql).is_some());
    }

    /// The engine asks the generator: outside the config (which parses the
    /// kinds) and this module, no code names a kind of load (a branch
    /// elsewhere would be a second place that chooses).  Test code may.
    #[test]
    fn nothing_else_branches_on_the_kind_of_load() {
        fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
            for e in std::fs::read_dir(dir).unwrap().flatten() {
                let p = e.path();
                if p.is_dir() {
                    walk(&p, out);
                } else if p.extension().is_some_and(|x| x == "rs") {
                    out.push(p);
                }
            }
        }
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        walk(&src, &mut files);
        let mut checked = 0;
        for f in files {
            let rel = f
                .strip_prefix(&src)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            if rel.starts_with("config/")
                || rel.starts_with("generator/")
                || rel.ends_with("_tests.rs")
            {
                continue;
            }
            let text = std::fs::read_to_string(&f).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap_or("");
            for kind in ["WorkloadKind::", "is_sql"] {
                assert!(!code.contains(kind), "{rel} names {kind}");
            }
            checked += 1;
        }
        assert!(checked > 50, "{checked} files");
    }
}
