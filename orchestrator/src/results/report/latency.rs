//! The latency sections' texts, shared by the Markdown and HTML renderers:
//! the headings, the latency table's columns and cells, the per-statement
//! tables' group names.  The numbers are [`crate::results::analysis::latency`]'s;
//! the Markdown sections are in `markdown.rs`, the HTML ones in
//! `html/latency_plot.rs`.
use std::fmt::Write as _;

use super::Report;
use crate::results::analysis::latency::GroupLatency;
use crate::results::analysis::stats::GroupStats;

pub const LATENCY_HEADING: &str = "Latency from the per-transaction log (pgbench -l)";
pub const STATEMENTS_HEADING: &str = "Per-statement latency (pgbench -r)";
pub const LATENCY_NOTE: &str =
    "Exact nearest-rank percentiles over each run's logged transactions \
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

#[cfg(test)]
mod tests {
    use super::*;

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
        use crate::results::report::json::render_json;
        use crate::results::report::markdown::{latency_markdown, render_markdown_report};
        use crate::results::report::{build_report, ReportOptions, Source};
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
        let html = crate::results::report::html::render_html(&r, &cells);
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
        assert!(latency_markdown(&r).is_empty());
        let html = crate::results::report::html::render_html(&r, &plain);
        assert!(!html.contains("latency-percentiles") && !html.contains(LATENCY_HEADING));
    }
}
