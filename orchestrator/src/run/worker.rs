//! One host's worker: the step sequence of a sweep, in one place.  Cells
//! come in plan order; one filesystem build per variant; teardown on every
//! path.  Generic over [`Remote`]: the SSH implementation runs real hosts,
//! and the recording one drives the very same sequence for
//! `plan --commands` and the unit tests.
//!
//! Per filesystem variant: teardown (leftovers of a killed run) → preflight
//! (the device guard) → make-fs → mount → pg-init → pg-start → per workload:
//! [upload its script] → load → sizes → per cell: drop-caches → counters →
//! run → collect → counters → … → pg-stop → teardown.  A SQL script has no
//! separate load: its run is the load, and its sizes follow each run.
use std::time::Duration;

use tokio::sync::watch;

use super::adaptive::Counted;
use super::calls::{fs_settings, resolve_scale, workload_file, Calls, HostPaths};
use super::counters;
use super::error::{device_full_note, StepError};
use super::events::RunEvent;
use super::facts::Kv;
use super::pgsettings::SettingUse;
use super::sink::{HostTally, Sink};
use super::verb::{run_timeout, scripts_for, Call, Step, Verb};
use crate::config::{FsType, Host};
use crate::eta::Work;
use crate::generator::measures::with_latency_log;
use crate::generator::{for_workload, LoadGenerator, RunShape};
use crate::model::{CellResult, CellStatus, FsSettings, InitTimings, Sizes, RESULT_SCHEMA};
use crate::plan::{Batch, Cell};
use crate::remote::{ExecOptions, ExecOutput, ExitStatus, Remote, RemoteCommand, RemoteError};
use crate::results::analysis::stats::Metric;
use crate::text::{json_pretty_bytes, now_rfc3339, sha256_hex, tail_lines};

mod cell;

/// A command's stderr without the lines that are for fsmatrix alone (the
/// persistent shell's process group, the live view's): what it said, for
/// the commands log and an error's tail.
fn said_stderr(stderr: &str) -> String {
    let mut out = String::new();
    for l in stderr
        .lines()
        .filter(|l| !l.starts_with("fsmatrix-pgid ") && !l.starts_with(LIVE_MARK))
    {
        out.push_str(l);
        out.push('\n');
    }
    out
}

/// How the scripts mark a line for the live view only (`progress=live`):
/// pgbench's `-P` lines, streamed as they come, never logged.
pub const LIVE_MARK: &str = "fsmatrix-live ";

/// The live view's callback for `cell`'s run on `host`: each marked
/// `progress:` line becomes a [`RunEvent::Tps`].
fn tps_events(
    events: tokio::sync::mpsc::UnboundedSender<RunEvent>,
    host: String,
    cell: String,
    generator: &'static dyn LoadGenerator,
) -> crate::remote::LineCallback {
    std::sync::Arc::new(move |stream, line| {
        if stream != crate::remote::OutputStream::Stderr {
            return;
        }
        let Some(rest) = line.strip_prefix(LIVE_MARK) else {
            return;
        };
        if let Some(p) = generator.live_sample(rest) {
            let _ = events.send(RunEvent::Tps {
                host: host.clone(),
                cell: cell.clone(),
                t_s: p.t_s,
                tps: p.tps,
                lat_ms: p.lat_ms,
            });
        }
    })
}

/// Separates facts' output from the guard's in one round trip.
const GUARD_MARK: &str = "@@fsmatrix-guard";

/// [`SAFE_DIRS`] in a subshell for `work` and `scripts`.
pub(crate) fn safe_dirs_command(work: &str, scripts: &str) -> RemoteCommand {
    RemoteCommand::raw("( set --")
        .arg(work)
        .arg(scripts)
        .raw_arg(";")
        .raw_arg(SAFE_DIRS)
        .raw_arg(")")
}

/// Are `$1` (work_dir) and `$2` (its scripts folder) safe to run from as
/// root?  Every command runs as root, so a folder another user owns or may
/// write in would let them swap a script between two verbs.  Each existing
/// ancestor of work_dir (links followed) must belong to root or to this
/// user and be writable by no one else unless sticky (`/var/tmp` is);
/// work_dir and the scripts folder, where they exist, must be real folders
/// of root's or this user's that no one else may write in.  Exit 77 and a
/// sentence on stderr otherwise.  Sourced in front of the first command
/// that runs a script (facts + guard) and of the work folder's creation.
const SAFE_DIRS: &str = "fsmx_me=$(id -u); \
fsmx_bad() { echo \"fsmatrix: refusing to run from $1: $2\" >&2; exit 77; }; \
fsmx_chk() { fsmx_ls=$(ls -ldn$3 -- \"$1\" 2>/dev/null) || return 0; set -- \"$1\" \"$2\" $fsmx_ls; \
[ \"$5\" = 0 ] || [ \"$5\" = \"$fsmx_me\" ] || fsmx_bad \"$1\" \"it belongs to uid $5, not to root or uid $fsmx_me\"; \
case $2:$3 in ancestor:?????????[tT]*) ;; *:?????w*|*:????????w*) fsmx_bad \"$1\" \"others may write in it ($3)\" ;; esac; }; \
fsmx_own() { if [ -L \"$1\" ]; then fsmx_bad \"$1\" 'it is a symbolic link'; fi; \
if [ -e \"$1\" ] && [ ! -d \"$1\" ]; then fsmx_bad \"$1\" 'it is not a folder'; fi; fsmx_chk \"$1\" own ''; }; \
fsmx_p=$1; while [ -n \"$fsmx_p\" ]; do fsmx_p=${fsmx_p%/*}; fsmx_chk \"${fsmx_p:-/}\" ancestor L; done; \
fsmx_own \"$1\"; fsmx_own \"$2\"";

/// What a host may send the worker: per command, per fetched file, per
/// cell (the constants of [`crate::timeouts`]; tests make them small).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputLimits {
    /// One verb's stdout.
    pub command: u64,
    /// One fetched file (`run.out`, a transaction log).
    pub fetch: u64,
    /// Every file fetched for one cell (or one load) together.
    pub cell: u64,
}

impl Default for OutputLimits {
    fn default() -> Self {
        OutputLimits {
            command: crate::timeouts::MAX_STDOUT,
            fetch: crate::timeouts::MAX_FETCH,
            cell: crate::timeouts::MAX_CELL_OUTPUT,
        }
    }
}

pub struct Worker<'a, R: Remote> {
    pub remote: &'a R,
    pub host: &'a Host,
    pub paths: HostPaths,
    pub sink: &'a Sink,
    pub cancel: watch::Receiver<bool>,
    pub counted: Counted,
    /// The device's identity as the sweep's checks read it (`facts`): every
    /// make-fs carries it, and the script refuses another disk found at the
    /// device path since.  `None` (facts did not give one): make-fs fails.
    pub ident: Option<String>,
    /// The identity of every device of the host, as `host.devices` lists
    /// them (for the batches of `order = "interleaved"`/`"random"`).
    pub idents: Vec<Option<String>>,
    /// What the host may send (see [`OutputLimits`]).
    pub limits: OutputLimits,
}

/// One filesystem variant's set-up, as far as it got.
#[derive(Default)]
struct FsState {
    log: String,
    settings: FsSettings,
    device_bytes: Option<u64>,
    /// A run of this variant timed out: its server (or device) stopped
    /// answering, so its other cells are not run; teardown still runs.
    hung: bool,
}

/// Why the cells after a timed-out run are not run.
const AFTER_HANG: &str = "not run: an earlier run of this filesystem variant timed out \
     (`run_timeout`: PostgreSQL or the device stopped answering), so the variant was \
     torn down; `fsmatrix resume` runs these cells";

/// What one workload's cells share: the load's timings, the sizes after it,
/// and the uploaded script.
struct WorkloadState {
    init: Option<InitTimings>,
    sizes: Option<Sizes>,
    script: Option<String>,
}

/// A run's raw output.
struct RawRun {
    status: Option<i32>,
    /// The verb's own clock around the run (`elapsed_ms`, common.sh
    /// `run_step`), which the workload cannot write.
    wall_ms: Option<f64>,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    /// `latency_log`: the gzipped per-transaction logs (file name, bytes).
    txlogs: Vec<(String, Vec<u8>)>,
}

impl<'a, R: Remote> Worker<'a, R> {
    fn calls(&self) -> Calls<'_> {
        Calls {
            host: self.host,
            paths: &self.paths,
        }
    }

    fn host_name(&self) -> String {
        self.host.name.as_str().to_string()
    }

    /// Interrupted, or the bundle can no longer record results.
    pub fn cancelled(&self) -> bool {
        *self.cancel.borrow() || self.sink.broken().is_some()
    }

    fn step(&self, step: impl Into<Step>, on: impl Into<String>) {
        self.sink.emit(RunEvent::Step {
            host: self.host_name(),
            step: step.into(),
            on: on.into(),
        });
    }

    /// `work` starts (for the ETA).
    fn work_started(&self, work: Work) {
        self.sink.work_started(self.host.name.as_str(), work);
    }

    /// `work` ended, `ok` or not (for the ETA).
    fn work_ended(&self, work: Work, ok: bool) {
        self.sink.work_ended(self.host.name.as_str(), work, ok);
    }

    /// [`Worker::set_up`] timed for the ETA.
    async fn set_up_timed(&self, c: &Cell, st: &mut FsState) -> Result<(), StepError> {
        let work = Work::Setup {
            variant: c.fs.name.as_str().to_string(),
        };
        self.work_started(work.clone());
        let r = self.set_up(c, st).await;
        self.work_ended(work, r.is_ok());
        r
    }

    fn note(&self, message: String) {
        self.sink.emit(RunEvent::Note {
            host: self.host_name(),
            message,
        });
    }

    /// Run a verb with its default timeout.
    async fn call(&self, call: &Call, log: &mut String) -> Result<Kv, StepError> {
        self.call_within(call, call.verb.timeout(), log)
            .await
            .map(|(kv, _)| kv)
    }

    /// Run a verb; its output goes to `log`.  A non-zero exit is an error.
    /// After an interrupt a cancellable verb is not started, and one that
    /// runs is abandoned; cleanup verbs always run to their end.
    async fn call_within(
        &self,
        call: &Call,
        timeout: Duration,
        log: &mut String,
    ) -> Result<(Kv, ExecOutput), StepError> {
        self.call_streaming(call, timeout, log, None).await
    }

    /// [`Worker::call_within`], its output lines also given to `on_line`
    /// as they come.  Lines the scripts mark for the live view
    /// ([`LIVE_MARK`]) stay out of `log`.
    async fn call_streaming(
        &self,
        call: &Call,
        timeout: Duration,
        log: &mut String,
        on_line: Option<crate::remote::LineCallback>,
    ) -> Result<(Kv, ExecOutput), StepError> {
        let step = Step::Verb(call.verb);
        let cancellable = call.verb.cancellable();
        if cancellable && self.cancelled() {
            return Err(StepError::interrupted(step));
        }
        let cmd = call.command(self.host, &self.paths.scripts);
        log.push_str(&format!("$ {}\n", cmd.to_shell().unwrap_or_default()));
        // Cleanup verbs get an SSH session of their own: they must work
        // even when the host's persistent shell is gone.
        let options = ExecOptions {
            own_session: call.verb.cleanup(),
            on_line,
            max_stdout: Some(self.limits.command),
            ..ExecOptions::with_timeout(timeout)
        };
        let exec = self.remote.exec(&cmd, options);
        let out = if cancellable {
            let mut cancel = self.cancel.clone();
            tokio::select! {
                r = exec => r,
                _ = wait_cancel(&mut cancel) => return Err(StepError::interrupted(step)),
            }
        } else {
            exec.await
        }
        .map_err(|e| StepError::remote(step, &e))?;
        log.push_str(&out.stdout_lossy());
        let said = said_stderr(&out.stderr_lossy());
        for l in said.lines() {
            log.push_str("! ");
            log.push_str(l);
            log.push('\n');
        }
        log.push_str(&format!("# {}\n", out.status));
        if !out.status.success() {
            // The error's stderr tail is what the script said, without
            // the live view's lines (a failed run's last seconds of tps).
            let shown = ExecOutput {
                stderr: said.into_bytes(),
                ..out
            };
            return Err(StepError::status(step, &shown));
        }
        Ok((Kv::parse(&out.stdout_lossy()), out))
    }

    /// Run a `cat` call and return what it printed: at most
    /// [`OutputLimits::fetch`] bytes, and at most `left` (what is left of
    /// the cell's [`OutputLimits::cell`], reduced by what came).  Past
    /// either the fetch is killed and fails, saying which limit and for
    /// what (`whose`: "cell X", "the load of …").
    async fn fetch_within(
        &self,
        call: Call,
        left: &mut u64,
        whose: &str,
    ) -> Result<Vec<u8>, StepError> {
        let cmd = call.command(self.host, &self.paths.scripts);
        let limit = self.limits.fetch.min(*left);
        let options = ExecOptions {
            max_stdout: Some(limit),
            ..ExecOptions::with_timeout(Verb::Cat.timeout())
        };
        let out = self
            .remote
            .exec(&cmd, options)
            .await
            .map_err(|e| StepError::remote(Step::Collect, &e))?;
        if matches!(out.status, ExitStatus::OutputLimit { .. }) && limit < self.limits.fetch {
            return Err(StepError::new(
                Step::Collect,
                format!(
                    "{} sent more than {} for {whose}, fsmatrix's limit for one cell's files                      (its output and transaction logs together); the fetch was killed and the                      rest not fetched",
                    self.host.name.as_str(),
                    crate::text::iec_bytes_short(self.limits.cell as f64)
                ),
            ));
        }
        if !out.status.success() {
            let mut e = StepError::status(Step::Collect, &out);
            if matches!(out.status, ExitStatus::OutputLimit { .. }) {
                e.message = format!(
                    "{} fetching a file for {whose}: {}",
                    self.host.name.as_str(),
                    e.message
                );
            }
            return Err(e);
        }
        *left = left.saturating_sub(out.stdout.len() as u64);
        Ok(out.stdout)
    }

    /// A run's (or a load's) stdout and stderr, within `left` (see
    /// [`Worker::fetch_within`]).
    async fn fetch_output(
        &self,
        out: &str,
        left: &mut u64,
        whose: &str,
    ) -> Result<(Vec<u8>, Vec<u8>), StepError> {
        let stdout = self
            .fetch_within(self.calls().cat(&format!("{out}/stdout")), left, whose)
            .await?;
        let stderr = self
            .fetch_within(self.calls().cat(&format!("{out}/stderr")), left, whose)
            .await?;
        Ok((stdout, stderr))
    }

    /// [`SAFE_DIRS`] for this host's work_dir and scripts folder.
    fn safe_dirs(&self) -> RemoteCommand {
        safe_dirs_command(&self.paths.work, &self.paths.scripts)
    }

    /// Upload the scripts (checked by sha256 on the host) once per sweep.
    pub async fn upload_scripts(&self) -> Result<(), RemoteError> {
        let Some(files) = scripts_for(self.host.os) else {
            return Ok(());
        };
        // work_dir must be traversable by pg_user (the mount point and the
        // socket folder live under it); the upload makes private folders.
        // Checked before it is made (a folder someone else made is refused,
        // never taken over) and after.
        let mk = self
            .safe_dirs()
            .raw_arg("&& { mkdir -p --")
            .arg(&self.paths.work)
            .raw_arg("&& chmod 0755 --")
            .arg(&self.paths.work)
            .raw_arg("; }")
            .and_then(&self.safe_dirs());
        self.remote
            .exec(&mk, ExecOptions::with_timeout(crate::timeouts::PROBE))
            .await?
            .success(self.host.name.as_str(), "create the work folder")?;
        for (name, body) in files {
            let path = format!("{}/{name}", self.paths.scripts);
            self.remote
                .upload_verified(&path, body.as_bytes(), 0o755)
                .await?;
        }
        Ok(())
    }

    /// `facts` and the device guard (`preflight`, read-only) in one round
    /// trip, after checking that the uploaded scripts are there and intact:
    /// `check` is the fast path users run most, and every SSH command costs
    /// the login shell's start-up (0.1-0.3 s with a heavy `.bashrc`).
    /// `Ok(None)`: the scripts must be uploaded first.
    pub async fn facts_and_guard(&self) -> Result<Option<(Kv, Result<Kv, StepError>)>, StepError> {
        let Some(files) = scripts_for(self.host.os) else {
            return Ok(None);
        };
        let dir = &self.paths.scripts;
        let cmd = self
            .safe_dirs()
            .raw_arg("&& cd --")
            .arg(dir)
            .raw_arg("2>/dev/null && { sha256sum -- *.sh 2>/dev/null || sha256 -r -- *.sh; }")
            .and_then(&self.calls().facts().command(self.host, dir))
            .and_then(&RemoteCommand::raw("echo").arg(GUARD_MARK))
            .and_then(&self.calls().preflight().command(self.host, dir));
        let out = self
            .remote
            .exec(&cmd, ExecOptions::with_timeout(Verb::Facts.timeout()))
            .await
            .map_err(|e| StepError::remote(Verb::Facts, &e))?;
        let text = out.stdout_lossy();
        let intact = files.iter().all(|(name, body)| {
            let want = sha256_hex(body.as_bytes());
            text.lines().any(|l| {
                let mut w = l.split_whitespace();
                w.next() == Some(want.as_str()) && w.next() == Some(name)
            })
        });
        if !intact {
            return Ok(None);
        }
        let Some((facts, guard)) = text.split_once(&format!("{GUARD_MARK}\n")) else {
            // facts itself failed: no marker.
            return Err(StepError::status(Verb::Facts, &out));
        };
        let guard = if out.status.success() {
            Ok(Kv::parse(guard))
        } else {
            Err(StepError::status(Verb::Preflight, &out))
        };
        Ok(Some((Kv::parse(facts), guard)))
    }

    /// `facts` for the host's devices.
    pub async fn facts(&self) -> Result<Kv, StepError> {
        self.call(&self.calls().facts(), &mut String::new()).await
    }

    /// Ask the host's PostgreSQL whether it accepts `uses` (read-only).
    pub async fn pg_check_settings(&self, uses: &[SettingUse]) -> Result<Kv, StepError> {
        self.call(&self.calls().pg_check_settings(uses), &mut String::new())
            .await
    }

    /// `vm-check` of `guest` on this (physical) host (read-only).
    pub async fn vm_check(
        &self,
        guest: &Host,
        vm: &crate::config::inventory::Vm,
    ) -> Result<Kv, StepError> {
        self.call(
            &super::guest::vm_check(guest, vm, self.host),
            &mut String::new(),
        )
        .await
    }

    /// The device guard alone (read-only).
    pub async fn guard(&self) -> Result<Kv, StepError> {
        self.call(&self.calls().preflight(), &mut String::new())
            .await
    }

    /// Run every cell of this host (they arrive in plan order).
    pub async fn run_cells(&self, cells: &[&Cell]) -> HostTally {
        let mut tally = HostTally::default();
        for group in runs_of(cells, |c| c.fs.name.as_str()) {
            if self.cancelled() {
                self.sink
                    .record_not_run(group, "interrupted before it started", &mut tally);
            } else {
                self.run_fs_group(group, &mut tally).await;
            }
        }
        tally
    }

    /// Run the cells of `order = "interleaved"`/`"random"` (in run order)
    /// batch by batch: every variant of a batch set up on its own device,
    /// then per workload its data loaded on each and the runs in the
    /// batch's order; at the end every device of the batch is torn down,
    /// on success, failure and interrupt alike.
    pub async fn run_batches(&self, cells: &[&Cell], batches: &[Batch]) -> HostTally {
        let mut tally = HostTally::default();
        for b in batches {
            let mine: Vec<&Cell> = cells
                .iter()
                .copied()
                .filter(|c| b.slots.iter().any(|s| s.variant == c.fs.name))
                .collect();
            if mine.is_empty() {
                continue;
            }
            if self.cancelled() {
                self.sink
                    .record_not_run(&mine, "interrupted before it started", &mut tally);
            } else {
                self.run_batch(b, &mine, &mut tally).await;
            }
        }
        tally
    }

    /// The worker of one slot of a batch: the same remote, sink and
    /// interrupt, the slot's paths (device, mount point, socket folder,
    /// port, pool: all derived from its index) and device identity.
    /// `host` is this host with the slot's port, for the counters' tunnel.
    fn for_slot<'b>(&'b self, host: &'b Host, paths: HostPaths) -> Worker<'b, R> {
        Worker {
            remote: self.remote,
            host,
            ident: self.idents.get(paths.slot as usize).cloned().flatten(),
            paths,
            sink: self.sink,
            cancel: self.cancel.clone(),
            counted: self.counted.clone(),
            idents: Vec::new(),
            limits: self.limits,
        }
    }

    async fn run_batch(&self, b: &Batch, cells: &[&Cell], tally: &mut HostTally) {
        let mut paths = Vec::new();
        for s in &b.slots {
            match self.paths.for_slot(self.host, s.index) {
                Some(p) if p.dev == s.device.as_str() && p.port == s.port => paths.push(p),
                _ => {
                    // A plan that does not match the inventory (a bundle
                    // edited by hand): nothing is touched.
                    let e = StepError::new(
                        Verb::Preflight,
                        format!(
                            "the plan puts {} on device {} port {}, which is not device {} of \
                             this host in the inventory: refused",
                            s.variant, s.device, s.port, s.index
                        ),
                    );
                    for c in cells {
                        self.record_failed(
                            c,
                            &e,
                            &now_rfc3339(),
                            None,
                            None,
                            &FsState::default(),
                            "",
                            tally,
                        );
                    }
                    return;
                }
            }
        }
        let hosts: Vec<Host> = paths
            .iter()
            .map(|p| {
                let mut h = self.host.clone();
                h.pg_port = p.port;
                h
            })
            .collect();
        let workers: Vec<Worker<'_, R>> = hosts
            .iter()
            .zip(paths)
            .map(|(h, p)| self.for_slot(h, p))
            .collect();
        let slot_of = |c: &Cell| b.slots.iter().position(|s| s.variant == c.fs.name);
        // Set up every variant of the batch; `None`: not set up (its cells
        // are recorded), `Some`: ready.
        let mut states: Vec<Option<FsState>> = Vec::new();
        for (k, w) in workers.iter().enumerate() {
            let of_k: Vec<&Cell> = cells
                .iter()
                .copied()
                .filter(|c| slot_of(c) == Some(k))
                .collect();
            let Some(first) = of_k.first() else {
                states.push(None);
                continue;
            };
            if self.cancelled() {
                self.sink
                    .record_not_run(&of_k, "interrupted before it started", tally);
                states.push(None);
                continue;
            }
            let mut st = FsState::default();
            let started = now_rfc3339();
            match w.set_up_timed(first, &mut st).await {
                Ok(()) => states.push(Some(st)),
                Err(e) => {
                    for c in &of_k {
                        w.record_failed(c, &e, &started, None, None, &st, "", tally);
                    }
                    w.finish_slot(first, st, false).await;
                    states.push(None);
                }
            }
        }
        for phase in runs_of(cells, |c| c.workload.name.as_str()) {
            let mut loaded: Vec<Option<WorkloadState>> = Vec::new();
            for (k, w) in workers.iter().enumerate() {
                let of_k: Vec<&Cell> = phase
                    .iter()
                    .copied()
                    .filter(|c| slot_of(c) == Some(k))
                    .collect();
                let (Some(first), Some(st)) = (of_k.first(), states[k].as_mut()) else {
                    loaded.push(None);
                    continue;
                };
                if st.hung {
                    self.sink.record_not_run(&of_k, AFTER_HANG, tally);
                    loaded.push(None);
                    continue;
                }
                if self.cancelled() {
                    self.sink
                        .record_not_run(&of_k, "interrupted before it started", tally);
                    loaded.push(None);
                    continue;
                }
                let started = now_rfc3339();
                match w.prepare_workload(first, st).await {
                    Ok(ws) => loaded.push(Some(ws)),
                    Err(e) => {
                        for c in &of_k {
                            w.record_failed(c, &e, &started, None, None, st, "", tally);
                        }
                        loaded.push(None);
                    }
                }
            }
            for c in phase {
                let Some(k) = slot_of(c) else { continue };
                if let (Some(st), Some(ws)) = (states[k].as_mut(), loaded[k].as_ref()) {
                    workers[k].cell_turn(c, st, ws, tally).await;
                }
            }
        }
        for (k, w) in workers.iter().enumerate() {
            let Some(st) = states[k].take() else { continue };
            let first = cells.iter().find(|c| slot_of(c) == Some(k));
            if let Some(first) = first {
                w.finish_slot(first, st, true).await;
            }
        }
    }

    /// A slot's end: PostgreSQL stopped (if it was started), the device torn
    /// down, the variant's setup log written.
    async fn finish_slot(&self, first: &Cell, mut st: FsState, started: bool) {
        let fs_name = first.fs.name.as_str();
        let work = Work::Teardown {
            variant: fs_name.to_string(),
        };
        self.work_started(work.clone());
        if started {
            self.step(Verb::PgStop, fs_name);
            if let Err(e) = self.call(&self.calls().pg_stop(), &mut st.log).await {
                self.note(format!("pg-stop failed: {}", e.message));
            }
        }
        self.teardown(Some(first.fs.fs_type), &mut st.log).await;
        self.work_ended(work, true);
        let rel = format!("hosts/{}/{}/setup.log", self.host.name.as_str(), fs_name);
        if let Err(e) = self.sink.write(&rel, st.log.as_bytes()) {
            self.note(format!("failed to write {rel}: {e}"));
        }
    }

    /// The device guard (read-only) on the host's device `slot`:
    /// `Err((device, why))` when it refuses.
    pub async fn guard_slot(&self, slot: u32) -> Result<(), (String, String)> {
        let Some(paths) = self.paths.for_slot(self.host, slot) else {
            return Err((
                format!("#{slot}"),
                "the host lists no such device, or its port pg_port + index is beyond 65535".into(),
            ));
        };
        let calls = Calls {
            host: self.host,
            paths: &paths,
        };
        self.call(&calls.preflight(), &mut String::new())
            .await
            .map(|_| ())
            .map_err(|e| (paths.dev.clone(), e.message))
    }

    /// Tear down the host's device `slot` (what a killed sweep of an
    /// interleaved or random order left there).
    pub async fn teardown_slot(&self, slot: u32, log: &mut String) {
        let Some(paths) = self.paths.for_slot(self.host, slot) else {
            return;
        };
        self.step(Verb::Teardown, paths.dev.clone());
        let calls = Calls {
            host: self.host,
            paths: &paths,
        };
        if let Err(e) = self.call(&calls.teardown(None), log).await {
            self.note(format!(
                "teardown of {} did not finish cleanly: {}",
                paths.dev, e.message
            ));
        }
    }

    async fn run_fs_group(&self, cells: &[&Cell], tally: &mut HostTally) {
        let first = cells[0];
        let mut st = FsState::default();
        let started = now_rfc3339();
        let set_up = match self.set_up_timed(first, &mut st).await {
            Err(e) => {
                for c in cells {
                    self.record_failed(c, &e, &started, None, None, &st, "", tally);
                }
                false
            }
            Ok(()) => {
                for wl in runs_of(cells, |c| c.workload.name.as_str()) {
                    if st.hung {
                        self.sink.record_not_run(wl, AFTER_HANG, tally);
                    } else {
                        self.run_workload(wl, &mut st, tally).await;
                    }
                }
                true
            }
        };
        self.finish_slot(first, st, set_up).await;
    }

    /// Teardown always runs: on success, failure and interrupt, and it is
    /// never cancelled (an interrupted teardown would leave the host dirty).
    pub async fn teardown(&self, fs: Option<FsType>, log: &mut String) {
        self.step(Verb::Teardown, "");
        if let Err(e) = self.call(&self.calls().teardown(fs), log).await {
            self.note(format!("teardown did not finish cleanly: {}", e.message));
        }
    }

    async fn set_up(&self, c: &Cell, st: &mut FsState) -> Result<(), StepError> {
        let name = c.fs.name.as_str();
        let calls = self.calls();
        // Leftovers of a killed run (a mounted fs, a running postgres) would
        // make the guard refuse the device: clean them first.
        self.teardown(Some(c.fs.fs_type), &mut st.log).await;
        self.step(Verb::Preflight, name);
        let kv = self.call(&calls.preflight(), &mut st.log).await?;
        st.device_bytes = kv.u64("dev_size_bytes");
        self.step(Verb::MakeFs, name);
        let ident = self.ident.as_deref().ok_or_else(|| {
            StepError::new(
                Verb::MakeFs,
                format!(
                    "the identity of {} is unknown (facts did not report it): \
                     refused rather than format a disk that may not be the one checked",
                    self.host.device().as_str()
                ),
            )
        })?;
        self.call(&calls.make_fs(c, ident), &mut st.log).await?;
        self.step(Verb::Mount, name);
        let kv = self
            .call(&calls.mount(c), &mut st.log)
            .await
            .map_err(|mut e| {
                if e.exit_status == Some(4) {
                    e.message = format!("the kernel refused a mount option: {}", e.message);
                }
                e
            })?;
        st.settings = fs_settings(&kv, c);
        self.step(Verb::PgInit, name);
        self.call(&calls.pg_init(c), &mut st.log).await?;
        self.step(Verb::PgStart, name);
        self.call(&calls.pg_start(), &mut st.log).await?;
        Ok(())
    }

    /// Record a failed cell; `cell_log` is what its own steps logged.
    #[allow(clippy::too_many_arguments)]
    fn record_failed(
        &self,
        c: &Cell,
        e: &StepError,
        started: &str,
        sizes: Option<Sizes>,
        init: Option<InitTimings>,
        st: &FsState,
        cell_log: &str,
        tally: &mut HostTally,
    ) {
        if e.interrupted {
            // Cut short by an interrupt, not failed: `resume` (or the next
            // agent) runs it again; its partial output is not kept.
            self.sink
                .record_not_run(&[c], "interrupted while it ran", tally);
            return;
        }
        let result = CellResult {
            schema: RESULT_SCHEMA,
            cell_id: c.id.clone(),
            params: c.params(),
            status: CellStatus::Failed {
                step: e.step.name().to_string(),
                exit_status: e.exit_status,
                stderr_tail: e.message.clone(),
            },
            started: Some(started.to_string()),
            ended: Some(now_rfc3339()),
            sizes,
            init,
            fs_settings: Some(st.settings.clone()),
        };
        let log = format!("{}{cell_log}", st.log).into_bytes();
        self.sink
            .record(c, &result, &[("setup.log".to_string(), log)], tally);
    }
}

fn generator_of(c: &Cell) -> &'static dyn LoadGenerator {
    for_workload(&c.workload.kind)
}

/// Consecutive runs of cells with the same key (cells come in plan order,
/// grouped by variant, then by workload).
fn runs_of<'c, 'a>(
    cells: &'c [&'a Cell],
    key: impl Fn(&Cell) -> &str + 'c,
) -> impl Iterator<Item = &'c [&'a Cell]> + 'c {
    cells.chunk_by(move |a, b| key(a) == key(b))
}

async fn wait_cancel(rx: &mut watch::Receiver<bool>) {
    loop {
        if *rx.borrow() {
            return;
        }
        if rx.changed().await.is_err() {
            // The sender is gone: nobody can cancel any more.
            futures::future::pending::<()>().await;
        }
    }
}
