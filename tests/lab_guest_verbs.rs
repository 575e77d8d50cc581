//! The lab's guest (`fsmatrix lab up --guests 1`, issue 26), booted by hand through the
//! remote verbs as the orchestrator runs them on the physical host: `vm-start` on lab1
//! over the lab's SSH boots the TCG guest from the image `lab up` built; the guest is
//! reached through lab1 (a jump to 127.0.0.1:<ssh_port> on lab1's loopback) with its
//! own host key checked strictly; it sees its boot disk and exactly the data disk lab1
//! gave it; `vm-stop` shuts it down through ACPI and leaves only its console; after a
//! second `vm-start`, `vm-reap` (what a new sweep does after a killed orchestrator)
//! leaves no qemu and no file, and so does `teardown work=` after a third.  TCG is slow: the boot is given up to the inventory's
//! boot_timeout.
mod support;

// Without root the suite says so and is skipped (tests/run.sh runs it, as root).
#[used]
#[link_section = ".init_array"]
static NEEDS: extern "C" fn() = support::skip::needs_root_and_lab;

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use support::*;

const VM_DIR: &str = "/var/tmp/fsmatrix/vm";

/// Where the test puts the remote scripts on lab1 ([`upload_scripts`]).
const SCRIPTS: &str = "/var/tmp/fsmx-guest-verbs-test";

/// `sh linux.sh VERB ARGS...` on `host` over the lab's SSH.
fn verb(inv: &LabInventory, host: &LabHost, verb: &str, args: &[String]) -> Output {
    let mut all = vec![format!("{SCRIPTS}/linux.sh"), verb.to_string()];
    all.extend(args.iter().cloned());
    let refs: Vec<&str> = all.iter().map(String::as_str).collect();
    ssh(inv, host, "exec /bin/sh \"$@\"", &refs)
}

fn kv(out: &Output, key: &str) -> String {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{key}=")).map(str::to_string))
        .unwrap_or_else(|| {
            panic!(
                "no {key}= (exit {:?}):\n{}\n{}",
                out.status.code(),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        })
}

/// Plain OpenSSH to the guest: through `host` (ProxyCommand, so the hop gets the same
/// strict options), to 127.0.0.1:<port> there.
fn guest_ssh(inv: &LabInventory, host: &LabHost, port: u16, command: &str) -> Output {
    let opts = format!(
        "-o BatchMode=yes -o StrictHostKeyChecking=yes -o UserKnownHostsFile={} -o ConnectTimeout=60 -o LogLevel=ERROR -i {}",
        inv.known_hosts.display(),
        inv.identity_file.display()
    );
    let mut cmd = Command::new("ssh");
    cmd.args(opts.split(' '))
        .arg("-o")
        .arg(format!(
            "ProxyCommand=ssh {opts} -W %h:%p root@{}",
            host.address
        ))
        .args(["-p", &port.to_string(), "root@127.0.0.1", command])
        .stdin(Stdio::null());
    cmd.output().expect("run ssh")
}

/// The guest's line of `fsmatrix lab status` (which exits 0: every part is up).
fn guest_status(name: &str) -> String {
    let o = fsmatrix()
        .args(["lab", "status", "--dir"])
        .arg(lab_dir())
        .output()
        .expect("lab status");
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "lab status: {text}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    text.lines()
        .find(|l| l.starts_with(&format!("{name} ")))
        .unwrap_or_else(|| panic!("no {name} line in lab status: {text}"))
        .trim_end()
        .to_string()
}

fn qemu_in(inv: &LabInventory, host: &LabHost) -> String {
    ssh_ok(
        inv,
        host,
        "for p in /proc/[0-9]*; do c=$(tr '\\000' ' ' <\"$p/cmdline\" 2>/dev/null) || continue; \
         case $c in *qemu-system-x86_64*) echo \"${p#/proc/} $c\" ;; esac; done; \
         ls -A \"$1\" 2>/dev/null | sed 's/^/file: /'",
        &[VM_DIR],
    )
}

#[test]
fn guest_boots_with_vm_start_and_leaves_nothing_after_vm_stop_and_vm_reap() {
    let lab = Lab::hold(&["lab1", "lab1-vm"]);
    let Some(g) = lab.inv.guests.first().cloned() else {
        panic!("the standing lab has no guest: bring it up with --guests 1 (tests/run.sh does)");
    };
    let host = lab
        .inv
        .hosts
        .iter()
        .find(|h| h.name == g.guest_of)
        .expect("the guest's host is a lab host")
        .clone();
    assert_eq!(
        (g.name.as_str(), g.device.as_str()),
        ("lab1-vm", "/dev/vdb")
    );
    assert_eq!(
        g.disk, host.device,
        "the guest gets its host's listed device"
    );
    let start: Vec<String> = vec![
        format!("dir={VM_DIR}"),
        format!("guest={}", g.name),
        format!("image={}", g.image),
        "format=raw".into(),
        format!("kernel={}", g.kernel),
        format!("initrd={}", g.initrd),
        format!("cmdline={}", g.cmdline),
        "memory=1024".into(),
        "cpus=1".into(),
        "bus=virtio-blk".into(),
        "cache=none".into(),
        "aio=native".into(),
        "accel=tcg".into(),
        format!("disk={}", g.disk),
        format!("port={}", g.ssh_port),
        // The physical host's guard on the disk: its devices in the inventory.
        format!("allowed={}", host.device),
    ];
    upload_scripts(&lab.inv, &host, SCRIPTS);
    // Whatever an earlier failed run left.
    let _ = verb(&lab.inv, &host, "vm-reap", &[format!("dir={VM_DIR}")]);

    let t = Instant::now();
    let out = verb(&lab.inv, &host, "vm-start", &start);
    assert!(
        out.status.success(),
        "vm-start: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = kv(&out, "qemu_cmdline");
    for part in [
        " -machine q35,accel=tcg ",
        " -cpu max ",
        " -name fsmx-lab1-vm ",
        ",serial=fsmxdata ",
        " -append root=LABEL=fsmx-guest ro console=ttyS0 ",
    ] {
        assert!(line.contains(part), "{part} not in {line}");
    }
    assert!(
        line.starts_with("qemu-system-x86_64 ")
            && line.contains(&format!(" -drive file={},format=raw", g.disk)),
        "{line}"
    );
    assert!(kv(&out, "qemu").starts_with("QEMU emulator version"));
    let shown = guest_status(&g.name);
    assert!(
        shown.contains("lab1  127.0.0.1:") && shown.contains("present   running (qemu pid "),
        "lab status while the guest runs: {shown}"
    );
    // vm-check (what `check` asks) sees the guest running, and its own qemu holding
    // the forwarded port is not a problem.
    let checked = verb(&lab.inv, &host, "vm-check", &start);
    assert!(checked.status.success(), "vm-check: {checked:?}");
    assert_eq!(kv(&checked, "running"), "yes");
    assert!(
        !String::from_utf8_lossy(&checked.stdout).contains("problem="),
        "{}",
        String::from_utf8_lossy(&checked.stdout)
    );
    // A second start of the same guest is refused while it runs.
    let again = verb(&lab.inv, &host, "vm-start", &start);
    assert_eq!(again.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&again.stderr).contains("already running"));

    // Its SSH, its host key checked (lab up wrote [127.0.0.1]:<port> to known_hosts).
    let deadline = Instant::now() + Duration::from_secs(300);
    let seen = loop {
        let o = guest_ssh(
            &lab.inv,
            &host,
            g.ssh_port,
            "hostname; lsblk -dnr -o NAME,SERIAL | sort; systemd-detect-virt",
        );
        if o.status.success() {
            break String::from_utf8_lossy(&o.stdout).into_owned();
        }
        assert!(
            Instant::now() < deadline,
            "no SSH to the guest in 300 s: {}\n{}",
            String::from_utf8_lossy(&o.stderr),
            ssh_ok(
                &lab.inv,
                &host,
                "tail -n 30 \"$1\"",
                &[&format!("{VM_DIR}/{}.console", g.name)]
            )
        );
        std::thread::sleep(Duration::from_secs(3));
    };
    eprintln!("guest SSH after {:.1} s (TCG)", t.elapsed().as_secs_f64());
    let lines: Vec<&str> = seen.lines().map(str::trim).collect();
    assert_eq!(lines, ["lab1-vm", "vda", "vdb fsmxdata", "qemu"], "{seen}");

    // ACPI shutdown: only the console is left, no qemu.
    let t = Instant::now();
    let out = verb(
        &lab.inv,
        &host,
        "vm-stop",
        &[
            format!("dir={VM_DIR}"),
            format!("guest={}", g.name),
            "timeout=120".into(),
        ],
    );
    assert_eq!(kv(&out, "stopped"), "acpi");
    eprintln!("vm-stop (ACPI) took {:.1} s", t.elapsed().as_secs_f64());
    let shown = guest_status(&g.name);
    assert!(
        shown.ends_with("present   stopped"),
        "lab status after vm-stop: {shown}"
    );
    let left = qemu_in(&lab.inv, &host);
    assert_eq!(left.trim(), format!("file: {}.console", g.name), "{left}");

    // Started again and reaped (a killed orchestrator, then a new sweep's teardown).
    let out = verb(&lab.inv, &host, "vm-start", &start);
    assert!(
        out.status.success(),
        "vm-start: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::thread::sleep(Duration::from_secs(5));
    let out = verb(&lab.inv, &host, "vm-reap", &[format!("dir={VM_DIR}")]);
    assert_eq!(kv(&out, "reaped"), g.name);
    let left = qemu_in(&lab.inv, &host);
    assert_eq!(left.trim(), "", "left on {}: {left}", host.name);

    // The leftovers teardown of the host (`teardown work=`) reaps a guest too.
    let out = verb(&lab.inv, &host, "vm-start", &start);
    assert!(
        out.status.success(),
        "vm-start: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = verb(
        &lab.inv,
        &host,
        "teardown",
        &[
            format!("dev={}", host.device),
            format!("allowed={}", host.device),
            "work=/var/tmp/fsmatrix".into(),
        ],
    );
    assert!(
        out.status.success(),
        "teardown: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(kv(&out, "vm_reaped"), g.name);
    let left = qemu_in(&lab.inv, &host);
    assert_eq!(left.trim(), "", "left on {}: {left}", host.name);
    ssh_ok(&lab.inv, &host, "rm -rf \"$1\"", &[SCRIPTS]);
}
