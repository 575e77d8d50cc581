//! Every timeout fsmatrix puts on a remote operation, in one place, and the
//! bounds on what a host may send.  They are generous: a stuck step or a
//! host that floods is the only thing they catch, and a slow disk must not
//! fail a sweep.  The verbs' own limits are [`crate::run::Verb::timeout`],
//! built from the constants here.
use std::time::Duration;

/// Waiting for a host's SSH server before calling it unreachable.
pub const CONNECT: Duration = Duration::from_secs(10);
/// How long a dropped connection's reconnect tries again after a connect
/// error (refused, unreachable, timed out): an sshd restarting, a link
/// coming back.  Each try is bounded by [`CONNECT`].
pub const RECONNECT_WINDOW: Duration = Duration::from_secs(12);
/// A keepalive every this often; three missed ones drop the connection.
pub const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(5);
/// After a command's exit status, how long to wait for the rest of its
/// output (a daemon that kept our stdout open would otherwise hold the step
/// forever).
pub const DRAIN_AFTER_EXIT: Duration = Duration::from_secs(2);
/// Killing a timed-out command's process group.
pub const KILL: Duration = Duration::from_secs(20);
/// Uploading one file (scripts, a workload script) through `cat >`.
pub const UPLOAD: Duration = Duration::from_secs(120);
/// `sha256sum` of one uploaded file.
pub const CHECKSUM: Duration = Duration::from_secs(60);
/// Small commands: creating the work folder, finding pg_bin, `id`.
pub const PROBE: Duration = Duration::from_secs(30);
/// Connecting to PostgreSQL through the tunnel (counters, sizes).
pub const PG_CONNECT: Duration = Duration::from_secs(20);

/// Verbs (see `docs/remote-scripts.md`).
pub const FACTS: Duration = Duration::from_secs(120);
pub const PREFLIGHT: Duration = Duration::from_secs(120);
/// One `postgres -c` per distinct setting, each a few tens of ms.
pub const PG_CHECK_SETTINGS: Duration = Duration::from_secs(120);
/// mkfs of a large disk, or `zpool create` that trims it.
pub const MAKE_FS: Duration = Duration::from_secs(900);
pub const MOUNT: Duration = Duration::from_secs(180);
pub const PG_INIT: Duration = Duration::from_secs(600);
/// A server that replays WAL on start can take minutes.
pub const PG_START: Duration = Duration::from_secs(420);
pub const PG_STOP: Duration = Duration::from_secs(180);
/// `pgbench -i` at a large scale.
pub const LOAD: Duration = Duration::from_secs(12 * 3600);
pub const SIZES: Duration = Duration::from_secs(600);
pub const DROP_CACHES: Duration = Duration::from_secs(300);
pub const TEARDOWN: Duration = Duration::from_secs(300);
/// Fetching one output file of a run.
pub const CAT: Duration = Duration::from_secs(300);
/// A timed run gets its duration plus this.
pub const RUN_SLACK: Duration = Duration::from_secs(300);
/// A run bounded by transactions or to completion (a SQL script).
pub const RUN_UNTIMED: Duration = Duration::from_secs(6 * 3600);

/// The host lock's holder gets a newline this often; a holder that hears
/// nothing for [`HOLD_STALE`] ends itself (a cut link never closes its
/// channel on the host's side until sshd notices).
pub const HOLD_HEARTBEAT: Duration = Duration::from_secs(10);
/// See [`HOLD_HEARTBEAT`]; the holder checks every 10 s, so a cut link
/// frees the lock within `HOLD_STALE` + 10 s.
pub const HOLD_STALE_MINUTES: u32 = 2;
/// Taking the host lock (mkdir, checks, flock -n): a few commands.
pub const LOCK: Duration = Duration::from_secs(30);
/// How long a release waits for the host to close the holder.
pub const HOLD_RELEASE: Duration = Duration::from_secs(10);

/// The most bytes kept of one command's stdout unless its caller says
/// otherwise (`ExecOptions::max_stdout`): a verb prints a few `key=value`
/// lines.  A host that sends more has the command killed and the step
/// failed, saying so; without a bound a host's output was held in memory
/// whole (400 MB of output: 1.2 GB of memory).
pub const MAX_STDOUT: u64 = 64 << 20;
/// The most bytes kept of one command's stderr (always).
pub const MAX_STDERR: u64 = 16 << 20;
/// The most bytes one fetch of a file a run wrote (`cat`: `run.out`,
/// `run.err`, one gzipped transaction log) may send.
pub const MAX_FETCH: u64 = 256 << 20;
/// The most bytes a host may send for one cell's files together (its
/// output and transaction logs); past it the cell fails and the rest is
/// not fetched.
pub const MAX_CELL_OUTPUT: u64 = 512 << 20;

/// How long a sweep that lost a host lock asks the host whether another
/// sweep ended it (run/lock.rs): short, the connection may be the cause.
pub const LOST_LOCK_WHY: Duration = Duration::from_secs(5);

/// `vm-start`: the overlay made and `qemu-system-x86_64 -daemonize`
/// returned (the guest boots afterwards; its SSH is waited for up to the
/// guest's `boot_timeout`).
pub const VM_START: Duration = Duration::from_secs(60);
/// `vm-check`: a few file tests, `qemu-img info` of the image and `ss`.
pub const VM_CHECK: Duration = Duration::from_secs(60);
/// How long `vm-stop` waits for the guest to power off after ACPI's
/// `system_powerdown` before it sends SIGTERM.
pub const VM_POWERDOWN: Duration = Duration::from_secs(60);
/// SIGTERM's and then SIGKILL's waits for a guest's QEMU to exit.
pub const VM_KILL: Duration = Duration::from_secs(30);
