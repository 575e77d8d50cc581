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
            btrfs_used_bytes: fs.starts_with("btrfs").then_some(34 << 20),
            btrfs_data_used_bytes: fs.starts_with("btrfs").then_some(30 << 20),
            btrfs_global_reserve_bytes: fs.starts_with("btrfs").then_some(6 << 20),
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

/// The facts a lab host records (`linux.sh facts`), with ZFS from zfs-fuse.
pub const LAB_FACTS: &str = r#"{
  "arch": "x86_64",
  "cpu_count": "2",
  "cpu_model": "AMD EPYC 7B13",
  "device.0.model": "QEMU HARDDISK",
  "device.0.path": "/dev/loop0",
  "device.0.present": "yes",
  "device.0.rotational": "1",
  "device.0.size_bytes": "4294967296",
  "distro": "Debian GNU/Linux 12 (bookworm)",
  "kernel": "6.1.0-28-amd64",
  "mem_bytes": "8589934592",
  "os": "linux",
  "postgres_version": "postgres (PostgreSQL) 15.10 (Debian 15.10-0+deb12u1)",
  "zfs_impl": "zfs-fuse",
  "zfs_version": "0.7.0-25+b1"
}
"#;

/// A resolved plan (`data/plan.json`, as the run engine writes it) for
/// [`sample_cells`]: workload tpcb (tpcb-like, scale 1, `duration_s` s per
/// run) over ext4 (noatime), zfs-lz4 (compression=lz4, recordsize=8k) and
/// xfs, with shared_buffers = 32MB.
pub fn sample_plan(duration_s: u64) -> serde_json::Value {
    let fs = |name: &str, ty: &str, mount: &[&str], props: &[(&str, &str)]| {
        serde_json::json!({
            "name": name, "type": ty, "mkfs_options": [], "mount_options": mount,
            "properties": props.iter().map(|(n, v)| serde_json::json!({"name": n, "value": v})).collect::<Vec<_>>(),
            "pool_properties": [], "postgres": [], "varied": []
        })
    };
    let cells: Vec<serde_json::Value> = sample_cells()
        .iter()
        .map(|c| {
            let p = &c.params;
            let fs = match p.filesystem.as_str() {
                "ext4" => fs("ext4", "ext4", &["noatime"], &[]),
                "zfs-lz4" => fs(
                    "zfs-lz4",
                    "zfs",
                    &[],
                    &[("compression", "lz4"), ("recordsize", "8k")],
                ),
                other => fs(other, other, &[], &[]),
            };
            serde_json::json!({
                "id": c.cell_id, "host": p.host, "os": "linux", "device": "/dev/loop0",
                "fs": fs,
                "pg_settings": [{"name": "shared_buffers", "value": "32MB"}],
                "workload": {"name": p.workload, "kind": "builtin", "builtin": "tpcb-like", "scale": {"factor": 1}},
                "clients": p.clients, "jobs": p.jobs, "repeat": p.repeat, "warmup": p.warmup,
                "length": {"seconds": duration_s}, "progress": true, "drop_caches": false,
                "included": false
            })
        })
        .collect();
    serde_json::json!({
        "matrix": "quick", "cells": cells, "dropped": [], "excluded": 0,
        "skipped_hosts": [], "hosts": [], "eta": 60, "eta_min": 60
    })
}

/// A closed bundle named `name` under `out` of [`sample_cells`] started at
/// `started` (bundles of one sweep's re-runs differ there), with
/// [`LAB_FACTS`] and the plan [`sample_plan`] of `duration_s`.
pub fn make_planned_bundle(out: &Path, name: &str, duration_s: u64, started: &str) -> PathBuf {
    let mut b = Bundle::create(out, "quick").unwrap();
    b.write("matrix.toml", b"name = \"quick\"\nrepeats = 2\n")
        .unwrap();
    b.write("inventory.toml", b"[[host]]\nname = \"lab1\"\n")
        .unwrap();
    b.write("hosts/lab1/facts.json", LAB_FACTS.as_bytes())
        .unwrap();
    b.write_json("plan.json", &sample_plan(duration_s)).unwrap();
    for mut c in sample_cells() {
        c.started = Some(started.into());
        write_cell(&mut b, &c);
    }
    let root = b.close(SweepStatus::Complete).unwrap();
    let named = out.join(name);
    std::fs::rename(&root, &named).unwrap();
    named
}
