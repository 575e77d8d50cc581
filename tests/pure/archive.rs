//! `fsmatrix archive` and `verify` of the archive: one `.tar.zst` that
//! verifies like the bag it holds, and detects what the bag's verify detects.
use std::path::Path;
use std::process::Command;

fn fsmatrix() -> Command {
    Command::new(env!("CARGO_BIN_EXE_fsmatrix"))
}

fn copy_dir(from: &Path, to: &Path) {
    let ok = Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()
        .expect("cp");
    assert!(ok.success());
}

fn fixture() -> &'static Path {
    Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/bundle-v1"
    ))
}

#[test]
fn archive_verifies_like_the_bag_and_a_changed_byte_is_named() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let bag = tmp.path().join("quick-20260101T000000Z");
    copy_dir(fixture(), &bag);
    let o = fsmatrix()
        .arg("archive")
        .arg(&bag)
        .output()
        .expect("archive");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let archive = tmp.path().join("quick-20260101T000000Z.tar.zst");
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        archive.display().to_string()
    );
    let v = fsmatrix()
        .arg("verify")
        .arg(&archive)
        .output()
        .expect("verify");
    assert!(v.status.success(), "{}", String::from_utf8_lossy(&v.stderr));
    assert!(String::from_utf8_lossy(&v.stdout).starts_with("OK "));

    // A second archive of the same bag is refused, not overwritten.
    let again = fsmatrix()
        .arg("archive")
        .arg(&bag)
        .output()
        .expect("archive");
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("already exists"));

    // A bag with a changed byte is not archived ...
    let results = bag.join("data/results.jsonl");
    let mut bytes = std::fs::read(&results).expect("read");
    bytes[0] ^= 0x20;
    std::fs::write(&results, &bytes).expect("write");
    std::fs::remove_file(&archive).expect("rm");
    let bad = fsmatrix()
        .arg("archive")
        .arg(&bag)
        .output()
        .expect("archive");
    assert_eq!(
        bad.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );
    assert!(!archive.exists());

    // ... and an archive made from it by hand is caught by verify, file named.
    let ok = Command::new("tar")
        .args(["--zstd", "-cf"])
        .arg(&archive)
        .arg("-C")
        .arg(tmp.path())
        .arg("quick-20260101T000000Z")
        .status()
        .expect("tar");
    assert!(ok.success());
    let v = fsmatrix()
        .arg("verify")
        .arg(&archive)
        .output()
        .expect("verify");
    assert_eq!(v.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&v.stdout).contains("data/results.jsonl"));
}
