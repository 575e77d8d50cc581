//! Where host workers put what they produce: results into the one bundle
//! (behind a mutex; writes are small and fsync'd, the lock is never held
//! across an await) and events to the display.  `check` and
//! `plan --commands` use a sink without a bundle.
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use super::events::{Outcome, RunEvent};
use crate::eta::{work_of_host, Estimate, HostEta, Timing, Work};
use crate::model::{CellResult, CellStatus, RESULT_SCHEMA};
use crate::plan::{cell_secs, Cell};
use crate::results::bundle::journal::SweepStatus;
use crate::results::bundle::timings::TIMINGS_JSONL;
use crate::results::bundle::writer::check_payload_path;
use crate::results::bundle::Bundle;
use crate::results::BundleError;

pub struct Sink {
    /// `None`: nothing is recorded.
    pub bundle: Option<Mutex<Bundle>>,
    pub events: mpsc::UnboundedSender<RunEvent>,
    /// Set when a cell could not be recorded (the bundle's disk is full or
    /// failing): from then on no new step starts anywhere (workers treat it
    /// as an interrupt), since a result that cannot be kept is not worth a
    /// disk format.  The bundle stays valid up to its last recorded cell;
    /// `resume` completes it once the disk has room.
    pub broken: std::sync::OnceLock<String>,
    /// Each host's ETA, learning as its work ends ([`Sink::eta_begin`]).
    eta: Mutex<EtaBook>,
}

/// The hosts' ETAs and the sweep's start.
struct EtaBook {
    started: Instant,
    hosts: HashMap<String, (Instant, HostEta)>,
}

impl EtaBook {
    fn new() -> Self {
        EtaBook {
            started: Instant::now(),
            hosts: HashMap::new(),
        }
    }
}

impl Sink {
    /// A sink that records nothing and whose events nobody reads.
    pub fn discard() -> Sink {
        let (tx, _rx) = mpsc::unbounded_channel();
        Sink {
            bundle: None,
            events: tx,
            broken: std::sync::OnceLock::new(),
            eta: Mutex::new(EtaBook::new()),
        }
    }

    /// A sink around `bundle` whose events go to `events`.
    pub fn new(bundle: Bundle, events: mpsc::UnboundedSender<RunEvent>) -> Sink {
        Sink {
            bundle: Some(Mutex::new(bundle)),
            events,
            broken: std::sync::OnceLock::new(),
            eta: Mutex::new(EtaBook::new()),
        }
    }

    /// Why results can no longer be recorded, if they cannot.
    pub fn broken(&self) -> Option<&str> {
        self.broken.get().map(String::as_str)
    }

    pub fn emit(&self, e: RunEvent) {
        // The display may be gone (Ctrl-C); results still go to the bundle.
        let _ = self.events.send(e);
    }

    /// Start `host`'s ETA: its `cells` (those this sweep runs) as work,
    /// `history` its timings in earlier bundles.  The first estimate.
    pub fn eta_begin(
        &self,
        host: &str,
        cells: &[&Cell],
        guest: Option<crate::config::inventory::vm::Accel>,
        history: Vec<Timing>,
    ) -> Estimate {
        let now = Instant::now();
        let eta = HostEta::new(host, work_of_host(cells, guest), history);
        let first = eta.estimate(now);
        self.etas().hosts.insert(host.to_string(), (now, eta));
        first
    }

    fn etas(&self) -> std::sync::MutexGuard<'_, EtaBook> {
        self.eta.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Update `host`'s ETA with `f`; the timing it gives (work that ended)
    /// goes to the bundle's `timings.jsonl`, and the new estimate out as
    /// an event.  A host without an ETA (check, plan) is left alone.
    fn eta_update<T: IntoIterator<Item = Timing>>(
        &self,
        host: &str,
        f: impl FnOnce(&mut HostEta, Instant) -> T,
    ) {
        let now = Instant::now();
        let (timing, event) = {
            let mut book = self.etas();
            let sweep_start = book.started;
            let Some((host_start, eta)) = book.hosts.get_mut(host) else {
                return;
            };
            let timing = f(eta, now);
            let event = RunEvent::Eta {
                host: host.to_string(),
                estimate: eta.estimate(now),
                elapsed_s: now.duration_since(*host_start).as_secs_f64(),
                at_s: now.duration_since(sweep_start).as_secs_f64(),
            };
            (timing, event)
        };
        for t in timing {
            if self.broken().is_none() {
                if let Err(e) = self.with_bundle(|b| b.append_jsonl(TIMINGS_JSONL, &t)) {
                    // Only the ETA's history loses a line: not a reason to stop.
                    tracing::warn!(host, "timings not recorded: {e}");
                }
            }
        }
        self.emit(event);
    }

    /// `work` starts on `host` now.  No event: an estimate changes when
    /// work ends; displays count down in between.
    pub fn work_started(&self, host: &str, work: Work) {
        if let Some((_, eta)) = self.etas().hosts.get_mut(host) {
            eta.start(&work, Instant::now());
        }
    }

    /// `work` ended on `host` (`ok`: as it should, so its time is learned).
    pub fn work_ended(&self, host: &str, work: Work, ok: bool) {
        self.eta_update(host, |eta, now| eta.end(&work, ok, now));
    }

    /// `host`'s worker is done: nothing is left.
    pub fn eta_finish(&self, host: &str) {
        self.eta_update(host, |eta, _| {
            eta.finish();
            None::<Timing>
        });
    }

    fn with_bundle<T: Default>(
        &self,
        f: impl FnOnce(&mut Bundle) -> Result<T, BundleError>,
    ) -> Result<T, BundleError> {
        let Some(bundle) = &self.bundle else {
            return Ok(T::default());
        };
        let mut guard = match bundle.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        f(&mut guard)
    }

    pub fn write(&self, rel: &str, bytes: &[u8]) -> Result<(), BundleError> {
        self.with_bundle(|b| b.write(rel, bytes).map(|_| ()))
    }

    pub fn write_json(&self, rel: &str, v: &impl serde::Serialize) -> Result<(), BundleError> {
        self.with_bundle(|b| b.write_json(rel, v).map(|_| ()))
    }

    /// Close the bundle (once, after every worker ended).
    pub fn close(&self, status: SweepStatus) -> Result<(), BundleError> {
        self.with_bundle(|b| b.close(status).map(|_| ()))
    }

    /// Write a cell's files, its result.json, its results.jsonl line and
    /// the journal line that says it is finished — in that order, so the
    /// journal never names a file that could be lost.
    pub fn finish_cell(
        &self,
        result: &CellResult,
        cell: &Cell,
        files: &[(String, Vec<u8>)],
    ) -> Result<(), BundleError> {
        self.with_bundle(|b| {
            let id = &result.cell_id;
            b.write_json(&format!("cells/{id}/cell.json"), cell)?;
            for (name, bytes) in files {
                b.write(&format!("cells/{id}/{name}"), bytes)?;
            }
            b.write_json(&format!("cells/{id}/result.json"), result)?;
            b.append_jsonl("results.jsonl", result)?;
            b.cell_done_as(id, &result.status)?;
            Ok(())
        })
    }

    /// Record a cell's end (files, result, journal), count it, say it, and
    /// estimate the host's remaining time again.
    pub fn record(
        &self,
        cell: &Cell,
        result: &CellResult,
        files: &[(String, Vec<u8>)],
        tally: &mut HostTally,
    ) {
        let done = self.record_only(cell, result, files, tally) == Outcome::Done;
        self.eta_update(cell.host.as_str(), |eta, now| {
            eta.cell_ended(&cell.id, done, now)
        });
    }

    /// [`Sink::record`] without the new estimate (its caller gives one).
    fn record_only(
        &self,
        cell: &Cell,
        result: &CellResult,
        files: &[(String, Vec<u8>)],
        tally: &mut HostTally,
    ) -> Outcome {
        let host = cell.host.as_str().to_string();
        // A file name the bundle cannot hold (a host named it) fails this
        // cell, saying so; it must not stop the sweep as a full disk does.
        let (result, files) = storable(result, files);
        let (result, files) = (result.as_ref(), files.as_ref());
        // Once a record failed, nothing more is appended: a small write that
        // fits after a torn one would bury it mid-file (resume drops only a
        // torn last line).
        let recorded = match self.broken() {
            Some(_) => Ok(()),
            None => self.finish_cell(result, cell, files),
        };
        if let Err(e) = recorded {
            let first = self.broken.set(e.to_string()).is_ok();
            self.emit(RunEvent::Note {
                host: host.clone(),
                message: if first {
                    format!(
                        "failed to record cell {}: {e}; no new step starts on any host (a result that cannot be kept is not worth running); free space, then `fsmatrix resume` the bundle",
                        cell.id
                    )
                } else {
                    format!("failed to record cell {}: {e}", cell.id)
                },
            });
        }
        let outcome = Outcome::of(&result.status);
        tally.count(outcome);
        self.emit(RunEvent::CellEnded {
            host,
            cell: cell.id.clone(),
            outcome,
            planned: Duration::from_secs(cell_secs(cell)),
        });
        outcome
    }

    /// Record every cell in `cells` as not run, with `reason`; one new
    /// estimate for them all (a host that was not ready, or a sweep cut
    /// short, would otherwise say its ETA once per cell in the same instant).
    pub fn record_not_run(&self, cells: &[&Cell], reason: &str, tally: &mut HostTally) {
        for c in cells {
            let status = CellStatus::NotRun {
                reason: reason.to_string(),
            };
            self.record_only(c, &unrun(c, status), &[], tally);
        }
        let Some(first) = cells.first() else {
            return;
        };
        self.eta_update(first.host.as_str(), |eta, now| {
            cells
                .iter()
                .filter_map(|c| eta.cell_ended(&c.id, false, now))
                .collect::<Vec<_>>()
        });
    }

    /// Record every cell in `cells` as failed at `step` before any of them
    /// started (a guest that did not come up: `stderr_tail` holds the tail
    /// of its serial console); one new estimate for them all.
    pub fn record_failed(
        &self,
        cells: &[&Cell],
        step: &str,
        stderr_tail: &str,
        tally: &mut HostTally,
    ) {
        for c in cells {
            let status = CellStatus::Failed {
                step: step.to_string(),
                exit_status: None,
                stderr_tail: stderr_tail.to_string(),
            };
            self.record_only(c, &unrun(c, status), &[], tally);
        }
        let Some(first) = cells.first() else {
            return;
        };
        self.eta_update(first.host.as_str(), |eta, now| {
            cells
                .iter()
                .filter_map(|c| eta.cell_ended(&c.id, false, now))
                .collect::<Vec<_>>()
        });
    }

    /// Record an adaptive repeat that the CI target made unnecessary.
    pub fn record_not_needed(&self, c: &Cell, reason: &str, tally: &mut HostTally) {
        let status = CellStatus::NotNeeded {
            reason: reason.to_string(),
        };
        self.record(c, &unrun(c, status), &[], tally);
    }
}

/// A file of a cell: its name under the cell's folder and its bytes.
type CellFile = (String, Vec<u8>);

/// `result` and `files` without the files whose names the bundle cannot
/// hold; when there are any, the cell failed, naming them and why.  (The
/// usual case borrows both: a cell's files can be large.)
fn storable<'r>(
    result: &'r CellResult,
    files: &'r [(String, Vec<u8>)],
) -> (Cow<'r, CellResult>, Cow<'r, [CellFile]>) {
    let check = |name: &str| check_payload_path(&format!("cells/{}/{name}", result.cell_id));
    let bad: Vec<String> = files
        .iter()
        .filter_map(|(name, _)| check(name).err().map(|e| e.to_string()))
        .collect();
    if bad.is_empty() {
        return (Cow::Borrowed(result), Cow::Borrowed(files));
    }
    let mut failed = result.clone();
    failed.status = CellStatus::Failed {
        step: "collect".into(),
        exit_status: None,
        stderr_tail: format!(
            "the host gave a file name the bundle cannot store, so the cell is not kept as done: {}",
            bad.join("; ")
        ),
    };
    let good = files
        .iter()
        .filter(|(name, _)| check(name).is_ok())
        .cloned()
        .collect();
    (Cow::Owned(failed), Cow::Owned(good))
}

/// A cell that did not run: its result has no measures.
fn unrun(c: &Cell, status: CellStatus) -> CellResult {
    CellResult {
        schema: RESULT_SCHEMA,
        cell_id: c.id.clone(),
        params: c.params(),
        status,
        started: None,
        ended: None,
        sizes: None,
        init: None,
        fs_settings: None,
    }
}

/// What a host's worker ended with.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct HostTally {
    pub done: usize,
    pub failed: usize,
    pub not_run: usize,
    pub not_needed: usize,
}

impl HostTally {
    pub fn count(&mut self, o: Outcome) {
        match o {
            Outcome::Done => self.done += 1,
            Outcome::Failed => self.failed += 1,
            Outcome::NotRun => self.not_run += 1,
            Outcome::NotNeeded => self.not_needed += 1,
        }
    }
}

impl std::ops::Add for HostTally {
    type Output = HostTally;

    fn add(self, t: HostTally) -> HostTally {
        HostTally {
            done: self.done + t.done,
            failed: self.failed + t.failed,
            not_run: self.not_run + t.not_run,
            not_needed: self.not_needed + t.not_needed,
        }
    }
}
