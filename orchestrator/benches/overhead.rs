//! The orchestrator's own cost, from one sweep on one lab host:
//! - **per-cell overhead**: each cell's wall time (its record's `started`
//!   to `ended`) minus pgbench's own duration, median over the short cells
//!   (aim ≤ 0.3 s);
//! - **orchestrator CPU** during a 60 s pgbench run: the fsmatrix process's
//!   user + system time (from `/proc/PID/stat`) between the `run` step's
//!   start and the cell's end, as seen on `run --json`, over that wall time
//!   (aim < 0.5% of a core).
//!
//! Needs a standing lab: `fsmatrix lab up`, then
//! `cargo bench -p fsmatrix --profile perf --bench overhead`.
#[path = "../../tests/support/lab.rs"]
mod common;

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::Instant;

const MATRIX: &str = r#"name = "overhead"
repeats = 6
warmup = 0
drop_caches = false
[postgres]
shared_buffers = "64MB"
[[filesystem]]
name = "ext4"
type = "ext4"
[[workload]]
name = "short"
builtin = "select-only"
scale = 1
clients = [1]
duration = "3s"
[[workload]]
name = "long"
builtin = "select-only"
scale = 1
clients = [1]
duration = "60s"
repeats = 1
"#;

/// utime + stime of `pid`, in seconds.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("read /proc stat");
    // Fields after the command name (which is in parentheses).
    let rest = &stat[stat.rfind(')').expect("stat format") + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap();
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    ticks / hz
}

/// Seconds of an RFC 3339 UTC time as fsmatrix writes it
/// (`2026-12-02T08:30:01.123456789Z`).
fn rfc3339_s(t: &str) -> f64 {
    let (date, clock) = t.trim_end_matches('Z').split_once('T').expect("rfc3339");
    let d: Vec<i32> = date.split('-').map(|x| x.parse().expect("date")).collect();
    let month = time::Month::try_from(d[1] as u8).expect("month");
    let day = time::Date::from_calendar_date(d[0], month, d[2] as u8).expect("date");
    let c: Vec<f64> = clock.split(':').map(|x| x.parse().expect("time")).collect();
    f64::from(day.to_julian_day()) * 86_400.0 + c[0] * 3600.0 + c[1] * 60.0 + c[2]
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let Some(lab) = common::read_inventory(&common::lab_dir()) else {
        eprintln!("overhead bench: no lab is up (fsmatrix lab up); skipped");
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let inv = dir.path().join("inv.toml");
    let m = dir.path().join("matrix.toml");
    std::fs::write(
        &inv,
        common::inventory_for(&lab, &[(&lab.hosts[0], "")], ""),
    )
    .expect("write inventory");
    std::fs::write(&m, MATRIX).expect("write matrix");
    let out = dir.path().join("out");
    let mut child = common::fsmatrix()
        .args(["run", "--json", "-i"])
        .arg(&inv)
        .arg("-m")
        .arg(&m)
        .arg("--out")
        .arg(&out)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("run fsmatrix");
    let pid = child.id();
    let lines = BufReader::new(child.stdout.take().expect("stdout"));
    let mut long_run: Option<(Instant, f64)> = None;
    let mut cpu = None;
    let mut bundle = None;
    for line in lines.lines() {
        let line = line.expect("read");
        let v: serde_json::Value = serde_json::from_str(&line).expect("JSON line");
        let event = v["event"].as_str().unwrap_or("");
        let on = v["on"].as_str().unwrap_or("");
        if event == "step" && v["step"] == "run" && on.contains("long") {
            long_run = Some((Instant::now(), cpu_seconds(pid)));
        }
        // The cell that ends after the long run's step is the long one (a
        // host runs one cell at a time).
        if event == "cell_ended" {
            if let Some((t0, c0)) = long_run.take() {
                let wall = t0.elapsed().as_secs_f64();
                cpu = Some(((cpu_seconds(pid) - c0), wall));
            }
        }
        if event == "sweep_ended" {
            bundle = v["bundle"].as_str().map(std::path::PathBuf::from);
        }
    }
    let status = child.wait().expect("wait");
    assert!(status.success(), "the sweep failed: {status}");
    let bundle = bundle.unwrap_or(out);

    let mut overheads = Vec::new();
    let mut walls = Vec::new();
    for entry in common::files_under(&bundle) {
        if entry.file_name().and_then(|n| n.to_str()) != Some("result.json") {
            continue;
        }
        let v: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&entry).expect("read")).expect("json");
        let cell = v["cell_id"].as_str().unwrap_or("");
        if v["params"]["workload"] != "short" {
            continue;
        }
        let (Some(s), Some(e), Some(d)) = (
            v["started"].as_str(),
            v["ended"].as_str(),
            v["status"]["run"]["duration_s"].as_f64(),
        ) else {
            panic!("cell {cell} has no times or no run: {v}");
        };
        let wall = rfc3339_s(e) - rfc3339_s(s);
        walls.push(wall);
        overheads.push(wall - d);
    }
    assert!(
        overheads.len() >= 5,
        "found {} short cells",
        overheads.len()
    );
    let n = overheads.len();
    let (lo, hi) = {
        let mut o = overheads.clone();
        o.sort_by(f64::total_cmp);
        (o[0], o[n - 1])
    };
    println!(
        "orchestration overhead per cell ({n} cells of 3 s, select-only, 1 client, ext4, on {}):",
        lab.hosts[0].name
    );
    println!(
        "  cell wall time median {:.3} s; overhead (wall - pgbench duration) median {:.3} s, min {lo:.3}, max {hi:.3} (aim ≤ 0.3 s)",
        median(&mut walls),
        median(&mut overheads)
    );
    let (c, w) = cpu.expect("the 60 s run was seen on --json");
    println!(
        "orchestrator CPU during the 60 s run: {c:.2} s of CPU over {w:.1} s = {:.3}% of a core (aim < 0.5%)",
        100.0 * c / w
    );
}
