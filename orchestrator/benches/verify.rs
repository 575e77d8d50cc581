//! Verify throughput against `sha256sum -c` on the same generated bundle.
//!
//! Run (debug deps are already optimised, see the workspace Cargo.toml;
//! never a release build on the shared machine):
//!   cargo bench -p fsmatrix --bench verify --profile dev
//! FSMX_BENCH_MIB (default 256) sets the payload size: half in 1 MiB raw
//! outputs, half in 4 KiB files, like a sweep's many small cell files.
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use fsmatrix::results::bundle::verify::verify_with_threads;
use fsmatrix::results::{Bundle, SweepStatus};

fn mib_s(bytes: u64, d: Duration) -> f64 {
    bytes as f64 / (1 << 20) as f64 / d.as_secs_f64()
}

fn main() {
    let mib: u64 = std::env::var("FSMX_BENCH_MIB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256);
    let tmp = tempfile::tempdir().expect("a temporary folder");
    let mut b = Bundle::create(tmp.path(), "bench").expect("a bundle");
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut fill = |buf: &mut [u8]| {
        for chunk in buf.chunks_mut(8) {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            chunk.copy_from_slice(&seed.to_le_bytes()[..chunk.len()]);
        }
    };
    let mut big = vec![0u8; 1 << 20];
    for i in 0..mib / 2 {
        fill(&mut big);
        b.write(&format!("cells/c{:04}/run-big.out", i), &big)
            .expect("write");
    }
    let mut small = vec![0u8; 4096];
    for i in 0..(mib / 2) * 256 {
        fill(&mut small);
        b.write(&format!("cells/s{:03}/run-{i}.out", i % 500), &small)
            .expect("write");
    }
    let root = b.close(SweepStatus::Complete).expect("close");
    let files = (mib / 2) + (mib / 2) * 256;
    println!(
        "bundle: {} payload files, {} MiB (page cache warm after the first pass)",
        files, mib
    );

    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    // Warm the page cache once so every contender reads from memory.
    let r = verify_with_threads(&root, threads).expect("a bag");
    assert!(r.is_ok(), "{:?}", r.problems);
    for round in 1..=2 {
        for t in [1, threads] {
            let start = Instant::now();
            let r = verify_with_threads(&root, t).expect("a bag");
            let d = start.elapsed();
            assert!(r.is_ok());
            println!(
                "round {round}: fsmatrix verify, {t} thread(s): {:>7.3} s  {:>7.1} MiB/s",
                d.as_secs_f64(),
                mib_s(r.payload_bytes, d)
            );
        }
        let start = Instant::now();
        let st = Command::new("sha256sum")
            .args(["--quiet", "-c", "manifest-sha256.txt"])
            .current_dir(&root)
            .status()
            .expect("sha256sum runs");
        let d = start.elapsed();
        assert!(st.success(), "sha256sum -c failed");
        println!(
            "round {round}: sha256sum -c manifest-sha256.txt: {:>7.3} s  {:>7.1} MiB/s",
            d.as_secs_f64(),
            mib_s(r.payload_bytes, d)
        );
    }
    let _ = Path::new(&root);
}
