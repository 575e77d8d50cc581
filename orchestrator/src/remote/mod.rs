//! The Remote trait and its SSH implementation.
//!
//! A [`Remote`] is one host: run a [`RemoteCommand`] under `/bin/sh` with
//! optional stdin, get stdout, stderr and the exit status (optionally
//! streamed line by line), with a timeout that kills the remote process
//! group; upload files (checked by sha256 on the host); open a tunnel to a
//! unix socket on the host (the benchmark cluster's).  [`ssh::SshRemote`] is the real one.
//!
//! The trait is generic, not object-safe (its methods return `impl Future`):
//! a host worker is written as `async fn work<R: Remote>(remote: &R, ..)`.
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};

pub mod known_hosts;
pub mod quote;
pub mod recording;
pub mod ssh;

pub use crate::text::Become;
pub use quote::{login_shell_safe, sh_quote, QuoteError, RemoteCommand};
pub use recording::{Recorded, RecordingRemote};
pub use ssh::{JumpHop, SshRemote, SshTarget};

use crate::text::sha256_hex;

/// Which output stream a line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputStream {
    Stdout,
    Stderr,
}

/// Called for every complete line (without its `\n`, lossily decoded) as it
/// arrives; a last line without `\n` is delivered when the command ends.
pub type LineCallback = Arc<dyn Fn(OutputStream, &str) + Send + Sync>;

/// How to run one command.
#[derive(Clone, Default)]
pub struct ExecOptions {
    /// Bytes written to the command's stdin, then EOF.  `None`: EOF at once.
    pub stdin: Option<Vec<u8>>,
    /// Wall-clock limit; on expiry the remote process group gets TERM, then
    /// KILL 2 s later, and the result is [`ExitStatus::TimedOut`].
    pub timeout: Option<Duration>,
    /// Streaming of output lines (output is captured in full either way).
    pub on_line: Option<LineCallback>,
    /// Run in an SSH session of its own, not in the host's persistent
    /// shell: for cleanup that must work even when that shell is gone.
    /// (Commands with `stdin` always get their own session.)
    pub own_session: bool,
    /// The most bytes of stdout kept (`None`:
    /// [`crate::timeouts::MAX_STDOUT`]); stderr keeps at most
    /// [`crate::timeouts::MAX_STDERR`].  A command that sends more is
    /// killed as a timed-out one is, and ends [`ExitStatus::OutputLimit`].
    pub max_stdout: Option<u64>,
}

impl ExecOptions {
    pub fn with_timeout(timeout: Duration) -> Self {
        ExecOptions {
            timeout: Some(timeout),
            ..Default::default()
        }
    }

    /// The most bytes kept of `stream`.
    pub fn limit(&self, stream: OutputStream) -> u64 {
        match stream {
            OutputStream::Stdout => self.max_stdout.unwrap_or(crate::timeouts::MAX_STDOUT),
            OutputStream::Stderr => crate::timeouts::MAX_STDERR,
        }
    }
}

impl OutputStream {
    pub fn name(self) -> &'static str {
        match self {
            OutputStream::Stdout => "stdout",
            OutputStream::Stderr => "stderr",
        }
    }
}

/// `out` as a host that honours `options`' bounds gives it: a stream past
/// its limit is cut there and the status says so (the recording remote
/// answers through this, as the SSH one bounds as it reads).
pub fn bounded(mut out: ExecOutput, options: &ExecOptions) -> ExecOutput {
    for stream in [OutputStream::Stdout, OutputStream::Stderr] {
        let limit = options.limit(stream);
        let bytes = match stream {
            OutputStream::Stdout => &mut out.stdout,
            OutputStream::Stderr => &mut out.stderr,
        };
        if bytes.len() as u64 > limit {
            bytes.truncate(limit as usize);
            if !matches!(out.status, ExitStatus::OutputLimit { .. }) {
                out.status = ExitStatus::OutputLimit {
                    stream: stream.name().to_string(),
                    limit_bytes: limit,
                };
            }
        }
    }
    out
}

impl std::fmt::Debug for ExecOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExecOptions")
            .field("stdin_len", &self.stdin.as_ref().map(Vec::len))
            .field("timeout", &self.timeout)
            .field("on_line", &self.on_line.is_some())
            .field("own_session", &self.own_session)
            .field("max_stdout", &self.max_stdout)
            .finish()
    }
}

/// How a remote command ended.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum ExitStatus {
    /// It exited with this code.
    Code { code: u32 },
    /// It was killed by this signal (name as SSH reports it, e.g. `KILL`).
    Signal { signal: String },
    /// It ran past the timeout and its process group was killed.
    TimedOut { after_ms: u64 },
    /// The channel closed without an exit status (e.g. the connection dropped).
    Unknown,
    /// It sent more than `limit_bytes` on `stream` (`stdout`, `stderr`):
    /// what came before is kept, and its process group was killed.
    OutputLimit { stream: String, limit_bytes: u64 },
}

impl ExitStatus {
    pub fn success(&self) -> bool {
        matches!(self, ExitStatus::Code { code: 0 })
    }
}

impl std::fmt::Display for ExitStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExitStatus::Code { code } => write!(f, "exit status {code}"),
            ExitStatus::Signal { signal } => write!(f, "killed by signal {signal}"),
            ExitStatus::TimedOut { after_ms } => {
                write!(f, "timed out after {:.1} s", *after_ms as f64 / 1000.0)
            }
            ExitStatus::Unknown => f.write_str("no exit status (channel closed)"),
            ExitStatus::OutputLimit {
                stream,
                limit_bytes,
            } => write!(
                f,
                "the host sent more than {} on {stream}, fsmatrix's limit for one command; the command was killed and what came before is kept",
                crate::text::iec_bytes_short(*limit_bytes as f64)
            ),
        }
    }
}

/// What a command printed and how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecOutput {
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

impl ExecOutput {
    pub fn stdout_lossy(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    pub fn stderr_lossy(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }

    /// The last `lines` lines of stderr, for error messages and cell records.
    pub fn stderr_tail(&self, lines: usize) -> String {
        crate::text::tail_lines(&self.stderr_lossy(), lines)
    }

    /// `Ok(self)` on exit status 0, else [`RemoteError::Failed`] naming `what`.
    pub fn success(self, host: &str, what: &str) -> Result<ExecOutput, RemoteError> {
        if self.status.success() {
            Ok(self)
        } else {
            Err(RemoteError::Failed {
                host: host.to_string(),
                what: what.to_string(),
                status: self.status.clone(),
                stderr_tail: self.stderr_tail(20),
            })
        }
    }
}

/// Errors of the remote layer.  Messages read after "failed to …".
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    /// Boxed: the host-key error carries everything a user needs to act.
    #[error(transparent)]
    HostKey(Box<known_hosts::HostKeyError>),
    #[error("connect to {host} ({address}:{port}): {reason}")]
    Connect {
        host: String,
        address: String,
        port: u16,
        reason: String,
    },
    /// Something failed at a jump host on the way to `host`.
    #[error("reach {host} through {hop}: {source}")]
    Jump {
        host: String,
        /// "jump host 1 (root@bastion.lab:22)".
        hop: String,
        source: Box<RemoteError>,
    },
    #[error("log in to {host} as {user}: {reason}")]
    Auth {
        host: String,
        user: String,
        reason: String,
    },
    #[error("run a command on {host}: {reason}")]
    Channel { host: String, reason: String },
    #[error("{what} on {host}: {status}{}", if stderr_tail.is_empty() { String::new() } else { format!("; stderr ends with:\n{stderr_tail}") })]
    Failed {
        host: String,
        what: String,
        status: ExitStatus,
        stderr_tail: String,
    },
    #[error("verify {path} on {host}: its sha256 is {actual}, expected {expected}")]
    ChecksumMismatch {
        host: String,
        path: String,
        expected: String,
        actual: String,
    },
    #[error(transparent)]
    Quote(#[from] QuoteError),
}

impl From<known_hosts::HostKeyError> for RemoteError {
    fn from(e: known_hosts::HostKeyError) -> Self {
        RemoteError::HostKey(Box::new(e))
    }
}

/// One host, reached somehow.  See the module documentation.
pub trait Remote: Send + Sync {
    /// The byte stream a tunnel gives (usable with
    /// `tokio_postgres::Config::connect_raw(stream, NoTls)`).
    type Tunnel: AsyncRead + AsyncWrite + Unpin + Send + 'static;

    /// The host's name, for messages.
    fn host(&self) -> &str;

    /// Run `command` under `/bin/sh` on the host.  A non-zero exit is an
    /// `Ok` with that status; `Err` means the command could not be run or
    /// its outcome is unknown.
    fn exec(
        &self,
        command: &RemoteCommand,
        options: ExecOptions,
    ) -> impl Future<Output = Result<ExecOutput, RemoteError>> + Send;

    /// Write `bytes` to `remote_path` (through a temp file and a rename)
    /// with permission bits `mode`, creating the parent folder.
    fn upload(
        &self,
        remote_path: &str,
        bytes: &[u8],
        mode: u32,
    ) -> impl Future<Output = Result<(), RemoteError>> + Send {
        upload_with(self, remote_path, bytes, mode)
    }

    /// The sha256 (lowercase hex) of a file on the host, with `sha256sum`
    /// (Linux) or `sha256 -q` (BSD), whichever exists.
    fn remote_sha256(
        &self,
        remote_path: &str,
    ) -> impl Future<Output = Result<String, RemoteError>> + Send {
        let cmd = sha256_command(remote_path);
        let what = format!("compute the sha256 of {remote_path}");
        async move {
            let out = self
                .exec(&cmd, ExecOptions::with_timeout(crate::timeouts::CHECKSUM))
                .await?
                .success(self.host(), &what)?;
            let text = out.stdout_lossy();
            let hex = text
                .split_whitespace()
                .next()
                .unwrap_or("")
                .to_ascii_lowercase();
            if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(RemoteError::Failed {
                    host: self.host().to_string(),
                    what,
                    status: out.status,
                    stderr_tail: format!("unexpected output {text:?}, expected 64 hex digits"),
                });
            }
            Ok(hex)
        }
    }

    /// Check that `remote_path` on the host has sha256 `expected_hex`.
    fn verify_sha256(
        &self,
        remote_path: &str,
        expected_hex: &str,
    ) -> impl Future<Output = Result<(), RemoteError>> + Send {
        let path = remote_path.to_string();
        let expected = expected_hex.to_ascii_lowercase();
        async move {
            let actual = self.remote_sha256(&path).await?;
            if actual != expected {
                return Err(RemoteError::ChecksumMismatch {
                    host: self.host().to_string(),
                    path,
                    expected,
                    actual,
                });
            }
            Ok(())
        }
    }

    /// [`Remote::upload`], then [`Remote::verify_sha256`] against `bytes`.
    fn upload_verified(
        &self,
        remote_path: &str,
        bytes: &[u8],
        mode: u32,
    ) -> impl Future<Output = Result<(), RemoteError>> + Send {
        let expected = sha256_hex(bytes);
        let path = remote_path.to_string();
        let upload = self.upload(remote_path, bytes, mode);
        async move {
            upload.await?;
            self.verify_sha256(&path, &expected).await
        }
    }

    /// A byte stream to the unix socket `socket` on the host, opened by
    /// the host's sshd as the login user (OpenSSH's `direct-streamlocal`):
    /// PostgreSQL's peer authentication sees that user, and the cluster
    /// needs no TCP listener.
    fn tunnel(
        &self,
        socket: &str,
    ) -> impl Future<Output = Result<Self::Tunnel, RemoteError>> + Send;

    /// Start `command` with `input` as the first bytes of its stdin, and keep
    /// it running for as long as the returned [`Held`] lives: its stdin
    /// stays open (a newline every
    /// [`crate::timeouts::HOLD_HEARTBEAT`]), and dropping or releasing the
    /// handle sends EOF and closes the channel.  It is ready when it prints
    /// its first stdout line (within `ready_within`); a command that ends
    /// before is [`HoldOutcome::Ended`] with its output.  A process tied to
    /// the session this way dies with it: the host lock.
    fn hold(
        &self,
        command: &RemoteCommand,
        input: &[u8],
        ready_within: Duration,
    ) -> impl Future<Output = Result<HoldOutcome, RemoteError>> + Send;
}

/// What [`Remote::hold`] gave.
#[derive(Debug)]
pub enum HoldOutcome {
    /// The command printed `first_line` and keeps running.
    Held { held: Held, first_line: String },
    /// The command ended (or printed nothing) first; its output.
    Ended(ExecOutput),
}

/// A remote process kept alive by [`Remote::hold`]; see there.
#[derive(Debug)]
pub struct Held {
    release: Option<tokio::sync::oneshot::Sender<()>>,
    lost: tokio::sync::watch::Receiver<bool>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Held {
    /// A handle driven by `task`, which ends the process when `release`
    /// fires (or its sender is dropped) and sets `lost` when the process or
    /// the connection went away by itself.
    pub fn new(
        release: tokio::sync::oneshot::Sender<()>,
        lost: tokio::sync::watch::Receiver<bool>,
        task: tokio::task::JoinHandle<()>,
    ) -> Held {
        Held {
            release: Some(release),
            lost,
            task: Some(task),
        }
    }

    /// Has the process or its connection gone away by itself?
    pub fn is_lost(&self) -> bool {
        *self.lost.borrow()
    }

    /// Resolves once the process or its connection has gone away by itself.
    pub fn lost(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut rx = self.lost.clone();
        async move {
            if rx.wait_for(|l| *l).await.is_err() {
                // The driver is gone without saying lost: released.
                futures::future::pending::<()>().await;
            }
        }
    }

    /// End the process and wait (bounded) until the host has closed it, so
    /// that what it held is free when this returns.
    pub async fn release(mut self) {
        if let Some(tx) = self.release.take() {
            let _ = tx.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = tokio::time::timeout(crate::timeouts::HOLD_RELEASE, task).await;
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        // Dropping the sender tells the driver to end the process.
        self.release.take();
    }
}

/// The command [`Remote::upload`] sends, with the file's bytes on stdin:
/// into a temporary name beside `remote_path`, then renamed over it.
pub fn upload_command(remote_path: &str, mode: u32) -> RemoteCommand {
    let parent = match remote_path.rsplit_once('/') {
        Some(("", _)) => "/".to_string(),
        Some((p, _)) => p.to_string(),
        None => ".".to_string(),
    };
    let tmp = format!("{remote_path}.fsmatrix-upload");
    RemoteCommand::raw("umask 077 && mkdir -p --")
        .arg(&parent)
        .raw_arg("&& cat >")
        .arg(&tmp)
        .raw_arg("&& chmod")
        .arg(format!("{mode:o}"))
        .arg(&tmp)
        .raw_arg("&& mv -f --")
        .arg(&tmp)
        .arg(remote_path)
}

/// The command [`Remote::remote_sha256`] sends: `sha256sum` (Linux) or
/// `sha256 -q` (BSD), whichever exists.
pub fn sha256_command(remote_path: &str) -> RemoteCommand {
    RemoteCommand::raw("set --").arg(remote_path).raw_arg(
        "; if command -v sha256sum >/dev/null 2>&1; then sha256sum < \"$1\"; \
         elif command -v sha256 >/dev/null 2>&1; then sha256 -q < \"$1\"; \
         else echo 'neither sha256sum nor sha256 is installed' >&2; exit 127; fi",
    )
}

/// [`Remote::upload`]'s body, callable by an implementation that overrides
/// `upload` to do more around it (the recording remote keeps the bytes).
pub fn upload_with<'a, R: Remote + ?Sized>(
    remote: &'a R,
    remote_path: &str,
    bytes: &[u8],
    mode: u32,
) -> impl Future<Output = Result<(), RemoteError>> + Send + use<'a, R> {
    let cmd = upload_command(remote_path, mode);
    let options = ExecOptions {
        stdin: Some(bytes.to_vec()),
        timeout: Some(crate::timeouts::UPLOAD),
        ..Default::default()
    };
    let what = format!("upload {remote_path}");
    async move {
        remote
            .exec(&cmd, options)
            .await?
            .success(remote.host(), &what)?;
        Ok(())
    }
}
