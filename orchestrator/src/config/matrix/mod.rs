//! The matrix: filesystems and their options, PostgreSQL settings,
//! workloads, client counts, repeats, include/exclude rules and a host
//! filter.  Format documented in docs/formats.md and the examples in matrix/.
//!
//! `types` holds the validated matrix.  The parser reads one key group per
//! file: `top` the document and its top-level keys; `postgres` a table
//! of PostgreSQL settings (`[postgres]` and a variant's `postgres`);
//! `filesystem` each `[[filesystem]]` with its `vary`; `workload` each
//! `[[workload]]`; `runs` how often and how long runs go (repeats, adaptive
//! repeats, warm-up, run_timeout, durations); `rules` include, exclude and
//! `[hosts]`; `verdicts` the decision rule (`margin`, `correction`).  `check` holds the checks of a matrix against an inventory.
mod check;
mod filesystem;
mod postgres;
mod rules;
mod runs;
mod top;
mod types;
mod verdicts;
mod workload;

#[cfg(test)]
mod test_support;

use std::path::Path;

use super::error::ConfigErrors;
pub use check::{ScriptScanner, ScriptUse};
pub use filesystem::{check_hammer2_property, HAMMER2_COMPRESSION, MAX_VARIANTS_PER_ENTRY};
pub use runs::{parse_duration, MAX_DURATION_SECS, MAX_REPEATS, MAX_WARMUP};
use top::parse_doc;
pub use types::{
    Builtin, CiTarget, FsType, FsVariant, GuestOrder, HostFilter, Jobs, Length, Matrix, Order,
    PgSetting, Repeats, Rule, SamplingRate, Scale, Until, Workload, WorkloadKind, ZfsProperty,
    DEFAULT_MAX_CELLS, MAX_CELLS_LIMIT, MAX_SEED,
};
pub use verdicts::{Correction, Looks, Margin, VerdictRule, MAX_MARGIN_BASIS_POINTS};
pub use workload::{
    read_script, script_path, MAX_RATE, MAX_SCRIPT_BYTES, SQL_DEFAULT_ESTIMATE_SECS,
};

/// A seed for `order = "random"` from the OS's randomness (std's hasher
/// keys come from it) and the clock; at most [`MAX_SEED`], so that it can
/// be written back as `seed = N`.
fn draw_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    h.write_u128(nanos);
    h.write_u32(std::process::id());
    h.finish() & MAX_SEED
}

impl Matrix {
    /// The most cells this matrix can plan on `hosts` hosts (every variant
    /// on every host, before OS drops, filters and excludes), without
    /// planning them.
    pub fn most_cells(&self, hosts: usize) -> u128 {
        let per_variant: u128 = self
            .workloads
            .iter()
            .map(|w| w.clients.len() as u128 * u128::from(w.warmup + w.repeats.max))
            .sum();
        per_variant * self.filesystems.len() as u128 * hosts as u128
    }

    /// Read and validate a matrix file (and the scripts it names, relative to it).
    pub fn load(path: &Path) -> Result<Matrix, ConfigErrors> {
        let text = super::read_file(path)?;
        Matrix::parse(path, text)
    }

    /// Validate matrix text; scripts are read relative to `path`'s folder.
    pub fn parse(path: &Path, text: String) -> Result<Matrix, ConfigErrors> {
        super::parse_collecting(path, text, parse_doc)
    }

    /// `order = "random"` without a `seed`: draw one (recorded in the plan,
    /// so that the run can be repeated exactly).  Nothing otherwise.
    pub fn draw_seed(&mut self) {
        if self.order == Order::Random && self.seed.is_none() {
            self.seed = Some(draw_seed());
            self.seed_drawn = true;
        }
    }

    /// Use `seed` (the one a bundle or a queued sweep recorded) when the
    /// matrix names none.
    pub fn use_recorded_seed(&mut self, seed: Option<u64>) {
        if self.order == Order::Random && (self.seed.is_none() || self.seed_drawn) {
            if let Some(s) = seed {
                self.seed = Some(s);
                self.seed_drawn = true;
            }
        }
    }
}
