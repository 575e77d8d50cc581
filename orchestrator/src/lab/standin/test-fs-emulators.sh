#!/bin/bash
# shellcheck disable=SC2015,SC2317 # "cond && pass || fail": pass never fails; cleanup runs from trap
# Tests of the FreeBSD stand-in's filesystem emulators (freebsd/newfs, fstyp, tunefs,
# mount, umount, zdb; zpool and zfs when a zfs-fuse daemon answers).
#
# Run as root, inside a private mount namespace, with the real tools at /usr:
#   unshare -m --propagation private env FSMX_STANDIN_REAL=/usr \
#       bash orchestrator/src/lab/standin/test-fs-emulators.sh /dev/loopN
# DEVICE is a scratch block device: everything on it is destroyed.
# Prints PASS/FAIL/SKIP lines; exits 1 if any check failed, 2 on bad usage.
set -u

here=$(cd "$(dirname "$0")" && pwd)
E=$here/freebsd
export FSMX_STANDIN_REAL=${FSMX_STANDIN_REAL:-/usr}
REAL=$FSMX_STANDIN_REAL

if [ $# -ne 1 ] || [ ! -b "$1" ]; then
	echo "usage: $0 BLOCK-DEVICE (scratch: it is overwritten)" >&2
	exit 2
fi
if [ "$(id -u)" != 0 ]; then
	echo "$0: must run as root" >&2
	exit 2
fi
# Refuse to run in the initial mount namespace: the test mounts things.
# (A lab stand-in host's own namespace is private to it: FSMX_STANDIN_TEST_HOST=1 says so.)
if [ "${FSMX_STANDIN_TEST_HOST:-0}" != 1 ] && [ "$(readlink /proc/self/ns/mnt)" = "$(readlink /proc/1/ns/mnt)" ]; then
	echo "$0: run me in a private mount namespace (unshare -m --propagation private)" >&2
	exit 2
fi
dev=$1
work=$(mktemp -d /tmp/fsmx-emu-test.XXXXXX)
mnt=$work/mnt
mkdir -p "$mnt"
fails=0

pass() { printf 'PASS %s\n' "$1"; }
fail() { printf 'FAIL %s\n' "$1"; [ $# -lt 2 ] || printf '%s\n' "$2" | sed 's/^/    | /'; fails=$((fails + 1)); }
skip() { printf 'SKIP %s\n' "$1"; }

# run NAME: runs the rest, keeping stdout, stderr and the status in OUT, ERR, RC.
run() {
	OUT=$("$@" 2>"$work/err")
	RC=$?
	ERR=$(cat "$work/err")
}
expect() { # expect DESCRIPTION STATUS [STDOUT-REGEX [STDERR-REGEX]] (regexes: grep -E on the whole text)
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

cleanup() {
	"$REAL/bin/umount" "$mnt" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

# putfsent's padding (sbin/mount/mount.c) for the expected mount -p line.
pad() { local l=${#1} s=$1; [ "$l" -lt 8 ] && s+=$'\t'; [ "$l" -lt 16 ] && s+=$'\t'; if [ "$l" -lt 24 ]; then s+=$'\t'; else s+=' '; fi; printf '%s' "$s"; }

echo "== refusals"
run "$E/newfs" -Z "$dev"; expect "newfs -Z: illegal option, usage, exit 1" 1 '' '^newfs: illegal option -- Z'
run "$E/newfs" --help "$dev"; expect "newfs --help: GNU long option refused" 1 '' 'illegal option -- -'
run "$E/newfs" -L 'bad label!' "$dev"; expect "newfs -L 'bad label!': bad volume label, exit 1" 1 '' '^newfs: bad volume label. Valid characters are alphanumerics, dashes, and underscores.$'
run "$E/newfs" -o fast "$dev"; expect "newfs -o fast refused" 1 '' "fast: unknown optimization preference"
run "$E/newfs"; expect "newfs without special: usage" 1 '' '^usage: newfs \[ -fsoptions \] special-device'
run "$E/fstyp" -x "$dev"; expect "fstyp -x: illegal option, exit 1" 1 '' 'illegal option -- x'
run "$E/fstyp" /nonexistent; expect "fstyp on a missing file" 1 '' '^fstyp: /nonexistent: No such file or directory$'
run "$E/fstyp" /dev/null; expect "fstyp /dev/null: not a disk" 1 '' '^fstyp: /dev/null: not a disk$'
run "$E/tunefs" -p; expect "tunefs -p without special: usage, exit 2" 2 '' '^usage: tunefs'
run "$E/tunefs" -x enable "$dev"; expect "tunefs -x: illegal option, exit 2" 2 '' 'illegal option -- x'
run "$E/mount" -Z; expect "mount -Z: usage, exit 1" 1 '' 'usage: mount \[-adflpruvw\]'
run "$E/mount" --bind / "$mnt"; expect "mount --bind refused" 1 '' 'illegal option -- -'
run "$E/umount" -Z "$mnt"; expect "umount -Z: usage, exit 1" 1 '' 'usage: umount \[-fNnv\]'
run "$E/umount" "$work"; expect "umount of a plain directory" 1 '' 'not a file system root directory'
run "$E/zdb" -j; expect "zdb -j refused (not in zdb.c's getopt string, zfs-2.2.6)" 1 '' 'illegal option -- j'

# A clean start: no filesystem signature at the head of the device.
dd if=/dev/zero of="$dev" bs=1M count=4 conv=notrunc status=none
run "$E/fstyp" "$dev"; expect "fstyp on a blank disk: not recognized" 1 '' "^fstyp: $dev: filesystem not recognized$"
run "$E/tunefs" -p "$dev"; expect "tunefs -p on a blank disk: exit 12" 12 '' "^tunefs: $dev: "

# variant FLAGS SU SUJ: newfs, fstyp, tunefs -p, mount, listing, umount.
variant() {
	local flags=$1 su=$2 suj=$3 label=pg${RANDOM}
	echo "== newfs $flags -L $label"
	# shellcheck disable=SC2086
	run "$E/newfs" $flags -L "$label" "$dev"
	expect "newfs $flags: exit 0" 0 "^$dev: [0-9]+\.[0-9]MB \([0-9]+ sectors\) block size 32768, fragment size 4096$"
	grep -Eq $'^\tusing [0-9]+ cylinder groups of [0-9]+\\.[0-9]{2}MB, [0-9]+ blks, [0-9]+ inodes\\.$' <<<"$OUT" &&
		pass "newfs $flags: cylinder group line" || fail "newfs $flags: cylinder group line" "$OUT"
	grep -q '^super-block backups (for fsck_ffs -b #) at:$' <<<"$OUT" &&
		pass "newfs $flags: super-block backups" || fail "newfs $flags: super-block backups" "$OUT"
	if [ "$su" = yes ]; then
		grep -q $'^\twith soft updates$' <<<"$OUT" && pass "newfs $flags: with soft updates" || fail "newfs $flags: with soft updates" "$OUT"
	else
		grep -q 'with soft updates' <<<"$OUT" && fail "newfs $flags: no soft updates line expected" "$OUT" || pass "newfs $flags: no soft updates line"
	fi
	if [ "$suj" = yes ]; then
		grep -Eq '^Using inode 4 in cg 0 for [0-9]+ byte journal$' <<<"$OUT" && pass "newfs $flags: journal line" || fail "newfs $flags: journal line" "$OUT"
		same "newfs $flags: stderr" "$ERR" "newfs: soft updates journaling set"
	else
		same "newfs $flags: stderr empty" "$ERR" ""
	fi

	run "$E/fstyp" "$dev"; expect "fstyp: ufs" 0 '^ufs$'
	run "$E/fstyp" -l "$dev"; expect "fstyp -l: ufs $label" 0 "^ufs $label\$"
	run "$E/fstyp" -u "$dev"; expect "fstyp -u: ufs" 0 '^ufs$'
	run "$E/zdb" -l "$dev"; expect "zdb -l on ufs: no label, exit 2" 2 '^failed to unpack label 0'

	run "$E/tunefs" -p "$dev"
	expect "tunefs -p: exit 0, nothing on stdout" 0
	same "tunefs -p: stdout empty" "$OUT" ""
	same "tunefs -p: 14 lines" "$(grep -c '^tunefs: ' <<<"$ERR")" 14
	local sw=disabled jw=disabled
	[ "$su" = yes ] && sw=enabled
	[ "$suj" = yes ] && jw=enabled
	grep -qx "tunefs: soft updates: (-n)                                 $sw" <<<"$ERR" &&
		pass "tunefs -p: soft updates $sw" || fail "tunefs -p: soft updates $sw" "$ERR"
	grep -qx "tunefs: soft update journaling: (-j)                       $jw" <<<"$ERR" &&
		pass "tunefs -p: journaling $jw" || fail "tunefs -p: journaling $jw" "$ERR"
	grep -qx "tunefs: volume label: (-L)                                 $label" <<<"$ERR" &&
		pass "tunefs -p: volume label" || fail "tunefs -p: volume label" "$ERR"

	run "$E/mount" -t ufs -o bogus "$dev" "$mnt"
	expect "mount -o bogus: unknown option, exit 1" 1 '' "^mount: $dev: mount option <bogus> is unknown: Invalid argument$"
	run "$E/mount" -t ufs -o noatime,async "$dev" "$mnt"
	expect "mount -t ufs -o noatime,async: exit 0" 0
	local flags_want="ufs, local, noatime"
	[ "$su" = no ] && flags_want="ufs, asynchronous, local, noatime"
	[ "$su" = yes ] && [ "$suj" = no ] && flags_want="$flags_want, soft-updates"
	[ "$suj" = yes ] && flags_want="$flags_want, journaled soft-updates"
	run "$E/mount"
	line=$(grep -F "$dev on $mnt " <<<"$OUT")
	same "mount: listing line" "$line" "$dev on $mnt ($flags_want)"
	run "$E/mount" -p
	line=$(grep -F "$dev"$'\t' <<<"$OUT"; grep -F "$dev " <<<"$OUT")
	local opts=rw,noatime
	[ "$su" = no ] && opts=rw,async,noatime
	same "mount -p: putfsent line" "$line" "$(pad "$dev")$(pad "$mnt")ufs"$'\t'"$opts "$'\t'"2 2"
	run "$E/mount" -p -t ufs; expect "mount -p -t ufs lists it" 0 "^$dev"
	run "$E/mount" -t ufs "$dev" "$mnt"; expect "mount of a mounted device: Device busy" 1 '' "^mount: $dev: Device busy$"
	run "$E/umount" -v "$mnt"; expect "umount -v: exit 0" 0 "^$dev: unmount from $mnt\$"
	run "$E/umount" "$mnt"; expect "umount again: not a file system root directory" 1 '' "^umount: $mnt: not a file system root directory$"
}
variant "-U" yes no
variant "-U -j" yes yes
variant "" no no
variant "-j" yes yes

echo "== tunefs changes"
run "$E/tunefs" -n disable "$dev"; expect "tunefs -n disable" 0 '' '^tunefs: soft updates cleared$'
run "$E/tunefs" -n disable "$dev"; expect "tunefs -n disable again" 0 '' '^tunefs: soft updates remains unchanged as disabled$'
run "$E/tunefs" -p "$dev"; grep -qx "tunefs: soft updates: (-n)                                 disabled" <<<"$ERR" &&
	pass "tunefs -p after -n disable" || fail "tunefs -p after -n disable" "$ERR"
run "$E/tunefs" -n enable "$dev"; expect "tunefs -n enable" 0 '' '^tunefs: soft updates set$'
run "$E/tunefs" -j disable "$dev"; expect "tunefs -j disable" 0 'Clearing journal flags from inode 4' '^tunefs: soft updates journaling cleared but soft updates still set.$'
run "$E/tunefs" -p "$dev"; grep -qx "tunefs: soft update journaling: (-j)                       disabled" <<<"$ERR" &&
	pass "tunefs -p after -j disable" || fail "tunefs -p after -j disable" "$ERR"
"$E/mount" -t ufs "$dev" "$mnt"
run "$E/tunefs" -n disable "$dev"; expect "tunefs -n disable while mounted: exit 11" 11 '' 'failed to open disk for writing'
run "$E/tunefs" -p "$mnt"; expect "tunefs -p MOUNTPOINT" 0 '' 'soft updates: \(-n\) +enabled'
"$E/umount" "$mnt"

echo "== ext4 without the marker is ext2fs"
"$REAL/sbin/mkfs.ext4" -F -q -L plain "$dev"
run "$E/fstyp" -l "$dev"; expect "fstyp: plain ext4 is ext2fs" 0 '^ext2fs plain$'
run "$E/mount" -t ufs "$dev" "$mnt"; expect "mount -t ufs of an ext4: Invalid argument" 1 '' "^mount: $dev: Invalid argument$"
run "$E/tunefs" -p "$dev"; expect "tunefs -p of an ext4: exit 12" 12

echo "== zfs (zfs-fuse)"
if ! timeout 10 "$REAL/sbin/zpool" list >/dev/null 2>&1; then
	skip "zpool/zfs/zdb on a pool: no zfs-fuse daemon answers"
else
	pool=fsmxt$RANDOM
	# Start blank (a plain ext4 superblock at 1 KiB would survive zpool create and make
	# fstyp say ext2fs, as on FreeBSD).
	dd if=/dev/zero of="$dev" bs=1M count=4 conv=notrunc status=none
	run "$E/zpool" create -Z "$pool" "$dev"; expect "zpool create -Z: invalid option, exit 2" 2 '' "^invalid option 'Z'"
	run "$E/zpool" create -f -O compression=lz4 -m "$mnt" "$pool" "$dev"
	expect "zpool create -O compression=lz4 refused" 1 '' "^cannot create '$pool': pool must be upgraded to set this property or value$"
	run "$E/zpool" create -f -o ashift=12 -O compression=gzip -O atime=off -O xattr=sa -m "$mnt" "$pool" "$dev"
	expect "zpool create -f -o ashift=12 -O compression=gzip -O atime=off -m: exit 0" 0
	run "$E/zpool" status -P "$pool"
	expect "zpool status -P" 0 "^	  $dev +ONLINE +0 +0 +0$"
	grep -q "^  pool: $pool$" <<<"$OUT" && pass "zpool status: pool line" || fail "zpool status: pool line" "$OUT"
	grep -q "scrub:" <<<"$OUT" && fail "zpool status: no zfs-fuse scrub line" "$OUT" || pass "zpool status: no zfs-fuse scrub line"
	run "$E/zpool" list -vHP "$pool"
	expect "zpool list -vHP: vdev row starts with a tab" 0 "^	$dev	"
	same "zpool list -vHP: 2 rows" "$(wc -l <<<"$OUT")" 2
	same "zpool list -H: 11 columns" "$(head -n 1 <<<"$OUT" | awk -F '\t' '{ print NF }')" 11
	run "$E/zfs" get -H -p -o property,value used,logicalused,compressratio "$pool"
	expect "zfs get -H -p used,logicalused,compressratio" 0 $'^compressratio\t[0-9]+\\.[0-9]{2}$'
	grep -Eq $'^used\t[0-9]+$' <<<"$OUT" && grep -Eq $'^logicalused\t[0-9]+$' <<<"$OUT" &&
		pass "zfs get: used and logicalused in bytes" || fail "zfs get: used and logicalused in bytes" "$OUT"
	run "$E/zfs" get compressratio "$pool"; expect "zfs get compressratio (human): 1.00x" 0 "^$pool +compressratio +[0-9.]+x"
	run "$E/zfs" set compression=zstd "$pool"
	expect "zfs set compression=zstd refused" 1 '' "^cannot set property for '$pool': pool and or dataset must be upgraded to set this property or value$"
	run "$E/zfs" create -o compression=lz4 "$pool/x"
	expect "zfs create -o compression=lz4 refused" 1 '' "^cannot create '$pool/x': pool must be upgraded"
	run "$E/zfs" set compression=lzjb "$pool"; expect "zfs set compression=lzjb" 0
	run "$E/zpool" get -H -o value health "$pool"; expect "zpool get -H -o value health" 0 '^ONLINE$'
	run "$E/mount"; expect "mount lists the dataset as zfs" 0 "^$pool on $mnt \\(zfs, local, noatime, nfsv4acls\\)$"
	run "$E/mount" -p
	same "mount -p lists the dataset" "$(grep "^${pool}[[:space:]]" <<<"$OUT")" "$(pad "$pool")$(pad "$mnt")zfs"$'\t'"rw,noatime,nfsv4acls "$'\t'"0 0"
	grep -q zfs-kstat <<<"$OUT" && fail "mount -p: no zfs-fuse kstat mount" "$OUT" || pass "mount -p: no zfs-fuse kstat mount"
	run "$E/fstyp" "$dev"; expect "fstyp without -u: zfs not recognized" 1 '' 'filesystem not recognized'
	run "$E/fstyp" -u "$dev"; expect "fstyp -u: zfs" 0 '^zfs$'
	run "$E/zdb" -l "$dev"; expect "zdb -l on a pool member: exit 0" 0 "^    name: '$pool'$"
	grep -q '^    labels = 0 1 2 3 $' <<<"$OUT" && pass "zdb -l: labels line" || fail "zdb -l: labels line" "$OUT"
	run "$E/zpool" labelclear -f "$dev"; expect "zpool labelclear of an active member refused" 1 '' 'ACTIVE'
	# zpool sync returns once the data is committed: `used` counts 8 MiB written just
	# before (zfs-fuse alone would show them only at its next txg, up to 30 s later).
	before=$("$REAL/sbin/zfs" get -H -p -o value used "$pool")
	head -c 8388608 /dev/urandom >"$mnt/sync-test"
	t0=$(date +%s)
	run "$E/zpool" sync "$pool"; expect "zpool sync" 0 '^$'
	after=$("$REAL/sbin/zfs" get -H -p -o value used "$pool")
	[ "$((after - before))" -ge 7340032 ] && pass "zpool sync: used counts what was written before it ($before -> $after, $(($(date +%s) - t0)) s)" ||
		fail "zpool sync: used counts what was written before it" "used $before -> $after"
	rm -f "$mnt/sync-test"
	run "$E/zpool" sync -x "$pool"; expect "zpool sync -x: invalid option, exit 2" 2 '' "^invalid option 'x'"
	run "$E/zpool" sync fsmx-no-such-pool; expect "zpool sync of no pool: exit 1" 1 '' "^cannot open 'fsmx-no-such-pool': no such pool$"
	run "$E/zpool"; expect "zpool usage lists sync" 2 '' $'^\tsync \\[-f\\] \\[pool\\]'
	run "$E/zpool" export "$pool"; expect "zpool export" 0
	run "$E/zpool" import -d "$dev" "$pool"; expect "zpool import -d DEVICE" 0
	run "$E/zpool" export "$pool"; expect "zpool export again" 0
	mkdir "$work/devdir" && ln -s "$dev" "$work/devdir/"
	run "$E/zpool" import -d "$work/devdir" "$pool"; expect "zpool import -d DIR" 0
	run "$E/zpool" destroy "$pool"; expect "zpool destroy" 0
	run "$E/zpool" labelclear -f "$dev"; expect "zpool labelclear -f" 0
	run "$E/zdb" -l "$dev"; expect "zdb -l after labelclear: exit 2" 2 '^failed to unpack label 0'
	run "$E/zpool" import -d "$dev" "$pool"; expect "import of a cleared pool fails" 1 '' 'no such pool'
	run "$E/newfs" -U "$dev"; expect "newfs over a former pool" 0
	run "$E/zpool" create -f "$pool" "$dev"; expect "zpool create over a ufs" 0
	run "$E/fstyp" -u "$dev"; expect "fstyp -u after zpool create over a ufs: zfs" 0 '^zfs$'
	run "$E/zpool" destroy "$pool"; expect "zpool destroy" 0
	run "$E/newfs" -U "$dev"; expect "newfs over a destroyed pool" 0
	run "$E/fstyp" -u "$dev"; expect "fstyp -u after newfs over a pool: ufs" 0 '^ufs$'
	run "$E/zpool" frobnicate; expect "zpool frobnicate: unrecognized command, exit 2" 2 '' "^unrecognized command 'frobnicate'"
fi

echo
if [ "$fails" -eq 0 ]; then echo "all checks passed"; exit 0; fi
echo "$fails check(s) failed"
exit 1
