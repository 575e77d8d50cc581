//! Lists the lab's stand-in files from their folder, so that an emulator
//! put in `src/lab/standin/<os>/` is shipped without another edit:
//! `setup.sh`, and every file without a dot in its name (not `FACTS.md`)
//! in each OS folder.  Writes `$OUT_DIR/standin_files.rs`, an array of
//! `("<os>/<name>", include_str!(…))` that `lab.rs` includes.
//!
//! Also embeds every `remote-scripts/*.sh` as `$OUT_DIR/remote_scripts.rs`,
//! `("<name>.sh", include_str!(…))`: an OS's row names its script
//! (`OsProfile::script`), and the run engine uploads what the row names.
use std::path::Path;

/// The names of the files directly in `dir` that `keep` accepts, sorted.
fn file_names(dir: &Path, keep: impl Fn(&str) -> bool) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|e| e.expect("a folder entry").path())
        .filter(|p| p.is_file())
        .map(|p| {
            p.file_name()
                .unwrap()
                .to_str()
                .expect("UTF-8 name")
                .to_string()
        })
        .filter(|n| keep(n))
        .collect();
    names.sort();
    names
}

/// The package's folder, as cargo says when it runs this script (not as it
/// was when the script was compiled: a target folder shared by two clones
/// reuses the compiled script).
fn manifest_dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .expect("cargo sets CARGO_MANIFEST_DIR for build scripts")
        .into()
}

fn remote_scripts() {
    let root = manifest_dir().join("../remote-scripts");
    println!("cargo:rerun-if-changed={}", root.display());
    let names = file_names(&root, |n| n.ends_with(".sh"));
    let mut out = String::from("[\n");
    for n in &names {
        let path = root.join(n);
        println!("cargo:rerun-if-changed={}", path.display());
        out.push_str(&format!(
            "    ({n:?}, include_str!({:?})),\n",
            path.display().to_string()
        ));
    }
    out.push_str("]\n");
    let dest = Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR")).join("remote_scripts.rs");
    std::fs::write(dest, out).expect("write remote_scripts.rs");
}

fn main() {
    remote_scripts();
    let root = manifest_dir().join("src/lab/standin");
    println!("cargo:rerun-if-changed={}", root.display());
    let mut files = vec![("setup.sh".to_string(), root.join("setup.sh"))];
    let mut oses: Vec<_> = std::fs::read_dir(&root)
        .expect("read src/lab/standin")
        .map(|e| e.expect("a folder entry").path())
        .filter(|p| p.is_dir())
        .collect();
    oses.sort();
    for dir in oses {
        println!("cargo:rerun-if-changed={}", dir.display());
        let os = dir
            .file_name()
            .unwrap()
            .to_str()
            .expect("UTF-8 name")
            .to_string();
        let names = file_names(&dir, |n| !n.contains('.'));
        for n in names {
            files.push((format!("{os}/{n}"), dir.join(&n)));
        }
    }
    let mut out = String::from("[\n");
    for (name, path) in &files {
        out.push_str(&format!(
            "    ({name:?}, include_str!({:?})),\n",
            path.display().to_string()
        ));
    }
    out.push_str("]\n");
    let dest = Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR")).join("standin_files.rs");
    std::fs::write(dest, out).expect("write standin_files.rs");
}
