//! A lab whose host 1 is a bastion (`fsmatrix lab up --bastion`): the inner
//! hosts are on 10.203.1.0/24 behind it, unreachable from this machine except through
//! its sshd; a small sweep runs on both inner hosts through the bastion (ProxyJump in
//! the inventory) and ends with a bundle that verifies; `lab down` removes the inner
//! bridge with the rest.
//!
//! The lab's names (bridge fsmx-br0, namespaces fsmx-labI, 10.203.0.0/24) are
//! machine-wide, so this lab cannot stand next to another one.  With a lab up (the
//! standing one of the other test binaries), the test takes it down first and puts the
//! standard lab back after only when FSMATRIX_TEST_EXACT=1 (CI: nothing else runs on
//! the machine); otherwise it says why and skips.
mod support;

// Without root the suite says so and is skipped (tests/run.sh runs it, as root).
#[used]
#[link_section = ".init_array"]
static NEEDS: extern "C" fn() = support::skip::needs_root;

use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use support::*;

const MATRIX: &str = r#"name = "bastion"
repeats = 1
warmup = false
drop_caches = false
[postgres]
shared_buffers = "32MB"
max_connections = 20
[[filesystem]]
name = "ext4"
type = "ext4"
mount_options = ["noatime"]
[[workload]]
name = "ro"
builtin = "select-only"
scale = 1
clients = [1]
duration = "2s"
"#;

const BASTION: &str = "10.203.0.11";

/// Runs `cmd`, killing it (by its PID) if it is still going after `limit`.
fn output_within(cmd: &mut Command, limit: Duration) -> Output {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let start = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().expect("output");
            panic!(
                "{cmd:?} still ran after {limit:?}; killed\n{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = child.wait_with_output().expect("output");
    eprintln!(
        "$ {cmd:?} -> {:?} in {:.1} s\n{}{}",
        out.status.code(),
        start.elapsed().as_secs_f64(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn link_exists(name: &str) -> bool {
    Command::new("ip")
        .args(["link", "show", name])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A lab up anywhere on the machine (the names are machine-wide).
fn any_lab_up() -> bool {
    let netns = Command::new("ip").args(["netns", "list"]).output();
    link_exists("fsmx-br0")
        || link_exists("fsmx-br1")
        || netns.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("fsmx-lab"))
}

/// The standing lab, taken down for the test and put back after it (CI only).
struct Standing {
    dir: PathBuf,
    was_up: bool,
}

impl Drop for Standing {
    fn drop(&mut self) {
        if self.was_up {
            let up = lab_cmd(LAB_UP, &self.dir);
            if !std::thread::panicking() {
                assert!(up.status.success(), "could not put the standing lab back");
            }
        }
    }
}

/// Our bastion lab, removed on drop (down is idempotent).
struct BastionLab(PathBuf);

impl Drop for BastionLab {
    fn drop(&mut self) {
        let down = lab_cmd(&["down"], &self.0);
        if !std::thread::panicking() {
            assert!(down.status.success(), "lab down failed");
        }
    }
}

fn bastion_dir() -> PathBuf {
    std::env::var_os("FSMATRIX_LAB_BASTION_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/lib/fsmatrix/lab-bastion"))
}

fn bundle_in(out: &Path) -> PathBuf {
    let mut v: Vec<PathBuf> = std::fs::read_dir(out)
        .expect("read the output folder")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(v.len(), 1, "exactly one bundle in {}: {v:?}", out.display());
    v.remove(0)
}

#[test]
fn a_sweep_reaches_inner_hosts_only_through_the_bastion() {
    let _lock = lab_lock();
    let standing_dir = lab_dir();
    let standing = if any_lab_up() {
        if std::env::var("FSMATRIX_TEST_EXACT").as_deref() != Ok("1") {
            eprintln!(
                "SKIPPED: a lab is up on this machine (bridge fsmx-br0 / fsmx-lab* namespaces) \
                 and its names are machine-wide; this test takes it down only under \
                 FSMATRIX_TEST_EXACT=1 (CI)"
            );
            return;
        }
        let was_up = read_inventory(&standing_dir).is_some();
        assert!(
            was_up,
            "a lab is up, but not the standing one in {standing_dir:?}"
        );
        eprintln!("taking the standing lab down for the bastion test");
        assert!(lab_cmd(&["down"], &standing_dir).status.success());
        Some(Standing {
            dir: standing_dir,
            was_up,
        })
    } else {
        None
    };

    let dir = bastion_dir();
    let lab = BastionLab(dir.clone());
    let up = output_within(
        fsmatrix()
            .args(["lab", "up", "--bastion", "--hosts", "3", "--dir"])
            .arg(&dir),
        Duration::from_secs(180),
    );
    assert!(up.status.success(), "lab up with a bastion failed");
    assert!(link_exists("fsmx-br1"), "no inner bridge");
    let inv = read_inventory(&dir).expect("lab up wrote an inventory");
    let addrs: Vec<&str> = inv.hosts.iter().map(|h| h.address.as_str()).collect();
    assert_eq!(addrs, [BASTION, "10.203.1.12", "10.203.1.13"]);
    let text = std::fs::read_to_string(dir.join("inventory.toml")).unwrap();
    assert_eq!(
        text.matches(&format!("proxy_jump = \"root@{BASTION}\""))
            .count(),
        2,
        "{text}"
    );

    // The inner network has no address on this machine and the bastion does not
    // forward: an inner host's sshd cannot be reached directly.
    let inner: SocketAddr = "10.203.1.12:22".parse().unwrap();
    let direct = TcpStream::connect_timeout(&inner, Duration::from_secs(2));
    assert!(direct.is_err(), "reached {inner} without the bastion");
    let fwd = Command::new("ip")
        .args([
            "netns",
            "exec",
            "fsmx-lab1",
            "sysctl",
            "-n",
            "net.ipv4.ip_forward",
        ])
        .output()
        .expect("sysctl");
    assert_eq!(String::from_utf8_lossy(&fwd.stdout).trim(), "0");
    // lab status reaches every host (the inner ones through the bastion).
    let status = lab_cmd(&["status"], &dir);
    assert!(status.status.success(), "lab status");

    // The small sweep on both inner hosts, through the bastion.
    let tmp = tempfile::tempdir().expect("tempdir");
    let behind: Vec<(&LabHost, &str)> = inv.hosts[1..]
        .iter()
        .map(|h| (h, "proxy_jump = \"root@10.203.0.11\""))
        .collect();
    let inv_path = tmp.path().join("inventory.toml");
    std::fs::write(&inv_path, inventory_for(&inv, &behind, "")).unwrap();
    let matrix = tmp.path().join("matrix.toml");
    std::fs::write(&matrix, MATRIX).unwrap();
    let out = tmp.path().join("out");
    let run = output_within(
        fsmatrix()
            .args(["run", "--inventory"])
            .arg(&inv_path)
            .arg("--matrix")
            .arg(&matrix)
            .arg("--out")
            .arg(&out),
        Duration::from_secs(600),
    );
    assert_eq!(run.status.code(), Some(0), "the sweep through the bastion");
    let bundle = bundle_in(&out);
    let verify = output_within(
        fsmatrix().arg("verify").arg(&bundle),
        Duration::from_secs(60),
    );
    assert!(verify.status.success(), "fsmatrix verify");
    let results = std::fs::read_to_string(bundle.join("data/results.jsonl")).unwrap();
    for h in &inv.hosts[1..] {
        assert!(
            results.contains(&format!("\"{}\"", h.name)),
            "{}: {results}",
            h.name
        );
    }

    drop(lab);
    assert!(!link_exists("fsmx-br1"), "lab down left the inner bridge");
    assert!(
        !link_exists("fsmx-w1"),
        "lab down left the bastion's inner leg"
    );
    assert!(!dir.join("created").exists());
    // Down again: nothing to do, still fine.
    assert!(lab_cmd(&["down"], &dir).status.success());
    drop(standing);
}
