//! The inventory: which hosts, how to reach them, which spare devices
//! fsmatrix may destroy on each.  Format documented in docs/formats.md
//! ("Inventory and matrix formats") and in inventory/example-lab.toml.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use toml::de::{DeTable, DeValue};

use super::error::{ConfigErrors, Errors, Source};
pub use super::os::Os;
use super::ssh_config::{self, ConfigFile, InventorySet, Resolved, Resolver, Sourced};
use super::values::{
    shown, AbsPath, Address, DevicePath, HostName, Label, PgSettingName, UserName, ValueError,
};
use super::walk::Tbl;

mod given;
mod jump;
mod read;
mod render;
pub mod vm;

pub use given::{GivenPaths, RecordedPaths};
pub use jump::{parse_proxy_jump, split_proxy_jump, HopConfig, JumpSpec, SplitHop, MAX_JUMP_HOPS};
pub use read::machine_key;
pub use render::render;
pub use vm::Vm;

/// Where the host runs; report metadata (and `lab` tells the run engine the
/// host is a namespace of the local lab, on a loop device).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Platform {
    Physical,
    Kvm,
    Lab,
}

impl Platform {
    pub fn as_str(self) -> &'static str {
        match self {
            Platform::Physical => "physical",
            Platform::Kvm => "kvm",
            Platform::Lab => "lab",
        }
    }
}

/// How the SSH user gets root: it is root (no `become`), or it runs
/// commands through sudo or doas.
pub use crate::text::Become;

/// How to authenticate: a private key file, or the running ssh-agent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Auth {
    /// As written; a leading `~/` is the orchestrator user's home (see [`expand_tilde`]),
    /// a relative path is relative to the inventory file.
    IdentityFile(PathBuf),
    Agent,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Host {
    pub name: HostName,
    pub address: Address,
    pub port: u16,
    pub user: UserName,
    #[serde(rename = "become", skip_serializing_if = "Option::is_none")]
    pub become_: Option<Become>,
    pub auth: Auth,
    /// Strict: an unknown or changed host key is an error.
    pub known_hosts: PathBuf,
    pub os: Os,
    pub platform: Platform,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disk_bus: Option<Label>,
    /// The ONLY devices fsmatrix may destroy on this host; never empty.
    pub devices: Vec<DevicePath>,
    /// Devices the owner explicitly allows to be formatted although they carry
    /// a foreign signature (a filesystem, a partition table); a subset of `devices`.
    pub consent_foreign: Vec<DevicePath>,
    /// `None`: detect it under [`Os::pg_bin_hint`].
    pub pg_bin: Option<AbsPath>,
    pub pg_user: UserName,
    pub pg_port: u16,
    pub work_dir: AbsPath,
    pub tags: Vec<Label>,
    /// PostgreSQL settings the host's owner allows a matrix to set although
    /// they run commands, load code or name files ([`super::pgclass`]),
    /// lowercased.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_postgres_settings: Vec<PgSettingName>,
    /// The host's owner allows workload scripts that run commands or reach
    /// files (psql's `\!`, pgbench's `\shell`, `COPY … PROGRAM`, …: the
    /// generators' scanners list them); `false` by default.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_script_commands: bool,
    /// The unprivileged OS user psql and pgbench run as (never root), so a
    /// script's commands, even allowed, run with no more than its rights.
    #[serde(default = "default_client_user")]
    pub client_user: UserName,
    /// Jump hosts (OpenSSH `ProxyJump`), first hop first; empty: direct.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub proxy_jump: Vec<JumpSpec>,
    /// The further IdentityFiles an ssh config gives (those that exist),
    /// offered in order after `auth`'s, as ssh does.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub more_identity_files: Vec<PathBuf>,
    /// Where address, user, port, … came from, when an ssh config gave one
    /// of them (key: the inventory key); empty otherwise.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub ssh_sources: BTreeMap<String, Sourced>,
    /// A guest: the `[[host]]` it runs on (its physical host, which boots
    /// it, gives it `vm.disk` and is its last jump hop).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guest_of: Option<HostName>,
    /// A guest's machine (`[host.vm]`); set exactly when `guest_of` is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vm: Option<Vm>,
}

impl Host {
    /// The explicit pg_bin or the OS's detection hint.
    pub fn pg_bin_or_hint(&self) -> &str {
        match &self.pg_bin {
            Some(p) => p.as_str(),
            None => self.os.pg_bin_hint(),
        }
    }
    /// The device the sweep builds its filesystems on (the first listed).
    pub fn device(&self) -> &DevicePath {
        &self.devices[0]
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Inventory {
    pub path: PathBuf,
    pub hosts: Vec<Host>,
    /// What loading ignored and the user should know (an ssh config that
    /// weakens host-key checking, …), each starting with the host's name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// `~/x` → `$HOME/x`; anything else unchanged.
pub fn expand_tilde(p: &Path) -> PathBuf {
    match (p.strip_prefix("~"), std::env::var_os("HOME")) {
        (Ok(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => p.to_path_buf(),
    }
}

const HOST_KEYS: &[&str] = &[
    "name",
    "address",
    "port",
    "user",
    "become",
    "identity_file",
    "agent",
    "known_hosts",
    "os",
    "platform",
    "disk_bus",
    "devices",
    "consent_foreign",
    "pg_bin",
    "pg_user",
    "pg_port",
    "work_dir",
    "tags",
    "allow_postgres_settings",
    "allow_script_commands",
    "client_user",
    "proxy_jump",
    "guest_of",
    "vm",
];

/// The OS user psql and pgbench run as when the inventory names none:
/// `nobody` exists on every OS fsmatrix supports and owns nothing.
pub const DEFAULT_CLIENT_USER: &str = "nobody";

fn default_client_user() -> UserName {
    client_user_name(DEFAULT_CLIENT_USER).expect("a valid user name")
}

const DEFAULT_WORK_DIR: &str = "/var/tmp/fsmatrix";

/// The Unix socket PostgreSQL listens on for the host's device `slot`:
/// `<work_dir>/pg<k>/sock/.s.PGSQL.<pg_port + k>` (`pg` for slot 0): the
/// cell folder of `run::calls::HostPaths::for_slot`, its `sock` folder
/// (common.sh `pg_common`: `SOCK=${CELL%/}/sock`) and PostgreSQL's socket
/// name (`.s.PGSQL.%d`, src/include/libpq/pqcomm.h `UNIXSOCK_PATH`).
pub fn pg_socket_path(work_dir: &str, pg_port: u16, slot: usize) -> String {
    let w = work_dir.trim_end_matches('/');
    let k = if slot == 0 {
        String::new()
    } else {
        slot.to_string()
    };
    format!(
        "{w}/pg{k}/sock/.s.PGSQL.{}",
        u64::from(pg_port) + slot as u64
    )
}

/// Why the PostgreSQL socket of one of `devices` device slots would be
/// longer than `os` allows ([`super::os::OsProfile::socket_path_max`]):
/// PostgreSQL would refuse to start ("Unix-domain socket path ... is too
/// long") only after the disk was formatted.  `None` when every slot fits.
pub fn socket_path_problem(os: Os, work_dir: &str, pg_port: u16, devices: usize) -> Option<String> {
    let max = os.profile().socket_path_max;
    let longest = (0..devices.max(1))
        .map(|slot| pg_socket_path(work_dir, pg_port, slot))
        .max_by_key(|p| p.len())?;
    let over = longest.len().checked_sub(max).filter(|n| *n > 0)?;
    Some(format!(
        "`work_dir` {work_dir:?} is too long for {os}: the PostgreSQL socket {longest} is {} bytes and {os} allows {max} (sun_path holds {} with its NUL); valid: a work_dir of at most {} bytes",
        longest.len(),
        max + 1,
        work_dir.trim_end_matches('/').len() - over,
        os = os.profile().name,
    ))
}

/// Folders that other people and the system share: fsmatrix unmounts,
/// writes scripts into and (as root) runs from `work_dir`, so it must be a
/// folder of its own, never one of these (no side doors: fsmatrix writes
/// only where it was given).
pub const SHARED_FOLDERS: &[&str] = &[
    "/",
    "/tmp",
    "/var/tmp",
    "/home",
    "/usr/home",
    "/root",
    "/usr",
    "/usr/local",
    "/usr/local/etc",
    "/usr/share",
    "/usr/local/share",
    "/etc",
    "/var",
    "/var/lib",
    "/var/db",
    "/var/log",
    "/var/cache",
    "/var/spool",
    "/var/mail",
    "/var/run",
    "/var/lib/postgresql",
    "/var/lib/pgsql",
    "/var/db/postgres",
    "/run",
    "/opt",
    "/srv",
    "/mnt",
    "/media",
    "/compat",
    "/nonexistent",
];

/// Trees that belong to the system as a whole: no `work_dir` below them
/// either (virtual filesystems, configuration, programs and libraries).
pub const SYSTEM_TREES: &[&str] = &[
    "/dev",
    "/proc",
    "/sys",
    "/etc",
    "/boot",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/usr/bin",
    "/usr/sbin",
    "/usr/lib",
    "/usr/lib32",
    "/usr/lib64",
    "/usr/libexec",
    "/usr/include",
    "/usr/local/bin",
    "/usr/local/sbin",
    "/usr/local/lib",
    "/usr/local/libexec",
];

/// Parents whose direct children are someone's home folder (`/home/alice`,
/// FreeBSD's `/usr/home/alice`): a home is shared with its owner.
const HOME_PARENTS: &[&str] = &["/home", "/usr/home"];

/// `pg_user`: the host scripts run initdb and pg_ctl as this user and
/// accept `[a-z0-9_-]+` (remote-scripts/linux.sh `pg_user=`), so plan
/// accepts exactly that: a name it passes must not fail at run.
pub fn pg_user_name(s: &str) -> Result<UserName, ValueError> {
    let u = UserName::new(s)?;
    if let Some(c) = s
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_' || *c == '-'))
    {
        return Err(ValueError(format!(
            "pg_user `{}` contains `{c}`, which the host scripts refuse; valid: lowercase \
             letters, digits, _ and - (e.g. postgres)",
            shown(s)
        )));
    }
    Ok(u)
}

/// A `client_user`: a user name the host scripts accept (as `pg_user`),
/// never `root` (the point of it is to run the clients without root's rights).
pub fn client_user_name(s: &str) -> Result<UserName, ValueError> {
    let u = pg_user_name(s).map_err(|e| ValueError(e.0.replacen("pg_user", "client_user", 1)))?;
    if s == "root" || s == "toor" {
        return Err(ValueError(format!(
            "client_user `{s}` is root: psql and pgbench run as this user so that a workload \
             script's commands cannot act as root; valid: an unprivileged user (e.g. nobody)"
        )));
    }
    Ok(u)
}

/// A `work_dir`: an absolute path ([`AbsPath`]) written plainly (no `.` or
/// `..` part, no `//`) that is a folder fsmatrix can own, not a shared
/// system folder or a home folder itself.
pub fn work_dir_path(s: &str) -> Result<AbsPath, ValueError> {
    let valid = "a folder of fsmatrix's own, such as /var/tmp/fsmatrix or /srv/fsmatrix";
    let s_shown = shown(s);
    if s.contains("//") || s.split('/').any(|c| c == "." || c == "..") {
        return Err(ValueError(format!(
            "work_dir `{s_shown}` has a `//`, `.` or `..` part; write it plainly; valid: {valid}"
        )));
    }
    let p = AbsPath::new(s)?;
    let trimmed = match s.trim_end_matches('/') {
        "" => "/",
        t => t,
    };
    // Compared as written: the hosts' filesystems are case-sensitive.
    let lib_like = trimmed
        .strip_prefix("/lib")
        .is_some_and(|rest| !rest.contains('/'));
    if SHARED_FOLDERS.contains(&trimmed) || SYSTEM_TREES.contains(&trimmed) || lib_like {
        return Err(ValueError(format!(
            "work_dir `{s}` is a folder the whole system shares; fsmatrix writes, mounts and runs \
             as root in it; valid: {valid}"
        )));
    }
    if let Some(tree) = SYSTEM_TREES
        .iter()
        .find(|t| trimmed.starts_with(&format!("{t}/")))
    {
        return Err(ValueError(format!(
            "work_dir `{s}` is under {tree}, which belongs to the system; valid: {valid}"
        )));
    }
    if let Some(home) = HOME_PARENTS.iter().find(|h| {
        trimmed
            .strip_prefix(&format!("{h}/"))
            .is_some_and(|user| !user.contains('/'))
    }) {
        return Err(ValueError(format!(
            "work_dir `{s}` is a home folder itself (under {home}), shared with its owner; use a \
             folder inside it, e.g. {trimmed}/fsmatrix; valid: {valid}"
        )));
    }
    Ok(p)
}
const DEFAULT_KNOWN_HOSTS: &str = "~/.ssh/known_hosts";

#[cfg(test)]
mod tests {
    use super::*;

    /// issue 25: PostgreSQL's socket path against the OS's sun_path: 107
    /// bytes on Linux, 103 on the BSDs (sun_path[104]); checked at load for
    /// the host's longest slot (`pg<k>`, `pg_port + k`), naming work_dir.
    #[test]
    fn the_socket_path_is_held_to_the_os_limit_at_load() {
        assert_eq!(
            pg_socket_path("/var/tmp/fsmatrix/", 5432, 0),
            "/var/tmp/fsmatrix/pg/sock/.s.PGSQL.5432"
        );
        assert_eq!(pg_socket_path("/w", 5432, 12), "/w/pg12/sock/.s.PGSQL.5444");
        // 104 bytes with one device: over FreeBSD's 103, within Linux's 107.
        let w = format!("/{}", "w".repeat(104 - "/pg/sock/.s.PGSQL.5432".len() - 1));
        assert_eq!(pg_socket_path(&w, 5432, 0).len(), 104);
        assert!(socket_path_problem(Os::Linux, &w, 5432, 1).is_none());
        let e = socket_path_problem(Os::Freebsd, &w, 5432, 1).expect("too long for FreeBSD");
        assert!(
            e.contains("104 bytes and freebsd allows 103")
                && e.contains(&format!("at most {} bytes", w.len() - 1)),
            "{e}"
        );
        assert!(socket_path_problem(Os::Dragonfly, &w, 5432, 1).is_some());
        // One byte shorter fits the BSDs; a second device (pg1) does not.
        let w = &w[..w.len() - 1];
        assert!(socket_path_problem(Os::Freebsd, w, 5432, 1).is_none());
        assert!(socket_path_problem(Os::Freebsd, w, 5432, 2).is_some());
        let inv = |os: &str| {
            format!(
                "[[host]]\nname = \"a\"\naddress = \"10.0.0.1\"\nos = \"{os}\"\ndevices = [\"/dev/ada1\"]\nwork_dir = \"{w}x\"\n"
            )
        };
        assert!(Inventory::parse(Path::new("/etc/fsm/inv.toml"), inv("linux")).is_ok());
        let e = Inventory::parse(Path::new("/etc/fsm/inv.toml"), inv("freebsd"))
            .expect_err("refused for freebsd")
            .to_string();
        assert!(
            e.contains("/etc/fsm/inv.toml:6:12: error: `work_dir`")
                && e.contains("freebsd allows 103"),
            "{e}"
        );
    }

    fn parse(text: &str) -> Inventory {
        match Inventory::parse(Path::new("/etc/fsm/inv.toml"), text.to_string()) {
            Ok(i) => i,
            Err(e) => panic!("{e}"),
        }
    }

    /// `become = "doas"` reads as the doas method, from a host or the
    /// defaults, and renders back as written; each method once.
    #[test]
    fn become_doas_reads_and_renders() {
        let inv = parse(
            r#"
[defaults]
become = "doas"
os = "freebsd"
[[host]]
name = "a"
address = "10.0.0.1"
user = "ops"
devices = ["/dev/ada1"]
[[host]]
name = "b"
address = "10.0.0.2"
become = "sudo"
os = "linux"
devices = ["/dev/vdb"]
"#,
        );
        assert_eq!(
            inv.hosts.iter().map(|h| h.become_).collect::<Vec<_>>(),
            [Some(Become::Doas), Some(Become::Sudo)]
        );
        let text = render(&inv);
        assert!(text.contains("become = \"doas\""), "{text}");
        let again = Inventory::parse(Path::new("/etc/fsm/inv.toml"), text.clone())
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(
            again.hosts.iter().map(|h| h.become_).collect::<Vec<_>>(),
            [Some(Become::Doas), Some(Become::Sudo)]
        );
    }

    #[test]
    fn defaults_are_inherited_and_overridden() {
        let inv = parse(
            r#"
[defaults]
user = "bench"
become = "sudo"
identity_file = "keys/id"
pg_port = 5433
tags = ["rack2"]
os = "linux"
[[host]]
name = "a"
address = "10.0.0.1"
devices = ["/dev/vdb"]
[[host]]
name = "b"
address = "10.0.0.2"
os = "freebsd"
user = "root"
agent = true
tags = []
devices = ["/dev/ada1"]
pg_bin = "/opt/pg/bin"
"#,
        );
        let (a, b) = (&inv.hosts[0], &inv.hosts[1]);
        // (what, host a, host b)
        let table: Vec<(&str, String, String)> = vec![
            ("user", a.user.to_string(), b.user.to_string()),
            (
                "become",
                format!("{:?}", a.become_),
                format!("{:?}", b.become_),
            ),
            ("auth", format!("{:?}", a.auth), format!("{:?}", b.auth)),
            ("port", a.port.to_string(), b.port.to_string()),
            ("pg_port", a.pg_port.to_string(), b.pg_port.to_string()),
            ("pg_user", a.pg_user.to_string(), b.pg_user.to_string()),
            (
                "pg_bin",
                a.pg_bin_or_hint().into(),
                b.pg_bin_or_hint().into(),
            ),
            ("work_dir", a.work_dir.to_string(), b.work_dir.to_string()),
            (
                "platform",
                a.platform.as_str().into(),
                b.platform.as_str().into(),
            ),
            ("tags", format!("{:?}", a.tags), format!("{:?}", b.tags)),
            (
                "known_hosts",
                a.known_hosts.display().to_string(),
                b.known_hosts.display().to_string(),
            ),
        ];
        let want: Vec<(&str, &str, &str)> = vec![
            ("user", "bench", "root"),
            ("become", "Some(Sudo)", "Some(Sudo)"),
            ("auth", "IdentityFile(\"/etc/fsm/keys/id\")", "Agent"),
            ("port", "22", "22"),
            ("pg_port", "5433", "5433"),
            ("pg_user", "postgres", "postgres"),
            ("pg_bin", "/usr/lib/postgresql/*/bin", "/opt/pg/bin"),
            ("work_dir", "/var/tmp/fsmatrix", "/var/tmp/fsmatrix"),
            ("platform", "physical", "physical"),
            ("tags", "[Label(\"rack2\")]", "[]"),
            ("known_hosts", "~/.ssh/known_hosts", "~/.ssh/known_hosts"),
        ];
        for ((what, ga, gb), (_, wa, wb)) in table.iter().zip(want.iter()) {
            assert_eq!((ga.as_str(), gb.as_str()), (*wa, *wb), "{what}");
        }
    }

    #[test]
    fn per_os_pg_bin_hints() {
        for (os, hint) in [
            (Os::Linux, "/usr/lib/postgresql/*/bin"),
            (Os::Freebsd, "/usr/local/bin"),
            (Os::Dragonfly, "/usr/local/bin"),
        ] {
            assert_eq!(os.pg_bin_hint(), hint);
        }
    }

    fn errors(text: &str) -> String {
        match Inventory::parse(Path::new("/etc/fsm/inv.toml"), text.to_string()) {
            Ok(_) => String::new(),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn work_dir_in_a_shared_folder_is_refused_at_load() {
        let with = |w: &str| {
            errors(&format!(
                "[defaults]\nos = \"linux\"\n[[host]]\nname = \"a\"\naddress = \"10.0.0.1\"\ndevices = [\"/dev/vdb\"]\nwork_dir = {w:?}\n"
            ))
        };
        for bad in [
            "/",
            "/tmp",
            "/tmp/",
            "/var/tmp",
            "/home",
            "/root",
            "/usr",
            "/etc",
            "/var",
            "/var/lib",
            "/dev",
            "/dev/shm/x",
            "/proc/1",
            "/sys",
            "/run",
            "/boot",
            "/bin",
            "/sbin",
            "/lib",
            "/lib64",
            "/opt",
            "/srv",
            "/mnt",
            "/media",
            "/etc/fsmatrix",
            "/usr/lib/fsmatrix",
            "/home/alice",
            "/usr/home/alice",
            "/var/tmp//fsmatrix",
            "/var/tmp/./fsmatrix",
            "/var/tmp/fsmatrix/..",
        ] {
            let e = with(bad);
            assert!(
                e.starts_with("/etc/fsm/inv.toml:7:12: error: work_dir `"),
                "{bad}: {e}"
            );
            assert!(
                e.contains("valid: a folder of fsmatrix's own"),
                "{bad}: {e}"
            );
        }
        for ok in [
            "/var/tmp/fsmatrix",
            "/var/tmp/fsmatrix/",
            "/var/tmp/fsmatrix-hostkey-test",
            "/tmp/fsmatrix",
            "/srv/fsmatrix",
            "/home/alice/fsmatrix",
            "/usr/home/alice/fsmatrix",
            "/root/fsmatrix",
            "/var/lib/fsmatrix",
            "/opt/fsmatrix/work",
        ] {
            assert_eq!(with(ok), "", "{ok}");
        }
    }

    #[test]
    fn two_entries_that_reach_one_machine_are_refused_with_both_named() {
        let two = |a: &str, pa: u16, b: &str, pb: u16| {
            errors(&format!(
                "[defaults]\nos = \"linux\"\n[[host]]\nname = \"a\"\naddress = {a:?}\nport = {pa}\ndevices = [\"/dev/vdb\"]\n[[host]]\nname = \"b\"\naddress = {b:?}\nport = {pb}\ndevices = [\"/dev/vdb\"]\n"
            ))
        };
        for (a, b) in [
            ("10.0.0.1", "10.0.0.1"),
            ("db1.lab.example", "DB1.Lab.Example."),
            ("fd00::5", "FD00:0:0::5"),
            ("::ffff:10.0.0.1", "10.0.0.1"),
        ] {
            let e = two(a, 22, b, 22);
            assert!(
                e.starts_with(
                    "/etc/fsm/inv.toml:9:8: error: [[host]] `b` reaches the same machine as [[host]] `a` (/etc/fsm/inv.toml:4)"
                ),
                "{a} {b}: {e}"
            );
            assert!(e.contains("valid: one [[host]] per machine"), "{e}");
        }
        assert_eq!(two("10.0.0.1", 22, "10.0.0.1", 2222), "");
        assert_eq!(two("10.0.0.1", 22, "10.0.0.2", 22), "");
    }

    #[test]
    fn proxy_jump_values() {
        let ok = |s: &str| -> Vec<String> {
            parse_proxy_jump(s)
                .unwrap_or_else(|e| panic!("{s}: {e}"))
                .iter()
                .map(|j| {
                    format!(
                        "{:?}|{}|{}",
                        j.user.as_ref().map(|u| u.as_str()),
                        j.address,
                        j.port
                    )
                })
                .collect()
        };
        let table: &[(&str, &[&str])] = &[
            ("bastion.lab", &["None|bastion.lab|22"]),
            ("root@10.203.0.11", &["Some(\"root\")|10.203.0.11|22"]),
            (
                "ops@gw1:2222,10.0.0.5",
                &["Some(\"ops\")|gw1|2222", "None|10.0.0.5|22"],
            ),
            ("[fd00::5]:2200", &["None|fd00::5|2200"]),
            ("u@[fd00::5]", &["Some(\"u\")|fd00::5|22"]),
            ("ssh://ops@gw1:2222", &["Some(\"ops\")|gw1|2222"]),
            ("none", &[]),
            ("NONE", &[]),
        ];
        for (input, want) in table {
            assert_eq!(ok(input), *want, "{input}");
        }
        let bad: &[(&str, &str)] = &[
            ("", "is empty"),
            ("bastion lab", "contains a space"),
            ("-oProxyCommand=sh", "`=`"),
            ("-bastion", "starts with `-`"),
            ("gw1\nroot@evil", "contains a newline"),
            ("ssh://gw1/;x", "URI paths, parameters"),
            ("ssh://u;fingerprint=x@gw1", "URI paths, parameters"),
            ("http://gw1", "URI scheme `http`"),
            ("gw1,,gw2", "hop 2 ``: has an empty hop"),
            ("gw1:0", "port `0`"),
            ("gw1:+22", "port `+22`"),
            ("gw1:99999", "port `99999`"),
            ("gw1:", "port ``"),
            ("fd00::5", "write an IPv6 address in brackets"),
            ("[gw1]:22", "not an IPv6 address"),
            ("[fd00::5", "without a closing"),
            ("$(id)@gw1", "user name `$(id)`"),
            (
                "gw1,root@gw1:22",
                "hop 2 `root@gw1:22`: names the same host twice",
            ),
            ("a,b,c,d,e,f,g,h,i", "more than 8"),
        ];
        for (input, want) in bad {
            let e = parse_proxy_jump(input).expect_err(input).0;
            assert!(e.contains(want), "{input:?}: {e}");
            assert!(e.starts_with("proxy_jump `"), "{input:?}: {e}");
            assert!(e.contains("valid: `[user@]host[:port]`"), "{input:?}: {e}");
        }
        // Shown back as OpenSSH takes it.
        let hops = parse_proxy_jump("ops@gw1:2222,[fd00::5]").unwrap();
        let shown: Vec<String> = hops.iter().map(|h| h.to_string()).collect();
        assert_eq!(shown, ["ops@gw1:2222", "[fd00::5]:22"]);
    }

    #[test]
    fn proxy_jump_in_defaults_hosts_and_the_host_itself() {
        let inv = parse(
            r#"
[defaults]
os = "linux"
proxy_jump = "root@10.203.0.11"
devices = ["/dev/vdb"]
[[host]]
name = "bastion"
address = "10.203.0.11"
proxy_jump = "none"
[[host]]
name = "inner"
address = "10.203.1.12"
[[host]]
name = "deep"
address = "10.203.1.12"
proxy_jump = "root@10.203.0.11,ops@10.203.1.13:2222"
"#,
        );
        let hops: Vec<Vec<String>> = inv
            .hosts
            .iter()
            .map(|h| h.proxy_jump.iter().map(|j| j.to_string()).collect())
            .collect();
        assert_eq!(
            hops,
            vec![
                vec![],
                vec!["root@10.203.0.11:22".to_string()],
                vec![
                    "root@10.203.0.11:22".to_string(),
                    "ops@10.203.1.13:2222".to_string()
                ],
            ],
            "the same address behind another chain is another machine"
        );
        // The bastion inheriting its own jump is refused, with the way out.
        let e = errors(
            "[defaults]\nos = \"linux\"\nproxy_jump = \"root@10.203.0.11\"\n[[host]]\nname = \"b\"\naddress = \"10.203.0.11\"\ndevices = [\"/dev/vdb\"]\n",
        );
        assert!(
            e.starts_with("/etc/fsm/inv.toml:3:14: error: `proxy_jump` of [[host]] `b` names the host itself (hop 1 `root@10.203.0.11:22`)"),
            "{e}"
        );
        assert!(e.contains("\"none\""), "{e}");
        // A bad value points at it.
        let e = errors(
            "[[host]]\nname = \"a\"\nos = \"linux\"\naddress = \"10.0.0.1\"\ndevices = [\"/dev/vdb\"]\nproxy_jump = \"-oProxyCommand=sh\"\n",
        );
        assert!(
            e.starts_with("/etc/fsm/inv.toml:6:14: error: proxy_jump `-oProxyCommand=sh`"),
            "{e}"
        );
    }
}
