//! What the ssh config tests share: a temporary folder, a resolver with
//! its own home, and a lab configuration.
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::{ConfigFile, Resolver, TIMEOUT};
use crate::config::{GivenPaths, Inventory};

/// A temp folder of its own per test, removed at drop.
pub(super) struct Tmp(pub(super) PathBuf);
impl Tmp {
    pub(super) fn new(tag: &str) -> Tmp {
        let p = std::env::temp_dir().join(format!(
            "fsmatrix-sshcfg-{tag}-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Tmp(p)
    }
    pub(super) fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.0.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }
}
impl Drop for Tmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub(super) fn resolver(home: &Path) -> Resolver {
    Resolver {
        ssh: PathBuf::from("ssh"),
        timeout: TIMEOUT,
        home: Some(home.to_path_buf()),
    }
}

pub(super) fn named(p: &Path) -> ConfigFile {
    ConfigFile {
        path: Some(p.to_path_buf()),
        shown: p.display().to_string(),
    }
}

/// The tests need a real OpenSSH client; without one they say so and pass.
pub(super) fn have_ssh() -> bool {
    let ok = Command::new("ssh")
        .arg("-V")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("no ssh client: skipping a test that runs ssh -G");
    }
    ok
}

/// An inventory at `dir/inv.toml`; one naming `ssh_config = "config"` is
/// read as the user gives it with `--ssh-config DIR/config`.
pub(super) fn inventory(t: &Tmp, r: &Resolver, body: &str) -> Result<Inventory, String> {
    let given = GivenPaths {
        ssh_config: body
            .contains("ssh_config = \"config\"")
            .then(|| t.0.join("config")),
        recorded: None,
    };
    Inventory::parse_with(&t.0.join("inv.toml"), body.to_string(), r, &given)
        .map_err(|e| e.to_string())
}

pub(super) const LAB: &str = "Include INC\n\
        Host db-metal-1\n  HostName 10.0.1.5\n  Port 2222\n  ProxyJump ops@bastion.lab:2200\n\
        Host db-loose\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n\
        Host db-*\n  UserKnownHostsFile ~/lab_known_hosts\n\
        Host db-bad\n  HostName bad_name.example\n\
        Host *\n  User star\n";

pub(super) fn lab(t: &Tmp) {
    let inc = t.write(
        "inc.conf",
        "Host db-*\n  User bench\n  IdentityFile %d/.ssh/lab_%r\n",
    );
    t.write("config", &LAB.replace("INC", &inc.display().to_string()));
}

/// The home `ssh -G` expands `~` with: the passwd entry's, not `$HOME`
/// (OpenSSH's `tilde_expand_filename` asks `getpwuid`).  Run as a user
/// whose `$HOME` differs (the without-optional suite runs as nobody),
/// `$HOME` would be the wrong expectation.
pub(super) fn ssh_home() -> String {
    let mut buf = vec![0 as libc::c_char; 16 * 1024];
    let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
    let mut out: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: every pointer is to live storage of the stated size;
    // getpwuid_r writes only there and sets `out` to `&pw` or null.
    let rc = unsafe {
        libc::getpwuid_r(
            libc::getuid(),
            &mut pw,
            buf.as_mut_ptr(),
            buf.len(),
            &mut out,
        )
    };
    assert!(rc == 0 && !out.is_null(), "no passwd entry for this uid");
    // SAFETY: on success pw_dir points into `buf`, NUL-terminated.
    unsafe { std::ffi::CStr::from_ptr(pw.pw_dir) }
        .to_string_lossy()
        .into_owned()
}
