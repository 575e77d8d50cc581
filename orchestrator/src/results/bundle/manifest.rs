//! sha256 helpers and BagIt manifest files (`<hex>  <path>` lines).
//!
//! Paths are written exactly as `sha256sum` prints them (two spaces, no
//! escaping), so `sha256sum -c manifest-sha256.txt` works inside a bag.  To
//! keep that true, [`check_rel_path`] refuses the characters that either
//! BagIt (`%`, CR, LF) or sha256sum (`\`) would have to escape.
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::text::hex;

/// Stream a file through sha256; returns (hex digest, size in bytes).
pub fn sha256_file(path: &Path) -> io::Result<(String, u64)> {
    sha256_file_with(path, &mut vec![0u8; 256 << 10])
}

/// [`sha256_file`] with a caller-owned read buffer (reused across many
/// small files, allocating one per file dominated verify's time).
pub fn sha256_file_with(path: &Path, buf: &mut [u8]) -> io::Result<(String, u64)> {
    let mut f = File::open(path)?;
    let mut h = Sha256::new();
    let mut n_total = 0u64;
    loop {
        let n = match f.read(buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        h.update(&buf[..n]);
        n_total += n as u64;
    }
    Ok((hex(&h.finalize()), n_total))
}

/// Check a bag-relative path (`data/cells/x/run-1-1.out`, `bag-info.txt`):
/// relative, `/`-separated, no empty, `.` or `..` part, no part starting with
/// the temp-file prefix, and no character that a manifest would have to escape.
pub fn check_rel_path(rel: &str) -> Result<(), String> {
    if rel.is_empty() {
        return Err("the path is empty".into());
    }
    if rel.starts_with('/') {
        return Err(format!(
            "{rel:?} is absolute; give a path relative to the bag"
        ));
    }
    for part in rel.split('/') {
        if part.is_empty() || part == "." || part == ".." {
            return Err(format!(
                "{rel:?} has an empty, `.` or `..` part; use plain names joined by `/`"
            ));
        }
        if part.starts_with(TMP_PREFIX) {
            return Err(format!("{rel:?} uses the reserved prefix {TMP_PREFIX:?}"));
        }
    }
    if let Some(c) = rel
        .chars()
        .find(|c| c.is_control() || *c == '\\' || *c == '%')
    {
        return Err(format!(
            "{rel:?} contains {c:?}; control characters, `\\` and `%` are not allowed in bundle paths"
        ));
    }
    Ok(())
}

/// Prefix of the temporary names files are written under before their rename.
pub const TMP_PREFIX: &str = ".fsmx-tmp.";

/// Render a manifest: sorted by path, `<hex>  <path>\n` each.
pub fn render(entries: &BTreeMap<String, String>) -> String {
    let mut s = String::new();
    for (path, sum) in entries {
        s.push_str(sum);
        s.push_str("  ");
        s.push_str(path);
        s.push('\n');
    }
    s
}

/// A manifest line that could not be read: its 1-based number and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadLine {
    pub line: usize,
    pub what: String,
}

/// Parse a manifest.  Accepts one or more spaces or a tab between the sum
/// and the path (RFC 8493 allows any whitespace), a `*` binary marker as
/// sha256sum writes it, and decodes BagIt's `%0A`, `%0D`, `%25`.
pub fn parse(text: &str) -> (BTreeMap<String, String>, Vec<BadLine>) {
    let mut out = BTreeMap::new();
    let mut bad = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.trim().is_empty() {
            continue;
        }
        let Some((sum, rest)) = line.split_once([' ', '\t']) else {
            bad.push(BadLine {
                line: i + 1,
                what: "no path after the checksum".into(),
            });
            continue;
        };
        let path = rest.trim_start_matches([' ', '\t']);
        let path = path.strip_prefix('*').unwrap_or(path);
        let sum = sum.to_ascii_lowercase();
        if sum.len() != 64 || !sum.bytes().all(|b| b.is_ascii_hexdigit()) {
            bad.push(BadLine {
                line: i + 1,
                what: format!("{sum:?} is not a sha256 (64 hex digits)"),
            });
            continue;
        }
        if path.is_empty() {
            bad.push(BadLine {
                line: i + 1,
                what: "no path after the checksum".into(),
            });
            continue;
        }
        let path = path
            .replace("%0A", "\n")
            .replace("%0a", "\n")
            .replace("%0D", "\r")
            .replace("%0d", "\r")
            .replace("%25", "%");
        if out.insert(path.clone(), sum).is_some() {
            bad.push(BadLine {
                line: i + 1,
                what: format!("{path:?} is listed twice"),
            });
        }
    }
    (out, bad)
}

/// Why the entry at bag-relative `rel` may not be read as a file of the
/// bag: a symbolic link anywhere on its path (it could point outside the
/// bag), or something that is not a regular file (a FIFO would hang the
/// reader, a device would read another disk).  `None` when it is a regular
/// file reached through folders only, or when it does not exist.
pub fn unsafe_entry(root: &Path, rel: &str) -> Option<String> {
    let mut p = root.to_path_buf();
    let parts: Vec<&str> = rel.split('/').filter(|c| !c.is_empty()).collect();
    for (i, part) in parts.iter().enumerate() {
        p.push(part);
        let m = match std::fs::symlink_metadata(&p) {
            Ok(m) => m,
            Err(_) => return None,
        };
        let last = i + 1 == parts.len();
        if m.file_type().is_symlink() {
            return Some(format!("{} is a symbolic link", parts[..=i].join("/")));
        }
        if !last && !m.is_dir() {
            return Some(format!("{} is not a folder", parts[..=i].join("/")));
        }
        if last && !m.is_file() {
            return Some(format!(
                "{} is not a regular file (a FIFO, socket, device or folder)",
                parts.join("/")
            ));
        }
    }
    None
}

/// Every symbolic link and special file under `root` (not followed), as
/// bag-relative paths with what they are: a bag that has any is refused
/// before anything reads, writes or deletes through it.
pub fn unsafe_entries(root: &Path) -> Vec<String> {
    fn walk(dir: &Path, rel: &str, out: &mut Vec<String>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let r = if rel.is_empty() {
                name
            } else {
                format!("{rel}/{name}")
            };
            match e.file_type() {
                Ok(t) if t.is_symlink() => out.push(format!("{r} is a symbolic link")),
                Ok(t) if t.is_dir() => walk(&e.path(), &r, out),
                Ok(t) if t.is_file() => {}
                _ => out.push(format!(
                    "{r} is not a regular file (a FIFO, socket or device)"
                )),
            }
        }
    }
    let mut out = Vec::new();
    walk(root, "", &mut out);
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rel_paths() {
        assert!(check_rel_path("data/cells/ab12/run-4-1.out").is_ok());
        for bad in [
            "",
            "/etc/passwd",
            "data/../x",
            "data//x",
            "data/./x",
            "data/a\nb",
            "data/a\\b",
            "data/100%",
            "data/.fsmx-tmp.x",
        ] {
            assert!(check_rel_path(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn parse_render_round_trip_and_bad_lines() {
        let mut m = BTreeMap::new();
        m.insert("data/b".to_string(), "a".repeat(64));
        m.insert("data/a b".to_string(), "b".repeat(64));
        let (back, bad) = parse(&render(&m));
        assert_eq!(back, m);
        assert!(bad.is_empty());
        let text = format!(
            "xyz  data/a\n{}\tdata/%25x\n{} *data/c\n",
            "c".repeat(64),
            "D".repeat(64)
        );
        let (m2, bad) = parse(&text);
        assert_eq!(bad.len(), 1);
        assert_eq!(bad[0].line, 1);
        assert_eq!(m2.get("data/%x"), Some(&"c".repeat(64)));
        assert_eq!(m2.get("data/c"), Some(&"d".repeat(64)));
    }
}
