//! The results database: a PostgreSQL that holds the sweep queue, the host
//! leases and every published result, so that several people and several
//! orchestrators share one lab (`fsmatrix db init`, `submit`, `queue`,
//! `cancel`, `publish`).  The database is the coordinator: row locks,
//! `FOR UPDATE SKIP LOCKED`, leases with an expiry; no server of fsmatrix's
//! own.  The schema is in [`schema`] and docs/results-database.md.
pub mod agent;
pub mod conn;
pub mod publish;
pub mod queue;
pub mod registry;
pub mod report;
pub mod schema;
pub mod verdicts;

pub use conn::{connect, resolve, DbTarget, ProcessEnv};

#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// The connection settings themselves are wrong (never echoes a password).
    #[error("{0}")]
    Config(String),
    #[error("cannot reach the results database {target}: {reason}")]
    Connect { target: String, reason: String },
    #[error("{0}")]
    Schema(String),
    #[error("failed to {what}: {reason}")]
    Query { what: String, reason: String },
    /// Input refused before anything reached the database.
    #[error("{0}")]
    Refused(String),
}

impl DbError {
    /// A `map_err` for a query that failed while doing `what`.
    pub fn query(what: &str) -> impl Fn(tokio_postgres::Error) -> DbError + '_ {
        move |e| DbError::Query {
            what: what.to_string(),
            reason: pg_reason(&e),
        }
    }
}

/// A tokio-postgres error in one line: the server's message (with its
/// SQLSTATE) when there is one, else the client's.
pub fn pg_reason(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        None => {
            let mut s = e.to_string();
            let mut src = std::error::Error::source(e);
            while let Some(inner) = src {
                s.push_str(&format!(": {inner}"));
                src = inner.source();
            }
            s
        }
    }
}
