//! The bundle's append-only journal (`journal.jsonl` in the bag root).
//!
//! One JSON object a line, each fsync'd before the call returns.  A cell's
//! `cell_done` line is written only after every file of the cell is fsync'd
//! and renamed, and carries their sha256: a resumed sweep trusts exactly the
//! cells whose files still hash to those values.
//!
//! The journal is a BagIt tag file: it changes while the sweep runs, so it is
//! listed in `tagmanifest-sha256.txt` only when the bundle is closed.
use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::BundleError;

pub const JOURNAL_FILE: &str = "journal.jsonl";

/// How a sweep ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SweepStatus {
    /// Every planned cell ran (done or failed) and was recorded.
    Complete,
    /// Stopped early (Ctrl-C, crash before resume, fatal error).
    Incomplete,
}

impl SweepStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            SweepStatus::Complete => "complete",
            SweepStatus::Incomplete => "incomplete",
        }
    }
}

/// How the cells recorded so far ended, by outcome (the names of
/// [`CellStatus::name`](crate::model::CellStatus::name)): a running total on
/// every `cell_done` line and the final one on `closed`, so that the
/// journal's last lines say how far a sweep got (`fsmatrix ls` reads only
/// the tail).  A cell re-run by `resume` is counted once, as it ended last.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CellTally {
    #[serde(default)]
    pub done: u64,
    #[serde(default)]
    pub failed: u64,
    #[serde(default)]
    pub not_run: u64,
    #[serde(default)]
    pub not_needed: u64,
}

impl CellTally {
    /// Count one cell that ended as `outcome` (an unknown name counts nowhere).
    pub fn add(&mut self, outcome: &str) {
        match outcome {
            "done" => self.done += 1,
            "failed" => self.failed += 1,
            "not_run" => self.not_run += 1,
            "not_needed" => self.not_needed += 1,
            _ => {}
        }
    }
}

/// One journal line.  Unknown events (from a newer fsmatrix) read as
/// [`JournalEvent::Other`] and are kept, not refused.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum JournalEvent {
    SweepStarted {
        matrix: String,
        /// RFC 3339 UTC.
        started: String,
        tool_version: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rerun_of: Option<String>,
    },
    /// Every file of the cell (bag-relative paths) with its sha256.
    CellDone {
        cell: String,
        files: BTreeMap<String, String>,
        /// How the cell ended (`done`, `failed`, `not_run`, `not_needed`);
        /// absent in journals written before outcomes were recorded.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        outcome: Option<String>,
        /// Every recorded cell so far by outcome, this one included; absent
        /// when some recorded cell's outcome is unknown.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tally: Option<CellTally>,
    },
    /// The bundle was opened again (resume) at this time.
    Reopened { at: String },
    Closed {
        status: SweepStatus,
        ended: String,
        /// Every recorded cell by outcome (as on the last `cell_done`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tally: Option<CellTally>,
    },
    #[serde(other)]
    Other,
}

/// The journal file, open for appending.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    file: File,
}

impl Journal {
    /// Open (creating if needed) for appending.
    pub fn open_append(path: &Path) -> Result<Self, BundleError> {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| BundleError::io("open the journal", path, e))?;
        Ok(Journal {
            path: path.to_owned(),
            file,
        })
    }

    /// Append one event as one line and fsync it.
    pub fn append(&mut self, event: &JournalEvent) -> Result<(), BundleError> {
        let mut line = serde_json::to_vec(event).map_err(|e| BundleError::Encode {
            what: "a journal line".into(),
            source: e,
        })?;
        line.push(b'\n');
        self.file
            .write_all(&line)
            .and_then(|()| self.file.sync_data())
            .map_err(|e| BundleError::io("append to the journal", &self.path, e))
    }
}

/// What [`read`] found: the events, and whether a torn last line (a crash
/// mid-write) was dropped.
#[derive(Debug, Clone, PartialEq)]
pub struct JournalRead {
    pub events: Vec<JournalEvent>,
    pub torn_tail: bool,
    /// Byte length of the intact lines (where a torn tail starts).
    pub intact_len: u64,
}

/// Read a journal back.  A last line without its newline is a torn write and
/// is dropped; any other unreadable line is an error naming its number.
pub fn read(path: &Path) -> Result<JournalRead, BundleError> {
    let bytes = std::fs::read(path).map_err(|e| BundleError::io("read the journal", path, e))?;
    let mut events = Vec::new();
    let mut pos = 0usize;
    let mut lineno = 0usize;
    let mut torn_tail = false;
    while pos < bytes.len() {
        lineno += 1;
        let Some(nl) = bytes[pos..].iter().position(|&b| b == b'\n') else {
            torn_tail = true;
            break;
        };
        let line = &bytes[pos..pos + nl];
        if !line.iter().all(|b| b.is_ascii_whitespace()) {
            let ev = serde_json::from_slice(line).map_err(|e| BundleError::Journal {
                path: path.to_owned(),
                line: lineno,
                what: e.to_string(),
            })?;
            events.push(ev);
        }
        pos += nl + 1;
    }
    Ok(JournalRead {
        events,
        torn_tail,
        intact_len: pos as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cell_done_line_has_the_agreed_shape() {
        let mut files = BTreeMap::new();
        files.insert("data/cells/ab/run-4-1.out".to_string(), "0".repeat(64));
        let ev = JournalEvent::CellDone {
            cell: "ab".into(),
            files,
            outcome: None,
            tally: None,
        };
        let s = serde_json::to_string(&ev).unwrap();
        assert_eq!(
            s,
            format!(
                r#"{{"event":"cell_done","cell":"ab","files":{{"data/cells/ab/run-4-1.out":"{}"}}}}"#,
                "0".repeat(64)
            )
        );
    }

    #[test]
    fn outcome_and_tally_are_added_and_old_lines_still_read() {
        let ev = JournalEvent::CellDone {
            cell: "ab".into(),
            files: BTreeMap::new(),
            outcome: Some("failed".into()),
            tally: Some(CellTally {
                done: 2,
                failed: 1,
                ..CellTally::default()
            }),
        };
        let s = serde_json::to_string(&ev).unwrap();
        assert_eq!(
            s,
            r#"{"event":"cell_done","cell":"ab","files":{},"outcome":"failed","tally":{"done":2,"failed":1,"not_run":0,"not_needed":0}}"#
        );
        assert_eq!(serde_json::from_str::<JournalEvent>(&s).unwrap(), ev);
        let old: JournalEvent = serde_json::from_str(
            r#"{"event":"closed","status":"complete","ended":"2026-01-01T00:00:00Z"}"#,
        )
        .unwrap();
        assert_eq!(
            old,
            JournalEvent::Closed {
                status: SweepStatus::Complete,
                ended: "2026-01-01T00:00:00Z".into(),
                tally: None
            }
        );
    }

    #[test]
    fn torn_tail_is_dropped_bad_middle_line_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("j.jsonl");
        std::fs::write(
            &p,
            "{\"event\":\"reopened\",\"at\":\"t\"}\n{\"event\":\"future_thing\",\"x\":1}\n{\"event\":\"clo",
        )
        .unwrap();
        let r = read(&p).unwrap();
        assert!(r.torn_tail);
        assert_eq!(r.events.len(), 2);
        assert_eq!(r.events[1], JournalEvent::Other);
        std::fs::write(&p, "{\"event\":\"reopened\",\"at\":\"t\"}\nnot json\n").unwrap();
        let e = read(&p).unwrap_err().to_string();
        assert!(e.contains("line 2"), "{e}");
    }
}
