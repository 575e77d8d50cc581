//! remote-scripts/linux.sh on real loop devices, real filesystems (ext3, ext4,
//! xfs, btrfs, ZFS via zfs-fuse) and a real PostgreSQL, run under dash in a
//! private mount namespace by `tests/scripts_linux/harness.sh`.
//!
//! Needs root, `unshare`, losetup, the mkfs tools, zfs-fuse and PostgreSQL 15
//! (`FSMX_TEST_PG_BIN` to point elsewhere).  Every scenario is bounded by
//! `timeout` and cleans up what it made (loop device, image, zfs-fuse by PID).
mod support;

// Without root the suite says so and is skipped (tests/run.sh runs it, as root).
#[used]
#[link_section = ".init_array"]
static NEEDS: extern "C" fn() = support::skip::needs_root;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;

/// One scenario at a time: the machine has 2 cores shared with other work,
/// and pgbench figures from parallel cells would mean nothing.
static SERIAL: Mutex<()> = Mutex::new(());

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the crate lives in a workspace")
        .to_path_buf()
}

struct Outcome {
    values: BTreeMap<String, String>,
    stdout: String,
}

impl Outcome {
    fn get(&self, key: &str) -> &str {
        self.values
            .get(key)
            .map(String::as_str)
            .unwrap_or_else(|| panic!("no {key} in the harness output:\n{}", self.stdout))
    }
}

/// Run one harness scenario under `shell` with a time limit; panic with its
/// stderr when it fails.
fn scenario(shell: &str, limit_s: u32, args: &[&str]) -> Outcome {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let harness = repo().join("tests/scripts_linux/harness.sh");
    let out = Command::new("timeout")
        .args(["--kill-after=15", &limit_s.to_string()])
        .args(["unshare", "--mount", "--propagation", "private", "dash"])
        .arg(&harness)
        .args(args)
        .env("FSMX_TEST_SH", shell)
        .output()
        .expect("failed to start timeout/unshare/dash");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "harness {args:?} under {shell} failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        out.status
    );
    let values = stdout
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect::<BTreeMap<_, _>>();
    let o = Outcome { values, stdout };
    assert_eq!(o.get("harness.result"), "pass");
    o
}

fn assert_cell(o: &Outcome, fs: &str, opts: &[&str]) {
    for c in [
        "effective_mount_opts",
        "settings_effective",
        "load_raw_kept",
        "sql_timed_per_statement",
        "run_raw_kept",
        "sizes",
        "clean_after_teardown",
    ] {
        assert_eq!(o.get(&format!("check.{c}")), "ok", "check {c}");
    }
    assert_eq!(o.get("make_fs.fs"), fs);
    let eff = o.get("mount.effective_mount_opts");
    for opt in opts {
        assert!(
            eff.split(',').any(|e| e == *opt),
            "{opt} not in effective options {eff}"
        );
    }
    assert_eq!(o.get("run.status"), "0");
    let tps: f64 = o.get("run.tps").parse().expect("tps is a number");
    assert!(tps > 0.0, "tps {tps}");
    let du: u64 = o
        .get("sizes.du_bytes")
        .parse()
        .expect("du_bytes is a number");
    let apparent: u64 = o
        .get("sizes.du_apparent_bytes")
        .parse()
        .expect("du_apparent_bytes is a number");
    assert!(du > 1_000_000 && apparent > 1_000_000, "{du} {apparent}");
    assert_eq!(o.get("teardown.device"), "blank");
    assert_eq!(o.get("teardown_again.device"), "blank");
    assert_eq!(o.get("teardown_again.exit"), "0");
    assert_eq!(o.get("preflight_after.signature"), "none");
}

#[test]
fn cell_ext3() {
    let o = scenario("dash", 300, &["cell", "ext3", "noatime"]);
    assert_cell(&o, "ext3", &["noatime"]);
}

#[test]
fn cell_ext4() {
    let o = scenario("dash", 300, &["cell", "ext4", "noatime", "nobarrier"]);
    // ext4 accepts nobarrier and shows it as such.
    assert_cell(&o, "ext4", &["noatime", "nobarrier"]);
    // latency_log / per_statement, on ext4 only.
    assert_eq!(o.get("check.txlog_fetched"), "ok");
    // A link a script's \shell planted where pgbench writes its logs is
    // never packed with root's rights.
    assert_eq!(o.get("check.planted_link_not_followed"), "ok");
    assert!(o.get("make_fs.mkfs_cmd").contains("lazy_itable_init=0"));
}

#[test]
fn cell_xfs() {
    let o = scenario("dash", 300, &["cell", "xfs", "noatime"]);
    assert_cell(&o, "xfs", &["noatime"]);
}

#[test]
fn cell_btrfs() {
    let o = scenario("dash", 300, &["cell", "btrfs", "noatime"]);
    assert_cell(&o, "btrfs", &["noatime"]);
}

#[test]
fn cell_zfs_fuse_compression_on() {
    let o = scenario("dash", 600, &["cell", "zfs"]);
    assert_cell(&o, "zfs", &[]);
    assert_eq!(o.get("mount.zfs.compression"), "on");
    assert_eq!(o.get("mount.zfs.atime"), "off");
    // pool_properties reach `zpool create -o` (checked with zpool get).
    assert_eq!(o.get("check.pool_and_dataset_properties"), "ok");
    assert_eq!(o.get("check.imported_pool_refused"), "ok");
    let ratio: f64 = o
        .get("sizes.zfs_compressratio")
        .parse()
        .expect("compressratio without its x");
    assert!(ratio > 1.0, "pgbench data should compress: {ratio}");
    assert_eq!(o.get("teardown.pool"), "destroyed");
    assert!(o.get("drop_caches.zfs_cache").starts_with("kept: "));
    assert_eq!(o.get("drop_caches_stopped.zfs_cache"), "exported-imported");
    // The guard fails closed: a pool member named through a link is
    // recognised, and a zpool that cannot answer refuses the device.
    assert_eq!(o.get("check.pool_member_by_link_refused"), "ok");
    assert_eq!(o.get("check.zpool_failure_refused"), "ok");
}

/// Sizes that are true: 20 MiB written and `sizes` called at
/// once.  ext4, xfs, btrfs: du counts it after `sync` (btrfs: `btrfs
/// filesystem sync`), the flush recorded.  zfs-fuse has no `zpool sync` and
/// commits a transaction group every 30 s by itself: `sizes` sets a
/// property of its own, a sync task that returns once its transaction group
/// is on disk (`flush=txg-sync-task`, the time recorded), so that the
/// dataset's used and du count the data (before it they said ~2.7 MiB;
/// `used_before` below); with gzip and some
/// compressible text, logical / used agrees with compressratio (pool version
/// 23 has no logicalused: the apparent size stands in).
#[test]
fn sizes_count_data_written_just_before() {
    let o = scenario("dash", 180, &["sizes"]);
    for fs in ["ext4", "xfs", "btrfs", "btrfs_zstd", "zfs"] {
        assert_eq!(o.get(&format!("check.sizes_{fs}")), "ok", "{fs}");
    }
    assert_eq!(o.get("sizes_ext4.flush"), "sync");
    assert_eq!(o.get("sizes_xfs.flush"), "sync");
    assert_eq!(o.get("sizes_btrfs.flush"), "btrfs-sync");
    assert_eq!(o.get("sizes_zfs.flush"), "txg-sync-task");
    assert_eq!(o.get("sizes_zfs.flush_settled"), "yes");
    let num = |k: &str| -> f64 {
        o.get(k)
            .parse()
            .unwrap_or_else(|_| panic!("{k} is not a number: {}", o.get(k)))
    };
    let mib = 1024.0 * 1024.0;
    assert!(
        num("sizes_zfs.used_before") < 10.0 * mib,
        "zfs-fuse had already committed the data before the flush: the test shows nothing"
    );
    // btrfs under compress=zstd, read as btrfs counts it (issue 40): du
    // says the 120 MiB written, btrfs's own Used the compressed extents,
    // and df's used less the global reserve is that same Used.
    let (du, used) = (
        num("sizes_btrfs_zstd.du_bytes"),
        num("sizes_btrfs_zstd.btrfs_used_bytes"),
    );
    assert!(
        du >= 118.0 * mib && used < du / 2.0,
        "du {du}, btrfs used {used}"
    );
    let agree = num("sizes_btrfs_zstd.df_used_bytes")
        - num("sizes_btrfs_zstd.btrfs_global_reserve_bytes")
        - used;
    assert!(agree.abs() <= 4.0 * mib, "df − reserve − used = {agree}");
    eprintln!(
        "btrfs compress=zstd, 100 MiB text + 20 MiB random: du {:.1} MiB, btrfs used {:.1} MiB \
         (data {:.1} MiB), df used {:.1} MiB less reserve {:.1} MiB",
        du / mib,
        used / mib,
        num("sizes_btrfs_zstd.btrfs_data_used_bytes") / mib,
        num("sizes_btrfs_zstd.df_used_bytes") / mib,
        num("sizes_btrfs_zstd.btrfs_global_reserve_bytes") / mib
    );
    let wait = num("sizes_zfs.flush_wait_s");
    assert!((0.0..=35.0).contains(&wait), "waited {wait} s");
    for k in [
        "sizes_zfs.zfs_used_bytes",
        "sizes_zfs.zfs_referenced_bytes",
        "sizes_zfs.du_bytes",
        "sizes_ext4.du_bytes",
        "sizes_xfs.du_bytes",
        "sizes_btrfs.du_bytes",
    ] {
        assert!(num(k) >= 18.0 * mib, "{k} = {}", o.get(k));
    }
}

#[test]
fn guard_refuses_and_leaves_the_device_unchanged() {
    let o = scenario("dash", 300, &["guard"]);
    for c in [
        "undeclared_refused_unchanged",
        "foreign_refused_unchanged",
        "mounted_refused_unchanged",
        "mounted_elsewhere_refused",
        "consent_proceeds",
        "unknown_data_refused",
    ] {
        assert_eq!(o.get(&format!("check.{c}")), "ok", "check {c}");
    }
    for refused in [
        "undeclared",
        "undeclared_mkfs",
        "foreign",
        "foreign_mkfs",
        "mounted",
        "mounted_mkfs",
        "mounted_elsewhere",
        "not_block",
        "junk",
    ] {
        assert_eq!(o.get(&format!("{refused}.exit")), "3", "{refused}");
    }
    assert_eq!(o.get("consent_mkfs.exit"), "0");
}

/// Another disk at the device path between a sweep's checks and its
/// make-fs (here another image of the same size, fsmatrix's own label, at the
/// same /dev/loopN): refused, nothing written; the ident `facts` printed
/// passes, and make-fs without one is a usage error.
#[test]
fn make_fs_refuses_another_disk_at_the_checked_path() {
    let o = scenario("dash", 120, &["swap"]);
    for c in [
        "checked_disk_formatted",
        "wrong_ident_refused_unchanged",
        "other_disk_refused_unchanged",
        "other_disk_formatted_with_its_own_ident",
    ] {
        assert_eq!(o.get(&format!("check.{c}")), "ok", "check {c}");
    }
    assert_eq!(o.get("make_fs.exit"), "0");
    assert_eq!(o.get("no_ident.exit"), "2");
    assert_eq!(o.get("wrong_ident.exit"), "3");
    assert_eq!(o.get("swapped.exit"), "3");
    let (was, now) = (o.get("setup.ident"), o.get("swap.other_ident"));
    assert!(
        was.starts_with("size=268435456;") && was.contains("/disk.img;inode="),
        "{was}"
    );
    assert!(now.contains("/other.img;inode="), "{now}");
    assert!(
        o.get("swapped.refusal").ends_with(&format!(
            "it is not the disk checked at the sweep's start (was {was}, now {now})"
        )),
        "{}",
        o.get("swapped.refusal")
    );
}

#[test]
fn teardown_after_half_made_cells() {
    let o = scenario("dash", 300, &["half"]);
    for c in ["half_postgres_cell", "half_mkfs_only", "half_zfs_pool"] {
        assert_eq!(o.get(&format!("check.{c}")), "ok", "check {c}");
    }
    assert_eq!(o.get("teardown.postgres"), "stopped");
    assert_eq!(o.get("teardown3.pool"), "destroyed");
    assert_eq!(o.get("teardown3_again.pool"), "absent");
}

/// issue 25: fsmatrix's own ZFS mark is the exact pool name it makes: a pool
/// `fsmxdata` (a prefix is not the mark) is refused and left as it was; a pool
/// name fsmatrix does not make is a usage error; its own `fsmx`, half-wiped
/// (the labels at the end zeroed), is recognised and cleaned by teardown.
#[test]
fn zfs_pool_prefix_is_not_the_mark_and_a_half_wiped_own_pool_is_cleaned() {
    let o = scenario("dash", 300, &["marks"]);
    assert_eq!(o.get("bad_pool.exit"), "2");
    assert_eq!(o.get("prefix.exit"), "3");
    for c in ["prefix_pool_foreign", "own_half_wiped_pool_cleaned"] {
        assert_eq!(o.get(&format!("check.{c}")), "ok", "check {c}");
    }
    assert_eq!(o.get("own_half.signature"), "fsmx");
    assert_eq!(o.get("own_half_teardown.device"), "blank");
}

#[test]
fn refused_mount_option_is_named() {
    let o = scenario("dash", 120, &["refused-opt"]);
    assert_eq!(o.get("mount.exit"), "4");
    assert_eq!(o.get("mount.refused_mount_opt"), "nobarrier");
}

/// The same script under two other POSIX shells (busybox ash, posh).
#[test]
fn other_shells_refused_mount_option() {
    for shell in ["busybox sh", "posh"] {
        let o = scenario(shell, 120, &["refused-opt"]);
        assert_eq!(o.get("mount.refused_mount_opt"), "nobarrier", "{shell}");
        assert_eq!(o.get("teardown.device"), "blank", "{shell}");
    }
}

#[test]
fn scripts_are_shellcheck_clean_for_dash() {
    let dir = repo().join("remote-scripts");
    let out = Command::new("shellcheck")
        .current_dir(&dir)
        .args(["-s", "dash", "-x", "linux.sh", "common.sh"])
        .output()
        .expect("failed to run shellcheck");
    assert!(
        out.status.success(),
        "shellcheck:\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
}
