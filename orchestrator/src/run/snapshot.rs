//! What a bundle keeps of its inputs, so that the very same sweep can be
//! resumed or run again: the inventory and matrix texts as written, where
//! they were, the workload scripts they name, and the plan.
use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::error::RunError;
use super::sink::Sink;
use crate::config::{GivenPaths, Inventory, Matrix};
use crate::plan::Plan;
use crate::results::bundle::writer::check_payload_path;

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

/// The bundle-relative names [`write`] will give the matrix's scripts: each
/// must be a name the bundle can store.  Checked before any host is
/// claimed or the bundle folder made, so that an input the bundle cannot
/// hold leaves no half-made bundle behind.
pub fn check(m: &Matrix) -> Result<(), RunError> {
    for w in &m.workloads {
        if let Some((path, _, _)) = w.kind.script() {
            if let Some(rel) = path.to_str().filter(|_| path.is_relative()) {
                check_payload_path(rel).map_err(|source| RunError::Snapshot {
                    what: format!("workload {}'s script {rel}", w.name.as_str()),
                    source,
                })?;
            } else if path.is_relative() {
                return Err(RunError::Snapshot {
                    what: format!("workload {}'s script", w.name.as_str()),
                    source: crate::results::BundleError::BadPath {
                        rel: path.display().to_string(),
                        why: "the path is not UTF-8".into(),
                    },
                });
            }
        }
    }
    Ok(())
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

/// The most bytes read of the inventory, matrix and inputs snapshots.
pub const MAX_SNAPSHOT_BYTES: u64 = 16 << 20;
/// The most bytes read of a bundle's plan.json: the bundle reader's.
pub use crate::results::bundle::definitions::MAX_PLAN_BYTES;

/// A snapshot file of a bundle: a bundle is someone else's input, so only
/// a regular file (not a link, never a FIFO) of at most `limit` bytes.
fn read_snapshot(path: &Path, limit: u64) -> Result<Vec<u8>, RunError> {
    crate::files::read_regular_no_link(path, limit).map_err(|why| RunError::Read {
        path: path.to_path_buf(),
        source: std::io::Error::other(format!(
            "{why}; a snapshot must be a regular file of at most {} MiB",
            limit >> 20
        )),
    })
}

/// [`read_snapshot`] as text.
fn read_snapshot_text(path: &Path, limit: u64) -> Result<String, RunError> {
    String::from_utf8(read_snapshot(path, limit)?).map_err(|e| RunError::Read {
        path: path.to_path_buf(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, e),
    })
}

/// Refuse a bundle that holds a link or a special file anywhere (the
/// matrix reads its scripts from data/, and a link there would be read
/// through): checked before any snapshot is read.
fn refuse_unsafe(dir: &Path) -> Result<(), RunError> {
    let found = crate::results::bundle::manifest::unsafe_entries(dir);
    if found.is_empty() {
        return Ok(());
    }
    Err(RunError::Read {
        path: dir.to_path_buf(),
        source: std::io::Error::other(format!(
            "it holds what a bundle may not, so its snapshots are not read (nothing was run): {}",
            found.join("; ")
        )),
    })
}

/// The inventory and matrix a bundle was run with, from its own snapshots
/// (never the files on disk, which may have changed since), read bounded
/// and never through a link or a FIFO.  The inventory is someone's
/// recorded text: its `ssh_config`, `identity_file` and `known_hosts` are
/// used only when `given` names them (the command line's `--ssh-config`,
/// `--identity-file`, `--known-hosts`).
pub fn read(dir: &Path, given: &GivenPaths) -> Result<(Inventory, Matrix, Inputs), RunError> {
    refuse_unsafe(dir)?;
    let data = dir.join("data");
    let read = |name: &str| read_snapshot_text(&data.join(name), MAX_SNAPSHOT_BYTES);
    // The inventory is parsed as if at its original place (see `write`);
    // a bundle without inputs.json resolves against data/.  The matrix is
    // parsed in data/, where its relative scripts were copied.
    let origin = read_snapshot(&data.join("inputs.json"), MAX_SNAPSHOT_BYTES)
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
        .and_then(|m| {
            m.check_against(&inv, crate::generator::script_uses)
                .map(|()| m)
        })
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
    let bytes = read_snapshot(plan_json, MAX_PLAN_BYTES).ok()?;
    let v: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    v["seed"].as_u64()
}

/// The bundle's own plan must come out of its snapshots again, cell for
/// cell: a script named by an absolute path that changed since, or an
/// fsmatrix whose cell ids differ, would otherwise run other cells silently.
pub fn same_cells(dir: &Path, p: &Plan) -> Result<(), RunError> {
    let path = dir.join("data/plan.json");
    let bytes = match std::fs::symlink_metadata(&path) {
        // A bundle that died before its plan was written.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        _ => read_snapshot(&path, MAX_PLAN_BYTES)?,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn a_plan() -> Plan {
        let inv = Inventory::parse(
            Path::new("inv.toml"),
            "[[host]]\nname = \"h\"\naddress = \"127.0.0.1\"\nos = \"linux\"\n\
             devices = [\"/dev/loop9\"]\npg_bin = \"/usr/lib/postgresql/15/bin\"\n"
                .to_string(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let m = Matrix::parse(
            Path::new("m.toml"),
            "name = \"m\"\n[[filesystem]]\nname = \"e\"\ntype = \"ext4\"\n\
             [[workload]]\nname = \"w\"\nbuiltin = \"select-only\"\nscale = 1\n\
             clients = [1]\nduration = \"5s\"\n"
                .to_string(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        crate::plan::plan(&inv, &m)
    }

    fn mkfifo(path: &Path) {
        let c = std::ffi::CString::new(path.to_str().unwrap_or_default()).unwrap_or_default();
        // SAFETY: a valid C string; mkfifo has no other precondition.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    }

    /// `f(dir)` in a thread: its answer within 10 s, or the test fails as
    /// a hang (a FIFO's open blocks until a writer comes).
    fn within<T: Send + 'static>(dir: &Path, f: fn(&Path) -> T) -> T {
        let (tx, rx) = std::sync::mpsc::channel();
        let dir = dir.to_path_buf();
        std::thread::spawn(move || {
            let _ = tx.send(f(&dir));
        });
        rx.recv_timeout(std::time::Duration::from_secs(10))
            .unwrap_or_else(|_| panic!("hung reading the snapshots"))
    }

    /// A script name the bundle cannot store (`%`, `\\`: `plan` takes
    /// them) is refused before any host is claimed or the bundle folder
    /// made: `run` used to make the folder, then fail writing the snapshot,
    /// and leave a half-made bundle.
    #[tokio::test]
    async fn an_input_the_bundle_cannot_hold_leaves_no_bundle_folder() {
        let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(tmp.path().join("a%b.sql"), "SELECT 1;\n").unwrap_or_else(|e| panic!("{e}"));
        let inv_text =
            "[[host]]\nname = \"h\"\naddress = \"127.0.0.1\"\nport = 1\nos = \"linux\"\n\
             devices = [\"/dev/loop9\"]\npg_bin = \"/usr/lib/postgresql/15/bin\"\n";
        let m_text = "name = \"m\"\n[[filesystem]]\nname = \"e\"\ntype = \"ext4\"\n\
             [[workload]]\nname = \"w\"\nsql_script = \"a%b.sql\"\n";
        let (inv_path, m_path) = (tmp.path().join("inv.toml"), tmp.path().join("m.toml"));
        std::fs::write(&inv_path, inv_text).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(&m_path, m_text).unwrap_or_else(|e| panic!("{e}"));
        let inv =
            Inventory::parse(&inv_path, inv_text.to_string()).unwrap_or_else(|e| panic!("{e}"));
        let m = Matrix::parse(&m_path, m_text.to_string()).unwrap_or_else(|e| panic!("{e}"));
        let out = tmp.path().join("out");
        let hooks = crate::run::Hooks {
            display: crate::run::Display::Quiet,
            ..Default::default()
        };
        let err = match crate::run::sweep(&inv, &m, &out, hooks).await {
            Ok(s) => panic!("ran: {:?}", s.bundle),
            Err(e) => e.to_string(),
        };
        assert!(err.contains("a%b.sql") && err.contains('%'), "{err}");
        let left: Vec<_> = std::fs::read_dir(&out)
            .map(|rd| rd.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        assert!(left.is_empty(), "a bundle folder was left: {left:?}");
    }

    /// `resume` and `run --from` read a bundle's snapshots: a FIFO there
    /// used to hang them, and a link to /dev/zero to read without end.
    /// Each is refused at once, saying what it is; nothing is read
    /// through it.
    #[test]
    fn snapshots_are_never_read_through_a_fifo_or_a_link() {
        let bundle = |plant: &dyn Fn(&Path)| {
            let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
            let data = tmp.path().join("data");
            std::fs::create_dir_all(&data).unwrap_or_else(|e| panic!("{e}"));
            std::fs::write(tmp.path().join("bagit.txt"), "").unwrap_or_else(|e| panic!("{e}"));
            plant(&data);
            tmp
        };
        let link = |to: &str, at: &Path| {
            std::os::unix::fs::symlink(to, at).unwrap_or_else(|e| panic!("{e}"))
        };
        type Plant = Box<dyn Fn(&Path)>;
        let cases: Vec<(&str, Plant)> = vec![
            (
                "a FIFO",
                Box::new(|d: &Path| mkfifo(&d.join("inventory.toml"))),
            ),
            (
                "symbolic link",
                Box::new(move |d: &Path| {
                    std::fs::write(d.join("inventory.toml"), "").unwrap_or_default();
                    link("/dev/zero", &d.join("matrix.toml"));
                }),
            ),
            (
                "symbolic link",
                Box::new(move |d: &Path| link("/etc/passwd", &d.join("inputs.json"))),
            ),
        ];
        for (what, plant) in cases {
            let tmp = bundle(&*plant);
            let err = match within(tmp.path(), |d| read(d, &GivenPaths::default())) {
                Ok(_) => panic!("{what}: read"),
                Err(e) => e.to_string(),
            };
            assert!(err.contains(what), "{what}: {err}");
        }
        // plan.json alone (same_cells and the seed read it directly).
        for plant in [
            Box::new(|d: &Path| mkfifo(&d.join("plan.json"))) as Plant,
            Box::new(move |d: &Path| link("/dev/zero", &d.join("plan.json"))),
        ] {
            let tmp = bundle(&*plant);
            let dir = tmp.path().to_path_buf();
            let err = within(&dir, |d| {
                same_cells(d, &a_plan()).map_err(|e| e.to_string())
            })
            .expect_err("refused");
            assert!(err.contains("not a regular file"), "{err}");
            assert_eq!(within(&dir.join("data/plan.json"), recorded_seed), None);
        }
    }
}
