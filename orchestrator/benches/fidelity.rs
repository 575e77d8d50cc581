//! Fidelity: does fsmatrix change what it measures?  The same pgbench on
//! the same lab host and device (ext4, a fresh filesystem and cluster,
//! `shared_buffers = 64MB`, scale 1, select-only, 1 client, 10 s), once
//! through `fsmatrix run` and once by hand over plain `ssh` (mkfs, mount,
//! initdb, pg_ctl, pgbench -i, pgbench, then everything removed and the
//! device wiped), alternating which goes first each round so that drift
//! hits both alike.  Prints both medians and each side's CV, the ratio
//! paired by round (geometric mean of the rounds' ratios, 95% t interval:
//! the pairing cancels drift between rounds) and the ratio of the means
//! with the report's delta-method CI; the ratio must be within 0.97–1.03.
//!
//! Needs a standing lab: `fsmatrix lab up`, then
//! `cargo bench -p fsmatrix --profile perf --bench fidelity` (ROUNDS=N to
//! change the 10 rounds).
#[path = "../../tests/support/lab.rs"]
mod common;

use fsmatrix::results::analysis::compare::ratio_of_means;
use fsmatrix::results::analysis::stats::t_quantile;

const SECONDS: u32 = 10;

fn matrix() -> String {
    format!(
        r#"name = "fidelity"
repeats = 1
warmup = 0
drop_caches = false
[postgres]
shared_buffers = "64MB"
[[filesystem]]
name = "ext4"
type = "ext4"
[[workload]]
name = "sel"
builtin = "select-only"
scale = 1
clients = [1]
duration = "{SECONDS}s"
"#
    )
}

/// The by-hand round, as an operator would type it (sh -s, $1 = device,
/// $2 = pg_bin, $3 = seconds).  Prints pgbench's tps line.
const BY_HAND: &str = r#"set -eu
dev=$1; bin=$2; secs=$3
cd /
mnt=/var/tmp/fsmx-fidelity; sock=/var/tmp/fsmx-fidelity-sock
cleanup() {
  runuser -u postgres -- "$bin/pg_ctl" -D "$mnt/pgdata" -m immediate stop >/dev/null 2>&1 || true
  umount "$mnt" 2>/dev/null || true
  # Both ends zeroed, as fsmatrix's teardown leaves a device: its guard
  # refuses a device whose first MiB is not zero.
  wipefs -a -q "$dev" || true
  size=$(blockdev --getsize64 "$dev")
  dd if=/dev/zero of="$dev" bs=1048576 count=1 conv=notrunc 2>/dev/null
  dd if=/dev/zero of="$dev" bs=1048576 count=1 seek=$((size / 1048576 - 1)) conv=notrunc 2>/dev/null
  rm -rf "$mnt" "$sock"
}
trap cleanup EXIT
mkfs.ext4 -q -F "$dev"
mkdir -p "$mnt" "$sock"
mount "$dev" "$mnt"
mkdir "$mnt/pgdata"; chown postgres "$mnt/pgdata" "$sock"; chmod 0700 "$mnt/pgdata"
runuser -u postgres -- "$bin/initdb" -D "$mnt/pgdata" -U postgres --auth=trust -E UTF8 --locale=C >/dev/null
printf "listen_addresses = ''\nport = 5499\nunix_socket_directories = '%s'\nshared_buffers = 64MB\n" "$sock" >> "$mnt/pgdata/postgresql.conf"
runuser -u postgres -- "$bin/pg_ctl" -D "$mnt/pgdata" -l "$sock/postgres.log" -w start >/dev/null
"$bin/createdb" -h "$sock" -p 5499 -U postgres bench
"$bin/pgbench" -i -q -s 1 -h "$sock" -p 5499 -U postgres bench >/dev/null 2>&1
"$bin/pgbench" -b select-only -c 1 -j 1 -T "$secs" -h "$sock" -p 5499 -U postgres bench 2>/dev/null | grep '^tps'
"#;

fn tps_of(line: &str) -> f64 {
    // "tps = 6332.399391 (without initial connection time)"
    line.split_whitespace()
        .nth(2)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no tps in {line:?}"))
}

fn through_fsmatrix(dir: &std::path::Path, round: usize) -> f64 {
    let out = dir.join(format!("round{round}"));
    let run = common::fsmatrix()
        .args(["run", "-q", "-i"])
        .arg(dir.join("inv.toml"))
        .arg("-m")
        .arg(dir.join("matrix.toml"))
        .arg("--out")
        .arg(&out)
        .output()
        .expect("run fsmatrix");
    assert!(
        run.status.success(),
        "fsmatrix run failed:\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let mut stack = vec![out];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read bundle").flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().is_some_and(|n| n == "result.json") {
                let v: serde_json::Value =
                    serde_json::from_slice(&std::fs::read(&p).expect("read")).expect("json");
                return v["status"]["run"]["tps"].as_f64().expect("a done cell");
            }
        }
    }
    panic!("no result.json in round {round}'s bundle");
}

fn cv(xs: &[f64]) -> f64 {
    let m = xs.iter().sum::<f64>() / xs.len() as f64;
    let var = xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (xs.len() - 1) as f64;
    var.sqrt() / m
}

fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn main() {
    let Some(lab) = common::read_inventory(&common::lab_dir()) else {
        eprintln!("fidelity bench: no lab is up (fsmatrix lab up); skipped");
        return;
    };
    let rounds: usize = std::env::var("ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    let host = &lab.hosts[0];
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("inv.toml"),
        common::inventory_for(&lab, &[(host, "")], ""),
    )
    .expect("write inventory");
    std::fs::write(dir.path().join("matrix.toml"), matrix()).expect("write matrix");
    let secs = SECONDS.to_string();
    let by_hand = || {
        let out = common::ssh_ok(&lab, host, BY_HAND, &[&host.device, &lab.pg_bin, &secs]);
        tps_of(out.lines().last().unwrap_or(""))
    };
    let (mut ours, mut hand) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        if round % 2 == 0 {
            ours.push(through_fsmatrix(dir.path(), round));
            hand.push(by_hand());
        } else {
            hand.push(by_hand());
            ours.push(through_fsmatrix(dir.path(), round));
        }
        eprintln!(
            "round {}: fsmatrix {:.0} tps, by hand {:.0} tps",
            round + 1,
            ours[round],
            hand[round]
        );
    }
    // Paired: the rounds are pairs run back to back, so the ratio of each
    // pair cancels the drift between rounds; their geometric mean and its
    // t interval (on the logs) is the estimate.  The ratio of the means of
    // the two sides (the report's own delta-method CI) beside it.
    let logs: Vec<f64> = ours.iter().zip(&hand).map(|(a, b)| (a / b).ln()).collect();
    let n = logs.len() as f64;
    let m = logs.iter().sum::<f64>() / n;
    let sd = (logs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
    let h = t_quantile(0.975, n - 1.0) * sd / n.sqrt();
    let paired = m.exp();
    let r = ratio_of_means(&ours, &hand).expect("ratio");
    let ci = r
        .ci95
        .map(|(lo, hi)| format!("95% CI {lo:.3}–{hi:.3}"))
        .unwrap_or_else(|| "no CI".into());
    println!(
        "fidelity on {} ({rounds} rounds, alternating; ext4, select-only, 1 client, {SECONDS} s, fresh build each):",
        host.name
    );
    println!(
        "  through fsmatrix: median {:.0} tps, CV {:.1}%",
        median(&ours),
        100.0 * cv(&ours)
    );
    println!(
        "  by hand over ssh: median {:.0} tps, CV {:.1}%",
        median(&hand),
        100.0 * cv(&hand)
    );
    let verdict = if (0.97..=1.03).contains(&paired) {
        "within 0.97–1.03"
    } else {
        "OUTSIDE 0.97–1.03"
    };
    println!(
        "  ratio fsmatrix ÷ by hand, paired by round: {paired:.3} (95% CI {:.3}–{:.3}), {verdict}",
        (m - h).exp(),
        (m + h).exp()
    );
    println!(
        "  ratio of the means: {:.3} ({ci}); ratio of the medians: {:.3}",
        r.ratio,
        median(&ours) / median(&hand)
    );
}
