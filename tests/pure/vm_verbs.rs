//! The guest verbs of remote-scripts/common.sh (vm-start, vm-stop, vm-reap; issue 26)
//! without qemu: every hostile value is a usage error (exit 2) that names it, under every
//! POSIX shell the scripts must run under, and nothing is made (no overlay, no fifo: qemu
//! is never reached); vm-stop and vm-reap end only a qemu of that guest, never another
//! process, whatever its pid file says.  The boot itself is tests/lab_guest.rs.
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::support::skip::tool_or_skip;

fn linux_sh() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../remote-scripts/linux.sh")
}

/// The shells the remote scripts run under (as the every_*_posix_shell tests).
const SHELLS: [(&str, &[&str], &str); 5] = [
    ("dash", &[], "dash"),
    ("posh", &[], "posh"),
    ("mksh", &[], "mksh"),
    ("yash", &[], "yash"),
    ("busybox", &["sh"], "busybox"),
];

fn script(shell: &str, pre: &[&str], verb: &str, args: &[String]) -> Output {
    Command::new(shell)
        .args(pre)
        .arg(linux_sh())
        .arg(verb)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("run {shell}: {e}"))
}

/// Good vm-start arguments; `dir` is `<tmp>/vm`, which must not exist afterwards.
fn good(dir: &Path) -> Vec<(&'static str, String)> {
    vec![
        ("dir", format!("{}/vm", dir.display())),
        ("guest", "lab1-vm".into()),
        ("image", "/var/lib/fsmatrix/lab/guest/nosuch.img".into()),
        ("format", "raw".into()),
        ("kernel", "/var/lib/fsmatrix/lab/guest/vmlinuz".into()),
        ("initrd", "/var/lib/fsmatrix/lab/guest/initrd.img".into()),
        ("cmdline", "root=LABEL=fsmx-guest ro console=ttyS0".into()),
        ("memory", "1024".into()),
        ("cpus", "1".into()),
        ("bus", "virtio-blk".into()),
        ("cache", "none".into()),
        ("aio", "native".into()),
        ("accel", "tcg".into()),
        ("disk", "/dev/loop0".into()),
        ("port", "10022".into()),
    ]
}

fn with(args: &[(&'static str, String)], name: &str, value: Option<&str>) -> Vec<String> {
    let mut out: Vec<String> = args
        .iter()
        .filter(|(n, _)| *n != name)
        .map(|(n, v)| format!("{n}={v}"))
        .collect();
    if let Some(v) = value {
        out.push(format!("{name}={v}"));
    }
    out
}

/// Hostile or absurd values, each with what the message must name.
fn hostile_start() -> Vec<(&'static str, Option<&'static str>)> {
    vec![
        ("dir", Some("relative/vm")),
        ("dir", Some("/tmp/not-the-vm-folder")),
        ("dir", Some("/tmp/a,b/vm")),
        ("dir", Some("/tmp/../etc/vm")),
        ("guest", Some("../../etc/passwd")),
        ("guest", Some("a,b")),
        ("guest", Some("$(id)")),
        ("guest", Some("-name")),
        ("guest", Some(".hidden")),
        (
            "guest",
            Some("a123456789012345678901234567890123456789012345678901234567890123"),
        ),
        ("guest", None),
        ("image", Some("relative.img")),
        ("image", Some("/var/lib/x.img,if=none,id=evil")),
        ("image", Some("/var/lib/../../etc/shadow")),
        ("image", Some("/var/lib//x.img")),
        ("image", Some("/var/lib/./x.img")),
        ("image", Some("/dev/sda")),
        ("image", Some("/proc/self/environ")),
        ("image", Some("/var/lib/x img")),
        ("image", Some("/var/lib/x;reboot")),
        ("image", Some("/var/lib/*.img")),
        ("image", None),
        ("format", Some("vmdk")),
        ("format", Some("raw,backing=x")),
        ("kernel", Some("/boot/vmlinuz,x")),
        ("initrd", Some("/boot/initrd`id`")),
        ("cmdline", Some("root=/dev/vda; reboot")),
        ("cmdline", Some("init=/bin/sh$(id)")),
        ("memory", Some("127")),
        ("memory", Some("1048577")),
        ("memory", Some("99999999999999999999")),
        ("memory", Some("1G")),
        ("memory", Some("-1")),
        ("memory", Some("0128")),
        ("cpus", Some("0")),
        ("cpus", Some("257")),
        ("bus", Some("ide")),
        ("bus", Some("virtio-blk,drive=boot")),
        ("cache", Some("none,aio=native")),
        ("aio", Some("posix")),
        ("accel", Some("hvf")),
        ("accel", Some("kvm:tcg")),
        ("disk", Some("/etc/passwd")),
        ("disk", Some("/dev/loop0,format=qcow2")),
        ("disk", Some("/dev/../etc/shadow")),
        ("disk", None),
        ("port", Some("0")),
        ("port", Some("65536")),
        ("port", Some("22-:22,hostfwd=tcp::2222")),
    ]
}

#[test]
fn vm_start_refuses_every_hostile_value_before_making_anything() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let args = good(tmp.path());
    for (shell, pre, package) in SHELLS {
        if !tool_or_skip(shell, package) {
            continue;
        }
        for ((name, value), verb) in hostile_start()
            .into_iter()
            .flat_map(|h| [(h, "vm-start"), (h, "vm-check")])
        {
            let out = script(shell, pre, verb, &with(&args, name, value));
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(
                out.status.code(),
                Some(2),
                "{shell}: {verb} {name}={value:?} was not a usage error:\n{err}"
            );
            let named = match value {
                Some(v) => format!("{name}={v}"),
                None => format!("missing argument {name}="),
            };
            assert!(
                err.contains(&format!("error: usage: {verb}: ")) && err.contains(&named),
                "{shell}: {verb} {name}={value:?}: the message does not name it:\n{err}"
            );
            assert!(
                !tmp.path().join("vm").exists(),
                "{shell}: {name}={value:?}: the vm folder was made"
            );
        }
        // Options that only go with others.
        let no_kernel = with(&with_pairs(&args, "kernel"), "cmdline", Some("ro"));
        let out = script(shell, pre, "vm-start", &no_kernel);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{shell}: cmdline without kernel"
        );
        let o_direct = with(&args, "cache", Some("writeback"));
        let out = script(shell, pre, "vm-start", &o_direct);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{shell}: aio=native, cache=writeback"
        );
        assert!(String::from_utf8_lossy(&out.stderr).contains("aio=native needs cache=none"));
        // Every value good: the check passes and the missing image is a failed step
        // (exit 1), still before anything is made.
        let out = script(shell, pre, "vm-start", &with(&args, "x", None));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{shell}: good values:\n{err}");
        assert!(err.contains("nosuch.img: no such file"), "{shell}: {err}");
        assert!(!tmp.path().join("vm").exists(), "{shell}");
    }
}

/// `vm-check` (what `fsmatrix check` asks of a physical host for each guest) lists every
/// problem `vm-start` would stop at, at once and read-only, under every shell: files
/// missing, a data disk that is no block device, an image whose format (qemu-img's probe)
/// is not the inventory's, an SSH port another process listens on; and `vm-start` with
/// the same values fails (exit 1) naming them all, before anything is made.
#[test]
fn vm_check_lists_what_would_keep_vm_start_from_starting() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let f = |name: &str| tmp.path().join(name).display().to_string();
    let mut args = good(tmp.path());
    for (k, v) in args.iter_mut() {
        match *k {
            "image" => *v = f("nosuch.img"),
            "kernel" => *v = f("vmlinuz"),
            "initrd" => *v = f("initrd.img"),
            "disk" => *v = "/dev/null".into(),
            _ => {}
        }
    }
    // Something listens on 127.0.0.1:<port>: the guest's forward would fail.
    let busy = std::net::TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    let port = busy.local_addr().expect("addr").port().to_string();
    let args = with_pairs(&args, "port")
        .into_iter()
        .chain([("port", port.clone())])
        .collect::<Vec<_>>();
    let problems = |out: &Output| -> Vec<String> {
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.strip_prefix("problem=").map(str::to_string))
            .collect()
    };
    let has_ss = tool_or_skip("ss", "iproute2");
    for (shell, pre, package) in SHELLS {
        if !tool_or_skip(shell, package) {
            continue;
        }
        let out = script(shell, pre, "vm-check", &with(&args, "x", None));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{shell}: vm-check:\n{err}");
        assert!(
            String::from_utf8_lossy(&out.stdout).starts_with("running=no\n"),
            "{shell}: {out:?}"
        );
        let p = problems(&out);
        let mut want = vec![
            format!("image {}: no such file", f("nosuch.img")),
            format!("kernel {}: no such file", f("vmlinuz")),
            format!("initrd {}: no such file", f("initrd.img")),
            "disk /dev/null is not a block device".to_string(),
        ];
        // Without QEMU here (a person's machine), vm-check says so too, in its order.
        if !crate::support::skip::have_tool("qemu-system-x86_64") {
            want.push(
                "qemu-system-x86_64 not found (Debian: apt-get install qemu-system-x86)".into(),
            );
        }
        if !crate::support::skip::have_tool("qemu-img") {
            want.push("qemu-img not found (Debian: apt-get install qemu-utils)".into());
        }
        if has_ss {
            want.push(format!(
                "port {port} is in use on this host (127.0.0.1:{port} listens, ss -ltn): the \
                 guest's SSH is forwarded from 127.0.0.1:{port}; set another ssh_port in [host.vm]"
            ));
        }
        for w in &want {
            assert!(p.contains(w), "{shell}: {w:?} not in {p:#?}");
        }
        assert!(
            !tmp.path().join("vm").exists(),
            "{shell}: vm-check made the folder"
        );
        // vm-start stops at the same problems, all named in one message.
        let out = script(shell, pre, "vm-start", &with(&args, "x", None));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{shell}: vm-start:\n{err}");
        assert!(
            err.contains(&format!("error: vm-start: {}", want.join("; "))),
            "{shell}: {err}"
        );
        assert!(
            !tmp.path().join("vm").exists(),
            "{shell}: vm-start made the folder"
        );
    }
    // The files there: an image qemu-img probes as raw, declared qcow2.
    if !tool_or_skip("qemu-img", "qemu-utils") {
        return;
    }
    std::fs::write(f("disk.img"), vec![0u8; 1 << 20]).expect("image");
    std::fs::write(f("vmlinuz"), b"k").expect("kernel");
    std::fs::write(f("initrd.img"), b"i").expect("initrd");
    let declared = with_pairs(&args, "image")
        .into_iter()
        .chain([("image", f("disk.img"))])
        .collect::<Vec<_>>();
    let out = script(
        "dash",
        &[],
        "vm-check",
        &with(&declared, "format", Some("qcow2")),
    );
    let p = problems(&out);
    assert!(
        p.contains(&format!(
            "image {} is a raw image (qemu-img info), not format=qcow2: set image_format = \"raw\" in [host.vm]",
            f("disk.img")
        )),
        "{p:#?}"
    );
    assert!(!p.iter().any(|x| x.contains("no such file")), "{p:#?}");
    // Declared as it is: no word about the image.
    let out = script(
        "dash",
        &[],
        "vm-check",
        &with(&declared, "format", Some("raw")),
    );
    assert!(
        !problems(&out).iter().any(|x| x.starts_with("image ")),
        "{out:?}"
    );
    drop(busy);
}

fn with_pairs(args: &[(&'static str, String)], drop: &str) -> Vec<(&'static str, String)> {
    args.iter().filter(|(n, _)| *n != drop).cloned().collect()
}

#[test]
fn vm_stop_and_vm_reap_refuse_hostile_values() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = format!("dir={}/vm", tmp.path().display());
    let cases: Vec<(&str, Vec<String>, &str)> = vec![
        (
            "vm-stop",
            vec![dir.clone(), "guest=g".into()],
            "missing argument timeout=",
        ),
        (
            "vm-stop",
            vec![dir.clone(), "guest=g".into(), "timeout=0".into()],
            "timeout=0",
        ),
        (
            "vm-stop",
            vec![dir.clone(), "guest=g".into(), "timeout=3601".into()],
            "timeout=3601",
        ),
        (
            "vm-stop",
            vec![dir.clone(), "guest=g".into(), "timeout=1s".into()],
            "timeout=1s",
        ),
        (
            "vm-stop",
            vec![dir.clone(), "guest=*".into(), "timeout=5".into()],
            "guest=*",
        ),
        (
            "vm-stop",
            vec![dir.clone(), "guest=../g".into(), "timeout=5".into()],
            "guest=../g",
        ),
        (
            "vm-stop",
            vec!["dir=/tmp".into(), "guest=g".into(), "timeout=5".into()],
            "dir=/tmp",
        ),
        ("vm-reap", vec!["dir=/".into()], "dir=/"),
        (
            "vm-reap",
            vec!["dir=/var/tmp/fsmatrix".into()],
            "dir=/var/tmp/fsmatrix",
        ),
        (
            "vm-reap",
            vec!["dir=/var/tmp/../../vm".into()],
            "dir=/var/tmp/../../vm",
        ),
        ("vm-reap", vec!["dir=vm".into()], "dir=vm"),
        ("vm-reap", vec![], "missing argument dir="),
    ];
    for (shell, pre, package) in SHELLS {
        if !tool_or_skip(shell, package) {
            continue;
        }
        for (verb, args, named) in &cases {
            let out = script(shell, pre, verb, args);
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(
                out.status.code(),
                Some(2),
                "{shell} {verb} {args:?}:\n{err}"
            );
            assert!(
                err.contains(&format!("error: usage: {verb}: ")) && err.contains(named),
                "{shell} {verb} {args:?}: the message does not name {named}:\n{err}"
            );
        }
    }
}

/// A process that looks like qemu to `ps` (argv[0] qemu-system-x86_64, `-name VALUE`)
/// but is bash waiting: what vm-stop and vm-reap may end only when VALUE is
/// `fsmx-<guest>` of the pid file.
fn fake_qemu(name_arg: &str, argv0: &str) -> Child {
    Command::new("bash")
        .arg("-c")
        .arg(format!(
            "exec -a {argv0} bash -c 'while :; do sleep 1; done' x -name {name_arg}"
        ))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the fake qemu")
}

fn alive(child: &mut Child) -> bool {
    std::thread::sleep(Duration::from_millis(300));
    child.try_wait().expect("try_wait").is_none()
}

fn ended(child: &mut Child) -> bool {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if child.try_wait().expect("try_wait").is_some() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

fn kv(out: &Output, key: &str) -> String {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{key}=")).map(str::to_string))
        .unwrap_or_else(|| {
            panic!(
                "no {key}= in:\n{}\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        })
}

#[test]
fn vm_reap_and_vm_stop_end_only_a_qemu_of_that_guest() {
    if !tool_or_skip("dash", "dash") {
        return;
    }
    let tmp = tempfile::tempdir().expect("temp dir");
    let vm = tmp.path().join("vm");
    std::fs::create_dir(&vm).expect("mkdir vm");
    let dir = format!("dir={}", vm.display());
    let write = |name: &str, body: &str| std::fs::write(vm.join(name), body).expect("write");

    // Pid files that name processes which are not that guest's qemu: another guest's
    // qemu, a process not called qemu, this test itself.
    let mut other_guest = fake_qemu("fsmx-other", "qemu-system-x86_64");
    let mut not_qemu = fake_qemu("fsmx-g2", "sleepy");
    let mut ours = fake_qemu("fsmx-g3", "/usr/bin/qemu-system-x86_64");
    write("g1.pid", &format!("{}\n", other_guest.id()));
    write("g2.pid", &format!("{}\n", not_qemu.id()));
    write("g3.pid", &format!("{}\n", ours.id()));
    write("g4.pid", &format!("{}\n", std::process::id()));
    for g in ["g1", "g2", "g3", "g4"] {
        write(&format!("{g}.qcow2"), "overlay");
        write(&format!("{g}.console"), "console");
        write(&format!("{g}.cmdline"), "cmdline");
    }
    write("README", "not fsmatrix's");

    // vm-stop of g1: not-running (the pid is another guest's qemu), files removed but
    // the console; the other guest's process lives on.
    let out = script(
        "dash",
        &[],
        "vm-stop",
        &[dir.clone(), "guest=g1".into(), "timeout=2".into()],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(kv(&out, "stopped"), "not-running");
    assert!(!vm.join("g1.qcow2").exists() && !vm.join("g1.pid").exists());
    assert!(vm.join("g1.console").exists(), "vm-stop keeps the console");
    assert!(
        alive(&mut other_guest),
        "vm-stop ended another guest's qemu"
    );

    // vm-stop of g3 (ours, no monitor fifo, so no ACPI): SIGTERM.
    let out = script(
        "dash",
        &[],
        "vm-stop",
        &[dir.clone(), "guest=g3".into(), "timeout=2".into()],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(kv(&out, "stopped"), "term");
    assert!(ended(&mut ours), "vm-stop left its guest's qemu running");
    assert!(vm.join("g3.console").exists());

    // vm-reap: every guest's files (consoles too), the README left; no process ended
    // but guest g3's (gone already).
    let mut ours2 = fake_qemu("fsmx-g5", "qemu-system-x86_64");
    write("g5.pid", &format!("{}\n", ours2.id()));
    let out = script("dash", &[], "vm-reap", std::slice::from_ref(&dir));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut reaped: Vec<String> = kv(&out, "reaped").split(' ').map(str::to_string).collect();
    reaped.sort();
    assert_eq!(reaped, ["g1", "g2", "g3", "g4", "g5"]);
    assert!(ended(&mut ours2), "vm-reap left its guest's qemu running");
    assert!(
        alive(&mut other_guest),
        "vm-reap ended another guest's qemu"
    );
    assert!(
        alive(&mut not_qemu),
        "vm-reap ended a process that is not qemu"
    );
    let mut left: Vec<String> = std::fs::read_dir(&vm)
        .expect("read vm")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["README"]);
    // Nothing left: reaped=none.
    std::fs::remove_file(vm.join("README")).expect("rm");
    let out = script("dash", &[], "vm-reap", &[dir]);
    assert_eq!(kv(&out, "reaped"), "none");
    for mut c in [other_guest, not_qemu] {
        let _ = c.kill();
        let _ = c.wait();
    }
}

/// Issue 39: the physical host's guard runs on a guest's disk before QEMU
/// opens it.  `vm-check` names its refusal as a problem and `vm-start` stops
/// at it, making nothing: a disk the inventory does not list for the host,
/// and a disk that is in use here (the root filesystem's own device, which
/// is mounted), are never given to a guest.
#[test]
fn vm_check_and_vm_start_run_the_physical_host_s_guard_on_the_disk() {
    if !tool_or_skip("dash", "dash") {
        return;
    }
    let root = Command::new("findmnt")
        .args(["-no", "SOURCE", "/"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    let is_block = |p: &str| {
        use std::os::unix::fs::FileTypeExt;
        std::fs::metadata(p).is_ok_and(|m| m.file_type().is_block_device())
    };
    if !root.starts_with("/dev/") || !is_block(&root) {
        eprintln!("skipped: vm_check_and_vm_start_run_the_physical_host_s_guard_on_the_disk needs `/` on a block device (here: {root:?})");
        return;
    }
    let tmp = tempfile::tempdir().expect("temp dir");
    let base: Vec<(&'static str, String)> = good(tmp.path())
        .into_iter()
        .map(|(k, v)| {
            if k == "disk" {
                (k, root.clone())
            } else {
                (k, v)
            }
        })
        .collect();
    for (allowed, want) in [
        (None, "not among this host's devices in the inventory"),
        (Some(root.as_str()), "mounted"),
    ] {
        let mut args = with(&base, "x", None);
        if let Some(a) = allowed {
            args.push(format!("allowed={a}"));
        }
        let out = script("dash", &[], "vm-check", &args);
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        let problem = format!("problem=disk {root}: refused by the guard: {want}");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains(&problem),
            "{problem} not in {out:?}"
        );
        let out = script("dash", &[], "vm-start", &args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(
            err.contains(&format!("disk {root}: refused by the guard: {want}")),
            "{err}"
        );
        assert!(!tmp.path().join("vm").exists(), "vm-start made the folder");
    }
}
