//! The local lab: throwaway hosts on this machine.
//!
//! The work is done by `lab/lab.sh` (bash: namespaces, sshd, zfs-fuse, loop devices are
//! shell-shaped work), embedded in the binary, written to a temporary file and run with
//! bash; its stdout and stderr pass through and its exit code is kept.  What the script
//! builds, and the state folder it leaves, are described at its top and in the README.
use std::path::{Path, PathBuf};
use std::process::Command;

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
        } => {
            if *hosts == 0 || *hosts > MAX_HOSTS {
                return Err(LabError::Hosts(*hosts));
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
    let status = Command::new("bash")
        .arg(file.path())
        .args(args)
        .status()
        .map_err(LabError::Bash)?;
    Ok(status.code().map_or(1, |c| u8::try_from(c).unwrap_or(1)))
}

/// Run `action`: the script's exit code (a signal counts as 1).
pub fn run(action: &LabAction) -> Result<u8, LabError> {
    run_script(&script_args(action)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn up(hosts: u32, disk: &str, dir: &str) -> LabAction {
        LabAction::Up {
            dir: PathBuf::from(dir),
            hosts,
            disk_size: disk.into(),
            install: true,
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
        assert_eq!(args, ["up", "/var/lib/fsmatrix/lab", "3", "4G", "1"]);
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
        for verb in ["cmd_up", "cmd_down", "cmd_status"] {
            assert!(LAB_SH.contains(verb), "{verb}");
        }
    }
}
