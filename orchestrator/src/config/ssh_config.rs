//! An inventory host's `address` may be an alias of the user's OpenSSH
//! client configuration (`~/.ssh/config`, or the file the inventory names
//! with `ssh_config = PATH`, as `ssh -F` does).  The alias is resolved by
//! OpenSSH itself: fsmatrix runs `ssh -G [-F FILE] -- ALIAS`, which prints
//! the configuration after evaluating `Include`, `Host` patterns (wildcards,
//! `!` negation), `Match` blocks and first-value-wins, and exits without
//! connecting.  Note that `ssh -G` evaluates `Match exec` too: the command
//! runs, as it would for `ssh ALIAS`.
//!
//! To tell what the configuration set from OpenSSH's defaults, the alias is
//! resolved a second time with `-F /dev/null` and the two are compared: a
//! value equal to the default reads as "default" (harmless: it is the same
//! value).  Without `ssh_config` in the inventory, `ssh` runs without `-F`,
//! exactly as `ssh ALIAS` would, so /etc/ssh/ssh_config counts too.
//!
//! Values taken: HostName, User, Port, IdentityFile, IdentitiesOnly,
//! UserKnownHostsFile, ProxyJump.  Inventory keys (a host's own or
//! `[defaults]`) win.  A configuration that weakens host-key checking
//! (`StrictHostKeyChecking no|accept-new`, `UserKnownHostsFile /dev/null`)
//! is ignored with a warning: fsmatrix's checking stays strict.
//!
//! Measured (OpenSSH 9.2p1, this machine, 2 cores): one `ssh -G` takes
//! about 5-10 ms; hosts are resolved 8 at a time, two processes each (32
//! aliases: about 0.25 s).
//!
//! Why not a config crate: ssh2-config (read in its source, not run) gets
//! wildcards, `!` negation and first-value-wins right, but has no `Match`
//! (the lines under it merge into the Host block before), merges an
//! `Include`d file by the including block's pattern rather than by the
//! alias and resolves a relative Include against the current folder (not
//! ~/.ssh), keeps only one block's IdentityFile lines, expands no `%`
//! tokens and does not read IdentitiesOnly, UserKnownHostsFile or
//! StrictHostKeyChecking.  russh-config has no Include and no Match.
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::inventory::{parse_proxy_jump, Auth, Host};
use super::values::{shown, Address, UserName};

/// How long one `ssh -G` may take (`Match exec` runs a command).
pub const TIMEOUT: Duration = Duration::from_secs(5);

/// Hosts resolved at once (each runs two short `ssh -G` processes).
const PARALLEL: usize = 8;

/// A value of a host and where it came from, as `plan` and `check` show it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sourced {
    pub value: String,
    /// "inventory", "default", or "ssh config FILE: Keyword".
    pub from: String,
}

/// How `ssh -G` is run; the program and home are injectable for tests.
#[derive(Clone, Debug)]
pub struct Resolver {
    /// The ssh program (`ssh`, looked up in PATH).
    pub ssh: PathBuf,
    pub timeout: Duration,
    /// The local user's home: where `~/.ssh/config` is looked for, and what
    /// `~` and `%d` in an IdentityFile stand for.
    pub home: Option<PathBuf>,
}

impl Resolver {
    pub fn from_env() -> Resolver {
        Resolver {
            ssh: PathBuf::from("ssh"),
            timeout: TIMEOUT,
            home: std::env::var_os("HOME").map(PathBuf::from),
        }
    }
}

/// Which configuration an inventory resolves its aliases through.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigFile {
    /// Passed as `-F`; `None`: ssh's own default (~/.ssh/config and the
    /// system file), exactly as `ssh ALIAS` reads them.
    pub path: Option<PathBuf>,
    /// As shown to the user (`~/.ssh/config`, or as the inventory wrote it).
    pub shown: String,
}

/// Why an alias could not be resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SshConfigError {
    /// The alias would not reach ssh as a host name.
    BadAlias(String),
    /// No ssh program.
    Missing {
        program: String,
    },
    Timeout {
        seconds: u64,
    },
    /// ssh -G failed (its stderr).
    Failed(String),
}

impl std::fmt::Display for SshConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SshConfigError::BadAlias(m) => f.write_str(m),
            SshConfigError::Missing { program } => write!(
                f,
                "`{program}` was not found to run `ssh -G`; install openssh-client, or give \
                 address/port/user in the inventory and set ssh_config = \"none\""
            ),
            SshConfigError::Timeout { seconds } => write!(
                f,
                "`ssh -G` did not finish within {seconds} s (a `Match exec` command that hangs?)"
            ),
            SshConfigError::Failed(m) => write!(f, "`ssh -G` failed: {m}"),
        }
    }
}

/// An alias may reach ssh only as a plain host name: ASCII letters, digits,
/// `.`, `_`, `-`, not starting with `-` or `.` (no option, no whitespace, no
/// control character, no `%` token, no `@` user).
pub fn validate_alias(s: &str) -> Result<(), SshConfigError> {
    let bad = |why: &str| {
        Err(SshConfigError::BadAlias(format!(
            "address `{}` cannot be passed to ssh as an alias: {why}; valid: ASCII letters, \
             digits, . _ - not starting with - or . (e.g. db-metal-1)",
            shown(s)
        )))
    };
    if s.is_empty() || s.len() > 253 {
        return bad("it is empty or longer than 253 characters");
    }
    if s.starts_with(['-', '.']) {
        return bad("it starts with - or .");
    }
    if let Some(c) = s
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return bad(&format!("it contains {c:?}"));
    }
    Ok(())
}

/// `ssh -G` output: lowercase keyword → its values, one per line printed
/// (identityfile is printed once per file).
pub type Dump = BTreeMap<String, Vec<String>>;

pub fn parse_dump(text: &str) -> Dump {
    let mut d = Dump::new();
    for line in text.lines() {
        let (k, v) = line.split_once(' ').unwrap_or((line, ""));
        if k.is_empty() {
            continue;
        }
        d.entry(k.to_ascii_lowercase())
            .or_default()
            .push(v.to_string());
    }
    d
}

/// What the configuration set for one alias, as far as it differs from
/// OpenSSH's defaults.  Values are as `ssh -G` prints them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resolved {
    pub alias: String,
    pub hostname: Option<String>,
    pub user: Option<String>,
    pub port: Option<String>,
    /// Unexpanded (`~`, `%d`, `%h`, … as written).
    pub identity_files: Vec<String>,
    /// OpenSSH's default key files (used with `IdentitiesOnly yes` alone).
    pub default_identity_files: Vec<String>,
    pub identities_only: Option<bool>,
    /// Expanded by ssh; space-separated in its output.
    pub user_known_hosts: Option<Vec<String>>,
    /// Raw, as `ssh -G` prints it.
    pub proxy_jump: Option<String>,
    /// `false`, `accept-new` (or `true`, `ask`) when set.
    pub strict_host_key_checking: Option<String>,
    pub proxy_command: Option<String>,
    pub host_key_alias: Option<String>,
    /// The local user name (ssh's default `User`), for `%u`.
    pub local_user: Option<String>,
}

impl Resolved {
    /// Whether the configuration set anything fsmatrix takes or warns about.
    pub fn is_empty(&self) -> bool {
        let Resolved {
            alias: _,
            default_identity_files: _,
            local_user: _,
            hostname,
            user,
            port,
            identity_files,
            identities_only,
            user_known_hosts,
            proxy_jump,
            strict_host_key_checking,
            proxy_command,
            host_key_alias,
        } = self;
        hostname.is_none()
            && user.is_none()
            && port.is_none()
            && identity_files.is_empty()
            && identities_only.is_none()
            && user_known_hosts.is_none()
            && proxy_jump.is_none()
            && strict_host_key_checking.is_none()
            && proxy_command.is_none()
            && host_key_alias.is_none()
    }
}

/// The values of `set` that differ from `default` (`ssh -G -F /dev/null`).
pub fn diff(alias: &str, set: &Dump, default: &Dump) -> Resolved {
    let changed = |k: &str| -> Option<&Vec<String>> {
        let s = set.get(k)?;
        (default.get(k) != Some(s)).then_some(s)
    };
    let one = |k: &str| changed(k).and_then(|v| v.first().cloned());
    let first = |d: &Dump, k: &str| d.get(k).and_then(|v| v.first().cloned());
    Resolved {
        alias: alias.to_string(),
        hostname: one("hostname"),
        user: one("user"),
        port: one("port"),
        identity_files: changed("identityfile").cloned().unwrap_or_default(),
        default_identity_files: default.get("identityfile").cloned().unwrap_or_default(),
        identities_only: one("identitiesonly").map(|v| v == "yes" || v == "true"),
        user_known_hosts: one("userknownhostsfile")
            .map(|v| v.split_whitespace().map(str::to_string).collect()),
        proxy_jump: one("proxyjump").filter(|v| v != "none"),
        strict_host_key_checking: one("stricthostkeychecking"),
        proxy_command: one("proxycommand").filter(|v| v != "none"),
        host_key_alias: one("hostkeyalias").filter(|v| v != "none"),
        local_user: first(default, "user"),
    }
}

impl Resolver {
    /// Run `ssh -G [ARGS] -- ALIAS` with a timeout; its stdout.
    fn run_g(&self, config: &[&std::ffi::OsStr], alias: &str) -> Result<String, SshConfigError> {
        let mut cmd = Command::new(&self.ssh);
        cmd.arg("-G")
            .args(config)
            .arg("--")
            .arg(alias)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => SshConfigError::Missing {
                program: self.ssh.display().to_string(),
            },
            _ => SshConfigError::Failed(format!("cannot start {}: {e}", self.ssh.display())),
        })?;
        // Read both pipes on their own threads so a full pipe cannot stall ssh.
        let pipe = |r: Option<Box<dyn Read + Send>>| {
            std::thread::spawn(move || {
                let mut s = String::new();
                if let Some(mut r) = r {
                    let _ = r.read_to_string(&mut s);
                }
                s
            })
        };
        let out = pipe(child.stdout.take().map(|r| Box::new(r) as _));
        let err = pipe(child.stderr.take().map(|r| Box::new(r) as _));
        let deadline = Instant::now() + self.timeout;
        let status = loop {
            match child.try_wait() {
                Ok(Some(st)) => break st,
                Ok(None) if Instant::now() >= deadline => {
                    let _ = child.kill();
                    let _ = child.wait();
                    // The reader threads are left: a `Match exec` grandchild
                    // may still hold the pipes.
                    return Err(SshConfigError::Timeout {
                        seconds: self.timeout.as_secs(),
                    });
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(2)),
                Err(e) => return Err(SshConfigError::Failed(e.to_string())),
            }
        };
        let stdout = out.join().unwrap_or_default();
        let stderr = err.join().unwrap_or_default();
        if !status.success() || stdout.is_empty() {
            let msg: Vec<&str> = stderr
                .lines()
                .filter(|l| !l.starts_with("Pseudo-terminal will not be allocated"))
                .collect();
            return Err(SshConfigError::Failed(format!(
                "{} ({status})",
                msg.join("; ").trim()
            )));
        }
        Ok(stdout)
    }

    /// Resolve `alias` through `config`: what the configuration set.
    pub fn resolve(&self, config: &ConfigFile, alias: &str) -> Result<Resolved, SshConfigError> {
        validate_alias(alias)?;
        let with = match &config.path {
            Some(p) => self.run_g(&["-F".as_ref(), p.as_os_str()], alias)?,
            None => self.run_g(&[], alias)?,
        };
        let without = self.run_g(&["-F".as_ref(), "/dev/null".as_ref()], alias)?;
        Ok(diff(alias, &parse_dump(&with), &parse_dump(&without)))
    }

    /// Resolve many aliases, a few at a time; results in input order.
    pub fn resolve_all(
        &self,
        config: &ConfigFile,
        aliases: &[String],
    ) -> Vec<Result<Resolved, SshConfigError>> {
        let mut all = Vec::with_capacity(aliases.len());
        for chunk in aliases.chunks(PARALLEL) {
            std::thread::scope(|s| {
                let hs: Vec<_> = chunk
                    .iter()
                    .map(|a| s.spawn(move || self.resolve(config, a)))
                    .collect();
                for h in hs {
                    all.push(h.join().unwrap_or_else(|_| {
                        Err(SshConfigError::Failed(
                            "the resolver thread panicked".into(),
                        ))
                    }));
                }
            });
        }
        all
    }
}

/// Which connection keys the inventory set for a host (its own or
/// `[defaults]`): those the configuration does not override.
#[derive(Clone, Copy, Debug, Default)]
pub struct InventorySet {
    pub port: bool,
    pub user: bool,
    /// `identity_file` or `agent`.
    pub auth: bool,
    pub known_hosts: bool,
    pub proxy_jump: bool,
}

/// The tokens OpenSSH expands in IdentityFile that fsmatrix can know:
/// `%%`, `%d` (home), `%h` (HostName), `%n` (alias), `%p`, `%r` (remote
/// user), `%u` (local user); a leading `~/` is the home.  Others are refused.
pub fn expand_identity(
    raw: &str,
    home: Option<&Path>,
    tokens: &[(char, &str)],
) -> Result<PathBuf, String> {
    let home_s = home.map(|h| h.display().to_string());
    let mut out = String::new();
    let mut it = raw.chars();
    while let Some(c) = it.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match it.next() {
            Some('%') => out.push('%'),
            Some('d') => match &home_s {
                Some(h) => out.push_str(h),
                None => return Err(format!("IdentityFile `{raw}` uses %d but HOME is not set")),
            },
            Some(t) => match tokens.iter().find(|(k, _)| *k == t) {
                Some((_, v)) => out.push_str(v),
                None => {
                    return Err(format!(
                        "IdentityFile `{raw}` uses %{t}, which fsmatrix does not expand; valid \
                         tokens: %% %d %h %n %p %r %u, or give identity_file in the inventory"
                    ))
                }
            },
            None => return Err(format!("IdentityFile `{raw}` ends in a lone %")),
        }
    }
    if out.is_empty() || out.contains(['\n', '\0']) {
        return Err(format!(
            "IdentityFile `{}` is not a usable path",
            shown(raw)
        ));
    }
    let p = PathBuf::from(&out);
    Ok(match (out.strip_prefix("~/"), home) {
        (Some(rest), Some(h)) => h.join(rest),
        _ if out == "~" => home.map(Path::to_path_buf).unwrap_or(p),
        // Relative to where ssh would run: the current folder.
        _ if p.is_relative() && !out.starts_with('~') => {
            std::env::current_dir().map(|d| d.join(&p)).unwrap_or(p)
        }
        _ => p,
    })
}

/// Fill the fields of `host` that the inventory did not set from what the
/// configuration resolved; record where each value came from; push warnings
/// for what is ignored.  `Err`: a resolved value fsmatrix refuses.
pub fn apply(
    host: &mut Host,
    set: InventorySet,
    r: &Resolved,
    config: &ConfigFile,
    home: Option<&Path>,
    warnings: &mut Vec<String>,
) -> Result<(), String> {
    let name = host.name.to_string();
    let cfg = |kw: &str| format!("ssh config {}: {kw}", config.shown);
    let mut warn = |w: String| warnings.push(format!("{name}: {w}"));
    let mut src: BTreeMap<String, Sourced> = BTreeMap::new();
    let mut from_config = false;
    let sourced = |value: String, from: String| Sourced { value, from };

    // HostName: the inventory's address is the alias; it always "sets" it.
    let address_from = match &r.hostname {
        Some(hn) => {
            host.address = Address::new(hn).map_err(|e| {
                format!(
                    "ssh config {} resolves `{}` to HostName `{}`: {e}",
                    config.shown,
                    r.alias,
                    shown(hn)
                )
            })?;
            from_config = true;
            format!("{} (alias {})", cfg("HostName"), r.alias)
        }
        None => "inventory".into(),
    };
    src.insert(
        "address".into(),
        sourced(host.address.to_string(), address_from),
    );

    let user_from = match (&r.user, set.user) {
        (_, true) => "inventory".to_string(),
        (Some(u), false) => {
            host.user = UserName::new(u).map_err(|e| {
                format!(
                    "ssh config {} sets User `{}` for `{}`: {e}",
                    config.shown,
                    shown(u),
                    r.alias
                )
            })?;
            from_config = true;
            cfg("User")
        }
        (None, false) => "default".into(),
    };
    src.insert("user".into(), sourced(host.user.to_string(), user_from));

    let port_from = match (&r.port, set.port) {
        (_, true) => "inventory".to_string(),
        (Some(p), false) => {
            host.port =
                p.parse::<u16>().ok().filter(|p| *p > 0).ok_or_else(|| {
                    format!("ssh config {} sets Port `{}`", config.shown, shown(p))
                })?;
            from_config = true;
            cfg("Port")
        }
        (None, false) => "default".into(),
    };
    src.insert("port".into(), sourced(host.port.to_string(), port_from));

    if let Some(only) = r.identities_only {
        src.insert(
            "identities_only".into(),
            sourced(
                if only { "yes" } else { "no" }.into(),
                cfg("IdentitiesOnly"),
            ),
        );
        from_config = true;
    }
    // IdentityFile: fsmatrix authenticates with one key file or the agent.
    let (candidates, kw) = if !r.identity_files.is_empty() {
        (&r.identity_files, "IdentityFile")
    } else if r.identities_only == Some(true) {
        (
            &r.default_identity_files,
            "IdentitiesOnly with the default IdentityFile",
        )
    } else {
        (&Vec::new(), "")
    };
    if !candidates.is_empty() && !set.auth {
        let port = host.port.to_string();
        let tokens = [
            ('h', host.address.as_str()),
            ('n', r.alias.as_str()),
            ('p', port.as_str()),
            ('r', host.user.as_str()),
            ('u', r.local_user.as_deref().unwrap_or("")),
        ];
        let paths = candidates
            .iter()
            .map(|c| expand_identity(c, home, &tokens))
            .collect::<Result<Vec<_>, _>>()?;
        // Explicit files: the first that exists, else the first (an error
        // at connect names it).  Defaults: only one that exists.
        let explicit = !r.identity_files.is_empty();
        let pick = paths
            .iter()
            .find(|p| p.exists())
            .or(paths.first().filter(|_| explicit));
        if let Some(p) = pick {
            let mut from = cfg(kw);
            if paths.len() > 1 {
                from.push_str(&format!(", the first that exists of {}", paths.len()));
            }
            src.insert(
                "identity_file".into(),
                sourced(p.display().to_string(), from),
            );
            host.auth = Auth::IdentityFile(p.clone());
            from_config = true;
        }
    }

    if let Some(files) = &r.user_known_hosts {
        if files.iter().any(|f| f == "/dev/null") {
            warn(format!(
                "ssh config {} sets UserKnownHostsFile /dev/null for `{}`; ignored: fsmatrix's \
                 host-key checking stays strict ({})",
                config.shown,
                r.alias,
                host.known_hosts.display()
            ));
        } else if !set.known_hosts {
            if let Some(first) = files.first() {
                host.known_hosts = PathBuf::from(first);
                let mut from = cfg("UserKnownHostsFile");
                if files.len() > 1 {
                    from.push_str(&format!(", the first of {}", files.len()));
                }
                src.insert("known_hosts".into(), sourced(first.clone(), from));
                from_config = true;
            }
        }
    }
    if let Some(s) = &r.strict_host_key_checking {
        if s == "false" || s == "accept-new" {
            let shown_v = if s == "false" { "no" } else { s.as_str() };
            warn(format!(
                "ssh config {} sets StrictHostKeyChecking {shown_v} for `{}`; ignored: fsmatrix's \
                 host-key checking stays strict (an unknown or changed host key is an error)",
                config.shown, r.alias
            ));
        }
    }
    if let Some(pc) = &r.proxy_command {
        warn(format!(
            "ssh config {} sets ProxyCommand `{}` for `{}`; ignored: fsmatrix connects directly \
             (use ProxyJump)",
            config.shown,
            shown(pc),
            r.alias
        ));
    }
    if let Some(a) = &r.host_key_alias {
        warn(format!(
            "ssh config {} sets HostKeyAlias `{}` for `{}`; ignored: fsmatrix checks the host key \
             under the address {}",
            config.shown,
            shown(a),
            r.alias,
            host.address
        ));
    }
    if let Some(pj) = &r.proxy_jump {
        if !set.proxy_jump {
            // Each hop is taken as written: its own Host blocks are not
            // applied (OpenSSH would resolve each hop as its own alias).
            host.proxy_jump = parse_proxy_jump(pj).map_err(|e| {
                format!(
                    "ssh config {} sets ProxyJump for `{}`: {e}",
                    config.shown, r.alias
                )
            })?;
            src.insert("proxy_jump".into(), sourced(pj.clone(), cfg("ProxyJump")));
            from_config = true;
        }
    }
    if from_config {
        host.ssh_sources = src;
    }
    Ok(())
}

/// One line per host whose values came from an ssh config:
/// `lab1: address 10.0.1.5 (ssh config ~/.ssh/config: HostName (alias db1)), user bench (…), port 22 (default)`.
pub fn provenance_lines(hosts: &[Host]) -> Vec<String> {
    const ORDER: &[&str] = &[
        "address",
        "user",
        "port",
        "identity_file",
        "identities_only",
        "known_hosts",
        "proxy_jump",
    ];
    hosts
        .iter()
        .filter(|h| !h.ssh_sources.is_empty())
        .map(|h| {
            let parts: Vec<String> = ORDER
                .iter()
                .filter_map(|k| {
                    h.ssh_sources
                        .get(*k)
                        .map(|s| format!("{k} {} ({})", s.value, s.from))
                })
                .collect();
            format!("{}: {}", h.name, parts.join(", "))
        })
        .collect()
}

/// What `plan` and `check` print (to stderr, so `--json` stays clean):
/// where each host's values came from when an ssh config gave some, then
/// the inventory's warnings.  Empty when there is nothing to say.
pub fn report(inv: &super::Inventory) -> String {
    let mut s = String::new();
    for l in provenance_lines(&inv.hosts) {
        s.push_str(&l);
        s.push('\n');
    }
    for w in &inv.warnings {
        s.push_str(&format!("warning: {w}\n"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Inventory;

    /// A temp folder of its own per test, removed at drop.
    struct Tmp(PathBuf);
    impl Tmp {
        fn new(tag: &str) -> Tmp {
            let p = std::env::temp_dir().join(format!(
                "fsmatrix-sshcfg-{tag}-{}-{:?}",
                std::process::id(),
                std::thread::current().id()
            ));
            let _ = std::fs::remove_dir_all(&p);
            std::fs::create_dir_all(&p).unwrap();
            Tmp(p)
        }
        fn write(&self, name: &str, text: &str) -> PathBuf {
            let p = self.0.join(name);
            std::fs::write(&p, text).unwrap();
            p
        }
    }
    impl Drop for Tmp {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn resolver(home: &Path) -> Resolver {
        Resolver {
            ssh: PathBuf::from("ssh"),
            timeout: TIMEOUT,
            home: Some(home.to_path_buf()),
        }
    }

    fn named(p: &Path) -> ConfigFile {
        ConfigFile {
            path: Some(p.to_path_buf()),
            shown: p.display().to_string(),
        }
    }

    /// The tests need a real OpenSSH client; without one they say so and pass.
    fn have_ssh() -> bool {
        let ok = Command::new("ssh")
            .arg("-V")
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            eprintln!("no ssh client: skipping a test that runs ssh -G");
        }
        ok
    }

    #[test]
    fn hostile_aliases_are_refused_before_ssh() {
        for bad in [
            "-oProxyCommand=touch /tmp/x",
            "-F/etc/passwd",
            "a b",
            "a\tb",
            "a\nb",
            "a\0b",
            "$(id)",
            "'; rm -rf / #",
            "bench@db1",
            "db%h",
            ".hidden",
            "",
            "dé1",
            "a/b",
            &"a".repeat(254),
        ] {
            assert!(
                matches!(validate_alias(bad), Err(SshConfigError::BadAlias(_))),
                "{bad:?}"
            );
            // Refused by resolve too, whatever the program.
            let r = Resolver {
                ssh: PathBuf::from("/nonexistent/ssh"),
                ..resolver(Path::new("/h"))
            };
            assert!(matches!(
                r.resolve(&named(Path::new("/dev/null")), bad),
                Err(SshConfigError::BadAlias(_))
            ));
        }
        for ok in ["db-metal-1", "db1.lab.example", "DB_2", "10.0.0.1"] {
            assert_eq!(validate_alias(ok), Ok(()), "{ok}");
        }
    }

    #[test]
    fn a_missing_ssh_program_says_what_to_install() {
        let r = Resolver {
            ssh: PathBuf::from("/nonexistent/bin/ssh"),
            ..resolver(Path::new("/h"))
        };
        let e = r
            .resolve(&named(Path::new("/dev/null")), "db1")
            .unwrap_err();
        assert!(matches!(e, SshConfigError::Missing { .. }), "{e:?}");
        let m = e.to_string();
        assert!(m.contains("install openssh-client"), "{m}");
        assert!(m.contains("/nonexistent/bin/ssh"), "{m}");
    }

    #[test]
    fn a_hanging_ssh_is_killed_at_the_timeout() {
        let t = Tmp::new("hang");
        let cfg = t.write("cfg", "Match exec \"sleep 30\"\n  User late\n");
        if !have_ssh() {
            return;
        }
        let r = Resolver {
            timeout: Duration::from_millis(300),
            ..resolver(&t.0)
        };
        let t0 = Instant::now();
        let e = r.resolve(&named(&cfg), "db1").unwrap_err();
        assert!(matches!(e, SshConfigError::Timeout { .. }), "{e:?}");
        assert!(t0.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn include_wildcards_match_and_first_value_wins() {
        let t = Tmp::new("resolve");
        // Include with an absolute path: a relative one is relative to
        // ~/.ssh for a user configuration (also with -F), /etc/ssh for the
        // system one.
        let inc = t.write(
            "lab.conf",
            "Host db-*\n  User bench\n  IdentityFile ~/.ssh/lab_%r\n",
        );
        let cfg = t.write(
            "config",
            &format!(
                "Include {}\n\
                 Host db-metal-1\n  HostName 10.0.1.5\n  User ignored-first-wins\n  Port 2222\n\
                 Host *.lab !bad.lab\n  User labuser\n\
                 Match host 10.0.1.5\n  IdentitiesOnly yes\n  ProxyJump jump@bastion:2200\n\
                 Host *\n  User star\n  UserKnownHostsFile ~/kh\n",
                inc.display()
            ),
        );
        if !have_ssh() {
            return;
        }
        let r = resolver(&t.0);
        let got = r.resolve(&named(&cfg), "db-metal-1").unwrap();
        let home = std::env::var("HOME").unwrap_or_default();
        // (what, got, want)
        let table: Vec<(&str, String, String)> = vec![
            (
                "hostname",
                format!("{:?}", got.hostname),
                "Some(\"10.0.1.5\")".into(),
            ),
            // From the Include, first: the later `User` lines lose.
            ("user", format!("{:?}", got.user), "Some(\"bench\")".into()),
            ("port", format!("{:?}", got.port), "Some(\"2222\")".into()),
            (
                "identityfile (unexpanded by ssh -G)",
                format!("{:?}", got.identity_files),
                "[\"~/.ssh/lab_%r\"]".into(),
            ),
            // Match host sees the HostName.
            (
                "identitiesonly",
                format!("{:?}", got.identities_only),
                "Some(true)".into(),
            ),
            (
                "proxyjump",
                format!("{:?}", got.proxy_jump),
                "Some(\"jump@bastion:2200\")".into(),
            ),
            // Expanded by ssh -G itself (with ssh's own home).
            (
                "userknownhostsfile",
                format!("{:?}", got.user_known_hosts),
                format!("Some([\"{home}/kh\"])"),
            ),
            (
                "stricthostkeychecking",
                format!("{:?}", got.strict_host_key_checking),
                "None".into(),
            ),
        ];
        for (what, g, w) in &table {
            assert_eq!(g, w, "{what}");
        }
        // Wildcards and negation.
        let user = |alias: &str| r.resolve(&named(&cfg), alias).unwrap().user;
        assert_eq!(user("x.lab").as_deref(), Some("labuser"));
        assert_eq!(user("bad.lab").as_deref(), Some("star"));
        assert_eq!(user("other").as_deref(), Some("star"));
        // Match host does not apply to another host.
        let other = r.resolve(&named(&cfg), "db-2").unwrap();
        assert_eq!(other.identities_only, None);
        assert_eq!(other.hostname, None);
        assert_eq!(other.user.as_deref(), Some("bench"));
    }

    /// An inventory at `dir/inv.toml` naming `ssh_config = "config"`.
    fn inventory(t: &Tmp, r: &Resolver, body: &str) -> Result<Inventory, String> {
        Inventory::parse_with(&t.0.join("inv.toml"), body.to_string(), r).map_err(|e| e.to_string())
    }

    const LAB: &str = "Include INC\n\
        Host db-metal-1\n  HostName 10.0.1.5\n  Port 2222\n  ProxyJump ops@bastion.lab:2200\n\
        Host db-loose\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n\
        Host db-*\n  UserKnownHostsFile ~/lab_known_hosts\n\
        Host db-bad\n  HostName bad_name.example\n\
        Host *\n  User star\n";

    fn lab(t: &Tmp) {
        let inc = t.write(
            "inc.conf",
            "Host db-*\n  User bench\n  IdentityFile %d/.ssh/lab_%r\n",
        );
        t.write("config", &LAB.replace("INC", &inc.display().to_string()));
    }

    #[test]
    fn an_alias_only_host_is_filled_from_the_ssh_config_with_sources() {
        let t = Tmp::new("inv-alias");
        lab(&t);
        if !have_ssh() {
            return;
        }
        let r = resolver(&t.0);
        let inv = inventory(
            &t,
            &r,
            "ssh_config = \"config\"\n[defaults]\nos = \"linux\"\ndevices = [\"/dev/vdb\"]\n\
             [[host]]\nname = \"lab1\"\naddress = \"db-metal-1\"\n\
             [[host]]\nname = \"lab2\"\naddress = \"10.0.1.6\"\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let h = &inv.hosts[0];
        let home = t.0.display();
        let table: Vec<(&str, String, String)> = vec![
            ("address", h.address.to_string(), "10.0.1.5".into()),
            ("user", h.user.to_string(), "bench".into()),
            ("port", h.port.to_string(), "2222".into()),
            (
                "auth",
                format!("{:?}", h.auth),
                format!("IdentityFile({:?})", t.0.join(".ssh/lab_bench")),
            ),
            (
                "known_hosts",
                h.known_hosts.display().to_string(),
                // Expanded by ssh with the real home, not the injected one.
                format!(
                    "{}/lab_known_hosts",
                    std::env::var("HOME").unwrap_or_default()
                ),
            ),
            (
                "proxy_jump",
                format!(
                    "{:?}",
                    h.proxy_jump
                        .iter()
                        .map(|j| j.to_string())
                        .collect::<Vec<_>>()
                ),
                "[\"ops@bastion.lab:2200\"]".into(),
            ),
        ];
        for (what, got, want) in &table {
            assert_eq!(got, want, "{what}");
        }
        let lines = provenance_lines(&inv.hosts);
        assert_eq!(lines.len(), 1, "{lines:?}: the IP host is not resolved");
        assert_eq!(
            lines[0],
            format!(
                "lab1: address 10.0.1.5 (ssh config config: HostName (alias db-metal-1)), \
                 user bench (ssh config config: User), port 2222 (ssh config config: Port), \
                 identity_file {home}/.ssh/lab_bench (ssh config config: IdentityFile), \
                 known_hosts {}/lab_known_hosts (ssh config config: UserKnownHostsFile), \
                 proxy_jump ops@bastion.lab:2200 (ssh config config: ProxyJump)",
                std::env::var("HOME").unwrap_or_default()
            )
        );
        assert!(inv.warnings.is_empty(), "{:?}", inv.warnings);
    }

    #[test]
    fn inventory_and_defaults_keys_win_over_the_ssh_config() {
        let t = Tmp::new("inv-wins");
        lab(&t);
        if !have_ssh() {
            return;
        }
        let inv = inventory(
            &t,
            &resolver(&t.0),
            "ssh_config = \"config\"\n[defaults]\nos = \"linux\"\ndevices = [\"/dev/vdb\"]\n\
             user = \"root\"\nagent = true\n\
             [[host]]\nname = \"lab1\"\naddress = \"db-metal-1\"\nport = 22\n\
             known_hosts = \"kh\"\nproxy_jump = \"none\"\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let h = &inv.hosts[0];
        assert_eq!(
            (
                h.address.as_str(),
                h.user.as_str(),
                h.port,
                &h.auth,
                h.known_hosts.clone(),
                h.proxy_jump.len()
            ),
            ("10.0.1.5", "root", 22, &Auth::Agent, t.0.join("kh"), 0)
        );
        assert_eq!(
            provenance_lines(&inv.hosts),
            [
                "lab1: address 10.0.1.5 (ssh config config: HostName (alias db-metal-1)), \
              user root (inventory), port 22 (inventory)"
            ]
        );
    }

    #[test]
    fn a_config_that_weakens_host_key_checking_is_warned_and_ignored() {
        let t = Tmp::new("inv-strict");
        lab(&t);
        if !have_ssh() {
            return;
        }
        let inv = inventory(
            &t,
            &resolver(&t.0),
            "ssh_config = \"config\"\n[defaults]\nos = \"linux\"\ndevices = [\"/dev/vdb\"]\n\
             [[host]]\nname = \"loose\"\naddress = \"db-loose\"\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            inv.hosts[0].known_hosts,
            PathBuf::from("~/.ssh/known_hosts")
        );
        assert_eq!(inv.warnings.len(), 2, "{:?}", inv.warnings);
        for (w, what) in inv
            .warnings
            .iter()
            .zip(["UserKnownHostsFile /dev/null", "StrictHostKeyChecking no"])
        {
            assert!(w.starts_with("loose: ssh config config sets "), "{w}");
            assert!(w.contains(what), "{w}");
            assert!(
                w.contains("ignored: fsmatrix's host-key checking stays strict"),
                "{w}"
            );
        }
        // What plan and check print.
        let rep = report(&inv);
        assert!(
            rep.starts_with(
                "loose: address db-loose (inventory), user bench (ssh config config: User)"
            ) && rep
                .contains("\nwarning: loose: ssh config config sets UserKnownHostsFile /dev/null"),
            "{rep}"
        );
    }

    #[test]
    fn a_resolved_host_name_goes_through_the_address_validator() {
        let t = Tmp::new("inv-badname");
        lab(&t);
        if !have_ssh() {
            return;
        }
        let e = inventory(
            &t,
            &resolver(&t.0),
            "ssh_config = \"config\"\n[[host]]\nname = \"x\"\nos = \"linux\"\naddress = \"db-bad\"\ndevices = [\"/dev/vdb\"]\n",
        )
        .unwrap_err();
        assert!(e.contains("inv.toml:5:11: error: ssh config config resolves `db-bad` to HostName `bad_name.example`: address"), "{e}");
    }

    #[test]
    fn no_ssh_runs_for_ip_addresses_or_without_a_config() {
        let t = Tmp::new("inv-nossh");
        t.write("config", "Host *\n  User star\n");
        // A program that does not exist: any attempt to run it is an error.
        let r = Resolver {
            ssh: PathBuf::from("/nonexistent/ssh"),
            ..resolver(&t.0)
        };
        let body = |cfg: &str, addr: &str| {
            format!("{cfg}[[host]]\nname = \"x\"\nos = \"linux\"\naddress = \"{addr}\"\ndevices = [\"/dev/vdb\"]\n")
        };
        for (cfg, addr) in [
            ("ssh_config = \"config\"\n", "10.0.0.1"),
            ("ssh_config = \"config\"\n", "fd00::5"),
            ("ssh_config = \"none\"\n", "db1.lab.example"),
            // No ~/.ssh/config under the injected home, none named.
            ("", "db1.lab.example"),
        ] {
            let inv =
                inventory(&t, &r, &body(cfg, addr)).unwrap_or_else(|e| panic!("{cfg}{addr}: {e}"));
            assert!(inv.hosts[0].ssh_sources.is_empty());
        }
        // With a config, an alias needs ssh: the error says what to do.
        let e = inventory(&t, &r, &body("ssh_config = \"config\"\n", "db1")).unwrap_err();
        assert!(e.contains("inv.toml:5:11: error: cannot resolve address `db1` of [[host]] `x` through ssh config config: `/nonexistent/ssh` was not found"), "{e}");
        assert!(e.contains("install openssh-client"), "{e}");
        // ~/.ssh/config under the home is the default.
        std::fs::create_dir_all(t.0.join(".ssh")).unwrap();
        t.write(".ssh/config", "Host *\n  User star\n");
        let e = inventory(&t, &r, &body("", "db1")).unwrap_err();
        assert!(e.contains("through ssh config ~/.ssh/config"), "{e}");
        // A named file that does not exist.
        let e = inventory(&t, &r, &body("ssh_config = \"nope\"\n", "db1")).unwrap_err();
        assert!(
            e.contains("inv.toml:1:14: error: ssh_config `nope` is not a file"),
            "{e}"
        );
    }

    #[test]
    fn resolving_many_hosts_is_quick() {
        let t = Tmp::new("timing");
        lab(&t);
        if !have_ssh() {
            return;
        }
        let aliases: Vec<String> = (0..32).map(|i| format!("db-{i}")).collect();
        let t0 = Instant::now();
        let all = resolver(&t.0).resolve_all(&named(&t.0.join("config")), &aliases);
        let took = t0.elapsed();
        assert!(all
            .iter()
            .all(|r| r.as_ref().is_ok_and(|r| r.user.as_deref() == Some("bench"))));
        eprintln!("resolved {} aliases in {took:?}", aliases.len());
        assert!(took < Duration::from_secs(10), "{took:?}");
    }

    #[test]
    fn parse_dump_keeps_every_identityfile_line() {
        let d = parse_dump("user bench\nidentityfile ~/.ssh/a\nidentityfile %d/b\nport 22\n");
        assert_eq!(d["identityfile"], vec!["~/.ssh/a", "%d/b"]);
        assert_eq!(d["user"], vec!["bench"]);
    }

    #[test]
    fn identity_tokens_are_expanded_or_refused() {
        let home = Path::new("/home/al");
        let tok = [
            ('h', "10.0.1.5"),
            ('n', "db1"),
            ('p', "22"),
            ('r', "bench"),
            ('u', "al"),
        ];
        for (raw, want) in [
            ("~/.ssh/id_%r", "/home/al/.ssh/id_bench"),
            ("%d/.ssh/%n-%h-%p", "/home/al/.ssh/db1-10.0.1.5-22"),
            ("/k/100%%", "/k/100%"),
            ("/k/%u", "/k/al"),
        ] {
            assert_eq!(
                expand_identity(raw, Some(home), &tok).unwrap(),
                PathBuf::from(want),
                "{raw}"
            );
        }
        for bad in ["/k/%C", "/k/%", "/k/%l"] {
            assert!(expand_identity(bad, Some(home), &tok).is_err(), "{bad}");
        }
    }
}
