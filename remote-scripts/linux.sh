#!/bin/sh
# shellcheck shell=dash source-path=SCRIPTDIR
# linux.sh: fsmatrix's verbs on a Linux host (ext3, ext4, xfs, btrfs, ZFS:
# OpenZFS or zfs-fuse).  Usage: /bin/sh <dir>/linux.sh VERB name=value ...
# The contract (arguments, stdout keys, exit codes) is in docs/remote-scripts.md.
set -eu

FSMX_DIR=$(dirname "$0")
# shellcheck source=common.sh
. "$FSMX_DIR/common.sh"

LC_ALL=C
export LC_ALL
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:$PATH
export PATH

# ---------------------------------------------------------------- devices

# resolve PATH: symlinks resolved (by-id names, /dev/mapper).
resolve() {
	readlink -f "$1" 2>/dev/null || printf '%s' "$1"
}

# blk_name DEV: the kernel name (loop3, vdb, sda1).
blk_name() {
	basename "$(resolve "$1")"
}

# partitions NAME: the kernel names of NAME's partitions, one a line.
partitions() {
	for _p in /sys/class/block/"$1"/"$1"*; do
		[ -e "$_p/partition" ] && basename "$_p"
	done
	return 0
}

# disks_under NAME: the whole disks NAME lives on, one a line: the parent of a
# partition, the slaves of dm/md devices (recursively), else NAME itself.
disks_under() {
	_du_sys=/sys/class/block/$1
	if [ ! -e "$_du_sys" ]; then
		return 0
	fi
	_du_found=no
	for _du_s in "$_du_sys"/slaves/*; do
		[ -e "$_du_s" ] || continue
		_du_found=yes
		disks_under "$(basename "$_du_s")"
	done
	if [ "$_du_found" = yes ]; then
		return 0
	fi
	if [ -e "$_du_sys/partition" ]; then
		basename "$(dirname "$(readlink -f "$_du_sys")")"
	else
		printf '%s\n' "$1"
	fi
}

dev_size_bytes() {
	_ds_name=$(blk_name "$1")
	if [ -r "/sys/class/block/$_ds_name/size" ]; then
		awk '{ printf "%.0f", $1 * 512 }' "/sys/class/block/$_ds_name/size"
	else
		blockdev --getsize64 "$1"
	fi
}

# clean_attr FILE [SKIP]: a sysfs attribute as one line of printable words
# (`;` dropped: it separates an identity's fields), empty when unreadable;
# SKIP leading bytes are left out (a VPD page's 4-byte header).
clean_attr() {
	[ -r "$1" ] || return 0
	tail -c "+$((${2:-0} + 1))" "$1" 2>/dev/null | tr -c '[:graph:]' ' ' | tr -d ';' | tr -s ' ' | sed 's/^ //; s/ $//'
}

# dev_ident DEV: what tells the disk at DEV from another disk put at the same
# path, read-only, as `field=value;...` (fields with no value left out, in a
# fixed order): size in bytes; the whole disk's model, serial (the block
# device's own `serial` as virtio has it, the device's as NVMe has it, else
# SCSI VPD page 0x80) and WWID; a partition's number and start; a loop
# device's backing file, its device:inode and offset (another image attached
# at the same /dev/loopN is another disk); a device-mapper or MD UUID.  A
# disk that exposes no serial or WWID (virtio without `serial=`) is told
# apart by its size and model only.
dev_ident() {
	_di_name=$(blk_name "$1")
	_di_sys=/sys/class/block/$_di_name
	_di_disk=$(disks_under "$_di_name" | head -n 1)
	_di_dsys=/sys/class/block/${_di_disk:-$_di_name}
	_di_serial=$(clean_attr "$_di_dsys/serial")
	[ -n "$_di_serial" ] || _di_serial=$(clean_attr "$_di_dsys/device/serial")
	[ -n "$_di_serial" ] || _di_serial=$(clean_attr "$_di_dsys/device/vpd_pg80" 4)
	_di_wwid=$(clean_attr "$_di_dsys/wwid")
	[ -n "$_di_wwid" ] || _di_wwid=$(clean_attr "$_di_dsys/device/wwid")
	_di_loop=$(clean_attr "$_di_dsys/loop/backing_file")
	_di_inode=
	if [ -n "$_di_loop" ]; then
		_di_inode=$(stat -L -c %d:%i "$(cat "$_di_dsys/loop/backing_file")" 2>/dev/null || true)
	fi
	_di_part=
	if [ -e "$_di_sys/partition" ]; then
		_di_part="$(clean_attr "$_di_sys/partition")@$(clean_attr "$_di_sys/start")"
	fi
	_di_sep=
	for _di_f in \
		"size=$(dev_size_bytes "$1")" \
		"model=$(clean_attr "$_di_dsys/device/model")" \
		"serial=$_di_serial" \
		"wwid=$_di_wwid" \
		"part=$_di_part" \
		"loop=$_di_loop" \
		"inode=$_di_inode" \
		"offset=$(if [ -n "$_di_loop" ]; then clean_attr "$_di_dsys/loop/offset"; fi)" \
		"dm=$(clean_attr "$_di_sys/dm/uuid")" \
		"md=$(clean_attr "$_di_sys/md/uuid")"; do
		case $_di_f in *=) continue ;; esac
		printf '%s%s' "$_di_sep" "$_di_f"
		_di_sep=';'
	done
}

# mounted_where NAMES MAJMINS: the first mount (in ANY mount namespace: a
# lab host's or a container's mounts are invisible in /proc/mounts) whose
# source is one of NAMES or whose device number is one of MAJMINS, printed as
# "<source> on <mountpoint> (mount namespace of pid <p>)"; nothing if none.
# One stat and one awk, whatever the number of processes.
mounted_where() {
	# One pid per mount namespace (the namespace's inode is the key).
	_mw_files=$(stat -L -c '%i %n' /proc/self/ns/mnt /proc/[0-9]*/ns/mnt 2>/dev/null |
		awk '!seen[$1]++ { f = $2; sub(/ns\/mnt$/, "mountinfo", f); print f }')
	# shellcheck disable=SC2086 # one path a word: /proc/<pid>/mountinfo
	awk -v names="$1" -v majmins="$2" '
		BEGIN { n = split(names, a, /[ \n]+/); for (i = 1; i <= n; i++) if (a[i] != "") want[a[i]] = 1
		        m = split(majmins, b, /[ \n]+/); for (i = 1; i <= m; i++) if (b[i] != "") mm[b[i]] = 1 }
		# mountinfo: id parent maj:min root mountpoint opts [tags] - fstype source superopts
		{ for (i = 7; i <= NF; i++) if ($i == "-") break
		  src = $(i + 2); s = src; sub(/.*\//, "", s)
		  if ((src ~ /^\/dev\// && (s in want)) || ($3 in mm)) {
			pid = FILENAME; sub(/^\/proc\//, "", pid); sub(/\/mountinfo$/, "", pid)
			print src " on " $5 " (mount namespace of pid " pid ")"; exit } }
	' $_mw_files 2>/dev/null || true
}

# zpool_vdev_of NAMES: the imported pool one of NAMES is a vdev of, if any.
# A vdev may be named by kernel name, by path, or by a /dev/disk/by-* link
# name (by-id with its wwn-/ata-/nvme- names, by-partuuid, by-uuid, by-path,
# by-partlabel): each is resolved to its kernel name before comparing.
# Fails closed: when ZFS runs (/dev/zfs or zfs-fuse's socket) but `zpool
# status` fails or hangs, prints "?" and the reason, and the guard refuses.
zpool_vdev_of() {
	command -v zpool >/dev/null 2>&1 || return 0
	# Not running here (a zfs-fuse of another container does not count: no
	# socket here): no pool is imported, and zpool is not asked.
	zfs_runs_here || return 0
	if ! _zv_status=$(timeout 20 zpool status 2>&1); then
		printf '?zpool status failed: %s\n' "$(printf '%s' "$_zv_status" | head -n 1)"
		return 0
	fi
	printf '%s\n' "$_zv_status" | awk '$1 == "pool:" { pool = $2; next } pool != "" && NF > 0 { print pool, $1 }' |
		while read -r _zv_pool _zv_tok; do
			# drop-caches imports through a folder of links to /dev (gone since):
			# such a vdev path names the /dev node by its last part.
			case $_zv_tok in */fsmx-import.*/*) _zv_tok=/dev/${_zv_tok##*/} ;; esac
			for _zv_p in "$_zv_tok" "/dev/$_zv_tok" "/dev/disk/by-id/$_zv_tok" "/dev/disk/by-partuuid/$_zv_tok" \
				"/dev/disk/by-uuid/$_zv_tok" "/dev/disk/by-path/$_zv_tok" "/dev/disk/by-partlabel/$_zv_tok"; do
				case $_zv_p in /*) ;; *) continue ;; esac
				[ -e "$_zv_p" ] || continue
				if in_words "$(blk_name "$_zv_p")" "$1"; then
					printf '%s\n' "$_zv_pool"
					return 0
				fi
			done
		done
}

# signature DEV: sets SIG (none|fsmx|foreign) and SIG_DETAIL.  Read-only.
signature() {
	SIG=none
	SIG_DETAIL=
	_sg_name=$(blk_name "$1")
	_sg_parts=$(partitions "$_sg_name")
	if [ -n "$_sg_parts" ]; then
		SIG=foreign
		SIG_DETAIL="partitions: $(printf '%s' "$_sg_parts" | tr '\n' ' ')"
		return 0
	fi
	if _sg_out=$(blkid -p -o export "$1" 2>&1); then
		_sg_rc=0
	else
		_sg_rc=$?
	fi
	case $_sg_rc in
	0)
		_sg_type=$(printf '%s\n' "$_sg_out" | sed -n 's/^TYPE=//p')
		_sg_label=$(printf '%s\n' "$_sg_out" | sed -n 's/^LABEL=//p')
		_sg_pt=$(printf '%s\n' "$_sg_out" | sed -n 's/^PTTYPE=//p')
		SIG_DETAIL="${_sg_type:-?} label=${_sg_label}${_sg_pt:+ pttype=$_sg_pt}"
		SIG=foreign
		if [ -z "$_sg_pt" ]; then
			case $_sg_type in
			ext2 | ext3 | ext4 | xfs | btrfs)
				[ "$_sg_label" = "$FSMX_LABEL" ] && SIG=fsmx
				;;
			zfs_member)
				# The pool's name, exactly one fsmatrix makes (own_pool,
				# common.sh): `fsmxdata` is someone else's.
				own_pool "$_sg_label" && SIG=fsmx
				;;
			esac
		fi
		;;
	2)
		if ! first_mib_zero "$1"; then
			SIG=foreign
			SIG_DETAIL="no known signature but the first MiB is not zero"
		fi
		;;
	*)
		# Ambivalent results (two signatures) and probe errors: not ours.
		SIG=foreign
		SIG_DETAIL="blkid -p: $(printf '%s' "$_sg_out" | tr '\n' ' ')"
		;;
	esac
	return 0
}

# guard_in_use DEV REAL (the hook of guard in common.sh): refuse (exit 3)
# when DEV (REAL: resolved) is not a disk this host can free or is in use.
guard_in_use() {
	_g_dev=$1
	_g_real=$2
	[ -b "$_g_real" ] || refuse "$_g_dev" "not a block device"
	_g_name=$(basename "$_g_real")
	_g_names="$_g_name $(partitions "$_g_name" | tr '\n' ' ')"
	_g_majmins=
	for _g_n in $_g_names; do
		_g_majmins="$_g_majmins $(cat "/sys/class/block/$_g_n/dev" 2>/dev/null || true)"
	done
	[ -r /proc/self/mountinfo ] || refuse "$_g_dev" "cannot read /proc/self/mountinfo to tell whether it is mounted; refused rather than assumed free"
	_g_where=$(mounted_where "$_g_names" "$_g_majmins")
	[ -z "$_g_where" ] || refuse "$_g_dev" "mounted: $_g_where"
	[ -r /proc/swaps ] || refuse "$_g_dev" "cannot read /proc/swaps to tell whether it is swap; refused rather than assumed free"
	while read -r _g_src _g_rest; do
		case $_g_src in /dev/*) ;; *) continue ;; esac
		if in_words "$(blk_name "$_g_src")" "$_g_names"; then
			refuse "$_g_dev" "in use as swap ($_g_src)"
		fi
	done </proc/swaps
	for _g_n in $_g_names; do
		for _g_h in "/sys/class/block/$_g_n/holders"/*; do
			[ -e "$_g_h" ] || continue
			refuse "$_g_dev" "held by $(basename "$_g_h") (LVM, MD or device-mapper) through $_g_n"
		done
	done
	_g_pool=$(zpool_vdev_of "$_g_names" | head -n 1)
	case $_g_pool in
	'') ;;
	'?'*) refuse "$_g_dev" "cannot tell whether it is in an imported zpool (${_g_pool#?}); refused rather than assumed free" ;;
	*) refuse "$_g_dev" "part of the imported zpool $_g_pool" ;;
	esac
	_g_root_src=$(awk '$2 == "/" { src = $1 } END { print src }' /proc/mounts)
	case $_g_root_src in
	/dev/*)
		_g_root_disks=$(disks_under "$(blk_name "$_g_root_src")")
		for _g_d in $(disks_under "$_g_name"); do
			if in_words "$_g_d" "$_g_root_disks"; then
				refuse "$_g_dev" "on the disk holding / ($_g_root_src is on $_g_d)"
			fi
		done
		;;
	esac
}

# wipe DEV: remove every signature and zero both ends.
wipe() {
	run wipefs -a -q "$1"
	zero_ends "$1" "$(dev_size_bytes "$1")"
}

check_fs() {
	case $1 in
	ext3 | ext4 | xfs | btrfs | zfs) ;;
	*) usage_die "fs=$1 is not one of ext3 ext4 xfs btrfs zfs" ;;
	esac
}

# zfs_runs_here: ZFS runs on this host: the kernel module's /dev/zfs, or
# zfs-fuse's socket.  Asked before any zpool command: OpenZFS's libzfs_init
# loads the zfs module when /dev/zfs is missing (lib/libzfs/os/linux/
# libzfs_util_os.c libzfs_load_module), and reading facts must not load a
# module; without either, no pool can be imported here.
zfs_runs_here() {
	[ -e /dev/zfs ] || [ -S /var/run/zfs/zfs_socket ] || [ -S /run/zfs/zfs_socket ]
}

zfs_impl() {
	if ! command -v zpool >/dev/null 2>&1; then
		printf none
	elif command -v zfs-fuse >/dev/null 2>&1 && [ ! -e /sys/module/zfs ]; then
		printf zfs-fuse
	else
		printf openzfs
	fi
}

# child_pids PID: the pids of PID's children, one a line (pg_wake).
child_pids() {
	ps -o pid= --ppid "$1" 2>/dev/null
}

# mount_line MNT: "source fstype options" of the last mount on MNT.
mount_line() {
	awk -v mp="$1" '$2 == mp { line = $1 " " $3 " " $4 } END { if (line != "") print line }' /proc/mounts
}

# ---------------------------------------------------------------- verbs

# vm_guest: the hypervisor this Linux runs under, as FreeBSD's kern.vm_guest
# names it (none, kvm, qemu, xen, vmware, ...): systemd-detect-virt --vm, else
# the DMI vendor, else the CPU's hypervisor flag (`unknown`), else none.
vm_guest() {
	if command -v systemd-detect-virt >/dev/null 2>&1; then
		_vg=$(systemd-detect-virt --vm 2>/dev/null) || true
		if [ -n "$_vg" ]; then
			printf '%s' "$_vg"
			return 0
		fi
	fi
	_vg=$(cat /sys/class/dmi/id/sys_vendor /sys/class/dmi/id/product_name 2>/dev/null | tr '\n' ' ')
	case $_vg in
	*KVM* | *QEMU*) printf 'kvm' ;;
	*VMware*) printf 'vmware' ;;
	*Xen*) printf 'xen' ;;
	*VirtualBox*) printf 'oracle' ;;
	*) if grep -q '^flags.* hypervisor' /proc/cpuinfo 2>/dev/null; then printf 'unknown'; else printf 'none'; fi ;;
	esac
}

# device_facts PREFIX DEV (the hook of facts_devices in common.sh): the
# facts of the disk DEV as PREFIX.size_bytes, .model, .rotational,
# .logical_block_size, .ident; fails (printing nothing) when DEV is no disk.
device_facts() {
	[ -b "$2" ] || return 1
	_df_n=$(blk_name "$2")
	_df_disk=$(disks_under "$_df_n" | head -n 1)
	kv "$1.size_bytes" "$(dev_size_bytes "$2")"
	kv "$1.model" "$(sed 's/[[:space:]]*$//' "/sys/class/block/$_df_disk/device/model" 2>/dev/null || true)"
	kv "$1.rotational" "$(cat "/sys/class/block/$_df_disk/queue/rotational" 2>/dev/null || printf unknown)"
	kv "$1.logical_block_size" "$(cat "/sys/class/block/$_df_disk/queue/logical_block_size" 2>/dev/null || printf unknown)"
	kv "$1.ident" "$(dev_ident "$2")"
}

# whole_disks: the names in /sys/block (one per block device that is not a
# partition, sysfs-rules.rst) less loop, RAM, device-mapper, md and optical
# devices, space-separated in the glob's (sorted) order.
whole_disks() {
	_wd=
	for _wd_p in /sys/block/*; do
		_wd_n=${_wd_p##*/}
		case $_wd_n in
		loop* | ram* | zram* | dm-* | md* | sr* | '*') continue ;;
		esac
		_wd="$_wd${_wd:+ }$_wd_n"
	done
	printf '%s' "$_wd"
}

verb_facts() {
	kv os linux
	kv kernel "$(uname -r)"
	kv kernel_version "$(uname -v)"
	kv arch "$(uname -m)"
	kv vm_guest "$(vm_guest)"
	if [ -r /etc/os-release ]; then
		kv distro "$(sed -n 's/^PRETTY_NAME=//p' /etc/os-release | tr -d '"')"
	fi
	kv hostname "$(uname -n)"
	kv uid "$(id -u)"
	kv user "$(id -un)"
	kv cpu_model "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
	kv cpu_count "$(getconf _NPROCESSORS_ONLN)"
	kv mem_bytes "$(awk '$1 == "MemTotal:" { printf "%.0f", $2 * 1024 }' /proc/meminfo)"
	kv page_size "$(getconf PAGESIZE)"
	# disks: what the kernel sees as whole disks (a guest: what it was given).
	kv disks "$(whole_disks)"
	facts_devices ${1+"$@"}
	facts_pg_tools "mkfs.ext3 mkfs.ext4 mkfs.xfs mkfs.btrfs zpool qemu-system-x86_64 qemu-img" ${1+"$@"}
	if command -v mke2fs >/dev/null 2>&1; then
		kv mkfs_ext4_version "$(mke2fs -V 2>&1 | awk 'NR == 1 { print $2 }')"
	fi
	if command -v mkfs.xfs >/dev/null 2>&1; then
		kv mkfs_xfs_version "$(mkfs.xfs -V 2>&1 | awk '{ print $NF; exit }')"
	fi
	if command -v mkfs.btrfs >/dev/null 2>&1; then
		kv mkfs_btrfs_version "$(mkfs.btrfs --version 2>&1 | awk '{ print $NF; exit }')"
	fi
	_f_impl=$(zfs_impl)
	kv zfs_impl "$_f_impl"
	case $_f_impl in
	openzfs)
		# `zfs version` goes through libzfs too: only where ZFS runs; else the
		# package's version (the module's own when it is loaded).
		if zfs_runs_here; then
			kv zfs_version "$(zfs version 2>/dev/null | head -n 1 || cat /sys/module/zfs/version 2>/dev/null || true)"
		else
			kv zfs_version "$(dpkg-query -W -f '${Version}' zfsutils-linux 2>/dev/null || printf unknown)"
		fi
		;;
	zfs-fuse)
		kv zfs_version "$(dpkg-query -W -f '${Version}' zfs-fuse 2>/dev/null || printf unknown)"
		;;
	esac
	if [ "$_f_impl" != none ]; then
		if zfs_runs_here && timeout 10 zpool list >/dev/null 2>&1; then kv zfs_running yes; else kv zfs_running no; fi
	fi
}

verb_make_fs() {
	_mf_fs=$(need fs ${1+"$@"})
	check_fs "$_mf_fs"
	_mf_ident=$(need ident ${1+"$@"})
	if [ "$_mf_fs" = zfs ]; then
		_mf_pool=$(need pool ${1+"$@"})
		check_pool "$_mf_pool"
		_mf_mnt=$(need mnt ${1+"$@"})
		check_abs mnt "$_mf_mnt"
		command -v zpool >/dev/null 2>&1 || die "zpool not found: install OpenZFS or zfs-fuse"
	else
		_mf_mkfs=mkfs.$_mf_fs
		command -v "$_mf_mkfs" >/dev/null 2>&1 || die "$_mf_mkfs not found"
	fi
	# The guard comes before ANY write to the device.
	guard_same_disk "$_mf_ident" ${1+"$@"}
	_mf_dev=$G_REAL
	wipe "$_mf_dev"
	_mf_zprops=
	for _mf_a in ${1+"$@"}; do
		shift
		case $_mf_a in
		mkfs_opt=*) [ "$_mf_fs" != zfs ] && set -- ${1+"$@"} "${_mf_a#mkfs_opt=}" ;;
		zfs_prop=*=*) [ "$_mf_fs" = zfs ] && set -- ${1+"$@"} -O "${_mf_a#zfs_prop=}" && _mf_zprops=yes ;;
		zfs_prop=*) usage_die "zfs_prop=${_mf_a#zfs_prop=} is not property=value" ;;
		pool_prop=*=*) [ "$_mf_fs" = zfs ] && set -- ${1+"$@"} -o "${_mf_a#pool_prop=}" ;;
		pool_prop=*) usage_die "pool_prop=${_mf_a#pool_prop=} is not property=value" ;;
		esac
	done
	_mf_t0=$(now_ms)
	case $_mf_fs in
	ext3 | ext4)
		set -- "$_mf_mkfs" -F -q -L "$FSMX_LABEL" -E lazy_itable_init=0,lazy_journal_init=0 ${1+"$@"} "$_mf_dev"
		;;
	xfs | btrfs)
		set -- "$_mf_mkfs" -f -q -L "$FSMX_LABEL" ${1+"$@"} "$_mf_dev"
		;;
	zfs)
		run mkdir -p "$_mf_mnt"
		set -- zpool create -f -m "$_mf_mnt" ${1+"$@"} "$_mf_pool" "$_mf_dev"
		;;
	esac
	run ${1+"$@"}
	_mf_t1=$(now_ms)
	kv fs "$_mf_fs"
	if [ "$_mf_fs" = zfs ]; then kv label "$_mf_pool"; else kv label "$FSMX_LABEL"; fi
	kv mkfs_ms "$((_mf_t1 - _mf_t0))"
	kv mkfs_cmd "$(quote_all ${1+"$@"})"
}


# fs_flush FS MNT POOL: after sync(1), what makes FS's sizes true.  btrfs:
# `btrfs filesystem sync` commits the transaction, so the allocation (df) and
# the extents' accounting are written [btrfs-filesystem(8)]; zfs: zfs_flush
# (common.sh); ext3/ext4/xfs: sync(1) writes the data and allocates the
# delayed blocks.
fs_flush() {
	case $1 in
	btrfs)
		log "+ btrfs filesystem sync $2"
		timeout 300 btrfs filesystem sync "$2" >&2 || die "btrfs filesystem sync $2 exited $?"
		kv flush btrfs-sync
		;;
	zfs) zfs_flush "$3" ;;
	*) kv flush sync ;;
	esac
}

# zfs_txg_timeout: seconds between transaction group commits.  OpenZFS:
# zfs_txg_timeout (5 s) [man4/zfs.4]; zfs-fuse has no such file: it keeps
# the OpenSolaris default of 30 s (measured: 20 MiB written to a fresh
# zfs-fuse pool, `used` moved 29.7 s later).
zfs_txg_timeout() {
	_tt=$(cat /sys/module/zfs/parameters/zfs_txg_timeout 2>/dev/null || true)
	case $_tt in
	'' | *[!0-9]*) printf '30' ;;
	*) printf '%s' "$_tt" ;;
	esac
}

# du_sizes DIR: on-disk and apparent bytes (GNU du -B1, --apparent-size).
du_sizes() {
	kv du_bytes "$(du -s -B1 "$1" | awk '{ print $1 }')"
	kv du_apparent_bytes "$(du -s -B1 --apparent-size "$1" | awk '{ print $1 }')"
}

# df_k MNT: POSIX df in KiB blocks.
df_k() {
	df -P -k "$1"
}

verb_drop_caches() {
	_dc_fs=$(opt fs "" ${1+"$@"})
	sync
	if printf '3\n' >/proc/sys/vm/drop_caches 2>/dev/null; then
		kv drop_caches_method linux-drop_caches
	else
		kv drop_caches_method "none: /proc/sys/vm/drop_caches not writable"
	fi
	if [ "$_dc_fs" = zfs ]; then
		_dc_pool=$(need pool ${1+"$@"})
		check_pool "$_dc_pool"
		_dc_dev=$(resolve "$(need dev ${1+"$@"})")
		if zfs_reimport "$_dc_pool" "$_dc_dev"; then
			kv zfs_cache exported-imported
		else
			case $(zfs_impl) in
			zfs-fuse) kv zfs_cache "kept: pool busy (zfs-fuse keeps its own cache in the daemon)" ;;
			*) kv zfs_cache "kept: pool busy (OpenZFS ARC only partly released by drop_caches)" ;;
			esac
		fi
	fi
}

# mount_source DEV FS: what mount(8) is given: the device itself.
mount_source() {
	printf '%s' "$1"
}

# pool_on_device REAL POOL: the pool REAL (a resolved device) is a vdev of, if any
# (the hook verb_teardown in common.sh uses).
pool_on_device() {
	zpool_vdev_of "$(basename "$1")"
}


# The verbs: one dispatch for every OS (common.sh).
fsmx_main ${1+"$@"}
