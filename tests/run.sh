#!/bin/bash
# The README's test command: build once (debug), make sure the local lab is up (bringing
# it up with --install if it is not, and down again at the end), run every test.
set -euo pipefail
cd "$(dirname "$0")/.."

command -v cargo >/dev/null 2>&1 || {
	echo "tests/run.sh: cargo is missing; install Rust 1.85 or newer with rustup (https://rustup.rs)" >&2
	exit 2
}
cargo build --workspace --all-targets
bin=$PWD/target/debug/fsmatrix
dir=${FSMATRIX_LAB_DIR:-/var/lib/fsmatrix/lab}

if [ ! -e "$dir/inventory.toml" ]; then
	# The standard test lab (tests/common LAB_UP): 3 Linux hosts and a FreeBSD stand-in.
	"$bin" lab up --install --hosts 5 --os linux,linux,linux,freebsd,dragonfly --dir "$dir"
	trap '"$bin" lab down --dir "$dir"' EXIT
fi
cargo test --workspace
