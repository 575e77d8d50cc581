//! Storage and integrity: a result bundle is a BagIt bag (RFC 8493) written
//! as the sweep runs.  This layer knows nothing of statistics or reports.
//!
//! - [`writer`]: the writer the run engine owns ([`Bundle`]).
//! - [`bag`]: the bag's file names, atomic writes and the walk over it.
//! - [`journal`]: append-only `journal.jsonl` that drives resume.
//! - [`manifest`]: sha256 helpers and manifest files.
//! - [`mod@verify`]: completeness and checksums of a bag ([`verify::verify`]).
//! - [`definitions`]: each workload's and variant's definition as it ran
//!   (`data/plan.json`), as data to compare.
//! - [`read`]: a finished bundle's cell records, read for a report, its
//!   checksums checked first.
//! - [`signature`]: SSH signatures of a bundle (`ssh-keygen -Y sign`
//!   format), checked against an [`allowed_signers`] file.
//! - [`archive`]: a verified bundle as one `.tar.zst`, and back.
//! - [`listing`]: the bundles under a folder, archives too (`fsmatrix ls`).
//! - [`timings`]: how long each kind of work took (`data/timings.jsonl`),
//!   for the ETA.
use std::path::{Path, PathBuf};

pub mod allowed_signers;
pub mod archive;
pub mod bag;
pub mod definitions;
pub mod journal;
pub mod listing;
pub mod manifest;
pub mod read;
pub mod signature;
pub mod timings;
pub mod verify;
pub mod writer;

pub use bag::{
    BAGIT_FILE, BAGIT_TXT, BAG_INFO_FILE, MANIFEST_FILE, RESULTS_CSV, RESULTS_JSONL,
    TAGMANIFEST_FILE,
};
pub use journal::{JournalEvent, SweepStatus};
pub use verify::{verify, VerifyReport};
pub use writer::{parse_cell_result, read_results_jsonl, tool_version, Bundle, CreateOptions};

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
