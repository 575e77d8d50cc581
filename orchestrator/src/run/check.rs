//! Is a host ready for a sweep?  Upload the scripts if they are missing,
//! read the facts, run the device guard (read-only), and compare them with
//! what the inventory and the plan need.  `check` runs this on every host;
//! every sweep runs it first.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;

use super::adaptive::Counted;
use super::calls::HostPaths;
use super::error::StepError;
use super::facts::{tool_for, HostFacts, Kv};
use super::pgsettings::{self, SettingUse};
use super::sink::Sink;
use super::worker::Worker;
use crate::config::inventory::expand_tilde;
use crate::config::values::AbsPath;
use crate::config::{Auth, Become, FsType, Host};
use crate::plan::Plan;
use crate::remote::{ExecOptions, JumpHop, Remote, RemoteCommand, RemoteError, SshTarget};

/// One machine under two inventory names: `(first, second, fingerprint)`
/// for every later entry whose SSH host key an earlier entry already showed
/// (an empty key, from a remote that has none, never matches).  `check`
/// marks both entries not ready; `run` refuses before any lock is taken.
pub fn same_machines<'a>(
    keys: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Vec<(String, String, String)> {
    let mut seen: BTreeMap<&str, &str> = BTreeMap::new();
    let mut pairs = Vec::new();
    for (host, key) in keys {
        if key.is_empty() {
            continue;
        }
        match seen.get(key) {
            Some(first) => pairs.push((first.to_string(), host.to_string(), key.to_string())),
            None => {
                seen.insert(key, host);
            }
        }
    }
    pairs
}

/// What `check` found on one host (also written to the bundle by `run`).
#[derive(Debug, Clone, Serialize)]
pub struct HostReport {
    pub host: String,
    pub ready: bool,
    /// Why not, when not ready.
    pub problems: Vec<String>,
    /// What does not stop a sweep but may spoil its comparison (a
    /// `platform` the host's own hypervisor detection contradicts, a
    /// stand-in host).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// `facts` as the script printed them (every key, also new ones).
    pub facts: BTreeMap<String, String>,
    pub guard: BTreeMap<String, String>,
    pub elapsed_ms: u128,
    #[serde(skip)]
    pub parsed: HostFacts,
}

impl HostReport {
    pub fn new(host: &Host) -> HostReport {
        HostReport {
            host: host.name.as_str().to_string(),
            ready: false,
            problems: Vec::new(),
            warnings: Vec::new(),
            facts: BTreeMap::new(),
            guard: BTreeMap::new(),
            elapsed_ms: 0,
            parsed: HostFacts::default(),
        }
    }

    /// A host that could not be reached at all.
    pub fn unreachable(host: &Host, e: &RemoteError, since: Instant) -> HostReport {
        let mut r = HostReport::new(host);
        r.problems.push(format!("failed to {e}"));
        r.elapsed_ms = since.elapsed().as_millis();
        r
    }
}

/// `~/x` is the user's home; a relative path is relative to the inventory.
fn resolve_path(inv_path: &Path, p: &Path) -> PathBuf {
    let p = expand_tilde(p);
    if p.is_relative() {
        inv_path.parent().unwrap_or(Path::new(".")).join(p)
    } else {
        p
    }
}

/// Reach a host as the inventory says.
pub fn ssh_target(inv_path: &Path, host: &Host) -> SshTarget {
    let identity_files: Vec<PathBuf> = match &host.auth {
        Auth::IdentityFile(p) => std::iter::once(p)
            .chain(&host.more_identity_files)
            .map(|p| resolve_path(inv_path, p))
            .collect(),
        Auth::Agent => Vec::new(),
    };
    let known_hosts = resolve_path(inv_path, &host.known_hosts);
    // A hop logs in as the host's user unless it names its own, with the
    // host's key (or agent) and known_hosts, as `ssh -J` does; a hop an ssh
    // config resolved ([`HopConfig`]) with its own user, keys and known_hosts.
    let jump = host
        .proxy_jump
        .iter()
        .enumerate()
        .map(|(i, hop)| {
            let user = hop.user.as_ref().unwrap_or(&host.user).as_str();
            JumpHop {
                name: JumpHop::label(i, user, hop.address.as_str(), hop.port),
                address: hop.address.as_str().to_string(),
                port: hop.port,
                user: user.to_string(),
                identity_files: match &hop.config {
                    Some(c) if !c.identity_files.is_empty() => c.identity_files.clone(),
                    _ => identity_files.clone(),
                },
                known_hosts: match hop.config.as_ref().and_then(|c| c.known_hosts.as_ref()) {
                    Some(k) => resolve_path(inv_path, k),
                    None => known_hosts.clone(),
                },
            }
        })
        .collect();
    SshTarget {
        host_name: host.name.as_str().to_string(),
        address: host.address.as_str().to_string(),
        port: host.port,
        user: host.user.as_str().to_string(),
        identity_files,
        known_hosts,
        connect_timeout: crate::timeouts::CONNECT,
        become_: host.become_,
        jump,
    }
}

/// What the plan needs of one host: checked when it is prepared.
#[derive(Debug, Clone, Default)]
pub struct Needs {
    /// The filesystem types it builds there (their tools must be installed).
    pub fs: Vec<FsType>,
    /// The PostgreSQL settings it sets there (the host's PostgreSQL must
    /// accept them).
    pub pg: Vec<SettingUse>,
    /// How many of its devices it builds on at a time (1: the first only).
    pub slots: u32,
    /// The most `shared_buffers` it has running at once there (must fit
    /// the host's memory; `None`: not known before the host's PostgreSQL
    /// reads the values).
    pub shared: Option<pgsettings::SharedPeak>,
    /// The host boots guests (`guest_of` it): QEMU must be installed.
    pub guests: bool,
    /// The guests `check` asks `vm-check` about on this physical host
    /// (image, kernel and initrd there, the image's format, the data disk,
    /// KVM, the SSH port free).  A sweep does not: `vm-start` finds the
    /// same problems, with the same words, and fails the guest's cells.
    pub vms: Vec<Host>,
}

/// The QEMU tools a physical host with guests lacks, each as a problem
/// with the install command.
fn guest_tool_problems(f: &HostFacts) -> Vec<String> {
    GUEST_TOOLS
        .iter()
        .filter(|t| !f.has_tool(t))
        .map(|t| {
            format!(
                "{t} is not installed (a guest of this host needs it: fsmatrix starts guests with \
                 QEMU; Debian: apt-get install qemu-system-x86 qemu-utils)"
            )
        })
        .collect()
}

/// What a physical host needs to boot its guests (common.sh `vm-start`),
/// as its facts list them (`tools=`).
pub const GUEST_TOOLS: &[&str] = crate::config::os::VM_TOOLS;

/// What the plan needs of `host`.
pub fn needs_of(plan: &Plan, host: &str) -> Needs {
    Needs {
        fs: fs_types_of(plan, host),
        pg: pgsettings::uses(plan, host),
        slots: plan
            .hosts
            .iter()
            .filter(|h| h.host.as_str() == host)
            .flat_map(|h| h.batches.iter().map(|b| b.slots.len() as u32))
            .max()
            .unwrap_or(1)
            .max(1),
        shared: pgsettings::shared_peak(plan, host),
        guests: false,
        vms: Vec::new(),
    }
}

/// The filesystem types the plan builds on `host`.
fn fs_types_of(plan: &Plan, host: &str) -> Vec<FsType> {
    let mut v: Vec<FsType> = plan
        .cells
        .iter()
        .filter(|c| c.host.as_str() == host)
        .map(|c| c.fs.fs_type)
        .collect();
    v.sort();
    v.dedup();
    v
}

/// The shell loop that finds PostgreSQL's binaries when the inventory gives
/// no pg_bin: the newest `/usr/lib/postgresql/<v>/bin` on Debian-likes,
/// else the BSD path.
pub const DETECT_PG_BIN: &str =
    "for d in /usr/lib/postgresql/*/bin /usr/pgsql-*/bin /usr/local/bin /usr/bin; do \
     if [ -x \"$d/pg_ctl\" ]; then echo \"$d\"; fi; done | sort -V | tail -n 1";

async fn detect_pg_bin<R: Remote>(remote: &R) -> Option<String> {
    let out = remote
        .exec(
            &RemoteCommand::raw(DETECT_PG_BIN),
            ExecOptions::with_timeout(crate::timeouts::PROBE),
        )
        .await
        .ok()?;
    let p = out.stdout_lossy().trim().to_string();
    (!p.is_empty()).then_some(p)
}

/// A host is prepared: the scripts are there, facts read, the guard passed
/// (or not: see the report), pg_bin known.
pub struct Prepared {
    pub host: Host,
    pub paths: HostPaths,
}

/// Upload the scripts when missing, read facts, run the device guard and
/// ask the host's PostgreSQL about the plan's settings (all read-only) on a
/// connected host.  `pre_clean` (a sweep, under the host
/// lock): then tear down what a killed run left (a mount, postgres, a pool
/// would make the guard refuse) and ask the guard again if it refused.
pub async fn prepare<R: Remote>(
    remote: &R,
    host: &Host,
    needs: &Needs,
    pre_clean: bool,
) -> (HostReport, Option<Prepared>) {
    let t0 = Instant::now();
    let mut report = HostReport::new(host);
    let Some(paths) = HostPaths::new(host) else {
        report.problems.push(format!(
            "fsmatrix has no remote script for {} yet",
            host.os.as_str()
        ));
        return (report, None);
    };
    let mut host = host.clone();
    if host.pg_bin.is_none() {
        match detect_pg_bin(remote).await.map(|p| AbsPath::new(&p)) {
            Some(Ok(p)) => host.pg_bin = Some(p),
            _ => {
                // A become that is refused fails every command: say that alone.
                if let Some(p) = become_refused(remote, &host).await {
                    report.problems.push(p);
                    report.elapsed_ms = t0.elapsed().as_millis();
                    return (report, None);
                }
                report
                    .problems
                    .push("no PostgreSQL binaries found (set pg_bin in the inventory)".into())
            }
        }
    }
    let scratch = Sink::discard();
    let w = Worker {
        remote,
        host: &host,
        paths: paths.clone(),
        sink: &scratch,
        cancel: tokio::sync::watch::channel(false).1,
        counted: Counted::default(),
        ident: None,
        idents: Vec::new(),
        limits: Default::default(),
    };
    // One round trip when the scripts are already there (the usual case).
    let (facts, guard) = match w.facts_and_guard().await {
        Ok(Some((facts, guard))) => (Ok(facts), guard),
        Err(e) => {
            if let Some(p) = become_refused(remote, &host).await {
                report.problems.push(p);
                report.elapsed_ms = t0.elapsed().as_millis();
                return (report, None);
            }
            (Err(e), w.guard().await)
        }
        Ok(None) => {
            if let Err(e) = w.upload_scripts().await {
                let p = match become_refused(remote, &host).await {
                    Some(p) => p,
                    None => upload_problem(remote, &e).await,
                };
                report.problems.push(p);
                report.elapsed_ms = t0.elapsed().as_millis();
                return (report, None);
            }
            futures::join!(w.facts(), w.guard())
        }
    };
    // What a killed sweep left (its mount, its cluster, its pool) would
    // make the guard refuse: torn down first, then the guard asked again.
    // Only under the host lock: no live sweep owns those leftovers.
    let guard = if pre_clean {
        w.teardown(None, &mut String::new()).await;
        // The host's other devices that the plan builds on (interleaved
        // and random orders): each torn down as well.
        for slot in 1..needs.slots {
            w.teardown_slot(slot, &mut String::new()).await;
        }
        match guard {
            Ok(kv) => Ok(kv),
            Err(_) => w.guard().await,
        }
    } else {
        guard
    };
    judge(&mut report, &host, &needs.fs, facts, guard);
    // A physical host that boots guests needs QEMU (common.sh vm-start).
    if needs.guests && !report.facts.is_empty() {
        let missing = guest_tool_problems(&report.parsed);
        report.problems.extend(missing);
    }
    if !report.facts.is_empty() {
        for g in &needs.vms {
            vm_check(&w, &mut report, g).await;
        }
    }
    // A guest's problem (or QEMU missing) stops the host's readiness too.
    report.ready = report.ready && report.problems.is_empty();
    // The clusters running at once must leave the host memory for its
    // page cache (order interleaved: one cluster per device).
    if let (Some(peak), Some(mem)) = (&needs.shared, report.parsed.mem_bytes) {
        if let Some(p) = pgsettings::memory_problem(peak, mem) {
            report.problems.push(p);
            report.ready = false;
        }
    }
    // The host's other devices the plan builds on (interleaved and random
    // orders) pass the same guard before any disk is formatted.
    for slot in 1..needs.slots {
        if let Err((dev, why)) = w.guard_slot(slot).await {
            report.problems.push(format!(
                "device {dev} refused by the guard: {}",
                why.lines()
                    .find(|l| l.starts_with("refused:"))
                    .unwrap_or(&why)
            ));
            report.ready = false;
        }
    }
    // Before any disk is formatted: a setting the host's PostgreSQL refuses
    // would fail every variant's pg-start after mkfs and initdb.
    if !needs.pg.is_empty() && report.parsed.postgres_version.is_some() {
        let release = report.parsed.postgres_release().unwrap_or("?").to_string();
        match w.pg_check_settings(&needs.pg).await {
            Ok(kv) => report
                .problems
                .extend(pgsettings::problems(&needs.pg, &kv, &release)),
            Err(e) => report.problems.push(format!(
                "failed to ask PostgreSQL whether it accepts the plan's settings: {}",
                e.message
            )),
        }
        report.ready = report.problems.is_empty();
    }
    report.elapsed_ms = t0.elapsed().as_millis();
    (report, Some(Prepared { host, paths }))
}

/// `vm-check` of guest `g` on the worker's (physical) host: each problem
/// it prints is the physical host's (the files and the disk are there),
/// named with the guest; a guest running already is a warning.
async fn vm_check<R: Remote>(w: &Worker<'_, R>, report: &mut HostReport, g: &Host) {
    let Some(vm) = &g.vm else { return };
    match w.vm_check(g, vm).await {
        Ok(kv) => {
            report.problems.extend(
                kv.0.iter()
                    .filter(|(k, _)| k == "problem")
                    .map(|(_, p)| format!("guest {}: {p}", g.name)),
            );
            if kv.get("running") == Some("yes") {
                report.warnings.push(format!(
                    "guest {} is running already (qemu pid {}): a sweep in progress, or one that was killed (the next sweep stops it before it uses the disk)",
                    g.name,
                    kv.get("pid").unwrap_or("?")
                ));
            }
        }
        Err(e) => report
            .problems
            .push(format!("guest {}: vm-check failed: {}", g.name, e.message)),
    }
}

/// What the facts and the guard say about the host's readiness.
fn judge(
    report: &mut HostReport,
    host: &Host,
    needs: &[FsType],
    facts: Result<Kv, StepError>,
    guard: Result<Kv, StepError>,
) {
    match facts {
        Ok(kv) => {
            report.facts = kv.to_map();
            report.parsed = HostFacts::parse(&kv);
        }
        Err(e) => report.problems.push(format!("facts failed: {}", e.message)),
    }
    match guard {
        Ok(kv) => report.guard = kv.to_map(),
        Err(e) => report.problems.push(format!(
            "device {} refused by the guard: {}",
            host.device().as_str(),
            e.message
                .lines()
                .find(|l| l.starts_with("refused:"))
                .unwrap_or(&e.message)
        )),
    }
    let f = &report.parsed;
    let mut problems = Vec::new();
    if let Some(os) = &f.os {
        if os != host.os.as_str() {
            problems.push(format!(
                "the inventory says os = {:?} but the host runs {os}",
                host.os.as_str()
            ));
        }
    }
    if let Some(uid) = f.uid.as_deref().filter(|u| *u != "0") {
        problems.push(not_root(f.user.as_deref().unwrap_or_default(), uid));
    }
    if !report.facts.is_empty() {
        for (name, v) in [
            ("postgres", &f.postgres_version),
            ("pgbench", &f.pgbench_version),
        ] {
            if v.is_none() {
                problems.push(format!("{name} not found in {}", host.pg_bin_or_hint()));
            }
        }
        let mut needed: Vec<&str> = needs.iter().map(|f| tool_for(*f)).collect();
        needed.dedup();
        for t in needed.into_iter().filter(|t| !f.has_tool(t)) {
            problems.push(format!(
                "{t} is not installed (a planned filesystem needs it)"
            ));
        }
        let dev = host.device().as_str();
        let present = f.devices.iter().any(|d| d.path == dev && d.present);
        if present && f.ident_of(dev).is_none() {
            problems.push(format!(
                "facts gave no identity for {dev}: make-fs needs it to refuse another disk put at that path"
            ));
        }
        problems.extend(size_problems(host, needs, f));
        if let Some(p) = login_shell_problem(host, f) {
            problems.push(p);
        }
        if needs.contains(&FsType::Zfs) && f.zfs_running != Some(true) {
            if host.os.profile().zfs_loads_on_demand {
                // FreeBSD: facts read zfs_running without loading zfs.ko;
                // the first zpool call of a ZFS cell's make-fs loads it.
                report.warnings.push(format!(
                    "the zfs kernel module is not loaded on this {} host; the first ZFS \
                     make-fs loads it (libzfs kldloads zfs.ko), and it stays loaded",
                    host.os.profile().name
                ));
            } else {
                problems
                    .push("zfs is installed but not running (module or zfs-fuse daemon)".into());
            }
        }
    }
    report.problems.extend(problems);
    report.warnings.extend(platform_warnings(host, f));
    report
        .warnings
        .extend(unchecked_holders(host, &report.facts));
    report.ready = report.problems.is_empty();
}

/// Every listed device too large for a planned filesystem's making tool on
/// the host's OS (its row's `device_limits`: DragonFly's newfs and 1 TiB),
/// as `facts` measured it: refused before anything is formatted.
fn size_problems(host: &Host, needs: &[FsType], f: &HostFacts) -> Vec<String> {
    let profile = host.os.profile();
    let mut v = Vec::new();
    for fs in needs {
        let Some(limit) = profile.device_limit(*fs) else {
            continue;
        };
        for dev in &host.devices {
            let size = f
                .devices
                .iter()
                .find(|d| d.path == dev.as_str() && d.present)
                .and_then(|d| d.size_bytes);
            if let Some(p) = size.and_then(|b| limit.problem(host.os, dev.as_str(), b)) {
                v.push(p);
            }
        }
    }
    v
}

/// What the device guard cannot see on the host, as its `facts` say
/// (`holders_unchecked`: DragonFly has no open counts, so a vinum volume or
/// a ccd built on a listed disk holds it unseen): said plainly, every time.
pub fn unchecked_holders(host: &Host, facts: &BTreeMap<String, String>) -> Vec<String> {
    let Some(kinds) = facts
        .get("holders_unchecked")
        .map(|s| s.split_whitespace().collect::<Vec<_>>().join(", "))
        .filter(|s| !s.is_empty())
    else {
        return Vec::new();
    };
    let devices: Vec<&str> = host.devices.iter().map(|d| d.as_str()).collect();
    vec![format!(
        "not checked on this host: {kinds} holders ({} has no open counts; the guard sees mounts, swap, the root disk and device-mapper only): make sure none is built on {}",
        host.os.as_str(),
        devices.join(", ")
    )]
}

/// Where the PostgreSQL verbs run `pg_user`'s login shell (the BSDs' `su
/// USER -c`: the OS row's `login_shell_fix`), an account whose shell
/// refuses to run a command (`nologin`, `false`) or has none would fail
/// every one of them, late and unclearly ("This account is currently not
/// available"): said at check, with the fix.
fn login_shell_problem(host: &Host, f: &HostFacts) -> Option<String> {
    let fix = host.os.profile().login_shell_fix?;
    let shell = f.pg_user_shell.as_deref()?;
    let name = shell.rsplit('/').next().unwrap_or(shell);
    if !matches!(name, "" | "nologin" | "false" | "true") {
        return None;
    }
    let user = host.pg_user.as_str();
    Some(format!(
        "pg_user {user} has the login shell {:?}, which runs no command: every PostgreSQL \
         step runs `su {user} -c ...`, which runs that shell; give it a Bourne shell: {}",
        shell,
        fix.replace("{user}", user)
    ))
}

/// The inventory's `platform` against the hypervisor the host reports
/// (studies compare KVM with bare metal: a wrong `platform` ruins that), and
/// a stand-in named as such.
pub fn platform_warnings(host: &Host, f: &HostFacts) -> Vec<String> {
    use crate::config::Platform;
    let mut w = Vec::new();
    if let Some(os) = &f.standin {
        w.push(format!(
            "this is a lab stand-in host (a Linux host dressed as {os}): its numbers mean nothing for {os}"
        ));
    }
    let Some(guest) = f.vm_guest.as_deref() else {
        return w;
    };
    let virtual_ = guest != "none";
    match host.platform {
        Platform::Physical if virtual_ => w.push(format!(
            "the inventory says platform = \"physical\" but the host reports running under a hypervisor ({guest})"
        )),
        Platform::Kvm if !virtual_ => w.push(
            "the inventory says platform = \"kvm\" but the host reports no hypervisor (bare metal)".into(),
        ),
        Platform::Kvm if !matches!(guest, "kvm" | "qemu") => w.push(format!(
            "the inventory says platform = \"kvm\" but the host reports the hypervisor {guest}"
        )),
        _ => {}
    }
    w
}

/// Why the scripts could not be uploaded: usually a login user that is not
/// root (the work folder is root's), which the user should be told plainly.
async fn upload_problem<R: Remote>(remote: &R, e: &RemoteError) -> String {
    let probe = RemoteCommand::raw("id -un && id -u");
    let who = remote
        .exec(&probe, ExecOptions::with_timeout(crate::timeouts::PROBE))
        .await
        .ok()
        .filter(|o| o.status.success())
        .map(|o| o.stdout_lossy());
    let mut lines = who.as_deref().unwrap_or_default().lines();
    match (lines.next(), lines.next()) {
        (Some(user), Some(uid)) if uid.trim() != "0" => not_root(user.trim(), uid.trim()),
        _ => format!("failed to upload the scripts: {e}"),
    }
}

/// The problem of a host whose commands do not run as root.
fn not_root(user: &str, uid: &str) -> String {
    format!(
        "the scripts run as `{user}` (uid {uid}), not root: mkfs, mount and the benchmark cluster need root; \
         log in as root or set become = \"sudo\" or become = \"doas\" for this host \
         (passwordless: sudo -n, doas -n)"
    )
}

/// After a failed first command on a `become` host: whether the become
/// itself is refused (`true` through the same wrapper fails), and then
/// the problem with its fix; `None` when it works (the failure is another).
async fn become_refused<R: Remote>(remote: &R, host: &Host) -> Option<String> {
    let how = host.become_?;
    let out = remote
        .exec(
            &RemoteCommand::raw("true"),
            ExecOptions::with_timeout(crate::timeouts::PROBE),
        )
        .await;
    let why = match out {
        Ok(o) if o.status.success() => return None,
        Ok(o) => {
            let e = String::from_utf8_lossy(&o.stderr).trim().to_string();
            if e.is_empty() {
                format!("{:?}", o.status)
            } else {
                e
            }
        }
        Err(e) => e.to_string(),
    };
    Some(become_problem(how, host, &why))
}

/// The problem of a host whose `become` does not give root without a
/// password, with the fix for its method and OS.
fn become_problem(how: Become, host: &Host, why: &str) -> String {
    let user = host.user.as_str();
    let fix = match how {
        Become::Sudo => format!(
            "give `{user}` passwordless sudo to root (a sudoers line `{user} ALL=(ALL) NOPASSWD: ALL`)"
        ),
        // doas.conf(5) (OpenBSD; OpenDoas 6.8.2): `permit nopass USER as root`
        // lets USER run any command as root without a password; `-n` fails
        // unless the matching rule has nopass (doas.1).
        Become::Doas => format!(
            "add the line `permit nopass {user} as root` to {} (doas.conf(5))",
            host.os.profile().doas_conf
        ),
    };
    format!(
        "become = {:?}: `{} -n true` fails for `{user}` on this host ({why}): fsmatrix needs root \
         without a password; {fix}, or log in as root",
        how.as_str(),
        how.as_str()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(platform: &str) -> Host {
        let text = format!(
            "[[host]]\nname = \"h\"\naddress = \"127.0.0.1\"\nos = \"linux\"\nplatform = \"{platform}\"\ndevices = [\"/dev/vdb\"]\n"
        );
        crate::config::Inventory::parse(Path::new("inv.toml"), text)
            .unwrap_or_else(|e| panic!("{e}"))
            .hosts[0]
            .clone()
    }

    /// A refused become names the method, the user and the fix for the
    /// host's OS: doas.conf's `permit nopass` line in that OS's doas.conf.
    #[test]
    fn a_refused_become_says_the_fix() {
        let on = |os: &str| -> Host {
            let text = format!(
                "[[host]]\nname = \"h\"\naddress = \"127.0.0.1\"\nuser = \"ops\"\nbecome = \"doas\"\nos = \"{os}\"\ndevices = [\"/dev/vdb\"]\n"
            );
            crate::config::Inventory::parse(Path::new("inv.toml"), text)
                .unwrap_or_else(|e| panic!("{e}"))
                .hosts[0]
                .clone()
        };
        for (os, conf) in [
            ("linux", "/etc/doas.conf"),
            ("freebsd", "/usr/local/etc/doas.conf"),
            ("dragonfly", "/usr/local/etc/doas.conf"),
        ] {
            let p = become_problem(Become::Doas, &on(os), "doas: Operation not permitted");
            assert_eq!(
                p,
                format!(
                    "become = \"doas\": `doas -n true` fails for `ops` on this host \
                     (doas: Operation not permitted): fsmatrix needs root without a password; \
                     add the line `permit nopass ops as root` to {conf} (doas.conf(5)), \
                     or log in as root"
                )
            );
        }
        let p = become_problem(Become::Sudo, &on("linux"), "sudo: a password is required");
        assert!(
            p.starts_with("become = \"sudo\": `sudo -n true` fails for `ops`")
                && p.contains("`ops ALL=(ALL) NOPASSWD: ALL`"),
            "{p}"
        );
        assert!(not_root("ops", "1000").contains("set become = \"sudo\" or become = \"doas\""));
    }

    fn facts(vm_guest: Option<&str>, standin: Option<&str>) -> HostFacts {
        HostFacts {
            vm_guest: vm_guest.map(str::to_string),
            standin: standin.map(str::to_string),
            ..HostFacts::default()
        }
    }

    /// issue 26: a physical host with guests needs QEMU; each missing
    /// tool is a problem with the install command.
    #[test]
    fn a_physical_host_with_guests_needs_qemu() {
        let f = |tools: &str| HostFacts::parse(&Kv::parse(&format!("os=linux\ntools={tools}\n")));
        let p = guest_tool_problems(&f("mkfs.ext4 qemu-img"));
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(
            p[0].starts_with("qemu-system-x86_64 is not installed")
                && p[0].contains("apt-get install qemu-system-x86 qemu-utils"),
            "{p:?}"
        );
        assert_eq!(guest_tool_problems(&f("mkfs.ext4")).len(), 2);
        assert!(guest_tool_problems(&f("qemu-system-x86_64 qemu-img")).is_empty());
    }

    /// `check` of a physical host asks `vm-check` for each guest, with the guest's
    /// `[host.vm]` as `vm-start` gets it; each problem it prints is the physical host's,
    /// named with the guest, and makes it not ready.  A missing QEMU does too, with or
    /// without PostgreSQL settings to ask about (it left the host ready without).
    #[tokio::test]
    async fn check_asks_vm_check_for_each_guest_and_its_problems_stop_the_host() {
        let inv = crate::config::Inventory::parse(
            Path::new("/i.toml"),
            "[defaults]\nos = \"linux\"\n[[host]]\nname = \"m\"\naddress = \"10.0.0.1\"\ndevices = [\"/dev/sdb\"]\n[[host]]\nname = \"g\"\nguest_of = \"m\"\ndevices = [\"/dev/vdb\"]\n[host.vm]\nimage = \"/i/x.img\"\ndisk = \"/dev/sdb\"\n".into(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let (m, g) = (&inv.hosts[0], &inv.hosts[1]);
        let needs = Needs {
            guests: true,
            vms: vec![g.clone()],
            ..Needs::default()
        };
        let r = super::super::dry::stand_in(m, &needs);
        r.respond_ok(
            "linux.sh vm-check ",
            "running=yes\npid=41\nproblem=image /i/x.img: no such file\n",
        );
        let (report, _) = prepare(&r, m, &needs, false).await;
        assert!(!report.ready);
        assert_eq!(report.problems, ["guest g: image /i/x.img: no such file"]);
        assert!(
            report
                .warnings
                .iter()
                .any(|w| w.starts_with("guest g is running already (qemu pid 41)")),
            "{:?}",
            report.warnings
        );
        let sent: Vec<String> = r
            .commands()
            .into_iter()
            .filter(|c| c.contains(" vm-check "))
            .collect();
        assert_eq!(sent.len(), 1, "{sent:?}");
        let want = super::super::guest::vm_start(g, g.vm.as_ref().expect("vm"), m)
            .args
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>();
        for w in &want {
            assert!(sent[0].contains(w.as_str()), "{w} not in {}", sent[0]);
        }
        // No guest to ask about, QEMU missing, no PostgreSQL setting in the plan.
        let bare = super::super::dry::stand_in(m, &Needs::default());
        let needs = Needs {
            guests: true,
            ..Needs::default()
        };
        let (report, _) = prepare(&bare, m, &needs, false).await;
        assert!(!report.ready, "{:?}", report.problems);
        assert!(
            report.problems[0].starts_with("qemu-system-x86_64 is not installed"),
            "{:?}",
            report.problems
        );
        assert!(!bare.commands().iter().any(|c| c.contains(" vm-check ")));
    }

    /// zfs_running=no stops a ZFS cell where nothing would load the module
    /// (Linux), and is only a warning on FreeBSD, whose libzfs kldloads
    /// zfs.ko at the first zpool call (its OS row's `zfs_loads_on_demand`).
    #[test]
    fn zfs_not_loaded_stops_linux_but_only_warns_on_freebsd() {
        let judged = |os: &str, running: &str| {
            let text = format!(
                "[[host]]\nname = \"h\"\naddress = \"127.0.0.1\"\nos = \"{os}\"\ndevices = [\"/dev/vdb\"]\n"
            );
            let h = crate::config::Inventory::parse(Path::new("inv.toml"), text)
                .unwrap_or_else(|e| panic!("{e}"))
                .hosts[0]
                .clone();
            let mut r = HostReport::new(&h);
            let facts = Kv::parse(&format!(
                "os={os}\nuid=0\nuser=root\npostgres_version=x\npgbench_version=x\n\
                 tools=zpool newfs\nzfs_impl=openzfs\nzfs_running={running}\n"
            ));
            judge(
                &mut r,
                &h,
                &[FsType::Zfs],
                Ok(facts),
                Ok(Kv::parse("guard=ok\n")),
            );
            r
        };
        let linux = judged("linux", "no");
        assert!(
            linux
                .problems
                .iter()
                .any(|p| p.contains("zfs is installed but not running")),
            "{:?}",
            linux.problems
        );
        let fb = judged("freebsd", "no");
        assert!(
            !fb.problems.iter().any(|p| p.contains("zfs")),
            "{:?}",
            fb.problems
        );
        assert!(
            fb.warnings
                .iter()
                .any(|w| w.contains("first ZFS make-fs loads it")),
            "{:?}",
            fb.warnings
        );
        let fb = judged("freebsd", "yes");
        assert!(
            !fb.warnings.iter().any(|w| w.contains("zfs")),
            "{:?}",
            fb.warnings
        );
    }

    /// issue 25: a BSD pg_user whose login shell is nologin is refused at
    /// check with the fix; Linux runs PostgreSQL through runuser (no login
    /// shell), so its shell does not matter.
    #[test]
    fn a_nologin_pg_user_is_refused_where_su_runs_its_shell() {
        let host = |os: &str| {
            let text = format!(
                "[[host]]\nname = \"h\"\naddress = \"127.0.0.1\"\nos = \"{os}\"\ndevices = [\"/dev/vdb\"]\n"
            );
            crate::config::Inventory::parse(Path::new("inv.toml"), text)
                .unwrap_or_else(|e| panic!("{e}"))
                .hosts[0]
                .clone()
        };
        let shell = |s: Option<&str>| HostFacts {
            pg_user_shell: s.map(str::to_string),
            ..HostFacts::default()
        };
        for os in ["freebsd", "dragonfly"] {
            for bad in ["/usr/sbin/nologin", "/sbin/nologin", "/usr/bin/false", ""] {
                let p = login_shell_problem(&host(os), &shell(Some(bad)))
                    .unwrap_or_else(|| panic!("{os}: {bad:?} not refused"));
                assert!(
                    p.contains("pg_user postgres") && p.contains("pw usermod postgres -s /bin/sh"),
                    "{p}"
                );
            }
            assert_eq!(
                login_shell_problem(&host(os), &shell(Some("/bin/sh"))),
                None
            );
            assert_eq!(login_shell_problem(&host(os), &shell(None)), None);
        }
        assert_eq!(
            login_shell_problem(&host("linux"), &shell(Some("/usr/sbin/nologin"))),
            None
        );
    }

    #[test]
    fn a_device_too_large_for_dragonfly_newfs_is_refused_by_check_with_its_size() {
        let text = "[[host]]\nname = \"d\"\naddress = \"127.0.0.1\"\nos = \"dragonfly\"\nplatform = \"lab\"\ndevices = [\"/dev/da1\", \"/dev/da2\"]\n";
        let h = crate::config::Inventory::parse(Path::new("inv.toml"), text.to_string())
            .unwrap_or_else(|e| panic!("{e}"))
            .hosts[0]
            .clone();
        let dev = |path: &str, bytes: u64| super::super::facts::DeviceFacts {
            path: path.into(),
            present: true,
            size_bytes: Some(bytes),
            ident: None,
        };
        let f = HostFacts {
            devices: vec![dev("/dev/da1", 20 << 30), dev("/dev/da2", 1 << 40)],
            ..HostFacts::default()
        };
        let p = size_problems(&h, &[FsType::Ufs], &f);
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(p[0].contains("/dev/da2 has 1099511627776 bytes"), "{p:?}");
        assert!(
            p[0].contains("valid: a slice or partition under 1 TiB"),
            "{p:?}"
        );
        assert!(size_problems(&h, &[FsType::Hammer, FsType::Hammer2], &f).is_empty());
        let small = HostFacts {
            devices: vec![dev("/dev/da1", 20 << 30), dev("/dev/da2", (1 << 40) - 512)],
            ..HostFacts::default()
        };
        assert!(size_problems(&h, &[FsType::Ufs], &small).is_empty());
    }

    #[test]
    fn check_says_which_holders_it_cannot_see() {
        let text = "[[host]]\nname = \"d\"\naddress = \"127.0.0.1\"\nos = \"dragonfly\"\nplatform = \"lab\"\ndevices = [\"/dev/da1\"]\n";
        let h = crate::config::Inventory::parse(Path::new("inv.toml"), text.to_string())
            .unwrap_or_else(|e| panic!("{e}"))
            .hosts[0]
            .clone();
        let mut facts = BTreeMap::new();
        assert!(unchecked_holders(&h, &facts).is_empty());
        facts.insert("holders_unchecked".to_string(), "vinum ccd".to_string());
        let w = unchecked_holders(&h, &facts);
        assert_eq!(w.len(), 1);
        assert!(
            w[0].starts_with("not checked on this host: vinum, ccd holders (dragonfly"),
            "{w:?}"
        );
        assert!(w[0].ends_with("built on /dev/da1"), "{w:?}");
    }

    #[test]
    fn a_platform_the_host_contradicts_is_a_warning() {
        let w = |p: &str, g: Option<&str>| platform_warnings(&host(p), &facts(g, None));
        assert!(w("physical", Some("none")).is_empty());
        assert!(w("kvm", Some("kvm")).is_empty());
        assert!(w("kvm", Some("qemu")).is_empty());
        assert!(w("lab", Some("kvm")).is_empty());
        assert!(
            w("physical", None).is_empty(),
            "not reported: nothing to say"
        );
        assert!(w("physical", Some("kvm"))[0].contains("under a hypervisor (kvm)"));
        assert!(w("kvm", Some("none"))[0].contains("no hypervisor (bare metal)"));
        assert!(w("kvm", Some("vmware"))[0].contains("the hypervisor vmware"));
        let s = platform_warnings(&host("lab"), &facts(None, Some("freebsd")));
        assert!(
            s[0].contains("stand-in") && s[0].contains("freebsd"),
            "{s:?}"
        );
    }
}
