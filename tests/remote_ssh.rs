//! The remote layer against a real OpenSSH server on loopback (no lab needed).
mod support;

// Without root the suite says so and is skipped (tests/run.sh runs it, as root).
#[used]
#[link_section = ".init_array"]
static NEEDS: extern "C" fn() = support::skip::needs_root;

use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fsmatrix::remote::known_hosts::HostKeyError;
use fsmatrix::remote::{
    ExecOptions, ExitStatus, JumpHop, OutputStream, Remote, RemoteCommand, RemoteError, SshRemote,
};
use support::pg::Postgres;
use support::sshd::{encrypt_key, key_fingerprint, keygen_with, run, SshAgent, Sshd};

async fn connect(sshd: &Sshd) -> SshRemote {
    match SshRemote::connect(&sshd.trusted_target()).await {
        Ok(r) => r,
        Err(e) => panic!("failed to {e}\nsshd log:\n{}", sshd.log()),
    }
}

async fn sh(remote: &SshRemote, cmd: RemoteCommand) -> fsmatrix::remote::ExecOutput {
    remote
        .exec(&cmd, ExecOptions::with_timeout(Duration::from_secs(30)))
        .await
        .expect("command runs")
}

#[tokio::test]
async fn exec_reports_exit_codes_signals_and_separate_streams() {
    let sshd = Sshd::start();
    let r = connect(&sshd).await;
    let out = sh(
        &r,
        RemoteCommand::raw("echo out; echo err >&2; echo out2; exit 3"),
    )
    .await;
    assert_eq!(out.status, ExitStatus::Code { code: 3 });
    assert_eq!(out.stdout, b"out\nout2\n");
    assert_eq!(out.stderr, b"err\n");
    assert!(out.clone().success("testhost", "the step").is_err());

    let ok = sh(&r, RemoteCommand::raw("true")).await;
    assert!(ok.status.success(), "{ok:?}");
    assert!(
        ok.stderr.is_empty(),
        "the pgid marker leaked: {:?}",
        ok.stderr_lossy()
    );

    // Runs under /bin/sh (dash here), not the login shell (bash for root).
    let out = sh(&r, RemoteCommand::raw("readlink /proc/$$/exe")).await;
    assert_eq!(
        out.stdout_lossy().trim(),
        std::fs::canonicalize("/bin/sh").unwrap().to_string_lossy()
    );

    // In a session of its own, a command killed by a signal is reported
    // as such; in the persistent shell as the shell reports it (128 + 9),
    // and the shell lives on: `$$` is the command's own shell.
    let kill = RemoteCommand::raw("kill -s KILL $$");
    let out = r
        .exec_single(&kill, ExecOptions::with_timeout(Duration::from_secs(10)))
        .await
        .expect("runs");
    assert_eq!(
        out.status,
        ExitStatus::Signal {
            signal: "KILL".into()
        },
        "{out:?}"
    );
    let out = sh(&r, kill).await;
    assert_eq!(out.status, ExitStatus::Code { code: 137 }, "{out:?}");
    let after = sh(&r, RemoteCommand::raw("echo still here")).await;
    assert_eq!(after.stdout, b"still here\n", "{after:?}");
}

#[tokio::test]
async fn stdin_is_delivered_byte_for_byte_and_lines_are_streamed() {
    let sshd = Sshd::start();
    let r = connect(&sshd).await;
    let data: Vec<u8> = (0..3_000_000u32).map(|i| (i * 7 % 256) as u8).collect();
    let out = r
        .exec(
            &RemoteCommand::raw("cat"),
            ExecOptions {
                stdin: Some(data.clone()),
                timeout: Some(Duration::from_secs(60)),
                on_line: None,
                own_session: false,
                max_stdout: None,
            },
        )
        .await
        .expect("cat runs");
    assert!(out.status.success());
    assert_eq!(out.stdout.len(), data.len());
    assert!(out.stdout == data, "stdin came back changed");

    // A command that never reads its stdin must not hang the writer.
    let started = Instant::now();
    let out = r
        .exec(
            &RemoteCommand::raw("exit 4"),
            ExecOptions {
                stdin: Some(data.clone()),
                timeout: Some(Duration::from_secs(30)),
                on_line: None,
                own_session: false,
                max_stdout: None,
            },
        )
        .await
        .expect("runs");
    assert_eq!(out.status, ExitStatus::Code { code: 4 });
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );

    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink = lines.clone();
    let out = r
        .exec(
            &RemoteCommand::raw("echo one; sleep 0.2; echo two >&2; printf three"),
            ExecOptions {
                on_line: Some(Arc::new(move |s, l| {
                    sink.lock()
                        .unwrap()
                        .push((s, l.to_string(), Instant::now()))
                })),
                ..ExecOptions::with_timeout(Duration::from_secs(10))
            },
        )
        .await
        .expect("runs");
    assert!(out.status.success());
    let got = lines.lock().unwrap().clone();
    let summary: Vec<(OutputStream, String)> =
        got.iter().map(|(s, l, _)| (*s, l.clone())).collect();
    assert_eq!(
        summary,
        vec![
            (OutputStream::Stdout, "one".to_string()),
            (OutputStream::Stderr, "two".to_string()),
            (OutputStream::Stdout, "three".to_string()),
        ]
    );
    // Streamed as it came, not all at the end.
    assert!(got[1].2.duration_since(got[0].2) >= Duration::from_millis(150));
}

#[tokio::test]
async fn hostile_values_come_back_byte_for_byte_and_run_nothing() {
    let sshd = Sshd::start();
    let r = connect(&sshd).await;
    let marker = sshd.path("pwned");
    let m = marker.display();
    let hostile = vec![
        "'; rm -rf / #".to_string(),
        "$(id)".into(),
        "`id`".into(),
        "a\nb\n".into(),
        "!".into(),
        "!!".into(),
        "-n".into(),
        "--version".into(),
        "héllo ✓ 日本".into(),
        String::new(),
        "\\'\"".into(),
        "${HOME}".into(),
        "*".into(),
        format!("x; touch {m}"),
        format!("$(touch {m})"),
        format!("`touch {m}`"),
        format!("'; touch {m}; '"),
        format!("\ntouch {m}\n"),
    ];
    for v in &hostile {
        let out = sh(&r, RemoteCommand::new("printf").arg("%s").arg(v)).await;
        assert!(out.status.success(), "{v:?}: {out:?}");
        assert_eq!(out.stdout, v.as_bytes(), "value changed on its way: {v:?}");
        // Also as the program name position's neighbour and in a pipeline.
        let out = sh(
            &r,
            RemoteCommand::new("printf")
                .arg("%s|%s")
                .arg(v)
                .arg(v)
                .raw_arg("| cat"),
        )
        .await;
        assert_eq!(out.stdout, format!("{v}|{v}").as_bytes());
    }
    assert!(!marker.exists(), "a hostile value was executed");
    // NUL is refused before anything is sent.
    let err = r
        .exec(
            &RemoteCommand::new("printf").arg("a\0b"),
            ExecOptions::default(),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, RemoteError::Quote(_)), "{err}");
}

fn processes_with(needle: &str) -> Vec<String> {
    let out = run(Command::new("ps").args(["-eo", "pid,pgid,args"]));
    out.lines()
        .filter(|l| l.contains(needle))
        .map(str::to_string)
        .collect()
}

#[tokio::test]
async fn timeout_kills_the_remote_process_group() {
    let sshd = Sshd::start();
    let r = connect(&sshd).await;
    // Unique durations so we can find exactly our sleeps on this machine.
    let tag = format!("{}.{}", 4000 + std::process::id() % 1000, sshd.port);
    let script = RemoteCommand::raw("echo started; sleep")
        .arg(&tag)
        .raw_arg("& sh -c 'sleep \"$1\"' sh")
        .arg(format!("{tag}1"))
        .raw_arg("& sleep")
        .arg(format!("{tag}2"))
        .raw_arg("; echo never");
    let started = Instant::now();
    let out = r
        .exec(&script, ExecOptions::with_timeout(Duration::from_secs(1)))
        .await
        .expect("exec returns");
    let took = started.elapsed();
    assert!(matches!(out.status, ExitStatus::TimedOut { .. }), "{out:?}");
    assert_eq!(out.stdout, b"started\n");
    assert!(took < Duration::from_secs(6), "took {took:?}");
    // Poll: the group gets TERM and is gone within a few seconds.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left = processes_with(&format!("sleep {tag}"));
        if left.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "still running after the timeout: {left:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The connection still works afterwards.
    assert!(sh(&r, RemoteCommand::raw("true")).await.status.success());
}

/// A host that sends more than a command's bound (here 1 MiB on stdout,
/// of 64 MiB sent, beside a sleep) has the command killed at once, in the
/// persistent shell and in a session of its own alike: the first MiB is
/// kept, the status says which stream passed which limit, the sleep is
/// gone, and the connection works afterwards.
#[tokio::test]
async fn a_command_past_its_output_limit_is_killed_and_said() {
    let sshd = Sshd::start();
    let r = connect(&sshd).await;
    for own_session in [false, true] {
        let tag = format!(
            "{}.{}{}",
            5000 + std::process::id() % 1000,
            sshd.port,
            u8::from(own_session)
        );
        // The sleep runs beside the flood, in the command's group.
        let script = RemoteCommand::raw("sleep")
            .arg(&tag)
            .raw_arg("& head -c 67108864 /dev/zero; wait; echo never");
        let started = Instant::now();
        let out = r
            .exec(
                &script,
                ExecOptions {
                    max_stdout: Some(1 << 20),
                    own_session,
                    ..ExecOptions::with_timeout(Duration::from_secs(120))
                },
            )
            .await
            .expect("exec returns");
        assert_eq!(
            out.status,
            ExitStatus::OutputLimit {
                stream: "stdout".into(),
                limit_bytes: 1 << 20
            },
            "own session {own_session}"
        );
        assert_eq!(out.stdout.len(), 1 << 20);
        assert!(
            out.status.to_string().contains("more than 1 MiB on stdout"),
            "{}",
            out.status
        );
        let took = started.elapsed();
        assert!(took < Duration::from_secs(30), "took {took:?}");
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let left = processes_with(&format!("sleep {tag}"));
            if left.is_empty() {
                break;
            }
            assert!(Instant::now() < deadline, "still running: {left:?}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(sh(&r, RemoteCommand::raw("true")).await.status.success());
    }
}

/// The host lock's holder waits for a first line: a host that sends
/// bytes without a newline is cut at the stdout bound, not held in memory
/// until the lock's time limit.
#[tokio::test]
async fn a_held_command_that_floods_before_its_first_line_ends_at_the_bound() {
    let sshd = Sshd::start();
    let r = connect(&sshd).await;
    let started = Instant::now();
    let out = r
        .hold(
            &RemoteCommand::raw("head -c 80000000 /dev/zero; sleep 60"),
            b"",
            Duration::from_secs(60),
        )
        .await
        .expect("hold returns");
    match out {
        fsmatrix::remote::HoldOutcome::Ended(out) => {
            assert!(
                matches!(&out.status, ExitStatus::OutputLimit { stream, .. } if stream == "stdout"),
                "{:?}",
                out.status
            );
            assert_eq!(out.stdout.len() as u64, fsmatrix::timeouts::MAX_STDOUT);
        }
        other => panic!("held: {other:?}"),
    }
    assert!(started.elapsed() < Duration::from_secs(40));
}

/// A host whose session prints a flood on stderr before the persistent
/// shell's first line (here a ForceCommand; a noisy login file alike) is
/// refused at that shell's start with what it sent, within the bound,
/// instead of being read until the connect timeout.
#[tokio::test]
async fn a_shell_that_floods_stderr_before_its_first_line_is_refused() {
    let sshd = Sshd::start_with_config(
        "ForceCommand head -c 1000000 /dev/zero | tr '\\0' x >&2; exec /bin/sh -c \"$SSH_ORIGINAL_COMMAND\"\n",
    );
    let r = connect(&sshd).await;
    let err = r
        .exec(
            &RemoteCommand::raw("echo hi"),
            ExecOptions::with_timeout(Duration::from_secs(30)),
        )
        .await
        .expect_err("refused");
    let msg = err.to_string();
    assert!(
        msg.contains("more than 65536 bytes on stderr before its first line ended")
            && msg.contains("xxxx"),
        "{msg}"
    );
}

#[tokio::test]
async fn twenty_concurrent_commands_share_one_connection() {
    let sshd = Sshd::start();
    let r = connect(&sshd).await;
    let started = Instant::now();
    let runs = (0..20).map(|i| {
        let r = &r;
        async move {
            // Each command reports when it ran, in the host's clock (ns).
            let cmd = RemoteCommand::raw("s=$(date +%s%N); sleep 0.5; echo")
                .arg(i.to_string())
                .raw_arg("\"$s\" \"$(date +%s%N)\"");
            (i, sh(r, cmd).await)
        }
    });
    let results = futures::future::join_all(runs).await;
    let took = started.elapsed();
    let mut spans = Vec::new();
    for (i, out) in results {
        assert!(out.status.success(), "{i}: {out:?}");
        let text = out.stdout_lossy();
        let f: Vec<&str> = text.split_whitespace().collect();
        assert_eq!(f[0], i.to_string(), "{text}");
        let (s, e): (u128, u128) = (f[1].parse().unwrap(), f[2].parse().unwrap());
        spans.push((s, e));
    }
    // Most commands running at once, as seen on the host.
    let most = spans
        .iter()
        .map(|&(s, _)| spans.iter().filter(|&&(s2, e2)| s2 <= s && s < e2).count())
        .max()
        .unwrap();
    eprintln!("20 concurrent commands over one connection: {took:?}, at most {most} at once");
    assert!(most >= 2, "commands did not overlap: {spans:?}");
    assert!(
        most <= fsmatrix::remote::ssh::MAX_CHANNELS,
        "{most} in flight"
    );
    // One TCP connection: sshd logged one accepted key.
    assert_eq!(
        sshd.log().matches("Accepted publickey").count(),
        1,
        "{}",
        sshd.log()
    );
}

#[tokio::test]
async fn refused_channel_opens_are_retried_with_backoff() {
    // sshd allows 2 sessions per connection here; 8 commands at once (our
    // limit) make it refuse channel opens, which must be retried, not failed.
    let sshd = Sshd::start_with_config("MaxSessions 2\n");
    let r = connect(&sshd).await;
    let runs = (0..8).map(|i| {
        let r = &r;
        async move {
            (
                i,
                sh(r, RemoteCommand::raw("sleep 0.3; echo").arg(i.to_string())).await,
            )
        }
    });
    for (i, out) in futures::future::join_all(runs).await {
        assert!(out.status.success(), "{i}: {out:?}");
        assert_eq!(out.stdout_lossy(), format!("{i}\n"));
    }
    // sshd did refuse some: the retry path really ran.
    let refusals = sshd.log().matches("no more sessions").count();
    eprintln!("sshd refused {refusals} channel opens; all 8 commands ran");
    assert!(
        refusals > 0,
        "sshd never refused a channel, the test proves nothing:\n{}",
        sshd.log()
    );
}

#[tokio::test]
async fn upload_is_verified_and_a_corrupted_file_is_detected() {
    let sshd = Sshd::start();
    let r = connect(&sshd).await;
    let dest = sshd.path("work dir/it's/script.sh");
    let dest_s = dest.to_string_lossy().into_owned();
    let body = b"#!/bin/sh\necho 'hello'\n\x00\xff binary tail".to_vec();
    r.upload_verified(&dest_s, &body, 0o750)
        .await
        .expect("upload");
    assert_eq!(std::fs::read(&dest).expect("uploaded file"), body);
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&dest).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o750);
    // Uploading again replaces it.
    r.upload_verified(&dest_s, b"v2", 0o644)
        .await
        .expect("re-upload");
    assert_eq!(std::fs::read(&dest).unwrap(), b"v2");

    // Corrupt it on the host: the check before use fails, naming both hashes.
    std::fs::write(&dest, b"v3 tampered").unwrap();
    let expected = fsmatrix::text::sha256_hex(b"v2");
    let err = r.verify_sha256(&dest_s, &expected).await.unwrap_err();
    match &err {
        RemoteError::ChecksumMismatch {
            expected: e,
            actual,
            ..
        } => {
            assert_eq!(e, &expected);
            assert_eq!(actual, &fsmatrix::text::sha256_hex(b"v3 tampered"));
        }
        other => panic!("wrong error: {other}"),
    }
    assert!(err.to_string().contains(&dest_s));
}

fn host_key_error(result: Result<SshRemote, RemoteError>) -> HostKeyError {
    match result {
        Err(RemoteError::HostKey(e)) => *e,
        Err(other) => panic!("expected a host key error, got: {other}"),
        Ok(_) => panic!("connected to a host whose key is not trusted"),
    }
}

#[tokio::test]
async fn unknown_host_key_is_refused_with_its_fingerprint_and_nothing_runs() {
    let sshd = Sshd::start();
    let marker = sshd.path("ran");
    // A known_hosts that knows another host only.
    let other = sshd.path("other");
    support::sshd::keygen(&other, "ed25519");
    let other_pub = std::fs::read_to_string(sshd.path("other.pub")).unwrap();
    let kh = sshd.known_hosts("kh_unknown", &format!("[10.203.0.99]:22 {other_pub}"));
    let result = SshRemote::connect(&sshd.target(kh.clone())).await;
    if let Ok(r) = &result {
        let _ = r
            .exec(
                &RemoteCommand::new("touch").arg(marker.to_string_lossy()),
                ExecOptions::default(),
            )
            .await;
    }
    let err = host_key_error(result);
    let msg = err.to_string();
    assert!(matches!(err, HostKeyError::Unknown { .. }), "{msg}");
    assert!(msg.contains(&sshd.fingerprint("ed25519")), "{msg}");
    assert!(
        msg.contains("ssh-ed25519") && msg.contains("testhost"),
        "{msg}"
    );
    assert!(
        msg.contains(&format!(
            "ssh-keyscan -p {} -t ed25519 127.0.0.1 >> {}",
            sshd.port,
            kh.display()
        )),
        "{msg}"
    );
    assert!(!marker.exists());
    // The server saw no authentication attempt at all.
    assert!(!sshd.log().contains("Accepted publickey"), "{}", sshd.log());

    // A missing known_hosts file is an error too, not "empty".
    let err = host_key_error(SshRemote::connect(&sshd.target(sshd.path("nope"))).await);
    assert!(matches!(err, HostKeyError::File { .. }), "{err}");
}

#[tokio::test]
async fn changed_host_key_is_refused_and_nothing_runs() {
    let sshd = Sshd::start();
    let other = sshd.path("impostor");
    support::sshd::keygen(&other, "ed25519");
    let other_pub = std::fs::read_to_string(sshd.path("impostor.pub")).unwrap();
    let kh = sshd.known_hosts(
        "kh_changed",
        &format!(
            "# old key of the host\n[127.0.0.1]:{} {other_pub}",
            sshd.port
        ),
    );
    let err = host_key_error(SshRemote::connect(&sshd.target(kh)).await);
    let msg = err.to_string();
    assert!(matches!(err, HostKeyError::Changed { .. }), "{msg}");
    assert!(msg.contains(&sshd.fingerprint("ed25519")), "{msg}");
    assert!(msg.contains("line(s) 2"), "{msg}");
    assert!(!sshd.log().contains("Accepted publickey"), "{}", sshd.log());
}

#[tokio::test]
async fn hashed_port_and_rsa_only_entries_are_accepted() {
    let sshd = Sshd::start_with_rsa();
    // Plain `[127.0.0.1]:PORT` entries from ssh-keyscan.
    let plain = sshd.keyscan("ed25519");
    assert!(
        plain.starts_with(&format!("[127.0.0.1]:{} ", sshd.port)),
        "{plain}"
    );
    // Hashed with ssh-keygen -H.
    let kh = sshd.known_hosts("kh_hashed", &plain);
    run(Command::new("ssh-keygen").arg("-H").arg("-f").arg(&kh));
    let hashed = std::fs::read_to_string(&kh).unwrap();
    assert!(hashed.starts_with("|1|"), "{hashed}");
    let r = SshRemote::connect(&sshd.target(kh))
        .await
        .expect("hashed entry accepted");
    assert!(sh(&r, RemoteCommand::raw("true")).await.status.success());
    // Known only by its RSA key: we must ask for that key, not call it unknown.
    let kh = sshd.known_hosts("kh_rsa", &sshd.keyscan("rsa"));
    let r = SshRemote::connect(&sshd.target(kh))
        .await
        .expect("rsa-only entry accepted");
    assert!(sh(&r, RemoteCommand::raw("true")).await.status.success());
}

#[tokio::test]
async fn stopped_sshd_fails_fast_with_a_clear_error() {
    let mut sshd = Sshd::start();
    let target = sshd.trusted_target();
    sshd.stop();
    let started = Instant::now();
    let err = SshRemote::connect(&target).await.unwrap_err();
    let msg = err.to_string();
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert!(matches!(err, RemoteError::Connect { .. }), "{msg}");
    assert!(
        msg.contains("connection refused") && msg.contains("127.0.0.1"),
        "{msg}"
    );
}

#[tokio::test]
async fn a_dropped_connection_is_reestablished_once() {
    let sshd = Sshd::start();
    let r = connect(&sshd).await;
    assert!(sh(&r, RemoteCommand::raw("true")).await.status.success());
    // Kill the sshd process serving our connection (a child of our sshd).
    let listener = sshd.pid().expect("running");
    let children = run(Command::new("ps").args(["-o", "pid=", "--ppid", &listener.to_string()]));
    let children: Vec<&str> = children.split_whitespace().collect();
    assert!(!children.is_empty());
    for pid in &children {
        run(Command::new("kill").args(["-KILL", pid]));
    }
    // Wait for russh to notice the connection is gone.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let out = sh(&r, RemoteCommand::raw("echo back")).await;
    assert_eq!(out.stdout, b"back\n");
    assert_eq!(r.reconnects(), 1);
}

#[tokio::test]
async fn tunnel_reaches_postgres_on_the_hosts_socket() {
    let sshd = Sshd::start();
    let pg = Postgres::start();
    let r = connect(&sshd).await;
    let stream = r.tunnel(&pg.socket()).await.expect("tunnel opens");
    let mut config = tokio_postgres::Config::new();
    config.user("postgres").dbname("postgres");
    let (client, connection) = config
        .connect_raw(stream, tokio_postgres::NoTls)
        .await
        .expect("postgres handshake through the tunnel");
    let conn = tokio::spawn(connection);
    let row = client
        .query_one("SELECT version()", &[])
        .await
        .expect("query");
    let version: String = row.get(0);
    assert!(version.starts_with("PostgreSQL 15"), "{version}");
    let port: String = client.query_one("SHOW port", &[]).await.unwrap().get(0);
    assert_eq!(port, pg.port.to_string());
    // Over the socket, not TCP: the server has no client address for it.
    let addr: Option<String> = client
        .query_one("SELECT inet_client_addr()::text", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(addr, None, "the tunnel reached postgres over TCP");
    drop(client);
    let _ = conn.await;
    // A socket nobody listens on: a clear error that names it, not a hang.
    let absent = format!("{}/.s.PGSQL.1", pg.dir().display());
    let err = match r.tunnel(&absent).await {
        Ok(_) => panic!("a tunnel to a missing socket opened"),
        Err(e) => e,
    };
    assert!(err.to_string().contains(&absent), "{err}");
}

/// PIDs of every descendant of `root` (processes our sshd started).
fn descendants(root: u32) -> Vec<u32> {
    let table = run(Command::new("ps").args(["-eo", "pid=,ppid="]));
    let pairs: Vec<(u32, u32)> = table
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace().map(|x| x.parse::<u32>());
            Some((f.next()?.ok()?, f.next()?.ok()?))
        })
        .collect();
    let mut found = vec![root];
    let mut i = 0;
    while i < found.len() {
        let parent = found[i];
        found.extend(
            pairs
                .iter()
                .filter(|(_, pp)| *pp == parent)
                .map(|(p, _)| *p),
        );
        i += 1;
    }
    found.remove(0);
    found
}

#[tokio::test]
async fn a_dead_host_is_noticed_by_keepalives_in_under_a_minute() {
    let sshd = Sshd::start();
    let r = connect(&sshd).await;
    assert!(sh(&r, RemoteCommand::raw("true")).await.status.success());
    let listener = sshd.pid().expect("running");
    let started = Instant::now();
    let sleep = RemoteCommand::raw("sleep 300");
    let long = r.exec(&sleep, ExecOptions::default());
    let freeze = async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        // Freeze the session's processes: the host stops answering, the
        // TCP connection stays up (like a hung or cut-off host).
        let frozen = descendants(listener);
        assert!(!frozen.is_empty());
        for pid in &frozen {
            run(Command::new("kill").args(["-STOP", &pid.to_string()]));
        }
        frozen
    };
    let (result, frozen) = tokio::join!(long, freeze);
    let noticed = started.elapsed();
    for pid in &frozen {
        let _ = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    }
    eprintln!("a frozen host was noticed after {noticed:?}: {result:?}");
    assert!(noticed < Duration::from_secs(40), "{noticed:?}");
    match result {
        Ok(out) => panic!("a dropped connection must be an error, got {out:?}"),
        Err(e) => assert!(e.to_string().contains("connection dropped"), "{e}"),
    }
    // The next step reconnects once and runs.
    let out = sh(&r, RemoteCommand::raw("echo again")).await;
    assert_eq!(out.stdout, b"again\n");
    assert_eq!(r.reconnects(), 1);
}

#[tokio::test]
async fn a_silent_server_hits_connect_timeout() {
    // Accepts TCP but never speaks SSH (a hung host / wrong service).
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let hold = tokio::spawn(async move {
        let (sock, _) = listener.accept().await.expect("accept");
        tokio::time::sleep(Duration::from_secs(30)).await;
        drop(sock);
    });
    let sshd = Sshd::start();
    let mut target = sshd.trusted_target();
    target.port = port;
    target.connect_timeout = Duration::from_secs(1);
    // Trust is checked after the handshake; the file only has to exist.
    let started = Instant::now();
    let err = SshRemote::connect(&target).await.unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert!(
        err.to_string().contains("no SSH handshake within 1.0 s"),
        "{err}"
    );
    hold.abort();
}

#[tokio::test]
async fn a_background_process_holding_stdout_does_not_hold_the_step() {
    let sshd = Sshd::start();
    let r = connect(&sshd).await;
    let started = Instant::now();
    let out = sh(&r, RemoteCommand::raw("sleep 6 & echo launched")).await;
    let took = started.elapsed();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(out.stdout, b"launched\n");
    assert!(
        took < Duration::from_secs(5),
        "waited for the daemon: {took:?}"
    );
}

/// Random strings (any char but NUL) through quoting, SSH, the login
/// shell, the /bin/sh wrapper and `printf '%s'`: back byte for byte.
#[test]
fn random_values_round_trip_through_a_real_remote_shell() {
    use proptest::test_runner::{Config, TestRunner};
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let sshd = Sshd::start();
    let r = rt.block_on(connect(&sshd));
    let mut runner = TestRunner::new(Config {
        cases: 32,
        ..Config::default()
    });
    runner
        .run(&"[^\u{0}]{0,64}", |v| {
            let out = rt.block_on(sh(&r, RemoteCommand::new("printf").arg("%s").arg(&v)));
            proptest::prop_assert!(out.status.success());
            proptest::prop_assert_eq!(out.stdout, v.as_bytes());
            Ok(())
        })
        .expect("every value came back unchanged");
}

// --- jump hosts (ProxyJump) -------------------------------------------------------------

/// Hop `i` (0-based) of a chain: `sshd` with its own client key, trusted
/// through a plain ssh-keyscan file.
fn trusted_hop(i: usize, sshd: &Sshd) -> JumpHop {
    let kh = sshd.known_hosts("known_hosts", &sshd.keyscan("ed25519"));
    hop(i, sshd, kh)
}

fn hop(i: usize, sshd: &Sshd, known_hosts: std::path::PathBuf) -> JumpHop {
    JumpHop {
        name: JumpHop::label(i, "root", "127.0.0.1", sshd.port),
        address: "127.0.0.1".into(),
        port: sshd.port,
        user: "root".into(),
        identity_files: vec![sshd.path("client")],
        known_hosts,
    }
}

/// The sshd processes serving connections of `sshd` (children of its listener).
fn sessions_of(sshd: &Sshd) -> Vec<String> {
    let listener = sshd.pid().expect("running");
    let children = run(Command::new("ps").args(["-o", "pid=", "--ppid", &listener.to_string()]));
    children.split_whitespace().map(str::to_string).collect()
}

fn accepted(sshd: &Sshd) -> usize {
    sshd.log().matches("Accepted publickey").count()
}

#[tokio::test]
async fn through_a_jump_host_commands_tunnels_and_reconnects_work() {
    let jump = Sshd::start();
    let host = Sshd::start();
    let pg = Postgres::start();
    let mut target = host.trusted_target();
    target.jump = vec![trusted_hop(0, &jump)];
    let r = tokio::time::timeout(Duration::from_secs(30), SshRemote::connect(&target))
        .await
        .expect("connects in time")
        .unwrap_or_else(|e| panic!("failed to {e}\njump log:\n{}", jump.log()));
    assert_eq!(accepted(&jump), 1, "{}", jump.log());
    assert_eq!(accepted(&host), 1, "{}", host.log());

    let out = sh(
        &r,
        RemoteCommand::raw("echo out; echo err >&2; echo \"$SSH_CONNECTION\"; exit 3"),
    )
    .await;
    assert_eq!(out.status, ExitStatus::Code { code: 3 });
    assert_eq!(out.stderr, b"err\n");
    let stdout = out.stdout_lossy();
    let mut lines = stdout.lines();
    assert_eq!(lines.next(), Some("out"));
    // The host saw a connection to its own port, from the jump host's side.
    let conn: Vec<&str> = lines.next().unwrap_or("").split_whitespace().collect();
    assert_eq!(
        conn.get(3),
        Some(&host.port.to_string().as_str()),
        "{conn:?}"
    );
    assert!(sh(&r, RemoteCommand::raw("true")).await.status.success());

    // The counters' tunnel opens on the final session, through the jump.
    let stream = r.tunnel(&pg.socket()).await.expect("tunnel opens");
    let mut config = tokio_postgres::Config::new();
    config.user("postgres").dbname("postgres");
    let (client, connection) = config
        .connect_raw(stream, tokio_postgres::NoTls)
        .await
        .expect("postgres handshake through the jump host and the tunnel");
    let conn = tokio::spawn(connection);
    let port: String = client.query_one("SHOW port", &[]).await.unwrap().get(0);
    assert_eq!(port, pg.port.to_string());
    drop(client);
    let _ = conn.await;

    // The jump host's session dies: the next step reconnects through it.
    for pid in sessions_of(&jump) {
        run(Command::new("kill").args(["-KILL", &pid]));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let out = sh(&r, RemoteCommand::raw("echo back")).await;
    assert_eq!(out.stdout, b"back\n");
    assert_eq!(r.reconnects(), 1);
    assert_eq!(accepted(&jump), 2, "{}", jump.log());
    r.disconnect().await;
}

#[tokio::test]
async fn two_jump_hosts_in_a_row() {
    let first = Sshd::start();
    let second = Sshd::start();
    let host = Sshd::start();
    let mut target = host.trusted_target();
    target.jump = vec![trusted_hop(0, &first), trusted_hop(1, &second)];
    let r = tokio::time::timeout(Duration::from_secs(40), SshRemote::connect(&target))
        .await
        .expect("connects in time")
        .unwrap_or_else(|e| panic!("failed to {e}"));
    let out = sh(&r, RemoteCommand::new("printf").arg("%s").arg("a b'c")).await;
    assert!(out.status.success(), "{out:?}");
    assert_eq!(out.stdout, b"a b'c");
    let out = sh(&r, RemoteCommand::raw("exit 7")).await;
    assert_eq!(out.status, ExitStatus::Code { code: 7 });
    for s in [&first, &second, &host] {
        assert_eq!(accepted(s), 1, "{}", s.log());
    }
    r.disconnect().await;
}

/// `result` as the error at jump host `hop`, unwrapped.
fn jump_error(result: Result<SshRemote, RemoteError>, hop: &str) -> (String, RemoteError) {
    match result {
        Err(e @ RemoteError::Jump { .. }) => {
            let msg = e.to_string();
            let RemoteError::Jump { hop: h, source, .. } = e else {
                unreachable!()
            };
            assert_eq!(h, hop, "{msg}");
            (msg, *source)
        }
        Err(other) => panic!("expected an error at {hop}, got: {other}"),
        Ok(_) => panic!("connected although {hop} should have failed"),
    }
}

#[tokio::test]
async fn an_unknown_or_changed_jump_host_key_is_refused_with_the_hop_named() {
    let jump = Sshd::start();
    let host = Sshd::start();
    let marker = host.path("ran");
    let impostor = jump.path("impostor");
    support::sshd::keygen(&impostor, "ed25519");
    let impostor_pub = std::fs::read_to_string(jump.path("impostor.pub")).unwrap();
    let name = JumpHop::label(0, "root", "127.0.0.1", jump.port);
    for (file, text, want_changed) in [
        (
            "kh_unknown",
            format!("[10.203.1.99]:22 {impostor_pub}"),
            false,
        ),
        (
            "kh_changed",
            format!("[127.0.0.1]:{} {impostor_pub}", jump.port),
            true,
        ),
    ] {
        let kh = jump.known_hosts(file, &text);
        let mut target = host.trusted_target();
        target.jump = vec![hop(0, &jump, kh)];
        let result = SshRemote::connect(&target).await;
        if let Ok(r) = &result {
            let _ = r
                .exec(
                    &RemoteCommand::new("touch").arg(marker.to_string_lossy()),
                    ExecOptions::default(),
                )
                .await;
        }
        let (msg, source) = jump_error(result, &name);
        let RemoteError::HostKey(e) = source else {
            panic!("expected a host key error: {msg}");
        };
        assert_eq!(
            matches!(*e, HostKeyError::Changed { .. }),
            want_changed,
            "{msg}"
        );
        assert_eq!(
            matches!(*e, HostKeyError::Unknown { .. }),
            !want_changed,
            "{msg}"
        );
        assert!(
            msg.starts_with(&format!("reach testhost through {name}: trust 127.0.0.1")),
            "{msg}"
        );
        assert!(msg.contains(&jump.fingerprint("ed25519")), "{msg}");
    }
    assert!(!marker.exists());
    // Neither server saw an authentication: nothing ran anywhere.
    assert_eq!(accepted(&jump), 0, "{}", jump.log());
    assert_eq!(accepted(&host), 0, "{}", host.log());
}

#[tokio::test]
async fn a_down_or_refusing_jump_host_fails_fast_with_the_hop_named() {
    let host = Sshd::start();
    // Stopped: connection refused, at once.
    let mut jump = Sshd::start();
    let hop0 = trusted_hop(0, &jump);
    jump.stop();
    let mut target = host.trusted_target();
    target.jump = vec![hop0.clone()];
    let started = Instant::now();
    let (msg, source) = jump_error(SshRemote::connect(&target).await, &hop0.name);
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert!(matches!(source, RemoteError::Connect { .. }), "{msg}");
    assert!(msg.contains("connection refused"), "{msg}");

    // Silent (accepts TCP, never speaks SSH): within connect_timeout.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let silent_port = listener.local_addr().unwrap().port();
    let hold = tokio::spawn(async move {
        let (sock, _) = listener.accept().await.expect("accept");
        tokio::time::sleep(Duration::from_secs(30)).await;
        drop(sock);
    });
    let mut silent = hop0.clone();
    silent.port = silent_port;
    silent.name = JumpHop::label(0, "root", "127.0.0.1", silent_port);
    target.jump = vec![silent.clone()];
    target.connect_timeout = Duration::from_secs(1);
    let started = Instant::now();
    let (msg, _) = jump_error(SshRemote::connect(&target).await, &silent.name);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert!(msg.contains("no SSH handshake within 1.0 s"), "{msg}");
    hold.abort();

    // Up, but the host behind it is down: named as the host, said why.
    let jump = Sshd::start();
    let mut down = Sshd::start();
    let mut target = down.trusted_target();
    down.stop();
    target.jump = vec![trusted_hop(0, &jump)];
    let started = Instant::now();
    let err = match SshRemote::connect(&target).await {
        Ok(_) => panic!("connected to a stopped host"),
        Err(e) => e,
    };
    let msg = err.to_string();
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert!(matches!(err, RemoteError::Connect { .. }), "{msg}");
    assert!(
        msg.starts_with("connect to testhost (127.0.0.1:")
            && msg.contains("jump host 1 (root@127.0.0.1:")
            && msg.contains("refused to forward"),
        "{msg}"
    );

    // A jump host that forbids forwarding: the same clear error.
    let strict = Sshd::start_with_config("AllowTcpForwarding no\n");
    let mut target = host.trusted_target();
    target.jump = vec![trusted_hop(0, &strict)];
    let msg = match SshRemote::connect(&target).await {
        Ok(_) => panic!("connected through a jump host that forbids forwarding"),
        Err(e) => e.to_string(),
    };
    assert!(msg.contains("AllowTcpForwarding"), "{msg}");
    assert_eq!(accepted(&host), 0, "{}", host.log());
}

// --- keys as people have them: types, passphrases, ssh-agent, certificates --------------

/// Connect with `target` and ssh-agent at `agent` (never the test
/// process's SSH_AUTH_SOCK), within 30 s whatever happens.
async fn connect_key(
    target: &fsmatrix::remote::SshTarget,
    agent: Option<&SshAgent>,
) -> Result<SshRemote, RemoteError> {
    let sock = agent.map(|a| a.sock.clone());
    tokio::time::timeout(
        Duration::from_secs(30),
        SshRemote::connect_with_agent(target, sock),
    )
    .await
    .expect("log-in finished within 30 s")
}

/// Log in, run a command, and return the fingerprint sshd logged as
/// accepted last (`Accepted publickey for root ... ssh2: ED25519 SHA256:..`).
async fn log_in_and_run(
    sshd: &Sshd,
    key: Option<std::path::PathBuf>,
    agent: Option<&SshAgent>,
    what: &str,
) -> String {
    let r = match connect_key(&sshd.target_with_key(key), agent).await {
        Ok(r) => r,
        Err(e) => panic!("{what}: failed to {e}\nsshd log:\n{}", sshd.log()),
    };
    let out = sh(&r, RemoteCommand::raw("echo ok")).await;
    assert_eq!(out.stdout, b"ok\n", "{what}: {out:?}");
    r.disconnect().await;
    sshd.log()
        .lines()
        .rev()
        .find(|l| l.contains("Accepted publickey"))
        .map(str::to_string)
        .unwrap_or_else(|| panic!("{what}: sshd logged no accepted key:\n{}", sshd.log()))
}

fn expect_auth_error(result: Result<SshRemote, RemoteError>, what: &str) -> String {
    match result {
        Err(e @ RemoteError::Auth { .. }) => e.to_string(),
        Err(other) => panic!("{what}: expected a log-in error, got: {other}"),
        Ok(_) => panic!("{what}: logged in"),
    }
}

#[tokio::test]
async fn identity_files_of_every_key_type_log_in() {
    let sshd = Sshd::start();
    let kinds: &[(&str, &[&str])] = &[
        ("ed25519", &["-t", "ed25519"]),
        ("ecdsa-256", &["-t", "ecdsa", "-b", "256"]),
        ("ecdsa-384", &["-t", "ecdsa", "-b", "384"]),
        ("ecdsa-521", &["-t", "ecdsa", "-b", "521"]),
        ("rsa-3072", &["-t", "rsa", "-b", "3072"]),
        // Legacy PEM files (`BEGIN RSA PRIVATE KEY`, `BEGIN EC PRIVATE KEY`).
        ("rsa-2048-pem", &["-t", "rsa", "-b", "2048", "-m", "PEM"]),
        ("ecdsa-256-pem", &["-t", "ecdsa", "-b", "256", "-m", "PEM"]),
    ];
    for (name, args) in kinds {
        let key = sshd.path(&format!("id_{name}"));
        keygen_with(&key, args);
        sshd.authorize(&sshd.path(&format!("id_{name}.pub")));
        let started = Instant::now();
        let accepted = log_in_and_run(&sshd, Some(key.clone()), None, name).await;
        eprintln!(
            "{name}: logged in and ran a command in {:?}",
            started.elapsed()
        );
        assert!(
            accepted.contains(&key_fingerprint(&key)),
            "{name}: {accepted}"
        );
    }
    // RSA signed with rsa-sha2 (OpenSSH 9 refuses SHA-1 ssh-rsa by default,
    // so the log-in above already proves it); a server that accepts only
    // rsa-sha2-256 (and announces so in server-sig-algs) gets that.
    let strict = Sshd::start_with_config("PubkeyAcceptedAlgorithms rsa-sha2-256\n");
    let key = sshd.path("id_rsa-3072");
    strict.authorize(&sshd.path("id_rsa-3072.pub"));
    let accepted = log_in_and_run(&strict, Some(key.clone()), None, "rsa-sha2-256 only").await;
    assert!(accepted.contains(&key_fingerprint(&key)), "{accepted}");
    // sshd 9.2 announces rsa-sha2-512 anyway: the fallback really ran.
    assert!(
        strict
            .log()
            .contains("rsa-sha2-512 not in PubkeyAcceptedAlgorithms"),
        "{}",
        strict.log()
    );
}

const ENCRYPTED_HINT: &str = "is encrypted (it has a passphrase) and ssh-agent does not hold it: \
                              load it with `ssh-add";

#[tokio::test]
async fn encrypted_key_without_the_agent_fails_clearly_and_never_prompts() {
    let sshd = Sshd::start();
    let key = sshd.path("id_locked");
    keygen_with(&key, &["-t", "ed25519"]);
    encrypt_key(&key, "secret passphrase", false);
    sshd.authorize(&sshd.path("id_locked.pub"));
    let target = sshd.target_with_key(Some(key.clone()));
    let expected = format!(
        "the identity file {k} is encrypted (it has a passphrase) and ssh-agent does not hold \
         it: load it with `ssh-add {k}` (fsmatrix never asks for passphrases)",
        k = key.display()
    );

    // No agent at all.
    let started = Instant::now();
    let msg = expect_auth_error(connect_key(&target, None).await, "no agent");
    assert!(msg.contains(&expected), "{msg}");
    assert!(msg.contains("SSH_AUTH_SOCK is unset"), "{msg}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );

    // An agent that holds another key: the same error, and that other key
    // (authorized too) is not used behind the user's back.
    let agent = SshAgent::start();
    let other = sshd.path("id_other");
    keygen_with(&other, &["-t", "ed25519"]);
    sshd.authorize(&sshd.path("id_other.pub"));
    agent.add(&other);
    let msg = expect_auth_error(connect_key(&target, Some(&agent)).await, "other key");
    assert!(msg.contains(&expected), "{msg}");
    assert!(!msg.contains("SSH_AUTH_SOCK"), "{msg}");

    // A legacy PEM key with a passphrase (`Proc-Type: 4,ENCRYPTED`).
    let pem = sshd.path("id_locked_pem");
    keygen_with(&pem, &["-t", "ecdsa", "-b", "256"]);
    encrypt_key(&pem, "secret passphrase", true);
    assert!(std::fs::read_to_string(&pem)
        .unwrap()
        .contains("Proc-Type: 4,ENCRYPTED"));
    let msg = expect_auth_error(
        connect_key(&sshd.target_with_key(Some(pem.clone())), Some(&agent)).await,
        "PEM",
    );
    assert!(
        msg.contains(&format!("the identity file {}", pem.display())),
        "{msg}"
    );
    assert!(msg.contains(ENCRYPTED_HINT), "{msg}");
    assert_eq!(
        sshd.log().matches("Accepted publickey").count(),
        0,
        "{}",
        sshd.log()
    );
}

#[tokio::test]
async fn encrypted_key_held_by_the_agent_logs_in_through_it_only() {
    let sshd = Sshd::start();
    let agent = SshAgent::start();
    // Another authorized key first in the agent: with an identity_file, it
    // must not be the one used (OpenSSH's IdentitiesOnly).
    let other = sshd.path("id_other");
    keygen_with(&other, &["-t", "ed25519"]);
    sshd.authorize(&sshd.path("id_other.pub"));
    agent.add(&other);

    for (name, args, pem) in [
        ("ed25519", &["-t", "ed25519"][..], false),
        ("rsa-pem", &["-t", "rsa", "-b", "2048"][..], true),
    ] {
        let key = sshd.path(&format!("id_{name}"));
        keygen_with(&key, args);
        sshd.authorize(&sshd.path(&format!("id_{name}.pub")));
        agent.add(&key);
        encrypt_key(&key, "secret passphrase", pem);
        let accepted = log_in_and_run(&sshd, Some(key.clone()), Some(&agent), name).await;
        assert!(
            accepted.contains(&key_fingerprint(&sshd.path(&format!("id_{name}.pub")))),
            "{name}: {accepted}\nagent: {}",
            agent.list()
        );
    }
}

#[tokio::test]
async fn agent_keys_are_offered_in_order_until_one_is_accepted() {
    let sshd = Sshd::start();
    let agent = SshAgent::start();
    let refused = sshd.path("id_refused");
    let good = sshd.path("id_good");
    keygen_with(&refused, &["-t", "ed25519"]);
    keygen_with(&good, &["-t", "ecdsa", "-b", "256"]);
    sshd.authorize(&sshd.path("id_good.pub"));
    agent.add(&refused);
    agent.add(&good);
    let accepted = log_in_and_run(&sshd, None, Some(&agent), "agent").await;
    assert!(accepted.contains(&key_fingerprint(&good)), "{accepted}");

    // An agent whose keys are all refused: each is named.
    let lonely = SshAgent::start();
    lonely.add(&refused);
    let msg = expect_auth_error(
        connect_key(&sshd.target_with_key(None), Some(&lonely)).await,
        "refused",
    );
    assert!(
        msg.contains("refused every key ssh-agent offered")
            && msg.contains(&key_fingerprint(&refused)),
        "{msg}"
    );
    // No agent and no identity_file.
    let msg = expect_auth_error(connect_key(&sshd.target_with_key(None), None).await, "none");
    assert!(msg.contains("SSH_AUTH_SOCK is unset"), "{msg}");
}

#[tokio::test]
async fn user_certificates_log_in_without_the_key_in_authorized_keys() {
    let sshd = Sshd::start();
    // From files: <key>-cert.pub beside the key (Ed25519 and RSA, which
    // signs as rsa-sha2-512-cert-v01@openssh.com).
    for (name, args) in [
        ("ed25519", &["-t", "ed25519"][..]),
        ("rsa", &["-t", "rsa", "-b", "2048"][..]),
    ] {
        let key = sshd.path(&format!("id_cert_{name}"));
        keygen_with(&key, args);
        sshd.certify(&key, "root,admin", "-5m:+1h");
        let accepted = log_in_and_run(&sshd, Some(key.clone()), None, name).await;
        assert!(
            accepted.contains("-CERT") && accepted.contains(&key_fingerprint(&key)),
            "{name}: {accepted}"
        );
    }
    // Held by ssh-agent (ssh-add loads the certificate with its key).
    let agent = SshAgent::start();
    let key = sshd.path("id_cert_agent");
    keygen_with(&key, &["-t", "ed25519"]);
    sshd.certify(&key, "root", "-5m:+1h");
    agent.add(&key);
    assert!(agent.list().contains("CERT"), "{}", agent.list());
    let accepted = log_in_and_run(&sshd, None, Some(&agent), "agent certificate").await;
    assert!(accepted.contains("-CERT"), "{accepted}");
    // An encrypted key held by the agent, with its certificate file.
    encrypt_key(&key, "secret passphrase", false);
    let accepted = log_in_and_run(&sshd, Some(key.clone()), Some(&agent), "encrypted + cert").await;
    assert!(accepted.contains("-CERT"), "{accepted}");
}

#[tokio::test]
async fn expired_or_foreign_certificates_are_refused_naming_why() {
    let sshd = Sshd::start();
    let key = sshd.path("id_expired");
    keygen_with(&key, &["-t", "ed25519"]);
    let cert = sshd.certify(&key, "root", "-2d:-1d");
    let msg = expect_auth_error(
        connect_key(&sshd.target_with_key(Some(key.clone())), None).await,
        "expired",
    );
    assert!(
        msg.contains(&format!("refused the certificate {}", cert.display()))
            && msg.contains("principals: root")
            && msg.contains("valid from ")
            && msg.contains("it has expired"),
        "{msg}"
    );

    let key = sshd.path("id_foreign");
    keygen_with(&key, &["-t", "ed25519"]);
    sshd.certify(&key, "alice,bob", "-5m:+1h");
    let msg = expect_auth_error(
        connect_key(&sshd.target_with_key(Some(key.clone())), None).await,
        "foreign",
    );
    assert!(
        msg.contains("principals: alice, bob") && msg.contains("it does not name the user root"),
        "{msg}"
    );
    assert_eq!(
        sshd.log().matches("Accepted publickey").count(),
        0,
        "{}",
        sshd.log()
    );
}

#[tokio::test]
async fn commands_share_one_persistent_shell_and_keep_their_output_apart() {
    let sshd = Sshd::start();
    let r = connect(&sshd).await;
    let opts = || ExecOptions::with_timeout(Duration::from_secs(30));
    // 30 commands in a row: one driver (the parent of every command's
    // shell); a session of its own has sshd as its parent.
    let mut parents = std::collections::BTreeSet::new();
    for _ in 0..30 {
        let out = sh(&r, RemoteCommand::raw("echo $PPID")).await;
        parents.insert(out.stdout_lossy().trim().to_string());
    }
    assert_eq!(parents.len(), 1, "{parents:?}");
    let out = r
        .exec_single(&RemoteCommand::raw("echo $PPID"), opts())
        .await
        .expect("runs");
    let sshd_pid = out.stdout_lossy().trim().to_string();
    assert!(!parents.contains(&sshd_pid), "{parents:?} {sshd_pid}");
    let driver_parent = sh(&r, RemoteCommand::raw("ps -o ppid= -p $PPID | tr -d ' '")).await;
    assert_eq!(driver_parent.stdout_lossy().trim(), sshd_pid);

    // Output framing: no final newline, bytes that look like a frame,
    // binary output, a large output, both streams, any exit status.
    let out = sh(
        &r,
        RemoteCommand::raw("printf 'no newline'; printf 'err' >&2; exit 7"),
    )
    .await;
    assert_eq!(
        (out.stdout.as_slice(), out.stderr.as_slice(), out.status),
        (
            &b"no newline"[..],
            &b"err"[..],
            ExitStatus::Code { code: 7 }
        )
    );
    let out = sh(&r, RemoteCommand::raw("printf 'fsmx-\\nfsmx-00:0\\n'")).await;
    assert_eq!(out.stdout, b"fsmx-\nfsmx-00:0\n");
    let out = sh(
        &r,
        RemoteCommand::raw("head -c 2000000 /dev/zero | tr '\\0' 'x'"),
    )
    .await;
    assert_eq!(out.stdout.len(), 2_000_000);
    assert!(out.stdout.iter().all(|&b| b == b'x'));
    let out = sh(&r, RemoteCommand::raw("printf '\\001\\377\\000z'")).await;
    assert_eq!(out.stdout, [1u8, 255, 0, b'z']);

    // Nothing leaks from one command to the next: directory, variables,
    // exit, and a command reading stdin gets EOF, not the next command.
    let home = sh(&r, RemoteCommand::raw("pwd")).await.stdout_lossy();
    assert_ne!(home.trim(), "/tmp");
    sh(
        &r,
        RemoteCommand::raw("cd /tmp; export FSMX_LEAK=1; fsmx_n=x"),
    )
    .await;
    let out = sh(
        &r,
        RemoteCommand::raw("pwd; echo \"[${FSMX_LEAK-}${fsmx_n-}]\""),
    )
    .await;
    assert_eq!(out.stdout_lossy(), format!("{home}[]\n"));
    let out = sh(&r, RemoteCommand::raw("cat; echo read-all")).await;
    assert_eq!(out.stdout, b"read-all\n");
    let out = sh(&r, RemoteCommand::raw("exit 0")).await;
    assert!(out.status.success());
    let out = sh(&r, RemoteCommand::raw("echo $PPID")).await;
    assert!(
        parents.contains(out.stdout_lossy().trim()),
        "the shell was replaced"
    );

    // A background process that writes after its command ended does not
    // become the next command's output.
    sh(&r, RemoteCommand::raw("(sleep 0.3; echo late) &")).await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    let out = sh(&r, RemoteCommand::raw("echo next")).await;
    assert_eq!(out.stdout, b"next\n");

    // Streaming works in the shell too, line by line as it comes.
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink = lines.clone();
    let started = Instant::now();
    let out = r
        .exec(
            &RemoteCommand::raw("echo one; sleep 0.4; echo two"),
            ExecOptions {
                on_line: Some(Arc::new(move |_, l| {
                    sink.lock()
                        .unwrap()
                        .push((l.to_string(), started.elapsed()))
                })),
                ..opts()
            },
        )
        .await
        .expect("runs");
    assert!(out.status.success());
    let got = lines.lock().unwrap().clone();
    assert_eq!(got.len(), 2, "{got:?}");
    assert!(got[1].1 - got[0].1 >= Duration::from_millis(300), "{got:?}");
}
