//! A bag's layout and its safe writes: the names of its tag files and of
//! the result files under `data/`, writing a file atomically, and the walk
//! over its files.  The writer, `verify`, signing and `ls` share them.
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

use super::manifest::TMP_PREFIX;

pub const BAGIT_FILE: &str = "bagit.txt";
pub const BAG_INFO_FILE: &str = "bag-info.txt";
pub const MANIFEST_FILE: &str = "manifest-sha256.txt";
pub const TAGMANIFEST_FILE: &str = "tagmanifest-sha256.txt";
pub const RESULTS_JSONL: &str = "results.jsonl";
pub const RESULTS_CSV: &str = "results.csv";
pub const BAGIT_TXT: &str = "BagIt-Version: 1.0\nTag-File-Character-Encoding: UTF-8\n";

/// Make a folder's entries durable (after a create or a rename in it).
pub(super) fn fsync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Write `bytes` to `dir/name` through a temporary name: write, fsync,
/// rename, fsync the folder.  The temporary file is removed on failure.
pub(crate) fn write_atomic(dir: &Path, name: &str, bytes: &[u8]) -> io::Result<()> {
    let tmp = dir.join(format!("{TMP_PREFIX}{name}.{}", std::process::id()));
    let result = (|| {
        let mut f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        fs::rename(&tmp, dir.join(name))?;
        fsync_dir(dir)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Every regular file under `dir`, as bag-relative paths with `prefix`.
pub(crate) fn walk_files(dir: &Path, prefix: &str, out: &mut Vec<String>) -> io::Result<()> {
    let mut entries: Vec<_> = fs::read_dir(dir)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = e.file_name().to_string_lossy().into_owned();
        let rel = format!("{prefix}/{name}");
        let ft = e.file_type()?;
        if ft.is_dir() {
            walk_files(&e.path(), &rel, out)?;
        } else {
            out.push(rel);
        }
    }
    Ok(())
}
