//! The operating systems fsmatrix runs on: one row per OS.  Everything that
//! lists OSes (validation messages, facts, the plan's drops, the lab) reads
//! them from here.
use serde::{Deserialize, Serialize};

use super::inventory::vm::Accel;
use super::FsType;

/// Operating system of a host; checked against `uname -s` by `check`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Os {
    Linux,
    Freebsd,
    Dragonfly,
}

impl Os {
    pub const ALL: [Os; 3] = [Os::Linux, Os::Freebsd, Os::Dragonfly];
    pub fn as_str(self) -> &'static str {
        self.profile().name
    }
    pub fn parse(s: &str) -> Option<Os> {
        Os::ALL.into_iter().find(|o| o.as_str() == s)
    }
    /// Every OS's name, for messages that say what is valid: `linux,
    /// freebsd, dragonfly` (`last` joins the last two: `", "` or `" and "`).
    pub fn names(last: &str) -> String {
        let names: Vec<&str> = Os::ALL.iter().map(|o| o.as_str()).collect();
        match names.split_last() {
            Some((tail, head)) if !head.is_empty() => format!("{}{last}{tail}", head.join(", ")),
            _ => names.join(", "),
        }
    }
    /// This OS's row of [`PROFILES`].
    pub fn profile(self) -> &'static OsProfile {
        PROFILES
            .iter()
            .find(|p| p.os == self)
            .expect("every Os has a row in PROFILES")
    }
    /// Where PostgreSQL's binaries are looked for when `pg_bin` is not given
    /// (the row's `pg_bin_hint`).
    pub fn pg_bin_hint(self) -> &'static str {
        self.profile().pg_bin_hint
    }
}

/// What takes a host's locks (`run/lock.rs`): Linux has util-linux
/// flock(1); the BSDs have no flock(1) but lockf(1) (usr.bin/lockf).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockHolder {
    Flock,
    Lockf,
}

/// One OS: everything fsmatrix knows of it outside its remote script.
/// Adding an OS is a row here, its script in `remote-scripts/` (with the
/// hooks `common.sh` lists in `FSMX_HOOKS`), and a stand-in folder under
/// `orchestrator/src/lab/standin/<os>/` when the lab dresses a host as it.
#[derive(Debug)]
pub struct OsProfile {
    pub os: Os,
    /// The name in inventories, matrices, `uname -s` (lowercase) and facts.
    pub name: &'static str,
    /// Its remote script, in `remote-scripts/`, uploaded beside `common.sh`.
    pub script: &'static str,
    /// Where PostgreSQL's binaries are looked for when `pg_bin` is not
    /// given: Debian/Ubuntu install per major version (`*` = newest found),
    /// the BSD ports/dports into /usr/local/bin.
    pub pg_bin_hint: &'static str,
    /// Where the host's locks live.  Linux: `/run/lock` (tmpfs, cleared at
    /// boot: a lock cannot outlive the machine's uptime); the BSDs: `/var/run`.
    pub lock_dir: &'static str,
    pub lock_holder: LockHolder,
    /// The filesystems it can build and mount, in the order messages list them.
    pub filesystems: &'static [FsType],
    /// Tools the script's `facts` reports besides each filesystem's
    /// making tool ([`super::fs::FsSpec::tool`]).
    pub extra_tools: &'static [&'static str],
    /// `ansible_os_family` / `ansible_system` / `ansible_distribution`
    /// values (lowercase) that mean this OS.
    pub ansible_names: &'static [&'static str],
    /// Ansible values that mean this OS when they start with one of these.
    pub ansible_prefixes: &'static [&'static str],
    /// The lab can dress a Linux host as this OS: its emulators are in
    /// `orchestrator/src/lab/standin/<name>/` (docs/standin-hosts.md).
    pub standin: bool,
    /// The longest Unix socket path (bytes, without the NUL) PostgreSQL can
    /// listen on: `sizeof(sun_path) - 1` (PostgreSQL's pqcomm.c refuses a
    /// path of `UNIXSOCK_PATH_BUFLEN` = `sizeof(sun_path)` bytes or more).
    /// Linux: `UNIX_PATH_MAX 108` (include/uapi/linux/un.h); FreeBSD and
    /// DragonFly: `char sun_path[104]` (sys/sys/un.h of both trees).
    pub socket_path_max: usize,
    /// Whether a `zpool`/`zfs` call loads the ZFS kernel module by itself,
    /// so `zfs_running = no` in the facts (module not loaded) does not stop
    /// a ZFS cell: FreeBSD's libzfs_init -> libzfs_load_module does
    /// `if (modfind("zfs") < 0) kldload(ZFS_KMOD)` (openzfs zfs-2.2.6
    /// lib/libzfs/os/freebsd/libzfs_compat.c:232-246).  Linux's facts say
    /// `zfs_running` from `zpool list` (a loaded module or a zfs-fuse
    /// daemon that answers).
    pub zfs_loads_on_demand: bool,
    /// How to give `pg_user` a Bourne shell, `{user}` standing for it, when
    /// the PostgreSQL verbs run its login shell (the BSDs: `su USER -c
    /// LINE` runs it, remote-scripts/common.sh `as_pg_user`); `None` where
    /// they do not (Linux: `runuser -u USER -- CMD` runs CMD itself).
    pub login_shell_fix: Option<&'static str>,
    /// The doas(1) configuration file, where a `become = "doas"` login user
    /// needs `permit nopass USER as root`.  Linux: `/etc/doas.conf`
    /// (OpenDoas 6.8.2 doas.conf.5 FILES, Debian 12 `opendoas`); FreeBSD:
    /// `/usr/local/etc/doas.conf` (ports security/doas: pkg-plist
    /// `@sample etc/doas.conf.sample`, commit 98c6ce07; pkg-message.in
    /// "%%PREFIX%%/etc/doas.conf must be created", commit 0620dda4);
    /// DragonFly: the same port through DPorts, PREFIX /usr/local.
    pub doas_conf: &'static str,
    /// Device sizes a filesystem's making tool refuses on this OS: `check`
    /// refuses such a cell before anything is formatted.
    pub device_limits: &'static [DeviceLimit],
    /// The accelerators fsmatrix's guests (`guest_of`, `[host.vm]`) can use
    /// on a physical host of this OS: they are `qemu-system-x86_64`
    /// processes started by common.sh `vm-start`.  Linux: KVM, and TCG
    /// (software emulation, the lab's).  Empty on the BSDs: bhyve (FreeBSD)
    /// and NVMM (DragonFly) are not built in, so a guest of a BSD host is
    /// refused at load.
    pub vm_accels: &'static [Accel],
}

/// A device size at and above which a filesystem's making tool on an OS
/// refuses to make it (the source it comes from cited).
#[derive(Debug)]
pub struct DeviceLimit {
    pub fs: FsType,
    /// The tool refuses a device of this many bytes or more.
    pub refused_from_bytes: u64,
    /// What the tool says then, and where (file, revision, function).
    pub tool_says: &'static str,
    pub source: &'static str,
    /// What would be valid instead.
    pub instead: &'static str,
}

impl DeviceLimit {
    /// The problem of a `bytes`-byte device `dev` for this limit's
    /// filesystem on `os`, or `None` when the tool takes it.
    pub fn problem(&self, os: Os, dev: &str, bytes: u64) -> Option<String> {
        (bytes >= self.refused_from_bytes).then(|| {
            format!(
                "device {dev} has {bytes} bytes ({}), too large for fs={} on {}: {} refuses a device of {} bytes ({}) or more (\"{}\", {}); valid: {}",
                crate::text::iec_bytes(bytes as f64),
                self.fs.as_str(),
                os.as_str(),
                super::fs::FsSpec::of(self.fs).tool,
                self.refused_from_bytes,
                crate::text::iec_bytes(self.refused_from_bytes as f64),
                self.tool_says,
                self.source,
                self.instead
            )
        })
    }
}

/// Every OS, in [`Os::ALL`]'s order.
/// The tools a physical host needs to boot guests (remote-scripts/common.sh
/// `vm-start`): listed in the facts (`tools=`) of an OS whose row offers
/// `vm_accels`, and required by `check` of a host with guests.
pub const VM_TOOLS: &[&str] = &["qemu-system-x86_64", "qemu-img"];

pub const PROFILES: [OsProfile; 3] = [
    OsProfile {
        os: Os::Linux,
        name: "linux",
        script: "linux.sh",
        pg_bin_hint: "/usr/lib/postgresql/*/bin",
        lock_dir: "/run/lock/fsmatrix",
        lock_holder: LockHolder::Flock,
        filesystems: &[
            FsType::Ext3,
            FsType::Ext4,
            FsType::Xfs,
            FsType::Btrfs,
            FsType::Zfs,
        ],
        extra_tools: VM_TOOLS,
        ansible_names: &[
            "linux",
            "debian",
            "ubuntu",
            "redhat",
            "rhel",
            "centos",
            "fedora",
            "rocky",
            "almalinux",
            "oraclelinux",
            "amazon",
            "suse",
            "sles",
            "sles_sap",
            "sled",
            "archlinux",
            "arch",
            "manjaro",
            "gentoo",
            "alpine",
            "altlinux",
            "mandrake",
            "mandriva",
            "slackware",
            "clearlinux",
            "coreos",
            "flatcar",
            "void",
            "nixos",
            "kali",
            "linuxmint",
            "raspbian",
            "devuan",
            "scientific",
            "cloudlinux",
            "eurolinux",
            "virtuozzo",
            "xenserver",
        ],
        ansible_prefixes: &["opensuse"],
        standin: false,
        socket_path_max: 107,
        zfs_loads_on_demand: false,
        login_shell_fix: None,
        doas_conf: "/etc/doas.conf",
        device_limits: &[],
        vm_accels: &[Accel::Kvm, Accel::Tcg],
    },
    OsProfile {
        os: Os::Freebsd,
        name: "freebsd",
        script: "freebsd.sh",
        pg_bin_hint: "/usr/local/bin",
        lock_dir: "/var/run/fsmatrix",
        lock_holder: LockHolder::Lockf,
        filesystems: &[FsType::Ufs, FsType::Zfs],
        extra_tools: &[],
        ansible_names: &["freebsd"],
        ansible_prefixes: &[],
        standin: true,
        socket_path_max: 103,
        zfs_loads_on_demand: true,
        login_shell_fix: Some("pw usermod {user} -s /bin/sh"),
        doas_conf: "/usr/local/etc/doas.conf",
        device_limits: &[],
        vm_accels: &[],
    },
    OsProfile {
        os: Os::Dragonfly,
        name: "dragonfly",
        script: "dragonfly.sh",
        pg_bin_hint: "/usr/local/bin",
        lock_dir: "/var/run/fsmatrix",
        lock_holder: LockHolder::Lockf,
        filesystems: &[FsType::Hammer, FsType::Hammer2, FsType::Ufs],
        extra_tools: &["hammer", "hammer2"],
        ansible_names: &["dragonfly", "dragonflybsd", "dragonfly bsd"],
        ansible_prefixes: &[],
        standin: true,
        socket_path_max: 103,
        zfs_loads_on_demand: false,
        login_shell_fix: Some("pw usermod {user} -s /bin/sh"),
        doas_conf: "/usr/local/etc/doas.conf",
        device_limits: &[DeviceLimit {
            fs: FsType::Ufs,
            // "if (geom.d_media_size / 512 >= 0x80000000ULL)": UFS1 cannot
            // address 2^31 sectors of 512 bytes.
            refused_from_bytes: 0x8000_0000 * 512,
            tool_says: "newfs: DEV: media size is too large for newfs to handle",
            source: "DragonFlyBSD sbin/newfs/newfs.c main() @088b2e68, in the tree since 2007",
            instead: "a slice or partition under 1 TiB (fdisk and disklabel64 make them; list e.g. /dev/da2s1a), or no ufs cells on this device",
        }],
        vm_accels: &[],
    },
];

impl OsProfile {
    /// Whether it can build and mount `fs`.
    pub fn offers(&self, fs: FsType) -> bool {
        self.filesystems.contains(&fs)
    }
    /// Its filesystems' names: `ext3, ext4, xfs, btrfs, zfs`.
    pub fn fs_names(&self) -> String {
        let v: Vec<&str> = self.filesystems.iter().map(|t| t.as_str()).collect();
        v.join(", ")
    }
    /// The OS an Ansible fact value (any case, trimmed) names, if any.
    pub fn from_ansible(value: &str) -> Option<Os> {
        let v = value.trim().to_ascii_lowercase();
        PROFILES
            .iter()
            .find(|p| {
                p.ansible_names.contains(&v.as_str())
                    || p.ansible_prefixes.iter().any(|x| v.starts_with(x))
            })
            .map(|p| p.os)
    }
    /// The size limit of `fs`'s making tool on this OS, if it has one.
    pub fn device_limit(&self, fs: FsType) -> Option<&'static DeviceLimit> {
        self.device_limits.iter().find(|l| l.fs == fs)
    }
    /// The OSes the lab can dress a host as.
    pub fn standins() -> impl Iterator<Item = &'static OsProfile> {
        PROFILES.iter().filter(|p| p.standin)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_lists_every_os() {
        assert_eq!(Os::names(", "), "linux, freebsd, dragonfly");
        assert_eq!(Os::names(" and "), "linux, freebsd and dragonfly");
    }

    #[test]
    fn one_row_per_os_in_order() {
        assert_eq!(PROFILES.len(), Os::ALL.len());
        for (p, os) in PROFILES.iter().zip(Os::ALL) {
            assert_eq!(p.os, os);
            assert_eq!(p.script, format!("{}.sh", p.name));
            assert_eq!(Os::parse(p.name), Some(os));
        }
    }

    #[test]
    fn dragonfly_ufs_refuses_one_tib_and_more_and_says_what_is_valid() {
        let l = Os::Dragonfly
            .profile()
            .device_limit(FsType::Ufs)
            .expect("DragonFly's newfs has a size limit");
        let tib = 1u64 << 40;
        assert_eq!(l.refused_from_bytes, tib);
        assert!(l.problem(Os::Dragonfly, "/dev/da2", tib - 512).is_none());
        let p = l
            .problem(Os::Dragonfly, "/dev/da2", tib)
            .expect("1 TiB is refused");
        for want in [
            "/dev/da2",
            "1099511627776 bytes (1.0 TiB)",
            "fs=ufs on dragonfly",
            "media size is too large for newfs to handle",
            "sbin/newfs/newfs.c",
            "valid: a slice or partition under 1 TiB",
        ] {
            assert!(p.contains(want), "{want}? {p}");
        }
        for os in [Os::Linux, Os::Freebsd] {
            assert!(os.profile().device_limit(FsType::Ufs).is_none());
        }
        for fs in [FsType::Hammer, FsType::Hammer2] {
            assert!(Os::Dragonfly.profile().device_limit(fs).is_none());
        }
        // Every limit is for a filesystem its OS offers.
        for p in &PROFILES {
            for l in p.device_limits {
                assert!(p.offers(l.fs), "{} {:?}", p.name, l.fs);
            }
        }
    }

    #[test]
    fn ansible_names_map_to_their_os() {
        assert_eq!(OsProfile::from_ansible(" Debian"), Some(Os::Linux));
        assert_eq!(OsProfile::from_ansible("openSUSE Leap"), Some(Os::Linux));
        assert_eq!(OsProfile::from_ansible("FreeBSD"), Some(Os::Freebsd));
        assert_eq!(
            OsProfile::from_ansible("DragonFly BSD"),
            Some(Os::Dragonfly)
        );
        assert_eq!(OsProfile::from_ansible("OpenBSD"), None);
    }
}
