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
//!   for [`crate::timeouts::HOLD_STALE_MINUTES`].  A lock file left behind
//!   is never held by a dead process, and its holder note is only read when
//!   the lock is busy, i.e. when its writer is alive.
//! - A busy lock refuses the whole sweep before anything is touched, naming
//!   the holder (sweep, machine, user, process, since when).
use super::facts::Kv;
use crate::config::os::LockHolder;
use crate::config::{Host, Os};
use crate::remote::{Held, HoldOutcome, Remote, RemoteCommand, RemoteError};

/// Where a host's locks live.  Linux: `/run/lock` (tmpfs, cleared at boot:
/// a lock cannot outlive the machine's uptime); the BSDs: `/var/run`.
pub fn lock_dir(os: Os) -> &'static str {
    os.profile().lock_dir
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
}

impl Holder {
    /// This process, running the sweep `sweep`.
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
        }
    }

    /// The holder's first stdin line: the fields, tab-separated.
    pub fn note_line(&self) -> String {
        format!(
            "{}\t{}\t{}\t{}\t{}\t{}\n",
            self.sweep, self.machine, self.machine_id, self.user, self.pid, self.since
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
        })
    }
}

impl Holder {
    /// Is this the note of a sweep of this machine whose orchestrator is
    /// gone (its process ended, or the number is now another program's)?
    /// Its remote holder is then an orphan: a cut link that sshd has not
    /// noticed, the holder not yet past its heartbeat limit.
    fn orphaned_here(&self, here: &Holder) -> bool {
        if self.machine_id == "-" || self.machine_id != here.machine_id {
            return false;
        }
        let comm = std::fs::read_to_string(format!("/proc/{}/comm", self.pid));
        !matches!(comm, Ok(c) if c.trim() == "fsmatrix")
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
    use std::os::unix::fs::MetadataExt;
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
    #[error("lock {host}: {lock} is held by {holder}")]
    Busy {
        host: String,
        lock: String,
        holder: String,
    },
    #[error("lock {host}: {reason}")]
    Failed { host: String, reason: String },
    #[error(transparent)]
    Remote(#[from] RemoteError),
}

/// The holder's shell text (see the module documentation).
const HOLD_SCRIPT: &str = "d=$1; stale=$2; shift 2; \
fsmx_tab=$(printf '\\t'); IFS=$fsmx_tab read -r sweep machine machine_id user pid since || exit 65; \
umask 077; mkdir -p -- \"$d\" 2>/dev/null; \
if [ ! -d \"$d\" ] || [ -L \"$d\" ]; then echo \"fsmatrix: the lock folder $d is not a folder\" >&2; exit 70; fi; \
fsmx_mine() { set -- $(ls -ldn -- \"$1\"); [ \"$3\" = \"$(id -u)\" ] && case $1 in d???------*) true ;; *) false ;; esac; }; \
fsmx_mine \"$d\" || { echo \"fsmatrix: the lock folder $d is not a private (0700) folder of uid $(id -u): $(ls -ldn -- \"$d\"); refusing to lock through it\" >&2; exit 70; }; \
command -v flock >/dev/null 2>&1 || { echo 'fsmatrix: flock(1) is missing (util-linux)' >&2; exit 127; }; \
[ $# -le 6 ] || { echo 'fsmatrix: at most 6 devices per host can be locked' >&2; exit 64; }; \
fsmx_busy() { printf 'busy=%s\\t' \"$1\"; tr '\\n' '\\t' < \"$1.holder\" 2>/dev/null; echo; exit 75; }; \
fsmx_note() { printf 'holder.sweep=%s\\nholder.machine=%s\\nholder.machine_id=%s\\nholder.user=%s\\nholder.pid=%s\\nholder.since=%s\\nholder.rpid=%s\\n' \
\"$sweep\" \"$machine\" \"$machine_id\" \"$user\" \"$pid\" \"$since\" \"$$\" > \"$1.holder\"; }; \
exec 3>>\"$d/host.lock\"; flock -n 3 || fsmx_busy \"$d/host.lock\"; \
n=4; for dev in \"$@\"; do \
r=$(readlink -f -- \"$dev\" 2>/dev/null) || r=$dev; \
key=$(printf '%s' \"$r\" | tr -c 'A-Za-z0-9._-' '_'); \
eval \"exec $n>>\\\"\\$d/dev.\\$key.lock\\\"\"; \
flock -n \"$n\" || fsmx_busy \"$d/dev.$key.lock\"; fsmx_note \"$d/dev.$key.lock\"; n=$((n + 1)); done; \
fsmx_note \"$d/host.lock\"; fsmx_pid=$$; fsmx_beat=$d/host.beat; : > \"$fsmx_beat\"; \
( exec 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&-; while sleep 10; do \
kill -0 \"$fsmx_pid\" 2>/dev/null || exit 0; \
[ -n \"$(find \"$fsmx_beat\" -mmin \"-$stale\" 2>/dev/null)\" ] || { kill \"$fsmx_pid\"; exit 0; }; \
done ) </dev/null >/dev/null 2>&1 & \
echo locked; while IFS= read -r fsmx_line; do : > \"$fsmx_beat\"; done";

/// The BSD holder: no flock(1) there, but lockf(1) (FreeBSD and DragonFly
/// usr.bin/lockf: `lockf [-knsw] [-t seconds] file command [arguments]`),
/// which holds a lock while it runs a command and exits 75 (EX_TEMPFAIL)
/// when `-t 0` finds it busy.  The locks nest, host lock outermost, around
/// the same holder body as on Linux; a busy chain is asked lock by lock
/// which one is held, to name its holder.  `realpath` for `readlink -f`
/// (DragonFly's readlink has no -f).
const HOLD_SCRIPT_BSD: &str = "d=$1; stale=$2; shift 2; \
fsmx_tab=$(printf '\\t'); IFS=$fsmx_tab read -r sweep machine machine_id user pid since || exit 65; \
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
fsmx_body='d=$1; stale=$2; sweep=$3; machine=$4; machine_id=$5; user=$6; pid=$7; since=$8; shift 8; \
fsmx_note() { printf \"holder.sweep=%s\\nholder.machine=%s\\nholder.machine_id=%s\\nholder.user=%s\\nholder.pid=%s\\nholder.since=%s\\nholder.rpid=%s\\n\" \
\"$sweep\" \"$machine\" \"$machine_id\" \"$user\" \"$pid\" \"$since\" \"$$\" > \"$1.holder\"; }; \
for f in \"$@\"; do fsmx_note \"$f\"; done; fsmx_pid=$$; fsmx_beat=$d/host.beat; : > \"$fsmx_beat\"; \
( while sleep 10; do kill -0 \"$fsmx_pid\" 2>/dev/null || exit 0; \
[ -n \"$(find \"$fsmx_beat\" -mmin \"-$stale\" 2>/dev/null)\" ] || { kill \"$fsmx_pid\"; exit 0; }; \
done ) </dev/null >/dev/null 2>&1 & \
echo locked; while IFS= read -r fsmx_line; do : > \"$fsmx_beat\"; done'; \
set --; for f in $fsmx_locks; do set -- \"$@\" lockf -k -s -t 0 \"$f\"; done; \
\"$@\" /bin/sh -c \"$fsmx_body\" fsmx-hold \"$d\" \"$stale\" \"$sweep\" \"$machine\" \"$machine_id\" \"$user\" \"$pid\" \"$since\" $fsmx_locks; \
rc=$?; if [ \"$rc\" -eq 75 ]; then for f in $fsmx_locks; do lockf -k -s -t 0 \"$f\" true || fsmx_busy \"$f\"; done; fi; exit \"$rc\"";

/// Ends holder `$2` if the note `$1` still names it (after `set --`).
const END_ORPHAN: &str = "; if grep -qx \"holder.rpid=$2\" \"$1\"; then kill \"$2\"; sleep 1; fi";

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
/// or dropped, or the connection dies.
pub async fn lock_host<R: Remote>(
    remote: &R,
    host: &Host,
    holder: &Holder,
) -> Result<Held, LockError> {
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
    let mut ended_orphan = false;
    loop {
        let orphan = match try_lock(remote, &cmd, &note, &name).await {
            Ok(held) => return Ok(held),
            Err((e, Some((h, rpid))))
                if !ended_orphan
                    && h.orphaned_here(holder)
                    && matches!(&e, LockError::Busy { lock, .. } if *lock == format!("{dir}/host.lock")) =>
            {
                (h, rpid)
            }
            Err((e, _)) => return Err(e),
        };
        // A lock of a sweep of this machine whose orchestrator is gone: its
        // holder on the host is an orphan (a cut link sshd has not noticed).
        // Ended, only if the note still names it, then asked once more.
        let (h, rpid) = orphan;
        tracing::warn!(host = %name, "the lock is held for {h}, whose orchestrator on this machine has ended; ending its orphaned holder (process {rpid} on the host)");
        let end = RemoteCommand::raw("set --")
            .arg(format!("{dir}/host.lock.holder"))
            .arg(rpid.to_string())
            .raw_arg(END_ORPHAN);
        remote
            .exec(
                &end,
                crate::remote::ExecOptions::with_timeout(crate::timeouts::PROBE),
            )
            .await?;
        ended_orphan = true;
    }
}

/// One attempt; a busy lock comes with its holder's note and remote pid.
async fn try_lock<R: Remote>(
    remote: &R,
    cmd: &RemoteCommand,
    note: &str,
    name: &str,
) -> Result<Held, (LockError, Option<(Holder, u32)>)> {
    let name = name.to_string();
    let outcome = remote
        .hold(cmd, note.as_bytes(), crate::timeouts::LOCK)
        .await
        .map_err(|e| (LockError::Remote(e), None))?;
    match outcome {
        HoldOutcome::Held { held, first_line } if first_line.trim() == "locked" => Ok(held),
        HoldOutcome::Held { held, first_line } => {
            held.release().await;
            // Busy: one line, `busy=<lock>` and the holder's note, tab-separated.
            let kv = Kv::parse(&first_line.replace('\t', "\n"));
            let rpid = kv
                .get("holder.rpid")
                .and_then(|p| p.trim().parse::<u32>().ok());
            match (kv.get("busy"), Holder::from_kv(&kv)) {
                (Some(lock), Some(h)) => Err((
                    LockError::Busy {
                        host: name,
                        lock: lock.to_string(),
                        holder: h.to_string(),
                    },
                    rpid.map(|r| (h, r)),
                )),
                (Some(lock), None) => Err((
                    LockError::Busy {
                        host: name,
                        lock: lock.to_string(),
                        holder: "a process that has not written its note yet (it is starting)"
                            .to_string(),
                    },
                    None,
                )),
                _ => Err((
                    LockError::Failed {
                        host: name,
                        reason: format!("the lock holder said {first_line:?}, expected \"locked\""),
                    },
                    None,
                )),
            }
        }
        HoldOutcome::Ended(out) => Err((
            LockError::Failed {
                host: name,
                reason: format!(
                    "the lock holder ended: {}{}",
                    out.status,
                    match out.stderr_tail(5) {
                        t if t.is_empty() => String::new(),
                        t => format!("; {t}"),
                    }
                ),
            },
            None,
        )),
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
        }
    }

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
        if Path::new("/bin/busybox").exists() {
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

    #[test]
    fn an_orphaned_holder_is_recognised_and_ended_only_by_its_own_note() {
        let here = Holder::here("x");
        let mut note = holder("dead");
        // Another machine's sweep is never an orphan of ours.
        assert!(!note.orphaned_here(&here));
        note.machine_id = here.machine_id.clone();
        if here.machine_id == "-" {
            return; // no machine id here: nothing is ever taken for an orphan
        }
        // A process number that is not a running fsmatrix: the orchestrator is gone.
        note.pid = u32::MAX - 1;
        assert!(note.orphaned_here(&here));
        // The holder of a live lock, ended through the guarded kill that
        // lock_host sends (only when the note still names that process).
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("locks");
        let h = host(&["/dev/loop9"]);
        let (mut a, line) = start(&["/bin/sh"], &dir, &h, &note);
        assert_eq!(line, "locked\n");
        let text = std::fs::read_to_string(dir.join("host.lock.holder")).unwrap();
        let rpid: u32 = Kv::parse(&text).u64("holder.rpid").unwrap() as u32;
        assert_eq!(rpid, a.id(), "the note names the holder process");
        let end = |pid: u32| {
            let cmd = RemoteCommand::raw("set --")
                .arg(dir.join("host.lock.holder").to_str().unwrap())
                .arg(pid.to_string())
                .raw_arg(END_ORPHAN);
            Command::new("/bin/sh")
                .arg("-c")
                .arg(cmd.to_shell().unwrap())
                .status()
                .unwrap()
        };
        // A number the note does not name is not killed.
        end(rpid + 1);
        assert!(
            a.try_wait().unwrap().is_none(),
            "only the named holder is ended"
        );
        end(rpid);
        wait_gone(&mut a);
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
