//! What the verbs print (`key=value` lines), and the host's facts parsed
//! once into a struct.  The bundle keeps the raw map (`facts.json`), so that
//! keys a newer script adds are never lost.
use std::collections::BTreeMap;

use crate::config::fs::FsSpec;
use crate::config::FsType;

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

    /// The lines again, as a verb printed them (for the bundle).
    pub fn to_text(&self) -> String {
        self.0.iter().map(|(k, v)| format!("{k}={v}\n")).collect()
    }
}

/// One device the inventory lists, as `facts` saw it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeviceFacts {
    pub path: String,
    pub present: bool,
    pub size_bytes: Option<u64>,
    /// What tells this disk from another put at its path later (size,
    /// serial, WWID, a loop device's backing file and inode, …): passed to
    /// every make-fs, which refuses a disk whose identity differs.
    pub ident: Option<String>,
}

/// What `facts` says of a host, parsed once (`docs/remote-scripts.md`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostFacts {
    pub os: Option<String>,
    pub kernel: Option<String>,
    pub cpu_count: Option<u64>,
    pub mem_bytes: Option<u64>,
    pub uid: Option<String>,
    pub user: Option<String>,
    pub devices: Vec<DeviceFacts>,
    /// The filesystem tools installed (`mkfs.ext4`, `zpool`, …).
    pub tools: Vec<String>,
    pub postgres_version: Option<String>,
    pub pgbench_version: Option<String>,
    /// `Some(true)`: a ZFS is installed and answers (module or zfs-fuse).
    pub zfs_running: Option<bool>,
    /// The hypervisor the host runs under as the OS sees it (`none`, `kvm`,
    /// `qemu`, `vmware`, …: FreeBSD `kern.vm_guest`, Linux
    /// `systemd-detect-virt` or the DMI vendor); `None` when not reported.
    pub vm_guest: Option<String>,
    /// A lab stand-in host: the OS it is dressed as (docs/standin-hosts.md).
    pub standin: Option<String>,
    /// The login shell of `pg_user` (`None`: not reported, or no such
    /// account).
    pub pg_user_shell: Option<String>,
}

impl HostFacts {
    pub fn parse(kv: &Kv) -> HostFacts {
        let s = |k: &str| kv.get(k).map(str::to_string);
        let mut devices = Vec::new();
        while let Some(path) = kv.get(&format!("device.{}.path", devices.len())) {
            let i = devices.len();
            devices.push(DeviceFacts {
                path: path.to_string(),
                present: kv.get(&format!("device.{i}.present")) == Some("yes"),
                size_bytes: kv.u64(&format!("device.{i}.size_bytes")),
                ident: kv
                    .get(&format!("device.{i}.ident"))
                    .filter(|v| !v.is_empty())
                    .map(str::to_string),
            });
        }
        HostFacts {
            os: s("os"),
            vm_guest: s("vm_guest").filter(|v| !v.is_empty()),
            standin: s("standin").filter(|v| !v.is_empty()),
            kernel: s("kernel"),
            cpu_count: kv.u64("cpu_count"),
            mem_bytes: kv.u64("mem_bytes"),
            uid: s("uid"),
            user: s("user"),
            devices,
            tools: kv
                .get("tools")
                .unwrap_or_default()
                .split_whitespace()
                .map(str::to_string)
                .collect(),
            postgres_version: s("postgres_version"),
            pgbench_version: s("pgbench_version"),
            zfs_running: kv.get("zfs_running").map(|v| v == "yes"),
            pg_user_shell: s("pg_user_shell"),
        }
    }

    /// The identity `facts` read of the device at `path`.
    pub fn ident_of(&self, path: &str) -> Option<&str> {
        self.devices
            .iter()
            .find(|d| d.path == path)
            .and_then(|d| d.ident.as_deref())
    }

    pub fn has_tool(&self, tool: &str) -> bool {
        self.tools.iter().any(|t| t == tool)
    }

    /// `15.4` out of `postgres (PostgreSQL) 15.4` ([`crate::model::postgres_release`]).
    pub fn postgres_release(&self) -> Option<&str> {
        self.postgres_version
            .as_deref()
            .and_then(crate::model::postgres_release)
    }
}

/// The tool a filesystem type needs, named as `facts` lists it (its
/// [`FsSpec`] row's `tool`).
pub fn tool_for(fs: FsType) -> &'static str {
    FsSpec::of(fs).tool
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
        assert_eq!(Kv::parse("a=1\nb=x y\n").to_text(), "a=1\nb=x y\n");
    }

    #[test]
    fn facts_parse_devices_tools_and_versions() {
        let f = HostFacts::parse(&Kv::parse(
            "os=linux\nkernel=6.1.0\ncpu_count=2\nmem_bytes=25769803776\nuid=0\nuser=root\n\
             device.0.path=/dev/loop0\ndevice.0.present=yes\ndevice.0.size_bytes=4294967296\n\
             device.0.ident=size=4294967296;loop=/var/tmp/a b.img;inode=65024:788225;offset=0\n\
             device.1.path=/dev/loop9\ndevice.1.present=no\n\
             postgres_version=postgres (PostgreSQL) 15.4\ntools=mkfs.ext4 zpool\nzfs_running=no\n",
        ));
        assert_eq!(f.os.as_deref(), Some("linux"));
        assert_eq!(f.devices.len(), 2);
        assert_eq!(f.devices[0].size_bytes, Some(4 << 30));
        assert!(!f.devices[1].present);
        assert_eq!(
            f.ident_of("/dev/loop0"),
            Some("size=4294967296;loop=/var/tmp/a b.img;inode=65024:788225;offset=0")
        );
        assert_eq!(f.ident_of("/dev/loop9"), None);
        assert!(f.has_tool("zpool") && !f.has_tool("mkfs.xfs"));
        assert_eq!(f.postgres_release(), Some("15.4"));
        assert_eq!(f.pgbench_version, None);
        assert_eq!(f.zfs_running, Some(false));
        assert_eq!(HostFacts::parse(&Kv::default()).zfs_running, None);
    }
}
