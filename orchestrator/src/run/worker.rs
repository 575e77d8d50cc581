//! One host's worker: cells in plan order, one filesystem build per variant,
//! teardown on every path.  Generic over [`Remote`] so that the SSH
//! implementation runs real hosts and a recording one can test the logic.
//!
//! Per filesystem variant: teardown (leftovers of a killed run) → preflight
//! (the device guard) → make-fs → mount → pg-init → pg-start → per workload:
//! load → sizes → per cell: drop-caches → counters → run → counters →
//! collect → … → pg-stop → teardown.
use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::{mpsc, watch};

use super::counters;
use super::events::{Outcome, RunEvent};
use super::script::{scripts_dir, scripts_for, Call, Kv};
use crate::config::{FsType, Host, Length, Os, Scale, WorkloadKind};
use crate::load::{parse_init, parse_psql, parse_run};
use crate::plan::{cell_secs, Cell};
use crate::remote::{ExecOptions, ExecOutput, ExitStatus, Remote, RemoteCommand, RemoteError};
use crate::results::bundle::Bundle;
use crate::results::model::{
    CellParams, CellResult, CellStatus, FsSettings, InitTimings, Phase, ProgressSample,
    RunMeasures, Sizes,
};
use crate::results::BundleError;
use crate::text::{json_pretty_bytes as json_bytes, now_rfc3339, sha256_hex, tail_lines};

/// Separates facts' output from the guard's in one round trip.
const GUARD_MARK: &str = "@@fsmatrix-guard";

/// The pool name fsmatrix gives every ZFS pool it makes (the guard knows
/// `fsmx*` pools as its own).
pub const POOL: &str = "fsmx";
/// On-disk size of one pgbench scale unit (100 000 accounts rows with their
/// index, branches, tellers), measured ~15–16 MiB on ext4 with PostgreSQL 15;
/// used to turn `scale = "80%"` into a scale factor.
pub const BYTES_PER_SCALE: u64 = 16 * 1024 * 1024;

/// Where the worker's results and events go; shared by all workers.
pub struct Sink {
    /// `None` for `check`: nothing is recorded.
    pub bundle: Option<Mutex<Bundle>>,
    pub events: mpsc::UnboundedSender<RunEvent>,
}

impl Sink {
    pub fn emit(&self, e: RunEvent) {
        // The display may be gone (Ctrl-C); results still go to the bundle.
        let _ = self.events.send(e);
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
    pub fn close(&self, status: crate::results::journal::SweepStatus) -> Result<(), BundleError> {
        self.with_bundle(|b| b.close(status).map(|_| ()))
    }

    /// Write a cell's files, its result.json, its results.jsonl line and
    /// the journal line that says it is finished — in that order, so the
    /// journal never names a file that could be lost.
    pub fn finish_cell(
        &self,
        result: &CellResult,
        cell: Option<&Cell>,
        files: &[(String, Vec<u8>)],
    ) -> Result<(), BundleError> {
        self.with_bundle(|b| {
            let id = &result.cell_id;
            if let Some(c) = cell {
                b.write_json(&format!("cells/{id}/cell.json"), c)?;
            }
            for (name, bytes) in files {
                b.write(&format!("cells/{id}/{name}"), bytes)?;
            }
            b.write_json(&format!("cells/{id}/result.json"), result)?;
            b.append_jsonl("results.jsonl", result)?;
            b.cell_done(id)?;
            Ok(())
        })
    }
}

/// A step that failed, as a cell records it.
#[derive(Debug, Clone)]
pub struct StepError {
    pub step: String,
    pub exit_status: Option<i32>,
    pub message: String,
}

impl StepError {
    fn new(step: &str, message: impl Into<String>) -> Self {
        StepError {
            step: step.to_string(),
            exit_status: None,
            message: message.into(),
        }
    }

    fn remote(step: &str, e: RemoteError) -> Self {
        StepError::new(step, e.to_string())
    }

    fn status(step: &str, out: &ExecOutput) -> Self {
        let tail = out.stderr_tail(15);
        StepError {
            step: step.to_string(),
            exit_status: code(&out.status),
            message: format!("{}\n{tail}", out.status).trim_end().to_string(),
        }
    }
}

fn code(s: &ExitStatus) -> Option<i32> {
    match s {
        ExitStatus::Code { code } => i32::try_from(*code).ok(),
        _ => None,
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

/// Counted tps so far per (filesystem variant, workload, clients) on one
/// host: what adaptive repeats decide on.  A resumed sweep seeds it with the
/// kept cells' results.
#[derive(Debug, Default)]
pub struct Counted(Mutex<HashMap<(String, String, u32), Vec<f64>>>);

impl Counted {
    fn key(c: &Cell) -> (String, String, u32) {
        (
            c.fs.name.as_str().to_string(),
            c.workload.name.as_str().to_string(),
            c.clients,
        )
    }

    /// Remember a counted (not warm-up) repeat's tps.
    pub fn add(&self, c: &Cell, tps: f64) {
        if c.warmup {
            return;
        }
        let mut m = self.0.lock().unwrap_or_else(|p| p.into_inner());
        m.entry(Self::key(c)).or_default().push(tps);
    }

    /// Why cell `c` need not run: it is an adaptive repeat past `min` and the
    /// counted repeats of its group already have a 95% CI within the target.
    pub fn not_needed(&self, c: &Cell) -> Option<String> {
        if !c.is_conditional() {
            return None;
        }
        let a = c.adaptive?;
        let target = a.target_ci?;
        let m = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let xs = m.get(&Self::key(c))?;
        if xs.len() < a.min as usize {
            return None;
        }
        let half = crate::results::stats::summarize(xs)?.ci_rel_half_width()?;
        (half <= target.fraction()).then(|| {
            format!(
                "adaptive repeats: the {} counted repeats before it have a 95% CI of ±{:.2}% of the mean tps, within the target ±{target}",
                xs.len(),
                half * 100.0
            )
        })
    }

    /// After the last repeat an adaptive rule allows: a sentence when the CI
    /// is still wider than the target (the report flags such groups as noisy
    /// only by their CV, so the run says it).
    pub fn short_of_target(&self, c: &Cell) -> Option<String> {
        let a = c.adaptive?;
        let target = a.target_ci?;
        if c.warmup || c.repeat != a.max {
            return None;
        }
        let m = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let xs = m.get(&Self::key(c))?;
        let half = crate::results::stats::summarize(xs)
            .and_then(|s| s.ci_rel_half_width())
            .unwrap_or(f64::INFINITY);
        (half > target.fraction()).then(|| {
            format!(
                "{} {} c={}: {} counted repeats (max {}) leave the 95% CI at ±{:.2}% of the mean tps, wider than the target ±{target}",
                c.fs.name.as_str(),
                c.workload.name.as_str(),
                c.clients,
                xs.len(),
                a.max,
                half * 100.0
            )
        })
    }
}

pub fn params(c: &Cell) -> CellParams {
    CellParams {
        host: c.host.as_str().to_string(),
        filesystem: c.fs.name.as_str().to_string(),
        fs_type: c.fs.fs_type.as_str().to_string(),
        workload: c.workload.name.as_str().to_string(),
        clients: c.clients,
        jobs: c.jobs,
        repeat: c.repeat,
        warmup: c.warmup,
    }
}

/// Record every cell in `cells` as not run, with `reason`.
pub fn record_not_run(sink: &Sink, cells: &[&Cell], reason: &str, tally: &mut HostTally) {
    for c in cells {
        let status = CellStatus::NotRun {
            reason: reason.to_string(),
        };
        record_unrun(sink, c, status, Outcome::NotRun);
        tally.not_run += 1;
    }
}

/// Record an adaptive repeat that the CI target made unnecessary.
pub fn record_not_needed(sink: &Sink, c: &Cell, reason: &str, tally: &mut HostTally) {
    let status = CellStatus::NotNeeded {
        reason: reason.to_string(),
    };
    record_unrun(sink, c, status, Outcome::NotNeeded);
    tally.not_needed += 1;
}

/// A cell that did not run: its result (no measures) and its journal line.
fn record_unrun(sink: &Sink, c: &Cell, status: CellStatus, outcome: Outcome) {
    let result = CellResult {
        schema: crate::results::model::RESULT_SCHEMA,
        cell_id: c.id.clone(),
        params: params(c),
        status,
        started: None,
        ended: None,
        sizes: None,
        init: None,
        fs_settings: None,
    };
    if let Err(e) = sink.finish_cell(&result, Some(c), &[]) {
        sink.emit(RunEvent::Note {
            host: c.host.as_str().to_string(),
            message: format!("failed to record cell {}: {e}", c.id),
        });
    }
    sink.emit(RunEvent::CellEnded {
        host: c.host.as_str().to_string(),
        cell: c.id.clone(),
        outcome,
        planned: Duration::from_secs(cell_secs(c)),
    });
}

/// Paths on the host for this worker (under the inventory's work_dir).
#[derive(Debug, Clone)]
pub struct HostPaths {
    pub scripts: String,
    pub mnt: String,
    /// Socket and server log: short, for the 107-byte socket path limit.
    pub cell: String,
    pub runs: String,
    pub work: String,
}

impl HostPaths {
    pub fn new(host: &Host) -> Option<HostPaths> {
        let w = host.work_dir.as_str().trim_end_matches('/').to_string();
        Some(HostPaths {
            scripts: scripts_dir(host, host.os)?,
            mnt: format!("{w}/mnt"),
            cell: format!("{w}/pg"),
            runs: format!("{w}/runs"),
            work: w,
        })
    }
}

/// The device-independent words of the steps of one filesystem variant.
pub struct FsCalls;

impl FsCalls {
    pub fn preflight(host: &Host) -> Call {
        Call::new("preflight")
            .arg("dev", host.device().as_str())
            .args(
                "allowed",
                host.devices.iter().map(|d| d.as_str().to_string()),
            )
            .arg("consent", consent(host))
    }

    pub fn make_fs(host: &Host, p: &HostPaths, c: &Cell) -> Call {
        let call = Call::new("make-fs")
            .arg("dev", host.device().as_str())
            .args(
                "allowed",
                host.devices.iter().map(|d| d.as_str().to_string()),
            )
            .arg("consent", consent(host))
            .arg("fs", c.fs.fs_type.as_str());
        if c.fs.fs_type == FsType::Zfs {
            let kv = |z: &crate::config::ZfsProperty| {
                format!("{}={}", z.name.as_str(), z.value.as_str())
            };
            call.arg("pool", POOL)
                .arg("mnt", &p.mnt)
                .args("pool_prop", c.fs.pool_properties.iter().map(kv))
                .args("zfs_prop", c.fs.properties.iter().map(kv))
        } else {
            call.args(
                "mkfs_opt",
                c.fs.mkfs_options.iter().map(|o| o.as_str().to_string()),
            )
        }
    }

    pub fn mount(host: &Host, p: &HostPaths, c: &Cell) -> Call {
        with_pool(
            Call::new("mount")
                .arg("dev", host.device().as_str())
                .arg("fs", c.fs.fs_type.as_str())
                .arg("mnt", &p.mnt)
                .args(
                    "mount_opt",
                    c.fs.mount_options.iter().map(|o| o.as_str().to_string()),
                ),
            c,
        )
    }

    pub fn pg_init(host: &Host, p: &HostPaths, c: &Cell) -> Call {
        Call::new("pg-init")
            .arg("pg_bin", host.pg_bin_or_hint())
            .arg("pg_user", host.pg_user.as_str())
            .arg("mnt", &p.mnt)
            .arg("cell", &p.cell)
            .arg("port", host.pg_port.to_string())
            .args(
                "pg_set",
                c.pg_settings
                    .iter()
                    .map(|s| format!("{}={}", s.name.as_str(), s.value.as_str())),
            )
    }

    pub fn pg_start(host: &Host, p: &HostPaths) -> Call {
        Call::new("pg-start")
            .arg("pg_bin", host.pg_bin_or_hint())
            .arg("pg_user", host.pg_user.as_str())
            .arg("mnt", &p.mnt)
            .arg("cell", &p.cell)
    }

    pub fn pg_stop(host: &Host, p: &HostPaths) -> Call {
        Call::new("pg-stop")
            .arg("pg_bin", host.pg_bin_or_hint())
            .arg("pg_user", host.pg_user.as_str())
            .arg("mnt", &p.mnt)
            .arg("cell", &p.cell)
    }

    /// `fs` is the variant's type when known; without it teardown still
    /// stops postgres, unmounts and destroys fsmatrix's pool.
    pub fn teardown(host: &Host, p: &HostPaths, fs: Option<FsType>) -> Call {
        let mut call = Call::new("teardown")
            .arg("dev", host.device().as_str())
            .args(
                "allowed",
                host.devices.iter().map(|d| d.as_str().to_string()),
            );
        if let Some(fs) = fs {
            call = call.arg("fs", fs.as_str());
        }
        call.arg("mnt", &p.mnt)
            .arg("pool", POOL)
            .arg("pg_bin", host.pg_bin_or_hint())
            .arg("pg_user", host.pg_user.as_str())
            .arg("cell", &p.cell)
    }

    pub fn sizes(p: &HostPaths, c: &Cell) -> Call {
        with_pool(
            Call::new("sizes")
                .arg("mnt", &p.mnt)
                .arg("fs", c.fs.fs_type.as_str()),
            c,
        )
    }

    pub fn drop_caches(host: &Host, c: &Cell) -> Call {
        with_pool(
            Call::new("drop-caches")
                .arg("fs", c.fs.fs_type.as_str())
                .arg("dev", host.device().as_str()),
            c,
        )
    }

    /// `pgbench -i` at `scale` (resolved from a device percentage at run
    /// time), or the SQL script uploaded to `sql_path`.
    pub fn load(
        host: &Host,
        p: &HostPaths,
        out: &str,
        scale: Option<u64>,
        sql: Option<&str>,
    ) -> Call {
        let call = Call::new("load")
            .arg("pg_bin", host.pg_bin_or_hint())
            .arg("pg_user", host.pg_user.as_str())
            .arg("cell", &p.cell)
            .arg("port", host.pg_port.to_string())
            .arg("out", out);
        match (scale, sql) {
            (_, Some(sql)) => call.arg("sql", sql),
            (Some(s), None) => call.arg("scale", s.to_string()),
            (None, None) => call,
        }
    }

    pub fn run(host: &Host, p: &HostPaths, c: &Cell, out: &str, script: Option<&str>) -> Call {
        let mut call = Call::new("run")
            .arg("pg_bin", host.pg_bin_or_hint())
            .arg("pg_user", host.pg_user.as_str())
            .arg("cell", &p.cell)
            .arg("port", host.pg_port.to_string())
            .arg("out", out);
        call = match (&c.workload.kind, script) {
            (WorkloadKind::Builtin { builtin }, _) => call.arg("builtin", builtin.as_str()),
            (_, Some(s)) => call.arg("script", s),
            (_, None) => call,
        };
        call = call
            .arg("clients", c.clients.to_string())
            .arg("jobs", c.jobs.to_string());
        call = match c.length {
            Length::Seconds(s) => call.arg("duration", s.to_string()),
            Length::Transactions(t) => call.arg("transactions", t.to_string()),
            Length::ToCompletion { .. } => call,
        };
        call.arg("progress", if c.progress { "1" } else { "0" })
    }
}

fn with_pool(call: Call, c: &Cell) -> Call {
    if c.fs.fs_type == FsType::Zfs {
        call.arg("pool", POOL)
    } else {
        call
    }
}

fn consent(host: &Host) -> &'static str {
    if host.consent_foreign.iter().any(|d| d == host.device()) {
        "yes"
    } else {
        "no"
    }
}

/// Where a workload's script file lands on the host (named by checksum).
pub fn workload_file(p: &HostPaths, kind: &WorkloadKind) -> Option<(String, String)> {
    match kind {
        WorkloadKind::Builtin { .. } => None,
        WorkloadKind::PgbenchScript {
            sha256, content, ..
        } => Some((
            format!("{}/w/{}.pgbench", p.work, &sha256[..16]),
            content.clone(),
        )),
        WorkloadKind::SqlScript {
            sha256, content, ..
        } => Some((
            format!("{}/w/{}.sql", p.work, &sha256[..16]),
            content.clone(),
        )),
    }
}

/// Resolve a workload's scale against the device size the guard reported.
pub fn resolve_scale(
    scale: Option<Scale>,
    device_bytes: Option<u64>,
) -> Result<Option<u64>, String> {
    match scale {
        None => Ok(None),
        Some(Scale::Factor(n)) => Ok(Some(u64::from(n))),
        Some(Scale::DevicePercent(pct)) => {
            let size =
                device_bytes.ok_or("the device size is unknown (preflight did not report it)")?;
            Ok(Some((size / 100 * u64::from(pct) / BYTES_PER_SCALE).max(1)))
        }
    }
}

/// Step timeouts: generous, since a stuck step is the only thing they catch.
fn run_timeout(c: &Cell) -> Duration {
    match c.length {
        Length::Seconds(s) => Duration::from_secs(s + 300),
        Length::Transactions(_) | Length::ToCompletion { .. } => Duration::from_secs(6 * 3600),
    }
}

pub struct Worker<'a, R: Remote> {
    pub remote: &'a R,
    pub host: &'a Host,
    pub paths: HostPaths,
    pub sink: &'a Sink,
    pub cancel: watch::Receiver<bool>,
    pub counted: Counted,
}

/// One filesystem variant's set-up, as far as it got.
struct FsState {
    log: String,
    settings: FsSettings,
    device_bytes: Option<u64>,
}

impl<'a, R: Remote> Worker<'a, R> {
    fn host_name(&self) -> String {
        self.host.name.as_str().to_string()
    }

    pub fn cancelled(&self) -> bool {
        *self.cancel.borrow()
    }

    fn step(&self, step: String) {
        self.sink.emit(RunEvent::Step {
            host: self.host_name(),
            step,
        });
    }

    /// Run a verb; its stdout/stderr go to `log`.  Non-zero exit is an error.
    async fn call(
        &self,
        step: &str,
        call: &Call,
        timeout: Duration,
        log: &mut String,
    ) -> Result<(Kv, ExecOutput), StepError> {
        let cmd = call.command(self.host, &self.paths.scripts);
        let shown = cmd.to_shell().map(str::to_string).unwrap_or_default();
        log.push_str(&format!("$ {shown}\n"));
        let mut cancel = self.cancel.clone();
        let exec = self.remote.exec(&cmd, ExecOptions::with_timeout(timeout));
        let out = tokio::select! {
            r = exec => r.map_err(|e| StepError::remote(step, e))?,
            _ = wait_cancel(&mut cancel) => return Err(StepError::new(step, "interrupted")),
        };
        log.push_str(&out.stdout_lossy());
        let err = out.stderr_lossy();
        for l in err.lines().filter(|l| !l.starts_with("fsmatrix-pgid ")) {
            log.push_str("! ");
            log.push_str(l);
            log.push('\n');
        }
        log.push_str(&format!("# {}\n", out.status));
        if !out.status.success() {
            return Err(StepError::status(step, &out));
        }
        Ok((Kv::parse(&out.stdout_lossy()), out))
    }

    /// Fetch a file the scripts wrote under work_dir.
    async fn fetch(&self, path: &str) -> Result<Vec<u8>, StepError> {
        let call = Call::new("cat")
            .arg("work", &self.paths.work)
            .arg("path", path);
        let cmd = call.command(self.host, &self.paths.scripts);
        let out = self
            .remote
            .exec(&cmd, ExecOptions::with_timeout(Duration::from_secs(300)))
            .await
            .map_err(|e| StepError::remote("collect", e))?;
        if !out.status.success() {
            return Err(StepError::status("collect", &out));
        }
        Ok(out.stdout)
    }

    /// Upload the scripts (checked by sha256 on the host) once per sweep.
    pub async fn upload_scripts(&self) -> Result<(), RemoteError> {
        let Some(files) = scripts_for(self.host.os) else {
            return Ok(());
        };
        // work_dir must be traversable by pg_user (the mount point and the
        // socket folder live under it); the upload makes private folders.
        let mk = RemoteCommand::raw("mkdir -p --")
            .arg(&self.paths.work)
            .raw_arg("&& chmod 0755 --")
            .arg(&self.paths.work);
        self.remote
            .exec(&mk, ExecOptions::with_timeout(Duration::from_secs(60)))
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
        let cmd = RemoteCommand::raw("cd --")
            .arg(&self.paths.scripts)
            .raw_arg("2>/dev/null && { sha256sum -- *.sh 2>/dev/null || sha256 -r -- *.sh; }")
            .and_then(&self.facts_call().command(self.host, &self.paths.scripts))
            .and_then(&RemoteCommand::raw("echo").arg(GUARD_MARK))
            .and_then(&FsCalls::preflight(self.host).command(self.host, &self.paths.scripts));
        let out = self
            .remote
            .exec(&cmd, ExecOptions::with_timeout(Duration::from_secs(120)))
            .await
            .map_err(|e| StepError::remote("facts", e))?;
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
            return Err(StepError::status("facts", &out));
        };
        let guard = if out.status.success() {
            Ok(Kv::parse(guard))
        } else {
            Err(StepError::status("preflight", &out))
        };
        Ok(Some((Kv::parse(facts), guard)))
    }

    fn facts_call(&self) -> Call {
        Call::new("facts")
            .args(
                "dev",
                self.host.devices.iter().map(|d| d.as_str().to_string()),
            )
            .arg("pg_bin", self.host.pg_bin_or_hint())
    }

    /// `facts` for the host's devices; written to the bundle.
    pub async fn facts(&self) -> Result<Kv, StepError> {
        let call = Call::new("facts")
            .args(
                "dev",
                self.host.devices.iter().map(|d| d.as_str().to_string()),
            )
            .arg("pg_bin", self.host.pg_bin_or_hint());
        let mut log = String::new();
        let (kv, _) = self
            .call("facts", &call, Duration::from_secs(120), &mut log)
            .await?;
        Ok(kv)
    }

    /// Run every cell of this host (they arrive in plan order).
    pub async fn run_cells(&self, cells: &[&Cell]) -> HostTally {
        let mut tally = HostTally::default();
        let mut i = 0;
        while i < cells.len() {
            let fs_name = cells[i].fs.name.as_str();
            let mut j = i;
            while j < cells.len() && cells[j].fs.name.as_str() == fs_name {
                j += 1;
            }
            let group = &cells[i..j];
            if self.cancelled() {
                record_not_run(
                    self.sink,
                    group,
                    "interrupted before it started",
                    &mut tally,
                );
            } else {
                self.run_fs_group(group, &mut tally).await;
            }
            i = j;
        }
        tally
    }

    async fn run_fs_group(&self, cells: &[&Cell], tally: &mut HostTally) {
        let first = cells[0];
        let fs_name = first.fs.name.as_str().to_string();
        let mut state = FsState {
            log: String::new(),
            settings: FsSettings::default(),
            device_bytes: None,
        };
        let started = now_rfc3339();
        let setup = self.set_up(first, &mut state).await;
        match setup {
            Err(e) => {
                for c in cells {
                    self.record_failed(c, &e, &started, None, None, &state, tally);
                }
            }
            Ok(()) => {
                let mut k = 0;
                while k < cells.len() {
                    let wl = cells[k].workload.name.as_str();
                    let mut m = k;
                    while m < cells.len() && cells[m].workload.name.as_str() == wl {
                        m += 1;
                    }
                    self.run_workload(&cells[k..m], &mut state, tally).await;
                    k = m;
                }
                self.step(format!("pg-stop {fs_name}"));
                let stop = FsCalls::pg_stop(self.host, &self.paths);
                if let Err(e) = self
                    .call("pg-stop", &stop, Duration::from_secs(180), &mut state.log)
                    .await
                {
                    self.note(format!("pg-stop failed: {}", e.message));
                }
            }
        }
        self.teardown(Some(first.fs.fs_type), &mut state.log).await;
        let rel = format!("hosts/{}/{}/setup.log", self.host.name.as_str(), fs_name);
        if let Err(e) = self.sink.write(&rel, state.log.as_bytes()) {
            self.note(format!("failed to write {rel}: {e}"));
        }
    }

    fn note(&self, message: String) {
        self.sink.emit(RunEvent::Note {
            host: self.host_name(),
            message,
        });
    }

    /// Teardown always runs: on success, failure and interrupt.  It is
    /// not cancellable (an interrupted teardown would leave the host dirty).
    pub async fn teardown(&self, fs: Option<FsType>, log: &mut String) {
        self.step("teardown".to_string());
        let call = FsCalls::teardown(self.host, &self.paths, fs);
        let cmd = call.command(self.host, &self.paths.scripts);
        log.push_str(&format!("$ {}\n", cmd.to_shell().unwrap_or_default()));
        match self
            .remote
            .exec(&cmd, ExecOptions::with_timeout(Duration::from_secs(300)))
            .await
        {
            Ok(out) => {
                log.push_str(&out.stdout_lossy());
                log.push_str(&out.stderr_lossy());
                if !out.status.success() {
                    self.note(format!(
                        "teardown did not finish cleanly: {}: {}",
                        out.status,
                        out.stderr_tail(3)
                    ));
                }
            }
            Err(e) => self.note(format!("teardown failed: {e}")),
        }
    }

    async fn set_up(&self, c: &Cell, st: &mut FsState) -> Result<(), StepError> {
        let name = c.fs.name.as_str();
        // Leftovers of a killed run (a mounted fs, a running postgres) would
        // make the guard refuse the device: clean them first.
        self.teardown(Some(c.fs.fs_type), &mut st.log).await;
        if self.cancelled() {
            return Err(StepError::new("preflight", "interrupted"));
        }
        self.step(format!("preflight {name}"));
        let (kv, _) = self
            .call(
                "preflight",
                &FsCalls::preflight(self.host),
                Duration::from_secs(120),
                &mut st.log,
            )
            .await?;
        st.device_bytes = kv.u64("dev_size_bytes");
        self.step(format!("make-fs {name}"));
        self.call(
            "make-fs",
            &FsCalls::make_fs(self.host, &self.paths, c),
            Duration::from_secs(900),
            &mut st.log,
        )
        .await?;
        self.step(format!("mount {name}"));
        let (kv, _) = self
            .call(
                "mount",
                &FsCalls::mount(self.host, &self.paths, c),
                Duration::from_secs(180),
                &mut st.log,
            )
            .await
            .map_err(|mut e| {
                if e.exit_status == Some(4) {
                    e.message = format!("the kernel refused a mount option: {}", e.message);
                }
                e
            })?;
        st.settings = fs_settings(&kv, c);
        self.step(format!("pg-init {name}"));
        self.call(
            "pg-init",
            &FsCalls::pg_init(self.host, &self.paths, c),
            Duration::from_secs(600),
            &mut st.log,
        )
        .await?;
        self.step(format!("pg-start {name}"));
        self.call(
            "pg-start",
            &FsCalls::pg_start(self.host, &self.paths),
            Duration::from_secs(420),
            &mut st.log,
        )
        .await?;
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn record_failed(
        &self,
        c: &Cell,
        e: &StepError,
        started: &str,
        sizes: Option<Sizes>,
        init: Option<InitTimings>,
        st: &FsState,
        tally: &mut HostTally,
    ) {
        let result = CellResult {
            schema: crate::results::model::RESULT_SCHEMA,
            cell_id: c.id.clone(),
            params: params(c),
            status: CellStatus::Failed {
                step: e.step.clone(),
                exit_status: e.exit_status,
                stderr_tail: e.message.clone(),
            },
            started: Some(started.to_string()),
            ended: Some(now_rfc3339()),
            sizes,
            init,
            fs_settings: Some(st.settings.clone()),
        };
        let files = vec![("setup.log".to_string(), st.log.clone().into_bytes())];
        if let Err(err) = self.sink.finish_cell(&result, Some(c), &files) {
            self.note(format!("failed to record cell {}: {err}", c.id));
        }
        tally.failed += 1;
        self.sink.emit(RunEvent::CellEnded {
            host: self.host_name(),
            cell: c.id.clone(),
            outcome: Outcome::Failed,
            planned: Duration::from_secs(cell_secs(c)),
        });
    }

    async fn run_workload(&self, cells: &[&Cell], st: &mut FsState, tally: &mut HostTally) {
        let first = cells[0];
        let wl = first.workload.name.as_str();
        let fs = first.fs.name.as_str();
        let started = now_rfc3339();
        if self.cancelled() {
            record_not_run(self.sink, cells, "interrupted before it started", tally);
            return;
        }
        // Upload a custom script (pgbench or SQL) if the workload has one.
        let file = workload_file(&self.paths, &first.workload.kind);
        if let Some((path, content)) = &file {
            if let Err(e) = self
                .remote
                .upload_verified(path, content.as_bytes(), 0o644)
                .await
            {
                let e = StepError::remote("upload-workload", e);
                for c in cells {
                    self.record_failed(c, &e, &started, None, None, st, tally);
                }
                return;
            }
        }
        let is_sql = matches!(first.workload.kind, WorkloadKind::SqlScript { .. });
        let group_rel = format!("hosts/{}/{}/{}", self.host.name.as_str(), fs, wl);
        // pgbench workloads: load once, then every cell measures against it.
        let mut init = None;
        if !is_sql {
            self.step(format!("load {fs}/{wl}"));
            match self.load(first, st, &group_rel).await {
                Ok(i) => init = i,
                Err(e) => {
                    for c in cells {
                        self.record_failed(c, &e, &started, None, None, st, tally);
                    }
                    return;
                }
            }
        }
        let sizes = self.sizes(first, &mut st.log).await;
        for c in cells {
            if self.cancelled() {
                record_not_run(self.sink, &[c], "interrupted before it started", tally);
                continue;
            }
            if let Some(why) = self.counted.not_needed(c) {
                record_not_needed(self.sink, c, &why, tally);
                continue;
            }
            let script = file.as_ref().map(|(p, _)| p.as_str());
            if let Some(tps) = self
                .run_cell(c, st, script, sizes.clone(), init.clone(), tally)
                .await
            {
                self.counted.add(c, tps);
            }
            if let Some(msg) = self.counted.short_of_target(c) {
                self.note(msg);
            }
        }
    }

    /// `pgbench -i` for the workload; its raw output goes to the bundle.
    async fn load(
        &self,
        c: &Cell,
        st: &mut FsState,
        group_rel: &str,
    ) -> Result<Option<InitTimings>, StepError> {
        let scale = resolve_scale(c.workload.scale, st.device_bytes)
            .map_err(|m| StepError::new("load", m))?;
        let out = format!(
            "{}/{}-{}-load",
            self.paths.runs,
            c.fs.name.as_str(),
            c.workload.name.as_str()
        );
        let call = FsCalls::load(self.host, &self.paths, &out, scale, None);
        let (kv, _) = self
            .call("load", &call, Duration::from_secs(12 * 3600), &mut st.log)
            .await?;
        let stdout = self.fetch(&format!("{out}/stdout")).await?;
        let stderr = self.fetch(&format!("{out}/stderr")).await?;
        let _ = self.sink.write(&format!("{group_rel}/load.out"), &stdout);
        let _ = self.sink.write(&format!("{group_rel}/load.err"), &stderr);
        let status = kv.get("status").and_then(|s| s.parse::<i32>().ok());
        let parsed = parse_init(
            &String::from_utf8_lossy(&stdout),
            &String::from_utf8_lossy(&stderr),
        );
        if status != Some(0) || !parsed.completed {
            return Err(StepError {
                step: "load".into(),
                exit_status: status,
                message: tail_lines(&String::from_utf8_lossy(&stderr), 15),
            });
        }
        Ok(Some(InitTimings {
            total_s: parsed.total_s,
            phases: parsed
                .phases
                .iter()
                .map(|p| Phase {
                    name: p.name.clone(),
                    seconds: p.seconds,
                })
                .collect(),
        }))
    }

    async fn sizes(&self, c: &Cell, log: &mut String) -> Option<Sizes> {
        let (kv, _) = self
            .call(
                "sizes",
                &FsCalls::sizes(&self.paths, c),
                Duration::from_secs(600),
                log,
            )
            .await
            .ok()?;
        let db = counters::database_size(self.remote, self.host).await.ok();
        Some(Sizes {
            du_on_disk_bytes: kv.u64("du_bytes"),
            du_apparent_bytes: kv.u64("du_apparent_bytes"),
            df_used_bytes: kv.u64("df_used_bytes"),
            zfs_compressratio: kv.f64("zfs_compressratio"),
            zfs_logicalused_bytes: kv.u64("zfs_logicalused"),
            pg_database_bytes: db,
        })
    }

    async fn run_cell(
        &self,
        c: &Cell,
        st: &mut FsState,
        script: Option<&str>,
        sizes: Option<Sizes>,
        init: Option<InitTimings>,
        tally: &mut HostTally,
    ) -> Option<f64> {
        let started = now_rfc3339();
        let tag = format!(
            "{} {} c={} r={}{}",
            c.fs.name.as_str(),
            c.workload.name.as_str(),
            c.clients,
            c.repeat,
            if c.warmup { " (warm-up)" } else { "" }
        );
        let mut files: Vec<(String, Vec<u8>)> = Vec::new();
        let mut cell_log = String::new();
        if c.drop_caches {
            self.step(format!("drop-caches {tag}"));
            match self
                .call(
                    "drop-caches",
                    &FsCalls::drop_caches(self.host, c),
                    Duration::from_secs(300),
                    &mut cell_log,
                )
                .await
            {
                Ok((kv, _)) => files.push(("drop-caches.txt".into(), kv_text(&kv))),
                Err(e) => {
                    self.finish_failed(c, e, &started, sizes, init, st, cell_log, tally);
                    return None;
                }
            }
        }
        let settings: Vec<String> = c
            .pg_settings
            .iter()
            .map(|s| s.name.as_str().to_string())
            .collect();
        let before = counters::snapshot(self.remote, self.host, &settings).await;
        self.step(format!("run {tag}"));
        let out = format!("{}/{}", self.paths.runs, c.id);
        let is_sql = matches!(c.workload.kind, WorkloadKind::SqlScript { .. });
        let call = if is_sql {
            FsCalls::load(self.host, &self.paths, &out, None, script)
        } else {
            FsCalls::run(self.host, &self.paths, c, &out, script)
        };
        let kv = match self.call("run", &call, run_timeout(c), &mut cell_log).await {
            Ok((kv, _)) => kv,
            Err(e) => {
                self.finish_failed(c, e, &started, sizes, init, st, cell_log, tally);
                return None;
            }
        };
        let (stdout, stderr) = match (
            self.fetch(&format!("{out}/stdout")).await,
            self.fetch(&format!("{out}/stderr")).await,
        ) {
            (Ok(a), Ok(b)) => (a, b),
            (Err(e), _) | (_, Err(e)) => {
                self.finish_failed(c, e, &started, sizes, init, st, cell_log, tally);
                return None;
            }
        };
        let after = counters::snapshot(self.remote, self.host, &settings).await;
        let status = kv.get("status").and_then(|s| s.parse::<i32>().ok());
        files.push(("run.out".into(), stdout.clone()));
        files.push(("run.err".into(), stderr.clone()));
        files.push(("pgstats.json".into(), counters::report(&before, &after)));
        if let Some(s) = &sizes {
            files.push(("sizes.json".into(), json_bytes(s)));
        }
        let so = String::from_utf8_lossy(&stdout);
        let se = String::from_utf8_lossy(&stderr);
        let measured = if is_sql {
            let p = parse_psql(&so, status);
            files.push(("statements.json".into(), json_bytes(&p)));
            if p.valid {
                let secs = p.total_ms / 1000.0;
                Ok(RunMeasures {
                    tps: if secs > 0.0 {
                        p.statements.len() as f64 / secs
                    } else {
                        0.0
                    },
                    tps_including_connect: None,
                    latency_avg_ms: if p.statements.is_empty() {
                        None
                    } else {
                        Some(p.total_ms / p.statements.len() as f64)
                    },
                    latency_stddev_ms: None,
                    transactions: p.statements.len() as u64,
                    failed_transactions: None,
                    duration_s: secs,
                    progress: Vec::new(),
                })
            } else {
                Err(reasons(p.invalid_reasons.iter().map(|r| r.to_string())))
            }
        } else {
            let r = parse_run(&so, &se, status);
            if !r.progress.is_empty() {
                files.push(("progress.csv".into(), progress_csv(&r.progress)));
            }
            files.push(("parsed.json".into(), json_bytes(&r)));
            match (&r.summary.tps, r.valid) {
                (Some(tps), true) => Ok(RunMeasures {
                    tps: tps.value,
                    tps_including_connect: r
                        .summary
                        .tps_lines
                        .iter()
                        .find(|t| {
                            t.kind
                                == crate::load::pgbench::TpsKind::IncludingConnectionsEstablishing
                        })
                        .map(|t| t.value),
                    latency_avg_ms: r.summary.latency_avg_ms,
                    latency_stddev_ms: r.summary.latency_stddev_ms,
                    transactions: r.summary.transactions_processed.unwrap_or(0),
                    failed_transactions: r.summary.failed.as_ref().map(|f| f.count),
                    duration_s: match c.length {
                        Length::Seconds(s) => s as f64,
                        _ => r.summary.duration_s.map(|d| d as f64).unwrap_or(0.0),
                    },
                    progress: r
                        .progress
                        .iter()
                        .map(|p| ProgressSample {
                            t_s: p.t_s,
                            tps: p.tps,
                            latency_avg_ms: p.lat_ms,
                            latency_stddev_ms: p.stddev_ms,
                            failed: p.failed,
                        })
                        .collect(),
                }),
                _ => Err(reasons(r.invalid_reasons.iter().map(|r| r.to_string()))),
            }
        };
        files.push(("commands.log".into(), cell_log.into_bytes()));
        let tps = measured.as_ref().ok().map(|r| r.tps);
        let (status_rec, outcome) = match measured {
            Ok(run) => {
                tally.done += 1;
                (CellStatus::Done { run }, Outcome::Done)
            }
            Err(why) => {
                tally.failed += 1;
                (
                    CellStatus::Failed {
                        step: "run".into(),
                        exit_status: status,
                        stderr_tail: format!("{why}\n{}", tail_lines(&se, 10))
                            .trim_end()
                            .to_string(),
                    },
                    Outcome::Failed,
                )
            }
        };
        let result = CellResult {
            schema: crate::results::model::RESULT_SCHEMA,
            cell_id: c.id.clone(),
            params: params(c),
            status: status_rec,
            started: Some(started),
            ended: Some(now_rfc3339()),
            sizes,
            init,
            fs_settings: Some(st.settings.clone()),
        };
        if let Err(e) = self.sink.finish_cell(&result, Some(c), &files) {
            self.note(format!("failed to record cell {}: {e}", c.id));
        }
        self.sink.emit(RunEvent::CellEnded {
            host: self.host_name(),
            cell: c.id.clone(),
            outcome,
            planned: Duration::from_secs(cell_secs(c)),
        });
        tps
    }

    #[allow(clippy::too_many_arguments)]
    fn finish_failed(
        &self,
        c: &Cell,
        e: StepError,
        started: &str,
        sizes: Option<Sizes>,
        init: Option<InitTimings>,
        st: &FsState,
        cell_log: String,
        tally: &mut HostTally,
    ) {
        let st2 = FsState {
            log: format!("{}{}", st.log, cell_log),
            settings: st.settings.clone(),
            device_bytes: st.device_bytes,
        };
        self.record_failed(c, &e, started, sizes, init, &st2, tally);
    }
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

fn reasons(it: impl Iterator<Item = String>) -> String {
    let v: Vec<String> = it.collect();
    if v.is_empty() {
        "the output has no result".to_string()
    } else {
        v.join("; ")
    }
}


fn kv_text(kv: &Kv) -> Vec<u8> {
    kv.0.iter()
        .map(|(k, v)| format!("{k}={v}\n"))
        .collect::<String>()
        .into_bytes()
}

fn progress_csv(p: &[crate::load::pgbench::ProgressSample]) -> Vec<u8> {
    let mut s = String::from("t_s,tps,latency_avg_ms,latency_stddev_ms,failed\n");
    for x in p {
        s.push_str(&format!(
            "{},{},{},{},{}\n",
            x.t_s,
            x.tps,
            x.lat_ms.map(|v| v.to_string()).unwrap_or_default(),
            x.stddev_ms.map(|v| v.to_string()).unwrap_or_default(),
            x.failed.map(|v| v.to_string()).unwrap_or_default()
        ));
    }
    s.into_bytes()
}

/// Effective settings from `mount`'s output: the options the kernel shows,
/// the requested ones it does not show (ignored, recorded), and the ZFS
/// properties the matrix touched plus compression/compressratio.
pub fn fs_settings(kv: &Kv, c: &Cell) -> FsSettings {
    let effective = kv.get("effective_mount_opts").map(str::to_string);
    let shown: Vec<&str> = effective.as_deref().unwrap_or("").split(',').collect();
    let ignored =
        c.fs.mount_options
            .iter()
            .map(|o| o.as_str())
            .filter(|o| !shown.contains(o))
            .map(str::to_string)
            .collect();
    let zfs = kv.with_prefix("zfs");
    let mut wanted: Vec<String> =
        c.fs.properties
            .iter()
            .map(|p| p.name.as_str().to_string())
            .collect();
    wanted.extend(["compression", "compressratio", "recordsize", "atime"].map(String::from));
    let zfs_properties: BTreeMap<String, String> = zfs
        .into_iter()
        .filter(|(k, _)| wanted.contains(k))
        .collect();
    FsSettings {
        mount_options: effective,
        zfs_properties,
        ignored_options: ignored,
    }
}

/// Do the OS's scripts exist?  (A verb missing for an OS is a plan-time
/// matter; a whole OS missing is reported per host before anything runs.)
pub fn os_supported(os: Os) -> bool {
    scripts_for(os).is_some()
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::config::{Inventory, Matrix};

    fn cells(target: &str) -> Vec<Cell> {
        let inv = Inventory::parse(
            Path::new("inv.toml"),
            "[[host]]\nname = \"h\"\naddress = \"127.0.0.1\"\nos = \"linux\"\ndevices = [\"/dev/loop9\"]\n"
                .to_string(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let m = Matrix::parse(
            Path::new("m.toml"),
            format!(
                "name = \"m\"\nwarmup = 1\nrepeats = {{ min = 3, max = 5, target_ci = \"{target}\" }}\n\
                 [[filesystem]]\nname = \"e\"\ntype = \"ext4\"\n\
                 [[workload]]\nname = \"w\"\nbuiltin = \"select-only\"\nscale = 1\nclients = [1, 2]\nduration = \"5s\"\n"
            ),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        crate::plan::plan(&inv, &m).cells
    }

    /// 95% CI half-width of {100, 101, 99}: t(0.975, 2) · 1 / √3 =
    /// 4.302652729911275 / 1.7320508 = 2.4841377% of the mean (Python).
    #[test]
    fn adaptive_repeats_stop_once_the_ci_is_within_target() {
        for (target, stops) in [("2.49%", true), ("2.48%", false)] {
            let cs = cells(target);
            let c1: Vec<&Cell> = cs.iter().filter(|c| c.clients == 1).collect();
            let c2: Vec<&Cell> = cs.iter().filter(|c| c.clients == 2).collect();
            // warm-up, repeats 1..=5
            assert_eq!(c1.len(), 6);
            let counted = Counted::default();
            // A warm-up's tps is never counted, however far off.
            counted.add(c1[0], 10.0);
            for (c, tps) in c1[1..4].iter().zip([100.0, 101.0, 99.0]) {
                assert_eq!(counted.not_needed(c), None, "repeats up to min always run");
                counted.add(c, tps);
            }
            let why = counted.not_needed(c1[4]);
            assert_eq!(why.is_some(), stops, "{target}: {why:?}");
            if let Some(w) = why {
                assert!(w.contains("3 counted repeats"), "{w}");
                assert!(w.contains("±2.48%"), "{w}");
                assert!(w.contains(&format!("target ±{target}")), "{w}");
            }
            // Another client count is another group: nothing counted there.
            assert_eq!(counted.not_needed(c2[4]), None);
        }
    }

    #[test]
    fn a_failed_repeat_leaves_the_group_short_so_later_ones_run() {
        let cs = cells("50%");
        let c1: Vec<&Cell> = cs.iter().filter(|c| c.clients == 1).collect();
        let counted = Counted::default();
        // Repeat 2 failed: only two counted values when repeat 4 comes up.
        counted.add(c1[1], 100.0);
        counted.add(c1[3], 100.5);
        assert_eq!(counted.not_needed(c1[4]), None);
        counted.add(c1[4], 99.5);
        assert!(counted.not_needed(c1[5]).is_some());
    }

    #[test]
    fn reaching_max_short_of_the_target_is_said() {
        let cs = cells("0.5%");
        let c1: Vec<&Cell> = cs.iter().filter(|c| c.clients == 1).collect();
        let counted = Counted::default();
        for (c, tps) in c1[1..].iter().zip([100.0, 104.0, 96.0, 101.0, 99.0]) {
            counted.add(c, tps);
            let said = counted.short_of_target(c);
            // Only after repeat 5, the max.
            assert_eq!(said.is_some(), c.repeat == 5, "{said:?}");
        }
        let said = counted.short_of_target(c1[5]).unwrap_or_default();
        // mean 100, sd 2.915476, t(0.975, 4) = 2.776445: ±3.62% (Python).
        assert!(said.contains("5 counted repeats (max 5)"), "{said}");
        assert!(said.contains("±3.62%"), "{said}");
        assert!(said.contains("target ±0.5%"), "{said}");
        let met = cells("50%");
        let m1: Vec<&Cell> = met.iter().filter(|c| c.clients == 1).collect();
        let counted = Counted::default();
        for (c, tps) in m1[1..].iter().zip([100.0, 104.0, 96.0, 101.0, 99.0]) {
            counted.add(c, tps);
        }
        assert_eq!(counted.short_of_target(m1[5]), None);
    }
}
