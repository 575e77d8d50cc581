#!/bin/sh
# shellcheck shell=dash
# $(pg_args) is split on purpose: its words are paths from mktemp, no spaces.
# shellcheck disable=SC2046
# Test harness for remote-scripts/linux.sh on real loop devices, real
# filesystems and a real PostgreSQL.  Run as root, in a private mount
# namespace (tests/scripts_linux.rs does this):
#   unshare --mount --propagation private dash tests/scripts_linux/harness.sh SCENARIO [ARGS]
# Scenarios: cell FS [mount_opt...] | guard | half | marks | refused-opt | swap | sizes [FS...]
# Output: `step.key=value` lines (every data line of every verb, prefixed by
# the step) and `check.<name>=ok` lines; any failed check exits non-zero with
# `FAIL: ...` on stderr.  Everything it makes (loop device, image, zfs-fuse
# daemon, mounts, postgres) is removed by PID / by path on exit.
set -eu

HERE=$(cd "$(dirname "$0")" && pwd)
SCRIPT=$(cd "$HERE/../../remote-scripts" && pwd)/linux.sh
# The shell the remote script runs under (dash by default; busybox ash, posh).
SCRIPT_SH=${FSMX_TEST_SH:-dash}
PG_BIN=${FSMX_TEST_PG_BIN:-/usr/lib/postgresql/15/bin}
# The pool name fsmatrix makes (own_pool in common.sh: the guard knows its pools
# by that name alone); the zfs-fuse daemon is the harness's own, so no clash.
POOL=fsmx
# A port of our own: other helpers' PostgreSQL servers share this loopback.
PORT=$((20000 + $$ % 20000))

TMP=
LOOP=
# The loop device's identity as `facts` prints it (what a sweep passes to make-fs).
IDENT=
ZFS_PID=
FS=

log() { printf '%s\n' "$*" >&2; }
fail() {
	printf 'FAIL: %s\n' "$*" >&2
	exit 1
}
ok() { printf 'check.%s=ok\n' "$1"; }

cleanup() {
	set +e
	if [ -n "$LOOP" ]; then
		$SCRIPT_SH "$SCRIPT" teardown dev="$LOOP" allowed="$LOOP" fs="${FS:-ext4}" \
			mnt="$TMP/mnt" pool="$POOL" pg_bin="$PG_BIN" cell="$TMP/cell" >/dev/null 2>&1
		umount "$TMP/mnt" 2>/dev/null
	fi
	if [ -n "$ZFS_PID" ]; then
		zpool destroy -f "$POOL" >/dev/null 2>&1
		kill "$ZFS_PID" 2>/dev/null
		_i=0
		while kill -0 "$ZFS_PID" 2>/dev/null && [ "$_i" -lt 100 ]; do
			sleep 0.1
			_i=$((_i + 1))
		done
		kill -9 "$ZFS_PID" 2>/dev/null
	fi
	[ -n "$LOOP" ] && losetup -d "$LOOP"
	[ -n "$TMP" ] && rm -rf "$TMP"
}

setup() {
	[ "$(id -u)" = 0 ] || fail "the harness needs root (loop devices, mounts)"
	TMP=$(mktemp -d /var/tmp/fsmx-scripts-test.XXXXXX)
	# psql and pgbench run as client_user (nobody): it must reach the run folders.
	chmod 0755 "$TMP"
	chmod 0755 "$TMP"
	truncate -s "${1:-1G}" "$TMP/disk.img"
	LOOP=$(losetup -f --show "$TMP/disk.img")
	log "harness: loop device $LOOP, folder $TMP, port $PORT"
	printf 'setup.loop=%s\n' "$LOOP"
	IDENT=$(ident_of "$LOOP")
	printf 'setup.ident=%s\n' "$IDENT"
}

# ident_of DEV: DEV's identity, as `facts` prints it.
ident_of() {
	$SCRIPT_SH "$SCRIPT" facts dev="$1" | sed -n 's/^device\.0\.ident=//p'
}

# zfs_daemon: a zfs-fuse of our own, with private socket, lock and cache
# folders (/run, /etc/zfs, /var/lib/zfs: tmpfs in this private mount
# namespace), killed by PID on exit.
zfs_daemon() {
	mount -t tmpfs fsmx-test-run /run
	mkdir -p /run/zfs /run/lock
	mount -t tmpfs fsmx-test-etczfs /etc/zfs
	# Debian's zfs-fuse keeps its pool cache here: a pool left in it by
	# anyone would be imported by our daemon (and refused by the guard).
	[ ! -d /var/lib/zfs ] || mount -t tmpfs fsmx-test-varlibzfs /var/lib/zfs
	zfs-fuse --no-daemon --no-kstat-mount --pidfile /run/zfs/zfs-fuse.pid >"$TMP/zfs-fuse.log" 2>&1 &
	ZFS_PID=$!
	_i=0
	until zpool list >/dev/null 2>&1; do
		_i=$((_i + 1))
		[ "$_i" -lt 100 ] || fail "zfs-fuse did not answer within 10 s"
		kill -0 "$ZFS_PID" 2>/dev/null || fail "zfs-fuse exited: $(cat "$TMP/zfs-fuse.log")"
		sleep 0.1
	done
}

# step NAME EXPECTED_RC VERB ARGS...: run the script, prefix its data lines.
step() {
	_s_name=$1
	_s_want=$2
	shift 2
	log "harness: $_s_name: linux.sh $*"
	if $SCRIPT_SH "$SCRIPT" "$@" >"$TMP/step.out" 2>"$TMP/step.err"; then
		_s_rc=0
	else
		_s_rc=$?
	fi
	sed "s/^/$_s_name./" "$TMP/step.out"
	sed "s/^/  [$_s_name] /" "$TMP/step.err" >&2
	printf '%s.exit=%s\n' "$_s_name" "$_s_rc"
	[ "$_s_rc" = "$_s_want" ] || fail "$_s_name: linux.sh $1 exited $_s_rc, expected $_s_want"
}

# value KEY: the value of KEY in the last step's output.
value() {
	sed -n "s/^$1=//p" "$TMP/step.out" | tail -n 1
}

first_mib_sha() {
	dd if="$LOOP" bs=65536 count=16 2>/dev/null | sha256sum | cut -d' ' -f1
}

pg_args() {
	printf '%s\n' pg_bin="$PG_BIN" mnt="$TMP/mnt" cell="$TMP/cell"
}

# psql_as USER ROLE SQL: SQL over the cell's socket as OS user USER, asking
# for ROLE; its answer on stdout, psql's errors on stderr.
psql_as() {
	runuser -u "$1" -- "$PG_BIN/psql" -X -A -t -h "$TMP/cell/sock" -p "$PORT" -U "$2" -d postgres -c "$3"
}

# refused_as USER ROLE: USER cannot connect as ROLE (peer authentication,
# pg_hba.conf written by pg-init).
refused_as() {
	if _ra=$(psql_as "$1" "$2" 'select 1' 2>&1); then
		fail "OS user $1 connected as role $2: $_ra"
	fi
	case $_ra in
	*'Peer authentication failed'* | *'no pg_hba.conf entry'*) ;;
	*) fail "OS user $1 as role $2: refused, but not by authentication: $_ra" ;;
	esac
}

# cell FS [mount_opt...]: the whole life of one cell, then teardown twice.
scenario_cell() {
	FS=$1
	shift
	setup 1G
	[ "$FS" = zfs ] && zfs_daemon
	_mopts=
	for _o in "$@"; do _mopts="$_mopts mount_opt=$_o"; done
	step preflight 0 preflight dev="$LOOP" allowed="$LOOP"
	[ "$(value signature)" = none ] || fail "fresh device not blank"
	if [ "$FS" = zfs ]; then
		step make_fs 0 make-fs ident="$IDENT" dev="$LOOP" allowed="$LOOP" fs=zfs pool="$POOL" mnt="$TMP/mnt" \
			pool_prop=failmode=continue zfs_prop=compression=on zfs_prop=atime=off
		[ "$(zpool get failmode "$POOL" | awk 'NR == 2 { print $3 }')" = continue ] || fail "pool_prop failmode=continue not set: $(zpool get failmode "$POOL" 2>&1)"
		[ "$(zfs get -H -o value compression "$POOL")" = on ] || fail "zfs_prop compression=on not set"
		ok pool_and_dataset_properties
	else
		step make_fs 0 make-fs ident="$IDENT" dev="$LOOP" allowed="$LOOP" fs="$FS"
	fi
	if [ "$FS" = zfs ]; then
		# An imported pool is in use: the guard must refuse it.
		step preflight_own 3 preflight dev="$LOOP" allowed="$LOOP"
		[ "$(blkid -p -o value -s LABEL "$LOOP")" = "$POOL" ] || fail "pool label is not $POOL"
		ok imported_pool_refused
	else
		step preflight_own 0 preflight dev="$LOOP" allowed="$LOOP"
		[ "$(value signature)" = fsmx ] || fail "make-fs left no fsmx signature: $(value signature_detail)"
		ok own_signature_passes_guard
	fi
	# shellcheck disable=SC2086 # mount_opt words have no spaces
	step mount 0 mount dev="$LOOP" fs="$FS" mnt="$TMP/mnt" pool="$POOL" $_mopts
	_eff=$(value effective_mount_opts)
	for _o in "$@"; do
		case ",$_eff," in *",$_o,"*) ;; *) fail "mount option $_o not in effective options $_eff" ;; esac
	done
	ok effective_mount_opts
	# shellcheck disable=SC2086 # mount_opt words have no spaces
	step mount_again 0 mount dev="$LOOP" fs="$FS" mnt="$TMP/mnt" pool="$POOL" $_mopts
	step pg_init 0 pg-init $(pg_args) port="$PORT" monitor_user=root pg_set=shared_buffers=32MB pg_set=fsync=on
	grep -q "^shared_buffers = '32MB'" "$TMP/mnt/pgdata/fsmatrix.conf" || fail "pg_set not written"
	# The files pg-init writes in the data folder are its owner's, and a link
	# its owner planted there is never written through by root: the write
	# runs as postgres, which the link's root-owned target refuses.
	for _f in fsmatrix.conf pg_hba.conf pg_ident.conf; do
		[ "$(stat -c %U "$TMP/mnt/pgdata/$_f")" = postgres ] || fail "$_f is not postgres's: $(stat -c %U "$TMP/mnt/pgdata/$_f")"
	done
	printf 'root-owned\n' >"$TMP/victim"
	chmod 0644 "$TMP/victim"
	runuser -u postgres -- ln -s "$TMP/victim" "$TMP/mnt/pgdata/fsmatrix.conf.tmp"
	step pg_init_planted 1 pg-init $(pg_args) port="$PORT" monitor_user=root pg_set=shared_buffers=32MB pg_set=fsync=on
	[ "$(cat "$TMP/victim")" = root-owned ] || fail "root wrote through a link postgres planted: $(cat "$TMP/victim")"
	[ "$(stat -c %U "$TMP/victim")" = root ] || fail "root chowned through a link postgres planted"
	rm -f "$TMP/mnt/pgdata/fsmatrix.conf.tmp"
	ok pg_init_link_not_followed
	step pg_start 0 pg-start $(pg_args)
	step pg_start_again 0 pg-start $(pg_args)
	[ "$(value started)" = already ] || fail "second pg-start did not say already"
	_sb=$(psql_as postgres postgres 'show shared_buffers')
	[ "$_sb" = 32MB ] || fail "shared_buffers is $_sb, not 32MB"
	_la=$(psql_as postgres postgres 'show listen_addresses')
	[ -z "$_la" ] || fail "listen_addresses is '$_la', not '' (no TCP listener)"
	_dd=$(psql_as postgres postgres 'show data_directory')
	[ "$_dd" = "$TMP/mnt/pgdata" ] || fail "data_directory is $_dd"
	ok settings_effective
	# No way to the superuser: not for root, not for a local user, not over TCP.
	refused_as root postgres
	refused_as nobody postgres
	if _tcp=$(runuser -u nobody -- "$PG_BIN/psql" -X -A -t -h 127.0.0.1 -p "$PORT" -U postgres -d postgres -c 'select 1' 2>&1); then
		fail "connected over TCP: $_tcp"
	fi
	case $_tcp in *'Connection refused'*) ;; *) fail "TCP to port $PORT: not refused as no listener: $_tcp" ;; esac
	ok superuser_only_for_its_owner
	step load 0 load $(pg_args) port="$PORT" out="$TMP/cell/load" scale=1
	[ "$(value status)" = 0 ] || fail "pgbench -i failed: $(cat "$TMP/cell/load/stderr")"
	[ "$(cat "$TMP/cell/load/status")" = 0 ] || fail "status file not 0"
	grep -q 'done' "$TMP/cell/load/stderr" || fail "pgbench -i output has no 'done'"
	ok load_raw_kept
	# The roles load made: the client user as fsmatrix (no superuser), the
	# login user as fsmatrix_monitor (pg_monitor), each only as itself.
	[ "$(psql_as nobody fsmatrix 'select rolsuper from pg_roles where rolname = current_user')" = f ] || fail "the client role is a superuser"
	[ "$(psql_as root fsmatrix_monitor "select pg_has_role('pg_monitor', 'member')")" = t ] || fail "the monitor role is not pg_monitor's"
	[ "$(psql_as root fsmatrix_monitor 'select rolsuper from pg_roles where rolname = current_user')" = f ] || fail "the monitor role is a superuser"
	refused_as nobody fsmatrix_monitor
	refused_as root fsmatrix
	ok roles_peer_mapped
	printf 'sql.file=%s\n' "$TMP/cell/data.sql"
	printf 'create table t (i int);\ninsert into t select generate_series(1, 1000);\nselect count(*) from t;\n' >"$TMP/cell/data.sql"
	step load_sql 0 load $(pg_args) port="$PORT" out="$TMP/cell/load-sql" sql="$TMP/cell/data.sql"
	[ "$(value status)" = 0 ] || fail "psql load failed: $(cat "$TMP/cell/load-sql/stderr")"
	[ "$(grep -c '^Time: ' "$TMP/cell/load-sql/stdout")" = 3 ] || fail "not 3 'Time:' lines in the psql output"
	! grep -q '^INSERT 0' "$TMP/cell/load-sql/stdout" || fail "query results leaked into the timed output (psql -o)"
	grep -q '^ *1000$' "$TMP/cell/load-sql/client/results.txt" || fail "psql results file lacks the select's result"
	[ "$(value restricted)" = yes ] || fail "a SQL script without consent did not run restricted: $(value restricted)"
	ok sql_timed_per_statement
	# Without the host owner's consent psql refuses every backslash command
	# (here one built by a query and run through an interpolated variable,
	# which no scanner sees); with it, the same script runs its command.
	printf "select '\\\\! touch %s/ran' as cmd \\gset\n:cmd\nselect 1;\n" "$TMP/cell/load-gset/client" >"$TMP/cell/gset.sql"
	step load_gset 0 load $(pg_args) port="$PORT" out="$TMP/cell/load-gset" sql="$TMP/cell/gset.sql"
	[ "$(value status)" = 3 ] || fail "a restricted script's backslash command: psql exited $(value status), not 3"
	grep -q 'backslash commands are restricted' "$TMP/cell/load-gset/stderr" || fail "psql did not say it was restricted: $(cat "$TMP/cell/load-gset/stderr")"
	[ ! -e "$TMP/cell/load-gset/client/ran" ] || fail "a backslash command ran without consent"
	step load_gset_allowed 0 load $(pg_args) port="$PORT" out="$TMP/cell/load-gset" sql="$TMP/cell/gset.sql" script_commands=yes
	[ "$(value status)" = 0 ] || fail "with consent the script failed: $(cat "$TMP/cell/load-gset/stderr")"
	[ -e "$TMP/cell/load-gset/client/ran" ] || fail "with consent the script's command did not run"
	ok sql_restricted_without_consent
	step drop_caches 0 drop-caches fs="$FS" pool="$POOL" dev="$LOOP"
	step run 0 run $(pg_args) port="$PORT" out="$TMP/cell/run-2-1" builtin=tpcb-like clients=2 duration=3 progress=1
	[ "$(value status)" = 0 ] || fail "pgbench run failed: $(cat "$TMP/cell/run-2-1/stderr")"
	_tps=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$TMP/cell/run-2-1/stdout" | head -n 1)
	[ -n "$_tps" ] || fail "no tps line in the run output"
	printf 'run.tps=%s\n' "$_tps"
	grep -q '^progress: ' "$TMP/cell/run-2-1/stderr" || fail "no -P progress lines"
	ok run_raw_kept
	if [ "$FS" = ext4 ]; then
		# latency_log / per_statement: -l --sampling-rate into the run's own
		# txlog folder, gzipped, named on stdout; cat remove=1 fetches and
		# removes them (only them); -r statement latencies on stdout.
		step run_txlog 0 run $(pg_args) port="$PORT" out="$TMP/runs/c1" builtin=select-only clients=2 jobs=2 duration=2 txlog=1 sampling_rate=0.5 per_statement=1
		[ "$(value status)" = 0 ] || fail "pgbench -l run failed: $(cat "$TMP/runs/c1/stderr")"
		grep -q -- "--sampling-rate=0.5" "$TMP/runs/c1/cmd" || fail "no --sampling-rate in $(cat "$TMP/runs/c1/cmd")"
		grep -q '^statement latencies in milliseconds' "$TMP/runs/c1/stdout" || fail "no -r block in the run output"
		_logs=$(sed -n 's/^txlog=//p' "$TMP/step.out")
		[ "$(printf '%s\n' "$_logs" | grep -c '/txlog/pgbench_log\.[0-9.]*\.gz$')" = 2 ] || fail "not 2 gzipped logs (one per thread): $_logs"
		for _l in $_logs; do
			step cat_txlog 0 cat work="$TMP" path="$_l" remove=1
			[ ! -e "$_l" ] || fail "cat remove=1 left $_l"
			if grep -Eq '^[0-9]+ [0-9]+ [0-9]+ 0 [0-9]+ [0-9]+$' "$TMP/step.out"; then
				fail "cat printed the log uncompressed"
			fi
		done
		printf 'x\n' >"$TMP/runs/c1/stdout.keep"
		step cat_remove_other 2 cat work="$TMP" path="$TMP/runs/c1/stdout.keep" remove=1
		[ -e "$TMP/runs/c1/stdout.keep" ] || fail "cat remove=1 removed a file that is not a log"
		# A link the client plants where pgbench writes its logs (a script's
		# \shell runs in the client's folder) to a file only root may read:
		# never packed with root's rights.
		printf 'topsecret\n' >"$TMP/secret"
		chmod 0600 "$TMP/secret"
		printf '\\shell ln -s %s pgbench_log.999\nselect 1;\n' "$TMP/secret" >"$TMP/cell/plant.pgbench"
		step run_planted 0 run $(pg_args) port="$PORT" out="$TMP/runs/c9" script="$TMP/cell/plant.pgbench" clients=1 transactions=1 txlog=1
		[ "$(value status)" = 0 ] || fail "planted run failed: $(cat "$TMP/runs/c9/stderr")"
		[ ! -e "$TMP/runs/c9/txlog/pgbench_log.999.gz" ] || fail "a planted link was packed"
		if grep -rq topsecret "$TMP/runs/c9" || zcat "$TMP/runs/c9/txlog/"*.gz 2>/dev/null | grep -q topsecret; then fail "root's file leaked into the run"; fi
		grep -q 'not packed: .*pgbench_log.999' "$TMP/step.err" || fail "the planted link was not named: $(cat "$TMP/step.err")"
		ok planted_link_not_followed
		step run_bad_rate 2 run $(pg_args) port="$PORT" out="$TMP/runs/c2" builtin=select-only clients=1 duration=1 txlog=1 sampling_rate=0.0
		step run_rate_no_log 2 run $(pg_args) port="$PORT" out="$TMP/runs/c2" builtin=select-only clients=1 duration=1 sampling_rate=0.5
		ok txlog_fetched
	fi
	step sizes 0 sizes mnt="$TMP/mnt" fs="$FS" pool="$POOL"
	[ "$(value du_bytes)" -gt 1000000 ] || fail "du of pgdata implausibly small"
	[ "$(value du_apparent_bytes)" -gt 1000000 ] || fail "apparent size implausibly small"
	if [ "$FS" = zfs ]; then
		[ -n "$(value zfs_compressratio)" ] || fail "no zfs_compressratio"
		case $(value zfs_compressratio) in *x) fail "compressratio keeps its x" ;; esac
		[ "$(value zfs_used_bytes)" -gt 1000000 ] || fail "zfs used implausibly small: $(value zfs_used_bytes)"
	fi
	[ -n "$(value flush)" ] || fail "sizes recorded no flush method"
	ok sizes
	step pg_stop 0 pg-stop $(pg_args)
	step pg_stop_again 0 pg-stop $(pg_args)
	[ "$(value stopped)" = already ] || fail "second pg-stop did not say already"
	if [ "$FS" = zfs ]; then
		# With PostgreSQL stopped the pool can be exported and imported.
		step drop_caches_stopped 0 drop-caches fs="$FS" pool="$POOL" dev="$LOOP"
		[ "$(value zfs_cache)" = exported-imported ] || fail "zfs cache not dropped with postgres stopped"
		ok zfs_export_import
		# A vdev named through a link (as /dev/disk/by-id/wwn-... names are): the
		# guard resolves each name, it does not compare the link's own name.
		mkdir -p "$TMP/by-id"
		ln -s "$LOOP" "$TMP/by-id/wwn-0x5000fsmxtest"
		zpool export "$POOL" || fail "zpool export"
		zpool import -d "$TMP/by-id" "$POOL" || fail "zpool import -d"
		zpool status "$POOL" | grep -q wwn-0x5000fsmxtest || fail "the vdev is not named by the link: $(zpool status "$POOL" 2>&1)"
		step preflight_by_link 3 preflight dev="$LOOP" allowed="$LOOP"
		grep -q "imported zpool $POOL" "$TMP/step.err" || fail "by-link member not named as a pool member: $(cat "$TMP/step.err")"
		ok pool_member_by_link_refused
		# ZFS runs but `zpool status` fails: refused, never assumed free.  The
		# stand-in zpool sits first in the script's own PATH, in this private
		# mount namespace only.
		mkdir -p "$TMP/shim"
		printf '#!/bin/sh\necho "internal error: Interrupted system call" >&2\nexit 1\n' >"$TMP/shim/zpool"
		chmod 0755 "$TMP/shim/zpool"
		mount --bind "$TMP/shim" /usr/local/sbin || fail "bind the zpool stand-in"
		step preflight_zpool_fails 3 preflight dev="$LOOP" allowed="$LOOP"
		umount /usr/local/sbin
		grep -q "cannot tell whether it is in an imported zpool" "$TMP/step.err" || fail "a failing zpool status was not refused: $(cat "$TMP/step.err")"
		ok zpool_failure_refused
	fi
	step teardown 0 teardown dev="$LOOP" allowed="$LOOP" fs="$FS" mnt="$TMP/mnt" pool="$POOL" pg_bin="$PG_BIN" cell="$TMP/cell"
	[ "$(value device)" = blank ] || fail "device not blank after teardown: $(value device)"
	step teardown_again 0 teardown dev="$LOOP" allowed="$LOOP" fs="$FS" mnt="$TMP/mnt" pool="$POOL" pg_bin="$PG_BIN" cell="$TMP/cell"
	[ "$(value device)" = blank ] || fail "second teardown: $(value device)"
	step preflight_after 0 preflight dev="$LOOP" allowed="$LOOP"
	[ "$(value signature)" = none ] || fail "signature after teardown: $(value signature_detail)"
	grep -q " $TMP/mnt " /proc/mounts && fail "still mounted after teardown"
	ok clean_after_teardown
}

# sizes_after FS MIB: write MIB MiB of incompressible data (and half as much
# compressible text on zfs) into <mnt>/pgdata, then call `sizes` at once:
# the flush must make du (and on zfs the dataset's used) count it.
sizes_after() {
	mkdir -p "$TMP/mnt/pgdata"
	head -c "$(($2 * 1048576))" /dev/urandom >"$TMP/mnt/pgdata/random"
	if [ "$1" = zfs ]; then
		yes 'fsmatrix: sizes that are true, a compressible line' | head -c "$(($2 * 1048576 / 5))" >"$TMP/mnt/pgdata/text"
		# What the dataset counted before the flush (zfs-fuse: its last txg).
		printf 'sizes_zfs.used_before=%s\n' "$(zfs get -H -p -o value used "$POOL")"
	fi
	_sa_t0=$(date +%s)
	step "sizes_$1" 0 sizes mnt="$TMP/mnt" fs="$1" pool="$POOL"
	printf 'sizes_%s.took_s=%s\n' "$1" "$(($(date +%s) - _sa_t0))"
	_sa_min=$((($2 - 2) * 1048576))
	[ "$(value du_bytes)" -ge "$_sa_min" ] || fail "$1: du says $(value du_bytes) bytes on disk for $2 MiB just written"
	[ "$(value du_apparent_bytes)" -ge "$(($2 * 1048576))" ] || fail "$1: apparent size $(value du_apparent_bytes)"
}

# btrfs under compress=zstd: du sees the uncompressed size (st_blocks), its
# own accounting (btrfs_used_bytes) the compressed extents; df's used less
# the global reserve is that same Used.  20 MiB of random data (which does
# not compress) and 100 MiB of text (which does).
sizes_btrfs_compressed() {
	FS=btrfs
	step make_fs_btrfs_zstd 0 make-fs ident="$IDENT" dev="$LOOP" allowed="$LOOP" fs=btrfs
	step mount_btrfs_zstd 0 mount dev="$LOOP" fs=btrfs mnt="$TMP/mnt" mount_opt=compress=zstd
	mkdir -p "$TMP/mnt/pgdata"
	yes 'fsmatrix: btrfs sizes as btrfs counts them, a compressible line' | head -c 104857600 >"$TMP/mnt/pgdata/text"
	head -c 20971520 /dev/urandom >"$TMP/mnt/pgdata/random"
	step sizes_btrfs_zstd 0 sizes mnt="$TMP/mnt" fs=btrfs
	_du=$(value du_bytes)
	_used=$(value btrfs_used_bytes)
	_data=$(value btrfs_data_used_bytes)
	_reserve=$(value btrfs_global_reserve_bytes)
	_df=$(value df_used_bytes)
	printf 'sizes_btrfs_zstd.du_bytes=%s\nsizes_btrfs_zstd.btrfs_used_bytes=%s\nsizes_btrfs_zstd.btrfs_data_used_bytes=%s\nsizes_btrfs_zstd.df_used_bytes=%s\nsizes_btrfs_zstd.btrfs_global_reserve_bytes=%s\n' \
		"$_du" "$_used" "$_data" "$_df" "$_reserve"
	[ "$_du" -ge $((118 * 1048576)) ] || fail "btrfs zstd: du $_du for 120 MiB written"
	# The random 20 MiB stay 20 MiB; the text shrinks to a few MiB.
	if ! { [ "$_data" -ge $((19 * 1048576)) ] && [ "$_data" -le $((40 * 1048576)) ]; }; then
		fail "btrfs zstd: data used $_data for 20 MiB random + 100 MiB text"
	fi
	[ "$_used" -ge "$_data" ] || fail "btrfs zstd: used $_used below data used $_data"
	_gap=$((_df - _reserve - _used))
	[ "${_gap#-}" -le 4194304 ] || fail "btrfs zstd: df used $_df less reserve $_reserve is not btrfs used $_used"
	ok sizes_btrfs_zstd
	step teardown_btrfs_zstd 0 teardown dev="$LOOP" allowed="$LOOP" fs=btrfs mnt="$TMP/mnt"
}

# sizes [FS...]: on ext4, xfs, btrfs and zfs (default: all) (zfs-fuse, which has no `zpool sync`:
# a property set commits the txg),
# `sizes` right after a write counts the data (flush recorded); on zfs the
# dataset's own accounting agrees with its compressratio.
scenario_sizes() {
	# 1G: on a smaller pool zfs-fuse commits 20 MiB at once (ZFS reserves a
	# write's worst-case inflated size against the pool's free space and
	# syncs a txg early when that runs short), which would hide the wait.
	setup 1G
	for FS in ext4 xfs btrfs; do
		case " ${*:-ext4 xfs btrfs zfs} " in *" $FS "*) ;; *) continue ;; esac
		step "make_fs_$FS" 0 make-fs ident="$IDENT" dev="$LOOP" allowed="$LOOP" fs="$FS"
		step "mount_$FS" 0 mount dev="$LOOP" fs="$FS" mnt="$TMP/mnt"
		sizes_after "$FS" 20
		_want=sync
		[ "$FS" != btrfs ] || _want=btrfs-sync
		[ "$(value flush)" = "$_want" ] || fail "$FS: flush=$(value flush), not $_want"
		ok "sizes_$FS"
		step "teardown_$FS" 0 teardown dev="$LOOP" allowed="$LOOP" fs="$FS" mnt="$TMP/mnt"
	done
	case " ${*:-btrfs} " in *" btrfs "*) sizes_btrfs_compressed ;; esac
	case " ${*:-zfs} " in *" zfs "*) ;; *) return 0 ;; esac
	FS=zfs
	zfs_daemon
	step make_fs_zfs 0 make-fs ident="$IDENT" dev="$LOOP" allowed="$LOOP" fs=zfs pool="$POOL" mnt="$TMP/mnt" \
		zfs_prop=compression=gzip
	sizes_after zfs 20
	[ "$(value flush)" = txg-sync-task ] || fail "zfs-fuse: flush=$(value flush), not txg-sync-task"
	[ "$(value flush_settled)" = yes ] || fail "zfs-fuse: the txg was not committed"
	_used=$(value zfs_used_bytes)
	[ "$_used" -ge $((18 * 1048576)) ] || fail "zfs used $_used for 20 MiB of random data just written"
	# The text compresses (gzip): used stays well below the 30 MiB written.
	[ "$_used" -le $((25 * 1048576)) ] || fail "zfs used $_used: the text did not compress"
	# logicalused / used is compressratio (pool version 23 has no logicalused:
	# the apparent size stands in for it).
	_logical=$(value zfs_logicalused_bytes)
	[ -n "$_logical" ] || _logical=$(value du_apparent_bytes)
	awk -v l="$_logical" -v u="$_used" -v r="$(value zfs_compressratio)" \
		'BEGIN { q = l / u; exit !(r > 1.1 && q > r * 0.9 && q < r * 1.1) }' ||
		fail "zfs: logical $_logical / used $_used does not agree with compressratio $(value zfs_compressratio)"
	ok sizes_zfs
}

# guard: refusals leave the first MiB byte-identical; consent proceeds.
scenario_guard() {
	FS=ext4
	setup 512M
	# A foreign ext4 (label not fsmx), as a user's data disk would be.
	mkfs.ext4 -q -F -L userdata "$LOOP" >&2
	_before=$(first_mib_sha)
	step undeclared 3 preflight dev="$LOOP" allowed=/dev/fsmx-not-this-one
	step undeclared_mkfs 3 make-fs ident="$IDENT" dev="$LOOP" allowed=/dev/fsmx-not-this-one fs=xfs
	[ "$(first_mib_sha)" = "$_before" ] || fail "undeclared device was written"
	ok undeclared_refused_unchanged
	step foreign 3 preflight dev="$LOOP" allowed="$LOOP"
	step foreign_mkfs 3 make-fs ident="$IDENT" dev="$LOOP" allowed="$LOOP" fs=xfs
	step foreign_mkfs_no 3 make-fs ident="$IDENT" dev="$LOOP" allowed="$LOOP" fs=xfs consent=no
	step foreign_teardown 0 teardown dev="$LOOP" allowed="$LOOP" mnt="$TMP/mnt"
	case $(value device) in untouched:*) ;; *) fail "teardown touched a foreign device: $(value device)" ;; esac
	[ "$(first_mib_sha)" = "$_before" ] || fail "foreign device was written"
	ok foreign_refused_unchanged
	# Mounted (here, by the user, under a foreign label).
	mkdir -p "$TMP/usermnt"
	# Read-only: a read-write mount itself updates the superblock.
	mount -o ro,noload "$LOOP" "$TMP/usermnt"
	_before=$(first_mib_sha)
	step mounted 3 preflight dev="$LOOP" allowed="$LOOP" consent=yes
	step mounted_mkfs 3 make-fs ident="$IDENT" dev="$LOOP" allowed="$LOOP" fs=xfs consent=yes
	step mounted_teardown 0 teardown dev="$LOOP" allowed="$LOOP" mnt="$TMP/mnt"
	case $(value device) in untouched:*) ;; *) fail "teardown touched a mounted device: $(value device)" ;; esac
	grep -q " $TMP/usermnt " /proc/mounts || fail "teardown unmounted a mount that is not its own mnt"
	umount "$TMP/usermnt"
	[ "$(first_mib_sha)" = "$_before" ] || fail "mounted device was written"
	ok mounted_refused_unchanged
	# Mounted in ANOTHER mount namespace (as a lab host's mount would be).
	# shellcheck disable=SC2016 # $1 $2 belong to the inner sh
	unshare --mount --propagation private sh -c 'mount -o ro,noload "$1" "$2" && exec sleep 30' sh "$LOOP" "$TMP/usermnt" &
	_other=$!
	_i=0
	until grep -q " $TMP/usermnt " "/proc/$_other/mountinfo" 2>/dev/null; do
		_i=$((_i + 1))
		[ "$_i" -lt 50 ] || fail "mount in another namespace did not appear"
		sleep 0.1
	done
	step mounted_elsewhere 3 preflight dev="$LOOP" allowed="$LOOP" consent=yes
	kill "$_other"
	wait "$_other" || true
	[ "$(first_mib_sha)" = "$_before" ] || fail "device mounted elsewhere was written"
	ok mounted_elsewhere_refused
	# The disk holding /.
	_root=$(awk '$2 == "/" { s = $1 } END { print s }' /proc/mounts)
	case $_root in
	/dev/*)
		step root_disk 3 preflight dev="$_root" allowed="$_root" consent=yes
		ok root_disk_refused
		;;
	esac
	# Not a block device.
	step not_block 3 preflight dev="$TMP/disk.img" allowed="$TMP/disk.img"
	# With consent: proceeds, and the result is fsmatrix's own.
	step consent 0 preflight dev="$LOOP" allowed="$LOOP" consent=yes
	[ "$(value signature)" = foreign ] || fail "consented preflight does not say foreign"
	step consent_mkfs 0 make-fs ident="$IDENT" dev="$LOOP" allowed="$LOOP" fs=xfs consent=yes
	step after_consent 0 preflight dev="$LOOP" allowed="$LOOP"
	[ "$(value signature)" = fsmx ] || fail "after consent: $(value signature_detail)"
	ok consent_proceeds
	step teardown 0 teardown dev="$LOOP" allowed="$LOOP" mnt="$TMP/mnt"
	[ "$(value device)" = blank ] || fail "teardown: $(value device)"
	# Unknown data without any signature is not blank.
	printf 'not empty' | dd of="$LOOP" bs=512 seek=100 conv=notrunc 2>/dev/null
	_before=$(first_mib_sha)
	step junk 3 preflight dev="$LOOP" allowed="$LOOP"
	step junk_teardown 0 teardown dev="$LOOP" allowed="$LOOP"
	[ "$(first_mib_sha)" = "$_before" ] || fail "teardown wiped unknown data"
	ok unknown_data_refused
}

# half: teardown of half-made cells (postgres running; zfs pool mounted).
scenario_half() {
	FS=ext4
	setup 1G
	step make_fs 0 make-fs ident="$IDENT" dev="$LOOP" allowed="$LOOP" fs=ext4
	step mount 0 mount dev="$LOOP" fs=ext4 mnt="$TMP/mnt"
	step pg_init 0 pg-init $(pg_args) port="$PORT" monitor_user=root
	step pg_start 0 pg-start $(pg_args)
	_pid=$(value pid)
	kill -0 "$_pid" || fail "postgres not running"
	step teardown 0 teardown dev="$LOOP" allowed="$LOOP" fs=ext4 mnt="$TMP/mnt" pg_bin="$PG_BIN" cell="$TMP/cell"
	[ "$(value postgres)" = stopped ] || fail "teardown did not stop postgres: $(value postgres)"
	[ "$(value unmounted)" = yes ] || fail "teardown did not unmount"
	[ "$(value device)" = blank ] || fail "teardown: $(value device)"
	# A zombie (waiting for its reaper) is stopped too.
	if [ -r "/proc/$_pid/status" ] && ! grep -q '^State:.*zombie' "/proc/$_pid/status"; then
		fail "postgres $_pid still alive after teardown: $(grep '^State:' "/proc/$_pid/status")"
	fi
	ok half_postgres_cell
	# Only mkfs done.
	step make_fs2 0 make-fs ident="$IDENT" dev="$LOOP" allowed="$LOOP" fs=btrfs
	# Per-transaction logs that killed runs left under work=: removed; one
	# reached through a link is not, nor is a run's other output.
	_w=$TMP/work
	mkdir -p "$_w/runs/c1/txlog" "$_w/runs/c2/txlog" "$TMP/elsewhere/txlog"
	echo 1 >"$_w/runs/c1/txlog/pgbench_log.41"
	echo 2 >"$_w/runs/c2/txlog/pgbench_log.42.1"
	echo out >"$_w/runs/c1/stdout"
	echo keep >"$TMP/elsewhere/txlog/pgbench_log.43"
	ln -s "$TMP/elsewhere" "$_w/runs/c3"
	step teardown2 0 teardown dev="$LOOP" allowed="$LOOP" fs=btrfs mnt="$TMP/mnt" pg_bin="$PG_BIN" work="$_w"
	[ "$(value device)" = blank ] || fail "teardown2: $(value device)"
	[ "$(value txlogs_removed)" = 2 ] || fail "teardown2 txlogs_removed: $(value txlogs_removed)"
	[ -e "$_w/runs/c1/txlog" ] && fail "c1's txlog left"
	[ -e "$_w/runs/c2/txlog" ] && fail "c2's txlog left"
	[ -f "$_w/runs/c1/stdout" ] || fail "a run's stdout was removed"
	[ -f "$TMP/elsewhere/txlog/pgbench_log.43" ] || fail "removed through a link"
	step teardown2_dots 2 teardown dev="$LOOP" allowed="$LOOP" fs=btrfs mnt="$TMP/mnt" work="$_w/runs/c3/.."
	ok half_mkfs_only
	# A zfs pool, created and mounted, nothing else.
	FS=zfs
	zfs_daemon
	step make_fs3 0 make-fs ident="$IDENT" dev="$LOOP" allowed="$LOOP" fs=zfs pool="$POOL" mnt="$TMP/mnt"
	step teardown3 0 teardown dev="$LOOP" allowed="$LOOP" fs=zfs pool="$POOL" mnt="$TMP/mnt" pg_bin="$PG_BIN"
	[ "$(value pool)" = destroyed ] || fail "pool: $(value pool)"
	[ "$(value device)" = blank ] || fail "teardown3: $(value device)"
	zpool list "$POOL" >/dev/null 2>&1 && fail "pool still imported"
	ok half_zfs_pool
	step teardown3_again 0 teardown dev="$LOOP" allowed="$LOOP" fs=zfs pool="$POOL" mnt="$TMP/mnt" pg_bin="$PG_BIN"
	[ "$(value pool)" = absent ] || fail "pool: $(value pool)"
}

# marks: fsmatrix's own mark for ZFS is the exact pool name it makes
# (own_pool in common.sh): a pool `fsmxdata` (the old prefix rule's) is
# foreign: refused, and left as it was by teardown; fsmatrix's own `fsmx`,
# exported with the labels at its end zeroed (a half-wiped pool), is cleaned.
scenario_marks() {
	FS=zfs
	setup 512M
	zfs_daemon
	step bad_pool 2 make-fs ident="$IDENT" dev="$LOOP" allowed="$LOOP" fs=zfs pool=fsmx-t mnt="$TMP/mnt"
	if ! zpool create -f fsmxdata "$LOOP" >&2 || ! zpool export fsmxdata >&2; then fail "zpool create fsmxdata"; fi
	_before=$(first_mib_sha)
	step prefix 3 preflight dev="$LOOP" allowed="$LOOP"
	grep -q "foreign signature (zfs_member label=fsmxdata" "$TMP/step.err" || fail "prefix: not refused as foreign: $(cat "$TMP/step.err")"
	step prefix_teardown 0 teardown dev="$LOOP" allowed="$LOOP" fs=zfs pool="$POOL" mnt="$TMP/mnt"
	case $(value device) in "untouched: foreign signature"*) ;; *) fail "teardown touched fsmxdata: $(value device)" ;; esac
	[ "$(first_mib_sha)" = "$_before" ] || fail "fsmxdata's device was written"
	ok prefix_pool_foreign
	_size=$(blockdev --getsize64 "$LOOP")
	wipefs -a -q "$LOOP"
	dd if=/dev/zero of="$LOOP" bs=1048576 count=1 conv=notrunc 2>/dev/null
	dd if=/dev/zero of="$LOOP" bs=1048576 seek=$((_size / 1048576 - 1)) count=1 conv=notrunc 2>/dev/null
	if ! zpool create -f "$POOL" "$LOOP" >&2 || ! zpool export "$POOL" >&2; then fail "zpool create $POOL"; fi
	# Labels 2 and 3: the last 512 KiB of the size rounded down to 256 KiB.
	dd if=/dev/zero of="$LOOP" bs=262144 seek=$((_size / 262144 - 2)) count=2 conv=notrunc 2>/dev/null
	step own_half 0 preflight dev="$LOOP" allowed="$LOOP"
	[ "$(value signature)" = fsmx ] || fail "own half-wiped pool: $(value signature_detail)"
	step own_half_teardown 0 teardown dev="$LOOP" allowed="$LOOP" fs=zfs pool="$POOL" mnt="$TMP/mnt"
	[ "$(value device)" = blank ] || fail "own half-wiped pool not cleaned: $(value device)"
	ok own_half_wiped_pool_cleaned
}

# refused-opt: xfs nobarrier is refused by this kernel: exit 4 naming it.
scenario_refused_opt() {
	FS=xfs
	setup 1G
	step make_fs 0 make-fs ident="$IDENT" dev="$LOOP" allowed="$LOOP" fs=xfs
	step mount 4 mount dev="$LOOP" fs=xfs mnt="$TMP/mnt" mount_opt=noatime mount_opt=nobarrier
	[ "$(value refused_mount_opt)" = nobarrier ] || fail "refused option not named: $(value refused_mount_opt)"
	grep -q 'nobarrier' "$TMP/step.err" || fail "stderr does not name nobarrier"
	grep -q " $TMP/mnt " /proc/mounts && fail "left mounted after a refused option"
	ok refused_option_named
	step teardown 0 teardown dev="$LOOP" allowed="$LOOP" fs=xfs mnt="$TMP/mnt"
	[ "$(value device)" = blank ] || fail "teardown: $(value device)"
}

# swap: make-fs formats only the disk the sweep checked.  The ident `facts`
# printed passes; none is a usage error; a wrong one, or the one of the disk
# that was there before another image of the same size was attached at the
# same /dev/loopN (carrying fsmatrix's own label, so the guard lets it pass),
# is refused and the first MiB is left unchanged.
scenario_swap() {
	FS=ext4
	setup 256M
	case $IDENT in
	"size=268435456;"*"loop=$TMP/disk.img;inode="*) ;;
	*) fail "facts printed no loop identity: $IDENT" ;;
	esac
	step make_fs 0 make-fs ident="$IDENT" dev="$LOOP" allowed="$LOOP" fs=ext4
	ok checked_disk_formatted
	_before=$(first_mib_sha)
	step no_ident 2 make-fs dev="$LOOP" allowed="$LOOP" fs=ext4
	step wrong_ident 3 make-fs ident="size=268435456;serial=not-this-one" dev="$LOOP" allowed="$LOOP" fs=xfs
	grep -q "it is not the disk checked at the sweep's start" "$TMP/step.err" || fail "wrong ident not refused as another disk: $(cat "$TMP/step.err")"
	[ "$(first_mib_sha)" = "$_before" ] || fail "a make-fs refused for its ident wrote the device"
	ok wrong_ident_refused_unchanged
	truncate -s 256M "$TMP/other.img"
	mkfs.ext4 -q -F -L fsmx "$TMP/other.img" >&2
	losetup -d "$LOOP"
	if ! losetup "$LOOP" "$TMP/other.img"; then
		# Someone took the loop device in between: it is theirs, not ours.
		LOOP=
		fail "could not attach another image at the same loop device"
	fi
	step preflight_other 0 preflight dev="$LOOP" allowed="$LOOP"
	[ "$(value signature)" = fsmx ] || fail "the other image does not pass the guard as fsmatrix's: $(value signature_detail)"
	_other=$(ident_of "$LOOP")
	printf 'swap.other_ident=%s\n' "$_other"
	[ "$_other" != "$IDENT" ] || fail "another image at $LOOP has the same identity: $_other"
	[ "${_other%%;*}" = "${IDENT%%;*}" ] || fail "the other image's size differs: $_other"
	_before=$(first_mib_sha)
	step swapped 3 make-fs ident="$IDENT" dev="$LOOP" allowed="$LOOP" fs=xfs
	grep -qF "refused: $LOOP: it is not the disk checked at the sweep's start (was $IDENT, now $_other)" "$TMP/step.err" ||
		fail "the other disk was not refused naming both identities: $(cat "$TMP/step.err")"
	printf 'swapped.refusal=%s\n' "$(grep '^refused: ' "$TMP/step.err")"
	[ "$(first_mib_sha)" = "$_before" ] || fail "the other disk was written"
	ok other_disk_refused_unchanged
	step make_fs_other 0 make-fs ident="$_other" dev="$LOOP" allowed="$LOOP" fs=ext4
	ok other_disk_formatted_with_its_own_ident
}

main() {
	trap cleanup EXIT
	trap 'exit 130' INT TERM
	_scenario=${1:-}
	[ "$#" -gt 0 ] && shift
	case $_scenario in
	cell) scenario_cell "$@" ;;
	guard) scenario_guard ;;
	half) scenario_half ;;
	refused-opt) scenario_refused_opt ;;
	marks) scenario_marks ;;
	swap) scenario_swap ;;
	sizes) scenario_sizes "$@" ;;
	*) fail "unknown scenario '$_scenario' (cell FS [opts] | guard | half | refused-opt | swap | sizes [FS...])" ;;
	esac
	printf 'harness.result=pass\n'
}

main "$@"
