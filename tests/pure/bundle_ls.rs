//! `fsmatrix ls`: every kind of bundle a results folder holds, nested —
//! complete, incomplete (a journal without its sweep end), closed
//! incomplete, archived, signed (by `ssh-keygen -Y sign`), broken — each
//! field checked, through the library, the table and `--json`.
use super::bundle_common::{cell, done, make_bundle, write_cell};

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use fsmatrix::model::CellStatus;
use fsmatrix::results::bundle::listing::{self, BundleKind, BundleSummary, ListStatus};
use fsmatrix::results::bundle::CreateOptions;
use fsmatrix::results::{Bundle, SweepStatus};
use serde_json::Value;

fn fsmatrix() -> Command {
    Command::new(env!("CARGO_BIN_EXE_fsmatrix"))
}

fn run(cmd: &mut Command) -> Output {
    cmd.output().expect("run a command")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A key pair made by ssh-keygen, and its SHA256 fingerprint as ssh-keygen
/// prints it.
fn keygen(dir: &Path) -> (PathBuf, String) {
    let key = dir.join("id_ed25519");
    let o = run(Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", "ls-test", "-f"])
        .arg(&key));
    assert!(o.status.success(), "{}", text(&o.stderr));
    let o = run(Command::new("ssh-keygen")
        .args(["-l", "-E", "sha256", "-f"])
        .arg(key.with_extension("pub")));
    assert!(o.status.success(), "{}", text(&o.stderr));
    let fp = text(&o.stdout)
        .split_whitespace()
        .nth(1)
        .expect("a fingerprint")
        .to_string();
    assert!(fp.starts_with("SHA256:"), "{fp}");
    (key, fp)
}

/// `ssh-keygen -Y sign -n fsmatrix -f KEY tagmanifest-sha256.txt` in `bundle`.
fn sign(bundle: &Path, key: &Path) {
    let o = run(Command::new("ssh-keygen")
        .args(["-Y", "sign", "-n", "fsmatrix", "-f"])
        .arg(key)
        .arg("tagmanifest-sha256.txt")
        .current_dir(bundle));
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(bundle.join("tagmanifest-sha256.txt.sig").is_file());
}

/// bag-info's Sweep-Started, or the journal's first line's `started`.
fn started_of(bundle: &Path) -> String {
    if let Ok(info) = std::fs::read_to_string(bundle.join("bag-info.txt")) {
        return info
            .lines()
            .find_map(|l| l.strip_prefix("Sweep-Started: "))
            .expect("Sweep-Started")
            .to_string();
    }
    let j = std::fs::read_to_string(bundle.join("journal.jsonl")).unwrap();
    let first: Value = serde_json::from_str(j.lines().next().unwrap()).unwrap();
    first["started"].as_str().unwrap().to_string()
}

/// (sum of the files' sizes, `du -s -B1`) of a folder or file.
fn sizes(path: &Path) -> (u64, u64) {
    let o = run(Command::new("find")
        .arg(path)
        .args(["-type", "f", "-printf", "%s\n"]));
    let bytes = text(&o.stdout)
        .lines()
        .map(|l| l.parse::<u64>().unwrap())
        .sum();
    let o = run(Command::new("du").args(["-s", "-B1"]).arg(path));
    let disk = text(&o.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    (bytes, disk)
}

fn host_facts(b: &mut Bundle, hosts: &[&str]) {
    for h in hosts {
        b.write(&format!("hosts/{h}/facts.json"), b"{}\n").unwrap();
    }
}

#[derive(Clone)]
struct Expected {
    path: PathBuf,
    kind: &'static str,
    matrix: Option<&'static str>,
    hosts: Vec<&'static str>,
    started: Option<String>,
    status: String,
    closed: bool,
    /// done, failed, not_run, not_needed
    tally: Option<[u64; 4]>,
    sizes: (u64, u64),
    signer: Option<String>,
    rerun_of: Option<String>,
}

fn check(b: &BundleSummary, e: &Expected) {
    let who = e.path.display();
    assert_eq!(b.path, e.path, "{who}");
    assert_eq!(b.kind.as_str(), e.kind, "{who}");
    assert_eq!(b.matrix.as_deref(), e.matrix, "{who}");
    assert_eq!(b.hosts, e.hosts, "{who}");
    assert_eq!(b.started, e.started, "{who}");
    assert_eq!(b.status.text(), e.status, "{who}");
    assert_eq!(b.closed, e.closed, "{who}");
    assert_eq!(
        b.tally.map(|t| [t.done, t.failed, t.not_run, t.not_needed]),
        e.tally,
        "{who}"
    );
    assert_eq!((b.bytes, b.disk_bytes), e.sizes, "{who}");
    assert_eq!(b.signed, e.signer.is_some(), "{who}");
    assert_eq!(b.signer, e.signer, "{who}");
    assert_eq!(b.signature_problem, None, "{who}");
    assert_eq!(b.rerun_of, e.rerun_of, "{who}");
}

fn check_json(v: &Value, e: &Expected) {
    let who = e.path.display();
    let s = |o: &Option<String>| o.as_ref().map_or(Value::Null, |s| Value::from(s.as_str()));
    let t = |i: usize| e.tally.map_or(Value::Null, |t| Value::from(t[i]));
    assert_eq!(v["path"], e.path.display().to_string(), "{who}");
    assert_eq!(v["kind"], e.kind, "{who}");
    assert_eq!(
        v["matrix"],
        e.matrix.map_or(Value::Null, Value::from),
        "{who}"
    );
    assert_eq!(v["hosts"], serde_json::json!(e.hosts), "{who}");
    assert_eq!(v["started"], s(&e.started), "{who}");
    assert_eq!(v["status"], e.status, "{who}");
    assert_eq!(v["closed"], e.closed, "{who}");
    for (i, k) in ["done", "failed", "not_run", "not_needed"]
        .iter()
        .enumerate()
    {
        assert_eq!(v[k], t(i), "{who} {k}");
    }
    assert_eq!(v["bytes"], e.sizes.0, "{who}");
    assert_eq!(v["disk_bytes"], e.sizes.1, "{who}");
    assert_eq!(v["signed"], e.signer.is_some(), "{who}");
    assert_eq!(v["signer"], s(&e.signer), "{who}");
    assert_eq!(v["signature_problem"], Value::Null, "{who}");
    assert_eq!(v["rerun_of"], s(&e.rerun_of), "{who}");
}

#[test]
fn ls_lists_every_kind_of_bundle_nested_with_every_field() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    let (key, fp) = keygen(tmp.path());

    // 1. Complete: 4 cells done, 1 failed, host lab1 (results/2026/).
    let complete = make_bundle(&results.join("2026"), SweepStatus::Complete);
    let complete_name = complete.file_name().unwrap().to_string_lossy().into_owned();

    // 2. Incomplete: a journal without a sweep end (the orchestrator was
    //    killed); no bag-info, so the matrix and start come from the journal.
    let killed = {
        let mut b = Bundle::create(&results.join("2026/nested/deeper"), "half").unwrap();
        host_facts(&mut b, &["lab2", "lab3"]);
        write_cell(&mut b, &cell("h1", "ext4", 1, 1, done(100.0)));
        write_cell(
            &mut b,
            &cell(
                "h2",
                "xfs",
                1,
                1,
                CellStatus::Failed {
                    step: "mount".into(),
                    exit_status: Some(32),
                    stderr_tail: String::new(),
                },
            ),
        );
        write_cell(
            &mut b,
            &cell(
                "h3",
                "xfs",
                1,
                2,
                CellStatus::NotRun {
                    reason: "host unreachable".into(),
                },
            ),
        );
        b.path().to_owned()
    };

    // 3. Closed as incomplete (Ctrl-C), and a re-run of the complete one.
    let stopped = {
        let mut b = Bundle::create_with(
            &results.join("other"),
            "stopped",
            CreateOptions {
                rerun_of: Some(complete_name.clone()),
            },
        )
        .unwrap();
        host_facts(&mut b, &["lab1"]);
        write_cell(&mut b, &cell("s1", "ext4", 1, 1, done(400.0)));
        b.close(SweepStatus::Incomplete).unwrap()
    };

    // 4. Archived (and signed before): a .tar.zst, its folder removed.
    let archived = {
        let mut b = Bundle::create(&results.join("archives/2025"), "packed").unwrap();
        host_facts(&mut b, &["lab9", "lab10"]);
        write_cell(&mut b, &cell("p1", "ext4", 2, 1, done(500.0)));
        write_cell(&mut b, &cell("p2", "ext4", 2, 2, done(510.0)));
        let dir = b.close(SweepStatus::Complete).unwrap();
        sign(&dir, &key);
        let started = started_of(&dir);
        let archive = fsmatrix::results::bundle::archive::archive(&dir, None).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        (archive, started)
    };

    // 5. Signed folder.
    let signed = make_bundle(&results.join("signed"), SweepStatus::Complete);
    sign(&signed, &key);

    // Expected values are read before the broken bundles and the decoys
    // are added.
    let complete_started = started_of(&complete);
    let killed_started = started_of(&killed);
    let stopped_started = started_of(&stopped);
    let signed_started = started_of(&signed);

    // 6. Broken: a journal that is not one, a folder with only bagit.txt, an
    //    archive of garbage, an archive of something that is not a bundle.
    let garbage_journal = results.join("broken/garbage-journal");
    std::fs::create_dir_all(garbage_journal.join("data")).unwrap();
    std::fs::write(
        garbage_journal.join("bagit.txt"),
        "BagIt-Version: 1.0\nTag-File-Character-Encoding: UTF-8\n",
    )
    .unwrap();
    std::fs::write(garbage_journal.join("journal.jsonl"), "not json\n{}\n").unwrap();
    let only_bagit = results.join("broken/only-bagit");
    std::fs::create_dir_all(&only_bagit).unwrap();
    std::fs::write(only_bagit.join("bagit.txt"), "BagIt-Version: 1.0\n").unwrap();
    let junk_archive = results.join("broken/junk.tar.zst");
    std::fs::write(&junk_archive, b"\x00\x01 this is no zstd frame at all").unwrap();
    let not_a_bag = results.join("broken/not-a-bag.tar.zst");
    {
        // A real tar.zst of a folder without bagit.txt (made here, so the
        // test needs no zstd program).
        let mut tar = tar::Builder::new(Vec::new());
        let mut head = tar::Header::new_gnu();
        head.set_size(5);
        head.set_mode(0o644);
        tar.append_data(&mut head, "stuff/readme.txt", &b"hello"[..])
            .unwrap();
        let bytes = tar.into_inner().unwrap();
        std::fs::write(&not_a_bag, zstd::encode_all(&bytes[..], 3).unwrap()).unwrap();
    }

    // Decoys: a link back up the tree (a loop if followed), a link to a
    // bundle outside the tree, files that are no bundle, an empty folder.
    let outside = make_bundle(&tmp.path().join("outside"), SweepStatus::Complete);
    std::os::unix::fs::symlink(&results, results.join("2026/loop")).unwrap();
    std::os::unix::fs::symlink(&outside, results.join("link-to-outside")).unwrap();
    std::fs::write(results.join("notes.txt"), "not a bundle").unwrap();
    std::fs::write(results.join("2026/quick.report.md"), "# report").unwrap();
    std::fs::create_dir_all(results.join("empty/folder")).unwrap();

    let garbage_sizes = sizes(&garbage_journal);
    let expected = vec![
        // Oldest first (the order they were created in) ...
        Expected {
            path: complete.clone(),
            kind: "folder",
            matrix: Some("quick"),
            hosts: vec!["lab1"],
            started: Some(complete_started),
            status: "complete".into(),
            closed: true,
            tally: Some([4, 1, 0, 0]),
            sizes: sizes(&complete),
            signer: None,
            rerun_of: None,
        },
        Expected {
            path: killed.clone(),
            kind: "folder",
            matrix: Some("half"),
            hosts: vec!["lab2", "lab3"],
            started: Some(killed_started),
            status: "incomplete".into(),
            closed: false,
            tally: Some([1, 1, 1, 0]),
            sizes: sizes(&killed),
            signer: None,
            rerun_of: None,
        },
        Expected {
            path: stopped.clone(),
            kind: "folder",
            matrix: Some("stopped"),
            hosts: vec!["lab1"],
            started: Some(stopped_started),
            status: "incomplete".into(),
            closed: true,
            tally: Some([1, 0, 0, 0]),
            sizes: sizes(&stopped),
            signer: None,
            rerun_of: Some(complete_name.clone()),
        },
        Expected {
            path: archived.0.clone(),
            kind: "archive",
            matrix: Some("packed"),
            hosts: vec!["lab10", "lab9"],
            started: Some(archived.1.clone()),
            status: "complete".into(),
            closed: true,
            tally: Some([2, 0, 0, 0]),
            sizes: sizes(&archived.0),
            signer: Some(fp.clone()),
            rerun_of: None,
        },
        Expected {
            path: signed.clone(),
            kind: "folder",
            matrix: Some("quick"),
            hosts: vec!["lab1"],
            started: Some(signed_started),
            status: "complete".into(),
            closed: true,
            tally: Some([4, 1, 0, 0]),
            sizes: sizes(&signed),
            signer: Some(fp.clone()),
            rerun_of: None,
        },
        // ... then the unreadable ones (no start), by path.
        Expected {
            path: garbage_journal.clone(),
            kind: "folder",
            matrix: None,
            hosts: vec![],
            started: None,
            status: "unreadable: journal.jsonl does not start with a sweep_started line".into(),
            closed: false,
            tally: None,
            sizes: garbage_sizes,
            signer: None,
            rerun_of: None,
        },
        Expected {
            path: junk_archive.clone(),
            kind: "archive",
            matrix: None,
            hosts: vec![],
            started: None,
            status: String::new(), // checked by prefix below
            closed: false,
            tally: None,
            sizes: sizes(&junk_archive),
            signer: None,
            rerun_of: None,
        },
        Expected {
            path: not_a_bag.clone(),
            kind: "archive",
            matrix: None,
            hosts: vec![],
            started: None,
            status: "unreadable: archive: it holds no bagit.txt: not a bundle".into(),
            closed: false,
            tally: None,
            sizes: sizes(&not_a_bag),
            signer: None,
            rerun_of: None,
        },
        Expected {
            path: only_bagit.clone(),
            kind: "folder",
            matrix: None,
            hosts: vec![],
            started: None,
            status: "unreadable: it has no journal.jsonl".into(),
            closed: false,
            tally: None,
            sizes: sizes(&only_bagit),
            signer: None,
            rerun_of: None,
        },
    ];
    let junk_status = |s: &str| {
        assert!(s.starts_with("unreadable: archive: "), "{s}");
    };

    // The library.
    let l = listing::list(&results).unwrap();
    assert!(l.warnings.is_empty(), "{:?}", l.warnings);
    let paths: Vec<_> = l.bundles.iter().map(|b| b.path.clone()).collect();
    let want: Vec<_> = expected.iter().map(|e| e.path.clone()).collect();
    assert_eq!(paths, want);
    for (b, e) in l.bundles.iter().zip(&expected) {
        if e.path == junk_archive {
            junk_status(&b.status.text());
            assert!(matches!(b.status, ListStatus::Unreadable(_)));
            let mut e = e.clone();
            e.status = b.status.text();
            check(b, &e);
        } else {
            check(b, e);
        }
    }
    assert_eq!(l.bundles[3].kind, BundleKind::Archive);

    // --json: one object per line, the same fields; exit 1 (unreadable
    // bundles), each named on stderr.
    let o = run(fsmatrix().args(["ls", "--json"]).arg(&results));
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let stderr = text(&o.stderr);
    assert!(
        stderr.contains(&format!(
            "{}: unreadable: it has no journal.jsonl",
            only_bagit.display()
        )) && stderr.contains("4 of 9 bundles could not be read"),
        "{stderr}"
    );
    let lines: Vec<Value> = text(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(lines.len(), expected.len());
    for (v, e) in lines.iter().zip(&expected) {
        if e.path == junk_archive {
            junk_status(v["status"].as_str().unwrap());
            let mut e = e.clone();
            e.status = v["status"].as_str().unwrap().to_string();
            check_json(v, &e);
        } else {
            check_json(v, e);
        }
    }

    // The table: 100 columns at most, a header, one row per bundle in the
    // same order.
    let o = run(fsmatrix().arg("ls").arg(&results));
    assert_eq!(o.status.code(), Some(1));
    let table = text(&o.stdout);
    let rows: Vec<&str> = table.lines().collect();
    assert_eq!(rows.len(), expected.len() + 1, "{table}");
    for r in &rows {
        assert!(
            r.chars().count() <= 100,
            "{} columns: {r}",
            r.chars().count()
        );
    }
    assert!(
        rows[0].starts_with("STARTED (UTC) ")
            && rows[0].contains(" STATUS ")
            && rows[0].contains(" SIGNER ")
            && rows[0].contains(" RERUN OF ")
            && rows[0].ends_with(" BUNDLE"),
        "{table}"
    );
    let by_status = |i: usize, status: &str, cells: &str| {
        assert!(rows[i].contains(status), "row {i}: {table}");
        assert!(rows[i].contains(cells), "row {i} wants {cells:?}:\n{table}");
    };
    by_status(1, "complete", "   4       1");
    by_status(2, "incomplete", "   1       1");
    by_status(3, "incomplete", "   1       0");
    by_status(4, "complete", "   2       0");
    by_status(5, "complete", "   4       1");
    for r in &rows[6..] {
        assert!(r.contains("unreadable"), "{table}");
    }
    // Crowded (every column shown): the widest cells are cut, the bundle's
    // path keeping its end.
    assert!(
        rows[1].contains(" quick ") && rows[1].contains(" lab1 "),
        "{table}"
    );
    assert!(
        rows[2].contains(" half ") && rows[2].contains(" lab2"),
        "{table}"
    );
    assert!(rows[3].contains(" …"), "the re-run's name is cut: {table}");
    let fp8 = &fp["SHA256:".len().."SHA256:".len() + 8];
    assert!(rows[4].contains(fp8) && rows[5].contains(fp8), "{table}");
    assert!(!rows[1].contains(fp8), "{table}");
    assert!(rows[4].ends_with(".tar.zst"), "{table}");
    for (i, e) in expected.iter().enumerate() {
        let name = e.path.strip_prefix(&results).unwrap().to_string_lossy();
        let shown = rows[i + 1]
            .rsplit(' ')
            .next()
            .unwrap()
            .trim_start_matches('…');
        assert!(name.ends_with(shown), "{name} {shown}: {table}");
    }
    let when = |t: &str| {
        // `2026-12-01T10:00:07.123Z` is shown as `2026-12-01 10:00`.
        format!("{} {}", &t[..10], &t[11..16])
    };
    assert!(rows[1].starts_with(&when(expected[0].started.as_deref().unwrap())));

    // Only the readable part: exit 0, paths relative to the folder listed,
    // no SIGNER or RERUN OF column, the hosts cut to fit 100 columns
    // (the bundle's path is cut last).
    let o = run(fsmatrix().args(["ls", "--json"]).arg(results.join("2026")));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout).lines().count(), 2);
    let o = run(fsmatrix().arg("ls").arg(results.join("2026")));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let short = |b: u64| listing::short_size(b);
    let want = format!(
        "STARTED (UTC)     STATUS      DONE  FAILED  SIZE  MATRIX  HOSTS  BUNDLE\n\
         {}  complete       4       1  {:>4}  quick   lab1   {}\n\
         {}  incomplete     1       1  {:>4}  half    lab2…  nested/deeper/{}\n",
        when(expected[0].started.as_deref().unwrap()),
        short(expected[0].sizes.1),
        complete_name,
        when(expected[1].started.as_deref().unwrap()),
        short(expected[1].sizes.1),
        killed.file_name().unwrap().to_string_lossy(),
    );
    assert_eq!(text(&o.stdout), want);

    // A bundle folder or an archive lists just itself.
    let o = run(fsmatrix().args(["ls", "--json"]).arg(&archived.0));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let v: Value = serde_json::from_str(text(&o.stdout).trim()).unwrap();
    check_json(&v, &expected[3]);
    let o = run(fsmatrix().args(["ls", "--json"]).arg(&killed));
    let v: Value = serde_json::from_str(text(&o.stdout).trim()).unwrap();
    check_json(&v, &expected[1]);

    // The default folder is `run`'s default --out, `results`.
    let o = run(fsmatrix().args(["ls", "--json"]).current_dir(tmp.path()));
    assert_eq!(o.status.code(), Some(1));
    let v: Value = serde_json::from_str(text(&o.stdout).lines().next().unwrap()).unwrap();
    assert_eq!(v["path"], "results/2026/".to_string() + &complete_name);

    // A folder that does not exist: exit 2.
    let o = run(fsmatrix().arg("ls").arg(tmp.path().join("nowhere")));
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("nowhere"));
}

/// A resume under way (the journal reopened, not yet closed again) is
/// incomplete and not closed, whatever bag-info still says; its cells as the
/// last running tally says, a re-run cell counted once.
#[test]
fn a_reopened_bundle_is_incomplete_until_closed_again() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = make_bundle(tmp.path(), SweepStatus::Incomplete);
    let mut b = Bundle::open(&dir).unwrap();
    // c05 failed before; the resume discards it and runs it again.
    b.discard_cell("c05").unwrap();
    write_cell(&mut b, &cell("c05", "xfs", 1, 1, done(200.0)));
    let l = listing::list(tmp.path()).unwrap();
    let s = &l.bundles[0];
    assert_eq!(s.status, ListStatus::Incomplete);
    assert!(!s.closed);
    let t = s.tally.unwrap();
    assert_eq!((t.done, t.failed), (5, 0));
    b.close(SweepStatus::Complete).unwrap();
    let s = &listing::list(tmp.path()).unwrap().bundles[0];
    assert_eq!(s.status, ListStatus::Complete);
    assert!(s.closed);
    assert_eq!(s.tally.unwrap().done, 5);
}

/// The bundle written by the first writer (no outcomes in its journal):
/// listed, its counts unknown rather than guessed.
#[test]
fn an_old_journal_without_outcomes_lists_with_unknown_counts() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/bundle-v1");
    let l = listing::list(&fixture).unwrap();
    assert_eq!(l.bundles.len(), 1);
    let s = &l.bundles[0];
    assert_eq!(s.status, ListStatus::Complete);
    assert_eq!(s.matrix.as_deref(), Some("quick"));
    assert_eq!(s.hosts, ["lab1"]);
    assert_eq!(s.tally, None);
    let table = listing::render_table(&l.bundles, &fixture, 100);
    assert!(
        table
            .lines()
            .nth(1)
            .unwrap()
            .contains("complete     ?       ?"),
        "{table}"
    );
}

/// Nothing is read through a link or from a FIFO planted in a bundle: the
/// bundle is listed as unreadable, at once.
#[test]
fn a_planted_link_or_fifo_is_not_read() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = make_bundle(tmp.path(), SweepStatus::Complete);
    let journal = dir.join("journal.jsonl");
    let copy = tmp.path().join("journal-copy.jsonl");
    std::fs::rename(&journal, &copy).unwrap();
    std::os::unix::fs::symlink(&copy, &journal).unwrap();
    let fifo = dir.join("tagmanifest-sha256.txt.sig");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let t0 = std::time::Instant::now();
    let l = listing::list(tmp.path()).unwrap();
    assert!(t0.elapsed().as_secs() < 10);
    let s = &l.bundles[0];
    assert_eq!(
        s.status,
        ListStatus::Unreadable("journal.jsonl is a symbolic link".into())
    );
    // bag-info is still read.
    assert_eq!(s.matrix.as_deref(), Some("quick"));
    assert!(s.signed);
    assert_eq!(s.signer, None);
    assert!(
        s.signature_problem
            .as_deref()
            .is_some_and(|p| p.contains("not a regular file")),
        "{:?}",
        s.signature_problem
    );
}
