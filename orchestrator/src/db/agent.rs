//! `fsmatrix agent`: take the next queued sweep whose hosts can all be
//! leased, run it exactly as `run` does (bundle on this machine's disk),
//! publish every cell as it ends, let go; again until the queue is idle.
//!
//! A sweep is leased host by host in one transaction ([`queue::lease_sweep`]):
//! all its hosts, or, when its matrix says `split_hosts = true`, the free
//! hosts that still have cells (other agents take the rest), and kept by a heartbeat (a third of the lease's life); a lost lease or a
//! cancelled sweep stops the run as an interrupt would (teardown first).  On
//! the hosts themselves the run takes the per-host lock as `run` does, so a
//! lease that expired under a live agent still never lets two sweeps share a
//! host.  An agent that dies loses its leases at expiry; the next agent to
//! lease the sweep keeps the cells already published (as `resume` keeps
//! verified cells) and runs the rest.
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot, watch};
use tokio_postgres::Client;

use super::{conn, queue, registry, schema, DbError, DbTarget};
use crate::config::{Inventory, Matrix};
use crate::results::bundle::parse_cell_result;
use crate::results::CellStatus;
use crate::run::events::RunEvent;
use crate::run::snapshot::Inputs;

/// How an agent works.
#[derive(Debug, Clone)]
pub struct AgentOptions {
    /// The operator's host registry (`--registry`): the only hosts, keys,
    /// known hosts, devices and consents a sweep gets ([`registry`]).
    pub registry: Inventory,
    /// Folder under which each sweep's bundle is made.
    pub out: PathBuf,
    /// Stop after this long with nothing to lease (None: never).
    pub idle_exit: Option<Duration>,
    /// A lease's life; renewed every third of it.
    pub lease_ttl: Duration,
    /// How often an idle agent looks at the queue.
    pub poll: Duration,
}

/// What one sweep's turn ended as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SweepTurn {
    pub sweep: i64,
    pub bundle: Option<PathBuf>,
    pub published: usize,
    /// The sweep was finished by this turn (no cell left to run).
    pub finished: bool,
    /// Why the turn stopped early (interrupt, lost lease, cancel, a refusal).
    pub stopped: Option<String>,
}

/// This agent's name in the leases: user@machine:pid.
pub fn holder_name() -> String {
    let user = std::env::var("USER").unwrap_or_else(|_| "unknown".into());
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into());
    format!("{user}@{host}:{}", std::process::id())
}

/// Connect, retrying with backoff (up to `patience`): a database restarted
/// under a running agent comes back.
async fn reconnect(target: &DbTarget, patience: Duration) -> Result<Client, DbError> {
    let t0 = Instant::now();
    let mut wait = Duration::from_millis(200);
    loop {
        match conn::connect(target).await {
            Ok(c) => return Ok(c),
            Err(e) if t0.elapsed() < patience => {
                tracing::warn!("{e}; trying again in {:.1} s", wait.as_secs_f64());
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(Duration::from_secs(5));
            }
            Err(e) => return Err(e),
        }
    }
}

/// Run the agent until the queue stays idle for `idle_exit` or it is
/// interrupted; the turns it took.
pub async fn run(target: &DbTarget, opts: &AgentOptions) -> Result<Vec<SweepTurn>, DbError> {
    // A database that is down at the start is an error: nothing is leased.
    let mut client = conn::connect(target).await?;
    schema::require_current(&client).await?;
    let holder = holder_name();
    let ttl = opts.lease_ttl.as_secs().max(3) as i64;
    let mut turns = Vec::new();
    let mut idle_since = Instant::now();
    let (int_tx, mut int_rx) = watch::channel(false);
    let signals = tokio::spawn(async move {
        let _ = tokio::signal::ctrl_c().await;
        let _ = int_tx.send(true);
    });
    loop {
        if *int_rx.borrow() {
            break;
        }
        let (open, leased) = match queue::lease_next(&mut client, &holder, ttl).await {
            Ok(l) => l,
            Err(e) => {
                tracing::warn!("{e}");
                client = reconnect(target, Duration::from_secs(120)).await?;
                continue;
            }
        };
        let Some((id, leased)) = leased else {
            // Idle means nothing left to do, not only nothing leasable now:
            // an open sweep whose hosts others hold is waited for.
            if open > 0 {
                idle_since = Instant::now();
            }
            if opts.idle_exit.is_some_and(|d| idle_since.elapsed() >= d) {
                break;
            }
            tokio::select! {
                _ = tokio::time::sleep(opts.poll) => {}
                _ = int_rx.changed() => {}
            }
            continue;
        };
        tracing::info!("agent {holder}: sweep {id} leased ({} hosts)", leased.len());
        let turn = one_sweep(&mut client, target, id, &leased, &holder, ttl, opts).await;
        let _ = queue::release(&client, id, &holder).await;
        match turn {
            Ok(t) => {
                let again = t.stopped.is_some();
                turns.push(t);
                if again && !*int_rx.borrow() {
                    // A turn that stopped (a host busy, a lease lost): give
                    // the queue to others before taking it again.
                    tokio::time::sleep(opts.poll).await;
                }
            }
            Err(e) => {
                tracing::warn!("sweep {id}: {}", crate::text::terminal_safe(&e.to_string()));
                turns.push(SweepTurn {
                    sweep: id,
                    bundle: None,
                    published: 0,
                    finished: false,
                    stopped: Some(e.to_string()),
                });
                // Give the queue to others before trying again.
                tokio::time::sleep(opts.poll).await;
            }
        }
        idle_since = Instant::now();
    }
    signals.abort();
    Ok(turns)
}

/// Mark a sweep failed with the reason (nothing of it can run).
async fn refuse_sweep(client: &Client, id: i64, why: &str) -> Result<(), DbError> {
    client
        .execute(
            "UPDATE fsmatrix_sweeps SET state = 'failed', ended_at = now(), note = $2 WHERE id = $1",
            &[&id, &why],
        )
        .await
        .map_err(DbError::query("mark the sweep failed"))?;
    Ok(())
}

async fn one_sweep(
    client: &mut Client,
    target: &DbTarget,
    id: i64,
    leased: &[(String, i32)],
    holder: &str,
    ttl: i64,
    opts: &AgentOptions,
) -> Result<SweepTurn, DbError> {
    let row = client
        .query_one(
            "SELECT inventory, matrix, scripts::text, (plan->>'seed')::bigint
             FROM fsmatrix_sweeps WHERE id = $1",
            &[&id],
        )
        .await
        .map_err(DbError::query("read the sweep"))?;
    // A private folder for the submission's matrix and scripts (written
    // from the database's content, never read from the submitter's paths);
    // kept until the turn ends.
    let workdir = tempfile::Builder::new()
        .prefix("fsmatrix-sweep-")
        .tempdir()
        .map_err(|e| DbError::Refused(format!("cannot make a private folder: {e}")))?;
    let submitted: String = row.get(0);
    let matrix_text: String = row.get(1);
    let seed: Option<i64> = row.get(3);
    // The registry's rows for the hosts the submission names, narrowed as
    // it asks; its matrix and scripts from their content: the trust model
    // (docs/trust.md).  A request the registry does not grant refuses the
    // sweep before anything runs.
    let loaded = (|| -> Result<(Inventory, Matrix, Inputs), String> {
        let inv = registry::sweep_inventory(&opts.registry, &submitted)?;
        let scripts: Vec<queue::SubmittedScript> =
            serde_json::from_str(&row.get::<_, String>(2))
                .map_err(|e| format!("the submitted scripts do not read: {e}"))?;
        registry::check_matrix_scripts(&matrix_text, &scripts)?;
        let matrix_path = registry::materialize(workdir.path(), &matrix_text, &scripts)?;
        let inventory_text = crate::config::inventory::render(&inv);
        // The sweep's inventory as the bundle keeps it, parsed back by the
        // same validators as `plan` (the registry's ssh config already
        // applied: the text says `ssh_config = "none"`).
        let inv = Inventory::parse(&opts.registry.path, inventory_text.clone())
            .map_err(|e| format!("the registry's rows do not load as an inventory: {e}"))?;
        let mut m = Matrix::parse(&matrix_path, matrix_text.clone()).map_err(|e| e.to_string())?;
        m.check_against(&inv, crate::generator::script_uses)
            .map_err(|e| e.to_string())?;
        // order = "random" without a seed: the one drawn at submit.
        m.use_recorded_seed(seed.and_then(|s| u64::try_from(s).ok()));
        Ok((
            inv,
            m,
            Inputs {
                inventory_text,
                matrix_text: matrix_text.clone(),
                inventory_path: opts.registry.path.clone(),
                matrix_path,
            },
        ))
    })();
    let (inv, m, inputs) = match loaded {
        Ok(x) => x,
        Err(e) => {
            let why = format!("refused by the agent: {e}");
            refuse_sweep(client, id, &why).await?;
            return Err(DbError::Refused(why));
        }
    };
    let p = crate::plan::plan(&inv, &m);
    let cells = client
        .query(
            "SELECT c.cell_id, c.state, c.host, c.address, c.port,
                    (SELECT r.result::text FROM fsmatrix_runs r JOIN fsmatrix_bundles b ON b.sha256 = r.bundle_sha256
                     WHERE b.sweep_id = c.sweep_id AND r.cell_id = c.cell_id LIMIT 1)
             FROM fsmatrix_cells c WHERE c.sweep_id = $1",
            &[&id],
        )
        .await
        .map_err(DbError::query("read the sweep's cells"))?;
    // A published cell's value of the metric it is compared on (tps, a
    // rate-limited workload's latency, a SQL script's load time): what
    // adaptive repeats count, as resume counts the kept cells'.
    let stored: BTreeMap<String, (String, Option<f64>)> = cells
        .iter()
        .map(|r| {
            let value = r
                .get::<_, Option<String>>(5)
                .and_then(|t| serde_json::from_str::<crate::results::CellResult>(&t).ok())
                .as_ref()
                .and_then(crate::results::analysis::stats::Metric::compared_value);
            (r.get(0), (r.get(1), value))
        })
        .collect();
    // The hosts this turn runs: all of the sweep's, or, when it is split
    // between agents, those leased here.
    let mine: Vec<String> = {
        let mut v: Vec<String> = cells
            .iter()
            .filter(|r| {
                leased
                    .iter()
                    .any(|(a, p)| *a == r.get::<_, String>(3) && *p == r.get::<_, i32>(4))
            })
            .map(|r| r.get(2))
            .collect();
        v.sort();
        v.dedup();
        v
    };
    let queued_hosts: Vec<(String, String, i32)> = cells
        .iter()
        .map(|r| (r.get(2), r.get(3), r.get(4)))
        .collect();
    if let Err(e) = registry::check_cells(&inv, &queued_hosts) {
        let why = format!("refused by the agent: {e}");
        refuse_sweep(client, id, &why).await?;
        return Err(DbError::Refused(why));
    }
    let planned: Vec<&str> = p.cells.iter().map(|c| c.id.as_str()).collect();
    if planned.len() != stored.len() || planned.iter().any(|c| !stored.contains_key(*c)) {
        let why = "the sweep's inputs plan other cells here than were queued (a script or fsmatrix changed)".to_string();
        refuse_sweep(client, id, &why).await?;
        return Err(DbError::Refused(why));
    }
    // Cells another agent finished and published are kept; so are, in a
    // split sweep, the cells of hosts other agents lease.
    let ended: HashMap<String, Option<f64>> = stored
        .iter()
        .filter(|(_, (state, _))| matches!(state.as_str(), "done" | "failed" | "not_run"))
        .map(|(c, (_, tps))| (c.clone(), *tps))
        .collect();
    let mut keep = ended.clone();
    for c in &p.cells {
        if !mine.iter().any(|h| h == c.host.as_str()) {
            keep.entry(c.id.clone()).or_insert(None);
        }
    }
    if ended.len() == planned.len() {
        finish_sweep(client, id).await?;
        return Ok(SweepTurn {
            sweep: id,
            bundle: None,
            published: 0,
            finished: true,
            stopped: None,
        });
    }

    let (tap_tx, tap_rx) = mpsc::unbounded_channel::<RunEvent>();
    let (stop_tx, stop_rx) = watch::channel(false);
    let (opened_tx, opened_rx) = oneshot::channel::<PathBuf>();
    let stop_why = std::sync::Arc::new(std::sync::Mutex::new(None::<String>));
    let beat = tokio::spawn(heartbeat(
        target.clone(),
        id,
        holder.to_string(),
        ttl,
        stop_tx.clone(),
        stop_why.clone(),
    ));
    let provisional = crate::text::sha256_hex(
        format!("{holder}\n{id}\n{}", crate::text::now_rfc3339()).as_bytes(),
    );
    let publisher = tokio::spawn(publish_cells(
        target.clone(),
        id,
        holder.to_string(),
        provisional.clone(),
        m.name.as_str().to_string(),
        opened_rx,
        tap_rx,
    ));
    let hooks = crate::run::sweep::Hooks {
        opened: Some(opened_tx),
        tap: Some(tap_tx),
        cancel: Some(stop_rx),
        display: crate::run::Display::Auto,
        history: Default::default(),
    };
    let outcome =
        crate::run::sweep::sweep_hooked(&inv, &m, &p, &inputs, &opts.out, &keep, hooks).await;
    beat.abort();
    let published = publisher.await.unwrap_or_default();
    let stopped = stop_why.lock().ok().and_then(|g| g.clone());
    let summary = match outcome {
        Ok(s) => s,
        Err(e) => {
            return Ok(SweepTurn {
                sweep: id,
                bundle: None,
                published: published.len(),
                finished: false,
                stopped: Some(stopped.unwrap_or_else(|| e.to_string())),
            })
        }
    };
    // The bundle is closed: its real checksum replaces the provisional one.
    *client = reconnect(target, Duration::from_secs(120)).await?;
    if let Ok((sha, _)) = crate::results::bundle::manifest::sha256_file(
        &summary.bundle.join("tagmanifest-sha256.txt"),
    ) {
        let path = summary
            .bundle
            .canonicalize()
            .unwrap_or_else(|_| summary.bundle.clone())
            .display()
            .to_string();
        let info = super::publish::bag_info(&summary.bundle)
            .ok()
            .and_then(|i| serde_json::to_value(i).ok())
            .unwrap_or(serde_json::Value::Null);
        let tx = client
            .transaction()
            .await
            .map_err(DbError::query("begin recording the bundle's checksum"))?;
        tx.execute(
                "UPDATE fsmatrix_bundles SET sha256 = $2, path = $3,
                        bag_info = CASE WHEN $4::jsonb = 'null'::jsonb THEN bag_info ELSE $4::jsonb END
                 WHERE sha256 = $1",
                &[&provisional, &sha, &path, &info],
            )
            .await
            .map_err(DbError::query("record the bundle's checksum"))?;
        // The report names a bundle by its checksum and orders bundles by it
        // on a tie: what it says of the matrix is computed again.
        super::verdicts::refresh(&tx, m.name.as_str()).await?;
        tx.commit()
            .await
            .map_err(DbError::query("commit the bundle's checksum"))?;
    }
    let interrupted = summary.interrupted || stopped.is_some();
    if !interrupted {
        // Cells that ended without running (a host not ready) are not run
        // for good: the sweep is over.
        client
            .execute(
                "UPDATE fsmatrix_cells SET state = 'not_run', ended_at = now()
                 WHERE sweep_id = $1 AND state = 'pending' AND host = ANY($2)",
                &[&id, &mine],
            )
            .await
            .map_err(DbError::query("record the cells not run"))?;
        finish_sweep(client, id).await?;
    }
    let finished = !interrupted
        && client
            .query_one(
                "SELECT state = 'done' FROM fsmatrix_sweeps WHERE id = $1",
                &[&id],
            )
            .await
            .map(|r| r.get::<_, bool>(0))
            .unwrap_or(false);
    Ok(SweepTurn {
        sweep: id,
        bundle: Some(summary.bundle),
        published: published.len(),
        finished,
        stopped: if summary.interrupted && stopped.is_none() {
            Some("interrupted".into())
        } else {
            stopped
        },
    })
}

/// A sweep whose cells all ended is done.
async fn finish_sweep(client: &Client, id: i64) -> Result<(), DbError> {
    client
        .execute(
            "UPDATE fsmatrix_sweeps SET state = 'done', ended_at = now()
             WHERE id = $1 AND state = 'running'
               AND NOT EXISTS (SELECT 1 FROM fsmatrix_cells WHERE sweep_id = $1 AND state IN ('pending', 'running'))",
            &[&id],
        )
        .await
        .map_err(DbError::query("mark the sweep done"))?;
    Ok(())
}

/// Renew the leases every third of their life; stop the run when they are
/// lost or the sweep was cancelled.  A database that is down is retried;
/// the leases it could not renew may expire meanwhile, and then the first
/// renewal after it is back finds them gone.
async fn heartbeat(
    target: DbTarget,
    id: i64,
    holder: String,
    ttl: i64,
    stop: watch::Sender<bool>,
    why: std::sync::Arc<std::sync::Mutex<Option<String>>>,
) {
    let every = Duration::from_secs((ttl / 3).max(1) as u64);
    let mut client: Option<Client> = None;
    loop {
        tokio::time::sleep(every).await;
        if client.is_none() {
            client = conn::connect(&target).await.ok();
        }
        let Some(c) = client.as_ref() else {
            continue;
        };
        let renewed = queue::heartbeat(c, &holder, ttl).await;
        let state = c
            .query_opt("SELECT state FROM fsmatrix_sweeps WHERE id = $1", &[&id])
            .await;
        let reason = match (renewed, state) {
            (Ok(0), _) => Some("the host leases were lost (expired and taken)".to_string()),
            (Ok(_), Ok(Some(r))) if r.get::<_, String>(0) == "cancelled" => {
                Some("the sweep was cancelled".to_string())
            }
            (Err(_), _) | (_, Err(_)) => {
                client = None;
                None
            }
            _ => None,
        };
        if let Some(r) = reason {
            tracing::warn!("sweep {id}: {r}: stopping");
            if let Ok(mut g) = why.lock() {
                *g = Some(r);
            }
            let _ = stop.send(true);
            return;
        }
    }
}

/// Publish each cell as it ends: its result.json, read back from the open
/// bundle through the bundle validator, into `fsmatrix_runs` under the
/// provisional bundle row, and its state into `fsmatrix_cells`.  A database
/// that is down keeps the cells queued here until it is back.  Cells that
/// ended without running are left pending for the next turn.  The cells
/// published.
async fn publish_cells(
    target: DbTarget,
    id: i64,
    holder: String,
    provisional: String,
    matrix: String,
    opened: oneshot::Receiver<PathBuf>,
    mut events: mpsc::UnboundedReceiver<RunEvent>,
) -> Vec<String> {
    let Ok(bundle) = opened.await else {
        return Vec::new();
    };
    let mut pending: Vec<String> = Vec::new();
    let mut published = Vec::new();
    let mut client: Option<Client> = None;
    let mut open = true;
    while open || !pending.is_empty() {
        if open {
            match events.recv().await {
                Some(RunEvent::CellEnded { cell, .. }) => pending.push(cell),
                // Any step of the sweep is a moment to retry cells the
                // database could not take yet.
                Some(_) if pending.is_empty() => continue,
                Some(_) => {}
                None => open = false,
            }
        }
        if client.is_none() {
            client = match reconnect(&target, Duration::from_secs(if open { 2 } else { 120 })).await
            {
                Ok(c) => Some(c),
                Err(e) => {
                    tracing::warn!("sweep {id}: cannot publish yet: {e}");
                    if !open {
                        return published;
                    }
                    continue;
                }
            };
        }
        let c = client.as_mut().expect("connected");
        let mut left = Vec::new();
        for cell in pending.drain(..) {
            match publish_one(c, &bundle, &provisional, &matrix, id, &holder, &cell).await {
                Ok(true) => published.push(cell),
                Ok(false) => {}
                Err(e) => {
                    tracing::warn!("sweep {id}: cell {cell} not published yet: {e}");
                    left.push(cell);
                }
            }
        }
        if !left.is_empty() {
            client = None;
            pending = left;
            if !open {
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
    }
    published
}

async fn publish_one(
    client: &mut Client,
    bundle: &Path,
    provisional: &str,
    matrix: &str,
    id: i64,
    holder: &str,
    cell: &str,
) -> Result<bool, DbError> {
    let path = bundle.join(format!("data/cells/{cell}/result.json"));
    let text = std::fs::read_to_string(&path)
        .map_err(|e| DbError::Refused(format!("cannot read {}: {e}", path.display())))?;
    let r = parse_cell_result(&text).map_err(DbError::Refused)?;
    if matches!(r.status, CellStatus::NotRun { .. }) {
        return Ok(false);
    }
    let facts = crate::results::bundle::read::host_facts(bundle, &r.params.host)
        .map_err(DbError::Refused)?;
    let tx = client
        .transaction()
        .await
        .map_err(DbError::query("begin publishing a cell"))?;
    let info = serde_json::json!({ "Sweep-Id": id.to_string(), "Agent": holder, "State": "open" });
    tx.execute(
        "INSERT INTO fsmatrix_bundles (sha256, path, matrix_name, sweep_id, bag_info)
         VALUES ($1, $2, $3, $4, $5) ON CONFLICT (sha256) DO NOTHING",
        &[
            &provisional,
            &bundle.display().to_string(),
            &matrix,
            &id,
            &info,
        ],
    )
    .await
    .map_err(DbError::query("record the bundle"))?;
    super::publish::insert_run(&tx, provisional, &r, facts.as_ref()).await?;
    let state = r.status.name();
    let state = if state == "not_needed" {
        "not_run"
    } else {
        state
    };
    tx.execute(
        "UPDATE fsmatrix_cells SET state = $3, holder = $4,
                started_at = $5::text::timestamptz, ended_at = $6::text::timestamptz
         WHERE sweep_id = $1 AND cell_id = $2",
        &[&id, &cell, &state, &holder, &r.started, &r.ended],
    )
    .await
    .map_err(DbError::query("record the cell's state"))?;
    super::verdicts::refresh(&tx, matrix).await?;
    tx.commit().await.map_err(DbError::query("commit a cell"))?;
    Ok(true)
}
