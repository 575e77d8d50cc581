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

    // ... and an archive made from it by hand (tar --zstd runs the zstd program) is caught
    // by verify, file named.
    if !crate::support::skip::tool_or_skip("zstd", "zstd") {
        return;
    }
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

/// A `.tar.zst` written by `builder`, at `path`.
fn tar_zst(path: &Path, builder: impl FnOnce(&mut tar::Builder<Vec<u8>>)) {
    let mut b = tar::Builder::new(Vec::new());
    builder(&mut b);
    let bytes = b.into_inner().expect("tar");
    let z = zstd::encode_all(&bytes[..], 3).expect("zstd");
    std::fs::write(path, z).expect("write archive");
}

/// An archive is other people's input: links, special files and members
/// that leave the folder are refused before anything lands outside it.
#[test]
fn hostile_archives_are_refused_and_nothing_lands_outside() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let link = tmp.path().join("link.tar.zst");
    tar_zst(&link, |b| {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Symlink);
        h.set_size(0);
        h.set_mode(0o777);
        b.append_link(&mut h, "bag/data", "/etc")
            .expect("append link");
    });
    let dotdot = tmp.path().join("dotdot.tar.zst");
    tar_zst(&dotdot, |b| {
        let data = b"evil\n";
        let mut h = tar::Header::new_old();
        h.as_old_mut().name[..12].copy_from_slice(b"../evil-file");
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_entry_type(tar::EntryType::Regular);
        h.set_cksum();
        b.append(&h, &data[..]).expect("append");
    });
    for (archive, why) in [
        (&link, "is a Symlink, not a file or a folder"),
        (&dotdot, "leaves the archive's folder"),
    ] {
        let o = fsmatrix()
            .arg("verify")
            .arg(archive)
            .output()
            .expect("verify");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(why), "{err}");
    }
    assert!(!tmp.path().join("evil-file").exists());
    assert!(!std::env::temp_dir().join("evil-file").exists());

    // A planted `.partial` (a link to a file of someone else's) is not
    // followed: archive refuses and the file keeps its content.
    let bag = tmp.path().join("quick-20260101T000000Z");
    copy_dir(fixture(), &bag);
    let victim = tmp.path().join("victim.txt");
    std::fs::write(&victim, "keep me\n").expect("write");
    std::os::unix::fs::symlink(
        &victim,
        tmp.path().join("quick-20260101T000000Z.tar.zst.partial"),
    )
    .expect("symlink");
    let o = fsmatrix()
        .arg("archive")
        .arg(&bag)
        .output()
        .expect("archive");
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(std::fs::read_to_string(&victim).expect("read"), "keep me\n");
}

/// Issue 24 (low): files outside data/ that the tagmanifest does not list
/// (at the top level, or in another folder) made `verify` say OK and were
/// packed by `archive`.  Now `verify` names each one (made safe for the
/// terminal) and fails, and `archive` refuses the bag: nothing vouches for
/// such a file, and an archive is what gets published.
#[test]
fn unlisted_files_outside_data_fail_verify_and_are_not_archived() {
    for (rel, shown) in [
        ("notes.txt", "notes.txt"),
        ("extra/deep/x.bin", "extra/deep/x.bin"),
        ("evil\u{1b}[2Jname\n.txt", "evil\\u{1b}[2Jname\\n.txt"),
    ] {
        let tmp = tempfile::tempdir().expect("tempdir");
        let bag = tmp.path().join("quick-20260101T000000Z");
        copy_dir(fixture(), &bag);
        let path = bag.join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(&path, b"not vouched for").expect("write");
        let v = fsmatrix().arg("verify").arg(&bag).output().expect("verify");
        let out = String::from_utf8_lossy(&v.stdout);
        assert_eq!(v.status.code(), Some(1), "{rel:?}: {out}");
        assert!(
            out.contains(&format!(
                "extra (outside data/ and not in tagmanifest-sha256.txt): {shown}"
            )),
            "{rel:?}: {out}"
        );
        assert!(!out.contains('\u{1b}'), "{out:?}");
        let a = fsmatrix()
            .arg("archive")
            .arg(&bag)
            .output()
            .expect("archive");
        assert!(!a.status.success(), "{rel:?}: archived");
        assert!(
            !tmp.path().join("quick-20260101T000000Z.tar.zst").exists(),
            "{rel:?}"
        );
    }
    // The signature file and the listed tag files are not extra.
    let tmp = tempfile::tempdir().expect("tempdir");
    let bag = tmp.path().join("quick-20260101T000000Z");
    copy_dir(fixture(), &bag);
    let v = fsmatrix().arg("verify").arg(&bag).output().expect("verify");
    assert!(v.status.success(), "{}", String::from_utf8_lossy(&v.stdout));
}

/// The folder name inside an archive is the archive maker's text: `verify`
/// of the `.tar.zst` prints it made safe for the terminal (issue 24, low).
#[test]
fn the_folder_name_inside_an_archive_reaches_the_terminal_escaped() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let bag = tmp.path().join("evil\u{1b}]0;owned\u{7}name");
    copy_dir(fixture(), &bag);
    let a = fsmatrix()
        .arg("archive")
        .arg(&bag)
        .output()
        .expect("archive");
    assert!(a.status.success(), "{}", String::from_utf8_lossy(&a.stderr));
    // Handed on under a plain name: the folder name inside stays.
    let out = tmp.path().join("plain.tar.zst");
    std::fs::rename(tmp.path().join("evil\u{1b}]0;owned\u{7}name.tar.zst"), &out).expect("rename");
    let v = fsmatrix().arg("verify").arg(&out).output().expect("verify");
    let text = String::from_utf8_lossy(&v.stdout);
    assert!(v.status.success(), "{text}");
    assert!(text.contains("evil\\u{1b}]0;owned\\u{7}name"), "{text:?}");
    assert!(
        !text.contains('\u{1b}') && !text.contains('\u{7}'),
        "{text:?}"
    );
}
