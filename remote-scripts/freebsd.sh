#!/bin/sh
# shellcheck shell=dash source-path=SCRIPTDIR
# freebsd.sh: fsmatrix's verbs on a FreeBSD 13/14 host (UFS2 and OpenZFS).
# Usage: /bin/sh <dir>/freebsd.sh VERB name=value ...
# The contract (arguments, stdout keys, exit codes) is docs/remote-scripts.md;
# the OS-neutral verbs (preflight, pg-*, load, run, cat) live in common.sh.
# Only FreeBSD base commands and the PostgreSQL package are used: no lsblk,
# blkid, wipefs, findmnt, runuser, /proc or /sys.  Output formats parsed here
# are cited to freebsd/freebsd-src (FB) and openzfs/zfs (OZ) where parsed.
set -eu

FSMX_DIR=$(dirname "$0")
# shellcheck source=common.sh
. "$FSMX_DIR/common.sh"

LC_ALL=C
export LC_ALL
PATH=/sbin:/bin:/usr/sbin:/usr/bin:/usr/local/sbin:/usr/local/bin:$PATH
export PATH

# ---------------------------------------------------------------- devices

# resolve PATH: symlinks resolved (realpath(1) is in FreeBSD's base).
resolve() {
	realpath "$1" 2>/dev/null || printf '%s' "$1"
}

# geom_name DEV: the GEOM provider name of a /dev path (ada1, ada1p2,
# gpt/data): the path relative to /dev.
geom_name() {
	_gn=$(resolve "$1")
	printf '%s' "${_gn#/dev/}"
}

# diskinfo_field DEV LABEL: one value of `diskinfo -v DEV`, whose lines are
# printf("\t%-12s\t# <label>\n") [FB usr.sbin/diskinfo/diskinfo.c]: the
# first line whose label starts with LABEL ("mediasize in bytes (20G)"), its
# value's padding trimmed.  Empty when diskinfo fails or lacks the line.
diskinfo_field() {
	diskinfo -v "$1" 2>/dev/null | awk -F '\t' -v want="# $2" '
		index($3, want) == 1 { v = $2; sub(/ +$/, "", v); print v; exit }'
}

# dev_size_bytes DEV: the media size in bytes (diskinfo).
dev_size_bytes() {
	_ds=$(diskinfo_field "$1" "mediasize in bytes")
	case $_ds in
	'' | *[!0-9]*) die "diskinfo -v $1: no media size" ;;
	esac
	printf '%s' "$_ds"
}

# sector_size DEV: the logical sector size (diskinfo), 512 when unknown.
sector_size() {
	_ss=$(diskinfo_field "$1" sectorsize)
	case $_ss in '' | *[!0-9]*) _ss=512 ;; esac
	printf '%s' "$_ss"
}

# kern_disks: the whole disks the kernel knows, one a line (`sysctl -n
# kern.disks` is space-separated, newest first).  Only the DISK class's
# geoms: g_kern_disks walks g_disk_class.geom [FB sys/geom/geom_disk.c
# g_kern_disks, 14.1], so cd(4) and ada/da/nvd disks are there but md(4)
# memory disks (the MD class) are not: an md device is no disk to the guard.
kern_disks() {
	sysctl -n kern.disks 2>/dev/null | tr ' ' '\n' | sed '/^$/d'
}

# label_component NAME: the provider a glabel name (gpt/x, gptid/..,
# diskid/DISK-.., label/x, ufsid/..) stands for: `glabel status -s` prints
# "name status components" [FB sbin/geom/core/geom.c status_one_geom].
# Empty when glabel is absent or NAME is no label.
label_component() {
	command -v glabel >/dev/null 2>&1 || return 0
	glabel status -s 2>/dev/null | awk -v n="$1" '$1 == n { print $3; exit }'
}

# disk_of NAME: the whole disk the provider NAME lives on: itself when it is
# one of kern.disks, the disk whose partition (ada1p2, da0s1a) it is, or the
# disk under a glabel name.  Empty when none is found.
disk_of() {
	_do_disks=$(kern_disks)
	for _do_d in $_do_disks; do
		[ "$_do_d" = "$1" ] && {
			printf '%s' "$_do_d"
			return 0
		}
	done
	for _do_d in $_do_disks; do
		case $1 in
		"$_do_d"p[0-9]* | "$_do_d"s[0-9]*)
			printf '%s' "$_do_d"
			return 0
			;;
		esac
	done
	_do_c=$(label_component "$1")
	if [ -n "$_do_c" ] && [ "$_do_c" != "$1" ]; then
		disk_of "$_do_c"
	fi
	return 0
}

# on_names PROVIDER NAMES: PROVIDER (a /dev path or a provider name) is one
# of NAMES, a partition of one, or a glabel name for one of them.
on_names() {
	_on=${1#/dev/}
	for _on_n in $2; do
		case $_on in
		"$_on_n" | "$_on_n"p[0-9]* | "$_on_n"s[0-9]*) return 0 ;;
		esac
	done
	_on_c=$(label_component "$_on")
	if [ -n "$_on_c" ] && [ "$_on_c" != "$_on" ]; then
		on_names "$_on_c" "$2"
		return
	fi
	return 1
}

# clean_value TEXT: one line of printable words, `;` dropped (it separates
# an identity's fields), "(null)" (GEOM's empty attribute) as empty.
clean_value() {
	printf '%s' "$1" | tr -c '[:graph:]' ' ' | tr -d ';' | tr -s ' ' | sed 's/^ //; s/ $//; s/^(null)$//'
}

# geom_disk_field DISK KEY: one `KEY: value` line of `geom disk list DISK`
# [FB sbin/geom/core/geom.c list_one_provider/list_one_geom: "   Mode: r0w0e0",
# then the driver's config lines "   descr: ...", "   lunid: ...", "   ident: ..."].
geom_disk_field() {
	geom disk list "$1" 2>/dev/null | sed -n "s/^ *$2: *//p" | head -n 1
}

# dev_ident DEV: what tells the disk at DEV from another disk put at the same
# path, read-only, as `field=value;...` (fields without a value left out):
# size in bytes (diskinfo), the disk's model (`Disk descr.`), serial (`Disk
# ident.`), WWID (GEOM's lunid), and `part=<provider>` for a partition.
dev_ident() {
	_di_name=$(geom_name "$1")
	_di_disk=$(disk_of "$_di_name")
	_di_part=
	if [ -n "$_di_disk" ] && [ "$_di_disk" != "$_di_name" ]; then
		_di_part=$_di_name
	fi
	_di_wwid=
	[ -z "$_di_disk" ] || _di_wwid=$(clean_value "$(geom_disk_field "$_di_disk" lunid)")
	_di_sep=
	for _di_f in \
		"size=$(dev_size_bytes "$1")" \
		"model=$(clean_value "$(diskinfo_field "$1" "Disk descr.")")" \
		"serial=$(clean_value "$(diskinfo_field "$1" "Disk ident.")")" \
		"wwid=$_di_wwid" \
		"part=$_di_part"; do
		case $_di_f in *=) continue ;; esac
		printf '%s%s' "$_di_sep" "$_di_f"
		_di_sep=';'
	done
}

# mount_p: `mount -p`, fstab-style: source, mount point, fstype, options,
# freq, pass, whitespace-separated [FB sbin/mount/mount.c putfsent].
mount_p() {
	mount -p
}

# mounted_from NAMES MOUNT_P: the first mount in MOUNT_P (`mount -p`'s
# output) whose source is on one of NAMES, as "<source> on <mountpoint>";
# nothing if none.
mounted_from() {
	printf '%s\n' "$2" | while read -r _mf_src _mf_mnt _mf_rest; do
		case $_mf_src in /dev/*) ;; *) continue ;; esac
		if on_names "$_mf_src" "$1"; then
			printf '%s on %s\n' "$_mf_src" "$_mf_mnt"
			return 0
		fi
	done
}

# zfs_loaded: true when the zfs kernel module is loaded, asked without
# loading it: `kldstat -q -m zfs` exits 0 when modfind("zfs") finds it, 1
# when not, printing nothing [FB sbin/kldstat/kldstat.c main, getopt
# "dhi:m:n:qv", 14.x].  Every zpool or zfs subcommand run by root LOADS it
# (libzfs_init -> libzfs_load_module: `if (modfind("zfs") < 0)
# kldload(ZFS_KMOD)` [OZ zfs-2.2.6 lib/libzfs/os/freebsd/libzfs_compat.c:
# 232-246, lib/libzfs/libzfs_util.c:1043]), so the read-only verbs (facts,
# preflight) call neither unless this says yes.  Without kldstat nothing
# can be told: true, so that the guard still asks zpool (safety first).
zfs_loaded() {
	command -v kldstat >/dev/null 2>&1 || return 0
	kldstat -q -m zfs 2>/dev/null
}

# zpool_vdev_of NAMES [POOL]: the imported pool (or only POOL) with a vdev
# on one of NAMES.  `zpool status -P` prints vdevs as full paths, indented
# under "config:" [OZ cmd/zpool/zpool_main.c print_status_config].  No zfs
# module loaded: no pool is imported, and zpool is not run (it would load
# the module, see zfs_loaded).  Fails closed: when `zpool status` fails,
# prints "?" and the reason, and the guard refuses.
zpool_vdev_of() {
	command -v zpool >/dev/null 2>&1 || return 0
	zfs_loaded || return 0
	if ! _zv_status=$(timeout 20 zpool status -P ${2:+"$2"} 2>&1); then
		if [ -n "${2:-}" ]; then
			return 0
		fi
		printf '?zpool status -P failed: %s\n' "$(printf '%s' "$_zv_status" | head -n 1)"
		return 0
	fi
	printf '%s\n' "$_zv_status" | awk '$1 == "pool:" { pool = $2; next } pool != "" && $1 ~ /^\// { print pool, $1 }' |
		while read -r _zv_pool _zv_vdev; do
			# drop-caches imports through a folder of links to /dev: such a
			# vdev path names the /dev node by its last part.
			case $_zv_vdev in */fsmx-import.*/*) _zv_vdev=/dev/${_zv_vdev##*/} ;; esac
			if on_names "$_zv_vdev" "$1"; then
				printf '%s\n' "$_zv_pool"
				return 0
			fi
		done
}

# pool_disks POOL: the whole disks under POOL's vdevs, one a line.
# `zpool list -vHP`: vdev rows begin with a tab, the path first
# [OZ cmd/zpool/zpool_main.c print_list_stats].
pool_disks() {
	timeout 20 zpool list -vHP "$1" 2>/dev/null | awk -F '\t' '$1 == "" && $2 ~ /^\// { print $2 }' |
		while read -r _pd_v; do
			disk_of "${_pd_v#/dev/}"
			printf '\n'
		done | sed '/^$/d'
}

# root_disks: the whole disks holding `/`: from the `/` line of `mount -p`
# and from the loader's vfs.root.mountfrom (`ufs:/dev/ada0p2`,
# `zfs:zroot/ROOT/default`; kenv -q: nothing when unset) [FB bin/kenv/kenv.c].
root_disks() {
	_rd_src=$(mount_p | awk '$2 == "/" { src = $1 } END { print src }')
	_rd_kenv=$(kenv -q vfs.root.mountfrom 2>/dev/null || true)
	for _rd in "$_rd_src" "${_rd_kenv#*:}"; do
		case $_rd in
		'') ;;
		/dev/*) disk_of "${_rd#/dev/}" && printf '\n' ;;
		# A ZFS root has the module loaded; without it, no ZFS root.
		*) command -v zpool >/dev/null 2>&1 && zfs_loaded && pool_disks "${_rd%%/*}" ;;
		esac
	done | sed '/^$/d' | sort -u
}

# signature DEV: sets SIG (none|fsmx|foreign) and SIG_DETAIL.  Read-only:
# a partition table (gpart show: "=>  40  N  da0  GPT  (5.0G)", or
# "gpart: No such geom: da0." exit 1 [FB lib/geom/part/geom_part.c]) is
# foreign (fsmatrix never writes one); `fstyp -l -u` prints "<type> <label>"
# [FB usr.sbin/fstyp/fstyp.c; the zfs label is the pool name, zfs.c]: ufs
# labelled fsmx and zfs pools named as own_pool says (common.sh) are ours;
# `zdb -l` finds ZFS labels fstyp misses (the two at the end).  zdb -l
# exits 0 when all 4 labels unpack, 2 when none does, 1 when some do not
# ("failed to unpack label N" on stdout for each) [OZ zfs-2.2.6
# cmd/zdb/zdb.c dump_label:5338-5372, `return (config_found == B_FALSE ? 2
# : (error == B_TRUE ? 1 : 0))` :5399-5400]: a pool's labels at one end
# only (an interrupted wipe, a resized disk).  With exit 1 the surviving
# labels decide: every name they give fsmatrix's own pool -> ours (a
# half-wiped pool of fsmatrix's, cleaned by teardown); anything else foreign.
signature() {
	SIG=none
	SIG_DETAIL=
	if command -v gpart >/dev/null 2>&1; then
		if _sg_out=$(gpart show "$1" 2>&1); then
			SIG=foreign
			SIG_DETAIL="partition table: $(printf '%s\n' "$_sg_out" | awk '$1 == "=>" { print $5; exit }')"
			return 0
		fi
		case $_sg_out in
		*"No such geom"*) ;;
		*)
			SIG=foreign
			SIG_DETAIL="gpart show: $(printf '%s' "$_sg_out" | tr '\n' ' ')"
			return 0
			;;
		esac
	fi
	if _sg_out=$(fstyp -l -u "$1" 2>&1); then
		_sg_type=${_sg_out%% *}
		_sg_label=
		case $_sg_out in *' '*) _sg_label=${_sg_out#* } ;; esac
		SIG_DETAIL="$_sg_type label=$_sg_label"
		SIG=foreign
		case $_sg_type in
		ufs) [ "$_sg_label" = "$FSMX_LABEL" ] && SIG=fsmx ;;
		zfs) own_pool "$_sg_label" && SIG=fsmx ;;
		esac
		[ "$SIG" = fsmx ] || return 0
	else
		case $_sg_out in
		*"filesystem not recognized"*) ;;
		*)
			SIG=foreign
			SIG_DETAIL="fstyp: $(printf '%s' "$_sg_out" | tr '\n' ' ')"
			return 0
			;;
		esac
	fi
	if command -v zdb >/dev/null 2>&1; then
		_sg_rc=0
		_sg_out=$(zdb -l "$1" 2>&1) || _sg_rc=$?
		# The pool names of the labels that unpacked: "    name: 'fsmx'" at
		# the top of each config [OZ cmd/zdb/zdb.c dump_nvlist, indent 4];
		# exit 1 without one is zdb's own failure ("cannot open '%s': %s").
		_sg_names=$(printf '%s\n' "$_sg_out" | sed -n "s/^    name: '\\(.*\\)'[[:space:]]*\$/\\1/p" | sort -u)
		[ -n "$_sg_names" ] || [ "$_sg_rc" != 1 ] || _sg_rc="1 without a label"
		case $_sg_rc in
		0 | 1)
			_sg_half=
			if [ "$_sg_rc" = 1 ]; then
				_sg_half=", half-wiped: $(printf '%s\n' "$_sg_out" | grep -Ec '^failed to (unpack|read) label') of 4 labels unreadable (zdb -l exited 1)"
			fi
			if [ "$(printf '%s\n' "$_sg_names" | wc -l)" -eq 1 ] && own_pool "$_sg_names"; then
				if [ "$SIG" != fsmx ] || [ -n "$_sg_half" ]; then
					SIG_DETAIL="zfs label=$_sg_names$_sg_half"
				fi
				SIG=fsmx
			else
				SIG=foreign
				SIG_DETAIL="zfs label=$(printf '%s' "$_sg_names" | tr '\n' ' ') (zdb -l$_sg_half)${SIG_DETAIL:+; $SIG_DETAIL}"
				return 0
			fi
			;;
		2) ;;
		*)
			SIG=foreign
			SIG_DETAIL="zdb -l exited $_sg_rc: $(printf '%s' "$_sg_out" | head -n 1)"
			return 0
			;;
		esac
	fi
	if [ "$SIG" = none ] && ! first_mib_zero "$1"; then
		SIG=foreign
		SIG_DETAIL="no known signature but the first MiB is not zero"
	fi
	return 0
}

# guard_in_use DEV REAL (the hook of guard in common.sh): refuse (exit 3)
# when DEV (REAL: resolved) is not a disk this host can free or is in use.
guard_in_use() {
	_g_dev=$1
	_g_real=$2
	# FreeBSD disks are character devices (GEOM has no block devices).
	{ [ -c "$_g_real" ] || [ -b "$_g_real" ]; } || refuse "$_g_dev" "not a disk device"
	diskinfo "$_g_real" >/dev/null 2>&1 || refuse "$_g_dev" "not a disk (diskinfo $_g_real failed)"
	_g_name=$(geom_name "$_g_real")
	_g_disk=$(disk_of "$_g_name")
	[ -n "$_g_disk" ] || refuse "$_g_dev" "cannot tell which disk $_g_name is on (not in kern.disks, not a partition or label of one); refused rather than assumed free"
	_g_mp=$(mount_p) || refuse "$_g_dev" "cannot run mount -p to tell whether it is mounted; refused rather than assumed free"
	_g_where=$(mounted_from "$_g_name" "$_g_mp")
	[ -z "$_g_where" ] || refuse "$_g_dev" "mounted: $_g_where"
	# swapinfo -k: "Device 1K-blocks Used Avail Capacity", then one row a
	# device [FB usr.sbin/pstat/pstat.c].
	_g_swap=$(swapinfo -k 2>/dev/null) || refuse "$_g_dev" "cannot run swapinfo to tell whether it is swap; refused rather than assumed free"
	_g_sw=$(printf '%s\n' "$_g_swap" | awk 'NR > 1 && $1 ~ /^\/dev\// { print $1 }')
	for _g_s in $_g_sw; do
		if on_names "$_g_s" "$_g_name"; then
			refuse "$_g_dev" "in use as swap ($_g_s)"
		fi
	done
	_g_pool=$(zpool_vdev_of "$_g_name" | head -n 1)
	case $_g_pool in
	'') ;;
	'?'*) refuse "$_g_dev" "cannot tell whether it is in an imported zpool (${_g_pool#?}); refused rather than assumed free" ;;
	*) refuse "$_g_dev" "part of the imported zpool $_g_pool" ;;
	esac
	if in_words "$_g_disk" "$(root_disks)"; then
		refuse "$_g_dev" "on the disk holding / ($_g_disk)"
	fi
	# The backstop: the disk open for writing or exclusively by anything
	# (a filesystem, swap, a pool vdev, geli, gmirror... on it, on any of
	# its partitions or labels: GEOM adds their opens to the disk's).
	# "Mode: r1w1e1" [FB sbin/geom/core/geom.c].
	_g_mode=$(geom_disk_field "$_g_disk" Mode)
	case $_g_mode in
	r[0-9]*w[0-9]*e[0-9]*) ;;
	*) refuse "$_g_dev" "cannot read the open state of $_g_disk (geom disk list: '${_g_mode}'); refused rather than assumed free" ;;
	esac
	_g_w=${_g_mode#*w}
	_g_w=${_g_w%%e*}
	_g_e=${_g_mode##*e}
	if [ "$_g_w" != 0 ] || [ "$_g_e" != 0 ]; then
		refuse "$_g_dev" "in use: $_g_disk is open for writing (geom Mode $_g_mode: mounted, swap, a zpool vdev or another GEOM class)"
	fi
}

# wipe DEV: remove every signature and zero both ends: ZFS labels
# (`zpool labelclear -f`), a partition table (`gpart destroy -F`), dd.
wipe() {
	# zdb -l exit 1: some labels unpack (a half-wiped pool), see signature.
	_w_rc=2
	if command -v zpool >/dev/null 2>&1 && command -v zdb >/dev/null 2>&1; then
		_w_rc=0
		zdb -l "$1" >/dev/null 2>&1 || _w_rc=$?
	fi
	case $_w_rc in
	0 | 1) try zpool labelclear -f "$1" || log "zpool labelclear -f $1 failed; the labels at both ends are zeroed next" ;;
	esac
	if command -v gpart >/dev/null 2>&1 && gpart show "$1" >/dev/null 2>&1; then
		run gpart destroy -F "$1"
	fi
	zero_ends "$1" "$(dev_size_bytes "$1")" "$(sector_size "$1")"
}

check_fs() {
	case $1 in
	ufs | zfs) ;;
	*) usage_die "fs=$1 is not one of ufs zfs (the filesystems of freebsd.sh)" ;;
	esac
}

zfs_impl() {
	if command -v zpool >/dev/null 2>&1; then printf openzfs; else printf none; fi
}

# mount_source DEV FS: what mount(8) is given: the device itself.
mount_source() {
	printf '%s' "$1"
}

# child_pids PID: the pids of PID's children, one a line (pg_wake).
child_pids() {
	pgrep -P "$1" 2>/dev/null
}

# mount_line MNT: "source fstype options" of the last mount on MNT: the
# options as `mount -p` gives them (rw,async,noatime,...: the flags in
# effect, in mount -o's words [FB sbin/mount/mount.c flags2opts]), then the
# flags only the `mount` list shows ("%s on %s (%s, flag, ...)"): soft
# updates, their journal, gjournal [FB sys/sys/mount.h MNTOPT_NAMES].
mount_line() {
	_ml=$(mount_p | awk -v mp="$1" '$2 == mp { line = $1 " " $3 " " $4 } END { if (line != "") print line }')
	[ -n "$_ml" ] || return 0
	_ml_flags=$(mount | awk -v mp="$1" '
		{ i = index($0, " on " mp " ("); if (i == 0) next
		  rest = substr($0, i + length(" on " mp " (")); sub(/\)$/, "", rest); flags = rest }
		END { print flags }')
	_ml_extra=$(printf '%s\n' "$_ml_flags" | tr ',' '\n' | sed 's/^ *//; s/ *$//' |
		awk '$0 == "soft-updates" || $0 == "journaled soft-updates" || $0 == "gjournal" { printf ",%s", $0 }')
	printf '%s%s\n' "$_ml" "$_ml_extra"
}

# ---------------------------------------------------------------- verbs

# device_facts PREFIX DEV (the hook of facts_devices in common.sh): the
# facts of the disk DEV as PREFIX.size_bytes, .model, .rotational,
# .logical_block_size, .ident; fails (printing nothing) when DEV is no disk.
device_facts() {
	{ [ -c "$2" ] || [ -b "$2" ]; } && diskinfo "$2" >/dev/null 2>&1 || return 1
	kv "$1.size_bytes" "$(dev_size_bytes "$2")"
	kv "$1.model" "$(clean_value "$(diskinfo_field "$2" "Disk descr.")")"
	# "Unknown", 0 (non-rotating) or the RPM [FB diskinfo.c rotationrate].
	_df_rot=$(diskinfo_field "$2" "Rotation rate in RPM")
	case $_df_rot in
	0) _df_rot=0 ;;
	'' | *[!0-9]*) _df_rot=unknown ;;
	*) _df_rot=1 ;;
	esac
	kv "$1.rotational" "$_df_rot"
	kv "$1.logical_block_size" "$(diskinfo_field "$2" sectorsize)"
	kv "$1.ident" "$(dev_ident "$2")"
}

verb_facts() {
	kv os freebsd
	kv kernel "$(uname -r)"
	kv kernel_version "$(uname -v)"
	kv arch "$(uname -m)"
	kv distro "FreeBSD $(freebsd-version -u 2>/dev/null || uname -r)"
	kv hostname "$(uname -n)"
	kv uid "$(id -u)"
	kv user "$(id -un)"
	kv cpu_model "$(sysctl -n hw.model)"
	kv cpu_count "$(sysctl -n hw.ncpu)"
	kv mem_bytes "$(sysctl -n hw.physmem)"
	kv page_size "$(sysctl -n hw.pagesize)"
	kv vm_guest "$(sysctl -n kern.vm_guest 2>/dev/null || printf unknown)"
	facts_devices ${1+"$@"}
	facts_pg_tools "newfs zpool" ${1+"$@"}
	# newfs has no version of its own: it is the base system's.
	if command -v newfs >/dev/null 2>&1; then
		kv newfs_version "$(freebsd-version -u 2>/dev/null || uname -r)"
	fi
	_f_impl=$(zfs_impl)
	kv zfs_impl "$_f_impl"
	if [ "$_f_impl" != none ]; then
		# `zfs -V` is answered before libzfs_init (no module load): the
		# userland's version first [OZ zfs-2.2.6 cmd/zfs/zfs_main.c:8870-8874,
		# lib/libzfs/libzfs_util.c zfs_version_print]; `zfs version` would
		# load zfs.ko.
		_f_zv=$(zfs -V 2>/dev/null | head -n 1 || true)
		[ -n "$_f_zv" ] || _f_zv=$(sysctl -n vfs.zfs.version.module 2>/dev/null || printf unknown)
		kv zfs_version "$_f_zv"
		# zfs_running: the zfs module is loaded (kldstat), read without
		# loading it; `no` on a host that has ZFS but does not use it now:
		# the first zpool call of a ZFS cell's make-fs loads it.
		if zfs_loaded; then kv zfs_running yes; else kv zfs_running no; fi
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
		command -v zpool >/dev/null 2>&1 || die "zpool not found"
	else
		command -v newfs >/dev/null 2>&1 || die "newfs not found"
	fi
	# The guard comes before ANY write to the device.
	guard_same_disk "$_mf_ident" ${1+"$@"}
	_mf_dev=$G_REAL
	wipe "$_mf_dev"
	for _mf_a in ${1+"$@"}; do
		shift
		case $_mf_a in
		mkfs_opt=*) [ "$_mf_fs" != zfs ] && set -- ${1+"$@"} "${_mf_a#mkfs_opt=}" ;;
		zfs_prop=*=*) [ "$_mf_fs" = zfs ] && set -- ${1+"$@"} -O "${_mf_a#zfs_prop=}" ;;
		zfs_prop=*) usage_die "zfs_prop=${_mf_a#zfs_prop=} is not property=value" ;;
		pool_prop=*=*) [ "$_mf_fs" = zfs ] && set -- ${1+"$@"} -o "${_mf_a#pool_prop=}" ;;
		pool_prop=*) usage_die "pool_prop=${_mf_a#pool_prop=} is not property=value" ;;
		esac
	done
	_mf_t0=$(now_ms)
	case $_mf_fs in
	ufs)
		# UFS2 labelled fsmx; the matrix's words (-U, -j, -b, ...) follow, so
		# a later -O of theirs wins [FB sbin/newfs/newfs.c getopt].
		set -- newfs -L "$FSMX_LABEL" -O 2 ${1+"$@"} "$_mf_dev"
		;;
	zfs)
		run mkdir -p "$_mf_mnt"
		set -- zpool create -f -m "$_mf_mnt" ${1+"$@"} "$_mf_pool" "$_mf_dev"
		;;
	esac
	run ${1+"$@"}
	_mf_t1=$(now_ms)
	if [ "$_mf_fs" = ufs ]; then
		# What newfs made: soft updates and journal, on STDERR [FB sbin/tunefs/tunefs.c].
		tunefs -p "$_mf_dev" 2>&1 | sed -n 's/^tunefs: //p' >&2 || true
	fi
	kv fs "$_mf_fs"
	if [ "$_mf_fs" = zfs ]; then kv label "$_mf_pool"; else kv label "$FSMX_LABEL"; fi
	kv mkfs_ms "$((_mf_t1 - _mf_t0))"
	kv mkfs_cmd "$(quote_all ${1+"$@"})"
}


# fs_flush FS MNT POOL: after sync(1), what makes FS's sizes true.  zfs:
# zfs_flush (common.sh): `zpool sync` where zpool has it (FreeBSD 13+ is
# OpenZFS 2.x, zpool-sync(8) [OZ man/man8/zpool-sync.8]; the legacy ZFS of
# older releases may lack it), else the wait for a txg commit; ufs: blocks
# are allocated as they are written (st_blocks is true at once) and sync(2)
# writes the dirty buffers out [FB lib/libc/sys/sync.2].
fs_flush() {
	case $1 in
	zfs) zfs_flush "$3" ;;
	*) kv flush sync ;;
	esac
}

# zfs_txg_timeout: seconds between txg commits, the sysctl
# vfs.zfs.txg.timeout (zfs_txg_timeout, 5 s [OZ man/man4/zfs.4]).
zfs_txg_timeout() {
	_tt=$(sysctl -n vfs.zfs.txg.timeout 2>/dev/null || true)
	case $_tt in
	'' | *[!0-9]*) printf '5' ;;
	*) printf '%s' "$_tt" ;;
	esac
}

# du_sizes DIR: on-disk bytes from du -k, whose rows are "%jd\t%s"
# [FB usr.bin/du/du.c]; the apparent size summed from st_size of every entry
# as GNU du --apparent-size does: du -A -B 1 counts bytes but prints them in
# BLOCKSIZE units (512 at least, getbsize(3)) [FB usr.bin/du/du.c:
# howmany(fts_number * cblocksize, blocksize)]; stat -f %z [FB
# usr.bin/stat/stat.c].  printf %.0f: mawk prints 2.7e+11 past 2^31.
du_sizes() {
	kv du_bytes "$(du -s -k "$1" | awk '{ printf "%.0f\n", $1 * 1024 }')"
	kv du_apparent_bytes "$(find "$1" -exec stat -f %z {} + | awk '{ n += $1 } END { printf "%.0f\n", n }')"
}

# df_k MNT: df in KiB blocks [FB bin/df/df.c].
df_k() {
	df -k "$1"
}

# FreeBSD has no drop_caches: UFS's cached pages go with an unmount (mounted
# again with the options `mount -p` shows), ZFS's ARC with `zpool export`
# (+ import).  Either needs the filesystem idle: with PostgreSQL running
# the cache is kept and the method says why.
verb_drop_caches() {
	_dc_fs=$(opt fs "" ${1+"$@"})
	[ -z "$_dc_fs" ] || check_fs "$_dc_fs"
	sync
	case $_dc_fs in
	'')
		kv drop_caches_method "none: no fs= given (FreeBSD has no drop_caches)"
		;;
	ufs)
		_dc_dev=$(resolve "$(need dev ${1+"$@"})")
		_dc_line=$(mount_p | awk -v d="$_dc_dev" '$1 == d { print $2, $4 }' | tail -n 1)
		if [ -z "$_dc_line" ]; then
			kv drop_caches_method "none: $_dc_dev is not mounted"
			return 0
		fi
		_dc_mnt=${_dc_line%% *}
		_dc_opts=${_dc_line#* }
		if try umount "$_dc_mnt"; then
			run mount -t ufs -o "$_dc_opts" "$_dc_dev" "$_dc_mnt"
			kv drop_caches_method ufs-umount-mount
		else
			kv drop_caches_method "none: umount $_dc_mnt failed (busy: PostgreSQL running?); UFS cache kept"
		fi
		;;
	zfs)
		_dc_pool=$(need pool ${1+"$@"})
		check_pool "$_dc_pool"
		_dc_dev=$(resolve "$(need dev ${1+"$@"})")
		if zfs_reimport "$_dc_pool" "$_dc_dev"; then
			kv drop_caches_method zfs-export-import
			kv zfs_cache exported-imported
		else
			kv drop_caches_method "none: zpool export $_dc_pool failed (busy: PostgreSQL running?)"
			kv zfs_cache "kept: pool busy (FreeBSD has no drop_caches; the ARC is released only by export)"
		fi
		;;
	esac
}

# pool_on_device REAL POOL: the pool REAL (a resolved device) is a vdev of, if any
# (the hook verb_teardown in common.sh uses).
pool_on_device() {
	zpool_vdev_of "$(geom_name "$1")" "$2"
}


# The verbs: one dispatch for every OS (common.sh).
fsmx_main ${1+"$@"}
