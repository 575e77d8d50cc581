//! The report's checks of a row against itself: drift and a
//! first-run outlier over the counted runs, du's compression ratio against
//! ZFS's, said in words in the Markdown, JSON and HTML reports and the run
//! summary; and timelines of many runs drawn as a median with a min–max band.
use fsmatrix::model::*;
use fsmatrix::results::report::html::render_html;
use fsmatrix::results::report::json::render_json;
use fsmatrix::results::report::markdown::render_markdown_report;
use fsmatrix::results::report::summary::render_summary;
use fsmatrix::results::report::{build_report, Report, ReportOptions, Source};

use crate::bundle_common::{cell, done};

/// Counted runs of one group, repeats 1.., in run order.
fn group(fs: &str, workload: &str, clients: u32, tps: &[f64]) -> Vec<CellResult> {
    tps.iter()
        .enumerate()
        .map(|(i, t)| {
            let repeat = i as u32 + 1;
            let mut c = cell(
                &format!("{fs}-{workload}-{clients}-{repeat}"),
                fs,
                clients,
                repeat,
                done(*t),
            );
            c.params.workload = workload.into();
            c.sizes = None;
            c
        })
        .collect()
}

fn report(cells: &[CellResult]) -> Report {
    build_report(&[Source { name: "b", cells }], &ReportOptions::default()).unwrap()
}

/// The JSON row of `fs` in the table of (`workload`, `clients`).
fn json_row(r: &Report, fs: &str, workload: &str, clients: u32) -> serde_json::Value {
    let v: serde_json::Value = serde_json::from_str(&render_json(r)).unwrap();
    v["tables"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["workload"] == workload && t["clients"] == clients)
        .flat_map(|t| t["hosts"][0]["rows"].as_array().unwrap().clone())
        .find(|row| row["stats"]["key"]["filesystem"] == fs)
        .unwrap_or_else(|| panic!("no row {fs} {workload} c={clients}"))
}

/// The Markdown table line of `fs` (first match).
fn md_line<'a>(md: &'a str, fs: &str) -> &'a str {
    md.lines()
        .find(|l| l.starts_with(&format!("| lab1 | {fs} |")))
        .unwrap_or_else(|| panic!("no line for {fs}: {md}"))
}

#[test]
fn a_drifting_group_is_said_in_markdown_json_html_and_the_summary() {
    // ext4 falls steadily (−7.1 % fitted over 6 runs); xfs is noisy but flat
    // (slope −0.14 tps per run; its first run 0.67 MADs from the others).
    let mut cells = group(
        "ext4",
        "tpcb",
        4,
        &[1000.0, 985.0, 972.0, 960.0, 944.0, 931.0],
    );
    cells.extend(group(
        "xfs",
        "tpcb",
        4,
        &[1000.0, 1040.0, 970.0, 1030.0, 985.0, 1020.0],
    ));
    let r = report(&cells);
    assert_eq!(r.warnings.len(), 1, "{:#?}", r.warnings);
    let w = &r.warnings[0];
    assert!(
        w.starts_with("lab1 ext4 tpcb c=4: tps fell 7.1% over 6 runs (trend p < 0.001): drift"),
        "{w}"
    );
    assert!(r.notes.iter().any(|n| n.starts_with("Order effects")));

    let md = render_markdown_report(&r);
    assert!(md.contains(&format!("- ⚠ {w}")), "{md}");
    assert!(md_line(&md, "ext4").contains("⚠ drift"), "{md}");
    assert!(!md_line(&md, "xfs").contains('⚠'), "{md}");

    let ext4 = json_row(&r, "ext4", "tpcb", 4);
    assert_eq!(ext4["drift"]["n"], 6);
    assert_eq!(ext4["drift"]["trend"]["drift"], true);
    assert!(ext4["drift"]["trend"]["p"].as_f64().unwrap() < 0.001);
    assert_eq!(ext4["drift"]["first_run"]["outlier"], false);
    let xfs = json_row(&r, "xfs", "tpcb", 4);
    assert_eq!(xfs["drift"]["trend"]["drift"], false);
    assert!(xfs["drift"]["trend"]["p"].as_f64().unwrap() > 0.5);
    assert_eq!(xfs["drift"]["first_run"]["outlier"], false);

    let html = render_html(&r, &cells);
    assert!(html.contains("<ul class=\"warnings\">"), "{html}");
    assert!(html.contains("<li>⚠ lab1 ext4 tpcb c=4: tps fell 7.1% over 6 runs"));
    assert_eq!(html.matches("<tr class=\"warn\">").count(), 1);

    let summary = render_summary(&r, 100);
    assert!(
        summary.contains("warning (see the full report): `ext4` tps fell 7.1% over its runs"),
        "{summary}"
    );
}

/// Start times for `cells` in the order given, a minute apart.
fn started_in_order(cells: &mut [CellResult]) {
    for (i, c) in cells.iter_mut().enumerate() {
        c.started = Some(format!("2026-12-01T10:{:02}:00Z", i));
    }
}

#[test]
fn drift_advice_knows_whether_the_variants_alternated() {
    let ext4 = [1000.0, 985.0, 972.0, 960.0, 944.0, 931.0];
    let xfs = [1000.0, 1040.0, 970.0, 1030.0, 985.0, 1020.0];
    // Sequential: all of ext4's runs, then all of xfs's.
    let mut seq = group("ext4", "tpcb", 4, &ext4);
    seq.extend(group("xfs", "tpcb", 4, &xfs));
    started_in_order(&mut seq);
    let r = report(&seq);
    assert_eq!(r.warnings.len(), 1, "{:#?}", r.warnings);
    assert!(
        r.warnings[0]
            .contains("the variants ran one after the other, so set `order = \"interleaved\"`"),
        "{}",
        r.warnings[0]
    );
    assert!(json_row(&r, "ext4", "tpcb", 4).get("alternated").is_none());
    // Interleaved: ext4, xfs, ext4, xfs … (the same values, other times).
    let (e, x) = (
        group("ext4", "tpcb", 4, &ext4),
        group("xfs", "tpcb", 4, &xfs),
    );
    let mut alt: Vec<CellResult> = e.into_iter().zip(x).flat_map(|(a, b)| [a, b]).collect();
    started_in_order(&mut alt);
    let r = report(&alt);
    assert_eq!(r.warnings.len(), 1, "{:#?}", r.warnings);
    let w = &r.warnings[0];
    assert!(
        w.starts_with("lab1 ext4 tpcb c=4: tps fell 7.1% over 6 runs"),
        "{w}"
    );
    assert!(
        w.contains("the variants' runs alternated on this host"),
        "{w}"
    );
    assert!(!w.contains("order = "), "{w}");
    assert_eq!(json_row(&r, "ext4", "tpcb", 4)["alternated"], true);
    // Pooled with a sequential bundle of the same host (other start times:
    // the same cell started at the same time would be one run): not every
    // run alternated, so the advice to alternate stands.
    let mut seq2 = seq.clone();
    for c in &mut seq2 {
        c.started = c
            .started
            .as_ref()
            .map(|s| s.replace("2026-12-01", "2026-12-02"));
    }
    let r = build_report(
        &[
            Source {
                name: "a",
                cells: &alt,
            },
            Source {
                name: "s",
                cells: &seq2,
            },
        ],
        &ReportOptions::default(),
    )
    .unwrap();
    assert!(
        r.warnings.iter().all(|w| !w.contains("runs alternated")),
        "{:#?}",
        r.warnings
    );
}

#[test]
fn a_first_run_outlier_is_said_with_what_to_do() {
    // Others 1040 1035 1050 1042: median 1041, MAD 3.5; the first run is
    // 229 tps (22 %) below, modified z = −44.
    let tps = [812.0, 1040.0, 1035.0, 1050.0, 1042.0];
    let cells = group("zfs", "select-only", 1, &tps);
    let r = report(&cells);
    assert_eq!(r.warnings.len(), 1, "{:#?}", r.warnings);
    assert!(r.warnings[0].starts_with(
        "lab1 zfs select-only c=1: the first counted run is an outlier (812 tps against a median of 1041 tps for the other 4)"
    ));
    assert!(r.warnings[0].ends_with("add `warmup = 1` to the workload."));
    let md = render_markdown_report(&r);
    assert!(md_line(&md, "zfs").contains("⚠ first run"), "{md}");
    let row = json_row(&r, "zfs", "select-only", 1);
    assert_eq!(row["drift"]["first_run"]["outlier"], true);
    assert_eq!(row["drift"]["first_run"]["median_of_others"], 1041.0);
    // The trend is fitted to the 4 others, and is flat.
    assert_eq!(row["drift"]["trend"]["first_run_excluded"], true);
    assert_eq!(row["drift"]["trend"]["drift"], false);

    // With a warm-up already: raise it.
    let mut with_warmup = cells.clone();
    let mut w = cell("zfs-w", "zfs", 1, 1, done(500.0));
    w.params.workload = "select-only".into();
    w.params.warmup = true;
    with_warmup.insert(0, w);
    let r = report(&with_warmup);
    assert!(
        r.warnings[0].ends_with("raise `warmup` (now 1) for the workload."),
        "{}",
        r.warnings[0]
    );
}

#[test]
fn fewer_than_four_runs_are_not_tested() {
    // A steep fall over 3 runs: one degree of freedom, not tested.
    let r = report(&group("ext4", "tpcb", 4, &[1000.0, 900.0, 800.0]));
    assert!(r.warnings.is_empty(), "{:#?}", r.warnings);
    assert!(json_row(&r, "ext4", "tpcb", 4)["drift"].is_null());
    assert!(!render_markdown_report(&r).contains('⚠'));
}

/// Sizes measured on lab1 (zfs-fuse 0.7, pool version 23, ashift 12,
/// recordsize=8k, PostgreSQL 15), after a transaction group settled, as
/// `sizes` reads them.  By hand, compression=on, `pgbench -i -s 10`: du of
/// the data directory 130131968 on disk / 314400988 apparent (2.42x), the
/// dataset's referenced 159318016, compressratio 4.48x.  An earlier check
/// compared 2.42x with 4.48x and flagged every ZFS row; but
/// compressratio is the ratio before allocation (an 8k record compressed to
/// 1k still takes a 4k sector: 64 MiB of text took 32.5 MiB on disk), so it
/// is not compared with du any more.  du on disk against referenced (both
/// allocated bytes of the same data): 18 % apart.  A sweep's zfs-gzip
/// (`pgbench -i -s 5`): du 59534336 against referenced 87371776, 32 % but
/// 26.5 MiB apart: within the 64 MiB slack.  The same hand-made dataset
/// with 96 MiB of other files beside the data directory: referenced
/// 236208128 against du 141746176, 40 % and 90 MiB apart: flagged.
#[test]
fn zfs_sizes_that_disagree_are_flagged_and_agreeing_ones_are_not() {
    let sized =
        |fs: &str, on_disk: u64, apparent: u64, referenced: Option<u64>, ratio: Option<f64>| {
            let mut cells = group(fs, "tpcb", 1, &[400.0, 410.0]);
            for c in &mut cells {
                c.sizes = Some(Sizes {
                    du_on_disk_bytes: Some(on_disk),
                    du_apparent_bytes: Some(apparent),
                    zfs_referenced_bytes: referenced,
                    zfs_used_bytes: referenced.map(|r| r + 466_944),
                    zfs_compressratio: ratio,
                    pg_database_bytes: Some(164_625_767),
                    flush_method: ratio.map(|_| "txg-wait".into()),
                    ..Sizes::default()
                });
            }
            cells
        };
    let mut cells = sized(
        "zfs-on",
        130_131_968,
        314_400_988,
        Some(159_318_016),
        Some(4.48),
    );
    cells.extend(sized(
        "zfs-other-files",
        141_746_176,
        314_460_929,
        Some(236_208_128),
        Some(3.86),
    ));
    // ext4: no ZFS accounting, nothing to check against.
    cells.extend(sized(
        "zfs-gzip",
        59_534_336,
        193_306_691,
        Some(87_371_776),
        Some(7.27),
    ));
    cells.extend(sized("ext4", 160 << 20, 158 << 20, None, None));
    let r = report(&cells);
    assert_eq!(r.warnings.len(), 1, "{:#?}", r.warnings);
    assert!(
        r.warnings[0].starts_with(
            "lab1 zfs-other-files tpcb c=1: sizes disagree: du says 135.2 MiB on disk for the data directory, ZFS says 225.3 MiB referenced by the dataset, 40% apart (tolerance 25% or 64 MiB)"
        ),
        "{}",
        r.warnings[0]
    );
    let md = render_markdown_report(&r);
    assert!(
        md_line(&md, "zfs-other-files").contains("| ⚠ 225.3 MiB (ZFS referenced) ≠ du 135.2 MiB |"),
        "{md}"
    );
    // The consistent row shows its numbers plainly, compressratio included.
    let on = md_line(&md, "zfs-on");
    assert!(
        on.contains("| 151.9 MiB (ZFS referenced) | 299.8 MiB | 4.48x |") && !on.contains('⚠'),
        "{md}"
    );
    assert!(md.contains("- ⚠ lab1 zfs-other-files tpcb c=1: sizes disagree"));
    let bad = json_row(&r, "zfs-other-files", "tpcb", 1);
    assert_eq!(bad["sizes_check"]["agree"], false);
    assert_eq!(bad["sizes_check"]["tolerance"], 0.25);
    let good = json_row(&r, "zfs-on", "tpcb", 1);
    assert_eq!(good["sizes_check"]["agree"], true);
    let d = good["sizes_check"]["difference"].as_f64().unwrap();
    assert!(
        (d - (1.0 - 130_131_968.0 / 159_318_016.0)).abs() < 1e-12,
        "{d}"
    );
    let gzip = json_row(&r, "zfs-gzip", "tpcb", 1);
    assert_eq!(gzip["sizes_check"]["agree"], true, "{gzip}");
    assert!(gzip["sizes_check"]["difference"].as_f64().unwrap() > 0.3);
    assert_eq!(gzip["sizes_check"]["slack_bytes"], 67108864.0);
    assert!(json_row(&r, "ext4", "tpcb", 1)["sizes_check"].is_null());
    let html = render_html(&r, &cells);
    assert!(html.contains("<li>⚠ lab1 zfs-other-files tpcb c=1: sizes disagree"));
    let summary = render_summary(&r, 100);
    assert!(
        summary.contains("`zfs-other-files` sizes disagree"),
        "{summary}"
    );
    assert!(!summary.contains("`zfs-on` sizes disagree"), "{summary}");
}

#[test]
fn timelines_of_many_runs_are_a_median_and_a_band() {
    // 8 runs of zfs (c=4) and 3 of ext4 (c=1), 10 per-second samples each.
    let with_progress = |mut c: CellResult, k: f64| {
        if let CellStatus::Done { run } = &mut c.status {
            run.progress = (1..=10)
                .map(|t| ProgressSample {
                    t_s: f64::from(t),
                    tps: run.tps * (1.0 + k * f64::from(t % 3)),
                    latency_avg_ms: None,
                    latency_stddev_ms: None,
                    failed: None,
                })
                .collect();
        }
        c
    };
    let tps8 = [500.0, 505.0, 498.0, 502.0, 501.0, 499.0, 503.0, 500.0];
    let mut cells: Vec<CellResult> = group("zfs", "tpcb", 4, &tps8)
        .into_iter()
        .enumerate()
        .map(|(i, c)| with_progress(c, 0.01 * i as f64))
        .collect();
    cells.extend(
        group("ext4", "tpcb", 1, &[300.0, 310.0, 305.0])
            .into_iter()
            .map(|c| with_progress(c, 0.02)),
    );
    let html = render_html(&report(&cells), &cells);
    let plots: Vec<&str> = html
        .split("<svg class=\"fsmx-plot\" data-plot=\"")
        .filter(|s| s.starts_with("tps-timeline"))
        .map(|s| &s[..s.find("</svg>").unwrap()])
        .collect();
    assert_eq!(plots.len(), 2);
    let one = plots.iter().find(|p| p.contains("1 client:")).unwrap();
    let four = plots.iter().find(|p| p.contains("4 clients:")).unwrap();
    // 8 runs: one band (a filled polygon) and one median line, labelled so.
    assert_eq!(four.matches("<polygon").count(), 1, "{four}");
    assert!(
        four.contains("zfs (median of 8 runs, min–max band)"),
        "{four}"
    );
    assert!(!four.contains("(8 runs)"));
    // 3 runs: every run its own line, no band.
    assert_eq!(one.matches("<polygon").count(), 0, "{one}");
    assert!(one.contains("ext4 (3 runs)"), "{one}");
    assert!(!one.contains("median of"));
    // Data lines are 2 px wide (axes and ticks 1 px): one per run plus the
    // legend's sample; with the band, the median and its legend sample.
    let lines = |svg: &str| svg.matches("stroke-width=\"2\" points=").count();
    assert_eq!(lines(one), 3 + 1, "{one}");
    assert_eq!(lines(four), 1 + 1, "{four}");
}
