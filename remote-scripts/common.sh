#!/bin/sh
# shellcheck shell=dash
# common.sh: helpers shared by linux.sh, freebsd.sh and dragonfly.sh.
# Sourced, never run.  POSIX sh only: no pipefail, no arrays, no eval, no echo.
# The verb contract is in README.md next to this file.

# Every name a verb may receive.  A word that is not `name=value` with one of
# these names is a usage error: a typo must not silently become a default.
FSMX_ARG_NAMES="dev allowed consent ident fs mkfs_opt zfs_prop pool_prop pool mount_opt mnt pg_bin pg_user port pg_set cell out db scale init_opt sql builtin script clients jobs duration transactions progress pgbench_opt work path"

# The label fsmatrix writes on every filesystem it makes (pools: name prefix).
# shellcheck disable=SC2034 # used by the per-OS scripts
FSMX_LABEL=fsmx

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
# refuse root; root's home is not readable by USER).  runuser on Linux, su
# elsewhere (the command line is then quoted for USER's sh).
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
		(cd / && su -m "$_ap_user" -c "$(quote_all ${1+"$@"})")
	fi
}

# first_mib_zero DEV: true when the first MiB of DEV is all zero bytes.
first_mib_zero() {
	_fz=$(dd if="$1" bs=65536 count=16 2>/dev/null | tr -d '\000' | wc -c)
	[ "$_fz" -eq 0 ]
}

# zero_ends DEV SIZE_BYTES: zero the first and the last MiB (ZFS keeps two of
# its four labels at the end of the device).
zero_ends() {
	run dd if=/dev/zero of="$1" bs=65536 count=16 conv=notrunc
	if [ "$2" -gt 2097152 ]; then
		run dd if=/dev/zero of="$1" bs=512 seek="$((($2 - 1048576) / 512))" count=2048 conv=notrunc
	fi
	sync
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
	_rs_t0=$(now_ms)
	_rs_e0=$(date +%s)
	if ${1+"$@"} >"$_rs_out/stdout" 2>"$_rs_out/stderr" </dev/null; then
		_rs_rc=0
	else
		_rs_rc=$?
	fi
	_rs_t1=$(now_ms)
	_rs_e1=$(date +%s)
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

# write_pg_conf FILE PORT SOCKDIR ARGS...: fsmatrix's own settings file:
# listen on 127.0.0.1 only, the cell's port and socket, then every pg_set.
write_pg_conf() {
	_wc_file=$1
	_wc_port=$2
	_wc_sock=$3
	shift 3
	{
		printf '# written by fsmatrix: rewritten at every pg-init\n'
		printf "listen_addresses = '127.0.0.1'\n"
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
	} >"$_wc_file.tmp"
	mv -f "$_wc_file.tmp" "$_wc_file"
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
	[ -f "$_vc_path" ] || die "cat $_vc_path: no such file"
	cat "$_vc_path"
}
