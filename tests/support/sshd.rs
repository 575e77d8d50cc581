//! A real, throwaway OpenSSH server on 127.0.0.1 for tests.
//!
//! Its own host keys and an authorized client key in a temp folder;
//! `UsePAM no`, `StrictModes no`, root by key only.  It also trusts a user
//! CA (`ca`, `TrustedUserCAKeys`) for certificate tests.  Killed by PID on
//! drop.  [`SshAgent`]: a throwaway ssh-agent, also killed by PID.
#![allow(dead_code)]

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fsmatrix::remote::SshTarget;

pub struct Sshd {
    pub dir: tempfile::TempDir,
    pub port: u16,
    child: Option<Child>,
}

/// Run a program, panic with its output if it fails (test setup only).
pub fn run(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("start {cmd:?}: {e}"));
    assert!(out.status.success(), "{cmd:?} failed: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `ssh-keygen` without a passphrase with extra `args` (`-t`, `-b`, `-m`).
pub fn keygen_with(path: &Path, args: &[&str]) {
    run(Command::new("ssh-keygen")
        .args(["-q", "-N", "", "-C", "fsmatrix-test"])
        .args(args)
        .arg("-f")
        .arg(path));
}

/// Give the key file `path` the passphrase `pass` (`pem`: legacy PEM
/// format, `Proc-Type: 4,ENCRYPTED`).
pub fn encrypt_key(path: &Path, pass: &str, pem: bool) {
    let mut cmd = Command::new("ssh-keygen");
    cmd.args(["-q", "-p", "-P", "", "-N", pass]);
    if pem {
        cmd.args(["-m", "PEM"]);
    }
    run(cmd.arg("-f").arg(path).stdin(Stdio::null()));
}

/// The `SHA256:...` fingerprint of a key file (public or private).
pub fn key_fingerprint(path: &Path) -> String {
    let out = run(Command::new("ssh-keygen").arg("-lf").arg(path));
    out.split_whitespace()
        .nth(1)
        .expect("fingerprint field")
        .to_string()
}

pub fn keygen(path: &Path, kind: &str) {
    let mut cmd = Command::new("ssh-keygen");
    cmd.args(["-q", "-N", "", "-C", "fsmatrix-test", "-t", kind, "-f"])
        .arg(path);
    if kind == "rsa" {
        cmd.args(["-b", "2048"]);
    }
    run(&mut cmd);
}

fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    l.local_addr().expect("local addr").port()
}

impl Sshd {
    /// Start sshd with an ed25519 host key.
    pub fn start() -> Sshd {
        Sshd::start_with(false, "")
    }

    /// Start sshd with extra `sshd_config` lines (they win: sshd takes the
    /// first value it reads for most keywords).
    pub fn start_with_config(extra: &str) -> Sshd {
        Sshd::start_with(false, extra)
    }

    /// Start sshd with an ed25519 and an RSA host key (RSA keygen is slow).
    pub fn start_with_rsa() -> Sshd {
        Sshd::start_with(true, "")
    }

    fn start_with(rsa: bool, extra: &str) -> Sshd {
        let dir = tempfile::Builder::new()
            .prefix("fsmatrix-sshd-")
            .tempdir()
            .expect("temp dir");
        let d = dir.path();
        keygen(&d.join("host_ed25519"), "ed25519");
        let mut host_keys = format!("HostKey {}/host_ed25519\n", d.display());
        if rsa {
            keygen(&d.join("host_rsa"), "rsa");
            host_keys.push_str(&format!("HostKey {}/host_rsa\n", d.display()));
        }
        keygen(&d.join("client"), "ed25519");
        keygen(&d.join("ca"), "ed25519");
        std::fs::copy(d.join("client.pub"), d.join("authorized_keys")).expect("authorized_keys");
        // sshd's privilege separation folder.
        std::fs::create_dir_all("/run/sshd").expect("/run/sshd");
        let mut sshd = Sshd {
            dir,
            port: 0,
            child: None,
        };
        for _ in 0..5 {
            let port = free_port();
            let d = sshd.dir.path();
            let config = format!(
                "{extra}Port {port}\nListenAddress 127.0.0.1\n{host_keys}\
                 PidFile {d}/sshd.pid\nAuthorizedKeysFile {d}/authorized_keys\n\
                 TrustedUserCAKeys {d}/ca.pub\nUsePAM no\n\
                 StrictModes no\nPermitRootLogin prohibit-password\nPasswordAuthentication no\n\
                 KbdInteractiveAuthentication no\nLogLevel VERBOSE\nMaxSessions 10\n",
                d = d.display()
            );
            std::fs::write(d.join("sshd_config"), config).expect("sshd_config");
            let log = std::fs::File::create(d.join("sshd.log")).expect("sshd.log");
            let child = Command::new("/usr/sbin/sshd")
                .args(["-D", "-e", "-f"])
                .arg(d.join("sshd_config"))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(log)
                .spawn()
                .expect("start /usr/sbin/sshd");
            sshd.child = Some(child);
            sshd.port = port;
            if sshd.wait_listening(Duration::from_secs(10)) {
                return sshd;
            }
            sshd.stop();
        }
        panic!("sshd did not start; log: {}", sshd.log());
    }

    fn wait_listening(&mut self, limit: Duration) -> bool {
        let start = Instant::now();
        while start.elapsed() < limit {
            if let Some(child) = self.child.as_mut() {
                if let Ok(Some(_)) = child.try_wait() {
                    return false;
                }
            }
            if TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Kill the listener (by its PID) and wait for it.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill").arg(child.id().to_string()).status();
            let _ = child.wait();
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("sshd.log")).unwrap_or_default()
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `ssh-keyscan` output for this server (`-t` types), as OpenSSH writes it.
    pub fn keyscan(&self, types: &str) -> String {
        let start = Instant::now();
        loop {
            let out = Command::new("ssh-keyscan")
                .args(["-p", &self.port.to_string(), "-t", types, "127.0.0.1"])
                .stderr(Stdio::null())
                .output()
                .expect("run ssh-keyscan");
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            if !text.trim().is_empty() || start.elapsed() > Duration::from_secs(10) {
                return text;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Write a known_hosts file named `name` holding `text`.
    pub fn known_hosts(&self, name: &str, text: &str) -> PathBuf {
        let p = self.path(name);
        std::fs::write(&p, text).expect("write known_hosts");
        p
    }

    /// `SHA256:...` fingerprint of a host key of this server.
    pub fn fingerprint(&self, kind: &str) -> String {
        let out = run(Command::new("ssh-keygen")
            .arg("-lf")
            .arg(self.path(&format!("host_{kind}.pub"))));
        out.split_whitespace()
            .nth(1)
            .expect("fingerprint field")
            .to_string()
    }

    /// A target for this server with the client key and `known_hosts`.
    pub fn target(&self, known_hosts: PathBuf) -> SshTarget {
        SshTarget {
            host_name: "testhost".into(),
            address: "127.0.0.1".into(),
            port: self.port,
            user: "root".into(),
            identity_files: vec![self.path("client")],
            known_hosts,
            connect_timeout: Duration::from_secs(10),
            become_: None,
            jump: Vec::new(),
        }
    }

    /// Let the public key `pub_path` log in (sshd reads authorized_keys at
    /// every log-in, so no restart is needed).
    pub fn authorize(&self, pub_path: &Path) {
        use std::io::Write;
        let line = std::fs::read_to_string(pub_path).expect("read public key");
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(self.path("authorized_keys"))
            .expect("open authorized_keys");
        f.write_all(line.as_bytes())
            .expect("append to authorized_keys");
    }

    /// Sign `key`'s public half (`key.pub`) with this server's user CA into
    /// `key-cert.pub`: principals `principals` (comma-separated), validity
    /// `validity` (`ssh-keygen -V`, e.g. `-5m:+1h`).
    pub fn certify(&self, key: &Path, principals: &str, validity: &str) -> PathBuf {
        let mut public = key.as_os_str().to_owned();
        public.push(".pub");
        run(Command::new("ssh-keygen")
            .args(["-q", "-s"])
            .arg(self.path("ca"))
            .args(["-I", "fsmatrix-test-cert", "-n", principals, "-V", validity])
            .arg(&public));
        let mut cert = key.as_os_str().to_owned();
        cert.push("-cert.pub");
        PathBuf::from(cert)
    }

    /// A trusted target logging in with the key file `key` (or the agent:
    /// `None`).
    pub fn target_with_key(&self, key: Option<PathBuf>) -> SshTarget {
        SshTarget {
            identity_files: key.into_iter().collect(),
            ..self.trusted_target()
        }
    }

    /// A target trusting this server through a plain ssh-keyscan file.
    pub fn trusted_target(&self) -> SshTarget {
        let kh = self.known_hosts("known_hosts", &self.keyscan("ed25519"));
        self.target(kh)
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A throwaway ssh-agent on a socket in its own temp folder (`ssh-agent -D
/// -a`, a child of the test), killed by PID on drop.  Nothing here touches
/// the test process's `SSH_AUTH_SOCK`.
pub struct SshAgent {
    pub sock: PathBuf,
    child: Option<Child>,
    _dir: tempfile::TempDir,
}

impl SshAgent {
    pub fn start() -> SshAgent {
        let dir = tempfile::Builder::new()
            .prefix("fsmatrix-agent-")
            .tempdir()
            .expect("temp dir");
        let sock = dir.path().join("agent.sock");
        let child = Command::new("ssh-agent")
            .arg("-D")
            .arg("-a")
            .arg(&sock)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start ssh-agent");
        let mut agent = SshAgent {
            sock,
            child: Some(child),
            _dir: dir,
        };
        let start = Instant::now();
        while !agent.sock.exists() {
            if let Some(Ok(Some(status))) = agent.child.as_mut().map(Child::try_wait) {
                panic!("ssh-agent exited: {status}");
            }
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "ssh-agent made no socket"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        agent
    }

    /// `ssh-add key` (an unencrypted key file; its `-cert.pub` is added
    /// too), never prompting: no terminal, no askpass.
    pub fn add(&self, key: &Path) {
        run(Command::new("ssh-add")
            .arg(key)
            .env("SSH_AUTH_SOCK", &self.sock)
            .env("SSH_ASKPASS_REQUIRE", "never")
            .env_remove("DISPLAY")
            .stdin(Stdio::null()));
    }

    /// What `ssh-add -l` lists.
    pub fn list(&self) -> String {
        let out = Command::new("ssh-add")
            .arg("-l")
            .env("SSH_AUTH_SOCK", &self.sock)
            .stdin(Stdio::null())
            .output()
            .expect("run ssh-add -l");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for SshAgent {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill").arg(child.id().to_string()).status();
            let _ = child.wait();
        }
    }
}
