#!/bin/bash
# The README's test command, as root on a Debian 12 machine.  In order:
#  1. the programs any test runs that are missing are installed (one apt-get update),
#     ansible-core and the shellcheck package included; run without root, it names them and the
#     command that installs them, and stops;
#  2. one debug build, and the list of test binaries from cargo itself;
#  3. the lab the tests need (tests/support/lab.rs LAB_UP): a lab of another shape that
#     stands in the lab dir (the README's demo lab, say) is taken down and brought up
#     again in its own shape at the end, and the script says so; `fsmatrix lab up
#     --install` installs the lab's own packages when they are missing;
#  4. every suite, with FSMATRIX_TEST_REQUIRE_ALL=1 (a missing tool, root or lab fails
#     the suite here, where plain `cargo test` would skip it): the suites that need the
#     machine to themselves (they take the lab down and compare the machine before and
#     after) one at a time, the others side by side, at most FSMATRIX_TEST_JOBS (3) at
#     once; the lab tests hold the hosts they use through tests/support/lab.rs's host
#     locks, so two suites never share a host.  Every suite runs even when one fails;
#  5. one line per suite: passed, failed or skipped and why, with its time; each
#     suite's whole output is in target/test-logs/<suite>.log.  Exit 1 if any failed.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS

# What the tests run besides the lab's packages, as program:Debian package.  dash, posh,
# mksh, yash and busybox run the remote scripts and the quoted commands under other POSIX
# shells; tcsh is the csh login shell the remote layer must survive (FreeBSD's root had
# it); zstd is `tar --zstd` in the archive test; chromium renders the HTML report;
# the shellcheck program checks the remote scripts (tests/scripts_linux.rs); python3 reads cargo's
# JSON here and runs the Ansible import test's ansible-inventory.
tools="python3:python3 dash:dash posh:posh mksh:mksh yash:yash busybox:busybox tcsh:tcsh zstd:zstd chromium:chromium shellcheck:shellcheck"
# An executable regular file in the system folders or PATH (as the tests look for it).
have() {
	local d IFS=:
	for d in /usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:$PATH; do
		[ -f "$d/$1" ] && [ -x "$d/$1" ] && return 0
	done
	return 1
}
missing=()
for pair in $tools; do
	have "${pair%%:*}" || missing+=("${pair#*:}")
done

if [ "$(id -u)" != 0 ]; then
	{
		echo "tests/run.sh: needs root: it installs packages, brings up the local lab and runs"
		echo "  the tests that start servers and mount filesystems.  Run it as root: sudo tests/run.sh"
		if [ "${#missing[@]}" -gt 0 ]; then
			echo "  Packages the tests need that are missing: ${missing[*]}; as root it installs them, or:"
			echo "  sudo apt-get update && sudo apt-get install -y --no-install-recommends ${missing[*]}"
		fi
		echo "  (Plain \`cargo test\` runs as any user: it skips what needs root, the lab or a"
		echo "  missing tool, and says which.)"
	} >&2
	exit 2
fi
command -v cargo >/dev/null 2>&1 || {
	echo "tests/run.sh: cargo is missing; install Rust 1.85 or newer with rustup (https://rustup.rs)" >&2
	exit 2
}
say() { printf 'tests/run.sh: %s\n' "$*" >&2; }
apt_update() {
	# FSMATRIX_LAB_APT_UPDATED=1: the package lists were just updated (by CI, or here),
	# so neither this script nor `lab up --install` runs apt-get update again.
	if [ "${FSMATRIX_LAB_APT_UPDATED:-0}" != 1 ]; then
		DEBIAN_FRONTEND=noninteractive apt-get update -q
		export FSMATRIX_LAB_APT_UPDATED=1
	fi
}

if [ "${#missing[@]}" -gt 0 ]; then
	t=$SECONDS
	apt_update
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
	say "installed ${missing[*]} in $((SECONDS - t)) s"
fi

# ansible-inventory (ansible-core from PyPI, pinned) for the Ansible import test, which
# compares each imported value with `ansible-inventory --list`'s; only when missing.
# Debian 12's pip refuses the system Python (PEP 668): a venv under /opt.
ansible_core=2.19.14
if ! have ansible-inventory && [ ! -x /opt/fsmatrix-ansible/bin/ansible-inventory ]; then
	t=$SECONDS
	have python3 || {
		apt_update
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends python3
	}
	python3 -m venv /opt/fsmatrix-ansible 2>/dev/null || {
		rm -rf /opt/fsmatrix-ansible
		apt_update
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends python3-venv
		python3 -m venv /opt/fsmatrix-ansible
	}
	/opt/fsmatrix-ansible/bin/pip install -q "ansible-core==$ansible_core"
	say "installed ansible-core $ansible_core in $((SECONDS - t)) s"
fi
have ansible-inventory || export PATH=$PATH:/opt/fsmatrix-ansible/bin

t=$SECONDS
cargo build --workspace --all-targets
# The test binaries as cargo built them: "suite executable" per line (the library's unit
# tests are the suite `lib`).
target_dir=${CARGO_TARGET_DIR:-$PWD/target}
bins=$(cargo test --workspace --no-run --message-format=json 2>/dev/null | python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        kind = m["target"]["kind"]
        name = "lib" if kind == ["lib"] else m["target"]["name"]
        print(name, m["executable"])')
say "built in $((SECONDS - t)) s"
bin=$target_dir/debug/fsmatrix
dir=${FSMATRIX_LAB_DIR:-/var/lib/fsmatrix/lab}
logs=$target_dir/test-logs
rm -rf "$logs"
mkdir -p "$logs"

# --- the lab these tests need -------------------------------------------------------
# The shape of tests/support/lab.rs LAB_UP: 3 Linux hosts, a FreeBSD and a DragonFly
# stand-in, and a TCG guest of lab1 (its Debian image is built once and cached in
# "$dir/guest-cache" for every later `lab up`).
want="--hosts 5 --os linux,linux,linux,freebsd,dragonfly --guests 1"
lab_up() {
	# shellcheck disable=SC2086 # the shape is a list of words
	"$bin" lab up --install $1 --dir "$dir"
}
restore=""
ours=0
if [ -e "$dir/state" ]; then
	have_shape=$(cat "$dir/shape" 2>/dev/null || echo unknown)
	if [ "${have_shape% --disk-size *}" = "$want" ]; then
		say "using the lab standing in $dir ($have_shape)"
	else
		say "a lab of another shape stands in $dir ($have_shape): taking it down for the tests; it is brought up again at the end, with new host keys"
		restore=$have_shape
		"$bin" lab down --dir "$dir"
	fi
fi
# Brings the person's lab back, or says plainly why it could not.
# shellcheck disable=SC2317 # run by the EXIT trap (finish)
put_back() {
	[ -n "$restore" ] || return 0
	if [ "$restore" = unknown ]; then
		say "the lab that stood in $dir recorded no shape (an older fsmatrix made it); bring it up again with \`fsmatrix lab up\`"
	elif lab_up "$restore" >"$logs/lab-restore.log" 2>&1; then
		say "your lab is up again in $dir ($restore)"
	else
		say "could not bring your lab back up ($restore): see $logs/lab-restore.log"
	fi
}
ensure_lab() {
	[ -e "$dir/state" ] && return 0
	local t=$SECONDS
	lab_up "$want" >"$logs/lab-up.log" 2>&1 || {
		cat "$logs/lab-up.log" >&2
		say "could not bring the test lab up (above); the lab suites fail"
		return 1
	}
	ours=1
	say "test lab up in $((SECONDS - t)) s ($want)"
}
take_down() {
	[ "$ours" = 1 ] || return 0
	"$bin" lab down --dir "$dir" >"$logs/lab-down.log" 2>&1 || say "lab down failed: see $logs/lab-down.log"
	ours=0
}
# shellcheck disable=SC2317 # the EXIT trap
finish() {
	take_down
	put_back
}
trap finish EXIT

# --- the suites ---------------------------------------------------------------------
# A suite needs the machine to itself when its source says so
# (support::skip::needs_root_and_the_machine_alone): it takes the lab down and compares the
# machine before and after.  The rest run side by side.
alone=()
shared=()
declare -A exe
while read -r name path; do
	[ -n "$name" ] || continue
	exe[$name]=$path
	if [ -f "tests/$name.rs" ] && grep -q 'needs_root_and_the_machine_alone' "tests/$name.rs"; then
		alone+=("$name")
	else
		shared+=("$name")
	fi
done <<<"$bins"
# Plain `cargo test` as nobody with each optional program hidden (tests/without-optional.sh).
mapfile -t every_exe < <(printf '%s\n' "$bins" | awk 'NF == 2 { print $2 }')
shared+=(without-optional)
# The documentation's examples (rustdoc builds and runs them: `cargo test --doc`).
shared+=(doc)
# Longest first, by the times of the last run on this machine, else by the times the
# repository keeps (tests/suite-times.txt): on a fresh clone the longest suite (engine)
# must not start last, or it alone decides when the side-by-side phase ends.
times=$target_dir/test-times.txt
order=$times
[ -f "$order" ] || order=tests/suite-times.txt
if [ -f "$order" ]; then
	mapfile -t shared < <(for s in "${shared[@]}"; do
		printf '%s %s\n' "$(awk -v s="$s" '$1 == s { print $2 }' "$order" | tail -n 1 | grep . || echo 0)" "$s"
	done | sort -rn | cut -d' ' -f2)
fi

# Runs one suite's binary as cargo test would (from the package's folder), its whole
# output to its log; per-test times (libtest's --report-time, an unstable flag of the
# test binary only: RUSTC_BOOTSTRAP never reaches cargo or rustc).
run_suite() {
	local name=$1 t=$SECONDS rc=0
	if [ "$name" = doc ]; then
		cargo test --workspace --doc </dev/null >"$logs/$name.log" 2>&1 || rc=$?
	elif [ "$name" = without-optional ]; then
		tests/without-optional.sh "$target_dir" "${every_exe[@]}" </dev/null >"$logs/$name.log" 2>&1 || rc=$?
	else
		(cd orchestrator && FSMATRIX_TEST_REQUIRE_ALL=1 RUSTC_BOOTSTRAP=1 \
			"${exe[$name]}" -Z unstable-options --report-time </dev/null) >"$logs/$name.log" 2>&1 || rc=$?
	fi
	printf '%s %s %s\n' "$name" "$rc" "$((SECONDS - t))" >"$logs/$name.rc"
}
jobs_max=${FSMATRIX_TEST_JOBS:-3}
t=$SECONDS
ensure_lab || true
say "running ${#shared[@]} suites side by side (at most $jobs_max at once): ${shared[*]}"
for s in "${shared[@]}"; do
	while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n || true; done
	run_suite "$s" &
done
wait
say "side by side: $((SECONDS - t)) s"
take_down
for s in "${alone[@]}"; do
	say "running $s alone"
	run_suite "$s"
done

# --- one line per suite ---------------------------------------------------------------
failed=0
: >"$times.new"
echo
echo "tests/run.sh: suites (logs in $logs):"
for s in "${shared[@]}" "${alone[@]}"; do
	read -r _ rc secs <"$logs/$s.rc"
	printf '%s %s\n' "$s" "$secs" >>"$times.new"
	log=$logs/$s.log
	# (grep finds no line in a suite that is not a test binary: without-optional;
	# under pipefail that must not end the script.)
	counts=$({ grep -E '^test result:' "$log" || true; } | awk '{ p += $4; f += $6; i += $8 } END { if (NR) printf "%d passed, %d failed, %d ignored", p, f, i }')
	[ "$s" != without-optional ] || counts="$(grep -c '^ok ' "$log" || true) checks as nobody, optional programs hidden"
	skipped=$(grep -cE '^skipped: ' "$log" || true)
	if [ "$rc" = 0 ] && grep -qE "^skipped: $s " "$log"; then
		printf '  skipped  %-16s %5d s  %s\n' "$s" "$secs" "$(grep -m1 -E "^skipped: $s " "$log")"
	elif [ "$rc" = 0 ]; then
		printf '  passed   %-16s %5d s  %s%s\n' "$s" "$secs" "$counts" "$([ "$skipped" = 0 ] || printf '; %s parts skipped' "$skipped")"
	else
		failed=1
		printf '  FAILED   %-16s %5d s  %s (exit %s)\n' "$s" "$secs" "${counts:-no test result}" "$rc"
		{ grep -E '^test .* FAILED|^FAILED|panicked at' "$log" || true; } | head -n 5 | sed 's/^/             /'
	fi
done
mv "$times.new" "$times"
echo "tests/run.sh: $((SECONDS - start)) s in all"
exit "$failed"
