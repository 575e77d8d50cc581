#!/bin/bash
# The local lab: N throwaway Linux hosts on this machine (see docs/lab.md).
#
#   lab.sh up     DIR HOSTS DISK_SIZE INSTALL(0|1) [OSES [BASTION(0|1) [GUESTS]]]
#   lab.sh down   DIR
#   lab.sh status DIR
#
# Each host labI is:
#   - a network namespace fsmx-labI with eth0 = 10.203.0.(10+I)/24, joined by a veth
#     (fsmx-vI) to the bridge fsmx-br0 = 10.203.0.1/24 in the root namespace;
#   - a persistent mount + uts + ipc + pid namespace held by a small init (PID 1 of the
#     host), with private tmpfs on /tmp /var/tmp /mnt /run/postgresql /run/zfs /run/lock
#     /etc/zfs /run/sshd /run/fsmx-standin /run/fsmatrix, entered with nsenter;
#   - an sshd (own host key, key auth for root only) and a zfs-fuse daemon inside it;
#   - a sparse file under DIR + a loop device as its spare disk;
#   - for a stand-in host (OSES, a comma list, host i gets the i-th, the last repeats):
#     a BSD userland view built by standin/setup.sh inside its mount namespace (see
#     docs/standin-hosts.md); the stand-in files come from the folder named by
#     FSMATRIX_LAB_STANDIN (fsmatrix writes them there).
# With BASTION=1 (`fsmatrix lab up --bastion`), host 1 is a bastion: it keeps eth0 =
# 10.203.0.11 and gets eth1 = 10.203.1.1/24 (veth fsmx-w1) on a second bridge fsmx-br1,
# which has no address in the root namespace; hosts 2..N sit only on fsmx-br1 with
# 10.203.1.(10+I).  The bastion does not forward IP, so the inner hosts are reached only
# through its sshd (direct-tcpip, OpenSSH ProxyJump); the inventory says so with
# proxy_jump = "root@10.203.0.11".  The bastion's sshd listens on port 22 and on
# BASTION_ALT_PORT (2222) with the same host key; DIR/known_hosts lists it under port 22
# only (a test reaching it on 2222 writes a known_hosts file of its own for that hop).
# With GUESTS=N (`fsmatrix lab up --guests N`), hosts 1..N (Linux) each get a guest: see
# "guests" below and docs/lab.md.
# Every resource is recorded in DIR before or right after it is made, and `down` only
# removes what DIR records (or what is provably ours: loop devices backed by DIR's files).
#
# Test hook (documented in docs/lab.md): FSMATRIX_LAB_LOOP_CONTROL overrides the path
# checked for loop device support (default /dev/loop-control), so a test can simulate a
# machine without loop devices.
set -euo pipefail
shopt -s nullglob

readonly BRIDGE=fsmx-br0
readonly NET=10.203.0
# The bastion's inner network (BASTION=1): a bridge with no address in the root namespace.
readonly INNER_BRIDGE=fsmx-br1
readonly INNER_NET=10.203.1
readonly BASTION_ALT_PORT=2222
readonly LOCK=/run/lock/fsmatrix-lab.lock
readonly LOOP_CONTROL="${FSMATRIX_LAB_LOOP_CONTROL:-/dev/loop-control}"
# Folders each host gets its own tmpfs on; DIR must not live under one of them.
readonly PRIVATE_DIRS="/tmp /var/tmp /mnt /run/postgresql /run/zfs /run/lock /etc/zfs /run/sshd /run/fsmx-standin /run/fsmatrix"
# The BSD name of a stand-in's spare disk (the first SATA disk after the system's).
bsd_disk() {
	case $1 in
	freebsd) printf 'ada1' ;;
	# DragonFly's CAM SCSI disk (ahci/virtio-scsi attach as da; vbd is virtio-blk).
	dragonfly) printf 'da1' ;;
	*) return 1 ;;
	esac
}
# OS of host I from the comma list OSES (the last one repeats).
os_of() {
	local i=$1 oses=$2 list
	IFS=, read -r -a list <<<"$oses"
	if [ "$i" -le "${#list[@]}" ]; then printf '%s' "${list[$((i - 1))]}"; else printf '%s' "${list[-1]}"; fi
}

log() { printf '%s\n' "$*" >&2; }
die() {
	# $1 exit code, rest: a sentence.
	local code=$1
	shift
	log "fsmatrix lab: $*"
	exit "$code"
}
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# --- checks ------------------------------------------------------------------------------

need_root() {
	[ "$(id -u)" -eq 0 ] ||
		die 2 "the lab needs root (it creates network namespaces, loop devices and mounts); run it as root, e.g. with sudo"
}

need_linux() {
	[ "$(uname -s)" = Linux ] || die 2 "the lab needs Linux (namespaces and loop devices); this is $(uname -s)"
}

need_loop() {
	[ -e "$LOOP_CONTROL" ] ||
		die 2 "this machine has no loop device support ($LOOP_CONTROL is missing); load the loop module (modprobe loop) or run the lab on a machine or container that allows loop devices"
	[ -e /dev/fuse ] ||
		die 2 "this machine has no FUSE support (/dev/fuse is missing), which zfs-fuse needs; load the fuse module (modprobe fuse)"
}

pg_bin_dir() {
	# The highest installed PostgreSQL major version with initdb and pgbench.
	local d
	for d in /usr/lib/postgresql/*/bin; do
		[ -x "$d/initdb" ] && [ -x "$d/pgbench" ] && printf '%s\n' "$d"
	done | sort -V | tail -n 1
}

# Prints the Debian packages that are missing, one per line.
missing_packages() {
	local pair cmd pkg
	for pair in /usr/sbin/sshd:openssh-server ssh:openssh-client ssh-keygen:openssh-client \
		mkfs.ext4:e2fsprogs mkfs.xfs:xfsprogs mkfs.btrfs:btrfs-progs \
		zfs-fuse:zfs-fuse zpool:zfs-fuse ip:iproute2 nsenter:util-linux unshare:util-linux \
		runuser:util-linux flock:util-linux losetup:mount sudo:sudo doas:doas; do
		cmd=${pair%%:*}
		pkg=${pair#*:}
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin command -v "$cmd" >/dev/null 2>&1 ||
			printf '%s\n' "$pkg"
	done
	[ -n "$(pg_bin_dir)" ] || printf '%s\n' postgresql
	# Guests: qemu (TCG) and the image build; only when asked for.
	if [ "${GUESTS:-0}" -gt 0 ]; then
		for pair in qemu-system-x86_64:qemu-system-x86 qemu-img:qemu-utils debootstrap:debootstrap mke2fs:e2fsprogs; do
			cmd=${pair%%:*}
			pkg=${pair#*:}
			PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin command -v "$cmd" >/dev/null 2>&1 ||
				printf '%s\n' "$pkg"
		done
	fi
	# A BSD stand-in's root logs in with tcsh (csh was root's shell on FreeBSD before 14;
	# DragonFly's root has /bin/csh, which is tcsh).
	case ",${OSES:-linux}," in
	*,freebsd,* | *,dragonfly,*) [ -x /usr/bin/tcsh ] || printf '%s\n' tcsh ;;
	esac
	return 0
}

install_packages() {
	local pkgs=("$@") t0
	t0=$(now)
	# Debian's postgresql creates and starts a "main" cluster on install; the lab hosts
	# run their own clusters on their devices, so ask postgresql-common not to.
	if printf '%s\n' "${pkgs[@]}" | grep -qx postgresql; then
		mkdir -p /etc/postgresql-common/createcluster.d
		printf '%s\n' "# Written by fsmatrix lab up --install: the lab hosts run their own clusters." \
			"create_main_cluster = false" >/etc/postgresql-common/createcluster.d/fsmatrix-lab.conf
	fi
	log "installing: ${pkgs[*]}"
	# tests/run.sh sets FSMATRIX_LAB_APT_UPDATED=1 when it has just run apt-get update.
	if [ "${FSMATRIX_LAB_APT_UPDATED:-0}" != 1 ]; then
		DEBIAN_FRONTEND=noninteractive apt-get update -q >&2 ||
			die 1 "apt-get update failed (see above); check the machine's package sources"
	fi
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${pkgs[@]}" >&2 ||
		die 1 "apt-get install ${pkgs[*]} failed (see above)"
	log "installed packages in $(elapsed "$t0") s"
}

check_packages() {
	local install=$1 missing
	missing=$(missing_packages | sort -u | tr '\n' ' ')
	missing=${missing% }
	[ -z "$missing" ] && return 0
	if [ "$install" = 1 ]; then
		# shellcheck disable=SC2086 # word splitting of the package list is meant
		install_packages $missing
		missing=$(missing_packages | sort -u | tr '\n' ' ')
		missing=${missing% }
		if [ -n "$missing" ]; then
			# A second round for what the first displaced: Debian 12's qemu-system-x86
			# removes a backported qemu-utils (10.x) that was there, and qemu-img with it.
			log "installed packages displaced others that are now missing: $missing"
			# shellcheck disable=SC2086 # word splitting of the package list is meant
			FSMATRIX_LAB_APT_UPDATED=1 install_packages $missing
			missing=$(missing_packages | sort -u | tr '\n' ' ')
			missing=${missing% }
		fi
		[ -z "$missing" ] || die 2 "packages still missing after installation: $missing"
	else
		die 2 "the lab needs packages that are missing: $missing; install them with \`apt-get install $missing\` or run \`fsmatrix lab up --install\`"
	fi
}

check_dir() {
	local dir=$1 p
	case "$dir" in
	/*) ;;
	*) die 2 "the lab's state dir must be an absolute path, not '$dir'" ;;
	esac
	for p in $PRIVATE_DIRS; do
		case "$dir/" in
		"$p"/*) die 2 "the lab's state dir '$dir' is under $p, which every lab host replaces with a private tmpfs; choose a folder elsewhere, e.g. /var/lib/fsmatrix/lab" ;;
		esac
	done
}

# --- up ----------------------------------------------------------------------------------

# Records a line in DIR/created (what `down` may remove), before the thing is made.
record() { printf '%s\n' "$*" >>"$DIR/created"; }

# A login user with passwordless sudo on every host, for inventories with
# become = "sudo".  Only the host sees it: its /etc/passwd, group, shadow,
# hosts and sudoers.d are private copies (host_etc) bind-mounted by its init.
readonly SUDO_USER_NAME=fsmx
readonly SUDO_USER_ID=64123
# A second login user with passwordless doas(1) (Debian's `doas`, OpenDoas) and no
# sudo, for inventories with become = "doas"; fsmx has no doas line, so a test can
# see a refused doas.  Its doas.conf is the host's private copy (host_etc), bind-
# mounted over /etc/doas.conf (OpenDoas's path: doas.conf.5 FILES) by the init.
readonly DOAS_USER_NAME=fsmxdoas
readonly DOAS_USER_ID=64124

# The init of a host: PID 1 of its pid namespace, owner of its mount/uts/ipc namespaces.
# Arguments: host name, its etc folder (host_etc).  It makes the private mounts, sets the hostname, then reaps
# children until it is told to stop (TERM), which ends every process of the host.
# shellcheck disable=SC2016 # expanded by the init's own bash
INIT_SCRIPT='
set -eu
host=$1 etc=$2
# Accounts of this host: the machine ones plus a sudo user (see host_etc).
for f in passwd group shadow hosts sudoers.d doas.conf; do
	mount --bind "$etc/$f" "/etc/$f"
done
for d in '"$PRIVATE_DIRS"'; do
	if [ "$d" = /etc/zfs ]; then
		# Keep the packaged zfs-fuse config (zfsrc) in the private copy.
		mkdir /tmp/.fsmx-etc-zfs
		cp -a /etc/zfs/. /tmp/.fsmx-etc-zfs/
		mount -t tmpfs -o mode=0755,size=64m "fsmx-$host" /etc/zfs
		cp -a /tmp/.fsmx-etc-zfs/. /etc/zfs/
		rm -rf /tmp/.fsmx-etc-zfs
	else
		# /var/tmp holds work_dir, and under it the overlay of a guest (vm/NAME.qcow2).
		size=64m
		[ "$d" != /var/tmp ] || size=1g
		mount -t tmpfs -o "mode=0755,size=$size" "fsmx-$host" "$d"
	fi
done
chmod 1777 /tmp /var/tmp /run/lock
# The BSD host lock folder (/var/run/fsmatrix): root'"'"'s own, as mkdir under umask 077 makes it.
chmod 0700 /run/fsmatrix
install -d -m 0755 -o '"$SUDO_USER_NAME"' -g '"$SUDO_USER_NAME"' /var/tmp/'"$SUDO_USER_NAME"'
install -d -m 0755 -o '"$DOAS_USER_NAME"' -g '"$DOAS_USER_NAME"' /var/tmp/'"$DOAS_USER_NAME"'
chown postgres:postgres /run/postgresql 2>/dev/null || true
chmod 2775 /run/postgresql
mkdir -p /run/lock/zfs
hostname "$host"
trap "exit 0" TERM INT
while :; do
	sleep 3600 &
	wait $! || true
done
'

# Is host I behind the bastion (BASTION=1, I > 1)?  DIR/bastion records the mode for
# down and status.
inner() { [ "$1" -gt 1 ] && [ -e "$DIR/bastion" ]; }
host_ip() {
	if inner "$1"; then printf '%s.%d' "$INNER_NET" $((10 + $1)); else printf '%s.%d' "$NET" $((10 + $1)); fi
}
bastion_ip() { host_ip 1; }

# nsenter into host I: all its namespaces.
in_host() {
	local i=$1
	shift
	local pid
	pid=$(cat "$DIR/hosts/lab$i/init.pid")
	# fd 9 (the lab lock) must not live on in daemons.
	nsenter -t "$pid" -n -m -u -i -p -- "$@" 9>&-
}

wait_for() {
	# wait_for SECONDS DESCRIPTION COMMAND...: poll every 0.1 s.
	local secs=$1 what=$2 n
	shift 2
	for ((n = 0; n < secs * 10; n++)); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	log "fsmatrix lab: timed out after ${secs} s waiting for $what"
	return 1
}

# /proc files read as size 0: test the content.
has_child() { [ -n "$(cat "/proc/$1/task/$1/children" 2>/dev/null)" ]; }

init_ready() {
	# The init sets its hostname right after its private mounts.
	local pid=$1 host=$2
	awk -v h="fsmx-$host" '$1 == h && $2 == "/run/sshd" { f = 1 } END { exit !f }' "/proc/$pid/mounts" &&
		[ "$(nsenter -t "$pid" -u -- hostname)" = "$host" ]
}

up_host() {
	local i=$1 disk_size=$2 os=$3
	local host="lab$i" ns="fsmx-lab$i" veth="fsmx-v$i" ip hd outer inner loop
	ip=$(host_ip "$i")
	hd="$DIR/hosts/$host"
	mkdir -p "$hd"

	# Network: namespace, veth into the bridge (the inner one behind a bastion).
	local bridge=$BRIDGE
	inner "$i" && bridge=$INNER_BRIDGE
	record netns "$ns"
	ip netns add "$ns"
	record link "$veth"
	ip link add "$veth" type veth peer name eth0 netns "$ns"
	ip link set "$veth" master "$bridge" up
	ip -n "$ns" link set lo up
	ip -n "$ns" addr add "$ip/24" dev eth0
	ip -n "$ns" link set eth0 up
	if [ "$i" = 1 ] && [ -e "$DIR/bastion" ]; then
		# The bastion's leg into the inner network; a new namespace inherits the root
		# namespace's ip_forward, so forwarding is switched off explicitly: only sshd's
		# direct-tcpip reaches the inner hosts.
		record link fsmx-w1
		ip link add fsmx-w1 type veth peer name eth1 netns "$ns"
		ip link set fsmx-w1 master "$INNER_BRIDGE" up
		ip -n "$ns" addr add "$INNER_NET.1/24" dev eth1
		ip -n "$ns" link set eth1 up
		ip netns exec "$ns" sysctl -q -w net.ipv4.ip_forward=0 net.ipv4.conf.all.forwarding=0 >/dev/null
		[ "$(ip netns exec "$ns" sysctl -n net.ipv4.ip_forward)" = 0 ] ||
			die 1 "failed to switch IP forwarding off in the bastion $host"
	fi

	# Disk: a sparse file and a loop device.
	truncate -s "$disk_size" "$hd/disk.img"
	loop=$(losetup --find --show "$hd/disk.img")
	printf '%s\n' "$loop" >"$hd/device"
	printf '%s\n' "$os" >"$hd/os"

	# Host: mount/uts/ipc/pid namespaces held by the init.
	host_etc "$host" "$hd/etc" "$os"
	setsid ip netns exec "$ns" unshare --mount --uts --ipc --pid --fork --mount-proc \
		--propagation private bash -c "$INIT_SCRIPT" fsmx-init "$host" "$hd/etc" \
		</dev/null >"$hd/init.log" 2>&1 9>&- &
	outer=$!
	printf '%s\n' "$outer" >"$hd/unshare.pid"
	wait_for 10 "the init of $host" has_child "$outer" ||
		die 1 "failed to start the init of $host (see $hd/init.log)"
	inner=$(tr -d ' \n' <"/proc/$outer/task/$outer/children")
	is_lab_init "$inner" || die 1 "failed to find the init of $host (child of $outer: '$inner')"
	printf '%s\n' "$inner" >"$hd/init.pid"
	wait_for 10 "the init of $host to mount its private folders" init_ready "$inner" "$host" ||
		die 1 "failed to start the init of $host (see $hd/init.log)"

	# sshd: its own host key and config; the lab client key for root.  A bastion also
	# listens on port $BASTION_ALT_PORT, so a jump host reached on a port of its own (an
	# ssh config's `Port`) is tested for real (tests/lab_bastion.rs).
	ssh-keygen -q -t ed25519 -N '' -C "$host" -f "$hd/ssh_host_ed25519_key"
	local listen="ListenAddress $ip:22"
	[ "$i" = 1 ] && [ -e "$DIR/bastion" ] && listen="$listen
ListenAddress $ip:$BASTION_ALT_PORT"
	cat >"$hd/sshd_config" <<EOF
# Written by fsmatrix lab up: sshd of lab host $host.
$listen
HostKey $hd/ssh_host_ed25519_key
PidFile /run/sshd/sshd.pid
AuthorizedKeysFile $DIR/authorized_keys
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PrintMotd no
AcceptEnv LANG LC_*
Subsystem sftp /usr/lib/openssh/sftp-server
EOF
	in_host "$i" /usr/sbin/sshd -f "$hd/sshd_config" -E "$hd/sshd.log"
	printf '%s %s\n' "$ip" "$(cut -d' ' -f1,2 "$hd/ssh_host_ed25519_key.pub")" >>"$DIR/known_hosts"

	# zfs-fuse: one daemon per host, its socket/lock/cache private to the host.
	in_host "$i" /usr/sbin/zfs-fuse --pidfile /run/zfs/zfs-fuse.pid

	# A stand-in: its BSD view, built inside its mount namespace (the files reach it
	# as a tar stream: the host's /tmp is its own).
	if [ "$os" != linux ]; then
		local bsd
		bsd=$(bsd_disk "$os") || die 2 "no stand-in for '$os'"
		# The BSD name is what the inventory lists for this host.
		printf '/dev/%s\n' "$bsd" >"$hd/device.bsd"
		# shellcheck disable=SC2016 # expanded by the host's bash
		tar -C "$STANDIN" -cf - . | in_host "$i" bash -c '
			set -e
			d=$(mktemp -d /tmp/fsmx-standin.XXXXXX)
			tar -C "$d" -xf -
			bash "$d/setup.sh" "$1" "$2" "$3" "$d"
			rm -rf "$d"' fsmx-standin "$os" "$loop" "$bsd" ||
			die 1 "failed to build the $os stand-in $host (see above)"
	fi
}

host_etc() {
	local host=$1 etc=$2 os=$3
	mkdir -p "$etc/sudoers.d"
	cp -p /etc/passwd /etc/group /etc/shadow "$etc/"
	if [ "$os" = freebsd ] || [ "$os" = dragonfly ]; then
		# root's login shell: csh-family, as on FreeBSD before 14 and on DragonFly;
		# postgres's /bin/sh, as the package makes it (pw usershow: /var/db/postgres:/bin/sh).
		awk -F: -v OFS=: '$1 == "root" { $7 = "/bin/tcsh" } $1 == "postgres" { $7 = "/bin/sh" } { print }' \
			/etc/passwd >"$etc/passwd"
	fi
	if ! grep -q "^$SUDO_USER_NAME:" "$etc/passwd"; then
		printf '%s:x:%d:%d:fsmatrix lab sudo user:/var/tmp/%s:/bin/sh\n' \
			"$SUDO_USER_NAME" "$SUDO_USER_ID" "$SUDO_USER_ID" "$SUDO_USER_NAME" >>"$etc/passwd"
		printf '%s:x:%d:\n' "$SUDO_USER_NAME" "$SUDO_USER_ID" >>"$etc/group"
		# '*': no password, so only the lab key logs in; not '!' (locked).
		printf '%s:*:20000:0:99999:7:::\n' "$SUDO_USER_NAME" >>"$etc/shadow"
	fi
	if ! grep -q "^$DOAS_USER_NAME:" "$etc/passwd"; then
		printf '%s:x:%d:%d:fsmatrix lab doas user:/var/tmp/%s:/bin/sh\n' \
			"$DOAS_USER_NAME" "$DOAS_USER_ID" "$DOAS_USER_ID" "$DOAS_USER_NAME" >>"$etc/passwd"
		printf '%s:x:%d:\n' "$DOAS_USER_NAME" "$DOAS_USER_ID" >>"$etc/group"
		printf '%s:*:20000:0:99999:7:::\n' "$DOAS_USER_NAME" >>"$etc/shadow"
	fi
	# sudo looks the host name up; without it in /etc/hosts every call may wait on DNS.
	{
		cat /etc/hosts
		printf '127.0.1.1 %s\n' "$host"
	} >"$etc/hosts"
	printf '%s ALL=(ALL:ALL) NOPASSWD: ALL\n' "$SUDO_USER_NAME" >"$etc/sudoers.d/$SUDO_USER_NAME"
	chmod 0440 "$etc/sudoers.d/$SUDO_USER_NAME"
	chmod 0755 "$etc/sudoers.d"
	# doas.conf(5): `permit nopass USER as root`.  OpenDoas 6.8.2 refuses a config
	# that "is not owned by root" or "is writable by group or other" (doas.c
	# parseconfig; the strings of Debian 12's /usr/bin/doas), so root's, 0600.
	printf 'permit nopass %s as root\n' "$DOAS_USER_NAME" >"$etc/doas.conf"
	chown root:root "$etc/doas.conf"
	chmod 0600 "$etc/doas.conf"
}

# --- guests (--guests N) ------------------------------------------------------------------
#
# A guest of lab host I (I = 1..GUESTS, a Linux host) is a Debian 12 system that the
# orchestrator boots with qemu-system-x86_64 -accel tcg inside labI (the remote verbs
# vm-start / vm-stop / vm-reap of remote-scripts/common.sh), with labI's loop device as
# its data disk.  `lab up` does not boot it: it builds the image, gives each guest its
# own copy with its own SSH host key and the lab's client key, and writes the guest's
# [[host]] entry (guest_of = "labI") to the inventory.  The root built by debootstrap,
# its kernel and initrd are cached in DIR/guest-cache (kept by `lab down`: a second
# `lab up` does not build again; `rm -rf DIR/guest-cache` forces a new build); the
# per-lab files (images with this lab's keys) are in DIR/guest and go with `lab down`.
readonly GUEST_SUITE=bookworm
readonly GUEST_MIRROR=http://deb.debian.org/debian
readonly GUEST_LABEL=fsmx-guest
readonly GUEST_IMAGE_SIZE=3G
# First stage (debootstrap): a bootable system with sshd and what linux.sh's facts,
# check and verbs run (blkid wipefs blockdev runuser flock: util-linux; losetup: mount;
# free ps: procps; systemd-detect-virt: systemd; mkfs.ext4: e2fsprogs; mkfs.xfs).
readonly GUEST_BASE_PKGS=systemd-sysv,udev,dbus,openssh-server,linux-image-amd64,initramfs-tools,e2fsprogs,xfsprogs,util-linux,mount,procps,kmod,iproute2,ca-certificates
# Second stage (apt-get in the chroot, after policy-rc.d and createcluster.d are in
# place, so no server starts in the chroot and no "main" cluster is made: fsmatrix
# makes its own clusters on the data disk).
readonly GUEST_PG_PKGS="postgresql-15 postgresql-client-15"
# The guest's sshd port on its host's loopback: 10021 + I.
guest_port() { printf '%d' $((10021 + $1)); }

# What the cached root was built from: a cache built from another recipe is built again.
# Bump the number when build_guest_base changes what it makes.
guest_recipe() { printf '3 %s %s %s %s' "$GUEST_SUITE" "$GUEST_MIRROR" "$GUEST_BASE_PKGS" "$GUEST_PG_PKGS"; }

# The cached root: built once, reused while DIR/guest-cache/recipe is this recipe.
build_guest_base() {
	local c="$DIR/guest-cache" t0 r
	if [ -e "$c/built" ] && [ -d "$c/root" ] && [ -s "$c/vmlinuz" ] && [ -s "$c/initrd.img" ] &&
		[ "$(cat "$c/recipe" 2>/dev/null)" = "$(guest_recipe)" ]; then
		log "guest image: using the cached root in $c (built $(cat "$c/built"))"
		return 0
	fi
	t0=$(now)
	rm -rf "$c"
	mkdir -p "$c"
	r="$c/root"
	log "guest image: debootstrap $GUEST_SUITE from $GUEST_MIRROR into $r (once; cached)"
	debootstrap --variant=minbase --include="$GUEST_BASE_PKGS" "$GUEST_SUITE" "$r" "$GUEST_MIRROR" \
		>"$c/debootstrap.log" 2>&1 9>&- ||
		die 1 "debootstrap of the guest root failed (see $c/debootstrap.log, and $r/debootstrap/debootstrap.log if it exists)"
	# No service starts inside the chroot (invoke-rc.d asks policy-rc.d: 101 = refused).
	printf '#!/bin/sh\nexit 101\n' >"$r/usr/sbin/policy-rc.d"
	chmod 0755 "$r/usr/sbin/policy-rc.d"
	mkdir -p "$r/etc/postgresql-common/createcluster.d"
	printf '%s\n' "# Written by fsmatrix lab up: fsmatrix makes its own clusters on the data disk." \
		"create_main_cluster = false" >"$r/etc/postgresql-common/createcluster.d/fsmatrix-lab.conf"
	# shellcheck disable=SC2086 # the package list is words
	DEBIAN_FRONTEND=noninteractive chroot "$r" apt-get install -y -q --no-install-recommends $GUEST_PG_PKGS \
		>>"$c/debootstrap.log" 2>&1 9>&- ||
		die 1 "installing PostgreSQL in the guest root failed (see $c/debootstrap.log)"
	chroot "$r" apt-get clean >/dev/null 2>&1 9>&- || true
	rm -f "$r/usr/sbin/policy-rc.d"
	# The host keys debootstrap's openssh-server made are the same for every guest:
	# gone; each guest's image gets its own (guest_image).
	rm -f "$r"/etc/ssh/ssh_host_*
	# Root file system by label; DHCP on the user-mode NIC (systemd-networkd).
	printf 'LABEL=%s / ext4 errors=remount-ro 0 1\n' "$GUEST_LABEL" >"$r/etc/fstab"
	mkdir -p "$r/etc/systemd/network"
	printf '[Match]\nName=en* eth*\n\n[Network]\nDHCP=ipv4\n' >"$r/etc/systemd/network/10-fsmx.network"
	chroot "$r" systemctl enable systemd-networkd.service ssh.service >/dev/null 2>&1 9>&- ||
		die 1 "enabling systemd-networkd and ssh in the guest root failed"
	# sshd: keys only, root by key only.
	printf '%s\n' "# Written by fsmatrix lab up." "PermitRootLogin prohibit-password" \
		"PasswordAuthentication no" "KbdInteractiveAuthentication no" >"$r/etc/ssh/sshd_config.d/fsmatrix-lab.conf"
	: >"$r/etc/machine-id"
	# Direct kernel boot: the kernel and initrd next to the image.
	cp "$(readlink -f "$r/vmlinuz")" "$c/vmlinuz"
	cp "$(readlink -f "$r/initrd.img")" "$c/initrd.img"
	guest_recipe >"$c/recipe"
	printf '%s (%s s)\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$(elapsed "$t0")" >"$c/built"
	log "guest image: root built in $(elapsed "$t0") s"
}

# The image of the guest of host I: the cached root with this guest's own SSH host key,
# hostname and the lab's client key, as an ext4 file system made from the folder
# (mke2fs -d: nothing mounted).
guest_image() {
	local i=$1 c="$DIR/guest-cache" g="$DIR/guest" name="lab$1-vm" r t0
	r="$c/root"
	t0=$(now)
	mkdir -p "$g"
	rm -f "$g/$name".ssh_host_ed25519_key "$g/$name".ssh_host_ed25519_key.pub
	ssh-keygen -q -t ed25519 -N '' -C "$name" -f "$g/$name.ssh_host_ed25519_key"
	install -m 0600 "$g/$name.ssh_host_ed25519_key" "$r/etc/ssh/ssh_host_ed25519_key"
	install -m 0644 "$g/$name.ssh_host_ed25519_key.pub" "$r/etc/ssh/ssh_host_ed25519_key.pub"
	install -d -m 0700 "$r/root/.ssh"
	install -m 0600 "$DIR/authorized_keys" "$r/root/.ssh/authorized_keys"
	printf '%s\n' "$name" >"$r/etc/hostname"
	rm -f "$g/$name.img"
	mke2fs -q -F -t ext4 -L "$GUEST_LABEL" -d "$r" "$g/$name.img" "$GUEST_IMAGE_SIZE" >/dev/null 9>&- ||
		die 1 "mke2fs of the image of $name failed"
	rm -f "$r/etc/ssh/ssh_host_ed25519_key" "$r/etc/ssh/ssh_host_ed25519_key.pub" "$r/root/.ssh/authorized_keys"
	printf '[127.0.0.1]:%s %s\n' "$(guest_port "$i")" "$(cut -d' ' -f1,2 "$g/$name.ssh_host_ed25519_key.pub")" >>"$DIR/known_hosts"
	log "guest image: $g/$name.img in $(elapsed "$t0") s"
}

# write_inventory N PG_BIN: DIR/inventory.toml, every host and no guest (a sweep over it
# never boots a TCG guest, which takes minutes); with guests also DIR/inventory-guests.toml:
# only the hosts that have a guest, and their guests (tests/lab_guest.rs).
write_inventory() {
	local n=$1 pg_bin=$2
	inventory_text "$n" "$pg_bin" "the local lab's hosts (guests: inventory-guests.toml)" 0 >"$DIR/inventory.toml.tmp"
	mv "$DIR/inventory.toml.tmp" "$DIR/inventory.toml"
	if [ "$GUESTS" -gt 0 ]; then
		inventory_text "$GUESTS" "$pg_bin" "the lab's hosts with a guest, and their guests" 1 >"$DIR/inventory-guests.toml.tmp"
		mv "$DIR/inventory-guests.toml.tmp" "$DIR/inventory-guests.toml"
	fi
}

# inventory_text N PG_BIN WHAT WITH_GUESTS: hosts 1..N and, when WITH_GUESTS is 1, the
# guests of those among them that have one.
inventory_text() {
	local n=$1 pg_bin=$2 what=$3 with_guests=$4 i os
	{
		printf '%s\n' "# Written by \`fsmatrix lab up\` on $(date -u +%Y-%m-%dT%H:%M:%SZ): $what."
		printf '[defaults]\n'
		printf 'user = "root"\n'
		printf 'identity_file = "%s/id_ed25519"\n' "$DIR"
		printf 'known_hosts = "%s/known_hosts"\n' "$DIR"
		printf 'work_dir = "/var/tmp/fsmatrix"\n'
		printf 'os = "linux"\n'
		printf 'platform = "lab"            # network + mount namespace on one machine, loop-device disk\n'
		printf 'pg_bin = "%s"\n' "$pg_bin"
		printf 'pg_user = "postgres"\n'
		printf 'pg_port = 5433\n'
		printf 'tags = ["lab"]\n'
		for ((i = 1; i <= n; i++)); do
			printf '\n[[host]]\n'
			printf 'name = "lab%d"\n' "$i"
			printf 'address = "%s"\n' "$(host_ip "$i")"
			printf 'port = 22\n'
			if inner "$i"; then
				printf '# behind the bastion lab1: reached only through its sshd\n'
				printf 'proxy_jump = "root@%s"\n' "$(bastion_ip)"
			fi
			os=$(cat "$DIR/hosts/lab$i/os")
			if [ "$os" = linux ]; then
				printf 'devices = ["%s"]\n' "$(cat "$DIR/hosts/lab$i/device")"
			else
				printf 'os = "%s"\n' "$os"
				printf '# a stand-in: a Linux lab host dressed as %s (its numbers mean nothing)\n' "$os"
				printf 'pg_bin = "/usr/local/bin"\n'
				printf 'devices = ["%s"]\n' "$(cat "$DIR/hosts/lab$i/device.bsd")"
			fi
		done
		for ((i = 1; with_guests == 1 && i <= GUESTS && i <= n; i++)); do
			printf '\n# A TCG guest of lab%d (docs/lab.md): booted by the sweep, its numbers mean nothing\n' "$i"
			printf '[[host]]\n'
			printf 'name = "lab%d-vm"\n' "$i"
			printf 'guest_of = "lab%d"\n' "$i"
			printf 'os = "linux"\n'
			printf 'platform = "kvm"\n'
			printf 'devices = ["/dev/vdb"]\n'
			printf '[host.vm]\n'
			printf 'image = "%s/guest/lab%d-vm.img"\n' "$DIR" "$i"
			printf 'image_format = "raw"\n'
			printf 'kernel = "%s/guest/vmlinuz"\n' "$DIR"
			printf 'initrd = "%s/guest/initrd.img"\n' "$DIR"
			printf 'cmdline = "root=LABEL=%s ro console=ttyS0"\n' "$GUEST_LABEL"
			printf 'memory_mib = 1024\n'
			printf 'cpus = 1\n'
			printf 'disk_bus = "virtio-blk"\n'
			printf 'cache = "none"\n'
			printf 'accel = "tcg"\n'
			printf 'disk = "%s"\n' "$(cat "$DIR/hosts/lab$i/device")"
			printf 'ssh_port = %s\n' "$(guest_port "$i")"
			printf 'boot_timeout = 300\n'
		done
	}
}

ssh_lab() {
	local ip=$1 opts jump=()
	shift
	opts=(-o BatchMode=yes -o StrictHostKeyChecking=yes -o UserKnownHostsFile="$DIR/known_hosts"
		-o ConnectTimeout=3 -o LogLevel=ERROR -i "$DIR/id_ed25519")
	case "$ip" in
	"$INNER_NET".*)
		# Through the bastion; a ProxyCommand rather than -J, whose hop would not get
		# the options above.
		jump=(-o "ProxyCommand=ssh ${opts[*]} -W %h:%p root@$(bastion_ip)")
		;;
	esac
	# shellcheck disable=SC2029 # the caller's command is meant for the remote shell
	ssh "${opts[@]}" "${jump[@]}" "root@$ip" "$@"
}

up_failed() {
	local rc=$?
	[ "$rc" = 0 ] && return 0
	log "fsmatrix lab: up failed; removing what it made"
	down_all || log "fsmatrix lab: could not remove everything; run \`fsmatrix lab down\`"
	exit "$rc"
}

lab_exists() {
	# Any trace of a lab, ours or one in another state dir (the names are machine-wide).
	[ -e "$DIR/created" ] && return 0
	ip link show "$BRIDGE" >/dev/null 2>&1 && return 0
	ip link show "$INNER_BRIDGE" >/dev/null 2>&1 && return 0
	ip netns list 2>/dev/null | grep -q '^fsmx-lab' && return 0
	return 1
}

cmd_up() {
	local n=$1 disk_size=$2 install=$3 t0 pg_bin i ips=() o
	need_linux
	need_root
	need_loop
	check_dir "$DIR"
	case "$n" in
	'' | *[!0-9]*) die 2 "--hosts must be a number from 1 to 16, not '$n'" ;;
	esac
	if [ "$n" -lt 1 ] || [ "$n" -gt 16 ]; then die 2 "--hosts must be from 1 to 16, not $n"; fi
	case "$BASTION" in
	0) ;;
	1) [ "$n" -ge 2 ] || die 2 "--bastion needs at least 2 hosts (the bastion and one behind it)" ;;
	*) die 2 "BASTION must be 0 or 1, not '$BASTION'" ;;
	esac
	case "$GUESTS" in
	'' | *[!0-9]*) die 2 "--guests must be a number from 0 to --hosts ($n), not '$GUESTS'" ;;
	esac
	if [ "$GUESTS" -gt "$n" ]; then die 2 "--guests must be from 0 to --hosts ($n), not $GUESTS"; fi
	if [ "$GUESTS" -gt 0 ] && [ "$BASTION" = 1 ]; then
		die 2 "--guests with --bastion is not supported (a guest behind the bastion is two jumps away, which the lab does not build or test)"
	fi
	for ((i = 1; i <= GUESTS; i++)); do
		o=$(os_of "$i" "$OSES")
		[ "$o" = linux ] || die 2 "--guests $GUESTS: lab$i is a $o stand-in; only Linux lab hosts can run a guest"
	done
	[[ "$disk_size" =~ ^[1-9][0-9]*[KMGT]?$ ]] ||
		die 2 "--disk-size must be a size like 4G or 2048M, not '$disk_size'"
	IFS=, read -r -a o <<<"$OSES"
	for i in "${o[@]}"; do
		case $i in
		linux) ;;
		freebsd | dragonfly)
			if [ -z "${STANDIN:-}" ] || [ ! -f "$STANDIN/setup.sh" ]; then
				die 2 "a $i stand-in needs the stand-in files (FSMATRIX_LAB_STANDIN); run lab.sh through \`fsmatrix lab up\`"
			fi
			;;
		*) die 2 "--os: '$i' has no lab host; valid: linux, freebsd, dragonfly" ;;
		esac
	done

	exec 9>"$LOCK"
	flock -n 9 || die 1 "another \`fsmatrix lab\` command is running (lock $LOCK)"
	if lab_exists; then
		die 1 "a lab is already up (state in $DIR, or bridge $BRIDGE / fsmx-lab* namespaces exist); nothing changed. Use \`fsmatrix lab status\` to see it or \`fsmatrix lab down\` to remove it"
	fi
	if ip -4 -o addr show | grep -q " $NET\."; then
		die 2 "the lab's network $NET.0/24 is already used by an interface of this machine (ip -4 addr); nothing changed"
	fi
	if [ "$BASTION" = 1 ] && ip -4 -o addr show | grep -q " $INNER_NET\."; then
		die 2 "the bastion's inner network $INNER_NET.0/24 is already used by an interface of this machine (ip -4 addr); nothing changed"
	fi
	check_packages "$install"
	pg_bin=$(pg_bin_dir)
	# The guests' root, built once (minutes) and cached: before anything of the lab is made.
	[ "$GUESTS" = 0 ] || build_guest_base

	t0=$(now)
	mkdir -p "$DIR"
	: >"$DIR/created"
	# From here on a failure (or Ctrl-C) removes what was made.
	trap 'up_failed' EXIT
	trap 'exit 130' INT TERM

	# ip netns add bind-mounts /run/netns onto itself: record it so down undoes it.
	[ -d /run/netns ] || record dir /run/netns
	mountpoint -q /run/netns 2>/dev/null || record netns-mount /run/netns
	for d in $PRIVATE_DIRS; do
		[ -d "$d" ] || {
			record dir "$d"
			mkdir -p "$d"
		}
	done
	# Each host bind-mounts its own doas.conf over /etc/doas.conf, which Debian's doas
	# package does not ship: an empty one (it permits nothing) is the mount point.
	[ -e /etc/doas.conf ] || {
		record file /etc/doas.conf
		install -m 0600 -o root -g root /dev/null /etc/doas.conf
	}

	rm -f "$DIR/id_ed25519" "$DIR/id_ed25519.pub"
	ssh-keygen -q -t ed25519 -N '' -C "fsmatrix-lab" -f "$DIR/id_ed25519"
	cp "$DIR/id_ed25519.pub" "$DIR/authorized_keys"
	: >"$DIR/known_hosts"

	record link "$BRIDGE"
	ip link add "$BRIDGE" type bridge
	ip addr add "$NET.1/24" dev "$BRIDGE"
	ip link set "$BRIDGE" up
	if [ "$BASTION" = 1 ]; then
		printf '%s\n' "$(bastion_ip)" >"$DIR/bastion"
		# No address here: the machine itself has no way into the inner network.
		record link "$INNER_BRIDGE"
		ip link add "$INNER_BRIDGE" type bridge
		ip link set "$INNER_BRIDGE" up
		# And no packet for it leaves by the default route either: the
		# machine answers "network unreachable" itself.
		record unreachable "$INNER_NET.0/24"
		ip route add unreachable "$INNER_NET.0/24"
	fi

	for ((i = 1; i <= n; i++)); do
		up_host "$i" "$disk_size" "$(os_of "$i" "$OSES")"
		ips+=("$(host_ip "$i")")
	done
	for ip in "${ips[@]}"; do
		wait_for 15 "sshd on $ip" ssh_lab "$ip" true || false
	done
	if [ "$GUESTS" -gt 0 ]; then
		record guest "$DIR/guest"
		for ((i = 1; i <= GUESTS; i++)); do guest_image "$i"; done
		cp "$DIR/guest-cache/vmlinuz" "$DIR/guest-cache/initrd.img" "$DIR/guest/"
	fi
	write_inventory "$n" "$pg_bin"
	# The lab's shape as the arguments of `fsmatrix lab up` that make it again: what
	# tests/run.sh compares with the lab it needs, and restores after it.
	printf -- '--hosts %s --os %s --guests %s --disk-size %s%s\n' "$n" "$OSES" "$GUESTS" "$disk_size" \
		"$([ "$BASTION" = 1 ] && printf ' --bastion')" >"$DIR/shape"
	printf 'up\n' >"$DIR/state"
	trap - EXIT INT TERM
	log "lab up: $n hosts${GUESTS:+ ($GUESTS with a guest)} in $(elapsed "$t0") s; inventory: $DIR/inventory.toml"
	[ "$BASTION" = 0 ] || log "lab up: lab1 is the bastion ($(bastion_ip)); lab2..lab$n are on $INNER_NET.0/24 behind it"
	for ((i = 1; i <= n; i++)); do
		printf 'lab%d %s %s %s\n' "$i" "$(host_ip "$i")" "$(cat "$DIR/hosts/lab$i/device")" "$(cat "$DIR/hosts/lab$i/os")"
	done
	for ((i = 1; i <= GUESTS; i++)); do
		printf 'lab%d-vm guest of lab%d, 127.0.0.1:%s on lab%d, /dev/vdb\n' "$i" "$i" "$(guest_port "$i")" "$i"
	done
}

# --- down --------------------------------------------------------------------------------

# Is PID the init (or unshare) this lab recorded, not a reused PID?
is_lab_init() {
	local pid=$1
	[ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q 'fsmx-init'
}

# PIDs (root namespace numbering) of processes whose pid namespace is that of PID.
pids_in_ns_of() {
	local ref
	ref=$(readlink "/proc/$1/ns/pid" 2>/dev/null) || return 0
	# One find for all processes (a readlink per process is slow); brackets as ?.
	ref=${ref//[\[\]]/?}
	find /proc/[0-9]*/ns/pid -maxdepth 0 -lname "$ref" 2>/dev/null | cut -d/ -f3
	return 0
}

comm_of() { cat "/proc/$1/comm" 2>/dev/null || true; }

# The work_dir of every lab host (write_inventory); a guest's files are under <work_dir>/vm.
readonly LAB_WORK_DIR=/var/tmp/fsmatrix

# Is root-namespace PID P guest NAME's qemu: qemu-system-x86_64 started with -name fsmx-NAME?
is_guest_qemu() {
	local p=$1 name=$2
	[ -r "/proc/$p/cmdline" ] || return 1
	tr '\0' '\n' <"/proc/$p/cmdline" 2>/dev/null |
		awk -v n="fsmx-$name" 'NR == 1 { q = ($0 ~ /(^|\/)qemu-system-x86_64$/) } p == "-name" && $0 == n { f = 1 } { p = $0 } END { exit !(q && f) }'
}

# stop_guests INIT_PID HOST: kill the qemu of every guest pid file in the host's
# work_dir/vm (seen through the init's root), by PID: the file holds the PID in the
# host's pid namespace, matched to the root namespace's through NSpid.
stop_guests() {
	local init=$1 host=$2 f name nspid p n victims=()
	for f in "/proc/$init/root$LAB_WORK_DIR/vm"/*.pid; do
		name=$(basename "$f" .pid)
		nspid=$(tr -d ' \n' <"$f" 2>/dev/null || true)
		[[ "$nspid" =~ ^[0-9]+$ ]] || continue
		for p in $(pids_in_ns_of "$init"); do
			[ "$(awk '$1 == "NSpid:" { print $NF }' "/proc/$p/status" 2>/dev/null)" = "$nspid" ] || continue
			if is_guest_qemu "$p" "$name"; then
				log "lab down: $host: stopping guest $name (qemu pid $p)"
				kill -TERM "$p" 2>/dev/null || true
				victims+=("$p")
			fi
		done
	done
	for p in "${victims[@]}"; do
		for ((n = 0; n < 50; n++)); do
			[ -e "/proc/$p" ] || break
			sleep 0.1
		done
		[ ! -e "/proc/$p" ] || kill -KILL "$p" 2>/dev/null || true
	done
	return 0
}

down_host() {
	local hd=$1 host pid p dev n pools mnt left zpool
	host=$(basename "$hd")
	pid=$(cat "$hd/init.pid" 2>/dev/null || true)
	p=$(cat "$hd/unshare.pid" 2>/dev/null || true)
	if [ -z "$pid" ] && is_lab_init "$p"; then
		# up stopped before it recorded the init: it is the unshare's child.
		pid=$(tr -d ' \n' <"/proc/$p/task/$p/children" 2>/dev/null || true)
	fi
	dev=$(cat "$hd/device" 2>/dev/null || true)
	if is_lab_init "$pid"; then
		# 1. PostgreSQL: a fast shutdown of every postmaster of the host.
		for p in $(pids_in_ns_of "$pid"); do
			if [ "$(comm_of "$p")" = postgres ]; then kill -INT "$p" 2>/dev/null || true; fi
		done
		for ((n = 0; n < 150; n++)); do
			left=0
			for p in $(pids_in_ns_of "$pid"); do
				[ "$(comm_of "$p")" = postgres ] && left=1
			done
			[ "$left" = 0 ] && break
			sleep 0.1
		done
		# 2. Unmount what is mounted from the host's device (deepest first); a stand-in
		#    names it by its BSD name.
		if [ -n "$dev" ]; then
			awk -v d="$dev" -v b="$(cat "$hd/device.bsd" 2>/dev/null || true)" \
				'$1 == d || (b != "" && $1 == b) { print $2 }' "/proc/$pid/mounts" | sort -r |
				while read -r mnt; do
					nsenter -t "$pid" -m -- umount "$mnt" 2>/dev/null ||
						nsenter -t "$pid" -m -- umount -l "$mnt" 2>/dev/null || true
				done
		fi
		# 3. zfs-fuse pools: destroy (they live only on this host's device); "pool is
		#    busy" for a second or so after postgres stops, so retry.
		#    The real zpool (a stand-in's /usr/sbin/zpool is its emulator).
		zpool=zpool
		[ ! -e "$hd/device.bsd" ] || zpool=/run/fsmx-standin/real/sbin/zpool
		pools=$(nsenter -t "$pid" -n -m -u -i -p -- "$zpool" list -H -o name 2>/dev/null || true)
		for p in $pools; do
			for ((n = 0; n < 20; n++)); do
				nsenter -t "$pid" -n -m -u -i -p -- "$zpool" destroy -f "$p" 2>/dev/null && break
				sleep 0.5
			done
		done
		# 4. Guests (issue 26): the qemu of every pid file under the host's work_dir/vm
		#    (its own /var/tmp), only a qemu-system-x86_64 of that guest; their
		#    overlays go with the host's private /var/tmp.
		stop_guests "$pid" "$host"
		# 5. zfs-fuse: ask it to stop so it flushes; then end the host (TERM its init: the
		#    kernel ends every process of its pid namespace with it).
		for p in $(pids_in_ns_of "$pid"); do
			if [ "$(comm_of "$p")" = zfs-fuse ]; then kill -TERM "$p" 2>/dev/null || true; fi
		done
		for ((n = 0; n < 50; n++)); do
			left=0
			for p in $(pids_in_ns_of "$pid"); do
				[ "$(comm_of "$p")" = zfs-fuse ] && left=1
			done
			[ "$left" = 0 ] && break
			sleep 0.1
		done
		kill -TERM "$pid" 2>/dev/null || true
		for ((n = 0; n < 100; n++)); do
			[ -e "/proc/$pid" ] || break
			sleep 0.1
		done
		[ -e "/proc/$pid" ] && kill -KILL "$pid" 2>/dev/null
	fi
	p=$(cat "$hd/unshare.pid" 2>/dev/null || true)
	if is_lab_init "$p"; then
		kill -TERM "$p" 2>/dev/null || true
		wait_for 5 "the unshare of $host to end" test ! -e "/proc/$p" || kill -KILL "$p" 2>/dev/null || true
	elif [ -n "$p" ] && [ "$(comm_of "$p")" = unshare ]; then
		# Already ended with its init, but still a zombie until its parent (the
		# machine's init, since up's shell is gone) reaps it: wait for that.
		wait_for 5 "the unshare of $host to be reaped" test ! -e "/proc/$p" || true
	fi
	# 6. The loop device: only one backed by this host's own file.
	if [ -e "$hd/disk.img" ]; then
		for ((n = 0; n < 100; n++)); do
			left=$(losetup -n -O NAME -j "$hd/disk.img" 2>/dev/null || true)
			[ -z "$left" ] && break
			for dev in $left; do losetup -d "$dev" 2>/dev/null || true; done
			sleep 0.1
		done
		[ -z "$left" ] || log "fsmatrix lab: loop device $left of $host is still busy; it is set to detach when released"
	fi
}

down_all() {
	local hd kind what rc=0
	[ -d "$DIR" ] || return 0
	# Hosts in parallel: stopping zfs-fuse takes seconds each.
	for hd in "$DIR"/hosts/*/; do
		down_host "${hd%/}" &
	done
	wait
	if [ -e "$DIR/created" ]; then
		# Undo in reverse order of creation.
		while read -r kind what; do
			case "$kind" in
			netns) ip netns del "$what" 2>/dev/null || true ;;
			link) ! ip link show "$what" >/dev/null 2>&1 || ip link del "$what" || rc=1 ;;
			unreachable)
				if ip route show type unreachable | grep -q "^unreachable $what "; then
					ip route del unreachable "$what" || rc=1
				fi
				;;
			netns-mount)
				if mountpoint -q "$what" && [ -z "$(ls -A "$what")" ]; then umount "$what" || rc=1; fi
				;;
			dir) rmdir "$what" 2>/dev/null || true ;;
			# Only the empty mount point up made: a doas.conf someone filled since stays.
			file) [ -s "$what" ] || rm -f "$what" ;;
			# The guests' images (with this lab's keys); DIR/guest-cache stays.
			guest) rm -rf "$what" ;;
			esac
		done < <(tac "$DIR/created")
	fi
	[ "$rc" = 0 ] || return 1
	rm -rf "${DIR:?}/hosts" "$DIR/created" "$DIR/state" "$DIR/inventory.toml" "$DIR/inventory-guests.toml" "$DIR/known_hosts" \
		"$DIR/authorized_keys" "$DIR/id_ed25519" "$DIR/id_ed25519.pub" "$DIR/bastion" "$DIR/shape"
	rmdir "$DIR" 2>/dev/null || true
}

cmd_down() {
	local t0
	need_linux
	need_root
	check_dir "$DIR"
	exec 9>"$LOCK"
	flock -w 60 9 || die 1 "another \`fsmatrix lab\` command is running (lock $LOCK)"
	if [ ! -d "$DIR" ]; then
		log "lab down: no lab in $DIR; nothing to do"
		return 0
	fi
	t0=$(now)
	down_all || die 1 "could not remove every part of the lab in $DIR (see above); run \`fsmatrix lab down\` again"
	log "lab down: removed in $(elapsed "$t0") s"
}

# --- status ------------------------------------------------------------------------------

cmd_status() {
	local hd host i ip dev pid reach att mounts pools bad=0
	need_linux
	need_root
	if [ ! -e "$DIR/state" ]; then
		if [ -e "$DIR/created" ]; then
			log "fsmatrix lab: the lab in $DIR is half made (a failed or running \`lab up\`); remove it with \`fsmatrix lab down\`"
		else
			log "fsmatrix lab: no lab is up in $DIR; start one with \`fsmatrix lab up\`"
		fi
		return 2
	fi
	printf '%-6s %-12s %-11s %-22s %s\n' HOST ADDRESS SSH DEVICE MOUNTED
	for hd in "$DIR"/hosts/*/; do
		hd=${hd%/}
		host=$(basename "$hd")
		i=${host#lab}
		ip=$(host_ip "$i")
		dev=$(cat "$hd/device" 2>/dev/null || true)
		pid=$(cat "$hd/init.pid" 2>/dev/null || true)
		if ssh_lab "$ip" true </dev/null 2>/dev/null; then reach=reachable; else
			reach=unreachable
			bad=1
		fi
		if [ -n "$dev" ] && losetup -n -O BACK-FILE "$dev" 2>/dev/null | grep -qF "$hd/disk.img"; then
			att="$dev attached"
		else
			att="${dev:-?} DETACHED"
			bad=1
		fi
		mounts=""
		pools=""
		if is_lab_init "$pid"; then
			# A stand-in's disk is mounted under its BSD name.
			mounts=$(awk -v d="$dev" -v b="$(cat "$hd/device.bsd" 2>/dev/null || true)" \
				'$1 == d || (b != "" && $1 == b) { printf "%s on %s; ", $3, $2 }' "/proc/$pid/mounts" 2>/dev/null || true)
			pools=$(nsenter -t "$pid" -n -m -u -i -p -- zfs list -H -o name,mountpoint 2>/dev/null |
				awk -F '\t' '{ printf "%s on %s, ", $1, $2 }' || true)
			pools=${pools%, }
		else
			mounts="(host init not running) "
			bad=1
		fi
		[ -n "$pools" ] && mounts="${mounts}zfs-fuse: $pools; "
		mounts=${mounts%; }
		printf '%-6s %-12s %-11s %-22s %s\n' "$host" "$ip" "$reach" "$att" "${mounts:-nothing}"
	done
	status_guests || bad=1
	return "$bad"
}

# The guests (--guests N), after the hosts: each reached on its host's loopback, its
# image (missing: status fails) and whether a qemu of it runs in its host (a sweep, or
# the remote verb vm-start, boots it; `lab up` does not).
status_guests() {
	local img name i init p state bad=0 first=1
	for img in "$DIR"/guest/lab*-vm.img; do
		[ -e "$img" ] || continue
		name=$(basename "$img" .img)
		i=${name#lab}
		i=${i%-vm}
		if [ "$first" = 1 ]; then
			printf '\n%-8s %-5s %-16s %-9s %s\n' GUEST OF SSH IMAGE STATE
			first=0
		fi
		init=$(cat "$DIR/hosts/lab$i/init.pid" 2>/dev/null || true)
		state=stopped
		if is_lab_init "$init"; then
			for p in $(pids_in_ns_of "$init"); do
				if is_guest_qemu "$p" "$name"; then
					state="running (qemu pid $p)"
					break
				fi
			done
		else
			state="(host init not running)"
			bad=1
		fi
		printf '%-8s %-5s %-16s %-9s %s\n' "$name" "lab$i" "127.0.0.1:$(guest_port "$i")" present "$state"
	done
	# Guests the inventory names whose image is gone.
	if [ -e "$DIR/inventory-guests.toml" ]; then
		while IFS= read -r name; do
			[ -e "$DIR/guest/$name.img" ] && continue
			printf '%-8s %-5s %-16s %-9s %s\n' "$name" "${name%-vm}" - MISSING "its image $DIR/guest/$name.img is gone"
			bad=1
		done < <(sed -n 's/^name = "\(lab[0-9]*-vm\)"$/\1/p' "$DIR/inventory-guests.toml")
	fi
	return "$bad"
}

main() {
	[ $# -ge 2 ] || die 2 "usage: lab.sh up|down|status DIR [HOSTS DISK_SIZE INSTALL [OSES [BASTION [GUESTS]]]]"
	DIR=${2%/}
	readonly DIR
	case "$1" in
	up)
		if [ $# -lt 5 ] || [ $# -gt 8 ]; then die 2 "usage: lab.sh up DIR HOSTS DISK_SIZE INSTALL [OSES [BASTION [GUESTS]]]"; fi
		OSES=${6:-linux}
		BASTION=${7:-0}
		GUESTS=${8:-0}
		STANDIN=${FSMATRIX_LAB_STANDIN:-}
		readonly OSES BASTION STANDIN GUESTS
		cmd_up "$3" "$4" "$5"
		;;
	down) cmd_down ;;
	status) cmd_status ;;
	*) die 2 "unknown lab action '$1'; valid: up, down, status" ;;
	esac
}

main "$@"
