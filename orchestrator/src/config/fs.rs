//! The filesystems fsmatrix builds: one row per type.  Which OS offers a
//! type is its OS row's say ([`super::os::OsProfile::filesystems`]); the
//! option allow-lists themselves live beside their checks in
//! [`super::fsopts`], each cited to its man page.
use serde::{Deserialize, Serialize};

use super::fsopts::{self as o, Flags, MountOpts};
use super::os::{Os, PROFILES};

/// Filesystem types fsmatrix knows how to build (in remote-scripts/).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FsType {
    Ext3,
    Ext4,
    Xfs,
    Btrfs,
    Zfs,
    Ufs,
    Hammer,
    Hammer2,
}

impl FsType {
    pub const ALL: [FsType; 8] = [
        FsType::Ext3,
        FsType::Ext4,
        FsType::Xfs,
        FsType::Btrfs,
        FsType::Zfs,
        FsType::Ufs,
        FsType::Hammer,
        FsType::Hammer2,
    ];
    pub fn as_str(self) -> &'static str {
        match self {
            FsType::Ext3 => "ext3",
            FsType::Ext4 => "ext4",
            FsType::Xfs => "xfs",
            FsType::Btrfs => "btrfs",
            FsType::Zfs => "zfs",
            FsType::Ufs => "ufs",
            FsType::Hammer => "hammer",
            FsType::Hammer2 => "hammer2",
        }
    }
    pub fn parse(s: &str) -> Option<FsType> {
        FsType::ALL.into_iter().find(|t| t.as_str() == s)
    }
    /// The filesystems each OS can build and mount: its row's
    /// (config/os.rs).
    pub fn for_os(os: Os) -> &'static [FsType] {
        os.profile().filesystems
    }
    pub fn runs_on(self, os: Os) -> bool {
        FsType::for_os(os).contains(&self)
    }
}

/// One filesystem type.  Adding one is a variant of [`FsType`] and a row
/// here, its allow-lists in `fsopts.rs`, the OS rows that offer it,
/// and the `case` arms of those OSes' scripts (`check_fs`, make-fs, mount).
#[derive(Debug)]
pub struct FsSpec {
    pub fs_type: FsType,
    /// The tool that makes it, as the script's `facts` lists it (`tools=`)
    /// and `check` asks for.
    pub tool: &'static str,
    /// The mkfs flags a matrix may give, and the man page they come from.
    pub mkfs: Flags,
    pub mkfs_page: &'static str,
    /// The mount options a matrix may give (every table allows), and the
    /// man pages they come from.
    pub mount: &'static [MountOpts],
    pub mount_page: &'static str,
    /// How its on-disk size is read (what "on disk" and "smallest" mean
    /// for it in a report).
    pub size: SizeMeasure,
}

/// Where a filesystem's on-disk size of the data directory comes from.
/// Each is the filesystem's own word where it has one; a second measure
/// cross-checks it where one exists (`results::analysis::drift::size_check`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SizeMeasure {
    /// `du`'s allocated blocks of the data folder (st_blocks): right where
    /// the filesystem reports what it stores (ext*, xfs, UFS, HAMMER*), and
    /// the fallback of a bundle that recorded nothing better.
    Du,
    /// The dataset's own accounting, `zfs get -p referenced` once the txg
    /// committed: compressed records at their allocated size, the dataset
    /// holding only the cluster; du is the cross-check.
    ZfsReferenced,
    /// btrfs's own accounting, `btrfs filesystem usage -b`'s Used: btrfs
    /// reports a file's uncompressed size in st_blocks, so `du` cannot see
    /// `compress=` (measured: du 318 MiB where the filesystem held 35.7 MB,
    /// issue 40); the filesystem holds only the cluster.  df's used less
    /// the global reserve (which statfs counts as used) is the cross-check.
    BtrfsUsed,
    /// The dedicated filesystem's used bytes (`df`): a btrfs row of a
    /// bundle made before fsmatrix read btrfs's own accounting.
    DfUsed,
}

impl SizeMeasure {
    /// As a report says it.
    pub fn label(self) -> &'static str {
        match self {
            SizeMeasure::Du => "du",
            SizeMeasure::ZfsReferenced => "ZFS referenced",
            SizeMeasure::BtrfsUsed => "btrfs used",
            SizeMeasure::DfUsed => "df used",
        }
    }

    /// The measures a row of this kind falls back to, best first, when a
    /// bundle did not record the row's own (older bundles).
    pub fn with_fallbacks(self) -> &'static [SizeMeasure] {
        match self {
            SizeMeasure::Du => &[SizeMeasure::Du],
            SizeMeasure::ZfsReferenced => &[SizeMeasure::ZfsReferenced, SizeMeasure::Du],
            SizeMeasure::BtrfsUsed => {
                &[SizeMeasure::BtrfsUsed, SizeMeasure::DfUsed, SizeMeasure::Du]
            }
            SizeMeasure::DfUsed => &[SizeMeasure::DfUsed, SizeMeasure::Du],
        }
    }
}

/// Every filesystem type, in [`FsType::ALL`]'s order.
pub const SPECS: [FsSpec; 8] = [
    FsSpec {
        fs_type: FsType::Ext3,
        tool: "mkfs.ext3",
        mkfs: o::EXT_MKFS,
        mkfs_page: "mke2fs(8)",
        mount: &[o::EXT_MOUNT, o::LINUX_MOUNT],
        mount_page: "ext4(5), mount(8)",
        size: SizeMeasure::Du,
    },
    FsSpec {
        fs_type: FsType::Ext4,
        tool: "mkfs.ext4",
        mkfs: o::EXT_MKFS,
        mkfs_page: "mke2fs(8)",
        mount: &[o::EXT_MOUNT, o::LINUX_MOUNT],
        mount_page: "ext4(5), mount(8)",
        size: SizeMeasure::Du,
    },
    FsSpec {
        fs_type: FsType::Xfs,
        tool: "mkfs.xfs",
        mkfs: o::XFS_MKFS,
        mkfs_page: "mkfs.xfs(8)",
        mount: &[o::XFS_MOUNT, o::LINUX_MOUNT],
        mount_page: "xfs(5), mount(8)",
        size: SizeMeasure::Du,
    },
    FsSpec {
        fs_type: FsType::Btrfs,
        tool: "mkfs.btrfs",
        mkfs: o::BTRFS_MKFS,
        mkfs_page: "mkfs.btrfs(8)",
        mount: &[o::BTRFS_MOUNT, o::LINUX_MOUNT],
        mount_page: "btrfs(5), mount(8)",
        size: SizeMeasure::BtrfsUsed,
    },
    FsSpec {
        fs_type: FsType::Zfs,
        tool: "zpool",
        mkfs: o::ZFS_MKFS,
        mkfs_page: "zpool-create(8)",
        mount: &[o::ZFS_MOUNT],
        mount_page: "zfsprops(7)",
        size: SizeMeasure::ZfsReferenced,
    },
    FsSpec {
        fs_type: FsType::Ufs,
        tool: "newfs",
        mkfs: o::UFS_MKFS,
        mkfs_page: "newfs(8)",
        mount: &[o::BSD_STD_MOUNT, o::UFS_MOUNT],
        mount_page: "mount(8)",
        size: SizeMeasure::Du,
    },
    FsSpec {
        fs_type: FsType::Hammer,
        tool: "newfs_hammer",
        mkfs: o::HAMMER_MKFS,
        mkfs_page: "newfs_hammer(8)",
        mount: &[o::BSD_STD_MOUNT, o::HAMMER_MOUNT],
        mount_page: "mount(8), mount_hammer(8)",
        size: SizeMeasure::Du,
    },
    FsSpec {
        fs_type: FsType::Hammer2,
        tool: "newfs_hammer2",
        mkfs: o::HAMMER2_MKFS,
        mkfs_page: "newfs_hammer2(8)",
        mount: &[o::BSD_STD_MOUNT],
        mount_page: "mount(8), mount_hammer2(8)",
        size: SizeMeasure::Du,
    },
];

impl FsSpec {
    /// The row of `fs`.
    pub fn of(fs: FsType) -> &'static FsSpec {
        SPECS
            .iter()
            .find(|s| s.fs_type == fs)
            .expect("every FsType has a row in SPECS")
    }
    /// The OSes that offer it (their rows say so).
    pub fn oses(&self) -> Vec<Os> {
        PROFILES
            .iter()
            .filter(|p| p.offers(self.fs_type))
            .map(|p| p.os)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_row_per_type_in_order() {
        assert_eq!(SPECS.len(), FsType::ALL.len());
        for (s, t) in SPECS.iter().zip(FsType::ALL) {
            assert_eq!(s.fs_type, t);
            assert!(!s.oses().is_empty(), "{}: no OS offers it", t.as_str());
        }
    }
}
