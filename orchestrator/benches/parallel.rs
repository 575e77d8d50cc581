//! Parallel efficiency of the scheduler: the same cells per host on 1, 3
//! and every Linux lab host (8 with `fsmatrix lab up --hosts 8`), wall time
//! of each sweep and of its measuring phase, and their ratios to the
//! 1-host sweep (aim ≤ 1.05).  The load
//! is rate-limited (pgbench -R 50, 1 client), so the lab's hosts, which all
//! share this machine's two cores, do not compete for CPU: what grows with
//! the host count is what fsmatrix adds.
//!
//! Needs a standing lab: `fsmatrix lab up [--hosts 8]`, then
//! `cargo bench -p fsmatrix --profile perf --bench parallel`.
#[path = "../../tests/common/mod.rs"]
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

/// One sweep: its wall time and the wall time of its measuring phase (from
/// the first `run` step on any host to the last cell's end, seen on
/// `run --json`), which leaves out the hosts' setup (mkfs, initdb, load:
/// not rate-limited, so on the lab they compete for this machine's cores
/// and disk).
fn sweep(dir: &std::path::Path, inv_text: &str, tag: &str) -> (f64, f64) {
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
    for line in std::io::BufReader::new(stdout).lines() {
        let v: serde_json::Value = serde_json::from_str(&line.expect("read")).expect("a JSON line");
        match v["event"].as_str() {
            Some("step") if v["step"] == "run" => {
                first_run.get_or_insert_with(|| t0.elapsed().as_secs_f64());
            }
            Some("cell_ended") => last_end = Some(t0.elapsed().as_secs_f64()),
            _ => {}
        }
    }
    let status = child.wait().expect("wait");
    let secs = t0.elapsed().as_secs_f64();
    assert!(status.success(), "sweep {tag} failed: {status}");
    let measuring = last_end.expect("cells ended") - first_run.expect("runs started");
    (secs, measuring)
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
    for (n, (w, r)) in sizes.iter().zip(&walls) {
        println!(
            "  {n} host{}: whole sweep {w:.1} s (ratio to 1 host {:.3}); measuring phase {r:.1} s (ratio {:.3})",
            if *n == 1 { " " } else { "s" },
            w / walls[0].0,
            r / walls[0].1
        );
    }
    println!("  (aim: ≤ 1.05 for every host count; the whole sweep includes the hosts' setup, which on the lab shares this machine's two cores and disk)");
}
