//! Verify a bag: completeness (bagit.txt, manifests, Payload-Oxum) and every
//! checksum, naming each file that is missing, extra or changed.
//!
//! Needs nothing fsmatrix-specific beyond BagIt with sha256, so it also
//! checks bags other tools wrote; fsmatrix's own fields (Sweep-Status) are
//! reported when present.
use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use super::bag::{walk_files, BAGIT_FILE, BAG_INFO_FILE, MANIFEST_FILE, TAGMANIFEST_FILE};
use super::manifest::{self, sha256_file_with};
use crate::text::terminal_safe;

/// One thing wrong with a bag.  `path` is bag-relative.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// A required tag file is absent (bagit.txt fields, manifest, bag-info, tagmanifest).
    TagFileMissing { path: String },
    /// bagit.txt does not declare what RFC 8493 requires.
    BadDeclaration { what: String },
    /// A manifest or bag-info line that cannot be read.
    Malformed {
        file: String,
        line: usize,
        what: String,
    },
    /// A manifest names a path outside data/ (or with `..`).
    OutsidePayload { path: String },
    /// Listed in the manifest, not on disk.
    Missing { path: String },
    /// In data/, not in the manifest.
    Extra { path: String },
    /// Outside data/ (at the bag's top level or in another folder), and not
    /// listed in the tagmanifest: nothing vouches for it, and an archive or
    /// a signature would carry it unchecked.
    Unlisted { path: String },
    /// Payload file whose sha256 differs from the manifest.
    Changed {
        path: String,
        expected: String,
        actual: String,
    },
    /// Tag file (e.g. the manifest itself) whose sha256 differs from the tagmanifest.
    TagChanged {
        path: String,
        expected: String,
        actual: String,
    },
    /// Payload-Oxum in bag-info.txt does not match data/.
    Oxum { expected: String, actual: String },
    /// A file that exists but could not be read.
    Unreadable { path: String, what: String },
    /// A symbolic link or special file in the bag: never followed or read.
    Unsafe { what: String },
}

impl fmt::Display for Problem {
    /// Names and texts come from the bag (other people's files): each goes
    /// through [`terminal_safe`] so a file name cannot drive the terminal.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::Unsafe { what } => {
                write!(f, "unsafe: {}; refused, not followed", terminal_safe(what))
            }
            Problem::TagFileMissing { path } => {
                write!(f, "missing tag file: {}", terminal_safe(path))
            }
            Problem::BadDeclaration { what } => {
                write!(f, "bad bagit.txt: {}", terminal_safe(what))
            }
            Problem::Malformed { file, line, what } => write!(
                f,
                "malformed: {} line {line}: {}",
                terminal_safe(file),
                terminal_safe(what)
            ),
            Problem::OutsidePayload { path } => {
                write!(f, "outside data/: the manifest lists {path:?}")
            }
            Problem::Missing { path } => write!(f, "missing: {}", terminal_safe(path)),
            Problem::Extra { path } => {
                write!(f, "extra (not in the manifest): {}", terminal_safe(path))
            }
            Problem::Unlisted { path } => write!(
                f,
                "extra (outside data/ and not in {TAGMANIFEST_FILE}): {}",
                terminal_safe(path)
            ),
            Problem::Changed {
                path,
                expected,
                actual,
            } => write!(
                f,
                "changed: {}: expected sha256 {}, got {actual}",
                terminal_safe(path),
                terminal_safe(expected)
            ),
            Problem::TagChanged {
                path,
                expected,
                actual,
            } => write!(
                f,
                "changed tag file: {}: expected sha256 {} (tagmanifest), got {actual}",
                terminal_safe(path),
                terminal_safe(expected)
            ),
            Problem::Oxum { expected, actual } => write!(
                f,
                "payload-oxum: bag-info.txt says {} (bytes.files), data/ holds {actual}",
                terminal_safe(expected)
            ),
            Problem::Unreadable { path, what } => write!(
                f,
                "unreadable: {}: {}",
                terminal_safe(path),
                terminal_safe(what)
            ),
        }
    }
}

/// What [`verify`] found.
#[derive(Debug, Clone, PartialEq)]
pub struct VerifyReport {
    pub root: PathBuf,
    /// Payload files listed in the manifest, and their total size on disk.
    pub payload_files: u64,
    pub payload_bytes: u64,
    /// Tag files checked against the tagmanifest.
    pub tag_files: u64,
    /// bag-info.txt's Sweep-Status, when present (fsmatrix bags).
    pub sweep_status: Option<String>,
    /// In the order found: declarations, payload, then tag files.
    pub problems: Vec<Problem>,
}

impl VerifyReport {
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty()
    }
}

/// The folder is not a bag at all (no folder, no bagit.txt): exit 2.
#[derive(Debug, thiserror::Error)]
#[error("verify {}: {why}", path.display())]
pub struct NotABag {
    pub path: PathBuf,
    pub why: String,
}

/// Parse `Key: value` lines (with RFC 8493 continuation lines).
fn parse_tag_fields(text: &str, file: &str, problems: &mut Vec<Problem>) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        if line.starts_with([' ', '\t']) {
            match out.last_mut() {
                Some((_, v)) => {
                    v.push(' ');
                    v.push_str(line.trim());
                }
                None => problems.push(Problem::Malformed {
                    file: file.into(),
                    line: i + 1,
                    what: "continuation line before any field".into(),
                }),
            }
            continue;
        }
        match line.split_once(':') {
            Some((k, v)) => out.push((k.trim().to_owned(), v.trim().to_owned())),
            None => problems.push(Problem::Malformed {
                file: file.into(),
                line: i + 1,
                what: "not a `Label: value` line".into(),
            }),
        }
    }
    out
}

fn field<'a>(fields: &'a [(String, String)], key: &str) -> Option<&'a str> {
    fields
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(key))
        .map(|(_, v)| v.as_str())
}

enum Hashed {
    Ok(String, u64),
    Missing,
    Unreadable(String),
    Unsafe(String),
}

/// Hash `paths` (bag-relative) on `threads` threads.
fn hash_all(root: &Path, paths: &[String], threads: usize) -> Vec<Hashed> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Hashed>>> = Mutex::new((0..paths.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            s.spawn(|| {
                let mut buf = vec![0u8; 256 << 10];
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= paths.len() {
                        break;
                    }
                    let p = root.join(&paths[i]);
                    if let Some(why) = super::manifest::unsafe_entry(root, &paths[i]) {
                        if let Ok(mut r) = results.lock() {
                            r[i] = Some(Hashed::Unsafe(why));
                        }
                        continue;
                    }
                    let h = match sha256_file_with(&p, &mut buf) {
                        Ok((s, n)) => Hashed::Ok(s, n),
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Hashed::Missing,
                        Err(e) => Hashed::Unreadable(e.to_string()),
                    };
                    if let Ok(mut r) = results.lock() {
                        r[i] = Some(h);
                    }
                }
            });
        }
    });
    results
        .into_inner()
        .unwrap_or_else(|p| p.into_inner())
        .into_iter()
        .map(|h| h.unwrap_or(Hashed::Unreadable("not hashed".into())))
        .collect()
}

fn read_tag(root: &Path, name: &str, problems: &mut Vec<Problem>) -> Option<String> {
    if let Some(what) = super::manifest::unsafe_entry(root, name) {
        problems.push(Problem::Unsafe { what });
        return None;
    }
    match fs::read(root.join(name)) {
        Ok(b) => match String::from_utf8(b) {
            Ok(s) => Some(s),
            Err(_) => {
                problems.push(Problem::Unreadable {
                    path: name.into(),
                    what: "not UTF-8".into(),
                });
                None
            }
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            problems.push(Problem::TagFileMissing { path: name.into() });
            None
        }
        Err(e) => {
            problems.push(Problem::Unreadable {
                path: name.into(),
                what: e.to_string(),
            });
            None
        }
    }
}

/// The files outside data/ that nothing vouches for: every file there must
/// be listed in the tagmanifest (`tags`), but for the tagmanifest itself,
/// its signature and the tag files a bag must have (whose absence or
/// content is reported on its own).
fn unlisted_tag_files(dir: &Path, tags: &BTreeMap<String, String>, problems: &mut Vec<Problem>) {
    let exempt = [
        BAGIT_FILE,
        BAG_INFO_FILE,
        MANIFEST_FILE,
        TAGMANIFEST_FILE,
        super::signature::SIGNATURE_FILE,
    ];
    let entries = match fs::read_dir(dir).and_then(|rd| rd.collect::<Result<Vec<_>, _>>()) {
        Ok(e) => e,
        Err(e) => {
            problems.push(Problem::Unreadable {
                path: ".".into(),
                what: e.to_string(),
            });
            return;
        }
    };
    let mut found = Vec::new();
    for e in entries {
        let name = e.file_name().to_string_lossy().into_owned();
        if name == "data" {
            continue;
        }
        match e.file_type() {
            Ok(t) if t.is_dir() => {
                if let Err(err) = walk_files(&e.path(), &name, &mut found) {
                    problems.push(Problem::Unreadable {
                        path: name,
                        what: err.to_string(),
                    });
                }
            }
            _ => found.push(name),
        }
    }
    found.sort();
    for path in found {
        if !exempt.contains(&path.as_str()) && !tags.contains_key(&path) {
            problems.push(Problem::Unlisted { path });
        }
    }
}

/// Verify the bag at `dir`.  `Err` only when it is not a bag at all.
pub fn verify(dir: &Path) -> Result<VerifyReport, NotABag> {
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get().min(8));
    verify_with_threads(dir, threads)
}

pub fn verify_with_threads(dir: &Path, threads: usize) -> Result<VerifyReport, NotABag> {
    if !dir.is_dir() {
        return Err(NotABag {
            path: dir.to_owned(),
            why: "no such folder".into(),
        });
    }
    if !dir.join(BAGIT_FILE).is_file() {
        return Err(NotABag {
            path: dir.to_owned(),
            why: "it has no bagit.txt; give the bundle's top folder".into(),
        });
    }
    let mut problems = Vec::new();

    if let Some(text) = read_tag(dir, BAGIT_FILE, &mut problems) {
        let f = parse_tag_fields(&text, BAGIT_FILE, &mut problems);
        match field(&f, "BagIt-Version") {
            Some("1.0") | Some("0.97") => {}
            Some(v) => problems.push(Problem::BadDeclaration {
                what: format!("BagIt-Version {v:?}; 1.0 or 0.97 is understood"),
            }),
            None => problems.push(Problem::BadDeclaration {
                what: "no BagIt-Version".into(),
            }),
        }
        match field(&f, "Tag-File-Character-Encoding") {
            Some(e) if e.eq_ignore_ascii_case("UTF-8") => {}
            Some(e) => problems.push(Problem::BadDeclaration {
                what: format!("Tag-File-Character-Encoding {e:?}; UTF-8 is understood"),
            }),
            None => problems.push(Problem::BadDeclaration {
                what: "no Tag-File-Character-Encoding".into(),
            }),
        }
    }

    let mut oxum = None;
    let mut sweep_status = None;
    if let Some(text) = read_tag(dir, BAG_INFO_FILE, &mut problems) {
        let f = parse_tag_fields(&text, BAG_INFO_FILE, &mut problems);
        oxum = field(&f, "Payload-Oxum").map(str::to_owned);
        sweep_status = field(&f, "Sweep-Status").map(str::to_owned);
        if oxum.is_none() {
            problems.push(Problem::Malformed {
                file: BAG_INFO_FILE.into(),
                line: 0,
                what: "no Payload-Oxum".into(),
            });
        }
    }

    // Payload.
    let mut payload_files = 0;
    let mut payload_bytes = 0;
    if let Some(text) = read_tag(dir, MANIFEST_FILE, &mut problems) {
        let (entries, bad) = manifest::parse(&text);
        for b in bad {
            problems.push(Problem::Malformed {
                file: MANIFEST_FILE.into(),
                line: b.line,
                what: b.what,
            });
        }
        let mut listed: Vec<(String, String)> = Vec::new();
        for (path, sum) in entries {
            let inside = path.starts_with("data/")
                && path
                    .split('/')
                    .all(|p| !p.is_empty() && p != "." && p != "..");
            if inside {
                listed.push((path, sum));
            } else {
                problems.push(Problem::OutsidePayload { path });
            }
        }
        let paths: Vec<String> = listed.iter().map(|(p, _)| p.clone()).collect();
        let hashed = hash_all(dir, &paths, threads);
        for ((path, expected), h) in listed.iter().zip(hashed) {
            match h {
                Hashed::Ok(actual, n) => {
                    payload_files += 1;
                    payload_bytes += n;
                    if &actual != expected {
                        problems.push(Problem::Changed {
                            path: path.clone(),
                            expected: expected.clone(),
                            actual,
                        });
                    }
                }
                Hashed::Missing => problems.push(Problem::Missing { path: path.clone() }),
                Hashed::Unreadable(what) => problems.push(Problem::Unreadable {
                    path: path.clone(),
                    what,
                }),
                Hashed::Unsafe(what) => problems.push(Problem::Unsafe { what }),
            }
        }
        // Extra files, and the real Oxum of data/.
        let listed: BTreeMap<&str, ()> = paths.iter().map(|p| (p.as_str(), ())).collect();
        let mut on_disk = Vec::new();
        let data = dir.join("data");
        if data.is_dir() {
            if let Err(e) = walk_files(&data, "data", &mut on_disk) {
                problems.push(Problem::Unreadable {
                    path: "data".into(),
                    what: e.to_string(),
                });
            }
        } else {
            problems.push(Problem::TagFileMissing {
                path: "data/".into(),
            });
        }
        for what in super::manifest::unsafe_entries(dir) {
            let listed_already = problems
                .iter()
                .any(|p| matches!(p, Problem::Unsafe { what: w } if *w == what));
            if !listed_already {
                problems.push(Problem::Unsafe { what });
            }
        }
        let mut disk_bytes = 0u64;
        for p in &on_disk {
            disk_bytes += fs::metadata(dir.join(p)).map_or(0, |m| m.len());
            if !listed.contains_key(p.as_str()) {
                problems.push(Problem::Extra { path: p.clone() });
            }
        }
        if let Some(expected) = &oxum {
            let actual = format!("{disk_bytes}.{}", on_disk.len());
            if expected != &actual {
                problems.push(Problem::Oxum {
                    expected: expected.clone(),
                    actual,
                });
            }
        }
    }

    // Tag files.
    let mut tag_files = 0;
    if let Some(text) = read_tag(dir, TAGMANIFEST_FILE, &mut problems) {
        unlisted_tag_files(dir, &manifest::parse(&text).0, &mut problems);
        let (entries, bad) = manifest::parse(&text);
        for b in bad {
            problems.push(Problem::Malformed {
                file: TAGMANIFEST_FILE.into(),
                line: b.line,
                what: b.what,
            });
        }
        let mut names = Vec::new();
        for (path, sum) in entries {
            if path.starts_with("data/") || path.split('/').any(|p| p == ".." || p.is_empty()) {
                problems.push(Problem::OutsidePayload { path });
            } else {
                names.push((path, sum));
            }
        }
        let paths: Vec<String> = names.iter().map(|(p, _)| p.clone()).collect();
        for ((path, expected), h) in names.iter().zip(hash_all(dir, &paths, 1)) {
            match h {
                Hashed::Ok(actual, _) => {
                    tag_files += 1;
                    if &actual != expected {
                        problems.push(Problem::TagChanged {
                            path: path.clone(),
                            expected: expected.clone(),
                            actual,
                        });
                    }
                }
                Hashed::Missing => problems.push(Problem::TagFileMissing { path: path.clone() }),
                Hashed::Unreadable(what) => problems.push(Problem::Unreadable {
                    path: path.clone(),
                    what,
                }),
                Hashed::Unsafe(what) => problems.push(Problem::Unsafe { what }),
            }
        }
    }

    Ok(VerifyReport {
        root: dir.to_owned(),
        payload_files,
        payload_bytes,
        tag_files,
        sweep_status,
        problems,
    })
}
