//! The layers inside `results`, held by a test: `bundle` (storage and
//! integrity) imports neither `analysis` nor `report`; `analysis`
//! (statistics) does not import `report` (presentation).  Every path in a
//! source file that starts with `crate::`, `super::` or `self::` (the
//! groups of a `use` expanded) is resolved against the file's own module
//! and must not land in a layer above the file's.
use std::path::Path;

/// The sub-layers, lowest first: a module may import those before it.
const LAYERS: [&str; 3] = ["bundle", "analysis", "report"];

use crate::layering::sources;

/// The module path of a source file under `src/`: `results/bundle/mod.rs`
/// is `results::bundle`, `results/report/html.rs` is
/// `results::report::html`.
fn module_of(rel: &Path) -> Vec<String> {
    let mut m: Vec<String> = rel
        .iter()
        .map(|c| c.to_string_lossy().trim_end_matches(".rs").to_owned())
        .collect();
    if m.last().is_some_and(|l| l == "mod") {
        m.pop();
    }
    m
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Parse a path or a `use` tree at the start of `s` (after a leading
/// `crate`, `super` or `self`): every full path it names.
fn tree(s: &str) -> (Vec<String>, usize) {
    let mut i = 0;
    let b = s.as_bytes();
    let mut prefix = String::new();
    loop {
        let start = i;
        while i < b.len() && is_ident(b[i] as char) {
            i += 1;
        }
        prefix.push_str(&s[start..i]);
        // Whitespace inside a path (`crate::{\n    a,\n}`) is skipped.
        let rest = s[i..].trim_start();
        if !rest.starts_with("::") {
            return (vec![prefix], i);
        }
        i = s.len() - rest.len() + 2;
        let rest = s[i..].trim_start();
        i = s.len() - rest.len();
        if rest.starts_with('{') {
            i += 1;
            let mut out = Vec::new();
            loop {
                let rest = s[i..].trim_start_matches(|c: char| c.is_whitespace() || c == ',');
                i = s.len() - rest.len();
                if rest.is_empty() || rest.starts_with('}') {
                    return (out, (i + 1).min(s.len()));
                }
                let (inner, used) = tree(rest);
                // Something not a path (`*`, a stray character): step over it.
                i += if used > 0 {
                    used
                } else {
                    rest.chars().next().map_or(1, char::len_utf8)
                };
                for p in inner {
                    out.push(format!("{prefix}::{p}"));
                }
            }
        }
        prefix.push_str("::");
    }
}

/// Every path `text` names from `crate`, `super` or `self`, skipping
/// comment lines (doc links are not imports).
fn paths(text: &str) -> Vec<String> {
    let code: String = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut out = Vec::new();
    for (i, _) in code.char_indices() {
        let before = code[..i].chars().next_back();
        if before.is_some_and(|c| is_ident(c) || c == ':') {
            continue;
        }
        let rest = &code[i..];
        if ["crate::", "super::", "self::"]
            .iter()
            .any(|k| rest.starts_with(k))
        {
            out.extend(tree(rest).0);
        }
    }
    out
}

/// `path` as seen from module `module`, from the crate root.
fn resolve(module: &[String], path: &str) -> Vec<String> {
    let mut parts = path.split("::").map(str::trim);
    let mut at: Vec<String> = match parts.next() {
        Some("crate") => Vec::new(),
        Some("self") => module.to_vec(),
        Some("super") => module[..module.len().saturating_sub(1)].to_vec(),
        _ => return Vec::new(),
    };
    for p in parts {
        match p {
            "super" => {
                at.pop();
            }
            "self" => {}
            p => at.push(p.to_owned()),
        }
    }
    at
}

/// The sub-layer of results a module path is in, by its index in
/// [`LAYERS`].
fn layer(module: &[String]) -> Option<usize> {
    match module {
        [r, l, ..] if r == "results" => LAYERS.iter().position(|x| x == l),
        _ => None,
    }
}

/// What a file in `module` imports from a layer above its own.
fn upward(module: &[String], text: &str) -> Vec<String> {
    let Some(own) = layer(module) else {
        return Vec::new();
    };
    paths(text)
        .into_iter()
        .filter(|p| layer(&resolve(module, p)).is_some_and(|l| l > own))
        .collect()
}

#[test]
fn no_layer_of_results_imports_one_above_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src.join("results"), &mut files);
    assert!(files.len() > 20, "{files:?}");
    let mut offenders = Vec::new();
    let mut seen = [0; 3];
    for f in &files {
        let rel = f.strip_prefix(&src).unwrap_or(f);
        let module = module_of(rel);
        if let Some(l) = layer(&module) {
            seen[l] += 1;
        }
        let text = std::fs::read_to_string(f).unwrap_or_default();
        for p in upward(&module, &text) {
            offenders.push(format!("{}: {p}", rel.display()));
        }
    }
    assert!(seen.iter().all(|n| *n > 2), "files per layer: {seen:?}");
    assert!(
        offenders.is_empty(),
        "import a layer above their own ({LAYERS:?}, lowest first): {offenders:#?}"
    );
}

#[test]
fn the_check_resolves_every_form_of_import() {
    let m = |s: &str| module_of(Path::new(s));
    let bundle = m("results/bundle/journal.rs");
    let listing = m("results/bundle/listing/mod.rs");
    let analysis = m("results/analysis/stats.rs");
    assert_eq!(listing, ["results", "bundle", "listing"]);
    // Upward, in each form.
    for (module, text) in [
        (&bundle, "use crate::results::report::Report;"),
        (&bundle, "use crate::results::{analysis::stats, bundle};"),
        (
            &bundle,
            "use crate::{\n    model,\n    results::report,\n};",
        ),
        (&bundle, "let x = super::super::analysis::stats::mean(&v);"),
        (&listing, "use super::super::report::view;"),
        (&analysis, "use super::super::report::{Report, Row};"),
        (&analysis, "use crate::results::report::{self};"),
    ] {
        assert!(!upward(module, text).is_empty(), "{text}");
    }
    // Down or sideways, in comments, or outside results.
    for (module, text) in [
        (
            &bundle,
            "use super::manifest;\nuse super::{verify, writer::Bundle};",
        ),
        (&analysis, "use crate::results::bundle::BundleError;"),
        (&analysis, "use super::stats::{mean, Metric};"),
        (
            &bundle,
            "/// See [`crate::results::report`].\n//! crate::results::analysis",
        ),
        (
            &m("results/report/view.rs"),
            "use crate::results::analysis::stats::Metric;",
        ),
        (&m("run/sink.rs"), "use crate::results::report::Report;"),
    ] {
        assert!(upward(module, text).is_empty(), "{text}");
    }
}
