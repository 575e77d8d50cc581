//! Which mkfs and mount options a matrix may give, per filesystem type.
//!
//! Every option reaches the host quoted, but a quoted option can still do
//! harm by itself: `mke2fs -J device=/dev/sdc` formats another disk as a
//! journal, `mkfs.xfs -l logdev=…` and `-r rtdev=…` write to other devices,
//! `mkfs.btrfs /dev/sdc` (a second positional) adds a device, `-d`/`--rootdir`
//! read a folder of the host, `mount -o journal_path=…` opens another device
//! (no side doors: an option reaches only the device fsmatrix was given).
//! These run past the device guard with `-f`.
//! So options are allow-listed, taken from each tool's man page (cited above
//! each list): the performance and layout options a benchmarker uses, none
//! that names a device, a file or a folder, and none that sets what fsmatrix
//! sets itself (the label, the type, the device).
//!
//! A matrix lists mkfs arguments one per entry, as the remote script passes
//! them (`["-E", "stride=16,stripe_width=32"]`); a flag's value is the next
//! entry or is attached (`-b4096`, `--nodesize=16k`).  The check runs on each
//! variant's options after `vary` substitution.
use super::fs::FsSpec;
use super::matrix::FsType;
use super::os::Os;
use super::values::{MkfsOption, MountOption};

/// What a flag, a sub-option or a mount option takes.
#[derive(Clone, Copy, Debug)]
pub enum V {
    /// Nothing (`-j`, `noatime`).
    No,
    /// `0` or `1`; the bare key means on (`lazy_itable_init`, `barrier`).
    Bool,
    /// A size or a count: digits, an optional fraction and unit
    /// (`4096`, `64k`, `0.5`, `1g`, `512b`).
    Num,
    /// One of these words.
    Words(&'static [&'static str]),
    /// A comma list of feature names, each may start with `^`
    /// (`^has_journal,extent`).
    Features,
    /// An identifier: a UUID, `random`, `uid:gid`.
    Ident,
    /// A comma list of `key[=value]` from this table.
    Sub(&'static [(&'static str, V)]),
}

/// A flag of a mkfs tool and what it takes.
pub type Flags = &'static [(&'static str, V)];
/// Mount options and what each takes.
pub type MountOpts = &'static [(&'static str, V)];

const ON_OFF: V = V::Words(&["0", "1"]);

// ext3 / ext4: mke2fs(8), https://man7.org/linux/man-pages/man8/mke2fs.8.html
// Left out: -d root-directory (reads a folder), -l file (reads a file),
// -M dir, -z undo_file (paths), -J device=/location on another device,
// -E offset/root_owner-like placement, -L (fsmatrix's label), -t (the
// matrix's `type`), -F/-q/-n/-S/-c/-V (fsmatrix's or not a build).
const EXT_E: &[(&str, V)] = &[
    ("stride", V::Num),
    ("stripe_width", V::Num),
    ("stripe-width", V::Num),
    ("resize", V::Num),
    ("lazy_itable_init", V::Bool),
    ("lazy_journal_init", V::Bool),
    ("assume_storage_prezeroed", V::Bool),
    ("packed_meta_blocks", V::Bool),
    ("num_backup_sb", V::Words(&["0", "1", "2"])),
    ("mmp_update_interval", V::Num),
    ("orphan_file_size", V::Num),
    ("discard", V::No),
    ("nodiscard", V::No),
    ("no_copy_xattrs", V::No),
    ("test_fs", V::No),
    ("quotatype", V::Ident),
    ("encoding", V::Words(&["utf8", "utf8-12.1"])),
    ("encoding_flags", V::Words(&["strict"])),
];
const EXT_J: &[(&str, V)] = &[("size", V::Num), ("fast_commit_size", V::Num)];
pub(super) const EXT_MKFS: Flags = &[
    ("-b", V::Num),
    ("-C", V::Num),
    ("-D", V::No),
    ("-e", V::Words(&["continue", "remount-ro", "panic"])),
    ("-E", V::Sub(EXT_E)),
    ("-g", V::Num),
    ("-G", V::Num),
    ("-i", V::Num),
    ("-I", V::Num),
    ("-j", V::No),
    ("-J", V::Sub(EXT_J)),
    ("-m", V::Num),
    ("-N", V::Num),
    ("-O", V::Features),
    ("-r", V::Words(&["0", "1"])),
    ("-T", V::Features),
    ("-U", V::Ident),
];

// Generic mount options a benchmark varies, shared by the Linux
// filesystems: mount(8), https://man7.org/linux/man-pages/man8/mount.8.html
// ("FILESYSTEM-INDEPENDENT MOUNT OPTIONS").  Left out: ro, remount, bind,
// move, loop/offset/sizelimit (another file as the device), context=…,
// x-*, user/users/owner/group, defaults (means other things per fs).
pub(super) const LINUX_MOUNT: &[(&str, V)] = &[
    ("noatime", V::No),
    ("atime", V::No),
    ("relatime", V::No),
    ("norelatime", V::No),
    ("strictatime", V::No),
    ("nostrictatime", V::No),
    ("lazytime", V::No),
    ("nolazytime", V::No),
    ("nodiratime", V::No),
    ("diratime", V::No),
    ("sync", V::No),
    ("async", V::No),
    ("dirsync", V::No),
    ("noexec", V::No),
    ("exec", V::No),
    ("nosuid", V::No),
    ("suid", V::No),
    ("nodev", V::No),
    ("dev", V::No),
    ("iversion", V::No),
    ("noiversion", V::No),
    ("rw", V::No),
];

// ext3 / ext4 mount: ext4(5), https://man7.org/linux/man-pages/man5/ext4.5.html
// ("Mount options for ext3", "Mount options for ext4").  Left out:
// journal_dev=, journal_path= (another device), usrjquota=, grpjquota=
// (files), sb= (another superblock), noload, norecovery, abort.
pub(super) const EXT_MOUNT: &[(&str, V)] = &[
    ("data", V::Words(&["journal", "ordered", "writeback"])),
    ("data_err", V::Words(&["ignore", "abort"])),
    ("commit", V::Num),
    ("barrier", V::Bool),
    ("nobarrier", V::No),
    ("journal_checksum", V::No),
    ("nojournal_checksum", V::No),
    ("journal_async_commit", V::No),
    ("journal_ioprio", V::Num),
    ("inode_readahead_blks", V::Num),
    ("stripe", V::Num),
    ("delalloc", V::No),
    ("nodelalloc", V::No),
    ("max_batch_time", V::Num),
    ("min_batch_time", V::Num),
    ("auto_da_alloc", V::Bool),
    ("noauto_da_alloc", V::No),
    ("init_itable", V::Num),
    ("noinit_itable", V::No),
    ("discard", V::No),
    ("nodiscard", V::No),
    ("dioread_lock", V::No),
    ("dioread_nolock", V::No),
    ("block_validity", V::No),
    ("noblock_validity", V::No),
    ("max_dir_size_kb", V::Num),
    ("nombcache", V::No),
    ("errors", V::Words(&["continue", "remount-ro", "panic"])),
    ("user_xattr", V::No),
    ("nouser_xattr", V::No),
    ("acl", V::No),
    ("noacl", V::No),
    ("orlov", V::No),
    ("oldalloc", V::No),
    ("grpid", V::No),
    ("nogrpid", V::No),
    ("bsddf", V::No),
    ("minixdf", V::No),
];

// xfs: mkfs.xfs(8), https://man7.org/linux/man-pages/man8/mkfs.xfs.8.html
// Left out: -d name=/file (another file as data), -l logdev= and
// internal=0 (an external log device), -r (the realtime section lives on
// rtdev=), -p protofile (reads a file and folders), -c options= (reads a
// config file), -L (fsmatrix's label), -f/-q/-N (fsmatrix's or no build).
const XFS_B: &[(&str, V)] = &[("size", V::Num), ("log", V::Num)];
const XFS_M: &[(&str, V)] = &[
    ("crc", ON_OFF),
    ("finobt", ON_OFF),
    ("rmapbt", ON_OFF),
    ("reflink", ON_OFF),
    ("inobtcount", ON_OFF),
    ("bigtime", ON_OFF),
    ("uuid", V::Ident),
];
const XFS_D: &[(&str, V)] = &[
    ("agcount", V::Num),
    ("agsize", V::Num),
    ("cowextsize", V::Num),
    ("size", V::Num),
    ("sunit", V::Num),
    ("swidth", V::Num),
    ("su", V::Num),
    ("sw", V::Num),
    ("noalign", V::No),
    ("extszinherit", V::Num),
    ("projinherit", V::Num),
    ("daxinherit", ON_OFF),
    ("concurrency", V::Num),
];
const XFS_I: &[(&str, V)] = &[
    ("size", V::Num),
    ("log", V::Num),
    ("perblock", V::Num),
    ("maxpct", V::Num),
    ("align", ON_OFF),
    ("attr", V::Words(&["1", "2"])),
    ("projid32bit", ON_OFF),
    ("sparse", ON_OFF),
    ("nrext64", ON_OFF),
];
const XFS_L: &[(&str, V)] = &[
    ("internal", V::Words(&["1"])),
    ("size", V::Num),
    ("version", V::Words(&["1", "2"])),
    ("sunit", V::Num),
    ("su", V::Num),
    ("lazy-count", ON_OFF),
    ("agnum", V::Num),
    ("concurrency", V::Num),
];
const XFS_N: &[(&str, V)] = &[
    ("size", V::Num),
    ("log", V::Num),
    ("version", V::Words(&["2", "ci"])),
    ("ftype", ON_OFF),
];
const XFS_S: &[(&str, V)] = &[("size", V::Num), ("log", V::Num)];
pub(super) const XFS_MKFS: Flags = &[
    ("-b", V::Sub(XFS_B)),
    ("-m", V::Sub(XFS_M)),
    ("-d", V::Sub(XFS_D)),
    ("-i", V::Sub(XFS_I)),
    ("-l", V::Sub(XFS_L)),
    ("-n", V::Sub(XFS_N)),
    ("-s", V::Sub(XFS_S)),
    ("-K", V::No),
];

// xfs mount: xfs(5), https://man7.org/linux/man-pages/man5/xfs.5.html
// Left out: logdev=, rtdev= (other devices), norecovery, nouuid.
pub(super) const XFS_MOUNT: &[(&str, V)] = &[
    ("allocsize", V::Num),
    ("attr2", V::No),
    ("noattr2", V::No),
    ("discard", V::No),
    ("nodiscard", V::No),
    ("filestreams", V::No),
    ("ikeep", V::No),
    ("noikeep", V::No),
    ("inode32", V::No),
    ("inode64", V::No),
    ("largeio", V::No),
    ("nolargeio", V::No),
    ("logbufs", V::Num),
    ("logbsize", V::Num),
    ("noalign", V::No),
    ("sunit", V::Num),
    ("swidth", V::Num),
    ("swalloc", V::No),
    ("wsync", V::No),
    ("barrier", V::No),
    ("nobarrier", V::No),
    ("grpid", V::No),
    ("nogrpid", V::No),
    ("noquota", V::No),
];

// btrfs: mkfs.btrfs(8), https://man7.org/linux/man-pages/man8/mkfs.btrfs.8.html
// (also https://btrfs.readthedocs.io/en/latest/mkfs.btrfs.html).  Left
// out: extra positional devices, -r/--rootdir, -u/--subvol, --shrink (read
// a folder of the host), -L/--label (fsmatrix's), -f/-q; profiles that need
// several devices (fsmatrix gives one).
const BTRFS_PROFILES: V = V::Words(&["single", "dup"]);
pub(super) const BTRFS_MKFS: Flags = &[
    ("-b", V::Num),
    ("--byte-count", V::Num),
    (
        "--csum",
        V::Words(&["crc32c", "xxhash", "sha256", "blake2"]),
    ),
    (
        "--checksum",
        V::Words(&["crc32c", "xxhash", "sha256", "blake2"]),
    ),
    ("-d", BTRFS_PROFILES),
    ("--data", BTRFS_PROFILES),
    ("-m", BTRFS_PROFILES),
    ("--metadata", BTRFS_PROFILES),
    ("-M", V::No),
    ("--mixed", V::No),
    ("-n", V::Num),
    ("--nodesize", V::Num),
    ("-s", V::Num),
    ("--sectorsize", V::Num),
    ("-O", V::Features),
    ("--features", V::Features),
    ("-R", V::Features),
    ("--runtime-features", V::Features),
    ("-K", V::No),
    ("--nodiscard", V::No),
    ("-U", V::Ident),
    ("--uuid", V::Ident),
];

// btrfs mount: btrfs(5), https://man7.org/linux/man-pages/man5/btrfs.5.html
// (also https://btrfs.readthedocs.io/en/latest/btrfs-man5.html).  Left out:
// device= (another device), subvol= (a path), degraded, rescue=,
// usebackuproot, nologreplay, check_int*.
const BTRFS_COMPRESS: V = V::Ident;
pub(super) const BTRFS_MOUNT: &[(&str, V)] = &[
    ("compress", BTRFS_COMPRESS),
    ("compress-force", BTRFS_COMPRESS),
    ("space_cache", V::Words(&["v1", "v2"])),
    ("nospace_cache", V::No),
    ("clear_cache", V::No),
    ("ssd", V::No),
    ("ssd_spread", V::No),
    ("nossd", V::No),
    ("nossd_spread", V::No),
    ("discard", V::Words(&["sync", "async"])),
    ("nodiscard", V::No),
    ("commit", V::Num),
    ("autodefrag", V::No),
    ("noautodefrag", V::No),
    ("datacow", V::No),
    ("nodatacow", V::No),
    ("datasum", V::No),
    ("nodatasum", V::No),
    ("barrier", V::No),
    ("nobarrier", V::No),
    ("flushoncommit", V::No),
    ("noflushoncommit", V::No),
    ("max_inline", V::Num),
    ("metadata_ratio", V::Num),
    ("thread_pool", V::Num),
    ("treelog", V::No),
    ("notreelog", V::No),
    ("acl", V::No),
    ("noacl", V::No),
    ("fatal_errors", V::Words(&["bug", "panic"])),
    ("skip_balance", V::No),
    ("user_subvol_rm_allowed", V::No),
];

// zfs is built with `zpool create`/`zfs create`: its options are
// `properties` and `pool_properties` (checked in values.rs), never mkfs
// arguments.  Mount options are the temporary mount properties of
// zfsprops(7), https://openzfs.github.io/openzfs-docs/man/master/7/zfsprops.7.html
// ("Temporary Mount Point Properties"); ro is left out.
pub(super) const ZFS_MKFS: Flags = &[];
pub(super) const ZFS_MOUNT: &[(&str, V)] = &[
    ("atime", V::No),
    ("noatime", V::No),
    ("relatime", V::No),
    ("norelatime", V::No),
    ("exec", V::No),
    ("noexec", V::No),
    ("suid", V::No),
    ("nosuid", V::No),
    ("dev", V::No),
    ("nodev", V::No),
    ("xattr", V::No),
    ("noxattr", V::No),
    ("rw", V::No),
];

// ufs: FreeBSD newfs(8), https://man.freebsd.org/cgi/man.cgi?query=newfs&sektion=8
// Left out: -L volname (fsmatrix's), -N (no build), -T disktype, -p
// partition, -l (MAC labels).
pub(super) const UFS_MKFS: Flags = &[
    ("-E", V::No),
    ("-J", V::No),
    ("-O", V::Words(&["1", "2"])),
    ("-S", V::Num),
    ("-U", V::No),
    ("-a", V::Num),
    ("-b", V::Num),
    ("-c", V::Num),
    ("-d", V::Num),
    ("-e", V::Num),
    ("-f", V::Num),
    ("-g", V::Num),
    ("-h", V::Num),
    ("-i", V::Num),
    ("-j", V::No),
    ("-k", V::Num),
    ("-m", V::Num),
    ("-n", V::No),
    ("-o", V::Words(&["space", "time"])),
    ("-r", V::Num),
    ("-s", V::Num),
    ("-t", V::No),
];

// ufs, hammer, hammer2 mount: the BSDs' standard options (FreeBSD and
// DragonFly sbin/mount/mntopts.h MOPT_STDOPTS, FreeBSD mount(8),
// https://man.freebsd.org/cgi/man.cgi?query=mount&sektion=8, DragonFly
// mount(8), mount_hammer(8), mount_hammer2(8),
// https://man.dragonflybsd.org/?command=mount_hammer&section=8), which
// mount_ufs, mount_hammer and mount_hammer2 all take.  Left out: ro/rdonly,
// update, force, snapshot, union, nfsv4acls-like access changes.
pub(super) const BSD_STD_MOUNT: &[(&str, V)] = &[
    ("noatime", V::No),
    ("atime", V::No),
    ("noclusterr", V::No),
    ("noclusterw", V::No),
    ("noexec", V::No),
    ("nosuid", V::No),
    ("nosymfollow", V::No),
    ("rw", V::No),
];

// ufs mount: async and sync, which mount_ufs adds to the standard options.
// mount_hammer and mount_hammer2 do not (`mount_hammer: -o async: option
// not supported`, exit 1, after mkfs and before PostgreSQL: refused at plan
// time instead).
pub(super) const UFS_MOUNT: &[(&str, V)] = &[("async", V::No), ("sync", V::No)];

// hammer mount: DragonFly mount_hammer(8),
// https://man.dragonflybsd.org/?command=mount_hammer&section=8: nohistory
// (no fine-grained history: the study's tuning).  Left out: master=id and
// nomirror (mirroring), -T (an as-of transaction id).
pub(super) const HAMMER_MOUNT: &[(&str, V)] = &[("nohistory", V::No)];

// hammer: DragonFly newfs_hammer(8),
// https://man.dragonflybsd.org/?command=newfs_hammer&section=8.  Left out:
// -L label (fsmatrix's), -f, extra positional devices (volumes).
pub(super) const HAMMER_MKFS: Flags = &[
    ("-E", V::No),
    ("-b", V::Num),
    ("-m", V::Num),
    ("-u", V::Num),
    ("-C", V::Ident),
    ("-V", V::Num),
];

// hammer2: DragonFly newfs_hammer2(8),
// https://man.dragonflybsd.org/?command=newfs_hammer2&section=8: the flags
// both getopt strings take (6.0/6.2 "fL:b:r:V:", newfs_hammer2.c:129
// @f875a8ee; 6.4 "L:b:r:V:d", @5cebbe36).  There is no -s: a matrix that
// passes one fails at make-fs on a real host.  Left out: -L label (the PFS
// names are fsmatrix's), -f/-d, extra positional devices.
pub(super) const HAMMER2_MKFS: Flags = &[("-b", V::Num), ("-r", V::Num), ("-V", V::Num)];

/// Options fsmatrix sets itself (when the type's table does not allow a
/// flag of that name for something else), with what to do instead.
fn fsmatrix_own(fs: FsType, flag: &str) -> Option<&'static str> {
    match (fs, flag) {
        (_, "-L" | "--label") => {
            Some("the label is fsmatrix's own (it finds its filesystems by it)")
        }
        (FsType::Ext3 | FsType::Ext4, "-t") => Some("the filesystem type is the matrix's `type`"),
        (_, "-f" | "-F" | "-q" | "--force" | "--quiet") => Some("fsmatrix passes it itself"),
        _ => None,
    }
}

fn show(v: V) -> String {
    match v {
        V::No => String::new(),
        V::Bool => "[=0|1]".into(),
        V::Num => "=N".into(),
        V::Words(w) => format!("={}", w.join("|")),
        V::Features => "=feature,^feature".into(),
        V::Ident => "=ID".into(),
        V::Sub(t) => {
            let keys: Vec<&str> = t.iter().map(|(k, _)| *k).collect();
            format!("={}", keys.join("|"))
        }
    }
}

fn valid_flags(t: Flags) -> String {
    if t.is_empty() {
        return "none (zfs takes `properties` and `pool_properties`)".into();
    }
    t.iter()
        .map(|(f, v)| match v {
            V::No => f.to_string(),
            V::Num => format!("{f} N"),
            V::Words(w) => format!("{f} {}", w.join("|")),
            V::Features => format!("{f} feature,^feature"),
            V::Ident => format!("{f} ID"),
            V::Bool => format!("{f} 0|1"),
            V::Sub(s) => {
                let keys: Vec<String> = s.iter().map(|(k, v)| format!("{k}{}", show(*v))).collect();
                format!("{f} {}", keys.join(","))
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn valid_mount(ts: &[&[(&str, V)]]) -> String {
    ts.iter()
        .flat_map(|t| t.iter())
        .map(|(k, v)| format!("{k}{}", show(*v)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `4096`, `64k`, `0.5`, `1g`, `512b`, `16KiB`: no path, no device.
fn is_num(s: &str) -> bool {
    let digits = s.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let unit = &s[digits.len()..];
    let (int, frac) = digits.split_once('.').unwrap_or((digits, "0"));
    unit.len() <= 3
        && !int.is_empty()
        && !frac.is_empty()
        && int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit())
}

fn is_ident(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-:_.".contains(&b))
        && !s.contains("..")
}

fn is_features(s: &str) -> bool {
    s.split(',').all(|f| {
        let f = f.strip_prefix('^').unwrap_or(f);
        !f.is_empty()
            && f.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_-".contains(&b))
    })
}

/// Check one value against what it must be; `what` names it in messages.
fn check_value(v: V, value: Option<&str>, what: &str) -> Result<(), String> {
    let need = |kind: &str| format!("{what} takes {kind}");
    match (v, value) {
        (V::No, None) | (V::Bool, None) => Ok(()),
        (V::No, Some(x)) => Err(format!("{what} takes no value, found `{x}`")),
        (_, None) => Err(format!(
            "{what} needs a value ({})",
            show(v).trim_start_matches('=')
        )),
        (V::Bool, Some(x)) if x == "0" || x == "1" => Ok(()),
        (V::Bool, Some(_)) => Err(need("0 or 1")),
        (V::Num, Some(x)) if is_num(x) => Ok(()),
        (V::Num, Some(_)) => Err(need("a number or a size such as 4096 or 64k")),
        (V::Words(w), Some(x)) if w.contains(&x) => Ok(()),
        (V::Words(w), Some(_)) => Err(need(&format!("one of {}", w.join(", ")))),
        (V::Features, Some(x)) if is_features(x) => Ok(()),
        (V::Features, Some(_)) => Err(need("a comma list of feature names (^name turns one off)")),
        (V::Ident, Some(x)) if is_ident(x) => Ok(()),
        (V::Ident, Some(_)) => Err(need("a plain word (letters, digits, - : _ .), not a path")),
        (V::Sub(t), Some(x)) => {
            for part in x.split(',') {
                let (k, val) = match part.split_once('=') {
                    Some((k, val)) => (k, Some(val)),
                    None => (part, None),
                };
                let Some((_, sv)) = t.iter().find(|(key, _)| *key == k) else {
                    let keys: Vec<String> =
                        t.iter().map(|(k, v)| format!("{k}{}", show(*v))).collect();
                    return Err(format!(
                        "`{k}` in {what} is not allowed (it names a device or a path, or is not a \
                         performance option); valid here: {}",
                        keys.join(",")
                    ));
                };
                check_value(*sv, val, &format!("`{k}` in {what}"))?;
            }
            Ok(())
        }
    }
}

/// UFS newfs flags that mean the same on DragonFly: its newfs makes UFS1 and
/// has no -j, -J, -n, -k, -t, -O 2; its -c, -d, -h, -r, -t name disk
/// geometry (DragonFly sbin/newfs/newfs.c getopt
/// "L:NEOS:T:Ua:b:c:d:e:f:g:h:i:k:l:m:n:o:p:r:s:t:u:vx:", newfs(8)).
const UFS_DRAGONFLY_SAME: &[&str] = &["-E", "-S", "-U", "-b", "-f", "-i", "-m", "-o", "-s"];

/// Why a variant whose options passed [`check_mkfs`] cannot run on `os`
/// although its type does: the same filesystem with another OS's tool.
pub fn os_refuses(fs: FsType, os: Os, opts: &[MkfsOption]) -> Option<String> {
    if fs != FsType::Ufs || os != Os::Dragonfly {
        return None;
    }
    let bad: Vec<&str> = opts
        .iter()
        .map(|o| o.as_str())
        .filter(|a| a.starts_with('-'))
        .map(|a| if a.len() > 2 { &a[..2] } else { a })
        .filter(|f| !UFS_DRAGONFLY_SAME.contains(f))
        .collect();
    if bad.is_empty() {
        return None;
    }
    Some(format!(
        "ufs with newfs {} cannot run on dragonfly (its newfs makes UFS1 and shares only {} \
         with FreeBSD's)",
        bad.join(" "),
        UFS_DRAGONFLY_SAME.join(" ")
    ))
}

/// Check a variant's mkfs arguments for its filesystem type; on refusal,
/// the index of the argument at fault and why, with the valid list.
pub fn check_mkfs(fs: FsType, opts: &[MkfsOption]) -> Result<(), (usize, String)> {
    let spec = FsSpec::of(fs);
    let (table, page) = (spec.mkfs, spec.mkfs_page);
    let valid = || format!("valid for {} ({page}): {}", fs.as_str(), valid_flags(table));
    let mut i = 0;
    while i < opts.len() {
        let a = opts[i].as_str();
        if !a.starts_with('-') || a == "-" || a == "--" {
            return Err((
                i,
                format!(
                    "mkfs option `{a}` is not a flag or a flag's value: a positional argument \
                     would be another device or a size, and the device is fsmatrix's; {}",
                    valid()
                ),
            ));
        }
        let (flag, attached) = if a.starts_with("--") {
            match a.split_once('=') {
                Some((f, v)) => (f, Some(v)),
                None => (a, None),
            }
        } else if a.len() > 2 {
            (&a[..2], Some(&a[2..]))
        } else {
            (a, None)
        };
        let Some((_, v)) = table.iter().find(|(f, _)| *f == flag) else {
            if let Some(why) = fsmatrix_own(fs, flag) {
                return Err((
                    i,
                    format!("mkfs option `{flag}` is refused: {why}; {}", valid()),
                ));
            }
            return Err((
                i,
                format!(
                    "mkfs option `{flag}` is not allowed for {} (it names a device, a file or a \
                     folder, or is not a performance option); {}",
                    fs.as_str(),
                    valid()
                ),
            ));
        };
        let at = i;
        let value = match (v, attached) {
            (V::No, a) => a,
            (_, Some(a)) => Some(a),
            (_, None) => {
                i += 1;
                opts.get(i).map(|o| o.as_str())
            }
        };
        // A bad value is reported where it stands; a missing one at its flag.
        let idx = if i < opts.len() { i } else { at };
        check_value(*v, value, &format!("mkfs option `{flag}`"))
            .map_err(|e| (idx, format!("{e}; {}", valid())))?;
        i += 1;
    }
    Ok(())
}

/// Check one mount option for its filesystem type.
pub fn check_mount(fs: FsType, opt: &MountOption) -> Result<(), String> {
    let spec = FsSpec::of(fs);
    let (tables, page) = (spec.mount, spec.mount_page);
    let valid = || {
        format!(
            "valid for {} ({page}): {}",
            fs.as_str(),
            valid_mount(tables)
        )
    };
    let o = opt.as_str();
    let (k, val) = match o.split_once('=') {
        Some((k, v)) => (k, Some(v)),
        None => (o, None),
    };
    let Some((_, v)) = tables
        .iter()
        .flat_map(|t| t.iter())
        .find(|(key, _)| *key == k)
    else {
        let why = match (fs, k) {
            (FsType::Hammer | FsType::Hammer2, "async" | "sync") => {
                "DragonFly's mount_hammer and mount_hammer2 take only the standard options, \
                 which have no async or sync: the mount would fail"
            }
            _ => "it names a device or a path, or is not a performance option",
        };
        return Err(format!(
            "mount option `{k}` is not allowed for {} ({why}); {}",
            fs.as_str(),
            valid()
        ));
    };
    check_value(*v, val, &format!("mount option `{k}`")).map_err(|e| format!("{e}; {}", valid()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mkfs(fs: FsType, args: &[&str]) -> Result<(), (usize, String)> {
        let opts: Vec<MkfsOption> = args.iter().map(|a| MkfsOption::new(a).expect(a)).collect();
        check_mkfs(fs, &opts)
    }

    fn mount(fs: FsType, o: &str) -> Result<(), String> {
        check_mount(fs, &MountOption::new(o).expect(o))
    }

    #[test]
    fn mkfs_options_that_name_devices_or_paths_are_refused() {
        use FsType::*;
        let refused: &[(FsType, &[&str], usize, &str)] = &[
            (
                Ext4,
                &["-J", "device=/dev/sdc"],
                1,
                "`device` in mkfs option `-J` is not allowed",
            ),
            (
                Ext4,
                &["-Jdevice=/dev/sdc"],
                0,
                "`device` in mkfs option `-J`",
            ),
            (
                Ext4,
                &["-J", "location=/x"],
                1,
                "`location` in mkfs option `-J`",
            ),
            (
                Ext4,
                &["-d", "/etc"],
                0,
                "mkfs option `-d` is not allowed for ext4",
            ),
            (
                Ext4,
                &["-E", "root_owner=0:0,offset=4096"],
                1,
                "`root_owner`",
            ),
            (
                Ext4,
                &["-l", "/tmp/badblocks"],
                0,
                "mkfs option `-l` is not allowed",
            ),
            (Ext4, &["-z", "/tmp/undo"], 0, "mkfs option `-z`"),
            (Ext4, &["-M", "/mnt"], 0, "mkfs option `-M`"),
            (Ext4, &["-L", "mine"], 0, "the label is fsmatrix's own"),
            (Ext4, &["-t", "ext2"], 0, "the matrix's `type`"),
            (
                Ext4,
                &["/dev/sdc"],
                0,
                "a positional argument would be another device",
            ),
            (Ext4, &["-b", "4096", "100000"], 2, "positional"),
            (Ext4, &["-b"], 0, "needs a value"),
            (Ext4, &["-b", "/dev/sdc"], 1, "takes a number"),
            (Ext3, &["-U", "/dev/x"], 1, "not a path"),
            (
                Xfs,
                &["-l", "logdev=/dev/sdc,size=64m"],
                1,
                "`logdev` in mkfs option `-l`",
            ),
            (
                Xfs,
                &["-l", "internal=0"],
                1,
                "`internal` in mkfs option `-l` takes one of 1",
            ),
            (
                Xfs,
                &["-r", "rtdev=/dev/sdc"],
                0,
                "mkfs option `-r` is not allowed for xfs",
            ),
            (Xfs, &["-p", "/etc/proto"], 0, "mkfs option `-p`"),
            (
                Xfs,
                &["-d", "name=/tmp/img"],
                1,
                "`name` in mkfs option `-d`",
            ),
            (Xfs, &["-c", "options=/etc/x"], 0, "mkfs option `-c`"),
            (Btrfs, &["/dev/sdc"], 0, "positional"),
            (Btrfs, &["-d", "single", "/dev/sdc"], 2, "positional"),
            (Btrfs, &["--rootdir", "/etc"], 0, "mkfs option `--rootdir`"),
            (Btrfs, &["--rootdir=/etc"], 0, "mkfs option `--rootdir`"),
            (Btrfs, &["-r", "/etc"], 0, "mkfs option `-r`"),
            (Btrfs, &["--label=x"], 0, "the label is fsmatrix's own"),
            (Btrfs, &["-d", "raid1"], 1, "one of single, dup"),
            (Zfs, &["-o", "ashift=12"], 0, "none (zfs takes `properties`"),
            (Ufs, &["-L", "x"], 0, "the label is fsmatrix's own"),
            (Hammer, &["-L", "x"], 0, "the label is fsmatrix's own"),
            (Hammer, &["/dev/da2"], 0, "positional"),
            (Hammer2, &["-L", "DATA"], 0, "the label is fsmatrix's own"),
            // Neither newfs_hammer2 getopt (6.0/6.2 nor 6.4) has -s.
            (Hammer2, &["-s", "10g"], 0, "mkfs option `-s`"),
        ];
        for (fs, args, at, want) in refused {
            match mkfs(*fs, args) {
                Ok(()) => panic!("{fs:?} {args:?} passed"),
                Err((i, e)) => {
                    assert_eq!(i, *at, "{fs:?} {args:?}: {e}");
                    assert!(e.contains(want), "{fs:?} {args:?}: {e}");
                    assert!(e.contains("valid for"), "{e}");
                }
            }
        }
    }

    #[test]
    fn performance_mkfs_options_stay_allowed() {
        use FsType::*;
        let ok: &[(FsType, &[&str])] = &[
            (Ext4, &["-b", "4096", "-I", "256", "-i", "16384", "-m", "0", "-j"]),
            (Ext4, &["-E", "stride=16,stripe_width=32,lazy_itable_init=0,lazy_journal_init,packed_meta_blocks=1"]),
            (Ext4, &["-O", "^has_journal,extent,huge_file", "-T", "largefile4"]),
            (Ext4, &["-J", "size=1024", "-b4096", "-m0.5"]),
            (Ext3, &["-j", "-U", "random", "-e", "remount-ro"]),
            (Xfs, &["-b", "size=4096", "-d", "agcount=4,su=64k,sw=4", "-i", "size=512"]),
            (Xfs, &["-l", "size=128m,version=2,su=64k,lazy-count=1", "-m", "crc=1,reflink=1", "-n", "size=8192", "-K"]),
            (Btrfs, &["-d", "single", "-m", "dup", "-n", "16k", "-s", "4096", "-O", "no-holes,^free-space-tree", "-R", "quota", "-K"]),
            (Btrfs, &["--nodesize=32k", "--csum", "xxhash"]),
            (Ufs, &["-j"]),
            (Ufs, &["-U", "-b", "32768", "-f", "4096", "-o", "time", "-t"]),
            (Hammer, &["-E", "-u", "512m", "-V", "7"]),
            (Hammer2, &["-b", "4m", "-V", "1"]),
        ];
        for (fs, args) in ok {
            if let Err((i, e)) = mkfs(*fs, args) {
                panic!("{fs:?} {args:?} refused at {i}: {e}");
            }
        }
    }

    #[test]
    fn mount_options_that_name_devices_or_paths_are_refused() {
        use FsType::*;
        for (fs, o) in [
            (Ext4, "journal_path=/dev/sdc"),
            (Ext4, "journal_dev=2049"),
            (Ext4, "usrjquota=/etc/q"),
            (Ext4, "loop"),
            (Ext4, "offset=4096"),
            (Ext4, "ro"),
            (Ext4, "remount"),
            (Ext4, "data=/x"),
            (Ext4, "commit=/x"),
            (Xfs, "logdev=/dev/sdc"),
            (Xfs, "rtdev=/dev/sdc"),
            (Btrfs, "device=/dev/sdc"),
            (Btrfs, "subvol=/x"),
            (Btrfs, "compress=/x"),
            (Zfs, "ro"),
            (Ufs, "update"),
            (Hammer, "async"),
            (Hammer, "sync"),
            (Hammer2, "async"),
            (Hammer2, "sync"),
        ] {
            let e = mount(fs, o).expect_err(o);
            assert!(e.starts_with("mount option `"), "{o}: {e}");
            assert!(e.contains("valid for"), "{o}: {e}");
        }
    }

    #[test]
    fn hammer_async_is_refused_with_dragonflys_reason() {
        let e = mount(FsType::Hammer, "async").expect_err("async");
        assert!(
            e.contains("mount_hammer and mount_hammer2 take only the standard options, which have no async or sync"),
            "{e}"
        );
        assert!(
            e.contains("valid for hammer (mount(8), mount_hammer(8)): "),
            "{e}"
        );
        assert!(e.contains("nohistory") && !e.contains("async,"), "{e}");
        let e = mount(FsType::Hammer2, "sync").expect_err("sync");
        assert!(
            e.contains("no async or sync") && !e.contains("nohistory"),
            "{e}"
        );
    }

    #[test]
    fn performance_mount_options_stay_allowed() {
        use FsType::*;
        for (fs, o) in [
            (Ext4, "noatime"),
            (Ext4, "relatime"),
            (Ext4, "nobarrier"),
            (Ext4, "barrier=0"),
            (Ext4, "barrier"),
            (Ext4, "data=writeback"),
            (Ext4, "commit=60"),
            (Ext4, "journal_checksum"),
            (Ext4, "journal_async_commit"),
            (Ext4, "discard"),
            (Ext4, "nodelalloc"),
            (Ext4, "dioread_nolock"),
            (Ext4, "inode_readahead_blks=64"),
            (Ext4, "stripe=16"),
            (Ext3, "data=ordered"),
            (Xfs, "logbufs=8"),
            (Xfs, "logbsize=256k"),
            (Xfs, "allocsize=64m"),
            (Xfs, "largeio"),
            (Xfs, "inode64"),
            (Xfs, "nobarrier"),
            (Xfs, "noatime"),
            (Btrfs, "compress=zstd"),
            (Btrfs, "compress=zstd:3"),
            (Btrfs, "compress-force=lzo"),
            (Btrfs, "space_cache=v2"),
            (Btrfs, "ssd"),
            (Btrfs, "nossd"),
            (Btrfs, "discard=async"),
            (Btrfs, "commit=120"),
            (Btrfs, "autodefrag"),
            (Btrfs, "nodatacow"),
            (Btrfs, "nodatasum"),
            (Zfs, "noatime"),
            (Ufs, "async"),
            (Ufs, "sync"),
            (Ufs, "noatime"),
            (Hammer, "noatime"),
            (Hammer, "nohistory"),
            (Hammer, "noclusterw"),
            (Hammer2, "noatime"),
        ] {
            if let Err(e) = mount(fs, o) {
                panic!("{fs:?} {o}: {e}");
            }
        }
    }
}

#[cfg(test)]
mod os_tests {
    use super::*;

    fn opts(a: &[&str]) -> Vec<MkfsOption> {
        a.iter().map(|s| MkfsOption::new(s).expect(s)).collect()
    }

    #[test]
    fn dragonfly_ufs_takes_only_the_flags_both_newfs_share() {
        let why = os_refuses(FsType::Ufs, Os::Dragonfly, &opts(&["-U", "-j"])).expect("refused");
        assert!(why.contains("newfs -j") && why.contains("UFS1"), "{why}");
        let why =
            os_refuses(FsType::Ufs, Os::Dragonfly, &opts(&["-t", "-O", "2"])).expect("refused");
        assert!(why.contains("-t -O"), "{why}");
        assert_eq!(
            os_refuses(
                FsType::Ufs,
                Os::Dragonfly,
                &opts(&["-U", "-b", "32768", "-f4096"])
            ),
            None
        );
        // FreeBSD's newfs takes them all; other types are not concerned.
        assert_eq!(
            os_refuses(FsType::Ufs, Os::Freebsd, &opts(&["-U", "-j"])),
            None
        );
        assert_eq!(
            os_refuses(FsType::Hammer, Os::Dragonfly, &opts(&["-E"])),
            None
        );
    }
}
