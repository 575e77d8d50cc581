//! [`SshRemote`]: the [`Remote`] of a real host, over one russh connection.
//!
//! - Host keys are checked strictly ([`super::known_hosts`]) before any
//!   authentication: a refused host never sees a command.
//! - One connection per host, many channels over it, at most
//!   [`MAX_CHANNELS`] in flight (sshd's MaxSessions is 10 and frees slots
//!   late); `ChannelOpenFailure` is retried with backoff; every channel is
//!   closed on every path (a dropped russh `Channel` sends no CLOSE).
//! - Keepalives every 5 s, 3 unanswered close the connection: a dead host is
//!   noticed in about 20 s.  A channel that cannot be opened on a dropped
//!   connection triggers one reconnect, then the step fails.
//! - Jump hosts (OpenSSH `ProxyJump`, [`SshTarget::jump`]): each hop is
//!   reached through a `direct-tcpip` channel of the one before, gets the
//!   same strict host-key check, authentication, keepalives and connect
//!   timeout as the final host, and lives as long as the final connection;
//!   a reconnect goes through every hop again.  No IP forwarding is needed
//!   on a jump host, only sshd's AllowTcpForwarding (the default).
//! - Commands run one after another in a persistent `/bin/sh` per host
//!   ([`shell`]: one session, then a round trip per command, output and
//!   exit status framed by a nonce); up to [`shell::MAX_IDLE`] idle shells
//!   are kept, more open when commands run at once.  Commands with stdin,
//!   and cleanup that must survive a dead shell
//!   ([`ExecOptions::own_session`]), get a session of their own
//!   ([`SshRemote::exec_single`]).
//! - Every command runs under `/bin/sh`
//!   ([`login_shell_safe`](super::login_shell_safe)), behind a prologue
//!   that reports the process group sshd made for its session, so a
//!   timeout kills the whole remote group (TERM, then KILL after 2 s); in a
//!   persistent shell that group is the shell's, which is then dropped.
//!
//! The parts: [`connect`] reaches the host (targets, jump hosts, the
//! host-key check, reconnects and channel opening), [`auth`] logs in
//! (identity files, certificates, ssh-agent, the RSA hash), [`exec`] runs a
//! command on a channel of its own (output collection, timeouts, process
//! group kills) and [`shell`] runs commands in a persistent shell.  Key
//! files are read by [`crate::keys`].
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use russh::client::{Handle, Msg};
use russh::ChannelMsg;
use tokio::sync::{Mutex, Semaphore};

use super::{
    ExecOptions, ExecOutput, ExitStatus, Held, HoldOutcome, OutputStream, Remote, RemoteCommand,
    RemoteError,
};

mod auth;
mod connect;
mod exec;
mod shell;

pub use auth::agent_from_env;
pub use connect::{JumpHop, SshTarget};

use connect::{close_all, open_connection, Client};
use exec::{signal_label, Collector};

/// Channels in flight per connection (sshd MaxSessions defaults to 10).
pub const MAX_CHANNELS: usize = 7;

struct Conn {
    handle: Arc<Handle<Client>>,
    jumps: Vec<Handle<Client>>,
    generation: u64,
}

/// One host over SSH.  See the module documentation.
pub struct SshRemote {
    target: SshTarget,
    /// ssh-agent's socket, kept for reconnects.
    agent_sock: Option<PathBuf>,
    host_key: String,
    conn: Mutex<Conn>,
    slots: Semaphore,
    /// Idle persistent shells ([`shell`]), at most [`shell::MAX_IDLE`].
    shells: StdMutex<Vec<shell::Shell>>,
    /// Kills under way of commands abandoned mid-run ([`shell::Shell`]'s
    /// drop), awaited before a command in a session of its own.
    abandoned: shell::Abandoned,
    reconnects: AtomicU64,
}

impl std::fmt::Debug for SshRemote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SshRemote")
            .field("target", &self.target)
            .finish()
    }
}

impl SshRemote {
    /// Connect, check the host key, authenticate (with ssh-agent at
    /// `SSH_AUTH_SOCK`, [`agent_from_env`], when a key needs it).
    pub async fn connect(target: &SshTarget) -> Result<SshRemote, RemoteError> {
        SshRemote::connect_with_agent(target, agent_from_env()).await
    }

    /// [`SshRemote::connect`] with ssh-agent at `agent_sock` (`None`: no
    /// agent), for this connection, its jump hosts and its reconnects.
    /// (A parameter, not a field of [`SshTarget`], so that a test can pick
    /// its agent without touching the process-wide environment.)
    pub async fn connect_with_agent(
        target: &SshTarget,
        agent_sock: Option<PathBuf>,
    ) -> Result<SshRemote, RemoteError> {
        let (connection, host_key) = open_connection(target, agent_sock.as_deref()).await?;
        Ok(SshRemote {
            target: target.clone(),
            agent_sock,
            host_key,
            conn: Mutex::new(Conn {
                handle: Arc::new(connection.handle),
                jumps: connection.jumps,
                generation: 0,
            }),
            slots: Semaphore::new(MAX_CHANNELS),
            shells: StdMutex::new(Vec::new()),
            abandoned: Default::default(),
            reconnects: AtomicU64::new(0),
        })
    }

    pub fn target(&self) -> &SshTarget {
        &self.target
    }

    /// The SHA256 fingerprint of the host key the host showed (and
    /// known_hosts accepted): two inventory entries with the same one are
    /// the same machine.
    pub fn host_key(&self) -> &str {
        &self.host_key
    }

    /// How many times the connection was re-established.
    pub fn reconnects(&self) -> u64 {
        self.reconnects.load(Ordering::Relaxed)
    }

    /// Close the connection politely (then its jump hosts, last first).
    pub async fn disconnect(&self) {
        let conn = self.conn.lock().await;
        let _ = conn
            .handle
            .disconnect(russh::Disconnect::ByApplication, "", "en")
            .await;
        close_all(&conn.jumps).await;
    }

    fn channel_error(&self, reason: impl std::fmt::Display) -> RemoteError {
        RemoteError::Channel {
            host: self.target.host_name.clone(),
            reason: reason.to_string(),
        }
    }
}

impl Remote for SshRemote {
    type Tunnel = russh::ChannelStream<Msg>;

    fn host(&self) -> &str {
        &self.target.host_name
    }

    async fn exec(
        &self,
        command: &RemoteCommand,
        options: ExecOptions,
    ) -> Result<ExecOutput, RemoteError> {
        if options.stdin.is_some() || options.own_session {
            return self.exec_single(command, options).await;
        }
        shell::exec_in_shell(self, &self.shell_text(command)?, options).await
    }

    async fn tunnel(&self, socket: &str) -> Result<Self::Tunnel, RemoteError> {
        let channel = self
            .open_with(|h| {
                let path = socket.to_string();
                async move { h.channel_open_direct_streamlocal(path).await }
            })
            .await
            .map_err(|e| {
                self.channel_error(format!(
                    "tunnel to the socket {socket}: {e} (does sshd allow \
                     AllowStreamLocalForwarding, and does the socket exist?)"
                ))
            })?;
        Ok(channel.0.into_stream())
    }

    async fn hold(
        &self,
        command: &RemoteCommand,
        input: &[u8],
        ready_within: Duration,
    ) -> Result<HoldOutcome, RemoteError> {
        // Outside the channel slots: a holder lives as long as the sweep
        // (MAX_CHANNELS + idle shells + 1 stays within sshd's MaxSessions).
        let (mut rx, mut guard, _) = self.open_exec(&self.shell_text(command)?).await?;
        let tx = guard
            .0
            .as_ref()
            .ok_or_else(|| self.channel_error("channel vanished"))?;
        tx.data_bytes(input.to_vec())
            .await
            .map_err(|e| self.channel_error(format!("writing the held command's input: {e}")))?;
        let mut out = Collector::new(None, false);
        let mut status = ExitStatus::Unknown;
        let first = tokio::time::timeout(ready_within, async {
            loop {
                match rx.wait().await {
                    None | Some(ChannelMsg::Close) => return None,
                    Some(ChannelMsg::Data { data }) => {
                        // Only the new bytes can hold the first newline.
                        let seen = out.stdout.len();
                        out.push(OutputStream::Stdout, &data);
                        if let Some(i) = out.stdout[seen..].iter().position(|&b| b == b'\n') {
                            let nl = seen + i;
                            return Some(String::from_utf8_lossy(&out.stdout[..nl]).into_owned());
                        }
                        if let Some(over) = out.over_status() {
                            status = over;
                            return None;
                        }
                    }
                    Some(ChannelMsg::ExtendedData { data, ext: 1 }) => {
                        out.push(OutputStream::Stderr, &data);
                        if let Some(over) = out.over_status() {
                            status = over;
                            return None;
                        }
                    }
                    Some(ChannelMsg::ExitStatus { exit_status }) => {
                        status = ExitStatus::Code { code: exit_status }
                    }
                    Some(ChannelMsg::ExitSignal { signal_name, .. }) => {
                        status = ExitStatus::Signal {
                            signal: signal_label(&signal_name),
                        }
                    }
                    Some(_) => {}
                }
            }
        })
        .await;
        let first_line = match first {
            Err(_) => {
                guard.close().await;
                return Err(self.channel_error(format!(
                    "{} did not answer within {:.0} s",
                    command.to_shell().unwrap_or("the held command"),
                    ready_within.as_secs_f64()
                )));
            }
            Ok(None) => {
                guard.close().await;
                return Ok(HoldOutcome::Ended(ExecOutput {
                    status,
                    stdout: out.stdout,
                    stderr: out.stderr,
                }));
            }
            Ok(Some(line)) => line,
        };
        let Some(tx) = guard.0.take() else {
            return Err(self.channel_error("channel vanished"));
        };
        let (release_tx, mut release_rx) = tokio::sync::oneshot::channel::<()>();
        let (lost_tx, lost_rx) = tokio::sync::watch::channel(false);
        let host = self.target.host_name.clone();
        let task = tokio::spawn(async move {
            let mut beat = tokio::time::interval(crate::timeouts::HOLD_HEARTBEAT);
            beat.tick().await;
            loop {
                tokio::select! {
                    _ = &mut release_rx => {
                        // EOF ends the holder's read loop; wait for its close.
                        let _ = tx.eof().await;
                        let _ = tokio::time::timeout(crate::timeouts::HOLD_RELEASE, async {
                            while let Some(m) = rx.wait().await {
                                if matches!(m, ChannelMsg::Close) {
                                    break;
                                }
                            }
                        })
                        .await;
                        let _ = tx.close().await;
                        return;
                    }
                    _ = beat.tick() => {
                        if tx.data_bytes(&b"\n"[..]).await.is_err() {
                            tracing::debug!(%host, "the held command's channel is gone");
                            let _ = lost_tx.send(true);
                            return;
                        }
                    }
                    m = rx.wait() => {
                        if matches!(m, None | Some(ChannelMsg::Close) | Some(ChannelMsg::Eof) | Some(ChannelMsg::ExitStatus { .. }) | Some(ChannelMsg::ExitSignal { .. })) {
                            tracing::debug!(%host, "the held command ended or its connection dropped");
                            let _ = lost_tx.send(true);
                            let _ = tx.close().await;
                            return;
                        }
                    }
                }
            }
        });
        Ok(HoldOutcome::Held {
            held: Held::new(release_tx, lost_rx, task),
            first_line,
        })
    }
}
