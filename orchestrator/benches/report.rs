//! Time to build and render a report of 10 000 generated cells (the goal:
//! under a second), every format including HTML.
//!
//! Run, optimised as users run the tool (the `perf` profile: the dev
//! profile at opt-level 2, its own target folder, not built by CI):
//!   cargo bench -p fsmatrix --bench report --profile perf
//! `--profile dev` measures the unoptimised debug build instead: an upper
//! bound, several times slower.
//! Two shapes side by side: 4 hosts (200 groups of ~50 repeats) and 50 hosts
//! (2 500 groups of ~4 repeats).  Each cell is
//! hosts × 5 variants × 2 workloads × 5 client counts × repeats (+1 warm-up
//! each), with 60 one-second progress samples, sizes and `pgbench -i` phases.
//! FSMX_BENCH_CELLS (default 10000) sets the number of cells,
//! FSMX_BENCH_HOSTS (e.g. 50) runs that one shape only, FSMX_BENCH_RUNS
//! (default 3) how often each shape is timed (the median is printed), and
//! FSMX_BENCH_OUT=DIR writes each shape's outputs there (to compare two
//! builds byte for byte).
use std::time::{Duration, Instant};

use fsmatrix::model::*;
use fsmatrix::results::report::csv::render_csv;
use fsmatrix::results::report::html::render_html;
use fsmatrix::results::report::json::render_json;
use fsmatrix::results::report::markdown::render_markdown_report;
use fsmatrix::results::report::{build_report, Report, ReportOptions, Source};

/// Which build runs: the target folder of this binary (`target/<profile>/deps`).
fn build_kind() -> String {
    let profile = std::env::current_exe()
        .ok()
        .and_then(|p| {
            Some(
                p.parent()?
                    .parent()?
                    .file_name()?
                    .to_string_lossy()
                    .into_owned(),
            )
        })
        .unwrap_or_else(|| "unknown".into());
    match profile.as_str() {
        "debug" => "dev-profile (our code unoptimised: an upper bound)".into(),
        "perf" | "release" => format!("{profile}-profile (optimised)"),
        other => format!("{other}-profile"),
    }
}

fn env_usize(name: &str) -> Option<usize> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

fn generate(want: usize, n_hosts: usize) -> Vec<CellResult> {
    let host_names: Vec<String> = (1..=n_hosts).map(|i| format!("lab{i}")).collect();
    let fss = ["ext4", "xfs", "btrfs", "zfs-lz4", "zfs-off"];
    let workloads = ["tpcb", "select-only"];
    let clients = [1u32, 4, 16, 32, 64];
    let groups = host_names.len() * fss.len() * workloads.len() * clients.len();
    let per_group = want.div_ceil(groups).max(2);
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut noise = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed >> 11) as f64 / (1u64 << 53) as f64 - 0.5
    };
    let mut cells = Vec::with_capacity(groups * per_group);
    'outer: for h in &host_names {
        for (fi, fs) in fss.iter().enumerate() {
            let zfs = fs.starts_with("zfs");
            for w in workloads {
                for c in clients {
                    for r in 0..per_group as u32 {
                        if cells.len() == want {
                            break 'outer;
                        }
                        let base = 300.0 * (1.0 + fi as f64 * 0.05) * (c as f64).sqrt();
                        let tps = base * (1.0 + 0.06 * noise());
                        let progress = (1..=60)
                            .map(|t| ProgressSample {
                                t_s: t as f64,
                                tps: tps * (1.0 + 0.1 * noise()),
                                latency_avg_ms: Some(1000.0 * c as f64 / tps),
                                latency_stddev_ms: None,
                                failed: Some(0),
                            })
                            .collect();
                        let phases = [("drop tables", 0.01), ("create tables", 0.02)]
                            .into_iter()
                            .chain([
                                ("client-side generate", 2.5 * (1.0 + 0.05 * noise())),
                                ("vacuum", 0.4 * (1.0 + 0.05 * noise())),
                                ("primary keys", 0.6 * (1.0 + 0.05 * noise())),
                            ])
                            .map(|(name, seconds)| Phase {
                                name: name.into(),
                                seconds,
                            })
                            .collect::<Vec<_>>();
                        cells.push(CellResult {
                            schema: RESULT_SCHEMA,
                            cell_id: format!("{h}-{fs}-{w}-{c}-{r}"),
                            params: CellParams {
                                host: h.clone(),
                                filesystem: fs.to_string(),
                                fs_type: fs.split('-').next().unwrap_or(fs).into(),
                                workload: w.into(),
                                clients: c,
                                jobs: c,
                                repeat: r,
                                warmup: r == 0,
                                rate: None,
                                sql_script: false,
                            },
                            status: CellStatus::Done {
                                run: RunMeasures {
                                    tps,
                                    tps_including_connect: None,
                                    latency_avg_ms: Some(1000.0 * c as f64 / tps),
                                    latency_stddev_ms: None,
                                    transactions: (tps * 60.0) as u64,
                                    failed_transactions: Some(0),
                                    schedule_lag_avg_ms: None,
                                    schedule_lag_max_ms: None,
                                    skipped_transactions: None,
                                    late_transactions: None,
                                    duration_s: 60.0,
                                    progress,
                                    statements: Vec::new(),
                                    latency_percentiles: None,
                                    statement_latencies: Vec::new(),
                                },
                            },
                            started: None,
                            ended: None,
                            sizes: Some(Sizes {
                                du_on_disk_bytes: Some(if zfs { 62 << 20 } else { 160 << 20 }),
                                du_apparent_bytes: Some(158 << 20),
                                zfs_compressratio: zfs.then_some(2.55),
                                ..Sizes::default()
                            }),
                            init: Some(InitTimings {
                                total_s: Some(phases.iter().map(|p| p.seconds).sum()),
                                phases,
                            }),
                            fs_settings: None,
                        });
                    }
                }
            }
        }
    }
    cells
}

/// Seconds of each phase: build, md, csv, json, html.
const PHASES: [&str; 5] = ["build", "md", "csv", "json", "html"];

struct Outputs {
    report: Report,
    texts: [String; 4],
}

fn run_once(cells: &[CellResult], opts: &ReportOptions) -> ([Duration; 5], Outputs) {
    let t = Instant::now();
    let report = match build_report(
        &[Source {
            name: "bench",
            cells,
        }],
        opts,
    ) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("failed to {e}");
            std::process::exit(1);
        }
    };
    let build = t.elapsed();
    let t = Instant::now();
    let md = render_markdown_report(&report);
    let t_md = t.elapsed();
    let t = Instant::now();
    let csv = render_csv(&report);
    let t_csv = t.elapsed();
    let t = Instant::now();
    let json = render_json(&report);
    let t_json = t.elapsed();
    let t = Instant::now();
    let html = render_html(&report, cells);
    let t_html = t.elapsed();
    (
        [build, t_md, t_csv, t_json, t_html],
        Outputs {
            report,
            texts: [md, csv, json, html],
        },
    )
}

fn main() {
    let want = env_usize("FSMX_BENCH_CELLS").unwrap_or(10_000);
    let shapes = match env_usize("FSMX_BENCH_HOSTS") {
        Some(h) => vec![h],
        None => vec![4, 50],
    };
    let runs = env_usize("FSMX_BENCH_RUNS").unwrap_or(3).max(1);
    let out_dir = std::env::var_os("FSMX_BENCH_OUT").map(std::path::PathBuf::from);
    let opts = ReportOptions {
        stats: fsmatrix::results::analysis::stats::StatsOptions {
            trim_start_s: 5.0,
            trim_end_s: 2.0,
            ..Default::default()
        },
        ..ReportOptions::default()
    };
    println!(
        "report bench, {} build, median of {runs} run{} per shape (seconds)",
        build_kind(),
        if runs == 1 { "" } else { "s" }
    );
    println!(
        "{:>6} {:>6} {:>6} | {:>6} {:>6} {:>6} {:>6} {:>6} | {:>6} {:>9} | sizes md/csv/json/html",
        "cells", "hosts", "groups", "build", "md", "csv", "json", "html", "total", "1 format"
    );
    let mut worst = 0.0f64;
    for n_hosts in shapes {
        let cells = generate(want, n_hosts);
        let mut times: Vec<[Duration; 5]> = Vec::with_capacity(runs);
        let mut last = None;
        for _ in 0..runs {
            let (t, o) = run_once(&cells, &opts);
            times.push(t);
            last = Some(o);
        }
        let Some(o) = last else { continue };
        let med: Vec<f64> = (0..PHASES.len())
            .map(|i| {
                let mut v: Vec<f64> = times.iter().map(|t| t[i].as_secs_f64()).collect();
                v.sort_by(f64::total_cmp);
                v[v.len() / 2]
            })
            .collect();
        // Every format after one build; and what one `fsmatrix report`
        // (one build, one format) costs at worst.
        let total: f64 = med.iter().sum();
        let one = med[0] + med[1..].iter().copied().fold(0.0, f64::max);
        worst = worst.max(total);
        let groups: usize = o
            .report
            .tables
            .iter()
            .map(|t| t.hosts.iter().map(|h| h.rows.len()).sum::<usize>())
            .sum();
        println!(
            "{:>6} {:>6} {:>6} | {:>6.3} {:>6.3} {:>6.3} {:>6.3} {:>6.3} | {:>6.3} {:>9.3} | {} / {} / {} / {} B",
            cells.len(),
            n_hosts,
            groups,
            med[0],
            med[1],
            med[2],
            med[3],
            med[4],
            total,
            one,
            o.texts[0].len(),
            o.texts[1].len(),
            o.texts[2].len(),
            o.texts[3].len(),
        );
        if let Some(dir) = &out_dir {
            std::fs::create_dir_all(dir).expect("create FSMX_BENCH_OUT");
            for (ext, text) in ["md", "csv", "json", "html"].iter().zip(&o.texts) {
                let p = dir.join(format!("report-{}-{n_hosts}h.{ext}", cells.len()));
                std::fs::write(&p, text).expect("write FSMX_BENCH_OUT file");
            }
        }
    }
    println!(
        "total = build + md + csv + json + html; 1 format = build + the slowest format (one `fsmatrix report`)"
    );
    println!(
        "slowest shape, all formats: {worst:.3} s ({})",
        if worst < 1.0 {
            "under a second"
        } else {
            "OVER a second"
        }
    );
}
