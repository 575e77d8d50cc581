//! The bundle writer and verify, against the real filesystem and coreutils.
use super::bundle_common;

use std::fs;
use std::path::Path;
use std::process::Command;

use assert_cmd::cargo::CommandCargoExt;
use bundle_common::*;
use fsmatrix::results::bundle::journal::{self, JournalEvent};
use fsmatrix::results::bundle::manifest::sha256_file;
use fsmatrix::results::bundle::verify::Problem;
use fsmatrix::results::{verify, Bundle, BundleError, SweepStatus};

fn all_files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            out.extend(all_files(&e.path()));
        } else {
            out.push(e.path().display().to_string());
        }
    }
    out
}

fn sha256sum_c(dir: &Path, manifest: &str) {
    let out = Command::new("sha256sum")
        .arg("--strict")
        .arg("-c")
        .arg(manifest)
        .current_dir(dir)
        .output()
        .expect("sha256sum runs");
    assert!(
        out.status.success(),
        "sha256sum -c {manifest} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let ok_lines = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.ends_with(": OK"))
        .count();
    assert!(ok_lines > 0, "sha256sum checked nothing");
}

#[test]
fn closed_bundle_verifies_with_fsmatrix_and_coreutils() {
    let tmp = tempfile::tempdir().unwrap();
    let root = make_bundle(tmp.path(), SweepStatus::Complete);
    let name = root.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.starts_with("quick-") && name.ends_with('Z') && name.len() == "quick-".len() + 16,
        "{name}"
    );

    let r = verify(&root).unwrap();
    assert!(r.is_ok(), "{:?}", r.problems);
    // 3 snapshots + 5 cells × 3 files + results.jsonl + results.csv
    assert_eq!(r.payload_files, 3 + 15 + 2);
    assert_eq!(r.tag_files, 4);
    assert_eq!(r.sweep_status.as_deref(), Some("complete"));

    sha256sum_c(&root, "manifest-sha256.txt");
    sha256sum_c(&root, "tagmanifest-sha256.txt");

    let bagit = fs::read_to_string(root.join("bagit.txt")).unwrap();
    assert_eq!(
        bagit,
        "BagIt-Version: 1.0\nTag-File-Character-Encoding: UTF-8\n"
    );
    let info = fs::read_to_string(root.join("bag-info.txt")).unwrap();
    assert!(
        info.contains(&format!("Payload-Oxum: {}.20\n", r.payload_bytes)),
        "{info}"
    );
    assert!(
        info.contains("Bag-Software-Agent: fsmatrix 0.1.0\n"),
        "{info}"
    );
    assert!(info.contains("Sweep-Status: complete\n"), "{info}");
    assert!(info.contains("Matrix-Name: quick\n"), "{info}");

    // The journal: started, one cell_done per cell carrying real hashes, closed.
    let j = journal::read(&root.join("journal.jsonl")).unwrap();
    assert!(!j.torn_tail);
    assert!(matches!(
        j.events.first(),
        Some(JournalEvent::SweepStarted { .. })
    ));
    assert!(matches!(
        j.events.last(),
        Some(JournalEvent::Closed {
            status: SweepStatus::Complete,
            ..
        })
    ));
    let dones: Vec<_> = j
        .events
        .iter()
        .filter_map(|e| match e {
            JournalEvent::CellDone { cell, files, .. } => Some((cell, files)),
            _ => None,
        })
        .collect();
    assert_eq!(dones.len(), 5);
    for (cell, files) in dones {
        assert_eq!(files.len(), 3, "{cell}");
        for (rel, sum) in files {
            assert!(rel.starts_with(&format!("data/cells/{cell}/")));
            assert_eq!(&sha256_file(&root.join(rel)).unwrap().0, sum, "{rel}");
        }
    }

    // results.csv: header + one row per cell, tps as in the jsonl.
    let csv = fs::read_to_string(root.join("data/results.csv")).unwrap();
    let lines: Vec<_> = csv.lines().collect();
    assert_eq!(lines.len(), 6, "{csv}");
    assert!(lines[0].starts_with("cell_id,host,filesystem,fs_type,workload,clients"));
    assert!(
        lines[1].starts_with("c01,lab1,ext4,ext4,tpcb,1,1,1,false,done,410,"),
        "{}",
        lines[1]
    );
    assert!(lines[5].contains(",failed,"), "{}", lines[5]);

    // Atomic writes leave no temporary file anywhere.
    let leftovers: Vec<_> = all_files(&root)
        .into_iter()
        .filter(|p| p.contains(".fsmx-tmp."))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    // A closed bundle refuses further writes.
}

#[test]
fn closed_bundle_refuses_writes_and_bad_paths_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let mut b = Bundle::create(tmp.path(), "m").unwrap();
    for bad in ["../escape", "/abs", "a/../../b", "x\ny", "cells//x", "100%"] {
        let e = b.write(bad, b"x").unwrap_err();
        assert!(matches!(e, BundleError::BadPath { .. }), "{bad:?}: {e}");
    }
    assert!(!tmp.path().join("escape").exists());
    b.write("ok.txt", b"x").unwrap();
    b.close(SweepStatus::Incomplete).unwrap();
    let e = b.write("later.txt", b"x").unwrap_err();
    assert!(e.to_string().contains("is closed"), "{e}");
    // Names that would make an unsafe folder are refused.
    for bad in ["", "../x", "a b", ".hidden", "-x", "a/b"] {
        assert!(Bundle::create(tmp.path(), bad).is_err(), "{bad:?}");
    }
}

#[test]
fn create_never_reuses_a_folder() {
    let tmp = tempfile::tempdir().unwrap();
    // Two creates in the same UTC second map to the same folder; the second
    // must refuse.  Retry if the clock ticked over between them.
    for _ in 0..5 {
        let a = Bundle::create(tmp.path(), "same").unwrap();
        match Bundle::create(tmp.path(), "same") {
            Err(BundleError::Exists { path }) => {
                assert_eq!(path, a.path());
                // The first bundle is untouched.
                assert!(a.path().join("journal.jsonl").is_file());
                return;
            }
            Err(e) => panic!("unexpected error: {e}"),
            Ok(b) => assert_ne!(a.path(), b.path()),
        }
    }
    panic!("never got two creates within one second");
}

fn problems_after(mutate: impl FnOnce(&Path)) -> Vec<Problem> {
    let tmp = tempfile::tempdir().unwrap();
    let root = make_bundle(tmp.path(), SweepStatus::Complete);
    assert!(verify(&root).unwrap().is_ok());
    mutate(&root);
    let r = verify(&root).unwrap();
    assert!(!r.is_ok());
    // The CLI agrees: exit 1 and the problem printed.
    let out = Command::cargo_bin("fsmatrix")
        .unwrap()
        .arg("verify")
        .arg(&root)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    for p in &r.problems {
        assert!(stdout.contains(&p.to_string()), "{stdout}");
    }
    r.problems
}

#[test]
fn changed_byte_is_named_with_both_hashes() {
    let rel = "data/cells/c03/run-1-1.out";
    let mut expected = String::new();
    let problems = problems_after(|root| {
        let p = root.join(rel);
        expected = sha256_file(&p).unwrap().0;
        let mut bytes = fs::read(&p).unwrap();
        bytes[3] ^= 0x01;
        fs::write(&p, bytes).unwrap();
    });
    match problems.as_slice() {
        [Problem::Changed {
            path,
            expected: e,
            actual,
        }] => {
            assert_eq!(path, rel);
            assert_eq!(e, &expected);
            assert_ne!(actual, &expected);
            assert_eq!(actual.len(), 64);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn deleted_file_is_named() {
    let problems =
        problems_after(|root| fs::remove_file(root.join("data/hosts/lab1/facts.json")).unwrap());
    assert!(problems.contains(&Problem::Missing {
        path: "data/hosts/lab1/facts.json".into()
    }));
    // And the Oxum no longer matches.
    assert!(
        problems.iter().any(|p| matches!(p, Problem::Oxum { .. })),
        "{problems:?}"
    );
}

#[test]
fn added_file_is_named() {
    let problems =
        problems_after(|root| fs::write(root.join("data/cells/c01/sneaky.txt"), b"hi").unwrap());
    assert!(
        problems.contains(&Problem::Extra {
            path: "data/cells/c01/sneaky.txt".into()
        }),
        "{problems:?}"
    );
}

#[test]
fn changed_manifest_is_named() {
    // Someone "fixes" a payload change by editing the manifest: the
    // tagmanifest catches it and names the manifest.
    let problems = problems_after(|root| {
        let p = root.join("manifest-sha256.txt");
        let text = fs::read_to_string(&p).unwrap();
        let line = text
            .lines()
            .find(|l| l.ends_with("data/inventory.toml"))
            .unwrap();
        let forged = format!("{}  data/inventory.toml", "0".repeat(64));
        fs::write(&p, text.replace(line, &forged)).unwrap();
    });
    assert!(
        problems.iter().any(
            |p| matches!(p, Problem::TagChanged { path, .. } if path == "manifest-sha256.txt")
        ),
        "{problems:?}"
    );
    assert!(
        problems
            .iter()
            .any(|p| matches!(p, Problem::Changed { path, .. } if path == "data/inventory.toml")),
        "{problems:?}"
    );
}

#[test]
fn incomplete_bundle_closed_early_verifies() {
    let tmp = tempfile::tempdir().unwrap();
    let mut b = Bundle::create(tmp.path(), "quick").unwrap();
    b.write("matrix.toml", b"name = \"quick\"\n").unwrap();
    write_cell(&mut b, &sample_cells()[0]);
    // A cell half-written when Ctrl-C arrived: files but no cell_done.
    b.write("cells/c02/run-1-2.out", b"pgbench (15.10)\n")
        .unwrap();
    let root = b.close(SweepStatus::Incomplete).unwrap();
    let r = verify(&root).unwrap();
    assert!(r.is_ok(), "{:?}", r.problems);
    assert_eq!(r.sweep_status.as_deref(), Some("incomplete"));
    sha256sum_c(&root, "manifest-sha256.txt");
    sha256sum_c(&root, "tagmanifest-sha256.txt");

    // Closed before any cell: still a bag, with empty results.
    let mut b = Bundle::create(&tmp.path().join("other"), "quick").unwrap();
    let root = b.close(SweepStatus::Incomplete).unwrap();
    let r = verify(&root).unwrap();
    assert!(r.is_ok(), "{:?}", r.problems);
    assert_eq!(r.payload_files, 2);
}

#[test]
fn reopen_after_a_crash_reads_the_journal_and_closes_clean() {
    let tmp = tempfile::tempdir().unwrap();
    let cells = sample_cells();
    let root = {
        let mut b = Bundle::create(tmp.path(), "quick").unwrap();
        write_cell(&mut b, &cells[0]);
        write_cell(&mut b, &cells[1]);
        b.write("cells/c03/cell.json", b"{}").unwrap();
        b.path().to_owned()
        // dropped without close: the orchestrator was killed
    };
    // The kill also tore a journal line, a results line, and left a temp file.
    fs::OpenOptions::new()
        .append(true)
        .open(root.join("journal.jsonl"))
        .and_then(|mut f| {
            use std::io::Write;
            f.write_all(b"{\"event\":\"cell_do")
        })
        .unwrap();
    fs::OpenOptions::new()
        .append(true)
        .open(root.join("data/results.jsonl"))
        .and_then(|mut f| {
            use std::io::Write;
            f.write_all(b"{\"cell_id\":\"c0")
        })
        .unwrap();
    // timings.jsonl: one whole line, then a torn one.
    fs::write(
        root.join("data/timings.jsonl"),
        b"{\"host\":\"h\",\"kind\":\"setup\"}\n{\"host\":\"h\",\"ki",
    )
    .unwrap();
    fs::write(
        root.join("data/cells/c03/.fsmx-tmp.run-1-1.out.999"),
        b"partial",
    )
    .unwrap();
    assert!(verify(&root).is_ok()); // it is a bag folder...
    assert!(!verify(&root).unwrap().is_ok()); // ...that does not verify yet

    let mut b = Bundle::open(&root).unwrap();
    assert_eq!(b.done_cells().keys().collect::<Vec<_>>(), ["c01", "c02"]);
    assert!(b.cell_files_intact("c01"));
    assert!(!b.cell_files_intact("c03"));
    // A changed file makes its cell untrusted.
    fs::write(root.join("data/cells/c02/run-1-2.out"), b"changed").unwrap();
    assert!(!b.cell_files_intact("c02"));
    b.discard_cell("c02").unwrap();
    b.discard_cell("c03").unwrap();
    write_cell(&mut b, &cells[1]);
    write_cell(&mut b, &cells[2]);
    b.append_jsonl(
        "timings.jsonl",
        &serde_json::json!({"host": "h", "kind": "load"}),
    )
    .unwrap();
    let root = b.close(SweepStatus::Complete).unwrap();
    let r = verify(&root).unwrap();
    assert!(r.is_ok(), "{:?}", r.problems);
    let j = journal::read(&root.join("journal.jsonl")).unwrap();
    assert!(!j.torn_tail);
    assert!(j
        .events
        .iter()
        .any(|e| matches!(e, JournalEvent::Reopened { .. })));
    // results.jsonl: the torn line is gone and every cell is there once
    // (discard_cell removed c02's line from before the crash).
    let text = fs::read_to_string(root.join("data/results.jsonl")).unwrap();
    let ids: Vec<String> = text
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["cell_id"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(ids, ["c01", "c02", "c03"], "{text}");
    // timings.jsonl: the torn line is gone, the one appended after the
    // reopen is whole on its own line.
    let text = fs::read_to_string(root.join("data/timings.jsonl")).unwrap();
    assert_eq!(
        text,
        "{\"host\":\"h\",\"kind\":\"setup\"}\n{\"host\":\"h\",\"kind\":\"load\"}\n"
    );
}

#[test]
fn cli_verify_exit_codes() {
    let tmp = tempfile::tempdir().unwrap();
    let root = make_bundle(tmp.path(), SweepStatus::Complete);
    let out = Command::cargo_bin("fsmatrix")
        .unwrap()
        .arg("verify")
        .arg(&root)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.starts_with("OK ") && stdout.contains("20 payload files"),
        "{stdout}"
    );
    // Not a bag: exit 2 with a reason.
    let out = Command::cargo_bin("fsmatrix")
        .unwrap()
        .arg("verify")
        .arg(tmp.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no bagit.txt"));
    let out = Command::cargo_bin("fsmatrix")
        .unwrap()
        .arg("verify")
        .arg(tmp.path().join("nope"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// A bundle is other people's input: links and special files in it are
/// never followed, hashed, read through or written through.
#[test]
fn links_and_special_files_in_a_bundle_are_refused_not_followed() {
    use std::os::unix::fs::symlink;
    let tmp = tempfile::tempdir().unwrap();
    let outside = tmp.path().join("outside");
    fs::create_dir(&outside).unwrap();
    fs::write(outside.join("secret.txt"), "not the bag's\n").unwrap();

    // A payload file replaced by a link to a file outside the bag, with a
    // manifest that matches it: verify refuses instead of saying OK.
    let root = make_bundle(&tmp.path().join("a"), SweepStatus::Complete);
    let results = root.join("data/results.csv");
    fs::remove_file(&results).unwrap();
    symlink(outside.join("secret.txt"), &results).unwrap();
    let r = verify(&root).unwrap();
    assert!(!r.is_ok());
    assert!(
        r.problems.iter().any(|p| matches!(p, Problem::Unsafe { what } if what.contains("data/results.csv is a symbolic link"))),
        "{:?}",
        r.problems
    );

    // A FIFO in the payload: verify and report return at once (they would
    // block forever reading it).
    let root = make_bundle(&tmp.path().join("b"), SweepStatus::Complete);
    let fifo = root.join("data/cells/fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(made.success());
    let (tx, rx) = std::sync::mpsc::channel();
    let r2 = root.clone();
    std::thread::spawn(move || {
        let v = verify(&r2).map(|r| r.problems);
        let rep = fsmatrix::results::bundle::read::load_bundle_results(&r2).map(|_| ());
        let _ = tx.send((v, rep));
    });
    let (v, rep) = rx
        .recv_timeout(std::time::Duration::from_secs(10))
        .expect("verify and report return on a bag with a FIFO");
    let problems = v.unwrap();
    assert!(
        problems.iter().any(|p| matches!(p, Problem::Unsafe { what } if what.contains("data/cells/fifo is not a regular file"))),
        "{problems:?}"
    );
    assert!(rep.is_err());

    // data/cells a link to a folder outside: resume's open refuses before
    // writing or deleting anything there.
    let root = make_bundle(&tmp.path().join("c"), SweepStatus::Incomplete);
    let cells = root.join("data/cells");
    fs::rename(&cells, tmp.path().join("moved-cells")).unwrap();
    symlink(&outside, &cells).unwrap();
    let before = all_files(&outside);
    let Err(e) = Bundle::open(&root) else {
        panic!("an unsafe bag was opened")
    };
    assert!(
        e.to_string().contains("data/cells is a symbolic link"),
        "{e}"
    );
    assert_eq!(all_files(&outside), before);
    assert_eq!(
        fs::read_to_string(outside.join("secret.txt")).unwrap(),
        "not the bag's\n"
    );
}
