//! How good the ETA is, on the README's demo sweep (`matrix/demo.toml`) on
//! the lab's Linux hosts, from one `run --json`:
//! - the plan's ETA from the defaults against the sweep's actual wall time;
//! - for each host, the ETA once its first filesystem was done against the
//!   time the host then actually took (aim: within 15 %);
//! - `plan --history` on the bundle just made against the same wall time
//!   (what the next plan of these hosts would say).
//!
//! Needs a standing lab: `fsmatrix lab up`, then
//! `cargo bench -p fsmatrix --profile dev --bench eta` (about 5 minutes).
#[path = "../../tests/support/lab.rs"]
mod common;

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::Instant;

fn main() {
    let Some(lab) = common::read_inventory(&common::lab_dir()) else {
        eprintln!("eta bench: no lab is up (fsmatrix lab up); skipped");
        return;
    };
    let hosts: Vec<&common::LabHost> = lab
        .hosts
        .iter()
        .filter(|h| h.os == "linux")
        .take(3)
        .collect();
    let names: Vec<&str> = hosts.iter().map(|h| h.name.as_str()).collect();
    let dir = tempfile::tempdir().expect("tempdir");
    let inv = dir.path().join("inv.toml");
    let with: Vec<(&common::LabHost, &str)> = hosts.iter().map(|h| (*h, "")).collect();
    std::fs::write(&inv, common::inventory_for(&lab, &with, "")).expect("write inventory");
    let matrix = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../matrix/demo.toml");
    let plan_eta = |history: Option<&std::path::Path>| -> (f64, serde_json::Value) {
        let mut cmd = common::fsmatrix();
        cmd.args(["plan", "--json", "-i"])
            .arg(&inv)
            .arg("-m")
            .arg(&matrix);
        if let Some(h) = history {
            cmd.arg("--history").arg(h);
        }
        let o = cmd.output().expect("plan");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let p: serde_json::Value = serde_json::from_slice(&o.stdout).expect("plan JSON");
        (p["eta"].as_f64().expect("eta"), p["history_eta"].clone())
    };
    let (defaults, _) = plan_eta(None);

    let out = dir.path().join("out");
    let t0 = Instant::now();
    let mut child = common::fsmatrix()
        .args(["run", "--json", "-i"])
        .arg(&inv)
        .arg("-m")
        .arg(&matrix)
        .arg("--out")
        .arg(&out)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("run fsmatrix");
    let events: Vec<serde_json::Value> = BufReader::new(child.stdout.take().expect("stdout"))
        .lines()
        .map(|l| serde_json::from_str(&l.expect("read")).expect("JSON line"))
        .collect();
    let status = child.wait().expect("wait");
    let wall = t0.elapsed().as_secs_f64();
    assert!(status.success(), "the demo sweep failed: {status}");

    println!("demo sweep (matrix/demo.toml) on {}:", names.join(", "));
    println!(
        "  plan's ETA from the defaults {defaults:.0} s; actual wall time {wall:.1} s (defaults ÷ actual {:.2})",
        defaults / wall
    );
    println!("  ETA once the first filesystem was done, against what the host then took:");
    let mut worst: f64 = 0.0;
    for e in common::eta_after_first_variant(&events) {
        println!("    {e}");
        worst = worst.max(e.error());
    }
    println!("  largest error {:.1} % (aim ≤ 15 %)", 100.0 * worst);
    // What the hosts took, by filesystem type and kind of work.
    let mut by: std::collections::BTreeMap<(String, String), Vec<f64>> = Default::default();
    for b in std::fs::read_dir(&out).expect("out").flatten() {
        let text = std::fs::read_to_string(b.path().join("data/timings.jsonl")).unwrap_or_default();
        for l in text.lines() {
            let v: serde_json::Value = serde_json::from_str(l).expect("timing");
            let key = (
                v["fs_type"].as_str().unwrap_or("?").to_string(),
                v["kind"].as_str().unwrap_or("?").to_string(),
            );
            by.entry(key)
                .or_default()
                .push(v["secs"].as_f64().unwrap_or(f64::NAN));
        }
    }
    println!("  what the work took (seconds, mean over hosts and items; min–max):");
    for ((fs, kind), v) in &by {
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        let (lo, hi) = v
            .iter()
            .fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(*x), b.max(*x)));
        println!(
            "    {fs:6} {kind:13} {mean:6.2} ({lo:.2}–{hi:.2}, n = {})",
            v.len()
        );
    }
    let (_, learned) = plan_eta(Some(&out));
    let slowest = learned
        .as_object()
        .map(|o| {
            o.values()
                .filter_map(|v| v["remaining_s"].as_f64())
                .fold(0.0, f64::max)
        })
        .unwrap_or(f64::NAN);
    println!(
        "  plan --history of this bundle: {slowest:.1} s vs the sweep's {wall:.1} s: error {:.1} %",
        100.0 * (slowest - wall).abs() / wall
    );
}
