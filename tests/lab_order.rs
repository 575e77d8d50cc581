//! `order = "interleaved"` on the local lab: one lab host given a second
//! device (a loop device this test attaches and detaches itself; the standing
//! lab is not changed), two variants each on its own device with its own
//! PostgreSQL cluster and port, their runs alternating; the bundle records
//! the order, and the host is clean afterwards.
//! Needs a standing lab (`fsmatrix lab up`; CI brings one up) or brings one up.
mod support;

// Without root and a lab the suite says so and is skipped (tests/run.sh runs it).
#[used]
#[link_section = ".init_array"]
static NEEDS: extern "C" fn() = support::skip::needs_root_and_lab;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{fsmatrix, inventory_for, ssh_ok, Lab, LabHost, LabInventory};

/// A loop device over a sparse file, detached on drop.
struct Loop {
    dev: String,
    _dir: tempfile::TempDir,
}

impl Loop {
    fn attach(size: &str) -> Loop {
        let dir = tempfile::tempdir().expect("tempdir");
        let img = dir.path().join("second-disk.img");
        let ok = Command::new("truncate")
            .args(["-s", size])
            .arg(&img)
            .status()
            .expect("truncate");
        assert!(ok.success(), "truncate -s {size}");
        let out = Command::new("losetup")
            .args(["-f", "--show"])
            .arg(&img)
            .output()
            .expect("losetup");
        assert!(
            out.status.success(),
            "losetup -f --show: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let dev = String::from_utf8_lossy(&out.stdout).trim().to_string();
        assert!(dev.starts_with("/dev/loop"), "{dev}");
        Loop { dev, _dir: dir }
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = Command::new("losetup").args(["-d", &self.dev]).status();
    }
}

/// Over plain SSH: nothing of fsmatrix left on either device of the host.
fn assert_both_clean(inv: &LabInventory, h: &LabHost, second: &str) {
    let out = ssh_ok(
        inv,
        h,
        r#"for dev in "$1" "$2"; do
  echo "mounts $dev=$(grep -c -e "^$dev " /proc/mounts)"
  echo "sig $dev=$(blkid -p -o value -s TYPE "$dev" 2>/dev/null)"
done
echo "fsmx_mounts=$(grep -c ' /var/tmp/fsmatrix/mnt' /proc/mounts)"
echo "postgres=$(pgrep -c -x postgres || true)"
"#,
        &[&h.device, second],
    );
    for dev in [h.device.as_str(), second] {
        assert!(
            out.contains(&format!("mounts {dev}=0\n")),
            "{dev} mounted: {out}"
        );
        assert!(
            out.contains(&format!("sig {dev}=\n")),
            "{dev} not wiped: {out}"
        );
    }
    assert!(out.contains("fsmx_mounts=0\n"), "{out}");
    assert!(out.contains("postgres=0\n"), "a cluster still runs: {out}");
}

fn bundle_in(out: &Path) -> PathBuf {
    let v: Vec<PathBuf> = std::fs::read_dir(out)
        .expect("read the output folder")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(v.len(), 1, "one bundle in {}: {v:?}", out.display());
    v[0].clone()
}

/// `fsmatrix run -q` of `inv` and `matrix` into `out`: its exit code and
/// what it printed (also shown on the test's stderr, with the time taken).
fn run_quiet(inv: &Path, matrix: &Path, out: &Path) -> (Option<i32>, String) {
    let t0 = Instant::now();
    let o = fsmatrix()
        .args(["run", "-q", "--inventory"])
        .arg(inv)
        .arg("--matrix")
        .arg(matrix)
        .arg("--out")
        .arg(out)
        .stdin(Stdio::null())
        .output()
        .expect("run fsmatrix");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    eprintln!(
        "fsmatrix run -> {:?} in {:.1} s\n{text}",
        o.status.code(),
        t0.elapsed().as_secs_f64()
    );
    (o.status.code(), text)
}

/// An inventory of lab1 with its own device and `second`, and an
/// interleaved matrix of ext4 and xfs, 2 repeats of `duration`:
/// (folder, inventory, matrix).
fn inputs(lab: &Lab, second: &Loop, duration: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let h = &lab.inv.hosts[0];
    let tmp = tempfile::tempdir().expect("tempdir");
    let inv_text = inventory_for(&lab.inv, &[(h, "")], "").replace(
        &format!("devices = [{:?}]", h.device),
        &format!("devices = [{:?}, {:?}]", h.device, second.dev),
    );
    let inv = tmp.path().join("inventory.toml");
    std::fs::write(&inv, &inv_text).expect("write the inventory");
    let matrix = tmp.path().join("matrix.toml");
    std::fs::write(
        &matrix,
        format!(
            "name = \"order\"\norder = \"interleaved\"\nrepeats = 2\n\
             [[filesystem]]\nname = \"ext4\"\ntype = \"ext4\"\n\
             [[filesystem]]\nname = \"xfs\"\ntype = \"xfs\"\n\
             [[workload]]\nname = \"ro\"\nbuiltin = \"select-only\"\nscale = 1\nclients = [1]\nduration = \"{duration}\"\n"
        ),
    )
    .expect("write the matrix");
    (tmp, inv, matrix)
}

#[test]
fn interleaved_sweep_alternates_two_clusters_on_two_devices() {
    let lab = Lab::hold(&["lab3"]);
    let h = &lab.inv.hosts[0];
    let second = Loop::attach("1G");
    let (tmp, inv, matrix) = inputs(&lab, &second, "3s");

    // The plan shows the order: which variant on which device and port.
    let plan = fsmatrix()
        .args(["plan", "-i"])
        .arg(&inv)
        .arg("-m")
        .arg(&matrix)
        .output()
        .expect("plan");
    let text = String::from_utf8_lossy(&plan.stdout);
    assert!(
        plan.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&plan.stderr)
    );
    let port = lab.inv.pg_port;
    assert!(
        text.contains(&format!(
            "batch 1: A = ext4 on {} (port {port}), B = xfs on {} (port {})",
            h.device,
            second.dev,
            port + 1
        )),
        "{text}"
    );
    assert!(text.contains("runs: A B A B (4 runs)"), "{text}");

    let out = tmp.path().join("out");
    let (code, _) = run_quiet(&inv, &matrix, &out);
    assert_eq!(code, Some(0), "every cell done");
    let bundle = bundle_in(&out);
    let verify = fsmatrix()
        .arg("verify")
        .arg(&bundle)
        .output()
        .expect("verify");
    assert!(
        verify.status.success(),
        "{}",
        String::from_utf8_lossy(&verify.stdout)
    );

    // plan.json records the order, the batch and the run order.
    let p: Value =
        serde_json::from_slice(&std::fs::read(bundle.join("data/plan.json")).expect("plan.json"))
            .expect("plan.json is JSON");
    assert_eq!(p["order"], "interleaved");
    let b = &p["hosts"][0]["batches"][0];
    assert_eq!(b["runs"], serde_json::json!([0, 1, 0, 1]));
    assert_eq!(b["slots"][1]["device"], second.dev.as_str());
    assert_eq!(b["slots"][1]["port"], port + 1);

    // The runs alternated, in time as in the record.
    let results: Vec<Value> = std::fs::read_to_string(bundle.join("data/results.jsonl"))
        .expect("results.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    let mut by_start: Vec<(String, String)> = results
        .iter()
        .map(|r| {
            assert_eq!(r["status"]["state"], "done", "{r}");
            (
                r["started"].as_str().unwrap_or("").to_string(),
                r["params"]["filesystem"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    by_start.sort();
    let order: Vec<&str> = by_start.iter().map(|(_, f)| f.as_str()).collect();
    assert_eq!(order, ["ext4", "xfs", "ext4", "xfs"]);

    // Each cluster on its own device, mount point and port.
    for (fs, dev, mnt, pg_port) in [
        ("ext4", h.device.as_str(), "/var/tmp/fsmatrix/mnt", port),
        (
            "xfs",
            second.dev.as_str(),
            "/var/tmp/fsmatrix/mnt1",
            port + 1,
        ),
    ] {
        let log =
            std::fs::read_to_string(bundle.join(format!("data/hosts/{}/{fs}/setup.log", h.name)))
                .expect("setup.log");
        let mount = log
            .lines()
            .find(|l| l.contains(" mount ") && l.starts_with("$ "))
            .unwrap_or_else(|| panic!("no mount in {fs}'s setup.log:\n{log}"));
        assert!(mount.contains(&format!("dev={dev} ")), "{mount}");
        assert!(mount.contains(&format!("mnt={mnt}")), "{mount}");
        assert!(log.contains(&format!("port={pg_port}")), "{log}");
        // The mount's own report: that device on that mount point.
        assert!(log.contains(&format!("mnt={mnt}\n")), "{log}");
        for r in results.iter().filter(|r| r["params"]["filesystem"] == fs) {
            let id = r["cell_id"].as_str().unwrap_or("");
            let cmds =
                std::fs::read_to_string(bundle.join(format!("data/cells/{id}/commands.log")))
                    .expect("a cell's commands.log");
            assert!(cmds.contains(&format!("port={pg_port} ")), "{fs}: {cmds}");
        }
    }
    assert_both_clean(&lab.inv, h, &second.dev);
}

/// Ctrl-C while both clusters run: every device and cluster of the batch is
/// torn down, the bundle closed as incomplete.
#[test]
fn sigint_mid_interleaved_sweep_tears_down_both_devices() {
    let lab = Lab::hold(&["lab3"]);
    let h = &lab.inv.hosts[0];
    let second = Loop::attach("1G");
    let (tmp, inv, matrix) = inputs(&lab, &second, "20s");
    let out = tmp.path().join("out");
    let log = tmp.path().join("progress.log");
    let mut child = fsmatrix()
        .args(["run", "--inventory"])
        .arg(&inv)
        .arg("--matrix")
        .arg(&matrix)
        .arg("--out")
        .arg(&out)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).expect("log file"))
        .spawn()
        .expect("spawn fsmatrix run");
    // Both clusters are up once xfs (the second device's) runs.
    let t0 = Instant::now();
    while !std::fs::read_to_string(&log)
        .unwrap_or_default()
        .contains(": run xfs")
    {
        if t0.elapsed() > Duration::from_secs(120) || child.try_wait().ok().flatten().is_some() {
            let _ = child.kill();
            panic!(
                "xfs never ran:\n{}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let status = support::interrupt_and_wait(&mut child, Duration::from_secs(120));
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    eprintln!("{text}");
    assert_eq!(status.code(), Some(1), "an interrupted sweep exits 1");
    let bundle = bundle_in(&out);
    let info = std::fs::read_to_string(bundle.join("bag-info.txt")).expect("bag-info");
    assert!(info.contains("Sweep-Status: incomplete"), "{info}");
    let results = std::fs::read_to_string(bundle.join("data/results.jsonl")).expect("results");
    assert_eq!(
        results.lines().count(),
        4,
        "every cell recorded, run or not"
    );
    assert_both_clean(&lab.inv, h, &second.dev);
}

/// The clusters of an interleaved batch all run at once: `check` and `run`
/// refuse, before any disk is formatted, shared_buffers that add up to more
/// than three quarters of the host's memory, while the same settings one
/// cluster at a time (sequential) pass.
#[test]
fn interleaved_clusters_that_would_not_fit_the_hosts_memory_are_refused() {
    let lab = Lab::hold(&["lab3"]);
    let h = &lab.inv.hosts[0];
    let second = Loop::attach("1G");
    let (tmp, inv, matrix) = inputs(&lab, &second, "3s");
    // Half of the host's memory per cluster: one fits, two do not.
    let mem_kib: u64 = ssh_ok(
        &lab.inv,
        h,
        "awk '$1 == \"MemTotal:\" { print $2 }' /proc/meminfo",
        &[],
    )
    .trim()
    .parse()
    .expect("MemTotal");
    let half_mb = mem_kib / 2 / 1024;
    let text = std::fs::read_to_string(&matrix).expect("matrix");
    let big = text.replace(
        "repeats = 2\n",
        &format!("repeats = 2\n[postgres]\nshared_buffers = \"{half_mb}MB\"\n"),
    );
    std::fs::write(&matrix, &big).expect("write the matrix");
    let sequential = tmp.path().join("sequential.toml");
    std::fs::write(
        &sequential,
        big.replace("order = \"interleaved\"\n", "order = \"sequential\"\n"),
    )
    .expect("write the sequential matrix");
    let check = |m: &Path| support::check_with(&inv, m);
    let (code, text) = check(&matrix);
    assert_eq!(code, Some(1), "not ready: {text}");
    assert!(
        text.contains("2 PostgreSQL clusters run at once here")
            && text.contains(&format!("(ext4 {half_mb}MB, xfs {half_mb}MB)"))
            && text.contains("more than 75% of the host's")
            && text.contains("valid: lower shared_buffers"),
        "{text}"
    );
    let (code, text) = check(&sequential);
    assert_eq!(code, Some(0), "one cluster at a time fits: {text}");

    let (code, text) = run_quiet(&inv, &matrix, &tmp.path().join("out"));
    assert_eq!(code, Some(2), "nothing ran: {text}");
    assert!(
        text.contains("2 PostgreSQL clusters run at once here"),
        "{text}"
    );
    // Neither device was formatted.
    assert_both_clean(&lab.inv, h, &second.dev);
}
