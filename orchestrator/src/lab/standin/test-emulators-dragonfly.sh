#!/bin/bash
# shellcheck disable=SC2015,SC2317 # "cond && pass || fail": pass never fails; cleanup runs from trap
# Self-test of the DragonFly emulators in dragonfly/ (and of the FreeBSD ones a DragonFly
# stand-in shares: umount su pw lockf sha256 kenv): flags, output formats, refusals and
# exit statuses, and the filesystems they make on a scratch disk (HAMMER = marked ext4,
# HAMMER2 = btrfs, UFS = marked ext4; see dragonfly/FACTS.md).
#
# Run as root, inside a private mount namespace, with the real tools at /usr:
#   unshare -m --propagation private env FSMX_STANDIN_REAL=/usr \
#       bash orchestrator/src/lab/standin/test-emulators-dragonfly.sh /dev/loopN
# or inside a DragonFly stand-in host (its namespace is private to it):
#   FSMX_STANDIN_REAL=/run/fsmx-standin/real FSMX_STANDIN_TEST_HOST=1 \
#       bash test-emulators-dragonfly.sh /dev/da1
# DEVICE is a scratch block device: everything on it is destroyed.  The commands are run
# from a temporary bin folder laid out as setup.sh lays out a DragonFly view (own
# emulators, shared FreeBSD ones, mount_ufs = mount), so umount finds DragonFly's mount.
# Prints PASS/FAIL/SKIP lines; exits 1 if any check failed, 2 on bad usage.
set -u

here=$(cd "$(dirname "$0")" && pwd)
DF=$here/dragonfly
FB=$here/freebsd
export FSMX_STANDIN_REAL=${FSMX_STANDIN_REAL:-/usr}
REAL=$FSMX_STANDIN_REAL
# The checks themselves use the real (GNU) tools, not a stand-in's view.
PATH=$REAL/bin:$REAL/sbin:$PATH
export PATH

if [ $# -ne 1 ] || [ ! -b "$1" ]; then
	echo "usage: $0 BLOCK-DEVICE (scratch: it is overwritten)" >&2
	exit 2
fi
if [ "$(id -u)" != 0 ]; then
	echo "$0: must run as root" >&2
	exit 2
fi
if [ "${FSMX_STANDIN_TEST_HOST:-0}" != 1 ] && [ "$(readlink /proc/self/ns/mnt)" = "$(readlink /proc/1/ns/mnt)" ]; then
	echo "$0: run me in a private mount namespace (unshare -m --propagation private)" >&2
	exit 2
fi
dev=$1
case $dev in
/dev/*) ;;
*) echo "$0: give the device as /dev/NAME" >&2; exit 2 ;;
esac
NAME=${dev#/dev/}
work=$(mktemp -d /tmp/fsmx-df-test.XXXXXX)
mnt=$work/mnt
B=$work/bin
mkdir -p "$mnt" "$B" "$work/state"
export FSMX_STANDIN_STATE=$work/state
printf '%s\n' "$NAME" >"$work/state/disks"
printf 'dragonfly\n' >"$work/state/os"
printf '6.4-RELEASE\n' >"$work/state/release"
# hammer2 service daemons running before the checks (the checks stop only theirs)
h2d_before=$(pgrep -f '^hammer2: hammer2 master listen' | tr '\n' ' ')
fails=0

# The DragonFly view: own emulators, the shared FreeBSD ones, mount_ufs.
SHARED=(umount su pw lockf sha256 kenv)
# Its own: every file of dragonfly/ without a dot in its name (not FACTS.md), as
# setup.sh and build.rs take them.
OWN=()
for f in "$DF"/*; do
	case ${f##*/} in *.*) continue ;; esac
	OWN+=("${f##*/}")
done
for t in "${OWN[@]}"; do ln -s "$DF/$t" "$B/$t"; done
for t in "${SHARED[@]}"; do ln -s "$FB/$t" "$B/$t"; done
ln -s "$DF/mount" "$B/mount_ufs"

pass() { printf 'PASS %s\n' "$1"; }
fail() { printf 'FAIL %s\n' "$1"; [ $# -lt 2 ] || printf '%s\n' "$2" | sed 's/^/    | /'; fails=$((fails + 1)); }
skip() { printf 'SKIP %s\n' "$1"; }
run() {
	OUT=$("$@" 2>"$work/err")
	RC=$?
	ERR=$(cat "$work/err")
}
expect() { # expect DESCRIPTION STATUS [STDOUT-REGEX [STDERR-REGEX]]
	local d=$1 st=$2 ro=${3:-} re=${4:-}
	local why=''
	[ "$RC" = "$st" ] || why="status $RC, wanted $st"
	if [ -n "$ro" ] && ! grep -Eq -- "$ro" <<<"$OUT"; then why="$why; stdout does not match /$ro/"; fi
	if [ -n "$re" ] && ! grep -Eq -- "$re" <<<"$ERR"; then why="$why; stderr does not match /$re/"; fi
	if [ -z "$why" ]; then pass "$d"; else fail "$d (${why#; })" "stdout: $OUT
stderr: $ERR"; fi
}
same() { # same DESCRIPTION GOT WANTED
	if [ "$2" = "$3" ]; then pass "$1"; else fail "$1" "got:    $(printf '%q' "$2")
wanted: $(printf '%q' "$3")"; fi
}
h2d_stop() { # stop the hammer2 service daemons these checks started
	local p
	for p in $(pgrep -f '^hammer2: hammer2 master listen'); do
		case " $h2d_before " in *" $p "*) ;; *) kill "$p" 2>/dev/null ;; esac
	done
}
cleanup() {
	"$REAL/bin/umount" "$mnt" 2>/dev/null
	"$REAL/bin/umount" "$mnt" 2>/dev/null
	h2d_stop
	rm -rf "$work"
}
trap cleanup EXIT
blank() { dd if=/dev/zero of="$dev" bs=1M count=8 conv=notrunc status=none; }
SIZE=$("$REAL/sbin/blockdev" --getsize64 "$dev")

echo "== static checks"
for f in "${OWN[@]}"; do
	if [ ! -x "$DF/$f" ]; then fail "$f: present and executable"; continue; fi
	# shellcheck disable=SC2016 # the literal header line
	grep -q '^REAL=${FSMX_STANDIN_REAL:-/run/fsmx-standin/real}; PATH=$REAL/sbin:$REAL/bin; export PATH$' "$DF/$f" &&
		pass "$f: sets the real-tools PATH" || fail "$f: sets the real-tools PATH"
	grep -q 'DragonFlyBSD/DragonFlyBSD [a-z.]*/' "$DF/$f" &&
		pass "$f: cites its DragonFly source" || fail "$f: cites its DragonFly source"
	if command -v shellcheck >/dev/null 2>&1; then
		shellcheck -s dash "$DF/$f" >"$work/sc" 2>&1 && pass "$f: shellcheck -s dash" || fail "$f: shellcheck -s dash" "$(head -5 "$work/sc")"
	else
		skip "$f: shellcheck not installed"
	fi
done

echo "== uname"
run "$B/uname"; expect "uname: DragonFly" 0 '^DragonFly$'
run "$B/uname" -mrs; same "uname -mrs" "$OUT" "DragonFly 6.4-RELEASE x86_64"
run "$B/uname" -s -m -r; same "uname -s -m -r (fixed order)" "$OUT" "DragonFly 6.4-RELEASE x86_64"
run "$B/uname" -n; same "uname -n" "$OUT" "$(cat /proc/sys/kernel/hostname)"
run "$B/uname" -a; expect "uname -a" 0 "^DragonFly $(cat /proc/sys/kernel/hostname) 6\\.4-RELEASE DragonFly v6\\.4\\.0-RELEASE .* x86_64\$"
run "$B/uname" -v; expect "uname -v: one line" 0 '^DragonFly v6\.4\.0-RELEASE #0: '
same "uname -v: no newline inside" "$(wc -l <<<"$OUT")" 1
run "$B/uname" -i; same "uname -i" "$OUT" X86_64_GENERIC
run "$B/uname" -P; same "uname -P (pkg ABI)" "$OUT" "dragonfly:6.4:x86:64"
run "$B/uname" -K; expect "uname -K refused (FreeBSD only)" 1 '' '^uname: illegal option -- K
usage: uname \[-aimnprsv\]$'
run "$B/uname" x; expect "uname with an operand" 1 '' '^usage: uname'
[ -e "$B/freebsd-version" ] && fail "no freebsd-version in the view" || pass "no freebsd-version in the view"

echo "== sysctl"
run "$B/sysctl" -n hw.model hw.ncpu hw.physmem hw.pagesize kern.vmm_guest kern.disks
expect "sysctl -n six names" 0
same "sysctl: 6 lines" "$(wc -l <<<"$OUT")" 6
same "sysctl hw.ncpu" "$(sed -n 2p <<<"$OUT")" "$(getconf _NPROCESSORS_ONLN)"
same "sysctl hw.pagesize" "$(sed -n 4p <<<"$OUT")" "$(getconf PAGESIZE)"
same "sysctl kern.vmm_guest" "$(sed -n 5p <<<"$OUT")" none
same "sysctl kern.disks" "$(sed -n 6p <<<"$OUT")" "$NAME"
run "$B/sysctl" -n hw.ncpu kern.vm_guest hw.pagesize
expect "sysctl kern.vm_guest: unknown oid, exit 1" 1 '' "^sysctl: unknown oid 'kern.vm_guest'\$"
same "sysctl stops at the unknown oid" "$OUT" "$(getconf _NPROCESSORS_ONLN)"
run "$B/sysctl" kern.ostype; same "sysctl kern.ostype" "$OUT" "kern.ostype: DragonFly"
run "$B/sysctl" -e kern.osrelease; same "sysctl -e" "$OUT" "kern.osrelease=6.4-RELEASE"
run "$B/sysctl" hw; expect "sysctl hw (a node)" 0 '^hw\.ncpu: [0-9]+$'
run "$B/sysctl" -nN hw.ncpu; expect "sysctl -n -N: usage" 1 '' '^usage: sysctl \[-bdeNnox\] variable\[=value\] \.\.\.$'
run "$B/sysctl" -i kern.ostype; expect "sysctl -i refused (FreeBSD only)" 1 '' '^sysctl: illegal option -- i$'
run "$B/sysctl" -q kern.ostype; expect "sysctl -q refused" 1 '' 'illegal option -- q'
run "$B/sysctl" hw.ncpu=1; expect "sysctl set read-only" 1 '' "^sysctl: oid 'hw.ncpu' is read only\$"
run "$B/sysctl"; expect "sysctl without names: usage" 1 '' '^usage: sysctl'

echo "== kenv (shared with FreeBSD, DragonFly flags)"
run "$B/kenv" vfs.root.mountfrom; expect "kenv vfs.root.mountfrom" 0 '^[a-z0-9]+:.+'
run "$B/kenv" -q no.such.var; expect "kenv -q unset: exit 255, silent" 255 '' '^$'
run "$B/kenv" no.such.var; expect "kenv unset: message" 255 '' '^kenv: unable to get no.such.var$'
run "$B/kenv" -l; expect "kenv -l refused on DragonFly" 1 '' '^kenv: illegal option -- l
usage: kenv \[-hNq\]$'
run "$B/kenv" kern.vm_guest; expect "kenv: no kern.vm_guest on DragonFly" 255

echo "== diskinfo"
run "$B/diskinfo" "$dev"
want=$(printf '%-16s blksize=%-4d offset=0x%012x size=0x%012x ' "$dev" "$("$REAL/sbin/blockdev" --getss "$dev")" 0 "$SIZE")
case $OUT in "$want"*) pass "diskinfo: name, blksize, offset, size" ;; *) fail "diskinfo line" "got [$OUT] wanted prefix [$want]" ;; esac
expect "diskinfo: unit" 0 ' +[0-9]+\.[0-9]{2} (GB|MB|KB)$'
run "$B/diskinfo" /dev/nosuch9 "$dev"; expect "diskinfo: missing device on stdout, exit 0" 0 '^/dev/nosuch9     No such file or directory$' '^$'
same "diskinfo: goes on after an error" "$(wc -l <<<"$OUT")" 2
run "$B/diskinfo" -v "$dev"; expect "diskinfo -v refused" 1 '' '^diskinfo: illegal option -- v
diskinfo \[-qx\] device \.\.\.$'
run "$B/diskinfo"; expect "diskinfo without a device: nothing, exit 0" 0 '^$'

echo "== swapinfo"
run "$B/swapinfo" -k; expect "swapinfo -k header" 0 '^Device          1K-blocks     Used    Avail Capacity  Type$'
printf 'Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n/dev/da0s1b                             partition\t4194300\t\t0\t\t-2\n' >"$work/swaps"
OUT=$(FSMX_STANDIN_SWAPS=$work/swaps "$B/swapinfo" -k)
same "swapinfo -k row (pstat.c)" "$OUT" "Device          1K-blocks     Used    Avail Capacity  Type
/dev/da0s1b       4194300        0  4194300     0%    Interleaved"
run "$B/swapinfo" -h; expect "swapinfo -h refused" 1 '' '^swapinfo: illegal option -- h
usage: swapinfo \[-k\] \[-M core\] \[-N system\]$'

echo "== du, stat, readlink"
T=$work/tree
mkdir -p "$T/a"
head -c 5000 /dev/zero >"$T/a/f1"
ln -s f1 "$T/a/link"
run "$B/du" -s -k "$T"; same "du -s -k (as GNU du -sk)" "$OUT" "$(du -sk "$T")"
run "$B/du" -A "$T"; expect "du -A refused, exit 64" 64 '' '^du: illegal option -- A
usage: du \[-H \| -L \| -P\] \[-a \| -s \| -d depth\] \[-c\] \[-h \| -k\] \[-x\] \[-I mask\] \[file \.\.\.\]$'
run "$B/du" -B 1 "$T"; expect "du -B refused" 64 '' 'illegal option -- B'
run "$B/du" -m "$T"; expect "du -m refused" 64 '' 'illegal option -- m'
run "$B/du" -a -s "$T"; expect "du -a -s: usage" 64 '' '^usage: du'
run "$B/stat" -f %z "$T/a/f1"; same "stat -f %z" "$OUT" 5000
run "$B/stat" -f %z "$T/nosuch"; expect "stat missing file" 1 '' "^stat: $T/nosuch: stat: No such file or directory\$"
run "$B/stat" -c %s "$T/a/f1"; expect "stat -c refused" 1 '' '^stat: illegal option -- c
usage: stat \[-FlLnqrsx\] \[-f format\] \[-t timefmt\] \[file \.\.\.\]$'
run "$B/readlink" "$T/a/link"; expect "readlink LINK" 0 '^f1$'
run "$B/readlink" -f "$T/a/link"; expect "readlink -f refused" 1 '' '^readlink: illegal option -- f
usage: readlink \[-n\] \[file \.\.\.\]$'
run "$B/readlink" "$T/a/f1"; expect "readlink of a file: nothing, exit 1" 1 '^$' '^$'

echo "== blank disk: fstyp, gpt, fdisk"
blank
run "$B/fstyp" "$dev"; expect "fstyp blank" 1 '' "^fstyp: $dev: filesystem not recognized\$"
run "$B/fstyp" /nonexistent; expect "fstyp missing file (by-path probe: failed to open)" 1 '' '^fstyp: failed to open /nonexistent: No such file or directory$'
run "$B/fstyp" /dev/null; expect "fstyp /dev/null: not a disk" 1 '' '^fstyp: /dev/null: not a disk$'
run "$B/fstyp" -x "$dev"; expect "fstyp -x: usage" 1 '' 'usage: fstyp \[-l\] \[-s\] \[-u\] special'
run "$B/gpt" show "$dev"; expect "gpt show blank: one Unused row" 0 '^ +0 +[0-9]+ +- +Unused$'
same "gpt show blank: header + 1 row" "$(wc -l <<<"$OUT")" 2
expect "gpt show header" 0 '^ +start +size +index +contents$'
run "$B/gpt" show; expect "gpt show without device: usage" 1 '' '^usage: gpt show \[-glu\] device'
run "$B/fdisk" -s "$dev"; expect "fdisk -s blank: exit 1" 1 '' '^fdisk: invalid fdisk partition table found
fdisk: read_s0: '
# an MBR with one DragonFly slice (type 0xa5, active) at 63
secs=$((SIZE / 512 - 63))
{
	dd if=/dev/zero bs=446 count=1 status=none
	printf '\x80\x01\x01\x00\xa5\xfe\xff\xff\x3f\x00\x00\x00'
	# shellcheck disable=SC2059 # the format is the bytes
	printf "$(printf '\\x%02x\\x%02x\\x%02x\\x%02x' $((secs & 255)) $((secs >> 8 & 255)) $((secs >> 16 & 255)) $((secs >> 24 & 255)))"
	dd if=/dev/zero bs=48 count=1 status=none
	printf '\x55\xaa'
} | dd of="$dev" bs=512 count=1 iflag=fullblock conv=notrunc status=none
run "$B/fdisk" -s "$NAME"; expect "fdisk -s with an MBR" 0 "^/dev/$NAME: [0-9]+ cyl 255 hd 63 sec\$"
same "fdisk -s partition row" "$(sed -n 3p <<<"$OUT")" "$(printf '%4d: %11d %11d 0x%02x 0x%02x' 1 63 "$secs" 165 128)"
same "fdisk -s header" "$(sed -n 2p <<<"$OUT")" "Part        Start        Size Type Flags"
run "$B/gpt" show "$dev"; expect "gpt show with an MBR" 0 '^ +0 +1 +- +MBR$'
expect "gpt show MBR part" 0 '^ +63 +[0-9]+ +1 +MBR part 165$'
run "$B/fdisk" -i "$dev"; expect "fdisk -i refused (not emulated)" 1
blank

echo "== newfs_hammer, mount_hammer, hammer"
run "$B/newfs_hammer" "$dev"; expect "newfs_hammer without -L" 1 '' '^newfs_hammer: A filesystem label must be specified
usage: newfs_hammer -L label \[-Efh\]'
run "$B/newfs_hammer" -L DATA; expect "newfs_hammer without special" 1 '' '^newfs_hammer: You must specify at least one special file \(volume\)$'
run "$B/newfs_hammer" -Z -L DATA "$dev"; expect "newfs_hammer -Z" 1 '' '^newfs_hammer: illegal option -- Z'
run "$B/newfs_hammer" -L DATA -u 512 "$dev"; expect "newfs_hammer -u without suffix" 1 '' "^newfs_hammer: Unknown suffix in number '512'\$"
if [ "$SIZE" -lt $((11 * 1024 * 1024 * 1024)) ]; then
	run "$B/newfs_hammer" -L DATA "$dev"
	expect "newfs_hammer < 10GB without -f: refused" 1 "^Volume 0 DEVICE $dev +size " '^newfs_hammer: Cannot create a HAMMER filesystem less than 10GB unless you use -f
\(for the size of Volume 0\)\.  HAMMER filesystems less than 50GB are not recommended\.$'
	run "$B/fstyp" "$dev"; expect "refused newfs_hammer wrote nothing" 1
else
	skip "newfs_hammer < 10GB refusal (the device has 11GB or more)"
fi
run "$B/newfs_hammer" -f -L DATA "$dev"
expect "newfs_hammer -f -L DATA" 0 '^HAMMER version 7$'
grep -q "^root-volume:         $dev\$" <<<"$OUT" && pass "newfs_hammer: root-volume line" || fail "newfs_hammer: root-volume line" "$OUT"
grep -Eq '^fsid:                [0-9a-f-]{36}$' <<<"$OUT" && pass "newfs_hammer: fsid line" || fail "newfs_hammer: fsid line" "$OUT"
run "$B/fstyp" -l "$dev"; expect "fstyp -l: hammer DATA" 0 '^hammer DATA$'
run "$B/fstyp" "$dev"; expect "fstyp: hammer without -u" 0 '^hammer$'
run "$B/mount_hammer" -o async "$dev" "$mnt"; expect "mount_hammer -o async: not supported" 1 '' '^mount_hammer: -o async: option not supported$'
run "$B/mount_hammer" -o nobogus "$dev" "$mnt"; expect "mount_hammer -o nobogus (no prefix stripped)" 1 '' '^mount_hammer: -o bogus: option not supported$'
run "$B/mount_hammer" "$dev"; expect "mount_hammer without node: usage" 1 '' '^usage: mount_hammer \[-o options\]'
run "$B/mount_hammer" -o nohistory,noatime "$dev" "$mnt"; expect "mount_hammer -o nohistory,noatime" 0
run "$B/mount"; expect "mount lists HAMMER by label" 0 "^DATA on $mnt \\(hammer, local, noatime, nohistory\\)\$"
run "$B/mount" -p; same "mount -p HAMMER line" "$(grep -F "$mnt" <<<"$OUT")" "DATA	$mnt	hammer rw,noatime	0 0"
run "$B/mount" -p -t hammer; same "mount -p -t hammer: one line" "$(wc -l <<<"$OUT")" 1
run "$B/hammer" volume-list "$mnt"; expect "hammer volume-list" 0 "^$dev\$"
run "$B/hammer" volume-list /; expect "hammer volume-list of a non-HAMMER fs" 1 '' '^hammer volume-list ioctl: Inappropriate ioctl for device$'
run "$B/hammer" volume-list; expect "hammer volume-list without fs" 1 '' '^hammer volume-list <filesystem>$'
run "$B/mount_hammer" "$dev" "$mnt"; expect "mount_hammer of a mounted device: busy" 1 '' 'Device busy'
run "$B/umount" "$mnt"; expect "umount (shared) of a HAMMER mount" 0
run "$B/umount" "$mnt"; expect "umount again: not a file system root directory" 1 '' 'not a file system root directory'
run "$B/mount" -t hammer -o noatime "$dev" "$mnt"; expect "mount -t hammer (execs mount_hammer)" 0
run "$B/mount"; expect "mount -t hammer: listed" 0 "^DATA on $mnt \\(hammer, local, noatime\\)\$"
run "$B/umount" "$mnt"; expect "umount" 0
run "$B/mount" -d -t hammer -o noatime,rw "$dev" "$mnt"; same "mount -d: the exec line" "$OUT" "exec: mount_hammer -o noatime $dev $mnt"

echo "== newfs_hammer2, mount_hammer2, hammer2"
run "$B/newfs_hammer2" "$dev"; expect "newfs_hammer2 (default PFSs)" 0 "^Volume $dev +size "
grep -q '^PFS "LOCAL"$' <<<"$OUT" && grep -q '^PFS "DATA"$' <<<"$OUT" && pass "newfs_hammer2: PFS LOCAL and DATA" || fail "newfs_hammer2: PFS LOCAL and DATA" "$OUT"
grep -Eq '^total-size: +[0-9.]+[KMGT]B \([0-9]+ bytes\)$' <<<"$OUT" && pass "newfs_hammer2: total-size line" || fail "newfs_hammer2: total-size line" "$OUT"
run "$B/fstyp" -l "$dev"; expect "fstyp -l: hammer2 DATA_<dev>" 0 "^hammer2 DATA_$NAME\$"
run "$B/newfs_hammer2" -Z "$dev"; expect "newfs_hammer2 -Z" 1 '' '^newfs_hammer2: illegal option -- Z
usage: newfs_hammer2 \[-b bootsize\] \[-r auxsize\] \[-V version\] \[-L label \.\.\.\] special \.\.\.$'
run "$B/newfs_hammer2"; expect "newfs_hammer2 without device" 1 '' '^newfs_hammer2: You must specify at least one disk device$'
run "$B/mount_hammer2" -o bogus "$dev" "$mnt"; expect "mount_hammer2 -o bogus" 1 '' '^mount_hammer2: -o bogus: option not supported$'
run "$B/mount_hammer2" "$dev"; expect "mount_hammer2 without node: usage" 1 '' '^hammer2_mount: missing parameter\(s\) \(dev@LABEL mountpt\)$'
run "$B/mount_hammer2" "$dev@NOSUCH" "$mnt"; expect "mount_hammer2 of a missing PFS" 1 '' '^mount: : '
run "$B/mount_hammer2" -o noatime "$dev" "$mnt"; expect "mount_hammer2 DEV (default @DATA)" 0
run "$B/mount"; expect "mount lists HAMMER2 as DEV@DATA" 0 "^$dev@DATA on $mnt \\(hammer2, local, noatime\\)\$"
run "$B/mount" -p; same "mount -p HAMMER2 line" "$(grep -F "$mnt" <<<"$OUT")" "$dev@DATA	$mnt	hammer2 rw,noatime	0 0"
run "$B/hammer2" stat "$mnt"; expect "hammer2 stat: header" 0 '^PATH +ncp  data-use inode-use comp               check        quota$'
same "hammer2 stat: new PFS is lz4" "$(awk 'NR == 2 { print $5 }' <<<"$OUT")" "lz4:default"
run "$B/hammer2" setcomp zlib:9 "$mnt"; same "hammer2 setcomp zlib:9" "$OUT" "$mnt	comp_algo=0x93"
run "$B/hammer2" stat "$mnt"; same "hammer2 stat after zlib:9" "$(awk 'NR == 2 { print $5 }' <<<"$OUT")" "zlib:9"
run "$B/hammer2" setcomp none "$mnt"; same "hammer2 setcomp none" "$OUT" "$mnt	comp_algo=0x00"
run "$B/hammer2" stat "$mnt"; same "hammer2 stat after none" "$(awk 'NR == 2 { print $5 }' <<<"$OUT")" "none:default"
run "$B/hammer2" setcomp autozero "$mnt"; same "hammer2 setcomp autozero" "$OUT" "$mnt	comp_algo=0x01"
run "$B/hammer2" stat "$mnt"; same "hammer2 stat after autozero" "$(awk 'NR == 2 { print $5 }' <<<"$OUT")" "autozero:default"
run "$B/hammer2" setcomp lz4 "$mnt"; same "hammer2 setcomp lz4" "$OUT" "$mnt	comp_algo=0x02"
mkdir "$mnt/sub"
run "$B/hammer2" stat "$mnt/sub"; same "hammer2 stat: a new directory inherits lz4" "$(awk 'NR == 2 { print $5 }' <<<"$OUT")" "lz4:default"
run "$B/hammer2" setcomp zlib "$mnt/sub"; same "hammer2 setcomp zlib on a subdirectory" "$OUT" "$mnt/sub	comp_algo=0x03"
run "$(command -v btrfs || echo "$REAL/bin/btrfs")" property get "$mnt/sub" compression
same "the real btrfs compression property follows" "$OUT" "compression=zlib"
run "$B/hammer2" setcomp lz5 "$mnt"; expect "hammer2 setcomp lz5: exit 3" 3 '^$' '^Unknown compression type: lz5$'
run "$B/hammer2" setcomp zlib:3 "$mnt"; expect "hammer2 setcomp zlib:3: exit 3" 3 '' '^Unsupported comp_level 3 for zlib$'
run "$B/hammer2" setcomp lz4:7 "$mnt"; expect "hammer2 setcomp lz4:7: exit 3" 3 '' '^Unsupported comp_level 7 for lz4$'
run "$B/hammer2" setcomp lz4 "$mnt/nosuch"; expect "hammer2 setcomp missing path: stdout, exit 3" 3 "^$mnt/nosuch: No such file or directory\$"
run "$B/hammer2" setcomp lz4 "$work"; expect "hammer2 setcomp outside HAMMER2" 3 '' "^hammer2: '$work' is not a hammer2 filesystem\$"
run "$B/hammer2" setcomp lz4; expect "hammer2 setcomp without path" 1 '' '^setcomp: requires compression method and directory/file path$'
run "$B/hammer2" frob; expect "hammer2 unknown command" 1 '' '^Unrecognized command: frob$'
run "$B/hammer2"; expect "hammer2 without command" 1 '' '^Missing command$'
run "$B/hammer2" pfs-list "$mnt"; expect "hammer2 pfs-list" 0 "^Type        ClusterId \\(pfs_clid\\)                 Label on $mnt\$"
same "hammer2 pfs-list rows (sorted)" "$(awk 'NR > 1 { print $1, $3 }' <<<"$OUT")" "MASTER DATA
MASTER LOCAL"
run "$B/hammer2" pfs-list; expect "hammer2 pfs-list (all mounts)" 0 "Label on $mnt\$"
run "$B/umount" "$mnt"; expect "umount (shared) of a HAMMER2 mount" 0
run "$B/mount" -t hammer2 "$dev@LOCAL" "$mnt"; expect "mount -t hammer2 DEV@LOCAL" 0
run "$B/mount"; expect "mount lists DEV@LOCAL" 0 "^$dev@LOCAL on $mnt \\(hammer2, local\\)\$"
run "$B/umount" "$mnt"; expect "umount" 0
run "$B/newfs_hammer2" -L none "$dev"; expect "newfs_hammer2 -L none" 0
grep -q '^PFS "DATA"$' <<<"$OUT" && fail "newfs_hammer2 -L none: no DATA" "$OUT" || pass "newfs_hammer2 -L none: no DATA"
run "$B/fstyp" -l "$dev"; expect "fstyp -l without the PFS: SUPROOT_<dev>" 0 "^hammer2 SUPROOT_$NAME\$"
run "$B/newfs_hammer2" -L PGDATA "$dev"; expect "newfs_hammer2 -L PGDATA" 0 '^PFS "PGDATA"$'
run "$B/mount_hammer2" "$dev@PGDATA" "$mnt"; expect "mount_hammer2 DEV@PGDATA" 0
run "$B/umount" "$mnt"; expect "umount" 0

echo "== hammer2 info, volume header copies, service daemon, release-dependent stat"
hdr_at() { dd if="$dev" bs=65536 skip=$(($1 / 65536)) count=1 status=none | od -An -tx1 -N8 | tr -d ' \n'; }
run "$B/hammer2" info "$dev"; same "hammer2 info: the device, then its PFSs (cmd_info.c)" "$(sort <<<"$OUT")" "    LOCAL
    PGDATA
$dev:"
same "hammer2 info: header #0 carries HAMMER2_VOLUME_ID_HBO" "$(hdr_at 0)" 11201705324d4148
if [ "$SIZE" -ge $((2147483648 + 65536)) ]; then
	same "newfs_hammer2: a header copy at 2 GiB" "$(hdr_at 2147483648)" 11201705324d4148
	run "$B/newfs_hammer2" -L BACKUP "$dev"; expect "newfs_hammer2 -L BACKUP" 0 '^PFS "BACKUP"$'
	dd if=/dev/zero of="$dev" bs=65536 count=1 conv=notrunc status=none
	run "$B/fstyp" "$dev"; expect "fstyp reads header #0 only: not recognized once it is gone" 1 '' "^fstyp: $dev: filesystem not recognized\$"
	run "$B/hammer2" info "$dev"; same "hammer2 info reads the copy at 2 GiB" "$(sort <<<"$OUT")" "    BACKUP
    LOCAL
$dev:"
	blank
	run "$B/fstyp" "$dev"; expect "fstyp: first 8 MiB zeroed: not recognized" 1
	run "$B/hammer2" info "$dev"; same "hammer2 info: the copy at 2 GiB outlives a zeroed start" "$(sort <<<"$OUT")" "    BACKUP
    LOCAL
$dev:"
	run "$B/mount_hammer2" "$dev@BACKUP" "$mnt"; expect "mount_hammer2 mounts from the copy at 2 GiB" 0
	run "$B/umount" "$mnt"; expect "umount" 0
	dd if=/dev/zero of="$dev" bs=65536 seek=32768 count=1 conv=notrunc status=none
	blank
	run "$B/hammer2" info "$dev"; expect "hammer2 info: every header zeroed: nothing" 0 '^$' '^$'
	run "$B/mount_hammer2" "$dev@BACKUP" "$mnt"; expect "mount_hammer2: no header left: Invalid argument" 1 '' '^mount: : Invalid argument$'
else
	skip "header copies: $dev is under 2 GiB + 64 KiB"
fi
printf 'x\n' >"$work/file"
run "$B/hammer2" info "$work/file"; expect "hammer2 info of a regular file: DIOCGPART failed, exit 0" 0 '^$' "^DIOCGPART failed on \"$work/file\"\$"
run "$B/hammer2" info "$work/nosuch"; expect "hammer2 info of a missing path: exit 0" 0 '^$' "^Unable to open \"$work/nosuch\"\$"
run "$B/newfs_hammer2" -L fsmx "$dev"; expect "newfs_hammer2 -L fsmx" 0
h2d_stop
run "$B/mount_hammer2" "$dev@fsmx" "$mnt"; expect "mount_hammer2 DEV@fsmx" 0
n=$(pgrep -f '^hammer2: hammer2 master listen' | wc -l)
[ "$n" -ge 1 ] && pass "mount_hammer2 starts the hammer2 service daemon (hammer2 -q service)" || fail "mount_hammer2 starts the hammer2 service daemon"
run "$B/hammer2" service; expect "hammer2 service with one running: already running, exit 0" 0 '^$' '^master listen: daemon already running$'
run "$B/hammer2" -q service; expect "hammer2 -q service with one running: silent" 0 '^$' '^$'
same "one daemon only" "$(pgrep -f '^hammer2: hammer2 master listen' | wc -l)" "$n"
run "$B/hammer2" stat "$mnt"; same "hammer2 stat on 6.4: bare comp and check" "$(awk 'NR == 2 { print $5, $6 }' <<<"$OUT")" "lz4:default xxhash64"
printf '6.2-RELEASE\n' >"$work/state/release"
run "$B/hammer2" stat "$mnt"; expect "hammer2 stat on 6.2: the 2015 header" 0 '^PATH +ncp  data-use inode-use comp kaddr$'
same "hammer2 stat on 6.2: comp= and check=" "$(awk 'NR == 2 { print $5, $6 }' <<<"$OUT")" "comp=lz4:default check=xxhash64"
run "$B/uname" -r; same "uname -r follows the release file" "$OUT" "6.2-RELEASE"
printf '6.4-RELEASE\n' >"$work/state/release"
run "$B/umount" "$mnt"; expect "umount" 0
h2d_stop

echo "== newfs (UFS1), tunefs, mount -t ufs"
run "$B/newfs" -j "$dev"; expect "newfs -j refused (no SU journaling)" 1 '' '^newfs: illegal option -- j
usage: newfs \[ -fsoptions \] special-device \[device-type\]$'
run "$B/newfs" -L pg_data "$dev"; expect "newfs -L with _ refused" 1 '' '^newfs: bad volume label. Valid characters are alphanumerics.$'
run "$B/newfs" -U -L pgdata "$dev"; expect "newfs -U -L pgdata" 0 "^$dev: media size [0-9]+\\.[0-9]{2}MB\$"
grep -q '^super-block backups (for fsck -b #) at:$' <<<"$OUT" && pass "newfs: backups line" || fail "newfs: backups line" "$OUT"
run "$B/fstyp" -l "$dev"; expect "fstyp -l: ufs pgdata" 0 '^ufs pgdata$'
run "$B/tunefs" -p "$dev"; expect "tunefs -p: stderr only" 0 '^$' '^tunefs: soft updates:  \(-n\)                                enabled$'
same "tunefs -p: 8 lines" "$(grep -c '^tunefs: ' <<<"$ERR")" 8
run "$B/tunefs" -p; expect "tunefs -p without special: usage, exit 2" 2 '' '^usage: tunefs \[-A\]'
run "$B/tunefs" -j enable "$dev"; expect "tunefs -j: usage, exit 2" 2 '' '^usage: tunefs'
run "$B/mount" -t ufs -o async,noatime "$dev" "$mnt"; expect "mount -t ufs -o async,noatime" 0
run "$B/mount"; expect "mount: ufs with soft updates (async dropped)" 0 "^$dev on $mnt \\(ufs, local, noatime, soft-updates\\)\$"
run "$B/mount" -p; same "mount -p ufs line" "$(grep -F "$mnt" <<<"$OUT")" "$dev	$mnt	ufs rw,noatime	2 2"
run "$B/mount" -t ufs "$dev" "$mnt"; expect "mount -t ufs of a mounted device" 1 '' "^mount_ufs: $dev: Device busy\$"
run "$B/umount" "$mnt"; expect "umount" 0
run "$B/tunefs" -n disable "$dev"; expect "tunefs -n disable" 0 '' '^tunefs: soft updates cleared$'
run "$B/mount" -t ufs -o async "$dev" "$mnt"; expect "mount -t ufs -o async" 0
run "$B/mount"; expect "mount: asynchronous without soft updates" 0 "^$dev on $mnt \\(ufs, asynchronous, local\\)\$"
run "$B/mount" -p; same "mount -p: async" "$(grep -F "$mnt" <<<"$OUT")" "$dev	$mnt	ufs rw,async	2 2"
run "$B/umount" "$mnt"; expect "umount" 0
run "$B/newfs_hammer" -f -L X "$dev"; expect "newfs_hammer over a ufs" 0
run "$B/mount" -t ufs "$dev" "$mnt"; expect "mount -t ufs of a HAMMER fs: Invalid argument" 1 '' "^mount_ufs: $dev: Invalid argument\$"

echo "== mount refusals"
run "$B/mount" -Z; expect "mount -Z: usage" 1 '' '^mount: illegal option -- Z
usage: mount \[-adfpruvw\] \[-F fstab\] \[-o options\] \[-t type\]$'
run "$B/mount" -t zfs pool "$mnt"; expect "mount -t zfs: no mount_zfs" 1 '' '^mount: exec mount_zfs not found in /sbin, /usr/sbin: No such file or directory$'
run "$B/mount" /nowhere; expect "mount of an unknown node" 1 '' '^mount: /nowhere: unknown special file or file system$'
run "$B/mount" -t hammer "$dev" /nonexistent; expect "mount on a missing node: exit 64" 64 '' 'No such file or directory'

blank
echo
if [ "$fails" -eq 0 ]; then echo "all checks passed"; exit 0; fi
echo "$fails check(s) failed"
exit 1
