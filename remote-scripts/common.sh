#!/bin/sh
# shellcheck shell=dash
# common.sh: helpers shared by linux.sh, freebsd.sh and dragonfly.sh.
# Sourced, never run.  POSIX sh only: no pipefail, no arrays, no eval, no echo.
# The verb contract is in docs/remote-scripts.md; fsmx_main (at the end) is the one
# dispatch every OS script ends with.

# Every name a verb may receive.  A word that is not `name=value` with one of
# these names is a usage error: a typo must not silently become a default.
FSMX_ARG_NAMES="dev allowed consent ident fs mkfs_opt zfs_prop pool_prop pool mount_opt comp mnt pg_bin pg_user client_user monitor_user port pg_set cell out db scale init_opt sql script_commands builtin script clients jobs duration transactions progress rate latency_limit txlog sampling_rate per_statement pgbench_opt work path remove dir guest image format kernel initrd cmdline memory cpus bus cache aio accel disk timeout"

# fsmatrix's own mark: the label it writes on every filesystem it makes
# (ufs, ext*, xfs, btrfs, hammer; HAMMER2: the PFS of that name), and the
# name of every ZFS pool it makes (own_pool).  Anything else is foreign.
# The table of marks per OS and filesystem: docs/remote-scripts.md.
# shellcheck disable=SC2034 # used by the per-OS scripts
FSMX_LABEL=fsmx

# own_pool NAME: true when NAME is a pool name fsmatrix makes: `fsmx` for a
# host's first device, `fsmx<k>` (k = 1, 2, ...: no leading zero) for its
# device k (orchestrator/src/run/calls.rs POOL, HostPaths::for_slot).  A
# name that only starts so (`fsmxdata`, `fsmx-old`, `fsmx01`) is not ours.
own_pool() {
	case $1 in
	"$FSMX_LABEL") return 0 ;;
	"$FSMX_LABEL"0*) return 1 ;;
	esac
	case ${1#"$FSMX_LABEL"} in
	"$1" | '' | *[!0-9]*) return 1 ;;
	esac
	return 0
}

FSMX_VERB=${FSMX_VERB:-}

log() {
	printf '%s\n' "$*" >&2
}

# kv KEY VALUE: one data line on stdout.
kv() {
	printf '%s=%s\n' "$1" "$2"
}

# die MESSAGE: a failed step (exit 1).
die() {
	printf 'error: %s: %s\n' "${FSMX_VERB:-script}" "$*" >&2
	exit 1
}

# usage_die MESSAGE: bad verb or arguments (exit 2).
usage_die() {
	printf 'error: usage: %s: %s\n' "${FSMX_VERB:-script}" "$*" >&2
	exit 2
}

# refuse DEV REASON: the device guard said no (exit 3).
refuse() {
	printf 'refused: %s: %s\n' "$1" "$2" >&2
	exit 3
}

# sh_quote WORD: WORD single-quoted for a shell (for logs and `su -c`).
sh_quote() {
	printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"
}

# quote_all WORDS...: the words quoted and joined by spaces.
quote_all() {
	_q_out=
	for _q_w in ${1+"$@"}; do
		_q_out="$_q_out${_q_out:+ }$(sh_quote "$_q_w")"
	done
	printf '%s' "$_q_out"
}

# check_args ARGS...: every word is name=value with a known name.
check_args() {
	for _ca in ${1+"$@"}; do
		case $_ca in
		*=*) ;;
		*) usage_die "argument '$_ca' is not name=value (names: $FSMX_ARG_NAMES)" ;;
		esac
		_ca_name=${_ca%%=*}
		case " $FSMX_ARG_NAMES " in
		*" $_ca_name "*) ;;
		*) usage_die "unknown argument name '$_ca_name' (valid: $FSMX_ARG_NAMES)" ;;
		esac
	done
}

# opt NAME DEFAULT ARGS...: the last value given for NAME, else DEFAULT.
opt() {
	_o_name=$1
	_o_val=$2
	shift 2
	for _o_a in ${1+"$@"}; do
		case $_o_a in
		"$_o_name"=*) _o_val=${_o_a#*=} ;;
		esac
	done
	printf '%s' "$_o_val"
}

# need NAME ARGS...: the last value given for NAME; a usage error when absent
# or empty.  Use as `x=$(need x ${1+"$@"})`: set -e carries the exit 2 out.
need() {
	_n_name=$1
	shift
	_n_val=
	_n_found=no
	for _n_a in ${1+"$@"}; do
		case $_n_a in
		"$_n_name"=*)
			_n_val=${_n_a#*=}
			_n_found=yes
			;;
		esac
	done
	if [ "$_n_found" = no ] || [ -z "$_n_val" ]; then
		usage_die "missing argument $_n_name="
	fi
	printf '%s' "$_n_val"
}

# has_arg NAME ARGS...: true when NAME= appears at least once.
has_arg() {
	_h_name=$1
	shift
	for _h_a in ${1+"$@"}; do
		case $_h_a in
		"$_h_name"=*) return 0 ;;
		esac
	done
	return 1
}

# check_uint NAME VALUE: VALUE is a non-negative integer.
check_uint() {
	case $2 in
	'' | *[!0-9]*) usage_die "$1=$2 is not a non-negative integer" ;;
	esac
}

# check_fraction NAME VALUE: VALUE is 1 or 0.D with 1 to 6 digits, not all
# zero (pgbench --sampling-rate: more than 0, at most 1).
check_fraction() {
	case $2 in
	1) return 0 ;;
	0.*) ;;
	*) usage_die "$1=$2 is not a fraction 0.D..D (1 to 6 digits) or 1" ;;
	esac
	case ${2#0.} in
	'' | *[!0-9]* | ???????*) usage_die "$1=$2 is not a fraction 0.D..D (1 to 6 digits) or 1" ;;
	*[1-9]*) ;;
	*) usage_die "$1=$2 is not more than 0" ;;
	esac
}

# check_abs NAME VALUE: VALUE is an absolute path without `..` or newlines.
check_abs() {
	case $2 in
	/*) ;;
	*) usage_die "$1=$2 is not an absolute path" ;;
	esac
	case $2 in
	*/../* | */.. | *'
'*) usage_die "$1=$2 must not contain '..' or a newline" ;;
	esac
}

# run CMD ARGS...: log the command, run it with its stdout sent to stderr
# (stdout is for data), die naming it when it fails.
run() {
	log "+ $(quote_all ${1+"$@"})"
	if ${1+"$@"} >&2; then
		return 0
	else
		_r_rc=$?
		die "$(quote_all ${1+"$@"}) exited $_r_rc"
	fi
}

# try CMD ARGS...: like run, but return the exit status instead of dying.
try() {
	log "+ $(quote_all ${1+"$@"})"
	${1+"$@"} >&2
}

# now_ms: milliseconds since the epoch where `date +%N` works, else seconds*1000.
now_ms() {
	_nm=$(date +%s%N 2>/dev/null || true)
	case $_nm in
	*N* | '') printf '%s' "$(($(date +%s) * 1000))" ;;
	*) printf '%s' "$((${_nm%??????}))" ;;
	esac
}

# as_pg_user USER CMD ARGS...: run CMD as USER from `/` (initdb and pg_ctl
# refuse root; root's home is not readable by USER).  runuser on Linux, else
# `su USER -c LINE`: the words after the login name go to USER's own login
# shell, which runs LINE (quoted for sh: USER's shell must be a Bourne
# shell, as `postgres` has).  Not `su -m`: FreeBSD's -m runs the INVOKING
# user's shell (root: csh/tcsh before 14); and `-c` before the login name
# is a login class on FreeBSD [freebsd-src usr.bin/su/su.c, su.1].
as_pg_user() {
	log "+ [as $1] $(shift && quote_all ${1+"$@"})"
	as_pg_user_out ${1+"$@"} >&2
}

# as_pg_user_out USER CMD ARGS...: as_pg_user, unlogged, and CMD's stdout
# stays stdout (a read-only query whose answer the verb parses).
as_pg_user_out() {
	_ap_user=$1
	shift
	if command -v runuser >/dev/null 2>&1; then
		(cd / && runuser -u "$_ap_user" -- ${1+"$@"})
	else
		(cd / && su "$_ap_user" -c "$(quote_all ${1+"$@"})")
	fi
}

# first_mib_zero DEV: true when the first MiB of DEV is all zero bytes.
first_mib_zero() {
	_fz=$(dd if="$1" bs=65536 count=16 2>/dev/null | tr -d '\000' | wc -c)
	[ "$_fz" -eq 0 ]
}

# zero_ends DEV SIZE_BYTES [SECTOR]: zero the first and the last MiB in
# whole sectors of SECTOR bytes (512 by default; a BSD disk takes only I/O
# in multiples of its sector size).  ZFS keeps two of its four labels at the
# end of the device, GPT its backup table.
# Byte counts go through awk: shell arithmetic is 32-bit in some shells (mksh).
zero_ends() {
	_ze_ss=${3:-512}
	run dd if=/dev/zero of="$1" bs=65536 count=16 conv=notrunc
	_ze_seek=$(awk -v s="$2" -v b="$_ze_ss" 'BEGIN { if (s > 2097152) printf "%.0f", int((s - 1048576) / b) }')
	if [ -n "$_ze_seek" ]; then
		run dd if=/dev/zero of="$1" bs="$_ze_ss" seek="$_ze_seek" count="$((1048576 / _ze_ss))" conv=notrunc
	fi
	sync
}

# bytes_lt A B: true when the byte count A is less than B (awk: shell
# arithmetic is 32-bit in some shells).
bytes_lt() {
	awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 < b + 0) }'
}

# run_step OUT CMD ARGS...: a long step that survives a dropped connection.
# Raw stdout/stderr go to OUT/stdout and OUT/stderr, the command line to
# OUT/cmd, and the exit status to OUT/status LAST (written to a temporary
# name and renamed).  Prints the key facts; returns 0 even when CMD failed.
run_step() {
	_rs_out=$1
	shift
	run mkdir -p "$_rs_out"
	rm -f "$_rs_out/stdout" "$_rs_out/stderr" "$_rs_out/status" "$_rs_out/status.tmp"
	quote_all ${1+"$@"} >"$_rs_out/cmd"
	printf '\n' >>"$_rs_out/cmd"
	log "+ $(quote_all ${1+"$@"}) >$_rs_out/stdout 2>$_rs_out/stderr"
	# _rs_live=keep|drop (set by the caller): the command's `progress: `
	# lines (pgbench -P) also go to this script's stderr as they come,
	# marked "fsmatrix-live ", for the live view; with drop they are left
	# out of the stderr file.  Through a FIFO, so the command's own exit
	# status stays what run_step reports.
	_rs_err=$_rs_out/stderr
	if [ -n "${_rs_live-}" ]; then
		_rs_err=$_rs_out/live.fifo
		rm -f "$_rs_err"
		mkfifo -m 600 "$_rs_err" || die "mkfifo $_rs_err failed"
		# The shell's read, not awk: awk reads a FIFO in blocks (mawk
		# without -W interactive), so the lines would come at the end.
		(
			while IFS= read -r _rs_l || [ -n "$_rs_l" ]; do
				case $_rs_l in
				'progress: '*)
					printf 'fsmatrix-live %s\n' "$_rs_l" >&2
					if [ "$_rs_live" = keep ]; then printf '%s\n' "$_rs_l"; fi
					;;
				*) printf '%s\n' "$_rs_l" ;;
				esac
			done <"$_rs_err" >"$_rs_out/stderr"
		) &
		_rs_filter=$!
	fi
	_rs_t0=$(now_ms)
	_rs_e0=$(date +%s)
	if ${1+"$@"} >"$_rs_out/stdout" 2>"$_rs_err" </dev/null; then
		_rs_rc=0
	else
		_rs_rc=$?
	fi
	_rs_t1=$(now_ms)
	_rs_e1=$(date +%s)
	if [ -n "${_rs_live-}" ]; then
		wait "$_rs_filter" || true
		rm -f "$_rs_err"
	fi
	printf '%s\n' "$_rs_rc" >"$_rs_out/status.tmp"
	mv -f "$_rs_out/status.tmp" "$_rs_out/status"
	kv status "$_rs_rc"
	kv out "$_rs_out"
	kv stdout "$_rs_out/stdout"
	kv stderr "$_rs_out/stderr"
	kv status_file "$_rs_out/status"
	kv started_epoch "$_rs_e0"
	kv ended_epoch "$_rs_e1"
	kv elapsed_ms "$((_rs_t1 - _rs_t0))"
	if [ "$_rs_rc" -ne 0 ]; then
		log "step exited $_rs_rc; last lines of $_rs_out/stderr:"
		tail -n 5 "$_rs_out/stderr" >&2 || true
	fi
	return 0
}

# pg_conf_value VALUE: VALUE as a postgresql.conf single-quoted string.
pg_conf_value() {
	printf "'%s'" "$(printf '%s' "$1" | sed -e 's/\\/\\\\/g' -e "s/'/''/g")"
}

# write_pg_conf PORT SOCKDIR ARGS...: fsmatrix's own settings file on
# stdout: no TCP listener (the cell's socket is the only way in), the cell's
# port and socket, then every pg_set.
write_pg_conf() {
	_wc_port=$1
	_wc_sock=$2
	shift 2
	{
		printf '# written by fsmatrix: rewritten at every pg-init\n'
		printf "listen_addresses = ''\n"
		printf 'port = %s\n' "$_wc_port"
		printf 'unix_socket_directories = %s\n' "$(pg_conf_value "$_wc_sock")"
		for _wc_a in ${1+"$@"}; do
			case $_wc_a in
			pg_set=*=*)
				_wc_kv=${_wc_a#pg_set=}
				_wc_name=${_wc_kv%%=*}
				case $_wc_name in
				'' | *[!a-z0-9_.]*) usage_die "pg_set name '$_wc_name' is not [a-z0-9_.]+" ;;
				esac
				printf '%s = %s\n' "$_wc_name" "$(pg_conf_value "${_wc_kv#*=}")"
				;;
			pg_set=*) usage_die "pg_set=${_wc_a#pg_set=} is not name=value" ;;
			esac
		done
	}
}

# verb_cat ARGS...: print a file under work= (for fetching outputs).
verb_cat() {
	_vc_work=$(need work ${1+"$@"})
	_vc_path=$(need path ${1+"$@"})
	check_abs work "$_vc_work"
	check_abs path "$_vc_path"
	case $_vc_path in
	"${_vc_work%/}"/*) ;;
	*) usage_die "path=$_vc_path is not under work=$_vc_work" ;;
	esac
	_vc_remove=$(opt remove 0 ${1+"$@"})
	case $_vc_remove in
	0) ;;
	1)
		# Only a run's per-transaction logs are removed once sent.
		case $_vc_path in
		"${_vc_work%/}"/runs/*/txlog/pgbench_log.*) ;;
		*) usage_die "remove=1: path=$_vc_path is not a run's per-transaction log (<work>/runs/*/txlog/pgbench_log.*)" ;;
		esac
		case $_vc_path in */../* | */./*) usage_die "path=$_vc_path has . or .. parts" ;; esac
		;;
	*) usage_die "remove=$_vc_remove is not 0 or 1" ;;
	esac
	[ -f "$_vc_path" ] || die "cat $_vc_path: no such file"
	cat "$_vc_path" || die "cat $_vc_path failed"
	if [ "$_vc_remove" = 1 ]; then
		rm -f "$_vc_path" || die "rm $_vc_path failed"
	fi
}

# ---------------------------------------------------------------- shared verbs
#
# OS-neutral verbs and helpers.  They call the hooks listed below, which
# every per-OS script defines (docs/remote-scripts.md says what each does; a
# unit test holds each OS script and the doc to these lists).
#
# FSMX_HOOKS: every OS script defines each.
# FSMX_ZFS_HOOKS: an OS script whose OS offers ZFS defines each too.
# FSMX_OPTIONAL_HOOKS: common.sh defines a default an OS script may replace.
# shellcheck disable=SC2034 # the interface, read by tests and readers
FSMX_HOOKS="resolve guard_in_use signature dev_ident dev_size_bytes device_facts check_fs wipe mount_source mount_line child_pids pool_on_device fs_flush du_sizes df_k"
# shellcheck disable=SC2034 # the interface, read by tests and readers
FSMX_ZFS_HOOKS="zfs_txg_timeout"
# shellcheck disable=SC2034 # the interface, read by tests and readers
FSMX_OPTIONAL_HOOKS="after_mount after_teardown zfs_loaded"

# in_words WORD LIST: WORD is one of the newline/space separated LIST.
in_words() {
	for _iw in $2; do
		[ "$_iw" = "$1" ] && return 0
	done
	return 1
}

# guard DEV CONSENT ALLOWED_WORDS: refuse (exit 3) unless DEV is safe to
# format.  CONSENT=yes lets a foreign signature pass; CONSENT=teardown skips
# the signature check (teardown checks it itself).  Writes nothing.
# The device must be one the inventory lists (ALLOWED_WORDS); the OS's
# hook guard_in_use says whether it is a free disk; then its signature.
guard() {
	_g_dev=$1
	_g_consent=$2
	_g_allowed=$3
	_g_real=$(resolve "$_g_dev")
	_g_ok=no
	for _g_a in $_g_allowed; do
		if [ "$_g_a" = "$_g_dev" ] || [ "$(resolve "$_g_a")" = "$_g_real" ]; then
			_g_ok=yes
		fi
	done
	[ "$_g_ok" = yes ] || refuse "$_g_dev" "not among this host's devices in the inventory (allowed:${_g_allowed:- none})"
	guard_in_use "$_g_dev" "$_g_real"
	[ "$_g_consent" = teardown ] && return 0
	signature "$_g_real"
	if [ "$SIG" = foreign ] && [ "$_g_consent" != yes ]; then
		refuse "$_g_dev" "carries a foreign signature ($SIG_DETAIL); pass consent=yes for this host and device to overwrite it"
	fi
	return 0
}

# guard_same_disk IDENT ARGS...: guard_args, then refuse (exit 3) unless
# the device is the disk the sweep's facts saw (IDENT, from the hook
# dev_ident), not another one put at the same path since (the guard cannot
# tell: a blank disk or one of fsmatrix's passes it).
guard_same_disk() {
	_gs_ident=$1
	shift
	guard_args ${1+"$@"}
	_gs_now=$(dev_ident "$G_REAL")
	if [ "$_gs_now" != "$_gs_ident" ]; then
		refuse "$G_DEV" "it is not the disk checked at the sweep's start (was $_gs_ident, now $_gs_now)"
	fi
}

# facts_devices ARGS...: device.N.path and .present of every dev= in ARGS,
# the rest from the hook device_facts; and `standin=<os>` on a lab stand-in
# host (docs/standin-hosts.md: the file /run/fsmx-standin/os).
facts_devices() {
	if [ -r /run/fsmx-standin/os ]; then
		kv standin "$(head -n 1 /run/fsmx-standin/os)"
	fi
	_fd_i=0
	for _fd_a in ${1+"$@"}; do
		case $_fd_a in dev=*) ;; *) continue ;; esac
		_fd_dev=${_fd_a#dev=}
		kv "device.$_fd_i.path" "$_fd_dev"
		if _fd_out=$(device_facts "device.$_fd_i" "$_fd_dev"); then
			kv "device.$_fd_i.present" yes
			printf '%s\n' "$_fd_out"
		else
			kv "device.$_fd_i.present" no
		fi
		_fd_i=$((_fd_i + 1))
	done
}

# pg_user_shell_fact ARGS...: `pg_user_shell=` the login shell of pg_user=
# (when given and the account exists): on the BSDs every PostgreSQL verb
# runs `su USER -c LINE`, which runs that shell (as_pg_user), so a
# `nologin` account fails them all; `check` refuses it up front.  `pw
# usershow USER` prints the master.passwd line, the shell 10th of its
# name:passwd:uid:gid:class:change:expire:gecos:home:shell [FB
# usr.sbin/pw/pw_user.c pw_user_show -> print_user, 14.1]; without pw
# (Linux) `getent passwd USER`, the shell 7th.
pg_user_shell_fact() {
	_ps_user=$(opt pg_user "" ${1+"$@"})
	[ -n "$_ps_user" ] || return 0
	case $_ps_user in *[!a-z0-9_-]*) usage_die "pg_user=$_ps_user is not [a-z0-9_-]+" ;; esac
	if command -v pw >/dev/null 2>&1; then
		_ps_line=$(pw usershow "$_ps_user" 2>/dev/null) || return 0
		kv pg_user_shell "$(printf '%s\n' "$_ps_line" | cut -d: -f10)"
	elif _ps_line=$(getent passwd "$_ps_user" 2>/dev/null); then
		kv pg_user_shell "$(printf '%s\n' "$_ps_line" | cut -d: -f7)"
	fi
}

# facts_pg_tools TOOLS ARGS...: the facts' PostgreSQL versions (from
# pg_bin=) and `tools=`, the ones of TOOLS this host has.
facts_pg_tools() {
	_fp_tools=$1
	shift
	_fp_bin=$(opt pg_bin "" ${1+"$@"})
	if [ -n "$_fp_bin" ]; then
		for _fp_t in postgres pgbench psql; do
			if [ -x "$_fp_bin/$_fp_t" ]; then
				kv "${_fp_t}_version" "$("$_fp_bin/$_fp_t" --version 2>/dev/null | head -n 1)"
			fi
		done
	fi
	pg_user_shell_fact ${1+"$@"}
	_fp_have=
	for _fp_t in $_fp_tools; do
		command -v "$_fp_t" >/dev/null 2>&1 && _fp_have="$_fp_have${_fp_have:+ }$_fp_t"
	done
	kv tools "$_fp_have"
}

# guard_args ARGS...: run the guard from verb arguments; sets G_DEV, G_REAL.
guard_args() {
	G_DEV=$(need dev ${1+"$@"})
	check_abs dev "$G_DEV"
	_ga_consent=$(opt consent no ${1+"$@"})
	case $_ga_consent in yes | no) ;; *) usage_die "consent=$_ga_consent is not yes or no" ;; esac
	_ga_allowed=
	for _ga in ${1+"$@"}; do
		case $_ga in allowed=*) _ga_allowed="$_ga_allowed ${_ga#allowed=}" ;; esac
	done
	guard "$G_DEV" "$_ga_consent" "$_ga_allowed"
	G_REAL=$(resolve "$G_DEV")
}

# check_pool NAME: a pool name fsmatrix makes (own_pool): the guard knows
# fsmatrix's pools by the name alone, so no other name is made.
check_pool() {
	own_pool "$1" || usage_die "pool=$1 is not a pool name fsmatrix makes ($FSMX_LABEL, or $FSMX_LABEL<k> for the host's device k = 1, 2, ...: the guard recognises fsmatrix's pools by that name alone)"
}

# print_zfs_props POOL: every effective property of the pool's root dataset.
print_zfs_props() {
	timeout 60 zfs get -H -p -o property,value all "$1" 2>/dev/null |
		while IFS='	' read -r _zp_name _zp_val; do
			case $_zp_name in
			'' | *[!a-z0-9_.]*) continue ;;
			esac
			kv "zfs.$_zp_name" "$_zp_val"
		done
}

verb_preflight() {
	guard_args ${1+"$@"}
	signature "$G_REAL"
	kv guard ok
	kv dev "$G_DEV"
	kv dev_real "$G_REAL"
	kv dev_size_bytes "$(dev_size_bytes "$G_REAL")"
	kv signature "$SIG"
	kv signature_detail "$SIG_DETAIL"
}

# pg_common ARGS...: sets PG_BIN PG_USER MNT PGDATA CELL SOCK.
# pg_who ARGS: PG_BIN (pg_bin=, absolute) and PG_USER (pg_user=, postgres).
pg_who() {
	PG_BIN=$(need pg_bin ${1+"$@"})
	check_abs pg_bin "$PG_BIN"
	PG_USER=$(opt pg_user postgres ${1+"$@"})
	case $PG_USER in '' | *[!a-z0-9_-]*) usage_die "pg_user=$PG_USER is not [a-z0-9_-]+" ;; esac
}

pg_common() {
	pg_who ${1+"$@"}
	MNT=$(need mnt ${1+"$@"})
	check_abs mnt "$MNT"
	PGDATA=${MNT%/}/pgdata
	CELL=$(opt cell "" ${1+"$@"})
	if [ -n "$CELL" ]; then
		check_abs cell "$CELL"
		SOCK=${CELL%/}/sock
	else
		SOCK=
	fi
}

# pg_write FILE: stdin into FILE, as PG_USER (FILE is in the data folder,
# which PG_USER owns), through FILE.tmp and a rename: the rename replaces a
# link at FILE rather than following it, and whatever FILE.tmp is, it is
# opened with PG_USER's rights only.
pg_write() {
	log "+ [as $PG_USER] write $1"
	# shellcheck disable=SC2016 # the line is for sh -c, with its own $1
	as_pg_user_out "$PG_USER" sh -c 'umask 077 && cat >"$1.tmp" && mv -f "$1.tmp" "$1"' sh "$1"
}

# write_pg_hba: who may connect, and as which role, on stdout.  Only the
# cell's socket (there is no TCP listener) and only peer authentication:
# the OS user PG_USER as the superuser PG_USER, and through the map
# (write_pg_ident) the client user as CLIENT_ROLE and the ssh login user
# (the orchestrator's counters, through a streamlocal tunnel) as
# MONITOR_ROLE.  Anything else matches no line and is refused by
# PostgreSQL: a local user, a script's `\c - postgres`, a consented `\!`.
write_pg_hba() {
	printf '# written by fsmatrix at every pg-init: peer authentication on the cell socket only\n'
	printf '# TYPE DATABASE USER METHOD\n'
	printf 'local all %s peer\n' "$PG_USER"
	printf 'local all %s peer map=fsmatrix\n' "$CLIENT_ROLE" "$MONITOR_ROLE"
}

# write_pg_ident MONITOR_USER: the map of write_pg_hba, on stdout.
write_pg_ident() {
	printf '# written by fsmatrix at every pg-init\n'
	printf '# MAPNAME SYSTEM-USERNAME PG-USERNAME\n'
	printf 'fsmatrix %s %s\n' "$CLIENT_USER" "$CLIENT_ROLE" "$1" "$MONITOR_ROLE"
}

pg_running() {
	[ -f "$PGDATA/postmaster.pid" ] && as_pg_user "$PG_USER" "$PG_BIN/pg_ctl" -D "$PGDATA" status >/dev/null 2>&1
}

verb_pg_init() {
	pg_common ${1+"$@"}
	[ -n "$CELL" ] || usage_die "missing argument cell="
	_pi_port=$(need port ${1+"$@"})
	check_uint port "$_pi_port"
	client_user_of ${1+"$@"}
	_pi_mon=$(need monitor_user ${1+"$@"})
	case $_pi_mon in '' | -* | *[!A-Za-z0-9_.-]*) usage_die "monitor_user=$_pi_mon is not [A-Za-z0-9_.-]+ (the ssh login user)" ;; esac
	id -u "$_pi_mon" >/dev/null 2>&1 || die "monitor_user $_pi_mon does not exist on this host; valid: the user fsmatrix logs in as"
	# A bad pg_set stops here, before anything is made (usage_die in $(...)).
	_pi_conf=$(write_pg_conf "$_pi_port" "$SOCK" ${1+"$@"}) || exit $?
	_pi_mline=$(mount_line "$(resolve "$MNT")")
	[ -n "$_pi_mline" ] || die "$MNT is not mounted: run mount first (pgdata must live on the filesystem under test)"
	run mkdir -p "$CELL" "$SOCK"
	run chown "$PG_USER" "$SOCK"
	run mkdir -p "$PGDATA"
	run chown "$PG_USER" "$PGDATA"
	run chmod 0700 "$PGDATA"
	_pi_t0=$(now_ms)
	if [ -f "$PGDATA/PG_VERSION" ]; then
		log "initdb skipped: $PGDATA/PG_VERSION exists"
	else
		if ! as_pg_user "$PG_USER" "$PG_BIN/initdb" -D "$PGDATA" -U "$PG_USER" --auth-local=peer --auth-host=reject -E UTF8 --locale=C; then
			die "initdb -D $PGDATA as $PG_USER failed"
		fi
	fi
	_pi_t1=$(now_ms)
	# Every file in the data folder is written by its owner, PG_USER, never
	# by root: a link PG_USER planted there gets no more than PG_USER's rights.
	printf '%s\n' "$_pi_conf" | pg_write "$PGDATA/fsmatrix.conf" || die "writing $PGDATA/fsmatrix.conf as $PG_USER failed"
	write_pg_hba | pg_write "$PGDATA/pg_hba.conf" || die "writing $PGDATA/pg_hba.conf as $PG_USER failed"
	write_pg_ident "$_pi_mon" | pg_write "$PGDATA/pg_ident.conf" || die "writing $PGDATA/pg_ident.conf as $PG_USER failed"
	log "+ [as $PG_USER] include 'fsmatrix.conf' at the end of $PGDATA/postgresql.conf (once)"
	# shellcheck disable=SC2016 # the line is for sh -c, with its own $1 $2 $3
	as_pg_user_out "$PG_USER" sh -c 'grep -qxF "$2" "$1" || printf "\n%s\n%s\n" "$3" "$2" >>"$1"' sh \
		"$PGDATA/postgresql.conf" "include 'fsmatrix.conf'" "# fsmatrix: the cell's settings, last so they win" ||
		die "including fsmatrix.conf in $PGDATA/postgresql.conf as $PG_USER failed"
	kv pgdata "$PGDATA"
	kv conf "$PGDATA/fsmatrix.conf"
	kv hba "$PGDATA/pg_hba.conf"
	kv socket_dir "$SOCK"
	kv initdb_ms "$((_pi_t1 - _pi_t0))"
}

verb_pg_start() {
	pg_common ${1+"$@"}
	[ -n "$CELL" ] || usage_die "missing argument cell="
	[ -f "$PGDATA/PG_VERSION" ] || die "no cluster in $PGDATA: run pg-init first"
	_ps_log=${CELL%/}/postgres.log
	run mkdir -p "$CELL"
	[ -e "$_ps_log" ] || : >"$_ps_log"
	run chown "$PG_USER" "$_ps_log"
	if pg_running; then
		kv started already
	else
		if ! as_pg_user "$PG_USER" "$PG_BIN/pg_ctl" -D "$PGDATA" -l "$_ps_log" -w -t 300 start; then
			log "last lines of $_ps_log:"
			tail -n 20 "$_ps_log" >&2 || true
			die "pg_ctl -D $PGDATA start as $PG_USER failed (log: $_ps_log)"
		fi
		kv started yes
	fi
	kv pgdata "$PGDATA"
	kv pid "$(head -n 1 "$PGDATA/postmaster.pid")"
	kv log "$_ps_log"
	kv socket_dir "$SOCK"
}

# verb_pg_check_settings ARGS...: ask the host's own PostgreSQL whether it
# accepts each pg_set, before any disk is formatted.  Read-only: no cluster,
# no file written.  Each setting is given alone as `postgres -c name=value`
# (as pg_user: postgres refuses root) with a data folder that cannot exist
# (under the postgres binary, a file): postgres applies -c while reading its
# arguments and stops with FATAL, exit 1, at a name or value it refuses; a
# setting it accepts gets as far as the data folder, exit 2.  -C makes sure
# nothing would start even then.  Any other outcome fails the verb.
verb_pg_check_settings() {
	pg_who ${1+"$@"}
	[ -x "$PG_BIN/postgres" ] || die "no postgres in $PG_BIN"
	# Every setting the server knows: name, context, group, type, reset, min,
	# max, descriptions (PostgreSQL's src/backend/utils/misc/help_config.c).
	log "+ [as $PG_USER] $PG_BIN/postgres --describe-config"
	if ! _pc_desc=$(as_pg_user_out "$PG_USER" env LC_ALL=C "$PG_BIN/postgres" --describe-config); then
		die "postgres --describe-config as $PG_USER failed"
	fi
	_pc_absent=$PG_BIN/postgres/no-pgdata
	_pc_i=0
	for _pc_a in ${1+"$@"}; do
		case $_pc_a in
		pg_set=*=*) ;;
		pg_set=*) usage_die "pg_set=${_pc_a#pg_set=} is not name=value" ;;
		*) continue ;;
		esac
		_pc_kv=${_pc_a#pg_set=}
		_pc_name=${_pc_kv%%=*}
		case $_pc_name in
		'' | *[!a-z0-9_.]*) usage_die "pg_set name '$_pc_name' is not [a-z0-9_.]+" ;;
		esac
		log "+ [as $PG_USER] $PG_BIN/postgres -D $_pc_absent -C $_pc_name -c $(sh_quote "$_pc_kv")"
		_pc_rc=0
		_pc_err=$(as_pg_user_out "$PG_USER" env LC_ALL=C "$PG_BIN/postgres" -D "$_pc_absent" -C "$_pc_name" -c "$_pc_kv" 2>&1 >/dev/null) || _pc_rc=$?
		case $_pc_rc:$_pc_err in
		2:*"$_pc_absent"*) ;;
		1:*FATAL:*)
			kv "refused.$_pc_i.error" "$(printf '%s\n' "$_pc_err" | sed -n 's/^.*FATAL:  *//p' | head -n 1)"
			_pc_hint=$(printf '%s\n' "$_pc_err" | sed -n 's/^.*HINT:  *//p' | head -n 1)
			[ -z "$_pc_hint" ] || kv "refused.$_pc_i.hint" "$_pc_hint"
			_pc_line=$(printf '%s\n' "$_pc_desc" | awk -F '\t' -v OFS='\t' -v n="$_pc_name" '$1 == n { NF = 8; print }' | head -n 1)
			[ -z "$_pc_line" ] || kv "refused.$_pc_i.describe" "$_pc_line"
			;;
		*) die "postgres -c $_pc_name=... as $PG_USER: unexpected exit $_pc_rc: $(printf '%s' "$_pc_err" | tr '\n' ' ')" ;;
		esac
		_pc_i=$((_pc_i + 1))
	done
	kv checked "$_pc_i"
	kv names "$(printf '%s\n' "$_pc_desc" | cut -f 1 | tr '\n' ' ')"
}

# pg_wake: a postmaster or backend stopped by SIGSTOP (a hung host, a test)
# acts on pg_ctl's signals only once continued, so stop would wait out both
# of its timeouts and fail.  SIGCONT to the postmaster of $PGDATA and its
# children, sent as PG_USER (who can signal nothing but its own processes);
# harmless when nothing is stopped.
pg_wake() {
	_pw_pid=$(head -n 1 "$PGDATA/postmaster.pid" 2>/dev/null) || return 0
	case $_pw_pid in '' | *[!0-9]*) return 0 ;; esac
	_pw_all="$_pw_pid $(child_pids "$_pw_pid" | tr '\n' ' ')"
	log "SIGCONT to the postmaster $_pw_pid and its children (none is left stopped)"
	# shellcheck disable=SC2086 # a list of pids
	as_pg_user_out "$PG_USER" sh -c 'kill -CONT "$@" 2>/dev/null' sh $_pw_all || :
}

# pg_stop_cluster: stop fast, then immediate; prints stopped=yes|already.
pg_stop_cluster() {
	if ! pg_running; then
		kv stopped already
		return 0
	fi
	pg_wake
	if ! as_pg_user "$PG_USER" "$PG_BIN/pg_ctl" -D "$PGDATA" -m fast -w -t 120 stop; then
		as_pg_user "$PG_USER" "$PG_BIN/pg_ctl" -D "$PGDATA" -m immediate -w -t 60 stop ||
			die "pg_ctl -D $PGDATA stop (fast, then immediate) failed"
	fi
	kv stopped yes
}

verb_pg_stop() {
	pg_common ${1+"$@"}
	pg_stop_cluster
}

# The PostgreSQL role the clients connect as: it owns the benchmark
# database and has no superuser rights, so a script's `COPY … PROGRAM`,
# `lo_import` or untrusted language is refused by PostgreSQL itself.
CLIENT_ROLE=fsmatrix
# The role the orchestrator reads PostgreSQL's counters as (pg_monitor's
# rights: statistics and settings, nothing else).
MONITOR_ROLE=fsmatrix_monitor

# client_user_of ARGS...: sets CLIENT_USER (client_user=, default nobody),
# an existing user that is not root.
client_user_of() {
	CLIENT_USER=$(opt client_user nobody ${1+"$@"})
	case $CLIENT_USER in '' | -* | *[!a-z0-9_-]*) usage_die "client_user=$CLIENT_USER is not [a-z0-9_-]+" ;; esac
	_cu_uid=$(id -u "$CLIENT_USER" 2>/dev/null) || die "client_user $CLIENT_USER does not exist on this host; valid: an unprivileged user (client_user in the inventory)"
	[ "$_cu_uid" != 0 ] || die "client_user $CLIENT_USER has uid 0: psql and pgbench never run as root"
}

# client_common ARGS...: sets PG_BIN PG_USER SOCK PORT OUT DB CLIENT_USER
# CDIR for pgbench/psql.  psql and pgbench run as CLIENT_USER (never root:
# a script's `\!` or `\shell` has no more than its rights), in CDIR, the
# one folder of the run it may write in.
client_common() {
	pg_who ${1+"$@"}
	client_user_of ${1+"$@"}
	CELL=$(need cell ${1+"$@"})
	check_abs cell "$CELL"
	SOCK=${CELL%/}/sock
	PORT=$(need port ${1+"$@"})
	check_uint port "$PORT"
	OUT=$(need out ${1+"$@"})
	check_abs out "$OUT"
	DB=$(opt db fsmatrix ${1+"$@"})
	case $DB in '' | *[!a-z0-9_]*) usage_die "db=$DB is not [a-z0-9_]+" ;; esac
	CDIR=${OUT%/}/client
}

# client_dir FILE...: the client's folder made afresh: root makes it and
# copies FILEs into it (nothing of the client's can be planted in between),
# then gives it to CLIENT_USER, 0700.  The rest of OUT stays root's: the
# files root writes there (stdout, stderr, status) cannot be links the
# client made.
client_dir() {
	run mkdir -p "$OUT"
	run rm -rf "$CDIR"
	run mkdir -m 0700 "$CDIR"
	for _cd_f in ${1+"$@"}; do
		run cp "$_cd_f" "$CDIR/"
	done
	run chown -R "$CLIENT_USER" "$CDIR"
}

# as_client CMD ARGS...: CMD as CLIENT_USER in CDIR, with a HOME it cannot
# write (psql and pgbench read no file of root's).  runuser on Linux, else
# `su -m USER -c LINE`: the client user's own shell is usually nologin, so
# LINE goes to the invoking (root's) shell, quoted for sh (csh reads these
# single-quoted words alike) [freebsd-src usr.bin/su/su.c, su.1].
as_client() {
	if command -v runuser >/dev/null 2>&1; then
		(cd "$CDIR" && runuser -u "$CLIENT_USER" -- env HOME=/nonexistent ${1+"$@"})
	else
		(cd "$CDIR" && su -m "$CLIENT_USER" -c "$(quote_all env HOME=/nonexistent ${1+"$@"})")
	fi
}

# admin_psql SQL: a query as the cluster's superuser (as PG_USER, over the
# socket), its answer on stdout.
admin_psql() {
	as_pg_user_out "$PG_USER" "$PG_BIN/psql" -X -A -t -h "$SOCK" -p "$PORT" -U "$PG_USER" -d postgres -c "$1"
}

# verb_load and verb_run: what each load generator needs in common (the
# client's connection, the database), then the generator's own group below,
# chosen by the arguments: scale= loads pgbench's tables, sql= runs a SQL
# script (its data load is its run); run is pgbench's.
verb_load() {
	client_common ${1+"$@"}
	_l_scale=$(opt scale "" ${1+"$@"})
	_l_sql=$(opt sql "" ${1+"$@"})
	if [ -n "$_l_scale" ] && [ -n "$_l_sql" ]; then usage_die "give scale= or sql=, not both"; fi
	if [ -z "$_l_scale" ] && [ -z "$_l_sql" ]; then usage_die "missing argument scale= or sql="; fi
	# The client role and its database, made by the superuser; the load
	# and the runs connect as the role (the database's owner).
	_l_role=$(admin_psql "select 1 from pg_roles where rolname = '$CLIENT_ROLE'") || die "psql to $SOCK port $PORT failed: is PostgreSQL started?"
	if [ "$_l_role" != 1 ]; then
		log "+ [as $PG_USER] create role $CLIENT_ROLE (login, no superuser)"
		admin_psql "create role $CLIENT_ROLE login nosuperuser nocreatedb nocreaterole noreplication" >/dev/null || die "create role $CLIENT_ROLE failed"
	fi
	_l_mon=$(admin_psql "select 1 from pg_roles where rolname = '$MONITOR_ROLE'") || die "psql to $SOCK port $PORT failed"
	if [ "$_l_mon" != 1 ]; then
		log "+ [as $PG_USER] create role $MONITOR_ROLE (login, pg_monitor only)"
		admin_psql "create role $MONITOR_ROLE login nosuperuser nocreatedb nocreaterole noreplication in role pg_monitor" >/dev/null || die "create role $MONITOR_ROLE failed"
	fi
	_l_exists=$(admin_psql "select 1 from pg_database where datname = '$DB'") || die "psql to $SOCK port $PORT failed"
	if [ "$_l_exists" != 1 ]; then
		as_pg_user "$PG_USER" "$PG_BIN/createdb" -h "$SOCK" -p "$PORT" -U "$PG_USER" -O "$CLIENT_ROLE" "$DB" || die "createdb $DB failed"
	fi
	if [ -n "$_l_scale" ]; then
		pgbench_load "$_l_scale" ${1+"$@"}
	else
		_l_cmds=$(opt script_commands no ${1+"$@"})
		case $_l_cmds in yes | no) ;; *) usage_die "script_commands=$_l_cmds is not yes or no" ;; esac
		sql_run "$_l_sql" "$_l_cmds"
	fi
}

verb_run() {
	client_common ${1+"$@"}
	pgbench_run ${1+"$@"}
}

# --- pgbench: its load (pgbench -i), its run, its per-transaction logs ---

# pgbench_load SCALE ARGS...: pgbench -i at SCALE, with the init_opt= and
# pgbench_opt= arguments of ARGS.
pgbench_load() {
	_l_scale=$1
	shift
	check_uint scale "$_l_scale"
	for _l_a in ${1+"$@"}; do
		shift
		case $_l_a in
		init_opt=* | pgbench_opt=*) set -- ${1+"$@"} "${_l_a#*=}" ;;
		esac
	done
	client_dir
	run_step "$OUT" as_client "$PG_BIN/pgbench" -i -s "$_l_scale" ${1+"$@"} -h "$SOCK" -p "$PORT" -U "$CLIENT_ROLE" "$DB"
}

# pgbench_run ARGS...: one cell's pgbench run (the run verb's arguments).
pgbench_run() {
	_r_builtin=$(opt builtin "" ${1+"$@"})
	_r_script=$(opt script "" ${1+"$@"})
	_r_clients=$(need clients ${1+"$@"})
	check_uint clients "$_r_clients"
	_r_jobs=$(opt jobs "$_r_clients" ${1+"$@"})
	check_uint jobs "$_r_jobs"
	_r_dur=$(opt duration "" ${1+"$@"})
	_r_tx=$(opt transactions "" ${1+"$@"})
	_r_progress=$(opt progress 0 ${1+"$@"})
	_r_rate=$(opt rate "" ${1+"$@"})
	_r_limit=$(opt latency_limit "" ${1+"$@"})
	_r_txlog=$(opt txlog 0 ${1+"$@"})
	_r_sampling=$(opt sampling_rate "" ${1+"$@"})
	_r_per_stmt=$(opt per_statement 0 ${1+"$@"})
	if [ -n "$_r_builtin" ] && [ -n "$_r_script" ]; then usage_die "give builtin= or script=, not both"; fi
	if [ -n "$_r_dur" ] && [ -n "$_r_tx" ]; then usage_die "give duration= or transactions=, not both"; fi
	for _r_a in ${1+"$@"}; do
		shift
		case $_r_a in
		pgbench_opt=*) set -- ${1+"$@"} "${_r_a#*=}" ;;
		esac
	done
	# -R: a fixed load in transactions per second (all clients together);
	# -L: transactions slower than this many ms counted apart (skipped with -R).
	if [ -n "$_r_rate" ]; then
		check_uint rate "$_r_rate"
		set -- -R "$_r_rate" ${1+"$@"}
	fi
	if [ -n "$_r_limit" ]; then
		check_uint latency_limit "$_r_limit"
		set -- -L "$_r_limit" ${1+"$@"}
	fi
	# -l: a log line per transaction, in the client's folder (never a path
	# from the matrix), one file per pgbench thread; gzipped after into the
	# run's own txlog folder.
	_r_txdir=${OUT%/}/txlog
	case $_r_txlog in
	0) [ -z "$_r_sampling" ] || usage_die "sampling_rate= needs txlog=1" ;;
	1)
		if [ -n "$_r_sampling" ]; then
			check_fraction sampling_rate "$_r_sampling"
			set -- --sampling-rate="$_r_sampling" ${1+"$@"}
		fi
		set -- -l --log-prefix="$CDIR/pgbench_log" ${1+"$@"}
		;;
	*) usage_die "txlog=$_r_txlog is not 0 or 1" ;;
	esac
	# -r: each statement's mean latency in the summary.
	case $_r_per_stmt in
	0) ;;
	1) set -- -r ${1+"$@"} ;;
	*) usage_die "per_statement=$_r_per_stmt is not 0 or 1" ;;
	esac
	# -P 1: a line a second.  progress=1 keeps the lines in the stderr file
	# (the matrix asked for them); progress=live only streams them, marked,
	# on this script's stderr for the orchestrator's live view.  Both stream.
	case $_r_progress in
	0) _rs_live= ;;
	1) _rs_live=keep ;;
	live) _rs_live=drop ;;
	*) usage_die "progress=$_r_progress is not 0, 1 or live" ;;
	esac
	[ -z "$_rs_live" ] || set -- -P 1 ${1+"$@"}
	if [ -n "$_r_dur" ]; then
		check_uint duration "$_r_dur"
		set -- -T "$_r_dur" ${1+"$@"}
	elif [ -n "$_r_tx" ]; then
		check_uint transactions "$_r_tx"
		set -- -t "$_r_tx" ${1+"$@"}
	else
		usage_die "missing argument duration= or transactions="
	fi
	if [ -n "$_r_builtin" ]; then
		case $_r_builtin in
		tpcb-like | simple-update | select-only) ;;
		*) usage_die "builtin=$_r_builtin is not tpcb-like, simple-update or select-only" ;;
		esac
		set -- -b "$_r_builtin" ${1+"$@"}
	elif [ -n "$_r_script" ]; then
		check_abs script "$_r_script"
		[ -r "$_r_script" ] || die "script=$_r_script: no such readable file"
		# -n: pgbench's pre-run vacuum of the pgbench_* tables only prints
		# errors when a custom script does not use them.  The script is
		# read from the client's folder (the uploaded one is root's).
		set -- -n -f "$CDIR/${_r_script##*/}" ${1+"$@"}
	else
		usage_die "missing argument builtin= or script="
	fi
	if [ "$_r_txlog" = 1 ]; then
		# Every argument checked: an earlier attempt's logs go first.
		run rm -rf "$_r_txdir"
		run mkdir -p "$_r_txdir"
	fi
	if [ -n "$_r_script" ]; then client_dir "$_r_script"; else client_dir; fi
	run_step "$OUT" as_client "$PG_BIN/pgbench" ${1+"$@"} -c "$_r_clients" -j "$_r_jobs" -h "$SOCK" -p "$PORT" -U "$CLIENT_ROLE" "$DB"
	_rs_live=
	if [ "$_r_txlog" = 1 ]; then
		txlog_pack "$_r_txdir"
	fi
}

# txlog_pack DIR: gzip every per-transaction log pgbench left in the
# client's folder (pgbench_log.PID, pgbench_log.PID.THREAD) into DIR and
# print txlog=PATH for each.  Read as the client (a link it planted to a
# file of root's is not readable), written by root into DIR (root's), and
# only names pgbench makes (digits and dots) are taken.
txlog_pack() {
	for _tp_f in "$CDIR"/pgbench_log.*; do
		_tp_n=${_tp_f##*/}
		case ${_tp_n#pgbench_log.} in '' | *[!0-9.]*) continue ;; esac
		[ -f "$_tp_f" ] || continue
		if ! as_client gzip -c -- "$_tp_f" >"$1/$_tp_n.gz"; then
			log "not packed: $_tp_f (gzip as $CLIENT_USER failed: not the client's own file?)"
			rm -f "$1/$_tp_n.gz" "$_tp_f"
			continue
		fi
		rm -f "$_tp_f"
		kv txlog "$1/$_tp_n.gz"
	done
}

# --- psql: a SQL script, timed statement by statement ---

# psql_restricts: true when the host's psql has `\restrict` (the minor
# releases of August 2025 on: 13.22, 14.19, 15.14, 16.10, 17.6; and 18),
# read from `psql --version` ("psql (PostgreSQL) 15.18 (Debian …)").
# Prints the version it read.
psql_restricts() {
	_pr_v=$("$PG_BIN/psql" --version 2>/dev/null | sed -n 's/^psql (PostgreSQL) \([0-9][0-9]*\)\.\([0-9][0-9]*\).*/\1 \2/p' | head -n 1)
	printf '%s' "$_pr_v" | tr ' ' .
	# shellcheck disable=SC2086 # two numbers, split on purpose
	set -- $_pr_v
	[ $# = 2 ] || return 1
	case $1 in
	13) [ "$2" -ge 22 ] ;;
	14) [ "$2" -ge 19 ] ;;
	15) [ "$2" -ge 14 ] ;;
	16) [ "$2" -ge 10 ] ;;
	17) [ "$2" -ge 6 ] ;;
	*) [ "$1" -ge 18 ] ;;
	esac
}

# sql_run FILE CONSENT: psql runs FILE once with \timing on (the run is the
# load).  Without the host owner's consent to script commands (CONSENT
# no), psql itself is the barrier: `\restrict KEY` with a random KEY
# before the script, so psql refuses every backslash command of it (and
# of any text it builds and interpolates); the key is in no file the
# script can read before it is restricted.  A psql without `\restrict`
# runs no script with a backslash in it without consent.
sql_run() {
	_sq_sql=$1
	check_abs sql "$_sq_sql"
	[ -r "$_sq_sql" ] || die "sql=$_sq_sql: no such readable file"
	_sq_key=
	if [ "$2" = no ]; then
		if _sq_v=$(psql_restricts); then
			_sq_key=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
			[ "${#_sq_key}" = 32 ] || die "no random key from /dev/urandom for psql's \\restrict"
			kv restricted yes
		elif grep -qF -e "\\" "$_sq_sql"; then
			die "this host's psql ${_sq_v:-(version unknown)} has no \\restrict, so a SQL script with a backslash runs only where the host's owner allows script commands (allow_script_commands = true); psql 13.22, 14.19, 15.14, 16.10, 17.6 or later restricts them"
		else
			kv restricted no-backslash
		fi
	else
		kv restricted no
	fi
	run mkdir -p "$OUT"
	{
		printf '\\timing on\n'
		[ -z "$_sq_key" ] || printf '\\restrict %s\n' "$_sq_key"
		cat "$_sq_sql"
	} >"$OUT/input.sql"
	client_dir "$OUT/input.sql"
	# -q -e -o: stdout holds only each statement as sent and its `Time:`
	# line (what the orchestrator's parser pairs); results go to a file.
	run_step "$OUT" as_client "$PG_BIN/psql" -X -q -e -v ON_ERROR_STOP=1 -o "$CDIR/results.txt" -h "$SOCK" -p "$PORT" -U "$CLIENT_ROLE" -d "$DB" -f "$CDIR/input.sql"
}

# verb_sizes mnt= fs= [pool=]: the data directory's sizes once the data is on
# disk.  Sizes read before the filesystem has written the data are not sizes:
# ZFS updates st_blocks (du) and its own used/referenced only when the
# transaction group holding the data commits, up to zfs_txg_timeout later
# (openzfs/zfs#16463, #2134; zfsprops(7): fsync does not update the usage).
# So: sync(1), then the hook fs_flush FS MNT POOL (prints flush= and, for a
# wait, flush_wait_s=/flush_settled=), then the sizes.
# Hooks: du_sizes DIR prints du_bytes (on disk) and du_apparent_bytes;
# df_k MNT prints df's "size used avail" line in KiB blocks (header first).
verb_sizes() {
	_s_mnt=$(need mnt ${1+"$@"})
	check_abs mnt "$_s_mnt"
	_s_fs=$(need fs ${1+"$@"})
	check_fs "$_s_fs"
	_s_pool=
	if [ "$_s_fs" = zfs ]; then
		_s_pool=$(need pool ${1+"$@"})
		check_pool "$_s_pool"
	fi
	_s_pgdata=${_s_mnt%/}/pgdata
	[ -d "$_s_pgdata" ] || die "no data directory $_s_pgdata"
	kv pgdata "$_s_pgdata"
	log "+ sync"
	sync
	fs_flush "$_s_fs" "$_s_mnt" "$_s_pool"
	du_sizes "$_s_pgdata"
	# "Filesystem 1K-blocks Used Avail(able) Capacity Mounted on" (POSIX df -P,
	# FreeBSD bin/df/df.c).  printf, not print: mawk prints numbers past 2^31
	# as 4.29497e+09.
	_s_df=$(df_k "$_s_mnt" | awk 'NR == 2 { printf "%.0f %.0f %.0f\n", $2 * 1024, $3 * 1024, $4 * 1024 }')
	kv df_size_bytes "${_s_df%% *}"
	_s_df=${_s_df#* }
	kv df_used_bytes "${_s_df%% *}"
	kv df_avail_bytes "${_s_df#* }"
	[ "$_s_fs" != btrfs ] || btrfs_sizes "$_s_mnt"
	if [ "$_s_fs" = zfs ]; then
		# The dataset's own accounting is ZFS's on-disk measure (du a second
		# one).  `zfs get -H -p -o value`: one raw value, bytes; compressratio
		# is "1.83x" in older libzfs, "1.83" in newer [OZ
		# lib/libzfs/libzfs_dataset.c]; pool version 23 (zfs-fuse) has no
		# logicalused/logicalreferenced: the key is absent.
		for _s_p in compressratio used logicalused referenced logicalreferenced; do
			if _s_v=$(timeout 60 zfs get -H -p -o value "$_s_p" "$_s_pool" 2>/dev/null); then
				case $_s_v in '' | -) continue ;; esac
				case $_s_p in
				compressratio) kv zfs_compressratio "${_s_v%x}" ;;
				*) kv "zfs_${_s_p}_bytes" "$_s_v" ;;
				esac
			fi
		done
	fi
}

# btrfs_sizes MNT: btrfs's own accounting of the filesystem at MNT, which
# holds only the cluster: `btrfs filesystem usage -b` (bytes), whose Overall
# "Used:" is the device bytes its block groups use (data extents at their
# compressed size, metadata in each of its copies), "Global reserve:" the
# metadata reserve that statfs(2) counts as used (so df's used is Used plus
# the reserve [linux fs/btrfs/super.c btrfs_statfs]), and "Data,PROFILE:
# ... Used:N" the data extents alone [btrfs-progs cmds/filesystem-usage.c].
# Prints btrfs_used_bytes, btrfs_data_used_bytes, btrfs_global_reserve_bytes;
# nothing (the sizes fall back to df) where the command fails.
btrfs_sizes() {
	_b_out=$(timeout 60 btrfs filesystem usage -b "$1" 2>/dev/null) || return 0
	printf '%s\n' "$_b_out" | awk '
		/^Overall:/ { overall = 1; next }
		/^[^ \t]/ { overall = 0 }
		overall && $1 == "Used:" { used = $2 }
		overall && $1 == "Global" && $2 == "reserve:" { reserve = $3 }
		/^Data,/ {
			for (i = 2; i <= NF; i++)
				if ($i ~ /^Used:[0-9]+$/) { sub(/^Used:/, "", $i); data += $i; seen = 1 }
		}
		END {
			if (used != "") printf "btrfs_used_bytes=%.0f\n", used
			if (seen) printf "btrfs_data_used_bytes=%.0f\n", data
			if (reserve != "") printf "btrfs_global_reserve_bytes=%.0f\n", reserve
		}'
}

# zfs_flush POOL: commit the pool's dirty data so that its accounting is
# true.  sync(2) and fsync only commit the ZIL (Linux zfs_sync -> zil_commit);
# `zpool sync [pool]` "forces all in-core dirty data to be written to the
# primary pool storage and not the ZIL.  It will also update administrative
# information including quota reporting" [OZ man/man8/zpool-sync.8; ZFS on
# Linux >= 0.7.0, FreeBSD 13+ (OpenZFS 2.x)].  A zpool without it (zfs-fuse,
# pool version 23) gets zfs_txg_force, else zfs_txg_wait.  Prints
# flush=zpool-sync or the force's or the wait's keys.
zfs_flush() {
	if zpool_has_sync; then
		log "+ zpool sync $1"
		timeout 300 zpool sync "$1" || die "zpool sync $1 exited $?"
		kv flush zpool-sync
	elif ! zfs_txg_force "$1"; then
		zfs_txg_wait "$1" "$(zfs_txg_timeout)"
	fi
}

# zfs_txg_force DATASET: setting a property is a sync task: `zfs set`
# returns once the transaction group that carries it, and with it every
# write before it, is on disk (dsl_prop_set -> dsl_sync_task_do ->
# txg_wait_synced).  A user property of fsmatrix's own, removed again at
# once: measured on zfs-fuse, `used` went from 1.5 MB to 40.5 MB (40 MB
# written) in 0.25 s where the timed wait takes ~30 s.  Prints
# flush=txg-sync-task and the seconds it took; false if zfs refused the set.
zfs_txg_force() {
	_tf_t0=$(now_ms)
	log "+ zfs set fsmatrix:flush=$_tf_t0 $1 (a sync task: returns once its txg is on disk)"
	timeout 300 zfs set "fsmatrix:flush=$_tf_t0" "$1" || return 1
	timeout 300 zfs inherit fsmatrix:flush "$1" || log "zfs inherit fsmatrix:flush $1 failed; the property stays until teardown"
	_tf_ms=$(($(now_ms) - _tf_t0))
	kv flush txg-sync-task
	kv flush_wait_s "$((_tf_ms / 1000)).$(printf '%03d' "$((_tf_ms % 1000))")"
	kv flush_settled yes
}

# zpool_has_sync: true when zpool's usage (printed by a bare `zpool`, exit 2)
# lists the `sync` subcommand ("\tsync [-f] [pool] ..." [OZ
# cmd/zpool/zpool_main.c]); zfs-fuse's answers "unrecognized command".
zpool_has_sync() {
	zpool 2>&1 | grep -Eq '^[[:space:]]+sync([[:space:]]|$)'
}

# zfs_txg_wait POOL TXG_TIMEOUT_S: wait for the next transaction group commit,
# seen as the dataset's `used` changing, then holding still for one more poll
# (every 0.5 s).  A txg commits at the latest TXG_TIMEOUT_S after the data
# was dirtied, so `used` unchanged for a whole interval means nothing was left
# to commit.  Bounded by the interval + 5 s; prints flush=txg-wait,
# flush_wait_s= (time slept) and flush_settled=yes|no (no: the bound was hit
# while `used` still moved).
zfs_txg_wait() {
	_tw_quiet=$((($2 + 1) * 2))
	_tw_limit=$((($2 + 5) * 2))
	log "+ waiting for a txg commit of $1 (zfs get used every 0.5 s, at most $(($2 + 5)) s)"
	_tw_first=$(zfs_used_now "$1")
	_tw_prev=$_tw_first
	_tw_n=0
	_tw_moved=no
	_tw_settled=no
	while [ "$_tw_n" -lt "$_tw_limit" ]; do
		sleep 0.5
		_tw_n=$((_tw_n + 1))
		_tw_v=$(zfs_used_now "$1")
		[ "$_tw_v" = "$_tw_first" ] || _tw_moved=yes
		if [ "$_tw_v" = "$_tw_prev" ] && { [ "$_tw_moved" = yes ] || [ "$_tw_n" -ge "$_tw_quiet" ]; }; then
			_tw_settled=yes
			break
		fi
		_tw_prev=$_tw_v
	done
	log "  used $_tw_first -> $_tw_v after $_tw_n polls"
	kv flush txg-wait
	kv flush_wait_s "$((_tw_n / 2)).$((_tw_n % 2 * 5))"
	kv flush_settled "$_tw_settled"
}

# zfs_used_now POOL: the dataset's used bytes.
zfs_used_now() {
	_zu=$(timeout 60 zfs get -H -p -o value used "$1") || die "zfs get used $1 failed"
	printf '%s' "$_zu"
}

# zfs_reimport POOL DEV: drop the pool's cache by `zpool export` and import
# it again from a folder holding only DEV (another pool of the same name
# elsewhere on this kernel must never be picked up).  Returns 1 when the
# export fails (the pool is busy); dies when the import fails after it.
zfs_reimport() {
	try zpool export "$1" || return 1
	_zr_dir=$(mktemp -d "${TMPDIR:-/tmp}/fsmx-import.XXXXXX")
	ln -s "$2" "$_zr_dir/$(basename "$2")"
	if try zpool import -d "$_zr_dir" "$1"; then
		rm -rf "$_zr_dir"
		return 0
	fi
	rm -rf "$_zr_dir"
	die "zpool import -d <dir with $2> $1 failed after export: the pool is exported"
}

verb_mount() {
	_m_fs=$(need fs ${1+"$@"})
	check_fs "$_m_fs"
	_m_comp=$(opt comp "" ${1+"$@"})
	_m_mnt=$(need mnt ${1+"$@"})
	check_abs mnt "$_m_mnt"
	_m_opts=
	for _m_a in ${1+"$@"}; do
		case $_m_a in
		mount_opt=*)
			case ${_m_a#mount_opt=} in
			'' | *,*) usage_die "mount_opt=${_m_a#mount_opt=} must be one non-empty option (repeat mount_opt= for more)" ;;
			esac
			_m_opts="$_m_opts${_m_opts:+,}${_m_a#mount_opt=}"
			;;
		esac
	done
	run mkdir -p "$_m_mnt"
	_m_mnt=$(resolve "$_m_mnt")
	if [ "$_m_fs" = zfs ]; then
		_m_src=$(need pool ${1+"$@"})
		check_pool "$_m_src"
		_m_line=$(mount_line "$_m_mnt")
		if [ -n "$_m_opts" ] && [ -n "$_m_line" ]; then
			run zfs umount "$_m_src"
			_m_line=
		fi
		if [ -z "$_m_line" ]; then
			if [ -n "$_m_opts" ]; then
				if ! try zfs mount -o "$_m_opts" "$_m_src"; then
					kv refused_mount_opt "$_m_opts"
					printf 'error: mount: zfs mount -o %s %s failed: option(s) refused\n' "$_m_opts" "$_m_src" >&2
					exit 4
				fi
			else
				run zfs mount "$_m_src"
			fi
		fi
	else
		_m_src=$(resolve "$(need dev ${1+"$@"})")
		_m_line=$(mount_line "$_m_mnt")
		case $_m_line in
		"$_m_src "*) log "already mounted: $_m_line" ;;
		?*) die "$_m_mnt is already a mount point of something else: $_m_line" ;;
		*)
			# The hook mount_source DEV FS: what mount(8) takes (a HAMMER2 PFS is dev@LABEL).
			_m_from=$(mount_source "$_m_src" "$_m_fs")
			if [ -n "$_m_opts" ]; then
				set -- mount -t "$_m_fs" -o "$_m_opts" "$_m_from" "$_m_mnt"
			else
				set -- mount -t "$_m_fs" "$_m_from" "$_m_mnt"
			fi
			if try ${1+"$@"}; then
				_m_rc=0
			else
				_m_rc=$?
			fi
			if [ "$_m_rc" -ne 0 ]; then
				[ -n "$_m_opts" ] || die "$(quote_all ${1+"$@"}) exited $_m_rc"
				if ! try mount -t "$_m_fs" "$_m_from" "$_m_mnt"; then
					die "$(quote_all ${1+"$@"}) exited $_m_rc, and fails without options too"
				fi
				run umount "$_m_mnt"
				_m_refused=
				_m_rest=$_m_opts
				while [ -n "$_m_rest" ]; do
					_m_o=${_m_rest%%,*}
					case $_m_rest in *,*) _m_rest=${_m_rest#*,} ;; *) _m_rest= ;; esac
					if try mount -t "$_m_fs" -o "$_m_o" "$_m_from" "$_m_mnt"; then
						run umount "$_m_mnt"
					else
						_m_refused="$_m_refused${_m_refused:+,}$_m_o"
						kv refused_mount_opt "$_m_o"
					fi
				done
				if [ -z "$_m_refused" ]; then
					kv refused_mount_opt "$_m_opts"
					_m_refused="the combination $_m_opts"
				fi
				printf 'error: mount: option %s refused by the kernel for %s (mount -t %s -o %s exited %s)\n' \
					"$_m_refused" "$_m_fs" "$_m_fs" "$_m_opts" "$_m_rc" >&2
				exit 4
			fi
			;;
		esac
	fi
	_m_line=$(mount_line "$_m_mnt")
	[ -n "$_m_line" ] || die "$_m_mnt is not mounted after mounting $_m_src"
	kv mnt "$_m_mnt"
	kv mount_source "${_m_line%% *}"
	_m_rest=${_m_line#* }
	kv mount_fstype "${_m_rest%% *}"
	kv effective_mount_opts "${_m_rest#* }"
	if [ "$_m_fs" = zfs ]; then
		print_zfs_props "$_m_src"
	fi
	after_mount "$_m_fs" "$_m_mnt" "$_m_comp"
}

# zfs_loaded: whether ZFS may have pools imported, so that zpool may be
# asked.  True by default; freebsd.sh asks kldstat, because there any zpool
# call loads zfs.ko (see its zfs_loaded): teardown of a UFS cell must not.
zfs_loaded() {
	return 0
}

# after_mount FS MNT COMP: the OS's settings on a fresh mount and what they
# are (dragonfly.sh: HAMMER2 compression).  None by default; a comp= no
# hook takes is refused.
after_mount() {
	[ -z "$3" ] || usage_die "comp= is HAMMER2's (dragonfly.sh), not for fs=$1 here"
}

# after_teardown DEV: what the OS leaves behind a teardown beyond the device
# (dragonfly.sh: the hammer2 service daemon a HAMMER2 mount started).  None
# by default.
after_teardown() {
	return 0
}

verb_teardown() {
	_t_dev=$(need dev ${1+"$@"})
	check_abs dev "$_t_dev"
	_t_real=$(resolve "$_t_dev")
	_t_mnt=$(opt mnt "" ${1+"$@"})
	_t_pool=$(opt pool "" ${1+"$@"})
	_t_bin=$(opt pg_bin "" ${1+"$@"})
	_t_work=$(opt work "" ${1+"$@"})
	if [ -n "$_t_work" ]; then
		check_abs work "$_t_work"
		case $_t_work/ in */../* | */./*) usage_die "work=$_t_work has . or .. parts" ;; esac
	fi
	_t_fail=
	# 1. PostgreSQL (only when its data dir is reachable: mounted or not).
	if [ -n "$_t_mnt" ] && [ -n "$_t_bin" ] && [ -f "${_t_mnt%/}/pgdata/postmaster.pid" ]; then
		pg_who ${1+"$@"}
		PGDATA=${_t_mnt%/}/pgdata
		if pg_running; then
			if (pg_stop_cluster >/dev/null); then kv postgres stopped; else
				kv postgres "still running"
				_t_fail="$_t_fail postgres"
			fi
		else
			kv postgres not-running
		fi
	else
		kv postgres not-running
	fi
	# 2. Unmount mnt, but only a mount of our device or pool.
	_t_unmounted=no
	if [ -n "$_t_mnt" ] && [ -d "$_t_mnt" ]; then
		_t_rmnt=$(resolve "$_t_mnt")
		_t_i=0
		while _t_line=$(mount_line "$_t_rmnt") && [ -n "$_t_line" ]; do
			_t_src=${_t_line%% *}
			if [ "$(resolve "$_t_src")" != "$_t_real" ] && { [ -z "$_t_pool" ] || [ "$_t_src" != "$_t_pool" ]; }; then
				log "not unmounting $_t_rmnt: mounted from $_t_src, not $_t_dev${_t_pool:+ or $_t_pool}"
				break
			fi
			if try umount "$_t_rmnt"; then
				_t_unmounted=yes
				continue
			fi
			_t_i=$((_t_i + 1))
			if [ "$_t_i" -ge 10 ]; then
				_t_fail="$_t_fail unmount"
				break
			fi
			sleep 1
		done
	fi
	kv unmounted "$_t_unmounted"
	# 3. The pool, if imported and built on our device (no zfs module
	#    loaded: no pool imported, and zpool is not asked: hook zfs_loaded).
	if [ -n "$_t_pool" ] && command -v zpool >/dev/null 2>&1 && zfs_loaded &&
		timeout 20 zpool list "$_t_pool" >/dev/null 2>&1; then
		check_pool "$_t_pool"
		if [ "$(pool_on_device "$_t_real" "$_t_pool")" = "$_t_pool" ]; then
			_t_i=0
			until try zpool destroy -f "$_t_pool"; do
				_t_i=$((_t_i + 1))
				if [ "$_t_i" -ge 20 ]; then
					_t_fail="$_t_fail pool"
					break
				fi
				sleep 1
			done
			if timeout 20 zpool list "$_t_pool" >/dev/null 2>&1; then kv pool "still imported"; else kv pool destroyed; fi
		else
			kv pool "absent: $_t_pool is not on $_t_dev"
		fi
	else
		kv pool absent
	fi
	# 4. The device: wiped only if safe (guard checks in a subshell, so a
	#    refusal is reported, not fatal) and blank or ours.
	_t_allowed=
	for _t_a in ${1+"$@"}; do
		case $_t_a in allowed=*) _t_allowed="$_t_allowed ${_t_a#allowed=}" ;; esac
	done
	if _t_why=$( (guard "$_t_dev" teardown "$_t_allowed") 2>&1); then
		signature "$_t_real"
		case $SIG in
		none | fsmx)
			if [ "$SIG" = fsmx ] || ! first_mib_zero "$_t_real"; then
				wipe "$_t_real"
			fi
			signature "$_t_real"
			if [ "$SIG" = none ]; then kv device blank; else
				kv device "not blank after wipe: $SIG_DETAIL"
				_t_fail="$_t_fail device"
			fi
			;;
		*) kv device "untouched: foreign signature ($SIG_DETAIL)" ;;
		esac
	else
		kv device "untouched: $(printf '%s' "$_t_why" | tr '\n' ' ')"
	fi
	after_teardown "$_t_real"
	# 5. Per-transaction logs (pgbench -l) that a failed, timed-out or
	#    interrupted run left under work= (a run that ended had its logs
	#    fetched and removed): they grow with every transaction, on the
	#    host's own disk; so do the client's folders (where pgbench writes
	#    them first).  Only <work>/runs/<cell>/txlog and client folders,
	#    never through a link.
	if [ -n "$_t_work" ]; then
		_t_n=0
		for _t_d in "${_t_work%/}"/runs/*/txlog "${_t_work%/}"/runs/*/client; do
			[ -d "$_t_d" ] || continue
			if [ -L "$_t_d" ] || [ -L "${_t_d%/*}" ] || [ -L "${_t_work%/}/runs" ]; then
				log "not removing $_t_d: a symbolic link on its path"
				continue
			fi
			if try rm -rf "$_t_d"; then _t_n=$((_t_n + 1)); else _t_fail="$_t_fail txlog"; fi
		done
		kv txlogs_removed "$_t_n"
		# 6. Guests a killed orchestrator left running (issue 26): only
		#    when <work>/vm exists, so a host without guests says nothing.
		if [ -d "${_t_work%/}/vm" ] && [ ! -L "${_t_work%/}/vm" ]; then
			if _t_vms=$( (vm_reap "${_t_work%/}/vm")); then kv vm_reaped "$_t_vms"; else _t_fail="$_t_fail vm"; fi
		fi
	fi
	[ -z "$_t_fail" ] || die "could not clean:$_t_fail"
}

# ---------------------------------------------------------------- guests (vm-*)
#
# A guest (an inventory host with guest_of, issue 26) runs as plain
# qemu-system-x86_64 on its physical Linux host: vm-start, vm-stop, vm-reap.
# Its files are under dir= (<physical work_dir>/vm): NAME.qcow2 (throwaway
# overlay over the image, which is never written), NAME.pid, NAME.console
# (serial), NAME.mon.in / NAME.mon.out (the monitor's fifos), NAME.cmdline.
# Every value reaches qemu as one word of its command line; qemu parses its
# option strings at `,`, so no path or name may hold one.

# vm_word NAME VALUE: VALUE is a guest name as the inventory's host names
# (config/values.rs HostName): letters, digits, `_`, `-`, `.`, not starting
# with `-` or `.`, at most 63 characters.
vm_word() {
	case $2 in
	'' | [!A-Za-z0-9_]* | *[!A-Za-z0-9_.-]*) usage_die "$1=$2 is not a host name (letters, digits, '_', '-', '.'; not starting with '-' or '.')" ;;
	esac
	[ "${#2}" -le 63 ] || usage_die "$1=$2 is longer than 63 characters"
}

# vm_path NAME VALUE: VALUE is an absolute plain path of letters, digits and
# `_ . / + @ -` (no `,`: qemu's option separator; no shell or glob
# characters), without `.`, `..` or empty parts, not under /dev /proc /sys.
vm_path() {
	case $2 in
	/*) ;;
	*) usage_die "$1=$2 is not an absolute path" ;;
	esac
	case $2 in
	*[!A-Za-z0-9_./+@-]*) usage_die "$1=$2 has a character other than letters, digits and _ . / + @ - (qemu splits options at ',')" ;;
	esac
	case $2/ in
	*//* | */./* | */../*) usage_die "$1=$2 is not a plain path (no '//', '.' or '..' parts)" ;;
	esac
	case $2/ in
	/dev/* | /proc/* | /sys/*) usage_die "$1=$2 is under /dev, /proc or /sys" ;;
	esac
}

# vm_uint NAME VALUE MIN MAX: VALUE is an integer from MIN to MAX.
vm_uint() {
	case $2 in
	'' | *[!0-9]* | 0?* | ????????*) usage_die "$1=$2 is not an integer from $3 to $4" ;;
	esac
	if [ "$2" -lt "$3" ] || [ "$2" -gt "$4" ]; then usage_die "$1=$2 is not an integer from $3 to $4"; fi
}

# vm_enum NAME VALUE CHOICES...: VALUE is one of CHOICES.
vm_enum() {
	_ve_n=$1
	_ve_v=$2
	shift 2
	for _ve_c in "$@"; do
		[ "$_ve_v" != "$_ve_c" ] || return 0
	done
	usage_die "$_ve_n=$_ve_v is not one of: $*"
}

# vm_dir ARGS...: sets VM_DIR from dir= (absolute, plain, last part `vm`).
vm_dir() {
	VM_DIR=$(need dir ${1+"$@"})
	vm_path dir "$VM_DIR"
	VM_DIR=${VM_DIR%/}
	[ "${VM_DIR##*/}" = vm ] || usage_die "dir=$VM_DIR: the last part must be 'vm' (<work_dir>/vm)"
}

# vm_ours PID NAME: PID is alive (not a zombie) and is qemu-system-x86_64
# started with `-name fsmx-NAME`; never true of another process.
vm_ours() {
	case $1 in '' | *[!0-9]*) return 1 ;; esac
	[ -r "/proc/$1/cmdline" ] || return 1
	_vo_state=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "/proc/$1/status" 2>/dev/null) || return 1
	[ "$_vo_state" != Z ] || return 1
	tr '\000' '\n' <"/proc/$1/cmdline" 2>/dev/null |
		awk -v n="fsmx-$2" 'NR == 1 { q = ($0 ~ /(^|\/)qemu-system-x86_64$/) } p == "-name" && $0 == n { f = 1 } { p = $0 } END { exit !(q && f) }'
}

# vm_pid DIR NAME: the PID in DIR/NAME.pid, or empty.
vm_pid() {
	[ -f "$1/$2.pid" ] || return 0
	_vp=$(tr -d ' \n' <"$1/$2.pid" 2>/dev/null) || return 0
	case $_vp in '' | *[!0-9]*) return 0 ;; esac
	printf '%s' "$_vp"
}

# vm_alive PID: PID exists and is not a zombie.  An exiting process has no
# command line left but may still hold the data disk open: vm_gone waits on
# this, not on vm_ours (checked before the signal).
vm_alive() {
	[ -d "/proc/$1" ] || return 1
	_va_state=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "/proc/$1/status" 2>/dev/null) || return 1
	[ -n "$_va_state" ] && [ "$_va_state" != Z ]
}

# vm_gone PID NAME SECONDS: wait up to SECONDS for guest NAME's qemu PID to end.
vm_gone() {
	_vg_i=0
	while vm_alive "$1"; do
		[ "$_vg_i" -lt "$3" ] || return 1
		sleep 1
		_vg_i=$((_vg_i + 1))
	done
	return 0
}

# vm_files_rm DIR NAME: the guest's files but its console.
vm_files_rm() {
	rm -f "$1/$2.qcow2" "$1/$2.pid" "$1/$2.mon.in" "$1/$2.mon.out" "$1/$2.cmdline"
}

# vm_args ARGS...: vm-start's and vm-check's arguments, each checked (a bad
# one is a usage error, exit 2): sets VM_DIR and the _vs_ variables.
vm_args() {
	vm_dir ${1+"$@"}
	_vs_g=$(need guest ${1+"$@"})
	vm_word guest "$_vs_g"
	_vs_img=$(need image ${1+"$@"})
	vm_path image "$_vs_img"
	_vs_fmt=$(need format ${1+"$@"})
	vm_enum format "$_vs_fmt" raw qcow2
	_vs_kernel=$(opt kernel "" ${1+"$@"})
	_vs_initrd=$(opt initrd "" ${1+"$@"})
	_vs_append=$(opt cmdline "" ${1+"$@"})
	if [ -n "$_vs_kernel" ]; then
		vm_path kernel "$_vs_kernel"
	elif [ -n "$_vs_initrd" ] || [ -n "$_vs_append" ]; then
		usage_die "initrd= and cmdline= need kernel="
	fi
	[ -z "$_vs_initrd" ] || vm_path initrd "$_vs_initrd"
	case $_vs_append in
	*[!A-Za-z0-9=_.,:/+@\ -]*) usage_die "cmdline=$_vs_append has a character other than letters, digits, spaces and = _ . , : / + @ -" ;;
	esac
	_vs_mem=$(need memory ${1+"$@"})
	vm_uint memory "$_vs_mem" 128 1048576
	_vs_cpus=$(need cpus ${1+"$@"})
	vm_uint cpus "$_vs_cpus" 1 256
	_vs_bus=$(need bus ${1+"$@"})
	vm_enum bus "$_vs_bus" virtio-blk virtio-scsi nvme sata
	_vs_cache=$(need cache ${1+"$@"})
	vm_enum cache "$_vs_cache" none writeback writethrough directsync unsafe
	_vs_aio=$(need aio ${1+"$@"})
	vm_enum aio "$_vs_aio" native threads io_uring
	# qemu refuses aio=native on a file opened without O_DIRECT.
	case $_vs_aio.$_vs_cache in
	native.none | native.directsync | threads.* | io_uring.*) ;;
	*) usage_die "aio=native needs cache=none or cache=directsync (O_DIRECT), not cache=$_vs_cache" ;;
	esac
	_vs_accel=$(need accel ${1+"$@"})
	vm_enum accel "$_vs_accel" kvm tcg
	_vs_disk=$(need disk ${1+"$@"})
	case $_vs_disk in
	/dev/?*) ;;
	*) usage_die "disk=$_vs_disk is not a device under /dev" ;;
	esac
	case $_vs_disk in
	*[!A-Za-z0-9_./+@-]*) usage_die "disk=$_vs_disk has a character other than letters, digits and _ . / + @ -" ;;
	esac
	case $_vs_disk/ in
	*//* | */./* | */../*) usage_die "disk=$_vs_disk is not a plain path (no '//', '.' or '..' parts)" ;;
	esac
	_vs_port=$(need port ${1+"$@"})
	vm_uint port "$_vs_port" 1 65535
	# The physical host's guard on the disk (its devices in the inventory,
	# its consent to a foreign signature), as make-fs would run it.
	_vs_consent=$(opt consent no ${1+"$@"})
	case $_vs_consent in yes | no) ;; *) usage_die "consent=$_vs_consent is not yes or no" ;; esac
	_vs_allowed=
	for _vs_a in ${1+"$@"}; do
		case $_vs_a in allowed=*) _vs_allowed="$_vs_allowed ${_vs_a#allowed=}" ;; esac
	done
	_vs_b=$VM_DIR/$_vs_g
	_vs_old=$(vm_pid "$VM_DIR" "$_vs_g")
}

# vm_problems: what would keep the guest vm_args named from starting here,
# one line each (none: it can start).  Read-only.  The image's format is
# qemu-img's probe (`qemu-img info -U`, which reads a running guest's image
# too: "file format: F" is its human output, qemu block/qapi.c
# bdrv_image_info_dump; as Debian 12's qemu-img 7.2 prints it for raw and
# qcow2 files); a port another process listens on is found with
# `ss -ltn` (iproute2) when there is one, unless this guest's own qemu
# holds it (vm-start then refuses as already running).
vm_problems() {
	if [ ! -f "$_vs_img" ]; then
		echo "image $_vs_img: no such file"
	elif [ ! -r "$_vs_img" ]; then
		echo "image $_vs_img: not readable"
	elif command -v qemu-img >/dev/null 2>&1; then
		_vp_fmt=$(qemu-img info -U "$_vs_img" 2>/dev/null | sed -n 's/^file format: //p' | sed -n 1p)
		if [ -n "$_vp_fmt" ] && [ "$_vp_fmt" != "$_vs_fmt" ]; then
			echo "image $_vs_img is a $_vp_fmt image (qemu-img info), not format=$_vs_fmt: set image_format = \"$_vp_fmt\" in [host.vm]"
		fi
	fi
	[ -z "$_vs_kernel" ] || [ -f "$_vs_kernel" ] || echo "kernel $_vs_kernel: no such file"
	[ -z "$_vs_initrd" ] || [ -f "$_vs_initrd" ] || echo "initrd $_vs_initrd: no such file"
	if [ -b "$_vs_disk" ]; then
		# The guard's refusal (its own words), unless this guest's qemu has
		# the disk open already (vm-start then refuses as already running).
		if ! vm_ours "$_vs_old" "$_vs_g" && ! _vp_g=$( (guard "$_vs_disk" "$_vs_consent" "$_vs_allowed") 2>&1 >/dev/null); then
			echo "disk $_vs_disk: refused by the guard: ${_vp_g#refused: "$_vs_disk": }"
		fi
	else
		echo "disk $_vs_disk is not a block device"
	fi
	command -v qemu-system-x86_64 >/dev/null 2>&1 || echo "qemu-system-x86_64 not found (Debian: apt-get install qemu-system-x86)"
	command -v qemu-img >/dev/null 2>&1 || echo "qemu-img not found (Debian: apt-get install qemu-utils)"
	if [ "$_vs_accel" = kvm ] && [ ! -c /dev/kvm ]; then
		echo "accel=kvm but this host has no /dev/kvm (KVM not enabled or its module not loaded): enable it, or set accel = \"tcg\" in [host.vm] (software emulation: a stand-in's numbers)"
	fi
	if ! vm_ours "$_vs_old" "$_vs_g" && command -v ss >/dev/null 2>&1; then
		_vp_l=$(ss -Hltn "sport = :$_vs_port" 2>/dev/null | awk '$4 ~ /^(127\.0\.0\.1|0\.0\.0\.0|\*|\[::\]|\[::ffff:127\.0\.0\.1\]):/ { print $4; exit }')
		[ -z "$_vp_l" ] || echo "port $_vs_port is in use on this host ($_vp_l listens, ss -ltn): the guest's SSH is forwarded from 127.0.0.1:$_vs_port; set another ssh_port in [host.vm]"
	fi
}

# vm-check: vm-start's arguments and what vm_problems finds, without
# starting anything (`check` asks it for every guest of a physical host).
verb_vm_check() {
	vm_args ${1+"$@"}
	if vm_ours "$_vs_old" "$_vs_g"; then
		kv running yes
		kv pid "$_vs_old"
	else
		kv running no
	fi
	vm_problems | while IFS= read -r _vc_p; do
		kv problem "$_vc_p"
	done
}

verb_vm_start() {
	vm_args ${1+"$@"}
	_vs_p=$(vm_problems)
	[ -z "$_vs_p" ] || die "$(printf '%s\n' "$_vs_p" | awk 'NR > 1 { printf "; " } { printf "%s", $0 }')"
	if vm_ours "$_vs_old" "$_vs_g"; then
		die "guest $_vs_g is already running (qemu pid $_vs_old, $_vs_b.pid); stop it with vm-stop or vm-reap first"
	fi
	# Right before QEMU opens the disk read-write, the physical host's guard
	# once more (exit 3, as make-fs): a disk mounted here, held by another
	# device or carrying a foreign signature without consent is never given
	# to a guest, whatever the guest's own guard would say of it.
	guard "$_vs_disk" "$_vs_consent" "$_vs_allowed"
	run mkdir -p "$VM_DIR"
	run chmod 0700 "$VM_DIR"
	vm_files_rm "$VM_DIR" "$_vs_g"
	rm -f "$_vs_b.console"
	run qemu-img create -q -f qcow2 -F "$_vs_fmt" -b "$_vs_img" "$_vs_b.qcow2"
	run mkfifo -m 0600 "$_vs_b.mon.in" "$_vs_b.mon.out"
	case $_vs_accel in
	kvm) _vs_cpu=host ;;
	*) _vs_cpu=max ;;
	esac
	# The data disk: the bus's device, named fsmxdata (its serial), after the
	# boot disk so that on virtio-blk the guest sees vda (boot), vdb (data).
	case $_vs_bus in
	virtio-blk) set -- -device virtio-blk-pci,drive=data,serial=fsmxdata ;;
	virtio-scsi) set -- -device virtio-scsi-pci,id=scsi0 -device scsi-hd,drive=data,bus=scsi0.0,serial=fsmxdata ;;
	nvme) set -- -device nvme,drive=data,serial=fsmxdata ;;
	sata) set -- -device ide-hd,drive=data,bus=ide.0,serial=fsmxdata ;;
	esac
	set -- qemu-system-x86_64 -name "fsmx-$_vs_g" -machine "q35,accel=$_vs_accel" -cpu "$_vs_cpu" \
		-smp "$_vs_cpus" -m "$_vs_mem" -nodefaults -no-user-config -display none \
		-serial "file:$_vs_b.console" \
		-chardev "pipe,id=mon,path=$_vs_b.mon" -mon chardev=mon,mode=readline \
		-drive "file=$_vs_b.qcow2,format=qcow2,if=none,id=boot" -device virtio-blk-pci,drive=boot \
		-drive "file=$_vs_disk,format=raw,if=none,id=data,cache=$_vs_cache,aio=$_vs_aio" "$@" \
		-netdev "user,id=net0,restrict=on,hostfwd=tcp:127.0.0.1:$_vs_port-:22" -device virtio-net-pci,netdev=net0
	if [ -n "$_vs_kernel" ]; then
		set -- "$@" -kernel "$_vs_kernel"
		[ -z "$_vs_initrd" ] || set -- "$@" -initrd "$_vs_initrd"
		[ -z "$_vs_append" ] || set -- "$@" -append "$_vs_append"
	fi
	set -- "$@" -daemonize -pidfile "$_vs_b.pid"
	# NAME.cmdline: every word shell-quoted (it can be run again); qemu_cmdline=
	# below: the words joined by spaces, as ps shows them (only -append's value
	# has spaces).
	quote_all "$@" >"$_vs_b.cmdline"
	printf '\n' >>"$_vs_b.cmdline"
	_vs_line=$*
	if ! try "$@" </dev/null; then
		vm_files_rm "$VM_DIR" "$_vs_g"
		die "qemu-system-x86_64 failed to start guest $_vs_g (see above; console: $_vs_b.console)"
	fi
	_vs_pid=$(vm_pid "$VM_DIR" "$_vs_g")
	vm_ours "$_vs_pid" "$_vs_g" || die "qemu-system-x86_64 started but $_vs_b.pid names no running guest $_vs_g"
	kv pid "$_vs_pid"
	kv qemu "$(qemu-system-x86_64 --version 2>/dev/null | sed -n 1p)"
	kv qemu_cmdline "$_vs_line"
	kv host_cpu "$(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo 2>/dev/null | sed -n 1p)"
}

verb_vm_stop() {
	vm_dir ${1+"$@"}
	_vt_g=$(need guest ${1+"$@"})
	vm_word guest "$_vt_g"
	_vt_t=$(need timeout ${1+"$@"})
	vm_uint timeout "$_vt_t" 1 3600
	_vt_b=$VM_DIR/$_vt_g
	_vt_pid=$(vm_pid "$VM_DIR" "$_vt_g")
	if ! vm_ours "$_vt_pid" "$_vt_g"; then
		_vt_how=not-running
	else
		# ACPI power button through the monitor; the fifo is open in qemu
		# (O_RDWR), but a qemu gone meanwhile leaves no reader: bounded.
		# shellcheck disable=SC2016 # $1 is the inner sh's
		if [ -p "$_vt_b.mon.in" ] &&
			timeout 5 sh -c 'printf "system_powerdown\n" >"$1"' fsmx-vm-stop "$_vt_b.mon.in" 2>/dev/null &&
			vm_gone "$_vt_pid" "$_vt_g" "$_vt_t"; then
			_vt_how=acpi
		else
			kill -TERM "$_vt_pid" 2>/dev/null || true
			if vm_gone "$_vt_pid" "$_vt_g" 10; then _vt_how=term; else
				kill -KILL "$_vt_pid" 2>/dev/null || true
				vm_gone "$_vt_pid" "$_vt_g" 10 || die "qemu pid $_vt_pid of guest $_vt_g survived SIGKILL"
				_vt_how='kill'
			fi
		fi
	fi
	vm_files_rm "$VM_DIR" "$_vt_g"
	kv stopped "$_vt_how"
}

# vm_reap DIR: every guest left in DIR killed (only a qemu-system-x86_64 of
# that guest's pid file), its files removed, consoles too; prints the names.
vm_reap() {
	_vr_names=
	for _vr_f in "$1"/*.pid "$1"/*.qcow2 "$1"/*.console "$1"/*.mon.in "$1"/*.mon.out "$1"/*.cmdline; do
		[ -e "$_vr_f" ] || [ -p "$_vr_f" ] || continue
		_vr_n=${_vr_f##*/}
		_vr_n=${_vr_n%.pid}
		_vr_n=${_vr_n%.qcow2}
		_vr_n=${_vr_n%.console}
		_vr_n=${_vr_n%.mon.in}
		_vr_n=${_vr_n%.mon.out}
		_vr_n=${_vr_n%.cmdline}
		case " $_vr_names " in *" $_vr_n "*) continue ;; esac
		# A file fsmatrix did not name: left alone.
		case $_vr_n in '' | [!A-Za-z0-9_]* | *[!A-Za-z0-9_.-]*) continue ;; esac
		_vr_names="$_vr_names${_vr_names:+ }$_vr_n"
	done
	for _vr_n in $_vr_names; do
		_vr_pid=$(vm_pid "$1" "$_vr_n")
		if vm_ours "$_vr_pid" "$_vr_n"; then
			log "killing guest $_vr_n (qemu pid $_vr_pid)"
			kill -TERM "$_vr_pid" 2>/dev/null || true
			if ! vm_gone "$_vr_pid" "$_vr_n" 10; then
				kill -KILL "$_vr_pid" 2>/dev/null || true
				vm_gone "$_vr_pid" "$_vr_n" 10 || die "qemu pid $_vr_pid of guest $_vr_n survived SIGKILL"
			fi
		fi
		vm_files_rm "$1" "$_vr_n"
		rm -f "$1/$_vr_n.console"
	done
	printf '%s' "${_vr_names:-none}"
}

verb_vm_reap() {
	vm_dir ${1+"$@"}
	if [ -d "$VM_DIR" ] && [ ! -L "$VM_DIR" ]; then
		_vr_out=$(vm_reap "$VM_DIR")
	else
		_vr_out=none
	fi
	kv reaped "$_vr_out"
}

usage() {
	log "usage: $(basename "$0") VERB name=value ...
verbs: facts preflight pg-check-settings make-fs mount pg-init pg-start load run sizes drop-caches pg-stop teardown cat vm-check vm-start vm-stop vm-reap
see docs/remote-scripts.md"
}

fsmx_main() {
	if [ "$#" -lt 1 ]; then
		usage
		exit 2
	fi
	FSMX_VERB=$1
	shift
	check_args ${1+"$@"}
	case $FSMX_VERB in
	facts) verb_facts ${1+"$@"} ;;
	preflight) verb_preflight ${1+"$@"} ;;
	make-fs) verb_make_fs ${1+"$@"} ;;
	mount) verb_mount ${1+"$@"} ;;
	pg-init) verb_pg_init ${1+"$@"} ;;
	pg-start) verb_pg_start ${1+"$@"} ;;
	pg-stop) verb_pg_stop ${1+"$@"} ;;
	pg-check-settings) verb_pg_check_settings ${1+"$@"} ;;
	load) verb_load ${1+"$@"} ;;
	run) verb_run ${1+"$@"} ;;
	sizes) verb_sizes ${1+"$@"} ;;
	drop-caches) verb_drop_caches ${1+"$@"} ;;
	teardown) verb_teardown ${1+"$@"} ;;
	cat) verb_cat ${1+"$@"} ;;
	vm-check) verb_vm_check ${1+"$@"} ;;
	vm-start) verb_vm_start ${1+"$@"} ;;
	vm-stop) verb_vm_stop ${1+"$@"} ;;
	vm-reap) verb_vm_reap ${1+"$@"} ;;
	-h | --help | help)
		usage
		exit 0
		;;
	*)
		usage
		usage_die "unknown verb '$FSMX_VERB'"
		;;
	esac
}

