//! Hosts run in parallel: the same cells per host on 1 lab host and on
//! every lab host, wall time of each sweep and their ratio (the goal is
//! ≤ 1.1 on real hosts; on the local lab all hosts share this machine's
//! cores, so the ratio also shows how much the lab's hosts contend).
//! Needs a standing lab: `fsmatrix lab up`, then
//! `cargo bench -p fsmatrix --bench parallel --profile dev`.
#[path = "../../tests/common/mod.rs"]
mod common;

use std::time::Instant;

const MATRIX: &str = r#"name = "parallel"
repeats = 2
[postgres]
shared_buffers = "64MB"
[[filesystem]]
name = "ext4"
type = "ext4"
[[workload]]
name = "sel"
builtin = "select-only"
scale = 1
clients = [1, 2]
duration = "5s"
"#;

fn sweep(dir: &std::path::Path, inv_text: &str, tag: &str) -> f64 {
    let inv = dir.join(format!("{tag}.toml"));
    let m = dir.join("matrix.toml");
    std::fs::write(&inv, inv_text).expect("write inventory");
    std::fs::write(&m, MATRIX).expect("write matrix");
    let t0 = Instant::now();
    let out = common::fsmatrix()
        .args(["run", "-i"])
        .arg(&inv)
        .arg("-m")
        .arg(&m)
        .arg("--out")
        .arg(dir.join(tag))
        .output()
        .expect("run fsmatrix");
    let secs = t0.elapsed().as_secs_f64();
    assert!(
        out.status.success(),
        "sweep {tag} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    secs
}

fn main() {
    let Some(lab) = common::read_inventory(&common::lab_dir()) else {
        eprintln!("parallel bench: no lab is up (fsmatrix lab up); skipped");
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let one = sweep(
        dir.path(),
        &common::inventory_for(&lab, &[(&lab.hosts[0], "")], ""),
        "one",
    );
    let all = sweep(
        dir.path(),
        &common::inventory_for(
            &lab,
            &lab.hosts.iter().map(|h| (h, "")).collect::<Vec<_>>(),
            "",
        ),
        "all",
    );
    let n = lab.hosts.len();
    println!("parallel sweep, 4 cells per host (ext4, select-only, clients 1 and 2, 2 repeats, 5 s runs):");
    println!("  1 host : {one:.1} s");
    println!("  {n} hosts: {all:.1} s");
    println!("  ratio {n} hosts / 1 host: {:.2}", all / one);
}
