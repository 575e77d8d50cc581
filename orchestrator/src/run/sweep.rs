//! A sweep: every host in parallel (one tokio task each), cells of one host
//! in plan order; and the two ways to finish or repeat one from its bundle
//! (`resume`, `run --from`).
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use tokio::sync::{mpsc, watch};

use super::adaptive::Counted;
use super::calls::HostPaths;
use super::check::{needs_of, prepare, same_machines, ssh_target, HostReport, Needs};
use super::error::RunError;
use super::events::RunEvent;
use super::lock::{lock_host, Holder, HostLock, LockError};
use super::logged::Logged;
use super::progress::{self, Display};
use super::sink::{HostTally, Sink};
use super::snapshot::{self, Inputs};
use super::worker::Worker;
use crate::config::values::HostName;
use crate::config::{GivenPaths, Host, Inventory, Matrix};
use crate::plan::{plan, Cell, Plan};
use crate::remote::{Remote, RemoteError, SshRemote};
use crate::results::analysis::stats::Metric;
use crate::results::bundle::journal::SweepStatus;
use crate::results::bundle::{Bundle, CreateOptions};
use crate::results::{CellResult, CellStatus};

/// Outcome of a sweep.
#[derive(Debug, Clone)]
pub struct SweepSummary {
    pub bundle: PathBuf,
    pub tally: HostTally,
    pub interrupted: bool,
}

/// Cells a resumed sweep keeps: id → its value of the metric it is
/// compared on ([`Metric::compared_value`]) when the cell is done.
type Kept = HashMap<String, Option<f64>>;

/// Run the whole sweep into a new bundle under `out`.
pub async fn sweep(
    inv: &Inventory,
    m: &Matrix,
    out: &Path,
    hooks: Hooks,
) -> Result<SweepSummary, RunError> {
    let p = plan(inv, m);
    let inputs = Inputs::read(inv, m)?;
    sweep_hooked(inv, m, &p, &inputs, out, &Kept::new(), hooks).await
}

/// What an embedding of the engine (the database agent) gets besides the
/// bundle: the bundle's folder as soon as it exists, every event as the
/// workers emit it, and a way to stop the sweep as an interrupt would.
#[derive(Default)]
pub struct Hooks {
    pub opened: Option<tokio::sync::oneshot::Sender<std::path::PathBuf>>,
    pub tap: Option<mpsc::UnboundedSender<RunEvent>>,
    pub cancel: Option<watch::Receiver<bool>>,
    /// How progress is shown.
    pub display: Display,
    /// Timings of earlier bundles (`--history`): the hosts' ETAs start
    /// from them instead of the defaults.
    pub history: crate::results::bundle::timings::History,
}

/// `run` of an already loaded sweep with `hooks`, keeping the cells of
/// `keep` (id → counted tps) as `resume` keeps verified cells: the agent
/// runs a queued sweep this way, its finished cells in the database kept.
pub async fn sweep_hooked(
    inv: &Inventory,
    m: &Matrix,
    p: &Plan,
    inputs: &Inputs,
    out: &Path,
    keep: &Kept,
    hooks: Hooks,
) -> Result<SweepSummary, RunError> {
    // An input the bundle cannot hold is refused before anything exists.
    snapshot::check(m)?;
    // Only the hosts with cells to run here: a split sweep's other hosts
    // belong to other agents.
    let claims = claim(inv, p, m.name.as_str(), keep, false).await?;
    let bundle = match Bundle::create(out, m.name.as_str()) {
        Ok(b) => b,
        Err(e) => {
            claims.release().await;
            return Err(e.into());
        }
    };
    execute_hooked(bundle, inv, p, Some((m, inputs)), keep, claims, hooks).await
}

/// `run --from BUNDLE`: the very same sweep again, from the bundle's
/// snapshots, into a new bundle whose bag-info names the old one.
pub async fn rerun(
    from: &Path,
    out: &Path,
    given: &GivenPaths,
    hooks: Hooks,
) -> Result<SweepSummary, RunError> {
    let (inv, m, inputs) = snapshot::read(from, given)?;
    let p = plan(&inv, &m);
    snapshot::same_cells(from, &p)?;
    snapshot::check(&m)?;
    let old = from
        .canonicalize()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| from.display().to_string());
    let claims = claim(&inv, &p, m.name.as_str(), &Kept::new(), false).await?;
    let created = Bundle::create_with(
        out,
        m.name.as_str(),
        CreateOptions {
            rerun_of: Some(old),
        },
    );
    let bundle = match created {
        Ok(b) => b,
        Err(e) => {
            claims.release().await;
            return Err(e.into());
        }
    };
    execute_hooked(
        bundle,
        &inv,
        &p,
        Some((&m, &inputs)),
        &Kept::new(),
        claims,
        hooks,
    )
    .await
}

/// Finish a sweep whose orchestrator died: re-plan from the bundle's own
/// snapshots, tear down what the dead run left on every host, keep every
/// cell whose files verify, run the rest, close the bundle.
/// The bundle's recorded paths are used only as `given` names them.
pub async fn resume(
    dir: &Path,
    given: &GivenPaths,
    display: Display,
) -> Result<SweepSummary, RunError> {
    let data = dir.join("data");
    let (inv, m, _) = snapshot::read(dir, given)?;
    let p = plan(&inv, &m);
    snapshot::same_cells(dir, &p)?;
    let mut bundle = Bundle::open(dir)?;
    // Every host is torn down first: each is locked before the bundle changes.
    let claims = claim(&inv, &p, m.name.as_str(), &Kept::new(), true).await?;
    let mut keep = Kept::new();
    for c in &p.cells {
        // A cell recorded as not run (an interrupted sweep) runs now; one
        // that ran (done or failed) is kept if its files still verify.
        let result = std::fs::read(data.join(format!("cells/{}/result.json", c.id)))
            .ok()
            .and_then(|b| serde_json::from_slice::<CellResult>(&b).ok());
        let ran = result
            .as_ref()
            .is_some_and(|r| !matches!(r.status, CellStatus::NotRun { .. }));
        if ran && bundle.cell_files_intact(&c.id) {
            let value = result.as_ref().and_then(Metric::compared_value);
            keep.insert(c.id.clone(), value);
        } else if let Err(e) = bundle.discard_cell(&c.id) {
            claims.release().await;
            return Err(e.into());
        }
    }
    tracing::info!(
        "resuming {}: {} of {} cells verify and are kept",
        dir.display(),
        keep.len(),
        p.cells.len()
    );
    // The ETA starts from what this very sweep took before it stopped.
    let own = crate::results::bundle::timings::read_bundle(dir).unwrap_or_default();
    let mut history = crate::results::bundle::timings::History::default();
    history.add_bundle(own);
    let hooks = Hooks {
        display,
        history,
        ..Hooks::default()
    };
    execute_hooked(bundle, &inv, &p, None, &keep, claims, hooks).await
}

/// The counted values of `host`'s kept cells (a resumed sweep), so that its
/// adaptive repeats decide on every repeat, not only on the ones run now.
fn kept_counted(p: &Plan, host: &HostName, keep: &Kept) -> Counted {
    let counted = Counted::for_plan(p);
    for c in p.cells.iter().filter(|c| &c.host == host) {
        if let Some(Some(v)) = keep.get(&c.id) {
            counted.add(c, *v);
        }
    }
    counted
}

/// What one host's part of a sweep needs besides the connection.
pub struct HostJob<'a> {
    pub host: &'a Host,
    pub cells: Vec<&'a Cell>,
    pub needs: Needs,
    /// Tear down what a killed run left after the checks: a sweep does,
    /// under its host lock; `check` does not.
    pub pre_clean: bool,
    pub counted: Counted,
    /// `order = "interleaved"`/`"random"`: the host's batches (the cells
    /// come in their run order); empty: sequential.
    pub batches: Vec<crate::plan::Batch>,
    /// Facts the host cannot tell of itself, recorded with its own (a
    /// guest: `hypervisor.*`, what its physical host started it with).
    pub extra_facts: Vec<(String, String)>,
}

/// One host's part of a sweep on a connected remote: prepare it (scripts,
/// facts, guard), then run its cells, or record them as not run with the
/// reason.  `run` and `plan --commands` both go through here.
pub async fn host_sweep<R: Remote>(
    remote: &R,
    job: HostJob<'_>,
    sink: &Sink,
    cancel: watch::Receiver<bool>,
) -> (HostReport, HostTally) {
    let (mut report, prepared) = prepare(remote, job.host, &job.needs, job.pre_clean).await;
    for (k, v) in &job.extra_facts {
        report.facts.insert(k.clone(), v.clone());
    }
    write_report(sink, &report);
    let mut tally = HostTally::default();
    match prepared {
        Some(p) if report.ready => {
            let w = Worker {
                remote,
                host: &p.host,
                paths: p.paths,
                sink,
                cancel,
                counted: job.counted,
                ident: report
                    .parsed
                    .ident_of(p.host.device().as_str())
                    .map(str::to_string),
                idents: p
                    .host
                    .devices
                    .iter()
                    .map(|d| report.parsed.ident_of(d.as_str()).map(str::to_string))
                    .collect(),
                limits: Default::default(),
            };
            tally = if job.batches.is_empty() {
                w.run_cells(&job.cells).await
            } else {
                w.run_batches(&job.cells, &job.batches).await
            };
        }
        _ => not_ready(sink, &report, &job.cells, &mut tally),
    }
    (report, tally)
}

fn write_report(sink: &Sink, report: &HostReport) {
    let name = &report.host;
    let _ = sink.write_json(&format!("hosts/{name}/facts.json"), &report.facts);
    let _ = sink.write_json(&format!("hosts/{name}/check.json"), report);
}

fn not_ready(sink: &Sink, report: &HostReport, cells: &[&Cell], tally: &mut HostTally) {
    let reason = format!("host not ready: {}", report.problems.join("; "));
    sink.emit(RunEvent::Note {
        host: report.host.clone(),
        message: reason.clone(),
    });
    sink.record_not_run(cells, &reason, tally);
}

/// One host, connected and locked for the sweep (see [`super::lock`]).
pub struct Claim {
    ssh: SshRemote,
    held: Option<HostLock>,
    /// What was sent so far (the lock), for the host's commands log.
    lines: Vec<String>,
    /// Why the host cannot be used although it answered (its lock could
    /// not be taken): its cells are recorded as not run with this.
    problem: Option<String>,
}

/// Every host a sweep will touch, connected and locked, before the bundle
/// is made or changed: a sweep refused here has touched nothing.
pub struct Claims {
    hosts: HashMap<String, Result<Claim, (RemoteError, Instant)>>,
    /// Every host is claimed, also those with no cell left to run
    /// (resume: each is torn down).
    all_hosts: bool,
}

impl Claims {
    /// Release every lock and close every connection.
    pub async fn release(self) {
        let all = self
            .hosts
            .into_values()
            .filter_map(Result::ok)
            .map(|c| async move {
                if let Some(h) = c.held {
                    h.release().await;
                }
                c.ssh.disconnect().await;
            });
        futures::future::join_all(all).await;
    }
}

/// Connect to every host with cells to run (every host when `all_hosts`),
/// refuse two entries that reach one machine, and take each host's lock.
/// A lock held by someone else refuses the whole sweep (nothing touched).
async fn claim(
    inv: &Inventory,
    p: &Plan,
    sweep_name: &str,
    keep: &Kept,
    all_hosts: bool,
) -> Result<Claims, RunError> {
    // A guest is not claimed itself (it is not up): its physical host is,
    // whose lock covers the guest's use of its disk.
    let wanted: Vec<&Host> = p
        .hosts
        .iter()
        .filter_map(|hp| inv.hosts.iter().find(|h| h.name == hp.host))
        .map(|h| physical_of(inv, h))
        .filter(|h| {
            all_hosts
                || p.cells.iter().any(|c| {
                    !keep.contains_key(&c.id)
                        && inv
                            .hosts
                            .iter()
                            .find(|x| x.name == c.host)
                            .is_some_and(|x| physical_of(inv, x).name == h.name)
                })
        })
        .fold(Vec::new(), |mut v: Vec<&Host>, h| {
            if !v.iter().any(|x| x.name == h.name) {
                v.push(h);
            }
            v
        });
    let connected = futures::future::join_all(wanted.iter().map(|host| async move {
        let t0 = Instant::now();
        let r = SshRemote::connect(&ssh_target(&inv.path, host)).await;
        (*host, r.map_err(|e| (e, t0)))
    }))
    .await;
    // One machine under two names: refused before any lock is taken.
    let same = same_machines(connected.iter().filter_map(|(host, r)| {
        r.as_ref()
            .ok()
            .map(|ssh| (host.name.as_str(), ssh.host_key()))
    }))
    .into_iter()
    .next()
    .map(|(first, second, fingerprint)| RunError::SameMachine {
        first,
        second,
        fingerprint,
    });
    if let Some(e) = same {
        for (_, r) in &connected {
            if let Ok(ssh) = r {
                ssh.disconnect().await;
            }
        }
        return Err(e);
    }
    // Leased: its holders can be ended by the next sweep from this machine
    // once this process is gone, and by nothing else (see super::lock).
    let holder = Holder::leased(sweep_name);
    let holder = &holder;
    let locked = futures::future::join_all(connected.into_iter().map(|(host, r)| async move {
        let name = host.name.as_str().to_string();
        let ssh = match r {
            Ok(ssh) => ssh,
            Err(e) => return (name, Err(e), None),
        };
        if HostPaths::new(host).is_none() {
            // No script for its OS: `prepare` says so and nothing runs.
            let claim = Claim {
                ssh,
                held: None,
                lines: Vec::new(),
                problem: None,
            };
            return (name, Ok(claim), None);
        }
        let logged = Logged::new(&ssh, host.become_);
        let result = lock_host(&logged, host, holder).await;
        let lines = logged.into_lines();
        let (held, problem, busy) = match result {
            Ok(h) => (Some(h), None, None),
            Err(e @ LockError::Busy { .. }) => (None, None, Some(e.to_string())),
            Err(e) => (None, Some(format!("failed to {e}")), None),
        };
        let claim = Claim {
            ssh,
            held,
            lines,
            problem,
        };
        (name, Ok(claim), busy)
    }))
    .await;
    let refusals: Vec<String> = locked.iter().filter_map(|(_, _, b)| b.clone()).collect();
    let claims = Claims {
        hosts: locked.into_iter().map(|(n, c, _)| (n, c)).collect(),
        all_hosts,
    };
    if !refusals.is_empty() {
        claims.release().await;
        return Err(RunError::Locked { refusals });
    }
    Ok(claims)
}

/// `host`'s cells of `p` not in `keep`, as one job.
fn job_for<'a>(p: &'a Plan, keep: &Kept, host: &'a Host) -> HostJob<'a> {
    let hp = p.hosts.iter().find(|hp| hp.host == host.name);
    HostJob {
        host,
        cells: p
            .cells
            .iter()
            .filter(|c| c.host == host.name && !keep.contains_key(&c.id))
            .collect(),
        needs: needs_of(p, host.name.as_str()),
        pre_clean: true,
        counted: kept_counted(p, &host.name, keep),
        batches: hp.map(|hp| hp.batches.clone()).unwrap_or_default(),
        extra_facts: Vec::new(),
    }
}

/// The host whose machine `h` runs on: itself, or a guest's physical host.
pub fn physical_of<'a>(inv: &'a Inventory, h: &'a Host) -> &'a Host {
    h.guest_of
        .as_ref()
        .and_then(|of| inv.hosts.iter().find(|x| &x.name == of))
        .unwrap_or(h)
}

/// Run the cells of `p` not in `keep` into `bundle` and close it.
/// The hosts were claimed (connected, locked) by [`claim`]; under the lock
/// each is torn down after its checks (what a killed sweep left); a resume
/// (`claims.all_hosts`) keeps its own commands log.
async fn execute_hooked<'a>(
    bundle: Bundle,
    inv: &'a Inventory,
    p: &'a Plan,
    snapshot_of: Option<(&Matrix, &Inputs)>,
    keep: &Kept,
    claims: Claims,
    hooks: Hooks,
) -> Result<SweepSummary, RunError> {
    let Hooks {
        opened,
        tap,
        cancel: external,
        display: shown,
        history,
    } = hooks;
    if let Some(o) = opened {
        let _ = o.send(bundle.path().to_path_buf());
    }
    let resuming = claims.all_hosts;
    let mut claimed = claims.hosts;
    let root = bundle.path().to_path_buf();
    let (tx, mut rx) = mpsc::unbounded_channel::<RunEvent>();
    let sink = Sink::new(bundle, tx);
    if let Some((m, inputs)) = snapshot_of {
        if let Err(e) = snapshot::write(&sink, inputs, m, p) {
            Claims {
                hosts: claimed,
                all_hosts: resuming,
            }
            .release()
            .await;
            return Err(e);
        }
    }
    // Each attempt keeps its own log of what it sent.
    let log_name = if resuming {
        format!(
            "commands-resume-{}.log",
            crate::text::now_rfc3339().replace(':', "")
        )
    } else {
        "commands.log".to_string()
    };
    let total = p.cells.iter().filter(|c| !keep.contains_key(&c.id)).count();
    let shown_bundle = root.clone();
    let display = tokio::spawn(async move {
        let mut r = progress::reporter(total, shown, &shown_bundle);
        let mut tick = tokio::time::interval(std::time::Duration::from_secs(1));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            let e = tokio::select! {
                e = rx.recv() => e,
                _ = tick.tick() => {
                    r.tick();
                    continue;
                }
            };
            let Some(e) = e else { break };
            r.report(&e);
            if let Some(t) = &tap {
                let _ = t.send(e);
            }
        }
        r.finish();
    });
    let (cancel_tx, cancel_rx) = watch::channel(false);
    let signals = tokio::spawn(async move {
        let stopped = async {
            match external {
                Some(mut rx) => {
                    while !*rx.borrow() {
                        if rx.changed().await.is_err() {
                            futures::future::pending::<()>().await;
                        }
                    }
                }
                None => futures::future::pending::<()>().await,
            }
        };
        tokio::select! {
            _ = wait_for_interrupt() => {
                tracing::warn!("interrupted: stopping, tearing every host down, closing the bundle");
            }
            _ = stopped => {
                tracing::warn!("stopped: tearing every host down, closing the bundle");
            }
        }
        let _ = cancel_tx.send(true);
    });

    let job_of = |host: &'a Host| job_for(p, keep, host);
    // One future per machine: a physical host (with its guests, if the
    // plan has cells for them) or a host of its own.
    let mut machines: Vec<&Host> = Vec::new();
    for hp in &p.hosts {
        let Some(h) = inv.hosts.iter().find(|h| h.name == hp.host) else {
            continue;
        };
        let m = physical_of(inv, h);
        if !machines.iter().any(|x| x.name == m.name) {
            machines.push(m);
        }
    }
    let futs = machines.into_iter().map(|host| {
        let job = job_of(host);
        let guests: Vec<HostJob> = inv
            .hosts
            .iter()
            .filter(|g| g.guest_of.as_ref() == Some(&host.name))
            .filter(|g| p.hosts.iter().any(|hp| hp.host == g.name))
            .map(job_of)
            .collect();
        let claim = claimed.remove(host.name.as_str());
        let (sink, cancel, log_name, history) = (&sink, cancel_rx.clone(), &log_name, &history);
        let inv_path = inv.path.as_path();
        async move {
            let members: Vec<(&Host, usize)> = std::iter::once((host, job.cells.len()))
                .chain(guests.iter().map(|g| (g.host, g.cells.len())))
                .collect();
            for (h, n) in &members {
                let cells = if h.name == host.name {
                    &job.cells
                } else {
                    &guests
                        .iter()
                        .find(|g| g.host.name == h.name)
                        .expect("a member")
                        .cells
                };
                let first = sink.eta_begin(
                    h.name.as_str(),
                    cells,
                    h.vm.as_ref().map(|vm| vm.accel),
                    history.of(h.name.as_str()).to_vec(),
                );
                sink.emit(RunEvent::HostStarted {
                    host: h.name.as_str().to_string(),
                    cells: *n,
                    eta: first.remaining(),
                });
            }
            let tallies: Vec<(String, HostTally)> = match claim {
                None => members
                    .iter()
                    .map(|(h, _)| (h.name.as_str().to_string(), HostTally::default()))
                    .collect(),
                Some(Ok(claim)) => {
                    run_claimed(
                        claim,
                        host,
                        job,
                        guests,
                        inv_path,
                        p.guest_order,
                        sink,
                        cancel,
                        log_name,
                    )
                    .await
                }
                Some(Err((e, t0))) => {
                    let report = HostReport::unreachable(host, &e, t0);
                    write_report(sink, &report);
                    let mut out = Vec::new();
                    let mut tally = HostTally::default();
                    not_ready(sink, &report, &job.cells, &mut tally);
                    out.push((host.name.as_str().to_string(), tally));
                    for g in &guests {
                        let mut tally = HostTally::default();
                        sink.record_not_run(
                            &g.cells,
                            &format!("its physical host {} is not reachable: {e}", host.name),
                            &mut tally,
                        );
                        out.push((g.host.name.as_str().to_string(), tally));
                    }
                    out
                }
            };
            let mut total = HostTally::default();
            for (name, tally) in tallies {
                sink.eta_finish(&name);
                sink.emit(RunEvent::HostFinished {
                    host: name,
                    done: tally.done,
                    failed: tally.failed,
                    not_run: tally.not_run,
                    not_needed: tally.not_needed,
                });
                total = total + tally;
            }
            total
        }
    });
    let tallies = futures::future::join_all(futs).await;
    signals.abort();
    let interrupted = *cancel_rx.borrow();
    let tally = tallies.into_iter().fold(HostTally::default(), |a, t| a + t);
    if let Some(reason) = sink.broken().map(str::to_string) {
        // Left as a killed sweep leaves it (no close: that would write
        // manifests on a full disk): `resume` finishes it.
        drop(sink);
        let _ = display.await;
        return Err(RunError::Unrecordable {
            bundle: root,
            reason,
            done: tally.done,
        });
    }
    let status = if interrupted {
        SweepStatus::Incomplete
    } else {
        SweepStatus::Complete
    };
    let closed = sink.close(status);
    drop(sink);
    let _ = display.await;
    closed?;
    Ok(SweepSummary {
        bundle: root,
        tally,
        interrupted,
    })
}

/// One claimed host's part: its cells, stopped like an interrupt when its
/// lock is lost; then the lock released, the commands log written, the
/// connection closed.
#[allow(clippy::too_many_arguments)]
async fn run_claimed(
    claim: Claim,
    host: &Host,
    job: HostJob<'_>,
    guests: Vec<HostJob<'_>>,
    inv_path: &Path,
    guest_order: crate::config::GuestOrder,
    sink: &Sink,
    cancel: watch::Receiver<bool>,
    log_name: &str,
) -> Vec<(String, HostTally)> {
    let guest_names: Vec<String> = guests
        .iter()
        .map(|g| g.host.name.as_str().to_string())
        .collect();
    let guest_jobs = guests;
    let name = host.name.as_str().to_string();
    let Claim {
        ssh,
        held,
        lines,
        problem,
    } = claim;
    let logged = Logged::with_lines(&ssh, host.become_, lines);
    let mut guest_logs: Vec<(String, String)> = Vec::new();
    let tallies: Vec<(String, HostTally)> = match problem {
        Some(problem) => {
            let mut report = HostReport::new(host);
            report.problems.push(problem);
            write_report(sink, &report);
            let mut tally = HostTally::default();
            not_ready(sink, &report, &job.cells, &mut tally);
            let mut out = vec![(name.clone(), tally)];
            for g in &guest_jobs {
                let mut tally = HostTally::default();
                sink.record_not_run(
                    &g.cells,
                    &format!(
                        "its physical host {name} is not ready: {}",
                        report.problems.join("; ")
                    ),
                    &mut tally,
                );
                out.push((g.host.name.as_str().to_string(), tally));
            }
            out
        }
        None => {
            let (host_tx, host_rx) = watch::channel(false);
            let lost = held.as_ref().map(|h| h.lost());
            let was_lost = std::sync::atomic::AtomicBool::new(false);
            let mut global = cancel;
            let watcher = async {
                tokio::select! {
                    r = global.wait_for(|c| *c) => {
                        if r.is_err() {
                            futures::future::pending::<()>().await;
                        }
                    }
                    _ = async {
                        match lost {
                            Some(l) => l.await,
                            None => futures::future::pending::<()>().await,
                        }
                    } => was_lost.store(true, std::sync::atomic::Ordering::SeqCst),
                }
                // No new step starts, at once; why the lock was lost is
                // asked of the host once the steps have stopped.
                let _ = host_tx.send(true);
                futures::future::pending::<()>().await
            };
            let work = async {
                if guest_jobs.is_empty() {
                    let (_, tally) = host_sweep(&logged, job, sink, host_rx).await;
                    vec![(name.clone(), tally)]
                } else {
                    let link = super::guest::SshLink { inv_path };
                    let out = super::guest::machine_sweep(
                        &logged,
                        host,
                        guest_order,
                        job,
                        guest_jobs,
                        &link,
                        sink,
                        host_rx,
                    )
                    .await;
                    guest_logs = out.guest_logs;
                    out.tallies
                }
            };
            let tallies = tokio::select! {
                t = work => t,
                _ = watcher => unreachable!("the watcher never ends"),
            };
            if was_lost.load(std::sync::atomic::Ordering::SeqCst) {
                let why = match held.as_ref() {
                    Some(h) => h.why_lost(&logged, &name).await,
                    None => "the host lock was lost".into(),
                };
                sink.emit(RunEvent::Note {
                    host: name.clone(),
                    message: format!("{why}: no new step starts on this host; `fsmatrix resume` finishes its cells"),
                });
            }
            tallies
        }
    };
    for (g, text) in &guest_logs {
        let rel = format!("hosts/{g}/{log_name}");
        if let Err(e) = sink.write(&rel, text.as_bytes()) {
            sink.emit(RunEvent::Note {
                host: g.clone(),
                message: format!("failed to write {rel}: {e}"),
            });
        }
    }
    let _ = guest_names;
    if let Some(h) = held {
        h.release().await;
    }
    let rel = format!("hosts/{name}/{log_name}");
    if let Err(e) = sink.write(&rel, logged.text().as_bytes()) {
        sink.emit(RunEvent::Note {
            host: name.clone(),
            message: format!("failed to write {rel}: {e}"),
        });
    }
    ssh.disconnect().await;
    tallies
}

/// Ctrl-C or SIGTERM.
async fn wait_for_interrupt() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    let term_fut = async {
        match term.as_mut() {
            Some(t) => {
                t.recv().await;
            }
            None => futures::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term_fut => {}
    }
}
