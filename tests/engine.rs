//! The run engine end to end on the local lab: a real
//! sweep over SSH on every lab host in parallel, a bundle that verifies, the
//! device guard, host keys, an unreachable host and an interrupted sweep.
//! Needs a standing lab (`fsmatrix lab up`; CI brings one up) or brings one up.
mod support;

// Without root and a lab the suite says so and is skipped (tests/run.sh runs it).
#[used]
#[link_section = ".init_array"]
static NEEDS: extern "C" fn() = support::skip::needs_root_and_lab;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{
    assert_clean, fsmatrix, inventory_for as inventory, ssh, ssh_ok, Lab, LabHost, LabInventory,
};

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write a test input");
    p
}

/// `fsmatrix run --inventory INV --matrix MATRIX --out OUT`, stdin closed.
fn run_command(inv: &Path, matrix: &Path, out: &Path) -> Command {
    let mut c = fsmatrix();
    c.args(["run", "--inventory"])
        .arg(inv)
        .arg("--matrix")
        .arg(matrix)
        .arg("--out")
        .arg(out)
        .stdin(Stdio::null());
    c
}

fn run(inv: &Path, matrix: &Path, out: &Path) -> Output {
    let t0 = Instant::now();
    let o = run_command(inv, matrix, out)
        .output()
        .expect("run fsmatrix");
    eprintln!(
        "fsmatrix run -> {:?} in {:.1} s\n{}\n{}",
        o.status.code(),
        t0.elapsed().as_secs_f64(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// `fsmatrix run` in the background, its progress lines (stderr) to `log`.
fn spawn_run(inv: &Path, matrix: &Path, out: &Path, log: &Path) -> std::process::Child {
    run_command(inv, matrix, out)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).expect("log file"))
        .spawn()
        .expect("spawn fsmatrix run")
}

/// A temporary folder holding an inventory of one lab host (no options)
/// and `matrix.toml`: (folder, inventory, matrix).
fn one_host_inputs(
    lab: &Lab,
    h: &LabHost,
    matrix_text: &str,
) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let inv = write(
        tmp.path(),
        "inventory.toml",
        &inventory(&lab.inv, &[(h, "")], ""),
    );
    let matrix = write(tmp.path(), "matrix.toml", matrix_text);
    (tmp, inv, matrix)
}

/// A sweep of `matrix_text` on the first two lab hosts, in the background.
struct Background<'a> {
    tmp: tempfile::TempDir,
    hosts: Vec<(&'a LabHost, &'a str)>,
    out: PathBuf,
    log: PathBuf,
    child: std::process::Child,
}

fn background_sweep<'a>(lab: &'a Lab, matrix_text: &str) -> Background<'a> {
    let tmp = tempfile::tempdir().expect("tempdir");
    let hosts: Vec<(&LabHost, &str)> = lab.inv.hosts.iter().take(2).map(|h| (h, "")).collect();
    let inv = write(
        tmp.path(),
        "inventory.toml",
        &inventory(&lab.inv, &hosts, ""),
    );
    let matrix = write(tmp.path(), "matrix.toml", matrix_text);
    let out = tmp.path().join("results");
    let log = tmp.path().join("stderr.log");
    let child = spawn_run(&inv, &matrix, &out, &log);
    Background {
        tmp,
        hosts,
        out,
        log,
        child,
    }
}

/// Four 3-second select-only cells on each of the first two lab hosts, in
/// the background: the sweep the fault tests disturb.
fn four_cells_on_two_hosts<'a>(lab: &'a Lab, name: &str) -> Background<'a> {
    background_sweep(
        lab,
        &format!(
            "name = \"{name}\"\nrepeats = 4\n[[filesystem]]\nname = \"ext4\"\ntype = \"ext4\"\n\
             [[workload]]\nname = \"sel\"\nbuiltin = \"select-only\"\nscale = 1\nclients = [1]\nduration = \"3s\"\n"
        ),
    )
}

/// [`four_cells_on_two_hosts`], once the second host's progress shows
/// `marker` (`<host>: <marker>`): the moment a fault test disturbs it.
fn second_host_reached<'a>(
    lab: &'a Lab,
    name: &str,
    marker: &str,
) -> (Background<'a>, LabHost, LabHost) {
    let mut bg = four_cells_on_two_hosts(lab, name);
    let (first, second) = (bg.hosts[0].0.clone(), bg.hosts[1].0.clone());
    let want = format!("{}: {marker}", second.name);
    bg.wait_until(
        Duration::from_secs(180),
        &format!("the second host never showed {want:?}"),
        |text| text.contains(&want).then_some(()),
    );
    (bg, first, second)
}

/// After a fault on the second host of [`second_host_reached`]: the first
/// finished its four cells, the second did not.  The bundle and its results.
fn only_the_first_host_finished(
    out: &Path,
    first: &LabHost,
    second: &LabHost,
) -> (PathBuf, Vec<Value>) {
    let bundle = bundle_in(out);
    let rs = results(&bundle);
    assert_eq!(
        count(&rs, &first.name, "done"),
        4,
        "the other host finishes: {rs:?}"
    );
    assert!(count(&rs, &second.name, "done") < 4, "{rs:?}");
    (bundle, rs)
}

/// How many of `host`'s cells in `rs` ended in `state`.
fn count(rs: &[Value], host: &str, state: &str) -> usize {
    rs.iter()
        .filter(|r| r["params"]["host"] == host && r["status"]["state"] == state)
        .count()
}

impl Background<'_> {
    /// Wait (at most `limit`) for fsmatrix to end; its exit status.
    fn wait_end(&mut self, limit: Duration) -> std::process::ExitStatus {
        let t0 = Instant::now();
        loop {
            if let Some(s) = self.child.try_wait().expect("try_wait") {
                return s;
            }
            assert!(
                t0.elapsed() < limit,
                "the sweep did not end within {limit:?}:\n{}",
                std::fs::read_to_string(&self.log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Poll until `ready(progress log)` gives a value, within `limit`, while
    /// fsmatrix is still running; then wait 2 s more (mid-cell).
    fn wait_until<T>(
        &mut self,
        limit: Duration,
        what: &str,
        mut ready: impl FnMut(&str) -> Option<T>,
    ) -> T {
        let t0 = Instant::now();
        loop {
            let text = std::fs::read_to_string(&self.log).unwrap_or_default();
            if let Some(v) = ready(&text) {
                std::thread::sleep(Duration::from_secs(2));
                return v;
            }
            assert!(t0.elapsed() < limit, "{what}:\n{text}");
            assert!(
                self.child.try_wait().expect("try_wait").is_none(),
                "fsmatrix ended early:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// The lab's key and known_hosts, named as `resume` and `run --from` need
/// them: a bundle's recorded paths are used only when the user names them.
fn lab_paths(bundle: &Path) -> Vec<std::ffi::OsString> {
    let dir = support::lab_dir();
    let mut v: Vec<std::ffi::OsString> = vec![
        "--identity-file".into(),
        dir.join("id_ed25519").into(),
        "--known-hosts".into(),
        dir.join("known_hosts").into(),
    ];
    v.extend(support::bundle_devices(bundle));
    v
}

/// `fsmatrix resume` ends with every cell run (exit 0) and a bundle that
/// verifies.
fn resume_completes(bundle: &Path) {
    let o = fsmatrix()
        .arg("resume")
        .arg(bundle)
        .args(lab_paths(bundle))
        .output()
        .expect("resume");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_verifies(bundle);
}

/// The one bundle folder under `out`.
fn bundle_in(out: &Path) -> PathBuf {
    let mut v: Vec<PathBuf> = std::fs::read_dir(out)
        .expect("read the output folder")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(v.len(), 1, "exactly one bundle in {}: {v:?}", out.display());
    v.remove(0)
}

fn results(bundle: &Path) -> Vec<Value> {
    std::fs::read_to_string(bundle.join("data/results.jsonl"))
        .expect("results.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a results line is JSON"))
        .collect()
}

fn assert_verifies(bundle: &Path) {
    let v = fsmatrix()
        .arg("verify")
        .arg(bundle)
        .output()
        .expect("verify");
    assert!(
        v.status.success(),
        "fsmatrix verify failed:\n{}{}",
        String::from_utf8_lossy(&v.stdout),
        String::from_utf8_lossy(&v.stderr)
    );
    let s = Command::new("sha256sum")
        .args(["--strict", "--quiet", "-c", "manifest-sha256.txt"])
        .current_dir(bundle)
        .output()
        .expect("sha256sum");
    assert!(
        s.status.success(),
        "sha256sum -c failed:\n{}{}",
        String::from_utf8_lossy(&s.stdout),
        String::from_utf8_lossy(&s.stderr)
    );
}

fn first_mib_sha(inv: &LabInventory, h: &LabHost) -> String {
    ssh_ok(
        inv,
        h,
        "dd if=\"$1\" bs=1048576 count=1 2>/dev/null | sha256sum",
        &[&h.device],
    )
}

/// The acceptance sweep: 32 cells per host; 4-second runs (progress every
/// second) keep it the suite's longest test without being its whole time.
#[test]
fn sweep_on_every_lab_host_verifies_and_leaves_hosts_clean() {
    let lab = Lab::standing_or_up(3);
    let tmp = tempfile::tempdir().expect("tempdir");
    let hosts: Vec<(&LabHost, &str)> = lab.inv.hosts.iter().map(|h| (h, "")).collect();
    let inv = write(
        tmp.path(),
        "inventory.toml",
        &inventory(&lab.inv, &hosts, ""),
    );
    let matrix = write(
        tmp.path(),
        "matrix.toml",
        r#"name = "acceptance"
repeats = 2
progress = true
[postgres]
shared_buffers = "64MB"
max_connections = 20
[[filesystem]]
name = "ext4"
type = "ext4"
mount_options = ["noatime"]
[[filesystem]]
name = "xfs"
type = "xfs"
[[filesystem]]
name = "btrfs"
type = "btrfs"
mount_options = ["compress=zstd"]
[[filesystem]]
name = "zfs"
type = "zfs"
properties = { compression = "on", atime = "off" }
postgres = { full_page_writes = "off" }
[[workload]]
name = "tpcb"
builtin = "tpcb-like"
scale = 1
clients = [1, 4]
duration = "4s"
[[workload]]
name = "select"
builtin = "select-only"
scale = 1
clients = [1, 4]
duration = "4s"
"#,
    );
    let out = tmp.path().join("results");
    let o = run(&inv, &matrix, &out);
    assert_eq!(o.status.code(), Some(0), "every cell should succeed");
    let bundle = bundle_in(&out);
    assert_verifies(&bundle);
    let rs = results(&bundle);
    assert_eq!(
        rs.len(),
        lab.inv.hosts.len() * 32,
        "4 fs × 2 workloads × 2 clients × 2 repeats per host"
    );
    for r in &rs {
        let id = r["cell_id"].as_str().expect("cell_id");
        assert_eq!(r["status"]["state"], "done", "cell {id}: {r}");
        // The parsed tps is exactly the number pgbench printed.
        let raw = std::fs::read_to_string(bundle.join(format!("data/cells/{id}/run.out")))
            .expect("run.out");
        let parsed: Value = serde_json::from_str(
            &std::fs::read_to_string(bundle.join(format!("data/cells/{id}/parsed.json")))
                .expect("parsed.json"),
        )
        .expect("parsed.json is JSON");
        let text = parsed["summary"]["tps"]["text"].as_str().expect("tps text");
        assert!(
            raw.contains(&format!("tps = {text} (")),
            "cell {id}: {text} not in run.out"
        );
        let tps = r["status"]["run"]["tps"].as_f64().expect("tps");
        assert_eq!(
            tps,
            text.parse::<f64>().expect("tps text is a number"),
            "cell {id}"
        );
        assert!(tps > 0.0);
        // Effective settings recorded.
        let fs = r["params"]["fs_type"].as_str().expect("fs_type");
        let opts = r["fs_settings"]["mount_options"].as_str().unwrap_or("");
        match fs {
            "ext4" => assert!(
                opts.split(',').any(|o| o == "noatime"),
                "ext4 effective options: {opts}"
            ),
            "btrfs" => {
                assert!(
                    opts.contains("compress=zstd"),
                    "btrfs effective options: {opts}"
                );
                // Its own accounting is recorded (issue 40): the compressed
                // extents, below du's uncompressed st_blocks.
                let used = r["sizes"]["btrfs_used_bytes"].as_u64().unwrap_or(0);
                let du = r["sizes"]["du_on_disk_bytes"].as_u64().unwrap_or(0);
                assert!(
                    used > (1 << 20) && used < du,
                    "btrfs used {used}, du {du}: {r}"
                );
                assert!(
                    r["sizes"]["btrfs_global_reserve_bytes"].as_u64().is_some(),
                    "{r}"
                );
            }
            "zfs" => {
                assert_eq!(
                    r["fs_settings"]["zfs_properties"]["compression"], "on",
                    "{r}"
                );
                let ratio = r["sizes"]["zfs_compressratio"]
                    .as_f64()
                    .expect("compressratio recorded");
                assert!(ratio >= 1.0, "compressratio {ratio}");
                // zfs-fuse has no `zpool sync`: the sizes forced a txg
                // commit with a property set (a sync task), and ZFS's own
                // accounting is recorded.
                assert_eq!(r["sizes"]["flush_method"], "txg-sync-task", "{r}");
                assert!(r["sizes"]["flush_wait_s"].as_f64().is_some(), "{r}");
                assert!(
                    r["sizes"]["zfs_used_bytes"].as_u64().unwrap_or(0) > 0,
                    "{r}"
                );
            }
            _ => assert!(
                !opts.is_empty(),
                "{fs}: no effective mount options recorded"
            ),
        }
        assert!(
            r["sizes"]["du_on_disk_bytes"].as_u64().unwrap_or(0) > 0,
            "cell {id}: du recorded"
        );
        let flush = if fs == "btrfs" { "btrfs-sync" } else { "sync" };
        if fs != "zfs" {
            assert_eq!(r["sizes"]["flush_method"], flush, "cell {id}: {r}");
        }
        for f in ["run.err", "pgstats.json", "progress.csv", "cell.json"] {
            assert!(
                bundle.join(format!("data/cells/{id}/{f}")).is_file(),
                "cell {id}: {f}"
            );
        }
    }
    let csv = std::fs::read_to_string(bundle.join("data/results.csv")).expect("results.csv");
    assert_eq!(csv.lines().count(), rs.len() + 1);
    for h in &lab.inv.hosts {
        assert!(bundle
            .join(format!("data/hosts/{}/check.json", h.name))
            .is_file());
        assert_clean(&lab.inv, h);
    }
    // The terminal gets a summary that fits 100 columns and the paths of
    // the full reports, written next to the bundle (not in the bag).
    let stdout = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(stdout.lines().all(|l| l.chars().count() <= 100), "{stdout}");
    assert!(stdout.contains("on lab1:"), "{stdout}");
    // "Smallest" beside the verdicts, btrfs read as btrfs counts it.
    let words = stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(words.contains("on lab1, on disk: "), "{stdout}");
    assert!(words.contains("(btrfs used)"), "{stdout}");
    let path_after = |label: &str| {
        stdout
            .lines()
            .find_map(|l| l.strip_prefix(label))
            .map(PathBuf::from)
            .unwrap_or_else(|| panic!("no `{label}` line: {stdout}"))
    };
    let md = path_after("report: ");
    let html = path_after("report (HTML): ");
    assert_eq!(md.parent(), bundle.parent(), "{}", md.display());
    let full = std::fs::read_to_string(&md).expect("the Markdown report");
    assert!(full.contains("| lab1 | zfs |"), "the full report: {full}");
    let html = std::fs::read_to_string(&html).expect("the HTML report");
    assert!(html.contains("<svg"));
    // What was compared (issue 27): the system table names each host's
    // ZFS for what it is on the lab, zfs-fuse, and the variant table the
    // matrix's properties and settings.
    let system = &html[html
        .find("<h2>System under test</h2>")
        .expect("the system table")..];
    let system = &system[..system.find("</table>").expect("its end")];
    for h in &lab.inv.hosts {
        assert!(system.contains(&format!("<td>{}</td>", h.name)), "{system}");
    }
    assert!(system.contains("zfs: zfs-fuse"), "{system}");
    assert!(system.contains("PostgreSQL"), "{system}");
    let variants = &html[html
        .find("<h2>Filesystem variants</h2>")
        .expect("the variant table")..];
    assert!(variants.contains("compress=zstd"), "{variants}");
    assert!(variants.contains("atime=off, compression=on"), "{variants}");
    assert!(variants.contains("full_page_writes=off"), "{variants}");
}

/// `fsmatrix run … 2>&1 | head -1` (issue 28): the reader of stdout and
/// stderr goes away at once.  The sweep runs to its end anyway: exit 0 (a
/// panic on the first failed write would be 101 and leave the host set up),
/// a bundle that verifies, its reports written, the host clean.
#[test]
fn a_sweep_whose_reader_went_away_ends_normally_and_clean() {
    let lab = Lab::hold(&["lab3"]);
    let h = &lab.inv.hosts[0];
    let (tmp, inv, matrix) = one_host_inputs(
        &lab,
        h,
        "name = \"nopipe\"\n[[filesystem]]\nname = \"ext4\"\ntype = \"ext4\"\n\
         [[workload]]\nname = \"sel\"\nbuiltin = \"select-only\"\nscale = 1\nclients = [1]\nduration = \"2s\"\n",
    );
    let out = tmp.path().join("results");
    let t0 = Instant::now();
    let mut child = run_command(&inv, &matrix, &out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn fsmatrix run");
    // Both readers gone before anything is read.
    drop(child.stdout.take());
    drop(child.stderr.take());
    let limit = Duration::from_secs(300);
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the sweep still ran after {limit:?}; killed");
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    eprintln!(
        "fsmatrix run (no reader) -> {status:?} in {:.1} s",
        t0.elapsed().as_secs_f64()
    );
    assert_eq!(status.code(), Some(0), "the sweep ended by itself, exit 0");
    let bundle = bundle_in(&out);
    assert_verifies(&bundle);
    let rs = results(&bundle);
    assert_eq!(rs.len(), 1);
    assert_eq!(rs[0]["status"]["state"], "done", "{}", rs[0]);
    let name = bundle.file_name().unwrap().to_string_lossy().to_string();
    assert!(
        out.join(format!("{name}.report.md")).is_file(),
        "the report was written"
    );
    assert_clean(&lab.inv, h);
}

#[test]
fn unreachable_host_is_recorded_as_not_run_while_others_finish() {
    let lab = Lab::hold(&["lab2", "lab3"]);
    let tmp = tempfile::tempdir().expect("tempdir");
    let (a, b) = (&lab.inv.hosts[0], &lab.inv.hosts[1]);
    // Port 1 on a live lab host: refused at once, as with sshd stopped.
    let inv = write(
        tmp.path(),
        "inventory.toml",
        &inventory(&lab.inv, &[(a, ""), (b, "port = 1")], ""),
    );
    let matrix = write(
        tmp.path(),
        "matrix.toml",
        "name = \"fault\"\n[[filesystem]]\nname = \"ext4\"\ntype = \"ext4\"\n[[workload]]\nname = \"sel\"\nbuiltin = \"select-only\"\nscale = 1\nclients = [1]\nduration = \"3s\"\n",
    );
    let out = tmp.path().join("results");
    let o = run(&inv, &matrix, &out);
    assert_eq!(o.status.code(), Some(1), "some cells did not run");
    let bundle = bundle_in(&out);
    assert_verifies(&bundle);
    let rs = results(&bundle);
    assert_eq!(rs.len(), 2);
    for r in rs {
        if r["params"]["host"] == a.name.as_str() {
            assert_eq!(r["status"]["state"], "done", "{r}");
        } else {
            assert_eq!(r["status"]["state"], "not_run", "{r}");
            let why = r["status"]["reason"].as_str().unwrap_or("");
            assert!(
                why.contains("connect") && why.contains(":1"),
                "reason names the failed connection: {why}"
            );
        }
    }
    assert_clean(&lab.inv, a);
}

#[test]
fn guard_refuses_foreign_signature_unless_consented_and_a_mounted_device() {
    let lab = Lab::hold(&["lab2"]);
    let tmp = tempfile::tempdir().expect("tempdir");
    let h = &lab.inv.hosts[0];
    // Someone else's filesystem on the device.
    ssh_ok(
        &lab.inv,
        h,
        "mkfs.ext4 -q -F -L precious \"$1\"",
        &[&h.device],
    );
    let before = first_mib_sha(&lab.inv, h);
    let inv = write(
        tmp.path(),
        "inventory.toml",
        &inventory(&lab.inv, &[(h, "")], ""),
    );
    let matrix = write(
        tmp.path(),
        "matrix.toml",
        "name = \"guard\"\n[[filesystem]]\nname = \"xfs\"\ntype = \"xfs\"\n[[workload]]\nname = \"sel\"\nbuiltin = \"select-only\"\nscale = 1\nclients = [1]\nduration = \"2s\"\n",
    );
    let c = fsmatrix()
        .args(["check", "-i"])
        .arg(&inv)
        .output()
        .expect("check");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&c.stdout),
        String::from_utf8_lossy(&c.stderr)
    );
    assert_eq!(c.status.code(), Some(1), "check says not ready: {text}");
    assert!(
        text.contains("refused") && text.contains("foreign"),
        "{text}"
    );

    let out = tmp.path().join("r1");
    let o = run(&inv, &matrix, &out);
    assert_eq!(o.status.code(), Some(2), "nothing ran");
    let rs = results(&bundle_in(&out));
    assert_eq!(rs[0]["status"]["state"], "not_run");
    assert!(
        rs[0]["status"]["reason"]
            .as_str()
            .unwrap_or("")
            .contains("refused"),
        "{}",
        rs[0]
    );
    assert_eq!(
        first_mib_sha(&lab.inv, h),
        before,
        "the refused device was not written"
    );

    // A mounted device is refused too, and stays as it was.
    ssh_ok(
        &lab.inv,
        h,
        "mkdir -p /mnt/guardtest && mount \"$1\" /mnt/guardtest",
        &[&h.device],
    );
    let c = fsmatrix()
        .args(["check", "-i"])
        .arg(&inv)
        .output()
        .expect("check");
    let mounted_text = String::from_utf8_lossy(&c.stdout).to_string();
    ssh_ok(&lab.inv, h, "umount /mnt/guardtest", &[]);
    assert_eq!(c.status.code(), Some(1), "{mounted_text}");
    assert!(mounted_text.contains("mounted"), "{mounted_text}");

    // With the owner's consent for this host and device, the sweep proceeds.
    let consent = format!("consent_foreign = [{:?}]", h.device);
    let inv2 = write(
        tmp.path(),
        "inventory2.toml",
        &inventory(&lab.inv, &[(h, &consent)], ""),
    );
    let out = tmp.path().join("r2");
    let o = run(&inv2, &matrix, &out);
    assert_eq!(o.status.code(), Some(0), "consented device is formatted");
    assert_clean(&lab.inv, h);
}

#[test]
fn unknown_or_changed_host_key_is_refused_and_nothing_runs() {
    let lab = Lab::hold(&["lab3"]);
    let tmp = tempfile::tempdir().expect("tempdir");
    let h = &lab.inv.hosts[0];
    let real = std::fs::read_to_string(&lab.inv.known_hosts).expect("lab known_hosts");
    // Changed: the host's line carries another key.
    let key = tmp.path().join("other");
    let k = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(&key)
        .status()
        .expect("ssh-keygen");
    assert!(k.success());
    let other = std::fs::read_to_string(key.with_extension("pub")).expect("pub key");
    let other: Vec<&str> = other.split_whitespace().collect();
    let changed: String = real
        .lines()
        .map(|l| {
            if l.split_whitespace().next() == Some(h.address.as_str()) {
                format!("{} {} {}\n", h.address, other[0], other[1])
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    let unknown: String = real
        .lines()
        .filter(|l| l.split_whitespace().next() != Some(h.address.as_str()))
        .map(|l| format!("{l}\n"))
        .collect();
    // A work_dir no one else uses: proof that nothing ran is its absence.
    let marker = "/var/tmp/fsmatrix-hostkey-test";
    ssh_ok(&lab.inv, h, "rm -rf \"$1\"", &[marker]);
    for (what, text) in [("changed", changed), ("unknown", unknown)] {
        let kh = write(tmp.path(), &format!("kh-{what}"), &text);
        let inv_text = inventory(&lab.inv, &[(h, "")], "")
            .replace(
                &format!("known_hosts = {:?}", lab.inv.known_hosts),
                &format!("known_hosts = {kh:?}"),
            )
            .replace(
                "work_dir = \"/var/tmp/fsmatrix\"",
                &format!("work_dir = {marker:?}"),
            );
        let inv = write(tmp.path(), &format!("inv-{what}.toml"), &inv_text);
        let c = fsmatrix()
            .args(["check", "-i"])
            .arg(&inv)
            .output()
            .expect("check");
        let out = format!(
            "{}{}",
            String::from_utf8_lossy(&c.stdout),
            String::from_utf8_lossy(&c.stderr)
        );
        assert_eq!(c.status.code(), Some(1), "{what} key: {out}");
        assert!(
            out.contains("SHA256:") && out.contains(&h.name),
            "{what} key: fingerprint and host named: {out}"
        );
        let o = ssh(
            &lab.inv,
            h,
            "test -e \"$1\" && echo present || echo absent",
            &[marker],
        );
        assert_eq!(
            String::from_utf8_lossy(&o.stdout).trim(),
            "absent",
            "{what} key: nothing ran on the host"
        );
    }
}

#[test]
fn sigint_mid_sweep_tears_down_and_closes_an_incomplete_bundle() {
    let lab = Lab::hold(&["lab2", "lab3"]);
    let mut bg = background_sweep(
        &lab,
        "name = \"sigint\"\nrepeats = 3\n[[filesystem]]\nname = \"ext4\"\ntype = \"ext4\"\n[[workload]]\nname = \"tpcb\"\nbuiltin = \"tpcb-like\"\nscale = 1\nclients = [2]\nduration = \"20s\"\n",
    );
    // Wait until a measured run is under way on some host (bounded).
    bg.wait_until(Duration::from_secs(120), "no run started", |text| {
        text.contains(": run ext4").then_some(())
    });
    let (child, log, out, hosts) = (&mut bg.child, &bg.log, &bg.out, &bg.hosts);
    let t1 = Instant::now();
    let status = support::interrupt_and_wait(child, Duration::from_secs(180));
    let text = std::fs::read_to_string(log).unwrap_or_default();
    eprintln!("{text}");
    assert_eq!(status.code(), Some(1), "interrupted sweep exits 1");
    assert!(
        t1.elapsed() < Duration::from_secs(60),
        "stopped promptly: {:?}",
        t1.elapsed()
    );
    let bundle = bundle_in(out);
    assert_verifies(&bundle);
    let info = std::fs::read_to_string(bundle.join("bag-info.txt")).expect("bag-info");
    assert!(info.contains("Sweep-Status: incomplete"), "{info}");
    let rs = results(&bundle);
    assert_eq!(rs.len(), 6, "every planned cell is recorded, run or not");
    assert!(
        rs.iter().any(|r| r["status"]["state"] != "done"),
        "some cells were cut short"
    );
    for (h, _) in hosts {
        assert_clean(&lab.inv, h);
    }
}

/// `journal.jsonl`'s finished cells: cell id → (bundle-relative file → sha256).
fn journal_done(
    bundle: &Path,
) -> std::collections::BTreeMap<String, serde_json::Map<String, Value>> {
    std::fs::read_to_string(bundle.join("journal.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["event"] == "cell_done")
        .map(|v| {
            (
                v["cell"].as_str().unwrap_or_default().to_string(),
                v["files"].as_object().cloned().unwrap_or_default(),
            )
        })
        .collect()
}

fn sha256_of(path: &Path) -> String {
    let o = Command::new("sha256sum")
        .arg(path)
        .output()
        .expect("sha256sum");
    String::from_utf8_lossy(&o.stdout)
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string()
}

/// Whether the 95% CI half-width of the mean of `xs` is within `target` of
/// the mean (Student t; 3 or 4 values, as the resume test needs).
fn ci_within(xs: &[f64], target: f64) -> bool {
    let t = match xs.len() {
        3 => 4.302652729911275,
        4 => 3.182446305284263,
        _ => return false,
    };
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let sd = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
    t * sd / n.sqrt() / mean <= target
}

#[test]
fn sigkill_mid_cell_then_resume_finishes_the_bundle() {
    let lab = Lab::hold(&["lab2", "lab3"]);
    let mut bg = background_sweep(
        &lab,
        // Adaptive repeats: 3 always run; 4 and 5 only while the 95% CI is
        // wider than ±20% of the mean (select-only: CPU-bound and steady, so
        // usually met at 3).  The resumed run must decide on the repeats kept
        // from before the kill as well as its own.
        "name = \"resume\"\nrepeats = { min = 3, max = 5, target_ci = \"20%\" }\n[[filesystem]]\nname = \"ext4\"\ntype = \"ext4\"\n[[workload]]\nname = \"sel\"\nbuiltin = \"select-only\"\nscale = 1\nclients = [1]\nduration = \"6s\"\n",
    );
    // Kill it (SIGKILL: no teardown, no close) in the middle of a cell, once
    // at least one cell is finished.
    let out = bg.out.clone();
    let bundle = bg.wait_until(Duration::from_secs(180), "no cell finished", |text| {
        let b = std::fs::read_dir(&out)
            .ok()
            .and_then(|mut d| d.next())
            .and_then(|e| e.ok())
            .map(|e| e.path())?;
        let done = journal_done(&b).len();
        let started = text.matches(": run ext4").count();
        (done >= 1 && started > done).then_some(b)
    });
    let (child, hosts) = (&mut bg.child, &bg.hosts);
    child.kill().expect("SIGKILL fsmatrix");
    let _ = child.wait();
    let before = journal_done(&bundle);
    let n_before = before.len();
    assert!(
        (1..10).contains(&n_before),
        "killed mid-sweep: {n_before} cells done"
    );
    let mut sums = Vec::new();
    for files in before.values() {
        for (rel, sum) in files {
            sums.push((rel.clone(), sum.as_str().unwrap_or_default().to_string()));
        }
    }

    let o = fsmatrix()
        .arg("resume")
        .arg(&bundle)
        .args(lab_paths(&bundle))
        .output()
        .expect("resume");
    eprintln!(
        "resume -> {:?}\n{}{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(o.status.code(), Some(0), "resume finishes every cell");
    assert_verifies(&bundle);
    let info = std::fs::read_to_string(bundle.join("bag-info.txt")).expect("bag-info");
    assert!(info.contains("Sweep-Status: complete"), "{info}");
    let rs = results(&bundle);
    let mut ids: Vec<&str> = rs
        .iter()
        .map(|r| r["cell_id"].as_str().unwrap_or_default())
        .collect();
    ids.sort();
    let n = ids.len();
    ids.dedup();
    assert_eq!((n, ids.len()), (10, 10), "every cell exactly once");
    // Every decision follows the rule on all counted repeats of the host,
    // those kept from before the kill included (computed here on the
    // recorded tps; t quantiles from scipy.stats.t.ppf(0.975, df)).
    for (h, _) in hosts {
        let mut mine: Vec<&Value> = rs
            .iter()
            .filter(|r| r["params"]["host"] == h.name)
            .collect();
        mine.sort_by_key(|r| r["params"]["repeat"].as_u64());
        let mut tps: Vec<f64> = Vec::new();
        for r in mine {
            let repeat = r["params"]["repeat"].as_u64().unwrap_or(0);
            let state = r["status"]["state"].as_str().unwrap_or_default();
            let want = if repeat <= 3 || !ci_within(&tps, 0.20) {
                "done"
            } else {
                "not_needed"
            };
            assert_eq!(state, want, "repeat {repeat} after {tps:?}: {r}");
            if state == "not_needed" {
                let why = r["status"]["reason"].as_str().unwrap_or_default();
                assert!(
                    why.contains(&format!("the {} counted repeats", tps.len()))
                        && why.contains("within the target ±20%"),
                    "{why}"
                );
            } else {
                tps.push(
                    r["status"]["run"]["tps"]
                        .as_f64()
                        .expect("a done cell has tps"),
                );
            }
        }
    }
    for (rel, sum) in sums {
        assert_eq!(
            sha256_of(&bundle.join(&rel)),
            sum,
            "{rel} kept its original bytes"
        );
    }
    for (h, _) in hosts {
        assert_clean(&lab.inv, h);
    }
    drop(bg.tmp); // the inputs and bundle live until here
}

#[test]
fn run_from_a_bundle_repeats_the_same_sweep_and_the_reports_compare() {
    let lab = Lab::hold(&["lab3"]);
    let tmp = tempfile::tempdir().expect("tempdir");
    let h = &lab.inv.hosts[0];
    // The key and known_hosts by paths relative to the inventory: a re-run
    // from another folder must still find them beside the original inventory.
    let keys = tmp.path().join("keys");
    std::fs::create_dir(&keys).expect("mkdir keys");
    std::fs::copy(&lab.inv.identity_file, keys.join("id")).expect("copy the lab key");
    std::fs::copy(&lab.inv.known_hosts, keys.join("known_hosts")).expect("copy known_hosts");
    let text = inventory(&lab.inv, &[(h, "")], "")
        .replace(
            &format!("identity_file = {:?}", lab.inv.identity_file),
            "identity_file = \"keys/id\"",
        )
        .replace(
            &format!("known_hosts = {:?}", lab.inv.known_hosts),
            "known_hosts = \"keys/known_hosts\"",
        );
    assert!(
        text.contains("\"keys/id\"") && text.contains("\"keys/known_hosts\""),
        "{text}"
    );
    let inv = write(tmp.path(), "inventory.toml", &text);
    let matrix = write(
        tmp.path(),
        "matrix.toml",
        "name = \"again\"\nrepeats = 2\nwarmup = 2\n[[filesystem]]\nname = \"ext4\"\ntype = \"ext4\"\n[[filesystem]]\nname = \"xfs\"\ntype = \"xfs\"\n[[workload]]\nname = \"sel\"\nbuiltin = \"select-only\"\nscale = 1\nclients = [1]\nduration = \"3s\"\n",
    );
    let first = tmp.path().join("first");
    assert_eq!(run(&inv, &matrix, &first).status.code(), Some(0));
    let b1 = bundle_in(&first);
    // A bundle whose snapshots no longer re-plan its own cells (here: its
    // plan.json names another id) is refused before any host is touched.
    let drifted = tmp.path().join("drifted");
    let cp = Command::new("cp")
        .arg("-a")
        .arg(&b1)
        .arg(&drifted)
        .status()
        .expect("cp -a");
    assert!(cp.success());
    let plan_json = std::fs::read_to_string(drifted.join("data/plan.json")).expect("plan.json");
    let first_id = results(&b1)[0]["cell_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(plan_json.contains(&first_id), "{first_id} in plan.json");
    std::fs::write(
        drifted.join("data/plan.json"),
        plan_json.replace(&first_id, "0123456789abcdef"),
    )
    .expect("tamper plan.json");
    let journal = std::fs::read(drifted.join("journal.jsonl")).expect("journal");
    // The paths the bundle records, named as a re-run needs them.
    let named = [
        "--identity-file".into(),
        keys.join("id").into_os_string(),
        "--known-hosts".into(),
        keys.join("known_hosts").into_os_string(),
    ];
    for args in [
        vec!["resume"],
        vec!["run", "--out", "/nonexistent/never", "--from"],
    ] {
        let o = fsmatrix()
            .args(&args)
            .arg(&drifted)
            .args(&named)
            .args(support::bundle_devices(&drifted))
            .output()
            .expect("fsmatrix");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(
                "no longer plan the same cells as its plan.json (1 of 8 cells gone, 1 new)"
            ),
            "{args:?}: {err}"
        );
    }
    assert_eq!(
        std::fs::read(drifted.join("journal.jsonl")).expect("journal"),
        journal,
        "the refused bundle is unchanged"
    );
    // The inputs on disk change afterwards: the re-run uses the bundle's snapshots.
    std::fs::write(&matrix, "this is no longer a matrix").expect("overwrite");
    std::fs::remove_file(&inv).expect("remove inventory");
    let second = tmp.path().join("second");
    let o = fsmatrix()
        .current_dir("/")
        .args(["run", "--from"])
        .arg(&b1)
        .arg("--out")
        .arg(&second)
        .args(&named)
        .args(support::bundle_devices(&b1))
        .output()
        .expect("run --from");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let b2 = bundle_in(&second);
    assert_verifies(&b2);
    let info = std::fs::read_to_string(b2.join("bag-info.txt")).expect("bag-info");
    let name = b1.file_name().expect("name").to_string_lossy().to_string();
    assert!(info.contains(&format!("Rerun-Of: {name}")), "{info}");
    let ids = |b: &Path| {
        let mut v: Vec<String> = results(b)
            .iter()
            .map(|r| r["cell_id"].as_str().unwrap_or_default().to_string())
            .collect();
        v.sort();
        v
    };
    assert_eq!(ids(&b1), ids(&b2), "the very same cells");
    // Both bundles side by side in one report.
    let r = fsmatrix()
        .arg("report")
        .arg(&b1)
        .arg(&b2)
        .output()
        .expect("report");
    let text = String::from_utf8_lossy(&r.stdout);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert!(text.contains(&h.name) && text.contains("xfs"), "{text}");
    // Side by side: each variant of the re-run against itself in the original.
    let r = fsmatrix()
        .arg("report")
        .arg(&b1)
        .arg(&b2)
        .arg("--by-bundle")
        .output()
        .expect("report --by-bundle");
    let side = String::from_utf8_lossy(&r.stdout);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let n2 = b2.file_name().expect("name").to_string_lossy().to_string();
    for fs in ["ext4", "xfs"] {
        assert!(
            side.contains(&format!("| {} | {fs} @ {name} |", h.name)),
            "{side}"
        );
        assert!(
            side.contains(&format!("| {} | {fs} @ {n2} |", h.name)),
            "{side}"
        );
    }
    assert!(side.contains("Bundles side by side"), "{side}");
    // warmup = 2: two warm-up runs per variant, kept and numbered, not counted.
    let warm: Vec<(u64, bool)> = results(&b1)
        .iter()
        .filter(|r| r["params"]["filesystem"] == "xfs")
        .map(|r| {
            (
                r["params"]["repeat"].as_u64().unwrap_or(0),
                r["params"]["warmup"].as_bool().unwrap_or(false),
            )
        })
        .collect();
    assert_eq!(warm, [(1, true), (2, true), (1, false), (2, false)]);
    assert!(text.contains("8 warm-up runs not counted"), "{text}");
    assert_clean(&lab.inv, h);
}

/// One `become` method, as a row of [`become_runs_a_sweep_as_a_non_root_user`].
struct BecomeRow {
    /// The inventory's `become`.
    method: &'static str,
    /// The lab's user whom the method lets act as root, and its uid.
    user: &'static str,
    uid: &'static str,
    /// The filesystems swept through it.
    filesystems: &'static [&'static str],
    /// A host entry `check` refuses, and the words of its refusal.
    refused: &'static str,
    refusal: &'static [&'static str],
}

/// `become = "sudo"`: the lab's non-root user `fsmx` (passwordless sudo on
/// every lab host) runs a real sweep, ZFS included; without `become` the
/// check says the host is not usable and why.
#[test]
fn become_sudo_runs_a_sweep_as_a_non_root_user() {
    become_runs_a_sweep_as_a_non_root_user(
        "lab2",
        &BecomeRow {
            method: "sudo",
            user: "fsmx",
            uid: "64123",
            filesystems: &["ext4", "zfs"],
            refused: "user = \"fsmx\"\n",
            refusal: &[
                "the scripts run as `fsmx` (uid 64123), not root",
                "set become = \"sudo\"",
            ],
        },
    );
}

/// `become = "doas"`: the lab's doas user `fsmxdoas` (`permit nopass` in its
/// host's doas.conf, no sudo) runs a real sweep as root through `doas -n`;
/// `fsmx`, which has no doas.conf line, is refused by `check` with the fix.
#[test]
fn become_doas_runs_a_sweep_as_a_non_root_user() {
    become_runs_a_sweep_as_a_non_root_user(
        "lab3",
        &BecomeRow {
            method: "doas",
            user: "fsmxdoas",
            uid: "64124",
            filesystems: &["ext4"],
            refused: "user = \"fsmx\"\nbecome = \"doas\"\n",
            refusal: &[
                "become = \"doas\": `doas -n true` fails for `fsmx` on this host",
                "add the line `permit nopass fsmx as root` to /etc/doas.conf",
            ],
        },
    );
}

/// The row's user passes `check` and runs a real sweep on `host` as root through
/// the method: every command and every upload went through it (the facts say uid 0,
/// the commands log shows the wrapper, the work folder and scripts are root's); the
/// refused entry fails `check` with the fix.
fn become_runs_a_sweep_as_a_non_root_user(host: &str, row: &BecomeRow) {
    let lab = Lab::hold(&[host]);
    let tmp = tempfile::tempdir().expect("tempdir");
    let h = &lab.inv.hosts[0];
    let who = ssh_ok(&lab.inv, h, &format!("id -u {}", row.user), &[]);
    assert_eq!(
        who.trim(),
        row.uid,
        "the lab host has its {} user",
        row.method
    );
    let mut m = format!("name = \"{}\"\n", row.method);
    for fs in row.filesystems {
        m.push_str(&format!(
            "[[filesystem]]\nname = \"{fs}\"\ntype = \"{fs}\"\n"
        ));
    }
    m.push_str("[[workload]]\nname = \"sel\"\nbuiltin = \"select-only\"\nscale = 1\nclients = [1]\nduration = \"3s\"\n");
    let matrix = write(tmp.path(), "matrix.toml", &m);
    // A work folder made by an earlier test as root is no proof: start without.
    ssh_ok(&lab.inv, h, "rm -rf /var/tmp/fsmatrix", &[]);
    let entry = format!("user = \"{}\"\nbecome = \"{}\"\n", row.user, row.method);
    let inv = write(
        tmp.path(),
        "become.toml",
        &inventory(&lab.inv, &[(h, &entry)], ""),
    );
    let (code, text) = support::check_with(&inv, &matrix);
    assert_eq!(code, Some(0), "{text}");
    let out = tmp.path().join("results");
    let o = run(&inv, &matrix, &out);
    assert_eq!(o.status.code(), Some(0));
    let bundle = bundle_in(&out);
    assert_verifies(&bundle);
    let rs = results(&bundle);
    assert_eq!(rs.len(), row.filesystems.len());
    assert!(rs.iter().all(|r| r["status"]["state"] == "done"), "{rs:?}");
    let facts: Value = serde_json::from_str(
        &std::fs::read_to_string(bundle.join(format!("data/hosts/{}/facts.json", h.name)))
            .expect("facts.json"),
    )
    .expect("facts.json is JSON");
    assert_eq!(
        facts["uid"], "0",
        "the scripts ran as root through {}",
        row.method
    );
    let sent = std::fs::read_to_string(bundle.join(format!("data/hosts/{}/commands.log", h.name)))
        .expect("commands.log");
    let commands: Vec<&str> = sent.lines().filter(|l| l.starts_with("$ ")).collect();
    assert!(!commands.is_empty(), "{sent}");
    let wrapper = format!("$ {} -n /bin/sh -c ", row.method);
    assert!(
        commands.iter().all(|l| l.starts_with(&wrapper)),
        "every command went through {}:\n{sent}",
        row.method
    );
    // Uploads went through it too: the work folder and scripts are root's.
    let owners = ssh_ok(
        &lab.inv,
        h,
        "stat -c %U /var/tmp/fsmatrix /var/tmp/fsmatrix/scripts-*/linux.sh | sort -u",
        &[],
    );
    assert_eq!(owners.trim(), "root");
    assert_clean(&lab.inv, h);

    let refused = write(
        tmp.path(),
        "refused.toml",
        &inventory(&lab.inv, &[(h, row.refused)], ""),
    );
    let (code, err) = support::check_with(&refused, &matrix);
    assert_eq!(code, Some(1), "{err}");
    for words in row.refusal {
        assert!(err.contains(words), "{words:?} in {err}");
    }
}

/// A command that times out under `become = "sudo"` runs as root; it must
/// not run on after the timeout (sudo relays the TERM, and the kill itself
/// runs through sudo).
#[test]
fn become_sudo_timeout_kills_the_root_command() {
    use fsmatrix::remote::{ExecOptions, ExitStatus, Remote, RemoteCommand, SshRemote, SshTarget};
    let lab = Lab::hold(&["lab2"]);
    let h = &lab.inv.hosts[0];
    let target = SshTarget {
        host_name: h.name.clone(),
        address: h.address.clone(),
        port: 22,
        user: "fsmx".into(),
        identity_files: vec![lab.inv.identity_file.clone()],
        known_hosts: lab.inv.known_hosts.clone(),
        connect_timeout: Duration::from_secs(10),
        become_: Some(fsmatrix::remote::Become::Sudo),
        jump: Vec::new(),
    };
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let status = rt.block_on(async {
        let remote = SshRemote::connect(&target).await.expect("connect as fsmx");
        let who = remote
            .exec(
                &RemoteCommand::raw("id -u"),
                ExecOptions::with_timeout(Duration::from_secs(20)),
            )
            .await
            .expect("id -u");
        assert_eq!(
            String::from_utf8_lossy(&who.stdout).trim(),
            "0",
            "through sudo"
        );
        let out = remote
            .exec(
                &RemoteCommand::raw("sleep 317"),
                ExecOptions::with_timeout(Duration::from_secs(2)),
            )
            .await
            .expect("exec");
        remote.disconnect().await;
        out.status
    });
    assert!(matches!(status, ExitStatus::TimedOut { .. }), "{status:?}");
    let left = ssh_ok(
        &lab.inv,
        h,
        "sleep 1; pgrep -f -x 'sleep 317' || echo none",
        &[],
    );
    assert_eq!(left.trim(), "none", "the timed-out root command still runs");
}

/// `plan --commands` is what a run sends: the same inventory and matrix,
/// planned and then run on two lab hosts (one as root, one through sudo),
/// give the same commands, line for line, as each host's
/// `hosts/<host>/commands.log` in the bundle.  A fresh work folder makes the
/// run upload its scripts, as the plan shows.
#[test]
fn plan_commands_equal_what_the_run_sent() {
    let lab = Lab::hold(&["lab2", "lab3"]);
    let tmp = tempfile::tempdir().expect("tempdir");
    let work = "/var/tmp/fsmatrix-commands-test";
    let extra = [
        format!("work_dir = {work:?}\n"),
        format!("work_dir = {work:?}\nuser = \"fsmx\"\nbecome = \"sudo\"\n"),
    ];
    let hosts: Vec<(&LabHost, &str)> = lab
        .inv
        .hosts
        .iter()
        .take(2)
        .zip(&extra)
        .map(|(h, e)| (h, e.as_str()))
        .collect();
    for (h, _) in &hosts {
        ssh_ok(&lab.inv, h, "rm -rf \"$1\"", &[work]);
    }
    let inv = write(
        tmp.path(),
        "inventory.toml",
        &inventory(&lab.inv, &hosts, ""),
    );
    let matrix = write(
        tmp.path(),
        "matrix.toml",
        "name = \"commands\"\n[postgres]\nshared_buffers = \"64MB\"\n\
         [[filesystem]]\nname = \"ext4\"\ntype = \"ext4\"\nmount_options = [\"noatime\"]\n\
         [[filesystem]]\nname = \"zfs\"\ntype = \"zfs\"\nproperties = { compression = \"on\" }\n\
         [[workload]]\nname = \"sel\"\nbuiltin = \"select-only\"\nscale = 1\nclients = [1]\nduration = \"2s\"\n",
    );
    let plan = fsmatrix()
        .args(["plan", "--commands", "-i"])
        .arg(&inv)
        .arg("-m")
        .arg(&matrix)
        .output()
        .expect("plan --commands");
    assert_eq!(plan.status.code(), Some(0));
    let planned = String::from_utf8_lossy(&plan.stdout).into_owned();
    let out = tmp.path().join("results");
    let o = run(&inv, &matrix, &out);
    assert_eq!(o.status.code(), Some(0));
    let bundle = bundle_in(&out);
    assert_verifies(&bundle);
    for (h, _) in &hosts {
        let section = planned
            .split(&format!("## {}\n", h.name))
            .nth(1)
            .and_then(|s| s.split("\n## ").next())
            .unwrap_or_else(|| panic!("no section for {}:\n{planned}", h.name));
        let sent =
            std::fs::read_to_string(bundle.join(format!("data/hosts/{}/commands.log", h.name)))
                .expect("commands.log");
        // The device's identity is the one value a live host answers
        // differently (the plan says so at its top): compared masked.
        let mask = |t: &str| -> Vec<String> {
            t.lines()
                .map(|l| match l.find("ident=") {
                    Some(i) => {
                        let end = l[i..].find('\'').map_or(l.len(), |e| i + e);
                        format!("{}ident=<device identity>{}", &l[..i], &l[end..])
                    }
                    None => l.to_string(),
                })
                .collect()
        };
        let (want, got) = (mask(section), mask(&sent));
        assert!(
            want.iter().any(|l| l.contains("ident=<device identity>")),
            "make-fs carries the device identity:\n{section}"
        );
        for (i, (w, g)) in want.iter().zip(&got).enumerate() {
            assert_eq!(w, g, "{}: line {} differs", h.name, i + 1);
        }
        assert_eq!(
            want.len(),
            got.len(),
            "{}: plan\n{section}\nsent\n{sent}",
            h.name
        );
        assert!(got.len() > 30, "{}: {} commands", h.name, got.len());
        assert_clean(&lab.inv, h);
    }
    // The sudo host's commands are shown as sudo runs them.
    let sudo_log = std::fs::read_to_string(
        bundle.join(format!("data/hosts/{}/commands.log", hosts[1].0.name)),
    )
    .expect("commands.log");
    assert!(
        sudo_log
            .lines()
            .all(|l| !l.starts_with("$ ") || l.starts_with("$ sudo -n /bin/sh -c ")),
        "{sudo_log}"
    );
}

/// Is lab host `h`'s sweep lock free right now (over plain SSH, as root)?
fn lock_is_free(lab: &Lab, h: &LabHost) -> bool {
    let o = ssh(
        &lab.inv,
        h,
        "[ ! -e /run/lock/fsmatrix/host.lock ] || flock -n /run/lock/fsmatrix/host.lock true",
        &[],
    );
    o.status.success()
}

fn wait_for(limit: Duration, what: &str, mut ok: impl FnMut() -> bool) -> Duration {
    let t0 = Instant::now();
    while !ok() {
        assert!(t0.elapsed() < limit, "{what} within {limit:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
    t0.elapsed()
}

#[test]
fn one_sweep_per_host_the_lock_dies_with_its_holder_and_a_fresh_run_cleans_up() {
    let lab = Lab::hold(&["lab3"]);
    let h = &lab.inv.hosts[0];
    let tmp = tempfile::tempdir().expect("tempdir");
    let matrix = |name: &str| {
        format!(
            "name = \"{name}\"\n[[filesystem]]\nname = \"ext4\"\ntype = \"ext4\"\n\
             [[workload]]\nname = \"sel\"\nbuiltin = \"select-only\"\nscale = 1\nclients = [1]\nduration = \"4s\"\nrepeats = 3\n"
        )
    };
    let inv_a = write(tmp.path(), "a.toml", &inventory(&lab.inv, &[(h, "")], ""));
    // The same machine in another inventory, with another work_dir: the
    // lock's place does not depend on it.
    let inv_b = write(
        tmp.path(),
        "b.toml",
        &inventory(
            &lab.inv,
            &[(h, "work_dir = \"/var/tmp/fsmatrix-other\"\n")],
            "",
        ),
    );
    let m_a = write(tmp.path(), "ma.toml", &matrix("first-sweep"));
    let m_b = write(tmp.path(), "mb.toml", &matrix("second-sweep"));
    let (out_a, out_b) = (tmp.path().join("a"), tmp.path().join("b"));
    let log = tmp.path().join("a.log");
    let mut a = spawn_run(&inv_a, &m_a, &out_a, &log);
    wait_for(
        Duration::from_secs(60),
        "the first sweep takes the lock",
        || !lock_is_free(&lab, h),
    );

    // A second sweep on the same host is refused before touching anything,
    // and names the holder.
    let o = run(&inv_b, &m_b, &out_b);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("sweep \"first-sweep\""), "{err}");
    assert!(err.contains(&format!("(process {})", a.id())), "{err}");
    assert!(err.contains("/run/lock/fsmatrix/host.lock"), "{err}");
    assert!(err.contains("nothing was touched"), "{err}");
    assert!(
        std::fs::read_dir(&out_b).map_or(true, |mut d| d.next().is_none()),
        "a refused sweep made no bundle"
    );
    let other = ssh(&lab.inv, h, "[ ! -e /var/tmp/fsmatrix-other ]", &[]);
    assert!(
        other.status.success(),
        "the refused sweep touched its work_dir"
    );

    // SIGKILL the first mid-run, once a cluster is up on the device: the
    // lock dies with it (no one cleans up), and a fresh run (not resume)
    // tears down what it left and runs.
    wait_for(
        Duration::from_secs(120),
        "the first sweep starts a run",
        || {
            std::fs::read_to_string(&log)
                .unwrap_or_default()
                .contains(": run ext4")
        },
    );
    std::thread::sleep(Duration::from_secs(1));
    a.kill().expect("SIGKILL");
    let _ = a.wait();
    let freed = wait_for(
        Duration::from_secs(30),
        "the lock is free after its holder was killed",
        || lock_is_free(&lab, h),
    );
    eprintln!("lock free {:.1} s after SIGKILL", freed.as_secs_f64());
    let left = ssh_ok(
        &lab.inv,
        h,
        "grep -c ' /var/tmp/fsmatrix/mnt ' /proc/mounts || true",
        &[],
    );
    assert_eq!(
        left.trim(),
        "1",
        "the killed sweep left its mount (the case under test)"
    );
    let out_c = tmp.path().join("c");
    let o = run(&inv_a, &m_a, &out_c);
    assert_eq!(
        o.status.code(),
        Some(0),
        "a fresh run after a SIGKILL: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let bundle = bundle_in(&out_c);
    assert_verifies(&bundle);
    let log_c = std::fs::read_to_string(bundle.join(format!("data/hosts/{}/commands.log", h.name)))
        .expect("commands.log");
    assert!(
        log_c
            .lines()
            .next()
            .unwrap_or_default()
            .contains("flock -n 3"),
        "the lock is the first command sent:\n{log_c}"
    );
    assert!(lock_is_free(&lab, h), "released at the end of the sweep");
    assert_clean(&lab.inv, h);
}

/// Unmounts a test's tmpfs however the test ends.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(at: &Path, size: &str) -> Tmpfs {
        std::fs::create_dir_all(at).expect("mkdir");
        let ok = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size}"),
                "fsmx-test-full",
            ])
            .arg(at)
            .status()
            .expect("mount");
        assert!(ok.success(), "mount a tmpfs at {}", at.display());
        Tmpfs(at.to_path_buf())
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

#[test]
fn a_full_local_disk_stops_new_cells_and_resume_completes_the_bundle() {
    use std::io::Write;
    let lab = Lab::hold(&["lab2"]);
    let h = &lab.inv.hosts[0];
    let (tmp, inv, matrix) = one_host_inputs(
        &lab,
        h,
        "name = \"full\"\nrepeats = 3\n\
         [[filesystem]]\nname = \"ext4\"\ntype = \"ext4\"\n\
         [[filesystem]]\nname = \"xfs\"\ntype = \"xfs\"\n\
         [[workload]]\nname = \"sel\"\nbuiltin = \"select-only\"\nscale = 1\nclients = [1]\nduration = \"2s\"\n",
    );
    // The bundle lives on a small disk of its own; the progress log does not.
    let out = tmp.path().join("out");
    let disk = Tmpfs::mount(&out, "64m");
    let log = tmp.path().join("run.log");
    let mut child = spawn_run(&inv, &matrix, &out, &log);
    let t0 = Instant::now();
    let bundle = loop {
        let b = std::fs::read_dir(&out)
            .ok()
            .and_then(|mut d| d.next())
            .and_then(|e| e.ok())
            .map(|e| e.path());
        if let Some(b) = b.filter(|b| !journal_done(b).is_empty()) {
            break b;
        }
        assert!(t0.elapsed() < Duration::from_secs(180), "no cell recorded");
        assert!(child.try_wait().expect("try_wait").is_none(), "ended early");
        std::thread::sleep(Duration::from_millis(100));
    };
    // Fill the disk: the next cell cannot be recorded.
    let mut filler = std::fs::File::create(out.join("filler")).expect("filler");
    let chunk = vec![0u8; 1 << 20];
    while filler.write_all(&chunk).is_ok() {}
    let _ = filler.flush();
    let mut waited = 0;
    let status = loop {
        if let Some(s) = child.try_wait().expect("try_wait") {
            break s;
        }
        waited += 1;
        assert!(waited < 1800, "the sweep did not stop on a full disk");
        std::thread::sleep(Duration::from_millis(100));
    };
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    eprintln!("{text}");
    assert_eq!(status.code(), Some(2), "{text}");
    assert!(text.contains("no new step starts"), "{text}");
    assert!(text.contains("fsmatrix resume"), "{text}");
    // Nothing new was built after the failure: no xfs, teardown ran.
    let after = text.split("no new step starts").nth(1).unwrap_or_default();
    assert!(
        !after.contains("make-fs"),
        "a filesystem was built after the disk filled:\n{text}"
    );
    assert!(!text.contains("make-fs xfs"), "{text}");
    assert_clean(&lab.inv, h);
    // Room again: resume keeps what was recorded and completes the bundle.
    drop(filler);
    std::fs::remove_file(out.join("filler")).expect("remove the filler");
    resume_completes(&bundle);
    let mut ids: Vec<String> = results(&bundle)
        .iter()
        .map(|r| r["cell_id"].as_str().unwrap_or_default().to_string())
        .collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 6, "every cell once");
    assert_clean(&lab.inv, h);
    drop(disk);
}

/// Sets a lab host's link down; up again however the test ends.
struct CutLink(String);

impl CutLink {
    fn cut(veth: &str) -> CutLink {
        let ok = Command::new("ip")
            .args(["link", "set", veth, "down"])
            .status()
            .expect("ip link");
        assert!(ok.success(), "ip link set {veth} down");
        CutLink(veth.to_string())
    }

    fn restore(&self) {
        let _ = Command::new("ip")
            .args(["link", "set", &self.0, "up"])
            .status();
    }

    /// Restores the link and waits (bounded) until `address:22` accepts a
    /// TCP connection: right after `ip link set up` the neighbour entry
    /// left FAILED by the cut can still answer "No route to host".
    fn restore_and_reach(&self, address: &str) {
        self.restore();
        let to: std::net::SocketAddr = format!("{address}:22").parse().expect("address");
        let start = Instant::now();
        loop {
            if std::net::TcpStream::connect_timeout(&to, Duration::from_secs(2)).is_ok() {
                eprintln!(
                    "{address} reachable {:.1} s after the link came back",
                    start.elapsed().as_secs_f64()
                );
                return;
            }
            assert!(
                start.elapsed() < Duration::from_secs(45),
                "{address}:22 still unreachable 45 s after the link came back"
            );
            std::thread::sleep(Duration::from_millis(500));
        }
    }
}

impl Drop for CutLink {
    fn drop(&mut self) {
        self.restore();
    }
}

#[test]
fn a_cut_link_is_noticed_the_other_host_finishes_and_resume_completes() {
    let lab = Lab::hold(&["lab2", "lab3"]);
    let (mut bg, first, second) = second_host_reached(&lab, "cut", "run ext4");
    let out = bg.out.clone();
    // Its veth in the root namespace is fsmx-v<N> for labN.
    let veth = format!("fsmx-v{}", second.name.trim_start_matches("lab"));
    let link = CutLink::cut(&veth);
    let cut = Instant::now();
    let status = bg.wait_end(Duration::from_secs(150));
    let noticed = cut.elapsed();
    let text = std::fs::read_to_string(&bg.log).unwrap_or_default();
    eprintln!(
        "sweep ended {:.1} s after the cut\n{text}",
        noticed.as_secs_f64()
    );
    assert_eq!(status.code(), Some(1), "{text}");
    assert!(
        noticed < Duration::from_secs(90),
        "noticed in {noticed:?}: keepalives (5 s x 3) and a reconnect (12 s of tries) bound it"
    );
    assert!(text.contains("the host lock was lost"), "{text}");
    let (bundle, rs) = only_the_first_host_finished(&out, &first, &second);
    let of = |h: &str, state: &str| count(&rs, h, state);
    // The cell in flight fails with the dropped connection, or, when the
    // lost lock stops the host first, is interrupted (recorded as not run,
    // for resume to run: CI saw both orders); the next one may have started
    // before the lost lock stopped the host; the rest do not run.
    let failed = of(&second.name, "failed");
    assert!(failed <= 2, "{rs:?}");
    assert!(of(&second.name, "not_run") >= 2, "{rs:?}");
    for r in rs
        .iter()
        .filter(|r| r["params"]["host"] == second.name && r["status"]["state"] == "failed")
    {
        let why = r["status"]["stderr_tail"].as_str().unwrap_or_default();
        assert!(
            why.contains("connection dropped") || why == "interrupted",
            "{why}"
        );
    }
    assert_eq!(
        of(&second.name, "done") + failed + of(&second.name, "not_run"),
        4,
        "{rs:?}"
    );
    // Link back: resume takes the lock (its old holder ended when the
    // dead sweep's FIN arrived, or is ended as an orphan), cleans the host
    // and runs what did not run.
    link.restore_and_reach(&second.address);
    let o = fsmatrix()
        .arg("resume")
        .arg(&bundle)
        .args(lab_paths(&bundle))
        .output()
        .expect("resume");
    let err = String::from_utf8_lossy(&o.stderr);
    eprintln!("resume -> {:?}\n{err}", o.status.code());
    // Resume keeps the cell that failed in flight (a failure is a result)
    // and runs the others: all of those are done.
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert_verifies(&bundle);
    let rs = results(&bundle);
    let done = count(&rs, &second.name, "done");
    assert_eq!(done + failed, 4, "{rs:?}");
    assert_clean(&lab.inv, &second);
    assert_clean(&lab.inv, &first);
}

#[test]
fn a_full_device_fails_its_cell_as_device_full_and_the_next_filesystem_runs() {
    let lab = Lab::hold(&["lab3"]);
    let h = &lab.inv.hosts[0];
    let (tmp, inv, matrix) = one_host_inputs(
        &lab,
        h,
        "name = \"full-device\"\n\
         [[filesystem]]\nname = \"ext4\"\ntype = \"ext4\"\n\
         [[filesystem]]\nname = \"xfs\"\ntype = \"xfs\"\n\
         [[workload]]\nname = \"fill\"\nsql_script = \"fill.sql\"\n\
         [[workload]]\nname = \"sel\"\nbuiltin = \"select-only\"\nscale = 1\nclients = [1]\nduration = \"2s\"\n\
         [[exclude]]\nfilesystem = \"xfs\"\nworkload = \"fill\"\n",
    );
    // 6 GB of uncompressed TOAST for a 4 GiB lab disk; unlogged, so that
    // the disk fills with the table alone, not with its WAL as well (half
    // the writes: this test was the slowest of the suite).
    write(
        tmp.path(),
        "fill.sql",
        "create unlogged table fill (t text);\nalter table fill alter column t set storage external;\n\
         insert into fill select repeat('x', 1000000) from generate_series(1, 6000);\n",
    );
    let out = tmp.path().join("results");
    let o = run(&inv, &matrix, &out);
    assert_eq!(o.status.code(), Some(1), "some failed, some done");
    let bundle = bundle_in(&out);
    assert_verifies(&bundle);
    let rs = results(&bundle);
    let cell = |fs: &str, wl: &str| {
        rs.iter()
            .find(|r| r["params"]["filesystem"] == fs && r["params"]["workload"] == wl)
            .unwrap_or_else(|| panic!("no {fs}/{wl} cell: {rs:?}"))
    };
    let fill = cell("ext4", "fill");
    assert_eq!(fill["status"]["state"], "failed", "{fill}");
    let why = fill["status"]["stderr_tail"].as_str().unwrap_or_default();
    assert!(why.starts_with("the device is full"), "{why}");
    // Torn down, and the next filesystem was built and ran.
    let sel = cell("xfs", "sel");
    assert_eq!(sel["status"]["state"], "done", "{sel}");
    assert_clean(&lab.inv, h);
}

/// On a host whose owner allows script commands, a SQL script's `\!` and a
/// pgbench script's `\shell` run as the unprivileged `client_user`, never
/// root; `COPY … TO PROGRAM` is refused by PostgreSQL itself (the clients
/// connect as a role without superuser rights); and neither that user (a
/// local user of the host while the cell runs) nor the script's `\c` can
/// connect as the superuser: peer authentication on the cell's socket, no
/// TCP listener.  The other cells' results keep their shape.
#[test]
fn allowed_script_commands_run_unprivileged_and_copy_to_program_is_refused() {
    let lab = Lab::hold(&["lab2"]);
    let h = &lab.inv.hosts[0];
    let tmp = tempfile::tempdir().expect("tempdir");
    let inv = write(
        tmp.path(),
        "inventory.toml",
        &inventory(&lab.inv, &[(h, "allow_script_commands = true")], ""),
    );
    let matrix = write(
        tmp.path(),
        "matrix.toml",
        "name = \"consent\"\n\
         [[filesystem]]\nname = \"ext4\"\ntype = \"ext4\"\n\
         [[workload]]\nname = \"uid\"\nsql_script = \"uid.sql\"\n\
         [[workload]]\nname = \"prog\"\nsql_script = \"prog.sql\"\n\
         [[workload]]\nname = \"su\"\nsql_script = \"su.sql\"\n\
         [[workload]]\nname = \"shell\"\npgbench_script = \"shell.pgbench\"\nscale = 1\nclients = [1]\ntransactions = 2\n",
    );
    write(
        tmp.path(),
        "uid.sql",
        "create table t (a int);\n\\! echo fsmx-sql-uid=$(id -u)\n\
         \\setenv PGHOST :HOST\n\\setenv PGPORT :PORT\n\
         \\! psql -X -At -U postgres -d postgres -c 'select 1' >/dev/null 2>&1; echo fsmx-su-socket-rc=$?\n\
         \\! psql -X -At -h 127.0.0.1 -U postgres -d postgres -c 'select 1' >/dev/null 2>&1; echo fsmx-su-tcp-rc=$?\n\
         insert into t select generate_series(1, 100);\n",
    );
    write(tmp.path(), "su.sql", "\\c - postgres\nselect 1;\n");
    write(
        tmp.path(),
        "prog.sql",
        "COPY (select 1) TO PROGRAM 'true';\n",
    );
    write(
        tmp.path(),
        "shell.pgbench",
        "\\shell echo fsmx-pgbench-uid=$(id -u)\nselect 1;\n",
    );
    let out = tmp.path().join("results");
    let o = run(&inv, &matrix, &out);
    assert_eq!(o.status.code(), Some(1), "prog fails, the rest done");
    let bundle = bundle_in(&out);
    assert_verifies(&bundle);
    let rs = results(&bundle);
    let cell = |wl: &str| {
        rs.iter()
            .find(|r| r["params"]["workload"] == wl)
            .unwrap_or_else(|| panic!("no {wl} cell: {rs:?}"))
    };
    for wl in ["uid", "shell"] {
        assert_eq!(cell(wl)["status"]["state"], "done", "{}", cell(wl));
    }
    let prog = cell("prog");
    assert_eq!(prog["status"]["state"], "failed", "{prog}");
    let why = prog["status"]["stderr_tail"].as_str().unwrap_or_default();
    assert!(
        why.contains("must be superuser or have privileges of the pg_execute_server_program role"),
        "{why}"
    );
    let su = cell("su");
    assert_eq!(su["status"]["state"], "failed", "{su}");
    let why = su["status"]["stderr_tail"].as_str().unwrap_or_default();
    assert!(
        why.contains("Peer authentication failed for user \"postgres\""),
        "{why}"
    );
    // The uids the commands printed, from the cells' raw output.
    let mut uids = Vec::new();
    for e in walkdir(&bundle.join("data/cells")) {
        let text = String::from_utf8_lossy(&std::fs::read(&e).unwrap_or_default()).into_owned();
        for l in text.lines() {
            for key in [
                "fsmx-sql-uid=",
                "fsmx-pgbench-uid=",
                "fsmx-su-socket-rc=",
                "fsmx-su-tcp-rc=",
            ] {
                if let Some(u) = l.trim().strip_prefix(key) {
                    uids.push((key, u.to_string()));
                }
            }
        }
    }
    for key in ["fsmx-sql-uid=", "fsmx-pgbench-uid="] {
        let got: Vec<&String> = uids
            .iter()
            .filter(|(k, _)| *k == key)
            .map(|(_, u)| u)
            .collect();
        assert!(!got.is_empty(), "no {key} line in the bundle: {uids:?}");
        for u in got {
            let n: u32 = u.parse().unwrap_or_else(|_| panic!("{key}{u}"));
            assert_ne!(n, 0, "{key}: the script's command ran as root");
        }
    }
    // psql's exit 2: it could not connect, as the superuser, either way.
    for key in ["fsmx-su-socket-rc=", "fsmx-su-tcp-rc="] {
        let got: Vec<&String> = uids
            .iter()
            .filter(|(k, _)| *k == key)
            .map(|(_, u)| u)
            .collect();
        assert!(
            !got.is_empty() && got.iter().all(|rc| *rc == "2"),
            "{key}: {uids:?}"
        );
    }
    // The shape of the results holds: the pgbench cell has its tps.
    assert!(
        cell("shell")["status"]["run"]["tps"]
            .as_f64()
            .is_some_and(|t| t > 0.0),
        "{}",
        cell("shell")
    );
    assert_clean(&lab.inv, h);
}

/// On a host whose owner has not allowed script commands, a SQL script that
/// gets past the plan's scanner still runs no command: here
/// `standard_conforming_strings = off` makes psql read `'\''` as one string,
/// where the scanner (and any lexer that is not psql's, with that setting
/// on) sees the string end early and the `\!` after it as string text.
/// psql itself is the barrier: the script runs under `\restrict` with a
/// key it cannot know, psql refuses the `\!`, and the cell fails, saying so.
#[test]
fn scripts_that_get_around_the_scanner_run_no_command_without_consent() {
    let lab = Lab::hold(&["lab3"]);
    let h = &lab.inv.hosts[0];
    let (tmp, inv, matrix) = one_host_inputs(
        &lab,
        h,
        "name = \"slip\"\n\
         [[filesystem]]\nname = \"ext4\"\ntype = \"ext4\"\n\
         [[workload]]\nname = \"slip\"\nsql_script = \"slip.sql\"\n",
    );
    // The command prints fsmx-slip42; the script's text never holds that.
    write(
        tmp.path(),
        "slip.sql",
        "set standard_conforming_strings = off;\n\
         select '\\'' \\! echo fsmx-slip$((6 * 7)) #';\n\
         select 1;\n",
    );
    let plan = fsmatrix()
        .args(["plan", "--inventory"])
        .arg(&inv)
        .arg("--matrix")
        .arg(&matrix)
        .output()
        .expect("plan");
    assert_eq!(
        plan.status.code(),
        Some(0),
        "the scanner is fooled (the case under test): {}",
        String::from_utf8_lossy(&plan.stderr)
    );
    let out = tmp.path().join("results");
    let o = run(&inv, &matrix, &out);
    // Its one cell fails, so no cell is done: exit 2.
    assert_eq!(o.status.code(), Some(2), "the cell fails");
    let bundle = bundle_in(&out);
    assert_verifies(&bundle);
    let rs = results(&bundle);
    assert_eq!(rs.len(), 1, "{rs:?}");
    assert_eq!(rs[0]["status"]["state"], "failed", "{}", rs[0]);
    let why = rs[0]["status"]["stderr_tail"].as_str().unwrap_or_default();
    assert!(
        why.contains("backslash commands are restricted"),
        "psql says why: {why}"
    );
    for e in walkdir(&bundle) {
        let text = String::from_utf8_lossy(&std::fs::read(&e).unwrap_or_default()).into_owned();
        assert!(
            !text.contains("fsmx-slip42"),
            "the command ran without consent: {}",
            e.display()
        );
    }
    assert_clean(&lab.inv, h);
}

/// Every file under `dir`.
fn walkdir(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walkdir(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// Run `script` inside lab host `h` as its init sees it (its network, mount,
/// PID namespaces), from the root namespace: it works whatever the host's
/// sshd is doing.
fn in_lab_host(h: &LabHost, script: &str) -> Output {
    let pid =
        std::fs::read_to_string(support::lab_dir().join(format!("hosts/{}/init.pid", h.name)))
            .expect("the lab host's init.pid");
    Command::new("nsenter")
        .args([
            "-t",
            pid.trim(),
            "-n",
            "-m",
            "-u",
            "-i",
            "-p",
            "--",
            "sh",
            "-c",
            script,
        ])
        .stdin(Stdio::null())
        .output()
        .expect("nsenter")
}

/// Restarts a lab host's sshd with its own key however the test ends.
struct OwnSshd<'a>(&'a LabHost);

impl Drop for OwnSshd<'_> {
    fn drop(&mut self) {
        let conf = support::lab_dir().join(format!("hosts/{}/sshd_config", self.0.name));
        let log = support::lab_dir().join(format!("hosts/{}/sshd.log", self.0.name));
        let o = in_lab_host(
            self.0,
            &format!(
                "for p in $(pgrep -x sshd); do kill \"$p\"; done; sleep 0.5; /usr/sbin/sshd -f '{}' -E '{}'",
                conf.display(),
                log.display()
            ),
        );
        if !o.status.success() {
            eprintln!(
                "restoring the sshd of {} failed: {}",
                self.0.name,
                String::from_utf8_lossy(&o.stderr)
            );
        }
    }
}

#[test]
fn sshd_with_a_new_host_key_between_cells_is_refused_and_named() {
    let lab = Lab::hold(&["lab2", "lab3"]);
    let (mut bg, first, second) = second_host_reached(&lab, "rekey", "run ext4 sel c=1 r=2");
    let out = bg.out.clone();
    // sshd comes back with another key: every sshd of the host ends (our
    // connection with it), a new one starts with a fresh key.
    let restore = OwnSshd(&second);
    let conf = support::lab_dir().join(format!("hosts/{}/sshd_config", second.name));
    let o = in_lab_host(
        &second,
        &format!(
            "set -e; rm -f /tmp/fsmx-rekey /tmp/fsmx-rekey.pub; ssh-keygen -q -t ed25519 -N '' -f /tmp/fsmx-rekey; \
             sed 's|^HostKey .*|HostKey /tmp/fsmx-rekey|' '{}' > /tmp/fsmx-rekey.conf; \
             for p in $(pgrep -x sshd); do kill \"$p\"; done; sleep 0.5; \
             /usr/sbin/sshd -f /tmp/fsmx-rekey.conf -E /tmp/fsmx-rekey.log",
            conf.display()
        ),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let status = bg.wait_end(Duration::from_secs(150));
    let text = std::fs::read_to_string(&bg.log).unwrap_or_default();
    eprintln!("{text}");
    assert_eq!(status.code(), Some(1), "{text}");
    assert!(
        text.contains("host key CHANGED"),
        "the reason is named:\n{text}"
    );
    let (bundle, _) = only_the_first_host_finished(&out, &first, &second);
    // Nothing ran on the host under the new key: every command after the
    // change was refused before authentication.
    let sshd_log = in_lab_host(&second, "cat /tmp/fsmx-rekey.log");
    let log = String::from_utf8_lossy(&sshd_log.stdout);
    assert!(!log.contains("Accepted publickey"), "{log}");
    // The host's own key back: resume cleans up and finishes it.
    drop(restore);
    resume_completes(&bundle);
    assert_clean(&lab.inv, &second);
}

/// A TCP relay from 127.0.0.1:<port> to `to`, for as long as the test
/// process lives (one thread per connection; the test makes a handful).
fn relay(to: std::net::SocketAddr) -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for inbound in listener.incoming().flatten() {
            let Ok(outbound) = std::net::TcpStream::connect_timeout(&to, Duration::from_secs(5))
            else {
                continue;
            };
            let (mut a, mut b) = (inbound, outbound);
            let (mut a2, mut b2) = (a.try_clone().expect("clone"), b.try_clone().expect("clone"));
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut a, &mut b);
                let _ = b.shutdown(std::net::Shutdown::Write);
            });
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut b2, &mut a2);
                let _ = a2.shutdown(std::net::Shutdown::Write);
            });
        }
    });
    port
}

#[test]
fn one_machine_under_two_inventory_entries_is_refused_by_its_host_key() {
    let lab = Lab::hold(&["lab3"]);
    let h = &lab.inv.hosts[0];
    let tmp = tempfile::tempdir().expect("tempdir");
    // The same sshd reached a second way: through a relay on loopback.
    let port = relay(format!("{}:22", h.address).parse().expect("address"));
    let real = std::fs::read_to_string(&lab.inv.known_hosts).expect("known_hosts");
    let line = real
        .lines()
        .find(|l| l.split_whitespace().next() == Some(h.address.as_str()))
        .expect("the host's known_hosts line");
    let key: Vec<&str> = line.split_whitespace().skip(1).take(2).collect();
    let kh = write(
        tmp.path(),
        "known_hosts",
        &format!("{real}[127.0.0.1]:{port} {} {}\n", key[0], key[1]),
    );
    let alias = LabHost {
        name: "alias".into(),
        address: "127.0.0.1".into(),
        device: h.device.clone(),
        os: h.os.clone(),
    };
    let text = inventory(
        &lab.inv,
        &[(h, ""), (&alias, &format!("port = {port}\n"))],
        "",
    )
    .replace(
        &format!("known_hosts = {:?}", lab.inv.known_hosts),
        &format!("known_hosts = {kh:?}"),
    );
    let inv = write(tmp.path(), "inventory.toml", &text);
    let matrix = write(
        tmp.path(),
        "matrix.toml",
        "name = \"alias\"\n[[filesystem]]\nname = \"ext4\"\ntype = \"ext4\"\n\
         [[workload]]\nname = \"sel\"\nbuiltin = \"select-only\"\nscale = 1\nclients = [1]\nduration = \"2s\"\n",
    );
    let c = fsmatrix()
        .args(["check", "-i"])
        .arg(&inv)
        .output()
        .expect("check");
    let said = String::from_utf8_lossy(&c.stdout);
    assert_eq!(c.status.code(), Some(1), "{said}");
    assert!(
        said.contains("same machine as inventory host alias"),
        "{said}"
    );
    assert!(
        said.contains(&format!("same machine as inventory host {}", h.name)),
        "{said}"
    );
    let out = tmp.path().join("results");
    let o = run(&inv, &matrix, &out);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "inventory hosts {} and alias are the same machine",
            h.name
        )),
        "{err}"
    );
    assert!(
        std::fs::read_dir(&out).map_or(true, |mut d| d.next().is_none()),
        "no bundle"
    );
    assert!(lock_is_free(&lab, h), "no lock was taken");
    assert_clean(&lab.inv, h);
}

#[test]
fn a_stopped_postgres_times_out_its_run_teardown_runs_and_the_next_filesystem_goes_on() {
    let lab = Lab::hold(&["lab3"]);
    let h = &lab.inv.hosts[0];
    let (tmp, inv, matrix) = one_host_inputs(
        &lab,
        h,
        "name = \"hang\"\nrepeats = 3\nrun_timeout = \"15s\"\n\
         [[filesystem]]\nname = \"ext4\"\ntype = \"ext4\"\n\
         [[filesystem]]\nname = \"xfs\"\ntype = \"xfs\"\n\
         [[workload]]\nname = \"sel\"\nbuiltin = \"select-only\"\nscale = 1\nclients = [1]\nduration = \"4s\"\n",
    );
    let out = tmp.path().join("results");
    let log = tmp.path().join("stderr.log");
    let mut bg = Background {
        child: spawn_run(&inv, &matrix, &out, &log),
        tmp,
        hosts: vec![(h, "")],
        out,
        log,
    };
    bg.wait_until(
        Duration::from_secs(180),
        "the host never started its first run",
        |text| {
            text.contains(&format!("{}: run ext4", h.name))
                .then_some(())
        },
    );
    // Every PostgreSQL process of the host (its own PID namespace) stops:
    // the backend that serves pgbench no longer answers.
    let o = in_lab_host(
        h,
        "n=0; for p in $(pgrep -x postgres); do kill -STOP \"$p\" && n=$((n+1)); done; echo $n",
    );
    let stopped: u32 = String::from_utf8_lossy(&o.stdout)
        .trim()
        .parse()
        .unwrap_or(0);
    assert!(stopped > 0, "no postgres process to stop: {o:?}");
    let t0 = Instant::now();
    let status = bg.wait_end(Duration::from_secs(240));
    let text = std::fs::read_to_string(&bg.log).unwrap_or_default();
    eprintln!(
        "stopped {stopped} postgres processes; the sweep ended {:.1} s later\n{text}",
        t0.elapsed().as_secs_f64()
    );
    assert_eq!(status.code(), Some(1), "one cell failed: {text}");
    let bundle = bundle_in(&bg.out);
    assert_verifies(&bundle);
    let rs = results(&bundle);
    let of = |fs: &str, state: &str| {
        rs.iter()
            .filter(|r| r["params"]["filesystem"] == fs && r["status"]["state"] == state)
            .collect::<Vec<_>>()
    };
    let failed = of("ext4", "failed");
    assert_eq!(failed.len(), 1, "{rs:?}");
    assert_eq!(failed[0]["status"]["step"], "run", "{}", failed[0]);
    let why = failed[0]["status"]["stderr_tail"]
        .as_str()
        .unwrap_or_default();
    assert!(why.contains("timed out after 15"), "{why}");
    // The cells after it were not waited out one by one: not run, with why.
    let not_run = of("ext4", "not_run");
    assert_eq!(not_run.len() + of("ext4", "done").len(), 2, "{rs:?}");
    for r in &not_run {
        let why = r["status"]["reason"].as_str().unwrap_or_default();
        assert!(why.contains("timed out") && why.contains("resume"), "{why}");
    }
    // pg-stop continued the stopped server and teardown cleaned the disk;
    // the next filesystem was built and ran all its cells.
    assert_eq!(of("xfs", "done").len(), 3, "{rs:?}");
    assert!(!text.contains("teardown did not finish cleanly"), "{text}");
    assert_clean(&lab.inv, h);
    let o = in_lab_host(h, "pgrep -x postgres || true");
    assert!(
        String::from_utf8_lossy(&o.stdout).trim().is_empty(),
        "a postgres process is left: {o:?}"
    );
}

/// `run --json`: stdout is one JSON object per line, from `sweep_started`
/// to `sweep_ended`, with every host's start, steps, cells and finish; the
/// stream agrees with the bundle.  `-q` on the same sweep prints no step.
#[test]
fn run_json_streams_the_whole_sweep_as_json_lines() {
    let lab = Lab::hold(&["lab2", "lab3"]);
    let tmp = tempfile::tempdir().unwrap();
    let hosts: Vec<(&LabHost, &str)> = lab.inv.hosts.iter().take(2).map(|h| (h, "")).collect();
    let inv = write(
        tmp.path(),
        "inventory.toml",
        &inventory(&lab.inv, &hosts, ""),
    );
    let matrix = write(
        tmp.path(),
        "matrix.toml",
        "name = \"json\"\nrepeats = 2\n[[filesystem]]\nname = \"ext4\"\ntype = \"ext4\"\n[[workload]]\nname = \"ro\"\nbuiltin = \"select-only\"\nscale = 1\nclients = [1]\nduration = \"2s\"\n",
    );
    let o = fsmatrix()
        .args(["run", "--json", "-i"])
        .arg(&inv)
        .arg("-m")
        .arg(&matrix)
        .arg("--out")
        .arg(tmp.path().join("out"))
        .output()
        .expect("run --json");
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let events: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(kinds.first(), Some(&"sweep_started"), "{kinds:?}");
    assert_eq!(kinds.last(), Some(&"sweep_ended"), "{kinds:?}");
    let n = |k: &str| kinds.iter().filter(|x| **x == k).count();
    assert_eq!(n("host_started"), 2, "{kinds:?}");
    assert_eq!(n("host_finished"), 2, "{kinds:?}");
    assert_eq!(n("cell_ended"), 4, "{kinds:?}");
    assert!(n("step") >= 2 * 5, "{kinds:?}");
    let last = events.last().unwrap();
    assert_eq!(last["done"], 4);
    assert_eq!(last["exit_code"], 0);
    let bundle = PathBuf::from(last["bundle"].as_str().unwrap());
    assert_eq!(events[0]["bundle"], last["bundle"]);
    assert_verifies(&bundle);
    let done: Vec<String> = results(&bundle)
        .iter()
        .filter(|r| r["status"]["state"] == "done")
        .map(|r| r["cell_id"].as_str().unwrap().to_string())
        .collect();
    for e in events.iter().filter(|e| e["event"] == "cell_ended") {
        assert_eq!(e["outcome"], "done", "{e}");
        assert!(done.iter().any(|c| e["cell"] == c.as_str()), "{e}");
    }
    // -q: no progress lines, the summary and report still printed.
    let o = fsmatrix()
        .args(["-q", "run", "-i"])
        .arg(&inv)
        .arg("-m")
        .arg(&matrix)
        .arg("--out")
        .arg(tmp.path().join("quiet"))
        .output()
        .expect("run -q");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        !err.contains(": make-fs") && !err.contains(": start,"),
        "{err}"
    );
    assert!(err.contains("4 cells done"), "{err}");
    assert!(String::from_utf8_lossy(&o.stdout).contains("bundle: "));
}

/// An inventory that names its hosts only by aliases of an ssh config (one
/// with an `Include` and a wildcard block): `check` reaches them through
/// what the config says (HostName, User, IdentityFile, UserKnownHostsFile),
/// says where each value came from, and ignores the config's attempt to
/// weaken host-key checking.
#[test]
fn an_alias_only_inventory_reaches_the_lab_through_an_ssh_config() {
    let lab = Lab::hold(&["lab2", "lab3"]);
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (&lab.inv.hosts[0], &lab.inv.hosts[1]);
    let included = write(
        tmp.path(),
        "lab.conf",
        &format!(
            "Host bench-one\n    HostName {}\nHost bench-two\n    HostName {}\n",
            a.address, b.address
        ),
    );
    let config = write(
        tmp.path(),
        "ssh_config",
        &format!(
            "Include {}\nHost bench-*\n    User root\n    IdentityFile {}\n    UserKnownHostsFile {}\n    StrictHostKeyChecking no\n",
            included.display(),
            lab.inv.identity_file.display(),
            lab.inv.known_hosts.display()
        ),
    );
    let inv = write(
        tmp.path(),
        "inventory.toml",
        &format!(
            "ssh_config = {:?}\n[defaults]\nwork_dir = \"/var/tmp/fsmatrix\"\nos = \"linux\"\npg_bin = {:?}\npg_user = {:?}\npg_port = {}\n\
             [[host]]\nname = \"one\"\naddress = \"bench-one\"\ndevices = [{:?}]\n\
             [[host]]\nname = \"two\"\naddress = \"bench-two\"\ndevices = [{:?}]\n",
            config.display(),
            lab.inv.pg_bin,
            lab.inv.pg_user,
            lab.inv.pg_port,
            a.device,
            b.device
        ),
    );
    let o = fsmatrix()
        .args(["check", "-i"])
        .arg(&inv)
        .arg("--ssh-config")
        .arg(&config)
        .output()
        .expect("check");
    let err = String::from_utf8_lossy(&o.stderr);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(
        err.contains(&format!("one: address {}", a.address)) && err.contains("HostName"),
        "{err}"
    );
    assert!(err.contains("StrictHostKeyChecking"), "{err}");
    assert!(out.contains("one") && out.contains("two"), "{out}");
}

/// `rate` and `latency_limit` (pgbench -R, -L): latency under a fixed load.
/// The run holds the rate, the schedule lag is recorded, and the commands
/// sent say what was asked.
#[test]
fn a_rate_limited_workload_holds_its_rate_and_records_the_schedule_lag() {
    let lab = Lab::hold(&["lab2"]);
    let tmp = tempfile::tempdir().unwrap();
    let h = &lab.inv.hosts[0];
    let inv = write(
        tmp.path(),
        "inventory.toml",
        &inventory(&lab.inv, &[(h, "")], ""),
    );
    let matrix = write(
        tmp.path(),
        "matrix.toml",
        "name = \"rate\"\n[[filesystem]]\nname = \"ext4\"\ntype = \"ext4\"\n[[workload]]\nname = \"ro\"\nbuiltin = \"select-only\"\nscale = 1\nclients = [2]\njobs = 2\nduration = \"5s\"\nrate = 50\nlatency_limit = \"1000ms\"\nlatency_log = true\nsampling_rate = 0.5\nper_statement = true\n",
    );
    let out = tmp.path().join("out");
    let o = run(&inv, &matrix, &out);
    assert_eq!(o.status.code(), Some(0));
    let bundle = bundle_in(&out);
    assert_verifies(&bundle);
    let rs = results(&bundle);
    assert_eq!(rs.len(), 1);
    let r = &rs[0]["status"]["run"];
    let tps = r["tps"].as_f64().expect("tps");
    assert!(
        (35.0..=65.0).contains(&tps),
        "tps {tps} under a rate of 50: {r}"
    );
    assert!(r["schedule_lag_avg_ms"].as_f64().is_some(), "{r}");
    assert!(r["schedule_lag_max_ms"].as_f64().is_some(), "{r}");
    // The record says the rate: the report compares such rows on latency.
    assert_eq!(rs[0]["params"]["rate"], 50, "{}", rs[0]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("ro with 2 clients at 50 tps (rate-limited: compared on latency)"),
        "{stdout}"
    );
    let log = std::fs::read_to_string(bundle.join(format!("data/hosts/{}/commands.log", h.name)))
        .expect("commands.log");
    assert!(
        log.lines().any(|l| l.contains(" run ")
            && l.contains(" rate=50 ")
            && l.contains(" latency_limit=1000 ")),
        "{log}"
    );
    // latency_log (pgbench -l --sampling-rate) and per_statement (-r),
    // one gzipped log per pgbench thread, fetched, removed from
    // the host, checksummed in the cell's folder; exact percentiles.
    assert!(
        log.lines().any(|l| l.contains(" run ")
            && l.contains(" txlog=1 ")
            && l.contains(" sampling_rate=0.5 ")
            && l.contains(" per_statement=1 ")),
        "{log}"
    );
    let l = &r["latency_percentiles"];
    let files: Vec<&str> = l["files"]
        .as_array()
        .expect("latency_percentiles.files")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(files.len(), 2, "one log per thread (jobs = 2): {l}");
    let manifest = std::fs::read_to_string(bundle.join("manifest-sha256.txt")).unwrap();
    let cell = rs[0]["cell_id"].as_str().expect("cell_id");
    for f in &files {
        assert!(
            f.starts_with("txlog/pgbench_log.") && f.ends_with(".gz"),
            "{f}"
        );
        let rel = format!("data/cells/{cell}/{f}");
        let bytes = std::fs::read(bundle.join(&rel)).expect("log kept in the cell's folder");
        assert_eq!(&bytes[..2], b"\x1f\x8b", "{rel} is gzip");
        assert!(
            manifest.lines().any(|m| m.ends_with(&rel)),
            "{rel} not in the manifest"
        );
        let name = f.rsplit('/').next().unwrap();
        assert_eq!(
            log.lines()
                .filter(|c| c.contains(" cat ") && c.contains(name) && c.contains(" remove=1"))
                .count(),
            1,
            "{name} fetched with remove=1 once: {log}"
        );
    }
    let p = |k: &str| l[k].as_f64().unwrap_or_else(|| panic!("{k}: {l}"));
    assert!(
        p("min_ms") <= p("p50_ms")
            && p("p50_ms") <= p("p95_ms")
            && p("p95_ms") <= p("p99_ms")
            && p("p99_ms") <= p("max_ms"),
        "{l}"
    );
    assert_eq!(p("sampling_rate"), 0.5);
    let sampled =
        l["transactions"].as_u64().expect("transactions") + l["skipped"].as_u64().unwrap_or(0);
    let all = r["transactions"].as_u64().expect("transactions")
        + r["skipped_transactions"].as_u64().unwrap_or(0);
    assert!(
        (all as f64 * 0.25..=all as f64 * 0.75).contains(&(sampled as f64)),
        "{sampled} logged of {all} at sampling_rate 0.5"
    );
    let st = r["statement_latencies"]
        .as_array()
        .expect("statement_latencies");
    assert!(
        st.iter().any(|s| s["command"]
            .as_str()
            .is_some_and(|c| c.starts_with("SELECT abalance"))
            && s["latency_ms"].as_f64().is_some()),
        "{st:?}"
    );
    // The report: percentiles per group in JSON, the sections in Markdown
    // and the plot in HTML.
    let path_after = |label: &str| {
        stdout
            .lines()
            .find_map(|l| l.strip_prefix(label))
            .map(PathBuf::from)
            .unwrap_or_else(|| panic!("no `{label}` line: {stdout}"))
    };
    let md = std::fs::read_to_string(path_after("report: ")).expect("the Markdown report");
    assert!(
        md.contains("## Latency from the per-transaction log"),
        "{md}"
    );
    assert!(md.contains("## Per-statement latency (pgbench -r)"), "{md}");
    let html = std::fs::read_to_string(path_after("report (HTML): ")).expect("the HTML report");
    assert!(
        html.contains("data-plot=\"latency-percentiles\""),
        "no latency plot"
    );
}

// ---- Host lock liveness (issue 24): a holder is ended only when its
// orchestrator is proven gone, never by a process name.

/// `cmd` run to its end within `limit` (killed and failed past it), its
/// stdout and stderr as text.
fn output_within(
    mut cmd: Command,
    limit: Duration,
    dir: &Path,
    tag: &str,
) -> (Option<i32>, String) {
    let (out, err) = (
        dir.join(format!("{tag}.out")),
        dir.join(format!("{tag}.err")),
    );
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).expect("stdout file"))
        .stderr(std::fs::File::create(&err).expect("stderr file"))
        .spawn()
        .expect("spawn");
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("try_wait") {
            break s;
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{tag} did not end within {limit:?}:\n{}",
                std::fs::read_to_string(&err).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let text = format!(
        "{}{}",
        std::fs::read_to_string(&out).unwrap_or_default(),
        std::fs::read_to_string(&err).unwrap_or_default()
    );
    eprintln!(
        "{tag} -> {:?} in {:.1} s\n{text}",
        status.code(),
        t0.elapsed().as_secs_f64()
    );
    (status.code(), text)
}

/// Three 2-second cells on one host.
fn three_small_cells(name: &str) -> String {
    format!(
        "name = \"{name}\"\nrepeats = 3\n[[filesystem]]\nname = \"ext4\"\ntype = \"ext4\"\n\
         [[workload]]\nname = \"sel\"\nbuiltin = \"select-only\"\nscale = 1\nclients = [1]\nduration = \"2s\"\n"
    )
}

/// `first` (an fsmatrix binary, maybe wrapped) sweeps three cells on a lab
/// host; while it holds the host's lock, `second` is aimed at the same host.
/// The second is refused, naming the first and saying it appears alive,
/// and the first finishes every cell without ever losing its lock.
fn a_live_sweep_keeps_its_lock_against(first: Command, second: Command, label: &str) {
    let lab = Lab::hold(&["lab3"]);
    let h = &lab.inv.hosts[0];
    let tmp = tempfile::tempdir().expect("tempdir");
    let inv = write(tmp.path(), "inv.toml", &inventory(&lab.inv, &[(h, "")], ""));
    let m_a = write(
        tmp.path(),
        "ma.toml",
        &three_small_cells(&format!("{label}-first")),
    );
    let m_b = write(
        tmp.path(),
        "mb.toml",
        &three_small_cells(&format!("{label}-second")),
    );
    let (out_a, out_b) = (tmp.path().join("a"), tmp.path().join("b"));
    let log = tmp.path().join("a.log");
    let mut first = first;
    let mut a = first
        .args(["run", "--inventory"])
        .arg(&inv)
        .arg("--matrix")
        .arg(&m_a)
        .arg("--out")
        .arg(&out_a)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).expect("log file"))
        .spawn()
        .expect("spawn the first sweep");
    wait_for(
        Duration::from_secs(60),
        "the first sweep takes the lock",
        || !lock_is_free(&lab, h),
    );
    let mut second = second;
    second
        .args(["run", "--inventory"])
        .arg(&inv)
        .arg("--matrix")
        .arg(&m_b)
        .arg("--out")
        .arg(&out_b);
    let (code, err) = output_within(second, Duration::from_secs(120), tmp.path(), "second");
    let first_end = (|| {
        let t0 = Instant::now();
        loop {
            if let Some(s) = a.try_wait().expect("try_wait") {
                return s;
            }
            if t0.elapsed() > Duration::from_secs(300) {
                let _ = a.kill();
                panic!("the first sweep did not end within 300 s");
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    })();
    let text_a = std::fs::read_to_string(&log).unwrap_or_default();
    eprintln!("first -> {:?}\n{text_a}", first_end.code());
    assert_eq!(
        code,
        Some(2),
        "the second orchestrator was not refused: {err}"
    );
    assert!(err.contains(&format!("sweep \"{label}-first\"")), "{err}");
    assert!(err.contains("appears alive"), "{err}");
    assert!(err.contains("nothing was touched"), "{err}");
    assert!(
        std::fs::read_dir(&out_b).map_or(true, |mut d| d.next().is_none()),
        "a refused sweep made no bundle"
    );
    assert_eq!(first_end.code(), Some(0), "{text_a}");
    assert!(!text_a.contains("host lock"), "{text_a}");
    let bundle = bundle_in(&out_a);
    let rs = results(&bundle);
    assert_eq!(count(&rs, &h.name, "done"), 3, "{rs:?}");
    assert!(lock_is_free(&lab, h), "released at the end of the sweep");
    assert_clean(&lab.inv, h);
}

/// The defect of issue 24: a holder was judged orphaned when its process
/// was not named `fsmatrix`.  The first sweep is the binary under another
/// name; the second (the binary as built) must not take its lock.
#[test]
fn a_renamed_orchestrator_keeps_its_host_lock() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let renamed = tmp.path().join("fsmx-renamed");
    std::fs::copy(env!("CARGO_BIN_EXE_fsmatrix"), &renamed).expect("copy the binary");
    a_live_sweep_keeps_its_lock_against(Command::new(&renamed), fsmatrix(), "renamed");
}

/// Two orchestrators on one machine (one machine-id) but not one PID
/// namespace (containers, `unshare`): the second sees no process of the
/// first's number and must still not take its lock.
#[test]
fn an_orchestrator_in_another_pid_namespace_does_not_take_a_live_lock() {
    let mut second = Command::new("unshare");
    second
        .args(["--pid", "--fork", "--mount-proc"])
        .arg(env!("CARGO_BIN_EXE_fsmatrix"));
    a_live_sweep_keeps_its_lock_against(fsmatrix(), second, "pidns");
}

/// A TCP relay from 127.0.0.1:<port> to `to` that never passes a close on:
/// when its client goes away, the host's side stays open and silent, as
/// over a link cut before the client's FIN (the test process holds it).
fn relay_hiding_closes(to: std::net::SocketAddr) -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for inbound in listener.incoming().flatten() {
            let Ok(outbound) = std::net::TcpStream::connect_timeout(&to, Duration::from_secs(5))
            else {
                continue;
            };
            let (mut a, mut b) = (inbound, outbound);
            let (mut a2, mut b2) = (a.try_clone().expect("clone"), b.try_clone().expect("clone"));
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut a, &mut b);
                std::mem::forget(b);
            });
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut b2, &mut a2);
                std::mem::forget(b2);
            });
        }
    });
    port
}

/// The orphan case must still work: an orchestrator killed (SIGKILL) while
/// the host has not heard its connection close leaves a holder there; the
/// next sweep from this machine proves the orchestrator gone (its sweep
/// lease is free) and ends that holder instead of waiting for its
/// heartbeat limit.
#[test]
fn a_dead_orchestrators_holder_is_ended_by_the_next_sweep() {
    let lab = Lab::hold(&["lab2"]);
    let h = &lab.inv.hosts[0];
    let tmp = tempfile::tempdir().expect("tempdir");
    let port = relay_hiding_closes(format!("{}:22", h.address).parse().expect("address"));
    let real = std::fs::read_to_string(&lab.inv.known_hosts).expect("known_hosts");
    let line = real
        .lines()
        .find(|l| l.split_whitespace().next() == Some(h.address.as_str()))
        .expect("the host's known_hosts line");
    let key: Vec<&str> = line.split_whitespace().skip(1).take(2).collect();
    let kh = write(
        tmp.path(),
        "known_hosts",
        &format!("{real}[127.0.0.1]:{port} {} {}\n", key[0], key[1]),
    );
    let via = LabHost {
        address: "127.0.0.1".into(),
        ..h.clone()
    };
    let inv_a = write(
        tmp.path(),
        "a.toml",
        &inventory(&lab.inv, &[(&via, &format!("port = {port}\n"))], "").replace(
            &format!("known_hosts = {:?}", lab.inv.known_hosts),
            &format!("known_hosts = {kh:?}"),
        ),
    );
    let inv_b = write(tmp.path(), "b.toml", &inventory(&lab.inv, &[(h, "")], ""));
    let m_a = write(tmp.path(), "ma.toml", &three_small_cells("dead-first"));
    let m_b = write(tmp.path(), "mb.toml", &three_small_cells("after-the-dead"));
    let (out_a, out_b) = (tmp.path().join("a"), tmp.path().join("b"));
    let log = tmp.path().join("a.log");
    let mut a = spawn_run(&inv_a, &m_a, &out_a, &log);
    wait_for(
        Duration::from_secs(120),
        "the first sweep starts a run",
        || {
            std::fs::read_to_string(&log)
                .unwrap_or_default()
                .contains(": run ext4")
        },
    );
    a.kill().expect("SIGKILL");
    let _ = a.wait();
    std::thread::sleep(Duration::from_secs(3));
    assert!(
        !lock_is_free(&lab, h),
        "the dead sweep's holder is still there (the case under test)"
    );
    let mut second = fsmatrix();
    second
        .args(["run", "--inventory"])
        .arg(&inv_b)
        .arg("--matrix")
        .arg(&m_b)
        .arg("--out")
        .arg(&out_b);
    // Refused (2) would mean the holder was judged alive; a success means
    // it was ended at once, not left to its heartbeat limit.
    let (code, err) = output_within(second, Duration::from_secs(300), tmp.path(), "second");
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("has ended"), "the orphan's end is said: {err}");
    let rs = results(&bundle_in(&out_b));
    assert_eq!(count(&rs, &h.name, "done"), 3, "{rs:?}");
    assert!(lock_is_free(&lab, h), "released at the end of the sweep");
    assert_clean(&lab.inv, h);
}

/// If a sweep's holder is ever ended by another (here by hand, as
/// `lock_host`'s ender does: its words to `ended.<token>`, then a kill),
/// the sweep says who ended it and why, not that its connection dropped;
/// it stops starting steps on the host and resume finishes the bundle.
#[test]
fn a_sweep_whose_holder_is_ended_is_told_by_whom_not_that_its_connection_dropped() {
    let lab = Lab::hold(&["lab3"]);
    let h = &lab.inv.hosts[0];
    let (tmp, inv, matrix) = one_host_inputs(&lab, h, &three_small_cells("told"));
    let out = tmp.path().join("results");
    let log = tmp.path().join("run.log");
    let mut a = spawn_run(&inv, &matrix, &out, &log);
    wait_for(Duration::from_secs(120), "the sweep starts a run", || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .contains(": run ext4")
    });
    ssh_ok(
        &lab.inv,
        h,
        "n=/run/lock/fsmatrix/host.lock.holder; t=$(sed -n 's/^holder.token=//p' $n); \
         r=$(sed -n 's/^holder.rpid=//p' $n); [ -n \"$t\" ] && [ -n \"$r\" ] && \
         printf 'ended_by.sweep=%s\\nended_by.machine=%s\\nended_by.user=%s\\nended_by.pid=%s\\nended_by.why=%s\\n' \
         intruder elsewhere mallory 77 'a test ended it' > /run/lock/fsmatrix/ended.$t && kill $r",
        &[],
    );
    let t0 = Instant::now();
    while a.try_wait().expect("try_wait").is_none() {
        if t0.elapsed() > Duration::from_secs(180) {
            let _ = a.kill();
            panic!("the sweep did not end within 180 s of losing its lock");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    eprintln!("{text}");
    assert!(
        text.contains(&format!(
            "your host lock on {} was ended by sweep \"intruder\" on elsewhere (process 77, user mallory): a test ended it",
            h.name
        )),
        "{text}"
    );
    assert!(!text.contains("connection dropped"), "{text}");
    resume_completes(&bundle_in(&out));
    assert!(lock_is_free(&lab, h), "released at the end of resume");
    assert_clean(&lab.inv, h);
}
