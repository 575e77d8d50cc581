//! Result bundles: a BagIt bag (RFC 8493) written as the sweep runs.
//!
//! - [`bundle`]: the writer the run engine owns ([`Bundle`]).
//! - [`journal`]: append-only `journal.jsonl` that drives resume.
//! - [`manifest`]: sha256 helpers and manifest files.
//! - [`verify`]: completeness and checksums of a bag ([`verify::verify`]).
//! - [`crate::model`] (below this module): what a cell's `result.json` / a `results.jsonl` line holds.
//! - [`compare`]: variants against a baseline on one host (Welch, ratio CI).
//! - [`stats`]: summaries and Student's t over counted repeats.
//! - [`drift`]: order effects over a group's runs, and size agreement.
//! - [`latency`]: latency percentiles (pgbench `-l`) and per-statement
//!   latencies (`-r`) of a group, and their Markdown.
//! - [`report`]: reports of results ([`report::build_report`]) as Markdown,
//!   CSV and JSON ([`report::render_markdown`]).
//! - [`view`]: the report's tables and sentences as text, shared by the
//!   Markdown and HTML renderers.
//! - [`html`]: the HTML report with SVG plots ([`html::render_html`]).
//! - [`signature`]: SSH signatures of a bundle (`ssh-keygen -Y sign`
//!   format), checked against an [`allowed_signers`] file.
//! - [`listing`]: the bundles under a folder, archives too (`fsmatrix ls`).
use std::path::{Path, PathBuf};

pub mod allowed_signers;
pub mod archive;
pub mod bundle;
pub mod compare;
pub mod drift;
pub mod html;
pub mod journal;
pub mod latency;
pub mod listing;
pub mod manifest;
pub mod report;
pub mod signature;
pub mod stats;
pub mod summary;
pub mod timings;
pub mod verify;
pub mod view;

pub use crate::model::{CellParams, CellResult, CellStatus};
pub use bundle::Bundle;
pub use journal::{JournalEvent, SweepStatus};
pub use verify::{verify, VerifyReport};

/// Errors of the bundle layer.  Messages read after "failed to …".
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    #[error("{action} {}: {source}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("encode {what} as json: {source}")]
    Encode {
        what: String,
        source: serde_json::Error,
    },
    #[error("read journal {} line {line}: {what}", path.display())]
    Journal {
        path: PathBuf,
        line: usize,
        what: String,
    },
    #[error("read {} line {line}: {what}", path.display())]
    Results {
        path: PathBuf,
        line: usize,
        what: String,
    },
    #[error("use {name:?} as a bundle name: {why}")]
    BadName { name: String, why: String },
    #[error("write {rel:?} into the bundle: {why}")]
    BadPath { rel: String, why: String },
    #[error("create bundle {}: it already exists; wait a second or choose another --out", path.display())]
    Exists { path: PathBuf },
    #[error("open bundle {}: {why}", path.display())]
    NotABundle { path: PathBuf, why: String },
    #[error("report on bundle {}: it does not verify, so its numbers may not be the ones measured: {problems}; see `fsmatrix verify`, or give --allow-unverified to report on it marked as not verified", path.display())]
    NotVerified { path: PathBuf, problems: String },
    #[error("write to bundle {}: it is closed", path.display())]
    Closed { path: PathBuf },
}

impl BundleError {
    pub(crate) fn io(action: &'static str, path: &Path, source: std::io::Error) -> Self {
        BundleError::Io {
            action,
            path: path.to_owned(),
            source,
        }
    }
}
