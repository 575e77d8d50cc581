//! Running `ssh -G` for an alias, with and without the configuration, and
//! reading what the configuration set.
use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::config::values::shown;

/// How long one `ssh -G` may take (`Match exec` runs a command).
pub const TIMEOUT: Duration = Duration::from_secs(5);

/// Hosts resolved at once (each runs two short `ssh -G` processes).
const PARALLEL: usize = 8;

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
    /// A ProxyJump chain that cannot be followed: a loop, too deep, a hop
    /// that does not resolve.
    Jump(String),
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
                "`ssh -G` did not finish within {seconds} s (a `Match exec` command that hangs?); \
                 it and every command it started were ended"
            ),
            SshConfigError::Failed(m) => write!(f, "`ssh -G` failed: {m}"),
            SshConfigError::Jump(m) => f.write_str(m),
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
    /// `proxy_jump` followed hop by hop, as OpenSSH does (see
    /// [`Resolver::jump_chain`]); `None` without a ProxyJump.
    pub jump_chain: Option<Result<Vec<ResolvedHop>, String>>,
}

/// One jump hop resolved through the configuration: what `ssh -G` gives
/// for it with the user and port its ProxyJump entry names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolvedHop {
    /// The entry as the ProxyJump writes it (`jump_a`, `ops@gw:2200`).
    pub written: String,
    /// The alias (the entry's host part) and whose ProxyJump named it.
    pub alias: String,
    pub named_by: String,
    /// The user and port the entry names itself (`-l`, `-p` for ssh).
    pub written_user: Option<String>,
    pub written_port: Option<u16>,
    /// The final values, as ssh would connect (`hostname`, `user`, `port`).
    pub hostname: String,
    pub user: String,
    pub port: String,
    /// What the configuration set for the hop (differences from defaults).
    pub set: Resolved,
}

impl Resolved {
    /// Whether the configuration set anything fsmatrix takes or warns about.
    pub fn is_empty(&self) -> bool {
        let Resolved {
            alias: _,
            default_identity_files: _,
            local_user: _,
            jump_chain: _,
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
        jump_chain: None,
    }
}

/// Whether `host` (a ProxyJump entry's host) may reach ssh: an IP address
/// or a plain alias ([`validate_alias`]).
fn validate_hop_host(host: &str) -> Result<(), SshConfigError> {
    if host.parse::<std::net::IpAddr>().is_ok() {
        return Ok(());
    }
    validate_alias(host)
}

impl Resolver {
    /// Run `ssh -G [ARGS] -- ALIAS` within the bound; its stdout.
    ///
    /// `ssh -G` evaluates `Match exec`: the command runs, and may hang or
    /// leave a child behind (`sleep 30 &`).  So ssh runs in a process group
    /// of its own, and that whole group is ended once ssh has exited and its
    /// output is read, or at the bound, whichever comes first: nothing that
    /// ssh -G started outlives the resolution.  ssh is reaped only after the
    /// group is killed, so its PID (the group's id) cannot have been reused.
    fn run_g(&self, config: &[&std::ffi::OsStr], alias: &str) -> Result<String, SshConfigError> {
        let mut cmd = Command::new(&self.ssh);
        cmd.arg("-G")
            .args(config)
            .arg("--")
            .arg(alias)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        let mut child = cmd.spawn().map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => SshConfigError::Missing {
                program: self.ssh.display().to_string(),
            },
            _ => SshConfigError::Failed(format!("cannot start {}: {e}", self.ssh.display())),
        })?;
        let pid = child.id();
        // Read both pipes on their own threads so a full pipe cannot stall
        // ssh; a `Match exec` child left running holds stderr open, so they
        // are waited for only up to the bound.
        let (tx, rx) = mpsc::channel::<(bool, String)>();
        let pipe = |is_out: bool, r: Option<Box<dyn Read + Send>>| {
            let tx = tx.clone();
            std::thread::spawn(move || {
                let mut s = String::new();
                if let Some(mut r) = r {
                    let _ = r.read_to_string(&mut s);
                }
                let _ = tx.send((is_out, s));
            });
        };
        pipe(true, child.stdout.take().map(|r| Box::new(r) as _));
        pipe(false, child.stderr.take().map(|r| Box::new(r) as _));
        drop(tx);
        let deadline = Instant::now() + self.timeout;
        let exited = loop {
            match exited_unreaped(pid) {
                Ok(true) => break true,
                Ok(false) if Instant::now() >= deadline => break false,
                Ok(false) => std::thread::sleep(Duration::from_millis(2)),
                Err(e) => {
                    kill_group(pid);
                    let _ = child.wait();
                    return Err(SshConfigError::Failed(e.to_string()));
                }
            }
        };
        let mut output = exited.then(|| collect(&rx, deadline)).flatten();
        kill_group(pid);
        let status = child.wait();
        let timeout = SshConfigError::Timeout {
            seconds: self.timeout.as_secs(),
        };
        if !exited {
            return Err(timeout);
        }
        if output.is_none() {
            // The pipes were held to the bound by what the kill just ended.
            output = collect(&rx, Instant::now() + Duration::from_millis(500));
        }
        let (Some((stdout, stderr)), Ok(status)) = (output, status) else {
            return Err(timeout);
        };
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

    /// Resolve `alias` through `config`: what the configuration set, with
    /// its ProxyJump followed hop by hop.
    pub fn resolve(&self, config: &ConfigFile, alias: &str) -> Result<Resolved, SshConfigError> {
        validate_alias(alias)?;
        let (mut r, _) = self.resolve_as(config, alias, None, None)?;
        if let Some(pj) = r.proxy_jump.clone() {
            let mut stack = vec![alias.to_ascii_lowercase()];
            let mut out = Vec::new();
            r.jump_chain = Some(
                self.jump_chain(config, alias, &pj, &mut stack, &mut out)
                    .map(|()| out)
                    .map_err(|e| e.to_string()),
            );
        }
        Ok(r)
    }

    /// `ssh -G [-F FILE] [-l USER] [-p PORT] -- ALIAS` and the same with
    /// `-F /dev/null`: what the configuration set, and the full dump.
    fn resolve_as(
        &self,
        config: &ConfigFile,
        alias: &str,
        user: Option<&str>,
        port: Option<u16>,
    ) -> Result<(Resolved, Dump), SshConfigError> {
        let port_s = port.map(|p| p.to_string());
        use std::ffi::OsStr;
        let mut extra: Vec<&OsStr> = Vec::new();
        if let Some(u) = user {
            extra.extend([OsStr::new("-l"), OsStr::new(u)]);
        }
        if let Some(p) = &port_s {
            extra.extend([OsStr::new("-p"), OsStr::new(p)]);
        }
        let mut with_args: Vec<&std::ffi::OsStr> = match &config.path {
            Some(p) => vec!["-F".as_ref(), p.as_os_str()],
            None => Vec::new(),
        };
        with_args.extend(&extra);
        let mut without_args: Vec<&std::ffi::OsStr> = vec!["-F".as_ref(), "/dev/null".as_ref()];
        without_args.extend(&extra);
        let with = parse_dump(&self.run_g(&with_args, alias)?);
        let without = parse_dump(&self.run_g(&without_args, alias)?);
        Ok((diff(alias, &with, &without), with))
    }

    /// Follow the ProxyJump `pj` that `named_by` has, as OpenSSH does: ssh
    /// connects to the last entry with `-J` the entries before it (which
    /// overrides that host's own ProxyJump), so only the first entry's own
    /// ProxyJump is followed, recursively, before it.  Each entry is
    /// resolved through the same configuration with the user and port it
    /// names.  `stack`: the aliases being followed (a loop is an error
    /// naming it); at most [`MAX_JUMP_HOPS`] hops in all.
    ///
    /// [`MAX_JUMP_HOPS`]: crate::config::inventory::MAX_JUMP_HOPS
    pub fn jump_chain(
        &self,
        config: &ConfigFile,
        named_by: &str,
        pj: &str,
        stack: &mut Vec<String>,
        out: &mut Vec<ResolvedHop>,
    ) -> Result<(), SshConfigError> {
        use crate::config::inventory::{split_proxy_jump, MAX_JUMP_HOPS};
        let hops = split_proxy_jump(pj).map_err(|e| {
            SshConfigError::Jump(format!(
                "ssh config {} sets ProxyJump for `{named_by}`: {e}",
                config.shown
            ))
        })?;
        for (i, (user, host, port)) in hops.into_iter().enumerate() {
            let written = pj.split(',').nth(i).unwrap_or(host).to_string();
            validate_hop_host(host).map_err(|e| {
                SshConfigError::Jump(format!(
                    "ProxyJump of `{named_by}` in ssh config {}, hop `{}`: {e}",
                    config.shown,
                    shown(&written)
                ))
            })?;
            let key = host.to_ascii_lowercase();
            if stack.contains(&key) {
                let mut path = stack.clone();
                path.push(key);
                return Err(SshConfigError::Jump(format!(
                    "ssh config {} has a ProxyJump loop: {} (each reaches the next through its \
                     ProxyJump); OpenSSH would start ssh over and over; break the loop, e.g. \
                     with `ProxyJump none` in the jump host's own Host block",
                    config.shown,
                    path.join(" → ")
                )));
            }
            let (set, full) =
                self.resolve_as(config, host, user.as_ref().map(|u| u.as_str()), port)?;
            if i == 0 {
                if let Some(inner) = set.proxy_jump.clone() {
                    if stack.len() >= MAX_JUMP_HOPS {
                        return Err(SshConfigError::Jump(format!(
                            "ssh config {}: the ProxyJump chain of `{}` is more than \
                             {MAX_JUMP_HOPS} jump hosts deep ({} → {host})",
                            config.shown,
                            stack[0],
                            stack.join(" → ")
                        )));
                    }
                    stack.push(key);
                    let r = self.jump_chain(config, host, &inner, stack, out);
                    stack.pop();
                    r?;
                }
            }
            let value = |k: &str| {
                full.get(k)
                    .and_then(|v| v.first().cloned())
                    .unwrap_or_default()
            };
            out.push(ResolvedHop {
                written,
                alias: host.to_string(),
                named_by: named_by.to_string(),
                written_user: user.map(|u| u.to_string()),
                written_port: port,
                hostname: value("hostname"),
                user: value("user"),
                port: value("port"),
                set,
            });
            if out.len() > MAX_JUMP_HOPS {
                return Err(SshConfigError::Jump(format!(
                    "ssh config {}: the ProxyJump chain of `{}` has more than {MAX_JUMP_HOPS} \
                     jump hosts ({})",
                    config.shown,
                    stack[0],
                    out.iter()
                        .map(|h| h.alias.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
        }
        Ok(())
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

/// Both pipes' text (stdout, stderr) once both have ended, or `None` at
/// `deadline`.
fn collect(rx: &mpsc::Receiver<(bool, String)>, deadline: Instant) -> Option<(String, String)> {
    let (mut out, mut err) = (None, None);
    while out.is_none() || err.is_none() {
        let left = deadline.checked_duration_since(Instant::now())?;
        match rx.recv_timeout(left) {
            Ok((true, s)) => out = Some(s),
            Ok((false, s)) => err = Some(s),
            Err(_) => return None,
        }
    }
    Some((out.unwrap_or_default(), err.unwrap_or_default()))
}

/// Whether the process `pid` has exited, without reaping it: until it is
/// reaped its PID stays taken, and with it the id of the group it leads.
fn exited_unreaped(pid: u32) -> std::io::Result<bool> {
    // SAFETY: waitid writes into the zeroed siginfo_t it is given; WNOWAIT
    // leaves the child waitable, so `Child::wait` still reaps it.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    let r = unsafe {
        libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: after a successful waitid, si_pid is 0 when no child changed
    // state and the child's PID when it exited.
    Ok(unsafe { info.si_pid() } != 0)
}

/// SIGKILL to every process of the group `pgid` (ssh -G and what its
/// `Match exec` commands started).  An empty group is no error.
fn kill_group(pgid: u32) {
    // SAFETY: kill has no memory effects; the negative id names the group
    // that ssh leads and that is still reserved (ssh is not yet reaped).
    unsafe {
        libc::kill(-(pgid as libc::pid_t), libc::SIGKILL);
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::super::test_support::*;
    use super::*;

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

    /// Whether process `pid` is gone (a zombie left for init to reap counts
    /// as gone: it runs nothing), waiting up to 3 s for the kill to land.
    fn gone(pid: &str) -> bool {
        let t0 = Instant::now();
        loop {
            let state = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| s.rsplit_once(") ").map(|(_, r)| r.chars().next()));
            if matches!(state, None | Some(Some('Z' | 'X'))) {
                return true;
            }
            if t0.elapsed() > Duration::from_secs(3) {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The PID a `Match exec` command wrote, waiting for it to be written.
    fn pid_in(file: &Path) -> String {
        let t0 = Instant::now();
        loop {
            let s = std::fs::read_to_string(file).unwrap_or_default();
            if s.ends_with('\n') {
                return s.trim().to_string();
            }
            assert!(t0.elapsed() < Duration::from_secs(5), "no pid in {file:?}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn a_timed_out_ssh_g_takes_its_match_exec_children_with_it() {
        let t = Tmp::new("hang-group");
        let pidfile = t.0.join("pid");
        let cfg = t.write(
            "cfg",
            &format!(
                "Match exec \"sleep 30 & echo $! > '{}'; wait\"\n  User late\n",
                pidfile.display()
            ),
        );
        if !have_ssh() {
            return;
        }
        let r = Resolver {
            timeout: Duration::from_millis(1000),
            ..resolver(&t.0)
        };
        let t0 = Instant::now();
        let e = r.resolve(&named(&cfg), "db1").unwrap_err();
        assert!(matches!(e, SshConfigError::Timeout { .. }), "{e:?}");
        assert!(e.to_string().contains("every command it started"), "{e}");
        assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
        let pid = pid_in(&pidfile);
        assert!(
            gone(&pid),
            "the Match exec child `sleep 30` ({pid}) outlived the bound"
        );
    }

    #[test]
    fn a_match_exec_child_left_in_the_background_ends_with_the_resolution() {
        let t = Tmp::new("leftover");
        let pidfile = t.0.join("pid");
        // Its output away from ssh's pipes: ssh -G exits at once, the sleep
        // would run on.
        let cfg = t.write(
            "cfg",
            &format!(
                "Match exec \"sleep 30 >/dev/null 2>&1 & echo $! > '{}'\"\n  User early\n",
                pidfile.display()
            ),
        );
        if !have_ssh() {
            return;
        }
        let got = resolver(&t.0).resolve(&named(&cfg), "db1").unwrap();
        assert_eq!(got.user.as_deref(), Some("early"));
        let pid = pid_in(&pidfile);
        assert!(
            gone(&pid),
            "the Match exec child `sleep 30` ({pid}) outlived ssh -G"
        );
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
        let home = ssh_home();
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
}
