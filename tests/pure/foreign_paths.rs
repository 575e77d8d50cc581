//! Paths from other people's files are not yours (issue 24): an ssh config
//! is read only when the user names it, and a bundle's recorded paths are
//! used by `resume` and `run --from` only when the user names them.  Real
//! ssh (`ssh -G` runs the configs' `Match exec`, which leaves a mark).
use std::path::{Path, PathBuf};
use std::process::Output;

use assert_cmd::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The binary with a home of its own (no ~/.ssh/config of the tester's).
fn fsmatrix(home: &Path) -> Command {
    let mut c = Command::cargo_bin("fsmatrix").expect("binary built");
    c.current_dir(root()).env("HOME", home);
    c.timeout(std::time::Duration::from_secs(60));
    c
}

/// Someone else's files: an ssh config whose `Match exec` touches `ran`
/// and sends the alias to a closed port, a key and a known_hosts.
struct Theirs {
    dir: tempfile::TempDir,
}

impl Theirs {
    fn new() -> Theirs {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path();
        std::fs::create_dir(p.join("home")).expect("mkdir");
        std::fs::write(
            p.join("theirs.conf"),
            format!(
                "Match exec \"touch '{}'\"\n  User root\nHost bench-closed\n  HostName 127.0.0.1\n  Port 1\n",
                p.join("ran").display()
            ),
        )
        .expect("write");
        std::fs::write(p.join("known_hosts"), "").expect("write");
        std::fs::write(p.join("id"), "").expect("write");
        Theirs { dir }
    }
    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }
    fn home(&self) -> PathBuf {
        self.path("home")
    }
    /// Whether ssh read the config since the last call.
    fn ran(&self) -> bool {
        std::fs::remove_file(self.path("ran")).is_ok()
    }
    fn inventory(&self) -> String {
        format!(
            "ssh_config = {:?}\n[defaults]\nos = \"linux\"\nknown_hosts = {:?}\nidentity_file = {:?}\n\
             [[host]]\nname = \"one\"\naddress = \"bench-closed\"\ndevices = [\"/dev/vdb\"]\n",
            self.path("theirs.conf").display(),
            self.path("known_hosts").display(),
            self.path("id").display()
        )
    }
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn plan_check_and_run_read_an_ssh_config_only_when_the_user_names_it() {
    let t = Theirs::new();
    let inv = t.path("inventory.toml");
    std::fs::write(&inv, t.inventory()).expect("write");
    let conf = t.path("theirs.conf");
    let out = t.path("out");
    let refusal = format!(
        "{}:1:14: error: ssh_config `{}` names {}, which is read only when you name it too: \
         `ssh -G` runs its `Match exec` commands as you; give --ssh-config {}",
        inv.display(),
        conf.display(),
        conf.display(),
        conf.display()
    );
    let mut said = Vec::new();
    for verb in [
        vec!["plan", "-m", "matrix/quick.toml"],
        vec!["check"],
        vec!["run", "-m", "matrix/quick.toml", "--out"],
    ] {
        let mut c = fsmatrix(&t.home());
        c.args(&verb);
        if verb[0] == "run" {
            c.arg(&out);
        }
        let o = c.arg("-i").arg(&inv).output().expect("fsmatrix");
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{verb:?}: {err}");
        assert!(err.contains(&refusal), "{verb:?}: {err}");
        assert!(!t.ran(), "{verb:?} read an ssh config no one named");
        said.push(err);
    }
    assert!(said.iter().all(|s| s == &said[0]), "{said:#?}");
    assert!(!out.exists(), "run made a bundle");
    // Named on the command line: read, and its values used.
    let o = fsmatrix(&t.home())
        .args(["plan", "-m", "matrix/quick.toml", "-i"])
        .arg(&inv)
        .arg("--ssh-config")
        .arg(&conf)
        .output()
        .expect("fsmatrix");
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains("one: address 127.0.0.1") && err.contains("port 1 ("),
        "{err}"
    );
    assert!(t.ran(), "the named config was not read");
}

#[test]
fn resume_and_run_from_use_a_bundle_s_recorded_paths_only_when_named() {
    let t = Theirs::new();
    let bundle = t.path("theirs-20260101T000000Z");
    std::fs::create_dir_all(bundle.join("data")).expect("mkdir");
    std::fs::write(bundle.join("data/inventory.toml"), t.inventory()).expect("write");
    std::fs::write(
        bundle.join("data/matrix.toml"),
        "name = \"theirs\"\n[[filesystem]]\nname = \"e\"\ntype = \"ext4\"\n\
         [[workload]]\nname = \"w\"\nbuiltin = \"select-only\"\nscale = 1\nclients = [1]\nduration = \"5s\"\n",
    )
    .expect("write");
    let out = t.path("out");
    let verbs = [
        vec!["resume".to_string()],
        vec![
            "run".to_string(),
            "--out".to_string(),
            out.display().to_string(),
            "--from".to_string(),
        ],
        // What a re-run would use, without running it.
        vec!["plan".to_string(), "--from".to_string()],
    ];
    for verb in &verbs {
        let o = fsmatrix(&t.home())
            .args(verb)
            .arg(&bundle)
            .output()
            .expect("fsmatrix");
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{verb:?}: {err}");
        // The bundle's device is its host owner's word, not the user's.
        assert!(
            err.contains(
                "inventory.toml:9:12: error: `devices` of [[host]] `one` recorded in the bundle \
                 names /dev/vdb; a bundle's devices and consents are its host owner's, not \
                 yours: give --device one:/dev/vdb"
            ),
            "{verb:?}: {err}"
        );
        for (key, at, flag, path) in [
            ("ssh_config", "1:14", "--ssh-config", "theirs.conf"),
            ("identity_file", "5:17", "--identity-file", "id"),
            ("known_hosts", "4:15", "--known-hosts", "known_hosts"),
        ] {
            let path = t.path(path).display().to_string();
            let line = err
                .lines()
                .find(|l| l.contains(&format!("inventory.toml:{at}: error: ")))
                .unwrap_or_else(|| panic!("{verb:?}: no error for {key} at {at}: {err}"));
            assert!(
                line.contains(key)
                    && line.contains("recorded in the bundle")
                    && line.contains(&format!("give {flag} {path}")),
                "{verb:?}: {line}"
            );
        }
        assert!(!t.ran(), "{verb:?} read the bundle's ssh config");
    }
    assert!(!out.exists(), "run --from made a bundle");
    // Each named: the recorded paths are used (the config is read; the host
    // behind it is a closed port, so nothing runs).
    for verb in &verbs {
        let o = fsmatrix(&t.home())
            .args(verb)
            .arg(&bundle)
            .arg("--ssh-config")
            .arg(t.path("theirs.conf"))
            .arg("--identity-file")
            .arg(t.path("id"))
            .arg("--known-hosts")
            .arg(t.path("known_hosts"))
            .args(["--device", "one:/dev/vdb"])
            .output()
            .expect("fsmatrix");
        let err = stderr(&o);
        assert!(!err.contains("recorded in the bundle"), "{verb:?}: {err}");
        assert!(t.ran(), "{verb:?}: the named config was not read: {err}");
        if verb[0] == "plan" {
            assert_eq!(o.status.code(), Some(0), "{err}");
            assert!(
                err.contains("from the bundle, as you named them:\n  one: devices /dev/vdb\n"),
                "{err}"
            );
            assert!(
                String::from_utf8_lossy(&o.stdout).contains("/dev/vdb"),
                "the plan table: {o:?}"
            );
        }
    }
    // --identity-file, --known-hosts, --device and --consent belong to a bundle's inventory (an
    // inventory that does not exist: were the flag not refused, nothing
    // could run either).
    for flag in ["--identity-file", "--known-hosts", "--device", "--consent"] {
        let o = fsmatrix(&t.home())
            .args(["run", "-m", "matrix/quick.toml", "-i"])
            .arg(t.path("no-such-inventory.toml"))
            .arg("--out")
            .arg(&out)
            .arg(flag)
            .arg(t.path("id"))
            .output()
            .expect("fsmatrix");
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(
            err.contains("name what a bundle's inventory records: give them with --from"),
            "{err}"
        );
    }
}
