//! The inventory: which hosts, how to reach them, which spare devices
//! fsmatrix may destroy on each.  Format documented in README.md
//! ("Inventory and matrix formats") and in inventory/example-lab.toml.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use toml::de::{DeTable, DeValue};

use super::error::{ConfigErrors, Errors, Source};
use super::values::{
    shown, AbsPath, Address, DevicePath, HostName, Label, PgSettingName, UserName, ValueError,
};
use super::walk::Tbl;

/// Operating system of a host; checked against `uname -s` by `check`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Os {
    Linux,
    Freebsd,
    Dragonfly,
}

impl Os {
    pub const ALL: [Os; 3] = [Os::Linux, Os::Freebsd, Os::Dragonfly];
    pub fn as_str(self) -> &'static str {
        match self {
            Os::Linux => "linux",
            Os::Freebsd => "freebsd",
            Os::Dragonfly => "dragonfly",
        }
    }
    pub fn parse(s: &str) -> Option<Os> {
        Os::ALL.into_iter().find(|o| o.as_str() == s)
    }
    /// Where PostgreSQL's binaries are looked for when `pg_bin` is not given:
    /// Debian/Ubuntu install per major version (`*` = newest found), the BSD
    /// ports/dports into /usr/local/bin.
    pub fn pg_bin_hint(self) -> &'static str {
        match self {
            Os::Linux => "/usr/lib/postgresql/*/bin",
            Os::Freebsd | Os::Dragonfly => "/usr/local/bin",
        }
    }
}

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

/// How the SSH user gets root: it is root, or it runs commands through sudo.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Become {
    Sudo,
}

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

    /// Whether commands on this host run through `sudo -n` (`become = "sudo"`).
    pub fn uses_sudo(&self) -> bool {
        self.become_ == Some(Become::Sudo)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Inventory {
    pub path: PathBuf,
    pub hosts: Vec<Host>,
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
];

const DEFAULT_WORK_DIR: &str = "/var/tmp/fsmatrix";

/// Folders that other people and the system share: fsmatrix unmounts,
/// writes scripts into and (as root) runs from `work_dir`, so it must be a
/// folder of its own, never one of these (issue 10, "No side doors").
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

impl Inventory {
    /// Read and validate an inventory file.
    pub fn load(path: &Path) -> Result<Inventory, ConfigErrors> {
        let text = super::read_file(path)?;
        Inventory::parse(path, text)
    }

    /// Validate inventory text; `path` names it in errors and anchors relative paths.
    pub fn parse(path: &Path, text: String) -> Result<Inventory, ConfigErrors> {
        super::parse_collecting(path, text, parse_doc)
    }
}

fn parse_doc(src: &Source, errs: &mut Errors<'_>) -> Option<Inventory> {
    let doc = match DeTable::parse(&src.text) {
        Ok(d) => d,
        Err(e) => {
            let span = e.span().unwrap_or(0..0);
            errs.push(&span, format!("invalid toml: {}", e.message().trim_end()));
            return None;
        }
    };
    let root = Tbl {
        t: doc.get_ref(),
        span: &doc.span(),
        ctx: "the inventory",
    };
    root.check_keys(errs, &["defaults", "host"]);
    let defaults = root.table(errs, "defaults");
    let dctx = "[defaults]".to_string();
    let dtbl = defaults.and_then(|v| match v.get_ref() {
        DeValue::Table(t) => Some((t, v.span())),
        _ => None,
    });
    if let Some((t, span)) = &dtbl {
        let d = Tbl {
            t,
            span,
            ctx: &dctx,
        };
        d.check_keys(errs, &HOST_KEYS[1..]);
        if let Some(v) = d.get("name") {
            errs.push(
                &v.span(),
                "`name` cannot be a default: every host needs its own",
            );
        }
    }
    let Some(hosts_v) = root.get("host") else {
        errs.push(
            &(0..0),
            "the inventory has no [[host]]; add at least one with name, address and devices",
        );
        return None;
    };
    let host_tables = super::walk::tables(errs, hosts_v, "host");
    let base = src.path.parent().unwrap_or(Path::new(""));
    let mut hosts = Vec::new();
    let mut seen: BTreeMap<String, ()> = BTreeMap::new();
    // (normalised address, port) of every host so far, where, and its name.
    let mut reach: Vec<((String, u16), std::ops::Range<usize>, String)> = Vec::new();
    for (t, span) in &host_tables {
        let label = t
            .iter()
            .find(|(k, _)| k.get_ref().as_ref() == "name")
            .and_then(|(_, v)| v.get_ref().as_str().map(str::to_string))
            .unwrap_or_else(|| "?".into());
        let ctx = format!("[[host]] `{label}`");
        let h = Tbl { t, span, ctx: &ctx };
        h.check_keys(errs, HOST_KEYS);
        let d = dtbl.as_ref().map(|(t, span)| Tbl {
            t,
            span,
            ctx: &dctx,
        });
        if let Some(v) = h.get("name") {
            if let Some(n) = v.get_ref().as_str() {
                if seen.insert(n.to_string(), ()).is_some() {
                    errs.push(
                        &v.span(),
                        format!("duplicate host name `{n}`; every [[host]] needs a unique name"),
                    );
                }
            }
        }
        if let Some(host) = parse_host(errs, &h, d.as_ref(), base) {
            let at = h.get("name").map_or(span.clone(), |v| v.span());
            let key = (machine_key(host.address.as_str()), host.port);
            match reach.iter().find(|(k, _, _)| *k == key) {
                Some((_, first_at, first_name)) => {
                    let (line, _) = src.line_col(first_at.start);
                    errs.push(
                        &at,
                        format!(
                            "[[host]] `{}` reaches the same machine as [[host]] `{first_name}` ({}:{line}): \
                             address `{}` port {}; two entries for one machine would let two sweeps \
                             format its devices at once; valid: one [[host]] per machine (another \
                             port on the same address is another machine)",
                            host.name,
                            src.path.display(),
                            host.address,
                            host.port
                        ),
                    );
                }
                None => reach.push((key, at, host.name.to_string())),
            }
            hosts.push(host);
        }
    }
    Some(Inventory {
        path: src.path.clone(),
        hosts,
    })
}

/// An address as a machine is reached by it: DNS names compared without
/// case or a trailing dot, IP addresses in their canonical form (`FD00:0::5`
/// is `fd00::5`, `::ffff:10.0.0.1` is `10.0.0.1`).  Names are not resolved:
/// a name and its address are told apart here, and by host key at `check`.
pub fn machine_key(address: &str) -> String {
    let a = address.trim_end_matches('.').to_ascii_lowercase();
    match a.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V6(v6)) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => v6.to_string(),
        },
        Ok(ip) => ip.to_string(),
        Err(_) => a,
    }
}

/// The table that holds `key`: the host's own, else [defaults].
fn pick<'a, 'i>(h: &Tbl<'a, 'i>, d: Option<&Tbl<'a, 'i>>, key: &str) -> Option<Tbl<'a, 'i>> {
    if h.get(key).is_some() {
        Some(*h)
    } else {
        d.filter(|d| d.get(key).is_some()).copied()
    }
}

fn local_path(base: &Path, s: &str) -> PathBuf {
    let p = PathBuf::from(s);
    if p.is_absolute() || s.starts_with('~') {
        p
    } else {
        base.join(p)
    }
}

fn parse_host(
    errs: &mut Errors<'_>,
    h: &Tbl<'_, '_>,
    d: Option<&Tbl<'_, '_>>,
    base: &Path,
) -> Option<Host> {
    let mut ok = true;
    let name = match h.get("name") {
        Some(_) => h.typed(errs, "name", HostName::new),
        None => {
            errs.push(h.span, format!("{} has no `name`", h.ctx));
            None
        }
    };
    let address = match pick(h, d, "address") {
        Some(t) => t.typed(errs, "address", Address::new),
        None => {
            errs.push(
                h.span,
                format!("{} has no `address` (a DNS name or an IP address)", h.ctx),
            );
            None
        }
    };
    let port = pick(h, d, "port")
        .map(|t| t.int(errs, "port", 1, 65535).map(|p| *p.get_ref() as u16))
        .unwrap_or(Some(22));
    let user = pick(h, d, "user")
        .map(|t| t.typed(errs, "user", UserName::new))
        .unwrap_or_else(|| UserName::new("root").ok());
    let become_ = match pick(h, d, "become") {
        Some(t) => match t.str(errs, "become") {
            Some(s) if s.get_ref() == "sudo" => Some(Become::Sudo),
            Some(s) => {
                errs.push(
                    &s.span(),
                    format!(
                        "unknown `become` method `{}` in {}; valid: \"sudo\"",
                        s.get_ref(),
                        t.ctx
                    ),
                );
                ok = false;
                None
            }
            None => {
                ok = false;
                None
            }
        },
        None => None,
    };
    let agent = pick(h, d, "agent")
        .and_then(|t| t.bool(errs, "agent"))
        .unwrap_or(false);
    let identity = pick(h, d, "identity_file").and_then(|t| t.str(errs, "identity_file"));
    let auth = match identity {
        Some(p) if !agent => {
            if p.get_ref().is_empty() || p.get_ref().contains(['\n', '\0']) {
                errs.push(
                    &p.span(),
                    "`identity_file` must be a non-empty path without newlines",
                );
                ok = false;
            }
            Auth::IdentityFile(local_path(base, p.get_ref()))
        }
        _ => Auth::Agent,
    };
    let known_hosts = match pick(h, d, "known_hosts").and_then(|t| t.str(errs, "known_hosts")) {
        Some(p) => local_path(base, p.get_ref()),
        None => PathBuf::from(DEFAULT_KNOWN_HOSTS),
    };
    let os = match pick(h, d, "os") {
        Some(t) => t
            .str(errs, "os")
            .and_then(|s| match Os::parse(s.get_ref()) {
                Some(o) => Some(o),
                None => {
                    errs.push(
                        &s.span(),
                        format!(
                            "unknown os `{}` in {}; valid: linux, freebsd, dragonfly",
                            s.get_ref(),
                            t.ctx
                        ),
                    );
                    None
                }
            }),
        None => {
            errs.push(
                h.span,
                format!(
                    "{} has no `os`; set it here or in [defaults] (linux, freebsd, dragonfly)",
                    h.ctx
                ),
            );
            None
        }
    };
    let platform = match pick(h, d, "platform") {
        Some(t) => t
            .str(errs, "platform")
            .and_then(|s| match s.get_ref().as_str() {
                "physical" => Some(Platform::Physical),
                "kvm" => Some(Platform::Kvm),
                "lab" => Some(Platform::Lab),
                other => {
                    errs.push(
                        &s.span(),
                        format!(
                            "unknown platform `{other}` in {}; valid: physical, kvm, lab",
                            t.ctx
                        ),
                    );
                    None
                }
            }),
        None => Some(Platform::Physical),
    };
    let disk_bus = pick(h, d, "disk_bus").map(|t| t.typed(errs, "disk_bus", Label::new));
    let devices = match pick(h, d, "devices") {
        Some(t) => t.typed_list(errs, "devices", DevicePath::new),
        None => {
            errs.push(
                h.span,
                format!(
                    "{} has no `devices`; list the spare devices fsmatrix may destroy, e.g. devices = [\"/dev/vdb\"]",
                    h.ctx
                ),
            );
            None
        }
    };
    let consent = pick(h, d, "consent_foreign")
        .map(|t| t.typed_list(errs, "consent_foreign", DevicePath::new))
        .unwrap_or(Some(Vec::new()));
    let mut dev_list = Vec::new();
    if let Some(devs) = &devices {
        let raw = pick(h, d, "devices").and_then(|t| t.get("devices"));
        let raw_empty = raw.is_some_and(|v| v.get_ref().as_array().is_some_and(|a| a.is_empty()));
        if devs.is_empty() {
            ok = false;
        }
        if raw_empty {
            if let Some(v) = raw {
                errs.push(
                    &v.span(),
                    format!(
                        "`devices` of {} is empty; list at least one spare device fsmatrix may destroy",
                        h.ctx
                    ),
                );
            }
        }
        for (i, dv) in devs.iter().enumerate() {
            if devs[..i].iter().any(|p| p.get_ref() == dv.get_ref()) {
                errs.push(
                    &dv.span(),
                    format!(
                        "device `{}` is listed twice in {}; list each device once",
                        dv.get_ref(),
                        h.ctx
                    ),
                );
            }
            dev_list.push(dv.get_ref().clone());
        }
    }
    let mut consent_list = Vec::new();
    if let Some(c) = &consent {
        for dv in c {
            if devices.is_some() && !dev_list.contains(dv.get_ref()) {
                errs.push(
                    &dv.span(),
                    format!(
                        "`consent_foreign` names `{}`, which is not in the `devices` of {}; consent only to listed devices",
                        dv.get_ref(),
                        h.ctx
                    ),
                );
            }
            consent_list.push(dv.get_ref().clone());
        }
    }
    let pg_bin = pick(h, d, "pg_bin").map(|t| t.typed(errs, "pg_bin", AbsPath::new));
    let pg_user = pick(h, d, "pg_user")
        .map(|t| t.typed(errs, "pg_user", pg_user_name))
        .unwrap_or_else(|| UserName::new("postgres").ok());
    let pg_port = pick(h, d, "pg_port")
        .map(|t| {
            t.int(errs, "pg_port", 1, 65535)
                .map(|p| *p.get_ref() as u16)
        })
        .unwrap_or(Some(5432));
    let work_dir = pick(h, d, "work_dir")
        .map(|t| t.typed(errs, "work_dir", work_dir_path))
        .unwrap_or_else(|| AbsPath::new(DEFAULT_WORK_DIR).ok());
    let tags = pick(h, d, "tags")
        .map(|t| {
            t.typed_list(errs, "tags", Label::new)
                .map(|v| v.into_iter().map(|s| s.into_inner()).collect())
        })
        .unwrap_or(Some(Vec::new()));
    let allow_pg = pick(h, d, "allow_postgres_settings")
        .map(|t| {
            t.typed_list(errs, "allow_postgres_settings", super::pgclass::allowable)
                .map(|v| v.into_iter().map(|s| s.into_inner()).collect())
        })
        .unwrap_or(Some(Vec::new()));
    if !ok {
        return None;
    }
    Some(Host {
        name: name?,
        address: address?,
        port: port?,
        user: user?,
        become_,
        auth,
        known_hosts,
        os: os?,
        platform: platform?,
        disk_bus: match disk_bus {
            Some(Some(b)) => Some(b),
            Some(None) => return None,
            None => None,
        },
        devices: if dev_list.is_empty() {
            return None;
        } else {
            dev_list
        },
        consent_foreign: consent.map(|_| consent_list)?,
        pg_bin: match pg_bin {
            Some(Some(p)) => Some(p),
            Some(None) => return None,
            None => None,
        },
        pg_user: pg_user?,
        pg_port: pg_port?,
        work_dir: work_dir?,
        tags: tags?,
        allow_postgres_settings: allow_pg?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Inventory {
        match Inventory::parse(Path::new("/etc/fsm/inv.toml"), text.to_string()) {
            Ok(i) => i,
            Err(e) => panic!("{e}"),
        }
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
}
