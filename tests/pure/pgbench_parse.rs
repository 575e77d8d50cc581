//! The pgbench/psql parsers against real outputs from PostgreSQL 9.4–17
//! (tests/fixtures/pgbench/README.md says where each came from).

use std::path::{Path, PathBuf};

use fsmatrix::generator::{
    parse_init, parse_psql, parse_run, InvalidReason, ProgressClock, PsqlInvalidReason, TpsKind,
};
use proptest::prelude::*;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures")
}

/// (stdout, stderr, exit status) of fixture `dir/name`; a missing part is
/// empty / unknown (published outputs have neither a split nor a status).
fn load(dir: &str, name: &str) -> (String, String, Option<i32>) {
    let base = fixtures().join(dir);
    let read = |ext: &str| std::fs::read_to_string(base.join(format!("{name}.{ext}"))).ok();
    let out = read("stdout").unwrap_or_default();
    let err = read("stderr").unwrap_or_default();
    let exit = read("exit").map(|s| s.trim().parse().expect("exit file holds an integer"));
    assert!(
        !out.is_empty() || !err.is_empty(),
        "fixture {dir}/{name} has no stdout nor stderr"
    );
    (out, err, exit)
}

struct RunCase {
    fixture: &'static str,
    valid: bool,
    reasons: &'static [InvalidReason],
    client_version: Option<&'static str>,
    server_version: Option<&'static str>,
    clients: u32,
    threads: u32,
    scaling_factor: u64,
    duration_s: Option<u64>,
    processed: u64,
    intended: Option<u64>,
    failed: Option<(u64, Option<f64>)>,
    latency_avg_ms: Option<f64>,
    latency_stddev_ms: Option<f64>,
    initial_connection_ms: Option<f64>,
    tps: Option<(&'static str, TpsKind)>,
    tps_lines: usize,
    progress: usize,
    aborted_clients: u32,
}

const UNKNOWN: &[InvalidReason] = &[InvalidReason::ExitStatusUnknown];

fn cases() -> Vec<RunCase> {
    use TpsKind::*;
    vec![
        RunCase {
            fixture: "pgbench/9.4-9.5/custom-prepared-P5",
            valid: false,
            reasons: UNKNOWN,
            client_version: None,
            server_version: None,
            clients: 16,
            threads: 16,
            scaling_factor: 1,
            duration_s: Some(300),
            processed: 720287,
            intended: None,
            failed: None,
            latency_avg_ms: Some(6.663),
            latency_stddev_ms: Some(72.356),
            initial_connection_ms: None,
            tps: Some(("2401.013184", ExcludingConnectionsEstablishing)),
            tps_lines: 2,
            progress: 3,
            aborted_clients: 0,
        },
        RunCase {
            fixture: "pgbench/11/run-P60",
            valid: false,
            reasons: UNKNOWN,
            client_version: None,
            server_version: None,
            clients: 8,
            threads: 1,
            scaling_factor: 1,
            duration_s: Some(3600),
            processed: 2637399,
            intended: None,
            failed: None,
            latency_avg_ms: Some(10.920),
            latency_stddev_ms: Some(3.124),
            initial_connection_ms: None,
            tps: Some(("732.605820", ExcludingConnectionsEstablishing)),
            tps_lines: 2,
            progress: 10,
            aborted_clients: 0,
        },
        RunCase {
            fixture: "pgbench/10/rds-c1-r",
            valid: false,
            reasons: UNKNOWN,
            client_version: None,
            server_version: None,
            clients: 1,
            threads: 1,
            scaling_factor: 1,
            duration_s: Some(20),
            processed: 13,
            intended: None,
            failed: None,
            latency_avg_ms: Some(1601.420),
            latency_stddev_ms: None,
            initial_connection_ms: None,
            tps: Some(("0.666016", ExcludingConnectionsEstablishing)),
            tps_lines: 2,
            progress: 0,
            aborted_clients: 0,
        },
        RunCase {
            // 80 clients > max_connections: no latency, no tps lines; the
            // ≤13 message `connection to database "pgbench" failed:`.
            fixture: "pgbench/10/rds-c80-slots",
            valid: false,
            reasons: &[
                InvalidReason::ExitStatusUnknown,
                InvalidReason::ConnectionFailed,
                InvalidReason::NoSummary,
            ],
            client_version: None,
            server_version: None,
            clients: 80,
            threads: 1,
            scaling_factor: 1,
            duration_s: Some(20),
            processed: 0,
            intended: None,
            failed: None,
            latency_avg_ms: None,
            latency_stddev_ms: None,
            initial_connection_ms: None,
            tps: None,
            tps_lines: 0,
            progress: 0,
            aborted_clients: 0,
        },
        RunCase {
            fixture: "pgbench/12/t-mode",
            valid: false,
            reasons: UNKNOWN,
            client_version: None,
            server_version: None,
            clients: 10,
            threads: 2,
            scaling_factor: 100,
            duration_s: None,
            processed: 100000,
            intended: Some(100000),
            failed: None,
            latency_avg_ms: Some(29.348),
            latency_stddev_ms: None,
            initial_connection_ms: None,
            tps: Some(("340.739787", ExcludingConnectionsEstablishing)),
            tps_lines: 2,
            progress: 0,
            aborted_clients: 0,
        },
        RunCase {
            fixture: "pgbench/13/run-P60-tail",
            valid: false,
            reasons: UNKNOWN,
            client_version: None,
            server_version: None,
            clients: 8,
            threads: 1,
            scaling_factor: 1,
            duration_s: Some(600),
            processed: 448120,
            intended: None,
            failed: None,
            latency_avg_ms: Some(10.710),
            latency_stddev_ms: Some(17.467),
            initial_connection_ms: None,
            tps: Some(("746.837514", ExcludingConnectionsEstablishing)),
            tps_lines: 2,
            progress: 1,
            aborted_clients: 0,
        },
        RunCase {
            fixture: "pgbench/14/run-P60",
            valid: false,
            reasons: UNKNOWN,
            client_version: Some("14.3 (Ubuntu 14.3-1.pgdg20.04+1)"),
            server_version: None,
            clients: 8,
            threads: 1,
            scaling_factor: 1,
            duration_s: Some(600),
            processed: 375498,
            intended: None,
            failed: None,
            latency_avg_ms: Some(12.781),
            latency_stddev_ms: Some(7.471),
            initial_connection_ms: Some(13.957),
            tps: Some(("625.823560", WithoutInitialConnectionTime)),
            tps_lines: 1,
            progress: 10,
            aborted_clients: 0,
        },
        RunCase {
            fixture: "pgbench/14/client-server-differ",
            valid: false,
            reasons: UNKNOWN,
            client_version: Some("14.6"),
            server_version: Some("15.1"),
            clients: 1,
            threads: 1,
            scaling_factor: 1,
            duration_s: None,
            processed: 10000,
            intended: Some(10000),
            failed: None,
            latency_avg_ms: Some(0.062),
            latency_stddev_ms: None,
            initial_connection_ms: Some(3.938),
            tps: Some(("16213.289060", WithoutInitialConnectionTime)),
            tps_lines: 1,
            progress: 0,
            aborted_clients: 0,
        },
        RunCase {
            fixture: "pgbench/16/connect-C",
            valid: false,
            reasons: UNKNOWN,
            client_version: Some("16.0"),
            server_version: None,
            clients: 20,
            threads: 1,
            scaling_factor: 1,
            duration_s: None,
            processed: 2000,
            intended: Some(2000),
            failed: Some((0, Some(0.0))),
            latency_avg_ms: Some(1759.388),
            latency_stddev_ms: None,
            initial_connection_ms: None,
            tps: Some(("11.367589", IncludingReconnectionTimes)),
            tps_lines: 1,
            progress: 0,
            aborted_clients: 0,
        },
        RunCase {
            fixture: "pgbench/17/study-ext4-run1",
            valid: false,
            reasons: UNKNOWN,
            client_version: Some("17.0 dbi services build"),
            server_version: None,
            clients: 4,
            threads: 4,
            scaling_factor: 1000,
            duration_s: Some(900),
            processed: 714533,
            intended: None,
            failed: Some((0, Some(0.0))),
            latency_avg_ms: Some(5.038),
            latency_stddev_ms: None,
            initial_connection_ms: Some(24.493),
            tps: Some(("793.932864", WithoutInitialConnectionTime)),
            tps_lines: 1,
            progress: 0,
            aborted_clients: 0,
        },
        RunCase {
            fixture: "pgbench/15/run-tpcb-P1",
            valid: true,
            reasons: &[],
            client_version: Some("15.18 (Debian 15.18-0+deb12u1)"),
            server_version: None,
            clients: 4,
            threads: 2,
            scaling_factor: 2,
            duration_s: Some(5),
            processed: 9280,
            intended: None,
            failed: Some((0, Some(0.0))),
            latency_avg_ms: Some(2.146),
            latency_stddev_ms: Some(1.843),
            initial_connection_ms: Some(12.094),
            tps: Some(("1856.326714", WithoutInitialConnectionTime)),
            tps_lines: 1,
            progress: 5,
            aborted_clients: 0,
        },
        RunCase {
            fixture: "pgbench/15/run-select-only-t",
            valid: true,
            reasons: &[],
            client_version: Some("15.18 (Debian 15.18-0+deb12u1)"),
            server_version: None,
            clients: 2,
            threads: 2,
            scaling_factor: 2,
            duration_s: None,
            processed: 1000,
            intended: Some(1000),
            failed: Some((0, Some(0.0))),
            latency_avg_ms: Some(0.446),
            latency_stddev_ms: None,
            initial_connection_ms: Some(9.822),
            tps: Some(("4481.170123", WithoutInitialConnectionTime)),
            tps_lines: 1,
            progress: 0,
            aborted_clients: 0,
        },
        RunCase {
            fixture: "pgbench/15/run-connect-C",
            valid: true,
            reasons: &[],
            client_version: Some("15.18 (Debian 15.18-0+deb12u1)"),
            server_version: None,
            clients: 2,
            threads: 1,
            scaling_factor: 2,
            duration_s: Some(3),
            processed: 595,
            intended: None,
            failed: Some((0, Some(0.0))),
            latency_avg_ms: Some(10.093),
            latency_stddev_ms: None,
            initial_connection_ms: None,
            tps: Some(("198.153872", IncludingReconnectionTimes)),
            tps_lines: 1,
            progress: 0,
            aborted_clients: 0,
        },
        RunCase {
            fixture: "pgbench/15/run-serialization-failures",
            valid: true,
            reasons: &[],
            client_version: Some("15.18 (Debian 15.18-0+deb12u1)"),
            server_version: None,
            clients: 8,
            threads: 2,
            scaling_factor: 1,
            duration_s: Some(3),
            processed: 2258,
            intended: None,
            failed: Some((5125, Some(69.416))),
            latency_avg_ms: Some(3.528),
            latency_stddev_ms: Some(1.375),
            initial_connection_ms: Some(17.827),
            tps: Some(("752.739431", WithoutInitialConnectionTime)),
            tps_lines: 1,
            progress: 3,
            aborted_clients: 0,
        },
        RunCase {
            fixture: "pgbench/15/run-aborted",
            valid: false,
            reasons: &[
                InvalidReason::ExitStatus { status: 2 },
                InvalidReason::RunAborted,
                InvalidReason::ClientsAborted { count: 4 },
            ],
            client_version: Some("15.18 (Debian 15.18-0+deb12u1)"),
            server_version: None,
            clients: 4,
            threads: 2,
            scaling_factor: 1,
            duration_s: Some(3),
            processed: 19,
            intended: None,
            failed: Some((0, Some(0.0))),
            latency_avg_ms: Some(2.354),
            latency_stddev_ms: Some(2.936),
            initial_connection_ms: Some(18.041),
            tps: Some(("963.928771", WithoutInitialConnectionTime)),
            tps_lines: 1,
            progress: 0,
            aborted_clients: 4,
        },
        RunCase {
            fixture: "pgbench/15/run-all-aborted-nan",
            valid: false,
            reasons: &[
                InvalidReason::ExitStatus { status: 2 },
                InvalidReason::RunAborted,
                InvalidReason::ClientsAborted { count: 2 },
                InvalidReason::NoSummary,
            ],
            client_version: Some("15.18 (Debian 15.18-0+deb12u1)"),
            server_version: None,
            clients: 2,
            threads: 2,
            scaling_factor: 1,
            duration_s: Some(2),
            processed: 0,
            intended: None,
            failed: Some((0, None)),
            latency_avg_ms: None,
            latency_stddev_ms: None,
            initial_connection_ms: None,
            tps: None,
            tps_lines: 0,
            progress: 0,
            aborted_clients: 2,
        },
        RunCase {
            fixture: "pgbench/15/run-server-killed",
            valid: false,
            reasons: &[
                InvalidReason::ExitStatus { status: 2 },
                InvalidReason::RunAborted,
                InvalidReason::ClientsAborted { count: 2 },
            ],
            client_version: Some("15.18 (Debian 15.18-0+deb12u1)"),
            server_version: None,
            clients: 2,
            threads: 2,
            scaling_factor: 2,
            duration_s: Some(8),
            processed: 7026,
            intended: None,
            failed: Some((0, Some(0.0))),
            latency_avg_ms: Some(0.846),
            latency_stddev_ms: Some(0.973),
            initial_connection_ms: Some(8.448),
            tps: Some(("2354.454278", WithoutInitialConnectionTime)),
            tps_lines: 1,
            progress: 2,
            aborted_clients: 2,
        },
    ]
}

#[test]
fn run_fixtures_parse_to_pinned_values() {
    for c in cases() {
        let (dir, name) = c.fixture.rsplit_once('/').unwrap();
        let (out, err, exit) = load(dir, name);
        let o = parse_run(&out, &err, exit);
        let s = &o.summary;
        let f = c.fixture;
        assert_eq!(o.valid, c.valid, "{f}: valid ({:?})", o.invalid_reasons);
        assert_eq!(o.invalid_reasons, c.reasons, "{f}: reasons");
        assert_eq!(s.client_version.as_deref(), c.client_version, "{f}: client");
        assert_eq!(s.server_version.as_deref(), c.server_version, "{f}: server");
        assert_eq!(s.clients, Some(c.clients), "{f}: clients");
        assert_eq!(s.threads, Some(c.threads), "{f}: threads");
        assert_eq!(s.scaling_factor, Some(c.scaling_factor), "{f}: scale");
        assert_eq!(s.duration_s, c.duration_s, "{f}: duration");
        assert_eq!(
            s.transactions_processed,
            Some(c.processed),
            "{f}: processed"
        );
        assert_eq!(s.transactions_intended, c.intended, "{f}: intended");
        assert_eq!(
            s.failed.as_ref().map(|x| (x.count, x.pct)),
            c.failed,
            "{f}: failed"
        );
        assert_eq!(s.latency_avg_ms, c.latency_avg_ms, "{f}: latency avg");
        assert_eq!(s.latency_stddev_ms, c.latency_stddev_ms, "{f}: stddev");
        assert_eq!(
            s.initial_connection_ms, c.initial_connection_ms,
            "{f}: conn"
        );
        assert_eq!(
            s.tps.as_ref().map(|t| (t.text.as_str(), t.kind)),
            c.tps,
            "{f}: tps"
        );
        if let Some(t) = &s.tps {
            assert_eq!(Some(t.value), t.text.parse().ok(), "{f}: tps value");
        }
        assert_eq!(s.tps_lines.len(), c.tps_lines, "{f}: tps lines");
        assert_eq!(o.progress.len(), c.progress, "{f}: progress samples");
        assert_eq!(o.aborted_clients, c.aborted_clients, "{f}: aborted clients");
        // result.json: serialises, and keeps the tps as printed
        let json = serde_json::to_string(&o).expect("outcome serialises");
        if let Some(t) = &s.tps {
            assert!(
                json.contains(&format!("\"text\":\"{}\"", t.text)),
                "{f}: {json}"
            );
        }
    }
}

/// The same published runs count once their exit status is known to be 0.
#[test]
fn published_runs_are_valid_with_exit_zero() {
    for c in cases().iter().filter(|c| c.reasons == UNKNOWN) {
        let (dir, name) = c.fixture.rsplit_once('/').unwrap();
        let (out, err, _) = load(dir, name);
        let o = parse_run(&out, &err, Some(0));
        assert!(o.valid, "{}: {:?}", c.fixture, o.invalid_reasons);
    }
}

#[test]
fn fifteen_plus_specific_lines() {
    let (out, err, exit) = load("pgbench/15", "run-retries");
    let o = parse_run(&out, &err, exit);
    let s = &o.summary;
    assert!(o.valid);
    assert_eq!(s.max_tries, Some(3));
    assert_eq!(
        s.failed.as_ref().map(|x| (x.count, x.pct)),
        Some((1002, Some(30.926)))
    );
    assert_eq!(
        s.retried.as_ref().map(|x| (x.count, x.pct)),
        Some((2116, Some(65.309)))
    );
    assert_eq!(s.total_retries, Some(3546));
    assert_eq!(o.progress[0].retried, Some(711));
    assert_eq!(o.progress[0].retries, Some(1199));
    assert_eq!(o.progress[0].failed, Some(344));

    let (out, err, exit) = load("pgbench/15", "run-rate-limit");
    let o = parse_run(&out, &err, exit);
    assert_eq!(
        o.summary.skipped.as_ref().map(|x| (x.count, x.pct)),
        Some((5, Some(0.758)))
    );
    assert_eq!(o.progress[1].lag_ms, Some(0.148));
    assert_eq!(o.progress[1].skipped, Some(4));
    // `rate` and `latency_limit`: the schedule lag and the late transactions.
    assert_eq!(o.summary.schedule_lag_avg_ms, Some(0.128));
    assert_eq!(o.summary.schedule_lag_max_ms, Some(2.753));
    assert_eq!(o.summary.late, Some(24));
    assert_eq!(
        o.summary.tps.as_ref().map(|t| t.text.as_str()),
        Some("219.232112")
    );

    let (out, err, exit) = load("pgbench/15", "run-progress-timestamp");
    let o = parse_run(&out, &err, exit);
    assert_eq!(o.progress.len(), 2);
    assert!(o.progress.iter().all(|p| p.clock == ProgressClock::Epoch));
    assert_eq!(o.progress[0].t_s, 1796022534.269);
    assert_eq!(o.progress[0].tps, 4071.7);

    let (out, err, exit) = load("pgbench/15", "run-tpcb-P1");
    let o = parse_run(&out, &err, exit);
    let p = &o.progress[0];
    assert_eq!(p.clock, ProgressClock::Elapsed);
    assert_eq!(
        (p.t_s, p.tps, p.lat_ms, p.stddev_ms, p.failed),
        (1.0, 1788.9, Some(2.203), Some(1.797), Some(0))
    );
}

#[test]
fn connection_failure_is_invalid_with_reason() {
    let (out, err, exit) = load("pgbench/15", "run-no-server");
    let o = parse_run(&out, &err, exit);
    assert!(!o.valid);
    assert_eq!(
        o.invalid_reasons,
        [
            InvalidReason::ExitStatus { status: 1 },
            InvalidReason::ConnectionFailed,
            InvalidReason::NoSummary
        ]
    );
    assert_eq!(
        o.invalid_reasons[0].to_string(),
        "pgbench exited with status 1; expected 0"
    );
}

/// Every run fixture: each parsed tps string is the number in the raw text.
#[test]
fn every_parsed_tps_is_the_raw_substring() {
    let mut checked = 0;
    for dir in std::fs::read_dir(fixtures().join("pgbench")).unwrap() {
        let dir = dir.unwrap().path();
        if !dir.is_dir() {
            continue;
        }
        for f in std::fs::read_dir(&dir).unwrap() {
            let f = f.unwrap().path();
            let name = f.file_name().unwrap().to_str().unwrap().to_string();
            let Some(stem) = name.strip_suffix(".stdout") else {
                continue;
            };
            let v = dir.file_name().unwrap().to_str().unwrap().to_string();
            let (out, err, exit) = load(&format!("pgbench/{v}"), stem);
            let o = parse_run(&out, &err, exit);
            let raw_tps_lines = out
                .lines()
                .filter(|l| l.trim_start().starts_with("tps = "))
                .count();
            assert_eq!(o.summary.tps_lines.len(), raw_tps_lines, "{v}/{stem}");
            for t in &o.summary.tps_lines {
                assert!(
                    out.contains(&format!("tps = {} (", t.text)),
                    "{v}/{stem}: {}",
                    t.text
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 15, "only {checked} tps lines checked");
}

#[test]
fn init_fixtures() {
    // 13+ summary, client side
    let (out, err, _) = load("pgbench/17", "study-ext4-init");
    let o = parse_init(&out, &err);
    assert!(o.completed);
    assert_eq!(o.total_s, Some(382.58));
    let names: Vec<&str> = o.phases.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "drop tables",
            "create tables",
            "client-side generate",
            "vacuum",
            "primary keys"
        ]
    );
    assert_eq!(o.phase("client-side generate"), Some(200.98));
    assert_eq!(o.phase("primary keys"), Some(174.48));

    // server side
    let (out, err, exit) = load("pgbench/15", "init-server-side");
    assert_eq!(exit, Some(0));
    let o = parse_init(&out, &err);
    assert_eq!(o.phase("server-side generate"), Some(0.16));
    assert_eq!(o.phase("client-side generate"), None);
    assert!(o.progress.is_empty());

    // progress lines, no table name (≤16)
    let (out, err, _) = load("pgbench/15", "init-s2");
    let o = parse_init(&out, &err);
    assert_eq!(o.total_s, Some(0.86));
    assert_eq!(o.progress.len(), 2);
    let p = &o.progress[1];
    assert_eq!(
        (
            p.done,
            p.total,
            p.elapsed_s,
            p.remaining_s,
            p.table.as_deref()
        ),
        (200000, 200000, Some(0.51), Some(0.0), None)
    );

    // \r line endings from a terminal
    let (out, err, _) = load("pgbench/15", "init-s3-pty");
    assert!(err.contains('\r'));
    let o = parse_init(&out, &err);
    assert!(o.completed);
    assert_eq!(o.progress.len(), 3);
    assert_eq!(o.progress[2].done, 300000);
    assert_eq!(o.phase("vacuum"), Some(0.06));

    // 17: table name in progress lines
    let (out, err, _) = load("pgbench/17", "init-q-tablename");
    let o = parse_init(&out, &err);
    assert_eq!(o.progress.len(), 1);
    assert_eq!(o.progress[0].table.as_deref(), Some("pgbench_accounts"));
    assert_eq!(o.progress[0].elapsed_s, Some(0.10));
    assert_eq!(o.total_s, Some(0.29));

    // ≤12: no summary, only "done."
    let (out, err, _) = load("pgbench/11", "init-done");
    let o = parse_init(&out, &err);
    assert!(o.completed);
    assert_eq!(o.total_s, None);
    assert!(o.phases.is_empty());
    assert_eq!(o.progress.len(), 1);
    assert_eq!(o.progress[0].total, 100000);

    // an aborted run is not a completed init
    let (out, err, _) = load("pgbench/15", "run-no-server");
    assert!(!parse_init(&out, &err).completed);
}

/// 10–13 print both tps lines; the "excluding" one is the figure kept.
#[test]
fn ten_to_thirteen_two_tps_lines() {
    use TpsKind::*;
    for (dir, name, incl, excl) in [
        ("pgbench/10", "rds-c1-r", "0.624446", "0.666016"),
        ("pgbench/12", "t-mode", "340.734481", "340.739787"),
        ("pgbench/13", "run-P60-tail", "746.834296", "746.837514"),
    ] {
        let (out, err, exit) = load(dir, name);
        let o = parse_run(&out, &err, exit);
        let got: Vec<(&str, TpsKind)> = o
            .summary
            .tps_lines
            .iter()
            .map(|t| (t.text.as_str(), t.kind))
            .collect();
        assert_eq!(
            got,
            [
                (incl, IncludingConnectionsEstablishing),
                (excl, ExcludingConnectionsEstablishing)
            ],
            "{dir}/{name}"
        );
        assert_eq!(
            o.summary.client_version, None,
            "{dir}/{name}: no banner before 14"
        );
        assert_eq!(o.summary.initial_connection_ms, None, "{dir}/{name}");
    }
    // 13's -P line has the ≤14 form (no `, 0 failed`).
    let (out, err, _) = load("pgbench/13", "run-P60-tail");
    let o = parse_run(&out, &err, Some(0));
    assert!(o.valid, "{:?}", o.invalid_reasons);
    let p = &o.progress[0];
    assert_eq!(p.clock, ProgressClock::Elapsed);
    assert_eq!(
        (p.t_s, p.tps, p.lat_ms, p.stddev_ms, p.failed),
        (600.0, 296.9, Some(26.934), Some(14.317), None)
    );
    // A connection failure stays invalid even with exit status 0.
    let (out, err, _) = load("pgbench/10", "rds-c80-slots");
    let o = parse_run(&out, &err, Some(0));
    assert!(!o.valid);
    assert!(
        o.invalid_reasons.contains(&InvalidReason::ConnectionFailed),
        "{:?}",
        o.invalid_reasons
    );
}

#[test]
fn init_fixtures_10_12_13() {
    // 13: the first `done in` summary (client-side generate).
    let (out, err, _) = load("pgbench/13", "init-done");
    let o = parse_init(&out, &err);
    assert!(o.completed);
    assert_eq!(o.total_s, Some(0.44));
    let phases: Vec<(&str, f64)> = o
        .phases
        .iter()
        .map(|p| (p.name.as_str(), p.seconds))
        .collect();
    assert_eq!(
        phases,
        [
            ("drop tables", 0.00),
            ("create tables", 0.01),
            ("client-side generate", 0.29),
            ("vacuum", 0.08),
            ("primary keys", 0.07)
        ]
    );
    assert_eq!(o.progress.len(), 1);
    let p = &o.progress[0];
    assert_eq!(
        (
            p.done,
            p.total,
            p.elapsed_s,
            p.remaining_s,
            p.table.as_deref()
        ),
        (100000, 100000, Some(0.10), Some(0.0), None)
    );

    // 12: no summary, `done.` after a long tail of progress lines.
    let (out, err, _) = load("pgbench/12", "init-tail-s20000");
    let o = parse_init(&out, &err);
    assert!(o.completed);
    assert_eq!(o.total_s, None);
    assert!(o.phases.is_empty());
    assert_eq!(o.progress.len(), 7);
    let (first, last) = (&o.progress[0], &o.progress[6]);
    assert_eq!(
        (first.done, first.elapsed_s, first.remaining_s),
        (1999400000, Some(11030.34), Some(3.31))
    );
    assert_eq!(
        (last.done, last.total, last.elapsed_s, last.remaining_s),
        (2000000000, 2000000000, Some(11033.28), Some(0.0))
    );

    // 10: the pre-11 step messages (`vacuum...`, `set primary keys...`), `done.`
    let (out, err, _) = load("pgbench/10", "init-rds");
    let o = parse_init(&out, &err);
    assert!(o.completed);
    assert_eq!(o.total_s, None);
    assert!(o.phases.is_empty());
    assert_eq!(o.progress.len(), 1);
    assert_eq!(
        (
            o.progress[0].done,
            o.progress[0].total,
            o.progress[0].elapsed_s
        ),
        (100000, 100000, Some(1.12))
    );
}

#[test]
fn psql_fixtures() {
    let (out, _err, exit) = load("psql/15", "dataload");
    let o = parse_psql(&out, exit);
    assert!(o.valid, "{:?}", o.invalid_reasons);
    let got: Vec<(&str, &str)> = o
        .statements
        .iter()
        .map(|s| (s.statement.lines().next().unwrap_or(""), s.ms_text.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("drop database if exists dataload;", "0.231"),
            ("create database dataload;", "46.209"),
            ("create table dataload ( a bigint", "6.240"),
            ("with", "423.505"),
            ("select count(*) from dataload;", "13.312"),
            ("select pg_sleep(1.1);", "1100.547"),
            (
                "select pg_size_pretty(pg_relation_size('dataload'));",
                "4.194"
            ),
        ]
    );
    assert!(o.statements[3].statement.contains("insert into dataload"));
    assert!(o.statements[3]
        .statement
        .ends_with("from data_generator_num;"));
    for s in &o.statements {
        assert!(out.contains(&format!("Time: {} ms", s.ms_text)));
    }

    let (out, _err, exit) = load("psql/15", "error");
    let o = parse_psql(&out, exit);
    assert!(!o.valid);
    assert_eq!(
        o.invalid_reasons,
        [PsqlInvalidReason::ExitStatus { status: 3 }]
    );
    assert_eq!(o.statements.len(), 2);
    assert_eq!(o.statements[1].statement, "select * from no_such_table;");
}

proptest! {
    #[test]
    fn parsers_never_panic(out in ".{0,400}", err in ".{0,400}", code in proptest::option::of(-5i32..300)) {
        let _ = parse_run(&out, &err, code);
        let _ = parse_init(&out, &err);
        let _ = parse_psql(&out, code);
    }

    #[test]
    fn parsers_never_panic_on_pgbench_like_lines(
        lines in proptest::collection::vec(
            (prop_oneof![
                Just("tps ="), Just("progress:"), Just("latency average"), Just("done in "),
                Just("number of failed transactions:"), Just("pgbench ("), Just("Time: "),
                Just("number of transactions actually processed:"), Just("client "),
            ], "[ 0-9.,:=()%/a-z\\r-]{0,40}"),
            0..20)
    ) {
        let text: String = lines.iter().map(|(p, r)| format!("{p}{r}\n")).collect();
        let o = parse_run(&text, &text, Some(0));
        for t in &o.summary.tps_lines {
            prop_assert!(text.contains(&t.text));
        }
        let _ = parse_init(&text, "");
        let _ = parse_psql(&text, Some(0));
    }
}

/// `-r` (`per_statement`): the statement latencies of PostgreSQL 10 (one
/// column) and 15 (failures and retries), in script order.
#[test]
fn per_statement_latencies_of_10_and_15() {
    let (out, err, _) = load("pgbench/10", "rds-c1-r");
    let o = parse_run(&out, &err, Some(0));
    let got: Vec<(u32, f64, &str)> = o
        .statements
        .iter()
        .map(|s| (s.script, s.latency_ms, s.command.as_str()))
        .collect();
    assert_eq!(got.len(), 11, "{got:?}");
    assert_eq!(got[0], (0, 0.011, "\\set aid random(1, 100000 * :scale)"));
    assert_eq!(got[4], (0, 213.795, "BEGIN;"));
    assert_eq!(
        got[9],
        (
            0,
            214.306,
            "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);"
        )
    );
    assert_eq!(got[10], (0, 214.961, "END;"));
    assert!(o
        .statements
        .iter()
        .all(|s| s.failures.is_none() && s.retries.is_none()));

    let (out, err, exit) = load("pgbench/15", "run-retries");
    let o = parse_run(&out, &err, exit);
    let got: Vec<(f64, Option<u64>, Option<u64>, &str)> = o
        .statements
        .iter()
        .map(|s| (s.latency_ms, s.failures, s.retries, s.command.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            (0.001, Some(0), Some(0), "\\set aid random(1, 3)"),
            (
                0.213,
                Some(0),
                Some(0),
                "BEGIN ISOLATION LEVEL SERIALIZABLE;"
            ),
            (
                0.307,
                Some(0),
                Some(0),
                "SELECT abalance FROM pgbench_accounts WHERE aid = :aid;"
            ),
            (
                0.301,
                Some(1002),
                Some(3546),
                "UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid = :aid;"
            ),
            (2.559, Some(0), Some(0), "SELECT pg_sleep(0.001);"),
            (0.312, Some(0), Some(0), "END;"),
        ]
    );
    // Runs without -r have none.
    let (out, err, exit) = load("pgbench/15", "run-tpcb-P1");
    assert!(parse_run(&out, &err, exit).statements.is_empty());
}

/// 15+ without --max-tries (`… and failures:`, one count column), and two
/// scripts (`SQL script N:` blocks, ` - statement latencies …`).
#[test]
fn per_statement_latencies_of_failures_only_and_several_scripts() {
    let out = "tps = 812.5 (without initial connection time)\n\
statement latencies in milliseconds and failures:\n\
         0.002           0  \\set aid random(1, 100000 * :scale)\n\
         1.098         320  UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;\n";
    let o = parse_run(out, "", Some(0));
    let got: Vec<_> = o
        .statements
        .iter()
        .map(|s| (s.latency_ms, s.failures, s.retries))
        .collect();
    assert_eq!(got, [(0.002, Some(0), None), (1.098, Some(320), None)]);
    assert_eq!(
        o.statements[1].command,
        "UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;"
    );
    let out = "tps = 100.0 (without initial connection time)\n\
SQL script 1: <builtin: TPC-B (sort of)>\n\
 - weight: 1 (targets 50.0% of total)\n\
 - 1000 transactions (50.0% of total, tps = 50.0)\n\
 - statement latencies in milliseconds and failures:\n\
         0.300           0  BEGIN;\n\
SQL script 2: <builtin: select only>\n\
 - weight: 1 (targets 50.0% of total)\n\
 - statement latencies in milliseconds and failures:\n\
         0.100           0  SELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n";
    let o = parse_run(out, "", Some(0));
    let got: Vec<_> = o
        .statements
        .iter()
        .map(|s| (s.script, s.latency_ms))
        .collect();
    assert_eq!(got, [(0, 0.3), (1, 0.1)]);
    assert!(o.valid);
}
