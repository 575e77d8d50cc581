//! PostgreSQL's own counters, read by the orchestrator through an SSH
//! tunnel to the cell's socket (never in the data path: only before and
//! after a run), as the role `fsmatrix_monitor` (pg_monitor's rights, no
//! more), which the cluster's pg_hba.conf grants only to the ssh login user
//! by peer authentication (remote-scripts/common.sh `write_pg_hba`).  Best effort: a query that fails (an old server lacks a
//! view) is recorded as an error in the snapshot, never fails the cell.
use serde_json::{json, Map, Value};
use tokio_postgres::NoTls;

use crate::remote::Remote;

/// The database the scripts create and load.
pub const DB: &str = "fsmatrix";

/// The role the counters are read as (common.sh `MONITOR_ROLE`).
pub const MONITOR_ROLE: &str = "fsmatrix_monitor";

/// Why the counters could not be read.
#[derive(Debug, thiserror::Error)]
pub enum CounterError {
    #[error("open a tunnel to {socket}: {source}")]
    Tunnel {
        socket: String,
        source: crate::remote::RemoteError,
    },
    #[error("connect to postgres through the tunnel: timed out")]
    ConnectTimeout,
    #[error("connect to postgres through the tunnel: {0}")]
    Connect(tokio_postgres::Error),
    #[error("{0}")]
    Query(#[from] tokio_postgres::Error),
}

/// `socket`: the cell's `.s.PGSQL.<port>` ([`crate::run::calls::HostPaths::socket`]).
async fn connect<R: Remote>(
    remote: &R,
    socket: &str,
) -> Result<tokio_postgres::Client, CounterError> {
    let stream = remote
        .tunnel(socket)
        .await
        .map_err(|source| CounterError::Tunnel {
            socket: socket.to_string(),
            source,
        })?;
    let mut cfg = tokio_postgres::Config::new();
    cfg.user(MONITOR_ROLE)
        .dbname(DB)
        .application_name("fsmatrix");
    let (client, conn) =
        tokio::time::timeout(crate::timeouts::PG_CONNECT, cfg.connect_raw(stream, NoTls))
            .await
            .map_err(|_| CounterError::ConnectTimeout)?
            .map_err(CounterError::Connect)?;
    tokio::spawn(async move {
        // The connection ends when the client is dropped.
        let _ = conn.await;
    });
    Ok(client)
}

/// `pg_database_size` of the benchmark database.
pub async fn database_size<R: Remote>(remote: &R, socket: &str) -> Result<u64, CounterError> {
    let client = connect(remote, socket).await?;
    let row = client
        .query_one("SELECT pg_database_size(current_database())::bigint", &[])
        .await?;
    let n: i64 = row.get(0);
    Ok(u64::try_from(n).unwrap_or(0))
}

/// One JSON object of counters; errors are kept inside it.
pub async fn snapshot<R: Remote>(remote: &R, socket: &str, settings: &[String]) -> Value {
    let mut out = Map::new();
    out.insert("taken_at".into(), json!(crate::text::now_rfc3339()));
    let client = match connect(remote, socket).await {
        Ok(c) => c,
        Err(e) => {
            out.insert("errors".into(), json!([e.to_string()]));
            return Value::Object(out);
        }
    };
    let mut errors = Vec::new();
    // Every value comes back as text or JSON text, so no type mapping can fail.
    let scalar = [
        ("version", "SELECT version()"),
        (
            "server_version_num",
            "SELECT current_setting('server_version_num')",
        ),
        (
            "database_bytes",
            "SELECT pg_database_size(current_database())::text",
        ),
        (
            "wal_lsn_bytes",
            "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint::text",
        ),
    ];
    for (key, sql) in scalar {
        match client.query_one(sql, &[]).await {
            Ok(row) => {
                let v: String = row.get(0);
                out.insert(key.into(), json!(v));
            }
            Err(e) => errors.push(format!("{key}: {e}")),
        }
    }
    let rows = [
        ("bgwriter", "SELECT row_to_json(s)::text FROM pg_stat_bgwriter s"),
        // PostgreSQL 17 moved checkpoint counters here.
        ("checkpointer", "SELECT row_to_json(s)::text FROM pg_stat_checkpointer s"),
        (
            "database",
            "SELECT row_to_json(s)::text FROM pg_stat_database s WHERE datname = current_database()",
        ),
    ];
    for (key, sql) in rows {
        match client.query_opt(sql, &[]).await {
            Ok(Some(row)) => {
                let v: String = row.get(0);
                out.insert(key.into(), serde_json::from_str(&v).unwrap_or(Value::Null));
            }
            Ok(None) => {}
            Err(e) => errors.push(format!("{key}: {e}")),
        }
    }
    match client
        .query(
            "SELECT c.relname::text, pg_total_relation_size(c.oid)::text FROM pg_class c \
             JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE c.relkind = 'r' AND n.nspname NOT IN ('pg_catalog', 'information_schema') \
             ORDER BY 1",
            &[],
        )
        .await
    {
        Ok(rows) => {
            let m: Map<String, Value> = rows
                .iter()
                .map(|r| (r.get::<_, String>(0), json!(r.get::<_, String>(1))))
                .collect();
            out.insert("relations".into(), Value::Object(m));
        }
        Err(e) => errors.push(format!("relations: {e}")),
    }
    match client
        .query(
            "SELECT name, setting, coalesce(unit, ''), source FROM pg_settings WHERE name = ANY($1) ORDER BY 1",
            &[&settings],
        )
        .await
    {
        Ok(rows) => {
            let m: Map<String, Value> = rows
                .iter()
                .map(|r| {
                    (
                        r.get::<_, String>(0),
                        json!({"setting": r.get::<_, String>(1), "unit": r.get::<_, String>(2), "source": r.get::<_, String>(3)}),
                    )
                })
                .collect();
            out.insert("settings".into(), Value::Object(m));
        }
        Err(e) => errors.push(format!("settings: {e}")),
    }
    if !errors.is_empty() {
        out.insert("errors".into(), json!(errors));
    }
    Value::Object(out)
}

fn num(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

/// Numeric fields of `after` minus `before` (counters only grow; a reset
/// shows as a negative delta, kept as is so it is visible).
fn delta_obj(before: &Value, after: &Value) -> Value {
    let (Some(b), Some(a)) = (before.as_object(), after.as_object()) else {
        return Value::Null;
    };
    let mut m = Map::new();
    for (k, av) in a {
        if let (Some(x), Some(y)) = (b.get(k).and_then(num), num(av)) {
            m.insert(k.clone(), json!(y - x));
        }
    }
    Value::Object(m)
}

/// `pgstats.json`: both snapshots and the deltas of the counters.
pub fn report(before: &Value, after: &Value) -> Vec<u8> {
    let get = |v: &Value, k: &str| v.get(k).cloned().unwrap_or(Value::Null);
    let wal = match (
        get(before, "wal_lsn_bytes")
            .as_str()
            .and_then(|s| s.parse::<f64>().ok()),
        get(after, "wal_lsn_bytes")
            .as_str()
            .and_then(|s| s.parse::<f64>().ok()),
    ) {
        (Some(b), Some(a)) => json!(a - b),
        _ => Value::Null,
    };
    let v = json!({
        "before": before,
        "after": after,
        "delta": {
            "wal_bytes": wal,
            "bgwriter": delta_obj(&get(before, "bgwriter"), &get(after, "bgwriter")),
            "checkpointer": delta_obj(&get(before, "checkpointer"), &get(after, "checkpointer")),
            "database": delta_obj(&get(before, "database"), &get(after, "database")),
        }
    });
    let mut b = serde_json::to_vec_pretty(&v).unwrap_or_default();
    b.push(b'\n');
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deltas_of_numeric_counters() {
        let b =
            json!({"wal_lsn_bytes": "1000", "bgwriter": {"buffers_clean": 5, "stats_reset": "x"}});
        let a =
            json!({"wal_lsn_bytes": "4096", "bgwriter": {"buffers_clean": 12, "stats_reset": "x"}});
        let r: Value = serde_json::from_slice(&report(&b, &a)).unwrap();
        assert_eq!(r["delta"]["wal_bytes"], json!(3096.0));
        assert_eq!(r["delta"]["bgwriter"]["buffers_clean"], json!(7.0));
        assert!(r["delta"]["bgwriter"].get("stats_reset").is_none());
    }
}
