//! issue 26 on the local lab: lab1 and its TCG guest lab1-vm (`lab up
//! --guests 1`, the guests' inventory `<lab>/inventory-guests.toml`): a
//! sweep runs both on lab1's one disk, never at once, under lab1's lock;
//! a guest that does not boot fails its cells with its console's tail; an
//! interrupted or killed orchestrator leaves no guest behind.
//! Needs a standing lab with a guest (tests/run.sh brings one up).
mod support;

#[used]
#[link_section = ".init_array"]
static NEEDS: extern "C" fn() = support::skip::needs_root_and_lab;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{fsmatrix, lab_dir, ssh_ok, Lab, LabHost, LabInventory};

/// The lab's guest inventory (lab1 and lab1-vm) with `edit` applied, a
/// one-variant matrix of `repeats` runs of `duration`, in a temporary
/// folder: (folder, inventory, matrix).
fn inputs(
    edit: impl Fn(String) -> String,
    duration: &str,
    repeats: u32,
) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let src = lab_dir().join("inventory-guests.toml");
    let text = std::fs::read_to_string(&src).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; bring the lab up with guests: fsmatrix lab up --guests 1",
            src.display()
        )
    });
    let tmp = tempfile::tempdir().expect("tempdir");
    let inv = tmp.path().join("inventory.toml");
    std::fs::write(&inv, edit(text)).expect("write the inventory");
    let matrix = tmp.path().join("matrix.toml");
    std::fs::write(
        &matrix,
        format!(
            "name = \"guest\"\nrepeats = {repeats}\nwarmup = false\n\
             [postgres]\nshared_buffers = \"32MB\"\n\
             [[filesystem]]\nname = \"ext4\"\ntype = \"ext4\"\n\
             [[workload]]\nname = \"ro\"\nbuiltin = \"select-only\"\nscale = 1\nclients = [1]\nduration = \"{duration}\"\n"
        ),
    )
    .expect("write the matrix");
    (tmp, inv, matrix)
}

fn run_cmd(inv: &Path, matrix: &Path, out: &Path) -> Command {
    let mut c = fsmatrix();
    c.args(["run", "-q", "--inventory"])
        .arg(inv)
        .arg("--matrix")
        .arg(matrix)
        .arg("--out")
        .arg(out)
        .stdin(Stdio::null());
    c
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

/// Each host's cell statuses from results.jsonl.
fn statuses(bundle: &Path) -> Vec<(String, String, String)> {
    let text = std::fs::read_to_string(bundle.join("data/results.jsonl")).expect("results.jsonl");
    text.lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("json line");
            (
                v["params"]["host"].as_str().unwrap_or("?").to_string(),
                v["status"]["state"]
                    .as_str()
                    .or_else(|| {
                        v["status"]
                            .as_object()
                            .and_then(|o| o.keys().next().map(|k| k.as_str()))
                    })
                    .unwrap_or("?")
                    .to_string(),
                v.to_string(),
            )
        })
        .collect()
}

/// Over plain SSH to lab1: no guest process, no overlay, no pid file.
fn assert_no_guest_left(inv: &LabInventory, h: &LabHost) {
    let out = ssh_ok(
        inv,
        h,
        r#"echo "qemu=$(pgrep -c -f '^qemu-system-x86_64 .*-name fsmx-' || true)"
echo "overlays=$(ls /var/tmp/fsmatrix/vm/ 2>/dev/null | grep -c -e '\.qcow2$' -e '\.pid$' || true)"
"#,
        &[],
    );
    assert!(
        out.contains("qemu=0\n"),
        "a guest still runs on {}: {out}",
        h.name
    );
    assert!(
        out.contains("overlays=0\n"),
        "an overlay or pid file is left on {}: {out}",
        h.name
    );
}

/// The acceptance sweep: ext4 on lab1 and on its guest, both done; the
/// guest got exactly lab1's listed device; lab1's lock refused a second
/// sweep while the guest ran; the platform comparison is printed and in the
/// reports; the bundle verifies; nothing is left on lab1.
#[test]
fn a_sweep_runs_lab1_and_its_guest_on_one_disk_under_one_lock() {
    let lab = Lab::hold(&["lab1", "lab1-vm"]);
    let lab1 = lab.inv.hosts[0].clone();
    let (tmp, inv, matrix) = inputs(|t| t, "3s", 2);
    let out = tmp.path().join("out");
    let t0 = Instant::now();
    let mut child = run_cmd(&inv, &matrix, &out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn fsmatrix run");
    // Once the guest is started, a second sweep aimed at lab1 is refused.
    let mut refused = None;
    while t0.elapsed() < Duration::from_secs(600) {
        let started = std::fs::read_dir(&out)
            .ok()
            .and_then(|mut d| d.next())
            .and_then(|e| e.ok())
            .map(|e| e.path().join("data/hosts/lab1-vm/vm-start.txt"))
            .is_some_and(|p| p.exists());
        if started {
            let only_lab1 = tmp.path().join("lab1.toml");
            let text = std::fs::read_to_string(&inv).expect("inventory");
            let cut = text
                .find("\n[[host]]\nname = \"lab1-vm\"")
                .expect("the guest entry");
            std::fs::write(&only_lab1, &text[..cut]).expect("write");
            let second = run_cmd(&only_lab1, &matrix, &tmp.path().join("out2"))
                .output()
                .expect("second run");
            refused = Some(second);
            break;
        }
        if child.try_wait().expect("try_wait").is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    let o = child.wait_with_output().expect("wait");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    eprintln!(
        "run -> {:?} in {:.0} s\n{text}",
        o.status.code(),
        t0.elapsed().as_secs_f64()
    );
    let second = refused.expect("the guest was started while the sweep ran");
    let said = String::from_utf8_lossy(&second.stderr);
    assert!(
        !second.status.success() && second.status.code() != Some(1),
        "a second sweep on lab1 is refused before it runs: {:?} {said}",
        second.status.code()
    );
    assert!(said.contains("lab1"), "{said}");
    assert_eq!(o.status.code(), Some(0), "every cell done: {text}");
    let bundle = bundle_in(&out);
    let st = statuses(&bundle);
    for host in ["lab1", "lab1-vm"] {
        let of: Vec<_> = st.iter().filter(|(h, _, _)| h == host).collect();
        assert_eq!(of.len(), 2, "{host}: {st:?}");
        assert!(of.iter().all(|(_, s, _)| s == "done"), "{host}: {of:?}");
    }
    // The guest's data disk was lab1's listed device, and nothing else.
    let start = std::fs::read_to_string(bundle.join("data/hosts/lab1-vm/vm-start.txt"))
        .expect("vm-start.txt");
    let cmdline = start
        .lines()
        .find_map(|l| l.strip_prefix("qemu_cmdline="))
        .expect("qemu_cmdline");
    let drives: Vec<&str> = cmdline.split(" -drive ").skip(1).collect();
    assert_eq!(
        drives.len(),
        2,
        "the overlay and the data disk only: {cmdline}"
    );
    assert!(
        drives
            .iter()
            .any(|d| d.starts_with(&format!("file={},", lab1.device))),
        "{cmdline}"
    );
    assert!(cmdline.contains("accel=tcg"), "{cmdline}");
    // The guest's own facts: its one data disk is /dev/vdb, it runs under
    // a hypervisor, and what started it is recorded (accel=tcg).
    let facts: Value = serde_json::from_str(
        &std::fs::read_to_string(bundle.join("data/hosts/lab1-vm/facts.json")).expect("facts"),
    )
    .expect("facts.json");
    let f = |k: &str| facts[k].as_str().unwrap_or_default().to_string();
    assert_eq!(f("device.0.path"), "/dev/vdb", "{facts}");
    assert_eq!(f("device.0.present"), "yes", "{facts}");
    assert_ne!(f("vm_guest"), "none", "the guest knows it is one: {facts}");
    assert_eq!(f("hypervisor.accel"), "tcg", "{facts}");
    assert!(
        f("hypervisor.qemu_cmdline").contains(&lab1.device),
        "{facts}"
    );
    // Inside, the guest sees its boot disk and that one data disk only.
    assert_eq!(f("disks"), "vda vdb", "{facts}");
    assert!(
        std::fs::metadata(bundle.join("data/hosts/lab1-vm/console.log")).is_ok_and(|m| m.len() > 0),
        "the guest's console is kept"
    );
    // The platform comparison: in the summary and in the reports.
    assert!(text.contains("ext4 on lab1: under TCG"), "{text}");
    let report = fsmatrix()
        .args(["report", "--format", "json"])
        .arg(&bundle)
        .output()
        .expect("report");
    let json = String::from_utf8_lossy(&report.stdout);
    assert!(json.contains("\"platforms\""), "{json}");
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
    assert_no_guest_left(&lab.inv, &lab1);
}

/// `edit` for [`inputs`]: in `[host.vm]`, `key`'s line set to `key = value`.
fn set_vm(text: String, key: &str, value: &str) -> String {
    let mut out = String::new();
    let mut in_vm = false;
    for l in text.lines() {
        if l.starts_with('[') {
            in_vm = l == "[host.vm]";
        }
        if in_vm && l.starts_with(&format!("{key} = ")) {
            out.push_str(&format!("{key} = {value}\n"));
        } else {
            out.push_str(l);
            out.push('\n');
        }
    }
    assert!(out != text, "no {key} in [host.vm]:\n{text}");
    out
}

/// `check` asks lab1 (`vm-check`, read-only) whether its guest could start, before any
/// sweep boots it: the lab's guest is ready; an image that is not there, or a raw image
/// declared qcow2 (qemu-img's probe), makes lab1 and its guest not ready (exit 1) with
/// lab1's words; nothing is started (no qemu, no overlay).
#[test]
fn check_asks_the_physical_host_whether_each_guest_could_start() {
    let lab = Lab::hold(&["lab1", "lab1-vm"]);
    let lab1 = lab.inv.hosts[0].clone();
    let check = |edit: &dyn Fn(String) -> String| {
        let (_tmp, inv, matrix) = inputs(edit, "2s", 1);
        support::check_with(&inv, &matrix)
    };
    let (code, text) = check(&|t| t);
    assert_eq!(code, Some(0), "{text}");
    assert!(!text.contains("guest lab1-vm: "), "{text}");
    let missing = lab_dir().join("guest/nosuch-fsmx-test.img");
    let (code, text) =
        check(&|t| set_vm(t, "image", &format!("{:?}", missing.display().to_string())));
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains(&format!(
            "lab1: guest lab1-vm: image {}: no such file",
            missing.display()
        )),
        "{text}"
    );
    assert!(
        text.contains("lab1-vm: its physical host is not ready: guest lab1-vm: image "),
        "{text}"
    );
    let (code, text) = check(&|t| set_vm(t, "image_format", "\"qcow2\""));
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains("lab1: guest lab1-vm: image ")
            && text.contains(
                " is a raw image (qemu-img info), not format=qcow2: set image_format = \"raw\" in [host.vm]"
            ),
        "{text}"
    );
    assert_no_guest_left(&lab.inv, &lab1);
}

/// A guest whose image does not boot: its cells fail with the console's
/// tail in the record; lab1's own cells are done; nothing is left.
#[test]
fn a_guest_that_does_not_boot_fails_its_cells_with_its_console() {
    let lab = Lab::hold(&["lab1", "lab1-vm"]);
    let lab1 = lab.inv.hosts[0].clone();
    // An image without a root filesystem: the kernel boots and the
    // initramfs finds no root (the console says so).
    let broken = lab_dir().join("guest/broken-root.img");
    std::fs::create_dir_all(broken.parent().expect("parent")).expect("mkdir");
    std::fs::write(&broken, vec![0u8; 1 << 20]).expect("write the broken image");
    let (tmp, inv, matrix) = inputs(
        |t| {
            let mut out = String::new();
            let mut in_vm = false;
            for l in t.lines() {
                if l.starts_with('[') {
                    in_vm = l == "[host.vm]";
                }
                if in_vm && l.starts_with("image = ") {
                    out.push_str(&format!("image = {:?}\n", broken.display().to_string()));
                } else if in_vm && l.starts_with("boot_timeout = ") {
                    out.push_str("boot_timeout = 40\n");
                } else {
                    out.push_str(l);
                    out.push('\n');
                }
            }
            out
        },
        "2s",
        2,
    );
    let out = tmp.path().join("out");
    let o = run_cmd(&inv, &matrix, &out).output().expect("run");
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let _ = std::fs::remove_file(&broken);
    let st = statuses(&bundle_in(&out));
    let metal: Vec<_> = st.iter().filter(|(h, _, _)| h == "lab1").collect();
    assert!(
        metal.len() == 2 && metal.iter().all(|(_, s, _)| s == "done"),
        "{metal:?}"
    );
    let guest: Vec<_> = st.iter().filter(|(h, _, _)| h == "lab1-vm").collect();
    assert_eq!(guest.len(), 2, "{st:?}");
    for (_, s, line) in &guest {
        assert_eq!(s, "failed", "{line}");
        assert!(
            line.contains("vm-boot") && line.contains("serial console ends with"),
            "{line}"
        );
        assert!(
            // The kernel's or initramfs-tools' own words: how far the boot got in
            // 40 s depends on the machine's load (under load, only to the init
            // scripts' "Begin: Mounting root file system").
            line.contains("Linux version")
                || line.contains("initramfs")
                || line.contains("Begin: Mounting root file system")
                || line.contains("Gave up"),
            "the console's own words: {line}"
        );
    }
    assert_no_guest_left(&lab.inv, &lab1);
}

/// SIGINT while the guest runs stops it; a SIGKILLed orchestrator's guest
/// is reaped by the next sweep before it uses the disk.
#[test]
fn an_interrupted_or_killed_sweep_leaves_no_guest() {
    let lab = Lab::hold(&["lab1", "lab1-vm"]);
    let lab1 = lab.inv.hosts[0].clone();
    for kill in [false, true] {
        let (tmp, inv, matrix) = inputs(|t| t, "30s", 1);
        let out = tmp.path().join("out");
        let mut child = run_cmd(&inv, &matrix, &out)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn");
        let t0 = Instant::now();
        loop {
            let started = std::fs::read_dir(&out)
                .ok()
                .and_then(|mut d| d.next())
                .and_then(|e| e.ok())
                .map(|e| e.path().join("data/hosts/lab1-vm/vm-start.txt"))
                .is_some_and(|p| p.exists());
            if started {
                break;
            }
            assert!(
                child.try_wait().expect("try_wait").is_none(),
                "the sweep ended before its guest started"
            );
            assert!(
                t0.elapsed() < Duration::from_secs(600),
                "the guest never started"
            );
            std::thread::sleep(Duration::from_millis(500));
        }
        std::thread::sleep(Duration::from_secs(5));
        if kill {
            child.kill().expect("SIGKILL");
            let _ = child.wait();
            // The killed sweep's guest still runs; the next sweep reaps it.
            // Its leased lock ends with it (docs/trust.md), so the next
            // sweep is not refused.
            let (tmp2, inv2, matrix2) = inputs(|t| t, "2s", 1);
            let o = run_cmd(&inv2, &matrix2, &tmp2.path().join("out"))
                .output()
                .expect("run");
            assert_eq!(
                o.status.code(),
                Some(0),
                "{}",
                String::from_utf8_lossy(&o.stderr)
            );
        } else {
            let s = support::interrupt_and_wait(&mut child, Duration::from_secs(240));
            assert!(!s.success(), "an interrupted sweep does not exit 0");
        }
        assert_no_guest_left(&lab.inv, &lab1);
    }
}
