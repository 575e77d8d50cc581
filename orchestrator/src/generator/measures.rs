//! Parser outcomes turned into what a cell records: the measures of a run
//! (or the reasons it has none), the load's timings, and the parsed files
//! the bundle keeps beside the raw output.  Pure.
use super::pgbench_parse::{parse_init, parse_run, ProgressSample as PgbenchSample, TpsKind};
use super::psql_parse::parse_psql;
use crate::config::Length;
use crate::model::{
    InitTimings, PgbenchDetail, Phase, ProgressSample, RunCore, RunDetail, RunMeasures, SqlDetail,
    StatementTime,
};
use crate::text::json_pretty_bytes;

/// A run's output read: its measures, or why it has none, and the files
/// (name, bytes) the cell keeps besides `run.out`/`run.err`.
#[derive(Debug)]
pub struct Measured {
    pub measures: Result<RunMeasures, String>,
    pub files: Vec<(String, Vec<u8>)>,
}

/// A pgbench run: `length` is the cell's (a timed run's duration is the
/// one asked for, which pgbench ≤ 9.x does not print).
pub fn measure_pgbench(
    stdout: &str,
    stderr: &str,
    status: Option<i32>,
    length: Length,
) -> Measured {
    let r = parse_run(stdout, stderr, status);
    let mut files = Vec::new();
    if !r.progress.is_empty() {
        files.push(("progress.csv".to_string(), progress_csv(&r.progress)));
    }
    files.push(("parsed.json".to_string(), json_pretty_bytes(&r)));
    let measures = match (&r.summary.tps, r.valid) {
        (Some(tps), true) => {
            let core = RunCore {
                throughput: tps.value,
                latency_ms: r.summary.latency_avg_ms,
                duration_s: match length {
                    Length::Seconds(s) => s as f64,
                    _ => r.summary.duration_s.map(|d| d as f64).unwrap_or(0.0),
                },
                operations: r.summary.transactions_processed.unwrap_or(0),
            };
            let detail = PgbenchDetail {
                tps_including_connect: r
                    .summary
                    .tps_lines
                    .iter()
                    .find(|t| t.kind == TpsKind::IncludingConnectionsEstablishing)
                    .map(|t| t.value),
                latency_stddev_ms: r.summary.latency_stddev_ms,
                failed_transactions: r.summary.failed.as_ref().map(|f| f.count),
                schedule_lag_avg_ms: r.summary.schedule_lag_avg_ms,
                schedule_lag_max_ms: r.summary.schedule_lag_max_ms,
                skipped_transactions: r.summary.skipped.as_ref().map(|s| s.count),
                late_transactions: r.summary.late,
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
                latency_percentiles: None,
                statement_latencies: r.statements.clone(),
            };
            Ok(RunMeasures::new(core, RunDetail::Pgbench(Box::new(detail))))
        }
        _ => Err(reasons(r.invalid_reasons.iter().map(|r| r.to_string()))),
    };
    Measured {
        measures: finite_only(measures),
        files,
    }
}

/// `latency_log`: the run's percentiles from its gzipped per-transaction
/// logs (name, bytes).  A run that counts but whose log cannot be read is
/// recorded as failed, saying why: its latency would silently be missing.
pub fn with_latency_log(m: Measured, logs: &[(String, Vec<u8>)], sampling_rate: f64) -> Measured {
    let measures = match m.measures {
        Ok(mut run) => match super::pgbench_log::percentiles_of_gz(logs, sampling_rate) {
            Ok(mut p) => {
                p.files = p.files.iter().map(|f| format!("txlog/{f}")).collect();
                run.latency_percentiles = Some(p);
                finite_only(Ok(run))
            }
            Err(e) => Err(e),
        },
        e => e,
    };
    Measured {
        measures,
        files: m.files,
    }
}

/// A measure that is not a finite number (a sum that overflowed, a huge
/// printed value) is no measure: the run is recorded as failed, saying which.
fn finite_only(m: Result<RunMeasures, String>) -> Result<RunMeasures, String> {
    match m {
        Ok(run) => match run.non_finite_field() {
            Some(f) => Err(format!(
                "the output gives {f} as a number that is not finite"
            )),
            None => Ok(run),
        },
        e => e,
    }
}

/// A SQL script run by psql: every statement's time, as psql printed it
/// (the detail), and the run's duration (the total load time, what its
/// cells are compared on).  The duration is `wall_ms`, the host's own clock
/// around psql (the verb's `elapsed_ms`: psql's start and connection
/// included), never the script's output: psql's `Time:` lines share
/// stdout with the echoed statements, so a script can print lines that
/// look like them (in a comment, say).  A sum of statement times beyond
/// what the host measured is such lines, and the run is refused.  Without
/// `wall_ms` (no host clock) the sum stands in, as before.  "tps"
/// (statements per second) and latency (their mean) are kept for old
/// readers but mean little for a data load.
pub fn measure_psql(stdout: &str, status: Option<i32>, wall_ms: Option<f64>) -> Measured {
    let p = parse_psql(stdout, status);
    let files = vec![("statements.json".to_string(), json_pretty_bytes(&p))];
    // psql's own rounding: its times are printed to 0.001 ms each.
    let forged = wall_ms.filter(|w| p.total_ms > w + 0.001 * p.statements.len() as f64 + 1.0);
    let measures = if let (true, Some(wall)) = (p.valid, forged) {
        Err(format!(
            "the output's statement times add up to {:.3} ms, more than the {wall:.0} ms the \
             host measured around psql: it holds timing lines psql did not print (a script \
             cannot write its own timings)",
            p.total_ms
        ))
    } else if p.valid {
        let n = p.statements.len();
        let secs = wall_ms.unwrap_or(p.total_ms) / 1000.0;
        let core = RunCore {
            throughput: if secs > 0.0 { n as f64 / secs } else { 0.0 },
            latency_ms: (n > 0).then(|| p.total_ms / n as f64),
            duration_s: secs,
            operations: n as u64,
        };
        let statements = p
            .statements
            .iter()
            .map(|s| StatementTime {
                statement: s.statement.clone(),
                ms: s.ms,
            })
            .collect();
        Ok(RunMeasures::new(
            core,
            RunDetail::Sql(SqlDetail { statements }),
        ))
    } else {
        Err(reasons(p.invalid_reasons.iter().map(|r| r.to_string())))
    };
    Measured {
        measures: finite_only(measures),
        files,
    }
}

/// `pgbench -i`'s timings, when it completed (the caller also requires exit
/// status 0).
pub fn init_timings(stdout: &str, stderr: &str) -> Option<InitTimings> {
    let parsed = parse_init(stdout, stderr);
    parsed.completed.then(|| InitTimings {
        total_s: parsed.total_s,
        phases: parsed
            .phases
            .iter()
            .map(|p| Phase {
                name: p.name.clone(),
                seconds: p.seconds,
            })
            .collect(),
    })
}

fn reasons(it: impl Iterator<Item = String>) -> String {
    let v: Vec<String> = it.collect();
    if v.is_empty() {
        "the output has no result".to_string()
    } else {
        v.join("; ")
    }
}

/// Per-second progress as CSV (`t_s,tps,latency_avg_ms,latency_stddev_ms,failed`).
pub fn progress_csv(p: &[PgbenchSample]) -> Vec<u8> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let opt = |v: Option<f64>| v.map(|v| v.to_string()).unwrap_or_default();
    let mut rows = vec![[
        "t_s".to_string(),
        "tps".into(),
        "latency_avg_ms".into(),
        "latency_stddev_ms".into(),
        "failed".into(),
    ]];
    rows.extend(p.iter().map(|x| {
        [
            x.t_s.to_string(),
            x.tps.to_string(),
            opt(x.lat_ms),
            opt(x.stddev_ms),
            x.failed.map(|v| v.to_string()).unwrap_or_default(),
        ]
    }));
    for r in &rows {
        // Writing to a Vec cannot fail.
        let _ = w.write_record(r);
    }
    w.into_inner().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUN: &str = include_str!("../../../tests/fixtures/pgbench/15/run-select-only-t.stdout");

    #[test]
    fn a_pgbench_run_becomes_measures() {
        let m = measure_pgbench(RUN, "", Some(0), Length::Transactions(500));
        let r = m.measures.expect("valid");
        assert_eq!(r.tps, 4481.170123);
        assert_eq!(r.transactions, 1000);
        assert_eq!(r.latency_avg_ms, Some(0.446));
        assert!(m.files.iter().any(|(n, _)| n == "parsed.json"));
        let bad = measure_pgbench("", "connection refused\n", Some(1), Length::Seconds(5));
        assert!(bad.measures.is_err());
    }

    #[test]
    fn psql_statements_and_init_timings() {
        let out = "SELECT 1;\nTime: 2.000 ms\nSELECT 2;\nTime: 3.000 ms\n";
        let m = measure_psql(out, Some(0), None);
        let r = m.measures.expect("valid");
        assert_eq!(r.transactions, 2);
        assert_eq!(r.latency_avg_ms, Some(2.5));
        assert!((r.tps - 400.0).abs() < 1e-9);
        assert_eq!(r.duration_s, 0.005);
        // With the host's clock, the duration is the host's: the script
        // cannot make its load look shorter (or longer) than it was.
        let r = measure_psql(out, Some(0), Some(40.0))
            .measures
            .expect("valid");
        assert_eq!(r.duration_s, 0.040);
        assert_eq!(r.statements.iter().map(|s| s.ms).sum::<f64>(), 5.0);
        // Timing lines the host's clock cannot hold: refused, saying why.
        let forged = "select pg_sleep(0) /*\nTime: 9000.000 ms\n*/;\nTime: 1.000 ms\n";
        let e = measure_psql(forged, Some(0), Some(12.0))
            .measures
            .expect_err("forged timings");
        assert!(
            e.contains("add up to 9001.000 ms, more than the 12 ms the host measured"),
            "{e}"
        );
        let st: Vec<(&str, f64)> = r
            .statements
            .iter()
            .map(|s| (s.statement.as_str(), s.ms))
            .collect();
        assert_eq!(st, [("SELECT 1;", 2.0), ("SELECT 2;", 3.0)]);
        let t = init_timings("", "done in 1.23 s (drop tables 0.01 s, vacuum 0.50 s).\n")
            .expect("completed");
        assert_eq!(t.total_s, Some(1.23));
        assert_eq!(t.phases.len(), 2);
        assert!(init_timings("", "ERROR: nope\n").is_none());
    }

    #[test]
    fn progress_is_csv() {
        let stderr = include_str!("../../../tests/fixtures/pgbench/15/run-tpcb-P1.stderr");
        let r = parse_run("", stderr, Some(0));
        let text = String::from_utf8(progress_csv(&r.progress)).unwrap_or_default();
        let mut lines = text.lines();
        assert_eq!(
            lines.next(),
            Some("t_s,tps,latency_avg_ms,latency_stddev_ms,failed")
        );
        assert_eq!(lines.next(), Some("1,1788.9,2.203,1.797,0"));
        assert_eq!(lines.count() + 1, r.progress.len());
    }
}
