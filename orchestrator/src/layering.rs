//! The layers, held by a test: the commands layer sits on top and nothing
//! below imports it; `plan` is pure and imports neither the commands layer
//! nor the run engine.  (Rust has no lint for module layering; this reads
//! the sources.)
use std::path::{Path, PathBuf};

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Does `text` import module `module` of this crate (`crate::module`, or
/// `module` inside a `use crate::{…}` group)?
fn imports(text: &str, module: &str) -> bool {
    let direct = format!("crate::{module}");
    let grouped = text.split("use crate::{").skip(1).any(|rest| {
        let group = rest.split("};").next().unwrap_or("");
        group
            .split([',', '{', '}', ' ', '\n'])
            .any(|w| w == module || w.starts_with(&format!("{module}::")))
    });
    text.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .any(|l| l.contains(&direct))
        || grouped
}

#[test]
fn no_module_below_the_commands_layer_imports_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    assert!(files.len() > 20, "{files:?}");
    let mut offenders = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(&src).unwrap_or(f);
        if rel.starts_with("commands")
            || rel == Path::new("main.rs")
            || rel == Path::new("layering.rs")
        {
            continue;
        }
        let text = std::fs::read_to_string(f).unwrap_or_default();
        if imports(&text, "commands") || imports(&text, "cli") {
            offenders.push(rel.display().to_string());
        }
    }
    assert!(
        offenders.is_empty(),
        "import the commands layer: {offenders:?}"
    );
}

#[test]
fn plan_imports_neither_the_commands_layer_nor_the_run_engine() {
    let text = include_str!("plan/mod.rs");
    for m in ["commands", "cli", "run", "remote", "results"] {
        assert!(!imports(text, m), "plan.rs imports crate::{m}");
    }
}

#[test]
fn the_import_check_sees_both_forms() {
    assert!(imports("use crate::run::sweep;", "run"));
    assert!(imports("use crate::{config, run::Verb};", "run"));
    assert!(imports(
        "use crate::{\n    commands,\n    plan,\n};",
        "commands"
    ));
    assert!(!imports("use crate::{config, plan};", "run"));
    assert!(!imports("// see crate::run\n", "run"));
}
