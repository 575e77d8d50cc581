//! Result bundles and what is made of them, in three layers, each
//! importing only those before it (a test below holds this):
//!
//! 1. [`bundle`]: storage and integrity: the bag written as the sweep runs
//!    ([`Bundle`]), its journal, manifests, [`verify()`], signatures,
//!    archives, `ls`, timings.
//! 2. [`analysis`]: statistics over the cell records: summaries and
//!    Student's t, comparisons with a baseline, order effects, latency.
//! 3. [`report`]: presentation: the report computed once
//!    ([`report::build_report`]), one renderer per format
//!    ([`report::Format`]), the terminal summary.
//!
//! What a cell's `result.json` / a `results.jsonl` line holds is
//! [`crate::model`], below all three.
pub mod analysis;
pub mod bundle;
pub mod report;

pub use crate::model::{CellParams, CellResult, CellStatus};
/// What rows are compared on ([`stats::Metric`]) is the statistic most
/// read outside: `results::stats` is [`analysis::stats`].
pub use analysis::stats;
pub use bundle::{verify, Bundle, BundleError, JournalEvent, SweepStatus, VerifyReport};

#[cfg(test)]
mod layering;
