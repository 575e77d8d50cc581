//! Inventory and matrix: parse and validate.  No I/O beyond reading the
//! files (and the scripts a matrix names) and running `ssh -G` for hosts
//! whose address is an ssh config alias ([`ssh_config`]).  Every error
//! names its file, line and column; all errors are collected.
pub mod ansible;
pub mod error;
pub mod fs;
pub mod fsopts;
pub mod inventory;
pub mod matrix;
pub mod os;
pub mod pgclass;
pub mod ssh_config;
pub mod values;
mod walk;

use std::path::Path;

pub use error::{ConfigError, ConfigErrors};
pub use inventory::{Auth, Become, GivenPaths, Host, Inventory, Platform, RecordedPaths};
pub use matrix::{
    Builtin, CiTarget, Correction, FsType, FsVariant, GuestOrder, HostFilter, Jobs, Length, Looks,
    Margin, Matrix, Order, PgSetting, Repeats, Rule, SamplingRate, Scale, ScriptScanner, ScriptUse,
    VerdictRule, Workload, WorkloadKind, ZfsProperty,
};
pub use os::{Os, OsProfile};

pub(crate) fn read_file(path: &Path) -> Result<String, ConfigErrors> {
    std::fs::read_to_string(path).map_err(|e| {
        ConfigErrors(vec![ConfigError {
            file: path.to_path_buf(),
            line: 1,
            column: 1,
            message: format!("cannot read the file: {e}"),
        }])
    })
}

/// Run one document parser over `text` and collect every error it pushed,
/// sorted by position: the value only when there are none.
pub(crate) fn parse_collecting<T>(
    path: &Path,
    text: String,
    parse_doc: impl FnOnce(&error::Source, &mut error::Errors<'_>) -> Option<T>,
) -> Result<T, ConfigErrors> {
    let src = error::Source::new(path, text);
    let mut errs = error::Errors::new(&src);
    let v = parse_doc(&src, &mut errs);
    let mut list = ConfigErrors(errs.list);
    list.sort();
    match v {
        Some(v) if list.is_empty() => Ok(v),
        _ => Err(list),
    }
}

/// Read and validate both files, and the matrix against the inventory (its
/// scripts by `scan`, the generators' `generator::script_uses`); all
/// errors of both files are returned together.  No path is named on the
/// command line: an `ssh_config` in the inventory is refused.
pub fn load(
    inventory_path: &Path,
    matrix_path: &Path,
    scan: ScriptScanner,
) -> Result<(Inventory, Matrix), ConfigErrors> {
    load_given(inventory_path, matrix_path, &GivenPaths::default(), scan)
}

/// [`load`] with what the user named on the command line (`--ssh-config`):
/// `plan`, `check` and `run` all read their inputs here.
pub fn load_given(
    inventory_path: &Path,
    matrix_path: &Path,
    given: &GivenPaths,
    scan: ScriptScanner,
) -> Result<(Inventory, Matrix), ConfigErrors> {
    let inv = Inventory::load_given(inventory_path, given);
    let m = Matrix::load(matrix_path);
    match (inv, m) {
        (Ok(inv), Ok(mut m)) => {
            m.check_against(&inv, scan)?;
            m.draw_seed();
            Ok((inv, m))
        }
        (inv, m) => {
            let mut all = ConfigErrors::default();
            if let Err(e) = inv {
                all.0.extend(e.0);
            }
            if let Err(e) = m {
                all.0.extend(e.0);
            }
            Err(all)
        }
    }
}
