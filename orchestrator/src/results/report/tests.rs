//! The report over a sample of cells, built once and rendered in every
//! format (the Markdown, CSV and JSON snapshots), and the rules of building
//! it: the baseline, pooled and side-by-side bundles, stand-in hosts.
use super::csv::{render_csv, REPORT_CSV_HEADER};
use super::json::render_json;
use super::markdown::{render_markdown, render_markdown_report};
use super::*;
use crate::model::*;
use crate::results::analysis::compare;
use crate::results::bundle::read::{load_bundle_results, standin_hosts};
use crate::results::bundle::RESULTS_JSONL;

#[test]
fn stand_in_hosts_come_from_their_facts_and_are_labelled_everywhere() {
    let tmp = tempfile::tempdir().unwrap();
    let hosts = tmp.path().join("data/hosts");
    for (h, facts) in [
        ("lab1", r#"{"os":"linux"}"#),
        ("lab4", r#"{"os":"freebsd","standin":"freebsd"}"#),
        ("evil", r#"{"standin":"freebsd; rm -rf /"}"#),
        ("big", r#"{"standin":"FreeBSD"}"#),
    ] {
        std::fs::create_dir_all(hosts.join(h)).unwrap();
        std::fs::write(hosts.join(h).join("facts.json"), facts).unwrap();
    }
    // A facts.json that is a link to another file is not read.
    std::fs::create_dir_all(hosts.join("link")).unwrap();
    std::os::unix::fs::symlink(hosts.join("lab4/facts.json"), hosts.join("link/facts.json"))
        .unwrap();
    let found = standin_hosts(tmp.path());
    assert_eq!(
        found.into_iter().collect::<Vec<_>>(),
        [("lab4".to_string(), "freebsd".to_string())]
    );
    let mut cells = vec![
        cell("lab4", "ufs", "ufs", "tpcb", 1, 1, done(100.0, 10.0)),
        cell("lab1", "ext4", "ext4", "tpcb", 1, 1, done(100.0, 10.0)),
    ];
    let found = standin_hosts(tmp.path());
    label_standins(&mut cells, &found);
    assert_eq!(cells[0].params.host, "lab4 [freebsd stand-in]");
    assert_eq!(cells[1].params.host, "lab1");
    let mut r = build_report(
        &[Source {
            name: "b",
            cells: &cells,
        }],
        &ReportOptions::default(),
    )
    .unwrap();
    mark_standins(&mut r, &found);
    assert!(
        r.notes[0].starts_with("STAND-IN HOSTS: lab4 [freebsd stand-in]"),
        "{:?}",
        r.notes
    );
    let md = render_markdown_report(&r);
    // Brackets are escaped in Markdown (a host's text is never a link).
    assert!(md.contains("lab4 \\[freebsd stand-in\\]"), "{md}");
}

/// Issue 24: text from a bundle (a host's error, a variant's name) cannot
/// add a link, an image, raw HTML, emphasis, a column or a line to the
/// Markdown report.
#[test]
fn markdown_escapes_text_from_the_bundle() {
    let hostile = "x](javascript:alert(1)) <img src=x onerror=alert(1)> **b** `c` | d \u{1b}[31m";
    let cells = vec![cell(
        "lab1",
        "ext4",
        "ext4",
        "tpcb",
        1,
        1,
        CellStatus::Failed {
            step: "run".into(),
            exit_status: Some(1),
            stderr_tail: hostile.into(),
        },
    )];
    let md = render_markdown(&cells);
    let line = md.lines().find(|l| l.contains("javascript")).expect(&md);
    // The detail cell, with every backslash-escaped character taken out:
    // what a Markdown reader interprets.
    let detail = &line[line.find("exit 1: ").expect(line)..line.len() - 2];
    let mut live = String::new();
    let mut chars = detail.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            chars.next();
        } else {
            live.push(c);
        }
    }
    for raw in ["](", "[", "<", "**", "|", "\u{1b}"] {
        assert!(!live.contains(raw), "{raw:?} unescaped in {line}");
    }
    assert!(line.contains("\\u{1b}"), "{line}");
    // A line break cannot start a heading or a new row.
    assert_eq!(super::markdown::md_text("a\n# e|f"), "a # e\\|f");
    assert_eq!(super::markdown::md_text("# e"), "\\# e");
}

fn cell(
    host: &str,
    fs: &str,
    fs_type: &str,
    workload: &str,
    clients: u32,
    repeat: u32,
    status: CellStatus,
) -> CellResult {
    CellResult {
        schema: RESULT_SCHEMA,
        cell_id: format!("{host}-{fs}-{workload}-{clients}-{repeat}"),
        params: CellParams {
            host: host.into(),
            filesystem: fs.into(),
            fs_type: fs_type.into(),
            workload: workload.into(),
            clients,
            jobs: clients,
            repeat,
            warmup: repeat == 0,
            rate: None,
            sql_script: false,
        },
        status,
        started: None,
        ended: None,
        sizes: Some(Sizes {
            du_on_disk_bytes: Some(if fs_type == "zfs" {
                60 << 20
            } else {
                160 << 20
            }),
            du_apparent_bytes: Some(158 << 20),
            zfs_compressratio: (fs_type == "zfs").then_some(2.61),
            ..Sizes::default()
        }),
        init: None,
        fs_settings: None,
    }
}

fn done(tps: f64, lat: f64) -> CellStatus {
    CellStatus::Done {
        run: RunMeasures {
            tps,
            tps_including_connect: None,
            latency_avg_ms: Some(lat),
            latency_stddev_ms: None,
            transactions: (tps * 10.0) as u64,
            failed_transactions: Some(0),
            schedule_lag_avg_ms: None,
            schedule_lag_max_ms: None,
            skipped_transactions: None,
            late_transactions: None,
            duration_s: 10.0,
            progress: vec![],
            statements: Vec::new(),
            latency_percentiles: None,
            statement_latencies: Vec::new(),
        },
    }
}

#[test]
fn non_finite_numbers_in_a_bundle_are_refused_with_file_and_field() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("data")).unwrap();
    let good = serde_json::to_string(&sample()[1]).unwrap();
    for (field, bad) in [
        ("tps", good.replacen("\"tps\":812.5", "\"tps\":1e999", 1)),
        (
            "duration_s",
            good.replacen("\"duration_s\":", "\"duration_s\":-1e400,\"x\":", 1),
        ),
    ] {
        assert_ne!(bad, good, "the fixture has no {field}");
        let jsonl = dir.path().join("data").join(RESULTS_JSONL);
        std::fs::write(&jsonl, format!("{good}\n{bad}\n")).unwrap();
        let msg = load_bundle_results(dir.path()).unwrap_err().to_string();
        assert!(
            msg.contains("results.jsonl line 2") && msg.contains(&format!("field \"{field}\"")),
            "{msg}"
        );
    }
    // A record built in memory (from parsed text) is held to the same rule.
    let mut c = sample()[1].clone();
    if let CellStatus::Done { run } = &mut c.status {
        run.progress.push(crate::model::ProgressSample {
            t_s: 1.0,
            tps: f64::INFINITY,
            latency_avg_ms: None,
            latency_stddev_ms: None,
            failed: None,
        });
    }
    assert_eq!(
        c.non_finite_field().as_deref(),
        Some("status.run.progress[0].tps")
    );
    c.status = CellStatus::NotRun { reason: "x".into() };
    c.init = Some(crate::model::InitTimings {
        total_s: Some(f64::NAN),
        phases: vec![],
    });
    assert_eq!(c.non_finite_field().as_deref(), Some("init.total_s"));
}

pub(crate) fn sample() -> Vec<CellResult> {
    vec![
        cell("deb1", "ext4", "ext4", "tpcb", 4, 0, done(100.0, 40.0)),
        cell("deb1", "ext4", "ext4", "tpcb", 4, 1, done(812.5, 4.92)),
        cell("deb1", "ext4", "ext4", "tpcb", 4, 2, done(790.25, 5.06)),
        cell("deb1", "ext4", "ext4", "tpcb", 4, 3, done(830.0, 4.81)),
        cell("deb1", "zfs-lz4", "zfs", "tpcb", 4, 1, done(610.0, 6.55)),
        cell("deb1", "zfs-lz4", "zfs", "tpcb", 4, 2, done(640.0, 6.25)),
        cell("deb1", "ext4", "ext4", "tpcb", 1, 1, done(301.0, 3.32)),
        cell(
            "deb1",
            "ext4",
            "ext4",
            "select-only",
            1,
            1,
            done(9120.4, 0.11),
        ),
        cell(
            "deb1",
            "xfs",
            "xfs",
            "tpcb",
            4,
            1,
            CellStatus::Failed {
                step: "mount".into(),
                exit_status: Some(32),
                stderr_tail: "mount: /mnt: wrong fs type | bad option\n".into(),
            },
        ),
        cell(
            "deb2",
            "ext4",
            "ext4",
            "tpcb",
            4,
            1,
            CellStatus::NotRun {
                reason: "host unreachable: connection refused".into(),
            },
        ),
    ]
}

/// The tpcb, 4 clients table of a report of [`sample`]-like cells.
fn tpcb4(r: &Report) -> &Table {
    r.tables
        .iter()
        .find(|t| t.workload == "tpcb" && t.clients == 4)
        .expect("a tpcb, 4 clients table")
}

fn report(cells: &[CellResult], baseline: Option<&str>) -> Report {
    let opts = ReportOptions {
        baseline: baseline.map(str::to_owned),
        ..ReportOptions::default()
    };
    build_report(&[Source { name: "b1", cells }], &opts).unwrap()
}

#[test]
fn markdown_report_snapshot() {
    insta::assert_snapshot!(render_markdown(&sample()));
}

#[test]
fn csv_report_snapshot() {
    let csv = render_csv(&report(&sample(), None));
    for line in csv.lines() {
        assert_eq!(line.split(',').count(), REPORT_CSV_HEADER.len(), "{line}");
    }
    insta::assert_snapshot!(csv);
}

#[test]
fn json_report_snapshot() {
    let json = render_json(&report(&sample(), Some("zfs-lz4")));
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["tables"].as_array().unwrap().len(), 3);
    insta::assert_snapshot!(json);
}

#[test]
fn median_and_warmup_exclusion() {
    let md = render_markdown(&sample());
    // ext4 tpcb 4 clients: repeats 1..3 counted, the warm-up (100 tps) not.
    assert!(
        md.contains("| deb1 | ext4 | ext4 | 3 | 812.5 | 790.2–830.0 |"),
        "{md}"
    );
    assert!(
        md.contains("| deb1 | zfs-lz4 | zfs | 2 | 625.0 | 610.0–640.0 |"),
        "{md}"
    );
    assert!(md.contains("1 warm-up run not counted."), "{md}");
    assert!(md.contains("wrong fs type \\| bad option"), "{md}");
    assert!(md.contains("`zfs-lz4` is slower than `ext4`: 0."), "{md}");
    assert!(md.contains("on deb1: `ext4` is best"), "{md}");
    // The answer comes first, before the method.
    assert!(
        md.find("## The answer") < md.find("## How this was measured"),
        "{md}"
    );
}

#[test]
fn explicit_baseline_and_unknown_baseline() {
    let r = report(&sample(), Some("zfs-lz4"));
    let t = tpcb4(&r);
    let h = &t.hosts[0];
    assert_eq!(h.baseline.as_deref(), Some("zfs-lz4"));
    let ext4 = &h.rows[0];
    assert_eq!(ext4.stats.key.filesystem, "ext4");
    let c = ext4.comparison.as_ref().unwrap();
    assert_eq!(c.verdict, compare::Verdict::Faster);
    assert!(c.ratio.unwrap().ratio > 1.0);
    // select-only ran no zfs-lz4 on deb1: no silent fallback.
    let sel = r
        .tables
        .iter()
        .find(|t| t.workload == "select-only")
        .unwrap();
    assert_eq!(sel.hosts[0].baseline, None);
    assert_eq!(
        sel.hosts[0].rows[0].comparison.as_ref().unwrap().verdict,
        compare::Verdict::NoBaseline
    );
    let e = build_report(
        &[Source {
            name: "b1",
            cells: &sample(),
        }],
        &ReportOptions {
            baseline: Some("btrfs".into()),
            ..ReportOptions::default()
        },
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("valid: ext4, zfs-lz4, xfs"), "{e}");
}

#[test]
fn merged_bundles_pool_a_host_of_the_same_name_and_say_so() {
    let a = sample();
    let mut b = sample();
    for c in &mut b {
        c.params.repeat += 10;
        if c.params.host == "deb2" {
            c.params.host = "bsd1".into();
        }
    }
    let r = build_report(
        &[
            Source {
                name: "linux",
                cells: &a,
            },
            Source {
                name: "again",
                cells: &b,
            },
        ],
        &ReportOptions::default(),
    )
    .unwrap();
    let pooled: Vec<&String> = r
        .notes
        .iter()
        .filter(|n| n.contains("pooled as one blocking factor"))
        .collect();
    assert_eq!(pooled.len(), 1, "{:?}", r.notes);
    assert!(pooled[0].starts_with("Host deb1 appears in bundles again, linux"));
    let t = tpcb4(&r);
    assert_eq!(t.hosts[0].rows[0].stats.tps.n, 6);
}

#[test]
fn bundles_side_by_side_compare_each_variant_with_its_original() {
    let orig = sample();
    let mut rerun = sample();
    for c in &mut rerun {
        if let (CellStatus::Done { run }, "zfs-lz4") = (&mut c.status, c.params.filesystem.as_str())
        {
            run.tps /= 2.0;
        }
    }
    let sources = [
        Source {
            name: "orig",
            cells: &orig,
        },
        Source {
            name: "rerun",
            cells: &rerun,
        },
    ];
    let opts = ReportOptions {
        by_bundle: true,
        ..ReportOptions::default()
    };
    let r = build_report(&sources, &opts).unwrap();
    let t = tpcb4(&r);
    let h = &t.hosts[0];
    let rows: Vec<(&str, Option<&str>, Option<compare::Verdict>)> = h
        .rows
        .iter()
        .map(|r| {
            (
                r.stats.key.filesystem.as_str(),
                r.comparison.as_ref().map(|c| c.baseline.as_str()),
                r.comparison.as_ref().map(|c| c.verdict),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("ext4 @ orig", None, None),
            (
                "ext4 @ rerun",
                Some("ext4 @ orig"),
                // Three repeats a side cannot show a re-run the same
                // within ±5%: it says so.
                Some(compare::Verdict::Inconclusive)
            ),
            ("zfs-lz4 @ orig", None, None),
            (
                "zfs-lz4 @ rerun",
                Some("zfs-lz4 @ orig"),
                Some(compare::Verdict::Slower)
            ),
        ]
    );
    let ratio = h.rows[3]
        .comparison
        .as_ref()
        .and_then(|c| c.ratio)
        .map(|r| r.ratio);
    assert_eq!(ratio, Some(0.5));
    // Runs of one variant are not contestants; nothing is pooled.
    assert_eq!(h.winner, None);
    assert!(r
        .notes
        .iter()
        .any(|n| n.starts_with("Bundles side by side")));
    assert!(!r.notes.iter().any(|n| n.contains("pooled")));
    let md = render_markdown_report(&r);
    assert!(md.contains("| deb1 | zfs-lz4 @ rerun | zfs |"), "{md}");
    assert!(
        md.contains("`zfs-lz4 @ rerun` is slower than `zfs-lz4 @ orig`"),
        "{md}"
    );
    // One bundle, or a --baseline, cannot be put side by side.
    let one = build_report(&sources[..1], &opts).unwrap_err();
    assert!(one.to_string().contains("give at least two bundles"));
    let with_baseline = ReportOptions {
        baseline: Some("ext4".into()),
        ..opts.clone()
    };
    assert!(build_report(&sources, &with_baseline).is_err());
    let twins = [sources[0], sources[0]];
    let e = build_report(&twins, &opts).unwrap_err();
    assert!(e.to_string().contains("both named \"orig\""), "{e}");
}

#[test]
fn adaptive_repeats_not_needed_are_said_not_listed_as_problems() {
    let mut cells = sample();
    cells.push(cell(
        "deb1",
        "ext4",
        "ext4",
        "tpcb",
        4,
        4,
        CellStatus::NotNeeded {
            reason: "adaptive repeats: the 3 counted repeats before it have a 95% CI of ±1.20% of the mean tps, within the target ±2%".into(),
        },
    ));
    let r = report(&cells, None);
    assert_eq!(r.not_needed, 1);
    assert!(r.problems.iter().all(|p| p.status != "not_needed"));
    let md = render_markdown_report(&r);
    assert!(md.contains("1 adaptive repeat was not run"), "{md}");
    // The counted group is unchanged by it.
    let t = tpcb4(&r);
    assert_eq!(t.hosts[0].rows[0].stats.tps.n, 3);
    assert!(render_json(&r).contains("\"not_needed\": 1"));
    assert!(!render_json(&report(&sample(), None)).contains("not_needed"));
}

#[test]
fn a_bundle_is_never_pooled_with_its_copy_but_a_rerun_is() {
    // Runs that ran have a start time (the worker records one).
    let mut cells = sample();
    for (i, c) in cells.iter_mut().enumerate() {
        c.started = Some(format!("2026-01-01T00:00:{i:02}Z"));
    }
    let opts = ReportOptions::default();
    let copy = [
        Source {
            name: "a",
            cells: &cells,
        },
        Source {
            name: "a-copy",
            cells: &cells,
        },
    ];
    let e = build_report(&copy, &opts).expect_err("a copy pools its runs twice");
    assert!(
        e.to_string()
            .contains("pool a with a-copy: they hold the same run"),
        "{e}"
    );
    let mut rerun = cells.clone();
    for c in &mut rerun {
        c.started = c.started.as_ref().map(|s| format!("{s}-again"));
    }
    let both = [
        Source {
            name: "a",
            cells: &cells,
        },
        Source {
            name: "rerun",
            cells: &rerun,
        },
    ];
    assert!(build_report(&both, &opts).is_ok());
}

#[test]
fn empty_input() {
    assert!(render_markdown(&[]).contains("No cell results."));
}

/// The formats are one table: each row has its `--format` name and its
/// renderer, and every renderer shows the report's rows.  A new format
/// adds its name here.
#[test]
fn every_format_is_named_once_and_renders_the_report() {
    use clap::ValueEnum;
    let cells = sample();
    let sources = [Source {
        name: "b1",
        cells: &cells,
    }];
    let r = build_report(&sources, &ReportOptions::default()).unwrap();
    let names: Vec<String> = Format::value_variants()
        .iter()
        .filter_map(|f| f.to_possible_value())
        .map(|v| v.get_name().to_owned())
        .collect();
    assert_eq!(names, ["md", "csv", "json", "html", "summary"]);
    for f in Format::value_variants() {
        let text = f.render(&r, &sources, 100);
        assert!(
            text.contains("zfs-lz4") && text.contains("deb1"),
            "{f:?}: {text}"
        );
    }
    assert_eq!(
        Format::Md.render(&r, &sources, 100),
        markdown::render_markdown_report(&r)
    );
}

/// A cell record's host name becomes a path for `publish` and the agent
/// (`data/hosts/<host>/facts.json`): one that is not a valid host name by
/// the inventory's rule (`../../etc`, `/etc`, `a/b`) is refused where
/// records are read, and the facts reader refuses it too; a valid name
/// whose facts.json is a link is not read through it.
#[test]
fn a_host_name_from_a_bundle_is_validated_before_it_is_a_path() {
    let base = serde_json::to_value(&sample()[0]).unwrap_or_else(|e| panic!("{e}"));
    for bad in ["../../../../etc", "/etc", "a/b", "..", "h\n"] {
        let mut v = base.clone();
        v["params"]["host"] = serde_json::Value::from(bad);
        let err = crate::results::bundle::parse_cell_result(&v.to_string())
            .expect_err("a bad host name is refused");
        assert!(
            err.contains("field host") && err.contains("host name"),
            "{bad:?}: {err}"
        );
        assert!(
            crate::results::bundle::read::host_facts(std::path::Path::new("/"), bad).is_err(),
            "{bad:?}"
        );
    }
    assert!(crate::results::bundle::parse_cell_result(&base.to_string()).is_ok());
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let hosts = tmp.path().join("data/hosts/deb1");
    std::fs::create_dir_all(&hosts).unwrap_or_else(|e| panic!("{e}"));
    let outside = tmp.path().join("secret.json");
    std::fs::write(&outside, "{\"secret\": 1}").unwrap_or_else(|e| panic!("{e}"));
    std::os::unix::fs::symlink(&outside, hosts.join("facts.json"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        crate::results::bundle::read::host_facts(tmp.path(), "deb1"),
        Ok(None)
    );
    std::fs::remove_file(hosts.join("facts.json")).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(hosts.join("facts.json"), "{\"os\": \"linux\"}")
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        crate::results::bundle::read::host_facts(tmp.path(), "deb1"),
        Ok(Some(serde_json::json!({"os": "linux"})))
    );
}

/// Issue 26: a synthetic bundle's inventory snapshot and facts, the way
/// `run` writes them (`data/inventory.toml`, `data/hosts/<h>/facts.json`).
fn guest_bundle(inventory: &str, facts: &[(&str, &str)]) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    std::fs::create_dir_all(tmp.path().join("data")).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(tmp.path().join("data/inventory.toml"), inventory)
        .unwrap_or_else(|e| panic!("{e}"));
    for (h, f) in facts {
        let d = tmp.path().join("data/hosts").join(h);
        std::fs::create_dir_all(&d).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(d.join("facts.json"), f).unwrap_or_else(|e| panic!("{e}"));
    }
    tmp
}

const METAL_AND_KVM: &str = r#"
[defaults]
os = "linux"
[[host]]
name = "metal1"
address = "10.0.0.1"
devices = ["/dev/sdb"]
[[host]]
name = "metal1-kvm"
guest_of = "metal1"
devices = ["/dev/vdb"]
[host.vm]
image = "/var/lib/fsmatrix/images/debian12.img"
disk = "/dev/sdb"
memory_mib = 12288
cpus = 4
"#;

/// `metal` and its guest `guest`: ext4 (and xfs on the guest only, and
/// zfs on metal only) tpcb with 4 clients; `guest_ext4` the guest's ext4
/// statuses.
fn metal_and_guest(metal: &str, guest: &str, guest_ext4: Vec<CellStatus>) -> Vec<CellResult> {
    let mut v = Vec::new();
    for (r, tps) in [(1, 1000.0), (2, 1010.0), (3, 990.0)] {
        v.push(cell(metal, "ext4", "ext4", "tpcb", 4, r, done(tps, 4.0)));
        v.push(cell(
            metal,
            "zfs",
            "zfs",
            "tpcb",
            4,
            r,
            done(tps * 0.8, 5.0),
        ));
    }
    for (r, st) in (1..).zip(guest_ext4) {
        v.push(cell(guest, "ext4", "ext4", "tpcb", 4, r, st));
    }
    for (r, tps) in [(1, 500.0), (2, 505.0), (3, 495.0)] {
        v.push(cell(guest, "xfs", "xfs", "tpcb", 4, r, done(tps, 8.0)));
    }
    v
}

fn guest_done() -> Vec<CellStatus> {
    vec![done(620.0, 6.4), done(630.0, 6.3), done(610.0, 6.5)]
}

/// The report `fsmatrix report BUNDLE` makes of `cells` in `dir`: TCG
/// guests labelled, guests compared with their physical hosts.
fn guest_report(dir: &std::path::Path, mut cells: Vec<CellResult>) -> (Report, Vec<CellResult>) {
    let guests = crate::results::bundle::read::guest_hosts(dir);
    label_tcg_guests(&mut cells, &guests);
    let mut r = build_report(
        &[Source {
            name: "b",
            cells: &cells,
        }],
        &ReportOptions::default(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    mark_platforms(&mut r, &guests);
    (r, cells)
}

#[test]
fn a_guest_is_compared_with_its_physical_host_in_every_format() {
    let dir = guest_bundle(METAL_AND_KVM, &[]);
    let (r, cells) = guest_report(
        dir.path(),
        metal_and_guest("metal1", "metal1-kvm", guest_done()),
    );
    // Only ext4 ran on both sides: zfs (metal only) and xfs (guest only)
    // are not platform rows.
    assert_eq!(r.platforms.len(), 1, "{:?}", r.platforms);
    let p = &r.platforms[0];
    // The same statistics as a variant against its baseline: guest / metal.
    let c = compare::compare(
        "metal1",
        &[620.0, 630.0, 610.0],
        &[1000.0, 1010.0, 990.0],
        crate::results::stats::Metric::Tps,
        crate::config::Margin::DEFAULT,
    );
    let ratio = c.ratio.unwrap_or_else(|| panic!("a ratio"));
    let (lo, hi) = ratio.ci95.unwrap_or_else(|| panic!("a CI"));
    assert_eq!(p.ratio, Some(ratio.ratio));
    assert_eq!((p.ci_low, p.ci_high), (Some(lo), Some(hi)));
    assert_eq!(p.p, c.p());
    assert!((ratio.ratio - 0.62).abs() < 1e-12);
    let sentence = "ext4 on metal1: under KVM (virtio-blk, cache=none) 0.62 ± 0.02 times the tps of bare metal (p < 0.001)";
    assert_eq!(platform::platform_sentence(p), sentence);

    // JSON: the platforms array with every field.
    let v: serde_json::Value =
        serde_json::from_str(&render_json(&r)).unwrap_or_else(|e| panic!("{e}"));
    let j = &v["platforms"][0];
    for (k, want) in [
        ("physical_host", serde_json::json!("metal1")),
        ("guest", serde_json::json!("metal1-kvm")),
        ("variant", serde_json::json!("ext4")),
        ("workload", serde_json::json!("tpcb")),
        ("clients", serde_json::json!(4)),
        ("metric", serde_json::json!("tps")),
        ("ratio", serde_json::json!(ratio.ratio)),
        ("ci_low", serde_json::json!(lo)),
        ("ci_high", serde_json::json!(hi)),
        ("p", serde_json::json!(p.p)),
        ("n_metal", serde_json::json!(3)),
        ("n_guest", serde_json::json!(3)),
        ("accel", serde_json::json!("kvm")),
        ("bus", serde_json::json!("virtio-blk")),
        ("cache", serde_json::json!("none")),
        ("standin", serde_json::json!(false)),
    ] {
        assert_eq!(j[k], want, "{k} in {j}");
    }

    // The blocking note names its one exception.
    assert!(
        r.notes.iter().any(|n| n.ends_with(
            "hosts are never compared with each other, except a guest with its own physical host (Guests against bare metal, below)."
        )),
        "{:?}",
        r.notes
    );
    // Markdown: its own section, one line per variant and guest.
    let md = render_markdown_report(&r);
    assert!(
        md.contains("## Guests against bare metal\n\n### tpcb with 4 clients\n\n"),
        "{md}"
    );
    assert!(
        md.contains(&format!(
            "\n- {sentence} — guest metal1-kvm, 3 runs vs 3 on bare metal\n"
        )),
        "{md}"
    );
    // The guest still gets its own per-host comparison (xfs against ext4).
    let t = tpcb4(&r);
    let kvm = t
        .hosts
        .iter()
        .find(|h| h.host == "metal1-kvm")
        .unwrap_or_else(|| panic!("{t:?}"));
    assert_eq!(kvm.baseline.as_deref(), Some("ext4"));
    assert_eq!(
        kvm.rows[1].comparison.as_ref().map(|c| c.verdict),
        Some(compare::Verdict::Slower)
    );

    // HTML: the ratio plot and the sentence.
    let html = super::html::render_html(&r, &cells);
    assert_eq!(
        html.matches("<svg class=\"fsmx-plot\" data-plot=\"platform-ratio\"")
            .count(),
        1,
        "{html}"
    );
    assert!(html.contains("bare metal = 1"), "no line at 1.0");
    let escaped = sentence.replace('<', "&lt;");
    assert!(
        html.contains(&format!("<li>{escaped} — guest metal1-kvm")),
        "{html}"
    );

    // The terminal summary `run` ends with.
    let sum = summary::render_summary(&r, 400);
    assert!(
        sum.contains(&format!(
            "Guests against bare metal, tpcb with 4 clients:\n  {sentence} — guest metal1-kvm"
        )),
        "{sum}"
    );
}

#[test]
fn a_guest_without_a_done_run_is_said_not_numbered() {
    let dir = guest_bundle(METAL_AND_KVM, &[]);
    let failed = || CellStatus::Failed {
        step: "guest".into(),
        exit_status: None,
        stderr_tail: "guest metal1-kvm did not come up".into(),
    };
    let (r, cells) = guest_report(
        dir.path(),
        metal_and_guest("metal1", "metal1-kvm", vec![failed(), failed()]),
    );
    assert_eq!(r.platforms.len(), 1, "{:?}", r.platforms);
    let p = &r.platforms[0];
    assert_eq!((p.ratio, p.p, p.n_metal, p.n_guest), (None, None, 3, 0));
    let said = "ext4 on metal1: under KVM (virtio-blk, cache=none): no done run on the guest metal1-kvm, nothing to compare";
    assert_eq!(platform::platform_sentence(p), said);
    let v: serde_json::Value =
        serde_json::from_str(&render_json(&r)).unwrap_or_else(|e| panic!("{e}"));
    assert!(v["platforms"][0]["ratio"].is_null(), "{v}");
    assert!(render_markdown_report(&r).contains(said));
    assert!(summary::render_summary(&r, 400).contains(said));
    // No ratio, no plot: the sentence says why.
    let html = super::html::render_html(&r, &cells);
    assert!(!html.contains("data-plot=\"platform-ratio\""));
    assert!(html.contains("no ratio to plot"), "{html}");
}

#[test]
fn a_tcg_guest_is_a_stand_in_everywhere() {
    // The inventory says kvm; the guest's own facts say it ran under TCG.
    let inv = METAL_AND_KVM.replace("metal1", "lab1");
    let dir = guest_bundle(&inv, &[("lab1-kvm", r#"{"os":"linux","accel":"tcg"}"#)]);
    let (r, _) = guest_report(
        dir.path(),
        metal_and_guest("lab1", "lab1-kvm", guest_done()),
    );
    let p = &r.platforms[0];
    assert!(p.standin && p.accel == crate::config::inventory::vm::Accel::Tcg);
    assert_eq!(
        platform::platform_sentence(p),
        "ext4 on lab1: under TCG emulation (virtio-blk, cache=none) 0.62 ± 0.02 times the tps of bare metal (p < 0.001) [TCG stand-in]"
    );
    assert!(
        r.notes[0].starts_with("TCG STAND-IN GUESTS: lab1-kvm [TCG stand-in]"),
        "{:?}",
        r.notes
    );
    // Its own rows are labelled as the BSD stand-ins' are.
    assert!(tpcb4(&r)
        .hosts
        .iter()
        .any(|h| h.host == "lab1-kvm [TCG stand-in]"));
    let v: serde_json::Value =
        serde_json::from_str(&render_json(&r)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(v["platforms"][0]["standin"], serde_json::json!(true));
    assert_eq!(v["platforms"][0]["accel"], serde_json::json!("tcg"));
    assert_eq!(v["platforms"][0]["guest"], serde_json::json!("lab1-kvm"));
    // And in the inventory itself.
    let inv = inv.replace("cpus = 4", "cpus = 4\naccel = \"tcg\"");
    let dir = guest_bundle(&inv, &[]);
    let (r, _) = guest_report(
        dir.path(),
        metal_and_guest("lab1", "lab1-kvm", guest_done()),
    );
    assert!(r.platforms[0].standin);
}

/// The inventory snapshot is someone else's input: only valid names and
/// known words make a guest; the defaults are `[host.vm]`'s.
#[test]
fn guests_are_read_from_the_inventory_snapshot_with_its_defaults() {
    use crate::config::inventory::vm::{Accel, CacheMode, DiskBus};
    use crate::results::bundle::read::guests_of_inventory;
    let g = guests_of_inventory(METAL_AND_KVM);
    assert_eq!(g.len(), 1);
    assert_eq!(
        (
            g[0].guest.as_str(),
            g[0].physical.as_str(),
            g[0].accel,
            g[0].bus,
            g[0].cache
        ),
        (
            "metal1-kvm",
            "metal1",
            Accel::Kvm,
            DiskBus::VirtioBlk,
            CacheMode::None
        )
    );
    let sata = METAL_AND_KVM.replace(
        "cpus = 4",
        "cpus = 4\ndisk_bus = \"sata\"\ncache = \"writeback\"",
    );
    let g = guests_of_inventory(&sata);
    assert_eq!(
        (g[0].bus, g[0].cache),
        (DiskBus::Sata, CacheMode::Writeback)
    );
    for bad in [
        METAL_AND_KVM.replace("cpus = 4", "cpus = 4\naccel = \"hvf\""),
        METAL_AND_KVM.replace("cpus = 4", "cpus = 4\ncache = 3"),
        METAL_AND_KVM.replace("guest_of = \"metal1\"", "guest_of = \"../etc\""),
        METAL_AND_KVM.replace("[host.vm]", "[host.vmx]"),
        "not toml [[".to_string(),
    ] {
        assert_eq!(guests_of_inventory(&bad), vec![], "{bad}");
    }
    // No snapshot, no guests.
    let empty = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    assert!(crate::results::bundle::read::guest_hosts(empty.path()).is_empty());
}

/// A sequential design's report decides each comparison at its first
/// deciding look, on the first n repeats of each arm, and says which; the
/// method note names the design, its spending and its family.
#[test]
fn a_sequential_design_is_decided_at_its_looks_and_says_which() {
    let base = [1000.0, 1010.0, 990.0, 1005.0, 995.0, 1002.0];
    let fast = [1500.0, 1520.0];
    // `same` wobbles about the baseline: 6 repeats do not decide it
    // within ±5% at the looks' levels.
    let same = [1000.0, 1060.0, 950.0, 1040.0, 960.0, 1010.0];
    let mut cells = Vec::new();
    for (fs, xs) in [("ext4", &base[..]), ("xfs", &fast[..]), ("twin", &same[..])] {
        for (i, x) in xs.iter().enumerate() {
            cells.push(cell(
                "deb1",
                fs,
                "ext4",
                "tpcb",
                4,
                i as u32 + 1,
                done(*x, 1.0),
            ));
        }
    }
    let rule = crate::config::VerdictRule {
        sequential: Some(crate::config::Looks { min: 2, max: 6 }),
        ..crate::config::VerdictRule::default()
    };
    let opts = ReportOptions {
        rule: Some(rule),
        ..ReportOptions::default()
    };
    let r = build_report(
        &[Source {
            name: "b1",
            cells: &cells,
        }],
        &opts,
    )
    .unwrap();
    let rows = &tpcb4(&r).hosts[0].rows;
    let of = |fs: &str| {
        rows.iter()
            .find(|r| r.stats.key.filesystem == fs)
            .and_then(|r| r.comparison.clone())
            .unwrap()
    };
    let x = of("xfs");
    assert_eq!(x.verdict, compare::Verdict::Faster);
    let stop = x.sequential.unwrap();
    assert_eq!(
        (stop.look, stop.max, stop.decided, stop.family),
        (2, 6, true, 3)
    );
    // Its level: Pocock-type spend at t = 2/6 over a family of 3 (2v − 3, v = 3).
    let spend = 0.05 * (1.0 + (std::f64::consts::E - 1.0) / 3.0).ln();
    assert!((stop.level - spend / 3.0).abs() < 1e-12, "{}", stop.level);
    let t = of("twin");
    assert_eq!(t.verdict, compare::Verdict::Inconclusive);
    assert!(!t.sequential.unwrap().decided);
    let line = &r.verdicts[0].sentence;
    assert!(line.contains("`xfs` is faster than `ext4`"), "{line}");
    assert!(line.contains("decided at look 2 of 6"), "{line}");
    assert!(
        line.contains("undecided after 6 repeats per arm (max 6)"),
        "{line}"
    );
    let method = r.notes.join(" ");
    assert!(
        method.contains("Sequential design (repeats = { min = 2, max = 6, until = \"decided\" })"),
        "{method}"
    );
    assert!(method.contains("Pocock type"), "{method}");
    let json = render_json(&r);
    assert!(json.contains("\"sequential\""), "{json}");
}
