//! [`Logged`]: a [`Remote`] that keeps every command a sweep sends to one
//! host, as the host gets it: facts, uploads and checksums as well as the
//! verbs, and the tunnels the orchestrator opens to PostgreSQL.  A run
//! writes the log into its bundle (`hosts/<host>/commands.log`);
//! `plan --commands` prints the log of the same worker driven against the
//! recording remote.  One format, so that the two can be compared line by
//! line.
use std::future::Future;
use std::sync::Mutex;

use crate::remote::{
    upload_command, Become, ExecOptions, ExecOutput, HoldOutcome, Remote, RemoteCommand,
    RemoteError,
};
use crate::text::sha256_hex;

pub struct Logged<'a, R: Remote> {
    inner: &'a R,
    /// `become`: the SSH layer wraps every command in `sudo -n`/`doas -n`
    /// ([`RemoteCommand::via`]); the log shows the wrapped form.
    become_: Option<Become>,
    lines: Mutex<Vec<String>>,
}

impl<'a, R: Remote> Logged<'a, R> {
    pub fn new(inner: &'a R, become_: Option<Become>) -> Self {
        Logged {
            inner,
            become_,
            lines: Mutex::new(Vec::new()),
        }
    }

    /// Go on with the lines an earlier wrapper of the same connection
    /// logged (the host lock, taken before the sweep starts).
    pub fn with_lines(inner: &'a R, become_: Option<Become>, lines: Vec<String>) -> Self {
        Logged {
            inner,
            become_,
            lines: Mutex::new(lines),
        }
    }

    /// The lines logged, to go on with in [`Logged::with_lines`].
    pub fn into_lines(self) -> Vec<String> {
        self.lines.into_inner().unwrap_or_else(|e| e.into_inner())
    }

    /// The log so far, one line per command.
    pub fn text(&self) -> String {
        let lines = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        let mut s = lines.join("\n");
        if !s.is_empty() {
            s.push('\n');
        }
        s
    }

    fn push(&self, line: String) {
        tracing::debug!(host = self.inner.host(), "{line}");
        self.lines
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(line);
    }

    fn shown(&self, cmd: &RemoteCommand, stdin: Option<&[u8]>) -> String {
        let cmd = match self.become_ {
            Some(how) => cmd.via(how),
            None => cmd.clone(),
        };
        let mut line = match cmd.to_shell() {
            Ok(t) => format!("$ {t}"),
            Err(e) => format!("$ (not sent: {e})"),
        };
        if let Some(b) = stdin {
            line.push_str(&format!(
                "  # stdin: {} bytes, sha256 {}",
                b.len(),
                &sha256_hex(b)[..16]
            ));
        }
        line
    }
}

impl<R: Remote> Remote for Logged<'_, R> {
    type Tunnel = R::Tunnel;

    fn host(&self) -> &str {
        self.inner.host()
    }

    async fn exec(
        &self,
        command: &RemoteCommand,
        options: ExecOptions,
    ) -> Result<ExecOutput, RemoteError> {
        self.push(self.shown(command, options.stdin.as_deref()));
        self.inner.exec(command, options).await
    }

    fn upload(
        &self,
        remote_path: &str,
        bytes: &[u8],
        mode: u32,
    ) -> impl Future<Output = Result<(), RemoteError>> + Send {
        // The inner remote sends exactly this command (it may do more
        // around it: the recording one remembers the bytes).
        self.push(self.shown(&upload_command(remote_path, mode), Some(bytes)));
        self.inner.upload(remote_path, bytes, mode)
    }

    async fn hold(
        &self,
        command: &RemoteCommand,
        input: &[u8],
        ready_within: std::time::Duration,
    ) -> Result<HoldOutcome, RemoteError> {
        // The input (who holds the lock) differs per run: said, not shown.
        self.push(format!(
            "{}  # kept running for the sweep's life; stdin: who holds it, then a newline every {} s",
            self.shown(command, None),
            crate::timeouts::HOLD_HEARTBEAT.as_secs()
        ));
        self.inner.hold(command, input, ready_within).await
    }

    async fn tunnel(&self, socket: &str) -> Result<Self::Tunnel, RemoteError> {
        self.push(format!(
            "# tunnel to the socket {socket} (PostgreSQL counters)"
        ));
        self.inner.tunnel(socket).await
    }
}
