#!/bin/bash
# Self-test of the FreeBSD emulators in freebsd/ (part A: uname freebsd-version sysctl kenv
# diskinfo geom gpart swapinfo du stat sha256 su pw lockf), outside a stand-in:
#   test-emulators.sh [--destructive] DEVICE
# Run as root.  The emulators call the real tools under $FSMX_STANDIN_REAL (default /usr
# here) and read their state (disk list) from a temporary $FSMX_STANDIN_STATE naming
# DEVICE's basename as the stand-in disk, so DEVICE is addressed as /dev/<basename>.
# Without --destructive DEVICE is only read; with it, the test writes an MBR to it, makes
# an ext4 on it and mounts it (gpart show/destroy, geom Mode), and wipes it afterwards.
# Prints PASS/FAIL/SKIP lines; exits 1 if anything failed.
set -u

destructive=0
if [ "${1-}" = --destructive ]; then
	destructive=1
	shift
fi
if [ $# -ne 1 ]; then
	echo "usage: test-emulators.sh [--destructive] DEVICE" >&2
	exit 2
fi
DEV=$1
[ "$(id -u)" = 0 ] || { echo "test-emulators.sh: run as root" >&2; exit 2; }
[ -b "$DEV" ] || { echo "test-emulators.sh: $DEV is not a block device" >&2; exit 2; }
case $DEV in
/dev/*) ;;
*) echo "test-emulators.sh: give the device as /dev/NAME" >&2; exit 2 ;;
esac
NAME=${DEV#/dev/}
case $NAME in
*/*) echo "test-emulators.sh: $DEV must sit directly in /dev" >&2; exit 2 ;;
esac

HERE=$(cd "$(dirname "$0")" && pwd)
E=$HERE/freebsd
export FSMX_STANDIN_REAL=${FSMX_STANDIN_REAL:-/usr}
T=$(mktemp -d /tmp/fsmx-emutest.XXXXXX)
MNT=
cleanup() {
	if [ -n "$MNT" ]; then
		umount "$MNT" 2>/dev/null || true
	fi
	rm -rf "$T"
}
trap cleanup EXIT
export FSMX_STANDIN_STATE=$T/state
mkdir -p "$FSMX_STANDIN_STATE"
printf '%s\n' "$NAME" >"$FSMX_STANDIN_STATE/disks"
printf 'freebsd\n' >"$FSMX_STANDIN_STATE/os"

FAILS=0 PASSES=0
pass() { PASSES=$((PASSES + 1)); printf 'PASS %s\n' "$1"; }
fail() { FAILS=$((FAILS + 1)); printf 'FAIL %s\n' "$1"; [ -n "${2-}" ] && printf '     %s\n' "$2"; }
skip() { printf 'SKIP %s\n' "$1"; }

# run CMD...: sets OUT, ERR, RC (stdin from /dev/null unless redirected by the caller)
run() {
	OUT=$("$@" 2>"$T/err")
	RC=$?
	ERR=$(cat "$T/err")
}
rc_is() { if [ "$RC" = "$2" ]; then pass "$1 (exit $2)"; else fail "$1: exit $RC, expected $2" "stderr: $ERR"; fi; }
out_is() { if [ "$OUT" = "$2" ]; then pass "$1"; else fail "$1" "got [$OUT] expected [$2]"; fi; }
out_re() { if printf '%s\n' "$OUT" | grep -Eq -- "$2"; then pass "$1"; else fail "$1" "got [$OUT], wanted /$2/"; fi; }
err_is() { if [ "$ERR" = "$2" ]; then pass "$1"; else fail "$1" "stderr [$ERR] expected [$2]"; fi; }
err_has() { case $ERR in *"$2"*) pass "$1" ;; *) fail "$1" "stderr [$ERR] lacks [$2]" ;; esac; }
line_is() { # line_is DESC N EXPECTED
	local l
	l=$(printf '%s\n' "$OUT" | sed -n "${2}p")
	if [ "$l" = "$3" ]; then pass "$1"; else fail "$1" "line $2 [$l] expected [$3]"; fi
}

# humanize_number(5, HN_B|HN_NOSPACE|HN_DECIMAL) reference values
for pair in 5368709120:5.0G 21474836480:20G 10485760:10M 1048576000:1.0G 1023:1.0K 999:999B 536870912:512M; do
	OUT=$(awk -v q="${pair%%:*}" 'BEGIN {
		split("B K M G T P E", pre, " "); r = 0
		for (i = 0; (q >= 1000 || (q == 999 && r >= 973)) && i < 7; i++) { r = q % 1024; q = int(q / 1024) }
		if (((q == 9 && r < 973) || q < 9) && i > 0)
			printf "%d.%d%s\n", q + int(int((r * 10 + 512) / 1024) / 10), int((r * 10 + 512) / 1024) % 10, pre[i + 1]
		else printf "%.0f%s\n", q + int((r + 512) / 1024), pre[i + 1] }')
	out_is "humanize ${pair%%:*} -> ${pair#*:}" "${pair#*:}"
done

# ---- static checks ----------------------------------------------------------------------
for f in uname freebsd-version sysctl kenv diskinfo geom gpart swapinfo du stat sha256 su pw lockf; do
	if [ ! -x "$E/$f" ]; then fail "$f: present and executable"; continue; fi
	# shellcheck disable=SC2016 # the literal header line
	if grep -q '^REAL=${FSMX_STANDIN_REAL:-/run/fsmx-standin/real}; PATH=$REAL/sbin:$REAL/bin; export PATH$' "$E/$f"; then
		pass "$f: sets the real-tools PATH"
	else
		fail "$f: sets the real-tools PATH"
	fi
	if command -v shellcheck >/dev/null 2>&1; then
		if shellcheck -s dash "$E/$f" >"$T/sc" 2>&1; then pass "$f: shellcheck -s dash"; else fail "$f: shellcheck -s dash" "$(head -5 "$T/sc")"; fi
	else
		skip "$f: shellcheck not installed"
	fi
	if command -v posh >/dev/null 2>&1; then
		if posh -n "$E/$f" 2>"$T/sc"; then pass "$f: posh -n"; else fail "$f: posh -n" "$(cat "$T/sc")"; fi
	fi
done

# ---- uname ---------------------------------------------------------------------------------
run "$E/uname"; out_is "uname" FreeBSD
run "$E/uname" -mrs; out_is "uname -mrs" "FreeBSD 14.1-RELEASE amd64"
run "$E/uname" -s -m -r; out_is "uname -s -m -r (fixed field order)" "FreeBSD 14.1-RELEASE amd64"
run "$E/uname" -a; out_re "uname -a" "^FreeBSD $(cat /proc/sys/kernel/hostname) 14\.1-RELEASE FreeBSD 14\.1-RELEASE .* amd64$"
run "$E/uname" -KU; out_is "uname -KU" "1401000 1401000"
run "$E/uname" -n; out_is "uname -n" "$(cat /proc/sys/kernel/hostname)"
run "$E/uname" -Z; rc_is "uname -Z" 1; err_is "uname -Z message" "uname: illegal option -- Z
usage: uname [-abiKmnoprsUv]"
run "$E/uname" --all; rc_is "uname --all (GNU long option)" 1
run "$E/uname" x; rc_is "uname with an operand" 1

# ---- freebsd-version -------------------------------------------------------------------------
run "$E/freebsd-version"; out_is "freebsd-version" 14.1-RELEASE
run "$E/freebsd-version" -ukr; out_is "freebsd-version -ukr" "14.1-RELEASE
14.1-RELEASE
14.1-RELEASE"
run "$E/freebsd-version" -x; rc_is "freebsd-version -x" 1; err_has "freebsd-version -x usage" "usage: freebsd-version [-kru] [-j jail]"

# ---- sysctl ------------------------------------------------------------------------------------
run "$E/sysctl" -n hw.model hw.ncpu hw.physmem hw.pagesize kern.osreldate
rc_is "sysctl -n five names" 0
line_is "sysctl hw.ncpu" 2 "$(getconf _NPROCESSORS_ONLN)"
line_is "sysctl hw.physmem" 3 "$(awk '$1 == "MemTotal:" { printf "%.0f\n", $2 * 1024 }' /proc/meminfo)"
line_is "sysctl hw.pagesize" 4 "$(getconf PAGESIZE)"
line_is "sysctl kern.osreldate" 5 1401000
run "$E/sysctl" kern.disks; out_is "sysctl kern.disks" "kern.disks: $NAME"
run "$E/sysctl" -n kern.vm_guest kern.ostype kern.osrelease; out_is "sysctl -n kern.vm_guest kern.ostype kern.osrelease" "none
FreeBSD
14.1-RELEASE"
run "$E/sysctl" -n foo kern.ostype bar.baz
rc_is "sysctl two unknown oids" 2; out_is "sysctl known oid still printed" FreeBSD
err_is "sysctl unknown oid messages" "sysctl: unknown oid 'foo'
sysctl: unknown oid 'bar.baz'"
run "$E/sysctl" -i -n nope kern.ostype; rc_is "sysctl -i ignores unknown" 0
run "$E/sysctl" -e kern.ostype; out_is "sysctl -e" "kern.ostype=FreeBSD"
run "$E/sysctl" -a; out_re "sysctl -a lists kern.ostype" '^kern\.ostype: FreeBSD$'
run "$E/sysctl" hw; out_re "sysctl hw (prefix)" '^hw\.ncpu: [0-9]+$'
run "$E/sysctl"; rc_is "sysctl without names" 1
run "$E/sysctl" -Z kern.ostype; rc_is "sysctl -Z" 1; err_has "sysctl -Z message" "sysctl: illegal option -- Z"
run "$E/sysctl" --all; rc_is "sysctl --all" 1
run "$E/sysctl" hw.ncpu=1; rc_is "sysctl setting a read-only oid" 1

# ---- kenv ----------------------------------------------------------------------------------------
run "$E/kenv" vfs.root.mountfrom; out_re "kenv vfs.root.mountfrom" '^(ufs|zfs):.+'
run "$E/kenv" no.such.var; rc_is "kenv unset variable" 255; err_is "kenv unset message" "kenv: unable to get no.such.var"
run "$E/kenv" -q no.such.var; rc_is "kenv -q unset" 255; err_is "kenv -q silent" ""
run "$E/kenv" -Z; rc_is "kenv -Z" 1; err_has "kenv -Z message" "kenv: illegal option -- Z"

# ---- diskinfo ------------------------------------------------------------------------------------
SIZE=$(blockdev --getsize64 "$DEV") SS=$(blockdev --getss "$DEV")
HUM=$(awk -v q="$SIZE" 'BEGIN {
	split("B K M G T P E", pre, " "); r = 0
	for (i = 0; (q >= 1000 || (q == 999 && r >= 973)) && i < 7; i++) { r = q % 1024; q = int(q / 1024) }
	if (((q == 9 && r < 973) || q < 9) && i > 0)
		printf "%d.%d%s\n", q + int(int((r * 10 + 512) / 1024) / 10), int((r * 10 + 512) / 1024) % 10, pre[i + 1]
	else printf "%.0f%s\n", q + int((r + 512) / 1024), pre[i + 1] }')
run "$E/diskinfo" -v "$NAME"
rc_is "diskinfo -v NAME" 0
line_is "diskinfo -v echoes the name as typed" 1 "$NAME"
line_is "diskinfo -v sectorsize line" 2 "$(printf '\t%-12s\t# sectorsize' "$SS")"
line_is "diskinfo -v mediasize line" 3 "$(printf '\t%-12s\t# mediasize in bytes (%s)' "$SIZE" "$HUM")"
line_is "diskinfo -v sectors line" 4 "$(printf '\t%-12s\t# mediasize in sectors' $((SIZE / SS)))"
out_re "diskinfo -v rotation line" "$(printf '^\t(Unknown|0) *\t# Rotation rate in RPM$')"
run "$E/diskinfo" "$DEV"
out_re "diskinfo (plain, tab-separated)" "$(printf '^%s\t%s\t%s\t%s\t[0-9]+\t0(\t[0-9]+\t16\t63)?$' "$DEV" "$SS" "$SIZE" $((SIZE / SS)))"
run "$E/diskinfo" nosuch9; rc_is "diskinfo missing disk" 1; err_is "diskinfo missing disk message" "diskinfo: nosuch9: No such file or directory"
run "$E/diskinfo" -Z "$NAME"; rc_is "diskinfo -Z" 1; err_is "diskinfo -Z message" "diskinfo: illegal option -- Z
usage: diskinfo [-cipsStvw] disk ..."
run "$E/diskinfo"; rc_is "diskinfo without a disk" 1
run "$E/diskinfo" -p -v "$NAME"; rc_is "diskinfo -p -v" 1
run "$E/diskinfo" /dev/null; rc_is "diskinfo on a non-disk" 1; err_has "diskinfo non-disk message" "ioctl(DIOCGMEDIASIZE) failed, probably not a disk."

# ---- geom ------------------------------------------------------------------------------------------
geom_expect() { # geom_expect MODE
	printf 'Geom name: %s\nProviders:\n1. Name: %s\n   Mediasize: %s (%s)\n   Sectorsize: %s\n' "$NAME" "$NAME" "$SIZE" "$HUM" "$SS"
	local pbs
	pbs=$(blockdev --getpbsz "$DEV")
	[ "$pbs" -gt "$SS" ] && printf '   Stripesize: %s\n   Stripeoffset: 0\n' "$pbs"
	printf '   Mode: %s\n' "$1"
}
run "$E/geom" disk list "$NAME"
rc_is "geom disk list NAME" 0
want=$(geom_expect r0w0e0)
if [ "$(printf '%s\n' "$OUT" | head -n "$(printf '%s\n' "$want" | wc -l)")" = "$want" ]; then
	pass "geom disk list block (unused disk: Mode r0w0e0)"
else
	fail "geom disk list block" "got [$OUT]"
fi
out_re "geom disk list descr key" '^   descr: '
run "$E/geom" disk list "/dev/$NAME"; out_re "geom disk list /dev/NAME" "^Geom name: $NAME$"
run "$E/geom" disk list; out_re "geom disk list (all)" "^1\. Name: $NAME$"
run "$E/geom" disk list nosuch9; rc_is "geom unknown disk" 1
err_is "geom unknown disk message" "geom: Class 'DISK' does not have an instance named 'nosuch9'."
run "$E/geom" disk list -Z; rc_is "geom disk list -Z" 1
run "$E/geom"; rc_is "geom without arguments" 1; err_has "geom usage" "usage: geom <class> <command> [options]"

# ---- gpart ----------------------------------------------------------------------------------------
if [ -n "$(blkid -p -o value -s PTTYPE "$DEV" 2>/dev/null)" ]; then
	skip "gpart show on a disk without a table ($DEV has one)"
else
	run "$E/gpart" show "$NAME"; rc_is "gpart show, no table" 1; err_is "gpart show, no table message" "gpart: No such geom: $NAME."
	run "$E/gpart" destroy -F "$NAME"; rc_is "gpart destroy -F, no table" 1; err_is "gpart destroy, no table message" "gpart: No such geom: $NAME."
	run "$E/gpart" show; rc_is "gpart show (all, none)" 0; out_is "gpart show (all, none) prints nothing" ""
fi
run "$E/gpart" show -Z "$NAME"; rc_is "gpart show -Z" 1; err_has "gpart show -Z usage" "usage: gpart show [-l | -r] [-p] [geom ...]"
run "$E/gpart" bogus; rc_is "gpart unknown verb" 1
run "$E/gpart" show nosuch9; rc_is "gpart show unknown disk" 1; err_is "gpart unknown disk message" "gpart: No such geom: nosuch9."

# ---- swapinfo --------------------------------------------------------------------------------------
run "$E/swapinfo" -k; rc_is "swapinfo -k" 0
line_is "swapinfo -k header" 1 "Device          1K-blocks     Used    Avail Capacity"
printf 'Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n/dev/mirror/swap                        partition\t4194300\t\t0\t\t-2\n' >"$T/swaps"
OUT=$(FSMX_STANDIN_SWAPS=$T/swaps "$E/swapinfo" -k)
out_is "swapinfo -k row format (pstat.c capture)" "Device          1K-blocks     Used    Avail Capacity
/dev/mirror/swap   4194300        0  4194300     0%"
printf '/swapfile file 1048576 524288 -3\n' >>"$T/swaps"
OUT=$(FSMX_STANDIN_SWAPS=$T/swaps "$E/swapinfo")
out_is "swapinfo (512-blocks, Total row)" "Device          512-blocks     Used    Avail Capacity
/dev/mirror/swap    8388600        0  8388600     0%
/swapfile          2097152  1048576  1048576    50%
Total             10485752  1048576  9437176    10%"
run "$E/swapinfo" -Z; rc_is "swapinfo -Z" 1; err_is "swapinfo -Z message" "swapinfo: illegal option -- Z
usage: swapinfo [-ghkm] [-M core [-N system]]"

# ---- du ------------------------------------------------------------------------------------------------
D=$T/tree
mkdir -p "$D/a/b" "$D/c"
head -c 1000 /dev/zero >"$D/a/f1"
head -c 5000 /dev/zero >"$D/a/b/f2"
head -c 100000 /dev/urandom >"$D/c/f3"
ln "$D/c/f3" "$D/a/hardlink"
ln -s f1 "$D/a/symlink"
cd "$T" || exit 1
run "$E/du" tree
want=$(du -B512 tree)
out_is "du (512-byte blocks, as GNU du -B512)" "$want"
run "$E/du" -s -k tree; out_is "du -s -k" "$(du -s -k tree)"
run "$E/du" -c tree/a tree/c
out_is "du -c: hard link counted once across operands" "$(du -c -B512 tree/a tree/c)"
apparent=$(find tree -printf '%s\n' | awk '{ s += $1 } END { printf "%.0f\n", s }')
# du.c: -A -B 1 counts bytes; the total is shown in BLOCKSIZE units (512), rounded up
run "$E/du" -A -B 1 -s tree
out_is "du -A -B 1 -s (bytes rounded up to 512-byte units)" "$(( (apparent - 100000 + 511) / 512 ))	tree"
run env BLOCKSIZE=K "$E/du" -s tree; out_is "du honours BLOCKSIZE=K" "$(du -s -k tree)"
run "$E/du" -sh tree; out_re "du -sh" '^ *[0-9.]+[BKMG]	tree$'
run "$E/du" -Z; rc_is "du -Z" 64; err_is "du -Z message" "du: invalid option -- Z
usage: du [-Aclnx] [-H | -L | -P] [-g | -h | -k | -m] [-a | -s | -d depth] [-B blocksize] [-I mask] [-t threshold] [file ...]"
run "$E/du" --apparent-size tree; rc_is "du --apparent-size" 64; err_has "du --apparent-size message" "du: unrecognized option \`--apparent-size'"
run "$E/du" -as tree; rc_is "du -a -s together" 64
run "$E/du" -d; rc_is "du -d without depth" 64
run "$E/du" -s nosuch tree; rc_is "du missing operand" 1; err_is "du missing operand message" "du: nosuch: No such file or directory"

# ---- stat ----------------------------------------------------------------------------------------------
chmod 0640 tree/a/f1
run "$E/stat" -f '%z %u %g %Lp %Su %Sg %N' tree/a/f1
out_is "stat -f '%z %u %g %Lp %Su %Sg %N'" "1000 0 0 640 $(id -un 0) $(id -gn 0) tree/a/f1"
run "$E/stat" -f '%Sp %OLp %#Lp %HT %SY' tree/a/symlink; out_is "stat -f '%Sp %OLp %#Lp %HT %SY' (symlink)" "lrwxrwxrwx 777 0777 Symbolic Link  -> f1"
run "$E/stat" -L -f '%HT %z' tree/a/symlink; out_is "stat -L follows symlinks" "Regular File 1000"
run "$E/stat" -f %z tree/a/f1 tree/c/f3; out_is "stat -f %z, two files" "1000
100000"
run "$E/stat" -n -f %z tree/a/f1; out_is "stat -n" "1000"
run "$E/stat" -f '%m' tree/a/f1; out_is "stat -f %m" "$(command stat -c %Y tree/a/f1)"
run "$E/stat" nosuch; rc_is "stat missing file" 1; err_is "stat missing file message" "stat: nosuch: stat: No such file or directory"
run "$E/stat" -q -f %z nosuch; rc_is "stat -q missing file" 1; err_is "stat -q silent" ""
run "$E/stat" -c %s tree; rc_is "stat -c (GNU)" 1; err_is "stat -c message" "stat: illegal option -- c
usage: stat [-FLnq] [-f format | -l | -r | -s | -x] [-t timefmt] [file|handle ...]"
run "$E/stat" --printf=%s tree; rc_is "stat --printf" 1
run "$E/stat" -f '%Q' tree; rc_is "stat bad format" 1; err_is "stat bad format message" "stat: %Q: bad format"
run "$E/stat" -r tree/a/f1; out_re "stat -r" '^[0-9]+ [0-9]+ 0100640 1 0 0 0 1000 [0-9]+ [0-9]+ [0-9]+ [0-9]+ [0-9]+ [0-9]+ 0 tree/a/f1$'

# ---- sha256 ------------------------------------------------------------------------------------------------
h=$(sha256sum tree/c/f3 | cut -d' ' -f1)
run "$E/sha256" -q tree/c/f3; out_is "sha256 -q" "$h"
run "$E/sha256" tree/c/f3; out_is "sha256" "SHA256 (tree/c/f3) = $h"
run "$E/sha256" -r tree/c/f3; out_is "sha256 -r" "$h tree/c/f3"
run "$E/sha256" -s abc; out_is "sha256 -s abc" 'SHA256 ("abc") = ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad'
OUT=$(printf abc | "$E/sha256"); out_is "sha256 (stdin)" ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad
run "$E/sha256" -q nosuch; rc_is "sha256 unreadable file" 1; err_is "sha256 unreadable message" "sha256: nosuch: No such file or directory"
run "$E/sha256" -c 00 -q tree/c/f3; rc_is "sha256 -c mismatch" 2
run "$E/sha256" -Z; rc_is "sha256 -Z" 1
run "$E/sha256" --quiet tree/c/f3; rc_is "sha256 --quiet (long option)" 1

# ---- su -----------------------------------------------------------------------------------------------------
if getent passwd postgres >/dev/null; then
	run "$E/su" postgres -c 'id -un'; out_is "su postgres -c cmd (args go to the shell)" postgres
	run "$E/su" postgres -c 'exit 7'; rc_is "su passes the exit status" 7
	run "$E/su" -m postgres -c 'id -un'; out_is "su -m postgres -c cmd" postgres
	run "$E/su" -l postgres -c 'pwd'; out_is "su -l: home directory" "$(getent passwd postgres | cut -d: -f6)"
	# shellcheck disable=SC2016 # expanded by postgres's shell
	run "$E/su" - postgres -c 'echo "$USER"'; out_is "su -: USER" postgres
	run "$E/su" -c postgres -c 'id -un'; rc_is "su -c before the login is a class" 1
else
	skip "su as postgres (no postgres user)"
fi
run "$E/su" nosuchuser9 -c true; rc_is "su unknown login" 1; err_is "su unknown login message" "su: unknown login: nosuchuser9"
run "$E/su" -Z; rc_is "su -Z" 1; err_is "su -Z message" "su: illegal option -- Z
usage: su [-] [-flms] [-c class] [login [args]]"
run "$E/su" --login root -c true; rc_is "su --login (long option)" 1

# ---- pw -----------------------------------------------------------------------------------------------------
run "$E/pw" usershow root; out_re "pw usershow root" '^root:\*:0:0::0:0:[^:]*:[^:]*:[^:]*$'
run "$E/pw" user show root; out_re "pw user show root" '^root:\*:0:0::0:0:'
run "$E/pw" usershow nosuchuser9; rc_is "pw usershow unknown" 67; err_is "pw unknown user message" "pw: no such user \`nosuchuser9'"
run "$E/pw"; rc_is "pw without arguments" 64
run "$E/pw" usershow root -Z; rc_is "pw usershow -Z" 64

# ---- lockf -------------------------------------------------------------------------------------------------
run "$E/lockf" "$T/lk" sh -c 'echo in; exit 4'; rc_is "lockf passes the exit status" 4; out_is "lockf runs the command" in
if [ -e "$T/lk" ]; then fail "lockf removes the lock file"; else pass "lockf removes the lock file"; fi
run "$E/lockf" -k "$T/lk" true; rc_is "lockf -k" 0
if [ -e "$T/lk" ]; then pass "lockf -k keeps the lock file"; else fail "lockf -k keeps the lock file"; fi
OUT=$(echo piped | "$E/lockf" "$T/lk" cat); out_is "lockf: command reads stdin" piped
"$E/lockf" -k "$T/busy" sleep 3 &
holder=$!
sleep 0.5
run "$E/lockf" -t 0 "$T/busy" true; rc_is "lockf -t 0 on a held lock" 75; err_is "lockf busy message" "lockf: $T/busy: already locked"
run "$E/lockf" -s -t 0 "$T/busy" true; rc_is "lockf -s -t 0 on a held lock" 75; err_is "lockf -s silent" ""
run "$E/lockf" -k -t 10 "$T/busy" echo got; rc_is "lockf -t 10 waits for the lock" 0; out_is "lockf waited command" got
wait "$holder"
run "$E/lockf" -n "$T/nolock" true; rc_is "lockf -n on a missing file" 69
run "$E/lockf" -t x "$T/lk" true; rc_is "lockf bad timeout" 64; err_is "lockf bad timeout message" "lockf: invalid timeout \"x\""
run "$E/lockf" -Z "$T/lk" true; rc_is "lockf -Z" 64
run "$E/lockf" "$T/lk"; rc_is "lockf without a command" 64; err_is "lockf usage" "usage: lockf [-knsw] [-t seconds] file command [arguments]"
run "$E/lockf" "$T/lk" no-such-command-9; rc_is "lockf: command not found" 1

# ---- destructive: partition table, mounted disk ---------------------------------------------------
if [ $destructive = 1 ]; then
	cd / || exit 1
	# An MBR with one Linux partition: start 2048, 4096 sectors.
	dd if=/dev/zero of="$DEV" bs=1M count=1 conv=fsync status=none
	{
		printf '\x00\x00\x00\x00\x83\x00\x00\x00'
		printf '\x00\x08\x00\x00\x00\x10\x00\x00'
	} | dd of="$DEV" bs=1 seek=446 conv=notrunc,fsync status=none
	printf '\x55\xaa' | dd of="$DEV" bs=1 seek=510 conv=notrunc,fsync status=none
	blockdev --rereadpt "$DEV" 2>/dev/null || true
	run "$E/gpart" show "$NAME"
	rc_is "gpart show (MBR)" 0
	last=$((SIZE / SS - 1)); w=${#last}
	line_is "gpart show header" 1 "$(printf '=>%*d  %*d  %s  MBR  (%s)' "$w" 63 "$w" $((SIZE / SS - 63)) "$NAME" "$HUM")"
	line_is "gpart show free space before the partition" 2 "$(printf '  %*d  %*d  %*s  - free -  (%s)' "$w" 63 "$w" $((2048 - 63)) ${#NAME} "" "$(awk -v q=$(((2048 - 63) * SS)) 'BEGIN {
		split("B K M G T P E", pre, " "); r = 0
		for (i = 0; (q >= 1000 || (q == 999 && r >= 973)) && i < 7; i++) { r = q % 1024; q = int(q / 1024) }
		if (((q == 9 && r < 973) || q < 9) && i > 0)
			printf "%d.%d%s\n", q + int(int((r * 10 + 512) / 1024) / 10), int((r * 10 + 512) / 1024) % 10, pre[i + 1]
		else printf "%.0f%s\n", q + int((r + 512) / 1024), pre[i + 1] }')")"
	line_is "gpart show partition row" 3 "$(printf '  %*d  %*d  %*d  linux-data  (2.0M)' "$w" 2048 "$w" 4096 ${#NAME} 1)"
	run "$E/gpart" destroy "$NAME"; rc_is "gpart destroy without -F, partitions present" 1; err_is "gpart destroy busy message" "gpart: Device busy"
	run "$E/gpart" destroy -F "$NAME"; rc_is "gpart destroy -F" 0; out_is "gpart destroy -F message" "$NAME destroyed"
	run "$E/gpart" show "$NAME"; rc_is "gpart show after destroy" 1
	# geom Mode of a mounted disk
	if mkfs.ext4 -q -F "$DEV" >/dev/null 2>&1; then
		MNT=$T/mnt
		mkdir -p "$MNT"
		if mount "$DEV" "$MNT"; then
			run "$E/geom" disk list "$NAME"; out_re "geom Mode of a mounted disk" '^   Mode: r1w1e1$'
			umount "$MNT"
			MNT=
		else
			fail "mount $DEV for the geom Mode test"
		fi
		run "$E/geom" disk list "$NAME"; out_re "geom Mode after umount" '^   Mode: r0w0e0$'
		wipefs -q -a "$DEV"
	else
		fail "mkfs.ext4 $DEV for the geom Mode test"
	fi
else
	skip "gpart show/destroy with a table, geom Mode of a mounted disk (needs --destructive)"
fi

printf '%d passed, %d failed\n' "$PASSES" "$FAILS"
[ "$FAILS" = 0 ]
