//! The run engine's errors: a step of one cell that failed (recorded in the
//! bundle, the sweep goes on), and what stops a whole sweep before or after
//! its cells (bad snapshots, an unwritable bundle).
use std::path::PathBuf;

use super::calls::UnknownDeviceSize;
use super::verb::Step;
use crate::remote::{ExecOutput, ExitStatus, RemoteError};
use crate::results::BundleError;

/// `"the device is full …: "` when `stderr` says ENOSPC (as Linux and the
/// BSDs spell it), else `""`: said first in a failure, so that a scale too
/// big for the device reads as what it is.
pub fn device_full_note(stderr: &str) -> &'static str {
    if stderr.contains("No space left on device") {
        "the device is full (No space left on device): "
    } else {
        ""
    }
}

/// A step that failed, as a cell records it.
#[derive(Debug, Clone)]
pub struct StepError {
    pub step: Step,
    pub exit_status: Option<i32>,
    pub message: String,
    /// The step ran past its timeout and its process group was killed.
    pub timed_out: bool,
    /// An interrupt (Ctrl-C, a lost lease or host lock) stopped it: the
    /// cell did not fail, it did not get to run.
    pub interrupted: bool,
}

impl StepError {
    pub fn new(step: impl Into<Step>, message: impl Into<String>) -> Self {
        StepError {
            step: step.into(),
            exit_status: None,
            message: message.into(),
            timed_out: false,
            interrupted: false,
        }
    }

    pub fn interrupted(step: impl Into<Step>) -> Self {
        StepError {
            interrupted: true,
            ..StepError::new(step, "interrupted")
        }
    }

    pub fn remote(step: impl Into<Step>, e: &RemoteError) -> Self {
        StepError::new(step, e.to_string())
    }

    /// A command that ran and exited non-zero: its status and stderr's tail.
    pub fn status(step: impl Into<Step>, out: &ExecOutput) -> Self {
        let tail = out.stderr_tail(15);
        StepError {
            step: step.into(),
            exit_status: match out.status {
                ExitStatus::Code { code } => i32::try_from(code).ok(),
                _ => None,
            },
            message: format!(
                "{}{}\n{tail}",
                device_full_note(&out.stderr_lossy()),
                out.status
            )
            .trim_end()
            .to_string(),
            timed_out: matches!(out.status, ExitStatus::TimedOut { .. }),
            interrupted: false,
        }
    }

    pub fn scale(step: impl Into<Step>, e: &UnknownDeviceSize) -> Self {
        StepError::new(step, e.to_string())
    }
}

impl std::fmt::Display for StepError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} failed: {}", self.step, self.message)
    }
}

/// What stops a sweep, a resume or a re-run as a whole.  Messages read after
/// "failed to …" where they start with a verb.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Bundle(#[from] BundleError),
    #[error("snapshot {what}: {source}")]
    Snapshot { what: String, source: BundleError },
    #[error("load the bundle's {which} snapshot: it no longer loads:\n{errors}")]
    SnapshotInvalid { which: &'static str, errors: String },
    #[error("read the bundle's {}: it is not JSON: {reason}", path.display())]
    PlanNotJson { path: PathBuf, reason: String },
    #[error(
        "resume the bundle: its snapshots no longer plan the same cells as its plan.json ({gone} of {total} cells gone, {added} new): \
         a workload script named by an absolute path changed since, or this fsmatrix numbers cells differently from the one that wrote the bundle; \
         nothing was run and the bundle is unchanged"
    )]
    SnapshotMismatch {
        gone: usize,
        total: usize,
        added: usize,
    },
    #[error(
        "start the sweep: {} (nothing was touched on any host; wait for the other sweep to end, \
         or end it: a lock dies with its holder)",
        refusals.join("; ")
    )]
    Locked { refusals: Vec<String> },
    #[error(
        "record results in {}: {reason}; no new step started after that and every host was torn down \
         ({done} cells were recorded before and are kept): free space, then run `fsmatrix resume {}`",
        bundle.display(), bundle.display()
    )]
    Unrecordable {
        bundle: PathBuf,
        reason: String,
        done: usize,
    },
    #[error(
        "start the sweep: inventory hosts {first} and {second} are the same machine (the same host key, {fingerprint}); \
         two entries for one machine would format its devices from two sides: keep one (nothing was touched)"
    )]
    SameMachine {
        first: String,
        second: String,
        fingerprint: String,
    },
}
