//! The sweep queue in the database: `submit` stores a planned sweep with its
//! cells, `queue` lists sweeps with their progress and leases, `cancel`
//! stops one, and the primitives an agent works with: take every host of a
//! sweep under one lease, or its free hosts when it may be split ([`lease_sweep`]), keep it alive ([`heartbeat`]),
//! claim the next cell on a leased host with `FOR UPDATE SKIP LOCKED`
//! ([`claim_cell`]), record its end ([`finish_cell`]), let go ([`release`]).
use std::collections::BTreeMap;

use tokio_postgres::Client;

use super::DbError;
use crate::config::Inventory;
use crate::plan::Plan;

/// A validated, planned sweep on its way into the queue.
pub struct Submission<'a> {
    pub inventory_text: &'a str,
    pub matrix_text: &'a str,
    /// Where they were read (absolute).
    pub inventory_path: &'a std::path::Path,
    pub matrix_path: &'a std::path::Path,
    pub inventory: &'a Inventory,
    pub plan: &'a Plan,
    /// The workload scripts the matrix names, as content: the agent plans
    /// from these, never from a path on its own machine.  Who submits is
    /// not given: the database records its own `session_user`.
    pub scripts: &'a [SubmittedScript],
    pub priority: i32,
    /// The matrix lets agents split the sweep host by host.
    pub split_hosts: bool,
}

/// A workload script as a submission carries it: the path the matrix
/// names it by (relative to the matrix), its sha256 and its text.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SubmittedScript {
    pub path: String,
    pub sha256: String,
    pub content: String,
}

impl SubmittedScript {
    /// The scripts a loaded matrix names, as a submission carries them.
    pub fn of(m: &crate::config::Matrix) -> Vec<SubmittedScript> {
        let mut v: Vec<SubmittedScript> = Vec::new();
        for w in &m.workloads {
            if let Some((path, sha256, content)) = w.kind.script() {
                let path = path.to_string_lossy().into_owned();
                if !v.iter().any(|s| s.path == path) {
                    v.push(SubmittedScript {
                        path,
                        sha256: sha256.to_string(),
                        content: content.to_string(),
                    });
                }
            }
        }
        v
    }
}

/// Store a sweep and its cells (one transaction); its id.
pub async fn submit(client: &mut Client, s: &Submission<'_>) -> Result<i64, DbError> {
    if s.plan.cells.is_empty() {
        return Err(DbError::Refused(
            "the plan has no cell to run (every combination dropped or excluded): nothing queued"
                .into(),
        ));
    }
    let plan = serde_json::to_value(s.plan)
        .map_err(|e| DbError::Refused(format!("cannot serialize the plan: {e}")))?;
    let scripts = serde_json::to_value(s.scripts)
        .map_err(|e| DbError::Refused(format!("cannot serialize the scripts: {e}")))?;
    let tx = client
        .transaction()
        .await
        .map_err(DbError::query("begin the submission"))?;
    let id: i64 = tx
        .query_one(
            "INSERT INTO fsmatrix_sweeps
                 (matrix_name, inventory, matrix, inventory_path, matrix_path, plan,
                  scripts, priority, eta_seconds, split_hosts)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id",
            &[
                &s.plan.matrix.as_str(),
                &s.inventory_text,
                &s.matrix_text,
                &s.inventory_path.display().to_string(),
                &s.matrix_path.display().to_string(),
                &plan,
                &scripts,
                &s.priority,
                &(s.plan.eta.as_secs() as i64),
                &s.split_hosts,
            ],
        )
        .await
        .map_err(DbError::query("store the sweep"))?
        .get(0);
    let mut hosts: BTreeMap<&str, (String, i32)> = BTreeMap::new();
    for h in &s.plan.hosts {
        let host = s
            .inventory
            .hosts
            .iter()
            .find(|i| i.name == h.host)
            .ok_or_else(|| {
                DbError::Refused(format!(
                    "plan host {} is not in the inventory",
                    h.host.as_str()
                ))
            })?;
        let address = host.address.to_string();
        let port = i32::from(host.port);
        tx.execute(
            "INSERT INTO fsmatrix_hosts (address, port, os) VALUES ($1, $2, $3)
             ON CONFLICT (address, port) DO UPDATE SET os = EXCLUDED.os",
            &[&address, &port, &host.os.as_str()],
        )
        .await
        .map_err(DbError::query("store a host"))?;
        hosts.insert(h.host.as_str(), (address, port));
    }
    let mut ids = Vec::with_capacity(s.plan.cells.len());
    let mut ords = Vec::with_capacity(s.plan.cells.len());
    let mut names = Vec::with_capacity(s.plan.cells.len());
    let mut addrs = Vec::with_capacity(s.plan.cells.len());
    let mut ports = Vec::with_capacity(s.plan.cells.len());
    let mut params = Vec::with_capacity(s.plan.cells.len());
    for (i, c) in s.plan.cells.iter().enumerate() {
        let (address, port) = hosts
            .get(c.host.as_str())
            .cloned()
            .ok_or_else(|| DbError::Refused(format!("cell {} names an unplanned host", c.id)))?;
        ids.push(c.id.clone());
        ords.push(i as i32);
        names.push(c.host.as_str().to_string());
        addrs.push(address);
        ports.push(port);
        params.push(
            serde_json::to_value(c.params())
                .map_err(|e| DbError::Refused(format!("cannot serialize a cell: {e}")))?,
        );
    }
    tx.execute(
        "INSERT INTO fsmatrix_cells (sweep_id, cell_id, ord, host, address, port, params)
         SELECT $1, * FROM unnest($2::text[], $3::int[], $4::text[], $5::text[], $6::int[], $7::jsonb[])",
        &[&id, &ids, &ords, &names, &addrs, &ports, &params],
    )
    .await
    .map_err(DbError::query("store the cells"))?;
    tx.commit()
        .await
        .map_err(DbError::query("commit the submission"))?;
    Ok(id)
}

/// One sweep as `queue` shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct QueueRow {
    pub id: i64,
    pub matrix: String,
    pub state: String,
    pub priority: i32,
    pub submitted_by: String,
    pub submitted_at: String,
    pub cells: i64,
    pub done: i64,
    pub failed: i64,
    pub running: i64,
    /// `host address:port held by HOLDER for Ns`.
    pub leases: Vec<String>,
    /// Time left: from the sweep's own pace once it has ended cells, else
    /// the plan's ETA scaled to the cells left.
    pub eta_seconds: i64,
    /// Whether `eta_seconds` comes from the observed pace.
    pub eta_observed: bool,
    /// Why the sweep failed as a whole (an agent's refusal), if it did.
    pub note: Option<String>,
}

/// Sweeps not yet finished, then the `recent` last finished ones.
pub async fn list(client: &Client, recent: i64) -> Result<Vec<QueueRow>, DbError> {
    let rows = client
        .query(
            "SELECT s.id, s.matrix_name, s.state, s.priority, s.submitted_by,
                    to_char(s.submitted_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),
                    s.eta_seconds,
                    count(c.*), count(c.*) FILTER (WHERE c.state = 'done'),
                    count(c.*) FILTER (WHERE c.state IN ('failed', 'not_run')),
                    count(c.*) FILTER (WHERE c.state = 'running'),
                    coalesce(extract(epoch FROM now() - s.started_at), 0)::bigint,
                    s.note
             FROM fsmatrix_sweeps s LEFT JOIN fsmatrix_cells c ON c.sweep_id = s.id
             WHERE s.state IN ('queued', 'running')
                OR s.id IN (SELECT id FROM fsmatrix_sweeps WHERE state NOT IN ('queued', 'running')
                            ORDER BY id DESC LIMIT $1)
             GROUP BY s.id ORDER BY s.state IN ('queued', 'running') DESC, s.priority DESC, s.id",
            &[&recent],
        )
        .await
        .map_err(DbError::query("read the queue"))?;
    let leases = client
        .query(
            "SELECT sweep_id, address || ':' || port, holder,
                    greatest(0, extract(epoch FROM expires - now()))::bigint
             FROM fsmatrix_host_leases WHERE expires > now() ORDER BY address, port",
            &[],
        )
        .await
        .map_err(DbError::query("read the host leases"))?;
    Ok(rows
        .iter()
        .map(|r| {
            let id: i64 = r.get(0);
            let cells: i64 = r.get(7);
            let done: i64 = r.get(8);
            let failed: i64 = r.get(9);
            let planned: i64 = r.get(6);
            let elapsed: i64 = r.get(11);
            let state: String = r.get(2);
            let left = cells - done - failed;
            let ended = done + failed;
            // A running sweep's ETA from its own pace once cells have ended
            // (elapsed per ended cell, times the cells left); before that,
            // the plan's ETA for the cells left.
            let (eta, observed) = if state == "running" && ended > 0 && elapsed > 0 {
                (elapsed * left / ended, true)
            } else if cells > 0 {
                (planned * left / cells, false)
            } else {
                (0, false)
            };
            QueueRow {
                id,
                matrix: r.get(1),
                state,
                priority: r.get(3),
                submitted_by: r.get(4),
                submitted_at: r.get(5),
                cells,
                done,
                failed,
                running: r.get(10),
                leases: leases
                    .iter()
                    .filter(|l| l.get::<_, i64>(0) == id)
                    .map(|l| {
                        format!(
                            "{} held by {} for {} s",
                            l.get::<_, String>(1),
                            l.get::<_, String>(2),
                            l.get::<_, i64>(3)
                        )
                    })
                    .collect(),
                eta_seconds: eta,
                eta_observed: observed,
                note: r.get(12),
            }
        })
        .collect())
}

/// Cancel a queued or running sweep: its pending cells are cancelled (an
/// agent running it stops at its next cell); its leases stay until the agent
/// lets go after teardown.  The sweep's state before.
pub async fn cancel(client: &mut Client, id: i64) -> Result<String, DbError> {
    let tx = client
        .transaction()
        .await
        .map_err(DbError::query("begin the cancel"))?;
    let row = tx
        .query_opt(
            "SELECT state FROM fsmatrix_sweeps WHERE id = $1 FOR UPDATE",
            &[&id],
        )
        .await
        .map_err(DbError::query("read the sweep"))?;
    let Some(row) = row else {
        // Row security hides other people's sweeps from a submitter's
        // FOR UPDATE, not from reading: say whose it is.
        let owner = tx
            .query_opt(
                "SELECT submitted_by FROM fsmatrix_sweeps WHERE id = $1",
                &[&id],
            )
            .await
            .map_err(DbError::query("read the sweep"))?;
        return Err(DbError::Refused(match owner {
            Some(o) => format!(
                "sweep {id} was submitted by {}: only its submitter (or the database's owner) \
                 can cancel it",
                crate::text::terminal_safe(&o.get::<_, String>(0))
            ),
            None => format!("there is no sweep {id}"),
        }));
    };
    let state: String = row.get(0);
    if state != "queued" && state != "running" {
        return Err(DbError::Refused(format!(
            "sweep {id} is {state}: only a queued or running sweep can be cancelled"
        )));
    }
    tx.execute(
        "UPDATE fsmatrix_sweeps SET state = 'cancelled', ended_at = now() WHERE id = $1",
        &[&id],
    )
    .await
    .map_err(DbError::query("cancel the sweep"))?;
    tx.execute(
        "UPDATE fsmatrix_cells SET state = 'cancelled' WHERE sweep_id = $1 AND state = 'pending'",
        &[&id],
    )
    .await
    .map_err(DbError::query("cancel the sweep's cells"))?;
    tx.commit()
        .await
        .map_err(DbError::query("commit the cancel"))?;
    Ok(state)
}

/// Lease the hosts of sweep `id` for `holder`: every host of the sweep or
/// none, or, when the sweep may be split (`split_hosts`), every free host
/// that still has a pending cell of it.  The hosts leased (empty: none).
/// The hosts' rows are locked in one order, so two agents never deadlock,
/// and a sweep that may not be split is never split.
pub async fn lease_sweep(
    client: &mut Client,
    id: i64,
    holder: &str,
    ttl_s: i64,
) -> Result<Vec<(String, i32)>, DbError> {
    let tx = client
        .transaction()
        .await
        .map_err(DbError::query("begin a lease"))?;
    let split: bool = match tx
        .query_opt(
            "SELECT split_hosts FROM fsmatrix_sweeps WHERE id = $1 AND state IN ('queued', 'running')",
            &[&id],
        )
        .await
        .map_err(DbError::query("read the sweep"))?
    {
        Some(r) => r.get(0),
        None => return Ok(Vec::new()),
    };
    // Every host of the sweep; split: the hosts with a cell left to run.
    let hosts = tx
        .query(
            "SELECT h.address, h.port FROM fsmatrix_hosts h
             WHERE (h.address, h.port) IN (SELECT address, port FROM fsmatrix_cells
                                           WHERE sweep_id = $1 AND (NOT $2 OR state = 'pending'))
             ORDER BY h.address, h.port FOR UPDATE",
            &[&id, &split],
        )
        .await
        .map_err(DbError::query("lock the sweep's hosts"))?;
    // Read in a statement of its own, after the locks: a statement's
    // snapshot is taken at its start, so leases committed by the agent this
    // one waited for are seen only here.
    let busy: Vec<(String, i32)> = tx
        .query(
            "SELECT address, port FROM fsmatrix_host_leases
             WHERE expires > now() AND NOT (holder = $2 AND sweep_id = $1)",
            &[&id, &holder],
        )
        .await
        .map_err(DbError::query("read the hosts' leases"))?
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    let free: Vec<(String, i32)> = hosts
        .iter()
        .map(|h| (h.get(0), h.get(1)))
        .filter(|h| !busy.contains(h))
        .collect();
    if free.is_empty() || (!split && free.len() < hosts.len()) {
        return Ok(Vec::new());
    }
    for (address, port) in &free {
        tx.execute(
            "INSERT INTO fsmatrix_host_leases (address, port, sweep_id, holder, expires)
             VALUES ($1, $2, $3, $4, now() + make_interval(secs => $5))
             ON CONFLICT (address, port) DO UPDATE
               SET sweep_id = EXCLUDED.sweep_id, holder = EXCLUDED.holder, taken_at = now(),
                   heartbeat = now(), expires = EXCLUDED.expires",
            &[address, port, &id, &holder, &(ttl_s as f64)],
        )
        .await
        .map_err(DbError::query("take a host lease"))?;
    }
    tx.execute(
        "UPDATE fsmatrix_sweeps SET state = 'running', started_at = coalesce(started_at, now())
         WHERE id = $1 AND state = 'queued'",
        &[&id],
    )
    .await
    .map_err(DbError::query("mark the sweep running"))?;
    tx.commit()
        .await
        .map_err(DbError::query("commit the lease"))?;
    Ok(free)
}

/// One look at the queue: how many sweeps are open, and the first open
/// sweeps (priority, then age) whose hosts `holder` could lease now, in
/// one query however long the queue (an agent polls with it).
pub async fn poll(client: &Client, holder: &str) -> Result<(i64, Vec<i64>), DbError> {
    let row = client
        .query_one(
            "SELECT (SELECT count(*) FROM fsmatrix_sweeps WHERE state IN ('queued', 'running')),
                    ARRAY(SELECT s.id FROM fsmatrix_sweeps s
                          WHERE s.state IN ('queued', 'running')
                            AND CASE WHEN s.split_hosts THEN EXISTS (
                                    SELECT 1 FROM fsmatrix_cells c
                                    WHERE c.sweep_id = s.id AND c.state = 'pending'
                                      AND NOT EXISTS (
                                          SELECT 1 FROM fsmatrix_host_leases l
                                          WHERE l.address = c.address AND l.port = c.port
                                            AND l.expires > now()
                                            AND NOT (l.holder = $1 AND l.sweep_id = s.id)))
                                ELSE EXISTS (SELECT 1 FROM fsmatrix_cells c WHERE c.sweep_id = s.id)
                                 AND NOT EXISTS (
                                    SELECT 1 FROM fsmatrix_cells c
                                    JOIN fsmatrix_host_leases l
                                      ON l.address = c.address AND l.port = c.port
                                    WHERE c.sweep_id = s.id AND l.expires > now()
                                      AND NOT (l.holder = $1 AND l.sweep_id = s.id))
                                END
                          ORDER BY s.priority DESC, s.id LIMIT 16)",
            &[&holder],
        )
        .await
        .map_err(DbError::query("read the queue"))?;
    Ok((row.get(0), row.get(1)))
}

/// The first sweep (priority, then age) whose hosts `holder` can lease,
/// leased, with the hosts leased; None when every open sweep's hosts are
/// held by others.  One query finds the candidates ([`poll`]); a lease is
/// tried only on those (another agent may take one first).
pub async fn lease_next_sweep(
    client: &mut Client,
    holder: &str,
    ttl_s: i64,
) -> Result<Option<(i64, Vec<(String, i32)>)>, DbError> {
    Ok(lease_next(client, holder, ttl_s).await?.1)
}

/// [`lease_next_sweep`] with the number of open sweeps seen by the poll.
pub async fn lease_next(
    client: &mut Client,
    holder: &str,
    ttl_s: i64,
) -> Result<(i64, Option<(i64, Vec<(String, i32)>)>), DbError> {
    let (open, ids) = poll(client, holder).await?;
    for id in ids {
        let hosts = lease_sweep(client, id, holder, ttl_s).await?;
        if !hosts.is_empty() {
            return Ok((open, Some((id, hosts))));
        }
    }
    Ok((open, None))
}

/// Renew every lease `holder` has; how many.
pub async fn heartbeat(client: &Client, holder: &str, ttl_s: i64) -> Result<u64, DbError> {
    client
        .execute(
            "UPDATE fsmatrix_host_leases SET heartbeat = now(), expires = now() + make_interval(secs => $2)
             WHERE holder = $1",
            &[&holder, &(ttl_s as f64)],
        )
        .await
        .map_err(DbError::query("renew the leases"))
}

/// Let go of `holder`'s leases on sweep `id`.
pub async fn release(client: &Client, id: i64, holder: &str) -> Result<u64, DbError> {
    client
        .execute(
            "DELETE FROM fsmatrix_host_leases WHERE sweep_id = $1 AND holder = $2",
            &[&id, &holder],
        )
        .await
        .map_err(DbError::query("release the leases"))
}

/// A cell an agent claimed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claimed {
    pub sweep_id: i64,
    pub cell_id: String,
    pub host: String,
}

/// Claim the next pending cell of sweep `id` on a host `holder` has a live
/// lease on (plan order), or None.  Concurrent claimers skip each other's
/// locked rows instead of waiting.
pub async fn claim_cell(
    client: &Client,
    id: i64,
    holder: &str,
) -> Result<Option<Claimed>, DbError> {
    let row = client
        .query_opt(
            "WITH next AS (
                 SELECT c.sweep_id, c.cell_id FROM fsmatrix_cells c
                 JOIN fsmatrix_host_leases l
                   ON l.address = c.address AND l.port = c.port AND l.sweep_id = c.sweep_id
                 WHERE c.sweep_id = $1 AND c.state = 'pending'
                   AND l.holder = $2 AND l.expires > now()
                 ORDER BY c.ord
                 LIMIT 1
                 FOR UPDATE OF c SKIP LOCKED)
             UPDATE fsmatrix_cells c SET state = 'running', holder = $2, started_at = now()
             FROM next WHERE c.sweep_id = next.sweep_id AND c.cell_id = next.cell_id
             RETURNING c.sweep_id, c.cell_id, c.host",
            &[&id, &holder],
        )
        .await
        .map_err(DbError::query("claim a cell"))?;
    Ok(row.map(|r| Claimed {
        sweep_id: r.get(0),
        cell_id: r.get(1),
        host: r.get(2),
    }))
}

/// Record the end of a claimed cell (`done`, `failed` or `not_run`); false
/// when `holder` no longer holds it.
pub async fn finish_cell(
    client: &Client,
    c: &Claimed,
    holder: &str,
    state: &str,
) -> Result<bool, DbError> {
    if !matches!(state, "done" | "failed" | "not_run") {
        return Err(DbError::Refused(format!(
            "{state} is not a cell's end state"
        )));
    }
    let n = client
        .execute(
            "UPDATE fsmatrix_cells SET state = $4, ended_at = now()
             WHERE sweep_id = $1 AND cell_id = $2 AND holder = $3 AND state = 'running'",
            &[&c.sweep_id, &c.cell_id, &holder, &state],
        )
        .await
        .map_err(DbError::query("record a cell's end"))?;
    Ok(n == 1)
}
