//! `fsmatrix plan` end to end: the binary, real files, exit codes.
use std::path::PathBuf;

use assert_cmd::Command;
use predicates::prelude::*;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn fsmatrix() -> Command {
    let mut c = Command::cargo_bin("fsmatrix").expect("binary built");
    c.current_dir(root());
    c
}

#[test]
fn plan_prints_the_table() {
    fsmatrix()
        .args([
            "plan",
            "-i",
            "inventory/lab.toml",
            "-m",
            "matrix/quick.toml",
        ])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "matrix quick: 48 cells on 3 hosts",
        ))
        .stdout(predicate::str::contains("lab1  linux  /dev/loop0"));
}

#[test]
fn plan_json_is_the_plan() {
    let out = fsmatrix()
        .args([
            "plan",
            "--inventory",
            "inventory/example-lab.toml",
            "--matrix",
            "matrix/bsd-vs-linux.toml",
            "--json",
        ])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out).expect("valid json");
    let cells = v["cells"].as_array().expect("cells");
    assert_eq!(cells.len(), 113);
    assert_eq!(v["dropped"].as_array().map(|a| a.len()), Some(15));
    assert!(cells[0]["id"].as_str().is_some_and(|s| s.len() == 16));
    // Round trip: the run engine reads data/plan.json back.
    let p: fsmatrix::plan::Plan = serde_json::from_slice(&out).expect("plan deserializes");
    assert_eq!(p.cells.len(), 113);
}

#[test]
fn bad_input_exits_2_with_every_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let inv = dir.path().join("i.toml");
    std::fs::write(
        &inv,
        "[[host]]\nname = \"a\"\naddress = \"10.0.0.1\"\nos = \"linux\"\ndevices = [\"/dev/sdb;reboot\"]\nuser = \"$(id)\"\n",
    )
    .expect("write");
    fsmatrix()
        .args(["plan", "-i"])
        .arg(&inv)
        .args(["-m", "matrix/quick.toml"])
        .assert()
        .code(2)
        .stdout("")
        .stderr(predicate::str::contains(format!(
            "{}:5:12: error: device path `/dev/sdb;reboot` contains `;`",
            inv.display()
        )))
        .stderr(predicate::str::contains(format!(
            "{}:6:8: error: user name `$(id)` contains `$(`",
            inv.display()
        )))
        .stderr(predicate::str::contains("2 errors"));
}

/// `become = "doas"`: `plan --commands` shows every command (the host lock,
/// the uploads, every verb) as the SSH layer sends it, inside
/// `doas -n /bin/sh -c '…'`, and a root host's commands unwrapped.
#[test]
fn commands_of_a_doas_host_run_through_doas_n() {
    let dir = tempfile::tempdir().expect("tempdir");
    let inv = dir.path().join("inv.toml");
    std::fs::write(
        &inv,
        "[defaults]\nos = \"linux\"\nplatform = \"lab\"\n\
         [[host]]\nname = \"d1\"\naddress = \"10.0.0.1\"\nuser = \"ops\"\nbecome = \"doas\"\ndevices = [\"/dev/vdb\"]\n\
         [[host]]\nname = \"r1\"\naddress = \"10.0.0.2\"\ndevices = [\"/dev/vdb\"]\n",
    )
    .expect("write");
    let out = fsmatrix()
        .args(["plan", "-m", "matrix/quick.toml", "--commands", "-i"])
        .arg(&inv)
        .output()
        .expect("run fsmatrix");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let section = |name: &str| -> Vec<String> {
        text.split("\n## ")
            .find(|s| s.starts_with(&format!("{name}\n")))
            .unwrap_or_else(|| panic!("no {name} section: {text}"))
            .lines()
            .filter(|l| l.starts_with("$ "))
            .map(str::to_string)
            .collect()
    };
    let (d1, r1) = (section("d1"), section("r1"));
    assert!(d1.len() > 5, "{text}");
    for l in &d1 {
        assert!(l.starts_with("$ doas -n /bin/sh -c '"), "{l}");
    }
    assert!(r1.iter().all(|l| !l.contains("doas")), "{text}");
    assert_eq!(d1.len(), r1.len(), "the same commands, wrapped");
}

#[test]
fn commands_shows_every_remote_command_quoted() {
    let out = fsmatrix()
        .args([
            "plan",
            "-i",
            "inventory/lab.toml",
            "-m",
            "matrix/quick.toml",
            "--commands",
        ])
        .output()
        .expect("run fsmatrix");
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    // One section per host, and in each the worker's whole sequence.
    assert_eq!(text.matches("\n## lab").count(), 3, "{text}");
    let lab1 = text
        .split("\n## ")
        .find(|s| s.starts_with("lab1\n"))
        .unwrap_or_else(|| panic!("no lab1 section: {text}"));
    let verbs: Vec<&str> = lab1
        .lines()
        .filter(|l| l.starts_with("$ "))
        .map(|l| match l.split_once("linux.sh ") {
            _ if l.contains("&& cat >") => "upload",
            _ if l.contains("flock -n 3") => "lock",
            Some((_, rest)) => rest.split(' ').next().unwrap_or(""),
            None => "other",
        })
        .collect();
    // First contact: the host lock (kept for the sweep's life), then the
    // checksum + facts + guard round trip, then (scripts missing) the
    // uploads, then facts and the guard.
    assert_eq!(verbs[0], "lock", "{lab1}");
    assert!(lab1.contains("/run/lock/fsmatrix"), "{lab1}");
    assert_eq!(verbs[1], "facts", "{lab1}");
    assert_eq!(
        verbs.iter().filter(|v| **v == "upload").count(),
        2,
        "{lab1}"
    );
    // quick.toml builds four variants on lab1; each one is torn down and
    // checked first, then built in order, and stopped and torn down last.
    let builds: Vec<usize> = (0..verbs.len())
        .filter(|&i| verbs[i] == "make-fs")
        .collect();
    assert_eq!(builds.len(), 4, "{lab1}");
    for &i in &builds {
        assert_eq!(verbs[i - 2..i], ["teardown", "preflight"], "{lab1}");
        assert_eq!(
            verbs[i + 1..i + 5],
            ["mount", "pg-init", "pg-start", "load"],
            "{lab1}"
        );
    }
    for &i in &builds[1..] {
        assert_eq!(verbs[i - 4..i - 2], ["pg-stop", "teardown"], "{lab1}");
    }
    assert_eq!(verbs[verbs.len() - 2..], ["pg-stop", "teardown"], "{lab1}");
    // Every run is collected.
    for (i, v) in verbs.iter().enumerate().filter(|(_, v)| **v == "run") {
        assert_eq!(verbs[i + 1..i + 3], ["cat", "cat"], "{v} at {i}");
    }
    // The script runs under /bin/sh explicitly, verbs with name=value words.
    assert!(
        text.contains("/bin/sh /var/tmp/fsmatrix/scripts-"),
        "{text}"
    );
    assert!(text.contains("linux.sh make-fs dev=/dev/loop"), "{text}");
    // make-fs carries the device's identity from facts (the stand-in's here).
    assert!(
        text.contains("consent=no 'ident=size=107374182400;serial=fsmatrix-stand-in-0' fs="),
        "{text}"
    );
    assert!(text.contains("# - make-fs carries the identity"), "{text}");
    assert!(text.contains("zfs_prop=compression=on"), "{text}");
    assert!(
        text.contains("builtin=tpcb-like clients=4 jobs=4 duration=10"),
        "{text}"
    );
}

#[test]
fn verbose_logs_every_command_and_quiet_logs_none() {
    let args = [
        "plan",
        "-i",
        "inventory/lab.toml",
        "-m",
        "matrix/quick.toml",
        "--commands",
    ];
    let quiet = fsmatrix().args(args).output().expect("run fsmatrix");
    assert_eq!(quiet.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&quiet.stderr), "");
    let loud = fsmatrix()
        .arg("-v")
        .args(args)
        .output()
        .expect("run fsmatrix");
    assert_eq!(loud.status.code(), Some(0));
    let err = String::from_utf8_lossy(&loud.stderr);
    // The same commands, as they are sent, each with its host.
    let sent = err.lines().filter(|l| l.contains("$ /bin/sh ")).count();
    let printed = String::from_utf8_lossy(&loud.stdout)
        .lines()
        .filter(|l| l.starts_with("$ /bin/sh "))
        .count();
    assert_eq!(sent, printed, "{err}");
    assert!(
        err.contains("host=\"lab2\"") || err.contains("host=lab2"),
        "{err}"
    );
}

/// What `plan` refuses, `resume` and `run --from` refuse: a bundle's
/// snapshots are checked against each other before any host is contacted.
#[test]
fn a_bundle_whose_matrix_plan_would_refuse_is_refused_by_resume_and_run_from() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let bundle = tmp.path().join("ghost-20260101T000000Z");
    std::fs::create_dir_all(bundle.join("data")).expect("mkdir");
    std::fs::write(
        bundle.join("data/inventory.toml"),
        "[[host]]\nname = \"a\"\naddress = \"10.203.0.250\"\nos = \"linux\"\ndevices = [\"/dev/loop9\"]\n",
    )
    .expect("write");
    std::fs::write(
        bundle.join("data/matrix.toml"),
        "name = \"ghost\"\n[hosts]\nnames = [\"ghost\"]\n[[filesystem]]\nname = \"e\"\ntype = \"ext4\"\n\
         [[workload]]\nname = \"w\"\nbuiltin = \"select-only\"\nscale = 1\nclients = [1]\nduration = \"5s\"\n",
    )
    .expect("write");
    for args in [
        vec!["resume".to_string()],
        vec![
            "run".to_string(),
            "--out".to_string(),
            tmp.path().join("out").display().to_string(),
            "--from".to_string(),
        ],
    ] {
        let o = fsmatrix()
            .args(&args)
            .arg(&bundle)
            .args(["--device", "a:/dev/loop9"])
            .output()
            .expect("run fsmatrix");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("host `ghost` is not in the inventory"),
            "{args:?}: {err}"
        );
    }
    assert!(!tmp.path().join("out").exists());
}

/// Golden command logs: every command one host of each OS gets for
/// `matrix/quick-bsd.toml` (`plan --commands` is the run's own step sequence),
/// snapshot-tested so that a change to what reaches a FreeBSD or a Linux host
/// is reviewed against the man pages.  The scripts folder is named after the
/// scripts' checksum: masked.
#[test]
fn golden_command_logs_per_os() {
    let out = fsmatrix()
        .args([
            "plan",
            "-i",
            "inventory/example-lab.toml",
            "-m",
            "matrix/quick-bsd.toml",
            "--commands",
        ])
        .output()
        .expect("run fsmatrix");
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    for (host, os) in [
        ("fbsd14", "freebsd"),
        ("dfly6", "dragonfly"),
        ("deb12-kvm", "linux"),
    ] {
        let section = text
            .split("\n## ")
            .find(|s| s.starts_with(&format!("{host}\n")))
            .unwrap_or_else(|| panic!("no {host} section: {text}"));
        let masked = section
            .split("scripts-")
            .enumerate()
            .map(|(i, part)| {
                if i == 0 {
                    part.to_string()
                } else {
                    format!("scripts-HASH{}", &part[12.min(part.len())..])
                }
            })
            .collect::<String>()
            .lines()
            .map(|l| match l.split_once("  # stdin: ") {
                // A script's size and checksum change with every edit of it.
                Some((cmd, _)) if cmd.contains(".sh.fsmatrix-upload") => {
                    format!("{cmd}  # stdin: the script")
                }
                _ => l.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n");
        assert!(masked.contains(&format!("{os}.sh facts ")), "{masked}");
        insta::assert_snapshot!(format!("commands_{os}"), masked);
    }
}

/// A matrix on the lab's three hosts: `variants` × 10 client counts ×
/// `repeats` cells on each host.
fn big_matrix(dir: &std::path::Path, variants: u64, repeats: u64, max_cells: u64) -> PathBuf {
    let js: Vec<String> = (1..=variants).map(|j| j.to_string()).collect();
    let m = dir.join("big.toml");
    std::fs::write(
        &m,
        format!(
            "name = \"big\"\nrepeats = {repeats}\nwarmup = false\nmax_cells = {max_cells}\n\n\
             [[filesystem]]\nname = \"ext4-{{j}}\"\ntype = \"ext4\"\n\
             mkfs_options = [\"-E\", \"stride={{j}}\"]\nvary = {{ j = [{}] }}\n\n\
             [[workload]]\nname = \"t\"\nbuiltin = \"tpcb-like\"\nscale = 1\n\
             clients = [1,2,3,4,5,6,7,8,9,10]\nduration = \"1s\"\n",
            js.join(",")
        ),
    )
    .unwrap();
    m
}

/// `fsmatrix plan ARGS` under a cap on its address space (`ulimit -v`, KiB).
fn plan_capped(kib: u64, args: &str) -> std::process::Output {
    let bin = assert_cmd::cargo::cargo_bin("fsmatrix");
    std::process::Command::new("sh")
        .current_dir(root())
        .arg("-c")
        .arg(format!("ulimit -v {kib} && exec \"$0\" plan {args}"))
        .arg(bin)
        .output()
        .unwrap()
}

/// Issue 24: `max_cells` at its documented maximum plans within memory, and
/// `plan --json` streams (it built a JSON tree of ~7.6 KiB a cell: 900 000
/// cells took 6.9 GB).
#[test]
fn max_cells_at_its_maximum_plans_within_memory() {
    use fsmatrix::config::matrix::MAX_CELLS_LIMIT;
    let dir = tempfile::tempdir().unwrap();
    let inv = root().join("inventory/lab.toml");
    // One past the maximum: refused as a value, with the valid range.
    let m = big_matrix(dir.path(), 1, 1, MAX_CELLS_LIMIT + 1);
    let out = plan_capped(4 << 20, &format!("-i {} -m {}", inv.display(), m.display()));
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(&MAX_CELLS_LIMIT.to_string()),
        "{out:?}"
    );
    // Just under the maximum (3 hosts × 100 variants × 10 × 333 repeats:
    // 999 000 cells) in 2 GiB.
    let m = big_matrix(dir.path(), 100, 333, MAX_CELLS_LIMIT);
    let out = plan_capped(2 << 20, &format!("-i {} -m {}", inv.display(), m.display()));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("999000 cells"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    // 60 000 cells as JSON in 256 MiB of address space (the tree took a peak
    // RSS of 453 MB for them; streamed: 43 MB).
    let m = big_matrix(dir.path(), 10, 200, MAX_CELLS_LIMIT);
    let out = plan_capped(
        256 << 10,
        &format!("--json -i {} -m {}", inv.display(), m.display()),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["cells"].as_array().map(Vec::len), Some(60_000));
}

/// `--history` reads other people's bundles: a timings file with odd
/// numbers (huge, negative, near zero, past what a Duration holds) never
/// panics the ETA (`plan --history` and `run --history` used to, `run`
/// after making its bundle folder); the odd lines are not learned from.
#[test]
fn odd_numbers_in_a_history_timings_file_never_panic_the_eta() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let b = tmp.path().join("old-20260101T000000Z");
    std::fs::create_dir_all(b.join("data")).expect("mkdir");
    std::fs::write(b.join("bagit.txt"), "").expect("bagit");
    let mut text = String::new();
    for (secs, prior) in [
        ("1e308", "1"),
        ("1e300", "1e-300"),
        ("5", "5e-324"),
        ("-1", "45"),
        ("18446744073709551615", "45"),
        ("1.7976931348623157e308", "1.7976931348623157e308"),
    ] {
        for kind in ["setup", "load", "run_overhead", "teardown"] {
            text.push_str(&format!(
                "{{\"host\":\"lab1\",\"kind\":\"{kind}\",\"fs_type\":\"ext4\",\"on\":\"x\",\"secs\":{secs},\"prior_secs\":{prior}}}\n"
            ));
        }
    }
    std::fs::write(b.join("data/timings.jsonl"), text).expect("timings");
    fsmatrix()
        .args([
            "plan",
            "-i",
            "inventory/lab.toml",
            "-m",
            "matrix/quick.toml",
            "--history",
        ])
        .arg(tmp.path())
        .assert()
        .success()
        .stderr(predicate::str::contains("panicked").not())
        .stdout(predicate::str::contains(
            "no timings of this host: the defaults",
        ));
}

/// A script that runs commands or reaches files is refused by `plan` on a
/// host whose owner has not allowed it, at the script's file:line with the
/// feature and the key that would allow it; with the key, planned.
#[test]
fn plan_refuses_scripts_that_run_commands_without_the_host_s_consent() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let inv = |allow: &str| {
        format!(
            "[defaults]\nos = \"linux\"\n[[host]]\nname = \"h1\"\naddress = \"10.0.0.1\"\ndevices = [\"/dev/vdb\"]\n{allow}"
        )
    };
    std::fs::write(d.join("no.toml"), inv("")).expect("write");
    std::fs::write(d.join("yes.toml"), inv("allow_script_commands = true\n")).expect("write");
    let cases = [
        (
            "sql_script",
            "w.sql",
            "create table t (a int);\n\\! id -u > out\n",
            2,
            "`\\!`",
            "runs a shell command on the host",
        ),
        (
            "pgbench_script",
            "w.pgbench",
            "\\set a 1\nselect :a;\n\\shell touch x\n",
            3,
            "`\\shell`",
            "runs a shell command on the host",
        ),
        (
            "sql_script",
            "c.sql",
            "select 1;\n\n  COPY (select 1) TO PROGRAM 'true';\n",
            3,
            "`COPY … PROGRAM`",
            "runs a program on the server host",
        ),
    ];
    for (key, file, text, line, feature, what) in cases {
        std::fs::write(d.join(file), text).expect("write");
        let length = if key == "sql_script" {
            ""
        } else {
            "scale = 1\nclients = [1]\nduration = \"5s\"\n"
        };
        std::fs::write(
            d.join("m.toml"),
            format!("name = \"m\"\n[[filesystem]]\nname = \"e\"\ntype = \"ext4\"\n[[workload]]\nname = \"w\"\n{key} = \"{file}\"\n{length}"),
        )
        .expect("write");
        let m = d.join("m.toml");
        let out = fsmatrix()
            .args(["plan", "-i"])
            .arg(d.join("no.toml"))
            .arg("-m")
            .arg(&m)
            .assert()
            .failure()
            .get_output()
            .clone();
        let err = String::from_utf8_lossy(&out.stderr);
        let at = format!("{}:{line}:", d.join(file).display());
        assert!(err.contains(&at), "{file}: wants {at}: {err}");
        assert!(
            err.contains(&format!(
                "{feature} in the script of workload `w` {what} and is refused on host h1 of"
            )),
            "{file}: {err}"
        );
        assert!(
            err.contains("add allow_script_commands = true to the [[host]]"),
            "{file}: {err}"
        );
        fsmatrix()
            .args(["plan", "-i"])
            .arg(d.join("yes.toml"))
            .arg("-m")
            .arg(&m)
            .assert()
            .success();
    }
}

/// issue 26: a physical host and its guest in `plan --commands`: the
/// physical host's log reaps leftovers first, then per variant runs its own
/// cells, starts the guest with every [host.vm] value as it is sent, stops
/// it and fetches its console; the guest's log is its own cells only; a
/// hostile value never reaches the plan.
#[test]
fn commands_show_the_guest_s_start_and_stop_as_they_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let inv = dir.path().join("inv.toml");
    let text = r#"
[defaults]
os = "linux"
[[host]]
name = "metal1"
address = "10.0.0.1"
devices = ["/dev/sdb"]
[[host]]
name = "metal1-kvm"
guest_of = "metal1"
devices = ["/dev/vdb"]
[host.vm]
image = "/var/lib/images/debian12.img"
kernel = "/var/lib/images/vmlinuz"
initrd = "/var/lib/images/initrd.img"
cmdline = "root=LABEL=fsmx-guest ro console=ttyS0"
accel = "tcg"
cache = "writeback"
disk_bus = "nvme"
disk = "/dev/sdb"
ssh_port = 10031
"#;
    std::fs::write(&inv, text).expect("write");
    let out = fsmatrix()
        .args(["plan", "-m", "matrix/quick.toml", "--commands", "-i"])
        .arg(&inv)
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let all = String::from_utf8(out.stdout).expect("utf-8");
    let (metal, guest) = all
        .split_once("## metal1-kvm\n")
        .expect("a section for the guest");
    let verbs: Vec<&str> = metal
        .lines()
        .filter_map(|l| l.strip_prefix("$ "))
        .filter_map(|l| {
            [
                "vm-reap",
                "vm-start",
                "vm-stop",
                "make-fs",
                "metal1-kvm.console",
            ]
            .into_iter()
            .find(|v| l.contains(v))
        })
        .collect();
    // quick.toml has four variants: metal's make-fs, then the guest's turn.
    let turn = ["make-fs", "vm-start", "vm-stop", "metal1-kvm.console"];
    let mut want = vec!["vm-reap"];
    for _ in 0..4 {
        want.extend(turn);
    }
    assert_eq!(verbs, want, "{metal}");
    let start = metal
        .lines()
        .find(|l| l.contains(" vm-start "))
        .expect("vm-start");
    assert!(
        start.ends_with(
            "linux.sh vm-start dir=/var/tmp/fsmatrix/vm guest=metal1-kvm image=/var/lib/images/debian12.img format=raw kernel=/var/lib/images/vmlinuz initrd=/var/lib/images/initrd.img 'cmdline=root=LABEL=fsmx-guest ro console=ttyS0' memory=1024 cpus=1 bus=nvme cache=writeback aio=threads accel=tcg disk=/dev/sdb port=10031 allowed=/dev/sdb consent=no"
        ),
        "{start}"
    );
    assert!(
        metal.contains("linux.sh vm-stop dir=/var/tmp/fsmatrix/vm guest=metal1-kvm timeout=60"),
        "{metal}"
    );
    // The guest builds on its own name of the disk, never the host's.
    assert!(
        guest.contains("make-fs dev=/dev/vdb allowed=/dev/vdb "),
        "{guest}"
    );
    assert!(
        !guest.contains("/dev/sdb") && !guest.contains("vm-start"),
        "{guest}"
    );
    // A hostile value is refused by plan, so it reaches no command.
    std::fs::write(
        &inv,
        text.replace("cache = \"writeback\"", "cache = \"none' ; reboot '\""),
    )
    .expect("write");
    fsmatrix()
        .args(["plan", "-m", "matrix/quick.toml", "--commands", "-i"])
        .arg(&inv)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "inv.toml:18:9: error: cache `none' ; reboot '`",
        ))
        .stdout(predicate::str::is_empty());
}
