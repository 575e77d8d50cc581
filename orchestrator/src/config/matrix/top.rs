//! The matrix document: its top-level keys, then each key group's parser
//! in the order of the file's keys.
use std::ops::Range;
use std::path::Path;

use toml::de::DeTable;

use super::filesystem::filesystem;
use super::postgres::settings;
use super::rules::{host_filter, rules, Names};
use super::runs::{repeats_value, run_timeout_value, warmup_value, WlDefaults};
use super::types::{FsVariant, Guarded, Matrix, Order, Repeats, Workload};
use super::workload::workload;
use super::{DEFAULT_MAX_CELLS, MAX_CELLS_LIMIT, MAX_SEED};
use crate::config::error::{Errors, Source};
use crate::config::values::Label;
use crate::config::walk::{tables, Tbl};

const TOP_KEYS: &[&str] = &[
    "name",
    "description",
    "repeats",
    "drop_caches",
    "warmup",
    "progress",
    "run_timeout",
    "hosts",
    "max_cells",
    "split_hosts",
    "order",
    "seed",
    "postgres",
    "filesystem",
    "workload",
    "include",
    "exclude",
];

pub(super) fn parse_doc(src: &Source, errs: &mut Errors<'_>) -> Option<Matrix> {
    let doc = match DeTable::parse(&src.text) {
        Ok(d) => d,
        Err(e) => {
            let span = e.span().unwrap_or(0..0);
            errs.push(&span, format!("invalid toml: {}", e.message().trim_end()));
            return None;
        }
    };
    let root = Tbl {
        t: doc.get_ref(),
        span: &doc.span(),
        ctx: "the matrix",
    };
    root.check_keys(errs, TOP_KEYS);
    let name = match root.get("name") {
        Some(_) => root.typed(errs, "name", Label::new),
        None => {
            errs.push(
                &(0..0),
                "the matrix has no `name`; add name = \"...\" (it names the result bundle)",
            );
            None
        }
    };
    let description = root.str(errs, "description").map(|s| s.into_inner());
    let max_cells_v = root.int(errs, "max_cells", 1, MAX_CELLS_LIMIT as i64);
    let max_cells = max_cells_v
        .as_ref()
        .map_or(DEFAULT_MAX_CELLS, |n| *n.get_ref() as u64);
    let split_hosts = root.bool(errs, "split_hosts").unwrap_or(false);
    let order_v = root.str(errs, "order");
    let order = match &order_v {
        None => Order::Sequential,
        Some(v) => Order::parse(v.get_ref()).unwrap_or_else(|| {
            let valid: Vec<&str> = Order::ALL.iter().map(|o| o.as_str()).collect();
            errs.push(
                &v.span(),
                format!(
                    "unknown order `{}`; valid: {}",
                    v.get_ref(),
                    valid.join(", ")
                ),
            );
            Order::Sequential
        }),
    };
    let seed_v = root.int(errs, "seed", 0, MAX_SEED as i64);
    if let Some(v) = &seed_v {
        if order != Order::Random {
            errs.push(
                &v.span(),
                format!(
                    "`seed` is for order = \"random\" only (this matrix's order is {order}); \
                     valid: remove seed, or set order = \"random\""
                ),
            );
        }
    }
    let seed = seed_v.as_ref().map(|n| *n.get_ref() as u64);
    let order_at = Some(src.error(&order_v.as_ref().map_or(0..0, |v| v.span()), String::new()));
    let max_cells_at = Some(src.error(
        &max_cells_v.as_ref().map_or(0..0, |n| n.span()),
        String::new(),
    ));
    let defaults = WlDefaults {
        repeats: root
            .get("repeats")
            .and_then(|v| repeats_value(errs, v, "the matrix"))
            .unwrap_or(Repeats::fixed(1)),
        drop_caches: root.bool(errs, "drop_caches").unwrap_or(false),
        warmup: root
            .get("warmup")
            .and_then(|v| warmup_value(errs, v, "the matrix"))
            .unwrap_or(0),
        progress: root.bool(errs, "progress").unwrap_or(false),
        run_timeout: root
            .get("run_timeout")
            .and_then(|v| run_timeout_value(errs, v, "the matrix").map(|n| (n, v.span()))),
    };
    let mut guarded: Vec<Guarded> = Vec::new();
    let postgres = match root.table(errs, "postgres") {
        Some(v) => {
            let mut g = Vec::new();
            let out = settings(errs, v, "[postgres]", &[], &mut g);
            guarded.extend(g.into_iter().map(|(setting, class, at)| Guarded {
                setting,
                class,
                variant: None,
                at,
            }));
            out
        }
        None => Vec::new(),
    };
    let mut refs = Vec::new();
    let hosts = root
        .table(errs, "hosts")
        .map(|v| host_filter(src, errs, v, &mut refs));

    // Filesystems.
    let mut filesystems: Vec<(FsVariant, Range<usize>)> = Vec::new();
    match root.get("filesystem") {
        Some(v) => {
            for (t, span) in tables(errs, v, "filesystem") {
                filesystems.extend(filesystem(errs, t, &span, &mut guarded));
            }
        }
        None => errs.push(
            &(0..0),
            "the matrix has no [[filesystem]]; add at least one with name and type",
        ),
    }
    for i in 0..filesystems.len() {
        let (f, span) = &filesystems[i];
        if filesystems[..i].iter().any(|(g, _)| g.name == f.name) {
            errs.push(
                span,
                format!(
                    "duplicate filesystem variant name `{}`; give every [[filesystem]] (and every vary value, via {{key}} in the name) its own name",
                    f.name
                ),
            );
        }
    }

    // Workloads.
    let base = src.path.parent().unwrap_or(Path::new("")).to_path_buf();
    let mut workloads: Vec<(Workload, Range<usize>)> = Vec::new();
    match root.get("workload") {
        Some(v) => {
            for (t, span) in tables(errs, v, "workload") {
                if let Some(w) = workload(errs, t, &span, &base, &defaults) {
                    workloads.push((w, span));
                }
            }
        }
        None => errs.push(
            &(0..0),
            "the matrix has no [[workload]]; add at least one (e.g. builtin = \"tpcb-like\")",
        ),
    }
    for i in 0..workloads.len() {
        let (w, span) = &workloads[i];
        if workloads[..i].iter().any(|(x, _)| x.name == w.name) {
            errs.push(
                span,
                format!(
                    "duplicate workload name `{}`; every [[workload]] needs its own name",
                    w.name
                ),
            );
        }
    }

    let fs_names: Vec<String> = filesystems
        .iter()
        .map(|(f, _)| f.name.as_str().to_string())
        .collect();
    let wl_names: Vec<String> = workloads
        .iter()
        .map(|(w, _)| w.name.as_str().to_string())
        .collect();
    let names = Names {
        fs: &fs_names,
        wl: &wl_names,
    };
    let include = rules(src, errs, &root, "include", &names, &mut refs);
    let exclude = rules(src, errs, &root, "exclude", &names, &mut refs);

    Some(Matrix {
        path: src.path.clone(),
        name: name?,
        description,
        postgres,
        filesystems: filesystems.into_iter().map(|(f, _)| f).collect(),
        workloads: workloads.into_iter().map(|(w, _)| w).collect(),
        include,
        exclude,
        hosts,
        max_cells,
        split_hosts,
        order,
        seed,
        seed_drawn: false,
        order_at,
        max_cells_at,
        refs,
        guarded,
    })
}
