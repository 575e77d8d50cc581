//! What `report --db` reports on: the published bundles of a matrix (or of
//! queued sweeps), read back from the database as the same cell records a
//! bundle holds, so that the report is the one a bundle gives.
use std::collections::BTreeMap;

use tokio_postgres::GenericClient;

use super::DbError;
use crate::results::bundle::definitions::Recorded;
use crate::results::bundle::parse_cell_result;
use crate::results::bundle::read::text_facts;
use crate::results::bundle::read::ChecksumCheck;
use crate::results::report::inputs::{Gathered, ReportInputs};
use crate::results::report::{Report, ReportError, ReportOptions};
use crate::results::CellResult;

/// Which published results to report on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selection {
    /// Every bundle published for this matrix name, oldest first.
    Matrix(String),
    /// The bundles of these sweeps (queued with `submit`).
    Sweeps(Vec<i64>),
}

/// One published bundle's cells.
#[derive(Debug, Clone)]
pub struct DbSource {
    /// The bundle's folder name (its path's last part) and sha256 prefix.
    pub name: String,
    pub cells: Vec<CellResult>,
    /// Host → the OS a stand-in host was dressed as (from its facts).
    pub standins: BTreeMap<String, String>,
    /// Host → its facts as published (key → text), for the system table.
    pub facts: BTreeMap<String, BTreeMap<String, String>>,
}

impl DbSource {
    /// The bundle as a report takes it: verified before it was imported;
    /// its definitions are not kept in the database (the report says so),
    /// nor its inventory's guests.
    pub fn gathered(self) -> Gathered {
        Gathered {
            check: ChecksumCheck {
                bundle: self.name.clone(),
                verified: true,
                problems: Vec::new(),
            },
            recorded: Recorded {
                bundle: self.name.clone(),
                definitions: None,
                facts: self.facts,
            },
            name: self.name,
            cells: self.cells,
            standins: self.standins,
            guests: Vec::new(),
        }
    }
}

/// The report `report --db` gives of `sources` alone: the one place the
/// database's stored comparisons ([`super::verdicts`]) come from.
pub fn build(sources: &[DbSource], opts: &ReportOptions) -> Result<Report, ReportError> {
    let mut inputs = ReportInputs::default();
    for s in sources {
        inputs.add(s.clone().gathered());
    }
    inputs.build(opts)
}

pub async fn load(client: &impl GenericClient, sel: &Selection) -> Result<Vec<DbSource>, DbError> {
    let bundles = match sel {
        Selection::Matrix(name) => client
            .query(
                "SELECT sha256, path FROM fsmatrix_bundles WHERE matrix_name = $1 ORDER BY published_at, sha256",
                &[name],
            )
            .await,
        Selection::Sweeps(ids) => client
            .query(
                "SELECT sha256, path FROM fsmatrix_bundles WHERE sweep_id = ANY($1) ORDER BY published_at, sha256",
                &[ids],
            )
            .await,
    }
    .map_err(DbError::query("read the published bundles"))?;
    if bundles.is_empty() {
        return Err(DbError::Refused(match sel {
            Selection::Matrix(name) => format!(
                "no bundle of matrix {name:?} is published in this database (fsmatrix publish BUNDLE)"
            ),
            Selection::Sweeps(ids) => format!("no bundle of sweep(s) {ids:?} is published in this database"),
        }));
    }
    let mut out = Vec::new();
    for b in &bundles {
        let sha: String = b.get(0);
        let path: String = b.get(1);
        let folder = path.rsplit('/').next().unwrap_or(&path).to_string();
        let rows = client
            .query(
                "SELECT result::text, host, facts->>'standin', facts::text FROM fsmatrix_runs
                 WHERE bundle_sha256 = $1 ORDER BY started_at NULLS LAST, cell_id",
                &[&sha],
            )
            .await
            .map_err(DbError::query("read the published results"))?;
        let mut cells = Vec::with_capacity(rows.len());
        let mut standins = BTreeMap::new();
        let mut facts = BTreeMap::new();
        for r in &rows {
            let text: String = r.get(0);
            // The same validator as a bundle's results.jsonl: the database is
            // no more trusted than a bundle.
            cells.push(
                parse_cell_result(&text)
                    .map_err(|e| DbError::Refused(format!("bundle {sha}: {e}")))?,
            );
            if let Some(os) = r.get::<_, Option<String>>(2) {
                if !os.is_empty() && os.len() <= 32 && os.bytes().all(|b| b.is_ascii_lowercase()) {
                    standins.insert(r.get::<_, String>(1), os);
                }
            }
            if let std::collections::btree_map::Entry::Vacant(e) = facts.entry(r.get(1)) {
                let found = r
                    .get::<_, Option<String>>(3)
                    .and_then(|t| serde_json::from_str(&t).ok())
                    .and_then(text_facts);
                if let Some(f) = found {
                    e.insert(f);
                }
            }
        }
        out.push(DbSource {
            name: format!("{folder} ({})", &sha[..12]),
            cells,
            standins,
            facts,
        });
    }
    Ok(out)
}
