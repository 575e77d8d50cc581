//! What a bundle keeps of its inputs, so that the very same sweep can be
//! resumed or run again: the inventory and matrix texts as written, where
//! they were, the workload scripts they name, and the plan.
use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::error::RunError;
use super::sink::Sink;
use crate::config::{GivenPaths, Inventory, Matrix};
use crate::plan::Plan;

/// The inputs' texts as written, and where they were (absolute), so that
/// relative paths in them keep their meaning.
pub struct Inputs {
    pub inventory_text: String,
    pub matrix_text: String,
    pub inventory_path: PathBuf,
    pub matrix_path: PathBuf,
}

impl Inputs {
    /// Read both files now (what the sweep will snapshot).
    pub fn read(inv: &Inventory, m: &Matrix) -> Result<Inputs, RunError> {
        let read = |path: &Path| {
            std::fs::read_to_string(path).map_err(|source| RunError::Read {
                path: path.to_path_buf(),
                source,
            })
        };
        let abs = |path: &Path| std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        Ok(Inputs {
            inventory_text: read(&inv.path)?,
            matrix_text: read(&m.path)?,
            inventory_path: abs(&inv.path),
            matrix_path: abs(&m.path),
        })
    }
}

/// Write the snapshots into the bundle: the inventory and matrix as written
/// (no secrets live in them: keys are referenced by path), where they were,
/// the scripts the matrix names, and the plan.
pub fn write(sink: &Sink, inputs: &Inputs, m: &Matrix, p: &Plan) -> Result<(), RunError> {
    let snap = |what: &str, r: Result<(), crate::results::BundleError>| {
        r.map_err(|source| RunError::Snapshot {
            what: what.to_string(),
            source,
        })
    };
    snap(
        "inventory.toml",
        sink.write("inventory.toml", inputs.inventory_text.as_bytes()),
    )?;
    snap(
        "matrix.toml",
        sink.write("matrix.toml", inputs.matrix_text.as_bytes()),
    )?;
    // Where the inputs were: a relative identity_file or known_hosts in the
    // inventory resolves against the original inventory's folder on
    // resume and `run --from`, not against the bundle's data/ (and is used
    // there only when the user names it: see `read`).
    let origin = serde_json::json!({
        "inventory": inputs.inventory_path.display().to_string(),
        "matrix": inputs.matrix_path.display().to_string(),
    });
    snap("inputs.json", sink.write_json("inputs.json", &origin))?;
    // The scripts a matrix names, at the same relative path, so that the
    // snapshot plans by itself (`resume`, `run --from`).
    for w in &m.workloads {
        if let Some((path, _, content)) = w.kind.script() {
            if let Some(rel) = path.to_str().filter(|_| path.is_relative()) {
                snap(rel, sink.write(rel, content.as_bytes()))?;
            }
        }
    }
    snap("plan.json", sink.write_json("plan.json", p))
}

/// The inventory and matrix a bundle was run with, from its own snapshots
/// (never the files on disk, which may have changed since).  The inventory
/// is someone's recorded text: its `ssh_config`, `identity_file` and
/// `known_hosts` are used only when `given` names them (the command line's
/// `--ssh-config`, `--identity-file`, `--known-hosts`).
pub fn read(dir: &Path, given: &GivenPaths) -> Result<(Inventory, Matrix, Inputs), RunError> {
    let data = dir.join("data");
    let read = |name: &str| {
        let path = data.join(name);
        std::fs::read_to_string(&path).map_err(|source| RunError::Read { path, source })
    };
    // The inventory is parsed as if at its original place (see `write`);
    // a bundle without inputs.json resolves against data/.  The matrix is
    // parsed in data/, where its relative scripts were copied.
    let origin = std::fs::read(data.join("inputs.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok());
    let origin_of = |key: &str, fallback: &str| {
        origin
            .as_ref()
            .and_then(|v| v[key].as_str().map(PathBuf::from))
            .unwrap_or_else(|| data.join(fallback))
    };
    let inputs = Inputs {
        inventory_text: read("inventory.toml")?,
        matrix_text: read("matrix.toml")?,
        inventory_path: origin_of("inventory", "inventory.toml"),
        matrix_path: origin_of("matrix", "matrix.toml"),
    };
    let inv = Inventory::parse_given(
        &inputs.inventory_path,
        inputs.inventory_text.clone(),
        &given.recorded(),
    )
    .map_err(|e| RunError::SnapshotInvalid {
        which: "inventory",
        errors: e.to_string(),
    })?;
    // Checked against the inventory as `plan` checks them: a bundle is
    // other people's input, and what plan refuses, resume refuses.
    let mut m = Matrix::parse(&data.join("matrix.toml"), inputs.matrix_text.clone())
        .and_then(|m| m.check_against(&inv).map(|()| m))
        .map_err(|e| RunError::SnapshotInvalid {
            which: "matrix",
            errors: e.to_string(),
        })?;
    // `order = "random"` without a seed: the one the sweep drew, as its
    // plan.json recorded it, so that the very same order runs again.
    m.use_recorded_seed(recorded_seed(&data.join("plan.json")));
    m.draw_seed();
    Ok((inv, m, inputs))
}

/// The seed a plan.json recorded (`order = "random"`), if any.
pub fn recorded_seed(plan_json: &Path) -> Option<u64> {
    let bytes = std::fs::read(plan_json).ok()?;
    let v: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    v["seed"].as_u64()
}

/// The bundle's own plan must come out of its snapshots again, cell for
/// cell: a script named by an absolute path that changed since, or an
/// fsmatrix whose cell ids differ, would otherwise run other cells silently.
pub fn same_cells(dir: &Path, p: &Plan) -> Result<(), RunError> {
    let path = dir.join("data/plan.json");
    let Ok(bytes) = std::fs::read(&path) else {
        return Ok(()); // a bundle that died before its plan was written
    };
    let old: serde_json::Value =
        serde_json::from_slice(&bytes).map_err(|e| RunError::PlanNotJson {
            path: path.clone(),
            reason: e.to_string(),
        })?;
    let old_ids: HashSet<&str> = old["cells"]
        .as_array()
        .map(|a| a.iter().filter_map(|c| c["id"].as_str()).collect())
        .unwrap_or_default();
    let new_ids: HashSet<&str> = p.cells.iter().map(|c| c.id.as_str()).collect();
    if old_ids == new_ids {
        return Ok(());
    }
    Err(RunError::SnapshotMismatch {
        gone: old_ids.difference(&new_ids).count(),
        total: old_ids.len(),
        added: new_ids.difference(&old_ids).count(),
    })
}
