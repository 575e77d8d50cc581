//! The HTML report rendered by a real browser: Debian's headless Chromium
//! loads the file offline (`--dump-dom`), the five plot kinds must be SVG
//! elements in its DOM, and a screenshot is saved as
//! `target/report-screenshot.png` (the CI artifact, with the HTML as
//! `target/report-sample.html`).  tests/run.sh installs the
//! `chromium` package; without it this test says so and is skipped (under
//! tests/run.sh and CI, `FSMATRIX_TEST_REQUIRE_ALL=1`, it fails instead).
use std::path::{Path, PathBuf};
use std::process::Command;

use fsmatrix::model::*;
use fsmatrix::results::report::html::{render_html, PLOT_KINDS};
use fsmatrix::results::report::{build_report, ReportOptions, Source};

const CHROMIUM: &str = "/usr/bin/chromium";

/// 2 hosts × 3 variants × 2 workloads × 3 client counts × (1 warm-up + 3
/// repeats), with progress samples, sizes and init phases; one failed cell.
fn generated() -> Vec<CellResult> {
    let mut out = Vec::new();
    let variants = [
        ("ext4", "ext4", 1.0),
        ("xfs", "xfs", 0.93),
        ("zfs-lz4", "zfs", 0.71),
    ];
    for host in ["deb1", "bsd1"] {
        for (vi, (fs, fs_type, speed)) in variants.iter().enumerate() {
            if host == "bsd1" && *fs == "xfs" {
                continue;
            }
            for (wi, workload) in ["tpcb", "select-only"].iter().enumerate() {
                let base = if wi == 0 { 400.0 } else { 5200.0 };
                for clients in [1u32, 4, 16] {
                    for repeat in 0..4u32 {
                        let scale = (f64::from(clients)).sqrt();
                        let jitter =
                            1.0 + 0.02 * f64::from((repeat * 7 + clients + vi as u32) % 5) - 0.04;
                        let tps =
                            base * speed * scale * jitter * if repeat == 0 { 0.9 } else { 1.0 };
                        let progress = (1..=30)
                            .map(|t| ProgressSample {
                                t_s: f64::from(t),
                                tps: tps * (1.0 + 0.05 * ((f64::from(t) + vi as f64).sin())),
                                latency_avg_ms: Some(1000.0 * f64::from(clients) / tps),
                                latency_stddev_ms: None,
                                failed: Some(0),
                            })
                            .collect();
                        let failed = host == "deb1"
                            && *fs == "xfs"
                            && clients == 16
                            && repeat == 3
                            && wi == 0;
                        let status = if failed {
                            CellStatus::Failed {
                                step: "run".into(),
                                exit_status: Some(2),
                                stderr_tail: "pgbench: error: connection <lost> & \"closed\""
                                    .into(),
                            }
                        } else {
                            CellStatus::Done {
                                run: RunMeasures {
                                    tps,
                                    tps_including_connect: None,
                                    latency_avg_ms: Some(1000.0 * f64::from(clients) / tps),
                                    latency_stddev_ms: None,
                                    transactions: (tps * 30.0) as u64,
                                    failed_transactions: Some(0),
                                    schedule_lag_avg_ms: None,
                                    schedule_lag_max_ms: None,
                                    skipped_transactions: None,
                                    late_transactions: None,
                                    duration_s: 30.0,
                                    progress,
                                    statements: Vec::new(),
                                    latency_percentiles: None,
                                    statement_latencies: Vec::new(),
                                },
                            }
                        };
                        let apparent = if wi == 0 { 160u64 << 20 } else { 80 << 20 };
                        out.push(CellResult {
                            schema: RESULT_SCHEMA,
                            cell_id: format!("{host}-{fs}-{workload}-{clients}-{repeat}"),
                            params: CellParams {
                                host: host.into(),
                                filesystem: (*fs).into(),
                                fs_type: (*fs_type).into(),
                                workload: (*workload).into(),
                                clients,
                                jobs: clients,
                                repeat,
                                warmup: repeat == 0,
                                rate: None,
                                sql_script: false,
                            },
                            status,
                            started: None,
                            ended: None,
                            sizes: Some(Sizes {
                                du_apparent_bytes: Some(apparent),
                                du_on_disk_bytes: Some(if *fs_type == "zfs" {
                                    apparent * 10 / 26
                                } else {
                                    apparent + (4 << 20)
                                }),
                                zfs_compressratio: (*fs_type == "zfs").then_some(2.61),
                                ..Sizes::default()
                            }),
                            init: Some(InitTimings {
                                total_s: None,
                                phases: [
                                    ("drop tables", 0.01),
                                    ("create tables", 0.02),
                                    ("client-side generate", 3.1 / speed),
                                    ("vacuum", 1.2),
                                    ("primary keys", 0.9 / speed),
                                ]
                                .iter()
                                .map(|(n, s)| Phase {
                                    name: (*n).into(),
                                    seconds: *s,
                                })
                                .collect(),
                            }),
                            fs_settings: None,
                        });
                    }
                }
            }
        }
    }
    out
}

/// The workspace `target/` folder (CARGO_TARGET_DIR when set).
fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"),
    }
}

/// Run chromium headless, offline, bounded in time; its stdout.
fn chromium(profile: &Path, args: &[&str]) -> String {
    let mut cmd = Command::new("timeout");
    cmd.arg("120")
        .arg(CHROMIUM)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args);
    let out = cmd
        .output()
        .expect("failed to start chromium under timeout");
    assert!(
        out.status.success(),
        "chromium {args:?} exited {:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn html_report_renders_in_headless_chromium() {
    if !crate::support::skip::tool_or_skip(CHROMIUM, "chromium") {
        return;
    }
    let cells = generated();
    let report = build_report(
        &[Source {
            name: "generated",
            cells: &cells,
        }],
        &ReportOptions::default(),
    )
    .unwrap();
    let html = render_html(&report, &cells);
    // Self-contained: no script, nothing fetched.
    assert!(!html.contains("<script"), "the report holds a script");
    for bad in ["src=\"http", "href=\"http", "url(", "@import"] {
        assert!(!html.contains(bad), "the report fetches something: {bad}");
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("report.html");
    std::fs::write(&file, &html).unwrap();
    let profile = dir.path().join("profile");
    let url = format!("file://{}", file.display());

    let dom = chromium(&profile, &["--dump-dom", &url]);
    assert!(dom.contains("<h1>fsmatrix report</h1>"), "DOM: {dom:.400}");
    for kind in PLOT_KINDS {
        let n = dom
            .matches(&format!("<svg class=\"fsmx-plot\" data-plot=\"{kind}\""))
            .count();
        assert!(n > 0, "no {kind} plot in chromium's DOM");
    }
    // Per (host, workload): 2 hosts, 2 workloads.
    let count = |k: &str| dom.matches(&format!("data-plot=\"{k}\"")).count();
    assert_eq!(count("tps-vs-clients"), 4);
    assert_eq!(count("tps-bars"), 4);
    assert_eq!(count("size-on-disk"), 4);
    assert_eq!(count("init-phases"), 4);
    // Per (host, workload, clients).
    assert_eq!(count("tps-timeline"), 12);
    // One measure over every size bar (ZFS's compressratio is in the table).
    assert!(dom.contains("logical/physical "), "size labels missing");
    // The answer first, then the ratio plot, per (host, workload).
    assert_eq!(count("ratio"), 4);
    let first_plot = dom.find("<svg class=\"fsmx-plot\"").unwrap();
    assert!(dom[first_plot..].starts_with("<svg class=\"fsmx-plot\" data-plot=\"ratio\""));
    assert!(dom.find("<h2>The answer</h2>").unwrap() < first_plot);
    assert!(
        dom.contains("connection &lt;lost&gt; &amp;"),
        "failed cell not escaped"
    );
    assert!(
        !dom.contains("class=\"empty\""),
        "a plot was left out: {dom}"
    );

    let target = target_dir();
    std::fs::create_dir_all(&target).unwrap();
    let shot = target.join("report-screenshot.png");
    let _ = std::fs::remove_file(&shot);
    chromium(
        &profile,
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1200,3000",
            &url,
        ],
    );
    // The HTML itself too, next to its screenshot.
    std::fs::write(target.join("report-sample.html"), &html).unwrap();
    let png =
        std::fs::read(&shot).unwrap_or_else(|e| panic!("no screenshot at {}: {e}", shot.display()));
    assert!(png.starts_with(b"\x89PNG"), "screenshot is not a PNG");
    assert!(
        png.len() > 20_000,
        "screenshot suspiciously small: {} bytes",
        png.len()
    );
    eprintln!("screenshot: {} ({} bytes)", shot.display(), png.len());
}

#[test]
fn cli_writes_html_for_the_fixture_bundle() {
    let bundle = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/bundle-v1");
    let out = assert_cmd::Command::cargo_bin("fsmatrix")
        .unwrap()
        .args(["report", "--format", "html"])
        .arg(&bundle)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = String::from_utf8(out.stdout).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("data-plot=\"tps-bars\""), "{html:.600}");
    // One client count in the fixture: the curve is left out with a sentence.
    assert!(!html.contains("data-plot=\"tps-vs-clients\""));
    assert!(html.contains("ran one client count only"));
}

/// The summary `run` ends with: the answer once (the verdict lines), the
/// failed cells counted, within 100
/// columns; the full reports beside the bundle, never inside the bag.
#[test]
fn the_run_summary_names_the_best_and_the_full_reports_sit_beside_the_bundle() {
    use fsmatrix::results::report::summary;
    let tmp = tempfile::tempdir().unwrap();
    let bundle =
        crate::bundle_common::make_bundle(tmp.path(), fsmatrix::results::SweepStatus::Complete);
    let (r, cells) = summary::bundle_report(&bundle).unwrap();
    let text = summary::render_summary(&r, 100);
    assert!(text.lines().all(|l| l.chars().count() <= 100), "{text}");
    assert!(text.contains("on lab1:"), "{text}");
    assert!(text.contains("`ext4` "), "{text}");
    // The answer once, in the verdict words: no second ranking.
    assert!(text.contains("The answer:"), "{text}");
    assert!(text.contains("`zfs-lz4`"), "{text}");
    assert!(!text.contains("times faster"), "{text}");
    assert!(text.contains("1 cell failed or did not run"), "{text}");
    // Narrow terminals: still wrapped.
    let narrow = summary::render_summary(&r, 40);
    assert!(
        narrow
            .lines()
            .all(|l| l.chars().count() <= 40 || !l.trim().contains(' ')),
        "{narrow}"
    );
    let (md, html) = summary::write_full_reports(&bundle, &r, &cells).unwrap();
    assert_eq!(md.parent(), bundle.parent());
    assert!(std::fs::read_to_string(&md)
        .unwrap()
        .contains("| lab1 | ext4 |"));
    assert!(std::fs::read_to_string(&html).unwrap().contains("<svg"));
    // The bag is untouched: it still verifies.
    assert!(fsmatrix::results::verify(&bundle)
        .unwrap()
        .problems
        .is_empty());
}
