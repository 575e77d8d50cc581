//! The matrix document: its top-level keys, then each key group's parser
//! in the order of the file's keys.
use std::path::Path;

use toml::de::DeTable;

use super::filesystem::filesystems;
use super::postgres::postgres_table;
use super::rules::{host_filter, rules, Names};
use super::runs::matrix_runs;
use super::types::{Guarded, GuestOrder, Matrix, Order};
use super::verdicts::{verdict_rule, VerdictRule};
use super::workload::workloads;
use super::{DEFAULT_MAX_CELLS, MAX_CELLS_LIMIT, MAX_SEED};
use crate::config::error::{ConfigError, Errors, Source};
use crate::config::values::Label;
use crate::config::walk::Tbl;

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
    "guest_order",
    "seed",
    "margin",
    "correction",
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
    let top = top_keys(src, errs, &root);
    let defaults = matrix_runs(errs, &root);
    let verdicts = VerdictRule {
        sequential: defaults.repeats.looks(),
        ..verdict_rule(errs, &root)
    };
    let mut guarded: Vec<Guarded> = Vec::new();
    let postgres = postgres_table(errs, &root, &mut guarded);
    let mut refs = Vec::new();
    let hosts = root
        .table(errs, "hosts")
        .map(|v| host_filter(src, errs, v, &mut refs));
    let filesystems = filesystems(errs, &root, &mut guarded);
    let base = src.path.parent().unwrap_or(Path::new("")).to_path_buf();
    let workloads = workloads(errs, &root, &base, &defaults);

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
        name: top.name?,
        description: top.description,
        postgres,
        filesystems: filesystems.into_iter().map(|(f, _)| f).collect(),
        workloads: workloads.into_iter().map(|(w, _)| w).collect(),
        include,
        exclude,
        hosts,
        max_cells: top.max_cells,
        split_hosts: top.split_hosts,
        order: top.order,
        guest_order: top.guest_order,
        seed: top.seed,
        seed_drawn: false,
        verdicts,
        order_at: top.order_at,
        max_cells_at: top.max_cells_at,
        refs,
        guarded,
    })
}

/// The matrix's own keys, and where `order` and `max_cells` are (for the
/// errors against the inventory).
struct Top {
    name: Option<Label>,
    description: Option<String>,
    max_cells: u64,
    split_hosts: bool,
    order: Order,
    guest_order: GuestOrder,
    seed: Option<u64>,
    order_at: Option<ConfigError>,
    max_cells_at: Option<ConfigError>,
}

/// `name`, `description`, `max_cells`, `split_hosts`, `order` and `seed`.
fn top_keys(src: &Source, errs: &mut Errors<'_>, root: &Tbl<'_, '_>) -> Top {
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
    let guest_order = match root.str(errs, "guest_order") {
        None => GuestOrder::Alternate,
        Some(v) => GuestOrder::parse(v.get_ref()).unwrap_or_else(|| {
            let valid: Vec<&str> = GuestOrder::ALL.iter().map(|o| o.as_str()).collect();
            errs.push(
                &v.span(),
                format!(
                    "unknown guest_order `{}`; valid: {} (how a physical host's cells and its \
                     guests' take turns on their one disk)",
                    crate::config::values::shown(v.get_ref()),
                    valid.join(", ")
                ),
            );
            GuestOrder::Alternate
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
    Top {
        name,
        description,
        max_cells,
        split_hosts,
        order,
        guest_order,
        seed,
        order_at,
        max_cells_at,
    }
}
