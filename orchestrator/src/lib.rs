//! fsmatrix: run PostgreSQL benchmarks across filesystems, options and hosts,
//! and keep checksummed, re-runnable result bundles.
//!
//! The flow: parse + validate ([`config`]) → [`plan`] (pure) → [`run`] (one
//! worker per host over [`remote`]) → [`results`] bundle → verify / report.
//! [`commands`] is the CLI on top; no module below it imports it.  [`lab`]
//! builds throwaway local hosts for demos and tests.

pub mod commands;
pub mod config;
pub mod db;
pub mod eta;
pub mod files;
pub mod generator;
pub mod keys;
pub mod lab;
pub mod model;
pub mod plan;
pub mod remote;
pub mod results;
pub mod run;
pub mod stdio;
pub mod text;
pub mod timeouts;

#[cfg(test)]
mod layering;
#[cfg(test)]
pub(crate) mod testing;
