//! The layers, as a table, and a test over every `crate::` path in the
//! sources.  A module may use the modules *below* it in [`LAYERS`] and never
//! one above: the commands layer sits on top, the pure stages (`config`,
//! `plan`) import neither the run engine nor the transport, the bundle model
//! sits below the parsers and the bundle, and key parsing below both the SSH
//! transport and bundle signing.  ARCHITECTURE.md draws the same table.
//!
//! Rust has no lint for module layering; this reads the sources.  Comments
//! and doc links are not imports and are not counted.
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The top-level modules, bottom first, each with the modules it may
/// import.  Every module it may import sits above it in this table (a
/// test holds that), so the graph has no cycle; a module missing from its
/// row's list is a sideways arrow even when it sits lower (the results layer
/// may not use the SSH transport, though the transport is lower).
pub const LAYERS: &[(&str, &[&str])] = &[
    // Test support (`#[cfg(test)]` only): a skip for a missing tool.
    ("testing", &[]),
    // Pure helpers with no crate imports.
    ("text", &[]),
    ("files", &[]),
    ("timeouts", &[]),
    // stdout/stderr writes that never panic when the reader went away.
    ("stdio", &[]),
    // What a bundle's records hold.
    ("model", &["text"]),
    // SSH key files read: for the transport and for signing bundles alike.
    ("keys", &["text", "files"]),
    // Parse and validate the user's files (inventory, matrix, ssh config).
    ("config", &["text", "files"]),
    // The load generators: how a workload is loaded, run and measured.
    ("generator", &["text", "model", "config"]),
    // matrix × inventory → cells, and the work they make (pure).
    ("plan", &["text", "model", "config", "generator"]),
    // The ETA that learns from the plan's work items.
    ("eta", &["text", "config", "plan"]),
    // The transport: SSH, quoting, known hosts, the recording remote.
    ("remote", &["text", "files", "timeouts", "keys"]),
    // Bundles, their analysis and reports (never the transport or the engine).
    (
        "results",
        &[
            "text",
            "files",
            "model",
            "keys",
            "config",
            "generator",
            "plan",
            "eta",
        ],
    ),
    // The run engine: one worker per host.
    (
        "run",
        &[
            "text",
            "files",
            "timeouts",
            "stdio",
            "model",
            "keys",
            "config",
            "generator",
            "plan",
            "eta",
            "remote",
            "results",
        ],
    ),
    // The results database and the lab-wide queue's agent (which runs sweeps).
    (
        "db",
        &[
            "text",
            "files",
            "timeouts",
            "model",
            "config",
            "generator",
            "plan",
            "eta",
            "remote",
            "results",
            "run",
        ],
    ),
    // The local lab: builds hosts with its own shell; no crate imports.
    ("lab", &["text", "files", "config"]),
    // The CLI: may use every layer; nothing imports it.
    (
        "commands",
        &[
            "text",
            "files",
            "timeouts",
            "stdio",
            "model",
            "keys",
            "config",
            "generator",
            "plan",
            "eta",
            "remote",
            "results",
            "run",
            "db",
            "lab",
        ],
    ),
];

/// Modules compiled only for tests (`#[cfg(test)]` in lib.rs): any
/// layer's tests may use them, and no library code can.
const TEST_ONLY: &[&str] = &["testing", "layering"];

/// Every `.rs` file under `dir`.
pub(crate) fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// `text` without its comments (line comments, doc comments, block comments).
fn code_of(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        if rest.starts_with("//") {
            let end = rest.find('\n').unwrap_or(rest.len());
            rest = &rest[end..];
        } else if rest.starts_with("/*") {
            let end = rest.find("*/").map(|i| i + 2).unwrap_or(rest.len());
            rest = &rest[end..];
        } else if rest.starts_with('"') {
            // A string literal: kept whole, so a `//` inside it is not a comment.
            let mut end = 1;
            let b = rest.as_bytes();
            while end < b.len() && b[end] != b'"' {
                end += if b[end] == b'\\' { 2 } else { 1 };
            }
            let end = (end + 1).min(rest.len());
            out.push_str(&rest[..end]);
            rest = &rest[end..];
        } else {
            let c = rest.chars().next().unwrap_or(' ');
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

/// The top-level modules of this crate that `text` uses: every
/// `crate::module` path, and every name inside a `use crate::{…}` group.
fn imports_of(text: &str) -> BTreeSet<String> {
    let code = code_of(text);
    let mut found = BTreeSet::new();
    for (i, _) in code.match_indices("crate::") {
        // `fsmatrix_crate::` or `other_crate::` are not this crate.
        if code[..i]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
        {
            continue;
        }
        let after = &code[i + "crate::".len()..];
        if let Some(group) = after.strip_prefix('{') {
            let mut depth = 1;
            let mut end = 0;
            for (j, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            end = j;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            // Top-level names of the group: each comma-separated piece at
            // depth 0 starts with one.
            let mut depth = 0;
            let mut piece = String::new();
            let mut pieces = Vec::new();
            for c in group[..end].chars() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        pieces.push(std::mem::take(&mut piece));
                        continue;
                    }
                    _ => {}
                }
                piece.push(c);
            }
            pieces.push(piece);
            for p in pieces {
                let name: String = p
                    .trim_start()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    found.insert(name);
                }
            }
        } else {
            let name: String = after
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                found.insert(name);
            }
        }
    }
    found
}

/// Every import its row does not allow: `(file, importer, imported)`.
fn violations(files: &[(String, String)]) -> Vec<(String, String, String)> {
    let row = |m: &str| LAYERS.iter().find(|(l, _)| *l == m).map(|(_, a)| *a);
    let mut out = Vec::new();
    for (rel, text) in files {
        let top = rel
            .split('/')
            .next()
            .unwrap_or("")
            .trim_end_matches(".rs")
            .to_string();
        let Some(allowed) = row(&top) else { continue };
        for m in imports_of(text) {
            if m != top && !TEST_ONLY.contains(&m.as_str()) && !allowed.contains(&m.as_str()) {
                // Above, sideways, or a module the table does not know (a
                // new top-level module takes its row first).
                out.push((rel.clone(), top.clone(), m));
            }
        }
    }
    out
}

fn crate_sources() -> Vec<(String, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    files
        .iter()
        .map(|f| {
            let rel = f.strip_prefix(&src).unwrap_or(f);
            (
                rel.to_string_lossy().replace('\\', "/"),
                std::fs::read_to_string(f).unwrap_or_default(),
            )
        })
        .collect()
}

#[test]
fn every_top_level_module_has_a_row() {
    let lib = include_str!("lib.rs");
    let declared: BTreeSet<&str> = lib
        .lines()
        .filter_map(|l| {
            l.strip_prefix("pub mod ")
                .or_else(|| l.strip_prefix("pub(crate) mod "))
        })
        .map(|l| l.trim_end_matches(';'))
        .collect();
    let table: BTreeSet<&str> = LAYERS.iter().map(|(m, _)| *m).collect();
    assert_eq!(declared, table, "lib.rs's modules and LAYERS differ");
}

#[test]
fn the_table_points_only_down() {
    for (i, (m, allowed)) in LAYERS.iter().enumerate() {
        for a in *allowed {
            let below = LAYERS[..i].iter().any(|(l, _)| l == a);
            assert!(below, "{m} may import {a}, which is not below it in LAYERS");
        }
    }
}

#[test]
fn no_module_imports_one_above_it() {
    let files = crate_sources();
    assert!(files.len() > 50, "{} sources", files.len());
    let bad = violations(&files);
    assert!(
        bad.is_empty(),
        "imports against the layer table (file: importer -> imported; LAYERS \
         in src/layering.rs lists each module's allowed imports):\n{}",
        bad.iter()
            .map(|(f, a, b)| format!("  {f}: {a} -> {b}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn the_import_check_sees_every_form_and_no_comment() {
    let got = |t: &str| imports_of(t).into_iter().collect::<Vec<_>>();
    assert_eq!(got("use crate::run::sweep;"), ["run"]);
    assert_eq!(got("use crate::{config, run::Verb};"), ["config", "run"]);
    assert_eq!(
        got("use crate::{\n    commands,\n    plan::{Cell, eta},\n};"),
        ["commands", "plan"]
    );
    assert_eq!(got("let x = crate::eta::work_of(&c);"), ["eta"]);
    assert!(got("// see crate::run\n/// [`crate::run::Verb`]\n").is_empty());
    assert!(got("/* crate::run */ let s = \"a // b\";").is_empty());
    assert!(got("use other_crate::run;").is_empty());
}

#[test]
fn an_upward_import_is_reported() {
    // The check itself: `plan` importing the run engine, `model` importing
    // `results`, `results` using the transport (lower, but not allowed), and
    // a module missing from the table are each reported.
    let files = vec![
        (
            "plan/mod.rs".to_string(),
            "use crate::run::Verb;".to_string(),
        ),
        (
            "model.rs".to_string(),
            "use crate::{text::csv_text, results::stats};".to_string(),
        ),
        (
            "run/mod.rs".to_string(),
            "use crate::nowhere::X;".to_string(),
        ),
        (
            "run/worker.rs".to_string(),
            "use crate::plan::Cell;".to_string(),
        ),
        (
            "results/signature.rs".to_string(),
            "use crate::remote::ssh::IdentityKey;".to_string(),
        ),
    ];
    let bad = violations(&files);
    let pairs: Vec<(&str, &str)> = bad
        .iter()
        .map(|(_, a, b)| (a.as_str(), b.as_str()))
        .collect();
    assert_eq!(
        pairs,
        [
            ("plan", "run"),
            ("model", "results"),
            ("run", "nowhere"),
            ("results", "remote")
        ]
    );
}
