//! Reading a Linux host's facts loads no kernel module (issue 39): OpenZFS's
//! libzfs loads the zfs module when /dev/zfs is missing, so `facts` (and the
//! guard's pool check) ask `zpool` and `zfs` nothing unless ZFS runs here.
use std::path::PathBuf;
use std::process::Command;

#[test]
fn linux_facts_ask_zpool_only_where_zfs_runs() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let bin = tmp.path().join("bin");
    std::fs::create_dir_all(&bin).expect("mkdir");
    let marks = tmp.path().join("asked");
    // zpool and zfs that note being asked (as libzfs would load the module).
    for tool in ["zpool", "zfs"] {
        let p = bin.join(tool);
        std::fs::write(
            &p,
            format!(
                "#!/bin/sh\necho {tool} \"$@\" >>'{}'\nexit 1\n",
                marks.display()
            ),
        )
        .expect("write");
        let mut perm = std::fs::metadata(&p).expect("meta").permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
        std::fs::set_permissions(&p, perm).expect("chmod");
    }
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../remote-scripts/linux.sh");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("sh")
        .arg(&script)
        .arg("facts")
        .arg("dev=/dev/fsmx-no-such-disk")
        .env("PATH", &path)
        .output()
        .expect("run linux.sh facts");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let asked = std::fs::read_to_string(&marks).unwrap_or_default();
    let runs = std::path::Path::new("/dev/zfs").exists()
        || ["/var/run/zfs/zfs_socket", "/run/zfs/zfs_socket"]
            .iter()
            .any(|s| std::path::Path::new(s).exists());
    if runs {
        // ZFS runs here (a module or a zfs-fuse): asking it is right.
        assert!(asked.contains("zpool list"), "{asked}\n{stdout}");
    } else {
        assert_eq!(asked, "", "facts asked zpool/zfs where ZFS does not run");
        assert!(stdout.contains("zfs_running=no\n"), "{stdout}");
    }
}
