//! The typed contract with the remote scripts (`docs/remote-scripts.md`):
//! the verbs, the scripts that implement them, and one call of a verb as
//! `/bin/sh <dir>/<os>.sh VERB name=value ...`, every word quoted by the
//! remote layer.
use std::fmt;
use std::time::Duration;

use crate::config::{Host, Length, Os};
use crate::remote::RemoteCommand;
use crate::text::sha256_hex;
use crate::timeouts as t;

pub const COMMON_SH: &str = include_str!("../../../remote-scripts/common.sh");
pub const LINUX_SH: &str = include_str!("../../../remote-scripts/linux.sh");
pub const FREEBSD_SH: &str = include_str!("../../../remote-scripts/freebsd.sh");
pub const DRAGONFLY_SH: &str = include_str!("../../../remote-scripts/dragonfly.sh");

/// One verb of the remote scripts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verb {
    Facts,
    Preflight,
    PgCheckSettings,
    MakeFs,
    Mount,
    PgInit,
    PgStart,
    PgStop,
    Load,
    Run,
    Sizes,
    DropCaches,
    Teardown,
    Cat,
    VmCheck,
    VmStart,
    VmStop,
    VmReap,
}

impl Verb {
    pub const ALL: [Verb; 18] = [
        Verb::Facts,
        Verb::Preflight,
        Verb::PgCheckSettings,
        Verb::MakeFs,
        Verb::Mount,
        Verb::PgInit,
        Verb::PgStart,
        Verb::PgStop,
        Verb::Load,
        Verb::Run,
        Verb::Sizes,
        Verb::DropCaches,
        Verb::Teardown,
        Verb::Cat,
        Verb::VmCheck,
        Verb::VmStart,
        Verb::VmStop,
        Verb::VmReap,
    ];

    /// The verb's word on the script's command line.
    pub fn name(self) -> &'static str {
        match self {
            Verb::Facts => "facts",
            Verb::Preflight => "preflight",
            Verb::PgCheckSettings => "pg-check-settings",
            Verb::MakeFs => "make-fs",
            Verb::Mount => "mount",
            Verb::PgInit => "pg-init",
            Verb::PgStart => "pg-start",
            Verb::PgStop => "pg-stop",
            Verb::Load => "load",
            Verb::Run => "run",
            Verb::Sizes => "sizes",
            Verb::DropCaches => "drop-caches",
            Verb::Teardown => "teardown",
            Verb::Cat => "cat",
            Verb::VmCheck => "vm-check",
            Verb::VmStart => "vm-start",
            Verb::VmStop => "vm-stop",
            Verb::VmReap => "vm-reap",
        }
    }

    /// How long the verb may take before its process group is killed.
    /// `run` (and a SQL script's `load`) depend on the cell: [`run_timeout`].
    pub fn timeout(self) -> Duration {
        match self {
            Verb::Facts => t::FACTS,
            Verb::Preflight => t::PREFLIGHT,
            Verb::PgCheckSettings => t::PG_CHECK_SETTINGS,
            Verb::MakeFs => t::MAKE_FS,
            Verb::Mount => t::MOUNT,
            Verb::PgInit => t::PG_INIT,
            Verb::PgStart => t::PG_START,
            Verb::PgStop => t::PG_STOP,
            Verb::Load => t::LOAD,
            Verb::Run => t::RUN_UNTIMED,
            Verb::Sizes => t::SIZES,
            Verb::DropCaches => t::DROP_CACHES,
            Verb::Teardown => t::TEARDOWN,
            Verb::Cat => t::CAT,
            Verb::VmCheck => t::VM_CHECK,
            Verb::VmStart => t::VM_START,
            // ACPI's bound plus SIGTERM's and SIGKILL's waits.
            Verb::VmStop => t::VM_POWERDOWN + t::VM_KILL,
            // Several guests, each SIGTERM's then SIGKILL's wait.
            Verb::VmReap => t::VM_KILL * 3,
        }
    }

    /// Whether an interrupt (Ctrl-C) stops the verb: the verbs that leave a
    /// host clean (and collecting what already ran) always run to the end.
    pub fn cancellable(self) -> bool {
        !self.cleanup() && self != Verb::Cat
    }

    /// Cleanup: runs in an SSH session of its own, not in the host's
    /// persistent shell, so that it works when that shell is gone
    /// ([`crate::remote::ExecOptions::own_session`]).
    pub fn cleanup(self) -> bool {
        matches!(
            self,
            Verb::PgStop | Verb::Teardown | Verb::VmStop | Verb::VmReap
        )
    }

    /// The OSes whose script implements the verb.
    pub fn oses(self) -> &'static [Os] {
        // Every verb, or none: a script that lacks one cannot run a cell.
        &Os::ALL
    }

    pub fn from_name(name: &str) -> Option<Verb> {
        Verb::ALL.into_iter().find(|v| v.name() == name)
    }
}

impl fmt::Display for Verb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The limit of a cell's `run`: the workload's `run_timeout` when it names
/// one, else its duration plus slack, or hours when it is bounded by
/// transactions (or is a SQL script run to completion).
pub fn run_timeout(length: Length, configured: Option<u64>) -> Duration {
    if let Some(secs) = configured {
        return Duration::from_secs(secs);
    }
    match length {
        Length::Seconds(s) => Duration::from_secs(s).saturating_add(t::RUN_SLACK),
        Length::Transactions(_) | Length::ToCompletion { .. } => t::RUN_UNTIMED,
    }
}

/// Where a cell's sequence stopped: a verb, or the orchestrator's own work
/// around the verbs.  Its text is what a bundle records as the failed step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    Verb(Verb),
    /// Uploading a workload's script file.
    UploadWorkload,
    /// Fetching a run's output files.
    Collect,
}

impl Step {
    pub fn name(self) -> &'static str {
        match self {
            Step::Verb(v) => v.name(),
            Step::UploadWorkload => "upload-workload",
            Step::Collect => "collect",
        }
    }
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl serde::Serialize for Step {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl From<Verb> for Step {
    fn from(v: Verb) -> Self {
        Step::Verb(v)
    }
}

/// Every script of remote-scripts/, embedded by build.rs: (file name, content).
pub const SCRIPTS: &[(&str, &str)] = &include!(concat!(env!("OUT_DIR"), "/remote_scripts.rs"));

/// The scripts one OS needs, as (file name, content): common.sh and the
/// script its row names (`OsProfile::script`).  `None`: fsmatrix has no
/// such script, so its cells cannot run.
pub fn scripts_for(os: Os) -> Option<[(&'static str, &'static str); 2]> {
    let script = os.profile().script;
    let body = SCRIPTS.iter().find(|(n, _)| *n == script)?.1;
    Some([("common.sh", COMMON_SH), (script, body)])
}

/// Folder on the host the scripts are uploaded to: named after their
/// checksum, so two versions of fsmatrix never run each other's scripts.
pub fn scripts_dir(host: &Host) -> Option<String> {
    let files = scripts_for(host.os)?;
    let mut all = Vec::new();
    for (name, body) in files {
        all.extend_from_slice(name.as_bytes());
        all.push(0);
        all.extend_from_slice(body.as_bytes());
    }
    let sum = sha256_hex(&all);
    Some(format!(
        "{}/scripts-{}",
        host.work_dir.as_str().trim_end_matches('/'),
        &sum[..12]
    ))
}

/// One verb call with its `name=value` words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    pub verb: Verb,
    pub args: Vec<(&'static str, String)>,
}

impl Call {
    pub fn new(verb: Verb) -> Self {
        Call {
            verb,
            args: Vec::new(),
        }
    }

    pub fn arg(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.args.push((name, value.into()));
        self
    }

    pub fn args<I, S>(mut self, name: &'static str, values: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        for v in values {
            self.args.push((name, v.into()));
        }
        self
    }

    /// The command for `host`: `/bin/sh <dir>/<os>.sh VERB words…` (with
    /// `become` the SSH layer runs every command through sudo or doas).
    pub fn command(&self, host: &Host, dir: &str) -> RemoteCommand {
        let script = format!("{dir}/{}.sh", host.os.as_str());
        RemoteCommand::new("/bin/sh")
            .arg(script)
            .arg(self.verb.name())
            .args(self.args.iter().map(|(n, v)| format!("{n}={v}")))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    /// The verbs a script dispatches on: the arms `verb) verb_... ;;` of its
    /// last `case`.
    fn case_arms(script: &str) -> BTreeSet<String> {
        script
            .lines()
            .filter_map(|l| {
                let l = l.trim();
                let (word, rest) = l.split_once(')')?;
                rest.trim_start()
                    .starts_with("verb_")
                    .then(|| word.trim().to_string())
            })
            .collect()
    }

    fn names(verbs: impl Iterator<Item = Verb>) -> BTreeSet<String> {
        verbs.map(|v| v.name().to_string()).collect()
    }

    #[test]
    fn the_verb_set_is_what_every_script_dispatches() {
        // One dispatch (common.sh's fsmx_main) for every OS: its arms are
        // the verb set, and each OS script with verbs ends by calling it and
        // defines every verb_ function the arms name (itself or common.sh).
        let all = names(Verb::ALL.into_iter());
        assert_eq!(case_arms(COMMON_SH), all);
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../remote-scripts");
        let mut checked = 0;
        for os in Os::ALL {
            let path = dir.join(format!("{}.sh", os.as_str()));
            let expected = names(Verb::ALL.into_iter().filter(|v| v.oses().contains(&os)));
            match std::fs::read_to_string(&path) {
                Ok(text) => {
                    assert_eq!(expected, all, "{}: every verb, or none", path.display());
                    assert!(
                        text.trim_end().ends_with("fsmx_main ${1+\"$@\"}"),
                        "{} does not end with the common dispatch",
                        path.display()
                    );
                    for v in &all {
                        let f = format!("\nverb_{}() {{", v.replace('-', "_"));
                        assert!(
                            text.contains(&f) || COMMON_SH.contains(&f),
                            "{}: no verb_{}",
                            path.display(),
                            v.replace('-', "_")
                        );
                    }
                    checked += 1;
                }
                Err(_) => assert!(
                    expected.is_empty(),
                    "{} is missing but verbs claim it: {expected:?}",
                    path.display()
                ),
            }
        }
        assert!(checked >= 2);
        // Every script is common.sh or the one an OS row names, and every
        // row's script is there.
        for os in Os::ALL {
            assert!(
                scripts_for(os).is_some(),
                "{}: its row names no script",
                os.as_str()
            );
        }
        for (name, _) in SCRIPTS {
            assert!(
                *name == "common.sh" || Os::ALL.iter().any(|o| o.profile().script == *name),
                "remote-scripts/{name}: no OS row names it"
            );
        }
    }

    /// Linux-only commands, paths and GNU options that do not exist on
    /// FreeBSD or DragonFly (docs/standin-hosts.md lists them; the stand-in
    /// hosts lack them too), and FreeBSD's that DragonFly lacks (GEOM, ZFS,
    /// `du -A`, `diskinfo -v`, UFS2).  Comments are not code.
    #[test]
    fn the_bsd_scripts_use_no_command_their_os_lacks() {
        const LINUX_ONLY: &[&str] = &[
            "lsblk",
            "blkid",
            "wipefs",
            "findmnt",
            "runuser",
            "losetup",
            "flock",
            "sha256sum",
            "/proc/",
            "/sys/",
            "readlink -f",
            "stat -c",
            "--apparent-size",
            "pg_ctlcluster",
            "systemctl",
            "mkfs.",
            "blockdev",
            "udevadm",
            "/dev/disk/by-",
            "drop_caches",
            "date +%N",
            "pipefail",
            "echo -e",
            "sed -i",
            "du -b",
            "df -B",
            "$(nproc",
        ];
        const FREEBSD_ONLY: &[&str] = &[
            "geom ",
            "gpart ",
            "glabel ",
            "zpool ",
            "zfs get",
            "zfs mount",
            "zdb ",
            "freebsd-version",
            "kern.vm_guest",
            "du -A",
            "diskinfo -v",
            "-O 2",
            "sysctl -n hw.model hw.ncpu",
        ];
        let mut found = Vec::new();
        let scripts: [(&str, &str, &[&str]); 2] = [
            ("freebsd.sh", FREEBSD_SH, &[]),
            ("dragonfly.sh", DRAGONFLY_SH, FREEBSD_ONLY),
        ];
        for (name, script, also) in scripts {
            for (n, line) in script.lines().enumerate() {
                let code = line.trim_start();
                if code.starts_with('#') {
                    continue;
                }
                // A trailing comment is not code either (a `#` after a blank).
                let code = code.split(" #").next().unwrap_or(code);
                for w in LINUX_ONLY.iter().chain(also) {
                    // `kv drop_caches_method` is an output key, not /proc/sys/vm/drop_caches.
                    if *w == "drop_caches" && !code.contains("/vm/drop_caches") {
                        continue;
                    }
                    if code.contains(w) {
                        found.push(format!("{name}:{}: {w}: {line}", n + 1));
                    }
                }
            }
        }
        assert!(found.is_empty(), "{}", found.join("\n"));
    }

    #[test]
    fn the_verb_set_is_what_the_contract_documents() {
        let doc = include_str!("../../../docs/remote-scripts.md");
        let headings: BTreeSet<String> = doc
            .lines()
            .filter_map(|l| l.strip_prefix("### `"))
            .filter_map(|l| l.split([' ', '`']).next())
            .map(str::to_string)
            .collect();
        assert_eq!(headings, names(Verb::ALL.into_iter()));
    }

    #[test]
    fn names_round_trip_and_cleanup_verbs_are_not_cancellable() {
        for v in Verb::ALL {
            assert_eq!(Verb::from_name(v.name()), Some(v));
            assert!(v.timeout() >= Duration::from_secs(60), "{v}");
        }
        assert!(!Verb::Teardown.cancellable());
        assert!(!Verb::PgStop.cancellable());
        assert!(Verb::MakeFs.cancellable());
        assert_eq!(
            run_timeout(Length::Seconds(10), None),
            Duration::from_secs(10) + t::RUN_SLACK
        );
        assert_eq!(
            run_timeout(Length::Seconds(10), Some(25)),
            Duration::from_secs(25)
        );
        assert_eq!(run_timeout(Length::Transactions(5), None), t::RUN_UNTIMED);
    }
}
