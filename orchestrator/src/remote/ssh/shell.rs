//! The persistent shell: one `/bin/sh` per SSH session channel that runs
//! the host's commands one after another, so that a command costs a round
//! trip on an open channel instead of a new session (sshd forks, the login
//! shell starts, the environment is set up) per command.
//!
//! Framing.  The driver reads a random nonce as its first input line (it is
//! never in a command line, so `ps` cannot show it), then for each command
//! the script's lines up to a line that is the nonce alone.  It runs the
//! script with stdin from `/dev/null` (so a command cannot
//! eat the next one), then prints `NONCE:STATUS\n` on stdout and `NONCE\n`
//! on stderr: a command's output ends where its stream's nonce starts
//! (output without a final newline included), and it has ended when both
//! streams have said so (sshd reads the two pipes separately, so their
//! order is not kept).  Each command runs in a `/bin/sh -c` of its own, as
//! in a session of its own: `$$` is that shell, and `cd`, variables and
//! `exit` do not reach the driver or the next command.  One difference
//! remains: a command killed by a signal ends with status 128 + N (as a
//! shell reports it), not as "killed by signal".
//!
//! What the driver cannot do: a command's own process group.  Its commands
//! run in the driver's group (the session sshd made for the channel), so a
//! timeout kills that whole group (the driver too) and the shell is
//! dropped; the next command opens a new one.  Cleanup that must work when
//! a shell is gone asks for [`ExecOptions::own_session`](super::ExecOptions).
use std::sync::Arc;
use std::time::{Duration, Instant};

use russh::client::Handle;
use russh::{ChannelMsg, ChannelReadHalf};

use super::connect::Client;
use super::exec::{CloseGuard, Collector, PGID_MARKER, PROLOGUE};
use crate::remote::{
    login_shell_safe, ExecOptions, ExecOutput, ExitStatus, OutputStream, RemoteError,
};

/// The longest first stderr line a starting shell may print (the
/// prologue's is a few dozen bytes).
const FIRST_LINE_MAX: usize = 64 << 10;

/// Idle shells kept per host (each holds an sshd session; with
/// `MAX_CHANNELS` in flight and one held command this stays within sshd's
/// default MaxSessions of 10).
pub(super) const MAX_IDLE: usize = 2;

/// The driver (sh source, started through `login_shell_safe`).  Its first
/// stderr line is the prologue's process group.
fn driver() -> String {
    format!(
        "{PROLOGUE}\n\
IFS= read -r fsmx_n || exit 0\n\
while :; do\n\
  fsmx_s=; fsmx_ok=\n\
  while IFS= read -r fsmx_l; do\n\
    if [ \"$fsmx_l\" = \"$fsmx_n\" ]; then fsmx_ok=1; break; fi\n\
    fsmx_s=\"$fsmx_s$fsmx_l\n\"\n\
  done\n\
  [ -n \"$fsmx_ok\" ] || exit 0\n\
  /bin/sh -c \"$fsmx_s\" </dev/null\n\
  fsmx_rc=$?\n\
  printf '%s:%s\\n' \"$fsmx_n\" \"$fsmx_rc\"\n\
  printf '%s\\n' \"$fsmx_n\" >&2\n\
done\n"
    )
}

/// One open shell.
pub(super) struct Shell {
    rx: ChannelReadHalf,
    /// Closes the channel when the shell is dropped (also mid-command, when
    /// the caller's future is dropped: a shell in an unknown state is never
    /// reused).
    guard: CloseGuard,
    /// The connection it lives on; a reconnect makes it useless.
    pub(super) handle: Arc<Handle<Client>>,
    nonce: String,
    /// The driver's process group (= its session), when known.
    pub(super) pgid: Option<u32>,
    /// The command that kills that group (sh text, through sudo or doas if the
    /// host's commands are).
    kill: Option<String>,
    /// A command was sent and its end not yet seen.
    busy: bool,
    abandoned: Abandoned,
}

/// Kills of abandoned commands, under way.
pub(super) type Abandoned = Arc<std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>>;

impl Drop for Shell {
    /// A shell dropped mid-command (its caller gave up: an interrupt) would
    /// leave the command running on the host, racing the cleanup that
    /// follows (a `zpool create` finishing after the teardown): its process
    /// group is killed, and cleanup in a session of its own waits for that.
    fn drop(&mut self) {
        if !self.busy {
            return;
        }
        let (Some(script), Ok(rt)) = (self.kill.take(), tokio::runtime::Handle::try_current())
        else {
            return;
        };
        let handle = self.handle.clone();
        let task = rt.spawn(async move {
            let Ok(channel) = handle.channel_open_session().await else {
                return;
            };
            let (mut rx, tx) = channel.split();
            if tx.exec(true, login_shell_safe(&script)).await.is_ok() {
                let _ = tokio::time::timeout(crate::timeouts::KILL, async {
                    while let Some(m) = rx.wait().await {
                        if matches!(m, ChannelMsg::Close) {
                            break;
                        }
                    }
                })
                .await;
            }
            let _ = tx.close().await;
        });
        self.abandoned
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(task);
    }
}

impl Shell {
    /// Open a session channel, start the driver, read its process group;
    /// `None` if the host refused the session.
    pub(super) async fn open(remote: &super::SshRemote) -> Result<Option<Shell>, RemoteError> {
        let Some((mut rx, guard, handle)) = remote.try_open_exec(&driver()).await? else {
            return Ok(None);
        };
        let nonce = format!("fsmx-{}", random_hex());
        let tx = guard
            .0
            .as_ref()
            .ok_or_else(|| remote.channel_error("channel vanished"))?;
        tx.data_bytes(format!("{nonce}\n").into_bytes())
            .await
            .map_err(|e| remote.channel_error(format!("starting the shell: {e}")))?;
        // The prologue's line comes first on stderr.
        let mut err = Vec::new();
        let limit = remote.target.connect_timeout;
        let pgid = tokio::time::timeout(limit, async {
            loop {
                match rx.wait().await {
                    Some(ChannelMsg::ExtendedData { data, ext: 1 }) => {
                        // Only the new bytes can hold the first newline; a
                        // first line longer than any prologue's is not one.
                        let seen = err.len();
                        err.extend_from_slice(&data);
                        let found = err[seen..].iter().position(|&b| b == b'\n');
                        if found.is_none() && err.len() > FIRST_LINE_MAX {
                            err.truncate(FIRST_LINE_MAX);
                            return Err(format!(
                                "the shell sent more than {FIRST_LINE_MAX} bytes on stderr before its first line ended; they begin {:?}",
                                String::from_utf8_lossy(&err[..err.len().min(200)])
                            ));
                        }
                        if let Some(nl) = found.map(|i| seen + i) {
                            let line = String::from_utf8_lossy(&err[..nl]).into_owned();
                            return Ok(line
                                .strip_prefix(PGID_MARKER)
                                .and_then(|n| n.trim().parse::<u32>().ok())
                                .filter(|&p| p > 1));
                        }
                    }
                    None
                    | Some(ChannelMsg::Close)
                    | Some(ChannelMsg::Eof)
                    | Some(ChannelMsg::ExitStatus { .. })
                    | Some(ChannelMsg::ExitSignal { .. }) => {
                        return Err(format!(
                            "the shell ended at its start: {:?}",
                            String::from_utf8_lossy(&err).trim()
                        ))
                    }
                    Some(_) => {}
                }
            }
        })
        .await
        .map_err(|_| {
            remote.channel_error(format!(
                "the shell did not start within {:.0} s",
                limit.as_secs_f64()
            ))
        })?
        .map_err(|why| remote.channel_error(why))?;
        let kill = pgid.and_then(|p| remote.kill_command(p).to_shell().ok().map(str::to_string));
        Ok(Some(Shell {
            rx,
            guard,
            handle,
            nonce,
            pgid,
            kill,
            busy: false,
            abandoned: remote.abandoned.clone(),
        }))
    }

    /// Whether the shell can take a command: its connection is the current
    /// one and nothing (an end, a close) arrived while it was idle.
    pub(super) fn usable(&mut self, current: &Arc<Handle<Client>>) -> bool {
        if !Arc::ptr_eq(&self.handle, current) || self.handle.is_closed() {
            return false;
        }
        use futures::FutureExt;
        // An idle shell has no output pending: output, an end or a close
        // means it ended (or a background process printed: not to be
        // trusted).  Flow control (the server's window adjusts) is fine.
        loop {
            match self.rx.wait().now_or_never() {
                None => return true,
                Some(Some(ChannelMsg::WindowAdjusted { .. } | ChannelMsg::Success)) => {}
                Some(_) => return false,
            }
        }
    }

    /// Run `script`; `out` collects its output (and streams its lines).
    /// Cancel-safe in the sense that matters: dropping the future drops
    /// nothing but the borrowed shell's state, which the caller then
    /// discards.
    pub(super) async fn run(
        &mut self,
        script: &str,
        out: &mut Collector,
    ) -> Result<Result<u32, ()>, russh::Error> {
        let Some(tx) = self.guard.0.as_ref() else {
            return Ok(Err(()));
        };
        let mut input = String::with_capacity(script.len() + self.nonce.len() + 2);
        input.push_str(script);
        if !script.ends_with('\n') {
            input.push('\n');
        }
        input.push_str(&self.nonce);
        input.push('\n');
        self.busy = true;
        tx.data_bytes(input.into_bytes()).await?;
        let mut frames = [
            Frame::new(&self.nonce, true),
            Frame::new(&self.nonce, false),
        ];
        loop {
            if frames.iter().all(|f| f.ended) {
                break;
            }
            let (idx, data) = match self.rx.wait().await {
                Some(ChannelMsg::Data { data }) => (0, data),
                Some(ChannelMsg::ExtendedData { data, ext: 1 }) => (1, data),
                None
                | Some(ChannelMsg::Close)
                | Some(ChannelMsg::Eof)
                | Some(ChannelMsg::ExitStatus { .. })
                | Some(ChannelMsg::ExitSignal { .. }) => {
                    for (i, f) in frames.iter_mut().enumerate() {
                        f.flush(stream_of(i), out);
                    }
                    // The driver is gone, and its command with it.
                    self.busy = false;
                    return Ok(Err(()));
                }
                Some(_) => continue,
            };
            frames[idx].push(stream_of(idx), &data, out);
            if out.over.is_some() {
                // Past the output limit: the caller kills the command (and
                // with it this shell); `busy` stays set until it has.
                return Ok(Err(()));
            }
        }
        self.busy = false;
        Ok(frames[0].status.ok_or(()))
    }
}

fn stream_of(idx: usize) -> OutputStream {
    if idx == 0 {
        OutputStream::Stdout
    } else {
        OutputStream::Stderr
    }
}

/// One stream of one command: output until the nonce, then the end line.
struct Frame {
    nonce: Vec<u8>,
    /// Bytes not yet delivered: a possible start of the nonce, or the
    /// nonce and its unfinished end line.
    held: Vec<u8>,
    /// stdout's end line carries the exit status.
    with_status: bool,
    status: Option<u32>,
    ended: bool,
}

impl Frame {
    fn new(nonce: &str, with_status: bool) -> Frame {
        Frame {
            nonce: nonce.as_bytes().to_vec(),
            held: Vec::new(),
            with_status,
            status: None,
            ended: false,
        }
    }

    fn push(&mut self, stream: OutputStream, data: &[u8], out: &mut Collector) {
        if self.ended {
            // After the end line: a background process of the command
            // still writing.  It is not this command's output any more.
            tracing::debug!("output after the command's end; ignored");
            return;
        }
        self.held.extend_from_slice(data);
        if let Some(at) = find(&self.held, &self.nonce) {
            if at > 0 {
                out.push(stream, &self.held[..at]);
                self.held.drain(..at);
            }
            let Some(nl) = self.held.iter().position(|&b| b == b'\n') else {
                return;
            };
            let line = String::from_utf8_lossy(&self.held[self.nonce.len()..nl]).into_owned();
            if self.with_status {
                self.status = line.strip_prefix(':').and_then(|n| n.parse().ok());
            }
            self.held.clear();
            self.ended = true;
            return;
        }
        // Deliver all but a tail that could be the nonce's beginning.
        let keep = partial_suffix(&self.held, &self.nonce);
        let upto = self.held.len() - keep;
        if upto > 0 {
            out.push(stream, &self.held[..upto]);
            self.held.drain(..upto);
        }
    }

    /// The shell ended: what was held is output after all.
    fn flush(&mut self, stream: OutputStream, out: &mut Collector) {
        if !self.ended && !self.held.is_empty() {
            out.push(stream, &self.held);
            self.held.clear();
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The length of the longest suffix of `hay` that is a proper prefix of
/// `needle`.
fn partial_suffix(hay: &[u8], needle: &[u8]) -> usize {
    let max = (needle.len() - 1).min(hay.len());
    (1..=max)
        .rev()
        .find(|&k| hay[hay.len() - k..] == needle[..k])
        .unwrap_or(0)
}

/// 128 random bits, hex.
fn random_hex() -> String {
    use std::fmt::Write;
    let mut bytes = [0u8; 16];
    getrandom_bytes(&mut bytes);
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

fn getrandom_bytes(buf: &mut [u8]) {
    // Without OS randomness the nonce is still unique per process and
    // shell (it only has to be absent from the commands' output).
    if getrandom::getrandom(buf).is_err() {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
            ^ u128::from(std::process::id()) << 64;
        buf.copy_from_slice(&t.to_le_bytes()[..buf.len()]);
    }
}

/// How long a command waits for a session when the host refuses new ones.
const OPEN_PATIENCE: Duration = Duration::from_secs(15);

fn take_idle(remote: &super::SshRemote, current: &Arc<Handle<Client>>) -> Option<Shell> {
    let mut pool = remote.shells.lock().unwrap_or_else(|p| p.into_inner());
    while let Some(mut s) = pool.pop() {
        if s.usable(current) {
            return Some(s);
        }
    }
    None
}

/// Run `script` on an idle or a new shell of `remote`, within the channel
/// slots; the shell goes back to the idle ones if it framed the end.
pub(super) async fn exec_in_shell(
    remote: &super::SshRemote,
    script: &str,
    options: ExecOptions,
) -> Result<ExecOutput, RemoteError> {
    let _permit = remote
        .slots
        .acquire()
        .await
        .map_err(|e| remote.channel_error(e))?;
    // An idle shell, else a new one; a server at its MaxSessions makes us
    // wait for a shell to come back (or a session to end) for a while.
    let deadline = Instant::now() + OPEN_PATIENCE;
    let mut shell = loop {
        let (current, _) = remote.current().await;
        if let Some(s) = take_idle(remote, &current) {
            break s;
        }
        if let Some(s) = Shell::open(remote).await? {
            break s;
        }
        if Instant::now() >= deadline {
            return Err(remote.channel_error(format!(
                "could not open an SSH session: the host refused new sessions for {:.0} s (sshd MaxSessions)",
                OPEN_PATIENCE.as_secs_f64()
            )));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let mut out = Collector::bounded(options.on_line.clone(), false, &options);
    let started = Instant::now();
    let work = shell.run(script, &mut out);
    let result = match options.timeout {
        None => Some(work.await),
        Some(limit) => tokio::time::timeout(limit, work).await.ok(),
    };
    // Timed out, or past the output limit: the command runs in the
    // driver's group, which is killed (and the shell with it).
    let over = out
        .over_status()
        .filter(|_| matches!(result, Some(Ok(Err(())))));
    let result = match (result, over) {
        (Some(r), None) => r,
        (_, over) => {
            let status = over.unwrap_or(ExitStatus::TimedOut {
                after_ms: started.elapsed().as_millis() as u64,
            });
            remote
                .kill_session_group(shell.pgid, "timed out or sent more than its output limit")
                .await;
            shell.busy = false;
            shell.guard.close().await;
            out.finish();
            return Ok(ExecOutput {
                status,
                stdout: out.stdout,
                stderr: out.stderr,
            });
        }
    };
    let status = match result {
        Err(e) => {
            shell.guard.close().await;
            return Err(remote.channel_error(format!("writing to the shell: {e}")));
        }
        Ok(Err(())) => {
            let closed = shell.handle.is_closed();
            shell.guard.close().await;
            out.finish();
            if closed {
                return Err(remote.channel_error(
                    "the SSH connection dropped while the command ran (no answer to keepalives or closed by the host); its outcome is unknown",
                ));
            }
            ExitStatus::Unknown
        }
        Ok(Ok(code)) => {
            let mut pool = remote.shells.lock().unwrap_or_else(|p| p.into_inner());
            if pool.len() < MAX_IDLE {
                pool.push(shell);
            }
            // (Else the shell is dropped here and its guard closes it.)
            ExitStatus::Code { code }
        }
    };
    out.finish();
    Ok(ExecOutput {
        status,
        stdout: out.stdout,
        stderr: out.stderr,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(chunks: &[&[u8]], nonce: &str, with_status: bool) -> (Vec<u8>, Frame) {
        let mut out = Collector::new(None, false);
        let mut f = Frame::new(nonce, with_status);
        for c in chunks {
            f.push(OutputStream::Stdout, c, &mut out);
        }
        (out.stdout, f)
    }

    #[test]
    fn output_ends_where_the_nonce_starts_also_split_across_chunks() {
        let n = "fsmx-0123abcd";
        let (o, f) = collect(
            &[b"hello\nwor", b"ld", b"fsmx-01", b"23abcd:3", b"\n"],
            n,
            true,
        );
        assert_eq!(o, b"hello\nworld");
        assert!(f.ended);
        assert_eq!(f.status, Some(3));
        // Something that starts like the nonce but is not it is output.
        let (o, f) = collect(&[b"fsmx-01", b"x\n", b"fsmx-0123abcd:0\n"], n, true);
        assert_eq!(o, b"fsmx-01x\n");
        assert_eq!(f.status, Some(0));
        // stderr's end line has no status.
        let (o, f) = collect(&[b"warn\nfsmx-0123abcd\n"], n, false);
        assert_eq!(o, b"warn\n");
        assert!(f.ended && f.status.is_none());
    }

    #[test]
    fn lines_are_streamed_without_waiting_for_more_output() {
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = seen.clone();
        let mut out = Collector::new(
            Some(Arc::new(move |_, l: &str| {
                sink.lock().unwrap().push(l.to_string())
            })),
            false,
        );
        let mut f = Frame::new("fsmx-ff", true);
        f.push(OutputStream::Stdout, b"progress: 1.0 s\n", &mut out);
        assert_eq!(seen.lock().unwrap().as_slice(), ["progress: 1.0 s"]);
        f.push(OutputStream::Stdout, b"last fsmx", &mut out);
        // "fsmx" may be the nonce's start: held back, then released.
        f.push(OutputStream::Stdout, b"-fe\n", &mut out);
        assert_eq!(out.stdout, b"progress: 1.0 s\nlast fsmx-fe\n");
    }

    #[test]
    fn partial_suffix_is_the_longest_prefix_of_the_nonce_at_the_end() {
        assert_eq!(partial_suffix(b"abcfsm", b"fsmx-1"), 3);
        assert_eq!(partial_suffix(b"abc\n", b"fsmx-1"), 0);
        assert_eq!(partial_suffix(b"f", b"fsmx-1"), 1);
        assert_eq!(partial_suffix(b"", b"fsmx-1"), 0);
    }
}
