#!/bin/bash
# The README's test command, as root on a Debian 12 machine.  In order:
#  1. the programs the tests run that are missing are installed (one apt-get update);
#     run without root, it names them and the command that installs them, and stops;
#  2. one debug build;
#  3. the local lab, if none stands: `fsmatrix lab up --install` installs the lab's own
#     packages (no second apt-get update), and the lab goes down again at the end;
#  4. every test, with FSMATRIX_TEST_REQUIRE_ALL=1: a missing tool, root or lab fails
#     the run here, where plain `cargo test` would skip that test or suite.
set -euo pipefail
cd "$(dirname "$0")/.."

# What the tests run besides the lab's packages, as program:Debian package.  dash, posh,
# mksh, yash and busybox run the remote scripts and the quoted commands under other POSIX
# shells; tcsh is the csh login shell the remote layer must survive (FreeBSD's root had
# it); zstd is `tar --zstd` in the archive test; chromium renders the HTML report.
tools="dash:dash posh:posh mksh:mksh yash:yash busybox:busybox tcsh:tcsh zstd:zstd chromium:chromium"
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

if [ "${#missing[@]}" -gt 0 ]; then
	t=$SECONDS
	# FSMATRIX_LAB_APT_UPDATED=1: the package lists were just updated (by CI, or below),
	# so neither this script nor `lab up --install` runs apt-get update again.
	if [ "${FSMATRIX_LAB_APT_UPDATED:-0}" != 1 ]; then
		DEBIAN_FRONTEND=noninteractive apt-get update -q
		export FSMATRIX_LAB_APT_UPDATED=1
	fi
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
	echo "tests/run.sh: installed ${missing[*]} in $((SECONDS - t)) s" >&2
fi

# ansible-inventory (ansible-core from PyPI, pinned) for the Ansible import test, which
# compares each imported value with `ansible-inventory --list`'s; only when missing.
# Debian 12's pip refuses the system Python (PEP 668): a venv under /opt.
ansible_core=2.19.14
if ! have ansible-inventory && [ ! -x /opt/fsmatrix-ansible/bin/ansible-inventory ]; then
	t=$SECONDS
	have python3 || DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends python3
	python3 -m venv /opt/fsmatrix-ansible 2>/dev/null || {
		rm -rf /opt/fsmatrix-ansible
		if [ "${FSMATRIX_LAB_APT_UPDATED:-0}" != 1 ]; then
			DEBIAN_FRONTEND=noninteractive apt-get update -q
			export FSMATRIX_LAB_APT_UPDATED=1
		fi
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends python3-venv
		python3 -m venv /opt/fsmatrix-ansible
	}
	/opt/fsmatrix-ansible/bin/pip install -q "ansible-core==$ansible_core"
	echo "tests/run.sh: installed ansible-core $ansible_core in $((SECONDS - t)) s" >&2
fi
have ansible-inventory || export PATH=$PATH:/opt/fsmatrix-ansible/bin

cargo build --workspace --all-targets
bin=$PWD/target/debug/fsmatrix
dir=${FSMATRIX_LAB_DIR:-/var/lib/fsmatrix/lab}

if [ ! -e "$dir/inventory.toml" ]; then
	# The standard test lab (tests/support/lab.rs LAB_UP): 3 Linux hosts, a FreeBSD and a
	# DragonFly stand-in, and a TCG guest of lab1 (its Debian image is built here once per
	# run, a few minutes, and cached in "$dir/guest-cache" for every later `lab up`).
	trap '"$bin" lab down --dir "$dir"' EXIT
	"$bin" lab up --install --hosts 5 --os linux,linux,linux,freebsd,dragonfly --guests 1 --dir "$dir"
fi
FSMATRIX_TEST_REQUIRE_ALL=1 cargo test --workspace
