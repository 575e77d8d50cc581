#!/bin/bash
# Plain `cargo test`, as a person without root and without the optional programs would
# run it, must pass and say what it skipped (issue 38).  Run by tests/run.sh as root, as
# the suite `without-optional`:
#   tests/without-optional.sh TARGET_DIR EXECUTABLE...
# Each optional program is hidden for real: in a private mount namespace /dev/null is
# bound over its file (a character device is no executable file, for `command -v` as for
# the tests' own lookup, by PATH or by absolute path), and the test binaries then run as
# `nobody`, without FSMATRIX_TEST_REQUIRE_ALL.  First with every optional program hidden
# at once: every binary exits 0 and each program is named in a `skipped: … needs` line.
# Then each program alone is hidden and the tests that named it are run again by name.
# Nothing outside the namespace changes; the folders the tests need are made reachable
# for `nobody` inside it only.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || {
	echo "tests/without-optional.sh: needs root (a mount namespace, then it runs the tests as nobody)" >&2
	exit 2
}
target=$1
shift
repo=$PWD

# The optional programs, as the tests look for them (tests/support/skip.rs and
# orchestrator/src/testing.rs tool_or_skip; tests/pure/report_html.rs CHROMIUM).
optional="qemu-system-x86_64 qemu-img chromium posh mksh yash busybox tcsh csh zstd ansible-inventory"
PATH=$PATH:/opt/fsmatrix-ansible/bin
# The file each one is (links followed), once each.
files_of() {
	local p f
	for p in "$@"; do
		f=$(command -v "$p" 2>/dev/null) || continue
		readlink -f "$f"
	done | sort -u
}

work=$(mktemp -d /tmp/fsmx-without-optional.XXXXXX)
chmod 0755 "$work"
trap 'rm -rf "$work"' EXIT

# Runs "$@" as nobody in a mount namespace where the files $hide (newline-separated) are
# /dev/null and $repo and $target are reachable.
as_nobody_hiding() {
	local hide=$1
	shift
	# shellcheck disable=SC2016 # the inner script expands its own variables
	HIDE=$hide REPO=$repo TARGET=$target WORK=$work unshare --mount --propagation private bash -c '
set -eu
# Each folder above the repository and the target folder that others cannot enter
# (/root, say) is replaced, in this namespace only, by a bare tmpfs with the one
# folder bound back in.
for d in "$REPO" "$TARGET"; do
	a=/
	for part in $(printf "%s\n" "$d" | tr "/" " "); do
		a=${a%/}/$part
		[ "$a" = "$d" ] && break
		if [ "$(( $(stat -c %a "$a" | sed "s/^/0/") & 1 ))" = 0 ]; then
			keep=$WORK/keep.$(printf "%s" "$d" | md5sum | cut -c1-8)
			mkdir -p "$keep"
			mount --bind "$d" "$keep"
			mount -t tmpfs -o mode=0755 fsmx-reach "$a"
			mkdir -p "$d"
			mount --bind "$keep" "$d"
			break
		fi
	done
done
printf "%s\n" "$HIDE" | while IFS= read -r f; do
	[ -z "$f" ] || mount --bind /dev/null "$f"
done
home=$WORK/home
mkdir -p "$home"
chown 65534:65534 "$home"
cd "$REPO/orchestrator"
exec setpriv --reuid=65534 --regid=65534 --clear-groups \
	env -i PATH="$PATH" HOME="$home" TMPDIR=/tmp LANG=C.UTF-8 INSTA_WORKSPACE_ROOT="$REPO" "$@"
' fsmx "$@"
}

fail=0
# shellcheck disable=SC2086 # a list of words
hidden_all=$(files_of $optional)
echo "hidden: $(printf '%s\n' "$hidden_all" | tr '\n' ' ')"
for exe in "$@"; do
	name=$(basename "$exe")
	if as_nobody_hiding "$hidden_all" "$exe" >"$work/$name.out" 2>&1; then
		echo "ok       $name: $(grep -cE '^skipped: ' "$work/$name.out" || true) skip lines"
	else
		echo "FAILED   $name (as nobody, every optional program hidden):"
		grep -E '^test .* FAILED|panicked at|^FAILED' "$work/$name.out" | head -n 8 | sed 's/^/  /'
		fail=1
	fi
done
cat "$work"/*.out >"$work/all.skips"
for p in $optional; do
	f=$(files_of "$p")
	[ -n "$f" ] || continue
	# The tests that say they need it: "skipped: [suite: ]<test> needs `p`".
	tests=$(sed -nE "s/^skipped: ([a-z_]+: )?([A-Za-z0-9_:]+) needs \`([^\`]*\/)?$p\`.*/\2/p" "$work/all.skips" | sort -u)
	if [ -z "$tests" ]; then
		continue
	fi
	n=0
	for exe in "$@"; do
		name=$(basename "$exe")
		for t in $tests; do
			# Only the binary that has the test (libtest lists it).  grep reads it all: with
			# pipefail, `grep -q` would fail the list by SIGPIPE now and then.
			as_nobody_hiding "" "$exe" --list --exact "$t" 2>/dev/null | grep ': test$' >/dev/null || continue
			n=$((n + 1))
			if ! as_nobody_hiding "$f" "$exe" --exact "$t" >"$work/one.out" 2>&1 ||
				! grep -qE "needs \`([^\`]*/)?$p\`" "$work/one.out"; then
				echo "FAILED   $name $t with only $p hidden:"
				tail -n 8 "$work/one.out" | sed 's/^/  /'
				fail=1
			fi
		done
	done
	if [ "$n" = 0 ]; then
		# shellcheck disable=SC2086 # the test names, one word each
		echo "FAILED   only $p hidden: no binary lists the tests that said they need it: $(printf '%s ' $tests)"
		fail=1
		continue
	fi
	echo "ok       only $p hidden: $n tests skip what needs it and pass"
done
# Every optional program that is here was named by some test.
for p in $optional; do
	[ -n "$(files_of "$p")" ] || continue
	case $p in
	# csh is the name the tests ask for (tcsh is its file); vm-check's test expects qemu's absence named as
	# a problem, which it is, rather than skipping.
	tcsh | qemu-system-x86_64) continue ;;
	esac
	grep -qE "needs \`([^\`]*/)?$p\`" "$work/all.skips" || {
		echo "FAILED   no test said it needs \`$p\` with it hidden (is the list above stale?)"
		fail=1
	}
done
exit "$fail"
