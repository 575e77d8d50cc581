//! The bundle writer: one per sweep, owned by a single writer task.
//!
//! Layout (docs/formats.md, "Bundle"):
//! ```text
//! <out>/<matrix>-<yyyymmddThhmmssZ>/
//!   bagit.txt  bag-info.txt  manifest-sha256.txt  tagmanifest-sha256.txt
//!   journal.jsonl                      tag file; listed in the tagmanifest at close
//!   data/...                           payload: every file written through `write`
//! ```
//! Every payload file goes to a temporary name in its folder, is fsync'd,
//! renamed and its folder fsync'd; its sha256 is computed from the bytes
//! written and kept for the manifest.  `close` works at any point, so an
//! interrupted sweep still leaves a bag that verifies (marked incomplete).
use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;
use time::OffsetDateTime;

use super::bag::{
    fsync_dir, walk_files, write_atomic, BAGIT_FILE, BAGIT_TXT, BAG_INFO_FILE, MANIFEST_FILE,
    RESULTS_CSV, RESULTS_JSONL, TAGMANIFEST_FILE,
};
use super::journal::{self, CellTally, Journal, JournalEvent, SweepStatus, JOURNAL_FILE};
use super::manifest::{self, check_rel_path, sha256_file, TMP_PREFIX};
use super::BundleError;
use crate::config::values::{HostName, Label};
use crate::model::{CellResult, CellStatus, Sizes, CSV_HEADER};
use crate::text::{rfc3339, sha256_hex};

/// `fsmatrix <version>`, as written to bag-info.txt and the journal.
pub fn tool_version() -> String {
    format!("fsmatrix {}", env!("CARGO_PKG_VERSION"))
}

/// Options of [`Bundle::create_with`].
#[derive(Debug, Clone, Default)]
pub struct CreateOptions {
    /// The bundle this sweep re-runs (`fsmatrix run --from`), for bag-info's `Rerun-Of`.
    pub rerun_of: Option<String>,
}

#[derive(Debug)]
pub struct Bundle {
    root: PathBuf,
    matrix: String,
    started: String,
    rerun_of: Option<String>,
    journal: Journal,
    /// Bag-relative path → sha256 of payload files written by this process.
    written: BTreeMap<String, String>,
    /// Payload files appended to (jsonl): hashed at close.
    appended: BTreeSet<String>,
    done_cells: BTreeMap<String, BTreeMap<String, String>>,
    /// Recorded cells → how each ended (`None`: a journal line without it),
    /// for the running [`CellTally`]; a discarded cell leaves it.
    outcomes: BTreeMap<String, Option<String>>,
    events: Vec<JournalEvent>,
    closed: bool,
}

fn folder_stamp(t: OffsetDateTime) -> String {
    format!(
        "{:04}{:02}{:02}T{:02}{:02}{:02}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    )
}

/// A matrix name becomes a folder name: the matrix loader's own rule for
/// names ([`Label`]: letters, digits and `. _ + -`, not starting with `.`
/// or `-`), so that a name `plan` accepts never fails here mid-run.
fn check_matrix_name(name: &str) -> Result<(), BundleError> {
    Label::new(name)
        .map(|_| ())
        .map_err(|e| BundleError::BadName {
            name: name.to_owned(),
            why: e.0,
        })
}

/// Create the folders of `rel` (bag-relative, already checked) under `root`,
/// fsyncing each parent whose entry list changed.
fn ensure_parent_dirs(root: &Path, rel: &str) -> io::Result<PathBuf> {
    let mut dir = root.to_path_buf();
    let parts: Vec<&str> = rel.split('/').collect();
    for part in &parts[..parts.len() - 1] {
        let next = dir.join(part);
        match fs::create_dir(&next) {
            Ok(()) => fsync_dir(&dir)?,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
        dir = next;
    }
    Ok(dir)
}

/// The longest name of one file or folder the bundle writes (what Linux
/// and the BSDs allow, NAME_MAX): longer fails at the write, as an I/O
/// error that reads like a failing disk.
pub const MAX_NAME_BYTES: usize = 255;

fn data_rel(rel_under_data: &str) -> Result<String, BundleError> {
    let rel = format!("data/{rel_under_data}");
    let bad = |why: String| BundleError::BadPath {
        rel: rel_under_data.to_owned(),
        why,
    };
    check_rel_path(&rel).map_err(bad)?;
    if let Some(part) = rel.split('/').find(|p| p.len() > MAX_NAME_BYTES) {
        return Err(bad(format!(
            "a part of it is {} bytes long, over the {MAX_NAME_BYTES} a file name may have ({}…)",
            part.len(),
            part.chars().take(40).collect::<String>()
        )));
    }
    Ok(rel)
}

/// Whether `rel_under_data` can be written as a payload file
/// ([`Bundle::write`] checks the same before anything is written): a name
/// from a host is checked with this before its cell is recorded, so that a
/// bad one fails that cell rather than the bundle.
pub fn check_payload_path(rel_under_data: &str) -> Result<(), BundleError> {
    data_rel(rel_under_data).map(|_| ())
}

impl Bundle {
    /// Create `<out_dir>/<matrix>-<UTC yyyymmddThhmmssZ>/`; never reuses a folder.
    pub fn create(out_dir: &Path, matrix_name: &str) -> Result<Self, BundleError> {
        Self::create_with(out_dir, matrix_name, CreateOptions::default())
    }

    pub fn create_with(
        out_dir: &Path,
        matrix_name: &str,
        opts: CreateOptions,
    ) -> Result<Self, BundleError> {
        check_matrix_name(matrix_name)?;
        if let Some(r) = &opts.rerun_of {
            if r.chars().any(char::is_control) {
                return Err(BundleError::BadName {
                    name: r.clone(),
                    why: "Rerun-Of must be one line".into(),
                });
            }
        }
        let now = OffsetDateTime::now_utc();
        fs::create_dir_all(out_dir)
            .map_err(|e| BundleError::io("create the output folder", out_dir, e))?;
        let root = out_dir.join(format!("{matrix_name}-{}", folder_stamp(now)));
        match fs::create_dir(&root) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                return Err(BundleError::Exists { path: root })
            }
            Err(e) => return Err(BundleError::io("create the bundle folder", &root, e)),
        }
        fsync_dir(out_dir).map_err(|e| BundleError::io("fsync", out_dir, e))?;
        write_atomic(&root, BAGIT_FILE, BAGIT_TXT.as_bytes())
            .map_err(|e| BundleError::io("write bagit.txt in", &root, e))?;
        let data = root.join("data");
        fs::create_dir(&data).map_err(|e| BundleError::io("create", &data, e))?;
        let mut journal = Journal::open_append(&root.join(JOURNAL_FILE))?;
        fsync_dir(&root).map_err(|e| BundleError::io("fsync", &root, e))?;
        let started = rfc3339(now);
        let ev = JournalEvent::SweepStarted {
            matrix: matrix_name.to_owned(),
            started: started.clone(),
            tool_version: tool_version(),
            rerun_of: opts.rerun_of.clone(),
        };
        journal.append(&ev)?;
        Ok(Bundle {
            root,
            matrix: matrix_name.to_owned(),
            started,
            rerun_of: opts.rerun_of,
            journal,
            written: BTreeMap::new(),
            appended: BTreeSet::new(),
            done_cells: BTreeMap::new(),
            outcomes: BTreeMap::new(),
            events: vec![ev],
            closed: false,
        })
    }

    /// Open an existing bundle to continue it (resume): reads the journal
    /// back, drops a torn last line of the journal, of data/results.jsonl
    /// and of data/timings.jsonl (a crash mid-append), and records that it
    /// was reopened.
    pub fn open(dir: &Path) -> Result<Self, BundleError> {
        let not = |why: String| BundleError::NotABundle {
            path: dir.to_owned(),
            why,
        };
        if !dir.join(BAGIT_FILE).is_file() {
            return Err(not("it has no bagit.txt".into()));
        }
        // Nothing is read, written or deleted through a link or a FIFO.
        let unsafe_ = manifest::unsafe_entries(dir);
        if !unsafe_.is_empty() {
            return Err(not(format!(
                "it holds what a bundle may not (nothing was changed): {}",
                unsafe_.join("; ")
            )));
        }
        let jpath = dir.join(JOURNAL_FILE);
        if !jpath.is_file() {
            return Err(not(format!("it has no {JOURNAL_FILE}")));
        }
        let read = journal::read(&jpath)?;
        if read.torn_tail {
            truncate_to(&jpath, read.intact_len)?;
        }
        let Some(JournalEvent::SweepStarted {
            matrix,
            started,
            rerun_of,
            ..
        }) = read.events.first().cloned()
        else {
            return Err(not("its journal does not start with sweep_started".into()));
        };
        let mut done_cells = BTreeMap::new();
        let mut outcomes = BTreeMap::new();
        for ev in &read.events {
            if let JournalEvent::CellDone {
                cell,
                files,
                outcome,
                ..
            } = ev
            {
                done_cells.insert(cell.clone(), files.clone());
                outcomes.insert(cell.clone(), outcome.clone());
            }
        }
        // The files a sweep appends to: a line torn by the crash would glue
        // itself to the first line appended now, and both be lost.
        let mut appended = BTreeSet::new();
        for name in [RESULTS_JSONL, super::timings::TIMINGS_JSONL] {
            let path = dir.join("data").join(name);
            if path.is_file() {
                let bytes = fs::read(&path).map_err(|e| BundleError::io("read", &path, e))?;
                let intact = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
                if intact != bytes.len() {
                    truncate_to(&path, intact as u64)?;
                }
                appended.insert(format!("data/{name}"));
            }
        }
        fs::create_dir_all(dir.join("data"))
            .map_err(|e| BundleError::io("create", &dir.join("data"), e))?;
        let mut journal = Journal::open_append(&jpath)?;
        let ev = JournalEvent::Reopened {
            at: rfc3339(OffsetDateTime::now_utc()),
        };
        journal.append(&ev)?;
        let mut events = read.events;
        events.push(ev);
        Ok(Bundle {
            root: dir.to_owned(),
            matrix,
            started,
            rerun_of,
            journal,
            written: BTreeMap::new(),
            appended,
            done_cells,
            outcomes,
            events,
            closed: false,
        })
    }

    /// The bundle's folder.
    pub fn path(&self) -> &Path {
        &self.root
    }

    pub fn matrix_name(&self) -> &str {
        &self.matrix
    }

    /// Journal events read at open (or written since create), in order.
    pub fn journal_events(&self) -> &[JournalEvent] {
        &self.events
    }

    /// Cells recorded as done in the journal, with their files' sha256.
    pub fn done_cells(&self) -> &BTreeMap<String, BTreeMap<String, String>> {
        &self.done_cells
    }

    /// Whether every file the journal recorded for `cell` is present and
    /// still has its recorded sha256 (what a resume trusts).
    pub fn cell_files_intact(&self, cell: &str) -> bool {
        let Some(files) = self.done_cells.get(cell) else {
            return false;
        };
        files
            .iter()
            .all(|(rel, sum)| matches!(sha256_file(&self.root.join(rel)), Ok((s, _)) if &s == sum))
    }

    fn check_open(&self) -> Result<(), BundleError> {
        if self.closed {
            return Err(BundleError::Closed {
                path: self.root.clone(),
            });
        }
        Ok(())
    }

    /// Write a payload file at `data/<rel_under_data>` atomically; returns its sha256.
    pub fn write(&mut self, rel_under_data: &str, bytes: &[u8]) -> Result<String, BundleError> {
        self.check_open()?;
        let rel = data_rel(rel_under_data)?;
        if self.appended.contains(&rel) {
            return Err(BundleError::BadPath {
                rel: rel_under_data.to_owned(),
                why: "it is appended to with append_jsonl; write another file".into(),
            });
        }
        let dir = ensure_parent_dirs(&self.root, &rel)
            .map_err(|e| BundleError::io("create the folders of", &self.root.join(&rel), e))?;
        let name = rel.rsplit('/').next().unwrap_or(&rel);
        write_atomic(&dir, name, bytes)
            .map_err(|e| BundleError::io("write", &self.root.join(&rel), e))?;
        let sum = sha256_hex(bytes);
        self.written.insert(rel, sum.clone());
        Ok(sum)
    }

    /// Write `value` as pretty JSON (with a final newline) at `data/<rel>`.
    pub fn write_json(
        &mut self,
        rel_under_data: &str,
        value: &impl Serialize,
    ) -> Result<String, BundleError> {
        let mut bytes = serde_json::to_vec_pretty(value).map_err(|e| BundleError::Encode {
            what: rel_under_data.to_owned(),
            source: e,
        })?;
        bytes.push(b'\n');
        self.write(rel_under_data, &bytes)
    }

    /// Append `value` as one JSON line to `data/<rel>` (e.g. `results.jsonl`), fsync'd.
    pub fn append_jsonl(
        &mut self,
        rel_under_data: &str,
        value: &impl Serialize,
    ) -> Result<(), BundleError> {
        self.check_open()?;
        let rel = data_rel(rel_under_data)?;
        if self.written.contains_key(&rel) {
            return Err(BundleError::BadPath {
                rel: rel_under_data.to_owned(),
                why: "it was written whole with write; append to another file".into(),
            });
        }
        let mut line = serde_json::to_vec(value).map_err(|e| BundleError::Encode {
            what: format!("a line of {rel_under_data}"),
            source: e,
        })?;
        line.push(b'\n');
        let path = self.root.join(&rel);
        let dir = ensure_parent_dirs(&self.root, &rel)
            .map_err(|e| BundleError::io("create the folders of", &path, e))?;
        let existed = path.exists();
        let mut f = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| BundleError::io("open for appending", &path, e))?;
        f.write_all(&line)
            .and_then(|()| f.sync_data())
            .map_err(|e| BundleError::io("append to", &path, e))?;
        if !existed {
            fsync_dir(&dir).map_err(|e| BundleError::io("fsync", &dir, e))?;
        }
        self.appended.insert(rel);
        Ok(())
    }

    /// Remove a cell's folder and its `results.jsonl` line (a resume
    /// re-running a cell whose files do not verify starts it clean).
    pub fn discard_cell(&mut self, cell: &str) -> Result<(), BundleError> {
        self.check_open()?;
        let prefix = data_rel(&format!("cells/{cell}"))?;
        let dir = self.root.join(&prefix);
        if dir.exists() {
            fs::remove_dir_all(&dir).map_err(|e| BundleError::io("remove", &dir, e))?;
        }
        let p = format!("{prefix}/");
        self.written.retain(|k, _| !k.starts_with(&p));
        self.outcomes.remove(cell);
        // Its line in results.jsonl goes too, so the re-run's line is the only one.
        let jsonl = self.root.join("data").join(RESULTS_JSONL);
        if jsonl.is_file() {
            let text =
                fs::read_to_string(&jsonl).map_err(|e| BundleError::io("read", &jsonl, e))?;
            let kept: String = text
                .split_inclusive('\n')
                .filter(|line| {
                    serde_json::from_str::<serde_json::Value>(line)
                        .ok()
                        .and_then(|v| v.get("cell_id").and_then(|c| c.as_str().map(|c| c != cell)))
                        .unwrap_or(true)
                })
                .collect();
            if kept.len() != text.len() {
                let dir = self.root.join("data");
                write_atomic(&dir, RESULTS_JSONL, kept.as_bytes())
                    .map_err(|e| BundleError::io("rewrite", &jsonl, e))?;
            }
        }
        Ok(())
    }

    /// Record in the journal that `cell` is finished: every file written
    /// under `data/cells/<cell>/` with its sha256.  Call it after the cell's
    /// last file (its `result.json`) is written; those writes are already
    /// fsync'd, so the line never names a file that could be lost.
    pub fn cell_done(&mut self, cell: &str) -> Result<BTreeMap<String, String>, BundleError> {
        self.record_cell_done(cell, None)
    }

    /// [`Bundle::cell_done`] with how the cell ended: the journal line then
    /// carries the outcome and the running [`CellTally`] of every recorded
    /// cell, which `fsmatrix ls` reads from the journal's tail.
    pub fn cell_done_as(
        &mut self,
        cell: &str,
        status: &CellStatus,
    ) -> Result<BTreeMap<String, String>, BundleError> {
        self.record_cell_done(cell, Some(status.name()))
    }

    /// Every recorded cell by outcome; `None` when some outcome is unknown.
    pub fn tally(&self) -> Option<CellTally> {
        let mut t = CellTally::default();
        for o in self.outcomes.values() {
            t.add(o.as_deref()?);
        }
        Some(t)
    }

    fn record_cell_done(
        &mut self,
        cell: &str,
        outcome: Option<&str>,
    ) -> Result<BTreeMap<String, String>, BundleError> {
        self.check_open()?;
        let prefix = format!("{}/", data_rel(&format!("cells/{cell}"))?);
        let files: BTreeMap<String, String> = self
            .written
            .iter()
            .filter(|(k, _)| k.starts_with(&prefix))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if files.is_empty() {
            return Err(BundleError::BadPath {
                rel: format!("cells/{cell}/"),
                why: "no file of this cell was written; write its result.json first".into(),
            });
        }
        let before = self
            .outcomes
            .insert(cell.to_owned(), outcome.map(str::to_owned));
        let ev = JournalEvent::CellDone {
            cell: cell.to_owned(),
            files: files.clone(),
            outcome: outcome.map(str::to_owned),
            tally: self.tally(),
        };
        if let Err(e) = self.journal.append(&ev) {
            match before {
                Some(b) => self.outcomes.insert(cell.to_owned(), b),
                None => self.outcomes.remove(cell),
            };
            return Err(e);
        }
        self.done_cells.insert(cell.to_owned(), files.clone());
        Ok(files)
    }

    /// Finish the bag: `data/results.csv` from `data/results.jsonl`, the
    /// journal's `closed` line, `manifest-sha256.txt`, `bag-info.txt` and
    /// `tagmanifest-sha256.txt`.  Works at any point of a sweep; returns the
    /// bundle's folder.  Further writes are refused.
    pub fn close(&mut self, status: SweepStatus) -> Result<PathBuf, BundleError> {
        self.check_open()?;
        let data = self.root.join("data");
        remove_temp_files(&data)?;

        // results.jsonl always exists, so every bundle has the same layout.
        let jsonl_rel = format!("data/{RESULTS_JSONL}");
        let jsonl = self.root.join(&jsonl_rel);
        if !jsonl.exists() {
            self.write(RESULTS_JSONL, b"")?;
        }
        let csv = results_csv(&jsonl)?;
        self.write(RESULTS_CSV, &csv)?;

        let ended_t = OffsetDateTime::now_utc();
        let ended = rfc3339(ended_t);
        self.journal.append(&JournalEvent::Closed {
            status,
            ended: ended.clone(),
            tally: self.tally(),
        })?;

        // Payload manifest: what this process wrote is trusted as hashed at
        // write time; everything else (appended files, files of a previous
        // process) is hashed now.
        let mut files = Vec::new();
        walk_files(&data, "data", &mut files).map_err(|e| BundleError::io("list", &data, e))?;
        let mut entries = BTreeMap::new();
        let mut bytes_total = 0u64;
        for rel in &files {
            let path = self.root.join(rel);
            let sum = match self.written.get(rel) {
                Some(sum) if !self.appended.contains(rel) => {
                    let len = fs::metadata(&path)
                        .map_err(|e| BundleError::io("stat", &path, e))?
                        .len();
                    bytes_total += len;
                    sum.clone()
                }
                _ => {
                    let (sum, len) =
                        sha256_file(&path).map_err(|e| BundleError::io("hash", &path, e))?;
                    bytes_total += len;
                    sum
                }
            };
            entries.insert(rel.clone(), sum);
        }
        let root = self.root.clone();
        write_atomic(&root, MANIFEST_FILE, manifest::render(&entries).as_bytes())
            .map_err(|e| BundleError::io("write", &root.join(MANIFEST_FILE), e))?;

        let mut info = format!(
            "Bag-Software-Agent: {}\nBagging-Date: {:04}-{:02}-{:02}\nPayload-Oxum: {}.{}\n\
             Matrix-Name: {}\nSweep-Started: {}\nSweep-Ended: {}\nSweep-Status: {}\n",
            tool_version(),
            ended_t.year(),
            u8::from(ended_t.month()),
            ended_t.day(),
            bytes_total,
            entries.len(),
            self.matrix,
            self.started,
            ended,
            status.as_str(),
        );
        if let Some(r) = &self.rerun_of {
            info.push_str(&format!("Rerun-Of: {r}\n"));
        }
        write_atomic(&root, BAG_INFO_FILE, info.as_bytes())
            .map_err(|e| BundleError::io("write", &root.join(BAG_INFO_FILE), e))?;

        // A signature of the previous tagmanifest would be stale: the bundle
        // is signed again (`fsmatrix sign`, `resume --sign`) once closed.
        super::signature::remove_signature(&root).map_err(|e| {
            BundleError::io(
                "remove the stale signature",
                &root.join(super::signature::SIGNATURE_FILE),
                e,
            )
        })?;
        let mut tags = BTreeMap::new();
        for name in [BAGIT_FILE, BAG_INFO_FILE, MANIFEST_FILE, JOURNAL_FILE] {
            let path = root.join(name);
            let (sum, _) = sha256_file(&path).map_err(|e| BundleError::io("hash", &path, e))?;
            tags.insert(name.to_owned(), sum);
        }
        write_atomic(&root, TAGMANIFEST_FILE, manifest::render(&tags).as_bytes())
            .map_err(|e| BundleError::io("write", &root.join(TAGMANIFEST_FILE), e))?;
        self.closed = true;
        Ok(root)
    }
}

fn truncate_to(path: &Path, len: u64) -> Result<(), BundleError> {
    let f = OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|e| BundleError::io("open", path, e))?;
    f.set_len(len)
        .and_then(|()| f.sync_all())
        .map_err(|e| BundleError::io("truncate a torn last line of", path, e))
}

/// Remove temporary files a crashed writer left behind.
fn remove_temp_files(dir: &Path) -> Result<(), BundleError> {
    let mut files = Vec::new();
    walk_files(dir, "", &mut files).map_err(|e| BundleError::io("list", dir, e))?;
    for rel in files {
        let is_tmp = rel
            .rsplit('/')
            .next()
            .is_some_and(|n| n.starts_with(TMP_PREFIX));
        if is_tmp {
            let p = dir.join(rel.trim_start_matches('/'));
            fs::remove_file(&p).map_err(|e| BundleError::io("remove the temporary file", &p, e))?;
        }
    }
    Ok(())
}

/// Read `results.jsonl` as cell records (public for `report`).
pub fn read_results_jsonl(path: &Path) -> Result<Vec<CellResult>, BundleError> {
    let text = fs::read_to_string(path).map_err(|e| BundleError::io("read", path, e))?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let c = parse_cell_result(line).map_err(|what| BundleError::Results {
            path: path.to_owned(),
            line: i + 1,
            what,
        })?;
        out.push(c);
    }
    Ok(out)
}

/// One cell record from JSON text; a number that is not finite (`1e999`
/// overflows to infinity, JSON has no NaN) is refused with its field named.
pub fn parse_cell_result(text: &str) -> Result<CellResult, String> {
    let c: CellResult = serde_json::from_str(text).map_err(|e| {
        let field = e
            .to_string()
            .contains("number out of range")
            .then(|| json_key_before(text, e.line(), e.column()))
            .flatten();
        match field {
            Some(f) => format!("not a cell result: field {f:?} is not a finite number ({e})"),
            None => format!("not a cell result: {e}"),
        }
    })?;
    if let Some(f) = c.non_finite_field() {
        return Err(format!(
            "cell {}: field {f} is not a finite number",
            c.cell_id
        ));
    }
    if let Some(why) = c.sizes.as_ref().and_then(Sizes::invalid) {
        return Err(format!("cell {}: {why}", c.cell_id));
    }
    // The host name becomes a path (`data/hosts/<host>/`) for whoever
    // reads the bundle (`publish`, the agent): the inventory's own rule,
    // so that `../..` or `/etc` never leaves the bundle.
    if let Err(e) = HostName::new(&c.params.host) {
        return Err(format!("cell {}: field host: {e}", c.cell_id));
    }
    Ok(c)
}

/// The last `"key":` before 1-based `line`/`column` of `text`: the field a
/// serde_json error points into.
fn json_key_before(text: &str, line: usize, column: usize) -> Option<String> {
    let l = text.lines().nth(line.checked_sub(1)?)?;
    let upto = l.get(..column.min(l.len()))?;
    let colon = upto.rfind("\":")?;
    let open = upto[..colon].rfind('"')?;
    Some(upto[open + 1..colon].to_string())
}

fn results_csv(jsonl: &Path) -> Result<Vec<u8>, BundleError> {
    let cells = read_results_jsonl(jsonl)?;
    let mut w = csv::Writer::from_writer(Vec::new());
    let enc = |e: csv::Error| BundleError::Io {
        action: "render results.csv from",
        path: jsonl.to_owned(),
        source: io::Error::other(e.to_string()),
    };
    w.write_record(CSV_HEADER).map_err(enc)?;
    for c in &cells {
        w.write_record(c.csv_row()).map_err(enc)?;
    }
    w.into_inner().map_err(|e| BundleError::Io {
        action: "render results.csv from",
        path: jsonl.to_owned(),
        source: io::Error::other(e.to_string()),
    })
}
