//! A lab whose host 1 is a bastion (`fsmatrix lab up --bastion`): the inner
//! hosts are on 10.203.1.0/24 behind it, unreachable from this machine except through
//! its sshd; a small sweep runs on both inner hosts through the bastion (ProxyJump in
//! the inventory) and ends with a bundle that verifies; `lab down` removes the inner
//! bridge with the rest.  Then the same inner hosts through an ssh config laid out as
//! real ones are (issue 28): `inner_a`'s ProxyJump names the alias `office_gw`, which has
//! its own HostName, User, Port, keys and known_hosts; `inner_b`'s names `inner_a`, a
//! chain of two aliased hops.  `check`, `plan` and a short sweep go through them, and the
//! sshd logs of the bastion and of the inner hosts show who logged in where, with which
//! key.
//!
//! The lab's names (bridge fsmx-br0, namespaces fsmx-labI, 10.203.0.0/24) are
//! machine-wide, so this lab cannot stand next to another one.  With a lab up (the
//! standing one of the other test binaries), the test takes it down first and puts it
//! back after, in its own shape; tests/run.sh runs this suite alone.
mod support;

// Without root the suite says so and is skipped (tests/run.sh runs it, as root).
#[used]
#[link_section = ".init_array"]
static NEEDS: extern "C" fn() = support::skip::needs_root_and_the_machine_alone;

use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use support::*;

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
    // The lab's names are machine-wide: the standing lab steps aside for the while.
    assert!(
        read_inventory(&standing_dir).is_some() || !any_lab_up(),
        "a lab is up on this machine (bridge fsmx-br0 / fsmx-lab* namespaces), but not \
         the standing one in {standing_dir:?}; take it down with `fsmatrix lab down --dir ...`"
    );
    let standing = SetAside::take_down(&standing_dir, "the bastion test");

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
    std::fs::write(&matrix, one_ext4_cell_matrix("bastion", 1)).unwrap();
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

    through_an_ssh_config(&dir, &inv, &matrix);

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

/// `ssh-keygen -lf PUB`'s `SHA256:…` fingerprint, as sshd logs it.
fn fingerprint(public: &Path) -> String {
    let out = Command::new("ssh-keygen")
        .arg("-lf")
        .arg(public)
        .output()
        .expect("ssh-keygen -lf");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    text.split_whitespace()
        .nth(1)
        .expect("a fingerprint")
        .to_string()
}

fn new_key(path: &Path) {
    let st = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", "fsmatrix-test", "-f"])
        .arg(path)
        .status()
        .expect("ssh-keygen");
    assert!(st.success());
}

/// The sshd log of lab host `name` (`lab up` starts sshd with `-E` there).
fn sshd_log(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join("hosts").join(name).join("sshd.log")).unwrap_or_default()
}

/// Issue 28: jump hosts named by alias, as OpenSSH resolves them, hop by hop.
fn through_an_ssh_config(dir: &Path, inv: &LabInventory, matrix: &Path) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let t = tmp.path();
    // The jump host's own key (authorized by the lab's sshd, which reads one
    // authorized_keys file for every user), and a key nobody authorized, offered first.
    let hop_key = t.join("office_gw_key");
    let stranger = t.join("stranger_key");
    new_key(&hop_key);
    new_key(&stranger);
    let authorized = dir.join("authorized_keys");
    let mut keys = std::fs::read_to_string(&authorized).unwrap();
    keys.push_str(&std::fs::read_to_string(hop_key.with_extension("pub")).unwrap());
    std::fs::write(&authorized, keys).unwrap();
    let hop_fp = fingerprint(&hop_key.with_extension("pub"));
    let lab_fp = fingerprint(&inv.identity_file.with_extension("pub"));
    // The hop's own known_hosts: the bastion's key under [address]:2222, which the
    // lab's known_hosts (port 22 only) does not list.
    let bastion_key = std::fs::read_to_string(dir.join("hosts/lab1/ssh_host_ed25519_key.pub"))
        .expect("the bastion's host key");
    let mut parts = bastion_key.split_whitespace();
    let hop_known = t.join("office_known_hosts");
    std::fs::write(
        &hop_known,
        format!(
            "[{BASTION}]:2222 {} {}\n",
            parts.next().unwrap(),
            parts.next().unwrap()
        ),
    )
    .unwrap();
    // Shapes of real configs: aliases with `_`, several IdentityFiles, an Include,
    // `Host *` defaults last (first value wins, IdentityFiles add up).
    let (a, b) = (&inv.hosts[1], &inv.hosts[2]);
    std::fs::write(
        t.join("office.conf"),
        format!(
            "Host office_gw\n    HostName {BASTION}\n    Port 2222\n    User nobody\n    \
             IdentityFile {}\n    IdentityFile {}\n    UserKnownHostsFile {}\n",
            stranger.display(),
            hop_key.display(),
            hop_known.display()
        ),
    )
    .unwrap();
    let config = t.join("ssh_config");
    std::fs::write(
        &config,
        format!(
            "Include {}\n\nHost inner_a\n    HostName {}\n    ProxyJump office_gw\n\n\
             Host inner_b\n    HostName {}\n    ProxyJump inner_a\n\n\
             Host *\n    User root\n    IdentityFile {}\n    UserKnownHostsFile {}\n",
            t.join("office.conf").display(),
            a.address,
            b.address,
            inv.identity_file.display(),
            inv.known_hosts.display()
        ),
    )
    .unwrap();
    // No user, key or known_hosts in the inventory: the config gives them all.
    let inv_text = format!(
        "ssh_config = \"ssh_config\"\n\n[defaults]\nwork_dir = \"/var/tmp/fsmatrix\"\n\
         os = \"linux\"\nplatform = \"lab\"\npg_bin = {:?}\npg_user = {:?}\npg_port = {}\n\n\
         [[host]]\nname = {:?}\naddress = \"inner_a\"\ndevices = [{:?}]\n\n\
         [[host]]\nname = {:?}\naddress = \"inner_b\"\ndevices = [{:?}]\n",
        inv.pg_bin, inv.pg_user, inv.pg_port, a.name, a.device, b.name, b.device
    );
    let inv_path = t.join("inventory.toml");
    std::fs::write(&inv_path, inv_text).unwrap();

    // `ssh -G` is OpenSSH's own answer; each hop is what it says.
    let g = |alias: &str| {
        let out = Command::new("ssh")
            .arg("-G")
            .arg("-F")
            .arg(&config)
            .arg("--")
            .arg(alias)
            .output()
            .expect("ssh -G");
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    let office = g("office_gw");
    for want in [
        format!("hostname {BASTION}"),
        "user nobody".into(),
        "port 2222".into(),
    ] {
        assert!(
            office.lines().any(|l| l == want),
            "ssh -G office_gw: {want}\n{office}"
        );
    }

    // The inventory names a config: read only when the user names it too.
    let refused = output_within(
        fsmatrix().args(["check", "--inventory"]).arg(&inv_path),
        Duration::from_secs(60),
    );
    assert_eq!(
        refused.status.code(),
        Some(2),
        "a config not named on the command line"
    );
    let why = String::from_utf8_lossy(&refused.stderr);
    assert!(
        why.contains(&format!("give --ssh-config {}", config.display())),
        "the refusal names the flag: {why}"
    );
    assert!(
        !why.contains("contains `_`"),
        "the aliases are not refused again as addresses: {why}"
    );

    // plan: the resolved chain, every hop's values and where they came from.
    let plan = output_within(
        fsmatrix()
            .args(["plan", "--inventory"])
            .arg(&inv_path)
            .arg("--matrix")
            .arg(matrix)
            .arg("--ssh-config")
            .arg(&config),
        Duration::from_secs(60),
    );
    assert!(plan.status.success(), "plan through the ssh config");
    let said = String::from_utf8_lossy(&plan.stderr).to_string();
    let block = |host: &str| -> Vec<String> {
        let mut lines = said
            .lines()
            .skip_while(|l| !l.starts_with(&format!("{host}: ")));
        let first = lines
            .next()
            .unwrap_or_else(|| panic!("no line for {host}:\n{said}"));
        std::iter::once(first)
            .chain(lines.take_while(|l| l.starts_with("  jump host")))
            .map(str::to_string)
            .collect()
    };
    let gw_line = |l: &str| {
        l.contains("`office_gw`")
            && l.contains(&format!("address {BASTION}"))
            && l.contains("user nobody")
            && l.contains("port 2222")
            && l.contains(&hop_key.display().to_string())
            && l.contains(&hop_known.display().to_string())
    };
    let one = block(&a.name);
    assert_eq!(one.len(), 2, "{} has one jump host: {one:#?}", a.name);
    assert!(
        one[0].contains(&format!("address {}", a.address)),
        "{one:#?}"
    );
    assert!(
        one[1].starts_with("  jump host 1 `office_gw`") && gw_line(&one[1]),
        "{one:#?}"
    );
    let two = block(&b.name);
    assert_eq!(two.len(), 3, "{} has two jump hosts: {two:#?}", b.name);
    assert!(
        two[1].starts_with("  jump host 1 `office_gw`") && gw_line(&two[1]),
        "{two:#?}"
    );
    assert!(
        two[2].starts_with("  jump host 2 `inner_a`")
            && two[2].contains(&format!("address {}", a.address))
            && two[2].contains("user root")
            && two[2].contains("port 22"),
        "{two:#?}"
    );

    // check reaches both through their chains.
    let check = output_within(
        fsmatrix()
            .args(["check", "--inventory"])
            .arg(&inv_path)
            .arg("--ssh-config")
            .arg(&config),
        Duration::from_secs(180),
    );
    assert_eq!(check.status.code(), Some(0), "check through the ssh config");

    // A short sweep through them, ending in a bundle that verifies.
    let out = t.join("out");
    let run = output_within(
        fsmatrix()
            .args(["run", "--inventory"])
            .arg(&inv_path)
            .arg("--matrix")
            .arg(matrix)
            .arg("--ssh-config")
            .arg(&config)
            .arg("--out")
            .arg(&out),
        Duration::from_secs(600),
    );
    assert_eq!(
        run.status.code(),
        Some(0),
        "the sweep through the ssh config"
    );
    let bundle = bundle_in(&out);
    assert!(fsmatrix()
        .arg("verify")
        .arg(&bundle)
        .output()
        .unwrap()
        .status
        .success());
    let results = std::fs::read_to_string(bundle.join("data/results.jsonl")).unwrap();
    for h in [a, b] {
        assert!(
            results.contains(&format!("\"{}\"", h.name)),
            "{}: {results}",
            h.name
        );
    }

    // The same sweep again from its bundle (the recorded inventory names the
    // config: used because it is named on the command line, as for `run`).
    let again = t.join("again");
    let rerun = output_within(
        fsmatrix()
            .args(["run", "--from"])
            .arg(&bundle)
            .arg("--ssh-config")
            .arg(&config)
            .args(support::bundle_devices(&bundle))
            .arg("--out")
            .arg(&again),
        Duration::from_secs(600),
    );
    assert_eq!(
        rerun.status.code(),
        Some(0),
        "run --from through the ssh config"
    );
    assert!(fsmatrix()
        .arg("verify")
        .arg(bundle_in(&again))
        .output()
        .unwrap()
        .status
        .success());

    // Who logged in where: the bastion saw `nobody` with the hop's own key (the
    // stranger key offered first was refused, the lab key never needed); the inner
    // hosts saw root with the lab key, inner_a from the bastion's inner leg and
    // inner_b from inner_a (the second hop).
    let accepted = |log: &str, user: &str, from: &str, fp: &str| {
        log.lines().any(|l| {
            l.contains(&format!("Accepted publickey for {user} from {from} ")) && l.ends_with(fp)
        })
    };
    let bastion = sshd_log(dir, "lab1");
    let as_hop = bastion
        .lines()
        .filter(|l| l.contains("Accepted publickey for nobody from ") && l.ends_with(&hop_fp))
        .count();
    // At least one per inner host (both chains start at office_gw).
    assert!(
        as_hop >= 2,
        "the bastion's log has {as_hop} log-ins of nobody with the hop's key {hop_fp}:\n{bastion}"
    );
    let log_a = sshd_log(dir, &a.name);
    assert!(accepted(&log_a, "root", "10.203.1.1", &lab_fp), "{log_a}");
    let log_b = sshd_log(dir, &b.name);
    assert!(
        accepted(&log_b, "root", &a.address, &lab_fp),
        "{} was not reached through {} (second hop):\n{log_b}",
        b.name,
        a.name
    );
}
