//! The database says what the report says.  Each published matrix's
//! comparisons (n, mean and its CI, the ratio to the baseline and its CI,
//! the difference test's p and its family-adjusted p, the interval that
//! decided the verdict at its level, the equivalence test's p, the verdict,
//! the repeats that would likely decide an inconclusive one, the winner;
//! and the matrix's α, margin and correction) are the rows of the report that
//! `report --db --matrix NAME` gives with its defaults ([`super::report::build`]:
//! the same cells, the same statistics code), stored in
//! `fsmatrix_comparisons` and read through the view `fsmatrix_verdicts`.
//! They are computed again in the transaction that publishes a bundle of
//! the matrix (or a cell of it, by an agent), by `db refresh`, and by the
//! migration that created them; SQL never computes a statistic of its own.
//!
//! The PostgreSQL version of each published run is stored as its text and
//! as a number that sorts ([`crate::model::postgres_version_num`]).
use serde::Serialize;
use tokio_postgres::GenericClient;

use super::report::{self, DbSource, Selection};
use super::DbError;
use crate::config::VerdictRule;
use crate::results::analysis::compare::Verdict;
use crate::results::report::{Report, ReportOptions};

/// One row of `fsmatrix_comparisons`: one row of the report's tables.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StoredComparison {
    pub workload: String,
    pub clients: u32,
    pub host: String,
    pub filesystem: String,
    /// What is compared (the table's metric, as the JSON report spells it).
    pub metric: String,
    pub n: usize,
    pub mean: Option<f64>,
    pub ci95: Option<(f64, f64)>,
    /// The variant compared with (the row's own name on the baseline row).
    pub baseline: Option<String>,
    pub ratio: Option<f64>,
    pub ratio_ci95: Option<(f64, f64)>,
    pub p: Option<f64>,
    /// The difference test's p adjusted over the family.
    pub p_adjusted: Option<f64>,
    /// The interval that decided the verdict (low, high, level).
    pub decided_ci: Option<(f64, f64, f64)>,
    /// The equivalence test (TOST) within the margin: its p and adjusted p.
    pub tost_p: Option<f64>,
    pub tost_p_adjusted: Option<f64>,
    pub within_margin: bool,
    pub repeats_to_decide: Option<usize>,
    /// The family the comparison's error rate is held over: its host.
    pub family: Option<String>,
    /// The verdict as `report --format json` spells it (its serde name);
    /// the baseline row's is [`Verdict::Baseline`]'s.
    pub verdict: String,
    /// The report names this variant its host's winner.
    pub winner: bool,
}

/// A serde value's one spelling, as the JSON report writes it.
fn spelled(v: impl Serialize) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        other => unreachable!("a unit enum serializes as a string, not {other:?}"),
    }
}

/// The rows of `r`'s tables, in the report's order.
pub fn comparisons(r: &Report) -> Vec<StoredComparison> {
    let mut out = Vec::new();
    for t in &r.tables {
        for h in &t.hosts {
            for row in &h.rows {
                let key = &row.stats.key;
                let summary = row.stats.summary(t.metric);
                let c = row.comparison.as_ref();
                out.push(StoredComparison {
                    workload: t.workload.clone(),
                    clients: t.clients,
                    host: h.host.clone(),
                    filesystem: key.filesystem.clone(),
                    metric: spelled(t.metric),
                    n: row.stats.values(t.metric).len(),
                    mean: summary.map(|s| s.mean),
                    ci95: summary.and_then(|s| s.ci95),
                    baseline: c.map(|c| c.baseline.clone()).or_else(|| h.baseline.clone()),
                    ratio: c.and_then(|c| c.ratio).map(|r| r.ratio),
                    ratio_ci95: c.and_then(|c| c.ratio).and_then(|r| r.ci95),
                    p: c.and_then(|c| c.p()),
                    p_adjusted: c.and_then(|c| c.p_adjusted()),
                    decided_ci: c.and_then(|c| {
                        let ci = if c.verdict == Verdict::Equivalent {
                            c.equivalence.map(|e| e.ci)
                        } else {
                            c.difference.map(|d| d.ci)
                        };
                        ci.map(|i| (i.low, i.high, i.level))
                    }),
                    tost_p: c.and_then(|c| c.equivalence).map(|e| e.p),
                    tost_p_adjusted: c.and_then(|c| c.equivalence).map(|e| e.p_adjusted),
                    within_margin: c.is_some_and(|c| c.within_margin),
                    repeats_to_decide: c.and_then(|c| c.repeats_to_decide),
                    family: c.and_then(|c| c.estimate).map(|_| h.host.clone()),
                    verdict: spelled(c.map_or(Verdict::Baseline, |c| c.verdict)),
                    winner: h.winner.as_deref() == Some(key.filesystem.as_str()),
                });
            }
        }
    }
    out
}

/// What [`refresh`] stored for a matrix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refreshed {
    pub matrix: String,
    pub bundles: usize,
    pub rows: usize,
    /// Why the report gave no comparisons (it refused to pool the bundles,
    /// or a stored result does not read back).
    pub error: Option<String>,
}

/// Compute `matrix`'s comparisons again from its published bundles and
/// store them, in `client`'s transaction.  Two publishers of one matrix
/// take turns (the matrix's row is locked first), so each computes over
/// what the other committed.
pub async fn refresh(client: &impl GenericClient, matrix: &str) -> Result<Refreshed, DbError> {
    let version = env!("CARGO_PKG_VERSION");
    client
        .execute(
            "INSERT INTO fsmatrix_matrix_reports (matrix_name, by_version, bundles)
             VALUES ($1, $2, 0)
             ON CONFLICT (matrix_name) DO UPDATE SET computed_at = now()",
            &[&matrix, &version],
        )
        .await
        .map_err(DbError::query("lock the matrix's comparisons"))?;
    client
        .execute(
            "DELETE FROM fsmatrix_comparisons WHERE matrix_name = $1",
            &[&matrix],
        )
        .await
        .map_err(DbError::query("drop the matrix's old comparisons"))?;
    let bundles: i64 = client
        .query_one(
            "SELECT count(*) FROM fsmatrix_bundles WHERE matrix_name = $1",
            &[&matrix],
        )
        .await
        .map_err(DbError::query("count the matrix's bundles"))?
        .get(0);
    if bundles == 0 {
        client
            .execute(
                "DELETE FROM fsmatrix_matrix_reports WHERE matrix_name = $1",
                &[&matrix],
            )
            .await
            .map_err(DbError::query("drop a matrix with no bundle"))?;
        return Ok(Refreshed {
            matrix: matrix.to_string(),
            bundles: 0,
            rows: 0,
            error: None,
        });
    }
    let built = match report::load(client, &Selection::Matrix(matrix.to_string())).await {
        Ok(sources) => build(&sources),
        Err(DbError::Refused(why)) => Err(why),
        Err(e) => return Err(e),
    };
    let (rows, rule, error) = match built {
        Ok((rows, rule)) => (rows, Some(rule), None),
        Err(why) => (Vec::new(), None, Some(why)),
    };
    for (ord, c) in rows.iter().enumerate() {
        client
            .execute(
                "INSERT INTO fsmatrix_comparisons
                    (matrix_name, ord, workload, clients, host, filesystem, metric, n, mean,
                     ci_low, ci_high, baseline, ratio, ratio_ci_low, ratio_ci_high, p, verdict,
                     winner, p_adjusted, decided_ci_low, decided_ci_high, decided_ci_level,
                     tost_p, tost_p_adjusted, within_margin, repeats_to_decide, family)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16,
                         $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27)",
                &[
                    &matrix,
                    &(ord as i32),
                    &c.workload,
                    &(c.clients as i32),
                    &c.host,
                    &c.filesystem,
                    &c.metric,
                    &(c.n as i32),
                    &c.mean,
                    &c.ci95.map(|c| c.0),
                    &c.ci95.map(|c| c.1),
                    &c.baseline,
                    &c.ratio,
                    &c.ratio_ci95.map(|c| c.0),
                    &c.ratio_ci95.map(|c| c.1),
                    &c.p,
                    &c.verdict,
                    &c.winner,
                    &c.p_adjusted,
                    &c.decided_ci.map(|c| c.0),
                    &c.decided_ci.map(|c| c.1),
                    &c.decided_ci.map(|c| c.2),
                    &c.tost_p,
                    &c.tost_p_adjusted,
                    &c.within_margin,
                    &c.repeats_to_decide.map(|n| n as i32),
                    &c.family,
                ],
            )
            .await
            .map_err(DbError::query("store a comparison"))?;
    }
    client
        .execute(
            "UPDATE fsmatrix_matrix_reports SET by_version = $2, bundles = $3, error = $4,
                 alpha = $5, margin = $6, correction = $7
             WHERE matrix_name = $1",
            &[
                &matrix,
                &version,
                &(bundles as i32),
                &error,
                &rule.map(|_| crate::results::analysis::compare::ALPHA),
                &rule.map(|r| r.margin.to_string()),
                &rule.map(|r| r.correction.to_string()),
            ],
        )
        .await
        .map_err(DbError::query("record the matrix's comparisons"))?;
    Ok(Refreshed {
        matrix: matrix.to_string(),
        bundles: bundles as usize,
        rows: rows.len(),
        error,
    })
}

/// The report's rows over `sources` and the rule that decided them, or why
/// the report refused them.
fn build(sources: &[DbSource]) -> Result<(Vec<StoredComparison>, VerdictRule), String> {
    report::build(sources, &ReportOptions::default())
        .map(|r| (comparisons(&r), r.rule))
        .map_err(|e| format!("failed to {e}"))
}

/// [`refresh`] every matrix that has a published bundle or stored
/// comparisons, in name order.
pub async fn refresh_all(client: &impl GenericClient) -> Result<Vec<Refreshed>, DbError> {
    let names = client
        .query(
            "SELECT matrix_name FROM fsmatrix_bundles
             UNION SELECT matrix_name FROM fsmatrix_matrix_reports ORDER BY 1",
            &[],
        )
        .await
        .map_err(DbError::query("list the published matrices"))?;
    let mut out = Vec::with_capacity(names.len());
    for n in &names {
        out.push(refresh(client, n.get(0)).await?);
    }
    Ok(out)
}

/// The PostgreSQL version a host's facts name (`postgres_version`, as
/// `postgres --version` printed it), and its number.
pub fn postgres_version(facts: Option<&serde_json::Value>) -> (Option<&str>, Option<i32>) {
    let text = facts
        .and_then(|f| f.get("postgres_version"))
        .and_then(serde_json::Value::as_str);
    (text, text.and_then(crate::model::postgres_version_num))
}

/// Fill in what version 4 of the schema added for the rows an older
/// fsmatrix published: each run's PostgreSQL version and its number, and
/// every matrix's comparisons.
pub async fn backfill(client: &impl GenericClient) -> Result<(), DbError> {
    let found = client
        .query(
            "SELECT DISTINCT facts->'postgres_version' FROM fsmatrix_runs
             WHERE postgres_version IS NULL AND facts->'postgres_version' IS NOT NULL",
            &[],
        )
        .await
        .map_err(DbError::query("read the stored PostgreSQL versions"))?;
    for row in &found {
        let v: serde_json::Value = row.get(0);
        let facts = serde_json::json!({ "postgres_version": v });
        let (text, num) = postgres_version(Some(&facts));
        client
            .execute(
                "UPDATE fsmatrix_runs SET postgres_version = $2, postgres_version_num = $3
                 WHERE postgres_version IS NULL AND facts->'postgres_version' = $1",
                &[&v, &text, &num],
            )
            .await
            .map_err(DbError::query("store a run's PostgreSQL version"))?;
    }
    refresh_all(client).await?;
    Ok(())
}

/// One published matrix, as `db ls` lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PublishedMatrix {
    pub matrix: String,
    pub bundles: i64,
    pub hosts: i64,
    /// Cell results published (warm-ups, failed and not-run cells too).
    pub cells: i64,
    /// When its first and its last bundle were published (RFC 3339, UTC).
    pub first_published: String,
    pub last_published: String,
    /// Rows in `fsmatrix_verdicts`.
    pub comparisons: i64,
    /// Why the report gave no comparisons, if it refused.
    pub error: Option<String>,
}

/// Every published matrix, the most recently published first.
pub async fn list(client: &impl GenericClient) -> Result<Vec<PublishedMatrix>, DbError> {
    let utc =
        |col: &str| format!("to_char({col} AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')");
    let rows = client
        .query(
            &format!(
                "SELECT b.matrix_name, count(DISTINCT b.sha256), count(DISTINCT r.host),
                        count(r.cell_id), {}, {},
                        (SELECT count(*) FROM fsmatrix_comparisons c
                         WHERE c.matrix_name = b.matrix_name),
                        (SELECT m.error FROM fsmatrix_matrix_reports m
                         WHERE m.matrix_name = b.matrix_name)
                 FROM fsmatrix_bundles b
                 LEFT JOIN fsmatrix_runs r ON r.bundle_sha256 = b.sha256
                 GROUP BY b.matrix_name
                 ORDER BY max(b.published_at) DESC, b.matrix_name",
                utc("min(b.published_at)"),
                utc("max(b.published_at)")
            ),
            &[],
        )
        .await
        .map_err(DbError::query("list the published matrices"))?;
    Ok(rows
        .iter()
        .map(|r| PublishedMatrix {
            matrix: r.get(0),
            bundles: r.get(1),
            hosts: r.get(2),
            cells: r.get(3),
            first_published: r.get(4),
            last_published: r.get(5),
            comparisons: r.get(6),
            error: r.get(7),
        })
        .collect())
}
