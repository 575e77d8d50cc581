//! The local lab: throwaway hosts on this machine (see lab.sh).
use std::process::ExitCode;

use crate::cli::LabAction;

pub const DEFAULT_DIR: &str = "/var/lib/fsmatrix/lab";

pub fn cli(_action: LabAction) -> ExitCode {
    eprintln!("fsmatrix: `lab` is not implemented yet");
    ExitCode::from(2)
}
