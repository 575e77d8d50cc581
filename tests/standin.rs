//! The BSD scripts on the lab's stand-in hosts (docs/standin-hosts.md): Linux lab hosts
//! whose SSH session looks like FreeBSD or DragonFly (their BSD commands emulated from
//! the man pages and sources, Linux-only commands absent, root's shell tcsh, the disk at
//! /dev/ada1 or /dev/da1).  Every verb under every POSIX shell fsmatrix supports, a sweep
//! on a mixed lab, and the device guard.  Needs the standard lab (tests/run.sh brings it
//! up with `--os linux,linux,linux,freebsd,dragonfly`).
mod support;

// Without root and a lab the suite says so and is skipped (tests/run.sh runs it).
#[used]
#[link_section = ".init_array"]
static NEEDS: extern "C" fn() = support::skip::needs_root_and_lab;

use std::path::Path;
use std::process::Stdio;

use serde_json::Value;
use support::{fsmatrix, inventory_for, ssh, ssh_ok, upload_scripts, Lab, LabHost, LabInventory};

/// The folder the verb tests put the scripts in (not fsmatrix's work_dir).
const DIR: &str = "/var/tmp/fsmx-standin-test";

fn standin(lab: &Lab, os: &str) -> LabHost {
    lab.inv
        .standins
        .iter()
        .find(|h| h.os == os)
        .cloned()
        .unwrap_or_else(|| {
            panic!(
                "the standard lab has a {os} stand-in (tests/run.sh: --os {})",
                support::LAB_UP[4]
            )
        })
}

/// What the stand-in's own BSD commands say is left of a sweep: nothing mounted
/// from its disk or under fsmatrix's folders, no PostgreSQL, no pool (FreeBSD), no
/// partition table (gpart on FreeBSD, fdisk and gpt on DragonFly), no foreign
/// signature.
fn assert_clean_bsd(inv: &LabInventory, h: &LabHost) {
    let out = ssh_ok(
        inv,
        h,
        r#"os=$1; dev=$2
echo "mounted=$(mount -p | awk -v d="$dev" '$1 == d || $1 ~ "^" d "@" || $2 ~ /^\/var\/tmp\/fsm/' | wc -l | tr -d ' ')"
echo "postgres=$(pgrep -x postgres | wc -l | tr -d ' ')"
if [ "$os" = freebsd ]; then
  echo "pools=$(zpool list -H -o name 2>/dev/null | grep -c '^fsmx' || true)"
  echo "table=$(gpart show "$dev" >/dev/null 2>&1 && echo gpart || echo none)"
else
  echo "pools=0"
  t=none
  fdisk -s "$dev" >/dev/null 2>&1 && t=mbr
  gpt show "$dev" 2>/dev/null | awk 'NR > 1 && $NF != "Unused" { f = 1 } END { exit !f }' && t=gpt
  echo "table=$t"
fi
if fstyp -u "$dev" >/dev/null 2>&1; then echo "sig=$(fstyp -l -u "$dev")"; else echo "sig=none"; fi
"#,
        &[&h.os, &h.device],
    );
    for want in ["mounted=0", "postgres=0", "pools=0", "table=none"] {
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
/// each verb's stdout is printed after a `== <verb> rc=<n>` line.  Arguments:
/// shell, OS, device, filesystem, then the mkfs options.
const CELL: &str = r#"sh_=$1; os=$2; dev=$3; fs=$4; shift 4
d=/var/tmp/fsmx-standin-test; pg=/usr/local/bin
mnt=$d/mnt; cell=$d/cell
v() { name=$1; shift; echo "== $name"; $sh_ "$d/$os.sh" "$name" "$@" 2>"$d/$name.err"; rc=$?; echo "== rc $name $rc"; if [ "$rc" -ne 0 ]; then cat "$d/$name.err"; fi; }
v facts dev=$dev pg_bin=$pg > "$d/facts.out"; cat "$d/facts.out"
ident=$(sed -n 's/^device\.0\.ident=//p' "$d/facts.out")
v preflight dev=$dev allowed=$dev
if [ "$fs" = zfs ]; then
  v make-fs dev=$dev allowed=$dev ident="$ident" fs=zfs pool=fsmx mnt=$mnt zfs_prop=compression=gzip zfs_prop=atime=off
  v mount dev=$dev fs=zfs mnt=$mnt pool=fsmx
else
  v make-fs dev=$dev allowed=$dev ident="$ident" fs=$fs "$@"
  v mount dev=$dev fs=$fs mnt=$mnt mount_opt=noatime
fi
v pg-init pg_bin=$pg mnt=$mnt cell=$cell port=5433 monitor_user=root pg_set=shared_buffers=32MB pg_set=fsync=off
v pg-start pg_bin=$pg mnt=$mnt cell=$cell
v load pg_bin=$pg cell=$cell port=5433 out=$d/load scale=1
v run pg_bin=$pg cell=$cell port=5433 out=$d/run builtin=select-only clients=1 duration=2
v cat work=$d path=$d/run/stdout
v sizes mnt=$mnt fs=$fs pool=fsmx
v pg-stop pg_bin=$pg mnt=$mnt cell=$cell
v drop-caches fs=$fs dev=$dev pool=fsmx mnt=$mnt
v mount dev=$dev fs=$fs mnt=$mnt pool=fsmx
v teardown dev=$dev allowed=$dev fs=$fs mnt=$mnt pool=fsmx pg_bin=$pg cell=$cell
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
    let mut args = vec![shell, h.os.as_str(), h.device.as_str(), fs];
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
    assert_eq!(kv("facts", "os"), h.os);
    assert_eq!(kv("facts", "standin"), h.os);
    assert_eq!(kv("facts", "device.0.present"), "yes", "{text}");
    assert_eq!(kv("make-fs", "fs"), fs);
    // The mount's source is the device itself, whatever the OS shows (a HAMMER
    // label, a HAMMER2 dev@LABEL), and the mount after the cache drop is the same.
    if fs != "zfs" {
        assert_eq!(kv("mount", "mount_source"), h.device, "{text}");
        assert_eq!(kv("mount", "mount_fstype"), fs, "{text}");
    }
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
        kv("sizes", "du_apparent_bytes").parse::<u64>().unwrap_or(0) > 1_000_000,
        "{text}"
    );
    let method = if fs == "zfs" {
        "zfs-export-import".to_string()
    } else {
        format!("{fs}-umount-mount")
    };
    assert_eq!(kv("drop-caches", "drop_caches_method"), method, "{text}");
    assert_eq!(kv("teardown", "device"), "blank", "{text}");
    text
}

/// The shells reach a stand-in through its view of the real tools (they are test
/// vehicles, not part of its BSD userland).
const REAL_BIN: &str = "/run/fsmx-standin/real/bin";
const SHELLS: [&str; 5] = ["dash", "posh", "mksh", "yash", "busybox sh"];

/// Every verb of `os`'s script under every shell on `fs` (with `mkfs`), effective
/// options read back; then each of `others` under dash.
fn every_verb(os: &str, fs: &str, mkfs: &[&str], others: &[(&str, &[&str])]) {
    let name = support::lab_host_of(os);
    let lab = Lab::hold(&[&name]);
    let h = standin(&lab, os);
    upload_scripts(&lab.inv, &h, DIR);
    for shell in SHELLS {
        let sh = format!("{REAL_BIN}/{shell}");
        let text = cell_on(&lab.inv, &h, &sh, fs, mkfs);
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
    for (fs, mkfs) in others {
        let _ = cell_on(&lab.inv, &h, &format!("{REAL_BIN}/dash"), fs, mkfs);
        assert_clean_bsd(&lab.inv, &h);
    }
    ssh_ok(&lab.inv, &h, &format!("rm -rf {DIR}"), &[]);
}

#[test]
fn every_freebsd_verb_runs_under_every_posix_shell() {
    every_verb(
        "freebsd",
        "ufs",
        &["mkfs_opt=-U", "mkfs_opt=-j"],
        &[("zfs", &[])],
    );
}

#[test]
fn every_dragonfly_verb_runs_under_every_posix_shell() {
    every_verb(
        "dragonfly",
        "hammer",
        &[],
        &[("hammer2", &[]), ("ufs", &["mkfs_opt=-U"])],
    );
}

/// A matrix of `matrix/`, read as text (the tests shorten it).
fn matrix_text(name: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../matrix/{name}")))
        .unwrap_or_else(|e| panic!("matrix/{name}: {e}"))
}

/// `fsmatrix run` of `matrix` on `hosts` (with `host_extra` in each host's
/// table): exit 0, the bundle verifies; the bundle and its results.
fn sweep(
    lab: &Lab,
    hosts: &[&LabHost],
    host_extra: &str,
    matrix: &str,
) -> (std::path::PathBuf, Vec<Value>, tempfile::TempDir) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let inv = tmp.path().join("inventory.toml");
    let pairs: Vec<(&LabHost, &str)> = hosts.iter().map(|h| (*h, host_extra)).collect();
    std::fs::write(&inv, inventory_for(&lab.inv, &pairs, "")).expect("write the inventory");
    let mpath = tmp.path().join("matrix.toml");
    std::fs::write(&mpath, matrix).expect("write the matrix");
    let out = tmp.path().join("results");
    let o = fsmatrix()
        .args(["run", "--inventory"])
        .arg(&inv)
        .arg("--matrix")
        .arg(&mpath)
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
    for r in &rs {
        assert_eq!(r["status"]["state"], "done", "{r}");
    }
    (bundle, rs, tmp)
}

/// The filesystem types of `host`'s results, in run order, each once.
fn fs_of(rs: &[Value], host: &str) -> Vec<String> {
    let mut v: Vec<String> = rs
        .iter()
        .filter(|r| r["params"]["host"] == host)
        .map(|r| r["params"]["fs_type"].as_str().unwrap_or("?").to_string())
        .collect();
    v.dedup();
    v
}

/// The `fs_settings` of the first result of `filesystem` (a variant's name) on `host`.
fn settings(rs: &[Value], host: &str, filesystem: &str) -> String {
    rs.iter()
        .find(|r| r["params"]["filesystem"] == filesystem && r["params"]["host"] == host)
        .map(|r| r["fs_settings"].to_string())
        .unwrap_or_else(|| panic!("no {filesystem} result on {host}"))
}

/// Every `drop-caches.txt` of the bundle (one per run with drop_caches), as
/// (cell id, text).
fn drop_cache_records(bundle: &Path) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut stack = vec![bundle.join("data")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d)
            .expect("read a bundle folder")
            .flatten()
        {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().is_some_and(|n| n == "drop-caches.txt") {
                let cell = p
                    .parent()
                    .and_then(|c| c.file_name())
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                found.push((cell, std::fs::read_to_string(&p).expect("read")));
            }
        }
    }
    found
}

/// `fsmatrix run` of `matrix/quick-bsd.toml` (shortened, every run from a cold
/// start) on one Linux host and the FreeBSD and DragonFly stand-ins: every planned
/// cell done, the effective options recorded as the BSD tools report them, the cache
/// drop's method recorded per run, the bundle verifies, every host clean (checked
/// with the stand-ins' own commands); the report marks the stand-ins' rows.
#[test]
fn a_sweep_on_a_mixed_lab_runs_every_cell_and_marks_the_stand_ins() {
    let (fbsd, dfly) = (
        support::lab_host_of("freebsd"),
        support::lab_host_of("dragonfly"),
    );
    let lab = Lab::hold(&["lab2", &fbsd, &dfly]);
    let fbsd = standin(&lab, "freebsd");
    let dfly = standin(&lab, "dragonfly");
    let linux = lab.inv.hosts[0].clone();
    let matrix = matrix_text("quick-bsd.toml")
        .replace("duration = \"30s\"", "duration = \"3s\"")
        .replace("drop_caches = false", "drop_caches = true");
    let (bundle, rs, _tmp) = sweep(&lab, &[&linux, &fbsd, &dfly], "", &matrix);
    // Each OS runs only its own filesystems (the rest dropped with the reason):
    // ZFS and ext4 on Linux, UFS2 and ZFS on FreeBSD, UFS1 (no -j), HAMMER and
    // HAMMER2 on DragonFly.
    assert_eq!(fs_of(&rs, &linux.name), ["zfs", "ext4"], "{rs:?}");
    assert_eq!(fs_of(&rs, &fbsd.name), ["ufs", "zfs"], "{rs:?}");
    assert_eq!(
        fs_of(&rs, &dfly.name),
        ["ufs", "hammer", "hammer2"],
        "{rs:?}"
    );
    // Effective options as the stand-ins' BSD tools report them: soft updates
    // journaling on ufs2j, async kept where there are no soft updates, HAMMER's
    // nohistory from the mount list.
    let ufs2j = settings(&rs, &fbsd.name, "ufs2j");
    assert!(ufs2j.contains("journaled soft-updates"), "{ufs2j}");
    let ufs_async = settings(&rs, &fbsd.name, "ufs-async");
    assert!(
        ufs_async.contains("\"rw,async,noatime\""),
        "mount -p's options field: {ufs_async}"
    );
    let zfs = settings(&rs, &fbsd.name, "zfs-gzip");
    assert!(zfs.contains("\"compression\":\"gzip\""), "{zfs}");
    assert!(zfs.contains("\"atime\":\"off\""), "{zfs}");
    let hammer = settings(&rs, &dfly.name, "hammer");
    assert!(
        hammer.contains("noatime") && hammer.contains("nohistory"),
        "{hammer}"
    );
    // HAMMER2's compression set by hammer2 setcomp and read back by hammer2 stat.
    let hammer2 = settings(&rs, &dfly.name, "hammer2-zlib");
    assert!(hammer2.contains("noatime"), "{hammer2}");
    assert!(
        hammer2.contains("\"hammer2_properties\":{\"check\":\"xxhash64\",\"compression\":\"zlib"),
        "{hammer2}"
    );
    let dfly_async = settings(&rs, &dfly.name, "ufs-async");
    assert!(dfly_async.contains("async"), "{dfly_async}");
    // Every run started cold, each OS by its own method, PostgreSQL restarted.
    let drops = drop_cache_records(&bundle);
    assert_eq!(
        drops.len(),
        rs.len(),
        "one drop-caches.txt per run: {drops:?}"
    );
    let method_of = |r: &Value| -> String {
        let id = r["cell_id"].as_str().expect("cell_id");
        let text = &drops
            .iter()
            .find(|(c, _)| c == id)
            .unwrap_or_else(|| panic!("no drop-caches.txt for {id}: {drops:?}"))
            .1;
        assert!(text.lines().any(|l| l == "postgres=restarted"), "{text}");
        text.lines()
            .find_map(|l| l.strip_prefix("drop_caches_method="))
            .unwrap_or("?")
            .to_string()
    };
    for r in &rs {
        let fs = r["params"]["fs_type"].as_str().unwrap_or("?");
        let want = match (r["params"]["host"].as_str(), fs) {
            (Some(h), _) if h == linux.name => "linux-drop_caches".to_string(),
            (_, "zfs") => "zfs-export-import".to_string(),
            (_, fs) => format!("{fs}-umount-mount"),
        };
        assert_eq!(method_of(r), want, "{r}");
    }
    for h in [&fbsd, &dfly] {
        let facts: Value = serde_json::from_str(
            &std::fs::read_to_string(bundle.join(format!("data/hosts/{}/facts.json", h.name)))
                .expect("the stand-in's facts"),
        )
        .expect("JSON");
        assert_eq!(facts["standin"], h.os.as_str());
        assert_eq!(facts["os"], h.os.as_str());
    }
    let report = fsmatrix()
        .arg("report")
        .arg(&bundle)
        .output()
        .expect("report");
    let md = String::from_utf8_lossy(&report.stdout);
    assert!(md.contains("STAND-IN HOSTS"), "{md}");
    for h in [&fbsd, &dfly] {
        // Markdown escapes the brackets (host text is never a link).
        assert!(
            md.contains(&format!("{} \\[{} stand-in\\]", h.name, h.os)),
            "{md}"
        );
        assert_clean_bsd(&lab.inv, h);
    }
    // The Linux host too: its pool was exported and imported before every run
    // (through a folder of links), and teardown still found and destroyed it.
    let left = ssh_ok(
        &lab.inv,
        &linux,
        "zpool list -H -o name 2>/dev/null | grep -c '^fsmx' || true; \
         grep -c ' /var/tmp/fsmatrix' /proc/mounts || true",
        &[],
    );
    assert_eq!(
        left.split_whitespace().collect::<Vec<_>>(),
        ["0", "0"],
        "{left}"
    );
}

/// The studies' own matrices on the mixed lab, shortened (scale 1, 2-second runs,
/// two client counts) and with what zfs-fuse lacks replaced (lz4 and zstd by gzip,
/// no `sync` property): `matrix/bsd-vs-linux.toml` (DragonFly HAMMER, FreeBSD UFS2+J
/// and ZFS, Linux ext4 with and without barriers) and `matrix/zfs-vs-ext4.toml`
/// (ext4 and ZFS on Linux, ZFS on FreeBSD).
#[test]
fn the_bsd_studies_run_end_to_end_on_the_mixed_lab() {
    let (fbsd, dfly) = (
        support::lab_host_of("freebsd"),
        support::lab_host_of("dragonfly"),
    );
    let lab = Lab::hold(&["lab3", &fbsd, &dfly]);
    let fbsd = standin(&lab, "freebsd");
    let dfly = standin(&lab, "dragonfly");
    let linux = lab.inv.hosts[0].clone();
    let bsd = matrix_text("bsd-vs-linux.toml")
        .replace("scale = 100", "scale = 1")
        .replace(
            "clients = [1, 2, 4, 8, 16, 32, 64, 128, 256]",
            "clients = [1, 2]",
        )
        .replace("clients = [128, 256]", "clients = [2]")
        .replace("duration = \"60s\"", "duration = \"2s\"")
        .replace("max_connections = 300", "max_connections = 20")
        .replace("sync = \"disabled\", ", "");
    assert!(
        bsd.contains("scale = 1\n") && bsd.contains("duration = \"2s\"") && !bsd.contains("sync ="),
        "the shortening no longer matches bsd-vs-linux.toml:\n{bsd}"
    );
    let (_b, rs, _t) = sweep(&lab, &[&linux, &fbsd, &dfly], "", &bsd);
    assert_eq!(fs_of(&rs, &dfly.name), ["hammer"], "{rs:?}");
    assert_eq!(fs_of(&rs, &fbsd.name), ["ufs", "zfs"], "{rs:?}");
    assert_eq!(fs_of(&rs, &linux.name), ["zfs", "ext4"], "{rs:?}");
    // 2 client counts: HAMMER; UFS2+J, UFS2+J async, ZFS, ZFS tuned; on Linux
    // both ZFS and ext4 without barriers, ext4 with them at 1 client only.
    assert_eq!(rs.len(), 2 + 2 * 4 + (2 * 3 + 1), "{rs:?}");
    let tuned = settings(&rs, &fbsd.name, "zfs-tuned");
    assert!(tuned.contains("\"atime\":\"off\""), "{tuned}");
    let zfs = matrix_text("zfs-vs-ext4.toml")
        .replace("scale = 1000", "scale = 1")
        .replace("duration = \"15m\"", "duration = \"2s\"")
        .replace("repeats = 3", "repeats = 2")
        .replace("compression = \"zstd\"", "compression = \"gzip\"");
    assert!(
        zfs.contains("scale = 1\n") && !zfs.contains("= \"zstd\""),
        "the shortening no longer matches zfs-vs-ext4.toml:\n{zfs}"
    );
    let (_b, rs, _t) = sweep(&lab, &[&linux, &fbsd], "tags = [\"pg17\"]", &zfs);
    assert_eq!(fs_of(&rs, &linux.name), ["ext4", "zfs"], "{rs:?}");
    assert_eq!(fs_of(&rs, &fbsd.name), ["zfs"], "{rs:?}");
    // 2 workloads × 2 repeats per variant: 3 variants in all.
    assert_eq!(rs.len(), 3 * 2 * 2, "{rs:?}");
    let zstd = settings(&rs, &fbsd.name, "zfs-zstd");
    assert!(
        zstd.contains("\"recordsize\":\"8192\"") || zstd.contains("\"recordsize\":\"8K\""),
        "{zstd}"
    );
    for h in [&fbsd, &dfly] {
        assert_clean_bsd(&lab.inv, h);
    }
}

/// The guard on a stand-in, through its BSD commands: a mounted device, swap, a
/// foreign filesystem (fstyp), a foreign ZFS label (zdb; FreeBSD), a partition table,
/// a device the inventory does not list — refused (exit 3), the device unchanged.
fn guard_refuses_on(os: &str) {
    let name = support::lab_host_of(os);
    let lab = Lab::hold(&[&name]);
    let h = standin(&lab, os);
    upload_scripts(&lab.inv, &h, DIR);
    let out = ssh_ok(
        &lab.inv,
        &h,
        r#"os=$1; dev=$2; d=/var/tmp/fsmx-standin-test; real=/run/fsmx-standin/real
# The set-up uses the real Linux tools (what another OS or person left on the disk).
sum() { dd if=$dev bs=1048576 count=2 2>/dev/null | $real/bin/cksum | grep . || echo "no checksum: $(date +%N)"; }
pf() { c=$1; shift; /bin/sh $d/$os.sh preflight dev=$dev allowed=$dev "$@" >/dev/null 2>$d/pf.err; echo "$c rc=$? $(grep -m 1 '^refused: ' $d/pf.err || head -n 1 $d/pf.err)"; }
zero() { dd if=/dev/zero of=$dev bs=1048576 count=8 2>/dev/null; }
# A foreign ext2fs (what another OS left): fstyp knows it.
$real/sbin/mkfs.ext2 -q -F -L other $dev; before=$(sum); pf foreign; [ "$(sum)" = "$before" ] && echo foreign unchanged
# Mounted.
mkdir -p $d/m; $real/bin/mount -t ext2 $dev $d/m; pf mounted; $real/bin/umount $d/m
zero
if [ "$os" = freebsd ]; then
  # A ZFS label of someone else's pool.
  zpool create -f other-pool $dev && zpool export other-pool; before=$(sum); pf zfs-label; [ "$(sum)" = "$before" ] && echo zfs-label unchanged
  zpool labelclear -f $dev 2>/dev/null || true; zero
fi
# Swap on it.
$real/sbin/mkswap $dev >/dev/null; $real/sbin/swapon $dev; pf swap; $real/sbin/swapoff $dev
zero
# A partition table.
# (an MBR with one Linux partition at sector 2048: what fdisk would write)
printf '\000\040\041\000\203\376\377\377\000\010\000\000\000\120\000\000' | dd of=$dev bs=1 seek=446 conv=notrunc 2>/dev/null
printf '\125\252' | dd of=$dev bs=1 seek=510 conv=notrunc 2>/dev/null
before=$(sum); pf table; [ "$(sum)" = "$before" ] && echo table unchanged
zero
# Not listed in the inventory.
/bin/sh $d/$os.sh preflight dev=$dev allowed=/dev/ada2 >/dev/null 2>$d/pf.err; echo "unlisted rc=$? $(grep -m 1 '^refused: ' $d/pf.err || head -n 1 $d/pf.err)"
# Blank: accepted.
pf blank
rm -rf $d
"#,
        &[&h.os, &h.device],
    );
    let mut cases = vec!["foreign", "mounted", "swap", "table", "unlisted"];
    if os == "freebsd" {
        cases.push("zfs-label");
    }
    for case in &cases {
        let line = out
            .lines()
            .find(|l| l.starts_with(&format!("{case} rc=")))
            .unwrap_or_else(|| panic!("{os}: no {case} line:\n{out}"));
        assert!(
            line.starts_with(&format!("{case} rc=3 refused: ")),
            "{os}: {case} not refused by the guard: {line}\n{out}"
        );
    }
    for case in ["foreign", "zfs-label", "table"] {
        if cases.contains(&case) {
            assert!(
                out.lines().any(|l| l == format!("{case} unchanged")),
                "{os}: {case}: the device changed:\n{out}"
            );
        }
    }
    assert!(
        out.lines().any(|l| l.starts_with("blank rc=0")),
        "{os}: {out}"
    );
    assert_clean_bsd(&lab.inv, &h);
}

#[test]
fn the_guard_refuses_on_the_freebsd_stand_in_and_leaves_the_device_as_it_was() {
    guard_refuses_on("freebsd");
}

#[test]
fn the_guard_refuses_on_the_dragonfly_stand_in_and_leaves_the_device_as_it_was() {
    guard_refuses_on("dragonfly");
}

/// Runs `script` under the stand-in's own `sh` inside its namespaces (`nsenter` into
/// its init's mount and PID namespaces: its /tmp and /var/tmp are its own), `input` on
/// its stdin, ended after `limit_s` seconds.
fn script_in_standin(
    h: &LabHost,
    script: &str,
    input: &[u8],
    limit_s: u32,
) -> std::process::Output {
    use std::io::Write;
    let pid =
        std::fs::read_to_string(support::lab_dir().join(format!("hosts/{}/init.pid", h.name)))
            .expect("the stand-in's init.pid");
    let mut child = std::process::Command::new("timeout")
        .args(["--kill-after=10", &limit_s.to_string(), "nsenter", "-t"])
        .args([pid.trim(), "-m", "-p", "--"])
        .arg(format!("{REAL}/bin/sh"))
        .arg("-c")
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("nsenter");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input)
        .expect("send the stand-in its input");
    child.wait_with_output().expect("wait")
}

/// The emulated BSD commands against their own checks, on the stand-in itself
/// (orchestrator/src/lab/standin/test-emulators.sh: formats, flags, refusals and
/// exit codes of FreeBSD's uname, sysctl, diskinfo, geom, gpart, swapinfo, du, stat,
/// sha256, su, pw, lockf, kenv; test-fs-emulators.sh: newfs, fstyp, tunefs, mount,
/// umount, zdb, zpool, zfs on its disk and its zfs-fuse; test-emulators-dragonfly.sh:
/// DragonFly's, HAMMER and HAMMER2 included).  Run inside the host's namespaces from
/// here (its /tmp is its own, so the scripts go in as a tar).
fn emulator_checks(os: &str, files: &[&str], run: &str, at_least: usize) {
    let name = support::lab_host_of(os);
    let lab = Lab::hold(&[&name]);
    let h = standin(&lab, os);
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lab/standin");
    let tar = std::process::Command::new("tar")
        .arg("-C")
        .arg(&src)
        .args(["-cf", "-"])
        .args(files)
        .output()
        .expect("tar");
    assert!(tar.status.success());
    let real = REAL;
    let script = format!(
        "set -u; PATH={real}/bin:{real}/sbin; export PATH FSMX_STANDIN_REAL={real}; \
         d=$(mktemp -d /var/tmp/fsmx-emutest.XXXXXX); tar -C \"$d\" -xf -; dev={dev}; \
         {run}; \
         dd if=/dev/zero of={dev} bs=1048576 count=8 2>/dev/null; rm -rf \"$d\"; \
         echo \"rc=$a,$b\"",
        dev = h.device
    );
    let out = script_in_standin(&h, &script, &tar.stdout, 600);
    let text = String::from_utf8_lossy(&out.stdout);
    let failed: Vec<&str> = text.lines().filter(|l| l.starts_with("FAIL")).collect();
    let passed = text.lines().filter(|l| l.starts_with("PASS")).count();
    eprintln!(
        "{os} emulator checks: {passed} passed, {} failed",
        failed.len()
    );
    assert!(
        failed.is_empty() && text.lines().any(|l| l == "rc=0,0"),
        "{}\n{text}\n{}",
        failed.join("\n"),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(passed >= at_least, "{passed} checks ran:\n{text}");
    assert_clean_bsd(&lab.inv, &h);
}

#[test]
fn the_freebsd_emulators_pass_their_own_checks_on_the_stand_in() {
    emulator_checks(
        "freebsd",
        &["test-emulators.sh", "test-fs-emulators.sh", "freebsd"],
        "unshare -m --propagation private bash \"$d/test-emulators.sh\" --destructive $dev; a=$?; \
         FSMX_STANDIN_TEST_HOST=1 bash \"$d/test-fs-emulators.sh\" $dev; b=$?",
        300,
    );
}

#[test]
fn the_dragonfly_emulators_pass_their_own_checks_on_the_stand_in() {
    emulator_checks(
        "dragonfly",
        &["test-emulators-dragonfly.sh", "dragonfly", "freebsd"],
        "FSMX_STANDIN_TEST_HOST=1 bash \"$d/test-emulators-dragonfly.sh\" $dev; a=$?; b=0",
        200,
    );
}

/// `sizes` on the FreeBSD stand-in's ZFS counts data written just before it:
/// freebsd.sh runs `zpool sync` (FreeBSD 13+ has it) and records it, and the
/// dataset's own accounting (used, logicalused, referenced) comes with
/// compressratio.  The stand-in's `zpool sync` waits for zfs-fuse's next
/// txg; the tree's emulator is bound over the installed one in a private
/// mount namespace made after the pool is mounted (zfs-fuse mounts in the
/// host's namespace), so a lab brought up before the emulator changed tests
/// it too.
#[test]
fn freebsd_zfs_sizes_count_what_was_written_just_before() {
    let name = support::lab_host_of("freebsd");
    let lab = Lab::hold(&[&name]);
    let h = standin(&lab, "freebsd");
    upload_scripts(&lab.inv, &h, DIR);
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lab/standin/freebsd");
    let zpool = std::fs::read(src.join("zpool")).expect("the zpool emulator");
    let real = REAL;
    let script = format!(
        r#"set -u; R={real}; PATH=$R/bin:$R/sbin; export PATH
d={DIR}; s=$d/freebsd.sh; dev={dev}; mnt=$d/mnt
cat >"$d/zpool.new"; chmod 0755 "$d/zpool.new"
ident=$(/bin/sh "$s" facts dev="$dev" | sed -n 's/^device\.0\.ident=//p')
/bin/sh "$s" make-fs dev="$dev" allowed="$dev" ident="$ident" fs=zfs pool=fsmx mnt="$mnt" \
    zfs_prop=compression=gzip >"$d/make-fs.out" 2>&1 || {{ echo "make-fs failed"; cat "$d/make-fs.out"; }}
$R/bin/unshare -m --propagation private $R/bin/sh -c '
    R=$1; d=$2; mnt=$3
    $R/bin/mount --bind "$d/zpool.new" "$(readlink -f /usr/sbin/zpool)" || exit 1
    mkdir -p "$mnt/pgdata"
    head -c 20971520 /dev/urandom >"$mnt/pgdata/random"
    yes "fsmatrix: sizes that are true, a compressible line" | head -c 4194304 >"$mnt/pgdata/text"
    echo "used_before=$(zfs get -H -p -o value used fsmx)"
    t0=$(date +%s)
    /bin/sh "$d/freebsd.sh" sizes mnt="$mnt" fs=zfs pool=fsmx 2>"$d/sizes.err"; echo "sizes_rc=$?"
    echo "took_s=$(($(date +%s) - t0))"
    cat "$d/sizes.err" >&2' sh "$R" "$d" "$mnt"
/bin/sh "$s" teardown dev="$dev" allowed="$dev" fs=zfs mnt="$mnt" pool=fsmx >"$d/teardown.out" 2>&1
sed -n 's/^device=/teardown_device=/p' "$d/teardown.out"
rm -rf "$d"
"#,
        dev = h.device
    );
    let out = script_in_standin(&h, &script, &zpool, 180);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let all = format!(
        "{text}\n--- stderr\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{all}");
    let kv = |key: &str| -> String {
        text.lines()
            .filter_map(|l| l.strip_prefix(&format!("{key}=")))
            .next_back()
            .unwrap_or_else(|| panic!("no {key}:\n{all}"))
            .to_string()
    };
    let num = |key: &str| -> f64 {
        kv(key)
            .parse()
            .unwrap_or_else(|_| panic!("{key} is not a number:\n{all}"))
    };
    assert_eq!(kv("sizes_rc"), "0", "{all}");
    assert_eq!(kv("flush"), "zpool-sync", "{all}");
    let mib = 1024.0 * 1024.0;
    assert!(num("zfs_used_bytes") >= 18.0 * mib, "{all}");
    assert!(num("zfs_referenced_bytes") >= 18.0 * mib, "{all}");
    assert!(num("du_bytes") >= 18.0 * mib, "{all}");
    let (logical, used, ratio) = (
        num("zfs_logicalused_bytes"),
        num("zfs_used_bytes"),
        num("zfs_compressratio"),
    );
    assert!(
        ratio > 1.05 && (logical / used - ratio).abs() <= 0.1 * ratio,
        "logicalused/used {} against compressratio {ratio}:\n{all}",
        logical / used
    );
    assert_eq!(kv("teardown_device"), "blank", "{all}");
    assert_clean_bsd(&lab.inv, &h);
}

// issue 25: DragonFly limits

/// A sparse file of `bytes` on a loop device of this machine, shown inside the stand-in
/// `h` as the block node `/dev/<name>` (the loop's major:minor) and, for a disk, listed
/// in its `kern.disks` (`/run/fsmx-standin/disks`).  Dropping it removes all of that,
/// also when the test failed.
struct ExtraDisk {
    pid: String,
    name: String,
    loopdev: String,
    file: std::path::PathBuf,
    disk: bool,
    majmin: (u32, u32),
}

const REAL: &str = "/run/fsmx-standin/real";

/// `script` under the stand-in's `sh` inside its mount namespace, the real tools first
/// in PATH (for what the test itself sets up, as another OS or person would).
fn in_standin(pid: &str, script: &str) -> std::process::Output {
    std::process::Command::new("nsenter")
        .args(["-t", pid, "-m", "-p", "--"])
        .arg(format!("{REAL}/bin/sh"))
        .arg("-c")
        .arg(format!(
            "PATH={REAL}/bin:{REAL}/sbin; export PATH; {script}"
        ))
        .output()
        .expect("nsenter")
}

fn standin_pid(h: &LabHost) -> String {
    std::fs::read_to_string(support::lab_dir().join(format!("hosts/{}/init.pid", h.name)))
        .expect("the stand-in's init.pid")
        .trim()
        .to_string()
}

impl ExtraDisk {
    fn new(h: &LabHost, name: &str, bytes: u64, disk: bool) -> ExtraDisk {
        let file = std::path::PathBuf::from(format!("/var/tmp/fsmx-standin-{name}.img"));
        let _ = std::fs::remove_file(&file);
        std::fs::File::create(&file)
            .and_then(|f| f.set_len(bytes))
            .expect("a sparse backing file");
        let o = std::process::Command::new("losetup")
            .args(["-f", "--show"])
            .arg(&file)
            .output()
            .expect("losetup");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let loopdev = String::from_utf8_lossy(&o.stdout).trim().to_string();
        let sys = format!("/sys/block/{}/dev", loopdev.trim_start_matches("/dev/"));
        let mm = std::fs::read_to_string(&sys).expect("the loop's major:minor");
        let (maj, min) = mm.trim().split_once(':').expect("maj:min");
        let majmin = (maj.parse().expect("major"), min.parse().expect("minor"));
        let d = ExtraDisk {
            pid: standin_pid(h),
            name: name.to_string(),
            loopdev,
            file,
            disk,
            majmin,
        };
        let mut script = format!(
            "set -e; rm -f /dev/{name}; mknod /dev/{name} b {} {}",
            d.majmin.0, d.majmin.1
        );
        if disk {
            script.push_str(&format!(
                "; grep -qx {name} /run/fsmx-standin/disks || echo {name} >> /run/fsmx-standin/disks"
            ));
        }
        let o = in_standin(&d.pid, &script);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        d
    }
    fn path(&self) -> String {
        format!("/dev/{}", self.name)
    }
}

impl Drop for ExtraDisk {
    fn drop(&mut self) {
        let name = &self.name;
        let mut script = format!(
            "swapoff /dev/{name} 2>/dev/null; umount /dev/{name} 2>/dev/null; rm -f /dev/{name}"
        );
        if self.disk {
            script.push_str(&format!(
                "; grep -vx {name} /run/fsmx-standin/disks > /run/fsmx-standin/disks.new; \
                 cat /run/fsmx-standin/disks.new > /run/fsmx-standin/disks; rm -f /run/fsmx-standin/disks.new"
            ));
        }
        let _ = in_standin(&self.pid, &script);
        let _ = std::process::Command::new("losetup")
            .args(["-d", &self.loopdev])
            .status();
        let _ = std::fs::remove_file(&self.file);
    }
}

/// A matrix of one filesystem of `fs_type` (a short select-only run).
fn one_fs_matrix(fs_type: &str) -> String {
    format!(
        "name = \"one\"\nrepeats = 1\nwarmup = false\ndrop_caches = false\n\n\
         [[filesystem]]\nname = \"{fs_type}\"\ntype = \"{fs_type}\"\n\n\
         [[workload]]\nname = \"select-only\"\nbuiltin = \"select-only\"\nscale = 1\nclients = [1]\nduration = \"3s\"\n"
    )
}

/// W2: DragonFly's newfs refuses media of 1 TiB or more (sbin/newfs/newfs.c): `check`
/// refuses a ufs cell on such a listed device before anything is formatted, with the
/// device's size and what would be valid; the stand-in's newfs refuses it with the real
/// message and exit status.  `check` also says which holders it cannot see there.
#[test]
fn dragonfly_check_refuses_ufs_on_a_device_of_1_tib_as_newfs_would() {
    let name = support::lab_host_of("dragonfly");
    let lab = Lab::hold(&[&name]);
    let h = standin(&lab, "dragonfly");
    let big = ExtraDisk::new(&h, "da2", 1 << 40, true);
    let mut listed = h.clone();
    listed.device = big.path();
    let tmp = tempfile::tempdir().expect("tempdir");
    let inv = tmp.path().join("inventory.toml");
    std::fs::write(&inv, inventory_for(&lab.inv, &[(&listed, "")], "")).expect("inventory");
    let m = tmp.path().join("matrix.toml");
    std::fs::write(&m, one_fs_matrix("ufs")).expect("matrix");
    let (code, out) = support::check_with(&inv, &m);
    assert_ne!(code, Some(0), "check passed a 1 TiB ufs cell:\n{out}");
    for want in [
        "device /dev/da2 has 1099511627776 bytes (1.0 TiB), too large for fs=ufs on dragonfly",
        "media size is too large for newfs to handle",
        "valid: a slice or partition under 1 TiB",
        "not checked on this host: vinum, ccd holders",
    ] {
        assert!(out.contains(want), "{want}?\n{out}");
    }
    // HAMMER on the same device is not refused for its size.
    std::fs::write(&m, one_fs_matrix("hammer")).expect("matrix");
    let o = fsmatrix()
        .args(["check", "--inventory"])
        .arg(&inv)
        .arg("--matrix")
        .arg(&m)
        .stdin(Stdio::null())
        .output()
        .expect("fsmatrix check");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(!out.contains("too large"), "{out}");
    // The stand-in's newfs itself: the real message, exit 1, nothing written.
    let out = ssh_ok(
        &lab.inv,
        &h,
        r#"dev=$1; before=$(dd if=$dev bs=1048576 count=1 2>/dev/null | cksum)
newfs -U -L big $dev >/dev/null 2>/var/tmp/fsmx-newfs.err; echo "rc=$?"; cat /var/tmp/fsmx-newfs.err; rm -f /var/tmp/fsmx-newfs.err
[ "$(dd if=$dev bs=1048576 count=1 2>/dev/null | cksum)" = "$before" ] && echo unchanged"#,
        &[&big.path()],
    );
    assert!(out.lines().any(|l| l == "rc=1"), "{out}");
    assert!(
        out.lines()
            .any(|l| l == "newfs: /dev/da2: media size is too large for newfs to handle"),
        "{out}"
    );
    assert!(out.lines().any(|l| l == "unchanged"), "{out}");
    drop(big);
    assert_clean_bsd(&lab.inv, &h);
}

/// W5: newfs_hammer needs -f when the free big-blocks after its reservations come to
/// under 10 GiB (newfs_hammer.c format_volume(), ondisk.c count_freemap()), not when
/// the raw size is under 10 GiB: on a device of exactly 10 GiB the two rules disagree,
/// and make-fs fs=hammer must pass -f there.
#[test]
fn dragonfly_make_fs_hammer_on_exactly_10_gib_passes_f() {
    let name = support::lab_host_of("dragonfly");
    let lab = Lab::hold(&[&name]);
    let h = standin(&lab, "dragonfly");
    upload_scripts(&lab.inv, &h, DIR);
    let disk = ExtraDisk::new(&h, "da2", 10 << 30, true);
    let out = ssh_ok(
        &lab.inv,
        &h,
        r#"dev=$1; d=/var/tmp/fsmx-standin-test
ident=$(/bin/sh $d/dragonfly.sh facts dev=$dev | sed -n 's/^device\.0\.ident=//p')
/bin/sh $d/dragonfly.sh make-fs dev=$dev allowed=$dev ident="$ident" fs=hammer >$d/mf.out 2>$d/mf.err; echo "rc=$?"
cat $d/mf.out; sed 's/^/err: /' $d/mf.err
/bin/sh $d/dragonfly.sh teardown dev=$dev allowed=$dev fs=hammer mnt=$d/mnt >/dev/null 2>&1
rm -rf $d"#,
        &[&disk.path()],
    );
    assert!(out.lines().any(|l| l == "rc=0"), "{out}");
    let cmd = out
        .lines()
        .find_map(|l| l.strip_prefix("mkfs_cmd="))
        .unwrap_or_else(|| panic!("no mkfs_cmd:\n{out}"));
    assert!(
        cmd.starts_with("'newfs_hammer' '-f' "),
        "no -f on a 10 GiB device: {cmd}\n{out}"
    );
    drop(disk);
    assert_clean_bsd(&lab.inv, &h);
}

/// W7: `gpt show` opens the disk O_RDWR|O_EXCL unless `gpt -r` (sbin/gpt/gpt.c
/// gpt_open()); the stand-in's gpt logs every such open.  The read-only verbs (facts,
/// preflight with its signature probe) make none; a plain `gpt show` does (the log
/// works).
#[test]
fn dragonfly_read_only_verbs_make_no_read_write_open() {
    let name = support::lab_host_of("dragonfly");
    let lab = Lab::hold(&[&name]);
    let h = standin(&lab, "dragonfly");
    upload_scripts(&lab.inv, &h, DIR);
    let out = ssh_ok(
        &lab.inv,
        &h,
        r#"dev=$1; d=/var/tmp/fsmx-standin-test; log=/run/fsmx-standin/rw-opens
# Blank: the first 8 MiB and HAMMER2's volume header copies at 2, 4 and 6 GiB (what
# an earlier test may have left there would make the disk foreign).
dd if=/dev/zero of=$dev bs=1048576 count=8 2>/dev/null
for z in 1 2 3; do dd if=/dev/zero of=$dev bs=65536 seek=$((z * 32768)) count=1 conv=notrunc 2>/dev/null; done
rm -f $log
/bin/sh $d/dragonfly.sh facts dev=$dev >/dev/null 2>&1; echo "facts rc=$?"
/bin/sh $d/dragonfly.sh preflight dev=$dev allowed=$dev >$d/pf.out 2>&1; echo "preflight rc=$?"
grep '^signature=' $d/pf.out
echo "read-only opens: $(cat $log 2>/dev/null | wc -l | tr -d ' ')"
cat $log 2>/dev/null | sed 's/^/open: /'
gpt show $dev >/dev/null 2>&1
echo "after gpt show: $(cat $log 2>/dev/null | wc -l | tr -d ' ')"
rm -f $log; rm -rf $d"#,
        &[&h.device],
    );
    assert!(out.lines().any(|l| l == "preflight rc=0"), "{out}");
    assert!(out.lines().any(|l| l == "signature=none"), "{out}");
    assert!(
        out.lines().any(|l| l == "read-only opens: 0"),
        "a read-only verb opened the disk read-write:\n{out}"
    );
    assert!(
        out.lines().any(|l| l == "after gpt show: 1"),
        "the stand-in's gpt does not log its read-write opens:\n{out}"
    );
}

/// W10: DragonFly has no open counts.  The guard refuses (exit 3, naming the holder) a
/// disk a device-mapper device is built on (`dmsetup deps`; the stand-in's dm state is
/// /run/fsmx-standin/dm), and, as before, one with swap on a slice or a mounted slice
/// (`da1s1b`, `da1s1a`: here a second loop shown under the slice's name).
#[test]
fn dragonfly_guard_refuses_a_disk_with_a_dm_holder_or_a_busy_slice() {
    let name = support::lab_host_of("dragonfly");
    let lab = Lab::hold(&[&name]);
    let h = standin(&lab, "dragonfly");
    upload_scripts(&lab.inv, &h, DIR);
    let disk = h.device.trim_start_matches("/dev/").to_string();
    let slice = ExtraDisk::new(&h, &format!("{disk}s1b"), 64 << 20, false);
    let out = ssh_ok(
        &lab.inv,
        &h,
        r#"dev=$1; slice=$2; d=/var/tmp/fsmx-standin-test; real=/run/fsmx-standin/real
pf() { c=$1; /bin/sh $d/dragonfly.sh preflight dev=$dev allowed=$dev >/dev/null 2>$d/pf.err; echo "$c rc=$? $(grep -m 1 '^refused: ' $d/pf.err || head -n 1 $d/pf.err)"; }
dd if=/dev/zero of=$dev bs=1048576 count=8 2>/dev/null
for z in 1 2 3; do dd if=/dev/zero of=$dev bs=65536 seek=$((z * 32768)) count=1 conv=notrunc 2>/dev/null; done
pf blank
# A dm device (a tcplay/cryptsetup volume, an LVM volume) built on the disk.
mm=$(stat -L -f '%Hr:%Lr' $dev)
echo "crypt0 $mm" > /run/fsmx-standin/dm
pf dm
rm -f /run/fsmx-standin/dm
# Swap on a slice of the disk.
$real/sbin/mkswap $slice >/dev/null; $real/sbin/swapon $slice; pf swap-slice; $real/sbin/swapoff $slice
# A mounted slice (a UFS made and mounted with the stand-in's own newfs and mount).
mkdir -p $d/m; newfs -U -L slice $slice >/dev/null 2>&1; mount -t ufs $slice $d/m; pf mounted-slice; umount $d/m
dd if=/dev/zero of=$slice bs=1048576 count=2 2>/dev/null
pf blank-again
rm -rf $d"#,
        &[&h.device, &slice.path()],
    );
    let line = |case: &str| -> String {
        out.lines()
            .find(|l| l.starts_with(&format!("{case} rc=")))
            .unwrap_or_else(|| panic!("no {case} line:\n{out}"))
            .to_string()
    };
    assert!(line("blank").starts_with("blank rc=0"), "{out}");
    assert!(line("blank-again").starts_with("blank-again rc=0"), "{out}");
    let dm = line("dm");
    assert!(
        dm.starts_with("dm rc=3 refused: ")
            && dm.contains("held by the device-mapper device crypt0"),
        "{out}"
    );
    let swap = line("swap-slice");
    assert!(
        swap.starts_with("swap-slice rc=3 refused: ") && swap.contains(&format!("/dev/{disk}s1b")),
        "{out}"
    );
    let mounted = line("mounted-slice");
    assert!(
        mounted.starts_with("mounted-slice rc=3 refused: ")
            && mounted.contains(&format!("mounted: /dev/{disk}s1b on ")),
        "{out}"
    );
    drop(slice);
    assert_clean_bsd(&lab.inv, &h);
}

// issue 25: HAMMER2

/// Shell helpers for the HAMMER2 tests on the DragonFly stand-in (run through ssh as
/// root in its BSD view): `v VERB ARGS...` runs dragonfly.sh's verb, printing
/// `<tag> rc=<n>` then its `refused:` line and its key=value lines prefixed by the tag;
/// `sums` checksums the first MiB and the header zones inside the device (0, 2, 4,
/// 6 GiB: sys/vfs/hammer2/hammer2_disk.h HAMMER2_NUM_VOLHDRS, HAMMER2_ZONE_BYTES64);
/// `zero` clears the first 8 MiB and every header zone.
const H2_SH: &str = r#"dev=$1; d=/var/tmp/fsmx-standin-test; real=/run/fsmx-standin/real
s=$d/dragonfly.sh
v() { tag=$1; shift; /bin/sh "$s" "$@" >"$d/v.out" 2>"$d/v.err"; echo "$tag rc=$?"
  grep -m 1 '^refused: ' "$d/v.err" | sed "s/^/$tag /"; sed "s/^/$tag /" "$d/v.out"; }
size=$($real/sbin/blockdev --getsize64 "$dev")
sums() { { dd if="$dev" bs=1048576 count=1; for i in 1 2 3; do
  [ $((i * 32768 + 1)) -le $((size / 65536)) ] && dd if="$dev" bs=65536 skip=$((i * 32768)) count=1; done; } 2>/dev/null | cksum; }
zero() { dd if=/dev/zero of="$dev" bs=1048576 count=8 conv=notrunc 2>/dev/null; for i in 1 2 3; do
  [ $((i * 32768 + 1)) -le $((size / 65536)) ] && dd if=/dev/zero of="$dev" bs=65536 seek=$((i * 32768)) count=1 conv=notrunc 2>/dev/null; done; true; }
ident=$(/bin/sh "$s" facts dev="$dev" | sed -n 's/^device\.0\.ident=//p')
"#;

fn h2_run(lab: &Lab, h: &LabHost, body: &str) -> String {
    upload_scripts(&lab.inv, h, DIR);
    let out = ssh(&lab.inv, h, &format!("{H2_SH}{body}"), &[&h.device]);
    let text = format!(
        "{}\n--- stderr\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    text
}

fn line_of<'a>(text: &'a str, prefix: &str) -> &'a str {
    text.lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line {prefix}…:\n{text}"))
}

/// W1 (and W6's foreign half): a foreign HAMMER2 volume, made with another label
/// (`-L BACKUP`), with `-L none`, or one whose header #0 is damaged (only `hammer2
/// info`, which reads all four headers, sees it), is refused by make-fs (exit 3, the
/// guard's `refused:` line naming its PFSs) and left alone by teardown, the first MiB
/// and the header zones unchanged; fsmatrix's own (made by make-fs) is cleaned.
#[test]
fn a_foreign_hammer2_volume_is_refused_and_left_unchanged_while_fsmatrix_s_own_is_cleaned() {
    let name = support::lab_host_of("dragonfly");
    let lab = Lab::hold(&[&name]);
    let h = standin(&lab, "dragonfly");
    let text = h2_run(
        &lab,
        &h,
        r#"for c in BACKUP none damaged; do
  zero
  case $c in
  damaged) newfs_hammer2 -L BACKUP "$dev" >/dev/null; dd if=/dev/zero of="$dev" bs=65536 count=1 conv=notrunc 2>/dev/null ;;
  *) newfs_hammer2 -L "$c" "$dev" >/dev/null ;;
  esac
  before=$(sums)
  v "make-fs-$c" make-fs dev="$dev" allowed="$dev" ident="$ident" fs=hammer2
  v "teardown-$c" teardown dev="$dev" allowed="$dev"
  [ "$(sums)" = "$before" ] && echo "$c unchanged"
done
zero
v own-make-fs make-fs dev="$dev" allowed="$dev" ident="$ident" fs=hammer2
v own-teardown teardown dev="$dev" allowed="$dev"
zero
rm -rf "$d"
"#,
    );
    for c in ["BACKUP", "none", "damaged"] {
        let mk = line_of(&text, &format!("make-fs-{c} rc="));
        assert_eq!(mk, format!("make-fs-{c} rc=3"), "{c}: make-fs:\n{text}");
        let why = line_of(&text, &format!("make-fs-{c} refused: "));
        assert!(
            why.contains("foreign signature (hammer2") && why.contains("consent=yes"),
            "{c}: {why}\n{text}"
        );
        assert!(
            line_of(&text, &format!("teardown-{c} device=")).contains("untouched: foreign"),
            "{c}: teardown:\n{text}"
        );
        assert!(
            text.lines().any(|l| l == format!("{c} unchanged")),
            "{c}: the device changed:\n{text}"
        );
    }
    assert_eq!(
        line_of(&text, "own-make-fs rc="),
        "own-make-fs rc=0",
        "{text}"
    );
    assert_eq!(
        line_of(&text, "own-teardown device="),
        "own-teardown device=blank",
        "{text}"
    );
    assert_clean_bsd(&lab.inv, &h);
}

/// W6: after teardown of fsmatrix's own HAMMER2 nothing of it can be read or mounted:
/// `hammer2 info` (all four volume headers, sbin/hammer2/cmd_info.c) lists nothing and
/// `mount_hammer2 da1@fsmx` fails (the kernel would mount from the copy at 2 GiB).
#[test]
fn teardown_of_fsmatrix_s_hammer2_leaves_no_volume_header_to_mount() {
    let name = support::lab_host_of("dragonfly");
    let lab = Lab::hold(&[&name]);
    let h = standin(&lab, "dragonfly");
    let text = h2_run(
        &lab,
        &h,
        r#"zero
v make-fs make-fs dev="$dev" allowed="$dev" ident="$ident" fs=hammer2
v teardown teardown dev="$dev" allowed="$dev"
echo "info=[$(hammer2 info "$dev" 2>&1 | tr '\n' ' ')]"
mkdir -p "$d/m"
if mount_hammer2 "$dev@fsmx" "$d/m" 2>/dev/null; then echo "mounted=yes"; umount "$d/m"; else echo "mounted=no"; fi
zero
rm -rf "$d"
"#,
    );
    assert_eq!(line_of(&text, "make-fs rc="), "make-fs rc=0", "{text}");
    assert_eq!(line_of(&text, "teardown device="), "teardown device=blank");
    assert_eq!(line_of(&text, "info="), "info=[]", "{text}");
    assert_eq!(line_of(&text, "mounted="), "mounted=no", "{text}");
    assert_clean_bsd(&lab.inv, &h);
}

/// W3: the mount verb records HAMMER2's compression and check with one spelling
/// (`lz4:default`, `xxhash64`) on DragonFly 6.2 (`comp=…`/`check=…`, cmd_stat.c before
/// the 2022 rewrite) and 6.4 (bare values).  The stand-in is made 6.2 through its
/// release file, which is put back whatever happens.
#[test]
fn the_hammer2_compression_is_recorded_with_one_spelling_on_6_2_and_6_4() {
    let name = support::lab_host_of("dragonfly");
    let lab = Lab::hold(&[&name]);
    let h = standin(&lab, "dragonfly");
    let text = h2_run(
        &lab,
        &h,
        r#"rel=/run/fsmx-standin/release
if [ -e "$rel" ]; then cp "$rel" "$d/release.saved"; fi
restore() { if [ -e "$d/release.saved" ]; then cp "$d/release.saved" "$rel"; else rm -f "$rel"; fi; }
trap 'restore' EXIT
zero
v make-fs make-fs dev="$dev" allowed="$dev" ident="$ident" fs=hammer2
for r in 6.4-RELEASE 6.2-RELEASE; do
  printf '%s\n' "$r" >"$rel"
  v "mount-$r" mount dev="$dev" fs=hammer2 mnt="$d/mnt" comp=zlib:9
  echo "uname-$r=$(uname -r)"
  umount "$d/mnt"
done
restore
v teardown teardown dev="$dev" allowed="$dev" mnt="$d/mnt"
zero
rm -rf "$d"
"#,
    );
    for r in ["6.4-RELEASE", "6.2-RELEASE"] {
        assert_eq!(
            line_of(&text, &format!("uname-{r}=")),
            format!("uname-{r}={r}")
        );
        assert_eq!(
            line_of(&text, &format!("mount-{r} rc=")),
            format!("mount-{r} rc=0"),
            "{text}"
        );
        assert_eq!(
            line_of(&text, &format!("mount-{r} hammer2.compression=")),
            format!("mount-{r} hammer2.compression=zlib:9"),
            "{text}"
        );
        assert_eq!(
            line_of(&text, &format!("mount-{r} hammer2.check=")),
            format!("mount-{r} hammer2.check=xxhash64"),
            "{text}"
        );
    }
    assert_eq!(line_of(&text, "teardown device="), "teardown device=blank");
    assert_clean_bsd(&lab.inv, &h);
}

/// Audit §d 2: a HAMMER2 mount starts the `hammer2 service` daemon (mount_hammer2.c
/// cluster_connect: `hammer2 -q service`).  fsmatrix's teardown stops it when it was not
/// running before fsmatrix's first HAMMER2 mount on the host, and never one the host
/// already ran; facts say whether it runs.
#[test]
fn teardown_stops_the_hammer2_service_fsmatrix_started_and_keeps_one_that_ran_before() {
    let name = support::lab_host_of("dragonfly");
    let lab = Lab::hold(&[&name]);
    let h = standin(&lab, "dragonfly");
    let text = h2_run(
        &lab,
        &h,
        r#"daemons() { pgrep -f '^hammer2: hammer2 master listen' | tr '\n' ' '; }
# A clean start: no daemon (one a failed run left behind is stopped here).
for p in $(daemons); do kill "$p"; done; sleep 1
v facts-before facts dev="$dev"
for c in started preexisting; do
  zero
  pre=
  if [ "$c" = preexisting ]; then hammer2 -q service; sleep 1; pre=$(daemons); echo "pre=[$pre]"; fi
  v "make-fs-$c" make-fs dev="$dev" allowed="$dev" ident="$ident" fs=hammer2
  v "mount-$c" mount dev="$dev" fs=hammer2 mnt="$d/mnt"
  echo "during-$c=[$(daemons)]"
  v "teardown-$c" teardown dev="$dev" allowed="$dev" mnt="$d/mnt"
  sleep 1
  echo "after-$c=[$(daemons)]"
  for p in $pre; do kill -0 "$p" 2>/dev/null && echo "survived-$c=$p"; done
done
v facts-after facts dev="$dev"
for p in $(daemons); do kill "$p"; done
zero
rm -rf "$d"
"#,
    );
    assert_eq!(
        line_of(&text, "facts-before hammer2_service="),
        "facts-before hammer2_service=not-running",
        "{text}"
    );
    assert_eq!(
        line_of(&text, "mount-started rc="),
        "mount-started rc=0",
        "{text}"
    );
    assert_ne!(
        line_of(&text, "during-started="),
        "during-started=[]",
        "{text}"
    );
    assert_eq!(
        line_of(&text, "teardown-started rc="),
        "teardown-started rc=0",
        "{text}"
    );
    assert_eq!(
        line_of(&text, "after-started="),
        "after-started=[]",
        "{text}"
    );
    assert_eq!(
        line_of(&text, "teardown-preexisting rc="),
        "teardown-preexisting rc=0",
        "{text}"
    );
    let pre = line_of(&text, "pre=[");
    assert_ne!(pre, "pre=[]", "{text}");
    assert!(
        text.lines().any(|l| l.starts_with("survived-preexisting=")),
        "{text}"
    );
    assert_eq!(
        line_of(&text, "facts-after hammer2_service="),
        "facts-after hammer2_service=running",
        "{text}"
    );
    assert_clean_bsd(&lab.inv, &h);
}

// issue 25: FreeBSD

/// The `key=value` lines of `out` whose key is `key`, the last one.
fn last_kv(out: &str, key: &str) -> Option<String> {
    out.lines()
        .filter_map(|l| l.strip_prefix(&format!("{key}=")))
        .next_back()
        .map(str::to_string)
}

/// W4: on FreeBSD every zpool or zfs subcommand run by root loads zfs.ko
/// (libzfs_init -> libzfs_load_module: `if (modfind("zfs") < 0)
/// kldload(ZFS_KMOD)`, openzfs zfs-2.2.6 lib/libzfs/os/freebsd/libzfs_compat.c),
/// and the stand-in's zpool and zfs do it too (its kldstat shows it).  On a
/// stand-in with zfs.ko not loaded, the read-only `facts` and `preflight` leave it
/// unloaded and say `zfs_running=no`, and so does a UFS cell's make-fs and
/// teardown; a ZFS make-fs still works (and loads it).
#[test]
fn freebsd_facts_and_preflight_leave_zfs_ko_unloaded() {
    let name = support::lab_host_of("freebsd");
    let lab = Lab::hold(&[&name]);
    let h = standin(&lab, "freebsd");
    upload_scripts(&lab.inv, &h, DIR);
    let out = ssh_ok(
        &lab.inv,
        &h,
        r#"dev=$1; d=/var/tmp/fsmx-standin-test; s=$d/freebsd.sh; real=/run/fsmx-standin/real
loaded() { if kldstat -q -m zfs; then echo yes; else echo no; fi; }
# The stand-in's kldunload zfs: no pool is imported (asked of zfs-fuse itself).
[ -z "$($real/sbin/zpool list -H -o name 2>/dev/null)" ] || { echo "a pool is imported"; exit 1; }
rm -f /run/fsmx-standin/kld
echo "at_start=$(loaded)"
/bin/sh $s facts dev=$dev >$d/facts.out 2>$d/facts.err; echo "facts_rc=$?"
sed -n 's/^zfs_running=/facts_zfs_running=/p; s/^zfs_version=/facts_zfs_version=/p' $d/facts.out
echo "after_facts=$(loaded)"
/bin/sh $s preflight dev=$dev allowed=$dev >$d/pf.out 2>$d/pf.err; echo "preflight_rc=$?"
echo "after_preflight=$(loaded)"
ident=$(sed -n 's/^device\.0\.ident=//p' $d/facts.out)
# A UFS cell, torn down as a sweep does (pool= is always given): no zpool call.
/bin/sh $s make-fs dev=$dev allowed=$dev ident="$ident" fs=ufs >$d/mf.out 2>$d/mf.err; echo "ufs_make_fs_rc=$?"
/bin/sh $s teardown dev=$dev allowed=$dev fs=ufs mnt=$d/mnt pool=fsmx | sed -n 's/^device=/ufs_teardown_device=/p'
echo "after_ufs_cell=$(loaded)"
/bin/sh $s make-fs dev=$dev allowed=$dev ident="$ident" fs=zfs pool=fsmx mnt=$d/mnt >$d/mf.out 2>$d/mf.err; echo "make_fs_rc=$?"
cat $d/mf.err >&2
echo "after_make_fs=$(loaded)"
/bin/sh $s facts dev=$dev | sed -n 's/^zfs_running=/facts_again_zfs_running=/p'
/bin/sh $s teardown dev=$dev allowed=$dev fs=zfs mnt=$d/mnt pool=fsmx | sed -n 's/^device=/teardown_device=/p'
"#,
        &[&h.device],
    );
    let kv = |k: &str| last_kv(&out, k).unwrap_or_else(|| panic!("no {k}:\n{out}"));
    assert_eq!(kv("at_start"), "no", "{out}");
    assert_eq!(kv("facts_rc"), "0", "{out}");
    assert_eq!(kv("facts_zfs_running"), "no", "{out}");
    assert!(kv("facts_zfs_version").starts_with("zfs-2."), "{out}");
    assert_eq!(kv("after_facts"), "no", "facts loaded zfs.ko:\n{out}");
    assert_eq!(kv("preflight_rc"), "0", "{out}");
    assert_eq!(
        kv("after_preflight"),
        "no",
        "preflight loaded zfs.ko:\n{out}"
    );
    assert_eq!(kv("ufs_make_fs_rc"), "0", "{out}");
    assert_eq!(kv("ufs_teardown_device"), "blank", "{out}");
    assert_eq!(
        kv("after_ufs_cell"),
        "no",
        "a UFS cell loaded zfs.ko:\n{out}"
    );
    assert_eq!(kv("make_fs_rc"), "0", "{out}");
    assert_eq!(kv("after_make_fs"), "yes", "{out}");
    assert_eq!(kv("facts_again_zfs_running"), "yes", "{out}");
    assert_eq!(kv("teardown_device"), "blank", "{out}");
    assert_clean_bsd(&lab.inv, &h);
}

/// fsmatrix's own mark (docs/remote-scripts.md) and W8 on the FreeBSD stand-in,
/// each case made with the stand-in's own tools, then `preflight` (no consent) and
/// `teardown`: a foreign UFS (`newfs -L other`), a foreign pool `tank`, a pool
/// `fsmxdata` (a prefix is not the mark) and a half-wiped `tank` (labels 2 and 3
/// zeroed: `zdb -l` exits 1) are refused and left as they were (by checksum of
/// both ends); a half-wiped pool of fsmatrix's own (`fsmx`) is recognised and
/// cleaned by teardown.
#[test]
fn freebsd_own_marks_foreign_refused_half_wiped_own_pool_cleaned() {
    let name = support::lab_host_of("freebsd");
    let lab = Lab::hold(&[&name]);
    let h = standin(&lab, "freebsd");
    upload_scripts(&lab.inv, &h, DIR);
    let out = ssh_ok(
        &lab.inv,
        &h,
        r#"dev=$1; d=/var/tmp/fsmx-standin-test; s=$d/freebsd.sh; real=/run/fsmx-standin/real
size=$($real/sbin/blockdev --getsize64 $dev)
# Both ends: the first 2 MiB and the last 2 MiB (ZFS labels 0-1 and 2-3).
sum() { { dd if=$dev bs=1048576 count=2 2>/dev/null; dd if=$dev bs=1048576 skip=$((size / 1048576 - 2)) count=2 2>/dev/null; } | $real/bin/cksum; }
blank() { zpool labelclear -f $dev >/dev/null 2>&1; dd if=/dev/zero of=$dev bs=1048576 count=8 2>/dev/null; dd if=/dev/zero of=$dev bs=1048576 seek=$((size / 1048576 - 2)) count=2 2>/dev/null; }
# zero_labels_2_3: the two labels at the end (256 KiB each, the size rounded down to 256 KiB).
zero_labels_2_3() { dd if=/dev/zero of=$dev bs=262144 seek=$((size / 262144 - 2)) count=2 2>/dev/null; }
pool() { zpool create -f "$1" $dev >/dev/null && zpool export "$1"; }
# try CASE: preflight without consent, then teardown; the device's checksum before and after.
try() {
  before=$(sum)
  /bin/sh $s preflight dev=$dev allowed=$dev >$d/pf.out 2>$d/pf.err; rc=$?
  echo "$1.preflight_rc=$rc"
  echo "$1.preflight=$(grep -m 1 '^refused: ' $d/pf.err || sed -n 's/^signature_detail=//p' $d/pf.out)"
  echo "$1.signature=$(sed -n 's/^signature=//p' $d/pf.out)"
  /bin/sh $s teardown dev=$dev allowed=$dev fs=zfs pool=fsmx >$d/td.out 2>$d/td.err; echo "$1.teardown_rc=$?"
  echo "$1.teardown=$(sed -n 's/^device=//p' $d/td.out)"
  after=$(sum)
  if [ -z "$before" ] || [ -z "$after" ]; then echo "$1.device=no checksum"
  elif [ "$after" = "$before" ]; then echo "$1.device=unchanged"; else echo "$1.device=changed"; fi
  blank
}
blank
newfs -L other $dev >/dev/null 2>&1; try ufs-other
pool tank; try tank
pool fsmxdata; try fsmxdata
pool tank; zero_labels_2_3; zdb -l $dev >/dev/null 2>&1; echo "tank-half.zdb_rc=$?"; try tank-half
pool fsmx; zero_labels_2_3; zdb -l $dev >/dev/null 2>&1; echo "fsmx-half.zdb_rc=$?"; try fsmx-half
"#,
        &[&h.device],
    );
    let kv = |k: &str| last_kv(&out, k).unwrap_or_else(|| panic!("no {k}:\n{out}"));
    for case in ["ufs-other", "tank", "fsmxdata", "tank-half"] {
        assert_eq!(kv(&format!("{case}.preflight_rc")), "3", "{case}:\n{out}");
        assert!(
            kv(&format!("{case}.preflight")).contains("foreign signature"),
            "{case}:\n{out}"
        );
        assert!(
            kv(&format!("{case}.teardown")).starts_with("untouched: foreign signature"),
            "{case}:\n{out}"
        );
        assert_eq!(kv(&format!("{case}.device")), "unchanged", "{case}:\n{out}");
    }
    assert!(kv("fsmxdata.preflight").contains("fsmxdata"), "{out}");
    // The real zdb -l: 1 when some of the 4 labels fail to unpack.
    assert_eq!(kv("tank-half.zdb_rc"), "1", "{out}");
    assert_eq!(kv("fsmx-half.zdb_rc"), "1", "{out}");
    assert_eq!(kv("fsmx-half.preflight_rc"), "0", "{out}");
    assert_eq!(kv("fsmx-half.signature"), "fsmx", "{out}");
    assert!(kv("fsmx-half.preflight").contains("half-wiped"), "{out}");
    assert_eq!(kv("fsmx-half.teardown_rc"), "0", "{out}");
    assert_eq!(kv("fsmx-half.teardown"), "blank", "{out}");
    assert_eq!(kv("fsmx-half.device"), "changed", "{out}");
    assert_clean_bsd(&lab.inv, &h);
}

/// Puts the stand-in's /etc/passwd back as it was, also when the test fails.
struct PasswdBack<'a>(&'a LabInventory, &'a LabHost);

impl Drop for PasswdBack<'_> {
    fn drop(&mut self) {
        let _ = ssh(
            self.0,
            self.1,
            "b=/var/tmp/fsmx-passwd.saved; [ ! -s $b ] || { cat $b > /etc/passwd && rm -f $b; }",
            &[],
        );
    }
}

/// issue 25 (audit §d 4): on the BSDs every PostgreSQL verb runs `su postgres -c`,
/// which runs the account's login shell; a `nologin` shell fails each of them late
/// and unclearly.  `fsmatrix check` says so up front, naming the fix (`pw usermod
/// postgres -s /bin/sh`).  The stand-in's private /etc/passwd is rewritten in place
/// (it is bind-mounted) and put back at the end, also on failure.
#[test]
fn freebsd_check_refuses_a_nologin_postgres_account_with_the_fix() {
    let name = support::lab_host_of("freebsd");
    let lab = Lab::hold(&[&name]);
    let h = standin(&lab, "freebsd");
    let user = lab.inv.pg_user.clone();
    ssh_ok(
        &lab.inv,
        &h,
        r#"u=$1; b=/var/tmp/fsmx-passwd.saved
[ -s $b ] || cp /etc/passwd $b
awk -F: -v OFS=: -v u="$u" '$1 == u { $7 = "/usr/sbin/nologin" } { print }' $b > /etc/passwd
pw usershow "$u""#,
        &[&user],
    );
    let _back = PasswdBack(&lab.inv, &h);
    let tmp = tempfile::tempdir().expect("tempdir");
    let inv = tmp.path().join("inventory.toml");
    std::fs::write(&inv, inventory_for(&lab.inv, &[(&h, "")], "")).expect("inventory");
    let c = fsmatrix()
        .args(["check", "-i"])
        .arg(&inv)
        .stdin(Stdio::null())
        .output()
        .expect("check");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&c.stdout),
        String::from_utf8_lossy(&c.stderr)
    );
    assert_eq!(c.status.code(), Some(1), "check says not ready: {text}");
    assert!(
        text.contains(&format!(
            "pg_user {user} has the login shell \"/usr/sbin/nologin\""
        )) && text.contains(&format!("pw usermod {user} -s /bin/sh")),
        "{text}"
    );
    drop(_back);
    let shell = ssh_ok(&lab.inv, &h, "pw usershow \"$1\" | cut -d: -f10", &[&user]);
    assert_eq!(shell.trim(), "/bin/sh", "passwd put back");
}
