//! Every example matrix plans without error against the example inventory,
//! and its plan (table and cell list) is snapshot-tested.
use std::path::PathBuf;

use fsmatrix::config;
use fsmatrix::plan::{plan, render, render_cells};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

const EXAMPLES: &[&str] = &[
    "zfs-vs-ext4",
    "ext-xfs-clients",
    "zfs-compression",
    "bsd-vs-linux",
    "quick",
    "quick-bsd",
    "demo",
];

#[test]
fn every_example_matrix_plans_against_the_example_inventory() {
    let inv = root().join("inventory/example-lab.toml");
    let mut found: Vec<String> = std::fs::read_dir(root().join("matrix"))
        .expect("matrix/ exists")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".toml"))
        .collect();
    found.sort();
    let mut want: Vec<String> = EXAMPLES.iter().map(|n| format!("{n}.toml")).collect();
    want.sort();
    assert_eq!(found, want, "every matrix in matrix/ is covered here");
    for name in EXAMPLES {
        let m = root().join(format!("matrix/{name}.toml"));
        let (i, m) = match config::load(&inv, &m, fsmatrix::generator::script_uses) {
            Ok(x) => x,
            Err(e) => panic!("{name}: {e}"),
        };
        let p = plan(&i, &m);
        assert!(!p.cells.is_empty(), "{name} plans no cell");
        insta::assert_snapshot!(
            format!("example_{name}"),
            format!("{}\n{}", render(&p), render_cells(&p))
        );
    }
}

#[test]
fn quick_runs_everything_on_the_lab() {
    let (i, m) = match config::load(
        &root().join("inventory/lab.toml"),
        &root().join("matrix/quick.toml"),
        fsmatrix::generator::script_uses,
    ) {
        Ok(x) => x,
        Err(e) => panic!("{e}"),
    };
    let p = plan(&i, &m);
    assert!(p.dropped.is_empty(), "{:?}", p.dropped);
    assert_eq!(p.hosts.len(), 3);
    for h in &p.hosts {
        let v: Vec<&str> = h.fs_variants.iter().map(|v| v.as_str()).collect();
        assert_eq!(v, ["ext4", "xfs", "btrfs", "zfs"]);
        assert_eq!(h.cells.len(), 4 * 2 * 2);
    }
    // zfs-fuse: no lz4/zstd, no sync property.
    for c in p
        .cells
        .iter()
        .filter(|c| c.fs.fs_type == config::FsType::Zfs)
    {
        for prop in &c.fs.properties {
            assert!(prop.name.as_str() != "sync", "{prop:?}");
            assert!(!["lz4", "zstd"].contains(&prop.value.as_str()), "{prop:?}");
        }
    }
    // "a few minutes": the slowest host's estimate stays under a quarter hour.
    assert!(p.eta.as_secs() < 15 * 60, "{:?}", p.eta);
    insta::assert_snapshot!("lab_quick", render(&p));
}

#[test]
fn lab_inventory_has_the_lab_shape() {
    let i = match config::Inventory::load(&root().join("inventory/lab.toml")) {
        Ok(i) => i,
        Err(e) => panic!("{e}"),
    };
    let got: Vec<(String, String, String)> = i
        .hosts
        .iter()
        .map(|h| {
            (
                h.name.to_string(),
                h.address.to_string(),
                h.devices[0].to_string(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("lab1".into(), "10.203.0.11".into(), "/dev/loop0".into()),
            ("lab2".into(), "10.203.0.12".into(), "/dev/loop1".into()),
            ("lab3".into(), "10.203.0.13".into(), "/dev/loop2".into()),
        ]
    );
    let h = &i.hosts[0];
    assert_eq!(h.platform, config::Platform::Lab);
    assert_eq!(h.pg_port, 5433);
    assert_eq!(h.pg_bin_or_hint(), "/usr/lib/postgresql/15/bin");
    assert_eq!(
        h.auth,
        config::Auth::IdentityFile("/var/lib/fsmatrix/lab/id_ed25519".into())
    );
    assert_eq!(
        h.tags.iter().map(|t| t.as_str()).collect::<Vec<_>>(),
        ["lab"]
    );
}

#[test]
fn example_inventory_documents_every_kind_of_host() {
    let i = match config::Inventory::load(&root().join("inventory/example-lab.toml")) {
        Ok(i) => i,
        Err(e) => panic!("{e}"),
    };
    let by = |n: &str| i.hosts.iter().find(|h| h.name.as_str() == n).expect(n);
    assert_eq!(by("deb12-metal").become_, Some(config::Become::Sudo));
    assert_eq!(by("deb12-metal").port, 2222);
    assert_eq!(by("deb12-metal").consent_foreign[0].as_str(), "/dev/sdb");
    assert_eq!(by("dfly6").auth, config::Auth::Agent);
    assert_eq!(by("dfly6").pg_bin_or_hint(), "/usr/local/bin");
    assert_eq!(by("fbsd14").os, config::Os::Freebsd);
    assert_eq!(
        by("deb12-kvm").disk_bus.as_ref().map(|b| b.as_str()),
        Some("virtio")
    );
}

/// Every inventory in inventory/ loads (a new example cannot rot unseen).
#[test]
fn every_example_inventory_loads() {
    let mut n = 0;
    for e in std::fs::read_dir(root().join("inventory")).expect("inventory/ exists") {
        let p = e.expect("entry").path();
        if p.extension().is_some_and(|x| x == "toml") {
            if let Err(e) = config::Inventory::load(&p) {
                panic!("{}: {e}", p.display());
            }
            n += 1;
        }
    }
    assert!(n >= 3, "{n} inventories");
}

/// Issue 26: both halves of the BSD vs Linux study from one pair of files.
/// The physical hosts run their OS's filesystems; the Linux host's guests
/// boot Linux, FreeBSD and DragonFly (qemu runs on Linux only) with the
/// study's machine (12 GiB, 4 cpus, virtio but SATA for FreeBSD), each
/// naming its disk as it sees it, each with its own forwarded port, all on
/// the Linux host's one spare disk; the Linux guest runs exactly the
/// variants of its physical host, so every one gets a platform comparison.
#[test]
fn the_kvm_vs_metal_example_plans_both_halves_of_the_study() {
    let (i, m) = match config::load(
        &root().join("inventory/example-kvm-vs-metal.toml"),
        &root().join("matrix/bsd-vs-linux.toml"),
        fsmatrix::generator::script_uses,
    ) {
        Ok(x) => x,
        Err(e) => panic!("{e}"),
    };
    let by = |n: &str| i.hosts.iter().find(|h| h.name.as_str() == n).expect(n);
    for n in ["linux-metal", "freebsd-metal", "dragonfly-metal"] {
        assert!(by(n).guest_of.is_none() && by(n).vm.is_none(), "{n}");
    }
    let mut ports = Vec::new();
    for (guest, os, bus, device) in [
        ("linux-kvm", config::Os::Linux, "virtio-blk", "/dev/vdb"),
        ("freebsd-kvm", config::Os::Freebsd, "sata", "/dev/ada0"),
        (
            "dragonfly-kvm",
            config::Os::Dragonfly,
            "virtio-blk",
            "/dev/vbd1",
        ),
    ] {
        let g = by(guest);
        let vm = g.vm.as_ref().expect(guest);
        assert_eq!(
            g.guest_of.as_ref().map(|h| h.as_str()),
            Some("linux-metal"),
            "{guest}"
        );
        assert_eq!(g.os, os, "{guest}");
        assert_eq!(
            (
                vm.memory_mib,
                vm.cpus,
                vm.disk_bus.as_str(),
                vm.cache.as_str()
            ),
            (12288, 4, bus, "none"),
            "{guest}"
        );
        assert_eq!(vm.accel.as_str(), "kvm", "{guest}");
        assert_eq!(vm.disk.as_str(), "/dev/sdb", "{guest}");
        let devices: Vec<&str> = g.devices.iter().map(|d| d.as_str()).collect();
        assert_eq!(devices, [device], "{guest}");
        ports.push(vm.ssh_port);
    }
    ports.sort_unstable();
    ports.dedup();
    assert_eq!(ports.len(), 3, "each guest has its own port");
    let p = plan(&i, &m);
    let variants = |n: &str| -> Vec<String> {
        p.hosts
            .iter()
            .find(|h| h.host.as_str() == n)
            .unwrap_or_else(|| panic!("{n} plans no cell"))
            .fs_variants
            .iter()
            .map(|v| v.as_str().to_owned())
            .collect()
    };
    for v in ["ext4-barrier-1", "ext4-barrier-0"] {
        assert!(variants("linux-metal").iter().any(|x| x == v), "{v}");
    }
    assert_eq!(variants("linux-kvm"), variants("linux-metal"));
    assert_eq!(variants("freebsd-kvm"), variants("freebsd-metal"));
    assert_eq!(variants("dragonfly-kvm"), ["hammer"]);
    insta::assert_snapshot!(
        "example_kvm_vs_metal",
        format!("{}\n{}", render(&p), render_cells(&p))
    );
}
