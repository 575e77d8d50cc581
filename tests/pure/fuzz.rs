//! Fuzz / property tests of untrusted input: arbitrary bytes and
//! mutations of real input fed to every reader of untrusted text — the
//! inventory and matrix loaders (and the cross-file check and plan), the
//! pgbench and psql parsers, the facts parser, and the bundle readers
//! (`verify`, the manifest and journal readers, `report`'s loader and
//! renderers, `Bundle::open`).  Each case must end without a panic, within a
//! generous time bound (a hang fails the case), and an error must be an
//! error with a message.
//!
//! Cases per property: 256 by default (a few seconds for the whole file in a
//! debug build on a small machine); `FSMATRIX_FUZZ_CASES=5000 cargo test
//! --test pure fuzz` for a longer hunt.
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use fsmatrix::config::{Inventory, Length, Matrix};
use fsmatrix::generator::measures::{init_timings, measure_pgbench, measure_psql};
use fsmatrix::generator::{parse_init, parse_psql, parse_run};
use fsmatrix::plan::{plan, render};
use fsmatrix::results::bundle::read::load_bundle_results;
use fsmatrix::results::bundle::{journal, manifest};
use fsmatrix::results::report::csv::render_csv;
use fsmatrix::results::report::json::render_json;
use fsmatrix::results::report::markdown::render_markdown_report;
use fsmatrix::results::report::{build_report, html, ReportOptions, Source};
use fsmatrix::results::{verify, Bundle, SweepStatus};
use fsmatrix::run::facts::{HostFacts, Kv};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

use super::bundle_common;

/// A case that takes longer than this is a hang.  Generous: a debug build
/// on a loaded two-core machine; real cases take milliseconds.
const BOUND: Duration = Duration::from_secs(30);

fn cases() -> u32 {
    std::env::var("FSMATRIX_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256)
}

fn runner() -> TestRunner {
    TestRunner::new(Config {
        cases: cases(),
        // A hang costs BOUND per shrink step: keep shrinking short.
        max_shrink_iters: 64,
        failure_persistence: None,
        ..Config::default()
    })
}

/// Run `f` on its own thread: its panic is this case's failure, and so is
/// not finishing within [`BOUND`] (the thread is then left behind).
fn bounded<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    let h = std::thread::Builder::new()
        .name(format!("fuzz {what}"))
        .spawn(move || {
            let _ = tx.send(f());
        })
        .expect("spawn");
    match rx.recv_timeout(BOUND) {
        Ok(v) => {
            let _ = h.join();
            v
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => match h.join() {
            Err(p) => std::panic::resume_unwind(p),
            Ok(()) => unreachable!("the thread sends before it ends"),
        },
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("{what}: no answer within {BOUND:?}"),
    }
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Every file of `dir` (recursively) whose name passes `keep`.
fn corpus(dir: &Path, keep: &dyn Fn(&Path) -> bool) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        let mut paths: Vec<PathBuf> = rd.filter_map(Result::ok).map(|e| e.path()).collect();
        paths.sort();
        for p in paths {
            if p.is_dir() {
                stack.push(p);
            } else if keep(&p) {
                out.push(std::fs::read(&p).expect("read corpus file"));
            }
        }
    }
    assert!(!out.is_empty(), "no corpus under {}", dir.display());
    out
}

/// Text that has broken parsers before, or that a careless parser breaks on.
const TOKENS: &[&str] = &[
    "\0",
    "\n",
    "\r\n",
    "\t",
    " ",
    "=",
    "\"",
    "'",
    "'''",
    "\"\"\"",
    "\\",
    "\\u0000",
    "[",
    "]",
    "[[",
    "]]",
    "{",
    "}",
    ",",
    ".",
    ":",
    "#",
    "-",
    "%",
    "(",
    ")",
    "0",
    "-0",
    "-1",
    "1e999",
    "-1e999",
    "1e-999",
    "NaN",
    "nan",
    "inf",
    "-inf",
    "+inf",
    "4294967295",
    "4294967296",
    "18446744073709551615",
    "18446744073709551616",
    "9223372036854775807",
    "-9223372036854775808",
    "99999999999999999999999999999999999999",
    "0x7fffffffffffffff",
    "0xffffffffffffffff",
    "0o777",
    "0b1",
    "1_000",
    "1979-05-27T07:32:00Z",
    "true",
    "é",
    "\u{202e}",
    "\u{feff}",
    "\u{fffd}",
    "\u{10ffff}",
    "🦀",
    "ǅ",
    "İ",
    "ß",
    "$(id)",
    "; rm -rf / #",
    "../../../../etc/passwd",
    "/dev/zero",
    "%s%n",
    "tps = ",
    "progress: ",
    "latency average = ",
    "number of transactions actually processed: ",
    "Time: ",
    " ms",
    " s, ",
    "sha256",
    "data/",
    "data/../bagit.txt",
    "/etc/passwd",
    "{\"state\":\"done\"",
    "\"tps\":",
];

/// One edit of a byte string.
#[derive(Debug, Clone)]
enum Edit {
    /// Flip a byte at a position (a fraction of the length).
    Byte(f64, u8),
    Insert(f64, &'static str),
    Delete(f64, usize),
    /// Repeat a slice several times (long lines, repeated tables).
    Repeat(f64, usize, usize),
    Truncate(f64),
    /// Swap a digit run for a huge or odd number.
    Number(f64, &'static str),
    /// Swap the value of the next `key = value` line for a token.
    Value(f64, &'static str),
}

fn edit() -> impl Strategy<Value = Edit> {
    let at = 0.0..1.0f64;
    let token = proptest::sample::select(TOKENS);
    prop_oneof![
        (at.clone(), any::<u8>()).prop_map(|(a, b)| Edit::Byte(a, b)),
        (at.clone(), token.clone()).prop_map(|(a, t)| Edit::Insert(a, t)),
        (at.clone(), 1..64usize).prop_map(|(a, n)| Edit::Delete(a, n)),
        (at.clone(), 1..48usize, 2..64usize).prop_map(|(a, n, k)| Edit::Repeat(a, n, k)),
        at.clone().prop_map(Edit::Truncate),
        (at.clone(), token.clone()).prop_map(|(a, t)| Edit::Number(a, t)),
        (at, token).prop_map(|(a, t)| Edit::Value(a, t)),
    ]
}

fn pos(len: usize, at: f64) -> usize {
    ((len as f64) * at) as usize % (len + 1)
}

fn apply(mut b: Vec<u8>, edits: &[Edit]) -> Vec<u8> {
    for e in edits {
        let len = b.len();
        match *e {
            Edit::Byte(at, v) if len > 0 => {
                let i = pos(len - 1, at);
                b[i] = v;
            }
            Edit::Byte(..) => b.push(0),
            Edit::Insert(at, t) => {
                let i = pos(len, at);
                b.splice(i..i, t.bytes());
            }
            Edit::Delete(at, n) => {
                let i = pos(len, at);
                let j = (i + n).min(len);
                b.drain(i..j);
            }
            Edit::Repeat(at, n, k) => {
                let i = pos(len, at);
                let j = (i + n).min(len);
                let s = b[i..j].to_vec();
                for _ in 0..k {
                    b.splice(j..j, s.iter().copied());
                }
            }
            Edit::Truncate(at) => b.truncate(pos(len, at)),
            Edit::Number(at, t) => {
                let i = pos(len, at);
                if let Some(d) = b[i..].iter().position(u8::is_ascii_digit) {
                    let s = i + d;
                    let e = b[s..]
                        .iter()
                        .position(|c| !c.is_ascii_digit() && *c != b'.')
                        .map_or(len, |n| s + n);
                    b.splice(s..e, t.bytes());
                }
            }
            Edit::Value(at, t) => {
                let i = pos(len, at);
                if let Some(eq) = b[i..].windows(3).position(|w| w == b" = ") {
                    let s = i + eq + 3;
                    let e = b[s..]
                        .iter()
                        .position(|c| *c == b'\n')
                        .map_or(len, |n| s + n);
                    b.splice(s..e, t.bytes());
                }
            }
        }
    }
    b
}

/// A seed from `corpus` with up to `n` edits, or plain random bytes.
fn mutated(corpus: Vec<Vec<u8>>, n: usize) -> impl Strategy<Value = Vec<u8>> {
    let seeds = proptest::sample::select(corpus);
    prop_oneof![
        8 => (seeds, proptest::collection::vec(edit(), 0..n)).prop_map(|(s, e)| apply(s, &e)),
        1 => proptest::collection::vec(any::<u8>(), 0..2048),
        1 => "\\PC{0,512}".prop_map(String::into_bytes),
    ]
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// TOML a parser might recurse on: deep arrays, inline tables, dotted keys,
/// tables of arrays; at depths around and past any sane limit.
fn deep_toml() -> impl Strategy<Value = String> {
    (0..4usize, 1..20_000usize, any::<bool>()).prop_map(|(kind, depth, close)| {
        let (open, shut) = match kind {
            0 => ("[".repeat(depth), "]".repeat(depth)),
            1 => ("{a=".repeat(depth), "}".repeat(depth)),
            2 => (format!("{}=1", vec!["a"; depth].join(".")), String::new()),
            _ => ("[{a=".repeat(depth), "}]".repeat(depth)),
        };
        match kind {
            2 => format!("name = \"x\"\n{open}\n"),
            _ if close => format!("name = \"x\"\nrepeats = {open}1{shut}\n"),
            _ => format!("name = \"x\"\nrepeats = {open}\n"),
        }
    })
}

fn inventory_corpus() -> Vec<Vec<u8>> {
    corpus(&repo().join("inventory"), &|p| {
        p.extension().is_some_and(|e| e == "toml")
    })
}

fn matrix_corpus() -> Vec<Vec<u8>> {
    corpus(&repo().join("matrix"), &|p| {
        p.extension().is_some_and(|e| e == "toml")
    })
}

/// Inventory, matrix, cross-check, plan and its rendering: whatever comes
/// back, no panic and no hang; an error lists at least one message.
fn load_and_plan(inv: String, mat: String) {
    // Scripts named by a matrix are looked up beside the real examples.
    let mpath = repo().join("matrix").join("fuzz.toml");
    let ipath = repo().join("inventory").join("fuzz.toml");
    bounded("inventory + matrix + plan", move || {
        let inv = Inventory::parse(&ipath, inv);
        let m = Matrix::parse(&mpath, mat);
        for e in [inv.as_ref().err(), m.as_ref().err()].into_iter().flatten() {
            assert!(!e.0.is_empty(), "an empty error list");
            assert!(!e.to_string().trim().is_empty());
        }
        if let (Ok(inv), Ok(m)) = (inv, m) {
            match m.check_against(&inv, fsmatrix::generator::script_uses) {
                Ok(()) => {
                    let p = plan(&inv, &m);
                    let _ = render(&p);
                }
                Err(e) => assert!(!e.0.is_empty(), "an empty error list"),
            }
        }
    });
}

#[test]
fn inventories_and_matrices_never_panic_or_hang() {
    let inv = inventory_corpus();
    let mat = matrix_corpus();
    let mut r = runner();
    // A mutated inventory with a valid matrix, and the other way round, so
    // that the cross-file check and the plan are reached often.
    r.run(
        &(
            mutated(inv.clone(), 12),
            proptest::sample::select(mat.clone()),
        ),
        |(i, m)| {
            load_and_plan(text(&i), text(&m));
            Ok(())
        },
    )
    .unwrap();
    r.run(
        &(proptest::sample::select(inv.clone()), mutated(mat, 12)),
        |(i, m)| {
            load_and_plan(text(&i), text(&m));
            Ok(())
        },
    )
    .unwrap();
    r.run(&deep_toml(), |t| {
        load_and_plan(t.clone(), t);
        Ok(())
    })
    .unwrap();
}

#[test]
fn pgbench_psql_and_facts_parsers_never_panic_or_hang() {
    let fixtures = repo().join("tests/fixtures");
    let outs = corpus(&fixtures, &|p| {
        p.extension()
            .is_some_and(|e| e == "stdout" || e == "stderr" || e == "out")
    });
    let status = prop_oneof![Just(None), any::<i32>().prop_map(Some)];
    let length = prop_oneof![
        any::<u64>().prop_map(Length::Seconds),
        any::<u64>().prop_map(Length::Transactions),
        any::<u64>().prop_map(|s| Length::ToCompletion { estimate_secs: s }),
    ];
    let mut r = runner();
    r.run(
        &(mutated(outs.clone(), 16), mutated(outs, 8), status, length),
        |(out, err, status, length)| {
            let (out, err) = (text(&out), text(&err));
            bounded("pgbench/psql/facts parsers", move || {
                let run = parse_run(&out, &err, status);
                let _ = format!("{run:?}");
                let _ = parse_init(&out, &err);
                let _ = parse_init(&err, &out);
                let _ = parse_psql(&out, status);
                for m in [
                    measure_pgbench(&out, &err, status, length),
                    measure_psql(&out, status, Some(1000.0)),
                    measure_psql(&out, status, None),
                ] {
                    if let Ok(run) = &m.measures {
                        assert_eq!(run.non_finite_field(), None, "{run:?}");
                    }
                }
                let _ = init_timings(&out, &err);
                let kv = Kv::parse(&out);
                let facts = HostFacts::parse(&kv);
                let _ = facts.postgres_release();
                let _ = kv.to_text();
            });
            Ok(())
        },
    )
    .unwrap();
}

/// A real bundle (the fixture writer's), written once per test.
fn real_bundle(tmp: &Path) -> PathBuf {
    bundle_common::make_bundle(tmp, SweepStatus::Complete)
}

fn files_of(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        let mut paths: Vec<PathBuf> = std::fs::read_dir(&d)
            .unwrap()
            .filter_map(Result::ok)
            .map(|e| e.path())
            .collect();
        paths.sort();
        for p in paths {
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p.strip_prefix(root).unwrap().to_path_buf());
            }
        }
    }
    out
}

fn copy_tree(from: &Path, to: &Path) {
    for rel in files_of(from) {
        let dst = to.join(&rel);
        std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
        std::fs::copy(from.join(&rel), dst).unwrap();
    }
}

/// What is done to one file of a bundle copy.
#[derive(Debug, Clone)]
enum Damage {
    Edit(Vec<Edit>),
    Random(Vec<u8>),
    Empty,
    Remove,
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        6 => proptest::collection::vec(edit(), 1..8).prop_map(Damage::Edit),
        2 => proptest::collection::vec(any::<u8>(), 0..512).prop_map(Damage::Random),
        1 => Just(Damage::Empty),
        1 => Just(Damage::Remove),
    ]
}

/// Every reader of a bundle over `dir`, in a bounded thread: verify, the
/// manifest and journal readers, report's loader and every renderer, and
/// last `Bundle::open` (it writes: it truncates a torn journal tail and
/// appends `reopened`).
fn read_bundle(dir: PathBuf) {
    bounded("bundle readers", move || {
        match verify(&dir) {
            Ok(r) => {
                for p in &r.problems {
                    assert!(!p.to_string().is_empty());
                }
            }
            Err(e) => assert!(!e.to_string().is_empty()),
        }
        for f in ["manifest-sha256.txt", "tagmanifest-sha256.txt"] {
            if let Ok(b) = std::fs::read(dir.join(f)) {
                let _ = manifest::parse(&String::from_utf8_lossy(&b));
            }
        }
        let _ = journal::read(&dir.join("journal.jsonl"));
        // `fsmatrix ls`: listed, readable or with why, never a panic.
        let s = fsmatrix::results::bundle::listing::summarize(
            &dir,
            fsmatrix::results::bundle::listing::BundleKind::Folder,
        );
        let _ =
            fsmatrix::results::bundle::listing::render_table(std::slice::from_ref(&s), &dir, 100);
        let _ = s.json();
        match load_bundle_results(&dir) {
            Ok(cells) => {
                let src = [Source {
                    name: "b",
                    cells: &cells,
                }];
                if let Ok(r) = build_report(&src, &ReportOptions::default()) {
                    let _ = render_markdown_report(&r);
                    let _ = render_csv(&r);
                    let _ = render_json(&r);
                    let _ = html::render_html(&r, &cells);
                }
            }
            Err(e) => assert!(!e.to_string().is_empty()),
        }
        if let Err(e) = Bundle::open(&dir) {
            assert!(!e.to_string().is_empty());
        }
    });
}

#[test]
fn damaged_bundles_never_panic_or_hang() {
    let tmp = tempfile::tempdir().unwrap();
    let real = real_bundle(tmp.path());
    let files = files_of(&real);
    let work = tempfile::tempdir().unwrap();
    let n = std::sync::atomic::AtomicUsize::new(0);
    let mut r = runner();
    r.run(
        &proptest::collection::vec((proptest::sample::select(files), damage()), 1..4),
        |damages| {
            let dir = work.path().join(
                n.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                    .to_string(),
            );
            copy_tree(&real, &dir);
            for (rel, d) in &damages {
                let p = dir.join(rel);
                match d {
                    Damage::Edit(e) => {
                        let b = std::fs::read(&p).unwrap_or_default();
                        std::fs::write(&p, apply(b, e)).unwrap();
                    }
                    Damage::Random(b) => std::fs::write(&p, b).unwrap(),
                    Damage::Empty => std::fs::write(&p, b"").unwrap(),
                    Damage::Remove => {
                        let _ = std::fs::remove_file(&p);
                    }
                }
            }
            read_bundle(dir.clone());
            std::fs::remove_dir_all(&dir).map_err(|e| TestCaseError::fail(e.to_string()))?;
            Ok(())
        },
    )
    .unwrap();
}

/// A matrix's script may name anything: only a regular file of bounded size
/// is read; a FIFO, a device or a folder is an error at once, not a hang.
#[test]
fn a_matrix_script_that_is_not_a_regular_file_is_refused_without_blocking() {
    let tmp = tempfile::tempdir().unwrap();
    let fifo = tmp.path().join("fifo.sql");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    assert!(made.success());
    let base = std::fs::read_to_string(repo().join("matrix/zfs-compression.toml")).unwrap();
    for (script, says) in [
        (fifo.to_str().unwrap(), "a FIFO"),
        ("/dev/zero", "a character device"),
        ("/dev/null", "a character device"),
        (tmp.path().to_str().unwrap(), "a folder"),
    ] {
        for key in ["sql_script", "pgbench_script"] {
            let m = base.replace(
                "sql_script = \"sql/dataload.sql\"",
                &format!("{key} = {script:?}"),
            );
            let path = repo().join("matrix").join("fuzz.toml");
            let err = bounded("matrix with a special script", move || {
                Matrix::parse(&path, m).map(|_| ()).unwrap_err().to_string()
            });
            assert!(err.contains(says), "{script}: {err}");
        }
    }
}

/// tps values a bundle may hold (finite, as the loader requires): zero,
/// negative, tiny, huge, equal.  Statistics over them never put NaN or inf
/// into a report: what cannot be computed is left out.
fn odd_tps() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(0.0),
        Just(-0.0),
        Just(-1.0),
        Just(f64::MIN_POSITIVE),
        Just(5e-324),
        Just(1e-300),
        Just(1e300),
        Just(f64::MAX),
        Just(-f64::MAX),
        Just(812.5),
        (-1e6..1e6f64),
        any::<f64>().prop_filter("finite", |v| v.is_finite()),
    ]
}

fn has_non_finite(text: &str) -> bool {
    let words = |w: &str| {
        text.match_indices(w).any(|(i, _)| {
            let before = text[..i].chars().next_back();
            let after = text[i + w.len()..].chars().next();
            !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
        })
    };
    words("NaN") || words("inf") || words("Infinity")
}

#[test]
fn statistics_never_put_nan_or_inf_into_a_report() {
    use fsmatrix::model::{CellStatus, RunMeasures};
    let group = (
        0..3usize,
        proptest::collection::vec((odd_tps(), proptest::option::of(odd_tps())), 1..5),
    );
    let mut r = runner();
    r.run(&proptest::collection::vec(group, 1..5), |groups| {
        let mut cells = Vec::new();
        for (g, (variant, runs)) in groups.iter().enumerate() {
            for (i, (tps, lat)) in runs.iter().enumerate() {
                let mut c = bundle_common::cell(
                    &format!("c{g}-{i}"),
                    ["ext4", "xfs", "zfs-lz4"][*variant],
                    1,
                    i as u32 + 1,
                    CellStatus::Done {
                        run: RunMeasures {
                            tps: *tps,
                            tps_including_connect: None,
                            latency_avg_ms: *lat,
                            latency_stddev_ms: None,
                            transactions: 1,
                            failed_transactions: None,
                            schedule_lag_avg_ms: None,
                            schedule_lag_max_ms: None,
                            skipped_transactions: None,
                            late_transactions: None,
                            duration_s: 1.0,
                            progress: Vec::new(),
                            statements: Vec::new(),
                            latency_percentiles: None,
                            statement_latencies: Vec::new(),
                        },
                    },
                );
                c.sizes = None;
                cells.push(c);
            }
        }
        let out = bounded("report over odd numbers", move || {
            let src = [Source {
                name: "b",
                cells: &cells,
            }];
            let r = build_report(&src, &ReportOptions::default()).expect("report");
            [
                format!("{r:?}"),
                render_markdown_report(&r),
                render_csv(&r),
                render_json(&r),
                html::render_html(&r, &cells),
            ]
        });
        for o in out {
            prop_assert!(!has_non_finite(&o), "{o}");
        }
        Ok(())
    })
    .unwrap();
}
