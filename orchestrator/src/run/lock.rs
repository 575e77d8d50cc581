//! One sweep per host at a time: the host lock.
//!
//! Before a sweep (or a resume) touches a host, it starts a small holder
//! process there over its own SSH channel ([`Remote::hold`]).  The holder
//! takes `flock(2)` locks on `<dir>/host.lock` and on one file per device
//! the inventory names (`<dir>/dev.<resolved path>.lock`), writes who holds
//! them beside each, says `locked`, and then only reads its stdin.
//!
//! - The place is fixed ([`lock_dir`]), not under `work_dir`: two
//!   inventories that name the same machine share it.  It must be a folder
//!   of root's (the user every command runs as) with mode 0700, else the
//!   lock refuses to go through it.
//! - It dies with its holder: the kernel drops an `flock` when its process
//!   ends, and the process ends when its stdin reaches EOF — a release,
//!   the orchestrator killed (its TCP connection closes), or sshd noticing a
//!   dead connection.  A cut link that sshd has not noticed yet is caught by
//!   the holder itself: it hears a newline every
//!   [`crate::timeouts::HOLD_HEARTBEAT`] and ends when it has heard nothing
//!   for [`crate::timeouts::HOLD_STALE_MINUTES`]; that watchdog is started
//!   before the first lock file is opened, so no process but the holder's
//!   shell ever has a lock descriptor, and killing the holder frees the
//!   locks at once.  A lock file left behind
//!   is never held by a dead process, and its holder note is only read when
//!   the lock is busy, i.e. when its writer is alive.
//! - A busy lock refuses the whole sweep before anything is touched, naming
//!   the holder (sweep, machine, user, process, since when) and why it was
//!   not ended.
//! - A holder is ended by another sweep only when its orchestrator is
//!   proven gone: by its [`Lease`], never by a process name or number (a
//!   renamed binary, another PID namespace on the same machine-id).  The
//!   ender writes who ended it and why to `<dir>/ended.<token>`, where the
//!   sweep that lost it (if it lives after all) reads it
//!   ([`HostLock::why_lost`]) instead of blaming its connection.
use std::io::Read;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::facts::Kv;
use crate::config::os::LockHolder;
use crate::config::{Host, Os};
use crate::remote::{ExecOptions, Held, HoldOutcome, Remote, RemoteCommand, RemoteError};
use crate::timeouts::HOLD_STALE_MINUTES;

/// Where a host's locks live.  Linux: `/run/lock` (tmpfs, cleared at boot:
/// a lock cannot outlive the machine's uptime); the BSDs: `/var/run`.
pub fn lock_dir(os: Os) -> &'static str {
    os.profile().lock_dir
}

/// A sweep's proof of life on its own machine (issue 24): the file
/// `<lease dir>/sweep.<token>` holding a random token, under an
/// `flock(2)` that this process keeps for as long as the sweep holds any
/// host lock.  Its path and token go into every holder note; another
/// orchestrator ends a holder only when it opens that path, finds the same
/// token there (not a file of the same name in another container's or a
/// cloned machine's `/run`) and gets the lock (the kernel dropped it: the
/// process is gone).  A process name or number proves nothing: a binary
/// may be renamed, and two PID namespaces share one machine-id.
///
/// Removed when dropped (a sweep that ended released its holders); a
/// killed process leaves it behind, unlocked, which is what proves it gone
/// (a few bytes on a tmpfs that boot clears).
#[derive(Debug)]
pub struct Lease {
    path: String,
    token: String,
    // Held open (and so locked) for the lease's life.
    _file: std::fs::File,
}

impl PartialEq for Lease {
    fn eq(&self, other: &Lease) -> bool {
        self.path == other.path && self.token == other.token
    }
}
impl Eq for Lease {}

/// The folder of this user's sweep leases: `/run/fsmatrix-leases` for
/// root, else `$XDG_RUNTIME_DIR/fsmatrix-leases`, else
/// `<temp>/fsmatrix-leases-<uid>`.  Not `/run/fsmatrix`: that is the BSD
/// hosts' lock folder (`/var/run/fsmatrix`), and the lab's mount point.
fn lease_dir(uid: u32) -> PathBuf {
    if uid == 0 {
        return PathBuf::from("/run/fsmatrix-leases");
    }
    match std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from) {
        Some(d) if d.is_absolute() => d.join("fsmatrix-leases"),
        _ => std::env::temp_dir().join(format!("fsmatrix-leases-{uid}")),
    }
}

impl Lease {
    /// A new lease in this user's lease folder (a private 0700 folder of
    /// the user's, else refused): written and locked under a temporary name
    /// and then renamed into place, so that it is never seen unlocked while
    /// its process lives.
    pub fn take() -> Result<Lease, String> {
        let uid = std::fs::metadata("/proc/self")
            .map(|m| m.uid())
            .map_err(|e| format!("cannot tell this process's user: {e}"))?;
        Lease::take_in(&lease_dir(uid), uid)
    }

    fn take_in(dir: &Path, uid: u32) -> Result<Lease, String> {
        let shown = dir.display();
        match std::fs::DirBuilder::new().mode(0o700).create(dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(format!("cannot make the lease folder {shown}: {e}")),
        }
        let meta = std::fs::symlink_metadata(dir)
            .map_err(|e| format!("cannot read the lease folder {shown}: {e}"))?;
        if !meta.is_dir() || meta.uid() != uid || meta.permissions().mode() & 0o077 != 0 {
            return Err(format!(
                "the lease folder {shown} is not a private (0700) folder of uid {uid}; refusing to use it"
            ));
        }
        let token = random_token();
        let tmp = dir.join(format!(".new.{token}"));
        let path = dir.join(format!("sweep.{token}"));
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&tmp)
            .map_err(|e| format!("cannot make the lease {}: {e}", tmp.display()))?;
        let made = rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive)
            .map_err(|e| format!("cannot lock the lease {}: {e}", tmp.display()))
            .and_then(|()| {
                use std::io::Write;
                file.write_all(format!("{token}\n").as_bytes())
                    .map_err(|e| format!("cannot write the lease {}: {e}", tmp.display()))
            })
            .and_then(|()| {
                std::fs::rename(&tmp, &path)
                    .map_err(|e| format!("cannot place the lease {}: {e}", path.display()))
            });
        if let Err(e) = made {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
        Ok(Lease {
            path: path.to_string_lossy().into_owned(),
            token,
            _file: file,
        })
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// 32 hex digits of OS randomness.
fn random_token() -> String {
    use std::fmt::Write;
    let mut bytes = [0u8; 16];
    if getrandom::getrandom(&mut bytes).is_err() {
        // Still unique on this machine: the process and the time.
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        bytes[..8].copy_from_slice(&(t as u64).to_le_bytes());
        bytes[8..12].copy_from_slice(&std::process::id().to_le_bytes());
    }
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// Is `token` one [`random_token`] could have made?
fn is_token(token: &str) -> bool {
    token.len() == 32 && token.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Who holds (or asks for) a lock: said to whoever is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    pub sweep: String,
    pub machine: String,
    /// `/etc/machine-id` of the orchestrator's machine (`-` if none): tells
    /// this machine from another of the same host name.
    pub machine_id: String,
    pub user: String,
    pub pid: u32,
    pub since: String,
    /// The path of the sweep's [`Lease`] on its machine (`-`: none).
    pub lease: String,
    /// The token in that lease (`-`: none).
    pub token: String,
    /// This process's own lease, kept alive by every lock taken with it.
    keep: Option<Arc<Lease>>,
}

impl Holder {
    /// This process, running the sweep `sweep`, with no lease: its holders
    /// are never ended by another orchestrator (`plan --commands`).
    pub fn here(sweep: &str) -> Holder {
        let machine = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .or_else(|_| std::fs::read_to_string("/etc/hostname"))
            .map(|s| s.trim().to_string())
            .ok()
            .filter(|s| !s.is_empty())
            .or_else(|| std::env::var("HOSTNAME").ok())
            .unwrap_or_else(|| "unknown".into());
        let user = std::env::var("USER")
            .or_else(|_| std::env::var("LOGNAME"))
            .ok()
            .filter(|u| !u.is_empty())
            .unwrap_or_else(user_of_this_process);
        let machine_id = std::fs::read_to_string("/etc/machine-id")
            .or_else(|_| std::fs::read_to_string("/var/lib/dbus/machine-id"))
            .map(|s| s.trim().to_string())
            .unwrap_or_default();
        Holder {
            sweep: one_line(sweep),
            machine: one_line(&machine),
            machine_id: if machine_id.is_empty() {
                "-".into()
            } else {
                one_line(&machine_id)
            },
            user: one_line(&user),
            pid: std::process::id(),
            since: crate::text::now_rfc3339(),
            lease: "-".into(),
            token: "-".into(),
            keep: None,
        }
    }

    /// [`Holder::here`] with a new [`Lease`] for the sweep, so that its
    /// holders can be ended (by the next sweep from this machine) once this
    /// process is gone.  Without one (the folder is not usable) the sweep
    /// still runs; a holder it leaves ends only by its heartbeat limit.
    pub fn leased(sweep: &str) -> Holder {
        let mut h = Holder::here(sweep);
        match Lease::take() {
            Ok(lease) => {
                h.lease = one_line(&lease.path);
                h.token = lease.token.clone();
                h.keep = Some(Arc::new(lease));
            }
            Err(e) => tracing::warn!(
                "no sweep lease ({e}): a host lock left by this sweep if it is killed stays held up to {HOLD_STALE_MINUTES} min"
            ),
        }
        h
    }

    /// The holder's first stdin line: the fields, tab-separated.
    pub fn note_line(&self) -> String {
        format!(
            "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\n",
            self.sweep,
            self.machine,
            self.machine_id,
            self.user,
            self.pid,
            self.since,
            self.lease,
            self.token
        )
    }

    fn from_kv(kv: &Kv) -> Option<Holder> {
        let get = |k: &str| kv.get(&format!("holder.{k}")).map(str::to_string);
        Some(Holder {
            sweep: get("sweep")?,
            machine: get("machine")?,
            machine_id: get("machine_id").unwrap_or_else(|| "-".into()),
            user: get("user")?,
            pid: get("pid")?.trim().parse().ok()?,
            since: get("since")?,
            // Notes of an fsmatrix before leases: never proven gone.
            lease: get("lease").unwrap_or_else(|| "-".into()),
            token: get("token").unwrap_or_else(|| "-".into()),
            keep: None,
        })
    }
}

impl Holder {
    /// Is the orchestrator of this note (from a host: untrusted) proven
    /// gone, from `here`?  Only by its [`Lease`]: on this machine (same
    /// machine-id), at the path the note names (a lease's name, nothing
    /// else is opened), with the note's token in it, and unlocked.  `Err`
    /// says why it is not proven gone: then it is taken for alive.
    fn proven_gone(&self, here: &Holder) -> Result<(), String> {
        if self.machine_id == "-" || self.machine_id != here.machine_id {
            return Err(format!(
                "its orchestrator runs on another machine ({}), which this one cannot see",
                self.machine
            ));
        }
        if self.lease == "-" || !is_token(&self.token) {
            return Err("its note names no sweep lease (an older fsmatrix), so nothing here can prove its orchestrator gone".into());
        }
        let path = Path::new(&self.lease);
        if !path.is_absolute()
            || path.file_name().and_then(|n| n.to_str()) != Some(&format!("sweep.{}", self.token))
        {
            return Err(format!(
                "its note names {:?} as its sweep lease, which is not a lease's name (sweep.<token>)",
                self.lease
            ));
        }
        let not_here = |e: String| {
            format!(
                "its sweep lease {} {e}: its orchestrator may run in another container or on a clone of this machine",
                self.lease
            )
        };
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(path)
            .map_err(|e| not_here(format!("cannot be opened here ({e})")))?;
        if !file.metadata().is_ok_and(|m| m.is_file()) {
            return Err(not_here("is not a plain file".into()));
        }
        let mut text = String::new();
        let _ = (&file).take(100).read_to_string(&mut text);
        if text.trim() != self.token {
            return Err(not_here("here holds another token".into()));
        }
        match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockShared) {
            // Closing the file drops the lock again.
            Ok(()) => Ok(()),
            Err(e) if e == rustix::io::Errno::WOULDBLOCK => Err(format!(
                "its orchestrator is running here: it holds its sweep lease {}",
                self.lease
            )),
            Err(e) => Err(format!(
                "its sweep lease {} could not be tested ({e})",
                self.lease
            )),
        }
    }
}

impl std::fmt::Display for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "sweep {:?} run by {} on {} (process {}) since {}",
            self.sweep, self.user, self.machine, self.pid, self.since
        )
    }
}

/// The name of this process's user from /etc/passwd, else `uid N`.
fn user_of_this_process() -> String {
    let Ok(uid) = std::fs::metadata("/proc/self").map(|m| m.uid()) else {
        return "unknown".into();
    };
    std::fs::read_to_string("/etc/passwd")
        .ok()
        .and_then(|t| {
            t.lines().find_map(|l| {
                let f: Vec<&str> = l.split(':').collect();
                (f.len() > 2 && f[2] == uid.to_string()).then(|| f[0].to_string())
            })
        })
        .unwrap_or_else(|| format!("uid {uid}"))
}

/// A holder note is `key=value` lines and its input tab-separated: no
/// value may hold a control character, nor be empty.
fn one_line(s: &str) -> String {
    let s: String = s
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .take(200)
        .collect();
    if s.is_empty() {
        "?".into()
    } else {
        s
    }
}

/// The most devices one holder locks: dash opens file descriptors 0-9
/// only, 3 is the host lock, 4-9 the devices.
pub const MAX_LOCKED_DEVICES: usize = 6;

/// Why a host could not be locked.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("lock {host}: {lock} is held by {holder}; {why}")]
    Busy {
        host: String,
        lock: String,
        holder: String,
        /// Why the holder was not ended (it appears alive, or is starting).
        why: String,
    },
    #[error("lock {host}: {reason}")]
    Failed { host: String, reason: String },
    #[error(transparent)]
    Remote(#[from] RemoteError),
}

/// The holder's shell text (see the module documentation).
const HOLD_SCRIPT: &str = "d=$1; stale=$2; shift 2; \
fsmx_tab=$(printf '\\t'); IFS=$fsmx_tab read -r sweep machine machine_id user pid since lease token || exit 65; \
umask 077; mkdir -p -- \"$d\" 2>/dev/null; \
if [ ! -d \"$d\" ] || [ -L \"$d\" ]; then echo \"fsmatrix: the lock folder $d is not a folder\" >&2; exit 70; fi; \
fsmx_mine() { set -- $(ls -ldn -- \"$1\"); [ \"$3\" = \"$(id -u)\" ] && case $1 in d???------*) true ;; *) false ;; esac; }; \
fsmx_mine \"$d\" || { echo \"fsmatrix: the lock folder $d is not a private (0700) folder of uid $(id -u): $(ls -ldn -- \"$d\"); refusing to lock through it\" >&2; exit 70; }; \
command -v flock >/dev/null 2>&1 || { echo 'fsmatrix: flock(1) is missing (util-linux)' >&2; exit 127; }; \
[ $# -le 6 ] || { echo 'fsmatrix: at most 6 devices per host can be locked' >&2; exit 64; }; \
fsmx_busy() { printf 'busy=%s\\t' \"$1\"; tr '\\n' '\\t' < \"$1.holder\" 2>/dev/null; echo; exit 75; }; \
fsmx_note() { printf 'holder.sweep=%s\\nholder.machine=%s\\nholder.machine_id=%s\\nholder.user=%s\\nholder.pid=%s\\nholder.since=%s\\nholder.lease=%s\\nholder.token=%s\\nholder.rpid=%s\\n' \
\"$sweep\" \"$machine\" \"$machine_id\" \"$user\" \"$pid\" \"$since\" \"$lease\" \"$token\" \"$$\" > \"$1.holder\"; }; \
fsmx_pid=$$; fsmx_beat=$d/host.beat; \
( while sleep 10; do \
kill -0 \"$fsmx_pid\" 2>/dev/null || exit 0; \
[ -n \"$(find \"$fsmx_beat\" -mmin \"-$stale\" 2>/dev/null)\" ] || { kill \"$fsmx_pid\"; exit 0; }; \
done ) </dev/null >/dev/null 2>&1 & \
exec 3>>\"$d/host.lock\"; flock -n 3 || fsmx_busy \"$d/host.lock\"; \
n=4; for dev in \"$@\"; do \
r=$(readlink -f -- \"$dev\" 2>/dev/null) || r=$dev; \
key=$(printf '%s' \"$r\" | tr -c 'A-Za-z0-9._-' '_'); \
eval \"exec $n>>\\\"\\$d/dev.\\$key.lock\\\"\"; \
flock -n \"$n\" || fsmx_busy \"$d/dev.$key.lock\"; fsmx_note \"$d/dev.$key.lock\"; n=$((n + 1)); done; \
fsmx_note \"$d/host.lock\"; : > \"$fsmx_beat\"; \
echo locked; while IFS= read -r fsmx_line; do : > \"$fsmx_beat\"; done";

/// The BSD holder: no flock(1) there, but lockf(1) (FreeBSD and DragonFly
/// usr.bin/lockf: `lockf [-knsw] [-t seconds] file command [arguments]`),
/// which holds a lock while it runs a command and exits 75 (EX_TEMPFAIL)
/// when `-t 0` finds it busy.  The locks nest, host lock outermost, around
/// the same holder body as on Linux; a busy chain is asked lock by lock
/// which one is held, to name its holder.  `realpath` for `readlink -f`
/// (DragonFly's readlink has no -f).
const HOLD_SCRIPT_BSD: &str = "d=$1; stale=$2; shift 2; \
fsmx_tab=$(printf '\\t'); IFS=$fsmx_tab read -r sweep machine machine_id user pid since lease token || exit 65; \
umask 077; mkdir -p -- \"$d\" 2>/dev/null; \
if [ ! -d \"$d\" ] || [ -L \"$d\" ]; then echo \"fsmatrix: the lock folder $d is not a folder\" >&2; exit 70; fi; \
fsmx_mine() { set -- $(ls -ldn -- \"$1\"); [ \"$3\" = \"$(id -u)\" ] && case $1 in d???------*) true ;; *) false ;; esac; }; \
fsmx_mine \"$d\" || { echo \"fsmatrix: the lock folder $d is not a private (0700) folder of uid $(id -u): $(ls -ldn -- \"$d\"); refusing to lock through it\" >&2; exit 70; }; \
command -v lockf >/dev/null 2>&1 || { echo 'fsmatrix: lockf(1) is missing' >&2; exit 127; }; \
[ $# -le 6 ] || { echo 'fsmatrix: at most 6 devices per host can be locked' >&2; exit 64; }; \
fsmx_busy() { printf 'busy=%s\\t' \"$1\"; tr '\\n' '\\t' < \"$1.holder\" 2>/dev/null; echo; exit 75; }; \
fsmx_locks=$d/host.lock; for dev in \"$@\"; do \
r=$(realpath -- \"$dev\" 2>/dev/null) || r=$dev; \
key=$(printf '%s' \"$r\" | tr -c 'A-Za-z0-9._-' '_'); fsmx_locks=\"$fsmx_locks $d/dev.$key.lock\"; done; \
fsmx_body='d=$1; stale=$2; sweep=$3; machine=$4; machine_id=$5; user=$6; pid=$7; since=$8; lease=$9; shift 9; token=$1; shift; \
fsmx_note() { printf \"holder.sweep=%s\\nholder.machine=%s\\nholder.machine_id=%s\\nholder.user=%s\\nholder.pid=%s\\nholder.since=%s\\nholder.lease=%s\\nholder.token=%s\\nholder.rpid=%s\\n\" \
\"$sweep\" \"$machine\" \"$machine_id\" \"$user\" \"$pid\" \"$since\" \"$lease\" \"$token\" \"$$\" > \"$1.holder\"; }; \
for f in \"$@\"; do fsmx_note \"$f\"; done; fsmx_pid=$$; fsmx_beat=$d/host.beat; : > \"$fsmx_beat\"; \
( while sleep 10; do kill -0 \"$fsmx_pid\" 2>/dev/null || exit 0; \
[ -n \"$(find \"$fsmx_beat\" -mmin \"-$stale\" 2>/dev/null)\" ] || { kill \"$fsmx_pid\"; exit 0; }; \
done ) </dev/null >/dev/null 2>&1 & \
echo locked; while IFS= read -r fsmx_line; do : > \"$fsmx_beat\"; done'; \
set --; for f in $fsmx_locks; do set -- \"$@\" lockf -k -s -t 0 \"$f\"; done; \
\"$@\" /bin/sh -c \"$fsmx_body\" fsmx-hold \"$d\" \"$stale\" \"$sweep\" \"$machine\" \"$machine_id\" \"$user\" \"$pid\" \"$since\" \"$lease\" \"$token\" $fsmx_locks; \
rc=$?; if [ \"$rc\" -eq 75 ]; then for f in $fsmx_locks; do lockf -k -s -t 0 \"$f\" true || fsmx_busy \"$f\"; done; fi; exit \"$rc\"";

/// Ends holder `$2` if the note `$1` still names it and the lease token
/// `$3`, after writing who ends it and why to `$4` (after `set --`, with
/// the ender's sweep, machine, user, process and the reason as `$5`..`$9`).
const END_ORPHAN: &str = "; if grep -qx \"holder.rpid=$2\" \"$1\" && grep -qx \"holder.token=$3\" \"$1\"; then \
printf 'ended_by.sweep=%s\\nended_by.machine=%s\\nended_by.user=%s\\nended_by.pid=%s\\nended_by.why=%s\\n' \"$5\" \"$6\" \"$7\" \"$8\" \"$9\" > \"$4\"; \
kill \"$2\"; sleep 1; fi";

/// Where the ender of the holder of lease `token` says why (in `dir`).
fn ended_path(dir: &str, token: &str) -> String {
    format!("{dir}/ended.{token}")
}

/// The command that ends the holder `rpid` of `victim` (as [`END_ORPHAN`]),
/// saying that `ender` did it because of `why`.
fn end_command(dir: &str, victim: &Holder, rpid: u32, ender: &Holder, why: &str) -> RemoteCommand {
    RemoteCommand::raw("set --")
        .arg(format!("{dir}/host.lock.holder"))
        .arg(rpid.to_string())
        .arg(&victim.token)
        .arg(ended_path(dir, &victim.token))
        .arg(&ender.sweep)
        .arg(&ender.machine)
        .arg(&ender.user)
        .arg(ender.pid.to_string())
        .arg(one_line(why))
        .raw_arg(END_ORPHAN)
}

/// Prints (and removes) what the ender of the holder of `token` wrote.
fn ended_command(dir: &str, token: &str) -> RemoteCommand {
    RemoteCommand::raw("set --")
        .arg(ended_path(dir, token))
        .raw_arg("; if [ -f \"$1\" ]; then head -c 4096 -- \"$1\"; rm -f -- \"$1\"; fi")
}

/// What an ender wrote ([`END_ORPHAN`]) as the message of the sweep whose
/// lock it ended; `None` if it wrote nothing.
fn ended_message(host: &str, text: &str) -> Option<String> {
    let kv = Kv::parse(text);
    let get = |k: &str| kv.get(&format!("ended_by.{k}")).map(str::to_string);
    let (sweep, machine) = (get("sweep")?, get("machine")?);
    Some(crate::text::terminal_safe(&format!(
        "your host lock on {host} was ended by sweep {sweep:?} on {machine} (process {}, user {}): {}",
        get("pid").unwrap_or_else(|| "?".into()),
        get("user").unwrap_or_else(|| "?".into()),
        get("why").unwrap_or_else(|| "no reason given".into()),
    ))
    .into_owned())
}

/// A host's locks, held: the holder on the host and the sweep's [`Lease`]
/// that proves the sweep alive to other orchestrators while it lasts.
#[derive(Debug)]
pub struct HostLock {
    held: Held,
    dir: &'static str,
    token: String,
    _lease: Option<Arc<Lease>>,
}

impl HostLock {
    /// Resolves once the holder or its connection has gone away by itself.
    pub fn lost(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        self.held.lost()
    }

    /// Ends the holder and waits (bounded) until the locks are free.
    pub async fn release(self) {
        self.held.release().await;
    }

    /// Why the lock on `host` was lost, for the sweep that lost it: the
    /// words of another sweep that ended its holder (asked of the host
    /// within [`crate::timeouts::LOST_LOCK_WHY`]: a dead connection is not
    /// waited for), else the connection.
    pub async fn why_lost<R: Remote>(&self, remote: &R, host: &str) -> String {
        let bound = crate::timeouts::LOST_LOCK_WHY;
        let cmd = ended_command(self.dir, &self.token);
        let ask = remote.exec(&cmd, ExecOptions::with_timeout(bound));
        let told = match is_token(&self.token) {
            true => tokio::time::timeout(bound, ask)
                .await
                .ok()
                .and_then(Result::ok)
                .and_then(|o| ended_message(host, &String::from_utf8_lossy(&o.stdout))),
            false => None,
        };
        told.unwrap_or_else(|| "the host lock was lost (its connection dropped)".into())
    }
}

/// The command that takes `host`'s locks (in `dir`); the holder's note
/// comes first on its stdin ([`Holder::note_line`]), so that the command is
/// the same for every run (`plan --commands` shows it as sent).
pub fn lock_command(dir: &str, host: &Host) -> RemoteCommand {
    RemoteCommand::raw("set --")
        .arg(dir)
        .arg(crate::timeouts::HOLD_STALE_MINUTES.to_string())
        .args(host.devices.iter().map(|d| d.as_str()))
        .raw_arg(";")
        .raw_arg(match host.os.profile().lock_holder {
            LockHolder::Flock => HOLD_SCRIPT,
            LockHolder::Lockf => HOLD_SCRIPT_BSD,
        })
}

/// Take `host`'s locks; they are held until the returned handle is released
/// or dropped, or the connection dies.  A busy host lock whose holder's
/// orchestrator is proven gone ([`Holder::proven_gone`]) is ended once and
/// asked again; any other busy lock refuses, saying why it was not ended.
pub async fn lock_host<R: Remote>(
    remote: &R,
    host: &Host,
    holder: &Holder,
) -> Result<HostLock, LockError> {
    let name = host.name.as_str().to_string();
    if host.devices.len() > MAX_LOCKED_DEVICES {
        return Err(LockError::Failed {
            host: name,
            reason: format!(
                "it lists {} devices; at most {MAX_LOCKED_DEVICES} can be locked per host",
                host.devices.len()
            ),
        });
    }
    let dir = lock_dir(host.os);
    let cmd = lock_command(dir, host);
    let note = holder.note_line();
    let host_lock = format!("{dir}/host.lock");
    let mut ended_orphan = false;
    loop {
        let (lock, noted) = match try_lock(remote, &cmd, &note, &name).await? {
            Attempt::Held(held) => {
                return Ok(HostLock {
                    held,
                    dir,
                    token: holder.token.clone(),
                    _lease: holder.keep.clone(),
                })
            }
            Attempt::Busy { lock, noted } => (lock, noted),
        };
        let Some((h, rpid)) = noted else {
            return Err(LockError::Busy {
                host: name,
                lock,
                holder: "a process that has not written its note yet".into(),
                why: "it is starting; try again in a moment".into(),
            });
        };
        let why = match h.proven_gone(holder) {
            Ok(()) if !ended_orphan && lock == host_lock && rpid.is_some() => {
                let rpid = rpid.unwrap_or_default();
                // Its orchestrator is gone: the holder on the host is an
                // orphan (a cut link sshd has not noticed).  Ended, only if
                // the note still names it, then asked once more.
                let why = format!(
                    "its orchestrator on {} had ended (its sweep lease {} was free)",
                    h.machine, h.lease
                );
                tracing::warn!(host = %name, "the lock is held for {h}, whose orchestrator on this machine has ended (its sweep lease {} is free); ending its orphaned holder (process {rpid} on the host)", h.lease);
                remote
                    .exec(
                        &end_command(dir, &h, rpid, holder, &why),
                        ExecOptions::with_timeout(crate::timeouts::PROBE),
                    )
                    .await?;
                ended_orphan = true;
                continue;
            }
            Ok(()) => format!(
                "its orchestrator is gone, but its holder could not be ended from here; it ends by itself within {HOLD_STALE_MINUTES} min"
            ),
            Err(why) => format!("it appears alive, so it was not ended: {why}"),
        };
        return Err(LockError::Busy {
            host: name,
            lock,
            holder: h.to_string(),
            why,
        });
    }
}

/// What one attempt at the locks gave.
enum Attempt {
    Held(Held),
    /// `lock` is busy; its holder's note and remote process, if it wrote them.
    Busy {
        lock: String,
        noted: Option<(Holder, Option<u32>)>,
    },
}

/// One attempt.
async fn try_lock<R: Remote>(
    remote: &R,
    cmd: &RemoteCommand,
    note: &str,
    name: &str,
) -> Result<Attempt, LockError> {
    let name = name.to_string();
    let outcome = remote
        .hold(cmd, note.as_bytes(), crate::timeouts::LOCK)
        .await?;
    match outcome {
        HoldOutcome::Held { held, first_line } if first_line.trim() == "locked" => {
            Ok(Attempt::Held(held))
        }
        HoldOutcome::Held { held, first_line } => {
            held.release().await;
            // Busy: one line, `busy=<lock>` and the holder's note, tab-separated.
            let kv = Kv::parse(&first_line.replace('\t', "\n"));
            let rpid = kv
                .get("holder.rpid")
                .and_then(|p| p.trim().parse::<u32>().ok());
            match kv.get("busy") {
                Some(lock) => Ok(Attempt::Busy {
                    lock: lock.to_string(),
                    noted: Holder::from_kv(&kv).map(|h| (h, rpid)),
                }),
                None => Err(LockError::Failed {
                    host: name,
                    reason: format!("the lock holder said {first_line:?}, expected \"locked\""),
                }),
            }
        }
        HoldOutcome::Ended(out) => Err(LockError::Failed {
            host: name,
            reason: format!(
                "the lock holder ended: {}{}",
                out.status,
                match out.stderr_tail(5) {
                    t if t.is_empty() => String::new(),
                    t => format!("; {t}"),
                }
            ),
        }),
    }
}

#[cfg(test)]
mod tests {
    //! The holder script itself, run here under the local `/bin/sh` (dash
    //! on Debian) and busybox sh when installed, with the real flock(1).
    use super::*;
    use std::io::{BufRead, BufReader};
    use std::path::Path;
    use std::process::{Child, Command, Stdio};

    fn host(devices: &[&str]) -> Host {
        let list: Vec<String> = devices.iter().map(|d| format!("{d:?}")).collect();
        let text = format!(
            "[[host]]\nname = \"h\"\naddress = \"127.0.0.1\"\nos = \"linux\"\ndevices = [{}]\n",
            list.join(", ")
        );
        let inv = crate::config::Inventory::parse(Path::new("inv.toml"), text)
            .unwrap_or_else(|e| panic!("{e}"));
        inv.hosts[0].clone()
    }

    fn holder(sweep: &str) -> Holder {
        Holder {
            sweep: sweep.into(),
            machine: "laptop".into(),
            machine_id: "0123abcd".into(),
            user: "ann".into(),
            pid: 4242,
            since: "2026-12-01T10:00:00Z".into(),
            lease: format!("/run/fsmatrix-leases/sweep.{TOKEN}"),
            token: TOKEN.into(),
            keep: None,
        }
    }

    const TOKEN: &str = "0123456789abcdef0123456789abcdef";

    fn start(shell: &[&str], dir: &Path, host: &Host, h: &Holder) -> (Child, String) {
        start_with(shell, dir, host, h, &[])
    }

    /// `start` with extra environment variables for the holder's shell.
    fn start_with(
        shell: &[&str],
        dir: &Path,
        host: &Host,
        h: &Holder,
        env: &[(&str, &str)],
    ) -> (Child, String) {
        let text = lock_command(dir.to_str().unwrap(), host)
            .to_shell()
            .unwrap()
            .to_string();
        let mut child = Command::new(shell[0])
            .args(&shell[1..])
            .arg("-c")
            .arg(text)
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        {
            use std::io::Write;
            let stdin = child.stdin.as_mut().unwrap();
            stdin.write_all(h.note_line().as_bytes()).unwrap();
            stdin.flush().unwrap();
        }
        let mut line = String::new();
        BufReader::new(child.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        (child, line)
    }

    fn wait_gone(child: &mut Child) {
        for _ in 0..100 {
            if child.try_wait().unwrap().is_some() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        panic!("the holder did not end");
    }

    fn shells() -> Vec<Vec<&'static str>> {
        let mut v = vec![vec!["/bin/sh"]];
        if crate::testing::tool_or_skip("/bin/busybox", "busybox") {
            v.push(vec!["/bin/busybox", "sh"]);
        }
        v
    }

    fn has_flock() -> bool {
        Command::new("flock").arg("-V").output().is_ok()
    }

    #[test]
    fn one_holder_at_a_time_and_the_lock_dies_with_its_holder() {
        if !has_flock() {
            panic!("flock(1) is missing: install util-linux");
        }
        for sh in shells() {
            let tmp = tempfile::tempdir().unwrap();
            let dir = tmp.path().join("locks");
            // A device named two ways: /dev/null and a link to it.
            let dev = Path::new("/dev/null");
            let link = Path::new("/dev/shm").join(format!("fsmx-lock-test-{}", std::process::id()));
            let _ = std::fs::remove_file(&link);
            std::os::unix::fs::symlink(dev, &link).unwrap();
            let h = host(&[dev.to_str().unwrap()]);
            let (mut a, line) = start(&sh, &dir, &h, &holder("first"));
            assert_eq!(line, "locked\n", "{sh:?}");
            // A second holder is refused and told who holds the lock.
            let (b, line) = start(&sh, &dir, &h, &holder("second"));
            let rest = b.wait_with_output().unwrap();
            assert_eq!(rest.status.code(), Some(75), "{sh:?}");
            let note = Kv::parse(&line.replace('\t', "\n"));
            assert_eq!(
                note.get("busy"),
                Some(format!("{}/host.lock", dir.display()).as_str())
            );
            assert_eq!(Holder::from_kv(&note), Some(holder("first")));
            // The same device through another path is the same device lock.
            let other = host(&[link.to_str().unwrap()]);
            let key = dev.to_str().unwrap().replace('/', "_");
            assert!(dir.join(format!("dev.{key}.lock.holder")).exists());
            // EOF on stdin (a release, or sshd closing the channel) frees it.
            drop(a.stdin.take());
            wait_gone(&mut a);
            let (mut c, line) = start(&sh, &dir, &other, &holder("third"));
            assert_eq!(line, "locked\n", "{sh:?}");
            // A holder killed outright frees it too, and its note left
            // behind does not make the lock look held.
            c.kill().unwrap();
            c.wait().unwrap();
            let (mut d, line) = start(&sh, &dir, &h, &holder("fourth"));
            assert_eq!(line, "locked\n", "{sh:?}");
            drop(d.stdin.take());
            wait_gone(&mut d);
            std::fs::remove_file(&link).unwrap();
        }
    }

    /// The BSD holder (lockf(1) instead of flock(1)), under dash with the
    /// FreeBSD stand-in's lockf emulator on PATH (docs/standin-hosts.md): one
    /// holder at a time, the second told who holds which lock, freed at EOF
    /// and when killed.
    #[test]
    fn the_bsd_holder_locks_with_lockf() {
        let emu = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lab/standin/freebsd");
        let path = format!(
            "{}:{}",
            emu.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("locks");
        let mut h = host(&["/dev/null"]);
        h.os = Os::Freebsd;
        let text = lock_command(dir.to_str().unwrap(), &h)
            .to_shell()
            .unwrap()
            .to_string();
        assert!(text.contains("lockf -k -s -t 0") && !text.contains("flock"));
        let env = [("PATH", path.as_str()), ("FSMX_STANDIN_REAL", "/usr")];
        let start_bsd = |who: &Holder| start_with(&["/bin/sh"], &dir, &h, who, &env);
        let (mut a, line) = start_bsd(&holder("first"));
        assert_eq!(line, "locked\n");
        let (b, line) = start_bsd(&holder("second"));
        let rest = b.wait_with_output().unwrap();
        assert_eq!(
            rest.status.code(),
            Some(75),
            "{}",
            String::from_utf8_lossy(&rest.stderr)
        );
        let note = Kv::parse(&line.replace('\t', "\n"));
        assert_eq!(
            note.get("busy"),
            Some(format!("{}/host.lock", dir.display()).as_str())
        );
        assert_eq!(Holder::from_kv(&note), Some(holder("first")));
        assert!(dir.join("dev._dev_null.lock.holder").exists());
        drop(a.stdin.take());
        wait_gone(&mut a);
        let (mut c, line) = start_bsd(&holder("third"));
        assert_eq!(line, "locked\n");
        // The note names the body that holds the locks: ending it frees them.
        let text_note = std::fs::read_to_string(dir.join("host.lock.holder")).unwrap();
        let rpid = Kv::parse(&text_note).u64("holder.rpid").unwrap();
        Command::new("kill").arg(rpid.to_string()).status().unwrap();
        wait_gone(&mut c);
        let (mut d, line) = start_bsd(&holder("fourth"));
        assert_eq!(line, "locked\n");
        drop(d.stdin.take());
        wait_gone(&mut d);
    }

    /// A lease-shaped file `<dir>/sweep.<token>` locked by another
    /// process that is not named fsmatrix, in another PID namespace when
    /// unshare(1) works here: (the process, the lease path).
    fn foreign_lease(dir: &Path, token: &str) -> (Child, String) {
        let path = dir.join(format!("sweep.{token}"));
        std::fs::write(&path, format!("{token}\n")).unwrap();
        let pidns = Command::new("unshare")
            .args(["--pid", "--fork", "true"])
            .status()
            .is_ok_and(|s| s.success());
        // The lock is taken by the process that is killed (the shell
        // becomes `sleep`), so no child is left holding its descriptor.
        let mut cmd = if pidns {
            let mut c = Command::new("unshare");
            c.args(["--pid", "--fork", "--kill-child", "sh"]);
            c
        } else {
            Command::new("sh")
        };
        let mut child = cmd
            .args([
                "-c",
                "exec 9>>\"$1\" && flock -x 9 && echo held && exec sleep 60",
                "sh",
            ])
            .arg(&path)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line, "held\n");
        (child, path.to_str().unwrap().to_string())
    }

    #[test]
    fn a_holder_is_proven_gone_only_by_its_free_lease_never_by_a_process_name() {
        if !has_flock() {
            panic!("flock(1) is missing: install util-linux");
        }
        let here = Holder::here("x");
        if here.machine_id == "-" {
            panic!("no /etc/machine-id here: the lease test needs one");
        }
        let tmp = tempfile::tempdir().unwrap();
        let token = random_token();
        let (mut other, path) = foreign_lease(tmp.path(), &token);
        let mut note = holder("live");
        note.machine_id = here.machine_id.clone();
        note.lease = path.clone();
        note.token = token.clone();
        // Its orchestrator runs (under another name, maybe another PID
        // namespace; its process number means nothing): alive.
        note.pid = u32::MAX - 1;
        let why = note.proven_gone(&here).unwrap_err();
        assert!(why.contains("is running here"), "{why}");
        // The same note from another machine: never ours to judge.
        let mut far = note.clone();
        far.machine_id = "ffff".into();
        assert!(far
            .proven_gone(&here)
            .unwrap_err()
            .contains("another machine"));
        // The process is gone: its lease is free, and that proves it.
        other.kill().unwrap();
        other.wait().unwrap();
        for _ in 0..50 {
            if note.proven_gone(&here).is_ok() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        assert_eq!(note.proven_gone(&here), Ok(()));
        // Anything else is not a proof: another token at the path (another
        // container's /run, a clone), no file, no lease, a path that is not
        // a lease's name.
        let mut clone = note.clone();
        clone.token = random_token();
        clone.lease = tmp
            .path()
            .join(format!("sweep.{}", clone.token))
            .to_str()
            .unwrap()
            .to_string();
        std::fs::write(&clone.lease, format!("{token}\n")).unwrap();
        let why = clone.proven_gone(&here).unwrap_err();
        assert!(why.contains("another token"), "{why}");
        std::fs::remove_file(&path).unwrap();
        let why = note.proven_gone(&here).unwrap_err();
        assert!(why.contains("cannot be opened here"), "{why}");
        let mut old = note.clone();
        old.lease = "-".into();
        old.token = "-".into();
        assert!(old
            .proven_gone(&here)
            .unwrap_err()
            .contains("no sweep lease"));
        let mut odd = note.clone();
        odd.lease = "/etc/passwd".into();
        let why = odd.proven_gone(&here).unwrap_err();
        assert!(why.contains("not a lease's name"), "{why}");
        // This process's own lease is held: a note naming it is alive.
        let me = Holder::leased("me");
        assert!(me.keep.is_some(), "a lease could be taken here");
        let mut mine = me.clone();
        mine.keep = None;
        let why = mine.proven_gone(&here).unwrap_err();
        assert!(why.contains("is running here"), "{why}");
        let path = me.lease.clone();
        drop(me);
        assert!(
            !Path::new(&path).exists(),
            "a lease is removed when dropped"
        );
    }

    #[test]
    fn a_lease_is_made_only_in_a_private_folder_and_locked_before_it_is_seen() {
        use std::os::unix::fs::MetadataExt;
        let tmp = tempfile::tempdir().unwrap();
        let uid = std::fs::metadata("/proc/self").unwrap().uid();
        let open = tmp.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let link = tmp.path().join("link");
        let real = tmp.path().join("real");
        std::fs::create_dir(&real).unwrap();
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::os::unix::fs::symlink(&real, &link).unwrap();
        for dir in [&open, &link] {
            let e = Lease::take_in(dir, uid).unwrap_err();
            assert!(e.contains("not a private (0700) folder"), "{e}");
        }
        let dir = tmp.path().join("leases");
        let lease = Lease::take_in(&dir, uid).unwrap();
        let meta = std::fs::metadata(&dir).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o700);
        assert_eq!(
            std::fs::read_to_string(&lease.path).unwrap(),
            format!("{}\n", lease.token)
        );
        let names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            [format!("sweep.{}", lease.token)],
            "no temporary left"
        );
        let busy = Command::new("flock")
            .args(["-n", "-s", &lease.path, "true"])
            .status()
            .unwrap();
        assert!(!busy.success(), "the lease is locked while it lives");
    }

    #[test]
    fn an_ended_holder_is_told_who_ended_it_and_why() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("locks");
        let d = dir.to_str().unwrap();
        let h = host(&["/dev/loop9"]);
        let victim = holder("first");
        let (mut a, line) = start(&["/bin/sh"], &dir, &h, &victim);
        assert_eq!(line, "locked\n");
        let text = std::fs::read_to_string(dir.join("host.lock.holder")).unwrap();
        let kv = Kv::parse(&text);
        let rpid: u32 = kv.u64("holder.rpid").unwrap() as u32;
        assert_eq!(Holder::from_kv(&kv), Some(victim.clone()));
        let ender = holder("second");
        let sh = |cmd: RemoteCommand| {
            Command::new("/bin/sh")
                .arg("-c")
                .arg(cmd.to_shell().unwrap())
                .output()
                .unwrap()
        };
        // Only the holder the note names, with the lease token it names.
        sh(end_command(d, &victim, rpid + 1, &ender, "test"));
        let mut stranger = victim.clone();
        stranger.token = "f".repeat(32);
        sh(end_command(d, &stranger, rpid, &ender, "test"));
        assert!(
            a.try_wait().unwrap().is_none(),
            "only the named holder is ended"
        );
        assert!(!Path::new(&ended_path(d, TOKEN)).exists());
        sh(end_command(
            d,
            &victim,
            rpid,
            &ender,
            "its orchestrator had ended",
        ));
        wait_gone(&mut a);
        // The sweep that lost it reads who ended it (once: then removed).
        let out = sh(ended_command(d, TOKEN));
        let said = ended_message("h", &String::from_utf8_lossy(&out.stdout)).unwrap();
        assert_eq!(
            said,
            "your host lock on h was ended by sweep \"second\" on laptop (process 4242, user ann): its orchestrator had ended"
        );
        assert!(!Path::new(&ended_path(d, TOKEN)).exists());
        let out = sh(ended_command(d, TOKEN));
        assert_eq!(
            ended_message("h", &String::from_utf8_lossy(&out.stdout)),
            None
        );
        let (mut b, line) = start(&["/bin/sh"], &dir, &h, &holder("next"));
        assert_eq!(line, "locked\n");
        drop(b.stdin.take());
        wait_gone(&mut b);
    }

    #[test]
    fn a_lock_folder_that_is_not_private_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let h = host(&["/dev/loop9"]);
        let open = tmp.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let real = tmp.path().join("real");
        std::fs::create_dir(&real).unwrap();
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        for dir in [&open, &link] {
            let (child, line) = start(&["/bin/sh"], dir, &h, &holder("x"));
            assert_eq!(line, "", "{}", dir.display());
            let out = child.wait_with_output().unwrap();
            assert_eq!(out.status.code(), Some(70), "{}", dir.display());
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(
                err.contains("refusing to lock") || err.contains("not a folder"),
                "{err}"
            );
            assert!(!dir.join("host.lock").exists());
        }
    }

    #[test]
    fn a_silent_orchestrator_loses_the_lock_after_the_stale_limit() {
        // Minutes are the unit; "0" makes the first check (10 s) end it.
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("locks");
        let h = host(&["/dev/loop9"]);
        let text = lock_command(dir.to_str().unwrap(), &h)
            .to_shell()
            .unwrap()
            .replacen(" 2 ", " 0 ", 1);
        let mut child = Command::new("/bin/sh")
            .arg("-c")
            .arg(text)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        {
            use std::io::Write;
            let stdin = child.stdin.as_mut().unwrap();
            stdin.write_all(holder("x").note_line().as_bytes()).unwrap();
            stdin.flush().unwrap();
        }
        let t0 = std::time::Instant::now();
        for _ in 0..300 {
            if child.try_wait().unwrap().is_some() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        assert!(
            child.try_wait().unwrap().is_some(),
            "the holder kept the lock without heartbeats for {:?}",
            t0.elapsed()
        );
        let (_, line) = start(&["/bin/sh"], &dir, &h, &holder("y"));
        assert_eq!(line, "locked\n");
    }
}
