//! `fsmatrix ls` over 1 000 small bundles (aim: under 1 s), written with the
//! project's own bundle writer in a temporary folder: 10 folders of 100
//! bundles, each with 5 cells (4 done, 1 failed) and 2 hosts, one in ten
//! left unclosed (a killed sweep).  Times the library call
//! (`fsmatrix::results::bundle::listing::list`) and the CLI binary (`ls` and
//! `ls --json`), then again after 100 of the bundles were replaced by
//! their `.tar.zst` archives (each read from start to end: tar+zstd has no
//! index).
//!
//!   cargo bench -p fsmatrix --bench ls --profile dev     (our crate at opt-level 0)
//!   cargo bench -p fsmatrix --bench ls --profile perf    (as users run it)
//!
//! FSMX_BENCH_BUNDLES (default 1000) sets the count.
#[path = "../../tests/pure/bundle_common.rs"]
mod bundle_common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fsmatrix::results::bundle::listing;
use fsmatrix::results::{Bundle, SweepStatus};

const ROUNDS: usize = 5;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

fn time_lib(root: &Path, n: usize) -> (Duration, Duration) {
    let mut runs = Vec::new();
    for _ in 0..ROUNDS {
        let t0 = Instant::now();
        let l = listing::list(root).expect("a listing");
        runs.push(t0.elapsed());
        assert_eq!(l.bundles.len(), n);
    }
    let min = *runs.iter().min().expect("runs");
    (min, median(runs))
}

fn time_cli(root: &Path, json: bool) -> (Duration, Duration) {
    let mut runs = Vec::new();
    for _ in 0..ROUNDS {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_fsmatrix"));
        cmd.arg("ls").arg(root).stdout(Stdio::null());
        if json {
            cmd.arg("--json");
        }
        let t0 = Instant::now();
        let status = cmd.status().expect("run fsmatrix ls");
        runs.push(t0.elapsed());
        assert!(status.success(), "fsmatrix ls exited {status}");
    }
    let min = *runs.iter().min().expect("runs");
    (min, median(runs))
}

fn report(what: &str, root: &Path, n: usize) {
    let (lmin, lmed) = time_lib(root, n);
    let (tmin, tmed) = time_cli(root, false);
    let (jmin, jmed) = time_cli(root, true);
    println!("{what}:");
    println!(
        "  library list():     median {:>9}, min {:>9}  ({:.0} µs per bundle)",
        ms(lmed),
        ms(lmin),
        lmed.as_secs_f64() * 1e6 / n as f64
    );
    println!(
        "  fsmatrix ls:        median {:>9}, min {:>9}",
        ms(tmed),
        ms(tmin)
    );
    println!(
        "  fsmatrix ls --json: median {:>9}, min {:>9}",
        ms(jmed),
        ms(jmin)
    );
}

fn main() {
    let n: usize = std::env::var("FSMX_BENCH_BUNDLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let tmp = tempfile::tempdir().expect("a temporary folder");
    let root = tmp.path().join("results");
    let t0 = Instant::now();
    let mut dirs = Vec::new();
    for i in 0..n {
        let out = root.join(format!("batch-{}", i / 100));
        let mut b = Bundle::create(&out, &format!("bench-{i}")).expect("a bundle");
        b.write("matrix.toml", b"name = \"bench\"\n")
            .expect("write");
        for h in ["lab1", "lab2"] {
            b.write(&format!("hosts/{h}/facts.json"), b"{}\n")
                .expect("write");
        }
        for c in bundle_common::sample_cells() {
            bundle_common::write_cell(&mut b, &c);
        }
        if i % 10 == 9 {
            // Killed mid-sweep: no closed line, no bag-info.
            dirs.push(b.path().to_owned());
        } else {
            dirs.push(b.close(SweepStatus::Complete).expect("close"));
        }
    }
    println!(
        "{n} bundles written in {:.1} s (5 cells, 2 hosts each; every tenth not closed)",
        t0.elapsed().as_secs_f64()
    );
    // Warm the page cache once: every round then reads from memory.
    let _ = listing::list(&root);
    report(&format!("{n} bundle folders"), &root, n);

    let archived = n / 10;
    for d in dirs
        .iter()
        .filter(|d| d.join("bag-info.txt").exists())
        .take(archived)
    {
        fsmatrix::results::bundle::archive::archive(d, None).expect("an archive");
        std::fs::remove_dir_all(d).expect("remove the archived folder");
    }
    let _ = listing::list(&root);
    report(
        &format!("{} bundle folders and {archived} archives", n - archived),
        &root,
        n,
    );
}
