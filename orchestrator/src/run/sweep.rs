//! A sweep: every host in parallel (one tokio task each), cells of one host
//! in plan order; and the two ways to finish or repeat one from its bundle
//! (`resume`, `run --from`).
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

use tokio::sync::{mpsc, watch};

use super::adaptive::Counted;
use super::check::{needs_of, prepare, ssh_target, HostReport};
use super::error::RunError;
use super::events::RunEvent;
use super::logged::Logged;
use super::progress;
use super::sink::{HostTally, Sink};
use super::snapshot::{self, Inputs};
use super::worker::Worker;
use crate::config::values::HostName;
use crate::config::{FsType, Host, Inventory, Matrix};
use crate::plan::{plan, Cell, Plan};
use crate::remote::{Remote, SshRemote};
use crate::results::bundle::{Bundle, CreateOptions};
use crate::results::journal::SweepStatus;
use crate::results::{CellResult, CellStatus};

/// Outcome of a sweep.
#[derive(Debug, Clone)]
pub struct SweepSummary {
    pub bundle: PathBuf,
    pub tally: HostTally,
    pub interrupted: bool,
}

/// Cells a resumed sweep keeps: id → tps when the cell is done.
type Kept = HashMap<String, Option<f64>>;

/// Run the whole sweep into a new bundle under `out`.
pub async fn sweep(inv: &Inventory, m: &Matrix, out: &Path) -> Result<SweepSummary, RunError> {
    let p = plan(inv, m);
    let inputs = Inputs::read(inv, m)?;
    let bundle = Bundle::create(out, m.name.as_str())?;
    execute(bundle, inv, &p, Some((m, &inputs)), &Kept::new(), false).await
}

/// `run --from BUNDLE`: the very same sweep again, from the bundle's
/// snapshots, into a new bundle whose bag-info names the old one.
pub async fn rerun(from: &Path, out: &Path) -> Result<SweepSummary, RunError> {
    let (inv, m, inputs) = snapshot::read(from)?;
    let p = plan(&inv, &m);
    snapshot::same_cells(from, &p)?;
    let old = from
        .canonicalize()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| from.display().to_string());
    let bundle = Bundle::create_with(
        out,
        m.name.as_str(),
        CreateOptions {
            rerun_of: Some(old),
        },
    )?;
    execute(bundle, &inv, &p, Some((&m, &inputs)), &Kept::new(), false).await
}

/// Finish a sweep whose orchestrator died: re-plan from the bundle's own
/// snapshots, tear down what the dead run left on every host, keep every
/// cell whose files verify, run the rest, close the bundle.
pub async fn resume(dir: &Path) -> Result<SweepSummary, RunError> {
    let data = dir.join("data");
    let (inv, m, _) = snapshot::read(dir)?;
    let p = plan(&inv, &m);
    snapshot::same_cells(dir, &p)?;
    let mut bundle = Bundle::open(dir)?;
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
            let tps = result.and_then(|r| match r.status {
                CellStatus::Done { run } => Some(run.tps),
                _ => None,
            });
            keep.insert(c.id.clone(), tps);
        } else {
            bundle.discard_cell(&c.id)?;
        }
    }
    tracing::info!(
        "resuming {}: {} of {} cells verify and are kept",
        dir.display(),
        keep.len(),
        p.cells.len()
    );
    execute(bundle, &inv, &p, None, &keep, true).await
}

/// The counted tps of `host`'s kept cells (a resumed sweep), so that its
/// adaptive repeats decide on every repeat, not only on the ones run now.
fn kept_counted(p: &Plan, host: &HostName, keep: &Kept) -> Counted {
    let counted = Counted::default();
    for c in p.cells.iter().filter(|c| &c.host == host) {
        if let Some(Some(tps)) = keep.get(&c.id) {
            counted.add(c, *tps);
        }
    }
    counted
}

/// What one host's part of a sweep needs besides the connection.
pub struct HostJob<'a> {
    pub host: &'a Host,
    pub cells: Vec<&'a Cell>,
    pub needs: Vec<FsType>,
    /// Tear down what a killed run left before the checks (resume).
    pub pre_clean: bool,
    pub counted: Counted,
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
    let (report, prepared) = prepare(remote, job.host, &job.needs, job.pre_clean).await;
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
            };
            tally = w.run_cells(&job.cells).await;
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

/// Run the cells of `p` not in `keep` into `bundle` and close it.
/// `pre_clean`: tear every host down before its checks (after a crash).
async fn execute(
    bundle: Bundle,
    inv: &Inventory,
    p: &Plan,
    snapshot_of: Option<(&Matrix, &Inputs)>,
    keep: &Kept,
    pre_clean: bool,
) -> Result<SweepSummary, RunError> {
    let root = bundle.path().to_path_buf();
    let (tx, mut rx) = mpsc::unbounded_channel::<RunEvent>();
    let sink = Sink {
        bundle: Some(Mutex::new(bundle)),
        events: tx,
    };
    if let Some((m, inputs)) = snapshot_of {
        snapshot::write(&sink, inputs, m, p)?;
    }
    // Each attempt keeps its own log of what it sent.
    let log_name = if pre_clean {
        format!(
            "commands-resume-{}.log",
            crate::text::now_rfc3339().replace(':', "")
        )
    } else {
        "commands.log".to_string()
    };
    let total = p.cells.iter().filter(|c| !keep.contains_key(&c.id)).count();
    let display = tokio::spawn(async move {
        let mut r = progress::reporter(total);
        while let Some(e) = rx.recv().await {
            r.report(&e);
        }
        r.finish();
    });
    let (cancel_tx, cancel_rx) = watch::channel(false);
    let signals = tokio::spawn(async move {
        wait_for_interrupt().await;
        tracing::warn!("interrupted: stopping, tearing every host down, closing the bundle");
        let _ = cancel_tx.send(true);
    });

    let futs = p.hosts.iter().filter_map(|hp| {
        let host = inv.hosts.iter().find(|h| h.name == hp.host)?;
        let cells: Vec<&Cell> = p
            .cells
            .iter()
            .filter(|c| c.host == hp.host && !keep.contains_key(&c.id))
            .collect();
        let job = HostJob {
            host,
            cells,
            needs: needs_of(p, hp.host.as_str()),
            pre_clean,
            counted: kept_counted(p, &host.name, keep),
        };
        let (sink, cancel, log_name) = (&sink, cancel_rx.clone(), &log_name);
        Some(async move {
            let name = host.name.as_str().to_string();
            sink.emit(RunEvent::HostStarted {
                host: name.clone(),
                cells: job.cells.len(),
                eta: hp.eta,
            });
            if job.cells.is_empty() && !pre_clean {
                return HostTally::default();
            }
            let t0 = Instant::now();
            let tally = match SshRemote::connect(&ssh_target(&inv.path, host)).await {
                Ok(ssh) => {
                    let logged = Logged::new(&ssh, host.uses_sudo());
                    let (_, tally) = host_sweep(&logged, job, sink, cancel).await;
                    let rel = format!("hosts/{name}/{log_name}");
                    if let Err(e) = sink.write(&rel, logged.text().as_bytes()) {
                        sink.emit(RunEvent::Note {
                            host: name.clone(),
                            message: format!("failed to write {rel}: {e}"),
                        });
                    }
                    ssh.disconnect().await;
                    tally
                }
                Err(e) => {
                    let report = HostReport::unreachable(host, &e, t0);
                    write_report(sink, &report);
                    let mut tally = HostTally::default();
                    not_ready(sink, &report, &job.cells, &mut tally);
                    tally
                }
            };
            sink.emit(RunEvent::HostFinished {
                host: name,
                done: tally.done,
                failed: tally.failed,
                not_run: tally.not_run,
                not_needed: tally.not_needed,
            });
            tally
        })
    });
    let tallies = futures::future::join_all(futs).await;
    signals.abort();
    let interrupted = *cancel_rx.borrow();
    let tally = tallies.into_iter().fold(HostTally::default(), |a, t| a + t);
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
