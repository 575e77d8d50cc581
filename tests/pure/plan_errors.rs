//! Bad inputs: each must give an error with the right message, file, line
//! and column.  `@@` in a case marks where the error must point; it is
//! removed before parsing and its position gives the expected line:column.
use std::path::{Path, PathBuf};

use fsmatrix::config::{self, ConfigErrors, Inventory, Matrix};

const INV_BASE: &str = "[defaults]\nos = \"linux\"\n";
const HOST: &str = "[[host]]\nname = \"h1\"\naddress = \"10.0.0.1\"\ndevices = [\"/dev/vdb\"]\n";
const FS: &str = "[[filesystem]]\nname = \"ext4\"\ntype = \"ext4\"\n";
const WL: &str = "[[workload]]\nname = \"w\"\nbuiltin = \"tpcb-like\"\nscale = 1\nclients = [1]\nduration = \"5s\"\n";

enum Kind {
    Inv,
    Mat,
}

/// (kind, document with one @@ marker, expected message fragment)
fn cases() -> Vec<(Kind, String, &'static str)> {
    use Kind::*;
    let inv = |s: &str| format!("{INV_BASE}{s}");
    let host = |extra: &str| {
        format!("{INV_BASE}[[host]]\nname = \"h1\"\naddress = \"10.0.0.1\"\ndevices = [\"/dev/vdb\"]\n{extra}")
    };
    let fs = |extra: &str| {
        format!("name = \"m\"\n{WL}[[filesystem]]\nname = \"f\"\ntype = \"ext4\"\n{extra}")
    };
    let zfs = |extra: &str| {
        format!("name = \"m\"\n{WL}[[filesystem]]\nname = \"z\"\ntype = \"zfs\"\n{extra}")
    };
    let wl = |body: &str| format!("name = \"m\"\n{FS}[[workload]]\nname = \"w\"\n{body}");
    vec![
        // Malformed TOML.
        (Inv, inv("[[host]]\nname = \"h1@@\n"), "invalid toml"),
        (Mat, "name = \"m\"\nrepeats = @@\n".to_string(), "invalid toml"),
        // Unknown keys.
        (Inv, host("@@colour = \"red\"\n"), "unknown key `colour` in [[host]] `h1`; valid keys: name, address"),
        (Inv, format!("@@hosts = 1\n{INV_BASE}{HOST}"), "unknown key `hosts` in the inventory; valid keys: defaults, host"),
        (Mat, format!("@@repeat = 3\nname = \"m\"\n{FS}{WL}"), "unknown key `repeat` in the matrix"),
        (Mat, wl("builtin = \"tpcb-like\"\nscale = 1\n@@clinets = [1]\nclients = [1]\nduration = \"5s\"\n"), "unknown key `clinets` in [[workload]] `w`"),
        (Mat, fs("@@mount_option = [\"noatime\"]\n"), "unknown key `mount_option` in [[filesystem]] `f`"),
        // Wrong types and ranges.
        (Inv, host("port = @@\"22\"\n"), "`port` in [[host]] `h1` must be an integer in 1..=65535, found a string"),
        (Inv, host("port = @@70000\n"), "`port` in [[host]] `h1` is 70000; valid: 1..=65535"),
        (Inv, host("pg_port = @@5432.0\n"), "`pg_port` in [[host]] `h1` must be an integer"),
        (Inv, host("tags = @@\"lab\"\n"), "`tags` in [[host]] `h1` must be an array of strings, found a string"),
        (Mat, format!("name = \"m\"\nrepeats = @@\"3\"\n{FS}{WL}"), "`repeats` in the matrix must be a number (e.g. 3) or a table { min = 3, max = 10, target_ci = \"2%\" } or { min = 2, max = 10, until = \"decided\" }, found a string"),
        (Mat, format!("name = \"m\"\nrepeats = @@0\n{FS}{WL}"), "`repeats` in the matrix is 0; valid: 1..=1000"),
        // Adaptive repeats and warm-ups.
        (Mat, format!("name = \"m\"\nrepeats = {{ min = 3, max = @@2, target_ci = \"2%\" }}\n{FS}{WL}"), "`max` in `repeats` in the matrix is 2, below `min` = 3; valid: 3..=1000"),
        (Mat, format!("name = \"m\"\nrepeats = {{ min = @@1, max = 5, target_ci = \"2%\" }}\n{FS}{WL}"), "`min` in `repeats` in the matrix is 1; valid: 2..=1000"),
        (Mat, format!("name = \"m\"\nrepeats = {{ min = 3, max = 5, target_ci = @@\"2\" }}\n{FS}{WL}"), "`target_ci` in `repeats` in the matrix is \"2\"; valid: a share of the mean from \"0.01%\" to \"50%\""),
        (Mat, format!("name = \"m\"\nrepeats = {{ min = 3, max = 5, target_ci = @@\"80%\" }}\n{FS}{WL}"), "`target_ci` in `repeats` in the matrix is \"80%\""),
        (Mat, format!("name = \"m\"\nrepeats = @@{{ min = 3, max = 10 }}\n{FS}{WL}"), "`repeats` in the matrix lacks `target_ci` or `until`; adaptive repeats need `min`, `max` and a rule"),
        (Mat, format!("name = \"m\"\nrepeats = {{ min = 3, max = 10, target_ci = \"2%\", @@step = 4 }}\n{FS}{WL}"), "unknown key `step` in `repeats` in the matrix; valid keys: min, max, target_ci, until"),
        (Mat, format!("name = \"m\"\nrepeats = {{ min = 3, max = 10, target_ci = @@\"2%\", until = \"decided\" }}\n{FS}{WL}"), "gives both `target_ci` and `until`; valid: one rule"),
        (Mat, wl("builtin = \"tpcb-like\"\nscale = 1\nclients = [1]\nduration = \"5s\"\nrepeats = { min = 2, max = 4, target_ci = @@5 }\n"), "`target_ci` in `repeats` in [[workload]] `w` must be a string"),
        (Mat, wl("builtin = \"tpcb-like\"\nscale = 1\nclients = [1]\nduration = \"5s\"\nwarmup = @@\"yes\"\n"), "`warmup` in [[workload]] `w` must be a number of warm-up runs (0..=100) or true/false, found a string"),
        (Mat, format!("name = \"m\"\nwarmup = @@101\n{FS}{WL}"), "`warmup` in the matrix is 101; valid: 0..=100"),
        (Mat, wl("builtin = \"tpcb-like\"\nscale = 1\nclients = [@@\"four\"]\nduration = \"5s\"\n"), "a client count of [[workload]] `w` must be an integer"),
        (Mat, wl("builtin = \"tpcb-like\"\nscale = 1\nclients = [1]\njobs = @@\"all\"\nduration = \"5s\"\n"), "`jobs` in [[workload]] `w` must be a number or \"clients\""),
        // Unknown enumerations.
        (Inv, host("os = @@\"windows\"\n"), "unknown os `windows` in [[host]] `h1`; valid: linux, freebsd, dragonfly"),
        (Inv, host("platform = @@\"cloud\"\n"), "unknown platform `cloud` in [[host]] `h1`; valid: physical, kvm, lab"),
        (Inv, host("become = @@\"su\"\n"), "unknown `become` method `su` in [[host]] `h1`; valid: \"sudo\", \"doas\""),
        (Mat, format!("name = \"m\"\n{WL}[[filesystem]]\nname = \"f\"\ntype = @@\"ntfs\"\n"), "unknown filesystem type `ntfs` in [[filesystem]] `f`; valid: ext3, ext4, xfs, btrfs, zfs, ufs, hammer, hammer2"),
        (Mat, wl("builtin = @@\"tpcb\"\nscale = 1\nclients = [1]\nduration = \"5s\"\n"), "unknown builtin `tpcb` in [[workload]] `w`; valid: tpcb-like, simple-update, select-only"),
        // Hostile values in every field that reaches a host.
        (Inv, inv("[[host]]\nname = \"h1\"\naddress = \"10.0.0.1\"\ndevices = [@@\"/dev/sdb;reboot\"]\n"), "device path `/dev/sdb;reboot` contains `;`"),
        (Inv, inv("[[host]]\nname = \"h1\"\naddress = \"10.0.0.1\"\ndevices = [@@\"/dev/$(id)\"]\n"), "device path `/dev/$(id)` contains `$(`"),
        (Inv, inv("[[host]]\nname = \"h1\"\naddress = \"10.0.0.1\"\ndevices = [@@\"/dev/`id`\"]\n"), "contains a backtick"),
        (Inv, inv("[[host]]\nname = \"h1\"\naddress = \"10.0.0.1\"\ndevices = [@@\"/tmp/disk\"]\n"), "device path `/tmp/disk` does not start with `/dev/`"),
        (Inv, host("user = @@\"-oProxyCommand\"\n"), "user name `-oProxyCommand` starts with `-` and would be read as a flag"),
        (Inv, host("user = @@\"ro'ot\"\n"), "user name `ro'ot` contains a single quote"),
        (Inv, host("pg_user = @@\"post\\ngres\"\n"), "user name `post\\ngres` contains a newline"),
        (Inv, host("pg_user = @@\"a\\u0000b\"\n"), "contains a NUL byte"),
        (Inv, host("pg_bin = @@\"usr/lib/postgresql/17/bin\"\n"), "path `usr/lib/postgresql/17/bin` does not start with `/`"),
        (Inv, host("pg_bin = @@\"/usr/lib/postgresql 17/bin\"\n"), "contains a space"),
        (Inv, host("work_dir = @@\"/var/tmp|x\"\n"), "path `/var/tmp|x` contains `|`"),
        (Inv, inv("[[host]]\nname = \"h1\"\naddress = @@\"10.0.0.1&x\"\ndevices = [\"/dev/vdb\"]\n"), "address `10.0.0.1&x` contains `&`"),
        (Inv, inv("[[host]]\nname = @@\"h1 >x\"\naddress = \"10.0.0.1\"\ndevices = [\"/dev/vdb\"]\n"), "host name `h1 >x` contains a space"),
        (Mat, fs("mount_options = [@@\"noatime;reboot\"]\n"), "mount option `noatime;reboot` contains `;`"),
        (Mat, fs("mount_options = [@@\"noatime,barrier=0\"]\n"), "mount option `noatime,barrier=0` contains `,`"),
        (Mat, fs("mkfs_options = [\"-E\", @@\"$(reboot)\"]\n"), "mkfs option `$(reboot)` contains `$(`"),
        (Mat, zfs("properties = { compression = @@\"lz4`id`\" }\n"), "zfs property value `lz4`id`` contains a backtick"),
        (Mat, zfs("properties = { @@-o = \"on\" }\n"), "zfs property name `-o` starts with `-`"),
        (Mat, zfs("pool_properties = { ashift = @@\"12!\" }\n"), "zfs property value `12!` contains `!`"),
        (Mat, format!("name = \"m\"\n{FS}{WL}[postgres]\nwork_mem = @@\"16MB'; drop table x\"\n"), "postgresql setting value `16MB'; drop table x` contains a single quote"),
        (Mat, format!("name = \"m\"\n{FS}{WL}[postgres]\n@@\"shared buffers\" = \"1GB\"\n"), "postgresql setting name `shared buffers` contains a space"),
        (Mat, fs("postgres = { search_path = @@\"$(id)\" }\n"), "postgresql setting value `$(id)` contains `$(`"),
        (Mat, format!("name = \"m\"\n{FS}{WL}[postgres]\nlog_line_prefix = @@\"<%m>\"\n"), "postgresql setting value `<%m>` contains `<`"),
        (Mat, zfs("vary = { compression = [\"lz4\", @@\"x;y\"] }\n").replace("name = \"z\"", "name = \"z-{compression}\""), "vary value `x;y` contains `;`"),
        (Mat, format!("name = @@\"m;x\"\n{FS}{WL}"), "name `m;x` contains `;`"),
        (Inv, host("tags = [\"lab\", @@\"a;b\"]\n"), "name `a;b` contains `;`"),
        (Inv, host("disk_bus = @@\"$(x)\"\n"), "name `$(x)` contains `$(`"),
        (Inv, host("consent_foreign = [@@\"/dev/x|y\"]\n"), "device path `/dev/x|y` contains `|`"),
        (Inv, inv("[[host]]\nname = \"h1\"\naddress = @@\"-ohost\"\ndevices = [\"/dev/vdb\"]\n"), "address `-ohost` starts with `-` and would be read as a flag"),
        (Mat, format!("name = \"m\"\n{FS}[[workload]]\nname = @@\"w>x\"\nbuiltin = \"tpcb-like\"\nscale = 1\nclients = [1]\nduration = \"5s\"\n"), "name `w>x` contains `>`"),
        (Mat, format!("name = \"m\"\n{FS}{WL}[postgres]\nsettings = @@{{ shared_buffers = \"1GB\" }}\n"), "put settings directly under [postgres]"),
        // vary and templates.
        (Mat, fs("vary = { @@barrier = [\"0\", \"1\"] }\n").replace("name = \"f\"", "name = \"f-{barrier}\""), "vary `barrier` in [[filesystem]] `f-{barrier}` changes nothing"),
        (Mat, fs("vary = { barrier = [\"0\"] }\nmount_options = [@@\"barrier={barier}\"]\n"), "`{barier}` in `barrier={barier}` is not a key of `vary`; valid: barrier"),
        (Mat, zfs("vary = { compression = [\"on\", \"off\"] }\n").replace("name = @@\"z\"", "x").replace("name = \"z\"", "name = @@\"z\""), "does not contain `{compression}`: its variants would share a name"),
        (Mat, zfs("properties = { a = \"b\" }\n").replace("type = \"zfs\"\nproperties = { a", "type = \"ext4\"\nproperties = @@{ a"), "`properties` are ZFS properties but [[filesystem]] `z` is ext4"),
        // Workload rules.
        (Mat, wl("builtin = \"tpcb-like\"\nscale = 1\nclients = @@[]\nduration = \"5s\"\n"), "`clients` of [[workload]] `w` is empty"),
        (Mat, wl("builtin = \"tpcb-like\"\nscale = 1\nclients = [1]\nduration = @@\"10\"\n"), "`duration` in [[workload]] `w` is \"10\"; valid: a number with a unit"),
        (Mat, wl("builtin = \"tpcb-like\"\nscale = @@\"120%\"\nclients = [1]\nduration = \"5s\"\n"), "`scale` in [[workload]] `w` is \"120%\""),
        (Mat, wl("builtin = \"tpcb-like\"\nscale = 1\nclients = [1, @@1]\nduration = \"5s\"\n"), "client count 1 is listed twice"),
        (Mat, wl("sql_script = @@\"nope.sql\"\n"), "cannot read `nope.sql`"),
        // Duplicates.
        (Inv, inv("[[host]]\nname = \"h1\"\naddress = \"10.0.0.1\"\ndevices = [\"/dev/vdb\", @@\"/dev/vdb\"]\n"), "device `/dev/vdb` is listed twice in [[host]] `h1`"),
        (Inv, format!("{INV_BASE}{HOST}[[host]]\nname = @@\"h1\"\naddress = \"10.0.0.2\"\ndevices = [\"/dev/vdb\"]\n"), "duplicate host name `h1`"),
        (Inv, inv("[[host]]\nname = \"h1\"\naddress = \"10.0.0.1\"\ndevices = @@[]\n"), "`devices` of [[host]] `h1` is empty"),
        (Inv, host("consent_foreign = [@@\"/dev/vdc\"]\n"), "`consent_foreign` names `/dev/vdc`, which is not in the `devices`"),
        (Inv, format!("[defaults]\nos = \"linux\"\nname = @@\"x\"\n{HOST}"), "`name` cannot be a default"),
        // Options that name another device or a path, or are fsmatrix's own.
        (Mat, fs("mkfs_options = [\"-J\", @@\"device=/dev/sdc\"]\n"), "`device` in mkfs option `-J` is not allowed"),
        (Mat, fs("mkfs_options = [\"-b\", \"4096\", @@\"/dev/sdc\"]\n"), "a positional argument would be another device"),
        (Mat, fs("mkfs_options = [@@\"-L\", \"mine\"]\n"), "the label is fsmatrix's own"),
        (Mat, fs("mount_options = [\"noatime\", @@\"journal_path=/dev/sdc\"]\n"), "mount option `journal_path` is not allowed for ext4"),
        (Mat, fs("vary = { j = [\"size=64\", \"device=/dev/sdc\"] }\nname = \"f-{j}\"\nmkfs_options = [\"-J\", @@\"{j}\"]\n").replacen("name = \"f\"\n", "", 1), "`device` in mkfs option `-J` is not allowed"),
        (Mat, format!("name = \"m\"\n{WL}[[filesystem]]\nname = \"x\"\ntype = \"xfs\"\nmkfs_options = [\"-l\", @@\"logdev=/dev/sdc\"]\n"), "`logdev` in mkfs option `-l`"),
        (Mat, format!("name = \"m\"\n{WL}[[filesystem]]\nname = \"b\"\ntype = \"btrfs\"\nmount_options = [@@\"device=/dev/sdc\"]\n"), "mount option `device` is not allowed for btrfs"),
        (Inv, host("work_dir = @@\"/var/tmp\"\n"), "work_dir `/var/tmp` is a folder the whole system shares"),
        (Inv, format!("{INV_BASE}{HOST}[[host]]\nname = @@\"h2\"\naddress = \"10.0.0.1\"\ndevices = [\"/dev/vdb\"]\n"), "[[host]] `h2` reaches the same machine as [[host]] `h1`"),
        // Include / exclude.
        (Mat, format!("name = \"m\"\n{FS}{WL}[[exclude]]\nfilesystem = @@\"zfs\"\n"), "an `exclude` rule names filesystem `zfs`, which the matrix does not define; valid: ext4"),
        (Mat, format!("name = \"m\"\n{FS}{WL}[[exclude]]\nfs_type = @@\"zfs2\"\n"), "unknown filesystem type `zfs2` in an `exclude` rule"),
        (Mat, format!("name = \"m\"\n{FS}{WL}[[exclude]]\n@@flesystem = \"ext4\"\n"), "unknown key `flesystem` in an `exclude` rule"),
    ]
}

fn position(doc: &str) -> (String, usize, usize) {
    let at = doc
        .find("@@")
        .unwrap_or_else(|| panic!("no marker in {doc:?}"));
    let before = &doc[..at];
    let line = before.matches('\n').count() + 1;
    let col = before
        .rsplit('\n')
        .next()
        .map(|l| l.chars().count())
        .unwrap_or(0)
        + 1;
    (doc.replacen("@@", "", 1), line, col)
}

fn parse(kind: &Kind, dir: &Path, text: String) -> (PathBuf, Result<(), ConfigErrors>) {
    match kind {
        Kind::Inv => {
            let p = dir.join("inventory.toml");
            (p.clone(), Inventory::parse(&p, text).map(|_| ()))
        }
        Kind::Mat => {
            let p = dir.join("matrix.toml");
            (p.clone(), Matrix::parse(&p, text).map(|_| ()))
        }
    }
}

#[test]
fn every_bad_input_names_message_file_line_and_column() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cases = cases();
    assert!(cases.len() >= 30, "only {} cases", cases.len());
    let mut failures = Vec::new();
    for (kind, doc, want) in &cases {
        let (text, line, col) = position(doc);
        let (path, res) = parse(kind, dir.path(), text.clone());
        let Err(errs) = res else {
            failures.push(format!("accepted:\n{text}"));
            continue;
        };
        let hit = errs.iter().find(|e| {
            e.message.contains(want) && e.line == line && e.column == col && e.file == path
        });
        if hit.is_none() {
            failures.push(format!(
                "want {}:{line}:{col}: …{want}…\n  got:\n{errs}\n  in:\n{text}",
                path.display()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
}

#[test]
fn all_errors_are_collected_not_just_the_first() {
    let text = "[defaults]\nos = \"plan9\"\n[[host]]\nname = \"a\"\naddress = \"x;y\"\ndevices = [\"/dev/sdb\", \"/dev/sdb\"]\nuser = \"-x\"\n[[host]]\nname = \"a\"\naddress = \"10.0.0.2\"\ndevices = [\"/dev/$(x)\"]\n";
    let Err(errs) = Inventory::parse(Path::new("inv.toml"), text.into()) else {
        panic!("accepted a bad inventory");
    };
    let got: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
    assert_eq!(
        got.iter()
            .map(|s| s.split(": error: ").next().unwrap_or(""))
            .collect::<Vec<_>>(),
        vec![
            "inv.toml:2:6",
            "inv.toml:5:11",
            "inv.toml:6:24",
            "inv.toml:7:8",
            "inv.toml:9:8",
            "inv.toml:11:12"
        ],
        "{}",
        got.join("\n")
    );
    assert!(
        got[0].ends_with("unknown os `plan9` in [defaults]; valid: linux, freebsd, dragonfly"),
        "{}",
        got[0]
    );
}

#[test]
fn load_checks_the_matrix_against_the_inventory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let inv = dir.path().join("i.toml");
    let m = dir.path().join("m.toml");
    std::fs::write(&inv, format!("{INV_BASE}{HOST}")).expect("write");
    std::fs::write(
        &m,
        format!("name = \"m\"\n[hosts]\nnames = [\"h1\", \"h9\"]\ntags = [\"gpu\"]\n{FS}{WL}"),
    )
    .expect("write");
    let Err(errs) = config::load(&inv, &m, fsmatrix::generator::script_uses) else {
        panic!("accepted an unknown host");
    };
    let got: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
    assert_eq!(got.len(), 2, "{}", got.join("\n"));
    assert!(
        got[0].starts_with(&format!(
            "{}:3:16: error: host `h9` is not in the inventory",
            m.display()
        )),
        "{}",
        got[0]
    );
    assert!(
        got[1].starts_with(&format!(
            "{}:4:9: error: no host of the inventory",
            m.display()
        )),
        "{}",
        got[1]
    );
    // Both files bad: errors of both come back together.
    std::fs::write(&inv, "[[host]]\nname = 1\n").expect("write");
    std::fs::write(&m, "name = \"m\"\nbogus = 1\n").expect("write");
    let Err(errs) = config::load(&inv, &m, fsmatrix::generator::script_uses) else {
        panic!("accepted bad files");
    };
    assert!(errs.iter().any(|e| e.file == inv));
    assert!(errs.iter().any(|e| e.file == m));
}
