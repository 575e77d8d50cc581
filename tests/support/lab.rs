//! Shared helpers for tests that stand on the local lab (`fsmatrix lab up`): where the
//! lab lives, its hosts as its inventory names them, plain OpenSSH to them with strict
//! host-key checking, and a guard that brings a lab up for a test and down after it.
//!
//! Conventions: the lab's state dir is `FSMATRIX_LAB_DIR` or /var/lib/fsmatrix/lab.
//! A test that needs the lab calls [`Lab::hold`] with the hosts it uses (or
//! [`Lab::standing_or_up`] for all of them): it waits for those hosts, uses the standing
//! lab (tests/run.sh keeps one up) or, with none, the first holder brings one up and the
//! last takes it down.  Whether it may run at all (root, a lab) is decided by
//! `support::skip`.
#![allow(dead_code)] // each test binary uses its own part of these helpers

use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The lab's state folder.
pub fn lab_dir() -> PathBuf {
    std::env::var_os("FSMATRIX_LAB_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/lib/fsmatrix/lab"))
}

/// The fsmatrix binary of this build.
pub fn fsmatrix() -> Command {
    Command::new(env!("CARGO_BIN_EXE_fsmatrix"))
}

/// `fsmatrix check -i <inventory> -m <matrix>`: its exit code and its stdout then stderr.
pub fn check_with(inventory: &Path, matrix: &Path) -> (Option<i32>, String) {
    let o = fsmatrix()
        .args(["check", "-i"])
        .arg(inventory)
        .arg("-m")
        .arg(matrix)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("fsmatrix check");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    (o.status.code(), text)
}

/// Runs `fsmatrix lab <args> --dir <dir>` and returns its output (stderr passed on as
/// text in the output, not to the terminal).
pub fn lab_cmd(args: &[&str], dir: &Path) -> Output {
    let out = fsmatrix()
        .arg("lab")
        .args(args)
        .arg("--dir")
        .arg(dir)
        .stdin(Stdio::null())
        .output()
        .expect("failed to run the fsmatrix binary");
    eprintln!(
        "$ fsmatrix lab {} --dir {} -> {:?}\n{}{}",
        args.join(" "),
        dir.display(),
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The lab hosts a test holds: one advisory lock (`flock`) per host name, held until
/// the value is dropped.  The lock files are machine-wide, so tests of different
/// binaries that tests/run.sh runs side by side never use one host at once, while tests
/// on disjoint hosts run together.  Locks are taken in name order (no two tests can
/// wait on each other) and die with the test process.
pub struct HostsHeld {
    _files: Vec<std::fs::File>,
    pub names: Vec<String>,
}

/// Every name a lab host or guest can have (`lab up` makes at most 16 hosts).
pub fn every_lab_name() -> Vec<String> {
    (1..=16)
        .flat_map(|i| [format!("lab{i}"), format!("lab{i}-vm")])
        .collect()
}

/// Where the host lock files live: a folder of root's under /run when root (no other
/// user can plant a link there), else one of this user's under the temp folder.
fn host_lock_dir() -> PathBuf {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    // SAFETY: geteuid has no preconditions and cannot fail.
    let uid = unsafe { libc::geteuid() };
    let dir = if uid == 0 {
        PathBuf::from("/run/fsmatrix-test-hosts")
    } else {
        std::env::temp_dir().join(format!("fsmatrix-test-hosts-{uid}"))
    };
    let _ = std::fs::DirBuilder::new().mode(0o700).create(&dir);
    let m = std::fs::symlink_metadata(&dir).expect("the host lock folder");
    assert!(
        m.is_dir() && m.uid() == uid && m.mode() & 0o022 == 0,
        "{dir:?} must be a folder of this user's that no one else may write"
    );
    dir
}

/// Holds the lab hosts `names` (e.g. `["lab1", "lab1-vm"]`) for the calling test,
/// waiting while another test holds any of them.
pub fn hold_hosts<S: AsRef<str>>(names: &[S]) -> HostsHeld {
    let mut names: Vec<String> = names.iter().map(|n| n.as_ref().to_string()).collect();
    names.sort();
    names.dedup();
    let files = names
        .iter()
        .map(|n| {
            assert!(
                !n.is_empty() && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'),
                "a lab host name: {n:?}"
            );
            let f = lock_file(n);
            flock(&f, libc::LOCK_EX);
            f
        })
        .collect();
    HostsHeld {
        _files: files,
        names,
    }
}

/// Holds every lab host and guest: for a test that uses or changes the whole lab.
pub fn lab_lock() -> HostsHeld {
    hold_hosts(&every_lab_name())
}

/// One lab host as the lab's inventory.toml names it.
#[derive(Debug, Clone)]
pub struct LabHost {
    pub name: String,
    pub address: String,
    pub device: String,
    /// `linux`, or the OS a stand-in host is dressed as (`freebsd`, `dragonfly`).
    pub os: String,
}

/// What the tests bring the lab up with (as `tests/run.sh` and CI do):
/// three Linux hosts, a FreeBSD and a DragonFly stand-in.
pub const LAB_UP: &[&str] = &[
    "up",
    "--hosts",
    "5",
    "--os",
    "linux,linux,linux,freebsd,dragonfly",
    "--guests",
    "1",
];

/// The name of the first host of the standard lab ([`LAB_UP`]) that runs `os`
/// (`linux`, `freebsd`, `dragonfly`): `lab up` names its hosts lab1, lab2, … in
/// the order of `--os`.
pub fn lab_host_of(os: &str) -> String {
    let list = LAB_UP
        .iter()
        .position(|a| *a == "--os")
        .map(|i| LAB_UP[i + 1])
        .expect("LAB_UP has --os");
    let i = list
        .split(',')
        .position(|o| o == os)
        .unwrap_or_else(|| panic!("the standard lab has no {os} host (--os {list})"));
    format!("lab{}", i + 1)
}

/// What the tests read from the lab's inventory.toml.
#[derive(Debug, Clone)]
pub struct LabInventory {
    pub identity_file: PathBuf,
    pub known_hosts: PathBuf,
    pub pg_bin: String,
    pub pg_user: String,
    pub pg_port: u16,
    /// The Linux hosts (what most tests use).
    pub hosts: Vec<LabHost>,
    /// The stand-in hosts (Linux hosts dressed as a BSD: docs/standin-hosts.md).
    pub standins: Vec<LabHost>,
    /// The guests (`--guests N`, issue 26): the entries with `guest_of` of
    /// `inventory-guests.toml` (inventory.toml has none).
    pub guests: Vec<LabGuest>,
}

/// A guest entry of the lab's inventory (`labI-vm`, `guest_of = "labI"`) and its
/// `[host.vm]` values, as `vm-start` takes them.
#[derive(Debug, Clone)]
pub struct LabGuest {
    pub name: String,
    pub guest_of: String,
    pub device: String,
    pub image: String,
    pub kernel: String,
    pub initrd: String,
    pub cmdline: String,
    pub disk: String,
    pub ssh_port: u16,
}

/// Reads `<dir>/inventory.toml`; None if there is none (no lab up).
pub fn read_inventory(dir: &Path) -> Option<LabInventory> {
    let text = std::fs::read_to_string(dir.join("inventory.toml")).ok()?;
    let v: toml::Table = toml::from_str(&text).expect("the lab's inventory.toml is valid TOML");
    let d = v["defaults"].as_table().expect("[defaults] table");
    let s = |t: &toml::Table, k: &str| -> String {
        t.get(k)
            .and_then(|x| x.as_str())
            .unwrap_or_else(|| panic!("inventory key {k} is a string"))
            .to_string()
    };
    let all = v["host"].as_array().expect("[[host]] array");
    // The guests are in inventory-guests.toml only (lab.sh write_inventory keeps them
    // out of inventory.toml, so that a sweep over every host never boots one).
    let guest_file: toml::Table = std::fs::read_to_string(dir.join("inventory-guests.toml"))
        .ok()
        .map(|t| toml::from_str(&t).expect("the lab's inventory-guests.toml is valid TOML"))
        .unwrap_or_default();
    let guest_hosts = guest_file
        .get("host")
        .and_then(|h| h.as_array())
        .cloned()
        .unwrap_or_default();
    let guests = guest_hosts
        .iter()
        .filter_map(|h| h.as_table())
        .filter(|h| h.contains_key("guest_of"))
        .map(|h| {
            let vm = h["vm"].as_table().expect("a guest has [host.vm]");
            let devices = h["devices"].as_array().expect("devices array");
            LabGuest {
                name: s(h, "name"),
                guest_of: s(h, "guest_of"),
                device: devices[0].as_str().expect("device string").to_string(),
                image: s(vm, "image"),
                kernel: s(vm, "kernel"),
                initrd: s(vm, "initrd"),
                cmdline: s(vm, "cmdline"),
                disk: s(vm, "disk"),
                ssh_port: vm["ssh_port"]
                    .as_integer()
                    .and_then(|p| u16::try_from(p).ok())
                    .expect("ssh_port is a port"),
            }
        })
        .collect();
    let (hosts, standins): (Vec<LabHost>, Vec<LabHost>) = all
        .iter()
        .filter(|h| h.as_table().is_some_and(|h| !h.contains_key("guest_of")))
        .map(|h| {
            let h = h.as_table().expect("host table");
            let devices = h["devices"].as_array().expect("devices array");
            LabHost {
                name: s(h, "name"),
                address: s(h, "address"),
                device: devices[0].as_str().expect("device string").to_string(),
                os: h
                    .get("os")
                    .and_then(|o| o.as_str())
                    .unwrap_or("linux")
                    .to_string(),
            }
        })
        .partition(|h| h.os == "linux");
    Some(LabInventory {
        identity_file: PathBuf::from(s(d, "identity_file")),
        known_hosts: PathBuf::from(s(d, "known_hosts")),
        pg_bin: s(d, "pg_bin"),
        pg_user: s(d, "pg_user"),
        pg_port: d["pg_port"]
            .as_integer()
            .and_then(|p| u16::try_from(p).ok())
            .expect("pg_port is a port"),
        hosts,
        standins,
        guests,
    })
}

/// Plain OpenSSH to a lab host, strict host-key checking against `known_hosts`.
/// `script` runs under `sh -s` with `args` as its positional parameters (quoted for
/// the remote shell by single quotes; the tests pass only plain words).
pub fn ssh_with(
    inv: &LabInventory,
    known_hosts: &Path,
    host: &LabHost,
    script: &str,
    args: &[&str],
) -> Output {
    use std::io::Write;
    for a in args {
        assert!(
            !a.contains('\''),
            "test arguments for the remote shell are plain words"
        );
    }
    let remote = std::iter::once("sh -s --".to_string())
        .chain(args.iter().map(|a| format!("'{a}'")))
        .collect::<Vec<_>>()
        .join(" ");
    let mut child = Command::new("ssh")
        .args(["-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes"])
        .arg("-o")
        .arg(format!("UserKnownHostsFile={}", known_hosts.display()))
        .args(["-o", "ConnectTimeout=5", "-o", "LogLevel=ERROR", "-i"])
        .arg(&inv.identity_file)
        .arg(format!("root@{}", host.address))
        .arg(remote)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("failed to run ssh");
    child
        .stdin
        .take()
        .expect("ssh stdin")
        .write_all(script.as_bytes())
        .expect("failed to send the script to ssh");
    child.wait_with_output().expect("failed to wait for ssh")
}

/// [`ssh_with`] using the lab's own known_hosts.
pub fn ssh(inv: &LabInventory, host: &LabHost, script: &str, args: &[&str]) -> Output {
    ssh_with(inv, &inv.known_hosts, host, script, args)
}

/// Like [`ssh`], and asserts success; returns stdout.
pub fn ssh_ok(inv: &LabInventory, host: &LabHost, script: &str, args: &[&str]) -> String {
    let out = ssh(inv, host, script, args);
    assert!(
        out.status.success(),
        "on {}: script failed with {:?}\nstdout:\n{}\nstderr:\n{}",
        host.name,
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Puts common.sh and the host's OS script into `dir` on `h` (made anew), over SSH as
/// the orchestrator sends them: a lab host's /tmp and /var/tmp are its own, so a
/// checkout there is not what the host sees.
#[allow(dead_code)]
pub fn upload_scripts(inv: &LabInventory, h: &LabHost, dir: &str) {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../remote-scripts");
    let mut script = format!("set -e; rm -rf {dir}; mkdir -p {dir}\n");
    for name in ["common.sh".to_string(), format!("{}.sh", h.os)] {
        let body = std::fs::read_to_string(repo.join(&name)).expect("read a remote script");
        assert!(!body.contains("FSMX_TEST_EOF"));
        script.push_str(&format!(
            "cat > {dir}/{name} <<'FSMX_TEST_EOF'\n{body}FSMX_TEST_EOF\n"
        ));
    }
    ssh_ok(inv, h, &script, &[]);
}

/// Opens (making it if need be) the lock file `name` in the host lock folder, never
/// through a link.
fn lock_file(name: &str) -> std::fs::File {
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(host_lock_dir().join(name))
        .unwrap_or_else(|e| panic!("open the lock file {name}: {e}"))
}

/// `flock(f, op)`; false only for `LOCK_NB` when another holds it.
fn flock(f: &std::fs::File, op: libc::c_int) -> bool {
    use std::os::unix::io::AsRawFd;
    // SAFETY: a valid open descriptor; flock has no other precondition.
    let rc = unsafe { libc::flock(f.as_raw_fd(), op) };
    if rc == 0 {
        return true;
    }
    let e = std::io::Error::last_os_error();
    assert_eq!(e.raw_os_error(), Some(libc::EWOULDBLOCK), "flock: {e}");
    false
}

/// A lab for a test: the hosts it holds, in the lab standing in [`lab_dir`].
///
/// Every test on the lab goes through [`Lab::hold`] (or [`Lab::standing_or_up`] for
/// the whole lab).  When no lab stands (a plain `cargo test`), the first holder brings
/// the standard one up ([`LAB_UP`]) and the last one to let go takes it down, whatever
/// binary each runs in: `lab-state` (exclusive) orders bringing up and taking down,
/// `lab-users` (shared, one per holder) says who still uses it, and `tests-brought-up`
/// says that a test, not a person or tests/run.sh, made it.
pub struct Lab {
    pub dir: PathBuf,
    /// The lab's inventory with only the hosts, stand-ins and guests this test holds.
    pub inv: LabInventory,
    users: Option<std::fs::File>,
    _hosts: HostsHeld,
}

impl Lab {
    /// Holds the lab hosts `names` (e.g. `["lab3"]`, `["lab1", "lab1-vm"]`), waiting
    /// while another test holds any of them, and returns the lab with only those in
    /// its inventory, so that a test can reach no host it does not hold.
    pub fn hold(names: &[&str]) -> Lab {
        assert!(!names.is_empty(), "a test holds at least one lab host");
        let mut lab = Lab::enter(hold_hosts(names));
        let held = lab._hosts.names.clone();
        lab.inv.hosts.retain(|h| held.contains(&h.name));
        lab.inv.standins.retain(|h| held.contains(&h.name));
        lab.inv.guests.retain(|g| held.contains(&g.name));
        for n in &held {
            let inv = &lab.inv;
            assert!(
                inv.hosts.iter().chain(&inv.standins).any(|h| &h.name == n)
                    || inv.guests.iter().any(|g| &g.name == n),
                "{n} is not a host of the lab standing in {:?}",
                lab.dir
            );
        }
        lab
    }

    /// The whole lab, every host and guest held: for a test that sweeps or changes
    /// all of it.  (`hosts` is what the test needs of the standard lab, at most 3.)
    pub fn standing_or_up(hosts: u32) -> Lab {
        assert!(hosts <= 3, "the standard lab has 3 Linux hosts");
        Lab::enter(lab_lock())
    }

    /// The lab standing in [`lab_dir`] (brought up if none stands), for a test
    /// holding `held`.
    fn enter(held: HostsHeld) -> Lab {
        let dir = lab_dir();
        let state = lock_file("lab-state");
        flock(&state, libc::LOCK_EX);
        let inv = match read_inventory(&dir) {
            Some(inv) => inv,
            None => {
                let out = lab_cmd(LAB_UP, &dir);
                assert!(out.status.success(), "fsmatrix lab up failed");
                lock_file("tests-brought-up");
                read_inventory(&dir).expect("lab up wrote an inventory")
            }
        };
        let users = lock_file("lab-users");
        flock(&users, libc::LOCK_SH);
        drop(state);
        Lab {
            dir,
            inv,
            users: Some(users),
            _hosts: held,
        }
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        // Let go of the lab; the last user of a lab that a test brought up takes it
        // down (under `lab-state`, so that no new user comes in meanwhile).
        drop(self.users.take());
        let state = lock_file("lab-state");
        flock(&state, libc::LOCK_EX);
        let users = lock_file("lab-users");
        let marker = host_lock_dir().join("tests-brought-up");
        if flock(&users, libc::LOCK_EX | libc::LOCK_NB) && marker.exists() {
            let out = lab_cmd(&["down"], &self.dir);
            let _ = std::fs::remove_file(&marker);
            if !out.status.success() && !std::thread::panicking() {
                panic!("fsmatrix lab down failed");
            }
        }
    }
}

/// The arguments of `fsmatrix lab up` that made the lab standing in `dir` (its `shape`
/// file; a lab from before it was written reads as the standard [`LAB_UP`]).
pub fn standing_shape(dir: &Path) -> Vec<String> {
    match std::fs::read_to_string(dir.join("shape")) {
        Ok(text) => std::iter::once("up".to_string())
            .chain(text.split_whitespace().map(str::to_string))
            .collect(),
        Err(_) => LAB_UP.iter().map(|s| s.to_string()).collect(),
    }
}

/// A standing lab set aside for a test that needs the machine's lab names for itself
/// (the lifecycle and bastion tests): taken down now, brought up again in its own shape
/// when this is dropped, pass or fail.
pub struct SetAside {
    dir: PathBuf,
    shape: Option<Vec<String>>,
}

impl SetAside {
    pub fn take_down(dir: &Path, why: &str) -> SetAside {
        let shape = read_inventory(dir).map(|_| standing_shape(dir));
        if shape.is_some() {
            eprintln!("taking the standing lab in {dir:?} down for {why}");
            assert!(lab_cmd(&["down"], dir).status.success(), "lab down failed");
        }
        SetAside {
            dir: dir.to_path_buf(),
            shape,
        }
    }
}

impl Drop for SetAside {
    fn drop(&mut self) {
        // Whatever the test left, remove it (down is idempotent) ...
        let down = lab_cmd(&["down"], &self.dir);
        // ... and put the standing lab back.
        let up = self.shape.as_ref().map(|shape| {
            let args: Vec<&str> = shape.iter().map(String::as_str).collect();
            lab_cmd(&args, &self.dir)
        });
        if !std::thread::panicking() {
            assert!(down.status.success(), "lab down failed");
            if let Some(up) = up {
                assert!(up.status.success(), "could not put the standing lab back");
            }
        }
    }
}

/// The smallest real sweep matrix, named `name`: ext4 (noatime) under a 2 s select-only
/// pgbench run at scale 1 with one client, `repeats` counted runs, no warm-up, no cache
/// drop, a 32 MB cluster: what the agent, queue and bastion tests run.
pub fn one_ext4_cell_matrix(name: &str, repeats: u32) -> String {
    format!(
        r#"name = "{name}"
repeats = {repeats}
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
"#
    )
}

/// An fsmatrix inventory for some of the lab's hosts, each with extra TOML
/// lines (e.g. `port = 1`, `consent_foreign = [...]`), and extra `[defaults]` lines.
pub fn inventory_for(
    lab: &LabInventory,
    hosts: &[(&LabHost, &str)],
    defaults_extra: &str,
) -> String {
    let mut s = format!(
        "[defaults]\nuser = \"root\"\nidentity_file = {:?}\nknown_hosts = {:?}\nwork_dir = \"/var/tmp/fsmatrix\"\nos = \"linux\"\nplatform = \"lab\"\npg_bin = {:?}\npg_user = {:?}\npg_port = {}\n{defaults_extra}\n",
        lab.identity_file, lab.known_hosts, lab.pg_bin, lab.pg_user, lab.pg_port
    );
    for (h, extra) in hosts {
        s.push_str(&format!(
            "[[host]]\nname = {:?}\naddress = {:?}\ndevices = [{:?}]\n{extra}\n",
            h.name, h.address, h.device
        ));
        if h.os != "linux" {
            // A stand-in: PostgreSQL where the BSD packages put it.
            s.push_str(&format!("os = {:?}\npg_bin = \"/usr/local/bin\"\n", h.os));
        }
    }
    s
}

/// Over plain SSH: nothing of fsmatrix left on the host.
pub fn assert_clean(inv: &LabInventory, h: &LabHost) {
    let out = ssh_ok(
        inv,
        h,
        r#"dev=$1
echo "mounts=$(grep -c -e "^$dev " -e ' /var/tmp/fsmatrix/mnt ' /proc/mounts)"
echo "postgres=$(pgrep -c -x postgres || true)"
echo "pools=$(zpool list -H -o name 2>/dev/null | grep -c fsmx || true)"
echo "sig=$(blkid -p -o value -s LABEL "$dev" 2>/dev/null; blkid -p -o value -s TYPE "$dev" 2>/dev/null)"
"#,
        &[&h.device],
    );
    let sig = out
        .lines()
        .find(|l| l.starts_with("sig="))
        .unwrap_or("sig=?");
    assert!(
        out.contains("mounts=0\n"),
        "{}: something is still mounted: {out}",
        h.name
    );
    assert!(
        out.contains("postgres=0\n"),
        "{}: postgres still runs: {out}",
        h.name
    );
    assert!(
        out.contains("pools=0\n"),
        "{}: a pool is left: {out}",
        h.name
    );
    assert!(
        sig == "sig=" || sig.starts_with("sig=fsmx"),
        "{}: device carries a foreign signature after the sweep: {sig}",
        h.name
    );
}

/// SIGINT to `child` (as Ctrl-C would), then wait for it to exit, at most
/// `limit` (then it is killed and the test fails).
pub fn interrupt_and_wait(
    child: &mut std::process::Child,
    limit: std::time::Duration,
) -> std::process::ExitStatus {
    let pid = child.id().to_string();
    assert!(Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .expect("kill")
        .success());
    let t0 = std::time::Instant::now();
    loop {
        if let Some(s) = child.try_wait().expect("try_wait") {
            return s;
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            panic!(
                "fsmatrix did not stop within {} s of SIGINT",
                limit.as_secs()
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// One host's ETA once its first filesystem variant was done, from a
/// `run --json` stream: the estimate (and its ±) in the first `eta` event
/// after that variant's `pg-stop`/`teardown`, and the time the host then
/// actually took to finish (its last `eta` event, `remaining_s` 0).
#[derive(Debug, Clone)]
pub struct EtaAfterFirst {
    pub host: String,
    pub variant: String,
    pub estimated_s: f64,
    pub plus_minus_s: f64,
    pub basis: String,
    pub actual_s: f64,
}

impl std::fmt::Display for EtaAfterFirst {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} after {}: {:.1} s ±{:.1} ({}) vs {:.1} s: error {:.1} %",
            self.host,
            self.variant,
            self.estimated_s,
            self.plus_minus_s,
            self.basis,
            self.actual_s,
            100.0 * self.error()
        )
    }
}

impl EtaAfterFirst {
    /// |estimated − actual| ÷ actual.
    pub fn error(&self) -> f64 {
        (self.estimated_s - self.actual_s).abs() / self.actual_s
    }
}

/// [`EtaAfterFirst`] of every host of `events` that ran more than one
/// variant (one JSON value per `run --json` line, in order).
pub fn eta_after_first_variant(events: &[serde_json::Value]) -> Vec<EtaAfterFirst> {
    let mut hosts: Vec<String> = Vec::new();
    for e in events {
        if e["event"] == "host_started" {
            hosts.push(e["host"].as_str().unwrap_or_default().to_string());
        }
    }
    let mut out = Vec::new();
    for host in hosts {
        let of: Vec<&serde_json::Value> = events.iter().filter(|e| e["host"] == host).collect();
        // The first variant: what the first make-fs was on.
        let Some(first) = of
            .iter()
            .find(|e| e["event"] == "step" && e["step"] == "make-fs")
            .and_then(|e| e["on"].as_str())
        else {
            continue;
        };
        let variants: std::collections::BTreeSet<&str> = of
            .iter()
            .filter(|e| e["event"] == "step" && e["step"] == "make-fs")
            .filter_map(|e| e["on"].as_str())
            .collect();
        if variants.len() < 2 {
            continue;
        }
        // Its end: pg-stop on the variant itself (a cold-cache cell's
        // pg-stop is on the cell), then the eta event after the teardown.
        let Some(stop) = of
            .iter()
            .position(|e| e["event"] == "step" && e["step"] == "pg-stop" && e["on"] == first)
        else {
            continue;
        };
        let Some(after) = of[stop..].iter().find(|e| e["event"] == "eta") else {
            continue;
        };
        let Some(end) = of.iter().rev().find(|e| e["event"] == "eta") else {
            continue;
        };
        let f = |v: &serde_json::Value, k: &str| v[k].as_f64().unwrap_or(f64::NAN);
        assert_eq!(f(end, "remaining_s"), 0.0, "the host's last eta: {end}");
        out.push(EtaAfterFirst {
            host: host.clone(),
            variant: first.to_string(),
            estimated_s: f(after, "remaining_s"),
            plus_minus_s: f(after, "plus_minus_s"),
            basis: after["basis"].as_str().unwrap_or_default().to_string(),
            actual_s: f(end, "at_s") - f(after, "at_s"),
        });
    }
    out
}

/// Every file under `dir`, recursively (links not followed).
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            match e.file_type() {
                Ok(t) if t.is_dir() => stack.push(p),
                Ok(t) if t.is_file() => out.push(p),
                _ => {}
            }
        }
    }
    out
}

/// `--device HOST:DEVICE` for every device a bundle's recorded inventory
/// lists (`*:DEVICE` for its [defaults]): a re-run of a bundle uses the
/// devices it records only when they are named, as a person accepting
/// them would name them.
pub fn bundle_devices(bundle: &Path) -> Vec<std::ffi::OsString> {
    let text = std::fs::read_to_string(bundle.join("data/inventory.toml"))
        .expect("the bundle's data/inventory.toml");
    let v: toml::Table = toml::from_str(&text).expect("the bundle's inventory is TOML");
    let mut out = Vec::new();
    let mut add = |host: &str, t: &toml::Table| {
        for d in t
            .get("devices")
            .and_then(|d| d.as_array())
            .into_iter()
            .flatten()
            .filter_map(|d| d.as_str())
        {
            out.push("--device".into());
            out.push(format!("{host}:{d}").into());
        }
    };
    if let Some(d) = v.get("defaults").and_then(|d| d.as_table()) {
        add("*", d);
    }
    for h in v
        .get("host")
        .and_then(|h| h.as_array())
        .into_iter()
        .flatten()
        .filter_map(|h| h.as_table())
    {
        let name = h.get("name").and_then(|n| n.as_str()).unwrap_or("?");
        add(name, h);
    }
    out
}
