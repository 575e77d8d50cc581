//! Latency as users of pgbench report it: a group's latency percentiles
//! from the runs' per-transaction logs (`latency_log`), and its
//! per-statement latencies (`per_statement`, pgbench `-r`).  Their texts
//! are the report's (`report/latency.rs`).
//!
//! A run's percentiles are exact over its logged transactions
//! ([`crate::generator::pgbench_log`]).  A group's p50/p95/p99 are the mean of
//! its counted runs' (each run weighs the same, as with tps), its max the
//! largest of any run; every run's own values are kept beside them.
use serde::Serialize;

use crate::model::{LatencyPercentiles, StatementLatency};

/// One counted run's percentiles, as the group keeps them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunLatency {
    pub transactions: u64,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

/// A group's latency from the per-transaction logs of its counted runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupLatency {
    /// Counted runs with a log.
    pub runs: usize,
    pub sampling_rate: f64,
    /// Logged completed transactions, all runs together.
    pub transactions: u64,
    pub skipped: u64,
    pub failed: u64,
    /// Means over the runs.
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    /// The largest of any run.
    pub max_ms: f64,
    /// Each run's, in the order the cells came.
    pub per_run: Vec<RunLatency>,
    /// The mean over the runs of each point of
    /// [`crate::generator::pgbench_log::CURVE`]; empty if a run lacks it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub curve_ms: Vec<f64>,
}

/// The group's latency; `None` when no counted run has a log.
pub fn group_latency(runs: &[&LatencyPercentiles]) -> Option<GroupLatency> {
    let first = runs.first()?;
    let n = runs.len() as f64;
    let mean = |f: fn(&LatencyPercentiles) -> f64| runs.iter().map(|r| f(r)).sum::<f64>() / n;
    let points = first.curve_ms.len();
    let curve_ms = if points > 0 && runs.iter().all(|r| r.curve_ms.len() == points) {
        (0..points)
            .map(|i| runs.iter().map(|r| r.curve_ms[i]).sum::<f64>() / n)
            .collect()
    } else {
        Vec::new()
    };
    Some(GroupLatency {
        runs: runs.len(),
        sampling_rate: first.sampling_rate,
        transactions: runs.iter().map(|r| r.transactions).sum(),
        skipped: runs.iter().map(|r| r.skipped).sum(),
        failed: runs.iter().map(|r| r.failed).sum(),
        p50_ms: mean(|r| r.p50_ms),
        p95_ms: mean(|r| r.p95_ms),
        p99_ms: mean(|r| r.p99_ms),
        max_ms: runs.iter().map(|r| r.max_ms).fold(f64::MIN, f64::max),
        per_run: runs
            .iter()
            .map(|r| RunLatency {
                transactions: r.transactions,
                p50_ms: r.p50_ms,
                p95_ms: r.p95_ms,
                p99_ms: r.p99_ms,
                max_ms: r.max_ms,
            })
            .collect(),
        curve_ms,
    })
}

/// A statement's mean latency over a group's counted runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StatementMean {
    pub script: u32,
    pub command: String,
    /// The mean of the runs' per-statement means.
    pub latency_ms: f64,
    /// Runs that printed the statement.
    pub runs: usize,
    /// PostgreSQL 15+: failures of the statement, all runs together.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failures: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retries: Option<u64>,
}

/// Each statement (by script and command, in first-seen order) averaged
/// over the runs that printed it.
pub fn statement_means(runs: &[&[StatementLatency]]) -> Vec<StatementMean> {
    let mut out: Vec<StatementMean> = Vec::new();
    for run in runs {
        for s in *run {
            let i = match out
                .iter()
                .position(|m| m.script == s.script && m.command == s.command)
            {
                Some(i) => i,
                None => {
                    out.push(StatementMean {
                        script: s.script,
                        command: s.command.clone(),
                        latency_ms: 0.0,
                        runs: 0,
                        failures: None,
                        retries: None,
                    });
                    out.len() - 1
                }
            };
            let m = &mut out[i];
            m.latency_ms += s.latency_ms;
            m.runs += 1;
            let add = |a: Option<u64>, b: Option<u64>| match (a, b) {
                (None, None) => None,
                (a, b) => Some(a.unwrap_or(0).saturating_add(b.unwrap_or(0))),
            };
            m.failures = add(m.failures, s.failures);
            m.retries = add(m.retries, s.retries);
        }
    }
    for m in &mut out {
        m.latency_ms /= m.runs.max(1) as f64;
    }
    out
}
#[cfg(test)]
mod tests {
    use super::*;

    fn run(p50: f64, p99: f64, max: f64) -> LatencyPercentiles {
        LatencyPercentiles {
            sampling_rate: 0.1,
            transactions: 100,
            skipped: 1,
            failed: 0,
            min_ms: 0.5,
            mean_ms: p50,
            p50_ms: p50,
            p95_ms: (p50 + p99) / 2.0,
            p99_ms: p99,
            max_ms: max,
            curve_ms: vec![0.5, p50, max],
            files: vec![],
        }
    }

    #[test]
    fn group_means_percentiles_and_keeps_the_largest_max() {
        let (a, b) = (run(1.0, 3.0, 10.0), run(2.0, 5.0, 7.0));
        let g = group_latency(&[&a, &b]).unwrap();
        assert_eq!((g.runs, g.transactions, g.skipped), (2, 200, 2));
        assert_eq!(
            (g.p50_ms, g.p95_ms, g.p99_ms, g.max_ms),
            (1.5, 2.75, 4.0, 10.0)
        );
        assert_eq!(g.curve_ms, [0.5, 1.5, 8.5]);
        assert_eq!(g.per_run.len(), 2);
        assert!(group_latency(&[]).is_none());
    }

    #[test]
    fn statements_are_averaged_by_script_and_command() {
        let st = |script, cmd: &str, ms, f| StatementLatency {
            script,
            command: cmd.into(),
            latency_ms: ms,
            failures: f,
            retries: None,
        };
        let r1 = [st(0, "BEGIN;", 1.0, None), st(0, "END;", 2.0, None)];
        let r2 = [st(0, "BEGIN;", 3.0, None), st(1, "END;", 4.0, Some(2))];
        let m = statement_means(&[&r1, &r2]);
        let got: Vec<_> = m
            .iter()
            .map(|s| {
                (
                    s.script,
                    s.command.as_str(),
                    s.latency_ms,
                    s.runs,
                    s.failures,
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                (0, "BEGIN;", 2.0, 2, None),
                (0, "END;", 2.0, 1, None),
                (1, "END;", 4.0, 1, Some(2))
            ]
        );
    }
}
