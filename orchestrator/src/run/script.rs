//! Calls into the remote scripts (docs/remote-scripts.md is the contract):
//! `/bin/sh <dir>/<os>.sh VERB name=value ...`, every word quoted by the
//! remote layer.  The same builder serves the run and `plan --commands`, so
//! what the plan shows is what a run sends.
use std::collections::BTreeMap;

use crate::config::{Host, Os};
use crate::remote::RemoteCommand;
use crate::text::sha256_hex;

pub const COMMON_SH: &str = include_str!("../../../remote-scripts/common.sh");
pub const LINUX_SH: &str = include_str!("../../../remote-scripts/linux.sh");

/// The scripts one OS needs, as (file name, content).  `None`: fsmatrix has
/// no script for that OS yet, so its cells cannot run.
pub fn scripts_for(os: Os) -> Option<[(&'static str, &'static str); 2]> {
    match os {
        Os::Linux => Some([("common.sh", COMMON_SH), ("linux.sh", LINUX_SH)]),
        Os::Freebsd | Os::Dragonfly => None,
    }
}

/// Folder on the host the scripts are uploaded to: named after their
/// checksum, so two versions of fsmatrix never run each other's scripts.
pub fn scripts_dir(host: &Host, os: Os) -> Option<String> {
    let files = scripts_for(os)?;
    let mut all = Vec::new();
    for (name, body) in files {
        all.extend_from_slice(name.as_bytes());
        all.push(0);
        all.extend_from_slice(body.as_bytes());
    }
    let sum = sha256_hex(&all);
    Some(format!("{}/scripts-{}", host.work_dir.as_str(), &sum[..12]))
}

/// One verb call with its `name=value` words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    pub verb: &'static str,
    pub args: Vec<(&'static str, String)>,
}

impl Call {
    pub fn new(verb: &'static str) -> Self {
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
    /// `become = "sudo"` the SSH layer runs every command through sudo).
    pub fn command(&self, host: &Host, dir: &str) -> RemoteCommand {
        let script = format!("{dir}/{}.sh", os_name(host.os));
        RemoteCommand::new("/bin/sh")
            .arg(script)
            .arg(self.verb)
            .args(self.args.iter().map(|(n, v)| format!("{n}={v}")))
    }
}

pub fn os_name(os: Os) -> &'static str {
    match os {
        Os::Linux => "linux",
        Os::Freebsd => "freebsd",
        Os::Dragonfly => "dragonfly",
    }
}

/// The `key=value` lines a verb prints on stdout.  A key may repeat
/// (`zfs.*` lines are each their own key); the last one wins in [`Kv::get`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Kv(pub Vec<(String, String)>);

impl Kv {
    pub fn parse(stdout: &str) -> Kv {
        Kv(stdout
            .lines()
            .filter_map(|l| l.split_once('='))
            .filter(|(k, _)| {
                !k.is_empty()
                    && k.bytes().all(|b| {
                        b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'.'
                    })
            })
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect())
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    pub fn u64(&self, key: &str) -> Option<u64> {
        self.get(key).and_then(|v| v.trim().parse().ok())
    }

    pub fn f64(&self, key: &str) -> Option<f64> {
        self.get(key)
            .and_then(|v| v.trim().trim_end_matches('x').parse().ok())
    }

    /// Every key under `prefix.` with the prefix removed.
    pub fn with_prefix(&self, prefix: &str) -> BTreeMap<String, String> {
        let p = format!("{prefix}.");
        self.0
            .iter()
            .filter_map(|(k, v)| k.strip_prefix(&p).map(|k| (k.to_string(), v.clone())))
            .collect()
    }

    pub fn to_map(&self) -> BTreeMap<String, String> {
        self.0.iter().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kv_keeps_values_with_spaces_and_equals_and_skips_noise() {
        let kv = Kv::parse(
            "a=1\nkernel_version=#1 SMP x=y\nnot a pair\nBad=1\nzfs.compression=on\nzfs.atime=off\na=2\n",
        );
        assert_eq!(kv.get("a"), Some("2"));
        assert_eq!(kv.get("kernel_version"), Some("#1 SMP x=y"));
        assert_eq!(kv.get("Bad"), None);
        assert_eq!(
            kv.with_prefix("zfs").into_iter().collect::<Vec<_>>(),
            vec![
                ("atime".to_string(), "off".to_string()),
                ("compression".to_string(), "on".to_string())
            ]
        );
        assert_eq!(Kv::parse("r=1.83x").f64("r"), Some(1.83));
    }
}
