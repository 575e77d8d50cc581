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
# "Unused" row [DF sbin/gpt/show.c].
partition_table() {
	if command -v fdisk >/dev/null 2>&1 && fdisk -s "$1" >/dev/null 2>&1; then
		printf 'MBR'
		return 0
	fi
	if command -v gpt >/dev/null 2>&1; then
		# Rows "start size index contents": the index is "-" where there is
		# none; a blank disk is one "Unused" row.
		gpt show "$1" 2>/dev/null | awk '
			NR > 1 && NF >= 3 {
				c = ($3 == "-" || $3 ~ /^[0-9]+$/) ? $4 : $3
				if (c != "Unused") { t = "GPT"; exit }
			}
			END { printf "%s", t }'
	fi
}

# hammer2_pfs DEV: the PFSs of the HAMMER2 volume on DEV, sorted, one a
# line, after a first line "hammer2"; nothing when no volume header of DEV
# is valid.  `hammer2 info DEV` is read-only (open O_RDONLY), reads all 4
# volume headers (0, 2, 4, 6 GiB), picks the best, and prints "DEV:" then
# "    PFS" for every PFS under its super-root; exit status 0 always, errors
# ("Unable to open", "DIOCGPART failed on") on stderr; a slice whose
# partinfo names another fstype/uuid is skipped [DF sbin/hammer2/cmd_info.c
# @f875a8eec79e h2disk_check :270-318, info_callback1/2 :151, :160; the same
# in the later copy @047d51c8; added by b92bfd390c (2015-11-17), so in
# every 6.x].
hammer2_pfs() {
	command -v hammer2 >/dev/null 2>&1 || return 0
	hammer2 info "$1" 2>/dev/null | awk -v d="$1:" '
		$0 == d { f = 1; next }
		f && /^    / { print substr($0, 5) }' | sort | awk 'NR == 1 { print "hammer2" } { print }'
}

# signature DEV: sets SIG (none|fsmx|foreign) and SIG_DETAIL.  Read-only: a
# partition table is foreign (fsmatrix never writes one).  HAMMER2 is
# recognised by `hammer2 info` (all four volume headers, so a volume whose
# header #0 is damaged is still seen) and is fsmatrix's only when its PFSs
# are exactly what make-fs makes, LOCAL and fsmx [DF
# sbin/newfs_hammer2/newfs_hammer2.c: -L adds a PFS beside LOCAL, -L none
# none]: fstyp's HAMMER2 label cannot tell (it is "SUPROOT_<dev>" for ANY
# volume without the PFS the path names, and fstyp fopen()s the path, so
# "da1@fsmx" cannot be probed) [DF usr.sbin/fstyp/hammer2.c read_label].
# Then `fstyp -l -u` prints "<type> <label>", DragonFly adding
# "_<device name>" to HAMMER2 labels [DF usr.sbin/fstyp/fstyp.c, hammer.c,
# hammer2.c]: ufs and hammer labelled fsmx are ours; a hammer2 that
# `hammer2 info` did not read is foreign.
signature() {
	SIG=none
	SIG_DETAIL=
	_sg_pt=$(partition_table "$1")
	if [ -n "$_sg_pt" ]; then
		SIG=foreign
		SIG_DETAIL="partition table: $_sg_pt"
		return 0
	fi
	_sg_h2=$(hammer2_pfs "$1")
	if [ -n "$_sg_h2" ]; then
		_sg_pfs=$(printf '%s\n' "$_sg_h2" | sed 1d | tr '\n' ' ')
		_sg_pfs=${_sg_pfs% }
		SIG_DETAIL="hammer2 PFSs: ${_sg_pfs:-none}"
		if [ "$_sg_pfs" = "$(printf '%s\n' LOCAL "$FSMX_LABEL" | sort | tr '\n' ' ' | sed 's/ $//')" ]; then
			SIG=fsmx
		else
			SIG=foreign
		fi
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
		ufs:"$FSMX_LABEL" | hammer:"$FSMX_LABEL") SIG=fsmx ;;
		hammer2:*) SIG_DETAIL="$SIG_DETAIL (hammer2 info read no PFS)" ;;
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
# DragonFly has no GEOM open counts: mounts (with HAMMER's volumes), swap
# and the root disk are checked one by one.
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
}

# wipe DEV: zero both ends in whole sectors (GPT's backup sits at the end),
# and every HAMMER2 volume header zone inside DEV: HAMMER2 keeps a 64 KiB
# header at the start of each of the first 4 zones of 2 GiB and mounts from
# the best valid copy [DF sys/vfs/hammer2/hammer2_disk.h @f875a8eec79e
# HAMMER2_ZONE_BYTES64 :290, HAMMER2_PBUFSIZE :115, HAMMER2_VOLUME_BYTES
# :1341, HAMMER2_NUM_VOLHDRS :1355; sys/vfs/hammer2/hammer2_vfsops.c
# :2961-2995].  signature (`hammer2 info`, all four) then proves it blank.
wipe() {
	_w_size=$(dev_size_bytes "$1")
	zero_ends "$1" "$_w_size" "$(sector_size "$1")"
	for _w_i in 1 2 3; do
		# the zone start (in 64 KiB blocks) and its header wholly inside DEV
		if bytes_lt "$((_w_i * 32768 + 1))" "$(awk -v s="$_w_size" 'BEGIN { printf "%.0f", int(s / 65536) + 1 }')"; then
			run dd if=/dev/zero of="$1" bs=65536 seek="$((_w_i * 32768))" count=1 conv=notrunc
		fi
	done
	sync
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
# files under MNT get, read back with `hammer2 stat MNT`: a header, then one
# row.  DragonFly 6.4 (cmd_stat.c rewritten in 2022) prints "path ncp
# data-use inode-use comp check quota" with bare values (`lz4:default`
# `xxhash64`); 6.0 and 6.2 print "comp=%s " "check=%s " after inode-use
# [DF sbin/hammer2/cmd_stat.c @f875a8eec79e:81-82].  Both are read; the
# bare spelling is recorded.
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
	_am_stat=$(hammer2 stat "$2" 2>/dev/null | awk 'NR == 2 {
		c = ""; k = ""
		for (i = 5; i <= NF; i++) {
			if ($i ~ /^comp=/) c = substr($i, 6)
			else if ($i ~ /^check=/) k = substr($i, 7)
		}
		if (c == "" && k == "") { c = $5; k = $6 }
		if (c != "" && k != "") print c, k }')
	[ -n "$_am_stat" ] || die "hammer2 stat $2 printed no row with comp and check (as DragonFly 6.0-6.4 print it)"
	kv hammer2.compression "${_am_stat%% *}"
	kv hammer2.check "${_am_stat#* }"
}

# ---------------------------------------------------------------- hammer2 service

# The first HAMMER2 mount on a host starts the HAMMER2 service daemon:
# mount_hammer2 runs system("/sbin/hammer2 -q service") before mount(2)
# [DF sbin/mount_hammer2/mount_hammer2.c @f875a8eec79e cluster_connect
# :213-222]; `hammer2 service` binds INADDR_ANY:987 and, when that fails,
# takes it that one runs and exits 0; else it double-forks a daemon titled
# "hammer2 master listen" [DF sbin/hammer2/cmd_service.c cmd_service :149-198,
# service_thread :224, hammer2_demon :1005], which setproctitle(3) shows as
# "hammer2: hammer2 master listen" [DF lib/libc/gen/setproctitle.c:106-112: "%s: "
# progname first] and `pgrep -f` matches [DF usr.bin/pkill/pkill.c:235, :354: -f
# matches the kvm_getargv arguments].  fsmatrix notes before its first
# HAMMER2 make-fs whether one ran (in the host lock folder, the OS row's
# lock_dir; /var/run is emptied at boot, as the daemon ends), and its
# teardown stops the daemon only when it did not run then.
FSMX_H2_SERVICE_STATE=/var/run/fsmatrix/hammer2-service

# h2_service_pids: the pids of the running hammer2 service daemons.
h2_service_pids() {
	pgrep -f '^hammer2: hammer2 master listen' 2>/dev/null || true
}

# h2_service_note: record (once, until a teardown clears it) whether the
# daemon ran before fsmatrix's first HAMMER2 mount: "preexisting" or "absent".
h2_service_note() {
	[ ! -e "$FSMX_H2_SERVICE_STATE" ] || return 0
	[ -d "${FSMX_H2_SERVICE_STATE%/*}" ] || run mkdir -p -m 0700 "${FSMX_H2_SERVICE_STATE%/*}"
	if [ -n "$(h2_service_pids)" ]; then
		printf 'preexisting\n' >"$FSMX_H2_SERVICE_STATE"
	else
		printf 'absent\n' >"$FSMX_H2_SERVICE_STATE"
	fi
}

# after_teardown DEV (the teardown verb's hook, once the device is dealt
# with): stop the hammer2 service daemon if fsmatrix's HAMMER2 mount started
# it and no HAMMER2 filesystem is mounted any more; never one that ran before.
after_teardown() {
	[ -f "$FSMX_H2_SERVICE_STATE" ] || return 0
	if mount_p | awk '$3 == "hammer2" { f = 1 } END { exit !f }'; then
		kv hammer2_service "kept: a HAMMER2 filesystem is still mounted"
		return 0
	fi
	case $(cat "$FSMX_H2_SERVICE_STATE") in
	absent)
		_at_pids=$(h2_service_pids)
		if [ -n "$_at_pids" ]; then
			# shellcheck disable=SC2086 # one pid a word
			try kill $_at_pids || true
			_at_i=0
			while [ -n "$(h2_service_pids)" ] && [ "$_at_i" -lt 10 ]; do
				sleep 1
				_at_i=$((_at_i + 1))
			done
			if [ -n "$(h2_service_pids)" ]; then
				kv hammer2_service "still running: pid $(h2_service_pids | tr '\n' ' ')"
				return 0
			fi
			kv hammer2_service "stopped: fsmatrix's HAMMER2 mount started it (pid $(printf '%s' "$_at_pids" | tr '\n' ' '))"
		else
			kv hammer2_service "not running"
		fi
		;;
	*) kv hammer2_service "left running: it ran before fsmatrix's first HAMMER2 mount" ;;
	esac
	rm -f "$FSMX_H2_SERVICE_STATE"
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
	# Whether the HAMMER2 service daemon runs (see h2_service_note).
	if [ -n "$(h2_service_pids)" ]; then kv hammer2_service running; else kv hammer2_service not-running; fi
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
		# HAMMER refuses a volume under 10 GB without -f [DF
		# sbin/newfs_hammer/newfs_hammer.c]; -f is not given otherwise.
		if bytes_lt "$_mf_size" 10737418240; then
			log "$_mf_dev is under 10 GB: newfs_hammer needs -f"
			set -- newfs_hammer -f -L "$FSMX_LABEL" ${1+"$@"} "$_mf_dev"
		else
			set -- newfs_hammer -L "$FSMX_LABEL" ${1+"$@"} "$_mf_dev"
		fi
		;;
	hammer2)
		# PFS LOCAL and fsmatrix's, named by -L [DF sbin/newfs_hammer2/newfs_hammer2.c].
		h2_service_note
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
