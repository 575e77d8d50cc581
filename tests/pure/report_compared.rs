//! What was compared and what may be pooled (issue 27): `report` refuses to
//! pool bundles whose workloads or variants are defined otherwise, says
//! what differs when they are side by side, and leads with the system and
//! variant tables from the bundles' facts and plans.
use std::path::Path;
use std::process::{Command, Output};

use assert_cmd::cargo::CommandCargoExt;

use super::bundle_common::make_planned_bundle;

fn report(args: &[&str], bundles: &[&Path]) -> Output {
    Command::cargo_bin("fsmatrix")
        .unwrap()
        .arg("report")
        .args(args)
        .args(bundles)
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn bundles_whose_duration_differs_are_not_pooled_and_side_by_side_say_so() {
    let tmp = tempfile::tempdir().unwrap();
    let a = make_planned_bundle(tmp.path(), "a", 10, "2026-12-01T10:00:00Z");
    let b = make_planned_bundle(tmp.path(), "b", 8, "2026-12-02T10:00:00Z");
    let said = "workload \"tpcb\" differs between a and b in duration (10 s vs 8 s)";

    let out = report(&[], &[&a, &b]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
    assert!(stderr.contains(said), "{stderr}");
    assert!(stderr.contains("--by-bundle"), "{stderr}");
    // Only the duration differs: no other key is named.
    assert!(!stderr.contains("variant \""), "{stderr}");

    for format in ["md", "html"] {
        let out = report(&["--by-bundle", "--format", format], &[&a, &b]);
        let stdout = text(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let at = stdout.find("Definitions differ:").expect(&stdout);
        // Above the tables.
        for row in ["ext4 @ a", "ext4 @ b"] {
            assert!(at < stdout.find(row).expect(row), "{stdout}");
        }
        assert!(stdout.contains("duration (10 s vs 8 s)"), "{stdout}");
    }
    let out = report(&["--by-bundle", "--format", "json"], &[&a, &b]);
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let d = &v["definition_differences"];
    assert_eq!(d.as_array().map(Vec::len), Some(1), "{d}");
    assert_eq!(d[0]["kind"], "workload");
    assert_eq!(d[0]["name"], "tpcb");
    assert_eq!(d[0]["bundles"], serde_json::json!(["a", "b"]));
    assert_eq!(
        d[0]["keys"],
        serde_json::json!([{"key": "duration", "values": ["10 s", "8 s"]}])
    );
}

#[test]
fn bundles_defined_alike_still_pool() {
    let tmp = tempfile::tempdir().unwrap();
    let a = make_planned_bundle(tmp.path(), "a", 10, "2026-12-01T10:00:00Z");
    let b = make_planned_bundle(tmp.path(), "b", 10, "2026-12-02T10:00:00Z");
    let out = report(&[], &[&a, &b]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // Two runs from each bundle: one group of four.
    assert!(stdout.contains("| lab1 | ext4 | ext4 | 4 |"), "{stdout}");
    assert!(!stdout.contains("DEFINITIONS DIFFER"), "{stdout}");
    // One system row and one row per variant, with both bundles.
    assert!(stdout.contains("| a, b |"), "{stdout}");
}

#[test]
fn the_system_and_variant_tables_say_what_was_compared_in_every_format() {
    let tmp = tempfile::tempdir().unwrap();
    let a = make_planned_bundle(tmp.path(), "a", 10, "2026-12-01T10:00:00Z");
    let md = text(&report(&[], &[&a]).stdout);
    let html = text(&report(&["--format", "html"], &[&a]).stdout);
    // From the facts.
    let system = [
        "Debian GNU/Linux 12 (bookworm)",
        "6.1.0-28-amd64 x86_64",
        "AMD EPYC 7B13 × 2",
        "8.0 GiB",
        "/dev/loop0 (4 GiB, model QEMU HARDDISK, rotational)",
        "postgres (PostgreSQL) 15.10 (Debian 15.10-0+deb12u1)",
        "zfs: zfs-fuse 0.7.0-25+b1",
        "ext4: kernel 6.1.0-28-amd64",
    ];
    // From the plan.
    let variants = [
        "compression=lz4, recordsize=8k",
        "shared_buffers=32MB",
        "noatime",
    ];
    for (format, out) in [("md", &md), ("html", &html)] {
        for want in system.iter().chain(&variants) {
            assert!(out.contains(want), "{format} lacks {want:?}:\n{out}");
        }
    }
    assert!(md.contains("## System under test\n\n| host | OS | kernel | CPU | memory | disks | PostgreSQL | filesystem implementation |"), "{md}");
    assert!(md.contains("## Filesystem variants\n\n| variant | type | mkfs options | mount options | filesystem properties | PostgreSQL settings |"), "{md}");
    assert!(
        md.contains("| ext4 | ext4 | defaults | noatime | defaults | shared_buffers=32MB |"),
        "{md}"
    );
    // After the header notes, before the result tables.
    assert!(md.find("## System under test") < md.find("## tpcb"), "{md}");
    assert!(html.contains("<h2>System under test</h2>"), "{html}");
    assert!(
        html.find("<h2>Filesystem variants</h2>") < html.find("<h2>Plots</h2>"),
        "{html}"
    );

    let out = report(&["--format", "json"], &[&a]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let s = &v["systems"][0];
    assert_eq!(s["host"], "lab1", "{s}");
    assert_eq!(s["cpu_model"], "AMD EPYC 7B13");
    assert_eq!(s["cpu_count"], 2);
    assert_eq!(s["memory_bytes"], 8_589_934_592_u64);
    assert_eq!(s["disks"][0]["rotational"], true);
    assert_eq!(s["disks"][0]["model"], "QEMU HARDDISK");
    let zfs = s["filesystems"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["fs_type"] == "zfs")
        .expect("zfs");
    assert_eq!(zfs["implementation"], "zfs-fuse 0.7.0-25+b1");
    let names: Vec<&str> = v["variants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["variant"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["ext4", "zfs-lz4", "xfs"]);
    let z = &v["variants"][1]["definition"];
    assert_eq!(z["properties.compression"], "lz4", "{z}");
    assert_eq!(z["postgres.shared_buffers"], "32MB", "{z}");
    assert_eq!(z["type"], "zfs");
}

/// A bundle written before the plan was kept: its facts still fill the
/// system table, and what it did not record is said to be not recorded.
#[test]
fn an_old_bundle_says_what_it_did_not_record() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/bundle-v1");
    let md = text(&report(&[], &[&fixture]).stdout);
    assert!(
        md.contains("| lab1 | not recorded | 6.1 | not recorded |"),
        "{md}"
    );
    assert!(
        md.contains("| ext4 | ext4 | not recorded | not recorded | not recorded | not recorded |"),
        "{md}"
    );
}
