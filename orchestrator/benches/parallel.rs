//! Parallel efficiency of the scheduler: the same cells per host on 1, 3
//! and every Linux lab host (8 with `fsmatrix lab up --hosts 8`), wall time
//! of each sweep and of its measuring phase, and their ratios to the
//! 1-host sweep (aim ≤ 1.05).  The load
//! is rate-limited (pgbench -R 50, 1 client), so the lab's hosts, which all
//! share this machine's two cores, do not compete for CPU: what grows with
//! the host count is what fsmatrix adds.  The setup before the runs (mkfs,
//! initdb, pgbench -i) cannot be rate-limited and does compete, so the
//! bench also prints each host's own run phase and the orchestrator's time
//! outside every host's span.
//!
//! Needs a standing lab: `fsmatrix lab up [--hosts 8]`, then
//! `cargo bench -p fsmatrix --profile perf --bench parallel`.
#[path = "../../tests/support/lab.rs"]
mod common;

use std::time::Instant;

const MATRIX: &str = r#"name = "parallel"
repeats = 4
warmup = 0
drop_caches = false
[postgres]
shared_buffers = "64MB"
[[filesystem]]
name = "ext4"
type = "ext4"
[[workload]]
name = "sel"
builtin = "select-only"
scale = 1
clients = [1]
duration = "5s"
rate = 50
"#;

/// What one sweep's `run --json` events show, in seconds since its start.
struct Sweep {
    /// The whole sweep (process start to exit).
    wall: f64,
    /// From the first `run` step on any host to the last cell's end: leaves
    /// out the hosts' setup (mkfs, initdb, load: not rate-limited, so on
    /// the lab they compete for this machine's cores and disk).
    measuring: f64,
    /// Per host: `host_started` to `host_finished` (the host's own work,
    /// slowed by whatever it shares with the other hosts).
    spans: Vec<f64>,
    /// Per host: its first `run` step to its last cell's end (rate-limited
    /// runs only: what the scheduler could stretch, the CPU hardly).
    runs: Vec<f64>,
    /// Last `host_started` minus the first: how late the scheduler starts
    /// a host.
    start_skew: f64,
}

fn sweep(dir: &std::path::Path, inv_text: &str, tag: &str) -> Sweep {
    use std::collections::BTreeMap;
    use std::io::BufRead;
    let inv = dir.join(format!("{tag}.toml"));
    let m = dir.join("matrix.toml");
    std::fs::write(&inv, inv_text).expect("write inventory");
    std::fs::write(&m, MATRIX).expect("write matrix");
    let t0 = Instant::now();
    let mut child = common::fsmatrix()
        .args(["run", "--json", "-i"])
        .arg(&inv)
        .arg("-m")
        .arg(&m)
        .arg("--out")
        .arg(dir.join(tag))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("run fsmatrix");
    let stdout = child.stdout.take().expect("stdout");
    let (mut first_run, mut last_end) = (None, None);
    // host -> [started, finished, first run, last cell end]
    let mut hosts: BTreeMap<String, [Option<f64>; 4]> = BTreeMap::new();
    for line in std::io::BufReader::new(stdout).lines() {
        let v: serde_json::Value = serde_json::from_str(&line.expect("read")).expect("a JSON line");
        let t = t0.elapsed().as_secs_f64();
        let h = hosts
            .entry(v["host"].as_str().unwrap_or_default().to_string())
            .or_default();
        match v["event"].as_str() {
            Some("host_started") => h[0] = Some(t),
            Some("host_finished") => h[1] = Some(t),
            Some("step") if v["step"] == "run" => {
                first_run.get_or_insert(t);
                h[2].get_or_insert(t);
            }
            Some("cell_ended") => {
                last_end = Some(t);
                h[3] = Some(t);
            }
            _ => {}
        }
    }
    let status = child.wait().expect("wait");
    let wall = t0.elapsed().as_secs_f64();
    assert!(status.success(), "sweep {tag} failed: {status}");
    hosts.remove("");
    let span = |a: Option<f64>, b: Option<f64>| b.expect("host event") - a.expect("host event");
    let starts: Vec<f64> = hosts.values().filter_map(|h| h[0]).collect();
    let fold = |f: fn(f64, f64) -> f64, init| starts.iter().copied().fold(init, f);
    Sweep {
        wall,
        measuring: last_end.expect("cells ended") - first_run.expect("runs started"),
        spans: hosts.values().map(|h| span(h[0], h[1])).collect(),
        runs: hosts.values().map(|h| span(h[2], h[3])).collect(),
        start_skew: fold(f64::max, f64::MIN) - fold(f64::min, f64::MAX),
    }
}

fn max(xs: &[f64]) -> f64 {
    xs.iter().copied().fold(f64::MIN, f64::max)
}

fn main() {
    let Some(lab) = common::read_inventory(&common::lab_dir()) else {
        eprintln!("parallel bench: no lab is up (fsmatrix lab up); skipped");
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let mut sizes = vec![1, 3.min(lab.hosts.len()), lab.hosts.len()];
    sizes.dedup();
    let mut walls = Vec::new();
    for &n in &sizes {
        let hosts: Vec<_> = lab.hosts[..n].iter().map(|h| (h, "")).collect();
        let inv = common::inventory_for(&lab, &hosts, "");
        walls.push(sweep(dir.path(), &inv, &format!("hosts{n}")));
    }
    println!("parallel sweeps, 4 cells per host (ext4, select-only at -R 50, 1 client, 5 s runs):");
    let one = &walls[0];
    for (n, w) in sizes.iter().zip(&walls) {
        let s = if *n == 1 { " " } else { "s" };
        println!(
            "  {n} host{s}: whole sweep {:.1} s (ratio to 1 host {:.3}); measuring phase {:.1} s (ratio {:.3})",
            w.wall,
            w.wall / one.wall,
            w.measuring,
            w.measuring / one.measuring
        );
        println!(
            "           each host's runs, first run to last cell, longest {:.1} s (ratio {:.3}); \
             scheduler's share: wall − longest host span {:.2} s, hosts started within {:.3} s",
            max(&w.runs),
            max(&w.runs) / max(&one.runs),
            w.wall - max(&w.spans),
            w.start_skew
        );
    }
    println!("  (aim: ≤ 1.05 for every host count; the whole sweep includes the hosts' setup, which on the lab shares this machine's two cores and disk;");
    println!("   each host's runs are rate-limited, so their ratio is what the scheduler adds; wall − longest host span is the orchestrator's own time outside any host's work)");
}
