//! The inventory: which hosts, how to reach them, which spare devices
//! fsmatrix may destroy on each.  Format documented in README.md
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
    /// Jump hosts (OpenSSH `ProxyJump`), first hop first; empty: direct.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub proxy_jump: Vec<JumpSpec>,
    /// Where address, user, port, … came from, when an ssh config gave one
    /// of them (key: the inventory key); empty otherwise.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub ssh_sources: BTreeMap<String, Sourced>,
}

/// One hop of a `proxy_jump` (OpenSSH `ProxyJump`): `[user@]host[:port]`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct JumpSpec {
    /// `None`: the host's own `user`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<UserName>,
    pub address: Address,
    /// 22 unless given.
    pub port: u16,
}

impl std::fmt::Display for JumpSpec {
    /// As OpenSSH takes it back: `user@host:port`, IPv6 in brackets.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(u) = &self.user {
            write!(f, "{u}@")?;
        }
        if self.address.as_str().contains(':') {
            write!(f, "[{}]:{}", self.address, self.port)
        } else {
            write!(f, "{}:{}", self.address, self.port)
        }
    }
}

/// Most hops a `proxy_jump` may have (OpenSSH has no limit; a longer chain
/// is a typo or a loop).
pub const MAX_JUMP_HOPS: usize = 8;

const PROXY_JUMP_VALID: &str = "`[user@]host[:port]`, several separated by commas (first hop \
     first), an IPv6 address in brackets (`[fd00::5]:22`), or \"none\"; e.g. \"root@bastion.lab\", \
     \"ops@gw1:2222,10.0.0.5\"";

/// Parse an OpenSSH `ProxyJump` value: `[user@]host[:port][,...]`, the
/// `ssh://[user@]host[:port]` form, or `none` (no jump: an empty list).
/// Every part goes through the [`UserName`] and [`Address`] validators, so
/// spaces, `-o…` options, newlines and URI parameters are refused; the error
/// says which hop and what is valid.  The one validator for the key: the
/// inventory and `~/.ssh/config` resolution both call it.
pub fn parse_proxy_jump(s: &str) -> Result<Vec<JumpSpec>, ValueError> {
    let whole = shown(s);
    let fail = |hop: Option<(usize, &str)>, why: String| {
        let at = match hop {
            Some((i, h)) if s.contains(',') => format!(" hop {} `{}`", i + 1, shown(h)),
            _ => String::new(),
        };
        ValueError(format!(
            "proxy_jump `{whole}`{at}: {why}; valid: {PROXY_JUMP_VALID}"
        ))
    };
    if s.eq_ignore_ascii_case("none") {
        return Ok(Vec::new());
    }
    if s.is_empty() {
        return Err(fail(None, "is empty".into()));
    }
    if let Some(c) = s.chars().find(|c| c.is_whitespace() || c.is_control()) {
        return Err(fail(
            None,
            format!("contains {}, which is not allowed here", describe_char(c)),
        ));
    }
    let hops: Vec<&str> = s.split(',').collect();
    if hops.len() > MAX_JUMP_HOPS {
        return Err(fail(
            None,
            format!("has {} hops, more than {MAX_JUMP_HOPS}", hops.len()),
        ));
    }
    let mut out: Vec<JumpSpec> = Vec::new();
    for (i, hop) in hops.iter().enumerate() {
        let spec = parse_hop(hop).map_err(|why| fail(Some((i, hop)), why))?;
        if out.iter().any(|o| {
            machine_key(o.address.as_str()) == machine_key(spec.address.as_str())
                && o.port == spec.port
        }) {
            return Err(fail(
                Some((i, hop)),
                "names the same host twice (a loop)".into(),
            ));
        }
        out.push(spec);
    }
    Ok(out)
}

fn describe_char(c: char) -> String {
    match c {
        '\n' => "a newline".into(),
        '\r' => "a carriage return".into(),
        '\t' => "a tab".into(),
        ' ' => "a space".into(),
        c => format!("U+{:04X}", c as u32),
    }
}

/// One hop: `[ssh://][user@]host[:port]`.
fn parse_hop(hop: &str) -> Result<JumpSpec, String> {
    if hop.is_empty() {
        return Err("has an empty hop (two commas, or one at an end)".into());
    }
    let rest = match hop.split_once("://") {
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("ssh") => rest,
        Some((scheme, _)) => {
            return Err(format!(
                "uses the URI scheme `{}`; only ssh:// is a jump host",
                shown(scheme)
            ))
        }
        None => hop,
    };
    if let Some(c) = rest
        .chars()
        .find(|c| matches!(c, '/' | ';' | '?' | '#' | '=' | '%'))
    {
        return Err(format!(
            "contains `{c}`: URI paths, parameters and options are not accepted"
        ));
    }
    let (user, hostport) = match rest.split_once('@') {
        Some((u, h)) => (Some(UserName::new(u).map_err(|e| e.0)?), h),
        None => (None, rest),
    };
    let (host, port) = if let Some(inner) = hostport.strip_prefix('[') {
        let (addr, after) = inner
            .split_once(']')
            .ok_or_else(|| "opens `[` without a closing `]`".to_string())?;
        if addr.parse::<std::net::Ipv6Addr>().is_err() {
            return Err(format!(
                "`[{}]` is not an IPv6 address (brackets are for IPv6 only)",
                shown(addr)
            ));
        }
        match after {
            "" => (addr, None),
            _ => match after.strip_prefix(':') {
                Some(p) => (addr, Some(p)),
                None => return Err(format!("`{}` after `]` is not `:port`", shown(after))),
            },
        }
    } else {
        match hostport.matches(':').count() {
            0 => (hostport, None),
            1 => {
                let (h, p) = hostport.split_once(':').unwrap_or((hostport, ""));
                (h, Some(p))
            }
            _ => {
                return Err(format!(
                    "`{}` has several `:`; write an IPv6 address in brackets, e.g. `[fd00::5]:22`",
                    shown(hostport)
                ))
            }
        }
    };
    let address = Address::new(host).map_err(|e| e.0)?;
    let port = match port {
        None => 22,
        Some(p) => match p.parse::<u16>() {
            Ok(n) if n > 0 && p.bytes().all(|b| b.is_ascii_digit()) => n,
            _ => {
                return Err(format!(
                    "port `{}` is not a number from 1 to 65535",
                    shown(p)
                ))
            }
        },
    };
    Ok(JumpSpec {
        user,
        address,
        port,
    })
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
    "proxy_jump",
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
    /// Aliases are resolved through the ssh config ([`super::ssh_config`]).
    pub fn parse(path: &Path, text: String) -> Result<Inventory, ConfigErrors> {
        Inventory::parse_with(path, text, &Resolver::from_env())
    }

    /// [`Inventory::parse`] with the `ssh -G` program and home given.
    pub fn parse_with(
        path: &Path,
        text: String,
        resolver: &Resolver,
    ) -> Result<Inventory, ConfigErrors> {
        super::parse_collecting(path, text, |src, errs| parse_doc(src, errs, resolver))
    }
}

fn parse_doc(src: &Source, errs: &mut Errors<'_>, resolver: &Resolver) -> Option<Inventory> {
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
    root.check_keys(errs, &["defaults", "host", "ssh_config"]);
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
    let dt = dtbl.as_ref().map(|(t, _)| *t);
    let mut ssh = SshAliases::resolve(errs, &root, dt, &host_tables, base, resolver);
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
        if let Some(mut host) = parse_host(errs, &h, d.as_ref(), base) {
            if !ssh.apply(errs, &h, d.as_ref(), &mut host) {
                continue;
            }
            let at = h.get("name").map_or(span.clone(), |v| v.span());
            let key = (reach_key(&host), host.port);
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
        warnings: ssh.warnings,
    })
}

/// The ssh config an inventory resolves its aliases through (`ssh_config`,
/// else `~/.ssh/config` when it exists) and what each alias resolved to:
/// resolved once per load, all hosts at once, before any host is checked
/// against the others (two aliases may name one machine).
struct SshAliases {
    config: Option<ConfigFile>,
    home: Option<PathBuf>,
    resolved: BTreeMap<String, Result<Resolved, String>>,
    warnings: Vec<String>,
}

impl SshAliases {
    fn resolve(
        errs: &mut Errors<'_>,
        root: &Tbl<'_, '_>,
        defaults: Option<&DeTable<'_>>,
        hosts: &[(&DeTable<'_>, std::ops::Range<usize>)],
        base: &Path,
        resolver: &Resolver,
    ) -> SshAliases {
        let config = ssh_config_file(errs, root, base, resolver);
        let mut aliases: Vec<String> = Vec::new();
        if config.is_some() {
            let address = |t: &DeTable<'_>| {
                t.iter()
                    .find(|(k, _)| k.get_ref().as_ref() == "address")
                    .and_then(|(_, v)| v.get_ref().as_str().map(str::to_string))
            };
            for (t, _) in hosts {
                let Some(a) = address(t).or_else(|| defaults.and_then(address)) else {
                    continue;
                };
                // An IP address is no alias: ssh is not run for it.
                if Address::new(&a).is_ok()
                    && a.parse::<std::net::IpAddr>().is_err()
                    && !aliases.contains(&a)
                {
                    aliases.push(a);
                }
            }
        }
        let resolved = match &config {
            Some(c) => aliases
                .iter()
                .cloned()
                .zip(
                    resolver
                        .resolve_all(c, &aliases)
                        .into_iter()
                        .map(|r| r.map_err(|e| e.to_string())),
                )
                .collect(),
            None => BTreeMap::new(),
        };
        SshAliases {
            config,
            home: resolver.home.clone(),
            resolved,
            warnings: Vec::new(),
        }
    }

    /// Fill what the inventory left to the ssh config; `false` (an error
    /// pushed) when the alias did not resolve to values fsmatrix accepts.
    fn apply(
        &mut self,
        errs: &mut Errors<'_>,
        h: &Tbl<'_, '_>,
        d: Option<&Tbl<'_, '_>>,
        host: &mut Host,
    ) -> bool {
        let (Some(config), Some(r)) = (&self.config, self.resolved.get(host.address.as_str()))
        else {
            return true;
        };
        let span = pick(h, d, "address")
            .and_then(|t| t.get("address"))
            .map_or(h.span.clone(), |v| v.span());
        let set = |k: &str| pick(h, d, k).is_some();
        let result = match r {
            Err(e) => Err(format!(
                "cannot resolve address `{}` of {} through ssh config {}: {e}",
                host.address, h.ctx, config.shown
            )),
            Ok(r) if r.is_empty() => Ok(()),
            Ok(r) => ssh_config::apply(
                host,
                InventorySet {
                    port: set("port"),
                    user: set("user"),
                    auth: set("identity_file") || set("agent"),
                    known_hosts: set("known_hosts"),
                    proxy_jump: set("proxy_jump"),
                },
                r,
                config,
                self.home.as_deref(),
                &mut self.warnings,
            )
            .map_err(|e| format!("{e} (the address of {})", h.ctx)),
        };
        match result {
            Ok(()) => true,
            Err(e) => {
                errs.push(&span, e);
                false
            }
        }
    }
}

/// The inventory's `ssh_config` (relative to the inventory, `~/` the home;
/// `"none"`: no resolution), else `~/.ssh/config` when it exists.
fn ssh_config_file(
    errs: &mut Errors<'_>,
    root: &Tbl<'_, '_>,
    base: &Path,
    resolver: &Resolver,
) -> Option<ConfigFile> {
    if root.get("ssh_config").is_none() {
        let p = resolver.home.as_ref()?.join(".ssh/config");
        return p.is_file().then(|| ConfigFile {
            path: None,
            shown: "~/.ssh/config".into(),
        });
    }
    let v = root.str(errs, "ssh_config")?;
    let s = v.get_ref();
    if s == "none" {
        return None;
    }
    let valid = "valid: an OpenSSH client config file (relative to the inventory, ~/ for your                  home), or \"none\" to resolve no alias";
    if s.is_empty() || s.contains(['\n', '\0']) {
        errs.push(&v.span(), format!("`ssh_config` must be a path; {valid}"));
        return None;
    }
    let p = match (s.strip_prefix("~/"), &resolver.home) {
        (Some(rest), Some(home)) => home.join(rest),
        _ => local_path(base, s),
    };
    if !p.is_file() {
        errs.push(
            &v.span(),
            format!(
                "ssh_config `{}` is not a file ({}); {valid}",
                shown(s),
                p.display()
            ),
        );
        return None;
    }
    Some(ConfigFile {
        path: Some(p),
        shown: s.to_string(),
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

/// A host as it is reached: its [`machine_key`], after the jump chain that
/// reaches it (`10.0.0.5` behind two different bastions may be two
/// machines; `check` still tells one machine by its host key).
fn reach_key(host: &Host) -> String {
    let mut key = String::new();
    for hop in &host.proxy_jump {
        key.push_str(&format!(
            "{}:{} > ",
            machine_key(hop.address.as_str()),
            hop.port
        ));
    }
    key.push_str(&machine_key(host.address.as_str()));
    key
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
                            "unknown os `{}` in {}; valid: {}",
                            s.get_ref(),
                            t.ctx,
                            Os::names(", ")
                        ),
                    );
                    None
                }
            }),
        None => {
            errs.push(
                h.span,
                format!(
                    "{} has no `os`; set it here or in [defaults] ({})",
                    h.ctx,
                    Os::names(", ")
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
    let proxy_jump = match pick(h, d, "proxy_jump") {
        Some(t) => match t.str(errs, "proxy_jump") {
            Some(v) => match parse_proxy_jump(v.get_ref()) {
                Ok(hops) => {
                    let own = address.as_ref().map(|a| machine_key(a.as_str())).zip(port);
                    match hops.iter().position(|hop| {
                        own.as_ref() == Some(&(machine_key(hop.address.as_str()), hop.port))
                    }) {
                        Some(i) => {
                            errs.push(
                                &v.span(),
                                format!(
                                    "`proxy_jump` of {} names the host itself (hop {} `{}`); a host \
                                     cannot be its own jump host; valid: other hosts, or \"none\" \
                                     for a host that inherits proxy_jump from [defaults] but is \
                                     reached directly (the bastion itself)",
                                    h.ctx,
                                    i + 1,
                                    hops[i]
                                ),
                            );
                            None
                        }
                        None => Some(hops),
                    }
                }
                Err(e) => {
                    errs.push(&v.span(), e.0);
                    None
                }
            },
            None => None,
        },
        None => Some(Vec::new()),
    };
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
        proxy_jump: proxy_jump?,
        ssh_sources: BTreeMap::new(),
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
