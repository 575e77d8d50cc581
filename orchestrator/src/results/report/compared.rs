//! What was compared, as the Phoronix Test Suite leads its results: a
//! system table (per host: OS, kernel, CPU, memory, the disks with their
//! model and whether they rotate, PostgreSQL, and each filesystem's
//! implementation, such as zfs-fuse) and a variant table (per variant: its
//! type, mkfs and mount options, filesystem properties and PostgreSQL
//! settings as the plan resolved them).  Built once into the [`Report`]
//! from what the bundles recorded ([`mark_compared`]); the renderers show
//! [`compared_tables`].  A fact a bundle did not record is said to be
//! [`NOT_RECORDED`], never guessed.
use std::collections::BTreeMap;

use serde::Serialize;

use super::platform::is_host;
use super::view::{Column, Kind, RowView, TableView};
use super::{by_bundle_label, Report};
use crate::results::bundle::definitions::{DefValue, Definition, Recorded};

/// What a table cell says of a fact the bundle did not record.
pub const NOT_RECORDED: &str = "not recorded";
/// The headings of the two tables, in the order shown.
pub const SYSTEM_HEADING: &str = "System under test";
pub const VARIANTS_HEADING: &str = "Filesystem variants";

/// One disk the host's facts list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Disk {
    pub path: String,
    pub model: Option<String>,
    pub rotational: Option<bool>,
    pub size_bytes: Option<u64>,
}

/// How one filesystem type the host ran is implemented there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FsImplementation {
    pub fs_type: String,
    /// `zfs-fuse 0.7.0`, `openzfs zfs-2.2.6`, `kernel 6.1.0`; `None`: not
    /// recorded.
    pub implementation: Option<String>,
}

/// One host as its facts describe it (one row per host, or per bundle
/// whose facts of it differ from another's).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SystemRow {
    /// As the report shows it (a stand-in's or TCG guest's label).
    pub host: String,
    /// The bundles whose facts these are; empty: none recorded any.
    pub bundles: Vec<String>,
    pub os: Option<String>,
    pub kernel: Option<String>,
    pub arch: Option<String>,
    pub cpu_model: Option<String>,
    pub cpu_count: Option<u64>,
    pub memory_bytes: Option<u64>,
    pub disks: Vec<Disk>,
    pub postgres: Option<String>,
    pub filesystems: Vec<FsImplementation>,
}

/// One variant's definition, with the bundles that define it so.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VariantRow {
    pub variant: String,
    pub fs_type: Option<String>,
    pub bundles: Vec<String>,
    /// Dotted key → value (`results::bundle::definitions`); `None`: the
    /// bundle kept no plan.
    pub definition: Option<Definition>,
}

fn nonempty(s: Option<&String>) -> Option<String> {
    s.map(|s| s.trim().to_owned()).filter(|s| !s.is_empty())
}

fn number(s: Option<&String>) -> Option<u64> {
    s.and_then(|s| s.trim().parse().ok())
}

/// The disks of a host's facts (`device.N.*`, present ones), in N order.
fn disks(facts: &BTreeMap<String, String>) -> Vec<Disk> {
    let mut out = Vec::new();
    for i in 0.. {
        let key = |k: &str| facts.get(&format!("device.{i}.{k}"));
        let Some(path) = nonempty(key("path")) else {
            break;
        };
        if key("present").is_some_and(|p| p != "yes") {
            continue;
        }
        out.push(Disk {
            path,
            model: nonempty(key("model")),
            rotational: match key("rotational").map(String::as_str) {
                Some("1") => Some(true),
                Some("0") => Some(false),
                _ => None,
            },
            size_bytes: number(key("size_bytes")),
        });
    }
    out
}

/// How `fs_type` is implemented on a host with `facts`: ZFS by what the
/// facts found (`zfs_impl`, `zfs_version`), every other type by the
/// kernel.
fn implementation(fs_type: &str, facts: &BTreeMap<String, String>) -> Option<String> {
    if fs_type == "zfs" {
        let imp = nonempty(facts.get("zfs_impl"))?;
        return Some(match nonempty(facts.get("zfs_version")) {
            Some(v) => format!("{imp} {v}"),
            None => imp,
        });
    }
    Some(match nonempty(facts.get("kernel")) {
        Some(k) => format!("kernel {k}"),
        None => "kernel".to_owned(),
    })
}

fn system_row(
    host: &str,
    bundles: Vec<String>,
    facts: &BTreeMap<String, String>,
    fs_types: &[String],
) -> SystemRow {
    SystemRow {
        host: host.to_owned(),
        bundles,
        os: nonempty(facts.get("distro")).or_else(|| nonempty(facts.get("os"))),
        kernel: nonempty(facts.get("kernel")),
        arch: nonempty(facts.get("arch")),
        cpu_model: nonempty(facts.get("cpu_model")),
        cpu_count: number(facts.get("cpu_count")),
        memory_bytes: number(facts.get("mem_bytes")),
        disks: disks(facts),
        postgres: nonempty(facts.get("postgres_version")),
        filesystems: fs_types
            .iter()
            .map(|t| FsImplementation {
                fs_type: t.clone(),
                implementation: (!facts.is_empty())
                    .then(|| implementation(t, facts))
                    .flatten(),
            })
            .collect(),
    }
}

/// Fill [`Report::systems`] and [`Report::variants`] from what the bundles
/// `recorded`, for the hosts and variants the report shows.
pub fn mark_compared(r: &mut Report, recorded: &[Recorded]) {
    // Variant (and, side by side, "variant @ bundle") → its type.
    let mut type_of: BTreeMap<String, String> = BTreeMap::new();
    for b in recorded {
        for (v, d) in b.definitions.iter().flat_map(|d| &d.variants) {
            if let Some(DefValue::Text(t)) = d.get("type") {
                type_of.insert(by_bundle_label(v, &b.bundle), t.clone());
                type_of.entry(v.clone()).or_insert_with(|| t.clone());
            }
        }
    }
    // Hosts and variants as shown, in table order, with the types each host ran.
    let mut hosts: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut shown_variants: Vec<(String, Option<String>)> = Vec::new();
    let mut saw = |host: &str, variant: &str, fs_type: Option<String>| {
        let types = hosts.entry(host.to_owned()).or_default();
        if let Some(t) = fs_type.clone() {
            if !types.contains(&t) {
                types.push(t);
            }
        }
        if !shown_variants.iter().any(|(v, _)| v == variant) {
            shown_variants.push((variant.to_owned(), fs_type));
        }
    };
    for t in &r.tables {
        for h in &t.hosts {
            for row in &h.rows {
                saw(
                    &h.host,
                    &row.stats.key.filesystem,
                    Some(row.stats.fs_type.clone()),
                );
            }
        }
    }
    for p in &r.problems {
        saw(&p.host, &p.filesystem, type_of.get(&p.filesystem).cloned());
    }

    let mut systems: Vec<SystemRow> = Vec::new();
    for (host, types) in &hosts {
        let mut rows: Vec<SystemRow> = Vec::new();
        for b in recorded {
            let Some(facts) = b
                .facts
                .iter()
                .find(|(real, _)| is_host(host, real))
                .map(|(_, f)| f)
            else {
                continue;
            };
            let row = system_row(host, vec![b.bundle.clone()], facts, types);
            match rows.iter_mut().find(|x| {
                SystemRow {
                    bundles: x.bundles.clone(),
                    ..row.clone()
                } == **x
            }) {
                Some(same) => same.bundles.push(b.bundle.clone()),
                None => rows.push(row),
            }
        }
        if rows.is_empty() {
            rows.push(system_row(host, Vec::new(), &BTreeMap::new(), types));
        }
        systems.extend(rows);
    }

    let mut variants: Vec<VariantRow> = Vec::new();
    for b in recorded {
        for (v, d) in b.definitions.iter().flat_map(|d| &d.variants) {
            match variants
                .iter_mut()
                .find(|x| &x.variant == v && x.definition.as_ref() == Some(d))
            {
                Some(same) => same.bundles.push(b.bundle.clone()),
                None => variants.push(VariantRow {
                    variant: v.clone(),
                    fs_type: type_of.get(v).cloned(),
                    bundles: vec![b.bundle.clone()],
                    definition: Some(d.clone()),
                }),
            }
        }
    }
    // Shown variants no bundle defined: their rows say so.
    for (v, fs_type) in &shown_variants {
        if !type_of.contains_key(v) {
            variants.push(VariantRow {
                variant: v.clone(),
                fs_type: fs_type.clone(),
                bundles: Vec::new(),
                definition: None,
            });
        }
    }
    // Table order: as the report first shows each variant.
    let rank = |v: &VariantRow| {
        shown_variants
            .iter()
            .position(|(s, _)| {
                *s == v.variant
                    || recorded
                        .iter()
                        .any(|b| *s == by_bundle_label(&v.variant, &b.bundle))
            })
            .unwrap_or(usize::MAX)
    };
    variants.sort_by_key(rank);
    r.systems = systems;
    r.variants = variants;
}

fn or_not_recorded(s: Option<String>) -> String {
    s.unwrap_or_else(|| NOT_RECORDED.to_owned())
}

fn disk_text(d: &Disk) -> String {
    let size = d.size_bytes.map_or(String::new(), |b| {
        format!("{}, ", crate::text::iec_bytes_short(b as f64))
    });
    format!(
        "{} ({size}model {}, {})",
        d.path,
        d.model.as_deref().unwrap_or(NOT_RECORDED),
        match d.rotational {
            Some(true) => "rotational",
            Some(false) => "non-rotational",
            None => "rotational not recorded",
        }
    )
}

/// The system table's cells of one row.
fn system_cells(s: &SystemRow, with_bundles: bool) -> Vec<String> {
    let cpu = match (&s.cpu_model, s.cpu_count) {
        (Some(m), Some(n)) => Some(format!("{m} × {n}")),
        (Some(m), None) => Some(m.clone()),
        (None, Some(n)) => Some(format!("{n} CPUs, model {NOT_RECORDED}")),
        (None, None) => None,
    };
    let kernel = s.kernel.as_ref().map(|k| match &s.arch {
        Some(a) => format!("{k} {a}"),
        None => k.clone(),
    });
    let disks: Vec<String> = s.disks.iter().map(disk_text).collect();
    let fs: Vec<String> = s
        .filesystems
        .iter()
        .map(|f| {
            format!(
                "{}: {}",
                f.fs_type,
                f.implementation.as_deref().unwrap_or(NOT_RECORDED)
            )
        })
        .collect();
    let mut cells = vec![
        s.host.clone(),
        or_not_recorded(s.os.clone()),
        or_not_recorded(kernel),
        or_not_recorded(cpu),
        or_not_recorded(s.memory_bytes.map(|b| crate::text::iec_bytes(b as f64))),
        or_not_recorded((!disks.is_empty()).then(|| disks.join("; "))),
        or_not_recorded(s.postgres.clone()),
        or_not_recorded((!fs.is_empty()).then(|| fs.join("; "))),
    ];
    if with_bundles {
        cells.push(or_not_recorded(
            (!s.bundles.is_empty()).then(|| s.bundles.join(", ")),
        ));
    }
    cells
}

/// The variant table's cells of one row.
fn variant_cells(v: &VariantRow, with_bundles: bool) -> Vec<String> {
    let (mkfs, mount, props, pg) = match &v.definition {
        None => Default::default(),
        Some(d) => {
            let set = |k: &str| match d.get(k) {
                Some(DefValue::NotSet) | None => "defaults".to_owned(),
                Some(x) => x.to_string(),
            };
            let under = |prefixes: &[(&str, &str)]| {
                let pairs: Vec<String> = prefixes
                    .iter()
                    .flat_map(|(prefix, shown)| {
                        d.iter().filter_map(move |(k, x)| {
                            k.strip_prefix(prefix)
                                .and_then(|k| k.strip_prefix('.'))
                                .map(|k| format!("{shown}{k}={x}"))
                        })
                    })
                    .collect();
                if pairs.is_empty() {
                    "defaults".to_owned()
                } else {
                    pairs.join(", ")
                }
            };
            (
                Some(set("mkfs_options")),
                Some(set("mount_options")),
                Some(under(&[("properties", ""), ("pool_properties", "pool ")])),
                Some(under(&[("postgres", "")])),
            )
        }
    };
    let mut cells = vec![
        v.variant.clone(),
        or_not_recorded(v.fs_type.clone()),
        or_not_recorded(mkfs),
        or_not_recorded(mount),
        or_not_recorded(props),
        or_not_recorded(pg),
    ];
    if with_bundles {
        cells.push(or_not_recorded(
            (!v.bundles.is_empty()).then(|| v.bundles.join(", ")),
        ));
    }
    cells
}

fn table(headers: &[&'static str], rows: Vec<Vec<String>>) -> TableView {
    TableView {
        columns: headers
            .iter()
            .map(|h| Column {
                header: (*h).into(),
                kind: Kind::Text,
            })
            .collect(),
        rows: rows
            .into_iter()
            .map(|cells| RowView {
                cells,
                noisy: false,
                winner: false,
                warned: false,
            })
            .collect(),
    }
}

/// The system and variant tables with their headings, each only when it
/// has rows; a bundle column when the report has more than one bundle.
pub fn compared_tables(r: &Report) -> Vec<(&'static str, TableView)> {
    let many = r.bundles.len() > 1;
    let with = |mut h: Vec<&'static str>| {
        if many {
            h.push("bundles");
        }
        h
    };
    let mut out = Vec::new();
    if !r.systems.is_empty() {
        out.push((
            SYSTEM_HEADING,
            table(
                &with(vec![
                    "host",
                    "OS",
                    "kernel",
                    "CPU",
                    "memory",
                    "disks",
                    "PostgreSQL",
                    "filesystem implementation",
                ]),
                r.systems.iter().map(|s| system_cells(s, many)).collect(),
            ),
        ));
    }
    if !r.variants.is_empty() {
        out.push((
            VARIANTS_HEADING,
            table(
                &with(vec![
                    "variant",
                    "type",
                    "mkfs options",
                    "mount options",
                    "filesystem properties",
                    "PostgreSQL settings",
                ]),
                r.variants.iter().map(|v| variant_cells(v, many)).collect(),
            ),
        ));
    }
    out
}
