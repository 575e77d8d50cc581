//! The ETA that learns and the live view, on the local lab: a sweep of two
//! filesystems on one host, watched through `run --json`.  After its first
//! filesystem the host's ETA must be within 25 % of the time it then
//! actually took (the `eta` bench prints the exact figures for the demo);
//! every run streams pgbench's per-second tps as `tps` events without
//! putting those lines in the bundle; the bundle keeps the timings it
//! learned from, and `plan --history` estimates the same sweep from them.
//! Needs a standing lab (`fsmatrix lab up`; CI brings one up) or brings one up.
mod support;

// Without root and a lab the suite says so and is skipped (tests/run.sh runs it).
#[used]
#[link_section = ".init_array"]
static NEEDS: extern "C" fn() = support::skip::needs_root_and_lab;

use serde_json::Value;
use support::{eta_after_first_variant, files_under, fsmatrix, inventory_for, Lab};

const MATRIX: &str = r#"name = "eta-two"
repeats = 3
warmup = 0
drop_caches = false
[postgres]
shared_buffers = "64MB"
[[filesystem]]
name = "ext4"
type = "ext4"
[[filesystem]]
name = "xfs"
type = "xfs"
[[workload]]
name = "sel"
builtin = "select-only"
scale = 2
clients = [1]
duration = "3s"
"#;

#[test]
fn the_eta_after_the_first_filesystem_is_within_a_quarter_and_tps_streams_live() {
    let lab = Lab::hold(&["lab2"]);
    let h = &lab.inv.hosts[0];
    let tmp = tempfile::tempdir().expect("tempdir");
    let inv = tmp.path().join("inv.toml");
    let m = tmp.path().join("m.toml");
    std::fs::write(&inv, inventory_for(&lab.inv, &[(h, "")], "")).expect("inventory");
    std::fs::write(&m, MATRIX).expect("matrix");
    let out = tmp.path().join("out");
    // Each line's arrival time: the live view must get pgbench's seconds as
    // they come, not at the end of the run.
    let mut child = fsmatrix()
        .args(["run", "--json", "-i"])
        .arg(&inv)
        .arg("-m")
        .arg(&m)
        .arg("--out")
        .arg(&out)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run");
    let t0 = std::time::Instant::now();
    let stdout = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    let mut events: Vec<Value> = Vec::new();
    let mut arrived: Vec<f64> = Vec::new();
    for line in std::io::BufRead::lines(stdout) {
        let line = line.expect("read");
        events.push(serde_json::from_str(&line).expect("a JSON line"));
        arrived.push(t0.elapsed().as_secs_f64());
    }
    let o = child.wait_with_output().expect("wait");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    // The ETA after ext4, against what xfs then took.
    let etas = eta_after_first_variant(&events);
    assert_eq!(etas.len(), 1, "{etas:?}");
    let e = &etas[0];
    eprintln!("{e}");
    assert_eq!(e.basis, "observed", "{e:?}");
    assert!(e.error() <= 0.25, "{e:?}");

    // Live tps: every run streamed its seconds, each a positive tps.
    let runs: Vec<&str> = events
        .iter()
        .filter(|v| v["event"] == "cell_ended" && v["outcome"] == "done")
        .filter_map(|v| v["cell"].as_str())
        .collect();
    assert_eq!(runs.len(), 6, "{events:?}");
    for cell in &runs {
        let secs: Vec<&Value> = events
            .iter()
            .filter(|v| v["event"] == "tps" && v["cell"] == *cell)
            .collect();
        assert!(secs.len() >= 2, "cell {cell}: {} tps events", secs.len());
        assert!(
            secs.iter().all(|v| v["tps"].as_f64().unwrap_or(0.0) > 0.0),
            "{secs:?}"
        );
        // The first second of a 3 s run is seen well before the run ends.
        let when = |pred: &dyn Fn(&Value) -> bool| {
            events
                .iter()
                .position(pred)
                .map(|i| arrived[i])
                .expect("the event")
        };
        let first = when(&|v| v["event"] == "tps" && v["cell"] == *cell);
        let ended = when(&|v| v["event"] == "cell_ended" && v["cell"] == *cell);
        assert!(
            ended - first >= 1.0,
            "cell {cell}: its first tps came {:.2} s before its end: not live",
            ended - first
        );
    }
    // ... and none of it reached the bundle: the matrix asked for no progress.
    let bundle = std::fs::read_dir(&out)
        .expect("out")
        .flatten()
        .map(|e| e.path())
        .find(|p| p.is_dir())
        .expect("a bundle");
    for f in files_under(&bundle) {
        let name = f
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        if name.ends_with(".err") || name.ends_with(".log") {
            let text = std::fs::read_to_string(&f).unwrap_or_default();
            assert!(
                !text.contains("progress:") && !text.contains("fsmatrix-live"),
                "{}: {text}",
                f.display()
            );
        }
    }

    // The timings are in the bundle, covered by its manifest ...
    let timings = std::fs::read_to_string(bundle.join("data/timings.jsonl")).expect("timings");
    let kinds: std::collections::BTreeSet<String> = timings
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("timing")["kind"].to_string())
        .collect();
    assert!(
        kinds.len() >= 4,
        "setup, load, run overhead, teardown: {kinds:?}"
    );
    let manifest = std::fs::read_to_string(bundle.join("manifest-sha256.txt")).expect("manifest");
    assert!(manifest.contains("data/timings.jsonl"), "{manifest}");
    // ... and `plan --history` estimates this sweep from them, not from the
    // defaults (which say minutes for it).
    let took = events
        .iter()
        .rev()
        .find(|v| v["event"] == "eta")
        .and_then(|v| v["at_s"].as_f64())
        .expect("the last eta");
    let o = fsmatrix()
        .args(["plan", "--json", "-i"])
        .arg(&inv)
        .arg("-m")
        .arg(&m)
        .arg("--history")
        .arg(&out)
        .output()
        .expect("plan");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let p: Value = serde_json::from_slice(&o.stdout).expect("plan JSON");
    let learned = &p["history_eta"][h.name.as_str()];
    let planned = learned["remaining_s"].as_f64().expect("history_eta");
    let defaults = p["eta"].as_f64().expect("eta");
    eprintln!("plan --history: {planned:.1} s (defaults {defaults} s); the sweep took {took:.1} s");
    assert_eq!(learned["basis"], "history", "{learned}");
    // Before anything ran (no --history), the host's ETA was the defaults'.
    let started = events
        .iter()
        .find(|v| v["event"] == "host_started")
        .expect("host_started");
    assert_eq!(started["eta"].as_f64(), Some(defaults), "{started}");
    assert!((planned - took).abs() / took <= 0.25, "{planned} vs {took}");
    assert!(
        defaults > 2.0 * took,
        "the defaults were not that far off: {defaults}"
    );
    support::assert_clean(&lab.inv, h);
}
