#!/bin/bash
# Builds a stand-in BSD host (docs/standin-hosts.md, steps 1-4 and 6) inside a lab host's
# private mount namespace:
#   setup.sh OS DEVICE BSDNAME EMUDIR
# OS: freebsd or dragonfly; DEVICE: the host's real spare block device (e.g. /dev/loop3);
# BSDNAME: its BSD name (e.g. ada1, da1); EMUDIR: a folder holding freebsd/<emulator> and
# dragonfly/<emulator> files (temporary: copied).  A DragonFly stand-in gets the
# dragonfly/ emulators plus the FreeBSD ones DragonFly shares (SHARED_dragonfly), and a
# /dev/serno/<serial> link to its disk.
# Run as root, once per host.  Afterwards the namespace shows a BSD userland:
#   /usr/bin, /usr/sbin, /usr/local are tmpfs holding POSIX tools (links to the real ones),
#   the emulators and PostgreSQL as FreeBSD packages install it; /dev is a private tmpfs
#   with null zero full random urandom tty fuse fd std{in,out,err} shm and /dev/BSDNAME.
# The real tools stay reachable for the emulators at /run/fsmx-standin/real/{bin,sbin}.
set -euo pipefail

die() {
	echo "setup.sh: $*" >&2
	exit 1
}

[ $# -eq 4 ] || die "usage: setup.sh OS DEVICE BSDNAME EMUDIR"
OS=$1 DEVICE=$2 BSDNAME=$3 EMUDIR=$4
ST=/run/fsmx-standin
R=$ST/real

# POSIX tools a FreeBSD base system also has: links to the real (GNU/Debian) ones.
POSIX_TOOLS=(
	sh echo pwd cat cp mv rm mkdir rmdir ln chmod chown chgrp ls head tail tr cut sed awk grep wc
	sort uniq sleep date id printf env test '[' expr basename dirname tee touch dd sync kill
	ps pgrep pkill hostname find xargs od df mktemp true false nice renice realpath
	readlink timeout tcsh csh scp cmp diff comm paste split gzip gunzip zcat tar nohup stty
	logger seq whoami uptime install printenv yes tty logname locale getconf nproc
	truncate hexdump which mkfifo
)
# POSIX_TOOLS a DragonFly base system lacks (GNU additions FreeBSD took and DragonFly did
# not): left out of a DragonFly view.
NOT_ON_DRAGONFLY=(nproc)
# FreeBSD emulators that are also DragonFly's command, with the same behaviour for what
# fsmatrix uses (kenv reads /run/fsmx-standin/os for its two small differences).  Every
# other DragonFly command is dragonfly/<name>.
SHARED_dragonfly=(umount su pw lockf sha256 kenv)
# Real tools the emulators call (through $R/bin, $R/sbin); listed so that a tool reached
# through an absolute symlink (awk -> /etc/alternatives/awk -> /usr/bin/mawk) still
# resolves once /usr/bin is replaced.
EMU_DEPS=(
	awk sh cat stat blockdev blkid partx wipefs od dd sort sha256sum find sed tr cut getent
	getconf date mktemp rm readlink realpath runuser flock env id wc tail head dirname tee
	ls printf mount umount mkfs.ext4 tune2fs dumpe2fs e2fsck zpool zfs zdb
)
# Where FreeBSD / DragonFly keep each emulated command (Debian is usr-merged: /bin is
# /usr/bin and /sbin is /usr/sbin, so /sbin/mount goes to /usr/sbin).
emu_dir() {
	case $OS:$1 in
	freebsd:uname|freebsd:freebsd-version|freebsd:kenv|freebsd:du|freebsd:stat) echo /usr/bin ;;
	freebsd:su|freebsd:lockf|freebsd:zdb) echo /usr/bin ;;
	freebsd:sysctl|freebsd:geom|freebsd:gpart|freebsd:mount|freebsd:umount) echo /usr/sbin ;;
	freebsd:newfs|freebsd:tunefs|freebsd:zpool|freebsd:zfs|freebsd:sha256) echo /usr/sbin ;;
	freebsd:diskinfo|freebsd:fstyp|freebsd:swapinfo|freebsd:pw) echo /usr/sbin ;;
	freebsd:kldstat) echo /usr/sbin ;; # sbin/kldstat -> /sbin (usr-merged: /usr/sbin)
	# DragonFly: bin/ and usr.bin/ -> /usr/bin; sbin/ and usr.sbin/ -> /usr/sbin
	dragonfly:uname|dragonfly:kenv|dragonfly:du|dragonfly:stat|dragonfly:readlink) echo /usr/bin ;;
	dragonfly:su|dragonfly:lockf) echo /usr/bin ;;
	dragonfly:sysctl|dragonfly:diskinfo|dragonfly:mount|dragonfly:mount_ufs) echo /usr/sbin ;;
	dragonfly:mount_hammer|dragonfly:mount_hammer2|dragonfly:umount|dragonfly:newfs) echo /usr/sbin ;;
	dragonfly:newfs_hammer|dragonfly:newfs_hammer2|dragonfly:hammer|dragonfly:hammer2) echo /usr/sbin ;;
	dragonfly:tunefs|dragonfly:fdisk|dragonfly:gpt|dragonfly:sha256) echo /usr/sbin ;;
	dragonfly:fstyp|dragonfly:swapinfo|dragonfly:pw|dragonfly:dmsetup) echo /usr/sbin ;;
	*) return 1 ;;
	esac
}

case $OS in
freebsd|dragonfly) ;;
*) die "unsupported OS '$OS' (this setup knows: freebsd, dragonfly)" ;;
esac
[[ $BSDNAME =~ ^[a-z]+[0-9]+$ ]] || die "bad BSD disk name '$BSDNAME'"
[ "$(id -u)" = 0 ] || die "must run as root"
[ -d "$ST" ] || die "$ST is missing (lab.sh creates it)"
if [ -e "$ST/os" ] || [ -e "$R" ]; then
	die "this namespace is already a stand-in ($ST/os exists): run setup.sh once per host"
fi
[ -b "$DEVICE" ] || die "$DEVICE is not a block device"
[ -d "$EMUDIR/$OS" ] || die "$EMUDIR/$OS: no emulators there"
[ -d "$EMUDIR/freebsd" ] || die "$EMUDIR/freebsd: no emulators there"
# Never hide /usr/bin of the machine itself: a lab host's mount namespace is its init's
# (PID 1 of its pid namespace, "fsmx-init"); any other must differ from PID 1's.
init_args=$'\n'$(tr '\0' '\n' </proc/1/cmdline)$'\n'
if [ "$(readlink /proc/self/ns/mnt)" = "$(readlink /proc/1/ns/mnt)" ] &&
	[[ $init_args != *$'\n'fsmx-init$'\n'* ]]; then
	die "not inside a private mount namespace (run it in a lab host, or under unshare -m --propagation private)"
fi
if awk '$5 == "/usr/bin" { f = 1 } END { exit !f }' /proc/self/mountinfo; then
	die "/usr/bin is already a mount point here: not setting up twice"
fi

# "maj min" (decimal) of a device node
majmin() {
	local t
	t=$(stat -L -c '%t %T' "$1")
	printf '%d %d\n' "0x${t% *}" "0x${t#* }"
}

# --- read everything needed from the real /usr and /dev before hiding them ------------
declare -A CHARDEV
for n in null zero full random urandom tty fuse; do
	if [ -c "/dev/$n" ]; then
		CHARDEV[$n]=$(majmin "/dev/$n")
	fi
done
DISKNUM=$(majmin "$DEVICE")
# The disk's serial number for DragonFly's /dev/serno/<serial>: stable for a given disk,
# from the inode of the loop device's backing file (else from its device number).
SERIAL=
if [ "$OS" = dragonfly ]; then
	backing=$(cat "/sys/block/${DEVICE##*/}/loop/backing_file" 2>/dev/null || true)
	ino=
	[ -n "$backing" ] && ino=$(stat -L -c %i "$backing" 2>/dev/null || true)
	if [ -n "$ino" ]; then
		SERIAL=$(printf 'FSMX%08X' "$ino")
	else
		# shellcheck disable=SC2086 # "maj min": two numbers
		SERIAL=$(printf 'FSMX%04X%04X' $DISKNUM)
	fi
fi

# path under /usr/{bin,sbin} -> the same file seen through $R
in_real() {
	case $1 in
	/usr/bin/*) echo "$R/bin/${1#/usr/bin/}" ;;
	/usr/sbin/*) echo "$R/sbin/${1#/usr/sbin/}" ;;
	*) echo "$1" ;;
	esac
}

declare -A LINKS  # link in the BSD view -> target
# add_tool NAME EXPOSE: EXPOSE=1 puts NAME in the view (a link to its final target);
# EXPOSE=0 only repairs an absolute link chain for the emulators' use
add_tool() {
	local name=$1 expose=$2 d p tgt first
	for d in bin sbin; do
		p=/usr/$d/$name
		[ -e "$p" ] || continue
		tgt=$(readlink -f "$p")
		if [ "$expose" = 1 ]; then
			if [ "$tgt" = "$p" ]; then
				LINKS[$p]=$(in_real "$p")
			else
				LINKS[$p]=$(in_real "$tgt")
			fi
		fi
		# An emulator reaches NAME as $R/.../NAME: an absolute link (through
		# /etc/alternatives) must still find its final target in the view.
		if [ "$expose" = 0 ] && [ -L "$p" ]; then
			first=$(readlink "$p")
			case $first in
			/*)
				case $tgt in
				/usr/bin/*|/usr/sbin/*) LINKS[$tgt]=$(in_real "$tgt") ;;
				esac ;;
			esac
		fi
		return 0
	done
	return 0
}
for t in "${POSIX_TOOLS[@]}"; do
	if [ "$OS" = dragonfly ] && [[ " ${NOT_ON_DRAGONFLY[*]} " == *" $t "* ]]; then
		continue
	fi
	add_tool "$t" 1
done
for t in "${EMU_DEPS[@]}"; do add_tool "$t" 0; done
[ -x /usr/sbin/sshd ] && LINKS[/usr/sbin/sshd]=$R/sbin/sshd
# sudo is a FreeBSD package (security/sudo): /usr/local/bin/sudo, for become = "sudo"
[ -x /usr/bin/sudo ] && LINKS[/usr/local/bin/sudo]=$R/bin/sudo

PGBIN=
if [ -d /usr/lib/postgresql ]; then
	v=$(find /usr/lib/postgresql -mindepth 1 -maxdepth 1 -printf "%f\n" | sort -V | tail -n 1)
	[ -n "$v" ] && PGBIN=/usr/lib/postgresql/$v/bin
fi
if [ -n "$PGBIN" ]; then
	# The server and client packages put every program in /usr/local/bin (createdb,
	# pg_isready, pg_dump, ... too).
	for x in "$PGBIN"/*; do
		[ -x "$x" ] && LINKS[/usr/local/bin/${x##*/}]=$x
	done
else
	echo "setup.sh: warning: no /usr/lib/postgresql/<version>: no PostgreSQL in /usr/local/bin" >&2
fi

# --- 1. the real tools, for the emulators only -----------------------------------------
mount -t tmpfs -o mode=0755,size=16m fsmx-standin "$ST"
mkdir -p "$R/bin" "$R/sbin" "$ST/emu"
mount --bind /usr/bin "$R/bin"
mount -o remount,bind,ro "$R/bin"
mount --bind /usr/sbin "$R/sbin"
mount -o remount,bind,ro "$R/sbin"
# $ST/emu/<os>/<name>: the emulators (a DragonFly view also needs freebsd/: the shared
# commands, and dragonfly/du and stat hand their work to ../freebsd/).  Only executable
# files whose names have no dot are emulators (not FACTS.md).
declare -A EMUS  # command name -> emulator file
copy_emus() { # copy_emus OS
	local f
	mkdir -p "$ST/emu/$1"
	for f in "$EMUDIR/$1"/*; do
		if [ ! -f "$f" ] || [ ! -x "$f" ]; then continue; fi
		case ${f##*/} in *.*) continue ;; esac
		cp "$f" "$ST/emu/$1/"
		chmod 0755 "$ST/emu/$1/${f##*/}"
	done
}
copy_emus freebsd
case $OS in
freebsd)
	for f in "$ST/emu/freebsd"/*; do EMUS[${f##*/}]=$f; done ;;
dragonfly)
	copy_emus dragonfly
	for t in "${SHARED_dragonfly[@]}"; do
		[ -x "$ST/emu/freebsd/$t" ] || die "$EMUDIR/freebsd/$t: missing (shared with dragonfly)"
		EMUS[$t]=$ST/emu/freebsd/$t
	done
	for f in "$ST/emu/dragonfly"/*; do EMUS[${f##*/}]=$f; done
	# DragonFly's mount execs mount_ufs, which is the same program
	EMUS[mount_ufs]=$ST/emu/dragonfly/mount ;;
esac
printf '%s\n' "$OS" >"$ST/os"
# The release the stand-in is (uname, sysctl kern.osrelease and release-dependent formats
# such as DragonFly's `hammer2 stat` read it); a test may rewrite it in the namespace.
case $OS in
freebsd) printf '14.1-RELEASE\n' >"$ST/release" ;;
dragonfly) printf '6.4-RELEASE\n' >"$ST/release" ;;
esac
printf '%s\n' "$BSDNAME" >"$ST/disks"
# From here on the tools come from the bind mounts.
PATH=$R/sbin:$R/bin
export PATH
hash -r

# --- 2. the BSD userland view ------------------------------------------------------------
mount -t tmpfs -o mode=0755,size=8m fsmx-standin-bin /usr/bin
mount -t tmpfs -o mode=0755,size=8m fsmx-standin-sbin /usr/sbin
mount -t tmpfs -o mode=0755,size=8m fsmx-standin-local /usr/local
mkdir -p /usr/local/bin /usr/local/sbin /usr/local/etc /usr/local/lib /usr/local/share
for l in "${!LINKS[@]}"; do
	ln -s "${LINKS[$l]}" "$l"
done
for e in "${!EMUS[@]}"; do
	if d=$(emu_dir "$e"); then
		:
	else
		echo "setup.sh: note: emulator '$e' has no known $OS place: installed in /usr/sbin" >&2
		d=/usr/sbin
	fi
	ln -sfn "${EMUS[$e]}" "$d/$e"
done

# --- 3. /dev -------------------------------------------------------------------------------
# Built aside, then moved over the old /dev, which is detached (with its submounts: pts,
# shm, mqueue, ...) so that /proc/mounts lists no Linux /dev mounts.
ND=$ST/newdev
mkdir "$ND"
mount -t tmpfs -o mode=0755,size=1m,nosuid fsmx-standin-dev "$ND"
# node NAME TYPE MODE "MAJ MIN" [OLDNAME]: mknod, or bind the old node where mknod is refused
node() {
	local name=$1 type=$2 mode=$3 num=$4 old=${5:-$1} err
	# (no 2>/dev/null here: the new /dev has no null yet)
	# shellcheck disable=SC2086
	if ! err=$(mknod -m "$mode" "$ND/$name" "$type" $num 2>&1); then
		echo "setup.sh: note: mknod $name refused ($err): binding /dev/$old" >&2
		touch "$ND/$name"
		mount --bind "/dev/$old" "$ND/$name"
	fi
}
for n in null zero full random urandom tty fuse; do
	if [ -n "${CHARDEV[$n]-}" ]; then
		node "$n" c 0666 "${CHARDEV[$n]}"
	fi
done
ln -s /proc/self/fd "$ND/fd"
ln -s /proc/self/fd/0 "$ND/stdin"
ln -s /proc/self/fd/1 "$ND/stdout"
ln -s /proc/self/fd/2 "$ND/stderr"
mkdir -m 1777 "$ND/shm"
mount -t tmpfs -o mode=1777,nosuid,nodev fsmx-standin-shm "$ND/shm"
node "$BSDNAME" b 0640 "$DISKNUM" "${DEVICE#/dev/}"
if [ -n "$SERIAL" ]; then
	# devfs's serial-number alias of the disk (DragonFly: /dev/serno/<serial> -> ../da1)
	mkdir "$ND/serno"
	ln -s "../$BSDNAME" "$ND/serno/$SERIAL"
fi
umount -l /dev
mount --move "$ND" /dev
rmdir "$ND"

# --- check ------------------------------------------------------------------------------------
PATH=/sbin:/bin:/usr/sbin:/usr/bin:/usr/local/sbin:/usr/local/bin
hash -r
for t in lsblk blkid wipefs findmnt runuser losetup flock sha256sum; do
	if command -v "$t" >/dev/null 2>&1; then
		die "check failed: Linux-only '$t' is still visible"
	fi
done
for t in sh uname sysctl; do
	command -v "$t" >/dev/null 2>&1 || die "check failed: '$t' is missing from the view"
done
[ -b "/dev/$BSDNAME" ] || die "check failed: /dev/$BSDNAME is not a block device"
if [ "$OS" = dragonfly ]; then
	for t in freebsd-version zpool zfs zdb geom gpart "${NOT_ON_DRAGONFLY[@]}"; do
		if command -v "$t" >/dev/null 2>&1; then
			die "check failed: '$t' is visible, DragonFly has none"
		fi
	done
	# DragonFly's readlink is stat(1)'s (getopt "fn", usr.bin/stat/stat.c:227-230
	# @f875a8ee): -f works there, GNU's long options do not.
	if readlink --version >/dev/null 2>&1 || [ "$(readlink -f /dev/serno/..)" != /dev ]; then
		die "check failed: readlink is not DragonFly's (GNU's --version works, or -f does not)"
	fi
	[ "$(realpath "/dev/serno/$SERIAL")" = "/dev/$BSDNAME" ] ||
		die "check failed: /dev/serno/$SERIAL does not lead to /dev/$BSDNAME"
fi
echo "setup.sh: $OS stand-in ready: /dev/$BSDNAME is $DEVICE${SERIAL:+ (serial $SERIAL)}"
