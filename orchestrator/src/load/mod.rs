//! pgbench and psql command lines and output parsing (pure: no I/O).
//!
//! The load runs on the host under test (see DESIGN.md, "Load generator
//! placement"); the orchestrator builds the argument vectors here, the remote
//! script runs them with `LC_ALL=C` (pgbench's and psql's messages are
//! translated otherwise), and the raw stdout/stderr come back to be parsed
//! here.  The bundle keeps the raw files; the outcome types below hold only
//! parsed values and go into `result.json`.
//!
//! Facts the parsers rely on: `../shared/notes/pgbench-output.md`; fixtures
//! from PostgreSQL 9.4–17 under `tests/fixtures/pgbench/` (see its README).

pub mod args;
pub mod pgbench;
pub mod psql;

pub use args::{
    pgbench_init_args, pgbench_run_args, psql_script_args, Builtin, ConnArgs, InitOptions,
    RunLimit, Workload,
};
pub use pgbench::{
    parse_init, parse_run, CountPct, InitOutcome, InitPhase, InitProgress, InvalidReason,
    ProgressClock, ProgressSample, RunOutcome, RunSummary, Tps, TpsKind,
};
pub use psql::{parse_psql, PsqlInvalidReason, PsqlOutcome, TimedStatement};
