//! The local lab's lifecycle, against the real thing: `fsmatrix lab up` builds 3 hosts,
//! plain OpenSSH reaches each with strict host-key checking, one host's mounts are
//! invisible to another, a second `up` is refused and changes nothing, and `lab down`
//! leaves the machine as it found it.  Plus bad use: no root, no loop devices.
//!
//! A lab standing in the lab dir (a person's, or the other suites' under plain `cargo
//! test`) is taken down first and put back in its own shape when the test ends, pass or
//! fail (support::lab::SetAside); tests/run.sh runs this suite alone, after the others.
//!
//! "As found" is compared exactly when FSMATRIX_TEST_EXACT=1 (CI: nothing else runs on
//! the machine).  Without it (a shared development machine, where other work may add or
//! remove loop devices and mounts meanwhile) only the entries that can be the lab's are
//! compared: fsmx-* namespaces, the lab's loop devices and backing files, mounts of its
//! devices, /run/netns, and every process in one of the lab hosts' pid namespaces.
mod support;

// Without root the suite says so and is skipped (tests/run.sh runs it, as root).
#[used]
#[link_section = ".init_array"]
static NEEDS: extern "C" fn() = support::skip::needs_root_and_the_machine_alone;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Instant;

use support::*;

fn exact() -> bool {
    std::env::var("FSMATRIX_TEST_EXACT").is_ok_and(|v| v == "1")
}

fn run(cmd: &str, args: &[&str]) -> String {
    let out = std::process::Command::new(cmd)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("failed to run {cmd}: {e}"));
    assert!(out.status.success(), "{cmd} {args:?} failed");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// What `lab down` must leave as it was.
#[derive(Debug, PartialEq, Eq)]
struct Snapshot {
    netns: BTreeSet<String>,
    loops: BTreeSet<String>,
    mounts: BTreeSet<String>,
    /// "pid comm" of every sshd, zfs-fuse, postgres and unshare process.
    procs: BTreeSet<String>,
}

fn lines(s: &str) -> BTreeSet<String> {
    s.lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect()
}

fn snapshot() -> Snapshot {
    let mut procs = BTreeSet::new();
    for entry in std::fs::read_dir("/proc").expect("read /proc").flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let comm = std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
        let comm = comm.trim();
        // A zombie holds nothing but its PID until its parent (here the
        // machine's init, which reaps when it gets to it) collects it.
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let zombie = stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'));
        if !zombie && ["sshd", "zfs-fuse", "postgres", "unshare"].contains(&comm) {
            procs.insert(format!("{name} {comm}"));
        }
    }
    Snapshot {
        netns: lines(&run("ip", &["netns", "list"])),
        loops: lines(&run("losetup", &["-a"])),
        mounts: lines(&std::fs::read_to_string("/proc/mounts").expect("read /proc/mounts")),
        procs,
    }
}

/// Processes (root pid numbering) whose pid namespace is one of `ns` ("pid:[N]").
fn procs_in_namespaces(ns: &BTreeSet<String>) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("read /proc").flatten() {
        if let Ok(link) = std::fs::read_link(entry.path().join("ns/pid")) {
            if ns.contains(&link.to_string_lossy().into_owned()) {
                let comm = std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
                found.push(format!(
                    "{} {}",
                    entry.file_name().to_string_lossy(),
                    comm.trim()
                ));
            }
        }
    }
    found
}

fn compare(before: &Snapshot, after: &Snapshot, lab: &[String]) {
    if exact() {
        assert_eq!(before, after, "lab down left the machine changed");
        return;
    }
    let ours = |l: &&String| {
        ["fsmx-lab", "fsmx-br0", "fsmx-v", "/run/netns"]
            .iter()
            .any(|x| l.contains(x))
            || lab.iter().any(|x| l.contains(x))
    };
    let pick = |s: &BTreeSet<String>| s.iter().filter(ours).cloned().collect::<BTreeSet<_>>();
    assert_eq!(
        pick(&before.netns),
        pick(&after.netns),
        "network namespaces"
    );
    assert_eq!(pick(&before.loops), pick(&after.loops), "loop devices");
    assert_eq!(pick(&before.mounts), pick(&after.mounts), "mounts");
    for (what, b, a) in [
        ("netns", &before.netns, &after.netns),
        ("loops", &before.loops, &after.loops),
        ("mounts", &before.mounts, &after.mounts),
        ("procs", &before.procs, &after.procs),
    ] {
        let changed: Vec<_> = b.symmetric_difference(a).collect();
        if !changed.is_empty() {
            eprintln!("note: {what} changed by something else meanwhile: {changed:?}");
        }
    }
}

const MARK_A: &str = r#"
set -eu
dev=$1
mkfs.ext4 -q -F "$dev"
mkdir -p /mnt/fsmx-lifecycle
mount "$dev" /mnt/fsmx-lifecycle
echo "written on $(hostname)" > /mnt/fsmx-lifecycle/marker
cat /mnt/fsmx-lifecycle/marker
"#;

const LOOK_B: &str = r#"
set -eu
dev_a=$1
if [ -e /mnt/fsmx-lifecycle/marker ]; then echo "VISIBLE marker"; fi
if grep -q "^$dev_a " /proc/mounts; then echo "VISIBLE mount"; fi
if grep -q " /mnt/fsmx-lifecycle " /proc/mounts; then echo "VISIBLE mountpoint"; fi
echo "looked on $(hostname)"
"#;

#[test]
fn lab_lifecycle() {
    let _lock = lab_lock();
    let dir = lab_dir();
    let standing = SetAside::take_down(&dir, "the lifecycle test");
    let before = snapshot();

    // Up.
    let t = Instant::now();
    let up = lab_cmd(LAB_UP, &dir);
    assert!(up.status.success(), "lab up failed");
    eprintln!("lab up took {:.1} s", t.elapsed().as_secs_f64());
    let inv = read_inventory(&dir).expect("lab up wrote inventory.toml");
    assert_eq!(inv.hosts.len(), 3);
    let names: Vec<_> = inv.hosts.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(names, ["lab1", "lab2", "lab3"]);
    let addrs: Vec<_> = inv.hosts.iter().map(|h| h.address.as_str()).collect();
    assert_eq!(addrs, ["10.203.0.11", "10.203.0.12", "10.203.0.13"]);
    let text = std::fs::read_to_string(dir.join("inventory.toml")).expect("inventory");
    assert!(text.contains("platform = \"lab\"") && text.contains("os = \"linux\""));
    let mut lab_things: Vec<String> = vec![dir.display().to_string()];

    // Every host: plain OpenSSH, strict host keys; its name, OS and device.
    let mut pid_ns = BTreeSet::new();
    for h in &inv.hosts {
        let out = ssh_ok(
            &inv,
            h,
            "hostname; uname -s; test -b \"$1\" && echo device-ok; readlink /proc/1/ns/pid",
            &[&h.device],
        );
        let got: Vec<_> = out.lines().collect();
        assert_eq!(got[..3], [h.name.as_str(), "Linux", "device-ok"], "{out}");
        assert!(got[3].starts_with("pid:["), "{out}");
        pid_ns.insert(got[3].to_string());
        lab_things.push(format!("{} ", h.device));
        lab_things.push(format!("{}:", h.device));
    }
    // The stand-ins: a BSD userland view over their own Linux, the disk under its
    // BSD name, root's login shell tcsh, no Linux-only command; FreeBSD's sysctl
    // goes on past an unknown name, DragonFly's stops there.
    let oses: Vec<(&str, &str)> = inv
        .standins
        .iter()
        .map(|h| (h.name.as_str(), h.os.as_str()))
        .collect();
    assert_eq!(oses, [("lab4", "freebsd"), ("lab5", "dragonfly")]);
    for (bsd, uname, disk) in [
        (&inv.standins[0], "FreeBSD", "ada1"),
        (&inv.standins[1], "DragonFly", "da1"),
    ] {
        assert_eq!(bsd.device, format!("/dev/{disk}"));
        let out = ssh_ok(
            &inv,
            bsd,
            "uname -s; test -b \"$1\" && echo device-ok; readlink /proc/1/ns/pid; \
             for c in lsblk blkid wipefs findmnt runuser losetup flock sha256sum; do \
             command -v \"$c\" >/dev/null 2>&1 && echo \"HAS $c\"; done; \
             sysctl -n kern.disks; sysctl -n hw.nosuch 2>&1; echo \"exit=$?\"; \
             awk -F: '$1 == \"root\" { print $7 }' /etc/passwd; ls /usr/local/bin",
            &[&bsd.device],
        );
        let got: Vec<_> = out.lines().collect();
        assert_eq!(got[..2], [uname, "device-ok"], "{out}");
        pid_ns.insert(got[2].to_string());
        assert!(
            !out.contains("HAS "),
            "a Linux-only command on the stand-in:\n{out}"
        );
        assert_eq!(got[3], disk, "{out}");
        assert_eq!(
            got[4..6],
            ["sysctl: unknown oid 'hw.nosuch'", "exit=1"],
            "{out}"
        );
        assert_eq!(got[6], "/bin/tcsh", "{out}");
        for pg in ["initdb", "pg_ctl", "pgbench", "postgres", "psql"] {
            assert!(got[7..].contains(&pg), "{pg} in /usr/local/bin:\n{out}");
        }
        let real = std::fs::read_to_string(dir.join(format!("hosts/{}/device", bsd.name)))
            .expect("the stand-in's loop device");
        lab_things.push(format!("{} ", real.trim()));
        lab_things.push(format!("{}:", real.trim()));
    }
    assert_eq!(pid_ns.len(), 5, "each host has its own pid namespace");

    // Strictness: with an empty known_hosts, OpenSSH refuses the host.
    let empty = tempfile::NamedTempFile::new().expect("temp file");
    let refused = ssh_with(&inv, empty.path(), &inv.hosts[0], "true", &[]);
    assert!(
        !refused.status.success(),
        "ssh accepted a host missing from known_hosts"
    );
    assert!(String::from_utf8_lossy(&refused.stderr).contains("Host key verification failed"));

    // Isolation: a filesystem mounted on lab1's device is invisible on lab2.
    let (a, b) = (&inv.hosts[0], &inv.hosts[1]);
    let wrote = ssh_ok(&inv, a, MARK_A, &[&a.device]);
    assert_eq!(wrote.trim(), "written on lab1");
    let looked = ssh_ok(&inv, b, LOOK_B, &[&a.device]);
    assert_eq!(looked.trim(), "looked on lab2", "lab2 sees lab1's mount");
    // ... and lab1 still has it (the mount persists across SSH sessions).
    let again = ssh_ok(&inv, a, "cat /mnt/fsmx-lifecycle/marker", &[]);
    assert_eq!(again.trim(), "written on lab1");
    // The machine's own mount table does not show it either.
    let root_mounts = std::fs::read_to_string("/proc/mounts").expect("read /proc/mounts");
    assert!(!root_mounts.contains("/mnt/fsmx-lifecycle"));

    // Status reports it.
    let status = lab_cmd(&["status"], &dir);
    assert!(status.status.success(), "lab status failed");
    let status = String::from_utf8_lossy(&status.stdout).into_owned();
    let lab1 = status
        .lines()
        .find(|l| l.starts_with("lab1"))
        .expect("lab1 in status");
    assert!(
        lab1.contains("reachable") && lab1.contains("attached"),
        "{lab1}"
    );
    assert!(lab1.contains("ext4 on /mnt/fsmx-lifecycle"), "{lab1}");

    // A second up is refused and changes nothing.
    let mid = snapshot();
    let inv_text = std::fs::read_to_string(dir.join("inventory.toml")).expect("inventory");
    let second = lab_cmd(&["up", "--hosts", "2"], &dir);
    assert!(!second.status.success(), "a second lab up succeeded");
    assert!(String::from_utf8_lossy(&second.stderr).contains("already up"));
    compare(&mid, &snapshot(), &lab_things);
    assert_eq!(
        std::fs::read_to_string(dir.join("inventory.toml")).expect("inventory"),
        inv_text
    );
    assert!(ssh(&inv, b, "true", &[]).status.success());

    // Down (with a filesystem still mounted on lab1): the machine as found.
    let t = Instant::now();
    let down = lab_cmd(&["down"], &dir);
    assert!(down.status.success(), "lab down failed");
    eprintln!("lab down took {:.1} s", t.elapsed().as_secs_f64());
    let after = snapshot();
    compare(&before, &after, &lab_things);
    assert_eq!(
        procs_in_namespaces(&pid_ns),
        Vec::<String>::new(),
        "processes of lab hosts survived lab down"
    );
    assert!(!dir.join("inventory.toml").exists());
    assert!(!dir.join("hosts").exists());
    // Down again: idempotent.
    assert!(lab_cmd(&["down"], &dir).status.success());
    drop(standing);
}

/// A state dir for bad-use tests, which must never be created.
fn scratch_dir() -> PathBuf {
    PathBuf::from(format!("/var/lib/fsmatrix/lab-test-{}", std::process::id()))
}

#[test]
fn up_without_root_says_so_and_changes_nothing() {
    let _lock = lab_lock();
    let dir = scratch_dir();
    let before = snapshot();
    // setpriv (util-linux) drops to nobody, as an ordinary user would run it.
    let out = std::process::Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--reset-env",
        ])
        .arg(env!("CARGO_BIN_EXE_fsmatrix"))
        .args(["lab", "up", "--dir"])
        .arg(&dir)
        .output()
        .expect("failed to run setpriv");
    let err = String::from_utf8_lossy(&out.stderr);
    eprintln!("{err}");
    assert_eq!(out.status.code(), Some(2), "exit code");
    assert!(err.contains("needs root"), "{err}");
    assert!(!dir.exists());
    compare(&before, &snapshot(), &[dir.display().to_string()]);
}

#[test]
fn up_without_loop_devices_says_so_and_changes_nothing() {
    let _lock = lab_lock();
    let dir = scratch_dir();
    let before = snapshot();
    // FSMATRIX_LAB_LOOP_CONTROL: the lab script's documented hook to simulate a machine
    // without /dev/loop-control.
    let out = fsmatrix()
        .args(["lab", "up", "--dir"])
        .arg(&dir)
        .env("FSMATRIX_LAB_LOOP_CONTROL", "/nonexistent/loop-control")
        .output()
        .expect("failed to run fsmatrix");
    let err = String::from_utf8_lossy(&out.stderr);
    eprintln!("{err}");
    assert_eq!(out.status.code(), Some(2), "exit code");
    assert!(err.contains("no loop device support"), "{err}");
    assert!(!dir.exists());
    compare(&before, &snapshot(), &[dir.display().to_string()]);
}

#[test]
fn status_and_down_without_a_lab() {
    let _lock = lab_lock();
    let dir = scratch_dir();
    let status = lab_cmd(&["status"], &dir);
    assert_eq!(status.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&status.stderr).contains("no lab is up"));
    let down = lab_cmd(&["down"], &dir);
    assert!(down.status.success());
    assert!(!dir.exists());
}
