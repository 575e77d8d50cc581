//! How long each kind of work took on each host: `data/timings.jsonl` in a
//! bundle, one [`Timing`] a line, appended as the sweep goes.  The run
//! engine's ETA learns from the lines of its own sweep
//! ([`crate::eta`]); `--history DIR` reads those of earlier bundles of
//! the same hosts so that a plan's ETA starts from what the hosts did
//! before, not from the defaults.
//!
//! Other people's bundles are input: the file is read bounded, a line that
//! does not parse (a torn last line, a newer format) is skipped, and a
//! value that is not a finite, non-negative number of seconds is dropped.
use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::{Path, PathBuf};

use super::listing::{find_bundles, open_regular, BundleKind, ListError};
pub use crate::eta::{Timing, WorkKind};

/// The file, under a bundle's `data/`.
pub const TIMINGS_JSONL: &str = "timings.jsonl";

/// The most bytes read of one bundle's timings (a sweep of 10 000 cells
/// writes about 2 MB).
const MAX_BYTES: u64 = 8 << 20;

/// The timings of one bundle folder (`bundle/data/timings.jsonl`); none
/// when it has no such file.
pub fn read_bundle(bundle: &Path) -> Result<Vec<Timing>, String> {
    let path = bundle.join("data").join(TIMINGS_JSONL);
    let file = match open_regular(&path) {
        Ok((f, _)) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let mut bytes = Vec::new();
    file.take(MAX_BYTES)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(parse_lines(&String::from_utf8_lossy(&bytes)))
}

/// The usable lines of a timings file; others are skipped.
pub fn parse_lines(text: &str) -> Vec<Timing> {
    text.lines()
        .filter_map(|l| serde_json::from_str::<Timing>(l).ok())
        .filter(Timing::usable)
        .collect()
}

/// What `--history DIR` found: the timings of the bundles under it, by
/// host, and what it could not use.
#[derive(Debug, Clone, Default)]
pub struct History {
    pub by_host: BTreeMap<String, Vec<Timing>>,
    /// Bundles (folders) whose timings were read.
    pub bundles: usize,
    /// Archives are not opened for this (their timings are not indexed).
    pub archives_skipped: usize,
    pub warnings: Vec<String>,
}

impl History {
    /// Add one bundle's timings.
    pub fn add_bundle(&mut self, timings: Vec<Timing>) {
        self.bundles += 1;
        for t in timings {
            self.by_host.entry(t.host.clone()).or_default().push(t);
        }
    }

    /// The timings recorded for `host` (oldest bundle first).
    pub fn of(&self, host: &str) -> &[Timing] {
        self.by_host.get(host).map_or(&[], Vec::as_slice)
    }

    /// How many timings of `hosts` there are.
    pub fn count_for<'a>(&self, hosts: impl IntoIterator<Item = &'a str>) -> usize {
        hosts.into_iter().map(|h| self.of(h).len()).sum()
    }
}

/// Read the timings of every bundle folder under `dir` (a bundle folder
/// itself, or a folder of them) for the hosts named in `hosts` (`None`:
/// every host).
pub fn history(dir: &Path, hosts: Option<&BTreeSet<String>>) -> Result<History, ListError> {
    let (found, warnings) = find_bundles(dir)?;
    let mut h = History {
        warnings,
        ..History::default()
    };
    let mut folders: Vec<PathBuf> = Vec::new();
    for (path, kind) in found {
        match kind {
            BundleKind::Folder => folders.push(path),
            BundleKind::Archive => h.archives_skipped += 1,
        }
    }
    folders.sort();
    for b in folders {
        match read_bundle(&b) {
            Ok(ts) => h.add_bundle(
                ts.into_iter()
                    .filter(|t| hosts.is_none_or(|hs| hs.contains(&t.host)))
                    .collect(),
            ),
            Err(e) => h.warnings.push(format!("timings not read: {e}")),
        }
    }
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(host: &str, kind: &str, secs: &str) -> String {
        format!(
            r#"{{"host":"{host}","kind":"{kind}","fs_type":"ext4","on":"ext4","secs":{secs},"prior_secs":45.0}}"#
        )
    }

    #[test]
    fn lines_that_do_not_parse_or_make_no_sense_are_skipped() {
        let text = [
            line("lab1", "setup", "3.5"),
            line("lab1", "setup", "-1"),
            line("lab1", "warp", "1"),
            "{\"host\":\"lab1\",\"kind\":\"setup\",\"fs_ty".to_string(),
            line("lab2", "teardown", "1e400"),
            line("lab2", "teardown", "0.5"),
        ]
        .join("\n");
        let ts = parse_lines(&text);
        assert_eq!(ts.len(), 2, "{ts:?}");
        assert_eq!((ts[0].kind, ts[0].secs), (WorkKind::Setup, 3.5));
        assert_eq!(
            (ts[1].host.as_str(), ts[1].kind),
            ("lab2", WorkKind::Teardown)
        );
    }

    #[test]
    fn a_planted_link_or_fifo_is_not_read_and_a_bundle_elsewhere_is_said() {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("secret");
        std::fs::write(&secret, line("lab1", "setup", "1") + "\n").unwrap();
        for (name, plant) in [("link", "link"), ("fifo", "fifo")] {
            let data = dir.path().join("b").join(name).join("data");
            std::fs::create_dir_all(&data).unwrap();
            std::fs::write(dir.path().join("b").join(name).join("bagit.txt"), "").unwrap();
            let target = data.join(TIMINGS_JSONL);
            match plant {
                "link" => std::os::unix::fs::symlink(&secret, &target).unwrap(),
                _ => {
                    let c = std::ffi::CString::new(target.to_str().unwrap()).unwrap();
                    // SAFETY: a valid C string; mkfifo has no other precondition.
                    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
                }
            }
        }
        // Neither is read (nor blocks on the FIFO); each is said.
        let h = history(&dir.path().join("b"), None).unwrap();
        assert!(h.by_host.is_empty(), "{:?}", h.by_host);
        assert_eq!(h.warnings.len(), 2, "{:?}", h.warnings);
    }

    #[test]
    fn history_reads_bundle_folders_under_a_folder_for_the_named_hosts() {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in [
            (
                "a",
                line("lab1", "setup", "2") + "\n" + &line("other", "setup", "9"),
            ),
            ("b", line("lab1", "load", "4")),
        ] {
            let data = dir.path().join("x").join(name).join("data");
            std::fs::create_dir_all(&data).unwrap();
            std::fs::write(dir.path().join("x").join(name).join("bagit.txt"), "").unwrap();
            std::fs::write(data.join(TIMINGS_JSONL), text + "\n").unwrap();
        }
        // A bundle without timings counts, and gives none.
        std::fs::create_dir_all(dir.path().join("c")).unwrap();
        std::fs::write(dir.path().join("c/bagit.txt"), "").unwrap();
        let hosts: BTreeSet<String> = ["lab1".to_string()].into();
        let h = history(dir.path(), Some(&hosts)).unwrap();
        assert_eq!(h.bundles, 3);
        assert_eq!(h.of("lab1").len(), 2);
        assert!(h.of("other").is_empty());
        assert_eq!(h.count_for(["lab1", "lab2"]), 2);
    }
}
