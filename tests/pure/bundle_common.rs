//! Shared by the bundle tests: a small sweep written through the real writer.
#![allow(dead_code)]
use std::path::{Path, PathBuf};

use fsmatrix::model::*;
use fsmatrix::results::{Bundle, SweepStatus};

pub fn cell(id: &str, fs: &str, clients: u32, repeat: u32, status: CellStatus) -> CellResult {
    CellResult {
        schema: RESULT_SCHEMA,
        cell_id: id.into(),
        params: CellParams {
            host: "lab1".into(),
            filesystem: fs.into(),
            fs_type: fs.split('-').next().unwrap_or(fs).into(),
            workload: "tpcb".into(),
            clients,
            jobs: clients,
            repeat,
            warmup: false,
            rate: None,
            sql_script: false,
        },
        status,
        started: Some("2026-12-01T10:00:00Z".into()),
        ended: Some("2026-12-01T10:00:12Z".into()),
        sizes: Some(Sizes {
            du_on_disk_bytes: Some(24 << 20),
            du_apparent_bytes: Some(23 << 20),
            df_used_bytes: Some(40 << 20),
            zfs_compressratio: fs.starts_with("zfs").then_some(2.5),
            zfs_logicalused_bytes: fs.starts_with("zfs").then_some(60 << 20),
            zfs_used_bytes: fs.starts_with("zfs").then_some(24 << 20),
            zfs_referenced_bytes: fs.starts_with("zfs").then_some(24 << 20),
            pg_database_bytes: Some(22 << 20),
            flush_method: Some(
                if fs.starts_with("zfs") {
                    "zpool-sync"
                } else {
                    "sync"
                }
                .into(),
            ),
            flush_wait_s: None,
            flush_settled: None,
        }),
        init: Some(InitTimings {
            total_s: Some(1.25),
            phases: vec![Phase {
                name: "client-side generate".into(),
                seconds: 0.8,
            }],
        }),
        fs_settings: Some(FsSettings {
            mount_options: Some("rw,noatime".into()),
            ..FsSettings::default()
        }),
    }
}

pub fn done(tps: f64) -> CellStatus {
    CellStatus::Done {
        run: RunMeasures {
            tps,
            tps_including_connect: Some(tps - 1.0),
            latency_avg_ms: Some(1000.0 / tps),
            latency_stddev_ms: Some(0.5),
            transactions: (tps * 10.0) as u64,
            failed_transactions: Some(0),
            schedule_lag_avg_ms: None,
            schedule_lag_max_ms: None,
            skipped_transactions: None,
            late_transactions: None,
            duration_s: 10.0,
            progress: vec![ProgressSample {
                t_s: 1.0,
                tps,
                latency_avg_ms: Some(1000.0 / tps),
                latency_stddev_ms: Some(0.4),
                failed: Some(0),
            }],
            statements: Vec::new(),
            latency_percentiles: None,
            statement_latencies: Vec::new(),
        },
    }
}

/// Write one cell the way the run engine will: raw outputs, result.json,
/// a results.jsonl line, then the journal's cell_done.
pub fn write_cell(b: &mut Bundle, c: &CellResult) {
    let id = &c.cell_id;
    b.write(
        &format!("cells/{id}/cell.json"),
        &serde_json::to_vec(&c.params).unwrap(),
    )
    .unwrap();
    let raw = format!(
        "pgbench (15.10)\ntps = {} (without initial connection time)\n",
        match &c.status {
            CellStatus::Done { run } => run.tps,
            _ => 0.0,
        }
    );
    b.write(
        &format!(
            "cells/{id}/run-{}-{}.out",
            c.params.clients, c.params.repeat
        ),
        raw.as_bytes(),
    )
    .unwrap();
    b.write_json(&format!("cells/{id}/result.json"), c).unwrap();
    b.append_jsonl("results.jsonl", c).unwrap();
    b.cell_done_as(id, &c.status).unwrap();
}

pub fn sample_cells() -> Vec<CellResult> {
    vec![
        cell("c01", "ext4", 1, 1, done(410.0)),
        cell("c02", "ext4", 1, 2, done(430.0)),
        cell("c03", "zfs-lz4", 1, 1, done(300.0)),
        cell("c04", "zfs-lz4", 1, 2, done(310.0)),
        cell(
            "c05",
            "xfs",
            1,
            1,
            CellStatus::Failed {
                step: "mount".into(),
                exit_status: Some(32),
                stderr_tail: "mount: wrong fs type, bad option".into(),
            },
        ),
    ]
}

/// A closed bundle under `out`.
pub fn make_bundle(out: &Path, status: SweepStatus) -> PathBuf {
    make_bundle_of(
        out,
        "quick",
        &sample_cells(),
        &[("lab1", "{\"kernel\":\"6.1\"}\n")],
        status,
    )
}

/// A closed bundle of matrix `matrix` under `out` holding `cells`, and each
/// host's `facts.json` (host name, its text).
pub fn make_bundle_of(
    out: &Path,
    matrix: &str,
    cells: &[CellResult],
    facts: &[(&str, &str)],
    status: SweepStatus,
) -> PathBuf {
    let mut b = Bundle::create(out, matrix).unwrap();
    b.write(
        "matrix.toml",
        format!("name = \"{matrix}\"\nrepeats = 2\n").as_bytes(),
    )
    .unwrap();
    let inventory: String = facts
        .iter()
        .map(|(h, _)| format!("[[host]]\nname = \"{h}\"\n"))
        .collect();
    b.write("inventory.toml", inventory.as_bytes()).unwrap();
    for (h, text) in facts {
        b.write(&format!("hosts/{h}/facts.json"), text.as_bytes())
            .unwrap();
    }
    for c in cells {
        write_cell(&mut b, c);
    }
    b.close(status).unwrap()
}
