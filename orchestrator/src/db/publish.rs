//! `fsmatrix publish BUNDLE`: a bundle made by `run` into the database,
//! verified first (a bundle that does not verify is refused before anything
//! is written), idempotent (a bundle is its tag manifest's sha256, a run is
//! that and its cell id: publishing twice adds nothing).  The matrix's
//! comparisons are computed again in the same transaction
//! ([`super::verdicts`]).
use std::collections::BTreeMap;
use std::path::Path;

use tokio_postgres::Client;

use super::DbError;
use crate::results::bundle::manifest::sha256_file;
use crate::results::{CellResult, CellStatus};

/// What a publish did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Published {
    pub sha256: String,
    pub matrix: String,
    /// The bundle was not in the database before.
    pub new_bundle: bool,
    pub runs_added: u64,
    pub runs_known: u64,
}

/// `Key: value` lines of bag-info.txt.
pub(crate) fn bag_info(dir: &Path) -> Result<BTreeMap<String, String>, DbError> {
    let text =
        std::fs::read_to_string(dir.join(crate::results::bundle::BAG_INFO_FILE)).map_err(|e| {
            DbError::Refused(format!("cannot read {}/bag-info.txt: {e}", dir.display()))
        })?;
    Ok(text
        .lines()
        .filter_map(|l| l.split_once(": "))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect())
}

/// Verify `dir` and import it; `path` is how the database names where it is.
pub async fn publish(client: &mut Client, dir: &Path) -> Result<Published, DbError> {
    let report = crate::results::verify(dir).map_err(|e| DbError::Refused(e.to_string()))?;
    if !report.is_ok() {
        let first = report
            .problems
            .first()
            .map(|p| p.to_string())
            .unwrap_or_default();
        return Err(DbError::Refused(format!(
            "{} does not verify ({} problem{}; first: {first}): not published",
            dir.display(),
            report.problems.len(),
            if report.problems.len() == 1 { "" } else { "s" }
        )));
    }
    let (sha, _) = sha256_file(&dir.join("tagmanifest-sha256.txt"))
        .map_err(|e| DbError::Refused(format!("cannot read the tag manifest: {e}")))?;
    let info = bag_info(dir)?;
    let matrix = info.get("Matrix-Name").cloned().ok_or_else(|| {
        DbError::Refused(format!(
            "{}: bag-info.txt has no Matrix-Name: not an fsmatrix bundle",
            dir.display()
        ))
    })?;
    let results = crate::results::bundle::read::load_bundle_results(dir)
        .map_err(|e| DbError::Refused(format!("cannot read the results: {e}")))?;
    let mut facts: BTreeMap<String, serde_json::Value> = BTreeMap::new();
    for r in &results {
        let host = &r.params.host;
        if facts.contains_key(host) {
            continue;
        }
        // The results' host names were checked as they were read; this
        // checks again, where the name becomes a path.
        let found = crate::results::bundle::read::host_facts(dir, host).map_err(|e| {
            DbError::Refused(format!(
                "{}: cell {}: {e}: not published",
                dir.display(),
                r.cell_id
            ))
        })?;
        if let Some(v) = found {
            facts.insert(host.clone(), v);
        }
    }
    let path = dir
        .canonicalize()
        .unwrap_or_else(|_| dir.to_path_buf())
        .display()
        .to_string();
    let info_json = serde_json::to_value(&info).expect("a map of strings");
    let tx = client
        .transaction()
        .await
        .map_err(DbError::query("begin the publish"))?;
    let new_bundle = tx
        .execute(
            "INSERT INTO fsmatrix_bundles (sha256, path, matrix_name, bag_info) VALUES ($1, $2, $3, $4)
             ON CONFLICT (sha256) DO NOTHING",
            &[&sha, &path, &matrix, &info_json],
        )
        .await
        .map_err(DbError::query("store the bundle"))?
        == 1;
    let mut added = 0;
    for r in &results {
        added += insert_run(&tx, &sha, r, facts.get(&r.params.host)).await?;
    }
    // What the report says of the matrix now, committed with its runs.
    super::verdicts::refresh(&tx, &matrix).await?;
    tx.commit()
        .await
        .map_err(DbError::query("commit the publish"))?;
    Ok(Published {
        sha256: sha,
        matrix,
        new_bundle,
        runs_added: added,
        runs_known: results.len() as u64 - added,
    })
}

/// One result row (nothing when the bundle already has it); rows added.
pub(crate) async fn insert_run(
    tx: &tokio_postgres::Transaction<'_>,
    sha: &str,
    r: &CellResult,
    facts: Option<&serde_json::Value>,
) -> Result<u64, DbError> {
    let (tps, lat) = match &r.status {
        CellStatus::Done { run } => (Some(run.tps), run.latency_avg_ms),
        _ => (None, None),
    };
    let result = serde_json::to_value(r)
        .map_err(|e| DbError::Refused(format!("cell {}: {e}", r.cell_id)))?;
    let (pg_text, pg_num) = super::verdicts::postgres_version(facts);
    tx.execute(
        "INSERT INTO fsmatrix_runs (bundle_sha256, cell_id, host, filesystem, fs_type, workload,
                                    clients, repeat, warmup, state, tps, latency_ms,
                                    started_at, ended_at, result, facts,
                                    postgres_version, postgres_version_num)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12,
                 $13::text::timestamptz, $14::text::timestamptz, $15, $16, $17, $18)
         ON CONFLICT (bundle_sha256, cell_id) DO NOTHING",
        &[
            &sha,
            &r.cell_id,
            &r.params.host,
            &r.params.filesystem,
            &r.params.fs_type,
            &r.params.workload,
            &(r.params.clients as i32),
            &(r.params.repeat as i32),
            &r.params.warmup,
            &r.status.name(),
            &tps,
            &lat,
            &r.started,
            &r.ended,
            &result,
            &facts,
            &pg_text,
            &pg_num,
        ],
    )
    .await
    .map_err(DbError::query("store a result"))
}
