//! Per-command cost: the same 50 short commands on one lab host through
//! fsmatrix's remote layer (one SSH connection, a persistent shell per
//! host) and through OpenSSH with ControlMaster (one master connection, a
//! new session and login shell per command, as `ssh -o ControlPath=…`
//! users run them).  Also the remote layer's single-command path (a new
//! session channel per command, what must survive a dead shell) for
//! comparison.  Rounds alternate the three so drift hits each alike; prints
//! the medians and the ratio fsmatrix ÷ ControlMaster (aim ≤ 0.5).
//! Needs a standing lab: `fsmatrix lab up`, then
//! `cargo bench -p fsmatrix --profile perf --bench commands`.
#[path = "../../tests/support/lab.rs"]
mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use fsmatrix::remote::{ExecOptions, Remote, RemoteCommand, SshRemote, SshTarget};

const COMMANDS: usize = 50;
const ROUNDS: usize = 5;

/// The commands: what a sweep's steps look like (a builtin, a fork, a file
/// read, a little output).
fn command(i: usize) -> RemoteCommand {
    match i % 4 {
        0 => RemoteCommand::new("true"),
        1 => RemoteCommand::new("uname").arg("-s"),
        2 => RemoteCommand::new("cat").arg("/proc/loadavg"),
        _ => RemoteCommand::new("printf")
            .arg("%s\\n")
            .arg(format!("step {i}")),
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let Some(lab) = common::read_inventory(&common::lab_dir()) else {
        eprintln!("commands bench: no lab is up (fsmatrix lab up); skipped");
        return;
    };
    let host = lab.hosts[0].clone();
    let target = SshTarget {
        host_name: host.name.clone(),
        address: host.address.clone(),
        port: 22,
        user: "root".into(),
        identity_files: vec![lab.identity_file.clone()],
        known_hosts: lab.known_hosts.clone(),
        connect_timeout: Duration::from_secs(10),
        become_: None,
        jump: Vec::new(),
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let control = dir.path().join("cm");
    let ssh = |extra: &[&str]| {
        let mut c = Command::new("ssh");
        c.args(["-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes"])
            .arg("-o")
            .arg(format!("UserKnownHostsFile={}", lab.known_hosts.display()))
            .arg("-i")
            .arg(&lab.identity_file)
            .args(["-o", "ControlMaster=auto", "-o", "ControlPersist=60"])
            .arg("-o")
            .arg(format!("ControlPath={}", control.display()))
            .args(extra);
        c
    };
    let dest = format!("root@{}", host.address);
    // The master, started once, outside the timing.
    let up = ssh(&[&dest, "true"]).status().expect("ssh");
    assert!(up.success(), "ssh with ControlMaster to {dest} failed");

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let remote = rt
        .block_on(SshRemote::connect(&target))
        .expect("connect to the lab host");
    // Warm both (the persistent shell opens on first use).
    rt.block_on(remote.exec(&command(0), ExecOptions::default()))
        .expect("warm");

    let mut ours = Vec::new();
    let mut single = Vec::new();
    let mut cm = Vec::new();
    for _ in 0..ROUNDS {
        let t0 = Instant::now();
        rt.block_on(async {
            for i in 0..COMMANDS {
                let out = remote
                    .exec(&command(i), ExecOptions::default())
                    .await
                    .expect("exec");
                assert!(out.status.success(), "{:?}", out);
            }
        });
        ours.push(t0.elapsed().as_secs_f64());

        let t0 = Instant::now();
        rt.block_on(async {
            for i in 0..COMMANDS {
                let out = remote
                    .exec_single(&command(i), ExecOptions::default())
                    .await
                    .expect("exec_single");
                assert!(out.status.success(), "{:?}", out);
            }
        });
        single.push(t0.elapsed().as_secs_f64());

        let t0 = Instant::now();
        for i in 0..COMMANDS {
            let text = command(i).to_shell().expect("quote").to_string();
            let out = ssh(&[&dest, "--", &text]).output().expect("ssh");
            assert!(out.status.success(), "{out:?}");
        }
        cm.push(t0.elapsed().as_secs_f64());
    }
    let _ = ssh(&["-O", "exit", &dest]).output();
    rt.block_on(remote.disconnect());

    let (o, s, c) = (median(&mut ours), median(&mut single), median(&mut cm));
    let per = |x: f64| x * 1000.0 / COMMANDS as f64;
    println!(
        "{COMMANDS} commands on {} ({ROUNDS} rounds, medians):",
        host.name
    );
    println!(
        "  fsmatrix, persistent shell:       {o:.3} s ({:.1} ms per command)",
        per(o)
    );
    println!(
        "  fsmatrix, a session per command:  {s:.3} s ({:.1} ms per command)",
        per(s)
    );
    println!(
        "  OpenSSH ControlMaster:            {c:.3} s ({:.1} ms per command)",
        per(c)
    );
    println!(
        "  ratio persistent shell ÷ ControlMaster: {:.2} (aim ≤ 0.5)",
        o / c
    );
    println!("  ratio session per command ÷ ControlMaster: {:.2}", s / c);
}
