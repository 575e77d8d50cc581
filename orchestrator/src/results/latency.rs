//! Latency as users of pgbench report it (issue 14): a group's latency
//! percentiles from the runs' per-transaction logs (`latency_log`), and its
//! per-statement latencies (`per_statement`, pgbench `-r`), with their
//! Markdown sections.  The HTML side is `html/latency_plot.rs`.
//!
//! A run's percentiles are exact over its logged transactions
//! ([`crate::generator::pgbench_log`]).  A group's p50/p95/p99 are the mean of
//! its counted runs' (each run weighs the same, as with tps), its max the
//! largest of any run; every run's own values are kept beside them.
use std::fmt::Write as _;

use serde::Serialize;

use super::report::Report;
use super::stats::GroupStats;
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

pub const LATENCY_HEADING: &str = "Latency from the per-transaction log (pgbench -l)";
pub const STATEMENTS_HEADING: &str = "Per-statement latency (pgbench -r)";
const LATENCY_NOTE: &str = "Exact nearest-rank percentiles over each run's logged transactions \
(at the workload's sampling_rate); per row the mean of the counted runs' p50, p95 and p99, and \
the largest max of any run. Skipped and failed transactions are counted apart, not in the \
percentiles.";

/// Every report row, with its table's workload and clients, in table order.
pub fn rows(r: &Report) -> impl Iterator<Item = (&str, &GroupStats)> {
    r.tables.iter().flat_map(|t| {
        t.hosts.iter().flat_map(move |h| {
            h.rows
                .iter()
                .map(move |row| (t.workload.as_str(), &row.stats))
        })
    })
}

/// `3.142` (ms to the microsecond, as pgbench prints them).
pub fn ms(v: f64) -> String {
    format!("{v:.3}")
}

fn md(s: &str) -> String {
    s.replace('|', "\\|")
        .replace('`', "'")
        .replace(['\n', '\r'], " ")
        .trim()
        .to_owned()
}

/// The group's name as a heading or a table cell says it.
pub fn group_name(g: &GroupStats) -> String {
    let k = &g.key;
    format!(
        "{} — {} — {}, {} client{}",
        k.host,
        k.filesystem,
        k.workload,
        k.clients,
        if k.clients == 1 { "" } else { "s" }
    )
}

/// The latency table's header and its rows' cells.
pub const LATENCY_COLUMNS: [&str; 10] = [
    "host",
    "variant",
    "workload",
    "clients",
    "runs",
    "logged tx",
    "p50 ms",
    "p95 ms",
    "p99 ms",
    "max ms",
];

pub fn latency_cells(g: &GroupStats, l: &GroupLatency) -> [String; 10] {
    let k = &g.key;
    let mut logged = l.transactions.to_string();
    if l.skipped > 0 || l.failed > 0 {
        let _ = write!(logged, " (+{} skipped, {} failed)", l.skipped, l.failed);
    }
    [
        k.host.clone(),
        k.filesystem.clone(),
        k.workload.clone(),
        k.clients.to_string(),
        l.runs.to_string(),
        logged,
        ms(l.p50_ms),
        ms(l.p95_ms),
        ms(l.p99_ms),
        ms(l.max_ms),
    ]
}

/// The Markdown sections: the latency table and the per-statement tables;
/// empty when no row has either.
pub fn markdown(r: &Report) -> String {
    let mut out = String::new();
    let with_log: Vec<_> = rows(r)
        .filter_map(|(_, g)| g.latency_percentiles.as_ref().map(|l| (g, l)))
        .collect();
    if !with_log.is_empty() {
        let _ = writeln!(out, "## {LATENCY_HEADING}\n\n{LATENCY_NOTE}\n");
        let _ = writeln!(out, "| {} | p99 per run |", LATENCY_COLUMNS.join(" | "));
        let _ = writeln!(out, "|{}", "---|".repeat(LATENCY_COLUMNS.len() + 1));
        for (g, l) in with_log {
            let cells: Vec<String> = latency_cells(g, l).iter().map(|c| md(c)).collect();
            let per_run: Vec<String> = l.per_run.iter().map(|p| ms(p.p99_ms)).collect();
            let _ = writeln!(out, "| {} | {} |", cells.join(" | "), per_run.join(", "));
        }
        out.push('\n');
    }
    let with_statements: Vec<_> = rows(r)
        .map(|(_, g)| g)
        .filter(|g| !g.statement_latencies.is_empty())
        .collect();
    if !with_statements.is_empty() {
        let _ = writeln!(
            out,
            "## {STATEMENTS_HEADING}\n\nEach statement's mean latency over the counted runs (pgbench prints each run's mean per statement).\n"
        );
        for g in with_statements {
            let _ = writeln!(out, "### {}\n", md(&group_name(g)));
            let counts = g.statement_latencies.iter().any(|s| s.failures.is_some());
            let _ = writeln!(
                out,
                "| script | statement | mean ms | runs |{}\n|---|---|---|---|{}",
                if counts { " failures | retries |" } else { "" },
                if counts { "---|---|" } else { "" }
            );
            for s in &g.statement_latencies {
                let _ = write!(
                    out,
                    "| {} | `{}` | {} | {} |",
                    s.script + 1,
                    md(&s.command),
                    ms(s.latency_ms),
                    s.runs
                );
                if counts {
                    let n = |v: Option<u64>| v.map_or(String::new(), |v| v.to_string());
                    let _ = write!(out, " {} | {} |", n(s.failures), n(s.retries));
                }
                out.push('\n');
            }
            out.push('\n');
        }
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

    /// Two variants × 2 runs with logs and `-r` rows, as result.json holds them.
    fn cells() -> Vec<crate::model::CellResult> {
        let mut out = Vec::new();
        for (fs, base) in [("ext4", 1.0), ("xfs", 2.0)] {
            for repeat in 1..=2u32 {
                let k = base * f64::from(repeat);
                let v = serde_json::json!({
                    "cell_id": format!("{fs}{repeat}"),
                    "params": {"host": "lab1", "filesystem": fs, "fs_type": fs, "workload": "tpcb",
                               "clients": 4, "jobs": 1, "repeat": repeat},
                    "status": {"state": "done", "run": {
                        "tps": 500.0 * k, "transactions": 1000, "duration_s": 2.0,
                        "latency_percentiles": {
                            "sampling_rate": 0.1, "transactions": 100, "skipped": 0, "failed": 1,
                            "min_ms": 0.5 * k, "mean_ms": k, "p50_ms": k, "p95_ms": 2.0 * k,
                            "p99_ms": 3.0 * k, "max_ms": 9.0 * k,
                            "curve_ms": crate::generator::pgbench_log::CURVE.iter().map(|p| k * (0.5 + p / 20.0)).collect::<Vec<_>>(),
                            "files": ["txlog/pgbench_log.1.gz"]},
                        "statement_latencies": [
                            {"command": "BEGIN;", "latency_ms": 0.1 * k},
                            {"command": "UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;",
                             "latency_ms": 0.5 * k, "failures": 2, "retries": 1}]}}
                });
                out.push(serde_json::from_value(v).unwrap_or_else(|e| panic!("{e}")));
            }
        }
        out
    }

    #[test]
    fn markdown_html_and_json_carry_the_latency() {
        use crate::results::report::{
            build_report, render_json, render_markdown_report, ReportOptions, Source,
        };
        let cells = cells();
        let r = build_report(
            &[Source {
                name: "b",
                cells: &cells,
            }],
            &ReportOptions::default(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let md = render_markdown_report(&r);
        assert!(md.contains(&format!("## {LATENCY_HEADING}")), "{md}");
        assert!(
            md.contains("| lab1 | ext4 | tpcb | 4 | 2 | 200 (+0 skipped, 2 failed) | 1.500 | 3.000 | 4.500 | 18.000 | 3.000, 6.000 |"),
            "{md}"
        );
        assert!(md.contains(&format!("## {STATEMENTS_HEADING}")), "{md}");
        assert!(md.contains("### lab1 — xfs — tpcb, 4 clients"), "{md}");
        assert!(md.contains("| 1 | `BEGIN;` | 0.300 | 2 |  |  |"), "{md}");
        assert!(md.contains("| 1 | `UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;` | 1.500 | 2 | 4 | 2 |"), "{md}");
        let json: serde_json::Value = serde_json::from_str(&render_json(&r)).unwrap();
        let row = &json["tables"][0]["hosts"][0]["rows"][1]["stats"];
        assert_eq!(row["latency_percentiles"]["p99_ms"], 9.0, "{row}");
        assert_eq!(
            row["latency_percentiles"]["per_run"][1]["max_ms"], 36.0,
            "{row}"
        );
        assert_eq!(
            row["statement_latencies"][0]["latency_ms"]
                .as_f64()
                .map(|v| (v * 1e9).round() / 1e9),
            Some(0.3)
        );
        let html = crate::results::html::render_html(&r, &cells);
        assert_eq!(
            html.matches("data-plot=\"latency-percentiles\"").count(),
            1,
            "one group of clients"
        );
        assert!(html.contains("<td><code>BEGIN;</code></td>"));
        if std::env::var_os("FSMX_SHOW_LATENCY").is_some() {
            println!("{md}");
            std::fs::write("/tmp/fsmx-latency.html", &html).unwrap();
        }
        // Without logs or -r: nothing added.
        let plain: Vec<_> = cells
            .into_iter()
            .map(|mut c| {
                if let crate::model::CellStatus::Done { run } = &mut c.status {
                    run.latency_percentiles = None;
                    run.statement_latencies.clear();
                }
                c
            })
            .collect();
        let r = build_report(
            &[Source {
                name: "b",
                cells: &plain,
            }],
            &ReportOptions::default(),
        )
        .unwrap();
        assert!(markdown(&r).is_empty());
        let html = crate::results::html::render_html(&r, &plain);
        assert!(!html.contains("latency-percentiles") && !html.contains(LATENCY_HEADING));
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
