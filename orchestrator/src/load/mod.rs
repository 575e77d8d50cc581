//! pgbench and psql output parsing (pure: no I/O).
//!
//! The load runs on the host under test (see DESIGN.md, "Load generator
//! placement"); the remote script's `load` and `run` verbs build the pgbench
//! and psql command lines (docs/remote-scripts.md) and run them with
//! `LC_ALL=C` (their messages are translated otherwise), and the raw
//! stdout/stderr come back to be parsed here.  The bundle keeps the raw files; the outcome types below hold only
//! parsed values and go into `result.json`.
//!
//! Facts the parsers rely on: `../shared/notes/pgbench-output.md`; fixtures
//! from PostgreSQL 9.4–17 under `tests/fixtures/pgbench/` (see its README).

pub mod pgbench;
pub mod psql;

pub use pgbench::{
    parse_init, parse_run, CountPct, InitOutcome, InitPhase, InitProgress, InvalidReason,
    ProgressClock, ProgressSample, RunOutcome, RunSummary, Tps, TpsKind,
};
pub use psql::{parse_psql, PsqlInvalidReason, PsqlOutcome, TimedStatement};
