//! [`RecordingRemote`]: a [`Remote`] for unit tests of code above the remote
//! layer (the host worker).  It runs nothing: it records every command as
//! the shell text an SSH host would get, and answers from rules the test
//! set up.  Unmatched commands get the fallback answer (exit 0, no output,
//! unless changed with [`RecordingRemote::otherwise`]).  It has no tunnel.
use std::sync::Mutex;
use std::time::Duration;

use super::{
    ExecOptions, ExecOutput, ExitStatus, OutputStream, Remote, RemoteCommand, RemoteError,
};

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
        port: u16,
    },
}

/// A scripted answer: commands containing `needle` get `output`.
#[derive(Debug, Clone)]
struct Rule {
    needle: String,
    output: ExecOutput,
}

#[derive(Debug)]
pub struct RecordingRemote {
    host: String,
    calls: Mutex<Vec<Recorded>>,
    rules: Mutex<Vec<Rule>>,
    fallback: Mutex<ExecOutput>,
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
        }
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
        let output = lock(&self.rules)
            .iter()
            .rev()
            .find(|r| text.contains(&r.needle))
            .map(|r| r.output.clone())
            .unwrap_or_else(|| lock(&self.fallback).clone());
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

    async fn tunnel(&self, port: u16) -> Result<Self::Tunnel, RemoteError> {
        lock(&self.calls).push(Recorded::Tunnel { port });
        Err(RemoteError::Channel {
            host: self.host.clone(),
            reason: format!("open a tunnel to 127.0.0.1:{port}: a RecordingRemote has none"),
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
        assert!(r.tunnel(5432).await.is_err());
        // Upload verification fails honestly without a sha256 answer.
        assert!(r.upload_verified("/w/a", b"x", 0o644).await.is_err());
        r.respond_ok(
            "sha256",
            &format!("{}  -\n", crate::text::sha256_hex(b"x")),
        );
        r.upload_verified("/w/a", b"x", 0o644).await.unwrap();
    }
}
