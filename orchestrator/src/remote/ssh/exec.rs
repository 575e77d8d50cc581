//! Running one command on a session channel of its own: the prologue that
//! reports the session's process group, stdin written while output is
//! read, the timeout that kills that group, the [`Collector`] that captures
//! and streams output, and the [`CloseGuard`] that closes the channel on
//! every path.
use std::sync::Arc;
use std::time::Instant;

use russh::client::{Handle, Msg};
use russh::{ChannelMsg, ChannelReadHalf, ChannelWriteHalf, Sig};

use super::connect::Client;
use super::SshRemote;
use crate::remote::{
    login_shell_safe, ExecOptions, ExecOutput, ExitStatus, LineCallback, OutputStream,
    RemoteCommand, RemoteError,
};
use crate::timeouts::DRAIN_AFTER_EXIT;

/// First line of every command's stderr: `fsmatrix-pgid <N>`, the process
/// group sshd created for this session (OpenSSH calls setsid() for each
/// session), read without a fork on Linux and with `ps` elsewhere.  It is
/// reported only if that group is also the session (pgid = sid): on a
/// server that did not make a session per command, the group could hold
/// sshd itself, and a timeout must then only close the channel.
pub(super) const PGID_MARKER: &str = "fsmatrix-pgid ";
pub(super) const PROLOGUE: &str =
    "if [ -r /proc/$$/stat ]; then read -r _ _ _ _ fsmx_pg fsmx_sid _ < /proc/$$/stat; \
else set -- $(ps -o pgid= -o sid= -p $$ 2>/dev/null); fsmx_pg=${1:-}; fsmx_sid=${2:-}; set --; fi; \
[ \"$fsmx_pg\" = \"$fsmx_sid\" ] || fsmx_pg=; \
printf 'fsmatrix-pgid %s\\n' \"$fsmx_pg\" >&2; unset fsmx_pg fsmx_sid";

/// Kill process group `$1`: TERM, up to 2 s for it to go, then KILL.
/// dash's `kill` needs `--` before a negative pid and busybox's refuses
/// `--`, so each signal is tried both ways.
const KILL_GROUP: &str =
    "; sig() { kill -s \"$1\" -- \"-$2\" 2>/dev/null || kill -s \"$1\" \"-$2\" 2>/dev/null; }; \
pg=$1; sig TERM \"$pg\" || exit 0; i=0; \
while [ \"$i\" -lt 20 ] && sig 0 \"$pg\"; do sleep 0.1; i=$((i + 1)); done; \
sig KILL \"$pg\"; exit 0";

impl SshRemote {
    /// `command` as the host's shell gets it (through sudo/doas when asked).
    pub(super) fn shell_text(&self, command: &RemoteCommand) -> Result<String, RemoteError> {
        Ok(match self.target.become_ {
            Some(how) => command.via(how).to_shell()?.to_string(),
            None => command.to_shell()?.to_string(),
        })
    }

    /// Open a session channel and start `script` (sh source) on it; the
    /// guard closes the channel on every path.
    pub(super) async fn open_exec(
        &self,
        script: &str,
    ) -> Result<(ChannelReadHalf, CloseGuard, Arc<Handle<Client>>), RemoteError> {
        let (channel, handle) = self
            .open_with(|h| async move { h.channel_open_session().await })
            .await?;
        self.start_exec(channel, handle, script).await
    }

    /// [`SshRemote::open_exec`] that does not retry a refused open:
    /// `Ok(None)` when the server refused the session (it is at its
    /// MaxSessions), for a caller that has something better to wait for.
    pub(super) async fn try_open_exec(
        &self,
        script: &str,
    ) -> Result<Option<(ChannelReadHalf, CloseGuard, Arc<Handle<Client>>)>, RemoteError> {
        let (channel, handle) = self
            .open_retrying(
                |h| async move {
                    match h.channel_open_session().await {
                        Ok(c) => Ok(Some(c)),
                        Err(russh::Error::ChannelOpenFailure(_)) => Ok(None),
                        Err(e) => Err(e),
                    }
                },
                0,
            )
            .await?;
        match channel {
            Some(c) => self.start_exec(c, handle, script).await.map(Some),
            None => Ok(None),
        }
    }

    async fn start_exec(
        &self,
        channel: russh::Channel<Msg>,
        handle: Arc<Handle<Client>>,
        script: &str,
    ) -> Result<(ChannelReadHalf, CloseGuard, Arc<Handle<Client>>), RemoteError> {
        let (rx, tx) = channel.split();
        let guard = CloseGuard(Some(tx));
        if let Some(tx) = guard.0.as_ref() {
            tx.exec(true, login_shell_safe(script))
                .await
                .map_err(|e| self.channel_error(format!("the exec request failed: {e}")))?;
        }
        Ok((rx, guard, handle))
    }

    /// Run `script` (sh source) under /bin/sh; `report_pgid` adds the prologue.
    async fn run_script(
        &self,
        script: &str,
        options: ExecOptions,
        report_pgid: bool,
    ) -> Result<ExecOutput, RemoteError> {
        let _permit = self
            .slots
            .acquire()
            .await
            .map_err(|e| self.channel_error(e))?;
        let full = if report_pgid {
            format!("{PROLOGUE}\n{script}")
        } else {
            script.to_string()
        };
        let (mut rx, mut guard, handle) = self.open_exec(&full).await?;
        let tx = guard
            .0
            .as_ref()
            .ok_or_else(|| self.channel_error("channel vanished"))?;

        let mut out = Collector::bounded(options.on_line.clone(), report_pgid, &options);
        let started = Instant::now();
        let stdin = options.stdin;
        let work = async {
            let write = async {
                if let Some(bytes) = stdin {
                    tx.data_bytes(bytes).await?;
                }
                tx.eof().await
            };
            let read = read_until_closed(&mut rx, &mut out);
            tokio::pin!(write, read);
            // The reader decides: a command that exits without reading all
            // its stdin leaves the writer waiting for window space forever.
            let mut writing = true;
            loop {
                tokio::select! {
                    w = &mut write, if writing => {
                        writing = false;
                        if let Err(e) = w {
                            tracing::debug!(host = %self.target.host_name, error = %e, "writing stdin failed");
                        }
                    }
                    status = &mut read => break status,
                }
            }
        };
        let status = match options.timeout {
            None => work.await,
            Some(limit) => match tokio::time::timeout(limit, work).await {
                Ok(status) => status,
                Err(_) => {
                    self.kill_session_group(out.pgid, "timed out").await;
                    ExitStatus::TimedOut {
                        after_ms: started.elapsed().as_millis() as u64,
                    }
                }
            },
        };
        // The reader stopped at the output limit: the command may still be
        // sending, so it is killed as a timed-out one is.
        let status = match out.over_status() {
            Some(over) if !matches!(status, ExitStatus::TimedOut { .. }) => {
                self.kill_session_group(out.pgid, "sent more than its output limit")
                    .await;
                over
            }
            _ => status,
        };
        guard.close().await;
        out.finish();
        if status == ExitStatus::Unknown && handle.is_closed() {
            return Err(self.channel_error(
                "the SSH connection dropped while the command ran (no answer to keepalives or closed by the host); its outcome is unknown",
            ));
        }
        Ok(ExecOutput {
            status,
            stdout: out.stdout,
            stderr: out.stderr,
        })
    }

    /// Run `command` in an SSH session of its own (a new channel, a new
    /// shell), not in the persistent shell: what [`Remote::exec`] does for
    /// commands with stdin or [`ExecOptions::own_session`].
    pub async fn exec_single(
        &self,
        command: &RemoteCommand,
        options: ExecOptions,
    ) -> Result<ExecOutput, RemoteError> {
        self.settle_abandoned().await;
        self.run_script(&self.shell_text(command)?, options, true)
            .await
    }

    /// The command that TERMs process group `pgid`, then KILLs it.
    pub(super) fn kill_command(&self, pgid: u32) -> RemoteCommand {
        // `pgid` is a number we parsed; it is still quoted like any value.
        let cmd = RemoteCommand::raw("set --")
            .arg(pgid.to_string())
            .raw_arg(KILL_GROUP);
        // Under sudo the group's commands are root's.  sudo relays the TERM
        // it gets from the login user (the lab test passes without this),
        // but not a KILL, nor anything to a command it put in its own pty
        // session: the kill runs as root too (through doas alike).
        match self.target.become_ {
            Some(how) => cmd.via(how),
            None => cmd,
        }
    }

    /// Wait (bounded) for the kills of commands whose caller gave up on
    /// them (an interrupted step): cleanup must not race the command it
    /// cleans up after.
    async fn settle_abandoned(&self) {
        let pending: Vec<_> =
            std::mem::take(&mut *self.abandoned.lock().unwrap_or_else(|p| p.into_inner()));
        for kill in pending {
            if tokio::time::timeout(crate::timeouts::KILL, kill)
                .await
                .is_err()
            {
                tracing::warn!(host = %self.target.host_name, "the kill of an abandoned command did not end in time");
            }
        }
    }

    /// Kill the group of a command that `why` (timed out, sent too
    /// much); without a known group only the channel is closed.
    pub(super) async fn kill_session_group(&self, pgid: Option<u32>, why: &str) {
        match pgid {
            Some(pgid) => {
                if let Err(e) = Box::pin(self.kill_group(pgid)).await {
                    tracing::warn!(host = %self.target.host_name, error = %e, pgid, "could not kill the process group of a command that {why}");
                }
            }
            None => {
                tracing::warn!(host = %self.target.host_name, "a command {why} before its process group was known; only closing the channel");
            }
        }
    }

    /// TERM the remote process group, wait up to 2 s, then KILL it.
    pub(super) async fn kill_group(&self, pgid: u32) -> Result<(), RemoteError> {
        let cmd = self.kill_command(pgid);
        let text = cmd.to_shell()?;
        let out = self
            .run_script(
                text,
                ExecOptions::with_timeout(crate::timeouts::KILL),
                false,
            )
            .await?;
        out.success(&self.target.host_name, "kill a timed-out process group")?;
        Ok(())
    }
}

/// Read channel messages until the channel closes; returns the exit status.
async fn read_until_closed(rx: &mut ChannelReadHalf, out: &mut Collector) -> ExitStatus {
    let mut status = ExitStatus::Unknown;
    let mut exit_seen: Option<Instant> = None;
    loop {
        let msg = match exit_seen {
            None => rx.wait().await,
            Some(at) => {
                match tokio::time::timeout(DRAIN_AFTER_EXIT.saturating_sub(at.elapsed()), rx.wait())
                    .await
                {
                    Ok(m) => m,
                    Err(_) => {
                        tracing::debug!("output still open {DRAIN_AFTER_EXIT:?} after exit; a background process kept it");
                        break;
                    }
                }
            }
        };
        match msg {
            None | Some(ChannelMsg::Close) => break,
            Some(ChannelMsg::Data { data }) => {
                out.push(OutputStream::Stdout, &data);
                if out.over.is_some() {
                    break;
                }
            }
            Some(ChannelMsg::ExtendedData { data, ext: 1 }) => {
                out.push(OutputStream::Stderr, &data);
                if out.over.is_some() {
                    break;
                }
            }
            Some(ChannelMsg::ExitStatus { exit_status }) => {
                status = ExitStatus::Code { code: exit_status };
                exit_seen.get_or_insert_with(Instant::now);
            }
            Some(ChannelMsg::ExitSignal { signal_name, .. }) => {
                status = ExitStatus::Signal {
                    signal: signal_label(&signal_name),
                };
                exit_seen.get_or_insert_with(Instant::now);
            }
            Some(_) => {}
        }
    }
    status
}

pub(super) fn signal_label(sig: &Sig) -> String {
    match sig {
        Sig::Custom(name) => name.clone(),
        other => format!("{other:?}"),
    }
}

/// Closes the channel on every path, also when the exec future is dropped.
pub(super) struct CloseGuard(pub(super) Option<ChannelWriteHalf<Msg>>);

impl CloseGuard {
    pub(super) async fn close(&mut self) {
        if let Some(tx) = self.0.take() {
            let _ = tx.close().await;
        }
    }
}

impl Drop for CloseGuard {
    fn drop(&mut self) {
        if let Some(tx) = self.0.take() {
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                rt.spawn(async move {
                    let _ = tx.close().await;
                });
            }
        }
    }
}

/// Captures stdout and stderr up to their limits, splits them into lines
/// for the callback, and takes the prologue's pgid line off the front of
/// stderr.  Linear in the bytes pushed: each byte is scanned for a newline
/// once, however long the line it is in (a host that sends megabytes
/// without a newline used to cost a scan of the whole partial line per
/// chunk).
pub(super) struct Collector {
    pub(super) stdout: Vec<u8>,
    pub(super) stderr: Vec<u8>,
    /// Bytes of the current unfinished line, per stream, for the callback.
    partial: [Vec<u8>; 2],
    on_line: Option<LineCallback>,
    /// `Some(buf)` while the pgid line is still expected at stderr's start.
    marker: Option<Vec<u8>>,
    pub(super) pgid: Option<u32>,
    /// The most bytes kept per stream (stdout, stderr).
    limits: [u64; 2],
    /// The first stream that went past its limit: the command is to be
    /// killed, and nothing more is kept.
    pub(super) over: Option<(OutputStream, u64)>,
    /// Bytes examined for a newline, all streams (what the linear-time
    /// test counts).
    pub(super) scanned: u64,
}

/// The longest the prologue's line can be: the marker and a pid.
const MARKER_LINE_MAX: usize = PGID_MARKER.len() + 24;

fn index(stream: OutputStream) -> usize {
    match stream {
        OutputStream::Stdout => 0,
        OutputStream::Stderr => 1,
    }
}

impl Collector {
    pub(super) fn new(on_line: Option<LineCallback>, expect_marker: bool) -> Self {
        Self::bounded(on_line, expect_marker, &ExecOptions::default())
    }

    /// A collector that keeps at most what `options` allows per stream.
    pub(super) fn bounded(
        on_line: Option<LineCallback>,
        expect_marker: bool,
        options: &ExecOptions,
    ) -> Self {
        Collector {
            stdout: Vec::new(),
            stderr: Vec::new(),
            partial: [Vec::new(), Vec::new()],
            on_line,
            marker: expect_marker.then(Vec::new),
            pgid: None,
            limits: [
                options.limit(OutputStream::Stdout),
                options.limit(OutputStream::Stderr),
            ],
            over: None,
            scanned: 0,
        }
    }

    /// How the command ended if a stream went past its limit.
    pub(super) fn over_status(&self) -> Option<ExitStatus> {
        self.over.map(|(stream, limit)| ExitStatus::OutputLimit {
            stream: stream.name().to_string(),
            limit_bytes: limit,
        })
    }

    pub(super) fn push(&mut self, stream: OutputStream, data: &[u8]) {
        if stream == OutputStream::Stderr {
            if let Some(mut buf) = self.marker.take() {
                let seen = buf.len();
                buf.extend_from_slice(data);
                // Only the new bytes can hold the newline.
                let found = buf[seen..].iter().position(|&b| b == b'\n');
                self.scanned += match found {
                    Some(i) => i as u64 + 1,
                    None => (buf.len() - seen) as u64,
                };
                match found.map(|i| seen + i) {
                    Some(nl) => {
                        let line = String::from_utf8_lossy(&buf[..nl]).into_owned();
                        match line.strip_prefix(PGID_MARKER) {
                            Some(n) => {
                                self.pgid = n.trim().parse().ok().filter(|&p: &u32| p > 1);
                                self.deliver(stream, &buf[nl + 1..]);
                            }
                            None => self.deliver(stream, &buf),
                        }
                    }
                    None if buf.len() <= MARKER_LINE_MAX
                        && PGID_MARKER
                            .as_bytes()
                            .starts_with(&buf[..buf.len().min(PGID_MARKER.len())]) =>
                    {
                        self.marker = Some(buf);
                    }
                    None => self.deliver(stream, &buf),
                }
                return;
            }
        }
        self.deliver(stream, data);
    }

    fn deliver(&mut self, stream: OutputStream, data: &[u8]) {
        if self.over.is_some() {
            return;
        }
        let idx = index(stream);
        let all = if idx == 0 {
            &mut self.stdout
        } else {
            &mut self.stderr
        };
        let room = self.limits[idx].saturating_sub(all.len() as u64);
        let data = if data.len() as u64 > room {
            self.over = Some((stream, self.limits[idx]));
            &data[..room as usize]
        } else {
            data
        };
        all.extend_from_slice(data);
        let Some(cb) = &self.on_line else { return };
        let partial = &mut self.partial[idx];
        // The partial line has no newline: only the new bytes are scanned,
        // and the finished lines leave it in one move.
        let mut from = partial.len();
        partial.extend_from_slice(data);
        let mut line_start = 0;
        while let Some(i) = partial[from..].iter().position(|&b| b == b'\n') {
            let nl = from + i;
            self.scanned += i as u64 + 1;
            cb(stream, &String::from_utf8_lossy(&partial[line_start..nl]));
            line_start = nl + 1;
            from = line_start;
        }
        self.scanned += (partial.len() - from) as u64;
        partial.drain(..line_start);
    }

    /// Hand over unfinished last lines.
    pub(super) fn finish(&mut self) {
        if let Some(buf) = self.marker.take() {
            self.deliver(OutputStream::Stderr, &buf);
        }
        if let Some(cb) = &self.on_line {
            for (idx, stream) in [(0, OutputStream::Stdout), (1, OutputStream::Stderr)] {
                if !self.partial[idx].is_empty() {
                    let line = std::mem::take(&mut self.partial[idx]);
                    cb(stream, &String::from_utf8_lossy(&line));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[test]
    fn collector_strips_the_marker_split_across_chunks_and_streams_lines() {
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = lines.clone();
        let cb: LineCallback = Arc::new(move |s, l| sink.lock().unwrap().push((s, l.to_string())));
        let mut c = Collector::new(Some(cb), true);
        c.push(OutputStream::Stderr, b"fsmatrix-");
        c.push(OutputStream::Stdout, b"a\nb");
        c.push(OutputStream::Stderr, b"pgid 4242\nwarn");
        c.push(OutputStream::Stdout, b"c\n");
        c.push(OutputStream::Stderr, b"ing\n");
        c.finish();
        assert_eq!(c.pgid, Some(4242));
        assert_eq!(c.stdout, b"a\nbc\n");
        assert_eq!(c.stderr, b"warning\n");
        let got = lines.lock().unwrap().clone();
        assert_eq!(
            got,
            vec![
                (OutputStream::Stdout, "a".to_string()),
                (OutputStream::Stdout, "bc".to_string()),
                (OutputStream::Stderr, "warning".to_string()),
            ]
        );
    }

    /// A long line without a newline, fed in chunks, is scanned once: the
    /// work is linear in the bytes (each chunk used to rescan the whole
    /// partial line: 8 MiB in 4 KiB chunks scanned 8 GiB).
    #[test]
    fn a_long_line_without_a_newline_costs_linear_work() {
        let work = |total: usize| {
            let lines = Arc::new(Mutex::new(Vec::new()));
            let sink = lines.clone();
            let cb: LineCallback = Arc::new(move |_, l| sink.lock().unwrap().push(l.len()));
            let mut c = Collector::new(Some(cb), true);
            let chunk = vec![b'x'; 4096];
            for _ in 0..total / chunk.len() {
                c.push(OutputStream::Stdout, &chunk);
                c.push(OutputStream::Stderr, &chunk);
            }
            c.push(OutputStream::Stdout, b"\nend\n");
            c.finish();
            assert_eq!(lines.lock().unwrap()[..2], [total, 3]);
            c.scanned
        };
        let (one, eight) = (work(1 << 20), work(8 << 20));
        // Both streams, each byte once (the marker's look at stderr's
        // first bytes adds a few).
        assert!(eight <= 2 * (8 << 20) + 8192, "8 MiB scanned {eight} bytes");
        assert!(
            eight <= 9 * one,
            "1 MiB: {one}, 8 MiB: {eight} bytes scanned"
        );
        // Many short lines in one chunk: linear as well.
        let quiet: LineCallback = Arc::new(|_, _| {});
        let mut c = Collector::new(Some(quiet), false);
        c.push(OutputStream::Stdout, &b"ab\n".repeat(1 << 18));
        assert_eq!(c.scanned, 3 << 18);
    }

    /// What a stream keeps is bounded: past the limit the rest is dropped
    /// and the collector says which stream passed which limit.
    #[test]
    fn a_stream_past_its_limit_is_cut_and_said() {
        let opts = ExecOptions {
            max_stdout: Some(10),
            ..Default::default()
        };
        let mut c = Collector::bounded(None, false, &opts);
        c.push(OutputStream::Stdout, b"12345678");
        assert!(c.over.is_none());
        c.push(OutputStream::Stdout, b"9abcdef");
        c.push(OutputStream::Stdout, b"more");
        c.push(OutputStream::Stderr, b"late");
        assert_eq!(c.stdout, b"123456789a");
        assert!(c.stderr.is_empty());
        let status = c.over_status().expect("over");
        assert_eq!(
            status,
            ExitStatus::OutputLimit {
                stream: "stdout".into(),
                limit_bytes: 10
            }
        );
        assert!(
            status.to_string().contains("more than 10 B on stdout"),
            "{status}"
        );
        // A line that only looks like the marker's start is not held forever.
        let mut c = Collector::new(None, true);
        c.push(OutputStream::Stderr, b"fsmatrix-pgid 1");
        c.push(OutputStream::Stderr, &[b'2'; 100]);
        assert_eq!(
            c.stderr.len(),
            115,
            "delivered once it is too long to be the marker"
        );
    }

    #[test]
    fn collector_passes_stderr_through_when_no_marker_comes() {
        let mut c = Collector::new(None, true);
        c.push(OutputStream::Stderr, b"sh: csh: not found\n");
        c.finish();
        assert_eq!(c.pgid, None);
        assert_eq!(c.stderr, b"sh: csh: not found\n");
    }
}
