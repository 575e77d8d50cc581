//! Time to build and render a report of 10 000 generated cells (issue 5:
//! under a second).
//!
//! Run (never a release build on the shared machine):
//!   cargo bench -p fsmatrix --bench report --profile dev
//! FSMX_BENCH_CELLS (default 10000) sets the number of cells and
//! FSMX_BENCH_HOSTS (default 4) the hosts: hosts ×
//! 5 variants × 2 workloads × 5 client counts × repeats (+1 warm-up each),
//! each with 60 one-second progress samples.
use std::time::Instant;

use fsmatrix::results::model::*;
use fsmatrix::results::report::{
    build_report, render_csv, render_json, render_markdown_report, ReportOptions, Source,
};

fn main() {
    let want: usize = std::env::var("FSMX_BENCH_CELLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let n_hosts: usize = std::env::var("FSMX_BENCH_HOSTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4);
    let host_names: Vec<String> = (1..=n_hosts).map(|i| format!("lab{i}")).collect();
    let hosts: Vec<&str> = host_names.iter().map(String::as_str).collect();
    let fss = ["ext4", "xfs", "btrfs", "zfs-lz4", "zfs-off"];
    let workloads = ["tpcb", "select-only"];
    let clients = [1u32, 4, 16, 32, 64];
    let groups = hosts.len() * fss.len() * workloads.len() * clients.len();
    let per_group = want.div_ceil(groups).max(2);
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut noise = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed >> 11) as f64 / (1u64 << 53) as f64 - 0.5
    };
    let mut cells = Vec::with_capacity(groups * per_group);
    'outer: for &h in &hosts {
        for (fi, fs) in fss.iter().enumerate() {
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
                        cells.push(CellResult {
                            schema: RESULT_SCHEMA,
                            cell_id: format!("{h}-{fs}-{w}-{c}-{r}"),
                            params: CellParams {
                                host: h.into(),
                                filesystem: fs.to_string(),
                                fs_type: fs.split('-').next().unwrap_or(fs).into(),
                                workload: w.into(),
                                clients: c,
                                jobs: c,
                                repeat: r,
                                warmup: r == 0,
                            },
                            status: CellStatus::Done {
                                run: RunMeasures {
                                    tps,
                                    tps_including_connect: None,
                                    latency_avg_ms: Some(1000.0 * c as f64 / tps),
                                    latency_stddev_ms: None,
                                    transactions: (tps * 60.0) as u64,
                                    failed_transactions: Some(0),
                                    duration_s: 60.0,
                                    progress,
                                },
                            },
                            started: None,
                            ended: None,
                            sizes: Some(Sizes {
                                du_on_disk_bytes: Some(160 << 20),
                                du_apparent_bytes: Some(158 << 20),
                                ..Sizes::default()
                            }),
                            init: None,
                            fs_settings: None,
                        });
                    }
                }
            }
        }
    }
    let opts = ReportOptions {
        stats: fsmatrix::results::stats::StatsOptions {
            trim_start_s: 5.0,
            trim_end_s: 2.0,
            ..Default::default()
        },
        ..ReportOptions::default()
    };
    let t0 = Instant::now();
    let report = match build_report(
        &[Source {
            name: "bench",
            cells: &cells,
        }],
        &opts,
    ) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("failed to {e}");
            std::process::exit(1);
        }
    };
    let t_build = t0.elapsed();
    let t1 = Instant::now();
    let md = render_markdown_report(&report);
    let t_md = t1.elapsed();
    let t2 = Instant::now();
    let csv = render_csv(&report);
    let t_csv = t2.elapsed();
    let t3 = Instant::now();
    let json = render_json(&report);
    let t_json = t3.elapsed();
    // One `fsmatrix report` builds once and renders one format.
    let total = t_build + t_md.max(t_csv).max(t_json);
    println!(
        "report of {} cells ({} groups): build {:.3} s, md {:.3} s ({} B), csv {:.3} s ({} B), json {:.3} s ({} B); build + slowest format {:.3} s ({})",
        cells.len(),
        report.tables.iter().map(|t| t.hosts.iter().map(|h| h.rows.len()).sum::<usize>()).sum::<usize>(),
        t_build.as_secs_f64(),
        t_md.as_secs_f64(),
        md.len(),
        t_csv.as_secs_f64(),
        csv.len(),
        t_json.as_secs_f64(),
        json.len(),
        total.as_secs_f64(),
        if total.as_secs_f64() < 1.0 { "under a second" } else { "OVER a second" }
    );
}
