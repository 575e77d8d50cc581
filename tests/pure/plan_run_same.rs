//! What `plan` accepts, `run` accepts (one validator per value): script
//! paths written `./x.sql`, capitalised setting names, names with `+` go
//! through plan and through the run side's own checks (the bundle's name
//! and path rules, the snapshot a sweep writes and `resume` reads back, the
//! host script's patterns); what run would refuse, plan refuses first.
use std::path::Path;
use std::sync::Mutex;

use fsmatrix::config::{self, Inventory, Matrix, WorkloadKind};
use fsmatrix::plan::{plan, Plan};
use fsmatrix::results::bundle::manifest::check_rel_path;
use fsmatrix::results::Bundle;
use fsmatrix::run::sink::Sink;
use fsmatrix::run::snapshot;

const INV: &str = "[defaults]\nos = \"linux\"\n[[host]]\nname = \"h1\"\naddress = \"10.0.0.1\"\ndevices = [\"/dev/vdb\"]\npg_user = \"pg_bench-1\"\n";

fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    if let Some(parent) = p.parent() {
        std::fs::create_dir_all(parent).expect("mkdir");
    }
    std::fs::write(&p, text).expect("write");
    p
}

fn matrix(script: &str) -> String {
    format!(
        "name = \"m+1\"\n[postgres]\nWork_Mem = \"4MB\"\n[[filesystem]]\nname = \"ext4+noatime\"\ntype = \"ext4\"\nmount_options = [\"noatime\"]\n[[workload]]\nname = \"load+1\"\nsql_script = \"{script}\"\n"
    )
}

/// The host script's own pattern for a value, read from the script itself:
/// if the script changes, this test says which validator to change too.
fn script_pattern(file: &str, marker: &str) -> String {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../remote-scripts")
            .join(file),
    )
    .expect("script");
    let line = text
        .lines()
        .find(|l| l.contains(marker))
        .unwrap_or_else(|| panic!("{marker} in {file}"));
    let start = line.find("*[!").expect("a case pattern");
    let end = start + line[start..].find("]*").expect("pattern end") + 2;
    line[start..end].to_string()
}

#[test]
fn names_paths_and_settings_plan_accepts_are_what_run_accepts() {
    let tmp = tempfile::tempdir().expect("tempdir");
    write(tmp.path(), "sql/x.sql", "select 1;\n");
    let inv = write(tmp.path(), "inv.toml", INV);
    let mat = write(tmp.path(), "m.toml", &matrix("./sql/./x.sql"));
    let (i, m) = config::load(&inv, &mat, fsmatrix::generator::script_uses)
        .unwrap_or_else(|e| panic!("{e}"));
    let p = plan(&i, &m);
    assert_eq!(p.cells.len(), 1);

    // The host script's patterns, and what plan hands it.
    assert_eq!(script_pattern("common.sh", "pg_set name"), "*[!a-z0-9_.]*");
    assert_eq!(
        script_pattern("common.sh", "pg_user=$PG_USER"),
        "*[!a-z0-9_-]*"
    );
    let c = &p.cells[0];
    for s in c.pg_settings.iter() {
        assert!(
            s.name
                .as_str()
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"_.".contains(&b)),
            "{}",
            s.name
        );
    }
    assert_eq!(c.pg_settings[0].name.as_str(), "work_mem");
    let WorkloadKind::SqlScript { path, content, .. } = &c.workload.kind else {
        panic!("sql script");
    };
    assert_eq!(path, Path::new("sql/x.sql"));
    assert_eq!(content, "select 1;\n");

    // The run side: the bundle takes the matrix name, writes the snapshot
    // (scripts at their kept path), and resume plans the same cells from it.
    let out = tmp.path().join("out");
    let bundle = Bundle::create(&out, m.name.as_str()).unwrap_or_else(|e| panic!("{e}"));
    let root = bundle.path().to_path_buf();
    let mut sink = Sink::discard();
    sink.bundle = Some(Mutex::new(bundle));
    let inputs = snapshot::Inputs::read(&i, &m).unwrap_or_else(|e| panic!("{e}"));
    snapshot::write(&sink, &inputs, &m, &p).unwrap_or_else(|e| panic!("{e}"));
    check_rel_path(&format!("data/{}", path.display())).expect("a bundle path");
    // The bundle's devices, named as `resume --device` names them.
    let given = config::GivenPaths {
        ssh_config: None,
        recorded: Some(config::RecordedPaths {
            devices: i
                .hosts
                .iter()
                .flat_map(|h| {
                    h.devices
                        .iter()
                        .map(move |d| format!("{}:{}", h.name.as_str(), d.as_str()))
                })
                .collect(),
            ..config::RecordedPaths::default()
        }),
    };
    let (i2, m2, _) = snapshot::read(&root, &given).unwrap_or_else(|e| panic!("{e}"));
    let p2 = plan(&i2, &m2);
    snapshot::same_cells(&root, &p2).unwrap_or_else(|e| panic!("{e}"));

    // plan.json keeps the script's text once, and reads back whole.
    let json = std::fs::read_to_string(root.join("data/plan.json")).expect("plan.json");
    assert_eq!(json.matches("select 1;").count(), 1, "{json}");
    let back: Plan = serde_json::from_str(&json).expect("plan.json reads back");
    assert_eq!(back.cells, p.cells);
}

#[test]
fn what_run_would_refuse_plan_refuses_with_the_valid_form() {
    let tmp = tempfile::tempdir().expect("tempdir");
    write(tmp.path(), "sql/x.sql", "select 1;\n");
    let inv = write(tmp.path(), "inv.toml", INV);
    let sub = tmp.path().join("matrices");
    let mat = write(&sub, "m.toml", &matrix("../sql/x.sql"));
    let e = Matrix::load(&mat).expect_err("refused").to_string();
    assert!(
        e.contains("m.toml:10:14: error: script path `../sql/x.sql` has a `..` part")
            && e.contains("valid: a path inside the matrix's folder"),
        "{e}"
    );
    let e = Inventory::parse(&inv, INV.replace("pg_bench-1", "pg.user"))
        .expect_err("refused")
        .to_string();
    assert!(
        e.contains("inv.toml:7:11: error: pg_user `pg.user` contains `.`, which the host scripts refuse; valid: lowercase letters"),
        "{e}"
    );
}

#[test]
fn scripts_are_regular_files_of_bounded_size() {
    let tmp = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(tmp.path().join("dir.sql")).expect("mkdir");
    let big = std::fs::File::create(tmp.path().join("big.sql")).expect("big");
    big.set_len(config::matrix::MAX_SCRIPT_BYTES + 1)
        .expect("sparse");
    let fifo = tmp.path().join("fifo.sql");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .is_ok_and(|s| s.success());
    let mut cases = vec![
        ("dir.sql", "it is a folder"),
        ("big.sql", "over the limit of 16777216"),
    ];
    if made {
        // Refused from its metadata: opening it would wait for a writer.
        cases.push(("fifo.sql", "not a regular file"));
    }
    for (name, want) in cases {
        let mat = write(tmp.path(), "m.toml", &matrix(name));
        let e = Matrix::load(&mat).expect_err(name).to_string();
        assert!(
            e.contains(want) && e.contains("valid: a regular file of at most 16 MiB"),
            "{name}: {e}"
        );
    }
}
