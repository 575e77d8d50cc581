//! The checked-in bundle written by the first version of the writer
//! (tests/fixtures/bundle-v1) must always verify and report.
use super::bundle_common;

use std::path::{Path, PathBuf};
use std::process::Command;

use assert_cmd::cargo::CommandCargoExt;
use fsmatrix::results::bundle::read::load_bundle_results;
use fsmatrix::results::report::markdown::render_markdown;
use fsmatrix::results::{verify, SweepStatus};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/bundle-v1")
}

#[test]
fn old_bundle_verifies() {
    let r = verify(&fixture()).unwrap();
    assert!(r.is_ok(), "{:?}", r.problems);
    assert_eq!(r.payload_files, 20);
    assert_eq!(r.sweep_status.as_deref(), Some("complete"));
    let out = Command::cargo_bin("fsmatrix")
        .unwrap()
        .arg("verify")
        .arg(fixture())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn old_bundle_reports() {
    let cells = load_bundle_results(&fixture()).unwrap();
    assert_eq!(cells.len(), 5);
    let md = render_markdown(&cells);
    assert!(
        md.contains("| lab1 | ext4 | ext4 | 2 | 420.0 | 410.0–430.0 |"),
        "{md}"
    );
    assert!(
        md.contains("| lab1 | zfs-lz4 | zfs | 2 | 305.0 | 300.0–310.0 |"),
        "{md}"
    );
    assert!(
        md.contains("| c05 | lab1 | xfs | tpcb | 1 | 1 | failed | step mount, exit 32"),
        "{md}"
    );
    let out = Command::cargo_bin("fsmatrix")
        .unwrap()
        .arg("report")
        .arg(fixture())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    // The CLI verifies the checksums first and says so at the top.
    let said = "- Checksums verified before reporting: every file of bundle-v1 matches its bundle's sha256 manifests.\n";
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(said), "{stdout}");
    // The CLI also says what was compared, from the bundle's facts (its
    // tables are report_compared.rs's); the rest is the same report.
    let (start, end) = (
        stdout
            .find("## System under test")
            .expect("the system table"),
        stdout.find("## tpcb").expect("the results"),
    );
    let without = format!("{}{}", &stdout[..start], &stdout[end..]);
    assert_eq!(without.replacen(said, "", 1), md);
}

/// `report` verifies each bundle's checksums before reading it: a changed
/// file is refused with the bundle and the file named; `--allow-unverified`
/// reports on it anyway and says so plainly, in every format.
#[test]
fn report_verifies_checksums_first_and_refuses_a_changed_bundle() {
    let tmp = tempfile::tempdir().unwrap();
    let copy = tmp.path().join("copied");
    let src = fixture();
    let status = Command::new("cp")
        .arg("-a")
        .arg(&src)
        .arg(&copy)
        .status()
        .unwrap();
    assert!(status.success());
    let results = copy.join("data/results.jsonl");
    let text = std::fs::read_to_string(&results).unwrap();
    std::fs::write(&results, text.replacen("410", "910", 1)).unwrap();
    let report = |extra: &[&str]| {
        Command::cargo_bin("fsmatrix")
            .unwrap()
            .arg("report")
            .args(extra)
            .arg(&copy)
            .output()
            .unwrap()
    };
    let out = report(&[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(out.stdout.is_empty());
    assert!(
        stderr.contains(&copy.display().to_string())
            && stderr.contains("does not verify")
            && stderr.contains("changed: data/results.jsonl"),
        "{stderr}"
    );
    let out = report(&["--allow-unverified"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains(
            "NOT VERIFIED: bundle copied does not verify (1 problem: changed: data/results.jsonl"
        ),
        "{stdout}"
    );
    assert!(!stdout.contains("Checksums verified"), "{stdout}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("warning"));
    let out = report(&["--allow-unverified", "--format", "html"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("NOT VERIFIED: bundle copied"));
    let out = report(&["--allow-unverified", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["checksums"][0]["verified"], false, "{v}");
    // The original verifies, and the HTML header says so.
    let out = Command::cargo_bin("fsmatrix")
        .unwrap()
        .args(["report", "--format", "html"])
        .arg(fixture())
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("Checksums verified before reporting"));
}

/// Regenerates the fixture: `FSMX_FIXTURE_OUT=/tmp/x cargo test --test
/// bundle_fixture -- --ignored`, then copy the one bundle folder's content
/// to tests/fixtures/bundle-v1/.  Only when the format changes on purpose:
/// the old fixture should then stay too, as bundle-v1 beside a new v2.
#[test]
#[ignore]
fn make_fixture() {
    let out = std::env::var_os("FSMX_FIXTURE_OUT").expect("set FSMX_FIXTURE_OUT");
    let root = bundle_common::make_bundle(Path::new(&out), SweepStatus::Complete);
    println!("{}", root.display());
}
