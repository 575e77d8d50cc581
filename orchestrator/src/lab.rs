//! The local lab: throwaway hosts on this machine.
//!
//! The work is done by `lab/lab.sh` (bash: namespaces, sshd, zfs-fuse, loop devices are
//! shell-shaped work), embedded in the binary, written to a temporary file and run with
//! bash; its stdout and stderr pass through and its exit code is kept.  What the script
//! builds, and the state folder it leaves, are described at its top and in docs/lab.md.
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::config::OsProfile;

/// Default state folder: keys, known_hosts, inventory.toml, disk images.
pub const DEFAULT_DIR: &str = "/var/lib/fsmatrix/lab";

/// The lab script, as shipped in the binary.
pub const LAB_SH: &str = include_str!("lab/lab.sh");

/// Most hosts `lab up` builds (addresses 10.203.0.11..=10.203.0.26).
pub const MAX_HOSTS: u32 = 16;

/// What to do with the lab.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LabAction {
    /// Build `hosts` hosts with a sparse disk of `disk_size` each.
    Up {
        dir: PathBuf,
        hosts: u32,
        disk_size: String,
        /// Install missing Debian packages instead of only naming them.
        install: bool,
        /// Host i's OS is the i-th (the last repeats): `linux`, or a
        /// stand-in ([`standin_oses`]).
        oses: Vec<String>,
        /// Host 1 is a bastion; the others sit on an inner network
        /// (10.203.1.0/24) reachable only through it (`proxy_jump`).
        bastion: bool,
        /// Hosts 1..=guests each get a guest (`labI-vm`, `guest_of = "labI"`):
        /// a Debian 12 image the orchestrator boots under qemu (TCG) with the
        /// host's loop device as its disk (docs/lab.md).
        guests: u32,
    },
    Down {
        dir: PathBuf,
    },
    Status {
        dir: PathBuf,
    },
}

/// Errors of the lab command itself (the script reports its own).
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    #[error("--hosts must be from 1 to {MAX_HOSTS}, not {0}")]
    Hosts(u32),
    #[error("--disk-size must be a size like 4G or 2048M (digits, then K, M, G or T), not {0:?}")]
    DiskSize(String),
    #[error("the lab's state dir must be an absolute UTF-8 path, not {0:?}")]
    Dir(String),
    #[error("write the lab script to a temporary file: {0}")]
    Script(std::io::Error),
    #[error("run bash (is it installed?): {0}")]
    Bash(std::io::Error),
    #[error("--os {0:?}: valid: linux, {valid} (comma-separated, one per host, the last repeats)", valid = standin_oses().join(", "))]
    Os(String),
    #[error("write the stand-in files to a temporary folder: {0}")]
    Standin(std::io::Error),
    #[error("--guests must be from 0 to --hosts ({hosts}), not {guests}")]
    Guests { guests: u32, hosts: u32 },
    #[error("--guests {guests}: lab{host} is a {os} stand-in; only Linux lab hosts can run a guest (give hosts 1..={guests} the OS linux in --os)")]
    GuestOs { guests: u32, host: u32, os: String },
    #[error("--guests with --bastion is not supported: a guest of a host behind the bastion would be two jumps away, which the lab does not build or test; bring the lab up without one of them")]
    GuestBastion,
}

/// The OS of lab host `i` (1-based) from `--os`: the i-th, the last repeats.
fn os_of(oses: &[String], i: u32) -> &str {
    let idx = usize::try_from(i.saturating_sub(1)).unwrap_or(usize::MAX);
    oses.get(idx)
        .or(oses.last())
        .map_or("linux", String::as_str)
}

/// The OSes a lab host can stand in for (docs/standin-hosts.md): the OS
/// rows marked `standin`.
pub fn standin_oses() -> Vec<&'static str> {
    OsProfile::standins().map(|p| p.name).collect()
}

/// The stand-in files, as shipped in the binary: `setup.sh` (builds a
/// stand-in's BSD view inside its mount namespace) and the emulated BSD
/// commands, by OS, listed from `src/lab/standin/` by `build.rs`.
pub const STANDIN_FILES: &[(&str, &str)] = &include!(concat!(env!("OUT_DIR"), "/standin_files.rs"));

/// `--os` values, checked: each `linux` or a stand-in OS.
fn oses_arg(oses: &[String]) -> Result<String, LabError> {
    if oses.is_empty() {
        return Err(LabError::Os(String::new()));
    }
    for o in oses {
        if o != "linux" && !standin_oses().contains(&o.as_str()) {
            return Err(LabError::Os(o.clone()));
        }
    }
    Ok(oses.join(","))
}

/// Checks a `--disk-size` value: what `truncate -s` takes, without fractions or suffix
/// surprises (`4G`, `2048M`, `1073741824`).
pub fn valid_disk_size(s: &str) -> bool {
    let digits = s.strip_suffix(['K', 'M', 'G', 'T']).unwrap_or(s);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) && !digits.starts_with('0')
}

fn dir_arg(dir: &Path) -> Result<&str, LabError> {
    match dir.to_str() {
        Some(s) if dir.is_absolute() => Ok(s),
        _ => Err(LabError::Dir(dir.display().to_string())),
    }
}

/// The arguments `lab.sh` is called with for an action.
pub fn script_args(action: &LabAction) -> Result<Vec<String>, LabError> {
    Ok(match action {
        LabAction::Up {
            dir,
            hosts,
            disk_size,
            install,
            oses,
            bastion,
            guests,
        } => {
            if *hosts == 0 || *hosts > MAX_HOSTS {
                return Err(LabError::Hosts(*hosts));
            }
            if *guests > *hosts {
                return Err(LabError::Guests {
                    guests: *guests,
                    hosts: *hosts,
                });
            }
            if *guests > 0 && *bastion {
                return Err(LabError::GuestBastion);
            }
            for host in 1..=*guests {
                let os = os_of(oses, host);
                if os != "linux" {
                    return Err(LabError::GuestOs {
                        guests: *guests,
                        host,
                        os: os.to_string(),
                    });
                }
            }
            if !valid_disk_size(disk_size) {
                return Err(LabError::DiskSize(disk_size.clone()));
            }
            vec![
                "up".into(),
                dir_arg(dir)?.into(),
                hosts.to_string(),
                disk_size.clone(),
                if *install { "1" } else { "0" }.into(),
                oses_arg(oses)?,
                if *bastion { "1" } else { "0" }.into(),
                guests.to_string(),
            ]
        }
        LabAction::Down { dir } => vec!["down".into(), dir_arg(dir)?.into()],
        LabAction::Status { dir } => vec!["status".into(), dir_arg(dir)?.into()],
    })
}

/// Runs the lab script with `args`; returns its exit code (a signal counts as 1).
pub fn run_script(args: &[String]) -> Result<u8, LabError> {
    use std::io::Write;
    let mut file = tempfile::Builder::new()
        .prefix("fsmatrix-lab-")
        .suffix(".sh")
        .tempfile()
        .map_err(LabError::Script)?;
    file.write_all(LAB_SH.as_bytes())
        .and_then(|()| file.flush())
        .map_err(LabError::Script)?;
    let standin = write_standin_files().map_err(LabError::Standin)?;
    let status = Command::new("bash")
        .arg(file.path())
        .args(args)
        .env("FSMATRIX_LAB_STANDIN", standin.path())
        .status()
        .map_err(LabError::Bash)?;
    Ok(status.code().map_or(1, |c| u8::try_from(c).unwrap_or(1)))
}

/// [`STANDIN_FILES`] in a fresh temporary folder (removed when dropped);
/// the emulators executable.
fn write_standin_files() -> std::io::Result<tempfile::TempDir> {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::Builder::new()
        .prefix("fsmatrix-standin-")
        .tempdir()?;
    for (name, body) in STANDIN_FILES {
        let path = dir.path().join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&path, body)?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
    }
    Ok(dir)
}

/// Run `action`: the script's exit code (a signal counts as 1).
pub fn run(action: &LabAction) -> Result<u8, LabError> {
    run_script(&script_args(action)?)
}

/// The conformance table of docs/standin-hosts.md, held to the emulators.
#[cfg(test)]
mod conformance;

#[cfg(test)]
mod tests {
    use super::*;

    fn up(hosts: u32, disk: &str, dir: &str) -> LabAction {
        LabAction::Up {
            dir: PathBuf::from(dir),
            hosts,
            disk_size: disk.into(),
            install: true,
            oses: vec!["linux".into()],
            bastion: false,
            guests: 0,
        }
    }

    #[test]
    fn disk_sizes() {
        for ok in ["4G", "2048M", "1073741824", "1T", "512K"] {
            assert!(valid_disk_size(ok), "{ok}");
        }
        for bad in [
            "",
            "G",
            "0G",
            "4g",
            "4GB",
            "1.5G",
            "-4G",
            "4G; rm -rf /",
            "$(id)",
        ] {
            assert!(!valid_disk_size(bad), "{bad}");
        }
    }

    #[test]
    fn up_arguments() {
        let args = script_args(&up(3, "4G", "/var/lib/fsmatrix/lab")).expect("valid");
        assert_eq!(
            args,
            [
                "up",
                "/var/lib/fsmatrix/lab",
                "3",
                "4G",
                "1",
                "linux",
                "0",
                "0"
            ]
        );
        let mut mixed = up(3, "4G", "/x");
        if let LabAction::Up { oses, .. } = &mut mixed {
            *oses = vec!["linux".into(), "freebsd".into()];
        }
        assert_eq!(script_args(&mixed).expect("valid")[5], "linux,freebsd");
        assert_eq!(script_args(&up(3, "4G", "/x")).expect("valid")[6], "0");
        let mut b = up(3, "4G", "/x");
        if let LabAction::Up { bastion, .. } = &mut b {
            *bastion = true;
        }
        assert_eq!(script_args(&b).expect("valid")[6], "1");
    }

    fn with_guests(mut a: LabAction, n: u32, os: &[&str], with_bastion: bool) -> LabAction {
        if let LabAction::Up {
            guests,
            oses,
            bastion,
            ..
        } = &mut a
        {
            *guests = n;
            *oses = os.iter().map(|s| s.to_string()).collect();
            *bastion = with_bastion;
        }
        a
    }

    #[test]
    fn guests_are_passed_last_and_checked() {
        let a = with_guests(up(3, "4G", "/x"), 2, &["linux"], false);
        assert_eq!(script_args(&a).expect("valid")[7], "2");
        // Every host may have one; the last --os repeats.
        let all = with_guests(up(3, "4G", "/x"), 3, &["linux"], false);
        assert_eq!(script_args(&all).expect("valid")[7], "3");
        let mixed = with_guests(up(3, "4G", "/x"), 2, &["linux", "linux", "freebsd"], false);
        assert_eq!(script_args(&mixed).expect("valid")[7], "2");
        // More guests than hosts.
        let e = script_args(&with_guests(up(2, "4G", "/x"), 3, &["linux"], false))
            .expect_err("refused");
        assert!(
            matches!(
                e,
                LabError::Guests {
                    guests: 3,
                    hosts: 2
                }
            ),
            "{e}"
        );
        assert!(e.to_string().contains("from 0 to --hosts (2)"), "{e}");
        // A stand-in cannot host one: the message names the host and its OS.
        let e = script_args(&with_guests(
            up(3, "4G", "/x"),
            2,
            &["linux", "dragonfly"],
            false,
        ))
        .expect_err("refused");
        assert!(
            e.to_string().contains("lab2 is a dragonfly stand-in"),
            "{e}"
        );
        // With a bastion: refused, saying why.
        let e =
            script_args(&with_guests(up(3, "4G", "/x"), 1, &["linux"], true)).expect_err("refused");
        assert!(e.to_string().contains("--bastion is not supported"), "{e}");
        // No guests with a bastion is as before.
        let b = with_guests(up(3, "4G", "/x"), 0, &["linux"], true);
        assert_eq!(script_args(&b).expect("valid")[6..], ["1", "0"]);
    }

    #[test]
    fn unknown_oses_are_refused_with_the_valid_ones() {
        for bad in [
            vec![],
            vec!["linux".to_string(), "windows".into()],
            vec!["FreeBSD".into()],
            vec!["linux;id".into()],
        ] {
            let mut a = up(3, "4G", "/x");
            if let LabAction::Up { oses, .. } = &mut a {
                *oses = bad.clone();
            }
            let e = script_args(&a).expect_err("refused");
            assert!(
                e.to_string().contains("valid: linux, freebsd"),
                "{bad:?}: {e}"
            );
        }
    }

    #[test]
    fn every_emulator_is_posix_sh_and_setup_is_bash() {
        for (name, body) in STANDIN_FILES {
            let first = body.lines().next().unwrap_or_default();
            if *name == "setup.sh" {
                assert_eq!(first, "#!/bin/bash", "{name}");
            } else {
                assert_eq!(first, "#!/bin/sh", "{name}");
            }
        }
    }

    #[test]
    fn every_standin_os_has_its_folder_and_every_emulator_its_place() {
        // build.rs ships every file of src/lab/standin/<os>/ (no dot in its
        // name); setup.sh must know each one's BSD folder (emu_dir) and
        // accept each stand-in OS, and each folder must be a stand-in row.
        let setup = STANDIN_FILES
            .iter()
            .find(|(n, _)| *n == "setup.sh")
            .map(|(_, b)| *b)
            .expect("setup.sh is shipped");
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lab/standin");
        let mut folders: Vec<String> = std::fs::read_dir(&dir)
            .expect("standin folder")
            .map(|e| e.expect("entry").path())
            .filter(|p| p.is_dir())
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        folders.sort();
        let mut rows: Vec<String> = standin_oses().iter().map(|s| s.to_string()).collect();
        rows.sort();
        assert_eq!(folders, rows, "stand-in folders vs OS rows marked standin");
        let accepted = format!("\n{})", standin_oses().join("|"));
        assert!(
            setup.contains(&accepted),
            "setup.sh does not accept {accepted:?}"
        );
        let mut missing = Vec::new();
        for (name, _) in STANDIN_FILES.iter().filter(|(n, _)| n.contains('/')) {
            let (os, emu) = name.split_once('/').expect("os/name");
            assert!(rows.iter().any(|r| r == os), "{name}");
            let arm = format!("{os}:{emu}");
            let known = setup.lines().any(|l| {
                l.trim_start().starts_with(&format!("{os}:"))
                    && l.split(')')
                        .next()
                        .is_some_and(|pats| pats.split('|').any(|p| p.trim() == arm))
            });
            if !known {
                missing.push(arm);
            }
        }
        assert!(
            missing.is_empty(),
            "setup.sh emu_dir has no place for {missing:?}"
        );
        let shipped = STANDIN_FILES
            .iter()
            .filter(|(n, _)| n.contains('/'))
            .count();
        let on_disk: usize = folders
            .iter()
            .map(|f| {
                std::fs::read_dir(dir.join(f))
                    .expect("folder")
                    .filter(|e| {
                        !e.as_ref()
                            .expect("entry")
                            .file_name()
                            .to_string_lossy()
                            .contains('.')
                    })
                    .count()
            })
            .sum();
        assert_eq!(shipped, on_disk, "every emulator in the folders is shipped");
    }

    #[test]
    fn lab_sh_knows_every_standin_os() {
        // lab.sh's per-OS spots, held to the rows marked standin: the BSD
        // disk name, the --os check and its message, the csh-family root.
        let oses = standin_oses();
        for os in &oses {
            assert!(
                LAB_SH.contains(&format!("\n\t{os}) printf '")),
                "lab.sh bsd_disk: no arm for {os}"
            );
        }
        for spot in [
            format!("\t\t{})\n", oses.join(" | ")),
            format!("valid: linux, {}\"", oses.join(", ")),
            format!(
                "\t{}) [ -x /usr/bin/tcsh ]",
                oses.iter()
                    .map(|o| format!("*,{o},*"))
                    .collect::<Vec<_>>()
                    .join(" | ")
            ),
            format!(
                "if {}; then",
                oses.iter()
                    .map(|o| format!("[ \"$os\" = {o} ]"))
                    .collect::<Vec<_>>()
                    .join(" || ")
            ),
        ] {
            assert!(LAB_SH.contains(&spot), "lab.sh lacks {spot:?}");
        }
    }

    #[test]
    fn bad_up_arguments() {
        assert!(matches!(
            script_args(&up(0, "4G", "/x")),
            Err(LabError::Hosts(0))
        ));
        assert!(matches!(
            script_args(&up(17, "4G", "/x")),
            Err(LabError::Hosts(17))
        ));
        assert!(matches!(
            script_args(&up(3, "4 G", "/x")),
            Err(LabError::DiskSize(_))
        ));
        assert!(matches!(
            script_args(&up(3, "4G", "relative/dir")),
            Err(LabError::Dir(_))
        ));
    }

    #[test]
    fn script_is_bash_with_every_verb() {
        assert!(LAB_SH.starts_with("#!/bin/bash\n"));
        for verb in ["cmd_up", "cmd_down", "cmd_status", "INNER_BRIDGE"] {
            assert!(LAB_SH.contains(verb), "{verb}");
        }
    }
}
