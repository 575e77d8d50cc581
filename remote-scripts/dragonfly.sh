#!/bin/sh
# shellcheck shell=dash source-path=SCRIPTDIR
# dragonfly.sh: fsmatrix's verbs on a DragonFly 6.x host (HAMMER, HAMMER2, UFS).
# Usage: /bin/sh <dir>/dragonfly.sh VERB name=value ...
# The contract (arguments, stdout keys, exit codes) is docs/remote-scripts.md;
# the OS-neutral verbs (preflight, pg-*, load, run, cat, mount, teardown)
# live in common.sh.  Only DragonFly base commands and the PostgreSQL package
# are used: no lsblk, blkid, wipefs, findmnt, runuser, /proc or /sys, no GEOM
# (geom, gpart, glabel), no ZFS, no `readlink -f`, no `du -A`.  Output
# formats parsed here are cited to DragonFlyBSD/DragonFlyBSD (DF).
set -eu

FSMX_DIR=$(dirname "$0")
# shellcheck source=common.sh
. "$FSMX_DIR/common.sh"

LC_ALL=C
export LC_ALL
PATH=/sbin:/bin:/usr/sbin:/usr/bin:/usr/local/sbin:/usr/local/bin:$PATH
export PATH

# ---------------------------------------------------------------- devices

# resolve PATH: symlinks resolved (realpath(1); DragonFly's readlink has no
# -f [DF usr.bin/stat/stat.c]).  /dev/serno/<serial> names resolve to the disk.
resolve() {
	realpath "$1" 2>/dev/null || printf '%s' "$1"
}

# sysctl_one NAME: one value, or nothing.  DragonFly's sysctl stops at the
# first unknown name (exit 1, the names after it unprinted) [DF
# sbin/sysctl/sysctl.c], so every name is asked alone.
sysctl_one() {
	sysctl -n "$1" 2>/dev/null || true
}

# diskinfo_field DEV FIELD: blksize or size (in bytes) of DEV.  DragonFly's
# diskinfo prints "%-16s blksize=%-4d offset=0x%012jx size=0x%012jx %7.2f GB"
# and reports an error on STDOUT with exit 0 [DF sbin/diskinfo/diskinfo.c]:
# a line without the field is a failure.  The hex size goes through
# printf(1) (awk cannot be trusted with 64-bit hex).
diskinfo_field() {
	_dfv=$(diskinfo "$1" 2>/dev/null | awk -v f="$2=" '{ for (i = 2; i <= NF; i++) if (index($i, f) == 1) { print substr($i, length(f) + 1); exit } }')
	case $2:$_dfv in
	*:) ;;
	size:0x*[!0-9a-fA-F]* | blksize:*[!0-9]*) ;;
	size:0x*) printf '%d' "$_dfv" ;;
	blksize:*) printf '%s' "$_dfv" ;;
	esac
}

# dev_size_bytes DEV: the media size in bytes (diskinfo).
dev_size_bytes() {
	_ds=$(diskinfo_field "$1" size)
	case $_ds in
	'' | *[!0-9]*) die "diskinfo $1: no media size" ;;
	esac
	printf '%s' "$_ds"
}

# sector_size DEV: the logical sector size (diskinfo blksize), 512 when unknown.
sector_size() {
	_ss=$(diskinfo_field "$1" blksize)
	case $_ss in '' | 0 | *[!0-9]*) _ss=512 ;; esac
	printf '%s' "$_ss"
}

# kern_disks: the whole disks the kernel knows, one a line (`sysctl -n
# kern.disks` is space-separated [DF sys/kern/subr_disk.c]).
kern_disks() {
	sysctl_one kern.disks | tr ' ' '\n' | sed '/^$/d'
}

# disk_of NAME: the whole disk the device NAME (relative to /dev) is: itself
# when it is one of kern.disks, or the disk whose slice or partition it is
# (da1s1, da1s1d).  Empty when none.
disk_of() {
	for _do_d in $(kern_disks); do
		case $1 in
		"$_do_d" | "$_do_d"s[0-9]*)
			printf '%s' "$_do_d"
			return 0
			;;
		esac
	done
	return 0
}

# on_names DEV NAMES: DEV (a /dev path or name) is one of NAMES or a slice or
# partition of one.
on_names() {
	_on=$(resolve "$1")
	_on=${_on#/dev/}
	for _on_n in $2; do
		case $_on in
		"$_on_n" | "$_on_n"s[0-9]*) return 0 ;;
		esac
	done
	return 1
}

# serial_of DEV: the disk's serial number: the name of its /dev/serno alias
# (devfs makes /dev/serno/<serial> for every disk that reports one, and
# <serial>.s1, .s1d for its slices and partitions).  Empty when it has none.
serial_of() {
	_so_dev=$(resolve "$1")
	for _so in /dev/serno/*; do
		[ -e "$_so" ] || continue
		if [ "$(resolve "$_so")" = "$_so_dev" ]; then
			printf '%s' "${_so##*/}"
			return 0
		fi
	done
	return 0
}

# dev_ident DEV: what tells the disk at DEV from another put at the same path,
# read-only, as `field=value;...`: the size in bytes and the serial.
dev_ident() {
	_di_serial=$(serial_of "$1")
	printf 'size=%s' "$(dev_size_bytes "$1")"
	[ -z "$_di_serial" ] || printf ';serial=%s' "$_di_serial"
	_di_name=$(resolve "$1")
	_di_name=${_di_name#/dev/}
	_di_disk=$(disk_of "$_di_name")
	if [ -n "$_di_disk" ] && [ "$_di_disk" != "$_di_name" ]; then
		printf ';part=%s' "$_di_name"
	fi
}

# mount_p: `mount -p`: "source\tmountpoint\ttype options\tfreq pass"
# [DF sbin/mount/mount.c putfsent]: awk's whitespace fields are $1 source,
# $2 mount point, $3 type, $4 options.
mount_p() {
	mount -p
}

# mount_device SOURCE TYPE MNT: the device path a mount's source stands for.
# HAMMER shows its label as the source ("fsmx on /mnt (hammer, local)"):
# `hammer volume-list MNT` names its volumes [DF sbin/hammer/cmd_volume.c];
# HAMMER2 shows "special@LABEL" [DF sbin/mount_hammer2/mount_hammer2.c];
# names without /dev/ (serno/X.s1d) are under /dev.  Several volumes are
# printed one a line.
mount_device() {
	case $2 in
	hammer)
		hammer volume-list "$3" 2>/dev/null || printf '%s\n' "$1"
		;;
	*)
		_md=${1%@*}
		case $_md in
		/*) ;;
		*:*) ;;
		*) _md=/dev/$_md ;;
		esac
		printf '%s\n' "$_md"
		;;
	esac
}

# mounted_from NAMES MOUNT_P: the first mount in MOUNT_P (`mount -p`) on one
# of the disks NAMES, as "<source> on <mountpoint>"; nothing if none.
mounted_from() {
	printf '%s\n' "$2" | while read -r _mf_src _mf_mnt _mf_type _mf_rest; do
		[ -n "$_mf_src" ] || continue
		for _mf_d in $(mount_device "$_mf_src" "$_mf_type" "$_mf_mnt"); do
			case $_mf_d in /dev/*) ;; *) continue ;; esac
			if on_names "$_mf_d" "$1"; then
				printf '%s on %s\n' "$_mf_src" "$_mf_mnt"
				return 0
			fi
		done
	done
}

# root_disks: the whole disks holding `/`: from the `/` line of `mount -p`
# and from the loader's vfs.root.mountfrom ("hammer2:serno/X.s1d",
# "ufs:/dev/da0s1a"; kenv -q prints nothing when unset) [DF usr.bin/kenv/kenv.c].
root_disks() {
	_rd_line=$(mount_p | awk '$2 == "/" { line = $1 " " $3 } END { print line }')
	_rd_kenv=$(kenv -q vfs.root.mountfrom 2>/dev/null || true)
	{
		if [ -n "$_rd_line" ]; then
			mount_device "${_rd_line%% *}" "${_rd_line#* }" /
		fi
		if [ -n "$_rd_kenv" ]; then
			mount_device "${_rd_kenv#*:}" "${_rd_kenv%%:*}" /
		fi
	} | while read -r _rd; do
		_rd=$(resolve "$_rd")
		disk_of "${_rd#/dev/}"
		printf '\n'
	done | sed '/^$/d' | sort -u
}

# partition_table DEV: what partition table DEV carries, or nothing.
# `fdisk -s` exits 0 and lists the slices of an MBR, 1 without one [DF
# sbin/fdisk/fdisk.c]; `gpt show` lists every region, a blank disk one
# "Unused" row [DF sbin/gpt/show.c].  `gpt -r`: without it gpt opens the
# disk O_RDWR|O_EXCL even to show it [DF sbin/gpt/gpt.c gpt_open(), main()
# @01ead7c5]; this is a read-only probe.  `gpt -r`: without it gpt opens the
# disk O_RDWR|O_EXCL even to show it [DF sbin/gpt/gpt.c gpt_open(), main()
# @01ead7c5]; this is a read-only probe.
partition_table() {
	if command -v fdisk >/dev/null 2>&1 && fdisk -s "$1" >/dev/null 2>&1; then
		printf 'MBR'
		return 0
	fi
	if command -v gpt >/dev/null 2>&1; then
		# Rows "start size index contents": the index is "-" where there is
		# none; a blank disk is one "Unused" row.
		gpt -r show "$1" 2>/dev/null | awk '
			NR > 1 && NF >= 3 {
				c = ($3 == "-" || $3 ~ /^[0-9]+$/) ? $4 : $3
				if (c != "Unused") { t = "GPT"; exit }
			}
			END { printf "%s", t }'
	fi
}

# signature DEV: sets SIG (none|fsmx|foreign) and SIG_DETAIL.  Read-only: a
# partition table is foreign (fsmatrix never writes one); `fstyp -l -u`
# prints "<type> <label>", DragonFly adding "_<device name>" to HAMMER and
# HAMMER2 labels [DF usr.sbin/fstyp/fstyp.c, hammer.c, hammer2.c]: ufs and
# hammer labelled fsmx are ours; HAMMER2's label is the PFS the device's
# partition letter names (DATA on a whole disk) or else the super-root's own
# name, SUPROOT [DF sbin/newfs_hammer2/mkfs_hammer2.c]: fsmatrix's has only
# LOCAL and fsmx, so `hammer2 SUPROOT_da1` is ours.
signature() {
	SIG=none
	SIG_DETAIL=
	_sg_pt=$(partition_table "$1")
	if [ -n "$_sg_pt" ]; then
		SIG=foreign
		SIG_DETAIL="partition table: $_sg_pt"
		return 0
	fi
	if _sg_out=$(fstyp -l -u "$1" 2>&1); then
		_sg_type=${_sg_out%% *}
		_sg_label=
		case $_sg_out in *' '*) _sg_label=${_sg_out#* } ;; esac
		_sg_label=${_sg_label%"_${1##*/}"}
		SIG_DETAIL="$_sg_type label=$_sg_label"
		SIG=foreign
		case $_sg_type:$_sg_label in
		ufs:"$FSMX_LABEL" | hammer:"$FSMX_LABEL" | hammer2:"$FSMX_LABEL" | hammer2:SUPROOT) SIG=fsmx ;;
		esac
		return 0
	fi
	case $_sg_out in
	*"filesystem not recognized"*) ;;
	*)
		SIG=foreign
		SIG_DETAIL="fstyp: $(printf '%s' "$_sg_out" | tr '\n' ' ')"
		return 0
		;;
	esac
	if ! first_mib_zero "$1"; then
		SIG=foreign
		SIG_DETAIL="no known signature but the first MiB is not zero"
	fi
	return 0
}

# guard_in_use DEV REAL (the hook of guard in common.sh): refuse (exit 3)
# when DEV (REAL: resolved) is not a disk this host can free or is in use.
# DragonFly has no GEOM open counts: mounts (with HAMMER's volumes, of the
# disk, its slices and partitions, by /dev/serno names too), swap (also on a
# slice), the root disk and device-mapper holders are checked one by one;
# FSMX_UNCHECKED_HOLDERS are not.
guard_in_use() {
	_g_dev=$1
	_g_real=$2
	# DragonFly disks are character devices (devfs has no block devices).
	{ [ -c "$_g_real" ] || [ -b "$_g_real" ]; } || refuse "$_g_dev" "not a disk device"
	[ -n "$(diskinfo_field "$_g_real" size)" ] || refuse "$_g_dev" "not a disk (diskinfo $_g_real: $(diskinfo "$_g_real" 2>&1 | head -n 1))"
	_g_name=${_g_real#/dev/}
	_g_disk=$(disk_of "$_g_name")
	[ -n "$_g_disk" ] || refuse "$_g_dev" "cannot tell which disk $_g_name is on (not in kern.disks, not a slice of one); refused rather than assumed free"
	_g_mp=$(mount_p) || refuse "$_g_dev" "cannot run mount -p to tell whether it is mounted; refused rather than assumed free"
	_g_where=$(mounted_from "$_g_name" "$_g_mp")
	[ -z "$_g_where" ] || refuse "$_g_dev" "mounted: $_g_where"
	# swapinfo -k (pstat -s): "Device 1K-blocks Used Avail Capacity Type",
	# then one row a device [DF usr.sbin/pstat/pstat.c].
	_g_swap=$(swapinfo -k 2>/dev/null) || refuse "$_g_dev" "cannot run swapinfo to tell whether it is swap; refused rather than assumed free"
	_g_sw=$(printf '%s\n' "$_g_swap" | awk 'NR > 1 && $1 != "Total" { print $1 }')
	for _g_s in $_g_sw; do
		case $_g_s in /*) ;; *) _g_s=/dev/$_g_s ;; esac
		if on_names "$_g_s" "$_g_name"; then
			refuse "$_g_dev" "in use as swap ($_g_s)"
		fi
	done
	if in_words "$_g_disk" "$(root_disks)"; then
		refuse "$_g_dev" "on the disk holding / ($_g_disk)"
	fi
	# device-mapper: dm(4) devices (dmsetup, cryptsetup, lvm are in base [DF
	# gnu/sbin/dmsetup, gnu/sbin/cryptsetup, gnu/sbin/lvm]; tcplay and
	# cryptdisks build on dm too) hold the disks they are built on.
	# `dmsetup deps` prints "NAME: N dependencies\t: (MAJ, MIN) ..." per dm
	# device, the kernel's list of each table's devices [DF
	# contrib/lvm2/dist/tools/dmsetup.c _deps(); sys/dev/disk/dm/dm_ioctl.c
	# dm_table_deps_ioctl()]: the (major, minor) of DEV or of any slice of it
	# (`stat -f '%Hr %Lr'` [DF usr.bin/stat/stat.c]) there is a holder.
	if command -v dmsetup >/dev/null 2>&1; then
		_g_deps=$(dmsetup deps 2>/dev/null) || _g_deps=
		for _g_node in "/dev/$_g_name" "/dev/$_g_name"s[0-9]*; do
			[ -e "$_g_node" ] || continue
			_g_mm=$(stat -L -f '%Hr %Lr' "$_g_node" 2>/dev/null) || continue
			_g_holder=$(printf '%s\n' "$_g_deps" | awk -v mm="(${_g_mm% *}, ${_g_mm#* })" '
				index($0, mm) { n = $1; sub(/:$/, "", n); print n; exit }')
			[ -z "$_g_holder" ] || refuse "$_g_dev" "held by the device-mapper device $_g_holder (dmsetup deps: $_g_node is (${_g_mm% *}, ${_g_mm#* }))"
		done
	fi
}

# What guard_in_use cannot see on DragonFly (no GEOM open counts): vinum(8)
# volumes and ccd(4) concatenations built on a disk hold it without a mount,
# swap or dm device; `check` and `facts` say so.
FSMX_UNCHECKED_HOLDERS="vinum ccd"

# wipe DEV: zero both ends in whole sectors (a HAMMER2 volume header sits
# at the start, GPT's backup at the end).
wipe() {
	zero_ends "$1" "$(dev_size_bytes "$1")" "$(sector_size "$1")"
}

check_fs() {
	case $1 in
	ufs | hammer | hammer2) ;;
	*) usage_die "fs=$1 is not one of ufs hammer hammer2 (the filesystems of dragonfly.sh)" ;;
	esac
}

# mount_source DEV FS: what mount(8) is given: HAMMER2 mounts a PFS by
# label, "special@LABEL" [DF sbin/mount_hammer2/mount_hammer2.c].
mount_source() {
	case $2 in
	hammer2) printf '%s@%s' "$1" "$FSMX_LABEL" ;;
	*) printf '%s' "$1" ;;
	esac
}

# child_pids PID: the pids of PID's children, one a line (pg_wake).
child_pids() {
	pgrep -P "$1" 2>/dev/null
}

# list_flags MNT: the flags of the `mount` list for MNT ("%s on %s (%s,
# flag, ...)" [DF sbin/mount/mount.c]), comma-separated, type first.
list_flags() {
	mount | awk -v mp="$1" '
		{ i = index($0, " on " mp " ("); if (i == 0) next
		  rest = substr($0, i + length(" on " mp " (")); sub(/\)$/, "", rest); flags = rest }
		END { print flags }'
}

# mount_line MNT: "device fstype options" of the last mount on MNT: the
# source as the device it stands for (a HAMMER label or a HAMMER2
# special@LABEL mapped back), the options as `mount -p` gives them, then
# the flags only the `mount` list shows: soft-updates, HAMMER's nohistory
# and master [DF sys/vfs/hammer/hammer_vfsops.c].
mount_line() {
	_ml=$(mount_p | awk -v mp="$1" '$2 == mp { line = $1 " " $3 " " $4 } END { if (line != "") print line }')
	[ -n "$_ml" ] || return 0
	_ml_src=${_ml%% *}
	_ml_rest=${_ml#* }
	_ml_dev=$(mount_device "$_ml_src" "${_ml_rest%% *}" "$1" | head -n 1)
	_ml_extra=$(list_flags "$1" | tr ',' '\n' | sed 's/^ *//; s/ *$//' |
		awk '$0 == "soft-updates" || $0 == "nohistory" || $0 ~ /^master/ { printf ",%s", $0 }')
	printf '%s %s%s\n' "$_ml_dev" "$_ml_rest" "$_ml_extra"
}

# after_mount FS MNT COMP (the mount verb's hook): on HAMMER2, `hammer2
# setcomp COMP MNT` (none|autozero|lz4|zlib[:6-9]; prints
# "MNT\tcomp_algo=0x..") [DF sbin/hammer2/cmd_setcomp.c], then what new
# files under MNT get, read back with `hammer2 stat MNT`: a header, then
# "path ncp data-use inode-use comp check quota", comp as `lz4:default`
# [DF sbin/hammer2/cmd_stat.c].
after_mount() {
	_am_comp=$3
	if [ "$1" != hammer2 ]; then
		[ -z "$_am_comp" ] || usage_die "comp= is for fs=hammer2, not fs=$1"
		return 0
	fi
	case $_am_comp in
	'' | none | autozero | lz4 | zlib | zlib:[6-9]) ;;
	*) usage_die "comp=$_am_comp is not none, autozero, lz4, zlib or zlib:6..9" ;;
	esac
	[ -z "$_am_comp" ] || run hammer2 setcomp "$_am_comp" "$2"
	_am_stat=$(hammer2 stat "$2" 2>/dev/null | awk 'NR == 2 { print $5, $6 }')
	[ -n "$_am_stat" ] || die "hammer2 stat $2 printed no row"
	kv hammer2.compression "${_am_stat%% *}"
	kv hammer2.check "${_am_stat#* }"
}

# ---------------------------------------------------------------- verbs

# device_facts PREFIX DEV (the hook of facts_devices in common.sh): the
# facts of the disk DEV as PREFIX.size_bytes, .model, .rotational,
# .logical_block_size, .ident; fails (printing nothing) when DEV is no disk.
device_facts() {
	{ [ -c "$2" ] || [ -b "$2" ]; } && [ -n "$(diskinfo_field "$2" size)" ] || return 1
	kv "$1.size_bytes" "$(dev_size_bytes "$2")"
	# diskinfo tells neither the model nor the rotation rate.
	kv "$1.model" ""
	kv "$1.rotational" unknown
	kv "$1.logical_block_size" "$(sector_size "$2")"
	kv "$1.ident" "$(dev_ident "$2")"
}

verb_facts() {
	kv os dragonfly
	kv kernel "$(uname -r)"
	kv kernel_version "$(uname -v)"
	kv arch "$(uname -m)"
	kv distro "DragonFly $(uname -r)"
	kv hostname "$(uname -n)"
	kv uid "$(id -u)"
	kv user "$(id -un)"
	kv cpu_model "$(sysctl_one hw.model)"
	kv cpu_count "$(sysctl_one hw.ncpu)"
	kv mem_bytes "$(sysctl_one hw.physmem)"
	kv page_size "$(sysctl_one hw.pagesize)"
	# none qemu ... kvm vmware ... vkernel unknown [DF sys/kern/subr_param.c].
	_f_vm=$(sysctl_one kern.vmm_guest)
	kv vm_guest "${_f_vm:-unknown}"
	facts_devices ${1+"$@"}
	facts_pg_tools "newfs newfs_hammer newfs_hammer2 hammer hammer2" ${1+"$@"}
	# The newfs tools have no version of their own: they are the base system's.
	kv newfs_version "$(uname -r)"
	kv zfs_impl none
	kv holders_unchecked "$FSMX_UNCHECKED_HOLDERS"
}

# hammer_free_bytes SIZE: the bytes newfs_hammer counts free on a one-volume
# HAMMER of SIZE bytes before it decides on -f: count_freemap() big-blocks
# (8 MB) [DF sbin/hammer/ondisk.c @005a4da7] of the buffer area left after
# the 256 KB header junk, the boot area and the memory log [DF
# sbin/newfs_hammer/newfs_hammer.c format_volume()], less one big-block for
# the layer-1 freemap and one per 4 TB layer-2 region.  The boot area and the
# memory log are taken at their older, larger default (64 MB and 1 GB, halved
# while above SIZE/256 [DF newfs_hammer.c @e694ed2f main()]); the newest
# revision reserves less (32 KB, 256 KB): an -f that is not needed only
# forces, one that is missing fails make-fs.
hammer_free_bytes() {
	_hf_boot=67108864
	while [ "$_hf_boot" -gt $(($1 / 256)) ] && [ "$_hf_boot" -gt 0 ]; do _hf_boot=$((_hf_boot / 2)); done
	_hf_mem=1073741824
	while [ "$_hf_mem" -gt $(($1 / 256)) ] && [ "$_hf_mem" -gt 0 ]; do _hf_mem=$((_hf_mem / 2)); done
	_hf_buf=$(($1 / 16384 * 16384 - 262144 - _hf_boot - _hf_mem))
	if [ "$_hf_buf" -le 0 ]; then
		printf 0
		return 0
	fi
	_hf_end=$((_hf_buf / 8388608 * 8388608))
	_hf_n=$((_hf_end / 8388608 - 1 - (_hf_end + 4398046511103) / 4398046511104))
	[ "$_hf_n" -gt 0 ] || _hf_n=0
	printf '%s' $((_hf_n * 8388608))
}

verb_make_fs() {
	_mf_fs=$(need fs ${1+"$@"})
	check_fs "$_mf_fs"
	_mf_ident=$(need ident ${1+"$@"})
	case $_mf_fs in
	ufs) _mf_tool=newfs ;;
	hammer) _mf_tool=newfs_hammer ;;
	hammer2) _mf_tool=newfs_hammer2 ;;
	esac
	command -v "$_mf_tool" >/dev/null 2>&1 || die "$_mf_tool not found"
	# The guard comes before ANY write to the device.
	guard_same_disk "$_mf_ident" ${1+"$@"}
	_mf_dev=$G_REAL
	_mf_size=$(dev_size_bytes "$_mf_dev")
	wipe "$_mf_dev"
	for _mf_a in ${1+"$@"}; do
		shift
		case $_mf_a in
		mkfs_opt=*) set -- ${1+"$@"} "${_mf_a#mkfs_opt=}" ;;
		zfs_prop=* | pool_prop=*) usage_die "${_mf_a%%=*}= is for ZFS, which DragonFly does not have" ;;
		esac
	done
	case $_mf_fs in
	ufs)
		# DragonFly's newfs makes UFS1 (no -O 2, no -j journal); -L takes
		# alphanumerics only [DF sbin/newfs/newfs.c].
		set -- newfs -L "$FSMX_LABEL" ${1+"$@"} "$_mf_dev"
		;;
	hammer)
		# HAMMER refuses without -f when the FREE big-blocks after its
		# reservations come to under 10 GB, not the raw size [DF
		# sbin/newfs_hammer/newfs_hammer.c format_volume()]: see
		# hammer_free_bytes; -f is not given otherwise.
		if bytes_lt "$(hammer_free_bytes "$_mf_size")" 10737418240; then
			log "$_mf_dev has under 10 GB of free HAMMER big-blocks: newfs_hammer needs -f"
			set -- newfs_hammer -f -L "$FSMX_LABEL" ${1+"$@"} "$_mf_dev"
		else
			set -- newfs_hammer -L "$FSMX_LABEL" ${1+"$@"} "$_mf_dev"
		fi
		;;
	hammer2)
		# PFS LOCAL and fsmatrix's, named by -L [DF sbin/newfs_hammer2/newfs_hammer2.c].
		set -- newfs_hammer2 -L "$FSMX_LABEL" ${1+"$@"} "$_mf_dev"
		;;
	esac
	_mf_t0=$(now_ms)
	run ${1+"$@"}
	_mf_t1=$(now_ms)
	if [ "$_mf_fs" = ufs ]; then
		# What newfs made: soft updates on or off, on STDERR [DF sbin/tunefs/tunefs.c].
		tunefs -p "$_mf_dev" 2>&1 | sed -n 's/^tunefs: //p' >&2 || true
	fi
	kv fs "$_mf_fs"
	kv label "$FSMX_LABEL"
	kv mkfs_ms "$((_mf_t1 - _mf_t0))"
	kv mkfs_cmd "$(quote_all ${1+"$@"})"
}

# fs_flush FS MNT POOL: after sync(1), what makes FS's sizes true.  DragonFly
# has no ZFS (check_fs refuses it); UFS allocates blocks as they are written
# and sync(2) asks HAMMER and HAMMER2 to flush too (their own commands,
# `hammer synctid`, `hammer2` flushes, are not used: uncertain whether they
# would change du): flush=sync.
fs_flush() {
	kv flush sync
}

# du_sizes DIR: on-disk bytes from du -k ("%lld\t%s" [DF usr.bin/du/du.c]);
# DragonFly's du has no -A, so the apparent size is st_size summed over
# every entry (stat -f %z [DF usr.bin/stat/stat.c]).  printf %.0f: mawk
# prints 2.7e+11 past 2^31.
du_sizes() {
	kv du_bytes "$(du -s -k "$1" | awk '{ printf "%.0f\n", $1 * 1024 }')"
	kv du_apparent_bytes "$(find "$1" -exec stat -f %z {} + | awk '{ n += $1 } END { printf "%.0f\n", n }')"
}

# df_k MNT: df in KiB blocks [DF bin/df/df.c].
df_k() {
	df -k "$1"
}

# mount_of_dev DEV: "mountpoint options" of the mount of DEV (its source
# mapped to a device as mount_line does), the options as mount -o takes
# them again: `mount -p`'s, plus HAMMER's nohistory from the list.
mount_of_dev() {
	mount_p | while read -r _mo_src _mo_mnt _mo_type _mo_opts _mo_rest; do
		case $_mo_type in ufs | hammer | hammer2) ;; *) continue ;; esac
		for _mo_d in $(mount_device "$_mo_src" "$_mo_type" "$_mo_mnt"); do
			if [ "$(resolve "$_mo_d")" = "$1" ]; then
				if list_flags "$_mo_mnt" | tr ',' '\n' | grep -qx ' *nohistory'; then
					_mo_opts="$_mo_opts,nohistory"
				fi
				printf '%s %s\n' "$_mo_mnt" "$_mo_opts"
				return 0
			fi
		done
	done
}

# DragonFly has no drop_caches: a filesystem's cached pages go with an
# unmount (mounted again with the same options).  It needs the filesystem
# idle: the worker stops PostgreSQL around this verb.
verb_drop_caches() {
	_dc_fs=$(opt fs "" ${1+"$@"})
	sync
	if [ -z "$_dc_fs" ]; then
		kv drop_caches_method "none: no fs= given (DragonFly has no drop_caches)"
		return 0
	fi
	check_fs "$_dc_fs"
	_dc_dev=$(resolve "$(need dev ${1+"$@"})")
	_dc_line=$(mount_of_dev "$_dc_dev")
	if [ -z "$_dc_line" ]; then
		kv drop_caches_method "none: $_dc_dev is not mounted"
		return 0
	fi
	_dc_mnt=${_dc_line%% *}
	_dc_opts=${_dc_line#* }
	if try umount "$_dc_mnt"; then
		run mount -t "$_dc_fs" -o "$_dc_opts" "$(mount_source "$_dc_dev" "$_dc_fs")" "$_dc_mnt"
		kv drop_caches_method "$_dc_fs-umount-mount"
	else
		kv drop_caches_method "none: umount $_dc_mnt failed (busy); $_dc_fs cache kept"
	fi
}

# pool_on_device REAL POOL: DragonFly has no ZFS: never a pool.
pool_on_device() {
	return 0
}

# The verbs: one dispatch for every OS (common.sh).
fsmx_main ${1+"$@"}
