//! pgbench and psql output parsing (pure: no I/O).
//!
//! The load runs on the host under test, against its own PostgreSQL over a
//! unix socket, as the published studies did; the remote script's `load` and `run` verbs build the pgbench
//! and psql command lines (docs/remote-scripts.md) and run them with
//! `LC_ALL=C` (their messages are translated otherwise), and the raw
//! stdout/stderr come back to be parsed here.  The bundle keeps the raw
//! files; the outcome types below hold only parsed values, and [`measures`]
//! turns them into what `result.json` records; [`pgbench_log`] reads
//! pgbench's per-transaction logs (`-l`) into latency percentiles.
//!
//! The output formats across versions, and where they changed, are in
//! `tests/fixtures/pgbench/README.md`, with real output from PostgreSQL
//! 9.4–17 beside it.

pub mod measures;
pub mod pgbench;
pub mod pgbench_log;
pub mod psql;

pub use pgbench::{
    parse_init, parse_run, CountPct, InitOutcome, InitPhase, InitProgress, InvalidReason,
    ProgressClock, ProgressSample, RunOutcome, RunSummary, Tps, TpsKind,
};
pub use psql::{parse_psql, PsqlInvalidReason, PsqlOutcome, TimedStatement};
