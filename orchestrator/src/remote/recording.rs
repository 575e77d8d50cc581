//! [`RecordingRemote`]: a [`Remote`] that runs nothing.  It records every
//! command as the shell text an SSH host would get, and answers from rules
//! set up beforehand: `plan --commands` drives the real host worker against
//! it, and the worker's unit tests script failures, drops and
//! cancellations with it.  Unmatched commands get the fallback answer (exit
//! 0, no output, unless changed with [`RecordingRemote::otherwise`]).  Files
//! uploaded to it are remembered, so that the checksum check after an
//! upload passes as on a real host.  It has no tunnel.
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::{
    bounded, sha256_command, upload_with, ExecOptions, ExecOutput, ExitStatus, Held, HoldOutcome,
    OutputStream, Remote, RemoteCommand, RemoteError,
};

/// Called with each command's text before it is answered.
pub type ExecHook = Arc<dyn Fn(&str) + Send + Sync>;

/// One call the code under test made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recorded {
    Exec {
        /// The command as sh source text (what `plan --commands` shows).
        command: String,
        stdin: Option<Vec<u8>>,
        timeout: Option<Duration>,
    },
    Tunnel {
        socket: String,
    },
}

/// A scripted answer: commands containing `needle` get `output`.
#[derive(Debug, Clone)]
struct Rule {
    needle: String,
    output: ExecOutput,
}

pub struct RecordingRemote {
    host: String,
    calls: Mutex<Vec<Recorded>>,
    rules: Mutex<Vec<Rule>>,
    fallback: Mutex<ExecOutput>,
    /// Uploaded path → sha256 of its bytes.
    files: Mutex<BTreeMap<String, String>>,
    hook: Mutex<Option<ExecHook>>,
    /// After a command containing this ran, the connection is gone.
    drop_after: Mutex<Option<String>>,
    dropped: Mutex<bool>,
}

impl std::fmt::Debug for RecordingRemote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordingRemote")
            .field("host", &self.host)
            .field("calls", &lock(&self.calls).len())
            .finish()
    }
}

impl RecordingRemote {
    pub fn new(host: &str) -> Self {
        RecordingRemote {
            host: host.to_string(),
            calls: Mutex::new(Vec::new()),
            rules: Mutex::new(Vec::new()),
            fallback: Mutex::new(ExecOutput {
                status: ExitStatus::Code { code: 0 },
                stdout: Vec::new(),
                stderr: Vec::new(),
            }),
            files: Mutex::new(BTreeMap::new()),
            hook: Mutex::new(None),
            drop_after: Mutex::new(None),
            dropped: Mutex::new(false),
        }
    }

    /// Call `hook` with every command's text before answering it (a test
    /// cancels the sweep at a given step this way).
    pub fn on_exec(&self, hook: impl Fn(&str) + Send + Sync + 'static) -> &Self {
        *lock(&self.hook) = Some(Arc::new(hook));
        self
    }

    /// The host drops off the network once a command containing `needle`
    /// has run: every later command and tunnel fails as a lost connection.
    pub fn drop_after(&self, needle: &str) -> &Self {
        *lock(&self.drop_after) = Some(needle.to_string());
        self
    }

    /// Commands whose text contains `needle` answer `output` (the rule
    /// added last wins, so a test can override a general rule).
    pub fn respond(&self, needle: &str, output: ExecOutput) -> &Self {
        lock(&self.rules).push(Rule {
            needle: needle.to_string(),
            output,
        });
        self
    }

    /// Shorthand: commands containing `needle` exit 0 printing `stdout`.
    pub fn respond_ok(&self, needle: &str, stdout: &str) -> &Self {
        self.respond(
            needle,
            ExecOutput {
                status: ExitStatus::Code { code: 0 },
                stdout: stdout.as_bytes().to_vec(),
                stderr: Vec::new(),
            },
        )
    }

    /// Shorthand: commands containing `needle` exit `code` printing `stderr`.
    pub fn fail(&self, needle: &str, code: u32, stderr: &str) -> &Self {
        self.respond(
            needle,
            ExecOutput {
                status: ExitStatus::Code { code },
                stdout: Vec::new(),
                stderr: stderr.as_bytes().to_vec(),
            },
        )
    }

    /// The answer for commands no rule matches.
    pub fn otherwise(&self, output: ExecOutput) -> &Self {
        *lock(&self.fallback) = output;
        self
    }

    pub fn calls(&self) -> Vec<Recorded> {
        lock(&self.calls).clone()
    }

    /// The command texts, in order.
    pub fn commands(&self) -> Vec<String> {
        self.calls()
            .into_iter()
            .filter_map(|c| match c {
                Recorded::Exec { command, .. } => Some(command),
                Recorded::Tunnel { .. } => None,
            })
            .collect()
    }
}

impl RecordingRemote {
    fn gone(&self) -> RemoteError {
        RemoteError::Channel {
            host: self.host.clone(),
            reason: "the connection dropped (scripted)".into(),
        }
    }

    /// The answer to the checksum command for a file uploaded earlier.
    fn checksum_of_upload(&self, text: &str) -> Option<ExecOutput> {
        let files = lock(&self.files);
        files.iter().find_map(|(path, sum)| {
            let cmd = sha256_command(path);
            (cmd.to_shell().ok()? == text).then(|| ExecOutput {
                status: ExitStatus::Code { code: 0 },
                stdout: format!("{sum}  -\n").into_bytes(),
                stderr: Vec::new(),
            })
        })
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panicking test thread poisons the lock; the data is still fine.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Remote for RecordingRemote {
    type Tunnel = tokio::io::DuplexStream;

    fn host(&self) -> &str {
        &self.host
    }

    async fn exec(
        &self,
        command: &RemoteCommand,
        options: ExecOptions,
    ) -> Result<ExecOutput, RemoteError> {
        let text = command.to_shell()?.to_string();
        lock(&self.calls).push(Recorded::Exec {
            command: text.clone(),
            stdin: options.stdin.clone(),
            timeout: options.timeout,
        });
        if *lock(&self.dropped) {
            return Err(self.gone());
        }
        let hook = lock(&self.hook).clone();
        if let Some(hook) = hook {
            hook(&text);
        }
        if lock(&self.drop_after)
            .as_deref()
            .is_some_and(|n| text.contains(n))
        {
            *lock(&self.dropped) = true;
        }
        let output = lock(&self.rules)
            .iter()
            .rev()
            .find(|r| text.contains(&r.needle))
            .map(|r| r.output.clone())
            .or_else(|| self.checksum_of_upload(&text))
            .unwrap_or_else(|| lock(&self.fallback).clone());
        // Bounded as an SSH host's output is: a scripted flood fails the
        // command the same way.
        let output = bounded(output, &options);
        if let Some(cb) = &options.on_line {
            for (stream, bytes) in [
                (OutputStream::Stdout, &output.stdout),
                (OutputStream::Stderr, &output.stderr),
            ] {
                for line in String::from_utf8_lossy(bytes).lines() {
                    cb(stream, line);
                }
            }
        }
        Ok(output)
    }

    fn upload(
        &self,
        remote_path: &str,
        bytes: &[u8],
        mode: u32,
    ) -> impl Future<Output = Result<(), RemoteError>> + Send {
        lock(&self.files).insert(remote_path.to_string(), crate::text::sha256_hex(bytes));
        upload_with(self, remote_path, bytes, mode)
    }

    /// Recorded as an exec (the command text is what a host would get) and
    /// answered by the same rules: a first stdout line means held (until
    /// released; never lost), no output means it ended.
    async fn hold(
        &self,
        command: &RemoteCommand,
        input: &[u8],
        ready_within: Duration,
    ) -> Result<HoldOutcome, RemoteError> {
        let options = ExecOptions {
            stdin: Some(input.to_vec()),
            ..ExecOptions::with_timeout(ready_within)
        };
        let out = self.exec(command, options).await?;
        match out.stdout.iter().position(|&b| b == b'\n') {
            Some(nl) if out.status.success() => {
                let first_line = String::from_utf8_lossy(&out.stdout[..nl]).into_owned();
                let (release, released) = tokio::sync::oneshot::channel::<()>();
                let (lost_tx, lost) = tokio::sync::watch::channel(false);
                let task = tokio::spawn(async move {
                    let _ = released.await;
                    drop(lost_tx);
                });
                Ok(HoldOutcome::Held {
                    held: Held::new(release, lost, task),
                    first_line,
                })
            }
            _ => Ok(HoldOutcome::Ended(out)),
        }
    }

    async fn tunnel(&self, socket: &str) -> Result<Self::Tunnel, RemoteError> {
        lock(&self.calls).push(Recorded::Tunnel {
            socket: socket.to_string(),
        });
        if *lock(&self.dropped) {
            return Err(self.gone());
        }
        Err(RemoteError::Channel {
            host: self.host.clone(),
            reason: format!("open a tunnel to {socket}: a RecordingRemote has none"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn records_quoted_commands_and_answers_by_rule() {
        let r = RecordingRemote::new("h1");
        r.respond_ok("uname", "Linux\n")
            .fail("mkfs", 1, "mkfs: device busy\n");
        let out = r
            .exec(&RemoteCommand::raw("uname -s"), ExecOptions::default())
            .await
            .unwrap();
        assert_eq!(out.stdout, b"Linux\n");
        let out = r
            .exec(
                &RemoteCommand::new("mkfs.ext4").arg("/dev/x y"),
                ExecOptions::default(),
            )
            .await
            .unwrap();
        let err = out.success("h1", "make the filesystem").unwrap_err();
        assert!(err.to_string().contains("mkfs: device busy"), "{err}");
        r.upload("/w/linux.sh", b"echo", 0o755).await.unwrap();
        let cmds = r.commands();
        assert_eq!(cmds[1], "mkfs.ext4 '/dev/x y'");
        assert!(
            cmds[2].contains("cat > /w/linux.sh.fsmatrix-upload"),
            "{}",
            cmds[2]
        );
        assert!(matches!(&r.calls()[2], Recorded::Exec { stdin: Some(b), .. } if b == b"echo"));
        assert!(r.tunnel("/w/pg/sock/.s.PGSQL.5432").await.is_err());
        // What was uploaded checksums as uploaded; a rule can say otherwise.
        r.upload_verified("/w/a", b"x", 0o644).await.unwrap();
        r.respond_ok("sha256", &format!("{}  -\n", crate::text::sha256_hex(b"y")));
        assert!(r.upload_verified("/w/a", b"x", 0o644).await.is_err());
        // Once dropped, the host answers nothing.
        r.drop_after("uname");
        assert!(r
            .exec(&RemoteCommand::raw("uname -s"), ExecOptions::default())
            .await
            .is_ok());
        assert!(r
            .exec(&RemoteCommand::raw("true"), ExecOptions::default())
            .await
            .is_err());
    }
}
