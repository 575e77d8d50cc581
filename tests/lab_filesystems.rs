//! The lab carries what every later issue needs: on each lab host in parallel, over
//! plain OpenSSH, its spare device gets ext4, xfs, btrfs and a zfs-fuse pool in turn;
//! PostgreSQL is initialised and started on it (in a subfolder, as pg_user), then
//! `pgbench -i -s 1` and a 5-second pgbench run on the host itself; then everything is
//! stopped and removed.  Asserts the filesystem type in that host's /proc/mounts and a
//! positive tps parsed from pgbench's summary.
mod support;

// Without root and a lab the suite says so and is skipped (tests/run.sh runs it).
#[used]
#[link_section = ".init_array"]
static NEEDS: extern "C" fn() = support::skip::needs_root_and_lab;

use support::*;

/// One filesystem on one host: make, mount, initdb, start, pgbench -i, pgbench, stop,
/// remove.  Teardown runs on failure too (trap).  Data on stdout, logs on stderr.
const CYCLE: &str = r#"
set -eu
dev=$1 fs=$2 pg_bin=$3 pg_user=$4 port=$5
mnt=/mnt/fsmx-fstest
pool=fsmxtest
sock=/run/postgresql
teardown() {
	if [ -f "$mnt/pg/data/postmaster.pid" ]; then
		runuser -u "$pg_user" -- "$pg_bin/pg_ctl" -D "$mnt/pg/data" -m fast -w stop >&2 || true
	fi
	if zpool list -H -o name 2>/dev/null | grep -qx "$pool"; then
		n=0
		# "pool is busy" for a second or so after postgres stops.
		until zpool destroy -f "$pool" >&2; do
			n=$((n + 1)); [ "$n" -lt 20 ] || break; sleep 0.5
		done
	fi
	if grep -q " $mnt " /proc/mounts; then umount "$mnt" >&2; fi
	return 0
}
# Leaves the device blank for the suites after this one: a destroyed pool keeps its ZFS
# labels (two in the first and two in the last 512 KiB), and a pool named fsmxtest is not
# fsmatrix's own (only the names it makes are), so a later sweep would refuse the device.
blank() {
	size=$(blockdev --getsize64 "$dev")
	dd if=/dev/zero of="$dev" bs=1M count=4 conv=notrunc,fsync 2>/dev/null
	dd if=/dev/zero of="$dev" bs=1M count=4 seek=$((size / 1048576 - 4)) conv=notrunc,fsync 2>/dev/null
}
trap 'teardown; blank' EXIT
teardown
mkdir -p "$mnt"
# The previous filesystem's signatures (a zfs label at the device's end) confuse mount.
wipefs -a -q "$dev"
case $fs in
ext4) mkfs.ext4 -q -F -E nodiscard "$dev" >&2; mount -t ext4 -o noatime "$dev" "$mnt" ;;
xfs) mkfs.xfs -q -f -K "$dev" >&2; mount -t xfs -o noatime "$dev" "$mnt" ;;
btrfs) mkfs.btrfs -q -f "$dev" >&2; mount -t btrfs -o noatime "$dev" "$mnt" ;;
zfs) zpool create -f -m "$mnt" -O atime=off "$pool" "$dev" >&2 ;;
esac
echo "MOUNT $(awk -v m="$mnt" '$2 == m { print $1, $3 }' /proc/mounts)"
mkdir "$mnt/pg"
chown "$pg_user:" "$mnt/pg"
cd /
runuser -u "$pg_user" -- "$pg_bin/initdb" -D "$mnt/pg/data" -A trust --no-sync >&2
runuser -u "$pg_user" -- "$pg_bin/pg_ctl" -D "$mnt/pg/data" -l "$mnt/pg/log" -w \
	-o "-p $port -k $sock -c listen_addresses=''" start >&2
runuser -u "$pg_user" -- "$pg_bin/pgbench" -h "$sock" -p "$port" -i -s 1 postgres >&2
runuser -u "$pg_user" -- "$pg_bin/pgbench" -h "$sock" -p "$port" -c 2 -j 2 -T 5 postgres
"#;

#[derive(Debug)]
struct Cycle {
    host: String,
    fs: &'static str,
    source: String,
    mount_type: String,
    tps: f64,
    seconds: f64,
}

fn parse(host: &LabHost, fs: &'static str, stdout: &str, seconds: f64) -> Cycle {
    let mount = stdout
        .lines()
        .find_map(|l| l.strip_prefix("MOUNT "))
        .unwrap_or_else(|| panic!("{}: {fs}: no MOUNT line in\n{stdout}", host.name));
    let mut parts = mount.split_whitespace();
    let source = parts.next().unwrap_or_default().to_string();
    let mount_type = parts.next().unwrap_or_default().to_string();
    // pgbench 14+: "tps = 812.345678 (without initial connection time)"; parse by prefix.
    let tps = stdout
        .lines()
        .find_map(|l| l.strip_prefix("tps = "))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse::<f64>().ok())
        .unwrap_or_else(|| panic!("{}: {fs}: no tps line in\n{stdout}", host.name));
    Cycle {
        host: host.name.clone(),
        fs,
        source,
        mount_type,
        tps,
        seconds,
    }
}

#[test]
fn every_filesystem_carries_postgres_on_every_host() {
    let lab = Lab::standing_or_up(3);
    let inv = &lab.inv;
    let port = inv.pg_port.to_string();
    let results: Vec<Cycle> = std::thread::scope(|s| {
        let workers: Vec<_> = inv
            .hosts
            .iter()
            .map(|h| {
                let port = &port;
                s.spawn(move || {
                    let mut done = Vec::new();
                    for fs in ["ext4", "xfs", "btrfs", "zfs"] {
                        let t = std::time::Instant::now();
                        let out = ssh_ok(
                            inv,
                            h,
                            CYCLE,
                            &[&h.device, fs, &inv.pg_bin, &inv.pg_user, port],
                        );
                        done.push(parse(h, fs, &out, t.elapsed().as_secs_f64()));
                    }
                    done
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("a host's worker panicked"))
            .collect()
    });

    for c in &results {
        eprintln!(
            "{} {:<5} {} {:<6} tps {:>8.1}  ({:.1} s)",
            c.host, c.fs, c.source, c.mount_type, c.tps, c.seconds
        );
    }
    assert_eq!(results.len(), 4 * inv.hosts.len());
    for (c, h) in results
        .iter()
        .zip(inv.hosts.iter().flat_map(|h| std::iter::repeat_n(h, 4)))
    {
        // zfs-fuse datasets are FUSE mounts named after the pool.
        let (want_type, want_source) = match c.fs {
            "zfs" => ("fuse.zfs", "fsmxtest"),
            fs => (fs, h.device.as_str()),
        };
        assert_eq!(c.mount_type, want_type, "{c:?}");
        assert_eq!(c.source, want_source, "{c:?}");
        assert!(c.tps > 0.0, "{c:?}");
    }

    // Nothing left mounted or pooled on any host.
    for h in &inv.hosts {
        let left = ssh_ok(
            inv,
            h,
            "grep ' /mnt/fsmx-fstest ' /proc/mounts || true; zpool list -H -o name 2>/dev/null || true",
            &[],
        );
        assert_eq!(left.trim(), "", "{} still has: {left}", h.name);
    }
}
