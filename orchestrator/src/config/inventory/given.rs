//! Paths from other people's files are not yours (issue 24).  An inventory
//! names files on the machine that runs fsmatrix: an `ssh_config` (read by
//! `ssh -G`, which runs its `Match exec` commands as the user running
//! fsmatrix, and checks neither owner nor mode of a `-F` file), an
//! `identity_file` (the key fsmatrix logs in with) and a `known_hosts` (the
//! host keys it trusts).  Whoever wrote the inventory chose them.
//!
//! - An `ssh_config` is read only when the user names the same file on the
//!   command line (`--ssh-config PATH`), or when it is the user's own
//!   `~/.ssh/config`, which ssh reads anyway.  `plan`, `check`, `run`,
//!   `resume` and `run --from` all read inventories here, so all refuse alike.
//! - An inventory recorded in a bundle (`resume`, `run --from`: a bundle
//!   may come from someone else) is not the user's own: its `identity_file`
//!   and `known_hosts` are used only when the user names each of them
//!   (`--identity-file PATH`, `--known-hosts PATH`).  An inventory the user
//!   gives with `-i` is the user's, and so are its paths.
//! - So are a recorded inventory's devices and consents (`devices`,
//!   `consent_foreign`, `allow_postgres_settings`, `allow_script_commands`,
//!   issue 39): its host owner's word to another sweep, not to this one.
//!   Each is used only when the user names it (`--device HOST:DEV`,
//!   `--consent HOST:KEY[=VALUE]`, `*:` for [defaults]).
//!
//! Defaults are the user's own (ssh-agent, `~/.ssh/known_hosts`, values from
//! the user's `~/.ssh/config`): they need no flag.
use std::path::{Path, PathBuf};

/// What the user named on the command line, against which an inventory's
/// paths are checked when it is read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GivenPaths {
    /// `--ssh-config PATH`: the one ssh config the inventory may name
    /// (besides the user's own `~/.ssh/config`).
    pub ssh_config: Option<PathBuf>,
    /// `Some` for an inventory recorded in a bundle: its paths are used only
    /// when named here.  `None`: an inventory the user gave (`-i`).
    pub recorded: Option<RecordedPaths>,
}

/// For a bundle's inventory: the key and known_hosts files the user names
/// (`--identity-file`, `--known-hosts`, each as often as needed), and the
/// devices and consents of its hosts the user accepts (`--device`,
/// `--consent`): a bundle's owner chose which disks may be destroyed and
/// what scripts may do on them, and that is not the user's consent.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecordedPaths {
    pub identity_files: Vec<PathBuf>,
    pub known_hosts: Vec<PathBuf>,
    /// `HOST:DEVICE` (`*:DEVICE` for one [defaults] gives every host).
    pub devices: Vec<String>,
    /// `HOST:allow_script_commands`, `HOST:consent_foreign=DEVICE`,
    /// `HOST:allow_postgres_settings=NAME` (`*:` for [defaults]).
    pub consents: Vec<String>,
}

/// The host keys whose values are the host owner's consent, and how the
/// user names one of a bundle's on the command line.
pub(super) const CONSENT_KEYS: [&str; 4] = [
    "devices",
    "consent_foreign",
    "allow_postgres_settings",
    "allow_script_commands",
];

/// `--device HOST:VALUE` or `--consent HOST:KEY[=VALUE]`: the words that
/// name one recorded consent (`value` `None`: a true `allow_script_commands`).
pub(super) fn consent_word(host: &str, key: &str, value: Option<&str>) -> (&'static str, String) {
    match (key, value) {
        ("devices", Some(v)) => ("--device", format!("{host}:{v}")),
        (_, Some(v)) => ("--consent", format!("{host}:{key}={v}")),
        (_, None) => ("--consent", format!("{host}:{key}")),
    }
}

impl GivenPaths {
    /// The same, for an inventory recorded in a bundle.
    pub fn recorded(&self) -> GivenPaths {
        GivenPaths {
            ssh_config: self.ssh_config.clone(),
            recorded: Some(self.recorded.clone().unwrap_or_default()),
        }
    }
}

/// `p` as the file it names: `~/` is `home`, a relative path is relative to
/// the current folder, links and `..` resolved when it exists.
pub(super) fn normal(p: &Path, home: Option<&Path>) -> PathBuf {
    let p = match (p.strip_prefix("~"), home) {
        (Ok(rest), Some(h)) => h.join(rest),
        _ => p.to_path_buf(),
    };
    let p = std::path::absolute(&p).unwrap_or(p);
    p.canonicalize().unwrap_or(p)
}

/// Whether `p` is one of `named` (compared as the files they name).
pub(super) fn among(p: &Path, named: &[PathBuf], home: Option<&Path>) -> bool {
    let p = normal(p, home);
    named.iter().any(|n| normal(n, home) == p)
}

/// The flag that names a recorded `key`.
pub(super) fn flag_of(key: &str) -> &'static str {
    match key {
        "identity_file" => "--identity-file",
        "known_hosts" => "--known-hosts",
        _ => "--ssh-config",
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::config::ssh_config::{Resolver, TIMEOUT};
    use crate::config::Inventory;

    /// A folder with an ssh config whose `Match exec` leaves a mark when
    /// ssh reads it, a home of its own, and an inventory naming the config.
    struct Case {
        dir: tempfile::TempDir,
    }

    impl Case {
        fn new() -> Case {
            let dir = tempfile::tempdir().expect("tempdir");
            std::fs::create_dir_all(dir.path().join("home/.ssh")).expect("mkdir");
            let mark = dir.path().join("ran");
            let cfg = format!("Match exec \"touch '{}'\"\n  User marked\n", mark.display());
            std::fs::write(dir.path().join("theirs.conf"), &cfg).expect("write");
            std::fs::write(dir.path().join("home/.ssh/config"), &cfg).expect("write");
            Case { dir }
        }
        fn path(&self, rel: &str) -> PathBuf {
            self.dir.path().join(rel)
        }
        fn resolver(&self) -> Resolver {
            Resolver {
                ssh: PathBuf::from("ssh"),
                timeout: TIMEOUT,
                home: Some(self.path("home")),
            }
        }
        fn parse(&self, text: &str, given: &GivenPaths) -> Result<Inventory, String> {
            Inventory::parse_with(
                &self.path("inv.toml"),
                text.to_string(),
                &self.resolver(),
                given,
            )
            .map_err(|e| e.to_string())
        }
        fn ran(&self) -> bool {
            let ran = self.path("ran").exists();
            let _ = std::fs::remove_file(self.path("ran"));
            ran
        }
    }

    const HOST: &str =
        "[[host]]\nname = \"h\"\nos = \"linux\"\naddress = \"db1\"\ndevices = [\"/dev/vdb\"]\n";

    fn flag(p: &Path) -> GivenPaths {
        GivenPaths {
            ssh_config: Some(p.to_path_buf()),
            recorded: None,
        }
    }

    #[test]
    fn an_ssh_config_is_read_only_when_the_user_named_it() {
        let c = Case::new();
        let inv = format!("ssh_config = \"theirs.conf\"\n{HOST}");
        // Not named: refused at its line, with the flag, and ssh never ran.
        let e = c.parse(&inv, &GivenPaths::default()).unwrap_err();
        let abs = c.path("theirs.conf").canonicalize().expect("canonical");
        assert!(
            e.contains(&format!(
                "inv.toml:1:14: error: ssh_config `theirs.conf` names {}, which is read only \
                 when you name it too: `ssh -G` runs its `Match exec` commands as you; give \
                 --ssh-config {}",
                abs.display(),
                abs.display()
            )),
            "{e}"
        );
        assert!(!c.ran(), "ssh -G read a config the user did not name");
        // Another file named: refused, both named.
        let e = c
            .parse(&inv, &flag(&c.path("home/.ssh/config")))
            .unwrap_err();
        assert!(e.contains("--ssh-config names another file"), "{e}");
        assert!(!c.ran());
        // Named (here through another spelling of the same file): read.
        let same = c.path("home/../theirs.conf");
        let got = c
            .parse(&inv, &flag(&same))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(got.hosts[0].user.as_str(), "marked");
        assert!(c.ran());
        // The user's own ~/.ssh/config, named by the inventory: no flag needed.
        let own = format!("ssh_config = \"~/.ssh/config\"\n{HOST}");
        let got = c
            .parse(&own, &GivenPaths::default())
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(got.hosts[0].user.as_str(), "marked");
        assert!(c.ran());
        // A flag for an inventory that names no ssh_config is a mistake said.
        let e = c.parse(HOST, &flag(&c.path("theirs.conf"))).unwrap_err();
        assert!(
            e.contains("was given, but the inventory names no ssh_config; add ssh_config ="),
            "{e}"
        );
    }

    #[test]
    fn a_bundle_s_recorded_paths_are_used_only_when_named() {
        let c = Case::new();
        let inv = format!(
            "ssh_config = \"theirs.conf\"\n[defaults]\nidentity_file = \"keys/id\"\n{HOST}\
             known_hosts = \"/etc/their_known_hosts\"\n"
        );
        let recorded = GivenPaths::default().recorded();
        let e = c.parse(&inv, &recorded).unwrap_err();
        let keys = c.path("keys/id");
        for want in [
            format!(
                "inv.toml:3:17: error: `identity_file` of [defaults] recorded in the bundle \
                 names {}; a path from a bundle is used only when you name it: give \
                 --identity-file {} if you trust that file",
                keys.display(),
                keys.display()
            ),
            "inv.toml:9:15: error: `known_hosts` of [[host]] `h` recorded in the bundle names \
             /etc/their_known_hosts; a path from a bundle is used only when you name it: give \
             --known-hosts /etc/their_known_hosts"
                .to_string(),
            "ssh_config `theirs.conf` recorded in the bundle names".to_string(),
        ] {
            assert!(e.contains(&want), "{want}\nnot in\n{e}");
        }
        assert!(!c.ran(), "ssh -G read a config the bundle recorded");
        // Named, each: used as recorded.
        let given = GivenPaths {
            ssh_config: Some(c.path("theirs.conf")),
            recorded: Some(RecordedPaths {
                identity_files: vec![keys.clone()],
                known_hosts: vec![PathBuf::from("/etc/their_known_hosts")],
                devices: vec!["h:/dev/vdb".into()],
                consents: Vec::new(),
            }),
        };
        let got = c.parse(&inv, &given).unwrap_or_else(|e| panic!("{e}"));
        let h = &got.hosts[0];
        assert_eq!(h.auth, crate::config::Auth::IdentityFile(keys));
        assert_eq!(h.known_hosts, PathBuf::from("/etc/their_known_hosts"));
        assert_eq!(h.user.as_str(), "marked");
        // The same text given by the user (-i) is the user's: its paths too.
        let mine = inv.replace("ssh_config = \"theirs.conf\"\n", "");
        assert!(c.parse(&mine, &GivenPaths::default()).is_ok());
    }
    #[test]
    fn a_bundle_s_devices_and_consents_are_used_only_when_named() {
        let c = Case::new();
        let inv = "[defaults]\nallow_script_commands = true\n\
                   [[host]]\nname = \"h\"\nos = \"linux\"\naddress = \"db1\"\n\
                   devices = [\"/dev/vdb\", \"/dev/vdc\"]\nconsent_foreign = [\"/dev/vdc\"]\n\
                   allow_postgres_settings = [\"archive_command\"]\n";
        let recorded = GivenPaths::default().recorded();
        let e = c.parse(inv, &recorded).unwrap_err();
        for want in [
            "inv.toml:2:25: error: `allow_script_commands = true` of [defaults] is recorded in the \
             bundle; a bundle's devices and consents are its host owner's, not yours: give \
             --consent *:allow_script_commands if this host's owner allows it (or run with your \
             own inventory, -i)",
            "inv.toml:7:12: error: `devices` of [[host]] `h` recorded in the bundle names /dev/vdb; \
             a bundle's devices and consents are its host owner's, not yours: give --device \
             h:/dev/vdb",
            "`devices` of [[host]] `h` recorded in the bundle names /dev/vdc",
            "give --consent h:consent_foreign=/dev/vdc",
            "give --consent h:allow_postgres_settings=archive_command",
        ] {
            assert!(e.contains(want), "{want}\nnot in\n{e}");
        }
        // Some named: only the others are refused.
        let some = GivenPaths {
            ssh_config: None,
            recorded: Some(RecordedPaths {
                devices: vec!["h:/dev/vdb".into(), "h:/dev/vdc".into()],
                consents: vec!["*:allow_script_commands".into()],
                ..RecordedPaths::default()
            }),
        };
        let e = c.parse(inv, &some).unwrap_err();
        assert!(!e.contains("--device"), "{e}");
        assert!(!e.contains("allow_script_commands"), "{e}");
        assert!(e.contains("h:consent_foreign=/dev/vdc"), "{e}");
        // Every one named: used as recorded.
        let all = GivenPaths {
            ssh_config: None,
            recorded: Some(RecordedPaths {
                devices: vec!["h:/dev/vdb".into(), "h:/dev/vdc".into()],
                consents: vec![
                    "*:allow_script_commands".into(),
                    "h:consent_foreign=/dev/vdc".into(),
                    "h:allow_postgres_settings=archive_command".into(),
                ],
                ..RecordedPaths::default()
            }),
        };
        let got = c.parse(inv, &all).unwrap_or_else(|e| panic!("{e}"));
        let h = &got.hosts[0];
        assert!(h.allow_script_commands);
        assert_eq!(h.devices.len(), 2);
        assert_eq!(h.consent_foreign.len(), 1);
        assert_eq!(h.allow_postgres_settings.len(), 1);
        // The same text given by the user (-i) is the user's own consent.
        assert!(c.parse(inv, &GivenPaths::default()).is_ok());
    }
}
