//! The FreeBSD script on the lab's FreeBSD stand-in host (docs/standin-hosts.md): a
//! Linux lab host whose SSH session looks like FreeBSD (its BSD commands emulated from
//! the man pages and sources, Linux-only commands absent, root's shell tcsh, the disk
//! at /dev/ada1).  Every verb under every POSIX shell fsmatrix supports, a sweep on a
//! mixed lab, and the device guard.  Needs the standard lab (tests/run.sh brings it up
//! with `--os linux,linux,linux,freebsd`).
mod common;

use std::path::Path;
use std::process::Stdio;

use common::{fsmatrix, inventory_for, lab_lock, ssh, ssh_ok, Lab, LabHost, LabInventory};
use serde_json::Value;

/// The folder the verb tests put the scripts in (not fsmatrix's work_dir).
const DIR: &str = "/var/tmp/fsmx-standin-test";

fn standin(lab: &Lab) -> LabHost {
    lab.inv
        .standins
        .iter()
        .find(|h| h.os == "freebsd")
        .cloned()
        .expect("the standard lab has a FreeBSD stand-in (tests/run.sh: --os linux,linux,linux,freebsd)")
}

/// Puts common.sh and freebsd.sh into [`DIR`] on the stand-in.
fn upload_scripts(inv: &LabInventory, h: &LabHost) {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../remote-scripts");
    let mut script = format!("set -e; rm -rf {DIR}; mkdir -p {DIR}\n");
    for name in ["common.sh", "freebsd.sh"] {
        let body = std::fs::read_to_string(repo.join(name)).expect("read a remote script");
        assert!(!body.contains("FSMX_TEST_EOF"));
        script.push_str(&format!(
            "cat > {DIR}/{name} <<'FSMX_TEST_EOF'\n{body}FSMX_TEST_EOF\n"
        ));
    }
    ssh_ok(inv, h, &script, &[]);
}

/// What the stand-in's own BSD commands say is left of a sweep.
fn assert_clean_bsd(inv: &LabInventory, h: &LabHost) {
    let out = ssh_ok(
        inv,
        h,
        r#"dev=$1
echo "mounted=$(mount -p | awk -v d="$dev" '$1 == d || $2 ~ /^\/var\/tmp\/fsm/' | wc -l | tr -d ' ')"
echo "postgres=$(pgrep -x postgres | wc -l | tr -d ' ')"
echo "pools=$(zpool list -H -o name 2>/dev/null | grep -c '^fsmx' || true)"
if fstyp -u "$dev" >/dev/null 2>&1; then echo "sig=$(fstyp -l -u "$dev")"; else echo "sig=none"; fi
echo "gpart=$(gpart show "$dev" >/dev/null 2>&1 && echo table || echo none)"
"#,
        &[&h.device],
    );
    for want in ["mounted=0", "postgres=0", "pools=0", "gpart=none"] {
        assert!(out.lines().any(|l| l == want), "{}: {want}?\n{out}", h.name);
    }
    let sig = out
        .lines()
        .find(|l| l.starts_with("sig="))
        .unwrap_or("sig=?");
    assert!(
        sig == "sig=none" || sig.contains("fsmx"),
        "{}: a foreign signature is left: {sig}",
        h.name
    );
}

/// One cell's verbs in order under `shell`, as the orchestrator calls them;
/// each verb's stdout is printed after a `== <verb> rc=<n>` line.
const CELL: &str = r#"sh_=$1; fs=$2; shift 2
d=/var/tmp/fsmx-standin-test; dev=/dev/ada1; pg=/usr/local/bin
mnt=$d/mnt; cell=$d/cell
v() { name=$1; shift; echo "== $name"; $sh_ "$d/freebsd.sh" "$name" "$@" 2>"$d/$name.err"; rc=$?; echo "== rc $name $rc"; if [ "$rc" -ne 0 ]; then cat "$d/$name.err"; fi; }
v facts dev=$dev pg_bin=$pg > "$d/facts.out"; cat "$d/facts.out"
ident=$(sed -n 's/^device\.0\.ident=//p' "$d/facts.out")
v preflight dev=$dev allowed=$dev
if [ "$fs" = zfs ]; then
  v make-fs dev=$dev allowed=$dev ident="$ident" fs=zfs pool=fsmx-t mnt=$mnt zfs_prop=compression=gzip zfs_prop=atime=off
  v mount dev=$dev fs=zfs mnt=$mnt pool=fsmx-t
else
  v make-fs dev=$dev allowed=$dev ident="$ident" fs=ufs "$@"
  v mount dev=$dev fs=ufs mnt=$mnt mount_opt=noatime
fi
v pg-init pg_bin=$pg mnt=$mnt cell=$cell port=5433 pg_set=shared_buffers=32MB pg_set=fsync=off
v pg-start pg_bin=$pg mnt=$mnt cell=$cell
v load pg_bin=$pg cell=$cell port=5433 out=$d/load scale=1
v run pg_bin=$pg cell=$cell port=5433 out=$d/run builtin=select-only clients=1 duration=2
v cat work=$d path=$d/run/stdout
v sizes mnt=$mnt fs=$fs pool=fsmx-t
v pg-stop pg_bin=$pg mnt=$mnt cell=$cell
v drop-caches fs=$fs dev=$dev pool=fsmx-t mnt=$mnt
v teardown dev=$dev allowed=$dev fs=$fs mnt=$mnt pool=fsmx-t pg_bin=$pg cell=$cell
v preflight dev=$dev allowed=$dev
"#;

/// Each verb's rc and its `key=value` lines, by verb (the last call wins).
fn by_verb(out: &str) -> std::collections::BTreeMap<String, (String, Vec<String>)> {
    let mut m: std::collections::BTreeMap<String, (String, Vec<String>)> = Default::default();
    let mut cur = String::new();
    for l in out.lines() {
        if let Some(rest) = l.strip_prefix("== rc ") {
            let (verb, rc) = rest.split_once(' ').unwrap_or((rest, "?"));
            m.entry(verb.to_string()).or_default().0 = rc.to_string();
        } else if let Some(verb) = l.strip_prefix("== ") {
            cur = verb.to_string();
            m.insert(cur.clone(), (String::new(), Vec::new()));
        } else {
            m.entry(cur.clone()).or_default().1.push(l.to_string());
        }
    }
    m
}

fn cell_on(inv: &LabInventory, h: &LabHost, shell: &str, fs: &str, mkfs: &[&str]) -> String {
    let mut args = vec![shell, fs];
    args.extend_from_slice(mkfs);
    let out = ssh(inv, h, CELL, &args);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let verbs = by_verb(&text);
    for verb in [
        "facts",
        "preflight",
        "make-fs",
        "mount",
        "pg-init",
        "pg-start",
        "load",
        "run",
        "cat",
        "sizes",
        "pg-stop",
        "drop-caches",
        "teardown",
    ] {
        let (rc, _) = verbs
            .get(verb)
            .unwrap_or_else(|| panic!("{shell} {fs}: {verb} did not run:\n{text}"));
        assert_eq!(rc, "0", "{shell} {fs}: {verb} failed:\n{text}");
    }
    let kv = |verb: &str, key: &str| -> String {
        verbs[verb]
            .1
            .iter()
            .filter_map(|l| l.strip_prefix(&format!("{key}=")))
            .next_back()
            .unwrap_or_else(|| panic!("{shell} {fs}: no {key} from {verb}:\n{text}"))
            .to_string()
    };
    assert_eq!(kv("facts", "os"), "freebsd");
    assert_eq!(kv("facts", "standin"), "freebsd");
    assert_eq!(kv("make-fs", "fs"), fs);
    assert_eq!(kv("run", "status"), "0");
    assert!(
        verbs["cat"].1.iter().any(|l| l.starts_with("tps = ")),
        "{shell} {fs}: pgbench output:\n{text}"
    );
    assert!(
        kv("sizes", "du_bytes").parse::<u64>().unwrap_or(0) > 1_000_000,
        "{text}"
    );
    assert!(
        kv("drop-caches", "drop_caches_method")
            == if fs == "zfs" {
                "zfs-export-import"
            } else {
                "ufs-umount-mount"
            },
        "{text}"
    );
    assert_eq!(kv("teardown", "device"), "blank", "{text}");
    text
}

#[test]
fn every_freebsd_verb_runs_under_every_posix_shell() {
    let _l = lab_lock();
    let lab = Lab::standing_or_up(3);
    let h = standin(&lab);
    upload_scripts(&lab.inv, &h);
    // The shells reach the stand-in through its view of the real tools (they are
    // test vehicles, not part of its BSD userland).
    let real = "/run/fsmx-standin/real/bin";
    for shell in ["dash", "posh", "mksh", "yash", "busybox sh"] {
        let sh = format!("{real}/{shell}");
        let text = cell_on(&lab.inv, &h, &sh, "ufs", &["mkfs_opt=-U", "mkfs_opt=-j"]);
        let verbs = by_verb(&text);
        let eff: Vec<&String> = verbs["mount"]
            .1
            .iter()
            .filter(|l| l.starts_with("effective_mount_opts="))
            .collect();
        assert!(
            eff.iter().any(|l| l.contains("noatime")),
            "{shell}: effective options {eff:?}\n{text}"
        );
        assert_clean_bsd(&lab.inv, &h);
    }
    let _ = cell_on(&lab.inv, &h, &format!("{real}/dash"), "zfs", &[]);
    assert_clean_bsd(&lab.inv, &h);
    ssh_ok(&lab.inv, &h, &format!("rm -rf {DIR}"), &[]);
}

/// `fsmatrix run` of `matrix/quick-bsd.toml` (shortened) on one Linux host and the
/// FreeBSD stand-in: every planned cell done, the effective options recorded, the
/// bundle verifies, both hosts clean; the report marks the stand-in's rows.
#[test]
fn a_sweep_on_a_mixed_lab_runs_every_cell_and_marks_the_stand_in() {
    let _l = lab_lock();
    let lab = Lab::standing_or_up(3);
    let bsd = standin(&lab);
    let linux = lab.inv.hosts[0].clone();
    let tmp = tempfile::tempdir().expect("tempdir");
    let inv = tmp.path().join("inventory.toml");
    std::fs::write(
        &inv,
        inventory_for(&lab.inv, &[(&linux, ""), (&bsd, "")], ""),
    )
    .expect("write the inventory");
    let quick = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../matrix/quick-bsd.toml"),
    )
    .expect("matrix/quick-bsd.toml");
    let matrix = tmp.path().join("matrix.toml");
    std::fs::write(
        &matrix,
        quick.replace("duration = \"30s\"", "duration = \"3s\""),
    )
    .expect("write the matrix");
    let out = tmp.path().join("results");
    let o = fsmatrix()
        .args(["run", "--inventory"])
        .arg(&inv)
        .arg("--matrix")
        .arg(&matrix)
        .arg("--out")
        .arg(&out)
        .stdin(Stdio::null())
        .output()
        .expect("run fsmatrix");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let bundle = std::fs::read_dir(&out)
        .expect("results")
        .flatten()
        .map(|e| e.path())
        .find(|p| p.is_dir())
        .expect("a bundle");
    let v = fsmatrix()
        .arg("verify")
        .arg(&bundle)
        .output()
        .expect("verify");
    assert_eq!(
        v.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&v.stderr)
    );
    let text = std::fs::read_to_string(bundle.join("data/results.jsonl")).expect("results.jsonl");
    let rs: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let on =
        |host: &str| -> Vec<&Value> { rs.iter().filter(|r| r["params"]["host"] == host).collect() };
    let fs_of = |host: &str| -> Vec<String> {
        let mut v: Vec<String> = on(host)
            .iter()
            .map(|r| r["params"]["fs_type"].as_str().unwrap_or("?").to_string())
            .collect();
        v.dedup();
        v
    };
    // ZFS runs on both; UFS only on FreeBSD, ext4 only on Linux (dropped elsewhere).
    assert_eq!(fs_of(&linux.name), ["zfs", "ext4"], "{rs:?}");
    assert_eq!(fs_of(&bsd.name), ["ufs", "zfs"], "{rs:?}");
    for r in &rs {
        assert_eq!(r["status"]["state"], "done", "{r}");
    }
    // Effective options as the stand-in's BSD tools report them: soft updates
    // journaling on ufs2j, async kept where there are no soft updates.
    let settings = |fs: &str| -> String {
        rs.iter()
            .find(|r| r["params"]["filesystem"] == fs)
            .map(|r| r["fs_settings"].to_string())
            .unwrap_or_default()
    };
    let ufs2j = settings("ufs2j");
    assert!(ufs2j.contains("journaled soft-updates"), "{ufs2j}");
    let ufs_async = settings("ufs-async");
    assert!(
        ufs_async.contains("\"rw,async,noatime\""),
        "mount -p's options field: {ufs_async}"
    );
    let zfs = settings("zfs-gzip");
    assert!(zfs.contains("\"compression\":\"gzip\""), "{zfs}");
    assert!(zfs.contains("\"atime\":\"off\""), "{zfs}");
    let facts: Value = serde_json::from_str(
        &std::fs::read_to_string(bundle.join(format!("data/hosts/{}/facts.json", bsd.name)))
            .expect("the stand-in's facts"),
    )
    .expect("JSON");
    assert_eq!(facts["standin"], "freebsd");
    assert_eq!(facts["os"], "freebsd");
    let report = fsmatrix()
        .arg("report")
        .arg(&bundle)
        .output()
        .expect("report");
    let md = String::from_utf8_lossy(&report.stdout);
    assert!(md.contains("STAND-IN HOSTS"), "{md}");
    assert!(
        md.contains(&format!("{} [freebsd stand-in]", bsd.name)),
        "{md}"
    );
    assert_clean_bsd(&lab.inv, &bsd);
}

/// The guard on the stand-in, through its BSD commands: a mounted device, swap, a
/// foreign filesystem (fstyp), a foreign ZFS label (zdb), a partition table, a device
/// the inventory does not list — refused (exit 3), the device unchanged.
#[test]
fn the_guard_refuses_on_the_stand_in_and_leaves_the_device_as_it_was() {
    let _l = lab_lock();
    let lab = Lab::standing_or_up(3);
    let h = standin(&lab);
    upload_scripts(&lab.inv, &h);
    let out = ssh_ok(
        &lab.inv,
        &h,
        r#"d=/var/tmp/fsmx-standin-test; dev=/dev/ada1; real=/run/fsmx-standin/real
PATH=$PATH:$real/sbin:$real/bin
sum() { dd if=$dev bs=1048576 count=2 2>/dev/null | cksum; }
pf() { c=$1; shift; /bin/sh $d/freebsd.sh preflight dev=$dev allowed=$dev "$@" >/dev/null 2>$d/pf.err; echo "$c rc=$? $(grep -m 1 '^refused: ' $d/pf.err || head -n 1 $d/pf.err)"; }
# A foreign ext2fs (what another OS left): fstyp knows it.
mkfs.ext2 -q -F -L other $dev; before=$(sum); pf foreign; [ "$(sum)" = "$before" ] && echo foreign unchanged
# Mounted.
mkdir -p $d/m; mount -t ext2 $dev $d/m; pf mounted; umount $d/m
# A ZFS label of someone else's pool.
dd if=/dev/zero of=$dev bs=1048576 count=8 2>/dev/null
zpool create -f other-pool $dev && zpool export other-pool; before=$(sum); pf zfs-label; [ "$(sum)" = "$before" ] && echo zfs-label unchanged
zpool labelclear -f $dev 2>/dev/null || true; dd if=/dev/zero of=$dev bs=1048576 count=8 2>/dev/null
# Swap on it.
mkswap $dev >/dev/null; swapon $dev; pf swap; swapoff $dev
dd if=/dev/zero of=$dev bs=1048576 count=8 2>/dev/null
# A partition table.
# (an MBR with one Linux partition at sector 2048: what fdisk would write)
printf '\000\040\041\000\203\376\377\377\000\010\000\000\000\120\000\000' | dd of=$dev bs=1 seek=446 conv=notrunc 2>/dev/null
printf '\125\252' | dd of=$dev bs=1 seek=510 conv=notrunc 2>/dev/null
before=$(sum); pf table; [ "$(sum)" = "$before" ] && echo table unchanged
dd if=/dev/zero of=$dev bs=1048576 count=8 2>/dev/null
# Not listed in the inventory.
/bin/sh $d/freebsd.sh preflight dev=$dev allowed=/dev/ada2 >/dev/null 2>$d/pf.err; echo "unlisted rc=$? $(grep -m 1 '^refused: ' $d/pf.err || head -n 1 $d/pf.err)"
# Blank: accepted.
pf blank
rm -rf $d
"#,
        &[],
    );
    for case in [
        "foreign",
        "mounted",
        "zfs-label",
        "swap",
        "table",
        "unlisted",
    ] {
        let line = out
            .lines()
            .find(|l| l.starts_with(&format!("{case} rc=")))
            .unwrap_or_else(|| panic!("no {case} line:\n{out}"));
        assert!(
            line.starts_with(&format!("{case} rc=3 refused: ")),
            "{case} not refused by the guard: {line}\n{out}"
        );
    }
    for case in ["foreign", "zfs-label", "table"] {
        assert!(
            out.lines().any(|l| l == format!("{case} unchanged")),
            "{case}: the device changed:\n{out}"
        );
    }
    assert!(out.lines().any(|l| l.starts_with("blank rc=0")), "{out}");
    assert_clean_bsd(&lab.inv, &h);
}

/// The emulated BSD commands against their own checks, on the stand-in itself
/// (orchestrator/src/lab/standin/test-emulators.sh: formats, flags, refusals and
/// exit codes of uname, sysctl, diskinfo, geom, gpart, swapinfo, du, stat,
/// sha256, su, pw, lockf, kenv; test-fs-emulators.sh: newfs, fstyp, tunefs,
/// mount, umount, zdb, zpool, zfs on its disk and its zfs-fuse).  Run inside the
/// host's namespaces from here (its /tmp is its own, so the scripts go in as a tar).
#[test]
fn the_emulators_pass_their_own_checks_on_the_stand_in() {
    use std::io::Write;
    let _l = lab_lock();
    let lab = Lab::standing_or_up(3);
    let h = standin(&lab);
    let pid = std::fs::read_to_string(common::lab_dir().join(format!("hosts/{}/init.pid", h.name)))
        .expect("the stand-in's init.pid");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lab/standin");
    let tar = std::process::Command::new("tar")
        .arg("-C")
        .arg(&src)
        .args([
            "-cf",
            "-",
            "test-emulators.sh",
            "test-fs-emulators.sh",
            "freebsd",
        ])
        .output()
        .expect("tar");
    assert!(tar.status.success());
    let real = "/run/fsmx-standin/real";
    let script = format!(
        "set -u; PATH={real}/bin:{real}/sbin; export PATH FSMX_STANDIN_REAL={real}; \
         d=$(mktemp -d /var/tmp/fsmx-emutest.XXXXXX); tar -C \"$d\" -xf -; \
         unshare -m --propagation private bash \"$d/test-emulators.sh\" --destructive {dev}; a=$?; \
         FSMX_STANDIN_TEST_HOST=1 bash \"$d/test-fs-emulators.sh\" {dev}; b=$?; \
         dd if=/dev/zero of={dev} bs=1048576 count=8 2>/dev/null; rm -rf \"$d\"; \
         echo \"rc=$a,$b\"",
        dev = h.device
    );
    let mut child = std::process::Command::new("timeout")
        .args([
            "--kill-after=10",
            "600",
            "nsenter",
            "-t",
            pid.trim(),
            "-m",
            "-p",
            "--",
        ])
        .arg(format!("{real}/bin/sh"))
        .arg("-c")
        .arg(&script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("nsenter");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(&tar.stdout)
        .expect("send the scripts");
    let out = child.wait_with_output().expect("wait");
    let text = String::from_utf8_lossy(&out.stdout);
    let failed: Vec<&str> = text.lines().filter(|l| l.starts_with("FAIL")).collect();
    let passed = text.lines().filter(|l| l.starts_with("PASS")).count();
    eprintln!("emulator checks: {passed} passed, {} failed", failed.len());
    assert!(
        failed.is_empty() && text.lines().any(|l| l == "rc=0,0"),
        "{}\n{text}\n{}",
        failed.join("\n"),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(passed > 300, "{passed} checks ran:\n{text}");
    assert_clean_bsd(&lab.inv, &h);
}
