//! `fsmatrix ls`: the bundles under a folder, folders and `.tar.zst`
//! archives alike, one [`BundleSummary`] each, read cheaply.
//!
//! What is read of a bundle folder: `bag-info.txt`, the first line of
//! `journal.jsonl` (its `sweep_started`) and the journal's last KiBs (from
//! 64 KiB, up to 1 MiB when the last lines say nothing yet), the names of
//! the folders in `data/hosts/`, `tagmanifest-sha256.txt.sig` if there is
//! one, and the size of every file (a `stat`, no read).  No cell's file is
//! opened: the journal's last `cell_done` or `closed` line carries the
//! running [`CellTally`].
//!
//! An archive is a tar stream compressed by zstd with no index, written in
//! the order the bundle's folder listed its files, so its tag files may
//! come last: it is decompressed once from start to end (the cheapest
//! correct way), the members other than the tag files skipped unread, the
//! journal kept as its first and last KiBs only.
//!
//! Other people's bundles are input: every read is bounded, nothing is read
//! through a symbolic link or from a FIFO, and a bundle that cannot be read
//! is listed with why ([`ListStatus::Unreadable`]) instead of failing the
//! listing.  Symbolic links met while walking are not followed.
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use super::bag::{BAGIT_FILE, BAG_INFO_FILE};
use super::journal::{CellTally, JournalEvent, SweepStatus, JOURNAL_FILE};

use super::signature::SIGNATURE_FILE as SIG_FILE;

mod table;
mod tarball;
pub use table::{render_table, short_size};
use tarball::summarize_archive;

/// The archives `fsmatrix archive` writes end so.
pub const ARCHIVE_SUFFIX: &str = ".tar.zst";

/// The most bytes read of `bag-info.txt` or of the signature.
const MAX_TAG_BYTES: u64 = 64 << 10;
/// The journal's first line (`sweep_started`) lies within this.
const HEAD_BYTES: usize = 8 << 10;
/// The journal's tail read first; grown ×4 up to [`MAX_TAIL_BYTES`] while
/// its lines say nothing of the sweep's state.
const TAIL_BYTES: u64 = 64 << 10;
const MAX_TAIL_BYTES: u64 = 1 << 20;
/// How deep folders are walked (a bind mount can loop without a link).
const MAX_DEPTH: usize = 32;

/// A bundle's state as `verify` and `resume` see it: the journal's sweep
/// status, or why the bundle could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListStatus {
    Complete,
    Incomplete,
    Unreadable(String),
}

impl ListStatus {
    /// `complete`, `incomplete`, `unreadable: <why>`.
    pub fn text(&self) -> String {
        match self {
            ListStatus::Complete => "complete".into(),
            ListStatus::Incomplete => "incomplete".into(),
            ListStatus::Unreadable(why) => format!("unreadable: {why}"),
        }
    }

    fn from_sweep(s: SweepStatus) -> Self {
        match s {
            SweepStatus::Complete => ListStatus::Complete,
            SweepStatus::Incomplete => ListStatus::Incomplete,
        }
    }
}

/// Whether a bundle is a folder or an archive of one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BundleKind {
    Folder,
    Archive,
}

impl BundleKind {
    pub fn as_str(self) -> &'static str {
        match self {
            BundleKind::Folder => "folder",
            BundleKind::Archive => "archive",
        }
    }
}

/// One row of `fsmatrix ls`.
#[derive(Debug, Clone, PartialEq)]
pub struct BundleSummary {
    /// The folder or archive, under the folder listed.
    pub path: PathBuf,
    pub kind: BundleKind,
    /// bag-info's `Matrix-Name`, else the journal's `sweep_started`.
    pub matrix: Option<String>,
    /// The folders of `data/hosts/`: every host the sweep reached.
    pub hosts: Vec<String>,
    /// When the sweep started (RFC 3339), as `matrix`.
    pub started: Option<String>,
    pub status: ListStatus,
    /// The journal ends with `closed` (no `resume` or run is under way or
    /// died since); an incomplete bundle that is not closed was killed, or
    /// is being written now.
    pub closed: bool,
    /// Recorded cells by outcome, from the journal's last line that has
    /// them; `None` when the journal does not say (written before outcomes
    /// were recorded).
    pub tally: Option<CellTally>,
    /// Sum of the files' sizes, and what the bundle takes on disk
    /// (allocated blocks, folders included: `du -s -B1`); for an archive,
    /// the archive file's.
    pub bytes: u64,
    pub disk_bytes: u64,
    /// `tagmanifest-sha256.txt.sig` is there.
    pub signed: bool,
    /// The signing key's fingerprint (`SHA256:…`), read from the signature
    /// (not verified: see `fsmatrix verify --allowed-signers`).
    pub signer: Option<String>,
    /// Why the signature could not be read, when it could not.
    pub signature_problem: Option<String>,
    /// The bundle this sweep re-ran (`run --from`): bag-info's `Rerun-Of`,
    /// else the journal's `sweep_started`.
    pub rerun_of: Option<String>,
}

impl BundleSummary {
    fn new(path: PathBuf, kind: BundleKind) -> Self {
        BundleSummary {
            path,
            kind,
            matrix: None,
            hosts: Vec::new(),
            started: None,
            status: ListStatus::Incomplete,
            closed: false,
            tally: None,
            bytes: 0,
            disk_bytes: 0,
            signed: false,
            signer: None,
            signature_problem: None,
            rerun_of: None,
        }
    }

    /// Mark unreadable, keeping the first reason.
    fn unreadable(&mut self, why: String) {
        if !matches!(self.status, ListStatus::Unreadable(_)) {
            self.status = ListStatus::Unreadable(why);
        }
    }

    /// The start as a time, for sorting.
    pub fn started_at(&self) -> Option<OffsetDateTime> {
        self.started
            .as_deref()
            .and_then(|s| OffsetDateTime::parse(s, &Rfc3339).ok())
    }

    /// The `--json` object: the table's fields, in full.
    pub fn json(&self) -> serde_json::Value {
        let n = |f: fn(&CellTally) -> u64| self.tally.as_ref().map(f);
        serde_json::json!({
            "path": self.path.to_string_lossy(),
            "kind": self.kind.as_str(),
            "matrix": self.matrix,
            "hosts": self.hosts,
            "started": self.started,
            "status": self.status.text(),
            "closed": self.closed,
            "done": n(|t| t.done),
            "failed": n(|t| t.failed),
            "not_run": n(|t| t.not_run),
            "not_needed": n(|t| t.not_needed),
            "bytes": self.bytes,
            "disk_bytes": self.disk_bytes,
            "signed": self.signed,
            "signer": self.signer,
            "signature_problem": self.signature_problem,
            "rerun_of": self.rerun_of,
        })
    }
}

/// What [`list`] found.
#[derive(Debug, Clone, Default)]
pub struct Listing {
    /// Oldest first; bundles whose start is unknown last, by path.
    pub bundles: Vec<BundleSummary>,
    /// Folders that could not be walked (listed without them).
    pub warnings: Vec<String>,
}

/// The folder to list cannot be read at all.
#[derive(Debug, thiserror::Error)]
#[error("list the bundles under {}: {why}", path.display())]
pub struct ListError {
    pub path: PathBuf,
    pub why: String,
}

/// Every bundle under `dir` (or `dir` itself, a bundle folder or archive),
/// summarised on up to 8 threads.
pub fn list(dir: &Path) -> Result<Listing, ListError> {
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get().min(8));
    list_with_threads(dir, threads)
}

pub fn list_with_threads(dir: &Path, threads: usize) -> Result<Listing, ListError> {
    let (found, warnings) = find_bundles(dir)?;
    let next = AtomicUsize::new(0);
    let done: Mutex<Vec<BundleSummary>> = Mutex::new(Vec::with_capacity(found.len()));
    std::thread::scope(|s| {
        for _ in 0..threads.clamp(1, found.len().max(1)) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some((path, kind)) = found.get(i) else {
                    break;
                };
                let b = summarize(path, *kind);
                if let Ok(mut d) = done.lock() {
                    d.push(b);
                }
            });
        }
    });
    let mut bundles = done.into_inner().unwrap_or_else(|p| p.into_inner());
    sort(&mut bundles);
    Ok(Listing { bundles, warnings })
}

/// Oldest first; an unknown start last; then by path.
pub fn sort(bundles: &mut [BundleSummary]) {
    bundles.sort_by_cached_key(|b| {
        let t = b.started_at();
        (t.is_none(), t, b.path.clone())
    });
}

fn is_archive_name(name: &std::ffi::OsStr) -> bool {
    name.to_string_lossy().ends_with(ARCHIVE_SUFFIX)
}

/// A folder holding `bagit.txt` (whatever it is) is a bundle.
fn is_bundle_folder(dir: &Path) -> bool {
    fs::symlink_metadata(dir.join(BAGIT_FILE)).is_ok()
}

/// The bundles under `dir`: bundle folders are not descended into, other
/// folders are; symbolic links are never followed.
/// The bundles found (path, kind) and the folders that could not be walked.
pub type Found = (Vec<(PathBuf, BundleKind)>, Vec<String>);

pub fn find_bundles(dir: &Path) -> Result<Found, ListError> {
    let err = |why: String| ListError {
        path: dir.to_owned(),
        why,
    };
    let meta = fs::metadata(dir).map_err(|e| err(e.to_string()))?;
    if meta.is_file() {
        return match dir.file_name() {
            Some(n) if is_archive_name(n) => {
                Ok((vec![(dir.to_owned(), BundleKind::Archive)], vec![]))
            }
            _ => Err(err(format!(
                "it is a file, neither a folder nor a {ARCHIVE_SUFFIX} archive"
            ))),
        };
    }
    if !meta.is_dir() {
        return Err(err("it is not a folder".into()));
    }
    if is_bundle_folder(dir) {
        return Ok((vec![(dir.to_owned(), BundleKind::Folder)], vec![]));
    }
    let mut found = Vec::new();
    let mut warnings = Vec::new();
    let mut stack = vec![(dir.to_owned(), 0usize)];
    while let Some((d, depth)) = stack.pop() {
        let entries = match fs::read_dir(&d) {
            Ok(e) => e,
            Err(e) if depth == 0 => return Err(err(e.to_string())),
            Err(e) => {
                warnings.push(format!("{}: not listed: {e}", d.display()));
                continue;
            }
        };
        for e in entries {
            let e = match e {
                Ok(e) => e,
                Err(e) => {
                    warnings.push(format!("{}: not listed entirely: {e}", d.display()));
                    break;
                }
            };
            let Ok(ft) = e.file_type() else { continue };
            let path = e.path();
            if ft.is_dir() {
                if is_bundle_folder(&path) {
                    found.push((path, BundleKind::Folder));
                } else if depth + 1 >= MAX_DEPTH {
                    warnings.push(format!(
                        "{}: not listed: more than {MAX_DEPTH} folders deep",
                        path.display()
                    ));
                } else {
                    stack.push((path, depth + 1));
                }
            } else if ft.is_file() && is_archive_name(&e.file_name()) {
                found.push((path, BundleKind::Archive));
            }
        }
    }
    Ok((found, warnings))
}

/// One bundle folder or archive; never fails: what cannot be read is said
/// in its status.
pub fn summarize(path: &Path, kind: BundleKind) -> BundleSummary {
    match kind {
        BundleKind::Folder => summarize_folder(path),
        BundleKind::Archive => summarize_archive(path),
    }
}

/// Open a regular file without following a link or blocking on a FIFO.
pub(crate) fn open_regular(path: &Path) -> io::Result<(File, fs::Metadata)> {
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    let m = f.metadata()?;
    if !m.is_file() {
        return Err(io::Error::other("not a regular file"));
    }
    Ok((f, m))
}

/// Why a tag file cannot be opened, in a few words (a link is `ELOOP`).
fn open_problem(name: &str, e: &io::Error) -> String {
    if e.raw_os_error() == Some(libc::ELOOP) {
        format!("{name} is a symbolic link")
    } else {
        format!("{name}: {e}")
    }
}

/// At most `max` bytes of `r`; more is an error naming `name`.
fn read_bounded(r: impl Read, max: u64, name: &str) -> Result<Vec<u8>, String> {
    let mut buf = Vec::new();
    r.take(max + 1)
        .read_to_end(&mut buf)
        .map_err(|e| format!("{name}: {e}"))?;
    if buf.len() as u64 > max {
        return Err(format!("{name} is larger than {} KiB", max >> 10));
    }
    Ok(buf)
}

/// A tag file of the folder: `Ok(None)` when absent.
fn read_tag(dir: &Path, name: &str) -> Result<Option<Vec<u8>>, String> {
    match open_regular(&dir.join(name)) {
        Ok((f, _)) => read_bounded(f, MAX_TAG_BYTES, name).map(Some),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(open_problem(name, &e)),
    }
}

fn summarize_folder(dir: &Path) -> BundleSummary {
    let mut s = BundleSummary::new(dir.to_owned(), BundleKind::Folder);
    let (bytes, disk) = tree_size(dir);
    s.bytes = bytes;
    s.disk_bytes = disk;
    s.hosts = host_folders(dir);
    match read_tag(dir, SIG_FILE) {
        Ok(Some(b)) => s.read_signature(Ok(&b)),
        Ok(None) => {}
        Err(why) => s.read_signature(Err(why)),
    }
    let info = read_tag(dir, BAG_INFO_FILE);
    let journal = match open_regular(&dir.join(JOURNAL_FILE)) {
        Ok((mut f, m)) => {
            let len = m.len();
            read_journal(len, |want| read_file_range(&mut f, len, want))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err(format!("it has no {JOURNAL_FILE}")),
        Err(e) => Err(open_problem(JOURNAL_FILE, &e)),
    };
    s.fill(info, journal);
    s
}

/// The bytes `want` of a file of `len` bytes.
fn read_file_range(f: &mut File, len: u64, want: Want) -> io::Result<Vec<u8>> {
    let (start, n) = match want {
        Want::Head => (0, (HEAD_BYTES as u64).min(len)),
        Want::Tail(w) => (len.saturating_sub(w), w.min(len)),
    };
    f.seek(SeekFrom::Start(start))?;
    let mut buf = vec![0u8; n as usize];
    f.read_exact(&mut buf)?;
    Ok(buf)
}

/// The sizes of the files under `dir` (as tar packs them), and the bytes
/// allocated to it and everything in it (as `du -s -B1`); links counted as
/// themselves, never followed.
fn tree_size(dir: &Path) -> (u64, u64) {
    let (mut bytes, mut disk) = (0u64, 0u64);
    if let Ok(m) = fs::symlink_metadata(dir) {
        disk = m.blocks().saturating_mul(512);
    }
    let mut stack = vec![(dir.to_owned(), 0usize)];
    while let Some((d, depth)) = stack.pop() {
        let Ok(entries) = fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let Ok(m) = e.metadata() else { continue };
            disk = disk.saturating_add(m.blocks().saturating_mul(512));
            if m.is_dir() {
                if depth < MAX_DEPTH {
                    stack.push((e.path(), depth + 1));
                }
            } else if m.is_file() {
                bytes = bytes.saturating_add(m.len());
            }
        }
    }
    (bytes, disk)
}

/// The folder names in `data/hosts/` (links and files left out, none
/// followed), sorted.
fn host_folders(bundle: &Path) -> Vec<String> {
    let data = bundle.join("data");
    let dir = data.join("hosts");
    let real_dir = |p: &Path| fs::symlink_metadata(p).is_ok_and(|m| m.is_dir());
    if !(real_dir(&data) && real_dir(&dir)) {
        return Vec::new();
    }
    let Ok(entries) = fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut hosts: Vec<String> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    hosts.sort();
    hosts
}

/// A part of the journal to read.
#[derive(Debug, Clone, Copy)]
enum Want {
    /// The first [`HEAD_BYTES`].
    Head,
    /// The last this many bytes (or all).
    Tail(u64),
}

/// What the journal's first and last lines say.
#[derive(Debug, Clone, Default, PartialEq)]
struct JournalFacts {
    matrix: Option<String>,
    started: Option<String>,
    rerun_of: Option<String>,
    /// The last state line: `Some(status)` when it is `closed`.
    closed: Option<SweepStatus>,
    tally: Option<CellTally>,
}

/// Read a journal of `len` bytes through `read`: its first line, then its
/// tail, grown while the tail's lines do not say where the sweep is.
fn read_journal(
    len: u64,
    mut read: impl FnMut(Want) -> io::Result<Vec<u8>>,
) -> Result<JournalFacts, String> {
    if len == 0 {
        return Err(format!("{JOURNAL_FILE} is empty"));
    }
    let mut facts = JournalFacts::default();
    let head = read(Want::Head).map_err(|e| format!("{JOURNAL_FILE}: {e}"))?;
    let first = head.split(|&b| b == b'\n').next().unwrap_or_default();
    match serde_json::from_slice::<JournalEvent>(first) {
        Ok(JournalEvent::SweepStarted {
            matrix,
            started,
            rerun_of,
            ..
        }) => {
            facts.matrix = Some(matrix);
            facts.started = Some(started);
            facts.rerun_of = rerun_of;
        }
        _ if head.len() as u64 == len && !head.contains(&b'\n') => {
            return Err(format!("{JOURNAL_FILE} has no complete line"));
        }
        _ => {
            return Err(format!(
                "{JOURNAL_FILE} does not start with a sweep_started line"
            ))
        }
    }
    let mut want = TAIL_BYTES;
    loop {
        let tail = read(Want::Tail(want)).map_err(|e| format!("{JOURNAL_FILE}: {e}"))?;
        let whole = tail.len() as u64 >= len;
        match tail_state(&tail, whole)? {
            Some((closed, tally)) => {
                facts.closed = closed;
                facts.tally = tally;
                return Ok(facts);
            }
            None if whole || want >= MAX_TAIL_BYTES => {
                // Only unknown events at the end: nothing says it was closed.
                return Ok(facts);
            }
            None => want = (want * 4).min(MAX_TAIL_BYTES),
        }
    }
}

/// The status of the last `closed` line (`None`: the journal does not end
/// with one), and the last tally.
type TailState = (Option<SweepStatus>, Option<CellTally>);

/// The state the last lines of a journal give: whether the last state line
/// (`sweep_started`, `cell_done`, `reopened`, `closed`) is `closed`, and the
/// last tally.  `None` when no line of `tail` says either.  The first line
/// is partial unless `whole`; a last line without its newline is a torn
/// write and is left out, as `resume` does; any other line that is not an
/// event makes the journal unreadable.
fn tail_state(tail: &[u8], whole: bool) -> Result<Option<TailState>, String> {
    let mut lines: Vec<&[u8]> = tail.split(|&b| b == b'\n').collect();
    lines.pop(); // after the last newline: empty, or a torn line
    let skip = usize::from(!whole);
    let mut state: Option<Option<SweepStatus>> = None;
    let mut tally: Option<Option<CellTally>> = None;
    for line in lines.into_iter().skip(skip).rev() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let ev: JournalEvent = serde_json::from_slice(line).map_err(|e| {
            format!("{JOURNAL_FILE}: a line near its end is not a journal event ({e})")
        })?;
        match ev {
            JournalEvent::Closed {
                status, tally: t, ..
            } => {
                state.get_or_insert(Some(status));
                tally.get_or_insert(t);
            }
            JournalEvent::CellDone { tally: t, .. } => {
                state.get_or_insert(None);
                tally.get_or_insert(t);
            }
            JournalEvent::Reopened { .. } => {
                state.get_or_insert(None);
            }
            JournalEvent::SweepStarted { .. } => {
                // Nothing before it: no cell recorded.
                state.get_or_insert(None);
                tally.get_or_insert(Some(CellTally::default()));
            }
            JournalEvent::Other => {}
        }
        if let (Some(_), Some(_)) = (state, tally) {
            break;
        }
    }
    Ok(state.map(|s| (s, tally.flatten())))
}

/// `Label: value` lines of bag-info (continuation lines joined).
fn tag_fields(text: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        if line.starts_with([' ', '\t']) {
            if let Some((_, v)) = out.last_mut() {
                v.push(' ');
                v.push_str(line.trim());
            }
        } else if let Some((k, v)) = line.split_once(':') {
            out.push((k.trim().to_owned(), v.trim().to_owned()));
        }
    }
    out
}

impl BundleSummary {
    /// Fill in what bag-info and the journal say.  The status is the
    /// journal's: bag-info's Sweep-Status is the one of its last close,
    /// which a resume under way has not yet replaced.
    fn fill(
        &mut self,
        info: Result<Option<Vec<u8>>, String>,
        journal: Result<JournalFacts, String>,
    ) {
        match info {
            Ok(Some(bytes)) => {
                let text = String::from_utf8_lossy(&bytes);
                let f = tag_fields(&text);
                let get = |k: &str| {
                    f.iter()
                        .find(|(key, v)| key.eq_ignore_ascii_case(k) && !v.is_empty())
                        .map(|(_, v)| v.clone())
                };
                self.matrix = get("Matrix-Name");
                self.started = get("Sweep-Started");
                self.rerun_of = get("Rerun-Of");
            }
            Ok(None) => {}
            Err(why) => self.unreadable(why),
        }
        match journal {
            Ok(j) => {
                self.matrix = self.matrix.take().or(j.matrix);
                self.started = self.started.take().or(j.started);
                self.rerun_of = self.rerun_of.take().or(j.rerun_of);
                self.closed = j.closed.is_some();
                self.tally = j.tally;
                let status = j
                    .closed
                    .map_or(ListStatus::Incomplete, ListStatus::from_sweep);
                if !matches!(self.status, ListStatus::Unreadable(_)) {
                    self.status = status;
                }
            }
            Err(why) => self.unreadable(why),
        }
    }

    /// The signer's fingerprint from an armored sshsig; nothing is verified.
    fn read_signature(&mut self, bytes: Result<&[u8], String>) {
        use russh::keys::ssh_key::{HashAlg, SshSig};
        self.signed = true;
        let parsed = bytes.and_then(|b| {
            SshSig::from_pem(b.trim_ascii()).map_err(|e| format!("not an SSH signature ({e})"))
        });
        match parsed {
            Ok(sig) => {
                self.signer = Some(sig.public_key().fingerprint(HashAlg::Sha256).to_string());
            }
            Err(why) => self.signature_problem = Some(why),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(s: &str) -> Vec<u8> {
        s.as_bytes().to_vec()
    }

    #[test]
    fn the_tail_says_closed_only_when_the_last_state_line_is_closed() {
        let t = r#"{"event":"sweep_started","matrix":"m","started":"t","tool_version":"v"}
{"event":"cell_done","cell":"a","files":{},"outcome":"done","tally":{"done":1,"failed":0,"not_run":0,"not_needed":0}}
{"event":"closed","status":"incomplete","ended":"t","tally":{"done":1,"failed":0,"not_run":0,"not_needed":0}}
"#;
        let (closed, tally) = tail_state(&lines(t), true).unwrap().unwrap();
        assert_eq!(closed, Some(SweepStatus::Incomplete));
        assert_eq!(tally.unwrap().done, 1);
        let reopened = format!("{t}{{\"event\":\"reopened\",\"at\":\"t\"}}\n{{\"event\":\"cell_do");
        let (closed, tally) = tail_state(&lines(&reopened), true).unwrap().unwrap();
        assert_eq!(closed, None);
        assert_eq!(tally.unwrap().done, 1);
        // Cut mid-line (a tail window): the partial first line is skipped.
        let cut = &t[40..];
        let (closed, _) = tail_state(&lines(cut), false).unwrap().unwrap();
        assert_eq!(closed, Some(SweepStatus::Incomplete));
        // Unknown events only: nothing said yet.
        let unknown = "{\"event\":\"future\"}\n";
        assert_eq!(tail_state(&lines(unknown), true).unwrap(), None);
        // A garbage line that is not the torn last one.
        assert!(tail_state(b"{\"event\":\"closed\"\n{\n", true).is_err());
    }

    #[test]
    fn a_long_journal_is_read_from_both_ends_only() {
        let mut j = String::from(
            "{\"event\":\"sweep_started\",\"matrix\":\"big\",\"started\":\"2026-01-01T00:00:00Z\",\"tool_version\":\"v\",\"rerun_of\":\"old\"}\n",
        );
        for i in 0..20_000 {
            j.push_str(&format!(
                "{{\"event\":\"cell_done\",\"cell\":\"c{i}\",\"files\":{{}},\"outcome\":\"done\",\"tally\":{{\"done\":{},\"failed\":0,\"not_run\":0,\"not_needed\":0}}}}\n",
                i + 1
            ));
        }
        let bytes = j.into_bytes();
        let mut asked = Vec::new();
        let f = read_journal(bytes.len() as u64, |w| {
            asked.push(w);
            Ok(match w {
                Want::Head => bytes[..HEAD_BYTES.min(bytes.len())].to_vec(),
                Want::Tail(n) => bytes[bytes.len() - (n as usize).min(bytes.len())..].to_vec(),
            })
        })
        .unwrap();
        assert_eq!(f.matrix.as_deref(), Some("big"));
        assert_eq!(f.rerun_of.as_deref(), Some("old"));
        assert_eq!(f.closed, None);
        assert_eq!(f.tally.unwrap().done, 20_000);
        assert_eq!(asked.len(), 2, "{asked:?}");
        assert!(bytes.len() as u64 > 4 * TAIL_BYTES);
    }

    #[test]
    fn a_table_fits_its_width_cutting_the_widest_cells() {
        let mut b = BundleSummary::new(
            PathBuf::from("results/some/deeply/nested/folder/quick-20261201T100000Z"),
            BundleKind::Folder,
        );
        b.matrix = Some("a-rather-long-matrix-name-for-a-study".into());
        b.hosts = (1..=12).map(|i| format!("lab{i}")).collect();
        b.started = Some("2026-12-01T10:00:00.123Z".into());
        b.status = ListStatus::Complete;
        b.signed = true;
        b.signer = Some("SHA256:uNiVztksCsDhcc0u9e8BujQXVUpKZIDTMczCvj3tD2s".into());
        b.rerun_of = Some("a-rather-long-matrix-name-for-a-study-20261130T100000Z".into());
        b.tally = Some(CellTally {
            done: 1200,
            failed: 3,
            ..CellTally::default()
        });
        b.disk_bytes = 3 << 30;
        let t = render_table(&[b], Path::new("results"), 100);
        for l in t.lines() {
            assert!(l.chars().count() <= 100, "{}: {l}", l.chars().count());
        }
        let row = t.lines().nth(1).unwrap();
        assert!(row.starts_with("2026-12-01 10:00  complete"), "{t}");
        assert!(row.contains(" 1200       3  3.0G  "), "{t}");
        // The rest is cut, the bundle last and keeping its end.
        assert!(row.contains("  uNiVztks…  "), "{t}");
        assert!(row.ends_with("…0261201T100000Z"), "{t}");
        assert!(row.contains("  a-rat…  lab1…  "), "{t}");
        assert!(!row.contains("results/"), "{t}");
        // Nothing to cut: nothing cut, no SIGNER or RERUN OF column.
        let mut b = BundleSummary::new(
            PathBuf::from("r/quick-20261201T100000Z"),
            BundleKind::Folder,
        );
        b.matrix = Some("quick".into());
        b.status = ListStatus::Incomplete;
        let t = render_table(&[b], Path::new("r"), 100);
        assert_eq!(
            t,
            "STARTED (UTC)  STATUS      DONE  FAILED  SIZE  MATRIX  HOSTS  BUNDLE\n\
             -              incomplete     ?       ?    0B  quick   -      quick-20261201T100000Z\n"
        );
    }

    #[test]
    fn sizes_as_ls_writes_them() {
        assert_eq!(short_size(512), "512B");
        assert_eq!(short_size(4096), "4.0K");
        assert_eq!(short_size(140 << 10), "140K");
        assert_eq!(short_size(3 << 30), "3.0G");
        assert_eq!(short_size((10 << 20) - 1), "10M");
    }

    #[test]
    fn control_characters_do_not_reach_the_terminal() {
        let mut b = BundleSummary::new(PathBuf::from("x"), BundleKind::Folder);
        b.matrix = Some("evil\u{1b}[2J".into());
        let t = render_table(&[b], Path::new("."), 100);
        assert!(!t.contains('\u{1b}'), "{t}");
        assert!(t.contains("evil?[2J"), "{t}");
    }
}
