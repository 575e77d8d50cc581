//! What rows are compared on: a rate-limited workload on its
//! latency (tps is the rate), a SQL script on its load time, led by each
//! statement's time and the sizes, in the terminal summary, Markdown, HTML
//! and JSON; and p-values said once, one way.
use fsmatrix::model::*;
use fsmatrix::results::analysis::compare::Verdict;
use fsmatrix::results::analysis::stats::{p_text, Metric};
use fsmatrix::results::report::html::render_html;
use fsmatrix::results::report::json::render_json;
use fsmatrix::results::report::markdown::render_markdown_report;
use fsmatrix::results::report::summary::render_summary;
use fsmatrix::results::report::{build_report, Report, ReportOptions, Source};

use crate::bundle_common::{cell, done};

fn report(cells: &[CellResult]) -> Report {
    build_report(&[Source { name: "b", cells }], &ReportOptions::default()).unwrap()
}

/// A rate-limited run at 50 tps: tps the rate, `lat` ms mean latency.
fn rated(fs: &str, repeat: u32, tps: f64, lat: f64, lag: f64) -> CellResult {
    let mut c = cell(&format!("{fs}-r{repeat}"), fs, 2, repeat, done(tps));
    c.params.workload = "rated".into();
    c.params.rate = Some(50);
    if let CellStatus::Done { run } = &mut c.status {
        run.latency_avg_ms = Some(lat);
        run.schedule_lag_avg_ms = Some(lag);
        run.schedule_lag_max_ms = Some(lag * 10.0);
        run.skipped_transactions = Some(0);
        run.late_transactions = Some(repeat as u64);
    }
    c
}

#[test]
fn a_rate_limited_workload_is_compared_on_latency() {
    // The tps are the rate (and zfs's even a hair higher); the latency is
    // what differs: xfs ≈ 3.0 ms, zfs ≈ 4.5 ms.
    let cells = vec![
        rated("zfs", 1, 50.2, 4.51, 0.10),
        rated("zfs", 2, 50.1, 4.43, 0.12),
        rated("zfs", 3, 49.9, 4.62, 0.11),
        rated("xfs", 1, 49.8, 3.02, 0.05),
        rated("xfs", 2, 50.0, 2.95, 0.06),
        rated("xfs", 3, 49.9, 3.07, 0.05),
    ];
    let r = report(&cells);
    let t = &r.tables[0];
    assert_eq!((t.metric, t.rate), (Metric::Latency, Some(50)));
    let h = &t.hosts[0];
    // On tps zfs would "win"; on latency xfs does.
    assert_eq!(h.winner.as_deref(), Some("xfs"));
    let xfs = h
        .rows
        .iter()
        .find(|r| r.stats.key.filesystem == "xfs")
        .unwrap();
    let c = xfs.comparison.as_ref().unwrap();
    assert_eq!(c.verdict, Verdict::LowerLatency);
    assert!(c.ratio.unwrap().ratio < 0.7, "{:?}", c.ratio);
    assert_eq!(xfs.stats.latency_values, [3.02, 2.95, 3.07]);

    let s = render_summary(&r, 100);
    assert!(
        s.contains("rated with 2 clients at 50 tps (rate-limited: compared on latency) on lab1:"),
        "{s}"
    );
    // The answer once, in the verdict words (no second ranking).
    let words = s.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words.contains("`xfs` is lower latency than `zfs`: 0.67× its mean latency"),
        "{s}"
    );
    assert!(!s.contains("times lower latency"), "{s}");
    assert!(!s.contains("faster"), "{s}");
    assert!(
        s.contains("`zfs`: schedule lag 0.110 ms mean, 1.200 ms max, 0 skipped, 6 late"),
        "{s}"
    );

    let md = render_markdown_report(&r);
    assert!(
        md.contains("Rate-limited at 50 tps (pgbench -R): tps is fixed by the rate"),
        "{md}"
    );
    assert!(
        md.contains("| host | filesystem | type | n | median latency ms |"),
        "{md}"
    );
    let zfs_line = md
        .lines()
        .find(|l| l.starts_with("| lab1 | zfs |"))
        .unwrap();
    assert!(
        zfs_line.contains("| 4.510 |") && zfs_line.contains("| 0.110, 1.200 | 0 | 6 |"),
        "{zfs_line}"
    );
    let xfs_line = md
        .lines()
        .find(|l| l.starts_with("| lab1 | xfs |"))
        .unwrap();
    assert!(xfs_line.contains("| lower latency |"), "{xfs_line}");
    assert!(
        md.contains(
            "on lab1: `xfs` is best (lower mean latency than every other variant, decided at the family's error rate); `xfs` is lower latency than `zfs`: 0."
        ),
        "{md}"
    );

    let html = render_html(&r, &cells);
    assert!(html.contains("<th>median latency ms</th>"), "{html}");
    assert!(html.contains("lower mean latency than every other variant"));
    assert!(html.contains("<p>Rate-limited at 50 tps"));
    // No tps plots of a tps that is the rate.
    assert!(!html.contains("data-plot=\"tps-bars\""));
    assert!(html.contains("No workload here is compared on tps"));

    let v: serde_json::Value = serde_json::from_str(&render_json(&r)).unwrap();
    let jt = &v["tables"][0];
    assert_eq!(jt["metric"], "latency");
    assert_eq!(jt["rate"], 50);
    let rows = jt["hosts"][0]["rows"].as_array().unwrap();
    let jx = rows
        .iter()
        .find(|r| r["stats"]["key"]["filesystem"] == "xfs")
        .unwrap();
    assert_eq!(jx["comparison"]["verdict"], "lower latency");
    assert_eq!(jx["stats"]["metric"], "latency");
    assert_eq!(jx["stats"]["schedule_lag_max_ms"], 0.6);
    assert_eq!(jx["stats"]["late_transactions"], 6);
}

/// One run of the study's data load (shared/studies/zfs-compression-centos7.txt:
/// CREATE TABLE and INSERT of 1e6 rows, psql `\timing`), with its sizes.
fn load(fs: &str, repeat: u32, ms: [f64; 3], on_disk: u64, ratio: Option<f64>) -> CellResult {
    let statements = ["drop table if exists dataload;", "create table dataload ( a bigint\n, b varchar(100)\n, c timestamp\n);", "with\n  data_generator_num as\n     ( select *\n         from generate_series ( 1\n, 1000000 ) nums\n     )\ninsert into dataload\nselect data_generator_num.nums;"];
    let mut c = cell(&format!("{fs}-l{repeat}"), fs, 1, repeat, done(0.1));
    c.params.workload = "dataload".into();
    c.params.sql_script = true;
    if let CellStatus::Done { run } = &mut c.status {
        run.statements = statements
            .iter()
            .zip(ms)
            .map(|(s, ms)| StatementTime {
                statement: s.to_string(),
                ms,
            })
            .collect();
        run.tps = 3.0 / (ms.iter().sum::<f64>() / 1000.0);
        // As a bundle has it: the load's duration (before the host's clock
        // was used, the statements' sum; the study's timings are that).
        run.duration_s = ms.iter().sum::<f64>() / 1000.0;
        run.progress.clear();
    }
    let s = c.sizes.as_mut().unwrap();
    s.du_on_disk_bytes = Some(on_disk);
    s.du_apparent_bytes = Some(85_000_000);
    s.zfs_compressratio = ratio;
    s.zfs_referenced_bytes = Some(on_disk + 4_000_000);
    s.zfs_used_bytes = Some(on_disk + 4_400_000);
    s.zfs_logicalused_bytes = None;
    s.pg_database_bytes = Some(89_000_000);
    c
}

#[test]
fn a_sql_script_leads_with_its_statements_load_time_and_sizes() {
    // The study's timings (ms): uncompressed 720.6 / 4631.2 / 28668.3 and
    // 774.1 / 2721.2 / 32168.0; compressed 0.9 / 4282.0 / 30607.0 and
    // 2359.1 / 3267.2 / 23474.3 (here as drop / create / insert).
    let cells = vec![
        load(
            "zfs-off",
            1,
            [720.626, 4631.212, 28668.343],
            85_000_000,
            Some(1.0),
        ),
        load(
            "zfs-off",
            2,
            [774.061, 2721.169, 32168.043],
            85_100_000,
            Some(1.0),
        ),
        load(
            "zfs-on",
            1,
            [0.850, 4281.965, 30606.966],
            50_000_000,
            Some(1.93),
        ),
        load(
            "zfs-on",
            2,
            [2359.120, 3267.151, 23474.290],
            50_200_000,
            Some(1.93),
        ),
    ];
    let r = report(&cells);
    let t = &r.tables[0];
    assert_eq!(t.metric, Metric::LoadTime);
    let on = &t.hosts[0].rows[1];
    assert_eq!(on.stats.key.filesystem, "zfs-on");
    assert_eq!(on.stats.statements.len(), 3);
    let total_on = on.stats.load_s.as_ref().unwrap().mean;
    assert!(
        (total_on - (34889.781 + 29100.561) / 2000.0).abs() < 1e-9,
        "{total_on}"
    );
    // Too few repeats and too much noise to call it: inconclusive, with
    // how many repeats per arm would likely decide it.
    let c = on.comparison.as_ref().unwrap();
    assert_eq!(c.verdict, Verdict::Inconclusive);
    let more = c.repeats_to_decide.expect("a planned count");
    assert!(more > 2, "{c:?}");
    // ZFS's size is the dataset's referenced (du + 4 MB here).
    let x = on.on_disk_vs_baseline.unwrap();
    assert!((x - 54_100_000.0 / 89_050_000.0).abs() < 1e-9, "{x}");

    let s = render_summary(&r, 400);
    assert!(
        s.contains("dataload with 1 client (SQL script: compared on load time) on lab1:"),
        "{s}"
    );
    assert!(
        s.contains("`zfs-on`: drop table if exists da… 1180 ms; create table dataload (… 3775 ms; with data_generator_num… 27041 ms; total 32.00 s; 51.6 MiB on disk (ZFS referenced), 81.1 MiB apparent"),
        "{s}"
    );
    assert!(
        s.contains("compressratio 1.93x, pg_database_size 84.9 MiB, 0.61x the baseline on disk"),
        "{s}"
    );
    assert!(!s.contains("1.00x the baseline"), "{s}");
    // The answer, said once: inconclusive, never "no winner", and no
    // second ranking in other words.
    assert!(
        s.contains("`zfs-on` against `zfs-off` is inconclusive"),
        "{s}"
    );
    assert!(s.contains(&format!("about {more} repeats per arm")), "{s}");
    assert!(!s.to_lowercase().contains("no winner"), "{s}");
    assert!(!s.contains("times faster"), "{s}");
    assert!(!s.contains("not significant"), "{s}");
    assert!(!s.contains("the others against it"), "{s}");
    assert!(!s.contains(" tps"), "{s}");

    let md = render_markdown_report(&r);
    assert!(
        md.contains("SQL script (a data load, timed per statement by psql)"),
        "{md}"
    );
    let heading = md.find("## dataload — 1 client").unwrap();
    let statements = md
        .find("| host | filesystem | 1. drop table if exists dataload (ms) |")
        .unwrap();
    let main = md
        .find("| host | filesystem | type | n | median load s |")
        .unwrap();
    assert!(heading < statements && statements < main, "{md}");
    assert!(md.contains("| lab1 | zfs-on | 1180.0 ± 14982.3 |"), "{md}");
    assert!(md.contains("| on disk | on disk vs baseline | apparent | ZFS used | ZFS logicalused | compressratio | pg_database_size |"), "{md}");
    assert!(!md.contains("median tps"), "{md}");

    let html = render_html(&r, &cells);
    assert!(
        html.contains("<th>1. drop table if exists dataload (ms)</th>"),
        "{html}"
    );
    assert!(html.contains("<th>median load s</th>"));

    let v: serde_json::Value = serde_json::from_str(&render_json(&r)).unwrap();
    let jt = &v["tables"][0];
    assert_eq!(jt["metric"], "load_time");
    let row = &jt["hosts"][0]["rows"][1];
    assert_eq!(row["stats"]["statements"][2]["ms"]["n"], 2);
    assert_eq!(row["stats"]["load_s_values"].as_array().unwrap().len(), 2);
    assert_eq!(row["stats"]["pg_database_bytes"], 89_000_000.0);
    assert!(row["on_disk_vs_baseline"].as_f64().unwrap() < 0.61);
}

#[test]
fn a_small_p_is_said_once_and_plainly() {
    assert_eq!(p_text(0.0004), "p < 0.001");
    assert_eq!(p_text(0.0123), "p = 0.012");
    let mut cells = Vec::new();
    for (fs, base) in [("ext4", 1000.0), ("xfs", 700.0)] {
        for i in 1..=3 {
            cells.push(cell(&format!("{fs}{i}"), fs, 4, i, done(base + i as f64)));
        }
    }
    let s = render_summary(&report(&cells), 100);
    let words = s.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(words.contains("adjusted p < 0.001)"), "{s}");
    assert!(!s.contains("p = <"), "{s}");
}
