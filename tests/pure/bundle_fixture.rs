//! The checked-in bundle written by the first version of the writer
//! (tests/fixtures/bundle-v1) must always verify and report.
use super::bundle_common;

use std::path::{Path, PathBuf};
use std::process::Command;

use assert_cmd::cargo::CommandCargoExt;
use fsmatrix::results::report::{load_bundle_results, render_markdown};
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
    assert_eq!(String::from_utf8_lossy(&out.stdout), md);
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
