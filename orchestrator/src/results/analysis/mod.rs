//! Statistics over cell records: pure functions, no file is read here.
//!
//! - [`stats`]: summaries and Student's t over counted repeats, and what a
//!   row is compared on ([`stats::Metric`]).
//! - [`compare`]: variants against a baseline on one host (Welch, ratio CI).
//! - [`sequential`]: verdicts decided at looks, the error rate spent
//!   across them.
//! - [`drift`]: order effects over a group's runs, and size agreement.
//! - [`latency`]: latency percentiles (pgbench `-l`) and per-statement
//!   latencies (`-r`) of a group.
pub mod compare;
pub mod drift;
pub mod latency;
pub mod sequential;
pub mod stats;
