//! pgbench's per-transaction log (`-l [--sampling-rate=R]`), PostgreSQL
//! 12–17, read as a stream, and the exact latency percentiles of a run.
//!
//! One file per pgbench thread: `<prefix>.<pid>` for thread 0,
//! `<prefix>.<pid>.<thread>` for the others.  One line per (sampled)
//! transaction:
//!
//! ```text
//! client_id transaction_no time script_no time_epoch time_us [schedule_lag] [retries]
//! 0 199 2241 0 1175850568 995598
//! 0 81 4621 0 1412881037 912698 3005
//! 0 83 skipped 0 1412881037 914578 5217
//! 0 0 failed 0 1499414498 84905 9
//! ```
//!
//! `time` is the transaction's latency in microseconds (under `-R` from its
//! scheduled start); `skipped` (`-R` with `-L`: too late to start) or, from
//! PostgreSQL 15, `failed` — `serialization` or `deadlock` with
//! `--failures-detailed`.  `schedule_lag` comes with `-R`, `retries` (15+)
//! with `--max-tries` other than 1.  `--aggregate-interval` writes another
//! format (`interval_start num_transactions sum_latency …`, 6 to 15
//! columns, the first an epoch time): fsmatrix never asks for it and
//! refuses to read it rather than read it wrong.
//!
//! Percentiles are nearest-rank over every completed logged transaction:
//! the p-th percentile is the ⌈p/100 · n⌉-th smallest latency (p0 the
//! smallest), so each is a latency some transaction really had.  Pure; no
//! panics on any input.
use std::io::{BufRead, BufReader, Read};

use flate2::read::MultiGzDecoder;

use crate::model::LatencyPercentiles;

/// The percentiles of a run's latency curve ([`LatencyPercentiles::curve_ms`]).
pub const CURVE: [f64; 19] = [
    0.0, 1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 75.0, 80.0, 90.0, 95.0, 97.5, 99.0,
    99.5, 99.9, 100.0,
];

/// A first column this large is an epoch time: an `--aggregate-interval`
/// log, not a client id.
const EPOCH_LIKE: u64 = 100_000_000;

/// One line of a per-transaction log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    /// A completed transaction and its latency in microseconds.
    Done { us: u64 },
    /// `skipped`: not started, too late under `-R` with `-L`.
    Skipped,
    /// `failed`, `serialization`, `deadlock` (15+).
    Failed,
}

/// Read one log line (without its newline).
pub fn parse_line(line: &str) -> Result<Entry, String> {
    let f: Vec<&str> = line.split_ascii_whitespace().collect();
    let first = f.first().and_then(|w| w.parse::<u64>().ok());
    if f.len() > 8 || first.is_some_and(|v| v >= EPOCH_LIKE) {
        return Err(
            "this is an --aggregate-interval log (interval_start num_transactions …), which fsmatrix does not read; use per-transaction logging"
                .into(),
        );
    }
    if f.len() < 6 {
        return Err(format!(
            "{} columns; expected client_id transaction_no time script_no time_epoch time_us [schedule_lag] [retries]",
            f.len()
        ));
    }
    let numeric = |i: usize| f[i].parse::<u64>().is_ok();
    if first.is_none() || !numeric(1) || !numeric(3) || !numeric(4) || !numeric(5) {
        return Err(
            "client_id, transaction_no, script_no, time_epoch and time_us must be whole numbers"
                .into(),
        );
    }
    // schedule_lag is microseconds; retries a count.
    if f[6..].iter().any(|w| w.parse::<u64>().is_err()) {
        return Err("schedule_lag and retries must be whole numbers".into());
    }
    match f[2] {
        "skipped" => Ok(Entry::Skipped),
        "failed" | "serialization" | "deadlock" => Ok(Entry::Failed),
        t => t
            .parse::<u64>()
            .map(|us| Entry::Done { us })
            .map_err(|_| format!("time {t:?} is not microseconds, `skipped` or `failed`")),
    }
}

/// The logged transactions of a run, gathered file by file.
#[derive(Debug, Default, Clone)]
pub struct TxLog {
    latencies_us: Vec<u64>,
    skipped: u64,
    failed: u64,
}

impl TxLog {
    /// Read one log (plain text) line by line; an error names the line.
    pub fn read(&mut self, r: impl Read) -> Result<(), String> {
        let mut r = BufReader::with_capacity(64 * 1024, r);
        let mut line = String::new();
        let mut n = 0u64;
        loop {
            line.clear();
            match r.read_line(&mut line) {
                Ok(0) => return Ok(()),
                Ok(_) => {}
                Err(e) => return Err(format!("line {}: {e}", n + 1)),
            }
            n += 1;
            let l = line.trim_end_matches(['\n', '\r']);
            if l.trim().is_empty() {
                continue;
            }
            match parse_line(l).map_err(|e| format!("line {n}: {e}"))? {
                Entry::Done { us } => self.latencies_us.push(us),
                Entry::Skipped => self.skipped += 1,
                Entry::Failed => self.failed += 1,
            }
        }
    }

    /// Read one gzip-compressed log.
    pub fn read_gz(&mut self, bytes: &[u8]) -> Result<(), String> {
        self.read(MultiGzDecoder::new(bytes))
    }

    /// The run's percentiles; `None` when no transaction completed.
    pub fn percentiles(
        mut self,
        sampling_rate: f64,
        files: Vec<String>,
    ) -> Option<LatencyPercentiles> {
        let v = &mut self.latencies_us;
        if v.is_empty() {
            return None;
        }
        v.sort_unstable();
        let ms = |us: u64| us as f64 / 1000.0;
        let at = |p: f64| ms(nearest_rank(v, p));
        let sum: u128 = v.iter().map(|&u| u128::from(u)).sum();
        Some(LatencyPercentiles {
            sampling_rate,
            transactions: v.len() as u64,
            skipped: self.skipped,
            failed: self.failed,
            min_ms: at(0.0),
            mean_ms: sum as f64 / v.len() as f64 / 1000.0,
            p50_ms: at(50.0),
            p95_ms: at(95.0),
            p99_ms: at(99.0),
            max_ms: at(100.0),
            curve_ms: CURVE.iter().map(|&p| at(p)).collect(),
            files,
        })
    }
}

/// The nearest-rank percentile of sorted, non-empty `v`.
fn nearest_rank(v: &[u64], p: f64) -> u64 {
    let n = v.len();
    let rank = ((p / 100.0) * n as f64).ceil() as usize;
    v[rank.clamp(1, n) - 1]
}

/// A run's percentiles from its gzip-compressed logs (name, bytes).  An
/// error names the file and line; a log with no completed transaction is
/// an error too (the run had transactions: the summary says so).
pub fn percentiles_of_gz(
    files: &[(String, Vec<u8>)],
    sampling_rate: f64,
) -> Result<LatencyPercentiles, String> {
    if files.is_empty() {
        return Err("pgbench wrote no per-transaction log (-l)".into());
    }
    let mut log = TxLog::default();
    for (name, bytes) in files {
        log.read_gz(bytes)
            .map_err(|e| format!("per-transaction log {name}: {e}"))?;
    }
    let names = files.iter().map(|(n, _)| n.clone()).collect();
    log.percentiles(sampling_rate, names).ok_or_else(|| {
        "the per-transaction log holds no completed transaction (with a low sampling_rate and a short run none may be sampled: raise it)".into()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gz(text: &str) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(text.as_bytes()).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn documented_lines_of_12_to_17() {
        // pgbench.sgml, "Per-Transaction Logging", 12–17.
        assert_eq!(
            parse_line("0 199 2241 0 1175850568 995598"),
            Ok(Entry::Done { us: 2241 })
        );
        // -R 100 -L 5: schedule lag, and a skipped transaction.
        assert_eq!(
            parse_line("0 81 4621 0 1412881037 912698 3005"),
            Ok(Entry::Done { us: 4621 })
        );
        assert_eq!(
            parse_line("0 83 skipped 0 1412881037 914578 5217"),
            Ok(Entry::Skipped)
        );
        // 15+: a failed transaction with its retries (--max-tries).
        assert_eq!(
            parse_line("0 0 failed 0 1499414498 84905 9"),
            Ok(Entry::Failed)
        );
        // 15+ --failures-detailed, with schedule lag and retries.
        assert_eq!(
            parse_line("3 12 serialization 0 1650260552 70071 0 2"),
            Ok(Entry::Failed)
        );
        assert_eq!(
            parse_line("1 7 deadlock 1 1650260552 70071"),
            Ok(Entry::Failed)
        );
    }

    #[test]
    fn aggregate_and_broken_lines_are_refused() {
        // 12–14 aggregate, and 15–17's 15 columns.
        for l in [
            "1345828501 5601 1542744 483552416 61 2573",
            "1650260552 5178 26171317 177284491527 1136 44462 2647617 7321113867 0 9866 64 7564 28340 4148 0",
        ] {
            let e = parse_line(l).unwrap_err();
            assert!(e.contains("--aggregate-interval"), "{e}");
        }
        for l in [
            "",
            "0 1 2",
            "0 1 abc 0 1412881037 912698",
            "x 1 2241 0 1175850568 995598",
            "0 1 2241 0 1175850568 995598 lag",
            "0 1 -5 0 1175850568 995598",
        ] {
            assert!(parse_line(l).is_err(), "{l:?} accepted");
        }
    }

    #[test]
    fn exact_nearest_rank_percentiles_over_several_thread_files() {
        // 200 transactions of 1..=200 ms over two thread files, 3 skipped,
        // 1 failed: p50 is the 100th smallest, p95 the 190th, p99 the 198th.
        let mut a = String::new();
        let mut b = String::new();
        for i in 1..=200u64 {
            let line = format!("{} {} {} 0 1700000000 {}\n", i % 4, i, i * 1000, i);
            if i % 2 == 0 {
                a.push_str(&line)
            } else {
                b.push_str(&line)
            }
        }
        a.push_str("0 300 skipped 0 1700000001 5 12000\n0 301 skipped 0 1700000001 6 13000\n");
        b.push_str("1 302 skipped 0 1700000001 7 9000\n\n1 303 failed 0 1700000001 8 2\n");
        let files = vec![
            ("pgbench_log.4242.gz".to_string(), gz(&a)),
            ("pgbench_log.4242.1.gz".to_string(), gz(&b)),
        ];
        let p = percentiles_of_gz(&files, 0.5).unwrap();
        assert_eq!((p.transactions, p.skipped, p.failed), (200, 3, 1));
        assert_eq!(p.sampling_rate, 0.5);
        assert_eq!(
            (p.min_ms, p.p50_ms, p.p95_ms, p.p99_ms, p.max_ms),
            (1.0, 100.0, 190.0, 198.0, 200.0)
        );
        assert!((p.mean_ms - 100.5).abs() < 1e-9);
        assert_eq!(p.curve_ms.len(), CURVE.len());
        assert!(p.curve_ms.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(p.files, ["pgbench_log.4242.gz", "pgbench_log.4242.1.gz"]);
    }

    #[test]
    fn one_transaction_is_every_percentile_and_none_is_an_error() {
        let p =
            percentiles_of_gz(&[("l.gz".into(), gz("0 0 1234 0 1700000000 1\n"))], 1.0).unwrap();
        assert_eq!(
            (p.min_ms, p.p50_ms, p.p99_ms, p.max_ms),
            (1.234, 1.234, 1.234, 1.234)
        );
        let e = percentiles_of_gz(
            &[("l.gz".into(), gz("0 0 skipped 0 1700000000 1 9\n"))],
            1.0,
        )
        .unwrap_err();
        assert!(e.contains("no completed transaction"), "{e}");
        assert!(percentiles_of_gz(&[], 1.0).is_err());
        let e = percentiles_of_gz(&[("bad.gz".into(), b"not gzip".to_vec())], 1.0).unwrap_err();
        assert!(e.starts_with("per-transaction log bad.gz: line 1"), "{e}");
        let e = percentiles_of_gz(
            &[("x.gz".into(), gz("0 0 1 0 1700000000 1\n0 1 oops 0 1 2\n"))],
            1.0,
        )
        .unwrap_err();
        assert!(e.contains("x.gz: line 2: time \"oops\""), "{e}");
    }
}
