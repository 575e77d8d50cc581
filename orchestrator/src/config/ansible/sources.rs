//! Reading an inventory from disk as Ansible does: a file, or a directory
//! of inventory files (`InventoryManager.parse_source`), and the
//! `group_vars/` and `host_vars/` beside it (the `host_group_vars` vars
//! plugin, `DataLoader.find_vars_files`), as in ansible-core 2.19 (the version tests/run.sh installs).
use std::path::{Path, PathBuf};

use super::model::Model;
use super::yaml::read_vars_file;
use super::{Cx, ImportError};
use crate::config::values::shown;

/// The most inventory files one directory inventory reads.
const MAX_FILES: usize = 1_000;
/// Directories nested deeper than this in a directory inventory are not read.
const MAX_DIR_DEPTH: usize = 16;
/// The largest file read (an inventory or a vars file).
pub(super) const MAX_FILE_BYTES: u64 = 16 << 20;

/// Names a directory inventory skips (`IGNORED` in
/// ansible/inventory/manager.py): hidden names, the vars folders, and the
/// extensions of `INVENTORY_IGNORE_EXTS` (`REJECT_EXTS` + .orig .cfg
/// .retry; config/base.yml).  `.ini`, `.yml`, `.yaml`, `.json` and names
/// without an extension are read.
fn ignored(name: &str) -> bool {
    const EXTS: &[&str] = &[
        ".pyc", ".pyo", ".swp", ".bak", "~", ".rpm", ".md", ".txt", ".rst", ".orig", ".cfg",
        ".retry",
    ];
    name.starts_with('.')
        || matches!(name, "host_vars" | "group_vars" | "vars_plugins")
        || EXTS.iter().any(|e| name.ends_with(e))
}

pub(super) fn io_error(path: &Path, what: &str, e: &std::io::Error) -> ImportError {
    ImportError {
        file: path.to_path_buf(),
        line: None,
        message: format!("cannot {what}: {e}"),
    }
}

/// A file's text, refused past [`MAX_FILE_BYTES`], when it is not UTF-8, or
/// when what it names is not a regular file.  Opened without blocking (a
/// FIFO would wait for a writer forever), then judged by what was opened
/// (`fstat`: a link to `/dev/zero` is a character device, never read), and
/// read through a bound (a file that grows after the check stops there).
pub(super) fn read_text(path: &Path) -> Result<String, ImportError> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| io_error(path, "read it", &e))?;
    let meta = f.metadata().map_err(|e| io_error(path, "read it", &e))?;
    let ft = meta.file_type();
    if !ft.is_file() {
        let kind = if ft.is_fifo() {
            "a FIFO"
        } else if ft.is_char_device() {
            "a character device"
        } else if ft.is_block_device() {
            "a block device"
        } else if ft.is_socket() {
            "a socket"
        } else {
            "not a regular file"
        };
        return Err(ImportError {
            file: path.to_path_buf(),
            line: None,
            message: format!(
                "it is {kind}; fsmatrix reads only regular files (an inventory or vars file)"
            ),
        });
    }
    read_bounded(f, path)
}

/// At most [`MAX_FILE_BYTES`] of `r` as UTF-8 text (`what` names it in the
/// error); one byte more is an error, not a truncated read.
pub(super) fn read_bounded(r: impl std::io::Read, what: &Path) -> Result<String, ImportError> {
    use std::io::Read;
    let mut bytes = Vec::new();
    r.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| io_error(what, "read it", &e))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(ImportError {
            file: what.to_path_buf(),
            line: None,
            message: format!(
                "it has more than {MAX_FILE_BYTES} bytes; fsmatrix reads at most that"
            ),
        });
    }
    String::from_utf8(bytes).map_err(|_| ImportError {
        file: what.to_path_buf(),
        line: None,
        message: "it is not UTF-8 text".into(),
    })
}

/// The inventory files of a directory inventory, in Ansible's order: names
/// sorted, subdirectories read in place, ignored names skipped.
pub(super) fn directory_files(dir: &Path) -> Result<Vec<PathBuf>, ImportError> {
    let mut out = Vec::new();
    walk(dir, 0, &mut out)?;
    Ok(out)
}

fn walk(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) -> Result<(), ImportError> {
    if depth > MAX_DIR_DEPTH {
        return Err(ImportError {
            file: dir.to_path_buf(),
            line: None,
            message: format!(
                "directories nested more than {MAX_DIR_DEPTH} deep in the inventory; valid: a \
                 directory of inventory files"
            ),
        });
    }
    for name in sorted_names(dir)? {
        if ignored(&name) {
            continue;
        }
        let p = dir.join(&name);
        if p.is_dir() {
            walk(&p, depth + 1, out)?;
        } else {
            if out.len() == MAX_FILES {
                return Err(ImportError {
                    file: dir.to_path_buf(),
                    line: None,
                    message: format!(
                        "more than {MAX_FILES} inventory files; import a smaller directory"
                    ),
                });
            }
            out.push(p);
        }
    }
    Ok(())
}

/// The names in a directory, sorted as Python sorts `os.listdir` (by code
/// point); names that are not UTF-8 are left out.
fn sorted_names(dir: &Path) -> Result<Vec<String>, ImportError> {
    let rd = std::fs::read_dir(dir).map_err(|e| io_error(dir, "list it", &e))?;
    let mut names = Vec::new();
    for e in rd {
        let e = e.map_err(|e| io_error(dir, "list it", &e))?;
        if let Ok(n) = e.file_name().into_string() {
            names.push(n);
        }
    }
    names.sort();
    Ok(names)
}

/// The extensions a vars file may have (`YAML_FILENAME_EXTENSIONS`).
const VARS_EXTS: &[&str] = &["yml", "yaml", "json"];

/// `DataLoader.find_vars_files(dir, name)`: the first of `NAME`,
/// `NAME.yml`, `NAME.yaml`, `NAME.json` that exists; a folder gives its
/// files (sorted, recursively, hidden and `~` backups skipped, only the
/// extensions above or none).
fn find_vars_files(dir: &Path, name: &str) -> Result<Vec<PathBuf>, ImportError> {
    for ext in ["", ".yml", ".yaml", ".json"] {
        let p = dir.join(format!("{name}{ext}"));
        if p.is_dir() {
            let mut out = Vec::new();
            dir_vars_files(&p, 0, &mut out)?;
            return Ok(out);
        }
        if p.exists() {
            return Ok(vec![p]);
        }
    }
    Ok(Vec::new())
}

fn dir_vars_files(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) -> Result<(), ImportError> {
    if depth > MAX_DIR_DEPTH || out.len() > MAX_FILES {
        return Err(ImportError {
            file: dir.to_path_buf(),
            line: None,
            message: format!(
                "more than {MAX_FILES} vars files or folders nested more than {MAX_DIR_DEPTH} deep"
            ),
        });
    }
    for name in sorted_names(dir)? {
        if name.starts_with('.') || name.ends_with('~') {
            continue;
        }
        let p = dir.join(&name);
        let ext = Path::new(&name).extension().and_then(|e| e.to_str());
        if p.is_dir() && ext.is_none() {
            dir_vars_files(&p, depth + 1, out)?;
        } else if p.is_file() && ext.is_none_or(|e| VARS_EXTS.contains(&e)) {
            out.push(p);
        }
    }
    Ok(())
}

/// Whether a group or host name may name a vars file: not an absolute path
/// (Ansible skips those), and no `..` or empty component that would leave
/// the folder.
fn safe_name(name: &str) -> bool {
    !name.starts_with('/')
        && !name.contains('\0')
        && name
            .split('/')
            .all(|c| !c.is_empty() && c != "." && c != "..")
}

/// Read `base/group_vars/` and `base/host_vars/` into the model's groups
/// and hosts (their `file_vars`, later files winning).
pub(super) fn read_vars_dirs(
    cx: &mut Cx<'_>,
    m: &mut Model,
    base: &Path,
) -> Result<(), ImportError> {
    let gdir = base.join("group_vars");
    let hdir = base.join("host_vars");
    let groups: Vec<String> = m.groups.keys().cloned().collect();
    let hosts: Vec<String> = m.hosts.iter().map(|h| h.name.clone()).collect();
    if gdir.is_dir() {
        for g in &groups {
            if let Some(vars) = entity_vars(cx, &gdir, g)? {
                m.group(g).file_vars = vars;
            }
        }
        unknown_names(cx, &gdir, "group", |n| m.groups.contains_key(n))?;
    }
    if hdir.is_dir() {
        for (i, h) in hosts.iter().enumerate() {
            if let Some(vars) = entity_vars(cx, &hdir, h)? {
                m.hosts[i].file_vars = vars;
            }
        }
        unknown_names(cx, &hdir, "host", |n| m.index.contains_key(n))?;
    }
    Ok(())
}

/// The merged variables of one group's or host's vars files, if it has any.
fn entity_vars(
    cx: &mut Cx<'_>,
    dir: &Path,
    name: &str,
) -> Result<Option<super::model::Vars>, ImportError> {
    if !safe_name(name) {
        return Ok(None);
    }
    let files = find_vars_files(dir, name)?;
    if files.is_empty() {
        return Ok(None);
    }
    let mut vars = super::model::Vars::new();
    for f in files {
        cx.files.push(f.clone());
        cx.current = cx.files.len() - 1;
        let text = read_text(&f)?;
        if text.trim_start().starts_with("$ANSIBLE_VAULT") {
            cx.warn(
                None,
                "encrypted with ansible-vault: not read; run `ansible-inventory -i SRC --list \
                 --ask-vault-pass > list.json` and import list.json",
            );
            continue;
        }
        vars.extend(read_vars_file(cx, text.trim_start_matches('\u{feff}'))?);
    }
    cx.current = 0;
    Ok(Some(vars))
}

/// A caveat for each vars file or folder that names no group (or host) of
/// the inventory: Ansible ignores it silently, often a misspelt name.
fn unknown_names(
    cx: &mut Cx<'_>,
    dir: &Path,
    what: &str,
    known: impl Fn(&str) -> bool,
) -> Result<(), ImportError> {
    for name in sorted_names(dir)? {
        if name.starts_with('.') || name.ends_with('~') {
            continue;
        }
        let p = Path::new(&name);
        let stem = match p.extension().and_then(|e| e.to_str()) {
            Some(e) if VARS_EXTS.contains(&e) => p.file_stem().and_then(|s| s.to_str()),
            Some(_) => None,
            None => Some(name.as_str()),
        };
        if let Some(stem) = stem {
            if !known(stem) {
                cx.files.push(dir.join(&name));
                cx.current = cx.files.len() - 1;
                cx.warn(
                    None,
                    format!(
                        "names no {what} of the inventory (no {what} `{}`): not read (Ansible ignores it \
                         too)",
                        shown(stem)
                    ),
                );
                cx.current = 0;
            }
        }
    }
    Ok(())
}
