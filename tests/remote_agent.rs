//! Authentication through a real ssh-agent.  Its own test binary because it
//! sets SSH_AUTH_SOCK, which is process-wide.
mod support;

// Without root the suite says so and is skipped (tests/run.sh runs it, as root).
#[used]
#[link_section = ".init_array"]
static NEEDS: extern "C" fn() = support::skip::needs_root;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fsmatrix::remote::{ExecOptions, Remote, RemoteCommand, RemoteError, SshRemote};
use support::sshd::{run, Sshd};

/// An ssh-agent we started, killed by PID on drop.
struct Agent(Child);

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn agent_auth_works_and_a_missing_agent_is_a_clear_error() {
    let sshd = Sshd::start();
    let mut target = sshd.trusted_target();
    target.identity_files = Vec::new();

    std::env::set_var("SSH_AUTH_SOCK", "");
    let err = SshRemote::connect(&target).await.unwrap_err();
    assert!(matches!(err, RemoteError::Auth { .. }), "{err}");
    assert!(
        err.to_string().contains("SSH_AUTH_SOCK is unset or empty"),
        "{err}"
    );

    let sock = sshd.path("agent.sock");
    let _agent = Agent(
        Command::new("ssh-agent")
            .arg("-D")
            .arg("-a")
            .arg(&sock)
            .stdout(Stdio::null())
            .spawn()
            .expect("start ssh-agent"),
    );
    let start = Instant::now();
    while !sock.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "ssh-agent socket never appeared"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::env::set_var("SSH_AUTH_SOCK", &sock);
    // An agent without keys: refused with a hint.
    let err = SshRemote::connect(&target).await.unwrap_err();
    assert!(err.to_string().contains("ssh-add"), "{err}");

    run(Command::new("ssh-add")
        .arg(sshd.path("client"))
        .env("SSH_AUTH_SOCK", &sock)
        .stderr(Stdio::null()));
    let remote = SshRemote::connect(&target).await.expect("agent auth");
    let out = remote
        .exec(
            &RemoteCommand::raw("echo via-agent"),
            ExecOptions::default(),
        )
        .await
        .expect("runs");
    assert_eq!(out.stdout, b"via-agent\n");
}
